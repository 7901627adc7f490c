/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_proto.c - the socklnd protocol against raw-socket peers that
 * speak it byte by byte (built with the codecs of sock_wire.h), and a few
 * ulnet pairs:
 *
 *   - a V2 peer in both byte orders, on one ANY connection and on typed
 *     connections: PUT and GET both ways (ZC-ACK included);
 *   - V2 checksums: verified when the peer sends them (a bad one: EIO, the
 *     connection closed, logged), sent with enable_csum;
 *   - a V1 peer (72-byte HELLO, no ksock header) exchanging PUTs;
 *   - ulnet dialling with protocol = 2 (typed, or one ANY connection with
 *     typed_conns off), and stepping down to V2 when the peer
 *     answers a V3 HELLO with its own V2 one;
 *   - IPv6: HELLO V4, acceptor request v2, the 96-byte nid16 header (raw peer
 *     on ::1; two ulnet nodes in a network namespace of our own);
 *   - a new incarnation ("peer rebooted"), duplicates beyond conns_per_peer
 *     and the loopback exemption, accept=none;
 *   - reconnect back-off on the instance clock and the sock_timeout of
 *     queued messages;
 *   - conns_per_peer = 2 (two BULK_IN and two BULK_OUT, both used);
 *   - ZC-ACK forms: all three accepted, and ulnet folding pending ACKs into
 *     the pair and range forms; nonblk_zcack off (ACKs on CONTROL).
 *
 * Addresses: 127.0.4.x and ::1 only (plus fd00:4::/64 inside our own network
 * namespace). Nodes and MD counters are static so that a failed test's
 * teardown (which stops its nodes) never writes into a dead frame. The raw
 * peer binds privileged source ports (accept=secure), so
 * the test needs root or CAP_NET_BIND_SERVICE and is skipped without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "core/lnet_hdr.h"
#include "lnd/socklnd/sock_int.h"
#include "lnd/socklnd/sock_wire.h"
#include "socklnd_util.h"

#define PORTAL 21
#define MB 0x4242
#define U_IP "127.0.4.1"
#define U_NID "127.0.4.1@tcp"
#define RAW_WAIT_MS 5000

#define RAW_PORT_OFFSET 11
#include "socklnd_raw.h"

/* --- V2 peers ------------------------------------------------------------ */

/* A V2 peer (byte order `be`), on one ANY connection or on typed ones:
 * PUT and GET both ways. */
static void v2_exchange(bool be, bool typed)
{
	const char *raw_ip = be ? "127.0.4.21" : "127.0.4.20";
	char raw_nid[32];
	static struct st_node n;
	struct raw rc[3];
	int nconn = typed ? 3 : 1;
	static const int types[3] = { SOCKLND_CONN_CONTROL, SOCKLND_CONN_BULK_IN, SOCKLND_CONN_BULK_OUT };
	uint8_t *ubuf = calloc(1, 65536), *src = malloc(65536), *sink = calloc(1, 65536);
	static struct st_md tmd, smd;
	struct ksock_hello reply;
	struct rmsg m;
	int ictl = 0, iin = 0, iout = 0;   /* raw conns by role */

	snprintf(raw_nid, sizeof(raw_nid), "%s@tcp", raw_ip);
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	for (int i = 0; i < nconn; i++) {
		int want = typed ? types[i] : SOCKLND_CONN_ANY;
		int got = raw_connect(&rc[i], raw_ip, U_IP, KSOCK_PROTO_V2, be, want, raw_nid, U_NID,
				      0x2222, &reply);

		assert_int_equal(reply.version, KSOCK_PROTO_V2);
		assert_false(reply.swapped);              /* ulnet writes LE */
		assert_true(ulnet_nid_same(&reply.src_nid, &n.nid));
		assert_int_equal(got, want == SOCKLND_CONN_BULK_IN ? SOCKLND_CONN_BULK_OUT
				      : want == SOCKLND_CONN_BULK_OUT ? SOCKLND_CONN_BULK_IN : want);
	}
	if (typed) {
		ictl = 0;
		iin = 1;
		iout = 2;
	}
	assert_true(st_wait_log(&n, be ? "V2/be" : "V2/le", " up ("));

	/* raw -> ulnet PUT (4 KiB, ACK wanted): the ACK comes back */
	{
		struct lnet_hdr h = mk_put(&rc[iout], 4096, true);

		st_fill(src, 4096, 3);
		raw_send_lnet(&rc[iout], &h, src, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
		assert_int_equal(tmd.nerr, 0);
		assert_true(st_check(ubuf, 4096, 3));
		assert_true(raw_recv(&rc[ictl], &m));
		assert_int_equal(m.h.type, ULNET_MSG_ACK);
		assert_int_equal(m.h.msg.ack.dst_wmd.wh_object_cookie, 0x2222);
		assert_int_equal(m.h.msg.ack.mlength, 4096);
		rmsg_free(&m);
	}
	/* raw -> ulnet GET (8 KiB): the REPLY on the bulk conn (ANY untyped) */
	{
		struct lnet_hdr h = mk_hdr(ULNET_MSG_GET, &rc[ictl].me, &rc[ictl].peer, 0);

		h.msg.get.return_wmd = (lnet_wire_handle_t){ 0x33, 0x44 };
		h.msg.get.match_bits = MB;
		h.msg.get.ptl_index = PORTAL;
		h.msg.get.sink_length = 8192;
		raw_send_lnet(&rc[ictl], &h, NULL, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_GET, 1));
		assert_true(raw_recv(&rc[iin], &m));
		assert_int_equal(m.h.type, ULNET_MSG_REPLY);
		assert_int_equal(m.h.payload_length, 8192);
		assert_int_equal(m.h.msg.reply.dst_wmd.wh_object_cookie, 0x44);
		assert_true(st_check(m.payload, 4096, 3));
		rmsg_free(&m);
	}
	/* ulnet -> raw PUT of 20000 B: a ZC request, SEND only after our ACK */
	{
		st_fill(src, 20000, 9);
		st_md_init(&smd);
		assert_int_equal(st_bind(&n, src, 20000, 1, &smd), 0);
		assert_int_equal(ulnet_put(n.ln, NULL, smd.h, ULNET_NOACK_REQ, pid_of(raw_nid), PORTAL,
					   MB, 0, 0), 0);
		assert_true(raw_recv(&rc[iin], &m));
		assert_int_equal(m.k.type, KSOCK_MSG_LNET);
		assert_int_equal(m.h.type, ULNET_MSG_PUT);
		assert_int_equal(m.h.payload_length, 20000);
		assert_true(st_check(m.payload, 20000, 9));
		assert_true(m.k.zc_cookies[0] > 1);
		usleep(100 * 1000);
		assert_int_equal(smd.n[ULNET_EVENT_SEND], 0);   /* waits for the ZC-ACK */
		raw_send_noop(&rc[ictl], 0, m.k.zc_cookies[0]);
		assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
		assert_int_equal(smd.nerr, 0);
		rmsg_free(&m);
		st_md_release(&n, &smd);
		st_md_fini(&smd);
	}
	/* ulnet -> raw GET: we answer with a REPLY */
	{
		struct lnet_hdr h;

		st_md_init(&smd);
		assert_int_equal(st_bind(&n, sink, 3000, 2, &smd), 0);
		assert_int_equal(ulnet_get(n.ln, NULL, smd.h, pid_of(raw_nid), PORTAL, MB, 0), 0);
		assert_true(raw_recv(&rc[ictl], &m));
		assert_int_equal(m.h.type, ULNET_MSG_GET);
		assert_int_equal(m.h.msg.get.sink_length, 3000);
		h = mk_hdr(ULNET_MSG_REPLY, &rc[iout].me, &rc[iout].peer, 3000);
		h.msg.reply.dst_wmd = m.h.msg.get.return_wmd;
		st_fill(src, 3000, 17);
		raw_send_lnet(&rc[iout], &h, src, 0, 0, 0);
		assert_true(st_md_wait(&smd, ULNET_EVENT_REPLY, 1));
		assert_int_equal(smd.nerr, 0);
		assert_true(st_check(sink, 3000, 17));
		rmsg_free(&m);
		st_md_release(&n, &smd);
		st_md_fini(&smd);
	}
	for (int i = 0; i < nconn; i++)
		raw_close(&rc[i]);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(ubuf);
	free(src);
	free(sink);
}

