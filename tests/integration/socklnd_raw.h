/* SPDX-License-Identifier: MIT */
/*
 * socklnd_raw.h - the socklnd tests' raw peers: ulnet nodes started with
 * chosen tunables, and peers that speak the acceptor request, HELLO and
 * ksock framing byte by byte over plain sockets (dialling from privileged
 * ports as a kernel does, or listening for ulnet to dial). Included by
 * one test file each (static helpers, not all used by every file).
 *
 * The includer defines PORTAL, MB, U_IP, U_NID, RAW_WAIT_MS and
 * RAW_PORT_OFFSET (its acceptor port offset from st_port()) first.
 */
#ifndef ULNET_TEST_SOCKLND_RAW_H
#define ULNET_TEST_SOCKLND_RAW_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "core/lnet_hdr.h"
#include "lnd/socklnd/sock_int.h"
#include "lnd/socklnd/sock_wire.h"
#include "socklnd_util.h"

#pragma GCC diagnostic ignored "-Wunused-function"

static uint16_t g_port;
static int g_next_src_port = 1000;

/* --- ulnet nodes --------------------------------------------------------- */

struct node_opts {
	const char *accept;                /* NULL: secure */
	struct ulnet_sock_tunables sock;
	int conns_per_peer;
	uint64_t *skew;
	int verify_peer_nid;
};

/* Nodes still running when a test fails are stopped by its teardown. */
static struct st_node *g_nodes[8];

static void node_stop(struct st_node *n)
{
	for (int i = 0; i < 8; i++)
		if (g_nodes[i] == n)
			g_nodes[i] = NULL;
	st_node_stop(n);
}

static int test_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 8; i++)
		if (g_nodes[i])
			node_stop(g_nodes[i]);
	return 0;
}

static int node_start(struct st_node *n, const char *nid, const struct node_opts *no)
{
	struct ulnet_opts o = { 0 };
	struct ulnet_ni_conf c = { 0 };
	struct ulnet_globals g;
	int rc;

	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	n->log = calloc(1, ST_LOG_MAX);
	for (int i = 0; i < 8; i++) {
		if (!g_nodes[i]) {
			g_nodes[i] = n;
			break;
		}
	}
	o.log = st_log_cb;
	o.log_arg = n;
	o.log_level = ULNET_LOG_DEBUG;
	if (no && no->skew) {
		o.clock = st_skewed_clock;
		o.clock_arg = no->skew;
	}
	rc = ulnet_create(&o, &n->ln);
	if (rc)
		return rc;
	rc = ulnet_lnd_register(n->ln, &ksocklnd);
	if (rc && rc != -EEXIST)
		return rc;
	/* the raw peers answer no pings; failures must not be resent */
	ulnet_globals_get(n->ln, &g);
	g.discovery = 0;
	g.retry_count = 0;
	rc = ulnet_globals_set(n->ln, &g);
	if (rc)
		return rc;
	rc = ulnet_nid_parse(nid, &c.nid, NULL);
	if (rc)
		return rc;
	n->nid = c.nid;
	c.accept_port = g_port;
	c.tun.tos = -1;
	if (no) {
		c.sock = no->sock;
		c.tun.conns_per_peer = no->conns_per_peer;
		c.verify_peer_nid = no->verify_peer_nid;
	}
	snprintf(c.accept, sizeof(c.accept), "%s", no && no->accept ? no->accept : "secure");
	return ulnet_ni_add(n->ln, &c);
}

static ulnet_process_id_t pid_of(const char *nid)
{
	ulnet_process_id_t id;

	assert_int_equal(ulnet_nid_parse(nid, &id.nid, NULL), 0);
	id.pid = ULNET_PID_LUSTRE;
	return id;
}

static ulnet_nid_t nid_of(const char *s)
{
	ulnet_nid_t nid;

	assert_int_equal(ulnet_nid_parse(s, &nid, NULL), 0);
	return nid;
}

/* Lines of the node's log containing both needles. */
static int log_count(struct st_node *n, const char *a, const char *b)
{
	int count = 0;

	pthread_mutex_lock(&n->mu);
	for (const char *p = n->log; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		char line[600];

		snprintf(line, sizeof(line), "%.*s", (int)(l < 599 ? l : 599), p);
		count += strstr(line, a) && (!b || strstr(line, b));
		p = eol ? eol + 1 : NULL;
	}
	pthread_mutex_unlock(&n->mu);
	return count;
}

