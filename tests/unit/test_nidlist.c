/* SPDX-License-Identifier: MIT */
/* test_nidlist.c - NID range lists: membership and positioned errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/nid.h"

struct match_case {
	const char *list;
	const char *nid;
	bool match;
};

static const struct match_case match_cases[] = {
	/* stepped ranges and value lists */
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.1.2@tcp", true },
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.9.6@tcp", true },
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.2.2@tcp", false },
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.11.2@tcp", false },
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.3.5@tcp", false },
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.1.2@tcp1", false },
	{ "192.168.[1-10/2].[2,4,6]@tcp", "192.168.1.2@o2ib", false },
	{ "10.0.[0-3].[1-254/2]@tcp1", "10.0.0.1@tcp1", true },
	{ "10.0.[0-3].[1-254/2]@tcp1", "10.0.3.253@tcp1", true },
	{ "10.0.[0-3].[1-254/2]@tcp1", "10.0.3.254@tcp1", false },
	{ "10.0.[0-3].[1-254/2]@tcp1", "10.0.4.1@tcp1", false },
	{ "10.0.[0-3].[1-254/2]@tcp1", "10.0.0.1@tcp", false },
	{ "192.168.[1-10].*@tcp", "192.168.10.255@tcp", true },
	{ "192.168.[1-10].*@tcp", "192.168.0.255@tcp", false },
	{ "*.*.*.*@o2ib", "1.2.3.4@o2ib", true },
	{ "*.*.*.*@o2ib", "2001:db8::1@o2ib", false },
	{ "1.2.3.[*]@tcp", "1.2.3.77@tcp", true },
	{ "1.2.3.[1,*]@tcp", "1.2.3.77@tcp", true },
	{ "1.2.3.[1,5-7,9-20/10]@tcp", "1.2.3.19@tcp", true },
	{ "1.2.3.[1,5-7,9-20/10]@tcp", "1.2.3.6@tcp", true },
	{ "1.2.3.[1,5-7,9-20/10]@tcp", "1.2.3.9@tcp", true },
	{ "1.2.3.[1,5-7,9-20/10]@tcp", "1.2.3.20@tcp", false },
	{ "1.2.3.[5-5]@tcp", "1.2.3.5@tcp", true },
	/* kstrtouint base 0: hex and octal fields */
	{ "0x0a.0.0.010@tcp", "10.0.0.8@tcp", true },
	{ "0x0a.0.0.010@tcp", "10.0.0.10@tcp", false },
	{ "1.2.3.4@tcp0x1", "1.2.3.4@tcp1", true },
	{ "1.2.3.4@tcp010", "1.2.3.4@tcp8", true },
	/* exact addresses */
	{ "1.2.3.4@tcp", "1.2.3.4@tcp", true },
	{ "1.2.3.4@tcp", "1.2.3.5@tcp", false },
	{ "1.2.3.4@gip", "1.2.3.4@gip", true },
	{ "1.2.3.4@efa3", "1.2.3.4@efa3", true },
	/* whole nets */
	{ "*@o2ib", "10.0.0.1@o2ib", true },
	{ "*@o2ib", "2001:db8::1@o2ib", true },
	{ "*@o2ib", "10.0.0.1@o2ib1", false },
	{ "*@o2ib", "10.0.0.1@tcp", false },
	{ "*@lo", "0@lo", true },
	{ "*@gni5", "7@gni5", true },
	/* numeric nets */
	{ "[0-3]@gni", "0@gni", true },
	{ "[0-3]@gni", "3@gni", true },
	{ "[0-3]@gni", "4@gni", false },
	{ "[0-99]@kfi", "99@kfi", true },
	{ "[0-99]@kfi", "99@kfi1", false },
	{ "12@gni3", "12@gni3", true },
	{ "0x10@ptlf", "16@ptlf", true },
	{ "[0-0xffffffff/65536]@bxi3f", "131072@bxi3f", true },
	{ "[0-0xffffffff/65536]@bxi3f", "131073@bxi3f", false },
	{ "[4294967295]@kfi", "4294967295@kfi", true },
	{ "0@lo", "0@lo", true },
	{ "[1,2]@gni", "1.0.0.0@tcp", false },
	/* IPv4 CIDR */
	{ "192.168.0.0/16@tcp", "192.168.200.1@tcp", true },
	{ "192.168.0.0/16@tcp", "192.169.0.1@tcp", false },
	{ "192.168.77.99/16@tcp", "192.168.0.1@tcp", true },
	{ "10.0.0.1/32@o2ib", "10.0.0.1@o2ib", true },
	{ "10.0.0.1/32@o2ib", "10.0.0.2@o2ib", false },
	{ "128.0.0.0/1@tcp", "200.0.0.0@tcp", true },
	{ "128.0.0.0/1@tcp", "100.0.0.0@tcp", false },
	{ "10.0.0.0/8@tcp", "::ffff:10.0.0.1@tcp", false },
	{ "10.0.0.0/8@efa", "10.9.9.9@efa", true },
	{ "10.1.2.0/23@tcp", "10.1.3.255@tcp", true },
	{ "10.1.2.0/23@tcp", "10.1.4.0@tcp", false },
	/* IPv6 */
	{ "2001:db8::/32@tcp", "2001:db8:ffff::1@tcp", true },
	{ "2001:db8::/32@tcp", "2001:db9::1@tcp", false },
	{ "2001:db8::/32@tcp", "32.1.13.184@tcp", false },
	{ "2001:db8::/32@tcp", "2001:db8::1@tcp2", false },
	{ "2001:db8::1@tcp", "2001:db8::1@tcp", true },
	{ "2001:db8::1@tcp", "2001:db8::2@tcp", false },
	{ "2001:db8::/127@o2ib", "2001:db8::1@o2ib", true },
	{ "2001:db8::/127@o2ib", "2001:db8::2@o2ib", false },
	{ "2001:db8::8/125@o2ib", "2001:db8::f@o2ib", true },
	{ "2001:db8::8/125@o2ib", "2001:db8::10@o2ib", false },
	{ "::/1@tcp", "7fff::@tcp", true },
	{ "::/1@tcp", "8000::@tcp", false },
	{ "::ffff:10.0.0.0/104@tcp", "::ffff:10.0.0.1@tcp", true },
	{ "::ffff:10.0.0.0/104@tcp", "10.0.0.1@tcp", false },
	/* several items, any whitespace */
	{ "1.2.3.4@tcp [0-3]@gni 10.0.0.1@tcp1", "2@gni", true },
	{ "1.2.3.4@tcp [0-3]@gni 10.0.0.1@tcp1", "10.0.0.1@tcp1", true },
	{ "1.2.3.4@tcp [0-3]@gni 10.0.0.1@tcp1", "10.0.0.1@tcp", false },
	{ "  1.2.3.4@tcp\t\t2001:db8::/32@tcp\n", "2001:db8::7@tcp", true },
	{ "1.2.3.4@tcp 1.2.3.5@tcp", "1.2.3.5@tcp", true },
	{ "1.2.3.4@tcp 2001:db8::/32@tcp *@o2ib", "10.10.10.10@o2ib", true },
	/* ANY never matches */
	{ "*@tcp", "<?>", false },
};

