/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_interop.c - socklnd behaviours a 2.17 kernel peer relies on
 * (interop audit findings), against raw-socket peers that speak the
 * protocol byte by byte:
 *
 *   - F2: a kernel with conns_per_peer 4 (100 GbE) opens CONTROL + 4
 *     BULK_IN + 4 BULK_OUT: all admitted by a node with conns_per_peer
 *     left 0; beyond the kernel's maximum (127 of a type) refused, NONE;
 *   - F5: as a user-space peer (no privileged ports), a ZC-ACK goes back
 *     on the connection its cookie came on (the kernel knows each of our
 *     connections as a different peer); never folded across connections;
 *   - F7: an admitted incoming connection resets the reconnect back-off;
 *   - F8: topping up a peer's connections uses the version of its live
 *     ones, not `protocol`;
 *   - C2/C3: the acceptor's "I'm old" reply in our byte order, and our
 *     NID as dst_nid of the answer to an unknown HELLO version;
 *   - C5: a peer that TCP-acknowledges what we keep sending gets no
 *     keepalive NOOP; one we stop sending to gets it.
 *
 * Addresses: 127.0.6.x only. The raw peer dials from privileged ports
 * (accept=secure) like a kernel: those tests need root or
 * CAP_NET_BIND_SERVICE and skip without it (saying so). The user-space
 * and keepalive tests run either way (ulnet dials the raw listener; as
 * root the F5 test drops CAP_NET_BIND_SERVICE from its effective set
 * while the node starts, so the node is a user-space peer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "core/lnet_hdr.h"
#include "lnd/socklnd/sock_int.h"
#include "lnd/socklnd/sock_wire.h"
#include "socklnd_util.h"
#include "util/util_bytes.h"

#define PORTAL 21
#define MB 0x4242
#define U_IP "127.0.6.1"
#define U_NID "127.0.6.1@tcp"
#define RAW_WAIT_MS 5000

#define RAW_PORT_OFFSET 17
#include "socklnd_raw.h"
#include "node_info.h"

/* Tests that dial from privileged ports skip without the right to. */
static bool priv_or_skip(void)
{
	if (st_is_privileged())
		return true;
	printf("SKIP: the raw peer needs privileged source ports (root or CAP_NET_BIND_SERVICE)\n");
	skip();
	return false;
}

/* CAP_NET_BIND_SERVICE in this thread's effective set, on or off (threads
 * created meanwhile inherit it; /proc/self/status shows this thread's). */
static void bind_cap_effective(bool on)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &hdr, d) < 0)
		return;
	if (on)
		d[0].effective |= d[0].permitted & (1u << 10);
	else
		d[0].effective &= ~(1u << 10);
	(void)syscall(SYS_capset, &hdr, d);
}

/* --- F2: the kernel's conns_per_peer ------------------------------------- */

/* A kernel on 100 GbE (conns_per_peer 4) dials CONTROL, then BULK_IN and
 * BULK_OUT alternately until it has 4 of each: a node with conns_per_peer
 * left 0 admits all nine, and a PUT on the last BULK_OUT is delivered. */
