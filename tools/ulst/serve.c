/* SPDX-License-Identifier: MIT */
/*
 * serve.c - ulst serve: a test target for brw on one portal (default 60):
 *   - ULST_SLOTS PUT sinks, match bits ULST_MB_WRITE | slot, 1 MiB each
 *     (allocated lazily by the kernel: only touched pages cost memory);
 *     a PUT whose hdr_data asks for a check is verified on arrival, before
 *     the ACK leaves (the handler runs first, as in the kernel);
 *   - one GET source, ULST_MB_READ, 1 MiB of the ULST_READ_SEED pattern;
 *   - the counters, ULST_MB_STATS, for brw to read (little-endian u64s).
 * It also runs the selftest agent (ulnet/selftest.h), so a kernel lst
 * console can use the node as a test server (ping and brw on portals 50-52).
 * Runs until SIGINT/SIGTERM (or --duration), prints its counters, exits 0.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ulnet/selftest.h"
#include "ulst.h"

struct serve {
	uint8_t *slot[ULST_SLOTS];
	uint8_t *read_buf;
	uint64_t stats_buf[ULST_STAT_COUNT];
	uint64_t ctr[ULST_STAT_COUNT];   /* host order, atomics */
	uint64_t reported;               /* check failures printed */
};

static struct serve srv;

static void ctr_add(enum ulst_stat_field f, uint64_t v)
{
	uint64_t n = __atomic_add_fetch(&srv.ctr[f], v, __ATOMIC_RELAXED);

	__atomic_store_n(&srv.stats_buf[f], htole64(n), __ATOMIC_RELAXED);
}

static uint64_t ctr(enum ulst_stat_field f)
{
	return __atomic_load_n(&srv.ctr[f], __ATOMIC_RELAXED);
}

#define TAG_READ 0x1000
#define TAG_STATS 0x2000

static void serve_handler(const struct ulnet_event *ev)
{
	uintptr_t tag = (uintptr_t)ev->md_user_ptr;
	char nb[ULNET_NIDSTR_SIZE];

	if (ev->type == ULNET_EVENT_UNLINK)
		return;
	if (ev->status) {
		ctr_add(ULST_STAT_ERRORS, 1);
		if (__atomic_fetch_add(&srv.reported, 1, __ATOMIC_RELAXED) < 10)
			fprintf(stderr, "ulst serve: %s from %s failed: %s\n",
				ev->type == ULNET_EVENT_PUT ? "PUT" : "GET",
				ulnet_nid_str(&ev->initiator.nid, nb), ulnet_strerror(ev->status));
		return;
	}
	if (ev->type == ULNET_EVENT_PUT && tag < ULST_SLOTS) {
		enum ulst_check mode = (enum ulst_check)(ev->hdr_data >> ULST_HDR_CHECK_SHIFT);
		uint64_t seed = ev->hdr_data & ULST_HDR_SEED_MASK;

		ctr_add(ULST_STAT_PUTS, 1);
		ctr_add(ULST_STAT_PUT_BYTES, ev->mlength);
		if (mode != ULST_CHECK_NONE) {
			long bad = mode > ULST_CHECK_FULL || ev->mlength != ev->rlength
					   ? 0 : ulst_pattern_verify(srv.slot[tag], ev->mlength, seed, mode);

			if (bad >= 0) {
				ctr_add(ULST_STAT_CHECK_ERRORS, 1);
				if (__atomic_fetch_add(&srv.reported, 1, __ATOMIC_RELAXED) < 10)
					fprintf(stderr,
						"ulst serve: PUT from %s (slot %u, %u of %u bytes, check %d): "
						"wrong data at byte %ld\n",
						ulnet_nid_str(&ev->initiator.nid, nb), (unsigned)tag,
						ev->mlength, ev->rlength, (int)mode, bad);
			}
		}
	} else if (ev->type == ULNET_EVENT_GET && tag == TAG_READ) {
		ctr_add(ULST_STAT_GETS, 1);
		ctr_add(ULST_STAT_GET_BYTES, ev->mlength);
	}
}

