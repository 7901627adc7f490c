/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_yaml.c - golden tests of ulnetctl's YAML. The info structs are
 * filled with the values of the real lnetctl 2.17 captures in
 * shared/reference/lnetctl-yaml, and tests/golden/ holds those captures
 * (minus the "# ..." lines), so every comparison is against lnetctl's own
 * bytes, peer NI latency samples included.
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

#include "ctl_cmds.h"
#include "ctl_render.h"
#include "ctl_test.h"
#include "yaml_out.h"

/* The latency figures the YAML shows (the buckets and sum it does not). */
#define LAT(n, mn, mx, av) \
	((struct ulnet_latency){ .samples = (n), .min_nsec = (mn), .max_nsec = (mx), .avg_nsec = (av) })

static ulnet_nid_t tcp_nid(unsigned a, unsigned b, unsigned c, unsigned d)
{
	ulnet_nid_t n;

	memset(&n, 0, sizeof(n));
	n.type = ULNET_LND_TCP;
	n.addr[0] = (uint8_t)a;
	n.addr[1] = (uint8_t)b;
	n.addr[2] = (uint8_t)c;
	n.addr[3] = (uint8_t)d;
	return n;
}

static void fill_nis(struct ulnet_ni_info ni[2])
{
	memset(ni, 0, 2 * sizeof(*ni));
	ni[0].nid = ULNET_NID_LO0;
	ni[0].up = true;
	ni[0].dev_cpt = -1;
	/* no UDSP rule names them */
	ni[0].udsp_net_prio = ni[0].udsp_nid_prio = UINT32_MAX;
	ni[1].udsp_net_prio = ni[1].udsp_nid_prio = UINT32_MAX;
	ni[1].nid = tcp_nid(192, 168, 77, 11);
	ni[1].up = true;
	strcpy(ni[1].iface, "eth0");
	ni[1].send_count = 68;
	ni[1].recv_count = 71;
	ni[1].put_egress = LAT(53, 84926, 4843859, 748840);
	ni[1].get_rtt = LAT(6, 416992, 83533584, 16232192);
	ni[1].put_ack = LAT(2, 1791243, 13431092, 7611167);
	ni[1].sent.n[ULNET_MSG_PUT] = 55;
	ni[1].sent.n[ULNET_MSG_GET] = 13;
	ni[1].received.n[ULNET_MSG_PUT] = 56;
	ni[1].received.n[ULNET_MSG_GET] = 7;
	ni[1].received.n[ULNET_MSG_REPLY] = 6;
	ni[1].received.n[ULNET_MSG_ACK] = 2;
	ni[1].health.health_value = 1000;
	ni[1].tun = (struct ulnet_ni_tunables){ 180, 8, 0, 256, 1, -1 };
	ni[1].lnd_timeout = 50;
	ni[1].dev_cpt = -1;
}

static void fill_peer(struct ulnet_peer_info *p, unsigned last, uint64_t send, uint64_t recv,
		      uint64_t sput, uint64_t sget, uint64_t rput, uint64_t rget, uint64_t rrep,
		      uint64_t rack)
{
	memset(p, 0, sizeof(*p));
	p->primary = tcp_nid(192, 168, 77, last);
	p->multi_rail = true;
	p->state = 273;
	p->nnis = 1;
	struct ulnet_peer_ni_info *n = &p->nis[0];

	n->nid = p->primary;
	n->state = -1;
	n->udsp_net_prio = n->udsp_nid_prio = UINT32_MAX;
	n->max_tx_credits = 8;
	n->available_tx_credits = 8;
	n->min_tx_credits = 6;
	n->available_rtr_credits = 8;
	n->min_rtr_credits = 8;
	n->refcount = 1;
	n->send_count = send;
	n->recv_count = recv;
	n->sent.n[ULNET_MSG_PUT] = sput;
	n->sent.n[ULNET_MSG_GET] = sget;
	n->received.n[ULNET_MSG_PUT] = rput;
	n->received.n[ULNET_MSG_GET] = rget;
	n->received.n[ULNET_MSG_REPLY] = rrep;
	n->received.n[ULNET_MSG_ACK] = rack;
	n->health.health_value = 1000;
}

static void fill_peers(struct ulnet_peer_info p[2])
{
	fill_peer(&p[0], 12, 26, 29, 21, 5, 23, 3, 2, 1);
	fill_peer(&p[1], 11, 42, 42, 34, 8, 33, 4, 4, 1);
	/* the capture's per-peer-NI latency samples (non-zero) */
	p[0].nis[0].put_egress = LAT(20, 200539, 4843859, 1320801);
	p[0].nis[0].get_rtt = LAT(2, 3800422, 83533584, 43667003);
	p[0].nis[0].put_ack = LAT(1, 13431092, 13431092, 13431092);
	p[1].nis[0].put_egress = LAT(33, 84926, 1792255, 402197);
	p[1].nis[0].get_rtt = LAT(4, 416992, 8650759, 2514787);
	p[1].nis[0].put_ack = LAT(1, 1791243, 1791243, 1791243);
}

