/* SPDX-License-Identifier: MIT */
/*
 * sock_rx.c - the receive state machine of an established connection:
 * ksock header (24 B, none on V1) -> LNet header (the conn's codec) ->
 * lnet_parse() -> recv() gives the MD fragments -> readv() the payload
 * straight into them, discard what exceeds mlen -> lnet_finalize() -> ZC-ACK.
 * Runs on the loop thread; recv() may come from any thread, later.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"
#include "util/ul_sys.h"

#define KSOCK_RX_BUDGET 256         /* messages per turn, then yield */

/* The conn whose header this (loop) thread is handing to lnet_parse(). */

static void ksock_rx_error(struct ksock_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void ksock_rx_error(struct ksock_conn *c, int err, const char *fmt, ...)
{
	char desc[160], msg[200];
	va_list ap;

	ksock_conn_describe(c, desc, sizeof(desc));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ksock_log_limited(c->net, KSOCK_RL_CONN, fmt, &c->peer_sa, ULNET_LOG_ERROR,
			  "%s: %s; closing it and its siblings", desc, msg);
	ksock_conn_close(c, err, true);
}

static void ksock_rx_reset(struct ksock_conn *c)
{
	c->rx_state = KSOCK_RX_KHDR;
	c->rx_have = 0;
	c->rx_need = c->proto->khdr_size;
	c->rx_started = false;
	c->rx_msg = NULL;
	c->rx_recv_called = false;
}

/* Refill the read-ahead buffer (it is empty): >0 bytes, 0 EAGAIN, <0 error
 * (-ECONNRESET: EOF). A short read means the socket was drained: with
 * edge-triggered epoll any later byte brings a new EPOLLIN, so rx_ready
 * drops without the extra recv() that would only say EAGAIN. */
static KSOCK_ALWAYS_INLINE ssize_t ksock_rx_fill(struct ksock_conn *c)
{
	for (;;) {
		ssize_t n = ul_sys_recv(c->fd, c->rx_buf, sizeof(c->rx_buf), MSG_DONTWAIT);

		if (n > 0) {
			c->rx_reads++;
			KSOCK_RX_COUNT(c->rx_bytes, (uint64_t)n);
			c->rx_buf_off = 0;
			c->rx_buf_len = (size_t)n;
			if ((size_t)n < sizeof(c->rx_buf))
				c->rx_ready = false;
			c->rx_last_progress = ksock_stamp_now(c->net);
			c->peer->last_alive = c->rx_last_progress;
			return n;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			c->rx_ready = false;
			return 0;
		}
		return -errno;
	}
}

static inline size_t ksock_rx_buffered(const struct ksock_conn *c)
{
	return c->rx_buf_len - c->rx_buf_off;
}

/* Header bytes up to rx_need, from the read-ahead buffer: 1 done, 0 EAGAIN,
 * <0 error (-ECONNRESET: EOF). */
static int ksock_rx_hdr(struct ksock_conn *c)
{
	while (c->rx_have < c->rx_need) {
		size_t avail = ksock_rx_buffered(c), want = c->rx_need - c->rx_have;

		if (avail) {
			size_t n = avail < want ? avail : want;

			memcpy(c->rx_hbuf + c->rx_have, c->rx_buf + c->rx_buf_off, n);
			c->rx_buf_off += n;
			c->rx_have += n;
			c->rx_started = true;
			continue;
		}
		if (!c->rx_ready)
			return 0;
		ssize_t rc = ksock_rx_fill(c);
		if (rc <= 0)
			return (int)rc;
	}
	return 1;
}

/* Advance the fragment cursor by `got` bytes. */
static void ksock_rx_advance(struct ksock_conn *c, size_t got)
{
	c->rx_mlen_left -= got;
	while (got > 0 && c->rx_iov_idx < c->rx_niov) {
		size_t rest = c->rx_iov[c->rx_iov_idx].iov_len - c->rx_iov_off;

		if (got < rest) {
			c->rx_iov_off += got;
			got = 0;
		} else {
			got -= rest;
			c->rx_iov_idx++;
			c->rx_iov_off = 0;
		}
	}
}

/* Copy what the read-ahead buffer holds of the payload, then drop what it
 * holds of the excess. */
static KSOCK_ALWAYS_INLINE void ksock_rx_payload_from_buf(struct ksock_conn *c)
{
	size_t avail = ksock_rx_buffered(c);

	while (c->rx_mlen_left && avail && c->rx_iov_idx < c->rx_niov) {
		const struct iovec *v = &c->rx_iov[c->rx_iov_idx];
		size_t rest = v->iov_len - c->rx_iov_off;
		size_t n = avail < rest ? avail : rest;

		if (n > c->rx_mlen_left)
			n = c->rx_mlen_left;
		memcpy((char *)v->iov_base + c->rx_iov_off, c->rx_buf + c->rx_buf_off, n);
		c->rx_buf_off += n;
		avail -= n;
		c->rx_mlen_left -= n;
		/* n <= rest: at most this fragment is done (ksock_rx_advance
		 * without its loop) */
		if (n == rest) {
			c->rx_iov_idx++;
			c->rx_iov_off = 0;
		} else {
			c->rx_iov_off += n;
		}
	}
	if (!c->rx_mlen_left && c->rx_discard_left && ksock_rx_buffered(c)) {
		size_t n = ksock_rx_buffered(c);

		if (n > c->rx_discard_left)
			n = c->rx_discard_left;
		c->rx_buf_off += n;
		c->rx_discard_left -= n;
	}
}

/* The payload: from the read-ahead buffer, then (small rest) through it or
 * (large rest) with readv() straight into the fragments; then discard the
 * excess. 1 done, 0 EAGAIN, <0 error. */
static int ksock_rx_payload(struct ksock_conn *c)
{
	for (;;) {
		ksock_rx_payload_from_buf(c);
		if (!c->rx_mlen_left && !c->rx_discard_left)
			return 1;
		if (!c->rx_ready)
			return 0;
		if (c->rx_mlen_left + c->rx_discard_left <= KSOCK_RX_COPY_MAX ||
		    !c->rx_mlen_left) {
			/* small rest (and the next headers) in one recv; the
			 * excess over mlen is read into the buffer and dropped */
			ssize_t rc = ksock_rx_fill(c);

			if (rc <= 0)
				return (int)rc;
			continue;
		}
		break;
	}
	while (c->rx_mlen_left) {
		struct iovec iov[64];
		unsigned n = 0, i = c->rx_iov_idx;
		size_t off = c->rx_iov_off, left = c->rx_mlen_left;
		ssize_t got;

		for (; i < c->rx_niov && n < 64 && left; i++) {
			size_t len = c->rx_iov[i].iov_len - off;

			iov[n].iov_base = (char *)c->rx_iov[i].iov_base + off;
			iov[n].iov_len = len < left ? len : left;
			left -= iov[n].iov_len;
			off = 0;
			n++;
		}
		got = readv(c->fd, iov, (int)n);
		if (got == 0)
			return -ECONNRESET;
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->rx_ready = false;
				return 0;
			}
			return -errno;
		}
		c->rx_reads++;
		KSOCK_RX_COUNT(c->rx_bytes, (uint64_t)got);
		c->rx_last_progress = ksock_stamp_now(c->net);
		c->peer->last_alive = c->rx_last_progress;
		ksock_rx_advance(c, (size_t)got);
	}
	while (c->rx_discard_left) {
		ssize_t rc = ksock_rx_fill(c);

		if (rc <= 0)
			return (int)rc;
		ksock_rx_payload_from_buf(c);
	}
	return 1;
}

