/* SPDX-License-Identifier: MIT */
/*
 * ctl_import.c - export and import: "export" renders the node as lnetctl's
 * YAML; "import" (--add, --del, --show, --exec), ulnetd --config
 * (ctl_apply_config) and "lnet configure --all" apply such a document,
 * loaded within the bounds of a YAML document (size, nesting depth).
 */
#include "ctl_cmds_int.h"
#include "ctl_import_int.h"
#include "lnd/o2iblnd/o2ib_policy.h"
#include "core/nidlist.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- export / import --------------------------------------------------------------------- */

int ctl_cmd_export(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		   const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (!ctx->ln) {
		/* LNet loaded but down: the kernel's export still prints the
		 * module parameters (sanity-lnet saves it as the "global" part
		 * of the configurations it expects) */
		struct ulnet_routing_info none = { .pools = false };
		struct ulnet_globals g;

		if (ctx->saved_g_valid)
			g = ctx->saved_g;
		else
			ulnet_globals_defaults(&g);
		ctl_render_export(&rp->out, NULL, 0, NULL, 0, NULL, 0, &none, &g, p->v[0].set);
		return 0;
	}
	struct ulnet_udsp_rule *ur;
	int nu = ctl_get_udsp(ctx->ln, &ur);
	struct ulnet_ni_info *ni;
	struct ulnet_route_info *ri;
	struct ulnet_peer_info *pi;
	struct ulnet_globals g;
	int nn = ctl_get_nis(ctx->ln, &ni), nr = ctl_get_routes(ctx->ln, &ri);
	int np = ctl_get_peers(ctx->ln, &pi);

	if (nn < 0 || nr < 0 || np < 0 || nu < 0) {
		free(ni);
		free(ri);
		ctl_free_peers(pi, np);
		free(ur);
		return -ENOMEM;
	}

	struct ulnet_routing_info rt;

	ulnet_globals_get(ctx->ln, &g);
	if (ulnet_routing_info(ctx->ln, &rt) < 0)
		rt.pools = false;
	ctl_render_export(&rp->out, ni, nn, ri, nr, pi, np, &rt, &g, p->v[0].set);
	/* udsp: after global:, as lnetctl's export (and in both forms) */
	ctl_render_udsp(&rp->out, ur, nu, 0);
	free(ni);
	free(ri);
	ctl_free_peers(pi, np);
	free(ur);
	return 0;
}

yaml_node_t *ynode(struct imp *im, yaml_node_item_t i)
{
	return yaml_document_get_node(&im->doc, i);
}

const char *yscalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Value of key `k` in mapping `m`, or NULL. */
yaml_node_t *ymap_get(struct imp *im, yaml_node_t *m, const char *k)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *key = yscalar(ynode(im, p->key));

		if (key && strcmp(key, k) == 0)
			return ynode(im, p->value);
	}
	return NULL;
}

void imp_error(struct imp *im, yaml_node_t *at, int err, const char *fmt, ...)
{
	char msg[400], full[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (at)
		snprintf(full, sizeof(full), "%s:%zu:%zu: %s", im->name, at->start_mark.line + 1,
			 at->start_mark.column + 1, msg);
	else
		snprintf(full, sizeof(full), "%s: %s", im->name, msg);
	y_nl_error(im->err, im->mode == IMP_DEL ? "del" : "add", "import", err, full);
	im->nerr++;
}

int yint(yaml_node_t *n, long *v)
{
	return ctl_parse_int(yscalar(n), LONG_MIN, LONG_MAX, v);
}

/* A value of key `k` that is not what it must be, in lnetctl's words (the
 * sanity suite looks for them): "no value specified for key 'K'" when it
 * is empty, else "invalid value 'V' for key 'K'". */
void imp_bad_value(struct imp *im, yaml_node_t *vn, const char *k)
{
	const char *v = yscalar(vn);

	if (!v || !*v)
		imp_error(im, vn, -EINVAL, "no value specified for key '%s'", k);
	else
		imp_error(im, vn, -EINVAL, "invalid value '%s' for key '%s'", v, k);
}

bool imp_cpt(struct imp *im, yaml_node_t *v, const char *what)
{
	const char *s = yscalar(v);
	struct lnet_range *r = NULL;
	uint32_t n = 0;
	bool other = false;
	char seq[256];
	int rc;

	/* a flow sequence (CPT: [0-0], CPT: [0,1]) is the expression of its
	 * items in brackets, as lnetctl reads it */
	if (v && v->type == YAML_SEQUENCE_NODE) {
		size_t k = 0;
		bool ok = true;

		seq[k++] = '[';
		for (yaml_node_item_t *it = v->data.sequence.items.start;
		     it < v->data.sequence.items.top && ok; it++) {
			const char *item = yscalar(ynode(im, *it));
			size_t l = item ? strlen(item) : 0;

			ok = item && l > 0 && k + l + 2 < sizeof(seq);
			if (!ok)
				break;
			if (it != v->data.sequence.items.start)
				seq[k++] = ',';
			memcpy(seq + k, item, l);
			k += l;
		}
		seq[k++] = ']';
		seq[k] = '\0';
		s = ok && k > 2 ? seq : NULL;
	}
	/* the kernel's expression syntax ("N", "[a,b-c/s]"): the NID list's
	 * field parser; "*" would name every partition, so no */
	rc = s && *s && !strchr(s, '*') ? lnet_nidlist_field_parse(s, s, s + strlen(s), 4095, &r, &n,
								 NULL) : -EINVAL;
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		other |= r[i].hi > 0;
	free(r);
	if (rc == -ENOMEM) {
		imp_error(im, v, rc, "out of memory");
		return false;
	}
	if (rc < 0 || n == 0) {
		imp_error(im, v, -EINVAL, "invalid CPT '%s' of %s", s ? s : "?", what);
		return false;
	}
	if (!other)
		return true;
	imp_error(im, v, -EOPNOTSUPP, "CPT '%s' of %s: not supported by ulnet (one CPU partition: "
		  "[0])", s, what);
	return false;
}

void imp_key_refuse(struct imp *im, yaml_node_t *kn, enum imp_sec s)
{
	const char *k = yscalar(kn);

	imp_error(im, kn, -EOPNOTSUPP, "'%s' in '%s' is not supported by ulnet", k ? k : "?",
		  imp_schema[s].path);
}

yaml_node_t *imp_get(struct imp *im, yaml_node_t *m, enum imp_sec s, int k)
{
	return ymap_get(im, m, imp_schema[s].keys[k].name);
}

bool imp_keys_check(struct imp *im, yaml_node_t *m, enum imp_sec s)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return true;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key);
		int i = imp_key_find(s, yscalar(kn));

		if (i < 0 || imp_schema[s].keys[i].kind == IMPK_REFUSED) {
			imp_key_refuse(im, kn, s);
			return false;
		}
	}
	return true;
}

