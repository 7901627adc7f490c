/* SPDX-License-Identifier: MIT */
/*
 * rtnl.h - interface link state from rtnetlink: a socket subscribed to
 * RTMGRP_LINK, a request for one interface's state, and a decoder of what
 * arrives (RTM_NEWLINK / RTM_DELLINK), checked field by field.
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

typedef void (*ul_rtnl_link_fn)(void *arg, const struct ul_rtnl_link *l);

/*
 * Decode one datagram of netlink messages (`len` bytes at `buf`, from the
 * network: anything): `fn` is called for each well-formed RTM_NEWLINK or
 * RTM_DELLINK; other types are skipped. Returns the number of link
 * messages, or -EBADMSG at the first message whose lengths do not hold
 * (the ones before it were delivered), or the error an NLMSG_ERROR
 * carried (< 0; 0 in it is an ACK, skipped).
 */
int ul_rtnl_decode(const void *buf, size_t len, ul_rtnl_link_fn fn, void *arg);

/* Whether the link carries traffic, by the kernel's rule for an LNet
 * NI's link (ksocknal_handle_link_state_change()): an operstate other than
 * UP or UNKNOWN is down; otherwise it must be up (IFF_UP) and have its
 * carrier (IFF_LOWER_UP). A deleted interface is down. */
bool ul_rtnl_link_is_up(const struct ul_rtnl_link *l);

/* A non-blocking rtnetlink socket subscribed to link changes, or -errno. */
int ul_rtnl_open(void);
/* Ask for interface `ifindex`'s state (the answer is an RTM_NEWLINK on the
 * socket, like a change). 0 or -errno. */
int ul_rtnl_request_link(int fd, int ifindex);

#endif
