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
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
	int lfd = ctl_listen(path, NULL, 0);

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
	assert_int_equal(ctl_listen(path, NULL, 0), -EADDRINUSE);
	close(lfd);
	unlink(path);
	/* No daemon: the connect error comes back as is. */
	assert_int_equal(ctl_call(path, 2, argv, NULL, 0, 1000, &rp), -ENOENT);
	ctl_reply_free(&rp);
	rmdir(dir);
}

#define NOBODY 65534

static bool is_root(const char *what)
{
	if (geteuid() == 0)
		return true;
	fprintf(stderr, "SKIP (needs root): %s\n", what);
	return false;
}

static void expect_why(const char *why, const char *text)
{
	if (!strstr(why, text))
		fail_msg("reason '%s' lacks '%s'", why, text);
}

/* The socket directory: created 0700; a symlink, a directory writable by
 * group/others or owned by another user is refused, with the reason. */
static void test_listen_dir_checks(void **state)
{
	(void)state;
	char top[] = "/tmp/ulnet-proto-XXXXXX";
	char dir[128], path[160], why[512];
	struct stat st;

	assert_non_null(mkdtemp(top));
	/* missing: created 0700 (whatever the umask) */
	snprintf(dir, sizeof(dir), "%s/run", top);
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	mode_t old = umask(0);
	int fd = ctl_listen(path, why, sizeof(why));

	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(lstat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	close(fd);
	unlink(path);
	/* writable by others (a /tmp/ulnet-$UID another user made 0777) */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(ctl_listen(path, why, sizeof(why)), -EPERM);
	expect_why(why, dir);
	expect_why(why, "writable by group or others");
	assert_int_equal(chmod(dir, 0770), 0);
	assert_int_equal(ctl_listen(path, why, sizeof(why)), -EPERM);
	assert_int_equal(chmod(dir, 0755), 0);
	fd = ctl_listen(path, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	/* a symlink to a good directory: refused, not followed */
	char link[160], lpath[200];

	snprintf(link, sizeof(link), "%s/link", top);
	snprintf(lpath, sizeof(lpath), "%s/s.sock", link);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(ctl_listen(lpath, why, sizeof(why)), -EPERM);
	expect_why(why, "symbolic link");
	unlink(link);
	/* a file that is not a socket is never replaced */
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fclose(f);
	assert_int_equal(ctl_listen(path, why, sizeof(why)), -EEXIST);
	expect_why(why, "not a socket");
	unlink(path);
	/* owned by another user (mode 0700): refused */
	if (is_root("the socket directory owned by another user")) {
		assert_int_equal(chmod(dir, 0700), 0);
		assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
		assert_int_equal(ctl_listen(path, why, sizeof(why)), -EPERM);
		expect_why(why, "owned by uid 65534");
	}
	rmdir(dir);
	rmdir(top);
}

/* ulnetctl's side: a socket file owned by another user is refused before
 * connecting (lstat), with the reason; nothing reaches the listener. */
static void test_client_refuses_foreign_socket(void **state)
{
	(void)state;
	if (!is_root("a control socket owned by another user"))
		skip();
	char dir[] = "/tmp/ulnet-proto-XXXXXX";
	char path[128], why[512];
	char *argv[] = { "global", "show" };
	struct ctl_reply rp;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	int lfd = ctl_listen(path, NULL, 0);

	assert_true(lfd >= 0);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	assert_int_equal(ctl_call_ex(path, 2, argv, NULL, 0, 1000, &rp, why, sizeof(why)), -EPERM);
	ctl_reply_free(&rp);
	expect_why(why, "owned by uid 65534");
	expect_why(why, path);
	/* no connection was made (the listener is non-blocking) */
	assert_int_equal(accept(lfd, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/* ulnetctl's side: a root-owned socket file whose server process runs as
 * another user (SO_PEERCRED) is refused after connect, before the request
 * is sent: the server reads nothing. */
static void test_client_refuses_foreign_server(void **state)
{
	(void)state;
	if (!is_root("a control server running as another user"))
		skip();
	char dir[] = "/tmp/ulnet-proto-XXXXXX";
	char why[512];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *argv[] = { "global", "show" };
	struct ctl_reply rp;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s.sock", dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0); /* file owned by root */
	assert_int_equal(chmod(sa.sun_path, 0666), 0);
	int go[2];

	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();

	if (pid == 0) {
		/* the server listens (its credentials) as nobody; exit 0 if it
		 * got a connection and not one byte of request */
		char b[64];
		ssize_t got = 0;

		close(go[0]);
		if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0 || listen(lfd, 4) < 0)
			_exit(2);
		if (write(go[1], "x", 1) != 1)
			_exit(2);
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (poll(&p, 1, 5000) != 1)
			_exit(3);
		int c = accept(lfd, NULL, NULL);

		for (int i = 0; c >= 0 && i < 100; i++) {
			struct pollfd q = { .fd = c, .events = POLLIN };
			ssize_t n;

			if (poll(&q, 1, 2000) != 1 || (n = read(c, b, sizeof(b))) <= 0)
				break;
			got += n;
		}
		_exit(c >= 0 && got == 0 ? 0 : 1);
	}
	close(go[1]);
	char x;

	assert_int_equal(read(go[0], &x, 1), 1); /* listening */
	close(go[0]);
	assert_int_equal(ctl_call_ex(sa.sun_path, 2, argv, NULL, 0, 2000, &rp, why, sizeof(why)),
			 -EPERM);
	ctl_reply_free(&rp);
	expect_why(why, "runs as uid 65534");
	int st = -1;

	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_request_limits),
		cmocka_unit_test(test_reply_roundtrip),
		cmocka_unit_test(test_socket_roundtrip),
		cmocka_unit_test(test_listen_dir_checks),
		cmocka_unit_test(test_client_refuses_foreign_socket),
		cmocka_unit_test(test_client_refuses_foreign_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
