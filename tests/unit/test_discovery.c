/* SPDX-License-Identifier: MIT */
/*
 * test_discovery.c - node services: the ping target (its exact bytes, the
 * sequence number), ulnet_ping, the push target, discovery before the first
 * message (the exchange of discover.pcap / first-contact-lst.pcap: GET 272,
 * REPLY 48, PUSH with ACK, then the message; the target pushes back),
 * discovery failure and timeout, pushes after an NI change, ulnet_discover on
 * threaded instances, and the peer table API.
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
#include <time.h>

#include "core/ping_info.h"
#include "memlnd.h"
#include "ulnet/ulnet.h"
#include "util/util_bytes.h"

#define PING_BITS ULNET_PROTO_PING_MATCHBITS

static char last_log[512];
static void capture_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static uint64_t fake_now = 1000000000ULL;
static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static ulnet_t *mk(bool manual, bool fake)
{
	struct ulnet_opts o = { .flags = manual ? ULNET_OPT_MANUAL_PROGRESS : 0,
				.clock = fake ? fake_clock : NULL, .log = capture_log,
				.log_level = ULNET_LOG_DEBUG };
	ulnet_t *ln;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	return ln;
}

/* Turn `ln`'s discovery on or off (the `discovery` global). */
static void set_discovery(ulnet_t *ln, int on)
{
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.discovery = on;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
}

/* Two nodes and their memlnd network, gone. */
static void destroy2(struct memlnd_net *net, ulnet_t *a, ulnet_t *b)
{
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

static const ulnet_process_id_t any = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						 .addr = { 0xff, 0xff, 0xff, 0xff } },
					.pid = ULNET_PID_ANY };

static uint64_t nid4_of(const ulnet_nid_t *nid)
{
	ulnet_nid4_t n4;

	assert_int_equal(ulnet_nid_to_nid4(nid, &n4), 0);
	return n4;
}

/* The 48 bytes a node with one NI serves, as in ping.pcap. */
static void check_ping_info_bytes(const uint8_t *p, size_t len, uint32_t features,
				  uint32_t seqno, const ulnet_nid_t *ni)
{
	assert_int_equal(len, 48);
	assert_int_equal(ul_get_le32(p), LNET_PROTO_PING_MAGIC);   /* "gnip" on the wire */
	assert_memory_equal(p, "gnip", 4);
	assert_int_equal(ul_get_le32(p + 4), features);
	assert_int_equal(ul_get_le32(p + 8), 12345);
	assert_int_equal(ul_get_le32(p + 12), 2);
	assert_int_equal(ul_get_le64(p + 16), 0x0009000000000000ULL);  /* 0@lo */
	assert_int_equal(ul_get_le32(p + 24), seqno);
	assert_int_equal(ul_get_le32(p + 28), 0);
	assert_int_equal(ul_get_le64(p + 32), nid4_of(ni));
	assert_int_equal(ul_get_le32(p + 40), LNET_NI_STATUS_UP);
	assert_int_equal(ul_get_le32(p + 44), 0);
}

struct getlog {
	int nreply, nsend, nunlink;
	uint32_t mlength, rlength;
	int status;
};

static void get_handler(const struct ulnet_event *ev)
{
	struct getlog *g = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_REPLY) {
		g->nreply++;
		g->mlength = ev->mlength;
		g->rlength = ev->rlength;
	} else if (ev->type == ULNET_EVENT_SEND) {
		g->nsend++;
	} else {
		g->nunlink++;
	}
	if (ev->status)
		g->status = ev->status;
}

static void test_ping_target_bytes(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *ln = mk(true, false);
	ulnet_nid_t nid;
	uint8_t sink[3960];
	struct getlog g = { 0 };
	struct ulnet_md md = { .start = sink, .length = sizeof(sink), .threshold = 2,
			       .options = ULNET_MD_TRUNCATE, .user_ptr = &g, .handler = get_handler };
	ulnet_handle_t mdh;
	ulnet_process_id_t lo = { .nid = ULNET_NID_LO0, .pid = 12345 };

	assert_int_equal(memlnd_add_ni(net, ln, 12, &nid), 0);
	/* a raw GET on portal 0, as lnetctl ping sends it */
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, mdh, lo, 0, PING_BITS, 0), 0);
	assert_int_equal(g.nreply, 1);
	assert_int_equal(g.status, 0);
	assert_int_equal(g.rlength, 48);
	/* features 0x1e, sequence 2 (one at start, one for the NI) */
	check_ping_info_bytes(sink, g.mlength, 0x1e, 2, &nid);

	/* discovery off: no DISCOVERY bit; the sequence does not move */
	set_discovery(ln, 0);
	memset(&g, 0, sizeof(g));
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, mdh, lo, 0, PING_BITS, 0), 0);
	assert_int_equal(ul_get_le32(sink + 4), 0x0e);
	assert_int_equal(ul_get_le32(sink + 24), 3); /* rebuilt: 3 */

	/* the ping target truncates to the sink */
	uint8_t small[20];
	struct ulnet_md smd = { .start = small, .length = sizeof(small), .threshold = 2,
				.options = ULNET_MD_TRUNCATE, .user_ptr = &g, .handler = get_handler };
	memset(&g, 0, sizeof(g));
	assert_int_equal(ulnet_md_bind(ln, &smd, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, mdh, lo, 0, PING_BITS, 0), 0);
	assert_int_equal(g.mlength, 20);
	assert_int_equal(g.rlength, 20);

	/* removing the NI: sequence 4, one entry */
	assert_int_equal(ulnet_ni_del(ln, &nid), 0);
	struct ulnet_ping_peer pp;
	assert_int_equal(ulnet_ping(ln, lo, NULL, 0, 1000, &pp), 0);
	assert_int_equal(pp.nnids, 0);
	assert_int_equal(pp.features, 0x0e);
	ulnet_destroy(ln);
	memlnd_net_destroy(net);
}

static void test_ulnet_ping_lo(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *ln = mk(true, false);
	ulnet_nid_t n1, n2;
	struct ulnet_ping_peer pp;
	ulnet_process_id_t self = { .pid = ULNET_PID_ANY };

	assert_int_equal(memlnd_add_ni(net, ln, 7, &n1), 0);
	assert_int_equal(memlnd_add_ni(net, ln, 8, &n2), 0);
	/* pinging 0@lo stays in the node (no pump here: nothing goes out) */
	self.nid = ULNET_NID_LO0;
	assert_int_equal(ulnet_ping(ln, self, NULL, 0, 1000, &pp), 0);
	assert_int_equal(pp.nnids, 2);
	assert_true(ulnet_nid_same(&pp.nids[0], &n1));
	assert_true(ulnet_nid_same(&pp.nids[1], &n2));
	assert_int_equal(pp.status[0], LNET_NI_STATUS_UP);
	assert_int_equal(pp.features, 0x1e);
	assert_false(pp.multi_rail);
	/* a sink too small for entry 0 is not a valid ping */
	assert_int_equal(ulnet_ping(ln, self, NULL, 20, 1000, &pp), -EPROTO);
	assert_int_equal(ulnet_ping(ln, self, NULL, 8, 1000, &pp), -EINVAL);
	ulnet_destroy(ln);
	memlnd_net_destroy(net);
}

