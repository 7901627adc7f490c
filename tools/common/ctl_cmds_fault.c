/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_fault.c - "fault drop|delay add|del|show|reset" over
 * ulnet/fault.h, with lnetctl 2.17's checks, texts and exit codes: what
 * lnetctl checks itself (its options in command-line order, then the rate
 * and interval, the latency, the source and destination), then the NIDs
 * as its library parses them, then the kernel's answer, which lnetctl
 * prints on stdout as "failed to <op>: <libnl's text for the errno>".
 * "show" prints the kernel's YAML (libyaml, indent 6, no "---"), newest
 * rule first, nothing when there is no rule.
 *
 * Deliberate differences (docs/fault.md): show exits 0 after its YAML
 * (lnetctl 2.17 aborts there with a double free, exit 134); an option
 * lnetctl takes and ignores (--rule_type; --latency on a drop rule;
 * --health_error, --random, --drop_all on a delay rule) is refused with
 * errno -95; a number that is not one is refused (lnetctl reads what
 * strtoul makes of it); "del --all" with --source or --dest is refused
 * whatever their order; "reset" takes the word "all" only. --seed N is
 * ulnet's own (the rule's `seed`).
 */
#include "ctl_cmds_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ulnet/fault.h"

/* The options of "add", in the order of p->v[] (the same table for both
 * kinds, the short letters differ as lnetctl's optstrings do). */
enum {
	FA_DEST,
	FA_HEALTH,
	FA_INTERVAL,
	FA_LATENCY,
	FA_MESSAGE,
	FA_RANDOM,
	FA_LOCAL,
	FA_PORTAL,
	FA_RATE,
	FA_SOURCE,
	FA_RULE_TYPE,
	FA_DROP_ALL,
	FA_SEED,
	FA_COUNT
};

/* lnetctl's drop optstring "d:e:i:m:no:p:r:s:t:x": no -l. */
static const struct optspec drop_add_opts[FA_COUNT] = {
	[FA_DEST] = { "dest", 'd', ARG_REQ },
	[FA_HEALTH] = { "health_error", 'e', ARG_REQ },
	[FA_INTERVAL] = { "interval", 'i', ARG_REQ },
	[FA_LATENCY] = { "latency", 0, ARG_REQ },
	[FA_MESSAGE] = { "message", 'm', ARG_REQ },
	[FA_RANDOM] = { "random", 'n', ARG_NONE },
	[FA_LOCAL] = { "local_nid", 'o', ARG_REQ },
	[FA_PORTAL] = { "portal", 'p', ARG_REQ },
	[FA_RATE] = { "rate", 'r', ARG_REQ },
	[FA_SOURCE] = { "source", 's', ARG_REQ },
	[FA_RULE_TYPE] = { "rule_type", 't', ARG_REQ },
	[FA_DROP_ALL] = { "drop_all", 'x', ARG_NONE },
	[FA_SEED] = { "seed", 0, ARG_REQ },
};

/* lnetctl's delay optstring "d:l:m:o:p:r:s:": the others long only. */
static const struct optspec delay_add_opts[FA_COUNT] = {
	[FA_DEST] = { "dest", 'd', ARG_REQ },
	[FA_HEALTH] = { "health_error", 0, ARG_REQ },
	[FA_INTERVAL] = { "interval", 0, ARG_REQ },
	[FA_LATENCY] = { "latency", 'l', ARG_REQ },
	[FA_MESSAGE] = { "message", 'm', ARG_REQ },
	[FA_RANDOM] = { "random", 0, ARG_NONE },
	[FA_LOCAL] = { "local_nid", 'o', ARG_REQ },
	[FA_PORTAL] = { "portal", 'p', ARG_REQ },
	[FA_RATE] = { "rate", 'r', ARG_REQ },
	[FA_SOURCE] = { "source", 's', ARG_REQ },
	[FA_RULE_TYPE] = { "rule_type", 0, ARG_REQ },
	[FA_DROP_ALL] = { "drop_all", 0, ARG_NONE },
	[FA_SEED] = { "seed", 0, ARG_REQ },
};

