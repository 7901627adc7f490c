/* SPDX-License-Identifier: MIT */
/*
 * rtnl.h - interface link and address state from rtnetlink: a socket
 * subscribed to RTMGRP_LINK and the IPv4/IPv6 address groups, a request
 * for one interface's state, and a decoder of what arrives (RTM_NEWLINK /
 * RTM_DELLINK, RTM_NEWADDR / RTM_DELADDR), checked field by field.
 */
#ifndef ULNET_UTIL_RTNL_H
#define ULNET_UTIL_RTNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UL_RTNL_IFNAMSIZ 16

/* One interface as a link message described it. */
struct ul_rtnl_link {
	int ifindex;
	unsigned flags;                 /* IFF_* (ifi_flags) */
	int operstate;                  /* IF_OPER_*; -1: no IFLA_OPERSTATE */
	char name[UL_RTNL_IFNAMSIZ];    /* "" when the message had none */
	bool deleted;                   /* RTM_DELLINK: the interface is gone */
};

/* One address as an address message described it. */
struct ul_rtnl_addr {
	int ifindex;
	int family;                     /* AF_INET or AF_INET6 (ifa_family) */
	bool has_addr;                  /* addr holds the interface's own address */
	uint8_t addr[16];               /* IFA_LOCAL, else IFA_ADDRESS: 4 or 16 bytes */
	bool deleted;                   /* RTM_DELADDR: the address is gone */
};

typedef void (*ul_rtnl_link_fn)(void *arg, const struct ul_rtnl_link *l);
typedef void (*ul_rtnl_addr_fn)(void *arg, const struct ul_rtnl_addr *a);

/* What to call for each message of a datagram (NULL: not wanted). */
struct ul_rtnl_handlers {
	ul_rtnl_link_fn link;
	ul_rtnl_addr_fn addr;
	void *arg;
};

/*
 * Decode one datagram of netlink messages (`len` bytes at `buf`, from the
 * network: anything): h->link is called for each well-formed RTM_NEWLINK
 * or RTM_DELLINK, h->addr for each RTM_NEWADDR or RTM_DELADDR; other types
 * are skipped. Returns the number of link and address messages, or
 * -EBADMSG at the first message whose lengths do not hold (the ones
 * before it were delivered), or the error an NLMSG_ERROR carried (< 0; 0
 * in it is an ACK, skipped).
 */
int ul_rtnl_decode_all(const void *buf, size_t len, const struct ul_rtnl_handlers *h);
/* The same for link messages alone (address messages are skipped and not
 * counted). */
int ul_rtnl_decode(const void *buf, size_t len, ul_rtnl_link_fn fn, void *arg);

/* Whether the link carries traffic, by the kernel's rule for an LNet
 * NI's link (ksocknal_handle_link_state_change()): an operstate other than
 * UP or UNKNOWN is down; otherwise it must be up (IFF_UP) and have its
 * carrier (IFF_LOWER_UP). A deleted interface is down. */
bool ul_rtnl_link_is_up(const struct ul_rtnl_link *l);

/* A non-blocking rtnetlink socket subscribed to link and address changes,
 * or -errno. */
int ul_rtnl_open(void);
/* Ask for interface `ifindex`'s state (the answer is an RTM_NEWLINK on the
 * socket, like a change). 0 or -errno. */
int ul_rtnl_request_link(int fd, int ifindex);

#endif
