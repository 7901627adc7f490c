/* SPDX-License-Identifier: MIT */
/*
 * test_put_get.c - PUT and GET end to end: loopback (0@lo) and two instances
 * joined by memlnd; every event field, ACK/REPLY, hdr_data, remote offsets,
 * lazy portals, re-entrant handlers, credits, response timeouts on a fake
 * clock, shutdown.
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

#include "memlnd.h"
#include "ulnet/ulnet.h"

/* --- helpers ---------------------------------------------------------------- */

#define MAXEV 64

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

static const struct ulnet_event *find_type(const struct evlog *l, enum ulnet_event_kind t)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->ev[i].type == t)
			return &l->ev[i];
	return NULL;
}

static char last_log[512];
static int nlogs;

static void capture_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	snprintf(last_log, sizeof(last_log), "%s", msg);
	nlogs++;
}

static uint64_t fake_now;
static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static ulnet_t *mk(ulnet_pid_t pid, bool fake)
{
	struct ulnet_opts o = {
		.pid = pid,
		.flags = ULNET_OPT_MANUAL_PROGRESS,
		.clock = fake ? fake_clock : NULL,
		.log = capture_log,
		.log_level = ULNET_LOG_DEBUG,
	};
	ulnet_t *ln = NULL;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	return ln;
}

static ulnet_process_id_t pid_of(const ulnet_nid_t *nid, ulnet_pid_t pid)
{
	ulnet_process_id_t id = { .nid = *nid, .pid = pid };
	return id;
}

static const ulnet_process_id_t any_id = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						    .addr = { 0xff, 0xff, 0xff, 0xff } },
					   .pid = ULNET_PID_ANY };

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* ME + MD on `portal` taking anything with `bits`. */
static ulnet_handle_t post_md(ulnet_t *ln, unsigned portal, uint64_t bits, void *buf, size_t len,
			      unsigned options, int threshold, struct evlog *log,
			      ulnet_handle_t *meh_out)
{
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = buf, .length = len, .threshold = threshold,
			       .options = options, .user_ptr = log, .handler = rec };

	assert_int_equal(ulnet_me_attach(ln, portal, any_id, bits, 0, ULNET_UNLINK,
					 ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
	if (meh_out)
		*meh_out = meh;
	return mdh;
}

static ulnet_handle_t bind_md(ulnet_t *ln, void *buf, size_t len, unsigned options,
			      int threshold, struct evlog *log)
{
	ulnet_handle_t mdh;
	struct ulnet_md md = { .start = buf, .length = len, .threshold = threshold,
			       .options = options, .user_ptr = log, .handler = rec };

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	return mdh;
}

/* --- loopback ---------------------------------------------------------------- */

static void test_lo_put_with_ack(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[100], dst[4096];
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_LUSTRE);
	ulnet_handle_t tmdh, imdh;
	const struct ulnet_event *e;

	memset(dst, 0, sizeof(dst));
	fill(src, sizeof(src), 1);
	tmdh = post_md(ln, 5, 0x10, dst, sizeof(dst), ULNET_MD_OP_PUT, ULNET_MD_THRESH_INF, &tl, NULL);
	imdh = bind_md(ln, src, sizeof(src), 0, 2, &il);
	assert_int_equal(ulnet_put(ln, NULL, imdh, ULNET_ACK_REQ, me, 5, 0x10, 0, 0xdeadbeefcafeULL), 0);

	/* target: one PUT event, every field */
	assert_int_equal(tl.n, 1);
	e = &tl.ev[0];
	assert_int_equal(e->type, ULNET_EVENT_PUT);
	assert_int_equal(e->msg_type, ULNET_MSG_PUT);
	assert_ptr_equal(e->ln, ln);
	assert_true(ulnet_nid_same(&e->target.nid, &ULNET_NID_LO0));
	assert_int_equal(e->target.pid, ULNET_PID_LUSTRE);
	assert_true(ulnet_nid_same(&e->initiator.nid, &ULNET_NID_LO0));
	assert_int_equal(e->initiator.pid, ULNET_PID_LUSTRE);
	assert_true(ulnet_nid_same(&e->source.nid, &ULNET_NID_LO0));
	assert_int_equal(e->source.pid, ULNET_PID_LUSTRE);
	assert_true(ulnet_nid_same(&e->sender, &ULNET_NID_LO0));
	assert_int_equal(e->pt_index, 5);
	assert_int_equal(e->match_bits, 0x10);
	assert_int_equal(e->rlength, 100);
	assert_int_equal(e->mlength, 100);
	assert_int_equal(e->offset, 0);
	assert_int_equal(e->md_handle.cookie, tmdh.cookie);
	assert_ptr_equal(e->md_start, dst);
	assert_ptr_equal(e->md_user_ptr, &tl);
	assert_int_equal(e->md_options, ULNET_MD_OP_PUT);
	assert_int_equal(e->hdr_data, 0xdeadbeefcafeULL);
	assert_int_equal(e->status, 0);
	assert_false(e->unlinked);
	assert_memory_equal(dst, src, sizeof(src));

	/* initiator: SEND and ACK, the last one unlinked */
	assert_int_equal(il.n, 2);
	e = find_type(&il, ULNET_EVENT_SEND);
	assert_non_null(e);
	assert_int_equal(e->msg_type, ULNET_MSG_PUT);
	assert_true(ulnet_nid_same(&e->target.nid, &ULNET_NID_LO0));
	assert_int_equal(e->target.pid, ULNET_PID_LUSTRE);
	assert_true(ulnet_nid_is_any(&e->initiator.nid));
	assert_int_equal(e->initiator.pid, ULNET_PID_LUSTRE);
	assert_int_equal(e->pt_index, 5);
	assert_int_equal(e->match_bits, 0x10);
	assert_int_equal(e->rlength, 100);
	assert_int_equal(e->mlength, 100);
	assert_int_equal(e->hdr_data, 0xdeadbeefcafeULL);
	assert_int_equal(e->md_handle.cookie, imdh.cookie);
	assert_ptr_equal(e->md_start, src);
	assert_int_equal(e->status, 0);
	e = find_type(&il, ULNET_EVENT_ACK);
	assert_non_null(e);
	assert_int_equal(e->msg_type, ULNET_MSG_ACK);
	assert_int_equal(e->mlength, 100);
	assert_int_equal(e->match_bits, 0x10);
	assert_int_equal(e->status, 0);
	assert_true(ulnet_nid_same(&e->initiator.nid, &ULNET_NID_LO0));
	assert_true(il.ev[1].unlinked);
	assert_false(il.ev[0].unlinked);
	/* auto-unlinked: the handle is stale */
	assert_int_equal(ulnet_md_unlink(ln, imdh), -ENOENT);
	ulnet_destroy(ln);
}

