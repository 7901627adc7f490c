/* SPDX-License-Identifier: MIT */
/*
 * router.c - the router role: forwarding messages addressed to other
 * nodes, the router buffer pools and per-peer router credits, and the
 * routing state machine (set routing 0|1, its start-up and stop phases).
 *
 * A message that is not ours takes, as in the kernel, a router credit of
 * the peer NI it came from, then a buffer of the pool its size picks
 * (tiny: no payload; small: up to a page; large: up to 1 MiB). Either one
 * short, it waits in order (the peer's queue, then the pool's) and its
 * LND's receive waits with it: lnet_parse() returns without recv(), the
 * connection stays paused, and recv() comes later (`delayed`). Once the
 * payload is in the buffer the message is sent on with its header as it
 * came (end-to-end NIDs), to its destination on one of our nets or to the
 * next gateway; when that send ends, the buffer and the credit go back
 * and the next waiter starts. Nothing is dropped for want of a buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core/fault.h"
#include "core/move.h"
#include "core/router.h"

static const unsigned lnet_rtr_npages[ULNET_RTR_NPOOLS] = { 0, 1, 256 };
static const int lnet_rtr_default[ULNET_RTR_NPOOLS] = {
	ULNET_RTR_TINY_DEFAULT, ULNET_RTR_SMALL_DEFAULT, ULNET_RTR_LARGE_DEFAULT
};
#define LNET_RTR_PAGE 4096u

static void lnet_rtr_timer_cb(struct ul_timer *t);

int lnet_router_init(ulnet_t *ln)
{
	ln->ln_rtrpools = calloc(ULNET_RTR_NPOOLS, sizeof(*ln->ln_rtrpools));
	if (!ln->ln_rtrpools)
		return -ENOMEM;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
		struct lnet_rtrbufpool *p = &ln->ln_rtrpools[i];

		p->rbp_npages = lnet_rtr_npages[i];
		p->rbp_size = (size_t)p->rbp_npages * LNET_RTR_PAGE;
		ul_list_init(&p->rbp_msgs);
	}
	ln->ln_routing = ULNET_ROUTING_DISABLED;
	ln->ln_rtr_params = (struct ulnet_router_params){
		.alive_router_check_interval = 60,
		.router_ping_timeout = 50,
		.check_routers_before_use = false,
		.avoid_asym_router_failure = true,
	};
	ul_timer_init(&ln->ln_rtr_timer, lnet_rtr_timer_cb);
	return 0;
}

int ulnet_router_params_get(ulnet_t *ln, struct ulnet_router_params *p)
{
	if (!ln || !p)
		return -EINVAL;
	lnet_lock(ln);
	*p = ln->ln_rtr_params;
	lnet_unlock(ln);
	return 0;
}

int ulnet_router_params_set(ulnet_t *ln, const struct ulnet_router_params *p)
{
	if (!ln || !p || p->router_ping_timeout < 0)
		return -EINVAL;
	lnet_lock(ln);
	ln->ln_rtr_params = *p;
	lnet_unlock(ln);
	return 0;
}

/* A router buffer goes: an LND may hold a registration of its pages, and
 * the next mmap may give the address again with other pages (memreg.h). */
static void lnet_rtrbuf_free(ulnet_t *ln, struct lnet_rtrbuf *rb)
{
	if (rb->rb_iov.iov_len) {
		lnet_memreg_released(ln, &rb->rb_iov, 1);
		munmap(rb->rb_iov.iov_base, rb->rb_iov.iov_len);
	}
	free(rb);
}

static void lnet_rtrpool_free_bufs(ulnet_t *ln, struct lnet_rtrbufpool *p)
{
	while (p->rbp_free) {
		struct lnet_rtrbuf *rb = p->rbp_free;

		p->rbp_free = rb->rb_next;
		lnet_rtrbuf_free(ln, rb);
	}
}

