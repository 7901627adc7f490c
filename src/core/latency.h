/* SPDX-License-Identifier: MIT */
/*
 * latency.h - latency figures (struct lnet_latency): samples kept as a sum
 * and by bucket, read as a struct ulnet_latency; and the total of per-type
 * message counts.
 */
#ifndef ULNET_CORE_LATENCY_H
#define ULNET_CORE_LATENCY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ulnet/ulnet.h"

/* struct ulnet_latency kept as a sum: adding a sample needs no division
 * (the average is computed when read, lnet_latency_get()); and by bucket
 * (ULNET_LAT_BUCKETS of them, each sample counted in its own only: the
 * cumulative counts a histogram shows are summed when read). */
struct lnet_latency {
	uint64_t samples, min_nsec, max_nsec, sum_nsec;
	uint64_t bucket[ULNET_LAT_BUCKETS];
};

/* The bucket of a sample of `ns` nanoseconds: the first whose bound,
 * 2^(ULNET_LAT_BUCKET_SHIFT + k), it does not pass, or the last (+Inf).
 * ns <= 2^b for b the bit length of ns - 1 (of 0 for ns 0), so
 * k = b - SHIFT; OR-ing in 2^SHIFT - 1 puts every ns up to the first bound
 * in bucket 0. No loop, no division: one count of leading zeros. */
_Static_assert(ULNET_LAT_BUCKET_SHIFT + ULNET_LAT_BUCKETS - 2 < 64,
	       "the last finite latency bound fits in 64 bits");
static inline unsigned lnet_latency_bucket(uint64_t ns)
{
	uint64_t v = (ns - (ns != 0)) | ((UINT64_C(1) << ULNET_LAT_BUCKET_SHIFT) - 1);
	unsigned k = (unsigned)(64 - ULNET_LAT_BUCKET_SHIFT) - (unsigned)__builtin_clzll(v);

	return k < ULNET_LAT_BUCKETS - 1 ? k : ULNET_LAT_BUCKETS - 1;
}

static inline void lnet_latency_add(struct lnet_latency *l, uint64_t ns)
{
	if (!l->samples || ns < l->min_nsec)
		l->min_nsec = ns;
	if (ns > l->max_nsec)
		l->max_nsec = ns;
	l->sum_nsec += ns;
	l->samples++;
	l->bucket[lnet_latency_bucket(ns)]++;
}

static inline struct ulnet_latency lnet_latency_get(const struct lnet_latency *l)
{
	struct ulnet_latency r = { .samples = l->samples, .min_nsec = l->min_nsec,
				   .max_nsec = l->max_nsec,
				   .avg_nsec = l->samples ? l->sum_nsec / l->samples : 0,
				   .sum_nsec = l->sum_nsec };

	memcpy(r.bucket, l->bucket, sizeof(r.bucket));
	return r;
}

/* A total of per-type counts: kept as the sum, not a counter of its own,
 * so a message costs one increment per NI and peer NI, not two. */
static inline uint64_t lnet_type_counts_sum(const struct ulnet_msg_type_counts *c)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(c->n) / sizeof(c->n[0]); i++)
		sum += c->n[i];
	return sum;
}

#endif
