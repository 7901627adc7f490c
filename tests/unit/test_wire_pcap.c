/* SPDX-License-Identifier: MIT */
/*
 * test_wire_pcap.c - our codecs against real kernel LNet 2.17 traffic.
 *
 * Every TCP stream of each capture is walked the way a receiver would:
 * acceptor request (connector side), HELLO, then ksock messages (24-byte
 * header, LNet header, payload_length bytes). Each item is decoded and
 * re-encoded, and the bytes must come out identical. Streams captured
 * mid-connection carry no HELLO and are read as V3 from a LE sender, as
 * the capture's own decoder did. The counts per kind are asserted, so a
 * walk that stops early fails.
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

#include "core/lnet_hdr.h"
#include "core/ping_info.h"
#include "lnd/socklnd/sock_wire.h"
#include "pcap.h"
#include "test_util.h"
#include "util/util_bytes.h"

#define LNET_ACCEPT_PORT 988
#define PING_MATCHBITS 0x8000000000000000ULL
#define ZC_MIN_PAYLOAD (16u << 10)
#define MAX_RECS 512
#define MAX_PI_NIS 8

enum rec_kind { R_CONNREQ, R_HELLO, R_NOOP, R_LNET };

struct rec {
	enum rec_kind kind;
	unsigned conn;
	int dir;
	bool from_connector;
	struct lnet_acceptor_req acr;
	struct ksock_hello hello;
	struct ksock_msg_hdr ksm;
	struct lnet_hdr hdr;
	bool has_pi;
	struct lnet_ping_info pi;
	struct lnet_ping_ni pi_nis[MAX_PI_NIS];
};

struct walk {
	struct pcap_capture cap;
	struct rec recs[MAX_RECS];
	unsigned nrecs;
	unsigned connreq, hello, noop, lnet, ping_info, mid_stream;
	unsigned by_type[5];
};

static struct rec *new_rec(struct walk *w, enum rec_kind kind, unsigned conn, int dir,
			   bool from_connector)
{
	struct rec *r;

	assert_true(w->nrecs < MAX_RECS);
	r = &w->recs[w->nrecs++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->conn = conn;
	r->dir = dir;
	r->from_connector = from_connector;
	return r;
}

/* A ping info is recognised by its magic (either order) and must then be
 * valid and re-encode byte for byte. */
static void check_payload(struct rec *r, const uint8_t *p, size_t len)
{
	uint8_t out[512];
	ssize_t rc, n;

	if (len < LNET_PING_INFO_HDR_SIZE ||
	    (ul_get_le32(p) != LNET_PROTO_PING_MAGIC && ul_get_be32(p) != LNET_PROTO_PING_MAGIC))
		return;
	r->pi.nis = r->pi_nis;
	r->pi.max_nis = MAX_PI_NIS;
	rc = lnet_ping_info_decode(p, len, &r->pi);
	assert_true(rc > 0);
	assert_int_equal((size_t)rc, len);
	assert_false(r->pi.truncated);
	assert_false(r->pi.swapped);
	assert_int_equal(r->pi.nnis, r->pi.nnis_wire);
	assert_int_equal(lnet_ping_info_size(&r->pi), len);
	n = lnet_ping_info_encode(&r->pi, out, sizeof(out));
	assert_int_equal(n, rc);
	assert_memory_equal(out, p, (size_t)n);
	r->has_pi = true;
}

