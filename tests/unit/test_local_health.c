/* SPDX-License-Identifier: MIT */
/*
 * test_local_health.c - local NI health as the kernel's lnet_health_check(),
 * lnet_handle_local_failure() and lnet_recover_local_nis() have it, on
 * memlnd nodes in one process on the test clock: A has two NIs (1@gni,
 * 3@gni), B one (2@gni), discovery off. Each health class is counted where
 * the kernel counts it and resent only where the kernel resends (local
 * classes when the node has another NI, REMOTE_DROPPED when the peer has
 * another NI, never LOCAL_ERROR, REMOTE_ERROR/TIMEOUT, NETWORK_TIMEOUT);
 * an unhealthy NI is pinged through its own NID until healthy, with the
 * kernel's back-off, through another NI when its own path fails
 * (sanity-lnet 218); health 0 means status down, full health up again.
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
#include "node_info.h"
#include "ulnet/fault.h"

#define PORTAL 44
static const uint64_t SEC = 1000000000ULL;

struct nodes {
	struct memlnd_net *net;
	ulnet_t *a, *b;
	ulnet_nid_t na1, na3, nb;
};

struct rxlog {
	int n;
	uint8_t buf[64];
};

/* The events of one PUT's MD: exactly one SEND, then the ACK or not. */
struct txlog {
	int nsend, nack, nerr, status, nunlinked;
};

static void rx_ev(const struct ulnet_event *ev)
{
	struct rxlog *r = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT && ev->status == 0)
		r->n++;
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
	if (ev->unlinked)
		t->nunlinked++;
}

static void set_discovery(ulnet_t *ln, int on)
{
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.discovery = on;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
}

/* A with one or two NIs, B with one; A's PUTs to B. */
static void nodes_up(struct nodes *p, bool two)
{
	const ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	static struct rxlog rx;
	struct ulnet_md md = { .start = rx.buf, .length = sizeof(rx.buf),
			       .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE,
			       .user_ptr = &rx, .handler = rx_ev };
	ulnet_handle_t meh, mdh;

	memset(p, 0, sizeof(*p));
	memset(&rx, 0, sizeof(rx));
	p->net = memlnd_net_create();
	p->a = mk();
	p->b = mk();
	assert_int_equal(memlnd_add_ni(p->net, p->a, 1, &p->na1), 0);
	if (two)
		assert_int_equal(memlnd_add_ni(p->net, p->a, 3, &p->na3), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->b, 2, &p->nb), 0);
	set_discovery(p->a, 0);
	set_discovery(p->b, 0);
	assert_int_equal(ulnet_me_attach(p->b, PORTAL, any, 0, ~0ULL, ULNET_RETAIN,
					 ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(p->b, meh, &md, ULNET_RETAIN, &mdh), 0);
}

static void nodes_down(struct nodes *p)
{
	ulnet_destroy(p->a);
	ulnet_destroy(p->b);
	memlnd_net_destroy(p->net);
}

static void settle(struct nodes *p)
{
	for (int k = 0; k < 50; k++) {
		int n = memlnd_pump(p->net);

		n += ulnet_progress(p->a, 0) > 0;
		n += ulnet_progress(p->b, 0) > 0;
		if (n == 0 && memlnd_queued(p->net) == 0)
			break;
	}
}

static void tick(struct nodes *p, uint64_t ns)
{
	fake_now += ns;
	settle(p);
}

static uint8_t payload[16];

