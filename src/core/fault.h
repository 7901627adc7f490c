/* SPDX-License-Identifier: MIT */
/*
 * fault.h - fault injection (fault.c): drop and delay rules, matched on
 * the receive path (lnet_parse()), on the send path after credits
 * (lnet_post_send_locked()) and, for health errors, as a message is
 * handed to its LND (lnet_sendq_flush()).
 */
#ifndef ULNET_CORE_FAULT_H
#define ULNET_CORE_FAULT_H

#include "core/core.h"
#include "ulnet/fault.h"

struct lnet_fault_rule {
	struct ul_list fr_list;        /* ln_fault_rules[kind] */
	struct ulnet_fault_rule fr_attr;
	struct ulnet_fault_stats fr_stat;
	uint64_t fr_rng;               /* splitmix64 state */
	uint64_t fr_at;                /* rate: act when the count reaches it */
	uint64_t fr_time;              /* interval: act at or after (ns) */
	uint64_t fr_base;              /* interval: start of the next window (ns) */
	struct ul_list fr_msgs;        /* delay: held messages, release order */
};

void lnet_fault_init(ulnet_t *ln);
/* Shutdown: held messages end with -ECANCELED; the rules go. */
void lnet_fault_shutdown(ulnet_t *ln);
void lnet_fault_fini(ulnet_t *ln);

/* Receive path, before anything is allocated: whether a drop rule
 * (without a health error) drops this message arriving on `ni`. */
bool lnet_fault_drop_recv(ulnet_t *ln, const struct lnet_hdr *hdr, const ulnet_nid_t *local);
/* A committed message (arriving, or about to go to its LND): whether a
 * delay rule holds it; it then leaves through the delay timer (received:
 * lnet_parse_resume()/lnet_fwd_resume(); sent: the LND). */
bool lnet_fault_delay_locked(ulnet_t *ln, struct lnet_msg *msg);
/* (send path, health errors: lnet_fault_send_error(), declared in send.h
 * for lnet_sendq_flush()) */

/* Lock-free hints for the hot paths: rules of each kind exist. */
static inline bool lnet_fault_any(const ulnet_t *ln, enum ulnet_fault_kind kind)
{
	return __atomic_load_n(&ln->ln_fault_n[kind], __ATOMIC_RELAXED) != 0;
}

/* A received message a delay rule held goes on (recv.c, router.c). */
void lnet_parse_resume(struct lnet_msg *msg);
void lnet_fwd_resume(struct lnet_msg *msg);

#endif