static void test_v2_any_le(void **state)
{
	(void)state;
	v2_exchange(false, false);
}

static void test_v2_any_be(void **state)
{
	(void)state;
	v2_exchange(true, false);
}

static void test_v2_typed_le(void **state)
{
	(void)state;
	v2_exchange(false, true);
}

static void test_v2_typed_be(void **state)
{
	(void)state;
	v2_exchange(true, true);
}

/* V2 checksums: a correct one passes, a corrupted one fails the message
 * with EIO and closes the connection; with enable_csum ulnet's own V2
 * messages carry the right CRC (and its V3 ones none). */
static void test_v2_checksum(void **state)
{
	static struct st_node n;
	struct node_opts no = { 0 };
	struct raw r, r3;
	uint8_t *ubuf = calloc(1, 65536), src[5000];
	static struct st_md tmd, smd;
	struct rmsg m;

	(void)state;
	no.sock.enable_csum = 1;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	assert_int_equal(raw_connect(&r, "127.0.4.22", U_IP, KSOCK_PROTO_V2, true, SOCKLND_CONN_ANY,
				     "127.0.4.22@tcp", U_NID, 0x77, NULL), SOCKLND_CONN_ANY);
	/* ours, correct */
	{
		struct lnet_hdr h = mk_put(&r, 3000, false);

		st_fill(src, 3000, 5);
		raw_send_lnet(&r, &h, src, 0, 0, 1);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
		assert_int_equal(tmd.nerr, 0);
		assert_true(st_check(ubuf, 3000, 5));
	}
	/* ulnet's, with enable_csum: covers ksock hdr (csum 0) + LNet hdr + payload */
	{
		uint8_t tmp[KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE];
		uint32_t crc;

		st_fill(src, 5000, 6);
		st_md_init(&smd);
		assert_int_equal(st_bind(&n, src, 5000, 1, &smd), 0);
		assert_int_equal(ulnet_put(n.ln, NULL, smd.h, ULNET_NOACK_REQ, pid_of("127.0.4.22@tcp"),
					   PORTAL, MB, 0, 0), 0);
		assert_true(raw_recv(&r, &m));
		assert_int_equal(m.h.payload_length, 5000);
		assert_true(m.k.csum != 0);
		memcpy(tmp, m.raw, sizeof(tmp));
		memset(tmp + 4, 0, 4);
		crc = ksock_csum(KSOCK_CSUM_SEED, tmp, sizeof(tmp));
		crc = ksock_csum(crc, m.payload, 5000);
		assert_int_equal(crc, m.k.csum);
		rmsg_free(&m);
		assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
		st_md_release(&n, &smd);
		st_md_fini(&smd);
	}
	/* a V3 peer gets no checksum even with enable_csum */
	{
		struct raw rb;

		assert_int_equal(raw_connect(&r3, "127.0.4.23", U_IP, KSOCK_PROTO_V3, false,
					     SOCKLND_CONN_CONTROL, "127.0.4.23@tcp", U_NID, 0x78, NULL),
				 SOCKLND_CONN_CONTROL);
		assert_int_equal(raw_connect(&rb, "127.0.4.23", U_IP, KSOCK_PROTO_V3, false,
					     SOCKLND_CONN_BULK_IN, "127.0.4.23@tcp", U_NID, 0x78, NULL),
				 SOCKLND_CONN_BULK_OUT);
		st_md_init(&smd);
		assert_int_equal(st_bind(&n, src, 100, 1, &smd), 0);
		assert_int_equal(ulnet_put(n.ln, NULL, smd.h, ULNET_NOACK_REQ, pid_of("127.0.4.23@tcp"),
					   PORTAL, MB, 0, 0), 0);
		assert_true(raw_recv(&r3, &m));
		assert_int_equal(m.k.csum, 0);
		rmsg_free(&m);
		assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
		st_md_release(&n, &smd);
		st_md_fini(&smd);
		raw_close(&rb);
		raw_close(&r3);
	}
	/* ours, corrupted: EIO, the connection closed, logged */
	{
		struct lnet_hdr h = mk_put(&r, 3000, false);

		st_fill(src, 3000, 7);
		raw_send_lnet(&r, &h, src, 0, 0, 2);
		assert_true(raw_closed(r.fd));
		assert_true(st_wait_log(&n, "checksum error", NULL));
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 2));
		assert_int_equal(tmd.nerr, 1);
		assert_int_equal(tmd.last_status, -EIO);
	}
	raw_close(&r);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(ubuf);
}

/* V1: a 72-byte little-endian HELLO, then bare LNet headers. */
static void test_v1_peer(void **state)
{
	static struct st_node n;
	struct raw r;
	struct ksock_hello reply;
	uint8_t *ubuf = calloc(1, 65536), src[4096];
	static struct st_md tmd, smd;
	struct rmsg m;

	(void)state;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	assert_int_equal(raw_connect(&r, "127.0.4.24", U_IP, KSOCK_PROTO_V1, false, SOCKLND_CONN_ANY,
				     "127.0.4.24@tcp", U_NID, 0x99, &reply), SOCKLND_CONN_ANY);
	assert_int_equal(reply.version, KSOCK_PROTO_V1);
	assert_int_equal(reply.src_incarnation != 0, 1);
	assert_true(st_wait_log(&n, "V1", " up ("));
	{
		struct lnet_hdr h = mk_put(&r, 2048, false);

		st_fill(src, 2048, 21);
		raw_send_lnet(&r, &h, src, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
		assert_int_equal(tmd.nerr, 0);
		assert_true(st_check(ubuf, 2048, 21));
	}
	/* and back: a bare 72-byte header + payload (no ZC on V1) */
	st_fill(src, 4096, 22);
	st_md_init(&smd);
	assert_int_equal(st_bind(&n, src, 4096, 1, &smd), 0);
	assert_int_equal(ulnet_put(n.ln, NULL, smd.h, ULNET_NOACK_REQ, pid_of("127.0.4.24@tcp"), PORTAL,
				   MB, 0, 0), 0);
	assert_true(raw_recv(&r, &m));
	assert_int_equal(m.rawlen, LNET_HDR_NID4_SIZE);
	assert_int_equal(m.h.type, ULNET_MSG_PUT);
	assert_true(ulnet_nid_same(&m.h.src_nid, &n.nid));
	assert_int_equal(m.h.payload_length, 4096);
	assert_true(st_check(m.payload, 4096, 22));
	rmsg_free(&m);
	assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
	assert_int_equal(smd.nerr, 0);
	st_md_release(&n, &smd);
	st_md_fini(&smd);
	raw_close(&r);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(ubuf);
}

/* --- ulnet dialling ------------------------------------------------------ */


/* protocol = 2: ulnet dials with HELLO V2, typed, and sends on them. */
static void test_active_protocol2(void **state)
{
	static struct st_node n;
	struct node_opts no = { 0 };
	struct raw rs[4];
	struct rmsg put;
	static struct st_md md;
	uint8_t buf[100];
	int lfd, nc;

	(void)state;
	no.sock.protocol = 2;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	lfd = raw_listen("127.0.4.30");
	st_fill(buf, sizeof(buf), 30);
	node_put(&n, "127.0.4.30@tcp", buf, sizeof(buf), &md);
	nc = serve_until_put(lfd, "127.0.4.30@tcp", KSOCK_PROTO_V2, KSOCK_PROTO_V2, rs, 4, 3, &put);
	assert_int_equal(put.h.payload_length, 100);
	assert_true(st_check(put.payload, 100, 30));
	rmsg_free(&put);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.nerr, 0);
	assert_true(st_wait_log(&n, "V2/le", " up ("));
	node_put_done(&n, &md);
	for (int i = 0; i < nc; i++)
		raw_close(&rs[i]);
	close(lfd);
	node_stop(&n);
}