static void test_lo_put_no_ack(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[10] = "0123456789", dst[64] = { 0 };
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_ANY);

	post_md(ln, 9, 1, dst, sizeof(dst), ULNET_MD_OP_PUT, 1, &tl, NULL);
	ulnet_handle_t imdh = bind_md(ln, src, sizeof(src), 0, 1, &il);
	assert_int_equal(ulnet_put(ln, NULL, imdh, ULNET_NOACK_REQ, me, 9, 1, 0, 0), 0);
	assert_int_equal(il.n, 1);
	assert_int_equal(il.ev[0].type, ULNET_EVENT_SEND);
	assert_true(il.ev[0].unlinked);
	assert_int_equal(tl.n, 1);
	assert_int_equal(tl.ev[0].type, ULNET_EVENT_PUT);
	/* threshold 1 with UNLINK: exhausted, so the PUT event is the last */
	assert_true(tl.ev[0].unlinked);
	assert_memory_equal(dst, src, 10);
	ulnet_destroy(ln);
}

static void test_lo_get_reply(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t data[300], sink[200];
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_LUSTRE);
	const struct ulnet_event *e;

	fill(data, sizeof(data), 3);
	memset(sink, 0, sizeof(sink));
	ulnet_handle_t tmdh = post_md(ln, 12, 0x77, data, sizeof(data),
				      ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE, ULNET_MD_THRESH_INF,
				      &tl, NULL);
	ulnet_handle_t imdh = bind_md(ln, sink, sizeof(sink), 0, 2, &il);
	/* remote offset 50: 200 bytes from data[50] */
	assert_int_equal(ulnet_get(ln, NULL, imdh, me, 12, 0x77, 50), 0);

	assert_int_equal(tl.n, 1);
	e = &tl.ev[0];
	assert_int_equal(e->type, ULNET_EVENT_GET);
	assert_int_equal(e->msg_type, ULNET_MSG_GET);
	assert_int_equal(e->pt_index, 12);
	assert_int_equal(e->match_bits, 0x77);
	assert_int_equal(e->rlength, 0);    /* GET header payload */
	assert_int_equal(e->mlength, 200);
	assert_int_equal(e->offset, 50);
	assert_int_equal(e->hdr_data, 0);
	assert_int_equal(e->md_handle.cookie, tmdh.cookie);
	assert_int_equal(e->status, 0);

	assert_int_equal(il.n, 2);
	e = find_type(&il, ULNET_EVENT_SEND);
	assert_non_null(e);
	assert_int_equal(e->msg_type, ULNET_MSG_GET);
	assert_int_equal(e->mlength, 200);
	assert_int_equal(e->rlength, 200);
	assert_int_equal(e->offset, 50);
	assert_int_equal(e->pt_index, 12);
	e = find_type(&il, ULNET_EVENT_REPLY);
	assert_non_null(e);
	assert_int_equal(e->rlength, 200);
	assert_int_equal(e->mlength, 200);
	assert_int_equal(e->offset, 0);
	assert_int_equal(e->status, 0);
	assert_true(ulnet_nid_same(&e->initiator.nid, &ULNET_NID_LO0));
	assert_true(il.ev[1].unlinked);
	assert_memory_equal(sink, data + 50, 200);
	ulnet_destroy(ln);
}

static void test_lo_running_offset_and_truncate(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t dst[150] = { 0 }, a[100], b[100];
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_LUSTRE);

	fill(a, 100, 1);
	fill(b, 100, 2);
	post_md(ln, 3, 0, dst, sizeof(dst), ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE,
		ULNET_MD_THRESH_INF, &tl, NULL);
	ulnet_handle_t m1 = bind_md(ln, a, 100, 0, 1, &il);
	ulnet_handle_t m2 = bind_md(ln, b, 100, 0, 1, &il);
	/* the remote offset is ignored without MANAGE_REMOTE */
	assert_int_equal(ulnet_put(ln, NULL, m1, ULNET_NOACK_REQ, me, 3, 0, 77, 0), 0);
	assert_int_equal(ulnet_put(ln, NULL, m2, ULNET_NOACK_REQ, me, 3, 0, 77, 0), 0);
	assert_int_equal(tl.n, 2);
	assert_int_equal(tl.ev[0].offset, 0);
	assert_int_equal(tl.ev[0].mlength, 100);
	assert_int_equal(tl.ev[1].offset, 100);
	assert_int_equal(tl.ev[1].mlength, 50); /* truncated */
	assert_int_equal(tl.ev[1].rlength, 100);
	assert_memory_equal(dst, a, 100);
	assert_memory_equal(dst + 100, b, 50);
	ulnet_destroy(ln);
}

static void test_lazy_portal(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[32], dst[32] = { 0 };
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_LUSTRE);
	struct ulnet_counters c;

	fill(src, sizeof(src), 5);
	assert_int_equal(ulnet_portal_set_lazy(ln, 20, true), 0);
	ulnet_handle_t m1 = bind_md(ln, src, sizeof(src), 0, 1, &il);
	assert_int_equal(ulnet_put(ln, NULL, m1, ULNET_NOACK_REQ, me, 20, 0x5, 0, 42), 0);
	/* parked: the loopback send is not over either */
	assert_int_equal(il.n, 0);
	assert_int_equal(tl.n, 0);
	post_md(ln, 20, 0x5, dst, sizeof(dst), ULNET_MD_OP_PUT, 1, &tl, NULL);
	assert_int_equal(tl.n, 1);
	assert_int_equal(tl.ev[0].hdr_data, 42);
	assert_int_equal(il.n, 1);
	assert_int_equal(il.ev[0].status, 0);
	assert_memory_equal(dst, src, sizeof(src));

	/* parked again, then the portal stops being lazy: dropped */
	ulnet_handle_t m2 = bind_md(ln, src, sizeof(src), 0, 1, &il);
	assert_int_equal(ulnet_put(ln, NULL, m2, ULNET_NOACK_REQ, me, 20, 0x6, 0, 0), 0);
	assert_int_equal(il.n, 1);
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 0);
	nlogs = 0;
	assert_int_equal(ulnet_portal_set_lazy(ln, 20, false), 0);
	assert_int_equal(il.n, 2);
	assert_int_equal(il.ev[1].type, ULNET_EVENT_SEND);
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 1);
	assert_true(nlogs > 0);
	assert_non_null(strstr(last_log, "0@lo"));
	assert_non_null(strstr(last_log, "lazy"));
	/* a non-lazy portal drops unmatched PUTs at once */
	ulnet_handle_t m3 = bind_md(ln, src, sizeof(src), 0, 1, &il);
	assert_int_equal(ulnet_put(ln, NULL, m3, ULNET_NOACK_REQ, me, 20, 0x6, 0, 0), 0);
	assert_int_equal(il.n, 3);
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 2);
	ulnet_destroy(ln);
}