static void fill_globals(struct ulnet_globals *g)
{
	*g = (struct ulnet_globals){ .numa_range = 0, .max_interfaces = 4096, .discovery = 1,
				    .drop_asym_route = 0, .retry_count = 2,
				    .transaction_timeout = 150, .health_sensitivity = 100,
				    .recovery_interval = 1, .router_sensitivity = 100,
				    .response_tracking = 3, .recovery_limit = 0,
				    .max_recovery_ping_interval = 900 };
}

static void test_net_show_levels(void **state)
{
	(void)state;
	struct ulnet_ni_info ni[2];
	static const char *const g[] = { "net-show.yaml", "net-show-v1.yaml", "net-show-v2.yaml",
					 "net-show-v3.yaml", "net-show-v4.yaml" };

	fill_nis(ni);
	for (int v = 0; v <= 4; v++) {
		struct ybuf b;

		ybuf_init(&b);
		ctl_render_net_show(&b, ni, 2, v, NULL);
		ctl_check_golden(g[v], &b);
		ybuf_free(&b);
	}
}

static void test_net_show_filter(void **state)
{
	(void)state;
	struct ulnet_ni_info ni[2];
	struct ybuf b;
	ulnet_net_t tcp = ulnet_mknet(ULNET_LND_TCP, 0), tcp9 = ulnet_mknet(ULNET_LND_TCP, 9);

	fill_nis(ni);
	ybuf_init(&b);
	ctl_render_net_show(&b, ni, 2, 0, &tcp);
	assert_string_equal(ybuf_str(&b), "net:\n-     net type: tcp\n      local NI(s):\n"
			    "      -     nid: 192.168.77.11@tcp\n            status: up\n"
			    "            interfaces:\n                  0: eth0\n");
	ybuf_reset(&b);
	ctl_render_net_show(&b, ni, 2, 0, &tcp9);
	assert_string_equal(ybuf_str(&b), "");
	ybuf_free(&b);
}

static void test_peer_show_levels(void **state)
{
	(void)state;
	struct ulnet_peer_info p[2];
	static const char *const g[] = { "peer-show.yaml", "peer-show-v1.yaml", "peer-show-v2.yaml",
					 "peer-show-v3.yaml", "peer-show-v4.yaml" };

	fill_peers(p);
	for (int v = 0; v <= 4; v++) {
		struct ybuf b;

		ybuf_init(&b);
		ctl_render_peer_show(&b, p, 2, v);
		ctl_check_golden(g[v], &b);
		ybuf_free(&b);
	}
}

static void test_peer_list(void **state)
{
	(void)state;
	struct ulnet_peer_info p[2];
	struct ybuf b;

	fill_peers(p);
	ybuf_init(&b);
	ctl_render_peer_list(&b, p, 2);
	assert_string_equal(ybuf_str(&b),
			    "peer list:\n-     nid: 192.168.77.12@tcp\n-     nid: 192.168.77.11@tcp\n");
	ybuf_reset(&b);
	ctl_render_peer_show(&b, p, 0, 1);
	assert_string_equal(ybuf_str(&b), "");
	ybuf_free(&b);
}

static void test_stats_global(void **state)
{
	(void)state;
	struct ulnet_counters c;
	struct ulnet_globals g;
	struct ybuf b;

	memset(&c, 0, sizeof(c));
	c.msgs_max = 3;
	c.rst_alloc = 8;
	c.send_count = 68;
	c.recv_count = 71;
	c.send_length = 204948;
	c.recv_length = 20724;
	ybuf_init(&b);
	ctl_render_stats(&b, &c);
	ctl_check_golden("stats-show.yaml", &b);
	ybuf_reset(&b);
	fill_globals(&g);
	ctl_render_global(&b, &g);
	ctl_check_golden("global-show.yaml", &b);
	ybuf_free(&b);
}

static void test_export(void **state)
{
	(void)state;
	struct ulnet_ni_info ni[2];
	struct ulnet_peer_info p[2];
	struct ulnet_globals g;
	struct ybuf b;

	fill_nis(ni);
	fill_peers(p);
	fill_globals(&g);
	ybuf_init(&b);
	ctl_render_export(&b, ni, 2, NULL, 0, p, 2, NULL, &g, false);
	ctl_check_golden("export.yaml", &b);
	ybuf_reset(&b);
	ctl_render_export(&b, ni, 2, NULL, 0, p, 2, NULL, &g, true);
	ctl_check_golden("export-backup.yaml", &b);
	ybuf_free(&b);
}

/* The nid of 192.168.77.D on net tcpNUM. */
static ulnet_nid_t tcpn_nid(unsigned d, unsigned num)
{
	ulnet_nid_t n = tcp_nid(192, 168, 77, d);

	n.num = (uint16_t)num;
	return n;
}

