/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_conn.c - the "conn" commands and their table: "conn show", the
 * node's established connections (ulnet_conn_list()), standing in for the
 * kernel's `lctl --net tcp conn_list` (lnetctl has no such command: its
 * lines are "NID TYPE[CPT]LOCALIP->REMOTEIP:PORT TXBUF/RXBUF nagle", which
 * conn show gives as YAML, with the connection's counters).
 */
#include "ctl_cmds_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The list changes while it is read: asked again with room for what it
 * said, a few times; past that, what fitted. */
int ctl_get_conns(ulnet_t *ln, struct ulnet_conn_info **out)
{
	int cap = 16;

	for (int tries = 0;; tries++) {
		struct ulnet_conn_info *v = malloc((size_t)cap * sizeof(*v));
		int n;

		if (!v) {
			*out = NULL;
			return -ENOMEM;
		}
		n = ulnet_conn_list(ln, v, cap);
		if (n < 0) {
			free(v);
			*out = NULL;
			return n;
		}
		if (n <= cap || tries == 4) {
			*out = v;
			return n <= cap ? n : cap;
		}
		free(v);
		cap = n + n / 4 + 16;
	}
}

enum { CS_NET, CS_NID, CS_COUNT };

static const struct optspec conn_show_opts[CS_COUNT] = {
	[CS_NET] = { "net", 'n', ARG_REQ },
	[CS_NID] = { "nid", 0, ARG_REQ },
};

static int cmd_conn_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			 int argc, char **argv, const char *blob, size_t bloblen,
			 struct ctl_reply *rp)
{
	struct ulnet_parse_err pe = { 0 };
	ulnet_net_t net = 0;
	ulnet_nid_t nid;
	char msg[CTL_MAX_ARG + 128];

	/* the filters are checked first, as net show's --net, whatever the
	 * state of LNet */
	if (p->v[CS_NET].set && ulnet_net_parse(p->v[CS_NET].arg, &net, &pe) < 0) {
		snprintf(msg, sizeof(msg), "cannot parse net '%s': %s", p->v[CS_NET].arg,
			 pe.msg[0] ? pe.msg : "invalid net");
		y_nl_error(&rp->err, "show", "conn", -EINVAL, msg);
		return -EINVAL;
	}
	if (p->v[CS_NID].set && ctl_nid_parse_host(p->v[CS_NID].arg, &nid) < 0) {
		snprintf(msg, sizeof(msg), "cannot parse NID '%s'", p->v[CS_NID].arg);
		y_nl_error(&rp->err, "show", "conn", -EINVAL, msg);
		return -EINVAL;
	}
	if (!ctx->ln)
		return ctl_down_error(rp, "conn", "LNet stack down");
	struct ulnet_conn_info *ci;
	int n = ctl_get_conns(ctx->ln, &ci), k = 0;

	if (n < 0) {
		char eb[96];

		snprintf(msg, sizeof(msg), "cannot list the connections: %s",
			 ctl_strerror(n, eb, sizeof(eb)));
		y_nl_error(&rp->err, "show", "conn", n, msg);
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (p->v[CS_NET].set && ulnet_nid_net(&ci[i].ni) != net)
			continue;
		if (p->v[CS_NID].set && !ulnet_nid_same(&ci[i].peer, &nid))
			continue;
		ci[k++] = ci[i];
	}
	/* nothing matching (no tcp NI, no peer yet): nothing, exit 0, as
	 * net show and route show */
	ctl_render_conn_show(&rp->out, ci, k);
	free(ci);
	return 0;
}

const struct cmd ctl_conn_cmds[] = {
	{ "show", cmd_conn_show, NULL, "show the established connections of the tcp NIs\n"
	  "\t(type, addresses, socket buffers, counters; the kernel's lctl conn_list)\n"
	  "\t--net: net name (e.g. tcp0) to filter on\n"
	  "\t--nid: peer NID to filter on\n", LK_READ, OPTS(conn_show_opts), 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