static void test_portal0_is_lazy(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog il = { 0 };
	uint8_t src[8] = { 0 };
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_LUSTRE);

	ulnet_handle_t m = bind_md(ln, src, sizeof(src), 0, 1, &il);
	/* no ME takes these bits on portal 0: parked, not dropped */
	assert_int_equal(ulnet_put(ln, NULL, m, ULNET_NOACK_REQ, me, 0, 0x1234, 0, 0), 0);
	assert_int_equal(il.n, 0);
	ulnet_destroy(ln);
	/* shutdown dropped it: the send completed */
	assert_int_equal(il.n, 1);
}

/* Each ACK handler sends the next PUT, up to `left`. */
struct chain {
	ulnet_t *ln;
	ulnet_handle_t mdh;
	uint8_t buf[64];
	int left, acks, sends;
};

static void chain_handler(const struct ulnet_event *ev)
{
	struct chain *c = ev->md_user_ptr;
	ulnet_process_id_t me = { .nid = ULNET_NID_LO0, .pid = ULNET_PID_LUSTRE };

	assert_int_equal(ev->status, 0);
	if (ev->type == ULNET_EVENT_SEND)
		c->sends++;
	if (ev->type != ULNET_EVENT_ACK)
		return;
	c->acks++;
	if (c->left-- > 0) {
		struct ulnet_md md = { .start = c->buf, .length = sizeof(c->buf), .threshold = 2,
				       .user_ptr = c, .handler = chain_handler };
		ulnet_handle_t mdh;

		c->buf[0] = (uint8_t)c->left;
		assert_int_equal(ulnet_md_bind(ev->ln, &md, ULNET_UNLINK, &mdh), 0);
		assert_int_equal(ulnet_put(ev->ln, NULL, mdh, ULNET_ACK_REQ, me, 4, 0, 0, 0), 0);
	}
}

static void test_reentrant_handler(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog tl = { 0 };
	uint8_t dst[64];
	static struct chain c;
	ulnet_process_id_t me = pid_of(&ULNET_NID_LO0, ULNET_PID_LUSTRE);
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = dst, .length = sizeof(dst), .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_counters ctr;

	(void)tl;
	assert_int_equal(ulnet_me_attach(ln, 4, any_id, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_RETAIN, &mdh), 0);
	memset(&c, 0, sizeof(c));
	c.ln = ln;
	c.left = 5000; /* deep enough to overflow a recursive design */
	struct ulnet_md smd = { .start = c.buf, .length = sizeof(c.buf), .threshold = 2,
				.user_ptr = &c, .handler = chain_handler };
	assert_int_equal(ulnet_md_bind(ln, &smd, ULNET_UNLINK, &c.mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, c.mdh, ULNET_ACK_REQ, me, 4, 0, 0, 0), 0);
	assert_int_equal(c.acks, 5001);
	assert_int_equal(c.sends, 5001);
	assert_int_equal(dst[0], 0);
	ulnet_counters_get(ln, &ctr);
	assert_int_equal(ctr.msgs_alloc, 0);
	assert_true(ctr.msgs_max <= 8);
	ulnet_destroy(ln);
}

/* --- two instances over memlnd ------------------------------------------------------- */

struct pair {
	struct memlnd_net *net;
	ulnet_t *a, *b;
	ulnet_nid_t na, nb;
};

static void pair_up(struct pair *p, bool fake)
{
	p->net = memlnd_net_create();
	assert_non_null(p->net);
	p->a = mk(0, fake);
	p->b = mk(0, fake);
	/* discovery would add ping/push traffic; tested elsewhere */
	struct ulnet_globals g;
	ulnet_globals_get(p->a, &g);
	g.discovery = 0;
	assert_int_equal(ulnet_globals_set(p->a, &g), 0);
	assert_int_equal(ulnet_globals_set(p->b, &g), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->a, 1, &p->na), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->b, 2, &p->nb), 0);
}

static void pair_down(struct pair *p)
{
	ulnet_destroy(p->a);
	ulnet_destroy(p->b);
	memlnd_net_destroy(p->net);
}

static void test_two_nodes_sizes(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 4096, 1u << 20 };
	struct pair p;
	size_t i;

	pair_up(&p, false);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *src = malloc(n + 1), *dst = calloc(1, n + 1), *sink = calloc(1, n + 1);
		struct evlog tl = { 0 }, il = { 0 }, gl = { 0 };
		const struct ulnet_event *e;

		fill(src, n + 1, (unsigned)i);
		ulnet_handle_t tmdh = post_md(p.b, 30, i, dst, n, ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE,
					      ULNET_MD_THRESH_INF, &tl, NULL);
		ulnet_handle_t imdh = bind_md(p.a, src, n, 0, 2, &il);
		assert_int_equal(ulnet_put(p.a, NULL, imdh, ULNET_ACK_REQ,
					   pid_of(&p.nb, ULNET_PID_LUSTRE), 30, i, 0, i), 0);
		memlnd_pump(p.net);
		assert_int_equal(tl.n, 1);
		e = &tl.ev[0];
		assert_int_equal(e->type, ULNET_EVENT_PUT);
		assert_true(ulnet_nid_same(&e->initiator.nid, &p.na));
		assert_true(ulnet_nid_same(&e->source.nid, &p.na));
		assert_true(ulnet_nid_same(&e->sender, &p.na));
		assert_true(ulnet_nid_same(&e->target.nid, &p.nb));
		assert_int_equal(e->rlength, n);
		assert_int_equal(e->mlength, n);
		assert_int_equal(e->hdr_data, i);
		if (n)
			assert_memory_equal(dst, src, n);
		assert_int_equal(il.n, 2);
		e = find_type(&il, ULNET_EVENT_ACK);
		assert_non_null(e);
		assert_int_equal(e->mlength, n);
		assert_true(ulnet_nid_same(&e->initiator.nid, &p.nb));
		assert_true(il.ev[1].unlinked);

		/* and back with a GET */
		ulnet_handle_t gmdh = bind_md(p.a, sink, n, 0, 2, &gl);
		assert_int_equal(ulnet_get(p.a, NULL, gmdh, pid_of(&p.nb, ULNET_PID_LUSTRE), 30, i, 0), 0);
		memlnd_pump(p.net);
		assert_int_equal(gl.n, 2);
		e = find_type(&gl, ULNET_EVENT_REPLY);
		assert_non_null(e);
		assert_int_equal(e->status, 0);
		assert_int_equal(e->mlength, n);
		assert_true(ulnet_nid_same(&e->source.nid, &p.nb));
		if (n)
			assert_memory_equal(sink, src, n);
		assert_int_equal(tl.n, 2);
		assert_int_equal(tl.ev[1].type, ULNET_EVENT_GET);
		assert_int_equal(tl.ev[1].mlength, n);
		assert_int_equal(ulnet_md_unlink(p.b, tmdh), 0);
		assert_int_equal(tl.n, 3);
		assert_int_equal(tl.ev[2].type, ULNET_EVENT_UNLINK);
		assert_true(tl.ev[2].unlinked);
		free(src);
		free(dst);
		free(sink);
	}
	/* counters and peers saw it */
	struct ulnet_counters c;
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.send_count, 8);  /* 4 PUT + 4 GET */
	assert_int_equal(c.recv_count, 8);  /* 4 ACK + 4 REPLY */
	assert_int_equal(c.msgs_alloc, 0);
	struct ulnet_peer_info pi;
	assert_int_equal(ulnet_peer_info(p.a, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &p.nb));
	assert_int_equal(pi.nis[0].sent.n[ULNET_MSG_PUT], 4);
	assert_int_equal(pi.nis[0].sent.n[ULNET_MSG_GET], 4);
	assert_int_equal(pi.nis[0].received.n[ULNET_MSG_ACK], 4);
	assert_int_equal(pi.nis[0].received.n[ULNET_MSG_REPLY], 4);
	/* totals agree with the per-type counts */
	assert_int_equal(pi.nis[0].send_count, 8);
	assert_int_equal(pi.nis[0].recv_count, 8);
	assert_int_equal(pi.nis[0].drop_count, 0);
	struct ulnet_ni_info nii;
	assert_int_equal(ulnet_ni_info(p.a, 1, &nii), 0);   /* 0: 0@lo */
	assert_int_equal(nii.send_count, 8);
	assert_int_equal(nii.recv_count, 8);
	assert_int_equal(pi.nis[0].available_tx_credits, 8);
	assert_int_equal(ulnet_peer_info(p.a, 1, &pi), -ENOENT);
	pair_down(&p);
}

