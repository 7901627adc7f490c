/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_route.c - ulnetctl "route add | del | show", the route: section
 * of export and import, against an in-process node (ctl_run), with
 * lnetctl 2.17's texts and exit codes (shared/reference/lnetctl-yaml
 * lnetctl-route-*.txt and errors/route-*.txt; tests/golden/err-route-*).
 *
 * The node has 127.0.0.2@tcp (no acceptor); 127.0.0.12@tcp plays the
 * router of the captures (192.168.77.12@tcp). ulnet has no router checker
 * yet, so a new route stays "up" and "multi-hop".
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

#define GW "127.0.0.12@tcp"
#define R_HDR "route:\n"
#define R(net, gw) "-     net: " net "\n      gateway: " gw "\n"
#define RV(net, gw, hop, prio) R(net, gw) "      hop: " hop "\n      priority: " prio "\n" \
	"      state: up\n      type: multi-hop\n"

static int setup(void **state)
{
	static const char *const lines[] = { "net add --nid 127.0.0.2@tcp --accept none",
						NULL };

	return ctl_fix_setup(state, NULL, lines);
}

static int teardown(void **state)
{
	return ctl_fix_teardown(state);
}

/* Run `line`: exit code `rc`, stdout `out` exactly (NULL: not checked),
 * and stderr empty on success. */
static void run_ok(struct ctl_fix *f, const char *line, int rc, const char *out)
{
	ctl_run_expect(&f->ctx, &f->rp, line, rc, out);
}

/* Run `line`: exit 234, stderr is the golden file, stdout empty. */
static void run_err(struct ctl_fix *f, const char *line, const char *golden)
{
	int got = ctl_run_line(&f->ctx, &f->rp, NULL, 0, line);

	if (got != 234)
		fail_msg("'%s' exited %d, want 234: %s", line, got, ybuf_str(&f->rp.err));
	assert_string_equal(ybuf_str(&f->rp.out), "");
	ctl_check_golden(golden, &f->rp.err);
}

/* Run `line`: exit 234, stderr is lnetctl's error YAML with `op`, `errno`
 * and `descr`. */
static void run_err_text(struct ctl_fix *f, const char *line, const char *op, int err,
			 const char *descr)
{
	char want[512];

	snprintf(want, sizeof(want), "---\n%s:\n-     route:\n      errno: %d\n      descr: ! \"%s\"\n...\n",
		 op, err, descr);
	int got = ctl_run_line(&f->ctx, &f->rp, NULL, 0, line);

	if (got != 234)
		fail_msg("'%s' exited %d, want 234: %s", line, got, ybuf_str(&f->rp.err));
	assert_string_equal(ybuf_str(&f->rp.out), "");
	if (strcmp(ybuf_str(&f->rp.err), want) != 0)
		fail_msg("'%s' wrote\n%s--- want\n%s", line, ybuf_str(&f->rp.err), want);
}

/* add, show at every level, del; no routes: no output at all. */
static void test_route_add_show_del(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route show", 0, "");
	run_ok(f, "route show -v", 0, "");
	run_ok(f, "route add --net tcp1 --gateway " GW, 0, "");
	run_ok(f, "route show", 0, R_HDR R("tcp1", GW));
	/* -v takes no level: "-v 2", "-v 3", "-v 4" are "-v" */
	static const char *const v[] = { "route show -v", "route show -v 2", "route show -v 3",
					 "route show -v 4", "route show --verbose" };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		run_ok(f, v[i], 0, R_HDR RV("tcp1", GW, "-1", "0"));
	/* hop and priority as given; "--priority -1" is unset (0) */
	run_ok(f, "route add --net tcp2 --gateway " GW " --hop 2 --priority 3", 0, "");
	run_ok(f, "route add --net tcp3 --gateway " GW " --priority -1", 0, "");
	run_ok(f, "route show -v", 0, R_HDR RV("tcp1", GW, "-1", "0") RV("tcp2", GW, "2", "3")
	       RV("tcp3", GW, "-1", "0"));
	run_ok(f, "export --backup", 0, NULL);
	ctl_has(&f->rp.out, "route:\n" R("tcp1", GW) "      hop: -1\n      priority: 0\n"
		R("tcp2", GW) "      hop: 2\n      priority: 3\n", "export --backup");
	/* del: the route goes, the others stay */
	run_ok(f, "route del --net tcp2 --gateway " GW, 0, "");
	run_ok(f, "route del --net tcp3 --gateway " GW, 0, "");
	run_ok(f, "route show -v", 0, R_HDR RV("tcp1", GW, "-1", "0"));
	/* a gateway with no route to an existing net: nothing, exit 0 */
	run_ok(f, "route del --net tcp1 --gateway 127.0.0.99@tcp", 0, "");
	run_ok(f, "route show", 0, R_HDR R("tcp1", GW));
	run_ok(f, "route del --net tcp1 --gateway " GW, 0, "");
	run_ok(f, "route show -v", 0, "");
}

