/* SPDX-License-Identifier: MIT */
/*
 * stats.c - rates and bandwidth from the node's LNet counters, printed the
 * way `lst stat` does: [R] is what the node received, [W] what it sent;
 * rates count LNet messages ("RPC/s" in lst's words), bandwidth counts
 * payload bytes. Avg is over the whole run; Min/Max over whole one-second
 * intervals (the average when the run was shorter).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ulst.h"

uint64_t ulst_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void deltas(const struct ulnet_counters *a, const struct ulnet_counters *b, double secs,
		   double out[4])
{
	out[0] = (double)(b->recv_count - a->recv_count) / secs;
	out[1] = (double)(b->send_count - a->send_count) / secs;
	out[2] = (double)(b->recv_length - a->recv_length) / secs / (1024.0 * 1024.0);
	out[3] = (double)(b->send_length - a->send_length) / secs / (1024.0 * 1024.0);
}

void ulst_rates_start(struct ulst_rate_sampler *s, ulnet_t *ln)
{
	memset(s, 0, sizeof(*s));
	ulnet_counters_get(ln, &s->start);
	s->last = s->start;
	s->t_start = s->t_last = ulst_now_ns();
}

void ulst_rates_tick(struct ulst_rate_sampler *s, ulnet_t *ln)
{
	uint64_t now = ulst_now_ns();
	struct ulnet_counters c;
	double v[4];

	if (now - s->t_last < 1000000000ULL)
		return;
	ulnet_counters_get(ln, &c);
	deltas(&s->last, &c, (double)(now - s->t_last) / 1e9, v);
	for (int k = 0; k < 4; k++) {
		if (!s->nsamples || v[k] < s->min[k])
			s->min[k] = v[k];
		if (!s->nsamples || v[k] > s->max[k])
			s->max[k] = v[k];
	}
	s->nsamples++;
	s->last = c;
	s->t_last = now;
}

void ulst_rates_print(struct ulst_rate_sampler *s, ulnet_t *ln, const char *who)
{
	struct ulnet_counters c;
	uint64_t now = ulst_now_ns();
	double secs = (double)(now - s->t_start) / 1e9, avg[4], mn[4], mx[4];

	if (secs <= 0)
		secs = 1e-9;
	ulnet_counters_get(ln, &c);
	deltas(&s->start, &c, secs, avg);
	for (int k = 0; k < 4; k++) {
		mn[k] = s->nsamples ? s->min[k] : avg[k];
		mx[k] = s->nsamples ? s->max[k] : avg[k];
	}
	printf("[LNet Rates of %s]\n", who);
	printf("[R] Avg: %-8.0f RPC/s Min: %-8.0f RPC/s Max: %-8.0f RPC/s\n", avg[0], mn[0], mx[0]);
	printf("[W] Avg: %-8.0f RPC/s Min: %-8.0f RPC/s Max: %-8.0f RPC/s\n", avg[1], mn[1], mx[1]);
	printf("[LNet Bandwidth of %s]\n", who);
	printf("[R] Avg: %-8.2f MiB/s Min: %-8.2f MiB/s Max: %-8.2f MiB/s\n", avg[2], mn[2], mx[2]);
	printf("[W] Avg: %-8.2f MiB/s Min: %-8.2f MiB/s Max: %-8.2f MiB/s\n", avg[3], mn[3], mx[3]);
}
