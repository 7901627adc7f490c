/* SPDX-License-Identifier: MIT */
/*
 * sock_tx.c - the send path: choose a connection (reference §1.4), build
 * the ksock + LNet header into the tx's own buffer, and write header +
 * the MD's payload fragments with one sendmsg (no staging copy). If the
 * connection has nothing queued the caller's thread writes; otherwise the
 * tx waits and EPOLLOUT drains it on the loop. ZC requests complete on the
 * peer's ACK; ZC-ACKs and keepalives are NOOPs on the conn held as BULK_IN.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"
#include "util/ul_sys.h"
#include "util/util_bytes.h"

/* What the matcher sees: the version's headers + payload (`p` is the
 * protocol of the peer's conns; all agree on the version; NULL: none yet,
 * nothing to match). NOOPs: the ksock header alone. */
static inline size_t ksock_tx_match_nob(const struct ksock_tx *tx, const struct ksock_proto *p)
{
	if (!tx->msg)
		return KSOCK_MSG_HDR_SIZE;
	return (p ? p->match_hdr : KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE) + tx->plen;
}

static struct ksock_conn *ksock_find_conn_locked(struct ksock_net *net, struct ksock_peer *peer,
						 const struct ksock_tx *tx)
{
	struct ksock_conn *best = NULL;
	enum ksock_match best_m = KSOCK_MATCH_NO;
	size_t nob = ksock_tx_match_nob(tx, peer->proto);
	/* the hint covers LNET messages (NOOPs always scan) */
	int hint = !tx->msg ? -1 : nob < net->tun.min_bulk ? 0 : 1;
	unsigned nbest = 0;

	if (hint >= 0 && (best = peer->conn_hint[hint]) && best->state == KSOCK_CS_UP) {
		best->tx_seq = ++net->tx_seq;
		return best;
	}
	best = NULL;
	for (struct ksock_conn *c = peer->conns; c; c = c->next) {
		enum ksock_match m;

		if (c->state != KSOCK_CS_UP)
			continue;
		m = c->proto->match(c->ctype, nob, tx->nonblk, c->net->tun.min_bulk);
		if (m == KSOCK_MATCH_NO)
			continue;
		/* prefer YES over MAY; among equals, the least queued, then the
		 * one chosen longest ago (round robin) */
		if (!best || m > best_m)
			nbest = 1;
		else if (m == best_m)
			nbest++;
		if (!best || m > best_m ||
		    (m == best_m && (c->tx_queued < best->tx_queued ||
				     (c->tx_queued == best->tx_queued && c->tx_seq < best->tx_seq)))) {
			best = c;
			best_m = m;
		}
	}
	if (best) {
		best->tx_seq = ++net->tx_seq;
		if (hint >= 0 && nbest == 1)
			peer->conn_hint[hint] = best;
	}
	return best;
}

_Static_assert(sizeof(((struct ksock_tx *)0)->hdr) >= KSOCK_MSG_HDR_SIZE + LNET_HDR_MAX_SIZE,
	       "tx->hdr holds both headers");

