/* SPDX-License-Identifier: MIT */
/* ctl_render.c - show commands in lnetctl 2.17's exact YAML layout. */
#include "ctl_render.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_policy.h"

/* lnetctl's netlink printers use indent 6; ping/discover indent 2. */
#define NL_INDENT 6

const char *ctl_strerror(int err, char *buf, size_t len)
{
	if (err < 0)
		err = -err;
	/* strerror_r (GNU) may return a static string instead of filling buf. */
	const char *s = strerror_r(err, buf, len);

	return s ? s : "Unknown error";
}

static const char *nid_s(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE])
{
	return ulnet_nid_str(nid, buf);
}

static void net_name(const ulnet_nid_t *nid, char *buf, size_t len)
{
	/* "net type" is the LND name plus number ("tcp", "tcp1", "lo"). */
	if (ulnet_net_format(ulnet_nid_net(nid), buf, len) < 0)
		snprintf(buf, len, "unknown");
}

static void render_stats_block(struct yout *y, uint64_t send, uint64_t recv, uint64_t drop,
			       const struct ulnet_latency *pe, const struct ulnet_latency *gr,
			       const struct ulnet_latency *pa)
{
	yo_str(y, "statistics");
	yo_map(y);
	yo_kv_uint(y, "send_count", send);
	yo_kv_uint(y, "recv_count", recv);
	yo_kv_uint(y, "drop_count", drop);
	const struct ulnet_latency *lat[3] = { pe, gr, pa };
	static const char *const pfx[3] = { "put_egress", "get_rtt", "put_ack" };

	for (int i = 0; i < 3; i++) {
		char k[48];

		snprintf(k, sizeof(k), "%s_samples", pfx[i]);
		yo_kv_uint(y, k, lat[i]->samples);
		snprintf(k, sizeof(k), "%s_min_nsec", pfx[i]);
		yo_kv_uint(y, k, lat[i]->min_nsec);
		snprintf(k, sizeof(k), "%s_max_nsec", pfx[i]);
		yo_kv_uint(y, k, lat[i]->max_nsec);
		snprintf(k, sizeof(k), "%s_avg_nsec", pfx[i]);
		yo_kv_uint(y, k, lat[i]->avg_nsec);
	}
	yo_end_map(y);
}

static void render_msg_counts(struct yout *y, const char *key, const struct ulnet_msg_type_counts *c)
{
	yo_str(y, key);
	yo_map(y);
	yo_kv_uint(y, "put", c->n[ULNET_MSG_PUT]);
	yo_kv_uint(y, "get", c->n[ULNET_MSG_GET]);
	yo_kv_uint(y, "reply", c->n[ULNET_MSG_REPLY]);
	yo_kv_uint(y, "ack", c->n[ULNET_MSG_ACK]);
	yo_kv_uint(y, "hello", c->n[ULNET_MSG_HELLO]);
	yo_end_map(y);
}

/* One preferred list of "udsp info" (liblnetconfig's create_remote_udsp_info()
 * layout: "NID-i: nid"), nothing when empty. */
static void render_udsp_list(struct yout *y, const char *key, const ulnet_nid_t *nids, int n)
{
	char nb[ULNET_NIDSTR_SIZE], k[24];

	if (n <= 0)
		return;
	yo_str(y, key);
	yo_map(y);
	/* the kernel shows at most LNET_MAX_SHOW_NUM_NID */
	for (int i = 0; i < n && i < 128; i++) {
		snprintf(k, sizeof(k), "NID-%d", i);
		yo_kv_str(y, k, nid_s(&nids[i], nb));
	}
	yo_end_map(y);
}

/* "udsp info" (-v 4): the priorities as the kernel's s32 shows them (none
 * is -1); a peer NI's preferred gateways and local NIDs after them. */
