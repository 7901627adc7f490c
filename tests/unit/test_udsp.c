/* SPDX-License-Identifier: MIT */
/*
 * test_udsp.c - user defined selection policies (ulnet/udsp.h) on memlnd:
 * descriptors (parsing, canonical form, errors), the rule table (index,
 * duplicates, deletion), what the rules set on NIs and peer NIs (and again
 * when NIs, peer NIs and routes come and go), and that selection follows
 * them: each selection test sends the same messages without the rule and
 * with it, and the rule changes the NI, peer NI, net or gateway chosen.
 *
 * NIDs are "<n>@gni<k>" (memlnd); discovery is off, peers are added by
 * hand (Multi-Rail unless said).
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

#include "fake_node.h"
#include "memlnd.h"
#include "ulnet/routing.h"
#include "ulnet/udsp.h"

#define NONE ULNET_UDSP_PRIO_NONE

static ulnet_nid_t nid(uint32_t addr, unsigned num)
{
	ulnet_nid_t n;

	memlnd_nid(addr, &n);
	n.num = (uint16_t)num;
	return n;
}

static void add_ni(struct memlnd_net *net, ulnet_t *ln, uint32_t addr, unsigned num)
{
	struct ulnet_ni_conf c;

	memset(&c, 0, sizeof(c));
	c.nid = nid(addr, num);
	assert_int_equal(memlnd_add_ni_conf(net, ln, &c), 0);
}

static ulnet_t *node(void)
{
	ulnet_t *ln = mk();
	struct ulnet_globals g;

	ulnet_globals_get(ln, &g);
	g.discovery = 0;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
	return ln;
}

static struct ulnet_udsp_rule rule(const char *src, const char *dst, const char *rte, int prio)
{
	struct ulnet_udsp_rule r;

	memset(&r, 0, sizeof(r));
	snprintf(r.match[ULNET_UDSP_SRC], sizeof(r.match[0]), "%s", src ? src : "");
	snprintf(r.match[ULNET_UDSP_DST], sizeof(r.match[0]), "%s", dst ? dst : "");
	snprintf(r.match[ULNET_UDSP_RTE], sizeof(r.match[0]), "%s", rte ? rte : "");
	r.action = prio >= 0 ? ULNET_UDSP_ACTION_PRIORITY : ULNET_UDSP_ACTION_PREFERRED;
	r.priority = prio >= 0 ? (uint32_t)prio : 0;
	return r;
}

static int add(ulnet_t *ln, const char *src, const char *dst, const char *rte, int prio, int idx)
{
	struct ulnet_udsp_rule r = rule(src, dst, rte, prio);

	return ulnet_udsp_add(ln, &r, idx, NULL);
}

/* --- descriptors ------------------------------------------------------------------ */

/* Each descriptor as lnetctl shows it back (udsp show). */
static void test_descr_canonical(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} c[] = {
		{ "tcp", "tcp" },
		{ "tcp0", "tcp0" },
		{ "tcp1", "tcp1" },
		{ "o2ib[1-3]", "o2ib[1-3]" },
		{ "tcp[2,4-8/2]", "tcp[2,4-8/2]" },
		{ "192.168.77.11@tcp", "192.168.77.11@tcp" },
		{ "192.168.77.[140-141]@tcp1", "192.168.77.[140-141]@tcp1" },
		{ "10.0.[1,3-5].*@tcp", "10.0.[1,3-5].[0-255]@tcp" },
		{ "10.0.0.[1-1]@tcp", "10.0.0.1@tcp" },
		{ "10.0.0.[2-10/4]@o2ib[1-2]", "10.0.0.[2-10/4]@o2ib[1-2]" },
		{ "[5-9/2]@gni", "[5-9/2]@gni" },
		{ "0x10@kfi", "16@kfi" },
		{ "0@lo", "0@lo" },
		{ "lo", "lo" },
	};
	ulnet_t *ln = mk();
	struct ulnet_udsp_rule r;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (add(ln, c[i].in, NULL, NULL, 1, -1) != 0)
			fail_msg("'%s' refused", c[i].in);
		assert_int_equal(ulnet_udsp_get(ln, 0, &r), 0);
		if (strcmp(r.match[ULNET_UDSP_SRC], c[i].out) != 0)
			fail_msg("'%s' shows as '%s', want '%s'", c[i].in, r.match[ULNET_UDSP_SRC],
				 c[i].out);
		assert_string_equal(r.match[ULNET_UDSP_DST], "");
		assert_int_equal(r.action, ULNET_UDSP_ACTION_PRIORITY);
		assert_int_equal(r.priority, 1);
		assert_int_equal(ulnet_udsp_del(ln, 0), 0);
	}
	ulnet_destroy(ln);
}

