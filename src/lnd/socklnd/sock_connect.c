/* SPDX-License-Identifier: MIT */
/*
 * sock_connect.c - the active side: bind a privileged source port (1023
 * down to 512) or, without the right to, an ephemeral one as a user-space
 * peer; connect without blocking (CONTROL to accept_port, the others to
 * accept_port_bulk); send the acceptor request and our HELLO; open
 * CONTROL, then BULK_IN and BULK_OUT; back off 1 s doubling to 60 s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"

#define KSOCK_CAP_NET_BIND_SERVICE 10

/* Root or CAP_NET_BIND_SERVICE in the effective set (read from /proc, no
 * libcap). A later EACCES from bind() also flips us to user-space mode. */
bool ksock_can_bind_privileged(void)
{
	char line[256];
	bool ok = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long caps;

		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			ok = (caps >> KSOCK_CAP_NET_BIND_SERVICE) & 1;
			break;
		}
	}
	fclose(f);
	return ok;
}

/* Which type this peer still lacks: CONTROL, then BULK_IN, BULK_OUT. */
static int ksock_next_ctype(struct ksock_net *net, const struct ksock_peer *p)
{
	int n[4] = { 0 };
	int cpp = lnet_ni_conns_per_peer(net->ni);

	if (!net->tun.typed_conns)   /* one untyped connection (V1/V2) */
		return p->conns ? SOCKLND_CONN_NONE : SOCKLND_CONN_ANY;
	for (const struct ksock_conn *c = p->conns; c; c = c->next)
		if (c->ctype >= 0 && c->ctype <= SOCKLND_CONN_BULK_OUT)
			n[c->ctype]++;
	if (n[SOCKLND_CONN_CONTROL] == 0 && n[SOCKLND_CONN_ANY] == 0)
		return SOCKLND_CONN_CONTROL;
	/* A user-space peer opens CONTROL alone. A kernel makes each of our
	 * conns a peer of its own (PID = our source port), answers a message
	 * to the peer of the conn it came on, and sends LNET messages on no
	 * conn it holds as BULK_IN (our BULK_OUT): an ACK or REPLY to
	 * anything we sent on BULK_OUT would never come. CONTROL takes bulk
	 * too (MATCH_MAY) both ways. */
	if (net->user_mode)
		return SOCKLND_CONN_NONE;
	if (n[SOCKLND_CONN_BULK_IN] < cpp && n[SOCKLND_CONN_BULK_IN] <= n[SOCKLND_CONN_BULK_OUT])
		return SOCKLND_CONN_BULK_IN;
	if (n[SOCKLND_CONN_BULK_OUT] < cpp)
		return SOCKLND_CONN_BULK_OUT;
	if (n[SOCKLND_CONN_BULK_IN] < cpp)
		return SOCKLND_CONN_BULK_IN;
	return SOCKLND_CONN_NONE;
}

/* The port a connection of `ctype` is dialled to, as the kernel's
 * lnet_connect(): accept_port for CONTROL alone, accept_port_bulk for
 * every other type (BULK_IN, BULK_OUT, and an untyped ANY). Both are the
 * peer's as much as ours: "the same on all nodes". */
static uint16_t ksock_dial_port(const struct ksock_net *net, int ctype)
{
	return ctype == SOCKLND_CONN_CONTROL ? net->accept_port : net->accept_port_bulk;
}

static void ksock_peer_sa(const ulnet_nid_t *nid, uint16_t port, struct sockaddr_storage *sa,
			  socklen_t *len)
{
	memset(sa, 0, sizeof(*sa));
	if (nid->size == 12) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)sa;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, nid->addr, 16);
		s->sin6_port = htons(port);
		*len = sizeof(*s);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)sa;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, nid->addr, 4);
		s->sin_port = htons(port);
		*len = sizeof(*s);
	}
}