static void test_kernel_cpp4_admitted(void **state)
{
	static struct st_node n;
	static struct st_md tmd;
	struct raw r[9];
	uint8_t *ubuf = calloc(1, 65536), src[4096];
	const char *ip = "127.0.6.10", *nid = "127.0.6.10@tcp";
	int k = 0;

	(void)state;
	if (!priv_or_skip())
		return;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	assert_int_equal(raw_connect(&r[k++], ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL,
				     nid, U_NID, 77, NULL), SOCKLND_CONN_CONTROL);
	for (int i = 0; i < 4; i++) {
		int t = raw_connect(&r[k++], ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN, nid,
				    U_NID, 77, NULL);

		if (t != SOCKLND_CONN_BULK_OUT) {
			dump_log(&n, "node");
			fail_msg("BULK_IN #%d answered %d, not BULK_OUT", i + 1, t);
		}
		t = raw_connect(&r[k++], ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_OUT, nid,
				U_NID, 77, NULL);
		if (t != SOCKLND_CONN_BULK_IN) {
			dump_log(&n, "node");
			fail_msg("BULK_OUT #%d answered %d, not BULK_IN", i + 1, t);
		}
	}
	assert_int_equal(log_count(&n, "refusing connection", NULL), 0);
	{
		struct lnet_hdr h = mk_put(&r[8], sizeof(src), false);

		st_fill(src, sizeof(src), 10);
		raw_send_lnet(&r[8], &h, src, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
		assert_int_equal(tmd.nerr, 0);
		assert_true(st_check(ubuf, sizeof(src), 10));
	}
	for (int i = 0; i < k; i++)
		raw_close(&r[i]);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(ubuf);
}

/* conns_per_peer set to 1 is a limit, as on a kernel set so (lnetctl
 * net set --conns-per-peer 1): a second BULK_IN between the same two
 * addresses is refused with NONE. */
static void test_cpp_set_one_refuses_second(void **state)
{
	static struct st_node n;
	struct node_opts no = { .conns_per_peer = 1 };
	struct raw r[2];
	const char *ip = "127.0.6.12", *nid = "127.0.6.12@tcp";

	(void)state;
	if (!priv_or_skip())
		return;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	assert_int_equal(raw_connect(&r[0], ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN,
				     nid, U_NID, 79, NULL), SOCKLND_CONN_BULK_OUT);
	assert_int_equal(raw_connect(&r[1], ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN,
				     nid, U_NID, 79, NULL), SOCKLND_CONN_NONE);
	assert_true(raw_closed(r[1].fd));
	assert_true(st_wait_log(&n, "refusing connection: duplicate", nid));
	raw_close(&r[0]);
	raw_close(&r[1]);
	node_stop(&n);
}

/* The most a kernel opens of one type is 127 (lnetctl's range): the
 * 128th BULK_IN between the same two addresses is a real duplicate,
 * refused with NONE as the kernel's passive side does, and logged. */
static void test_kernel_cpp_beyond_max_refused(void **state)
{
	static struct st_node n;
	static struct raw r[ULNET_MAX_CONNS_PER_PEER + 1];
	const char *ip = "127.0.6.11", *nid = "127.0.6.11@tcp";
	int t;

	(void)state;
	if (!priv_or_skip())
		return;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	for (int i = 0; i < ULNET_MAX_CONNS_PER_PEER; i++) {
		t = raw_connect(&r[i], ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN, nid, U_NID, 78,
				NULL);
		if (t != SOCKLND_CONN_BULK_OUT)
			fail_msg("BULK_IN #%d answered %d", i + 1, t);
	}
	t = raw_connect(&r[ULNET_MAX_CONNS_PER_PEER], ip, U_IP, KSOCK_PROTO_V3, false,
			SOCKLND_CONN_BULK_IN, nid, U_NID, 78, NULL);
	assert_int_equal(t, SOCKLND_CONN_NONE);
	assert_true(raw_closed(r[ULNET_MAX_CONNS_PER_PEER].fd));
	assert_true(st_wait_log(&n, "refusing connection: duplicate", nid));
	assert_int_equal(log_count(&n, "refusing connection", NULL), 1);
	for (int i = 0; i <= ULNET_MAX_CONNS_PER_PEER; i++)
		raw_close(&r[i]);
	node_stop(&n);
}

/* --- F7: an incoming connection resets the back-off ---------------------- */

/* Three failed dials drive the back-off to 8 s (4 s to wait now); then the
 * peer dials us and is admitted. As the kernel's association of an
 * incoming connection with its route, that resets the delay: the next
 * failed dial (topping up the peer's connections) backs off 1 s, not 8 s. */
static void test_passive_resets_backoff(void **state)
{
	static const uint64_t delays[] = { 1000, 2000, 4000 };
	struct node_opts no = { 0 };
	static struct st_node n;
	static struct st_md md;
	struct raw r;
	uint64_t skew = 0;
	uint8_t src[64];
	const char *ip = "127.0.6.20", *nid = "127.0.6.20@tcp";

	(void)state;
	if (!priv_or_skip())
		return;
	no.skew = &skew;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	backoff_run(&n, &skew, nid, delays, 3, 50000);
	st_log_clear(&n);
	/* within the 4 s delay, the peer dials us (CONTROL only): admitted */
	assert_int_equal(raw_connect(&r, ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL, nid,
				     U_NID, 20, NULL), SOCKLND_CONN_CONTROL);
	advance(&skew, 4100);
	/* a message for it: on CONTROL; we dialled it before, so we also
	 * top up (BULK_IN): refused, nobody listens there */
	node_put(&n, nid, src, sizeof(src), &md);
	if (!st_wait_log(&n, "connect failed", "retry in")) {
		dump_log(&n, "node");
		fail_msg("no top-up attempt");
	}
	if (log_count(&n, "connect failed", "(retry in 1000 ms)") != 1) {
		dump_log(&n, "node");
		fail_msg("the back-off was not reset by the admitted connection");
	}
	{
		struct rmsg m;

		assert_true(raw_recv(&r, &m));
		assert_int_equal(m.h.type, ULNET_MSG_PUT);
		rmsg_free(&m);
	}
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	node_put_done(&n, &md);
	raw_close(&r);
	node_stop(&n);
}

/* --- F8: top-up in the peer's version ------------------------------------ */

/* A node configured with protocol = 2; a kernel dials it in V3 (one
 * connection, which the node holds as BULK_IN and cannot send an LNET
 * message on). The node's top-up dial must say V3: the kernel would
 * close every connection of ours on a V2 one ("wrong proto version"). */
static void test_topup_uses_peer_version(void **state)
{
	struct node_opts no = { 0 };
	static struct st_node n;
	static struct st_md md;
	struct raw r, in;
	struct lnet_acceptor_req req;
	struct ksock_hello h;
	uint8_t src[64];
	const char *ip = "127.0.6.30", *nid = "127.0.6.30@tcp";
	int lfd;

	(void)state;
	if (!priv_or_skip())
		return;
	no.sock.protocol = 2;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	lfd = raw_listen(ip);
	assert_int_equal(raw_connect(&r, ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_OUT, nid,
				     U_NID, 30, NULL), SOCKLND_CONN_BULK_IN);
	node_put(&n, nid, src, sizeof(src), &md);
	assert_true(raw_accept(lfd, &in, &req, &h));
	if (h.version != KSOCK_PROTO_V3) {
		dump_log(&n, "node");
		fail_msg("top-up HELLO V%u, the peer's connections are V3", h.version);
	}
	assert_int_equal(h.ctype, SOCKLND_CONN_CONTROL);
	raw_answer(&in, &h, KSOCK_PROTO_V3, SOCKLND_CONN_CONTROL, nid, 30);
	{
		struct rmsg m;

		assert_true(raw_recv(&in, &m));
		assert_int_equal(m.h.type, ULNET_MSG_PUT);
		rmsg_free(&m);
	}
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.nerr, 0);
	node_put_done(&n, &md);
	assert_int_equal(log_count(&n, "wrong proto version", NULL), 0);
	raw_close(&in);
	raw_close(&r);
	close(lfd);
	node_stop(&n);
}

