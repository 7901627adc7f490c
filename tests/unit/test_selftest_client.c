/* SPDX-License-Identifier: MIT */
/*
 * test_selftest_client.c - the SRPC agent's test-client role on three
 * instances joined by memlnd: a console (test code, 11@gni) makes sessions
 * on ulnet node A (12@gni) and node B (13@gni), both running the agent;
 * adds server tests on B and client tests (is_client) on A whose
 * destination list names B; runs the batch on A, queries it until it is
 * done and reads STAT from A (and B's counters). Then: the request bytes
 * of A's pings and brw RPCs against the kernel console's in lst.pcap, a
 * forced stop mid-run, stop-on-error with a destination that does not
 * exist, the RPC timeout, and malformed destination lists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_node.h"
#include "memlnd.h"
#include "selftest/srpc_wire.h"
#include "ulnet/selftest.h"
#include "util/util_bytes.h"

struct env {
	struct memlnd_net *net;
	ulnet_t *con, *a, *b;
	ulnet_nid_t con_nid, a_nid, b_nid;
	ulnet_selftest_t *sta, *stb;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	logs[0] = '\0';
	e->net = memlnd_net_create();
	e->con = mk();
	e->a = mk();
	e->b = mk();
	assert_int_equal(memlnd_add_ni(e->net, e->con, 11, &e->con_nid), 0);
	assert_int_equal(memlnd_add_ni(e->net, e->a, 12, &e->a_nid), 0);
	assert_int_equal(memlnd_add_ni(e->net, e->b, 13, &e->b_nid), 0);
	assert_int_equal(ulnet_selftest_start(e->a, NULL, &e->sta), 0);
	assert_int_equal(ulnet_selftest_start(e->b, NULL, &e->stb), 0);
	*state = e;
	return 0;
}

/* Deliver everything and run the instances' work, a bounded number of turns. */
static void pump(struct env *e)
{
	for (int i = 0, quiet = 0; i < 20000 && quiet < 3; i++) {
		int n = memlnd_pump(e->net);

		n += ulnet_progress(e->con, 0) > 0;
		n += ulnet_progress(e->a, 0) > 0;
		n += ulnet_progress(e->b, 0) > 0;
		quiet = n > 0 || memlnd_queued(e->net) > 0 ? 0 : quiet + 1;
	}
}

static int teardown(void **state)
{
	struct env *e = *state;

	pump(e);
	ulnet_selftest_stop(e->sta);
	ulnet_selftest_stop(e->stb);
	pump(e);
	ulnet_destroy(e->con);
	ulnet_destroy(e->a);
	ulnet_destroy(e->b);
	memlnd_net_destroy(e->net);
	free(e);
	return 0;
}

/* --- console side ----------------------------------------------------------------- */

struct sink {
	uint8_t buf[SRPC_MSG_SIZE];
	int n;
};

static void sink_ev(const struct ulnet_event *ev)
{
	struct sink *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT)
		s->n++;
}

static void nop_ev(const struct ulnet_event *ev)
{
	(void)ev;
}

static const ulnet_process_id_t any_id = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						    .addr = { 0xff, 0xff, 0xff, 0xff } },
					   .pid = ULNET_PID_ANY };

