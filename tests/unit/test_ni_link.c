/* SPDX-License-Identifier: MIT */
/*
 * test_ni_link.c - an NI's link held down (ulnet_fault_link_set(), the
 * state rtnetlink also sets), on memlnd nodes in one process with a fake
 * clock: A has two NIs (.11, .12), B one (.21), each knows the other
 * (discovered). With .12's link down: A reports it down with fatal_error
 * 1 and pushes B; A's PUTs all leave from .11 and B's all go to .11, every
 * one delivered with its bytes; a send forced out of .12 fails. Up again
 * (by hand, or when --duration ends on the instance clock): fatal_error 0,
 * status up, pushed, both NIs used. Bad calls are refused.
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

#include "core/ping_info.h"
#include "memlnd.h"
#include "node_info.h"
#include "ulnet/fault.h"
#include "ulnet/ulnet.h"

#define PORTAL 52
#define NPUTS 8
#define PAYLOAD 64
#define SEC 1000000000ULL

static uint64_t fake_now = 1000000000ULL;
static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static void quiet_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	(void)msg;
}

static ulnet_t *mk(void)
{
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS, .clock = fake_clock,
				.log = quiet_log, .log_level = ULNET_LOG_DEBUG };
	ulnet_t *ln;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	return ln;
}

static const ulnet_process_id_t any = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						 .addr = { 0xff, 0xff, 0xff, 0xff } },
					.pid = ULNET_PID_ANY };

/* What a node received on PORTAL: how many, and how many had wrong bytes
 * (each payload is b, b+1, b+2, ... from its first byte b). */
struct recvlog {
	int n, bad;
	uint8_t data[PAYLOAD];
};

static void recv_handler(const struct ulnet_event *ev)
{
	struct recvlog *r = ev->md_user_ptr;
	const uint8_t *d = (const uint8_t *)ev->md_start + ev->offset;

	if (ev->type != ULNET_EVENT_PUT)
		return;
	if (ev->status || ev->mlength != PAYLOAD) {
		r->bad++;
		return;
	}
	for (int k = 0; k < PAYLOAD; k++)
		if (d[k] != (uint8_t)(d[0] + k))
			r->bad++;
	r->n++;
}

struct sendlog {
	int nsend, status;
};

static void send_handler(const struct ulnet_event *ev)
{
	struct sendlog *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_SEND)
		s->nsend++;
	if (ev->status)
		s->status = ev->status;
}

static void post_service(ulnet_t *ln, struct recvlog *r)
{
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = r->data, .length = sizeof(r->data),
			       .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = r, .handler = recv_handler };

	assert_int_equal(ulnet_me_attach(ln, PORTAL, any, 1, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_RETAIN, &mdh), 0);
}

static uint8_t payloads[NPUTS * 4][PAYLOAD];
static int npayload;

/* A PUT of a fresh pattern from `ln` (from `self` when not NULL) to `to`. */
static void put(ulnet_t *ln, const ulnet_nid_t *self, const ulnet_nid_t *to, struct sendlog *s)
{
	uint8_t *buf = payloads[npayload++ % (NPUTS * 4)];
	struct ulnet_md md = { .start = buf, .length = PAYLOAD, .threshold = 1, .user_ptr = s,
			       .handler = send_handler };
	ulnet_process_id_t t = { .nid = *to, .pid = 12345 };
	ulnet_handle_t mdh;

	for (int k = 0; k < PAYLOAD; k++)
		buf[k] = (uint8_t)(npayload * 7 + k);
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(ln, self, mdh, ULNET_NOACK_REQ, t, PORTAL, 1, 0, 0), 0);
}

struct pair {
	struct memlnd_net *net;
	ulnet_t *a, *b;
	ulnet_nid_t na1, na2, nb;
	struct recvlog ra, rb;
};

static void settle(struct pair *p)
{
	for (int k = 0; k < 100; k++) {
		int n = memlnd_pump(p->net);

		n += ulnet_progress(p->a, 0) > 0;
		n += ulnet_progress(p->b, 0) > 0;
		if (n == 0 && memlnd_queued(p->net) == 0)
			break;
	}
}

