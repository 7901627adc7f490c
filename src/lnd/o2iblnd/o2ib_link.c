/* SPDX-License-Identifier: MIT */
/*
 * o2ib_link.c - the o2ib NI's link: following its device port's state, and
 * acting as a dead link while the core says the link is down.
 *
 * Following. As the kernel's ko2iblnd (kiblnd_event_handler() on
 * IB_EVENT_PORT_ERR/PORT_ACTIVE/DEVICE_FATAL, and the port state it
 * queries when an NI starts), the NI follows its port: a change goes to
 * the core (lnet_ni_link_event()), which makes the NI fatal or not, pushes
 * our ping info to peers, and calls back kib_link_state(). Two sources:
 *  - the device's asynchronous events, read on the NI's loop as they come;
 *  - the port's state, queried on every 1 s tick. This covers a port
 *    already down when the NI starts (the core takes a report only once
 *    startup has returned), a second NI on the same device (librdmacm
 *    opens a device once per process, so only the first NI reads its
 *    events), and an event lost for any reason.
 *
 * Acting. While the link is down, sends fail at once with -ENETUNREACH,
 * no connection is made, a peer's connect request is rejected as by an NI
 * that is not ready, and the NI's connections close (on the loop thread,
 * by the kick), failing what they carried so that the core resends it
 * elsewhere. The kernel leaves its connections to the RC transport's own
 * retries when a port goes; ulnet closes them at once, as its socklnd
 * does, so that `fault link down` acts as a pulled cable at once and both
 * causes behave the same (docs/o2iblnd.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "lnd/o2iblnd/o2ib_int.h"

/* --- following the port ------------------------------------------------------------------ */

static const char *kib_port_state_name(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "down";
	case IBV_PORT_INIT:
		return "init";
	case IBV_PORT_ARMED:
		return "armed";
	case IBV_PORT_ACTIVE:
		return "active";
	case IBV_PORT_ACTIVE_DEFER:
		return "active (deferred)";
	default:
		return "unknown";
	}
}

/* Every tick tells the core the port's state: it keeps the state and acts
 * (and logs) only on a change, and a report before the NI is in service
 * (-EAGAIN) is simply made again on the next tick. Loop thread, no LND
 * lock held: the core calls kib_link_state() back. */
void kib_link_poll(struct kib_net *net)
{
	struct ibv_port_attr pa;
	char why[64];

	if (net->device_fatal || ibv_query_port(net->ctx, net->port, &pa) != 0)
		return;
	snprintf(why, sizeof(why), "RDMA port %s", kib_port_state_name(pa.state));
	(void)lnet_ni_link_event(net->ni, pa.state != IBV_PORT_ACTIVE, why);
}

/* The device's asynchronous events. Every event read is acknowledged at
 * once (a QP's own events too: a destroy waits for those read and not
 * acknowledged). A fatal device stays down: only a new NI on it can
 * come back. */
static void kib_async_io_cb(struct ul_io *io, uint32_t revents)
{
	struct kib_net *net = kib_container(io, struct kib_net, async_io);
	struct ibv_async_event ev;

	(void)revents;
	while (ibv_get_async_event(net->ctx, &ev) == 0) {
		enum ibv_event_type t = ev.event_type;
		bool mine = (t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_PORT_ACTIVE) &&
			    ev.element.port_num == net->port;

		ibv_ack_async_event(&ev);
		if (t == IBV_EVENT_DEVICE_FATAL) {
			net->device_fatal = true;
			(void)lnet_ni_link_event(net->ni, true, "RDMA device fatal");
		} else if (mine && !net->device_fatal) {
			(void)lnet_ni_link_event(net->ni, t == IBV_EVENT_PORT_ERR,
						 t == IBV_EVENT_PORT_ERR ? "RDMA port down"
									 : "RDMA port active");
		}
	}
}

void kib_link_watch(struct kib_net *net)
{
	int fd = net->ctx->async_fd, fl = fcntl(fd, F_GETFL);

	net->port = net->listener->port_num;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
		return;
	ul_io_init(&net->async_io, fd, kib_async_io_cb);
	net->async_watch = ul_io_start(net->loop, &net->async_io, EPOLLIN) == 0;
	if (!net->async_watch)
		lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
			    "o2iblnd: device %s's events are read by another NI on it: "
			    "this one follows its port on its tick",
			    ibv_get_device_name(net->ctx->device));
}

void kib_link_unwatch(struct kib_net *net)
{
	if (net->async_watch)
		ul_io_stop(net->loop, &net->async_io);
	net->async_watch = false;
}

/* --- acting on the core's word ------------------------------------------------------------ */

void kib_link_state(struct lnet_ni *ni, bool down)
{
	struct kib_net *net = lnet_ni_data(ni);

	if (!net)
		return;
	kib_lock(net);
	__atomic_store_n(&net->link_down, down, __ATOMIC_RELAXED);
	if (down) {
		net->link_close = true;
		kib_kick(net);          /* connections close on the loop thread */
	} else {
		/* back: connect at once, not after a failure's back-off */
		for (struct kib_list *l = net->peers.next; l != &net->peers; l = l->next)
			kib_container(l, struct kib_peer, link)->retry_at = 0;
	}
	kib_unlock(net);
}

void kib_link_close_conns(struct kib_net *net)
{
	if (!net->link_close)
		return;
	net->link_close = false;
	if (!net->link_down)
		return;         /* back up before the loop came here */
	for (struct kib_list *l = net->peers.next; l != &net->peers; l = l->next)
		kib_tx_fail_list(net, &kib_container(l, struct kib_peer, link)->tx_queue,
				 -ENETUNREACH);
again:
	for (struct kib_list *l = net->conns.next; l != &net->conns; l = l->next) {
		struct kib_conn *c = kib_container(l, struct kib_conn, link);

		if (c->state >= KIB_CONN_CLOSING)
			continue;
		/* it may be destroyed (one still connecting): from the top */
		kib_close_conn(c, -ENETDOWN, "link down");
		goto again;
	}
}
