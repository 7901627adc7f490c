/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_net.c - the "net" commands (add, del, show, set) and their table:
 * an NI's configuration from --nid or --net/--if (also used by import) or
 * from --ip2net (ctl_ip2nets.h), and
 * the tunables setter of "net set", which "peer set" shares.
 */
#include "ctl_cmds_int.h"
#include "ctl_ip2nets.h"
#include "ctl_mrroute.h"
#include "lnd/o2iblnd/o2ib_policy.h"
#include "modopts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- net ------------------------------------------------------------------------ */

/* Interface owning IPv4 `ip` (host order): exact address first, then the
 * interface whose subnet contains it (127.0.0.2 lives on "lo"). */
static bool iface_of_ip(uint32_t ip, char *name, size_t len)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa) < 0)
		return false;
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (i = ifa; i && !found; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
			uint32_t m = i->ifa_netmask ?
				ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr) : ~0u;

			if ((pass == 0 && a == ip) || (pass == 1 && (a & m) == (ip & m))) {
				snprintf(name, len, "%s", i->ifa_name);
				found = true;
			}
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* The IPv4 address (host order) of interface `name`; with `name` NULL,
 * of the first interface that is up, not loopback, with one (its name
 * into `out`). */
static int ctl_iface_ipv4(const char *name, char *out, size_t len, uint32_t *ip)
{
	struct ifaddrs *ifa, *i;
	int rc = -ENETDOWN;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (name ? strcmp(i->ifa_name, name) != 0
			 : !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		*ip = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		if (out)
			snprintf(out, len, "%s", i->ifa_name);
		rc = 0;
		break;
	}
	freeifaddrs(ifa);
	return rc;
}

int ctl_ip_of_iface(const char *name, uint32_t *ip)
{
	return ctl_iface_ipv4(name, NULL, 0, ip);
}

int ctl_first_iface(char *name, size_t len, uint32_t *ip)
{
	return ctl_iface_ipv4(NULL, name, len, ip);
}

enum { NA_NET, NA_IF, NA_NID, NA_IP2NET, NA_PTO, NA_PCR, NA_PBC, NA_CR, NA_CPT, NA_CPP,
       NA_SKIP, NA_TOS, NA_AUTH, NA_TC, NA_APORT, NA_ACCEPT, NA_BPORT, NA_COUNT };

static const struct optspec net_add_opts[NA_COUNT] = {
	[NA_NET] = { "net", 'n', ARG_REQ },
	[NA_IF] = { "if", 'i', ARG_REQ },
	[NA_NID] = { "nid", 0, ARG_REQ },
	[NA_IP2NET] = { "ip2net", 'd', ARG_REQ },
	[NA_PTO] = { "peer-timeout", 't', ARG_REQ },
	[NA_PCR] = { "peer-credits", 'c', ARG_REQ },
	[NA_PBC] = { "peer-buffer-credits", 'b', ARG_REQ },
	[NA_CR] = { "credits", 'r', ARG_REQ },
	[NA_CPT] = { "cpt", 's', ARG_REQ },
	[NA_CPP] = { "conns-per-peer", 'm', ARG_REQ },
	[NA_SKIP] = { "skip-mr-route-setup", 'R', ARG_NONE },
	[NA_TOS] = { "tos", 'S', ARG_REQ },
	[NA_AUTH] = { "auth-key", 'k', ARG_REQ },
	[NA_TC] = { "traffic-class", 'T', ARG_REQ },
	/* ulnet only (tests as non-root): acceptor port and mode of the NI. */
	[NA_APORT] = { "accept-port", 0, ARG_REQ },
	[NA_ACCEPT] = { "accept", 0, ARG_REQ },
	/* ulnet only: the port of its bulk connections (lnet accept_port_bulk) */
	[NA_BPORT] = { "accept-port-bulk", 0, ARG_REQ },
};

/* Fill an NI conf from --nid or --net/--if. Errors go to rp as lnetctl's
 * "add: - net:" YAML. */
int ctl_ni_conf_addr(const char *nidstr, const char *netstr, const char *ifstr,
		     struct ulnet_ni_conf *conf, struct ctl_reply *rp, const char *op)
{
	struct ulnet_parse_err pe = { 0 };
	char msg[300];

