/* SPDX-License-Identifier: MIT */
/*
 * sock_link.c - the socklnd NI's link: following its interface's link
 * state through rtnetlink, and acting as a dead link while the core says
 * the link is down.
 *
 * Following. As the kernel's ksocklnd (ksocknal_handle_link_state_change()
 * on netdevice events), an NI whose address is on an interface follows
 * that interface's link: an rtnetlink socket subscribed to link changes
 * sits in the node's event loop (no polling), and each RTM_NEWLINK or
 * RTM_DELLINK for the interface is judged by the kernel's rule
 * (ul_rtnl_link_is_up()). Its address counts too, as the kernel's
 * inetaddr events and its link rule's "no matching IP" do: an
 * RTM_DELADDR of the NI's address on the interface takes the NI down as a
 * lost link would, and an RTM_NEWADDR of it gives the link's state back.
 * A change goes to the core
 * (lnet_ni_link_event()), which makes the NI fatal or not, pushes, and
 * calls back ksock_link_state(). An NI on a loopback address has no link
 * to lose and is not watched. The state at start comes from an
 * RTM_GETLINK request, answered on the same socket.
 *
 * Acting. While the link is down, sends fail at once with -ENETUNREACH
 * (what connect() gives with no route), no connection is dialled or
 * accepted, and the NI's connections close (on the loop thread, by the
 * kick), failing what they carried so that the core resends it elsewhere.
 * The kernel leaves established connections to TCP's own timeouts when a
 * link goes; ulnet closes them at once, on a link fault (a pulled cable
 * as the tests want it: now, not after sock_timeout) and on the
 * interface's own loss alike, so both causes behave the same.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"
#include "util/rtnl.h"

/* --- acting on the core's word ---------------------------------------------------------- */

void ksock_link_state(struct lnet_ni *ni, bool down)
{
	struct ksock_net *net = lnet_ni_data(ni);

	if (!net)
		return;
	ksock_lock(net);
	__atomic_store_n(&net->link_down, down, __ATOMIC_RELAXED);
	if (down) {
		net->link_close = true;
	} else {
		/* back: dial at once, not after the back-off of the failures */
		for (struct ksock_peer *p = net->peers; p; p = p->next) {
			p->retry_at = 0;
			p->retry_ms = net->tun.min_reconnect_ms;
		}
	}
	ksock_unlock(net);
	if (down)
		ksock_kick(net);   /* conns close on the loop thread */
}

void ksock_link_close_conns(struct ksock_net *net)
{
	struct ksock_done done = { 0 };
	bool any = false;

	ksock_lock(net);
	if (!net->link_close || net->shutdown) {
		ksock_unlock(net);
		return;
	}
	net->link_close = false;
	if (!net->link_down) {   /* back up before the loop came here */
		ksock_unlock(net);
		return;
	}
	while (net->hs_conns) {
		ksock_conn_close_locked(net->hs_conns, -ENETDOWN, false, &done);
		any = true;
	}
	for (struct ksock_peer *p = net->peers; p; p = p->next) {
		while (p->conns) {
			ksock_conn_close_locked(p->conns, -ENETDOWN, true, &done);
			any = true;
		}
		while (p->txq_head) {
			struct ksock_tx *tx = p->txq_head;

			p->txq_head = tx->next;
			if (tx->msg)
				ksock_done_add(net, &done, tx, -ENETUNREACH);
			else
				ksock_tx_free(net, tx);
		}
		p->txq_tail = NULL;
		p->nacks = 0;
	}
	ksock_unlock(net);
	if (any)
		lnet_ni_log(net->ni, ULNET_LOG_INFO, "link down: its connections closed");
	ksock_done_run(net, &done);
}

/* --- following the interface -------------------------------------------------------------- */

struct ksock_link_seen {
	struct ksock_net *net;
	bool any;          /* a link message about our interface */
	bool up;           /* what the last one said */
	int operstate;
	unsigned flags;
	bool addr_any;     /* an address message about the NI's address */
	bool addr_present; /* what the last one said */
};

static void ksock_link_msg(void *arg, const struct ul_rtnl_link *l)
{
	struct ksock_link_seen *s = arg;
	struct ksock_net *net = s->net;

	/* ours by name (an interface made again gets another index, as the
	 * kernel follows its ksni_name), else by index */
	if (l->name[0] ? strcmp(l->name, net->ifname) != 0 : l->ifindex != net->ifindex)
		return;
	if (!l->deleted)
		net->ifindex = l->ifindex;
	s->any = true;
	s->up = ul_rtnl_link_is_up(l);
	s->operstate = l->operstate;
	s->flags = l->flags;
}

/* The NI's own address: 4 bytes (AF_INET) or 16 (AF_INET6). */
static const void *ksock_link_ip(const struct ksock_net *net)
{
	if (net->family == AF_INET)
		return &((const struct sockaddr_in *)&net->sa)->sin_addr;
	return &((const struct sockaddr_in6 *)&net->sa)->sin6_addr;
}

