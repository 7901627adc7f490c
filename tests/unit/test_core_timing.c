/* SPDX-License-Identifier: MIT */
/*
 * test_core_timing.c - what the core measures and times on a fake clock,
 * over memlnd: PUT egress and PUT->ACK latency figures of the NI and the
 * peer NI (samples, min, max, exact average, sum and buckets), the bucket
 * a latency sample goes in, the payload bytes by message type of the NI
 * and the peer NI, and the deadline of a message that is not a PUT, which
 * it gets when it waits for a credit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "memlnd.h"
#include "ulnet/ulnet.h"

#define NS 1000000000ULL

struct evlog {
	struct ulnet_event ev[16];
	int n;
};

static void rec(const struct ulnet_event *ev)
{
	struct evlog *l = ev->md_user_ptr;

	assert_true(l->n < 16);
	l->ev[l->n++] = *ev;
}

static uint64_t fake_now;
static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static const ulnet_process_id_t any_id = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						    .addr = { 0xff, 0xff, 0xff, 0xff } },
					   .pid = ULNET_PID_ANY };

static ulnet_t *mk(void)
{
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS, .clock = fake_clock };
	struct ulnet_globals g;
	ulnet_t *ln = NULL;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	ulnet_globals_get(ln, &g);
	g.discovery = 0;
	g.response_tracking = 3;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
	return ln;
}

static void post_sink(ulnet_t *ln, unsigned portal, void *buf, size_t len, struct evlog *log)
{
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = buf, .length = len, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = log, .handler = rec };

	assert_int_equal(ulnet_me_attach(ln, portal, any_id, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER,
					 &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_RETAIN, &mdh), 0);
}

static void check_lat(const struct ulnet_latency *l, uint64_t n, uint64_t min, uint64_t max,
		      uint64_t avg)
{
	uint64_t in_buckets = 0;

	assert_int_equal(l->samples, n);
	assert_int_equal(l->min_nsec, min);
	assert_int_equal(l->max_nsec, max);
	assert_int_equal(l->avg_nsec, avg);
	for (unsigned k = 0; k < ULNET_LAT_BUCKETS; k++)
		in_buckets += l->bucket[k];
	assert_int_equal(in_buckets, n);
}

/* The bucket bounds (1.024 us doubling to 68.7 s, then +Inf), the bucket of
 * a sample at, just past and far past them, and what adding samples keeps. */
static void test_latency_buckets(void **state)
{
	(void)state;
	const unsigned last = ULNET_LAT_BUCKETS - 1;

	assert_int_equal(ulnet_latency_bucket_le(0), 1024);
	assert_int_equal(ulnet_latency_bucket_le(1), 2048);
	assert_int_equal(ulnet_latency_bucket_le(last - 1), UINT64_C(1) << 36);
	assert_true(ulnet_latency_bucket_le(last) == UINT64_MAX);
	assert_true(ulnet_latency_bucket_le(last + 1) == UINT64_MAX);
	assert_true(ulnet_latency_bucket_le(~0u) == UINT64_MAX);
	/* they span a microsecond to a minute */
	assert_true(ulnet_latency_bucket_le(0) < 2000);
	assert_true(ulnet_latency_bucket_le(last - 1) > 60 * NS);

	assert_int_equal(lnet_latency_bucket(0), 0);
	assert_int_equal(lnet_latency_bucket(1), 0);
	assert_int_equal(lnet_latency_bucket(1023), 0);
	for (unsigned k = 0; k < last; k++) {
		uint64_t le = ulnet_latency_bucket_le(k);

		/* a bound is in its bucket (le: at most), one above in the next */
		assert_int_equal(lnet_latency_bucket(le), k);
		assert_int_equal(lnet_latency_bucket(le + 1), k + 1);
		assert_int_equal(lnet_latency_bucket(le - 1), k);
		if (k)
			assert_int_equal(lnet_latency_bucket(ulnet_latency_bucket_le(k - 1) + 1), k);
	}
	assert_int_equal(lnet_latency_bucket((UINT64_C(1) << 36) + 1), last);
	assert_int_equal(lnet_latency_bucket(100 * NS), last);
	assert_int_equal(lnet_latency_bucket(UINT64_C(1) << 63), last);
	assert_int_equal(lnet_latency_bucket(UINT64_MAX), last);

	/* adding keeps the count, the exact sum, min, max and the buckets */
	static const uint64_t ns[] = { 0, 1024, 1025, 3 * NS, 70 * NS, UINT64_C(1) << 40 };
	struct lnet_latency l;
	uint64_t sum = 0;

	memset(&l, 0, sizeof(l));
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		lnet_latency_add(&l, ns[i]);
		sum += ns[i];
		assert_int_equal(l.samples, i + 1);
		assert_int_equal(l.sum_nsec, sum);
	}
	struct ulnet_latency g = lnet_latency_get(&l);

	assert_int_equal(g.samples, 6);
	assert_int_equal(g.sum_nsec, sum);
	assert_int_equal(g.avg_nsec, sum / 6);
	assert_int_equal(g.min_nsec, 0);
	assert_int_equal(g.max_nsec, UINT64_C(1) << 40);
	assert_int_equal(g.bucket[0], 2);
	assert_int_equal(g.bucket[1], 1);
	/* 3 s: at most 2^32 ns (4.29 s), bucket 32 - 10 */
	assert_int_equal(g.bucket[32 - ULNET_LAT_BUCKET_SHIFT], 1);
	assert_int_equal(g.bucket[last], 2);
	uint64_t in_buckets = 0;

	for (unsigned k = 0; k < ULNET_LAT_BUCKETS; k++)
		in_buckets += g.bucket[k];
	assert_int_equal(in_buckets, 6);
}

