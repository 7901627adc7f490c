/* SPDX-License-Identifier: MIT */
/*
 * o2ib_rdma.c - o2ib bulk transfers: the memory registration cache, RDMA
 * descriptors of our buffers, the RDMA writes, and the handshakes of
 * ko2iblnd: PUT_REQ -> PUT_ACK (the sink's descriptor) or PUT_NAK ->
 * writes + PUT_DONE; GET_REQ (the requester's sink) -> writes + GET_DONE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_int.h"

#define KIB_PAGE	4096UL
#define KIB_MR_CACHE_MAX 256

/* Registration rights: a sink the peer writes into; a source we only read
 * (RDMA write from it). A source is never remote-writable, and read-only
 * memory can be a source (pinning for write would fail on it). */
#define KIB_ACCESS_SINK (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define KIB_ACCESS_SOURCE 0

static void kib_mr_free(struct kib_net *net, struct kib_mr *e)
{
	kib_list_del(&e->link);
	ibv_dereg_mr(e->mr);
	free(e);
	net->nmrs--;
}

/* Locked: a registration's memory may be the application's again (memreg.h):
 * dropped now, or when the transfers holding it end. */
static void kib_mr_drop(struct kib_net *net, struct kib_mr *e)
{
	if (e->inuse)
		e->stale = true;
	else
		kib_mr_free(net, e);
}

/* Locked: drops the registrations that the releases logged since the last
 * call overlap (an MD's release spares those in registered regions). */
static void kib_mr_sync(struct kib_net *net)
{
	ulnet_t *ln = lnet_ni_instance(net->ni);
	struct lnet_mem_release rel[32];
	int n;

	while ((n = lnet_memreg_read(ln, &net->memreg, rel, 32)) != 0) {
		for (struct kib_list *l = net->mrs.next, *nx; l != &net->mrs; l = nx) {
			struct kib_mr *e = kib_container(l, struct kib_mr, link);
			bool drop = n == LNET_MEMREG_LOST_ALL || (n == LNET_MEMREG_LOST && !e->region);

			nx = l->next;
			for (int i = 0; i < n && !drop; i++)
				drop = rel[i].lo < e->hi && e->lo < rel[i].hi && (rel[i].region || !e->region);
			if (drop && !e->stale)
				kib_mr_drop(net, e);
		}
		if (n < 0)
			break;
	}
}

/* Locked: a registration covering [addr, addr+len) with at least the rights
 * `access`, held by tx. */
static struct kib_mr *kib_mr_get(struct kib_net *net, struct kib_tx *tx, uintptr_t addr, size_t len,
				 int access)
{
	struct kib_mr *m = NULL;

	kib_mr_sync(net);
	for (struct kib_list *l = net->mrs.next; l != &net->mrs; l = l->next) {
		struct kib_mr *e = kib_container(l, struct kib_mr, link);

		if (!e->stale && e->lo <= addr && addr + len <= e->hi &&
		    (e->access & access) == access) {
			m = e;
			break;
		}
	}
	if (m) {
		kib_list_del(&m->link);         /* most recently used first */
	} else {
		uintptr_t lo = addr & ~(KIB_PAGE - 1), hi = (addr + len + KIB_PAGE - 1) & ~(KIB_PAGE - 1);

		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->lo = lo;
		m->hi = hi;
		m->access = access;
		m->region = lnet_memreg_in_region(lnet_ni_instance(net->ni), addr, addr + len);
		m->mr = ibv_reg_mr(net->pd, (void *)lo, hi - lo, access);
		if (!m->mr) {
			free(m);
			return NULL;
		}
		net->nmrs++;
		if (lnet_ni_log_enabled(net->ni, ULNET_LOG_DEBUG))
			lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
				    "o2iblnd: registered %#lx..%#lx (%lu bytes, %s%s), %d cached",
				    (unsigned long)lo, (unsigned long)hi, (unsigned long)(hi - lo),
				    access == KIB_ACCESS_SOURCE ? "source" : "sink",
				    m->region ? ", in a registered region" : "", net->nmrs);
		/* evict the least recently used idle registrations */
		for (struct kib_list *l = net->mrs.prev, *p; l != &net->mrs &&
		     net->nmrs > KIB_MR_CACHE_MAX; l = p) {
			struct kib_mr *e = kib_container(l, struct kib_mr, link);

			p = l->prev;
			if (e->inuse)
				continue;
			kib_mr_free(net, e);
		}
	}
	m->link.next = net->mrs.next;
	m->link.prev = &net->mrs;
	net->mrs.next->prev = &m->link;
	net->mrs.next = &m->link;
	for (int i = 0; i < tx->nmrs; i++)
		if (tx->mrs[i] == m)
			return m;
	if (tx->nmrs == KIB_TX_MAX_MRS)
		return NULL;
	tx->mrs[tx->nmrs++] = m;
	m->inuse++;
	return m;
}

