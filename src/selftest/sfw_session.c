/* SPDX-License-Identifier: MIT */
/*
 * sfw_session.c - the selftest framework as the console sees it: the
 * session (one at a time), its batches and tests, and the framework
 * services answering the console (make and remove session, debug, stat,
 * test add, batch). A client test add fetches its destination list from
 * the console before it is answered; the test then runs in sfw_client.c.
 */
#include <errno.h>
#include <string.h>

#include "selftest/agent_int.h"

/* request buffers a server test adds to its service (sfw_test_buffers()):
 * max(SFW_TEST_WI_MIN, min(SFW_TEST_WI_MAX, loop) + SFW_TEST_WI_EXTRA), loop
 * signed (-1: 256) */
#define TEST_WI_MIN 256
#define TEST_WI_MAX 2048
#define TEST_WI_EXTRA 64
#define TEST_NBUF_MAX 8192              /* per test service, all tests of a session */

/* --- session (lock held) --------------------------------------------------- */

static struct srpc_sid old_sid(const struct ulnet_selftest *st)
{
	if (st->sn_active)
		return st->sn_id;
	return (struct srpc_sid){ .nid = SRPC_NID4_ANY, .stamp = -1 };
}

static bool sid_equal(struct srpc_sid a, struct srpc_sid b)
{
	return a.nid == b.nid && a.stamp == b.stamp;
}

/* End the session; returns whether test services must be taken back. */
static bool session_end_locked(struct ulnet_selftest *st)
{
	bool had_tests = st->test_enabled[0] || st->test_enabled[1];

	st->sn_active = false;
	st->nbatches = 0;
	/* client tests: stopped with force and freed once idle, as the kernel
	 * keeps a zombie session until its tests end */
	for (int i = 0; i < st->ntests; i++) {
		struct ctest *t = st->tests[i].client;

		if (!t)
			continue;
		t->zombie = true;
		if (t->nactive > 0)
			t->stopping = t->abort_req = true;
		sfw_ctest_maybe_free_locked(st, t);
	}
	st->ntests = 0;
	st->test_enabled[0] = st->test_enabled[1] = false;
	srpc_tests_buffers_retire_locked(st);
	return had_tests;
}

/* The kernel's session timer: checked by the 1 s sweep and when a request
 * comes (the sweep may be up to a second late). */
bool sfw_session_check_expiry_locked(struct ulnet_selftest *st, uint64_t now)
{
	if (!st->sn_active || st->timeout_s == 0)
		return false;
	if (now - st->sn_last_ns < (uint64_t)st->timeout_s * LNET_NSEC_PER_SEC)
		return false;
	lnet_log(st->ln, ULNET_LOG_WARN, "selftest: session expired: sid %llx-%lld, name %.32s",
		 (unsigned long long)st->sn_id.nid, (long long)st->sn_id.stamp, st->sn_name);
	return session_end_locked(st);
}

static int find_batch(const struct ulnet_selftest *st, uint64_t bid)
{
	for (int i = 0; i < st->nbatches; i++)
		if (st->batches[i] == bid)
			return i;
	return -1;
}

/* --- framework services (lock held); return 0 (reply) or -errno (drop) ---- */

