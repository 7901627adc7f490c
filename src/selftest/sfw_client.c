/* SPDX-License-Identifier: MIT */
/*
 * sfw_client.c - the selftest agent as a test client: a test added with
 * is_client set runs, when its batch is RUN, one unit per destination and
 * concurrency slot, each sending its brw or ping RPCs one after the other
 * and judging their replies. A 1 s sweep on the loop aborts the RPCs of
 * a forced stop or past their deadline, and ends an expired session.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "selftest/agent_int.h"
#include "util/util_bytes.h"

#define MAX_UNITS 4096                  /* client test: ndest x concur */
#define MAX_CLIENT_BULK (256u << 20)    /* client test: bytes of brw buffers */
#define MAX_PINNED (2 * MAX_TESTS)      /* client tests one sweep looks at */
#define SWEEP_NS LNET_NSEC_PER_SEC      /* RPC timeouts are checked every second */

/* --- the test-client role (lock rules: agent_int.h) ------------------------------ */

static void chandler(const struct ulnet_event *ev);

void sfw_ctest_free(struct ctest *t)
{
	if (t->bulk_mem)
		ulnet_mem_deregister(t->st->ln, t->bulk_mem, (size_t)t->nunits * t->len);
	free(t->bulk_mem);
	free(t);
}

/* Free `t` if nothing refers to it any more (lock held). */
void sfw_ctest_maybe_free_locked(struct ulnet_selftest *st, struct ctest *t)
{
	struct ctest **pp;

	if (!t->zombie || t->nactive > 0 || t->pins > 0)
		return;
	for (pp = &st->ctests; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	sfw_ctest_free(t);
}

bool sfw_batch_active_locked(const struct ulnet_selftest *st, uint64_t bid)
{
	for (const struct ctest *t = st->ctests; t; t = t->next)
		if (!t->zombie && t->bid == bid && t->nactive > 0)
			return true;
	return false;
}

/* The agent's 1 s sweep is wanted while a client test runs under an RPC
 * timeout, or while a session can expire (the kernel's session timer fires
 * by itself, not only when the next request comes). */
static bool sweep_wanted_locked(const struct ulnet_selftest *st)
{
	if (st->sn_active && st->timeout_s != 0)
		return true;
	if (st->rpc_timeout_s == 0)
		return false;
	for (const struct ctest *t = st->ctests; t; t = t->next)
		if (t->nactive > 0)
			return true;
	return false;
}

void sfw_arm_timer_locked(struct ulnet_selftest *st)
{
	if (st->timer_armed || st->stopping || !sweep_wanted_locked(st))
		return;
	st->timer_armed = true;
	st->refs++;
	if (ul_timer_start(st->ln->ln_loop, &st->timer, ul_loop_now(st->ln->ln_loop) + SWEEP_NS)) {
		st->timer_armed = false;
		st->refs--;
	}
}

/* A unit is over (lock held). */
static void unit_finish_locked(struct ulnet_selftest *st, struct unit *u)
{
	struct ctest *t = u->t;

	if (--t->nactive > 0)
		return;
	t->stopping = false;
	t->abort_req = false;
	sfw_ctest_maybe_free_locked(st, t);
}

static void post_unit_locked(struct ulnet_selftest *st, struct unit *u)
{
	st->refs++;
	ul_loop_post(st->ln->ln_loop, &u->work);
}

/* An MD of `u` is done with (lock held); returns whether the RPC is over. */
static bool unit_md_gone_locked(struct ulnet_selftest *st, struct unit *u, enum ctag_kind k)
{
	if (!u->live[k])
		return false;
	u->live[k] = false;
	u->mdh[k] = ULNET_HANDLE_NONE;
	st->refs--;
	return !u->live[CTAG_REQ] && !u->live[CTAG_REPLY] && !u->live[CTAG_BULK];
}

static void unit_rpc_done(struct unit *u);

/* Abort the RPC of `u` (lock held): unlink what is posted; the caller
 * unlinks the handles left in `out` after dropping the lock. */
static int unit_abort_locked(struct unit *u, int why, ulnet_handle_t out[CTAG_COUNT])
{
	int n = 0;

	if (!u->in_rpc || u->aborted)
		return 0;
	u->aborted = true;
	u->abort_status = why;
	for (int k = 0; k < CTAG_COUNT; k++)
		if (u->live[k] && !ulnet_handle_is_none(u->mdh[k]))
			out[n++] = u->mdh[k];
	return n;
}

static uint64_t next_id_locked(struct ulnet_selftest *st)
{
	return ++st->matchbits;
}

/* Post a passive MD on portal 52 for `u`; returns 0 or -errno. */
static int unit_post52(struct unit *u, enum ctag_kind k, uint64_t bits, void *buf, size_t len, unsigned ops)
{
	struct ulnet_selftest *st = u->t->st;
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = {
		.start = buf,
		.length = len,
		.threshold = 1,
		.options = ops,
		.user_ptr = &u->tags[k],
		.handler = chandler,
	};
	ulnet_handle_t me, mdh;
	bool aborted;
	int rc;

	rc = ulnet_me_attach(st->ln, SRPC_RDMA_PORTAL, any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me);
	if (rc)
		return rc;
	rc = ulnet_md_attach(st->ln, me, &md, ULNET_UNLINK, &mdh);
	if (rc) {
		(void)ulnet_me_unlink(st->ln, me);
		return rc;
	}
	pthread_mutex_lock(&st->lock);
	u->mdh[k] = mdh;
	aborted = u->aborted;
	pthread_mutex_unlock(&st->lock);
	if (aborted)
		(void)ulnet_md_unlink(st->ln, mdh);   /* its UNLINK event counts it gone */
	return 0;
}

/* Start the next RPC of a unit (on the loop thread, from its work item). */
static void unit_start(struct ul_work *w)
{
	struct unit *u = (struct unit *)((char *)w - offsetof(struct unit, work));
	struct ctest *t = u->t;
	struct ulnet_selftest *st = t->st;
	bool brw = t->service == SRPC_SERVICE_BRW;
	ulnet_process_id_t to = u->dest;
	struct ulnet_md md = {
		.start = u->req,
		.length = SRPC_MSG_SIZE,
		.threshold = 1,
		.user_ptr = &u->tags[CTAG_REQ],
		.handler = chandler,
	};
	struct srpc_msg m = { .version = SRPC_MSG_VERSION };
	uint64_t rpyid, bulkid = 0;
	ulnet_handle_t mdh;
	struct timespec ts;
	bool over = false, aborted;
	int rc;

	pthread_mutex_lock(&st->lock);
	st->refs--;
	if (t->stopping || st->stopping) {
		unit_finish_locked(st, u);
		pthread_mutex_unlock(&st->lock);
		return;
	}
	if (u->loop > 0)
		u->loop--;
	u->in_rpc = true;
	u->aborted = u->expired = u->got_reply = u->bulk_unlinked = false;
	u->abort_status = 0;
	for (int k = 0; k < CTAG_COUNT; k++) {
		u->status[k] = 0;
		u->mdh[k] = ULNET_HANDLE_NONE;
		u->live[k] = k != CTAG_BULK || brw;
		st->refs += u->live[k];
	}
	u->deadline = st->rpc_timeout_s ? ul_loop_now(st->ln->ln_loop) +
		(uint64_t)st->rpc_timeout_s * LNET_NSEC_PER_SEC : UINT64_MAX;
	rpyid = next_id_locked(st);
	if (brw)
		bulkid = next_id_locked(st);
	if (!brw)
		u->seq = st->ping_seq++;
	m.ses_feats = t->features;
	pthread_mutex_unlock(&st->lock);

	m.type = (uint32_t)srpc_service2request((int)t->service);
	if (brw) {
		m.body.brw_reqst = (struct srpc_brw_reqst){ .rpyid = rpyid, .bulkid = bulkid, .rw = t->opc,
							    .len = t->len, .flags = t->flags };
		brw_fill_off(u->bulk, t->len, t->off, t->flags,
			     t->opc == LST_BRW_WRITE ? LST_BRW_MAGIC : LST_BRW_POISON);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		m.body.ping_reqst = (struct srpc_ping_reqst){ .rpyid = rpyid, .magic = LST_PING_TEST_MAGIC,
							      .seq = u->seq, .time_sec = (uint64_t)ts.tv_sec,
							      .time_nsec = (uint64_t)ts.tv_nsec };
	}
	(void)srpc_msg_encode(&m, u->req, sizeof(u->req));
	memset(u->rep, 0, sizeof(u->rep));

	rc = unit_post52(u, CTAG_REPLY, rpyid, u->rep, sizeof(u->rep), ULNET_MD_OP_PUT);
	if (rc) {
		pthread_mutex_lock(&st->lock);
		u->status[CTAG_REPLY] = rc;
		(void)unit_md_gone_locked(st, u, CTAG_REPLY);
		if (brw)
			(void)unit_md_gone_locked(st, u, CTAG_BULK);
		over = unit_md_gone_locked(st, u, CTAG_REQ);
		pthread_mutex_unlock(&st->lock);
		goto out;
	}
	if (brw) {
		/* write: the server GETs from it; read: it PUTs into it */
		unsigned ops = t->opc == LST_BRW_WRITE ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT;

		if (t->opc == LST_BRW_READ && t->flags == LST_BRW_CHECK_DISCARD)
			ops |= ULNET_MD_DISCARD;
		rc = unit_post52(u, CTAG_BULK, bulkid, u->bulk, t->len, ops);
		if (rc) {
			ulnet_handle_t un[CTAG_COUNT];
			int n;

			pthread_mutex_lock(&st->lock);
			u->status[CTAG_BULK] = rc;
			(void)unit_md_gone_locked(st, u, CTAG_BULK);
			(void)unit_md_gone_locked(st, u, CTAG_REQ);
			n = unit_abort_locked(u, rc, un);
			pthread_mutex_unlock(&st->lock);
			for (int i = 0; i < n; i++)
				(void)ulnet_md_unlink(st->ln, un[i]);
			return;
		}
	}
	rc = ulnet_md_bind(st->ln, &md, ULNET_UNLINK, &mdh);
	if (!rc) {
		pthread_mutex_lock(&st->lock);
		u->mdh[CTAG_REQ] = mdh;
		aborted = u->aborted;
		pthread_mutex_unlock(&st->lock);
		if (aborted) {
			(void)ulnet_md_unlink(st->ln, mdh);
			return;
		}
		rc = ulnet_put(st->ln, NULL, mdh, ULNET_NOACK_REQ, to, SRPC_REQUEST_PORTAL, t->service, 0, 0);
		if (!rc)
			return;                 /* events go on */
		pthread_mutex_lock(&st->lock);
		u->status[CTAG_REQ] = rc;
		pthread_mutex_unlock(&st->lock);
		(void)ulnet_md_unlink(st->ln, mdh);
	} else {
		pthread_mutex_lock(&st->lock);
		u->status[CTAG_REQ] = rc;
		over = unit_md_gone_locked(st, u, CTAG_REQ);
		pthread_mutex_unlock(&st->lock);
	}
	/* the request did not go: take the reply and bulk buffers back */
	{
		ulnet_handle_t un[CTAG_COUNT];
		int n;

		pthread_mutex_lock(&st->lock);
		n = unit_abort_locked(u, rc, un);
		pthread_mutex_unlock(&st->lock);
		for (int i = 0; i < n; i++)
			(void)ulnet_md_unlink(st->ln, un[i]);
	}
out:
	if (over)
		unit_rpc_done(u);
}

/* Events of a client RPC's MDs. */
static void chandler(const struct ulnet_event *ev)
{
	const struct ctag *tag = ev->md_user_ptr;
	struct unit *u = tag->u;
	struct ulnet_selftest *st = u->t->st;
	ulnet_handle_t unlink_bulk = ULNET_HANDLE_NONE;
	ulnet_handle_t un[CTAG_COUNT];
	int n = 0, status = ev->type == ULNET_EVENT_UNLINK ? -EINTR : ev->status;
	bool over = false;

	pthread_mutex_lock(&st->lock);
	if (ev->status && ev->type != ULNET_EVENT_UNLINK)
		st->stats.errors++;
	if (status && !u->status[tag->kind])
		u->status[tag->kind] = status;
	switch (tag->kind) {
	case CTAG_REQ:
		if (ev->type == ULNET_EVENT_SEND && !ev->status)
			st->stats.rpcs_sent++;
		if (status)
			n = unit_abort_locked(u, status, un);
		break;
	case CTAG_REPLY:
		if (ev->type == ULNET_EVENT_PUT && !ev->status) {
			u->got_reply = true;
			/* a remote error: the server may never touch the bulk */
			if (u->live[CTAG_BULK] && ev->mlength >= SRPC_HDR_SIZE + 4 &&
			    ul_get_le32(u->rep) == SRPC_MSG_MAGIC && ul_get_le32(u->rep + SRPC_HDR_SIZE) != 0)
				unlink_bulk = u->mdh[CTAG_BULK];
			else if (u->live[CTAG_BULK] && ev->mlength >= SRPC_HDR_SIZE + 4 &&
				 ul_get_be32(u->rep) == SRPC_MSG_MAGIC && ul_get_be32(u->rep + SRPC_HDR_SIZE) != 0)
				unlink_bulk = u->mdh[CTAG_BULK];
		} else if (status) {
			n = unit_abort_locked(u, status, un);
		}
		break;
	case CTAG_BULK:
		if (ev->type == ULNET_EVENT_UNLINK)
			u->bulk_unlinked = true;
		break;
	default:
		break;
	}
	if (ev->unlinked || ev->type == ULNET_EVENT_UNLINK)
		over = unit_md_gone_locked(st, u, tag->kind);
	pthread_mutex_unlock(&st->lock);
	for (int i = 0; i < n; i++)
		(void)ulnet_md_unlink(st->ln, un[i]);
	if (!ulnet_handle_is_none(unlink_bulk))
		(void)ulnet_md_unlink(st->ln, unlink_bulk);
	if (over)
		unit_rpc_done(u);
}

/* Every MD of the unit's RPC is gone: judge it as the kernel does
 * (srpc_send_rpc, then the test's done_rpc), count, and go on or stop. */
static void unit_rpc_done(struct unit *u)
{
	struct ctest *t = u->t;
	struct ulnet_selftest *st = t->st;
	bool brw = t->service == SRPC_SERVICE_BRW;
	struct srpc_msg m = { 0 };
	char pb[ULNET_NIDSTR_SIZE];
	bool stopping, done;
	uint32_t remote = 0;
	int rc, brw_err = 0, ping_err = 0;

	lnet_nidstr(&u->dest.nid, pb);
	pthread_mutex_lock(&st->lock);
	stopping = t->stopping;
	u->in_rpc = false;              /* sweeps leave it alone from now on */
	if (u->expired)
		st->stats.rpcs_expired++;
	rc = u->abort_status;
	pthread_mutex_unlock(&st->lock);

	if (!rc)
		rc = u->status[CTAG_REQ];
	if (!rc)
		rc = u->status[CTAG_REPLY];
	if (!rc && !u->got_reply)
		rc = -EINTR;
	if (!rc) {
		if (srpc_msg_decode(u->rep, sizeof(u->rep), &m) ||
		    m.type != (uint32_t)srpc_service2reply((int)t->service)) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: bad reply from %s: type %u (%d expected)", pb,
				 ul_get_le32(u->rep + 8), srpc_service2reply((int)t->service));
			rc = -EBADMSG;
		}
	}
	if (!rc && brw) {
		remote = m.body.brw_reply.status;
		rc = u->status[CTAG_BULK];
		if (rc && u->bulk_unlinked && remote != 0)
			rc = 0;
	}
	if (brw) {
		if (rc) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw RPC to %s failed: %s", pb, ulnet_strerror(rc));
			brw_err = !stopping;
		} else if (remote) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw RPC to %s finished with status %u", pb, remote);
			brw_err = 1;
			rc = -(int)remote;
		} else if (t->opc == LST_BRW_READ &&
			   brw_check_off(u->bulk, t->len, t->off, t->flags, m.swapped)) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw read data from %s is corrupted", pb);
			brw_err = 1;
			rc = -EBADMSG;
		}
	} else {
		if (rc) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: cannot ping %s (seq %u): %s", pb, u->seq,
				 ulnet_strerror(rc));
			ping_err = !stopping;
		} else if (m.body.ping_reply.magic != LST_PING_TEST_MAGIC) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: bad ping magic %#x from %s",
				 m.body.ping_reply.magic, pb);
			ping_err = 1;
			rc = -EBADMSG;
		} else if (m.body.ping_reply.seq != u->seq) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: bad ping seq %u from %s, %u expected",
				 m.body.ping_reply.seq, pb, u->seq);
			ping_err = 1;
			rc = -EBADMSG;
		}
	}

	pthread_mutex_lock(&st->lock);
	st->stats.client_rpcs++;
	if (rc)
		st->stats.client_errors++;
	st->sn_brw_errors += (uint32_t)brw_err;
	st->sn_ping_errors += (uint32_t)ping_err;
	st->stats.brw_errors += (uint32_t)brw_err;
	st->stats.ping_errors += (uint32_t)ping_err;
	done = t->stopping || st->stopping || u->loop == 0 || (rc && t->stop_onerr);
	if (done)
		unit_finish_locked(st, u);
	else
		post_unit_locked(st, u);
	pthread_mutex_unlock(&st->lock);
}