static void walk_dir(struct walk *w, unsigned ci, int dir)
{
	const struct pcap_conn *c = &w->cap.conns[ci];
	const struct pcap_stream *s = &c->dir[dir];
	const uint8_t *p = s->data;
	size_t len = s->len, off = 0;
	bool connector = c->connector >= 0 ? c->connector == dir
					   : c->port[dir] != LNET_ACCEPT_PORT;
	const struct lnet_hdr_codec *codec = &lnet_hdr_codec_nid4;
	bool be = false;
	uint8_t out[LNET_HDR_MAX_SIZE + KSOCK_HELLO_V2_SIZE + 4 * KSOCK_HELLO_MAX_IPS];
	ssize_t rc, n;

	assert_false(s->gap);
	if (!len)
		return;

	if (s->syn) {
		struct rec *r;

		if (connector) {
			r = new_rec(w, R_CONNREQ, ci, dir, connector);
			rc = lnet_acceptor_req_decode(p + off, len - off, &r->acr);
			assert_int_equal(rc, LNET_ACCEPTOR_REQ_V1_SIZE);
			n = lnet_acceptor_req_encode(&r->acr, r->acr.swapped, out, sizeof(out));
			assert_int_equal(n, rc);
			assert_memory_equal(out, p + off, (size_t)n);
			off += (size_t)rc;
			w->connreq++;
		}
		r = new_rec(w, R_HELLO, ci, dir, connector);
		rc = ksock_hello_decode_prefix(p + off, len - off, &r->hello);
		assert_int_equal(rc, 8);
		rc = ksock_hello_size(p + off, len - off);
		assert_true(rc > 0);
		rc = ksock_hello_decode(p + off, len - off, &r->hello);
		assert_int_equal(rc, ksock_hello_size(p + off, len - off));
		n = ksock_hello_encode(&r->hello, r->hello.swapped, out, sizeof(out));
		assert_int_equal(n, rc);
		assert_memory_equal(out, p + off, (size_t)n);
		off += (size_t)rc;
		w->hello++;
		be = r->hello.swapped;
		assert_int_not_equal(r->hello.version, KSOCK_PROTO_V1);	/* framing below is V2+ */
		if (r->hello.version == KSOCK_PROTO_V4)
			codec = &lnet_hdr_codec_nid16;
	} else {
		w->mid_stream++;
	}

	while (off < len) {
		struct rec *r = new_rec(w, R_NOOP, ci, dir, connector);

		rc = ksock_msg_hdr_decode(p + off, len - off, be, &r->ksm);
		assert_int_equal(rc, KSOCK_MSG_HDR_SIZE);
		n = ksock_msg_hdr_encode(&r->ksm, be, out, sizeof(out));
		assert_int_equal(n, rc);
		assert_memory_equal(out, p + off, (size_t)n);
		off += (size_t)rc;
		if (r->ksm.type == KSOCK_MSG_NOOP) {
			w->noop++;
			continue;
		}
		r->kind = R_LNET;
		rc = codec->decode(p + off, len - off, &r->hdr);
		assert_int_equal(rc, (ssize_t)codec->size);
		n = codec->encode(&r->hdr, out, sizeof(out));
		assert_int_equal(n, rc);
		assert_memory_equal(out, p + off, (size_t)n);
		off += (size_t)rc;
		/* the whole payload must be in the capture */
		assert_true(r->hdr.payload_length <= len - off);
		check_payload(r, p + off, r->hdr.payload_length);
		off += r->hdr.payload_length;
		w->lnet++;
		w->by_type[r->hdr.type]++;
		if (r->has_pi)
			w->ping_info++;
	}
	assert_int_equal(off, len);
}

static struct walk *walk_capture(const char *name)
{
	struct walk *w = calloc(1, sizeof(*w));
	char path[1024];

	assert_non_null(w);
	snprintf(path, sizeof(path), "%s/pcaps/%s.pcap", tu_shared_dir(), name);
	assert_int_equal(pcap_load(path, &w->cap), 0);
	assert_false(w->cap.truncated);
	assert_int_equal(w->cap.linktype, 1);	/* the captures are Ethernet */
	for (unsigned i = 0; i < w->cap.nconns; i++) {
		const struct pcap_conn *c = &w->cap.conns[i];
		int first = c->connector >= 0 ? c->connector : (c->port[0] == LNET_ACCEPT_PORT);

		walk_dir(w, i, first);
		walk_dir(w, i, !first);
	}
	return w;
}

static void free_walk(struct walk *w)
{
	pcap_free(&w->cap);
	free(w);
}