/* GETs as o2iblnd sends them (memlnd_set_rdma, the core's rdma_req
 * contract): the target's LND writes the REPLY's bytes into the
 * requester's MD and no REPLY message crosses. The requester's events,
 * counters and latency figures are what an ordinary REPLY gives; the
 * target counts the GET received and the bytes it sent, but no REPLY
 * sent (none was: the kernel's counting). */
static void test_rdma_get(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 4096, 65536, 1u << 20 };
	struct memlnd_trace_ent tr[4];
	struct pair p;
	size_t i;

	pair_up(&p, false);
	memlnd_set_rdma(p.net, true);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *src = malloc(n + 1), *sink = calloc(1, n + 8);
		struct evlog tl = { 0 }, gl = { 0 };
		const struct ulnet_event *e;

		fill(src, n + 1, (unsigned)i + 3);
		post_md(p.b, 31, i, src, n, ULNET_MD_OP_GET, 1, &tl, NULL);
		ulnet_handle_t gmdh = bind_md(p.a, sink, n, 0, 2, &gl);
		memlnd_trace_clear(p.net);
		assert_int_equal(ulnet_get(p.a, NULL, gmdh, pid_of(&p.nb, ULNET_PID_LUSTRE), 31, i, 0), 0);
		memlnd_pump(p.net);
		/* one message crossed: the GET */
		assert_int_equal(memlnd_trace(p.net, tr, 4), 1);
		assert_int_equal(tr[0].hdr.type, ULNET_MSG_GET);
		assert_int_equal(gl.n, 2);
		assert_int_equal(gl.ev[0].type, ULNET_EVENT_SEND);
		assert_int_equal(gl.ev[0].status, 0);
		e = &gl.ev[1];
		assert_int_equal(e->type, ULNET_EVENT_REPLY);
		assert_int_equal(e->status, 0);
		assert_int_equal(e->mlength, n);
		assert_true(e->unlinked);
		assert_true(ulnet_nid_same(&e->source.nid, &p.nb));
		assert_true(ulnet_nid_same(&e->initiator.nid, &p.nb));
		assert_true(ulnet_nid_same(&e->sender, &p.nb));
		if (n)
			assert_memory_equal(sink, src, n);
		assert_int_equal(sink[n], 0);   /* nothing past the MD */
		assert_int_equal(tl.n, 1);
		assert_int_equal(tl.ev[0].type, ULNET_EVENT_GET);
		assert_int_equal(tl.ev[0].status, 0);
		assert_int_equal(tl.ev[0].mlength, n);
		assert_true(tl.ev[0].unlinked);
		free(src);
		free(sink);
	}
	/* the target's MD holds less than the sink (TRUNCATE there): the
	 * REPLY reports what was written */
	{
		uint8_t src[100], sink[256] = { 0 };
		struct evlog tl = { 0 }, gl = { 0 };

		fill(src, sizeof(src), 9);
		post_md(p.b, 31, 99, src, sizeof(src), ULNET_MD_OP_GET | ULNET_MD_TRUNCATE, 1, &tl,
			NULL);
		ulnet_handle_t gmdh = bind_md(p.a, sink, sizeof(sink), 0, 2, &gl);
		assert_int_equal(ulnet_get(p.a, NULL, gmdh, pid_of(&p.nb, ULNET_PID_LUSTRE), 31, 99, 0), 0);
		memlnd_pump(p.net);
		assert_int_equal(gl.n, 2);
		assert_int_equal(gl.ev[1].type, ULNET_EVENT_REPLY);
		assert_int_equal(gl.ev[1].mlength, sizeof(src));
		assert_memory_equal(sink, src, sizeof(src));
		assert_int_equal(sink[sizeof(src)], 0);
		assert_int_equal(tl.ev[0].mlength, sizeof(src));
	}
	/* counted as ordinary GETs and REPLYs on both sides */
	struct ulnet_counters c;
	struct ulnet_peer_info pi;
	struct ulnet_ni_info nii;

	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.send_count, 6);
	assert_int_equal(c.recv_count, 6);
	assert_int_equal(c.recv_length, 1 + 4096 + 65536 + (1u << 20) + 100);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(ulnet_peer_info(p.a, 0, &pi), 0);
	assert_int_equal(pi.nis[0].sent.n[ULNET_MSG_GET], 6);
	assert_int_equal(pi.nis[0].received.n[ULNET_MSG_REPLY], 6);
	assert_int_equal(ulnet_ni_info(p.a, 1, &nii), 0);
	assert_int_equal(nii.received.n[ULNET_MSG_REPLY], 6);
	assert_int_equal(nii.get_rtt.samples, 6);
	ulnet_counters_get(p.b, &c);
	assert_int_equal(c.recv_count, 6);
	assert_int_equal(c.send_length, 1 + 4096 + 65536 + (1u << 20) + 100);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(ulnet_ni_info(p.b, 1, &nii), 0);
	assert_int_equal(nii.received.n[ULNET_MSG_GET], 6);
	pair_down(&p);
}

