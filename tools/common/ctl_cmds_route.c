/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_route.c - the "route" commands (add, del, show) and their table,
 * over ulnet/routing.h, with lnetctl 2.17's checks, texts and exit codes:
 * what lnetctl checks itself (mandatory options, the gateway list), then
 * what the kernel's netlink handler checks (net, hop, priority), then
 * lnet_add_route()/lnet_del_route() (the core's errors). The gateway list
 * is expanded by ctl_nidrange.c; the route change is shared with import
 * (ctl_import.c).
 */
#include "ctl_cmds_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- route add / del ---------------------------------------------------------------- */

int ctl_route_change(ulnet_t *ln, bool add, const char *netstr, const ulnet_nid_t *gw, int hops,
		     int prio, const char **descr)
{
	ulnet_net_t net;
	int rc;

	/* The kernel's net checks: an unparsable net is LNET_NET_ANY. */
	if (!netstr || ulnet_net_parse(netstr, &net, NULL) < 0)
		net = ULNET_NET_ANY;
	if (net != ULNET_NET_ANY && ulnet_net_type(net) == ULNET_LND_LO) {
		*descr = "setting @lo not allowed";
		return -EACCES;
	}
	if (net == ULNET_NET_ANY) {
		*descr = "setting LNET_NET_ANY not allowed";
		return -ENXIO;
	}
	if (!add) {
		rc = ulnet_route_del(ln, net, gw);
		if (rc < 0) {
			*descr = "failed to delete route";
			return rc;
		}
		return 0;
	}
	if (hops != -1 && (hops < 1 || hops > ULNET_ROUTE_HOPS_MAX)) {
		*descr = "invalid hop count must be between 1 and 255";
		return -EINVAL;
	}
	if (prio != -1 && prio < 0) {
		*descr = "invalid priority, must not be negative";
		return -EINVAL;
	}
	struct ulnet_route_conf conf = {
		.net = net,
		.gateway = *gw,
		.hops = hops == -1 ? ULNET_ROUTE_HOPS_UNSET : hops,
		.priority = prio == -1 ? 0 : (unsigned)prio,
	};

	rc = ulnet_route_add(ln, &conf);
	switch (rc) {
	case 0:
		return 0;
	case -EINVAL:
		*descr = "invalid settings for route creation";
		break;
	case -EHOSTUNREACH:
		*descr = "No interface configured on the same net as gateway";
		break;
	case -EEXIST:
		*descr = "Route already exists or the specified network is local";
		break;
	case -ENXIO:
		*descr = "setting LNET_NET_ANY not allowed";
		break;
	case -EACCES:
		*descr = "setting @lo not allowed";
		break;
	default:
		*descr = "failed to create route";
		break;
	}
	return rc;
}

/* lnetctl's parse_long() for --hop and --priority: strtol base 0 over the
 * whole word ("" is 0); an unparsable value is dropped (-1: unset), and
 * the value goes on as an int. */
static int lnetctl_num(const char *s)
{
	char *end;
	long v;

	if (!s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno == ERANGE || *end)
		return -1;
	return (int)v;
}

/* Where in argv the value `arg` sits (getopt: the last option given wins). */
static int argv_pos(int argc, char **argv, const char *arg)
{
	uintptr_t a = (uintptr_t)arg;

	for (int i = argc - 1; arg && i >= 0; i--)
		if (a >= (uintptr_t)argv[i] && a <= (uintptr_t)argv[i] + strlen(argv[i]))
			return i;
	return -1;
}

/* --hop-count (k) and --hop (k + 1) are one option in lnetctl. */
static const char *hop_arg(const struct parsed *p, int k, int argc, char **argv)
{
	const char *a = p->v[k].arg, *b = p->v[k + 1].arg;

	if (!a || !b)
		return a ? a : b;
	return argv_pos(argc, argv, a) > argv_pos(argc, argv, b) ? a : b;
}

/* lnetctl checks the mandatory options before anything else and says so on
 * stdout; exit 234. */
static bool route_missing(const char *net, const char *gw, struct ctl_reply *rp)
{
	if (net && gw)
		return false;
	ybuf_printf(&rp->out, "missing mandatory parameters:'%s'\n",
		    !net && !gw ? "net , gateway" : !net ? "net" : "gateway");
	return true;
}

enum { RA_NET, RA_GW, RA_HOPC, RA_HOP, RA_PRIO, RA_HS };

static int route_change_cmd(struct ctl_ctx *ctx, bool add, const char *net, const char *gwstr,
			    int hops, int prio, struct ctl_reply *rp)
{
	const char *op = add ? "add" : "del", *msg = NULL;
	ulnet_nid_t *gw;
	int n, rc = 0;

	if (route_missing(net, gwstr, rp))
		return -EINVAL;
	gw = malloc(CTL_MAX_GW_NIDS * sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	n = ctl_nid_range_expand(gwstr, gw, CTL_MAX_GW_NIDS, &msg, NULL);
	if (n < 0) {
		y_nl_error(&rp->err, op, "route", n, msg);
		rc = -EINVAL;
	} else if (!ctx->ln) {
		y_nl_error(&rp->err, op, "route", -ENETDOWN, "Network is down");
		rc = -EINVAL;
	}
	/* one route per NID, in order; the first error stops (the kernel's
	 * handler walks its list the same way) */
	for (int i = 0; rc == 0 && i < n; i++) {
		int err = ctl_route_change(ctx->ln, add, net, &gw[i], hops, prio, &msg);

		if (err < 0) {
			y_nl_error(&rp->err, op, "route", err, msg);
			rc = -EINVAL;
		}
	}
	free(gw);
	return rc;
}

static int cmd_route_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			 int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	/* lnetctl lists --health_sensitivity but does not take it (it prints
	 * the help and adds nothing); ulnet refuses it rather than ignore it. */
	if (p->v[RA_HS].set) {
		y_nl_error(&rp->err, "add", "route", -EOPNOTSUPP,
			   "--health_sensitivity is not supported by ulnet");
		return -EINVAL;
	}
	return route_change_cmd(ctx, true, p->v[RA_NET].arg, p->v[RA_GW].arg,
				lnetctl_num(hop_arg(p, RA_HOPC, argc, argv)),
				lnetctl_num(p->v[RA_PRIO].arg), rp);
}

static int cmd_route_del(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			 int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return route_change_cmd(ctx, false, p->v[0].arg, p->v[1].arg, -1, -1, rp);
}

/* --- route show ----------------------------------------------------------------------- */

enum { RS_NET, RS_GW, RS_HOPC, RS_HOP, RS_PRIO, RS_VERBOSE };

static bool route_match(const struct ulnet_route_info *r, ulnet_net_t net, const ulnet_nid_t *gw,
			int hops, int prio)
{
	return (net == ULNET_NET_ANY || r->net == net) &&
	       (!gw || ulnet_nid_same(gw, &r->gateway)) && (hops == -1 || r->hops == hops) &&
	       (prio == -1 || r->priority == (unsigned)prio);
}

static int cmd_route_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			  int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	const char *netstr = p->v[RS_NET].arg, *gwstr = p->v[RS_GW].arg, *msg = NULL;
	ulnet_nid_t *gw = NULL;
	int ngw = 0, rc = 0;

	if (gwstr) {
		gw = malloc(CTL_MAX_GW_NIDS * sizeof(*gw));
		if (!gw)
			return -ENOMEM;
		ngw = ctl_nid_range_expand(gwstr, gw, CTL_MAX_GW_NIDS, &msg, NULL);
		if (ngw < 0) {
			y_nl_error(&rp->err, "show", "route", ngw, msg);
			free(gw);
			return -EINVAL;
		}
	}
	if (!ctx->ln) {
		y_nl_error(&rp->err, "show", "route", -ENETDOWN, "Network is down");
		free(gw);
		return -EINVAL;
	}
	struct ulnet_route_info *all, *shown = NULL;
	int n = ctl_get_routes(ctx->ln, &all), ns = 0;

	if (n < 0) {
		free(gw);
		return n;
	}
	if (!netstr && !gwstr) {
		/* lnetctl sends no filter at all then, and lists every route
		 * whatever --hop or --priority says: refused, not ignored */
		static const int filt[] = { RS_HOPC, RS_HOP, RS_PRIO };
		static const char *const fname[] = { "hop-count", "hop", "priority" };

		for (size_t i = 0; i < sizeof(filt) / sizeof(filt[0]); i++) {
			char why[128];

			if (!p->v[filt[i]].set)
				continue;
			snprintf(why, sizeof(why), "--%s without --net or --gateway is not supported "
				 "by ulnet (lnetctl lists every route)", fname[i]);
			y_nl_error(&rp->err, "show", "route", -EOPNOTSUPP, why);
			rc = -EINVAL;
			goto out;
		}
		ctl_render_route_show(&rp->out, all, n, p->v[RS_VERBOSE].set);
		goto out;
	}
	/* an unparsable net filters nothing (LNET_NET_ANY); a gateway list
	 * is one filter per NID, the results one after another */
	ulnet_net_t net = ULNET_NET_ANY;
	int hops = lnetctl_num(hop_arg(p, RS_HOPC, argc, argv));
	int prio = lnetctl_num(p->v[RS_PRIO].arg);

	if (netstr && ulnet_net_parse(netstr, &net, NULL) < 0)
		net = ULNET_NET_ANY;
	for (int pass = 0; pass < 2; pass++) {
		/* count, then fill */
		if (pass == 1) {
			shown = malloc((size_t)(ns ? ns : 1) * sizeof(*shown));
			if (!shown) {
				rc = -ENOMEM;
				goto out;
			}
			ns = 0;
		}
		for (int g = 0; g < (gw ? ngw : 1); g++)
			for (int i = 0; i < n; i++)
				if (route_match(&all[i], net, gw ? &gw[g] : NULL, hops, prio)) {
					if (pass == 1)
						shown[ns] = all[i];
					ns++;
				}
	}
	/* no route (or none matching): nothing at all, exit 0 */
	ctl_render_route_show(&rp->out, shown, ns, p->v[RS_VERBOSE].set);
out:
	free(shown);
	free(all);
	free(gw);
	return rc;
}

