/* SPDX-License-Identifier: MIT */
/*
 * test_md.c - memory descriptors: thresholds, auto-unlink of MD and ME,
 * unlink while busy (initiator and target side, queued for credits), iovec
 * MDs up to 256 fragments with payloads crossing fragment boundaries, the
 * running offset shared by PUT and GET.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlnd.h"
#include "ulnet/ulnet.h"

#define MAXEV 512

struct evlog {
	struct ulnet_event ev[MAXEV];
	int n;
};

static void rec(const struct ulnet_event *ev)
{
	struct evlog *l = ev->md_user_ptr;

	assert_true(l->n < MAXEV);
	l->ev[l->n++] = *ev;
}

static void quiet_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	(void)msg;
}

static ulnet_t *mk(void)
{
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS, .log = quiet_log };
	struct ulnet_globals g;
	ulnet_t *ln;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	ulnet_globals_get(ln, &g);
	g.discovery = 0;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
	return ln;
}

static const ulnet_process_id_t any = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						 .addr = { 0xff, 0xff, 0xff, 0xff } },
					.pid = ULNET_PID_ANY };
static const ulnet_process_id_t self = { .nid = { .type = ULNET_LND_LO }, .pid = 12345 };

static ulnet_handle_t attach(ulnet_t *ln, unsigned portal, enum ulnet_unlink me_unlink,
			     const struct ulnet_md *md, enum ulnet_unlink md_unlink,
			     ulnet_handle_t *meh)
{
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_me_attach(ln, portal, any, 0, 0, me_unlink, ULNET_INS_AFTER, meh), 0);
	assert_int_equal(ulnet_md_attach(ln, *meh, md, md_unlink, &mdh), 0);
	return mdh;
}

static int put_lo(ulnet_t *ln, unsigned portal, const void *buf, size_t len, unsigned roff,
		  struct evlog *log)
{
	struct ulnet_md md = { .start = (void *)buf, .length = len, .threshold = 1,
			       .user_ptr = log, .handler = log ? rec : NULL };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	return ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, self, portal, 0, roff, 0);
}

static uint64_t drops(ulnet_t *ln)
{
	struct ulnet_counters c;

	ulnet_counters_get(ln, &c);
	return c.drop_count;
}

static void test_threshold_retain(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[64], src[8] = { 0 };
	struct evlog tl = { 0 };
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = 3,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh, mdh = attach(ln, 2, ULNET_UNLINK, &md, ULNET_RETAIN, &meh);
	int i;

	for (i = 0; i < 4; i++)
		assert_int_equal(put_lo(ln, 2, src, sizeof(src), 0, NULL), 0);
	/* three accepted, the fourth finds an inactive MD */
	assert_int_equal(tl.n, 3);
	for (i = 0; i < 3; i++)
		assert_false(tl.ev[i].unlinked);
	assert_int_equal(drops(ln), 1);
	/* RETAIN: still there until unlinked; idle, so UNLINK comes now */
	assert_int_equal(ulnet_md_unlink(ln, mdh), 0);
	assert_int_equal(tl.n, 4);
	assert_int_equal(tl.ev[3].type, ULNET_EVENT_UNLINK);
	assert_int_equal(tl.ev[3].status, 0);
	assert_true(tl.ev[3].unlinked);
	assert_int_equal(tl.ev[3].md_handle.cookie, mdh.cookie);
	assert_ptr_equal(tl.ev[3].md_start, buf);
	/* ...and took its UNLINK-mode ME with it */
	assert_int_equal(ulnet_me_unlink(ln, meh), -ENOENT);
	ulnet_destroy(ln);
}

