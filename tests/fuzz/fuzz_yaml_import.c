/* SPDX-License-Identifier: MIT */
/*
 * fuzz_yaml_import.c - "ulnetctl import" (tools/common/ctl_cmds.c) against
 * an in-process node, as ulnetd runs it for a client: libyaml's parse, the
 * schema walk, NI/peer/global changes applied to the instance, then the
 * shows that render what was applied.
 *
 * The first byte picks the mode (bits 0-1: --add, --del, --show, or --add
 * then --del of the same text; bit 2: run "export" and "peer show -v"
 * after), the rest is the YAML. The node has manual progress and a fake
 * clock; tcp NIs it gets are added with accept=none (no listener), so no
 * exec binds a port. --exec (ping/discover, which wait) is left out.
 * Properties: no crash, no leak, no UB; the reply's exit code is 0..255.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t fz_clock(void *arg)
{
	(void)arg;
	return 1000000000ULL;
}

static void fz_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	(void)msg;
}

static void run(struct ctl_ctx *ctx, int argc, const char *const *argv, const uint8_t *blob,
		size_t len)
{
	struct ctl_reply rp;

	ctl_reply_init(&rp);
	ctl_run(ctx, argc, (char **)argv, (const char *)blob, len, &rp);
	if (rp.rc < 0 || rp.rc > 255)
		abort();
	if (getenv("FUZZ_LOG"))         /* to see what an input does */
		fprintf(stderr, "%s: rc %d\n%s%s", argv[0], rp.rc, ybuf_str(&rp.out), ybuf_str(&rp.err));
	ctl_reply_free(&rp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const add[] = { "import", "--add", "fuzz.yaml" };
	static const char *const del[] = { "import", "--del", "fuzz.yaml" };
	static const char *const show[] = { "import", "--show", "fuzz.yaml" };
	static const char *const exp[] = { "export" };
	static const char *const peers[] = { "peer", "show", "-v", "4" };
	static const char *const nets[] = { "net", "show", "-v", "4" };
	struct ulnet_opts o = {
		.flags = ULNET_OPT_MANUAL_PROGRESS,
		.clock = fz_clock,
		.log = fz_log,
		.log_level = ULNET_LOG_ERROR,
	};
	struct ctl_ctx ctx;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	if (ctl_ctx_init(&ctx, &o, true))
		return 0;
	snprintf(ctx.accept, sizeof(ctx.accept), "none");
	ctx.max_wait_s = 0;
	switch (mode & 3) {
	case 0:
		run(&ctx, 3, add, data, size);
		break;
	case 1:
		run(&ctx, 3, del, data, size);
		break;
	case 2:
		run(&ctx, 3, show, data, size);
		break;
	default:
		run(&ctx, 3, add, data, size);
		run(&ctx, 3, del, data, size);
		break;
	}
	if (mode & 4) {
		run(&ctx, 1, exp, NULL, 0);
		run(&ctx, 4, peers, NULL, 0);
		run(&ctx, 4, nets, NULL, 0);
	}
	ctl_ctx_fini(&ctx);
	return 0;
}