static void dump_log(struct st_node *n, const char *name)
{
	if (!n->log)
		return;
	fprintf(stderr, "---- %s log tail ----\n%s\n", name,
		n->log + (n->loglen > 6000 ? n->loglen - 6000 : 0));
}

/* --- raw peers ----------------------------------------------------------- */

struct raw {
	int fd;
	unsigned version;
	bool be;                  /* we write big-endian */
	int ctype;                /* our view */
	ulnet_nid_t me, peer;
	uint64_t incarnation;
};

static void raw_sa(const char *ip, uint16_t port, struct sockaddr_storage *sa, socklen_t *len)
{
	memset(sa, 0, sizeof(*sa));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)sa;

		s->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, ip, &s->sin6_addr), 1);
		s->sin6_port = htons(port);
		*len = sizeof(*s);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)sa;

		s->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, ip, &s->sin_addr), 1);
		s->sin_port = htons(port);
		*len = sizeof(*s);
	}
}

static void raw_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = RAW_WAIT_MS / 1000 };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
}

/* TCP connection from src_ip (a privileged port) to dst_ip:g_port. */
static int raw_dial(const char *src_ip, const char *dst_ip)
{
	struct sockaddr_storage s, d;
	socklen_t sl, dl;

	raw_sa(dst_ip, g_port, &d, &dl);
	for (int tries = 0; tries < 64; tries++) {
		int one = 1, fd = socket(d.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		uint16_t port = (uint16_t)g_next_src_port--;

		if (g_next_src_port < 600)
			g_next_src_port = 1000;
		assert_true(fd >= 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		raw_sa(src_ip, port, &s, &sl);
		if (bind(fd, (struct sockaddr *)&s, sl) < 0) {
			close(fd);
			continue;
		}
		raw_timeouts(fd);
		if (connect(fd, (struct sockaddr *)&d, dl) == 0)
			return fd;
		close(fd);
	}
	fail_msg("can't connect %s -> %s", src_ip, dst_ip);
	return -1;
}

static void send_all(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static bool recv_all(int fd, void *buf, size_t len)
{
	return len == 0 || recv(fd, buf, len, MSG_WAITALL) == (ssize_t)len;
}

/* Read one HELLO (any version) from fd. */
static bool raw_read_hello(int fd, struct ksock_hello *h, uint8_t *raw, size_t *rawlen)
{
	uint8_t buf[256];
	ssize_t n;
	size_t have = 8;

	if (!recv_all(fd, buf, 8) || ksock_hello_decode_prefix(buf, 8, h) < 0)
		return false;
	for (int i = 0; i < 4; i++) {
		n = ksock_hello_size(buf, have);
		if (n == -EMSGSIZE) {
			size_t want = h->version == KSOCK_PROTO_V1 ? KSOCK_HELLO_V1_SIZE
				      : h->version == KSOCK_PROTO_V4 ? KSOCK_HELLO_V4_SIZE
								     : KSOCK_HELLO_V2_SIZE;

			if (want <= have)
				want = have + 4;
			if (!recv_all(fd, buf + have, want - have))
				return false;
			have = want;
			continue;
		}
		if (n < 0 || (size_t)n > sizeof(buf))
			return false;
		if ((size_t)n > have) {
			if (!recv_all(fd, buf + have, (size_t)n - have))
				return false;
			have = (size_t)n;
		}
		break;
	}
	if (raw) {
		memcpy(raw, buf, have);
		*rawlen = have;
	}
	return ksock_hello_decode(buf, have, h) > 0;
}

static size_t raw_hello_bytes(const struct raw *r, int ctype, uint8_t *buf, size_t len)
{
	struct ksock_hello h = { .version = r->version, .src_nid = r->me, .dst_nid = r->peer,
				 .src_pid = ULNET_PID_LUSTRE, .src_incarnation = r->incarnation,
				 .ctype = ctype };
	ssize_t n = ksock_hello_encode(&h, r->be && r->version != KSOCK_PROTO_V1, buf, len);

	assert_true(n > 0);
	return (size_t)n;
}

/* Dial ulnet, send the acceptor request and our HELLO; returns the ctype
 * ulnet answered (its view), or -2 if it closed without answering. */
static int raw_connect(struct raw *r, const char *src_ip, const char *dst_ip, unsigned version,
		       bool be, int ctype, const char *me, const char *peer, uint64_t inc,
		       struct ksock_hello *reply)
{
	struct lnet_acceptor_req req = { .version = 1 };
	struct ksock_hello h;
	uint8_t buf[256];
	size_t n;

	memset(r, 0, sizeof(*r));
	r->version = version;
	r->be = be;
	r->ctype = ctype;
	r->me = nid_of(me);
	r->peer = nid_of(peer);
	r->incarnation = inc;
	r->fd = raw_dial(src_ip, dst_ip);
	req.version = ulnet_nid_is_large(&r->peer) ? 2 : 1;
	req.target = r->peer;
	n = (size_t)lnet_acceptor_req_encode(&req, be, buf, sizeof(buf));
	n += raw_hello_bytes(r, ctype, buf + n, sizeof(buf) - n);
	send_all(r->fd, buf, n);
	if (!raw_read_hello(r->fd, reply ? reply : &h, NULL, NULL))
		return -2;
	return (reply ? reply : &h)->ctype;
}

static void raw_close(struct raw *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static size_t raw_lhdr_size(const struct raw *r)
{
	return r->version == KSOCK_PROTO_V4 ? LNET_HDR_NID16_SIZE : LNET_HDR_NID4_SIZE;
}

/* csum: 0 none, 1 correct (V2 rule), 2 corrupted */
static void raw_send_lnet(struct raw *r, const struct lnet_hdr *h, const void *payload,
			  uint64_t zc0, uint64_t zc1, int csum)
{
	uint8_t *buf = malloc(KSOCK_MSG_HDR_SIZE + LNET_HDR_MAX_SIZE + h->payload_length);
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_LNET, .zc_cookies = { zc0, zc1 } };
	size_t n = 0;
	ssize_t m;

	assert_non_null(buf);
	if (r->version != KSOCK_PROTO_V1) {
		assert_int_equal(ksock_msg_hdr_encode(&k, r->be, buf, KSOCK_MSG_HDR_SIZE),
				 KSOCK_MSG_HDR_SIZE);
		n = KSOCK_MSG_HDR_SIZE;
	}
	m = r->version == KSOCK_PROTO_V4 ? lnet_hdr_encode_nid16(h, buf + n, LNET_HDR_NID16_SIZE)
					 : lnet_hdr_encode_nid4(h, buf + n, LNET_HDR_NID4_SIZE);
	assert_int_equal(m, (ssize_t)raw_lhdr_size(r));
	n += (size_t)m;
	if (h->payload_length)
		memcpy(buf + n, payload, h->payload_length);
	n += h->payload_length;
	if (csum) {
		uint32_t crc = ksock_csum(KSOCK_CSUM_SEED, buf, n);

		if (csum == 2)
			crc ^= 0x10;
		k.csum = crc;
		assert_int_equal(ksock_msg_hdr_encode(&k, r->be, buf, KSOCK_MSG_HDR_SIZE),
				 KSOCK_MSG_HDR_SIZE);
	}
	send_all(r->fd, buf, n);
	free(buf);
}

static void raw_send_noop(struct raw *r, uint64_t c0, uint64_t c1)
{
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_NOOP, .zc_cookies = { c0, c1 } };
	uint8_t buf[KSOCK_MSG_HDR_SIZE];

	assert_int_equal(ksock_msg_hdr_encode(&k, r->be, buf, sizeof(buf)), KSOCK_MSG_HDR_SIZE);
	send_all(r->fd, buf, sizeof(buf));
}

struct rmsg {
	struct ksock_msg_hdr k;
	struct lnet_hdr h;
	uint8_t raw[KSOCK_MSG_HDR_SIZE + LNET_HDR_MAX_SIZE];   /* headers as received */
	size_t rawlen;
	uint8_t *payload;          /* malloc'd; NULL for a NOOP */
};

/* One message from ulnet on r (which answers in LE, whatever our order). */
static bool raw_recv(struct raw *r, struct rmsg *m)
{
	size_t k = r->version == KSOCK_PROTO_V1 ? 0 : KSOCK_MSG_HDR_SIZE;
	size_t l = raw_lhdr_size(r);

	memset(m, 0, sizeof(*m));
	if (k) {
		if (!recv_all(r->fd, m->raw, k) ||
		    ksock_msg_hdr_decode(m->raw, k, false, &m->k) != (ssize_t)k)
			return false;
	} else {
		m->k.type = KSOCK_MSG_LNET;
	}
	m->rawlen = k;
	if (m->k.type == KSOCK_MSG_NOOP)
		return true;
	if (m->k.type != KSOCK_MSG_LNET || !recv_all(r->fd, m->raw + k, l))
		return false;
	m->rawlen += l;
	if ((r->version == KSOCK_PROTO_V4 ? lnet_hdr_decode_nid16(m->raw + k, l, &m->h)
					  : lnet_hdr_decode_nid4(m->raw + k, l, &m->h)) != (ssize_t)l)
		return false;
	m->payload = malloc(m->h.payload_length + 1);
	return recv_all(r->fd, m->payload, m->h.payload_length);
}

static void rmsg_free(struct rmsg *m)
{
	free(m->payload);
	m->payload = NULL;
}

/* Index of the first of n raw conns with something to read, -1 on timeout. */
static int raw_poll(struct raw *rs, int n, int ms)
{
	struct pollfd p[8];

	for (int i = 0; i < n; i++) {
		p[i].fd = rs[i].fd;
		p[i].events = POLLIN;
		p[i].revents = 0;
	}
	if (poll(p, (nfds_t)n, ms) <= 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (p[i].revents)
			return i;
	return -1;
}

/* The node closed fd (EOF or reset), within a bounded time. */
static bool raw_closed(int fd)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;
	char sink[4096];

	while (st_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) > 0) {
			ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno != EAGAIN))
				return true;
		}
	}
	return false;
}

