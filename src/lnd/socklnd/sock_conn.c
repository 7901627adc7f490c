/* SPDX-License-Identifier: MIT */
/*
 * sock_conn.c - connection objects and the HELLO exchange: reading the
 * peer's HELLO (any version, either byte order), the admission rules (race,
 * incarnation, duplicates), the reply, socket options, and closing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"

static void ksock_conn_up_locked(struct ksock_conn *c, struct ksock_done *done);

static void ksock_sa_str(const struct sockaddr_storage *sa, char *buf, size_t len, uint16_t *port)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		*port = ntohs(s->sin_port);
		snprintf(buf, len, "%s:%u", ip, *port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		*port = ntohs(s->sin6_port);
		snprintf(buf, len, "[%s]:%u", ip, *port);
	} else {
		*port = 0;
		snprintf(buf, len, "?");
	}
}

/* New conn with two refs: the caller's and the list's (hs_conns). */
struct ksock_conn *ksock_conn_new(struct ksock_net *net, int fd, bool active)
{
	struct ksock_conn *c;

	ksock_lock(net);
	c = ksock_conn_new_locked(net, fd, active);
	ksock_unlock(net);
	return c;
}

struct ksock_conn *ksock_conn_new_locked(struct ksock_net *net, int fd, bool active)
{
	struct ksock_conn *c = calloc(1, sizeof(*c));
	socklen_t l;

	if (!c)
		return NULL;
	c->net = net;
	c->fd = fd;
	c->active = active;
	c->refs = 2;
	c->ctype = SOCKLND_CONN_NONE;
	c->family = net->family;
	ul_io_init(&c->io, fd, ksock_conn_io);
	c->io.poll = ksock_conn_poll;   /* busy-poll loops only */
	l = sizeof(c->peer_sa);
	if (getpeername(fd, (struct sockaddr *)&c->peer_sa, &l) == 0)
		ksock_sa_str(&c->peer_sa, c->addrstr, sizeof(c->addrstr), &c->peer_port);
	else
		snprintf(c->addrstr, sizeof(c->addrstr), "?");
	l = sizeof(c->my_sa);
	getsockname(fd, (struct sockaddr *)&c->my_sa, &l);
	c->rx_last_progress = c->tx_last_progress = ksock_now(net);
	c->id = ++net->next_conn_id;
	c->next = net->hs_conns;
	net->hs_conns = c;
	c->on_list = true;
	return c;
}

void ksock_conn_get_locked(struct ksock_conn *c)
{
	c->refs++;
}

void ksock_conn_put_locked(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;

	if (--c->refs > 0)
		return;
	/* freed on the loop, after its epoll batch (see ksock_kick) */
	c->kick_next = net->dead_conns;
	net->dead_conns = c;
	if (!net->shutdown)
		ksock_kick(net);
}

void ksock_conn_put(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;

	ksock_lock(net);
	ksock_conn_put_locked(c);
	ksock_unlock(net);
}

void ksock_conn_free(struct ksock_conn *c)
{
	struct lnet_msg *msg = c->rx_msg;

	ul_io_stop(c->net->loop, &c->io);
	if (c->fd >= 0)
		close(c->fd);
	c->rx_msg = NULL;
	free(c);
	/* recv() was called but the payload never came in full */
	if (msg)
		lnet_finalize(msg, -ECONNRESET);
}

void ksock_conn_describe(const struct ksock_conn *c, char *buf, size_t len)
{
	char nb[ULNET_NIDSTR_SIZE];
	/* a passive conn whose HELLO was read (proto set): the NID it claims */
	const ulnet_nid_t *nid = c->peer ? &c->peer->nid : c->active ? &c->target_nid
				 : c->proto ? &c->id_nid : NULL;

	snprintf(buf, len, "conn #%llu %s %s peer %s (%s)%s%s",
		 (unsigned long long)c->id, c->active ? "active" : "passive",
		 ksock_ctype_str(c->ctype), nid ? ksock_nidstr(nid, nb) : "<unknown>", c->addrstr,
		 c->proto ? " " : "", c->proto ? c->proto->name : "");
}

