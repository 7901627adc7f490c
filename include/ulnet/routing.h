/* SPDX-License-Identifier: MIT */
/*
 * ulnet/routing.h - routes to remote nets through gateways (lnetctl route
 * add/del/show).
 *
 * A route names a remote net and a gateway: a peer on one of our nets.
 * Several routes may lead to one net, and a Multi-Rail gateway carries
 * traffic on any of its NIs on our nets. A message for a NID on a net we
 * have no NI on goes to the best live gateway (priority, then hops, then
 * the gateway NI's health, queued bytes and credits, then round robin);
 * its LNet header keeps the end-to-end source and destination.
 */
#ifndef ULNET_ROUTING_H
#define ULNET_ROUTING_H

#include "ulnet/export.h"

#include <stdbool.h>

#include "ulnet/ulnet.h"

#define ULNET_ROUTE_HOPS_UNSET (-1)   /* no hop count: compared as 1 */
#define ULNET_ROUTE_HOPS_MAX 255

struct ulnet_route_conf {
	ulnet_net_t net;             /* the remote net */
	ulnet_nid_t gateway;         /* a NID of the gateway, on one of our nets */
	int hops;                    /* 1..255 or ULNET_ROUTE_HOPS_UNSET */
	unsigned priority;           /* 0 is best */
};

/* Add a route. Errors, as the kernel's lnet_add_route():
 *  -ENXIO   net is ULNET_NET_ANY;
 *  -EACCES  net is a loopback net;
 *  -EINVAL  gateway ANY or 0@lo, the gateway on `net` itself, hops out of
 *           range;
 *  -EEXIST  `net` is one of our nets, or a route to it through the same
 *           gateway peer exists (any NID of that peer);
 *  -EHOSTUNREACH  no NI of ours on the gateway's net;
 *  -ENOMEM. */
ULNET_API int ulnet_route_add(ulnet_t *ln, const struct ulnet_route_conf *rc);

/* Delete the route to `net` through the gateway peer of `gateway` (any of
 * its NIDs), or with `gateway` NULL every route to `net`; `net`
 * ULNET_NET_ANY with NULL: every route. Returns the number deleted, or
 * -ENOENT when no route leads to `net` (a gateway with no route to an
 * existing net deletes nothing and returns 0, as the kernel). */
ULNET_API int ulnet_route_del(ulnet_t *ln, ulnet_net_t net, const ulnet_nid_t *gateway);

struct ulnet_route_info {
	ulnet_net_t net;
	ulnet_nid_t gateway;         /* as given to ulnet_route_add() */
	int hops;
	unsigned priority;
	bool alive;                  /* state: up */
	bool single_hop;             /* type: the gateway lists an NI on `net` */
};

/* The i-th route (nets in the order they were first routed to, routes of
 * one net in the order added). Errors: -ENOENT past the last. */
ULNET_API int ulnet_route_info(ulnet_t *ln, int index, struct ulnet_route_info *info);

/* --- the router role (lnetctl set routing, routing show, set *_buffers) --- */

/* As `routing show` prints it (`enable:`). A router forwards in every
 * state but DISABLED; while STARTING its ping info still says "routing
 * disabled" (RTE_DISABLED), so that nodes do not route through it yet. */
enum ulnet_routing_state {
	ULNET_ROUTING_DISABLED = 0,
	ULNET_ROUTING_ENABLED = 1,
	ULNET_ROUTING_STOPPING = 2,
	ULNET_ROUTING_STARTING = 3,
};

/* The router buffer pools, by payload size: tiny (none), small (one 4 KiB
 * page), large (1 MiB). */
enum { ULNET_RTR_POOL_TINY, ULNET_RTR_POOL_SMALL, ULNET_RTR_POOL_LARGE, ULNET_RTR_NPOOLS };
#define ULNET_RTR_TINY_DEFAULT 2048
#define ULNET_RTR_SMALL_DEFAULT 16384
#define ULNET_RTR_LARGE_DEFAULT 1024

/* Seconds from `set routing 1` to forwarding advertised (the kernel's
 * alive_router_check_interval + router_ping_timeout, 60 + 50, with the
 * default ulnet_router_params). */
#define ULNET_RTR_STARTUP_S 110
/* STOPPING ends once no buffer is in use after this many seconds, or
 * after the second figure regardless (default ulnet_router_params). */
#define ULNET_RTR_STOP_MIN_S 110
#define ULNET_RTR_STOP_MAX_S 330

/* The router checker's and the router's timing, and how routes are
 * judged: the kernel's lnet module parameters of the same names. */
struct ulnet_router_params {
	/* s between router checks of a gateway (forced discovery), 60; <= 0:
	 * none (a gateway is checked once, when its first route is added) */
	int alive_router_check_interval;
	/* s, 50, >= 0. With the interval: how long a router stays STARTING
	 * and at least STOPPING (3 times that at most), and how long a net of
	 * a router may hear no router ping before it is reported down. */
	int router_ping_timeout;
	/* Routes, and peer NIs, start down until the router checker (or a
	 * message from the peer NI) says otherwise; false: up. Applies to
	 * routes and peers added after it is set. */
	bool check_routers_before_use;
	/* A single-hop route also needs the gateway's NI on the remote net
	 * up; true (the kernel's default). */
	bool avoid_asym_router_failure;
};

/* Errors: -EINVAL (router_ping_timeout < 0, NULL). Takes effect at the
 * next check, phase or route. */
ULNET_API int ulnet_router_params_get(ulnet_t *ln, struct ulnet_router_params *p);
ULNET_API int ulnet_router_params_set(ulnet_t *ln, const struct ulnet_router_params *p);

struct ulnet_rtr_pool_info {
	int npages;                  /* 0, 1, 256 */
	int nbuffers;                /* buffers the pool holds */
	int credits;                 /* not in use (negative: messages wait) */
	int mincredits;              /* the lowest credits reached */
};

struct ulnet_routing_info {
	enum ulnet_routing_state state;
	bool pools;                  /* routing was ever enabled: the pools exist */
	struct ulnet_rtr_pool_info pool[ULNET_RTR_NPOOLS];
};

/* Turn forwarding on (DISABLED -> STARTING; ENABLED and STARTING: no
 * change) or off (-> STOPPING, RTE_DISABLED advertised at once; DISABLED:
 * no change). Errors: -EBUSY (on while STOPPING), -ENOMEM. */
ULNET_API int ulnet_routing_set(ulnet_t *ln, bool on);
/* Forward now, with no start-up phase (the kernel's `forwarding=enabled`
 * module parameter at start): ENABLED at once from DISABLED or STARTING.
 * Errors: -EBUSY (STOPPING). */
ULNET_API int ulnet_routing_enable_now(ulnet_t *ln);
ULNET_API int ulnet_routing_info(ulnet_t *ln, struct ulnet_routing_info *info);
/* Resize a pool to `n` buffers (0: the default), as `lnetctl set
 * tiny_buffers|small_buffers|large_buffers`: growing takes effect at once
 * (mincredits restarts), shrinking as buffers come back. While routing is
 * disabled the count is kept for when it is enabled (the kernel drops it:
 * a setting accepted must take effect). -1: no change.
 * Errors: -EINVAL (pool), -ERANGE (n < -1). */
ULNET_API int ulnet_routing_buffers_set(ulnet_t *ln, int pool, int n);

#endif
