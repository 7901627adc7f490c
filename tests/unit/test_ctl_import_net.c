/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_import_net.c - the net: section of ulnetctl import, in
 * process: every interface of an NI entry is an NI of its own (as lnetctl
 * configures them, sanity-lnet 450), a CPT is checked (sanity-lnet
 * 265): one that does not parse is -22, another partition than 0 -95,
 * and the tunables are applied or refused (ctl_import.c, imp_ni_tunables).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmds_int.h"
#include "ctl_test.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cpt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_interface, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tunables, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
