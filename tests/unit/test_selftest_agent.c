/* SPDX-License-Identifier: MIT */
/*
 * test_selftest_agent.c - the SRPC agent (ulnet/selftest.h) on two
 * instances joined by memlnd: a "console" sends the kernel console's
 * requests of lst.pcap byte for byte and the agent's replies are compared
 * with the kernel server's, byte for byte (STAT: all but the session's
 * running time and the LNet counters, which are this node's own); brw bulk
 * in both directions with the kernel's patterns; then the error paths:
 * busy/forced sessions, unknown sessions, features, version, bad magic and
 * type and length (dropped, one log line), brw data corruption, the
 * session timeout, start/stop (the test-client role: test_selftest_client.c).
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

struct cap_msg {
	int request;            /* 1: console -> server */
	unsigned portal;
	uint64_t match;
	const char *hex;
};

/* Every SRPC message of lst.pcap in capture order: console requests (to .12)
 * and the kernel server's replies (from .12); 160 bytes, trailing zeros left out. */
static const struct cap_msg lst_msgs[] = {
	{ 1, 51, 0x1ULL,
	  "0df0b0ee01000000000000000000000000000000010000000100000000004b07"
	  "0b4da8c0000002001ac9000000000000000000006c61627365737300"
	},
	{ 0, 52, 0x74b000000000001ULL,
	  "0df0b0ee0100000001000000000000000000000001000000000000000b4da8c0"
	  "000002001ac900000000000064000000"
	},
	{ 1, 51, 0x4ULL,
	  "0df0b0ee01000000080000000000000000000000010000000300000000004b07"
	  "00000000000000000b4da8c0000002001ac90000000000000200000000000000"
	  "0c000000010000000100000000010000"
	},
	{ 0, 52, 0x74b000000000003ULL,
	  "0df0b0ee0100000009000000000000000000000001000000000000000b4da8c0"
	  "000002001ac90000"
	},
	{ 1, 50, 0xcULL,
	  "0df0b0ee010000000e0000000000000000000000010000000700000000004b07"
	  "cefabeba000000005307016b0000000019adee0e"
	},
	{ 0, 52, 0x74b000000000007ULL,
	  "0df0b0ee010000000f00000000000000000000000100000000000000cefabeba"
	},
	{ 1, 50, 0xcULL,
	  "0df0b0ee010000000e0000000000000000000000010000000800000000004b07"
	  "cefabeba010000005307016b00000000e057340f"
	},
	{ 0, 52, 0x74b000000000008ULL,
	  "0df0b0ee010000000f00000000000000000000000100000000000000cefabeba"
	  "01000000"
	},
	{ 1, 50, 0xcULL,
	  "0df0b0ee010000000e0000000000000000000000010000000900000000004b07"
	  "cefabeba020000005307016b00000000966f500f"
	},
	{ 0, 52, 0x74b000000000009ULL,
	  "0df0b0ee010000000f00000000000000000000000100000000000000cefabeba"
	  "02000000"
	},
	{ 1, 50, 0xcULL,
	  "0df0b0ee010000000e0000000000000000000000010000000a00000000004b07"
	  "cefabeba030000005307016b0000000090fc750f"
	},
	{ 0, 52, 0x74b00000000000aULL,
	  "0df0b0ee010000000f00000000000000000000000100000000000000cefabeba"
	  "03000000"
	},
	{ 1, 50, 0xcULL,
	  "0df0b0ee010000000e0000000000000000000000010000000b00000000004b07"
	  "cefabeba040000005307016b000000003805880f"
	},
	{ 0, 52, 0x74b00000000000bULL,
	  "0df0b0ee010000000f00000000000000000000000100000000000000cefabeba"
	  "04000000"
	},
	{ 1, 51, 0x4ULL,
	  "0df0b0ee01000000080000000000000000000000010000000f00000000004b07"
	  "00000000000000000b4da8c0000002001ac90000000000000300000000000000"
	  "0b000000010000000100000000010000000002000300000001000000"
	},
	{ 0, 52, 0x74b00000000000fULL,
	  "0df0b0ee0100000009000000000000000000000001000000000000000b4da8c0"
	  "000002001ac90000"
	},
	{ 1, 51, 0x4ULL,
	  "0df0b0ee01000000080000000000000000000000010000001200000000004b07"
	  "00000000000000000b4da8c0000002001ac90000000000000300000000000000"
	  "0b0000000100000001000000000100000000010002000010"
	},
	{ 0, 52, 0x74b000000000012ULL,
	  "0df0b0ee0100000009000000000000000000000001000000000000000b4da8c0"
	  "000002001ac90000"
	},
	{ 1, 50, 0xbULL,
	  "0df0b0ee010000000c0000000000000000000000010000001600000000004b07"
	  "1700000000004b07020000000000010003000000"
	},
	{ 1, 50, 0xbULL,
	  "0df0b0ee010000000c0000000000000000000000010000001800000000004b07"
	  "1900000000004b07010000000010000002000000"
	},
	{ 0, 52, 0x74b000000000018ULL,
	  "0df0b0ee010000000d000000000000000000000001000000"
	},
	{ 1, 50, 0xbULL,
	  "0df0b0ee010000000c0000000000000000000000010000001a00000000004b07"
	  "1b00000000004b07010000000010000002000000"
	},
	{ 0, 52, 0x74b000000000016ULL,
	  "0df0b0ee010000000d000000000000000000000001000000"
	},
	{ 0, 52, 0x74b00000000001aULL,
	  "0df0b0ee010000000d000000000000000000000001000000"
	},
	{ 1, 50, 0xbULL,
	  "0df0b0ee010000000c0000000000000000000000010000001c00000000004b07"
	  "1d00000000004b07020000000000010003000000"
	},
	{ 1, 50, 0xbULL,
	  "0df0b0ee010000000c0000000000000000000000010000001e00000000004b07"
	  "1f00000000004b07010000000010000002000000"
	},
	{ 0, 52, 0x74b00000000001eULL,
	  "0df0b0ee010000000d000000000000000000000001000000"
	},
	{ 0, 52, 0x74b00000000001cULL,
	  "0df0b0ee010000000d000000000000000000000001000000"
	},
	{ 1, 50, 0xbULL,
	  "0df0b0ee010000000c0000000000000000000000010000002000000000004b07"
	  "2100000000004b07020000000000010003000000"
	},
	{ 0, 52, 0x74b000000000020ULL,
	  "0df0b0ee010000000d000000000000000000000001000000"
	},
	{ 1, 51, 0x5ULL,
	  "0df0b0ee01000000060000000000000000000000010000002400000000004b07"
	  "0b4da8c0000002001ac90000"
	},
	{ 0, 52, 0x74b000000000024ULL,
	  "0df0b0ee0100000007000000000000000000000001000000000000000b4da8c0"
	  "000002001ac90000000000008720000000000000000000000000000000000000"
	  "0000000000000000100000000000000000000000000003000000000000300000"
	  "0000000000000000020000000000000019000000170000000000000000000000"
	  "f039000000000000300a0300"
	},
	{ 1, 51, 0x5ULL,
	  "0df0b0ee01000000060000000000000000000000010000002600000000004b07"
	  "0b4da8c0000002001ac90000"
	},
	{ 0, 52, 0x74b000000000026ULL,
	  "0df0b0ee0100000007000000000000000000000001000000000000000b4da8c0"
	  "000002001ac90000000000007a24000000000000000000000000000000000000"
	  "0000000000000000110000000000000000000000000003000000000000300000"
	  "000000000000000002000000000000001a000000180000000000000000000000"
	  "903a000000000000d00a0300"
	},
	{ 1, 51, 0x5ULL,
	  "0df0b0ee01000000060000000000000000000000010000002a00000000004b07"
	  "0b4da8c0000002001ac90000"
	},
	{ 0, 52, 0x74b00000000002aULL,
	  "0df0b0ee0100000007000000000000000000000001000000000000000b4da8c0"
	  "000002001ac9000000000000f024000000000000000000000000000000000000"
	  "0000000000000000120000000000000000000000000003000000000000300000"
	  "000000000000000002000000000000001b000000190000000000000000000000"
	  "303b000000000000700b0300"
	},
	{ 1, 51, 0x2ULL,
	  "0df0b0ee01000000020000000000000000000000010000002b00000000004b07"
	  "0b4da8c0000002001ac90000"
	},
	{ 0, 52, 0x74b00000000002bULL,
	  "0df0b0ee010000000300000000000000000000000100000000000000ffffffff"
	  "ffffffffffffffffffffffff"
	},
};
#define N_LST (int)(sizeof(lst_msgs) / sizeof(lst_msgs[0]))