static ulnet_handle_t post(ulnet_t *ln, unsigned portal, uint64_t bits, void *buf, size_t len, unsigned ops,
			   void *user, ulnet_handler_t h)
{
	ulnet_handle_t me, mdh;
	struct ulnet_md md = { .start = buf, .length = len, .threshold = 1, .options = ops,
			       .user_ptr = user, .handler = h };

	assert_int_equal(ulnet_me_attach(ln, portal, any_id, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(ln, me, &md, ULNET_UNLINK, &mdh), 0);
	return me;
}

static uint64_t next_rpyid = 0x5000;

static void build(struct srpc_msg *m, uint32_t type)
{
	memset(m, 0, sizeof(*m));
	m->version = SRPC_MSG_VERSION;
	m->type = type;
	m->ses_feats = LST_FEAT_BULK_LEN;
	m->body.mksn_reqst.rpyid = next_rpyid++;
}

static int service_of(uint32_t type)
{
	switch (type) {
	case SRPC_MSG_MKSN_REQST: return SRPC_SERVICE_MAKE_SESSION;
	case SRPC_MSG_RMSN_REQST: return SRPC_SERVICE_REMOVE_SESSION;
	case SRPC_MSG_BATCH_REQST: return SRPC_SERVICE_BATCH;
	case SRPC_MSG_STAT_REQST: return SRPC_SERVICE_QUERY_STAT;
	case SRPC_MSG_TEST_REQST: return SRPC_SERVICE_TEST;
	default: return SRPC_SERVICE_DEBUG;
	}
}

/* One framework RPC from the console to `to`: whether a reply came. */
static bool call(struct env *e, const ulnet_nid_t *to, const struct srpc_msg *m, struct srpc_msg *r)
{
	static struct sink s;
	static uint8_t req[SRPC_MSG_SIZE];
	ulnet_process_id_t dst = { .nid = *to, .pid = ULNET_PID_LUSTRE };
	struct ulnet_md md = { .start = req, .length = SRPC_MSG_SIZE, .threshold = 1, .handler = nop_ev };
	ulnet_handle_t me, mdh;

	memset(&s, 0, sizeof(s));
	assert_int_equal(srpc_msg_encode(m, req, sizeof(req)), SRPC_MSG_SIZE);
	me = post(e->con, SRPC_RDMA_PORTAL, m->body.mksn_reqst.rpyid, s.buf, sizeof(s.buf), ULNET_MD_OP_PUT, &s,
		  sink_ev);
	assert_int_equal(ulnet_md_bind(e->con, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(e->con, NULL, mdh, ULNET_NOACK_REQ, dst, SRPC_FRAMEWORK_REQUEST_PORTAL,
				   (uint64_t)service_of(m->type), 0, 0), 0);
	pump(e);
	if (s.n == 0) {
		(void)ulnet_me_unlink(e->con, me);
		return false;
	}
	assert_int_equal(srpc_msg_decode(s.buf, sizeof(s.buf), r), 0);
	assert_int_equal(r->type, m->type + 1);
	return true;
}

static const struct srpc_sid SID = { .nid = 0x1, .stamp = 4242 };

static void mksn(struct env *e, const ulnet_nid_t *to)
{
	struct srpc_msg m, r;

	build(&m, SRPC_MSG_MKSN_REQST);
	m.body.mksn_reqst.sid = SID;
	snprintf(m.body.mksn_reqst.name, sizeof(m.body.mksn_reqst.name), "client");
	assert_true(call(e, to, &m, &r));
	assert_int_equal(r.body.mksn_reply.status, 0);
}

struct test_spec {
	uint32_t service, loop, concur;
	int stop_onerr;
	uint32_t opc, flags, len, off;  /* brw */
};

/* Add a test to batch 7 of `to`. Client tests: `dests` (ndest of them) are
 * served from a bulk MD of `list_len` bytes (0: exact). Returns the reply
 * status, or -1 when no reply came. */
static int add_test(struct env *e, const ulnet_nid_t *to, const struct test_spec *t, int is_client,
		    const ulnet_process_id_t *dests, uint32_t ndest, size_t list_len)
{
	static uint8_t list[64 * SRPC_ID_PACKED_SIZE];
	struct srpc_msg m, r;
	ulnet_handle_t me = ULNET_HANDLE_NONE;
	uint64_t bulkid = 0x9000 + next_rpyid;

	build(&m, SRPC_MSG_TEST_REQST);
	m.body.tes_reqst.sid = SID;
	m.body.tes_reqst.bid = 7;
	m.body.tes_reqst.service = t->service;
	m.body.tes_reqst.loop = t->loop;
	m.body.tes_reqst.concur = t->concur;
	m.body.tes_reqst.stop_onerr = (uint8_t)t->stop_onerr;
	m.body.tes_reqst.is_client = (uint8_t)is_client;
	m.body.tes_reqst.ndest = ndest;
	m.body.tes_reqst.bulkid = bulkid;
	if (t->service == SRPC_SERVICE_BRW) {
		m.body.tes_reqst.param.kind = SRPC_TEST_PARAM_BULK_V1;
		m.body.tes_reqst.param.blk_opc = t->opc;
		m.body.tes_reqst.param.blk_flags = t->flags;
		m.body.tes_reqst.param.blk_len = t->len;
		m.body.tes_reqst.param.blk_offset = t->off;
	} else {
		m.body.tes_reqst.param.kind = SRPC_TEST_PARAM_PING;
		m.body.tes_reqst.param.png_size = 16;
	}
	if (is_client && dests) {
		size_t n = ndest < 8 ? ndest : 8;      /* callers give up to 8 */

		for (size_t i = 0; i < n; i++) {
			ulnet_nid4_t nid4;

			assert_int_equal(ulnet_nid_to_nid4(&dests[i].nid, &nid4), 0);
			ul_put_le64(list + i * SRPC_ID_PACKED_SIZE, nid4);
			ul_put_le32(list + i * SRPC_ID_PACKED_SIZE + 8, dests[i].pid);
		}
		me = post(e->con, SRPC_RDMA_PORTAL, bulkid, list, list_len ? list_len : n * SRPC_ID_PACKED_SIZE,
			  ULNET_MD_OP_GET | ULNET_MD_TRUNCATE, NULL, nop_ev);
	}
	if (!call(e, to, &m, &r)) {
		if (!ulnet_handle_is_none(me))
			(void)ulnet_me_unlink(e->con, me);
		return -1;
	}
	return (int)r.body.tes_reply.status;
}

static struct srpc_batch_reply batch(struct env *e, const ulnet_nid_t *to, uint32_t opc, uint32_t idx, uint32_t arg)
{
	struct srpc_msg m, r;

	build(&m, SRPC_MSG_BATCH_REQST);
	m.body.bat_reqst.sid = SID;
	m.body.bat_reqst.bid = 7;
	m.body.bat_reqst.opc = opc;
	m.body.bat_reqst.testidx = idx;
	m.body.bat_reqst.arg = arg;
	assert_true(call(e, to, &m, &r));
	return r.body.bat_reply;
}

static struct srpc_stat_reply stat(struct env *e, const ulnet_nid_t *to)
{
	struct srpc_msg m, r;

	build(&m, SRPC_MSG_STAT_REQST);
	m.body.stat_reqst.sid = SID;
	assert_true(call(e, to, &m, &r));
	assert_int_equal(r.body.stat_reply.status, 0);
	return r.body.stat_reply;
}

/* RUN batch 7 on A and QUERY until it is inactive (bounded). */
static void run_to_end(struct env *e)
{
	int i;

	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	for (i = 0; i < 100; i++) {
		struct srpc_batch_reply r = batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0);

		assert_int_equal(r.status, 0);
		if (r.active == 0)
			break;
	}
	assert_true(i < 100);
}

/* --- tests ---------------------------------------------------------------------- */

static void test_client_run(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t b = { .nid = e->b_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 5, .concur = 2 };
	struct test_spec wr = { .service = SRPC_SERVICE_BRW, .loop = 3, .concur = 2, .opc = LST_BRW_WRITE,
				.flags = LST_BRW_CHECK_FULL, .len = 65536 };
	struct test_spec rd = { .service = SRPC_SERVICE_BRW, .loop = 4, .concur = 1, .opc = LST_BRW_READ,
				.flags = LST_BRW_CHECK_FULL, .len = 8192 + 512, .off = 64 };
	struct ulnet_selftest_stats sa, sb;
	struct srpc_stat_reply st;

	mksn(e, &e->a_nid);
	mksn(e, &e->b_nid);
	/* B serves ping and brw */
	assert_int_equal(add_test(e, &e->b_nid, &ping, 0, NULL, 0, 0), 0);
	assert_int_equal(add_test(e, &e->b_nid, &wr, 0, NULL, 0, 0), 0);
	/* A is the client of three tests */
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &b, 1, 0), 0);
	assert_int_equal(add_test(e, &e->a_nid, &wr, 1, &b, 1, 0), 0);
	assert_int_equal(add_test(e, &e->a_nid, &rd, 1, &b, 1, 0), 0);
	/* nothing runs yet */
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 4, 0).status, ENOENT);

	run_to_end(e);
	/* per test: loop x concur x ndest RPCs (the kernel's units) */
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(ulnet_selftest_stats_get(e->stb, &sb), 0);
	if (sa.client_errors)
		fail_msg("client errors: %s", logs);
	assert_int_equal(sa.client_rpcs, 10 + 6 + 4);
	assert_int_equal(sa.rpcs_sent, 20);
	assert_int_equal(sb.ping_reqs, 10);
	assert_int_equal(sb.brw_reqs, 10);
	assert_int_equal(sb.brw_check_errors, 0);
	assert_int_equal(sb.bulk_get, 6 * 65536);
	assert_int_equal(sb.bulk_put, 4 * (8192 + 512));
	st = stat(e, &e->a_nid);
	assert_int_equal(st.rpc.rpcs_sent, 20);
	assert_int_equal(st.rpc.errors, 0);
	assert_int_equal(st.fw.brw_errors, 0);
	assert_int_equal(st.fw.ping_errors, 0);
	assert_int_equal(st.fw.active_batches, 0);
	assert_int_equal(st.rpc.bulk_get, 3 * SRPC_ID_PACKED_SIZE);   /* the destination lists */
	st = stat(e, &e->b_nid);
	assert_int_equal(st.rpc.rpcs_rcvd >= 20, 1);
	assert_int_equal(st.rpc.rpcs_sent, 0);

	/* run again: the same counts once more */
	run_to_end(e);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.client_rpcs, 40);
	assert_int_equal(sa.client_errors, 0);
}

