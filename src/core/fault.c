/* SPDX-License-Identifier: MIT */
/*
 * fault.c - fault injection (include/ulnet/fault.h): the kernel's drop and
 * delay rules (net_fault.c), with the same matching and the same way of
 * picking messages, plus a seed per rule for runs that can be replayed.
 *
 * Picking. A rule with `rate` R acts on one matched message in each run
 * of R, at a position drawn at random when the run starts (R == 2: always
 * the first, as the kernel, whose sanity tests count on it). A rule with
 * `interval` I acts on the first matched message at or after a time drawn
 * at random in each I-second window. A drop rule with `random` drops each
 * matched message with probability 1/2 (the kernel draws below its
 * interval and compares with half of it).
 *
 * Held messages (delay rules) wait on their rule in release order (one
 * latency per rule, so arrival order is release order) and leave through
 * one timer per instance, armed for the earliest release.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/fault.h"
#include "core/move.h"

static void lnet_fault_timer_cb(struct ul_timer *t);

void lnet_fault_init(ulnet_t *ln)
{
	ul_list_init(&ln->ln_fault_rules[ULNET_FAULT_DROP]);
	ul_list_init(&ln->ln_fault_rules[ULNET_FAULT_DELAY]);
	ul_timer_init(&ln->ln_fault_timer, lnet_fault_timer_cb);
}

/* --- randomness ------------------------------------------------------------------ */

