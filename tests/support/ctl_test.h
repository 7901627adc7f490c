/* SPDX-License-Identifier: MIT */
/*
 * ctl_test.h - helpers of the ulnetctl tests (cmocka): golden files of
 * tests/golden/, one command line run in-process through ctl_run().
 */
#ifndef ULNET_CTL_TEST_H
#define ULNET_CTL_TEST_H

#include <stddef.h>

#include "ctl_cmds.h"
#include "yaml_out.h"

/* The text of tests/golden/NAME (under $ULNET_SRC), to free; NULL if
 * missing. */
char *ctl_golden(const char *name);
/* Fail the test unless `got` is exactly the golden file `golden`. */
void ctl_check_golden(const char *golden, const struct ybuf *got);
/* Run one command line (words split at spaces) on `ctx`; `rp` is reset
 * first and keeps the output for checks. Returns the exit code. */
int ctl_run_line(struct ctl_ctx *ctx, struct ctl_reply *rp, const char *blob, size_t bloblen,
		 const char *line);
/* Run `line`: fail the test unless it exits `rc`, prints exactly `out` on
 * stdout (NULL: not checked) and, on success, nothing on stderr. */
void ctl_run_expect(struct ctl_ctx *ctx, struct ctl_reply *rp, const char *line, int rc,
		    const char *out);
/* Fail the test unless `b` contains `text` (`line` names the command). */
void ctl_has(const struct ybuf *b, const char *text, const char *line);

/* One node of an in-process ulnetctl test: a control context on its own
 * instance and a reply to run commands into. */
struct ctl_fix {
	struct ctl_ctx ctx;
	struct ctl_reply rp;
};

/* Start it with `opts` (NULL: the defaults); the NIs it adds take no
 * acceptor ("--accept none": any number on one address, no port); then
 * run `lines` (NULL-terminated, or NULL), each of which must succeed.
 * 0, or -1 (said on stderr). */
int ctl_fix_init(struct ctl_fix *f, const struct ulnet_opts *opts, const char *const *lines);
void ctl_fix_fini(struct ctl_fix *f);
/* cmocka group or test setup and teardown: a ctl_fix on the heap, in
 * *state (ctl_fix_init's arguments). */
int ctl_fix_setup(void **state, const struct ulnet_opts *opts, const char *const *lines);
int ctl_fix_teardown(void **state);

#endif
