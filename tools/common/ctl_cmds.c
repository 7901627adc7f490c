/* SPDX-License-Identifier: MIT */
/* ctl_cmds.c - lnetctl's command tree over the ulnet API. */
#include "ctl_cmds.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl_render.h"

#define PROG "ulnetctl"
#define MAX_NIS 256
#define MAX_PEERS 1024
#define MAX_PING 64

/* lnetctl handlers return negative errnos; the shell sees the low byte. */
static int exit_code(int rc)
{
	return rc & 0xff;
}

/* --- option parsing (getopt_long-like, but reentrant) ---------------------- */

enum { ARG_NONE, ARG_REQ, ARG_OPT_NUM };

struct optspec {
	const char *name;
	char shortc;
	int has_arg;
};

struct optval {
	bool set;
	const char *arg;
};

struct parsed {
	struct optval v[24];
	char *pos[64];
	int npos;
};

/* Returns 0, or -EINVAL with a message in err. Options and positionals may
 * be mixed, as getopt_long permutes. */
static int parse_opts(int argc, char **argv, const struct optspec *specs, int nspecs,
		      struct parsed *p, struct ybuf *err)
{
	memset(p, 0, sizeof(*p));
	bool only_pos = false;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i];

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (p->npos >= (int)(sizeof(p->pos) / sizeof(p->pos[0]))) {
				ybuf_printf(err, "%s: too many arguments\n", PROG);
				return -EINVAL;
			}
			p->pos[p->npos++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		int k = -1;
		const char *inl = NULL;

		if (a[1] == '-') {
			const char *name = a + 2;
			const char *eq = strchr(name, '=');
			size_t nl = eq ? (size_t)(eq - name) : strlen(name);

			for (int s = 0; s < nspecs && k < 0; s++)
				if (strlen(specs[s].name) == nl && strncmp(specs[s].name, name, nl) == 0)
					k = s;
			if (k < 0) {
				ybuf_printf(err, "%s: unrecognized option '%s'\n", PROG, a);
				return -EINVAL;
			}
			inl = eq ? eq + 1 : NULL;
		} else {
			for (int s = 0; s < nspecs && k < 0; s++)
				if (specs[s].shortc && specs[s].shortc == a[1])
					k = s;
			if (k < 0) {
				ybuf_printf(err, "%s: invalid option -- '%c'\n", PROG, a[1]);
				return -EINVAL;
			}
			inl = a[2] ? a + 2 : NULL;
		}
		p->v[k].set = true;
		switch (specs[k].has_arg) {
		case ARG_NONE:
			if (inl && a[1] == '-') {
				ybuf_printf(err, "%s: option '--%s' doesn't allow an argument\n", PROG,
					    specs[k].name);
				return -EINVAL;
			}
			break;
		case ARG_REQ:
			if (inl) {
				p->v[k].arg = inl;
			} else if (i + 1 < argc) {
				p->v[k].arg = argv[++i];
			} else {
				ybuf_printf(err, "%s: option '%s' requires an argument\n", PROG, a);
				return -EINVAL;
			}
			break;
		case ARG_OPT_NUM:
			/* "-v", "-v 3", "-v3", "--verbose=3": a following word is
			 * taken only when it is a number (lnetctl's rule). */
			if (inl) {
				p->v[k].arg = inl;
			} else if (i + 1 < argc && isdigit((unsigned char)argv[i + 1][0])) {
				p->v[k].arg = argv[++i];
			}
			break;
		}
	}
	return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	long v = strtol(s, &end, 0);

	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --- help -------------------------------------------------------------------- */

struct cmd;
typedef int (*cmd_fn)(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
		      int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp);

/* How dispatch() holds the context lock around a command. */
enum { LK_READ, LK_WRITE, LK_SELF /* the command takes it itself */ };

/*
 * One command. Its options are checked by dispatch() before it runs, the
 * same way for every command: an unknown option, a missing value or more
 * than `maxpos` positional words (-1: any) is refused (exit 234) with the
 * help text. `raw` commands (set NAME VALUE, and those refused as
 * unsupported whatever their arguments) check their words themselves.
 */
struct cmd {
	const char *name;
	cmd_fn fn;
	const struct cmd *sub;
	const char *help;
	int lock;
	const struct optspec *opts;
	int nopts;
	int maxpos;
	bool raw;
};

#define OPTS(a) (a), (int)(sizeof(a) / sizeof((a)[0]))
#define NOOPTS NULL, 0

static void print_help(struct ybuf *out, const char *parent, const struct cmd *c)
{
	if (parent)
		ybuf_printf(out, "%s %s: %s", parent, c->name, c->help);
	else
		ybuf_printf(out, "%s: %s", c->name, c->help);
	if (c->help[0] && c->help[strlen(c->help) - 1] != '\n')
		ybuf_puts(out, "\n");
}

static bool want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

/* --- shared helpers ---------------------------------------------------------- */

static int need_ln(struct ctl_ctx *ctx, const char *op, const char *what, struct ctl_reply *rp)
{
	if (ctx->ln)
		return 0;
	y_nl_error(&rp->err, op, what, -ENETDOWN, "LNet stack down");
	return -ENETDOWN;
}

static int get_nis(ulnet_t *ln, struct ulnet_ni_info *nis, int max)
{
	int n = 0;

	for (int i = 0; i < max; i++) {
		if (ulnet_ni_info(ln, i, &nis[n]) < 0)
			break;
		n++;
	}
	return n;
}

static int get_peers(ulnet_t *ln, struct ulnet_peer_info *peers, int max)
{
	int n = 0;

	for (int i = 0; i < max; i++) {
		if (ulnet_peer_info(ln, i, &peers[n]) < 0)
			break;
		n++;
	}
	return n;
}

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

/* IPv4 address (host order) of interface `name`. */
static int ip_of_iface(const char *name, uint32_t *ip)
{
	struct ifaddrs *ifa, *i;
	int rc = -ENETDOWN;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    strcmp(i->ifa_name, name) == 0) {
			*ip = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}

/* Split "a,b c" lists into NIDs. Returns count or -EINVAL (bad item in
 * `bad`). */
static int parse_nid_list(char *const *words, int nwords, ulnet_nid_t *nids, int max, char *bad,
			  size_t badlen)
{
	int n = 0;

	for (int w = 0; w < nwords; w++) {
		char tmp[CTL_MAX_ARG + 1];

		snprintf(tmp, sizeof(tmp), "%s", words[w]);
		char *save = NULL;

		for (char *t = strtok_r(tmp, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
			if (n >= max)
				return -E2BIG;
			if (ulnet_nid_parse(t, &nids[n], NULL) < 0) {
				snprintf(bad, badlen, "%s", t);
				return -EINVAL;
			}
			n++;
		}
	}
	return n;
}

/* --- lnet ---------------------------------------------------------------------- */

static int import_text(struct ctl_ctx *ctx, const char *name, const char *text, size_t len,
		       int mode, bool nets_only, struct ybuf *err, struct ctl_reply *rp);

/* Show commands while LNet is down: the kernel's netlink error. */
static int down_error(struct ctl_reply *rp, const char *what, const char *msg)
{
	y_nl_error(&rp->err, "show", what, -ENETDOWN, msg);
	return -ENETDOWN;
}

static int cmd_lnet_configure(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			      const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (ctx->ln)
		return 0; /* already up: lnetctl is silent too */
	rc = ulnet_create(&ctx->opts, &ctx->ln);
	if (rc < 0) {
		char eb[96], msg[160];

		snprintf(msg, sizeof(msg), "LNet configure error: %s",
			 ctl_strerror(rc, eb, sizeof(eb)));
		y_nl_error(&rp->err, "configure", "lnet", rc, msg);
		ctx->ln = NULL;
		return -EINVAL;
	}
	if (ctx->selftest) {
		rc = ulnet_selftest_start(ctx->ln, &ctx->selftest_conf, &ctx->st);
		if (rc < 0) {
			char eb[96], msg[160];

			snprintf(msg, sizeof(msg), "LNet configure error: selftest: %s",
				 ctl_strerror(rc, eb, sizeof(eb)));
			y_nl_error(&rp->err, "configure", "lnet", rc, msg);
			ctx->st = NULL;
		}
	}
	/* module parameters outlive an unconfigure */
	if (ctx->saved_g_valid)
		ulnet_globals_set(ctx->ln, &ctx->saved_g);
	/* --all: the networks of the "module parameters" (--config) */
	if (p->v[0].set && ctx->modparams) {
		rc = import_text(ctx, ctx->modparams_name, ctx->modparams, ctx->modparams_len,
				 0 /* IMP_ADD */, true, &rp->err, rp);
		if (rc < 0)
			return -EINVAL;
	}
	return 0;
}

static int cmd_lnet_unconfigure(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
				const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (ctx->ln) {
		ulnet_globals_get(ctx->ln, &ctx->saved_g);
		ctx->saved_g_valid = true;
		ulnet_selftest_stop(ctx->st);
		ctx->st = NULL;
		ulnet_destroy(ctx->ln);
		ctx->ln = NULL;
	}
	return 0;
}

/* --- net ------------------------------------------------------------------------ */

enum { NA_NET, NA_IF, NA_NID, NA_IP2NET, NA_PTO, NA_PCR, NA_PBC, NA_CR, NA_CPT, NA_CPP,
       NA_SKIP, NA_TOS, NA_AUTH, NA_TC, NA_APORT, NA_ACCEPT, NA_COUNT };

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
};

