/* SPDX-License-Identifier: MIT */
/*
 * test_health.c - Multi-Rail peer NI health and resend (the kernel's
 * lnet_health_check()/lnet_select_peer_ni() rules), on memlnd nodes in one
 * process with a fake clock: a peer NI its node reports DOWN is avoided;
 * send failures on one peer NI lower its health and move traffic to the
 * other; a send failed with a resendable status is resent once and
 * completes once; a non-resendable status, retry_count exhausted or a
 * passed transaction_timeout end it with the error, once; responses and
 * single-NI peers are not resent.
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
#include "ulnet/ulnet.h"

#define PORTAL 51
#define NPUTS 8

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

struct recvlog {
	int n;
	uint8_t data[256];
};

static void recv_handler(const struct ulnet_event *ev)
{
	struct recvlog *r = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT && ev->status == 0)
		r->n++;
}

/* Events of one PUT's MD. */
struct sendlog {
	int nsend, nack, nevents, status, unlinked;
};

static void send_handler(const struct ulnet_event *ev)
{
	struct sendlog *s = ev->md_user_ptr;

	s->nevents++;
	if (ev->type == ULNET_EVENT_SEND)
		s->nsend++;
	if (ev->type == ULNET_EVENT_ACK)
		s->nack++;
	if (ev->status)
		s->status = ev->status;
	if (ev->unlinked)
		s->unlinked++;
}

static void post_service(ulnet_t *ln, struct recvlog *r)
{
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = r->data, .length = sizeof(r->data),
			       .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE,
			       .user_ptr = r, .handler = recv_handler };

	assert_int_equal(ulnet_me_attach(ln, PORTAL, any, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
}

static uint8_t payload[64];

static void put(ulnet_t *ln, const ulnet_nid_t *to, struct sendlog *s, enum ulnet_ack_req ack)
{
	struct ulnet_md md = { .start = payload, .length = sizeof(payload),
			       .threshold = ack == ULNET_ACK_REQ ? 2 : 1, .user_ptr = s,
			       .handler = send_handler };
	ulnet_process_id_t t = { .nid = *to, .pid = 12345 };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ack, t, PORTAL, 1, 0, 0), 0);
}

/* Application PUTs (portal 51) in the trace sent to `to`. */
static int puts_to(struct memlnd_net *net, const ulnet_nid_t *to)
{
	static struct memlnd_trace_ent tr[256];
	int n = memlnd_trace(net, tr, 256), k = 0;

	assert_true(n <= 256);
	for (int i = 0; i < n; i++)
		if (tr[i].hdr.type == ULNET_MSG_PUT && tr[i].hdr.msg.put.ptl_index == PORTAL &&
		    ulnet_nid_same(&tr[i].hdr.dest_nid, to))
			k++;
	return k;
}

/* A (one NI, .11) and B (two NIs, .12 and .13) have discovered each other
 * (B's second NI is known to A as Multi-Rail). */
struct pair {
	struct memlnd_net *net;
	ulnet_t *a, *b;
	ulnet_nid_t na, nb1, nb2;
	struct recvlog r;
};

static void pair_up(struct pair *p, bool b2_down)
{
	struct sendlog s = { 0 };
	struct ulnet_peer_info pi;

	memset(p, 0, sizeof(*p));
	p->net = memlnd_net_create();
	p->a = mk();
	p->b = mk();
	assert_int_equal(memlnd_add_ni(p->net, p->a, 11, &p->na), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->b, 12, &p->nb1), 0);
	assert_int_equal(memlnd_add_ni(p->net, p->b, 13, &p->nb2), 0);
	if (b2_down)   /* B's ping info says .13 is DOWN */
		assert_int_equal(ulnet_ni_set_health(p->b, &p->nb2, 0), 0);
	post_service(p->b, &p->r);
	put(p->a, &p->nb1, &s, ULNET_NOACK_REQ);   /* discovery first */
	memlnd_pump(p->net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.status, 0);
	assert_int_equal(p->r.n, 1);
	assert_int_equal(ulnet_peer_info(p->a, 0, &pi), 0);
	assert_true(pi.multi_rail);
	assert_int_equal(pi.nnis, 2);
	p->r.n = 0;
	ulnet_counters_reset(p->a);
	memlnd_trace_clear(p->net);
}