static struct lnet_hdr mk_hdr(uint32_t type, const ulnet_nid_t *src, const ulnet_nid_t *dst,
			      uint32_t plen)
{
	struct lnet_hdr h;

	memset(&h, 0, sizeof(h));
	h.dest_nid = *dst;
	h.src_nid = *src;
	h.dest_pid = ULNET_PID_LUSTRE;
	h.src_pid = ULNET_PID_LUSTRE;
	h.type = type;
	h.payload_length = plen;
	return h;
}

static struct lnet_hdr mk_put(const struct raw *r, uint32_t plen, bool ack)
{
	struct lnet_hdr h = mk_hdr(ULNET_MSG_PUT, &r->me, &r->peer, plen);

	h.msg.put.ack_wmd = ack ? (lnet_wire_handle_t){ 0x1111, 0x2222 } : LNET_WIRE_HANDLE_NONE;
	h.msg.put.match_bits = MB;
	h.msg.put.ptl_index = PORTAL;
	return h;
}

/* A raw listener on ip:g_port (ulnet dials it). */
static int raw_listen(const char *ip)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	int one = 1, fd;

	raw_sa(ip, g_port, &sa, &sl);
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sl), 0);
	assert_int_equal(listen(fd, 16), 0);
	return fd;
}

/* Accept one dialled conn and read its acceptor request + HELLO. */
static bool raw_accept(int lfd, struct raw *r, struct lnet_acceptor_req *req,
		       struct ksock_hello *h)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	uint8_t buf[LNET_ACCEPTOR_REQ_V2_SIZE];

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (poll(&p, 1, ST_WAIT_MS) != 1)
		return false;
	r->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (r->fd < 0)
		return false;
	raw_timeouts(r->fd);
	if (!recv_all(r->fd, buf, 8))
		return false;
	req->version = buf[4];
	if (!recv_all(r->fd, buf + 8, (req->version == 2 ? LNET_ACCEPTOR_REQ_V2_SIZE
							 : LNET_ACCEPTOR_REQ_V1_SIZE) - 8))
		return false;
	if (lnet_acceptor_req_decode(buf, sizeof(buf), req) < 0)
		return false;
	return raw_read_hello(r->fd, h, NULL, NULL);
}

