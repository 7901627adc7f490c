/* SPDX-License-Identifier: MIT */
/*
 * memreg.h - what an LND that keeps registrations of the memory it moves
 * with its device (o2iblnd's registration cache) must know to keep them
 * valid: the regions the application promised to keep mapped
 * (ulnet_mem_register) and the ranges that may have been freed or remapped
 * since (an MD freed: its memory is the application's again; a router
 * buffer freed; a region deregistered).
 *
 * A registration pins the pages its range had when it was made. Memory
 * freed and mapped again at the same address has other pages, which the
 * device would still read and write through the old registration: so a
 * registration is valid only while an MD, a router buffer or a registered
 * region covers it. The LND reads the releases in order (lnet_memreg_read)
 * and drops what they overlap.
 */
#ifndef ULNET_CORE_MEMREG_H
#define ULNET_CORE_MEMREG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

#define LNET_MEMREG_LOG 1024 /* releases kept for the LNDs to read */

struct lnet_mem_range {
	uintptr_t lo, hi;   /* [lo, hi) */
};

struct lnet_mem_release {
	uintptr_t lo, hi;
	/* a region the application had registered: registrations inside
	 * registered regions are dropped too (an MD's release keeps them) */
	bool region;
};

struct lnet_memreg {
	pthread_mutex_t lock;           /* a leaf: taken under any other */
	bool logging;                   /* an LND reads the releases */
	struct lnet_mem_range *regions; /* ulnet_mem_register's, unordered */
	size_t nregions, cap;
	struct lnet_mem_release log[LNET_MEMREG_LOG];
	uint64_t seq;                   /* releases logged so far */
	uint64_t deregs;                /* regions deregistered so far */
};

/* Where a reader is in the log. */
struct lnet_memreg_cursor {
	uint64_t seq, deregs;
};

void lnet_memreg_init(struct lnet_memreg *r);
void lnet_memreg_fini(struct lnet_memreg *r);

/* An LND that keeps registrations starts reading at *c: releases are logged
 * from now on (none is before, to keep MD frees cheap where no LND needs
 * them). */
void lnet_memreg_start(ulnet_t *ln, struct lnet_memreg_cursor *c);

/* Memory the core handed to LNDs (the hull of the fragments) may be freed
 * or remapped from now on: an MD's, the application's again; a router
 * buffer's, freed. */
void lnet_memreg_released(ulnet_t *ln, const struct iovec *iov, unsigned niov);

/* Copies the releases logged after *c (at most n) into out and moves *c
 * past them. Returns how many; or, when some were overwritten before they
 * were read, LNET_MEMREG_LOST (drop every registration outside the
 * registered regions) or LNET_MEMREG_LOST_ALL (a region was deregistered
 * too: drop them all), *c then being the log's end. */
#define LNET_MEMREG_LOST (-1)
#define LNET_MEMREG_LOST_ALL (-2)
int lnet_memreg_read(ulnet_t *ln, struct lnet_memreg_cursor *c, struct lnet_mem_release *out,
		     int n);

/* [lo, hi) lies inside one registered region. */
bool lnet_memreg_in_region(ulnet_t *ln, uintptr_t lo, uintptr_t hi);

#endif
