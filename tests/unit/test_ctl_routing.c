/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_routing.c - ulnetctl "set routing", "set *_buffers", "routing
 * show", the routing: and buffers: sections of export and import, against
 * an in-process node (ctl_run), with lnetctl 2.17's texts and exit codes
 * (shared/reference/lnetctl-yaml lnetctl-set-routing.txt,
 * lnetctl-set-buffers.txt, lnetctl-routing-show*.txt, errors/set-*.txt;
 * tests/golden/routing-show-*, err-set-routing-*, err-set-buffers-*).
 *
 * The node runs on a fake clock with manual progress, so the 110 s of the
 * start-up and stop phases pass at once: move the clock, run the loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmds.h"
#include "ctl_cmds_int.h"
#include "ctl_test.h"

#define NSEC 1000000000ULL

static uint64_t fake_now = 1000 * NSEC;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

/* A node on the fake clock, progressed by hand, with one NI. */
static int fix_init(struct ctl_fix *f)
{
	static const char *const lines[] = { "net add --nid 127.0.0.2@tcp --accept none", NULL };
	struct ulnet_opts opts;

	memset(&opts, 0, sizeof(opts));
	opts.flags = ULNET_OPT_MANUAL_PROGRESS;
	opts.clock = fake_clock;
	return ctl_fix_init(f, &opts, lines);
}

static int setup(void **state)
{
	struct ctl_fix *f = calloc(1, sizeof(*f));

	if (!f || fix_init(f) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct ctl_fix *f = *state;

	ctl_fix_fini(f);
	free(f);
	return 0;
}

/* Let `s` seconds pass on the node: its 1 s router timer runs. */
static void pass(struct ctl_fix *f, unsigned s)
{
	fake_now += (uint64_t)s * NSEC;
	assert_non_null(f->ctx.ln);
	ulnet_progress(f->ctx.ln, 0);
}

/* Run `line`: exit code `rc`, stdout `out` exactly (NULL: not checked),
 * and stderr empty on success. */
static void run_ok(struct ctl_fix *f, const char *line, int rc, const char *out)
{
	ctl_run_expect(&f->ctx, &f->rp, line, rc, out);
}

/* Run `line`: exit 0, stdout is the golden file. */
static void run_golden(struct ctl_fix *f, const char *line, const char *golden)
{
	run_ok(f, line, 0, NULL);
	ctl_check_golden(golden, &f->rp.out);
}

/* Run `line`: exit `rc`, stdout empty, stderr exactly `err` (or, with a
 * name ending in .yaml, that golden file). */
static void run_err(struct ctl_fix *f, const char *line, int rc, const char *err)
{
	int got = ctl_run_line(&f->ctx, &f->rp, NULL, 0, line);
	size_t n = strlen(err);

	if (got != rc)
		fail_msg("'%s' exited %d, want %d: %s", line, got, rc, ybuf_str(&f->rp.err));
	assert_string_equal(ybuf_str(&f->rp.out), "");
	if (n > 5 && strcmp(err + n - 5, ".yaml") == 0)
		ctl_check_golden(err, &f->rp.err);
	else if (strcmp(ybuf_str(&f->rp.err), err) != 0)
		fail_msg("'%s' wrote\n%s--- want\n%s", line, ybuf_str(&f->rp.err), err);
}

/* cYAML's error of the ioctl path: "op: - what:" with errno and descr. */
static const char *cy_err(const char *op, const char *what, int err, const char *descr)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s:\n    - %s:\n          errno: %d\n          descr: %s\n", op,
		 what, err, descr);
	return buf;
}

#define ZEROS(n) "          " n ":\n              npages: %d\n              nbuffers: 0\n" \
	"              credits: 0\n              mincredits: 0\n"

/* The capture's sequence (lnetctl-set-routing.txt, lnetctl-set-buffers.txt):
 * nothing before routing is enabled; enable 3 for 110 s, then 1; the pools
 * grow at once and shrink lazily; enable 2 after set routing 0, where set
 * routing 1 is -16 (exit 240); then 0 with empty pools, and on again. */