/* Abort the RPCs that must end: of tests stopped with force, and those past
 * their deadline. Tests are pinned while we look at them unlocked. */
void sfw_client_sweep(struct ulnet_selftest *st)
{
	struct ctest *pinned[MAX_PINNED];
	uint64_t now = ul_loop_now(st->ln->ln_loop);
	int np = 0;

	pthread_mutex_lock(&st->lock);
	for (struct ctest *t = st->ctests; t && np < MAX_PINNED; t = t->next)
		if (t->nactive > 0) {
			t->pins++;
			pinned[np++] = t;
		}
	pthread_mutex_unlock(&st->lock);
	for (int i = 0; i < np; i++) {
		struct ctest *t = pinned[i];

		for (int j = 0; j < t->nunits; j++) {
			struct unit *u = &t->units[j];
			ulnet_handle_t un[CTAG_COUNT];
			int n = 0;

			pthread_mutex_lock(&st->lock);
			if (u->in_rpc && !u->aborted) {
				if (t->abort_req || st->stopping) {
					n = unit_abort_locked(u, -EINTR, un);
				} else if (now >= u->deadline) {
					char pb[ULNET_NIDSTR_SIZE];

					lnet_nidstr(&u->dest.nid, pb);
					lnet_log(st->ln, ULNET_LOG_WARN,
						 "selftest: RPC (service %u) to %s timed out after %d s", t->service,
						 pb, st->rpc_timeout_s);
					u->expired = true;
					n = unit_abort_locked(u, -ETIMEDOUT, un);
				}
			}
			pthread_mutex_unlock(&st->lock);
			for (int k = 0; k < n; k++)
				(void)ulnet_md_unlink(st->ln, un[k]);
		}
		pthread_mutex_lock(&st->lock);
		t->pins--;
		sfw_ctest_maybe_free_locked(st, t);
		pthread_mutex_unlock(&st->lock);
	}
}