enum { FD_ALL, FD_DEST, FD_SOURCE, FD_COUNT };

static const struct optspec del_opts[FD_COUNT] = {
	[FD_ALL] = { "all", 'a', ARG_NONE },
	[FD_DEST] = { "dest", 'd', ARG_REQ },
	[FD_SOURCE] = { "source", 's', ARG_REQ },
};

static enum ulnet_fault_kind cmd_kind(const struct cmd *c);

static const char *kind_name(enum ulnet_fault_kind kind)
{
	return kind == ULNET_FAULT_DROP ? "drop" : "delay";
}

/* --- lnetctl's texts ---------------------------------------------------------------- */

/* liblnetconfig's fault_opc_to_str(), wording and all. */
static const char *op_str(enum ulnet_fault_kind kind, char op)
{
	bool drop = kind == ULNET_FAULT_DROP;

	switch (op) {
	case 'a':
		return drop ? "add drop rule" : "add delay rule";
	case 'd':
		return drop ? "delete drop rule" : "delete delay rule";
	case 'l':
		return drop ? "list drop rule" : "list delay rules";
	default:
		return drop ? "drop_reset rule" : "delay reset_rule";
	}
}

/* What lnetctl prints for a netlink errno: libnl's nl_geterror() of
 * nl_syserr2nlerr() for the errnos the fault commands can meet. */
static const char *nl_errstr(int rc, char *buf, size_t len)
{
	switch (-rc) {
	case EINVAL:
		return "Invalid input data or parameter";
	case ENOENT:
		return "Object not found";
	case ENOMEM:
		return "Out of memory";
	default:
		return ctl_strerror(rc, buf, len);
	}
}

/* "failed to add drop rule: ..." on stdout (lnetctl's), and the errno. */
static int op_failed(struct ctl_reply *rp, enum ulnet_fault_kind kind, char op, int rc)
{
	char eb[96];

	ybuf_printf(&rp->out, "failed to %s: %s\n", op_str(kind, op), nl_errstr(rc, eb, sizeof(eb)));
	return rc;
}

/* While LNet is down there is no instance to hold rules. */
static int need_ln(struct ctl_ctx *ctx, struct ctl_reply *rp, enum ulnet_fault_kind kind, char op)
{
	return ctx->ln ? 0 : op_failed(rp, kind, op, -ENETDOWN);
}

/* lnetctl's check_cmd() with min 2: the command alone prints its help on
 * stdout, exit 234. */
static int usage(struct ctl_reply *rp, const struct cmd *c)
{
	ctl_print_usage(&rp->out, kind_name(cmd_kind(c)), c);
	return -EINVAL;
}

/* --- parsing ------------------------------------------------------------------------- */

/*
 * A NID as liblnetconfig's fault_attr_parse_nid() takes it: none is ANY,
 * "*" is ANY, "*@NET" is the all-ones address on NET (any node there),
 * else a NID, "@tcp" when it names no net. ANY written out ("<?>") is not
 * a NID there. Returns 0 or -EINVAL.
 */
static int fault_nid(const char *s, ulnet_nid_t *nid)
{
	char buf[CTL_MAX_ARG + 8];

	if (!s) {
		*nid = ULNET_NID_ANY;
		return 0;
	}
	if (strcmp(s, "*") == 0) {
		*nid = ULNET_NID_ANY;
		return 0;
	}
	if (strlen(s) > 2 && s[0] == '*' && s[1] == '@') {
		ulnet_net_t net;

		if (ulnet_net_parse(s + 2, &net, NULL) < 0)
			return -EINVAL;
		ulnet_nid_from_ipv4(UINT32_MAX, net, nid);   /* 255.255.255.255@net */
		return 0;
	}
	if (!strchr(s, '@')) {
		snprintf(buf, sizeof(buf), "%s@tcp", s);
		s = buf;
	}
	if (ulnet_nid_parse(s, nid, NULL) < 0 || ulnet_nid_is_any(nid))
		return -EINVAL;
	return 0;
}