/* Checksum of what arrived (only when nothing was truncated or dropped). */
static bool ksock_rx_csum_ok(struct ksock_conn *c)
{
	uint32_t crc = KSOCK_CSUM_SEED;
	size_t left = c->rx_mlen;

	if (c->rx_khdr.csum == 0 || !c->rx_msg || c->rx_mlen != c->rx_lhdr.payload_length)
		return true;
	if (c->proto->csum_hdr) {
		uint8_t kh[KSOCK_MSG_HDR_SIZE];

		/* V2: ksock header with the csum field zeroed, then LNet header */
		memcpy(kh, c->rx_hbuf, sizeof(kh));
		memset(kh + 4, 0, 4);
		crc = ksock_csum(crc, kh, sizeof(kh));
		crc = ksock_csum(crc, c->rx_hbuf + KSOCK_MSG_HDR_SIZE, c->proto->codec->size);
	}
	for (unsigned i = 0; i < c->rx_niov && left; i++) {
		size_t len = c->rx_iov[i].iov_len < left ? c->rx_iov[i].iov_len : left;

		crc = ksock_csum(crc, c->rx_iov[i].iov_base, len);
		left -= len;
	}
	return crc == c->rx_khdr.csum;
}

/* The ksock header is in (its bytes at `kb`: rx_hbuf, or in place in
 * rx_buf): NOOP handled here; LNET goes on to its header.
 * Returns 0 to go on, <0 after closing. */