void sfw_timer_cb(struct ul_timer *tm)
{
	struct ulnet_selftest *st = (struct ulnet_selftest *)((char *)tm - offsetof(struct ulnet_selftest, timer));
	bool unpost_tests;

	pthread_mutex_lock(&st->lock);
	if (!st->timer_armed) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	st->timer_armed = false;
	/* the session first: ending it marks its client tests for abort,
	 * which the sweep then carries out */
	unpost_tests = !st->stopping && sfw_session_check_expiry_locked(st, lnet_now(st->ln));
	pthread_mutex_unlock(&st->lock);
	sfw_client_sweep(st);
	/* still under the timer's reference: stop() waits for it */
	if (unpost_tests) {
		srpc_unpost_service(st, SRPC_SERVICE_BRW);
		srpc_unpost_service(st, SRPC_SERVICE_PING);
	}
	pthread_mutex_lock(&st->lock);
	sfw_arm_timer_locked(st);
	st->refs--;                     /* the timer's own */
	pthread_mutex_unlock(&st->lock);
}

/* RUN (lock held): as sfw_run_batch. */
void sfw_batch_run_locked(struct ulnet_selftest *st, uint64_t bid)
{
	bool any = false;

	if (sfw_batch_active_locked(st, bid))
		return;
	for (struct ctest *t = st->ctests; t; t = t->next) {
		if (t->zombie || t->bid != bid)
			continue;
		t->stopping = t->abort_req = false;
		t->nactive = t->nunits;
		for (int j = 0; j < t->nunits; j++) {
			t->units[j].loop = t->loop;
			post_unit_locked(st, &t->units[j]);
		}
		any = true;
	}
	if (any)
		sfw_arm_timer_locked(st);
}