/* Fix the header bytes for the conn the tx is going out on. */
static int ksock_tx_build_locked(struct ksock_conn *c, struct ksock_tx *tx)
{
	struct ksock_net *net = c->net;
	struct ksock_peer *peer = c->peer;
	uint64_t c0, c1;
	uint32_t type;
	ssize_t n, k;

	if (!tx->msg) {
		type = KSOCK_MSG_NOOP;
		c0 = tx->noop_cookies[0];
		c1 = tx->noop_cookies[1];
	} else {
		type = KSOCK_MSG_LNET;
		c0 = c1 = 0;
		/* Ask for a ZC-ACK only on our BULK_OUT (or an untyped conn):
		 * a kernel acknowledges on the conn it holds as BULK_IN, and
		 * when it has none (a bulk message that fell back to CONTROL
		 * before BULK_OUT is up, or any of a user-space peer's conns,
		 * each a kernel peer of its own) ksocknal_handle_zcreq()
		 * fails and the kernel drops the message and closes every
		 * conn to us. Without a cookie the send completes once in
		 * the socket. */
		if (c->proto->zc && net->tun.zc_min_payload && tx->plen >= net->tun.zc_min_payload &&
		    (c->ctype == SOCKLND_CONN_BULK_OUT || c->ctype == SOCKLND_CONN_ANY)) {
			tx->zc_cookie = ksock_cookie_next(&peer->zc_next);
			c0 = tx->zc_cookie;
		}
		if (c->proto->zc && peer->nacks)   /* piggyback an ACK we owe */
			c1 = peer->acks[--peer->nacks];
	}
	/* what proto->khdr_encode writes (always little-endian; V1 has no
	 * ksock header), without a call and a struct per message */
	k = (ssize_t)c->proto->khdr_size;
	if (k)
		ksock_msg_hdr_put_le(tx->hdr, type, 0, c0, c1);
	if (tx->msg) {
		const struct lnet_hdr *hp = lnet_msg_hdr(tx->msg);
		struct lnet_hdr h;

		if (net->user_mode) {   /* copy only to set the user-space flag */
			h = *hp;
			h.src_pid |= ULNET_PID_USERFLAG;
			hp = &h;
		}
		n = c->proto->codec->encode(hp, tx->hdr + k, sizeof(tx->hdr) - (size_t)k);
		if (n < 0)
			return (int)n;
		k += n;
	}
	tx->hdr_len = (size_t)k;
	if (net->tun.enable_csum && c->proto->csum_hdr)   /* V2: headers + payload */
		ul_put_le32(tx->hdr + 4, ksock_csum_msg(tx->hdr, tx->hdr_len, tx->piov, tx->pniov,
							 tx->poff, tx->msg ? tx->plen : 0));
	tx->nob = tx->hdr_len + tx->plen;
	tx->sent = 0;
	tx->conn = c;
	return 0;
}

/* Queue on `c`; the caller flushes. */
static inline int ksock_conn_queue_locked(struct ksock_conn *c, struct ksock_tx *tx)
{
	int rc = ksock_tx_build_locked(c, tx);

	if (rc < 0)
		return rc;
	tx->next = NULL;
	if (c->txq_tail)
		c->txq_tail->next = tx;
	else
		KSOCK_PEEKED_SET(c->txq_head, tx);
	c->txq_tail = tx;
	if (!c->tx_queued)
		c->tx_stamp_due = true;   /* ksock_conn_stamp_settle() */
	c->tx_queued += tx->nob;
	return 0;
}

/* After queuing (and maybe writing), before the lock is dropped: the
 * reaper's "timed out sending" clock of a queue starts when it stopped
 * being empty; read the clock only if this send left bytes waiting. */
static inline void ksock_conn_stamp_settle(struct ksock_conn *c)
{
	if (c->tx_stamp_due) {
		c->tx_stamp_due = false;
		if (c->tx_queued)
			c->tx_last_progress = ksock_stamp_now(c->net);
	}
}

static void ksock_peer_enqueue_locked(struct ksock_net *net, struct ksock_peer *peer,
				      struct ksock_tx *tx)
{
	/* a message waiting for a connection fails after sock_timeout (a
	 * ZC request gets its ACK deadline once written) */
	tx->deadline = ksock_now(net) + net->timeout_ns;
	tx->next = NULL;
	if (peer->txq_tail)
		peer->txq_tail->next = tx;
	else
		peer->txq_head = tx;
	peer->txq_tail = tx;
}

/* Gather the unsent part of `tx` into `iov` (header rest + payload);
 * *bytes gets what those iovecs cover (less than the rest if clipped). */
static KSOCK_ALWAYS_INLINE unsigned ksock_tx_iov(const struct ksock_tx *tx, struct iovec *iov,
						 unsigned max, size_t *bytes)
{
	unsigned n = 0;
	size_t skip, left, got = 0;

	if (max == 0) {
		*bytes = 0;
		return 0;
	}
	if (tx->sent < tx->hdr_len) {
		iov[n].iov_base = (void *)(tx->hdr + tx->sent);
		iov[n].iov_len = tx->hdr_len - tx->sent;
		got += iov[n].iov_len;
		n++;
		skip = tx->poff;
		left = tx->plen;
	} else {
		skip = tx->poff + (tx->sent - tx->hdr_len);
		left = tx->plen - (tx->sent - tx->hdr_len);
	}
	for (unsigned i = 0; i < tx->pniov && left && n < max; i++) {
		size_t len = tx->piov[i].iov_len;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		iov[n].iov_base = (char *)tx->piov[i].iov_base + skip;
		iov[n].iov_len = len - skip < left ? len - skip : left;
		left -= iov[n].iov_len;
		got += iov[n].iov_len;
		skip = 0;
		n++;
	}
	*bytes = got;
	return n;
}

