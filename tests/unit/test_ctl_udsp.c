/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_udsp.c - ulnetctl "udsp add | del | show", the "udsp info" of
 * net show / peer show -v 4, and the udsp: section of export and import,
 * against an in-process node (ctl_run), with lnetctl 2.17's texts and exit
 * codes (shared/reference/lnetctl-yaml lnetctl-udsp*.txt and
 * errors/udsp-*.txt). A rule's descriptors need not name anything the
 * node has, so the captures' 192.168.77.x NIDs are used as they are.
 *
 * The node has 127.0.0.2@tcp and 127.0.0.2@tcp1 (no acceptor).
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

static int setup(void **state)
{
	static const char *const lines[] = { "net add --nid 127.0.0.2@tcp",
						"net add --nid 127.0.0.2@tcp1", NULL };

	return ctl_fix_setup(state, NULL, lines);
}

static int teardown(void **state)
{
	return ctl_fix_teardown(state);
}

static void run_ok(struct ctl_fix *f, const char *line, int rc, const char *out)
{
	ctl_run_expect(&f->ctx, &f->rp, line, rc, out);
}

/* Run `line`: exit `rc`, nothing on stdout, exactly `err` on stderr. */
static void run_err(struct ctl_fix *f, const char *line, int rc, const char *err)
{
	int got = ctl_run_line(&f->ctx, &f->rp, NULL, 0, line);

	if (got != rc)
		fail_msg("'%s' exited %d, want %d: %s", line, got, rc, ybuf_str(&f->rp.err));
	assert_string_equal(ybuf_str(&f->rp.out), "");
	if (strcmp(ybuf_str(&f->rp.err), err) != 0)
		fail_msg("'%s' wrote\n%s--- want\n%s", line, ybuf_str(&f->rp.err), err);
}

#define CYERR(op, err, descr) op ":\n    - udsp:\n          errno: " err "\n          descr: \"" descr "\"\n"
#define U(idx, key, val, prio) "    - idx: " idx "\n      " key ": " val "\n      action:\n" \
	"          priority: " prio "\n"

/* lnetctl-udsp.txt and lnetctl-udsp-show.txt: rules appended and inserted
 * at --idx, shown in lnetctl's cYAML; del shifts the ones after it; --all
 * (and --idx -1) delete them all; no rules, no output. The capture's
 * "--rte ... --priority 4" and "--src tcp --dst tcp1 --priority 5" are
 * refused here (the kernel keeps them and never applies them). */
static void test_udsp_add_show_del(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "udsp show", 0, "");
	run_ok(f, "udsp add --src tcp --priority 0", 0, "");
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "src", "tcp", "0"));
	run_ok(f, "udsp add --dst tcp1 --priority 1", 0, "");
	run_ok(f, "udsp add --src 192.168.77.11@tcp --priority 2", 0, "");
	run_ok(f, "udsp add --dst 192.168.77.141@tcp1 --priority 3 --idx 1", 0, "");
	run_ok(f, "udsp add --dst 192.168.77.[140-141]@tcp1 --priority 6", 0, "");
	static const char all[] = "udsp:\n"
		U("0", "src", "tcp", "0")
		U("1", "dst", "192.168.77.141@tcp1", "3")
		U("2", "dst", "tcp1", "1")
		U("3", "src", "192.168.77.11@tcp", "2")
		U("4", "dst", "192.168.77.[140-141]@tcp1", "6");
	run_ok(f, "udsp show", 0, all);
	run_ok(f, "udsp show --idx -1", 0, all);
	/* one rule (lnetctl 2.17 aborts: a double free); past the last:
	 * nothing, exit 0 (errors/udsp-show-missing-idx.txt) */
	run_ok(f, "udsp show --idx 1", 0, "udsp:\n" U("1", "dst", "192.168.77.141@tcp1", "3"));
	run_ok(f, "udsp show --idx 42", 0, "");
	/* export (both forms) ends with them, after global: */
	run_ok(f, "export", 0, NULL);
	if (!strstr(ybuf_str(&f->rp.out), "    max_recovery_ping_interval: 900\n" "udsp:\n"))
		fail_msg("export: %s", ybuf_str(&f->rp.out));
	ctl_has(&f->rp.out, all, "export");
	run_ok(f, "export --backup", 0, NULL);
	ctl_has(&f->rp.out, all, "export --backup");

	run_ok(f, "udsp del --idx 0", 0, "");
	run_ok(f, "udsp show", 0, "udsp:\n"
	       U("0", "dst", "192.168.77.141@tcp1", "3")
	       U("1", "dst", "tcp1", "1")
	       U("2", "src", "192.168.77.11@tcp", "2")
	       U("3", "dst", "192.168.77.[140-141]@tcp1", "6"));
	run_ok(f, "udsp del --all", 0, "");
	run_ok(f, "udsp show", 0, "");
	/* without --priority: priority 0 (lnetctl's default) */
	run_ok(f, "udsp add --src tcp", 0, "");
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "src", "tcp", "0"));
	run_ok(f, "udsp del --idx -1", 0, "");
	run_ok(f, "udsp show", 0, "");
	/* a pair: no action shown (a preferred list); options abbreviated,
	 * numbers as strtol base 0 */
	run_ok(f, "udsp add --dst 127.0.0.[1-9]@tcp --src 127.0.0.2@tcp", 0, "");
	run_ok(f, "udsp add --dst tcp1 --rte 127.0.0.12@tcp", 0, "");
	run_ok(f, "udsp add --src tcp9 --prio 0x10 --idx 0", 0, "");
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "src", "tcp9", "16")
	       "    - idx: 1\n      src: 127.0.0.2@tcp\n      dst: 127.0.0.[1-9]@tcp\n"
	       "    - idx: 2\n      dst: tcp1\n      rte: 127.0.0.12@tcp\n");
}