static void load(const char *hex, uint8_t out[SRPC_MSG_SIZE])
{
	size_t n = strlen(hex) / 2;

	assert_true(n <= SRPC_MSG_SIZE);
	memset(out, 0, SRPC_MSG_SIZE);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/* --- the two nodes ------------------------------------------------------------- */

struct env {
	struct memlnd_net *net;
	ulnet_t *con, *srv;
	ulnet_nid_t con_nid, srv_nid;
	ulnet_selftest_t *st;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	logs[0] = '\0';
	e->net = memlnd_net_create();
	e->con = mk();
	e->srv = mk();
	assert_int_equal(memlnd_add_ni(e->net, e->con, 11, &e->con_nid), 0);
	assert_int_equal(memlnd_add_ni(e->net, e->srv, 12, &e->srv_nid), 0);
	if (ulnet_selftest_start(e->srv, NULL, &e->st) != 0)
		fail_msg("start failed: %s", logs);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	ulnet_selftest_stop(e->st);
	ulnet_destroy(e->con);
	ulnet_destroy(e->srv);
	memlnd_net_destroy(e->net);
	free(e);
	return 0;
}

/* --- console side ----------------------------------------------------------------- */

struct sink {
	uint8_t buf[SRPC_MSG_SIZE];
	int n;                  /* PUT events */
	uint32_t mlength;
};

static void sink_ev(const struct ulnet_event *ev)
{
	struct sink *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT) {
		s->n++;
		s->mlength = ev->mlength;
	}
}

static void nop_ev(const struct ulnet_event *ev)
{
	(void)ev;
}

static const ulnet_process_id_t any_id = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						    .addr = { 0xff, 0xff, 0xff, 0xff } },
					   .pid = ULNET_PID_ANY };

