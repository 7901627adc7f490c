/* SPDX-License-Identifier: MIT */
/*
 * brw_test.c - the brw (bulk read/write) test: its data patterns, which
 * the client side fills and checks too, and the server side: the bulk
 * buffers and the brw requests.
 *
 * The bulk buffers are not tied to slots: they come from a pool bounded by
 * the concurrency of the session's brw server tests (BULK_MIN..BULK_MAX),
 * allocated on demand and kept until the session ends. A brw request that
 * finds the pool empty waits in the agent (bwait), its request already
 * received, until a bulk buffer comes back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest/agent_int.h"
#include "util/util_bytes.h"

/* --- brw data patterns ------------------------------------------------------- */

/* The fragments of a buffer as the kernel's pages: the first ends at the
 * page boundary after `off`, then whole pages. */
static uint32_t frag_len(uint32_t pos, uint32_t len, uint32_t off)
{
	uint32_t room = SRPC_PAGE_SIZE - ((pos + off) & (SRPC_PAGE_SIZE - 1));

	return len - pos < room ? len - pos : room;
}

void brw_fill_off(uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, uint64_t magic)
{
	if (pattern != LST_BRW_CHECK_SIMPLE && pattern != LST_BRW_CHECK_FULL)
		return;
	for (uint32_t pg = 0, plen; pg < len; pg += plen) {
		uint8_t *p = buf + pg;

		plen = frag_len(pg, len, off);
		if (pattern == LST_BRW_CHECK_SIMPLE) {
			if (plen >= 8)
				ul_put_le64(p, magic);
			if (plen > 8 && plen >= 16)
				ul_put_le64(p + ((plen - 8) & ~7u), magic);
			continue;
		}
		for (uint32_t i = 0; i + 8 <= plen; i += 8)
			ul_put_le64(p + i, magic);
	}
}

/* Returns whether the data is bad. `be`: the sender wrote big-endian words. */
bool brw_check_off(const uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, int be)
{
	if (pattern != LST_BRW_CHECK_SIMPLE && pattern != LST_BRW_CHECK_FULL)
		return false;
	for (uint32_t pg = 0, plen; pg < len; pg += plen) {
		const uint8_t *p = buf + pg;

		plen = frag_len(pg, len, off);
		if (pattern == LST_BRW_CHECK_SIMPLE) {
			if (plen >= 8 && ul_get_64(p, be) != LST_BRW_MAGIC)
				return true;
			if (plen >= 16 && ul_get_64(p + ((plen - 8) & ~7u), be) != LST_BRW_MAGIC)
				return true;
			continue;
		}
		for (uint32_t i = 0; i + 8 <= plen; i += 8)
			if (ul_get_64(p + i, be) != LST_BRW_MAGIC)
				return true;
	}
	return false;
}

static void brw_fill(uint8_t *buf, uint32_t len, uint32_t pattern, uint64_t magic)
{
	brw_fill_off(buf, len, 0, pattern, magic);
}

static bool brw_check(const uint8_t *buf, uint32_t len, uint32_t pattern, int be)
{
	return brw_check_off(buf, len, 0, pattern, be);
}

/* --- the brw bulk pool (lock rules: agent_int.h) --------------------------------- */

/* A pool buffer goes: its promise to stay mapped ends first. */
void brw_bulk_free(struct ulnet_selftest *st, struct bulkbuf *b)
{
	if (b->cap)
		ulnet_mem_deregister(st->ln, b->mem, b->cap);
	free(b);
}

/* A pool buffer of at least `len` bytes (lock held): a free one, or NULL
 * with *alloc set when the caller is to allocate it (counted already), or
 * NULL: none to be had now. */
static struct bulkbuf *bulk_take_locked(struct ulnet_selftest *st, size_t len, bool *alloc)
{
	struct bulkbuf **pp, *b;