/* The routes of the captures: tcp1 through the router (up, single-hop),
 * tcp2 through the node's own NID (down) and through the router (up,
 * multi-hop). */
static void fill_routes(struct ulnet_route_info r[3])
{
	memset(r, 0, 3 * sizeof(*r));
	r[0] = (struct ulnet_route_info){ ulnet_mknet(ULNET_LND_TCP, 1), tcpn_nid(12, 0), -1, 0,
					  true, true };
	r[1] = (struct ulnet_route_info){ ulnet_mknet(ULNET_LND_TCP, 2), tcpn_nid(11, 0), -1, 0,
					  false, false };
	r[2] = (struct ulnet_route_info){ ulnet_mknet(ULNET_LND_TCP, 2), tcpn_nid(12, 0), -1, 0,
					  true, false };
}

/* route show and route show -v (state up/down, type single/multi-hop, hop
 * and priority as set), and nothing at all without routes. */
static void test_route_show(void **state)
{
	(void)state;
	struct ulnet_route_info r[3];
	struct ybuf b;

	fill_routes(r);
	ybuf_init(&b);
	ctl_render_route_show(&b, r, 3, false);
	ctl_check_golden("route-show.yaml", &b);
	ybuf_reset(&b);
	ctl_render_route_show(&b, r, 3, true);
	ctl_check_golden("route-show-v.yaml", &b);
	ybuf_reset(&b);
	/* --hop 2 --priority 3 */
	r[1] = r[2];
	r[1].hops = 2;
	r[1].priority = 3;
	ctl_render_route_show(&b, r, 2, true);
	ctl_check_golden("route-show-v-hop-prio.yaml", &b);
	ybuf_reset(&b);
	ctl_render_route_show(&b, r, 0, true);
	assert_string_equal(ybuf_str(&b), "");
	ybuf_free(&b);
}

/* A client with a route (lnetctl-export-client.txt): export puts route:
 * ("route show -v") between net: and peer:, export --backup without state
 * and type. */
static void test_export_client(void **state)
{
	(void)state;
	struct ulnet_ni_info ni[2];
	struct ulnet_route_info r[3];
	struct ulnet_peer_info *p = calloc(3, sizeof(*p));
	struct ulnet_globals g;
	struct ybuf b;

	assert_non_null(p);
	fill_nis(ni);
	ni[1].send_count = 4781;
	ni[1].recv_count = 4931;
	ni[1].drop_count = 9;
	ni[1].put_egress = LAT(3582, 103723, 27236072, 531812);
	ni[1].get_rtt = LAT(59, 400102, 2038116114, 265317277);
	ni[1].put_ack = LAT(23, 1290743, 14900317, 3815242);
	memset(&ni[1].sent, 0, sizeof(ni[1].sent));
	memset(&ni[1].received, 0, sizeof(ni[1].received));
	ni[1].sent.n[ULNET_MSG_PUT] = 3592;
	ni[1].sent.n[ULNET_MSG_GET] = 1189;
	ni[1].received.n[ULNET_MSG_PUT] = 3729;
	ni[1].received.n[ULNET_MSG_GET] = 1120;
	ni[1].received.n[ULNET_MSG_REPLY] = 59;
	ni[1].received.n[ULNET_MSG_ACK] = 23;
	ni[1].dropped.n[ULNET_MSG_REPLY] = 8;
	ni[1].dropped.n[ULNET_MSG_ACK] = 1;
	fill_routes(r);

	/* the router: its NI on our net, and its NI on tcp1 (no credits) */
	fill_peer(&p[0], 12, 4631, 4781, 3460, 1171, 3598, 1111, 50, 22);
	p[0].state = 131349;
	p[0].nis[0].state = 1;
	p[0].nis[0].put_egress = LAT(3451, 115130, 27236072, 524960);
	p[0].nis[0].get_rtt = LAT(50, 2372531, 2038116114, 312694274);
	p[0].nis[0].put_ack = LAT(22, 1290743, 14900317, 3859842);
	p[0].nis[0].health.next_ping = 1594;
	p[0].nnis = 2;
	memset(&p[0].nis[1], 0, sizeof(p[0].nis[1]));
	p[0].nis[1].nid = tcpn_nid(140, 1);
	p[0].nis[1].state = 1;
	p[0].nis[1].refcount = 2;
	p[0].nis[1].health.health_value = 1000;
	/* the server behind the router */
	fill_peer(&p[1], 141, 0, 0, 0, 0, 0, 0, 0, 0);
	p[1].primary = p[1].nis[0].nid = tcpn_nid(141, 1);
	p[1].nis[0].max_tx_credits = p[1].nis[0].available_tx_credits = 0;
	p[1].nis[0].min_tx_credits = p[1].nis[0].available_rtr_credits = 0;
	p[1].nis[0].min_rtr_credits = 0;
	p[1].nis[0].refcount = 2;
	/* its own NID (the route through it) */
	fill_peer(&p[2], 11, 150, 150, 132, 18, 131, 9, 9, 1);
	p[2].nis[0].put_egress = LAT(131, 103723, 17520629, 712336);
	p[2].nis[0].get_rtt = LAT(9, 400102, 14512252, 2111740);
	p[2].nis[0].put_ack = LAT(1, 2834025, 2834025, 2834025);
	fill_globals(&g);

	ybuf_init(&b);
	ctl_render_export(&b, ni, 2, r, 1, p, 3, NULL, &g, false);
	ctl_check_golden("export-client.yaml", &b);
	ybuf_reset(&b);
	ctl_render_export(&b, ni, 2, r, 1, p, 3, NULL, &g, true);
	ctl_check_golden("export-backup-client.yaml", &b);
	ybuf_free(&b);
	free(p);
}