void lnet_router_fini(ulnet_t *ln)
{
	if (!ln->ln_rtrpools)
		return;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		lnet_rtrpool_free_bufs(ln, &ln->ln_rtrpools[i]);
	free(ln->ln_rtrpools);
	ln->ln_rtrpools = NULL;
}

static int lnet_rtr_pool_of(uint32_t len)
{
	if (len == 0)
		return ULNET_RTR_POOL_TINY;
	return len <= LNET_RTR_PAGE ? ULNET_RTR_POOL_SMALL : ULNET_RTR_POOL_LARGE;
}

/* A buffer for `msg`, whose pool credit it holds: 1, or -ENOMEM. */
static int lnet_rtrbuf_attach_locked(ulnet_t *ln, struct lnet_msg *msg, int pool)
{
	struct lnet_rtrbufpool *p = &ln->ln_rtrpools[pool];
	struct lnet_rtrbuf *rb = p->rbp_free;

	if (rb) {
		p->rbp_free = rb->rb_next;
	} else {
		rb = malloc(sizeof(*rb));
		if (!rb)
			return -ENOMEM;
		rb->rb_pool = pool;
		rb->rb_iov.iov_base = NULL;
		rb->rb_iov.iov_len = p->rbp_size;
		if (p->rbp_size) {
			void *d = mmap(NULL, p->rbp_size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (d == MAP_FAILED) {
				free(rb);
				return -ENOMEM;
			}
			rb->rb_iov.iov_base = d;
		}
	}
	rb->rb_next = NULL;
	msg->msg_rtrbuf = rb;
	msg->msg_iov = &rb->rb_iov;
	msg->msg_niov = p->rbp_size ? 1 : 0;
	msg->msg_offset = 0;
	return 1;
}

/* The pool's credit, then its buffer: 1 (ready), 0 (waits on the pool),
 * -ENOMEM (credit given back). */
static int lnet_fwd_take_buffer_locked(ulnet_t *ln, struct lnet_msg *msg)
{
	int pool = lnet_rtr_pool_of(msg->msg_len);
	struct lnet_rtrbufpool *p = &ln->ln_rtrpools[pool];
	int rc;

	p->rbp_credits--;
	if (p->rbp_credits < p->rbp_mincredits)
		p->rbp_mincredits = p->rbp_credits;
	if (p->rbp_credits < 0) {
		ul_list_add_tail(&msg->msg_list, &p->rbp_msgs);
		return 0;
	}
	rc = lnet_rtrbuf_attach_locked(ln, msg, pool);
	if (rc < 0)
		p->rbp_credits++;
	return rc;
}

/* The router credit of the peer NI it came from, then a buffer. */
static int lnet_fwd_post_locked(ulnet_t *ln, struct lnet_msg *msg)
{
	struct lnet_peer_ni *lpni = msg->msg_rxpeer;

	if (lpni && !msg->msg_rtrcredit) {
		msg->msg_rtrcredit = 1;
		lpni->lpni_rtrcredits--;
		if (lpni->lpni_rtrcredits < lpni->lpni_minrtrcredits)
			lpni->lpni_minrtrcredits = lpni->lpni_rtrcredits;
		if (lpni->lpni_rtrcredits < 0) {
			ul_list_add_tail(&msg->msg_list, &lpni->lpni_rtrq);
			return 0;
		}
	}
	return lnet_fwd_take_buffer_locked(ln, msg);
}

/* A waiter whose turn came: onto q->sq_recv, ready or (no memory) to be
 * discarded there. */
static void lnet_fwd_wake_locked(struct lnet_msg *msg, int rc, struct lnet_sendq *q)
{
	if (rc == 0)
		return;   /* now waits on its pool */
	msg->msg_fin_status = rc < 0 ? rc : 0;
	ul_list_add_tail(&msg->msg_list, &q->sq_recv);
}

/* A forwarded message that gets no buffer: its LND discards the payload
 * and the message ends with `rc` (its credit goes back). */
static void lnet_fwd_drop(struct lnet_msg *msg, bool delayed, int rc)
{
	char fnid[ULNET_NIDSTR_SIZE], dnid[ULNET_NIDSTR_SIZE];

	lnet_log(msg->msg_ln, ULNET_LOG_ERROR, "dropping %s from %s for %s: no router buffer (%s)",
		 lnet_msgtyp2str(msg->msg_type), lnet_nidstr(&msg->msg_from, fnid),
		 lnet_nidstr(&msg->msg_hdr.dest_nid, dnid), ulnet_strerror(rc));
	lnet_ni_recv(msg->msg_rxni, msg->msg_rx_private, NULL, delayed, 0, 0, msg->msg_len);
	msg->msg_receiving = 0;
	lnet_finalize_core(msg, rc);
}

void lnet_fwd_recv_ready(struct lnet_msg *msg)
{
	if (msg->msg_fin_status) {
		lnet_fwd_drop(msg, true, msg->msg_fin_status);
		return;
	}
	lnet_ni_recv(msg->msg_rxni, msg->msg_rx_private, msg, true, 0, msg->msg_len, msg->msg_len);
}

void lnet_fwd_release_locked(ulnet_t *ln, struct lnet_msg *msg, struct lnet_sendq *q)
{
	struct lnet_rtrbuf *rb = msg->msg_rtrbuf;
	struct lnet_peer_ni *lpni = msg->msg_rxpeer;

	if (rb) {
		struct lnet_rtrbufpool *p = &ln->ln_rtrpools[rb->rb_pool];

		msg->msg_rtrbuf = NULL;
		msg->msg_iov = NULL;
		msg->msg_niov = 0;
		if (ln->ln_routing == ULNET_ROUTING_DISABLED ||
		    (p->rbp_nbuffers > p->rbp_req_nbuffers && p->rbp_credits >= 0)) {
			/* a pool shrinking (or gone): this buffer goes */
			lnet_rtrbuf_free(ln, rb);
			p->rbp_nbuffers--;
		} else {
			rb->rb_next = p->rbp_free;
			p->rbp_free = rb;
			p->rbp_credits++;
			if (p->rbp_credits <= 0) {
				struct lnet_msg *w = ul_list_first(&p->rbp_msgs, struct lnet_msg, msg_list);

				ul_list_del(&w->msg_list);
				lnet_fwd_wake_locked(w, lnet_rtrbuf_attach_locked(ln, w, rb->rb_pool), q);
			}
		}
	}
	if (msg->msg_rtrcredit && lpni) {
		msg->msg_rtrcredit = 0;
		lpni->lpni_rtrcredits++;
		if (lpni->lpni_rtrcredits <= 0 && !ul_list_empty(&lpni->lpni_rtrq)) {
			struct lnet_msg *w = ul_list_first(&lpni->lpni_rtrq, struct lnet_msg, msg_list);

			ul_list_del(&w->msg_list);
			lnet_fwd_wake_locked(w, lnet_fwd_take_buffer_locked(ln, w), q);
		}
	}
}

bool lnet_fwd_next_locked(ulnet_t *ln, struct lnet_msg *msg, int *status, struct lnet_sendq *q)
{
	char fnid[ULNET_NIDSTR_SIZE], dnid[ULNET_NIDSTR_SIZE];
	int rc;

	if (msg->msg_sending || *status != 0)
		return false;
	if (ln->ln_routing == ULNET_ROUTING_DISABLED) {
		*status = -ECANCELED;
		return false;
	}
	/* the payload is in its buffer: on to the next hop, header as is */
	__atomic_store_n(&msg->msg_finalized, 0, __ATOMIC_RELEASE);
	rc = lnet_send_locked(ln, NULL, msg, q);
	if (rc == 0)
		return true;
	lnet_log(ln, ULNET_LOG_ERROR, "can't forward %s from %s to %s: %s",
		 lnet_msgtyp2str(msg->msg_type), lnet_nidstr(&msg->msg_hdr.src_nid, fnid),
		 lnet_nidstr(&msg->msg_hdr.dest_nid, dnid), ulnet_strerror(rc));
	*status = rc;
	return false;
}

int lnet_parse_forward(struct lnet_ni *ni, const struct lnet_hdr *hdr, const ulnet_nid_t *from_nid,
		       void *rx_private)
{
	ulnet_t *ln = ni->ni_ln;
	uint32_t plen = hdr->payload_length;
	char fnid[ULNET_NIDSTR_SIZE], snid[ULNET_NIDSTR_SIZE], dnid[ULNET_NIDSTR_SIZE];
	struct lnet_peer_ni *lpni;
	struct lnet_msg *msg;
	int rc;

	lnet_lock(ln);
	if (ln->ln_routing == ULNET_ROUTING_DISABLED || ln->ln_state != LNET_STATE_RUNNING ||
	    !ni->ni_up) {
		bool off = ln->ln_routing == ULNET_ROUTING_DISABLED;

		lnet_unlock(ln);
		if (off)
			lnet_log(ln, ULNET_LOG_ERROR,
				 "%s, src %s: dropping message for %s (routing not enabled)",
				 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
				 lnet_nidstr(&hdr->dest_nid, dnid));
		return -ENOENT;
	}
	msg = lnet_msg_alloc_locked(ln);
	if (!msg) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_ERROR, "%s, src %s: dropping %s for %s (out of memory)",
			 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
			 lnet_msgtyp2str(hdr->type), lnet_nidstr(&hdr->dest_nid, dnid));
		return -ENOENT;
	}
	msg->msg_type = hdr->type;
	msg->msg_rx_private = rx_private;
	msg->msg_receiving = 1;
	msg->msg_forward = 1;
	msg->msg_len = msg->msg_wanted = plen;
	msg->msg_offset = 0;
	msg->msg_hdr = *hdr;
	msg->msg_from = *from_nid;
	msg->msg_initiator = hdr->src_nid;
	msg->msg_target.nid = hdr->dest_nid;
	msg->msg_target.pid = hdr->dest_pid;
	msg->msg_rxni = ni;
	lnet_ni_addref_locked(ni);
	lpni = lnet_peer_ni_get_locked(ln, from_nid);
	if (lpni) {
		lpni->lpni_ns_status = LNET_NI_STATUS_UP;
		lpni->lpni_last_alive = lnet_now(ln);
		msg->msg_rxpeer = lpni;
		lnet_peer_ni_addref_locked(lpni);
	}
	lnet_msg_commit_locked(ln, msg, false);
	/* a delay rule holds it: lnet_fwd_resume() goes on later */
	if (__builtin_expect(lnet_fault_any(ln, ULNET_FAULT_DELAY), 0) &&
	    lnet_fault_delay_locked(ln, msg)) {
		lnet_unlock(ln);
		return 0;
	}
	rc = lnet_fwd_post_locked(ln, msg);
	lnet_unlock(ln);
	if (rc > 0) {
		lnet_ni_recv(ni, rx_private, msg, false, 0, plen, plen);
	} else if (rc < 0) {
		lnet_fwd_drop(msg, false, rc);
	}
	/* rc == 0: it waits for a credit or a buffer; recv() comes then */
	return 0;
}

