/* SPDX-License-Identifier: MIT */
/*
 * ulst.h - ulst, the ulnet selftest/benchmark tool: shared definitions.
 *
 * ulst is one ulnet node (--nid, --accept-port, --accept) that runs one
 * command: ping (LNet pings), serve (a test target) or brw (bulk read/write
 * against a serve target). It speaks plain LNet PUT/GET on its own portal and
 * match bits, not the kernel selftest's SRPC protocol (docs/ulst.md); serve also
 * runs libulnet's SRPC agent so that a kernel lst console can use the node.
 *
 * Modules: main.c (dispatch, global options), args.c (argument parsers),
 * node.c (the ulnet node), pattern.c (data patterns and checks), stats.c
 * (lst-style rates), ping.c, serve.c, brw.c (the commands).
 */
#ifndef ULST_H
#define ULST_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

/* Exit codes of every command. */
enum { ULST_EXIT_OK = 0, ULST_EXIT_FAIL = 1, ULST_EXIT_USAGE = 2 };

/* --- the wire contract between brw and serve ------------------------------- */

#define ULST_PORTAL_DEFAULT 60       /* not used by Lustre nor by lst (50-52) */
#define ULST_SLOTS 64                /* max --concurrency: one write slot each */
#define ULST_MAX_SIZE ULNET_MTU      /* 1 MiB */
#define ULST_MB_WRITE 0x554c535457000000ULL /* "ULSTW" | slot: PUT sinks */
#define ULST_MB_READ 0x554c535452000000ULL  /* "ULSTR": the GET source */
#define ULST_MB_STATS 0x554c535453000000ULL /* "ULSTS": counters, GET */
#define ULST_READ_SEED 0x5eed5eedULL       /* pattern of the GET source */

/* PUT hdr_data: check mode in bits 62-63, pattern seed in bits 0-61. */
#define ULST_HDR_CHECK_SHIFT 62
#define ULST_HDR_SEED_MASK ((1ULL << ULST_HDR_CHECK_SHIFT) - 1)

/* The server's counters, read by brw with a GET: little-endian u64s. */
enum ulst_stat_field {
	ULST_STAT_MAGIC = 0,   /* ULST_STATS_MAGIC */
	ULST_STAT_PUTS,
	ULST_STAT_PUT_BYTES,
	ULST_STAT_GETS,
	ULST_STAT_GET_BYTES,
	ULST_STAT_CHECK_ERRORS,
	ULST_STAT_ERRORS,
	ULST_STAT_COUNT
};
#define ULST_STATS_MAGIC 0x756c737473746174ULL /* "ulststat" */

/* --- global options and the node --------------------------------------------- */

#define ULST_MAX_NIDS 4         /* --nid given at most this often */

struct ulst_global {
	const char *nids[ULST_MAX_NIDS]; /* --nid, required; again for more NIs */
	int nnids;
	unsigned port;             /* --accept-port, default 988 */
	char accept[8];            /* --accept: "secure" (default), "all", "none" */
	int verbose;               /* -v: ulnet log level */
	unsigned tx_timeout;       /* --transaction-timeout, 0: the default */
	unsigned peer_credits;     /* --peer-credits, 0: the default (8) */
	const char *routes;        /* --routes, in the lnet routes= syntax */
	unsigned o2ib_service;     /* --o2ib-service, 0: ko2iblnd's default (987) */
	bool o2ib_cksum;           /* --o2ib-cksum: ko2iblnd's cksum=1 */
	unsigned o2ib_timeout;     /* --o2ib-timeout, 0: ko2iblnd's default (50 s) */
};

struct ulst_node {
	ulnet_t *ln;
	ulnet_nid_t nid;           /* the first --nid: the primary */
};

/* Long-only global options (values no short option takes). */
#define ULST_OPT_O2IB_SERVICE 0x1001
#define ULST_OPT_O2IB_CKSUM 0x1002
#define ULST_OPT_ROUTES 0x1003
#define ULST_OPT_PEER_CREDITS 0x1004
#define ULST_OPT_O2IB_TIMEOUT 0x1005

