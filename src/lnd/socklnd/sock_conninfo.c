/* SPDX-License-Identifier: MIT */
/*
 * sock_conninfo.c - the conn_list op: the NI's established connections,
 * described one by one as the kernel's ksocknal_get_conn_by_idx() answers
 * `lctl conn_list` (type, addresses, socket buffers, Nagle), plus the
 * connection's message and byte counters.
 *
 * Everything is read under the NI's lock: an established connection stays
 * on its peer's list, and its socket open, while the lock is held (a
 * closing one leaves the list under the lock first; its fd is closed only
 * when it is freed). The socket options are read back with getsockopt()
 * here, when someone asks, never on the data path.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"

/* An int socket option as the kernel reports it; -1 if it cannot. */
static int ksock_sockopt_int(int fd, int level, int name)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, level, name, &v, &l) < 0 || l != sizeof(v))
		return -1;
	return v;
}

static void ksock_conn_info_fill(const struct ksock_net *net, const struct ksock_peer *peer,
				 const struct ksock_conn *c, struct ulnet_conn_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	ci->ni = net->nid;
	ci->peer = peer->nid;
	ci->peer_pid = c->id_pid;
	ci->type = (enum ulnet_conn_type)c->ctype;
	ci->active = c->active;
	ci->proto_version = c->proto ? c->proto->version : 0;
	ci->local = c->my_sa;
	ci->remote = c->peer_sa;
	ci->cpt = 0;
	ci->tx_buffer_size = ksock_sockopt_int(c->fd, SOL_SOCKET, SO_SNDBUF);
	ci->rx_buffer_size = ksock_sockopt_int(c->fd, SOL_SOCKET, SO_RCVBUF);
	/* set up after admission (ksock_setup_socket): read it back as the
	 * kernel does rather than trust the tunable */
	ci->nagle = ksock_sockopt_int(c->fd, IPPROTO_TCP, TCP_NODELAY) == 0;
	ci->tx_msgs = c->tx_msgs;
	ci->tx_bytes = c->tx_bytes;
	/* the loop thread writes these without the lock (KSOCK_RX_COUNT) */
	ci->rx_msgs = __atomic_load_n(&c->rx_msgs, __ATOMIC_RELAXED);
	ci->rx_bytes = __atomic_load_n(&c->rx_bytes, __ATOMIC_RELAXED);
}

int ksock_conn_list(struct lnet_ni *ni, struct ulnet_conn_info *out, int max)
{
	struct ksock_net *net = lnet_ni_data(ni);
	int n = 0;

	if (!net)
		return 0;
	ksock_lock(net);
	for (const struct ksock_peer *p = net->peers; p; p = p->next)
		for (const struct ksock_conn *c = p->conns; c; c = c->next) {
			if (n < max)
				ksock_conn_info_fill(net, p, c, &out[n]);
			n++;
		}
	ksock_unlock(net);
	return n;
}
