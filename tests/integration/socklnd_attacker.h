/* SPDX-License-Identifier: MIT */
/*
 * socklnd_attacker.h - a child process that opens hostile or idle TCP
 * connections to a node on command, so that the node's process counts
 * only its own fds (/proc/self/fd), memory (VmRSS) and CPU time
 * (getrusage RUSAGE_SELF). Start it with att_start() at the top of main(),
 * before any thread exists; each command answers one int (a count, or
 * -errno) within a bounded wait. Loopback addresses only.
 *
 * Bad connections (ATT_BAD), each its own TCP connection from `src` to
 * dst:port, the kinds taken in turn from `kinds` (a mask):
 *  - GARBAGE: 18 bytes of HTTP              -> "bad acceptor magic"
 *  - BAD_VERSION: acceptor request v9        -> "unknown acceptor request version"
 *  - WRONG_MAGIC: request + HELLO, magic off -> "bad HELLO magic"
 *  - MID_HELLO: request + 3/4 of a HELLO, then our FIN -> "EOF reading HELLO"
 *  - HALF: the request alone, then silence (held open) -> "handshake timed out"
 * The first four wait (bounded) for the node to close, so each costs the
 * node exactly one log line and the accept queue never overflows.
 * ATT_HOLD opens idle connections (no byte sent) and keeps them;
 * ATT_RELEASE closes everything held.
 */
#ifndef ULNET_TEST_SOCKLND_ATTACKER_H
#define ULNET_TEST_SOCKLND_ATTACKER_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lnd/socklnd/sock_wire.h"
#include "ulnet/nid.h"

#pragma GCC diagnostic ignored "-Wunused-function"

enum att_kind {
	ATT_GARBAGE = 1u << 0,
	ATT_BAD_VERSION = 1u << 1,
	ATT_WRONG_MAGIC = 1u << 2,
	ATT_MID_HELLO = 1u << 3,
	ATT_HALF = 1u << 4,
};
#define ATT_IMMEDIATE (ATT_GARBAGE | ATT_BAD_VERSION | ATT_WRONG_MAGIC | ATT_MID_HELLO)

enum att_op { ATT_HOLD = 1, ATT_BAD, ATT_RELEASE, ATT_QUIT };

struct att_cmd {
	int op;
	unsigned kinds;
	int n;
	uint16_t port;
	char src[16], dst[16];       /* dotted IPv4 */
	char target[40];             /* the node's NID */
};

#define ATT_MAX_HELD 4096
#define ATT_REPLY_MS 120000

static pid_t att_pid = -1;
static int att_cmd_fd = -1, att_reply_fd = -1;

/* --- the child ------------------------------------------------------------ */

static int att_held[ATT_MAX_HELD];
static int att_nheld;

static int att_socket(const struct att_cmd *c, bool nonblock)
{
	struct sockaddr_in s = { .sin_family = AF_INET }, d = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 3 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	inet_pton(AF_INET, c->src, &s.sin_addr);
	inet_pton(AF_INET, c->dst, &d.sin_addr);
	d.sin_port = htons(c->port);
	if (bind(fd, (struct sockaddr *)&s, sizeof(s)) < 0 ||
	    (connect(fd, (struct sockaddr *)&d, sizeof(d)) < 0 && errno != EINPROGRESS)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* acceptor request v1 for c->target, then (hello_len > 0) that much of a
 * HELLO V3 from src@tcp; returns the bytes in buf */
static size_t att_handshake_bytes(const struct att_cmd *c, uint8_t *buf, bool whole_hello,
				  bool bad_magic, bool bad_version)
{
	struct lnet_acceptor_req r = { .version = 1 };
	struct ksock_hello h = { .version = KSOCK_PROTO_V3, .src_pid = ULNET_PID_LUSTRE,
				 .src_incarnation = 0x1234, .ctype = SOCKLND_CONN_CONTROL };
	char me[40];
	ssize_t n, hl;

	ulnet_nid_parse(c->target, &r.target, NULL);
	n = lnet_acceptor_req_encode(&r, false, buf, LNET_ACCEPTOR_REQ_V2_SIZE);
	if (n <= 0)
		return 0;
	if (bad_version)
		buf[4] = 9;     /* the version, little-endian */
	if (!whole_hello)
		return (size_t)n;
	snprintf(me, sizeof(me), "%s@tcp", c->src);
	ulnet_nid_parse(me, &h.src_nid, NULL);
	h.dst_nid = r.target;
	hl = ksock_hello_encode(&h, false, buf + n, 128);
	if (hl <= 0)
		return 0;
	if (bad_magic)
		buf[n] ^= 0x5a;
	return (size_t)(n + hl);
}

/* Wait (bounded by SO_RCVTIMEO) until the node closes. */
static bool att_wait_closed(int fd)
{
	char sink[512];

	for (int i = 0; i < 16; i++) {
		ssize_t r = recv(fd, sink, sizeof(sink), 0);

		if (r == 0 || (r < 0 && errno != EINTR))
			return r == 0 || errno == ECONNRESET;
	}
	return false;
}

static int att_bad_one(const struct att_cmd *c, unsigned kind)
{
	uint8_t buf[256];
	size_t n = 0;
	int fd = att_socket(c, false);
	bool ok;

	if (fd < 0)
		return fd;
	switch (kind) {
	case ATT_GARBAGE:
		memcpy(buf, "GET / HTTP/1.0\r\n\r\n", 18);
		n = 18;
		break;
	case ATT_BAD_VERSION:
		n = att_handshake_bytes(c, buf, false, false, true);
		break;
	case ATT_WRONG_MAGIC:
		n = att_handshake_bytes(c, buf, true, true, false);
		break;
	case ATT_MID_HELLO:
		n = att_handshake_bytes(c, buf, true, false, false) - 20;
		break;
	case ATT_HALF:
		n = att_handshake_bytes(c, buf, false, false, false);
		break;
	}
	if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n) {
		close(fd);
		return -EIO;
	}
	if (kind == ATT_HALF) {
		if (att_nheld < ATT_MAX_HELD) {
			att_held[att_nheld++] = fd;
			return 0;
		}
		close(fd);
		return -ENOSPC;
	}
	if (kind == ATT_MID_HELLO)
		shutdown(fd, SHUT_WR);
	ok = att_wait_closed(fd);
	close(fd);
	return ok ? 0 : -ETIMEDOUT;
}

static int att_do(const struct att_cmd *c)
{
	int done = 0;

	switch (c->op) {
	case ATT_HOLD: {
		int first = att_nheld;

		for (int i = 0; i < c->n && att_nheld < ATT_MAX_HELD; i++) {
			int fd = att_socket(c, true);

			if (fd < 0)
				return fd;
			att_held[att_nheld++] = fd;
		}
		/* count those the kernel completed within 4 s (a burst can
		 * overflow the accept queue: a dropped SYN is sent again after
		 * 1 s, then 3 s) */
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = first; i < att_nheld; i++) {
			struct pollfd p = { .fd = att_held[i], .events = POLLOUT };
			int err = 0, left;
			socklen_t l = sizeof(err);

			clock_gettime(CLOCK_MONOTONIC, &t);
			left = 4000 - (int)((t.tv_sec - t0.tv_sec) * 1000 +
					    (t.tv_nsec - t0.tv_nsec) / 1000000);
			if (poll(&p, 1, left > 0 ? left : 0) == 1 &&
			    getsockopt(att_held[i], SOL_SOCKET, SO_ERROR, &err, &l) == 0 && !err)
				done++;
		}
		return done;
	}
	case ATT_BAD: {
		unsigned kinds[5], nk = 0;

		for (unsigned k = ATT_GARBAGE; k <= ATT_HALF; k <<= 1)
			if (c->kinds & k)
				kinds[nk++] = k;
		if (!nk)
			return -EINVAL;
		for (int i = 0; i < c->n; i++) {
			int rc = att_bad_one(c, kinds[(unsigned)i % nk]);

			if (rc < 0)
				return rc;
			done++;
		}
		return done;
	}
	case ATT_RELEASE:
		done = att_nheld;
		while (att_nheld > 0)
			close(att_held[--att_nheld]);
		return done;
	default:
		return -EINVAL;
	}
}