/* errors/udsp-*.txt: lnetctl's own checks (plain lines on stdout, exit
 * 234), liblnetconfig's and the kernel's (cYAML on stderr, the errno as
 * exit code). */
static void test_udsp_errors(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "udsp add --src tcp --priority 1 --idx -3", 234, "Invalid index \"-3\"\n");
	run_ok(f, "udsp add --src tcp --priority -1", 234, "Invalid priority \"-1\"\n");
	run_ok(f, "udsp add --src tcp --priority x", 234, "Invalid priority \"x\"\n");
	run_ok(f, "udsp add --src tcp --priority 4294967295", 234, "Invalid priority \"4294967295\"\n");
	run_err(f, "udsp add --src foo9 --priority 1", 234,
		CYERR("add", "-22", "failed to parse src parameter"));
	run_err(f, "udsp add --dst 1.2.3@tcp", 234, CYERR("add", "-22", "failed to parse dst parameter"));
	run_err(f, "udsp add --dst tcp --rte 1.2.3.x@tcp", 234,
		CYERR("add", "-22", "failed to parse rte parameter"));
	run_err(f, "udsp add --src tcp --rte 1.1.1.1@tcp", 234,
		CYERR("add", "-22", "src and rte cannot be combined"));
	run_err(f, "udsp add --src tcp --dst tcp --rte 1.1.1.1@tcp", 234,
		CYERR("add", "-22", "The combination of src, dst and rte is not supported"));
	/* what the kernel keeps and never applies is refused (-95) */
	run_err(f, "udsp add --rte 192.168.77.12@tcp --priority 4", 234,
		CYERR("add", "-95", "cannot add udsp: rte without dst is not supported by ulnet "
		      "(the kernel keeps such a rule and never applies it)"));
	run_err(f, "udsp add --src tcp --dst tcp1 --priority 5", 234,
		CYERR("add", "-95", "cannot add udsp: a priority on src + dst is not supported by "
		      "ulnet (the kernel keeps such a rule and never applies it)"));
	run_err(f, "udsp add --src tcp --dst tcp1", 234,
		CYERR("add", "-95", "cannot add udsp: src as a net alone in a src + dst rule (it is "
		      "matched against NIDs only) is not supported by ulnet (the kernel keeps such "
		      "a rule and never applies it)"));
	/* errors/udsp-add-duplicate.txt */
	run_ok(f, "udsp add --src tcp --priority 0", 0, "");
	run_err(f, "udsp add --src tcp --priority 0", 114,
		CYERR("add", "114", "cannot add udsp: Operation already in progress"));
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "src", "tcp", "0"));
	/* errors/udsp-add-no-match.txt: the help, exit 0 */
	run_ok(f, "udsp add --priority 1", 0,
	       "udsp add: add a udsp\n"
	       "\t--src nid|net: ip2nets syntax specifying the local NID or network to match.\n"
	       "\t--dst nid:     ip2nets syntax specifying the remote NID to match.\n"
	       "\t--rte nid:     ip2nets syntax specifying the router NID to match.\n"
	       "\t--priority p:  Assign priority value p where p >= 0.\n"
	       "\t               Note: 0 is the highest priority.\n"
	       "\t--idx n:       Insert the rule in the n'th position on the list of rules.\n"
	       "\t               By default, rules are appended to the end of the rule list.\n\n");
	/* errors/udsp-del-*.txt */
	run_ok(f, "udsp del", 234, "Must specify --idx or --all\n");
	run_ok(f, "udsp del --all --idx 0", 234, "Cannot combine --all with --idx\n");
	run_ok(f, "udsp del --idx -2", 234, "Invalid index \"-2\"\n");
	run_err(f, "udsp del --idx 42", 254,
		CYERR("add", "-2", "cannot del udsp: No such file or directory"));
	run_ok(f, "udsp show --idx -5", 234, "Invalid index \"-5\"\n");
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "src", "tcp", "0"));
	/* unknown options and words: refused, nothing added */
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "udsp add --src tcp1 --action x"), 234);
	ctl_has(&f->rp.err, "unrecognized option '--action'", "udsp add --action");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "udsp add --src tcp1 stray"), 234);
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "src", "tcp", "0"));
}

