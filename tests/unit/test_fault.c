/* SPDX-License-Identifier: MIT */
/*
 * test_fault.c - fault injection (include/ulnet/fault.h) between two nodes
 * on memlnd, A (1@gni) and B (2@gni), discovery off, on the test clock:
 * rule checks; drops on receive (rate, interval, drop_all, portal and type
 * masks, NID wildcards) and what the sender sees; reproducible choices
 * with a seed; health errors on the send path; delays on receive and on
 * send, released in order after their latency; deleting a delay rule
 * releases what it holds; list and reset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "fake_node.h"
#include "memlnd.h"
#include "ulnet/fault.h"

#define PORTAL 40
#define NPUT 64
static const uint64_t SEC = 1000000000ULL;

struct node2 {
	struct memlnd_net *net;
	ulnet_t *a, *b;
	ulnet_nid_t na, nb;
};

/* What B received, in order: the PUTs' match bits. */
struct rxlog {
	int n;
	uint64_t bits[NPUT * 2];
	uint8_t buf[64];
};

struct txlog {
	int nsend, nack, nerr, status;
};

static void rx_ev(const struct ulnet_event *ev)
{
	struct rxlog *r = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT && ev->status == 0 && r->n < NPUT * 2)
		r->bits[r->n++] = ev->match_bits;
}

static void tx_ev(const struct ulnet_event *ev)
{
	struct txlog *t = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_SEND)
		t->nsend++;
	if (ev->type == ULNET_EVENT_ACK && ev->status == 0)
		t->nack++;
	if (ev->status) {
		t->nerr++;
		t->status = ev->status;
	}
}

static void pair_up(struct node2 *p)
{
	struct ulnet_globals g;

	memset(p, 0, sizeof(*p));
	p->net = memlnd_net_create();
	p->a = mk();
	p->b = mk();
	assert_int_equal(memlnd_add_ni(p->net, p->a, 1, &p->na), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->b, 2, &p->nb), 0);
	for (int i = 0; i < 2; i++) {
		ulnet_t *ln = i ? p->b : p->a;

		ulnet_globals_get(ln, &g);
		g.discovery = 0;
		assert_int_equal(ulnet_globals_set(ln, &g), 0);
	}
}

static void pair_down(struct node2 *p)
{
	ulnet_destroy(p->a);
	ulnet_destroy(p->b);
	memlnd_net_destroy(p->net);
}

static void sink(ulnet_t *ln, struct rxlog *r)
{
	const ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = { .start = r->buf, .length = sizeof(r->buf),
			       .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE,
			       .user_ptr = r, .handler = rx_ev };
	ulnet_handle_t meh, mdh;

	assert_int_equal(ulnet_me_attach(ln, PORTAL, any, 0, ~0ULL, ULNET_RETAIN, ULNET_INS_AFTER,
					 &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_RETAIN, &mdh), 0);
}

static uint8_t payload[16];

