/* SPDX-License-Identifier: MIT */
/*
 * test_metrics_daemon.c - ulnetd --metrics against its clients, good and
 * hostile. Runs the built ulnetd ($ULNET_BIN; skipped when it is missing)
 * with --metrics on 127.0.41.1 (a subnet no other test uses):
 *  - a scrape: 200, the 0.0.4 content type, Content-Length, the body; HEAD:
 *    the headers alone;
 *  - a client that connects and sends nothing, and one that trickles a byte
 *    a second: while they hang on, scrapes still answer at once, and so does
 *    the control socket; after the 5 s bound each is told 408 and closed;
 *  - garbage, a bad header, a request head over 8 KiB, another method or
 *    path: 400, 431, 405, 404, the connection closed, the daemon up;
 *  - more clients than the endpoint serves at once: the extra one is told
 *    503 at once; when the others go, scrapes are served again;
 *  - SIGTERM with a silent scrape client connected: ulnetd exits promptly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "metrics_http.h"

#define ADDR "127.0.41.1"
/* What "at once" means here: well inside the 5 s a hostile client may
 * hold its slot, with room for a loaded machine (sanitizers, ctest -j). */
#define QUICK_MS 2500

static char dir[64], sock_path[96], log_path[96];
static pid_t daemon_pid = -1;
static int daemon_status = -1;  /* waitpid's, once it is gone */
static unsigned port;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool alive(void)
{
	int st;

	if (daemon_pid <= 0 || daemon_status != -1)
		return false;
	if (waitpid(daemon_pid, &st, WNOHANG) == 0)
		return true;
	daemon_status = st;
	return false;
}

/* A port free on ADDR now (the kernel's choice of an ephemeral one). */
static unsigned free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned p = 0;

	inet_pton(AF_INET, ADDR, &sa.sin_addr);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		p = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return p;
}

static int start_daemon(void **state)
{
	(void)state;
	const char *bin = getenv("ULNET_BIN");
	char exe[512], maddr[64];

	if (!bin)
		return 0;
	snprintf(exe, sizeof(exe), "%s/ulnetd", bin);
	if (access(exe, X_OK) != 0)
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/ulnet-metricsd-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(sock_path, sizeof(sock_path), "%.80s/d.sock", dir);
	snprintf(log_path, sizeof(log_path), "%.80s/d.log", dir);
	port = free_port();
	if (!port)
		return -1;
	snprintf(maddr, sizeof(maddr), ADDR ":%u", port);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		int nul = open("/dev/null", 0);
		int log = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (nul >= 0)
			dup2(nul, 1);
		if (log >= 0)
			dup2(log, 2);
		execl(exe, "ulnetd", "--ctl", sock_path, "--accept", "none", "--log-level", "info",
		      "--metrics", maddr, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(sock_path, &st) == 0)
			return 0;
		if (!alive())
			break;
		usleep(20000);
	}
	fprintf(stderr, "ulnetd --metrics %s did not start (see %s)\n", maddr, log_path);
	return -1;
}

static void dump_log(void)
{
	char buf[4096];
	FILE *f = fopen(log_path, "r");
	size_t n;

	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

static int stop_daemon(void **state)
{
	(void)state;
	if (daemon_pid > 0 && alive()) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
	}
	if (getenv("ULNET_KEEP_LOG"))
		dump_log();
	if (log_path[0])
		unlink(log_path);
	if (dir[0])
		rmdir(dir);
	return 0;
}

#define NEED_DAEMON()                                             \
	do {                                                      \
		if (daemon_pid <= 0)                              \
			skip(); /* ulnetd not built */            \
	} while (0)

static int connect_metrics(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, ADDR, &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read until EOF (or `ms` without data): what came, NUL-terminated, to
 * free. */
static char *read_all(int fd, int ms)
{
	struct ybuf in;

	ybuf_init(&in);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[8192];

		if (poll(&p, 1, ms) <= 0)
			break;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0)
			break;
		ybuf_add(&in, buf, (size_t)n);
	}
	ybuf_add(&in, "", 0);
	return in.s ? in.s : calloc(1, 1);
}