/* --hop/--priority that are not numbers are dropped (unset), as lnetctl
 * does; --hop and --hop-count (-c) are one option, the last one wins. */
static void test_route_add_numbers(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route add --net tcp2 --gateway " GW " --hop abc --priority x3", 0, "");
	run_ok(f, "route add --net tcp3 --gateway " GW " --hop 300 --hop-count 4", 0, "");
	run_ok(f, "route add --net tcp4 --gateway " GW " --hop-count 300 --hop=5 -p 0x10", 0, "");
	run_ok(f, "route add --net tcp5 --gateway " GW " -c 6", 0, "");
	run_ok(f, "route show -v", 0, R_HDR RV("tcp2", GW, "-1", "0") RV("tcp3", GW, "4", "0")
	       RV("tcp4", GW, "5", "16") RV("tcp5", GW, "6", "0"));
	run_err(f, "route add --net tcp6 --gateway " GW " --hop 4 --hop-count 300",
		"err-route-add-badhop.yaml");
	run_ok(f, "route show --net tcp6", 0, "");
}

/* A gateway list or range: one route per NID, show and del the same way. */
static void test_route_gateway_range(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route add --net tcp2 --gateway 127.0.0.[11-12]@tcp,127.0.0.20@tcp", 0, "");
	run_ok(f, "route show", 0, R_HDR R("tcp2", "127.0.0.11@tcp") R("tcp2", "127.0.0.12@tcp")
	       R("tcp2", "127.0.0.20@tcp"));
	/* the show filter is one per NID, results one after another */
	run_ok(f, "route show --gateway 127.0.0.20@tcp,127.0.0.[11-12/1]@tcp", 0,
	       R_HDR R("tcp2", "127.0.0.20@tcp") R("tcp2", "127.0.0.11@tcp")
	       R("tcp2", "127.0.0.12@tcp"));
	run_ok(f, "route del --net tcp2 --gateway 127.0.0.[11,20]@tcp", 0, "");
	run_ok(f, "route show", 0, R_HDR R("tcp2", "127.0.0.12@tcp"));
	/* the first error stops: .12 is a duplicate, .13 is not added */
	run_err(f, "route add --net tcp2 --gateway 127.0.0.[12-13]@tcp", "err-route-add-dup.yaml");
	run_ok(f, "route show", 0, R_HDR R("tcp2", "127.0.0.12@tcp"));
}

/* Filters: only with --net or --gateway are any sent (then all apply,
 * exactly); --hop/--priority alone are refused (lnetctl lists every route
 * for them); an unparsable --net filters nothing; no match prints nothing,
 * exit 0. */
