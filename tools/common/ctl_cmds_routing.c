/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_routing.c - the router role of a node: "set routing 0|1",
 * "set tiny_buffers|small_buffers|large_buffers N" and "routing show",
 * over ulnet/routing.h, with lnetctl 2.17's texts and exit codes (its
 * ioctl path: cYAML errors, 4-space indents, no "---"). The changes are
 * shared with import (ctl_import.c: routing: and buffers:).
 *
 * One deliberate difference: a pool size set while routing is disabled is
 * kept for when routing is enabled (the kernel accepts it, exit 0, and
 * drops it); the sizes set also outlive "lnet unconfigure", as the
 * kernel's module parameters do.
 */
#include "ctl_cmds_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pool_names[ULNET_RTR_NPOOLS] = { "tiny", "small", "large" };

/* lnetctl's error text of the ioctl path is in double quotes. */
static void y_cy_error_q(struct ybuf *err, const char *cmd, const char *entity, int errnum,
			 const char *descr)
{
	char q[256];

	snprintf(q, sizeof(q), "\"%s\"", descr);
	y_cy_error(err, cmd, entity, errnum, q);
}

/* lnetctl's parse_long(): strtol base 0 over the whole word; out of range
 * or trailing characters fail (and, as "set NAME VALUE" does here, an
 * empty word). */
static int lnetctl_long(const char *s, long *v)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*v = strtol(s, &end, 0);
	if (errno == ERANGE || *end)
		return -EINVAL;
	return 0;
}

/* --- shared with import -------------------------------------------------------------- */

int ctl_routing_set(struct ctl_ctx *ctx, bool on, char *descr, size_t len)
{
	char eb[96];
	int rc;

	/* lnet_rtrpools_enable()/disable(): on while stopping is -EBUSY */
	rc = ctx->ln ? ulnet_routing_set(ctx->ln, on) : -ENETDOWN;
	if (rc < 0)
		snprintf(descr, len, "cannot %s routing %s", on ? "enable" : "disable",
			 ctl_strerror(rc, eb, sizeof(eb)));
	return rc;
}

int ctl_buffers_set(struct ctl_ctx *ctx, const long n[ULNET_RTR_NPOOLS], char *descr, size_t len)
{
	char eb[96];
	int rc = 0;

	/* lustre_lnet_config_buffers() checks the three before it asks the
	 * kernel; -1 leaves a pool as it is. lnetctl passes the value on as
	 * a 32-bit int: ulnet refuses what does not fit rather than wrap. */
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
		if (n[i] < -1) {
			snprintf(descr, len, "tiny, small and large must be >= 0");
			return -ERANGE;
		}
		if (n[i] > INT_MAX) {
			snprintf(descr, len, "tiny, small and large must be <= %d", INT_MAX);
			return -ERANGE;
		}
	}
	for (int i = 0; i < ULNET_RTR_NPOOLS && rc == 0; i++) {
		if (n[i] == -1)
			continue;
		rc = ctx->ln ? ulnet_routing_buffers_set(ctx->ln, i, (int)n[i]) : -ENETDOWN;
		/* kept across unconfigure, as the module parameters */
		if (rc == 0)
			ctx->rtr_nbuffers[i] = (int)n[i];
	}
	if (rc < 0)
		snprintf(descr, len, "cannot configure buffers: %s",
			 ctl_strerror(rc, eb, sizeof(eb)));
	return rc;
}

void ctl_routing_restore(struct ctl_ctx *ctx)
{
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		if (ctx->ln && ctx->rtr_nbuffers[i] >= 0)
			(void)ulnet_routing_buffers_set(ctx->ln, i, ctx->rtr_nbuffers[i]);
}

/* --- set routing / set *_buffers --------------------------------------------------------- */

int ctl_cmd_set_routing(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	char descr[200];
	long v;
	int rc = ctl_set_words(c, argc, argv, rp);

	if (rc)
		return rc;
	if (lnetctl_long(argv[1], &v) < 0 || (v != 0 && v != 1)) {
		/* cYAML prints the two lines of lnetctl's text aligned under
		 * the value of descr: */
		y_cy_error(&rp->err, "parser", "set", -1,
			   "cannot parse routing value.\n"
			   "                 must be 0 for disable or 1 for enable");
		return -1;
	}
	rc = ctl_routing_set(ctx, v == 1, descr, sizeof(descr));
	if (rc < 0)
		y_cy_error_q(&rp->err, v == 1 ? "add" : "del", "routing", rc, descr);
	return rc;
}

int ctl_cmd_set_buffers(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	long n[ULNET_RTR_NPOOLS] = { -1, -1, -1 };
	char descr[200];
	int pool, rc = ctl_set_words(c, argc, argv, rp);

	if (rc)
		return rc;
	for (pool = 0; pool < ULNET_RTR_NPOOLS - 1; pool++)
		if (strncmp(c->name, pool_names[pool], strlen(pool_names[pool])) == 0)
			break;
	if (lnetctl_long(argv[1], &n[pool]) < 0) {
		snprintf(descr, sizeof(descr), "cannot parse %s value", c->name);
		y_cy_error(&rp->err, "parser", "set", -1, descr);
		return -1;
	}
	rc = ctl_buffers_set(ctx, n, descr, sizeof(descr));
	if (rc < 0)
		y_cy_error_q(&rp->err, "add", "buf", rc, descr);
	return rc;
}

/* --- routing show -------------------------------------------------------------------------- */

static int cmd_routing_show(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			    int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp)
{
	struct ulnet_routing_info ri;
	int rc;

	if (!ctx->ln) {
		y_cy_error(&rp->err, "show", "routing", -ENETDOWN,
			   "\"cannot get routing information: Network is down\"");
		return -ENETDOWN;
	}
	rc = ulnet_routing_info(ctx->ln, &ri);
	if (rc < 0)
		return rc;
	/* pools never allocated (routing never enabled): nothing, exit 0 */
	ctl_render_routing(&rp->out, &ri, false);
	return 0;
}

const struct cmd ctl_routing_cmds[] = {
	{ "show", cmd_routing_show, NULL, "show routing information\n", LK_READ, NOOPTS, 0, false },
	{ NULL, NULL, NULL, NULL, 0, NOOPTS, 0, false }
};