static uint64_t lnet_fault_rand(struct lnet_fault_rule *fr)
{
	/* splitmix64: small, and good enough to pick messages */
	uint64_t z = (fr->fr_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static uint32_t lnet_fault_below(struct lnet_fault_rule *fr, uint32_t n)
{
	return (uint32_t)(((lnet_fault_rand(fr) >> 32) * (uint64_t)n) >> 32);
}

/* --- matching ---------------------------------------------------------------------- */

static bool lnet_fault_nid_match(const ulnet_nid_t *rule, const ulnet_nid_t *nid)
{
	if (lnet_nid_is_any(rule))
		return true;
	if (!nid)
		return false;
	if (lnet_nid_eq(rule, nid))
		return true;
	/* 255.255.255.255@net: any node on that net */
	return ulnet_nid_net(rule) == ulnet_nid_net(nid) && rule->size == 0 &&
	       rule->addr[0] == 0xff && rule->addr[1] == 0xff && rule->addr[2] == 0xff &&
	       rule->addr[3] == 0xff;
}

static bool lnet_fault_attr_match(const struct ulnet_fault_rule *a, const struct lnet_hdr *hdr,
				  const ulnet_nid_t *local)
{
	uint32_t type = hdr->type;
	unsigned portal = 64;

	if (type == ULNET_MSG_PUT)
		portal = hdr->msg.put.ptl_index;
	else if (type == ULNET_MSG_GET)
		portal = hdr->msg.get.ptl_index;
	if (!lnet_fault_nid_match(&a->src, &hdr->src_nid) ||
	    !lnet_fault_nid_match(&a->dst, &hdr->dest_nid) || !lnet_fault_nid_match(&a->local, local))
		return false;
	if (!(a->msg_mask & ULNET_FAULT_MSG_BIT(type)))
		return false;
	/* ACK and REPLY have no portal; a portal mask left them out of
	 * msg_mask already (lnet_fault_validate()) */
	return !a->portal_mask || (portal < 64 && (a->portal_mask & (1ULL << portal)));
}

/* Whether the matched message is the one to act on (rate, interval or
 * random), counting it. */
static bool lnet_fault_pick(ulnet_t *ln, struct lnet_fault_rule *fr, bool random)
{
	const struct ulnet_fault_rule *a = &fr->fr_attr;
	bool act;

	if (random)
		return lnet_fault_below(fr, a->interval) >= a->interval / 2;
	fr->fr_stat.count++;
	if (a->interval) {
		uint64_t now = lnet_now(ln), iv = (uint64_t)a->interval * LNET_NSEC_PER_SEC;

		act = now >= fr->fr_time;
		if (act) {
			if (now > fr->fr_base)
				fr->fr_base = now;
			fr->fr_time = fr->fr_base + lnet_fault_below(fr, a->interval) * LNET_NSEC_PER_SEC;
			fr->fr_base += iv;
		}
		return act;
	}
	act = fr->fr_stat.count - 1 == fr->fr_at;
	if (fr->fr_stat.count % a->rate == 0)
		fr->fr_at = fr->fr_stat.count + lnet_fault_below(fr, a->rate);
	return act;
}

static void lnet_fault_count(struct lnet_fault_rule *fr, uint32_t type, bool drop)
{
	switch (type) {
	case ULNET_MSG_PUT:
		fr->fr_stat.put++;
		break;
	case ULNET_MSG_ACK:
		fr->fr_stat.ack++;
		break;
	case ULNET_MSG_GET:
		fr->fr_stat.get++;
		break;
	case ULNET_MSG_REPLY:
		fr->fr_stat.reply++;
		break;
	}
	if (drop)
		fr->fr_stat.dropped++;
	else
		fr->fr_stat.delayed++;
}

#define lnet_fault_for_each(ln, kind, fr)                                                          \
	for (struct lnet_fault_rule *fr = ul_list_first(&(ln)->ln_fault_rules[kind],              \
							 struct lnet_fault_rule, fr_list);         \
	     fr; fr = fr->fr_list.next == &(ln)->ln_fault_rules[kind]                                \
			 ? NULL : ul_container_of(fr->fr_list.next, struct lnet_fault_rule, fr_list))

/* A drop rule's verdict: `health` true asks for the rules with health
 * errors (send path), false for the others (receive path). */
static struct lnet_fault_rule *lnet_fault_drop_match_locked(ulnet_t *ln, const struct lnet_hdr *hdr,
							    const ulnet_nid_t *local, bool health)
{
	lnet_fault_for_each(ln, ULNET_FAULT_DROP, fr) {
		const struct ulnet_fault_rule *a = &fr->fr_attr;
		bool drop;

		if (!lnet_fault_attr_match(a, hdr, local))
			continue;
		if (a->drop_all) {
			drop = true;
		} else {
			if (health != (a->health_error_mask != 0))
				continue;
			drop = lnet_fault_pick(ln, fr, a->random);
		}
		if (drop) {
			lnet_fault_count(fr, hdr->type, true);
			return fr;
		}
	}
	return NULL;
}

bool lnet_fault_drop_recv(ulnet_t *ln, const struct lnet_hdr *hdr, const ulnet_nid_t *local)
{
	bool drop;

	lnet_lock(ln);
	drop = lnet_fault_drop_match_locked(ln, hdr, local, false) != NULL;
	lnet_unlock(ln);
	return drop;
}

/* A health status of the mask (random: any), as the kernel draws it: a
 * random one, else the set bit closest to it. */
static enum ulnet_hstatus lnet_fault_hstatus(struct lnet_fault_rule *fr, uint32_t mask)
{
	int choice = 1 + (int)lnet_fault_below(fr, ULNET_HSTATUS_END - 1), best = choice, delta = 99;

	if (mask == ULNET_HSTATUS_RANDOM || (mask & ULNET_HSTATUS_BIT(choice)))
		return (enum ulnet_hstatus)choice;
	for (int i = ULNET_HSTATUS_END - 1; i > 0; i--) {
		int d = choice > i ? choice - i : i - choice;

		if ((mask & ULNET_HSTATUS_BIT(i)) && d < delta) {
			delta = d;
			best = i;
		}
	}
	return (enum ulnet_hstatus)best;
}

/* The errno an LND gives for a failure of that kind, which the core's
 * health classes then read back (msg.c, lnet_errno2hstatus()). */
static int lnet_hstatus2errno(enum ulnet_hstatus hs)
{
	switch (hs) {
	case ULNET_HSTATUS_REMOTE_DROPPED:
		return -ECONNRESET;
	case ULNET_HSTATUS_LOCAL_TIMEOUT:
	case ULNET_HSTATUS_REMOTE_TIMEOUT:
	case ULNET_HSTATUS_NETWORK_TIMEOUT:
		return -ETIMEDOUT;
	case ULNET_HSTATUS_LOCAL_INTERRUPT:
		return -EINTR;
	case ULNET_HSTATUS_LOCAL_ABORTED:
		return -ECONNABORTED;
	case ULNET_HSTATUS_LOCAL_NO_ROUTE:
		return -ENETUNREACH;
	default:
		return -EIO;
	}
}

bool lnet_fault_send_error(ulnet_t *ln, struct lnet_msg *msg, int *status)
{
	struct lnet_fault_rule *fr;
	char snid[ULNET_NIDSTR_SIZE], dnid[ULNET_NIDSTR_SIZE];
	enum ulnet_hstatus hs = ULNET_HSTATUS_LOCAL_ERROR;

	lnet_lock(ln);
	fr = lnet_fault_drop_match_locked(ln, &msg->msg_hdr, NULL, true);
	if (fr)   /* drop_all without a mask: any error, as the kernel */
		hs = lnet_fault_hstatus(fr, fr->fr_attr.health_error_mask ? fr->fr_attr.health_error_mask
									 : ULNET_HSTATUS_RANDOM);
	lnet_unlock(ln);
	if (!fr)
		return false;
	*status = lnet_hstatus2errno(hs);
	msg->msg_hstatus = hs;
	lnet_log(ln, ULNET_LOG_INFO, "src %s -> dst %s: %s fails to simulate health error %d (%s)",
		 lnet_nidstr(&msg->msg_hdr.src_nid, snid), lnet_nidstr(&msg->msg_hdr.dest_nid, dnid),
		 lnet_msgtyp2str(msg->msg_type), (int)hs, ulnet_strerror(*status));
	return true;
}

/* --- delay ----------------------------------------------------------------------------- */

static void lnet_fault_timer_arm_locked(ulnet_t *ln)
{
	uint64_t first = UINT64_MAX;

	lnet_fault_for_each(ln, ULNET_FAULT_DELAY, fr) {
		struct lnet_msg *m = ul_list_first(&fr->fr_msgs, struct lnet_msg, msg_list);

		if (m && m->msg_fault_release < first)
			first = m->msg_fault_release;
	}
	if (first == UINT64_MAX || !ln->ln_loop)
		return;
	if (ul_timer_armed(&ln->ln_fault_timer))
		ul_timer_stop(ln->ln_loop, &ln->ln_fault_timer);
	ul_timer_start(ln->ln_loop, &ln->ln_fault_timer, first);
}

bool lnet_fault_delay_locked(ulnet_t *ln, struct lnet_msg *msg)
{
	/* stopping: what is sent or arrives now goes on, held by no one */
	if (ln->ln_state != LNET_STATE_RUNNING)
		return false;
	lnet_fault_for_each(ln, ULNET_FAULT_DELAY, fr) {
		if (!lnet_fault_attr_match(&fr->fr_attr, &msg->msg_hdr, NULL) ||
		    !lnet_fault_pick(ln, fr, false))
			continue;
		lnet_fault_count(fr, msg->msg_type, false);
		msg->msg_fault_release = lnet_now(ln) + (uint64_t)fr->fr_attr.latency * LNET_NSEC_PER_SEC;
		ul_list_add_tail(&msg->msg_list, &fr->fr_msgs);
		lnet_fault_timer_arm_locked(ln);
		return true;
	}
	return false;
}

/* Held messages due by `now` (all: every one) onto `recv` (arrived) or
 * q's send list (about to go to their LND). */
static void lnet_fault_release_locked(ulnet_t *ln, struct lnet_fault_rule *fr, uint64_t now, bool all,
				      struct ul_list *recv, struct lnet_sendq *q)
{
	struct lnet_msg *m;

	while ((m = ul_list_first(&fr->fr_msgs, struct lnet_msg, msg_list)) &&
	       (all || m->msg_fault_release <= now)) {
		ul_list_del(&m->msg_list);
		if (m->msg_receiving)
			ul_list_add_tail(&m->msg_list, recv);
		else
			ul_list_add_tail(&m->msg_list, &q->sq_send);
	}
}

static void lnet_fault_resume_all(struct ul_list *recv)
{
	struct lnet_msg *m;

	while ((m = ul_list_first(recv, struct lnet_msg, msg_list))) {
		ul_list_del(&m->msg_list);
		if (m->msg_forward)
			lnet_fwd_resume(m);
		else
			lnet_parse_resume(m);
	}
}

static void lnet_fault_timer_cb(struct ul_timer *t)
{
	ulnet_t *ln = ul_container_of(t, ulnet_t, ln_fault_timer);
	struct ul_list recv;
	struct lnet_sendq q;
	uint64_t now;

	if (!lnet_timer_enter(ln, &q, &now))
		return;
	ul_list_init(&recv);
	lnet_fault_for_each(ln, ULNET_FAULT_DELAY, fr)
		lnet_fault_release_locked(ln, fr, now, false, &recv, &q);
	lnet_fault_timer_arm_locked(ln);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	lnet_fault_resume_all(&recv);
}

/* --- rules ----------------------------------------------------------------------------- */

static int lnet_fault_validate(enum ulnet_fault_kind kind, struct ulnet_fault_rule *a)
{
	bool drop = kind == ULNET_FAULT_DROP;

	if (kind != ULNET_FAULT_DROP && kind != ULNET_FAULT_DELAY)
		return -EINVAL;
	if (!drop && (a->random || a->drop_all || a->health_error_mask))
		return -EINVAL;
	if (drop && a->latency)
		return -EINVAL;
	/* exactly one of rate and interval (drop_all needs neither) */
	if (!(drop && a->drop_all) && !((a->rate == 0) ^ (a->interval == 0)))
		return -EINVAL;
	if (a->random && !a->interval)
		return -EINVAL;
	if (a->health_error_mask && a->health_error_mask != ULNET_HSTATUS_RANDOM &&
	    (a->health_error_mask & ~(((1u << ULNET_HSTATUS_END) - 1) & ~1u)))
		return -EINVAL;
	if (!a->msg_mask)
		a->msg_mask = ULNET_FAULT_MSG_BIT(ULNET_MSG_ACK) | ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT) |
			      ULNET_FAULT_MSG_BIT(ULNET_MSG_GET) | ULNET_FAULT_MSG_BIT(ULNET_MSG_REPLY);
	if (a->portal_mask) {
		/* only PUT and GET have a portal */
		a->msg_mask &= ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT) | ULNET_FAULT_MSG_BIT(ULNET_MSG_GET);
		if (!a->msg_mask)
			return -EINVAL;
	}
	return 0;
}