/* An rdma GET that matches nothing ends at once with o2iblnd's GET_DONE
 * status (-ENODATA) on the GET and its REPLY, not with a timeout. */
static void test_rdma_get_no_match(void **state)
{
	(void)state;
	struct pair p;
	struct evlog gl = { 0 };
	uint8_t sink[64];
	struct ulnet_counters c;

	pair_up(&p, false);
	memlnd_set_rdma(p.net, true);
	ulnet_handle_t gmdh = bind_md(p.a, sink, sizeof(sink), 0, 2, &gl);
	assert_int_equal(ulnet_get(p.a, NULL, gmdh, pid_of(&p.nb, ULNET_PID_LUSTRE), 31, 7, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(gl.n, 2);
	assert_int_equal(gl.ev[0].type, ULNET_EVENT_SEND);
	assert_int_equal(gl.ev[0].status, -ENODATA);
	assert_int_equal(gl.ev[1].type, ULNET_EVENT_REPLY);
	assert_int_equal(gl.ev[1].status, -ENODATA);
	assert_true(gl.ev[1].unlinked);
	ulnet_counters_get(p.b, &c);
	assert_int_equal(c.drop_count, 1);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.msgs_alloc, 0);
	pair_down(&p);
}

static void test_ack_timeout(void **state)
{
	(void)state;
	struct pair p;
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[16] = { 1 }, dst[16];
	struct ulnet_counters c;

	fake_now = 1000 * 1000000000ULL;
	pair_up(&p, true);
	post_md(p.b, 8, 0, dst, sizeof(dst), ULNET_MD_OP_PUT, ULNET_MD_THRESH_INF, &tl, NULL);
	ulnet_handle_t m = bind_md(p.a, src, sizeof(src), 0, 2, &il);
	/* the ACK is held in the network */
	memlnd_set_filter(p.net, NULL, NULL);
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_ACK_REQ, pid_of(&p.nb, 12345), 8, 0, 0, 0), 0);
	assert_int_equal(memlnd_pump_one(p.net), 1);   /* the PUT */
	assert_int_equal(tl.n, 1);
	assert_int_equal(il.n, 1);                       /* SEND */
	assert_int_equal(memlnd_queued(p.net), 1);       /* the ACK, not delivered */

	fake_now += 149 * 1000000000ULL;
	ulnet_progress(p.a, 0);
	assert_int_equal(il.n, 1);
	fake_now += 2 * 1000000000ULL;
	ulnet_progress(p.a, 0);
	assert_int_equal(il.n, 2);
	assert_int_equal(il.ev[1].type, ULNET_EVENT_UNLINK);
	assert_int_equal(il.ev[1].status, -ETIMEDOUT);
	assert_true(il.ev[1].unlinked);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.response_timeout_count, 1);

	/* the late ACK is dropped */
	assert_int_equal(memlnd_pump(p.net), 1);
	assert_int_equal(il.n, 2);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.drop_count, 1);
	pair_down(&p);
}

static void test_ack_lost_then_timeout(void **state)
{
	(void)state;
	struct pair p;
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[16] = { 1 }, dst[16];

	fake_now = 5 * 1000000000ULL;
	pair_up(&p, true);
	post_md(p.b, 8, 0, dst, sizeof(dst), ULNET_MD_OP_PUT, ULNET_MD_THRESH_INF, &tl, NULL);
	ulnet_handle_t m = bind_md(p.a, src, sizeof(src), 0, 2, &il);
	memlnd_drop_next(p.net, 1, 1u << ULNET_MSG_ACK);
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_ACK_REQ, pid_of(&p.nb, 12345), 8, 0, 0, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(tl.n, 1);
	assert_int_equal(il.n, 1);
	fake_now += 151 * 1000000000ULL;
	ulnet_progress(p.a, 0);
	assert_int_equal(il.n, 2);
	assert_int_equal(il.ev[1].status, -ETIMEDOUT);
	pair_down(&p);
}