static void render_udsp(struct yout *y, uint32_t net_prio, uint32_t nid_prio,
			const struct ulnet_peer_ni_info *pn)
{
	yo_str(y, "udsp info");
	yo_map(y);
	yo_kv_int(y, "net priority", (int32_t)net_prio);
	yo_kv_int(y, "nid priority", (int32_t)nid_prio);
	if (pn && pn->udsp_pref) {
		render_udsp_list(y, "Preferred gateway NIDs", pn->udsp_pref + pn->udsp_npref_src,
				 pn->udsp_npref_rtr);
		render_udsp_list(y, "Preferred source NIDs", pn->udsp_pref, pn->udsp_npref_src);
	}
	yo_end_map(y);
}

static bool is_lo(const ulnet_nid_t *nid)
{
	return nid->type == ULNET_LND_LO;
}

/* One NI of net show / export. mode: 0 show, 1 export, 2 export --backup. */
static void render_ni(struct yout *y, const struct ulnet_ni_info *ni, int verbose, int mode)
{
	char nb[ULNET_NIDSTR_SIZE];

	yo_map(y);
	if (mode != 2) {
		yo_kv_str(y, "nid", nid_s(&ni->nid, nb));
		yo_kv_str(y, "status", ni->up ? "up" : "down");
	}
	if (ni->iface[0] && !is_lo(&ni->nid)) {
		yo_str(y, "interfaces");
		yo_map(y);
		char ifn[sizeof(ni->iface) + 1];

		memcpy(ifn, ni->iface, sizeof(ni->iface));
		ifn[sizeof(ni->iface)] = '\0';
		yo_kv_str(y, "0", ifn);
		yo_end_map(y);
	}
	if (mode == 2)
		goto tunables;
	if (verbose >= 1)
		render_stats_block(y, ni->send_count, ni->recv_count, ni->drop_count,
				   &ni->put_egress, &ni->get_rtt, &ni->put_ack);
	if (verbose >= 4)
		render_udsp(y, ni->udsp_net_prio, ni->udsp_nid_prio, NULL);
	if (verbose >= 2) {
		render_msg_counts(y, "sent_stats", &ni->sent);
		render_msg_counts(y, "received_stats", &ni->received);
		render_msg_counts(y, "dropped_stats", &ni->dropped);
		yo_str(y, "health stats");
		yo_map(y);
		yo_kv_int(y, "fatal_error", ni->health.fatal_error);
		yo_kv_int(y, "health value", ni->health.health_value);
		yo_kv_uint(y, "interrupts", ni->health.interrupts);
		yo_kv_uint(y, "dropped", ni->health.dropped);
		yo_kv_uint(y, "aborted", ni->health.aborted);
		yo_kv_uint(y, "no route", ni->health.no_route);
		yo_kv_uint(y, "timeouts", ni->health.timeouts);
		yo_kv_uint(y, "error", ni->health.error);
		yo_kv_uint(y, "ping_count", ni->health.ping_count);
		yo_kv_int(y, "next_ping", ni->health.next_ping);
		yo_end_map(y);
	}
	if (verbose < 1)
		goto out;
tunables:
	yo_str(y, "tunables");
	yo_map(y);
	yo_kv_int(y, "peer_timeout", ni->tun.peer_timeout);
	yo_kv_int(y, "peer_credits", ni->tun.peer_credits);
	yo_kv_int(y, "peer_buffer_credits", ni->tun.peer_buffer_credits);
	yo_kv_int(y, "credits", ni->tun.credits);
	yo_end_map(y);
	if (ni->nid.type == ULNET_LND_TCP) {
		yo_str(y, "lnd tunables");
		yo_map(y);
		yo_kv_int(y, "conns_per_peer", ni->tun.conns_per_peer);
		if (mode != 2)
			yo_kv_int(y, "timeout", ni->lnd_timeout);
		yo_kv_int(y, "tos", ni->tun.tos);
		yo_end_map(y);
	} else if (ni->nid.type == ULNET_LND_O2IB) {
		/* lnetctl's keys for ko2iblnd, the values the LND runs with
		 * (its ni_info; the fmr_* ones are the kernel's defaults,
		 * the only values taken: ulnet has no FMR pool) */
		const struct ulnet_o2ib_tunables *o = &ni->o2ib;

		yo_str(y, "lnd tunables");
		yo_map(y);
		yo_kv_int(y, "peercredits_hiw", o->peercredits_hiw);
		yo_kv_int(y, "map_on_demand", o->map_on_demand);
		yo_kv_int(y, "concurrent_sends", o->concurrent_sends);
		yo_kv_int(y, "fmr_pool_size", KIB_FMR_POOL_SIZE);
		yo_kv_int(y, "fmr_flush_trigger", KIB_FMR_FLUSH_TRIGGER);
		yo_kv_int(y, "fmr_cache", KIB_FMR_CACHE);
		yo_kv_int(y, "ntx", o->ntx);
		yo_kv_int(y, "conns_per_peer", ni->tun.conns_per_peer);
		if (mode != 2)
			yo_kv_int(y, "timeout", ni->lnd_timeout);
		yo_kv_int(y, "tos", ni->tun.tos);
		yo_end_map(y);
	}
	if (mode != 2)
		yo_kv_int(y, "dev cpt", ni->dev_cpt);
	yo_str(y, "CPT");
	yo_dq(y, "[0]");
out:
	yo_end_map(y);
}

