/* SPDX-License-Identifier: MIT */
/*
 * test_rtnl.c - the rtnetlink link and address message decoder and the
 * link rule (src/util/rtnl.c): messages built here field by field decode
 * to what they say; each length that does not hold is refused; an NLMSG_ERROR
 * gives its errno; up or down by the kernel's rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sys/socket.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>

#include "util/rtnl.h"

struct msgbuf {
	uint8_t b[1024];
	size_t len;
};

static void put_bytes(struct msgbuf *m, const void *p, size_t n)
{
	assert_true(m->len + n <= sizeof(m->b));
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void pad4(struct msgbuf *m)
{
	static const uint8_t z[4];

	put_bytes(m, z, (4 - m->len % 4) % 4);
}

/* One link message: `name` (NULL: none), `oper` (-1: none). Returns the
 * offset where it starts. */
static size_t add_link(struct msgbuf *m, uint16_t type, int index, unsigned flags,
		       const char *name, int oper)
{
	size_t start = m->len;
	struct nlmsghdr nh = { .nlmsg_type = type };
	struct ifinfomsg ifi = { .ifi_index = index, .ifi_flags = flags };
	struct nlmsghdr *hp;

	put_bytes(m, &nh, sizeof(nh));
	put_bytes(m, &ifi, sizeof(ifi));
	if (name) {
		struct rtattr rta = { .rta_len = (unsigned short)(sizeof(rta) + strlen(name) + 1),
				      .rta_type = IFLA_IFNAME };

		put_bytes(m, &rta, sizeof(rta));
		put_bytes(m, name, strlen(name) + 1);
		pad4(m);
	}
	if (oper >= 0) {
		struct rtattr rta = { .rta_len = sizeof(rta) + 1, .rta_type = IFLA_OPERSTATE };
		uint8_t o = (uint8_t)oper;

		put_bytes(m, &rta, sizeof(rta));
		put_bytes(m, &o, 1);
		pad4(m);
	}
	hp = (struct nlmsghdr *)(void *)(m->b + start);
	hp->nlmsg_len = (uint32_t)(m->len - start);
	return start;
}

/* One address message: `local` (NULL: none) as IFA_LOCAL, `addr` (NULL:
 * none) as IFA_ADDRESS, each `alen` bytes. */
static void add_addr(struct msgbuf *m, uint16_t type, int family, int index, const void *local,
		     const void *addr, size_t alen)
{
	size_t start = m->len;
	struct nlmsghdr nh = { .nlmsg_type = type };
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family, .ifa_index = (unsigned)index };
	const void *v[2] = { addr, local };
	const unsigned short t[2] = { IFA_ADDRESS, IFA_LOCAL };

	put_bytes(m, &nh, sizeof(nh));
	put_bytes(m, &ifa, sizeof(ifa));
	for (int i = 0; i < 2; i++) {
		struct rtattr rta = { .rta_len = (unsigned short)(sizeof(rta) + alen), .rta_type = t[i] };

		if (!v[i])
			continue;
		put_bytes(m, &rta, sizeof(rta));
		put_bytes(m, v[i], alen);
		pad4(m);
	}
	((struct nlmsghdr *)(void *)(m->b + start))->nlmsg_len = (uint32_t)(m->len - start);
}

struct gota {
	int nlink, n;
	struct ul_rtnl_addr a[4];
};

static void collect_addr(void *arg, const struct ul_rtnl_addr *a)
{
	struct gota *g = arg;

	if (g->n < 4)
		g->a[g->n] = *a;
	g->n++;
}

static void count_link(void *arg, const struct ul_rtnl_link *l)
{
	(void)l;
	((struct gota *)arg)->nlink++;
}

/* RTM_NEWADDR / RTM_DELADDR: the interface, the family, and the
 * interface's own address (IFA_LOCAL before IFA_ADDRESS, which is the far
 * end on a point-to-point link); the links-only decoder skips them. */