static void put_to(struct node2 *p, uint64_t bits, enum ulnet_ack_req ack, struct txlog *t)
{
	struct ulnet_md md = { .start = payload, .length = sizeof(payload),
			       .threshold = ack == ULNET_ACK_REQ ? 2 : 1, .user_ptr = t,
			       .handler = tx_ev };
	ulnet_process_id_t to = { .nid = p->nb, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(p->a, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(p->a, NULL, mdh, ack, to, PORTAL, bits, 0, 0), 0);
}

static void settle(struct node2 *p)
{
	for (int k = 0; k < 50; k++) {
		int n = memlnd_pump(p->net);

		n += ulnet_progress(p->a, 0) > 0;
		n += ulnet_progress(p->b, 0) > 0;
		if (n == 0 && memlnd_queued(p->net) == 0)
			break;
	}
}

static struct ulnet_fault_rule any_rule(void)
{
	struct ulnet_fault_rule r;

	memset(&r, 0, sizeof(r));
	r.src = ULNET_NID_ANY;
	r.dst = ULNET_NID_ANY;
	r.local = ULNET_NID_ANY;
	return r;
}

static struct ulnet_fault_stats stats(ulnet_t *ln, enum ulnet_fault_kind k, int pos)
{
	struct ulnet_fault_stats st;

	assert_int_equal(ulnet_fault_list(ln, k, pos, NULL, &st), 0);
	return st;
}

static void test_rule_checks(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();

	pair_up(&p);
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), -EINVAL);   /* neither */
	r.rate = 2;
	r.interval = 5;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), -EINVAL);   /* both */
	r.interval = 0;
	r.latency = 1;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), -EINVAL);   /* latency */
	r.latency = 0;
	r.health_error_mask = 1u << 20;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), -EINVAL);   /* no such bit */
	r.health_error_mask = 0;
	r.portal_mask = 1ULL << PORTAL;
	r.msg_mask = ULNET_FAULT_MSG_BIT(ULNET_MSG_ACK);
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), -EINVAL);   /* ACK has none */
	r.msg_mask = 0;
	r.random = true;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DELAY, &r), -EINVAL);
	r.random = false;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), 0);
	/* a portal mask leaves PUT and GET in the mask */
	assert_int_equal(ulnet_fault_list(p.a, ULNET_FAULT_DROP, 0, &r, NULL), 0);
	assert_int_equal(r.msg_mask, ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT) |
				     ULNET_FAULT_MSG_BIT(ULNET_MSG_GET));
	assert_int_equal(ulnet_fault_list(p.a, ULNET_FAULT_DROP, 1, &r, NULL), -ENOENT);
	assert_int_equal(ulnet_fault_del(p.a, ULNET_FAULT_DROP, NULL, NULL), 1);
	assert_int_equal(ulnet_fault_list(p.a, ULNET_FAULT_DROP, 0, &r, NULL), -ENOENT);
	pair_down(&p);
}

/* rate 2 on B: one of each pair is lost on arrival (the first of the
 * first pair). A's PUTs with ACKs: the lost ones get no ACK, and end when
 * their ACK is overdue. */
static void test_drop_rate_on_receive(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx[4] = { 0 };
	struct ulnet_fault_stats st;
	struct ulnet_counters c;

	pair_up(&p);
	sink(p.b, &rx);
	r.rate = 2;
	r.msg_mask = ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT);
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);
	for (int i = 0; i < 4; i++) {
		put_to(&p, (uint64_t)i, ULNET_ACK_REQ, &tx[i]);
		settle(&p);
	}
	/* the first of the first pair (the kernel's rule for rate 2), then
	 * one at random in each pair */
	assert_int_equal(rx.n, 2);
	assert_int_equal(rx.bits[0], 1);
	assert_true(rx.bits[1] == 2 || rx.bits[1] == 3);
	st = stats(p.b, ULNET_FAULT_DROP, 0);
	assert_int_equal(st.count, 4);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.put, 2);
	ulnet_counters_get(p.b, &c);
	assert_int_equal(c.drop_count, 2);
	assert_int_equal(tx[0].nack + tx[1].nack + tx[2].nack + tx[3].nack, 2);
	assert_int_equal(tx[0].nack, 0);
	/* the lost PUTs' ACKs are overdue past transaction_timeout */
	fake_now += 200 * SEC;
	ulnet_progress(p.a, 0);
	assert_int_equal(tx[0].nerr + tx[1].nerr + tx[2].nerr + tx[3].nerr, 2);
	assert_int_equal(tx[0].nerr, 1);
	/* reset: figures back to 0, the rule stays */
	ulnet_fault_reset(p.b, ULNET_FAULT_DROP);
	st = stats(p.b, ULNET_FAULT_DROP, 0);
	assert_int_equal(st.count + st.dropped + st.put, 0);
	pair_down(&p);
}

/* Matching: a rule for another source, or another portal, drops
 * nothing; the all-ones address on gni matches A; drop_all drops every
 * one. */