/* What does not parse is -EINVAL, naming the descriptor and why. */
static void test_descr_errors(void **state)
{
	(void)state;
	static const struct {
		const char *in, *why;
	} c[] = {
		{ "foo9", "unknown network type" },
		{ "tcpx", "unknown network" },
		{ "tcp[3-1]", "backwards" },
		{ "tcp[1-3", "bad range expression" },
		{ "1.2.3@tcp", "needs 4 dotted fields" },
		{ "1.2.3.4.5@tcp", "bad range expression" },
		{ "1.2.3.256@tcp", "out of range" },
		{ "a.b.c.d@tcp", "bad range expression" },
		{ "*@tcp", "needs 4 dotted fields" },
		{ "2001:db8::1@tcp", "needs 4 dotted fields" },
		{ "@tcp", "missing address range" },
		{ "1.2.3.4@tcp@tcp", "more than one '@'" },
		{ "1.2.3.4@", "unknown network type" },
		{ "[1-5/0]@gni", "stride must not be 0" },
	};
	struct ulnet_udsp_err e;
	struct ulnet_udsp_rule r;
	char big[400];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		r = rule(NULL, c[i].in, NULL, 1);
		if (ulnet_udsp_check(&r, &e) != -EINVAL)
			fail_msg("'%s' accepted", c[i].in);
		assert_int_equal(e.part, ULNET_UDSP_DST);
		if (!strstr(e.parse.msg, c[i].why))
			fail_msg("'%s': '%s', want '%s'", c[i].in, e.parse.msg, c[i].why);
	}
	/* too long a descriptor: the text field holds it unterminated */
	memset(big, '1', sizeof(big));
	r = rule(NULL, NULL, NULL, 1);
	memcpy(r.match[ULNET_UDSP_SRC], big, sizeof(r.match[0]));
	assert_int_equal(ulnet_udsp_check(&r, &e), -EINVAL);
	assert_int_equal(e.part, ULNET_UDSP_SRC);
	assert_non_null(strstr(e.parse.msg, "longer than 255 bytes"));
}

/* Combinations: what lnetctl refuses, and what the kernel would keep and
 * never apply (refused, not accepted and ignored). */
static void test_rule_combinations(void **state)
{
	(void)state;
	static const struct {
		const char *src, *dst, *rte;
		int prio, rc;
		const char *why;
	} c[] = {
		{ NULL, NULL, NULL, 1, -EINVAL, "no src, dst or rte" },
		{ "tcp", NULL, "1.1.1.1@tcp", 1, -EINVAL, "src and rte" },
		{ "tcp", "tcp1", "1.1.1.1@tcp", -1, -EINVAL, "src and rte" },
		{ NULL, NULL, "1.1.1.1@tcp", 1, -EOPNOTSUPP, "rte without dst" },
		{ NULL, NULL, "1.1.1.1@tcp", -1, -EOPNOTSUPP, "rte without dst" },
		{ "1.1.1.1@tcp", "tcp1", NULL, 5, -EOPNOTSUPP, "a priority on src + dst" },
		{ NULL, "tcp1", "1.1.1.1@tcp", 5, -EOPNOTSUPP, "a priority on dst + rte" },
		{ "tcp", "tcp1", NULL, -1, -EOPNOTSUPP, "src as a net alone" },
		{ NULL, "tcp1", "tcp", -1, -EOPNOTSUPP, "rte as a net alone" },
		{ "tcp", NULL, NULL, -1, -EOPNOTSUPP, "a preferred list on src alone" },
		{ NULL, "tcp", NULL, -1, -EOPNOTSUPP, "a preferred list on dst alone" },
		{ "1.1.1.1@tcp", "tcp1", NULL, -1, 0, NULL },
		{ NULL, "tcp1", "1.1.1.1@tcp", -1, 0, NULL },
		{ NULL, "tcp1", NULL, 0, 0, NULL },
	};
	struct ulnet_udsp_err e;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ulnet_udsp_rule r = rule(c[i].src, c[i].dst, c[i].rte, c[i].prio);
		int rc = ulnet_udsp_check(&r, &e);

		if (rc != c[i].rc)
			fail_msg("case %zu: %d, want %d (%s)", i, rc, c[i].rc, e.parse.msg);
		if (c[i].why && !strstr(e.parse.msg, c[i].why))
			fail_msg("case %zu: '%s', want '%s'", i, e.parse.msg, c[i].why);
	}
	struct ulnet_udsp_rule r = rule("tcp", NULL, NULL, 1);

	r.action = 7;
	assert_int_equal(ulnet_udsp_check(&r, &e), -EINVAL);
}