/* The router's pools: one CPT, `mincredits` lower by `used`. */
static void fill_routing(struct ulnet_routing_info *ri, int state, int tiny, int small, int large,
			 int used)
{
	const int n[ULNET_RTR_NPOOLS] = { tiny, small, large }, npages[] = { 0, 1, 256 };

	memset(ri, 0, sizeof(*ri));
	ri->state = (enum ulnet_routing_state)state;
	ri->pools = true;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		ri->pool[i] = (struct ulnet_rtr_pool_info){ npages[i], n[i], n[i], n[i] - used };
}

/* routing show in each state of the captures: nothing before routing was
 * ever enabled, then the pools, "enable" and the buffers. */
static void test_routing_show(void **state)
{
	(void)state;
	struct ulnet_routing_info ri;
	struct ybuf b;

	ybuf_init(&b);
	memset(&ri, 0, sizeof(ri));
	ctl_render_routing(&b, &ri, false);
	ctl_check_golden("routing-show.yaml", &b);
	ctl_render_routing(&b, &ri, true);
	ctl_render_routing(&b, NULL, false);
	assert_string_equal(ybuf_str(&b), "");
	fill_routing(&ri, ULNET_ROUTING_STARTING, 2048, 16384, 1024, 0);
	ctl_render_routing(&b, &ri, false);
	ctl_check_golden("routing-show-starting.yaml", &b);
	ybuf_reset(&b);
	ri.state = ULNET_ROUTING_ENABLED;
	ctl_render_routing(&b, &ri, false);
	ctl_check_golden("routing-show-enabled.yaml", &b);
	ybuf_reset(&b);
	fill_routing(&ri, ULNET_ROUTING_ENABLED, 2048, 16384, 1024, 1);
	ctl_render_routing(&b, &ri, false);
	ctl_check_golden("routing-show-after-lst.yaml", &b);
	ybuf_reset(&b);
	fill_routing(&ri, ULNET_ROUTING_STOPPING, 4096, 20000, 1100, 0);
	ctl_render_routing(&b, &ri, false);
	ctl_check_golden("routing-show-stopping.yaml", &b);
	ybuf_reset(&b);
	/* export --backup: enable and buffers only */
	ctl_render_routing(&b, &ri, true);
	assert_string_equal(ybuf_str(&b), "routing:\n    enable: 2\nbuffers:\n    tiny: 4096\n"
			    "    small: 20000\n    large: 1100\n");
	ybuf_free(&b);
}

/* The router of the captures (lnetctl-export-router.txt and
 * lnetctl-export-backup-router.txt): routing: and buffers: after peer:,
 * before global:; its peers show the router credits it used. */