/* An o2ib-only key of "lnd tunables" on an NI of net type `o2ib`: into
 * the conf, or refused (fmr_*: only the kernel's defaults, 0 being
 * lnetctl's "not given"). */
static bool imp_o2ib_key(struct imp *im, yaml_node_t *kn, int i, long v, bool o2ib,
			 struct ulnet_ni_conf *conf, const char *what)
{
	const char *k = yscalar(kn);
	long def = i == IK_LND_FMR_POOL_SIZE ? KIB_FMR_POOL_SIZE
		   : i == IK_LND_FMR_FLUSH_TRIGGER ? KIB_FMR_FLUSH_TRIGGER : KIB_FMR_CACHE;

	if (!o2ib) {
		imp_error(im, kn, -EOPNOTSUPP, "'%s' in 'lnd tunables' of %s is not supported by "
			  "ulnet: an o2ib LND tunable, and this is not an o2ib NI", k ? k : "?", what);
		return false;
	}
	switch (i) {
	case IK_LND_PEERCREDITS_HIW:
		conf->o2ib.peercredits_hiw = (int)v;
		return true;
	case IK_LND_MAP_ON_DEMAND:
		conf->o2ib.map_on_demand = (int)v;
		return true;
	case IK_LND_CONCURRENT_SENDS:
		conf->o2ib.concurrent_sends = (int)v;
		return true;
	case IK_LND_NTX:
		conf->o2ib.ntx = (int)v;
		return true;
	default:
		if (v == 0 || v == def)
			return true;
		imp_error(im, kn, -EOPNOTSUPP, "'%s: %ld' in 'lnd tunables' of %s is not supported "
			  "by ulnet: it has no FMR pool (only %ld, the kernel's default)",
			  k ? k : "?", v, what, def);
		return false;
	}
}

bool imp_ni_tunables(struct imp *im, yaml_node_t *m, enum imp_sec s, struct ulnet_ni_conf *conf,
		     const char *what)
{
	/* where each key of the two tables goes */
	static const size_t tun_off[IK_TUN_COUNT] = {
		[IK_TUN_PEER_TIMEOUT] = offsetof(struct ulnet_ni_conf, tun.peer_timeout),
		[IK_TUN_PEER_CREDITS] = offsetof(struct ulnet_ni_conf, tun.peer_credits),
		[IK_TUN_PEER_BUFFER_CREDITS] = offsetof(struct ulnet_ni_conf, tun.peer_buffer_credits),
		[IK_TUN_CREDITS] = offsetof(struct ulnet_ni_conf, tun.credits),
	};
	static const size_t lnd_off[IK_LND_TIMEOUT + 1] = {
		[IK_LND_CONNS_PER_PEER] = offsetof(struct ulnet_ni_conf, tun.conns_per_peer),
		[IK_LND_TOS] = offsetof(struct ulnet_ni_conf, tun.tos),
		[IK_LND_TIMEOUT] = offsetof(struct ulnet_ni_conf, sock.sock_timeout),
	};
	bool lnd = s == IMPS_NI_LND_TUN || s == IMPS_IP2NETS_LND_TUN;
	/* an NI's conf has its NID here; an ip2nets rule's configures tcp
	 * NIs only */
	bool o2ib = s == IMPS_NI_LND_TUN && conf->nid.type == ULNET_LND_O2IB;
	const size_t *off = lnd ? lnd_off : tun_off;
	const char *section = lnd ? "lnd tunables" : "tunables";

	if (!m)
		return true;
	if (m->type != YAML_MAPPING_NODE) {
		imp_error(im, m, -EINVAL, "'%s' of %s must be a mapping", section, what);
		return false;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key), *vn = ynode(im, p->value);
		const char *k = yscalar(kn);
		int i = imp_key_find(s, k);
		long v;

		if (i < 0) {
			imp_error(im, kn, -EOPNOTSUPP, "'%s' in '%s' of %s is not supported by ulnet",
				  k ? k : "?", section, what);
			return false;
		}
		if (yint(vn, &v) < 0 || v < -1 || v > INT_MAX) {
			imp_bad_value(im, vn, k);
			return false;
		}
		if (lnd && i > IK_LND_TIMEOUT) {
			if (!imp_o2ib_key(im, kn, i, v, o2ib, conf, what))
				return false;
		} else if (lnd && i == IK_LND_TIMEOUT && o2ib) {
			conf->o2ib.timeout = (int)v;    /* the o2ib LND's own */
		} else {
			*(int *)(void *)((char *)conf + off[i]) = (int)v;
		}
	}
	return true;
}