/* Answer a dialled conn's HELLO as the passive side (version `version`). */
static void raw_answer(struct raw *r, const struct ksock_hello *h, unsigned version, int ctype,
		       const char *me, uint64_t inc)
{
	uint8_t buf[128];

	r->version = version;
	r->me = nid_of(me);
	r->peer = h->src_nid;
	r->incarnation = inc;
	r->ctype = ctype;
	send_all(r->fd, buf, raw_hello_bytes(r, ctype, buf, sizeof(buf)));
}

static void setup_common(void)
{
	g_port = (uint16_t)(st_port() + RAW_PORT_OFFSET);
}

static bool need_priv(void)
{
	if (!st_is_privileged()) {
		printf("SKIP: the raw peer needs privileged source ports (root or CAP_NET_BIND_SERVICE)\n");
		return false;
	}
	return true;
}

/* Serve ulnet's dialled conns on lfd (answering each in `version`) until a
 * PUT arrives; returns the number of conns taken; every HELLO must be in
 * `want_version`. */
static int serve_until_put(int lfd, const char *me, unsigned want_version, unsigned version,
			   struct raw *rs, int max, int nconns_expected, struct rmsg *put)
{
	int n = 0;
	bool got = false;
	uint64_t end = st_now_ms() + ST_WAIT_MS;

