/* SPDX-License-Identifier: MIT */
/*
 * test_failmodel.c - LNet's failure model, end to end over socklnd: every
 * PUT and GET ends with exactly one terminal event within
 * transaction_timeout plus a small slack (docs/core.md "Every operation
 * ends"), whatever the fault rules do to its messages, and afterwards the
 * nodes are idle (no message, no response tracker, no MD left, every
 * credit back) and serve a fresh PUT and GET.
 *
 * Two nodes in this process, A (127.0.15.1) and B (127.0.15.2), on one
 * high port; transaction_timeout 2 s (retry_count 1) on both. The
 * operations are A's: PUTs with an ACK and GETs of 4 KiB on B's portal
 * target, 20 at a time, each on an MD of threshold 2 that only LNet ends
 * (tests/support/failmodel.h). The killed, stopped and restarted peer
 * (a separate process) is test_socklnd_peer_death's.
 *
 *  - drop rules, at rates 1/2 and 1/10, placed where the kernel applies
 *    one that simulates loss (on arrival): PUT and GET at B, ACK and REPLY
 *    at A. Each operation whose message was dropped ends by the response
 *    tracker (-ETIMEDOUT, at transaction_timeout), the others succeed;
 *    the number failed is the rule's `dropped` figure, exactly N/rate;
 *  - drop rules with a health error (REMOTE_DROPPED), which act on the
 *    sending node's send path: PUT and GET at A, ACK and REPLY at B; a
 *    failed request's SEND event says so, and every failed operation
 *    still ends once, by the tracker;
 *  - delay rules holding every PUT, GET, ACK or REPLY on arrival for
 *    longer than transaction_timeout: every operation ends by timeout,
 *    and the late messages, let go afterwards, cause no second event (a
 *    late ACK or REPLY finds no MD and is dropped); a delay on A's send
 *    path holds the MD until the rule lets the PUT go;
 *  - a local NI taken unhealthy (ulnet_ni_set_health 0) on a node with two
 *    NIs, mid-stream: the traffic moves to the other NI, every operation
 *    succeeds;
 *  - `ulnetctl discover` of a peer whose ping REPLY is lost ends with its
 *    discovery, and the next discover starts afresh;
 *  - the drop and delay scenarios again with A and B on two nets and the
 *    rules on the router R between them (127.0.15.21@tcp -> R
 *    127.0.15.22@tcp / 127.0.15.23@tcp1 -> 127.0.15.24@tcp1), where the
 *    kernel applies them to forwarded messages as they arrive (a delay
 *    rule holds one a second time as R sends it on); R must be
 *    idle afterwards too, every router buffer back in its pool (root:
 *    routed headers need privileged ports, see test_socklnd_routing);
 *  - skipped, a known divergence: a response timeout should lower the
 *    peer NI's health, as the kernel's.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ctl_test.h"
#include "failmodel.h"
#include "socklnd_util.h"
#include "ulnet/fault.h"
#include "ulnet/routing.h"

#define PORTAL 42
#define MB 0xfa11
#define OPSIZE 4096
#define NOPS 20
#define TT_S 2                       /* transaction_timeout */
#define LATENCY_S (TT_S + 1)         /* a delay longer than it */
/* the slack beyond transaction_timeout an operation may take to end here:
 * the tracker's timer runs at its deadline; the rest is scheduling on a
 * loaded machine (sanitizers, 2 CPUs) */
#define SLACK_MS 1000
#define END_BOUND_MS (TT_S * 1000 + SLACK_MS)

#define A_NID "127.0.15.1@tcp"
#define B_NID "127.0.15.2@tcp"
#define A2_NID "127.0.15.3@tcp"
#define B2_NID "127.0.15.4@tcp"
/* routed: A on tcp, B on tcp1, R between */
#define RA_NID "127.0.15.21@tcp"
#define R0_NID "127.0.15.22@tcp"
#define R1_NID "127.0.15.23@tcp1"
#define RB_NID "127.0.15.24@tcp1"

static struct {
	struct st_node a, b, r;
	struct st_md bm;               /* B's target */
	uint8_t bbuf[OPSIZE];
	int a_mds, b_mds, r_mds;       /* MDs each holds when idle */
	uint16_t port;
	bool up;                       /* nodes_up() ran: teardown has work */
	bool routed;                   /* A and B on two nets, R between */
} T;

static void tweak(struct ulnet_ni_conf *c)
{
	c->sock.sock_timeout = 10;
	c->sock.min_reconnectms = 200;
	c->sock.max_reconnectms = 1000;
}