static void test_export_router(void **state)
{
	(void)state;
	struct ulnet_ni_info ni[3];
	struct ulnet_peer_info p[2];
	struct ulnet_routing_info ri;
	struct ulnet_globals g;
	struct ybuf b;

	fill_nis(ni);
	ni[1].nid = tcp_nid(192, 168, 77, 12);
	ni[1].send_count = 4792;
	ni[1].recv_count = 4633;
	ni[1].put_egress = LAT(8, 354599, 4253921, 1386981);
	ni[1].get_rtt = LAT(0, 0, 0, 0);
	ni[1].put_ack = LAT(8, 3725724, 14121411, 6812337);
	memset(&ni[1].sent, 0, sizeof(ni[1].sent));
	memset(&ni[1].received, 0, sizeof(ni[1].received));
	ni[1].sent.n[ULNET_MSG_PUT] = 3621;
	ni[1].sent.n[ULNET_MSG_GET] = 1166;
	ni[1].sent.n[ULNET_MSG_REPLY] = 4;
	ni[1].sent.n[ULNET_MSG_ACK] = 1;
	ni[1].received.n[ULNET_MSG_PUT] = 3452;
	ni[1].received.n[ULNET_MSG_GET] = 61;
	ni[1].received.n[ULNET_MSG_REPLY] = 1111;
	ni[1].received.n[ULNET_MSG_ACK] = 9;
	ni[2] = ni[1];
	ni[2].nid = tcpn_nid(140, 1);
	strcpy(ni[2].iface, "eth1");
	ni[2].send_count = 32;
	ni[2].recv_count = 32;
	ni[2].put_egress = LAT(3, 134280, 2218627, 1340937);
	ni[2].put_ack = LAT(3, 1743559, 12457264, 6706912);
	memset(&ni[2].sent, 0, sizeof(ni[2].sent));
	memset(&ni[2].received, 0, sizeof(ni[2].received));
	ni[2].sent.n[ULNET_MSG_PUT] = 16;
	ni[2].sent.n[ULNET_MSG_GET] = 15;
	ni[2].sent.n[ULNET_MSG_REPLY] = 1;
	ni[2].received.n[ULNET_MSG_PUT] = 13;
	ni[2].received.n[ULNET_MSG_GET] = 15;
	ni[2].received.n[ULNET_MSG_REPLY] = 1;
	ni[2].received.n[ULNET_MSG_ACK] = 3;

	/* the client and the server it routes for, with the counts of the
	 * capture (the peer NI's own, as lnetctl shows them) */
	for (int i = 0; i < 2; i++) {
		const struct ulnet_ni_info *n = &ni[1 + i];
		struct ulnet_peer_ni_info *pn = &p[i].nis[0];

		fill_peer(&p[i], 11, n->send_count, n->recv_count, 0, 0, 0, 0, 0, 0);
		pn->state = 1;
		pn->sent = n->sent;
		pn->received = n->received;
		pn->put_egress = n->put_egress;
		pn->get_rtt = n->get_rtt;
		pn->put_ack = n->put_ack;
		pn->min_rtr_credits = i == 0 ? 6 : 7;
	}
	p[1].primary = p[1].nis[0].nid = tcpn_nid(141, 1);
	fill_routing(&ri, ULNET_ROUTING_ENABLED, 2048, 16384, 1024, 1);
	fill_globals(&g);

	ybuf_init(&b);
	ctl_render_export(&b, ni, 3, NULL, 0, p, 2, &ri, &g, false);
	ctl_check_golden("export-router.yaml", &b);
	ybuf_reset(&b);
	ctl_render_export(&b, ni, 3, NULL, 0, p, 2, &ri, &g, true);
	ctl_check_golden("export-backup-router.yaml", &b);
	ybuf_free(&b);
}

static void test_ping(void **state)
{
	(void)state;
	struct ctl_ping_result r;
	struct ybuf b;

	memset(&r, 0, sizeof(r));
	r.target = tcp_nid(192, 168, 77, 11);
	r.peer.primary = r.target;
	r.peer.multi_rail = true;
	r.peer.nnids = 1;
	r.peer.nids[0] = r.target;
	ybuf_init(&b);
	ctl_render_ping(&b, "ping", &r, 1);
	ctl_check_golden("ping.yaml", &b);

	/* failures */
	struct {
		const char *what, *golden;
		int rc;
		ulnet_nid_t nid;
	} e[] = {
		{ "ping", "err-ping-noroute.yaml", -113, { 0, ULNET_LND_O2IB, 0, { 10, 0, 0, 1 } } },
		{ "ping", "err-ping-refused.yaml", -111, tcp_nid(192, 168, 77, 1) },
		{ "ping", "err-ping-timeout.yaml", -5, tcp_nid(192, 168, 77, 1) },
		{ "discover", "err-discover-refused.yaml", -5, tcp_nid(192, 168, 77, 1) },
	};
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.target = e[i].nid;
		r.rc = e[i].rc;
		ybuf_reset(&b);
		ctl_render_ping(&b, e[i].what, &r, 1);
		ctl_check_golden(e[i].golden, &b);
	}
	ybuf_free(&b);
}

static void test_error_shapes(void **state)
{
	(void)state;
	struct ybuf b;

	ybuf_init(&b);
	y_nl_error(&b, "add", "net", -EEXIST, "cannot add LNet NI");
	ctl_check_golden("err-net-add-dup.yaml", &b);
	ybuf_reset(&b);
	y_nl_error(&b, "add", "net", -ENETDOWN, "cannot add LNet NI");
	ctl_check_golden("err-net-add-badif.yaml", &b);
	ybuf_reset(&b);
	y_nl_error(&b, "manage", "ping", -EINVAL,
		   "\"Unable to parse nidlist: no valid NIDs in string\"");
	ctl_check_golden("err-ping-badnid.yaml", &b);
	ybuf_reset(&b);
	y_cy_error(&b, "parser", "set", -1, "cannot parse retry_count value");
	ctl_check_golden("err-set-parse.yaml", &b);
	ybuf_reset(&b);
	y_cy_error(&b, "add", "response_tracking", -EINVAL, "\"Valid values are: 0, 1, 2, or 3\"");
	ctl_check_golden("err-set-range.yaml", &b);
	ybuf_reset(&b);
	y_cy_error(&b, "add", "routing", -EBUSY, "\"cannot enable routing Device or resource busy\"");
	ctl_check_golden("err-set-routing-busy.yaml", &b);
	ybuf_free(&b);
}

