/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_peer.c - the "peer" commands (add, del, show, list, set) and their
 * table; the peer lookup of "peer show" also serves "debug peer".
 */
#include "ctl_cmds_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* --- peer -------------------------------------------------------------------------- */

/*
 * The primary NID and the --nid list of peer add / del. The list is a NID
 * range list (ctl_nidrange.c), expanded into `nids` (CTL_MAX_PEER_NIDS
 * room); it is read before the primary, as lnetctl expands it before the
 * kernel sees the primary. On a bad list lnetctl says "can't parse
 * nidrange" on stdout (naming the string up to its first '@'; here the
 * item at fault) and its reason in the error YAML, exit 234.
 */
static int peer_nids(const char *op, const char *prim, const char *list, ulnet_nid_t *primary,
		     ulnet_nid_t *nids, struct ctl_reply *rp)
{
	char msg[300], bad[CTL_MAX_ARG + 1] = "";
	int n = 0;

	if (!prim) {
		y_nl_error(&rp->err, op, "peer", -EINVAL, "--prim_nid must be specified");
		return -EINVAL;
	}
	if (list) {
		struct ctl_nidrange_err where;
		const char *why = NULL;

		n = ctl_nid_range_expand(list, nids, CTL_MAX_PEER_NIDS, &why, &where);
		if (n == -E2BIG) {
			y_nl_error(&rp->err, op, "peer", -E2BIG,
				   "Unable to parse nidlist: specifies more NIDs than allowed");
			return -EINVAL;
		}
		if (n < 0) {
			snprintf(msg, sizeof(msg), "can't parse nidrange: \"%.*s\"\n",
				 (int)(where.len > 200 ? 200 : where.len), list + where.off);
			ybuf_puts(&rp->out, msg);
			y_nl_error(&rp->err, op, "peer", n, why);
			return -EINVAL;
		}
	}
	char *w[1] = { (char *)prim };

	if (ctl_parse_nid_list(w, 1, primary, 1, bad, sizeof(bad)) != 1) {
		snprintf(msg, sizeof(msg), "Unable to parse primary NID '%s'", prim);
		y_nl_error(&rp->err, op, "peer", -EINVAL, msg);
		return -EINVAL;
	}
	return n;
}

static int cmd_peer_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (p->v[3].set) {
		y_nl_error(&rp->err, "add", "peer", -EOPNOTSUPP, "--ip2nets is not supported by ulnet");
		return -EINVAL;
	}
	if (ctl_need_ln(ctx, "add", "peer", rp))
		return -EINVAL;
	ulnet_nid_t prim, nids[CTL_MAX_PEER_NIDS];
	int n = peer_nids("add", p->v[0].arg, p->v[1].arg, &prim, nids, rp);

	if (n < 0)
		return -EINVAL;
	/* lnetctl's --force sets the same request flag as --lock_prim */
	rc = ulnet_peer_add_flags(ctx->ln, &prim, nids, n,
				  (p->v[2].set ? ULNET_PEER_ADD_NON_MR : 0) |
				  (p->v[4].set || p->v[5].set ? ULNET_PEER_ADD_LOCK_PRIMARY : 0));
	if (rc < 0) {
		char eb[96], msg[200];

		snprintf(msg, sizeof(msg), "cannot add peer: %s", ctl_strerror(rc, eb, sizeof(eb)));
		y_nl_error(&rp->err, "add", "peer", rc, msg);
		return -EINVAL;
	}
	return 0;
}

static int cmd_peer_del(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (ctl_need_ln(ctx, "del", "peer", rp))
		return -EINVAL;
	ulnet_nid_t prim, nids[CTL_MAX_PEER_NIDS];
	int n = peer_nids("del", p->v[0].arg, p->v[1].arg, &prim, nids, rp);

	if (n < 0)
		return -EINVAL;
	/* lnetctl's --lock_prim sets the same request flag as --force */
	rc = ulnet_peer_del_flags(ctx->ln, &prim, n ? nids : NULL, n,
				  p->v[2].set || p->v[3].set ? ULNET_PEER_DEL_FORCE : 0);
	if (rc < 0) {
		char eb[96], msg[200];

		snprintf(msg, sizeof(msg), "cannot del peer: %s", ctl_strerror(rc, eb, sizeof(eb)));
		y_nl_error(&rp->err, "del", "peer", rc, msg);
		return -EINVAL;
	}
	return 0;
}

static bool peer_has_nid(const struct ulnet_peer_info *pi, const ulnet_nid_t *nid)
{
	if (ulnet_nid_same(&pi->primary, nid))
		return true;
	for (int j = 0; j < pi->nnis; j++)
		if (ulnet_nid_same(&ulnet_peer_info_ni(pi, j)->nid, nid))
			return true;
	return false;
}