/* Fill an NI conf from --nid or --net/--if. Errors go to rp as lnetctl's
 * "add: - net:" YAML. */
static int ni_conf_addr(const char *nidstr, const char *netstr, const char *ifstr,
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

	/* One interface per NI (the first of "eth0,eth1"). */
	size_t il = strcspn(ifstr, ",");

	if (il > IF_NAMESIZE)
		il = IF_NAMESIZE;
	memcpy(ifn, ifstr, il);
	ifn[il] = '\0';

	if (ip_of_iface(ifn, &ip) < 0) {
		/* The kernel answers ENETDOWN with this text (see reference). */
		y_nl_error(&rp->err, op, "net", -ENETDOWN, "cannot add LNet NI");
		return -ENETDOWN;
	}
	ulnet_nid_from_ipv4(ip, net, &conf->nid);
	memcpy(conf->iface, ifn, sizeof(conf->iface) - 1);
	conf->iface[sizeof(conf->iface) - 1] = '\0';
	return 0;
}

/* What the daemon's options set for every NI added ("net add", import). */
static void ni_conf_defaults(const struct ctl_ctx *ctx, struct ulnet_ni_conf *conf)
{
	if (!conf->accept_port)
		conf->accept_port = ctx->accept_port;
	if (!conf->accept[0])
		snprintf(conf->accept, sizeof(conf->accept), "%s", ctx->accept);
	if (!conf->accept_backlog && strcmp(conf->accept, "none"))
		conf->accept_backlog = ctx->accept_backlog;
	conf->verify_peer_nid = ctx->verify_peer_nid;
}

static int net_add_conf(struct ctl_ctx *ctx, struct ulnet_ni_conf *conf, struct ctl_reply *rp)
{
	ni_conf_defaults(ctx, conf);
	int rc = ulnet_ni_add(ctx->ln, conf);

	if (rc < 0) {
		/* The kernel's extack text for every failure of NI add. */
		y_nl_error(&rp->err, "add", "net", rc, "cannot add LNet NI");
		return -EINVAL;
	}
	return 0;
}

static int cmd_net_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		       const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if ((rc = need_ln(ctx, "add", "net", rp)))
		return -EINVAL;
	struct ulnet_ni_conf conf;

	memset(&conf, 0, sizeof(conf));
	static const int numopt[] = { NA_PTO, NA_PCR, NA_PBC, NA_CR, NA_CPP, NA_TOS, NA_APORT };
	long v[7] = { 0, 0, 0, 0, 0, 0, 0 };

	for (int i = 0; i < 7; i++) {
		int k = numopt[i];
		long lo = k == NA_TOS ? -1 : 0, hi = k == NA_APORT ? 65535 : INT_MAX;

		if (p->v[k].set && parse_int(p->v[k].arg, lo, hi, &v[i]) < 0) {
			char msg[200];

			snprintf(msg, sizeof(msg), "invalid value for --%s: '%s'",
				 net_add_opts[k].name, p->v[k].arg);
			y_nl_error(&rp->err, "add", "net", -EINVAL, msg);
			return -EINVAL;
		}
	}
	/* lnetctl options ulnet has no counterpart for: refused, not ignored */
	static const int unsup[] = { NA_IP2NET, NA_CPT, NA_SKIP, NA_AUTH, NA_TC };

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
	rc = ni_conf_addr(p->v[NA_NID].arg, p->v[NA_NET].arg, p->v[NA_IF].arg, &conf, rp, "add");
	if (rc)
		return -EINVAL;
	conf.tun.peer_timeout = (int)v[0];
	conf.tun.peer_credits = (int)v[1];
	conf.tun.peer_buffer_credits = (int)v[2];
	conf.tun.credits = (int)v[3];
	conf.tun.conns_per_peer = (int)v[4];
	conf.tun.tos = p->v[NA_TOS].set ? (int)v[5] : -1;
	conf.accept_port = (uint16_t)v[6];
	return net_add_conf(ctx, &conf, rp);
}

static int cmd_net_del(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		       const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (need_ln(ctx, "del", "net", rp))
		return -EINVAL;
	struct ulnet_parse_err pe = { 0 };
	char msg[300];

	if (p->v[1].set) {
		ulnet_nid_t nid;

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
	struct ulnet_ni_info *ni = calloc(MAX_NIS, sizeof(*ni));

	if (!ni)
		return -ENOMEM;
	int n = get_nis(ctx->ln, ni, MAX_NIS), ndel = 0;

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

static int verbosity(const struct optval *v)
{
	long d = 1;

	if (!v->set)
		return 0;
	if (v->arg && parse_int(v->arg, 0, 100, &d) < 0)
		d = 1;
	return (int)d;
}

static int cmd_net_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (!ctx->ln)
		return down_error(rp, "net", "LNet stack down");
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
	struct ulnet_ni_info *ni = calloc(MAX_NIS, sizeof(*ni));

	if (!ni)
		return -ENOMEM;
	int n = get_nis(ctx->ln, ni, MAX_NIS);

	ctl_render_net_show(&rp->out, ni, n, verbosity(&p->v[1]), p->v[0].set ? &net : NULL);
	free(ni);
	return 0;
}

static int cmd_unsupported(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			   const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "'%s' is not supported by ulnet", c->name);
	y_nl_error(&rp->err, "set", c->name, -EOPNOTSUPP, msg);
	return -EINVAL;
}

/* --- peer -------------------------------------------------------------------------- */

static int peer_nids(const char *op, const char *prim, const char *list, ulnet_nid_t *primary,
		     ulnet_nid_t *nids, int max, struct ctl_reply *rp)
{
	char msg[300], bad[CTL_MAX_ARG + 1] = "";

	if (!prim) {
		y_nl_error(&rp->err, op, "peer", -EINVAL, "--prim_nid must be specified");
		return -EINVAL;
	}
	char *w[1] = { (char *)prim };

	if (parse_nid_list(w, 1, primary, 1, bad, sizeof(bad)) != 1) {
		snprintf(msg, sizeof(msg), "Unable to parse primary NID '%s'", prim);
		y_nl_error(&rp->err, op, "peer", -EINVAL, msg);
		return -EINVAL;
	}
	if (!list)
		return 0;
	w[0] = (char *)list;
	int n = parse_nid_list(w, 1, nids, max, bad, sizeof(bad));

	if (n < 0) {
		snprintf(msg, sizeof(msg), "Unable to parse nidlist: '%.200s'", bad[0] ? bad : list);
		y_nl_error(&rp->err, op, "peer", n, msg);
		return -EINVAL;
	}
	if (n == 0) {
		/* "--nid ,,,": lnetctl's words; never "no NIDs" (for del:
		 * the whole peer) */
		snprintf(msg, sizeof(msg), "can't parse nidrange: \"%.200s\"\n", list);
		ybuf_puts(&rp->out, msg);
		y_nl_error(&rp->err, op, "peer", -EINVAL,
			   "\"Unable to parse nidlist: no valid NIDs in string\"");
		return -EINVAL;
	}
	return n;
}

