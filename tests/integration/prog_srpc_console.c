/* SPDX-License-Identifier: MIT */
/*
 * prog_srpc_console.c - a minimal lst console for the end-to-end tests: over
 * tcp it makes a session on a target node, adds server ping and brw tests,
 * sends pings and brw write (check=full) and read (check=simple, the
 * pattern checked here), asks for the stats and removes the session, the
 * way the kernel console does (SRPC requests to portals 50/51, replies and
 * bulk on portal 52). Every wait is bounded.
 *
 *   prog_srpc_console NID PORT TARGET_NID [CLIENT_NID]
 *
 * With CLIENT_NID (another node running the agent) it also makes that node
 * a test client: a ping test (loop 4, concurrency 2) and a brw write test
 * (check=full) whose destination is TARGET_NID, runs the batch, queries it
 * until it ends (20 s) and checks the client's STAT (requests sent, no
 * errors), as `lst add_test --from` does.
 *
 * Prints one line per RPC; exit 0 if every reply is what the kernel server
 * would send, 1 otherwise (at once if no session can be made: 5 s).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "selftest/srpc_wire.h"
#include "ulnet/ulnet.h"
#include "util/util_bytes.h"

static ulnet_t *ln;
static ulnet_process_id_t target, node;   /* node: where framework RPCs go */
static uint64_t next_id = 0x5e1f000000000001ULL;
static int failures;

struct wait {
	volatile int done;
	uint32_t mlength;
};

static void ev_cb(const struct ulnet_event *ev)
{
	struct wait *w = ev->md_user_ptr;

	if (!w)
		return;
	if (ev->type == ULNET_EVENT_PUT || ev->type == ULNET_EVENT_GET) {
		w->mlength = ev->mlength;
		__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* per RPC; generous, CI runs it under ASan beside other tests;
 * SRPC_CONSOLE_WAIT_MS shortens it where no answer is the expected one */
static int wait_ms = 20000;

static int wait_for(struct wait *w, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 1000000 };

		if (now_ms() > end)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static const ulnet_process_id_t any_id = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						    .addr = { 0xff, 0xff, 0xff, 0xff } },
					   .pid = ULNET_PID_ANY };

static int post52(uint64_t bits, void *buf, size_t len, unsigned ops, struct wait *w, ulnet_handle_t *meh)
{
	struct ulnet_md md = { .start = buf, .length = len, .threshold = 1, .options = ops,
			       .user_ptr = w, .handler = ev_cb };
	ulnet_handle_t mdh;
	int rc = ulnet_me_attach(ln, SRPC_RDMA_PORTAL, any_id, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, meh);

	return rc ? rc : ulnet_md_attach(ln, *meh, &md, ULNET_UNLINK, &mdh);
}

/* One RPC; `rep` gets the reply. */
static int rpc(unsigned service, struct srpc_msg *m, struct srpc_msg *rep)
{
	static uint8_t req[SRPC_MSG_SIZE], buf[SRPC_MSG_SIZE];
	struct wait w = { 0 };
	struct ulnet_md md = { .start = req, .length = SRPC_MSG_SIZE, .threshold = 1, .handler = ev_cb };
	ulnet_handle_t me, mdh;
	int rc;

	m->version = SRPC_MSG_VERSION;
	m->ses_feats = LST_FEAT_BULK_LEN;
	srpc_msg_encode(m, req, sizeof(req));
	rc = post52(ul_get_le64(req + SRPC_HDR_SIZE), buf, sizeof(buf), ULNET_MD_OP_PUT, &w, &me);
	if (!rc)
		rc = ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh);
	if (!rc)
		rc = ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ,
			       service < SRPC_FRAMEWORK_SERVICE_MAX_ID ? node : target,
			       service < SRPC_FRAMEWORK_SERVICE_MAX_ID ? SRPC_FRAMEWORK_REQUEST_PORTAL
								       : SRPC_REQUEST_PORTAL,
			       service, 0, 0);
	if (!rc)
		rc = wait_for(&w, wait_ms);
	if (!rc && (w.mlength != SRPC_MSG_SIZE || srpc_msg_decode(buf, sizeof(buf), rep) ||
		    rep->type != m->type + 1))
		rc = -EPROTO;
	if (rc)
		(void)ulnet_me_unlink(ln, me);
	return rc;
}

