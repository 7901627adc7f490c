/* SPDX-License-Identifier: MIT */
/*
 * ctl_import_ip2nets.c - the `ip2nets:` section of an import: each rule
 * resolved to the node's interfaces (ctl_ip2nets.c), as lnetctl does, and
 * its NIs added or deleted.
 */
#include "ctl_ip2nets.h"
#include "ctl_import_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- ip2nets ------------------------------------------------------------------- */

/*
 * One ip2nets rule, as lnetctl reads it: "net-spec" first, then
 * "interfaces" and "ip-range" (maps of index: value), "tunables", "lnd
 * tunables", "CPT". Fills r and the NI template; false (error said) on a
 * bad rule.
 */
static bool imp_ip2n_rule(struct imp *im, yaml_node_t *e, struct ip2n_rule *r,
			  struct ulnet_ni_conf *tmpl)
{
	char why[300];

	if (!e || e->type != YAML_MAPPING_NODE) {
		imp_error(im, e, -EINVAL, "ip2nets entry must be a mapping");
		return false;
	}
	for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key), *vn = ynode(im, p->value);
		const char *k = yscalar(kn);
		int i = imp_key_find(IMPS_IP2NETS, k);

		if (p == e->data.mapping.pairs.start && i != IK_IP2N_NET_SPEC) {
			imp_error(im, kn, -EINVAL, "Malformed input. Expect 'net-spec' found '%s'",
				  k ? k : "?");
			return false;
		}
		if (!k) {
			imp_error(im, kn, -EINVAL, "ip2nets keys are names");
			return false;
		}
		if (i == IK_IP2N_NET_SPEC) {
			const char *v = yscalar(vn);

			if (!v || ulnet_net_parse(v, &r->net, NULL) < 0) {
				imp_error(im, vn, -EINVAL, "Invalid network ID '%s'", v ? v : "?");
				return false;
			}
		} else if (i == IK_IP2N_INTERFACES || i == IK_IP2N_IP_RANGE) {
			bool ifs = i == IK_IP2N_INTERFACES;

			if (!vn || vn->type != YAML_MAPPING_NODE) {
				imp_error(im, vn, -EINVAL, "Failed to parse %s list rc = %d: not a mapping "
					  "(index: value)", ifs ? "interfaces" : "ip-range", -EINVAL);
				return false;
			}
			for (yaml_node_pair_t *q = vn->data.mapping.pairs.start;
			     q < vn->data.mapping.pairs.top; q++) {
				yaml_node_t *in = ynode(im, q->value);
				const char *v = yscalar(in);
				int rc;

				if (!v) {
					imp_error(im, in, -EINVAL, "Failed to parse %s list rc = %d: not a "
						  "scalar", ifs ? "interfaces" : "ip-range", -EINVAL);
					return false;
				}
				rc = ifs ? ip2n_rule_add_if(r, v, why, sizeof(why))
					 : ip2n_rule_add_range(r, v, why, sizeof(why));
				if (rc < 0) {
					imp_error(im, in, rc, "Failed to parse %s list rc = %d: %s",
						  ifs ? "interfaces" : "ip-range", rc, why);
					return false;
				}
			}
		} else if (i == IK_IP2N_TUNABLES || i == IK_IP2N_LND_TUNABLES) {
			if (!imp_ni_tunables(im, vn, i == IK_IP2N_TUNABLES ? IMPS_IP2NETS_TUN
									   : IMPS_IP2NETS_LND_TUN,
					     tmpl, "an ip2nets rule"))
				return false;
		} else if (i == IK_IP2N_CPT) {
			if (!imp_cpt(im, vn, "an ip2nets rule"))
				return false;
		} else {
			imp_error(im, kn, -EOPNOTSUPP, "ip2nets key '%s' is not supported by ulnet", k);
			return false;
		}
	}
	if (r->net == ULNET_NET_ANY) {
		imp_error(im, e, -EINVAL, "ip2nets entry without 'net-spec'");
		return false;
	}
	return true;
}

/* The interfaces of a matching rule on its net: add (or, --del, delete)
 * one NI each, stopping at the first failure as lnetctl does. */