static void test_route_show_filters(void **state)
{
	struct ctl_fix *f = *state;
	const char *all = R_HDR R("tcp1", GW) R("tcp2", GW) R("tcp2", "127.0.0.13@tcp");

	run_ok(f, "route add --net tcp1 --gateway " GW, 0, "");
	run_ok(f, "route add --net tcp2 --gateway " GW " --hop 2 --priority 3", 0, "");
	run_ok(f, "route add --net tcp2 --gateway 127.0.0.13@tcp", 0, "");
	run_ok(f, "route show --net tcp1", 0, R_HDR R("tcp1", GW));
	run_ok(f, "route show --net tcp9", 0, "");
	run_ok(f, "route show --gateway " GW " -v", 0,
	       R_HDR RV("tcp1", GW, "-1", "0") RV("tcp2", GW, "2", "3"));
	run_ok(f, "route show --gateway 127.0.0.99@tcp", 0, "");
	/* lnetctl lists every route for these: refused */
	run_err_text(f, "route show --hop 2", "show", -95,
		     "--hop without --net or --gateway is not supported by ulnet (lnetctl lists every route)");
	run_err_text(f, "route show --priority 3", "show", -95,
		     "--priority without --net or --gateway is not supported by ulnet (lnetctl lists every route)");
	run_err_text(f, "route show --hop-count 1 --priority 7", "show", -95,
		     "--hop-count without --net or --gateway is not supported by ulnet (lnetctl lists every route)");
	run_ok(f, "route show --net tcp2 --hop 2", 0, R_HDR R("tcp2", GW));
	run_ok(f, "route show --net tcp2 --priority 0", 0, R_HDR R("tcp2", "127.0.0.13@tcp"));
	run_ok(f, "route show --gateway " GW " --priority 3", 0, R_HDR R("tcp2", GW));
	run_ok(f, "route show --net tcp2 --hop x", 0, R_HDR R("tcp2", GW) R("tcp2", "127.0.0.13@tcp"));
	run_ok(f, "route show --net foo9", 0, all);
	run_ok(f, "route show --net foo9 --hop 2", 0, R_HDR R("tcp2", GW));
	run_err_text(f, "route show --gateway bogus", "show", -22,
		     "\\\"Unable to parse nidlist: no valid NIDs in string\\\"");
	run_err_text(f, "route show --gateway 1.2.3.4@foo -v", "show", -22,
		     "\\\"Unable to parse nidlist: invalid NID in nidstr\\\"");
}

/* Every failure: lnetctl's error YAML on stderr, exit 234; nothing added. */
static void test_route_add_errors(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route add --net tcp1 --gateway " GW, 0, "");
	run_err(f, "route add --net tcp1 --gateway " GW, "err-route-add-dup.yaml");
	run_err(f, "route add --net foo9 --gateway " GW, "err-route-add-badnet.yaml");
	run_err(f, "route add --net tcp2 --gateway " GW " --hop 0", "err-route-add-badhop.yaml");
	run_err(f, "route add --net tcp2 --gateway " GW " --hop 256", "err-route-add-badhop.yaml");
	run_err(f, "route add --net tcp2 --gateway 127.0.0.141@tcp1", "err-route-add-noni.yaml");
	run_err(f, "route add --net tcp --gateway " GW, "err-route-add-localnet.yaml");
	run_err(f, "route add --net tcp2 --gateway 127.0.0.12@foo", "err-route-add-badgw.yaml");
	run_err(f, "route add --net tcp2 --gateway notanid", "err-route-add-badgw-nonid.yaml");
	run_err_text(f, "route add --net lo --gateway " GW, "add", -13, "setting @lo not allowed");
	run_err_text(f, "route add --net tcp2 --gateway " GW " --priority -2", "add", -22,
		     "invalid priority, must not be negative");
	run_err_text(f, "route add --net tcp2 --gateway 0@lo", "add", -22,
		     "invalid settings for route creation");
	run_err_text(f, "route add --net tcp2 --gateway 127.0.0.*@tcp", "add", -22,
		     "asterisk not allowed in nidstring");
	run_err_text(f, "route add --net tcp2 --gateway 127.0.0.[5-2]@tcp", "add", -34,
		     "\\\"Unable to parse nidlist: range is wrong order\\\"");
	/* lnetctl lists --health_sensitivity but drops it (help, exit 0);
	 * ulnet refuses it, naming it, and adds nothing */
	run_err_text(f, "route add --net tcp2 --gateway " GW " --health_sensitivity 2", "add", -95,
		     "--health_sensitivity is not supported by ulnet");
	/* the mandatory options: a plain line on stdout, exit 234 */
	static const struct {
		const char *line, *out;
	} miss[] = {
		{ "route add --net tcp2", "missing mandatory parameters:'gateway'\n" },
		{ "route add --gateway " GW, "missing mandatory parameters:'net'\n" },
		{ "route add", "missing mandatory parameters:'net , gateway'\n" },
		{ "route add --hop 2", "missing mandatory parameters:'net , gateway'\n" },
		{ "route del --net tcp5", "missing mandatory parameters:'gateway'\n" },
		{ "route del --gateway " GW, "missing mandatory parameters:'net'\n" },
	};
	for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++) {
		run_ok(f, miss[i].line, 234, miss[i].out);
		assert_string_equal(ybuf_str(&f->rp.err), "");
	}
	run_ok(f, "route show -v", 0, R_HDR RV("tcp1", GW, "-1", "0"));
	/* the gateway may be one of our own NIDs (lnetctl accepts it) */
	run_ok(f, "route add --net tcp2 --gateway 127.0.0.2@tcp", 0, "");
	run_ok(f, "route show --net tcp2", 0, R_HDR R("tcp2", "127.0.0.2@tcp"));
	run_ok(f, "route del --net tcp2 --gateway 127.0.0.2@tcp", 0, "");
}