void lnet_fwd_resume(struct lnet_msg *msg)
{
	ulnet_t *ln = msg->msg_ln;
	int rc;

	lnet_lock(ln);
	rc = lnet_fwd_post_locked(ln, msg);
	lnet_unlock(ln);
	if (rc > 0)
		lnet_ni_recv(msg->msg_rxni, msg->msg_rx_private, msg, true, 0, msg->msg_len,
			     msg->msg_len);
	else if (rc < 0)
		lnet_fwd_drop(msg, true, rc);
}

/* --- the routing state ----------------------------------------------------------------- */

static void lnet_rtr_timer_arm_locked(ulnet_t *ln)
{
	if (ln->ln_loop && !ul_timer_armed(&ln->ln_rtr_timer))
		ul_timer_start(ln->ln_loop, &ln->ln_rtr_timer, lnet_now(ln) + LNET_NSEC_PER_SEC);
}

static bool lnet_rtrpools_idle_locked(const ulnet_t *ln)
{
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		if (ln->ln_rtrpools[i].rbp_credits != ln->ln_rtrpools[i].rbp_nbuffers)
			return false;
	return true;
}

/* Routing is off: waiters end (-ECANCELED, their payload discarded) and
 * the pools empty (kept, with no buffer: `routing show` lists them). */
