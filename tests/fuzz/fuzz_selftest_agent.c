/* SPDX-License-Identifier: MIT */
/*
 * fuzz_selftest_agent.c - the selftest agent's state machine
 * (src/selftest/: agent.c, srpc_service.c, sfw_session.c, sfw_client.c,
 * brw_test.c): sessions, batches, server and client tests, brw/ping
 * services, bulk transfers, timeouts, driven by SRPC requests a "console"
 * node sends through memlnd.
 *
 * Two manual-progress nodes on a fake clock, joined by memlnd: the console
 * (11@gni) and the server (12@gni) running the agent. The input is a
 * sequence of operations, the first byte of each choosing it:
 *   send a request (MKSN/RMSN/BATCH/STAT/TEST/DEBUG/BRW/PING/JOIN, built
 *   from the input field by field with a few session ids, batch ids,
 *   services, loops, concurrencies, destinations, brw sizes and flags, so
 *   that the requests mean something to each other; optionally one damaged
 *   byte, a short length, or other match bits), after posting the
 *   console's reply buffer and, for brw and client test adds, its bulk
 *   buffer (the destination list names the server itself or the console);
 *   deliver some queued messages; make memlnd drop or fail the next
 *   message of a type; move the clock and progress (session and RPC
 *   timeouts).
 * At the end everything queued is delivered (bounded: a test looping
 * forever keeps sending), the agent is stopped and the nodes destroyed.
 * Properties: no crash, no UB, no leak (ASan), and the counters stay sane.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlnd.h"
#include "selftest/srpc_wire.h"
#include "ulnet/selftest.h"
#include "ulnet/ulnet.h"
#include "util/util_bytes.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BUFS 64

static struct {
	struct memlnd_net *net;
	ulnet_t *con, *srv;
	ulnet_nid_t con_nid, srv_nid;
	ulnet_selftest_t *st;
	uint64_t now, next_id;
	bool ticking;                /* the clock moves 1 ms per read */
	void *bufs[MAX_BUFS];        /* console MD buffers: freed after destroy */
	int nbufs;
} fz;

/* A count or size from the input: values past 1 Mi stay as they are (the
 * agent must refuse them), the others are kept up to `cap`, so that a test
 * looping forever on its own node does a bounded amount of work per turn
 * (1 MiB brw fills and checks under coverage instrumentation made single
 * inputs take seconds, and the corpus drifted to them). */
static uint32_t capped(struct in *in, uint32_t cap)
{
	uint32_t v = u32(in);

	return v > (1u << 20) ? v : v % (cap + 1);
}

static uint64_t fz_clock(void *arg)
{
	(void)arg;
	if (fz.ticking)
		fz.now += 1000000;
	return fz.now;
}

static void fz_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	if (getenv("FUZZ_LOG"))         /* to see what an input does */
		fprintf(stderr, "[%s %d] %s\n", arg ? "srv" : "con", lvl, msg);
}

static void nop_ev(const struct ulnet_event *ev)
{
	(void)ev;
}

static void *buf_new(size_t len)
{
	void *b;

	if (fz.nbufs == MAX_BUFS)
		return NULL;
	b = calloc(1, len ? len : 1);
	if (b)
		fz.bufs[fz.nbufs++] = b;
	return b;
}

/* An ME + MD on the console's portal 52 (replies, bulk). */
static void post52(uint64_t bits, void *buf, size_t len, unsigned ops)
{
	ulnet_process_id_t any = { ULNET_NID_ANY, ULNET_PID_ANY };
	struct ulnet_md md = { .start = buf, .length = len, .threshold = 1,
			       .options = ops | ULNET_MD_TRUNCATE, .handler = nop_ev };
	ulnet_handle_t me, mdh;

	if (ulnet_me_attach(fz.con, SRPC_RDMA_PORTAL, any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER,
			    &me))
		return;
	if (ulnet_md_attach(fz.con, me, &md, ULNET_UNLINK, &mdh))
		ulnet_me_unlink(fz.con, me);
}

static uint64_t nid4_of(const ulnet_nid_t *nid)
{
	ulnet_nid4_t n = 0;

	ulnet_nid_to_nid4(nid, &n);
	return n;
}

static void sid_of(struct in *in, struct srpc_sid *sid)
{
	uint8_t a = u8(in);

	sid->nid = (a & 0x80) ? SRPC_NID4_ANY : nid4_of(&fz.con_nid);
	sid->stamp = 1 + (a & 3);        /* a few sessions */
}