/* The tx is on the wire (or in the kernel's buffer). */
static KSOCK_ALWAYS_INLINE void ksock_tx_sent_locked(struct ksock_conn *c, struct ksock_tx *tx,
						     struct ksock_done *done)
{
	struct ksock_net *net = c->net;
	struct ksock_peer *peer = c->peer;

	c->tx_msgs++;
	if (!tx->msg) {
		/* A ZC-ACK leaves just after the payload it answers came in:
		 * to Linux TCP that is a reply, and after one (three before
		 * 6.5) it takes the conn for interactive ("pingpong" mode)
		 * and delays its ACKs of the incoming stream in the hope of
		 * riding on our next reply. That starves the sender of window:
		 * 1 MiB PUTs ran 25-40% slower. Ask for quick ACKs again. */
		if (tx->noop_cookies[1] != KSOCK_KEEPALIVE_COOKIE) {
			static const int one = 1;

			(void)setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
		}
		ksock_tx_free(net, tx);
	} else if (tx->zc_cookie) {
		/* complete on the peer's ZC-ACK */
		tx->deadline = ksock_now(net) + net->timeout_ns;
		tx->next = peer->zc_head;
		KSOCK_PEEKED_SET(peer->zc_head, tx);
	} else {
		ksock_done_add(net, done, tx, 0);
	}
}

/* iovecs per sendmsg: several queued messages go out in one call */
#define KSOCK_TX_IOV (ULNET_MAX_IOV + 2 > 512 ? ULNET_MAX_IOV + 2 : 512)
/* stop gathering more messages past this many bytes */
#define KSOCK_TX_GATHER_MAX (1u << 20)

static void ksock_conn_unhold_locked(struct ksock_conn *c);
static void ksock_conn_undefer_locked(struct ksock_conn *c);

/* Up to this many bytes (headers included) leave from one buffer, the
 * fragments copied behind each other: send() of one buffer costs less than
 * sendmsg() of an iovec array (no msghdr and array to copy in and walk),
 * some 3% of a loopback round trip, and copying 512 bytes far less. */
#define KSOCK_TX_INLINE_MAX 512

/* One write of `n` iovecs covering `bytes`; -1 and errno as sendmsg(). */
static KSOCK_ALWAYS_INLINE ssize_t ksock_sendv(int fd, struct iovec *iov, unsigned n, size_t bytes,
					       int flags)
{
	uint8_t buf[KSOCK_TX_INLINE_MAX];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };
	const void *one = n == 1 ? iov[0].iov_base : buf;
	ssize_t w;

	if (n > 1 && bytes <= sizeof(buf)) {
		size_t off = 0;

		for (unsigned i = 0; i < n; i++) {
			memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
	}
	do {
		if (n == 1 || bytes <= sizeof(buf))
			w = ul_sys_send(fd, one, bytes, flags);
		else
			w = sendmsg(fd, &mh, flags);
	} while (w < 0 && errno == EINTR);
	return w;
}

/* conn sets (sock_int.h, enum ksock_cset): short singly linked lists */
static void ksock_cset_add(struct ksock_conn *c, enum ksock_cset s)
{
	if (c->cset[s].on)
		return;
	c->cset[s].on = true;
	c->cset[s].next = c->net->cset[s];
	c->net->cset[s] = c;
}

/* false if c was not on s */
static bool ksock_cset_del(struct ksock_conn *c, enum ksock_cset s)
{
	struct ksock_conn **pp;

	if (!c->cset[s].on)
		return false;
	c->cset[s].on = false;
	for (pp = &c->net->cset[s]; *pp; pp = &(*pp)->cset[s].next) {
		if (*pp == c) {
			*pp = c->cset[s].next;
			break;
		}
	}
	c->cset[s].next = NULL;
	return true;
}

static void ksock_conn_uncork_locked(struct ksock_conn *c)
{
	ksock_cset_del(c, KSOCK_CSET_CORKED);
}

/* Push what MSG_MORE left in the kernel on every corked connection
 * (clearing TCP_CORK, which we never set, sends the pending frames). */
static void ksock_uncork_all_locked(struct ksock_net *net)
{
	static const int off = 0;
	struct ksock_conn *c;

	while ((c = net->cset[KSOCK_CSET_CORKED])) {
		ksock_conn_uncork_locked(c);
		(void)setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	}
}

/* Bytes went out: with MSG_MORE (`more`) they may wait in the kernel, the
 * conn is corked until a write without it; else it is not. */