/* A whole unsigned number (strtoul base 0) no larger than `max`. */
static int parse_unsigned(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;

	if (!s || !*s || strchr(s, '-'))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || *end || *v > max)
		return -EINVAL;
	return 0;
}

/* lnetctl's fault_attr_health_error_parse(): names add up, "random" is
 * every one. */
static int health_parse(const char *s, uint32_t *mask)
{
	static const char *const names[] = {
		[ULNET_HSTATUS_LOCAL_INTERRUPT] = "local_interrupt",
		[ULNET_HSTATUS_LOCAL_DROPPED] = "local_dropped",
		[ULNET_HSTATUS_LOCAL_ABORTED] = "local_aborted",
		[ULNET_HSTATUS_LOCAL_NO_ROUTE] = "local_no_route",
		[ULNET_HSTATUS_LOCAL_ERROR] = "local_error",
		[ULNET_HSTATUS_LOCAL_TIMEOUT] = "local_timeout",
		[ULNET_HSTATUS_REMOTE_ERROR] = "remote_error",
		[ULNET_HSTATUS_REMOTE_DROPPED] = "remote_dropped",
		[ULNET_HSTATUS_REMOTE_TIMEOUT] = "remote_timeout",
		[ULNET_HSTATUS_NETWORK_TIMEOUT] = "network_timeout",
	};

	for (int i = ULNET_HSTATUS_LOCAL_INTERRUPT; i < ULNET_HSTATUS_END; i++) {
		if (strcasecmp(s, names[i]) == 0) {
			*mask |= ULNET_HSTATUS_BIT(i);
			return 0;
		}
	}
	if (strcasecmp(s, "random") == 0) {
		*mask = ULNET_HSTATUS_RANDOM;
		return 0;
	}
	return -EINVAL;
}

/* lnetctl's fault_attr_msg_parse(). */
static int msg_parse(const char *s, uint32_t *mask)
{
	static const struct {
		const char *name;
		int type;
	} types[] = {
		{ "put", ULNET_MSG_PUT }, { "ack", ULNET_MSG_ACK },
		{ "get", ULNET_MSG_GET }, { "reply", ULNET_MSG_REPLY },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcasecmp(s, types[i].name) == 0) {
			*mask |= ULNET_FAULT_MSG_BIT(types[i].type);
			return 0;
		}
	}
	return -EINVAL;
}

/* lnetctl's fault_attr_ptl_parse(): a portal below 64 ("invalid portal:
 * N" with strtoul's N, so "-1" shows as 2^64 - 1). A word that is not a
 * number is refused here (lnetctl takes what strtoul makes of it). */
static int ptl_parse(const char *s, uint64_t *mask, struct ctl_reply *rp)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (!*s || *end) {
		ybuf_printf(&rp->err, "invalid portal: %s\n", s);
		return -1;
	}
	if (errno || v >= 64) {
		ybuf_printf(&rp->err, "invalid portal: %lu\n", v);
		return -1;
	}
	*mask |= 1ULL << v;
	return 0;
}

/* A 32-bit count (--rate, --interval, --latency). */
static int u32_opt(const char *name, const char *s, uint32_t *v, struct ctl_reply *rp)
{
	unsigned long long x;

	if (parse_unsigned(s, UINT32_MAX, &x) < 0) {
		ybuf_printf(&rp->err, "invalid %s: %s\n", name, s);
		return -1;
	}
	*v = (uint32_t)x;
	return 0;
}

/* --- add ------------------------------------------------------------------------------ */

/* Options lnetctl takes and drops: refused, never ignored. */
static int refuse_ignored(const struct parsed *p, enum ulnet_fault_kind kind,
			  struct ctl_reply *rp)
{
	static const int delay_only[] = { FA_LATENCY };
	static const int drop_only[] = { FA_HEALTH, FA_RANDOM, FA_DROP_ALL };
	const struct optspec *specs = kind == ULNET_FAULT_DROP ? drop_add_opts : delay_add_opts;
	char msg[160];

