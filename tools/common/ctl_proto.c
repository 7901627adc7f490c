/* SPDX-License-Identifier: MIT */
/* ctl_proto.c - framing and socket handling of the control protocol. */
#include "ctl_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAGIC "ULQ1"
#define REP_MAGIC "ULR1"
#define NO_BLOB 0xffffffffu

void ctl_request_free(struct ctl_request *rq)
{
	for (int i = 0; i < rq->argc && i < CTL_MAX_ARGS; i++)
		free(rq->argv[i]);
	free(rq->blob);
	memset(rq, 0, sizeof(*rq));
}

void ctl_reply_init(struct ctl_reply *rp)
{
	rp->rc = 0;
	ybuf_init(&rp->out);
	ybuf_init(&rp->err);
}

void ctl_reply_free(struct ctl_reply *rp)
{
	ybuf_free(&rp->out);
	ybuf_free(&rp->err);
}

static void put32(struct ybuf *b, uint32_t v)
{
	unsigned char c[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	ybuf_add(b, (const char *)c, 4);
}

static uint32_t get32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ctl_request_encode(int argc, char *const argv[], const char *blob, size_t bloblen,
		       struct ybuf *out)
{
	if (argc < 0 || argc > CTL_MAX_ARGS || (blob && bloblen > CTL_MAX_BLOB))
		return -E2BIG;
	ybuf_add(out, REQ_MAGIC, 4);
	put32(out, (uint32_t)argc);
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (n > CTL_MAX_ARG)
			return -E2BIG;
		put32(out, (uint32_t)n);
		ybuf_add(out, argv[i], n);
	}
	put32(out, blob ? (uint32_t)bloblen : NO_BLOB);
	if (blob)
		ybuf_add(out, blob, bloblen);
	return out->oom ? -ENOMEM : 0;
}

/* Cursor over an input buffer. */
struct cur {
	const unsigned char *p;
	size_t len, off;
};

static int cur_u32(struct cur *c, uint32_t *v)
{
	if (c->len - c->off < 4)
		return -EAGAIN;
	*v = get32(c->p + c->off);
	c->off += 4;
	return 0;
}

static int cur_bytes(struct cur *c, size_t n, char **out)
{
	if (c->len - c->off < n)
		return -EAGAIN;
	char *s = malloc(n + 1);

	if (!s)
		return -ENOMEM;
	memcpy(s, c->p + c->off, n);
	s[n] = '\0';
	c->off += n;
	*out = s;
	return 0;
}

int ctl_request_decode(const void *buf, size_t len, struct ctl_request *rq, size_t *used)
{
	struct cur c = { buf, len, 0 };
	uint32_t v;
	int rc;

	memset(rq, 0, sizeof(*rq));
	if (len < 4)
		return -EAGAIN;
	if (memcmp(buf, REQ_MAGIC, 4) != 0)
		return -EPROTO;
	c.off = 4;
	if ((rc = cur_u32(&c, &v)) != 0)
		return rc;
	if (v > CTL_MAX_ARGS)
		return -E2BIG;
	int argc = (int)v;

	for (int i = 0; i < argc; i++) {
		if ((rc = cur_u32(&c, &v)) != 0)
			goto fail;
		if (v > CTL_MAX_ARG) {
			rc = -E2BIG;
			goto fail;
		}
		if ((rc = cur_bytes(&c, v, &rq->argv[i])) != 0)
			goto fail;
		rq->argc = i + 1;
		if (strlen(rq->argv[i]) != v) { /* embedded NUL */
			rc = -EPROTO;
			goto fail;
		}
	}
	if ((rc = cur_u32(&c, &v)) != 0)
		goto fail;
	if (v != NO_BLOB) {
		if (v > CTL_MAX_BLOB) {
			rc = -E2BIG;
			goto fail;
		}
		if ((rc = cur_bytes(&c, v, &rq->blob)) != 0)
			goto fail;
		rq->bloblen = v;
	}
	rq->argv[rq->argc] = NULL;
	if (used)
		*used = c.off;
	return 0;
fail:
	ctl_request_free(rq);
	return rc;
}

