/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds.c - lnetctl's command tree over the ulnet API: the table of
 * every command and its dispatch (help, option checks, the context lock),
 * the context, the helpers the commands share, and the commands of "lnet",
 * "ping", "discover", "stats", "global", "set" (but set routing and set
 * *_buffers) and "debug". "net", "peer", "route" and "routing"
 * are in ctl_cmds_net.c, ctl_cmds_peer.c, ctl_cmds_route.c and
 * ctl_cmds_routing.c (with set routing and set *_buffers), "udsp" in
 * ctl_cmds_udsp.c, "export" and "import" in ctl_import.c, "fault" in
 * ctl_cmds_fault.c, "conn" in ctl_cmds_conn.c, option parsing in
 * ctl_opts.c.
 */
#include "ctl_cmds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmds_int.h"
#include "modopts.h"

/* lnetctl handlers return negative errnos; the shell sees the low byte. */
static int exit_code(int rc)
{
	return rc & 0xff;
}

/* --- shared helpers ---------------------------------------------------------- */

int ctl_need_ln(struct ctl_ctx *ctx, const char *op, const char *what, struct ctl_reply *rp)
{
	if (ctx->ln)
		return 0;
	y_nl_error(&rp->err, op, what, -ENETDOWN, "LNet stack down");
	return -ENETDOWN;
}

/* Read the node's table one entry at a time into an array grown as it
 * fills, so a node with many peers is shown whole (no fixed cap) and a
 * node with few costs little. Returns the count (*out to free) or -ENOMEM. */
#define CTL_GET_ALL(name, type, getter)                                              \
	int name(ulnet_t *ln, type **out)                                            \
	{                                                                            \
		type *v = NULL;                                                      \
		int n = 0, cap = 0;                                                  \
                                                                                     \
		for (;;) {                                                           \
			if (n == cap) {                                              \
				int ncap = cap ? cap * 2 : 8;                        \
				type *nv = realloc(v, (size_t)ncap * sizeof(*v));    \
                                                                                     \
				if (!nv) {                                           \
					free(v);                                     \
					*out = NULL;                                 \
					return -ENOMEM;                              \
				}                                                    \
				v = nv;                                              \
				cap = ncap;                                          \
			}                                                            \
			if (getter(ln, n, &v[n]) < 0)                                \
				break;                                               \
			n++;                                                         \
		}                                                                    \
		*out = v;                                                            \
		return n;                                                            \
	}

CTL_GET_ALL(ctl_get_nis, struct ulnet_ni_info, ulnet_ni_info)
/* The same for peers, each with all its NIs (ulnet_peer_info_all); free
 * with ctl_free_peers(). */