static void test_routing_states(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "routing show", 0, "");
	run_ok(f, "set routing 0", 0, "");
	run_ok(f, "routing show", 0, "");
	run_ok(f, "export", 0, NULL);
	if (strstr(ybuf_str(&f->rp.out), "routing:") || strstr(ybuf_str(&f->rp.out), "buffers:"))
		fail_msg("export before routing was enabled:\n%s", ybuf_str(&f->rp.out));
	run_ok(f, "set routing 1", 0, "");
	run_golden(f, "routing show", "routing-show-starting.yaml");
	run_ok(f, "set routing 1", 0, "");
	pass(f, 60);
	run_golden(f, "routing show", "routing-show-starting.yaml");
	pass(f, 51);
	run_golden(f, "routing show", "routing-show-enabled.yaml");
	run_ok(f, "set routing 1", 0, "");
	/* growing takes effect at once (mincredits restarts) */
	run_ok(f, "set tiny_buffers 4096", 0, "");
	run_ok(f, "set small_buffers 20000", 0, "");
	run_ok(f, "set large_buffers 1100", 0, "");
	run_golden(f, "routing show", "routing-show-grown.yaml");
	/* shrinking as buffers come back: none is in use, nothing changes;
	 * -1 changes nothing */
	run_ok(f, "set large_buffers 1024", 0, "");
	run_ok(f, "set small_buffers -1", 0, "");
	run_golden(f, "routing show", "routing-show-grown.yaml");
	run_ok(f, "set routing 0", 0, "");
	run_golden(f, "routing show", "routing-show-stopping.yaml");
	run_err(f, "set routing 1", 240, "err-set-routing-busy.yaml");
	run_golden(f, "routing show", "routing-show-stopping.yaml");
	/* export: after peer:, before global: (here no peer) */
	run_ok(f, "export --backup", 0, NULL);
	ctl_has(&f->rp.out, "\nrouting:\n    enable: 2\nbuffers:\n    tiny: 4096\n    small: 20000\n"
		"    large: 1100\nglobal:\n", "export --backup");
	run_ok(f, "export", 0, NULL);
	char *want = ctl_golden("routing-show-stopping.yaml");
	char sect[1024];

	assert_non_null(want);
	snprintf(sect, sizeof(sect), "\n%sglobal:\n", want);
	ctl_has(&f->rp.out, sect, "export");
	free(want);
	/* set routing 0 again while stopping: still stopping */
	run_ok(f, "set routing 0", 0, "");
	/* no buffer in use: disabled once the 110 s have passed, the pools
	 * kept and empty */
	pass(f, 111);
	char zeros[1024];

	snprintf(zeros, sizeof(zeros), "routing:\n    - cpt[0]:\n" ZEROS("tiny") ZEROS("small")
		 ZEROS("large") "    - enable: 0\nbuffers:\n    tiny: 0\n    small: 0\n    large: 0\n",
		 0, 1, 256);
	run_ok(f, "routing show", 0, zeros);
	run_ok(f, "export --backup", 0, NULL);
	ctl_has(&f->rp.out, "\nrouting:\n    enable: 0\nbuffers:\n    tiny: 0\n    small: 0\n"
		"    large: 0\nglobal:\n", "export --backup");
	/* on again: the sizes last set (large 1024, as the kernel's module
	 * parameter after "set large_buffers 1024") */
	run_ok(f, "set routing 1", 0, "");
	run_ok(f, "routing show", 0, NULL);
	ctl_has(&f->rp.out, "          large:\n              npages: 256\n              nbuffers: 1024\n",
		"routing show");
	ctl_has(&f->rp.out, "    - enable: 3\nbuffers:\n    tiny: 4096\n    small: 20000\n"
		"    large: 1024\n", "routing show");
}