static inline void ksock_conn_corked_if_locked(struct ksock_conn *c, bool more)
{
	if (!more)
		ksock_conn_uncork_locked(c);
	else
		ksock_cset_add(c, KSOCK_CSET_CORKED);
}

/* Write the queue; `more`: the caller's batch sends more soon, let the
 * kernel keep a partial segment (MSG_MORE); the conn is then corked until a
 * write without it or ksock_flush(more = false). */
static int ksock_conn_write_locked(struct ksock_conn *c, bool more, struct ksock_done *done)
{
	struct iovec iov[KSOCK_TX_IOV];
	int rc;

	if (c->state != KSOCK_CS_UP)
		return 0;
	/* from here what is left waits for EPOLLOUT, as any queue */
	ksock_conn_unhold_locked(c);
	ksock_conn_undefer_locked(c);
	if (c->hs_out_len) {
		rc = ksock_hs_flush(c);
		if (rc <= 0)
			return rc;
	}
	/* The usual direct write (an ACK, a lone PUT): one tx not started,
	 * its header and every fragment in one sendmsg; what the loop below
	 * does for it, without the gather and completion bookkeeping. */
	if (c->txq_head && !c->txq_head->next && !c->txq_head->sent &&
	    c->txq_head->pniov < KSOCK_TX_IOV) {
		struct ksock_tx *tx = c->txq_head;
		size_t got;
		unsigned n = ksock_tx_iov(tx, iov, KSOCK_TX_IOV, &got);
		ssize_t w = ksock_sendv(c->fd, iov, n, got,
					MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));

		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		c->tx_queued -= (size_t)w;
		c->tx_bytes += (uint64_t)w;
		if ((size_t)w < tx->nob) {
			/* short write: the socket is full, EPOLLOUT resumes */
			tx->sent = (size_t)w;
			c->tx_last_progress = ksock_stamp_now(c->net);
			c->tx_stamp_due = false;
			return 0;
		}
		tx->sent = tx->nob;
		KSOCK_PEEKED_SET(c->txq_head, NULL);
		c->txq_tail = NULL;
		ksock_tx_sent_locked(c, tx, done);
		ksock_conn_corked_if_locked(c, more);
		return 0;
	}
	while (c->txq_head) {
		unsigned n = 0;
		size_t total = 0, wrote;
		ssize_t w;

		/* the first tx may be clipped to the iovec budget; later ones
		 * go in only whole, so bytes leave in queue order */
		for (struct ksock_tx *tx = c->txq_head; tx; tx = tx->next) {
			size_t rest = tx->nob - tx->sent, got;
			unsigned k;

			if (tx != c->txq_head && tx->pniov + 1 > KSOCK_TX_IOV - n)
				break;
			k = ksock_tx_iov(tx, iov + n, KSOCK_TX_IOV - n, &got);
			n += k;
			total += got;
			if (got < rest || total >= KSOCK_TX_GATHER_MAX)
				break;
		}
		w = ksock_sendv(c->fd, iov, n, total, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		wrote = (size_t)w;
		c->tx_queued -= wrote;
		c->tx_bytes += wrote;
		/* the clock only matters while bytes wait (the reaper) */
		if (c->tx_queued) {
			c->tx_last_progress = ksock_stamp_now(c->net);
			c->tx_stamp_due = false;
		}
		while (w > 0) {
			struct ksock_tx *tx = c->txq_head;
			size_t rest = tx->nob - tx->sent;

			if ((size_t)w < rest) {
				tx->sent += (size_t)w;
				break;
			}
			w -= (ssize_t)rest;
			tx->sent = tx->nob;
			KSOCK_PEEKED_SET(c->txq_head, tx->next);
			if (!c->txq_head)
				c->txq_tail = NULL;
			ksock_tx_sent_locked(c, tx, done);
		}
		/* (w was used up above: compare what the call wrote) */
		if (wrote < total)
			return 0;  /* short write: the socket is full, EPOLLOUT resumes */
		ksock_conn_corked_if_locked(c, more);
	}
	return 0;
}

int ksock_conn_flush_locked(struct ksock_conn *c, struct ksock_done *done)
{
	return ksock_conn_write_locked(c, false, done);
}

/* A write on `c` failed with `rc`: the send it was writing (the head of
 * the queue) failed here, not at the peer, as the kernel's
 * ksocknal_process_transmit() classes it: a timeout is the remote's
 * (REMOTE_TIMEOUT), anything else is a LOCAL_ERROR, never resent. The
 * sends queued behind it fail with the close, classed by the errno. */
