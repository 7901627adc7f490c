/* SPDX-License-Identifier: MIT */
/*
 * test_routing.c - routes and routed sends on memlnd: the route table's
 * checks and errors (in the kernel's order), route choice (priority, hops,
 * round robin, liveness), and a routed message's header (end to end) and
 * next hop (the gateway).
 *
 * Topology: A = 1@gni; R = 3@gni + 4@gni1 (the router); B = 2@gni1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake_node.h"
#include "memlnd.h"
#include "core/lnd.h"
#include "core/route.h"
#include "ulnet/fault.h"
#include "ulnet/routing.h"

static const ulnet_net_t GNI = (ULNET_LND_GNI << 16) | 0, GNI1 = (ULNET_LND_GNI << 16) | 1,
			 GNI2 = (ULNET_LND_GNI << 16) | 2;

static ulnet_nid_t nid_on(ulnet_net_t net, uint32_t addr)
{
	ulnet_nid_t n;

	memlnd_nid(addr, &n);
	n.num = (uint16_t)ulnet_net_num(net);
	return n;
}

static void add_ni(struct memlnd_net *net, ulnet_t *ln, ulnet_net_t on, uint32_t addr)
{
	struct ulnet_ni_conf c;

	memset(&c, 0, sizeof(c));
	c.nid = nid_on(on, addr);
	assert_int_equal(memlnd_add_ni_conf(net, ln, &c), 0);
}

static void set_discovery(ulnet_t *ln, int on)
{
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.discovery = on;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
}

static int route_add(ulnet_t *ln, ulnet_net_t net, ulnet_nid_t gw, int hops, unsigned prio)
{
	struct ulnet_route_conf rc = { .net = net, .gateway = gw, .hops = hops, .priority = prio };

	return ulnet_route_add(ln, &rc);
}

/* The checks of route add, in the kernel's order, with its errors. */
static void test_route_add_checks(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk();
	ulnet_nid_t gw = nid_on(GNI, 3), lo0 = ULNET_NID_LO0;
	struct ulnet_route_info ri;

	add_ni(net, a, GNI, 1);
	assert_int_equal(route_add(a, ULNET_NET_ANY, gw, -1, 0), -ENXIO);
	assert_int_equal(route_add(a, ulnet_mknet(ULNET_LND_LO, 0), gw, -1, 0), -EACCES);
	assert_int_equal(route_add(a, GNI1, lo0, -1, 0), -EINVAL);
	assert_int_equal(route_add(a, GNI1, ULNET_NID_ANY, -1, 0), -EINVAL);
	assert_int_equal(route_add(a, GNI1, nid_on(GNI1, 3), -1, 0), -EINVAL);  /* gw on the net */
	assert_int_equal(route_add(a, GNI1, gw, 0, 0), -EINVAL);
	assert_int_equal(route_add(a, GNI1, gw, 256, 0), -EINVAL);
	assert_int_equal(route_add(a, GNI, nid_on(GNI2, 3), -1, 0), -EEXIST);   /* a local net */
	assert_int_equal(route_add(a, GNI1, nid_on(GNI2, 3), -1, 0), -EHOSTUNREACH);
	assert_int_equal(ulnet_route_info(a, 0, &ri), -ENOENT);

	assert_int_equal(route_add(a, GNI1, gw, -1, 0), 0);
	assert_int_equal(route_add(a, GNI1, gw, 2, 5), -EEXIST);   /* same gateway */
	assert_int_equal(route_add(a, GNI1, nid_on(GNI, 5), 1, 3), 0);
	assert_int_equal(route_add(a, GNI2, gw, 255, 1), 0);
	assert_int_equal(ulnet_route_info(a, 0, &ri), 0);
	assert_int_equal(ri.net, GNI1);
	assert_true(ulnet_nid_same(&ri.gateway, &gw));
	assert_int_equal(ri.hops, -1);
	assert_int_equal(ri.priority, 0);
	assert_true(ri.alive);
	assert_int_equal(ulnet_route_info(a, 1, &ri), 0);
	assert_int_equal(ri.hops, 1);
	assert_int_equal(ri.priority, 3);
	assert_int_equal(ulnet_route_info(a, 2, &ri), 0);
	assert_int_equal(ri.net, GNI2);
	assert_int_equal(ri.hops, 255);
	assert_int_equal(ulnet_route_info(a, 3, &ri), -ENOENT);

	/* del: an unknown net -ENOENT; an unknown gateway on a known net 0 */
	ulnet_nid_t other = nid_on(GNI, 9);

	assert_int_equal(ulnet_route_del(a, ulnet_mknet(ULNET_LND_GNI, 7), &gw), -ENOENT);
	assert_int_equal(ulnet_route_del(a, GNI1, &other), 0);
	assert_int_equal(ulnet_route_del(a, GNI1, &gw), 1);
	assert_int_equal(ulnet_route_del(a, GNI1, &gw), 0);
	assert_int_equal(ulnet_route_info(a, 0, &ri), 0);
	assert_int_equal(ri.priority, 3);
	assert_int_equal(ulnet_route_del(a, ULNET_NET_ANY, NULL), 2);
	assert_int_equal(ulnet_route_info(a, 0, &ri), -ENOENT);
	/* routes left at destroy are freed with their gateway references */
	assert_int_equal(route_add(a, GNI1, gw, -1, 0), 0);
	ulnet_destroy(a);
	memlnd_net_destroy(net);
}

struct sent {
	int n, status;
};

static void sent_ev(const struct ulnet_event *ev)
{
	struct sent *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_SEND) {
		s->n++;
		s->status = ev->status;
	}
}

static int put_to(ulnet_t *ln, ulnet_nid_t to, struct sent *s, void *buf, size_t len)
{
	struct ulnet_md md = { .start = buf, .length = len, .threshold = 1, .user_ptr = s,
			       .handler = sent_ev };
	ulnet_process_id_t t = { .nid = to, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	return ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, t, 40, 7, 0, 0);
}

/* A PUT to a remote net goes to the gateway with the end-to-end header;
 * with no route it is refused at once. */