/* An ME + MD on the console's portal 52. */
static ulnet_handle_t post52(struct env *e, uint64_t bits, void *buf, size_t len, unsigned ops,
			     void *user, ulnet_handler_t h)
{
	ulnet_handle_t me, mdh;
	struct ulnet_md md = { .start = buf, .length = len, .threshold = 1, .options = ops,
			       .user_ptr = user, .handler = h };

	assert_int_equal(ulnet_me_attach(e->con, SRPC_RDMA_PORTAL, any_id, bits, 0, ULNET_UNLINK,
					 ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(e->con, me, &md, ULNET_UNLINK, &mdh), 0);
	return me;
}

/* PUT `len` bytes of `req` to the server's `portal` with match bits `mb`. */
static void send_raw(struct env *e, unsigned portal, uint64_t mb, const uint8_t *req, size_t len)
{
	static uint8_t copy[4][SRPC_MSG_SIZE + 16];
	static int next;
	uint8_t *b = copy[next++ % 4];
	ulnet_process_id_t to = { .nid = e->srv_nid, .pid = ULNET_PID_LUSTRE };
	struct ulnet_md md = { .start = b, .length = len, .threshold = 1, .handler = nop_ev };
	ulnet_handle_t mdh;

	memcpy(b, req, len);
	assert_int_equal(ulnet_md_bind(e->con, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(e->con, NULL, mdh, ULNET_NOACK_REQ, to, portal, mb, 0, 0), 0);
}

/* One RPC: post the reply buffer (rpyid from the request), send, deliver
 * everything. Returns whether a reply came; `rep` gets it. */
static bool rpc(struct env *e, const uint8_t req[SRPC_MSG_SIZE], uint8_t rep[SRPC_MSG_SIZE])
{
	static struct sink s;
	struct srpc_msg m;
	unsigned service, portal;
	ulnet_handle_t me;

	assert_int_equal(srpc_msg_decode(req, SRPC_MSG_SIZE, &m), 0);
	memset(&s, 0, sizeof(s));
	me = post52(e, ul_get_le64(req + SRPC_HDR_SIZE), s.buf, sizeof(s.buf), ULNET_MD_OP_PUT, &s, sink_ev);
	switch (m.type) {
	case SRPC_MSG_MKSN_REQST: service = SRPC_SERVICE_MAKE_SESSION; break;
	case SRPC_MSG_RMSN_REQST: service = SRPC_SERVICE_REMOVE_SESSION; break;
	case SRPC_MSG_BATCH_REQST: service = SRPC_SERVICE_BATCH; break;
	case SRPC_MSG_STAT_REQST: service = SRPC_SERVICE_QUERY_STAT; break;
	case SRPC_MSG_TEST_REQST: service = SRPC_SERVICE_TEST; break;
	case SRPC_MSG_DEBUG_REQST: service = SRPC_SERVICE_DEBUG; break;
	case SRPC_MSG_BRW_REQST: service = SRPC_SERVICE_BRW; break;
	default: service = SRPC_SERVICE_PING; break;
	}
	portal = service < SRPC_FRAMEWORK_SERVICE_MAX_ID ? SRPC_FRAMEWORK_REQUEST_PORTAL : SRPC_REQUEST_PORTAL;
	send_raw(e, portal, service, req, SRPC_MSG_SIZE);
	memlnd_pump(e->net);
	if (s.n == 0) {
		(void)ulnet_me_unlink(e->con, me);
		return false;
	}
	assert_int_equal(s.n, 1);
	assert_int_equal(s.mlength, SRPC_MSG_SIZE);
	memcpy(rep, s.buf, SRPC_MSG_SIZE);
	return true;
}

static void fill_pattern(uint8_t *b, uint32_t len, uint32_t flags, uint64_t magic)
{
	for (uint32_t pg = 0; pg < len; pg += 4096) {
		uint32_t plen = len - pg < 4096 ? len - pg : 4096;

		if (flags == LST_BRW_CHECK_FULL)
			for (uint32_t i = 0; i + 8 <= plen; i += 8)
				ul_put_le64(b + pg + i, magic);
		else if (flags == LST_BRW_CHECK_SIMPLE) {
			ul_put_le64(b + pg, magic);
			ul_put_le64(b + pg + plen - 8, magic);
		}
	}
}

/* The console's bulk buffer of a brw request (write: the data the server
 * GETs; read: where it PUTs). */
struct bulk {
	uint8_t data[65536];
	struct sink ev;
};

static void post_bulk(struct env *e, const uint8_t req[SRPC_MSG_SIZE], struct bulk *bk)
{
	struct srpc_msg m;
	const struct srpc_brw_reqst *b = &m.body.brw_reqst;

	assert_int_equal(srpc_msg_decode(req, SRPC_MSG_SIZE, &m), 0);
	assert_true(b->len <= sizeof(bk->data));
	memset(bk, 0, sizeof(*bk));
	if (b->rw == LST_BRW_WRITE) {
		fill_pattern(bk->data, b->len, b->flags, LST_BRW_MAGIC);
		(void)post52(e, b->bulkid, bk->data, b->len, ULNET_MD_OP_GET, &bk->ev, sink_ev);
	} else {
		memset(bk->data, 0x77, sizeof(bk->data));
		(void)post52(e, b->bulkid, bk->data, b->len, ULNET_MD_OP_PUT, &bk->ev, sink_ev);
	}
}

static const uint8_t *find_reply(const uint8_t (*reps)[SRPC_MSG_SIZE], const bool *got, int n, uint64_t rpyid,
				 const uint64_t *ids)
{
	for (int i = 0; i < n; i++)
		if (got[i] && ids[i] == rpyid)
			return reps[i];
	return NULL;
}

/* --- the kernel session, replayed --------------------------------------------------- */

static void test_lst_session(void **state)
{
	struct env *e = *state;
	static uint8_t reps[N_LST][SRPC_MSG_SIZE];
	static struct bulk bulks[N_LST];
	bool got[N_LST] = { 0 };
	uint64_t ids[N_LST] = { 0 };
	int nrep = 0, nreq = 0;
	struct ulnet_selftest_stats stats;

	for (int i = 0; i < N_LST; i++) {
		uint8_t req[SRPC_MSG_SIZE];
		struct srpc_msg m;

		if (!lst_msgs[i].request)
			continue;
		nreq++;
		load(lst_msgs[i].hex, req);
		assert_int_equal(srpc_msg_decode(req, sizeof(req), &m), 0);
		if (m.type == SRPC_MSG_BRW_REQST)
			post_bulk(e, req, &bulks[i]);
		ids[i] = ul_get_le64(req + SRPC_HDR_SIZE);
		got[i] = rpc(e, req, reps[i]);
		assert_true(got[i]);
		if (m.type == SRPC_MSG_BRW_REQST) {
			const struct srpc_brw_reqst *b = &m.body.brw_reqst;

			assert_int_equal(bulks[i].ev.n, b->rw == LST_BRW_READ ? 1 : 0);
			if (b->rw == LST_BRW_READ) {
				/* what the kernel sends for check=simple: the magic at
				 * both ends of each page, in its byte order (the
				 * middle is whatever its page held: 0 when fresh) */
				assert_int_equal(bulks[i].ev.mlength, b->len);
				assert_int_equal(ul_get_le64(bulks[i].data), LST_BRW_MAGIC);
				assert_int_equal(ul_get_le64(bulks[i].data + b->len - 8), LST_BRW_MAGIC);
				for (uint32_t k = 8; k < b->len - 8; k++)
					assert_int_equal(bulks[i].data[k], 0);
			}
		}
	}
	/* every kernel reply, matched by its rpyid */
	for (int i = 0; i < N_LST; i++) {
		uint8_t want[SRPC_MSG_SIZE];
		const uint8_t *have;
		struct srpc_msg m;

		if (lst_msgs[i].request)
			continue;
		nrep++;
		load(lst_msgs[i].hex, want);
		have = find_reply((const uint8_t (*)[SRPC_MSG_SIZE])reps, got, N_LST, lst_msgs[i].match, ids);
		assert_non_null(have);
		assert_int_equal(srpc_msg_decode(want, sizeof(want), &m), 0);
		if (m.type == SRPC_MSG_STAT_REPLY) {
			/* the session's running time and the LNet counters are
			 * this node's own; everything else must be the kernel's,
			 * the SRPC counters included (16 RPCs, bulk bytes) */
			assert_memory_equal(have, want, SRPC_HDR_SIZE + 20);
			assert_memory_equal(have + SRPC_HDR_SIZE + 24, want + SRPC_HDR_SIZE + 24, 76 - 24);
			continue;
		}
		assert_memory_equal(have, want, SRPC_MSG_SIZE);
	}
	assert_int_equal(nreq, 19);
	assert_int_equal(nrep, 19);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &stats), 0);
	assert_int_equal(stats.rpcs_rcvd, 19);
	assert_int_equal(stats.rpcs_dropped, 0);
	assert_int_equal(stats.brw_reqs, 6);
	assert_int_equal(stats.ping_reqs, 5);
	assert_int_equal(stats.brw_check_errors, 0);
	assert_int_equal(stats.bulk_get, 3 * 65536);
	assert_int_equal(stats.bulk_put, 3 * 4096);
	assert_int_equal(stats.session_active, 0);    /* the RMSN ended it */
	assert_string_equal(logs, "");
}