static void test_drop_matching(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx = { 0 };

	pair_up(&p);
	sink(p.b, &rx);
	assert_int_equal(ulnet_nid_parse("9@gni", &r.src, NULL), 0);
	r.drop_all = true;
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);
	r = any_rule();
	r.drop_all = true;
	r.portal_mask = 1ULL << (PORTAL + 1);
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);
	put_to(&p, 1, ULNET_NOACK_REQ, &tx);
	settle(&p);
	assert_int_equal(rx.n, 1);
	r = any_rule();
	/* (gni addresses are numbers: 255.255.255.255 is 4294967295) */
	assert_int_equal(ulnet_nid_parse("4294967295@gni", &r.src, NULL), 0);
	r.drop_all = true;
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);
	for (int i = 0; i < 3; i++) {
		put_to(&p, 2, ULNET_NOACK_REQ, &tx);
		settle(&p);
	}
	assert_int_equal(rx.n, 1);
	assert_int_equal(stats(p.b, ULNET_FAULT_DROP, 0).dropped, 3);   /* newest first */
	assert_int_equal(stats(p.b, ULNET_FAULT_DROP, 1).dropped, 0);
	assert_int_equal(stats(p.b, ULNET_FAULT_DROP, 2).dropped, 0);
	/* deleted by source: the wildcard rule goes, the others stay */
	assert_int_equal(ulnet_fault_del(p.b, ULNET_FAULT_DROP, &r.src, NULL), 1);
	put_to(&p, 3, ULNET_NOACK_REQ, &tx);
	settle(&p);
	assert_int_equal(rx.n, 2);
	pair_down(&p);
}

/* Which of 64 PUTs a rate-5 rule drops, with this seed. */
static uint64_t dropped_set(uint64_t seed)
{
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx = { 0 };
	uint64_t got = 0;

	pair_up(&p);
	sink(p.b, &rx);
	r.rate = 5;
	r.seed = seed;
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);
	for (int i = 0; i < NPUT; i++) {
		put_to(&p, (uint64_t)i, ULNET_NOACK_REQ, &tx);
		settle(&p);
	}
	for (int i = 0; i < rx.n; i++)
		got |= 1ULL << rx.bits[i];
	pair_down(&p);
	return ~got;
}

/* Beyond the kernel: the same seed drops the same messages; another seed
 * other ones. One in five of each run of five is dropped either way. */
static void test_seed_reproducible(void **state)
{
	(void)state;
	uint64_t a = dropped_set(42), b = dropped_set(42), c = dropped_set(7);

	assert_true(a == b);
	assert_true(a != c);
	assert_true(__builtin_popcountll(a) >= 12 && __builtin_popcountll(a) <= 13);
	for (int run = 0; run < 12; run++)
		assert_int_equal(__builtin_popcountll((a >> (5 * run)) & 0x1f), 1);
}

/* interval 10 s: one drop at a random time in each 10 s window. */
static void test_drop_interval(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx = { 0 };

	pair_up(&p);
	sink(p.b, &rx);
	r.interval = 10;
	r.seed = 1;
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);
	/* one PUT a second for 30 s: three windows, three drops */
	for (int i = 0; i < 30; i++) {
		put_to(&p, (uint64_t)i, ULNET_NOACK_REQ, &tx);
		settle(&p);
		fake_now += SEC;
	}
	assert_int_equal(stats(p.b, ULNET_FAULT_DROP, 0).dropped, 3);
	assert_int_equal(rx.n, 27);
	pair_down(&p);
}

/* A health error on the send path: the send fails as an LND's would
 * (remote dropped: -ECONNRESET), the PUT's MD gets the error, and it
 * counts as a remote drop (a one-NI peer's health stays, as the kernel's);
 * the next PUT goes. Nothing is dropped on
 * receive by such a rule. */