/* The destination list of a client test: packed ids, nid4 + pid. */
static void post_dests(struct in *in, uint64_t bulkid, uint32_t ndest)
{
	uint32_t n = ndest > 8 ? 8 : ndest, i;
	size_t len = (size_t)n * SRPC_ID_PACKED_SIZE;
	uint8_t *b;

	if (u8(in) & 1)
		len = len ? len - 1 : 0;     /* a list shorter than ndest says */
	b = buf_new(len ? len : 1);
	if (!b)
		return;
	for (i = 0; i < n && (i + 1) * SRPC_ID_PACKED_SIZE <= len; i++) {
		uint8_t a = u8(in);
		uint64_t nid = (a & 1) ? nid4_of(&fz.con_nid) : nid4_of(&fz.srv_nid);

		ul_put_le64(b + i * SRPC_ID_PACKED_SIZE, nid);
		ul_put_le32(b + i * SRPC_ID_PACKED_SIZE + 8, (a & 2) ? u32(in) : ULNET_PID_LUSTRE);
	}
	post52(bulkid, b, len, ULNET_MD_OP_GET);
}

static void op_request(struct in *in)
{
	static const uint32_t types[] = { SRPC_MSG_MKSN_REQST, SRPC_MSG_RMSN_REQST,
					  SRPC_MSG_BATCH_REQST, SRPC_MSG_STAT_REQST,
					  SRPC_MSG_TEST_REQST, SRPC_MSG_DEBUG_REQST,
					  SRPC_MSG_BRW_REQST, SRPC_MSG_PING_REQST,
					  SRPC_MSG_JOIN_REQST, SRPC_MSG_TEST_REQST };
	uint8_t a = u8(in), b = u8(in);
	struct srpc_msg m;
	uint8_t req[SRPC_MSG_SIZE];
	uint64_t rpyid = fz.next_id, bulkid = fz.next_id + 1;
	unsigned service = 0, portal, len = SRPC_MSG_SIZE;
	uint8_t *rep, *buf;
	struct ulnet_md md;
	ulnet_process_id_t to = { fz.srv_nid, ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	fz.next_id += 2;
	memset(&m, 0, sizeof(m));
	m.version = SRPC_MSG_VERSION;
	m.type = types[a % 10];
	m.ses_feats = (b & 1) ? LST_FEAT_BULK_LEN : (b & 2) ? 0x80 : 0;
	switch (m.type) {
	case SRPC_MSG_MKSN_REQST:
		service = SRPC_SERVICE_MAKE_SESSION;
		m.body.mksn_reqst.rpyid = rpyid;
		sid_of(in, &m.body.mksn_reqst.sid);
		m.body.mksn_reqst.force = (b >> 2) & 1;
		memcpy(m.body.mksn_reqst.name, "fz", 3);
		break;
	case SRPC_MSG_RMSN_REQST:
		service = SRPC_SERVICE_REMOVE_SESSION;
		m.body.rmsn_reqst.rpyid = rpyid;
		sid_of(in, &m.body.rmsn_reqst.sid);
		break;
	case SRPC_MSG_BATCH_REQST:
		service = SRPC_SERVICE_BATCH;
		m.body.bat_reqst.rpyid = rpyid;
		sid_of(in, &m.body.bat_reqst.sid);
		m.body.bat_reqst.bid = (b >> 2) & 3;
		m.body.bat_reqst.opc = (b >> 4) & 3 ? (b >> 4) & 3 : 4;
		m.body.bat_reqst.testidx = (b >> 6) & 3;
		m.body.bat_reqst.arg = u8(in) & 1;
		break;
	case SRPC_MSG_STAT_REQST:
		service = SRPC_SERVICE_QUERY_STAT;
		m.body.stat_reqst.rpyid = rpyid;
		sid_of(in, &m.body.stat_reqst.sid);
		m.body.stat_reqst.type = b >> 4;
		break;
	case SRPC_MSG_TEST_REQST: {
		struct srpc_test_reqst *t = &m.body.tes_reqst;
		uint8_t c = u8(in), d = u8(in);

		service = SRPC_SERVICE_TEST;
		t->rpyid = rpyid;
		t->bulkid = bulkid;
		sid_of(in, &t->sid);
		t->bid = (b >> 2) & 3;
		t->service = (c & 1) ? SRPC_SERVICE_PING : (c & 2) ? SRPC_SERVICE_BRW : c >> 2;
		t->loop = (c & 0x40) ? UINT32_MAX : (uint32_t)(1 + ((c >> 2) & 3));
		t->concur = (c & 0x80) ? capped(in, 16) : (uint32_t)(1 + ((c >> 4) & 1));
		t->is_client = (b >> 4) & 1;
		t->stop_onerr = (b >> 5) & 1;
		t->ndest = (d & 0x80) ? u32(in) : (uint32_t)(d & 3);
		t->param.kind = SRPC_TEST_PARAM_RAW;
		if (t->service == SRPC_SERVICE_PING) {
			ul_put_le32(t->param.raw, u8(in));
			ul_put_le32(t->param.raw + 4, u8(in) & 3);
		} else if (m.ses_feats & LST_FEAT_BULK_LEN) {
			ul_put_le16(t->param.raw, 1 + ((d >> 2) & 1));
			ul_put_le16(t->param.raw + 2, 1 + ((d >> 3) & 3));
			ul_put_le32(t->param.raw + 4, (d & 0x20) ? capped(in, 65536) : (uint32_t)u8(in) * 64);
			ul_put_le32(t->param.raw + 8, (d & 0x40) ? u32(in) : (uint32_t)(u8(in) & 3) * 8);
		} else {
			ul_put_le32(t->param.raw, 1 + ((d >> 2) & 1));
			ul_put_le32(t->param.raw + 4, (d & 0x20) ? capped(in, 16) : (uint32_t)(1 + ((d >> 4) & 1)));
			ul_put_le32(t->param.raw + 8, 1 + ((d >> 5) & 3));
		}
		if (t->is_client)
			post_dests(in, bulkid, t->ndest);
		break;
	}
	case SRPC_MSG_DEBUG_REQST:
		service = SRPC_SERVICE_DEBUG;
		m.body.dbg_reqst.rpyid = rpyid;
		sid_of(in, &m.body.dbg_reqst.sid);
		m.body.dbg_reqst.flags = b >> 4;
		break;
	case SRPC_MSG_BRW_REQST: {
		struct srpc_brw_reqst *r = &m.body.brw_reqst;
		uint8_t c = u8(in);

		service = SRPC_SERVICE_BRW;
		r->rpyid = rpyid;
		r->bulkid = bulkid;
		r->rw = 1 + ((b >> 2) & 1);
		r->len = (c & 0x80) ? u32(in) : (c & 1) ? 4096u * ((c >> 1) & 3) : (uint32_t)(c >> 1) * 8;
		r->flags = 1 + ((b >> 3) & 3);
		if (r->len <= 65536 && (buf = buf_new(r->len))) {
			if (r->rw == LST_BRW_WRITE)
				for (uint32_t i = 0; i + 8 <= r->len; i += 8)
					ul_put_le64(buf + i, (b & 0x40) ? LST_BRW_MAGIC : i);
			post52(bulkid, buf, r->len,
			       r->rw == LST_BRW_WRITE ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT);
		}
		break;
	}
	case SRPC_MSG_PING_REQST:
		service = SRPC_SERVICE_PING;
		m.body.ping_reqst.rpyid = rpyid;
		m.body.ping_reqst.magic = (b & 4) ? u32(in) : LST_PING_TEST_MAGIC;
		m.body.ping_reqst.seq = u8(in);
		break;
	default:
		service = SRPC_SERVICE_JOIN;
		m.body.join_reqst.rpyid = rpyid;
		sid_of(in, &m.body.join_reqst.sid);
		memcpy(m.body.join_reqst.group, "g", 2);
		break;
	}
	if (srpc_msg_encode(&m, req, sizeof(req)) != SRPC_MSG_SIZE)
		return;
	if (b & 0x80) {                    /* damage: a byte, the length, the bits */
		uint8_t c = u8(in);

		if (c & 1)
			req[u8(in) % SRPC_MSG_SIZE] ^= u8(in);
		if (c & 2)
			len = u8(in) % (SRPC_MSG_SIZE + 1);
		if (c & 4)
			service = u8(in) % 16;
	}
	portal = service < SRPC_FRAMEWORK_SERVICE_MAX_ID ? SRPC_FRAMEWORK_REQUEST_PORTAL
							 : SRPC_REQUEST_PORTAL;
	rep = buf_new(SRPC_MSG_SIZE);
	buf = buf_new(len);
	if (!rep || !buf)
		return;
	post52(rpyid, rep, SRPC_MSG_SIZE, ULNET_MD_OP_PUT);
	memcpy(buf, req, len);
	memset(&md, 0, sizeof(md));
	md.start = buf;
	md.length = len;
	md.threshold = 1;
	md.handler = nop_ev;
	if (ulnet_md_bind(fz.con, &md, ULNET_UNLINK, &mdh))
		return;
	ulnet_put(fz.con, NULL, mdh, ULNET_NOACK_REQ, to, portal, service, 0, 0);
}

static void progress(void)
{
	ulnet_progress(fz.con, 0);
	ulnet_progress(fz.srv, 0);
}

static void op_pump(struct in *in)
{
	int n = 1 + (u8(in) & 31);

	while (n-- > 0 && memlnd_pump_one(fz.net))
		;
	progress();
}

static void op_fault(struct in *in)
{
	uint8_t a = u8(in);
	unsigned mask = 1u << (a & 3);   /* ACK, PUT, GET or REPLY */

	if (a & 4)
		memlnd_fail_next(fz.net, 1, mask, -ECONNRESET);
	else
		memlnd_drop_next(fz.net, 1, mask);
}

static void op_time(struct in *in)
{
	uint8_t a = u8(in);

	/* up to ~2 min: past rpc_timeout (64 s) and session_timeout (100 s) */
	fz.now += (uint64_t)(a & 0x7f) * (a & 0x80 ? 1000000000ULL : 10000000ULL);
	progress();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct ulnet_opts o = fuzz_node_opts(fz_clock, fz_log);
	struct ulnet_selftest_stats stats;
	int ops = 0, i;

	memset(&fz, 0, sizeof(fz));
	fz.now = 1000000000ULL;
	fz.next_id = 0x100;
	fz.net = memlnd_net_create();
	if (getenv("FUZZ_LOG"))
		o.log_level = ULNET_LOG_DEBUG;
	if (!fz.net || ulnet_create(&o, &fz.con))
		abort();
	o.log_arg = &fz;
	if (ulnet_create(&o, &fz.srv))
		abort();
	if (memlnd_add_ni(fz.net, fz.con, 11, &fz.con_nid) ||
	    memlnd_add_ni(fz.net, fz.srv, 12, &fz.srv_nid) ||
	    ulnet_selftest_start(fz.srv, NULL, &fz.st))
		abort();

	while (in.n && ops++ < 128) {
		switch (u8(&in) % 8) {
		case 0: case 1: case 2: case 3: op_request(&in); break;
		case 4: case 5: op_pump(&in); break;
		case 6: op_fault(&in); break;
		default: op_time(&in); break;
		}
	}
	for (i = 0; i < 512 && memlnd_pump_one(fz.net); i++)
		;
	if (getenv("FUZZ_LOG")) {
		static struct memlnd_trace_ent tr[64];
		int n = memlnd_trace(fz.net, tr, 64);

		for (i = 0; i < n && i < 64; i++)
			fprintf(stderr, "trace %d: type %u ptl %u bits %#llx len %u verdict %d\n", i,
				tr[i].hdr.type, tr[i].hdr.msg.put.ptl_index,
				(unsigned long long)tr[i].hdr.msg.put.match_bits,
				tr[i].hdr.payload_length, tr[i].verdict);
	}
	if (ulnet_selftest_stats_get(fz.st, &stats) || stats.rpcs_dropped > stats.rpcs_rcvd ||
	    stats.client_errors > stats.client_rpcs)
		abort();
	if (getenv("FUZZ_LOG"))
		fprintf(stderr, "rcvd %u dropped %u ping %u brw %u (check errors %u) sent %u ended %u failed %u\n",
			stats.rpcs_rcvd, stats.rpcs_dropped, stats.ping_reqs, stats.brw_reqs,
			stats.brw_check_errors, stats.rpcs_sent, stats.client_rpcs, stats.client_errors);
	/* Let every timeout pass (discovery, transactions, RPCs, session),
	 * then the console goes: memlnd fails what is queued to or from it,
	 * so the agent's operations all end and its stop need not wait for a
	 * delivery nobody would pump. The clock then ticks on its own: a stop
	 * that still waits gives up after its 5 s and leaks the agent, which
	 * ASan reports. */
	for (int k = 0; k < 4; k++) {
		fz.now += 100 * 1000000000ULL;
		progress();
		for (i = 0; i < 256 && memlnd_pump_one(fz.net); i++)
			;
	}
	ulnet_destroy(fz.con);
	fz.ticking = true;
	ulnet_selftest_stop(fz.st);
	ulnet_destroy(fz.srv);
	memlnd_net_destroy(fz.net);
	for (i = 0; i < fz.nbufs; i++)
		free(fz.bufs[i]);
	return 0;
}