static int attach(ulnet_t *ln, unsigned portal, uint64_t mbits, void *buf, size_t len,
		  unsigned ops, uintptr_t tag)
{
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = { 0 };
	ulnet_handle_t me, mdh;
	int rc;

	rc = ulnet_me_attach(ln, portal, any, mbits, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me);
	if (rc)
		return rc;
	md.start = buf;
	md.length = len;
	md.threshold = ULNET_MD_THRESH_INF;
	md.options = ops | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE;
	md.user_ptr = (void *)tag;
	md.handler = serve_handler;
	rc = ulnet_md_attach(ln, me, &md, ULNET_RETAIN, &mdh);
	if (rc)
		(void)ulnet_me_unlink(ln, me);
	return rc;
}

static void serve_usage(FILE *f)
{
	fprintf(f,
		"usage: ulst [node options] serve [--portal P] [--duration S]\n"
		"  Be a target for 'ulst brw': accept PUTs (%d slots) and GETs of up to 1 MiB\n"
		"  on portal P, check the data of PUTs that ask for it, and on SIGINT or\n"
		"  SIGTERM print the counters and exit 0. The node is also a test server for a\n"
		"  kernel lst console (the selftest agent, portals 50-52).\n"
		"  -P, --portal P     portal index, 1..63 (default %d; brw must use the same)\n"
		"  -d, --duration S   exit by itself after S seconds, 0..86400 (default 0: never)\n"
		"%s",
		ULST_SLOTS, ULST_PORTAL_DEFAULT, ulst_global_help);
}

static void print_counters(const char *who, const char *why)
{
	printf("ulst serve: %s: %s: PUT %llu (%.2f MiB), GET %llu (%.2f MiB), check errors %llu, "
	       "errors %llu\n",
	       who, why, (unsigned long long)ctr(ULST_STAT_PUTS),
	       (double)ctr(ULST_STAT_PUT_BYTES) / 1048576.0, (unsigned long long)ctr(ULST_STAT_GETS),
	       (double)ctr(ULST_STAT_GET_BYTES) / 1048576.0,
	       (unsigned long long)ctr(ULST_STAT_CHECK_ERRORS), (unsigned long long)ctr(ULST_STAT_ERRORS));
	fflush(stdout);
}