/* Whether `ip` (4 or 16 bytes of `family`) is the NI's own address. */
static bool ksock_link_is_our_ip(const struct ksock_net *net, int family, const uint8_t *ip)
{
	return family == net->family &&
	       memcmp(ip, ksock_link_ip(net), family == AF_INET ? 4 : 16) == 0;
}

static void ksock_addr_msg(void *arg, const struct ul_rtnl_addr *a)
{
	struct ksock_link_seen *s = arg;
	struct ksock_net *net = s->net;

	if (a->ifindex != net->ifindex || !a->has_addr ||
	    !ksock_link_is_our_ip(net, a->family, a->addr))
		return;
	s->addr_any = true;
	s->addr_present = !a->deleted;
}

/* Whether the NI's address is on its interface now (getifaddrs: after
 * rtnetlink lost messages). */
static bool ksock_link_addr_present(struct ksock_net *net)
{
	struct ifaddrs *ifa, *a;
	bool found = false;
	int saved, rc;

	/* the addresses of the NI's namespace, whichever thread asks */
	if (ksock_netns_enter(net, &saved) < 0)
		return !net->addr_gone;   /* can't tell: keep what we know */
	rc = getifaddrs(&ifa);
	ksock_netns_leave(net, saved);
	if (rc < 0)
		return !net->addr_gone;
	for (a = ifa; a && !found; a = a->ifa_next)
		found = a->ifa_addr && a->ifa_addr->sa_family == net->family &&
			strcmp(a->ifa_name, net->ifname) == 0 &&
			ksock_sa_same_ip(a->ifa_addr, (const struct sockaddr *)&net->sa);
	freeifaddrs(ifa);
	return found;
}

static void ksock_rtnl_cb(struct ul_io *io, uint32_t revents)
{
	struct ksock_net *net = (struct ksock_net *)((char *)io - offsetof(struct ksock_net, rtnl_io));
	struct ksock_link_seen s = { .net = net };
	const struct ul_rtnl_handlers h = { ksock_link_msg, ksock_addr_msg, &s };
	bool resync = false, down;
	char why[128], ipbuf[64];

	(void)revents;
	ksock_loop_enter(net);
	/* what is there now, a bounded number of datagrams (a burst of
	 * changes of other interfaces must not hold the loop) */
	for (int i = 0; i < 64; i++) {
		struct sockaddr_nl from;
		socklen_t fromlen = sizeof(from);
		ssize_t n = recvfrom(net->rtnl_fd, net->rtnl_buf, KSOCK_RTNL_BUF,
				     MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fromlen);
		int rc;

		if (n >= 0 && (fromlen < sizeof(from) || from.nl_pid != 0))
			continue;   /* only the kernel speaks for links: not another process */
		if (n < 0) {
			if (errno == ENOBUFS)   /* missed some: ask again */
				resync = true;
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			break;
		}
		if (n > KSOCK_RTNL_BUF) {
			/* cut (a link message with much per-VF data): what it
			 * said is lost, ask for our interface's state again */
			resync = true;
			continue;
		}
		rc = ul_rtnl_decode_all(net->rtnl_buf, (size_t)n, &h);
		if (rc < 0 && rc != -EBADMSG && rc != -ENODEV)
			lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "rtnetlink: %s", strerror(-rc));
		if (rc == -ENODEV) {
			/* the interface is gone (our request's answer) */
			s.any = true;
			s.up = false;
			s.operstate = -1;
			s.flags = 0;
		}
	}
	if (resync) {
		(void)ul_rtnl_request_link(net->rtnl_fd, net->ifindex);
		s.addr_any = true;
		s.addr_present = ksock_link_addr_present(net);
	}
	if (s.any)
		net->if_down = !s.up;
	if (s.addr_any)
		net->addr_gone = !s.addr_present;
	down = net->if_down || net->addr_gone;
	if (down == net->carrier_down)
		return;   /* nothing new about our interface */
	if (!inet_ntop(net->family, ksock_link_ip(net), ipbuf, sizeof(ipbuf)))
		strcpy(ipbuf, "?");
	if (net->addr_gone)
		snprintf(why, sizeof(why), "%s no longer has %s", net->ifname, ipbuf);
	else if (s.any)
		snprintf(why, sizeof(why), "%s %s (operstate %d, flags %#x)", net->ifname,
			 down ? "lost its link" : "has its link", s.operstate, s.flags);
	else
		snprintf(why, sizeof(why), "%s has %s again", net->ifname, ipbuf);
	if (lnet_ni_link_event(net->ni, down, why) == -EAGAIN) {
		/* the NI is not in service yet: the reaper asks again */
		net->link_resync = true;
		return;
	}
	net->carrier_down = down;
}

void ksock_link_resync(struct ksock_net *net)
{
	if (net->rtnl_fd < 0 || !net->link_resync)
		return;
	net->link_resync = false;
	(void)ul_rtnl_request_link(net->rtnl_fd, net->ifindex);
}

/* The interface holding the NI's address (into net->ifname): 0, or
 * -ENOENT (none, or a loopback one). */