/* MKSN of session `sid` (named "e2e"): rpc()'s result, the reply in `r`. */
static int make_session(struct srpc_sid sid, struct srpc_msg *r)
{
	struct srpc_msg m;

	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_MKSN_REQST;
	m.body.mksn_reqst.rpyid = next_id++;
	m.body.mksn_reqst.sid = sid;
	snprintf(m.body.mksn_reqst.name, sizeof(m.body.mksn_reqst.name), "e2e");
	return rpc(SRPC_SERVICE_MAKE_SESSION, &m, r);
}

static void check(const char *what, int ok)
{
	printf("srpc console: %s: %s\n", what, ok ? "ok" : "FAILED");
	if (!ok)
		failures++;
}

/* The test-client role on `client`: ping and brw write tests towards the
 * target. Returns 0 or 1 (each step printed). */
static int client_role(const char *client, struct srpc_sid sid)
{
	static uint8_t list[SRPC_ID_PACKED_SIZE];
	struct srpc_msg m, r;
	struct wait lw;
	ulnet_nid4_t t4;
	ulnet_handle_t me;
	int rc, i, before = failures;

	if (ulnet_nid_parse(client, &node.nid, NULL)) {
		check("client NID", 0);
		return 1;
	}
	node.pid = ULNET_PID_LUSTRE;
	rc = make_session(sid, &r);
	check("client: make session", !rc && r.body.mksn_reply.status == 0);
	ulnet_nid_to_nid4(&target.nid, &t4);
	ul_put_le64(list, t4);
	ul_put_le32(list + 8, ULNET_PID_LUSTRE);
	for (uint32_t svc = SRPC_SERVICE_BRW; svc <= SRPC_SERVICE_PING && !rc; svc++) {
		memset(&m, 0, sizeof(m));
		m.type = SRPC_MSG_TEST_REQST;
		m.body.tes_reqst.rpyid = next_id++;
		m.body.tes_reqst.bulkid = next_id++;
		m.body.tes_reqst.sid = sid;
		m.body.tes_reqst.bid = 2;
		m.body.tes_reqst.service = svc;
		m.body.tes_reqst.loop = 4;
		m.body.tes_reqst.concur = 2;
		m.body.tes_reqst.is_client = 1;
		m.body.tes_reqst.ndest = 1;
		if (svc == SRPC_SERVICE_BRW) {
			m.body.tes_reqst.param.kind = SRPC_TEST_PARAM_BULK_V1;
			m.body.tes_reqst.param.blk_opc = LST_BRW_WRITE;
			m.body.tes_reqst.param.blk_flags = LST_BRW_CHECK_FULL;
			m.body.tes_reqst.param.blk_len = 16384;
		} else {
			m.body.tes_reqst.param.kind = SRPC_TEST_PARAM_PING;
		}
		memset(&lw, 0, sizeof(lw));
		rc = post52(m.body.tes_reqst.bulkid, list, sizeof(list), ULNET_MD_OP_GET, &lw, &me);
		if (!rc)
			rc = rpc(SRPC_SERVICE_TEST, &m, &r);
		check(svc == SRPC_SERVICE_PING ? "client: add ping client test" : "client: add brw client test",
		      !rc && r.body.tes_reply.status == 0 && lw.done);
	}
	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_BATCH_REQST;
	m.body.bat_reqst.sid = sid;
	m.body.bat_reqst.bid = 2;
	m.body.bat_reqst.opc = SRPC_BATCH_OPC_RUN;
	m.body.bat_reqst.rpyid = next_id++;
	rc = rpc(SRPC_SERVICE_BATCH, &m, &r);
	check("client: run", !rc && r.body.bat_reply.status == 0);
	for (i = 0; i < 200 && !rc; i++) {
		struct timespec ts = { 0, 100000000 };

		m.body.bat_reqst.opc = SRPC_BATCH_OPC_QUERY;
		m.body.bat_reqst.rpyid = next_id++;
		rc = rpc(SRPC_SERVICE_BATCH, &m, &r);
		if (rc || r.body.bat_reply.active == 0)
			break;
		nanosleep(&ts, NULL);
	}
	check("client: the batch ends", !rc && i < 200);
	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_STAT_REQST;
	m.body.stat_reqst.rpyid = next_id++;
	m.body.stat_reqst.sid = sid;
	rc = rpc(SRPC_SERVICE_QUERY_STAT, &m, &r);
	/* 2 tests x loop 4 x concurrency 2 x 1 destination */
	printf("srpc console: client stat: sent %u, errors %u, brw errors %u, ping errors %u\n",
	       r.body.stat_reply.rpc.rpcs_sent, r.body.stat_reply.rpc.errors, r.body.stat_reply.fw.brw_errors,
	       r.body.stat_reply.fw.ping_errors);
	check("client: stat", !rc && r.body.stat_reply.status == 0 && r.body.stat_reply.rpc.rpcs_sent == 16 &&
				      r.body.stat_reply.fw.brw_errors == 0 && r.body.stat_reply.fw.ping_errors == 0);
	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_RMSN_REQST;
	m.body.rmsn_reqst.rpyid = next_id++;
	m.body.rmsn_reqst.sid = sid;
	rc = rpc(SRPC_SERVICE_REMOVE_SESSION, &m, &r);
	check("client: remove session", !rc && r.body.rmsn_reply.status == 0);
	return failures != before;
}

