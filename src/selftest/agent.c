/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the LNet selftest (SRPC) agent (ulnet/selftest.h): start, stop
 * and counters, and the event handler of the agent's server side, which
 * takes each request to its service.
 *
 * An RPC: the PUT event hands the slot its request; the slot is answered in
 * the handler (framework, ping) or after its bulk transfer (brw); the reply
 * is PUT from the slot's reply buffer (no ACK) to portal 52, match bits the
 * rpyid; its SEND event reposts the request buffer.
 *
 * The ping service is here: a ping is answered at once, from the handler.
 * The agent's other parts and its locking rules: agent_int.h.
 *
 * Behaviour follows lnet/selftest/{rpc,framework,brw_test,ping_test}.c of
 * Lustre 2.17 (read for facts; docs/selftest.md lists the differences).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "selftest/agent_int.h"
#include "util/util_bytes.h"

#define SESSION_TIMEOUT_DEFAULT 100     /* s, lnet_selftest session_timeout */
#define STOP_WAIT_NS (5 * LNET_NSEC_PER_SEC)
#define RPC_TIMEOUT_DEFAULT 64          /* s, lnet_selftest rpc_timeout */

/* One agent per instance. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ulnet_selftest *registry;

/* --- the ping service ----------------------------------------------------------- */

static int ping_handle(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_ping_reqst *rq = &s->msg.body.ping_reqst;
	struct srpc_ping_reply *rp = &s->reply.body.ping_reply;

	if (rq->magic != LST_PING_TEST_MAGIC)
		return -EBADMSG;
	rp->status = 0;
	rp->seq = rq->seq;
	rp->magic = LST_PING_TEST_MAGIC;
	if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		s->reply.ses_feats = LST_FEATS_MASK;
		rp->status = EPROTO;
		return 0;
	}
	s->reply.ses_feats = s->msg.ses_feats;
	pthread_mutex_lock(&st->lock);
	st->stats.ping_reqs++;
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* --- a request arrives --------------------------------------------------------- */

static uint64_t request_rpyid(const struct srpc_msg *m)
{
	/* every request body starts with rpyid */
	switch (m->type) {
	case SRPC_MSG_MKSN_REQST: return m->body.mksn_reqst.rpyid;
	case SRPC_MSG_RMSN_REQST: return m->body.rmsn_reqst.rpyid;
	case SRPC_MSG_BATCH_REQST: return m->body.bat_reqst.rpyid;
	case SRPC_MSG_STAT_REQST: return m->body.stat_reqst.rpyid;
	case SRPC_MSG_TEST_REQST: return m->body.tes_reqst.rpyid;
	case SRPC_MSG_DEBUG_REQST: return m->body.dbg_reqst.rpyid;
	case SRPC_MSG_BRW_REQST: return m->body.brw_reqst.rpyid;
	case SRPC_MSG_PING_REQST: return m->body.ping_reqst.rpyid;
	default: return 0;
	}
}