	if (p->v[FA_RULE_TYPE].set) {
		/* lnetctl reads it and does nothing with it */
		y_nl_error(&rp->err, "add", "fault", -EOPNOTSUPP,
			   "--rule_type is not supported by ulnet");
		return -EINVAL;
	}
	const int *only = kind == ULNET_FAULT_DROP ? delay_only : drop_only;
	int n = kind == ULNET_FAULT_DROP ? 1 : 3;

	for (int i = 0; i < n; i++) {
		if (!p->v[only[i]].set)
			continue;
		snprintf(msg, sizeof(msg), "--%s is not supported by ulnet for %s rules",
			 specs[only[i]].name, kind_name(kind));
		y_nl_error(&rp->err, "add", "fault", -EOPNOTSUPP, msg);
		return -EINVAL;
	}
	return 0;
}

static int cmd_fault_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			 int argc, char **argv, const char *blob, size_t bloblen,
			 struct ctl_reply *rp)
{
	enum ulnet_fault_kind kind = cmd_kind(c);
	bool drop = kind == ULNET_FAULT_DROP;
	const char *src = NULL, *dst = NULL, *local = NULL;
	struct ulnet_fault_rule r;
	int rc;

	if (argc < 2)
		return usage(rp, c);
	rc = refuse_ignored(p, kind, rp);
	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	/* in command-line order, as getopt hands them to lnetctl: the first
	 * bad value is the one reported; repeated ones add up (--message,
	 * --portal, --health_error) or the last wins */
	for (int i = 0; i < p->nseq; i++) {
		const char *arg = p->seq[i].arg;
		unsigned long long seed;

		switch (p->seq[i].k) {
		case FA_DEST:
			dst = arg;
			break;
		case FA_SOURCE:
			src = arg;
			break;
		case FA_LOCAL:
			local = arg;
			break;
		case FA_HEALTH:
			/* lnetctl says nothing here */
			if (health_parse(arg, &r.health_error_mask) < 0)
				return -1;
			break;
		case FA_INTERVAL:
			if (u32_opt("interval", arg, &r.interval, rp) < 0)
				return -1;
			break;
		case FA_RATE:
			if (u32_opt("rate", arg, &r.rate, rp) < 0)
				return -1;
			break;
		case FA_LATENCY:
			if (u32_opt("latency", arg, &r.latency, rp) < 0)
				return -1;
			break;
		case FA_MESSAGE:
			if (msg_parse(arg, &r.msg_mask) < 0) {
				ybuf_printf(&rp->err, "unknown message type %s\n", arg);
				return -1;
			}
			break;
		case FA_PORTAL:
			if (ptl_parse(arg, &r.portal_mask, rp) < 0)
				return -1;
			break;
		case FA_RANDOM:
			r.random = true;
			break;
		case FA_DROP_ALL:
			r.drop_all = true;
			break;
		case FA_SEED:
			if (parse_unsigned(arg, UINT64_MAX, &seed) < 0) {
				ybuf_printf(&rp->err, "invalid seed: %s\n", arg);
				return -1;
			}
			r.seed = seed;
			break;
		}
	}
	/* jt_fault_add()'s checks, in its order */
	if (!((r.rate == 0) ^ (r.interval == 0))) {
		ybuf_printf(&rp->err, "please provide either %s rate or interval but not both at the "
			    "same time.\n", kind_name(kind));
		return -1;
	}
	if (drop && r.random && r.interval == 0) {
		ybuf_printf(&rp->err, "please provide an interval to randomize\n");
		return -1;
	}
	if (!drop && r.latency == 0) {
		ybuf_printf(&rp->err, "latency cannot be zero\n");
		return -1;
	}
	if (!src || !dst) {
		ybuf_printf(&rp->err, "Please provide both source and destination of %s rule\n",
			    kind_name(kind));
		return -1;
	}
	const char *names[3] = { src, dst, local };
	ulnet_nid_t *nids[3] = { &r.src, &r.dst, &r.local };