/* STOP (lock held): as sfw_stop_batch; the caller sweeps for `force`. */
void sfw_batch_stop_locked(struct ulnet_selftest *st, uint64_t bid, bool force)
{
	for (struct ctest *t = st->ctests; t; t = t->next) {
		if (t->zombie || t->bid != bid || t->nactive == 0 || t->stopping)
			continue;
		t->stopping = true;
		t->abort_req = force;
	}
}

/* Build a client test from a TEST add request and its destination list
 * (`ids`: ndest packed ids in the sender's byte order). Returns the test,
 * or NULL with *status the reply status. No lock held. */
struct ctest *sfw_ctest_create(struct ulnet_selftest *st, const struct srpc_msg *msg, const uint8_t *ids,
			       uint32_t *status)
{
	const struct srpc_test_reqst *rq = &msg->body.tes_reqst;
	uint64_t nunits = (uint64_t)rq->ndest * rq->concur;
	uint32_t opc = 0, flags = 0, len = 0, off = 0;
	struct ctest *t;

	if (rq->service == SRPC_SERVICE_BRW) {
		/* brw_client_init's checks */
		opc = rq->param.blk_opc;
		flags = rq->param.blk_flags;
		if (rq->param.kind == SRPC_TEST_PARAM_BULK_V1) {
			len = rq->param.blk_len;
			off = rq->param.blk_offset & (SRPC_PAGE_SIZE - 1);
		} else {
			len = rq->param.blk_npg > ULNET_MTU / SRPC_PAGE_SIZE ? ULNET_MTU + 1
									   : rq->param.blk_npg * SRPC_PAGE_SIZE;
		}
		if (off % 8 || len > ULNET_MTU || (opc != LST_BRW_READ && opc != LST_BRW_WRITE) ||
		    (flags != LST_BRW_CHECK_NONE && flags != LST_BRW_CHECK_FULL &&
		     flags != LST_BRW_CHECK_SIMPLE && flags != LST_BRW_CHECK_DISCARD)) {
			*status = EINVAL;
			return NULL;
		}
	}
	if (nunits > MAX_UNITS || (rq->service == SRPC_SERVICE_BRW && nunits * len > MAX_CLIENT_BULK)) {
		*status = ENOMEM;
		return NULL;
	}
	t = calloc(1, sizeof(*t) + (size_t)nunits * sizeof(struct unit));
	if (!t) {
		*status = ENOMEM;
		return NULL;
	}
	if (rq->service == SRPC_SERVICE_BRW && len > 0) {
		t->bulk_mem = calloc((size_t)nunits, len);
		if (!t->bulk_mem) {
			free(t);
			*status = ENOMEM;
			return NULL;
		}
		/* reused by every RPC of the test: registered with an RDMA
		 * device once (failing, only each RPC's MD is) */
		(void)ulnet_mem_register(st->ln, t->bulk_mem, (size_t)nunits * len);
	}
	t->st = st;
	t->bid = rq->bid;
	t->service = rq->service;
	t->concur = rq->concur;
	t->loop = (int32_t)rq->loop;
	t->stop_onerr = rq->stop_onerr != 0;
	t->features = msg->ses_feats;
	t->opc = opc;
	t->flags = flags;
	t->len = len;
	t->off = off;
	t->nunits = (int)nunits;
	for (uint32_t i = 0, n = 0; i < rq->ndest; i++) {
		const uint8_t *p = ids + (size_t)i * SRPC_ID_PACKED_SIZE;
		ulnet_process_id_t dest;

		ulnet_nid_from_nid4(ul_get_64(p, msg->swapped), &dest.nid);
		dest.pid = ul_get_32(p + 8, msg->swapped);
		for (uint32_t j = 0; j < rq->concur; j++, n++) {
			struct unit *u = &t->units[n];

			u->t = t;
			u->dest = dest;
			u->work.fn = unit_start;
			u->bulk = t->bulk_mem ? t->bulk_mem + (size_t)n * len : NULL;
			for (int k = 0; k < CTAG_COUNT; k++) {
				u->tags[k] = (struct ctag){ u, (enum ctag_kind)k };
				u->mdh[k] = ULNET_HANDLE_NONE;
			}
		}
	}
	*status = 0;
	return t;
}