/* --- C2/C3: answers to what a node cannot speak --------------------------- */

/* "I'm old" (magic + version 1 + NID 0, 16 bytes) comes in our own byte
 * order (little-endian) whatever the requester's, as the kernel writes its
 * native one: to a byte-swapped request of an unknown version and to a
 * byte-swapped bare HELLO magic. */
static void test_acceptor_old_reply_order(void **state)
{
	static struct st_node n;
	uint8_t buf[16], want[16] = { 0 };

	(void)state;
	if (!priv_or_skip())
		return;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	ul_put_le32(want, LNET_PROTO_ACCEPTOR_MAGIC);
	ul_put_le32(want + 4, 1);
	for (int i = 0; i < 2; i++) {
		int fd = raw_dial("127.0.6.50", U_IP);
		uint8_t req[8];

		if (i == 0) {
			ul_put_be32(req, LNET_PROTO_ACCEPTOR_MAGIC);
			ul_put_be32(req + 4, 7);
		} else {
			ul_put_be32(req, LNET_PROTO_MAGIC);
			ul_put_be32(req + 4, KSOCK_PROTO_V3);
		}
		send_all(fd, req, sizeof(req));
		assert_true(recv_all(fd, buf, sizeof(buf)));
		if (memcmp(buf, want, sizeof(want)))
			fail_msg("case %d: reply %02x %02x %02x %02x / %02x %02x %02x %02x", i, buf[0],
				 buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7]);
		assert_true(raw_closed(fd));
		close(fd);
	}
	node_stop(&n);
}