	for (int i = 0; i < 3; i++) {
		if (fault_nid(names[i], nids[i]) < 0) {
			ybuf_printf(&rp->err, "Invalid NID: %s\n", names[i]);
			return -EINVAL;
		}
	}
	rc = need_ln(ctx, rp, kind, 'a');
	if (rc)
		return rc;
	rc = ulnet_fault_add(ctx->ln, kind, &r);
	return rc < 0 ? op_failed(rp, kind, 'a', rc) : 0;
}

/* --- del / reset ------------------------------------------------------------------------ */

static int cmd_fault_del(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			 int argc, char **argv, const char *blob, size_t bloblen,
			 struct ctl_reply *rp)
{
	enum ulnet_fault_kind kind = cmd_kind(c);
	const char *src = p->v[FD_SOURCE].arg, *dst = p->v[FD_DEST].arg;
	ulnet_nid_t s, d;
	int rc;

	if (argc < 2)
		return usage(rp, c);
	bool all = p->v[FD_ALL].set;

	if (!all && !(src && dst)) {
		ybuf_printf(&rp->err, "Failed, please provide source and destination of rule\n");
		return -1;
	}
	/* lnetctl lets "--dest X --all" through (its --all clears the
	 * destination seen so far) and deletes every rule: refused here
	 * whatever the order */
	if (all && (src || dst)) {
		ybuf_printf(&rp->err, "'-s' or '-d' cannot be combined with '-a'\n");
		return -1;
	}
	if (fault_nid(src, &s) < 0) {
		ybuf_printf(&rp->err, "Invalid NID: %s\n", src);
		return -EINVAL;
	}
	if (fault_nid(dst, &d) < 0) {
		ybuf_printf(&rp->err, "Invalid NID: %s\n", dst);
		return -EINVAL;
	}
	rc = need_ln(ctx, rp, kind, 'd');
	if (rc)
		return rc;
	/* the kernel answers -ENOENT when nothing matched */
	rc = ulnet_fault_del(ctx->ln, kind, &s, &d);
	if (rc == 0)
		rc = -ENOENT;
	return rc < 0 ? op_failed(rp, kind, 'd', rc) : 0;
}

static int cmd_fault_reset(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			   int argc, char **argv, const char *blob, size_t bloblen,
			   struct ctl_reply *rp)
{
	enum ulnet_fault_kind kind = cmd_kind(c);
	int rc;

	if (argc < 2)
		return usage(rp, c);
	/* lnetctl wants one more word and runs with any; ulnet takes "all" */
	if (p->npos != 1 || strcmp(p->pos[0], "all") != 0) {
		ybuf_printf(&rp->err, "%s: unexpected argument '%.64s'\n", PROG,
			    p->npos ? p->pos[0] : argv[1]);
		ctl_print_help(&rp->err, kind_name(kind), c);
		return -EINVAL;
	}
	rc = need_ln(ctx, rp, kind, 'r');
	if (rc)
		return rc;
	ulnet_fault_reset(ctx->ln, kind);
	return 0;
}

/* --- show ------------------------------------------------------------------------------- */

static void render_rule(struct yout *y, enum ulnet_fault_kind kind,
			const struct ulnet_fault_rule *r, const struct ulnet_fault_stats *st)
{
	char nb[ULNET_NIDSTR_SIZE];

	yo_map(y);
	yo_kv_str(y, "rule_type", kind_name(kind));
	yo_kv_str(y, "fa_src", ulnet_nid_str(&r->src, nb));
	yo_kv_str(y, "fa_dst", ulnet_nid_str(&r->dst, nb));
	yo_kv_uint(y, "fa_ptl_mask", r->portal_mask);
	yo_kv_uint(y, "fa_msg_mask", r->msg_mask);
	if (kind == ULNET_FAULT_DROP) {
		yo_kv_uint(y, "da_rate", r->rate);
		yo_kv_uint(y, "da_interval", r->interval);
		yo_kv_uint(y, "ds_dropped", st->dropped);
	} else {
		yo_kv_uint(y, "la_rate", r->rate);
		yo_kv_uint(y, "la_interval", r->interval);
		yo_kv_uint(y, "la_latency", r->latency);
		yo_kv_uint(y, "ls_delayed", st->delayed);
	}
	yo_kv_uint(y, "fs_count", st->count);
	yo_kv_uint(y, "fs_put", st->put);
	yo_kv_uint(y, "fs_ack", st->ack);
	yo_kv_uint(y, "fs_get", st->get);
	yo_kv_uint(y, "fs_reply", st->reply);
	yo_end_map(y);
}