static void pair_down(struct pair *p)
{
	ulnet_destroy(p->a);
	ulnet_destroy(p->b);
	memlnd_net_destroy(p->net);
}

/* B reports .13 DOWN in its ping info: A lowers its health and sends every
 * message to .12 (before: round robin, every other one to .13). */
static void test_reported_down_ni_avoided(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s[NPUTS] = { 0 };

	pair_up(&p, true);
	assert_int_equal(peer_ni(p.a, &p.nb1).health.health_value, ULNET_MAX_HEALTH);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, ULNET_MAX_HEALTH - 100);
	for (int i = 0; i < NPUTS; i++)
		put(p.a, &p.nb1, &s[i], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(p.r.n, NPUTS);
	assert_int_equal(puts_to(p.net, &p.nb1), NPUTS);
	assert_int_equal(puts_to(p.net, &p.nb2), 0);
	/* addressed to the down NID: still goes to the healthy one */
	put(p.a, &p.nb2, &s[0], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(puts_to(p.net, &p.nb2), 0);
	assert_int_equal(p.r.n, NPUTS + 1);
	pair_down(&p);
}

/* B sends A one PUT from its .13 NI: A hears from that peer NI. */
/* (the ME stays posted on A: its log outlives the call) */
static void put_from_nb2(struct pair *p)
{
	static struct recvlog ra;

	struct sendlog sb = { 0 };
	ulnet_process_id_t t = { .nid = p->na, .pid = 12345 };
	struct ulnet_md md = { .start = payload, .length = sizeof(payload), .threshold = 1,
			       .user_ptr = &sb, .handler = send_handler };
	ulnet_handle_t mdh;

	memset(&ra, 0, sizeof(ra));
	post_service(p->a, &ra);
	assert_int_equal(ulnet_md_bind(p->b, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(p->b, &p->nb2, mdh, ULNET_NOACK_REQ, t, PORTAL, 1, 0, 0), 0);
	memlnd_pump(p->net);
	assert_int_equal(ra.n, 1);
}

/* Sends to .13 fail (connection refused): the one message that tried it is
 * resent to .12, .13's health drops, and the traffic stays on .12; the
 * application sees no error. */
static void test_send_failures_move_traffic(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s[NPUTS] = { 0 };
	struct ulnet_counters c;

	pair_up(&p, false);
	memlnd_fail_nid(p.net, &p.nb2, -ECONNREFUSED);
	for (int i = 0; i < NPUTS; i++)
		put(p.a, &p.nb1, &s[i], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	for (int i = 0; i < NPUTS; i++) {
		assert_int_equal(s[i].nsend, 1);
		assert_int_equal(s[i].nevents, 1);
		assert_int_equal(s[i].status, 0);
	}
	assert_int_equal(p.r.n, NPUTS);
	/* one attempt on .13 at most (round robin picked it once) */
	assert_int_equal(puts_to(p.net, &p.nb2), 1);
	assert_int_equal(puts_to(p.net, &p.nb1), NPUTS);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, ULNET_MAX_HEALTH - 100);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.dropped, 1);
	assert_int_equal(peer_ni(p.a, &p.nb1).health.health_value, ULNET_MAX_HEALTH);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.resend_count, 1);
	assert_int_equal(c.successful_resends, 1);
	assert_int_equal(c.remote_dropped_count, 1);
	assert_int_equal(c.msgs_alloc, 0);
	/* a message from .13 shows it works again: health back up */
	memlnd_fail_nid(p.net, &p.nb2, 0);
	put_from_nb2(&p);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, ULNET_MAX_HEALTH);
	pair_down(&p);
}

/* One send fails with a resendable status: resent, one SEND event with
 * status 0, one ACK, the PUT counted once. */