static void test_drop_health_error(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx[2] = { 0 };
	struct ulnet_counters c;

	pair_up(&p);
	sink(p.b, &rx);
	r.rate = 2;
	r.health_error_mask = ULNET_HSTATUS_BIT(ULNET_HSTATUS_REMOTE_DROPPED);
	r.msg_mask = ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT);
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), 0);
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DROP, &r), 0);   /* receive: inert */
	put_to(&p, 1, ULNET_NOACK_REQ, &tx[0]);
	settle(&p);
	assert_int_equal(tx[0].nerr, 1);
	assert_int_equal(tx[0].status, -ECONNRESET);
	assert_int_equal(rx.n, 0);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.remote_dropped_count, 1);
	put_to(&p, 2, ULNET_NOACK_REQ, &tx[1]);
	settle(&p);
	assert_int_equal(tx[1].nerr, 0);
	assert_int_equal(rx.n, 1);
	assert_int_equal(stats(p.a, ULNET_FAULT_DROP, 0).dropped, 1);
	assert_int_equal(stats(p.b, ULNET_FAULT_DROP, 0).dropped, 0);
	pair_down(&p);
}

/* Delay on receive (a rule on B) and on send (a rule on A): the held PUT
 * arrives only after its latency; one that is not held passes it; the
 * held ones leave in the order they came. */
static void test_delay(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx[6] = { 0 };

	pair_up(&p);
	sink(p.b, &rx);
	r.rate = 2;
	r.latency = 5;
	r.msg_mask = ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT);
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DELAY, &r), 0);
	put_to(&p, 10, ULNET_ACK_REQ, &tx[0]);   /* held at B */
	put_to(&p, 11, ULNET_ACK_REQ, &tx[1]);
	settle(&p);
	assert_int_equal(rx.n, 1);
	assert_int_equal(rx.bits[0], 11);
	fake_now += 4 * SEC;
	settle(&p);
	assert_int_equal(rx.n, 1);
	fake_now += 2 * SEC;
	settle(&p);
	assert_int_equal(rx.n, 2);
	assert_int_equal(rx.bits[1], 10);
	assert_int_equal(tx[0].nack, 1);   /* its ACK comes, late */
	assert_int_equal(stats(p.b, ULNET_FAULT_DELAY, 0).delayed, 1);
	assert_int_equal(ulnet_fault_del(p.b, ULNET_FAULT_DELAY, NULL, NULL), 1);

	/* on A's send path, drop_all-like: every PUT (rate 1) held 3 s */
	r.rate = 1;
	r.latency = 3;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DELAY, &r), 0);
	put_to(&p, 20, ULNET_ACK_REQ, &tx[2]);
	put_to(&p, 21, ULNET_ACK_REQ, &tx[3]);
	settle(&p);
	assert_int_equal(rx.n, 2);
	fake_now += 3 * SEC;
	settle(&p);
	assert_int_equal(rx.n, 4);
	assert_int_equal(rx.bits[2], 20);
	assert_int_equal(rx.bits[3], 21);
	/* deleting the rule lets what it holds go at once */
	put_to(&p, 22, ULNET_ACK_REQ, &tx[4]);
	settle(&p);
	assert_int_equal(rx.n, 4);
	assert_int_equal(ulnet_fault_del(p.a, ULNET_FAULT_DELAY, &r.src, &r.dst), 1);
	settle(&p);
	assert_int_equal(rx.n, 5);
	assert_int_equal(tx[4].nack, 1);
	pair_down(&p);
}

/* Messages a delay rule holds when the node stops end (-ECANCELED at the
 * sender's MD), nothing leaks. */
static void test_delay_held_at_shutdown(void **state)
{
	(void)state;
	struct node2 p;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx = { 0 };

	pair_up(&p);
	sink(p.b, &rx);
	r.rate = 1;
	r.latency = 100;
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DELAY, &r), 0);
	assert_int_equal(ulnet_fault_add(p.b, ULNET_FAULT_DELAY, &r), 0);
	put_to(&p, 1, ULNET_NOACK_REQ, &tx);
	settle(&p);
	assert_int_equal(tx.nsend, 0);
	ulnet_destroy(p.a);
	assert_int_equal(tx.nerr, 1);
	assert_int_equal(tx.status, -ECANCELED);
	p.a = mk();   /* for pair_down */
	pair_down(&p);
}