/* One request, its whole answer (read within `ms`). */
static char *http(const char *req, size_t len, int ms)
{
	int fd = connect_metrics();

	assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	char *a = read_all(fd, ms);

	close(fd);
	return a;
}

static void has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in:\n%.2000s", what, text);
}

/* A scrape, answered 200 within `ms`. */
static void scrape_ok(int ms)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: " ADDR "\r\n\r\n";
	uint64_t t0 = now_ms();
	char *a = http(req, sizeof(req) - 1, ms);
	uint64_t took = now_ms() - t0;

	has(a, "HTTP/1.1 200 OK\r\n");
	has(a, "\nulnet_lnet_up 1\n");
	if (took > (uint64_t)ms)
		fail_msg("a scrape took %llu ms", (unsigned long long)took);
	free(a);
}

/* The control socket still answers. */
static void check_serving(void)
{
	char *argv[] = { "global", "show" };
	struct ctl_reply rp;

	assert_true(alive());
	assert_int_equal(ctl_call(sock_path, 2, argv, NULL, 0, 5000, &rp), 0);
	assert_int_equal(rp.rc, 0);
	ctl_reply_free(&rp);
}

static void test_scrape(void **state)
{
	(void)state;
	NEED_DAEMON();
	static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char head[] = "HEAD /metrics HTTP/1.0\r\n\r\n";
	char *a = http(get, sizeof(get) - 1, 5000);

	has(a, "HTTP/1.1 200 OK\r\n");
	has(a, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n");
	has(a, "Connection: close\r\n");
	has(a, "# TYPE ulnet_send_total counter\n");
	/* Content-Length is the body's */
	const char *cl = strstr(a, "Content-Length: ");
	const char *body = strstr(a, "\r\n\r\n");

	assert_non_null(cl);
	assert_non_null(body);
	assert_int_equal(strtoul(cl + 16, NULL, 10), strlen(body + 4));
	char *h = http(head, sizeof(head) - 1, 5000);

	has(h, "HTTP/1.1 200 OK\r\n");
	has(h, "Content-Length: ");
	assert_string_equal(strstr(h, "\r\n\r\n"), "\r\n\r\n");   /* no body */
	free(a);
	free(h);
	check_serving();
}

/* A client that connects and sends nothing, one that trickles a byte a
 * second: neither holds up a scrape or the control socket; each is told
 * 408 and closed after the bound. */
static void test_silent_and_trickle(void **state)
{
	(void)state;
	NEED_DAEMON();
	static const char trickle[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	uint64_t t0 = now_ms();
	int idle = connect_metrics(), slow = connect_metrics();
	size_t sent = 0;

	/* (a byte a second while the bound has not passed: on a slow machine
	 * the scrapes take some of it) */
	for (int s = 0; s < 4 && now_ms() - t0 < METRICS_HTTP_TIMEOUT_MS - 1500; s++) {
		assert_int_equal(send(slow, trickle + sent, 1, MSG_NOSIGNAL), 1);
		sent++;
		scrape_ok(QUICK_MS);
		check_serving();
		usleep(1000 * 1000);
	}
	/* past the 5 s bound: both told and closed (by 6.5 s at most) */
	char *a = read_all(idle, 3000 + QUICK_MS), *b = read_all(slow, 3000 + QUICK_MS);
	uint64_t took = now_ms() - t0;

	has(a, "HTTP/1.1 408 Request Timeout\r\n");
	has(b, "HTTP/1.1 408 Request Timeout\r\n");
	if (took < METRICS_HTTP_TIMEOUT_MS - 100 || took > METRICS_HTTP_TIMEOUT_MS + QUICK_MS)
		fail_msg("closed after %llu ms, want about %d", (unsigned long long)took,
			 METRICS_HTTP_TIMEOUT_MS);
	free(a);
	free(b);
	close(idle);
	close(slow);
	scrape_ok(QUICK_MS);
	check_serving();
}

static void expect_status(const void *req, size_t len, const char *status)
{
	char *a = http(req, len, 5000);

	if (strncmp(a, status, strlen(status)) != 0)
		fail_msg("answer '%.200s', want '%s'", a, status);
	has(a, "Connection: close\r\n");
	free(a);
	assert_true(alive());
}

static void test_bad_requests(void **state)
{
	(void)state;
	NEED_DAEMON();
	static const char garbage[] = "garbage\r\n\r\n";
	static const char badhdr[] = "GET /metrics HTTP/1.1\r\nHost x\r\n\r\n";
	static const char post[] = "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
	static const char other[] = "GET /api/v1/query HTTP/1.1\r\n\r\n";
	unsigned char binary[512];
	char *big = malloc(METRICS_HTTP_MAX_REQUEST + 100);

	assert_non_null(big);
	expect_status(garbage, sizeof(garbage) - 1, "HTTP/1.1 400 Bad Request\r\n");
	expect_status(badhdr, sizeof(badhdr) - 1, "HTTP/1.1 400 Bad Request\r\n");
	for (size_t i = 0; i < sizeof(binary); i++)
		binary[i] = (unsigned char)(i * 37 + 11);
	binary[sizeof(binary) - 2] = '\n';
	binary[sizeof(binary) - 1] = '\n';
	expect_status(binary, sizeof(binary), "HTTP/1.1 400 Bad Request\r\n");
	/* a head that never ends within 8 KiB */
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	memset(big + 26, 'a', METRICS_HTTP_MAX_REQUEST + 100 - 26);
	expect_status(big, METRICS_HTTP_MAX_REQUEST + 100, "HTTP/1.1 431 ");
	expect_status(post, sizeof(post) - 1, "HTTP/1.1 405 Method Not Allowed\r\n");
	char *a = http(post, sizeof(post) - 1, 5000);

	has(a, "Allow: GET, HEAD\r\n");
	free(a);
	expect_status(other, sizeof(other) - 1, "HTTP/1.1 404 Not Found\r\n");
	/* a client gone before its request came whole: nothing to answer */
	int fd = connect_metrics();

	assert_int_equal(send(fd, "GET /met", 8, MSG_NOSIGNAL), 8);
	close(fd);
	free(big);
	scrape_ok(QUICK_MS);
	check_serving();
}

/* More clients than the endpoint serves at once. */
static void test_too_many(void **state)
{
	(void)state;
	NEED_DAEMON();
	int fds[METRICS_HTTP_MAX_CONNS];

	for (int i = 0; i < METRICS_HTTP_MAX_CONNS; i++)
		fds[i] = connect_metrics();
	/* the next is refused at once, told why */
	static const char req[] = "GET /metrics HTTP/1.1\r\n\r\n";
	uint64_t t0 = now_ms();
	char *a = http(req, sizeof(req) - 1, 2000);

	has(a, "HTTP/1.1 503 Service Unavailable\r\n");
	assert_true(now_ms() - t0 < QUICK_MS);
	free(a);
	check_serving();
	for (int i = 0; i < METRICS_HTTP_MAX_CONNS; i++)
		close(fds[i]);
	/* their slots come back as the endpoint sees them go */
	for (int i = 0; i < 50; i++) {
		a = http(req, sizeof(req) - 1, 2000);
		bool ok = strncmp(a, "HTTP/1.1 200", 12) == 0;

		free(a);
		if (ok)
			break;
		usleep(20000);
	}
	scrape_ok(QUICK_MS);
}

/* SIGTERM while a silent client holds a slot: out within the control
 * socket's grace, not after the client's 5 s. Runs last. */
static void test_stop_with_client(void **state)
{
	(void)state;
	NEED_DAEMON();
	int fd = connect_metrics();

	scrape_ok(QUICK_MS);
	uint64_t t0 = now_ms();

	kill(daemon_pid, SIGTERM);
	for (int i = 0; i < 400 && alive(); i++)
		usleep(10000);
	assert_false(alive());
	if (now_ms() - t0 > 3000)
		fail_msg("ulnetd took %llu ms to stop", (unsigned long long)(now_ms() - t0));
	/* (a sanitizer's report would be another status) */
	if (!WIFEXITED(daemon_status) || WEXITSTATUS(daemon_status) != 0)
		fail_msg("ulnetd ended with status 0x%x, want exit 0", daemon_status);
	daemon_pid = -1;
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrape),
		cmocka_unit_test(test_silent_and_trickle),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_stop_with_client),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
