/* SPDX-License-Identifier: MIT */
/*
 * node.c - the ulnet node of a ulst command: global options (--nid,
 * --accept-port, --accept, --transaction-timeout, --peer-credits, --routes,
 * --o2ib-service, --o2ib-cksum, --o2ib-timeout, -v) and bringing the node
 * up and down.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lnd.h"
#include "modopts.h"
#include "ulnet/routing.h"
#include "ulst.h"

const char ulst_global_help[] =
	"Node options (before or after the command):\n"
	"  -n, --nid NID           this node's NID, e.g. 192.168.1.2@tcp (required);\n"
	"                          given again (up to 4), an NI for each: a Multi-Rail\n"
	"                          node whose first NID is its primary\n"
	"  -p, --accept-port PORT  acceptor port, the same on every node (default 988)\n"
	"  -a, --accept MODE       accept connections from: secure (privileged source\n"
	"                          ports, default), all, none\n"
	"  -T, --transaction-timeout S\n"
	"                          LNet's transaction_timeout, 3..3600 s: an ACK or\n"
	"                          REPLY that does not come in S ends its operation\n"
	"                          (default 150, the kernel's)\n"
	"      --peer-credits N    the NI's peer_credits, 1..255 (default 8): messages\n"
	"                          in flight to a peer; on o2ib, the queue depth of\n"
	"                          the node's connections\n"
	"      --routes ROUTES     routes to remote nets, in the syntax of the lnet\n"
	"                          module's routes= parameter: \"NET [HOPS] GATEWAY_NID\n"
	"                          [...][; ...]\", e.g. \"o2ib 10.0.0.3@tcp\"; each\n"
	"                          gateway on the node's net\n"
	"  --o2ib-service PORT     an o2ib NID's rdma_cm port, the same on every node\n"
	"                          (ko2iblnd's service; default 987)\n"
	"  --o2ib-cksum            an o2ib NID checksums every message it sends\n"
	"                          (ko2iblnd's cksum=1)\n"
	"  --o2ib-timeout S        an o2ib NID's tx timeout, 1..3600 s: a message not\n"
	"                          done (sent and answered) in S fails and closes its\n"
	"                          connection (ko2iblnd's timeout; default 50)\n"
	"  -v, --verbose           ulnet log at INFO (twice: DEBUG) on stderr\n";

void ulst_global_init(struct ulst_global *g)
{
	memset(g, 0, sizeof(*g));
	g->port = 988;
	snprintf(g->accept, sizeof(g->accept), "secure");
}

int ulst_global_option(struct ulst_global *g, const char *cmd, int opt, const char *arg)
{
	unsigned long v;

	switch (opt) {
	case 'n':
		if (g->nnids == ULST_MAX_NIDS) {
			ulst_arg_error(cmd, "--nid '%s': at most %d NIDs", arg, ULST_MAX_NIDS);
			return -1;
		}
		g->nids[g->nnids++] = arg;
		return 1;
	case 'p':
		if (ulst_parse_ulong(cmd, "--accept-port", arg, 1, 65535, &v))
			return -1;
		g->port = (unsigned)v;
		return 1;
	case 'a':
		if (strcmp(arg, "secure") && strcmp(arg, "all") && strcmp(arg, "none")) {
			ulst_arg_error(cmd, "--accept '%s': expected secure, all or none", arg);
			return -1;
		}
		snprintf(g->accept, sizeof(g->accept), "%s", arg);
		return 1;
	case 'T':
		/* above retry_count (2), as ulnet_globals_set() wants */
		if (ulst_parse_ulong(cmd, "--transaction-timeout", arg, 3, 3600, &v))
			return -1;
		g->tx_timeout = (unsigned)v;
		return 1;
	case ULST_OPT_PEER_CREDITS:
		if (ulst_parse_ulong(cmd, "--peer-credits", arg, 1, 255, &v))
			return -1;
		g->peer_credits = (unsigned)v;
		return 1;
	case ULST_OPT_ROUTES: {
		struct modopt_route *r = NULL;
		char why[256] = "";
		int n = 0;

		/* checked here, added once the NI is up (ulst_node_start) */
		if (modopts_parse_routes(arg, &r, &n, why, sizeof(why)) < 0 || n == 0) {
			ulst_arg_error(cmd, "--routes '%s': %s", arg,
				       n == 0 && !why[0] ? "no route in it (expected \"NET GATEWAY_NID[; ...]\")"
							 : why);
			free(r);
			return -1;
		}
		free(r);
		g->routes = arg;
		return 1;
	}
	case ULST_OPT_O2IB_SERVICE:
		if (ulst_parse_ulong(cmd, "--o2ib-service", arg, 1, 65535, &v))
			return -1;
		g->o2ib_service = (unsigned)v;
		return 1;
	case ULST_OPT_O2IB_CKSUM:
		g->o2ib_cksum = true;
		return 1;
	case ULST_OPT_O2IB_TIMEOUT:
		if (ulst_parse_ulong(cmd, "--o2ib-timeout", arg, 1, 3600, &v))
			return -1;
		g->o2ib_timeout = (unsigned)v;
		return 1;
	case 'v':
		g->verbose++;
		return 1;
	default:
		return 0;
	}
}

static void ulst_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	(void)arg;
	fprintf(stderr, "ulst: ulnet %s: %s\n", names[lvl & 3], msg);
}

/* The routes of --routes (already checked by ulst_global_option): each
 * added, or an error naming it; ULST_EXIT_USAGE when one cannot be. */