static int cmd_peer_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (p->v[3].set || p->v[4].set) {
		y_nl_error(&rp->err, "add", "peer", -EOPNOTSUPP, p->v[3].set ?
			   "--ip2nets is not supported by ulnet" : "--lock_prim is not supported by ulnet");
		return -EINVAL;
	}
	if (need_ln(ctx, "add", "peer", rp))
		return -EINVAL;
	ulnet_nid_t prim, nids[128];
	int n = peer_nids("add", p->v[0].arg, p->v[1].arg, &prim, nids, 128, rp);

	if (n < 0)
		return -EINVAL;
	rc = ulnet_peer_add(ctx->ln, &prim, nids, n, p->v[2].set);
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

	if (need_ln(ctx, "del", "peer", rp))
		return -EINVAL;
	ulnet_nid_t prim, nids[128];
	int n = peer_nids("del", p->v[0].arg, p->v[1].arg, &prim, nids, 128, rp);

	if (n < 0)
		return -EINVAL;
	rc = ulnet_peer_del(ctx->ln, &prim, n ? nids : NULL, n);
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
	for (int j = 0; j < pi->nnis && j < 16; j++)
		if (ulnet_nid_same(&pi->nis[j].nid, nid))
			return true;
	return false;
}

static int peer_show_common(struct ctl_ctx *ctx, const char *nidstr, int verbose, bool list,
			    struct ctl_reply *rp)
{
	ulnet_nid_t want;

	if (nidstr) {
		char *w[1] = { (char *)nidstr };
		char bad[CTL_MAX_ARG + 1];

		if (parse_nid_list(w, 1, &want, 1, bad, sizeof(bad)) != 1) {
			y_nl_error(&rp->err, "show", "peer", -EINVAL,
				   "Unable to parse nidlist: no valid NIDs in string");
			return -EINVAL;
		}
	}
	if (!ctx->ln)
		return down_error(rp, "peer", "Network is down");
	struct ulnet_peer_info *pi = calloc(MAX_PEERS, sizeof(*pi));

	if (!pi)
		return -ENOMEM;
	int n = get_peers(ctx->ln, pi, MAX_PEERS);

	if (nidstr) {
		int k = 0;

		for (int i = 0; i < n; i++)
			if (peer_has_nid(&pi[i], &want))
				pi[k++] = pi[i];
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
	free(pi);
	return 0;
}

static int cmd_peer_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			 const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return peer_show_common(ctx, p->v[0].arg, verbosity(&p->v[1]), false, rp);
}

static int cmd_peer_list(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			 const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return peer_show_common(ctx, NULL, 0, true, rp);
}


/* --- net set / peer set ---------------------------------------------------------- */

enum { SV_ALL, SV_NET, SV_LNDTO, SV_CPP, SV_NID, SV_STATE, SV_HEALTH, SV_COUNT };

static const struct optspec set_value_opts[SV_COUNT] = {
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

static int set_value(struct ctl_ctx *ctx, const struct cmd *c, bool peer, const struct parsed *p,
		     struct ctl_reply *rp)
{
	int rc;
	const char *what = peer ? "peer" : "net";
	ulnet_net_t net = 0;
	ulnet_nid_t nid = ULNET_NID_ANY;
	long lndto = -1, cpp = -1, state = -1, health = -1;
	char nb[ULNET_NIDSTR_SIZE], msg[CTL_MAX_ARG + 128];

	if (p->npos) {
		print_help(&rp->err, what, c);
		return sv_error(rp, -EINVAL, "\"Invalid option or missing argument\"", "");
	}
	if (p->v[SV_NET].set && ulnet_net_parse(p->v[SV_NET].arg, &net, NULL) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid network type: %s\"", p->v[SV_NET].arg);
	if (p->v[SV_LNDTO].set && parse_int(p->v[SV_LNDTO].arg, 0, INT_MAX, &lndto) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid LND timeout value '%s', must be >= 0\"",
				p->v[SV_LNDTO].arg);
	if (!peer && p->v[SV_CPP].set && parse_int(p->v[SV_CPP].arg, 0, 127, &cpp) < 0)
		return sv_error(rp, -1, "invalid conns-per-peer value (valid range 0-127)", "");
	if (peer && p->v[SV_STATE].set && parse_int(p->v[SV_STATE].arg, 0, UINT32_MAX, &state) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid peer state value '%s'\"", p->v[SV_STATE].arg);
	if (p->v[SV_HEALTH].set &&
	    parse_int(p->v[SV_HEALTH].arg, 0, ULNET_MAX_HEALTH, &health) < 0)
		return sv_error(rp, -EINVAL, "\"Invalid health value '%s', must be 0-1000\"",
				p->v[SV_HEALTH].arg);
	if (lndto >= 0 && !p->v[SV_NET].set)
		return sv_error(rp, -EINVAL, "\"Specified --lnd-timeout without --net option\"", "");
	if (p->v[SV_NID].set && ulnet_nid_parse(p->v[SV_NID].arg, &nid, NULL) < 0) {
		snprintf(msg, sizeof(msg), "cannot parse NID '%s'", p->v[SV_NID].arg);
		y_nl_error(&rp->err, "set", what, -EINVAL, msg);
		return -EINVAL;
	}
	if (p->v[SV_ALL].set && p->v[SV_NID].set)
		return sv_error(rp, -EINVAL, "\"--all and --nid are mutually exclusive\"", "");
	if (need_ln(ctx, "set", what, rp))
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
	return set_value(ctx, c, false, p, rp);
}

static int cmd_peer_set(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return set_value(ctx, c, true, p, rp);
}

/* --- ping / discover ---------------------------------------------------------------- */

static int ping_like(struct ctl_ctx *ctx, bool discover, const struct parsed *p,
		     struct ctl_reply *rp)
{
	const char *what = discover ? "discover" : "ping";
	int rc;

	if (p->npos == 0) {
		if (discover) {
			ybuf_puts(&rp->out, "Missing nid argument\n");
			return -1;
		}
		y_nl_error(&rp->err, "manage", what, -EINVAL,
			   "\"Unable to parse nidlist: no valid NIDs in string\"");
		return -EINVAL;
	}
	long timeout_ms = 1000;
	ulnet_nid_t src;

	if (!discover && p->v[0].set) {
		long t;

		if (parse_int(p->v[0].arg, 0, ctx->max_wait_s, &t) < 0) {
			char msg[160];

			snprintf(msg, sizeof(msg), "invalid timeout '%s' (0..%d seconds)",
				 p->v[0].arg, ctx->max_wait_s);
			y_nl_error(&rp->err, "manage", what, -EINVAL, msg);
			return -EINVAL;
		}
		timeout_ms = t * 1000;
	}
	if (!discover && p->v[1].set && ulnet_nid_parse(p->v[1].arg, &src, NULL) < 0) {
		y_nl_error(&rp->err, "manage", what, -EINVAL,
			   "\"Unable to parse source NID\"");
		return -EINVAL;
	}
	ulnet_nid_t *nids = calloc(MAX_PING, sizeof(*nids));
	struct ctl_ping_result *res = calloc(MAX_PING, sizeof(*res));
	char bad[CTL_MAX_ARG + 1] = "";

	if (!nids || !res) {
		free(nids);
		free(res);
		return -ENOMEM;
	}
	int n = parse_nid_list(p->pos, p->npos, nids, MAX_PING, bad, sizeof(bad));

	if (n <= 0) {
		y_nl_error(&rp->err, "manage", what, -EINVAL,
			   "\"Unable to parse nidlist: no valid NIDs in string\"");
		rc = -EINVAL;
		goto out;
	}
	if (need_ln(ctx, "manage", what, rp)) {
		rc = -EINVAL;
		goto out;
	}
	rc = 0;
	for (int i = 0; i < n; i++) {
		res[i].target = nids[i];
		if (discover) {
			/* Discovery waits for ping + push: the transaction timeout
			 * bounds it in the kernel; we cap it for the daemon. */
			int to = ctx->max_wait_s * 1000;

			res[i].rc = ulnet_discover(ctx->ln, &nids[i], p->v[0].set, to, &res[i].peer);
			/* The kernel reports failed discovery as -EIO. */
			if (res[i].rc < 0 && res[i].rc != -EHOSTUNREACH && res[i].rc != -EINVAL)
				res[i].rc = -EIO;
		} else {
			ulnet_process_id_t id = { .nid = nids[i], .pid = ULNET_PID_ANY };

			res[i].rc = ulnet_ping(ctx->ln, id, p->v[1].set ? &src : NULL, 0,
					       (int)timeout_ms, &res[i].peer);
			/* A ping that got no reply in time is -EIO in lnetctl. */
			if (res[i].rc == -ETIMEDOUT)
				res[i].rc = -EIO;
		}
		if (res[i].rc < 0)
			rc = -1;
	}
	ctl_render_ping(&rp->out, what, res, n);
out:
	free(nids);
	free(res);
	return rc;
}

static int cmd_ping(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		    const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ping_like(ctx, false, p, rp);
}

static int cmd_discover(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ping_like(ctx, true, p, rp);
}

/* --- stats / global / set -------------------------------------------------------------- */

static int cmd_stats_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			  const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	struct ulnet_counters cn;

	if (!ctx->ln) {
		y_cy_error(&rp->err, "show", "statistics", -ENETDOWN,
			   "\"cannot get lnet statistics: Network is down\"");
		return -ENETDOWN;
	}
	ulnet_counters_get(ctx->ln, &cn);
	ctl_render_stats(&rp->out, &cn);
	return 0;
}