void kib_mr_release(struct kib_net *net, struct kib_tx *tx)
{
	for (int i = 0; i < tx->nmrs; i++)
		if (--tx->mrs[i]->inuse == 0 && tx->mrs[i]->stale)
			kib_mr_free(net, tx->mrs[i]);
	tx->nmrs = 0;
}

void kib_mr_cache_fini(struct kib_net *net)
{
	while (!kib_list_empty(&net->mrs)) {
		struct kib_mr *e = kib_container(net->mrs.next, struct kib_mr, link);

		kib_list_del(&e->link);
		ibv_dereg_mr(e->mr);
		free(e);
	}
	net->nmrs = 0;
}

/* Locked: describe len bytes of iov (from off) as one key and fragments,
 * for the peer to write into. The fragments must lie in one registration:
 * the span from the first to the last is registered (as the kernel maps
 * them into one region). */
int kib_setup_rd(struct kib_net *net, struct kib_tx *tx, const struct iovec *iov, unsigned niov,
		 size_t off, size_t len)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	uint32_t n = 0;
	size_t left = len;
	struct kib_mr *m;

	for (unsigned i = 0; i < niov && left; i++) {
		size_t l = iov[i].iov_len;
		uintptr_t a = (uintptr_t)iov[i].iov_base;

		if (off >= l) {
			off -= l;
			continue;
		}
		a += off;
		l -= off;
		off = 0;
		if (l > left)
			l = left;
		if (n && tx->rd_frags[n - 1].addr + tx->rd_frags[n - 1].nob == a) {
			tx->rd_frags[n - 1].nob += (uint32_t)l;
		} else {
			if (n == KIB_MAX_RDMA_FRAGS)
				return -EINVAL;
			tx->rd_frags[n].addr = a;
			tx->rd_frags[n].nob = (uint32_t)l;
			n++;
		}
		if (a < lo)
			lo = a;
		if (a + l > hi)
			hi = a + l;
		left -= l;
	}
	if (left)
		return -EINVAL;
	tx->rd_nfrags = n;
	tx->rd_key = 0;
	if (n) {
		m = kib_mr_get(net, tx, lo, hi - lo, KIB_ACCESS_SINK);
		if (!m)
			return -EFAULT;
		tx->rd_key = m->mr->rkey;
	}
	tx->m.rd.key = tx->rd_key;
	return 0;
}

/* Locked: post the RDMA writes of tx (rdma_nob bytes of its source into the
 * peer's descriptor), unsignalled, before its completion message. */
int kib_post_rdma(struct kib_conn *c, struct kib_tx *tx)
{
	struct kib_net *net = c->net;
	struct ibv_send_wr wrs[16], *bad;
	struct ibv_sge sges[16];
	unsigned si = 0, nw = 0;
	size_t soff = tx->src_off, resid = tx->rdma_nob;
	uint32_t di = 0, doff = 0;

	/* skip to the first source byte */
	while (si < tx->src_niov && soff >= tx->src_iov[si].iov_len)
		soff -= tx->src_iov[si++].iov_len;
	while (resid) {
		struct kib_mr *m;
		size_t sl, dl, n;
		uintptr_t sa;

		while (si < tx->src_niov && soff >= tx->src_iov[si].iov_len) {
			soff = 0;
			si++;
		}
		while (di < tx->rd_nfrags && doff >= tx->rd_frags[di].nob) {
			doff = 0;
			di++;
		}
		if (si >= tx->src_niov || di >= tx->rd_nfrags)
			return -EPROTO;     /* the source or the sink is too small */
		sa = (uintptr_t)tx->src_iov[si].iov_base + soff;
		sl = tx->src_iov[si].iov_len - soff;
		dl = tx->rd_frags[di].nob - doff;
		n = sl < dl ? sl : dl;
		if (n > resid)
			n = resid;
		m = kib_mr_get(net, tx, sa, n, KIB_ACCESS_SOURCE);
		if (!m)
			return -EFAULT;
		memset(&wrs[nw], 0, sizeof(wrs[nw]));
		sges[nw].addr = sa;
		sges[nw].length = (uint32_t)n;
		sges[nw].lkey = m->mr->lkey;
		wrs[nw].wr_id = (uintptr_t)tx | KIB_WR_RDMA;
		wrs[nw].sg_list = &sges[nw];
		wrs[nw].num_sge = 1;
		wrs[nw].opcode = IBV_WR_RDMA_WRITE;
		wrs[nw].wr.rdma.remote_addr = tx->rd_frags[di].addr + doff;
		wrs[nw].wr.rdma.rkey = tx->rd_key;
		if (nw)
			wrs[nw - 1].next = &wrs[nw];
		nw++;
		soff += n;
		doff += (uint32_t)n;
		resid -= n;
		if (nw == 16 || !resid) {
			if (ibv_post_send(c->qp, wrs, &bad) != 0)
				return -EIO;
			nw = 0;
		}
	}
	return 0;
}