static void lnet_rtrpools_empty_locked(ulnet_t *ln, struct lnet_sendq *q)
{
	struct ul_list *pos;

	for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
		struct lnet_rtrbufpool *p = &ln->ln_rtrpools[i];
		struct lnet_msg *w;

		while ((w = ul_list_first(&p->rbp_msgs, struct lnet_msg, msg_list))) {
			ul_list_del(&w->msg_list);
			p->rbp_credits++;
			w->msg_fin_status = -ECANCELED;
			ul_list_add_tail(&w->msg_list, &q->sq_recv);
		}
		lnet_rtrpool_free_bufs(ln, p);
		p->rbp_nbuffers -= p->rbp_credits;
		p->rbp_req_nbuffers = 0;
		p->rbp_credits = p->rbp_mincredits = 0;
	}
	for (unsigned b = 0; b < ln->ln_pni_hash_size; b++) {
		ul_list_for_each(pos, &ln->ln_pni_hash[b]) {
			struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_hash);
			struct lnet_msg *w;

			while ((w = ul_list_first(&lpni->lpni_rtrq, struct lnet_msg, msg_list))) {
				ul_list_del(&w->msg_list);
				w->msg_fin_status = -ECANCELED;
				ul_list_add_tail(&w->msg_list, &q->sq_recv);
			}
		}
	}
}