static int cmd_stats_reset(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			   const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (!ctx->ln) {
		y_cy_error(&rp->err, "reset", "statistics", -ENETDOWN,
			   "\"cannot reset lnet statistics: Network is down\"");
		return -ENETDOWN;
	}
	ulnet_counters_reset(ctx->ln);
	return 0;
}

static int cmd_global_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			   const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	struct ulnet_globals g;

	/* module parameters: readable while LNet is down */
	if (ctx->ln)
		ulnet_globals_get(ctx->ln, &g);
	else if (ctx->saved_g_valid)
		g = ctx->saved_g;
	else
		return down_error(rp, "global", "LNet stack down");
	ctl_render_global(&rp->out, &g);
	return 0;
}

struct gset {
	const char *name;
	size_t off;
	const char *what;   /* "cannot parse <what> value" */
	const char *range;  /* descr when out of range */
};

#define GOFF(f) offsetof(struct ulnet_globals, f)
static const struct gset gsets[] = {
	{ "numa_range", GOFF(numa_range), "numa_range", "\"range must be >= 0\"" },
	{ "max_interfaces", GOFF(max_interfaces), "max_interfaces", "\"max interfaces must be >= 16\"" },
	{ "discovery", GOFF(discovery), "discovery", "\"Valid values are: 0 or 1\"" },
	{ "drop_asym_route", GOFF(drop_asym_route), "drop_asym_route", "\"Valid values are: 0 or 1\"" },
	{ "retry_count", GOFF(retry_count), "retry_count", "\"cannot configure retry count: Invalid argument\"" },
	{ "transaction_timeout", GOFF(transaction_timeout), "transaction timeout", "\"cannot configure transaction timeout: Invalid argument\"" },
	{ "health_sensitivity", GOFF(health_sensitivity), "health sensitivity", "\"cannot configure health sensitivity: Invalid argument\"" },
	{ "recovery_interval", GOFF(recovery_interval), "recovery interval", "\"cannot configure recovery interval: Invalid argument\"" },
	{ "router_sensitivity", GOFF(router_sensitivity), "router sensitivity", "\"cannot configure router sensitivity: Invalid argument\"" },
	{ "response_tracking", GOFF(response_tracking), "response_tracking", "\"Valid values are: 0, 1, 2, or 3\"" },
	{ "recovery_limit", GOFF(recovery_limit), "recovery_limit", "\"cannot configure recovery limit: Invalid argument\"" },
	{ "max_recovery_ping_interval", GOFF(max_recovery_ping_interval), "maximum recovery interval", "\"cannot configure maximum recovery ping interval: Invalid argument\"" },
};
#define NGSETS ((int)(sizeof(gsets) / sizeof(gsets[0])))

static const struct gset *gset_find(const char *name)
{
	for (int i = 0; i < NGSETS; i++)
		if (strcmp(gsets[i].name, name) == 0)
			return &gsets[i];
	return NULL;
}

/* Set one global; on failure a cYAML error is appended to err. */
static int global_set_one(struct ctl_ctx *ctx, const struct gset *gs, long value, struct ybuf *err)
{
	struct ulnet_globals g;

	ulnet_globals_get(ctx->ln, &g);
	if (value < INT_MIN || value > INT_MAX)
		value = INT_MIN; /* out of every range: the library says -EINVAL */
	*(int *)((char *)&g + gs->off) = (int)value;
	int rc = ulnet_globals_set(ctx->ln, &g);

	if (rc < 0)
		y_cy_error(err, "add", gs->name, rc, gs->range);
	return rc;
}

static int cmd_set_value(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			 const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	const struct gset *gs = gset_find(c->name);
	long value;
	char msg[160];

	if (argc < 2) {
		print_help(&rp->out, "set", c);
		return -EINVAL;
	}
	if (argc > 2) {
		/* set NAME VALUE, nothing more */
		if (argv[2][0] == '-')
			ybuf_printf(&rp->err, "%s: unrecognized option '%.64s'\n", PROG, argv[2]);
		else
			ybuf_printf(&rp->err, "%s: unexpected argument '%.64s'\n", PROG, argv[2]);
		print_help(&rp->err, "set", c);
		return -EINVAL;
	}
	if (!gs)
		return cmd_unsupported(ctx, c, p, argc, argv, blob, bloblen, rp);
	errno = 0;
	char *end;

	value = strtol(argv[1], &end, 0);
	if (errno || !argv[1][0] || *end) {
		snprintf(msg, sizeof(msg), "cannot parse %s value", gs->what);
		y_cy_error(&rp->err, "parser", "set", -1, msg);
		return -1;
	}
	if (!ctx->ln) {
		y_cy_error(&rp->err, "add", gs->name, -ENETDOWN, "\"LNet stack down\"");
		return -ENETDOWN;
	}
	return global_set_one(ctx, gs, value, &rp->err);
}

/* --- route / routing / udsp / debug -------------------------------------------------------- */

static const char *route_show_opt_name(int k)
{
	static const char *const names[] = { "net", "gateway", "hop-count", "hop", "priority" };

	return k >= 0 && k < 5 ? names[k] : "?";
}

static int cmd_empty_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			  const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	/* No routes, routing buffers or UDSP rules exist: lnetctl prints
	 * nothing at all in that case. */
	return 0;
}

static int cmd_route_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			  int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	/* The filters are checked; ulnet has no routes, so none matches. */
	const char *bad = NULL, *val = NULL;
	ulnet_net_t net;
	ulnet_nid_t gw;
	long v;

	if (p->v[0].set && ulnet_net_parse(p->v[0].arg, &net, NULL) < 0)
		bad = "net", val = p->v[0].arg;
	else if (p->v[1].set && ulnet_nid_parse(p->v[1].arg, &gw, NULL) < 0)
		bad = "gateway", val = p->v[1].arg;
	for (int k = 2; k <= 4 && !bad; k++)
		if (p->v[k].set && parse_int(p->v[k].arg, INT_MIN, INT_MAX, &v) < 0)
			bad = route_show_opt_name(k), val = p->v[k].arg;
	if (bad) {
		char msg[200];

		snprintf(msg, sizeof(msg), "invalid value for --%s: '%.64s'", bad, val);
		y_nl_error(&rp->err, "show", "route", -EINVAL, msg);
		return -EINVAL;
	}
	return 0;
}