	if (nidstr) {
		if (ulnet_nid_parse(nidstr, &conf->nid, &pe) < 0) {
			snprintf(msg, sizeof(msg), "cannot parse NID '%s': %s", nidstr,
				 pe.msg[0] ? pe.msg : "invalid NID");
			y_nl_error(&rp->err, op, "net", -EINVAL, msg);
			return -EINVAL;
		}
		if (conf->nid.type == ULNET_LND_TCP && !conf->nid.size) {
			if (!ifstr || !ifstr[0])
				iface_of_ip(ulnet_nid_ipv4(&conf->nid), conf->iface,
					    sizeof(conf->iface));
		}
		if (ifstr)
			snprintf(conf->iface, sizeof(conf->iface), "%s", ifstr);
		return 0;
	}
	ulnet_net_t net;

	if (!netstr) {
		y_nl_error(&rp->err, op, "net", -EINVAL, "missing mandatory parameter: '--net' or '--nid'");
		return -EINVAL;
	}
	if (ulnet_net_parse(netstr, &net, &pe) < 0) {
		snprintf(msg, sizeof(msg), "cannot parse net '%s': %s", netstr,
			 pe.msg[0] ? pe.msg : "invalid net");
		y_nl_error(&rp->err, op, "net", -EINVAL, msg);
		return -EINVAL;
	}
	if (!ifstr) {
		y_nl_error(&rp->err, op, "net", -EINVAL, "missing mandatory parameter: '--if'");
		return -EINVAL;
	}
	char ifn[IF_NAMESIZE + 1];
	uint32_t ip = 0;
	/* one interface: net add makes an NI for each of a list itself */
	size_t il = strlen(ifstr);

	if (il > IF_NAMESIZE)
		il = IF_NAMESIZE;
	memcpy(ifn, ifstr, il);
	ifn[il] = '\0';

	if (strchr(ifstr, ',') || ctl_ip_of_iface(ifn, &ip) < 0) {
		/* The kernel answers ENETDOWN with this text (see reference). */
		y_nl_error(&rp->err, op, "net", -ENETDOWN, "cannot add LNet NI");
		return -ENETDOWN;
	}
	ulnet_nid_from_ipv4(ip, net, &conf->nid);
	memcpy(conf->iface, ifn, sizeof(conf->iface) - 1);
	conf->iface[sizeof(conf->iface) - 1] = '\0';
	return 0;
}

/* An LND's module parameters (dt) for the NI tunables an NI does not set
 * itself: 0 (tos -1) is "not set" on both sides, as the kernel's NI
 * tunables left -1 take the module's. */
static void ni_tun_defaults(const struct ctl_ctx *ctx, const struct ulnet_ni_tunables *dt,
			    struct ulnet_ni_tunables *t)
{
	if (!t->peer_timeout)
		t->peer_timeout = dt->peer_timeout;
	if (!t->peer_credits)
		t->peer_credits = dt->peer_credits;
	if (!t->credits)
		t->credits = dt->credits;
	if (!t->conns_per_peer)
		t->conns_per_peer = dt->conns_per_peer;
	if (t->tos == -1)
		t->tos = dt->tos;
	/* router credits of a peer: the NI's, the LND module's, then lnet's */
	if (!t->peer_buffer_credits)
		t->peer_buffer_credits = dt->peer_buffer_credits ? dt->peer_buffer_credits
								 : ctx->peer_buffer_credits;
}

/* The ko2iblnd module parameters for what an o2ib NI does not set itself
 * (as the kernel's kiblnd_tunables_setup() fills what is unset from them). */
static void o2ib_conf_defaults(const struct ctl_ctx *ctx, struct ulnet_ni_conf *conf)
{
	const struct ulnet_o2ib_tunables *d = &ctx->lnd_o2ib;
	struct ulnet_o2ib_tunables *o = &conf->o2ib;

	ni_tun_defaults(ctx, &ctx->lnd_o2ib_tun, &conf->tun);
#define ODEF(f) do { if (!o->f) o->f = d->f; } while (0)
	ODEF(service);
	ODEF(cksum);
	ODEF(timeout);
	ODEF(keepalive);
	ODEF(ntx);
	ODEF(peercredits_hiw);
	ODEF(concurrent_sends);
	ODEF(retry_count);
	ODEF(rnr_retry_count);
	ODEF(map_on_demand);
	ODEF(use_privileged_port);
	ODEF(require_privileged_port);
#undef ODEF
}