/* typed_conns off (protocol 2): one ANY connection carries everything. */
static void test_active_untyped(void **state)
{
	static struct st_node n;
	struct node_opts no = { 0 };
	struct raw rs[4];
	struct rmsg put;
	static struct st_md md;
	uint8_t buf[5000];
	int lfd, nc;

	(void)state;
	no.sock.protocol = 2;
	no.sock.typed_conns = -1;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	lfd = raw_listen("127.0.4.32");
	st_fill(buf, sizeof(buf), 32);
	node_put(&n, "127.0.4.32@tcp", buf, sizeof(buf), &md);
	nc = serve_until_put(lfd, "127.0.4.32@tcp", KSOCK_PROTO_V2, KSOCK_PROTO_V2, rs, 4, 1, &put);
	assert_int_equal(nc, 1);
	assert_int_equal(rs[0].ctype, SOCKLND_CONN_ANY);
	assert_true(st_check(put.payload, sizeof(buf), 32));
	rmsg_free(&put);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.nerr, 0);
	node_put_done(&n, &md);
	/* and no other connection follows */
	{
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		assert_int_equal(poll(&p, 1, 300), 0);
	}
	raw_close(&rs[0]);
	close(lfd);
	node_stop(&n);
}

/* Default V3: the peer answers with its own V2 HELLO; ulnet redials in V2. */
static void test_active_retry_v2(void **state)
{
	static struct st_node n;
	struct raw first, rs[4];
	struct lnet_acceptor_req req;
	struct ksock_hello h;
	struct rmsg put;
	static struct st_md md;
	uint8_t buf[100];
	int lfd, nc;

	(void)state;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	lfd = raw_listen("127.0.4.31");
	st_fill(buf, sizeof(buf), 31);
	node_put(&n, "127.0.4.31@tcp", buf, sizeof(buf), &md);
	assert_true(raw_accept(lfd, &first, &req, &h));
	assert_int_equal(req.version, 1);
	assert_int_equal(h.version, KSOCK_PROTO_V3);
	/* "I speak V2": our HELLO in V2, with a real type */
	raw_answer(&first, &h, KSOCK_PROTO_V2, ksock_invert_ctype(h.ctype), "127.0.4.31@tcp", 0xdef);
	assert_true(raw_closed(first.fd));
	raw_close(&first);
	assert_true(st_wait_log(&n, "retry with different protocol version", NULL));
	nc = serve_until_put(lfd, "127.0.4.31@tcp", KSOCK_PROTO_V2, KSOCK_PROTO_V2, rs, 4, 1, &put);
	assert_true(st_check(put.payload, 100, 31));
	rmsg_free(&put);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.nerr, 0);
	node_put_done(&n, &md);
	for (int i = 0; i < nc; i++)
		raw_close(&rs[i]);
	close(lfd);
	node_stop(&n);
}

/* --- IPv6 ---------------------------------------------------------------- */

static bool ipv6_loopback_ok(void)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return false;
	raw_sa("::1", 0, &sa, &sl);
	rc = bind(fd, (struct sockaddr *)&sa, sl);
	close(fd);
	return rc == 0;
}

/* A raw V4 peer on ::1 (claiming ::2@tcp): acceptor request v2, HELLO V4,
 * and 96-byte nid16 headers both ways, checked from the raw bytes. */