static void test_unmatched_get_times_out(void **state)
{
	(void)state;
	struct pair p;
	struct evlog il = { 0 };
	uint8_t sink[16];
	struct ulnet_counters c;

	fake_now = 77 * 1000000000ULL;
	pair_up(&p, true);
	ulnet_handle_t m = bind_md(p.a, sink, sizeof(sink), 0, 2, &il);
	assert_int_equal(ulnet_get(p.a, NULL, m, pid_of(&p.nb, 12345), 44, 0x99, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(il.n, 1);
	assert_int_equal(il.ev[0].type, ULNET_EVENT_SEND);
	assert_int_equal(il.ev[0].status, 0);
	ulnet_counters_get(p.b, &c);
	assert_int_equal(c.drop_count, 1);
	assert_non_null(strstr(last_log, "GET"));
	fake_now += 150 * 1000000000ULL + 1;
	ulnet_progress(p.a, 0);
	assert_int_equal(il.n, 2);
	assert_int_equal(il.ev[1].type, ULNET_EVENT_UNLINK);
	assert_int_equal(il.ev[1].status, -ETIMEDOUT);
	pair_down(&p);
}

static void test_credits_queue(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(0, false), *b = mk(0, false);
	struct ulnet_ni_conf conf;
	ulnet_nid_t nb;
	struct evlog tl = { 0 }, il = { 0 };
	uint8_t src[8] = { 0 }, dst[8];
	struct ulnet_globals g;
	struct ulnet_peer_info pi;
	struct ulnet_ni_info ni;
	int i;

	ulnet_globals_get(a, &g);
	g.discovery = 0;
	ulnet_globals_set(a, &g);
	ulnet_globals_set(b, &g);
	memset(&conf, 0, sizeof(conf));
	memlnd_nid(1, &conf.nid);
	conf.tun.peer_credits = 2;
	conf.tun.credits = 3;
	assert_int_equal(memlnd_add_ni_conf(net, a, &conf), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	post_md(b, 2, 0, dst, sizeof(dst), ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
		ULNET_MD_THRESH_INF, &tl, NULL);
	for (i = 0; i < 5; i++) {
		ulnet_handle_t m = bind_md(a, src, sizeof(src), 0, 1, &il);
		assert_int_equal(ulnet_put(a, NULL, m, ULNET_NOACK_REQ, pid_of(&nb, 12345), 2, 0, 0, 0), 0);
	}
	/* two on the wire, three waiting for a peer credit */
	assert_int_equal(memlnd_queued(net), 2);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_int_equal(pi.nis[0].max_tx_credits, 2);
	assert_int_equal(pi.nis[0].available_tx_credits, -3);
	assert_int_equal(pi.nis[0].min_tx_credits, -3);
	assert_int_equal(ulnet_ni_info(a, 1, &ni), 0);
	assert_int_equal(ni.credits_max, 3);
	assert_int_equal(ni.credits_avail, 3 - 2);
	memlnd_pump(net);
	assert_int_equal(tl.n, 5);
	assert_int_equal(il.n, 5);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_int_equal(pi.nis[0].available_tx_credits, 2);
	assert_int_equal(ulnet_ni_info(a, 1, &ni), 0);
	assert_int_equal(ni.credits_avail, 3);
	assert_int_equal(ni.credits_min, 1);
	assert_int_equal(ni.sent.n[ULNET_MSG_PUT], 5);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

static void test_shutdown_ends_inflight(void **state)
{
	(void)state;
	struct pair p;
	struct evlog il = { 0 }, jl = { 0 }, tl = { 0 };
	uint8_t src[16] = { 0 }, dst[16];

	pair_up(&p, false);
	post_md(p.b, 8, 0, dst, sizeof(dst), ULNET_MD_OP_PUT, ULNET_MD_THRESH_INF, &tl, NULL);
	/* one PUT waits for its ACK, one is still in the network */
	ulnet_handle_t m1 = bind_md(p.a, src, sizeof(src), 0, 2, &il);
	assert_int_equal(ulnet_put(p.a, NULL, m1, ULNET_ACK_REQ, pid_of(&p.nb, 12345), 8, 0, 0, 0), 0);
	assert_int_equal(memlnd_pump_one(p.net), 1);
	ulnet_handle_t m2 = bind_md(p.a, src, sizeof(src), 0, 2, &jl);
	assert_int_equal(ulnet_put(p.a, NULL, m2, ULNET_ACK_REQ, pid_of(&p.nb, 12345), 8, 0, 0, 0), 0);
	assert_int_equal(il.n, 1);
	assert_int_equal(jl.n, 0);
	ulnet_destroy(p.a);
	assert_int_equal(il.n, 2);
	assert_int_equal(il.ev[1].type, ULNET_EVENT_UNLINK);
	assert_int_equal(il.ev[1].status, -ESHUTDOWN);
	assert_true(jl.n >= 1);
	assert_int_equal(jl.ev[0].type, ULNET_EVENT_SEND);
	assert_int_equal(jl.ev[0].status, -ESHUTDOWN);
	assert_true(jl.ev[jl.n - 1].unlinked);
	/* what B still had queued toward A goes nowhere */
	memlnd_pump(p.net);
	ulnet_destroy(p.b);
	memlnd_net_destroy(p.net);
}

static void test_self_nid_through_its_lnd(void **state)
{
	(void)state;
	struct pair p;
	struct evlog tl = { 0 }, il = { 0 }, ll = { 0 };
	uint8_t src[4] = { 1, 2, 3, 4 }, dst[4] = { 0 }, dst2[4] = { 0 };
	struct ulnet_peer_info pi;

	pair_up(&p, false);
	post_md(p.a, 6, 0, dst, sizeof(dst), ULNET_MD_OP_PUT, 1, &tl, NULL);
	post_md(p.a, 8, 0, dst2, sizeof(dst2), ULNET_MD_OP_PUT, 1, &ll, NULL);
	ulnet_handle_t m = bind_md(p.a, src, sizeof(src), 0, 4, &il);
	/* as the kernel: our own NID is a peer like any other, reached
	 * through the NI's LND (so a ping of it tests the NI) */
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_ACK_REQ, pid_of(&p.na, 12345), 6, 0, 0, 0), 0);
	assert_true(memlnd_queued(p.net) > 0);
	memlnd_pump(p.net);
	assert_int_equal(tl.n, 1);
	assert_true(ulnet_nid_same(&tl.ev[0].initiator.nid, &p.na));
	assert_memory_equal(dst, src, 4);
	assert_int_equal(ulnet_peer_info(p.a, 0, &pi), 0);
	assert_true(ulnet_nid_same(&pi.primary, &p.na));
	/* 0@lo stays in the node: nothing goes to the network */
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_ACK_REQ, pid_of(&ULNET_NID_LO0, 12345), 8, 0,
				   0, 0), 0);
	assert_int_equal(memlnd_queued(p.net), 0);
	assert_int_equal(ll.n, 1);
	assert_true(ulnet_nid_same(&ll.ev[0].initiator.nid, &ULNET_NID_LO0));
	assert_memory_equal(dst2, src, 4);
	assert_int_equal(il.n, 4);
	pair_down(&p);
}

static void test_unreachable(void **state)
{
	(void)state;
	ulnet_t *ln = mk(0, false);
	struct evlog il = { 0 };
	uint8_t src[4];
	ulnet_nid_t far;

	ulnet_nid_from_ipv4(0x0a000001, ulnet_mknet(ULNET_LND_TCP, 0), &far);
	ulnet_handle_t m = bind_md(ln, src, sizeof(src), 0, 1, &il);
	assert_int_equal(ulnet_put(ln, NULL, m, ULNET_NOACK_REQ, pid_of(&far, 12345), 1, 0, 0, 0),
			 -EHOSTUNREACH);
	assert_int_equal(ulnet_get(ln, NULL, m, pid_of(&far, 12345), 1, 0, 0), -EHOSTUNREACH);
	assert_int_equal(il.n, 0);
	/* a source NID that is not ours */
	assert_int_equal(ulnet_put(ln, &far, m, ULNET_NOACK_REQ, pid_of(&far, 12345), 1, 0, 0, 0),
			 -EINVAL);
	ulnet_destroy(ln);
}

/* The send path caches what the NI list says about a net (how many NIs,
 * which one): adding and removing NIs must be seen by the next send. */