/* Locked, with the message and its reply (GET) known: make tx a PUT_REQ or a
 * GET_REQ and queue it (on the connection or the peer, as send() does). */
int kib_send_rdma_req(struct kib_net *net, struct lnet_msg *msg, struct kib_tx *tx,
		      const struct iovec *iov, unsigned niov, size_t off, size_t len)
{
	tx->m.hdr = *lnet_msg_hdr(msg);
	tx->m.cookie = tx->cookie;
	tx->waiting = true;
	if (tx->m.type == KIB_MSG_GET_REQ)
		return kib_setup_rd(net, tx, iov, niov, off, len);
	tx->src_iov = iov;
	tx->src_niov = niov;
	tx->src_off = off;
	return 0;
}

void kib_send_completion(struct kib_conn *c, uint8_t type, int status, uint64_t cookie)
{
	struct kib_tx *tx = kib_tx_get(c->net);

	if (!tx) {
		kib_close_conn(c, -ENOMEM, "no tx for a completion");
		return;
	}
	tx->m.type = type;
	tx->m.status = status;
	tx->m.cookie = cookie;
	if (c->state != KIB_CONN_ESTABLISHED) {
		kib_tx_done(c->net, tx);
		return;
	}
	kib_queue_tx(c, tx);
	kib_check_sends(c);
}

static struct kib_tx *kib_find_waiting(struct kib_conn *c, uint8_t type, uint64_t cookie)
{
	for (struct kib_list *l = c->active_txs.next; l != &c->active_txs; l = l->next) {
		struct kib_tx *tx = kib_container(l, struct kib_tx, link);

		if (tx->waiting && tx->m.type == type && tx->cookie == cookie)
			return tx;
	}
	return NULL;
}

/* Locked: an answer to one of our txs (the kernel's kiblnd_handle_rx()). */
void kib_handle_rdma_rx(struct kib_rx *rx)
{
	struct kib_conn *c = rx->conn;
	struct kib_net *net = c->net;
	struct kib_msg *m = &rx->msg;
	uint8_t want = m->type == KIB_MSG_PUT_DONE ? KIB_MSG_PUT_ACK
		       : m->type == KIB_MSG_GET_DONE ? KIB_MSG_GET_REQ : KIB_MSG_PUT_REQ;
	uint64_t cookie = m->type == KIB_MSG_PUT_ACK ? m->src_cookie : m->cookie;
	struct kib_tx *tx = kib_find_waiting(c, want, cookie);

	if (!tx) {
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: unmatched %s (cookie %#llx)",
			    c->name, kib_msg_type_str(m->type), (unsigned long long)cookie);
		kib_close_conn(c, -EPROTO, "unmatched RDMA answer");
		return;
	}
	if (m->type == KIB_MSG_PUT_ACK) {
		uint64_t nob = 0;

		for (uint32_t i = 0; i < m->rd.nfrags; i++) {
			tx->rd_frags[i] = kib_rd_frag(&m->rd, i);
			nob += tx->rd_frags[i].nob;
		}
		tx->rd_nfrags = m->rd.nfrags;
		tx->rd_key = m->rd.key;
		tx->rdma_nob = (uint32_t)nob;
		if (lnet_ni_log_enabled(net->ni, ULNET_LOG_DEBUG))
			lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
				    "o2iblnd: %s: PUT_ACK: writing %llu bytes into %u fragments",
				    c->name, (unsigned long long)nob, m->rd.nfrags);
		/* the PUT_REQ becomes the PUT_DONE that follows the writes */
		tx->waiting = false;
		kib_list_del(&tx->link);
		tx->m.type = KIB_MSG_PUT_DONE;
		tx->m.cookie = m->dst_cookie;
		tx->m.status = (int32_t)nob;
		tx->deadline = kib_now(net) + (uint64_t)net->tun.timeout * 1000000000ULL;
		kib_queue_tx(c, tx);
		kib_repost_rx(rx, KIB_POSTRX_RSRVD_CREDIT);
		return;
	}
	if (m->status < 0)
		tx->status = m->status;
	else if (m->type == KIB_MSG_GET_DONE)
		tx->done_len = m->status;
	tx->waiting = false;
	if (tx->sending == 0) {
		kib_list_del(&tx->link);
		kib_tx_done(net, tx);
	}
	kib_repost_rx(rx, m->type == KIB_MSG_PUT_DONE ? KIB_POSTRX_PEER_CREDIT
						    : KIB_POSTRX_RSRVD_CREDIT);
}