static int ksock_link_find_iface(struct ksock_net *net)
{
	const struct ulnet_ni_conf *conf = lnet_ni_conf(net->ni);
	struct ifaddrs *ifa, *a;
	int rc = -ENOENT;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (a = ifa; a; a = a->ifa_next) {
		bool match;

		if (!a->ifa_addr || a->ifa_addr->sa_family != net->family)
			continue;
		if (conf->iface[0])
			match = strcmp(a->ifa_name, conf->iface) == 0;
		else
			match = ksock_sa_same_ip(a->ifa_addr, (const struct sockaddr *)&net->sa);
		if (!match)
			continue;
		if (!(a->ifa_flags & IFF_LOOPBACK) && strlen(a->ifa_name) < sizeof(net->ifname)) {
			strcpy(net->ifname, a->ifa_name);
			rc = 0;
		}
		break;
	}
	freeifaddrs(ifa);
	return rc;
}

static void ksock_link_watch_start_here(struct ksock_net *net);

/* The interface's link speed in Mb/s (ethtool), or -errno; -ENODATA when
 * the driver does not know it (a link that is down, a virtual one). */
static long ksock_link_speed(const char *ifname)
{
	struct ethtool_cmd ec = { .cmd = ETHTOOL_GSET };
	struct ifreq ifr;
	long speed;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (char *)&ec;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
		long rc = -errno;

		close(fd);
		return rc;
	}
	close(fd);
	/* ethtool_cmd_speed() of the uapi header, but unsigned: its
	 * `speed_hi << 16` shifts an int, which overflows (undefined, and
	 * UBSan stops the process) for SPEED_UNKNOWN's 0xffff */
	speed = (long)(((uint32_t)ec.speed_hi << 16) | ec.speed);
	return speed == 0 || speed == (long)(uint32_t)SPEED_UNKNOWN ? -ENODATA : speed;
}

/* conns_per_peer left unset: derive it from the interface's speed as
 * ksocklnd does at startup (a NI on no interface but loopback keeps 1). */
static void ksock_link_derive_cpp(struct ksock_net *net)
{
	long speed;
	int cpp;

	if (lnet_ni_conns_per_peer_conf(net->ni) != 0)
		return;
	speed = ksock_link_speed(net->ifname);
	cpp = ksock_speed_cpp(speed);
	lnet_ni_set_conns_per_peer_auto(net->ni, cpp);
	if (speed > 0)
		lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "%s: %ld Mb/s: conns_per_peer %d",
			    net->ifname, speed, cpp);
	else
		lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "%s: link speed unknown (%s): conns_per_peer %d",
			    net->ifname, strerror((int)-speed), cpp);
}

/* The interface, its index and the rtnetlink socket are those of the NI's
 * namespace. */
void ksock_link_watch_start(struct ksock_net *net)
{
	int saved, rc = ksock_netns_enter(net, &saved);

	if (rc < 0) {
		lnet_ni_log(net->ni, ULNET_LOG_WARN,
			    "can't follow the link: can't enter the NI's network namespace: %s",
			    strerror(-rc));
		return;
	}
	ksock_link_watch_start_here(net);
	ksock_netns_leave(net, saved);
}

static void ksock_link_watch_start_here(struct ksock_net *net)
{
	int fd, rc, ifindex;

	if (ksock_link_find_iface(net) < 0)
		return;
	ksock_link_derive_cpp(net);
	/* the loop thread owns net->ifindex once the socket is in epoll
	 * (ksock_link_msg() follows a re-made interface): use a copy here */
	ifindex = (int)if_nametoindex(net->ifname);
	net->ifindex = ifindex;
	net->rtnl_buf = malloc(KSOCK_RTNL_BUF);
	if (!net->rtnl_buf) {
		lnet_ni_log(net->ni, ULNET_LOG_WARN,
			    "can't follow the link of %s: out of memory: link changes go unseen",
			    net->ifname);
		return;
	}
	fd = ul_rtnl_open();
	if (fd < 0) {
		lnet_ni_log(net->ni, ULNET_LOG_WARN,
			    "can't follow the link of %s (rtnetlink: %s): link changes go unseen",
			    net->ifname, strerror(-fd));
		free(net->rtnl_buf);
		net->rtnl_buf = NULL;
		return;
	}
	net->rtnl_fd = fd;
	ul_io_init(&net->rtnl_io, fd, ksock_rtnl_cb);
	rc = ul_io_start(net->loop, &net->rtnl_io, EPOLLIN);
	if (rc == 0)
		rc = ul_rtnl_request_link(fd, ifindex);
	if (rc < 0) {
		lnet_ni_log(net->ni, ULNET_LOG_WARN, "can't follow the link of %s: %s", net->ifname,
			    strerror(-rc));
		ksock_link_watch_stop(net);
		return;
	}
	lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "following the link of %s (index %d)", net->ifname,
		    ifindex);
}

void ksock_link_watch_stop(struct ksock_net *net)
{
	if (net->rtnl_fd >= 0) {
		ul_io_stop(net->loop, &net->rtnl_io);
		close(net->rtnl_fd);
		net->rtnl_fd = -1;
	}
	free(net->rtnl_buf);
	net->rtnl_buf = NULL;
}