/* An unknown HELLO version of a known magic is answered with our HELLO,
 * ctype NONE, and (as the kernel's) our own NID as dst_nid. */
static void test_unknown_hello_reply_dst(void **state)
{
	static struct st_node n;
	struct lnet_acceptor_req req = { .version = 1 };
	struct ksock_hello h;
	uint8_t buf[64];
	ssize_t k;
	int fd;

	(void)state;
	if (!priv_or_skip())
		return;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	fd = raw_dial("127.0.6.51", U_IP);
	req.target = nid_of(U_NID);
	k = lnet_acceptor_req_encode(&req, false, buf, sizeof(buf));
	assert_true(k > 0);
	ul_put_le32(buf + k, LNET_PROTO_MAGIC);
	ul_put_le32(buf + k + 4, 9);
	send_all(fd, buf, (size_t)k + 8);
	assert_true(raw_read_hello(fd, &h, NULL, NULL));
	assert_int_equal(h.version, KSOCK_PROTO_V3);
	assert_int_equal(h.ctype, SOCKLND_CONN_NONE);
	if (!ulnet_nid_same(&h.dst_nid, &n.nid)) {
		char nb[ULNET_NIDSTR_SIZE];

		fail_msg("dst_nid %s, not our NID", ulnet_nid_str(&h.dst_nid, nb));
	}
	assert_true(raw_closed(fd));
	close(fd);
	node_stop(&n);
}

/* --- F5: a user-space peer's one connection ------------------------------ */

/* The node started without CAP_NET_BIND_SERVICE in its effective set (its
 * threads inherit that): a user-space peer. */
static void user_node_start(struct st_node *n, const struct node_opts *no)
{
	bind_cap_effective(false);
	assert_int_equal(node_start(n, U_NID, no), 0);
	bind_cap_effective(true);
	assert_true(st_wait_log(n, "connecting as a user-space peer", NULL));
}

/* The node, a user-space peer, dials a kernel. The kernel knows each
 * connection from an unprivileged port as a peer of its own (PID from the
 * source port), answers a message only to that peer, sends LNET messages
 * on no connection it holds as BULK_IN, and can send a ZC-ACK only on one
 * (ksocknal_handle_zcreq: else it drops the message and closes every
 * connection). So the node opens CONTROL alone; its 20000-byte PUT goes
 * there without a ZC cookie; the kernel's 20000-byte PUT with cookie 5 on
 * CONTROL is acknowledged on CONTROL. */
static void test_usermode_control_only(void **state)
{
	static struct st_node n;
	static struct st_md md, tmd;
	struct raw rs[6];
	struct rmsg put;
	uint8_t *src = malloc(20000), *ubuf = calloc(1, 65536);
	const char *ip = "127.0.6.40", *nid = "127.0.6.40@tcp";
	int lfd, nc;
	bool acked = false;
	uint64_t end;

	(void)state;
	user_node_start(&n, NULL);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	lfd = raw_listen(ip);
	st_fill(src, 20000, 40);
	node_put(&n, nid, src, 20000, &md);
	nc = serve_until_put(lfd, nid, KSOCK_PROTO_V3, KSOCK_PROTO_V3, rs, 6, 1, &put);
	assert_int_equal(nc, 1);
	assert_int_equal(rs[0].ctype, SOCKLND_CONN_CONTROL);
	assert_int_equal(put.h.payload_length, 20000);
	if (put.k.zc_cookies[0] != 0)
		fail_msg("ZC cookie %llu on CONTROL from a user-space peer",
			 (unsigned long long)put.k.zc_cookies[0]);
	rmsg_free(&put);
	/* no cookie: the send completes once in the socket */
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	node_put_done(&n, &md);
	{
		struct lnet_hdr h = mk_put(&rs[0], 20000, false);

		raw_send_lnet(&rs[0], &h, src, 5, 0, 0);
	}
	assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	end = st_now_ms() + RAW_WAIT_MS;
	while (!acked && st_now_ms() < end) {
		struct rmsg m;

		if (raw_poll(rs, nc, 100) < 0)
			continue;
		assert_true(raw_recv(&rs[0], &m));
		if (m.k.type == KSOCK_MSG_NOOP) {
			struct ksock_zcack z;

			assert_int_equal(ksock_zcack_parse(m.k.zc_cookies[0], m.k.zc_cookies[1], true, &z), 0);
			acked = ksock_zcack_covers(&z, 5);
		}
		rmsg_free(&m);
	}
	if (!acked) {
		dump_log(&n, "node");
		fail_msg("no ZC-ACK of cookie 5 on CONTROL");
	}
	/* and no bulk conn came meanwhile, nor in the next half second */
	{
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		assert_int_equal(poll(&p, 1, 500), 0);
	}
	raw_close(&rs[0]);
	close(lfd);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(src);
	free(ubuf);
}