static void test_route_del_errors(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route add --net tcp1 --gateway " GW, 0, "");
	run_err(f, "route del --net tcp5 --gateway " GW, "err-route-del-missing.yaml");
	run_err_text(f, "route del --net foo9 --gateway " GW, "del", -6,
		     "setting LNET_NET_ANY not allowed");
	run_err_text(f, "route del --net lo --gateway " GW, "del", -13, "setting @lo not allowed");
	run_err_text(f, "route del --net tcp1 --gateway x", "del", -22,
		     "\\\"Unable to parse nidlist: no valid NIDs in string\\\"");
	run_ok(f, "route show", 0, R_HDR R("tcp1", GW));
	/* any NID of the gateway peer names its route, for del and for the
	 * duplicate check; show keeps the NID given */
	run_ok(f, "peer add --prim_nid 127.0.0.30@tcp --nid 127.0.0.31@tcp", 0, "");
	run_ok(f, "route add --net tcp3 --gateway 127.0.0.30@tcp", 0, "");
	run_err(f, "route add --net tcp3 --gateway 127.0.0.31@tcp", "err-route-add-dup.yaml");
	run_ok(f, "route show --net tcp3", 0, R_HDR R("tcp3", "127.0.0.30@tcp"));
	run_ok(f, "route del --net tcp3 --gateway 127.0.0.31@tcp", 0, "");
	run_ok(f, "route show", 0, R_HDR R("tcp1", GW));
}

/* While LNet is down: the kernel's "Network is down", exit 234; the
 * mandatory options and the gateway list are checked first. */
static void test_route_lnet_down(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route add --net tcp1 --gateway " GW, 0, "");
	run_ok(f, "lnet unconfigure", 0, "");
	run_err_text(f, "route show", "show", -100, "Network is down");
	run_err_text(f, "route add --net tcp2 --gateway " GW, "add", -100, "Network is down");
	run_err_text(f, "route del --net tcp1 --gateway " GW, "del", -100, "Network is down");
	run_ok(f, "route add --net tcp2", 234, "missing mandatory parameters:'gateway'\n");
	run_err(f, "route add --net tcp2 --gateway notanid", "err-route-add-badgw-nonid.yaml");
	/* export still prints the module parameters, nothing else (the
	 * kernel's; sanity-lnet saves it as the "global" part it expects) */
	run_ok(f, "export --backup", 0, NULL);
	if (strncmp(ybuf_str(&f->rp.out), "global:\n", 8) != 0 ||
	    !strstr(ybuf_str(&f->rp.out), "    discovery: 1\n"))
		fail_msg("export --backup while down: %s", ybuf_str(&f->rp.out));
	/* a new instance starts without routes */
	run_ok(f, "lnet configure", 0, "");
	run_ok(f, "route show", 0, "");
}