static void assert_counts(const struct walk *w, unsigned connreq, unsigned hello, unsigned noop,
			  unsigned put, unsigned get, unsigned ack, unsigned reply, unsigned pinfo)
{
	assert_int_equal(w->connreq, connreq);
	assert_int_equal(w->hello, hello);
	assert_int_equal(w->noop, noop);
	assert_int_equal(w->by_type[ULNET_MSG_PUT], put);
	assert_int_equal(w->by_type[ULNET_MSG_GET], get);
	assert_int_equal(w->by_type[ULNET_MSG_ACK], ack);
	assert_int_equal(w->by_type[ULNET_MSG_REPLY], reply);
	assert_int_equal(w->by_type[ULNET_MSG_HELLO], 0);
	assert_int_equal(w->lnet, put + get + ack + reply);
	assert_int_equal(w->ping_info, pinfo);
}

static ulnet_nid_t tcp_nid(uint32_t ip)
{
	ulnet_nid_t nid;

	ulnet_nid_from_ipv4(ip, ulnet_mknet(ULNET_LND_TCP, 0), &nid);
	return nid;
}

#define IP_G1 0xc0a84d0bu	/* 192.168.77.11 */
#define IP_G2 0xc0a84d0cu	/* 192.168.77.12 */

static bool wmd_eq(const lnet_wire_handle_t *a, const lnet_wire_handle_t *b)
{
	return a->wh_interface_cookie == b->wh_interface_cookie &&
	       a->wh_object_cookie == b->wh_object_cookie;
}

static bool wmd_none(const lnet_wire_handle_t *a)
{
	return a->wh_interface_cookie == ~0ULL && a->wh_object_cookie == ~0ULL;
}

/* The kernel's HELLO pair: V3 LE, pid 12345, dst fields 0, nips 0, and
 * the passive side answers with the inverted type. */
static void check_handshakes(const struct walk *w, unsigned nconns)
{
	static const int32_t want[3] = { SOCKLND_CONN_CONTROL, SOCKLND_CONN_BULK_IN,
					 SOCKLND_CONN_BULK_OUT };
	ulnet_nid_t g2 = tcp_nid(IP_G2);
	unsigned seen = 0;

	assert_int_equal(w->cap.nconns, nconns);
	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];
		const struct ksock_hello *h = &r->hello;

		if (r->kind == R_CONNREQ) {
			assert_int_equal(r->acr.version, 1);
			assert_false(r->acr.swapped);
			assert_true(ulnet_nid_same(&r->acr.target, &g2));
			continue;
		}
		if (r->kind != R_HELLO)
			continue;
		assert_int_equal(h->version, KSOCK_PROTO_V3);
		assert_false(h->swapped);
		assert_int_equal(h->src_pid, ULNET_PID_LUSTRE);
		assert_int_equal(h->dst_pid, 0);
		assert_int_equal(h->dst_incarnation, 0);
		assert_int_equal(h->nips, 0);
		assert_int_not_equal(h->src_incarnation, 0);
		if (r->from_connector) {
			assert_true(r->conn < 3);
			assert_int_equal(h->ctype, want[r->conn]);
			assert_true(ulnet_nid_same(&h->dst_nid, &g2));
		} else {
			int32_t inv = want[r->conn] == SOCKLND_CONN_CONTROL ? SOCKLND_CONN_CONTROL :
				      want[r->conn] == SOCKLND_CONN_BULK_IN ? SOCKLND_CONN_BULK_OUT :
				      SOCKLND_CONN_BULK_IN;

			assert_int_equal(h->ctype, inv);
			assert_true(ulnet_nid_same(&h->src_nid, &g2));
		}
		seen++;
	}
	assert_int_equal(seen, 2 * nconns);
	for (unsigned i = 0; i < w->cap.nconns; i++) {
		assert_int_equal(w->cap.conns[i].connector, 0);
		assert_int_equal(w->cap.conns[i].port[1], LNET_ACCEPT_PORT);
		assert_int_equal(w->cap.conns[i].port[0], 1023 - i);	/* privileged, counting down */
	}
}