static int cmd_fault_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			  int argc, char **argv, const char *blob, size_t bloblen,
			  struct ctl_reply *rp)
{
	enum ulnet_fault_kind kind = cmd_kind(c);
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	struct yout y;
	int rc = need_ln(ctx, rp, kind, 'l');

	if (rc)
		return rc;
	/* no rule: nothing at all (the kernel's -ENOENT, which lnetctl
	 * takes as an empty list) */
	if (ulnet_fault_list(ctx->ln, kind, 0, &r, &st) < 0)
		return 0;
	yo_begin(&y, &rp->out, 6, false);
	yo_map(&y);
	yo_str(&y, "fault");
	yo_seq(&y);
	/* newest first, as the core keeps them */
	for (int i = 0; ulnet_fault_list(ctx->ln, kind, i, &r, &st) == 0; i++)
		render_rule(&y, kind, &r, &st);
	yo_end_seq(&y);
	yo_end_map(&y);
	return yo_end(&y);
}

/* --- link (ulnet's own) ------------------------------------------------------------------- */

enum { FL_NID, FL_DURATION, FL_COUNT };

static const struct optspec link_opts[FL_COUNT] = {
	[FL_NID] = { "nid", 'n', ARG_REQ },
	[FL_DURATION] = { "duration", 't', ARG_REQ },
};

/* "fault link down|up --nid NID [--duration S]": errors as YAML naming
 * the option (or the NID) at fault. */
static int cmd_fault_link(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			  int argc, char **argv, const char *blob, size_t bloblen,
			  struct ctl_reply *rp)
{
	bool down = strcmp(c->name, "down") == 0;
	const char *op = down ? "link down" : "link up";
	unsigned long long dur = 0;
	char msg[CTL_MAX_ARG + 96], eb[96];
	ulnet_nid_t nid;
	int rc;

	if (!p->v[FL_NID].set) {
		y_nl_error(&rp->err, op, "fault", -EINVAL, "--nid is required");
		return -EINVAL;
	}
	if (p->v[FL_DURATION].set) {
		if (!down) {
			/* taken and dropped would hide a mistake */
			y_nl_error(&rp->err, op, "fault", -EOPNOTSUPP,
				   "--duration is not supported by link up");
			return -EOPNOTSUPP;
		}
		if (parse_unsigned(p->v[FL_DURATION].arg, UINT32_MAX, &dur) < 0 || dur == 0) {
			snprintf(msg, sizeof(msg), "invalid --duration: %.*s (seconds, 1 to %u)",
				 CTL_MAX_ARG, p->v[FL_DURATION].arg, UINT32_MAX);
			y_nl_error(&rp->err, op, "fault", -EINVAL, msg);
			return -EINVAL;
		}
	}
	if (ulnet_nid_parse(p->v[FL_NID].arg, &nid, NULL) < 0 || ulnet_nid_is_any(&nid)) {
		snprintf(msg, sizeof(msg), "invalid --nid: %.*s", CTL_MAX_ARG, p->v[FL_NID].arg);
		y_nl_error(&rp->err, op, "fault", -EINVAL, msg);
		return -EINVAL;
	}
	if (!ctx->ln) {
		y_nl_error(&rp->err, op, "fault", -ENETDOWN, "LNet is not configured");
		return -ENETDOWN;
	}
	rc = ulnet_fault_link_set(ctx->ln, &nid, down, (uint32_t)dur);
	if (rc == 0)
		return 0;
	switch (rc) {
	case -ENOENT:
		snprintf(msg, sizeof(msg), "--nid %.*s: no such local NI", CTL_MAX_ARG,
			 p->v[FL_NID].arg);
		break;
	case -EINVAL:
		snprintf(msg, sizeof(msg), "--nid %.*s: not a link (0@lo)", CTL_MAX_ARG,
			 p->v[FL_NID].arg);
		break;
	case -EOPNOTSUPP:
		snprintf(msg, sizeof(msg), "--nid %.*s: its LND can't take its link down",
			 CTL_MAX_ARG, p->v[FL_NID].arg);
		break;
	default:
		snprintf(msg, sizeof(msg), "--nid %.*s: %s", CTL_MAX_ARG, p->v[FL_NID].arg,
			 ctl_strerror(rc, eb, sizeof(eb)));
		break;
	}
	y_nl_error(&rp->err, op, "fault", rc, msg);
	return rc;
}