static void pair_up(struct pair *p)
{
	struct sendlog s = { 0 };
	struct ulnet_peer_info pi;

	memset(p, 0, sizeof(*p));
	p->net = memlnd_net_create();
	p->a = mk();
	p->b = mk();
	assert_int_equal(memlnd_add_ni(p->net, p->a, 11, &p->na1), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->a, 12, &p->na2), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->b, 21, &p->nb), 0);
	post_service(p->a, &p->ra);
	post_service(p->b, &p->rb);
	put(p->a, NULL, &p->nb, &s);   /* discovery (ping and push) first */
	settle(p);
	assert_int_equal(s.status, 0);
	assert_int_equal(p->rb.n, 1);
	/* each knows the other whole */
	assert_int_equal(ulnet_peer_info(p->a, 0, &pi), 0);
	assert_int_equal(pi.nnis, 1);
	assert_int_equal(ulnet_peer_info(p->b, 0, &pi), 0);
	assert_true(pi.multi_rail);
	assert_int_equal(pi.nnis, 2);
	p->rb.n = 0;
	memlnd_trace_clear(p->net);
}

static void pair_down(struct pair *p)
{
	ulnet_destroy(p->a);
	ulnet_destroy(p->b);
	memlnd_net_destroy(p->net);
}

/* Counts in the trace: pushes (PUTs on portal 0) from `from`'s NIs to
 * `to`, and application PUTs by source or destination. */
static int pushes(struct memlnd_net *net, const ulnet_nid_t *to)
{
	static struct memlnd_trace_ent tr[512];
	int n = memlnd_trace(net, tr, 512), k = 0;

	assert_true(n <= 512);
	for (int i = 0; i < n; i++)
		if (tr[i].hdr.type == ULNET_MSG_PUT && tr[i].hdr.msg.put.ptl_index == 0 &&
		    ulnet_nid_same(&tr[i].hdr.dest_nid, to))
			k++;
	return k;
}

/* The status of `nid` in the last push to `to` in the trace (its ping
 * info is small enough for the bytes the trace keeps); 0 if none. */
static uint32_t pushed_status(struct memlnd_net *net, const ulnet_nid_t *to, const ulnet_nid_t *nid)
{
	static struct memlnd_trace_ent tr[512];
	int n = memlnd_trace(net, tr, 512);

	for (int i = n - 1; i >= 0; i--) {
		struct lnet_ping_ni nis[8];
		struct lnet_ping_info pi = { .nis = nis, .max_nis = 8 };

		if (tr[i].hdr.type != ULNET_MSG_PUT || tr[i].hdr.msg.put.ptl_index != 0 ||
		    !ulnet_nid_same(&tr[i].hdr.dest_nid, to))
			continue;
		assert_true(lnet_ping_info_decode(tr[i].data, tr[i].data_len, &pi) > 0);
		for (unsigned k = 0; k < pi.nnis; k++)
			if (ulnet_nid_same(&nis[k].nid, nid))
				return nis[k].status;
		fail_msg("the push does not list the NI");
	}
	return 0;
}

static int app_puts(struct memlnd_net *net, const ulnet_nid_t *src, const ulnet_nid_t *dst)
{
	static struct memlnd_trace_ent tr[512];
	int n = memlnd_trace(net, tr, 512), k = 0;

	assert_true(n <= 512);
	for (int i = 0; i < n; i++)
		if (tr[i].hdr.type == ULNET_MSG_PUT && tr[i].hdr.msg.put.ptl_index == PORTAL &&
		    (!src || ulnet_nid_same(&tr[i].hdr.src_nid, src)) &&
		    (!dst || ulnet_nid_same(&tr[i].hdr.dest_nid, dst)))
			k++;
	return k;
}

/* Messages of any kind the trace has from `src`. */
static int sent_from(struct memlnd_net *net, const ulnet_nid_t *src)
{
	static struct memlnd_trace_ent tr[512];
	int n = memlnd_trace(net, tr, 512), k = 0;

	assert_true(n <= 512);
	for (int i = 0; i < n; i++)
		k += ulnet_nid_same(&tr[i].hdr.src_nid, src);
	return k;
}

/* NPUTS from A to B and NPUTS from B to A, every one delivered intact. */
static void traffic(struct pair *p)
{
	struct sendlog s[2 * NPUTS] = { 0 };

	p->ra.n = p->rb.n = 0;
	for (int i = 0; i < NPUTS; i++) {
		put(p->a, NULL, &p->nb, &s[i]);
		put(p->b, NULL, &p->na1, &s[NPUTS + i]);
	}
	settle(p);
	for (int i = 0; i < 2 * NPUTS; i++) {
		assert_int_equal(s[i].nsend, 1);
		assert_int_equal(s[i].status, 0);
	}
	assert_int_equal(p->rb.n, NPUTS);
	assert_int_equal(p->ra.n, NPUTS);
	assert_int_equal(p->ra.bad + p->rb.bad, 0);
}

