/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_hostile.c - a raw-socket attacker against a running node.
 * Each case: the node logs the reason (captured through ulnet_opts.log),
 * closes that connection only, and a healthy peer's PUT still goes through
 * afterwards. Cases: garbage bytes, wrong HELLO magic, truncated HELLO then
 * close, an acceptor request for another NID, a dialled peer whose HELLO
 * claims another NID, an unknown HELLO version, an unknown ZC-ACK cookie,
 * payload_length over 1 MiB, a message cut mid-payload, and (accept=secure)
 * an unprivileged source port. Not hostile but odd: headers that arrive in
 * pieces (the receiver decodes whole headers in place, pieces through its
 * header buffer) must still be delivered; a message held in a batch after
 * a long idle time is not taken for a stalled send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "core/lnet_hdr.h"
#include "lnd/socklnd/sock_wire.h"
#include "socklnd_util.h"

#define PORTAL 14
#define VICTIM "127.0.0.3"
#define VICTIM_NID "127.0.0.3@tcp"
#define ATTACKER "127.0.0.4"
#define ATTACKER_NID "127.0.0.4@tcp"

struct world {
	struct st_node healthy, victim;
	uint64_t skew;                 /* the victim's clock runs this far ahead */
	uint16_t port;
	uint8_t *buf;
	struct st_md tmd;
	int nput;
};

static struct world W;

static ulnet_process_id_t id_of(const struct st_node *n)
{
	ulnet_process_id_t id = { .nid = n->nid, .pid = ulnet_pid(n->ln) };

	return id;
}

/* A PUT from the healthy node to the victim completes (SEND, ACK, PUT). */
static bool healthy_put_ok(void)
{
	uint8_t src[5000];
	struct st_md smd;
	bool ok;

	st_fill(src, sizeof(src), (unsigned)W.nput);
	st_md_init(&smd);
	if (st_bind(&W.healthy, src, sizeof(src), 2, &smd) ||
	    ulnet_put(W.healthy.ln, NULL, smd.h, ULNET_ACK_REQ, id_of(&W.victim), PORTAL, 1, 0, 0)) {
		st_md_release(&W.healthy, &smd);
		st_md_fini(&smd);
		return false;
	}
	W.nput++;
	ok = st_md_wait(&smd, ULNET_EVENT_ACK, 1) && st_md_wait(&W.tmd, ULNET_EVENT_PUT, W.nput) &&
	     !smd.nerr && st_check(W.buf, sizeof(src), (unsigned)W.nput - 1);
	st_md_release(&W.healthy, &smd);
	st_md_fini(&smd);
	return ok;
}

static int setup(void **state)
{
	const char *accept = "all";

	(void)state;
	memset(&W, 0, sizeof(W));
	W.port = (uint16_t)(st_port() + 1);
	W.buf = calloc(1, 1u << 20);
	if (st_node_start(&W.healthy, "127.0.0.2@tcp", W.port, accept) ||
	    st_node_start_clock(&W.victim, VICTIM_NID, W.port, accept, &W.skew))
		return -1;
	st_md_init(&W.tmd);
	if (st_target(&W.victim, PORTAL, 1, W.buf, 1u << 20, &W.tmd))
		return -1;
	/* the healthy connections exist before any attack */
	return healthy_put_ok() ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	st_md_release(&W.victim, &W.tmd);
	st_node_stop(&W.healthy);
	st_node_stop(&W.victim);
	st_md_fini(&W.tmd);
	free(W.buf);
	return 0;
}

static int att_connect(const char *dst)
{
	struct sockaddr_in s = { .sin_family = AF_INET }, d = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, ATTACKER, &s.sin_addr);
	inet_pton(AF_INET, dst, &d.sin_addr);
	d.sin_port = htons(W.port);
	assert_int_equal(bind(fd, (struct sockaddr *)&s, sizeof(s)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&d, sizeof(d)), 0);
	return fd;
}

/* The node closed our socket (EOF or reset), within a bounded time. */
static bool closed_by_node(int fd)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;
	char sink[4096];

	while (st_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) > 0) {
			ssize_t n = recv(fd, sink, sizeof(sink), 0);

			if (n <= 0)
				return true;
		}
	}
	return false;
}

static size_t connreq(uint8_t *buf, const char *target)
{
	struct lnet_acceptor_req r = { .version = 1 };

	assert_int_equal(ulnet_nid_parse(target, &r.target, NULL), 0);
	return (size_t)lnet_acceptor_req_encode(&r, false, buf, LNET_ACCEPTOR_REQ_V2_SIZE);
}