/* --- discovery over memlnd, single-threaded ------------------------------------------ */

struct recvlog {
	int n;
	uint8_t data[256];
	uint32_t mlength;
};

static void recv_handler(const struct ulnet_event *ev)
{
	struct recvlog *r = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT) {
		r->n++;
		r->mlength = ev->mlength;
	}
}

struct sendlog {
	int nsend, status, unlinked;
};

static void send_handler(const struct ulnet_event *ev)
{
	struct sendlog *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_SEND)
		s->nsend++;
	if (ev->status)
		s->status = ev->status;
	if (ev->unlinked)
		s->unlinked++;
}

static void post_lst_service(ulnet_t *ln, struct recvlog *r)
{
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = r->data, .length = sizeof(r->data),
			       .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = r, .handler = recv_handler };

	assert_int_equal(ulnet_me_attach(ln, 51, any, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
}

static void put_lst(ulnet_t *ln, const ulnet_nid_t *to, struct sendlog *s, uint8_t *buf)
{
	struct ulnet_md md = { .start = buf, .length = 160, .threshold = 1, .user_ptr = s,
			       .handler = send_handler };
	ulnet_process_id_t t = { .nid = *to, .pid = 12345 };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, t, 51, 1, 0, 0), 0);
}

static bool is(const struct memlnd_trace_ent *t, uint32_t type, const ulnet_nid_t *from,
	       const ulnet_nid_t *to)
{
	return t->hdr.type == type && ulnet_nid_same(&t->hdr.src_nid, from) &&
	       ulnet_nid_same(&t->hdr.dest_nid, to);
}

static int find(const struct memlnd_trace_ent *t, int n, uint32_t type, const ulnet_nid_t *from,
		const ulnet_nid_t *to, unsigned portal)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!is(&t[i], type, from, to))
			continue;
		if (type == ULNET_MSG_PUT && t[i].hdr.msg.put.ptl_index != portal)
			continue;
		return i;
	}
	return -1;
}

static void test_first_contact_exchange(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, false), *b = mk(true, false);
	ulnet_nid_t na, nb;
	struct memlnd_trace_ent tr[32];
	struct recvlog r = { 0 };
	struct sendlog s = { 0 };
	uint8_t payload[160];
	struct ulnet_peer_info pi;
	int n, i;

	memset(payload, 0x77, sizeof(payload));
	assert_int_equal(memlnd_add_ni(net, a, 11, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 12, &nb), 0);
	post_lst_service(b, &r);
	memlnd_trace_clear(net);

	put_lst(a, &nb, &s, payload);
	/* held for discovery: only the ping left */
	assert_int_equal(s.nsend, 0);
	assert_int_equal(memlnd_queued(net), 1);
	memlnd_pump(net);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.mlength, 160);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.status, 0);

	n = memlnd_trace(net, tr, 32);
	assert_int_equal(n, 7);
	/* 1. A -> B GET, portal 0, ping bits, sink 272 */
	assert_true(is(&tr[0], ULNET_MSG_GET, &na, &nb));
	assert_int_equal(tr[0].hdr.msg.get.ptl_index, 0);
	assert_int_equal(tr[0].hdr.msg.get.match_bits, PING_BITS);
	assert_int_equal(tr[0].hdr.msg.get.sink_length, 272);
	assert_int_equal(tr[0].hdr.msg.get.src_offset, 0);
	assert_int_equal(tr[0].hdr.payload_length, 0);
	assert_int_equal(tr[0].hdr.dest_pid, 12345);
	/* 2. B -> A REPLY, 48 bytes of ping info, handle echoed */
	assert_true(is(&tr[1], ULNET_MSG_REPLY, &nb, &na));
	assert_int_equal(tr[1].hdr.payload_length, 48);
	assert_memory_equal(&tr[1].hdr.msg.reply.dst_wmd, &tr[0].hdr.msg.get.return_wmd,
			    sizeof(lnet_wire_handle_t));
	check_ping_info_bytes(tr[1].data, tr[1].data_len, 0x1e, 2, &nb);
	/* 3. A -> B push: PUT portal 0, ping bits, ACK wanted, A's info */
	assert_true(is(&tr[2], ULNET_MSG_PUT, &na, &nb));
	assert_int_equal(tr[2].hdr.msg.put.ptl_index, 0);
	assert_int_equal(tr[2].hdr.msg.put.match_bits, PING_BITS);
	assert_int_equal(tr[2].hdr.msg.put.hdr_data, 0);
	assert_int_equal(tr[2].hdr.msg.put.offset, 0);
	assert_int_not_equal(tr[2].hdr.msg.put.ack_wmd.wh_object_cookie, ~0ULL);
	assert_int_equal(tr[2].hdr.msg.put.ack_wmd.wh_interface_cookie,
			 tr[0].hdr.msg.get.return_wmd.wh_interface_cookie);
	check_ping_info_bytes(tr[2].data, tr[2].data_len, 0x1e, 2, &na);
	/* B acks A's push (match bits, mlength 48), and pushes its own info
	 * (the order of those two varies in the captures too) */
	i = find(tr, n, ULNET_MSG_ACK, &nb, &na, 0);
	assert_true(i > 2);
	assert_int_equal(tr[i].hdr.msg.ack.match_bits, PING_BITS);
	assert_int_equal(tr[i].hdr.msg.ack.mlength, 48);
	assert_memory_equal(&tr[i].hdr.msg.ack.dst_wmd, &tr[2].hdr.msg.put.ack_wmd,
			    sizeof(lnet_wire_handle_t));
	int bpush = find(tr, n, ULNET_MSG_PUT, &nb, &na, 0);
	assert_true(bpush > 2);
	check_ping_info_bytes(tr[bpush].data, tr[bpush].data_len, 0x1e, 2, &nb);
	int aack = find(tr, n, ULNET_MSG_ACK, &na, &nb, 0);
	assert_true(aack > bpush);
	assert_int_equal(tr[aack].hdr.msg.ack.mlength, 48);
	/* the held message goes after A's push was acked: the lst PUT, no ACK */
	int lst = find(tr, n, ULNET_MSG_PUT, &na, &nb, 51);
	assert_true(lst > i);
	assert_int_equal(tr[lst].hdr.payload_length, 160);
	assert_int_equal(tr[lst].hdr.msg.put.ack_wmd.wh_object_cookie, ~0ULL);
	assert_int_equal(tr[lst].hdr.msg.put.ack_wmd.wh_interface_cookie, ~0ULL);
	/* B never pings A: A's push told it everything */
	assert_int_equal(find(tr, n, ULNET_MSG_GET, &nb, &na, 0), -1);

	/* both ends: MULTI_RAIL | DISCOVERED | NIDS_UPTODATE = 273 */
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &nb));
	assert_true(pi.multi_rail);
	assert_int_equal(pi.state, 273);
	assert_int_equal(ulnet_peer_info(b, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &na));
	assert_int_equal(pi.state, 273);

	/* the next message goes straight */
	memlnd_trace_clear(net);
	put_lst(a, &nb, &s, payload);
	memlnd_pump(net);
	assert_int_equal(memlnd_trace(net, tr, 32), 1);
	assert_int_equal(r.n, 2);
	/* and B's first message to A needs no discovery either */
	struct recvlog ra = { 0 };
	struct sendlog sb = { 0 };
	post_lst_service(a, &ra);
	memlnd_trace_clear(net);
	put_lst(b, &na, &sb, payload);
	memlnd_pump(net);
	assert_int_equal(memlnd_trace(net, tr, 32), 1);
	assert_int_equal(ra.n, 1);

	destroy2(net, a, b);
}

