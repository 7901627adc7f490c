/* SPDX-License-Identifier: MIT */
/*
 * fuzz_sock_conn.c - the socklnd connection state machines: the acceptor
 * request, the passive and the active HELLO handshakes, and the receive
 * path of an established connection (ksock_conn_rx: ksock headers, NOOPs
 * and every ZC-ACK form, LNET messages with payload, checksums), driven
 * through socketpairs.
 *
 * The node (manual progress, fake clock) has the NI 127.0.0.1@tcp with
 * accept=none; a passive connection is a socketpair end handed to
 * ksock_acceptor_adopt() (as the listener does with an accepted socket,
 * its addresses set to 127.0.0.2:port -> 127.0.0.1:988), an active one is
 * the socketpair end the NI's dial hook returns when the node PUTs/GETs to
 * 127.0.0.2@tcp. The input is a sequence of operations, the first byte of
 * each choosing it and the connection (the high nibble):
 *   adopt a passive connection; write an acceptor request (v1/v2, either
 *   byte order, right or wrong target); write a HELLO (V1-V4, either byte
 *   order, fields from the input) - the version then frames what follows;
 *   write a NOOP with ZC cookies (small values, so they name the node's
 *   own ZC requests), or an LNET message (ksock header, LNet header built
 *   from the input with the version's codec, payload); write raw bytes;
 *   PUT (small, or large enough to ask for a ZC-ACK) or GET from the node;
 *   close our end; move the clock and progress.
 * Whatever the node writes is read and dropped. Each write is split at an
 * input-chosen boundary with a progress in between (partial headers).
 * Properties: no crash, no UB, no leak (ASan), and after ulnet_destroy()
 * every socket the node was given is closed and the process has as many
 * fds open as before the run (no fd leak).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "core/lnet_hdr.h"
#include "lnd/socklnd/sock_int.h"
#include "lnd/socklnd/sock_wire.h"
#include "ulnet/ulnet.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAIRS 8
#define BIG 20000           /* above zc_min_payload (16384): asks a ZC-ACK */

struct pair {
	int node_fd, fd;        /* the node's end, ours (-1: closed) */
	unsigned version;       /* of the HELLO we wrote: frames what follows */
	bool be;
};

static struct {
	ulnet_t *ln;
	struct ksock_net *net;
	ulnet_nid_t self, peer;
	struct pair pairs[MAX_PAIRS];
	int npairs;
	uint64_t now;
} fz;

static uint8_t big[BIG];

static uint64_t fz_clock(void *arg)
{
	(void)arg;
	return fz.now;
}

static void fz_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	if (getenv("FUZZ_LOG"))         /* to see what an input does */
		fprintf(stderr, "[%d] %s\n", lvl, msg);
}

static struct pair *pair_new(void)
{
	int sv[2];
	struct pair *p;