/* One NI of a net entry: on interface `ifn` (NULL: by its nid). */
static void imp_net_ni(struct imp *im, const char *type, yaml_node_t *ni, const char *ifn)
{
	const char *nid = yscalar(imp_get(im, ni, IMPS_NI, IK_NI_NID));
	yaml_node_t *cpt = imp_get(im, ni, IMPS_NI, IK_NI_CPT);
	struct ulnet_ni_conf conf;
	struct ctl_reply tmp;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.tun.tos = -1;
	ctl_reply_init(&tmp);
	rc = ctl_ni_conf_addr(nid, type, ifn, &conf, &tmp, "add");
	ctl_reply_free(&tmp);
	if (rc) {
		imp_error(im, ni, rc, "cannot configure NI of net '%s': %s", type,
			  nid ? "bad 'nid'" : "bad or missing 'interfaces'");
		return;
	}
	if (cpt && !imp_cpt(im, cpt, "an NI"))
		return;
	if (im->mode == IMP_DEL) {
		rc = ulnet_ni_del(im->ctx->ln, &conf.nid);
		if (rc < 0)
			imp_error(im, ni, rc, "cannot del LNet NI");
		return;
	}
	if (!imp_ni_tunables(im, imp_get(im, ni, IMPS_NI, IK_NI_TUNABLES), IMPS_NI_TUN, &conf,
			     "an NI") ||
	    !imp_ni_tunables(im, imp_get(im, ni, IMPS_NI, IK_NI_LND_TUNABLES), IMPS_NI_LND_TUN,
			     &conf, "an NI"))
		return;
	char why[160];

	rc = ctl_o2ib_tunables_check(&conf, why, sizeof(why));
	if (rc < 0) {
		imp_error(im, ni, rc, "%s", why);
		return;
	}
	ctl_ni_conf_defaults(im->ctx, &conf);
	rc = ulnet_ni_add(im->ctx->ln, &conf);
	if (rc < 0)
		imp_error(im, ni, rc, "cannot add LNet NI");
}

static void imp_net(struct imp *im, yaml_node_t *net)
{
	const char *type;

	/* every key of the entry and of its NIs is one of the schema's (the
	 * state export writes included): anything else is refused before
	 * anything is configured */
	if (!imp_keys_check(im, net, IMPS_NET))
		return;
	type = yscalar(imp_get(im, net, IMPS_NET, IK_NET_TYPE));
	if (!type) {
		imp_error(im, net, -EINVAL, "net entry without 'net type'");
		return;
	}
	if (strcmp(type, "lo") == 0)
		return; /* 0@lo always exists */
	yaml_node_t *nis = imp_get(im, net, IMPS_NET, IK_NET_NIS);

	if (!nis || nis->type != YAML_SEQUENCE_NODE) {
		imp_error(im, net, -EINVAL, "net '%s' without 'local NI(s)' list", type);
		return;
	}
	for (yaml_node_item_t *it = nis->data.sequence.items.start;
	     it < nis->data.sequence.items.top; it++)
		if (!imp_keys_check(im, ynode(im, *it), IMPS_NI))
			return;
	for (yaml_node_item_t *it = nis->data.sequence.items.start;
	     it < nis->data.sequence.items.top; it++) {
		yaml_node_t *ni = ynode(im, *it);
		yaml_node_t *ifs = imp_get(im, ni, IMPS_NI, IK_NI_INTERFACES);

		/* each interface listed is an NI of its own, as lnetctl
		 * configures them (sanity-lnet 450) */
		if (ifs && ifs->type == YAML_MAPPING_NODE &&
		    ifs->data.mapping.pairs.start < ifs->data.mapping.pairs.top) {
			for (yaml_node_pair_t *p = ifs->data.mapping.pairs.start;
			     p < ifs->data.mapping.pairs.top; p++)
				imp_net_ni(im, type, ni, yscalar(ynode(im, p->value)));
		} else {
			imp_net_ni(im, type, ni, NULL);
		}
	}
}

/* NIDs one import peer entry may list: liblnetconfig's
 * LNET_MAX_NIDS_PER_PEER. */
#define IMP_PEER_NIDS 128

/*
 * One "nid:" of a peer's "peer ni" list, appended to nids[*n]: a NID, or a
 * NID range list as liblnetconfig's YAML path reads it (cfs_parse_nidlist,
 * cfs_expand_nidlist: "1.1.1.[1-3]@tcp", "[5-9/2]@gni"). Returns 0 or
 * -EINVAL (error said).
 */
static int imp_peer_nid(struct imp *im, yaml_node_t *nn, const char *s, ulnet_nid_t *nids,
			int *n)
{
	struct ulnet_parse_err pe = { 0 };
	ulnet_nidlist_t *list = NULL;
	int rc;

	if (!s) {
		imp_error(im, nn, -EINVAL, "bad peer ni 'nid'");
		return -EINVAL;
	}
	if (*n >= IMP_PEER_NIDS) {
		rc = -E2BIG;
		goto out;
	}
	if (ulnet_nid_parse(s, &nids[*n], NULL) == 0) {
		(*n)++;
		return 0;
	}
	if (strchr(s, '*')) {
		imp_error(im, nn, -EINVAL, "asterisk not allowed in nidstring '%s'", s);
		return -EINVAL;
	}
	if (!strchr(s, '[')) {
		imp_error(im, nn, -EINVAL, "bad peer ni 'nid' '%s'", s);
		return -EINVAL;
	}
	rc = ulnet_nidlist_parse(s, &list, &pe);
	if (rc == 0) {
		rc = ulnet_nidlist_expand(list, nids + *n, IMP_PEER_NIDS - *n, &pe);
		ulnet_nidlist_free(list);
	}
out:
	if (rc == -E2BIG) {
		imp_error(im, nn, -E2BIG,
			  "'%s' specifies more than the %d NIDs allowed by this operation", s,
			  IMP_PEER_NIDS);
		return -EINVAL;
	}
	if (rc < 0) {
		imp_error(im, nn, rc, "Unable to parse nidlist from: %s (at byte %d: %s)", s,
			  pe.pos + 1, pe.msg);
		return -EINVAL;
	}
	*n += rc;
	return 0;
}