/* --- requests built here -------------------------------------------------------------- */

#define SID ((struct srpc_sid){ 0x00020000c0a84d0bULL, 0xc91a })
#define SID2 ((struct srpc_sid){ 0x00020000c0a84d0cULL, 0x1234 })

static uint64_t next_rpyid = 0x100;

static void build(struct srpc_msg *m, uint32_t type)
{
	memset(m, 0, sizeof(*m));
	m->version = SRPC_MSG_VERSION;
	m->type = type;
	m->ses_feats = LST_FEAT_BULK_LEN;
	/* every request starts with rpyid */
	m->body.mksn_reqst.rpyid = next_rpyid++;
}

static bool call(struct env *e, const struct srpc_msg *m, struct srpc_msg *r)
{
	uint8_t req[SRPC_MSG_SIZE], rep[SRPC_MSG_SIZE];

	assert_int_equal(srpc_msg_encode(m, req, sizeof(req)), SRPC_MSG_SIZE);
	if (!rpc(e, req, rep))
		return false;
	assert_int_equal(srpc_msg_decode(rep, sizeof(rep), r), 0);
	assert_int_equal(r->type, m->type + 1);
	return true;
}

static uint32_t mksn(struct env *e, struct srpc_sid sid, int force, const char *name, struct srpc_msg *r)
{
	struct srpc_msg m;

	build(&m, SRPC_MSG_MKSN_REQST);
	m.body.mksn_reqst.sid = sid;
	m.body.mksn_reqst.force = (uint32_t)force;
	snprintf(m.body.mksn_reqst.name, sizeof(m.body.mksn_reqst.name), "%s", name);
	assert_true(call(e, &m, r));
	return r->body.mksn_reply.status;
}

static uint32_t add_test(struct env *e, struct srpc_sid sid, uint32_t service, int is_client)
{
	struct srpc_msg m, r;

	build(&m, SRPC_MSG_TEST_REQST);
	m.body.tes_reqst.sid = sid;
	m.body.tes_reqst.bid = 7;
	m.body.tes_reqst.service = service;
	m.body.tes_reqst.loop = 1;
	m.body.tes_reqst.concur = 1;
	m.body.tes_reqst.is_client = (uint8_t)is_client;
	m.body.tes_reqst.ndest = is_client ? 1 : 0;
	m.body.tes_reqst.param.kind = SRPC_TEST_PARAM_RAW;
	assert_true(call(e, &m, &r));
	return r.body.tes_reply.status;
}