static void request_arrived(struct slot *s, const struct ulnet_event *ev)
{
	struct ulnet_selftest *st = s->st;
	bool on, unpost_tests = false, fetch = false;
	int post_test = -1;
	char why[96];
	int rc;

	s->peer = ev->source;
	s->self = ev->target.nid;
	pthread_mutex_lock(&st->lock);
	st->stats.rpcs_rcvd++;
	on = srpc_service_on(st, s->service);
	if (on && !srpc_is_framework(s->service) &&
	    sfw_session_check_expiry_locked(st, lnet_now(st->ln)))
		unpost_tests = true;
	pthread_mutex_unlock(&st->lock);
	if (unpost_tests) {
		srpc_unpost_service(st, SRPC_SERVICE_BRW);
		srpc_unpost_service(st, SRPC_SERVICE_PING);
		on = srpc_is_framework(s->service);
	}
	if (!on) {
		srpc_drop_request(s, "service is shut down");
		return;
	}
	if (ev->status) {
		snprintf(why, sizeof(why), "receive failed: %s", ulnet_strerror(ev->status));
		pthread_mutex_lock(&st->lock);
		st->stats.errors++;
		pthread_mutex_unlock(&st->lock);
		srpc_drop_request(s, why);
		return;
	}
	if (ev->mlength != SRPC_MSG_SIZE) {
		snprintf(why, sizeof(why), "%u bytes, not %d", ev->mlength, SRPC_MSG_SIZE);
		srpc_drop_request(s, why);
		return;
	}
	rc = srpc_msg_decode(s->req, ev->mlength, &s->msg);
	if (rc == -EPROTO) {
		snprintf(why, sizeof(why), "bad magic %#x", ul_get_le32(s->req));
		srpc_drop_request(s, why);
		return;
	}
	if (rc || s->msg.type != (uint32_t)srpc_service2request(s->service)) {
		snprintf(why, sizeof(why), "message type %u for this service", s->msg.type);
		srpc_drop_request(s, why);
		return;
	}
	s->rpyid = request_rpyid(&s->msg);
	memset(&s->reply, 0, sizeof(s->reply));
	if (s->msg.version != SRPC_MSG_VERSION) {
		char pb[ULNET_NIDSTR_SIZE];

		srpc_peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: version %u (%u expected) from %s",
			 s->msg.version, SRPC_MSG_VERSION, pb);
		/* status is the first word of every reply */
		s->reply.body.brw_reply.status = EPROTO;
		srpc_send_reply(s);
		return;
	}
	if (srpc_is_framework(s->service)) {
		rc = sfw_framework_handle(s, &post_test, &unpost_tests, &fetch);
		if (unpost_tests) {
			srpc_unpost_service(st, SRPC_SERVICE_BRW);
			srpc_unpost_service(st, SRPC_SERVICE_PING);
		}
		if (post_test >= 0)
			srpc_post_service(st, post_test);
		sfw_client_sweep(st);              /* a forced STOP, an ended session */
		if (!rc && fetch) {
			rc = sfw_dest_fetch(s);
			if (rc == 1)
				return;            /* the GET's events go on */
		}
	} else if (s->service == SRPC_SERVICE_PING) {
		rc = ping_handle(s);
	} else {
		rc = brw_handle(s);
		if (rc == 1)
			return;            /* the bulk's events go on */
	}
	if (rc) {
		snprintf(why, sizeof(why), "request refused: %s", ulnet_strerror(rc));
		srpc_drop_request(s, why);
		return;
	}
	srpc_send_reply(s);
}

