/* SPDX-License-Identifier: MIT */
/*
 * ctl_proto.h - the ulnetctl <-> ulnetd control protocol.
 *
 * One request and one reply per connection on a Unix stream socket (mode
 * 0600). All integers are 32-bit little-endian.
 *
 *   request: "ULQ1" | argc | argc x (len | bytes) | bloblen | blob
 *            bloblen 0xffffffff: no blob. The blob carries the bytes of a
 *            file the client read for the daemon (import FILE, or stdin).
 *   reply:   "ULR1" | exit code (int32) | outlen | out | errlen | err
 *
 * Limits (a peer that exceeds them is dropped): CTL_MAX_ARGS arguments of at
 * most CTL_MAX_ARG bytes, CTL_MAX_BLOB bytes of blob, CTL_MAX_OUT bytes of
 * each reply stream.
 */
#ifndef ULNET_TOOLS_CTL_PROTO_H
#define ULNET_TOOLS_CTL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "yaml_out.h"

#define CTL_MAX_ARGS 128
#define CTL_MAX_ARG 4096
#define CTL_MAX_BLOB (4u << 20)
#define CTL_MAX_OUT (64u << 20)

struct ctl_request {
	int argc;
	char *argv[CTL_MAX_ARGS + 1]; /* NULL-terminated */
	char *blob;                   /* NUL-terminated, NULL if none */
	size_t bloblen;
};

struct ctl_reply {
	int rc;
	struct ybuf out, err;
};

void ctl_request_free(struct ctl_request *rq);
void ctl_reply_init(struct ctl_reply *rp);
void ctl_reply_free(struct ctl_reply *rp);

/* Encode/decode to/from a byte buffer (used by the fd functions and by
 * tests). decode returns 0, -EPROTO (malformed), -E2BIG (over a limit) or
 * -EAGAIN (incomplete: more bytes needed). */
int ctl_request_encode(int argc, char *const argv[], const char *blob, size_t bloblen,
		       struct ybuf *out);
int ctl_request_decode(const void *buf, size_t len, struct ctl_request *rq, size_t *used);
int ctl_reply_encode(const struct ctl_reply *rp, struct ybuf *out);
int ctl_reply_decode(const void *buf, size_t len, struct ctl_reply *rp, size_t *used);

/* Read a whole request from `fd` within `timeout_ms` in all. Returns 0 or
 * a negative errno: -EPROTO (garbage), -E2BIG (over a limit), -ECONNRESET
 * (the client went away mid-request), -ETIMEDOUT. */
int ctl_read_request(int fd, int timeout_ms, struct ctl_request *rq);
int ctl_write_reply(int fd, int timeout_ms, const struct ctl_reply *rp);

/* Client side: connect to `path`, send, wait for the reply (up to
 * `timeout_ms`, -1 forever). Returns 0 or a negative errno (connect errors
 * are returned as is, so the caller can say why the daemon is unreachable).
 * The server is checked first: the socket file must be a socket owned by
 * root or by us (lstat), and the server process must run as root or as us
 * (SO_PEERCRED); else -EPERM, the request is not sent, and ctl_call_ex
 * puts the reason in `why` (`whylen` bytes, may be NULL). */
int ctl_call(const char *path, int argc, char *const argv[], const char *blob, size_t bloblen,
	     int timeout_ms, struct ctl_reply *rp);
int ctl_call_ex(const char *path, int argc, char *const argv[], const char *blob, size_t bloblen,
		int timeout_ms, struct ctl_reply *rp, char *why, size_t whylen);

/* Default socket path: /run/ulnet/ulnetd.sock as root, else
 * $XDG_RUNTIME_DIR/ulnet/ulnetd.sock, else /tmp/ulnet-$UID/ulnetd.sock. */
void ctl_default_path(char *buf, size_t len);

/* Create the listening socket at `path` (socket mode 0600, a stale socket
 * replaced). Its parent directory is created 0700 if missing; an existing
 * one must be a real directory (not a symlink) owned by us or root and not
 * writable by group or others (-EPERM). Returns fd or -errno, with the
 * reason in `why` (`whylen` bytes, may be NULL) when there is one. */
int ctl_listen(const char *path, char *why, size_t whylen);

#endif