/* Commands answered without a daemon: help, unknown commands. */
static void test_help_and_unknown(void **state)
{
	(void)state;
	struct ctl_reply rp;
	char *help[] = { "net", "add", "--help", NULL };
	char *bad[] = { "frobnicate", NULL };
	char *badsub[] = { "net", "frob", NULL };

	assert_true(ctl_is_help(3, help));
	assert_false(ctl_is_help(1, bad));
	ctl_reply_init(&rp);
	ctl_run(NULL, 3, help, NULL, 0, &rp);
	assert_int_equal(rp.rc, 0);
	assert_non_null(strstr(ybuf_str(&rp.out), "--nid"));
	ctl_reply_free(&rp);

	ctl_reply_init(&rp);
	ctl_run(NULL, 1, bad, NULL, 0, &rp);
	assert_int_equal(rp.rc, 255);
	assert_string_equal(ybuf_str(&rp.err), "ulnetctl: 'frobnicate' is not a valid command. "
			    "See 'ulnetctl --list-commands'.\n");
	ctl_reply_free(&rp);

	ctl_reply_init(&rp);
	ctl_run(NULL, 2, badsub, NULL, 0, &rp);
	assert_int_equal(rp.rc, 255);
	ctl_reply_free(&rp);
}

/* Every command path checks its options the same way: an unknown option is
 * refused (exit 234, named, help text), nothing runs. Commands refused as
 * unsupported whatever their arguments (-95) stay refused. */
static void test_bogus_option_everywhere(void **state)
{
	(void)state;
	static const char *const cmds[] = {
		"lnet configure", "lnet unconfigure", "net add --nid 127.0.0.2@tcp", "net del --net tcp",
		"net show", "net set --all --health 1000", "peer add --prim_nid 127.0.0.9@tcp",
		"peer del --prim_nid 127.0.0.9@tcp", "peer show", "peer list",
		"peer set --all --health 1000", "ping 127.0.0.1@tcp", "discover 127.0.0.1@tcp",
		"stats show", "stats reset", "global show", "import", "export", "route show",
		"route add --net tcp9 --gateway 127.0.0.9@tcp", "route del --net tcp9 --gateway 127.0.0.9@tcp",
		"routing show", "udsp show", "udsp add --src tcp", "udsp del --all",
		"debug peer --nid 127.0.0.9@tcp", "debug recovery",
		"set retry_count 3", "set numa_range 0", "set discovery 1", "set routing 1",
		"set tiny_buffers 512", "set small_buffers 512", "set large_buffers 512",
	};
	struct ulnet_opts opts;
	struct ctl_ctx ctx;
	struct ctl_reply rp;
	char line[256];

	memset(&opts, 0, sizeof(opts));
	assert_int_equal(ctl_ctx_init(&ctx, &opts, true), 0);
	ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&rp);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(line, sizeof(line), "%s --bogus", cmds[i]);
		if (ctl_run_line(&ctx, &rp, "net: []\n", 8, line) != 234)
			fail_msg("'%s' exited %d, want 234: %s", line, rp.rc, ybuf_str(&rp.err));
		ctl_has(&rp.err, "unrecognized option '--bogus'", line);
		/* a stray word is refused too, where none is taken */
		if (strncmp(cmds[i], "ping", 4) == 0 || strncmp(cmds[i], "discover", 8) == 0 ||
		    strstr(cmds[i], " set "))
			continue;
		snprintf(line, sizeof(line), "%s stray%s", cmds[i],
			 strcmp(cmds[i], "import") == 0 ? " stray2" : "");
		if (ctl_run_line(&ctx, &rp, "net: []\n", 8, line) != 234)
			fail_msg("'%s' exited %d, want 234: %s", line, rp.rc, ybuf_str(&rp.err));
		ctl_has(&rp.err, "unexpected argument 'stray", line);
	}
	/* nothing ran: LNet is still up, no peer or rule was added */
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "net show"), 0);
	ctl_has(&rp.out, "0@lo", "net show");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer list"), 0);
	if (strstr(ybuf_str(&rp.out), "127.0.0.9@tcp"))
		fail_msg("peer add --bogus added the peer");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "udsp show"), 0);
	if (rp.out.len)
		fail_msg("udsp add --bogus added a rule: %s", ybuf_str(&rp.out));
	/* lnetctl options with no ulnet counterpart: refused, never ignored */
	static const char *const refused[] = {
		"net add --nid 127.0.0.2@tcp --cpt [0]", "net add --nid 127.0.0.2@tcp --auth-key k", "net add --nid 127.0.0.2@tcp --traffic-class 1",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, refused[i]), 234);
		ctl_has(&rp.err, "errno: -95", refused[i]);
		ctl_has(&rp.err, "not supported by ulnet", refused[i]);
	}
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
}

/* An empty NID list is refused as lnetctl does; for del it never means
 * "the whole peer". */
