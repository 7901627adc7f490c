/* SPDX-License-Identifier: MIT */
/*
 * ratelimit.h - rate limiting of log lines, in the manner of libcfs's
 * CDEBUG_LIMIT (facts from lnet/libcfs/tracefile.c, not its code): each
 * key has a "next allowed" time and a delay; a line that comes before
 * `next` is counted, not printed; a printed line doubles the delay
 * (backoff), clamped to [min_delay, max_delay] (0.5 s .. 600 s), and a key
 * quiet for longer than max_delay + 10 s after its `next` starts again
 * with its delay divided by 4 * backoff. The count of lines held back is
 * told with the next line printed ("N similar messages suppressed").
 *
 * Here a key is (site, reason, source): a call site, the reason's format
 * text (hashed by the caller) and, where known, the peer's address (0:
 * none), so a flood from one address or of one reason does not hide the
 * first line of another. Keys live in a fixed table (UL_RL_SLOTS, least
 * recently used evicted); nothing is allocated. Many sources (an attacker
 * with many addresses) are bounded per site: a new key, or a key whose
 * delay is over, also needs a token from its site's bucket (`site_burst`
 * lines, one more every `site_refill_ns`); lines refused for want of a
 * token are counted on the site ("from other sources"), as are the counts
 * of evicted keys.
 *
 * ul_rl_flush() (call it periodically) reports counts that no later line
 * carried: one summary per key whose delay is over (itself backed off as a
 * line), one per site.
 *
 * Time is passed in (the owner's clock, ns); no globals, no locking: the
 * owner serializes calls.
 */
#ifndef ULNET_UTIL_RATELIMIT_H
#define ULNET_UTIL_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define UL_RL_SLOTS 64
#define UL_RL_SITES 8
#define UL_RL_SAMPLE 120

struct ul_rl_conf {
	uint64_t min_delay_ns;    /* 500 ms: libcfs console_min_delay */
	uint64_t max_delay_ns;    /* 600 s: libcfs console_max_delay */
	unsigned backoff;         /* 2: libcfs console_backoff */
	unsigned site_burst;      /* 16 lines per site at once */
	uint64_t site_refill_ns;  /* then one more per 1 s */
};

/* the kernel's cdls_next / cdls_delay */
struct ul_rl_state {
	uint64_t next;            /* 0: never printed */
	uint64_t delay;
};

struct ul_rl_entry {
	bool used;
	uint8_t level;            /* tag of the last line counted (a log level) */
	uint16_t site;
	uint32_t reason;
	uint64_t source;
	struct ul_rl_state st;
	uint64_t last;            /* last line of this key, printed or not (LRU) */
	uint64_t since;           /* first line counted since the last report */
	uint32_t count;           /* lines held back since the last report */
	char sample[UL_RL_SAMPLE];/* the last line held back */
};

struct ul_rl_site {
	uint32_t tokens;
	uint64_t tokens_at;       /* when tokens were last refilled */
	struct ul_rl_state st;    /* its summaries back off as lines do */
	uint8_t level;
	uint64_t since;
	uint32_t lost;            /* held back without a key, or evicted with one */
	char sample[UL_RL_SAMPLE];
};

struct ul_rl {
	struct ul_rl_conf conf;
	struct ul_rl_site site[UL_RL_SITES];
	struct ul_rl_entry e[UL_RL_SLOTS];
	uint64_t suppressed;      /* lines held back, ever */
	uint64_t printed;         /* lines allowed, ever */
};

/* A count of held-back lines, reported by ul_rl_flush(). */
struct ul_rl_summary {
	unsigned site;
	int level;                /* tag of the last line held back */
	uint32_t count;
	uint64_t since;           /* clock of the first of them */
	bool other_sources;       /* a site total: no key (site limit, evictions) */
	uint32_t reason;          /* keys only */
	uint64_t source;
	const char *sample;       /* the last one (may be cut short) */
};

/* Defaults (NULL conf) as above. */
void ul_rl_init(struct ul_rl *rl, const struct ul_rl_conf *conf);

/*
 * One line for key (site < UL_RL_SITES, reason, source) at `now`. True:
 * print it, and *skipped (if not NULL) is how many lines of this key were
 * held back since its last report (0 if none; they are reported now).
 * False: held back (counted, `text` kept as the sample; text may be NULL).
 * `level` is an opaque tag kept for the summary.
 */
bool ul_rl_check(struct ul_rl *rl, unsigned site, uint32_t reason, uint64_t source, uint64_t now,
		 int level, const char *text, uint32_t *skipped);

/*
 * Report counts no printed line has carried: each key whose delay is over
 * (all of them with `all`, e.g. at shutdown) and each site with lines
 * held back for other sources. `emit` is called once per summary; returns
 * how many.
 */
unsigned ul_rl_flush(struct ul_rl *rl, uint64_t now, bool all,
		     void (*emit)(void *arg, const struct ul_rl_summary *s), void *arg);

/* 32-bit FNV-1a of a string (a reason key) and 64-bit FNV-1a of bytes (a
 * source key; never 0). */
uint32_t ul_rl_hash_str(const char *s);
uint64_t ul_rl_hash_bytes(const void *p, unsigned len);

#endif