/* recv() of a PUT_REQ or a GET_REQ (unlocked; takes the lock). */
void kib_recv_rdma(struct kib_net *net, struct kib_rx *rx, struct lnet_msg *msg,
		   const struct iovec *iov, unsigned niov, size_t offset, size_t mlen)
{
	struct kib_conn *c = rx->conn;
	struct lnet_msg *fail_msg = NULL;
	int fail_rc = 0;
	enum kib_post_credit credit = KIB_POSTRX_PEER_CREDIT;
	struct kib_tx *tx;
	int rc;

	if (rx->msg.type == KIB_MSG_PUT_REQ && (!msg || mlen == 0)) {
		if (msg)
			lnet_finalize(msg, 0);
		kib_lock(net);
		kib_send_completion(c, KIB_MSG_PUT_NAK, 0, rx->msg.cookie);
		goto repost;
	}
	kib_lock(net);
	if (rx->msg.type == KIB_MSG_GET_REQ && !msg) {
		kib_send_completion(c, KIB_MSG_GET_DONE, -ENODATA, rx->msg.cookie);
		goto repost;
	}
	tx = kib_tx_get(net);
	if (!tx) {
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: no tx for %s", c->name,
			    kib_msg_type_str(rx->msg.type));
		fail_msg = msg;
		fail_rc = -ENOMEM;
		kib_close_conn(c, -ENOMEM, "no tx descriptor");
		goto repost;
	}
	tx->lntmsg[0] = msg;
	if (rx->msg.type == KIB_MSG_PUT_REQ) {
		rc = kib_setup_rd(net, tx, iov, niov, offset, mlen);
		if (rc < 0) {
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: cannot set up the PUT sink (%zu bytes): %d", c->name,
				    mlen, rc);
			tx->status = rc;
			kib_tx_done(net, tx);
			kib_send_completion(c, KIB_MSG_PUT_NAK, rc, rx->msg.cookie);
			goto repost;
		}
		tx->m.type = KIB_MSG_PUT_ACK;
		tx->m.src_cookie = rx->msg.cookie;
		tx->m.dst_cookie = tx->cookie;
		tx->waiting = true;         /* for the PUT_DONE */
		credit = KIB_POSTRX_NO_CREDIT; /* that one returns it */
	} else {
		/* the REPLY's bytes into the requester's sink, then GET_DONE */
		for (uint32_t i = 0; i < rx->msg.rd.nfrags; i++)
			tx->rd_frags[i] = kib_rd_frag(&rx->msg.rd, i);
		tx->rd_nfrags = rx->msg.rd.nfrags;
		tx->rd_key = rx->msg.rd.key;
		tx->src_iov = iov;
		tx->src_niov = niov;
		tx->src_off = offset;
		tx->rdma_nob = (uint32_t)mlen;
		tx->m.type = KIB_MSG_GET_DONE;
		tx->m.cookie = rx->msg.cookie;
		tx->m.status = (int32_t)mlen;
		if (lnet_ni_log_enabled(net->ni, ULNET_LOG_DEBUG))
			lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
				    "o2iblnd: %s: GET_REQ: writing %zu bytes into %u fragments",
				    c->name, mlen, tx->rd_nfrags);
	}
	if (c->state != KIB_CONN_ESTABLISHED) {
		tx->status = -ECONNABORTED;
		kib_tx_done(net, tx);
		goto repost;
	}
	kib_queue_tx(c, tx);
	kib_check_sends(c);
repost:
	kib_repost_rx(rx, credit);
	kib_conn_decref(c);
	kib_unlock(net);
	if (fail_msg)
		lnet_finalize(fail_msg, fail_rc);
}
