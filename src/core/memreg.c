/* SPDX-License-Identifier: MIT */
/*
 * memreg.c - the application's memory as an LND that keeps device
 * registrations sees it: the regions promised to stay mapped
 * (ulnet_mem_register/ulnet_mem_deregister) and the log of releases that
 * the LND reads to drop registrations that may no longer match the pages
 * (memreg.h says why).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"

void lnet_memreg_init(struct lnet_memreg *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

void lnet_memreg_fini(struct lnet_memreg *r)
{
	free(r->regions);
	r->regions = NULL;
	r->nregions = r->cap = 0;
	pthread_mutex_destroy(&r->lock);
}

void lnet_memreg_start(ulnet_t *ln, struct lnet_memreg_cursor *c)
{
	struct lnet_memreg *r = &ln->ln_memreg;

	pthread_mutex_lock(&r->lock);
	__atomic_store_n(&r->logging, true, __ATOMIC_RELEASE);
	c->seq = r->seq;
	c->deregs = r->deregs;
	pthread_mutex_unlock(&r->lock);
}

static void memreg_log_locked(struct lnet_memreg *r, uintptr_t lo, uintptr_t hi, bool region)
{
	struct lnet_mem_release *e = &r->log[r->seq % LNET_MEMREG_LOG];

	e->lo = lo;
	e->hi = hi;
	e->region = region;
	/* read without the lock by lnet_memreg_read()'s fast path */
	__atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
}

void lnet_memreg_released(ulnet_t *ln, const struct iovec *iov, unsigned niov)
{
	struct lnet_memreg *r = &ln->ln_memreg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	/* no LND keeps registrations: nothing to tell (the common case,
	 * without a lock) */
	if (!__atomic_load_n(&r->logging, __ATOMIC_ACQUIRE))
		return;
	for (unsigned i = 0; i < niov; i++) {
		uintptr_t b = (uintptr_t)iov[i].iov_base;

		if (!iov[i].iov_len)
			continue;
		if (b < lo)
			lo = b;
		if (b + iov[i].iov_len > hi)
			hi = b + iov[i].iov_len;
	}
	if (lo >= hi)
		return;
	/* one entry for the hull: wider than the fragments, so it may drop
	 * a registration that was still good, never keep a bad one */
	pthread_mutex_lock(&r->lock);
	memreg_log_locked(r, lo, hi, false);
	pthread_mutex_unlock(&r->lock);
}

int lnet_memreg_read(ulnet_t *ln, struct lnet_memreg_cursor *c, struct lnet_mem_release *out,
		     int n)
{
	struct lnet_memreg *r = &ln->ln_memreg;
	int k = 0;

	/* nothing new (the common case, once per registration lookup on the
	 * bulk path): no lock. A release logged just after is read by the
	 * next lookup; the memory it names was the caller's MD's, which is
	 * still linked while its transfer looks its registration up. */
	if (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) == c->seq)
		return 0;
	pthread_mutex_lock(&r->lock);
	if (r->seq - c->seq > LNET_MEMREG_LOG) {
		k = r->deregs != c->deregs ? LNET_MEMREG_LOST_ALL : LNET_MEMREG_LOST;
		c->seq = r->seq;
		c->deregs = r->deregs;
		pthread_mutex_unlock(&r->lock);
		return k;
	}
	while (c->seq < r->seq && k < n) {
		out[k] = r->log[c->seq++ % LNET_MEMREG_LOG];
		if (out[k++].region)
			c->deregs++;
	}
	pthread_mutex_unlock(&r->lock);
	return k;
}

bool lnet_memreg_in_region(ulnet_t *ln, uintptr_t lo, uintptr_t hi)
{
	struct lnet_memreg *r = &ln->ln_memreg;
	bool in = false;

	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nregions && !in; i++)
		in = r->regions[i].lo <= lo && hi <= r->regions[i].hi;
	pthread_mutex_unlock(&r->lock);
	return in;
}

/* [addr, addr+len) as a range; false for NULL, 0 bytes or a wrap */
static bool memreg_range(const void *addr, size_t len, struct lnet_mem_range *out)
{
	uintptr_t lo = (uintptr_t)addr;

	if (!addr || !len || lo + len < lo)
		return false;
	out->lo = lo;
	out->hi = lo + len;
	return true;
}

int ulnet_mem_register(ulnet_t *ln, const void *addr, size_t len)
{
	struct lnet_memreg *r;
	struct lnet_mem_range m;
	int rc = 0;

	if (!ln || !memreg_range(addr, len, &m))
		return -EINVAL;
	r = &ln->ln_memreg;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nregions; i++)
		if (r->regions[i].lo == m.lo && r->regions[i].hi == m.hi) {
			rc = -EEXIST;
			goto out;
		}
	if (r->nregions == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		struct lnet_mem_range *v = realloc(r->regions, cap * sizeof(*v));

		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		r->regions = v;
		r->cap = cap;
	}
	r->regions[r->nregions++] = m;
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int ulnet_mem_deregister(ulnet_t *ln, const void *addr, size_t len)
{
	struct lnet_memreg *r;
	struct lnet_mem_range m;
	int rc = -ENOENT;

	if (!ln || !memreg_range(addr, len, &m))
		return -EINVAL;
	r = &ln->ln_memreg;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nregions; i++) {
		if (r->regions[i].lo != m.lo || r->regions[i].hi != m.hi)
			continue;
		r->regions[i] = r->regions[--r->nregions];
		if (r->logging) {
			memreg_log_locked(r, m.lo, m.hi, true);
			r->deregs++;
		}
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}
