/* SPDX-License-Identifier: MIT */
/*
 * rtnl.c - rtnetlink link messages (rtnl.h).
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

/* The attributes of one link message (`len` bytes at `p`) into `l`. */
static int ul_rtnl_attrs(const uint8_t *p, size_t len, struct ul_rtnl_link *l)
{
	while (len >= sizeof(struct rtattr)) {
		struct rtattr rta;
		size_t alen, plen, step;

		memcpy(&rta, p, sizeof(rta));
		alen = rta.rta_len;
		if (alen < sizeof(rta) || alen > len)
			return -EBADMSG;
		plen = alen - sizeof(rta);
		switch (rta.rta_type) {
		case IFLA_IFNAME: {
			const uint8_t *s = p + sizeof(rta);
			const uint8_t *nul = memchr(s, '\0', plen);

			if (!nul || (size_t)(nul - s) >= sizeof(l->name))
				return -EBADMSG;
			memcpy(l->name, s, (size_t)(nul - s) + 1);
			break;
		}
		case IFLA_OPERSTATE:
			if (plen < 1)
				return -EBADMSG;
			l->operstate = p[sizeof(rta)];
			break;
		default:
			break;
		}
		/* the last attribute may end without its padding */
		step = RTA_ALIGN(alen);
		if (step > len)
			step = len;
		p += step;
		len -= step;
	}
	return 0;
}

int ul_rtnl_decode(const void *buf, size_t len, ul_rtnl_link_fn fn, void *arg)
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
			if (mlen > off && ul_rtnl_attrs(p + off, mlen - off, &l) < 0)
				return -EBADMSG;
			if (fn)
				fn(arg, &l);
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
	sa.nl_groups = RTMGRP_LINK;
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