/* --- the table ------------------------------------------------------------------------ */

static void expect_rule(ulnet_t *ln, int idx, int part, const char *text, uint32_t prio)
{
	struct ulnet_udsp_rule r;

	assert_int_equal(ulnet_udsp_get(ln, idx, &r), 0);
	if (strcmp(r.match[part], text) != 0)
		fail_msg("rule %d: '%s', want '%s'", idx, r.match[part], text);
	assert_int_equal(r.priority, prio);
}

/* lnetctl-udsp-show.txt's sequence: appended, inserted at --idx; the same
 * descriptors again: another priority updates it, else -EALREADY;
 * deletion shifts the rules after it; -1 deletes them all. */
static void test_table(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	struct ulnet_udsp_rule r;

	assert_int_equal(ulnet_udsp_count(ln), 0);
	assert_int_equal(ulnet_udsp_get(ln, 0, &r), -ENOENT);
	assert_int_equal(add(ln, "tcp", NULL, NULL, 0, -1), 0);
	assert_int_equal(add(ln, NULL, "tcp1", NULL, 1, -1), 0);
	assert_int_equal(add(ln, "192.168.77.11@tcp", NULL, NULL, 2, -1), 0);
	assert_int_equal(add(ln, NULL, "192.168.77.141@tcp1", NULL, 3, 1), 0);
	assert_int_equal(add(ln, NULL, "192.168.77.[140-141]@tcp1", NULL, 6, 99), 0);
	assert_int_equal(ulnet_udsp_count(ln), 5);
	expect_rule(ln, 0, ULNET_UDSP_SRC, "tcp", 0);
	expect_rule(ln, 1, ULNET_UDSP_DST, "192.168.77.141@tcp1", 3);
	expect_rule(ln, 2, ULNET_UDSP_DST, "tcp1", 1);
	expect_rule(ln, 3, ULNET_UDSP_SRC, "192.168.77.11@tcp", 2);
	expect_rule(ln, 4, ULNET_UDSP_DST, "192.168.77.[140-141]@tcp1", 6);
	assert_int_equal(ulnet_udsp_get(ln, 5, &r), -ENOENT);

	/* the same descriptors (in another spelling): same priority
	 * -EALREADY, another one updates the rule in place */
	assert_int_equal(add(ln, "tcp", NULL, NULL, 0, -1), -EALREADY);
	assert_int_equal(add(ln, "tcp", NULL, NULL, 9, 3), 0);
	expect_rule(ln, 0, ULNET_UDSP_SRC, "tcp", 9);
	assert_int_equal(add(ln, NULL, "192.168.77.[140-141]@tcp1", NULL, 6, -1), -EALREADY);
	assert_int_equal(add(ln, NULL, "192.168.77.[0x8c-141]@tcp1", NULL, 6, -1), -EALREADY);
	assert_int_equal(ulnet_udsp_count(ln), 5);
	/* a pair given again is -EALREADY whatever */
	assert_int_equal(add(ln, "1.1.1.1@tcp", "tcp1", NULL, -1, -1), 0);
	assert_int_equal(add(ln, "1.1.1.1@tcp", "tcp1", NULL, -1, -1), -EALREADY);

	r = rule(NULL, "192.168.77.141@tcp1", NULL, 0);
	assert_int_equal(ulnet_udsp_find(ln, &r), 1);
	r = rule(NULL, "tcp9", NULL, 0);
	assert_int_equal(ulnet_udsp_find(ln, &r), -ENOENT);

	assert_int_equal(ulnet_udsp_del(ln, 0), 0);
	expect_rule(ln, 0, ULNET_UDSP_DST, "192.168.77.141@tcp1", 3);
	expect_rule(ln, 3, ULNET_UDSP_DST, "192.168.77.[140-141]@tcp1", 6);
	assert_int_equal(ulnet_udsp_del(ln, 5), -ENOENT);
	assert_int_equal(ulnet_udsp_del(ln, 4), 0);
	assert_int_equal(ulnet_udsp_count(ln), 4);
	assert_int_equal(ulnet_udsp_del(ln, -1), 0);
	assert_int_equal(ulnet_udsp_count(ln), 0);
	assert_int_equal(ulnet_udsp_del(ln, -1), 0);
	assert_int_equal(ulnet_udsp_del(ln, 0), -ENOENT);
	/* bad arguments */
	assert_int_equal(ulnet_udsp_add(NULL, &r, 0, NULL), -EINVAL);
	assert_int_equal(ulnet_udsp_add(ln, NULL, 0, NULL), -EINVAL);
	assert_int_equal(ulnet_udsp_get(ln, -1, &r), -ENOENT);
	assert_int_equal(ulnet_udsp_del(NULL, 0), -EINVAL);
	assert_int_equal(ulnet_udsp_count(NULL), -EINVAL);
	ulnet_destroy(ln);
}