static void render_nets(struct yout *y, const struct ulnet_ni_info *nis, int n, int verbose,
			const ulnet_net_t *filter, int mode)
{
	yo_str(y, "net");
	yo_seq(y);
	/* Group NIs by net in order of first appearance: O(n^2), n is small. */
	for (int i = 0; i < n; i++) {
		ulnet_net_t net = ulnet_nid_net(&nis[i].nid);
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = ulnet_nid_net(&nis[j].nid) == net;
		if (seen || (filter && *filter != net) || (mode == 2 && is_lo(&nis[i].nid)))
			continue;
		char nn[ULNET_NETSTR_SIZE];

		net_name(&nis[i].nid, nn, sizeof(nn));
		yo_map(y);
		yo_kv_str(y, "net type", nn);
		yo_str(y, "local NI(s)");
		yo_seq(y);
		for (int j = i; j < n; j++)
			if (ulnet_nid_net(&nis[j].nid) == net)
				render_ni(y, &nis[j], verbose, mode);
		yo_end_seq(y);
		yo_end_map(y);
	}
	yo_end_seq(y);
}

static int count_nets(const struct ulnet_ni_info *nis, int n, const ulnet_net_t *filter,
		      bool skip_lo)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		if ((!filter || ulnet_nid_net(&nis[i].nid) == *filter) &&
		    !(skip_lo && is_lo(&nis[i].nid)))
			c++;
	return c;
}

void ctl_render_net_show(struct ybuf *out, const struct ulnet_ni_info *nis, int n, int verbose,
			 const ulnet_net_t *filter)
{
	struct yout y;

	if (count_nets(nis, n, filter, false) == 0)
		return;
	yo_begin(&y, out, NL_INDENT, false);
	yo_map(&y);
	render_nets(&y, nis, n, verbose, filter, 0);
	yo_end_map(&y);
	yo_end(&y);
}

static const char *peer_state_str(int st)
{
	return st > 0 ? "up" : st == 0 ? "down" : "NA";
}