__attribute__((noinline, cold)) void ksock_conn_write_failed_locked(struct ksock_conn *c, int rc,
								      struct ksock_done *done)
{
	struct ksock_tx *tx = c->txq_head;
	char desc[160];

	if (tx && tx->msg)
		lnet_msg_set_hstatus(tx->msg, rc == -ETIMEDOUT ? ULNET_HSTATUS_REMOTE_TIMEOUT
							: ULNET_HSTATUS_LOCAL_ERROR);
	ksock_conn_describe(c, desc, sizeof(desc));
	lnet_ni_log(c->net->ni, ULNET_LOG_ERROR, "%s: write error: %s", desc, strerror(-rc));
	ksock_conn_close_locked(c, rc, true, done);
}

static inline void ksock_conn_kick_tx_more_locked(struct ksock_conn *c, bool more,
						  struct ksock_done *done)
{
	int rc = ksock_conn_write_locked(c, more, done);

	if (rc < 0)
		ksock_conn_write_failed_locked(c, rc, done);
}

static void ksock_conn_kick_tx_locked(struct ksock_conn *c, struct ksock_done *done)
{
	ksock_conn_kick_tx_more_locked(c, false, done);
}

/* A batch holds at most this much per conn before it writes anyway. */
#define KSOCK_TX_HOLD_MAX (64u << 10)

static void ksock_conn_unhold_locked(struct ksock_conn *c)
{
	ksock_cset_del(c, KSOCK_CSET_HELD);
}

/* Coalescing: a caller's send within this long of the conn's last write
 * is left to the loop (the progress thread, or with manual progress the
 * next ulnet_progress()), which writes the queue in one sendmsg. */
#ifndef KSOCK_COALESCE_NS
#define KSOCK_COALESCE_NS 5000u
#endif
/* a send from another NI's loop thread this large goes to ours (see
 * ksock_conn_push_locked()); smaller ones are written at once, a thread
 * hop costing more than their copy */
#define KSOCK_HANDOFF_MIN (64u << 10)
/* a deferred queue past this is written by the caller anyway */
#define KSOCK_COALESCE_MAX (64u << 10)

static void ksock_conn_undefer_locked(struct ksock_conn *c)
{
	ksock_cset_del(c, KSOCK_CSET_DEFER);
}

static void ksock_conn_defer_locked(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;

	if (c->cset[KSOCK_CSET_DEFER].on)
		return;
	ksock_cset_add(c, KSOCK_CSET_DEFER);
	if (!net->in_defer_flush)
		ksock_kick(net);
}

/* The kick handler (loop thread): write the deferred queues; sends that
 * their completions release are deferred again and written next round. */
void ksock_flush_deferred(struct ksock_net *net)
{
	struct ksock_conn *c;
	bool more;

	ksock_lock(net);
	if (!net->cset[KSOCK_CSET_DEFER]) {
		ksock_unlock(net);
		return;
	}
	net->in_defer_flush = true;
	more = lnet_ni_tx_waiting(net->ni);
	while (net->cset[KSOCK_CSET_DEFER]) {
		struct ksock_done done;
		uint64_t now = ksock_now(net);

		ksock_done_init(&done);
		while ((c = net->cset[KSOCK_CSET_DEFER])) {
			ksock_conn_undefer_locked(c);
			c->tx_last_write = now;
			ksock_conn_kick_tx_more_locked(c, more, &done);
		}
		ksock_unlock(net);
		ksock_done_run(net, &done);
		more = lnet_ni_tx_waiting(net->ni);
		ksock_lock(net);
	}
	net->in_defer_flush = false;
	/* the burst is over: what MSG_MORE left in the kernel goes now */
	ksock_uncork_all_locked(net);
	ksock_unlock(net);
}

/* `tx` was just queued on `c`: write now, hold it (a batch), leave it to
 * the loop (coalescing), or leave it to EPOLLOUT (the queue was already
 * waiting for it). */