static size_t hello(uint8_t *buf, const char *from, const char *to, int ctype)
{
	struct ksock_hello h = { .version = KSOCK_PROTO_V3, .src_pid = ULNET_PID_LUSTRE,
				 .src_incarnation = 0x1234, .ctype = ctype };
	ssize_t n;

	assert_int_equal(ulnet_nid_parse(from, &h.src_nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse(to, &h.dst_nid, NULL), 0);
	n = ksock_hello_encode(&h, false, buf, 128);
	assert_true(n > 0);
	return (size_t)n;
}

/* connreq + HELLO V3 as ATTACKER_NID, then read the victim's reply. */
static int handshake_type(int ctype)
{
	uint8_t buf[256];
	size_t n = connreq(buf, VICTIM_NID);
	int fd = att_connect(VICTIM);

	n += hello(buf + n, ATTACKER_NID, VICTIM_NID, ctype);
	assert_int_equal(send(fd, buf, n, 0), (ssize_t)n);
	assert_int_equal(recv(fd, buf, KSOCK_HELLO_V2_SIZE, MSG_WAITALL), KSOCK_HELLO_V2_SIZE);
	return fd;
}

static int handshake(void)
{
	return handshake_type(SOCKLND_CONN_CONTROL);
}

/* ksock LNET header + PUT header (portal, match bits) into buf. */
static size_t put_hdr_to(uint8_t *buf, uint32_t payload_length, unsigned portal, uint64_t mb)
{
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_LNET };
	struct lnet_hdr h;

	memset(&h, 0, sizeof(h));
	assert_int_equal(ulnet_nid_parse(VICTIM_NID, &h.dest_nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse(ATTACKER_NID, &h.src_nid, NULL), 0);
	h.dest_pid = ULNET_PID_LUSTRE;
	h.src_pid = ULNET_PID_LUSTRE;
	h.type = ULNET_MSG_PUT;
	h.payload_length = payload_length;
	h.msg.put.ack_wmd = LNET_WIRE_HANDLE_NONE;
	h.msg.put.ptl_index = portal;
	h.msg.put.match_bits = mb;
	assert_int_equal(ksock_msg_hdr_encode(&k, false, buf, KSOCK_MSG_HDR_SIZE), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(lnet_hdr_encode_nid4(&h, buf + KSOCK_MSG_HDR_SIZE, LNET_HDR_NID4_SIZE),
			 LNET_HDR_NID4_SIZE);
	return KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE;
}

/* The headers of a PUT to an unmatched portal. */
static size_t put_hdr(uint8_t *buf, uint32_t payload_length)
{
	return put_hdr_to(buf, payload_length, PORTAL + 1, 0);
}

/* A PUT of `len` bytes (seed `seed`) to the victim's target MD. */
static size_t put_to_target(uint8_t *buf, uint32_t len, unsigned seed)
{
	size_t n = put_hdr_to(buf, len, PORTAL, 1);

	st_fill(buf + n, len, seed);
	return n + len;
}

/* Send [from, to) of buf as its own segment, and let the node read it. */
static void send_piece(int fd, const uint8_t *buf, size_t from, size_t to)
{
	assert_int_equal(send(fd, buf + from, to - from, 0), (ssize_t)(to - from));
	usleep(20 * 1000);
}

static void expect_refused(int fd, const char *reason)
{
	assert_true(closed_by_node(fd));
	close(fd);
	assert_true(st_wait_log(&W.victim, reason, NULL));
	assert_true(healthy_put_ok());
}

static void test_garbage(void **state)
{
	int fd = att_connect(VICTIM);

	(void)state;
	assert_int_equal(send(fd, "GET / HTTP/1.0\r\n\r\n", 18, 0), 18);
	expect_refused(fd, "bad acceptor magic");
}

static void test_wrong_hello_magic(void **state)
{
	uint8_t buf[256];
	size_t n = connreq(buf, VICTIM_NID), h;
	int fd = att_connect(VICTIM);

	(void)state;
	h = hello(buf + n, ATTACKER_NID, VICTIM_NID, SOCKLND_CONN_CONTROL);
	buf[n] ^= 0x5a;
	assert_int_equal(send(fd, buf, n + h, 0), (ssize_t)(n + h));
	expect_refused(fd, "bad HELLO magic");
}

static void test_truncated_hello(void **state)
{
	uint8_t buf[256];
	size_t n = connreq(buf, VICTIM_NID);
	int fd = att_connect(VICTIM);

	(void)state;
	n += hello(buf + n, ATTACKER_NID, VICTIM_NID, SOCKLND_CONN_CONTROL);
	assert_int_equal(send(fd, buf, n - 20, 0), (ssize_t)(n - 20));
	shutdown(fd, SHUT_WR);
	expect_refused(fd, "EOF reading HELLO");
}

static void test_request_for_other_nid(void **state)
{
	uint8_t buf[256];
	size_t n = connreq(buf, "127.0.0.99@tcp");
	int fd = att_connect(VICTIM);

	(void)state;
	n += hello(buf + n, ATTACKER_NID, "127.0.0.99@tcp", SOCKLND_CONN_CONTROL);
	assert_int_equal(send(fd, buf, n, 0), (ssize_t)n);
	expect_refused(fd, "right NET, wrong NID");
}

static void test_unknown_hello_version(void **state)
{
	uint8_t buf[256];
	size_t n = connreq(buf, VICTIM_NID), h;
	int fd = att_connect(VICTIM);
	struct ksock_hello reply;

	(void)state;
	h = hello(buf + n, ATTACKER_NID, VICTIM_NID, SOCKLND_CONN_CONTROL);
	buf[n + 4] = 9;     /* version 9 */
	assert_int_equal(send(fd, buf, n + h, 0), (ssize_t)(n + h));
	/* the node tells us its version with ctype NONE, then closes */
	assert_int_equal(recv(fd, buf, KSOCK_HELLO_V2_SIZE, MSG_WAITALL), KSOCK_HELLO_V2_SIZE);
	assert_true(ksock_hello_decode(buf, KSOCK_HELLO_V2_SIZE, &reply) > 0);
	assert_int_equal(reply.version, KSOCK_PROTO_V3);
	assert_int_equal(reply.ctype, SOCKLND_CONN_NONE);
	expect_refused(fd, "unknown HELLO version 9");
}

static void test_unknown_zcack(void **state)
{
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_NOOP, .zc_cookies = { 0, 4242 } };
	uint8_t buf[KSOCK_MSG_HDR_SIZE];
	int fd = handshake();

	(void)state;
	assert_int_equal(ksock_msg_hdr_encode(&k, false, buf, sizeof(buf)), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(send(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	expect_refused(fd, "Unknown ZC-ACK cookie");
}

static void test_payload_too_big(void **state)
{
	uint8_t buf[128];
	size_t n = put_hdr(buf, (1u << 20) + 1);
	int fd = handshake();

	(void)state;
	assert_int_equal(send(fd, buf, n, 0), (ssize_t)n);
	expect_refused(fd, "payload_length 1048577");
}

static void test_cut_mid_payload(void **state)
{
	uint8_t buf[128 + 600];
	size_t n = put_hdr(buf, 1000);
	int fd = handshake();

	(void)state;
	memset(buf + n, 0xab, 600);
	assert_int_equal(send(fd, buf, n + 600, 0), (ssize_t)(n + 600));
	/* give the node time to parse the header and start on the payload */
	usleep(100 * 1000);
	close(fd);
	assert_true(st_wait_log(&W.victim, "EOF in the middle of a message", NULL));
	assert_true(healthy_put_ok());
}

/* Headers cut at every kind of place: inside the ksock header, between the
 * two headers, inside the LNet header, a NOOP cut short; and whole ones
 * behind a payload. Every PUT lands intact, the conn stays up. */
static void test_split_headers(void **state)
{
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_NOOP, .zc_cookies = { 0, KSOCK_KEEPALIVE_COOKIE } };
	const size_t hl = KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE;
	uint8_t buf[3 * (KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE + 100)];
	uint8_t noop[KSOCK_MSG_HDR_SIZE];
	int fd = handshake(), one = 1;
	size_t n1, n2, n3;

	(void)state;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	assert_int_equal(ksock_msg_hdr_encode(&k, false, noop, sizeof(noop)), KSOCK_MSG_HDR_SIZE);
	/* a keepalive NOOP in two pieces */
	send_piece(fd, noop, 0, 10);
	send_piece(fd, noop, 10, sizeof(noop));
	/* PUT 1: cut inside the ksock header, then inside the LNet header */
	n1 = put_to_target(buf, 100, 101);
	send_piece(fd, buf, 0, 10);
	send_piece(fd, buf, 10, KSOCK_MSG_HDR_SIZE + 30);
	send_piece(fd, buf, KSOCK_MSG_HDR_SIZE + 30, n1);
	assert_true(st_md_wait(&W.tmd, ULNET_EVENT_PUT, ++W.nput));
	assert_true(st_check(W.buf, 100, 101));
	/* PUT 2 cut right after its ksock header; PUT 3 whole behind PUT 2's
	 * payload, with a NOOP and a piece of PUT 4's header after it */
	n2 = put_to_target(buf, 100, 102);
	send_piece(fd, buf, 0, KSOCK_MSG_HDR_SIZE);
	send_piece(fd, buf, KSOCK_MSG_HDR_SIZE, n2 - 1);
	n3 = put_to_target(buf + n2, 50, 103);
	memcpy(buf + n2 + n3, noop, sizeof(noop));
	put_to_target(buf + n2 + n3 + sizeof(noop), 60, 104);
	send_piece(fd, buf, n2 - 1, n2 + n3 + sizeof(noop) + hl - 5);
	W.nput += 2;
	assert_true(st_md_wait(&W.tmd, ULNET_EVENT_PUT, W.nput));
	assert_true(st_check(W.buf, 50, 103));
	send_piece(fd, buf, n2 + n3 + sizeof(noop) + hl - 5, n2 + n3 + sizeof(noop) + hl + 60);
	assert_true(st_md_wait(&W.tmd, ULNET_EVENT_PUT, ++W.nput));
	assert_true(st_check(W.buf, 60, 104));
	assert_int_equal(W.tmd.nerr, 0);
	close(fd);
	assert_true(healthy_put_ok());
}

/* The victim dials us: our HELLO claims another NID than the one it dialled. */
static void test_dialled_peer_lies(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	uint8_t buf[256], src[64];
	struct st_md smd;
	ulnet_process_id_t target;
	int lfd, fd, one = 1;
	size_t n;

	(void)state;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, "127.0.0.9", &a.sin_addr);
	a.sin_port = htons(W.port);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 4), 0);

	st_md_init(&smd);
	assert_int_equal(st_bind(&W.victim, src, sizeof(src), 2, &smd), 0);
	assert_int_equal(ulnet_nid_parse("127.0.0.9@tcp", &target.nid, NULL), 0);
	target.pid = ULNET_PID_LUSTRE;
	assert_int_equal(ulnet_put(W.victim.ln, NULL, smd.h, ULNET_NOACK_REQ, target, PORTAL, 1, 0, 0),
			 0);
	{
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		assert_int_equal(poll(&p, 1, ST_WAIT_MS), 1);
	}
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	/* connreq (16) + HELLO V3 (56) from the victim */
	assert_int_equal(recv(fd, buf, LNET_ACCEPTOR_REQ_V1_SIZE + KSOCK_HELLO_V2_SIZE, MSG_WAITALL),
			 LNET_ACCEPTOR_REQ_V1_SIZE + KSOCK_HELLO_V2_SIZE);
	n = hello(buf, "127.0.0.10@tcp", VICTIM_NID, SOCKLND_CONN_CONTROL);
	assert_int_equal(send(fd, buf, n, 0), (ssize_t)n);
	assert_true(closed_by_node(fd));
	close(fd);
	close(lfd);
	assert_true(st_wait_log(&W.victim, "claimed another NID", "127.0.0.10@tcp"));
	/* that PUT fails; the healthy path still works */
	assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
	assert_true(smd.nerr > 0);
	st_md_release(&W.victim, &smd);
	st_md_fini(&smd);
	assert_true(healthy_put_ok());
}