/* The destination is the console itself: it takes A's requests and
 * compares them with the kernel console's of lst.pcap. */
static void test_client_request_bytes(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t c = { .nid = e->con_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 1, .concur = 1 };
	struct test_spec wr = { .service = SRPC_SERVICE_BRW, .loop = 1, .concur = 1, .opc = LST_BRW_WRITE,
				.flags = LST_BRW_CHECK_FULL, .len = 65536 };
	/* lst.pcap: .11's ping and brw write requests to .12 */
	static const uint8_t cap_ping[40] = {
		0x0d, 0xf0, 0xb0, 0xee, 0x01, 0, 0, 0, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0,
		0x07, 0, 0, 0, 0, 0, 0x4b, 0x07, 0xce, 0xfa, 0xbe, 0xba, 0, 0, 0, 0,
	};
	static const uint8_t cap_brw[52] = {
		0x0d, 0xf0, 0xb0, 0xee, 0x01, 0, 0, 0, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0,
		0x16, 0, 0, 0, 0, 0, 0x4b, 0x07, 0x17, 0, 0, 0, 0, 0, 0x4b, 0x07,
		0x02, 0, 0, 0, 0, 0, 0x01, 0, 0x03, 0, 0, 0,
	};
	static struct sink reqs[2];
	struct srpc_stat_reply st;
	struct ulnet_selftest_stats sa;
	uint64_t rpyid;

	memset(reqs, 0, sizeof(reqs));
	(void)post(e->con, SRPC_REQUEST_PORTAL, SRPC_SERVICE_PING, reqs[0].buf, SRPC_MSG_SIZE, ULNET_MD_OP_PUT,
		   &reqs[0], sink_ev);
	(void)post(e->con, SRPC_REQUEST_PORTAL, SRPC_SERVICE_BRW, reqs[1].buf, SRPC_MSG_SIZE, ULNET_MD_OP_PUT,
		   &reqs[1], sink_ev);
	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &c, 1, 0), 0);
	assert_int_equal(add_test(e, &e->a_nid, &wr, 1, &c, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	pump(e);
	assert_int_equal(reqs[0].n, 1);
	assert_int_equal(reqs[1].n, 1);
	/* ping: header, magic and seq 0 as the kernel's; rpyid and time aside */
	assert_memory_equal(reqs[0].buf, cap_ping, 24);
	assert_memory_equal(reqs[0].buf + 32, cap_ping + 32, 8);
	rpyid = ul_get_le64(reqs[0].buf + 24);
	assert_true(rpyid >> 48 != 0);                        /* seconds << 48, as srpc_next_id() */
	for (int i = 56; i < SRPC_MSG_SIZE; i++)
		assert_int_equal(reqs[0].buf[i], 0);
	/* brw: header, rw, len, flags; bulkid = rpyid + 1 as the kernel's */
	assert_memory_equal(reqs[1].buf, cap_brw, 24);
	assert_memory_equal(reqs[1].buf + 40, cap_brw + 40, 12);
	assert_int_equal(ul_get_le64(reqs[1].buf + 32), ul_get_le64(reqs[1].buf + 24) + 1);
	for (int i = 52; i < SRPC_MSG_SIZE; i++)
		assert_int_equal(reqs[1].buf[i], 0);

	/* both wait for replies that never come: the batch is active, test 1
	 * has its one unit running; a forced STOP ends it mid-run */
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 2);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 1, 0).active, 1);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_STOP, 0, 1).status, 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 0);
	st = stat(e, &e->a_nid);
	assert_int_equal(st.rpc.rpcs_sent, 2);
	assert_int_equal(st.fw.ping_errors, 0);                /* aborted by a stop: not counted */
	assert_int_equal(st.fw.brw_errors, 0);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.client_rpcs, 2);
}