static int add_routes(const struct ulst_global *g, const char *cmd, struct ulst_node *n)
{
	struct modopt_route *r = NULL;
	char why[256] = "", nb[ULNET_NIDSTR_SIZE], net[ULNET_NETSTR_SIZE];
	int cnt = 0, rc = ULST_EXIT_OK;

	if (!g->routes)
		return ULST_EXIT_OK;
	if (modopts_parse_routes(g->routes, &r, &cnt, why, sizeof(why)) < 0) {
		ulst_arg_error(cmd, "--routes '%s': %s", g->routes, why);
		return ULST_EXIT_USAGE;
	}
	for (int i = 0; i < cnt; i++) {
		struct ulnet_route_conf rc_ = {
			.net = r[i].net, .gateway = r[i].gw, .hops = r[i].hops, .priority = r[i].priority,
		};
		int e = ulnet_route_add(n->ln, &rc_);

		if (e == 0)
			continue;
		ulnet_nid_str(&r[i].gw, nb);
		if (ulnet_net_format(r[i].net, net, sizeof(net)) < 0)
			snprintf(net, sizeof(net), "?");
		ulst_arg_error(cmd, "--routes '%s': route to %s through %s: %s", g->routes, net, nb,
			       e == -EHOSTUNREACH ? "the gateway is not on this node's net"
			       : e == -EEXIST ? "the net is this node's, or the route is there twice"
					      : ulnet_strerror(e));
		rc = ULST_EXIT_USAGE;
		break;
	}
	free(r);
	return rc;
}

int ulst_node_start(const struct ulst_global *g, const char *cmd, struct ulst_node *n)
{
	struct ulnet_opts o = { 0 };
	struct ulnet_ni_conf c = { 0 };
	char nb[ULNET_NIDSTR_SIZE];
	int rc;

	ulnet_nid_t nids[ULST_MAX_NIDS];

	memset(n, 0, sizeof(*n));
	if (!g->nnids) {
		ulst_arg_error(cmd, "--nid is required: the NID of this ulst node, e.g. --nid 192.168.1.2@tcp");
		return ULST_EXIT_USAGE;
	}
	for (int i = 0; i < g->nnids; i++) {
		if (ulst_parse_nid(cmd, "--nid", g->nids[i], &nids[i]))
			return ULST_EXIT_USAGE;
		if (ulnet_net_type(ulnet_nid_net(&nids[i])) != ULNET_LND_TCP &&
		    ulnet_net_type(ulnet_nid_net(&nids[i])) != ULNET_LND_O2IB) {
			ulst_arg_error(cmd, "--nid '%s': only tcp and o2ib NIDs can be configured",
				       g->nids[i]);
			return ULST_EXIT_USAGE;
		}
		for (int j = 0; j < i; j++)
			if (ulnet_nid_same(&nids[i], &nids[j])) {
				ulst_arg_error(cmd, "--nid '%s' given twice", g->nids[i]);
				return ULST_EXIT_USAGE;
			}
	}
	n->nid = nids[0];

	o.log = ulst_log;
	o.log_level = g->verbose >= 2 ? ULNET_LOG_DEBUG : g->verbose ? ULNET_LOG_INFO : ULNET_LOG_WARN;
	rc = ulnet_create(&o, &n->ln);
	if (rc) {
		fprintf(stderr, "ulst %s: cannot create the ulnet instance: %s\n", cmd, ulnet_strerror(rc));
		return ULST_EXIT_FAIL;
	}
	if (g->tx_timeout) {
		struct ulnet_globals gl;

		ulnet_globals_get(n->ln, &gl);
		gl.transaction_timeout = (int)g->tx_timeout;
		rc = ulnet_globals_set(n->ln, &gl);
		if (rc) {
			fprintf(stderr, "ulst %s: --transaction-timeout %u: %s\n", cmd, g->tx_timeout,
				ulnet_strerror(rc));
			ulnet_destroy(n->ln);
			n->ln = NULL;
			return ULST_EXIT_USAGE;
		}
	}
	c.accept_port = (uint16_t)g->port;
	c.tun.tos = -1;
	c.tun.peer_credits = (int)g->peer_credits;
	c.o2ib.service = (int)g->o2ib_service;
	c.o2ib.cksum = g->o2ib_cksum ? 1 : 0;
	c.o2ib.timeout = (int)g->o2ib_timeout;
	snprintf(c.accept, sizeof(c.accept), "%s", g->accept);
	for (int i = 0; i < g->nnids && !rc; i++) {
		c.nid = nids[i];
		ulnet_nid_str(&nids[i], nb);
		rc = ulnet_ni_add(n->ln, &c);
	}
	if (rc) {
		switch (rc) {
		case -EADDRNOTAVAIL:
			fprintf(stderr, "ulst %s: --nid %s: that address is not on this host\n", cmd, nb);
			break;
		case -EADDRINUSE:
			fprintf(stderr, "ulst %s: --accept-port %u: already in use on %s\n", cmd, g->port, nb);
			break;
		case -EACCES:
			fprintf(stderr,
				"ulst %s: --accept-port %u: a privileged port needs root (or CAP_NET_BIND_SERVICE); "
				"use a port >= 1024 on every node\n", cmd, g->port);
			break;
		default:
			fprintf(stderr, "ulst %s: cannot add NI %s (port %u, accept %s): %s\n", cmd, nb,
				g->port, g->accept, ulnet_strerror(rc));
		}
		ulst_node_stop(n);
		return ULST_EXIT_FAIL;
	}
	rc = add_routes(g, cmd, n);
	if (rc)
		ulst_node_stop(n);
	return rc;
}

void ulst_node_stop(struct ulst_node *n)
{
	if (n->ln)
		ulnet_destroy(n->ln);
	n->ln = NULL;
}