static void test_discovery_timeout_fails_queued(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, true), *b = mk(true, true);
	ulnet_nid_t nb;
	struct recvlog r = { 0 };
	struct sendlog s1 = { 0 }, s2 = { 0 };
	uint8_t payload[160] = { 0 };
	struct ulnet_peer_info pi;

	fake_now = 50 * 1000000000ULL;
	assert_int_equal(memlnd_add_ni(net, a, 21, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 22, &nb), 0);
	post_lst_service(b, &r);
	/* the ping never arrives */
	memlnd_drop_next(net, 1, 1u << ULNET_MSG_GET);
	put_lst(a, &nb, &s1, payload);
	put_lst(a, &nb, &s2, payload);
	memlnd_pump(net);
	assert_int_equal(s1.nsend + s2.nsend, 0);
	fake_now += 149 * 1000000000ULL;
	ulnet_progress(a, 0);
	assert_int_equal(s1.nsend, 0);
	fake_now += 2 * 1000000000ULL;
	ulnet_progress(a, 0);
	/* every message waiting for the peer fails with the error */
	assert_int_equal(s1.nsend, 1);
	assert_int_equal(s1.status, -ETIMEDOUT);
	assert_int_equal(s1.unlinked, 1);
	assert_int_equal(s2.nsend, 1);
	assert_int_equal(s2.status, -ETIMEDOUT);
	assert_int_equal(r.n, 0);
	assert_non_null(strstr(last_log, "22@gni"));
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(pi.state & (1u << 11)); /* PING_FAILED */
	assert_false(pi.state & (1u << 4)); /* not DISCOVERED */

	/* the next message tries again, and this time it works */
	struct sendlog s3 = { 0 };
	put_lst(a, &nb, &s3, payload);
	memlnd_pump(net);
	assert_int_equal(s3.nsend, 1);
	assert_int_equal(s3.status, 0);
	assert_int_equal(r.n, 1);
	destroy2(net, a, b);
}

/* put_lst, returning the MD's handle. */
static ulnet_handle_t put_lst_h(ulnet_t *ln, const ulnet_nid_t *to, struct sendlog *s, uint8_t *buf)
{
	struct ulnet_md md = { .start = buf, .length = 160, .threshold = 1, .user_ptr = s,
			       .handler = send_handler };
	ulnet_process_id_t t = { .nid = *to, .pid = 12345 };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, t, 51, 1, 0, 0), 0);
	return mdh;
}

/* Unlinking an MD whose PUT waits for the peer's discovery ends that PUT
 * at once (-ECANCELED), not when the discovery ends; the other message
 * waiting on the same peer stays queued and goes once discovery is done. */
static void test_unlink_cancels_discovery_wait(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, true), *b = mk(true, true);
	ulnet_nid_t nb;
	struct recvlog r = { 0 };
	struct sendlog s1 = { 0 }, s2 = { 0 };
	uint8_t payload[160] = { 0 };

	fake_now = 70 * 1000000000ULL;
	assert_int_equal(memlnd_add_ni(net, a, 41, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 42, &nb), 0);
	post_lst_service(b, &r);
	/* the ping is held: discovery stays under way */
	memlnd_drop_next(net, 1, 1u << ULNET_MSG_GET);
	ulnet_handle_t h1 = put_lst_h(a, &nb, &s1, payload);

	put_lst(a, &nb, &s2, payload);
	memlnd_pump(net);
	assert_int_equal(s1.nsend + s2.nsend, 0);
	assert_int_equal(ulnet_md_unlink(a, h1), 0);
	assert_int_equal(s1.nsend, 1);
	assert_int_equal(s1.status, -ECANCELED);
	assert_int_equal(s1.unlinked, 1);
	assert_int_equal(s2.nsend, 0);
	/* a second unlink finds nothing; the other message still waits */
	assert_int_equal(ulnet_md_unlink(a, h1), -ENOENT);
	/* discovery then fails at transaction_timeout: s2 ends, nothing is
	 * finalized twice */
	fake_now += 151 * 1000000000ULL;
	ulnet_progress(a, 0);
	assert_int_equal(s1.nsend, 1);
	assert_int_equal(s2.nsend, 1);
	assert_int_equal(s2.status, -ETIMEDOUT);
	assert_int_equal(r.n, 0);
	destroy2(net, a, b);
}

static void test_push_lost_fails(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, true), *b = mk(true, true);
	ulnet_nid_t nb;
	struct recvlog r = { 0 };
	struct sendlog s = { 0 };
	uint8_t payload[160] = { 0 };

	fake_now = 10 * 1000000000ULL;
	assert_int_equal(memlnd_add_ni(net, a, 31, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 32, &nb), 0);
	post_lst_service(b, &r);
	/* the GET and REPLY pass; A's push is lost */
	memlnd_drop_next(net, 1, 1u << ULNET_MSG_PUT);
	put_lst(a, &nb, &s, payload);
	memlnd_pump(net);
	assert_int_equal(s.nsend, 0);
	fake_now += 151 * 1000000000ULL;
	ulnet_progress(a, 0);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.status, -ETIMEDOUT);
	struct ulnet_peer_info pi;
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(pi.state & (1u << 12)); /* PUSH_FAILED */
	/* A's NIs change: the peer is pushed to all the same (the kernel
	 * pushes to every Multi-Rail peer behind, discovered or not) */
	struct memlnd_trace_ent tr[8];
	memlnd_trace_clear(net);
	assert_int_equal(memlnd_add_ni(net, a, 33, NULL), 0);
	memlnd_pump(net);
	assert_true(memlnd_trace(net, tr, 8) >= 1);
	assert_int_equal(tr[0].hdr.type, ULNET_MSG_PUT);
	assert_int_equal(tr[0].hdr.msg.put.ptl_index, 0);
	destroy2(net, a, b);
}