static void test_ni_changes_seen_by_send(void **state)
{
	(void)state;
	struct pair p;
	struct evlog il = { 0 };
	struct memlnd_trace_ent tr[8];
	uint8_t src[4] = { 1, 2, 3, 4 };
	ulnet_nid_t n3, n4;
	bool from3 = false, from4 = false;
	int i, n;

	pair_up(&p, false);
	ulnet_handle_t m = bind_md(p.a, src, sizeof(src), 0, ULNET_MD_THRESH_INF, &il);
	ulnet_process_id_t to_b = pid_of(&p.nb, ULNET_PID_LUSTRE);

	/* one NI on the net: it sends (and the cache learns it) */
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(memlnd_trace(p.net, tr, 8), 1);
	assert_true(ulnet_nid_same(&tr[0].hdr.src_nid, &p.na));

	/* it goes: nothing of ours is on the net any more */
	assert_int_equal(ulnet_ni_del(p.a, &p.na), 0);
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), -EHOSTUNREACH);
	assert_int_equal(ulnet_put(p.a, &p.na, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), -EINVAL);

	/* a new NI on the net is the one used */
	assert_int_equal(memlnd_add_ni(p.net, p.a, 3, &n3), 0);
	memlnd_trace_clear(p.net);
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(memlnd_trace(p.net, tr, 8), 1);
	assert_true(ulnet_nid_same(&tr[0].hdr.src_nid, &n3));

	/* two NIs on the net: the peer (not Multi-Rail: no discovery here)
	 * hears from one of them only, as from a kernel's preferred NI of a
	 * non-MR peer (the one preferred before, na, is gone: a new one is
	 * chosen, and kept) */
	assert_int_equal(memlnd_add_ni(p.net, p.a, 4, &n4), 0);
	memlnd_trace_clear(p.net);
	for (i = 0; i < 4; i++)
		assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), 0);
	memlnd_pump(p.net);
	n = memlnd_trace(p.net, tr, 8);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++) {
		from3 |= ulnet_nid_same(&tr[i].hdr.src_nid, &n3);
		from4 |= ulnet_nid_same(&tr[i].hdr.src_nid, &n4);
	}
	assert_true(from3 != from4);
	/* the new NID is ours: sent through the LND to it, from one of ours */
	memlnd_trace_clear(p.net);
	assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_NOACK_REQ,
				   pid_of(&n4, ULNET_PID_LUSTRE), 7, 0, 0, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(memlnd_trace(p.net, tr, 8), 1);
	assert_true(ulnet_nid_same(&tr[0].hdr.dest_nid, &n4));
	assert_true(ulnet_nid_same(&tr[0].hdr.src_nid, &n3) || ulnet_nid_same(&tr[0].hdr.src_nid, &n4));

	/* back to one NI: only it sends, and the other NID is no longer ours */
	assert_int_equal(ulnet_ni_del(p.a, &n3), 0);
	memlnd_trace_clear(p.net);
	for (i = 0; i < 2; i++)
		assert_int_equal(ulnet_put(p.a, NULL, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), 0);
	memlnd_pump(p.net);
	n = memlnd_trace(p.net, tr, 8);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_true(ulnet_nid_same(&tr[i].hdr.src_nid, &n4));
	assert_int_equal(ulnet_put(p.a, &n3, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), -EINVAL);
	assert_int_equal(ulnet_put(p.a, &n4, m, ULNET_NOACK_REQ, to_b, 7, 0, 0, 0), 0);
	memlnd_pump(p.net);
	pair_down(&p);
}

/* --- threaded instances: concurrent callers, handlers on progress threads -------- */

#include <pthread.h>

struct tworker {
	ulnet_t *ln;
	ulnet_nid_t to;
	int id, n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int acks, replies, sends, errors;
	uint8_t src[1024], sink[1024];
};

static void tw_handler(const struct ulnet_event *ev)
{
	struct tworker *w = ev->md_user_ptr;

	pthread_mutex_lock(&w->mu);
	if (ev->status)
		w->errors++;
	if (ev->type == ULNET_EVENT_ACK)
		w->acks++;
	else if (ev->type == ULNET_EVENT_REPLY)
		w->replies++;
	else if (ev->type == ULNET_EVENT_SEND)
		w->sends++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void *tw_main(void *arg)
{
	struct tworker *w = arg;
	ulnet_process_id_t t = { .nid = w->to, .pid = 12345 };
	int i;

	for (i = 0; i < w->n; i++) {
		struct ulnet_md md = { .start = w->src, .length = sizeof(w->src), .threshold = 2,
				       .user_ptr = w, .handler = tw_handler };
		struct ulnet_md gmd = { .start = w->sink, .length = sizeof(w->sink), .threshold = 2,
					.user_ptr = w, .handler = tw_handler };
		ulnet_handle_t mdh;

		memset(w->src, w->id * 16 + (i & 15), sizeof(w->src));
		if (ulnet_md_bind(w->ln, &md, ULNET_UNLINK, &mdh) ||
		    ulnet_put(w->ln, NULL, mdh, ULNET_ACK_REQ, t, 40, (uint64_t)w->id, 0, 0))
			return (void *)1;
		pthread_mutex_lock(&w->mu);
		while (w->acks + w->errors <= i)
			pthread_cond_wait(&w->cv, &w->mu);
		pthread_mutex_unlock(&w->mu);
		/* read it back */
		if (ulnet_md_bind(w->ln, &gmd, ULNET_UNLINK, &mdh) ||
		    ulnet_get(w->ln, NULL, mdh, t, 40, (uint64_t)w->id, 0))
			return (void *)1;
		pthread_mutex_lock(&w->mu);
		while (w->replies + w->errors <= i)
			pthread_cond_wait(&w->cv, &w->mu);
		pthread_mutex_unlock(&w->mu);
		if (memcmp(w->sink, w->src, sizeof(w->sink)))
			return (void *)2;
	}
	return NULL;
}

static void test_threaded_concurrent(void **state)
{
	(void)state;
	enum { NW = 4, NOPS = 200 };
	struct memlnd_net *net = memlnd_net_create();
	struct ulnet_opts o = { .log = capture_log };
	ulnet_t *a, *b;
	ulnet_nid_t nb;
	static struct tworker w[NW];
	static uint8_t slots[NW][1024];
	pthread_t th[NW];
	int i;

	assert_int_equal(ulnet_create(&o, &a), 0);
	assert_int_equal(ulnet_create(&o, &b), 0);
	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 1, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &nb), 0);
	/* one slot per worker on B, PUT and GET, reused */
	for (i = 0; i < NW; i++) {
		ulnet_handle_t meh, mdh;
		struct ulnet_md md = { .start = slots[i], .length = 1024,
				       .threshold = ULNET_MD_THRESH_INF,
				       .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET |
						  ULNET_MD_MANAGE_REMOTE };

		assert_int_equal(ulnet_me_attach(b, 40, any_id, (uint64_t)i, 0, ULNET_RETAIN,
						 ULNET_INS_AFTER, &meh), 0);
		assert_int_equal(ulnet_md_attach(b, meh, &md, ULNET_RETAIN, &mdh), 0);
	}
	for (i = 0; i < NW; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].ln = a;
		w[i].to = nb;
		w[i].id = i;
		w[i].n = NOPS;
		pthread_mutex_init(&w[i].mu, NULL);
		pthread_cond_init(&w[i].cv, NULL);
		assert_int_equal(pthread_create(&th[i], NULL, tw_main, &w[i]), 0);
	}
	for (i = 0; i < NW; i++) {
		void *rv;

		assert_int_equal(pthread_join(th[i], &rv), 0);
		assert_null(rv);
		assert_int_equal(w[i].errors, 0);
		assert_int_equal(w[i].acks, NOPS);
		assert_int_equal(w[i].replies, NOPS);
	}
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
	for (i = 0; i < NW; i++) {
		pthread_mutex_destroy(&w[i].mu);
		pthread_cond_destroy(&w[i].cv);
	}
}