int ulnet_fault_add(ulnet_t *ln, enum ulnet_fault_kind kind, const struct ulnet_fault_rule *r)
{
	struct lnet_fault_rule *fr;
	struct ulnet_fault_rule a;
	int rc;

	if (!ln || !r)
		return -EINVAL;
	a = *r;
	rc = lnet_fault_validate(kind, &a);
	if (rc)
		return rc;
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	fr->fr_attr = a;
	ul_list_init(&fr->fr_msgs);
	fr->fr_rng = a.seed;
	if (!a.seed && getrandom(&fr->fr_rng, sizeof(fr->fr_rng), GRND_NONBLOCK) !=
			       (ssize_t)sizeof(fr->fr_rng))
		fr->fr_rng = (uint64_t)(uintptr_t)fr ^ 0x5851f42d4c957f2dULL;
	lnet_lock(ln);
	if (a.interval) {
		uint64_t now = lnet_now(ln);

		fr->fr_base = now + (uint64_t)a.interval * LNET_NSEC_PER_SEC;
		fr->fr_time = now + lnet_fault_below(fr, a.interval) * LNET_NSEC_PER_SEC;
	} else if (a.rate) {
		fr->fr_at = a.rate == 2 ? 0 : lnet_fault_below(fr, a.rate);
	}
	/* newest first, as the kernel's list_add() */
	ul_list_add(&fr->fr_list, &ln->ln_fault_rules[kind]);
	__atomic_store_n(&ln->ln_fault_n[kind], ln->ln_fault_n[kind] + 1, __ATOMIC_RELAXED);
	if (kind == ULNET_FAULT_DROP && (a.health_error_mask || a.drop_all))
		__atomic_store_n(&ln->ln_fault_nhealth, ln->ln_fault_nhealth + 1, __ATOMIC_RELAXED);
	lnet_unlock(ln);
	return 0;
}