static void test_threshold_infinite(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[16], src[16] = { 0 };
	struct evlog tl = { 0 };
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh;
	int i;

	attach(ln, 2, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	for (i = 0; i < 300; i++)
		assert_int_equal(put_lo(ln, 2, src, sizeof(src), 0, NULL), 0);
	assert_int_equal(tl.n, 300);
	assert_false(tl.ev[299].unlinked);
	ulnet_destroy(ln);
	/* destroy unlinks it */
	assert_int_equal(tl.n, 301);
	assert_int_equal(tl.ev[300].type, ULNET_EVENT_UNLINK);
}

static void test_auto_unlink_md_and_me(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[64], src[4] = { 9, 9, 9, 9 };
	struct evlog tl = { 0 }, t2 = { 0 };
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = 2,
			       .options = ULNET_MD_OP_PUT, .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh, mdh;

	/* UNLINK ME: gone with its MD */
	mdh = attach(ln, 3, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	put_lo(ln, 3, src, 4, 0, NULL);
	put_lo(ln, 3, src, 4, 0, NULL);
	assert_int_equal(tl.n, 2);
	assert_false(tl.ev[0].unlinked);
	assert_true(tl.ev[1].unlinked);
	assert_int_equal(tl.ev[1].offset, 4);
	assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	assert_int_equal(ulnet_me_unlink(ln, meh), -ENOENT);

	/* RETAIN ME: stays, and takes a new MD */
	tl.n = 0;
	mdh = attach(ln, 4, ULNET_RETAIN, &md, ULNET_UNLINK, &meh);
	put_lo(ln, 4, src, 4, 0, NULL);
	put_lo(ln, 4, src, 4, 0, NULL);
	assert_true(tl.ev[1].unlinked);
	assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	md.user_ptr = &t2;
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
	put_lo(ln, 4, src, 4, 0, NULL);
	assert_int_equal(t2.n, 1);
	assert_int_equal(t2.ev[0].offset, 0);
	/* unlinking the ME unlinks its idle MD: UNLINK event */
	assert_int_equal(ulnet_me_unlink(ln, meh), 0);
	assert_int_equal(t2.n, 2);
	assert_int_equal(t2.ev[1].type, ULNET_EVENT_UNLINK);
	assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	ulnet_destroy(ln);
}

static void test_shared_running_offset(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[64], src[10], sink[5];
	struct evlog tl = { 0 }, gl = { 0 };
	struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET,
			       .user_ptr = &tl, .handler = rec };
	struct ulnet_md gmd = { .start = sink, .length = sizeof(sink), .threshold = 2,
				.user_ptr = &gl, .handler = rec };
	ulnet_handle_t meh, gmdh;
	int i;

	for (i = 0; i < 64; i++)
		buf[i] = (uint8_t)i;
	for (i = 0; i < 10; i++)
		src[i] = (uint8_t)(100 + i);
	attach(ln, 5, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	put_lo(ln, 5, src, 10, 0, NULL);
	assert_int_equal(ulnet_md_bind(ln, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, gmdh, self, 5, 0, 0), 0);
	put_lo(ln, 5, src, 10, 0, NULL);
	assert_int_equal(tl.n, 3);
	assert_int_equal(tl.ev[0].offset, 0);
	assert_int_equal(tl.ev[1].type, ULNET_EVENT_GET);
	assert_int_equal(tl.ev[1].offset, 10);  /* GET continues after the PUT */
	assert_int_equal(tl.ev[1].mlength, 5);
	assert_int_equal(tl.ev[2].offset, 15);
	assert_memory_equal(sink, buf + 10, 5);
	assert_memory_equal(buf + 15, src, 10);
	ulnet_destroy(ln);
}

static void test_zero_length(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	struct evlog tl = { 0 }, il = { 0 };
	struct ulnet_md md = { .start = NULL, .length = 0, .threshold = 1,
			       .options = ULNET_MD_OP_PUT, .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh;

	attach(ln, 6, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	assert_int_equal(put_lo(ln, 6, NULL, 0, 0, &il), 0);
	assert_int_equal(tl.n, 1);
	assert_int_equal(tl.ev[0].mlength, 0);
	assert_true(tl.ev[0].unlinked);
	assert_int_equal(il.n, 1);
	ulnet_destroy(ln);
}

/* --- iovec MDs ------------------------------------------------------------------ */

static void test_iovec_256_fragments(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	static uint8_t store[256 * 40], src[6000], out[6000];
	struct iovec tiov[256], siov[100], oiov[3];
	struct evlog tl = { 0 }, gl = { 0 };
	size_t total = 0, off = 0;
	int i;

	/* 256 fragments of 1..33 bytes, scattered in `store` */
	for (i = 0; i < 256; i++) {
		size_t len = 1 + (size_t)(i * 7) % 33;

		tiov[i].iov_base = store + off + 3;
		tiov[i].iov_len = len;
		off += len + 5;
		total += len;
	}
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)(i * 31 + 7);
	struct ulnet_md md = { .start = tiov, .length = 256, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_IOVEC |
					  ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh;
	attach(ln, 7, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);

	/* a PUT from a 100-fragment source, at remote offset 37, crossing
	 * fragment boundaries on both sides */
	size_t plen = total - 37 - 11, soff = 0;
	for (i = 0; i < 100; i++) {
		size_t len = i < 99 ? 1 + (size_t)(i % 50) : 0;

		siov[i].iov_base = src + soff;
		siov[i].iov_len = len;
		soff += len;
	}
	/* the last fragment makes the 100 add up to exactly plen */
	assert_true(soff <= plen);
	siov[99].iov_base = src + soff;
	siov[99].iov_len = plen - soff;
	struct ulnet_md smd = { .start = siov, .length = 100, .threshold = 1,
				.options = ULNET_MD_IOVEC };
	ulnet_handle_t smdh;
	assert_int_equal(ulnet_md_bind(ln, &smd, ULNET_UNLINK, &smdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, smdh, ULNET_NOACK_REQ, self, 7, 0, 37, 0), 0);
	assert_int_equal(tl.n, 1);
	assert_int_equal(tl.ev[0].mlength, plen);
	assert_int_equal(tl.ev[0].offset, 37);

	/* the bytes landed in order across the 256 fragments */
	size_t pos = 0, k = 0;
	for (i = 0; i < 256; i++) {
		size_t j;

		for (j = 0; j < tiov[i].iov_len; j++, pos++) {
			if (pos < 37 || pos >= 37 + plen)
				continue;
			assert_int_equal(((uint8_t *)tiov[i].iov_base)[j], src[k]);
			k++;
		}
	}
	assert_int_equal(k, plen);

	/* and back out with a GET into 3 uneven fragments */
	oiov[0].iov_base = out;
	oiov[0].iov_len = 1;
	oiov[1].iov_base = out + 1;
	oiov[1].iov_len = 999;
	oiov[2].iov_base = out + 1000;
	oiov[2].iov_len = plen - 1000;
	struct ulnet_md gmd = { .start = oiov, .length = 3, .threshold = 2, .options = ULNET_MD_IOVEC,
				.user_ptr = &gl, .handler = rec };
	ulnet_handle_t gmdh;
	assert_int_equal(ulnet_md_bind(ln, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, gmdh, self, 7, 0, 37), 0);
	assert_int_equal(gl.n, 2);
	assert_memory_equal(out, src, plen);
	ulnet_destroy(ln);
}

static void test_iovec_over_memlnd(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *b = mk();
	ulnet_nid_t nb;
	static uint8_t tstore[4096], src[3000];
	struct iovec tiov[64], siov[7];
	struct evlog tl = { 0 };
	int i;

	assert_int_equal(memlnd_add_ni(net, a, 1, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	for (i = 0; i < 64; i++) {
		tiov[i].iov_base = tstore + i * 64;
		tiov[i].iov_len = 50;
	}
	for (i = 0; i < 3000; i++)
		src[i] = (uint8_t)(i ^ 0x5a);
	for (i = 0; i < 7; i++) {
		siov[i].iov_base = src + i * 400;
		siov[i].iov_len = i < 6 ? 400 : 600;
	}
	struct ulnet_md md = { .start = tiov, .length = 64, .threshold = 1,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_IOVEC,
			       .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh, smdh;
	attach(b, 8, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	struct ulnet_md smd = { .start = siov, .length = 7, .threshold = 1, .options = ULNET_MD_IOVEC };
	ulnet_process_id_t t = { .nid = nb, .pid = 12345 };
	assert_int_equal(ulnet_md_bind(a, &smd, ULNET_UNLINK, &smdh), 0);
	assert_int_equal(ulnet_put(a, NULL, smdh, ULNET_NOACK_REQ, t, 8, 0, 0, 0), 0);
	memlnd_pump(net);
	assert_int_equal(tl.n, 1);
	assert_int_equal(tl.ev[0].mlength, 3000);
	for (i = 0; i < 3000; i++)
		assert_int_equal(tstore[(i / 50) * 64 + i % 50], src[i]);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* --- unlink while busy ------------------------------------------------------------- */

struct holdctl {
	int hold_type;   /* message type to hold, -1: none */
};

static enum memlnd_verdict hold_filter(void *arg, const struct lnet_hdr *hdr)
{
	struct holdctl *h = arg;

	return (int)hdr->type == h->hold_type ? MEMLND_HOLD : MEMLND_PASS;
}

static void test_unlink_busy_initiator(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *b = mk();
	ulnet_nid_t nb;
	uint8_t src[8] = { 1 }, dst[8];
	struct evlog il = { 0 }, tl = { 0 };
	struct holdctl hc = { .hold_type = ULNET_MSG_PUT };

	assert_int_equal(memlnd_add_ni(net, a, 1, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	struct ulnet_md md = { .start = dst, .length = 8, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh, mdh;
	attach(b, 9, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);

	memlnd_set_filter(net, hold_filter, &hc);
	struct ulnet_md smd = { .start = src, .length = 8, .threshold = 2, .user_ptr = &il,
				.handler = rec };
	ulnet_process_id_t t = { .nid = nb, .pid = 12345 };
	assert_int_equal(ulnet_md_bind(a, &smd, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_ACK_REQ, t, 9, 0, 0, 0), 0);
	/* the PUT is in the network: the MD is busy, no UNLINK event now */
	assert_int_equal(ulnet_md_unlink(a, mdh), 0);
	assert_int_equal(il.n, 0);
	assert_int_equal(ulnet_md_unlink(a, mdh), -ENOENT);
	hc.hold_type = -1;
	memlnd_release_held(net);
	memlnd_pump(net);
	/* the completion is the last event and says so; the ACK that comes
	 * back finds no MD */
	assert_int_equal(il.n, 1);
	assert_int_equal(il.ev[0].type, ULNET_EVENT_SEND);
	assert_true(il.ev[0].unlinked);
	/* as the kernel: a message finishing on an aborted MD reports it */
	assert_int_equal(il.ev[0].status, -ETIMEDOUT);
	assert_int_equal(tl.n, 1);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

static void test_unlink_busy_target(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *b = mk();
	ulnet_nid_t nb;
	uint8_t data[8] = { 1, 2, 3 }, sink[8];
	struct evlog gl = { 0 }, tl = { 0 };
	struct holdctl hc = { .hold_type = ULNET_MSG_REPLY };

	assert_int_equal(memlnd_add_ni(net, a, 1, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	struct ulnet_md md = { .start = data, .length = 8, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_GET, .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh, tmdh, gmdh;
	tmdh = attach(b, 9, ULNET_UNLINK, &md, ULNET_RETAIN, &meh);
	memlnd_set_filter(net, hold_filter, &hc);
	struct ulnet_md gmd = { .start = sink, .length = 8, .threshold = 2, .user_ptr = &gl,
				.handler = rec };
	ulnet_process_id_t t = { .nid = nb, .pid = 12345 };
	assert_int_equal(ulnet_md_bind(a, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(a, NULL, gmdh, t, 9, 0, 0), 0);
	memlnd_pump(net);
	/* B's REPLY is held: B's MD is busy */
	assert_int_equal(tl.n, 0);
	assert_int_equal(ulnet_md_unlink(b, tmdh), 0);
	assert_int_equal(tl.n, 0);
	hc.hold_type = -1;
	memlnd_release_held(net);
	memlnd_pump(net);
	assert_int_equal(tl.n, 1);
	assert_int_equal(tl.ev[0].type, ULNET_EVENT_GET);
	assert_true(tl.ev[0].unlinked);
	/* the data still went */
	assert_int_equal(gl.n, 2);
	assert_memory_equal(sink, data, 8);
	assert_int_equal(ulnet_me_unlink(b, meh), -ENOENT);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

static void test_unlink_while_queued_for_credit(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *b = mk();
	ulnet_nid_t nb;
	uint8_t src[8] = { 0 }, dst[8];
	struct evlog l1 = { 0 }, l2 = { 0 }, tl = { 0 };
	struct ulnet_ni_conf conf;

	memset(&conf, 0, sizeof(conf));
	memlnd_nid(1, &conf.nid);
	conf.tun.peer_credits = 1;
	assert_int_equal(memlnd_add_ni_conf(net, a, &conf), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	struct ulnet_md md = { .start = dst, .length = 8, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = &tl, .handler = rec };
	ulnet_handle_t meh, m1, m2;
	attach(b, 9, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	struct ulnet_md s1 = { .start = src, .length = 8, .threshold = 1, .user_ptr = &l1, .handler = rec };
	struct ulnet_md s2 = { .start = src, .length = 8, .threshold = 1, .user_ptr = &l2, .handler = rec };
	ulnet_process_id_t t = { .nid = nb, .pid = 12345 };
	assert_int_equal(ulnet_md_bind(a, &s1, ULNET_UNLINK, &m1), 0);
	assert_int_equal(ulnet_md_bind(a, &s2, ULNET_UNLINK, &m2), 0);
	assert_int_equal(ulnet_put(a, NULL, m1, ULNET_NOACK_REQ, t, 9, 0, 0, 0), 0);
	assert_int_equal(ulnet_put(a, NULL, m2, ULNET_NOACK_REQ, t, 9, 0, 0, 0), 0);
	assert_int_equal(memlnd_queued(net), 1);
	/* the second waits for the peer credit; unlink aborts it */
	assert_int_equal(ulnet_md_unlink(a, m2), 0);
	assert_int_equal(l2.n, 0);
	memlnd_pump(net);
	assert_int_equal(l1.n, 1);
	assert_int_equal(l1.ev[0].status, 0);
	assert_int_equal(l2.n, 1);
	assert_int_equal(l2.ev[0].type, ULNET_EVENT_SEND);
	assert_int_equal(l2.ev[0].status, -ECANCELED);
	assert_true(l2.ev[0].unlinked);
	assert_int_equal(tl.n, 1);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* A handler that unlinks its own MD gets the UNLINK event nested. */
struct self_unlink {
	ulnet_t *ln;
	ulnet_handle_t mdh;
	int events, unlinks;
};

static void self_unlink_handler(const struct ulnet_event *ev)
{
	struct self_unlink *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_UNLINK) {
		s->unlinks++;
		return;
	}
	s->events++;
	assert_false(ev->unlinked);
	assert_int_equal(ulnet_md_unlink(s->ln, s->mdh), 0);
	assert_int_equal(ulnet_md_unlink(s->ln, s->mdh), -ENOENT);
}

static void test_handler_unlinks_own_md(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[8], src[8] = { 0 };
	static struct self_unlink s;
	struct ulnet_md md = { .start = buf, .length = 8, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = &s, .handler = self_unlink_handler };
	ulnet_handle_t meh;

	memset(&s, 0, sizeof(s));
	s.ln = ln;
	s.mdh = attach(ln, 10, ULNET_UNLINK, &md, ULNET_UNLINK, &meh);
	put_lo(ln, 10, src, 8, 0, NULL);
	assert_int_equal(s.events, 1);
	assert_int_equal(s.unlinks, 1);
	put_lo(ln, 10, src, 8, 0, NULL);
	assert_int_equal(s.events, 1);
	assert_int_equal(drops(ln), 1);
	ulnet_destroy(ln);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_retain),
		cmocka_unit_test(test_threshold_infinite),
		cmocka_unit_test(test_auto_unlink_md_and_me),
		cmocka_unit_test(test_shared_running_offset),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_iovec_256_fragments),
		cmocka_unit_test(test_iovec_over_memlnd),
		cmocka_unit_test(test_unlink_busy_initiator),
		cmocka_unit_test(test_unlink_busy_target),
		cmocka_unit_test(test_unlink_while_queued_for_credit),
		cmocka_unit_test(test_handler_unlinks_own_md),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