static int cmd_udsp_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			 int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	long idx;

	if (p->v[0].set && parse_int(p->v[0].arg, 0, INT_MAX, &idx) < 0) {
		char msg[200];

		snprintf(msg, sizeof(msg), "Invalid index \"%.64s\"", p->v[0].arg);
		y_nl_error(&rp->err, "show", "udsp", -EINVAL, msg);
		return -EINVAL;
	}
	return 0; /* no rules: nothing to show */
}

static int cmd_route_change(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			    const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	y_nl_error(&rp->err, strcmp(c->name, "add") == 0 ? "add" : "del", "route", -EOPNOTSUPP,
		   "routing is not supported by ulnet");
	return -EINVAL;
}

static int cmd_udsp_change(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			   const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	y_nl_error(&rp->err, c->name, "udsp", -EOPNOTSUPP, "UDSP is not supported by ulnet");
	return -EINVAL;
}

static int cmd_debug_peer(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			  const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (!p->v[0].set) {
		y_nl_error(&rp->err, "show", "peer", -EINVAL, "--nid must be specified");
		return -EINVAL;
	}
	/* Everything ulnet knows of the peer: the -v 4 view. */
	rc = peer_show_common(ctx, p->v[0].arg, 4, false, rp);
	if (rc == -EINVAL && !rp->err.len) {
		char msg[200];

		snprintf(msg, sizeof(msg), "peer %s not found", p->v[0].arg);
		y_nl_error(&rp->err, "show", "peer", -ENOENT, msg);
	}
	return rc;
}

static int cmd_debug_recovery(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			      const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (!ctx->ln)
		return down_error(rp, "recovery", "Network is down");
	/* Unhealthy NIs are the ones in recovery. */
	if (!p->v[1].set) {
		struct ulnet_ni_info *ni = calloc(MAX_NIS, sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		int n = get_nis(ctx->ln, ni, MAX_NIS);
		char nb[ULNET_NIDSTR_SIZE];

		cy_key(&rp->out, 0, "Local NI recovery");
		for (int i = 0; i < n; i++)
			if (ni[i].nid.type != ULNET_LND_LO && ni[i].health.health_value < 1000)
				ybuf_printf(&rp->out, "    - nid: %s\n", ulnet_nid_str(&ni[i].nid, nb));
		free(ni);
	}
	if (!p->v[0].set || p->v[1].set) {
		struct ulnet_peer_info *pi = calloc(MAX_PEERS, sizeof(*pi));

		if (!pi)
			return -ENOMEM;
		int n = get_peers(ctx->ln, pi, MAX_PEERS);
		char nb[ULNET_NIDSTR_SIZE];

		cy_key(&rp->out, 0, "Peer NI recovery");
		for (int i = 0; i < n; i++)
			for (int j = 0; j < pi[i].nnis && j < 16; j++)
				if (pi[i].nis[j].health.health_value < 1000)
					ybuf_printf(&rp->out, "    - nid: %s\n",
						    ulnet_nid_str(&pi[i].nis[j].nid, nb));
		free(pi);
	}
	return 0;
}

/* --- export / import --------------------------------------------------------------------- */

static int cmd_export(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		      const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	if (!ctx->ln)
		return down_error(rp, "net", "LNet stack down");
	struct ulnet_ni_info *ni = calloc(MAX_NIS, sizeof(*ni));
	struct ulnet_peer_info *pi = calloc(MAX_PEERS, sizeof(*pi));
	struct ulnet_globals g;

	if (!ni || !pi) {
		free(ni);
		free(pi);
		return -ENOMEM;
	}
	int nn = get_nis(ctx->ln, ni, MAX_NIS), np = get_peers(ctx->ln, pi, MAX_PEERS);

	ulnet_globals_get(ctx->ln, &g);
	ctl_render_export(&rp->out, ni, nn, pi, np, &g, p->v[0].set);
	free(ni);
	free(pi);
	return 0;
}

enum imp_mode { IMP_ADD, IMP_DEL, IMP_SHOW, IMP_EXEC };

struct imp {
	struct ctl_ctx *ctx;
	const char *name;
	yaml_document_t doc;
	enum imp_mode mode;
	struct ybuf *err;
	struct ctl_reply *rp; /* for ping/discover output (exec) */
	int nerr;
};

static yaml_node_t *ynode(struct imp *im, yaml_node_item_t i)
{
	return yaml_document_get_node(&im->doc, i);
}

static const char *yscalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Value of key `k` in mapping `m`, or NULL. */
static yaml_node_t *ymap_get(struct imp *im, yaml_node_t *m, const char *k)
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

static void imp_error(struct imp *im, yaml_node_t *at, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void imp_error(struct imp *im, yaml_node_t *at, int err, const char *fmt, ...)
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

static int yint(yaml_node_t *n, long *v)
{
	return parse_int(yscalar(n), LONG_MIN, LONG_MAX, v);
}

static void imp_net(struct imp *im, yaml_node_t *net)
{
	const char *type = yscalar(ymap_get(im, net, "net type"));

	if (!type) {
		imp_error(im, net, -EINVAL, "net entry without 'net type'");
		return;
	}
	if (strcmp(type, "lo") == 0)
		return; /* 0@lo always exists */
	yaml_node_t *nis = ymap_get(im, net, "local NI(s)");

	if (!nis || nis->type != YAML_SEQUENCE_NODE) {
		imp_error(im, net, -EINVAL, "net '%s' without 'local NI(s)' list", type);
		return;
	}
	for (yaml_node_item_t *it = nis->data.sequence.items.start;
	     it < nis->data.sequence.items.top; it++) {
		yaml_node_t *ni = ynode(im, *it);
		const char *nid = yscalar(ymap_get(im, ni, "nid"));
		yaml_node_t *ifs = ymap_get(im, ni, "interfaces");
		const char *ifn = NULL;
		struct ulnet_ni_conf conf;
		struct ctl_reply tmp;

		if (ifs && ifs->type == YAML_MAPPING_NODE && ifs->data.mapping.pairs.start < ifs->data.mapping.pairs.top)
			ifn = yscalar(ynode(im, ifs->data.mapping.pairs.start->value));
		memset(&conf, 0, sizeof(conf));
		conf.tun.tos = -1;
		ctl_reply_init(&tmp);
		int rc = ni_conf_addr(nid, type, ifn, &conf, &tmp, "add");

		if (rc) {
			imp_error(im, ni, rc, "cannot configure NI of net '%s': %s", type,
				  nid ? "bad 'nid'" : "bad or missing 'interfaces'");
			ctl_reply_free(&tmp);
			continue;
		}
		ctl_reply_free(&tmp);
		if (im->mode == IMP_DEL) {
			rc = ulnet_ni_del(im->ctx->ln, &conf.nid);
			if (rc < 0)
				imp_error(im, ni, rc, "cannot del LNet NI");
			continue;
		}
		yaml_node_t *tun = ymap_get(im, ni, "tunables");
		yaml_node_t *lnd = ymap_get(im, ni, "lnd tunables");
		struct {
			yaml_node_t *m;
			const char *k;
			int *dst;
		} f[] = {
			{ tun, "peer_timeout", &conf.tun.peer_timeout },
			{ tun, "peer_credits", &conf.tun.peer_credits },
			{ tun, "peer_buffer_credits", &conf.tun.peer_buffer_credits },
			{ tun, "credits", &conf.tun.credits },
			{ lnd, "conns_per_peer", &conf.tun.conns_per_peer },
			{ lnd, "tos", &conf.tun.tos },
		};
		bool bad = false;

		for (size_t k = 0; k < sizeof(f) / sizeof(f[0]) && !bad; k++) {
			yaml_node_t *vn = ymap_get(im, f[k].m, f[k].k);
			long v;

			if (!vn)
				continue;
			if (yint(vn, &v) < 0 || v < -1 || v > INT_MAX) {
				imp_error(im, vn, -EINVAL, "invalid value for '%s'", f[k].k);
				bad = true;
				continue;
			}
			*f[k].dst = (int)v;
		}
		if (bad)
			continue;
		ni_conf_defaults(im->ctx, &conf);
		rc = ulnet_ni_add(im->ctx->ln, &conf);
		if (rc < 0)
			imp_error(im, ni, rc, "cannot add LNet NI");
	}
}

static void imp_peer(struct imp *im, yaml_node_t *peer)
{
	yaml_node_t *pn = ymap_get(im, peer, "primary nid");
	const char *prim = yscalar(pn);
	const char *mr = yscalar(ymap_get(im, peer, "Multi-Rail"));
	yaml_node_t *pnis = ymap_get(im, peer, "peer ni");
	ulnet_nid_t p, nids[16];
	int n = 0;

	if (!prim || ulnet_nid_parse(prim, &p, NULL) < 0) {
		imp_error(im, pn ? pn : peer, -EINVAL, "bad or missing 'primary nid'");
		return;
	}
	if (pnis && pnis->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = pnis->data.sequence.items.start;
		     it < pnis->data.sequence.items.top && n < 16; it++) {
			yaml_node_t *nn = ymap_get(im, ynode(im, *it), "nid");
			const char *s = yscalar(nn);

			if (!s || ulnet_nid_parse(s, &nids[n], NULL) < 0) {
				imp_error(im, nn ? nn : ynode(im, *it), -EINVAL, "bad peer ni 'nid'");
				return;
			}
			if (!ulnet_nid_same(&nids[n], &p))
				n++;
		}
	}
	int rc;

	if (im->mode == IMP_DEL) {
		rc = ulnet_peer_del(im->ctx->ln, &p, NULL, 0);
		if (rc < 0)
			imp_error(im, peer, rc, "cannot del peer %s", prim);
		return;
	}
	bool non_mr = mr && (strcasecmp(mr, "false") == 0);

	rc = ulnet_peer_add(im->ctx->ln, &p, nids, n, non_mr);
	if (rc < 0 && rc != -EEXIST)
		imp_error(im, peer, rc, "cannot add peer %s", prim);
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
		const struct gset *gs = k ? gset_find(k) : NULL;
		long v;

		if (!k || strcmp(k, "lnd_timeout") == 0)
			continue; /* derived, read-only */
		if (!gs) {
			imp_error(im, ynode(im, p->key), -EINVAL, "unknown global '%s'", k);
			continue;
		}
		if (yint(vn, &v) < 0) {
			imp_error(im, vn, -EINVAL, "invalid value for '%s'", k);
			continue;
		}
		struct ybuf tmp;

		ybuf_init(&tmp);
		if (global_set_one(im->ctx, gs, v, &tmp) < 0)
			imp_error(im, vn, -EINVAL, "value %ld out of range for '%s'", v, k);
		ybuf_free(&tmp);
	}
}