/* The global options, accepted before and after the command word. */
#define ULST_GLOBAL_SHORTOPTS "n:p:a:T:v"
#define ULST_GLOBAL_LONGOPTS                                            \
	{ "nid", required_argument, NULL, 'n' },                        \
	{ "accept-port", required_argument, NULL, 'p' },                \
	{ "accept", required_argument, NULL, 'a' },                     \
	{ "transaction-timeout", required_argument, NULL, 'T' },        \
	{ "peer-credits", required_argument, NULL, ULST_OPT_PEER_CREDITS }, \
	{ "routes", required_argument, NULL, ULST_OPT_ROUTES },         \
	{ "verbose", no_argument, NULL, 'v' },                          \
	{ "o2ib-service", required_argument, NULL, ULST_OPT_O2IB_SERVICE }, \
	{ "o2ib-cksum", no_argument, NULL, ULST_OPT_O2IB_CKSUM },       \
	{ "o2ib-timeout", required_argument, NULL, ULST_OPT_O2IB_TIMEOUT }

void ulst_global_init(struct ulst_global *g);
/* Handle global option `opt` (getopt's return); 1 if it was one, 0 if not,
 * -1 after printing an error about its argument. */
int ulst_global_option(struct ulst_global *g, const char *cmd, int opt, const char *arg);
extern const char ulst_global_help[];

/* Start the node (instance, LND, NI, the routes of --routes); prints the error and returns an
 * exit code (0 on success). */
int ulst_node_start(const struct ulst_global *g, const char *cmd, struct ulst_node *n);
void ulst_node_stop(struct ulst_node *n);

/* --- argument parsers (args.c): print "ulst CMD: OPT 'ARG': reason", return -1 */

void ulst_arg_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* getopt's '?' or ':' turned into a message naming the option. */
void ulst_getopt_error(const char *cmd, int opt, int optopt_v, const char *arg);
int ulst_parse_ulong(const char *cmd, const char *opt, const char *s, unsigned long min,
		     unsigned long max, unsigned long *out);
int ulst_parse_size(const char *cmd, const char *opt, const char *s, size_t max, size_t *out);
int ulst_parse_seconds(const char *cmd, const char *opt, const char *s, double min, double max,
		       double *out);
int ulst_parse_nid(const char *cmd, const char *what, const char *s, ulnet_nid_t *nid);
/* Comma-separated NIDs; returns how many (1..max) or -1. */
int ulst_parse_nids(const char *cmd, const char *what, const char *s, ulnet_nid_t *nids, int max);
/* Size text: "4096 B", "4 KiB", "1 MiB". */
const char *ulst_size_str(size_t n, char *buf, size_t len);

/* --- patterns (pattern.c) -------------------------------------------------------- */

enum ulst_check { ULST_CHECK_NONE = 0, ULST_CHECK_SIMPLE = 1, ULST_CHECK_FULL = 2 };

/* simple: the first and last 8 bytes of every 4 KiB page (as lst's "simple");
 * full: every byte. Fill writes the pattern of `seed` there; poison writes
 * its complement, so stale bytes never pass. */
void ulst_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode);
void ulst_pattern_poison(uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode);
/* Offset of the first wrong byte, or -1. */
long ulst_pattern_verify(const uint8_t *buf, size_t len, uint64_t seed, enum ulst_check mode);
uint8_t ulst_pattern_byte(size_t off, uint64_t seed);

/* --- stats (stats.c) --------------------------------------------------------------- */

struct ulst_rate_sampler {
	struct ulnet_counters start, last;
	uint64_t t_start, t_last;   /* ns */
	int nsamples;               /* whole intervals seen */
	double min[4], max[4];      /* recv/s, send/s, recv MiB/s, send MiB/s */
};

uint64_t ulst_now_ns(void);

/* The name of the signal that stops a command (SIGINT or SIGTERM). */
static inline const char *ulst_stop_signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : "SIGTERM";
}
void ulst_rates_start(struct ulst_rate_sampler *s, ulnet_t *ln);
/* Take an interval sample if at least one second passed since the last. */
void ulst_rates_tick(struct ulst_rate_sampler *s, ulnet_t *ln);
/* Print "[LNet Rates of WHO]" and "[LNet Bandwidth of WHO]" as lst stat. */
void ulst_rates_print(struct ulst_rate_sampler *s, ulnet_t *ln, const char *who);

/* --- commands --------------------------------------------------------------------- */

int ulst_cmd_ping(struct ulst_global *g, int argc, char **argv);
int ulst_cmd_serve(struct ulst_global *g, int argc, char **argv);
int ulst_cmd_brw(struct ulst_global *g, int argc, char **argv);

#endif