static void put_ab(struct nodes *p, struct txlog *t)
{
	struct ulnet_md md = { .start = payload, .length = sizeof(payload), .threshold = 2,
			       .user_ptr = t, .handler = tx_ev };
	ulnet_process_id_t to = { .nid = p->nb, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(p->a, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(p->a, NULL, mdh, ULNET_ACK_REQ, to, PORTAL, 0, 0, 0), 0);
}

/* A drop rule on A's send path failing every PUT with health error `hs`. */
static void fail_puts(struct nodes *p, enum ulnet_hstatus hs)
{
	struct ulnet_fault_rule r;

	memset(&r, 0, sizeof(r));
	r.src = p->na1;
	r.dst = ULNET_NID_ANY;
	r.local = ULNET_NID_ANY;
	r.rate = 1;
	r.portal_mask = 1ULL << PORTAL;   /* not discovery's push */
	r.health_error_mask = ULNET_HSTATUS_BIT(hs);
	assert_int_equal(ulnet_fault_add(p->a, ULNET_FAULT_DROP, &r), 0);
}

/* Recovery pings (GETs of the ping portal) in the trace sent to `to`, and
 * of those, how many from `from` (NULL: any). */
static int pings_to(struct memlnd_net *net, const ulnet_nid_t *to, const ulnet_nid_t *from)
{
	static struct memlnd_trace_ent tr[256];
	int n = memlnd_trace(net, tr, 256), k = 0;

	for (int i = 0; i < n && i < 256; i++)
		if (tr[i].hdr.type == ULNET_MSG_GET &&
		    tr[i].hdr.msg.get.ptl_index == ULNET_RESERVED_PORTAL &&
		    ulnet_nid_same(&tr[i].hdr.dest_nid, to) &&
		    (!from || ulnet_nid_same(&tr[i].hdr.src_nid, from)))
			k++;
	return k;
}

/* One PUT whose first send (from 1@gni, A's first choice: equal health,
 * round robin starts there) fails with `hs`: resent from 3@gni when
 * `resent`, else it ends with the error. Either way one SEND event and one
 * terminal outcome. */
static void one_failure(enum ulnet_hstatus hs, bool two, bool resent)
{
	struct nodes p;
	struct txlog t = { 0 };
	struct ulnet_counters c;

	nodes_up(&p, two);
	if (two) {
		/* B known as Multi-Rail (so each send picks our best NI), and
		 * 3@gni less healthy: the first send goes from 1@gni */
		set_discovery(p.a, 1);
		set_discovery(p.b, 1);
		put_ab(&p, &t);
		settle(&p);
		assert_int_equal(t.nack, 1);
		memset(&t, 0, sizeof(t));
		assert_int_equal(ulnet_ni_set_health(p.a, &p.na3, 950), 0);
		ulnet_counters_reset(p.a);
	}
	fail_puts(&p, hs);
	put_ab(&p, &t);
	settle(&p);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(t.nsend, 1);
	if (resent) {
		assert_int_equal(t.nack, 1);
		assert_int_equal(t.nerr, 0);
		assert_int_equal(c.resend_count, 1);
	} else {
		assert_int_equal(t.nack, 0);
		assert_true(t.nerr >= 1);
		assert_int_equal(c.resend_count, 0);
	}
	/* counted in its class, at the node and the NI (local classes) or the
	 * peer NI (remote ones) */
	switch (hs) {
	case ULNET_HSTATUS_LOCAL_DROPPED:
		assert_int_equal(c.local_dropped_count, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.dropped, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.health_value, 900);
		break;
	case ULNET_HSTATUS_LOCAL_TIMEOUT:
		assert_int_equal(c.local_timeout_count, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.timeouts, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.health_value, 900);
		break;
	case ULNET_HSTATUS_LOCAL_ERROR:
		assert_int_equal(c.local_error_count, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.error, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.health_value, 900);
		break;
	case ULNET_HSTATUS_REMOTE_ERROR:
		assert_int_equal(c.remote_error_count, 1);
		assert_int_equal(peer_ni(p.a, &p.nb).health.error, 1);
		/* a single-NI peer's health is left alone; ours is not hit */
		assert_int_equal(peer_ni(p.a, &p.nb).health.health_value, ULNET_MAX_HEALTH);
		assert_int_equal(ni_info(p.a, &p.na1).health.health_value, ULNET_MAX_HEALTH);
		break;
	case ULNET_HSTATUS_NETWORK_TIMEOUT:
		assert_int_equal(c.network_timeout_count, 1);
		assert_int_equal(peer_ni(p.a, &p.nb).health.network_timeout, 1);
		assert_int_equal(ni_info(p.a, &p.na1).health.health_value, 900);
		break;
	default:
		break;
	}
	/* an error ends it at once; its MD goes with the response tracker */
	tick(&p, 201 * SEC);
	assert_int_equal(t.nsend, 1);
	assert_int_equal(t.nunlinked, 1);
	nodes_down(&p);
}

static void test_local_dropped_resent_on_other_ni(void **state)
{
	(void)state;
	one_failure(ULNET_HSTATUS_LOCAL_DROPPED, true, true);
	one_failure(ULNET_HSTATUS_LOCAL_TIMEOUT, true, true);
}

static void test_local_dropped_single_ni_not_resent(void **state)
{
	(void)state;
	one_failure(ULNET_HSTATUS_LOCAL_DROPPED, false, false);
}

static void test_errors_never_resent(void **state)
{
	(void)state;
	one_failure(ULNET_HSTATUS_LOCAL_ERROR, true, false);
	one_failure(ULNET_HSTATUS_REMOTE_ERROR, true, false);
	one_failure(ULNET_HSTATUS_NETWORK_TIMEOUT, true, false);
}

/* An NI below full health is pinged through its own NID on
 * recovery_interval with the kernel's back-off (2^n s after the n-th); each
 * answer raises its health by health_sensitivity; at 1000 the pings stop.
 * Health 0 (by hand) is status down; back at 1000, up. */
static void test_local_recovery_pings(void **state)
{
	(void)state;
	struct nodes p;
	int h, n;

	nodes_up(&p, false);
	assert_int_equal(ulnet_ni_set_health(p.a, &p.na1, 0), 0);
	assert_false(ni_info(p.a, &p.na1).up);
	memlnd_trace_clear(p.net);
	/* recovery_interval (1 s): the first ping, to 1@gni itself, answered:
	 * every message of it that went well on the NI raised its health (the
	 * kernel's lnet_health_check() on OK: the GET sent, the REPLY sent and
	 * received) and so did the answer (lnet_handle_recovery_reply()) */
	tick(&p, SEC);
	assert_int_equal(pings_to(p.net, &p.na1, &p.na1), 1);
	h = ni_info(p.a, &p.na1).health.health_value;
	assert_true(h >= 100 && h <= 500);
	assert_int_equal(ni_info(p.a, &p.na1).health.ping_count, 0);
	assert_false(ni_info(p.a, &p.na1).up);
	/* answered: the count starts again, so the next one 2 s after (the
	 * wait was set when it went), and so on up to 1000 */
	tick(&p, SEC);
	assert_int_equal(pings_to(p.net, &p.na1, NULL), 1);
	tick(&p, SEC);
	assert_int_equal(pings_to(p.net, &p.na1, NULL), 2);
	for (int i = 0; i < 20 && ni_info(p.a, &p.na1).health.health_value < ULNET_MAX_HEALTH; i++)
		tick(&p, SEC);
	n = pings_to(p.net, &p.na1, NULL);
	assert_true(n >= 3 && n <= 6);
	assert_int_equal(ni_info(p.a, &p.na1).health.health_value, ULNET_MAX_HEALTH);
	assert_true(ni_info(p.a, &p.na1).up);
	tick(&p, 5 * SEC);
	assert_int_equal(pings_to(p.net, &p.na1, NULL), n);
	nodes_down(&p);
}

/* Unanswered recovery pings back off: the n-th waits 2^n s (capped at
 * max_recovery_ping_interval); ping_count and next_ping show it. */
static void test_local_recovery_backs_off(void **state)
{
	(void)state;
	struct nodes p;

	nodes_up(&p, false);
	assert_int_equal(ulnet_ni_set_health(p.a, &p.na1, 500), 0);
	memlnd_fail_nid(p.net, &p.na1, -EIO);   /* its own path is broken */
	memlnd_trace_clear(p.net);
	tick(&p, SEC);                           /* ping 1: fails, next in 2 s */
	assert_int_equal(ni_info(p.a, &p.na1).health.ping_count, 1);
	assert_int_equal(ni_info(p.a, &p.na1).health.next_ping,
			 (int64_t)(fake_now / SEC) + 2);
	tick(&p, SEC);
	assert_int_equal(ni_info(p.a, &p.na1).health.ping_count, 1);
	tick(&p, SEC);                           /* ping 2: next in 4 s */
	assert_int_equal(ni_info(p.a, &p.na1).health.ping_count, 2);
	for (int i = 0; i < 3; i++)
		tick(&p, SEC);
	assert_int_equal(ni_info(p.a, &p.na1).health.ping_count, 2);
	tick(&p, SEC);
	assert_int_equal(ni_info(p.a, &p.na1).health.ping_count, 3);
	/* a failed ping is a failed send on that NI: lower each time */
	assert_true(ni_info(p.a, &p.na1).health.health_value < 500);
	nodes_down(&p);
}

/* A rule failing everything 1@gni sends to itself with `hs`, then a PUT
 * from 1@gni to 1@gni (the suite's `ping --source nid1 nid1`: a GET there,
 * a PUT will do), which fails. */
static void fail_self_put(struct nodes *p, enum ulnet_hstatus hs)
{
	struct ulnet_fault_rule r;
	struct txlog t = { 0 };
	struct ulnet_md md = { .start = payload, .length = sizeof(payload), .threshold = 1,
			       .user_ptr = &t, .handler = tx_ev };
	ulnet_process_id_t self = { .nid = p->na1, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	memset(&r, 0, sizeof(r));
	r.src = p->na1;
	r.dst = p->na1;
	r.local = ULNET_NID_ANY;
	r.rate = 1;
	r.health_error_mask = ULNET_HSTATUS_BIT(hs);
	assert_int_equal(ulnet_fault_add(p->a, ULNET_FAULT_DROP, &r), 0);
	assert_int_equal(ulnet_md_bind(p->a, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(p->a, &p->na1, mdh, ULNET_NOACK_REQ, self, PORTAL, 0, 0, 0), 0);
	settle(p);
	assert_int_equal(t.nerr, 1);
}

/* sanity-lnet 218: a rule fails everything 1@gni sends to itself; a ping of
 * 1@gni from 1@gni fails and lowers its health; the recovery ping goes
 * from the healthier 3@gni and brings it back. */
static void test_local_recovery_other_path(void **state)
{
	(void)state;
	struct nodes p;

	nodes_up(&p, true);
	fail_self_put(&p, ULNET_HSTATUS_LOCAL_ERROR);
	assert_int_equal(ni_info(p.a, &p.na1).health.health_value, 900);
	memlnd_trace_clear(p.net);
	tick(&p, SEC);
	assert_int_equal(pings_to(p.net, &p.na1, &p.na3), 1);
	assert_int_equal(ni_info(p.a, &p.na1).health.health_value, ULNET_MAX_HEALTH);
	assert_int_equal(ni_info(p.a, &p.na3).health.health_value, ULNET_MAX_HEALTH);
	nodes_down(&p);
}

/* sanity-lnet 216: a send to one of our own NIDs that fails with a
 * network timeout puts our NI into recovery, not the peer NI (it is ours:
 * its health is the NI's). */
static void test_own_nid_failure_local_only(void **state)
{
	(void)state;
	struct nodes p;

	nodes_up(&p, true);
	fail_self_put(&p, ULNET_HSTATUS_NETWORK_TIMEOUT);
	assert_int_equal(ni_info(p.a, &p.na1).health.health_value, 900);
	assert_true(ni_info(p.a, &p.na1).health.in_recovery);
	assert_int_equal(peer_ni(p.a, &p.na1).health.health_value, ULNET_MAX_HEALTH);
	assert_false(peer_ni(p.a, &p.na1).health.in_recovery);
	assert_int_equal(peer_ni(p.a, &p.na1).health.network_timeout, 1);
	nodes_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_dropped_resent_on_other_ni),
		cmocka_unit_test(test_local_dropped_single_ni_not_resent),
		cmocka_unit_test(test_errors_never_resent),
		cmocka_unit_test(test_local_recovery_pings),
		cmocka_unit_test(test_local_recovery_backs_off),
		cmocka_unit_test(test_local_recovery_other_path),
		cmocka_unit_test(test_own_nid_failure_local_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
