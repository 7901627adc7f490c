/* SPDX-License-Identifier: MIT */
/* ctl_test.c - helpers of the ulnetctl tests (ctl_test.h). */
#include "ctl_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *ctl_golden(const char *name)
{
	char path[1024];
	const char *src = getenv("ULNET_SRC");

	snprintf(path, sizeof(path), "%s/tests/golden/%s", src ? src : ".", name);
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "cannot open golden %s\n", path);
		return NULL;
	}
	struct ybuf b;
	char chunk[4096];
	size_t n;

	ybuf_init(&b);
	for (int i = 0; i < 1024 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0; i++)
		ybuf_add(&b, chunk, n);
	fclose(f);
	ybuf_add(&b, "", 0);
	return b.s ? b.s : calloc(1, 1);
}

void ctl_check_golden(const char *golden, const struct ybuf *got)
{
	char *want = ctl_golden(golden);

	assert_non_null(want);
	if (strcmp(want, ybuf_str(got)) != 0) {
		fprintf(stderr, "--- %s (want)\n%s--- got\n%s---\n", golden, want, ybuf_str(got));
		free(want);
		fail_msg("%s differs", golden);
	}
	free(want);
}

int ctl_run_line(struct ctl_ctx *ctx, struct ctl_reply *rp, const char *blob, size_t bloblen,
		 const char *line)
{
	static char buf[1024];
	char *argv[40];
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 39;
	     t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	ctl_reply_free(rp);
	ctl_reply_init(rp);
	ctl_run(ctx, argc, argv, blob, bloblen, rp);
	return rp->rc;
}

void ctl_has(const struct ybuf *b, const char *text, const char *line)
{
	if (!strstr(ybuf_str(b), text))
		fail_msg("'%s': output lacks '%s': %s", line, text, ybuf_str(b));
}

void ctl_run_expect(struct ctl_ctx *ctx, struct ctl_reply *rp, const char *line, int rc,
		    const char *out)
{
	int got = ctl_run_line(ctx, rp, NULL, 0, line);

	if (got != rc)
		fail_msg("'%s' exited %d, want %d: %s%s", line, got, rc, ybuf_str(&rp->out),
			 ybuf_str(&rp->err));
	if (out && strcmp(ybuf_str(&rp->out), out) != 0)
		fail_msg("'%s' printed\n%s--- want\n%s", line, ybuf_str(&rp->out), out);
	if (rc == 0 && rp->err.len)
		fail_msg("'%s' wrote to stderr: %s", line, ybuf_str(&rp->err));
}

int ctl_fix_init(struct ctl_fix *f, const struct ulnet_opts *opts, const char *const *lines)
{
	struct ulnet_opts o;

	memset(&o, 0, sizeof(o));
	if (opts)
		o = *opts;
	if (ctl_ctx_init(&f->ctx, &o, true) < 0)
		return -1;
	/* an NI on one of the host's interfaces must never change its
	 * routing (test_mrroute.sh tests the setup in a private namespace) */
	f->ctx.skip_mr_route_setup = true;
	snprintf(f->ctx.accept, sizeof(f->ctx.accept), "none");
	ctl_reply_init(&f->rp);
	for (; lines && *lines; lines++) {
		if (ctl_run_line(&f->ctx, &f->rp, NULL, 0, *lines) != 0) {
			fprintf(stderr, "%s: %s\n", *lines, ybuf_str(&f->rp.err));
			ctl_fix_fini(f);
			return -1;
		}
	}
	return 0;
}

void ctl_fix_fini(struct ctl_fix *f)
{
	ctl_reply_free(&f->rp);
	ctl_ctx_fini(&f->ctx);
}

int ctl_fix_setup(void **state, const struct ulnet_opts *opts, const char *const *lines)
{
	struct ctl_fix *f = calloc(1, sizeof(*f));

	if (!f || ctl_fix_init(f, opts, lines) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

int ctl_fix_teardown(void **state)
{
	struct ctl_fix *f = *state;

	ctl_fix_fini(f);
	free(f);
	return 0;
}