static KSOCK_ALWAYS_INLINE int ksock_rx_khdr_done(struct ksock_conn *c, const uint8_t *kb)
{
	struct ksock_net *net = c->net;
	ssize_t n = c->proto->khdr_decode(kb, c->proto->khdr_size, &c->rx_khdr);
	struct ksock_msg_hdr *m = &c->rx_khdr;
	int rc = 0;

	if (n < 0) {
		ksock_rx_error(c, -EPROTO, "malformed ksock header (%zd)", n);
		return -EPROTO;
	}
	if (m->type != KSOCK_MSG_NOOP && m->type != KSOCK_MSG_LNET) {
		ksock_rx_error(c, -EPROTO, "unknown ksock message type %#x", m->type);
		return -EPROTO;
	}
	if (m->type == KSOCK_MSG_NOOP && m->csum != 0) {
		uint8_t kh[KSOCK_MSG_HDR_SIZE];
		uint32_t crc = KSOCK_CSUM_SEED;

		/* V2 covers the NOOP's own header; V3/V4 cover nothing, so any
		 * non-zero value is a mismatch there */
		memcpy(kh, kb, sizeof(kh));
		memset(kh + 4, 0, 4);
		if (c->proto->csum_hdr)
			crc = ksock_csum(crc, kh, sizeof(kh));
		if (crc != m->csum) {
			ksock_rx_error(c, -EPROTO, "NOOP checksum error (wire %#x, data %#x)", m->csum,
				       crc);
			return -EPROTO;
		}
	}
	if (m->zc_cookies[1] != 0) {
		struct ksock_done done = { 0 };

		ksock_lock(net);
		rc = ksock_handle_zcack_locked(net, c->peer, m->type == KSOCK_MSG_NOOP ? m->zc_cookies[0] : 0,
					       m->zc_cookies[1], &done);
		ksock_unlock(net);
		ksock_done_run(net, &done);
		if (rc < 0) {
			ksock_rx_error(c, -EPROTO, "Unknown ZC-ACK cookie: %llu, %llu",
				       m->type == KSOCK_MSG_NOOP ? (unsigned long long)m->zc_cookies[0] : 0ULL,
				       (unsigned long long)m->zc_cookies[1]);
			return -EPROTO;
		}
	}
	if (m->type == KSOCK_MSG_NOOP) {
		KSOCK_RX_COUNT(c->rx_msgs, 1);
		ksock_rx_reset(c);
		return 0;
	}
	c->rx_state = KSOCK_RX_LHDR;
	c->rx_need = c->rx_have + c->proto->codec->size;
	return 0;
}

/* LNet header in (its bytes at `lb`): hand it to the core. Returns 1 if
 * the payload can be read now, 0 to wait for recv(), <0 after closing. */
static KSOCK_ALWAYS_INLINE int ksock_rx_lhdr_done(struct ksock_conn *c, const uint8_t *lb)
{
	struct ksock_net *net = c->net;
	ssize_t n = c->proto->codec->decode(lb, c->proto->codec->size, &c->rx_lhdr);
	struct lnet_hdr *h = &c->rx_lhdr;
	bool called;
	int rc;

	if (n < 0) {
		ksock_rx_error(c, -EPROTO, "malformed LNet header (%zd)", n);
		return -EPROTO;
	}
	if (h->payload_length > KSOCK_MAX_PAYLOAD) {
		ksock_rx_error(c, -EPROTO, "payload_length %u > %u (1 MiB)", h->payload_length,
			       KSOCK_MAX_PAYLOAD);
		return -EPROTO;
	}
	if (c->userspace) {
		/* a user-space peer's identity comes from its socket */
		h->src_nid = c->id_nid;
		h->src_pid = c->id_pid;
	}
	/* No lock before lnet_parse(): another thread can call recv() only
	 * once the core published the message (under its own lock, after
	 * these stores). recv() on this thread, inside lnet_parse() (the
	 * usual case, `delayed` false), takes no lock either. */
	c->rx_state = KSOCK_RX_PARSE;
	c->rx_recv_called = false;
	c->rx_recv_sync = false;
	c->rx_in_parse = true;
	rc = lnet_parse(net->ni, h, &c->peer->nid, c, false);
	if (c->rx_recv_sync && rc >= 0) {
		c->rx_in_parse = false;
		c->rx_state = KSOCK_RX_PAYLOAD;
		return 1;
	}
	ksock_lock(net);
	c->rx_in_parse = false;
	if (rc < 0) {
		ksock_unlock(net);
		ksock_rx_error(c, -EPROTO, "lnet_parse rejected the message (%d)", rc);
		return -EPROTO;
	}
	called = c->rx_recv_called;
	if (called)
		c->rx_state = KSOCK_RX_PAYLOAD;
	else
		ksock_conn_get_locked(c);   /* rx_private, until a later recv() */
	ksock_unlock(net);
	return called ? 1 : 0;
}