int ulst_cmd_serve(struct ulst_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		ULST_GLOBAL_LONGOPTS,
		{ "portal", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long portal = ULST_PORTAL_DEFAULT;
	double duration = 0;
	struct ulst_node node;
	ulnet_selftest_t *st = NULL;
	struct ulnet_selftest_stats sts;
	char nb[ULNET_NIDSTR_SIZE], why[64] = "duration over";
	sigset_t set;
	uint64_t end;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":P:d:h" ULST_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
		int r = ulst_global_option(g, "serve", c, optarg);

		if (r < 0)
			return ULST_EXIT_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case 'P':
			if (ulst_parse_ulong("serve", "--portal", optarg, 1, ULNET_MAX_PORTALS - 1, &portal))
				return ULST_EXIT_USAGE;
			break;
		case 'd':
			if (ulst_parse_seconds("serve", "--duration", optarg, 0, 86400, &duration))
				return ULST_EXIT_USAGE;
			break;
		case 'h':
			serve_usage(stdout);
			return ULST_EXIT_OK;
		default:
			ulst_getopt_error("serve", c, optopt, argv[optind - 1]);
			return ULST_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		ulst_arg_error("serve", "unexpected argument '%s'", argv[optind]);
		return ULST_EXIT_USAGE;
	}

	/* SIGINT/SIGTERM are taken with sigtimedwait() below; block them before
	 * ulnet's threads start so that they inherit the mask */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	memset(&srv, 0, sizeof(srv));
	srv.read_buf = malloc(ULST_MAX_SIZE);
	for (int s = 0; s < ULST_SLOTS; s++)
		srv.slot[s] = calloc(1, ULST_MAX_SIZE);
	for (int s = 0; s < ULST_SLOTS; s++)
		if (!srv.slot[s] || !srv.read_buf) {
			fprintf(stderr, "ulst serve: out of memory\n");
			rc = ULST_EXIT_FAIL;
			goto out_free;
		}
	ulst_pattern_fill(srv.read_buf, ULST_MAX_SIZE, ULST_READ_SEED, ULST_CHECK_FULL);
	if (getenv("ULST_TEST_CORRUPT")) {
		/* test hook: wrong bytes where every check looks (first byte of
		 * each page), to prove that brw read --check notices */
		for (size_t off = 0; off < ULST_MAX_SIZE; off += 4096)
			srv.read_buf[off] ^= 0x5a;
	}
	srv.ctr[ULST_STAT_MAGIC] = ULST_STATS_MAGIC;
	srv.stats_buf[ULST_STAT_MAGIC] = htole64(ULST_STATS_MAGIC);

	rc = ulst_node_start(g, "serve", &node);
	if (rc)
		goto out_free;
	ulnet_nid_str(&node.nid, nb);
	for (int s = 0; s < ULST_SLOTS && !rc; s++)
		rc = attach(node.ln, (unsigned)portal, ULST_MB_WRITE | (uint64_t)s, srv.slot[s],
			    ULST_MAX_SIZE, ULNET_MD_OP_PUT, (uintptr_t)s);
	if (!rc)
		rc = attach(node.ln, (unsigned)portal, ULST_MB_READ, srv.read_buf, ULST_MAX_SIZE,
			    ULNET_MD_OP_GET, TAG_READ);
	if (!rc)
		rc = attach(node.ln, (unsigned)portal, ULST_MB_STATS, srv.stats_buf, sizeof(srv.stats_buf),
			    ULNET_MD_OP_GET, TAG_STATS);
	if (rc) {
		fprintf(stderr, "ulst serve: cannot attach the test MDs on portal %lu: %s\n", portal,
			ulnet_strerror(rc));
		ulst_node_stop(&node);
		rc = ULST_EXIT_FAIL;
		goto out_free;
	}
	rc = ulnet_selftest_start(node.ln, NULL, &st);
	if (rc) {
		fprintf(stderr, "ulst serve: cannot start the selftest agent: %s\n", ulnet_strerror(rc));
		ulst_node_stop(&node);
		rc = ULST_EXIT_FAIL;
		goto out_free;
	}
	printf("ulst serve: %s ready on portal %lu (port %u, accept %s), PUT/GET up to 1 MiB, %d write slots; "
	       "lst test server (selftest portals 50-52)\n",
	       nb, portal, g->port, g->accept, ULST_SLOTS);
	fflush(stdout);

	end = duration > 0 ? ulst_now_ns() + (uint64_t)(duration * 1e9) : 0;
	for (;;) {
		struct timespec ts = { .tv_sec = 1, .tv_nsec = 0 };
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGINT || sig == SIGTERM) {
			snprintf(why, sizeof(why), "%s", ulst_stop_signal_name(sig));
			break;
		}
		if (sig < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(why, sizeof(why), "sigtimedwait: %s", strerror(errno));
			break;
		}
		if (end && ulst_now_ns() >= end)
			break;
	}
	(void)ulnet_selftest_stats_get(st, &sts);
	ulnet_selftest_stop(st);
	ulst_node_stop(&node);    /* no handler runs after this */
	print_counters(nb, why);
	printf("ulst serve: %s: selftest: %u RPCs (%u dropped), ping %u, brw %u, brw check errors %u\n", nb,
	       sts.rpcs_rcvd, sts.rpcs_dropped, sts.ping_reqs, sts.brw_reqs, sts.brw_check_errors);
	fflush(stdout);
	rc = ULST_EXIT_OK;
out_free:
	for (int s = 0; s < ULST_SLOTS; s++)
		free(srv.slot[s]);
	free(srv.read_buf);
	return rc;
}