/* What the daemon's options set for every NI added ("net add", import). */
void ctl_ni_conf_defaults(const struct ctl_ctx *ctx, struct ulnet_ni_conf *conf)
{
	if (!conf->accept_port)
		conf->accept_port = ctx->accept_port;
	/* a module-wide setting in the kernel, for every NI whatever its
	 * accept_port: so it is here */
	if (!conf->accept_port_bulk)
		conf->accept_port_bulk = ctx->accept_port_bulk;
	if (!conf->accept[0])
		snprintf(conf->accept, sizeof(conf->accept), "%s", ctx->accept);
	if (!conf->accept_backlog && strcmp(conf->accept, "none"))
		conf->accept_backlog = ctx->accept_backlog;
	conf->verify_peer_nid = ctx->verify_peer_nid;
	if (conf->nid.type == ULNET_LND_O2IB) {
		o2ib_conf_defaults(ctx, conf);
		return;
	}
	if (conf->nid.type != ULNET_LND_TCP)
		return;
	/* The ksocklnd module parameters (ulnetd --module-option) for what
	 * the NI does not set itself, as the kernel's tunables of an NI
	 * left -1 take the module's. 0 (tos -1) is "not set" on both sides. */
	const struct ulnet_sock_tunables *ds = &ctx->lnd_sock;
	struct ulnet_sock_tunables *s = &conf->sock;

	ni_tun_defaults(ctx, &ctx->lnd_tun, &conf->tun);
#define SDEF(f) do { if (!s->f) s->f = ds->f; } while (0)
	SDEF(sock_timeout);
	SDEF(keepalive);
	SDEF(keepalive_idle);
	SDEF(keepalive_count);
	SDEF(keepalive_intvl);
	SDEF(min_bulk);
	SDEF(zc_min_payload);
	SDEF(enable_csum);
	SDEF(nonblk_zcack);
	SDEF(typed_conns);
	SDEF(tx_buffer_size);
	SDEF(rx_buffer_size);
	SDEF(nagle);
	SDEF(min_reconnectms);
	SDEF(max_reconnectms);
	SDEF(nscheds);
#undef SDEF
}

int ctl_o2ib_tunables_check(const struct ulnet_ni_conf *conf, char *msg, size_t len)
{
	struct kib_tunables t;
	const char *what;
	int rc;

	if (conf->nid.type != ULNET_LND_O2IB)
		return 0;
	/* the LND's own resolution (the global lnd_timeout does not matter
	 * to what is refused): said here, naming the tunable, rather than
	 * as the NI's failure to start */
	rc = kib_tunables_setup(&t, conf, 0, &what);
	if (rc == -EOPNOTSUPP)
		snprintf(msg, len, "o2ib LND tunable '%s' is not supported by ulnet: only the default",
			 what);
	else if (rc < 0)
		snprintf(msg, len, "o2ib LND tunable '%s': value out of range (docs/o2iblnd.md)",
			 what);
	return rc;
}

static int net_add_conf(struct ctl_ctx *ctx, struct ulnet_ni_conf *conf, struct ctl_reply *rp)
{
	char why[160];
	int rc = ctl_o2ib_tunables_check(conf, why, sizeof(why));

	if (rc < 0) {
		y_nl_error(&rp->err, "add", "net", rc, why);
		return -EINVAL;
	}
	ctl_ni_conf_defaults(ctx, conf);
	rc = ulnet_ni_add(ctx->ln, conf);

	if (rc < 0) {
		/* The kernel's extack text for every failure of NI add. */
		y_nl_error(&rp->err, "add", "net", rc, "cannot add LNet NI");
		return -EINVAL;
	}
	return 0;
}

/*
 * net add --ip2net: the kernel's ip2nets string, as its netlink handler
 * takes it (lnet_handle_legacy_ip2nets): the networks of the entries whose
 * pattern matches an IPv4 address of the node, one NI per interface (a net
 * without interface: the first that is up, not loopback, with an IPv4
 * address), in order; the first failure stops it (the NIs added stay).
 * The tunables of the command apply to each NI. Errors are the kernel's
 * "cannot setup ip2nets", with why.
 */
static int net_add_ip2net(struct ctl_ctx *ctx, const char *s, const struct ulnet_ni_conf *tmpl,
			  struct ctl_reply *rp)
{
	struct modopt_ni *nis = calloc(MODOPT_MAX_NIS, sizeof(*nis));
	char why[600], msg[800], eb[96], nb[ULNET_NIDSTR_SIZE], netname[ULNET_NETSTR_SIZE];
	struct ip2n_addrs a;
	int n = 0, rc;