static void test_decode_addrs(void **state)
{
	(void)state;
	struct msgbuf m = { .len = 0 };
	struct gota g = { 0 };
	struct ul_rtnl_handlers h = { count_link, collect_addr, &g };
	const uint8_t v4[4] = { 10, 201, 1, 1 }, peer4[4] = { 10, 201, 1, 9 };
	uint8_t v6[16] = { 0xfe, 0x80 };

	v6[15] = 7;
	add_addr(&m, RTM_NEWADDR, AF_INET, 5, v4, peer4, 4);
	add_link(&m, RTM_NEWLINK, 5, IFF_UP | IFF_LOWER_UP, "va1", IF_OPER_UP);
	add_addr(&m, RTM_DELADDR, AF_INET6, 6, NULL, v6, 16);
	add_addr(&m, RTM_DELADDR, AF_INET, 7, NULL, NULL, 4);
	assert_int_equal(ul_rtnl_decode_all(m.b, m.len, &h), 4);
	assert_int_equal(g.nlink, 1);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.a[0].ifindex, 5);
	assert_int_equal(g.a[0].family, AF_INET);
	assert_true(g.a[0].has_addr);
	assert_memory_equal(g.a[0].addr, v4, 4);
	assert_false(g.a[0].deleted);
	assert_int_equal(g.a[1].family, AF_INET6);
	assert_memory_equal(g.a[1].addr, v6, 16);
	assert_true(g.a[1].deleted);
	assert_false(g.a[2].has_addr);
	/* the links-only decoder: one link, the addresses not counted */
	assert_int_equal(ul_rtnl_decode(m.b, m.len, NULL, NULL), 1);

	/* an address of the wrong size for its family, an unknown family */
	m.len = 0;
	add_addr(&m, RTM_NEWADDR, AF_INET, 5, v6, NULL, 16);
	assert_int_equal(ul_rtnl_decode_all(m.b, m.len, &h), -EBADMSG);
	m.len = 0;
	add_addr(&m, RTM_NEWADDR, 99, 5, v4, NULL, 4);
	assert_int_equal(ul_rtnl_decode_all(m.b, m.len, &h), -EBADMSG);
	/* the ifaddrmsg cut short */
	m.len = 0;
	add_addr(&m, RTM_NEWADDR, AF_INET, 5, NULL, NULL, 4);
	((struct nlmsghdr *)(void *)m.b)->nlmsg_len = NLMSG_HDRLEN + 4;
	assert_int_equal(ul_rtnl_decode_all(m.b, NLMSG_HDRLEN + 4, &h), -EBADMSG);
}

struct got {
	int n;
	struct ul_rtnl_link l[4];
};

static void collect(void *arg, const struct ul_rtnl_link *l)
{
	struct got *g = arg;

	if (g->n < 4)
		g->l[g->n] = *l;
	g->n++;
}

static void test_decode_links(void **state)
{
	(void)state;
	struct msgbuf m = { .len = 0 };
	struct got g = { 0 };
	struct nlmsghdr done = { .nlmsg_len = NLMSG_LENGTH(4), .nlmsg_type = NLMSG_DONE };
	static const uint8_t z[4];

	add_link(&m, RTM_NEWLINK, 7, IFF_UP | IFF_LOWER_UP, "veth0", IF_OPER_UP);
	add_link(&m, RTM_DELLINK, 8, 0, "veth1", -1);
	add_link(&m, RTM_NEWLINK, 9, IFF_UP, NULL, -1);
	put_bytes(&m, &done, sizeof(done));
	put_bytes(&m, z, 4);
	add_link(&m, RTM_NEWLINK, 10, 0, "after-done", -1);   /* never read */
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), 3);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.l[0].ifindex, 7);
	assert_string_equal(g.l[0].name, "veth0");
	assert_int_equal(g.l[0].operstate, IF_OPER_UP);
	assert_false(g.l[0].deleted);
	assert_true(ul_rtnl_link_is_up(&g.l[0]));
	assert_true(g.l[1].deleted);
	assert_string_equal(g.l[1].name, "veth1");
	assert_int_equal(g.l[1].operstate, -1);
	assert_false(ul_rtnl_link_is_up(&g.l[1]));
	assert_string_equal(g.l[2].name, "");
	assert_int_equal(g.l[2].ifindex, 9);
}