/* A size set while routing is disabled is kept for when it is enabled (the
 * kernel drops it); 0 is the default again; the sizes outlive "lnet
 * unconfigure" as module parameters do. */
static void test_buffers_kept(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "set tiny_buffers 100", 0, "");
	run_ok(f, "set small_buffers 0x200", 0, "");
	run_ok(f, "set large_buffers -1", 0, "");
	run_ok(f, "routing show", 0, "");
	run_ok(f, "set routing 1", 0, "");
	run_ok(f, "routing show", 0, NULL);
	ctl_has(&f->rp.out, "buffers:\n    tiny: 100\n    small: 512\n    large: 1024\n",
		"routing show");
	ctl_has(&f->rp.out, "          tiny:\n              npages: 0\n              nbuffers: 100\n"
		"              credits: 100\n              mincredits: 100\n", "routing show");
	run_ok(f, "set small_buffers 0", 0, "");
	run_ok(f, "routing show", 0, NULL);
	ctl_has(&f->rp.out, "buffers:\n    tiny: 100\n    small: 16384\n", "routing show");
	/* a new instance: routing disabled, no pools, the sizes kept */
	run_ok(f, "set large_buffers 7", 0, "");
	run_ok(f, "lnet unconfigure", 0, "");
	run_ok(f, "lnet configure", 0, "");
	run_ok(f, "routing show", 0, "");
	run_ok(f, "set routing 1", 0, "");
	run_ok(f, "routing show", 0, NULL);
	ctl_has(&f->rp.out, "    - enable: 3\nbuffers:\n    tiny: 100\n    small: 16384\n    large: 7\n",
		"routing show");
}

/* lnetctl's checks, texts and exit codes; nothing changes on an error. */
static void test_set_errors(void **state)
{
	struct ctl_fix *f = *state;
	static const char *const bad_routing[] = { "2", "foo", "-1", "1x", "", "99999999999999999999" };
	char line[128];

	for (size_t i = 0; i < sizeof(bad_routing) / sizeof(bad_routing[0]); i++) {
		snprintf(line, sizeof(line), "set routing %s", bad_routing[i]);
		if (!bad_routing[i][0]) {
			/* an empty word: ctl_run_line cannot send one */
			char *argv[] = { "set", "routing", "", NULL };

			ctl_reply_free(&f->rp);
			ctl_reply_init(&f->rp);
			ctl_run(&f->ctx, 3, argv, NULL, 0, &f->rp);
			assert_int_equal(f->rp.rc, 255);
			ctl_check_golden("err-set-routing-parse.yaml", &f->rp.err);
			continue;
		}
		run_err(f, line, 255, "err-set-routing-parse.yaml");
	}
	run_err(f, "set large_buffers foo", 255, "err-set-buffers-parse.yaml");
	run_err(f, "set tiny_buffers 12a", 255,
		cy_err("parser", "set", -1, "cannot parse tiny_buffers value"));
	run_err(f, "set small_buffers 99999999999999999999", 255,
		cy_err("parser", "set", -1, "cannot parse small_buffers value"));
	run_err(f, "set tiny_buffers -2", 222, "err-set-buffers-range.yaml");
	run_err(f, "set large_buffers -100", 222, "err-set-buffers-range.yaml");
	/* lnetctl would pass it on cut to 32 bits; ulnet refuses it */
	run_err(f, "set small_buffers 4294967296", 222,
		cy_err("add", "buf", -34, "\"tiny, small and large must be <= 2147483647\""));
	/* the words: a value, nothing more (the help otherwise) */
	run_ok(f, "set routing", 234, NULL);
	ctl_has(&f->rp.out, "enable/disable routing", "set routing");
	run_ok(f, "set tiny_buffers", 234, NULL);
	ctl_has(&f->rp.out, "set tiny routing buffers", "set tiny_buffers");
	run_ok(f, "set routing 1 2", 234, NULL);
	ctl_has(&f->rp.err, "unexpected argument '2'", "set routing 1 2");
	run_ok(f, "set large_buffers 10 --all", 234, NULL);
	ctl_has(&f->rp.err, "unrecognized option '--all'", "set large_buffers 10 --all");
	run_ok(f, "routing show --net tcp", 234, NULL);
	run_ok(f, "routing show all", 234, NULL);
	/* none of them did anything; 0x1 is 1 (strtol base 0) */
	run_ok(f, "routing show", 0, "");
	run_ok(f, "set routing 0x1", 0, "");
	run_ok(f, "routing show", 0, NULL);
	ctl_has(&f->rp.out, "buffers:\n    tiny: 2048\n    small: 16384\n    large: 1024\n",
		"routing show");
}

