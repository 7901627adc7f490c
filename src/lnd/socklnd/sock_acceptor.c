/* SPDX-License-Identifier: MIT */
/*
 * sock_acceptor.c - the LNet acceptor: listen on the NI's address, on
 * accept_port and, when it differs, on accept_port_bulk too (one listener
 * for the NIs on one address and port: sock_listener.c), check the source
 * port (accept=secure), read the acceptor request (magic in either byte
 * order, v1 or v2), answer old or unknown versions, check the target NID,
 * then hand the socket to the HELLO reader. A connection of any type is
 * taken on either port, as the kernel's acceptor does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"
#include "util/util_bytes.h"

#define KSOCK_OLD_TCP_MAGIC_LE 0xeebc0dedu

static void ksock_listen_cb(struct ul_io *io, uint32_t revents);
static void ksock_accept_timer_cb(struct ul_timer *t);

int ksock_acceptor_start(struct ksock_net *net)
{
	for (int i = 0; i < net->nlis; i++) {
		int rc = ksock_lgroup_join(&net->lis[i]);

		if (rc < 0) {
			/* both ports or none, as the kernel's
			 * lnet_acceptor_add_sockets() */
			while (i-- > 0)
				ksock_lgroup_leave(&net->lis[i]);
			return rc;
		}
	}
	return 0;
}

void ksock_acceptor_stop(struct ksock_net *net)
{
	for (int i = 0; i < net->nlis; i++)
		ksock_lgroup_leave(&net->lis[i]);
}

int ksock_listener_open(struct ksock_listener *l)
{
	struct ksock_net *net = l->net;
	struct sockaddr_storage sa = net->sa;
	int one = 1, fd, rc;

	fd = ksock_socket(net, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (net->family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		((struct sockaddr_in6 *)&sa)->sin6_port = htons(l->port);
	} else {
		((struct sockaddr_in *)&sa)->sin_port = htons(l->port);
	}
	if (bind(fd, (struct sockaddr *)&sa, net->salen) < 0 ||
	    listen(fd, net->accept_backlog) < 0) {
		rc = -errno;
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "acceptor: can't listen on port %u%s: %s",
			    l->port, l - net->lis == KSOCK_LIS_BULK ? " (accept_port_bulk)" : "",
			    strerror(-rc));
		close(fd);
		return rc;
	}
	l->fd = fd;
	ul_timer_init(&l->timer, ksock_accept_timer_cb);
	l->paused = false;
	ul_io_init(&l->io, fd, ksock_listen_cb);
	rc = ul_io_start(net->loop, &l->io, EPOLLIN);
	if (rc < 0) {
		close(fd);
		l->fd = -1;
	}
	return rc;
}

void ksock_listener_close(struct ksock_listener *l)
{
	if (l->fd < 0)
		return;
	ul_timer_stop(l->net->loop, &l->timer);
	l->paused = false;
	ul_io_stop(l->net->loop, &l->io);
	close(l->fd);
	l->fd = -1;
}

void ksock_listener_move(struct ksock_listener *from, struct ksock_listener *to)
{
	int fd = from->fd;

	if (fd < 0)
		return;
	ul_timer_stop(from->net->loop, &from->timer);
	from->paused = false;
	ul_io_stop(from->net->loop, &from->io);
	from->fd = -1;
	/* a parked listener starts afresh: what waits wakes it at once */
	to->fd = fd;
	ul_timer_init(&to->timer, ksock_accept_timer_cb);
	to->paused = false;
	ul_io_init(&to->io, fd, ksock_listen_cb);
	if (ul_io_start(to->net->loop, &to->io, EPOLLIN) < 0) {
		lnet_ni_log(to->net->ni, ULNET_LOG_ERROR,
			    "acceptor: can't take over the listener on port %u", to->port);
		close(fd);
		to->fd = -1;
	}
}

/* Take one accepted socket: a conn reading the acceptor request (also
 * the entry of fuzz_sock_conn, which hands it one end of a socketpair).
 * 0, or the error that closed it. */