/* A user-space peer never dials over IPv6: a kernel asserts (LBUG) on an
 * IPv6 connection from an unprivileged port. The PUT fails at once with an
 * error that names the peer and the remedy, and no socket is opened. The
 * target is the IPv4-mapped form of a 127.0.0.0/8 address, so that even a
 * dial that should not happen stays on loopback. */
static void test_usermode_no_ipv6(void **state)
{
	static struct st_node n;
	static struct st_md md;
	uint8_t src[64] = { 0 };
	const char *v6 = "::ffff:127.0.6.42@tcp";
	int lfd;

	(void)state;
	user_node_start(&n, NULL);
	lfd = raw_listen("127.0.6.42");   /* where a mapped dial would land */
	node_put(&n, v6, src, sizeof(src), &md);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.last_status, -EHOSTUNREACH);
	assert_true(st_wait_log(&n, "not connecting over IPv6", "::ffff:127.0.6.42@tcp"));
	{
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		assert_int_equal(poll(&p, 1, 200), 0);
	}
	node_put_done(&n, &md);
	close(lfd);
	node_stop(&n);
}

/* A dial that finds the privileged ports refused (EACCES) makes the node a
 * user-space peer mid-way; the bulk conn it was dialling as a privileged
 * one is closed at once (a kernel could answer nothing sent on it). The
 * node starts privileged; a raw kernel dials its CONTROL and sends a PUT
 * whose handler drops CAP_NET_BIND_SERVICE on the node's loop thread, with
 * a ZC cookie the node can answer only on a BULK_IN conn: its top-up dial
 * gets EACCES, and the raw listener sees no connection. */
static void cap_drop_handler(const struct ulnet_event *ev)
{
	if (ev->type == ULNET_EVENT_PUT)
		bind_cap_effective(false);   /* this thread: the node's loop */
	st_md_handler(ev);
}

static void test_midway_user_mode_no_bulk(void **state)
{
	static struct st_node n;
	static struct st_md tmd;
	struct ulnet_md d = { 0 };
	ulnet_handle_t meh;
	struct raw ctl;
	uint8_t *src = malloc(20000), *ubuf = calloc(1, 65536);
	const char *ip = "127.0.6.44";
	int lfd;

	(void)state;
	if (!need_priv())
		skip();
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(ulnet_me_attach(n.ln, PORTAL, st_any_id(), MB, 0, ULNET_RETAIN,
					 ULNET_INS_AFTER, &meh), 0);
	d.start = ubuf;
	d.length = 65536;
	d.threshold = ULNET_MD_THRESH_INF;
	d.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE;
	d.user_ptr = &tmd;
	d.handler = cap_drop_handler;
	assert_int_equal(ulnet_md_attach(n.ln, meh, &d, ULNET_RETAIN, &tmd.h), 0);
	lfd = raw_listen(ip);
	assert_int_equal(raw_connect(&ctl, ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL,
				     "127.0.6.44@tcp", U_NID, 44, NULL),
			 SOCKLND_CONN_CONTROL);
	st_fill(src, 20000, 44);
	{
		struct lnet_hdr h = mk_put(&ctl, 20000, false);

		raw_send_lnet(&ctl, &h, src, 7, 0, 0);
	}
	assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	if (!st_wait_log(&n, "can't bind privileged ports", NULL)) {
		dump_log(&n, "node");
		fail_msg("the node did not dial again after the PUT");
	}
	{
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		assert_int_equal(poll(&p, 1, 1000), 0);
	}
	raw_close(&ctl);
	close(lfd);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(src);
	free(ubuf);
}

/* --- C5: liveness from what we send -------------------------------------- */