/* While LNet is down: "Network is down" (-100, exit 156) in the ioctl
 * path's words; the parser's checks come first. */
static void test_lnet_down(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "lnet unconfigure", 0, "");
	run_err(f, "routing show", 156,
		cy_err("show", "routing", -100, "\"cannot get routing information: Network is down\""));
	run_err(f, "set routing 1", 156,
		cy_err("add", "routing", -100, "\"cannot enable routing Network is down\""));
	run_err(f, "set routing 0", 156,
		cy_err("del", "routing", -100, "\"cannot disable routing Network is down\""));
	run_err(f, "set tiny_buffers 10", 156,
		cy_err("add", "buf", -100, "\"cannot configure buffers: Network is down\""));
	run_err(f, "set tiny_buffers -2", 222, "err-set-buffers-range.yaml");
	run_err(f, "set routing 7", 255, "err-set-routing-parse.yaml");
	run_ok(f, "lnet configure", 0, "");
	run_ok(f, "routing show", 0, "");
}

/* The help says what the values mean, and that a size is kept. */
static void test_help(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "set --help", 0, NULL);
	ctl_has(&f->rp.out, "| tiny_buffers | small_buffers | large_buffers | routing} VALUE",
		"set --help");
	ctl_has(&f->rp.out, "routing: enable/disable routing", "set --help");
	if (strstr(ybuf_str(&f->rp.out), "not supported"))
		fail_msg("set --help still says not supported:\n%s", ybuf_str(&f->rp.out));
	run_ok(f, "set routing --help", 0, NULL);
	ctl_has(&f->rp.out, "\t0 - disable routing", "set routing --help");
	ctl_has(&f->rp.out, "\t1 - enable routing", "set routing --help");
	run_ok(f, "set small_buffers --help", 0, NULL);
	ctl_has(&f->rp.out, "0 - the default (16384); -1 - no change", "set small_buffers --help");
	ctl_has(&f->rp.out, "kept for when routing is enabled", "set small_buffers --help");
	run_ok(f, "routing --help", 0, NULL);
	ctl_has(&f->rp.out, "show routing information", "routing --help");
}

static int import_text(struct ctl_fix *f, const char *opt, const char *text)
{
	char line[64];

	snprintf(line, sizeof(line), "import %s r.yaml", opt);
	return ctl_run_line(&f->ctx, &f->rp, text, strlen(text), line);
}

static void import_ok(struct ctl_fix *f, const char *opt, const char *text)
{
	if (import_text(f, opt, text) != 0)
		fail_msg("import %s of\n%s exited %d: %s", opt, text, f->rp.rc, ybuf_str(&f->rp.err));
}

/* import (and ulnetd --config): routing: turns routing on or off, buffers:
 * sizes the pools; what export writes (both forms) imports back, its
 * cpt[N] counters checked and ignored; --del turns routing off. */