static void handler_body(const struct ulnet_event *ev)
{
	const struct tag *t = ev->md_user_ptr;
	struct slot *s = t->slot;
	struct ulnet_selftest *st = s->st;
	bool last = ev->unlinked;

	if (ev->status && ev->type != ULNET_EVENT_UNLINK) {
		pthread_mutex_lock(&st->lock);
		st->stats.errors++;
		pthread_mutex_unlock(&st->lock);
	}
	switch (t->kind) {
	case TAG_REQ:
		pthread_mutex_lock(&st->lock);
		st->refs--;
		s->me = ULNET_HANDLE_NONE;
		if (ev->type == ULNET_EVENT_PUT) {
			srpc_slot_set_state_locked(s, SLOT_BUSY);
		} else {
			srpc_slot_set_state_locked(s, SLOT_IDLE);
			srpc_chunks_reap_locked(st);    /* s may be gone now */
		}
		pthread_mutex_unlock(&st->lock);
		if (ev->type == ULNET_EVENT_PUT)
			request_arrived(s, ev);
		return;
	case TAG_BULK:
		if (ev->type == ULNET_EVENT_UNLINK && !s->bulk_status)
			s->bulk_status = -EINTR;
		else if (ev->status && !s->bulk_status)
			s->bulk_status = ev->status;
		if (ev->type == ULNET_EVENT_REPLY)
			s->bulk_mlength = ev->mlength;
		if (!last) {
			/* a GET that failed to go: no REPLY will come, end the
			 * RPC now (its unlink brings the last event) */
			if (ev->status && ev->type != ULNET_EVENT_UNLINK)
				(void)ulnet_md_unlink(st->ln, ev->md_handle);
			return;
		}
		if (s->service == SRPC_SERVICE_TEST) {
			pthread_mutex_lock(&st->lock);
			st->refs--;
			if (!s->bulk_status)
				st->stats.bulk_get += s->bulk_mlength;
			pthread_mutex_unlock(&st->lock);
			sfw_testadd_bulk_done(s);
			return;
		}
		pthread_mutex_lock(&st->lock);
		st->refs--;
		if (!s->bulk_status) {
			if (s->msg.body.brw_reqst.rw == LST_BRW_WRITE)
				st->stats.bulk_get += ev->type == ULNET_EVENT_REPLY ? ev->mlength : s->msg.body.brw_reqst.len;
			else
				st->stats.bulk_put += s->msg.body.brw_reqst.len;
		}
		pthread_mutex_unlock(&st->lock);
		brw_bulk_done(s);
		return;
	case TAG_REPLY:
		if (!last)
			return;
		pthread_mutex_lock(&st->lock);
		st->refs--;
		if (ev->status || ev->type == ULNET_EVENT_UNLINK)
			st->stats.rpcs_dropped++;
		pthread_mutex_unlock(&st->lock);
		srpc_slot_done(s);
		return;
	default:
		return;
	}
}

/* Every MD's handler: the agent cannot go while one runs (the event's
 * MD still holds a ref when we count ourselves in). */
void agent_handler(const struct ulnet_event *ev)
{
	struct ulnet_selftest *st = ((const struct tag *)ev->md_user_ptr)->slot->st;

	atomic_fetch_add(&st->in_handler, 1);
	handler_body(ev);
	atomic_fetch_sub(&st->in_handler, 1);   /* our last touch of st */
}

/* --- API ------------------------------------------------------------------------ */

static void barrier_cb(struct ul_work *w)
{
	struct ulnet_selftest *st = (struct ulnet_selftest *)((char *)w - offsetof(struct ulnet_selftest, barrier));

	pthread_mutex_lock(&st->lock);
	st->refs--;
	pthread_mutex_unlock(&st->lock);
}

int ulnet_selftest_start(ulnet_t *ln, const struct ulnet_selftest_conf *conf, ulnet_selftest_t **out)
{
	struct ulnet_selftest *st, *it;
	int rc;

	if (!ln || !out || (conf && (conf->session_timeout < -1 || conf->rpc_timeout < -1)))
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->ln = ln;
	pthread_mutex_init(&st->lock, NULL);
	st->timeout_s = !conf || conf->session_timeout == 0 ? SESSION_TIMEOUT_DEFAULT
		       : conf->session_timeout < 0 ? 0 : conf->session_timeout;
	st->rpc_timeout_s = !conf || conf->rpc_timeout == 0 ? RPC_TIMEOUT_DEFAULT
			  : conf->rpc_timeout < 0 ? 0 : conf->rpc_timeout;
	st->matchbits = (uint64_t)time(NULL) << 48;   /* as srpc_startup() */
	ul_timer_init(&st->timer, sfw_timer_cb);
	st->barrier.fn = barrier_cb;
	st->bulk_limit = BULK_MIN;
	if (!srpc_chunk_add_locked(st, -1, N_FW_SERVICES * FW_NBUF)) {
		pthread_mutex_destroy(&st->lock);
		free(st);
		return -ENOMEM;
	}

	pthread_mutex_lock(&registry_lock);
	for (it = registry; it; it = it->next)
		if (it->ln == ln)
			break;
	if (!it) {
		st->next = registry;
		registry = st;
	}
	pthread_mutex_unlock(&registry_lock);
	if (it) {
		srpc_chunk_free(st->chunks);
		pthread_mutex_destroy(&st->lock);
		free(st);
		return -EEXIST;
	}

	rc = ulnet_portal_set_lazy(ln, SRPC_FRAMEWORK_REQUEST_PORTAL, true);
	if (!rc)
		rc = ulnet_portal_set_lazy(ln, SRPC_REQUEST_PORTAL, true);
	if (rc) {
		ulnet_selftest_stop(st);
		return rc;
	}
	for (int i = 0; i < N_FW_SERVICES; i++)
		srpc_post_service(st, fw_services[i]);
	/* every framework buffer must be posted */
	pthread_mutex_lock(&st->lock);
	for (struct chunk *c = st->chunks; c; c = c->next)
		for (int i = 0; i < c->nslots; i++)
			if (c->slots[i].state == SLOT_IDLE)
				rc = -ENOMEM;
	pthread_mutex_unlock(&st->lock);
	if (rc) {
		ulnet_selftest_stop(st);
		return rc;
	}
	*out = st;
	return 0;
}