	if (!nis)
		return -ENOMEM;
	rc = ip2n_addrs_get(&a);
	if (rc < 0) {
		snprintf(why, sizeof(why), "cannot list the interfaces: %s",
			 ctl_strerror(rc, eb, sizeof(eb)));
	} else {
		rc = modopts_ip2nets_nis(s, &a, nis, MODOPT_MAX_NIS, &n, why, sizeof(why));
		ip2n_addrs_free(&a);
	}
	for (int i = 0; rc == 0 && i < n; i++) {
		struct ulnet_ni_conf conf = *tmpl;
		uint32_t ip = 0;

		if (ulnet_net_format(nis[i].net, netname, sizeof(netname)) < 0)
			snprintf(netname, sizeof(netname), "?");
		if (nis[i].iface[0]) {
			rc = ctl_ip_of_iface(nis[i].iface, &ip);
			snprintf(conf.iface, sizeof(conf.iface), "%s", nis[i].iface);
		} else {
			rc = ctl_first_iface(conf.iface, sizeof(conf.iface), &ip);
		}
		if (rc < 0) {
			if (nis[i].iface[0])
				snprintf(why, sizeof(why), "%s(%s): no IPv4 address on interface %s",
					 netname, nis[i].iface, nis[i].iface);
			else
				snprintf(why, sizeof(why), "%s: no interface is up, not loopback, with "
					 "an IPv4 address", netname);
			break;
		}
		ulnet_nid_from_ipv4(ip, nis[i].net, &conf.nid);
		ctl_ni_conf_defaults(ctx, &conf);
		rc = ulnet_ni_add(ctx->ln, &conf);
		if (rc < 0)
			snprintf(why, sizeof(why), "%s(%s): cannot add NI %s: %s", netname, conf.iface,
				 ulnet_nid_str(&conf.nid, nb), ctl_strerror(rc, eb, sizeof(eb)));
	}
	free(nis);
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "cannot setup ip2nets: %s", why);
		y_nl_error(&rp->err, "add", "net", rc, msg);
		return -EINVAL;
	}
	return 0;
}

static int cmd_net_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		       const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if ((rc = ctl_need_ln(ctx, "add", "net", rp)))
		return -EINVAL;
	struct ulnet_ni_conf conf;

	memset(&conf, 0, sizeof(conf));
	static const int numopt[] = { NA_PTO, NA_PCR, NA_PBC, NA_CR, NA_CPP, NA_TOS, NA_APORT,
				      NA_BPORT };
	long v[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };

	for (int i = 0; i < 8; i++) {
		int k = numopt[i];
		long lo = k == NA_TOS ? -1 : 0,
		     hi = k == NA_APORT || k == NA_BPORT ? 65535 : INT_MAX;

		if (p->v[k].set && ctl_parse_int(p->v[k].arg, lo, hi, &v[i]) < 0) {
			char msg[200];

			snprintf(msg, sizeof(msg), "invalid value for --%s: '%s'",
				 net_add_opts[k].name, p->v[k].arg);
			y_nl_error(&rp->err, "add", "net", -EINVAL, msg);
			return -EINVAL;
		}
	}
	/* lnetctl options ulnet has no counterpart for: refused, not ignored */
	static const int unsup[] = { NA_CPT, NA_AUTH, NA_TC };

	for (size_t i = 0; i < sizeof(unsup) / sizeof(unsup[0]); i++) {
		if (p->v[unsup[i]].set) {
			char msg[160];

			snprintf(msg, sizeof(msg), "--%s is not supported by ulnet",
				 net_add_opts[unsup[i]].name);
			y_nl_error(&rp->err, "add", "net", -EOPNOTSUPP, msg);
			return -EINVAL;
		}
	}
	if (p->v[NA_ACCEPT].set) {
		const char *m = p->v[NA_ACCEPT].arg;

		if (strcmp(m, "secure") && strcmp(m, "all") && strcmp(m, "none")) {
			y_nl_error(&rp->err, "add", "net", -EINVAL,
				   "--accept must be one of: secure, all, none");
			return -EINVAL;
		}
		snprintf(conf.accept, sizeof(conf.accept), "%s", m);
	}
	/* lnetctl's own check: the NID names the net */
	if (p->v[NA_NID].set && p->v[NA_NET].set) {
		ybuf_puts(&rp->out, "--net is invalid with --nid option\n");
		return -EINVAL;
	}
	conf.tun.peer_timeout = (int)v[0];
	conf.tun.peer_credits = (int)v[1];
	conf.tun.peer_buffer_credits = (int)v[2];
	conf.tun.credits = (int)v[3];
	conf.tun.conns_per_peer = (int)v[4];
	conf.tun.tos = p->v[NA_TOS].set ? (int)v[5] : -1;
	conf.accept_port = (uint16_t)v[6];
	conf.accept_port_bulk = (uint16_t)v[7];
	if (p->v[NA_IP2NET].set) {
		/* lnetctl sends --net (or --nid) instead, and --if with it
		 * makes a request the kernel refuses: said here */
		if (p->v[NA_NET].set || p->v[NA_NID].set || p->v[NA_IF].set) {
			y_nl_error(&rp->err, "add", "net", -EINVAL,
				   "--ip2net cannot be combined with --net, --nid or --if");
			return -EINVAL;
		}
		rc = net_add_ip2net(ctx, p->v[NA_IP2NET].arg, &conf, rp);
	} else if (!p->v[NA_NID].set && p->v[NA_IF].set) {
		/* as lnetctl: an NI for each interface of "eth0,eth1", in
		 * order (its request lists them as the net's local NIs); the
		 * first failure stops it, the NIs added before it stay */
		const char *s = p->v[NA_IF].arg;

		rc = 0;
		do {
			size_t l = strcspn(s, ",");
			char one[IF_NAMESIZE + 1];
			struct ulnet_ni_conf c1 = conf;

			if (l == 0 || l > IF_NAMESIZE) {
				char msg[300];

				snprintf(msg, sizeof(msg), "bad interface list '%s'", p->v[NA_IF].arg);
				y_nl_error(&rp->err, "add", "net", -EINVAL, msg);
				return -EINVAL;
			}
			memcpy(one, s, l);
			one[l] = '\0';
			if (ctl_ni_conf_addr(NULL, p->v[NA_NET].arg, one, &c1, rp, "add"))
				return -EINVAL;
			rc = net_add_conf(ctx, &c1, rp);
			s += l;
		} while (rc == 0 && *s++ == ',');
	} else {
		rc = ctl_ni_conf_addr(p->v[NA_NID].arg, p->v[NA_NET].arg, p->v[NA_IF].arg, &conf,
				      rp, "add");
		if (rc)
			return -EINVAL;
		rc = net_add_conf(ctx, &conf, rp);
	}
	/* as lnetctl: after a net add that worked, of any type, the routing
	 * tables of every tcp NI's interface (ksocklnd-config's job) */
	if (rc == 0 && !p->v[NA_SKIP].set && !ctx->skip_mr_route_setup)
		ctl_mrroute_setup(ctx);
	return rc;
}