/* Unlink `fr` (locked); its held messages go to `recv` / q. */
static void lnet_fault_unlink_locked(ulnet_t *ln, enum ulnet_fault_kind kind,
				     struct lnet_fault_rule *fr, struct ul_list *recv,
				     struct lnet_sendq *q)
{
	ul_list_del(&fr->fr_list);
	lnet_fault_release_locked(ln, fr, 0, true, recv, q);
	__atomic_store_n(&ln->ln_fault_n[kind], ln->ln_fault_n[kind] - 1, __ATOMIC_RELAXED);
	if (kind == ULNET_FAULT_DROP && (fr->fr_attr.health_error_mask || fr->fr_attr.drop_all))
		__atomic_store_n(&ln->ln_fault_nhealth, ln->ln_fault_nhealth - 1, __ATOMIC_RELAXED);
}

int ulnet_fault_del(ulnet_t *ln, enum ulnet_fault_kind kind, const ulnet_nid_t *src,
		    const ulnet_nid_t *dst)
{
	struct ul_list recv, gone;
	struct lnet_sendq q;
	int n = 0;

	if (!ln || (kind != ULNET_FAULT_DROP && kind != ULNET_FAULT_DELAY))
		return -EINVAL;
	ul_list_init(&recv);
	ul_list_init(&gone);
	lnet_sendq_init(&q);
	lnet_lock(ln);
	for (struct ul_list *pos = ln->ln_fault_rules[kind].next, *nx;
	     pos != &ln->ln_fault_rules[kind]; pos = nx) {
		struct lnet_fault_rule *fr = ul_container_of(pos, struct lnet_fault_rule, fr_list);

		nx = pos->next;
		if ((src && !lnet_nid_is_any(src) && !lnet_nid_eq(src, &fr->fr_attr.src)) ||
		    (dst && !lnet_nid_is_any(dst) && !lnet_nid_eq(dst, &fr->fr_attr.dst)))
			continue;
		lnet_fault_unlink_locked(ln, kind, fr, &recv, &q);
		ul_list_add_tail(&fr->fr_list, &gone);
		n++;
	}
	lnet_unlock(ln);
	/* a deleted delay rule's messages go on at once (the kernel's) */
	lnet_sendq_flush(ln, &q);
	lnet_fault_resume_all(&recv);
	while (!ul_list_empty(&gone)) {
		struct lnet_fault_rule *fr = ul_list_first(&gone, struct lnet_fault_rule, fr_list);

		ul_list_del(&fr->fr_list);
		free(fr);
	}
	return n;
}