static KSOCK_ALWAYS_INLINE void ksock_conn_push_locked(struct ksock_conn *c, struct ksock_tx *tx,
						       bool hold, struct ksock_done *done)
{
	/* a non-empty queue is being drained (EPOLLOUT resumes it), or the
	 * loop writes it soon (deferred) */
	if (c->txq_head != tx && !c->cset[KSOCK_CSET_HELD].on) {
		if (c->cset[KSOCK_CSET_DEFER].on && !hold && c->tx_queued >= KSOCK_COALESCE_MAX)
			ksock_conn_kick_tx_locked(c, done);
		return;
	}
	if (hold && c->tx_queued < KSOCK_TX_HOLD_MAX) {
		ksock_cset_add(c, KSOCK_CSET_HELD);
		return;
	}
	if (!c->cset[KSOCK_CSET_HELD].on) {
		struct ksock_net *net = c->net;
		bool in_turn = ul_loop_in_turn(net->loop);

		if (net->in_defer_flush && in_turn) {
			ksock_conn_defer_locked(c);   /* the flush's next round */
			return;
		}
		/* another NI's thread (nscheds 1) sends a large payload on:
		 * a router forwarding it. Our thread writes it, so that this
		 * copy runs beside that thread's next receive instead of
		 * after it */
		if (!in_turn && tx->nob >= KSOCK_HANDOFF_MIN && ul_loop_in_other_turn(net->loop)) {
			ksock_conn_defer_locked(c);
			return;
		}
		/* an application's send (not the loop's ACKs/REPLYs); with
		 * manual progress the kick runs in its next ulnet_progress() */
		if (!in_turn) {
			uint64_t now = ksock_now(net);

			if (now - c->tx_last_write < KSOCK_COALESCE_NS) {
				ksock_conn_defer_locked(c);
				return;
			}
			c->tx_last_write = now;
		}
	}
	/* an idle conn (or one holding a batch): write from here (no thread hop) */
	ksock_conn_kick_tx_locked(c, done);
}

void ksock_conn_tx_forget_locked(struct ksock_conn *c)
{
	ksock_conn_undefer_locked(c);
	ksock_conn_unhold_locked(c);
	ksock_conn_uncork_locked(c);
}

void ksock_flush(struct lnet_ni *ni, bool more)
{
	struct ksock_net *net = lnet_ni_data(ni);
	struct ksock_done done;
	struct ksock_conn *c;

	if (!net)
		return;
	ksock_done_init(&done);
	ksock_lock(net);
	while ((c = net->cset[KSOCK_CSET_HELD])) {
		ksock_conn_unhold_locked(c);
		ksock_conn_kick_tx_more_locked(c, more, &done);
	}
	/* the end of the batch: what MSG_MORE left in the kernel goes now */
	if (!more)
		ksock_uncork_all_locked(net);
	ksock_unlock(net);
	ksock_done_run(net, &done);
}

/* Put a message's tx on the best conn of its peer, or on the peer's queue;
 * `hold`: a batch is open (lnet_ni_batch_hold), the tx may wait for
 * ksock_flush(). */
static inline void ksock_launch_locked(struct ksock_net *net, struct ksock_peer *peer,
				       struct ksock_tx *tx, bool hold, struct ksock_done *done)
{
	/* ksock_find_conn_locked()'s hint, without the call */
	struct ksock_conn *c = peer->conn_hint[ksock_tx_match_nob(tx, peer->proto) < net->tun.min_bulk ? 0 : 1];
	int rc;

	if (c && c->state == KSOCK_CS_UP)
		c->tx_seq = ++net->tx_seq;
	else
		c = ksock_find_conn_locked(net, peer, tx);

	if (!c) {
		ksock_peer_enqueue_locked(net, peer, tx);
		ksock_peer_connect_locked(net, peer, done);
		return;
	}
	rc = ksock_conn_queue_locked(c, tx);
	if (rc < 0) {
		char nb[ULNET_NIDSTR_SIZE];

		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "peer %s: can't encode message for %s: %s",
			    ksock_nidstr(&peer->nid, nb), c->proto->name, strerror(-rc));
		if (tx->msg)
			ksock_done_add(net, done, tx, rc);
		else
			ksock_tx_free(net, tx);
		return;
	}
	ksock_conn_push_locked(c, tx, hold, done);
	ksock_conn_stamp_settle(c);
}