/*
 * A peer entry. --add: the peer with its NIDs (an existing configured peer
 * with this primary NID gets those it lacks). --del, as the kernel's
 * netlink handler: without "peer ni", or with the primary NID among them,
 * the whole peer; otherwise only the NIDs listed.
 */
static void imp_peer(struct imp *im, yaml_node_t *peer)
{
	yaml_node_t *pn = imp_get(im, peer, IMPS_PEER, IK_PEER_PRIMARY);
	const char *prim = yscalar(pn);
	const char *mr = yscalar(imp_get(im, peer, IMPS_PEER, IK_PEER_MR));
	yaml_node_t *pnis = imp_get(im, peer, IMPS_PEER, IK_PEER_NIS);
	ulnet_nid_t p, *nids;
	bool whole = true;
	int n = 0, rc;

	if (!imp_keys_check(im, peer, IMPS_PEER))
		return;
	if (pnis && pnis->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *it = pnis->data.sequence.items.start;
		     it < pnis->data.sequence.items.top; it++)
			if (!imp_keys_check(im, ynode(im, *it), IMPS_PEER_NI))
				return;
	if (!prim || ulnet_nid_parse(prim, &p, NULL) < 0) {
		imp_error(im, pn ? pn : peer, -EINVAL, "bad or missing 'primary nid'");
		return;
	}
	/* liblnetconfig's check and text (sanity-lnet 99b); export writes
	 * "true"/"false", lnetctl's own files "True"/"False" */
	if (im->mode != IMP_DEL && mr && strcasecmp(mr, "true") != 0 &&
	    strcasecmp(mr, "false") != 0) {
		imp_error(im, imp_get(im, peer, IMPS_PEER, IK_PEER_MR), -EINVAL,
			  "Multi-Rail must be set to 'True' or 'False' found '%s'", mr);
		return;
	}
	nids = malloc(IMP_PEER_NIDS * sizeof(*nids));
	if (!nids) {
		imp_error(im, peer, -ENOMEM, "out of memory");
		return;
	}
	if (pnis && pnis->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = pnis->data.sequence.items.start;
		     it < pnis->data.sequence.items.top; it++) {
			yaml_node_t *nn = imp_get(im, ynode(im, *it), IMPS_PEER_NI, IK_PNI_NID);
			int had = n;

			if (imp_peer_nid(im, nn ? nn : ynode(im, *it), yscalar(nn), nids, &n) < 0)
				goto out;
			for (int k = had; k < n; k++) {
				if (!ulnet_nid_same(&nids[k], &p)) {
					whole = false;
					continue;
				}
				/* del: the primary NID deletes the whole peer;
				 * add: the primary is there already */
				if (im->mode == IMP_DEL) {
					whole = true;
					goto del;
				}
				memmove(&nids[k], &nids[k + 1], (size_t)(n - k - 1) * sizeof(*nids));
				n--;
				k--;
			}
		}
	}
del:
	if (im->mode == IMP_DEL) {
		rc = ulnet_peer_del(im->ctx->ln, &p, whole ? NULL : nids, whole ? 0 : n);
		if (rc < 0)
			imp_error(im, peer, rc, "cannot del peer %s", prim);
	} else {
		bool non_mr = mr && (strcasecmp(mr, "false") == 0);

		/* a configured peer of this primary NID takes the NIDs it
		 * lacks (importing an export again changes nothing); a NID of
		 * another peer is an error, as the kernel's */
		rc = ulnet_peer_add(im->ctx->ln, &p, nids, n, non_mr);
		if (rc < 0)
			imp_error(im, peer, rc, "cannot add peer %s", prim);
	}
out:
	free(nids);
}

/* A route entry: net, gateway (a NID, list or range), hop, priority, as
 * "route add" takes them, with its checks and texts; state and type (what
 * export shows) are read back as the node's own view and change nothing.
 * Any other key is refused. --del deletes the route (net and gateway). */