/* PUTs to B in the trace that left from our NI `from`. */
static int puts_from(struct memlnd_net *net, const ulnet_nid_t *from)
{
	static struct memlnd_trace_ent tr[128];
	int n = memlnd_trace(net, tr, 128), k = 0;

	for (int i = 0; i < n && i < 128; i++)
		if (tr[i].hdr.type == ULNET_MSG_PUT && tr[i].hdr.msg.put.ptl_index == PORTAL &&
		    ulnet_nid_same(&tr[i].hdr.src_nid, from))
			k++;
	return k;
}

static int ni_health(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct ulnet_ni_info info;

	for (int i = 0; ulnet_ni_info(ln, i, &info) == 0; i++)
		if (ulnet_nid_same(&info.nid, nid))
			return info.health.health_value;
	return -1;
}

/* Local NI health: A has two NIs on B's net and B is Multi-Rail, so A's
 * PUTs use both; one NI made less healthy carries none; a
 * local send failure (a health error rule: local_error) lowers that NI's
 * health by health_sensitivity, and the traffic moves to the other. */
static void test_local_ni_health(void **state)
{
	(void)state;
	struct node2 p;
	ulnet_nid_t na2;
	struct ulnet_fault_rule r = any_rule();
	struct rxlog rx = { 0 };
	struct txlog tx[12] = { 0 };
	struct ulnet_globals g;
	int errs = 0;

	pair_up(&p);
	assert_int_equal(memlnd_add_ni(p.net, p.a, 3, &na2), 0);
	for (int i = 0; i < 2; i++) {
		ulnet_t *ln = i ? p.b : p.a;

		ulnet_globals_get(ln, &g);
		g.discovery = 1;
		assert_int_equal(ulnet_globals_set(ln, &g), 0);
	}
	sink(p.b, &rx);
	put_to(&p, 0, ULNET_NOACK_REQ, &tx[0]);   /* discovery first */
	settle(&p);
	assert_int_equal(rx.n, 1);
	memlnd_trace_clear(p.net);
	for (int i = 1; i <= 4; i++) {
		put_to(&p, (uint64_t)i, ULNET_NOACK_REQ, &tx[i]);
		settle(&p);
	}
	/* both carry traffic (credits, then round robin) */
	assert_true(puts_from(p.net, &p.na) >= 1 && puts_from(p.net, &na2) >= 1);
	assert_int_equal(puts_from(p.net, &p.na) + puts_from(p.net, &na2), 4);

	assert_int_equal(ulnet_ni_set_health(p.a, &p.na, 500), 0);
	memlnd_trace_clear(p.net);
	for (int i = 5; i <= 8; i++) {
		put_to(&p, (uint64_t)i, ULNET_NOACK_REQ, &tx[i]);
		settle(&p);
	}
	assert_int_equal(puts_from(p.net, &p.na), 0);
	assert_int_equal(puts_from(p.net, &na2), 4);

	/* both healthy again; sends from .1 fail locally */
	assert_int_equal(ulnet_ni_set_health(p.a, &p.na, 1000), 0);
	r.src = p.na;
	r.rate = 1;
	r.health_error_mask = ULNET_HSTATUS_BIT(ULNET_HSTATUS_LOCAL_ERROR);
	assert_int_equal(ulnet_fault_add(p.a, ULNET_FAULT_DROP, &r), 0);
	memlnd_trace_clear(p.net);
	for (int i = 9; i <= 11; i++) {
		put_to(&p, (uint64_t)i, ULNET_NOACK_REQ, &tx[i]);
		settle(&p);
		errs += tx[i].nerr;
	}
	assert_int_equal(errs, 1);
	assert_int_equal(ni_health(p.a, &p.na), 900);
	assert_int_equal(ni_health(p.a, &na2), 1000);
	assert_int_equal(rx.n, 1 + 4 + 4 + 2);
	pair_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_checks),
		cmocka_unit_test(test_drop_rate_on_receive),
		cmocka_unit_test(test_drop_matching),
		cmocka_unit_test(test_seed_reproducible),
		cmocka_unit_test(test_drop_interval),
		cmocka_unit_test(test_drop_health_error),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_delay_held_at_shutdown),
		cmocka_unit_test(test_local_ni_health),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
