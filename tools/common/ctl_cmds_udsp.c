/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_udsp.c - the "udsp" commands (add, del, show) and their table,
 * over ulnet/udsp.h, with lnetctl 2.17's checks, texts and exit codes:
 * what jt_add_udsp()/jt_del_udsp()/jt_show_udsp() check themselves (plain
 * lines on stdout), what liblnetconfig checks (cYAML errors, negative
 * errno), then what the kernel answers (cYAML errors, "cannot add udsp:
 * ...", a positive errno). The rule change is shared with import
 * (ctl_import.c).
 */
#include "ctl_cmds_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- shared with import ------------------------------------------------------------ */

int ctl_udsp_add(ulnet_t *ln, const char *const match[ULNET_UDSP_NPARTS], bool have_prio,
		 long prio, long idx, char *descr, size_t len)
{
	static const char *const part[ULNET_UDSP_NPARTS] = { "src", "dst", "rte" };
	const char *src = match[ULNET_UDSP_SRC], *dst = match[ULNET_UDSP_DST];
	const char *rte = match[ULNET_UDSP_RTE];
	struct ulnet_udsp_rule rule;
	struct ulnet_udsp_err ue;
	char eb[96];
	int rc;

	/* liblnetconfig's lustre_lnet_add_udsp(), in its order */
	if (!src && !dst && !rte) {
		snprintf(descr, len, "\"Missing required argument(s)\"");
		return -EINVAL;
	}
	if (src && rte && dst) {
		snprintf(descr, len, "\"The combination of src, dst and rte is not supported\"");
		return -EINVAL;
	}
	if (src && rte) {
		snprintf(descr, len, "\"src and rte cannot be combined\"");
		return -EINVAL;
	}
	memset(&rule, 0, sizeof(rule));
	for (int p = 0; p < ULNET_UDSP_NPARTS; p++) {
		if (!match[p])
			continue;
		/* "" is a descriptor that does not parse (the library takes
		 * it for none) */
		if (!match[p][0] || strlen(match[p]) >= sizeof(rule.match[p])) {
			snprintf(descr, len, "\"failed to parse %s parameter\"", part[p]);
			return -EINVAL;
		}
		memcpy(rule.match[p], match[p], strlen(match[p]) + 1);
	}
	/* no priority: src or dst alone get priority 0, as lnetctl gives
	 * them; the pairs a preferred list */
	if (have_prio) {
		rule.action = ULNET_UDSP_ACTION_PRIORITY;
		rule.priority = (uint32_t)prio;
	} else if (!rte && (!src != !dst)) {
		rule.action = ULNET_UDSP_ACTION_PRIORITY;
		rule.priority = 0;
	} else {
		rule.action = ULNET_UDSP_ACTION_PREFERRED;
	}
	/* what lnetctl parses before it asks the kernel, then the kernel */
	rc = ulnet_udsp_check(&rule, &ue);
	if (rc == 0 && !ln) {
		snprintf(descr, len, "\"cannot add udsp: %s\"", ctl_strerror(ENETDOWN, eb, sizeof(eb)));
		return ENETDOWN;
	}
	idx = idx < 0 ? -1 : idx > INT_MAX ? INT_MAX : idx;
	if (rc == 0)
		rc = ulnet_udsp_add(ln, &rule, (int)idx, &ue);
	if (rc == -EINVAL && ue.part >= 0) {
		snprintf(descr, len, "\"failed to parse %s parameter\"", part[ue.part]);
	} else if (rc == -EOPNOTSUPP) {
		snprintf(descr, len,
			 "\"cannot add udsp: %s is not supported by ulnet (the kernel keeps such a rule and never applies it)\"",
			 ue.parse.msg);
	} else if (rc < 0) {
		/* the kernel's answer: a positive errno, as lnetctl takes it */
		snprintf(descr, len, "\"cannot add udsp: %s\"", ctl_strerror(rc, eb, sizeof(eb)));
		rc = -rc;
	}
	return rc;
}

/* --- udsp add / del / show ---------------------------------------------------------- */

enum { UA_SRC, UA_DST, UA_RTE, UA_PRIO, UA_IDX };

/* A number as lnetctl's parse_long() reads it (strtol base 0, whole word). */
static bool udsp_long(const char *s, long *v)
{
	return ctl_parse_int(s, LONG_MIN, LONG_MAX, v) == 0;
}

static int cmd_udsp_add(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc,
			char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	const char *match[ULNET_UDSP_NPARTS] = { NULL, NULL, NULL };
	bool have_prio = false;
	long prio = 0, idx = -1;
	char descr[400];
	int rc;

	/* in command-line order, each value checked as it comes (getopt) */
	for (int i = 0; i < p->nseq; i++) {
		const char *a = p->seq[i].arg;

		switch (p->seq[i].k) {
		case UA_SRC:
		case UA_DST:
		case UA_RTE:
			match[p->seq[i].k] = a;
			break;
		case UA_PRIO:
			/* the largest is one below "none" (the kernel's u32) */
			if (!udsp_long(a, &prio) || prio < 0 || prio >= (long)ULNET_UDSP_PRIO_NONE) {
				ybuf_printf(&rp->out, "Invalid priority \"%s\"\n", a);
				return -EINVAL;
			}
			have_prio = true;
			break;
		case UA_IDX:
			if (!udsp_long(a, &idx) || idx < 0) {
				ybuf_printf(&rp->out, "Invalid index \"%s\"\n", a);
				return -EINVAL;
			}
			break;
		}
	}
	if (!match[ULNET_UDSP_SRC] && !match[ULNET_UDSP_DST] && !match[ULNET_UDSP_RTE]) {
		/* lnetctl prints the help and exits 0 */
		ctl_print_usage(&rp->out, "udsp", c);
		return 0;
	}
	rc = ctl_udsp_add(ctx->ln, match, have_prio, prio, idx, descr, sizeof(descr));
	if (rc)
		y_cy_error(&rp->err, "add", "udsp", rc, descr);
	/* unsupported: exit 234, as every refusal of ulnet's */
	return rc == -EOPNOTSUPP ? -EINVAL : rc;
}

static int cmd_udsp_del(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc,
			char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	long idx = -2;
	bool all = false;
	char eb[96], descr[200];
	int rc;

	for (int i = 0; i < p->nseq; i++) {
		const char *a = p->seq[i].arg;

		if (p->seq[i].k == 0) {
			all = true;
		} else if (!udsp_long(a, &idx) || idx < -1) {
			ybuf_printf(&rp->out, "Invalid index \"%s\"\n", a);
			return -EINVAL;
		}
	}
	if (all && idx != -2) {
		ybuf_puts(&rp->out, "Cannot combine --all with --idx\n");
		return -EINVAL;
	} else if (all) {
		idx = -1;
	} else if (idx == -2) {
		ybuf_puts(&rp->out, "Must specify --idx or --all\n");
		return -EINVAL;
	}
	/* -1 deletes every rule, as the kernel's */
	rc = !ctx->ln ? -ENETDOWN : ulnet_udsp_del(ctx->ln, idx > INT_MAX ? INT_MAX : (int)idx);
	if (rc < 0) {
		snprintf(descr, sizeof(descr), "\"cannot del udsp: %s\"", ctl_strerror(rc, eb, sizeof(eb)));
		/* liblnetconfig names the error "add" */
		y_cy_error(&rp->err, "add", "udsp", rc, descr);
	}
	return rc;
}

static int cmd_udsp_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc,
			 char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	struct ulnet_udsp_rule *rules = NULL;
	long idx = -1;
	int n = 0, first = 0, rc = 0;

	for (int i = 0; i < p->nseq; i++) {
		const char *a = p->seq[i].arg;

		if (!udsp_long(a, &idx) || idx < -1) {
			ybuf_printf(&rp->out, "Invalid index \"%s\"\n", a);
			return -EINVAL;
		}
	}
	if (!ctx->ln) {
		y_cy_error(&rp->err, "show", "udsp", -ENETDOWN, "\"cannot get udsp: Network is down\"");
		return -ENETDOWN;
	}
	if (idx >= 0) {
		/* one rule (lnetctl 2.17 aborts here: a double free); none
		 * at that index prints nothing, as lnetctl's does */
		rules = malloc(sizeof(*rules));
		if (!rules)
			return -ENOMEM;
		if (idx <= INT_MAX && ulnet_udsp_get(ctx->ln, (int)idx, rules) == 0) {
			n = 1;
			first = (int)idx;
		}
	} else {
		rc = ctl_get_udsp(ctx->ln, &rules);
		if (rc < 0)
			return rc;
		n = rc;
		rc = 0;
	}
	ctl_render_udsp(&rp->out, rules, n, first);
	free(rules);
	return rc;
}