static int cmd_net_del(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		       const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (ctl_need_ln(ctx, "del", "net", rp))
		return -EINVAL;
	struct ulnet_parse_err pe = { 0 };
	char msg[300];

	if (p->v[1].set) {
		ulnet_nid_t nid;

		/* lnetctl's own check: the NID names the net */
		if (p->v[0].set) {
			ybuf_puts(&rp->out, "--net is invalid with --nid option\n");
			return -EINVAL;
		}
		/* the NID names the NI: an interface besides would be
		 * dropped (lnetctl adds both to one list) */
		if (p->v[2].set) {
			y_nl_error(&rp->err, "del", "net", -EOPNOTSUPP,
				   "--if with --nid is not supported by ulnet");
			return -EINVAL;
		}

		if (ulnet_nid_parse(p->v[1].arg, &nid, &pe) < 0) {
			snprintf(msg, sizeof(msg), "cannot parse NID '%s': %s", p->v[1].arg,
				 pe.msg[0] ? pe.msg : "invalid NID");
			y_nl_error(&rp->err, "del", "net", -EINVAL, msg);
			return -EINVAL;
		}
		rc = ulnet_ni_del(ctx->ln, &nid);
		if (rc < 0) {
			y_nl_error(&rp->err, "del", "net", rc, "cannot del LNet NI");
			return -EINVAL;
		}
		return 0;
	}
	if (!p->v[0].set) {
		y_nl_error(&rp->err, "del", "net", -EINVAL, "missing mandatory parameter: '--net' or '--nid'");
		return -EINVAL;
	}
	ulnet_net_t net;

	if (ulnet_net_parse(p->v[0].arg, &net, &pe) < 0) {
		snprintf(msg, sizeof(msg), "cannot parse net '%s': %s", p->v[0].arg,
			 pe.msg[0] ? pe.msg : "invalid net");
		y_nl_error(&rp->err, "del", "net", -EINVAL, msg);
		return -EINVAL;
	}
	struct ulnet_ni_info *ni;
	int n = ctl_get_nis(ctx->ln, &ni), ndel = 0;

	if (n < 0)
		return n;

	rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		if (ulnet_nid_net(&ni[i].nid) != net)
			continue;
		if (p->v[2].set && strncmp(ni[i].iface, p->v[2].arg, sizeof(ni[i].iface)) != 0)
			continue;
		rc = ulnet_ni_del(ctx->ln, &ni[i].nid);
		ndel += rc == 0;
	}
	free(ni);
	if (rc == 0 && ndel == 0)
		rc = -ENOENT;
	if (rc < 0) {
		y_nl_error(&rp->err, "del", "net", rc, "cannot del LNet NI");
		return -EINVAL;
	}
	return 0;
}