static void test_discovery_off_sends_at_once(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, false), *b = mk(true, false);
	ulnet_nid_t nb;
	struct recvlog r = { 0 };
	struct sendlog s = { 0 };
	uint8_t payload[160] = { 0 };
	struct memlnd_trace_ent tr[8];

	assert_int_equal(memlnd_add_ni(net, a, 41, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 42, &nb), 0);
	set_discovery(a, 0);
	post_lst_service(b, &r);
	memlnd_trace_clear(net);
	put_lst(a, &nb, &s, payload);
	memlnd_pump(net);
	assert_int_equal(memlnd_trace(net, tr, 8), 1);
	assert_int_equal(tr[0].hdr.msg.put.ptl_index, 51);
	assert_int_equal(r.n, 1);
	destroy2(net, a, b);
}

static void test_ni_change_pushes_to_peers(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, false), *b = mk(true, false);
	ulnet_nid_t na, na2, nb;
	struct recvlog r = { 0 };
	struct sendlog s = { 0 };
	uint8_t payload[160] = { 0 };
	struct ulnet_peer_info pi;
	struct memlnd_trace_ent tr[16];
	int n;

	assert_int_equal(memlnd_add_ni(net, a, 51, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 52, &nb), 0);
	post_lst_service(b, &r);
	put_lst(a, &nb, &s, payload);
	memlnd_pump(net);
	assert_int_equal(r.n, 1);

	/* A gets a second NI: sequence 3, pushed to B at once */
	memlnd_trace_clear(net);
	assert_int_equal(memlnd_add_ni(net, a, 53, &na2), 0);
	memlnd_pump(net);
	n = memlnd_trace(net, tr, 16);
	assert_int_equal(n, 2);
	/* from either NI of A (Multi-Rail picks), even the new one that B
	 * has never seen: B files it under A anyway */
	assert_true(is(&tr[0], ULNET_MSG_PUT, &na, &nb) || is(&tr[0], ULNET_MSG_PUT, &na2, &nb));
	assert_int_equal(tr[0].hdr.msg.put.ptl_index, 0);
	assert_int_equal(tr[0].hdr.payload_length, 64);
	assert_int_equal(ul_get_le32(tr[0].data + 24), 3);
	assert_int_equal(tr[1].hdr.type, ULNET_MSG_ACK);
	assert_true(ulnet_nid_same(&tr[1].hdr.dest_nid, &tr[0].hdr.src_nid));
	assert_int_equal(ulnet_peer_info(b, 1, &pi), -ENOENT);
	/* B now knows both NIDs of A, primary unchanged */
	assert_int_equal(ulnet_peer_info(b, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &na));
	assert_int_equal(pi.nnis, 2);
	assert_true(ulnet_nid_same(&pi.nis[1].nid, &na2));

	/* the NI goes: pushed again, B forgets the NID */
	memlnd_trace_clear(net);
	assert_int_equal(ulnet_ni_del(a, &na2), 0);
	memlnd_pump(net);
	assert_int_equal(memlnd_trace(net, tr, 16), 2);
	assert_int_equal(ulnet_peer_info(b, 0, &pi), 0);
	assert_int_equal(pi.nnis, 1);
	destroy2(net, a, b);
}

static void test_push_without_mr_dropped(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, false), *b = mk(true, false);
	ulnet_nid_t na, nb;
	struct ulnet_peer_info pi;
	/* a ping info without the MULTI_RAIL bit, pushed by hand */
	uint8_t info[48];
	struct lnet_ping_ni nis[2];
	struct lnet_ping_info p = { .features = LNET_PING_FEAT_NI_STATUS, .pid = 12345, .nnis = 2,
				    .nis = nis, .max_nis = 2 };
	struct ulnet_md md = { .start = info, .length = sizeof(info), .threshold = 1 };
	ulnet_handle_t mdh;
	ulnet_process_id_t t;

	assert_int_equal(memlnd_add_ni(net, a, 61, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 62, &nb), 0);
	set_discovery(a, 0);
	memset(nis, 0, sizeof(nis));
	nis[0].nid = ULNET_NID_LO0;
	nis[1].nid = na;
	nis[1].status = LNET_NI_STATUS_UP;
	assert_int_equal(lnet_ping_info_encode(&p, info, sizeof(info)), 48);
	t.nid = nb;
	t.pid = 12345;
	assert_int_equal(ulnet_md_bind(a, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_NOACK_REQ, t, 0, PING_BITS, 0, 0), 0);
	memlnd_pump(net);
	assert_non_null(strstr(last_log, "Multi-Rail"));
	assert_non_null(strstr(last_log, "61@gni"));
	assert_int_equal(ulnet_peer_info(b, 0, &pi), 0);
	assert_false(pi.multi_rail);
	/* the push target was re-posted: a second push is taken too */
	assert_int_equal(ulnet_md_bind(a, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_NOACK_REQ, t, 0, PING_BITS, 0, 0), 0);
	memlnd_pump(net);
	struct ulnet_counters c;
	ulnet_counters_get(b, &c);
	assert_int_equal(c.drop_count, 0);
	destroy2(net, a, b);
}

/* --- threaded instances, blocking calls ----------------------------------------------- */