/* Common to every ping/discovery ping info of these two nodes. */
static void check_pi(const struct rec *r, uint32_t ip)
{
	ulnet_nid_t nid = tcp_nid(ip);

	assert_true(r->has_pi);
	assert_int_equal(r->pi.features, 0x1e);
	assert_int_equal(r->pi.pid, ULNET_PID_LUSTRE);
	assert_int_equal(r->pi.nnis, 2);
	assert_true(ulnet_nid_same(&r->pi.nis[0].nid, &ULNET_NID_LO0));
	assert_int_equal(r->pi.nis[0].status, 2);		/* sequence number */
	assert_int_equal(r->pi.nis[0].msg_size, 0);
	assert_true(ulnet_nid_same(&r->pi.nis[1].nid, &nid));
	assert_int_equal(r->pi.nis[1].status, LNET_NI_STATUS_UP);
}

static uint32_t rec_src_ip(const struct rec *r)
{
	return ulnet_nid_ipv4(&r->hdr.src_nid);
}

/* GET ping -> REPLY with ping info echoing the return handle. */
static void check_ping_exchange(const struct walk *w, uint32_t sink_length)
{
	const struct rec *get = NULL, *reply = NULL;

	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];

		if (r->kind != R_LNET)
			continue;
		if (r->hdr.type == ULNET_MSG_GET)
			get = r;
		if (r->hdr.type == ULNET_MSG_REPLY)
			reply = r;
	}
	assert_non_null(get);
	assert_non_null(reply);
	assert_int_equal(get->hdr.msg.get.ptl_index, 0);
	assert_int_equal(get->hdr.msg.get.match_bits, PING_MATCHBITS);
	assert_int_equal(get->hdr.msg.get.src_offset, 0);
	assert_int_equal(get->hdr.msg.get.sink_length, sink_length);
	assert_int_equal(get->hdr.payload_length, 0);
	assert_int_equal(get->hdr.src_pid, ULNET_PID_LUSTRE);
	assert_int_equal(get->hdr.dest_pid, ULNET_PID_LUSTRE);
	assert_int_equal(rec_src_ip(get), IP_G1);
	assert_int_equal(ulnet_nid_ipv4(&get->hdr.dest_nid), IP_G2);
	assert_int_equal(get->ksm.csum, 0);
	assert_int_equal(reply->hdr.payload_length, 48);
	assert_true(wmd_eq(&reply->hdr.msg.reply.dst_wmd, &get->hdr.msg.get.return_wmd));
	assert_int_equal(rec_src_ip(reply), IP_G2);
	assert_int_equal(reply->conn, get->conn);
	assert_int_not_equal(reply->dir, get->dir);
	check_pi(reply, IP_G2);
}

/* Discovery pushes: PUT ptl 0 with a real ack handle and the sender's ping
 * info; the ACK echoes the handle, the match bits and mlength 48. */
static void check_pushes(const struct walk *w)
{
	unsigned puts = 0, acks = 0;

	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];

		if (r->kind != R_LNET || r->hdr.type != ULNET_MSG_PUT || r->hdr.msg.put.ptl_index != 0)
			continue;
		assert_int_equal(r->hdr.msg.put.match_bits, PING_MATCHBITS);
		assert_int_equal(r->hdr.msg.put.hdr_data, 0);
		assert_int_equal(r->hdr.msg.put.offset, 0);
		assert_false(wmd_none(&r->hdr.msg.put.ack_wmd));
		assert_int_equal(r->hdr.payload_length, 48);
		check_pi(r, rec_src_ip(r));
		puts++;
		for (unsigned j = 0; j < w->nrecs; j++) {
			const struct rec *a = &w->recs[j];

			if (a->kind != R_LNET || a->hdr.type != ULNET_MSG_ACK ||
			    !wmd_eq(&a->hdr.msg.ack.dst_wmd, &r->hdr.msg.put.ack_wmd))
				continue;
			assert_int_equal(a->hdr.msg.ack.match_bits, PING_MATCHBITS);
			assert_int_equal(a->hdr.msg.ack.mlength, 48);
			assert_int_equal(a->hdr.payload_length, 0);
			assert_int_equal(a->conn, r->conn);
			assert_int_not_equal(a->dir, r->dir);
			assert_true(ulnet_nid_same(&a->hdr.dest_nid, &r->hdr.src_nid));
			acks++;
		}
	}
	assert_int_equal(puts, 2);
	assert_int_equal(acks, 2);
}