static void imp_route(struct imp *im, yaml_node_t *rt)
{
	const char *net = NULL, *gwstr = NULL, *msg = NULL;
	yaml_node_t *gwn = NULL;
	long v[2] = { -1, -1 };

	if (!rt || rt->type != YAML_MAPPING_NODE) {
		imp_error(im, rt, -EINVAL, "route entry must be a mapping");
		return;
	}
	for (yaml_node_pair_t *p = rt->data.mapping.pairs.start; p < rt->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key), *vn = ynode(im, p->value);
		const char *k = yscalar(kn), *val = yscalar(vn);
		int i = imp_key_find(IMPS_ROUTE, k);

		if (i == IK_ROUTE_HEALTH_SENSITIVITY) {
			imp_error(im, kn, -EOPNOTSUPP, "route key 'health_sensitivity' is not supported by ulnet");
			return;
		}
		if (i < 0) {
			imp_error(im, kn, -EOPNOTSUPP, "unknown route key '%s'", k ? k : "?");
			return;
		}
		if (!val) {
			imp_bad_value(im, vn, k);
			return;
		}
		switch (i) {
		case IK_ROUTE_NET:
			net = val;
			break;
		case IK_ROUTE_GATEWAY:
			gwstr = val;
			gwn = vn;
			break;
		case IK_ROUTE_HOP:
		case IK_ROUTE_PRIORITY: {
			long *vp = &v[i == IK_ROUTE_PRIORITY];

			if (yint(vn, vp) < 0 || *vp < INT_MIN || *vp > INT_MAX) {
				imp_bad_value(im, vn, k);
				return;
			}
			break;
		}
		case IK_ROUTE_STATE:
			if (strcmp(val, "up") != 0 && strcmp(val, "down") != 0) {
				imp_error(im, vn, -EINVAL, "invalid value for 'state' (up or down)");
				return;
			}
			break;
		default: /* IK_ROUTE_TYPE */
			if (strcmp(val, "single-hop") != 0 && strcmp(val, "multi-hop") != 0) {
				imp_error(im, vn, -EINVAL, "invalid value for 'type' (single-hop or multi-hop)");
				return;
			}
			break;
		}
	}
	if (!net || !gwstr) {
		imp_error(im, rt, -EINVAL, "route entry without '%s'", !net ? "net" : "gateway");
		return;
	}
	ulnet_nid_t *gw = malloc(CTL_MAX_GW_NIDS * sizeof(*gw));

	if (!gw) {
		imp_error(im, rt, -ENOMEM, "out of memory");
		return;
	}
	int n = ctl_nid_range_expand(gwstr, gw, CTL_MAX_GW_NIDS, &msg, NULL);

	if (n < 0)
		imp_error(im, gwn, n, "bad 'gateway': %s", msg);
	for (int i = 0; i < n; i++) {
		char nb[ULNET_NIDSTR_SIZE];
		int rc = ctl_route_change(im->ctx->ln, im->mode != IMP_DEL, net, &gw[i], (int)v[0],
					  (int)v[1], &msg);

		if (rc < 0) {
			imp_error(im, rt, rc, "cannot %s route to %s through %s: %s",
				  im->mode == IMP_DEL ? "del" : "add", net, ulnet_nid_str(&gw[i], nb), msg);
			break;
		}
	}
	free(gw);
}

/* A map of integers, each key one of section `s` (cpt[N] counters,
 * buffers): refused unless a number. */
static bool imp_int_map(struct imp *im, yaml_node_t *m, const char *what, enum imp_sec s)
{
	if (!m || m->type != YAML_MAPPING_NODE) {
		imp_error(im, m, -EINVAL, "'%s' must be a mapping", what);
		return false;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key), *vn = ynode(im, p->value);
		const char *k = yscalar(kn);
		long v;

		if (imp_key_find(s, k) < 0) {
			imp_error(im, kn, -EOPNOTSUPP, "unknown %s key '%s'", what, k ? k : "?");
			return false;
		}
		if (yint(vn, &v) < 0) {
			imp_bad_value(im, vn, k);
			return false;
		}
	}
	return true;
}

/* One key of routing: "enable" (its value node in *enable) or, in the
 * sequence that export (routing show) writes, "cpt[N]": the pools of a
 * CPT, counters the node keeps itself, checked and ignored as a route's
 * state and type are. */
static bool imp_routing_key(struct imp *im, yaml_node_t *kn, yaml_node_t *vn, bool seq,
			    yaml_node_t **enable)
{
	const char *k = yscalar(kn);
	int i = imp_key_find(IMPS_ROUTING, k);
	long v;

	if (i == IK_ROUTING_ENABLE) {
		if (yint(vn, &v) < 0 || v < ULNET_ROUTING_DISABLED || v > ULNET_ROUTING_STARTING) {
			imp_error(im, vn, -EINVAL, "invalid value for 'enable' (0 to 3)");
			return false;
		}
		*enable = vn;
		return true;
	}
	if (seq && i == IK_ROUTING_CPT) {
		if (!vn || vn->type != YAML_MAPPING_NODE) {
			imp_error(im, vn, -EINVAL, "'%s' must be a mapping", k);
			return false;
		}
		for (yaml_node_pair_t *p = vn->data.mapping.pairs.start; p < vn->data.mapping.pairs.top; p++) {
			const char *pk = yscalar(ynode(im, p->key));

			if (imp_key_find(IMPS_ROUTING_CPT, pk) < 0) {
				imp_error(im, ynode(im, p->key), -EOPNOTSUPP, "unknown routing pool '%s'",
					  pk ? pk : "?");
				return false;
			}
			if (!imp_int_map(im, ynode(im, p->value), pk, IMPS_ROUTING_POOL))
				return false;
		}
		return true;
	}
	imp_error(im, kn, -EOPNOTSUPP, "unknown routing key '%s'", k ? k : "?");
	return false;
}

/* routing: as export writes it: a map with "enable" (--backup), or a list
 * of "cpt[N]" maps and an "enable" item. enable 1 or 3 (starting) turns
 * routing on, 0 or 2 (stopping) off; import --del turns it off. */
static void imp_routing(struct imp *im, yaml_node_t *r)
{
	yaml_node_t *enable = NULL;
	char descr[200];
	int rc;

	if (r && r->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = r->data.mapping.pairs.start; p < r->data.mapping.pairs.top; p++)
			if (!imp_routing_key(im, ynode(im, p->key), ynode(im, p->value), false, &enable))
				return;
	} else if (r && r->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = r->data.sequence.items.start;
		     it < r->data.sequence.items.top; it++) {
			yaml_node_t *e = ynode(im, *it);

			if (!e || e->type != YAML_MAPPING_NODE) {
				imp_error(im, e, -EINVAL, "routing entry must be a mapping");
				return;
			}
			for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++)
				if (!imp_routing_key(im, ynode(im, p->key), ynode(im, p->value), true, &enable))
					return;
		}
	} else {
		imp_error(im, r, -EINVAL, "'routing' must be a mapping or a list");
		return;
	}
	if (im->mode == IMP_DEL) {
		rc = ctl_routing_set(im->ctx, false, descr, sizeof(descr));
	} else {
		long v;

		if (!enable || yint(enable, &v) < 0)
			return; /* nothing to set */
		rc = ctl_routing_set(im->ctx, v == ULNET_ROUTING_ENABLED || v == ULNET_ROUTING_STARTING,
				     descr, sizeof(descr));
	}
	if (rc < 0)
		imp_error(im, enable ? enable : r, rc, "%s", descr);
}

