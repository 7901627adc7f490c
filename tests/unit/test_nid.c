/* SPDX-License-Identifier: MIT */
/* test_nid.c - NID and net text forms, nid4 and 20-byte conversions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ulnet/nid.h"

/* Parse, format, and check that the text is `canon` and re-parses equal. */
static void check_roundtrip(const char *in, const char *canon)
{
	char buf[ULNET_NIDSTR_SIZE];
	ulnet_nid_t a, b;
	struct ulnet_parse_err err = { 0 };
	int rc = ulnet_nid_parse(in, &a, &err);

	if (rc != 0)
		fail_msg("'%s' did not parse: %s at %d", in, err.msg, err.pos);
	rc = ulnet_nid_format(&a, buf, sizeof(buf));
	assert_int_equal(rc, (int)strlen(canon));
	assert_string_equal(buf, canon);
	assert_int_equal(ulnet_nid_parse(buf, &b, NULL), 0);
	assert_true(ulnet_nid_same(&a, &b));
	assert_int_equal(ulnet_nid_cmp(&a, &b), 0);
}

static const char *const lnd_names[][2] = {
	{ "tcp", "1.2.3.4" }, { "o2ib", "10.0.0.1" }, { "lo", "0" },
	{ "gni", "12" },      { "gip", "172.16.0.9" }, { "ptlf", "4294967295" },
	{ "kfi", "77" },      { "efa", "192.168.1.200" }, { "bxi3f", "123456" },
};

static void test_roundtrip_all_types_and_nets(void **state)
{
	static const unsigned nums[] = { 0, 1, 7, 255, 256, 4096, 65535 };
	(void)state;

	for (size_t i = 0; i < sizeof(lnd_names) / sizeof(lnd_names[0]); i++) {
		for (size_t j = 0; j < sizeof(nums) / sizeof(nums[0]); j++) {
			char in[96], canon[96];

			/* lo takes no net number. */
			if (strcmp(lnd_names[i][0], "lo") == 0 && nums[j] != 0)
				continue;
			if (nums[j] == 0) {
				snprintf(canon, sizeof(canon), "%s@%s", lnd_names[i][1],
					 lnd_names[i][0]);
				check_roundtrip(canon, canon);
				/* explicit 0 is accepted and dropped */
				snprintf(in, sizeof(in), "%s@%s0", lnd_names[i][1], lnd_names[i][0]);
				if (strcmp(lnd_names[i][0], "lo") != 0)
					check_roundtrip(in, canon);
			} else {
				snprintf(canon, sizeof(canon), "%s@%s%u", lnd_names[i][1],
					 lnd_names[i][0], nums[j]);
				check_roundtrip(canon, canon);
			}
		}
	}
}