static void test_discover_and_ping_threaded(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(false, false), *b = mk(false, false);
	ulnet_nid_t na, nb, nowhere;
	struct ulnet_ping_peer pp;
	ulnet_process_id_t t = { .pid = ULNET_PID_ANY };
	struct ulnet_peer_info pi;

	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 71, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 72, &nb), 0);

	/* ping first: no discovery, so Multi-Rail is not known yet */
	t.nid = nb;
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), 0);
	assert_true(ulnet_nid_same(&pp.primary, &nb));
	assert_false(pp.multi_rail);
	assert_int_equal(pp.nnids, 1);
	assert_true(ulnet_nid_same(&pp.nids[0], &nb));
	assert_int_equal(pp.features, 0x1e);

	assert_int_equal(ulnet_discover(a, &nb, false, 2000, &pp), 0);
	assert_true(pp.multi_rail);
	assert_true(ulnet_nid_same(&pp.primary, &nb));
	assert_int_equal(pp.nnids, 1);
	assert_int_equal(pp.status[0], LNET_NI_STATUS_UP);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_int_equal(pi.state, 273);
	/* again: up to date, nothing sent; forced: ping and push again */
	assert_int_equal(ulnet_discover(a, &nb, false, 2000, &pp), 0);
	assert_int_equal(ulnet_discover(a, &nb, true, 2000, &pp), 0);
	assert_true(pp.multi_rail);
	t.nid = nb;
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), 0);
	assert_true(pp.multi_rail);

	/* no such node on the network */
	memlnd_nid(79, &nowhere);
	t.nid = nowhere;
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), -EHOSTUNREACH);
	assert_int_equal(ulnet_discover(a, &nowhere, false, 2000, &pp), -EHOSTUNREACH);
	/* no NI on that net at all */
	ulnet_nid_from_ipv4(0x0a000001, ulnet_mknet(ULNET_LND_TCP, 0), &nowhere);
	t.nid = nowhere;
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), -EHOSTUNREACH);
	assert_int_equal(ulnet_discover(a, &nowhere, false, 2000, &pp), -EHOSTUNREACH);
	/* our own NID: a peer like any other, pinged and discovered through
	 * the LND (the kernel's lnet_discover() has no special case) */
	t.nid = na;
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), 0);
	assert_true(ulnet_nid_same(&pp.primary, &na));
	assert_int_equal(ulnet_discover(a, &na, false, 2000, &pp), 0);
	assert_true(pp.multi_rail);
	assert_true(ulnet_nid_same(&pp.primary, &na));
	/* a second NID of ours, pinged first (a peer of its own), then the
	 * node discovered: both NIDs gather in one peer (sanity-lnet 219) */
	{
		ulnet_nid_t na2;
		bool both = false;

		assert_int_equal(memlnd_add_ni(net, a, 74, &na2), 0);
		t.nid = na2;
		assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), 0);
		assert_int_equal(ulnet_discover(a, &na, true, 2000, &pp), 0);
		for (int k = 0; ulnet_peer_info(a, k, &pi) == 0; k++)
			if (ulnet_nid_same(&pi.primary, &na))
				both = pi.nnis == 2 && (ulnet_nid_same(&pi.nis[0].nid, &na2) ||
							ulnet_nid_same(&pi.nis[1].nid, &na2));
		assert_true(both);
		assert_int_equal(ulnet_ni_del(a, &na2), 0);
	}
	/* 0@lo: the node itself, as a ping of it */
	assert_int_equal(ulnet_discover(a, &ULNET_NID_LO0, false, 2000, &pp), 0);
	assert_int_equal(pp.nnids, 1);
	assert_true(ulnet_nid_same(&pp.nids[0], &na));

	/* a ping that gets no answer times out */
	memlnd_drop_next(net, 1, 1u << ULNET_MSG_REPLY);
	t.nid = nb;
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 200, &pp), -ETIMEDOUT);
	/* and a later one works */
	assert_int_equal(ulnet_ping(a, t, NULL, 0, 2000, &pp), 0);

	destroy2(net, a, b);
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A large (non-nid4) NID: the memlnd NID `addr` with a 16-byte address. */
static void large_nid(uint32_t addr, ulnet_nid_t *nid)
{
	memlnd_nid(addr, nid);
	nid->size = 12;   /* bytes past the first 4: a 16-byte address */
	memset(nid->addr, 0, sizeof(nid->addr));
	nid->addr[0] = 0xfd;
	nid->addr[15] = (uint8_t)addr;
}

/* The features of the ping info `ln` serves (a GET of itself through 0@lo),
 * and its primary NID as a kernel reading it would find it. */
static uint32_t served_features(ulnet_t *ln, ulnet_nid_t *primary)
{
	uint8_t sink[3960];
	struct getlog g = { 0 };
	struct ulnet_md md = { .start = sink, .length = sizeof(sink), .threshold = 2,
			       .options = ULNET_MD_TRUNCATE, .user_ptr = &g, .handler = get_handler };
	ulnet_handle_t mdh;
	ulnet_process_id_t lo = { .nid = ULNET_NID_LO0, .pid = 12345 };
	struct lnet_ping_ni nis[8];
	struct lnet_ping_info pi = { .nis = nis, .max_nis = 8 };
	const struct lnet_ping_ni *prim;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, mdh, lo, 0, PING_BITS, 0), 0);
	assert_int_equal(g.nreply, 1);
	assert_true(lnet_ping_info_decode(sink, g.mlength, &pi) > 0);
	prim = lnet_ping_info_primary(&pi);
	assert_non_null(prim);
	*primary = prim->nid;
	return ul_get_le32(sink + 4);
}

/* A node whose first NI has no nid4 form says so (PRIMARY_LARGE, 0x40), as
 * a kernel does: without it a kernel reading the info takes the first nid4
 * entry as the primary, or drops the info when there is none. */
static void test_primary_large_feature(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, false), *b = mk(true, false);
	struct ulnet_ni_conf conf;
	ulnet_nid_t big, small, prim;

	large_nid(81, &big);
	memlnd_nid(82, &small);
	memset(&conf, 0, sizeof(conf));
	conf.nid = big;
	assert_int_equal(memlnd_add_ni_conf(net, a, &conf), 0);
	assert_int_equal(served_features(a, &prim), 0x7e);   /* + LARGE_ADDR, PRIMARY_LARGE */
	assert_true(ulnet_nid_same(&prim, &big));
	/* a nid4 NI after it: the large one stays the primary */
	assert_int_equal(memlnd_add_ni(net, a, 82, NULL), 0);
	assert_int_equal(served_features(a, &prim), 0x7e);
	assert_true(ulnet_nid_same(&prim, &big));

	/* nid4 first: the large NI is listed, but is not the primary */
	assert_int_equal(memlnd_add_ni(net, b, 83, &small), 0);
	large_nid(84, &conf.nid);
	assert_int_equal(memlnd_add_ni_conf(net, b, &conf), 0);
	assert_int_equal(served_features(b, &prim), 0x3e);
	assert_true(ulnet_nid_same(&prim, &small));
	destroy2(net, a, b);
}

/* Every kernel sets MULTI_RAIL in its ping info; one with discovery off is
 * still not used as Multi-Rail ("not MR: DD disabled remotely"): only the
 * NID we were given, no push. When a discovered Multi-Rail peer turns its
 * discovery off, it goes back to its primary NID alone. */
static void test_discovery_off_peer_not_mr(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(false, false), *b = mk(false, false);
	ulnet_nid_t nb, nb2;
	struct ulnet_ping_peer pp;
	struct memlnd_trace_ent tr[16];
	int n, i;

	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 91, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 92, &nb), 0);
	assert_int_equal(memlnd_add_ni(net, b, 93, &nb2), 0);
	set_discovery(b, 0);

	assert_int_equal(ulnet_discover(a, &nb, false, 2000, &pp), 0);
	assert_int_equal(pp.features & 0x18, 0x08);   /* MULTI_RAIL, no DISCOVERY */
	assert_false(pp.multi_rail);
	assert_int_equal(pp.nnids, 1);
	assert_true(ulnet_nid_same(&pp.nids[0], &nb));
	/* forced again: ping only, no push to a peer with discovery off */
	memlnd_trace_clear(net);
	assert_int_equal(ulnet_discover(a, &nb, true, 2000, &pp), 0);
	n = memlnd_trace(net, tr, 16);
	for (i = 0; i < n; i++)
		assert_false(tr[i].hdr.type == ULNET_MSG_PUT);
	assert_false(pp.multi_rail);

	/* discovery on at B: A takes it as Multi-Rail with both NIDs */
	set_discovery(b, 1);
	assert_int_equal(ulnet_discover(a, &nb, true, 2000, &pp), 0);
	assert_true(pp.multi_rail);
	assert_int_equal(pp.nnids, 2);
	/* and off again: back to the primary NID, not Multi-Rail */
	set_discovery(b, 0);
	assert_int_equal(ulnet_discover(a, &nb, true, 2000, &pp), 0);
	assert_false(pp.multi_rail);
	assert_int_equal(pp.nnids, 1);
	assert_true(ulnet_nid_same(&pp.nids[0], &nb));
	destroy2(net, a, b);
}