static int fw_make_session(struct ulnet_selftest *st, struct slot *s, uint64_t now)
{
	const struct srpc_mksn_reqst *rq = &s->msg.body.mksn_reqst;
	struct srpc_mksn_reply *rp = &s->reply.body.mksn_reply;

	if (rq->sid.nid == SRPC_NID4_ANY) {
		rp->sid = old_sid(st);
		rp->status = EINVAL;
		return 0;
	}
	if (st->sn_active) {
		rp->status = 0;
		rp->sid = old_sid(st);
		rp->timeout = (uint32_t)st->timeout_s;
		if (sid_equal(rq->sid, st->sn_id)) {
			st->sn_refcount++;
			return 0;
		}
		if (!rq->force) {
			rp->status = EBUSY;
			memcpy(rp->name, st->sn_name, sizeof(rp->name));
			return 0;
		}
	}
	if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		rp->status = EPROTO;
		return 0;
	}
	if (st->sn_active) {
		char pb[ULNET_NIDSTR_SIZE];

		srpc_peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: session %.32s replaced by force from %s",
			 st->sn_name, pb);
		(void)session_end_locked(st);   /* the caller takes test buffers back */
	}
	st->sn_active = true;
	st->sn_id = rq->sid;
	st->sn_features = s->msg.ses_feats;
	memcpy(st->sn_name, rq->name, sizeof(st->sn_name));
	st->sn_name[SRPC_NAME_SIZE - 1] = '\0';
	st->sn_refcount = 1;
	st->sn_started_ns = now;
	st->sn_brw_errors = st->sn_ping_errors = 0;
	rp->status = 0;
	rp->sid = st->sn_id;
	rp->timeout = (uint32_t)st->timeout_s;
	return 0;
}

static void fw_remove_session(struct ulnet_selftest *st, struct slot *s)
{
	const struct srpc_rmsn_reqst *rq = &s->msg.body.rmsn_reqst;
	struct srpc_rmsn_reply *rp = &s->reply.body.rmsn_reply;

	rp->sid = old_sid(st);
	if (rq->sid.nid == SRPC_NID4_ANY) {
		rp->status = EINVAL;
		return;
	}
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id)) {
		rp->status = st->sn_active ? EBUSY : ESRCH;
		return;
	}
	rp->status = 0;
	if (--st->sn_refcount > 0)
		return;
	(void)session_end_locked(st);
	rp->sid = old_sid(st);
}

static void fw_debug(struct ulnet_selftest *st, struct slot *s)
{
	struct srpc_debug_reply *rp = &s->reply.body.dbg_reply;

	rp->sid = old_sid(st);
	if (!st->sn_active) {
		rp->status = ESRCH;
		return;
	}
	rp->status = 0;
	rp->timeout = (uint32_t)st->timeout_s;
	memcpy(rp->name, st->sn_name, sizeof(rp->name));
}

static void fw_stat(struct ulnet_selftest *st, struct slot *s, uint64_t now)
{
	const struct srpc_stat_reqst *rq = &s->msg.body.stat_reqst;
	struct srpc_stat_reply *rp = &s->reply.body.stat_reply;
	struct ulnet_counters c;

	rp->sid = old_sid(st);
	if (rq->sid.nid == SRPC_NID4_ANY) {
		rp->status = EINVAL;
		return;
	}
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id)) {
		rp->status = ESRCH;
		return;
	}
	/* ulnet_counters_get() takes the instance lock, never ours: fine here */
	ulnet_counters_get(st->ln, &c);
	rp->lnet.msgs_alloc = (uint32_t)c.msgs_alloc;
	rp->lnet.msgs_max = (uint32_t)c.msgs_max;
	rp->lnet.errors = (uint32_t)c.errors;
	rp->lnet.send_count = (uint32_t)c.send_count;
	rp->lnet.recv_count = (uint32_t)c.recv_count;
	rp->lnet.route_count = (uint32_t)c.route_count;
	rp->lnet.drop_count = (uint32_t)c.drop_count;
	rp->lnet.send_length = c.send_length;
	rp->lnet.recv_length = c.recv_length;
	rp->lnet.route_length = c.route_length;
	rp->lnet.drop_length = c.drop_length;
	rp->rpc.errors = st->stats.errors;
	rp->rpc.rpcs_sent = st->stats.rpcs_sent;
	rp->rpc.rpcs_rcvd = st->stats.rpcs_rcvd;
	rp->rpc.rpcs_dropped = st->stats.rpcs_dropped;
	rp->rpc.rpcs_expired = st->stats.rpcs_expired;
	rp->rpc.bulk_get = st->stats.bulk_get;
	rp->rpc.bulk_put = st->stats.bulk_put;
	rp->fw.running_ms = (uint32_t)((now - st->sn_started_ns) / 1000000u);
	rp->fw.active_batches = 0;
	for (int i = 0; i < st->nbatches; i++)
		rp->fw.active_batches += sfw_batch_active_locked(st, st->batches[i]);
	rp->fw.zombie_sessions = 0;
	for (struct ctest *t = st->ctests; t; t = t->next)
		if (t->zombie) {
			rp->fw.zombie_sessions = 1;   /* the kernel counts sessions */
			break;
		}
	rp->fw.brw_errors = st->sn_brw_errors;
	rp->fw.ping_errors = st->sn_ping_errors;
	rp->status = 0;
}