/* LNet down: what lnetctl checks itself first, then the kernel's
 * "Network is down"; a new instance starts without rules. */
static void test_udsp_lnet_down(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "udsp add --src tcp --priority 1", 0, "");
	run_ok(f, "lnet unconfigure", 0, "");
	run_err(f, "udsp add --src foo9", 234, CYERR("add", "-22", "failed to parse src parameter"));
	run_err(f, "udsp add --src tcp", 100, CYERR("add", "100", "cannot add udsp: Network is down"));
	run_err(f, "udsp del --all", 156, CYERR("add", "-100", "cannot del udsp: Network is down"));
	run_err(f, "udsp show", 156, CYERR("show", "-100", "cannot get udsp: Network is down"));
	run_ok(f, "udsp del", 234, "Must specify --idx or --all\n");
	run_ok(f, "lnet configure", 0, "");
	run_ok(f, "udsp show", 0, "");
}

/* net show / peer show -v 4 (and -v 5, as sanity-lnet asks): the udsp
 * info of each NI and peer NI, -1 for none; a peer NI's preferred lists. */
static void test_udsp_info(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "peer add --prim_nid 127.0.0.5@tcp --nid 127.0.0.6@tcp,127.0.0.5@tcp1", 0, "");
	run_ok(f, "route add --net tcp7 --gateway 127.0.0.12@tcp", 0, "");
	run_ok(f, "udsp add --src tcp --priority 0", 0, "");
	run_ok(f, "udsp add --src 127.0.0.2@tcp --priority 2", 0, "");
	run_ok(f, "udsp add --dst tcp1 --priority 1", 0, "");
	run_ok(f, "udsp add --dst 127.0.0.[5-6]@tcp --priority 6", 0, "");
	run_ok(f, "udsp add --dst 127.0.0.6@tcp --src 127.0.0.2@tcp", 0, "");
	run_ok(f, "udsp add --dst 127.0.0.6@tcp --rte 127.0.0.[10-19]@tcp", 0, "");
	run_ok(f, "net show -v 5", 0, NULL);
	ctl_has(&f->rp.out, "-     nid: 0@lo\n", "net show");
	ctl_has(&f->rp.out, "            udsp info:\n                  net priority: -1\n"
		"                  nid priority: -1\n            sent_stats:\n", "net show");
	ctl_has(&f->rp.out, "            udsp info:\n                  net priority: 0\n"
		"                  nid priority: 2\n", "net show");
	run_ok(f, "net show -v 3", 0, NULL);
	if (strstr(ybuf_str(&f->rp.out), "udsp info"))
		fail_msg("net show -v 3 shows udsp info");
	run_ok(f, "peer show -v 4 --nid 127.0.0.5@tcp", 0, NULL);
	ctl_has(&f->rp.out, "      -     nid: 127.0.0.5@tcp\n            udsp info:\n"
		"                  net priority: -1\n                  nid priority: 6\n"
		"            state: NA\n", "peer show");
	ctl_has(&f->rp.out, "      -     nid: 127.0.0.6@tcp\n            udsp info:\n"
		"                  net priority: -1\n                  nid priority: 6\n"
		"                  Preferred gateway NIDs:\n"
		"                        NID-0: 127.0.0.12@tcp\n"
		"                  Preferred source NIDs:\n"
		"                        NID-0: 127.0.0.2@tcp\n"
		"            state: NA\n", "peer show");
	ctl_has(&f->rp.out, "      -     nid: 127.0.0.5@tcp1\n            udsp info:\n"
		"                  net priority: 1\n                  nid priority: -1\n", "peer show");
	/* del --all: back to none */
	run_ok(f, "udsp del --all", 0, "");
	run_ok(f, "peer show -v 4 --nid 127.0.0.5@tcp", 0, NULL);
	if (strstr(ybuf_str(&f->rp.out), "Preferred") || !strstr(ybuf_str(&f->rp.out), "nid priority: -1"))
		fail_msg("after del --all: %s", ybuf_str(&f->rp.out));
}