/* The help names the options; --health_sensitivity says it is refused. */
static void test_route_help(void **state)
{
	struct ctl_fix *f = *state;

	run_ok(f, "route add --help", 0, NULL);
	ctl_has(&f->rp.out, "--gateway: gateway nid", "route add --help");
	ctl_has(&f->rp.out, "--hop|hop-count", "route add --help");
	ctl_has(&f->rp.out, "--health_sensitivity: not supported by ulnet", "route add --help");
	run_ok(f, "route --help", 0, NULL);
	if (strstr(ybuf_str(&f->rp.out), "routing is not supported"))
		fail_msg("route help still says routing is not supported");
	run_ok(f, "route show --help", 0, NULL);
	ctl_has(&f->rp.out, "--verbose", "route show --help");
}

/* export: route: between net: and peer:, full (route show -v) and
 * --backup (net, gateway, hop, priority). */
static void test_route_export(void **state)
{
	struct ctl_fix *f = *state;
	const char *net, *route, *peer;

	run_ok(f, "route add --net tcp2 --gateway " GW " --hop 2 --priority 3", 0, "");
	run_ok(f, "export", 0, NULL);
	net = strstr(ybuf_str(&f->rp.out), "net:\n");
	route = strstr(ybuf_str(&f->rp.out), "\nroute:\n" RV("tcp2", GW, "2", "3") "peer:\n");
	peer = strstr(ybuf_str(&f->rp.out), "\npeer:\n");
	if (!net || !route || !peer || !(net < route && route < peer))
		fail_msg("export: route: not between net: and peer:\n%s", ybuf_str(&f->rp.out));
	run_ok(f, "export --backup", 0, NULL);
	ctl_has(&f->rp.out, "\nroute:\n" R("tcp2", GW) "      hop: 2\n      priority: 3\npeer:\n",
		"export --backup");
	run_ok(f, "route del --net tcp2 --gateway " GW, 0, "");
	run_ok(f, "export", 0, NULL);
	if (strstr(ybuf_str(&f->rp.out), "\nroute:\n"))
		fail_msg("export without routes has a route: section");
}

static int import_text(struct ctl_fix *f, const char *opt, const char *text)
{
	char line[64];

	snprintf(line, sizeof(line), "import %s r.yaml", opt);
	return ctl_run_line(&f->ctx, &f->rp, text, strlen(text), line);
}

/* import (and ulnetd --config) take a route: list as "route add" does;
 * import --del deletes those routes; unknown keys are refused. */
