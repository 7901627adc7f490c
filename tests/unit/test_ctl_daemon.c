/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_daemon.c - ulnetd against hostile control-socket clients: garbage,
 * oversized and truncated requests, clients that vanish mid-request or
 * trickle bytes, more clients than workers. Each gets an error reply (or
 * nothing, when it is gone) and the daemon keeps serving. Runs the built
 * ulnetd ($ULNET_BIN); skipped when it is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl_proto.h"

static char dir[64], sock_path[96], log_path[96];
static pid_t daemon_pid = -1;

static bool alive(void)
{
	return daemon_pid > 0 && waitpid(daemon_pid, NULL, WNOHANG) == 0;
}

static int start_daemon(void **state)
{
	(void)state;
	const char *bin = getenv("ULNET_BIN");
	char exe[512];

	if (!bin)
		return 0;
	snprintf(exe, sizeof(exe), "%s/ulnetd", bin);
	if (access(exe, X_OK) != 0)
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/ulnet-ctld-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(sock_path, sizeof(sock_path), "%.80s/d.sock", dir);
	snprintf(log_path, sizeof(log_path), "%.80s/d.log", dir);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		int nul = open("/dev/null", 0);
		int log = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (nul >= 0)
			dup2(nul, 1);
		if (log >= 0)
			dup2(log, 2);
		execl(exe, "ulnetd", "--ctl", sock_path, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(sock_path, &st) == 0)
			return 0;
		usleep(20000);
	}
	return -1;
}

static int stop_daemon(void **state)
{
	(void)state;
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
	}
	if (log_path[0])
		unlink(log_path);
	if (dir[0])
		rmdir(dir);
	return 0;
}

static int connect_raw(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read a reply (or EOF) within `ms`; returns 0 with rp filled, -ECONNRESET
 * on EOF without a reply, -ETIMEDOUT. */
static int read_reply(int fd, int ms, struct ctl_reply *rp)
{
	struct ybuf in;
	int rc = -ETIMEDOUT;

	ybuf_init(&in);
	ctl_reply_init(rp);
	for (int i = 0; i < 1000; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[4096];

		if (poll(&p, 1, ms) <= 0)
			break;
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0) {
			rc = -ECONNRESET;
			break;
		}
		ybuf_add(&in, buf, (size_t)n);
		ctl_reply_free(rp);
		rc = ctl_reply_decode(in.s, in.len, rp, NULL);
		if (rc != -EAGAIN)
			break;
		rc = -ETIMEDOUT;
	}
	ybuf_free(&in);
	return rc;
}