/* --- what the rules set ------------------------------------------------------------ */

static struct ulnet_ni_info ni_of(ulnet_t *ln, ulnet_nid_t n)
{
	struct ulnet_ni_info info;

	for (int i = 0; ulnet_ni_info(ln, i, &info) == 0; i++)
		if (ulnet_nid_same(&info.nid, &n))
			return info;
	fail_msg("no NI %u@gni%u", ulnet_nid_ipv4(&n), n.num);
	return info;
}

/* The peer NI `n`'s info (with its preferred lists: release it). */
static void lpni_of(ulnet_t *ln, ulnet_nid_t n, struct ulnet_peer_info *pi,
		    const struct ulnet_peer_ni_info **pn)
{
	for (int i = 0; ulnet_peer_info_all(ln, i, pi) == 0; i++) {
		for (int j = 0; j < pi->nnis; j++) {
			*pn = ulnet_peer_info_ni(pi, j);
			if (ulnet_nid_same(&(*pn)->nid, &n))
				return;
		}
		ulnet_peer_info_release(pi);
	}
	fail_msg("no peer NI %u@gni%u", ulnet_nid_ipv4(&n), n.num);
}

static void expect_ni(ulnet_t *ln, ulnet_nid_t n, uint32_t net_prio, uint32_t nid_prio)
{
	struct ulnet_ni_info info = ni_of(ln, n);

	if (info.udsp_net_prio != net_prio || info.udsp_nid_prio != nid_prio)
		fail_msg("NI %u@gni%u: net %d nid %d, want %d %d", ulnet_nid_ipv4(&n), n.num,
			 (int)info.udsp_net_prio, (int)info.udsp_nid_prio, (int)net_prio, (int)nid_prio);
}

/* A peer NI's priorities, and its preferred lists as "a b|c" (source
 * NIDs' addresses, then gateways'). */
static void expect_lpni(ulnet_t *ln, ulnet_nid_t n, uint32_t net_prio, uint32_t nid_prio,
			const char *prefs)
{
	struct ulnet_peer_info pi;
	const struct ulnet_peer_ni_info *pn = NULL;
	char got[256] = "";
	size_t off = 0;

	lpni_of(ln, n, &pi, &pn);
	for (int i = 0; i < pn->udsp_npref_src + pn->udsp_npref_rtr; i++) {
		const ulnet_nid_t *p = &pn->udsp_pref[i];

		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%u.%u",
					i == pn->udsp_npref_src ? "|" : i ? " " : "",
					ulnet_nid_ipv4(p), p->num);
	}
	if (pn->udsp_net_prio != net_prio || pn->udsp_nid_prio != nid_prio || strcmp(got, prefs) != 0)
		fail_msg("peer NI %u@gni%u: net %d nid %d prefs '%s', want %d %d '%s'",
			 ulnet_nid_ipv4(&n), n.num, (int)pn->udsp_net_prio, (int)pn->udsp_nid_prio, got,
			 (int)net_prio, (int)nid_prio, prefs);
	ulnet_peer_info_release(&pi);
}

static void peer_add(ulnet_t *ln, ulnet_nid_t prim, const ulnet_nid_t *nids, int n, bool non_mr)
{
	assert_int_equal(ulnet_peer_add(ln, &prim, nids, n, non_mr), 0);
}