/* Our discovery turned off: a push from a Multi-Rail peer only updates
 * the status of the NIDs we know; the peer stays Multi-Rail (the kernel's
 * push handler marks "no discovery" from the peer's bit alone). */
static void test_push_with_our_discovery_off(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(false, false), *b = mk(false, false);
	ulnet_nid_t nb;
	struct ulnet_ping_peer pp;
	struct ulnet_peer_info pi;
	struct ulnet_counters c0, c1;
	int i;

	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 121, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 122, &nb), 0);
	assert_int_equal(memlnd_add_ni(net, b, 123, NULL), 0);
	assert_int_equal(ulnet_discover(a, &nb, false, 2000, &pp), 0);
	assert_true(pp.multi_rail);
	assert_int_equal(pp.nnids, 2);
	set_discovery(a, 0);
	ulnet_counters_get(a, &c0);
	/* B gets a third NI and pushes it */
	assert_int_equal(memlnd_add_ni(net, b, 124, NULL), 0);
	for (i = 0; i < 500; i++) {   /* at most 5 s */
		ulnet_counters_get(a, &c1);
		if (c1.recv_count > c0.recv_count)
			break;
		nap_ms(10);
	}
	assert_true(i < 500);
	nap_ms(50);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(pi.multi_rail);
	assert_int_equal(pi.nnis, 2);   /* known NIDs only: the new one not added */
	destroy2(net, a, b);
}

/* Discovered through its second NID, a peer's primary NID is the one its
 * ping info names (as a kernel's `lnetctl peer show` would say), first in
 * its list. */
static void test_primary_from_ping_info(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(false, false), *b = mk(false, false);
	ulnet_nid_t nb1, nb2;
	struct ulnet_ping_peer pp;
	struct ulnet_peer_info pi;

	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 131, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 132, &nb1), 0);
	assert_int_equal(memlnd_add_ni(net, b, 133, &nb2), 0);
	assert_int_equal(ulnet_discover(a, &nb2, false, 2000, &pp), 0);
	assert_true(pp.multi_rail);
	assert_true(ulnet_nid_same(&pp.primary, &nb1));
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &nb1));
	assert_int_equal(pi.nnis, 2);
	assert_true(ulnet_nid_same(&pi.nis[0].nid, &nb1));
	assert_true(ulnet_nid_same(&pi.nis[1].nid, &nb2));
	destroy2(net, a, b);
}

/* A ping info listing a NID we cannot parse: the rest is taken, the NID
 * skipped (as the kernel does), not taken for truncation (which pinged
 * again and again, with ever bigger buffers). */
static void test_unparseable_nid_skipped(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(false, false), *b = mk(false, false);
	ulnet_nid_t na, nb;
	struct lnet_ping_ni nis[4], out[4];
	struct lnet_ping_info p = { .features = 0x1e, .pid = 12345, .nnis = 3, .nis = nis,
				    .max_nis = 4 };
	struct lnet_ping_info d = { .nis = out, .max_nis = 4 };
	uint8_t buf[256];
	struct ulnet_md md = { .start = buf, .threshold = 1 };
	struct ulnet_ping_peer pp;
	struct memlnd_trace_ent tr[16];
	ulnet_handle_t mdh;
	ulnet_process_id_t t = { .pid = 12345 };
	ssize_t len;
	int n, i;

	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 97, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 98, &nb), 0);
	assert_int_equal(ulnet_discover(a, &nb, false, 2000, &pp), 0);

	memset(nis, 0, sizeof(nis));
	nis[0].nid = ULNET_NID_LO0;
	nis[0].status = 100;   /* a new sequence */
	nis[1].nid = nb;
	nis[1].status = LNET_NI_STATUS_UP;
	memlnd_nid(99, &nis[2].nid);   /* a NID A has not seen */
	nis[2].status = LNET_NI_STATUS_UP;
	large_nid(96, &nis[3].nid);
	p.nnis = 4;
	len = lnet_ping_info_encode(&p, buf, sizeof(buf));
	assert_true(len > 0);
	/* the large entry (status 4, then size, type, num, address) gets a
	 * NID size of 10 (the entry keeps its 24 bytes): no NID has it */
	buf[16 + 3 * 16 + 4] = 10;
	assert_true(lnet_ping_info_decode(buf, (size_t)len, &d) > 0);
	assert_int_equal(d.nnis, 3);
	assert_int_equal(d.nnis_wire, 4);
	assert_int_equal(d.nnis_skipped, 1);
	assert_false(d.truncated);

	/* B pushes it to A: A takes the new NID, and does not ping B again */
	memlnd_trace_clear(net);
	md.length = (size_t)len;
	t.nid = na;
	assert_int_equal(ulnet_md_bind(b, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(b, NULL, mdh, ULNET_ACK_REQ, t, 0, PING_BITS, 0, 0), 0);
	for (i = 0; i < 500; i++) {   /* at most 5 s: threads on a busy machine */
		struct ulnet_peer_info pi;

		assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
		if (pi.nnis == 2)
			break;
		nap_ms(10);
	}
	assert_true(i < 500);
	nap_ms(100);   /* time for a ping, were one to go */
	n = memlnd_trace(net, tr, 16);
	assert_true(n >= 2);
	assert_int_equal(tr[0].hdr.type, ULNET_MSG_PUT);
	assert_int_equal(tr[1].hdr.type, ULNET_MSG_ACK);
	for (i = 0; i < n && i < 16; i++)   /* no ping of B again */
		assert_false(tr[i].hdr.type == ULNET_MSG_GET);
	destroy2(net, a, b);
}

/* Two NIs of ours on one net and a peer that is not Multi-Rail (our
 * discovery is off): every message to it leaves from the same NI (the
 * kernel's preferred NI of a non-MR peer), where credits and round robin
 * alternated them and the peer saw two nodes. */