static void test_resend_once_succeeds(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s = { 0 };
	struct ulnet_counters c;
	uint64_t sent;

	pair_up(&p, false);
	sent = peer_ni(p.a, &p.nb1).sent.n[ULNET_MSG_PUT] + peer_ni(p.a, &p.nb2).sent.n[ULNET_MSG_PUT];
	memlnd_fail_next(p.net, 1, 1u << ULNET_MSG_PUT, -ECONNRESET);
	put(p.a, &p.nb1, &s, ULNET_ACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.nack, 1);
	assert_int_equal(s.nevents, 2);
	assert_int_equal(s.status, 0);
	assert_int_equal(s.unlinked, 1);
	assert_int_equal(p.r.n, 1);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.resend_count, 1);
	assert_int_equal(c.successful_resends, 1);
	assert_int_equal(c.failed_resends, 0);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(c.rst_alloc, 0);
	/* one PUT sent (the ACK it got is a received ACK, not a send) */
	assert_int_equal(peer_ni(p.a, &p.nb1).sent.n[ULNET_MSG_PUT] +
				 peer_ni(p.a, &p.nb2).sent.n[ULNET_MSG_PUT],
			 sent + 1);
	pair_down(&p);
}

/* A GET whose send fails once is resent: one SEND, one REPLY with the
 * data, the tracker gone. */
static uint8_t getsrc[32] = "resent GET source bytes";

static void test_get_resent(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s = { 0 };
	struct ulnet_counters c;
	uint8_t sink[32] = { 0 };
	ulnet_handle_t meh, mdh;
	struct ulnet_md smd = { .start = getsrc, .length = sizeof(getsrc),
				.threshold = ULNET_MD_THRESH_INF, .options = ULNET_MD_OP_GET };
	struct ulnet_md gmd = { .start = sink, .length = sizeof(sink), .threshold = 2,
				.user_ptr = &s, .handler = send_handler };
	ulnet_process_id_t t;

	pair_up(&p, false);
	assert_int_equal(ulnet_me_attach(p.b, PORTAL + 1, any, 7, 0, ULNET_UNLINK, ULNET_INS_AFTER,
					 &meh), 0);
	assert_int_equal(ulnet_md_attach(p.b, meh, &smd, ULNET_UNLINK, &mdh), 0);
	memlnd_fail_next(p.net, 1, 1u << ULNET_MSG_GET, -ECONNREFUSED);
	assert_int_equal(ulnet_md_bind(p.a, &gmd, ULNET_UNLINK, &mdh), 0);
	t.nid = p.nb1;
	t.pid = 12345;
	assert_int_equal(ulnet_get(p.a, NULL, mdh, t, PORTAL + 1, 7, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.nevents, 2);   /* SEND, REPLY */
	assert_int_equal(s.status, 0);
	assert_int_equal(s.unlinked, 1);
	assert_memory_equal(sink, getsrc, sizeof(sink));
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.resend_count, 1);
	assert_int_equal(c.successful_resends, 1);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(c.rst_alloc, 0);
	pair_down(&p);
}

/* Recovery: a peer NI below full health is pinged (checked every
 * recovery_interval; 2^n s after its n-th ping); a failed ping lowers it more, an answered one
 * raises it, until it is back to full health and takes traffic again. */
static int gets_to(struct memlnd_net *net, const ulnet_nid_t *to)
{
	static struct memlnd_trace_ent tr[256];
	int n = memlnd_trace(net, tr, 256), k = 0;

	for (int i = 0; i < n && i < 256; i++)
		if (tr[i].hdr.type == ULNET_MSG_GET && tr[i].hdr.msg.get.ptl_index == 0 &&
		    ulnet_nid_same(&tr[i].hdr.dest_nid, to))
			k++;
	return k;
}

static void tick(struct pair *p, uint64_t ns)
{
	fake_now += ns;
	ulnet_progress(p->a, 0);
	memlnd_pump(p->net);
}