static void test_peer_empty_nidlist(void **state)
{
	(void)state;
	struct ulnet_opts opts;
	struct ctl_ctx ctx;
	struct ctl_reply rp;

	memset(&opts, 0, sizeof(opts));
	assert_int_equal(ctl_ctx_init(&ctx, &opts, true), 0);
	ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&rp);
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer add --prim_nid 127.0.0.9@tcp --nid ,,,,"), 234);
	ctl_has(&rp.out, "can't parse nidrange: \",,,,\"", "peer add --nid ,,,,");
	ctl_has(&rp.err, "errno: -22", "peer add --nid ,,,,");
	ctl_has(&rp.err, "Unable to parse nidlist: no valid NIDs in string", "peer add --nid ,,,,");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show --nid 127.0.0.9@tcp"), 234);
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer add --prim_nid 127.0.0.9@tcp --nid 127.0.0.10@tcp"), 0);
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer del --prim_nid 127.0.0.9@tcp --nid ,"), 234);
	ctl_has(&rp.err, "no valid NIDs", "peer del --nid ,");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show --nid 127.0.0.10@tcp"), 0);
	ctl_has(&rp.out, "127.0.0.10@tcp", "peer show");
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
}

/* peer add --lock_prim sets the kernel's LNET_PEER_LOCK_PRIMARY (bit 20)
 * in the "peer state" of peer show -v 4; peer del without --force keeps
 * such a peer, with its primary NID only; with --force it goes
 * (sanity-lnet 26). lnetctl's add --force and del --lock_prim set the same
 * request flag as the other. */
static void test_peer_lock_prim(void **state)
{
	(void)state;
	struct ulnet_opts opts;
	struct ctl_ctx ctx;
	struct ctl_reply rp;

	memset(&opts, 0, sizeof(opts));
	assert_int_equal(ctl_ctx_init(&ctx, &opts, true), 0);
	ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&rp);
	ctl_run_expect(&ctx, &rp, "peer add --prim_nid 1.1.1.1@tcp --nid 1.1.1.2@tcp --lock_prim", 0, "");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show -v 4 --nid 1.1.1.1@tcp"), 0);
	/* MULTI_RAIL | CONFIGURED | LOCK_PRIMARY */
	ctl_has(&rp.out, "peer state: 1048585\n", "peer show -v 4");
	ctl_run_expect(&ctx, &rp, "peer del --prim_nid 1.1.1.1@tcp", 0, "");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show --nid 1.1.1.1@tcp"), 0);
	ctl_has(&rp.out, "primary nid: 1.1.1.1@tcp", "peer show after del");
	if (strstr(ybuf_str(&rp.out), "1.1.1.2@tcp"))
		fail_msg("peer del of a locked peer kept its other NIDs: %s", ybuf_str(&rp.out));
	ctl_run_expect(&ctx, &rp, "peer del --prim_nid 1.1.1.1@tcp --force", 0, "");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show --nid 1.1.1.1@tcp"), 234);
	/* the crossed spellings */
	ctl_run_expect(&ctx, &rp, "peer add --prim_nid 1.1.1.3@tcp --force", 0, "");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show -v 4 --nid 1.1.1.3@tcp"), 0);
	ctl_has(&rp.out, "peer state: 1048585\n", "peer add --force");
	ctl_run_expect(&ctx, &rp, "peer del --prim_nid 1.1.1.3@tcp --lock_prim", 0, "");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer show --nid 1.1.1.3@tcp"), 234);
	/* not configured any more, its primary NID locked: added again it is
	 * the kernel's -EEXIST */
	ctl_run_expect(&ctx, &rp, "peer add --prim_nid 1.1.1.4@tcp --lock_prim", 0, "");
	ctl_run_expect(&ctx, &rp, "peer set --nid 1.1.1.4@tcp --state 1048577", 0, "");
	assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, "peer add --prim_nid 1.1.1.4@tcp"), 234);
	ctl_has(&rp.err, "errno: -17", "peer add of a locked peer");
	ctl_has(&rp.err, "cannot add peer: File exists", "peer add of a locked peer");
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
}

/* The shows have no fixed cap: 1100 peers (past the old array of 1024)
 * are listed, shown and exported, each once. */