static void test_link_rule(void **state)
{
	(void)state;
	struct ul_rtnl_link l = { .ifindex = 1, .flags = IFF_UP | IFF_LOWER_UP, .operstate = -1 };

	assert_true(ul_rtnl_link_is_up(&l));
	l.operstate = IF_OPER_UNKNOWN;
	assert_true(ul_rtnl_link_is_up(&l));
	l.operstate = IF_OPER_LOWERLAYERDOWN;   /* a veth whose peer is down */
	assert_false(ul_rtnl_link_is_up(&l));
	l.operstate = IF_OPER_DORMANT;
	assert_false(ul_rtnl_link_is_up(&l));
	l.operstate = IF_OPER_UP;
	l.flags = IFF_UP;                       /* no carrier */
	assert_false(ul_rtnl_link_is_up(&l));
	l.flags = IFF_LOWER_UP;                 /* set down */
	assert_false(ul_rtnl_link_is_up(&l));
}

static void test_refused(void **state)
{
	(void)state;
	struct msgbuf m = { .len = 0 };
	struct got g = { 0 };
	size_t at;

	/* a message longer than the datagram */
	at = add_link(&m, RTM_NEWLINK, 7, IFF_UP, "eth0", -1);
	assert_int_equal(ul_rtnl_decode(m.b, m.len - 1, collect, &g), -EBADMSG);
	/* shorter than its own header */
	((struct nlmsghdr *)(void *)(m.b + at))->nlmsg_len = 8;
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), -EBADMSG);
	/* too short for the ifinfomsg */
	((struct nlmsghdr *)(void *)(m.b + at))->nlmsg_len = NLMSG_HDRLEN + 4;
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), -EBADMSG);
	assert_int_equal(g.n, 0);

	/* a name with no NUL inside its attribute */
	m.len = 0;
	at = add_link(&m, RTM_NEWLINK, 7, IFF_UP, "eth0", -1);
	m.b[at + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifinfomsg)) + 4 + 4] = 'x';
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), -EBADMSG);
	/* a name too long for an interface */
	m.len = 0;
	add_link(&m, RTM_NEWLINK, 7, IFF_UP, "a-name-of-16-chr", -1);
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), -EBADMSG);
	/* an attribute longer than the message */
	m.len = 0;
	at = add_link(&m, RTM_NEWLINK, 7, IFF_UP, NULL, IF_OPER_UP);
	((struct rtattr *)(void *)(m.b + at + NLMSG_HDRLEN +
				   NLMSG_ALIGN(sizeof(struct ifinfomsg))))->rta_len = 200;
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), -EBADMSG);
	/* an operstate with no byte */
	((struct rtattr *)(void *)(m.b + at + NLMSG_HDRLEN +
				   NLMSG_ALIGN(sizeof(struct ifinfomsg))))->rta_len = 4;
	assert_int_equal(ul_rtnl_decode(m.b, m.len, collect, &g), -EBADMSG);
	assert_int_equal(g.n, 0);
	/* nothing, or less than a header: no message */
	assert_int_equal(ul_rtnl_decode(m.b, 0, collect, &g), 0);
	assert_int_equal(ul_rtnl_decode(m.b, 15, collect, &g), 0);
	assert_int_equal(ul_rtnl_decode(NULL, 4, collect, &g), -EBADMSG);
}

static void test_error_message(void **state)
{
	(void)state;
	struct msgbuf m = { .len = 0 };
	struct nlmsghdr nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
			       .nlmsg_type = NLMSG_ERROR };
	struct nlmsgerr e = { .error = -ENODEV };

	put_bytes(&m, &nh, sizeof(nh));
	put_bytes(&m, &e, sizeof(e));
	assert_int_equal(ul_rtnl_decode(m.b, m.len, NULL, NULL), -ENODEV);
	/* an ACK (error 0) is skipped */
	((struct nlmsgerr *)(void *)(m.b + NLMSG_HDRLEN))->error = 0;
	assert_int_equal(ul_rtnl_decode(m.b, m.len, NULL, NULL), 0);
	/* not an errno */
	((struct nlmsgerr *)(void *)(m.b + NLMSG_HDRLEN))->error = 5;
	assert_int_equal(ul_rtnl_decode(m.b, m.len, NULL, NULL), -EBADMSG);
	/* cut short */
	assert_int_equal(ul_rtnl_decode(m.b, NLMSG_HDRLEN + 2, NULL, NULL), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_links),
		cmocka_unit_test(test_decode_addrs),
		cmocka_unit_test(test_link_rule),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_error_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