static void test_routing_import(void **state)
{
	struct ctl_fix *f = *state;
	struct ctl_fix g;

	run_ok(f, "set tiny_buffers 300", 0, "");
	run_ok(f, "set routing 1", 0, "");
	pass(f, 111);
	run_ok(f, "export", 0, NULL);
	char *full = strdup(ybuf_str(&f->rp.out));

	run_ok(f, "export --backup", 0, NULL);
	char *backup = strdup(ybuf_str(&f->rp.out));

	assert_non_null(full);
	assert_non_null(backup);
	for (int bk = 0; bk < 2; bk++) {
		memset(&g, 0, sizeof(g));
		assert_int_equal(fix_init(&g), 0);
		run_ok(&g, "net del --net tcp", 0, "");
		import_ok(&g, "", bk ? backup : full);
		run_ok(&g, "routing show", 0, NULL);
		ctl_has(&g.rp.out, "    - enable: 3\nbuffers:\n    tiny: 300\n    small: 16384\n"
			"    large: 1024\n", bk ? "backup" : "full");
		/* on while on: no change */
		import_ok(&g, "", "routing:\n- enable: 1\n");
		/* --del: routing off; buffers: left as they are */
		import_ok(&g, "--del", "routing:\n    enable: 1\nbuffers:\n    tiny: 5\n");
		run_ok(&g, "routing show", 0, NULL);
		ctl_has(&g.rp.out, "    - enable: 2\nbuffers:\n    tiny: 300\n", "after --del");
		/* on while stopping: -16 */
		assert_int_equal(import_text(&g, "", "routing:\n    enable: 1\n"), 234);
		ctl_has(&g.rp.err, "r.yaml:2:13: cannot enable routing Device or resource busy",
			"import while stopping");
		ctl_has(&g.rp.err, "errno: -16", "import while stopping");
		ctl_fix_fini(&g);
	}
	free(full);
	free(backup);

	/* the state exported: 3 (starting) turns routing on, 2 (stopping)
	 * off, as does 0 */
	memset(&g, 0, sizeof(g));
	assert_int_equal(fix_init(&g), 0);
	import_ok(&g, "", "routing:\n- enable: 2\n");
	run_ok(&g, "routing show", 0, "");
	import_ok(&g, "", "buffers:\n    large: 9\nrouting:\n- cpt[0]:\n    tiny:\n      npages: 0\n"
		  "- enable: 3\n");
	run_ok(&g, "routing show", 0, NULL);
	ctl_has(&g.rp.out, "    - enable: 3\nbuffers:\n    tiny: 2048\n    small: 16384\n    large: 9\n",
		"import enable 3");
	import_ok(&g, "", "routing:\n    enable: 0\n");
	run_ok(&g, "routing show", 0, NULL);
	ctl_has(&g.rp.out, "    - enable: 2\n", "import enable 0");
	ctl_fix_fini(&g);

	/* errors name the file, line and column; nothing changes */
	static const struct {
		const char *yaml, *err;
		int errnum;
	} bad[] = {
		{ "routing:\n    enable: 5\n", "r.yaml:2:13: invalid value for 'enable' (0 to 3)", -22 },
		{ "routing:\n    enable: on\n", "r.yaml:2:13: invalid value for 'enable' (0 to 3)", -22 },
		{ "routing:\n    enable: 1\n    bogus: 1\n", "r.yaml:3:5: unknown routing key 'bogus'", -95 },
		{ "routing:\n    cpt[0]: 1\n", "r.yaml:2:5: unknown routing key 'cpt[0]'", -95 },
		{ "routing:\n- cpt[0]:\n    huge:\n      npages: 0\n- enable: 1\n",
		  "r.yaml:3:5: unknown routing pool 'huge'", -95 },
		{ "routing:\n- cpt[0]:\n    tiny:\n      npages: x\n- enable: 1\n",
		  "r.yaml:4:15: invalid value 'x' for key 'npages'", -22 },
		{ "routing:\n- cpt[0]:\n    tiny:\n      pages: 0\n- enable: 1\n",
		  "r.yaml:4:7: unknown tiny key 'pages'", -95 },
		{ "routing:\n- cpt[x]: {}\n- enable: 1\n", "r.yaml:2:3: unknown routing key 'cpt[x]'", -95 },
		{ "routing:\n- cpt[0]: 7\n", "r.yaml:2:11: 'cpt[0]' must be a mapping", -22 },
		{ "routing:\n- 1\n", "r.yaml:2:3: routing entry must be a mapping", -22 },
		{ "routing: 1\n", "r.yaml:1:10: 'routing' must be a mapping or a list", -22 },
		{ "buffers:\n    tiny: -2\n", "r.yaml:2:5: tiny, small and large must be >= 0", -34 },
		{ "buffers:\n    tiny: 1\n    huge: 1\n", "r.yaml:3:5: unknown buffers key 'huge'", -95 },
		{ "buffers:\n    small: lots\n", "r.yaml:2:12: invalid value 'lots' for key 'small'", -22 },
		{ "buffers:\n- tiny: 1\n", "r.yaml:2:1: 'buffers' must be a mapping", -22 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char en[32];

		if (import_text(f, "", bad[i].yaml) != 234)
			fail_msg("import of\n%s exited %d", bad[i].yaml, f->rp.rc);
		ctl_has(&f->rp.err, bad[i].err, bad[i].yaml);
		snprintf(en, sizeof(en), "errno: %d\n", bad[i].errnum);
		ctl_has(&f->rp.err, en, bad[i].yaml);
		ctl_has(&f->rp.err, "add:\n-     import:", bad[i].yaml);
	}
	run_ok(f, "routing show", 0, NULL);
	ctl_has(&f->rp.out, "    - enable: 1\nbuffers:\n    tiny: 300\n    small: 16384\n"
		"    large: 1024\n", "after the bad imports");

	/* ulnetd --config */
	struct ybuf err;
	const char *cfg = "buffers:\n  tiny: 64\n  small: 128\n  large: 16\nrouting:\n  enable: 1\n";

	memset(&g, 0, sizeof(g));
	assert_int_equal(fix_init(&g), 0);
	ybuf_init(&err);
	assert_int_equal(ctl_apply_config(&g.ctx, "cfg.yaml", cfg, strlen(cfg), &err), 0);
	assert_string_equal(ybuf_str(&err), "");
	run_ok(&g, "routing show", 0, NULL);
	ctl_has(&g.rp.out, "    - enable: 3\nbuffers:\n    tiny: 64\n    small: 128\n    large: 16\n",
		"--config");
	cfg = "routing:\n  enable: 1\n  seq_no: 1\n";
	assert_int_equal(ctl_apply_config(&g.ctx, "cfg.yaml", cfg, strlen(cfg), &err), -EINVAL);
	ctl_has(&err, "cfg.yaml:3:3: unknown routing key 'seq_no'", "--config");
	ybuf_free(&err);
	ctl_fix_fini(&g);
}

/* peer show -v: a peer NI's router credits are its net's
 * peer_buffer_credits (peer_credits when 0), all available while nothing
 * is forwarded. */
static void test_peer_rtr_credits(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "net add --nid 127.0.0.3@tcp1 --peer-credits 4 --peer-buffer-credits 16 --accept none",
	       0, "");
	run_ok(f, "peer add --prim_nid 127.0.0.40@tcp1", 0, "");
	run_ok(f, "peer add --prim_nid 127.0.0.41@tcp", 0, "");
	run_ok(f, "peer show -v --nid 127.0.0.40@tcp1", 0, NULL);
	ctl_has(&f->rp.out, "            max_ni_tx_credits: 4\n            available_tx_credits: 4\n"
		"            min_tx_credits: 4\n            tx_q_num_of_buf: 0\n"
		"            available_rtr_credits: 16\n            min_rtr_credits: 16\n",
		"peer show -v tcp1");
	run_ok(f, "peer show -v --nid 127.0.0.41@tcp", 0, NULL);
	ctl_has(&f->rp.out, "            available_rtr_credits: 8\n            min_rtr_credits: 8\n",
		"peer show -v tcp");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_routing_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffers_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lnet_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help, setup, teardown),
		cmocka_unit_test_setup_teardown(test_routing_import, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_rtr_credits, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