static void test_sessions(void **state)
{
	struct env *e = *state;
	struct srpc_msg m, r;

	assert_int_equal(mksn(e, SID, 0, "one", &r), 0);
	assert_int_equal(r.body.mksn_reply.timeout, 100);
	assert_int_equal(r.ses_feats, LST_FEAT_BULK_LEN);
	/* the same session again: fine (counted) */
	assert_int_equal(mksn(e, SID, 0, "one", &r), 0);
	/* another console without force: busy, told the name */
	assert_int_equal(mksn(e, SID2, 0, "two", &r), EBUSY);
	assert_string_equal(r.body.mksn_reply.name, "one");
	assert_int_equal(r.body.mksn_reply.sid.nid, SID.nid);
	/* NID ANY */
	assert_int_equal(mksn(e, (struct srpc_sid){ SRPC_NID4_ANY, 1 }, 0, "x", &r), EINVAL);

	/* a batch of an unknown session, then of an unknown batch */
	build(&m, SRPC_MSG_BATCH_REQST);
	m.body.bat_reqst.sid = SID2;
	m.body.bat_reqst.bid = 7;
	m.body.bat_reqst.opc = SRPC_BATCH_OPC_RUN;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.bat_reply.status, ESRCH);
	assert_int_equal(r.body.bat_reply.sid.stamp, SID.stamp);
	m.body.bat_reqst.sid = SID;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.bat_reply.status, ENOENT);

	/* a test of an unknown session; then a real one; query it */
	assert_int_equal(add_test(e, SID2, SRPC_SERVICE_BRW, 0), ENOENT);
	assert_int_equal(add_test(e, SID, 9, 0), EINVAL);
	assert_int_equal(add_test(e, SID, SRPC_SERVICE_PING, 0), 0);
	m.body.bat_reqst.opc = SRPC_BATCH_OPC_QUERY;
	m.body.bat_reqst.testidx = 1;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.bat_reply.status, 0);
	m.body.bat_reqst.testidx = 2;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.bat_reply.status, ENOENT);
	m.body.bat_reqst.opc = 99;       /* dropped: no reply */
	assert_false(call(e, &m, &r));

	/* features differing from the session's */
	build(&m, SRPC_MSG_STAT_REQST);
	m.body.stat_reqst.sid = SID;
	m.ses_feats = 0;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.stat_reply.status, EPROTO);
	assert_int_equal(r.ses_feats, LST_FEAT_BULK_LEN);

	/* debug tells the session */
	build(&m, SRPC_MSG_DEBUG_REQST);
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.dbg_reply.status, 0);
	assert_string_equal(r.body.dbg_reply.name, "one");

	/* remove by another console: busy; twice by ours (made twice) */
	build(&m, SRPC_MSG_RMSN_REQST);
	m.body.rmsn_reqst.sid = SID2;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.rmsn_reply.status, EBUSY);
	m.body.rmsn_reqst.sid = SID;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.rmsn_reply.status, 0);
	assert_int_equal(r.body.rmsn_reply.sid.nid, SID.nid);    /* still there */
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.rmsn_reply.status, 0);
	assert_int_equal(r.body.rmsn_reply.sid.nid, SRPC_NID4_ANY);
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.rmsn_reply.status, ESRCH);

	/* force replaces a session */
	assert_int_equal(mksn(e, SID, 0, "one", &r), 0);
	assert_int_equal(mksn(e, SID2, 1, "two", &r), 0);
	assert_int_equal(r.body.mksn_reply.sid.nid, SID2.nid);
	assert_non_null(strstr(logs, "replaced by force"));
}

static void ping(struct env *e, uint32_t seq, uint32_t magic, uint32_t feats, bool *replied, struct srpc_msg *r)
{
	struct srpc_msg m;

	build(&m, SRPC_MSG_PING_REQST);
	m.ses_feats = feats;
	m.body.ping_reqst.magic = magic;
	m.body.ping_reqst.seq = seq;
	*replied = call(e, &m, r);
}

/* A session with the test service `service` on. */
static void session_with_test(struct env *e, uint32_t service)
{
	struct srpc_msg r;

	assert_int_equal(mksn(e, SID, 0, "t", &r), 0);
	assert_int_equal(add_test(e, SID, service, 0), 0);
}

static void test_ping_service(void **state)
{
	struct env *e = *state;
	struct srpc_msg r;
	bool replied;

	/* no server test yet: the request waits in the lazy portal */
	ping(e, 41, LST_PING_TEST_MAGIC, LST_FEAT_BULK_LEN, &replied, &r);
	assert_false(replied);
	session_with_test(e, SRPC_SERVICE_PING);
	memlnd_pump(e->net);
	ping(e, 42, LST_PING_TEST_MAGIC, LST_FEAT_BULK_LEN, &replied, &r);
	assert_true(replied);
	assert_int_equal(r.body.ping_reply.seq, 42);
	assert_int_equal(r.body.ping_reply.magic, LST_PING_TEST_MAGIC);
	assert_int_equal(r.ses_feats, LST_FEAT_BULK_LEN);
	/* unknown features: EPROTO, the known mask back */
	ping(e, 43, LST_PING_TEST_MAGIC, 0x10, &replied, &r);
	assert_true(replied);
	assert_int_equal(r.body.ping_reply.status, EPROTO);
	assert_int_equal(r.ses_feats, LST_FEATS_MASK);
	/* a wrong ping magic: dropped, logged */
	ping(e, 44, 0x12345678, LST_FEAT_BULK_LEN, &replied, &r);
	assert_false(replied);
	assert_non_null(strstr(logs, "dropping RPC (service 12) from 11@gni"));
}

static uint32_t brw(struct env *e, uint32_t rw, uint32_t len, uint32_t flags, bool corrupt, bool *replied)
{
	static struct bulk bk;
	struct srpc_msg m, r;
	uint8_t req[SRPC_MSG_SIZE];

	build(&m, SRPC_MSG_BRW_REQST);
	m.body.brw_reqst.bulkid = next_rpyid++;
	m.body.brw_reqst.rw = rw;
	m.body.brw_reqst.len = len;
	m.body.brw_reqst.flags = flags;
	assert_int_equal(srpc_msg_encode(&m, req, sizeof(req)), SRPC_MSG_SIZE);
	post_bulk(e, req, &bk);
	if (corrupt)
		bk.data[(len / 2 + 64) & ~7u] ^= 1;   /* inside a page: not where SIMPLE looks */
	*replied = call(e, &m, &r);
	if (*replied && rw == LST_BRW_READ && r.body.brw_reply.status == 0) {
		/* check=full: the magic in every word */
		for (uint32_t i = 0; flags == LST_BRW_CHECK_FULL && i < len; i += 8)
			assert_int_equal(ul_get_le64(bk.data + i), LST_BRW_MAGIC);
	}
	return *replied ? r.body.brw_reply.status : 0xffffffffu;
}