static void test_roundtrip_examples(void **state)
{
	static const char *const t[][2] = {
		{ "192.168.1.2@tcp", "192.168.1.2@tcp" },
		{ "0@lo", "0@lo" },
		{ "12@gni3", "12@gni3" },
		{ "2001:db8::1@tcp", "2001:db8::1@tcp" },
		{ "2001:0DB8:0:0:0:0:0:1@o2ib2", "2001:db8::1@o2ib2" },
		{ "::ffff:1.2.3.4@efa", "::ffff:1.2.3.4@efa" },
		{ "fe80::1@tcp7", "fe80::1@tcp7" },
		{ "1:0:2:0:0:0:0:3@tcp", "1:0:2::3@tcp" },
		{ "0x10@kfi", "16@kfi" },
		{ "0XfFfFfFfF@gni", "4294967295@gni" },
		{ "007@ptlf", "7@ptlf" },
		{ "0.0.0.0@tcp", "0.0.0.0@tcp" },
		{ "255.255.255.255@o2ib65535", "255.255.255.255@o2ib65535" },
		{ "010.001.0.1@tcp", "10.1.0.1@tcp" },
		{ "10.0.0.1@tcp00", "10.0.0.1@tcp" },
		{ "10.0.0.1@tcp0007", "10.0.0.1@tcp7" },
		/* lo ignores the address, like the kernel */
		{ "1@lo", "0@lo" },
		{ "whatever@lo", "0@lo" },
		/* no "@net" means tcp0, like libcfs_strnid() */
		{ "10.1.2.3", "10.1.2.3@tcp" },
		{ "2001:db8::5", "2001:db8::5@tcp" },
		{ "<?>", "<?>" },
		{ "127.0.0.1@tcp", "127.0.0.1@tcp" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		check_roundtrip(t[i][0], t[i][1]);
}

static void test_nid4_reference_values(void **state)
{
	static const struct {
		const char *s;
		ulnet_nid4_t v;
	} t[] = {
		{ "192.168.1.2@tcp", 0x00020000c0a80102ULL },
		{ "0@lo", 0x0009000000000000ULL },
		{ "10.0.0.1@o2ib1", 0x000500010a000001ULL },
		{ "12@gni3", 0x000d00030000000cULL },
		{ "4294967295@bxi3f65535", 0x0013ffffffffffffULL },
		{ "1.2.3.4@tcp7", 0x0002000701020304ULL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ulnet_nid_t nid, back;
		ulnet_nid4_t v;
		char buf[ULNET_NIDSTR_SIZE];

		assert_int_equal(ulnet_nid_parse(t[i].s, &nid, NULL), 0);
		assert_false(ulnet_nid_is_large(&nid));
		assert_int_equal(ulnet_nid_to_nid4(&nid, &v), 0);
		assert_int_equal(v, t[i].v);
		ulnet_nid_from_nid4(t[i].v, &back);
		assert_true(ulnet_nid_same(&nid, &back));
		assert_string_equal(ulnet_nid_str(&back, buf), t[i].s);
	}
}

static void test_ipv6_is_large(void **state)
{
	ulnet_nid_t nid, back;
	ulnet_nid4_t v = 0;
	uint8_t w[ULNET_NID_WIRE_SIZE];
	static const uint8_t expect[ULNET_NID_WIRE_SIZE] = {
		12, 2, 0, 1, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	};
	(void)state;

	assert_int_equal(ulnet_nid_parse("2001:db8::1@tcp1", &nid, NULL), 0);
	assert_true(ulnet_nid_is_large(&nid));
	assert_int_equal(nid.size, 12);
	assert_int_equal(ulnet_nid_net(&nid), ulnet_mknet(ULNET_LND_TCP, 1));
	assert_int_equal(ulnet_nid_to_nid4(&nid, &v), -ERANGE);
	ulnet_nid_encode(&nid, w);
	assert_memory_equal(w, expect, sizeof(w));
	assert_int_equal(ulnet_nid_decode(w, &back), 0);
	assert_true(ulnet_nid_same(&nid, &back));
}

static void test_wire_roundtrip(void **state)
{
	static const char *const t[] = {
		"192.168.1.2@tcp", "0@lo", "10.0.0.1@o2ib1", "12@gni3", "2001:db8::1@tcp",
		"::@efa9", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff@o2ib65535", "<?>",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ulnet_nid_t nid, back;
		uint8_t w[ULNET_NID_WIRE_SIZE];
		char buf[ULNET_NIDSTR_SIZE];
		ulnet_nid4_t v;

		assert_int_equal(ulnet_nid_parse(t[i], &nid, NULL), 0);
		ulnet_nid_encode(&nid, w);
		assert_int_equal(ulnet_nid_decode(w, &back), 0);
		assert_true(ulnet_nid_same(&nid, &back));
		assert_string_equal(ulnet_nid_str(&back, buf), t[i]);
		/* For a 4-byte NID the first 8 wire bytes are the nid4, big-endian. */
		if (!ulnet_nid_is_large(&nid) && !ulnet_nid_is_any(&nid)) {
			uint64_t be = 0;

			assert_int_equal(ulnet_nid_to_nid4(&nid, &v), 0);
			for (int k = 0; k < 8; k++)
				be = be << 8 | w[k];
			assert_int_equal(be, v);
		}
	}
}

static void test_any(void **state)
{
	ulnet_nid_t nid;
	ulnet_nid4_t v = 0;
	char buf[ULNET_NIDSTR_SIZE];
	(void)state;

	assert_int_equal(ulnet_nid_parse("<?>", &nid, NULL), 0);
	assert_true(ulnet_nid_is_any(&nid));
	assert_int_equal(ulnet_nid_to_nid4(&nid, &v), 0);
	assert_int_equal(v, ULNET_NID4_ANY);
	ulnet_nid_from_nid4(ULNET_NID4_ANY, &nid);
	assert_true(ulnet_nid_is_any(&nid));
	assert_string_equal(ulnet_nid_str(&ULNET_NID_ANY, buf), "<?>");
	assert_string_equal(ulnet_nid_str(&ULNET_NID_LO0, buf), "0@lo");
}

static void test_nets(void **state)
{
	static const struct {
		const char *in, *out;
		ulnet_net_t net;
	} t[] = {
		{ "tcp", "tcp", 0x00020000 },	   { "tcp0", "tcp", 0x00020000 },
		{ "tcp7", "tcp7", 0x00020007 },	   { "o2ib3", "o2ib3", 0x00050003 },
		{ "lo", "lo", 0x00090000 },	   { "gni", "gni", 0x000d0000 },
		{ "gip12", "gip12", 0x000e000c },  { "ptlf1", "ptlf1", 0x000f0001 },
		{ "kfi65535", "kfi65535", 0x0010ffff }, { "efa", "efa", 0x00120000 },
		{ "bxi3f2", "bxi3f2", 0x00130002 },
	};
	char buf[ULNET_NETSTR_SIZE];
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ulnet_net_t net = 0;

		assert_int_equal(ulnet_net_parse(t[i].in, &net, NULL), 0);
		assert_int_equal(net, t[i].net);
		assert_int_equal(ulnet_net_format(net, buf, sizeof(buf)), (int)strlen(t[i].out));
		assert_string_equal(buf, t[i].out);
	}
	assert_int_equal(ulnet_net_format(ulnet_mknet(ULNET_LND_TCP, 7), buf, 4), -ENOSPC);
	assert_int_equal(ulnet_net_format(ulnet_mknet(ULNET_LND_TCP, 7), buf, 5), 4);
	assert_int_equal(ulnet_net_format(ulnet_mknet(ULNET_LND_TOFU, 0), buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(ulnet_net_format(ULNET_NET_ANY, buf, sizeof(buf)), -EINVAL);
	assert_null(ulnet_lnd_type_name(ULNET_LND_TOFU));
	assert_null(ulnet_lnd_type_name(1));
	assert_string_equal(ulnet_lnd_type_name(ULNET_LND_O2IB), "o2ib");
	assert_string_equal(ulnet_lnd_type_name(ULNET_LND_BXI3F), "bxi3f");
}

static void test_bad_nets(void **state)
{
	static const struct {
		const char *s;
		int pos;
		const char *msg;
	} t[] = {
		{ "", 0, "missing network name" },
		{ "tpc", 0, "unknown network type 'tpc'" },
		{ "tcpip", 0, "unknown network type 'tcpip'" },
		{ "TCP", 0, "unknown network type" },
		{ "tcp70000", 3, "net number 70000 out of range" },
		{ "tcp65536", 3, "out of range" },
		{ "tcp99999999999999999999", 3, "out of range" },
		{ "tcp1x", 3, "bad net number '1x'" },
		{ "tcp 1", 0, "unknown network type" },
		{ "lo0", 2, "takes no number" },
		{ "lo1", 2, "takes no number" },
		{ "tcp-1", 0, "unknown network type" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_parse_err err = { .pos = -1 };
		ulnet_net_t net = 0;

		assert_int_equal(ulnet_net_parse(t[i].s, &net, &err), -EINVAL);
		if (err.pos != t[i].pos || !strstr(err.msg, t[i].msg))
			fail_msg("'%s': got pos %d '%s', want pos %d '%s'", t[i].s, err.pos,
				 err.msg, t[i].pos, t[i].msg);
		assert_int_equal(ulnet_net_parse(t[i].s, &net, NULL), -EINVAL);
	}
}

static void test_bad_nids(void **state)
{
	static const struct {
		const char *s;
		int pos;
		const char *msg;
	} t[] = {
		{ "1.2.3.4@tpc", 8, "unknown network type 'tpc'" },
		{ "1.2.3.4@", 8, "missing network name" },
		{ "300.1.1.1@tcp", 0, "bad IPv4 address '300.1.1.1'" },
		{ "1.2.3@tcp", 0, "bad IPv4 address" },
		{ "1.2.3.4.5@tcp", 0, "bad IPv4 address" },
		{ "1.2.3.4x@tcp", 0, "bad IPv4 address" },
		{ "1..3.4@tcp", 0, "bad IPv4 address" },
		{ " 1.2.3.4@tcp", 0, "bad IPv4 address" },
		{ "1.2.3.4 @tcp", 0, "bad IPv4 address" },
		{ "1.2.3.4@tcp ", 8, "unknown network type 'tcp '" },
		{ "1.2.3.4@ tcp", 8, "unknown network type" },
		{ "-1.2.3.4@tcp", 0, "bad IPv4 address" },
		{ "1.2.3.0004@tcp", 0, "bad IPv4 address" },
		{ "1.2.3.4@tcp70000", 11, "net number 70000 out of range" },
		{ "1.2.3.4@o2ibx", 8, "unknown network type 'o2ibx'" },
		{ "@tcp", 0, "missing address" },
		{ "", 0, "missing address" },
		{ "*@tcp", 0, "bad IPv4 address '*'" },
		{ "*", 0, "bad IPv4 address '*'" },
		{ "2001:db8::1::2@tcp", 0, "bad IPv6 address" },
		{ "2001:db8::g@o2ib", 0, "bad IPv6 address" },
		{ "[2001:db8::1]@tcp", 0, "bad IPv6 address" },
		{ "2001:db8::1@gip", 0, "no IPv6" },
		{ "1.2.3.4@gni", 0, "bad numeric address '1.2.3.4'" },
		{ "4294967296@kfi", 0, "bad numeric address" },
		{ "0x100000000@kfi", 0, "bad numeric address" },
		{ "0x@kfi", 0, "bad numeric address" },
		{ "-1@gni", 0, "bad numeric address" },
		{ " 12@gni", 0, "bad numeric address" },
		{ "@ptlf", 0, "missing address" },
		{ "0@lo1", 4, "takes no number" },
		{ "1.2.3.4@tcp@tcp", 8, "unknown network type" },
		{ "1@2@gni", 2, "unknown network type '2@gni'" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ulnet_parse_err err = { .pos = -1 };
		ulnet_nid_t nid;

		assert_int_equal(ulnet_nid_parse(t[i].s, &nid, &err), -EINVAL);
		if (err.pos != t[i].pos || !strstr(err.msg, t[i].msg))
			fail_msg("'%s': got pos %d '%s', want pos %d '%s'", t[i].s, err.pos,
				 err.msg, t[i].pos, t[i].msg);
		assert_int_equal(ulnet_nid_parse(t[i].s, &nid, NULL), -EINVAL);
	}
}

static void test_error_message_truncated(void **state)
{
	char in[400];
	struct ulnet_parse_err err;
	ulnet_nid_t nid;
	(void)state;

	memset(in, 'x', sizeof(in));
	in[sizeof(in) - 1] = '\0';
	in[sizeof(in) - 5] = '@';
	assert_int_equal(ulnet_nid_parse(in, &nid, &err), -EINVAL);
	assert_true(strlen(err.msg) < sizeof(err.msg));
	assert_int_equal(err.pos, (int)sizeof(in) - 4);
}

static void test_format_edges(void **state)
{
	ulnet_nid_t nid;
	char buf[ULNET_NIDSTR_SIZE];
	char small[8];
	(void)state;

	assert_int_equal(ulnet_nid_parse("192.168.1.2@tcp", &nid, NULL), 0);
	assert_int_equal(ulnet_nid_format(&nid, small, sizeof(small)), -ENOSPC);
	assert_int_equal(ulnet_nid_format(&nid, buf, 16), 15);
	assert_int_equal(ulnet_nid_format(&nid, buf, 15), -ENOSPC);

	/* Unknown type: the kernel's hex form. */
	memset(&nid, 0, sizeof(nid));
	nid.type = ULNET_LND_TOFU;
	nid.num = 3;
	nid.addr[3] = 0x2a;
	assert_string_equal(ulnet_nid_str(&nid, buf), "2a@<17:3>");
	nid.size = 12;
	nid.addr[4] = 1;
	assert_string_equal(ulnet_nid_str(&nid, buf), "2a:1000000:0:0@<17:3>");

	/* Sizes other than 0 and 12, and 16-byte numeric addresses, have no text. */
	nid.type = ULNET_LND_TCP;
	nid.size = 5;
	assert_int_equal(ulnet_nid_format(&nid, buf, sizeof(buf)), -EINVAL);
	assert_string_equal(ulnet_nid_str(&nid, buf), "<bad nid>");
	nid.type = ULNET_LND_GNI;
	nid.size = 12;
	assert_int_equal(ulnet_nid_format(&nid, buf, sizeof(buf)), -EINVAL);

	/* The longest text fits ULNET_NIDSTR_SIZE. */
	assert_int_equal(ulnet_nid_parse("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255@bxi3f", &nid, NULL),
			 -EINVAL);
	assert_int_equal(ulnet_nid_parse("0:ffff:ffff:ffff:ffff:ffff:255.255.255.255@o2ib65535",
					 &nid, NULL), 0);
	assert_true(ulnet_nid_format(&nid, buf, sizeof(buf)) > 0);
	check_roundtrip(buf, buf);
}

static void test_from_ipv4(void **state)
{
	ulnet_nid_t nid;
	char buf[ULNET_NIDSTR_SIZE];
	(void)state;

	ulnet_nid_from_ipv4(0x0a000001, ulnet_mknet(ULNET_LND_O2IB, 1), &nid);
	assert_string_equal(ulnet_nid_str(&nid, buf), "10.0.0.1@o2ib1");
	assert_int_equal(ulnet_nid_ipv4(&nid), 0x0a000001);
}

/* ulnet_nid_same() compares fields directly: it must agree with
 * ulnet_nid_cmp() == 0 whichever field differs. */
static void test_same_agrees_with_cmp(void **state)
{
	ulnet_nid_t base, v[6];
	(void)state;

	assert_int_equal(ulnet_nid_parse("10.1.2.3@tcp7", &base, NULL), 0);
	for (unsigned i = 0; i < 6; i++)
		v[i] = base;
	v[0].size = 12;
	v[1].type = (uint8_t)(base.type + 1);
	v[2].num = (uint16_t)(base.num ^ 0x100);
	v[3].addr[3] ^= 1;
	v[4].addr[15] = 1;   /* past an IPv4 address: still part of the NID */
	assert_true(ulnet_nid_same(&base, &v[5]));
	assert_int_equal(ulnet_nid_cmp(&base, &v[5]), 0);
	for (unsigned i = 0; i < 5; i++) {
		assert_false(ulnet_nid_same(&base, &v[i]));
		assert_int_not_equal(ulnet_nid_cmp(&base, &v[i]), 0);
	}
	assert_true(ulnet_nid_same(&ULNET_NID_ANY, &ULNET_NID_ANY));
	assert_false(ulnet_nid_same(&ULNET_NID_ANY, &ULNET_NID_LO0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_types_and_nets),
		cmocka_unit_test(test_roundtrip_examples),
		cmocka_unit_test(test_nid4_reference_values),
		cmocka_unit_test(test_ipv6_is_large),
		cmocka_unit_test(test_wire_roundtrip),
		cmocka_unit_test(test_any),
		cmocka_unit_test(test_nets),
		cmocka_unit_test(test_bad_nets),
		cmocka_unit_test(test_bad_nids),
		cmocka_unit_test(test_error_message_truncated),
		cmocka_unit_test(test_format_edges),
		cmocka_unit_test(test_from_ipv4),
		cmocka_unit_test(test_same_agrees_with_cmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