static void test_route_import(void **state)
{
	struct ctl_fix *f = *state;

	assert_int_equal(import_text(f, "", "route:\n"
				     "-     net: tcp1\n      gateway: " GW "\n"
				     "-     net: tcp2\n      gateway: 127.0.0.[12-13]@tcp\n"
				     "      hop: 2\n      priority: 3\n"
				     "-     net: tcp3\n      gateway: " GW "\n      hop: -1\n"
				     "      priority: 0\n      state: down\n      type: single-hop\n"), 0);
	run_ok(f, "route show -v", 0, R_HDR RV("tcp1", GW, "-1", "0") RV("tcp2", GW, "2", "3")
	       RV("tcp2", "127.0.0.13@tcp", "2", "3") RV("tcp3", GW, "-1", "0"));
	/* what export writes imports back (here: onto a new node) */
	run_ok(f, "export", 0, NULL);
	char *exp = strdup(ybuf_str(&f->rp.out));
	struct ctl_fix g;
	struct ulnet_opts opts;

	assert_non_null(exp);
	memset(&opts, 0, sizeof(opts));
	assert_int_equal(ctl_ctx_init(&g.ctx, &opts, true), 0);
	g.ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&g.rp);
	/* our NI is taken from the export: accept none from the daemon's
	 * defaults */
	snprintf(g.ctx.accept, sizeof(g.ctx.accept), "none");
	assert_int_equal(import_text(&g, "", exp), 0);
	run_ok(&g, "route show -v", 0, R_HDR RV("tcp1", GW, "-1", "0") RV("tcp2", GW, "2", "3")
	       RV("tcp2", "127.0.0.13@tcp", "2", "3") RV("tcp3", GW, "-1", "0"));
	/* --del removes the routes of the file */
	assert_int_equal(import_text(&g, "--del", "route:\n-     net: tcp2\n      gateway: "
				     "127.0.0.[12-13]@tcp\n      hop: 2\n"), 0);
	run_ok(&g, "route show", 0, R_HDR R("tcp1", GW) R("tcp3", GW));
	assert_int_equal(import_text(&g, "--del", "route:\n-     net: tcp9\n      gateway: " GW "\n"),
			 234);
	ctl_has(&g.rp.err, "r.yaml:2:7: cannot del route to tcp9 through 127.0.0.12@tcp: "
		"failed to delete route", "import --del");
	ctl_has(&g.rp.err, "errno: -2", "import --del");
	ctl_reply_free(&g.rp);
	ctl_ctx_fini(&g.ctx);
	free(exp);

	/* errors name the file, line and column, with route add's texts */
	static const struct {
		const char *yaml, *err;
		int errnum;
	} bad[] = {
		{ "route:\n- net: tcp1\n  gateway: " GW "\n",
		  "r.yaml:2:3: cannot add route to tcp1 through 127.0.0.12@tcp: Route already exists "
		  "or the specified network is local", -17 },
		{ "route:\n- net: tcp4\n  gateway: " GW "\n  bogus: 1\n",
		  "r.yaml:4:3: unknown route key 'bogus'", -95 },
		{ "route:\n- net: tcp4\n  gateway: " GW "\n  health_sensitivity: 2\n",
		  "r.yaml:4:3: route key 'health_sensitivity' is not supported by ulnet", -95 },
		{ "route:\n- net: tcp4\n  gateway: " GW "\n  hop: 0\n",
		  "r.yaml:2:3: cannot add route to tcp4 through 127.0.0.12@tcp: invalid hop count "
		  "must be between 1 and 255", -22 },
		{ "route:\n- net: tcp4\n  gateway: " GW "\n  hop: two\n",
		  "r.yaml:4:8: invalid value 'two' for key 'hop'", -22 },
		{ "route:\n- net: tcp4\n  gateway: 127.0.0.9@tcp7\n",
		  "No interface configured on the same net as gateway", -113 },
		{ "route:\n- net: tcp4\n  gateway: nonid\n",
		  "r.yaml:3:12: bad 'gateway': \\\"Unable to parse nidlist: no valid NIDs in string", -22 },
		{ "route:\n- net: tcp4\n", "r.yaml:2:3: route entry without 'gateway'", -22 },
		{ "route:\n- net: tcp4\n  gateway: " GW "\n  state: sideways\n",
		  "r.yaml:4:10: invalid value for 'state' (up or down)", -22 },
		{ "route:\n- net: tcp4\n  gateway: " GW "\n  type: warp\n",
		  "r.yaml:4:9: invalid value for 'type' (single-hop or multi-hop)", -22 },
		{ "route:\n  net: tcp4\n", "r.yaml:2:3: 'route' must be a list", -22 },
		{ "route:\n- tcp4\n", "r.yaml:2:3: route entry must be a mapping", -22 },
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
	/* none of them added a route */
	run_ok(f, "route show", 0, R_HDR R("tcp1", GW) R("tcp2", GW) R("tcp2", "127.0.0.13@tcp")
	       R("tcp3", GW));

	/* ulnetd --config */
	struct ybuf err;
	const char *cfg = "route:\n- net: tcp5\n  gateway: " GW "\n  priority: 1\n";

	ybuf_init(&err);
	assert_int_equal(ctl_apply_config(&f->ctx, "cfg.yaml", cfg, strlen(cfg), &err), 0);
	assert_string_equal(ybuf_str(&err), "");
	run_ok(f, "route show --net tcp5 -v", 0, R_HDR RV("tcp5", GW, "-1", "1"));
	cfg = "route:\n- net: tcp6\n  gateway: " GW "\n  seq_no: 1\n";
	assert_int_equal(ctl_apply_config(&f->ctx, "cfg.yaml", cfg, strlen(cfg), &err), -EINVAL);
	ctl_has(&err, "cfg.yaml:4:3: unknown route key 'seq_no'", "--config");
	ybuf_free(&err);
}

/* The gateway list expansion on its own: order, ranges, steps, lists,
 * several brackets, and lnetctl's texts for bad lists. */
