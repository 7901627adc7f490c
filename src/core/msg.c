/* SPDX-License-Identifier: MIT */
/*
 * msg.c - messages: the pool (no allocation per message once warm), events,
 * commit/decommit with counters, and lnet_finalize(), the one completion
 * point of every message.
 *
 * lnet_finalize() may be re-entered on one thread (loopback: a handler sends,
 * the LND finalizes inside send()); a per-thread queue turns that recursion
 * into iteration, as the kernel's finalizer slots do, so a handler that keeps
 * sending from its own completion runs in constant stack.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/route.h"
#include "core/router.h"
#include "ulnet/fault.h"

static_assert(ULNET_HSTATUS_END <= 16, "msg_hstatus holds a ulnet_hstatus in 4 bits");

#define LNET_MSG_CHUNK 64

/* --- pool ------------------------------------------------------------------------ */

int lnet_msg_pool_grow_locked(ulnet_t *ln)
{
	struct lnet_msg *chunk;
	void **chunks;
	unsigned i;

	chunks = realloc(ln->ln_msg_chunks, (ln->ln_nmsg_chunks + 1) * sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	ln->ln_msg_chunks = chunks;
	chunk = calloc(LNET_MSG_CHUNK, sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	chunks[ln->ln_nmsg_chunks++] = chunk;
	for (i = 0; i < LNET_MSG_CHUNK; i++) {
		chunk[i].msg_state = LNET_MSG_FREE;
		ul_list_add_tail(&chunk[i].msg_list, &ln->ln_msg_free);
	}
	return 0;
}

int lnet_msg_pool_init(ulnet_t *ln)
{
	return lnet_msg_pool_grow_locked(ln);
}

void lnet_msg_pool_fini(ulnet_t *ln)
{
	unsigned i;

	for (i = 0; i < ln->ln_nmsg_chunks; i++)
		free(ln->ln_msg_chunks[i]);
	free(ln->ln_msg_chunks);
	ln->ln_msg_chunks = NULL;
	ln->ln_nmsg_chunks = 0;
	ul_list_init(&ln->ln_msg_free);
}



/* --- what LNDs see of a message ---------------------------------------------- */

const struct lnet_hdr *lnet_msg_hdr(const struct lnet_msg *msg)
{
	return &msg->msg_hdr;
}

void lnet_msg_payload(const struct lnet_msg *msg, const struct iovec **iov, unsigned *niov,
		      size_t *offset, size_t *len)
{
	if (msg->msg_len == 0) {
		*iov = NULL;
		*niov = 0;
		*offset = 0;
		*len = 0;
		return;
	}
	*iov = msg->msg_iov;
	*niov = msg->msg_niov;
	*offset = msg->msg_offset;
	*len = msg->msg_len;
}

ulnet_process_id_t lnet_msg_target(const struct lnet_msg *msg)
{
	ulnet_process_id_t id = { .nid = msg->msg_hdr.dest_nid, .pid = msg->msg_hdr.dest_pid };

	/* a routed message goes to its gateway, a node's LNet (pid 12345) */
	if (msg->msg_routed) {
		id.nid = msg->msg_txpeer->lpni_nid;
		id.pid = ULNET_PID_LUSTRE;
	}
	return id;
}

int lnet_msg_get_sink(const struct lnet_msg *msg, const struct iovec **iov, unsigned *niov,
		      size_t *len)
{
	const struct lnet_libmd *md = msg->msg_md;

	/* a forwarded GET has no MD here; a routed one must come back as a
	 * REPLY message through the routers */
	if (msg->msg_type != ULNET_MSG_GET || !md || msg->msg_forward || msg->msg_routed)
		return -EINVAL;
	*iov = md->md_iov;
	*niov = md->md_niov;
	*len = md->md_length;
	return 0;
}

void **lnet_msg_lnd_slot(struct lnet_msg *msg)
{
	return &msg->msg_lnd_slot;
}

void lnet_msg_set_hstatus(struct lnet_msg *msg, enum ulnet_hstatus hs)
{
	if (!msg->msg_hstatus && hs > ULNET_HSTATUS_OK && hs < ULNET_HSTATUS_END)
		msg->msg_hstatus = hs;
}

size_t lnet_copy_iov(const struct iovec *dst, unsigned ndst, size_t doff,
		     const struct iovec *src, unsigned nsrc, size_t soff, size_t nob)
{
	size_t done = 0;

	if (nob == 0)
		return 0;
	while (ndst && doff >= dst->iov_len) {
		doff -= dst->iov_len;
		dst++;
		ndst--;
	}
	while (nsrc && soff >= src->iov_len) {
		soff -= src->iov_len;
		src++;
		nsrc--;
	}
	while (nob && ndst && nsrc) {
		size_t d = dst->iov_len - doff, s = src->iov_len - soff;
		size_t n = d < s ? d : s;

		if (n > nob)
			n = nob;
		memcpy((char *)dst->iov_base + doff, (const char *)src->iov_base + soff, n);
		done += n;
		nob -= n;
		doff += n;
		soff += n;
		if (doff == dst->iov_len) {
			dst++;
			ndst--;
			doff = 0;
		}
		if (soff == src->iov_len) {
			src++;
			nsrc--;
			soff = 0;
		}
	}
	return done;
}

/* --- MD attachment and events ------------------------------------------------- */



/* --- commit / decommit --------------------------------------------------------- */


/* The clock for a completion's latency figures. `nowp` (may be NULL: read
 * the clock) is shared by the messages that lnet_fin_run() found queued
 * when it took the lock: the LND (or the core) had finalized all of them by
 * then, so one read, taken at the first need, bounds them all at least as
 * tightly as a read per message would. */
static uint64_t lnet_fin_now(ulnet_t *ln, uint64_t *nowp)
{
	if (!nowp)
		return lnet_now(ln);
	if (!*nowp)
		*nowp = lnet_now(ln);
	return *nowp;
}

static inline __attribute__((always_inline)) void
lnet_msg_decommit_tx_locked(ulnet_t *ln, struct lnet_msg *msg, int status, struct lnet_sendq *q,
			    uint64_t *nowp)
{
	struct ulnet_event *ev = &msg->msg_ev;
	uint32_t type = msg->msg_type;
	uint64_t now = 0;

	if (__builtin_expect(msg->msg_forward, 0)) {
		/* forwarded: counted as routed traffic, not as our sends */
		if (status == 0) {
			ln->ln_ctr.route_count++;
			ln->ln_ctr.route_length += msg->msg_len;
			if (msg->msg_txpeer) {
				lnet_count_type(&msg->msg_txpeer->lpni_sent, &msg->msg_txpeer->lpni_sent_bytes,
				                type, msg->msg_len);
			}
			if (msg->msg_txni) {
				lnet_count_type(&msg->msg_txni->ni_sent, &msg->msg_txni->ni_sent_bytes,
				                type, msg->msg_len);
			}
		}
	} else if (status == 0) {
		/* the kernel counts an ACK as the PUT it answers and a
		 * REPLY as the GET: keep its sent_stats */
		if (ev->type == ULNET_EVENT_PUT)
			type = ULNET_MSG_PUT;
		else if (ev->type == ULNET_EVENT_GET)
			type = ULNET_MSG_GET;
		if (ev->type == ULNET_EVENT_SEND && msg->msg_type == ULNET_MSG_PUT)
			ln->ln_ctr.send_length += msg->msg_len;
		ln->ln_ctr.send_count++;
		if (__builtin_expect(msg->msg_retries != 0, 0))
			ln->ln_ctr.successful_resends++;
		/* the payload bytes: msg_len, a PUT's or a REPLY's (its
		 * msg_wanted, lnet_parse_get(), which send_length counts at
		 * the receive), 0 for an ACK or a GET */
		if (msg->msg_txpeer) {
			lnet_count_type(&msg->msg_txpeer->lpni_sent, &msg->msg_txpeer->lpni_sent_bytes,
			                type, msg->msg_len);
		}
		if (ev->type == ULNET_EVENT_SEND && msg->msg_type == ULNET_MSG_PUT &&
		    msg->msg_t_start) {
			now = lnet_fin_now(ln, nowp); /* for both egress figures and the credits */

			if (msg->msg_txni)
				lnet_latency_add(&msg->msg_txni->ni_put_egress,
						 now - msg->msg_t_start);
			lnet_peer_ni_latency_at_locked(msg->msg_txpeer, ULNET_EVENT_SEND,
						       msg->msg_t_start, now);
		}
		if (msg->msg_txni) {
			lnet_count_type(&msg->msg_txni->ni_sent, &msg->msg_txni->ni_sent_bytes,
			                type, msg->msg_len);
		}
	}
	lnet_return_tx_credits_locked(ln, msg, q, now);
	msg->msg_tx_committed = 0;
}

static inline __attribute__((always_inline)) void
lnet_msg_decommit_rx_locked(ulnet_t *ln, struct lnet_msg *msg, int status)
{
	struct ulnet_event *ev = &msg->msg_ev;
	/* a GET target counts the GET it received, not the REPLY it sends */
	unsigned rx_type = msg->msg_type == ULNET_MSG_REPLY && ev->type == ULNET_EVENT_GET
				   ? ULNET_MSG_GET : msg->msg_type;

	if (__builtin_expect(msg->msg_forward, 0)) {
		if (status == 0) {
			if (msg->msg_rxpeer) {
				lnet_count_type(&msg->msg_rxpeer->lpni_received, &msg->msg_rxpeer->lpni_received_bytes,
				                msg->msg_type, msg->msg_len);
			}
			if (msg->msg_rxni) {
				lnet_count_type(&msg->msg_rxni->ni_received, &msg->msg_rxni->ni_received_bytes,
				                msg->msg_type, msg->msg_len);
			}
		}
	} else if (status == 0) {
		/* the bytes placed by a PUT or REPLY (an ACK brings none, a
		 * GET's msg_wanted is its REPLY's, counted as sent) */
		uint32_t nob = ev->type == ULNET_EVENT_PUT || ev->type == ULNET_EVENT_REPLY
				       ? msg->msg_wanted : 0;

		if (ev->type == ULNET_EVENT_GET)
			ln->ln_ctr.send_length += msg->msg_wanted;
		ln->ln_ctr.recv_length += nob;
		ln->ln_ctr.recv_count++;
		if (msg->msg_rxpeer) {
			lnet_count_type(&msg->msg_rxpeer->lpni_received, &msg->msg_rxpeer->lpni_received_bytes,
			                rx_type, nob);
		}
		if (msg->msg_rxni) {
			lnet_count_type(&msg->msg_rxni->ni_received, &msg->msg_rxni->ni_received_bytes,
			                rx_type, nob);
		}
	}
	msg->msg_rx_committed = 0;
}

/* Inlined in its two calls of lnet_complete_msg_locked() (once or twice
 * per message). */
static inline __attribute__((always_inline)) void
lnet_msg_decommit_locked(ulnet_t *ln, struct lnet_msg *msg, int status, struct lnet_sendq *q,
			 uint64_t *nowp)
{
	bool counted = msg->msg_tx_committed || msg->msg_rx_committed;

	if (msg->msg_tx_committed)
		lnet_msg_decommit_tx_locked(ln, msg, status, q, nowp);
	if (msg->msg_rx_committed)
		lnet_msg_decommit_rx_locked(ln, msg, status);
	if (counted)
		ln->ln_ctr.msgs_alloc--;
	/* references taken by send and receive paths */
	if (msg->msg_txni) {
		lnet_ni_decref_locked(msg->msg_txni);
		msg->msg_txni = NULL;
	}
	if (msg->msg_txpeer) {
		lnet_peer_ni_decref_locked(ln, msg->msg_txpeer);
		msg->msg_txpeer = NULL;
	}
	if (msg->msg_rxni) {
		lnet_ni_decref_locked(msg->msg_rxni);
		msg->msg_rxni = NULL;
	}
	if (msg->msg_rxpeer) {
		lnet_peer_ni_decref_locked(ln, msg->msg_rxpeer);
		msg->msg_rxpeer = NULL;
	}
}

/* --- completion -------------------------------------------------------------------- */

static void lnet_msg_detach_md_locked(ulnet_t *ln, struct lnet_msg *msg, int status,
				      uint64_t *nowp)
{
	struct lnet_libmd *md = msg->msg_md;
	ulnet_handler_t handler = NULL;
	bool unlink;

	/* one handler at a time per MD, as the kernel */
	while ((md->md_flags & LNET_MD_FLAG_HANDLING) &&
	       !pthread_equal(md->md_handling_thread, pthread_self())) {
		ln->ln_handling_waiters++;
		lnet_cond_wait_locked(ln, NULL);
		ln->ln_handling_waiters--;
	}

	md->md_refcount--;
	LASSERT(md->md_refcount >= 0);
	unlink = lnet_md_unlinkable(md);
	if (md->md_handler) {
		/* an MD unlinked (or timed out) under a busy message: that
		 * message did not do its job */
		if ((md->md_flags & LNET_MD_FLAG_ABORTED) && status == 0)
			msg->msg_ev.status = -ETIMEDOUT;
		else
			msg->msg_ev.status = status;
		msg->msg_ev.unlinked = unlink;
		handler = md->md_handler;
		if (!unlink) {
			md->md_flags |= LNET_MD_FLAG_HANDLING;
			md->md_handling_thread = pthread_self();
		}
	}

	/* round trip of a tracked request, before the tracker goes */
	if (md->md_rspt_active && status == 0) {
		uint64_t now = lnet_fin_now(ln, nowp);   /* for the NI and the peer NI */

		if (msg->msg_rxni && msg->msg_ev.type == ULNET_EVENT_REPLY)
			lnet_latency_add(&msg->msg_rxni->ni_get_rtt, now - md->md_rspt_start);
		else if (msg->msg_rxni && msg->msg_ev.type == ULNET_EVENT_ACK)
			lnet_latency_add(&msg->msg_rxni->ni_put_ack, now - md->md_rspt_start);
		/* per peer NI (counters.c) */
		lnet_peer_ni_latency_at_locked(msg->msg_rxpeer, msg->msg_ev.type, md->md_rspt_start,
					       now);
	}
	if (md->md_rspt_active) {
		bool response = msg->msg_ev.type == ULNET_EVENT_ACK ||
				msg->msg_ev.type == ULNET_EVENT_REPLY;

		/* the response came: one less to wait for. A request that
		 * failed to send keeps its MD waiting, as the kernel's: the
		 * tracker unlinks it at the deadline unless the caller does
		 * first (a response may still come, e.g. to a PUT whose
		 * write failed after the peer had taken it whole). */
		if (response)
			md->md_rspt_pending--;
		if (unlink || md->md_rspt_pending <= 0 ||
		    (md->md_refcount == 0 && md->md_threshold == ULNET_MD_THRESH_INF))
			lnet_rspt_detach_locked(ln, md);
	}
	msg->msg_md = NULL;
	if (unlink)
		lnet_md_unlink_locked(ln, md);

	if (handler) {
		lnet_unlock(ln);
		handler(&msg->msg_ev);
		lnet_lock(ln);
		if (!unlink) {
			md->md_flags &= ~LNET_MD_FLAG_HANDLING;
			/* waiters count themselves under the lock we hold */
			if (ln->ln_handling_waiters)
				lnet_cond_broadcast(ln);
			/* unlinked by its own handler: free it now */
			if ((md->md_flags & LNET_MD_FLAG_ZOMBIE) && md->md_refcount == 0)
				lnet_md_free_locked(ln, md);
		}
	}
}

/* --- health and resend ---------------------------------------------------------- */

/* The health class of a failed send whose LND or fault rule did not class
 * it (msg_hstatus 0), from its errno alone, as socklnd's
 * ksocknal_txlist_done() classes the sends still queued on a connection
 * that closed: the peer could not be reached or dropped the connection ->
 * REMOTE_DROPPED; a timeout -> NETWORK_TIMEOUT; anything else ->
 * LOCAL_ERROR. */
static enum ulnet_hstatus lnet_errno2hstatus(int status)
{
	switch (status) {
	case -ETIMEDOUT:
		return ULNET_HSTATUS_NETWORK_TIMEOUT;
	case -ENETDOWN:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ECONNREFUSED:
	case -ECONNRESET:
		return ULNET_HSTATUS_REMOTE_DROPPED;
	default:
		return ULNET_HSTATUS_LOCAL_ERROR;
	}
}

static const char *const lnet_hstatus_names[ULNET_HSTATUS_END] = {
	[ULNET_HSTATUS_OK] = "OK",
	[ULNET_HSTATUS_LOCAL_INTERRUPT] = "LOCAL_INTERRUPT",
	[ULNET_HSTATUS_LOCAL_DROPPED] = "LOCAL_DROPPED",
	[ULNET_HSTATUS_LOCAL_ABORTED] = "LOCAL_ABORTED",
	[ULNET_HSTATUS_LOCAL_NO_ROUTE] = "LOCAL_NO_ROUTE",
	[ULNET_HSTATUS_LOCAL_ERROR] = "LOCAL_ERROR",
	[ULNET_HSTATUS_LOCAL_TIMEOUT] = "LOCAL_TIMEOUT",
	[ULNET_HSTATUS_REMOTE_ERROR] = "REMOTE_ERROR",
	[ULNET_HSTATUS_REMOTE_DROPPED] = "REMOTE_DROPPED",
	[ULNET_HSTATUS_REMOTE_TIMEOUT] = "REMOTE_TIMEOUT",
	[ULNET_HSTATUS_NETWORK_TIMEOUT] = "NETWORK_TIMEOUT",
};

/* Count a failure in the global, NI and peer NI stats, by class (the
 * kernel's lnet_incr_hstats()): local classes are the NI's, remote ones
 * the peer NI's. */
static void lnet_count_hstatus_locked(ulnet_t *ln, struct lnet_ni *ni, struct lnet_peer_ni *lpni,
				      enum ulnet_hstatus hs)
{
	struct ulnet_counters *c = &ln->ln_ctr;
	struct ulnet_health_stats *nh = ni ? &ni->ni_health : NULL;
	struct ulnet_health_stats *ph = lpni ? &lpni->lpni_health : NULL;

	switch (hs) {
	case ULNET_HSTATUS_LOCAL_INTERRUPT:
		c->local_interrupt_count++;
		if (nh)
			nh->interrupts++;
		break;
	case ULNET_HSTATUS_LOCAL_DROPPED:
		c->local_dropped_count++;
		if (nh)
			nh->dropped++;
		break;
	case ULNET_HSTATUS_LOCAL_ABORTED:
		c->local_aborted_count++;
		if (nh)
			nh->aborted++;
		break;
	case ULNET_HSTATUS_LOCAL_NO_ROUTE:
		c->local_no_route_count++;
		if (nh)
			nh->no_route++;
		break;
	case ULNET_HSTATUS_LOCAL_TIMEOUT:
		c->local_timeout_count++;
		if (nh)
			nh->timeouts++;
		break;
	case ULNET_HSTATUS_LOCAL_ERROR:
		c->local_error_count++;
		if (nh)
			nh->error++;
		break;
	case ULNET_HSTATUS_REMOTE_DROPPED:
		c->remote_dropped_count++;
		if (ph)
			ph->dropped++;
		break;
	case ULNET_HSTATUS_REMOTE_ERROR:
		c->remote_error_count++;
		if (ph)
			ph->error++;
		break;
	case ULNET_HSTATUS_REMOTE_TIMEOUT:
		c->remote_timeout_count++;
		if (ph)
			ph->timeouts++;
		break;
	case ULNET_HSTATUS_NETWORK_TIMEOUT:
		c->network_timeout_count++;
		if (ph)
			ph->network_timeout++;
		break;
	default:
		break;
	}
}

static const char *lnet_msgtype_name(uint32_t type)
{
	static const char *const names[] = { "ACK", "PUT", "GET", "REPLY", "HELLO" };

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "<UNKNOWN>";
}

/* When a failed message may no longer be resent: its deadline (a PUT's,
 * set at commit, or one that waited for credits), else its MD's response
 * deadline, else transaction_timeout from this first failure. */
static uint64_t lnet_msg_resend_deadline(ulnet_t *ln, const struct lnet_msg *msg, uint64_t now)
{
	if (msg->msg_deadline && msg->msg_deadline != UINT64_MAX)
		return msg->msg_deadline;
	if (msg->msg_tracked && msg->msg_md && msg->msg_md->md_rspt_active)
		return msg->msg_md->md_rspt_deadline;
	return now + (uint64_t)ln->ln_g.transaction_timeout * LNET_NSEC_PER_SEC;
}

#define LNET_MSG_RESENT 1

/*
 * An LND (or a fault rule) failed a send: the kernel's lnet_health_check().
 * Count it by class, lower the health of what failed, and resend the
 * message where the kernel would:
 *  - LOCAL_INTERRUPT, _DROPPED, _ABORTED, _NO_ROUTE, _TIMEOUT: our NI
 *    failed; resent when the node has another NI to try (two or more
 *    besides 0@lo);
 *  - LOCAL_ERROR: our NI failed; not resent;
 *  - REMOTE_DROPPED: the peer NI failed; resent when the peer has another
 *    NI (or the message is routed: another gateway may take it);
 *  - REMOTE_ERROR, REMOTE_TIMEOUT: the peer NI failed; not resent;
 *  - NETWORK_TIMEOUT: both failed; not resent.
 * A peer NI's health is left alone when the peer has one NI (nothing to
 * choose), unless it is a gateway or we route; and when it is one of our
 * own NIDs (our NI's health says it). Only PUT and GET are resent (a
 * response goes to the NID given), fewer than retry_count times, before
 * their deadline, their MD not unlinked. Returns LNET_MSG_RESENT (the
 * message is back in the send path: not completed now), or the status to
 * complete it with.
 */
static int lnet_health_check_locked(ulnet_t *ln, struct lnet_msg *msg, int status,
				    struct lnet_sendq *q, uint64_t *nowp)
{
	struct lnet_peer_ni *lpni = msg->msg_txpeer;
	struct lnet_peer *lp = lpni->lpni_peer;
	struct lnet_ni *ni = msg->msg_txni != ln->ln_loni ? msg->msg_txni : NULL;
	enum ulnet_hstatus hs = msg->msg_hstatus ? (enum ulnet_hstatus)msg->msg_hstatus
						 : lnet_errno2hstatus(status);
	bool self = lnet_nid_is_local_locked(ln, &lpni->lpni_nid);
	bool peer_multi = lp && lp->lp_nnis > 1 && !self;
	bool remote_health = !self &&
			     (peer_multi || msg->msg_routed || ln->ln_routing == ULNET_ROUTING_ENABLED ||
			      (lp && lnet_peer_is_gateway_locked(ln, lp)));
	bool local_fail = false, remote_fail = false, resend = false;
	char nid[ULNET_NIDSTR_SIZE], tnid[ULNET_NIDSTR_SIZE];
	uint64_t now, deadline;
	unsigned max_retries;
	int rc;

	if (ln->ln_state != LNET_STATE_RUNNING)
		return status;
	now = lnet_fin_now(ln, nowp);
	deadline = msg->msg_retries ? msg->msg_resend_deadline
				    : lnet_msg_resend_deadline(ln, msg, now);
	if (now > deadline)
		return status;   /* too late for anything (as the kernel) */

	lnet_count_hstatus_locked(ln, ni, lpni, hs);
	switch (hs) {
	case ULNET_HSTATUS_LOCAL_INTERRUPT:
	case ULNET_HSTATUS_LOCAL_DROPPED:
	case ULNET_HSTATUS_LOCAL_ABORTED:
	case ULNET_HSTATUS_LOCAL_NO_ROUTE:
	case ULNET_HSTATUS_LOCAL_TIMEOUT:
		local_fail = true;
		resend = ln->ln_nnis > 2;
		break;
	case ULNET_HSTATUS_REMOTE_DROPPED:
		remote_fail = true;
		resend = peer_multi || msg->msg_routed;
		break;
	case ULNET_HSTATUS_REMOTE_ERROR:
	case ULNET_HSTATUS_REMOTE_TIMEOUT:
		remote_fail = true;
		break;
	case ULNET_HSTATUS_NETWORK_TIMEOUT:
		local_fail = remote_fail = true;
		break;
	default:   /* LOCAL_ERROR */
		local_fail = true;
		break;
	}
	if (local_fail && ni)
		lnet_ni_health_fail_locked(ln, ni, lnet_msgtype_name(msg->msg_type),
					   lnet_hstatus_names[hs]);
	if (remote_fail && remote_health) {
		lnet_peer_ni_health_dec_locked(ln, lpni);
		lnet_recovery_arm_locked(ln);
		lnet_log(ln, ULNET_LOG_INFO, "peer NI %s: %s failed (%s, %s), health %d",
			 lnet_nidstr(&lpni->lpni_nid, nid), lnet_msgtype_name(msg->msg_type),
			 lnet_hstatus_names[hs], ulnet_strerror(status),
			 lpni->lpni_health.health_value);
	}
	/* a GET whose REPLY the LND elided is not resent: that REPLY message
	 * ends with this status, and a second one would find the MD spent */
	if (!resend || msg->msg_recovery || msg->msg_rdma_get ||
	    (msg->msg_type != ULNET_MSG_PUT && msg->msg_type != ULNET_MSG_GET) ||
	    (msg->msg_md && (msg->msg_md->md_flags & LNET_MD_FLAG_ABORTED)))
		return status;
	max_retries = ln->ln_g.retry_count > 255 ? 255 : (unsigned)ln->ln_g.retry_count;
	if (msg->msg_retries >= max_retries) {
		if (max_retries)
			ln->ln_ctr.failed_resends++;
		lnet_log(ln, ULNET_LOG_WARN, "%s to %s failed after %u resends: %s",
			 lnet_msgtype_name(msg->msg_type), lnet_nidstr(&lpni->lpni_nid, nid),
			 msg->msg_retries, ulnet_strerror(status));
		return status;
	}

	/* back to where lnet_send_locked() takes it: no credits, no NI,
	 * not committed; the MD, the event and the header's message part
	 * stay; the peer is selected again (the failed NI is less healthy) */
	msg->msg_retries++;
	msg->msg_resend_deadline = deadline;
	lnet_return_tx_credits_locked(ln, msg, q, now);
	msg->msg_tx_committed = 0;
	if (!msg->msg_rx_committed)
		ln->ln_ctr.msgs_alloc--;
	lnet_nidstr(&lpni->lpni_nid, nid);
	if (msg->msg_txni) {
		lnet_ni_decref_locked(msg->msg_txni);
		msg->msg_txni = NULL;
	}
	msg->msg_txpeer = NULL;
	lnet_peer_ni_decref_locked(ln, lpni);
	msg->msg_sending = 0;
	msg->msg_tx_delayed = 0;
	msg->msg_hstatus = 0;
	__atomic_store_n(&msg->msg_finalized, 0, __ATOMIC_RELEASE);
	ln->ln_ctr.resend_count++;
	lnet_log(ln, ULNET_LOG_INFO, "resending %s to %s (resend %u of %u): send to %s failed: %s (%s)",
		 lnet_msgtype_name(msg->msg_type), lnet_nidstr(&msg->msg_target.nid, tnid),
		 msg->msg_retries, max_retries, nid, lnet_hstatus_names[hs], ulnet_strerror(status));
	rc = lnet_send_locked(ln, &msg->msg_src_nid_param, msg, q);
	if (rc < 0) {
		lnet_log(ln, ULNET_LOG_WARN, "can't resend %s to %s: %s",
			 lnet_msgtype_name(msg->msg_type), tnid, ulnet_strerror(rc));
		return rc;
	}
	return LNET_MSG_RESENT;
}

/* Complete one message with the lock held (dropped around its handler);
 * sends it causes (an ACK, messages released by its credits) go to q. */
static void lnet_complete_msg_locked(ulnet_t *ln, struct lnet_msg *msg, int status,
				     struct lnet_sendq *q, uint64_t *nowp)
{
	if (__builtin_expect(msg->msg_forward, 0)) {
		/* a router's: received, then sent on (router.c), never an
		 * event, never resent */
		if (lnet_fwd_next_locked(ln, msg, &status, q))
			return;
		if (status) {
			ln->ln_ctr.drop_count++;
			ln->ln_ctr.drop_length += msg->msg_len;
		}
		lnet_fwd_release_locked(ln, msg, q);
		lnet_msg_decommit_locked(ln, msg, status, q, nowp);
		lnet_msg_free_locked(ln, msg);
		return;
	}
	/* a send that an LND failed (lnet_finalize() marked it: the core's
	 * own failures never reached a peer NI) */
	if (__builtin_expect(status != 0, 0)) {
		if (msg->msg_tx_committed && msg->msg_txpeer &&
		    __atomic_load_n(&msg->msg_finalized, __ATOMIC_ACQUIRE)) {
			status = lnet_health_check_locked(ln, msg, status, q, nowp);
			if (status == LNET_MSG_RESENT)
				return;
		}
	} else {
		/* a success: our NI works (the kernel raises a local NI's
		 * health on every message sent or received well) */
		struct lnet_ni *ni = msg->msg_tx_committed ? msg->msg_txni
			: msg->msg_rx_committed ? msg->msg_rxni : NULL;

		if (__builtin_expect(ni && ni != ln->ln_loni &&
				     ni->ni_health.health_value < ULNET_MAX_HEALTH, 0))
			lnet_ni_health_ok_locked(ln, ni);
		if (msg->msg_rxpeer && msg->msg_rx_committed &&
		    __builtin_expect(msg->msg_rxpeer->lpni_health.health_value < ULNET_MAX_HEALTH,
				     0)) {
			/* a message came from it: that NI works (the kernel
			 * raises a peer NI's health on receives only, before
			 * the MD's handler: a push saying it is down lowers it
			 * after), and its recovery pings start again from the
			 * shortest wait (at full health the count is already
			 * 0: the receive that got it there reset it) */
			msg->msg_rxpeer->lpni_health.ping_count = 0;
			lnet_peer_ni_health_inc_locked(ln, msg->msg_rxpeer);
		}
	}
	msg->msg_ev.status = status;
	if (msg->msg_md)
		lnet_msg_detach_md_locked(ln, msg, status, nowp);

	if (status == 0 && msg->msg_ack) {
		/* the PUT is in: answer with an ACK, reusing the message */
		lnet_wire_handle_t ack_wmd = msg->msg_hdr.msg.put.ack_wmd;
		/* the event (done with) keeps the PUT's source and target
		 * while the message is rebuilt: no copies */
		const ulnet_process_id_t *src = &msg->msg_ev.source;
		const ulnet_nid_t *self = &msg->msg_ev.target.nid;
		int rc;

		lnet_msg_decommit_locked(ln, msg, 0, q, nowp);
		msg->msg_ack = 0;
		lnet_prep_send(ln, msg, ULNET_MSG_ACK, src, 0, 0);
		msg->msg_hdr.msg.ack.dst_wmd = ack_wmd;
		msg->msg_hdr.msg.ack.match_bits = msg->msg_ev.match_bits;
		msg->msg_hdr.msg.ack.mlength = msg->msg_ev.mlength;
		rc = lnet_send_locked(ln, self, msg, q);
		if (rc < 0) {
			char nid[ULNET_NIDSTR_SIZE];

			lnet_log(ln, ULNET_LOG_ERROR, "can't send ACK to %s: %s",
				 lnet_nidstr(&src->nid, nid), ulnet_strerror(rc));
			msg->msg_fin_status = rc;
			ul_list_add_tail(&msg->msg_list, &q->sq_fail);
		}
		return;
	}

	lnet_msg_decommit_locked(ln, msg, status, q, nowp);
	lnet_msg_free_locked(ln, msg);
}

/* This thread's finalize queue, in one thread-local block: a function
 * computes its address once instead of at every access. */
struct lnet_fin_queue {
	struct lnet_msg *head, *tail;
	bool running;   /* lnet_fin_run() is on this thread's stack */
};
static _Thread_local struct lnet_fin_queue lnet_fin_q;

static void lnet_fin_enqueue(struct lnet_fin_queue *fq, struct lnet_msg *msg, int status)
{
	msg->msg_fin_status = status;
	msg->msg_fin_next = NULL;
	if (fq->tail)
		fq->tail->msg_fin_next = msg;
	else
		fq->head = msg;
	fq->tail = msg;
}

/* Complete what this thread's queue holds: consecutive messages of one
 * instance under one lock; what they send goes out after the run, and
 * what those sends finalize joins the queue. */
static void lnet_fin_run(struct lnet_fin_queue *fq)
{
	struct lnet_msg *msg;

	fq->running = true;
	while ((msg = fq->head)) {
		ulnet_t *ln = msg->msg_ln;
		struct lnet_msg *last_queued;
		struct lnet_sendq q;
		uint64_t now = 0;     /* the clock, read at most once for ... */
		bool queued = true;   /* ... the messages queued when we locked */

		lnet_sendq_init(&q);
		lnet_lock(ln);
		last_queued = fq->tail;
		while ((msg = fq->head) && msg->msg_ln == ln) {
			uint64_t *nowp = queued ? &now : NULL;

			fq->head = msg->msg_fin_next;
			if (!fq->head)
				fq->tail = NULL;
			if (msg == last_queued)
				queued = false;   /* what follows was finalized later */
			lnet_complete_msg_locked(ln, msg, msg->msg_fin_status, &q, nowp);
		}
		lnet_unlock(ln);
		lnet_sendq_flush(ln, &q);
	}
	fq->running = false;
}

static inline __attribute__((always_inline)) void lnet_finalize_one(struct lnet_msg *msg,
								    int status)
{
	struct lnet_fin_queue *fq = &lnet_fin_q;

	lnet_fin_enqueue(fq, msg, status);
	if (fq->running)
		return; /* an outer frame of this thread completes it */
	lnet_fin_run(fq);
}

void lnet_finalize_core(struct lnet_msg *msg, int status)
{
	lnet_finalize_one(msg, status);
}

void lnet_finalize_many(struct lnet_msg *const *msgs, const int *status, unsigned n)
{
	struct lnet_fin_queue *fq = &lnet_fin_q;

	for (unsigned i = 0; i < n; i++) {
		if (!msgs[i])
			continue;
		LASSERT(msgs[i]->msg_state == LNET_MSG_BUSY);
		LASSERT(__atomic_exchange_n(&msgs[i]->msg_finalized, 1, __ATOMIC_ACQ_REL) == 0);
		lnet_fin_enqueue(fq, msgs[i], status[i]);
	}
	if (!fq->running)
		lnet_fin_run(fq);
}

void lnet_finalize(struct lnet_msg *msg, int status)
{
	if (!msg)
		return;
	LASSERT(msg->msg_state == LNET_MSG_BUSY);
	/* exactly once per hand-over to an LND */
	LASSERT(__atomic_exchange_n(&msg->msg_finalized, 1, __ATOMIC_ACQ_REL) == 0);
	lnet_finalize_one(msg, status);
}