static void ksock_set_port(struct sockaddr_storage *sa, int port)
{
	if (sa->ss_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
}

/* Socket bound to the NI's address and connecting (non-blocking) to `to`.
 * Returns the fd or -errno. */
static int ksock_dial(struct ksock_net *net, const struct sockaddr_storage *to, socklen_t tolen)
{
	int tries = net->user_mode ? 1 : KSOCK_PRIV_PORT_HI - KSOCK_PRIV_PORT_LO + 1;

	for (int i = 0; i < tries; i++) {
		struct sockaddr_storage me = net->sa;
		int one = 1, port = 0, fd, rc;

		fd = ksock_socket(net, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return fd;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		ksock_socket_bufs(net, fd);
		if (!net->user_mode) {
			port = net->next_priv_port--;
			if (net->next_priv_port < KSOCK_PRIV_PORT_LO)
				net->next_priv_port = KSOCK_PRIV_PORT_HI;
		}
		ksock_set_port(&me, port);
		if (bind(fd, (struct sockaddr *)&me, net->salen) < 0) {
			rc = -errno;
			close(fd);
			if (rc == -EACCES && !net->user_mode) {
				/* the caller decides again, as a user-space
				 * peer, whether to dial at all (no SYN yet) */
				net->user_mode = true;
				net->pid |= ULNET_PID_USERFLAG;
				lnet_ni_log(net->ni, ULNET_LOG_WARN,
					    "can't bind privileged ports: connecting as a user-space peer (pid %#x)",
					    net->pid);
				return -EACCES;
			}
			if (rc == -EADDRINUSE && !net->user_mode)
				continue;
			return rc;
		}
		rc = connect(fd, (const struct sockaddr *)to, tolen);
		if (rc == 0 || errno == EINPROGRESS)
			return fd;
		rc = -errno;
		close(fd);
		/* that source port already talks to that destination */
		if ((rc == -EADDRNOTAVAIL || rc == -EADDRINUSE) && !net->user_mode)
			continue;
		return rc;
	}
	lnet_ni_log(net->ni, ULNET_LOG_ERROR, "no privileged ports available");
	return -EADDRINUSE;
}

static void ksock_fail_peer_txs_locked(struct ksock_net *net, struct ksock_peer *peer, int err,
				      struct ksock_done *done)
{
	while (peer->txq_head) {
		struct ksock_tx *tx = peer->txq_head;

		peer->txq_head = tx->next;
		if (tx->msg)
			ksock_done_add(net, done, tx, err);
		else
			ksock_tx_free(net, tx);
	}
	peer->txq_tail = NULL;
	peer->nacks = 0;
}

void ksock_connect_failed_locked(struct ksock_net *net, struct ksock_peer *peer, int err,
				 struct ksock_done *done)
{
	uint64_t now = ksock_now(net);
	char nb[ULNET_NIDSTR_SIZE];

	if (peer->nconnecting > 0)
		peer->nconnecting--;
	if (net->shutdown)
		return;
	if (err == -EPROTONOSUPPORT) {
		/* the peer answered in another version: redial at once */
		peer->retry_at = 0;
		ksock_kick_connect_locked(net);
		return;
	}
	if (err == -EALREADY) {
		/* lost the race: the peer's own conns will likely do */
		peer->ealready++;
		peer->retry_at = now + net->tun.min_reconnect_ms * KSOCK_NS_PER_MS;
		return;
	}
	peer->retry_at = now + peer->retry_ms * KSOCK_NS_PER_MS;
	peer->retry_ms *= 2;
	if (peer->retry_ms > net->tun.max_reconnect_ms)
		peer->retry_ms = net->tun.max_reconnect_ms;
	if (peer->retry_ms < net->tun.min_reconnect_ms)
		peer->retry_ms = net->tun.min_reconnect_ms;
	peer->last_error = err;
	lnet_ni_log(net->ni, ULNET_LOG_WARN, "peer %s: connect failed: %s (retry in %llu ms)",
		    ksock_nidstr(&peer->nid, nb), strerror(-err),
		    (unsigned long long)((peer->retry_at - now) / KSOCK_NS_PER_MS));
	if (!peer->conns) {
		/* nothing can carry them: fail now, the core may resend */
		ksock_fail_peer_txs_locked(net, peer, err, done);
		if (!peer->userspace)
			ksock_done_notify(done, &peer->nid, err);
	}
}

void ksock_kick_connect_locked(struct ksock_net *net)
{
	net->kick_connect = true;
	ksock_kick(net);
}

/* A user-space peer does not dial over IPv6: a kernel takes a connection
 * from an unprivileged port for a user-space peer's and asserts it is IPv4
 * (ksocknal_recv_hello: LASSERT, an LBUG that stops the node when
 * accept=all). What waits for the peer fails. */
static void ksock_refuse_userspace_v6_locked(struct ksock_net *net, struct ksock_peer *peer,
					     struct ksock_done *done)
{
	char nb[ULNET_NIDSTR_SIZE];

	if (peer->txq_head)
		lnet_ni_log(net->ni, ULNET_LOG_ERROR,
			    "peer %s: not connecting over IPv6 without a privileged source port "
			    "(a kernel node asserts on such a connection): give the process "
			    "CAP_NET_BIND_SERVICE",
			    ksock_nidstr(&peer->nid, nb));
	ksock_fail_peer_txs_locked(net, peer, -EHOSTUNREACH, done);
}

void ksock_peer_connect_locked(struct ksock_net *net, struct ksock_peer *peer,
			       struct ksock_done *done)
{
	struct sockaddr_storage to;
	struct ksock_conn *c;
	char nb[ULNET_NIDSTR_SIZE];
	socklen_t tolen;
	int ctype, fd;
	bool was_user;
	uint64_t now = ksock_now(net);

	if (net->shutdown || peer->nconnecting > 0 || now < peer->retry_at)
		return;
	if (net->link_down) {
		/* no connection over a link that is down: what waits fails */
		ksock_fail_peer_txs_locked(net, peer, -ENETUNREACH, done);
		return;
	}
	ctype = ksock_next_ctype(net, peer);
	if (ctype == SOCKLND_CONN_NONE)
		return;
	if (peer->conns && !peer->connector && !peer->txq_head && !peer->nacks)
		return;          /* the peer dialled us; we only top up when we need to */
	if (peer->conns && peer->ealready >= KSOCK_EALREADY_RETRIES)
		return;          /* the peer keeps winning the race: live with its conns */
	if (peer->userspace) {
		/* the kernel's rule: never dial a user-space process */
		if (!peer->conns && peer->txq_head) {
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "refusing to create a connection to user-space process %s pid %#x",
				    ksock_nidstr(&peer->nid, nb), peer->pid);
			ksock_fail_peer_txs_locked(net, peer, -EHOSTUNREACH, done);
		}
		return;
	}
	if (net->user_mode && peer->nid.size == 12) {
		ksock_refuse_userspace_v6_locked(net, peer, done);
		return;
	}
	if ((int)syscall(SYS_gettid) != __atomic_load_n(&net->loop_tid, __ATOMIC_RELAXED)) {
		/* sockets are born on the loop thread */
		ksock_kick_connect_locked(net);
		return;
	}
	ksock_peer_sa(&peer->nid, ksock_dial_port(net, ctype), &to, &tolen);
	was_user = net->user_mode;
	fd = net->dial_hook ? net->dial_hook(net, &to, tolen) : ksock_dial(net, &to, tolen);
	if (fd == -EACCES && net->user_mode && !was_user) {
		/* the privileged ports are refused: we are a user-space peer
		 * now, and what was chosen for a privileged one may no longer
		 * hold (nothing was sent yet) */
		if (peer->nid.size == 12) {
			ksock_refuse_userspace_v6_locked(net, peer, done);
			return;
		}
		if (ctype != SOCKLND_CONN_CONTROL && ctype != SOCKLND_CONN_ANY)
			return;
		fd = ksock_dial(net, &to, tolen);
	}
	if (fd < 0) {
		peer->nconnecting++;
		ksock_connect_failed_locked(net, peer, fd, done);
		return;
	}
	c = ksock_conn_new_locked(net, fd, true);
	if (!c) {
		close(fd);
		return;
	}
	peer->nconnecting++;
	peer->connector = true;
	c->peer = peer;
	c->target_nid = peer->nid;
	c->target_pid = peer->pid;
	c->ctype = ctype;
	/* a peer with live conns gets their version (the kernel closes every
	 * conn of a peer whose new conn brings another one); else the one it
	 * answered last, else ours */
	c->hs_version = peer->conns && peer->proto ? peer->proto->version
			: peer->want_version ? peer->want_version : net->tun.protocol;
	c->state = KSOCK_CS_CONNECTING;
	c->hs_deadline = now + net->timeout_ns;
	memcpy(&c->peer_sa, &to, sizeof(to));
	{
		char ip[INET6_ADDRSTRLEN] = "?";

		if (to.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&to)->sin6_addr, ip, sizeof(ip));
		else
			inet_ntop(AF_INET, &((struct sockaddr_in *)&to)->sin_addr, ip, sizeof(ip));
		c->peer_port = ksock_dial_port(net, ctype);
		snprintf(c->addrstr, sizeof(c->addrstr), to.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
			 ip, c->peer_port);
	}
	if (ul_io_start(net->loop, &c->io, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0)
		ksock_conn_close_locked(c, -ENOMEM, false, done);
	ksock_conn_put_locked(c);     /* the list holds it */
}

/* EPOLLOUT on a connecting socket: connected (or not); send the acceptor
 * request and our HELLO, then read the reply. */
void ksock_connect_io(struct ksock_conn *c, uint32_t revents)
{
	struct ksock_net *net = c->net;
	char nb[ULNET_NIDSTR_SIZE];
	int err = 0, rc;
	socklen_t l = sizeof(err);

	if (c->state == KSOCK_CS_CONNECTING) {
		struct lnet_acceptor_req req = { .version = 1 };
		ssize_t n;

		if (!(revents & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
		if (err) {
			char desc[160];

			ksock_conn_describe(c, desc, sizeof(desc));
			lnet_ni_log(net->ni, ULNET_LOG_WARN, "%s: connect: %s", desc, strerror(err));
			ksock_conn_close(c, -err, false);
			return;
		}
		l = sizeof(c->my_sa);
		getsockname(c->fd, (struct sockaddr *)&c->my_sa, &l);
		req.version = ulnet_nid_is_large(&c->target_nid) ? 2 : 1;
		req.target = c->target_nid;
		n = lnet_acceptor_req_encode(&req, false, c->hs_out, sizeof(c->hs_out));
		if (n < 0) {
			ksock_hs_fail(c, (int)n, "can't encode acceptor request for %s",
				      ksock_nidstr(&c->target_nid, nb));
			return;
		}
		KSOCK_PEEKED_SET(c->hs_out_len, (size_t)n);
		c->hs_out_sent = 0;
		rc = ksock_send_hello(c, c->hs_version, c->ctype, NULL);
		if (rc < 0) {
			ksock_hs_fail(c, rc, "can't encode HELLO V%u", c->hs_version);
			return;
		}
		c->state = KSOCK_CS_HS_SEND;
	}
	rc = ksock_hs_flush(c);
	if (rc < 0) {
		ksock_hs_fail(c, rc, "error sending HELLO: %s", strerror(-rc));
		return;
	}
	if (rc == 0)
		return;          /* EPOLLOUT will come back */
	c->state = KSOCK_CS_HELLO;
	ksock_hs_readable(c);
}
