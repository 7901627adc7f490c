/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_import_net.c - the net: section of ulnetctl import, in
 * process: every interface of an NI entry is an NI of its own (as lnetctl
 * configures them, sanity-lnet 450), a CPT is checked (sanity-lnet
 * 265): one that does not parse is -22, another partition than 0 -95,
 * and the tunables are applied or refused (ctl_import.c, imp_ni_tunables),
 * an o2ib net's "lnd tunables" (a kernel's export) included.
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

#include "ctl_cmds_int.h"
#include "ctl_test.h"
#include "fake_o2ib.h"

#define NET_LO(extra) "net:\n-     net type: tcp9\n      local NI(s):\n      -     interfaces:\n" \
	"                  0: lo\n" extra

static int setup(void **state)
{
	return ctl_fix_setup(state, NULL, NULL);
}

static int teardown(void **state)
{
	return ctl_fix_teardown(state);
}

static int import(struct ctl_fix *f, const char *opt, const char *text)
{
	char line[64];

	snprintf(line, sizeof(line), "import %s i.yaml", opt);
	return ctl_run_line(&f->ctx, &f->rp, text, strlen(text), line);
}

static int nis_on_tcp9(struct ctl_fix *f)
{
	int n = 0;

	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "net show --net tcp9"), 0);
	for (const char *s = ybuf_str(&f->rp.out); (s = strstr(s, "nid: ")); s++)
		n++;
	return n;
}

static void test_cpt(void **state)
{
	struct ctl_fix *f = *state;
	static const char *const bad[] = { "\"[1-0]\"", "[1-0]", "\"[]\"", "[]", "\"[0\"", "x" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];

		snprintf(text, sizeof(text), NET_LO("            CPT: %s\n"), bad[i]);
		assert_int_equal(import(f, "", text), 234);
		ctl_has(&f->rp.err, "errno: -22", text);
		ctl_has(&f->rp.err, "invalid CPT", text);
		assert_int_equal(nis_on_tcp9(f), 0);
	}
	assert_int_equal(import(f, "", NET_LO("            CPT: \"[0-1]\"\n")), 234);
	ctl_has(&f->rp.err, "errno: -95", "CPT [0-1]");
	assert_int_equal(nis_on_tcp9(f), 0);
	assert_int_equal(import(f, "", NET_LO("            CPT: \"[0]\"\n")), 0);
	assert_int_equal(nis_on_tcp9(f), 1);
	assert_int_equal(import(f, "--del", NET_LO("            CPT: \"[0]\"\n")), 0);
	assert_int_equal(nis_on_tcp9(f), 0);
	/* a flow sequence is the expression of its items (sanity-lnet 266's
	 * unquoted CPT: [0-0]) */
	assert_int_equal(import(f, "", NET_LO("            CPT: [0-0]\n")), 0);
	assert_int_equal(nis_on_tcp9(f), 1);
	assert_int_equal(import(f, "--del", NET_LO("            CPT: [0]\n")), 0);
	assert_int_equal(nis_on_tcp9(f), 0);
	assert_int_equal(import(f, "", NET_LO("            CPT: [0, 1]\n")), 234);
	ctl_has(&f->rp.err, "errno: -95", "CPT [0, 1]");
	assert_int_equal(nis_on_tcp9(f), 0);
}

/* The second interface is not skipped: here it is lo again, whose NI the
 * first made, so it fails as a second NI on one address does (-17). */
static void test_every_interface(void **state)
{
	struct ctl_fix *f = *state;
	const char *text = NET_LO("                  1: lo\n");

	assert_int_equal(import(f, "", text), 234);
	ctl_has(&f->rp.err, "errno: -17", text);
	assert_int_equal(nis_on_tcp9(f), 1);
	assert_int_equal(import(f, "--del", NET_LO("")), 0);
	assert_int_equal(nis_on_tcp9(f), 0);
}

/* The tunables of an NI entry: the keys lnetctl prints take effect
 * (lnd tunables' timeout too); any other is refused, not skipped. */
static void test_tunables(void **state)
{
	struct ctl_fix *f = *state;

	assert_int_equal(import(f, "", NET_LO("            tunables:\n                  bogus: 1\n")),
			 234);
	ctl_has(&f->rp.err, "errno: -95", "tunables bogus");
	ctl_has(&f->rp.err, "'bogus' in 'tunables' of an NI is not supported by ulnet", "bogus");
	assert_int_equal(nis_on_tcp9(f), 0);
	assert_int_equal(import(f, "", NET_LO("            lnd tunables:\n                  timeout: 33\n"
					      "                  tos: 4\n")), 0);
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "net show -v --net tcp9"), 0);
	ctl_has(&f->rp.out, "timeout: 33", "net show -v");
	ctl_has(&f->rp.out, "tos: 4", "net show -v");
}

/* lnetctl export of an o2ib NI of a 2.17 kernel (non-default values) */
#define O2IB_NI(lnd) "net:\n    - net type: o2ib\n      local NI(s):\n" \
	"        - nid: 10.9.9.9@o2ib\n          status: up\n          interfaces:\n" \
	"              0: ib0\n          tunables:\n              peer_timeout: 180\n" \
	"              peer_credits: 32\n              peer_buffer_credits: 0\n" \
	"              credits: 256\n          lnd tunables:\n" lnd \
	"          CPT: \"[0]\"\n"