static void test_ipv6_raw_v4(void **state)
{
	static struct st_node n;
	struct raw r[3];
	struct ksock_hello reply;
	uint8_t *ubuf = calloc(1, 65536), src[4096];
	static struct st_md tmd, smd;
	struct rmsg m;
	static const int types[3] = { SOCKLND_CONN_CONTROL, SOCKLND_CONN_BULK_IN, SOCKLND_CONN_BULK_OUT };

	(void)state;
	if (!ipv6_loopback_ok()) {
		printf("SKIP: IPv6 is disabled (can't bind ::1)\n");
		free(ubuf);
		skip();
	}
	assert_int_equal(node_start(&n, "::1@tcp", NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(raw_connect(&r[i], "::1", "::1", KSOCK_PROTO_V4, i == 1, types[i],
					     "::2@tcp", "::1@tcp", 0x66, &reply),
				 ksock_invert_ctype(types[i]));
		assert_int_equal(reply.version, KSOCK_PROTO_V4);
		assert_true(ulnet_nid_same(&reply.src_nid, &n.nid));
	}
	assert_true(st_wait_log(&n, "V4/le", " up ("));
	{
		struct lnet_hdr h = mk_put(&r[2], 4000, false);

		st_fill(src, 4000, 40);
		raw_send_lnet(&r[2], &h, src, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
		assert_int_equal(tmd.nerr, 0);
		assert_true(st_check(ubuf, 4000, 40));
	}
	st_fill(src, 4096, 41);
	node_put(&n, "::2@tcp", src, 4096, &smd);
	assert_true(raw_recv(&r[1], &m));
	assert_int_equal(m.rawlen, KSOCK_MSG_HDR_SIZE + LNET_HDR_NID16_SIZE);
	assert_int_equal(m.h.type, ULNET_MSG_PUT);
	assert_true(ulnet_nid_same(&m.h.src_nid, &n.nid));
	assert_true(ulnet_nid_same(&m.h.dest_nid, &r[1].me));
	assert_int_equal(m.h.payload_length, 4096);
	assert_true(st_check(m.payload, 4096, 41));
	rmsg_free(&m);
	assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
	assert_int_equal(smd.nerr, 0);
	node_put_done(&n, &smd);
	for (int i = 0; i < 3; i++)
		raw_close(&r[i]);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(ubuf);
}

/* In a network namespace of our own (the child process's): lo up, with
 * fd00:4::2 added beside ::1. Returns 0, or a line number. */
static int netns_setup(void)
{
	struct ifreq ifr;
	struct {
		struct in6_addr addr;
		uint32_t prefixlen;
		int ifindex;
	} r6;
	int fd, dad;

	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return __LINE__;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return __LINE__;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return __LINE__;
	close(fd);
	/* no duplicate address detection: the address is usable at once */
	dad = open("/proc/sys/net/ipv6/conf/lo/accept_dad", O_WRONLY | O_CLOEXEC);
	if (dad >= 0) {
		if (write(dad, "0", 1) != 1)
			return __LINE__;
		close(dad);
	}
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return __LINE__;
	memset(&r6, 0, sizeof(r6));
	inet_pton(AF_INET6, "fd00:4::2", &r6.addr);
	r6.prefixlen = 128;
	r6.ifindex = (int)if_nametoindex("lo");
	if (ioctl(fd, SIOCSIFADDR, &r6) < 0)
		return __LINE__;
	close(fd);
	/* bounded wait until both addresses can be bound */
	for (int i = 0; i < 50; i++) {
		struct sockaddr_storage sa;
		socklen_t sl;
		int t = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

		raw_sa("fd00:4::2", 0, &sa, &sl);
		rc = bind(t, (struct sockaddr *)&sa, sl);
		close(t);
		if (rc == 0)
			return 0;
		usleep(20 * 1000);
	}
	return __LINE__;
}

/* Child body: two ulnet nodes ::1@tcp and fd00:4::2@tcp, PUT and GET. */
static int ipv6_pair_child(void)
{
	static struct st_node a, b;
	uint8_t *src = malloc(65536), *dst = calloc(1, 65536), *back = calloc(1, 65536);
	static struct st_md tmd, smd;
	ulnet_process_id_t tb;
	int rc = netns_setup();

	if (rc)
		return rc < 0 ? 77 : rc;
	if (node_start(&a, "::1@tcp", NULL) || node_start(&b, "fd00:4::2@tcp", NULL))
		return __LINE__;
	tb.nid = b.nid;
	tb.pid = ULNET_PID_LUSTRE;
	st_md_init(&tmd);
	if (st_target(&b, PORTAL, MB, dst, 65536, &tmd))
		return __LINE__;
	st_fill(src, 40000, 50);
	st_md_init(&smd);
	if (st_bind(&a, src, 40000, 2, &smd) ||
	    ulnet_put(a.ln, NULL, smd.h, ULNET_ACK_REQ, tb, PORTAL, MB, 0, 0))
		return __LINE__;
	/* the SEND may come after the ACK: it waits for the ZC-ACK */
	if (!st_md_wait(&smd, ULNET_EVENT_ACK, 1) || !st_md_wait(&tmd, ULNET_EVENT_PUT, 1) ||
	    !st_md_wait(&smd, ULNET_EVENT_SEND, 1) || smd.nerr || tmd.nerr || !st_check(dst, 40000, 50))
		rc = __LINE__;
	st_md_release(&a, &smd);
	st_md_fini(&smd);
	if (!rc) {
		st_md_init(&smd);
		if (st_bind(&a, back, 40000, 2, &smd) ||
		    ulnet_get(a.ln, NULL, smd.h, tb, PORTAL, MB, 0) ||
		    !st_md_wait(&smd, ULNET_EVENT_REPLY, 1) || !st_md_wait(&smd, ULNET_EVENT_SEND, 1) ||
		    smd.nerr || !st_check(back, 40000, 50)) {
			fprintf(stderr, "GET: reply %d send %d nerr %d status %d mlen %u\n",
				smd.n[ULNET_EVENT_REPLY], smd.n[ULNET_EVENT_SEND], smd.nerr, smd.last_status,
				smd.last_mlength);
			rc = __LINE__;
		}
		st_md_release(&a, &smd);
		st_md_fini(&smd);
	}
	/* HELLO V4 on every conn, acceptor request v2, 96-byte headers */
	if (!rc && (!st_wait_log(&b, "V4/le", " up (") || !st_wait_log(&a, "V4/le", " up (")))
		rc = __LINE__;
	if (!rc && !st_wait_log(&b, "acceptor: request v2", "for fd00:4::2@tcp"))
		rc = __LINE__;
	if (!rc && !st_wait_log(&b, "LNet header 96 bytes", NULL))
		rc = __LINE__;
	if (!rc && (log_count(&a, "V3", NULL) || log_count(&b, "V3", NULL)))
		rc = __LINE__;
	if (rc) {
		dump_log(&a, "::1");
		dump_log(&b, "fd00:4::2");
	}
	st_md_release(&b, &tmd);
	node_stop(&a);
	node_stop(&b);
	st_md_fini(&tmd);
	free(src);
	free(dst);
	free(back);
	return rc;
}

static void test_ipv6_pair(void **state)
{
	pid_t pid;
	int status = 0;

	(void)state;
	if (!ipv6_loopback_ok()) {
		printf("SKIP: IPv6 is disabled (can't bind ::1)\n");
		skip();
	}
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r = ipv6_pair_child();

		if (r && r != 77)
			fprintf(stderr, "IPv6 pair: failed at line %d\n", r);
		fflush(NULL);
		_exit(r == 77 ? 77 : r ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		printf("SKIP: can't create a network namespace for a second IPv6 address\n");
		skip();
	}
	if (WEXITSTATUS(status))
		fail_msg("IPv6 pair failed (see above)");
}

/* --- connection rules ---------------------------------------------------- */

/* A new incarnation: every connection to the peer closes ("peer
 * rebooted"), this one is refused (NONE), the next one succeeds. */
static void test_incarnation_change(void **state)
{
	static struct st_node n;
	struct raw r[3], again, ok;
	struct ksock_hello reply;
	uint8_t *ubuf = calloc(1, 65536), src[512];
	static struct st_md tmd;
	static const int types[3] = { SOCKLND_CONN_CONTROL, SOCKLND_CONN_BULK_IN, SOCKLND_CONN_BULK_OUT };
	const char *ip = "127.0.4.40", *nid = "127.0.4.40@tcp";

	(void)state;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(raw_connect(&r[i], ip, U_IP, KSOCK_PROTO_V3, false, types[i], nid, U_NID,
					     1000, NULL), ksock_invert_ctype(types[i]));
	{
		struct lnet_hdr h = mk_put(&r[0], 512, false);

		st_fill(src, 512, 1);
		raw_send_lnet(&r[0], &h, src, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	}
	/* "rebooted" */
	assert_int_equal(raw_connect(&again, ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL, nid,
				     U_NID, 2000, &reply), SOCKLND_CONN_NONE);
	assert_int_equal(reply.version, KSOCK_PROTO_V3);
	for (int i = 0; i < 3; i++) {
		assert_true(raw_closed(r[i].fd));
		raw_close(&r[i]);
	}
	assert_true(raw_closed(again.fd));
	raw_close(&again);
	assert_true(st_wait_log(&n, "peer rebooted", nid));
	/* the next attempt is admitted */
	assert_int_equal(raw_connect(&ok, ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL, nid, U_NID,
				     2000, NULL), SOCKLND_CONN_CONTROL);
	{
		struct lnet_hdr h = mk_put(&ok, 512, false);

		st_fill(src, 512, 2);
		raw_send_lnet(&ok, &h, src, 0, 0, 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 2));
		assert_int_equal(tmd.nerr, 0);
		assert_true(st_check(ubuf, 512, 2));
	}
	raw_close(&ok);
	st_md_release(&n, &tmd);
	node_stop(&n);
	st_md_fini(&tmd);
	free(ubuf);
}

/* verify_peer_nid (beyond the kernel, off by default): a privileged port
 * from 127.0.4.41 claiming 127.0.4.42@tcp is refused, and the real
 * 127.0.4.42's connections stay; 127.0.4.41 claiming its own NID is
 * admitted. Off, the claim is trusted, as the kernel does: the impostor's
 * new incarnation closes the real node's connections. */
static void test_verify_peer_nid(void **state)
{
	static struct st_node n;
	struct node_opts no = { 0 };
	struct raw real, fake, honest;

	(void)state;
	no.verify_peer_nid = 1;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	assert_int_equal(raw_connect(&real, "127.0.4.42", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_CONTROL, "127.0.4.42@tcp", U_NID, 1000, NULL),
			 SOCKLND_CONN_CONTROL);
	assert_int_equal(raw_connect(&fake, "127.0.4.41", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_CONTROL, "127.0.4.42@tcp", U_NID, 2000, NULL),
			 SOCKLND_CONN_NONE);
	assert_true(st_wait_log(&n, "claimed NID is not the connection's source address",
				"127.0.4.42@tcp"));
	assert_true(raw_closed(fake.fd));
	assert_false(raw_closed(real.fd));
	assert_false(st_log_has(&n, "peer rebooted", NULL));
	assert_int_equal(raw_connect(&honest, "127.0.4.41", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_CONTROL, "127.0.4.41@tcp", U_NID, 3000, NULL),
			 SOCKLND_CONN_CONTROL);
	raw_close(&honest);
	raw_close(&fake);
	raw_close(&real);
	node_stop(&n);

	/* off: the kernel's trust */
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	assert_int_equal(raw_connect(&real, "127.0.4.42", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_CONTROL, "127.0.4.42@tcp", U_NID, 1000, NULL),
			 SOCKLND_CONN_CONTROL);
	assert_int_equal(raw_connect(&fake, "127.0.4.41", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_CONTROL, "127.0.4.42@tcp", U_NID, 2000, NULL),
			 SOCKLND_CONN_NONE);
	assert_true(st_wait_log(&n, "peer rebooted", "127.0.4.42@tcp"));
	assert_true(raw_closed(real.fd));
	raw_close(&fake);
	raw_close(&real);
	node_stop(&n);

	/* anything but 0 or 1 is refused */
	no.verify_peer_nid = 2;
	assert_int_equal(node_start(&n, U_NID, &no), -EINVAL);
	node_stop(&n);
}

/* Beyond conns_per_peer of one type: refused with NONE ("duplicate"),
 * except between one IP (loopback). conns_per_peer = 2 admits two. */
static void test_duplicates(void **state)
{
	static struct st_node n;
	struct node_opts no = { 0 };
	struct raw a, b, c, l1, l2, l3;

	(void)state;
	no.conns_per_peer = 2;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	assert_int_equal(raw_connect(&a, "127.0.4.41", U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN,
				     "127.0.4.41@tcp", U_NID, 5, NULL), SOCKLND_CONN_BULK_OUT);
	assert_int_equal(raw_connect(&b, "127.0.4.41", U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN,
				     "127.0.4.41@tcp", U_NID, 5, NULL), SOCKLND_CONN_BULK_OUT);
	assert_int_equal(raw_connect(&c, "127.0.4.41", U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_BULK_IN,
				     "127.0.4.41@tcp", U_NID, 5, NULL), SOCKLND_CONN_NONE);
	assert_true(raw_closed(c.fd));
	assert_true(st_wait_log(&n, "refusing connection: duplicate", "127.0.4.41@tcp"));
	/* the two admitted ones live on */
	{
		struct pollfd p[2] = { { .fd = a.fd, .events = POLLIN }, { .fd = b.fd, .events = POLLIN } };

		assert_int_equal(poll(p, 2, 200), 0);
	}
	/* loopback: from the node's own IP, duplicates are allowed */
	assert_int_equal(raw_connect(&l1, U_IP, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL,
				     "127.0.4.42@tcp", U_NID, 6, NULL), SOCKLND_CONN_CONTROL);
	assert_int_equal(raw_connect(&l2, U_IP, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL,
				     "127.0.4.42@tcp", U_NID, 6, NULL), SOCKLND_CONN_CONTROL);
	assert_int_equal(raw_connect(&l3, U_IP, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL,
				     "127.0.4.42@tcp", U_NID, 6, NULL), SOCKLND_CONN_CONTROL);
	raw_close(&a);
	raw_close(&b);
	raw_close(&c);
	raw_close(&l1);
	raw_close(&l2);
	raw_close(&l3);
	node_stop(&n);
}

/* accept=none: no listener at all, but the node still dials out. */
static void test_accept_none(void **state)
{
	static struct st_node none, peer;
	struct node_opts no = { .accept = "none" };
	struct sockaddr_storage sa;
	socklen_t sl;
	uint8_t *dst = calloc(1, 4096), src[1000];
	static struct st_md tmd, smd;
	int fd;

	(void)state;
	assert_int_equal(node_start(&none, "127.0.4.43@tcp", &no), 0);
	assert_int_equal(node_start(&peer, "127.0.4.44@tcp", NULL), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	raw_sa("127.0.4.43", g_port, &sa, &sl);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sl), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(fd);
	st_md_init(&tmd);
	assert_int_equal(st_target(&peer, PORTAL, MB, dst, 4096, &tmd), 0);
	st_fill(src, sizeof(src), 43);
	node_put(&none, "127.0.4.44@tcp", src, sizeof(src), &smd);
	assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	assert_true(st_check(dst, sizeof(src), 43));
	assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
	assert_int_equal(smd.nerr, 0);
	node_put_done(&none, &smd);
	st_md_release(&peer, &tmd);
	node_stop(&none);
	node_stop(&peer);
	st_md_fini(&tmd);
	free(dst);
}

/* --- reconnect back-off and sock_timeout, on the instance clock --------- */

static void test_reconnect_backoff(void **state)
{
	static const uint64_t kernel[] = { 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000 };
	static const uint64_t custom[] = { 300, 600, 1200, 2400, 2500, 2500 };
	struct node_opts no = { 0 };
	static struct st_node n;
	uint64_t skew = 0;

	(void)state;
	no.skew = &skew;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	backoff_run(&n, &skew, "127.0.4.99@tcp", kernel, 8, 50000);
	node_stop(&n);

	skew = 0;
	no.sock.min_reconnectms = 300;
	no.sock.max_reconnectms = 2500;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	backoff_run(&n, &skew, "127.0.4.98@tcp", custom, 6, 50000);
	node_stop(&n);
}

/* A PUT to `ip`, whose listener accepts but never answers the HELLO, fails
 * with ETIMEDOUT once the instance clock passes a 10 s sock_timeout, and not
 * at 8 s. */
static void expect_handshake_timeout(struct st_node *n, uint64_t *skew, const char *ip)
{
	static struct st_md md;
	uint8_t src[64] = { 0 };
	char nid[64];
	int lfd = raw_listen(ip);
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	snprintf(nid, sizeof(nid), "%s@tcp", ip);
	node_put(n, nid, src, sizeof(src), &md);
	assert_int_equal(poll(&p, 1, ST_WAIT_MS), 1);
	usleep(200 * 1000);
	advance(skew, 8000);
	usleep(300 * 1000);
	assert_int_equal(md.n[ULNET_EVENT_SEND], 0);
	advance(skew, 2500);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.last_status, -ETIMEDOUT);
	assert_true(st_wait_log(n, "handshake timed out", NULL));
	node_put_done(n, &md);
	close(lfd);
}

/* sock_timeout = 10: a message waiting out a back-off, and one behind a
 * handshake that never gets an answer, both fail with ETIMEDOUT after 10 s
 * (and not before). */
static void test_sock_timeout(void **state)
{
	struct node_opts no = { 0 };
	static struct st_node n;
	static struct st_md md;
	uint64_t skew = 0;
	uint8_t src[64];

	(void)state;
	no.skew = &skew;
	no.sock.sock_timeout = 10;
	no.sock.min_reconnectms = 60000;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	/* a refused attempt, then a PUT that waits for the back-off */
	node_put(&n, "127.0.4.97@tcp", src, sizeof(src), &md);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	node_put_done(&n, &md);
	node_put(&n, "127.0.4.97@tcp", src, sizeof(src), &md);
	advance(&skew, 8000);
	usleep(300 * 1000);
	assert_int_equal(md.n[ULNET_EVENT_SEND], 0);
	advance(&skew, 2500);
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	assert_int_equal(md.last_status, -ETIMEDOUT);
	assert_true(st_wait_log(&n, "timed out waiting for a connection", NULL));
	node_put_done(&n, &md);

	/* a listener that never answers the HELLO */
	expect_handshake_timeout(&n, &skew, "127.0.4.96");
	node_stop(&n);
}

/* lnetctl net set --lnd-timeout on a running NI (default 50 s): after the
 * next reaper turn a handshake that gets no answer fails after the new 10 s. */
static void test_lnd_timeout_set_live(void **state)
{
	struct node_opts no = { 0 };
	static struct st_node n;
	uint64_t skew = 0;

	(void)state;
	no.skew = &skew;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	assert_int_equal(ulnet_net_set_lnd_timeout(n.ln, ulnet_mknet(ULNET_LND_TCP, 0), 10), 0);
	advance(&skew, 1500);   /* a reaper turn takes the new value */
	assert_true(st_wait_log(&n, "sock_timeout now 10 s", NULL));
	expect_handshake_timeout(&n, &skew, "127.0.4.95");
	node_stop(&n);
}

/* --- conns_per_peer ------------------------------------------------------ */
/* lnetctl net set --conns-per-peer on a running NI: connections opened
 * afterwards follow the new value (no restart). */
static void test_conns_per_peer_set_live(void **state)
{
	struct node_opts no = { 0 };
	static struct st_node n;
	struct raw rs[6];
	struct rmsg put;
	static struct st_md md;
	uint8_t src[100];
	int lfd, nc, nin = 0, nout = 0;

	(void)state;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	assert_int_equal(ulnet_ni_set_conns_per_peer(n.ln, NULL, 2), 0);
	lfd = raw_listen("127.0.4.51");
	st_fill(src, sizeof(src), 51);
	node_put(&n, "127.0.4.51@tcp", src, sizeof(src), &md);
	nc = serve_until_put(lfd, "127.0.4.51@tcp", KSOCK_PROTO_V3, KSOCK_PROTO_V3, rs, 6, 5, &put);
	rmsg_free(&put);
	node_put_done(&n, &md);
	assert_int_equal(nc, 5);
	for (int i = 0; i < nc; i++) {
		nin += rs[i].ctype == SOCKLND_CONN_BULK_IN;
		nout += rs[i].ctype == SOCKLND_CONN_BULK_OUT;
		raw_close(&rs[i]);
	}
	assert_int_equal(nin, 2);
	assert_int_equal(nout, 2);
	close(lfd);
	node_stop(&n);
}


/* conns_per_peer = 2: ulnet opens CONTROL + 2 BULK_IN + 2 BULK_OUT, and its
 * bulk messages use both BULK_OUT conns. Between two ulnet nodes, the
 * passive side sees two of each too. */
static void test_conns_per_peer(void **state)
{
	struct node_opts no = { .conns_per_peer = 2 };
	static struct st_node n, m2;
	struct raw rs[6];
	struct rmsg put;
	static struct st_md md, tmd;
	uint8_t *src = malloc(8192), *dst = calloc(1, 8192);
	int lfd, nc, per[6] = { 0 }, got = 0, nin = 0, nout = 0;

	(void)state;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	lfd = raw_listen("127.0.4.50");
	st_fill(src, 8192, 50);
	node_put(&n, "127.0.4.50@tcp", src, 100, &md);
	nc = serve_until_put(lfd, "127.0.4.50@tcp", KSOCK_PROTO_V3, KSOCK_PROTO_V3, rs, 6, 5, &put);
	rmsg_free(&put);
	node_put_done(&n, &md);
	assert_int_equal(nc, 5);
	for (int i = 0; i < nc; i++) {
		/* rs[i].ctype is ours: ulnet's BULK_OUT is our BULK_IN */
		nin += rs[i].ctype == SOCKLND_CONN_BULK_IN;
		nout += rs[i].ctype == SOCKLND_CONN_BULK_OUT;
	}
	assert_int_equal(nin, 2);
	assert_int_equal(nout, 2);
	/* ulnet has taken our answers too */
	for (int i = 0; i < 100 && log_count(&n, "active", " up (") < 5; i++)
		usleep(20 * 1000);
	assert_int_equal(log_count(&n, "active BULK_OUT", " up ("), 2);
	assert_int_equal(log_count(&n, "active BULK_IN", " up ("), 2);
	/* 8 bulk PUTs (4 KiB: BULK_OUT, below zc_min_payload) */
	for (int i = 0; i < 8; i++) {
		node_put(&n, "127.0.4.50@tcp", src, 4096, &md);
		assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
		node_put_done(&n, &md);
	}
	while (got < 8) {
		struct rmsg m;
		int i = raw_poll(rs, nc, ST_WAIT_MS);

		assert_true(i >= 0);
		assert_true(raw_recv(&rs[i], &m));
		if (m.k.type == KSOCK_MSG_LNET && m.h.type == ULNET_MSG_PUT) {
			assert_int_equal(rs[i].ctype, SOCKLND_CONN_BULK_IN);
			per[i]++;
			got++;
		}
		rmsg_free(&m);
	}
	for (int i = 0; i < nc; i++) {
		if (rs[i].ctype != SOCKLND_CONN_BULK_IN)
			continue;
		if (per[i] < 2)
			fail_msg("conn %d carried %d of the 8 bulk PUTs", i, per[i]);
	}
	for (int i = 0; i < nc; i++)
		raw_close(&rs[i]);
	close(lfd);

	/* two ulnet nodes */
	assert_int_equal(node_start(&m2, "127.0.4.51@tcp", &no), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&m2, PORTAL, MB, dst, 8192, &tmd), 0);
	node_put(&n, "127.0.4.51@tcp", src, 8192, &md);
	assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	node_put_done(&n, &md);
	for (int i = 0; i < 100 && (log_count(&m2, "passive BULK_IN", " up (") < 2 ||
				    log_count(&m2, "passive BULK_OUT", " up (") < 2); i++)
		usleep(50 * 1000);
	assert_int_equal(log_count(&m2, "passive BULK_IN", " up ("), 2);
	assert_int_equal(log_count(&m2, "passive BULK_OUT", " up ("), 2);
	assert_int_equal(log_count(&m2, "passive CONTROL", " up ("), 1);
	st_md_release(&m2, &tmd);
	st_md_fini(&tmd);
	node_stop(&m2);
	node_stop(&n);
	free(src);
	free(dst);
}