static void assert_link(ulnet_t *ln, const ulnet_nid_t *nid, bool down)
{
	struct ulnet_ni_info info = ni_info(ln, nid);

	assert_int_equal(info.health.fatal_error, down);
	assert_int_equal(info.up, !down);
}

/* .12 down: A says so (fatal, down, pushed); both directions use .11 only;
 * what must leave from .12 fails. */
static void test_link_down_moves_traffic(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s = { 0 };
	struct ulnet_fault_link l;

	pair_up(&p);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, true, 0), 0);
	assert_link(p.a, &p.na2, true);
	assert_link(p.a, &p.na1, false);
	assert_int_equal(ulnet_fault_link_list(p.a, 0, &l), 0);
	assert_true(ulnet_nid_same(&l.nid, &p.na2));
	assert_true(l.fault);
	assert_false(l.carrier_down);
	assert_int_equal(l.left_ms, 0);
	assert_int_equal(ulnet_fault_link_list(p.a, 1, &l), -ENOENT);
	settle(&p);
	/* B was pushed and believes it */
	assert_true(pushes(p.net, &p.nb) >= 1);
	assert_int_equal(pushed_status(p.net, &p.nb, &p.na2), LNET_NI_STATUS_DOWN);
	assert_int_equal(pushed_status(p.net, &p.nb, &p.na1), LNET_NI_STATUS_UP);
	assert_true(peer_ni(p.b, &p.na2).health.health_value < ULNET_MAX_HEALTH);
	assert_int_equal(peer_ni(p.b, &p.na1).health.health_value, ULNET_MAX_HEALTH);
	memlnd_trace_clear(p.net);

	traffic(&p);
	assert_int_equal(app_puts(p.net, &p.na1, &p.nb), NPUTS);
	assert_int_equal(app_puts(p.net, &p.na2, NULL), 0);
	assert_int_equal(app_puts(p.net, &p.nb, &p.na1), NPUTS);
	assert_int_equal(app_puts(p.net, NULL, &p.na2), 0);

	/* full health by hand does not raise a downed link's status */
	assert_int_equal(ulnet_ni_set_health(p.a, &p.na2, ULNET_MAX_HEALTH), 0);
	assert_link(p.a, &p.na2, true);

	/* forced out of .12: the dead link's error */
	put(p.a, &p.na2, &p.nb, &s);
	settle(&p);
	assert_int_not_equal(s.status, 0);
	pair_down(&p);
}

/* Up again: status up, fatal_error 0, pushed, and both NIs carry A's PUTs. */
static void test_link_up_restores(void **state)
{
	(void)state;
	struct pair p;
	struct ulnet_fault_link l;

	pair_up(&p);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, true, 0), 0);
	settle(&p);
	memlnd_trace_clear(p.net);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, false, 0), 0);
	assert_link(p.a, &p.na2, false);
	assert_int_equal(ulnet_fault_link_list(p.a, 0, &l), -ENOENT);
	settle(&p);
	assert_true(pushes(p.net, &p.nb) >= 1);
	assert_int_equal(pushed_status(p.net, &p.nb, &p.na2), LNET_NI_STATUS_UP);
	/* up twice: nothing more to say */
	memlnd_trace_clear(p.net);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, false, 0), 0);
	settle(&p);
	assert_int_equal(pushes(p.net, &p.nb), 0);

	traffic(&p);
	assert_true(app_puts(p.net, &p.na1, &p.nb) > 0);
	assert_true(app_puts(p.net, &p.na2, &p.nb) > 0);
	pair_down(&p);
}

/* --duration: down until the instance clock passes it, then up and
 * pushed, with no call. */