/* Time, through the instance's clock: a silent peer gets a keepalive NOOP
 * [0,1] on the conn the node holds as BULK_IN after 30 s; a message stalled
 * mid-header for more than sock_timeout (50 s) closes the conn and its
 * siblings. */
static void test_keepalive_and_stall(void **state)
{
	uint8_t buf[128];
	struct ksock_msg_hdr k;
	int bulk = handshake_type(SOCKLND_CONN_BULK_OUT);   /* the node's BULK_IN */
	int ctl = handshake();
	struct pollfd p = { .fd = bulk, .events = POLLIN };

	(void)state;
	put_hdr(buf, 100);
	assert_int_equal(send(ctl, buf, 10, 0), 10);        /* a header cut short */
	usleep(100 * 1000);
	__atomic_add_fetch(&W.skew, 35ULL * 1000000000ULL, __ATOMIC_RELEASE);
	assert_int_equal(poll(&p, 1, ST_WAIT_MS), 1);
	assert_int_equal(recv(bulk, buf, KSOCK_MSG_HDR_SIZE, MSG_WAITALL), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(ksock_msg_hdr_decode(buf, KSOCK_MSG_HDR_SIZE, false, &k), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(k.type, KSOCK_MSG_NOOP);
	assert_int_equal(k.zc_cookies[0], 0);
	assert_int_equal(k.zc_cookies[1], KSOCK_KEEPALIVE_COOKIE);
	__atomic_add_fetch(&W.skew, 30ULL * 1000000000ULL, __ATOMIC_RELEASE);
	assert_true(st_wait_log(&W.victim, "timed out receiving", NULL));
	assert_true(closed_by_node(ctl));
	assert_true(closed_by_node(bulk));
	close(ctl);
	close(bulk);
	assert_true(healthy_put_ok());
}

static bool victim_logged(const char *needle)
{
	bool found;

	pthread_mutex_lock(&W.victim.mu);
	found = strstr(W.victim.log, needle) != NULL;
	pthread_mutex_unlock(&W.victim.mu);
	return found;
}

/* A queue's "timed out sending" clock starts when it stops being empty,
 * not at the conn's last queuing: after 45 s (instance clock) of idle
 * conns, a message the victim holds in a batch is not overdue 10 s later;
 * it leaves at the batch end. */
static void test_held_queue_not_overdue(void **state)
{
	uint8_t src[64];
	struct st_md smd;

	(void)state;
	memset(src, 0x5a, sizeof(src));
	st_md_init(&smd);
	assert_int_equal(st_bind(&W.victim, src, sizeof(src), 1, &smd), 0);
	__atomic_add_fetch(&W.skew, 45ULL * 1000000000ULL, __ATOMIC_RELEASE);
	usleep(1500 * 1000);                  /* the reaper's turns at that time */
	assert_int_equal(ulnet_batch_begin(W.victim.ln), 0);
	assert_int_equal(ulnet_put(W.victim.ln, NULL, smd.h, ULNET_NOACK_REQ, id_of(&W.healthy),
				   PORTAL, 1, 0, 0), 0);
	__atomic_add_fetch(&W.skew, 10ULL * 1000000000ULL, __ATOMIC_RELEASE);
	usleep(2000 * 1000);                  /* the reaper looks at the held queue */
	assert_false(victim_logged("timed out sending"));
	assert_int_equal(ulnet_batch_end(W.victim.ln), 0);
	assert_true(st_md_wait(&smd, ULNET_EVENT_SEND, 1));
	assert_int_equal(smd.nerr, 0);
	st_md_release(&W.victim, &smd);
	st_md_fini(&smd);
	assert_true(healthy_put_ok());
}

/* accept=secure: a source port above 1023 is refused before any byte. */
static void test_insecure_port(void **state)
{
	struct st_node sec;
	struct sockaddr_in d = { .sin_family = AF_INET };
	int fd;

	(void)state;
	assert_int_equal(st_node_start(&sec, "127.0.0.5@tcp", (uint16_t)(W.port + 1), "secure"), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, "127.0.0.5", &d.sin_addr);
	d.sin_port = htons((uint16_t)(W.port + 1));
	assert_int_equal(connect(fd, (struct sockaddr *)&d, sizeof(d)), 0);
	assert_true(closed_by_node(fd));
	close(fd);
	assert_true(st_wait_log(&sec, "insecure port", NULL));
	st_node_stop(&sec);
	assert_true(healthy_put_ok());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_wrong_hello_magic),
		cmocka_unit_test(test_truncated_hello),
		cmocka_unit_test(test_request_for_other_nid),
		cmocka_unit_test(test_unknown_hello_version),
		cmocka_unit_test(test_unknown_zcack),
		cmocka_unit_test(test_payload_too_big),
		cmocka_unit_test(test_cut_mid_payload),
		cmocka_unit_test(test_split_headers),
		cmocka_unit_test(test_dialled_peer_lies),
		cmocka_unit_test(test_insecure_port),
		cmocka_unit_test(test_keepalive_and_stall),
		cmocka_unit_test(test_held_queue_not_overdue),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