#define KERNEL_LND "              peercredits_hiw: 20\n              map_on_demand: 1\n" \
	"              concurrent_sends: 40\n              fmr_pool_size: 512\n" \
	"              fmr_flush_trigger: 384\n              fmr_cache: 1\n" \
	"              ntx: 1024\n              conns_per_peer: 1\n              tos: 106\n"

/* A kernel's export of an o2ib net imports: each lnd tunable reaches the
 * LND through the NI's conf (fmr_* at the kernel's defaults, which is
 * what ulnet runs as), and net show -v prints the values in effect;
 * values ulnet cannot take are refused naming them. */
static void test_o2ib_lnd_tunables(void **state)
{
	struct ctl_fix *f = *state;
	ulnet_t *ln = f->ctx.ln;

	/* the real LND needs an RDMA device: a stand-in records the conf */
	fake_o2ib_install(ln);
	fake_o2ib_started = 0;
	assert_int_equal(import(f, "", O2IB_NI(KERNEL_LND "              timeout: 20\n")), 0);
	assert_int_equal(fake_o2ib_started, 1);
	assert_int_equal(fake_o2ib_seen.tun.peer_credits, 32);
	assert_int_equal(fake_o2ib_seen.o2ib.peercredits_hiw, 20);
	assert_int_equal(fake_o2ib_seen.o2ib.concurrent_sends, 40);
	assert_int_equal(fake_o2ib_seen.o2ib.ntx, 1024);
	assert_int_equal(fake_o2ib_seen.o2ib.map_on_demand, 1);
	assert_int_equal(fake_o2ib_seen.o2ib.timeout, 20);
	assert_int_equal(fake_o2ib_seen.sock.sock_timeout, 0);   /* not socklnd's */
	assert_int_equal(fake_o2ib_seen.tun.tos, 106);
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "net show -v --net o2ib"), 0);
	ctl_has(&f->rp.out, "peercredits_hiw: 20", "net show -v");
	ctl_has(&f->rp.out, "concurrent_sends: 40", "net show -v");
	ctl_has(&f->rp.out, "fmr_pool_size: 512", "net show -v");
	ctl_has(&f->rp.out, "ntx: 1024", "net show -v");
	ctl_has(&f->rp.out, "conns_per_peer: 1", "net show -v");
	ctl_has(&f->rp.out, " timeout: 20", "net show -v");
	ctl_has(&f->rp.out, "tos: 106", "net show -v");
	/* export prints them back as lnetctl does (no timeout) */
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "export --backup"), 0);
	ctl_has(&f->rp.out, "ntx: 1024", "export");
	assert_int_equal(import(f, "--del", O2IB_NI(KERNEL_LND)), 0);

	/* what ulnet cannot take: refused, naming it, nothing added */
	static const struct {
		const char *lnd, *rc, *name;
	} bad[] = {
		{ "              fmr_pool_size: 1024\n", "errno: -95", "'fmr_pool_size: 1024'" },
		{ "              fmr_cache: 0\n              fmr_flush_trigger: 10\n", "errno: -95",
		  "'fmr_flush_trigger: 10'" },
		{ "              conns_per_peer: 200\n", "errno: -22", "'conns_per_peer'" },
		{ "              ntx: 4096\n", "errno: -22", "'ntx'" },
		{ "              tos: 300\n", "errno: -22", "'tos'" },
		{ "              nqps: 4\n", "errno: -95", "'nqps'" },
	};

	fake_o2ib_started = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[1024];

		snprintf(text, sizeof(text), O2IB_NI("%s"), bad[i].lnd);
		assert_int_equal(import(f, "", text), 234);
		ctl_has(&f->rp.err, bad[i].rc, bad[i].lnd);
		ctl_has(&f->rp.err, bad[i].name, bad[i].lnd);
	}
	assert_int_equal(fake_o2ib_started, 0);

	/* net add: tos and conns_per_peer take effect on o2ib; 128
	 * connections per peer are out of range */
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0,
				      "net add --nid 10.9.9.8@o2ib --conns-per-peer 128"), 234);
	ctl_has(&f->rp.err, "errno: -22", "conns-per-peer 128");
	ctl_has(&f->rp.err, "o2ib LND tunable 'conns_per_peer': value out of range", "cpp");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0,
				      "net add --nid 10.9.9.8@o2ib --tos 7 --conns-per-peer 2"), 0);
	assert_int_equal(fake_o2ib_seen.tun.tos, 7);
	assert_int_equal(fake_o2ib_seen.tun.conns_per_peer, 2);
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "net show -v --net o2ib"), 0);
	ctl_has(&f->rp.out, "tos: 7", "net show -v");
	ctl_has(&f->rp.out, "ntx: 512", "net show -v");
	ctl_has(&f->rp.out, "peercredits_hiw: 4", "net show -v");
	ctl_has(&f->rp.out, " timeout: 50", "net show -v");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "net del --nid 10.9.9.8@o2ib"), 0);
	/* an o2ib key on a tcp NI: refused */
	assert_int_equal(import(f, "", NET_LO("            lnd tunables:\n                  ntx: 512\n")),
			 234);
	ctl_has(&f->rp.err, "errno: -95", "ntx on tcp");
	ctl_has(&f->rp.err, "'ntx' in 'lnd tunables' of an NI is not supported by ulnet", "ntx");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cpt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_interface, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tunables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_o2ib_lnd_tunables, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