int ctl_peer_show_common(struct ctl_ctx *ctx, const char *nidstr, int verbose, bool list,
			 struct ctl_reply *rp)
{
	ulnet_nid_t want;

	if (nidstr) {
		char *w[1] = { (char *)nidstr };
		char bad[CTL_MAX_ARG + 1];

		if (ctl_parse_nid_list(w, 1, &want, 1, bad, sizeof(bad)) != 1) {
			y_nl_error(&rp->err, "show", "peer", -EINVAL,
				   "Unable to parse nidlist: no valid NIDs in string");
			return -EINVAL;
		}
	}
	if (!ctx->ln)
		return ctl_down_error(rp, "peer", "Network is down");
	struct ulnet_peer_info *pi;
	int n = ctl_get_peers(ctx->ln, &pi);

	if (n < 0)
		return n;

	if (nidstr) {
		int k = 0;

		for (int i = 0; i < n; i++) {
			if (peer_has_nid(&pi[i], &want))
				pi[k++] = pi[i];
			else
				ulnet_peer_info_release(&pi[i]);
		}
		n = k;
		if (n == 0) {
			/* lnetctl 2.17: silent, exit status 234 (-EINVAL). */
			free(pi);
			return -EINVAL;
		}
	}
	if (list)
		ctl_render_peer_list(&rp->out, pi, n);
	else
		ctl_render_peer_show(&rp->out, pi, n, verbose);
	ctl_free_peers(pi, n);
	return 0;
}

static int cmd_peer_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			 const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ctl_peer_show_common(ctx, p->v[0].arg, ctl_verbosity(&p->v[1]), false, rp);
}

static int cmd_peer_list(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			 const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ctl_peer_show_common(ctx, NULL, 0, true, rp);
}

static int cmd_peer_set(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ctl_set_value(ctx, c, true, p, rp);
}

/* --- the "peer" table ---------------------------------------------------------- */

/* The options of each command (the handlers index p->v[] in this order). */
static const struct optspec peer_add_opts[] = {
	{ "prim_nid", 'k', ARG_REQ }, { "nid", 'n', ARG_REQ }, { "non_mr", 'm', ARG_NONE },
	{ "ip2nets", 'i', ARG_REQ }, { "lock_prim", 'l', ARG_NONE }, { "force", 'f', ARG_NONE },
};
static const struct optspec peer_del_opts[] = {
	{ "prim_nid", 'k', ARG_REQ }, { "nid", 'n', ARG_REQ }, { "force", 'f', ARG_NONE },
	{ "lock_prim", 'l', ARG_NONE },
};
static const struct optspec peer_show_opts[] = { { "nid", 'n', ARG_REQ }, { "verbose", 'v', ARG_OPT_NUM } };

const struct cmd ctl_peer_cmds[] = {
	{ "add", cmd_peer_add, NULL, "add a peer\n"
	  "\t--prim_nid: primary NID of the peer\n"
	  "\t--nid: comma-separated list of peer NIDs, ranges allowed\n"
	  "\t       (10.0.0.[1-4,7]@tcp, 10.0.[1-2].[2-8/2]@tcp, [3-5]@gni)\n"
	  "\t--non_mr: the peer is not Multi-Rail capable\n"
	  "\t--lock_prim: lock primary nid\n"
	  "\t--ip2nets: not supported by ulnet (refused)\n", LK_WRITE,
	  OPTS(peer_add_opts), 0, false },
	{ "del", cmd_peer_del, NULL, "delete a peer (or some of its NIDs)\n"
	  "\t--prim_nid: primary NID of the peer\n"
	  "\t--nid: comma-separated list of NIDs to remove, ranges allowed\n"
	  "\t       (the primary NID among them: the whole peer)\n"
	  "\t--force: force-delete locked primary NID\n", LK_WRITE,
	  OPTS(peer_del_opts), 0, false },
	{ "show", cmd_peer_show, NULL, "show peer information\n"
	  "\t--nid: NID of the peer to show\n"
	  "\t--verbose|-v [0-4]: detail level\n", LK_READ, OPTS(peer_show_opts), 0, false },
	{ "list", cmd_peer_list, NULL, "list the primary NIDs of all peers\n", LK_READ, NOOPTS, 0, false },
	{ "set", cmd_peer_set, NULL, "set peer ni specific parameter\n"
	  "\t--nid: Peer NI NID to set the value on\n"
	  "\t--health: specify health value to set (0-1000)\n"
	  "\t--all: set all peer_nis values to the one specified\n"
	  "\t--state: set peer state (DANGEROUS: for test/debug only)\n"
	  "\t--net, --lnd-timeout, --conns-per-peer: net set only (refused)\n", LK_WRITE,
	  OPTS(ctl_set_value_opts), -1 /* its own error */, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
