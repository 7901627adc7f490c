/* SPDX-License-Identifier: MIT */
/* test_ctl_proto.c - control protocol framing: round trips, truncation,
 * limits, malformed input, and a socket round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_proto.h"

static void test_request_roundtrip(void **state)
{
	(void)state;
	char *argv[] = { "net", "add", "--nid", "127.0.0.2@tcp", "" };
	struct ybuf b;
	struct ctl_request rq;
	size_t used = 0;

	ybuf_init(&b);
	assert_int_equal(ctl_request_encode(5, argv, "a: 1\n", 5, &b), 0);
	assert_int_equal(ctl_request_decode(b.s, b.len, &rq, &used), 0);
	assert_int_equal(used, b.len);
	assert_int_equal(rq.argc, 5);
	for (int i = 0; i < 5; i++)
		assert_string_equal(rq.argv[i], argv[i]);
	assert_null(rq.argv[5]);
	assert_string_equal(rq.blob, "a: 1\n");
	ctl_request_free(&rq);
	/* Every strict prefix is incomplete, never an error. */
	for (size_t n = 0; n < b.len; n++) {
		assert_int_equal(ctl_request_decode(b.s, n, &rq, NULL), -EAGAIN);
	}
	ybuf_free(&b);
}

static void test_request_limits(void **state)
{
	(void)state;
	struct ybuf b;
	struct ctl_request rq;
	unsigned char bad[] = { 'U', 'L', 'Q', '1', 0xff, 0xff, 0, 0 };
	unsigned char longarg[] = { 'U', 'L', 'Q', '1', 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f };
	unsigned char nul[] = { 'U', 'L', 'Q', '1', 1, 0, 0, 0, 2, 0, 0, 0, 'a', 0, 0xff, 0xff, 0xff, 0xff };

	assert_int_equal(ctl_request_decode(bad, sizeof(bad), &rq, NULL), -E2BIG);
	assert_int_equal(ctl_request_decode(longarg, sizeof(longarg), &rq, NULL), -E2BIG);
	assert_int_equal(ctl_request_decode(nul, sizeof(nul), &rq, NULL), -EPROTO);
	assert_int_equal(ctl_request_decode("XXXX", 4, &rq, NULL), -EPROTO);
	ybuf_init(&b);
	char *many[CTL_MAX_ARGS + 1];

	for (int i = 0; i <= CTL_MAX_ARGS; i++)
		many[i] = "x";
	assert_int_equal(ctl_request_encode(CTL_MAX_ARGS + 1, many, NULL, 0, &b), -E2BIG);
	ybuf_free(&b);
}

static void test_reply_roundtrip(void **state)
{
	(void)state;
	struct ctl_reply rp, got;
	struct ybuf b;

	ctl_reply_init(&rp);
	rp.rc = 234;
	ybuf_puts(&rp.out, "net:\n");
	ybuf_puts(&rp.err, "---\nadd:\n");
	ybuf_init(&b);
	assert_int_equal(ctl_reply_encode(&rp, &b), 0);
	assert_int_equal(ctl_reply_decode(b.s, b.len, &got, NULL), 0);
	assert_int_equal(got.rc, 234);
	assert_string_equal(ybuf_str(&got.out), "net:\n");
	assert_string_equal(ybuf_str(&got.err), "---\nadd:\n");
	ctl_reply_free(&got);
	assert_int_equal(ctl_reply_decode(b.s, b.len - 1, &got, NULL), -EAGAIN);
	ctl_reply_free(&rp);
	ybuf_free(&b);
}

static void *server(void *arg)
{
	int fd = *(int *)arg;
	struct ctl_request rq;
	struct ctl_reply rp;

	if (ctl_read_request(fd, 2000, &rq) == 0) {
		ctl_reply_init(&rp);
		rp.rc = rq.argc;
		for (int i = 0; i < rq.argc; i++)
			ybuf_printf(&rp.out, "%s|", rq.argv[i]);
		ctl_write_reply(fd, 2000, &rp);
		ctl_reply_free(&rp);
		ctl_request_free(&rq);
	}
	close(fd);
	return NULL;
}

static void test_socket_roundtrip(void **state)
{
	(void)state;
	char dir[] = "/tmp/ulnet-proto-XXXXXX";
	char path[128];

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	int lfd = ctl_listen(path);

	assert_true(lfd >= 0);
	struct ctl_reply rp;
	char *argv[] = { "stats", "show" };
	pid_t pid = fork();

	if (pid == 0) {
		/* child: serve one client */
		for (int i = 0; i < 200; i++) {
			int c = accept(lfd, NULL, NULL);

			if (c >= 0) {
				server(&c);
				_exit(0);
			}
			usleep(10000);
		}
		_exit(1);
	}
	assert_int_equal(ctl_call(path, 2, argv, NULL, 0, 5000, &rp), 0);
	assert_int_equal(rp.rc, 2);
	assert_string_equal(ybuf_str(&rp.out), "stats|show|");
	ctl_reply_free(&rp);
	int st = -1;

	waitpid(pid, &st, 0);
	assert_int_equal(st, 0);
	/* A second daemon on a live path is refused. */
	assert_int_equal(ctl_listen(path), -EADDRINUSE);
	close(lfd);
	unlink(path);
	/* No daemon: the connect error comes back as is. */
	assert_int_equal(ctl_call(path, 2, argv, NULL, 0, 1000, &rp), -ENOENT);
	ctl_reply_free(&rp);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_request_limits),
		cmocka_unit_test(test_reply_roundtrip),
		cmocka_unit_test(test_socket_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
