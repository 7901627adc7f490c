/* SPDX-License-Identifier: MIT */
/*
 * fault.h - fault injection: drop and delay rules, as the kernel's
 * `lnetctl fault drop|delay` (lnet/lnet/net_fault.c), for a node's own
 * traffic and, on a router, for what it forwards.
 *
 * A rule matches a message by its header's source and destination NIDs,
 * the NID of our NI it came in on (drop rules on receive), its portal
 * (PUT and GET only, when a mask is given) and its type. Among the matched
 * messages it picks by `rate` (one in every `rate`, at a random position
 * in each run of `rate`; 2: the first of the first pair, as the kernel)
 * or by `interval` (one
 * at a random time in each `interval` seconds), exactly one of the two.
 *
 *  - A drop rule without a health error drops messages as they arrive,
 *    silently: the sender sees what a lost message gives (its ACK or REPLY
 *    never comes: the response tracker ends it).
 *  - A drop rule with a health error acts on the send path instead: the
 *    send fails as an LND failure of that kind would, and health and
 *    resend follow.
 *  - A delay rule holds a matched message `latency` seconds, as it arrives
 *    or as it is sent (after its credits), then lets it go on, in order.
 *
 * Beyond the kernel: `seed` makes a rule's random choices reproducible
 * (the same seed and traffic pick the same messages).
 */
#ifndef ULNET_FAULT_H
#define ULNET_FAULT_H

#include "ulnet/export.h"

#include <stdbool.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

/* A message's health status (the kernel's LNET_MSG_STATUS_*): OK, or the
 * errors a drop rule can simulate (the kernel's HSTATUS_* bits). */
enum ulnet_hstatus {
	ULNET_HSTATUS_OK = 0,
	ULNET_HSTATUS_LOCAL_INTERRUPT = 1,
	ULNET_HSTATUS_LOCAL_DROPPED,
	ULNET_HSTATUS_LOCAL_ABORTED,
	ULNET_HSTATUS_LOCAL_NO_ROUTE,
	ULNET_HSTATUS_LOCAL_ERROR,
	ULNET_HSTATUS_LOCAL_TIMEOUT,
	ULNET_HSTATUS_REMOTE_ERROR,
	ULNET_HSTATUS_REMOTE_DROPPED,
	ULNET_HSTATUS_REMOTE_TIMEOUT,
	ULNET_HSTATUS_NETWORK_TIMEOUT,
	ULNET_HSTATUS_END,
};
#define ULNET_HSTATUS_BIT(s) (1u << (s))
#define ULNET_HSTATUS_RANDOM 0xffffffffu   /* any of them, at random */

/* Message type bits of a rule's msg_mask (0: every type). */
#define ULNET_FAULT_MSG_BIT(type) (1u << (type))   /* ULNET_MSG_ACK ... */

enum ulnet_fault_kind { ULNET_FAULT_DROP, ULNET_FAULT_DELAY };

struct ulnet_fault_rule {
	/* ULNET_NID_ANY: any; address 255.255.255.255 on a net (a NID whose
	 * addr is all ones): any node on that net */
	ulnet_nid_t src, dst;
	ulnet_nid_t local;          /* drop: the NI it came in on; ANY */
	uint64_t portal_mask;       /* bit per portal; 0: all (then only
				     * PUT and GET can match) */
	uint32_t msg_mask;          /* ULNET_FAULT_MSG_BIT()s; 0: all */
	uint32_t rate;              /* one of every `rate` matched, or */
	uint32_t interval;          /* one in every `interval` seconds */
	/* drop */
	bool random;                /* each matched one with probability 1/2 */
	bool drop_all;              /* every matched one */
	uint32_t health_error_mask; /* ULNET_HSTATUS_BIT()s or _RANDOM: act
				     * on the send path with that error */
	/* delay */
	uint32_t latency;           /* seconds */
	/* beyond the kernel: 0 draws the rule's randomness from the system;
	 * anything else seeds it, so a run can be replayed */
	uint64_t seed;
};

struct ulnet_fault_stats {
	uint64_t count;             /* matched (rate/interval counting) */
	uint64_t put, ack, get, reply;   /* dropped or delayed, by type */
	uint64_t dropped;           /* drop rule: messages dropped */
	uint64_t delayed;           /* delay rule: messages delayed */
};

/* Add a rule. Errors: -EINVAL (rate and interval both or neither set,
 * unless drop_all or random; a portal mask with no PUT or GET left in the
 * message mask; latency with a drop rule, health errors or random with a
 * delay rule), -ENOMEM. */
ULNET_API int ulnet_fault_add(ulnet_t *ln, enum ulnet_fault_kind kind, const struct ulnet_fault_rule *r);
/* Delete the rules of `kind` whose src and dst are these (ANY matches any
 * rule's; both ANY: every rule). Delayed messages of a deleted delay rule
 * go on at once. Returns how many went (>= 0). */
ULNET_API int ulnet_fault_del(ulnet_t *ln, enum ulnet_fault_kind kind, const ulnet_nid_t *src,
		    const ulnet_nid_t *dst);
/* The pos-th rule of `kind` and its figures. Errors: -ENOENT past the last. */
ULNET_API int ulnet_fault_list(ulnet_t *ln, enum ulnet_fault_kind kind, int pos,
		     struct ulnet_fault_rule *r, struct ulnet_fault_stats *st);
/* Zero the figures of every rule of `kind`. */
ULNET_API void ulnet_fault_reset(ulnet_t *ln, enum ulnet_fault_kind kind);

/*
 * Link faults (beyond lnetctl): take one of our NIs down as a pulled cable
 * would, without touching the interface. While down the NI is "fatal", as
 * the kernel's ni_fatal_error_on: its status is down (net show: status
 * down, fatal_error 1), path selection takes it last, and peers learn it
 * by a push of our ping info; its LND closes its connections, fails its
 * sends with -ENETUNREACH, and makes and takes no connection. `up` (or
 * the end of `duration_s`, when not 0) undoes it and pushes again.
 *
 * A link held down by its interface (the LND saw the carrier go) is the
 * same state from another cause: fault link up does not end that one.
 *
 * Errors: -EINVAL (NULL, 0@lo, a duration with up), -ENOENT (no NI with
 * that NID), -EOPNOTSUPP (its LND cannot take a link down).
 */
ULNET_API int ulnet_fault_link_set(ulnet_t *ln, const ulnet_nid_t *nid, bool down, uint32_t duration_s);

struct ulnet_fault_link {
	ulnet_nid_t nid;
	bool fault;                 /* held down by ulnet_fault_link_set() */
	bool carrier_down;          /* its interface has no link */
	uint64_t left_ms;           /* fault with a duration: time left; 0 none */
};
/* The pos-th of our NIs whose link is held down, by either cause.
 * Errors: -ENOENT past the last, -EINVAL. */
ULNET_API int ulnet_fault_link_list(ulnet_t *ln, int pos, struct ulnet_fault_link *l);

#endif