static void test_brw_service(void **state)
{
	struct env *e = *state;
	struct ulnet_selftest_stats s;
	bool replied;

	session_with_test(e, SRPC_SERVICE_BRW);
	assert_int_equal(brw(e, LST_BRW_WRITE, 8192, LST_BRW_CHECK_FULL, false, &replied), 0);
	assert_int_equal(brw(e, LST_BRW_READ, 12288, LST_BRW_CHECK_FULL, false, &replied), 0);
	/* write check: the full pattern sees one flipped bit, simple does not */
	assert_int_equal(brw(e, LST_BRW_WRITE, 8192, LST_BRW_CHECK_FULL, true, &replied), EBADMSG);
	assert_int_equal(brw(e, LST_BRW_WRITE, 8192, LST_BRW_CHECK_SIMPLE, true, &replied), 0);
	/* bad parameters */
	assert_int_equal(brw(e, 3, 4096, LST_BRW_CHECK_NONE, false, &replied), EINVAL);
	assert_int_equal(brw(e, LST_BRW_READ, 4096, 9, false, &replied), EINVAL);
	assert_int_equal(brw(e, LST_BRW_READ, 0, LST_BRW_CHECK_NONE, false, &replied), EINVAL);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	assert_int_equal(s.brw_check_errors, 1);
	assert_int_equal(s.bulk_get, 3 * 8192);
	assert_int_equal(s.bulk_put, 12288);
	assert_non_null(strstr(logs, "corrupted"));
}

/* A brw write whose bulk GET cannot go (the console unreachable): the RPC
 * is dropped without a reply, as the kernel's, and its slot comes back:
 * without that, stop found the slot busy forever and leaked the agent. */
static void test_brw_bulk_fails(void **state)
{
	struct env *e = *state;
	struct ulnet_selftest_stats s;
	bool replied;

	session_with_test(e, SRPC_SERVICE_BRW);
	memlnd_fail_next(e->net, 1, 1u << ULNET_MSG_GET, -ECONNRESET);
	(void)brw(e, LST_BRW_WRITE, 8192, LST_BRW_CHECK_NONE, false, &replied);
	assert_false(replied);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	assert_int_equal(s.rpcs_dropped, 1);
	/* the service still answers */
	assert_int_equal(brw(e, LST_BRW_WRITE, 8192, LST_BRW_CHECK_NONE, false, &replied), 0);
	assert_true(replied);
	logs[0] = '\0';
	ulnet_selftest_stop(e->st);
	e->st = NULL;
	assert_null(strstr(logs, "leaking"));
}

/* The server's bulk GETs (brw writes) are held. */
static enum memlnd_verdict hold_srv_bulk(void *arg, const struct lnet_hdr *hdr)
{
	const struct env *e = arg;

	return hdr->type == ULNET_MSG_GET && hdr->msg.get.ptl_index == SRPC_RDMA_PORTAL &&
	       ulnet_nid_same(&hdr->src_nid, &e->srv_nid) ? MEMLND_HOLD : MEMLND_PASS;
}

#define N_MANY 40

/* More brw requests at once than the bulk pool serves: every one is taken
 * into a request buffer at once (none waits on the lazy portal, where it
 * would hold the LND's receive buffer), at most the pool's bound (8 for a
 * test of concurrency 1) start their bulk, the others wait in the agent,
 * and all complete. When the session ends, the test's buffers go. */
static void test_brw_many_in_flight(void **state)
{
	struct env *e = *state;
	static struct bulk bks[N_MANY];
	static struct sink reps[N_MANY];
	struct ulnet_selftest_stats s0, s;
	struct srpc_msg r;
	uint8_t req[SRPC_MSG_SIZE];
	int nrep = 0, held;

	session_with_test(e, SRPC_SERVICE_BRW);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s0), 0);
	memlnd_set_filter(e->net, hold_srv_bulk, e);
	for (int i = 0; i < N_MANY; i++) {
		struct srpc_msg m;

		build(&m, SRPC_MSG_BRW_REQST);
		m.body.brw_reqst.bulkid = next_rpyid++;
		m.body.brw_reqst.rw = LST_BRW_WRITE;
		m.body.brw_reqst.len = 4096;
		m.body.brw_reqst.flags = LST_BRW_CHECK_FULL;
		assert_int_equal(srpc_msg_encode(&m, req, sizeof(req)), SRPC_MSG_SIZE);
		post_bulk(e, req, &bks[i]);
		memset(&reps[i], 0, sizeof(reps[i]));
		(void)post52(e, m.body.brw_reqst.rpyid, reps[i].buf, sizeof(reps[i].buf), ULNET_MD_OP_PUT,
			     &reps[i], sink_ev);
		send_raw(e, SRPC_REQUEST_PORTAL, SRPC_SERVICE_BRW, req, SRPC_MSG_SIZE);
		memlnd_pump(e->net);
	}
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	for (int i = 0; i < N_MANY; i++)
		nrep += reps[i].n;
	/* let everything finish before any check (a failed one would leave
	 * the agent's stop waiting for the held GETs) */
	memlnd_set_filter(e->net, NULL, NULL);
	held = memlnd_release_held(e->net);
	memlnd_pump(e->net);
	assert_int_equal(s.rpcs_rcvd - s0.rpcs_rcvd, N_MANY);
	assert_int_equal(s.brw_reqs - s0.brw_reqs, N_MANY);
	assert_int_equal(nrep, 0);
	assert_int_equal(held, 8);      /* the pool's bound */
	for (int i = 0; i < N_MANY; i++) {
		assert_int_equal(reps[i].n, 1);
		assert_int_equal(srpc_msg_decode(reps[i].buf, sizeof(reps[i].buf), &r), 0);
		assert_int_equal(r.type, SRPC_MSG_BRW_REPLY);
		assert_int_equal(r.body.brw_reply.status, 0);
	}
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	assert_int_equal(s.rpcs_dropped, 0);
	assert_int_equal(s.bulk_get - s0.bulk_get, N_MANY * 4096);
	assert_string_equal(logs, "");

	/* a new session: the old test's buffers are gone, a request waits */
	assert_int_equal(mksn(e, SID2, 1, "u", &r), 0);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s0), 0);
	{
		bool replied;

		assert_int_equal(brw(e, LST_BRW_WRITE, 4096, LST_BRW_CHECK_NONE, false, &replied), 0xffffffffu);
		assert_false(replied);
	}
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	assert_int_equal(s.rpcs_rcvd, s0.rpcs_rcvd);
}

