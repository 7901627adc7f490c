/* SPDX-License-Identifier: MIT */
/*
 * modopts_apply.c - what the lnet and ksocklnd module parameters do to a
 * node (modopts.h), in the kernel's order: at "module load" the globals,
 * the router buffer counts, the acceptor and the NI defaults; at every
 * "lnet configure" the router parameters, and with --all (as LNetNIInit
 * with module parameters) the NIs of networks= (or of ip2nets=, matched
 * against the node's addresses then), the routes of routes=
 * (a gateway that is one of our own NIDs makes us a router), then
 * forwarding=.
 */
#include "modopts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmds_int.h"
#include "ctl_ip2nets.h"

static int fail(char *err, size_t len, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	char msg[MODOPT_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(err, len, "%s (errno %d)", msg, rc);
	return rc;
}

int modopts_load(struct ctl_ctx *ctx, struct modopts *mo)
{
	char eb[96], descr[200];
	int rc;

	ctx->modopts = mo;
	if (mo->accept_port)
		ctx->accept_port = (uint16_t)mo->accept_port;
	if (mo->accept[0])
		snprintf(ctx->accept, sizeof(ctx->accept), "%s", mo->accept);
	if (mo->accept_backlog)
		ctx->accept_backlog = mo->accept_backlog;
	if (mo->accept_port_bulk > 0)
		ctx->accept_port_bulk = (uint16_t)mo->accept_port_bulk;
	ctx->lnd_tun = mo->tun;
	ctx->lnd_sock = mo->sock;
	ctx->lnd_o2ib_tun = mo->o2ib_tun;
	ctx->lnd_o2ib = mo->o2ib;
	ctx->peer_buffer_credits = mo->lnet_peer_buffer_credits;
	if (mo->skip_mr_route_setup)
		ctx->skip_mr_route_setup = true;
	if (!ctx->ln)
		return 0;
	if (mo->g_set) {
		rc = ulnet_globals_set(ctx->ln, &mo->g);
		if (rc < 0)
			return fail(mo->err, sizeof(mo->err), rc, "lnet globals: %s",
				    ctl_strerror(rc, eb, sizeof(eb)));
	}
	/* kept by the context across unconfigure, as the kernel's module
	 * parameters are; used when routing is enabled */
	bool any = false;

	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		any |= mo->rtr_buffers[i] >= 0;
	if (any) {
		rc = ctl_buffers_set(ctx, mo->rtr_buffers, descr, sizeof(descr));
		if (rc < 0)
			return fail(mo->err, sizeof(mo->err), rc, "lnet router buffers: %s", descr);
	}
	return 0;
}

/* The NIs of networks= (or of ip2nets=: `param`), set at `where`. */
static int configure_nis(struct ctl_ctx *ctx, const struct modopt_ni *nis, int nnis,
			 const char *where, const char *param, char *err, size_t len)
{
	char eb[96], nb[ULNET_NIDSTR_SIZE], netname[ULNET_NETSTR_SIZE];

	for (int i = 0; i < nnis; i++) {
		const struct modopt_ni *m = &nis[i];
		struct ulnet_ni_conf conf;
		uint32_t ip = 0;
		int rc;

		memset(&conf, 0, sizeof(conf));
		conf.tun.tos = -1;
		if (ulnet_net_format(m->net, netname, sizeof(netname)) < 0)
			snprintf(netname, sizeof(netname), "?");
		if (m->iface[0]) {
			rc = ctl_ip_of_iface(m->iface, &ip);
			if (rc < 0)
				return fail(err, len, rc, "%s: lnet.%s: %s(%s): no IPv4 address on "
					    "interface %s", where, param, netname, m->iface, m->iface);
			snprintf(conf.iface, sizeof(conf.iface), "%s", m->iface);
		} else {
			rc = ctl_first_iface(conf.iface, sizeof(conf.iface), &ip);
			if (rc < 0)
				return fail(err, len, rc, "%s: lnet.%s: %s: no interface is up, "
					    "not loopback, with an IPv4 address", where, param, netname);
		}
		ulnet_nid_from_ipv4(ip, m->net, &conf.nid);
		ulnet_nid_str(&conf.nid, nb);
		ctl_ni_conf_defaults(ctx, &conf);
		rc = ulnet_ni_add(ctx->ln, &conf);
		if (rc < 0)
			return fail(err, len, rc, "%s: lnet.%s: %s(%s): cannot add NI %s: %s", where,
				    param, netname, conf.iface, nb, ctl_strerror(rc, eb, sizeof(eb)));
		ctl_log(ctx, ULNET_LOG_INFO, "lnet.%s: NI %s up on %s", param, nb, conf.iface);
	}
	return 0;
}

/* The NIs of networks=, or of ip2nets= matched against the addresses the
 * node has now (the kernel's lnet_get_networks() at LNetNIInit). */
static int configure_nets(struct ctl_ctx *ctx, const struct modopts *mo, char *err, size_t len)
{
	if (!mo->ip2nets)
		return configure_nis(ctx, mo->nis, mo->nnis, mo->networks_where, "networks", err, len);

	struct modopt_ni *nis = calloc(MODOPT_MAX_NIS, sizeof(*nis));
	struct ip2n_addrs a;
	char why[600], eb[96];
	int n = 0, rc;

	if (!nis)
		return fail(err, len, -ENOMEM, "%s: lnet.ip2nets: out of memory", mo->ip2nets_where);
	rc = ip2n_addrs_get(&a);
	if (rc < 0) {
		free(nis);
		return fail(err, len, rc, "%s: lnet.ip2nets: cannot list the interfaces: %s",
			    mo->ip2nets_where, ctl_strerror(rc, eb, sizeof(eb)));
	}
	rc = modopts_ip2nets_nis(mo->ip2nets, &a, nis, MODOPT_MAX_NIS, &n, why, sizeof(why));
	ip2n_addrs_free(&a);
	if (rc < 0)
		rc = fail(err, len, rc, "%s: lnet.ip2nets: %s", mo->ip2nets_where, why);
	else
		rc = configure_nis(ctx, nis, n, mo->ip2nets_where, "ip2nets", err, len);
	free(nis);
	return rc;
}

static bool is_local_nid(const ulnet_nid_t *nid, const ulnet_nid_t *local, int nlocal)
{
	for (int i = 0; i < nlocal; i++)
		if (ulnet_nid_same(nid, &local[i]))
			return true;
	return false;
}

static bool is_local_net(ulnet_net_t net, const ulnet_nid_t *local, int nlocal)
{
	for (int i = 0; i < nlocal; i++)
		if (ulnet_nid_net(&local[i]) == net)
			return true;
	return false;
}

/* The routes of routes=; *router: a gateway is one of our NIDs. */
static int configure_routes(struct ctl_ctx *ctx, const struct modopts *mo, bool *router,
			    char *err, size_t len)
{
	ulnet_nid_t local[MAX_NIS];
	int nlocal = ulnet_ni_list(ctx->ln, local, MAX_NIS);
	char eb[96], nb[ULNET_NIDSTR_SIZE], netname[ULNET_NETSTR_SIZE];

	if (nlocal > MAX_NIS)
		nlocal = MAX_NIS;
	for (int i = 0; i < mo->nroutes; i++) {
		const struct modopt_route *r = &mo->routes[i];
		struct ulnet_route_conf rc = {
			.net = r->net, .gateway = r->gw, .hops = r->hops, .priority = r->priority,
		};

		ulnet_nid_str(&r->gw, nb);
		if (ulnet_net_format(r->net, netname, sizeof(netname)) < 0)
			snprintf(netname, sizeof(netname), "?");
		/* the kernel: a route through ourselves says we are a router */
		if (is_local_nid(&r->gw, local, nlocal)) {
			*router = true;
			continue;
		}
		/* checked here too, so that the library logs no error for a
		 * route that is skipped on purpose */
		int e = is_local_net(ulnet_nid_net(&r->gw), local, nlocal)
				? ulnet_route_add(ctx->ln, &rc) : -EHOSTUNREACH;

		if (e == -EEXIST || e == -EHOSTUNREACH) {
			/* skipped, as the kernel skips them: one routes= string
			 * serves nodes on different nets */
			ctl_log(ctx, ULNET_LOG_WARN, "%s: lnet.routes: route to %s through %s skipped "
				"(as the kernel does): %s", mo->routes_where, netname, nb,
				e == -EEXIST ? "it exists, or the net is one of ours"
					     : "no NI of ours on the gateway's net");
			continue;
		}
		if (e < 0)
			return fail(err, len, e, "%s: lnet.routes: route to %s through %s: %s",
				    mo->routes_where, netname, nb, ctl_strerror(e, eb, sizeof(eb)));
	}
	return 0;
}

int modopts_configure(struct ctl_ctx *ctx, bool all, char *err, size_t errlen)
{
	const struct modopts *mo = ctx->modopts;
	char eb[96];
	bool router = false;
	int rc;

	if (!mo || !ctx->ln)
		return 0;
	if (mo->rp_set) {
		struct ulnet_router_params rp;

		rc = ulnet_router_params_get(ctx->ln, &rp);
		if (mo->rp_set & MO_RP_INTERVAL)
			rp.alive_router_check_interval = mo->rp.alive_router_check_interval;
		if (mo->rp_set & MO_RP_TIMEOUT)
			rp.router_ping_timeout = mo->rp.router_ping_timeout;
		if (mo->rp_set & MO_RP_CHECK)
			rp.check_routers_before_use = mo->rp.check_routers_before_use;
		if (mo->rp_set & MO_RP_ASYM)
			rp.avoid_asym_router_failure = mo->rp.avoid_asym_router_failure;
		if (rc == 0)
			rc = ulnet_router_params_set(ctx->ln, &rp);
		if (rc < 0)
			return fail(err, errlen, rc, "lnet router parameters: %s",
				    ctl_strerror(rc, eb, sizeof(eb)));
	}
	if (!all)
		return 0;
	rc = configure_nets(ctx, mo, err, errlen);
	if (rc == 0)
		rc = configure_routes(ctx, mo, &router, err, errlen);
	if (rc < 0)
		return rc;
	/* forwarding="" (the default) forwards on a router, "enabled" always;
	 * at once, without the start-up phase of "set routing 1" */
	if (mo->forwarding == 1 || (mo->forwarding == -1 && router)) {
		rc = ulnet_routing_enable_now(ctx->ln);
		if (rc < 0)
			return fail(err, errlen, rc, "lnet.forwarding: cannot enable routing: %s",
				    ctl_strerror(rc, eb, sizeof(eb)));
		if (mo->forwarding == -1)
			ctl_log(ctx, ULNET_LOG_INFO, "%s: lnet.routes: a gateway is this node: "
				"forwarding (forwarding= not set)", mo->routes_where);
	}
	return 0;
}