/* Whole message in: finalize, then ACK its ZC cookie. */
static void ksock_rx_msg_done(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;
	struct lnet_msg *msg = c->rx_msg;
	uint64_t cookie = c->rx_khdr.zc_cookies[0];
	int status = ksock_rx_csum_ok(c) ? 0 : -EIO;
	uint32_t wire = c->rx_khdr.csum;

	KSOCK_RX_COUNT(c->rx_msgs, 1);
	ksock_rx_reset(c);
	if (msg)
		lnet_finalize(msg, status);
	if (status < 0) {
		ksock_rx_error(c, -EIO, "checksum error (wire %#x)", wire);
		return;
	}
	if (cookie) {
		struct ksock_done done = { 0 };

		ksock_lock(net);
		if (c->state == KSOCK_CS_UP && net->user_mode)   /* each conn: a kernel peer */
			ksock_send_zcack_conn_locked(c, cookie, &done);
		else if (c->state == KSOCK_CS_UP)
			ksock_send_zcack_locked(net, c->peer, cookie, &done);
		ksock_unlock(net);
		ksock_done_run(net, &done);
	}
}

void ksock_conn_rx(struct ksock_conn *c)
{
	int budget = KSOCK_RX_BUDGET;
	int rc;

	while (c->state == KSOCK_CS_UP) {
		switch (c->rx_state) {
		case KSOCK_RX_KHDR:
			/* Both headers whole in the read-ahead buffer (the usual
			 * case): decode them in place, no copy to rx_hbuf. V2
			 * checksums the header bytes after the payload, when the
			 * buffer may have been refilled: it keeps the copy. */
			if (c->rx_have == 0 && !c->proto->csum_hdr) {
				size_t k = c->proto->khdr_size, hl = k + c->proto->codec->size;
				const uint8_t *p;

				if (!ksock_rx_buffered(c)) {
					ssize_t got;

					if (!c->rx_ready)
						return;   /* drained: EPOLLIN brings more */
					got = ksock_rx_fill(c);

					if (got == 0)
						return;
					if (got < 0) {
						rc = (int)got;
						goto io_err;
					}
				}
				if (ksock_rx_buffered(c) >= hl) {
					p = c->rx_buf + c->rx_buf_off;
					c->rx_started = true;
					c->rx_buf_off += k;
					if (ksock_rx_khdr_done(c, p) < 0)
						return;
					if (c->rx_state == KSOCK_RX_KHDR) {   /* a NOOP */
						if (--budget == 0)
							goto yield;
						break;
					}
					c->rx_buf_off += hl - k;
					rc = ksock_rx_lhdr_done(c, p + k);
					if (rc <= 0)
						return;
					break;
				}
			}
			/* fall through */
		case KSOCK_RX_LHDR:
			rc = ksock_rx_hdr(c);
			if (rc == 0)
				return;
			if (rc < 0)
				goto io_err;
			if (c->rx_state == KSOCK_RX_KHDR) {
				if (ksock_rx_khdr_done(c, c->rx_hbuf) < 0)
					return;
				if (c->rx_state == KSOCK_RX_KHDR && --budget == 0)
					goto yield;
				break;
			}
			rc = ksock_rx_lhdr_done(c, c->rx_hbuf + c->proto->khdr_size);
			if (rc <= 0)
				return;
			break;
		case KSOCK_RX_PARSE: {
			bool called;

			ksock_lock(c->net);
			called = c->rx_recv_called;
			if (called)
				c->rx_state = KSOCK_RX_PAYLOAD;
			ksock_unlock(c->net);
			if (!called)
				return;       /* recv() will kick us */
			break;
		}
		case KSOCK_RX_PAYLOAD:
			if (c->rx_mlen_left || c->rx_discard_left) {
				rc = ksock_rx_payload(c);
				if (rc == 0)
					return;
				if (rc < 0)
					goto io_err;
			}
			ksock_rx_msg_done(c);
			if (--budget == 0)
				goto yield;
			break;
		}
	}
	return;
yield:
	/* let other conns run; come back after this batch */
	ksock_lock(c->net);
	ksock_kick_conn_locked(c);
	ksock_unlock(c->net);
	return;
io_err:
	if (rc == -ECONNRESET && !c->rx_started && c->rx_state == KSOCK_RX_KHDR) {
		char desc[160];

		ksock_conn_describe(c, desc, sizeof(desc));
		lnet_ni_log(c->net->ni, ULNET_LOG_INFO, "%s: EOF, closing it and its siblings", desc);
		ksock_conn_close(c, 0, true);
		return;
	}
	if (rc == -ECONNRESET)
		ksock_rx_error(c, rc, "EOF in the middle of a message (%zu payload bytes missing)",
			       c->rx_mlen_left + c->rx_discard_left);
	else
		ksock_rx_error(c, rc, "read error: %s", strerror(-rc));
}