/* The session ends while brw requests wait in the agent for a bulk buffer
 * and others run their bulk: all are dropped (the bulks fail), the retired buffers are freed once back (ASan: no leak, no use
 * after free), and the next session's test gets buffers of its own. */
static void test_brw_waiting_at_session_end(void **state)
{
	struct env *e = *state;
	static struct bulk bks[N_MANY];
	static struct sink reps[N_MANY];
	struct ulnet_selftest_stats s0, s;
	struct srpc_msg r;
	uint8_t req[SRPC_MSG_SIZE];
	int nrep = 0;
	bool replied;

	session_with_test(e, SRPC_SERVICE_BRW);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s0), 0);
	memlnd_set_filter(e->net, hold_srv_bulk, e);
	for (int i = 0; i < N_MANY; i++) {
		struct srpc_msg m;

		build(&m, SRPC_MSG_BRW_REQST);
		m.body.brw_reqst.bulkid = next_rpyid++;
		m.body.brw_reqst.rw = LST_BRW_WRITE;
		m.body.brw_reqst.len = 4096;
		m.body.brw_reqst.flags = LST_BRW_CHECK_FULL;
		assert_int_equal(srpc_msg_encode(&m, req, sizeof(req)), SRPC_MSG_SIZE);
		post_bulk(e, req, &bks[i]);
		memset(&reps[i], 0, sizeof(reps[i]));
		(void)post52(e, m.body.brw_reqst.rpyid, reps[i].buf, sizeof(reps[i].buf), ULNET_MD_OP_PUT,
			     &reps[i], sink_ev);
		send_raw(e, SRPC_REQUEST_PORTAL, SRPC_SERVICE_BRW, req, SRPC_MSG_SIZE);
		memlnd_pump(e->net);
	}
	memlnd_set_filter(e->net, NULL, NULL);
	/* the session expires, seen by the next brw request (dropped) */
	fake_now += 101ULL * 1000000000ULL;
	(void)brw(e, LST_BRW_WRITE, 4096, LST_BRW_CHECK_NONE, false, &replied);
	assert_false(replied);
	assert_non_null(strstr(logs, "session expired"));
	/* the bulks under way fail: their buffers come back to the waiting */
	(void)memlnd_fail_held(e->net, -ECONNRESET);
	memlnd_pump(e->net);
	for (int i = 0; i < N_MANY; i++)
		nrep += reps[i].n;
	assert_int_equal(nrep, 0);
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	assert_int_equal(s.rpcs_rcvd - s0.rpcs_rcvd, N_MANY + 1);
	assert_int_equal(s.rpcs_dropped - s0.rpcs_dropped, N_MANY + 1);
	/* a new session's test */
	assert_int_equal(mksn(e, SID2, 0, "u", &r), 0);
	assert_int_equal(add_test(e, SID2, SRPC_SERVICE_BRW, 0), 0);
	assert_int_equal(brw(e, LST_BRW_READ, 8192, LST_BRW_CHECK_SIMPLE, false, &replied), 0);
	assert_true(replied);
	logs[0] = '\0';
	ulnet_selftest_stop(e->st);
	e->st = NULL;
	assert_null(strstr(logs, "leaking"));
}

static void test_bad_requests(void **state)
{
	struct env *e = *state;
	uint8_t req[SRPC_MSG_SIZE], rep[SRPC_MSG_SIZE];
	struct srpc_msg m, r;
	struct ulnet_selftest_stats s;

	/* wrong version: answered EPROTO */
	build(&m, SRPC_MSG_DEBUG_REQST);
	m.version = 2;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.dbg_reply.status, EPROTO);

	/* bad magic: dropped, one line naming the peer */
	build(&m, SRPC_MSG_DEBUG_REQST);
	assert_int_equal(srpc_msg_encode(&m, req, sizeof(req)), SRPC_MSG_SIZE);
	req[0] ^= 0xff;
	send_raw(e, SRPC_FRAMEWORK_REQUEST_PORTAL, SRPC_SERVICE_DEBUG, req, sizeof(req));
	memlnd_pump(e->net);
	assert_non_null(strstr(logs, "from 11@gni: bad magic"));

	/* a type that is not the service's: dropped */
	build(&m, SRPC_MSG_STAT_REQST);
	assert_int_equal(srpc_msg_encode(&m, req, sizeof(req)), SRPC_MSG_SIZE);
	send_raw(e, SRPC_FRAMEWORK_REQUEST_PORTAL, SRPC_SERVICE_DEBUG, req, sizeof(req));
	memlnd_pump(e->net);
	assert_non_null(strstr(logs, "message type 6"));

	/* short: dropped */
	send_raw(e, SRPC_FRAMEWORK_REQUEST_PORTAL, SRPC_SERVICE_DEBUG, req, 100);
	memlnd_pump(e->net);
	assert_non_null(strstr(logs, "100 bytes"));

	/* the node still answers, on every buffer */
	for (int i = 0; i < 5; i++) {
		build(&m, SRPC_MSG_DEBUG_REQST);
		assert_int_equal(srpc_msg_encode(&m, req, sizeof(req)), SRPC_MSG_SIZE);
		assert_true(rpc(e, req, rep));
	}
	assert_int_equal(ulnet_selftest_stats_get(e->st, &s), 0);
	assert_int_equal(s.rpcs_dropped, 3);
	assert_int_equal(s.rpcs_rcvd, 9);
}