	while (st_now_ms() < end && !(got && n >= nconns_expected)) {
		struct pollfd p[9];
		int np = 0;

		p[np].fd = lfd;
		p[np++].events = POLLIN;
		for (int i = 0; i < n; i++) {
			p[np].fd = rs[i].fd;
			p[np++].events = POLLIN;
		}
		if (poll(p, (nfds_t)np, 100) <= 0)
			continue;
		if (p[0].revents && n < max) {
			struct lnet_acceptor_req req;
			struct ksock_hello h;

			assert_true(raw_accept(lfd, &rs[n], &req, &h));
			assert_int_equal(h.version, want_version);
			raw_answer(&rs[n], &h, version, ksock_invert_ctype(h.ctype), me, 0xabc);
			n++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct rmsg m;

			if (!p[i + 1].revents)
				continue;
			assert_true(raw_recv(&rs[i], &m));
			if (!got && m.k.type == KSOCK_MSG_LNET && m.h.type == ULNET_MSG_PUT) {
				*put = m;
				got = true;
			} else {
				rmsg_free(&m);
			}
		}
	}
	if (!got || n < nconns_expected)
		fail_msg("got %s after %d conns", got ? "the PUT" : "no PUT", n);
	return n;
}

/* A small PUT from the node to `nid` (no ACK); the MD stays with the caller. */
static void node_put(struct st_node *n, const char *nid, uint8_t *buf, size_t len, struct st_md *md)
{
	st_md_init(md);
	assert_int_equal(st_bind(n, buf, len, 1, md), 0);
	assert_int_equal(ulnet_put(n->ln, NULL, md->h, ULNET_NOACK_REQ, pid_of(nid), PORTAL, MB, 0, 0),
			 0);
}

static void node_put_done(struct st_node *n, struct st_md *md)
{
	/* its SEND event (threshold 1: the last one) may still be on its
	 * way after the peer got the bytes: the record must outlive it */
	(void)st_md_wait(md, ULNET_EVENT_SEND, 1);
	st_md_release(n, md);
	st_md_fini(md);
}

/* the instance clock of a node started with node_opts.skew */
static void advance(uint64_t *skew, uint64_t ms)
{
	__atomic_add_fetch(skew, ms * 1000000ULL, __ATOMIC_RELEASE);
}

/* One failed attempt per step: a PUT is queued during the back-off, no
 * attempt is made before the delay, one is made after it, and the next
 * delay doubles up to the cap. Each PUT fails with ECONNREFUSED. */
static void backoff_run(struct st_node *n, uint64_t *skew, const char *dead, const uint64_t *expect,
			int steps, uint64_t sock_timeout_ms)
{
	uint8_t src[64];
	char want[64];

	for (int i = 0; i < steps; i++) {
		static struct st_md md;

		st_log_clear(n);
		node_put(n, dead, src, sizeof(src), &md);
		if (i > 0) {
			uint64_t prev = expect[i - 1];

			/* not before the delay is over */
			if (prev >= 2000) {
				advance(skew, prev - 1500);
				usleep(300 * 1000);
				assert_int_equal(log_count(n, "connect failed", NULL), 0);
				if (prev - 1500 > sock_timeout_ms) {
					/* the message could not wait that long */
					assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
					assert_int_equal(md.last_status, -ETIMEDOUT);
					node_put_done(n, &md);
					node_put(n, dead, src, sizeof(src), &md);
				}
				advance(skew, 1600);
			} else {
				advance(skew, prev + 100);
			}
		}
		snprintf(want, sizeof(want), "(retry in %llu ms)", (unsigned long long)expect[i]);
		if (!st_wait_log(n, "connect failed", want)) {
			dump_log(n, "node");
			fail_msg("step %d: no \"%s\"", i, want);
		}
		assert_int_equal(log_count(n, "connect failed", NULL), 1);
		assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
		assert_int_equal(md.last_status, -ECONNREFUSED);
		node_put_done(n, &md);
	}
}

#endif
