/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_quickack.c - the conn a bulk stream comes in on is left in
 * quick-ACK mode after our ZC-ACKs.
 *
 * b answers each 64 KiB PUT from a with a ZC-ACK NOOP on the connection
 * the PUT came in on, right after the payload. Linux TCP takes a reply that
 * quick for interactive traffic ("pingpong" mode: after one reply since
 * 6.5, three before) and then delays its ACKs of the incoming stream, which
 * cost 1 MiB PUTs 25-40% of their bandwidth on loopback. socklnd asks for
 * quick ACKs after each ZC-ACK; getsockopt(TCP_QUICKACK) reads 0 exactly
 * in pingpong mode. The socket is found among the process's fds as b's end
 * (local address 127.0.0.3) that received the payload bytes (TCP_INFO).
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <linux/tcp.h>   /* its tcp_info has tcpi_bytes_received */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "socklnd_util.h"

#define PORTAL 14
#define MB 0x51
#define PUT_LEN (64 * 1024)   /* >= zc_min_payload (16 KiB): a ZC request */
#define NPUT 8

/* The socket with local address `local_ip` that received the most bytes,
 * if at least `min_bytes`; else -1. */
static int find_stream_socket(uint32_t local_ip, uint64_t min_bytes)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;
	uint64_t most = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), type = 0;
		socklen_t l = sizeof(type);
		struct sockaddr_in sa;
		struct tcp_info ti;

		if (e->d_name[0] == '.' || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) ||
		    type != SOCK_STREAM)
			continue;
		l = sizeof(sa);
		if (getsockname(fd, (struct sockaddr *)&sa, &l) || sa.sin_family != AF_INET ||
		    ntohl(sa.sin_addr.s_addr) != local_ip)
			continue;
		l = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == 0 &&
		    ti.tcpi_bytes_received >= min_bytes && ti.tcpi_bytes_received > most) {
			most = ti.tcpi_bytes_received;
			found = fd;
		}
	}
	closedir(d);
	return found;
}

static void test_stream_conn_keeps_quick_acks(void **state)
{
	static uint8_t src[PUT_LEN], dst[PUT_LEN];
	uint16_t port = st_port();
	struct st_node a, b;
	struct st_md am, bm;
	ulnet_process_id_t target;
	int fd, quick = 0;
	socklen_t l = sizeof(quick);
	uint64_t end;

	(void)state;
	if (!st_is_privileged()) {
		/* a user-space peer opens CONTROL alone and asks for no ZC-ACK */
		printf("SKIP: needs privileged ports (root or CAP_NET_BIND_SERVICE) for BULK_OUT and ZC-ACKs\n");
		skip();
	}
	assert_int_equal(st_pair_start(&a, &am, &b, &bm, port), 0);
	assert_int_equal(st_target(&b, PORTAL, MB, dst, sizeof(dst), &bm), 0);
	st_fill(src, sizeof(src), 3);
	assert_int_equal(st_bind(&a, src, sizeof(src), ULNET_MD_THRESH_INF, &am), 0);
	target.nid = b.nid;
	target.pid = ulnet_pid(b.ln);

	/* A first PUT makes the connections; it may go on CONTROL (without a
	 * ZC request: docs/socklnd.md) while BULK_OUT is being made. */
	assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_NOACK_REQ, target, PORTAL, MB, 0, 0), 0);
	assert_true(st_md_wait(&am, ULNET_EVENT_SEND, 1));
	assert_true(st_wait_log(&a, "BULK_OUT", " up ("));
	/* then one at a time on BULK_OUT: each completes on b's ZC-ACK */
	for (int i = 2; i <= NPUT + 1; i++) {
		assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_NOACK_REQ, target, PORTAL, MB, 0, 0),
				 0);
		assert_true(st_md_wait(&am, ULNET_EVENT_SEND, i));
	}
	assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, NPUT + 1));
	assert_int_equal(am.nerr + bm.nerr, 0);
	assert_true(st_check(dst, sizeof(dst), 3));

	fd = find_stream_socket(0x7f000003, (uint64_t)NPUT / 2 * PUT_LEN);
	assert_true(fd >= 0);
	/* a's SEND can beat b's setsockopt (right after the ZC-ACK's write):
	 * look again for a while */
	end = st_now_ms() + 2000;
	do {
		assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &quick, &l), 0);
		if (quick)
			break;
		usleep(1000);
	} while (st_now_ms() < end);
	assert_int_equal(quick, 1);

	st_pair_stop(&a, &am, &b, &bm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_conn_keeps_quick_acks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
