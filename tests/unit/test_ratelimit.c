/* SPDX-License-Identifier: MIT */
/* test_ratelimit.c - the log rate limiter (util/ratelimit.c) on a fake
 * clock: the libcfs back-off (0.5 s doubling to 600 s, shrinking after a
 * long quiet), counts carried by the next line or by a flush, keys per
 * reason and per source, the per-site bucket against many sources, and
 * eviction from the fixed table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/ratelimit.h"

#define MS 1000000ULL
#define S 1000000000ULL
#define T0 (1000 * S)

static struct ul_rl rl;

struct sink {
	int n;
	uint64_t total;
	struct ul_rl_summary last;
	char sample[UL_RL_SAMPLE];
};

static void sink_emit(void *arg, const struct ul_rl_summary *s)
{
	struct sink *k = arg;

	k->n++;
	k->total += s->count;
	k->last = *s;
	strcpy(k->sample, s->sample);
}

static bool check(unsigned site, const char *reason, uint64_t src, uint64_t now, uint32_t *skipped)
{
	return ul_rl_check(&rl, site, ul_rl_hash_str(reason), src, now, 0, reason, skipped);
}

/* First line at once; then 0.5 s, 1 s, 2 s, 4 s ... between printed lines;
 * each printed line carries the count held back before it. */
static void test_backoff_doubles(void **state)
{
	uint64_t now = T0, gaps[6];
	uint32_t skipped, held = 0;
	int printed = 0;

	(void)state;
	ul_rl_init(&rl, NULL);
	assert_true(check(0, "bad magic", 7, now, &skipped));
	assert_int_equal(skipped, 0);
	/* one line every 10 ms for 31.49 s */
	uint64_t last = now;

	for (int i = 1; i < 3150; i++) {
		now = T0 + (uint64_t)i * 10 * MS;
		if (check(0, "bad magic", 7, now, &skipped)) {
			assert_int_equal(skipped, held);
			held = 0;
			if (printed < 6)
				gaps[printed] = now - last;
			printed++;
			last = now;
		} else {
			held++;
		}
	}
	assert_int_equal(printed, 5);       /* at 0.5, 1.5, 3.5, 7.5, 15.5 s */
	assert_int_equal(gaps[0], 500 * MS);
	assert_int_equal(gaps[1], 1 * S);
	assert_int_equal(gaps[2], 2 * S);
	assert_int_equal(gaps[3], 4 * S);
	assert_int_equal(gaps[4], 8 * S);
	assert_int_equal(rl.printed, 6);
	assert_int_equal(rl.suppressed, 3149 - 5);
}

/* The delay stops growing at 600 s; after a long quiet it shrinks (/8). */
static void test_backoff_cap_and_quiet(void **state)
{
	uint64_t now = T0;
	uint32_t skipped;

	(void)state;
	ul_rl_init(&rl, NULL);
	for (int i = 0; i < 20; i++) {
		assert_true(check(1, "x", 0, now, &skipped));
		now += rl.e[0].st.delay;        /* exactly when it is allowed */
	}
	assert_int_equal(rl.e[0].st.delay, 600 * S);
	assert_false(check(1, "x", 0, now - 1, &skipped));
	/* quiet for max_delay + 10 s past `next`, and then some */
	now = rl.e[0].st.next + 600 * S + 11 * S;
	assert_true(check(1, "x", 0, now, &skipped));
	assert_int_equal(skipped, 1);
	assert_int_equal(rl.e[0].st.delay, 75 * S);
}

/* Keys are per site, per reason and per source: one flooding key does not
 * hold back another's first line. */
static void test_keys_independent(void **state)
{
	uint32_t skipped;

	(void)state;
	ul_rl_init(&rl, NULL);
	assert_true(check(0, "bad magic", 1, T0, &skipped));
	assert_false(check(0, "bad magic", 1, T0 + 1, &skipped));
	assert_true(check(0, "bad version", 1, T0 + 2, &skipped));   /* reason */
	assert_true(check(0, "bad magic", 2, T0 + 3, &skipped));     /* source */
	assert_true(check(1, "bad magic", 1, T0 + 4, &skipped));     /* site */
	assert_false(check(0, "bad magic", 2, T0 + 5, &skipped));
}

/* A count no later line carried is reported by the flush once the key's
 * delay is over, and that summary backs off as a line would. */
static void test_flush_reports(void **state)
{
	struct sink k = { 0 };
	uint32_t skipped;

	(void)state;
	ul_rl_init(&rl, NULL);
	assert_true(check(2, "refused", 9, T0, &skipped));
	for (int i = 1; i <= 100; i++)
		assert_false(check(2, "refused", 9, T0 + (uint64_t)i * MS, &skipped));
	assert_int_equal(ul_rl_flush(&rl, T0 + 400 * MS, false, sink_emit, &k), 0);
	assert_int_equal(ul_rl_flush(&rl, T0 + 500 * MS, false, sink_emit, &k), 1);
	assert_int_equal(k.last.count, 100);
	assert_int_equal(k.last.site, 2);
	assert_int_equal(k.last.source, 9);
	assert_int_equal(k.last.since, T0 + MS);
	assert_false(k.last.other_sources);
	assert_string_equal(k.sample, "refused");
	/* the summary counts as a line: the next is due a second later */
	assert_false(check(2, "refused", 9, T0 + 1400 * MS, &skipped));
	assert_true(check(2, "refused", 9, T0 + 1500 * MS, &skipped));
	assert_int_equal(skipped, 1);
	/* nothing left: nothing to flush; `all` reports regardless of time */
	assert_int_equal(ul_rl_flush(&rl, T0 + 100 * S, false, sink_emit, &k), 0);
	assert_false(check(2, "refused", 9, T0 + 1501 * MS, &skipped));
	assert_int_equal(ul_rl_flush(&rl, T0 + 1502 * MS, true, sink_emit, &k), 1);
	assert_int_equal(k.total, 101);
}