/* buffers: tiny, small, large as "set *_buffers" takes them (-1: no
 * change, 0: the default); import --del leaves them (as lnetctl). */
static void imp_buffers(struct imp *im, yaml_node_t *b)
{
	long n[ULNET_RTR_NPOOLS] = { -1, -1, -1 };
	char descr[200];
	int rc;

	_Static_assert((int)IK_BUF_COUNT == (int)ULNET_RTR_NPOOLS, "buffers: one key per pool");
	if (!imp_int_map(im, b, "buffers", IMPS_BUFFERS))
		return;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
		yaml_node_t *vn = imp_get(im, b, IMPS_BUFFERS, i);

		if (vn)
			(void)yint(vn, &n[i]);
	}
	if (im->mode == IMP_DEL)
		return;
	rc = ctl_buffers_set(im->ctx, n, descr, sizeof(descr));
	if (rc < 0)
		imp_error(im, b, rc, "%s", descr);
}

static void imp_global(struct imp *im, yaml_node_t *g)
{
	if (!g || g->type != YAML_MAPPING_NODE) {
		imp_error(im, g, -EINVAL, "'global' must be a mapping");
		return;
	}
	for (yaml_node_pair_t *p = g->data.mapping.pairs.start; p < g->data.mapping.pairs.top; p++) {
		const char *k = yscalar(ynode(im, p->key));
		yaml_node_t *vn = ynode(im, p->value);
		int i = imp_key_find(IMPS_GLOBAL, k);
		const struct gset *gs = i >= 0 ? ctl_gset_find(k) : NULL;
		long v;

		if (i >= 0 && imp_schema[IMPS_GLOBAL].keys[i].kind == IMPK_STATE)
			continue; /* lnd_timeout: derived, read-only */
		if (!gs) {
			imp_error(im, ynode(im, p->key), -EOPNOTSUPP, "invalid key '%s' (not a global setting)",
				  k ? k : "?");
			continue;
		}
		if (yint(vn, &v) < 0) {
			imp_bad_value(im, vn, k);
			continue;
		}
		/* --del: back to its default, as lnetctl's for the globals it
		 * knows there (max_interfaces, numa_range, discovery,
		 * drop_asym_route); here every one */
		if (im->mode == IMP_DEL)
			v = ctl_global_default(gs);
		struct ybuf tmp;

		ybuf_init(&tmp);
		if (ctl_global_set_one(im->ctx, gs, v, &tmp) < 0)
			imp_error(im, vn, -EINVAL, "value %ld out of range for '%s'", v, k);
		ybuf_free(&tmp);
	}
}

/* numa: {range: N}, as export writes it: the global numa_range (lnetctl
 * set numa_range). Any other key is refused. */
static void imp_numa(struct imp *im, yaml_node_t *n)
{
	if (!n || n->type != YAML_MAPPING_NODE) {
		imp_error(im, n, -EINVAL, "'numa' must be a mapping");
		return;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key), *vn = ynode(im, p->value);
		const char *k = yscalar(kn);
		struct ybuf tmp;
		long v;

		if (imp_key_find(IMPS_NUMA, k) != IK_NUMA_RANGE) {
			imp_key_refuse(im, kn, IMPS_NUMA);
			continue;
		}
		if (yint(vn, &v) < 0) {
			imp_bad_value(im, vn, k);
			continue;
		}
		/* --del: back to the default, as lnetctl's */
		if (im->mode == IMP_DEL)
			v = ctl_global_default(ctl_gset_find("numa_range"));
		ybuf_init(&tmp);
		if (ctl_global_set_one(im->ctx, ctl_gset_find("numa_range"), v, &tmp) < 0)
			imp_error(im, vn, -EINVAL, "value %ld out of range for numa 'range'", v);
		ybuf_free(&tmp);
	}
}

/* One NID entry of a ping/discover list: a NID, or {primary nid: X} /
 * {nid: X} as older exports have it. */
static bool imp_ping_nid(struct imp *im, yaml_node_t *e, struct parsed *p, const char *what,
			 enum imp_sec sec)
{
	const char *s = yscalar(e);

	if (e && e->type == YAML_MAPPING_NODE && !imp_keys_check(im, e, sec))
		return false;
	if (!s)
		s = yscalar(imp_get(im, e, sec, IK_PNID_PRIMARY));
	if (!s)
		s = yscalar(imp_get(im, e, sec, IK_PNID_NID));
	if (!s) {
		imp_error(im, e, -EINVAL, "invalid %s entry: a NID is wanted", what);
		return false;
	}
	if (p->npos == MAX_PING) {
		imp_error(im, e, -E2BIG, "more than %d NIDs to %s", MAX_PING, what);
		return false;
	}
	p->pos[p->npos++] = (char *)s;
	return true;
}

/*
 * ping: / discover: of `import --exec`: the kernel's form, a mapping of
 * `nids` (a list, or index: NID), and for ping `timeout` (ms, default
 * 1000) and `source` (a NID); or a bare list of NIDs. Any other key is
 * refused, and a section that names no NID is an error: nothing is
 * skipped unsaid.
 */