static void test_non_mr_peer_keeps_src_ni(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(true, false), *b = mk(true, false);
	ulnet_nid_t na1, na2, nb;
	struct recvlog r = { 0 };
	struct sendlog s = { 0 };
	uint8_t payload[160] = { 0 };
	struct memlnd_trace_ent tr[16];
	int n, i;

	assert_int_equal(memlnd_add_ni(net, a, 111, &na1), 0);
	assert_int_equal(memlnd_add_ni(net, a, 112, &na2), 0);
	assert_int_equal(memlnd_add_ni(net, b, 113, &nb), 0);
	set_discovery(a, 0);
	post_lst_service(b, &r);
	memlnd_trace_clear(net);
	for (i = 0; i < 4; i++) {
		put_lst(a, &nb, &s, payload);
		memlnd_pump(net);
	}
	assert_int_equal(r.n, 4);
	n = memlnd_trace(net, tr, 16);
	assert_int_equal(n, 4);
	for (i = 1; i < n; i++)
		assert_true(ulnet_nid_same(&tr[i].hdr.src_nid, &tr[0].hdr.src_nid));
	destroy2(net, a, b);
}

static void test_peer_api(void **state)
{
	(void)state;
	ulnet_t *ln = mk(true, false);
	ulnet_nid_t p, n1, n2, lo = ULNET_NID_LO0;
	struct ulnet_peer_info pi;

	memlnd_nid(100, &p);
	memlnd_nid(101, &n1);
	memlnd_nid(102, &n2);
	ulnet_nid_t extra[2] = { n1, n2 };
	assert_int_equal(ulnet_peer_add(ln, &p, extra, 2, true), 0);
	/* the configured peer again (the kernel's lnet_peer_add()): the NIDs
	 * it has are no error, a Multi-Rail change is (-EPERM), and so is a
	 * NID of it given as another peer's primary */
	assert_int_equal(ulnet_peer_add(ln, &p, extra, 2, true), 0);
	assert_int_equal(ulnet_peer_add(ln, &p, NULL, 0, false), -EPERM);
	assert_int_equal(ulnet_peer_add(ln, &n2, NULL, 0, false), -EEXIST);
	assert_int_equal(ulnet_peer_add(ln, &n2, NULL, 0, true), -EEXIST);
	assert_int_equal(ulnet_peer_add(ln, &lo, NULL, 0, false), -EINVAL);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &p));
	assert_false(pi.multi_rail);
	assert_int_equal(pi.state, 1u << 3); /* CONFIGURED */
	assert_int_equal(pi.nnis, 3);
	assert_true(ulnet_nid_same(&pi.nis[0].nid, &p));
	/* no NI of ours on its net: no credits, as the kernel shows */
	assert_int_equal(pi.nis[0].max_tx_credits, 0);
	assert_int_equal(pi.nis[0].state, -1);
	/* delete one NID, then the peer */
	assert_int_equal(ulnet_peer_del(ln, &p, &n1, 1), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, 2);
	assert_int_equal(ulnet_peer_del(ln, &p, &n1, 1), -ENOENT);
	assert_int_equal(ulnet_peer_del(ln, &n2, NULL, 0), -ENOENT); /* not the primary */
	assert_int_equal(ulnet_peer_del(ln, &p, NULL, 0), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), -ENOENT);
	assert_int_equal(ulnet_peer_del(ln, &p, NULL, 0), -ENOENT);
	ulnet_destroy(ln);
}

/* A peer whose primary NID is locked (peer add --lock_prim): deleted
 * without force it stays, with its primary NID alone, to be discovered
 * again; with force it goes (sanity-lnet 26). Added again while not
 * configured: -EEXIST for its primary NID, -EALREADY for another. */
static void test_peer_lock_primary_del(void **state)
{
	(void)state;
	ulnet_t *ln = mk(true, false);
	ulnet_nid_t p, n1, n2;
	struct ulnet_peer_info pi;
	const uint32_t mr = 1u << 0, configured = 1u << 3;

	memlnd_nid(100, &p);
	memlnd_nid(101, &n1);
	memlnd_nid(102, &n2);
	ulnet_nid_t extra[2] = { n1, n2 };
	assert_int_equal(ulnet_peer_add_flags(ln, &p, NULL, 0, 1u << 7), -EINVAL);
	assert_int_equal(ulnet_peer_del_flags(ln, &p, NULL, 0, 1u << 7), -EINVAL);
	assert_int_equal(ulnet_peer_add_flags(ln, &p, extra, 2, ULNET_PEER_ADD_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.state, mr | configured | ULNET_PEER_STATE_LOCK_PRIMARY); /* 1048585 */
	assert_int_equal(pi.nnis, 3);
	/* without force: kept, its primary NID alone */
	assert_int_equal(ulnet_peer_del(ln, &p, NULL, 0), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &p));
	assert_int_equal(pi.nnis, 1);
	assert_int_equal(pi.state, mr | configured | ULNET_PEER_STATE_LOCK_PRIMARY);
	/* its primary NID in the list: the same */
	assert_int_equal(ulnet_peer_add(ln, &p, extra, 2, false), 0);
	assert_int_equal(ulnet_peer_del(ln, &p, extra, 1), 0);    /* n1 alone goes */
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, 2);
	ulnet_nid_t with_prim[2] = { n2, p };
	assert_int_equal(ulnet_peer_del(ln, &p, with_prim, 2), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, 1);
	/* with force: gone */
	assert_int_equal(ulnet_peer_del_flags(ln, &p, NULL, 0, ULNET_PEER_DEL_FORCE), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), -ENOENT);

	/* a locked peer no longer configured (peer set --state) */
	assert_int_equal(ulnet_peer_add_flags(ln, &p, &n1, 1, ULNET_PEER_ADD_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_peer_set_state(ln, &p, mr | ULNET_PEER_STATE_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_peer_add(ln, &p, NULL, 0, false), -EEXIST);
	assert_int_equal(ulnet_peer_add(ln, &n1, NULL, 0, false), -EALREADY);
	assert_int_equal(ulnet_peer_del_flags(ln, &p, NULL, 0, ULNET_PEER_DEL_FORCE), 0);

	/* an existing configured peer is locked only through a NID added to
	 * it with the lock asked for (the kernel's) */
	assert_int_equal(ulnet_peer_add(ln, &p, NULL, 0, false), 0);
	assert_int_equal(ulnet_peer_add_flags(ln, &p, NULL, 0, ULNET_PEER_ADD_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.state, mr | configured);
	assert_int_equal(ulnet_peer_add_flags(ln, &p, &n1, 1, ULNET_PEER_ADD_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.state, mr | configured | ULNET_PEER_STATE_LOCK_PRIMARY);
	ulnet_destroy(ln);
}

/* Discovery of a node through one NID, another of its NIDs being the
 * locked primary NID of a peer of its own no longer configured: the two
 * merge, and the locked NID stays primary, in its place among the NIs
 * (sanity-lnet 304: state MULTI_RAIL | DISCOVERED | NIDS_UPTODATE |
 * LOCK_PRIMARY, 1048849). Still configured, that peer keeps its NID. */
static void test_discovery_keeps_locked_primary(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(false, false), *b = mk(false, false);
	ulnet_nid_t nb1, nb2;
	struct ulnet_ping_peer pp;
	struct ulnet_peer_info pi;
	const uint32_t mr = 1u << 0, configured = 1u << 3;

	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 141, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 142, &nb1), 0);
	assert_int_equal(memlnd_add_ni(net, b, 143, &nb2), 0);

	/* configured and locked: the peers stay apart */
	assert_int_equal(ulnet_peer_add_flags(a, &nb2, NULL, 0, ULNET_PEER_ADD_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_discover(a, &nb1, false, 2000, &pp), 0);
	assert_true(ulnet_nid_same(&pp.primary, &nb1));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ulnet_peer_info(a, i, &pi), 0);
		assert_int_equal(pi.nnis, 1);
		if (ulnet_nid_same(&pi.primary, &nb2))
			assert_int_equal(pi.state, mr | configured | ULNET_PEER_STATE_LOCK_PRIMARY);
	}
	assert_int_equal(ulnet_peer_info(a, 2, &pi), -ENOENT);
	assert_int_equal(ulnet_peer_del_flags(a, &nb1, NULL, 0, ULNET_PEER_DEL_FORCE), 0);

	/* locked, not configured: merged, nb2 primary */
	assert_int_equal(ulnet_peer_set_state(a, &nb2, mr | ULNET_PEER_STATE_LOCK_PRIMARY), 0);
	assert_int_equal(ulnet_discover(a, &nb1, false, 2000, &pp), 0);
	assert_true(ulnet_nid_same(&pp.primary, &nb2));
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &nb2));
	assert_int_equal(pi.nnis, 2);
	assert_true(ulnet_nid_same(&pi.nis[0].nid, &nb1));
	assert_true(ulnet_nid_same(&pi.nis[1].nid, &nb2));
	assert_int_equal(pi.state & ~(1u << 2) /* ROUTER_ENABLED */,
			 mr | (1u << 4) | (1u << 8) | ULNET_PEER_STATE_LOCK_PRIMARY);
	assert_int_equal(ulnet_peer_info(a, 1, &pi), -ENOENT);
	/* discovered again: still nb2 */
	assert_int_equal(ulnet_discover(a, &nb1, true, 2000, &pp), 0);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &nb2));
	assert_int_equal(pi.nnis, 2);
	destroy2(net, a, b);
}