static void test_ping(void **state)
{
	(void)state;
	struct walk *w = walk_capture("ping");

	assert_counts(w, 3, 6, 0, 0, 1, 0, 1, 1);
	assert_int_equal(w->mid_stream, 0);
	check_handshakes(w, 3);
	check_ping_exchange(w, LNET_PING_INFO_LNETCTL_SIZE);
	/* exact values from ping.ksock-decoded.txt */
	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];

		if (r->kind == R_HELLO)
			assert_int_equal(r->hello.src_incarnation, r->from_connector ?
					 0x18e9efb3bcf219abULL : 0x18e9efb42f064e20ULL);

		if (r->kind == R_LNET && r->hdr.type == ULNET_MSG_GET) {
			assert_int_equal(r->hdr.msg.get.return_wmd.wh_interface_cookie,
					 0x18e9efb3b505a165ULL);
			assert_int_equal(r->hdr.msg.get.return_wmd.wh_object_cookie, 0xd);
			assert_int_equal(r->conn, 0);	/* on CONTROL */
		}
	}
	free_walk(w);
}

static void test_discover(void **state)
{
	(void)state;
	struct walk *w = walk_capture("discover");

	assert_counts(w, 0, 0, 0, 2, 1, 2, 1, 3);
	assert_int_equal(w->cap.nconns, 1);
	assert_int_equal(w->mid_stream, 2);
	check_ping_exchange(w, LNET_PING_INFO_MIN_SIZE);
	check_pushes(w);
	free_walk(w);
}

static void test_discover_fresh(void **state)
{
	(void)state;
	struct walk *w = walk_capture("discover-fresh");

	assert_counts(w, 3, 6, 0, 2, 1, 2, 1, 3);
	check_handshakes(w, 3);
	check_ping_exchange(w, LNET_PING_INFO_MIN_SIZE);
	check_pushes(w);
	free_walk(w);
}

/* selftest RPCs: 160-byte PUTs, no ACK wanted, portals 50/51/52 */
static void count_lst_puts(const struct walk *w, unsigned want50, unsigned want51,
			   unsigned want52)
{
	unsigned ptl[64] = { 0 };

	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];

		if (r->kind != R_LNET || r->hdr.type != ULNET_MSG_PUT || r->hdr.payload_length != 160)
			continue;
		assert_true(wmd_none(&r->hdr.msg.put.ack_wmd));
		assert_true(r->hdr.msg.put.ptl_index < 64);
		assert_false(r->has_pi);
		ptl[r->hdr.msg.put.ptl_index]++;
	}
	assert_int_equal(ptl[50], want50);
	assert_int_equal(ptl[51], want51);
	assert_int_equal(ptl[52], want52);
}

static void test_first_contact_lst(void **state)
{
	(void)state;
	struct walk *w = walk_capture("first-contact-lst");

	assert_counts(w, 3, 6, 0, 12, 1, 2, 1, 3);
	check_handshakes(w, 3);
	check_ping_exchange(w, LNET_PING_INFO_MIN_SIZE);
	check_pushes(w);
	count_lst_puts(w, 2, 3, 5);
	free_walk(w);
}