static void test_routed_put_header(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *r = mk();
	ulnet_nid_t na = nid_on(GNI, 1), nb = nid_on(GNI1, 2), gw = nid_on(GNI, 3);
	struct memlnd_trace_ent tr[8];
	uint8_t buf[64] = { 0 };
	struct sent s = { 0 };

	add_ni(net, a, GNI, 1);
	add_ni(net, r, GNI, 3);
	add_ni(net, r, GNI1, 4);
	set_discovery(a, 0);
	logs[0] = '\0';
	assert_int_equal(put_to(a, nb, &s, buf, sizeof(buf)), -EHOSTUNREACH);
	assert_int_equal(route_add(a, GNI1, gw, -1, 0), 0);
	memlnd_trace_clear(net);
	assert_int_equal(put_to(a, nb, &s, buf, sizeof(buf)), 0);
	assert_int_equal(memlnd_trace(net, tr, 8), 1);
	assert_true(ulnet_nid_same(&tr[0].hop, &gw));
	assert_true(ulnet_nid_same(&tr[0].hdr.dest_nid, &nb));
	assert_true(ulnet_nid_same(&tr[0].hdr.src_nid, &na));
	assert_int_equal(tr[0].hdr.type, ULNET_MSG_PUT);
	memlnd_pump(net);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.status, 0);
	ulnet_destroy(a);
	ulnet_destroy(r);
	memlnd_net_destroy(net);
}

/* Route choice: the lowest priority, then the fewest hops (unset counts
 * as 1); equal routes take turns. */
static void test_route_choice(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk();
	ulnet_nid_t nb = nid_on(GNI1, 2), g3 = nid_on(GNI, 3), g5 = nid_on(GNI, 5), g6 = nid_on(GNI, 6);
	struct memlnd_trace_ent tr[16];
	uint8_t buf[8] = { 0 };
	struct sent s = { 0 };
	int n;

	/* the gateways exist (they drop what they get: routing is off) */
	ulnet_t *gw[3] = { mk(), mk(), mk() };

	add_ni(net, gw[0], GNI, 3);
	add_ni(net, gw[1], GNI, 5);
	add_ni(net, gw[2], GNI, 6);
	add_ni(net, a, GNI, 1);
	set_discovery(a, 0);
	assert_int_equal(route_add(a, GNI1, g3, 2, 1), 0);
	assert_int_equal(route_add(a, GNI1, g5, 3, 0), 0);
	memlnd_trace_clear(net);
	assert_int_equal(put_to(a, nb, &s, buf, sizeof(buf)), 0);
	assert_int_equal(memlnd_trace(net, tr, 16), 1);
	assert_true(ulnet_nid_same(&tr[0].hop, &g5));     /* priority 0 beats 1 */
	assert_int_equal(route_add(a, GNI1, g6, -1, 0), 0);
	memlnd_trace_clear(net);
	assert_int_equal(put_to(a, nb, &s, buf, sizeof(buf)), 0);
	assert_int_equal(memlnd_trace(net, tr, 16), 1);
	assert_true(ulnet_nid_same(&tr[0].hop, &g6));     /* hops unset (1) beat 3 */
	/* two equal routes: round robin */
	assert_int_equal(ulnet_route_del(a, GNI1, &g6), 1);
	assert_int_equal(ulnet_route_del(a, GNI1, &g3), 1);
	assert_int_equal(route_add(a, GNI1, g3, 3, 0), 0);
	memlnd_trace_clear(net);
	for (int i = 0; i < 4; i++)
		assert_int_equal(put_to(a, nb, &s, buf, sizeof(buf)), 0);
	n = memlnd_trace(net, tr, 16);
	assert_int_equal(n, 4);
	for (int i = 1; i < n; i++)
		assert_false(ulnet_nid_same(&tr[i].hop, &tr[i - 1].hop));
	memlnd_pump(net);
	ulnet_destroy(a);
	for (int i = 0; i < 3; i++)
		ulnet_destroy(gw[i]);
	memlnd_net_destroy(net);
}

/* --- forwarding ------------------------------------------------------------------ */

struct three {
	struct memlnd_net *net;
	ulnet_t *a, *r, *b;
	ulnet_nid_t na, nb, ra, rb;   /* A, B, and R on each side */
};

/* A = 1@gni, R = 3@gni + 4@gni1 (routing on, its start-up phase over),
 * B = 2@gni1; A and B route to each other's net through R. */
static void three_up_large(struct three *t, bool discovery, int large)
{
	t->net = memlnd_net_create();
	t->a = mk();
	t->r = mk();
	t->b = mk();
	t->na = nid_on(GNI, 1);
	t->nb = nid_on(GNI1, 2);
	t->ra = nid_on(GNI, 3);
	t->rb = nid_on(GNI1, 4);
	add_ni(t->net, t->a, GNI, 1);
	add_ni(t->net, t->r, GNI, 3);
	add_ni(t->net, t->r, GNI1, 4);
	add_ni(t->net, t->b, GNI1, 2);
	set_discovery(t->a, discovery);
	set_discovery(t->b, discovery);
	set_discovery(t->r, discovery);
	assert_int_equal(route_add(t->a, GNI1, t->ra, -1, 0), 0);
	assert_int_equal(route_add(t->b, GNI, t->rb, -1, 0), 0);
	/* a pool size set before routing is on takes effect with it */
	assert_int_equal(ulnet_routing_buffers_set(t->r, ULNET_RTR_POOL_LARGE, large), 0);
	assert_int_equal(ulnet_routing_set(t->r, true), 0);
}

static void three_up(struct three *t, bool discovery)
{
	three_up_large(t, discovery, 0);
}

static void three_down(struct three *t)
{
	ulnet_destroy(t->a);
	ulnet_destroy(t->r);
	ulnet_destroy(t->b);
	memlnd_net_destroy(t->net);
}

struct rx {
	int nput, nack, nunlink, status;
	ulnet_nid_t initiator;
	uint32_t mlength;
};

static void rx_ev(const struct ulnet_event *ev)
{
	struct rx *r = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT) {
		r->nput++;
		r->initiator = ev->initiator.nid;
		r->mlength = ev->mlength;
	} else if (ev->type == ULNET_EVENT_ACK) {
		r->nack++;
	}
	if (ev->unlinked)
		r->nunlink++;
	if (ev->status)
		r->status = ev->status;
}