int main(int argc, char **argv)
{
	struct ulnet_ni_conf c = { 0 };
	struct srpc_msg m, r;
	struct srpc_sid sid;
	ulnet_nid4_t nid4;
	static uint8_t bulk[65536];
	struct wait bw;
	ulnet_handle_t me;
	int rc;

	if (getenv("SRPC_CONSOLE_WAIT_MS"))
		wait_ms = atoi(getenv("SRPC_CONSOLE_WAIT_MS"));
	if (wait_ms <= 0 || wait_ms > 120000)
		wait_ms = 20000;
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: prog_srpc_console NID PORT TARGET_NID [CLIENT_NID]\n");
		return 2;
	}
	if (ulnet_create(NULL, &ln) || ulnet_nid_parse(argv[1], &c.nid, NULL) ||
	    ulnet_nid_parse(argv[3], &target.nid, NULL)) {
		fprintf(stderr, "prog_srpc_console: bad NID or no instance\n");
		return 2;
	}
	target.pid = ULNET_PID_LUSTRE;
	node = target;
	c.accept_port = (uint16_t)atoi(argv[2]);
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "all");
	rc = ulnet_ni_add(ln, &c);
	if (rc) {
		fprintf(stderr, "prog_srpc_console: ni add: %s\n", ulnet_strerror(rc));
		return 1;
	}
	ulnet_nid_to_nid4(&c.nid, &nid4);
	sid = (struct srpc_sid){ nid4, (int64_t)now_ms() };

	rc = make_session(sid, &r);
	check("make session", !rc && r.body.mksn_reply.status == 0 && r.body.mksn_reply.sid.stamp == sid.stamp);
	if (failures) {         /* no agent there: the rest would only time out */
		ulnet_destroy(ln);
		printf("srpc console: no session (%s)\n", rc ? ulnet_strerror(rc) : "refused");
		return 1;
	}

	for (uint32_t svc = SRPC_SERVICE_BRW; svc <= SRPC_SERVICE_PING; svc++) {
		memset(&m, 0, sizeof(m));
		m.type = SRPC_MSG_TEST_REQST;
		m.body.tes_reqst.rpyid = next_id++;
		m.body.tes_reqst.sid = sid;
		m.body.tes_reqst.bid = 1;
		m.body.tes_reqst.service = svc;
		m.body.tes_reqst.loop = 1;
		m.body.tes_reqst.concur = 1;
		m.body.tes_reqst.param.kind = SRPC_TEST_PARAM_RAW;
		rc = rpc(SRPC_SERVICE_TEST, &m, &r);
		check(svc == SRPC_SERVICE_PING ? "add ping server test" : "add brw server test",
		      !rc && r.body.tes_reply.status == 0);
	}
	for (uint32_t seq = 0; seq < 3; seq++) {
		memset(&m, 0, sizeof(m));
		m.type = SRPC_MSG_PING_REQST;
		m.body.ping_reqst.rpyid = next_id++;
		m.body.ping_reqst.magic = LST_PING_TEST_MAGIC;
		m.body.ping_reqst.seq = seq;
		rc = rpc(SRPC_SERVICE_PING, &m, &r);
		check("ping", !rc && r.body.ping_reply.status == 0 && r.body.ping_reply.seq == seq &&
				      r.body.ping_reply.magic == LST_PING_TEST_MAGIC);
	}
	/* brw write 64 KiB, check=full: the target GETs from us */
	for (size_t i = 0; i < sizeof(bulk); i += 8)
		ul_put_le64(bulk + i, LST_BRW_MAGIC);
	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_BRW_REQST;
	m.body.brw_reqst.rpyid = next_id++;
	m.body.brw_reqst.bulkid = next_id++;
	m.body.brw_reqst.rw = LST_BRW_WRITE;
	m.body.brw_reqst.len = sizeof(bulk);
	m.body.brw_reqst.flags = LST_BRW_CHECK_FULL;
	memset(&bw, 0, sizeof(bw));
	rc = post52(m.body.brw_reqst.bulkid, bulk, sizeof(bulk), ULNET_MD_OP_GET, &bw, &me);
	if (!rc)
		rc = rpc(SRPC_SERVICE_BRW, &m, &r);
	/* our GET event comes when our REPLY's send completes, i.e. with the
	 * target's ZC-ACK, which may arrive after its brw reply (another
	 * connection): wait for it */
	if (!rc)
		rc = wait_for(&bw, wait_ms);
	check("brw write 64k check=full", !rc && r.body.brw_reply.status == 0 && bw.done);
	/* brw read 8 KiB, check=simple: the target PUTs the pattern */
	memset(bulk, 0x55, sizeof(bulk));
	m.body.brw_reqst.rpyid = next_id++;
	m.body.brw_reqst.bulkid = next_id++;
	m.body.brw_reqst.rw = LST_BRW_READ;
	m.body.brw_reqst.len = 8192;
	m.body.brw_reqst.flags = LST_BRW_CHECK_SIMPLE;
	memset(&bw, 0, sizeof(bw));
	rc = post52(m.body.brw_reqst.bulkid, bulk, 8192, ULNET_MD_OP_PUT, &bw, &me);
	if (!rc)
		rc = rpc(SRPC_SERVICE_BRW, &m, &r);
	/* the bulk PUT and the reply travel on different connections */
	if (!rc)
		rc = wait_for(&bw, wait_ms);
	check("brw read 8k check=simple", !rc && r.body.brw_reply.status == 0 && bw.mlength == 8192 &&
					      ul_get_le64(bulk) == LST_BRW_MAGIC &&
					      ul_get_le64(bulk + 4088) == LST_BRW_MAGIC &&
					      ul_get_le64(bulk + 4096) == LST_BRW_MAGIC &&
					      ul_get_le64(bulk + 8184) == LST_BRW_MAGIC);

	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_STAT_REQST;
	m.body.stat_reqst.rpyid = next_id++;
	m.body.stat_reqst.sid = sid;
	rc = rpc(SRPC_SERVICE_QUERY_STAT, &m, &r);
	/* mksn, 2 tests, 3 pings, 2 brw, this stat */
	check("stat", !rc && r.body.stat_reply.status == 0 && r.body.stat_reply.rpc.rpcs_rcvd == 9 &&
			      r.body.stat_reply.rpc.bulk_get == 65536 && r.body.stat_reply.rpc.bulk_put == 8192 &&
			      r.body.stat_reply.lnet.recv_count > 0);

	if (argc == 5)
		(void)client_role(argv[4], sid);   /* its checks count the failures */

	node = target;
	memset(&m, 0, sizeof(m));
	m.type = SRPC_MSG_RMSN_REQST;
	m.body.rmsn_reqst.rpyid = next_id++;
	m.body.rmsn_reqst.sid = sid;
	rc = rpc(SRPC_SERVICE_REMOVE_SESSION, &m, &r);
	check("remove session", !rc && r.body.rmsn_reply.status == 0 &&
					r.body.rmsn_reply.sid.nid == SRPC_NID4_ANY);
	ulnet_destroy(ln);
	printf("srpc console: %d failures\n", failures);
	return failures ? 1 : 0;
}