/* A NOOP [0,1] among a raw conn's messages within `ms`: its index, or -1. */
static int keepalive_seen(struct raw *rs, int nc, int ms)
{
	uint64_t end = st_now_ms() + (uint64_t)ms;

	while (st_now_ms() < end) {
		struct rmsg m;
		int i = raw_poll(rs, nc, 50);
		bool ka;

		if (i < 0)
			continue;
		assert_true(raw_recv(&rs[i], &m));
		ka = m.k.type == KSOCK_MSG_NOOP && m.k.zc_cookies[0] == 0 &&
		     m.k.zc_cookies[1] == KSOCK_KEEPALIVE_COOKIE;
		rmsg_free(&m);
		if (ka)
			return i;
	}
	return -1;
}

/* keepalive = 3 s. The kernel never sends (one-way PUTs without ACK) but
 * its TCP acknowledges all we send: for 6 s of PUTs every 250 ms no
 * keepalive comes (the kernel takes a peer whose TCP acknowledges for
 * alive); once we stop sending, one comes within the keepalive delay. */
/* `user`: the node starts without CAP_NET_BIND_SERVICE (a user-space peer
 * dials CONTROL alone, and its keepalive goes there) */
static void keepalive_run(bool user, const char *ip, const char *nid)
{
	struct node_opts no = { 0 };
	static struct st_node n;
	static struct st_md md;
	struct raw rs[6];
	struct rmsg put;
	uint8_t src[100];
	int lfd, nc, k;
	uint64_t t0, end;

	no.sock.keepalive = 3;
	if (user)
		user_node_start(&n, &no);
	else
		assert_int_equal(node_start(&n, U_NID, &no), 0);
	user = st_log_has(&n, "connecting as a user-space peer", NULL);
	lfd = raw_listen(ip);
	st_fill(src, sizeof(src), 60);
	node_put(&n, nid, src, sizeof(src), &md);
	nc = serve_until_put(lfd, nid, KSOCK_PROTO_V3, KSOCK_PROTO_V3, rs, 6, user ? 1 : 3, &put);
	assert_int_equal(nc, user ? 1 : 3);
	rmsg_free(&put);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	node_put_done(&n, &md);
	end = st_now_ms() + 6000;
	while (st_now_ms() < end) {
		node_put(&n, nid, src, sizeof(src), &md);
		assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
		node_put_done(&n, &md);
		k = keepalive_seen(rs, nc, 250);
		if (k >= 0) {
			dump_log(&n, "node");
			fail_msg("keepalive on conn %d while the peer acknowledges what we send", k);
		}
	}
	t0 = st_now_ms();
	k = keepalive_seen(rs, nc, 8000);
	if (k < 0)
		fail_msg("no keepalive 8 s after we stopped sending");
	print_message("keepalive %llu ms after the last PUT\n", (unsigned long long)(st_now_ms() - t0));
	assert_true(st_now_ms() - t0 >= 1500);
	for (int i = 0; i < nc; i++)
		raw_close(&rs[i]);
	close(lfd);
	node_stop(&n);
}

static void test_keepalive_tx_liveness(void **state)
{
	(void)state;
	keepalive_run(false, "127.0.6.60", "127.0.6.60@tcp");
}

static void test_keepalive_tx_liveness_user(void **state)
{
	(void)state;
	keepalive_run(true, "127.0.6.61", "127.0.6.61@tcp");
}

/* --- health class of a failed write ------------------------------------- */

/* The peer takes the conns of 8 PUTs of 1 MiB (the peer credits) with a
 * small receive buffer but reads nothing, then
 * resets the conn they are stuck on: our write fails with ECONNRESET. As
 * in the kernel (ksocknal_process_transmit()), the send being written is
 * a LOCAL_ERROR, counted on our NI, not the REMOTE_DROPPED its errno alone
 * gives the sends merely queued behind it (ksocknal_txlist_done()). */