static void imp_ping(struct imp *im, yaml_node_t *v, bool discover)
{
	const char *what = discover ? "discover" : "ping";
	enum imp_sec sec = discover ? IMPS_DISCOVER : IMPS_PING;
	enum imp_sec nsec = discover ? IMPS_DISCOVER_NID : IMPS_PING_NID;
	yaml_node_t *nids = v;
	struct parsed p;
	char tbuf[24];

	memset(&p, 0, sizeof(p));
	if (v && v->type == YAML_MAPPING_NODE) {
		nids = NULL;
		for (yaml_node_pair_t *pr = v->data.mapping.pairs.start;
		     pr < v->data.mapping.pairs.top; pr++) {
			yaml_node_t *kn = ynode(im, pr->key), *vn = ynode(im, pr->value);
			const char *k = yscalar(kn);
			int i = imp_key_find(sec, k);
			long ms;

			if (i == IK_PING_NIDS) {   /* IK_DISC_NIDS too */
				nids = vn;
			} else if (!discover && i == IK_PING_TIMEOUT) {
				if (yint(vn, &ms) < 0 || ms < 1 || ms > 86400000L) {
					imp_bad_value(im, vn, k);
					return;
				}
				/* ping takes whole seconds: round up */
				snprintf(tbuf, sizeof(tbuf), "%ld", (ms + 999) / 1000);
				p.v[0].set = true;
				p.v[0].arg = tbuf;
			} else if (!discover && i == IK_PING_SOURCE && yscalar(vn)) {
				p.v[1].set = true;
				p.v[1].arg = yscalar(vn);
			} else {
				imp_key_refuse(im, kn, sec);
				return;
			}
		}
	}
	if (nids && nids->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = nids->data.sequence.items.start;
		     it < nids->data.sequence.items.top; it++)
			if (!imp_ping_nid(im, ynode(im, *it), &p, what, nsec))
				return;
	} else if (nids && nids->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *pr = nids->data.mapping.pairs.start;
		     pr < nids->data.mapping.pairs.top; pr++)
			if (!imp_ping_nid(im, ynode(im, pr->value), &p, what, nsec))
				return;
	}
	if (!p.npos) {
		imp_error(im, nids ? nids : v, -EINVAL, "'%s' names no NID", what);
		return;
	}
	ctl_ping_like(im->ctx, discover, &p, im->rp);
}

static int yaml_dump_write(void *data, unsigned char *buffer, size_t size)
{
	ybuf_add(data, (const char *)buffer, size);
	return 1;
}

static int ctl_yaml_dump_to(yaml_document_t *doc, struct ybuf *out)
{
	yaml_emitter_t em;

	yaml_emitter_initialize(&em);
	yaml_emitter_set_indent(&em, 6);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_output(&em, yaml_dump_write, out);
	yaml_emitter_open(&em);
	int ok = yaml_emitter_dump(&em, doc);

	yaml_emitter_close(&em);
	yaml_emitter_delete(&em);
	return ok ? 0 : -EIO;
}

/*
 * Load `text` into `doc`, bounded: a document over CTL_YAML_MAX_BYTES is
 * refused unread, and a first pass over the parser's events stops at the
 * first collection nested deeper than CTL_YAML_MAX_DEPTH, so a hostile
 * file (100k nested "[") costs microseconds, not libyaml's quadratic time.
 * Callers run this before they take the context lock. Errors go to `err`
 * as "op: - import:" YAML naming FILE:LINE:COLUMN and the limit.
 */
static int yaml_load_bounded(const char *name, const char *text, size_t len, const char *op,
			     yaml_document_t *doc, struct ybuf *err)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	char msg[400];
	int depth = 0, rc = 0;
	bool done = false;

	if (len > CTL_YAML_MAX_BYTES) {
		snprintf(msg, sizeof(msg), "%s: %zu bytes, over the limit of %u bytes (%u MiB) of a YAML document",
			 name, len, CTL_YAML_MAX_BYTES, CTL_YAML_MAX_BYTES >> 20);
		y_nl_error(err, op, "import", -EFBIG, msg);
		return -EFBIG;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	/* Every event but the last consumes input or closes a collection. */
	for (size_t iter = 0; !done && rc == 0 && iter < 4 * len + 64; iter++) {
		if (!yaml_parser_parse(&parser, &ev))
			break; /* the load below reports it */
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > CTL_YAML_MAX_DEPTH) {
				snprintf(msg, sizeof(msg),
					 "%s:%zu:%zu: nesting deeper than %d levels (the limit of a YAML document)",
					 name, ev.start_mark.line + 1, ev.start_mark.column + 1,
					 CTL_YAML_MAX_DEPTH);
				y_nl_error(err, op, "import", -EINVAL, msg);
				rc = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (rc)
		return rc;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, doc)) {
		snprintf(msg, sizeof(msg), "%s:%zu:%zu: %s%s%s", name, parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1, parser.problem ? parser.problem : "parse error",
			 parser.context ? " " : "", parser.context ? parser.context : "");
		y_nl_error(err, op, "import", -EINVAL, msg);
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	yaml_parser_delete(&parser);
	return 0;
}