int ctl_reply_encode(const struct ctl_reply *rp, struct ybuf *out)
{
	if (rp->out.len > CTL_MAX_OUT || rp->err.len > CTL_MAX_OUT)
		return -E2BIG;
	ybuf_add(out, REP_MAGIC, 4);
	put32(out, (uint32_t)rp->rc);
	put32(out, (uint32_t)rp->out.len);
	ybuf_add(out, ybuf_str(&rp->out), rp->out.len);
	put32(out, (uint32_t)rp->err.len);
	ybuf_add(out, ybuf_str(&rp->err), rp->err.len);
	return out->oom ? -ENOMEM : 0;
}

int ctl_reply_decode(const void *buf, size_t len, struct ctl_reply *rp, size_t *used)
{
	struct cur c = { buf, len, 0 };
	uint32_t v;
	char *s = NULL;
	int rc;

	ctl_reply_init(rp);
	if (len < 4)
		return -EAGAIN;
	if (memcmp(buf, REP_MAGIC, 4) != 0)
		return -EPROTO;
	c.off = 4;
	if ((rc = cur_u32(&c, &v)) != 0)
		return rc;
	rp->rc = (int32_t)v;
	for (int k = 0; k < 2; k++) {
		if ((rc = cur_u32(&c, &v)) != 0)
			goto fail;
		if (v > CTL_MAX_OUT) {
			rc = -E2BIG;
			goto fail;
		}
		if ((rc = cur_bytes(&c, v, &s)) != 0)
			goto fail;
		ybuf_add(k == 0 ? &rp->out : &rp->err, s, v);
		free(s);
		s = NULL;
	}
	if (used)
		*used = c.off;
	return 0;
fail:
	ctl_reply_free(rp);
	return rc;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `ev` on fd until `deadline` (ms, <0 none). */
static int wait_fd(int fd, short ev, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };

	for (int tries = 0; tries < 1000000; tries++) {
		int to = -1;

		if (deadline >= 0) {
			long long left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			to = left > 60000 ? 60000 : (int)left;
		}
		int n = poll(&p, 1, to);

		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
	return -ETIMEDOUT;
}

/* Read one chunk, waiting until `deadline` (ms, <0 none). */
static int read_chunk(int fd, long long deadline, size_t max, struct ybuf *in)
{
	char chunk[16384];

	if (in->len > max)
		return -E2BIG;
	int rc = wait_fd(fd, POLLIN, deadline);

	if (rc)
		return rc;
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	ybuf_add(in, chunk, (size_t)n);
	return in->oom ? -ENOMEM : 0;
}

/* Read one chunk with a per-chunk timeout. */
static int read_msg(int fd, int timeout_ms, size_t max, struct ybuf *in)
{
	return read_chunk(fd, timeout_ms < 0 ? -1 : now_ms() + timeout_ms, max, in);
}

int ctl_read_request(int fd, int timeout_ms, struct ctl_request *rq)
{
	struct ybuf in;
	int rc;
	/* Bound: the largest legal request, read in 16 KiB chunks. */
	size_t max = 16 + (size_t)CTL_MAX_ARGS * (CTL_MAX_ARG + 4) + CTL_MAX_BLOB;

	/* One deadline for the whole request: a client trickling bytes
	 * cannot hold a worker longer than timeout_ms. */
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	ybuf_init(&in);
	for (size_t iter = 0; iter < max / 1 + 2; iter++) {
		rc = read_chunk(fd, deadline, max, &in);
		if (rc)
			break;
		rc = ctl_request_decode(in.s, in.len, rq, NULL);
		if (rc != -EAGAIN)
			break;
	}
	ybuf_free(&in);
	return rc;
}

static int write_all(int fd, const char *p, size_t len, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	size_t off = 0;

	while (off < len) {
		int rc = wait_fd(fd, POLLOUT, deadline);

		if (rc)
			return rc;
		ssize_t n = send(fd, p + off, len - off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

int ctl_write_reply(int fd, int timeout_ms, const struct ctl_reply *rp)
{
	struct ybuf b;

	ybuf_init(&b);
	int rc = ctl_reply_encode(rp, &b);

	if (rc == 0)
		rc = write_all(fd, ybuf_str(&b), b.len, timeout_ms);
	ybuf_free(&b);
	return rc;
}

static int fill_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* Set `why` (if any) to a formatted reason. */
static void set_why(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!why || !whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

static bool uid_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/*
 * Before connecting: the socket file must be a socket (lstat: a symlink is
 * refused) owned by root or by us. After connecting: the server process
 * (SO_PEERCRED, its credentials when it called listen()) must run as root
 * or as us. Either failure is -EPERM with the reason in `why`: a socket
 * another user swapped in must never see our request nor answer it.
 */
static int check_server_file(const char *path, char *why, size_t whylen)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode)) {
		set_why(why, whylen, "%s is not a socket%s", path,
			S_ISLNK(st.st_mode) ? " (a symbolic link is refused)" : "");
		return -EPERM;
	}
	if (!uid_trusted(st.st_uid)) {
		set_why(why, whylen,
			"the socket %s is owned by uid %u, not by root or uid %u (another user may have replaced it)",
			path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

static int check_server_cred(int fd, const char *path, char *why, size_t whylen)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		int rc = -errno;

		set_why(why, whylen, "cannot get the credentials of the server at %s: %s", path,
			strerror(-rc));
		return rc;
	}
	if (!uid_trusted(cr.uid)) {
		set_why(why, whylen,
			"the server at %s (pid %d) runs as uid %u, not as root or uid %u",
			path, (int)cr.pid, (unsigned)cr.uid, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

int ctl_call_ex(const char *path, int argc, char *const argv[], const char *blob, size_t bloblen,
		int timeout_ms, struct ctl_reply *rp, char *why, size_t whylen)
{
	struct sockaddr_un sa;
	struct ybuf b;
	int rc = fill_addr(path, &sa);

	ctl_reply_init(rp);
	if (why && whylen)
		why[0] = '\0';
	if (rc)
		return rc;
	if ((rc = check_server_file(path, why, whylen)) != 0)
		return rc;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((rc = check_server_cred(fd, path, why, whylen)) != 0) {
		close(fd);
		return rc;
	}
	ybuf_init(&b);
	rc = ctl_request_encode(argc, argv, blob, bloblen, &b);
	if (rc == 0)
		rc = write_all(fd, ybuf_str(&b), b.len, 10000);
	ybuf_reset(&b);
	/* A daemon that refuses us (busy, permission) answers and closes
	 * without reading: the request fails to go out, the answer is there. */
	int wrc = rc == -EPIPE || rc == -ECONNRESET ? rc : 0;

	if (wrc)
		rc = 0;
	/* The reply may be large; bounded by CTL_MAX_OUT twice. */
	for (size_t iter = 0; rc == 0 && iter < (2 * (size_t)CTL_MAX_OUT) / 1024 + 16; iter++) {
		rc = read_msg(fd, timeout_ms, 2 * (size_t)CTL_MAX_OUT + 16, &b);
		if (rc)
			break;
		struct ctl_reply tmp;

		rc = ctl_reply_decode(b.s, b.len, &tmp, NULL);
		if (rc == 0) {
			*rp = tmp;
			break;
		}
		if (rc != -EAGAIN)
			break;
		rc = 0;
	}
	if (rc && wrc)
		rc = wrc;
	ybuf_free(&b);
	close(fd);
	return rc;
}

int ctl_call(const char *path, int argc, char *const argv[], const char *blob, size_t bloblen,
	     int timeout_ms, struct ctl_reply *rp)
{
	return ctl_call_ex(path, argc, argv, blob, bloblen, timeout_ms, rp, NULL, 0);
}

void ctl_default_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0)
		snprintf(buf, len, "/run/ulnet/ulnetd.sock");
	else if (xdg && xdg[0] == '/')
		snprintf(buf, len, "%s/ulnet/ulnetd.sock", xdg);
	else
		snprintf(buf, len, "/tmp/ulnet-%u/ulnetd.sock", (unsigned)getuid());
}

/*
 * The directory that holds the socket: created 0700 when missing; an
 * existing one must be a directory (lstat: a symbolic link is refused),
 * owned by us or by root, and not writable by group or others, else
 * another user could swap the socket for theirs. Returns 0 or -errno with
 * the reason in `why`.
 */
static int check_sock_dir(const char *dir, char *why, size_t whylen)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int rc = -errno;

		set_why(why, whylen, "cannot create the directory %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (lstat(dir, &st) < 0) {
		int rc = -errno;

		set_why(why, whylen, "cannot stat the directory %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (S_ISLNK(st.st_mode)) {
		set_why(why, whylen, "%s is a symbolic link (refused: the socket directory must be a real directory)", dir);
		return -EPERM;
	}
	if (!S_ISDIR(st.st_mode)) {
		set_why(why, whylen, "%s is not a directory", dir);
		return -ENOTDIR;
	}
	if (!uid_trusted(st.st_uid)) {
		set_why(why, whylen,
			"the directory %s is owned by uid %u, not by root or uid %u (refused: its owner could replace the socket)",
			dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		set_why(why, whylen,
			"the directory %s has mode %04o, writable by group or others (refused: they could replace the socket; chmod go-w or use another --ctl path)",
			dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int ctl_listen(const char *path, char *why, size_t whylen)
{
	struct sockaddr_un sa;
	struct stat st;
	int rc = fill_addr(path, &sa);

	if (why && whylen)
		why[0] = '\0';
	if (rc) {
		set_why(why, whylen, "socket path too long (at most %zu bytes)", sizeof(sa.sun_path) - 1);
		return rc;
	}
	/* The parent directory (one level), private to us. */
	char dir[sizeof(sa.sun_path)];

	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');

	if (slash == dir)
		slash[1] = '\0'; /* "/x.sock": the root directory */
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if ((rc = check_sock_dir(dir, why, whylen)) != 0)
		return rc;
	/* Only a socket is ever replaced, never another kind of file. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		set_why(why, whylen, "%s exists and is not a socket", path);
		return -EEXIST;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	/* A live daemon on the path: refuse; a stale socket file: replace. */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (probe >= 0) {
		if (connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			close(fd);
			set_why(why, whylen, "a daemon is already listening on %s", path);
			return -EADDRINUSE;
		}
		close(probe);
	}
	/* Bound and listening under a temporary name first, then renamed
	 * into place: a client that sees the path can connect at once (bound
	 * on the path itself, it could meet the socket before listen() and
	 * get ECONNREFUSED), and a stale socket file is replaced atomically. */
	struct sockaddr_un tsa = sa;
	int n = snprintf(tsa.sun_path, sizeof(tsa.sun_path), "%s/.ulnetd-%ld.sock",
			 strcmp(dir, "/") == 0 ? "" : dir, (long)getpid());
	bool staged = n > 0 && (size_t)n < sizeof(tsa.sun_path);

	if (!staged)
		unlink(path);
	else
		unlink(tsa.sun_path);
	mode_t old = umask(0177);

	rc = bind(fd, (struct sockaddr *)(staged ? &tsa : &sa), sizeof(sa));
	umask(old);
	if (rc < 0 || chmod(staged ? tsa.sun_path : path, 0600) < 0 || listen(fd, 64) < 0 ||
	    (staged && rename(tsa.sun_path, path) < 0)) {
		rc = -errno;
		if (staged)
			unlink(tsa.sun_path);
		close(fd);
		return rc;
	}
	return fd;
}
