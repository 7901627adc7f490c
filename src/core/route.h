/* SPDX-License-Identifier: MIT */
/*
 * route.h - the route table and route selection (route.c), for the send
 * path and the instance.
 */
#ifndef ULNET_CORE_ROUTE_H
#define ULNET_CORE_ROUTE_H

#include "core/core.h"
#include "ulnet/routing.h"

struct lnet_remotenet {
	struct ul_list lrn_list;       /* ln_remote_nets */
	ulnet_net_t lrn_net;
	struct ul_list lrn_routes;     /* struct lnet_route, in the order added */
};

struct lnet_route {
	struct ul_list lr_list;        /* lrn_routes */
	struct lnet_remotenet *lr_rnet;
	ulnet_nid_t lr_nid;            /* the gateway NID as given */
	/* Its peer NI (a reference): the gateway peer is lr_gw->lpni_peer
	 * whatever discovery merged since (peer NIs move between peers, the
	 * object stays). Looked up again if its peer was deleted. */
	struct lnet_peer_ni *lr_gw;
	int lr_hops;
	unsigned lr_priority;
	unsigned lr_seq;               /* round robin among equals */
	bool lr_alive;
	bool lr_single_hop;
};

/* The router checker's default period (ulnet_router_params): each gateway
 * is discovered again (ping and push) this often. */
#define LNET_RTR_CHECK_INTERVAL_S 60

/* Every route `r` (of remote net `rn`), in table order; the body may
 * return but not break out of both loops, nor delete `r`. */
#define lnet_for_each_route(ln, rn, r)                                                         \
	for (struct lnet_remotenet *rn = ul_list_first(&(ln)->ln_remote_nets,                 \
						       struct lnet_remotenet, lrn_list);      \
	     rn; rn = rn->lrn_list.next == &(ln)->ln_remote_nets                               \
			 ? NULL : ul_container_of(rn->lrn_list.next, struct lnet_remotenet,    \
						  lrn_list))                                   \
		for (struct lnet_route *r = ul_list_first(&rn->lrn_routes, struct lnet_route,   \
							  lr_list);                             \
		     r; r = r->lr_list.next == &rn->lrn_routes                                   \
				? NULL : ul_container_of(r->lr_list.next, struct lnet_route, lr_list))

void lnet_routes_init(ulnet_t *ln);
void lnet_routes_fini(ulnet_t *ln);
/* Shutdown: the router checker stops. */
void lnet_routes_shutdown(ulnet_t *ln);

/* A discovery of `lp` ended with `status`: if it is a gateway, its routes
 * go up or down from what its ping info says (the kernel's
 * lnet_router_discovery_complete()). */
void lnet_route_gw_discovered_locked(ulnet_t *ln, struct lnet_peer *lp, int status);

/* The best live route to `net` and the gateway peer NI to send to: on
 * `src_ni`'s net when given, else on any of our nets, with our NI on its
 * net in *ni (src_ni when given). The routes through a gateway that the
 * destination `dst` (may be NULL) prefers (a UDSP router rule) come first.
 * Returns 0, or -EHOSTUNREACH (no route, none alive, or no gateway NI on
 * our nets). */
int lnet_route_select_locked(ulnet_t *ln, ulnet_net_t net, const struct lnet_peer_ni *dst,
			     struct lnet_ni *src_ni, struct lnet_ni **ni, struct lnet_peer_ni **gw);

/* Whether a route to `net` goes through the gateway peer `gp`. */
bool lnet_route_via_gw_locked(ulnet_t *ln, ulnet_net_t net, const struct lnet_peer *gp);

/* Whether a route leads to `net`. */
bool lnet_route_exists_locked(ulnet_t *ln, ulnet_net_t net);

/* Whether `lp` is the gateway of a route (a response may go back through
 * it without a route lookup, as the kernel sends it to the last hop). */
bool lnet_peer_is_gateway_locked(ulnet_t *ln, const struct lnet_peer *lp);

#endif