static void post_sink(ulnet_t *ln, void *buf, size_t len, struct rx *r)
{
	const ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = { .start = buf, .length = len, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE, .user_ptr = r,
			       .handler = rx_ev };
	ulnet_handle_t me, mdh;

	assert_int_equal(ulnet_me_attach(ln, 40, any, 7, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(ln, me, &md, ULNET_RETAIN, &mdh), 0);
}

static void put_ack(ulnet_t *ln, ulnet_nid_t to, struct rx *r, void *buf, size_t len, unsigned off)
{
	struct ulnet_md md = { .start = buf, .length = len, .threshold = 2, .user_ptr = r,
			       .handler = rx_ev };
	ulnet_process_id_t t = { .nid = to, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_ACK_REQ, t, 40, 7, off, 0), 0);
}

/* A PUT from A reaches B through R with its header unchanged on both hops;
 * B's ACK comes back through R; R counts the two as routed traffic and
 * shows the buffers and credits they took. */
static void test_forward_put_ack(void **state)
{
	(void)state;
	struct three t;
	struct memlnd_trace_ent tr[8];
	uint8_t src[100], dst[100];
	struct rx ra = { 0 }, rb = { 0 };
	struct ulnet_routing_info info;
	struct ulnet_counters c;
	struct ulnet_peer_info pi;

	three_up(&t, false);
	for (int i = 0; i < 100; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memset(dst, 0, sizeof(dst));
	post_sink(t.b, dst, sizeof(dst), &rb);
	memlnd_trace_clear(t.net);
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	memlnd_pump(t.net);
	assert_int_equal(rb.nput, 1);
	assert_true(ulnet_nid_same(&rb.initiator, &t.na));
	assert_memory_equal(src, dst, sizeof(src));
	assert_int_equal(ra.nack, 1);
	assert_int_equal(ra.status, 0);
	assert_int_equal(ra.nunlink, 1);
	/* the wire: A -> R, R -> B (same header), B -> R, R -> A (the ACK) */
	assert_int_equal(memlnd_trace(t.net, tr, 8), 4);
	assert_true(ulnet_nid_same(&tr[0].hop, &t.ra));
	assert_true(ulnet_nid_same(&tr[1].hop, &t.nb));
	assert_memory_equal(&tr[0].hdr, &tr[1].hdr, sizeof(tr[0].hdr));
	assert_true(ulnet_nid_same(&tr[1].hdr.src_nid, &t.na));
	assert_int_equal(tr[2].hdr.type, ULNET_MSG_ACK);
	assert_true(ulnet_nid_same(&tr[2].hop, &t.rb));
	assert_true(ulnet_nid_same(&tr[2].hdr.dest_nid, &t.na));
	assert_true(ulnet_nid_same(&tr[3].hop, &t.na));
	assert_memory_equal(&tr[2].hdr, &tr[3].hdr, sizeof(tr[2].hdr));
	/* R: routed traffic, not its own sends and receives */
	ulnet_counters_get(t.r, &c);
	assert_int_equal(c.route_count, 2);
	assert_int_equal(c.route_length, 100);
	assert_int_equal(c.send_count, 0);
	assert_int_equal(c.recv_count, 0);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(ulnet_routing_info(t.r, &info), 0);
	assert_int_equal(info.state, ULNET_ROUTING_STARTING);
	assert_int_equal(info.pool[ULNET_RTR_POOL_TINY].npages, 0);
	assert_int_equal(info.pool[ULNET_RTR_POOL_TINY].nbuffers, 2048);
	assert_int_equal(info.pool[ULNET_RTR_POOL_TINY].credits, 2048);
	assert_int_equal(info.pool[ULNET_RTR_POOL_TINY].mincredits, 2047);   /* the ACK */
	assert_int_equal(info.pool[ULNET_RTR_POOL_SMALL].mincredits, 16383); /* the PUT */
	assert_int_equal(info.pool[ULNET_RTR_POOL_LARGE].mincredits, 1024);
	assert_int_equal(info.pool[ULNET_RTR_POOL_LARGE].npages, 256);
	/* A's view of R: credits on R's NI on A's net, none on the other
	 * (A has no NI there), as the kernel shows */
	for (int i = 0; ulnet_peer_info(t.a, i, &pi) == 0; i++)
		if (ulnet_nid_same(&pi.primary, &t.ra))
			for (int j = 0; j < pi.nnis; j++)
				assert_int_equal(pi.nis[j].max_tx_credits,
						 ulnet_nid_same(&pi.nis[j].nid, &t.ra) ? 8 : 0);
	/* R's router credits of A: one taken, given back */
	for (int i = 0; ulnet_peer_info(t.r, i, &pi) == 0; i++)
		if (ulnet_nid_same(&pi.primary, &t.na)) {
			assert_int_equal(pi.nis[0].available_rtr_credits, 8);
			assert_int_equal(pi.nis[0].min_rtr_credits, 7);
		}
	three_down(&t);
}

static void get_ev(const struct ulnet_event *ev)
{
	struct rx *r = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_REPLY) {
		r->nack++;
		r->mlength = ev->mlength;
	}
	if (ev->status)
		r->status = ev->status;
}

/* With an LND that moves GET data itself (memlnd's rdma mode, as
 * o2iblnd): a GET through a router still goes as a GET message and comes
 * back as a REPLY message through the router (lnet_msg_get_sink() refuses
 * a routed GET), while a GET to a neighbour elides the REPLY. */