/* A response timeout lowers the peer NI's health and recovery pings it:
 * messages the rules here would count too; not within a test. Set before
 * any traffic, so that no recovery timer runs on the default interval. */
static void no_recovery_pings(ulnet_t *ln)
{
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.recovery_interval = 600;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
}

static void short_timeouts(ulnet_t *ln)
{
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.retry_count = 1;
	g.transaction_timeout = TT_S;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
}

static ulnet_nid_t nid_of(const char *s)
{
	ulnet_nid_t n;

	assert_int_equal(ulnet_nid_parse(s, &n, NULL), 0);
	return n;
}

static void add_ni(struct st_node *n, const char *nid)
{
	struct ulnet_ni_conf c = { 0 };

	c.nid = nid_of(nid);
	c.accept_port = T.port;
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "all");
	tweak(&c);
	assert_int_equal(ulnet_ni_add(n->ln, &c), 0);
}

/* A and B up (each with a second NI when `two`), A has discovered B, one
 * PUT and GET went through; the MD counts of the idle nodes noted. */
static void nodes_up(bool two)
{
	memset(&T, 0, sizeof(T));
	T.port = st_port();
	T.up = true;
	st_md_init(&T.bm);
	assert_int_equal(st_node_start_conf(&T.a, A_NID, T.port, "all", NULL, NULL, 0, tweak), 0);
	assert_int_equal(st_node_start_conf(&T.b, B_NID, T.port, "all", NULL, NULL, 0, tweak), 0);
	if (two) {
		add_ni(&T.a, A2_NID);
		add_ni(&T.b, B2_NID);
	}
	no_recovery_pings(T.a.ln);
	no_recovery_pings(T.b.ln);
	assert_int_equal(st_target(&T.b, PORTAL, MB, T.bbuf, sizeof(T.bbuf), &T.bm), 0);
	/* A's discovery of B, with the first PUT: under the default
	 * transaction timeout, or on a loaded host its ping could time out
	 * and the late REPLY be dropped within a scenario, one drop more than
	 * the scenario's own */
	fm_assert_put_get_ok(T.a.ln, T.b.nid, PORTAL, MB, ST_WAIT_MS);
	short_timeouts(T.a.ln);
	short_timeouts(T.b.ln);
	T.a_mds = fm_md_count(T.a.ln);
	T.b_mds = fm_md_count(T.b.ln);
}

static void route_add(ulnet_t *ln, const char *net, const char *gw)
{
	struct ulnet_route_conf rc = { .hops = ULNET_ROUTE_HOPS_UNSET };

	assert_int_equal(ulnet_net_parse(net, &rc.net, NULL), 0);
	rc.gateway = nid_of(gw);
	assert_int_equal(ulnet_route_add(ln, &rc), 0);
}

/* A (tcp) and B (tcp1) with the router R between, forwarding at once;
 * false (the test skipped) without privileged ports. */
static bool nodes_up_routed(void)
{
	if (!st_is_privileged()) {
		fprintf(stderr, "skipped: needs root (privileged ports): routing between "
				"user-space peers cannot keep end-to-end NIDs\n");
		skip();
		return false;
	}
	memset(&T, 0, sizeof(T));
	T.port = st_port();
	T.up = true;
	T.routed = true;
	st_md_init(&T.bm);
	assert_int_equal(st_node_start_conf(&T.a, RA_NID, T.port, "all", NULL, NULL, 0, tweak), 0);
	assert_int_equal(st_node_start_conf(&T.r, R0_NID, T.port, "all", NULL, NULL, 0, tweak), 0);
	add_ni(&T.r, R1_NID);
	assert_int_equal(st_node_start_conf(&T.b, RB_NID, T.port, "all", NULL, NULL, 0, tweak), 0);
	no_recovery_pings(T.a.ln);
	no_recovery_pings(T.r.ln);
	no_recovery_pings(T.b.ln);
	route_add(T.a.ln, "tcp1", R0_NID);
	route_add(T.b.ln, "tcp", R1_NID);
	assert_int_equal(ulnet_routing_enable_now(T.r.ln), 0);
	assert_int_equal(st_target(&T.b, PORTAL, MB, T.bbuf, sizeof(T.bbuf), &T.bm), 0);
	/* discovery under the default timeout (nodes_up()) */
	fm_assert_put_get_ok(T.a.ln, T.b.nid, PORTAL, MB, ST_WAIT_MS);
	short_timeouts(T.a.ln);
	short_timeouts(T.r.ln);
	short_timeouts(T.b.ln);
	T.a_mds = fm_md_count(T.a.ln);
	T.b_mds = fm_md_count(T.b.ln);
	T.r_mds = fm_md_count(T.r.ln);
	return true;
}