static void imp_ping(struct imp *im, yaml_node_t *v, bool discover)
{
	/* ping/discover entries: a list of {primary nid: X} or NID strings,
	 * each a NID (never an option). */
	struct parsed p;

	if (!v || v->type != YAML_SEQUENCE_NODE)
		return;
	memset(&p, 0, sizeof(p));
	for (yaml_node_item_t *it = v->data.sequence.items.start;
	     it < v->data.sequence.items.top && p.npos < MAX_PING; it++) {
		yaml_node_t *e = ynode(im, *it);
		const char *s = yscalar(e);

		if (!s)
			s = yscalar(ymap_get(im, e, "primary nid"));
		if (!s)
			s = yscalar(ymap_get(im, e, "nid"));
		if (s)
			p.pos[p.npos++] = (char *)s;
	}
	if (p.npos)
		ping_like(im->ctx, discover, &p, im->rp);
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
	static const char *const known[] = { "net", "route", "peer", "routing", "buffers", "global",
					      "numa", "ip2nets", "udsp", "ping", "discover",
					      "statistics" };
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(&im, p->key), *v = ynode(&im, p->value);
		const char *k = yscalar(kn);
		bool ok = false;

		for (size_t i = 0; k && i < sizeof(known) / sizeof(known[0]); i++)
			ok |= strcmp(k, known[i]) == 0;
		if (!ok) {
			imp_error(&im, kn, -EINVAL, "unknown top-level key '%s'", k ? k : "?");
			continue;
		}
		if (nets_only && strcmp(k, "net") != 0)
			continue;
		if (mode == IMP_EXEC) {
			if (strcmp(k, "ping") == 0 || strcmp(k, "discover") == 0)
				imp_ping(&im, v, k[0] == 'd');
			continue;
		}
		bool is_seq = v && v->type == YAML_SEQUENCE_NODE;

		if (strcmp(k, "net") == 0 || strcmp(k, "peer") == 0) {
			if (!is_seq) {
				imp_error(&im, v, -EINVAL, "'%s' must be a list", k);
				continue;
			}
			for (yaml_node_item_t *it = v->data.sequence.items.start;
			     it < v->data.sequence.items.top; it++) {
				if (k[0] == 'n')
					imp_net(&im, ynode(&im, *it));
				else
					imp_peer(&im, ynode(&im, *it));
			}
		} else if (strcmp(k, "global") == 0) {
			if (mode == IMP_ADD)
				imp_global(&im, v);
		} else if (strcmp(k, "route") == 0 || strcmp(k, "ip2nets") == 0 ||
			   strcmp(k, "udsp") == 0) {
			if (is_seq && v->data.sequence.items.start < v->data.sequence.items.top)
				imp_error(&im, v, -EOPNOTSUPP, "'%s' is not supported by ulnet", k);
		}
		/* routing, buffers, numa, statistics, ping, discover: nothing
		 * to configure outside --exec. */
	}
	rc = im.nerr ? -EINVAL : 0;
out:
	yaml_document_delete(&im.doc);
	return rc;
}

static int cmd_import(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
		      const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;
	enum imp_mode mode = p->v[1].set ? IMP_DEL : p->v[2].set ? IMP_SHOW :
			     p->v[3].set ? IMP_EXEC : IMP_ADD;
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
	int rc = import_text(ctx, name, text, len, IMP_ADD, false, err, &rp);

	ctl_reply_free(&rp);
	return rc;
}

static int import_text(struct ctl_ctx *ctx, const char *name, const char *text, size_t len,
		       int imode, bool nets_only, struct ybuf *err, struct ctl_reply *rp)
{
	yaml_document_t doc;
	int rc = yaml_load_bounded(name, text, len, imode == IMP_DEL ? "del" : "add", &doc, err);

	if (rc)
		return rc;
	return import_doc(ctx, name, &doc, imode, nets_only, err, rp);
}

/* --- command tables -------------------------------------------------------------------- */

/* The options of each command (the handlers index p->v[] in this order). */
static const struct optspec lnet_configure_opts[] = { { "all", 'a', ARG_NONE }, { "large", 'l', ARG_NONE } };
static const struct optspec net_del_opts[] = {
	{ "net", 'n', ARG_REQ }, { "nid", 0, ARG_REQ }, { "if", 'i', ARG_REQ },
};
static const struct optspec net_show_opts[] = { { "net", 'n', ARG_REQ }, { "verbose", 'v', ARG_OPT_NUM } };
static const struct optspec peer_add_opts[] = {
	{ "prim_nid", 'k', ARG_REQ }, { "nid", 'n', ARG_REQ }, { "non_mr", 'm', ARG_NONE },
	{ "ip2nets", 'i', ARG_REQ }, { "lock_prim", 'l', ARG_NONE },
};
static const struct optspec peer_del_opts[] = {
	{ "prim_nid", 'k', ARG_REQ }, { "nid", 'n', ARG_REQ }, { "force", 'f', ARG_NONE },
};
static const struct optspec peer_show_opts[] = { { "nid", 'n', ARG_REQ }, { "verbose", 'v', ARG_OPT_NUM } };
static const struct optspec ping_opts[] = { { "timeout", 't', ARG_REQ }, { "source", 's', ARG_REQ } };
static const struct optspec discover_opts[] = { { "force", 'f', ARG_NONE } };
static const struct optspec debug_peer_opts[] = { { "nid", 'k', ARG_REQ } };
static const struct optspec debug_recovery_opts[] = { { "local", 'l', ARG_NONE }, { "peer", 'p', ARG_NONE } };
static const struct optspec export_opts[] = { { "backup", 'b', ARG_NONE } };
static const struct optspec import_opts[] = {
	{ "add", 'a', ARG_NONE }, { "del", 'd', ARG_NONE }, { "show", 's', ARG_NONE },
	{ "exec", 'e', ARG_NONE },
};

