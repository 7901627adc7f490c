/* SPDX-License-Identifier: MIT */
/* ratelimit.c - log rate limiting per (site, reason, source); see ratelimit.h. */
#include "util/ratelimit.h"

#include <string.h>

#define UL_RL_QUIET_NS 10000000000ULL    /* the kernel's extra 10 s of quiet */

void ul_rl_init(struct ul_rl *rl, const struct ul_rl_conf *conf)
{
	memset(rl, 0, sizeof(*rl));
	if (conf) {
		rl->conf = *conf;
	} else {
		rl->conf.min_delay_ns = 500000000ULL;
		rl->conf.max_delay_ns = 600000000000ULL;
		rl->conf.backoff = 2;
		rl->conf.site_burst = 16;
		rl->conf.site_refill_ns = 1000000000ULL;
	}
	if (rl->conf.backoff < 1)
		rl->conf.backoff = 1;
	if (rl->conf.max_delay_ns < rl->conf.min_delay_ns)
		rl->conf.max_delay_ns = rl->conf.min_delay_ns;
	for (unsigned i = 0; i < UL_RL_SITES; i++)
		rl->site[i].tokens = rl->conf.site_burst;
}

static bool rl_due(const struct ul_rl_state *st, uint64_t now)
{
	return st->next == 0 || now >= st->next;
}

/* A line (or a summary) goes out at `now`: the delay until the next. */
static void rl_advance(const struct ul_rl_conf *conf, struct ul_rl_state *st, uint64_t now)
{
	if (st->next != 0 && now > st->next + conf->max_delay_ns + UL_RL_QUIET_NS)
		st->delay /= (uint64_t)conf->backoff * 4;   /* quiet for long */
	else
		st->delay *= conf->backoff;
	if (st->delay < conf->min_delay_ns)
		st->delay = conf->min_delay_ns;
	else if (st->delay > conf->max_delay_ns)
		st->delay = conf->max_delay_ns;
	st->next = now + st->delay;
	if (st->next == 0)
		st->next = 1;
}

/* One token of the site's bucket, refilled by elapsed time. */
static bool rl_site_take(const struct ul_rl_conf *conf, struct ul_rl_site *s, uint64_t now)
{
	if (conf->site_refill_ns == 0)
		return true;        /* no site limit */
	if (s->tokens < conf->site_burst && now > s->tokens_at) {
		uint64_t n = (now - s->tokens_at) / conf->site_refill_ns;

		if (n >= conf->site_burst - s->tokens) {
			s->tokens = conf->site_burst;
			s->tokens_at = now;
		} else if (n > 0) {
			s->tokens += (uint32_t)n;
			s->tokens_at += n * conf->site_refill_ns;
		}
	}
	if (s->tokens == 0)
		return false;
	if (s->tokens == conf->site_burst)
		s->tokens_at = now;  /* a full bucket refills from its first use */
	s->tokens--;
	return true;
}

static void rl_sample(char *dst, const char *text)
{
	size_t l;

	if (!text)
		return;
	l = strlen(text);
	if (l >= UL_RL_SAMPLE) {
		memcpy(dst, text, UL_RL_SAMPLE - 4);
		memcpy(dst + UL_RL_SAMPLE - 4, "...", 4);
	} else {
		memcpy(dst, text, l + 1);
	}
}

static void rl_hold(struct ul_rl *rl, uint32_t *count, uint64_t *since, uint8_t *lvl, char *sample,
		    uint64_t now, int level, const char *text)
{
	if ((*count)++ == 0)
		*since = now;
	*lvl = (uint8_t)level;
	rl_sample(sample, text);
	rl->suppressed++;
}

bool ul_rl_check(struct ul_rl *rl, unsigned site, uint32_t reason, uint64_t source, uint64_t now,
		 int level, const char *text, uint32_t *skipped)
{
	struct ul_rl_site *s;
	struct ul_rl_entry *e = NULL, *victim = NULL;

	if (skipped)
		*skipped = 0;
	if (site >= UL_RL_SITES)
		site = UL_RL_SITES - 1;
	s = &rl->site[site];
	for (unsigned i = 0; i < UL_RL_SLOTS; i++) {
		struct ul_rl_entry *x = &rl->e[i];

		if (!x->used) {
			if (!victim || victim->used)
				victim = x;
			continue;
		}
		if (x->site == site && x->reason == reason && x->source == source) {
			e = x;
			break;
		}
		if (!victim || (victim->used && x->last < victim->last))
			victim = x;
	}
	if (e) {
		e->last = now;
		if (rl_due(&e->st, now) && rl_site_take(&rl->conf, s, now)) {
			rl_advance(&rl->conf, &e->st, now);
			if (skipped)
				*skipped = e->count;
			e->count = 0;
			rl->printed++;
			return true;
		}
		rl_hold(rl, &e->count, &e->since, &e->level, e->sample, now, level, text);
		return false;
	}
	/* a new key: the site's bucket decides */
	if (!rl_site_take(&rl->conf, s, now)) {
		rl_hold(rl, &s->lost, &s->since, &s->level, s->sample, now, level, text);
		return false;
	}
	if (victim->used && victim->count) {
		/* its count goes to its site's "other sources" total */
		struct ul_rl_site *vs = &rl->site[victim->site];

		if (vs->lost == 0 || victim->since < vs->since)
			vs->since = victim->since;
		vs->lost += victim->count;
		vs->level = victim->level;
		memcpy(vs->sample, victim->sample, UL_RL_SAMPLE);
	}
	memset(victim, 0, sizeof(*victim));
	victim->used = true;
	victim->site = (uint16_t)site;
	victim->reason = reason;
	victim->source = source;
	victim->last = now;
	rl_advance(&rl->conf, &victim->st, now);
	rl->printed++;
	return true;
}

unsigned ul_rl_flush(struct ul_rl *rl, uint64_t now, bool all,
		     void (*emit)(void *arg, const struct ul_rl_summary *s), void *arg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < UL_RL_SLOTS; i++) {
		struct ul_rl_entry *e = &rl->e[i];
		struct ul_rl_summary sum;

		if (!e->used || !e->count || !(all || rl_due(&e->st, now)))
			continue;
		sum = (struct ul_rl_summary){ .site = e->site, .level = e->level, .count = e->count,
					      .since = e->since, .reason = e->reason,
					      .source = e->source, .sample = e->sample };
		e->count = 0;
		if (!all)
			rl_advance(&rl->conf, &e->st, now);
		emit(arg, &sum);
		n++;
	}
	for (unsigned i = 0; i < UL_RL_SITES; i++) {
		struct ul_rl_site *s = &rl->site[i];
		struct ul_rl_summary sum;

		if (!s->lost || !(all || rl_due(&s->st, now)))
			continue;
		sum = (struct ul_rl_summary){ .site = i, .level = s->level, .count = s->lost,
					      .since = s->since, .other_sources = true,
					      .sample = s->sample };
		s->lost = 0;
		if (!all)
			rl_advance(&rl->conf, &s->st, now);
		emit(arg, &sum);
		n++;
	}
	return n;
}

uint32_t ul_rl_hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; s && *s; s++) {
		h ^= (uint8_t)*s;
		h *= 16777619u;
	}
	return h;
}

uint64_t ul_rl_hash_bytes(const void *p, unsigned len)
{
	const uint8_t *b = p;
	uint64_t h = 14695981039346656037ULL;

	for (unsigned i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}