/* Returns the test service to post now, or -1. *fetch: a client test whose
 * destination list must be fetched first (the reply waits for it). */
static int fw_add_test(struct ulnet_selftest *st, struct slot *s, int *drop, bool *fetch)
{
	const struct srpc_test_reqst *rq = &s->msg.body.tes_reqst;
	struct srpc_test_reply *rp = &s->reply.body.tes_reply;
	int b, ti, nbuf;

	rp->sid = old_sid(st);
	if (rq->ndest > ULNET_MAX_IOV * (SRPC_PAGE_SIZE / SRPC_ID_PACKED_SIZE)) {
		char pb[ULNET_NIDSTR_SIZE];

		srpc_peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: test add from console %s: %u destinations, at most %d",
			 pb, rq->ndest, ULNET_MAX_IOV * (SRPC_PAGE_SIZE / SRPC_ID_PACKED_SIZE));
	}
	if (rq->loop == 0 || rq->concur == 0 || rq->sid.nid == SRPC_NID4_ANY ||
	    rq->ndest > ULNET_MAX_IOV * (SRPC_PAGE_SIZE / SRPC_ID_PACKED_SIZE) ||
	    (rq->is_client && rq->ndest == 0) || rq->concur > LST_MAX_CONCUR ||
	    rq->service >= SRPC_SERVICE_MAX_ID || rq->service <= SRPC_FRAMEWORK_SERVICE_MAX_ID) {
		rp->status = EINVAL;
		return -1;
	}
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id) ||
	    (rq->service != SRPC_SERVICE_BRW && rq->service != SRPC_SERVICE_PING)) {
		rp->status = ENOENT;
		return -1;
	}
	b = find_batch(st, rq->bid);
	if (b < 0) {
		if (st->nbatches == MAX_BATCHES) {
			*drop = -ENOMEM;
			return -1;
		}
		b = st->nbatches++;
		st->batches[b] = rq->bid;
	}
	if (sfw_batch_active_locked(st, rq->bid)) {
		rp->status = EBUSY;
		return -1;
	}
	if (rq->is_client) {
		*fetch = true;              /* sfw_testadd_bulk_done() goes on */
		return -1;
	}
	if (st->ntests == MAX_TESTS) {
		rp->status = ENOMEM;
		return -1;
	}
	/* the request buffers this test adds to its service (sfw_load_test):
	 * the kernel's loop is an int, so -1 (run until stopped) gets the
	 * minimum */
	ti = srpc_test_index((int)rq->service);
	nbuf = ((int32_t)rq->loop < TEST_WI_MAX ? (int32_t)rq->loop : TEST_WI_MAX) + TEST_WI_EXTRA;
	if (nbuf < TEST_WI_MIN)
		nbuf = TEST_WI_MIN;
	if (nbuf > TEST_NBUF_MAX - st->test_nbuf[ti])
		nbuf = TEST_NBUF_MAX - st->test_nbuf[ti];
	if (nbuf > 0 && !srpc_chunk_add_locked(st, (int)rq->service, nbuf)) {
		rp->status = ENOMEM;
		return -1;
	}
	st->test_nbuf[ti] += nbuf;
	if (rq->service == SRPC_SERVICE_BRW) {
		st->bulk_concur += rq->concur;
		st->bulk_limit = st->bulk_concur < BULK_MIN ? BULK_MIN
			       : st->bulk_concur > BULK_MAX ? BULK_MAX : (int)st->bulk_concur;
	}
	st->tests[st->ntests++] = (struct test_rec){
		.bid = rq->bid, .service = rq->service, .loop = rq->loop, .concur = rq->concur, .client = NULL,
	};
	rp->status = 0;
	st->test_enabled[ti] = true;
	return (int)rq->service;
}