/* memlnd completes a send when it delivers it: the time between ulnet_put()
 * and the pump is the PUT's egress, and its ACK comes back in the same
 * pump. Three PUTs taking 500, 300 and 301 ns. */
static void test_put_latency_figures(void **state)
{
	(void)state;
	static const uint64_t took[] = { 500, 300, 301 };
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a, *b;
	ulnet_nid_t na, nb;
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[8] = { 1 }, dst[8];
	/* threshold 2 (SEND and ACK): the response tracker stays until the
	 * ACK (an idle THRESH_INF MD drops it when the SEND completes) */
	struct ulnet_md smd = { .start = src, .length = sizeof(src), .threshold = 2,
				.user_ptr = &il, .handler = rec };
	ulnet_handle_t mdh;
	struct ulnet_ni_info ni;
	struct ulnet_peer_info pi;
	unsigned i;

	fake_now = 1000 * NS;
	a = mk();
	b = mk();
	assert_int_equal(memlnd_add_ni(net, a, 1, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	post_sink(b, 7, dst, sizeof(dst), &tl);
	for (i = 0; i < sizeof(took) / sizeof(took[0]); i++) {
		ulnet_process_id_t to = { .nid = nb, .pid = 12345 };

		assert_int_equal(ulnet_md_bind(a, &smd, ULNET_UNLINK, &mdh), 0);
		assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_ACK_REQ, to, 7, 0, 0, 0), 0);
		fake_now += took[i];
		memlnd_pump(net);
		fake_now += 10 * NS;   /* idle time between PUTs counts nowhere */
	}
	assert_int_equal(tl.n, 3);
	assert_int_equal(il.n, 6);   /* SEND + ACK each */

	/* index 0 is 0@lo */
	assert_int_equal(ulnet_ni_info(a, 1, &ni), 0);
	check_lat(&ni.put_egress, 3, 300, 500, 367);   /* 1101 / 3, rounded down */
	check_lat(&ni.put_ack, 3, 300, 500, 367);
	/* the exact sum; all three at most 1.024 us */
	assert_int_equal(ni.put_egress.sum_nsec, 1101);
	assert_int_equal(ni.put_egress.bucket[0], 3);
	assert_int_equal(ni.put_ack.sum_nsec, 1101);
	assert_int_equal(ni.get_rtt.samples, 0);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	check_lat(&pi.nis[0].put_egress, 3, 300, 500, 367);
	check_lat(&pi.nis[0].put_ack, 3, 300, 500, 367);
	assert_int_equal(pi.nis[0].put_ack.sum_nsec, 1101);
	assert_int_equal(pi.nis[0].put_ack.bucket[0], 3);
	/* the target measured nothing: it sent only ACKs */
	assert_int_equal(ulnet_ni_info(b, 1, &ni), 0);
	assert_int_equal(ni.put_egress.samples, 0);
	assert_int_equal(ni.put_ack.samples, 0);

	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* The payload bytes by message type, on both sides of a PUT with an ACK
 * (16 bytes into an 8-byte MD that truncates), a GET of 8 bytes and a PUT
 * no MD matches (dropped): counted where the messages are, under the types
 * their counts are, and adding up to the node's send/recv/drop_length. */
static void test_bytes_by_type(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a, *b;
	ulnet_nid_t nb;
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[16] = { 3 }, dst[8], sink[8];
	ulnet_handle_t meh, mdh;
	ulnet_process_id_t to;
	struct ulnet_ni_info na, nbi;
	struct ulnet_peer_info pa, pb;
	struct ulnet_counters ca, cb;

	fake_now = 9000 * NS;
	a = mk();
	b = mk();
	assert_int_equal(memlnd_add_ni(net, a, 1, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	to = (ulnet_process_id_t){ .nid = nb, .pid = 12345 };
	/* b: portal 7 takes PUTs (truncated to 8 bytes) and serves GETs, at
	 * the offsets they ask for */
	struct ulnet_md t = { .start = dst, .length = sizeof(dst), .threshold = ULNET_MD_THRESH_INF,
			      .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_TRUNCATE |
					 ULNET_MD_MANAGE_REMOTE,
			      .user_ptr = &tl, .handler = rec };

	assert_int_equal(ulnet_me_attach(b, 7, any_id, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh),
			 0);
	assert_int_equal(ulnet_md_attach(b, meh, &t, ULNET_RETAIN, &mdh), 0);

	struct ulnet_md p = { .start = src, .length = sizeof(src), .threshold = 2,
			      .user_ptr = &il, .handler = rec };
	struct ulnet_md g = { .start = sink, .length = sizeof(sink), .threshold = 2,
			      .user_ptr = &il, .handler = rec };
	struct ulnet_md d = { .start = src, .length = 5, .threshold = 1 };

	assert_int_equal(ulnet_md_bind(a, &p, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_ACK_REQ, to, 7, 0, 0, 0), 0);
	memlnd_pump(net);
	assert_int_equal(ulnet_md_bind(a, &g, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_get(a, NULL, mdh, to, 7, 0, 0), 0);
	memlnd_pump(net);
	/* portal 8: nothing there, b drops the 5 bytes */
	assert_int_equal(ulnet_md_bind(a, &d, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_NOACK_REQ, to, 8, 0, 0, 0), 0);
	memlnd_pump(net);
	assert_int_equal(il.n, 4);   /* SEND + ACK, SEND + REPLY */
	for (int i = 0; i < il.n; i++)
		assert_int_equal(il.ev[i].status, 0);

	assert_int_equal(ulnet_ni_info(a, 1, &na), 0);
	assert_int_equal(ulnet_ni_info(b, 1, &nbi), 0);
	assert_int_equal(ulnet_peer_info(a, 0, &pa), 0);
	assert_int_equal(ulnet_peer_info(b, 0, &pb), 0);
	ulnet_counters_get(a, &ca);
	ulnet_counters_get(b, &cb);

	/* a: two PUTs of 16 and 5 bytes, a GET (none); an ACK (none) and
	 * the REPLY's 8 bytes back */
	assert_int_equal(na.sent.n[ULNET_MSG_PUT], 2);
	assert_int_equal(na.sent_bytes.n[ULNET_MSG_PUT], 21);
	assert_int_equal(na.sent.n[ULNET_MSG_GET], 1);
	assert_int_equal(na.sent_bytes.n[ULNET_MSG_GET], 0);
	assert_int_equal(na.received.n[ULNET_MSG_ACK], 1);
	assert_int_equal(na.received_bytes.n[ULNET_MSG_ACK], 0);
	assert_int_equal(na.received.n[ULNET_MSG_REPLY], 1);
	assert_int_equal(na.received_bytes.n[ULNET_MSG_REPLY], 8);
	assert_int_equal(ca.send_length, 21);
	assert_int_equal(ca.recv_length, 8);
	/* b: the first PUT's 8 bytes placed (of 16), the GET (none), the
	 * dropped PUT's 5; it sent the ACK (as a PUT, no bytes) and the
	 * REPLY's 8 bytes (as the GET) */
	assert_int_equal(nbi.received.n[ULNET_MSG_PUT], 1);
	assert_int_equal(nbi.received_bytes.n[ULNET_MSG_PUT], 8);
	assert_int_equal(nbi.received.n[ULNET_MSG_GET], 1);
	assert_int_equal(nbi.received_bytes.n[ULNET_MSG_GET], 0);
	assert_int_equal(nbi.dropped.n[ULNET_MSG_PUT], 1);
	assert_int_equal(nbi.dropped_bytes.n[ULNET_MSG_PUT], 5);
	assert_int_equal(nbi.sent.n[ULNET_MSG_PUT], 1);
	assert_int_equal(nbi.sent_bytes.n[ULNET_MSG_PUT], 0);
	assert_int_equal(nbi.sent.n[ULNET_MSG_GET], 1);
	assert_int_equal(nbi.sent_bytes.n[ULNET_MSG_GET], 8);
	assert_int_equal(cb.recv_length, 8);
	assert_int_equal(cb.send_length, 8);
	assert_int_equal(cb.drop_length, 5);
	/* each side's only peer NI: as its NI (but the drop, which the NI
	 * takes before there is a peer NI to count it on) */
	for (int ty = 0; ty < 5; ty++) {
		assert_int_equal(pa.nis[0].sent_bytes.n[ty], na.sent_bytes.n[ty]);
		assert_int_equal(pa.nis[0].received_bytes.n[ty], na.received_bytes.n[ty]);
		assert_int_equal(pb.nis[0].sent_bytes.n[ty], nbi.sent_bytes.n[ty]);
		assert_int_equal(pb.nis[0].received_bytes.n[ty], nbi.received_bytes.n[ty]);
		assert_int_equal(pb.nis[0].dropped_bytes.n[ty], 0);
	}

	/* stats reset: the bytes too */
	ulnet_counters_reset(b);
	assert_int_equal(ulnet_ni_info(b, 1, &nbi), 0);
	assert_int_equal(ulnet_peer_info(b, 0, &pb), 0);
	assert_int_equal(nbi.sent_bytes.n[ULNET_MSG_GET], 0);
	assert_int_equal(nbi.received_bytes.n[ULNET_MSG_PUT], 0);
	assert_int_equal(nbi.dropped_bytes.n[ULNET_MSG_PUT], 0);
	assert_int_equal(pb.nis[0].sent_bytes.n[ULNET_MSG_GET], 0);

	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* A GET waits for the only peer credit behind a PUT; the clock passes the
 * transaction timeout before the credit comes back: the GET is dropped
 * (-ETIMEDOUT), its deadline counted from when it was sent. A second GET,
 * sent later, waits less than the timeout and goes. */
static void test_credit_wait_deadline(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a, *b;
	ulnet_nid_t nb;
	struct ulnet_ni_conf conf;
	struct ulnet_globals g;
	struct evlog tl = { 0 }, pl = { 0 }, gl = { 0 }, gl2 = { 0 };
	uint8_t src[8] = { 2 }, dst[8], sink[8], sink2[8];
	ulnet_handle_t pmd, gmd, gmd2;
	ulnet_process_id_t to;
	struct ulnet_counters c;

	fake_now = 5000 * NS;
	a = mk();
	b = mk();
	ulnet_globals_get(a, &g);
	memset(&conf, 0, sizeof(conf));
	memlnd_nid(1, &conf.nid);
	conf.tun.peer_credits = 1;
	assert_int_equal(memlnd_add_ni_conf(net, a, &conf), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	post_sink(b, 9, dst, sizeof(dst), &tl);
	to = (ulnet_process_id_t){ .nid = nb, .pid = 12345 };

	struct ulnet_md p = { .start = src, .length = sizeof(src), .threshold = 1,
			      .user_ptr = &pl, .handler = rec };
	struct ulnet_md q = { .start = sink, .length = sizeof(sink), .threshold = 2,
			      .user_ptr = &gl, .handler = rec };
	struct ulnet_md q2 = { .start = sink2, .length = sizeof(sink2), .threshold = 2,
			       .user_ptr = &gl2, .handler = rec };
	assert_int_equal(ulnet_md_bind(a, &p, ULNET_UNLINK, &pmd), 0);
	assert_int_equal(ulnet_md_bind(a, &q, ULNET_UNLINK, &gmd), 0);
	assert_int_equal(ulnet_md_bind(a, &q2, ULNET_UNLINK, &gmd2), 0);

	assert_int_equal(ulnet_put(a, NULL, pmd, ULNET_NOACK_REQ, to, 9, 0, 0, 0), 0);
	assert_int_equal(ulnet_get(a, NULL, gmd, to, 9, 0, 0), 0);   /* waits */
	assert_int_equal(memlnd_queued(net), 1);
	fake_now += (uint64_t)(g.transaction_timeout - 1) * NS;
	assert_int_equal(ulnet_get(a, NULL, gmd2, to, 9, 0, 0), 0);   /* waits too */
	fake_now += 2 * NS;   /* past the first GET's deadline only */
	memlnd_pump(net);

	assert_int_equal(pl.n, 1);
	assert_int_equal(pl.ev[0].status, 0);
	assert_int_equal(gl.n, 1);
	assert_int_equal(gl.ev[0].type, ULNET_EVENT_SEND);
	assert_int_equal(gl.ev[0].status, -ETIMEDOUT);
	assert_int_equal(gl2.n, 2);
	assert_int_equal(gl2.ev[0].type, ULNET_EVENT_SEND);
	assert_int_equal(gl2.ev[0].status, 0);
	assert_int_equal(gl2.ev[1].type, ULNET_EVENT_REPLY);
	assert_int_equal(gl2.ev[1].status, 0);
	ulnet_counters_get(a, &c);
	assert_int_equal(c.drop_count, 1);
	assert_int_equal(c.msgs_alloc, 0);

	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latency_buckets),
		cmocka_unit_test(test_put_latency_figures),
		cmocka_unit_test(test_bytes_by_type),
		cmocka_unit_test(test_credit_wait_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