static void test_routed_rdma_get(void **state)
{
	(void)state;
	struct three t;
	struct memlnd_trace_ent tr[8];
	uint8_t src[300], sink[300] = { 0 };
	struct rx r = { 0 }, rt = { 0 };
	const ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md tmd = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE, .user_ptr = &rt,
				.handler = rx_ev };
	struct ulnet_md gmd = { .start = sink, .length = sizeof(sink), .threshold = 2, .user_ptr = &r,
				.handler = get_ev };
	ulnet_process_id_t to = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t me, mdh, gmdh;

	three_up(&t, false);
	memlnd_set_rdma(t.net, true);
	for (int i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)(i * 5 + 3);
	assert_int_equal(ulnet_me_attach(t.b, 41, any, 9, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(t.b, me, &tmd, ULNET_RETAIN, &mdh), 0);
	to.nid = t.nb;
	memlnd_trace_clear(t.net);
	assert_int_equal(ulnet_md_bind(t.a, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(t.a, NULL, gmdh, to, 41, 9, 0), 0);
	memlnd_pump(t.net);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.nack, 1);
	assert_int_equal(r.mlength, sizeof(src));
	assert_memory_equal(sink, src, sizeof(src));
	/* A -> R -> B the GET, B -> R -> A the REPLY */
	assert_int_equal(memlnd_trace(t.net, tr, 8), 4);
	assert_int_equal(tr[0].hdr.type, ULNET_MSG_GET);
	assert_int_equal(tr[1].hdr.type, ULNET_MSG_GET);
	assert_int_equal(tr[2].hdr.type, ULNET_MSG_REPLY);
	assert_int_equal(tr[3].hdr.type, ULNET_MSG_REPLY);
	/* R to B directly (B's neighbour): the REPLY is elided */
	memset(&r, 0, sizeof(r));
	memset(sink, 0, sizeof(sink));
	memlnd_trace_clear(t.net);
	assert_int_equal(ulnet_md_bind(t.r, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(t.r, NULL, gmdh, to, 41, 9, 0), 0);
	memlnd_pump(t.net);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.nack, 1);
	assert_memory_equal(sink, src, sizeof(src));
	assert_int_equal(memlnd_trace(t.net, tr, 8), 1);
	assert_int_equal(tr[0].hdr.type, ULNET_MSG_GET);
	three_down(&t);
}

/* Forwarding is off: the message is dropped (a log line and a count) and
 * R stays up; the sender's PUT gets no ACK, and its tracker ends it. */
static void test_forward_off_drops(void **state)
{
	(void)state;
	struct three t;
	uint8_t src[16] = { 1 }, dst[16];
	struct rx ra = { 0 }, rb = { 0 };
	struct ulnet_counters c;

	three_up(&t, false);
	assert_int_equal(ulnet_routing_set(t.r, false), 0);
	/* STOPPING still forwards (as the kernel); after its phase, off */
	fake_now += (ULNET_RTR_STOP_MIN_S + 1) * 1000000000ULL;
	ulnet_progress(t.r, 0);
	logs[0] = '\0';
	post_sink(t.b, dst, sizeof(dst), &rb);
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	memlnd_pump(t.net);
	assert_int_equal(rb.nput, 0);
	assert_non_null(strstr(logs, "routing not enabled"));
	ulnet_counters_get(t.r, &c);
	assert_int_equal(c.drop_count, 1);
	assert_int_equal(c.route_count, 0);
	three_down(&t);
}

/* 64 PUTs of 1 MiB at once through a router with 4 large buffers: they
 * wait for buffers (and for R's router credits of A), in order, and none
 * is dropped: every PUT arrives intact and every ACK returns. */
static void test_forward_waits_for_buffers(void **state)
{
	(void)state;
	enum { N = 64, SZ = 1 << 20 };
	struct three t;
	uint8_t *src = malloc((size_t)N * SZ), *dst = calloc(N, SZ);
	struct rx ra[N], rb = { 0 };
	struct ulnet_routing_info info;

	assert_non_null(src);
	assert_non_null(dst);
	memset(ra, 0, sizeof(ra));
	three_up_large(&t, false, 4);
	assert_int_equal(ulnet_routing_info(t.r, &info), 0);
	assert_int_equal(info.pool[ULNET_RTR_POOL_LARGE].nbuffers, 4);
	for (size_t i = 0; i < (size_t)N * SZ; i++)
		src[i] = (uint8_t)(i * 2654435761u >> 13);
	post_sink(t.b, dst, (size_t)N * SZ, &rb);
	for (int i = 0; i < N; i++)
		put_ack(t.a, t.nb, &ra[i], src + (size_t)i * SZ, SZ, (unsigned)i * SZ);
	for (int k = 0; k < 100000 && memlnd_pump(t.net) > 0; k++)
		ulnet_progress(t.r, 0);
	assert_int_equal(rb.nput, N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(ra[i].nack, 1);
		assert_int_equal(ra[i].status, 0);
	}
	assert_memory_equal(src, dst, (size_t)N * SZ);
	assert_int_equal(ulnet_routing_info(t.r, &info), 0);
	assert_int_equal(info.pool[ULNET_RTR_POOL_LARGE].nbuffers, 4);
	assert_int_equal(info.pool[ULNET_RTR_POOL_LARGE].credits, 4);
	/* PUTs did wait for a buffer (and none was lost doing so) */
	assert_true(info.pool[ULNET_RTR_POOL_LARGE].mincredits < 0);
	three_down(&t);
	free(src);
	free(dst);
}

/* Progress the three nodes and deliver until quiet. */
static void settle(struct three *t)
{
	for (int k = 0; k < 50; k++) {
		int n = memlnd_pump(t->net);

		n += ulnet_progress(t->a, 0) > 0;
		n += ulnet_progress(t->r, 0) > 0;
		n += ulnet_progress(t->b, 0) > 0;
		if (n == 0 && memlnd_queued(t->net) == 0)
			break;
	}
}

static bool route_alive(ulnet_t *ln, bool *single_hop)
{
	struct ulnet_route_info ri;

	assert_int_equal(ulnet_route_info(ln, 0, &ri), 0);
	if (single_hop)
		*single_hop = ri.single_hop;
	return ri.alive;
}

/* The router checker: A discovers its gateway each interval. While R is
 * starting up it says "routing disabled": the route goes down and sends
 * fail at once. When R's start-up phase ends it pushes its ping info: the
 * route is up again (single-hop: R lists an NI on the remote net) and
 * traffic flows. A gateway that stops answering takes its route down at
 * the next check. */