static void test_lst(void **state)
{
	(void)state;
	struct walk *w = walk_capture("lst");
	unsigned zc_req = 0, zc_ack = 0, bulk4k = 0;

	assert_counts(w, 0, 0, 3, 41, 3, 0, 3, 0);
	assert_int_equal(w->cap.nconns, 3);
	count_lst_puts(w, 11, 8, 19);

	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];

		assert_int_equal(r->ksm.csum, 0);
		if (r->kind == R_LNET) {
			if (r->hdr.payload_length >= ZC_MIN_PAYLOAD) {
				/* zero-copy request [N,0], N never the keepalive 1 */
				assert_true(r->ksm.zc_cookies[0] > 1);
				assert_int_equal(r->ksm.zc_cookies[1], 0);
				assert_int_equal(r->hdr.type, ULNET_MSG_REPLY);
				zc_req++;
			} else {
				assert_int_equal(r->ksm.zc_cookies[0], 0);
				assert_int_equal(r->ksm.zc_cookies[1], 0);
			}
			if (r->hdr.type == ULNET_MSG_PUT && r->hdr.payload_length == 4096) {
				assert_int_equal(r->hdr.msg.put.ptl_index, 52);
				bulk4k++;
			}
			if (r->hdr.type == ULNET_MSG_GET) {
				assert_int_equal(r->hdr.msg.get.ptl_index, 52);
				assert_int_equal(r->hdr.msg.get.sink_length, 65536);
			}
			continue;
		}
		if (r->kind != R_NOOP)
			continue;
		/* NOOP [0,N]: the ZC-ACK, on the same connection, other way */
		assert_int_equal(r->ksm.zc_cookies[0], 0);
		assert_true(r->ksm.zc_cookies[1] > 1);
		for (unsigned j = 0; j < w->nrecs; j++) {
			const struct rec *q = &w->recs[j];

			if (q->kind == R_LNET && q->ksm.zc_cookies[0] == r->ksm.zc_cookies[1] &&
			    q->conn == r->conn && q->dir != r->dir)
				zc_ack++;
		}
	}
	assert_int_equal(zc_req, 3);
	assert_int_equal(zc_ack, 3);
	assert_int_equal(bulk4k, 3);
	free_walk(w);
}

static void test_idle_keepalive(void **state)
{
	(void)state;
	struct walk *w = walk_capture("idle-keepalive");

	assert_counts(w, 0, 0, 3, 0, 0, 0, 0, 0);
	assert_int_equal(w->cap.nconns, 3);
	for (unsigned i = 0; i < w->nrecs; i++) {
		const struct rec *r = &w->recs[i];

		assert_int_equal(r->kind, R_NOOP);
		assert_int_equal(r->ksm.csum, 0);
		assert_int_equal(r->ksm.zc_cookies[0], 0);
		assert_int_equal(r->ksm.zc_cookies[1], KSOCK_KEEPALIVE_COOKIE);
		assert_int_equal(r->conn, w->recs[0].conn);	/* one (ACK) connection */
	}
	free_walk(w);
}

/* errors-refused has a SYN and a RST and no data: nothing to walk. */
static void test_errors_refused(void **state)
{
	(void)state;
	struct walk *w = walk_capture("errors-refused");

	assert_int_equal(w->cap.nconns, 1);
	assert_true(w->cap.conns[0].rst);
	assert_int_equal(w->cap.conns[0].connector, 0);
	assert_int_equal(w->nrecs, 0);
	free_walk(w);
}

/* The reader must survive any cut of a capture file. */
static void test_pcap_truncated_files(void **state)
{
	(void)state;
	char path[1024];
	uint8_t *buf;
	size_t len;

	snprintf(path, sizeof(path), "%s/pcaps/ping.pcap", tu_shared_dir());
	assert_int_equal(tu_read_file(path, &buf, &len), 0);
	for (size_t i = 0; i < len; i++) {
		struct pcap_capture cap;
		int rc = pcap_parse(buf, i, &cap);

		assert_true(i < 24 ? rc == -EINVAL : rc == 0);
		pcap_free(&cap);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_discover),
		cmocka_unit_test(test_discover_fresh),
		cmocka_unit_test(test_first_contact_lst),
		cmocka_unit_test(test_lst),
		cmocka_unit_test(test_idle_keepalive),
		cmocka_unit_test(test_errors_refused),
		cmocka_unit_test(test_pcap_truncated_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