/* --- the "route" table ------------------------------------------------------------------ */

static const struct optspec route_add_opts[] = {
	[RA_NET] = { "net", 'n', ARG_REQ },
	[RA_GW] = { "gateway", 'g', ARG_REQ },
	[RA_HOPC] = { "hop-count", 'c', ARG_REQ },
	[RA_HOP] = { "hop", 0, ARG_REQ },
	[RA_PRIO] = { "priority", 'p', ARG_REQ },
	[RA_HS] = { "health_sensitivity", 0, ARG_REQ },
};
static const struct optspec route_del_opts[] = { { "net", 'n', ARG_REQ }, { "gateway", 'g', ARG_REQ } };
static const struct optspec route_show_opts[] = {
	[RS_NET] = { "net", 'n', ARG_REQ },
	[RS_GW] = { "gateway", 'g', ARG_REQ },
	[RS_HOPC] = { "hop-count", 'c', ARG_REQ },
	[RS_HOP] = { "hop", 0, ARG_REQ },
	[RS_PRIO] = { "priority", 'p', ARG_REQ },
	/* lnetctl's -v takes no level: "-v 2" is "-v" (the digit is taken
	 * here and means nothing) */
	[RS_VERBOSE] = { "verbose", 'v', ARG_OPT_NUM },
};