static int teardown(void **state)
{
	(void)state;
	if (!T.up)
		return 0;
	T.up = false;
	st_md_release(&T.b, &T.bm);
	st_node_stop(&T.a);
	st_node_stop(&T.b);
	if (T.routed)
		st_node_stop(&T.r);
	st_md_fini(&T.bm);
	return 0;
}

static void assert_all_idle(void)
{
	fm_assert_idle(T.a.ln, T.a_mds);
	fm_assert_idle(T.b.ln, T.b_mds);
	if (T.routed)
		fm_assert_idle(T.r.ln, T.r_mds);
}

/* After a scenario: the nodes idle, and they serve new traffic. */
static void assert_recovered(void)
{
	assert_all_idle();
	fm_assert_put_get_ok(T.a.ln, T.b.nid, PORTAL, MB, ST_WAIT_MS);
	assert_all_idle();
}

static const char *const type_name[] = { "ACK", "PUT", "GET", "REPLY" };

/* A rule about `type` from the sender of such a message to its receiver
 * (requests A -> B, on our portal; responses B -> A), to be added on the
 * node returned: the receiver, where the kernel drops or holds a message
 * as it arrives. */
static struct st_node *rule_for(int type, struct ulnet_fault_rule *r)
{
	bool req = type == ULNET_MSG_PUT || type == ULNET_MSG_GET;

	memset(r, 0, sizeof(*r));
	r->src = req ? T.a.nid : T.b.nid;
	r->dst = req ? T.b.nid : T.a.nid;
	r->local = ULNET_NID_ANY;
	r->msg_mask = ULNET_FAULT_MSG_BIT(type);
	if (req)
		r->portal_mask = 1ULL << PORTAL;
	r->seed = 0x1500 + (uint64_t)type;
	if (T.routed)   /* forwarded: where it arrives first */
		return &T.r;
	return req ? &T.b : &T.a;
}

/* the operations a rule on `type` acts on: PUTs for PUT and ACK */
static bool ops_are_gets(int type)
{
	return type == ULNET_MSG_GET || type == ULNET_MSG_REPLY;
}

static uint64_t stat_of(const struct ulnet_fault_stats *st, int type)
{
	switch (type) {
	case ULNET_MSG_PUT:
		return st->put;
	case ULNET_MSG_GET:
		return st->get;
	case ULNET_MSG_ACK:
		return st->ack;
	default:
		return st->reply;
	}
}

/* --- drop rules ------------------------------------------------------------------ */