static void test_router_checker(void **state)
{
	(void)state;
	struct three t;
	uint8_t src[32] = { 5 }, dst[32];
	struct rx ra = { 0 }, rb = { 0 }, rc2 = { 0 };
	bool single;

	three_up(&t, true);
	post_sink(t.b, dst, sizeof(dst), &rb);
	assert_true(route_alive(t.a, NULL));            /* until checked */
	logs[0] = '\0';
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_false(route_alive(t.a, &single));
	assert_true(single);
	assert_non_null(strstr(logs, "has gone from up to down (the gateway's routing is off)"));
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(rb.nput, 0);
	assert_int_equal(ra.status, -EHOSTUNREACH);

	/* R's start-up phase ends: it pushes, A's route comes up */
	fake_now += (ULNET_RTR_STARTUP_S + 1) * 1000000000ULL;
	settle(&t);
	assert_true(route_alive(t.a, &single));
	assert_true(single);
	assert_non_null(strstr(logs, "has gone from down to up"));
	/* A knows R's NI on the remote net too: no credits there (A has no
	 * NI on it), as the kernel shows */
	struct ulnet_peer_info pi;
	int seen = 0;

	for (int i = 0; ulnet_peer_info(t.a, i, &pi) == 0; i++)
		for (int j = 0; j < pi.nnis; j++)
			if (ulnet_nid_same(&pi.nis[j].nid, &t.rb)) {
				assert_int_equal(pi.nis[j].max_tx_credits, 0);
				assert_int_equal(pi.nis[j].available_rtr_credits, 0);
				seen++;
			}
	assert_int_equal(seen, 1);
	/* R's state as the kernel shows a discovered router: 0x20115
	 * (RTR_DISCOVERED, NIDS_UPTODATE, DISCOVERED, ROUTER_ENABLED,
	 * MULTI_RAIL) */
	for (int i = 0; ulnet_peer_info(t.a, i, &pi) == 0; i++)
		if (ulnet_nid_same(&pi.primary, &t.ra))
			assert_int_equal(pi.state, 0x20115);
	memset(&ra, 0, sizeof(ra));
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(rb.nput, 1);
	assert_int_equal(ra.nack, 1);
	assert_int_equal(ra.status, 0);

	/* R stops answering: down at the next check, after its timeout */
	memlnd_fail_nid(t.net, &t.ra, -ECONNREFUSED);
	fake_now += (LNET_RTR_CHECK_INTERVAL_S + 1) * 1000000000ULL;
	settle(&t);
	fake_now += 200 * 1000000000ULL;
	settle(&t);
	assert_false(route_alive(t.a, NULL));
	assert_non_null(strstr(logs, "(the gateway did not answer)"));
	put_ack(t.a, t.nb, &rc2, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(rc2.status, -EHOSTUNREACH);
	memlnd_fail_nid(t.net, &t.ra, 0);
	three_down(&t);
}

static void set_drop_asym(ulnet_t *ln, int on)
{
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.drop_asym_route = on;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
}

/* drop_asym_route: a message routed to us through a gateway we would not
 * use to reach its source's net is dropped (a log line, a count); through
 * one we would use, or with the setting off, it is taken. */
static void test_drop_asym_route(void **state)
{
	(void)state;
	struct three t;
	uint8_t src[8] = { 9 }, dst[8];
	struct rx rb = { 0 }, ra = { 0 };
	struct ulnet_counters c;
	ulnet_nid_t g5 = nid_on(GNI, 5);

	three_up(&t, false);
	post_sink(t.a, dst, sizeof(dst), &ra);
	/* A reaches gni1 through 5@gni, not R */
	assert_int_equal(ulnet_route_del(t.a, GNI1, &t.ra), 1);
	assert_int_equal(route_add(t.a, GNI1, g5, -1, 0), 0);
	set_drop_asym(t.a, 1);
	logs[0] = '\0';
	put_ack(t.b, t.na, &rb, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(ra.nput, 0);
	assert_non_null(strstr(logs, "dropping asymmetrical route PUT"));
	ulnet_counters_get(t.a, &c);
	assert_int_equal(c.drop_count, 1);
	/* through R as well: symmetric, taken (and ACKed back through R) */
	assert_int_equal(route_add(t.a, GNI1, t.ra, -1, 1), 0);
	memset(&rb, 0, sizeof(rb));
	put_ack(t.b, t.na, &rb, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(ra.nput, 1);
	assert_int_equal(rb.nack, 1);
	/* off: taken whatever the routes */
	assert_int_equal(ulnet_route_del(t.a, GNI1, &t.ra), 1);
	set_drop_asym(t.a, 0);
	put_ack(t.b, t.na, &rb, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(ra.nput, 2);
	three_down(&t);
}

/* A gateway that fails (its connection reset): the PUT is resent through
 * the other gateway and arrives, its ACK comes back; with the only gateway
 * gone, the PUT ends with an error event, nothing left waiting. */
static void test_gateway_dies(void **state)
{
	(void)state;
	struct three t;
	ulnet_t *r2 = mk();
	ulnet_nid_t g2a = nid_on(GNI, 5), g2b = nid_on(GNI1, 6);
	uint8_t src[64] = { 3 }, dst[64];
	struct rx ra = { 0 }, rb = { 0 };
	struct ulnet_counters c;

	three_up(&t, false);
	add_ni(t.net, r2, GNI, 5);
	add_ni(t.net, r2, GNI1, 6);
	set_discovery(r2, 0);
	assert_int_equal(ulnet_routing_set(r2, true), 0);
	assert_int_equal(route_add(t.a, GNI1, g2a, -1, 0), 0);
	assert_int_equal(route_add(t.b, GNI, g2b, -1, 0), 0);
	post_sink(t.b, dst, sizeof(dst), &rb);
	/* R dies: sends to it are reset; A's first choice alternates */
	memlnd_fail_nid(t.net, &t.ra, -ECONNRESET);
	memlnd_fail_nid(t.net, &t.rb, -ECONNRESET);
	for (int i = 0; i < 4; i++) {
		memset(&ra, 0, sizeof(ra));
		put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
		for (int k = 0; k < 20; k++) {
			memlnd_pump(t.net);
			ulnet_progress(t.a, 0);
			ulnet_progress(r2, 0);
			ulnet_progress(t.b, 0);
		}
		assert_int_equal(ra.nack, 1);
		assert_int_equal(ra.status, 0);
	}
	assert_int_equal(rb.nput, 4);
	ulnet_counters_get(t.a, &c);
	assert_true(c.resend_count >= 1);
	/* R2 dies too: no gateway left; the PUT ends with an error */
	memlnd_fail_nid(t.net, &g2a, -ECONNRESET);
	memset(&ra, 0, sizeof(ra));
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	for (int k = 0; k < 20; k++) {
		memlnd_pump(t.net);
		ulnet_progress(t.a, 0);
	}
	fake_now += 200 * 1000000000ULL;   /* past the ACK's tracker */
	ulnet_progress(t.a, 0);
	assert_int_equal(ra.nunlink, 1);
	assert_true(ra.status != 0);
	ulnet_counters_get(t.a, &c);
	assert_int_equal(c.msgs_alloc, 0);
	assert_int_equal(c.rst_alloc, 0);
	memlnd_fail_nid(t.net, &t.ra, 0);
	memlnd_fail_nid(t.net, &t.rb, 0);
	memlnd_fail_nid(t.net, &g2a, 0);
	ulnet_destroy(r2);
	three_down(&t);
}

/* R's state of the peer NI `nid` in its peer list (1 up, 0 down, -1 NA),
 * or -2 when it has none. */
static int peer_ni_state(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct ulnet_peer_info info;

	for (int i = 0; ulnet_peer_info(ln, i, &info) == 0; i++)
		for (int k = 0; k < info.nnis; k++)
			if (ulnet_nid_same(&info.nis[k].nid, nid))
				return info.nis[k].state;
	return -2;
}

/* Peer aliveness on a router: B's LND reports it failed, and R drops what
 * it would forward to B (a log line, drop_count) while A's PUT ends; a
 * message from B brings it back up, and forwarding resumes. A node that
 * is no router shows a state for its gateways only, NA for other peers. */
static void test_forward_peer_not_alive(void **state)
{
	(void)state;
	struct three t;
	uint8_t src[16] = { 9 }, dst[16];
	struct rx ra = { 0 }, rb = { 0 }, rr = { 0 };
	struct ulnet_counters c;
	struct lnet_ni *rni;

	three_up(&t, false);
	post_sink(t.b, dst, sizeof(dst), &rb);
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	memlnd_pump(t.net);
	assert_int_equal(rb.nput, 1);
	assert_int_equal(peer_ni_state(t.r, &t.nb), 1);
	/* B is no router: its gateway has a state, the peer behind it NA */
	assert_int_equal(peer_ni_state(t.b, &t.rb), 1);
	assert_int_equal(peer_ni_state(t.b, &t.na), -1);

	lnet_lock(t.r);
	rni = lnet_nid2ni_walk_locked(t.r, &t.rb);
	lnet_unlock(t.r);
	assert_non_null(rni);
	lnet_notify_peer_ni(rni, &t.nb, -ECONNRESET);
	assert_int_equal(peer_ni_state(t.r, &t.nb), 0);
	logs[0] = '\0';
	memset(&ra, 0, sizeof(ra));
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	memlnd_pump(t.net);
	assert_int_equal(rb.nput, 1);
	assert_non_null(strstr(logs, "not alive"));
	ulnet_counters_get(t.r, &c);
	assert_int_equal(c.drop_count, 1);

	/* B speaks to R (a PUT to A through it): alive again */
	post_sink(t.a, dst, sizeof(dst), &rr);
	put_ack(t.b, t.na, &rr, src, sizeof(src), 0);
	memlnd_pump(t.net);
	assert_int_equal(peer_ni_state(t.r, &t.nb), 1);
	memset(&ra, 0, sizeof(ra));
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	memlnd_pump(t.net);
	assert_int_equal(rb.nput, 2);
	assert_int_equal(ra.nack, 1);
	three_down(&t);
}

/* Forwarding at once (the kernel's forwarding=enabled at start): no
 * start-up phase; refused while stopping. */
static void test_routing_enable_now(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *r = mk();
	struct ulnet_routing_info info;

	add_ni(net, r, GNI, 3);
	assert_int_equal(ulnet_routing_info(r, &info), 0);
	assert_false(info.pools);
	assert_int_equal(info.state, ULNET_ROUTING_DISABLED);
	assert_int_equal(ulnet_routing_enable_now(r), 0);
	assert_int_equal(ulnet_routing_info(r, &info), 0);
	assert_true(info.pools);
	assert_int_equal(info.state, ULNET_ROUTING_ENABLED);
	assert_int_equal(ulnet_routing_set(r, false), 0);
	assert_int_equal(ulnet_routing_enable_now(r), -EBUSY);
	assert_int_equal(ulnet_routing_set(r, true), -EBUSY);
	ulnet_destroy(r);
	memlnd_net_destroy(net);
}

/* A router reports a net down when no node there pinged it for 110 s; a
 * node whose single-hop route leads to that net takes the route down when
 * the router pushes the change, and up again once a node on the net pings
 * the router. */
static void test_router_net_down(void **state)
{
	(void)state;
	struct three t;
	bool single;

	three_up(&t, true);
	assert_int_equal(ulnet_routing_enable_now(t.r), 0);
	/* B does not ping R (no route), A does (its router checker) */
	assert_int_equal(ulnet_route_del(t.b, GNI, &t.rb), 1);
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_true(route_alive(t.a, &single));
	assert_true(single);
	logs[0] = '\0';
	for (int i = 0; i < 5; i++) {   /* 125 s, A's checks going on */
		fake_now += 25 * 1000000000ULL;
		settle(&t);
	}
	assert_non_null(strstr(logs, "4@gni1: no router ping on its net for 110s: reported down"));
	assert_null(strstr(logs, "3@gni: no router ping"));   /* A's net: pinged */
	assert_false(route_alive(t.a, NULL));
	/* B pings R again: the net is up, and so is A's route */
	assert_int_equal(route_add(t.b, GNI, t.rb, -1, 0), 0);
	for (int i = 0; i < 3; i++) {
		fake_now += 1000000000ULL;
		settle(&t);
	}
	assert_true(route_alive(t.a, NULL));
	three_down(&t);
}

/* GETs `ln` has sent to the peer NI `nid` */
static uint64_t gets_to(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct ulnet_peer_info info;

	for (int i = 0; ulnet_peer_info(ln, i, &info) == 0; i++)
		for (int k = 0; k < info.nnis; k++)
			if (ulnet_nid_same(&info.nis[k].nid, nid))
				return info.nis[k].sent.n[ULNET_MSG_GET];
	return 0;
}

/* PUTs from A whose header names `to` as their destination, in the
 * trace (each counted on its first hop, to R). */
static int puts_for(struct memlnd_net *net, const ulnet_nid_t *gw, const ulnet_nid_t *to)
{
	struct memlnd_trace_ent tr[64];
	int n = memlnd_trace(net, tr, 64), k = 0;

	for (int i = 0; i < n && i < 64; i++)
		if (tr[i].hdr.type == ULNET_MSG_PUT && ulnet_nid_same(&tr[i].hop, gw) &&
		    ulnet_nid_same(&tr[i].hdr.dest_nid, to))
			k++;
	return k;
}

/* Multi-Rail across routers: B has NIs on two nets that R leads to; A's
 * PUTs to B alternate between them (the header's destination is the NI
 * chosen), and go to the healthier one only once the other's health
 * drops. */
static void test_routed_multi_rail(void **state)
{
	(void)state;
	struct three t;
	ulnet_nid_t rc2 = nid_on(GNI2, 5), nb2 = nid_on(GNI2, 6);
	uint8_t src[16] = { 4 }, dst[16];
	struct rx ra = { 0 }, rb = { 0 };
	struct ulnet_peer_info pi;

	three_up(&t, true);
	add_ni(t.net, t.r, GNI2, 5);
	add_ni(t.net, t.b, GNI2, 6);
	assert_int_equal(ulnet_routing_enable_now(t.r), 0);
	assert_int_equal(route_add(t.a, GNI2, t.ra, -1, 0), 0);
	assert_int_equal(route_add(t.b, GNI, rc2, -1, 0), 0);
	post_sink(t.b, dst, sizeof(dst), &rb);
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	/* A discovers B through R: Multi-Rail, both NIs */
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(rb.nput, 1);
	{
		int found = 0;

		for (int i = 0; ulnet_peer_info(t.a, i, &pi) == 0; i++)
			for (int k = 0; k < pi.nnis; k++)
				if (ulnet_nid_same(&pi.nis[k].nid, &nb2)) {
					assert_true(pi.multi_rail);
					found = 1;
				}
		assert_int_equal(found, 1);
	}
	memlnd_trace_clear(t.net);
	for (int i = 0; i < 4; i++) {
		memset(&ra, 0, sizeof(ra));
		put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
		settle(&t);
		assert_int_equal(ra.nack, 1);
	}
	assert_int_equal(rb.nput, 5);
	assert_int_equal(puts_for(t.net, &t.ra, &t.nb), 2);
	assert_int_equal(puts_for(t.net, &t.ra, &nb2), 2);
	/* B's NI on gni2 less healthy: all to gni1 */
	assert_int_equal(ulnet_peer_ni_set_health(t.a, &nb2, 500), 0);
	memlnd_trace_clear(t.net);
	for (int i = 0; i < 4; i++) {
		memset(&ra, 0, sizeof(ra));
		put_ack(t.a, nb2, &ra, src, sizeof(src), 0);
		settle(&t);
		assert_int_equal(ra.nack, 1);
	}
	assert_int_equal(puts_for(t.net, &t.ra, &t.nb), 4);
	assert_int_equal(puts_for(t.net, &t.ra, &nb2), 0);
	three_down(&t);
}

/* Fault rules on a router act on what it forwards: a drop rule loses the
 * first PUT there (B never sees it, nor A its ACK), a delay rule holds the
 * next one for its latency as it arrives and as it leaves, then it goes on
 * to B. */
static void test_fault_on_router(void **state)
{
	(void)state;
	struct three t;
	uint8_t src[16] = { 6 }, dst[16];
	struct rx ra = { 0 }, rb = { 0 };
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;

	three_up(&t, false);
	assert_int_equal(ulnet_routing_enable_now(t.r), 0);
	post_sink(t.b, dst, sizeof(dst), &rb);
	memset(&r, 0, sizeof(r));
	r.src = r.dst = r.local = ULNET_NID_ANY;
	r.rate = 2;
	r.msg_mask = ULNET_FAULT_MSG_BIT(ULNET_MSG_PUT);
	assert_int_equal(ulnet_fault_add(t.r, ULNET_FAULT_DROP, &r), 0);
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(rb.nput, 0);
	assert_int_equal(ra.nack, 0);
	assert_int_equal(ulnet_fault_list(t.r, ULNET_FAULT_DROP, 0, NULL, &st), 0);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(ulnet_fault_del(t.r, ULNET_FAULT_DROP, NULL, NULL), 1);

	r.rate = 1;
	r.latency = 2;
	assert_int_equal(ulnet_fault_add(t.r, ULNET_FAULT_DELAY, &r), 0);
	memset(&ra, 0, sizeof(ra));
	put_ack(t.a, t.nb, &ra, src, sizeof(src), 0);
	settle(&t);
	assert_int_equal(rb.nput, 0);
	/* held as it arrives, then again as it is sent on (the kernel
	 * matches delay rules at both points): 2 s each */
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_int_equal(rb.nput, 0);
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_int_equal(rb.nput, 1);
	assert_int_equal(ra.nack, 1);
	assert_int_equal(ulnet_fault_list(t.r, ULNET_FAULT_DELAY, 0, NULL, &st), 0);
	assert_int_equal(st.delayed, 2);
	three_down(&t);
}

static void params_set(ulnet_t *ln, int interval, int timeout, bool before_use, bool asym)
{
	struct ulnet_router_params p;

	assert_int_equal(ulnet_router_params_get(ln, &p), 0);
	p.alive_router_check_interval = interval;
	p.router_ping_timeout = timeout;
	p.check_routers_before_use = before_use;
	p.avoid_asym_router_failure = asym;
	assert_int_equal(ulnet_router_params_set(ln, &p), 0);
}

/* The router parameters (the kernel's module parameters) take effect:
 * the phases last alive_router_check_interval + router_ping_timeout; with
 * check_routers_before_use a new route is down until its first check;
 * without avoid_asym_router_failure a single-hop route stays up when the
 * gateway's NI on the remote net is down. */
static void test_router_params(void **state)
{
	(void)state;
	struct three t;
	struct ulnet_router_params p;
	struct ulnet_routing_info ri;
	bool single;

	three_up(&t, true);
	assert_int_equal(ulnet_router_params_get(t.a, &p), 0);
	assert_int_equal(p.alive_router_check_interval, 60);
	assert_int_equal(p.router_ping_timeout, 50);
	assert_false(p.check_routers_before_use);
	assert_true(p.avoid_asym_router_failure);
	p.router_ping_timeout = -1;
	assert_int_equal(ulnet_router_params_set(t.a, &p), -EINVAL);

	/* R: 20 + 10 s phases */
	params_set(t.r, 20, 10, false, true);
	logs[0] = '\0';
	assert_int_equal(ulnet_routing_set(t.r, false), 0);
	fake_now += 29 * 1000000000ULL;
	settle(&t);
	assert_int_equal(ulnet_routing_info(t.r, &ri), 0);
	assert_int_equal(ri.state, ULNET_ROUTING_STOPPING);
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_int_equal(ulnet_routing_info(t.r, &ri), 0);
	assert_int_equal(ri.state, ULNET_ROUTING_DISABLED);
	assert_int_equal(ulnet_routing_set(t.r, true), 0);
	fake_now += 29 * 1000000000ULL;
	settle(&t);
	assert_int_equal(ulnet_routing_info(t.r, &ri), 0);
	assert_int_equal(ri.state, ULNET_ROUTING_STARTING);
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_int_equal(ulnet_routing_info(t.r, &ri), 0);
	assert_int_equal(ri.state, ULNET_ROUTING_ENABLED);

	/* B pings R no more: R reports B's net down after 30 s; A's
	 * single-hop route stays up without avoid_asym_router_failure */
	params_set(t.a, 5, 50, false, false);
	assert_int_equal(ulnet_route_del(t.b, GNI, &t.rb), 1);
	logs[0] = '\0';
	for (int i = 0; i < 8; i++) {
		fake_now += 5 * 1000000000ULL;
		settle(&t);
	}
	assert_non_null(strstr(logs, "4@gni1: no router ping on its net for 30s: reported down"));
	assert_true(route_alive(t.a, NULL));
	/* with it, the same ping info takes the route down at the next check
	 * (within the interval in force at the last one, 60 s) */
	params_set(t.a, 5, 50, false, true);
	for (int i = 0; i < 13; i++) {
		fake_now += 5 * 1000000000ULL;
		settle(&t);
	}
	assert_false(route_alive(t.a, NULL));
	/* and from then on A checks R every 5 s: 4 pings in 20 s */
	uint64_t gets0 = gets_to(t.a, &t.ra);

	for (int i = 0; i < 4; i++) {
		fake_now += 5 * 1000000000ULL;
		settle(&t);
	}
	assert_int_equal(gets_to(t.a, &t.ra) - gets0, 4);

	/* B's net back; A checks routers before use: a new route is down
	 * until its first check */
	assert_int_equal(route_add(t.b, GNI, t.rb, -1, 0), 0);
	for (int i = 0; i < 3; i++) {
		fake_now += 1000000000ULL;
		settle(&t);
	}
	params_set(t.a, 60, 50, true, true);
	assert_int_equal(ulnet_route_del(t.a, GNI1, &t.ra), 1);
	assert_int_equal(route_add(t.a, GNI1, t.ra, -1, 0), 0);
	assert_false(route_alive(t.a, NULL));
	fake_now += 2 * 1000000000ULL;
	settle(&t);
	assert_true(route_alive(t.a, &single));
	assert_true(single);
	three_down(&t);
}

/* A forwarded message waiting at the router for a credit is never dropped
 * for its age (the kernel skips the deadline of routed messages): R has one
 * credit towards B, three PUTs come, 200 s pass with the first one still
 * on the wire; all three arrive. */
static void test_forward_no_deadline(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = mk(), *r = mk(), *b = mk();
	ulnet_nid_t nb = nid_on(GNI1, 2), ra = nid_on(GNI, 3), rb_ = nid_on(GNI1, 4);
	struct ulnet_ni_conf c;
	uint8_t src[3][16] = { { 1 }, { 2 }, { 3 } }, dst[64];
	struct rx ra3[3], rb = { 0 };
	struct ulnet_counters cn;

	memset(ra3, 0, sizeof(ra3));
	add_ni(net, a, GNI, 1);
	add_ni(net, r, GNI, 3);
	memset(&c, 0, sizeof(c));
	c.nid = rb_;
	c.tun.peer_credits = 1;   /* R -> B: one message at a time */
	assert_int_equal(memlnd_add_ni_conf(net, r, &c), 0);
	add_ni(net, b, GNI1, 2);
	set_discovery(a, 0);
	set_discovery(r, 0);
	set_discovery(b, 0);
	assert_int_equal(route_add(a, GNI1, ra, -1, 0), 0);
	assert_int_equal(route_add(b, GNI, rb_, -1, 0), 0);
	assert_int_equal(ulnet_routing_enable_now(r), 0);
	post_sink(b, dst, sizeof(dst), &rb);
	for (int i = 0; i < 3; i++)
		put_ack(a, nb, &ra3[i], src[i], sizeof(src[i]), (unsigned)i * 16);
	for (int i = 0; i < 3; i++)
		assert_int_equal(memlnd_pump_one(net), 1);   /* A -> R: R forwards one */
	assert_int_equal(memlnd_queued(net), 1);
	fake_now += 200 * 1000000000ULL;
	ulnet_progress(r, 0);
	memlnd_pump(net);
	assert_int_equal(rb.nput, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ra3[i].nack, 1);
	ulnet_counters_get(r, &cn);
	assert_int_equal(cn.drop_count, 0);
	assert_int_equal(cn.route_count, 6);
	ulnet_destroy(a);
	ulnet_destroy(r);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_add_checks),
		cmocka_unit_test(test_routed_put_header),
		cmocka_unit_test(test_route_choice),
		cmocka_unit_test(test_forward_put_ack),
		cmocka_unit_test(test_routed_rdma_get),
		cmocka_unit_test(test_forward_off_drops),
		cmocka_unit_test(test_forward_waits_for_buffers),
		cmocka_unit_test(test_router_checker),
		cmocka_unit_test(test_drop_asym_route),
		cmocka_unit_test(test_gateway_dies),
		cmocka_unit_test(test_routing_enable_now),
		cmocka_unit_test(test_router_net_down),
		cmocka_unit_test(test_forward_no_deadline),
		cmocka_unit_test(test_forward_peer_not_alive),
		cmocka_unit_test(test_router_params),
		cmocka_unit_test(test_routed_multi_rail),
		cmocka_unit_test(test_fault_on_router),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