int ctl_get_peers(ulnet_t *ln, struct ulnet_peer_info **out)
{
	struct ulnet_peer_info *v = NULL;
	int n = 0, cap = 0, rc;

	for (;;) {
		if (n == cap) {
			int ncap = cap ? cap * 2 : 8;
			struct ulnet_peer_info *nv = realloc(v, (size_t)ncap * sizeof(*v));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		rc = ulnet_peer_info_all(ln, n, &v[n]);
		if (rc < 0)
			break;
		n++;
	}
	if (rc == -ENOENT) {
		*out = v;
		return n;
	}
	ctl_free_peers(v, n);
	*out = NULL;
	return rc;
}

void ctl_free_peers(struct ulnet_peer_info *pi, int n)
{
	for (int i = 0; pi && i < n; i++)
		ulnet_peer_info_release(&pi[i]);
	free(pi);
}
CTL_GET_ALL(ctl_get_routes, struct ulnet_route_info, ulnet_route_info)

/* Split "a,b c" lists into NIDs. Returns count or -EINVAL (bad item in
 * `bad`). */
int ctl_nid_parse_host(const char *s, ulnet_nid_t *nid)
{
	char host[256], buf[320];
	const char *at = strrchr(s, '@');
	struct addrinfo hints, *res = NULL;
	static const int families[] = { AF_INET, AF_INET6 };
	size_t hl;

	if (ulnet_nid_parse(s, nid, NULL) == 0)
		return 0;
	/* HOST@NET: a name only (letters, digits, '-', '.'), on an IP net */
	if (!at || at == s || (hl = (size_t)(at - s)) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != hl ||
	    strncmp(at + 1, "tcp", 3) != 0)
		return -EINVAL;
	/* a name, not a number the resolver would read as an address ("1",
	 * "0x1", "1.2": lnetctl refuses those as NIDs) */
	struct in_addr num;

	if (strpbrk(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == NULL ||
	    inet_aton(host, &num) != 0)
		return -EINVAL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	/* an IPv4 address first, as lnetctl's resolver gives */
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char ip[INET6_ADDRSTRLEN];
		const void *a;
		int rc;

		hints.ai_family = families[i];
		if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
			continue;
		a = res->ai_family == AF_INET
			    ? (const void *)&((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr
			    : (const void *)&((struct sockaddr_in6 *)(void *)res->ai_addr)->sin6_addr;
		rc = inet_ntop(res->ai_family, a, ip, sizeof(ip)) ? 0 : -EINVAL;
		freeaddrinfo(res);
		res = NULL;
		if (rc == 0 && snprintf(buf, sizeof(buf), "%s%s", ip, at) < (int)sizeof(buf) &&
		    ulnet_nid_parse(buf, nid, NULL) == 0)
			return 0;
	}
	return -EINVAL;
}

int ctl_parse_nid_list(char *const *words, int nwords, ulnet_nid_t *nids, int max, char *bad,
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
			if (ctl_nid_parse_host(t, &nids[n]) < 0) {
				snprintf(bad, badlen, "%s", t);
				return -EINVAL;
			}
			n++;
		}
	}
	return n;
}

/* --- lnet ---------------------------------------------------------------------- */

/* Show commands while LNet is down: the kernel's netlink error. */
int ctl_down_error(struct ctl_reply *rp, const char *what, const char *msg)
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
	ctl_routing_restore(ctx);
	/* ulnetd's module options: their router parameters, and with --all
	 * networks=, routes= and forwarding=, as the kernel's LNetNIInit */
	if (ctx->modopts) {
		char msg[MODOPT_ERR_MAX];

		rc = modopts_configure(ctx, p->v[0].set, msg, sizeof(msg));
		if (rc < 0) {
			y_nl_error(&rp->err, "configure", "lnet", rc, msg);
			return -EINVAL;
		}
	}
	/* --all: the networks of the "module parameters" (--config) */
	if (p->v[0].set && ctx->modparams) {
		rc = ctl_import_text(ctx, ctx->modparams_name, ctx->modparams, ctx->modparams_len,
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

/* --- ping / discover ---------------------------------------------------------------- */

int ctl_ping_like(struct ctl_ctx *ctx, bool discover, const struct parsed *p,
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

		if (ctl_parse_int(p->v[0].arg, 0, ctx->max_wait_s, &t) < 0) {
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
	int n = ctl_parse_nid_list(p->pos, p->npos, nids, MAX_PING, bad, sizeof(bad));

	if (n <= 0) {
		y_nl_error(&rp->err, "manage", what, -EINVAL,
			   "\"Unable to parse nidlist: no valid NIDs in string\"");
		rc = -EINVAL;
		goto out;
	}
	if (ctl_need_ln(ctx, "manage", what, rp)) {
		rc = -EINVAL;
		goto out;
	}
	rc = 0;
	for (int i = 0; i < n; i++) {
		res[i].target = nids[i];
		if (discover) {
			/* Discovery waits for ping + push, each ended by its
			 * response tracker: transaction_timeout bounds it, and
			 * lnetctl waits as long. The daemon's cap applies only
			 * above that bound: a wait given up before it left the
			 * discovery running, and the next discover of the peer
			 * joined it and got its failure. */
			struct ulnet_globals g;
			long long s;
			int to;

			ulnet_globals_get(ctx->ln, &g);
			s = (long long)g.transaction_timeout + 1;
			if (s < ctx->max_wait_s)
				s = ctx->max_wait_s;
			to = s > INT_MAX / 1000 ? INT_MAX : (int)s * 1000;

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
	return ctl_ping_like(ctx, false, p, rp);
}

static int cmd_discover(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	return ctl_ping_like(ctx, true, p, rp);
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
		return ctl_down_error(rp, "global", "LNet stack down");
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

const struct gset *ctl_gset_find(const char *name)
{
	for (int i = 0; i < NGSETS; i++)
		if (strcmp(gsets[i].name, name) == 0)
			return &gsets[i];
	return NULL;
}

long ctl_global_default(const struct gset *gs)
{
	struct ulnet_globals g;

	ulnet_globals_defaults(&g);
	return *(const int *)((const char *)&g + gs->off);
}

/* Set one global; on failure a cYAML error is appended to err. */
int ctl_global_set_one(struct ctl_ctx *ctx, const struct gset *gs, long value, struct ybuf *err)
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

int ctl_set_words(const struct cmd *c, int argc, char **argv, struct ctl_reply *rp)
{
	if (argc < 2) {
		ctl_print_help(&rp->out, "set", c);
		return -EINVAL;
	}
	if (argc > 2) {
		/* set NAME VALUE, nothing more */
		if (argv[2][0] == '-')
			ybuf_printf(&rp->err, "%s: unrecognized option '%.64s'\n", PROG, argv[2]);
		else
			ybuf_printf(&rp->err, "%s: unexpected argument '%.64s'\n", PROG, argv[2]);
		ctl_print_help(&rp->err, "set", c);
		return -EINVAL;
	}
	return 0;
}

static int cmd_set_value(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			 const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	const struct gset *gs = ctl_gset_find(c->name);
	long value;
	char msg[160];
	int rc = ctl_set_words(c, argc, argv, rp);

	if (rc)
		return rc;
	if (!gs)
		return -EINVAL; /* every cmd_set_value entry is a global */
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
	return ctl_global_set_one(ctx, gs, value, &rp->err);
}

/* --- debug ---------------------------------------------------------------- */

static int cmd_debug_peer(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			  const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	int rc;

	if (!p->v[0].set) {
		y_nl_error(&rp->err, "show", "peer", -EINVAL, "--nid must be specified");
		return -EINVAL;
	}
	/* Everything ulnet knows of the peer: the -v 4 view. */
	rc = ctl_peer_show_common(ctx, p->v[0].arg, 4, false, rp);
	if (rc == -EINVAL && !rp->err.len) {
		char msg[200];

		snprintf(msg, sizeof(msg), "peer %s not found", p->v[0].arg);
		y_nl_error(&rp->err, "show", "peer", -ENOENT, msg);
	}
	return rc;
}

/* One "nid-N: NID" line of a recovery queue, its heading before the first. */
static void recovery_entry(struct ctl_reply *rp, const char *heading, int *k, const ulnet_nid_t *nid)
{
	char nb[ULNET_NIDSTR_SIZE];

	if (!*k)
		cy_key(&rp->out, 0, heading);
	ybuf_printf(&rp->out, "    nid-%d: %s\n", (*k)++, ulnet_nid_str(nid, nb));
}

static int cmd_debug_recovery(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc, char **argv,
			      const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	/* --local, --peer: the last given, as lnetctl's option loop;
	 * neither: both */
	bool local = true, peer = true;

	for (int i = 0; i < p->nseq; i++) {
		local = p->seq[i].k == 0;
		peer = !local;
	}
	if (!ctx->ln)
		return ctl_down_error(rp, "recovery", "Network is down");
	/* What is in recovery (the core's recovery queues: our up NIs below
	 * full health; peer NIs below it that we heard from, not aged out by
	 * recovery_limit), numbered as the kernel's netlink reply numbers them
	 * ("nid-N"); nothing at all when the list is empty. */
	if (local) {
		struct ulnet_ni_info *ni;
		int n = ctl_get_nis(ctx->ln, &ni), k = 0;

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			if (ni[i].health.in_recovery)
				recovery_entry(rp, "Local NI recovery", &k, &ni[i].nid);
		free(ni);
	}
	if (peer) {
		struct ulnet_peer_info *pi;
		int n = ctl_get_peers(ctx->ln, &pi), k = 0;

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			for (int j = 0; j < pi[i].nnis; j++) {
				const struct ulnet_peer_ni_info *pn = ulnet_peer_info_ni(&pi[i], j);

				if (pn->health.in_recovery)
					recovery_entry(rp, "Peer NI recovery", &k, &pn->nid);
			}
		ctl_free_peers(pi, n);
	}
	return 0;
}

/* --- command tables -------------------------------------------------------------------- */

/* The options of each command (the handlers index p->v[] in this order). */
static const struct optspec lnet_configure_opts[] = { { "all", 'a', ARG_NONE }, { "large", 'l', ARG_NONE } };
static const struct optspec ping_opts[] = { { "timeout", 't', ARG_REQ }, { "source", 's', ARG_REQ } };
static const struct optspec discover_opts[] = { { "force", 'f', ARG_NONE } };
static const struct optspec debug_peer_opts[] = { { "nid", 'k', ARG_REQ } };
static const struct optspec debug_recovery_opts[] = { { "local", 'l', ARG_NONE }, { "peer", 'p', ARG_NONE } };
static const struct optspec export_opts[] = { { "backup", 'b', ARG_NONE } };
/* lnetctl's global show takes -v and prints the same (it has no verbose
 * form; scripts such as sanity-lnet 241 pass it): so does ours */
static const struct optspec global_show_opts[] = { { "verbose", 'v', ARG_NONE } };
static const struct optspec import_opts[] = {
	{ "add", 'a', ARG_NONE }, { "del", 'd', ARG_NONE }, { "show", 's', ARG_NONE },
	{ "exec", 'e', ARG_NONE },
};

static const struct cmd lnet_cmds[] = {
	{ "configure", cmd_lnet_configure, NULL, "configure lnet\n"
	  "\t--all: also bring up the networks of ulnetd's module options (networks=,\n"
	  "\t  routes=, forwarding=) and of its --config file\n"
	  "\t--large: start LNet with large NIDs (always on in ulnet)\n", LK_WRITE,
	  OPTS(lnet_configure_opts), 0, false },
	{ "unconfigure", cmd_lnet_unconfigure, NULL, "unconfigure lnet\n", LK_WRITE, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd stats_cmds[] = {
	{ "show", cmd_stats_show, NULL, "show LNet statistics\n", LK_READ, NOOPTS, 0, false },
	{ "reset", cmd_stats_reset, NULL, "reset LNet statistics\n", LK_WRITE, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd global_cmds[] = {
	{ "show", cmd_global_show, NULL,
	  "show global variables\n\t--verbose: the same (as lnetctl's, which has no verbose form)\n",
	  LK_READ, OPTS(global_show_opts), 0, false },
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
#define BUFHELP(def) "\tVALUE: buffers in the pool; 0 - the default (" def "); -1 - no change\n" \
	"\tgrowing takes effect at once, shrinking as buffers come back; set while\n" \
	"\trouting is disabled, the size is kept for when routing is enabled\n"
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
	SETCMD("tiny_buffers", ctl_cmd_set_buffers, "set tiny routing buffers\n" BUFHELP("2048")),
	SETCMD("small_buffers", ctl_cmd_set_buffers, "set small routing buffers\n" BUFHELP("16384")),
	SETCMD("large_buffers", ctl_cmd_set_buffers, "set large routing buffers\n" BUFHELP("1024")),
	SETCMD("routing", ctl_cmd_set_routing, "enable/disable routing\n"
	       "\t0 - disable routing (forwarding stops 110 s to 330 s later)\n"
	       "\t1 - enable routing (forwarding is advertised 110 s later)\n"),
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

#define GROUP(n, sub, h) { n, NULL, sub, h, LK_READ, NOOPTS, 0, false }
static const struct cmd top_cmds[] = {
	GROUP("lnet", lnet_cmds, "lnet {configure | unconfigure} [--all|--large]\n"),
	GROUP("route", ctl_route_cmds, "route {add | del | show | help}\n"),
	GROUP("net", ctl_net_cmds, "net {add | del | show | set | help}\n"),
	GROUP("routing", ctl_routing_cmds, "routing {show | help}\n"),
	GROUP("set", set_cmds, "set {numa_range | max_interfaces | discovery | drop_asym_route"
	      " | retry_count | transaction_timeout | health_sensitivity | recovery_interval"
	      " | router_sensitivity | response_tracking | recovery_limit"
	      " | max_recovery_ping_interval | tiny_buffers | small_buffers | large_buffers"
	      " | routing} VALUE\n"),
	/* import parses the file before it takes the lock (ctl_cmd_import) */
	{ "import", ctl_cmd_import, NULL, "import [--add | --del | --show | --exec] FILE.yaml (or stdin)\n",
	  LK_SELF, OPTS(import_opts), 1, false },
	{ "export", ctl_cmd_export, NULL, "export [--backup] [FILE.yaml]\n", LK_READ, OPTS(export_opts), 0, false },
	GROUP("stats", stats_cmds, "stats {show | reset | help}\n"),
	GROUP("debug", debug_cmds, "debug {recovery {--local | --peer} | peer --nid NID}\n"),
	GROUP("global", global_cmds, "global {show | help}\n"),
	GROUP("peer", ctl_peer_cmds, "peer {add | del | show | list | set | help}\n"),
	/* ulnet's: the kernel's `lctl conn_list` */
	GROUP("conn", ctl_conn_cmds, "conn {show | help}\n"),
	{ "ping", cmd_ping, NULL, "ping nid[,nid,...]\n"
	  "\t--source: source nid\n\t--timeout: ping timeout in seconds (default 1)\n", LK_READ,
	  OPTS(ping_opts), -1, false },
	{ "discover", cmd_discover, NULL, "discover nid[,nid,...]\n\t--force: force discovery\n", LK_READ,
	  OPTS(discover_opts), -1, false },
	GROUP("udsp", ctl_udsp_cmds, "udsp {add | del | show | help}\n"),
	/* raw: "fault" alone prints its commands' help, exit 234 (lnetctl) */
	{ "fault", NULL, ctl_fault_cmds, "fault {drop | delay | help}\n", LK_READ, NOOPTS, 0, true },
	{ "setup-mrrouting", ctl_cmd_setup_mrrouting, NULL, "setup linux routing tables\n", LK_WRITE,
	  NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

const struct cmd *ctl_cmd_root(void)
{
	return top_cmds;
}

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
		ctl_print_help(out, NULL, t);
}

static bool is_help_word(const char *w)
{
	return strcmp(w, "help") == 0 || strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0;
}

bool ctl_is_help(int argc, char **argv)
{
	if (argc <= 0)
		return true;
	if (is_help_word(argv[0]) || strcmp(argv[0], "--list-commands") == 0)
		return true;
	const struct cmd *c = find_cmd(top_cmds, argv[0]);

	if (!c)
		return false;
	/* down the groups ("fault drop add"): a group alone or asked for
	 * help is answered without a daemon */
	while (c->sub) {
		if (argc < 2 || is_help_word(argv[1]))
			return true;
		c = find_cmd(c->sub, argv[1]);
		if (!c)
			return false;
		argc--;
		argv++;
	}
	return ctl_want_help(argc, argv);
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
	char path[64];   /* the words so far, for errors ("fault drop") */

	snprintf(path, sizeof(path), "%s", c->name);
	while (c->sub) {
		if (argc < 2 && c->raw) {
			/* lnetctl's check_cmd(): each command's help, exit 234 */
			for (const struct cmd *s = c->sub; s->name; s++)
				ctl_print_usage(&rp->out, c->name, s);
			return -EINVAL;
		}
		if (argc < 2 || is_help_word(argv[1])) {
			ybuf_printf(&rp->out, "%s", c->help);
			list_cmds(&rp->out, c->sub);
			return 0;
		}
		const struct cmd *s = find_cmd(c->sub, argv[1]);

		if (!s) {
			/* lnetctl's cfs_parser() points to --list-commands */
			if (c->raw)
				ybuf_printf(&rp->err, "%s: '%s' is not a valid command. See '%s --list-commands'.\n",
					    PROG, argv[1], PROG);
			else
				ybuf_printf(&rp->err, "%s: '%s' is not a valid command. See '%s %s --help'.\n",
					    PROG, argv[1], PROG, path);
			return -1;
		}
		parent = c->name;
		c = s;
		argc--;
		argv++;
		if (c->sub) {
			size_t len = strlen(path);

			snprintf(path + len, sizeof(path) - len, " %s", c->name);
		}
	}
	if (ctl_want_help(argc, argv)) {
		ctl_print_help(&rp->out, parent, c);
		return 0;
	}
	/* Every command's options are checked here, the same way, before
	 * anything runs: nothing unknown is ever ignored. */
	struct parsed p;
	int rc = 0;

	memset(&p, 0, sizeof(p));
	if (!c->raw) {
		rc = ctl_parse_opts(argc, argv, c->opts, c->nopts, &p, &rp->err);
		if (rc == 0 && c->maxpos >= 0 && p.npos > c->maxpos) {
			ybuf_printf(&rp->err, "%s: unexpected argument '%.64s'\n", PROG, p.pos[c->maxpos]);
			rc = -EINVAL;
		}
		if (rc) {
			ctl_print_help(&rp->err, parent, c);
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
	ctx->lnd_tun.tos = -1;
	ctx->lnd_o2ib_tun.tos = -1;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		ctx->rtr_nbuffers[i] = -1;
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

void ctl_log(struct ctl_ctx *ctx, enum ulnet_log_level lvl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (ctx->opts.log && lvl > ctx->opts.log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->opts.log)
		ctx->opts.log(ctx->opts.log_arg, lvl, msg);
	else if (lvl <= ULNET_LOG_WARN)
		fprintf(stderr, "ulnetd: %s\n", msg);
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