static int import_text(struct ctl_fix *f, const char *opt, const char *text)
{
	char line[64];

	snprintf(line, sizeof(line), "import %s u.yaml", opt);
	return ctl_run_line(&f->ctx, &f->rp, text, strlen(text), line);
}

/* import takes the udsp: list export writes (at each idx; a rule there
 * already is no error); --del deletes the rules of the file by their
 * descriptors; unknown keys and bad values are refused with their place. */
static void test_udsp_import(void **state)
{
	struct ctl_fix *f = *state;
	static const char file[] = "udsp:\n"
		U("0", "src", "tcp", "1")
		U("1", "dst", "tcp", "0")
		"    - idx: 2\n      src: 127.0.0.2@tcp1\n      dst: 127.0.0.[1-3]@tcp1\n";

	assert_int_equal(import_text(f, "", file), 0);
	run_ok(f, "udsp show", 0, file);
	assert_int_equal(import_text(f, "", file), 0);
	run_ok(f, "udsp show", 0, file);
	/* the round trip: export --backup, a new instance, import, export */
	run_ok(f, "export --backup", 0, NULL);
	char *exp = strdup(ybuf_str(&f->rp.out));

	assert_non_null(exp);
	run_ok(f, "lnet unconfigure", 0, "");
	run_ok(f, "lnet configure", 0, "");
	assert_int_equal(import_text(f, "", exp), 0);
	run_ok(f, "export --backup", 0, exp);
	free(exp);
	run_ok(f, "net show -v 4 --net tcp", 0, NULL);
	ctl_has(&f->rp.out, "net priority: 1\n", "net show after import");
	/* an entry without idx goes last; priority may be given flat */
	assert_int_equal(import_text(f, "", "udsp:\n- src: tcp5\n  priority: 4\n"), 0);
	run_ok(f, "udsp show --idx 3", 0, "udsp:\n" U("3", "src", "tcp5", "4"));
	/* --del: by descriptors, wherever the rules are now */
	assert_int_equal(import_text(f, "--del", "udsp:\n"
				     "- idx: 0\n  dst: 127.0.0.[1-3]@tcp1\n  src: 127.0.0.2@tcp1\n"
				     "- idx: 1\n  src: tcp\n  action:\n    priority: 1\n"), 0);
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "dst", "tcp", "0") U("1", "src", "tcp5", "4"));
	assert_int_equal(import_text(f, "--del", "udsp:\n- src: tcp\n"), 234);
	ctl_has(&f->rp.err, "u.yaml:2:3: cannot del udsp: no such rule", "import --del");
	/* refused, with the place */
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "udsp:\n- src: tcp\n  seq_no: 1\n", "u.yaml:3:3: unknown udsp key 'seq_no'" },
		{ "udsp:\n- src: tcp\n  action:\n    pref: 1\n", "u.yaml:4:5: unknown udsp action 'pref'" },
		{ "udsp:\n- src: tcp\n  action: 1\n", "u.yaml:3:11: 'action' must be a mapping" },
		{ "udsp:\n- src: tcp\n  idx: -1\n", "u.yaml:3:8: invalid value for 'idx' (0 or more)" },
		{ "udsp:\n- src: tcp\n  priority: -1\n", "u.yaml:3:13: invalid value for 'priority'" },
		{ "udsp:\n- src: foo9\n", "u.yaml:2:3: failed to parse src parameter" },
		{ "udsp:\n- rte: 1.1.1.1@tcp\n", "u.yaml:2:3: cannot add udsp: rte without dst is not supported by ulnet" },
		{ "udsp:\n- idx: 0\n", "u.yaml:2:3: Missing required argument(s)" },
		{ "udsp:\n- [tcp]\n", "u.yaml:2:3: udsp entry must be a mapping" },
		{ "udsp: tcp\n", "u.yaml:1:7: 'udsp' must be a list" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (import_text(f, "", bad[i].text) != 234)
			fail_msg("'%s' imported", bad[i].text);
		ctl_has(&f->rp.err, bad[i].err, bad[i].text);
		/* a key or action ulnet does not know is refused as unsupported */
		if (strstr(bad[i].err, "unknown"))
			ctl_has(&f->rp.err, "errno: -95\n", bad[i].text);
	}
	run_ok(f, "udsp show", 0, "udsp:\n" U("0", "dst", "tcp", "0") U("1", "src", "tcp5", "4"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_udsp_add_show_del, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udsp_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udsp_lnet_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udsp_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udsp_import, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