void ksock_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	struct ksock_net *net = lnet_ni_data(ni);
	ulnet_process_id_t target = lnet_msg_target(msg);
	struct ksock_done done;
	struct ksock_peer *peer;
	struct ksock_tx *tx;
	bool hold = lnet_ni_batch_hold(ni);
	int err = 0;

	ksock_done_init(&done);
	ksock_lock(net);
	if (net->shutdown) {
		err = -ESHUTDOWN;
		goto fail;
	}
	if (__builtin_expect(net->link_down, 0)) {
		/* no route out while the link is down: what connect() gives */
		err = -ENETUNREACH;
		goto fail;
	}
	/* the last peer inline (the usual send), else the table */
	peer = net->peer_last;
	if (!peer || !ksock_nid_same(&peer->nid, &target.nid))
		peer = ksock_peer_find_or_create(net, &target.nid, target.pid);
	tx = peer ? ksock_tx_alloc_msg(net) : NULL;
	if (!tx) {
		err = -ENOMEM;
		goto fail;
	}
	if (!peer->conns && !peer->userspace)
		peer->pid = target.pid;
	tx->msg = msg;
	lnet_msg_payload(msg, &tx->piov, &tx->pniov, &tx->poff, &tx->plen);
	*lnet_msg_lnd_slot(msg) = tx;
	ksock_launch_locked(net, peer, tx, hold, &done);
	ksock_unlock(net);
	ksock_done_run(net, &done);
	return;
fail:
	ksock_unlock(net);
	lnet_finalize(msg, err);
}

/* A new conn takes the peer's waiting txs it can carry, and ACKs we owe. */
void ksock_conn_take_txs_locked(struct ksock_conn *c, struct ksock_done *done)
{
	struct ksock_net *net = c->net;
	struct ksock_peer *peer = c->peer;
	struct ksock_tx **pp = &peer->txq_head;
	bool queued = false;

	peer->txq_tail = NULL;
	while (*pp) {
		struct ksock_tx *tx = *pp;

		if (c->proto->match(c->ctype, ksock_tx_match_nob(tx, c->proto), tx->nonblk, net->tun.min_bulk) ==
		    KSOCK_MATCH_NO) {
			peer->txq_tail = tx;
			pp = &tx->next;
			continue;
		}
		*pp = tx->next;
		if (ksock_conn_queue_locked(c, tx) < 0) {
			if (tx->msg)
				ksock_done_add(net, done, tx, -EPROTO);
			else
				ksock_tx_free(net, tx);
			continue;
		}
		queued = true;
	}
	if (c->proto->zc && peer->nacks &&
	    c->proto->match(c->ctype, KSOCK_MSG_HDR_SIZE, true, net->tun.min_bulk) == KSOCK_MATCH_YES) {
		ksock_acks_sort(peer->acks, peer->nacks);   /* descending: popped ascending */
		while (peer->nacks) {
			struct ksock_tx *tx;

			if (ksock_conn_merge_zcack_locked(c, peer->acks[peer->nacks - 1])) {
				peer->nacks--;   /* folded into the NOOP before (pair/range) */
				continue;
			}
			tx = ksock_tx_alloc(net);
			if (!tx)
				break;
			tx->nonblk = true;
			tx->noop_cookies[1] = peer->acks[--peer->nacks];
			if (ksock_conn_queue_locked(c, tx) < 0)
				ksock_tx_free(net, tx);
			else
				queued = true;
		}
	}
	if (queued)
		ksock_conn_kick_tx_locked(c, done);
	ksock_conn_stamp_settle(c);
}

/* A bound on the ZC-ACKs owed to one peer: far more than a kernel sends
 * in sock_timeout without hearing one (each is a payload of 16 KiB or
 * more) */
#define KSOCK_ACKS_MAX (1u << 16)

/* Record a ZC-ACK owed to `peer`; false (logged) past KSOCK_ACKS_MAX or
 * without memory. */
static bool ksock_peer_owe_zcack_locked(struct ksock_net *net, struct ksock_peer *peer,
					uint64_t cookie)
{
	char nb[ULNET_NIDSTR_SIZE];

	if (peer->nacks == peer->acks_cap) {
		unsigned cap = peer->acks_cap ? peer->acks_cap * 2 : 16;
		uint64_t *a = cap <= KSOCK_ACKS_MAX ? realloc(peer->acks, cap * sizeof(*a)) : NULL;

		if (!a) {
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "peer %s: %u ZC-ACKs owed and no conn to send them on: "
				    "dropping ZC-ACK %llu (the peer will time its send out)",
				    ksock_nidstr(&peer->nid, nb), peer->nacks,
				    (unsigned long long)cookie);
			return false;
		}
		peer->acks = a;
		peer->acks_cap = cap;
	}
	peer->acks[peer->nacks++] = cookie;
	return true;
}