static void nid_of(const char *s, ulnet_nid_t *nid)
{
	assert_int_equal(ulnet_nid_parse(s, nid, NULL), 0);
}

/* A peer's NIs: grouped by net in the order the nets came (the kernel's
 * peer_net lists), all of them from ulnet_peer_info_all() (past the 16 of
 * ulnet_peer_info()), and the primary among the NIDs to delete deletes the
 * whole peer. */
static void test_peer_api_many_nis(void **state)
{
	(void)state;
	ulnet_t *ln = mk(true, false);
	ulnet_nid_t p, nids[40], bad;
	struct ulnet_peer_info pi;
	char nb[ULNET_NIDSTR_SIZE], want[ULNET_NIDSTR_SIZE];

	nid_of("24@gni", &p);
	nid_of("13.13.13.13@o2ib", &nids[0]);
	nid_of("15.17.1.5@tcp", &nids[1]);
	nid_of("5@gni", &nids[2]);
	nid_of("14.13.13.13@o2ib", &nids[3]);
	nid_of("11@gni", &nids[4]);
	assert_int_equal(ulnet_peer_add(ln, &p, nids, 5, false), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, 6);
	assert_null(pi.more);
	static const char *const order[] = { "24@gni", "5@gni", "11@gni", "13.13.13.13@o2ib",
					     "14.13.13.13@o2ib", "15.17.1.5@tcp" };
	for (int j = 0; j < 6; j++)
		assert_string_equal(ulnet_nid_str(&pi.nis[j].nid, nb), order[j]);

	/* 35 more on tcp: 41 in all */
	for (int k = 0; k < 35; k++) {
		snprintf(want, sizeof(want), "10.0.0.%d@tcp", k + 1);
		nid_of(want, &nids[k]);
	}
	assert_int_equal(ulnet_peer_add(ln, &p, nids, 35, false), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, ULNET_PEER_INFO_NIS);
	assert_null(pi.more);
	assert_int_equal(ulnet_peer_info_all(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, 41);
	assert_non_null(pi.more);
	/* tcp: 15.17.1.5 first, then the 35 in order */
	assert_string_equal(ulnet_nid_str(&ulnet_peer_info_ni(&pi, 5)->nid, nb), "15.17.1.5@tcp");
	assert_string_equal(ulnet_nid_str(&ulnet_peer_info_ni(&pi, 40)->nid, nb), "10.0.0.35@tcp");
	ulnet_peer_info_release(&pi);
	assert_null(pi.more);
	assert_int_equal(pi.nnis, ULNET_PEER_INFO_NIS);
	ulnet_peer_info_release(NULL);

	/* a NID it lacks before the primary: nothing deleted */
	nid_of("9.9.9.9@tcp", &bad);
	ulnet_nid_t del[3] = { nids[0], bad, p };
	assert_int_equal(ulnet_peer_del(ln, &p, del, 3), -ENOENT);
	assert_int_equal(ulnet_peer_info_all(ln, 0, &pi), 0);
	assert_int_equal(pi.nnis, 41);
	ulnet_peer_info_release(&pi);
	/* the primary among them: the whole peer */
	del[1] = nids[1];
	assert_int_equal(ulnet_peer_del(ln, &p, del, 3), 0);
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), -ENOENT);
	ulnet_destroy(ln);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_target_bytes),
		cmocka_unit_test(test_peer_api_many_nis),
		cmocka_unit_test(test_ulnet_ping_lo),
		cmocka_unit_test(test_first_contact_exchange),
		cmocka_unit_test(test_discovery_timeout_fails_queued),
		cmocka_unit_test(test_push_lost_fails),
		cmocka_unit_test(test_unlink_cancels_discovery_wait),
		cmocka_unit_test(test_discovery_off_sends_at_once),
		cmocka_unit_test(test_ni_change_pushes_to_peers),
		cmocka_unit_test(test_push_without_mr_dropped),
		cmocka_unit_test(test_discover_and_ping_threaded),
		cmocka_unit_test(test_peer_api),
		cmocka_unit_test(test_peer_lock_primary_del),
		cmocka_unit_test(test_discovery_keeps_locked_primary),
		cmocka_unit_test(test_primary_large_feature),
		cmocka_unit_test(test_discovery_off_peer_not_mr),
		cmocka_unit_test(test_push_with_our_discovery_off),
		cmocka_unit_test(test_primary_from_ping_info),
		cmocka_unit_test(test_unparseable_nid_skipped),
		cmocka_unit_test(test_non_mr_peer_keeps_src_ni),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