static void drop_case(int type, uint32_t rate)
{
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	struct ulnet_counters ca0, ca1, cn0, cn1;
	struct st_node *at = rule_for(type, &r);
	struct fm_result res;
	struct fm_ops s;

	r.rate = rate;
	ulnet_counters_get(T.a.ln, &ca0);
	ulnet_counters_get(at->ln, &cn0);
	assert_int_equal(ulnet_fault_add(at->ln, ULNET_FAULT_DROP, &r), 0);
	fm_init(&s, T.a.ln, NOPS, OPSIZE);
	for (int i = 0; i < NOPS; i++)
		fm_issue(&s, ops_are_gets(type), NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	fm_check_ended(&s, &res);
	assert_int_equal(ulnet_fault_list(at->ln, ULNET_FAULT_DROP, 0, NULL, &st), 0);
	ulnet_counters_get(T.a.ln, &ca1);
	ulnet_counters_get(at->ln, &cn1);
	fprintf(stderr,
		"drop %-5s 1/%-2u: %d ops, %d ok, %d failed (rule: %llu matched, %llu dropped); "
		"the failed ones ended %ld..%ld ms after their issue (transaction_timeout %d ms)\n",
		type_name[type], rate, s.n, res.ok, res.failed, (unsigned long long)st.count,
		(unsigned long long)st.dropped, res.min_failed_ms, res.max_failed_ms, TT_S * 1000);
	/* the rule saw each operation's message once and dropped 1 in rate */
	assert_int_equal(st.count, NOPS);
	assert_int_equal(st.dropped, NOPS / rate);
	assert_int_equal(stat_of(&st, type), st.dropped);
	/* an operation failed for each message dropped, no other */
	assert_int_equal(res.failed, (int)st.dropped);
	assert_int_equal(res.ok, NOPS - res.failed);
	/* ended by the response tracker: -ETIMEDOUT, at transaction_timeout */
	assert_int_equal(res.timedout, res.failed);
	assert_true(res.min_failed_ms >= TT_S * 1000 - 20);
	assert_true(res.max_failed_ms <= END_BOUND_MS);
	assert_int_equal(ca1.response_timeout_count - ca0.response_timeout_count, res.failed);
	/* counted as dropped where they were dropped */
	assert_int_equal(cn1.drop_count - cn0.drop_count, st.dropped);
	assert_int_equal(ulnet_fault_del(at->ln, ULNET_FAULT_DROP, NULL, NULL), 1);
	fm_fini(&s);
	assert_recovered();
}

static void test_drop_put(void **state)
{
	(void)state;
	nodes_up(false);
	drop_case(ULNET_MSG_PUT, 2);
	drop_case(ULNET_MSG_PUT, 10);
}

static void test_drop_get(void **state)
{
	(void)state;
	nodes_up(false);
	drop_case(ULNET_MSG_GET, 2);
	drop_case(ULNET_MSG_GET, 10);
}

static void test_drop_ack(void **state)
{
	(void)state;
	nodes_up(false);
	drop_case(ULNET_MSG_ACK, 2);
	drop_case(ULNET_MSG_ACK, 10);
}

static void test_drop_reply(void **state)
{
	(void)state;
	nodes_up(false);
	drop_case(ULNET_MSG_REPLY, 2);
	drop_case(ULNET_MSG_REPLY, 10);
}

/* A drop rule with a health error acts on the sending node's send path, as
 * the kernel's: the sender's LND "fails" the message (here
 * REMOTE_DROPPED, -ECONNRESET: B has one NI, so nothing is resent). A
 * failed request's SEND event says so and its MD waits for the tracker; a
 * failed response leaves its request unanswered: either way the
 * operation ends at transaction_timeout, -ETIMEDOUT. */
static void drop_on_send_case(int type, uint32_t rate)
{
	bool req = type == ULNET_MSG_PUT || type == ULNET_MSG_GET;
	struct st_node *at = req ? &T.a : &T.b;
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	struct ulnet_counters ca0, ca1;
	struct fm_result res;
	struct fm_ops s;
	int send_failed = 0;

	rule_for(type, &r);
	r.rate = rate;
	r.health_error_mask = ULNET_HSTATUS_BIT(ULNET_HSTATUS_REMOTE_DROPPED);
	ulnet_counters_get(T.a.ln, &ca0);
	assert_int_equal(ulnet_fault_add(at->ln, ULNET_FAULT_DROP, &r), 0);
	fm_init(&s, T.a.ln, NOPS, OPSIZE);
	for (int i = 0; i < NOPS; i++)
		fm_issue(&s, ops_are_gets(type), NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	fm_check_ended(&s, &res);
	assert_int_equal(ulnet_fault_list(at->ln, ULNET_FAULT_DROP, 0, NULL, &st), 0);
	ulnet_counters_get(T.a.ln, &ca1);
	pthread_mutex_lock(&s.mu);
	for (int i = 0; i < s.n; i++)
		send_failed += s.op[i]->ev[ULNET_EVENT_SEND] && s.op[i]->send_status != 0;
	pthread_mutex_unlock(&s.mu);
	fprintf(stderr,
		"drop on send %-5s 1/%-2u: %d ops, %d ok, %d failed (%d of them a failed SEND; "
		"rule: %llu matched, %llu dropped); the failed ones ended %ld..%ld ms after "
		"their issue\n",
		type_name[type], rate, s.n, res.ok, res.failed, send_failed,
		(unsigned long long)st.count, (unsigned long long)st.dropped, res.min_failed_ms,
		res.max_failed_ms);
	assert_int_equal(st.count, NOPS);
	assert_int_equal(st.dropped, NOPS / rate);
	assert_int_equal(stat_of(&st, type), st.dropped);
	assert_int_equal(res.failed, (int)st.dropped);
	assert_int_equal(res.timedout, res.failed);
	assert_true(res.min_failed_ms >= TT_S * 1000 - 20);
	assert_true(res.max_failed_ms <= END_BOUND_MS);
	assert_int_equal(ca1.response_timeout_count - ca0.response_timeout_count, res.failed);
	/* a failed request shows on its SEND event, a failed response not */
	assert_int_equal(send_failed, req ? res.failed : 0);
	assert_int_equal(ulnet_fault_del(at->ln, ULNET_FAULT_DROP, NULL, NULL), 1);
	fm_fini(&s);
	assert_recovered();
}

static void test_drop_on_send(void **state)
{
	(void)state;
	nodes_up(false);
	drop_on_send_case(ULNET_MSG_PUT, 2);
	drop_on_send_case(ULNET_MSG_GET, 2);
	drop_on_send_case(ULNET_MSG_ACK, 2);
	drop_on_send_case(ULNET_MSG_REPLY, 2);
}

/* --- delay rules ----------------------------------------------------------------- */

/* Operations in a delay scenario: a message held on arrival holds its
 * connection (the LND reads nothing more from it until the message is let
 * go, as the kernel's), so the held ones leave one latency apart. */
#define NDELAY 2

/* Every message of `type` held on arrival for LATENCY_S > transaction_timeout. */
static void delay_case(int type)
{
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	struct ulnet_counters ca0, ca1;
	struct st_node *at = rule_for(type, &r);
	struct fm_result res;
	struct fm_ops s;
	int bput0, bget0, holds = T.routed ? 2 : 1;
	uint64_t t0;

	r.rate = 1;
	r.latency = LATENCY_S;
	pthread_mutex_lock(&T.bm.mu);
	bput0 = T.bm.n[ULNET_EVENT_PUT];
	bget0 = T.bm.n[ULNET_EVENT_GET];
	pthread_mutex_unlock(&T.bm.mu);
	ulnet_counters_get(T.a.ln, &ca0);
	assert_int_equal(ulnet_fault_add(at->ln, ULNET_FAULT_DELAY, &r), 0);
	fm_init(&s, T.a.ln, NDELAY, OPSIZE);
	t0 = st_now_ms();
	for (int i = 0; i < NDELAY; i++)
		fm_issue(&s, ops_are_gets(type), NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	fm_check_ended(&s, &res);
	fprintf(stderr,
		"delay %-5s %d s: %d ops, %d failed, ended %ld..%ld ms after their issue "
		"(transaction_timeout %d ms)\n",
		type_name[type], LATENCY_S, s.n, res.failed, res.min_failed_ms, res.max_failed_ms,
		TT_S * 1000);
	/* all by the response tracker, before the first held message went */
	assert_int_equal(res.failed, NDELAY);
	assert_int_equal(res.timedout, NDELAY);
	assert_true(res.min_failed_ms >= TT_S * 1000 - 20);
	assert_true(st_now_ms() - t0 < LATENCY_S * 1000);
	/* the held messages go on late, one after the other (the second is
	 * read only once the first went on): once the last is held, the
	 * nodes are idle when it went. A router holds a forwarded message
	 * twice, as the kernel's: as it arrives (lnet_parse) and as it is
	 * sent on (lnet_post_send_locked) */
	for (uint64_t end = st_now_ms() + (uint64_t)(NDELAY * holds + 2) * LATENCY_S * 1000;;) {
		assert_int_equal(ulnet_fault_list(at->ln, ULNET_FAULT_DELAY, 0, NULL, &st), 0);
		if (st.delayed >= (uint64_t)(NDELAY * holds) || st_now_ms() > end)
			break;
		usleep(20000);
	}
	assert_int_equal(st.delayed, NDELAY * holds);
	assert_int_equal(stat_of(&st, type), NDELAY * holds);
	/* the late requests reach B's MD: through R, a moment after R let
	 * the last one go (bounded wait) */
	if (type == ULNET_MSG_PUT || type == ULNET_MSG_ACK)
		(void)st_md_wait(&T.bm, ULNET_EVENT_PUT, bput0 + NDELAY);
	else
		(void)st_md_wait(&T.bm, ULNET_EVENT_GET, bget0 + NDELAY);
	assert_all_idle();
	/* the late requests reached B's MD; the responses that came late to
	 * A found no MD there and were dropped */
	pthread_mutex_lock(&T.bm.mu);
	bput0 = T.bm.n[ULNET_EVENT_PUT] - bput0;
	bget0 = T.bm.n[ULNET_EVENT_GET] - bget0;
	pthread_mutex_unlock(&T.bm.mu);
	if (type == ULNET_MSG_PUT || type == ULNET_MSG_ACK)
		assert_int_equal(bput0, NDELAY);
	else
		assert_int_equal(bget0, NDELAY);
	/* the last late response may still be on its way to A (bounded) */
	for (uint64_t end = st_now_ms() + ST_WAIT_MS;; usleep(20000)) {
		ulnet_counters_get(T.a.ln, &ca1);
		if (ca1.drop_count - ca0.drop_count >= NDELAY || st_now_ms() > end)
			break;
	}
	if (ca1.drop_count - ca0.drop_count != NDELAY)   /* what it dropped, for the reader */
		st_log_dump(&T.a, "A");
	assert_int_equal(ca1.drop_count - ca0.drop_count, NDELAY);
	assert_int_equal(ca1.response_timeout_count - ca0.response_timeout_count, NDELAY);
	/* and no operation heard of it: still one end each, nothing after */
	fm_check_ended(&s, &res);
	assert_int_equal(res.failed, NDELAY);
	assert_int_equal(ulnet_fault_del(at->ln, ULNET_FAULT_DELAY, NULL, NULL), 1);
	fm_fini(&s);
	assert_recovered();
}

static void test_delay_put(void **state)
{
	(void)state;
	nodes_up(false);
	delay_case(ULNET_MSG_PUT);
}

static void test_delay_get(void **state)
{
	(void)state;
	nodes_up(false);
	delay_case(ULNET_MSG_GET);
}

static void test_delay_ack(void **state)
{
	(void)state;
	nodes_up(false);
	delay_case(ULNET_MSG_ACK);
}

static void test_delay_reply(void **state)
{
	(void)state;
	nodes_up(false);
	delay_case(ULNET_MSG_REPLY);
}

/* A delay rule on A's own PUTs (the send path, after credits): the
 * message holds its MD, so the tracker's unlink at transaction_timeout
 * only marks it; the operation ends when the rule lets the PUT go (its
 * SEND, unlinked, -ETIMEDOUT), at the latency. The PUT still reaches B;
 * its ACK finds no MD. */
static void test_delay_on_send(void **state)
{
	struct ulnet_counters ca0, ca1;
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	struct fm_result res;
	struct fm_ops s;

	(void)state;
	nodes_up(false);
	rule_for(ULNET_MSG_PUT, &r);
	r.rate = 1;
	r.latency = LATENCY_S;
	ulnet_counters_get(T.a.ln, &ca0);
	assert_int_equal(ulnet_fault_add(T.a.ln, ULNET_FAULT_DELAY, &r), 0);
	fm_init(&s, T.a.ln, NDELAY, OPSIZE);
	for (int i = 0; i < NDELAY; i++)
		fm_issue(&s, false, NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, LATENCY_S * 1000 + SLACK_MS));
	fm_check_ended(&s, &res);
	fprintf(stderr,
		"delay on send %d s: %d ops, %d failed, ended %ld..%ld ms after their issue "
		"(transaction_timeout %d ms)\n",
		LATENCY_S, s.n, res.failed, res.min_failed_ms, res.max_failed_ms, TT_S * 1000);
	assert_int_equal(res.failed, NDELAY);
	assert_int_equal(res.timedout, NDELAY);
	assert_true(res.min_failed_ms >= LATENCY_S * 1000 - 20);
	assert_int_equal(ulnet_fault_list(T.a.ln, ULNET_FAULT_DELAY, 0, NULL, &st), 0);
	assert_int_equal(st.delayed, NDELAY);
	/* the PUTs reach B, whose ACKs find no MD at A: dropped there */
	for (uint64_t end = st_now_ms() + ST_WAIT_MS;;) {
		ulnet_counters_get(T.a.ln, &ca1);
		if (ca1.drop_count - ca0.drop_count >= NDELAY || st_now_ms() > end)
			break;
		usleep(20000);
	}
	if (ca1.drop_count - ca0.drop_count != NDELAY)   /* what it dropped, for the reader */
		st_log_dump(&T.a, "A");
	assert_int_equal(ca1.drop_count - ca0.drop_count, NDELAY);
	assert_int_equal(ca1.response_timeout_count - ca0.response_timeout_count, NDELAY);
	fm_assert_idle(T.a.ln, T.a_mds);
	fm_assert_idle(T.b.ln, T.b_mds);
	fm_check_ended(&s, &res);
	assert_int_equal(res.failed, NDELAY);
	assert_int_equal(ulnet_fault_del(T.a.ln, ULNET_FAULT_DELAY, NULL, NULL), 1);
	fm_fini(&s);
	assert_recovered();
}

/* --- a local NI taken unhealthy ---------------------------------------------------- */

static void ni_sends(ulnet_t *ln, const char *nid, uint64_t *puts_gets)
{
	ulnet_nid_t want = nid_of(nid);
	struct ulnet_ni_info ni;

	for (int i = 0; ulnet_ni_info(ln, i, &ni) == 0; i++) {
		if (ulnet_nid_same(&ni.nid, &want)) {
			*puts_gets = ni.sent.n[ULNET_MSG_PUT] + ni.sent.n[ULNET_MSG_GET];
			return;
		}
	}
	fail_msg("no NI %s", nid);
}

/* A and B with two NIs each; A's first NI set to health 0 between two
 * streams of PUTs and GETs: every operation succeeds, and what A sends
 * after leaves on its second NI. */
static void test_local_ni_unhealthy(void **state)
{
	uint64_t a1_0, a2_0, a1_1, a2_1, a1_2, a2_2;
	struct ulnet_peer_info pi;
	struct fm_result res;
	struct fm_ops s;
	ulnet_nid_t a1 = nid_of(A_NID);

	(void)state;
	nodes_up(true);
	/* A knows both of B's NIDs */
	assert_int_equal(ulnet_peer_info(T.a.ln, 0, &pi), 0);
	assert_true(pi.multi_rail);
	assert_int_equal(pi.nnis, 2);
	fm_init(&s, T.a.ln, 3 * NOPS, OPSIZE);
	ni_sends(T.a.ln, A_NID, &a1_0);
	ni_sends(T.a.ln, A2_NID, &a2_0);
	/* a stream on both NIs; then the first goes unhealthy (once the
	 * stream is over: each message that goes well on an NI raises its
	 * health again, as the kernel's lnet_inc_ni_healthv()) */
	for (int i = 0; i < NOPS; i++)
		fm_issue(&s, i % 2, NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	assert_int_equal(ulnet_ni_set_health(T.a.ln, &a1, 0), 0);
	ni_sends(T.a.ln, A_NID, &a1_1);
	ni_sends(T.a.ln, A2_NID, &a2_1);
	for (int i = 0; i < NOPS; i++)
		fm_issue(&s, i % 2, NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	ni_sends(T.a.ln, A_NID, &a1_2);
	ni_sends(T.a.ln, A2_NID, &a2_2);
	fm_check_ended(&s, &res);
	fprintf(stderr,
		"NI %s health 0: %d ops, %d ok; PUT+GET sent before %llu on it, %llu on %s; "
		"after %llu on it, %llu on %s\n",
		A_NID, s.n, res.ok, (unsigned long long)(a1_1 - a1_0),
		(unsigned long long)(a2_1 - a2_0), A2_NID, (unsigned long long)(a1_2 - a1_1),
		(unsigned long long)(a2_2 - a2_1), A2_NID);
	assert_int_equal(res.ok, 2 * NOPS);
	/* the requests issued after it went down left on the other NI */
	assert_int_equal(a1_2 - a1_1, 0);
	assert_true(a2_2 - a2_1 >= NOPS);
	/* and back up: traffic flows, every operation succeeds */
	assert_int_equal(ulnet_ni_set_health(T.a.ln, &a1, ULNET_MAX_HEALTH), 0);
	for (int i = 0; i < NOPS; i++)
		fm_issue(&s, i % 2, NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	fm_check_ended(&s, &res);
	assert_int_equal(res.ok, 3 * NOPS);
	fm_fini(&s);
	assert_recovered();
}

/* --- discovery whose ping REPLY is lost ------------------------------------------- */

/* `ulnetctl discover` (ctl_cmds.c, in-process on A) of a peer whose ping
 * REPLY is lost, with the tool's wait cap below transaction_timeout (as
 * the daemon's 120 s is below the default 150 s): the command ends when
 * the discovery does, by the ping's response tracker at
 * transaction_timeout, with -EIO; a second discover, the REPLY no longer
 * lost, starts afresh and succeeds at once. */
static void test_discover_reply_lost(void **state)
{
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	struct ctl_ctx ctx;
	struct ctl_reply rp;
	uint64_t t0;
	long ms1, ms2;
	int rc1, rc2;

	(void)state;
	nodes_up(false);
	assert_int_equal(ctl_ctx_init(&ctx, NULL, false), 0);
	ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctx.ln = T.a.ln;
	ctx.max_wait_s = TT_S - 1;
	ctl_reply_init(&rp);
	rule_for(ULNET_MSG_REPLY, &r);
	r.rate = 1;
	assert_int_equal(ulnet_fault_add(T.a.ln, ULNET_FAULT_DROP, &r), 0);
	t0 = st_now_ms();
	rc1 = ctl_run_line(&ctx, &rp, NULL, 0, "discover --force " B_NID);
	ms1 = (long)(st_now_ms() - t0);
	assert_int_equal(ulnet_fault_list(T.a.ln, ULNET_FAULT_DROP, 0, NULL, &st), 0);
	assert_int_equal(ulnet_fault_del(T.a.ln, ULNET_FAULT_DROP, NULL, NULL), 1);
	t0 = st_now_ms();
	rc2 = ctl_run_line(&ctx, &rp, NULL, 0, "discover --force " B_NID);
	ms2 = (long)(st_now_ms() - t0);
	fprintf(stderr,
		"discover, ping REPLY lost (%llu dropped): exit %d after %ld ms; again: exit %d "
		"after %ld ms (transaction_timeout %d ms, wait cap %d ms)\n",
		(unsigned long long)st.dropped, rc1, ms1, rc2, ms2, TT_S * 1000,
		ctx.max_wait_s * 1000);
	ctx.ln = NULL;
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
	assert_true(st.dropped >= 1);
	/* failed, once the discovery itself had ended */
	assert_int_not_equal(rc1, 0);
	assert_true(ms1 >= TT_S * 1000 - 20);
	assert_true(ms1 <= END_BOUND_MS);
	/* a fresh discovery, not the failed one's end */
	assert_int_equal(rc2, 0);
	assert_true(ms2 < 1000);
	assert_recovered();
}

/* --- health after a response timeout (known divergence, skipped) -------------------- */

static int peer_ni_health(ulnet_t *ln, ulnet_nid_t nid)
{
	struct ulnet_peer_info pi;

	for (int i = 0; ulnet_peer_info(ln, i, &pi) == 0; i++)
		for (int k = 0; k < pi.nnis; k++)
			if (ulnet_nid_same(&pi.nis[k].nid, &nid))
				return pi.nis[k].health.health_value;
	fail_msg("no peer NI");
	return -1;
}

/* The response tracker, on a timeout, lowers the health of the peer NI
 * the request went to, as the kernel's lnet_finalize_expired_responses()
 * -> lnet_handle_remote_failure_locked() (health_sensitivity off, and the
 * peer NI queued for recovery pings), whatever the peer's NI count: after
 * a PUT whose message was lost, `peer show -v` says less than 1000. */
static void test_response_timeout_lowers_peer_health(void **state)
{
	struct ulnet_fault_rule r;
	struct fm_result res;
	struct fm_ops s;
	int h0, h1;

	(void)state;
	nodes_up(false);
	rule_for(ULNET_MSG_PUT, &r);
	r.drop_all = true;
	assert_int_equal(ulnet_fault_add(T.b.ln, ULNET_FAULT_DROP, &r), 0);
	h0 = peer_ni_health(T.a.ln, T.b.nid);
	fm_init(&s, T.a.ln, 1, OPSIZE);
	fm_issue(&s, false, NULL, T.b.nid, PORTAL, MB);
	assert_true(fm_wait_all(&s, END_BOUND_MS));
	fm_check_ended(&s, &res);
	h1 = peer_ni_health(T.a.ln, T.b.nid);
	fprintf(stderr, "response timeout: peer NI health %d -> %d\n", h0, h1);
	assert_int_equal(res.timedout, 1);
	assert_int_equal(h0, ULNET_MAX_HEALTH);
	assert_true(h1 < h0);
	assert_int_equal(ulnet_fault_del(T.b.ln, ULNET_FAULT_DROP, NULL, NULL), 1);
	fm_fini(&s);
}

/* --- the same rules on a router ----------------------------------------------- */

static void test_router_drop(void **state)
{
	(void)state;
	if (!nodes_up_routed())
		return;
	drop_case(ULNET_MSG_PUT, 2);
	drop_case(ULNET_MSG_GET, 2);
	drop_case(ULNET_MSG_ACK, 2);
	drop_case(ULNET_MSG_REPLY, 10);
}

static void test_router_delay(void **state)
{
	(void)state;
	if (!nodes_up_routed())
		return;
	delay_case(ULNET_MSG_PUT);
	delay_case(ULNET_MSG_REPLY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_drop_put, teardown),
		cmocka_unit_test_teardown(test_drop_get, teardown),
		cmocka_unit_test_teardown(test_drop_ack, teardown),
		cmocka_unit_test_teardown(test_drop_reply, teardown),
		cmocka_unit_test_teardown(test_drop_on_send, teardown),
		cmocka_unit_test_teardown(test_delay_put, teardown),
		cmocka_unit_test_teardown(test_delay_get, teardown),
		cmocka_unit_test_teardown(test_delay_ack, teardown),
		cmocka_unit_test_teardown(test_delay_reply, teardown),
		cmocka_unit_test_teardown(test_delay_on_send, teardown),
		cmocka_unit_test_teardown(test_local_ni_unhealthy, teardown),
		cmocka_unit_test_teardown(test_discover_reply_lost, teardown),
		cmocka_unit_test_teardown(test_response_timeout_lowers_peer_health, teardown),
		cmocka_unit_test_teardown(test_router_drop, teardown),
		cmocka_unit_test_teardown(test_router_delay, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