static int fw_batch(struct ulnet_selftest *st, struct slot *s)
{
	const struct srpc_batch_reqst *rq = &s->msg.body.bat_reqst;
	struct srpc_batch_reply *rp = &s->reply.body.bat_reply;

	rp->sid = old_sid(st);
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id)) {
		rp->status = ESRCH;
		return 0;
	}
	if (find_batch(st, rq->bid) < 0) {
		rp->status = ENOENT;
		return 0;
	}
	switch (rq->opc) {
	case SRPC_BATCH_OPC_RUN:
		sfw_batch_run_locked(st, rq->bid);
		rp->status = 0;
		return 0;
	case SRPC_BATCH_OPC_STOP:
		sfw_batch_stop_locked(st, rq->bid, rq->arg != 0);
		rp->status = 0;
		return 0;
	case SRPC_BATCH_OPC_QUERY: {
		int idx = (int)rq->testidx;

		if (idx < 0) {
			rp->status = EINVAL;
			return 0;
		}
		rp->active = 0;
		if (idx == 0) {
			/* test instances running */
			for (int i = 0; i < st->ntests; i++)
				if (st->tests[i].bid == rq->bid && st->tests[i].client &&
				    st->tests[i].client->nactive > 0)
					rp->active++;
			rp->status = 0;
			return 0;
		}
		for (int i = 0; i < st->ntests; i++)
			if (st->tests[i].bid == rq->bid && --idx == 0) {
				/* units running */
				if (st->tests[i].client)
					rp->active = (uint32_t)st->tests[i].client->nactive;
				rp->status = 0;
				return 0;
			}
		rp->status = ENOENT;
		return 0;
	}
	default:
		return -EINVAL;         /* dropped, as the kernel does */
	}
}

/* --- a framework request --------------------------------------------------- */

/* Framework: returns 0 to reply, -errno to drop. */
int sfw_framework_handle(struct slot *s, int *post_test, bool *unpost_tests, bool *fetch)
{
	struct ulnet_selftest *st = s->st;
	uint64_t now = lnet_now(st->ln);
	uint32_t features = LST_FEATS_MASK;
	int rc = 0;

	pthread_mutex_lock(&st->lock);
	*unpost_tests = sfw_session_check_expiry_locked(st, now);
	if (s->service != SRPC_SERVICE_MAKE_SESSION && s->service != SRPC_SERVICE_DEBUG) {
		if (st->sn_active && st->sn_features != s->msg.ses_feats) {
			char pb[ULNET_NIDSTR_SIZE];

			srpc_peer_str(s, pb);
			lnet_log(st->ln, ULNET_LOG_WARN,
				 "selftest: features of a framework RPC from %s (%#x) differ from the session's (%#x)",
				 pb, s->msg.ses_feats, st->sn_features);
			/* status and sid share their place in every reply */
			s->reply.body.tes_reply.status = EPROTO;
			s->reply.body.tes_reply.sid = st->sn_id;
			goto out;
		}
	} else if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		s->reply.body.tes_reply.status = EPROTO;
		goto out;
	}
	switch (s->service) {
	case SRPC_SERVICE_TEST:
		*post_test = fw_add_test(st, s, &rc, fetch);
		break;
	case SRPC_SERVICE_BATCH:
		rc = fw_batch(st, s);
		break;
	case SRPC_SERVICE_QUERY_STAT:
		fw_stat(st, s, now);
		break;
	case SRPC_SERVICE_DEBUG:
		fw_debug(st, s);
		break;
	case SRPC_SERVICE_MAKE_SESSION: {
		bool had = st->test_enabled[0] || st->test_enabled[1];

		rc = fw_make_session(st, s, now);
		if (had && !st->test_enabled[0] && !st->test_enabled[1])
			*unpost_tests = true;
		break;
	}
	case SRPC_SERVICE_REMOVE_SESSION: {
		bool had = st->test_enabled[0] || st->test_enabled[1];

		fw_remove_session(st, s);
		if (had && !st->test_enabled[0] && !st->test_enabled[1])
			*unpost_tests = true;
		break;
	}
	default:
		rc = -EINVAL;
		break;
	}
	if (st->sn_active)
		features = st->sn_features;