static void test_membership(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		const struct match_case *c = &match_cases[i];
		struct ulnet_parse_err err = { 0 };
		ulnet_nidlist_t *list = NULL;
		ulnet_nid_t nid;
		int rc = ulnet_nidlist_parse(c->list, &list, &err);

		if (rc != 0)
			fail_msg("list '%s' did not parse: %s at %d", c->list, err.msg, err.pos);
		if (ulnet_nid_parse(c->nid, &nid, &err) != 0)
			fail_msg("nid '%s' did not parse: %s", c->nid, err.msg);
		if (ulnet_nidlist_match(list, &nid) != c->match)
			fail_msg("'%s' in '%s': want %s", c->nid, c->list,
				 c->match ? "match" : "no match");
		ulnet_nidlist_free(list);
	}
}

struct bad_case {
	const char *list;
	int pos;
	const char *msg;
};

static const struct bad_case bad_cases[] = {
	{ "", 0, "empty NID list" },
	{ "  \t ", 0, "empty NID list" },
	{ "1.2.3.4", 0, "missing '@'" },
	{ "1.2.3.4@tcp 5.6.7.8", 12, "missing '@'" },
	{ "1.2.3.4@tcp@tcp", 11, "more than one '@'" },
	{ "1.2.3.4@", 8, "missing network name" },
	{ "1.2.3.4@tpc", 8, "unknown network type 'tpc'" },
	{ "1.2.3.4@tcpx", 8, "unknown network 'tcpx'" },
	{ "1.2.3.4@tcp70000", 11, "net number 70000 out of range" },
	{ "@tcp", 0, "missing address range" },
	{ "1.2.3@tcp", 0, "needs 4 fields" },
	{ "1.2.3.4.5@tcp", 8, "more than 4 fields" },
	{ "1.2..4@tcp", 4, "empty address field" },
	{ "1.2.3.256@tcp", 6, "out of range" },
	{ "1.2.3.[1-256]@tcp", 9, "out of range" },
	{ "1.2.3.[5-1]@tcp", 7, "backwards" },
	{ "1.2.3.[1-10/0]@tcp", 12, "stride must not be 0" },
	{ "1.2.3.[1-10/256]@tcp", 12, "out of range" },
	{ "1.2.3.[1-10/x]@tcp", 12, "bad stride 'x'" },
	{ "1.2.3.[]@tcp", 7, "empty range expression" },
	{ "1.2.3.[1,]@tcp", 9, "empty range expression" },
	{ "1.2.3.[,1]@tcp", 7, "empty range expression" },
	{ "1.2.3.[1-]@tcp", 9, "bad number ''" },
	{ "1.2.3.[-1]@tcp", 7, "bad number ''" },
	{ "1.2.3.[1-2-3]@tcp", 9, "bad number '2-3'" },
	{ "1.2.3.1-5@tcp", 6, "bad range expression '1-5'" },
	{ "1.2.3.[1-5@tcp", 6, "bad range expression" },
	{ "1.2.3.08@tcp", 6, "bad range expression '08'" },
	{ "1.2.3.x@tcp", 6, "bad range expression 'x'" },
	{ "1.2.3.4/33@tcp", 8, "bad prefix length" },
	{ "1.2.3.4/0@tcp", 8, "bad prefix length" },
	{ "1.2.3.4/@tcp", 8, "bad prefix length" },
	{ "1.2.3.4/0x8@tcp", 8, "bad prefix length" },
	{ "1.2.3/8@tcp", 0, "bad IPv4 address '1.2.3'" },
	{ "1.2.3.[1-3]/8@tcp", 0, "bad IPv4 address" },
	{ "2001:db8::/129@tcp", 11, "bad prefix length" },
	{ "2001:db8:::/32@tcp", 0, "bad IPv6 address" },
	{ "1.2.3.0/24@gni", 0, "does not take netmasks" },
	{ "2001:db8::1@gip", 0, "does not take netmasks" },
	{ "[1-3]@tcp", 0, "needs 4 fields" },
	{ "1.2.3.4@gni", 0, "bad range expression '1.2.3.4'" },
	{ "[0-4294967296]@kfi", 3, "out of range" },
	{ "1.2.3.4@tcp *@tcp 1.2.3.999@tcp", 24, "out of range" },
};