/* "fault link show": the NIs whose link is down, why, and the time a
 * --duration has left. Nothing when every link is up. */
static int cmd_fault_link_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			       int argc, char **argv, const char *blob, size_t bloblen,
			       struct ctl_reply *rp)
{
	struct ulnet_fault_link l;
	char nb[ULNET_NIDSTR_SIZE];
	struct yout y;

	if (!ctx->ln) {
		y_nl_error(&rp->err, "link show", "fault", -ENETDOWN, "LNet is not configured");
		return -ENETDOWN;
	}
	if (ulnet_fault_link_list(ctx->ln, 0, &l) < 0)
		return 0;
	yo_begin(&y, &rp->out, 6, false);
	yo_map(&y);
	yo_str(&y, "link");
	yo_seq(&y);
	for (int i = 0; ulnet_fault_link_list(ctx->ln, i, &l) == 0; i++) {
		yo_map(&y);
		yo_kv_str(&y, "nid", ulnet_nid_str(&l.nid, nb));
		yo_kv_str(&y, "fault", l.fault ? "down" : "none");
		yo_kv_str(&y, "interface", l.carrier_down ? "down" : "up");
		if (l.left_ms) {
			char left[32];

			snprintf(left, sizeof(left), "%llu.%03llu", (unsigned long long)(l.left_ms / 1000),
				 (unsigned long long)(l.left_ms % 1000));
			yo_str(&y, "seconds_left");
			yo_str(&y, left);
		}
		yo_end_map(&y);
	}
	yo_end_seq(&y);
	yo_end_map(&y);
	return yo_end(&y);
}

/* --- tables ------------------------------------------------------------------------------- */

#define SEED_HELP \
	"\t--seed n:      Seed the rule's random choices, to replay a run (ulnet extension).\n"