out:
	s->reply.ses_feats = features;
	st->sn_last_ns = now;          /* the timer restarts after each framework RPC */
	sfw_arm_timer_locked(st);          /* a new session's expiry needs the sweep */
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* --- a client test's destination list ----------------------------------------- */

/* A client test add: GET the destination list from the console's bulk MD
 * (portal 52, bulkid), as the kernel's server bulk. Returns 1 (started) or
 * -errno (drop). */
int sfw_dest_fetch(struct slot *s)
{
	const struct srpc_test_reqst *rq = &s->msg.body.tes_reqst;
	size_t len = (size_t)rq->ndest * SRPC_ID_PACKED_SIZE;

	if (srpc_slot_bulk_reserve(s, len))
		return -ENOMEM;
	memset(s->bulk, 0, len);
	return srpc_slot_bulk_start(s, s->bulk, len, true, 0, rq->bulkid);
}

/* The destination list is here (or not): add the client test and reply. */
void sfw_testadd_bulk_done(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_test_reqst *rq = &s->msg.body.tes_reqst;
	struct srpc_test_reply *rp = &s->reply.body.tes_reply;
	uint32_t want = rq->ndest * SRPC_ID_PACKED_SIZE, status = 0;
	char pb[ULNET_NIDSTR_SIZE];
	struct ctest *t = NULL;
	int b;

	srpc_peer_str(s, pb);
	if (s->bulk_status || s->bulk_mlength != want) {
		/* the kernel drops the RPC (sfw_bulk_ready: EIO) */
		lnet_log(st->ln, ULNET_LOG_WARN,
			 "selftest: cannot fetch the destination list of a test from console %s (%u of %u bytes): %s",
			 pb, s->bulk_mlength, want, ulnet_strerror(s->bulk_status ? s->bulk_status : -EIO));
		srpc_finish_dropped(s, -EIO);
		return;
	}
	t = sfw_ctest_create(st, &s->msg, s->bulk, &status);
	pthread_mutex_lock(&st->lock);
	rp->sid = old_sid(st);
	if (t && (!st->sn_active || !sid_equal(rq->sid, st->sn_id)))
		status = ENOENT;
	else if (t && (b = find_batch(st, rq->bid)) < 0)
		status = ENOENT;
	else if (t && sfw_batch_active_locked(st, rq->bid))
		status = EBUSY;
	else if (t && st->ntests == MAX_TESTS)
		status = ENOMEM;
	if (t && !status) {
		st->tests[st->ntests++] = (struct test_rec){
			.bid = rq->bid, .service = rq->service, .loop = rq->loop, .concur = rq->concur, .client = t,
		};
		t->next = st->ctests;
		st->ctests = t;
		if (t->service == SRPC_SERVICE_PING)
			st->ping_seq = 0;       /* ping_client_init */
	}
	rp->status = status;
	pthread_mutex_unlock(&st->lock);
	if (status) {
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: client test (service %u) from console %s refused: %s",
			 rq->service, pb, ulnet_strerror(-(int)status));
		if (t)
			sfw_ctest_free(t);
	}
	srpc_send_reply(s);
}