/* --- ZC-ACK forms -------------------------------------------------------- */

/* ulnet accepts the single, pair and range forms, and a piggybacked ACK;
 * each completes exactly the sends it names. */
static void test_zcack_forms_accepted(void **state)
{
	static struct st_node n;
	struct raw r[3];
	static const int types[3] = { SOCKLND_CONN_CONTROL, SOCKLND_CONN_BULK_IN, SOCKLND_CONN_BULK_OUT };
	uint8_t *src = malloc(20000), *ubuf = calloc(1, 65536);
	uint64_t ck[7];
	static struct st_md md, tmd;

	(void)state;
	assert_int_equal(node_start(&n, U_NID, NULL), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(raw_connect(&r[i], "127.0.4.60", U_IP, KSOCK_PROTO_V3, false, types[i],
					     "127.0.4.60@tcp", U_NID, 60, NULL), ksock_invert_ctype(types[i]));
	st_fill(src, 20000, 60);
	st_md_init(&md);
	assert_int_equal(st_bind(&n, src, 20000, ULNET_MD_THRESH_INF, &md), 0);
	for (int i = 0; i < 7; i++) {
		struct rmsg m;

		assert_int_equal(ulnet_put(n.ln, NULL, md.h, ULNET_NOACK_REQ, pid_of("127.0.4.60@tcp"),
					   PORTAL, MB, 0, 0), 0);
		assert_true(raw_recv(&r[1], &m));     /* on ulnet's BULK_OUT */
		assert_int_equal(m.h.payload_length, 20000);
		ck[i] = m.k.zc_cookies[0];
		assert_true(ck[i] > 1);
		if (i)
			assert_true(ck[i] == ck[i - 1] + 1);
		rmsg_free(&m);
	}
	usleep(100 * 1000);
	assert_int_equal(md.n[ULNET_EVENT_SEND], 0);
	raw_send_noop(&r[2], 0, ck[0]);                  /* single */
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 1));
	raw_send_noop(&r[2], ck[3], ck[1]);              /* pair {1, 3} */
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 3));
	{
		struct lnet_hdr h = mk_put(&r[0], 10, false);  /* piggyback {2} */

		raw_send_lnet(&r[0], &h, src, 0, ck[2], 0);
		assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	}
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 4));
	raw_send_noop(&r[2], ck[4], ck[6]);              /* range 4..6 */
	assert_true(st_md_wait(&md, ULNET_EVENT_SEND, 7));
	assert_int_equal(md.nerr, 0);
	assert_int_equal(log_count(&n, "Unknown ZC-ACK", NULL), 0);
	assert_true(st_wait_log(&n, "(pair)", NULL));
	st_md_release(&n, &md);
	st_md_fini(&md);
	for (int i = 0; i < 3; i++)
		raw_close(&r[i]);
	st_md_release(&n, &tmd);
	st_md_fini(&tmd);
	node_stop(&n);
	free(src);
	free(ubuf);
}