	if (fz.npairs == MAX_PAIRS ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return NULL;
	p = &fz.pairs[fz.npairs++];
	p->node_fd = sv[0];
	p->fd = sv[1];
	p->version = KSOCK_PROTO_V3;
	p->be = false;
	return p;
}

static int fz_dial(struct ksock_net *net, const struct sockaddr_storage *to, socklen_t tolen)
{
	struct pair *p = pair_new();

	(void)net;
	(void)to;
	(void)tolen;
	return p ? p->node_fd : -ECONNREFUSED;
}

/* Read and drop what the node wrote to us. */
static void drain(void)
{
	uint8_t buf[4096];

	for (int i = 0; i < fz.npairs; i++)
		while (fz.pairs[i].fd >= 0 && read(fz.pairs[i].fd, buf, sizeof(buf)) > 0)
			;
}

static void progress(void)
{
	ulnet_progress(fz.ln, 0);
	drain();
}

/* Write `len` bytes in two pieces split where the input says. */
static void put(struct in *in, struct pair *p, const uint8_t *buf, size_t len)
{
	size_t cut = len ? u8(in) % (len + 1) : 0;

	if (p->fd < 0)
		return;
	if (cut && send(p->fd, buf, cut, MSG_NOSIGNAL) < 0)
		return;
	if (cut && cut < len)
		progress();
	if (cut < len && send(p->fd, buf + cut, len - cut, MSG_NOSIGNAL) < 0)
		return;
	progress();
}

static void op_adopt(struct in *in)
{
	struct pair *p = pair_new();
	uint8_t a = u8(in);
	struct ksock_conn *c;

	if (!p)
		return;
	if (ksock_acceptor_adopt(fz.net, p->node_fd) < 0) {
		p->node_fd = -1;        /* closed by the adopt */
		return;
	}
	/* as accepted from 127.0.0.2, from a privileged port or not */
	c = fz.net->hs_conns;
	if (c && c->fd == p->node_fd) {
		struct sockaddr_in *ps = (struct sockaddr_in *)&c->peer_sa;
		struct sockaddr_in *ms = (struct sockaddr_in *)&c->my_sa;

		memset(&c->peer_sa, 0, sizeof(c->peer_sa));
		memset(&c->my_sa, 0, sizeof(c->my_sa));
		ps->sin_family = ms->sin_family = AF_INET;
		ps->sin_addr.s_addr = htonl((a & 1) ? 0x7f000001 : 0x7f000002);
		ms->sin_addr.s_addr = htonl(0x7f000001);
		c->peer_port = (a & 2) ? 40000 + (a >> 2) : 1023 - (a >> 2);
		ps->sin_port = htons(c->peer_port);
		ms->sin_port = htons(988);
	}
	progress();
}

static void op_acc_req(struct in *in, struct pair *p)
{
	uint8_t a = u8(in);
	struct lnet_acceptor_req r = { .version = (a & 1) ? 2 : 1, .target = fz.self };
	uint8_t buf[LNET_ACCEPTOR_REQ_V2_SIZE];
	ssize_t n;

	if (a & 4)
		r.target.addr[3] ^= u8(in);
	if (a & 8)
		r.target.num = u8(in);
	if (r.version == 2 && (a & 0x10)) {
		memcpy(r.target.addr, fz.self.addr, 4);
		r.target.size = 12;      /* a large NID with an IPv4 head */
	}
	n = lnet_acceptor_req_encode(&r, (a & 2) != 0, buf, sizeof(buf));
	if (n > 0)
		put(in, p, buf, (size_t)n);
}

static void op_hello(struct in *in, struct pair *p)
{
	uint8_t a = u8(in), b = u8(in);
	struct ksock_hello h;
	uint8_t buf[KSOCK_HELLO_V1_SIZE + 4 * KSOCK_HELLO_MAX_IPS + 32];
	static const int32_t ctypes[] = { SOCKLND_CONN_NONE, SOCKLND_CONN_ANY, SOCKLND_CONN_CONTROL,
					  SOCKLND_CONN_BULK_IN, SOCKLND_CONN_BULK_OUT, 4, 0x7fffffff,
					  SOCKLND_CONN_CONTROL };
	ssize_t n;

	memset(&h, 0, sizeof(h));
	h.version = (a & 3) + 1;
	h.src_nid = (b & 1) ? fz.self : fz.peer;
	if (b & 2)
		h.src_nid.addr[3] = u8(in);
	if (h.version == KSOCK_PROTO_V4 && (b & 4)) {
		h.src_nid.size = 12;         /* an IPv6 peer */
		h.src_nid.addr[15] = 1;
	}
	h.dst_nid = (b & 8) ? fz.peer : fz.self;
	h.src_pid = (b & 0x10) ? u32(in) : ULNET_PID_LUSTRE;
	h.dst_pid = (b & 0x20) ? u32(in) : fz.net->pid;
	h.src_incarnation = 0x1000 + (a >> 5);       /* a few values: reboots */
	h.dst_incarnation = (b & 0x40) ? u64(in) : fz.net->incarnation;
	h.ctype = ctypes[(a >> 2) & 7];
	if (h.version != KSOCK_PROTO_V4) {
		h.nips = (b & 0x80) ? u8(in) % 3 : 0;
		for (uint32_t i = 0; i < h.nips; i++)
			h.ips[i] = 0x7f000002 + i;
	}
	p->version = h.version;
	p->be = (a & 0x80) != 0 && h.version != KSOCK_PROTO_V1;
	n = ksock_hello_encode(&h, p->be, buf, sizeof(buf));
	if (n <= 0)
		return;
	if (in->n && (u8(in) & 0x80)) {
		uint8_t at = u8(in);

		buf[at % n] ^= u8(in);       /* one damaged byte */
	}
	put(in, p, buf, (size_t)n);
}

static size_t khdr(struct in *in, struct pair *p, uint32_t type, uint8_t *buf)
{
	struct ksock_msg_hdr m = { .type = type };
	uint8_t a = u8(in);

	if (p->version == KSOCK_PROTO_V1)
		return 0;
	m.csum = (a & 1) ? u32(in) : 0;
	m.zc_cookies[0] = (a & 2) ? u64(in) : (a & 4) ? (uint64_t)u8(in) : 0;
	m.zc_cookies[1] = (a & 8) ? u64(in) : (a & 0x10) ? (uint64_t)u8(in) : 0;
	if (a & 0x20)
		m.type = u32(in);
	return ksock_msg_hdr_encode(&m, p->be, buf, KSOCK_MSG_HDR_SIZE) == KSOCK_MSG_HDR_SIZE
	       ? KSOCK_MSG_HDR_SIZE : 0;
}

static void op_noop(struct in *in, struct pair *p)
{
	uint8_t buf[KSOCK_MSG_HDR_SIZE];
	size_t n = khdr(in, p, KSOCK_MSG_NOOP, buf);

	if (n)
		put(in, p, buf, n);
}

static void op_lnet(struct in *in, struct pair *p)
{
	uint8_t buf[KSOCK_MSG_HDR_SIZE + LNET_HDR_MAX_SIZE + 256];
	const struct lnet_hdr_codec *codec = p->version == KSOCK_PROTO_V4 ? &lnet_hdr_codec_nid16
									 : &lnet_hdr_codec_nid4;
	size_t n = khdr(in, p, KSOCK_MSG_LNET, buf);
	uint8_t a = u8(in), b = u8(in);
	struct lnet_hdr h;
	ssize_t hn;
	uint32_t plen, i;

	if (p->version != KSOCK_PROTO_V1 && !n)
		return;
	memset(&h, 0, sizeof(h));
	h.type = a & 3;
	h.dest_nid = (b & 1) ? fz.peer : fz.self;
	h.src_nid = (b & 2) ? fz.self : fz.peer;
	h.dest_pid = ULNET_PID_LUSTRE;
	h.src_pid = (b & 4) ? u32(in) : ULNET_PID_LUSTRE;
	plen = (h.type == ULNET_MSG_PUT || h.type == ULNET_MSG_REPLY) ? u8(in) : 0;
	h.payload_length = (b & 8) ? u32(in) : plen;
	switch (h.type) {
	case ULNET_MSG_PUT:
		h.msg.put.ack_wmd = (b & 0x10) ? LNET_WIRE_HANDLE_NONE
					       : (lnet_wire_handle_t){ u8(in), u8(in) };
		h.msg.put.match_bits = u8(in);
		h.msg.put.ptl_index = (a >> 2) & 7;
		h.msg.put.offset = (b & 0x20) ? u8(in) : 0;
		break;
	case ULNET_MSG_GET:
		h.msg.get.return_wmd = (lnet_wire_handle_t){ u8(in), u8(in) };
		h.msg.get.match_bits = (b & 0x20) ? ULNET_PROTO_PING_MATCHBITS : u8(in);
		h.msg.get.ptl_index = (a >> 2) & 7;
		h.msg.get.sink_length = u8(in) * 16;
		break;
	default:
		h.msg.ack.dst_wmd = (lnet_wire_handle_t){ u64(in), u64(in) };
		break;
	}
	hn = codec->encode(&h, buf + n, sizeof(buf) - n);
	if (hn <= 0)
		return;
	n += (size_t)hn;
	for (i = 0; i < plen && n < sizeof(buf); i++)
		buf[n++] = u8(in);
	put(in, p, buf, n);
}

static void op_raw(struct in *in, struct pair *p)
{
	uint8_t buf[256];
	size_t n = u8(in), i;

	for (i = 0; i < n && in->n; i++)
		buf[i] = u8(in);
	put(in, p, buf, i);
}

static void op_send(struct in *in)
{
	uint8_t a = u8(in);
	struct ulnet_md md = {
		.start = big,
		.length = (a & 1) ? BIG : u8(in),
		.threshold = 2,
		.options = ULNET_MD_TRUNCATE,     /* a bound MD takes no OP_PUT/OP_GET */
	};
	ulnet_process_id_t target = { fz.peer, ULNET_PID_LUSTRE };
	ulnet_handle_t mdh;

	int rc;

	if (ulnet_md_bind(fz.ln, &md, ULNET_UNLINK, &mdh))
		return;
	if (a & 2)
		rc = ulnet_get(fz.ln, NULL, mdh, target, 4, 0x10, 0);
	else
		rc = ulnet_put(fz.ln, NULL, mdh, (a & 4) ? ULNET_NOACK_REQ : ULNET_ACK_REQ, target, 4,
			       0x10, 0, 0);
	if (rc && getenv("FUZZ_LOG"))
		fprintf(stderr, "send: %d\n", rc);
	/* a connect is started from a timer of the loop: turn it, so that
	 * the connection exists when the next op names it */
	for (int i = 0; i < 3; i++)
		progress();
}

static void op_close(struct pair *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	progress();
}

static void op_time(struct in *in)
{
	uint8_t a = u8(in);

	fz.now += (uint64_t)(a & 0x7f) * (a & 0x80 ? 1000000000ULL : 1000000ULL);
	progress();
}

/* Open fds of the process (epoll, eventfd, sockets, ...). */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static bool is_ours(int fd)
{
	for (int i = 0; i < fz.npairs; i++)
		if (fz.pairs[i].fd == fd)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct ulnet_opts o = fuzz_node_opts(fz_clock, fz_log);
	struct ulnet_ni_conf conf;
	struct ulnet_globals g;
	struct lnet_ni *ni;
	uint8_t setup = u8(&in);
	int ops = 0, i, fds = count_fds();

	memset(&fz, 0, sizeof(fz));
	fz.now = 1000000000ULL;
	if (getenv("FUZZ_LOG"))
		o.log_level = ULNET_LOG_DEBUG;
	if (ulnet_create(&o, &fz.ln))
		return 0;
	ulnet_globals_get(fz.ln, &g);
	g.discovery = 0;
	ulnet_globals_set(fz.ln, &g);
	ulnet_nid_from_ipv4(0x7f000001, ulnet_mknet(ULNET_LND_TCP, 0), &fz.self);
	ulnet_nid_from_ipv4(0x7f000002, ulnet_mknet(ULNET_LND_TCP, 0), &fz.peer);
	memset(&conf, 0, sizeof(conf));
	conf.nid = fz.self;
	snprintf(conf.accept, sizeof(conf.accept), "none");
	conf.sock.protocol = (setup & 3) == 0 ? 2 : (setup & 3) == 1 ? 4 : 3;
	conf.sock.enable_csum = (setup & 4) ? 1 : 0;
	conf.sock.typed_conns = (setup & 8) ? -1 : 0;
	conf.tun.conns_per_peer = (setup & 0x10) ? 2 : 0;
	conf.sock.nonblk_zcack = (setup & 0x20) ? -1 : 0;
	if (ulnet_ni_add(fz.ln, &conf) < 0) {
		ulnet_destroy(fz.ln);
		return 0;
	}
	lnet_lock(fz.ln);
	ni = lnet_nid2ni_locked(fz.ln, &fz.self);
	lnet_unlock(fz.ln);
	if (!ni)
		abort();
	fz.net = lnet_ni_data(ni);
	fz.net->dial_hook = fz_dial;
	if (setup & 0x40) {         /* as without privileged ports */
		fz.net->user_mode = true;
		fz.net->pid |= ULNET_PID_USERFLAG;
	}

	while (in.n && ops++ < 128) {
		uint8_t op = u8(&in);
		struct pair *p = fz.npairs ? &fz.pairs[(op >> 4) % fz.npairs] : NULL;

		switch (op & 15) {
		case 0: op_adopt(&in); break;
		case 1: if (p) op_acc_req(&in, p); break;
		case 2: case 3: if (p) op_hello(&in, p); break;
		case 4: case 5: if (p) op_noop(&in, p); break;
		case 6: case 7: case 8: if (p) op_lnet(&in, p); break;
		case 9: if (p) op_raw(&in, p); break;
		case 10: case 11: op_send(&in); break;
		case 12: if (p) op_close(p); break;
		default: op_time(&in); break;
		}
	}

	if (getenv("FUZZ_LOG"))
		fprintf(stderr, "%d socketpairs\n", fz.npairs);
	ulnet_destroy(fz.ln);
	for (i = 0; i < fz.npairs; i++) {
		int fd = fz.pairs[i].node_fd;

		if (fd >= 0 && !is_ours(fd) && fcntl(fd, F_GETFD) >= 0)
			abort();            /* the node left a socket open */
	}
	for (i = 0; i < fz.npairs; i++)
		if (fz.pairs[i].fd >= 0)
			close(fz.pairs[i].fd);
	if (count_fds() != fds)
		abort();                /* an fd of the instance outlived it */
	return 0;
}