bool lnet_router_ping_heard_locked(ulnet_t *ln, struct lnet_ni *ni)
{
	ni->ni_rtr_ping_last = lnet_now(ln);
	if (ni->ni_status != LNET_NI_STATUS_DOWN || ni->ni_health.health_value < ULNET_MAX_HEALTH ||
	    lnet_ni_fatal(ni))
		return false;   /* up already, down for its health (it follows
				 * that) or its link is down */
	ni->ni_status = LNET_NI_STATUS_UP;
	return true;
}

/* A router reports down the NIs of a net no node has pinged it on for
 * lnet_rtr_timeout_s(): nodes there route through it no more (their
 * router checker pings every 60 s), and nodes elsewhere whose single-hop
 * routes lead there take them down. True if a status changed. */
static bool lnet_rtr_nets_check_locked(ulnet_t *ln, uint64_t now)
{
	bool changed = false;
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni == ln->ln_loni || ni->ni_status != LNET_NI_STATUS_UP ||
		    now < ni->ni_rtr_ping_last + (uint64_t)lnet_rtr_timeout_s(ln) * LNET_NSEC_PER_SEC)
			continue;
		ni->ni_status = LNET_NI_STATUS_DOWN;
		changed = true;
		lnet_log(ln, ULNET_LOG_WARN, "%s: no router ping on its net for %ds: reported down",
			 lnet_nidstr(&ni->ni_nid, (char[ULNET_NIDSTR_SIZE]){ 0 }), lnet_rtr_timeout_s(ln));
	}
	return changed;
}