/* The start of the owed-ZC-ACK tests: the node with a 64 KiB target, a raw
 * kernel on `ip` that dials CONTROL alone and sends `n` 20000-byte PUTs
 * with the given cookies, all delivered; nothing comes back on CONTROL. */
static void owed_zcacks_start(struct st_node *n, struct st_md *tmd, uint8_t *ubuf, uint8_t *src,
			      struct raw *ctl, const char *ip, int tag, const uint64_t *cookies,
			      int count)
{
	char nid[32];

	snprintf(nid, sizeof(nid), "%s@tcp", ip);
	assert_int_equal(node_start(n, U_NID, NULL), 0);
	st_md_init(tmd);
	assert_int_equal(st_target(n, PORTAL, MB, ubuf, 65536, tmd), 0);
	assert_int_equal(raw_connect(ctl, ip, U_IP, KSOCK_PROTO_V3, false, SOCKLND_CONN_CONTROL,
				     nid, U_NID, tag, NULL),
			 SOCKLND_CONN_CONTROL);
	st_fill(src, 20000, tag);
	for (int i = 0; i < count; i++) {
		struct lnet_hdr h = mk_put(ctl, 20000, false);

		raw_send_lnet(ctl, &h, src, cookies[i], 0, 0);
	}
	assert_true(st_md_wait(tmd, ULNET_EVENT_PUT, count));
	usleep(200 * 1000);     /* the ACKs are queued right after the PUT events */
	assert_int_equal(raw_poll(ctl, 1, 0), -1);   /* nothing on CONTROL */
}

