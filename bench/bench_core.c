/* SPDX-License-Identifier: MIT */
/*
 * bench_core.c - the core's own costs, through the public API on 0@lo:
 *  - loopback PUT rate, without and with ACK;
 *  - matching cost with 1, 1000 and 100000 MEs on one portal, the PUT
 *    matching the last ME attached: exact MEs (hashed by match bits, as the
 *    kernel) and MEs with ignore bits (one list, walked in order).
 * Each line: name, ns/op, ops/s. Each measurement runs ~0.3 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ulnet/ulnet.h"

#define RUN_NS 300000000ULL

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const ulnet_process_id_t any = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						 .addr = { 0xff, 0xff, 0xff, 0xff } },
					.pid = ULNET_PID_ANY };
static const ulnet_process_id_t self = { .nid = { .type = ULNET_LND_LO }, .pid = 12345 };

static unsigned long acks;
static void count_ack(const struct ulnet_event *ev)
{
	if (ev->type == ULNET_EVENT_ACK)
		acks++;
}

static ulnet_t *mk(void)
{
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS };
	ulnet_t *ln;

	if (ulnet_create(&o, &ln)) {
		fprintf(stderr, "bench_core: ulnet_create failed\n");
		exit(1);
	}
	return ln;
}

static void report(const char *name, uint64_t ns, unsigned long n)
{
	double per = (double)ns / (double)n;

	printf("%-44s %10.1f ns/op %12.0f ops/s\n", name, per, 1e9 / per);
}

/* PUT `len` bytes to portal 1 bits `bits` until RUN_NS; returns ops. */
static unsigned long put_loop(ulnet_t *ln, ulnet_handle_t mdh, enum ulnet_ack_req ack,
			      uint64_t bits, uint64_t *elapsed, unsigned long max_ops)
{
	uint64_t t0 = now_ns(), t;
	unsigned long n = 0;

	do {
		for (int i = 0; i < 64 && n < max_ops; i++, n++) {
			if (ulnet_put(ln, NULL, mdh, ack, self, 1, bits, 0, 0)) {
				fprintf(stderr, "bench_core: put failed\n");
				exit(1);
			}
		}
		t = now_ns();
	} while (t - t0 < RUN_NS && n < max_ops);
	*elapsed = t - t0;
	return n;
}

static void bench_put(bool with_ack)
{
	ulnet_t *ln = mk();
	static uint8_t src[64], dst[64];
	struct ulnet_md tmd = { .start = dst, .length = sizeof(dst), .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md smd = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF,
				.handler = count_ack };
	ulnet_handle_t meh, mdh, smdh;
	uint64_t ns;
	unsigned long n;

	ulnet_me_attach(ln, 1, any, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh);
	ulnet_md_attach(ln, meh, &tmd, ULNET_RETAIN, &mdh);
	ulnet_md_bind(ln, &smd, ULNET_RETAIN, &smdh);
	acks = 0;
	n = put_loop(ln, smdh, with_ack ? ULNET_ACK_REQ : ULNET_NOACK_REQ, 0, &ns, ~0UL);
	if (with_ack && acks != n)
		fprintf(stderr, "bench_core: %lu ACKs for %lu PUTs\n", acks, n);
	report(with_ack ? "lo PUT 64 B with ACK" : "lo PUT 64 B no ACK", ns, n);
	ulnet_destroy(ln);
}

static void bench_match(unsigned nme, bool ignore_bits)
{
	ulnet_t *ln = mk();
	static uint8_t src[8], dst[8];
	struct ulnet_md tmd = { .start = dst, .length = sizeof(dst), .threshold = ULNET_MD_THRESH_INF,
				.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct ulnet_md smd = { .start = src, .length = sizeof(src), .threshold = ULNET_MD_THRESH_INF };
	ulnet_handle_t meh, mdh, smdh;
	char name[64];
	uint64_t ns, last = 0;
	unsigned long n;
	unsigned i;

	for (i = 0; i < nme; i++) {
		/* distinct bits; with ignore bits the low byte is ignored, so
		 * bits step by 256 to stay distinct */
		uint64_t bits = ignore_bits ? ((uint64_t)i + 1) << 8 : (uint64_t)i + 1;

		if (ulnet_me_attach(ln, 1, any, bits, ignore_bits ? 0xff : 0, ULNET_RETAIN,
				    ULNET_INS_AFTER, &meh) ||
		    ulnet_md_attach(ln, meh, &tmd, ULNET_RETAIN, &mdh)) {
			fprintf(stderr, "bench_core: attach failed\n");
			exit(1);
		}
		last = bits;
	}
	ulnet_md_bind(ln, &smd, ULNET_RETAIN, &smdh);
	n = put_loop(ln, smdh, ULNET_NOACK_REQ, last, &ns, ~0UL);
	snprintf(name, sizeof(name), "match last of %u %s MEs (lo PUT)", nme,
		 ignore_bits ? "ignore-bits" : "exact");
	report(name, ns, n);
	ulnet_destroy(ln);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_put(false);
	bench_put(true);
	bench_match(1, false);
	bench_match(1000, false);
	bench_match(100000, false);
	bench_match(1, true);
	bench_match(1000, true);
	bench_match(100000, true);
	return 0;
}