static void test_bad_lists(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct ulnet_parse_err err = { .pos = -1 };
		ulnet_nidlist_t *list = (ulnet_nidlist_t *)&err; /* must be reset */

		assert_int_equal(ulnet_nidlist_parse(c->list, &list, &err), -EINVAL);
		assert_null(list);
		if (err.pos != c->pos || !strstr(err.msg, c->msg))
			fail_msg("'%s': got pos %d '%s', want pos %d '%s'", c->list, err.pos,
				 err.msg, c->pos, c->msg);
		assert_int_equal(ulnet_nidlist_parse(c->list, &list, NULL), -EINVAL);
	}
}

static void test_too_long(void **state)
{
	size_t n = 70000;
	char *s = malloc(n + 1);
	struct ulnet_parse_err err;
	ulnet_nidlist_t *list = NULL;
	(void)state;

	assert_non_null(s);
	memset(s, ' ', n);
	s[n] = '\0';
	memcpy(s, "*@tcp", 5);
	assert_int_equal(ulnet_nidlist_parse(s, &list, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer than"));
	free(s);
}

/* Many items and many expressions: the arrays grow and all of them count. */
static void test_many_items(void **state)
{
	size_t cap = 60000, len = 0;
	char *s = malloc(cap);
	ulnet_nidlist_t *list = NULL;
	ulnet_nid_t nid;
	char buf[64];
	(void)state;

	assert_non_null(s);
	for (int i = 0; i < 2000; i++)
		len += (size_t)snprintf(s + len, cap - len, "10.0.%d.%d@tcp ", i / 256, i % 256);
	len += (size_t)snprintf(s + len, cap - len, "[");
	for (int i = 0; i < 1000; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%d", i ? "," : "", i * 3);
	snprintf(s + len, cap - len, "]@gni");
	assert_int_equal(ulnet_nidlist_parse(s, &list, NULL), 0);
	assert_int_equal(ulnet_nid_parse("10.0.7.207@tcp", &nid, NULL), 0);
	assert_true(ulnet_nidlist_match(list, &nid));
	assert_int_equal(ulnet_nid_parse("10.0.7.208@tcp", &nid, NULL), 0);
	assert_false(ulnet_nidlist_match(list, &nid));
	snprintf(buf, sizeof(buf), "%d@gni", 999 * 3);
	assert_int_equal(ulnet_nid_parse(buf, &nid, NULL), 0);
	assert_true(ulnet_nidlist_match(list, &nid));
	assert_int_equal(ulnet_nid_parse("2998@gni", &nid, NULL), 0);
	assert_false(ulnet_nidlist_match(list, &nid));
	ulnet_nidlist_free(list);
	free(s);
}

static void test_free_null_and_match_null(void **state)
{
	(void)state;
	ulnet_nidlist_free(NULL);
	assert_false(ulnet_nidlist_match(NULL, &ULNET_NID_LO0));
}

/* ulnet_nidlist_expand: every NID, in order, the leftmost field slowest;
 * each expanded NID is matched by the list it came from. */
static void test_expand(void **state)
{
	(void)state;
	static const struct {
		const char *list, *out;
	} cases[] = {
		{ "1.1.1.[1-3]@tcp", "1.1.1.1@tcp 1.1.1.2@tcp 1.1.1.3@tcp" },
		{ "1.1.[1-2].[5,6]@o2ib1", "1.1.1.5@o2ib1 1.1.1.6@o2ib1 1.1.2.5@o2ib1 1.1.2.6@o2ib1" },
		{ "10.0.0.[1-9/4]@tcp [5-9/2]@gni", "10.0.0.1@tcp 10.0.0.5@tcp 10.0.0.9@tcp 5@gni 7@gni 9@gni" },
		{ "[0x10,3]@kfi 4.4.4.4@tcp", "16@kfi 3@kfi 4.4.4.4@tcp" },
		{ "[4294967294-4294967295]@gni", "4294967294@gni 4294967295@gni" },
	};
	ulnet_nid_t nids[16];
	char got[512], nb[ULNET_NIDSTR_SIZE];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ulnet_parse_err err = { 0 };
		ulnet_nidlist_t *list = NULL;
		int n;

		assert_int_equal(ulnet_nidlist_parse(cases[i].list, &list, &err), 0);
		n = ulnet_nidlist_expand(list, nids, 16, &err);
		if (n < 0)
			fail_msg("'%s': %d %s", cases[i].list, n, err.msg);
		got[0] = '\0';
		for (int j = 0; j < n; j++) {
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", j ? " " : "",
				 ulnet_nid_str(&nids[j], nb));
			assert_true(ulnet_nidlist_match(list, &nids[j]));
		}
		assert_string_equal(got, cases[i].out);
		ulnet_nidlist_free(list);
	}
}

/* What cannot be expanded, and too many NIDs: the item is named. */
static void test_expand_errors(void **state)
{
	(void)state;
	static const struct {
		const char *list;
		int max, rc, pos;
		const char *msg;
	} cases[] = {
		{ "1.1.1.1@tcp *@tcp", 8, -EDOM, 12, "item is no list of NIDs" },
		{ "1.1.1.0/24@tcp", 8, -EDOM, 0, "item is no list of NIDs" },
		{ "2001:db8::1@tcp", 8, -EDOM, 0, "item is no list of NIDs" },
		{ "1.1.1.1@tcp 1.1.1.[1-*]@tcp", 8, -EINVAL, 0, NULL },
		{ "1.1.1.1@tcp 1.1.1.*@tcp", 8, -E2BIG, 12, "expands to more than 8 NIDs" },
		{ "[0-4294967295]@gni", 3, -E2BIG, 0, "expands to more than 3 NIDs" },
		{ "[1-3]@gni", 0, -E2BIG, 0, "expands to more than 0 NIDs" },
	};
	ulnet_nid_t nids[8];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ulnet_parse_err err = { 0 };
		ulnet_nidlist_t *list = NULL;

		if (cases[i].rc == -EINVAL) {
			assert_int_equal(ulnet_nidlist_parse(cases[i].list, &list, &err), -EINVAL);
			continue;
		}
		assert_int_equal(ulnet_nidlist_parse(cases[i].list, &list, &err), 0);
		memset(&err, 0, sizeof(err));
		assert_int_equal(ulnet_nidlist_expand(list, nids, cases[i].max, &err), cases[i].rc);
		assert_int_equal(err.pos, cases[i].pos);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("'%s': '%s', want '%s'", cases[i].list, err.msg, cases[i].msg);
		ulnet_nidlist_free(list);
	}
	assert_int_equal(ulnet_nidlist_expand(NULL, nids, 8, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_membership),
		cmocka_unit_test(test_bad_lists),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_many_items),
		cmocka_unit_test(test_free_null_and_match_null),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_expand_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