/* mode: 0 show, 2 export --backup */
static void render_peers(struct yout *y, const struct ulnet_peer_info *peers, int n, int verbose,
			 int mode)
{
	char nb[ULNET_NIDSTR_SIZE];

	yo_str(y, "peer");
	yo_seq(y);
	for (int i = 0; i < n; i++) {
		const struct ulnet_peer_info *p = &peers[i];

		yo_map(y);
		yo_kv_str(y, "primary nid", nid_s(&p->primary, nb));
		yo_kv_str(y, "Multi-Rail", p->multi_rail ? "true" : "false");
		if (verbose >= 3 && mode != 2)
			yo_kv_uint(y, "peer state", p->state);
		yo_str(y, "peer ni");
		yo_seq(y);
		for (int j = 0; j < p->nnis; j++) {
			const struct ulnet_peer_ni_info *pn = ulnet_peer_info_ni(p, j);

			yo_map(y);
			yo_kv_str(y, "nid", nid_s(&pn->nid, nb));
			if (mode == 2) {
				yo_end_map(y);
				continue;
			}
			if (verbose >= 4)
				render_udsp(y, pn->udsp_net_prio, pn->udsp_nid_prio, pn);
			yo_kv_str(y, "state", peer_state_str(pn->state));
			if (verbose >= 1) {
				yo_kv_int(y, "max_ni_tx_credits", pn->max_tx_credits);
				yo_kv_int(y, "available_tx_credits", pn->available_tx_credits);
				yo_kv_int(y, "min_tx_credits", pn->min_tx_credits);
				yo_kv_int(y, "tx_q_num_of_buf", pn->tx_q_num_of_buf);
				yo_kv_int(y, "available_rtr_credits", pn->available_rtr_credits);
				yo_kv_int(y, "min_rtr_credits", pn->min_rtr_credits);
				yo_kv_int(y, "refcount", pn->refcount);
				render_stats_block(y, pn->send_count, pn->recv_count,
						   pn->drop_count, &pn->put_egress, &pn->get_rtt,
						   &pn->put_ack);
			}
			if (verbose >= 2) {
				render_msg_counts(y, "sent_stats", &pn->sent);
				render_msg_counts(y, "received_stats", &pn->received);
				render_msg_counts(y, "dropped_stats", &pn->dropped);
				yo_str(y, "health stats");
				yo_map(y);
				yo_kv_int(y, "health value", pn->health.health_value);
				yo_kv_uint(y, "dropped", pn->health.dropped);
				yo_kv_uint(y, "timeout", pn->health.timeouts);
				yo_kv_uint(y, "error", pn->health.error);
				yo_kv_uint(y, "network timeout", pn->health.network_timeout);
				yo_kv_uint(y, "ping_count", pn->health.ping_count);
				yo_kv_int(y, "next_ping", pn->health.next_ping);
				yo_end_map(y);
			}
			yo_end_map(y);
		}
		yo_end_seq(y);
		yo_end_map(y);
	}
	yo_end_seq(y);
}

void ctl_render_peer_show(struct ybuf *out, const struct ulnet_peer_info *peers, int n,
			  int verbose)
{
	struct yout y;

	if (n <= 0)
		return;
	yo_begin(&y, out, NL_INDENT, false);
	yo_map(&y);
	render_peers(&y, peers, n, verbose, 0);
	yo_end_map(&y);
	yo_end(&y);
}

/* mode: 0 route show, 1 route show -v and export, 2 export --backup */
static void render_routes(struct yout *y, const struct ulnet_route_info *r, int n, int mode)
{
	char nb[ULNET_NIDSTR_SIZE], nn[ULNET_NETSTR_SIZE];

	yo_str(y, "route");
	yo_seq(y);
	for (int i = 0; i < n; i++) {
		if (ulnet_net_format(r[i].net, nn, sizeof(nn)) < 0)
			snprintf(nn, sizeof(nn), "unknown");
		yo_map(y);
		yo_kv_str(y, "net", nn);
		yo_kv_str(y, "gateway", nid_s(&r[i].gateway, nb));
		if (mode >= 1) {
			yo_kv_int(y, "hop", r[i].hops);
			yo_kv_uint(y, "priority", r[i].priority);
		}
		if (mode == 1) {
			yo_kv_str(y, "state", r[i].alive ? "up" : "down");
			yo_kv_str(y, "type", r[i].single_hop ? "single-hop" : "multi-hop");
		}
		yo_end_map(y);
	}
	yo_end_seq(y);
}

void ctl_render_route_show(struct ybuf *out, const struct ulnet_route_info *routes, int n,
			   bool verbose)
{
	struct yout y;

	if (n <= 0)
		return;
	yo_begin(&y, out, NL_INDENT, false);
	yo_map(&y);
	render_routes(&y, routes, n, verbose ? 1 : 0);
	yo_end_map(&y);
	yo_end(&y);
}