static bool imp_ip2n_apply(struct imp *im, yaml_node_t *e, const struct ip2n_rule *r,
			   const struct ulnet_ni_conf *tmpl, char (*ifs)[IP2N_IFNAME_SIZE], int nifs)
{
	const char *op = im->mode == IMP_DEL ? "del" : "add";
	char netname[ULNET_NETSTR_SIZE];
	int rc = 0;

	if (ulnet_net_format(r->net, netname, sizeof(netname)) < 0)
		snprintf(netname, sizeof(netname), "?");
	if (ulnet_net_type(r->net) != ULNET_LND_TCP) {
		/* lo is the kernel's refusal too; other LNDs ulnet lacks */
		bool lo = ulnet_net_type(r->net) == ULNET_LND_LO;

		imp_error(im, e, lo ? -EINVAL : -EOPNOTSUPP, "net-spec '%s': %s", netname,
			  lo ? "setting @lo not allowed"
			     : "not supported by ulnet (its only LND with interfaces is tcp)");
		return false;
	}
	for (int i = 0; i < nifs && rc == 0; i++) {
		struct ulnet_ni_conf conf = *tmpl;
		uint32_t ip = 0;

		if (im->mode == IMP_DEL) {
			struct ulnet_ni_info *ni;
			int n = ctl_get_nis(im->ctx->ln, &ni);

			rc = -ENOENT;
			for (int j = 0; j < n; j++)
				if (ulnet_nid_net(&ni[j].nid) == r->net &&
				    strncmp(ni[j].iface, ifs[i], sizeof(ni[j].iface)) == 0)
					rc = ulnet_ni_del(im->ctx->ln, &ni[j].nid);
			if (n >= 0)
				free(ni);
		} else if ((rc = ctl_ip_of_iface(ifs[i], &ip)) == 0) {
			ulnet_nid_from_ipv4(ip, r->net, &conf.nid);
			snprintf(conf.iface, sizeof(conf.iface), "%s", ifs[i]);
			ctl_ni_conf_defaults(im->ctx, &conf);
			rc = ulnet_ni_add(im->ctx->ln, &conf);
		}
		if (rc < 0)
			/* the kernel's extack, then lnetctl's own line */
			y_nl_error(im->err, op, "net", rc,
				   im->mode == IMP_DEL ? "cannot del LNet NI" : "cannot add LNet NI");
	}
	if (rc < 0) {
		imp_error(im, e, -EINVAL, "Failed to configure NI on net '%s' rc = %d", netname, -EINVAL);
		return false;
	}
	return true;
}

/*
 * ip2nets: the rules in order, as lnetctl applies them: a rule that
 * matches no interface of the node is skipped; the first rule that
 * matches a net configures it, and later rules for that net change
 * nothing; an error stops the list. No rule applied is an error.
 */
void imp_ip2nets(struct imp *im, yaml_node_t *seq)
{
	struct ip2n_addrs a;
	char (*ifs)[IP2N_IFNAME_SIZE] = NULL;
	ulnet_net_t *done = NULL;
	char why[200], reasons[600] = "";
	size_t rl = 0;
	int ndone = 0, rc;

	if (!seq || seq->type != YAML_SEQUENCE_NODE) {
		imp_error(im, seq, -EINVAL, "'ip2nets' must be a list");
		return;
	}
	rc = ip2n_addrs_get(&a);
	if (rc < 0) {
		imp_error(im, seq, rc, "ip2nets: cannot list the interfaces");
		return;
	}
	size_t nrules = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);

	ifs = calloc(IP2N_MAX_IFS, sizeof(*ifs));
	done = calloc(nrules ? nrules : 1, sizeof(*done));
	if (!ifs || !done) {
		imp_error(im, seq, -ENOMEM, "out of memory");
		goto out;
	}
	for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
	     it++) {
		yaml_node_t *e = ynode(im, *it);
		struct ulnet_ni_conf tmpl;
		struct ip2n_rule r;
		int nifs = 0;
		bool ok, dup = false;

		memset(&tmpl, 0, sizeof(tmpl));
		tmpl.tun.tos = -1;
		ip2n_rule_init(&r);
		ok = imp_ip2n_rule(im, e, &r, &tmpl);
		if (ok) {
			rc = ip2n_rule_resolve(&r, &a, ifs, IP2N_MAX_IFS, &nifs, why, sizeof(why));
			if (rc == -ENOMSG) {
				/* skipped; why, said if no rule applies */
				char netname[ULNET_NETSTR_SIZE];

				if (ulnet_net_format(r.net, netname, sizeof(netname)) < 0)
					snprintf(netname, sizeof(netname), "?");
				if (rl < sizeof(reasons))
					rl += (size_t)snprintf(reasons + rl, sizeof(reasons) - rl,
							       "%s rule %zu (%s): %s", rl ? ";" : ":",
							       (size_t)(it - seq->data.sequence.items.start),
							       netname, why);
			} else if (rc < 0) {
				imp_error(im, e, rc, "%s", why);
				ok = false;
			} else {
				for (int i = 0; i < ndone; i++)
					dup |= done[i] == r.net;
				if (!dup)
					ok = imp_ip2n_apply(im, e, &r, &tmpl, ifs, nifs);
				if (ok && !dup)
					done[ndone++] = r.net;
			}
		}
		ip2n_rule_free(&r);
		if (!ok)
			goto out;
	}
	if (ndone == 0)
		imp_error(im, seq, -EINVAL, "No ip2nets rules applied%s", reasons);
out:
	free(ifs);
	free(done);
	ip2n_addrs_free(&a);
}