/* src rules set our nets' and NIs' priorities, dst rules the peers'; the
 * first matching rule wins; NIs and peer NIs added later get them; a
 * deleted rule's constructs take what the other rules give them. */
static void test_apply_priorities(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node();
	ulnet_nid_t p5[2] = { nid(6, 0), nid(5, 1) };

	add_ni(net, a, 1, 0);
	add_ni(net, a, 2, 0);
	add_ni(net, a, 1, 1);
	peer_add(a, nid(5, 0), p5, 2, false);
	expect_ni(a, ULNET_NID_LO0, NONE, NONE);
	expect_ni(a, nid(1, 0), NONE, NONE);
	expect_lpni(a, nid(5, 0), NONE, NONE, "");

	assert_int_equal(add(a, "gni", NULL, NULL, 3, -1), 0);
	assert_int_equal(add(a, "2@gni", NULL, NULL, 1, -1), 0);
	assert_int_equal(add(a, "[1-9]@gni", NULL, NULL, 4, -1), 0);
	assert_int_equal(add(a, NULL, "gni1", NULL, 2, -1), 0);
	assert_int_equal(add(a, NULL, "6@gni", NULL, 0, -1), 0);
	assert_int_equal(add(a, "lo", NULL, NULL, 8, -1), 0);
	expect_ni(a, ULNET_NID_LO0, 8, NONE);
	expect_ni(a, nid(1, 0), 3, 4);
	expect_ni(a, nid(2, 0), 3, 1);         /* rule 1 before rule 2 */
	expect_ni(a, nid(1, 1), NONE, NONE);   /* "gni" is gni0 only */
	expect_lpni(a, nid(5, 0), NONE, NONE, "");
	expect_lpni(a, nid(6, 0), NONE, 0, "");
	expect_lpni(a, nid(5, 1), 2, NONE, "");

	/* added afterwards: an NI, a peer NI, a peer */
	ulnet_nid_t p7 = nid(7, 1);

	add_ni(net, a, 3, 0);
	expect_ni(a, nid(3, 0), 3, 4);
	peer_add(a, nid(5, 0), &p7, 1, false);
	expect_lpni(a, nid(7, 1), 2, NONE, "");
	peer_add(a, nid(6, 1), NULL, 0, true);
	expect_lpni(a, nid(6, 1), 2, NONE, "");

	/* rule 1 goes: 2@gni takes rule 2's priority (the kernel would
	 * leave it with none until something else changes) */
	assert_int_equal(ulnet_udsp_del(a, 1), 0);
	expect_ni(a, nid(2, 0), 3, 4);
	/* a priority given again updates it everywhere */
	assert_int_equal(add(a, "gni", NULL, NULL, 5, -1), 0);
	expect_ni(a, nid(1, 0), 5, 4);
	assert_int_equal(ulnet_udsp_del(a, -1), 0);
	expect_ni(a, nid(1, 0), NONE, NONE);
	expect_ni(a, ULNET_NID_LO0, NONE, NONE);
	expect_lpni(a, nid(6, 0), NONE, NONE, "");
	expect_lpni(a, nid(5, 1), NONE, NONE, "");
	ulnet_destroy(a);
	memlnd_net_destroy(net);
}

/* src + dst: the peer NIs matching dst prefer our NIs matching src,
 * following our NIs as they come and go; dst + rte: they prefer the
 * gateways matching rte, following the routes. */