static void owed_zcacks_stop(struct st_node *n, struct st_md *tmd, uint8_t *ubuf, uint8_t *src,
			     struct raw *ctl, struct raw *bulk)
{
	raw_close(ctl);
	raw_close(bulk);
	st_md_release(n, tmd);
	st_md_fini(tmd);
	node_stop(n);
	free(src);
	free(ubuf);
}

/* ZC-ACKs that pile up while ulnet holds no BULK_IN connection go out,
 * once one exists, folded: 5,6,7 as the range [5,7], and 10,12 as the pair
 * [12,10]. */
static void test_zcack_batching(void **state)
{
	static struct st_node n;
	struct raw ctl, bulk;
	uint8_t *src = malloc(20000), *ubuf = calloc(1, 65536);
	static const uint64_t cookies[5] = { 5, 6, 7, 10, 12 };
	static struct st_md tmd;
	struct rmsg m;
	int nnoop = 0;
	bool range = false, pair = false;

	(void)state;
	owed_zcacks_start(&n, &tmd, ubuf, src, &ctl, "127.0.4.61", 61, cookies, 5);
	assert_int_equal(raw_connect(&bulk, "127.0.4.61", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_BULK_OUT, "127.0.4.61@tcp", U_NID, 61, NULL),
			 SOCKLND_CONN_BULK_IN);
	while (nnoop < 2 && raw_poll(&bulk, 1, 2000) == 0) {
		assert_true(raw_recv(&bulk, &m));
		assert_int_equal(m.k.type, KSOCK_MSG_NOOP);
		if (m.k.zc_cookies[0] == 5 && m.k.zc_cookies[1] == 7)
			range = true;
		else if (m.k.zc_cookies[0] == 12 && m.k.zc_cookies[1] == 10)
			pair = true;
		else
			fail_msg("unexpected NOOP [%llu, %llu]", (unsigned long long)m.k.zc_cookies[0],
				 (unsigned long long)m.k.zc_cookies[1]);
		nnoop++;
	}
	assert_true(range);
	assert_true(pair);
	assert_int_equal(raw_poll(&bulk, 1, 200), -1);   /* and nothing more */
	owed_zcacks_stop(&n, &tmd, ubuf, src, &ctl, &bulk);
}

