/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input.h - how the stateful fuzz targets read their input: a cursor
 * over the bytes, and little-endian integers taken from it. Past the end
 * every read gives 0, so a short input is still a whole (shorter) run.
 * And the options of the node(s) a stateful target drives: no progress
 * thread, the target's clock and logger, errors only.
 */
#ifndef ULNET_TEST_FUZZ_INPUT_H
#define ULNET_TEST_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

struct in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t u8(struct in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static inline uint32_t u32(struct in *in)
{
	uint32_t v = u8(in);

	v |= (uint32_t)u8(in) << 8;
	v |= (uint32_t)u8(in) << 16;
	return v | (uint32_t)u8(in) << 24;
}

static inline uint64_t u64(struct in *in)
{
	uint64_t v = u32(in);

	return v | (uint64_t)u32(in) << 32;
}

static inline struct ulnet_opts fuzz_node_opts(ulnet_clock_fn clock,
					       void (*log)(void *, enum ulnet_log_level, const char *))
{
	struct ulnet_opts o = {
		.flags = ULNET_OPT_MANUAL_PROGRESS,
		.clock = clock,
		.log = log,
		.log_level = ULNET_LOG_ERROR,
	};

	return o;
}

#endif