static void lnet_rtr_timer_cb(struct ul_timer *t)
{
	ulnet_t *ln = ul_container_of(t, ulnet_t, ln_rtr_timer);
	bool enabled = false, nets = false;
	struct lnet_sendq q;
	uint64_t now;

	if (!lnet_timer_enter(ln, &q, &now))
		return;
	if (ln->ln_routing == ULNET_ROUTING_STARTING && now >= ln->ln_rtr_phase_min) {
		ln->ln_routing = ULNET_ROUTING_ENABLED;
		enabled = true;
	} else if (ln->ln_routing == ULNET_ROUTING_STOPPING &&
		   ((now >= ln->ln_rtr_phase_min && lnet_rtrpools_idle_locked(ln)) ||
		    now >= ln->ln_rtr_phase_max)) {
		ln->ln_routing = ULNET_ROUTING_DISABLED;
		lnet_rtrpools_empty_locked(ln, &q);
		lnet_log(ln, ULNET_LOG_INFO, "message forwarding disabled");
	}
	if (ln->ln_routing == ULNET_ROUTING_ENABLED)
		nets = lnet_rtr_nets_check_locked(ln, now);
	/* ticks while routing is on: the phases, and the nets' liveness */
	if (ln->ln_routing != ULNET_ROUTING_DISABLED)
		ul_timer_start(ln->ln_loop, &ln->ln_rtr_timer, now + LNET_NSEC_PER_SEC);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	if (nets && !enabled)
		(void)lnet_ping_target_update(ln);
	if (enabled) {
		/* our ping info stops saying RTE_DISABLED, and every peer
		 * learns it (the kernel pushes to all at this point) */
		lnet_log(ln, ULNET_LOG_INFO, "message forwarding enabled");
		(void)lnet_ping_target_update(ln);
	}
}

/* `at_once`: ENABLED follows at once (ulnet_routing_enable_now), so the
 * start-up phase is not announced. */
static int lnet_routing_set(ulnet_t *ln, bool on, bool at_once)
{
	bool update = false;
	int rc = 0;

	if (!ln)
		return -EINVAL;
	lnet_lock(ln);
	if (on) {
		if (ln->ln_routing == ULNET_ROUTING_STOPPING) {
			rc = -EBUSY;
		} else if (ln->ln_routing == ULNET_ROUTING_DISABLED) {
			for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
				struct lnet_rtrbufpool *p = &ln->ln_rtrpools[i];
				int n = ln->ln_rtr_nbuffers[i] > 0 ? ln->ln_rtr_nbuffers[i]
								   : lnet_rtr_default[i];

				p->rbp_nbuffers = p->rbp_req_nbuffers = n;
				p->rbp_credits = p->rbp_mincredits = n;
			}
			ln->ln_rtrpools_alloc = true;
			ln->ln_routing = ULNET_ROUTING_STARTING;
			/* the nets' liveness counts from now */
			struct ul_list *pos;
			uint64_t now = lnet_now(ln);

			ul_list_for_each(pos, &ln->ln_nis) {
				struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

				ni->ni_rtr_ping_last = now;
			}
			ln->ln_rtr_phase_min = lnet_now(ln) +
					       (uint64_t)lnet_rtr_timeout_s(ln) * LNET_NSEC_PER_SEC;
			lnet_rtr_timer_arm_locked(ln);
			if (!at_once)
				lnet_log(ln, ULNET_LOG_INFO, "message forwarding will be enabled in %ds",
					 lnet_rtr_timeout_s(ln));
		}
	} else if (ln->ln_routing != ULNET_ROUTING_DISABLED) {
		uint64_t now = lnet_now(ln);

		update = ln->ln_routing == ULNET_ROUTING_ENABLED;
		ln->ln_routing = ULNET_ROUTING_STOPPING;
		ln->ln_rtr_phase_min = now + (uint64_t)lnet_rtr_timeout_s(ln) * LNET_NSEC_PER_SEC;
		ln->ln_rtr_phase_max = now + 3ull * lnet_rtr_timeout_s(ln) * LNET_NSEC_PER_SEC;
		lnet_rtr_timer_arm_locked(ln);
		lnet_log(ln, ULNET_LOG_INFO, "message forwarding will stop in %ds to %ds",
			 lnet_rtr_timeout_s(ln), 3 * lnet_rtr_timeout_s(ln));
	}
	lnet_unlock(ln);
	/* RTE_DISABLED at once, as the kernel */
	if (update)
		(void)lnet_ping_target_update(ln);
	return rc;
}

