/* SPDX-License-Identifier: MIT */
/*
 * pattern.c - the data brw writes and serve checks (and the reverse): every
 * 8-byte word is a hash of (seed, word index), so misplaced, stale or
 * foreign bytes do not pass. "simple" touches the first and last 8 bytes of
 * each 4 KiB page, like lst's simple check; "full" every byte.
 */
#include <string.h>

#include "ulst.h"

#define PAGE 4096u

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint8_t ulst_pattern_byte(size_t off, uint64_t seed)
{
	return (uint8_t)(mix64(seed * 0x9e3779b97f4a7c15ULL + (off >> 3)) >> ((off & 7) * 8));
}

/* Apply `fn` to every byte range the mode covers; stops early on non-zero. */
typedef long (*range_fn)(uint8_t *buf, size_t from, size_t to, uint64_t seed, int arg);

static long for_ranges(uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode, range_fn fn,
		       int arg)
{
	long r;

	if (mode == ULST_CHECK_NONE || len == 0)
		return -1;
	if (mode == ULST_CHECK_FULL || len <= 16)
		return fn(buf, 0, len, seed, arg);
	for (size_t p = 0; p < len; p += PAGE) {
		size_t end = p + PAGE < len ? p + PAGE : len;

		if (end - p <= 16) {
			if ((r = fn(buf, p, end, seed, arg)) >= 0)
				return r;
			continue;
		}
		if ((r = fn(buf, p, p + 8, seed, arg)) >= 0)
			return r;
		if ((r = fn(buf, end - 8, end, seed, arg)) >= 0)
			return r;
	}
	return -1;
}

static long range_write(uint8_t *buf, size_t from, size_t to, uint64_t seed, int invert)
{
	size_t k = from;

	/* whole aligned words at a time, bytes at the edges */
	while (k < to && (k & 7))
		buf[k] = ulst_pattern_byte(k, seed) ^ (invert ? 0xff : 0), k++;
	for (; k + 8 <= to; k += 8) {
		uint64_t w = mix64(seed * 0x9e3779b97f4a7c15ULL + (k >> 3));

		if (invert)
			w = ~w;
		for (int b = 0; b < 8; b++)
			buf[k + (size_t)b] = (uint8_t)(w >> (b * 8));
	}
	for (; k < to; k++)
		buf[k] = ulst_pattern_byte(k, seed) ^ (invert ? 0xff : 0);
	return -1;
}

static long range_verify(uint8_t *buf, size_t from, size_t to, uint64_t seed, int unused)
{
	size_t k = from;

	(void)unused;
	while (k < to && (k & 7)) {
		if (buf[k] != ulst_pattern_byte(k, seed))
			return (long)k;
		k++;
	}
	for (; k + 8 <= to; k += 8) {
		uint64_t w = mix64(seed * 0x9e3779b97f4a7c15ULL + (k >> 3));

		for (int b = 0; b < 8; b++)
			if (buf[k + (size_t)b] != (uint8_t)(w >> (b * 8)))
				return (long)(k + (size_t)b);
	}
	for (; k < to; k++)
		if (buf[k] != ulst_pattern_byte(k, seed))
			return (long)k;
	return -1;
}

void ulst_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode)
{
	(void)for_ranges(buf, len, seed, mode, range_write, 0);
}

void ulst_pattern_poison(uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode)
{
	(void)for_ranges(buf, len, seed, mode, range_write, 1);
}

long ulst_pattern_verify(const uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode)
{
	return for_ranges((uint8_t *)buf, len, seed, mode, range_verify, 0);
}