static void test_many_peers_shown(void **state)
{
	(void)state;
	struct ulnet_opts opts;
	struct ctl_ctx ctx;
	struct ctl_reply rp;
	const int npeers = 1100;
	struct ybuf y;

	memset(&opts, 0, sizeof(opts));
	assert_int_equal(ctl_ctx_init(&ctx, &opts, true), 0);
	ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&rp);
	ybuf_init(&y);
	ybuf_puts(&y, "peer:\n");
	for (int i = 0; i < npeers; i++)
		ybuf_printf(&y, "    - primary nid: 10.%d.%d.1@tcp\n", i / 256, i % 256);
	assert_int_equal(ctl_run_line(&ctx, &rp, y.s, y.len, "import peers.yaml"), 0);
	ybuf_free(&y);
	/* each peer once as "nid:" (list) or "primary nid:" (show, export) */
	static const char *const cmds[] = { "peer list", "peer show", "export" };
	static const char *const keys[] = { "-     nid:", "primary nid:", "primary nid:" };

	for (unsigned c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		assert_int_equal(ctl_run_line(&ctx, &rp, NULL, 0, cmds[c]), 0);
		for (int i = 0; i < npeers; i += 7) {
			char want[64];
			const char *at;

			snprintf(want, sizeof(want), "%s 10.%d.%d.1@tcp\n", keys[c], i / 256, i % 256);
			at = strstr(ybuf_str(&rp.out), want);
			if (!at || strstr(at + 1, want))
				fail_msg("%s: %s%s", cmds[c], want, at ? " twice" : " missing");
		}
	}
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* import: nesting deeper than CTL_YAML_MAX_DEPTH is refused at once (not
 * after libyaml's quadratic parse), a document over CTL_YAML_MAX_BYTES
 * unread; both errors name the limit. */
static void test_import_limits(void **state)
{
	(void)state;
	struct ulnet_opts opts;
	struct ctl_ctx ctx;
	struct ctl_reply rp;
	size_t deep = 100000;
	char *b = malloc(CTL_YAML_MAX_BYTES + 2);

	assert_non_null(b);
	memset(&opts, 0, sizeof(opts));
	assert_int_equal(ctl_ctx_init(&ctx, &opts, true), 0);
	ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&rp);
	/* 100k nested flow sequences (200 KB) */
	memset(b, '[', deep);
	memset(b + deep, ']', deep);
	double t0 = now_s();

	assert_int_equal(ctl_run_line(&ctx, &rp, b, 2 * deep, "import deep.yaml"), 234);
	double dt = now_s() - t0;

	ctl_has(&rp.err, "deep.yaml:1:65: nesting deeper than 64 levels", "import deep");
	if (dt > 1.0)
		fail_msg("refusing a 100k-deep document took %.2f s", dt);
	/* the limit itself: 64 levels parse (then fail as not a mapping) */
	memset(b, '[', 64);
	memset(b + 64, ']', 64);
	assert_int_equal(ctl_run_line(&ctx, &rp, b, 128, "import ok.yaml"), 234);
	ctl_has(&rp.err, "top level must be a mapping", "import 64 deep");
	/* block mappings count the same: 65 nested keys */
	struct ybuf y;

	ybuf_init(&y);
	for (int i = 0; i < 65; i++)
		ybuf_printf(&y, "%*sk%d:\n", i, "", i);
	ybuf_puts(&y, "                                                                  x\n");
	assert_int_equal(ctl_run_line(&ctx, &rp, y.s, y.len, "import keys.yaml"), 234);
	ctl_has(&rp.err, "nesting deeper than 64 levels", "import 65 keys");
	ybuf_free(&y);
	/* size: one byte over */
	memset(b, ' ', CTL_YAML_MAX_BYTES + 1);
	b[CTL_YAML_MAX_BYTES + 1] = '\0';
	assert_int_equal(ctl_run_line(&ctx, &rp, b, CTL_YAML_MAX_BYTES + 1, "import big.yaml"), 234);
	ctl_has(&rp.err, "over the limit of 4194304 bytes", "import big");
	/* --show and --del are bounded the same way */
	memset(b, '{', 1000);
	assert_int_equal(ctl_run_line(&ctx, &rp, b, 1000, "import --show deep.yaml"), 234);
	ctl_has(&rp.err, "nesting deeper than 64 levels", "import --show");
	assert_int_equal(ctl_run_line(&ctx, &rp, b, 1000, "import --del deep.yaml"), 234);
	ctl_has(&rp.err, "del:", "import --del");
	/* and ulnetd --config */
	struct ybuf err;

	ybuf_init(&err);
	assert_int_equal(ctl_apply_config(&ctx, "cfg.yaml", b, 1000, &err), -EINVAL);
	ctl_has(&err, "cfg.yaml:1:65: nesting deeper than 64 levels", "--config");
	ybuf_free(&err);
	free(b);
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_show_levels),
		cmocka_unit_test(test_net_show_filter),
		cmocka_unit_test(test_peer_show_levels),
		cmocka_unit_test(test_peer_list),
		cmocka_unit_test(test_stats_global),
		cmocka_unit_test(test_export),
		cmocka_unit_test(test_route_show),
		cmocka_unit_test(test_export_client),
		cmocka_unit_test(test_routing_show),
		cmocka_unit_test(test_export_router),
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_error_shapes),
		cmocka_unit_test(test_help_and_unknown),
		cmocka_unit_test(test_bogus_option_everywhere),
		cmocka_unit_test(test_peer_empty_nidlist),
		cmocka_unit_test(test_peer_lock_prim),
		cmocka_unit_test(test_import_limits),
		cmocka_unit_test(test_many_peers_shown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