/* Whether busy polls should leave this conn to epoll for now: while bulk
 * streams (a large payload coming in, sends waiting for EPOLLOUT, or for
 * a ZC-ACK that follows a large payload) a direct recv() mostly finds
 * nothing and takes the socket lock the other side's softirq wants, and
 * EPOLLOUT is seen only on a full epoll turn. (Unlocked peeks: a stale
 * answer costs one turn of the wrong kind.) */
void ksock_conn_note_cold(struct ksock_conn *c)
{
	c->io.cold = __atomic_load_n(&c->txq_head, __ATOMIC_RELAXED) != NULL ||
		     (c->peer && __atomic_load_n(&c->peer->zc_head, __ATOMIC_RELAXED) != NULL) ||
		     (c->rx_state == KSOCK_RX_PAYLOAD &&
		      c->rx_mlen_left + c->rx_discard_left > KSOCK_RX_COPY_MAX);
}

/* ul_io poll op (busy-poll loops): read whatever the socket has, as an
 * EPOLLIN would, without asking epoll first. True if bytes came. */
bool ksock_conn_poll(struct ul_io *io)
{
	struct ksock_conn *c = (struct ksock_conn *)((char *)io - offsetof(struct ksock_conn, io));
	uint32_t reads = c->rx_reads;

	/* waiting for a lazy recv(): its kick resumes us */
	if (c->state != KSOCK_CS_UP || c->rx_state == KSOCK_RX_PARSE)
		return false;
	ksock_loop_enter(c->net);
	c->rx_ready = true;
	ksock_conn_rx(c);
	ksock_conn_note_cold(c);
	return c->rx_reads != reads;
}

void ksock_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
		const struct iovec *iov, unsigned niov, size_t offset, size_t mlen, size_t rlen)
{
	struct ksock_conn *c = rx_private;
	struct ksock_net *net = c->net;      /* lnet_ni_data(ni), without the call */
	/* not delayed: called by the loop thread from inside its
	 * lnet_parse() of this conn, so nobody else touches these fields */
	bool sync = !delayed;
	unsigned n = 0;
	size_t left = mlen;
	bool dead;

	(void)ni;
	if (!sync)
		ksock_lock(net);
	/* the fragments, starting `offset` in, covering `mlen` */
	for (unsigned i = 0; i < niov && left && n < ULNET_MAX_IOV; i++) {
		size_t len = iov[i].iov_len;

		if (offset >= len) {
			offset -= len;
			continue;
		}
		c->rx_iov[n].iov_base = (char *)iov[i].iov_base + offset;
		c->rx_iov[n].iov_len = len - offset < left ? len - offset : left;
		left -= c->rx_iov[n].iov_len;
		offset = 0;
		n++;
	}
	c->rx_niov = n;
	c->rx_iov_idx = 0;
	c->rx_iov_off = 0;
	c->rx_mlen = mlen - left;
	c->rx_mlen_left = c->rx_mlen;
	c->rx_discard_left = rlen - c->rx_mlen;
	dead = c->state != KSOCK_CS_UP;
	c->rx_msg = dead ? NULL : msg;
	c->rx_recv_called = true;
	if (sync) {
		c->rx_recv_sync = true;
	} else {
		if (!c->rx_in_parse) {
			/* recv() came later: resume on the loop, drop the ref
			 * taken when lnet_parse() returned without it */
			if (!dead)
				ksock_kick_conn_locked(c);
			ksock_conn_put_locked(c);
		}
		ksock_unlock(net);
	}
	if (dead && msg)
		lnet_finalize(msg, -ECONNRESET);
}