static void test_apply_preferred(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node();
	ulnet_nid_t p5[1] = { nid(6, 0) };
	struct ulnet_route_conf rc = { .net = ulnet_mknet(ULNET_LND_GNI, 2), .hops = -1 };

	add_ni(net, a, 1, 0);
	add_ni(net, a, 2, 0);
	peer_add(a, nid(5, 0), p5, 1, false);
	peer_add(a, nid(50, 2), NULL, 0, false);
	peer_add(a, nid(51, 2), NULL, 0, false);
	assert_int_equal(add(a, "[1-3]@gni", "5@gni", NULL, -1, -1), 0);
	/* no NI of ours matches 9@gni: the next rule decides */
	assert_int_equal(add(a, "9@gni", "gni", NULL, -1, -1), 0);
	assert_int_equal(add(a, "2@gni", "gni", NULL, -1, -1), 0);
	expect_lpni(a, nid(5, 0), NONE, NONE, "1.0 2.0");
	expect_lpni(a, nid(6, 0), NONE, NONE, "2.0");
	add_ni(net, a, 3, 0);
	expect_lpni(a, nid(5, 0), NONE, NONE, "1.0 2.0 3.0");
	ulnet_nid_t n2 = nid(2, 0);

	assert_int_equal(ulnet_ni_del(a, &n2), 0);
	expect_lpni(a, nid(5, 0), NONE, NONE, "1.0 3.0");
	expect_lpni(a, nid(6, 0), NONE, NONE, "");

	/* gateways 7@gni and 8@gni to gni2 */
	assert_int_equal(add(a, NULL, "[50-59]@gni2", "[8-9]@gni", -1, -1), 0);
	expect_lpni(a, nid(50, 2), NONE, NONE, "");
	rc.gateway = nid(7, 0);
	assert_int_equal(ulnet_route_add(a, &rc), 0);
	rc.gateway = nid(8, 0);
	assert_int_equal(ulnet_route_add(a, &rc), 0);
	expect_lpni(a, nid(50, 2), NONE, NONE, "|8.0");
	expect_lpni(a, nid(51, 2), NONE, NONE, "|8.0");
	expect_lpni(a, nid(5, 0), NONE, NONE, "1.0 3.0");
	assert_int_equal(ulnet_route_del(a, rc.net, &rc.gateway), 1);
	expect_lpni(a, nid(50, 2), NONE, NONE, "");
	ulnet_destroy(a);
	memlnd_net_destroy(net);
}

/* --- selection ---------------------------------------------------------------------------- */

struct sent {
	int n;
};

static void sent_ev(const struct ulnet_event *ev)
{
	struct sent *s = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_SEND)
		s->n++;
}

/* `n` PUTs to `to` on `portal`; the (source, next hop, destination) of
 * each in tr. */
static int put_n_portal(struct memlnd_net *net, ulnet_t *ln, ulnet_nid_t to, int n,
			struct memlnd_trace_ent *tr, int max, unsigned portal)
{
	static uint8_t buf[8];
	static struct sent s;

	memlnd_trace_clear(net);
	for (int i = 0; i < n; i++) {
		struct ulnet_md md = { .start = buf, .length = sizeof(buf), .threshold = 1,
				       .user_ptr = &s, .handler = sent_ev };
		ulnet_process_id_t t = { .nid = to, .pid = ULNET_PID_LUSTRE };
		ulnet_handle_t mdh;

		assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
		assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, t, portal, 7, 0, 0), 0);
		memlnd_pump(net);
	}
	return memlnd_trace(net, tr, max);
}

static int put_n(struct memlnd_net *net, ulnet_t *ln, ulnet_nid_t to, int n,
		 struct memlnd_trace_ent *tr, int max)
{
	return put_n_portal(net, ln, to, n, tr, max, 40);
}

/* How many of the PUTs in tr went from `src` (NULL: any) to next hop
 * `hop` (NULL: any). */
static int count(const struct memlnd_trace_ent *tr, int n, const ulnet_nid_t *src,
		 const ulnet_nid_t *hop)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (tr[i].hdr.type == ULNET_MSG_PUT &&
		    (!src || ulnet_nid_same(&tr[i].hdr.src_nid, src)) &&
		    (!hop || ulnet_nid_same(&tr[i].hop, hop)))
			k++;
	return k;
}

/* Our NI: round robin between two equal NIs; a src NID rule makes one
 * the only choice (it beats credits and round robin, not health). */