static void send_bytes(int fd, const void *p, size_t n)
{
	assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* The daemon still answers a real command. */
static void check_serving(void)
{
	char *argv[] = { "global", "show" };
	struct ctl_reply rp;

	assert_true(alive());
	assert_int_equal(ctl_call(sock_path, 2, argv, NULL, 0, 5000, &rp), 0);
	assert_int_equal(rp.rc, 0);
	assert_non_null(strstr(ybuf_str(&rp.out), "transaction_timeout"));
	ctl_reply_free(&rp);
}

#define NEED_DAEMON()                                             \
	do {                                                      \
		if (daemon_pid <= 0)                              \
			skip(); /* ulnetd not built */            \
	} while (0)

static void expect_error(const void *req, size_t len, const char *text)
{
	struct ctl_reply rp;
	int fd = connect_raw();

	send_bytes(fd, req, len);
	assert_int_equal(read_reply(fd, 7000, &rp), 0);
	assert_int_equal(rp.rc, 255);
	if (!strstr(ybuf_str(&rp.err), text))
		fail_msg("reply '%s' lacks '%s'", ybuf_str(&rp.err), text);
	ctl_reply_free(&rp);
	close(fd);
	check_serving();
}

static void test_garbage(void **state)
{
	(void)state;
	NEED_DAEMON();
	expect_error("GET / HTTP/1.0\r\n\r\n", 18, "malformed request");
	/* a NUL inside an argument */
	unsigned char nul[] = { 'U', 'L', 'Q', '1', 1, 0, 0, 0, 2, 0, 0, 0, 'a', 0, 0xff, 0xff, 0xff, 0xff };

	expect_error(nul, sizeof(nul), "malformed request");
}

static void test_oversized(void **state)
{
	(void)state;
	NEED_DAEMON();
	unsigned char many[] = { 'U', 'L', 'Q', '1', 0xe8, 0x03, 0, 0 };               /* 1000 args */
	unsigned char longarg[] = { 'U', 'L', 'Q', '1', 1, 0, 0, 0, 0, 0, 0, 0x40 };   /* 1 GiB arg */
	unsigned char blob[] = { 'U', 'L', 'Q', '1', 0, 0, 0, 0, 0, 0, 0, 0x10 };      /* 256 MiB file */

	expect_error(many, sizeof(many), "too large");
	expect_error(longarg, sizeof(longarg), "too large");
	expect_error(blob, sizeof(blob), "too large");
}

static void test_truncated_and_gone(void **state)
{
	(void)state;
	NEED_DAEMON();
	unsigned char part[] = { 'U', 'L', 'Q', '1', 2, 0, 0, 0, 3, 0, 0, 0, 'n', 'e' };
	struct ctl_reply rp;

	/* half a request, then the client stops writing: no reply, EOF */
	int fd = connect_raw();

	send_bytes(fd, part, sizeof(part));
	shutdown(fd, SHUT_WR);
	assert_int_equal(read_reply(fd, 7000, &rp), -ECONNRESET);
	ctl_reply_free(&rp);
	close(fd);
	check_serving();

	/* half a request, then the client is gone */
	fd = connect_raw();
	send_bytes(fd, part, sizeof(part));
	close(fd);
	/* connect and vanish without a byte */
	close(connect_raw());
	check_serving();
}

static void test_trickle(void **state)
{
	(void)state;
	NEED_DAEMON();
	/* a request that never completes is cut off after the request
	 * timeout (5 s in all), whatever the trickle */
	unsigned char part[] = { 'U', 'L', 'Q', '1', 1, 0, 0, 0, 100, 0, 0, 0 };
	struct ctl_reply rp;
	struct timespec t0, t1;
	int fd = connect_raw();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	send_bytes(fd, part, sizeof(part));
	int rc = -ETIMEDOUT;

	for (int i = 0; i < 40 && rc == -ETIMEDOUT; i++) {
		if (i < 30)
			send(fd, "x", 1, MSG_NOSIGNAL); /* one byte each 250 ms */
		rc = read_reply(fd, 250, &rp);
		if (rc == -ETIMEDOUT)
			ctl_reply_free(&rp);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(ybuf_str(&rp.err), "incomplete request"));
	assert_true(t1.tv_sec - t0.tv_sec < 9);
	ctl_reply_free(&rp);
	close(fd);
	check_serving();
}

static void test_too_many_clients(void **state)
{
	(void)state;
	NEED_DAEMON();
	int fds[20], busy = 0;

	/* 20 silent clients: 16 occupy the workers, the rest hear "busy" */
	for (int i = 0; i < 20; i++) {
		fds[i] = connect_raw();
		usleep(20000);
	}
	for (int i = 16; i < 20; i++) {
		struct ctl_reply rp;

		if (read_reply(fds[i], 2000, &rp) == 0 && strstr(ybuf_str(&rp.err), "busy"))
			busy++;
		ctl_reply_free(&rp);
	}
	assert_int_equal(busy, 4);
	for (int i = 0; i < 20; i++)
		close(fds[i]);
	usleep(200000);
	check_serving();
}

/* SO_PEERCRED: a client of another uid is refused (told why, exit 255) and
 * logged with its uid and pid, even when the socket's mode lets it in. */
static void test_peercred_refused(void **state)
{
	(void)state;
	NEED_DAEMON();
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP (needs root): a client of another uid\n");
		skip();
	}
	/* loosen the path so uid 65534 can connect at all */
	assert_int_equal(chmod(dir, 0711), 0);
	assert_int_equal(chmod(sock_path, 0666), 0);
	int res[2];

	assert_int_equal(pipe(res), 0);
	pid_t pid = fork();

	if (pid == 0) {
		char *argv[] = { "global", "show" };
		struct ctl_reply rp;
		char out[512];

		close(res[0]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		int rc = ctl_call(sock_path, 2, argv, NULL, 0, 5000, &rp);
		int n = snprintf(out, sizeof(out), "%d %d %s", rc, rp.rc, ybuf_str(&rp.err));

		if (write(res[1], out, (size_t)n) != n)
			_exit(3);
		_exit(0);
	}
	close(res[1]);
	char got[512] = "";
	ssize_t n = 0;

	for (int i = 0; i < 100; i++) {
		struct pollfd p = { .fd = res[0], .events = POLLIN };
		ssize_t k;

		if (poll(&p, 1, 100) <= 0)
			continue;
		k = read(res[0], got + n, sizeof(got) - 1 - (size_t)n);
		if (k <= 0)
			break;
		n += k;
	}
	close(res[0]);
	int st = -1;

	waitpid(pid, &st, 0);
	assert_int_equal(chmod(sock_path, 0600), 0);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (strncmp(got, "0 255 ", 6) != 0 || !strstr(got, "permission denied: uid 65534"))
		fail_msg("the uid 65534 client got '%s'", got);
	/* the daemon logged who it refused */
	char want[128], logtxt[8192] = "";

	snprintf(want, sizeof(want), "refused a control connection from uid 65534 pid %d", (int)pid);
	for (int i = 0; i < 50 && !strstr(logtxt, want); i++) {
		FILE *f = fopen(log_path, "r");

		if (f) {
			size_t k = fread(logtxt, 1, sizeof(logtxt) - 1, f);

			logtxt[k] = '\0';
			fclose(f);
		}
		if (!strstr(logtxt, want))
			usleep(20000);
	}
	if (!strstr(logtxt, want))
		fail_msg("daemon log lacks '%s': %s", want, logtxt);
	check_serving();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_truncated_and_gone),
		cmocka_unit_test(test_trickle),
		cmocka_unit_test(test_too_many_clients),
		cmocka_unit_test(test_peercred_refused),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