static void att_child(int cmd_fd, int reply_fd)
{
	struct rlimit rl;
	struct att_cmd c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	while (read(cmd_fd, &c, sizeof(c)) == (ssize_t)sizeof(c) && c.op != ATT_QUIT) {
		int rc = att_do(&c);

		if (write(reply_fd, &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
			break;
	}
	_exit(0);
}

/* --- the parent ----------------------------------------------------------- */

/* Fork the attacker; call before any thread is started. 0 or -errno. */
static int att_start(void)
{
	int cmd[2], reply[2];

	if (pipe2(cmd, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(reply, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	att_pid = fork();
	if (att_pid < 0)
		return -errno;
	if (att_pid == 0) {
		close(cmd[1]);
		close(reply[0]);
		att_child(cmd[0], reply[1]);
	}
	close(cmd[0]);
	close(reply[1]);
	att_cmd_fd = cmd[1];
	att_reply_fd = reply[0];
	return 0;
}

static void att_stop(void)
{
	struct att_cmd c = { .op = ATT_QUIT };

	if (att_pid <= 0)
		return;
	if (write(att_cmd_fd, &c, sizeof(c)) != (ssize_t)sizeof(c))
		kill(att_pid, SIGKILL);
	close(att_cmd_fd);
	close(att_reply_fd);
	waitpid(att_pid, NULL, 0);
	att_pid = -1;
}

/* Send a command; the answer comes with att_wait(). */
static int att_send(int op, unsigned kinds, int n, const char *src, const char *dst,
		    uint16_t port, const char *target)
{
	struct att_cmd c = { .op = op, .kinds = kinds, .n = n, .port = port };

	snprintf(c.src, sizeof(c.src), "%s", src ? src : "");
	snprintf(c.dst, sizeof(c.dst), "%s", dst ? dst : "");
	snprintf(c.target, sizeof(c.target), "%s", target ? target : "");
	return write(att_cmd_fd, &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : -EIO;
}

/* The answer of the last command, waiting at most `ms`: -ETIMEDOUT if
 * none came (yet). */
static int att_wait(int ms)
{
	struct pollfd p = { .fd = att_reply_fd, .events = POLLIN };
	int rc;

	if (poll(&p, 1, ms) != 1)
		return -ETIMEDOUT;
	if (read(att_reply_fd, &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
		return -EIO;
	return rc;
}

static int att_run(int op, unsigned kinds, int n, const char *src, const char *dst,
		   uint16_t port, const char *target)
{
	int rc = att_send(op, kinds, n, src, dst, port, target);

	return rc ? rc : att_wait(ATT_REPLY_MS);
}

/* --- what the node's process uses ------------------------------------------ */

/* Open fds (fcntl on each number below the soft limit: no fd needed, so
 * it works at the limit too). */
static int proc_fd_count(void)
{
	struct rlimit rl;
	int n = 0, top = 4096;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536)
		top = (int)rl.rlim_cur > top ? (int)rl.rlim_cur : top;
	for (int fd = 0; fd < top; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static long proc_rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* CPU time (user + system) of this process, all threads, in ms. */
static uint64_t proc_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

#endif