static void ksock_send_noop_locked(struct ksock_net *net, struct ksock_peer *peer, uint64_t c0,
				   uint64_t c1, struct ksock_done *done)
{
	struct ksock_tx *tx = ksock_tx_alloc(net);
	struct ksock_conn *c;

	if (!tx)
		return;
	/* nonblk_zcack off: ZC-ACKs are ordinary (blocking) traffic */
	tx->nonblk = c1 == KSOCK_KEEPALIVE_COOKIE || net->tun.nonblk_zcack;
	tx->noop_cookies[0] = c0;
	tx->noop_cookies[1] = c1;
	c = ksock_find_conn_locked(net, peer, tx);
	if (c && c0 == 0 && ksock_conn_merge_zcack_locked(c, c1)) {
		ksock_tx_free(net, tx);    /* rides on a NOOP still queued */
		return;
	}
	if (!c || ksock_conn_queue_locked(c, tx) < 0) {
		ksock_tx_free(net, tx);
		if (c1 != KSOCK_KEEPALIVE_COOKIE)
			(void)ksock_peer_owe_zcack_locked(net, peer, c1);   /* sent later */
		return;
	}
	ksock_conn_push_locked(c, tx, lnet_ni_batch_hold(net->ni), done);
	ksock_conn_stamp_settle(c);
}

void ksock_send_zcack_locked(struct ksock_net *net, struct ksock_peer *peer, uint64_t cookie,
			     struct ksock_done *done)
{
	ksock_send_noop_locked(net, peer, 0, cookie, done);
}

/* A non-blocking NOOP [0, cookie] queued on `c` itself; false if it could
 * not be. */
static bool ksock_conn_noop_locked(struct ksock_conn *c, uint64_t cookie, struct ksock_done *done)
{
	struct ksock_net *net = c->net;
	struct ksock_tx *tx = ksock_tx_alloc(net);

	if (!tx)
		return false;
	tx->nonblk = true;
	tx->noop_cookies[0] = 0;
	tx->noop_cookies[1] = cookie;
	if (ksock_conn_queue_locked(c, tx) < 0) {
		ksock_tx_free(net, tx);
		return false;
	}
	ksock_conn_push_locked(c, tx, lnet_ni_batch_hold(net->ni), done);
	ksock_conn_stamp_settle(c);
	return true;
}

/* User-space mode: the kernel knows each of our conns as a peer of its own
 * (identity from the source port) and looks an ACK up only among the
 * cookies it sent on that conn: ACK on the conn the cookie came on,
 * folding only into a NOOP still queued there, never kept for another. */
void ksock_send_zcack_conn_locked(struct ksock_conn *c, uint64_t cookie, struct ksock_done *done)
{
	if (!ksock_conn_merge_zcack_locked(c, cookie))
		(void)ksock_conn_noop_locked(c, cookie, done);
}

void ksock_send_keepalive_locked(struct ksock_net *net, struct ksock_peer *peer,
				 struct ksock_done *done)
{
	if (net->user_mode) {
		/* CONTROL is a user-space peer's only conn (no BULK_IN for the
		 * non-blocking NOOP); a kernel takes a NOOP on any conn */
		for (struct ksock_conn *c = peer->conns; c; c = c->next)
			if (c->state == KSOCK_CS_UP && c->proto->keepalive &&
			    ksock_conn_noop_locked(c, KSOCK_KEEPALIVE_COOKIE, done))
				return;
		return;
	}
	ksock_send_noop_locked(net, peer, 0, KSOCK_KEEPALIVE_COOKIE, done);
}

int ksock_handle_zcack_locked(struct ksock_net *net, struct ksock_peer *peer, uint64_t c0,
			      uint64_t c1, struct ksock_done *done)
{
	char nb[ULNET_NIDSTR_SIZE];
	struct ksock_zcack z;
	unsigned count;

	if (ksock_zcack_parse(c0, c1, peer->proto && peer->proto->keepalive, &z) < 0)
		return -EPROTO;
	if (z.keepalive)
		return 0;
	lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "peer %s: ZC-ACK %llu..%llu%s",
		    ksock_nidstr(&peer->nid, nb), (unsigned long long)z.lo,
		    (unsigned long long)z.hi, z.pair ? " (pair)" : "");
	count = z.count;
	for (struct ksock_tx **pp = &peer->zc_head; *pp && count;) {
		struct ksock_tx *tx = *pp;

		if (ksock_zcack_covers(&z, tx->zc_cookie)) {
			KSOCK_PEEKED_SET(*pp, tx->next);
			ksock_done_add(net, done, tx, 0);
			count--;
			continue;
		}
		pp = &tx->next;
	}
	return count == 0 ? 0 : -EPROTO;
}