/* Unlink from whichever list holds the conn. */
static void ksock_conn_unlink_locked(struct ksock_conn *c)
{
	struct ksock_conn **pp;

	if (!c->on_list)
		return;
	pp = c->state == KSOCK_CS_UP && c->peer ? &c->peer->conns : &c->net->hs_conns;
	if (c->state == KSOCK_CS_UP && c->peer)
		c->peer->conn_hint[0] = c->peer->conn_hint[1] = NULL;
	for (; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	c->on_list = false;
	c->next = NULL;
}

void ksock_conn_close_locked(struct ksock_conn *c, int err, bool siblings, struct ksock_done *done)
{
	struct ksock_net *net = c->net;
	struct ksock_peer *peer = c->peer;
	bool was_up = c->state == KSOCK_CS_UP;

	bool clean = err == 0;        /* EOF between messages: no failure to report */

	if (c->state == KSOCK_CS_CLOSED)
		return;
	ksock_conn_unlink_locked(c);
	ksock_conn_tx_forget_locked(c);
	c->state = KSOCK_CS_CLOSED;
	shutdown(c->fd, SHUT_RDWR);
	if (err == 0)
		err = -ECONNRESET;

	/* everything queued on it fails with the conn's error */
	while (c->txq_head) {
		struct ksock_tx *tx = c->txq_head;

		KSOCK_PEEKED_SET(c->txq_head, tx->next);
		if (tx->msg)
			ksock_done_add(net, done, tx, err);
		else
			ksock_tx_free(net, tx);
	}
	c->txq_tail = NULL;
	c->tx_queued = 0;
	if (peer) {
		for (struct ksock_tx **pp = &peer->zc_head; *pp;) {
			struct ksock_tx *tx = *pp;

			if (tx->conn == c) {
				KSOCK_PEEKED_SET(*pp, tx->next);
				ksock_done_add(net, done, tx, err);
			} else {
				pp = &tx->next;
			}
		}
	}
	if (was_up && peer) {
		if (siblings)
			while (peer->conns)
				ksock_conn_close_locked(peer->conns, clean ? 0 : err, false, done);
		/* the peer failed once it has no connection left, as the
		 * kernel's ksocknal_peer_failed() (which keeps a user-space
		 * peer's failure quiet too) */
		if (err != -ESHUTDOWN && !clean && !peer->userspace && !peer->conns)
			ksock_done_notify(done, &peer->nid, err);
		if (!peer->conns && peer->txq_head && !net->shutdown) {
			/* redial after back-off; the reaper does it */
			if (peer->retry_at < ksock_now(net))
				peer->retry_at = ksock_now(net) +
						 peer->retry_ms * KSOCK_NS_PER_MS;
		}
	}
	if (c->active && !was_up && peer) {
		/* an attempt died before it came up */
		ksock_connect_failed_locked(net, peer, err, done);
	}
	ksock_conn_put_locked(c);   /* the list's ref */
}

void ksock_conn_close(struct ksock_conn *c, int err, bool siblings)
{
	struct ksock_done done = { 0 };

	ksock_lock(c->net);
	ksock_conn_close_locked(c, err, siblings, &done);
	ksock_unlock(c->net);
	ksock_done_run(c->net, &done);
}

/* The rate limiter's source key: the peer's IP address, not its port (a
 * new connection has a new port). 0 when there is none. */
static uint64_t ksock_src_key(const struct sockaddr_storage *sa)
{
	if (sa && sa->ss_family == AF_INET)
		return ul_rl_hash_bytes(&((const struct sockaddr_in *)sa)->sin_addr, 4);
	if (sa && sa->ss_family == AF_INET6)
		return ul_rl_hash_bytes(&((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	return 0;
}

bool ksock_log_limited(struct ksock_net *net, enum ksock_rl_site site, const char *reason,
		       const struct sockaddr_storage *src, enum ulnet_log_level lvl,
		       const char *fmt, ...)
{
	char msg[400];
	uint32_t skipped;
	va_list ap;
	bool ok;

	if (!lnet_ni_log_enabled(net->ni, lvl))
		return false;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ul_lock(&net->rl_lock);
	ok = ul_rl_check(&net->rl, site, ul_rl_hash_str(reason), ksock_src_key(src), ksock_now(net),
			 lvl, msg, &skipped);
	ul_unlock(&net->rl_lock);
	if (!ok)
		return false;
	if (skipped)
		lnet_ni_log(net->ni, lvl, "%s (%u similar message%s suppressed)", msg, skipped,
			    skipped > 1 ? "s" : "");
	else
		lnet_ni_log(net->ni, lvl, "%s", msg);
	return true;
}

static const char *const ksock_rl_site_names[KSOCK_RL_NSITES] = {
	[KSOCK_RL_HS] = "handshake failures",
	[KSOCK_RL_REFUSE] = "refused connections",
	[KSOCK_RL_ACCEPT] = "acceptor",
	[KSOCK_RL_HS_TIMEOUT] = "handshake timeouts",
	[KSOCK_RL_CONN] = "connection errors",
};

struct ksock_rl_emit {
	struct ksock_net *net;
	uint64_t now;
};

static void ksock_rl_emit(void *arg, const struct ul_rl_summary *s)
{
	struct ksock_rl_emit *e = arg;
	unsigned long long secs = (e->now - s->since + KSOCK_NS_PER_S - 1) / KSOCK_NS_PER_S;
	const char *site = s->site < KSOCK_RL_NSITES ? ksock_rl_site_names[s->site] : "?";

	if (s->other_sources)
		lnet_ni_log(e->net->ni, (enum ulnet_log_level)s->level,
			    "%u similar message%s suppressed (%s, more sources or reasons than "
			    "the limiter tracks) in the last %llu s; last: %s",
			    s->count, s->count > 1 ? "s" : "", site, secs, s->sample);
	else
		lnet_ni_log(e->net->ni, (enum ulnet_log_level)s->level,
			    "%u similar message%s suppressed (%s) in the last %llu s; last: %s",
			    s->count, s->count > 1 ? "s" : "", site, secs, s->sample);
}

void ksock_log_flush(struct ksock_net *net, bool all)
{
	struct ksock_rl_emit e = { .net = net };

	ul_lock(&net->rl_lock);
	e.now = ksock_now(net);
	ul_rl_flush(&net->rl, e.now, all, ksock_rl_emit, &e);
	ul_unlock(&net->rl_lock);
}

/* Log why (rate-limited per reason and peer address), then close this
 * handshaking conn only. */
void ksock_hs_fail(struct ksock_conn *c, int err, const char *fmt, ...)
{
	char why[256], desc[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ksock_conn_describe(c, desc, sizeof(desc));
	ksock_log_limited(c->net, KSOCK_RL_HS, fmt, &c->peer_sa, ULNET_LOG_ERROR, "%s: %s; closing",
			  desc, why);
	ksock_conn_close(c, err, false);
}

/* Socket buffer sizes: set as soon as the socket exists (before connect,
 * or right after accept) so that the window scale accounts for them. */
void ksock_socket_bufs(struct ksock_net *net, int fd)
{
	if (net->tun.tx_buffer_size > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &net->tun.tx_buffer_size,
			   sizeof(net->tun.tx_buffer_size));
	if (net->tun.rx_buffer_size > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &net->tun.rx_buffer_size,
			   sizeof(net->tun.rx_buffer_size));
}

void ksock_setup_socket(struct ksock_net *net, int fd)
{
	const struct ksock_tun *t = &net->tun;
	int one = 1;

	if (!t->nagle)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (t->keepalive_idle > 0) {
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &t->keepalive_idle, sizeof(int));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &t->keepalive_intvl, sizeof(int));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &t->keepalive_count, sizeof(int));
	}
	if (t->tos >= 0) {
		if (net->family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &t->tos, sizeof(t->tos));
		else
			setsockopt(fd, IPPROTO_IP, IP_TOS, &t->tos, sizeof(t->tos));
	}
}

bool ksock_conn_merge_zcack_locked(struct ksock_conn *c, uint64_t cookie)
{
	struct ksock_tx *tx = c->txq_tail;
	struct ksock_msg_hdr kh = { .type = KSOCK_MSG_NOOP };
	uint64_t ck[2];

	/* only a NOOP nobody has started writing; the forms are V3/V4 */
	if (!tx || tx->msg || tx->sent || !c->proto || c->proto->version < KSOCK_PROTO_V3)
		return false;
	ck[0] = tx->noop_cookies[0];
	ck[1] = tx->noop_cookies[1];
	if (!ksock_zcack_merge(ck, cookie))
		return false;
	kh.zc_cookies[0] = ck[0];
	kh.zc_cookies[1] = ck[1];
	if (c->proto->khdr_encode(&kh, tx->hdr, sizeof(tx->hdr)) != KSOCK_MSG_HDR_SIZE)
		return false;
	tx->noop_cookies[0] = ck[0];
	tx->noop_cookies[1] = ck[1];
	return true;
}

int ksock_hs_fill(struct ksock_conn *c, size_t need)
{
	if (need > sizeof(c->hs_in))
		return -EPROTO;
	while (c->hs_have < need) {
		ssize_t n = recv(c->fd, c->hs_in + c->hs_have, need - c->hs_have, MSG_DONTWAIT);

		if (n > 0) {
			c->hs_have += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	return 1;
}

int ksock_hs_flush(struct ksock_conn *c)
{
	while (c->hs_out_sent < c->hs_out_len) {
		ssize_t n = send(c->fd, c->hs_out + c->hs_out_sent, c->hs_out_len - c->hs_out_sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->hs_out_sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return n < 0 ? -errno : -EIO;
	}
	KSOCK_PEEKED_SET(c->hs_out_len, 0);
	c->hs_out_sent = 0;
	return 1;
}

/* Append our HELLO to hs_out. `in` (passive) lends its dst fields, which a
 * kernel echoes unchecked. Passive without `in` (the answer to an unknown
 * version): dst_nid is our own NID, as the kernel writes it. */
int ksock_send_hello(struct ksock_conn *c, unsigned version, int ctype, const struct ksock_hello *in)
{
	struct ksock_net *net = c->net;
	struct ksock_hello h;
	ssize_t n;

	memset(&h, 0, sizeof(h));
	h.version = version;
	h.src_nid = net->nid;
	h.dst_nid = c->active ? c->target_nid : in ? in->src_nid : net->nid;
	h.src_pid = net->pid;
	h.dst_pid = in ? in->dst_pid : 0;
	h.src_incarnation = net->incarnation;
	h.dst_incarnation = in ? in->dst_incarnation : 0;
	h.ctype = ctype;
	h.nips = 0;
	n = ksock_hello_encode(&h, false, c->hs_out + c->hs_out_len,
			       sizeof(c->hs_out) - c->hs_out_len);
	if (n < 0)
		return (int)n;
	KSOCK_PEEKED_SET(c->hs_out_len, c->hs_out_len + (size_t)n);
	return 0;
}

/* Refuse a passive conn: HELLO with ctype NONE in the peer's version, then close. */
static void ksock_refuse(struct ksock_conn *c, const struct ksock_hello *h, const char *why,
			 struct ksock_done *done)
{
	char desc[160];

	ksock_conn_describe(c, desc, sizeof(desc));
	ksock_log_limited(c->net, KSOCK_RL_REFUSE, why, &c->peer_sa, ULNET_LOG_WARN,
			  "%s: refusing connection: %s", desc, why);
	if (ksock_send_hello(c, h->version, SOCKLND_CONN_NONE, h) == 0)
		(void)ksock_hs_flush(c);
	ksock_conn_close_locked(c, -EALREADY, false, done);
}

bool ksock_sa_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* The kernel's duplicate count: the peer's established conns of c's type
 * between the same two addresses (ports aside). */
static int ksock_count_dup(const struct ksock_peer *p, const struct ksock_conn *c)
{
	int n = 0;

	for (const struct ksock_conn *o = p->conns; o; o = o->next)
		n += o->ctype == c->ctype &&
		     ksock_sa_same_ip((const struct sockaddr *)&o->peer_sa,
				      (const struct sockaddr *)&c->peer_sa) &&
		     ksock_sa_same_ip((const struct sockaddr *)&o->my_sa,
				      (const struct sockaddr *)&c->my_sa);
	return n;
}

static bool ksock_same_ip(const struct ksock_conn *c)
{
	return ksock_sa_same_ip((const struct sockaddr *)&c->peer_sa, (const struct sockaddr *)&c->my_sa);
}

/* Read the rest of a HELLO; returns 1 with *h filled, 0 for "more later",
 * or -1 after closing the conn. */
static int ksock_hello_read(struct ksock_conn *c, struct ksock_hello *h)
{
	size_t need;
	ssize_t rc;
	int r;

	r = ksock_hs_fill(c, 8);
	if (r <= 0)
		goto io;
	rc = ksock_hello_decode_prefix(c->hs_in, 8, h);
	if (rc < 0) {
		uint32_t magic = (uint32_t)c->hs_in[0] | (uint32_t)c->hs_in[1] << 8 |
				 (uint32_t)c->hs_in[2] << 16 | (uint32_t)c->hs_in[3] << 24;

		if (!c->active && h->version != 0) {
			/* unknown version of a known magic: tell it mine */
			if (ksock_send_hello(c, ksock_proto_default_version(c->family),
					     SOCKLND_CONN_NONE, NULL) == 0)
				(void)ksock_hs_flush(c);
			ksock_hs_fail(c, -EPROTO, "unknown HELLO version %u (answered V%u, NONE)",
				      h->version, ksock_proto_default_version(c->family));
		} else if (h->version != 0) {
			ksock_hs_fail(c, -EPROTO, "unknown HELLO version %u", h->version);
		} else {
			ksock_hs_fail(c, -EPROTO, "bad HELLO magic %#010x", magic);
		}
		return -1;
	}
	switch (h->version) {
	case KSOCK_PROTO_V1:
		need = KSOCK_HELLO_V1_SIZE;
		break;
	case KSOCK_PROTO_V4:
		need = KSOCK_HELLO_V4_SIZE;
		break;
	default:
		need = KSOCK_HELLO_V2_SIZE;
		break;
	}
	for (;;) {
		r = ksock_hs_fill(c, need);
		if (r <= 0)
			goto io;
		rc = ksock_hello_size(c->hs_in, c->hs_have);
		if (rc == -EMSGSIZE) {
			need = c->hs_have + 4;   /* codec wants more to see the size */
			continue;
		}
		if (rc < 0) {
			ksock_hs_fail(c, -EPROTO, "malformed HELLO (more than %d IPs?)",
				      KSOCK_HELLO_MAX_IPS);
			return -1;
		}
		if ((size_t)rc > c->hs_have) {
			need = (size_t)rc;
			continue;
		}
		break;
	}
	rc = ksock_hello_decode(c->hs_in, c->hs_have, h);
	if (rc < 0) {
		ksock_hs_fail(c, -EPROTO, "malformed HELLO (%zd)", rc);
		return -1;
	}
	c->hs_have = 0;
	return 1;
io:
	if (r < 0) {
		ksock_hs_fail(c, r, "%s reading HELLO (%zu bytes in)",
			      r == -ECONNRESET ? "EOF" : strerror(-r), c->hs_have);
		return -1;
	}
	return 0;
}

static void ksock_hs_passive(struct ksock_conn *c, struct ksock_hello *h)
{
	struct ksock_net *net = c->net;
	struct ksock_done done = { 0 };
	const struct ksock_proto *proto = ksock_proto_find(h->version, h->swapped);
	struct ksock_admit_in in = { 0 };
	struct ksock_peer *peer;
	ulnet_nid_t nid = h->src_nid;
	ulnet_pid_t pid = h->src_pid;
	const char *why = NULL;
	enum ksock_admit a;
	char nb[ULNET_NIDSTR_SIZE];

	if (!proto) {
		ksock_hs_fail(c, -EPROTO, "no protocol table for HELLO V%u", h->version);
		return;
	}
	if (ksock_hello_check_passive(h, &why) < 0) {
		ksock_hs_fail(c, -EPROTO, "%s (claimed %s)", why, ksock_nidstr(&h->src_nid, nb));
		return;
	}
	if (c->peer_port > KSOCK_PRIV_PORT_HI && c->family == AF_INET) {
		/* a user-space peer: its identity is its address and port */
		c->userspace = true;
		pid = c->peer_port | ULNET_PID_USERFLAG;
		memset(&nid, 0, sizeof(nid));
		nid.type = net->nid.type;
		nid.num = net->nid.num;
		memcpy(nid.addr, &((struct sockaddr_in *)&c->peer_sa)->sin_addr, 4);
	}
	c->proto = proto;
	c->ctype = ksock_invert_ctype(h->ctype);
	c->id_nid = nid;
	c->id_pid = pid;

	ksock_lock(net);
	if (net->verify_peer_nid && !c->userspace && !ksock_nid_is_addr(&nid, &c->peer_sa)) {
		/* a privileged port may still lie about who it is: another
		 * node's NID would take over that node's connections */
		ksock_refuse(c, h, "claimed NID is not the connection's source address", &done);
		goto out;
	}
	peer = ksock_peer_find_or_create(net, &nid, pid);
	if (!peer) {
		ksock_conn_close_locked(c, -ENOMEM, false, &done);
		goto out;
	}
	c->peer = peer;
	if (c->userspace)
		peer->userspace = true;
	in.active = false;
	in.my_nid = &net->nid;
	in.peer_nid = &nid;
	in.connecting = peer->nconnecting > 0;
	in.peer_known = peer->known && peer->conns;
	in.peer_proto = peer->proto;
	in.conn_proto = proto;
	in.peer_incarnation = peer->incarnation;
	in.incarnation = h->src_incarnation;
	in.ndup = ksock_count_dup(peer, c);
	in.conns_per_peer = ksock_passive_cpp(lnet_ni_conns_per_peer_conf(net->ni));
	in.loopback = ksock_same_ip(c);
	a = ksock_admit(&in);
	switch (a) {
	case KSOCK_ADMIT_OK:
		break;
	case KSOCK_ADMIT_REBOOT:
	case KSOCK_ADMIT_WRONG_PROTO: {
		char desc[160];

		ksock_conn_describe(c, desc, sizeof(desc));
		lnet_ni_log(net->ni, ULNET_LOG_WARN,
			    "%s: %s (incarnation %#llx -> %#llx): closing all its connections",
			    desc, ksock_admit_str(a), (unsigned long long)peer->incarnation,
			    (unsigned long long)h->src_incarnation);
		while (peer->conns)
			ksock_conn_close_locked(peer->conns, -ESTALE, false, &done);
		peer->known = false;
		ksock_refuse(c, h, ksock_admit_str(a), &done);
		goto out;
	}
	default:
		ksock_refuse(c, h, ksock_admit_str(a), &done);
		goto out;
	}
	if (!peer->known || !peer->conns) {
		peer->known = true;
		peer->proto = proto;
		peer->incarnation = h->src_incarnation;
	}
	peer->pid = pid;
	/* as the kernel's association of an incoming conn with its route:
	 * the peer is reachable, so our next attempt need not wait */
	peer->retry_ms = net->tun.min_reconnect_ms;
	peer->retry_at = 0;
	if (ksock_send_hello(c, h->version, c->ctype, h) < 0) {
		ksock_conn_close_locked(c, -EPROTO, false, &done);
		goto out;
	}
	ksock_conn_up_locked(c, &done);
out:
	ksock_unlock(net);
	ksock_done_run(net, &done);
}

static void ksock_hs_active(struct ksock_conn *c, struct ksock_hello *h)
{
	struct ksock_net *net = c->net;
	struct ksock_peer *peer = c->peer;
	struct ksock_done done = { 0 };
	const struct ksock_proto *proto = ksock_proto_find(h->version, h->swapped);
	struct ksock_admit_in in = { 0 };
	const char *why = NULL;
	char nb[ULNET_NIDSTR_SIZE];
	enum ksock_admit a;
	int rc;

	rc = ksock_hello_check_reply(h, &c->target_nid, c->target_pid, c->hs_version, c->ctype, &why);
	if (rc < 0) {
		ksock_hs_fail(c, -EPROTO, "%s: %s pid %#x", why, ksock_nidstr(&h->src_nid, nb),
			      h->src_pid);
		return;
	}
	if (!proto) {
		ksock_hs_fail(c, -EPROTO, "no protocol table for HELLO V%u", h->version);
		return;
	}
	c->proto = proto;
	ksock_lock(net);
	in.active = true;
	in.my_nid = &net->nid;
	in.peer_nid = &peer->nid;
	in.peer_known = peer->known && peer->conns;
	in.peer_proto = peer->proto;
	in.conn_proto = proto;
	in.peer_incarnation = peer->incarnation;
	in.incarnation = h->src_incarnation;
	in.hello_rc = rc;
	in.ndup = ksock_count_dup(peer, c);
	in.conns_per_peer = lnet_ni_conns_per_peer(net->ni);
	in.loopback = ksock_same_ip(c);
	a = ksock_admit(&in);
	if (a != KSOCK_ADMIT_OK) {
		char desc[160];

		ksock_conn_describe(c, desc, sizeof(desc));
		lnet_ni_log(net->ni, a == KSOCK_ADMIT_LOST_RACE || a == KSOCK_ADMIT_RETRY_PROTO
					     ? ULNET_LOG_INFO : ULNET_LOG_WARN,
			    "%s: not creating conn: %s", desc, ksock_admit_str(a));
		if (a == KSOCK_ADMIT_REBOOT || a == KSOCK_ADMIT_WRONG_PROTO) {
			while (peer->conns)
				ksock_conn_close_locked(peer->conns, -ESTALE, false, &done);
			peer->known = false;
		}
		if (a == KSOCK_ADMIT_RETRY_PROTO)
			peer->want_version = h->version;
		ksock_conn_close_locked(c, a == KSOCK_ADMIT_LOST_RACE ? -EALREADY
					   : a == KSOCK_ADMIT_RETRY_PROTO ? -EPROTONOSUPPORT
					   : -ESTALE, false, &done);
		ksock_unlock(net);
		ksock_done_run(net, &done);
		return;
	}
	if (!peer->known || !peer->conns) {
		peer->known = true;
		peer->proto = proto;
		peer->incarnation = h->src_incarnation;
	}
	peer->want_version = h->version;
	peer->nconnecting--;
	peer->ealready = 0;
	peer->retry_ms = net->tun.min_reconnect_ms;
	peer->retry_at = 0;
	c->id_nid = peer->nid;
	c->id_pid = h->src_pid;
	ksock_conn_up_locked(c, &done);
	/* open the other types (CONTROL, then BULK_IN, BULK_OUT) */
	if (c->state == KSOCK_CS_UP)
		ksock_peer_connect_locked(net, peer, &done);
	ksock_unlock(net);
	ksock_done_run(net, &done);
}

/* HELLO accepted: move the conn to its peer and start the data path. */
static void ksock_conn_up_locked(struct ksock_conn *c, struct ksock_done *done)
{
	struct ksock_net *net = c->net;
	struct ksock_peer *peer = c->peer;
	char desc[160];
	int rc;

	ksock_conn_unlink_locked(c);
	c->state = KSOCK_CS_UP;
	c->next = peer->conns;
	peer->conns = c;
	peer->conn_hint[0] = peer->conn_hint[1] = NULL;
	c->on_list = true;
	c->hs_deadline = 0;
	c->rx_state = KSOCK_RX_KHDR;
	c->rx_have = 0;
	c->rx_need = c->proto->khdr_size;
	c->rx_last_progress = c->tx_last_progress = ksock_now(net);
	peer->last_alive = ksock_now(net);
	peer->last_error = 0;
	ksock_setup_socket(net, c->fd);
	c->tx_acked = ksock_conn_tcp_acked(c);
	ksock_conn_describe(c, desc, sizeof(desc));
	lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "%s: up (incarnation %#llx, LNet header %zu bytes)",
		    desc, (unsigned long long)peer->incarnation, c->proto->codec->size);
	/* the passive reply HELLO goes first; data follows in the same stream */
	rc = ksock_hs_flush(c);
	if (rc < 0) {
		ksock_conn_close_locked(c, rc, false, done);
		return;
	}
	ksock_conn_take_txs_locked(c, done);
	/* bytes may already sit behind the HELLO: no new edge will come */
	c->rx_ready = true;
	ksock_kick_conn_locked(c);
}

void ksock_hs_readable(struct ksock_conn *c)
{
	struct ksock_hello *h = &c->hs_hello;
	int rc;

	rc = ksock_hello_read(c, h);
	if (rc <= 0)
		return;
	if (c->active)
		ksock_hs_active(c, h);
	else
		ksock_hs_passive(c, h);
}

/* EPOLLOUT (or an error) on an UP conn with something queued: drain it.
 * Out of line: it keeps its completion list and log buffer off the stack
 * frame of every EPOLLIN. */
static __attribute__((noinline)) void ksock_conn_io_drain(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;
	struct ksock_done done;
	int rc;

	ksock_done_init(&done);
	ksock_lock(net);
	rc = c->state == KSOCK_CS_UP ? ksock_conn_flush_locked(c, &done) : 0;
	if (rc < 0)
		ksock_conn_write_failed_locked(c, rc, &done);
	ksock_unlock(net);
	ksock_done_run(net, &done);
}

void ksock_conn_io(struct ul_io *io, uint32_t revents)
{
	struct ksock_conn *c = (struct ksock_conn *)((char *)io - offsetof(struct ksock_conn, io));
	struct ksock_net *net = c->net;

	ksock_loop_enter(net);
	switch (c->state) {
	case KSOCK_CS_CONNECTING:
	case KSOCK_CS_HS_SEND:
		ksock_connect_io(c, revents);
		break;
	case KSOCK_CS_ACC_REQ:
		ksock_acc_readable(c);
		break;
	case KSOCK_CS_HELLO:
		if (c->hs_out_len) {
			int rc = ksock_hs_flush(c);

			if (rc < 0) {
				ksock_hs_fail(c, rc, "error sending HELLO: %s", strerror(-rc));
				break;
			}
		}
		if (revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			ksock_hs_readable(c);
		break;
	case KSOCK_CS_UP:
		/* EPOLLOUT comes with every EPOLLIN (the socket is writable):
		 * with nothing queued there is nothing to drain. Unlocked peek:
		 * a tx that waits for EPOLLOUT was queued (under the lock)
		 * before the write that filled the socket, so before this edge;
		 * a sender queuing now writes or kicks it itself. */
		if ((revents & (EPOLLERR | EPOLLHUP)) ||
		    ((revents & EPOLLOUT) && (__atomic_load_n(&c->txq_head, __ATOMIC_RELAXED) ||
					     __atomic_load_n(&c->hs_out_len, __ATOMIC_RELAXED))))
			ksock_conn_io_drain(c);
		if (c->state == KSOCK_CS_UP &&
		    (revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
			c->rx_ready = true;
			ksock_conn_rx(c);
		}
		ksock_conn_note_cold(c);
		break;
	default:
		break;
	}
}