/* One MD, its events on two threads at once (SEND events on B's loop, where
 * memlnd completes A's sends, ACK events on A's): handlers of one MD never
 * overlap, every event comes once, and an unlink made while a handler runs
 * waits for it: the UNLINK event comes last. The handler's thread ends its
 * turn without the lock, so this also checks that a waiter is woken. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int in, overlaps, sends, acks, errors, unlinks, after_unlink;
	int slow;            /* the next SEND handler sleeps (an unlink comes meanwhile) */
	int slow_in, slow_done;
} om = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void om_handler(const struct ulnet_event *ev)
{
	bool slow = false;

	if (__atomic_add_fetch(&om.in, 1, __ATOMIC_SEQ_CST) != 1)
		__atomic_add_fetch(&om.overlaps, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&om.mu);
	if (om.unlinks)
		om.after_unlink++;
	if (ev->status && ev->type != ULNET_EVENT_UNLINK)
		om.errors++;
	if (ev->type == ULNET_EVENT_UNLINK)
		om.unlinks++;
	if (ev->type == ULNET_EVENT_SEND && om.slow) {
		om.slow = 0;
		om.slow_in = 1;
		slow = true;
		pthread_cond_broadcast(&om.cv);
	}
	pthread_mutex_unlock(&om.mu);
	if (slow) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);   /* the unlink arrives meanwhile */
	}
	for (int i = 0; i < 200; i++)   /* widen the window for an overlap */
		__asm__ volatile("" ::: "memory");
	pthread_mutex_lock(&om.mu);
	if (ev->type == ULNET_EVENT_SEND)
		om.sends++;
	else if (ev->type == ULNET_EVENT_ACK)
		om.acks++;
	if (slow)
		om.slow_done = 1;
	pthread_cond_broadcast(&om.cv);
	pthread_mutex_unlock(&om.mu);
	__atomic_sub_fetch(&om.in, 1, __ATOMIC_SEQ_CST);
}

static void om_wait(int sends, int acks)
{
	pthread_mutex_lock(&om.mu);
	while (om.sends < sends || om.acks < acks)
		pthread_cond_wait(&om.cv, &om.mu);
	pthread_mutex_unlock(&om.mu);
}

static void test_threaded_one_md_handlers(void **state)
{
	(void)state;
	enum { N = 2000, WINDOW = 16 };
	struct memlnd_net *net = memlnd_net_create();
	struct ulnet_opts o = { .log = capture_log };
	static uint8_t sink[64], src[64];
	struct ulnet_md smd = { .start = sink, .length = sizeof(sink),
				.threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md md = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF,
			       .handler = om_handler };
	ulnet_handle_t meh, mdh;
	ulnet_process_id_t t = { .pid = 12345 };
	ulnet_t *a, *b;
	int i;

	assert_int_equal(ulnet_create(&o, &a), 0);
	assert_int_equal(ulnet_create(&o, &b), 0);
	memlnd_set_auto(net, true);
	assert_int_equal(memlnd_add_ni(net, a, 1, NULL), 0);
	assert_int_equal(memlnd_add_ni(net, b, 2, &t.nid), 0);
	assert_int_equal(ulnet_me_attach(b, 41, any_id, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(b, meh, &smd, ULNET_RETAIN, &mdh), 0);
	assert_int_equal(ulnet_md_bind(a, &md, ULNET_RETAIN, &mdh), 0);

	for (i = 0; i < N; i++) {
		if (i >= WINDOW)
			om_wait(i - WINDOW + 1, i - WINDOW + 1);
		assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_ACK_REQ, t, 41, 0, 0, 0), 0);
	}
	om_wait(N, N);

	/* one more, no ACK (the MD is idle once it is sent), whose SEND
	 * handler is slow: unlink while it runs */
	pthread_mutex_lock(&om.mu);
	om.slow = 1;
	pthread_mutex_unlock(&om.mu);
	assert_int_equal(ulnet_put(a, NULL, mdh, ULNET_NOACK_REQ, t, 41, 0, 0, 0), 0);
	pthread_mutex_lock(&om.mu);
	while (!om.slow_in)
		pthread_cond_wait(&om.cv, &om.mu);
	pthread_mutex_unlock(&om.mu);
	assert_int_equal(ulnet_md_unlink(a, mdh), 0);
	/* the UNLINK event was delivered, after the slow handler ended */
	pthread_mutex_lock(&om.mu);
	assert_int_equal(om.slow_done, 1);
	assert_int_equal(om.unlinks, 1);
	assert_int_equal(om.after_unlink, 0);
	assert_int_equal(om.sends, N + 1);
	assert_int_equal(om.acks, N);
	assert_int_equal(om.errors, 0);
	pthread_mutex_unlock(&om.mu);
	assert_int_equal(__atomic_load_n(&om.overlaps, __ATOMIC_SEQ_CST), 0);

	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lo_put_with_ack),
		cmocka_unit_test(test_lo_put_no_ack),
		cmocka_unit_test(test_lo_get_reply),
		cmocka_unit_test(test_lo_running_offset_and_truncate),
		cmocka_unit_test(test_lazy_portal),
		cmocka_unit_test(test_portal0_is_lazy),
		cmocka_unit_test(test_reentrant_handler),
		cmocka_unit_test(test_two_nodes_sizes),
		cmocka_unit_test(test_rdma_get),
		cmocka_unit_test(test_rdma_get_no_match),
		cmocka_unit_test(test_ack_timeout),
		cmocka_unit_test(test_ack_lost_then_timeout),
		cmocka_unit_test(test_unmatched_get_times_out),
		cmocka_unit_test(test_credits_queue),
		cmocka_unit_test(test_shutdown_ends_inflight),
		cmocka_unit_test(test_self_nid_through_its_lnd),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_ni_changes_seen_by_send),
		cmocka_unit_test(test_threaded_concurrent),
		cmocka_unit_test(test_threaded_one_md_handlers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
