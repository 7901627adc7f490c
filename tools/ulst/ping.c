/* SPDX-License-Identifier: MIT */
/*
 * ping.c - ulst ping NID[,NID...] [--count N] [--timeout S]: LNet pings
 * (GET of the ping info on portal 0), one target after the other, and the
 * round trip per target: min/avg/max over the replies.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ulst.h"

#define MAX_TARGETS 64

static void ping_usage(FILE *f)
{
	fprintf(f,
		"usage: ulst [node options] ping NID[,NID...] [--count N] [--timeout S]\n"
		"  LNet-ping every NID (pid 12345) N times, one after the other, and print\n"
		"  per target: replies, rtt min/avg/max in ms, the NIDs the peer listed.\n"
		"  -c, --count N      pings per target, 1..10000 (default 3)\n"
		"  -t, --timeout S    seconds to wait for each reply, 0.001..300 (default 5)\n"
		"%s"
		"Exit status: 0 every ping answered, 1 some were not, 2 bad arguments.\n",
		ulst_global_help);
}

int ulst_cmd_ping(struct ulst_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		ULST_GLOBAL_LONGOPTS,
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	ulnet_nid_t targets[MAX_TARGETS];
	unsigned long count = 3;
	double timeout = 5;
	int ntargets = 0, c, rc, failed = 0;
	struct ulst_node node;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:t:h" ULST_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
		int r = ulst_global_option(g, "ping", c, optarg);

		if (r < 0)
			return ULST_EXIT_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case 'c':
			if (ulst_parse_ulong("ping", "--count", optarg, 1, 10000, &count))
				return ULST_EXIT_USAGE;
			break;
		case 't':
			if (ulst_parse_seconds("ping", "--timeout", optarg, 0.001, 300, &timeout))
				return ULST_EXIT_USAGE;
			break;
		case 'h':
			ping_usage(stdout);
			return ULST_EXIT_OK;
		default:
			ulst_getopt_error("ping", c, optopt, argv[optind - 1]);
			return ULST_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ulst_arg_error("ping", "NID[,NID...] is required: the nodes to ping");
		return ULST_EXIT_USAGE;
	}
	for (int k = optind; k < argc; k++) {
		int n = ulst_parse_nids("ping", "NID", argv[k], targets + ntargets, MAX_TARGETS - ntargets);

		if (n < 0)
			return ULST_EXIT_USAGE;
		ntargets += n;
	}

	rc = ulst_node_start(g, "ping", &node);
	if (rc)
		return rc;
	for (int t = 0; t < ntargets; t++) {
		char nb[ULNET_NIDSTR_SIZE];
		double mn = 0, mx = 0, sum = 0;
		unsigned long ok = 0;
		int last_err = 0;
		struct ulnet_ping_peer first = { 0 };

		ulnet_nid_str(&targets[t], nb);
		for (unsigned long k = 0; k < count; k++) {
			struct ulnet_ping_peer pp = { 0 };
			ulnet_process_id_t id = { .nid = targets[t], .pid = ULNET_PID_ANY };
			uint64_t t0 = ulst_now_ns();
			int r = ulnet_ping(node.ln, id, NULL, 0, (int)(timeout * 1000 + 0.5), &pp);
			double ms = (double)(ulst_now_ns() - t0) / 1e6;

			if (r) {
				last_err = r;
				if (g->verbose)
					fprintf(stderr, "ulst ping: %s: ping %lu: %s\n", nb, k + 1, ulnet_strerror(r));
				continue;
			}
			if (!ok)
				first = pp;
			mn = ok == 0 || ms < mn ? ms : mn;
			mx = ok == 0 || ms > mx ? ms : mx;
			sum += ms;
			ok++;
		}
		if (ok) {
			char pb[ULNET_NIDSTR_SIZE];

			printf("%s: %lu/%lu replies, rtt min/avg/max = %.3f/%.3f/%.3f ms, primary %s%s, NIDs",
			       nb, ok, count, mn, sum / (double)ok, mx, ulnet_nid_str(&first.primary, pb),
			       first.multi_rail ? " (multi-rail)" : "");
			for (int i = 0; i < first.nnids && i < 16; i++)
				printf("%s%s", i ? "," : " ", ulnet_nid_str(&first.nids[i], pb));
			printf("%s\n", first.nnids ? "" : " none");
		}
		if (ok < count) {
			if (ok)
				printf("%s: %lu of %lu pings failed, last error: %s\n", nb, count - ok, count,
				       ulnet_strerror(last_err));
			else
				printf("%s: 0/%lu replies: %s\n", nb, count, ulnet_strerror(last_err));
			failed++;
		}
		fflush(stdout);
	}
	ulst_node_stop(&node);
	return failed ? ULST_EXIT_FAIL : ULST_EXIT_OK;
}