int ksock_acceptor_adopt(struct ksock_net *net, int fd)
{
	struct ksock_conn *c = ksock_conn_new(net, fd, false);

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	if (net->accept_mode == 0 && c->peer_port > KSOCK_PRIV_PORT_HI) {
		ksock_log_limited(net, KSOCK_RL_ACCEPT, "insecure port", &c->peer_sa, ULNET_LOG_ERROR,
				  "acceptor: refusing connection from %s: insecure port %u",
				  c->addrstr, c->peer_port);
		ksock_conn_close(c, -EACCES, false);
		ksock_conn_put(c);
		return -EACCES;
	}
	c->state = KSOCK_CS_ACC_REQ;
	c->hs_deadline = ksock_now(net) + (uint64_t)KSOCK_ACCEPT_TIMEOUT_S * KSOCK_NS_PER_S;
	if (ul_io_start(net->loop, &c->io, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
		ksock_conn_close(c, -ENOMEM, false);
		ksock_conn_put(c);
		return -ENOMEM;
	}
	ksock_conn_put(c);  /* the lists hold it now */
	return 0;
}

/*
 * Accept at most `budget` waiting connections. Returns 0 when the queue is
 * empty (EAGAIN) or the budget is spent, else the errno that stops
 * accepting for a while: EMFILE/ENFILE (out of fds), ENOBUFS/ENOMEM, or
 * anything unexpected. A listener that is readable but cannot accept
 * would otherwise wake the loop at once, forever (level-triggered), and
 * burn a CPU. Errors of the one connection (aborted before we took it,
 * network errors the kernel passes on: accept(2)) only skip it.
 */
static int ksock_accept_some(struct ksock_listener *l, int budget, unsigned *accepted)
{
	struct ksock_net *net = l->net;

	for (int n = 0; n < budget; n++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0 && __atomic_load_n(&net->link_down, __ATOMIC_RELAXED)) {
			/* the link is down: none is taken (the peer sees it
			 * closed at once rather than its hello unanswered) */
			close(fd);
			continue;
		}
		if (fd >= 0) {
			ksock_socket_bufs(net, fd);
			(void)ksock_acceptor_adopt(net, fd);
			(*accepted)++;
			continue;
		}
		switch (errno) {
		case EAGAIN:
			return 0;
		case EINTR:
		case ECONNABORTED:
		case EPROTO:
		case EPERM:          /* a firewall rule */
		case ENETDOWN:
		case ENOPROTOOPT:
		case EHOSTDOWN:
		case ENONET:
		case EHOSTUNREACH:
		case EOPNOTSUPP:
		case ENETUNREACH:
			continue;
		default:
			return errno;
		}
	}
	return 0;
}

/* Park the listener (out of epoll) and retry on a timer. */
static void ksock_accept_pause(struct ksock_listener *l, int err)
{
	struct ksock_net *net = l->net;
	uint64_t now = ksock_now(net);

	ul_io_stop(net->loop, &l->io);
	l->paused = true;
	l->err = err;
	l->retries = 0;
	l->paused_at = now;
	l->delay_ns = (uint64_t)KSOCK_ACCEPT_RETRY_MIN_MS * KSOCK_NS_PER_MS;
	/* once per episode, and episodes themselves rate-limited */
	l->logged = ksock_log_limited(
		net, KSOCK_RL_ACCEPT, "accept failed", NULL, ULNET_LOG_ERROR,
		"acceptor: can't accept connections on port %u: %s%s; not accepting for now, "
		"retrying every %u..%u ms", l->port, strerror(err),
		err == EMFILE ? " (the process's RLIMIT_NOFILE)" :
		err == ENFILE ? " (the system's file limit)" : "",
		KSOCK_ACCEPT_RETRY_MIN_MS, KSOCK_ACCEPT_RETRY_MAX_MS);
	ul_timer_start(net->loop, &l->timer, now + l->delay_ns);
}

static void ksock_listen_cb(struct ul_io *io, uint32_t revents)
{
	struct ksock_listener *l =
		(struct ksock_listener *)((char *)io - offsetof(struct ksock_listener, io));
	unsigned accepted = 0;
	int err;

	(void)revents;
	ksock_loop_enter(l->net);
	/* bounded: a flood of connects must not starve the loop (the
	 * listener is level-triggered: what is left wakes us next turn) */
	err = ksock_accept_some(l, 64, &accepted);
	if (err)
		ksock_accept_pause(l, err);
}

/* A retry of a parked listener: accept what waits, as many as a turn of
 * the listener would; then the listener goes back into epoll (anything
 * still queued wakes it at once), or waits longer (doubling, at most 1 s). */
static void ksock_accept_timer_cb(struct ul_timer *t)
{
	struct ksock_listener *l =
		(struct ksock_listener *)((char *)t - offsetof(struct ksock_listener, timer));
	struct ksock_net *net = l->net;
	unsigned accepted = 0;
	uint64_t now;
	int err;

	ksock_loop_enter(net);
	if (l->fd < 0 || !l->paused)
		return;
	err = ksock_accept_some(l, 64, &accepted);
	now = ksock_now(net);
	if (!err && ul_io_start(net->loop, &l->io, EPOLLIN) < 0)
		err = ENOMEM;
	if (err) {
		l->retries++;
		l->err = err;
		l->delay_ns *= 2;
		if (l->delay_ns > (uint64_t)KSOCK_ACCEPT_RETRY_MAX_MS * KSOCK_NS_PER_MS)
			l->delay_ns = (uint64_t)KSOCK_ACCEPT_RETRY_MAX_MS * KSOCK_NS_PER_MS;
		ul_timer_start(net->loop, &l->timer, now + l->delay_ns);
		return;
	}
	l->paused = false;
	if (l->logged)
		lnet_ni_log(net->ni, ULNET_LOG_WARN,
			    "acceptor: accepting again on port %u after %llu ms (%u retries failed, "
			    "%u waiting connections accepted now)", l->port,
			    (unsigned long long)((now - l->paused_at) / KSOCK_NS_PER_MS),
			    l->retries, accepted);
}

/* Best effort: a few bytes on a fresh socket always fit the buffer. The
 * kernel writes this reply in its own byte order whatever the requester's
 * (lnet_accept: the struct as is); ours is little-endian, as all we send. */
