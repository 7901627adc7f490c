/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_nidrange.c - the NID range lists of "peer add|del --nid"
 * (ctl_nidrange.c): the forms sanity-lnet tests 4-13 and 21-25 give, the
 * order of the expansion, lnetctl's limit of 129 NIDs per list, and that
 * each malformed list says what is wrong (lnetctl's text) and where (the
 * item at fault).
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

/* The expansion as one space-separated string. */
static int expand(const char *in, char *out, size_t len, int max)
{
	ulnet_nid_t *nids = calloc((size_t)max + 1, sizeof(*nids));
	char nb[ULNET_NIDSTR_SIZE];
	const char *msg = NULL;
	int n;

	assert_non_null(nids);
	n = ctl_nid_range_expand(in, nids, max, &msg, NULL);
	out[0] = '\0';
	for (int j = 0; j < n; j++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", j ? " " : "",
			 ulnet_nid_str(&nids[j], nb));
	free(nids);
	return n;
}

static void test_sanity_lnet_forms(void **state)
{
	(void)state;
	char got[4096];
	static const struct {
		const char *in, *out;
	} ok[] = {
		/* test 4, 5 */
		{ "4.4.4.[1-3]@tcp", "4.4.4.1@tcp 4.4.4.2@tcp 4.4.4.3@tcp" },
		{ "5.5.5.[1,2,3-4]@o2ib", "5.5.5.1@o2ib 5.5.5.2@o2ib 5.5.5.3@o2ib 5.5.5.4@o2ib" },
		/* test 6: several fields, steps, numeric nets */
		{ "6.6.[6-7].[0-4/2]@tcp,6.6.[1-4/2].[0-6/3]@o2ib,[6-12/4]@gni,[6-12/4]@kfi,"
		  "[6-12/4]@bxi3f",
		  "6.6.6.0@tcp 6.6.6.2@tcp 6.6.6.4@tcp 6.6.7.0@tcp 6.6.7.2@tcp 6.6.7.4@tcp "
		  "6.6.1.0@o2ib 6.6.1.3@o2ib 6.6.1.6@o2ib 6.6.3.0@o2ib 6.6.3.3@o2ib 6.6.3.6@o2ib "
		  "6@gni 10@gni 6@kfi 10@kfi 6@bxi3f 10@bxi3f" },
		/* test 12: a step of 1, single-value brackets, a step past hi */
		{ "[13-14/1].[13-15/2].13.13@o2ib,[15-16/3].[17-19/4].[1].[5-20/5]@tcp",
		  "13.13.13.13@o2ib 13.15.13.13@o2ib 14.13.13.13@o2ib 14.15.13.13@o2ib "
		  "15.17.1.5@tcp 15.17.1.10@tcp 15.17.1.15@tcp 15.17.1.20@tcp" },
		/* test 7: plain NIDs in the list */
		{ "1.1.1.1@tcp,2.2.2.2@tcp", "1.1.1.1@tcp 2.2.2.2@tcp" },
		/* test 25 */
		{ "[26-27].[4-10/3].26.26@tcp,26.26.26.26@o2ib,[30-31]@gni",
		  "26.4.26.26@tcp 26.7.26.26@tcp 26.10.26.26@tcp 27.4.26.26@tcp 27.7.26.26@tcp "
		  "27.10.26.26@tcp 26.26.26.26@o2ib 30@gni 31@gni" },
		/* [0] is 0 here (lnetctl drops a range whose bounds are both 0) */
		{ "[0]@gni", "0@gni" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int n = expand(ok[i].in, got, sizeof(got), CTL_MAX_PEER_NIDS);

		if (n < 0)
			fail_msg("'%s': %d", ok[i].in, n);
		assert_string_equal(got, ok[i].out);
	}
	/* test 13: 2 * 2 * 1 * 16 + 1 NIDs */
	assert_int_equal(expand("[14-15].[1-2/1].[1].[100-254/10]@tcp,14.14.[254].14@o2ib", got,
				sizeof(got), CTL_MAX_PEER_NIDS),
			 65);
}

/* lnetctl's count check lets 129 NIDs through and stops the 130th. */
/* HOST@tcp: the name resolved, as lnetctl's parser does (sanity-lnet
 * 305); a name on a net that is not IP, or not a name, is refused. */
static void test_hostname_nid(void **state)
{
	ulnet_nid_t nid, want;
	char *w[] = { (char *)"localhost@tcp1" };
	char bad[64];

	(void)state;
	assert_int_equal(ulnet_nid_parse("127.0.0.1@tcp1", &want, NULL), 0);
	assert_int_equal(ctl_nid_parse_host("localhost@tcp1", &nid), 0);
	assert_true(ulnet_nid_same(&nid, &want));
	assert_int_equal(ctl_parse_nid_list(w, 1, &nid, 1, bad, sizeof(bad)), 1);
	assert_true(ulnet_nid_same(&nid, &want));
	assert_int_equal(ctl_nid_parse_host("localhost@o2ib", &nid), -EINVAL);
	assert_int_equal(ctl_nid_parse_host("a b@tcp", &nid), -EINVAL);
	assert_int_equal(ctl_nid_parse_host("@tcp", &nid), -EINVAL);
	/* numbers the resolver would take for addresses are not names */
	assert_int_equal(ctl_nid_parse_host("1@tcp", &nid), -EINVAL);
	assert_int_equal(ctl_nid_parse_host("0x1@tcp", &nid), -EINVAL);
	assert_int_equal(ctl_nid_parse_host("1.2@tcp", &nid), -EINVAL);
}

static void test_limit(void **state)
{
	(void)state;
	char got[8192];
	ulnet_nid_t nids[CTL_MAX_PEER_NIDS];
	struct ctl_nidrange_err w;
	const char *msg = NULL;

	assert_int_equal(CTL_MAX_PEER_NIDS, 129);
	assert_int_equal(expand("1.1.[0-1].[1-64]@tcp,1.1.2.1@tcp", got, sizeof(got), 129), 129);
	assert_int_equal(ctl_nid_range_expand("1.1.[0-1].[1-64]@tcp,1.1.2.[1-2]@tcp", nids, 129,
					      &msg, &w),
			 -E2BIG);
	/* the item that went past the limit */
	assert_int_equal(w.off, strlen("1.1.[0-1].[1-64]@tcp,"));
	assert_int_equal(w.len, strlen("1.1.2.[1-2]@tcp"));
	/* sanity-lnet 99a: "Exceed max nids per peer" */
	assert_int_equal(ctl_nid_range_expand("1.1.1.[2-255]@tcp", nids, 129, &msg, NULL), -E2BIG);
	/* a huge range stops at the limit, not after 4 billion NIDs */
	assert_int_equal(ctl_nid_range_expand("[0-4294967295]@gni", nids, 129, &msg, NULL), -E2BIG);
}

/* Each bad list: lnetctl's text, and the item at fault. */
static void test_bad_lists(void **state)
{
	(void)state;
	ulnet_nid_t nids[CTL_MAX_PEER_NIDS];
	static const struct {
		const char *in, *msg, *item;
		int err;
	} bad[] = {
		{ "foobar", "\"Unable to parse nidlist: no valid NIDs in string\"", "foobar", -EINVAL },
		{ "*@tcp", "asterisk not allowed in nidstring", "*@tcp", -EINVAL },
		{ "<?>@tcp", "\"Unable to parse nidlist: LNET_ANY_NID is unsupported\"", "<?>@tcp",
		  -EINVAL },
		{ "1.1.1.1@tcp,6.6.6.[3-1]@tcp",
		  "\"Unable to parse nidlist: range is wrong order\"", "6.6.6.[3-1]@tcp", -ERANGE },
		{ "6.6.6.[1-]@tcp", "\"Unable to parse nidlist: range needs number after -\"",
		  "6.6.6.[1-]@tcp", -ERANGE },
		{ "6.6.6.[1-3/]@tcp", "\"Unable to parse nidlist: range needs number after /\"",
		  "6.6.6.[1-3/]@tcp", -ERANGE },
		{ "6.6.6.[1,]@tcp", "\"Unable to parse nidlist: range needs number after ,\"",
		  "6.6.6.[1,]@tcp", -ERANGE },
		{ "6.6.6.[1-3@tcp", "\"Unable to parse nidlist: incomplete bracket set\"",
		  "6.6.6.[1-3@tcp", -EINVAL },
		{ "2.2.2.2@tcp,6.6.6.1-3]@tcp", "\"Unable to parse nidlist: incomplete bracket set\"",
		  "6.6.6.1-3]@tcp", -EINVAL },
		/* each NID is checked (lnetctl leaves 6.6.6.256 to the kernel) */
		{ "6.6.6.[250-300]@tcp", "\"Unable to parse nidlist: invalid NID in nidstr\"",
		  "6.6.6.[250-300]@tcp", -EINVAL },
		/* past the limit before any bad NID: lnetctl's errno (E2BIG) */
		{ "6.6.6.[1-300]@tcp", "\"Unable to parse nidlist: too many NIDs\"",
		  "6.6.6.[1-300]@tcp", -E2BIG },
		{ "6.6.6.[1-3/0]@tcp", "\"Unable to parse nidlist: invalid NID in nidstr\"",
		  "6.6.6.[1-3/0]@tcp", -EINVAL },
		{ "6.6.6.[a-c]@tcp", "\"Unable to parse nidlist: invalid NID in nidstr\"",
		  "6.6.6.[a-c]@tcp", -EINVAL },
		{ "1.1.1.1@tcp,,2.2.2.2@tcp", "\"Unable to parse nidlist: invalid NID in nidstr\"", "",
		  -EINVAL },
		{ "[1-2]@foo", "\"Unable to parse nidlist: invalid NID in nidstr\"", "[1-2]@foo",
		  -EINVAL },
		{ "1.1.1.1@tcp[1-2]", "\"Unable to parse nidlist: invalid NID in nidstr\"",
		  "1.1.1.1@tcp[1-2]", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ctl_nidrange_err w = { 99, 99 };
		const char *msg = NULL;
		int n = ctl_nid_range_expand(bad[i].in, nids, CTL_MAX_PEER_NIDS, &msg, &w);

		if (n != bad[i].err || !msg || strcmp(msg, bad[i].msg) != 0)
			fail_msg("'%s': %d '%s', want %d '%s'", bad[i].in, n, msg ? msg : "(null)",
				 bad[i].err, bad[i].msg);
		if (w.off + w.len > strlen(bad[i].in) || w.len != strlen(bad[i].item) ||
		    strncmp(bad[i].in + w.off, bad[i].item, w.len) != 0)
			fail_msg("'%s': at %zu+%zu, want '%s'", bad[i].in, w.off, w.len, bad[i].item);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanity_lnet_forms),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_hostname_nid),
		cmocka_unit_test(test_bad_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