static int cmd_net_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (!ctx->ln)
		return ctl_down_error(rp, "net", "LNet stack down");
	ulnet_net_t net;

	if (p->v[0].set) {
		struct ulnet_parse_err pe = { 0 };

		if (ulnet_net_parse(p->v[0].arg, &net, &pe) < 0) {
			char msg[300];

			snprintf(msg, sizeof(msg), "cannot parse net '%s': %s", p->v[0].arg,
				 pe.msg[0] ? pe.msg : "invalid net");
			y_nl_error(&rp->err, "show", "net", -EINVAL, msg);
			return -EINVAL;
		}
	}
	struct ulnet_ni_info *ni;
	int n = ctl_get_nis(ctx->ln, &ni);

	if (n < 0)
		return n;

	ctl_render_net_show(&rp->out, ni, n, ctl_verbosity(&p->v[1]), p->v[0].set ? &net : NULL);
	free(ni);
	return 0;
}

int ctl_cmd_setup_mrrouting(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			    int argc, char **argv, const char *blob, size_t bloblen,
			    struct ctl_reply *rp)
{
	(void)c; (void)p; (void)argc; (void)argv; (void)blob; (void)bloblen; (void)rp;
	/* without LNet there is no NI, and nothing to set up (lnetctl's
	 * script finds no interface in the net show that fails); the module
	 * parameter stops it here too, as the script reads it first */
	if (!ctx->skip_mr_route_setup)
		ctl_mrroute_setup(ctx);
	return 0;
}

/* --- net set / peer set ---------------------------------------------------------- */

const struct optspec ctl_set_value_opts[SV_COUNT] = {
	[SV_ALL] = { "all", 'a', ARG_NONE },
	[SV_NET] = { "net", 'i', ARG_REQ },
	[SV_LNDTO] = { "lnd-timeout", 'l', ARG_REQ },
	[SV_CPP] = { "conns-per-peer", 'm', ARG_REQ },
	[SV_NID] = { "nid", 'n', ARG_REQ },
	[SV_STATE] = { "state", 's', ARG_REQ },
	[SV_HEALTH] = { "health", 't', ARG_REQ },
};

/* lnetctl's set_value_helper errors: cYAML "net: - set:" (for peer set too). */
static int sv_error(struct ctl_reply *rp, int rc, const char *fmt, const char *arg)
{
	char msg[CTL_MAX_ARG + 128];

	snprintf(msg, sizeof(msg), fmt, arg);
	y_cy_error(&rp->err, "net", "set", rc, msg);
	return rc;
}

/* Apply a library setter to the NIs of `net` (one call per NI). */
static int ni_set_on_net(ulnet_t *ln, ulnet_net_t net, int (*fn)(ulnet_t *, const ulnet_nid_t *, int),
			 int value)
{
	ulnet_nid_t nids[MAX_NIS];
	int n = ulnet_ni_list(ln, nids, MAX_NIS), done = 0;

	for (int i = 0; i < n && i < MAX_NIS; i++) {
		if (ulnet_nid_net(&nids[i]) != net || nids[i].type == ULNET_LND_LO)
			continue;
		int rc = fn(ln, &nids[i], value);

		if (rc < 0)
			return rc;
		done++;
	}
	return done ? 0 : -ENOENT;
}

int ctl_set_value(struct ctl_ctx *ctx, const struct cmd *c, bool peer, const struct parsed *p,
		  struct ctl_reply *rp)
{
	int rc;
	const char *what = peer ? "peer" : "net";
	ulnet_net_t net = 0;
	ulnet_nid_t nid = ULNET_NID_ANY;
	long lndto = -1, cpp = -1, state = -1, health = -1;
	char nb[ULNET_NIDSTR_SIZE], msg[CTL_MAX_ARG + 128];