static const struct cmd lnet_cmds[] = {
	{ "configure", cmd_lnet_configure, NULL, "configure lnet\n"
	  "\t--all: also bring up the networks of ulnetd's --config file\n"
	  "\t--large: start LNet with large NIDs (always on in ulnet)\n", LK_WRITE,
	  OPTS(lnet_configure_opts), 0, false },
	{ "unconfigure", cmd_lnet_unconfigure, NULL, "unconfigure lnet\n", LK_WRITE, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd net_cmds[] = {
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
	  "\t--ip2net, --cpt, --skip-mr-route-setup, --auth-key, --traffic-class:\n"
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
	  "\t--all: set all NIs value to the one specified\n", LK_WRITE,
	  OPTS(set_value_opts), -1 /* its own error */, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd peer_cmds[] = {
	{ "add", cmd_peer_add, NULL, "add a peer\n"
	  "\t--prim_nid: primary NID of the peer\n"
	  "\t--nid: comma-separated list of peer NIDs\n"
	  "\t--non_mr: the peer is not Multi-Rail capable\n"
	  "\t--ip2nets, --lock_prim: not supported by ulnet (refused)\n", LK_WRITE,
	  OPTS(peer_add_opts), 0, false },
	{ "del", cmd_peer_del, NULL, "delete a peer (or some of its NIDs)\n"
	  "\t--prim_nid: primary NID of the peer\n"
	  "\t--nid: comma-separated list of NIDs to remove\n"
	  "\t--force: accepted (ulnet has no locked primary NIDs to override)\n", LK_WRITE,
	  OPTS(peer_del_opts), 0, false },
	{ "show", cmd_peer_show, NULL, "show peer information\n"
	  "\t--nid: NID of the peer to show\n"
	  "\t--verbose|-v [0-4]: detail level\n", LK_READ, OPTS(peer_show_opts), 0, false },
	{ "list", cmd_peer_list, NULL, "list the primary NIDs of all peers\n", LK_READ, NOOPTS, 0, false },
	{ "set", cmd_peer_set, NULL, "set peer ni specific parameter\n"
	  "\t--nid: Peer NI NID to set the value on\n"
	  "\t--health: specify health value to set (0-1000)\n"
	  "\t--all: set all peer_nis values to the one specified\n"
	  "\t--state: set peer state (DANGEROUS: for test/debug only)\n", LK_WRITE,
	  OPTS(set_value_opts), -1 /* its own error */, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct optspec route_show_opts[] = {
	{ "net", 'n', ARG_REQ }, { "gateway", 'g', ARG_REQ }, { "hop-count", 'c', ARG_REQ },
	{ "hop", 0, ARG_REQ }, { "priority", 'p', ARG_REQ }, { "verbose", 'v', ARG_NONE },
};
static const struct optspec udsp_show_opts[] = { { "idx", 'i', ARG_REQ } };

static const struct cmd route_cmds[] = {
	{ "add", cmd_route_change, NULL, "add a route (routing is not supported by ulnet)\n", LK_WRITE,
	  NOOPTS, -1, true },
	{ "del", cmd_route_change, NULL, "delete a route (routing is not supported by ulnet)\n", LK_WRITE,
	  NOOPTS, -1, true },
	{ "show", cmd_route_show, NULL, "show routes (ulnet has none)\n"
	  "\t--net, --gateway, --hop|--hop-count, --priority: filters\n"
	  "\t--verbose: detailed output\n", LK_READ, OPTS(route_show_opts), 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd routing_cmds[] = {
	{ "show", cmd_empty_show, NULL, "show routing information\n", LK_READ, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd udsp_cmds[] = {
	{ "add", cmd_udsp_change, NULL, "add a UDSP rule (not supported by ulnet)\n", LK_WRITE,
	  NOOPTS, -1, true },
	{ "del", cmd_udsp_change, NULL, "delete UDSP rules (not supported by ulnet)\n", LK_WRITE,
	  NOOPTS, -1, true },
	{ "show", cmd_udsp_show, NULL, "show UDSP rules (ulnet has none)\n"
	  "\t--idx: index of the rule to show\n", LK_READ, OPTS(udsp_show_opts), 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd stats_cmds[] = {
	{ "show", cmd_stats_show, NULL, "show LNet statistics\n", LK_READ, NOOPTS, 0, false },
	{ "reset", cmd_stats_reset, NULL, "reset LNet statistics\n", LK_WRITE, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd global_cmds[] = {
	{ "show", cmd_global_show, NULL, "show global variables\n", LK_READ, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd debug_cmds[] = {
	{ "peer", cmd_debug_peer, NULL, "show everything known of a peer\n\t--nid: peer's NID\n",
	  LK_READ, OPTS(debug_peer_opts), 0, false },
	{ "recovery", cmd_debug_recovery, NULL, "list NIs in recovery\n"
	  "\t--local: local NIs\n\t--peer: peer NIs\n", LK_READ, OPTS(debug_recovery_opts), 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

/* set NAME VALUE: VALUE may be negative ("-1"), so these check their
 * words themselves (cmd_set_value). */
#define SETCMD(n, fn, h) { n, fn, NULL, h, LK_WRITE, NOOPTS, 1, true }
static const struct cmd set_cmds[] = {
	SETCMD("numa_range", cmd_set_value, "set NUMA range for NI selection\n\tVALUE must be at least 0\n"),
	SETCMD("max_interfaces", cmd_set_value, "set the default value for max interfaces\n\tVALUE must be at least 16\n"),
	SETCMD("discovery", cmd_set_value, "enable/disable peer discovery\n\t0 - disable\n\t1 - enable (default)\n"),
	SETCMD("drop_asym_route", cmd_set_value, "drop/accept asymmetrical route messages\n\t0 - accept (default)\n\t1 - drop\n"),
	SETCMD("retry_count", cmd_set_value, "number of retries\n\t0 - no retries\n\t>0 - number of retries\n"),
	SETCMD("transaction_timeout", cmd_set_value, "message/response timeout\n\t>0 - timeout in seconds\n"),
	SETCMD("health_sensitivity", cmd_set_value, "sensitivity to failure\n\t0 - no health evaluation\n\t>0 - up to 1000\n"),
	SETCMD("recovery_interval", cmd_set_value, "seconds between recovery pings (at least 1)\n"),
	SETCMD("router_sensitivity", cmd_set_value, "router sensitivity in percent\n"),
	SETCMD("response_tracking", cmd_set_value, "response tracking\n\t0 - pings and pushes only\n\t1 - GETs\n\t2 - PUTs\n\t3 - PUTs and GETs (default)\n"),
	SETCMD("recovery_limit", cmd_set_value, "seconds LNet keeps recovering an unhealthy interface (0: forever)\n"),
	SETCMD("max_recovery_ping_interval", cmd_set_value, "maximum seconds between recovery pings\n"),
	SETCMD("tiny_buffers", cmd_unsupported, "set tiny routing buffers (not supported by ulnet)\n"),
	SETCMD("small_buffers", cmd_unsupported, "set small routing buffers (not supported by ulnet)\n"),
	SETCMD("large_buffers", cmd_unsupported, "set large routing buffers (not supported by ulnet)\n"),
	SETCMD("routing", cmd_unsupported, "enable/disable routing (not supported by ulnet)\n"),
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

#define GROUP(n, sub, h) { n, NULL, sub, h, LK_READ, NOOPTS, 0, false }
static const struct cmd top_cmds[] = {
	GROUP("lnet", lnet_cmds, "lnet {configure | unconfigure} [--all|--large]\n"),
	GROUP("route", route_cmds, "route {add | del | show | help}\n"),
	GROUP("net", net_cmds, "net {add | del | show | set | help}\n"),
	GROUP("routing", routing_cmds, "routing {show | help}\n"),
	GROUP("set", set_cmds, "set {numa_range | max_interfaces | discovery | drop_asym_route"
	      " | retry_count | transaction_timeout | health_sensitivity | recovery_interval"
	      " | router_sensitivity | response_tracking | recovery_limit"
	      " | max_recovery_ping_interval} VALUE\n"),
	/* import parses the file before it takes the lock (cmd_import) */
	{ "import", cmd_import, NULL, "import [--add | --del | --show | --exec] FILE.yaml (or stdin)\n",
	  LK_SELF, OPTS(import_opts), 1, false },
	{ "export", cmd_export, NULL, "export [--backup] [FILE.yaml]\n", LK_READ, OPTS(export_opts), 0, false },
	GROUP("stats", stats_cmds, "stats {show | reset | help}\n"),
	GROUP("debug", debug_cmds, "debug {recovery {--local | --peer} | peer --nid NID}\n"),
	GROUP("global", global_cmds, "global {show | help}\n"),
	GROUP("peer", peer_cmds, "peer {add | del | show | list | set | help}\n"),
	{ "ping", cmd_ping, NULL, "ping nid[,nid,...]\n"
	  "\t--source: source nid\n\t--timeout: ping timeout in seconds (default 1)\n", LK_READ,
	  OPTS(ping_opts), -1, false },
	{ "discover", cmd_discover, NULL, "discover nid[,nid,...]\n\t--force: force discovery\n", LK_READ,
	  OPTS(discover_opts), -1, false },
	GROUP("udsp", udsp_cmds, "udsp {add | del | show | help}\n"),
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd *find_cmd(const struct cmd *t, const char *name)
{
	for (; t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

static void list_cmds(struct ybuf *out, const struct cmd *t)
{
	for (; t->name; t++)
		print_help(out, NULL, t);
}

bool ctl_is_help(int argc, char **argv)
{
	if (argc <= 0)
		return true;
	if (strcmp(argv[0], "help") == 0 || strcmp(argv[0], "--help") == 0 ||
	    strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--list-commands") == 0)
		return true;
	const struct cmd *c = find_cmd(top_cmds, argv[0]);

	if (!c)
		return false;
	if (c->sub) {
		if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
		    strcmp(argv[1], "-h") == 0)
			return true;
		const struct cmd *s = find_cmd(c->sub, argv[1]);

		return s && want_help(argc - 1, argv + 1);
	}
	return want_help(argc, argv);
}

/* Dispatch; returns the handler's lnetctl-style rc (negative errno, -1, 0). */
static int dispatch(struct ctl_ctx *ctx, int argc, char **argv, const char *blob, size_t bloblen,
		    struct ctl_reply *rp)
{
	if (argc <= 0 || strcmp(argv[0], "help") == 0 || strcmp(argv[0], "--help") == 0 ||
	    strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--list-commands") == 0) {
		list_cmds(&rp->out, top_cmds);
		return 0;
	}
	const struct cmd *c = find_cmd(top_cmds, argv[0]);

	if (!c) {
		ybuf_printf(&rp->err, "%s: '%s' is not a valid command. See '%s --list-commands'.\n",
			    PROG, argv[0], PROG);
		return -1;
	}
	const char *parent = NULL;

	if (c->sub) {
		if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
		    strcmp(argv[1], "-h") == 0) {
			ybuf_printf(&rp->out, "%s", c->help);
			list_cmds(&rp->out, c->sub);
			return 0;
		}
		const struct cmd *s = find_cmd(c->sub, argv[1]);

		if (!s) {
			ybuf_printf(&rp->err, "%s: '%s' is not a valid command. See '%s %s --help'.\n",
				    PROG, argv[1], PROG, argv[0]);
			return -1;
		}
		parent = c->name;
		c = s;
		argc--;
		argv++;
	}
	if (want_help(argc, argv)) {
		print_help(&rp->out, parent, c);
		return 0;
	}
	/* Every command's options are checked here, the same way, before
	 * anything runs: nothing unknown is ever ignored. */
	struct parsed p;
	int rc = 0;

	memset(&p, 0, sizeof(p));
	if (!c->raw) {
		rc = parse_opts(argc, argv, c->opts, c->nopts, &p, &rp->err);
		if (rc == 0 && c->maxpos >= 0 && p.npos > c->maxpos) {
			ybuf_printf(&rp->err, "%s: unexpected argument '%.64s'\n", PROG, p.pos[c->maxpos]);
			rc = -EINVAL;
		}
		if (rc) {
			print_help(&rp->err, parent, c);
			return rc;
		}
	}
	if (!ctx) {
		ybuf_printf(&rp->err, "%s: no daemon context\n", PROG);
		return -ENOTCONN;
	}
	if (c->lock == LK_WRITE)
		pthread_rwlock_wrlock(&ctx->lock);
	else if (c->lock == LK_READ)
		pthread_rwlock_rdlock(&ctx->lock);
	rc = c->fn(ctx, c, &p, argc, argv, blob, bloblen, rp);
	if (c->lock != LK_SELF)
		pthread_rwlock_unlock(&ctx->lock);
	return rc;
}

void ctl_run(struct ctl_ctx *ctx, int argc, char **argv, const char *blob, size_t bloblen,
	     struct ctl_reply *rp)
{
	int rc = dispatch(ctx, argc, argv, blob, bloblen, rp);

	if (rp->out.oom || rp->err.oom) {
		ybuf_free(&rp->out);
		ybuf_free(&rp->err);
		ybuf_puts(&rp->err, PROG ": out of memory\n");
		rc = -ENOMEM;
	}
	rp->rc = exit_code(rc);
}

int ctl_ctx_init(struct ctl_ctx *ctx, const struct ulnet_opts *opts, bool configure)
{
	memset(ctx, 0, sizeof(*ctx));
	if (opts)
		ctx->opts = *opts;
	ctx->accept_port = 0;
	snprintf(ctx->accept, sizeof(ctx->accept), "secure");
	ctx->max_wait_s = 120;
	pthread_rwlock_init(&ctx->lock, NULL);
	if (configure) {
		int rc = ulnet_create(&ctx->opts, &ctx->ln);

		if (rc < 0) {
			ctx->ln = NULL;
			pthread_rwlock_destroy(&ctx->lock);
			return rc;
		}
	}
	return 0;
}

int ctl_ctx_set_modparams(struct ctl_ctx *ctx, const char *name, const char *text, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	free(ctx->modparams);
	ctx->modparams = copy;
	ctx->modparams_len = len;
	snprintf(ctx->modparams_name, sizeof(ctx->modparams_name), "%s", name);
	return 0;
}

int ctl_ctx_enable_selftest(struct ctl_ctx *ctx, const struct ulnet_selftest_conf *conf)
{
	int rc = 0;

	ctx->selftest = true;
	if (conf)
		ctx->selftest_conf = *conf;
	if (ctx->ln && !ctx->st)
		rc = ulnet_selftest_start(ctx->ln, &ctx->selftest_conf, &ctx->st);
	if (rc < 0)
		ctx->st = NULL;
	return rc;
}

void ctl_ctx_fini(struct ctl_ctx *ctx)
{
	ulnet_selftest_stop(ctx->st);
	ctx->st = NULL;
	if (ctx->ln)
		ulnet_destroy(ctx->ln);
	ctx->ln = NULL;
	free(ctx->modparams);
	ctx->modparams = NULL;
	pthread_rwlock_destroy(&ctx->lock);
}