static void test_nid_range_expand(void **state)
{
	(void)state;
	ulnet_nid_t nids[CTL_MAX_GW_NIDS];
	char nb[ULNET_NIDSTR_SIZE], got[1024];
	const char *msg = NULL;
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "10.0.0.1@tcp", "10.0.0.1@tcp" },
		{ "10.0.0.1@tcp,10.0.0.2@tcp1", "10.0.0.1@tcp 10.0.0.2@tcp1" },
		{ "10.0.0.[1-3]@tcp", "10.0.0.1@tcp 10.0.0.2@tcp 10.0.0.3@tcp" },
		{ "10.0.0.[1-7/3]@tcp", "10.0.0.1@tcp 10.0.0.4@tcp 10.0.0.7@tcp" },
		{ "10.0.0.[9,2-3]@o2ib", "10.0.0.9@o2ib 10.0.0.2@o2ib 10.0.0.3@o2ib" },
		{ "10.0.[1-2].[5,6]@tcp", "10.0.1.5@tcp 10.0.1.6@tcp 10.0.2.5@tcp 10.0.2.6@tcp" },
		{ "[1-2]@gni,10.0.0.1@tcp", "1@gni 2@gni 10.0.0.1@tcp" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int n = ctl_nid_range_expand(ok[i].in, nids, CTL_MAX_GW_NIDS, &msg, NULL);

		if (n < 0)
			fail_msg("'%s': %d %s", ok[i].in, n, msg);
		got[0] = '\0';
		for (int j = 0; j < n; j++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", j ? " " : "",
				 ulnet_nid_str(&nids[j], nb));
		assert_string_equal(got, ok[i].out);
	}
	static const struct {
		const char *in, *msg;
		int err;
	} bad[] = {
		{ "10.0.0.1", "\"Unable to parse nidlist: no valid NIDs in string\"", -EINVAL },
		{ "", "\"Unable to parse nidlist: no valid NIDs in string\"", -EINVAL },
		{ "*@tcp", "asterisk not allowed in nidstring", -EINVAL },
		{ "<?>@tcp", "\"Unable to parse nidlist: LNET_ANY_NID is unsupported\"", -EINVAL },
		{ "10.0.0.1@foo", "\"Unable to parse nidlist: invalid NID in nidstr\"", -EINVAL },
		{ "10.0.0.1@tcp,,10.0.0.2@tcp", "\"Unable to parse nidlist: invalid NID in nidstr\"", -EINVAL },
		{ "10.0.0.[1-3@tcp", "\"Unable to parse nidlist: incomplete bracket set\"", -EINVAL },
		{ "10.0.0.1-3]@tcp", "\"Unable to parse nidlist: incomplete bracket set\"", -EINVAL },
		{ "10.0.0.[3-1]@tcp", "\"Unable to parse nidlist: range is wrong order\"", -ERANGE },
		{ "10.0.0.[1-]@tcp", "\"Unable to parse nidlist: range needs number after -\"", -ERANGE },
		{ "10.0.0.[1-3/]@tcp", "\"Unable to parse nidlist: range needs number after /\"", -ERANGE },
		{ "10.0.0.[1,]@tcp", "\"Unable to parse nidlist: range needs number after ,\"", -ERANGE },
		{ "10.0.0.[1-300]@tcp", "\"Unable to parse nidlist: invalid NID in nidstr\"", -EINVAL },
		{ "10.0.0.1@tcp[1-2]", "\"Unable to parse nidlist: invalid NID in nidstr\"", -EINVAL },
		{ "10.0.[0-255].[0-255]@tcp", "\"Unable to parse nidlist: too many NIDs\"", -E2BIG },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg = NULL;
		int n = ctl_nid_range_expand(bad[i].in, nids, CTL_MAX_GW_NIDS, &msg, NULL);

		if (n != bad[i].err || !msg || strcmp(msg, bad[i].msg) != 0)
			fail_msg("'%s': %d '%s', want %d '%s'", bad[i].in, n, msg ? msg : "(null)",
				 bad[i].err, bad[i].msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_route_add_show_del, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_add_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_gateway_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_show_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_add_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_del_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_lnet_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_help, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_export, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_import, setup, teardown),
		cmocka_unit_test(test_nid_range_expand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