const struct cmd ctl_route_cmds[] = {
	{ "add", cmd_route_add, NULL, "add a route\n"
	  "\t--net: net name (e.g. tcp0)\n"
	  "\t--gateway: gateway nid (e.g. 10.1.1.2@tcp), or a list or range of them\n"
	  "\t--hop|hop-count: number to final destination (1 <= hops <= 255)\n"
	  "\t--priority: priority of route (0 - highest prio)\n"
	  "\t--health_sensitivity: not supported by ulnet (refused)\n", LK_WRITE,
	  OPTS(route_add_opts), 0, false },
	{ "del", cmd_route_del, NULL, "delete a route\n"
	  "\t--net: net name (e.g. tcp0)\n"
	  "\t--gateway: gateway nid (e.g. 10.1.1.2@tcp)\n", LK_WRITE, OPTS(route_del_opts), 0, false },
	{ "show", cmd_route_show, NULL, "show routes\n"
	  "\t--net: net name (e.g. tcp0) to filter on\n"
	  "\t--gateway: gateway nid (e.g. 10.1.1.2@tcp) to filter on\n"
	  "\t--hop|hop-count: number to final destination (1 <= hops <= 255) to filter on\n"
	  "\t--priority: priority of route (0 - highest prio) to filter on\n"
	  "\t--verbose: display detailed output per route\n", LK_READ, OPTS(route_show_opts), 0,
	  false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