static void test_write_error_is_local_error(void **state)
{
	enum { NPUT = 8 };
	static struct st_node n;
	static struct st_md md;
	const char *ip = "127.0.6.70", *nid = "127.0.6.70@tcp";
	const size_t len = 1u << 20;
	uint8_t *src = malloc(len);
	ulnet_nid_t me = nid_of(U_NID), peer = nid_of(nid);
	struct raw rs[4];
	int lfd, nc = 0, stuck = -1;
	uint64_t end;

	(void)state;
	if (!priv_or_skip())
		return;
	assert_non_null(src);
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	lfd = raw_listen(ip);
	{
		int rcvbuf = 4096;   /* inherited by the accepted conns */

		assert_int_equal(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	}
	st_fill(src, len, 70);
	st_md_init(&md);
	assert_int_equal(st_bind(&n, src, len, NPUT, &md), 0);
	for (int i = 0; i < NPUT; i++)
		assert_int_equal(ulnet_put(n.ln, NULL, md.h, ULNET_NOACK_REQ, pid_of(nid), PORTAL, MB,
					   0, 0), 0);
	/* take every conn it dials, answer its HELLO, read nothing; the one
	 * whose socket has bytes waiting carries the PUTs */
	end = st_now_ms() + RAW_WAIT_MS;
	while (st_now_ms() < end && stuck < 0) {
		struct pollfd p[5];

		p[0].fd = lfd;
		p[0].events = POLLIN;
		for (int i = 0; i < nc; i++) {
			p[i + 1].fd = rs[i].fd;
			p[i + 1].events = POLLIN;
		}
		if (poll(p, (nfds_t)nc + 1, 50) <= 0)
			continue;
		for (int i = 0; i < nc; i++)
			if (p[i + 1].revents & POLLIN)
				stuck = i;
		if ((p[0].revents & POLLIN) && nc < 4) {
			struct lnet_acceptor_req req;
			struct ksock_hello h;

			assert_true(raw_accept(lfd, &rs[nc], &req, &h));
			raw_answer(&rs[nc], &h, KSOCK_PROTO_V3, ksock_invert_ctype(h.ctype), nid, 0x70);
			nc++;
		}
	}
	if (stuck < 0) {
		dump_log(&n, "node");
		fail_msg("no conn carried the PUTs (%d conns)", nc);
	}
	/* let the socket buffers fill, then reset that conn alone */
	usleep(300 * 1000);
	{
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		assert_int_equal(setsockopt(rs[stuck].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
		close(rs[stuck].fd);
		rs[stuck].fd = -1;
	}
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, NPUT));
	{
		struct ulnet_ni_info ni = ni_info(n.ln, &me);
		struct ulnet_peer_ni_info pni = peer_ni(n.ln, &peer);

		print_message("%d of %d PUTs failed; NI local errors %llu, peer NI remote drops %llu\n",
			      md.nerr, NPUT, (unsigned long long)ni.health.error,
			      (unsigned long long)pni.health.dropped);
		assert_true(md.nerr >= 2);   /* the socket buffers hold less than 7 MiB */
		if (ni.health.error != 1 || pni.health.dropped != (uint64_t)md.nerr - 1) {
			dump_log(&n, "node");
			fail_msg("NI local errors %llu (want 1), peer NI remote drops %llu (want %d)",
				 (unsigned long long)ni.health.error,
				 (unsigned long long)pni.health.dropped, md.nerr - 1);
		}
	}
	st_md_release(&n, &md);
	st_md_fini(&md);
	for (int i = 0; i < nc; i++)
		raw_close(&rs[i]);
	close(lfd);
	node_stop(&n);
	free(src);
}

static int group_setup(void **state)
{
	(void)state;
	setup_common();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_kernel_cpp4_admitted, test_teardown),
		cmocka_unit_test_teardown(test_kernel_cpp_beyond_max_refused, test_teardown),
		cmocka_unit_test_teardown(test_cpp_set_one_refuses_second, test_teardown),
		cmocka_unit_test_teardown(test_usermode_control_only, test_teardown),
		cmocka_unit_test_teardown(test_usermode_no_ipv6, test_teardown),
		cmocka_unit_test_teardown(test_midway_user_mode_no_bulk, test_teardown),
		cmocka_unit_test_teardown(test_passive_resets_backoff, test_teardown),
		cmocka_unit_test_teardown(test_topup_uses_peer_version, test_teardown),
		cmocka_unit_test_teardown(test_acceptor_old_reply_order, test_teardown),
		cmocka_unit_test_teardown(test_unknown_hello_reply_dst, test_teardown),
		cmocka_unit_test_teardown(test_keepalive_tx_liveness, test_teardown),
		cmocka_unit_test_teardown(test_keepalive_tx_liveness_user, test_teardown),
		cmocka_unit_test_teardown(test_write_error_is_local_error, test_teardown),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