static void test_recovery_pings(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s[2] = { 0 };
	const uint64_t sec = 1000000000ULL;

	pair_up(&p, false);
	put_from_nb2(&p);   /* heard from: recovery applies to it (not before) */
	memlnd_trace_clear(p.net);
	memlnd_fail_nid(p.net, &p.nb2, -ECONNREFUSED);
	put(p.a, &p.nb1, &s[0], ULNET_NOACK_REQ);
	put(p.a, &p.nb1, &s[1], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(p.r.n, 2);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, 900);
	memlnd_trace_clear(p.net);

	/* 1 s: the first recovery ping, to .13 only; it fails: 800 */
	tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 1);
	assert_int_equal(gets_to(p.net, &p.nb1), 0);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, 800);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.ping_count, 1);
	/* 1 s later: the back-off is 2 s now, no ping yet */
	tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 1);
	/* .13 is reachable again: the second ping (2 s after the first) is
	 * answered (REPLY from .13): 900; the third 4 s later: 1000 */
	memlnd_fail_nid(p.net, &p.nb2, 0);
	tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 2);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, 900);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.ping_count, 0);
	tick(&p, 3 * sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 2);
	tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 3);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, ULNET_MAX_HEALTH);
	/* healthy: no more pings, and round robin uses .13 again */
	tick(&p, 5 * sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 3);
	memlnd_trace_clear(p.net);
	{
		struct sendlog s2[NPUTS] = { 0 };

		for (int i = 0; i < NPUTS; i++)
			put(p.a, &p.nb1, &s2[i], ULNET_NOACK_REQ);
		memlnd_pump(p.net);
	}
	assert_int_equal(puts_to(p.net, &p.nb2), NPUTS / 2);
	pair_down(&p);
}

/* Any message received from a recovering peer NI resets its recovery
 * ping count, as the kernel's lnet_health_check() does: the next ping
 * waits the shortest back-off again. */
static void test_receive_resets_ping_count(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s[2] = { 0 };
	const uint64_t sec = 1000000000ULL;

	pair_up(&p, false);
	put_from_nb2(&p);   /* heard from: recovery applies to it (not before) */
	memlnd_trace_clear(p.net);
	memlnd_fail_nid(p.net, &p.nb2, -ECONNREFUSED);
	put(p.a, &p.nb1, &s[0], ULNET_NOACK_REQ);
	put(p.a, &p.nb1, &s[1], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	tick(&p, sec);     /* first recovery ping, fails */
	tick(&p, 2 * sec); /* second, fails */
	assert_int_equal(peer_ni(p.a, &p.nb2).health.ping_count, 2);
	assert_true(peer_ni(p.a, &p.nb2).health.health_value < 900);
	memlnd_fail_nid(p.net, &p.nb2, 0);
	put_from_nb2(&p);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.ping_count, 0);
	pair_down(&p);
}

/* Recovery pings only go to peer NIs we have heard from (the kernel's
 * rule): .13 never sent anything, its failure lowers its health, and no
 * ping follows. With recovery_limit, pings stop that long after .13 was
 * last heard from. */
static void test_recovery_needs_heard_from(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s[4] = { 0 };
	struct ulnet_globals g;
	const uint64_t sec = 1000000000ULL;

	pair_up(&p, false);
	memlnd_fail_nid(p.net, &p.nb2, -ECONNREFUSED);
	put(p.a, &p.nb1, &s[0], ULNET_NOACK_REQ);
	put(p.a, &p.nb1, &s[1], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, 900);
	for (int i = 0; i < 5; i++)
		tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 0);
	pair_down(&p);

	pair_up(&p, false);
	ulnet_globals_get(p.a, &g);
	g.recovery_limit = 10;
	assert_int_equal(ulnet_globals_set(p.a, &g), 0);
	put_from_nb2(&p);
	memlnd_trace_clear(p.net);
	memlnd_fail_nid(p.net, &p.nb2, -ECONNREFUSED);
	put(p.a, &p.nb1, &s[2], ULNET_NOACK_REQ);
	put(p.a, &p.nb1, &s[3], ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 1);
	memlnd_trace_clear(p.net);
	for (int i = 0; i < 40; i++)
		tick(&p, sec);
	/* pings at 3 and 7 s (back-off 2, 4 s), none after 10 s */
	assert_int_equal(gets_to(p.net, &p.nb2), 2);
	pair_down(&p);
}

/* A recovery ping that gets no REPLY within transaction_timeout lowers the
 * peer NI's health (nothing failed a message). */
