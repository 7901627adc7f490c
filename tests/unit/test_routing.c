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
#include <string.h>

#include "fake_node.h"
#include "memlnd.h"
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
	/* no NI of ours on the only gateway's net: no route */
	ulnet_destroy(a);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_add_checks),
		cmocka_unit_test(test_routed_put_header),
		cmocka_unit_test(test_route_choice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