void ctl_render_peer_list(struct ybuf *out, const struct ulnet_peer_info *peers, int n)
{
	struct yout y;
	char nb[ULNET_NIDSTR_SIZE];

	if (n <= 0)
		return;
	yo_begin(&y, out, NL_INDENT, false);
	yo_map(&y);
	yo_str(&y, "peer list");
	yo_seq(&y);
	for (int i = 0; i < n; i++) {
		yo_map(&y);
		yo_kv_str(&y, "nid", nid_s(&peers[i].primary, nb));
		yo_end_map(&y);
	}
	yo_end_seq(&y);
	yo_end_map(&y);
	yo_end(&y);
}

void ctl_render_stats(struct ybuf *out, const struct ulnet_counters *c)
{
	struct {
		const char *k;
		uint64_t v;
	} f[] = {
		{ "msgs_alloc", c->msgs_alloc },
		{ "msgs_max", c->msgs_max },
		{ "rst_alloc", c->rst_alloc },
		{ "errors", c->errors },
		{ "send_count", c->send_count },
		{ "resend_count", c->resend_count },
		{ "response_timeout_count", c->response_timeout_count },
		{ "local_interrupt_count", c->local_interrupt_count },
		{ "local_dropped_count", c->local_dropped_count },
		{ "local_aborted_count", c->local_aborted_count },
		{ "local_no_route_count", c->local_no_route_count },
		{ "local_timeout_count", c->local_timeout_count },
		{ "local_error_count", c->local_error_count },
		{ "remote_dropped_count", c->remote_dropped_count },
		{ "remote_error_count", c->remote_error_count },
		{ "remote_timeout_count", c->remote_timeout_count },
		{ "network_timeout_count", c->network_timeout_count },
		{ "failed_resends", c->failed_resends },
		{ "successful_resends", c->successful_resends },
		{ "recv_count", c->recv_count },
		{ "route_count", c->route_count },
		{ "drop_count", c->drop_count },
		{ "send_length", c->send_length },
		{ "recv_length", c->recv_length },
		{ "route_length", c->route_length },
		{ "drop_length", c->drop_length },
	};

	cy_key(out, 0, "statistics");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		cy_kv(out, 1, f[i].k, "%llu", (unsigned long long)f[i].v);
}

void ctl_render_global(struct ybuf *out, const struct ulnet_globals *g)
{
	cy_key(out, 0, "global");
	cy_kv(out, 1, "numa_range", "%d", g->numa_range);
	cy_kv(out, 1, "max_interfaces", "%d", g->max_interfaces);
	cy_kv(out, 1, "discovery", "%d", g->discovery);
	cy_kv(out, 1, "drop_asym_route", "%d", g->drop_asym_route);
	cy_kv(out, 1, "retry_count", "%d", g->retry_count);
	cy_kv(out, 1, "transaction_timeout", "%d", g->transaction_timeout);
	cy_kv(out, 1, "health_sensitivity", "%d", g->health_sensitivity);
	cy_kv(out, 1, "recovery_interval", "%d", g->recovery_interval);
	cy_kv(out, 1, "router_sensitivity", "%d", g->router_sensitivity);
	cy_kv(out, 1, "lnd_timeout", "%d", ulnet_lnd_timeout(g));
	cy_kv(out, 1, "response_tracking", "%d", g->response_tracking);
	cy_kv(out, 1, "recovery_limit", "%d", g->recovery_limit);
	cy_kv(out, 1, "max_recovery_ping_interval", "%d", g->max_recovery_ping_interval);
}