static enum memlnd_verdict drop_pings(void *arg, const struct lnet_hdr *hdr)
{
	(void)arg;
	return hdr->type == ULNET_MSG_GET && hdr->msg.get.ptl_index == 0 ? MEMLND_DROP
									  : MEMLND_PASS;
}

static void test_recovery_ping_unanswered(void **state)
{
	(void)state;
	struct pair p;
	const uint64_t sec = 1000000000ULL;

	pair_up(&p, false);
	put_from_nb2(&p);   /* heard from: recovery applies to it (not before) */
	memlnd_trace_clear(p.net);
	assert_int_equal(ulnet_peer_ni_set_health(p.a, &p.nb2, 900), 0);
	memlnd_set_filter(p.net, drop_pings, NULL);
	tick(&p, sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 1);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, 900);
	/* one ping out at a time, however long it takes */
	tick(&p, 100 * sec);
	assert_int_equal(gets_to(p.net, &p.nb2), 1);
	tick(&p, 51 * sec);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, 800);
	memlnd_set_filter(p.net, NULL, NULL);
	pair_down(&p);
}

/* A non-resendable status (a local error) ends the PUT at once; the
 * application sees it once. */
static void test_local_error_not_resent(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s = { 0 };
	struct ulnet_counters c;

	pair_up(&p, false);
	memlnd_fail_next(p.net, 1, 1u << ULNET_MSG_PUT, -EIO);
	put(p.a, &p.nb1, &s, ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.nevents, 1);
	assert_int_equal(s.status, -EIO);
	assert_int_equal(p.r.n, 0);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.resend_count, 0);
	assert_int_equal(c.local_error_count, 1);
	assert_int_equal(c.msgs_alloc, 0);
	/* a local error says nothing about the peer NI */
	assert_int_equal(peer_ni(p.a, &p.nb1).health.health_value, ULNET_MAX_HEALTH);
	assert_int_equal(peer_ni(p.a, &p.nb2).health.health_value, ULNET_MAX_HEALTH);
	pair_down(&p);
}

/* Both NIs unreachable: the first try and retry_count (2) resends fail,
 * then the application sees the error, once. */
static void test_retry_count_exhausted(void **state)
{
	(void)state;
	struct pair p;
	struct sendlog s = { 0 };
	struct ulnet_counters c;

	pair_up(&p, false);
	memlnd_fail_nid(p.net, &p.nb1, -EHOSTUNREACH);
	memlnd_fail_nid(p.net, &p.nb2, -EHOSTUNREACH);
	put(p.a, &p.nb1, &s, ULNET_ACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.nevents, 1);
	assert_int_equal(s.status, -EHOSTUNREACH);
	assert_int_equal(puts_to(p.net, &p.nb1) + puts_to(p.net, &p.nb2), 3);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.resend_count, 2);
	assert_int_equal(c.failed_resends, 1);
	assert_int_equal(c.successful_resends, 0);
	assert_int_equal(c.msgs_alloc, 0);
	/* as the kernel's: the MD still waits for its ACK (it may come, the
	 * peer may have taken the PUT whole) until the response tracker
	 * unlinks it at transaction_timeout, with -ETIMEDOUT */
	assert_int_equal(c.rst_alloc, 1);
	assert_int_equal(s.unlinked, 0);
	fake_now += 149ULL * 1000000000ULL;
	ulnet_progress(p.a, 0);
	assert_int_equal(s.unlinked, 0);
	fake_now += 2ULL * 1000000000ULL;
	ulnet_progress(p.a, 0);
	assert_int_equal(s.nevents, 2);
	assert_int_equal(s.unlinked, 1);
	assert_int_equal(s.status, -ETIMEDOUT);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.rst_alloc, 0);
	assert_int_equal(c.response_timeout_count, 1);

	/* retry_count 0: no resend at all */
	struct ulnet_globals g;
	ulnet_globals_get(p.a, &g);
	g.retry_count = 0;
	assert_int_equal(ulnet_globals_set(p.a, &g), 0);
	memlnd_fail_nid(p.net, &p.nb1, 0);
	memlnd_trace_clear(p.net);
	memset(&s, 0, sizeof(s));
	put(p.a, &p.nb1, &s, ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(puts_to(p.net, &p.nb1) + puts_to(p.net, &p.nb2), 1);
	pair_down(&p);
}