	*alloc = false;
	for (pp = &st->bulk_free; *pp; pp = &(*pp)->next)
		if ((*pp)->cap >= len) {
			b = *pp;
			*pp = b->next;
			return b;
		}
	if (st->bulk_count < st->bulk_limit) {
		st->bulk_count++;
		*alloc = true;
	} else if (st->bulk_free) {
		/* too small ones only: one is replaced by a bigger one */
		b = st->bulk_free;
		st->bulk_free = b->next;
		brw_bulk_free(st, b);
		*alloc = true;
	}
	return NULL;
}

/* Allocate the buffer bulk_take_locked() counted; on failure uncount it. */
static struct bulkbuf *bulk_alloc(struct ulnet_selftest *st, size_t len)
{
	/* zeroed: bytes outside a brw pattern start as 0, as the kernel's
	 * fresh pages */
	struct bulkbuf *b = calloc(1, sizeof(*b) + len);

	if (b) {
		b->cap = len;
		/* a pool buffer serves many RPCs: registered with an RDMA
		 * device once (failing, only each RPC's MD is) */
		if (len)
			(void)ulnet_mem_register(st->ln, b->mem, len);
		return b;
	}
	pthread_mutex_lock(&st->lock);
	st->bulk_count--;
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static void brw_bulk_begin(struct slot *s);

/* Hand the free buffers to the brw requests waiting for one, in order;
 * those of a service gone (or an agent stopping) are dropped. Buffers
 * beyond the pool's bound, or with no brw test left, are freed. One
 * thread at a time does it; one arriving meanwhile leaves its work to it. */
void brw_bulk_kick(struct ulnet_selftest *st)
{
	pthread_mutex_lock(&st->lock);
	if (st->bulk_kicking) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	st->bulk_kicking = true;
	while (st->bwait_head) {
		struct slot *s = st->bwait_head;
		bool on = srpc_service_on(st, SRPC_SERVICE_BRW), alloc = false;
		struct bulkbuf *b = NULL;

		if (on) {
			b = bulk_take_locked(st, s->msg.body.brw_reqst.len, &alloc);
			if (!b && !alloc)
				break;
		}
		st->bwait_head = s->wait_next;
		if (!st->bwait_head)
			st->bwait_tail = NULL;
		s->wait_next = NULL;
		pthread_mutex_unlock(&st->lock);
		if (alloc)
			b = bulk_alloc(st, s->msg.body.brw_reqst.len);
		if (b) {
			s->bb = b;
			brw_bulk_begin(s);
		} else {
			srpc_drop_request(s, on ? "no memory for its bulk" : "service is shut down");
		}
		pthread_mutex_lock(&st->lock);
	}
	while (st->bulk_free &&
	       (st->bulk_count > st->bulk_limit || !srpc_service_on(st, SRPC_SERVICE_BRW))) {
		struct bulkbuf *b = st->bulk_free;

		st->bulk_free = b->next;
		st->bulk_count--;
		brw_bulk_free(st, b);
	}
	st->bulk_kicking = false;
	pthread_mutex_unlock(&st->lock);
}

/* The slot's bulk buffer goes back to the pool. */
static void bulk_release(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	struct bulkbuf *b = s->bb;

	if (!b)
		return;
	s->bb = NULL;
	pthread_mutex_lock(&st->lock);
	b->next = st->bulk_free;
	st->bulk_free = b;
	pthread_mutex_unlock(&st->lock);
	brw_bulk_kick(st);
}

/* --- the brw service ------------------------------------------------------------ */

/* Start the bulk of brw request `s`, whose buffer it holds. */
static void brw_bulk_begin(struct slot *s)
{
	const struct srpc_brw_reqst *rq = &s->msg.body.brw_reqst;
	bool sink = rq->rw == LST_BRW_WRITE;
	char why[64];
	int rc;

	/* a read's bytes outside its pattern are 0, as in a fresh buffer */
	if (!sink && rq->flags != LST_BRW_CHECK_FULL) {
		memset(s->bb->mem, 0, s->bb->dirty);
		s->bb->dirty = 0;
	} else if (s->bb->dirty < rq->len) {
		s->bb->dirty = rq->len;
	}
	brw_fill(s->bb->mem, rq->len, rq->flags, sink ? LST_BRW_POISON : LST_BRW_MAGIC);
	rc = srpc_slot_bulk_start(s, s->bb->mem, rq->len, sink,
				  sink && rq->flags == LST_BRW_CHECK_DISCARD ? ULNET_MD_DISCARD : 0,
				  rq->bulkid);
	if (rc < 0) {
		bulk_release(s);
		snprintf(why, sizeof(why), "request refused: %s", ulnet_strerror(rc));
		srpc_drop_request(s, why);
	}
}

/* Returns 0: reply now; 1: bulk started (or waits for a buffer); -errno: drop. */
int brw_handle(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_brw_reqst *rq = &s->msg.body.brw_reqst;
	struct srpc_brw_reply *rp = &s->reply.body.brw_reply;
	struct bulkbuf *b = NULL;
	bool alloc = false;

	rp->status = 0;
	if ((rq->rw != LST_BRW_READ && rq->rw != LST_BRW_WRITE) ||
	    (rq->flags != LST_BRW_CHECK_NONE && rq->flags != LST_BRW_CHECK_FULL &&
	     rq->flags != LST_BRW_CHECK_SIMPLE && rq->flags != LST_BRW_CHECK_DISCARD)) {
		rp->status = EINVAL;
		return 0;
	}
	if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		s->reply.ses_feats = LST_FEATS_MASK;
		rp->status = EPROTO;
		return 0;
	}
	/* without BULK_LEN the length is still in bytes but must be whole pages */
	if (!(s->msg.ses_feats & LST_FEAT_BULK_LEN) && (rq->len % SRPC_PAGE_SIZE) != 0) {
		rp->status = EINVAL;
		return 0;
	}
	s->reply.ses_feats = s->msg.ses_feats;
	if (rq->len == 0 || rq->len > ULNET_MTU) {
		rp->status = EINVAL;
		return 0;
	}
	pthread_mutex_lock(&st->lock);
	st->stats.brw_reqs++;
	/* behind those waiting already, or with a buffer of the pool */
	if (!st->bwait_head)
		b = bulk_take_locked(st, rq->len, &alloc);
	if (!b && !alloc && st->stopping) {
		pthread_mutex_unlock(&st->lock);
		return -ESHUTDOWN;   /* the stop's brw_bulk_kick() is past */
	}
	if (!b && !alloc) {
		s->wait_next = NULL;
		if (st->bwait_tail)
			st->bwait_tail->wait_next = s;
		else
			st->bwait_head = s;
		st->bwait_tail = s;
		pthread_mutex_unlock(&st->lock);
		return 1;            /* brw_bulk_kick() goes on */
	}
	pthread_mutex_unlock(&st->lock);
	if (alloc) {
		b = bulk_alloc(st, rq->len);
		if (!b) {
			brw_bulk_kick(st);   /* the room it took is free again */
			return -ENOMEM;
		}
	}
	s->bb = b;
	brw_bulk_begin(s);
	return 1;
}

/* The brw bulk is over (final event of its MD). */
void brw_bulk_done(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_brw_reqst *rq = &s->msg.body.brw_reqst;
	char pb[ULNET_NIDSTR_SIZE];
	bool stopping;

	pthread_mutex_lock(&st->lock);
	stopping = st->stopping;
	pthread_mutex_unlock(&st->lock);
	if (s->bulk_status || stopping) {
		srpc_peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw %s bulk with %s failed: %s",
			 rq->rw == LST_BRW_READ ? "read" : "write", pb,
			 ulnet_strerror(s->bulk_status ? s->bulk_status : -ESHUTDOWN));
		bulk_release(s);
		srpc_finish_dropped(s, -EIO);
		return;
	}
	if (rq->rw == LST_BRW_WRITE && brw_check(s->bb->mem, rq->len, rq->flags, s->msg.swapped)) {
		srpc_peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw write data from %s is corrupted", pb);
		s->reply.body.brw_reply.status = EBADMSG;
		pthread_mutex_lock(&st->lock);
		st->stats.brw_check_errors++;
		pthread_mutex_unlock(&st->lock);
	}
	bulk_release(s);
	srpc_send_reply(s);
}