void ctl_render_routing(struct ybuf *out, const struct ulnet_routing_info *ri, bool backup)
{
	static const char *const pools[ULNET_RTR_NPOOLS] = { "tiny", "small", "large" };

	/* no pools (routing never enabled): the kernel has no CPT to list,
	 * and lnetctl prints nothing at all */
	if (!ri || !ri->pools)
		return;
	/* cYAML: "routing" a sequence of one item per CPT (ulnet has one)
	 * and an "enable" item; --backup: a map with "enable" only */
	cy_key(out, 0, "routing");
	if (backup) {
		cy_kv(out, 1, "enable", "%d", (int)ri->state);
	} else {
		ybuf_puts(out, "    - cpt[0]:\n");
		for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
			const struct ulnet_rtr_pool_info *p = &ri->pool[i];

			ybuf_printf(out, "%10s%s:\n", "", pools[i]);
			ybuf_printf(out, "%14snpages: %d\n", "", p->npages);
			ybuf_printf(out, "%14snbuffers: %d\n", "", p->nbuffers);
			ybuf_printf(out, "%14scredits: %d\n", "", p->credits);
			ybuf_printf(out, "%14smincredits: %d\n", "", p->mincredits);
		}
		ybuf_printf(out, "    - enable: %d\n", (int)ri->state);
	}
	/* the buffers each pool holds, summed over the CPTs, so that the
	 * YAML configures a node's pools when imported */
	cy_key(out, 0, "buffers");
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		cy_kv(out, 1, pools[i], "%d", ri->pool[i].nbuffers);
}

void ctl_render_export(struct ybuf *out, const struct ulnet_ni_info *nis, int nni,
		       const struct ulnet_route_info *routes, int nroute,
		       const struct ulnet_peer_info *peers, int npeer,
		       const struct ulnet_routing_info *routing, const struct ulnet_globals *g,
		       bool backup)
{
	int mode = backup ? 2 : 1;
	bool any_net = count_nets(nis, nni, NULL, backup) > 0;

	/* lnetctl export prints net, route and peer through the emitter
	 * (indent 6), routing, buffers and global through cYAML: one
	 * document, two printers.
	 * The route section is "route show -v" (--backup: without state and
	 * type), between net and peer. */
	if (any_net || nroute > 0 || npeer > 0) {
		struct yout y;

		yo_begin(&y, out, NL_INDENT, false);
		yo_map(&y);
		if (any_net)
			render_nets(&y, nis, nni, 3, NULL, mode);
		if (nroute > 0)
			render_routes(&y, routes, nroute, mode);
		if (npeer > 0)
			render_peers(&y, peers, npeer, 3, mode);
		yo_end_map(&y);
		yo_end(&y);
	}
	/* routing: and buffers: (cYAML, as routing show) after peer: */
	ctl_render_routing(out, routing, backup);
	ctl_render_global(out, g);
}

void ctl_render_udsp(struct ybuf *out, const struct ulnet_udsp_rule *rules, int n, int first)
{
	static const char *const part[ULNET_UDSP_NPARTS] = { "src", "dst", "rte" };

	/* cYAML, as liblnetconfig's lustre_lnet_show_udsp() builds it */
	if (n <= 0)
		return;
	cy_key(out, 0, "udsp");
	for (int i = 0; i < n; i++) {
		const struct ulnet_udsp_rule *r = &rules[i];

		ybuf_printf(out, "    - idx: %d\n", first + i);
		for (int p = 0; p < ULNET_UDSP_NPARTS; p++)
			if (r->match[p][0])
				ybuf_printf(out, "      %s: %s\n", part[p], r->match[p]);
		if (r->action == ULNET_UDSP_ACTION_PRIORITY)
			ybuf_printf(out, "      action:\n          priority: %u\n", r->priority);
	}
}

const char *ctl_conn_type_str(int type)
{
	switch (type) {
	case ULNET_CONN_ANY:
		return "any";
	case ULNET_CONN_CONTROL:
		return "control";
	case ULNET_CONN_BULK_IN:
		return "bulk_in";
	case ULNET_CONN_BULK_OUT:
		return "bulk_out";
	default:
		return "?";
	}
}

/* "IP:PORT", or "[IPv6]:PORT" in double quotes: the cYAML printer writes
 * values as they are, and a plain scalar starting with '[' would read back
 * as a list. */
static void conn_addr(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		if (inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip)))
			snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(s4->sin_port));
		else
			snprintf(buf, len, "\"?\"");
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip)))
			snprintf(buf, len, "\"[%s]:%u\"", ip, (unsigned)ntohs(s6->sin6_port));
		else
			snprintf(buf, len, "\"?\"");
	} else {
		snprintf(buf, len, "\"?\"");
	}
}

