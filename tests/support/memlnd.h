/* SPDX-License-Identifier: MIT */
/*
 * memlnd.h - an in-memory LND for tests: several instances of one process
 * joined by a "network" object, NIDs "<n>@gni" (the gni type, unused by the
 * project otherwise).
 *
 * send() encodes nothing: the message is queued for its destination. By
 * default nothing moves until the test calls memlnd_pump(), which delivers
 * queued messages in send order (lnet_parse() on the destination, then the
 * payload copied straight from the sender's fragments), so two-node tests run
 * single-threaded and deterministically with ULNET_OPT_MANUAL_PROGRESS and a
 * fake clock. In auto mode each message is delivered on its destination
 * instance's event loop instead (threaded instances, blocking calls).
 *
 * Faults: a filter sees every header and says pass, drop (the sender's send
 * still completes, as a lost packet), hold (kept until
 * memlnd_release_held()) or fail (the send fails, as an LND that could not
 * reach the peer: memlnd_fail_next(), memlnd_fail_nid()).
 */
#ifndef ULNET_TESTS_MEMLND_H
#define ULNET_TESTS_MEMLND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/lnd.h"
#include "ulnet/ulnet.h"

#define MEMLND_TYPE ULNET_LND_GNI

struct memlnd_net;

/* MEMLND_FAIL: the send fails (finalized with the status set by
 * memlnd_fail_next()/memlnd_fail_nid(), -EHOSTUNREACH from a filter), nothing
 * reaches the peer. */
enum memlnd_verdict { MEMLND_PASS = 0, MEMLND_DROP, MEMLND_HOLD, MEMLND_FAIL };
/* Called with memlnd's lock held: must not call into memlnd or ulnet. */
typedef enum memlnd_verdict (*memlnd_filter_fn)(void *arg, const struct lnet_hdr *hdr);

#define MEMLND_TRACE_DATA 128

struct memlnd_trace_ent {
	struct lnet_hdr hdr;
	ulnet_nid_t hop;                   /* the NI it went to: dest, or a gateway */
	enum memlnd_verdict verdict;
	uint32_t data_len;                 /* payload bytes kept (the first ones) */
	uint8_t data[MEMLND_TRACE_DATA];
};

struct memlnd_net *memlnd_net_create(void);
/* After every instance using it is destroyed. */
void memlnd_net_destroy(struct memlnd_net *net);

/* "<addr>@gni". */
void memlnd_nid(uint32_t addr, ulnet_nid_t *nid);

/* Register the LND in `ln` (once) and add the NI <addr>@gni. Returns what
 * ulnet_ni_add() returns. `nid` (may be NULL) receives the NID. */
int memlnd_add_ni(struct memlnd_net *net, ulnet_t *ln, uint32_t addr, ulnet_nid_t *nid);
/* The same with tunables (credits...). */
int memlnd_add_ni_conf(struct memlnd_net *net, ulnet_t *ln, struct ulnet_ni_conf *conf);

/* Deliver the oldest queued message: 1, or 0 if none. */
int memlnd_pump_one(struct memlnd_net *net);
/* Deliver until nothing is queued (including messages sent meanwhile).
 * Returns the number delivered. */
int memlnd_pump(struct memlnd_net *net);
/* Messages queued (not held). */
int memlnd_queued(struct memlnd_net *net);

/* GETs as o2iblnd sends them, the core's rdma_req contract (core/lnd.h):
 * a GET to its final destination carries its sink (lnet_msg_get_sink()),
 * is parsed with rdma_req, and the target's recv() of the REPLY copies the
 * bytes straight into the sink; the requester's GET and the REPLY the core
 * made for it (lnet_create_reply_msg()) end together, no REPLY message is
 * sent. A GET that matched nothing ends both with -ENODATA (REMOTE_ERROR),
 * as o2iblnd's GET_DONE reports it. Routed GETs go as ordinary messages. */
void memlnd_set_rdma(struct memlnd_net *net, bool on);

/* Deliver on the destination's event loop (for threaded instances). */
void memlnd_set_auto(struct memlnd_net *net, bool on);

void memlnd_set_filter(struct memlnd_net *net, memlnd_filter_fn fn, void *arg);
/* Drop the next `n` messages whose type bit (1 << ULNET_MSG_x) is in
 * `type_mask` (0: any type). */
void memlnd_drop_next(struct memlnd_net *net, int n, unsigned type_mask);
/* Fail the next `n` sends whose type bit is in `type_mask` (0: any type)
 * with `status` (e.g. -ECONNREFUSED: the LND could not reach the peer). */
void memlnd_fail_next(struct memlnd_net *net, int n, unsigned type_mask, int status);
/* Fail every send to `nid` with `status` (an unreachable NI); status 0
 * clears it. At most MEMLND_MAX_FAIL_NIDS NIDs at once. */
#define MEMLND_MAX_FAIL_NIDS 4
void memlnd_fail_nid(struct memlnd_net *net, const ulnet_nid_t *nid, int status);
/* Fail every held message with `status` (a connection reset with the
 * messages still queued): the senders' sends complete with it, nothing is
 * delivered. Returns how many. */
int memlnd_fail_held(struct memlnd_net *net, int status);
/* Queue held messages again (in their order). Returns how many. */
int memlnd_release_held(struct memlnd_net *net);

/* Every header sent so far, in order, with what happened to it. Returns the
 * count (may exceed max). */
int memlnd_trace(struct memlnd_net *net, struct memlnd_trace_ent *out, int max);
void memlnd_trace_clear(struct memlnd_net *net);

#endif