static void test_link_duration_expires(void **state)
{
	(void)state;
	struct pair p;
	struct ulnet_fault_link l;

	pair_up(&p);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, true, 5), 0);
	assert_int_equal(ulnet_fault_link_list(p.a, 0, &l), 0);
	assert_int_equal(l.left_ms, 5000);
	settle(&p);
	fake_now += 4 * SEC;
	settle(&p);
	assert_link(p.a, &p.na2, true);
	assert_int_equal(ulnet_fault_link_list(p.a, 0, &l), 0);
	assert_int_equal(l.left_ms, 1000);
	memlnd_trace_clear(p.net);
	fake_now += 2 * SEC;
	settle(&p);
	assert_link(p.a, &p.na2, false);
	assert_true(pushes(p.net, &p.nb) >= 1);
	assert_int_equal(pushed_status(p.net, &p.nb, &p.na2), LNET_NI_STATUS_UP);

	/* a plain down ends an earlier duration: it stays down */
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, true, 3), 0);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, true, 0), 0);
	fake_now += 10 * SEC;
	settle(&p);
	assert_link(p.a, &p.na2, true);
	pair_down(&p);
}

/* A and B each have an NI on gni and one on gni1. Once A's gni link is
 * down, nothing of A's goes to B's gni NI, its push included: a peer NI on
 * a net where A has no live NI is not chosen (else the push to B's primary
 * would go out of the downed NI and fail there first). */
static void test_link_down_other_net(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *b = mk();
	ulnet_nid_t a0, a1, b0, b1;
	struct ulnet_ni_conf conf;
	struct recvlog rb = { 0 };
	struct sendlog s[NPUTS + 1] = { 0 };
	struct ulnet_peer_info pi;

	memset(&conf, 0, sizeof(conf));
	assert_int_equal(memlnd_add_ni(net, a, 11, &a0), 0);
	memlnd_nid(12, &conf.nid);
	conf.nid.num = 1;
	a1 = conf.nid;
	assert_int_equal(memlnd_add_ni_conf(net, a, &conf), 0);
	assert_int_equal(memlnd_add_ni(net, b, 21, &b0), 0);
	memlnd_nid(22, &conf.nid);
	conf.nid.num = 1;
	b1 = conf.nid;
	assert_int_equal(memlnd_add_ni_conf(net, b, &conf), 0);
	post_service(b, &rb);
	put(a, NULL, &b0, &s[NPUTS]);   /* discovery first */
	for (int k = 0; k < 100 && (memlnd_pump(net) + (ulnet_progress(a, 0) > 0) + (ulnet_progress(b, 0) > 0)); k++)
		;
	assert_int_equal(s[NPUTS].status, 0);
	assert_int_equal(ulnet_peer_info(a, 0, &pi), 0);
	assert_true(pi.multi_rail);
	assert_int_equal(pi.nnis, 2);
	memlnd_trace_clear(net);
	rb.n = 0;

	assert_int_equal(ulnet_fault_link_set(a, &a0, true, 0), 0);
	for (int i = 0; i < NPUTS; i++)
		put(a, NULL, &b0, &s[i]);
	for (int k = 0; k < 100 && (memlnd_pump(net) + (ulnet_progress(a, 0) > 0) + (ulnet_progress(b, 0) > 0)); k++)
		;
	for (int i = 0; i < NPUTS; i++)
		assert_int_equal(s[i].status, 0);
	assert_int_equal(rb.n, NPUTS);
	assert_int_equal(rb.bad, 0);
	assert_int_equal(app_puts(net, &a1, &b1), NPUTS);
	assert_int_equal(app_puts(net, NULL, &b0), 0);
	/* nothing at all was handed to the downed NI, the push included */
	assert_int_equal(sent_from(net, &a0), 0);
	assert_true(pushes(net, &b1) >= 1);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

static void test_link_refused(void **state)
{
	(void)state;
	struct pair p;
	ulnet_nid_t other, lo = ULNET_NID_LO0;

	pair_up(&p);
	memlnd_nid(99, &other);
	assert_int_equal(ulnet_fault_link_set(p.a, &other, true, 0), -ENOENT);
	/* B's NI is not A's */
	assert_int_equal(ulnet_fault_link_set(p.a, &p.nb, true, 0), -ENOENT);
	assert_int_equal(ulnet_fault_link_set(p.a, &lo, true, 0), -EINVAL);
	assert_int_equal(ulnet_fault_link_set(p.a, &p.na2, false, 5), -EINVAL);
	assert_int_equal(ulnet_fault_link_set(p.a, NULL, true, 0), -EINVAL);
	assert_int_equal(ulnet_fault_link_set(NULL, &p.na2, true, 0), -EINVAL);
	assert_link(p.a, &p.na2, false);
	pair_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_down_moves_traffic),
		cmocka_unit_test(test_link_up_restores),
		cmocka_unit_test(test_link_duration_expires),
		cmocka_unit_test(test_link_down_other_net),
		cmocka_unit_test(test_link_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