static void test_select_local_ni(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node(), *b = node();
	ulnet_nid_t n1 = nid(1, 0), n2 = nid(2, 0), p5 = nid(5, 0);
	struct memlnd_trace_ent tr[16];
	int n;

	add_ni(net, a, 1, 0);
	add_ni(net, a, 2, 0);
	add_ni(net, b, 5, 0);
	peer_add(a, p5, NULL, 0, false);
	n = put_n(net, a, p5, 6, tr, 16);
	assert_int_equal(count(tr, n, &n1, NULL), 3);
	assert_int_equal(count(tr, n, &n2, NULL), 3);

	assert_int_equal(add(a, "2@gni", NULL, NULL, 0, -1), 0);
	n = put_n(net, a, p5, 6, tr, 16);
	assert_int_equal(count(tr, n, &n2, &p5), 6);
	/* a lower priority on the other NI changes nothing; alone it wins */
	assert_int_equal(add(a, "1@gni", NULL, NULL, 5, -1), 0);
	n = put_n(net, a, p5, 4, tr, 16);
	assert_int_equal(count(tr, n, &n2, NULL), 4);
	assert_int_equal(ulnet_udsp_del(a, 0), 0);
	n = put_n(net, a, p5, 4, tr, 16);
	assert_int_equal(count(tr, n, &n1, NULL), 4);
	/* health first, as the kernel's lnet_get_best_ni() */
	assert_int_equal(ulnet_ni_set_health(a, &n1, 500), 0);
	n = put_n(net, a, p5, 4, tr, 16);
	assert_int_equal(count(tr, n, &n2, NULL), 4);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* The peer NI of a Multi-Rail peer: round robin; a dst NID rule picks
 * one. */
static void test_select_peer_ni(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node(), *b = node();
	ulnet_nid_t p5 = nid(5, 0), p6 = nid(6, 0);
	struct memlnd_trace_ent tr[16];
	int n;

	add_ni(net, a, 1, 0);
	add_ni(net, b, 5, 0);
	add_ni(net, b, 6, 0);
	peer_add(a, p5, &p6, 1, false);
	n = put_n(net, a, p5, 6, tr, 16);
	assert_int_equal(count(tr, n, NULL, &p5), 3);
	assert_int_equal(count(tr, n, NULL, &p6), 3);
	assert_int_equal(add(a, NULL, "[6-7]@gni", NULL, 1, -1), 0);
	n = put_n(net, a, p5, 6, tr, 16);
	assert_int_equal(count(tr, n, NULL, &p6), 6);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* The net, for a peer with NIs on two of our nets: round robin; our net's
 * priority (src net rule) picks one; the peer net's (dst net rule) comes
 * before it, as in the kernel's lnet_find_best_ni_on_local_net(). */
static void test_select_net(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node(), *b = node();
	ulnet_nid_t p0 = nid(5, 0), p1 = nid(5, 1);
	struct memlnd_trace_ent tr[16];
	int n;

	add_ni(net, a, 1, 0);
	add_ni(net, a, 1, 1);
	add_ni(net, b, 5, 0);
	add_ni(net, b, 5, 1);
	peer_add(a, p0, &p1, 1, false);
	n = put_n(net, a, p0, 6, tr, 16);
	assert_int_equal(count(tr, n, NULL, &p0), 3);
	assert_int_equal(count(tr, n, NULL, &p1), 3);
	assert_int_equal(add(a, "gni1", NULL, NULL, 0, -1), 0);
	n = put_n(net, a, p0, 6, tr, 16);
	assert_int_equal(count(tr, n, NULL, &p1), 6);
	assert_int_equal(add(a, NULL, "gni", NULL, 0, -1), 0);
	n = put_n(net, a, p0, 6, tr, 16);
	assert_int_equal(count(tr, n, NULL, &p0), 6);
	ulnet_destroy(a);
	ulnet_destroy(b);
	memlnd_net_destroy(net);
}

/* src + dst: a Multi-Rail peer NI is preferred when we send from the NI it
 * prefers (our NIs still take turns); a non-Multi-Rail peer hears from
 * that NI only. */
static void test_select_pair(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node(), *b = node(), *c = node();
	ulnet_nid_t n1 = nid(1, 0), n2 = nid(2, 0), p5 = nid(5, 0), p6 = nid(6, 0), p9 = nid(9, 0);
	struct memlnd_trace_ent tr[16];
	int n, pairs;

	add_ni(net, a, 1, 0);
	add_ni(net, a, 2, 0);
	add_ni(net, b, 5, 0);
	add_ni(net, b, 6, 0);
	add_ni(net, c, 9, 0);
	peer_add(a, p5, &p6, 1, false);
	/* without the rule, 1@gni sends to 5@gni (both round robins turn
	 * together) */
	n = put_n(net, a, p5, 8, tr, 16);
	assert_int_equal(count(tr, n, &n1, NULL), 4);
	assert_true(count(tr, n, &n1, &p5) > 0);
	assert_int_equal(add(a, "1@gni", "6@gni", NULL, -1, -1), 0);
	n = put_n(net, a, p5, 8, tr, 16);
	pairs = count(tr, n, &n1, &p6);
	assert_int_equal(count(tr, n, &n1, NULL), pairs);
	assert_int_equal(pairs, 4);
	assert_int_equal(count(tr, n, &n2, NULL), 4);

	/* non-MR: the first message's NI would be kept; the rule's wins */
	peer_add(a, p9, NULL, 0, true);
	n = put_n(net, a, p9, 1, tr, 16);
	assert_int_equal(n, 1);
	ulnet_nid_t first = tr[0].hdr.src_nid, other = ulnet_nid_same(&first, &n1) ? n2 : n1;
	char ob[ULNET_NIDSTR_SIZE];

	n = put_n(net, a, p9, 4, tr, 16);
	assert_int_equal(count(tr, n, &first, &p9), 4);
	assert_int_equal(add(a, ulnet_nid_str(&other, ob), "9@gni", NULL, -1, -1), 0);
	n = put_n(net, a, p9, 4, tr, 16);
	assert_int_equal(count(tr, n, &other, &p9), 4);
	/* LNet's own reserved-portal traffic (pings, pushes) is not pinned:
	 * it takes turns between our NIs (the kernel's
	 * lnet_select_preferred_best_ni()) */
	n = put_n_portal(net, a, p9, 4, tr, 16, ULNET_RESERVED_PORTAL);
	assert_int_equal(n, 4);
	assert_true(count(tr, n, &n1, &p9) > 0);
	assert_true(count(tr, n, &n2, &p9) > 0);
	ulnet_destroy(a);
	ulnet_destroy(b);
	ulnet_destroy(c);
	memlnd_net_destroy(net);
}

/* dst + rte: two equal routes take turns; the destination's preferred
 * gateway takes them all (before route priority, as the kernel's
 * lnet_compare_routes()); another destination is not concerned. */
static void test_select_gateway(void **state)
{
	(void)state;
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *a = node(), *g7 = node(), *g8 = node();
	ulnet_nid_t n7 = nid(7, 0), n8 = nid(8, 0), d50 = nid(50, 2), d51 = nid(51, 2);
	struct ulnet_route_conf rc = { .net = ulnet_mknet(ULNET_LND_GNI, 2), .hops = -1 };
	struct memlnd_trace_ent tr[16];
	int n;

	add_ni(net, a, 1, 0);
	add_ni(net, g7, 7, 0);
	add_ni(net, g8, 8, 0);
	rc.gateway = n7;
	assert_int_equal(ulnet_route_add(a, &rc), 0);
	rc.gateway = n8;
	assert_int_equal(ulnet_route_add(a, &rc), 0);
	n = put_n(net, a, d50, 4, tr, 16);
	assert_int_equal(count(tr, n, NULL, &n7), 2);
	assert_int_equal(count(tr, n, NULL, &n8), 2);
	assert_int_equal(add(a, NULL, "50@gni2", "8@gni", -1, -1), 0);
	n = put_n(net, a, d50, 4, tr, 16);
	assert_int_equal(count(tr, n, NULL, &n8), 4);
	n = put_n(net, a, d51, 4, tr, 16);
	assert_int_equal(count(tr, n, NULL, &n7), 2);
	/* preferred beats a better route priority */
	assert_int_equal(ulnet_route_del(a, rc.net, &n7), 1);
	rc.gateway = n7;
	rc.priority = 0;
	assert_int_equal(ulnet_route_del(a, rc.net, &n8), 1);
	assert_int_equal(ulnet_route_add(a, &rc), 0);
	rc.gateway = n8;
	rc.priority = 3;
	assert_int_equal(ulnet_route_add(a, &rc), 0);
	n = put_n(net, a, d50, 4, tr, 16);
	assert_int_equal(count(tr, n, NULL, &n8), 4);
	n = put_n(net, a, d51, 4, tr, 16);
	assert_int_equal(count(tr, n, NULL, &n7), 4);
	ulnet_destroy(a);
	ulnet_destroy(g7);
	ulnet_destroy(g8);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descr_canonical),
		cmocka_unit_test(test_descr_errors),
		cmocka_unit_test(test_rule_combinations),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_apply_priorities),
		cmocka_unit_test(test_apply_preferred),
		cmocka_unit_test(test_select_local_ni),
		cmocka_unit_test(test_select_peer_ni),
		cmocka_unit_test(test_select_net),
		cmocka_unit_test(test_select_pair),
		cmocka_unit_test(test_select_gateway),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
