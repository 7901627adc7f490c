/* SPDX-License-Identifier: MIT */
/*
 * rtnl.c - rtnetlink link and address messages (rtnl.h).
 *
 * The decoder reads from bytes the kernel sent, but a fuzzer (and a
 * kernel of another version) may send anything: every header is copied
 * out of the buffer (no pointer into it is cast to a struct) after its
 * length is checked against what is left, every length field against its
 * container, and a name is taken only with its terminating NUL inside
 * the attribute.
 */
#include "util/rtnl.h"

#include <errno.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One attribute of a message's attribute area, read from (*p, *len) with
 * its length checked, the area then advanced past it (the last one may
 * end without its padding). Returns 1 with its type and payload, 0 at
 * the end, or -EBADMSG. */
static int ul_rtnl_next_attr(const uint8_t **p, size_t *len, unsigned *type,
			     const uint8_t **pay, size_t *plen)
{
	struct rtattr rta;
	size_t step;

	if (*len < sizeof(rta))
		return 0;
	memcpy(&rta, *p, sizeof(rta));
	if (rta.rta_len < sizeof(rta) || rta.rta_len > *len)
		return -EBADMSG;
	*type = rta.rta_type;
	*pay = *p + sizeof(rta);
	*plen = rta.rta_len - sizeof(rta);
	step = RTA_ALIGN(rta.rta_len);
	if (step > *len)
		step = *len;
	*p += step;
	*len -= step;
	return 1;
}

/* The attributes of one link message (`len` bytes at `p`) into `l`. */
static int ul_rtnl_link_attrs(const uint8_t *p, size_t len, struct ul_rtnl_link *l)
{
	const uint8_t *s;
	unsigned type;
	size_t plen;
	int rc;

	while ((rc = ul_rtnl_next_attr(&p, &len, &type, &s, &plen)) > 0) {
		if (type == IFLA_IFNAME) {
			const uint8_t *nul = memchr(s, '\0', plen);

			if (!nul || (size_t)(nul - s) >= sizeof(l->name))
				return -EBADMSG;
			memcpy(l->name, s, (size_t)(nul - s) + 1);
		} else if (type == IFLA_OPERSTATE) {
			if (plen < 1)
				return -EBADMSG;
			l->operstate = s[0];
		}
	}
	return rc;
}

/* The attributes of one address message into `a`: the address of the
 * family's size, IFA_LOCAL (the interface's own on a point-to-point
 * link) before IFA_ADDRESS. */
static int ul_rtnl_addr_attrs(const uint8_t *p, size_t len, struct ul_rtnl_addr *a)
{
	size_t want = a->family == AF_INET ? 4 : a->family == AF_INET6 ? 16 : 0;
	bool have_local = false;
	const uint8_t *s;
	unsigned type;
	size_t plen;
	int rc;

	while ((rc = ul_rtnl_next_attr(&p, &len, &type, &s, &plen)) > 0) {
		if (type != IFA_LOCAL && type != IFA_ADDRESS)
			continue;
		if (want == 0 || plen != want)
			return -EBADMSG;
		if (type == IFA_LOCAL || !have_local) {
			memcpy(a->addr, s, want);
			a->has_addr = true;
			have_local |= type == IFA_LOCAL;
		}
	}
	return rc;
}

int ul_rtnl_decode_all(const void *buf, size_t len, const struct ul_rtnl_handlers *h)
{
	const uint8_t *p = buf;
	int n = 0;

	if (!p && len)
		return -EBADMSG;
	while (len >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr nh;
		size_t mlen, step;

		memcpy(&nh, p, sizeof(nh));
		mlen = nh.nlmsg_len;
		if (mlen < sizeof(nh) || mlen > len)
			return -EBADMSG;
		if (nh.nlmsg_type == NLMSG_DONE)
			return n;
		if (nh.nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr e;

			if (mlen < NLMSG_HDRLEN + sizeof(e))
				return -EBADMSG;
			memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
			/* an errno, negative; anything else is not one */
			if (e.error < 0 && e.error > -4096)
				return e.error;
			if (e.error != 0)
				return -EBADMSG;
		} else if (nh.nlmsg_type == RTM_NEWLINK || nh.nlmsg_type == RTM_DELLINK) {
			struct ul_rtnl_link l;
			struct ifinfomsg ifi;
			size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifi));

			if (mlen < NLMSG_HDRLEN + sizeof(ifi))
				return -EBADMSG;
			memcpy(&ifi, p + NLMSG_HDRLEN, sizeof(ifi));
			memset(&l, 0, sizeof(l));
			l.ifindex = ifi.ifi_index;
			l.flags = ifi.ifi_flags;
			l.operstate = -1;
			l.deleted = nh.nlmsg_type == RTM_DELLINK;
			if (mlen > off && ul_rtnl_link_attrs(p + off, mlen - off, &l) < 0)
				return -EBADMSG;
			if (h->link)
				h->link(h->arg, &l);
			n++;
		} else if (nh.nlmsg_type == RTM_NEWADDR || nh.nlmsg_type == RTM_DELADDR) {
			struct ul_rtnl_addr a;
			struct ifaddrmsg ifa;
			size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifa));

			if (mlen < NLMSG_HDRLEN + sizeof(ifa))
				return -EBADMSG;
			memcpy(&ifa, p + NLMSG_HDRLEN, sizeof(ifa));
			memset(&a, 0, sizeof(a));
			a.ifindex = (int)ifa.ifa_index;
			a.family = ifa.ifa_family;
			a.deleted = nh.nlmsg_type == RTM_DELADDR;
			if (mlen > off && ul_rtnl_addr_attrs(p + off, mlen - off, &a) < 0)
				return -EBADMSG;
			if (h->addr)
				h->addr(h->arg, &a);
			n++;
		}
		step = NLMSG_ALIGN(mlen);
		if (step > len)
			step = len;
		p += step;
		len -= step;
	}
	return n;
}

/* Link messages alone: the address messages are counted out again. */
struct ul_rtnl_links_only {
	ul_rtnl_link_fn fn;
	void *arg;
	int naddr;
};

static void ul_rtnl_only_link(void *arg, const struct ul_rtnl_link *l)
{
	struct ul_rtnl_links_only *o = arg;

	if (o->fn)
		o->fn(o->arg, l);
}

static void ul_rtnl_only_addr(void *arg, const struct ul_rtnl_addr *a)
{
	(void)a;
	((struct ul_rtnl_links_only *)arg)->naddr++;
}

int ul_rtnl_decode(const void *buf, size_t len, ul_rtnl_link_fn fn, void *arg)
{
	struct ul_rtnl_links_only o = { .fn = fn, .arg = arg };
	struct ul_rtnl_handlers h = { ul_rtnl_only_link, ul_rtnl_only_addr, &o };
	int n = ul_rtnl_decode_all(buf, len, &h);

	return n < 0 ? n : n - o.naddr;
}

bool ul_rtnl_link_is_up(const struct ul_rtnl_link *l)
{
	if (l->deleted)
		return false;
	if (l->operstate >= 0 && l->operstate != IF_OPER_UP && l->operstate != IF_OPER_UNKNOWN)
		return false;
	return (l->flags & IFF_UP) && (l->flags & IFF_LOWER_UP);
}

int ul_rtnl_open(void)
{
	struct sockaddr_nl sa;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int ul_rtnl_request_link(int fd, int ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req;
	struct sockaddr_nl to;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifi));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	memset(&to, 0, sizeof(to));
	to.nl_family = AF_NETLINK;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}