/* Apply a loaded document (freed here). */
static int import_doc(struct ctl_ctx *ctx, const char *name, yaml_document_t *doc, int imode,
		      bool nets_only, struct ybuf *err, struct ctl_reply *rp)
{
	enum imp_mode mode = (enum imp_mode)imode;
	struct imp im = { .ctx = ctx, .name = name, .doc = *doc, .mode = mode, .err = err, .rp = rp };
	int rc = 0;

	yaml_node_t *root = yaml_document_get_root_node(&im.doc);

	if (!root) {
		yaml_document_delete(&im.doc);
		return 0; /* empty file: nothing to do */
	}
	if (root->type != YAML_MAPPING_NODE) {
		imp_error(&im, root, -EINVAL, "top level must be a mapping (net:, peer:, global: ...)");
		rc = -EINVAL;
		goto out;
	}
	if (mode == IMP_SHOW) {
		/* Dumping consumes (frees) the document. */
		rc = ctl_yaml_dump_to(&im.doc, &rp->out);
		return rc;
	}
	if (!ctx->ln) {
		imp_error(&im, NULL, -ENETDOWN, "LNet stack down");
		rc = -EINVAL;
		goto out;
	}
	yaml_node_t *routing = NULL;

	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(&im, p->key), *v = ynode(&im, p->value);
		const char *k = yscalar(kn);
		int key = imp_key_find(IMPS_TOP, k);

		if (key < 0) {
			imp_error(&im, kn, -EOPNOTSUPP, "invalid key '%s' (not a top-level section)", k ? k : "?");
			continue;
		}
		if (nets_only && key != IK_TOP_NET && key != IK_TOP_IP2NETS)
			continue;
		if (mode == IMP_EXEC) {
			if (key == IK_TOP_PING || key == IK_TOP_DISCOVER)
				imp_ping(&im, v, key == IK_TOP_DISCOVER);
			continue;
		}
		bool is_seq = v && v->type == YAML_SEQUENCE_NODE;

		if (key == IK_TOP_NET || key == IK_TOP_PEER || key == IK_TOP_ROUTE) {
			if (!is_seq) {
				imp_error(&im, v, -EINVAL, "'%s' must be a list", k);
				continue;
			}
			for (yaml_node_item_t *it = v->data.sequence.items.start;
			     it < v->data.sequence.items.top; it++) {
				if (key == IK_TOP_NET)
					imp_net(&im, ynode(&im, *it));
				else if (key == IK_TOP_ROUTE)
					imp_route(&im, ynode(&im, *it));
				else
					imp_peer(&im, ynode(&im, *it));
			}
		} else if (key == IK_TOP_ROUTING) {
			/* after buffers:, wherever it is: the pools start at
			 * their size (sizes are kept while routing is off,
			 * and a pool shrinks only as buffers come back) */
			routing = v;
		} else if (key == IK_TOP_BUFFERS) {
			imp_buffers(&im, v);
		} else if (key == IK_TOP_GLOBAL) {
			imp_global(&im, v);
		} else if (key == IK_TOP_NUMA) {
			imp_numa(&im, v);
		} else if (key == IK_TOP_IP2NETS) {
			imp_ip2nets(&im, v);
		} else if (key == IK_TOP_UDSP) {
			if (!is_seq) {
				imp_error(&im, v, -EINVAL, "'%s' must be a list", k);
				continue;
			}
			for (yaml_node_item_t *it = v->data.sequence.items.start;
			     it < v->data.sequence.items.top; it++)
				imp_udsp(&im, ynode(&im, *it));
		}
		/* statistics, ping, discover: nothing to configure
		 * outside --exec. */
	}
	if (routing)
		imp_routing(&im, routing);
	rc = im.nerr ? -EINVAL : 0;
out:
	yaml_document_delete(&im.doc);
	return rc;
}

int ctl_cmd_import(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		   const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;
	/* the last of --add, --del, --show, --exec decides (lnetctl's getopt
	 * loop: "--del --add" adds); none: --add */
	static const enum imp_mode modes[] = { IMP_ADD, IMP_DEL, IMP_SHOW, IMP_EXEC };
	enum imp_mode mode = IMP_ADD;

	for (int i = 0; i < p->nseq; i++)
		if (p->seq[i].k >= 0 && p->seq[i].k < (int)(sizeof(modes) / sizeof(modes[0])))
			mode = modes[p->seq[i].k];
	const char *name = p->npos ? p->pos[0] : "<stdin>";

	if (!blob) {
		/* The client reads the file; a request without it cannot be
		 * served (the daemon does not open client paths). */
		char msg[300];

		snprintf(msg, sizeof(msg), "cannot open '%s': %s", name, "no file content sent");
		y_nl_error(&rp->err, mode == IMP_DEL ? "del" : "add", "import", -EINVAL, msg);
		return -EINVAL;
	}
	/* Parse (bounded) before the lock: a hostile file never holds up
	 * other clients. --show needs no lock, --exec pings as ping does. */
	yaml_document_t doc;

	rc = yaml_load_bounded(name, blob, bloblen, mode == IMP_DEL ? "del" : "add", &doc, &rp->err);
	if (rc)
		return -EINVAL;
	if (mode == IMP_ADD || mode == IMP_DEL)
		pthread_rwlock_wrlock(&ctx->lock);
	else if (mode == IMP_EXEC)
		pthread_rwlock_rdlock(&ctx->lock);
	rc = import_doc(ctx, name, &doc, mode, false, &rp->err, rp);
	if (mode != IMP_SHOW)
		pthread_rwlock_unlock(&ctx->lock);
	return rc ? -EINVAL : (mode == IMP_EXEC && rp->out.len && strstr(ybuf_str(&rp->out), "manage:")) ? -1 : 0;
}

int ctl_apply_config(struct ctl_ctx *ctx, const char *name, const char *text, size_t len,
		     struct ybuf *err)
{
	struct ctl_reply rp;

	ctl_reply_init(&rp);
	int rc = ctl_import_text(ctx, name, text, len, IMP_ADD, false, err, &rp);

	ctl_reply_free(&rp);
	return rc;
}

int ctl_import_text(struct ctl_ctx *ctx, const char *name, const char *text, size_t len,
		    int imode, bool nets_only, struct ybuf *err, struct ctl_reply *rp)
{
	yaml_document_t doc;
	int rc = yaml_load_bounded(name, text, len, imode == IMP_DEL ? "del" : "add", &doc, err);

	if (rc)
		return rc;
	return import_doc(ctx, name, &doc, imode, nets_only, err, rp);
}