void ulnet_selftest_stop(ulnet_selftest_t *st)
{
	struct ulnet_selftest **pp;
	uint64_t deadline;
	int refs;

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->stopping = true;
	for (struct ctest *t = st->ctests; t; t = t->next)
		if (t->nactive > 0)
			t->stopping = t->abort_req = true;
	if (st->timer_armed) {
		st->timer_armed = false;
		st->refs--;
		ul_timer_stop(st->ln->ln_loop, &st->timer);
	}
	/* a timer callback already under way ends before this runs */
	st->refs++;
	ul_loop_post(st->ln->ln_loop, &st->barrier);
	pthread_mutex_unlock(&st->lock);
	sfw_client_sweep(st);
	srpc_unpost_service(st, -1);
	brw_bulk_kick(st);              /* drops the brw requests waiting for a buffer */
	/* Requests parked on the lazy portals are dropped now, not after the
	 * wait: one may be this agent's own (a client test aimed at its own
	 * node's 0@lo stays inside it), whose request MD stays busy, and so holds a
	 * reference, until the parked PUT is received or dropped. */
	(void)ulnet_portal_set_lazy(st->ln, SRPC_FRAMEWORK_REQUEST_PORTAL, false);
	(void)ulnet_portal_set_lazy(st->ln, SRPC_REQUEST_PORTAL, false);
	deadline = lnet_now(st->ln) + STOP_WAIT_NS;
	for (;;) {
		pthread_mutex_lock(&st->lock);
		refs = st->refs;
		pthread_mutex_unlock(&st->lock);
		/* refs first: a handler counts itself in before its ref goes */
		if (refs == 0 && atomic_load(&st->in_handler) == 0)
			break;
		srpc_slots_abort_inflight(st);
		if (lnet_now(st->ln) >= deadline) {
			lnet_log(st->ln, ULNET_LOG_ERROR,
				 "selftest: %d operations still pending at stop; leaking the agent", refs);
			return;
		}
		if (ulnet_progress(st->ln, 10) == -EBUSY) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	while (st->chunks) {
		struct chunk *c = st->chunks;

		st->chunks = c->next;
		srpc_chunk_free(c);
	}
	while (st->bulk_free) {
		struct bulkbuf *b = st->bulk_free;

		st->bulk_free = b->next;
		free(b);
	}
	while (st->ctests) {
		struct ctest *t = st->ctests;

		st->ctests = t->next;
		sfw_ctest_free(t);
	}
	pthread_mutex_destroy(&st->lock);
	free(st);
}

int ulnet_selftest_stats_get(ulnet_selftest_t *st, struct ulnet_selftest_stats *out)
{
	if (!st || !out)
		return -EINVAL;
	pthread_mutex_lock(&st->lock);
	*out = st->stats;
	out->session_active = st->sn_active;
	pthread_mutex_unlock(&st->lock);
	return 0;
}