/* Hold the first application PUT in the LND, then fail it as a reset
 * connection would, `late` ns after it was sent. */
struct holder {
	int n;
};

static enum memlnd_verdict hold_first_put(void *arg, const struct lnet_hdr *hdr)
{
	struct holder *h = arg;

	if (hdr->type == ULNET_MSG_PUT && hdr->msg.put.ptl_index == PORTAL && h->n > 0) {
		h->n--;
		return MEMLND_HOLD;
	}
	return MEMLND_PASS;
}

static void resend_after(uint64_t late, int expect_status, int expect_recv)
{
	struct pair p;
	struct sendlog s = { 0 };
	struct holder h = { 1 };
	struct ulnet_globals g;

	pair_up(&p, false);
	ulnet_globals_get(p.a, &g);
	assert_int_equal(g.transaction_timeout, 150);
	memlnd_set_filter(p.net, hold_first_put, &h);
	put(p.a, &p.nb1, &s, ULNET_NOACK_REQ);
	memlnd_pump(p.net);
	assert_int_equal(s.nevents, 0);
	fake_now += late;
	assert_int_equal(memlnd_fail_held(p.net, -ECONNRESET), 1);
	memlnd_pump(p.net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.nevents, 1);
	assert_int_equal(s.status, expect_status);
	assert_int_equal(p.r.n, expect_recv);
	memlnd_set_filter(p.net, NULL, NULL);
	pair_down(&p);
}

static enum memlnd_verdict hold_first_get(void *arg, const struct lnet_hdr *hdr)
{
	struct holder *h = arg;

	if (hdr->type == ULNET_MSG_GET && hdr->msg.get.ptl_index == PORTAL && h->n > 0) {
		h->n--;
		return MEMLND_HOLD;
	}
	return MEMLND_PASS;
}

struct getlog {
	int nsend, nreply, status_send, status_reply;
};

static void get_handler(const struct ulnet_event *ev)
{
	struct getlog *g = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_SEND) {
		g->nsend++;
		g->status_send = ev->status;
	} else if (ev->type == ULNET_EVENT_REPLY) {
		g->nreply++;
		g->status_reply = ev->status;
	}
}

/* A GET whose REPLY the LND elides (rdma mode) fails with a status that
 * would have it resent to B's other NI: it is not resent. Its REPLY
 * message already ended with that status; a resend would leave the GET
 * without a response tracker, or find its MD spent. */