int ulnet_routing_set(ulnet_t *ln, bool on)
{
	return lnet_routing_set(ln, on, false);
}

int ulnet_routing_enable_now(ulnet_t *ln)
{
	int rc = lnet_routing_set(ln, true, true);
	bool update = false;

	if (rc)
		return rc;
	lnet_lock(ln);
	if (ln->ln_routing == ULNET_ROUTING_STARTING) {
		ln->ln_routing = ULNET_ROUTING_ENABLED;
		update = true;
	}
	lnet_rtr_timer_arm_locked(ln);
	lnet_unlock(ln);
	if (update) {
		lnet_log(ln, ULNET_LOG_INFO, "message forwarding enabled");
		(void)lnet_ping_target_update(ln);
	}
	return 0;
}

int ulnet_routing_info(ulnet_t *ln, struct ulnet_routing_info *info)
{
	if (!ln || !info)
		return -EINVAL;
	lnet_lock(ln);
	info->state = (enum ulnet_routing_state)ln->ln_routing;
	info->pools = ln->ln_rtrpools_alloc;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
		const struct lnet_rtrbufpool *p = &ln->ln_rtrpools[i];

		info->pool[i] = (struct ulnet_rtr_pool_info){ (int)p->rbp_npages, p->rbp_nbuffers,
							      p->rbp_credits, p->rbp_mincredits };
	}
	lnet_unlock(ln);
	return 0;
}

int ulnet_routing_buffers_set(ulnet_t *ln, int pool, int n)
{
	struct lnet_sendq q;

	if (!ln || pool < 0 || pool >= ULNET_RTR_NPOOLS)
		return -EINVAL;
	if (n == -1)
		return 0;
	if (n < -1)
		return -ERANGE;
	lnet_sendq_init(&q);
	lnet_lock(ln);
	ln->ln_rtr_nbuffers[pool] = n;
	if (ln->ln_routing != ULNET_ROUTING_DISABLED) {
		struct lnet_rtrbufpool *p = &ln->ln_rtrpools[pool];
		int nrb = n > 0 ? n : lnet_rtr_default[pool];

		p->rbp_req_nbuffers = nrb;
		if (nrb > p->rbp_nbuffers) {
			/* grow now: the new credits go to waiters first */
			int k = nrb - p->rbp_nbuffers;

			p->rbp_nbuffers += k;
			p->rbp_credits += k;
			p->rbp_mincredits = p->rbp_credits;
			for (; k > 0 && !ul_list_empty(&p->rbp_msgs); k--) {
				struct lnet_msg *w = ul_list_first(&p->rbp_msgs, struct lnet_msg, msg_list);

				ul_list_del(&w->msg_list);
				lnet_fwd_wake_locked(w, lnet_rtrbuf_attach_locked(ln, w, pool), &q);
			}
		}
	}
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	return 0;
}

void lnet_router_shutdown(ulnet_t *ln)
{
	struct lnet_sendq q;

	if (!ln->ln_rtrpools)
		return;
	lnet_sendq_init(&q);
	lnet_lock(ln);
	if (ln->ln_loop)
		ul_timer_stop(ln->ln_loop, &ln->ln_rtr_timer);
	if (ln->ln_rtrpools_alloc) {
		ln->ln_routing = ULNET_ROUTING_DISABLED;
		lnet_rtrpools_empty_locked(ln, &q);
	}
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
}