/* Every rule, in index order (*out to free). Returns the count or -ENOMEM. */
int ctl_get_udsp(ulnet_t *ln, struct ulnet_udsp_rule **out)
{
	struct ulnet_udsp_rule *v = NULL;
	int n = 0;

	for (;;) {
		struct ulnet_udsp_rule *nv = realloc(v, (size_t)(n + 1) * sizeof(*v));

		if (!nv) {
			free(v);
			*out = NULL;
			return -ENOMEM;
		}
		v = nv;
		if (ulnet_udsp_get(ln, n, &v[n]) < 0)
			break;
		n++;
	}
	*out = v;
	return n;
}

static const struct optspec udsp_add_opts[] = {
	[UA_SRC] = { "src", 's', ARG_REQ },
	[UA_DST] = { "dst", 'd', ARG_REQ },
	[UA_RTE] = { "rte", 'r', ARG_REQ },
	[UA_PRIO] = { "priority", 'p', ARG_REQ },
	[UA_IDX] = { "idx", 'i', ARG_REQ },
};
static const struct optspec udsp_del_opts[] = { { "all", 'a', ARG_NONE }, { "idx", 'i', ARG_REQ } };
static const struct optspec udsp_show_opts[] = { { "idx", 'i', ARG_REQ } };

const struct cmd ctl_udsp_cmds[] = {
	{ "add", cmd_udsp_add, NULL, "add a udsp\n"
	  "\t--src nid|net: ip2nets syntax specifying the local NID or network to match.\n"
	  "\t--dst nid:     ip2nets syntax specifying the remote NID to match.\n"
	  "\t--rte nid:     ip2nets syntax specifying the router NID to match.\n"
	  "\t--priority p:  Assign priority value p where p >= 0.\n"
	  "\t               Note: 0 is the highest priority.\n"
	  "\t--idx n:       Insert the rule in the n'th position on the list of rules.\n"
	  "\t               By default, rules are appended to the end of the rule list.\n",
	  LK_WRITE, OPTS(udsp_add_opts), 0, false },
	{ "del", cmd_udsp_del, NULL, "delete a udsp\n"
	  "\t--all:   Delete all rules.\n"
	  "\t--idx n: Delete the rule at index n.\n", LK_WRITE, OPTS(udsp_del_opts), 0, false },
	{ "show", cmd_udsp_show, NULL, "show udsps\n"
	  "\t--idx n: Show the rule at at index n.\n"
	  "\t         By default, all rules are shown.\n", LK_READ, OPTS(udsp_show_opts), 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
