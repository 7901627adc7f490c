/* SPDX-License-Identifier: MIT */
/*
 * sock_acceptor.c - the LNet acceptor: listen on the NI's address, check
 * the source port (accept=secure), read the acceptor request (magic in
 * either byte order, v1 or v2), answer old or unknown versions, check the
 * target NID, then hand the socket to the HELLO reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"
#include "util/util_bytes.h"

#define KSOCK_OLD_TCP_MAGIC_LE 0xeebc0dedu

static void ksock_listen_cb(struct ul_io *io, uint32_t revents);

int ksock_acceptor_start(struct ksock_net *net)
{
	struct sockaddr_storage sa = net->sa;
	int one = 1, fd, rc;

	fd = socket(net->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (net->family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		((struct sockaddr_in6 *)&sa)->sin6_port = htons(net->accept_port);
	} else {
		((struct sockaddr_in *)&sa)->sin_port = htons(net->accept_port);
	}
	if (bind(fd, (struct sockaddr *)&sa, net->salen) < 0 || listen(fd, 128) < 0) {
		rc = -errno;
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "acceptor: can't listen on port %u: %s",
			    net->accept_port, strerror(-rc));
		close(fd);
		return rc;
	}
	net->listen_fd = fd;
	ul_io_init(&net->listen_io, fd, ksock_listen_cb);
	rc = ul_io_start(net->loop, &net->listen_io, EPOLLIN);
	if (rc < 0) {
		close(fd);
		net->listen_fd = -1;
	}
	return rc;
}

void ksock_acceptor_stop(struct ksock_net *net)
{
	if (net->listen_fd < 0)
		return;
	ul_io_stop(net->loop, &net->listen_io);
	close(net->listen_fd);
	net->listen_fd = -1;
}

static void ksock_listen_cb(struct ul_io *io, uint32_t revents)
{
	struct ksock_net *net = (struct ksock_net *)((char *)io - offsetof(struct ksock_net, listen_io));

	(void)revents;
	ksock_loop_enter(net);
	/* bounded: a flood of connects must not starve the loop */
	for (int n = 0; n < 64; n++) {
		struct ksock_conn *c;
		int fd = accept4(net->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;    /* EAGAIN, or a transient error: level-triggered */
		ksock_socket_bufs(net, fd);
		c = ksock_conn_new(net, fd, false);
		if (!c) {
			close(fd);
			continue;
		}
		if (net->accept_mode == 0 && c->peer_port > KSOCK_PRIV_PORT_HI) {
			ksock_log_limited(net, KSOCK_RL_ACCEPT, "insecure port", &c->peer_sa,
					  ULNET_LOG_ERROR,
					  "acceptor: refusing connection from %s: insecure port %u",
					  c->addrstr, c->peer_port);
			ksock_conn_close(c, -EACCES, false);
			ksock_conn_put(c);
			continue;
		}
		c->state = KSOCK_CS_ACC_REQ;
		c->hs_deadline = ksock_now(net) + (uint64_t)KSOCK_ACCEPT_TIMEOUT_S * KSOCK_NS_PER_S;
		if (ul_io_start(net->loop, &c->io, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
			ksock_conn_close(c, -ENOMEM, false);
			ksock_conn_put(c);
			continue;
		}
		ksock_conn_put(c);  /* the lists hold it now */
	}
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

/* Read the acceptor request (reference §1.3). */
void ksock_acc_readable(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;
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
	ksock_hs_readable(c);
	return;

short_read:
	if (rc < 0)
		ksock_hs_fail(c, (int)rc, "%s reading acceptor request",
			      rc == -ECONNRESET ? "EOF" : "error");
}