/* A long run against B, stopped mid-way (without force: each unit ends its RPC). */
static void test_client_stop(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t b = { .nid = e->b_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = (uint32_t)-1, .concur = 4 };
	struct ulnet_selftest_stats sa;
	int i;

	mksn(e, &e->a_nid);
	mksn(e, &e->b_nid);
	assert_int_equal(add_test(e, &e->b_nid, &ping, 0, NULL, 0, 0), 0);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &b, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	/* loop -1 runs until stopped */
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 1);
	/* a test add to an active batch: EBUSY */
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &b, 1, 0), EBUSY);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_STOP, 0, 0).status, 0);
	for (i = 0; i < 50; i++)
		if (batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active == 0)
			break;
	assert_true(i < 50);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_true(sa.client_rpcs > 4);
	assert_int_equal(sa.client_errors, 0);
	assert_int_equal(sa.ping_errors, 0);
}

/* A destination that does not exist: errors counted; with stop-on-error
 * the batch ends after the first failure of each unit. */
static void test_client_errors(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t none = { .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 5, .concur = 1 };
	struct test_spec ping_soe = { .service = SRPC_SERVICE_PING, .loop = 1000, .concur = 2, .stop_onerr = 1 };
	struct ulnet_selftest_stats sa;
	struct srpc_stat_reply st;

	memlnd_nid(99, &none.nid);
	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &none, 1, 0), 0);
	run_to_end(e);
	st = stat(e, &e->a_nid);
	assert_int_equal(st.fw.ping_errors, 5);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.client_rpcs, 5);
	assert_int_equal(sa.client_errors, 5);
	assert_non_null(strstr(logs, "cannot ping 99@gni"));

	/* stop on error added to the batch: 2 units, one failed RPC each
	 * (the first test runs its 5 again) */
	assert_int_equal(add_test(e, &e->a_nid, &ping_soe, 1, &none, 1, 0), 0);
	run_to_end(e);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.client_rpcs, 5 + 5 + 2);
	st = stat(e, &e->a_nid);
	assert_int_equal(st.fw.ping_errors, 5 + 5 + 2);
	assert_int_equal(st.rpc.rpcs_sent, 0);         /* nothing could go */
}