/* The session is over: a ping gets no reply (the test service went with
 * it) and a framework request is told ESRCH. */
static void expect_session_gone(struct env *e)
{
	struct srpc_msg m, r;
	bool replied;

	ping(e, 1, LST_PING_TEST_MAGIC, LST_FEAT_BULK_LEN, &replied, &r);
	assert_false(replied);
	build(&m, SRPC_MSG_DEBUG_REQST);
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.dbg_reply.status, ESRCH);
}

static void test_session_timeout(void **state)
{
	struct env *e = *state;
	struct srpc_msg m, r;

	session_with_test(e, SRPC_SERVICE_PING);
	fake_now += 99ULL * 1000000000ULL;
	build(&m, SRPC_MSG_DEBUG_REQST);
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.dbg_reply.status, 0);     /* restarts the timer */
	fake_now += 99ULL * 1000000000ULL;
	assert_true(call(e, &m, &r));
	assert_int_equal(r.body.dbg_reply.status, 0);
	fake_now += 101ULL * 1000000000ULL;
	expect_session_gone(e);
	assert_non_null(strstr(logs, "session expired"));
}

/* The session timer fires by itself, as the kernel's: no request needs to
 * come for an idle session to end and its test services to go. */
static void test_session_timer_fires_alone(void **state)
{
	struct env *e = *state;

	session_with_test(e, SRPC_SERVICE_PING);
	fake_now += 99ULL * 1000000000ULL;
	(void)ulnet_progress(e->srv, 0);
	assert_null(strstr(logs, "session expired"));
	fake_now += 2ULL * 1000000000ULL;
	/* one sweep to find it expired (the first may be due before) */
	for (int i = 0; i < 3 && !strstr(logs, "session expired"); i++)
		(void)ulnet_progress(e->srv, 0);
	/* nothing came in: the log is the timer's */
	assert_non_null(strstr(logs, "session expired"));
	expect_session_gone(e);
}

/* The server's discovery messages to the console (its ping, its push)
 * are lost. */
static enum memlnd_verdict drop_srv_discovery(void *arg, const struct lnet_hdr *hdr)
{
	const struct env *e = arg;
	bool dc = hdr->type == ULNET_MSG_GET || (hdr->type == ULNET_MSG_PUT && hdr->msg.put.ptl_index == 0);

	return dc && ulnet_nid_same(&hdr->src_nid, &e->srv_nid) ? MEMLND_DROP : MEMLND_PASS;
}

/* A reply that waits for the server's discovery of the console (its ping
 * or push lost) ends when the agent stops: the stop unlinks it, and the core ends
 * a send waiting for discovery when its MD goes. Before, the stop waited
 * its 5 s (on a clock that moves 1 ms a read here), gave up and leaked the
 * agent, as the reply would only end at transaction_timeout. */
static void test_stop_ends_reply_waiting_discovery(void **state)
{
	struct env *e = *state;
	uint8_t req[SRPC_MSG_SIZE];
	static struct sink s;

	load(lst_msgs[0].hex, req);                /* MKSN */
	memlnd_set_filter(e->net, drop_srv_discovery, e);
	memset(&s, 0, sizeof(s));
	(void)post52(e, ul_get_le64(req + SRPC_HDR_SIZE), s.buf, sizeof(s.buf), ULNET_MD_OP_PUT, &s,
		     sink_ev);
	send_raw(e, SRPC_FRAMEWORK_REQUEST_PORTAL, SRPC_SERVICE_MAKE_SESSION, req, SRPC_MSG_SIZE);
	memlnd_pump(e->net);
	assert_int_equal(s.n, 0);                  /* the reply waits */
	fake_ticking = true;
	ulnet_selftest_stop(e->st);
	fake_ticking = false;
	e->st = NULL;
	if (strstr(logs, "still pending"))
		fail_msg("the stop waited: %s", logs);
	memlnd_set_filter(e->net, NULL, NULL);
	assert_int_equal(ulnet_selftest_start(e->srv, NULL, &e->st), 0);
}

static void test_start_stop(void **state)
{
	struct env *e = *state;
	ulnet_selftest_t *st2;
	struct ulnet_selftest_conf bad = { .session_timeout = -2 };

	assert_int_equal(ulnet_selftest_start(e->srv, NULL, &st2), -EEXIST);
	assert_int_equal(ulnet_selftest_start(e->con, &bad, &st2), -EINVAL);
	assert_int_equal(ulnet_selftest_start(NULL, NULL, &st2), -EINVAL);
	assert_int_equal(ulnet_selftest_stats_get(NULL, NULL), -EINVAL);
	ulnet_selftest_stop(NULL);
	/* stop and start again on the same instance */
	ulnet_selftest_stop(e->st);
	assert_int_equal(ulnet_selftest_start(e->srv, NULL, &e->st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lst_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ping_service, setup, teardown),
		cmocka_unit_test_setup_teardown(test_brw_service, setup, teardown),
		cmocka_unit_test_setup_teardown(test_brw_bulk_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_brw_many_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_brw_waiting_at_session_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_timer_fires_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_ends_reply_waiting_discovery, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