void ctl_render_conn_show(struct ybuf *out, const struct ulnet_conn_info *conns, int n)
{
	char nb[ULNET_NIDSTR_SIZE], netb[ULNET_NETSTR_SIZE], la[INET6_ADDRSTRLEN + 16],
		ra[INET6_ADDRSTRLEN + 16];

	/* cYAML, the layout of lnetctl's other lists without a netlink
	 * reply (udsp show): no conn, nothing at all */
	if (n <= 0)
		return;
	cy_key(out, 0, "conn");
	for (int i = 0; i < n; i++) {
		const struct ulnet_conn_info *c = &conns[i];

		net_name(&c->peer, netb, sizeof(netb));
		conn_addr(&c->local, la, sizeof(la));
		conn_addr(&c->remote, ra, sizeof(ra));
		ybuf_printf(out, "    - nid: %s\n", nid_s(&c->peer, nb));
		ybuf_printf(out, "      net: %s\n", netb);
		ybuf_printf(out, "      type: %s\n", ctl_conn_type_str(c->type));
		ybuf_printf(out, "      local: %s\n", la);
		ybuf_printf(out, "      remote: %s\n", ra);
		ybuf_printf(out, "      cpt: %d\n", c->cpt);
		ybuf_printf(out, "      tx_buffer_size: %d\n", c->tx_buffer_size);
		ybuf_printf(out, "      rx_buffer_size: %d\n", c->rx_buffer_size);
		ybuf_printf(out, "      nagle: %d\n", c->nagle ? 1 : 0);
		ybuf_printf(out, "      statistics:\n");
		ybuf_printf(out, "          tx_msgs: %llu\n", (unsigned long long)c->tx_msgs);
		ybuf_printf(out, "          rx_msgs: %llu\n", (unsigned long long)c->rx_msgs);
		ybuf_printf(out, "          tx_bytes: %llu\n", (unsigned long long)c->tx_bytes);
		ybuf_printf(out, "          rx_bytes: %llu\n", (unsigned long long)c->rx_bytes);
	}
}

void ctl_render_ping(struct ybuf *out, const char *what, const struct ctl_ping_result *r, int n)
{
	struct yout y;
	char nb[ULNET_NIDSTR_SIZE];
	int nok = 0, nerr = 0;

	for (int i = 0; i < n; i++)
		if (r[i].rc == 0)
			nok++;
		else
			nerr++;
	if (n == 0)
		return;
	yo_begin(&y, out, 2, false);
	yo_map(&y);
	if (nok) {
		yo_str(&y, what);
		yo_seq(&y);
		for (int i = 0; i < n; i++) {
			if (r[i].rc != 0)
				continue;
			const struct ulnet_ping_peer *p = &r[i].peer;

			yo_map(&y);
			yo_kv_str(&y, "primary nid", nid_s(&p->primary, nb));
			yo_kv_str(&y, "Multi-Rail", p->multi_rail ? "true" : "false");
			yo_str(&y, "peer_ni");
			yo_seq(&y);
			int nn = p->nnids < 16 ? p->nnids : 16;

			for (int j = 0; j < nn; j++) {
				yo_map(&y);
				yo_kv_str(&y, "nid", nid_s(&p->nids[j], nb));
				yo_end_map(&y);
			}
			yo_end_seq(&y);
			yo_end_map(&y);
		}
		yo_end_seq(&y);
	}
	if (nerr) {
		yo_str(&y, "manage");
		yo_seq(&y);
		for (int i = 0; i < n; i++) {
			if (r[i].rc == 0)
				continue;
			char eb[128], msg[256];

			snprintf(msg, sizeof(msg), "failed to %s %s: %s", what,
				 nid_s(&r[i].target, nb), ctl_strerror(r[i].rc, eb, sizeof(eb)));
			yo_map(&y);
			yo_kv_str(&y, what, "");
			yo_kv_int(&y, "errno", r[i].rc);
			yo_str(&y, "descr");
			yo_str(&y, msg);
			yo_end_map(&y);
		}
		yo_end_seq(&y);
	}
	yo_end_map(&y);
	yo_end(&y);
}
