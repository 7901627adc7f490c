/* SPDX-License-Identifier: MIT */
/*
 * main.c - ulst: the ulnet selftest/benchmark tool. Global options, then one
 * command (ping, serve, brw), each in its own module.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ulst.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ulst [node options] COMMAND [command options]\n"
		"\n"
		"ulst runs one ulnet node and, as that node, one command:\n"
		"  ping NID[,NID...] [--count N] [--timeout S]\n"
		"        LNet-ping each NID N times; rtt min/avg/max per target\n"
		"  serve [--portal P] [--duration S]\n"
		"        be a test target for brw (PUT/GET of any size up to 1 MiB) until\n"
		"        SIGINT/SIGTERM; print the counters on the way out\n"
		"  brw read|write NID [--size N[k|m]] [--count N] [--concurrency C]\n"
		"        [--check simple|full] [--timeout S] [--portal P]\n"
		"        GET (read) or PUT (write) against a 'ulst serve' node with C in\n"
		"        flight; lst-style rates and bandwidth\n"
		"\n"
		"%s"
		"  -h, --help              this text; 'ulst COMMAND --help' for a command\n"
		"\n"
		"Exit status: 0 success, 1 failure (unreachable peer, data check, timeout),\n"
		"2 bad arguments. ulst speaks plain LNet PUT/GET, not the kernel selftest\n"
		"(SRPC) protocol: its peers are ulst nodes (see docs/ulst.md).\n",
		ulst_global_help);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		ULST_GLOBAL_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		const char *name;
		int (*fn)(struct ulst_global *, int, char **);
	} cmds[] = {
		{ "ping", ulst_cmd_ping },
		{ "serve", ulst_cmd_serve },
		{ "brw", ulst_cmd_brw },
	};
	struct ulst_global g;
	int c;

	ulst_global_init(&g);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h" ULST_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
		int r;

		if (c == 'h') {
			usage(stdout);
			return ULST_EXIT_OK;
		}
		if (c == '?' || c == ':') {
			ulst_getopt_error(NULL, c, optopt, argv[optind - 1]);
			return ULST_EXIT_USAGE;
		}
		r = ulst_global_option(&g, NULL, c, optarg);
		if (r < 0)
			return ULST_EXIT_USAGE;
	}
	if (optind >= argc) {
		ulst_arg_error(NULL, "a command is required: ping, serve or brw");
		return ULST_EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
		if (!strcmp(argv[optind], cmds[k].name))
			return cmds[k].fn(&g, argc - optind, argv + optind);
	ulst_arg_error(NULL, "unknown command '%s': expected ping, serve or brw", argv[optind]);
	return ULST_EXIT_USAGE;
}