int ulnet_fault_list(ulnet_t *ln, enum ulnet_fault_kind kind, int pos, struct ulnet_fault_rule *r,
		     struct ulnet_fault_stats *st)
{
	int i = 0;

	if (!ln || (kind != ULNET_FAULT_DROP && kind != ULNET_FAULT_DELAY) || pos < 0)
		return -EINVAL;
	lnet_lock(ln);
	lnet_fault_for_each(ln, kind, fr) {
		if (i++ != pos)
			continue;
		if (r)
			*r = fr->fr_attr;
		if (st)
			*st = fr->fr_stat;
		lnet_unlock(ln);
		return 0;
	}
	lnet_unlock(ln);
	return -ENOENT;
}

void ulnet_fault_reset(ulnet_t *ln, enum ulnet_fault_kind kind)
{
	if (!ln || (kind != ULNET_FAULT_DROP && kind != ULNET_FAULT_DELAY))
		return;
	lnet_lock(ln);
	lnet_fault_for_each(ln, kind, fr) {
		memset(&fr->fr_stat, 0, sizeof(fr->fr_stat));
		/* the picking restarts with the figures */
		if (fr->fr_attr.rate)
			fr->fr_at = fr->fr_attr.rate == 2 ? 0 : lnet_fault_below(fr, fr->fr_attr.rate);
	}
	lnet_unlock(ln);
}

/* --- shutdown -------------------------------------------------------------------------- */

void lnet_fault_shutdown(ulnet_t *ln)
{
	struct ul_list recv;
	struct lnet_sendq q;
	struct lnet_msg *m;

	ul_list_init(&recv);
	lnet_sendq_init(&q);
	lnet_lock(ln);
	lnet_fault_for_each(ln, ULNET_FAULT_DELAY, fr)
		lnet_fault_release_locked(ln, fr, 0, true, &recv, &q);
	lnet_unlock(ln);
	if (ln->ln_loop)
		ul_timer_stop(ln->ln_loop, &ln->ln_fault_timer);
	/* held messages end here, not on the wire */
	while ((m = ul_list_first(&q.sq_send, struct lnet_msg, msg_list))) {
		ul_list_del(&m->msg_list);
		lnet_finalize_core(m, -ECANCELED);
	}
	while ((m = ul_list_first(&recv, struct lnet_msg, msg_list))) {
		ul_list_del(&m->msg_list);
		m->msg_receiving = 0;
		lnet_ni_recv(m->msg_rxni, m->msg_rx_private, NULL, true, 0, 0, m->msg_len);
		lnet_finalize_core(m, -ECANCELED);
	}
}

void lnet_fault_fini(ulnet_t *ln)
{
	for (int k = 0; k < 2; k++) {
		struct lnet_fault_rule *fr;

		if (!ln->ln_fault_rules[k].next)   /* ulnet_create() failed first */
			continue;
		while ((fr = ul_list_first(&ln->ln_fault_rules[k], struct lnet_fault_rule, fr_list))) {
			ul_list_del(&fr->fr_list);
			free(fr);
		}
		ln->ln_fault_n[k] = 0;
	}
	ln->ln_fault_nhealth = 0;
}