/* More ZC-ACKs pile up than the first 16 (a kernel queues them without
 * limit, and times out any cookie left unacknowledged): all 40 go out once
 * a BULK_IN connection exists. Cookies 100, 102, ... 178 fold into pairs
 * at best, so 20 NOOPs or more. */
static void test_zcack_many_owed(void **state)
{
	static struct st_node n;
	struct raw ctl, bulk;
	uint8_t *src = malloc(20000), *ubuf = calloc(1, 65536);
	enum { NCK = 40 };
	uint64_t cookies[NCK];
	bool seen[NCK] = { false };
	static struct st_md tmd;
	int nseen = 0;
	struct rmsg m;

	(void)state;
	for (int i = 0; i < NCK; i++)
		cookies[i] = 100 + 2 * (uint64_t)i;
	owed_zcacks_start(&n, &tmd, ubuf, src, &ctl, "127.0.4.63", 63, cookies, NCK);
	assert_int_equal(raw_connect(&bulk, "127.0.4.63", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_BULK_OUT, "127.0.4.63@tcp", U_NID, 63, NULL),
			 SOCKLND_CONN_BULK_IN);
	while (nseen < NCK && raw_poll(&bulk, 1, 2000) == 0) {
		struct ksock_zcack z;

		assert_true(raw_recv(&bulk, &m));
		assert_int_equal(m.k.type, KSOCK_MSG_NOOP);
		assert_int_equal(ksock_zcack_parse(m.k.zc_cookies[0], m.k.zc_cookies[1], true, &z), 0);
		for (int i = 0; i < NCK; i++) {
			if (!seen[i] && ksock_zcack_covers(&z, 100 + 2 * (uint64_t)i)) {
				seen[i] = true;
				nseen++;
			}
		}
	}
	if (nseen < NCK) {
		dump_log(&n, "node");
		fail_msg("%d of %d owed ZC-ACKs came", nseen, NCK);
	}
	assert_int_equal(log_count(&n, "dropping ZC-ACK", NULL), 0);
	owed_zcacks_stop(&n, &tmd, ubuf, src, &ctl, &bulk);
}

/* nonblk_zcack off: with only a CONTROL connection the ZC-ACK goes out on
 * it at once instead of waiting for a BULK_IN one. */
static void test_zcack_nonblk_off(void **state)
{
	static struct st_node n;
	static struct st_md tmd;
	struct node_opts no = { 0 };
	struct raw ctl;
	uint8_t *src = malloc(20000), *ubuf = calloc(1, 65536);
	struct rmsg m;

	(void)state;
	no.sock.nonblk_zcack = -1;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	st_md_init(&tmd);
	assert_int_equal(st_target(&n, PORTAL, MB, ubuf, 65536, &tmd), 0);
	assert_int_equal(raw_connect(&ctl, "127.0.4.62", U_IP, KSOCK_PROTO_V3, false,
				     SOCKLND_CONN_CONTROL, "127.0.4.62@tcp", U_NID, 62, NULL),
			 SOCKLND_CONN_CONTROL);
	{
		struct lnet_hdr h = mk_put(&ctl, 20000, false);

		st_fill(src, 20000, 62);
		raw_send_lnet(&ctl, &h, src, 9, 0, 0);
	}
	assert_true(st_md_wait(&tmd, ULNET_EVENT_PUT, 1));
	assert_int_equal(raw_poll(&ctl, 1, ST_WAIT_MS), 0);
	assert_true(raw_recv(&ctl, &m));
	assert_int_equal(m.k.type, KSOCK_MSG_NOOP);
	assert_int_equal(m.k.zc_cookies[0], 0);
	assert_int_equal(m.k.zc_cookies[1], 9);
	raw_close(&ctl);
	st_md_release(&n, &tmd);
	st_md_fini(&tmd);
	node_stop(&n);
	free(src);
	free(ubuf);
}

/* --- tunables at startup -------------------------------------------------- */

/* A bad tunable is refused at startup with a line naming it; ni_info shows
 * the socklnd values in effect. */
static void test_tunables_startup(void **state)
{
	struct node_opts no = { 0 };
	static struct st_node n;
	struct ulnet_ni_info info;
	int rc;

	(void)state;
	no.sock.keepalive_count = 1000;
	rc = node_start(&n, U_NID, &no);
	assert_int_equal(rc, -EINVAL);
	assert_true(st_wait_log(&n, "keepalive_count", "1000"));
	node_stop(&n);

	no.sock.keepalive_count = 0;
	no.sock.protocol = 3;
	rc = node_start(&n, "::1@tcp", &no);
	if (ipv6_loopback_ok()) {
		assert_int_equal(rc, -EINVAL);
		assert_true(st_wait_log(&n, "protocol", "IPv6"));
	}
	node_stop(&n);

	memset(&no, 0, sizeof(no));
	no.sock.sock_timeout = 33;
	no.conns_per_peer = 3;
	assert_int_equal(node_start(&n, U_NID, &no), 0);
	assert_int_equal(ulnet_ni_info(n.ln, 1, &info), 0);
	assert_true(ulnet_nid_same(&info.nid, &n.nid));
	assert_int_equal(info.lnd_timeout, 33);
	assert_int_equal(info.tun.conns_per_peer, 3);
	assert_int_equal(info.tun.tos, -1);
	node_stop(&n);
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
		cmocka_unit_test_teardown(test_tunables_startup, test_teardown),
		cmocka_unit_test_teardown(test_v2_any_le, test_teardown),
		cmocka_unit_test_teardown(test_v2_any_be, test_teardown),
		cmocka_unit_test_teardown(test_v2_typed_le, test_teardown),
		cmocka_unit_test_teardown(test_v2_typed_be, test_teardown),
		cmocka_unit_test_teardown(test_v2_checksum, test_teardown),
		cmocka_unit_test_teardown(test_v1_peer, test_teardown),
		cmocka_unit_test_teardown(test_active_protocol2, test_teardown),
		cmocka_unit_test_teardown(test_active_untyped, test_teardown),
		cmocka_unit_test_teardown(test_active_retry_v2, test_teardown),
		cmocka_unit_test_teardown(test_ipv6_raw_v4, test_teardown),
		cmocka_unit_test_teardown(test_ipv6_pair, test_teardown),
		cmocka_unit_test_teardown(test_incarnation_change, test_teardown),
		cmocka_unit_test_teardown(test_duplicates, test_teardown),
		cmocka_unit_test_teardown(test_accept_none, test_teardown),
		cmocka_unit_test_teardown(test_reconnect_backoff, test_teardown),
		cmocka_unit_test_teardown(test_sock_timeout, test_teardown),
		cmocka_unit_test_teardown(test_lnd_timeout_set_live, test_teardown),
		cmocka_unit_test_teardown(test_conns_per_peer, test_teardown),
		cmocka_unit_test_teardown(test_conns_per_peer_set_live, test_teardown),
		cmocka_unit_test_teardown(test_zcack_forms_accepted, test_teardown),
		cmocka_unit_test_teardown(test_zcack_batching, test_teardown),
		cmocka_unit_test_teardown(test_zcack_many_owed, test_teardown),
		cmocka_unit_test_teardown(test_zcack_nonblk_off, test_teardown),
		cmocka_unit_test_teardown(test_verify_peer_nid, test_teardown),
	};

	if (!need_priv())
		return 0;
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