/* A destination that takes the request and never replies: the RPC times
 * out after rpc_timeout (64 s). */
static void test_client_timeout(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t c = { .nid = e->con_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 1, .concur = 1 };
	struct ulnet_selftest_stats sa;
	struct srpc_stat_reply st;

	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &c, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	pump(e);
	fake_now += 30 * 1000000000ULL;
	pump(e);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 1);
	fake_now += 40 * 1000000000ULL;
	pump(e);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 0);
	st = stat(e, &e->a_nid);
	assert_int_equal(st.rpc.rpcs_expired, 1);
	assert_int_equal(st.fw.ping_errors, 1);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.rpcs_expired, 1);
	assert_non_null(strstr(logs, "timed out"));
}

/* A session that expires with no console request ends by itself (the
 * agent's timer), and aborts its client tests then, even with no RPC
 * timeout to end them. */
static void test_session_expiry_aborts_client(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t c = { .nid = e->con_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 1, .concur = 1 };
	struct ulnet_selftest_conf conf = { .session_timeout = 10, .rpc_timeout = -1 };
	struct ulnet_selftest_stats sa;

	ulnet_selftest_stop(e->sta);
	assert_int_equal(ulnet_selftest_start(e->a, &conf, &e->sta), 0);
	mksn(e, &e->a_nid);
	/* the console takes the ping and never answers */
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &c, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	pump(e);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.rpcs_sent, 1);
	assert_int_equal(sa.client_rpcs, 0);
	fake_now += 11 * 1000000000ULL;
	pump(e);
	pump(e);
	assert_non_null(strstr(logs, "session expired"));
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.session_active, 0);
	assert_int_equal(sa.client_rpcs, 1);   /* aborted with the session */
	assert_int_equal(sa.rpcs_expired, 0);
}

/* A client test whose destination is the node itself, which serves no ping
 * test: its request goes through 0@lo and waits, parked on the node's own
 * lazy portal 50, so the request MD stays busy. The agent's stop must still
 * end (it drops what its lazy portals hold before waiting for its
 * operations); it waited for that request instead, then gave up and leaked
 * the agent (found by fuzz_selftest_agent). With the test clock standing
 * still the old code never returns: CTest's timeout reports it. */
static void test_client_self_stop(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t self = { .nid = e->a_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 1, .concur = 1 };
	struct ulnet_selftest_stats sa;

	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &self, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	pump(e);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	/* its request waits on portal 50: not sent (no SEND event) nor ended */
	assert_int_equal(sa.rpcs_sent, 0);
	assert_int_equal(sa.client_rpcs, 0);
	ulnet_selftest_stop(e->sta);
	e->sta = NULL;
	assert_null(strstr(logs, "leaking the agent"));
}

