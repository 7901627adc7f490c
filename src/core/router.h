/* SPDX-License-Identifier: MIT */
/*
 * router.h - the router role (router.c): forwarding messages that are not
 * ours, router buffers and credits, and the routing state machine.
 */
#ifndef ULNET_CORE_ROUTER_H
#define ULNET_CORE_ROUTER_H

#include "core/core.h"
#include "ulnet/routing.h"

/* A buffer of a pool: its memory follows. Allocated the first time the
 * pool needs it, then kept on the pool's free list: no allocation per
 * message once warm, and no memory for buffers never used (the kernel
 * allocates every buffer when routing is enabled: 1 GiB of large ones). */
struct lnet_rtrbuf {
	struct lnet_rtrbuf *rb_next;   /* free list */
	int rb_pool;
	/* the payload: pages of its own (mmap), so that an LND's
	 * registration of them covers nothing else (an MD's release beside
	 * it does not drop it) and a buffer freed gives its pages back */
	struct iovec rb_iov;
};

struct lnet_rtrbufpool {
	unsigned rbp_npages;
	size_t rbp_size;               /* bytes of a buffer */
	int rbp_nbuffers;              /* buffers the pool holds */
	int rbp_req_nbuffers;          /* what it should hold: a shrink is lazy */
	int rbp_credits, rbp_mincredits;
	struct lnet_rtrbuf *rbp_free;  /* allocated and unused */
	struct ul_list rbp_msgs;       /* messages waiting for a buffer */
};

int lnet_router_init(ulnet_t *ln);
void lnet_router_fini(ulnet_t *ln);

/* lnet_parse() of a message for another node (its dest is not one of our
 * NIDs, nor on the receiving NI's net): forward it, or drop it when
 * routing is disabled. Returns what lnet_parse() returns. */
int lnet_parse_forward(struct lnet_ni *ni, const struct lnet_hdr *hdr, const ulnet_nid_t *from_nid,
		       void *rx_private);

/* A forwarded message completed a step (lnet_complete_msg_locked()):
 * its receive, which sends it on (true: it goes on), or its send, or a
 * failure (false: the caller ends it, after lnet_fwd_release_locked()). */
bool lnet_fwd_next_locked(ulnet_t *ln, struct lnet_msg *msg, int *status, struct lnet_sendq *q);
/* Give back a forwarded message's router buffer and credit; messages
 * waiting for them may start (q->sq_recv). */
void lnet_fwd_release_locked(ulnet_t *ln, struct lnet_msg *msg, struct lnet_sendq *q);
/* A message of q->sq_recv (lnet_sendq_flush()): its LND reads it into its
 * buffer now, or, without one (out of memory), discards it. */
void lnet_fwd_recv_ready(struct lnet_msg *msg);
/* A router heard a ping (a GET on the reserved portal) from another node
 * on `ni`'s net: the net is alive; if the router had reported it down,
 * true (the caller updates the ping target, which pushes the change). */
bool lnet_router_ping_heard_locked(ulnet_t *ln, struct lnet_ni *ni);
/* alive_router_check_interval + router_ping_timeout (110 s by default):
 * how long a router stays STARTING, and at least STOPPING; and how long
 * one of its nets may hear no router ping before it reports that net's
 * NIs down in its ping info. */
static inline int lnet_rtr_timeout_s(const ulnet_t *ln)
{
	int iv = ln->ln_rtr_params.alive_router_check_interval;

	return (iv > 0 ? iv : 0) + ln->ln_rtr_params.router_ping_timeout;
}

/* Shutdown: drop what waits for buffers or credits. */
void lnet_router_shutdown(ulnet_t *ln);

/* Whether our ping info says "routing disabled" (RTE_DISABLED): unless
 * forwarding is enabled (STARTING and STOPPING advertise it disabled). */
static inline bool lnet_rte_disabled(const ulnet_t *ln)
{
	return ln->ln_routing != ULNET_ROUTING_ENABLED;
}

#endif