	if (p->npos) {
		ctl_print_help(&rp->err, what, c);
		return sv_error(rp, -EINVAL, "\"Invalid option or missing argument\"", "");
	}
	if (p->v[SV_NET].set && ulnet_net_parse(p->v[SV_NET].arg, &net, NULL) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid network type: %s\"", p->v[SV_NET].arg);
	if (p->v[SV_LNDTO].set && ctl_parse_int(p->v[SV_LNDTO].arg, 0, INT_MAX, &lndto) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid LND timeout value '%s', must be >= 0\"",
				p->v[SV_LNDTO].arg);
	if (!peer && p->v[SV_CPP].set && ctl_parse_int(p->v[SV_CPP].arg, 0, 127, &cpp) < 0)
		return sv_error(rp, -1, "invalid conns-per-peer value (valid range 0-127)", "");
	if (peer && p->v[SV_STATE].set && ctl_parse_int(p->v[SV_STATE].arg, 0, UINT32_MAX, &state) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid peer state value '%s'\"", p->v[SV_STATE].arg);
	if (p->v[SV_HEALTH].set &&
	    ctl_parse_int(p->v[SV_HEALTH].arg, 0, ULNET_MAX_HEALTH, &health) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid health value '%s', must be 0-1000\"",
				p->v[SV_HEALTH].arg);
	if (lndto >= 0 && !p->v[SV_NET].set)
		return sv_error(rp, -EINVAL, "\"Specified --lnd-timeout without --net option\"", "");
	/* lnetctl takes every option for both commands and drops those that
	 * mean nothing to one (net set --state; peer set --lnd-timeout,
	 * --conns-per-peer, --net): refused here, never ignored */
	static const int peer_unsup[] = { SV_LNDTO, SV_CPP, SV_NET }, net_unsup[] = { SV_STATE };
	const int *unsup = peer ? peer_unsup : net_unsup;
	size_t nunsup = peer ? sizeof(peer_unsup) / sizeof(peer_unsup[0]) : 1;

	for (size_t i = 0; i < nunsup; i++) {
		if (!p->v[unsup[i]].set)
			continue;
		snprintf(msg, sizeof(msg), "--%s is not supported by %s set",
			 ctl_set_value_opts[unsup[i]].name, what);
		y_nl_error(&rp->err, "set", what, -EOPNOTSUPP, msg);
		return -EINVAL;
	}
	if (p->v[SV_NID].set && ulnet_nid_parse(p->v[SV_NID].arg, &nid, NULL) < 0) {
		snprintf(msg, sizeof(msg), "cannot parse NID '%s'", p->v[SV_NID].arg);
		y_nl_error(&rp->err, "set", what, -EINVAL, msg);
		return -EINVAL;
	}
	if (p->v[SV_ALL].set && p->v[SV_NID].set)
		return sv_error(rp, -EINVAL, "\"--all and --nid are mutually exclusive\"", "");
	if (ctl_need_ln(ctx, "set", what, rp))
		return -EINVAL;
	const ulnet_nid_t *np = p->v[SV_NID].set ? &nid : NULL;

	if (peer) {
		if ((health >= 0 || state >= 0) && !np && !(p->v[SV_ALL].set && state < 0)) {
			y_nl_error(&rp->err, "set", "peer", -EINVAL,
				   state >= 0 ? "missing mandatory parameter: '--nid'"
					      : "missing mandatory parameter: '--nid' or '--all'");
			return -EINVAL;
		}
		if (state >= 0) {
			rc = ulnet_peer_set_state(ctx->ln, np, (uint32_t)state);
			if (rc < 0) {
				/* the kernel's extack for an unknown NID */
				y_nl_error(&rp->err, "set", "peer", rc, "invalid peer state param");
				return -EINVAL;
			}
		}
		if (health >= 0) {
			rc = ulnet_peer_ni_set_health(ctx->ln, np, (int)health);
			if (rc < 0) {
				snprintf(msg, sizeof(msg), "cannot set health of peer NI %s: %s",
					 ulnet_nid_str(&nid, nb), ulnet_strerror(rc));
				y_nl_error(&rp->err, "set", "peer", rc, msg);
				return -EINVAL;
			}
		}
		return 0;
	}
	if (lndto >= 0) {
		/* lnetctl sets the LND timeout and nothing else */
		rc = ulnet_net_set_lnd_timeout(ctx->ln, net, (int)lndto);
		if (rc < 0)
			return sv_error(rp, rc, rc == -EINVAL ? "\"Net %s does not accept a LND timeout\""
					: "\"Failed to set LND timeout for net %s\"", p->v[SV_NET].arg);
		return 0;
	}
	if (cpp < 0 && health < 0)
		return 0;
	/* --nid: that NI; --net: the NIs of the net; otherwise (--all): all */
	bool by_net = !np && p->v[SV_NET].set;