static void test_rdma_get_not_resent(void **state)
{
	(void)state;
	struct pair p;
	struct holder h = { 1 };
	struct getlog gl = { 0 };
	uint8_t src[32] = { 1 }, sink[32];
	ulnet_handle_t meh, mdh, gmdh;
	struct ulnet_md tmd = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md gmd = { .start = sink, .length = sizeof(sink), .threshold = ULNET_MD_THRESH_INF,
				.user_ptr = &gl, .handler = get_handler };
	ulnet_process_id_t t = { .nid = ULNET_NID_ANY, .pid = 12345 };
	struct ulnet_counters c;

	pair_up(&p, false);
	memlnd_set_rdma(p.net, true);
	assert_int_equal(ulnet_me_attach(p.b, PORTAL, any, 2, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(p.b, meh, &tmd, ULNET_UNLINK, &mdh), 0);
	memlnd_set_filter(p.net, hold_first_get, &h);
	t.nid = p.nb1;
	assert_int_equal(ulnet_md_bind(p.a, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(p.a, NULL, gmdh, t, PORTAL, 2, 0), 0);
	memlnd_pump(p.net);
	assert_int_equal(gl.nsend + gl.nreply, 0);
	assert_int_equal(memlnd_fail_held(p.net, -ECONNRESET), 1);
	memlnd_pump(p.net);
	assert_int_equal(gl.nsend, 1);
	assert_int_equal(gl.status_send, -ECONNRESET);
	assert_int_equal(gl.nreply, 1);
	assert_int_equal(gl.status_reply, -ECONNRESET);
	/* nothing more: no resend, nothing left waiting */
	fake_now += 400ULL * 1000000000ULL;
	ulnet_progress(p.a, 0);
	memlnd_pump(p.net);
	assert_int_equal(gl.nsend, 1);
	assert_int_equal(gl.nreply, 1);
	ulnet_counters_get(p.a, &c);
	assert_int_equal(c.resend_count, 0);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(c.rst_alloc, 0);
	assert_int_equal(ulnet_md_unlink(p.a, gmdh), 0);
	memlnd_set_filter(p.net, NULL, NULL);
	pair_down(&p);
}

/* The resend must fall within transaction_timeout of the send. */
static void test_resend_respects_transaction_timeout(void **state)
{
	(void)state;
	resend_after(149ULL * 1000000000ULL, 0, 1);
	resend_after(151ULL * 1000000000ULL, -ECONNRESET, 0);
}

/* A peer with one NI has nowhere else to go: no resend, no health change
 * (as the kernel); a failed ACK (a response) is not resent either. */
static void test_single_ni_and_responses_not_resent(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *b = mk();
	ulnet_nid_t na, na2, nb;
	struct recvlog r = { 0 }, ra = { 0 };
	struct sendlog s = { 0 };
	struct ulnet_counters c;

	assert_int_equal(memlnd_add_ni(net, a, 21, &na), 0);
	assert_int_equal(memlnd_add_ni(net, b, 22, &nb), 0);
	post_service(b, &r);
	post_service(a, &ra);
	put(a, &nb, &s, ULNET_NOACK_REQ);
	memlnd_pump(net);
	assert_int_equal(r.n, 1);

	memset(&s, 0, sizeof(s));
	memlnd_fail_next(net, 1, 1u << ULNET_MSG_PUT, -ECONNREFUSED);
	put(a, &nb, &s, ULNET_NOACK_REQ);
	memlnd_pump(net);
	assert_int_equal(s.nevents, 1);
	assert_int_equal(s.status, -ECONNREFUSED);
	ulnet_counters_get(a, &c);
	assert_int_equal(c.resend_count, 0);
	assert_int_equal(peer_ni(a, &nb).health.health_value, ULNET_MAX_HEALTH);

	/* A gets a second NI (pushed to B): B's ACK to A fails once, and
	 * is not resent although A now has two NIs */
	assert_int_equal(memlnd_add_ni(net, a, 23, &na2), 0);
	memlnd_pump(net);
	memset(&s, 0, sizeof(s));
	memlnd_fail_next(net, 1, 1u << ULNET_MSG_ACK, -ECONNRESET);
	memlnd_trace_clear(net);
	put(a, &nb, &s, ULNET_ACK_REQ);
	memlnd_pump(net);
	assert_int_equal(s.nsend, 1);
	assert_int_equal(s.nack, 0);
	ulnet_counters_get(b, &c);
	assert_int_equal(c.resend_count, 0);
	assert_int_equal(c.msgs_alloc, 0);
	{
		struct memlnd_trace_ent tr[16];
		int n = memlnd_trace(net, tr, 16), acks = 0;

		for (int i = 0; i < n; i++)
			acks += tr[i].hdr.type == ULNET_MSG_ACK;
		assert_int_equal(acks, 1);
	}
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reported_down_ni_avoided),
		cmocka_unit_test(test_send_failures_move_traffic),
		cmocka_unit_test(test_resend_once_succeeds),
		cmocka_unit_test(test_get_resent),
		cmocka_unit_test(test_recovery_pings),
		cmocka_unit_test(test_receive_resets_ping_count),
		cmocka_unit_test(test_recovery_ping_unanswered),
		cmocka_unit_test(test_recovery_needs_heard_from),
		cmocka_unit_test(test_local_error_not_resent),
		cmocka_unit_test(test_retry_count_exhausted),
		cmocka_unit_test(test_resend_respects_transaction_timeout),
		cmocka_unit_test(test_rdma_get_not_resent),
		cmocka_unit_test(test_single_ni_and_responses_not_resent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