static void ksock_acc_reply_old(struct ksock_conn *c)
{
	struct lnet_acceptor_req r = { .version = 1 };
	uint8_t buf[LNET_ACCEPTOR_REQ_V2_SIZE];
	ssize_t n;

	memset(&r.target, 0, sizeof(r.target));
	n = lnet_acceptor_req_encode(&r, false, buf, sizeof(buf));
	if (n > 0 && send(c->fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;
}

/* A connection handed over to an NI on another loop (ni_thread.c): off
 * this loop, onto that one. The kick (which holds a reference) is queued
 * before the socket starts there: from then on that NI's thread may use
 * and close it, and this thread touches it no more. */
static void ksock_conn_move_loop(struct ksock_conn *c, struct ul_loop *from)
{
	struct ksock_net *net = c->net;

	ul_io_stop(from, &c->io);
	ksock_lock(net);
	ksock_kick_conn_locked(c);
	ksock_unlock(net);
	if (ul_io_start(net->loop, &c->io, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0)
		/* its handshake deadline (the reaper) closes it */
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "acceptor: %s: can't watch the socket on the NI's loop",
			    c->addrstr);
}

/* Read the acceptor request (reference §1.3). */
void ksock_acc_readable(struct ksock_conn *c)
{
	struct ksock_net *net = c->net, *from = net;
	bool from_loop;
	char nb[ULNET_NIDSTR_SIZE], mb[ULNET_NIDSTR_SIZE];
	struct lnet_acceptor_req req;
	uint32_t magic, version;
	bool swapped;
	size_t need;
	ssize_t rc;

	rc = ksock_hs_fill(c, 4);
	if (rc <= 0)
		goto short_read;
	magic = ul_get_le32(c->hs_in);
	if (magic == LNET_PROTO_ACCEPTOR_MAGIC) {
		swapped = false;
	} else if (magic == __builtin_bswap32(LNET_PROTO_ACCEPTOR_MAGIC)) {
		swapped = true;
	} else if (magic == LNET_PROTO_MAGIC || magic == __builtin_bswap32(LNET_PROTO_MAGIC)) {
		/* a HELLO without a request: an "old" peer; tell it we are old */
		ksock_acc_reply_old(c);
		ksock_hs_fail(c, -EPROTO, "HELLO without acceptor request (answered v1, NID 0)");
		return;
	} else if (magic == KSOCK_OLD_TCP_MAGIC_LE) {
		ksock_hs_fail(c, -EPROTO, "'old' socknal/tcpnal peer");
		return;
	} else {
		ksock_hs_fail(c, -EPROTO, "bad acceptor magic %#010x", magic);
		return;
	}
	rc = ksock_hs_fill(c, 8);
	if (rc <= 0)
		goto short_read;
	version = swapped ? ul_get_be32(c->hs_in + 4) : ul_get_le32(c->hs_in + 4);
	if (version == 1) {
		need = LNET_ACCEPTOR_REQ_V1_SIZE;
	} else if (version == 2) {
		need = LNET_ACCEPTOR_REQ_V2_SIZE;
	} else {
		ksock_acc_reply_old(c);
		ksock_hs_fail(c, -EPROTO, "unknown acceptor request version %u (answered v1)", version);
		return;
	}
	rc = ksock_hs_fill(c, need);
	if (rc <= 0)
		goto short_read;
	rc = lnet_acceptor_req_decode(c->hs_in, need, &req);
	if (rc < 0) {
		ksock_hs_fail(c, -EPROTO, "malformed acceptor request (%zd)", rc);
		return;
	}
	if (!ulnet_nid_same(&req.target, &net->nid) && ksock_lgroup_hand_over(c, &req.target))
		net = c->net;   /* another NI on this address and port: its connection */
	from_loop = net->loop != from->loop;
	if (!ulnet_nid_same(&req.target, &net->nid)) {
		ksock_hs_fail(c, -EPERM, "refusing connection to %s: %s (I am %s)",
			      ksock_nidstr(&req.target, nb),
			      ulnet_nid_net(&req.target) == ulnet_nid_net(&net->nid)
				      ? "right NET, wrong NID" : "wrong NET",
			      ksock_nidstr(&net->nid, mb));
		return;
	}
	lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "acceptor: request v%u%s from %s for %s", req.version,
		    swapped ? " (byte-swapped)" : "", c->addrstr, ksock_nidstr(&req.target, nb));
	/* the HELLO follows on the same socket */
	memmove(c->hs_in, c->hs_in + need, c->hs_have - need);
	c->hs_have -= need;
	c->state = KSOCK_CS_HELLO;
	if (from_loop) {
		/* that NI runs on a thread of its own: its loop takes the
		 * socket, and reads the HELLO there (some may be in hs_in
		 * already, which no edge would announce: the kick looks) */
		ksock_conn_move_loop(c, from->loop);
		return;
	}
	ksock_hs_readable(c);
	return;

short_read:
	if (rc < 0)
		ksock_hs_fail(c, (int)rc, "%s reading acceptor request",
			      rc == -ECONNRESET ? "EOF" : "error");
}