static const struct cmd drop_cmds[] = {
	{ "add", cmd_fault_add, NULL, "add LNet drop rule\n"
	  "\t--source nid:  Drop messages originating from <nid>.\n"
	  "\t--dest nid:    Drop messages destined for <nid>.\n"
	  "\t--rate r:      Drop messages at specified rate (1/<r>).\n"
	  "\t--interval i:  Drop messages at specified time interval (seconds).\n"
	  "\t--portal p:    Drop messages on specified portal.\n"
	  "\t--message m:   Drop messages of specified type <PUT|ACK|GET|REPLY>.\n"
	  "\t--health_error: Dropped messages simulate the specified health status\n"
	  "\t                <local_timeout|remote_dropped|network_timeout|...>.\n"
	  SEED_HELP, LK_WRITE, OPTS(drop_add_opts), 0, false },
	{ "del", cmd_fault_del, NULL, "delete LNet drop rules\n"
	  "\t--all:         Delete all drop rules\n"
	  "\t--source nid:  Delete drop rule with specified source NID\n"
	  "\t--dest nid:    Delete drop rule with specified destination NID\n", LK_WRITE,
	  OPTS(del_opts), 0, false },
	{ "reset", cmd_fault_reset, NULL, "reset counters for all drop rules\n", LK_WRITE, NOOPTS,
	  1, false },
	{ "show", cmd_fault_show, NULL, "show drop rules\n", LK_READ, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd delay_cmds[] = {
	{ "add", cmd_fault_add, NULL, "add LNet delay rule\n"
	  "\t--source nid:  Delay messages originating from <nid>.\n"
	  "\t--dest nid:    Delay messages destined for <nid>.\n"
	  "\t--rate r:      Delay messages at specified rate (1/<r>).\n"
	  "\t--interval i:  Delay messages at specified time interval (seconds).\n"
	  "\t--portal p:    Delay messages on specified portal.\n"
	  "\t--message m:   Delay messages of specified type <PUT|ACK|GET|REPLY>.\n"
	  "\t--latency:     Delay sending a message (delay only).\n"
	  SEED_HELP, LK_WRITE, OPTS(delay_add_opts), 0, false },
	{ "del", cmd_fault_del, NULL, "delete LNet delay rules\n"
	  "\t--all:         Delete all delay rules\n"
	  "\t--source nid:  Delete delay rule with specified source NID\n"
	  "\t--dest nid:    Delete delay rule with specified destination NID\n", LK_WRITE,
	  OPTS(del_opts), 0, false },
	{ "reset", cmd_fault_reset, NULL, "reset counters for all delay rules\n", LK_WRITE, NOOPTS,
	  1, false },
	{ "show", cmd_fault_show, NULL, "show delay rules\n", LK_READ, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

static const struct cmd link_cmds[] = {
	{ "down", cmd_fault_link, NULL, "take a local NI's link down, as a pulled cable (ulnet)\n"
	  "\t--nid nid:     The local NI.\n"
	  "\t--duration s:  Bring it back up after <s> seconds.\n", LK_WRITE, OPTS(link_opts), 0,
	  false },
	{ "up", cmd_fault_link, NULL, "bring a local NI's link back up (ulnet)\n"
	  "\t--nid nid:     The local NI.\n", LK_WRITE, OPTS(link_opts), 0, false },
	{ "show", cmd_fault_link_show, NULL, "show the local NIs whose link is down (ulnet)\n",
	  LK_READ, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};

/* Which table a command is in says which kind of rule it works on. */
static enum ulnet_fault_kind cmd_kind(const struct cmd *c)
{
	return c >= delay_cmds && c < delay_cmds + sizeof(delay_cmds) / sizeof(delay_cmds[0])
		       ? ULNET_FAULT_DELAY
		       : ULNET_FAULT_DROP;
}

/* raw groups: alone, they print their commands' help and exit 234, as
 * lnetctl's check_cmd() */
const struct cmd ctl_fault_cmds[] = {
	{ "drop", NULL, drop_cmds, "Manage drop rules\n"
	  "usage: ulnetctl fault drop add [<options>] -r <rate>|-i <interval> -s <src> -d <dest>\n"
	  "   or: ulnetctl fault drop del -s <src> -d <dest>\n"
	  "   or: ulnetctl fault drop show\n"
	  "   or: ulnetctl fault drop reset\n", LK_READ, NOOPTS, 0, true },
	{ "delay", NULL, delay_cmds, "Manage delay rules\n"
	  "usage: ulnetctl fault delay add [<options>] -r <rate>|-i <interval> -s <src> -d <dest>\n"
	  "   or: ulnetctl fault delay del -s <src> -d <dest>\n"
	  "   or: ulnetctl fault delay show\n"
	  "   or: ulnetctl fault delay reset\n", LK_READ, NOOPTS, 0, true },
	{ "link", NULL, link_cmds, "Take local NIs' links down and up (ulnet extension)\n"
	  "usage: ulnetctl fault link down --nid <nid> [--duration <seconds>]\n"
	  "   or: ulnetctl fault link up --nid <nid>\n"
	  "   or: ulnetctl fault link show\n", LK_READ, NOOPTS, 0, true },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