/* 10,000 lines from 10,000 sources in 10 s: the site's bucket bounds the
 * new keys (16 at once, one more per second); the rest is one site total. */
static void test_many_sources_bounded(void **state)
{
	struct sink k = { 0 };
	uint32_t skipped;
	uint64_t now = T0;
	int printed = 0;

	(void)state;
	ul_rl_init(&rl, NULL);
	for (int i = 0; i < 10000; i++) {
		now = T0 + (uint64_t)i * MS;
		printed += ul_rl_check(&rl, 3, 42, (uint64_t)i + 1, now, 1, "garbage", &skipped);
	}
	assert_int_equal(printed, 16 + 9);
	assert_int_equal(ul_rl_flush(&rl, now, false, sink_emit, &k), 1);
	assert_true(k.last.other_sources);
	assert_int_equal(k.last.count, 10000 - 25);
	assert_int_equal(k.last.level, 1);
	assert_int_equal(k.last.since, T0 + 16 * MS);
	/* the site summary backs off too */
	for (int i = 0; i < 100; i++)
		ul_rl_check(&rl, 3, 42, 100000 + (uint64_t)i, now + 1, 1, "garbage", &skipped);
	assert_int_equal(ul_rl_flush(&rl, now + 2, false, sink_emit, &k), 0);
	assert_int_equal(ul_rl_flush(&rl, now + 500 * MS, false, sink_emit, &k), 1);
}

/* The table is fixed: a 65th key evicts the least recently used one, whose
 * held-back count goes to its site's total. */
static void test_eviction(void **state)
{
	struct sink k = { 0 };
	uint32_t skipped;

	(void)state;
	ul_rl_init(&rl, &(struct ul_rl_conf){ .min_delay_ns = 500 * MS, .max_delay_ns = 600 * S,
					     .backoff = 2 });   /* no site limit */
	for (uint64_t src = 1; src <= UL_RL_SLOTS; src++)
		assert_true(check(4, "r", src, T0 + src, &skipped));
	assert_false(check(4, "r", 1, T0 + 100, &skipped));     /* source 1: 1 held */
	assert_false(check(4, "r", 1, T0 + 101, &skipped));
	assert_true(check(4, "r", 1000, T0 + 200, &skipped));   /* evicts source 2 */
	assert_false(check(4, "r", 1, T0 + 201, &skipped));     /* still known */
	assert_true(check(4, "r", 2, T0 + 202, &skipped));      /* new again: evicts 3 */
	assert_true(check(4, "r", 1001, T0 + 300, &skipped));   /* evicts source 4 */
	assert_true(check(4, "r", 1002, T0 + 301, &skipped));   /* and 5 */
	/* evict source 1 with its 3 held lines: they go to the site total */
	for (uint64_t src = 2000; src < 2000 + UL_RL_SLOTS; src++)
		check(4, "r", src, T0 + 400 + src, &skipped);
	assert_int_equal(ul_rl_flush(&rl, T0 + 10 * S, false, sink_emit, &k), 1);
	assert_true(k.last.other_sources);
	assert_int_equal(k.last.count, 3);
	assert_int_equal(k.last.since, T0 + 100);
}

static void test_hash(void **state)
{
	uint8_t a[4] = { 127, 0, 0, 1 }, b[4] = { 127, 0, 0, 2 };

	(void)state;
	assert_int_not_equal(ul_rl_hash_str("bad magic"), ul_rl_hash_str("bad version"));
	assert_int_equal(ul_rl_hash_str("x"), ul_rl_hash_str("x"));
	assert_int_not_equal(ul_rl_hash_bytes(a, 4), ul_rl_hash_bytes(b, 4));
	assert_int_not_equal(ul_rl_hash_bytes(NULL, 0), 0);
}

/* A long line is kept cut short, with "..." */
static void test_sample_truncated(void **state)
{
	struct sink k = { 0 };
	char text[400];
	uint32_t skipped;

	(void)state;
	memset(text, 'a', sizeof(text) - 1);
	text[sizeof(text) - 1] = 0;
	ul_rl_init(&rl, NULL);
	assert_true(ul_rl_check(&rl, 0, 1, 1, T0, 0, text, &skipped));
	assert_false(ul_rl_check(&rl, 0, 1, 1, T0 + 1, 0, text, &skipped));
	assert_int_equal(ul_rl_flush(&rl, T0 + S, false, sink_emit, &k), 1);
	assert_int_equal(strlen(k.sample), UL_RL_SAMPLE - 1);
	assert_string_equal(k.sample + UL_RL_SAMPLE - 4, "...");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff_doubles),
		cmocka_unit_test(test_backoff_cap_and_quiet),
		cmocka_unit_test(test_keys_independent),
		cmocka_unit_test(test_flush_reports),
		cmocka_unit_test(test_many_sources_bounded),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_sample_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