	if (cpp >= 0) {
		rc = by_net ? ni_set_on_net(ctx->ln, net, ulnet_ni_set_conns_per_peer, (int)cpp)
			    : ulnet_ni_set_conns_per_peer(ctx->ln, np, (int)cpp);
		if (rc < 0) {
			y_nl_error(&rp->err, "set", "net", rc,
				   rc == -ENOENT ? "cannot find the NI" : "cannot set conns_per_peer");
			return -EINVAL;
		}
	}
	if (health >= 0) {
		rc = by_net ? ni_set_on_net(ctx->ln, net, ulnet_ni_set_health, (int)health)
			    : ulnet_ni_set_health(ctx->ln, np, (int)health);
		if (rc < 0) {
			y_nl_error(&rp->err, "set", "net", rc,
				   rc == -ENOENT ? "cannot find the NI" : "cannot set health value");
			return -EINVAL;
		}
	}
	return 0;
}

static int cmd_net_set(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		       const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ctl_set_value(ctx, c, false, p, rp);
}

/* --- the "net" table ----------------------------------------------------------- */

/* The options of each command (the handlers index p->v[] in this order). */
static const struct optspec net_del_opts[] = {
	{ "net", 'n', ARG_REQ }, { "nid", 0, ARG_REQ }, { "if", 'i', ARG_REQ },
};
static const struct optspec net_show_opts[] = { { "net", 'n', ARG_REQ }, { "verbose", 'v', ARG_OPT_NUM } };

const struct cmd ctl_net_cmds[] = {
	{ "add", cmd_net_add, NULL, "add a network\n"
	  "\t--net: net name (e.g. tcp0)\n"
	  "\t--if: physical interface (e.g. eth0)\n"
	  "\t--nid: bring up an NI on the address of this NID\n"
	  "\t--peer-timeout: seconds before a silent peer is declared dead\n"
	  "\t--peer-credits: in-flight messages per peer\n"
	  "\t--peer-buffer-credits: router buffer credits per peer\n"
	  "\t--credits: NI credits\n"
	  "\t--conns-per-peer: connections per peer (socklnd)\n"
	  "\t--tos: IP type of service\n"
	  "\t--accept-port: (ulnet) acceptor port of the NI, default 988\n"
	  "\t--accept: (ulnet) acceptor mode: secure (default), all, none\n"
	  "\t--accept-port-bulk: (ulnet) port of bulk connections (also listened\n"
	  "\t  on), default the accept port\n"
	  "\t--ip2net: specify networks based on IP address patterns\n"
	  "\t  (\"tcp(eth0) 10.0.0.*; tcp1 192.168.[1-4].*\")\n"
	  "\t--skip-mr-route-setup: do not add linux route for the ni\n"
	  "\t--cpt, --auth-key, --traffic-class:\n"
	  "\t  not supported by ulnet (refused)\n", LK_WRITE, OPTS(net_add_opts), 0, false },
	{ "del", cmd_net_del, NULL, "delete a network\n"
	  "\t--net: net name (e.g. tcp0)\n"
	  "\t--nid: NID of the NI to shut down\n"
	  "\t--if: physical interface (e.g. eth0)\n", LK_WRITE, OPTS(net_del_opts), 0, false },
	{ "show", cmd_net_show, NULL, "show networks\n"
	  "\t--net: net name (e.g. tcp0) to filter on\n"
	  "\t--verbose|-v [0-4]: detail level (2: message and health stats, 4: udsp info)\n",
	  LK_READ, OPTS(net_show_opts), 0, false },
	{ "set", cmd_net_set, NULL, "set local NI specific parameter\n"
	  "\t--nid: NI NID to set the value on\n"
	  "\t--net: network to set the value on (e.g. tcp)\n"
	  "\t--lnd-timeout: set LND timeout (seconds) for LND used by --net argument\n"
	  "\t--health: specify health value to set (0-1000)\n"
	  "\t--conns-per-peer: number of connections per peer (0-127)\n"
	  "\t--all: set all NIs value to the one specified\n"
	  "\t--state: peer set only (refused)\n", LK_WRITE,
	  OPTS(ctl_set_value_opts), -1 /* its own error */, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