/* A client test that loops forever (lst's default) against a destination
 * the node cannot reach: each RPC fails inside ulnet_put() and the unit
 * posts its next one at once. The loop runs work posted during a pass on
 * its next turn, so ulnet_progress() returns and the STOP gets through; it
 * ran it in the same pass before, for ever (found by fuzz_selftest_agent).
 * With the old loop the RUN's pump never returns: CTest's timeout reports
 * it. */
static void test_client_unreachable_forever(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t far = { .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = UINT32_MAX, .concur = 1 };
	struct ulnet_selftest_stats sa;

	ulnet_nid_from_ipv4(0x0a090909, ulnet_mknet(ULNET_LND_TCP, 0), &far.nid);
	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &far, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	for (int i = 0; i < 10; i++)
		assert_true(ulnet_progress(e->a, 0) >= 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_STOP, 0, 1).status, 0);
	pump(e);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 0, 0).active, 0);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_true(sa.client_rpcs > 10);
	assert_int_equal(sa.client_errors, sa.client_rpcs);
}

/* Malformed destination lists: too many (EINVAL, as the kernel), a list
 * shorter than ndest says (dropped, as the kernel's failed bulk: no reply),
 * none at all (ndest 0: EINVAL). Each logged with the console's NID. */
static void test_client_bad_lists(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t b = { .nid = e->b_nid, .pid = ULNET_PID_LUSTRE };
	ulnet_process_id_t two[8] = { b, b, b, b, b, b, b, b };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 1, .concur = 1 };
	struct test_spec badbrw = { .service = SRPC_SERVICE_BRW, .loop = 1, .concur = 1, .opc = 7,
				    .flags = LST_BRW_CHECK_FULL, .len = 4096 };
	struct test_spec bigconc = { .service = SRPC_SERVICE_PING, .loop = 1, .concur = 1024 };

	mksn(e, &e->a_nid);
	logs[0] = '\0';
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, two, 256 * 341 + 1, 12), EINVAL);
	assert_non_null(strstr(logs, "from console 11@gni"));
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &b, 0, 0), EINVAL);
	logs[0] = '\0';
	/* ndest 2, 18 bytes given */
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, two, 2, 18), -1);
	assert_non_null(strstr(logs, "destination list of a test from console 11@gni"));
	/* bad brw parameters: EINVAL (brw_client_init) */
	assert_int_equal(add_test(e, &e->a_nid, &badbrw, 1, &b, 1, 0), EINVAL);
	/* more units than we preallocate */
	assert_int_equal(add_test(e, &e->a_nid, &bigconc, 1, two, 8, 0), ENOMEM);
	/* nothing was added: QUERY of test 1 is ENOENT */
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_QUERY, 1, 0).status, ENOENT);
	/* the node is fine: a good one works */
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &b, 1, 0), 0);
}

/* The session ends while a test runs (a new console forces it): the test is
 * stopped and freed; stopping the agent with a test running is clean. */
static void test_client_session_end(void **state)
{
	struct env *e = *state;
	ulnet_process_id_t c = { .nid = e->con_nid, .pid = ULNET_PID_LUSTRE };
	struct test_spec ping = { .service = SRPC_SERVICE_PING, .loop = 3, .concur = 3 };
	struct srpc_msg m, r;
	struct ulnet_selftest_stats sa;

	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &c, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	pump(e);
	build(&m, SRPC_MSG_RMSN_REQST);
	m.body.rmsn_reqst.sid = SID;
	assert_true(call(e, &e->a_nid, &m, &r));
	assert_int_equal(r.body.rmsn_reply.status, 0);
	pump(e);
	assert_int_equal(ulnet_selftest_stats_get(e->sta, &sa), 0);
	assert_int_equal(sa.client_rpcs, 3);
	assert_int_equal(sa.session_active, 0);
	/* again, and this time the agent stops under it */
	mksn(e, &e->a_nid);
	assert_int_equal(add_test(e, &e->a_nid, &ping, 1, &c, 1, 0), 0);
	assert_int_equal(batch(e, &e->a_nid, SRPC_BATCH_OPC_RUN, 0, 0).status, 0);
	pump(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_client_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_request_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_expiry_aborts_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_bad_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_self_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_unreachable_forever, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_session_end, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
