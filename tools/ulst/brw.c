/* SPDX-License-Identifier: MIT */
/*
 * brw.c - ulst brw read|write NID: bulk GETs (read) or PUTs with ACK (write)
 * of --size bytes against a 'ulst serve' node, --count in all, --concurrency
 * in flight. Each in-flight operation owns a slot (a buffer; for writes, the
 * server's sink ULST_MB_WRITE | slot), and its completion handler starts the
 * slot's next operation. With --check the data is verified: writes by the
 * server (seed in hdr_data; its error count is read back with a GET of its
 * counters), reads here (poisoned before, verified after). SIGINT or
 * SIGTERM ends the run early: the summary of what was done is printed and the
 * node goes down with the operations still in flight (exit 1).
 */
#include <errno.h>
#include <getopt.h>
#include <endian.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ulst.h"

struct brw;

struct slot {
	struct brw *b;
	int idx;
	uint8_t *buf;
	uint64_t seq, seed;
	int status;                /* first error of the current operation */
	uint32_t mlength;          /* of the ACK or REPLY */
	bool got_reply;
	ulnet_handle_t mdh;        /* of the current operation */
};

struct brw {
	ulnet_t *ln;
	ulnet_process_id_t target;
	char target_str[ULNET_NIDSTR_SIZE];
	unsigned portal;
	bool write;
	size_t size;
	uint64_t count;
	int conc;
	enum ulst_check check;
	uint64_t run_id;
	bool corrupt;              /* ULST_TEST_CORRUPT: flip a byte of each PUT */
	bool keep_going;           /* --keep-going: count failures, go on */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t issued, done, failed, inflight, check_errors;
	bool last_ok;              /* the last operation to end succeeded */
	bool stop;
	int first_err;
	char err[256];

	struct slot slots[ULST_SLOTS];
};

static void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	while (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

/* Record the first failure (under b->mu) and stop issuing. */
static void brw_fail_locked(struct brw *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void brw_fail_locked(struct brw *b, int err, const char *fmt, ...)
{
	va_list ap;

	if (!b->first_err) {
		b->first_err = err ? err : -EIO;
		va_start(ap, fmt);
		vsnprintf(b->err, sizeof(b->err), fmt, ap);
		va_end(ap);
	}
	b->stop = true;
}

/* SIGINT/SIGTERM seen (the signal's number), read by the waits below */
static volatile sig_atomic_t brw_signal;

static void brw_on_signal(int sig)
{
	brw_signal = sig;
}

static void brw_issue(struct slot *s);

static void brw_complete(struct slot *s)
{
	struct brw *b = s->b;
	int err = s->status;
	long bad = -1;

	if (!err && !s->got_reply)
		err = -EIO;
	if (!err && b->check != ULST_CHECK_NONE && !b->write)
		bad = ulst_pattern_verify(s->buf, b->size, ULST_READ_SEED, b->check);

	pthread_mutex_lock(&b->mu);
	b->inflight--;
	if (err && b->keep_going) {
		/* the first failure of a run of them is told, the rest counted */
		if (!b->failed++ || b->last_ok)
			fprintf(stderr, "ulst brw: %s %llu failed: %s (going on)\n",
				b->write ? "PUT" : "GET", (unsigned long long)s->seq,
				ulnet_strerror(err));
		b->last_ok = false;
	} else if (err) {
		brw_fail_locked(b, err, "%s %llu failed: %s", b->write ? "PUT" : "GET",
				(unsigned long long)s->seq, ulnet_strerror(err));
	} else if (s->mlength != b->size) {
		brw_fail_locked(b, -EPROTO, "%s %llu: the %s says %u bytes, expected %zu",
				b->write ? "PUT" : "GET", (unsigned long long)s->seq,
				b->write ? "ACK" : "REPLY", s->mlength, b->size);
	} else {
		b->done++;
		b->last_ok = true;
		if (bad >= 0) {
			if (!b->check_errors)
				fprintf(stderr, "ulst brw: GET %llu: wrong data at byte %ld (slot %d)\n",
					(unsigned long long)s->seq, bad, s->idx);
			b->check_errors++;
		}
	}
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	brw_issue(s);
}

static void brw_handler(const struct ulnet_event *ev)
{
	struct slot *s = ev->md_user_ptr;

	if (ev->status && !s->status)
		s->status = ev->status;
	if (ev->type == ULNET_EVENT_ACK || ev->type == ULNET_EVENT_REPLY) {
		s->got_reply = true;
		s->mlength = ev->mlength;
	}
	/* a request that failed to send waits for no response: unlink now
	 * (as Lustre's RPC layer does) rather than at transaction_timeout;
	 * the UNLINK event completes the slot */
	if (ev->type == ULNET_EVENT_SEND && ev->status && !ev->unlinked)
		(void)ulnet_md_unlink(s->b->ln, s->mdh);
	if (ev->unlinked)
		brw_complete(s);
}

/* Start the slot's next operation, if any is left. */
static void brw_issue(struct slot *s)
{
	struct brw *b = s->b;
	struct ulnet_md md = { 0 };
	ulnet_handle_t h;
	int rc;

	pthread_mutex_lock(&b->mu);
	if (b->stop || b->issued >= b->count) {
		pthread_mutex_unlock(&b->mu);
		return;
	}
	s->seq = b->issued++;
	b->inflight++;
	pthread_mutex_unlock(&b->mu);

	s->status = 0;
	s->mlength = 0;
	s->got_reply = false;
	if (b->write) {
		s->seed = ((b->run_id << 32) ^ s->seq) & ULST_HDR_SEED_MASK;
		ulst_pattern_fill(s->buf, b->size, s->seed, b->check);
		if (b->corrupt && b->size)       /* test hook: the target must notice */
			s->buf[b->size - 1] ^= 0x5a;
	} else {
		ulst_pattern_poison(s->buf, b->size, ULST_READ_SEED, b->check);
	}
	md.start = s->buf;
	md.length = b->size;
	md.threshold = 2;               /* SEND + ACK/REPLY, then unlinked */
	md.user_ptr = s;
	md.handler = brw_handler;
	rc = ulnet_md_bind(b->ln, &md, ULNET_UNLINK, &h);
	s->mdh = h;
	if (rc) {
		pthread_mutex_lock(&b->mu);
		b->inflight--;
		brw_fail_locked(b, rc, "cannot bind an MD: %s", ulnet_strerror(rc));
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&b->mu);
		return;
	}
	if (b->write)
		rc = ulnet_put(b->ln, NULL, h, ULNET_ACK_REQ, b->target, b->portal,
			       ULST_MB_WRITE | (uint64_t)s->idx, 0,
			       ((uint64_t)b->check << ULST_HDR_CHECK_SHIFT) | s->seed);
	else
		rc = ulnet_get(b->ln, NULL, h, b->target, b->portal, ULST_MB_READ, 0);
	if (rc) {
		/* the UNLINK event completes the slot with this error */
		s->status = rc;
		(void)ulnet_md_unlink(b->ln, h);
	}
}

/* --- one synchronous GET of the server's counters -------------------------------- */

struct stats_op {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t buf[ULST_STAT_COUNT];
	int status;
	uint32_t mlength;
	bool replied, unlinked;
};

static void stats_handler(const struct ulnet_event *ev)
{
	struct stats_op *op = ev->md_user_ptr;

	pthread_mutex_lock(&op->mu);
	if (ev->status && !op->status)
		op->status = ev->status;
	if (ev->type == ULNET_EVENT_REPLY) {
		op->replied = true;
		op->mlength = ev->mlength;
	}
	if (ev->unlinked)
		op->unlinked = true;
	pthread_cond_broadcast(&op->cv);
	pthread_mutex_unlock(&op->mu);
}

/* 0 and the counters, or -errno. `op` must outlive the node (a GET that got
 * no REPLY keeps its MD until the node goes). */
static int get_server_stats(struct brw *b, struct stats_op *op, int timeout_ms, uint64_t out[])
{
	struct ulnet_md md = { 0 };
	ulnet_handle_t h;
	uint64_t end = ulst_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	int rc;

	memset(op->buf, 0, sizeof(op->buf));
	op->status = 0;
	op->replied = op->unlinked = false;
	md.start = op->buf;
	md.length = sizeof(op->buf);
	md.threshold = 2;
	md.user_ptr = op;
	md.handler = stats_handler;
	rc = ulnet_md_bind(b->ln, &md, ULNET_UNLINK, &h);
	if (rc)
		return rc;
	rc = ulnet_get(b->ln, NULL, h, b->target, b->portal, ULST_MB_STATS, 0);
	if (rc) {
		(void)ulnet_md_unlink(b->ln, h);
		return rc;
	}
	pthread_mutex_lock(&op->mu);
	while (!op->unlinked && !op->status && ulst_now_ns() < end && !brw_signal)
		cond_wait_ms(&op->cv, &op->mu, 50);
	rc = op->status ? op->status : brw_signal && !op->unlinked ? -EINTR
		: !op->unlinked ? -ETIMEDOUT : !op->replied ? -EIO : 0;
	if (!rc && op->mlength < sizeof(op->buf))
		rc = -EPROTO;
	if (!rc)
		for (int k = 0; k < ULST_STAT_COUNT; k++)
			out[k] = le64toh(op->buf[k]);
	pthread_mutex_unlock(&op->mu);
	if (!rc && out[ULST_STAT_MAGIC] != ULST_STATS_MAGIC)
		rc = -EPROTO;
	return rc;
}

/* --- the command ---------------------------------------------------------------- */

static void brw_usage(FILE *f)
{
	fprintf(f,
		"usage: ulst [node options] brw read|write NID [--size N[k|m]] [--count N]\n"
		"            [--concurrency C] [--check simple|full] [--timeout S] [--portal P]\n"
		"            [--keep-going]\n"
		"  Against a 'ulst serve' node: read = GET, write = PUT with ACK, C operations\n"
		"  in flight; prints lst-style [LNet Rates of ...] and [LNet Bandwidth of ...]\n"
		"  of this node and a summary.\n"
		"  -s, --size N        bytes per operation, 0..1m, k/m suffixes (default 4k)\n"
		"  -c, --count N       operations in all, 1..10000000 (default 100)\n"
		"  -C, --concurrency C operations in flight, 1..%d (default 1)\n"
		"  -k, --check MODE    verify the data: simple (first and last 8 bytes of each\n"
		"                      4 KiB page, as lst) or full (every byte); default none\n"
		"  -t, --timeout S     limit for the whole run, 0.1..3600 s (default 60)\n"
		"  -P, --portal P      the serve node's portal, 1..63 (default %d)\n"
		"  -K, --keep-going    a failed operation is counted and the run goes on (as\n"
		"                      lst does); by default the first failure ends the run\n"
		"%s"
		"SIGINT or SIGTERM ends the run: the summary so far is printed, the node goes\n"
		"down with what is in flight.\n"
		"Exit status: 0 every operation completed (and checked), 1 a failure or a\n"
		"signal, 2 bad arguments.\n",
		ULST_SLOTS, ULST_PORTAL_DEFAULT, ulst_global_help);
}

int ulst_cmd_brw(struct ulst_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		ULST_GLOBAL_LONGOPTS,
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "concurrency", required_argument, NULL, 'C' },
		{ "check", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "portal", required_argument, NULL, 'P' },
		{ "keep-going", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct brw br;          /* lives until after the node is gone */
	static struct stats_op sop;
	struct brw *b = &br;
	unsigned long count = 100, conc = 1, portal = ULST_PORTAL_DEFAULT;
	size_t size = 4096;
	double timeout = 60;
	enum ulst_check check = ULST_CHECK_NONE;
	bool keep_going = false;
	uint64_t done = 0, failed = 0, check_errors = 0;
	int first_err = 0;
	uint64_t st0[ULST_STAT_COUNT] = { 0 }, st1[ULST_STAT_COUNT] = { 0 }, t0, t1, end;
	struct ulst_rate_sampler rs;
	struct ulst_node node;
	char self[ULNET_NIDSTR_SIZE], sz[32];
	sigset_t sigs;
	struct sigaction sa;
	int c, rc, exit_rc = ULST_EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:c:C:k:t:P:Kh" ULST_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
		int r = ulst_global_option(g, "brw", c, optarg);

		if (r < 0)
			return ULST_EXIT_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case 's':
			if (ulst_parse_size("brw", "--size", optarg, ULST_MAX_SIZE, &size))
				return ULST_EXIT_USAGE;
			break;
		case 'c':
			if (ulst_parse_ulong("brw", "--count", optarg, 1, 10000000, &count))
				return ULST_EXIT_USAGE;
			break;
		case 'C':
			if (ulst_parse_ulong("brw", "--concurrency", optarg, 1, ULST_SLOTS, &conc))
				return ULST_EXIT_USAGE;
			break;
		case 'k':
			if (!strcmp(optarg, "simple"))
				check = ULST_CHECK_SIMPLE;
			else if (!strcmp(optarg, "full"))
				check = ULST_CHECK_FULL;
			else {
				ulst_arg_error("brw", "--check '%s': expected simple or full", optarg);
				return ULST_EXIT_USAGE;
			}
			break;
		case 't':
			if (ulst_parse_seconds("brw", "--timeout", optarg, 0.1, 3600, &timeout))
				return ULST_EXIT_USAGE;
			break;
		case 'P':
			if (ulst_parse_ulong("brw", "--portal", optarg, 1, ULNET_MAX_PORTALS - 1, &portal))
				return ULST_EXIT_USAGE;
			break;
		case 'K':
			keep_going = true;
			break;
		case 'h':
			brw_usage(stdout);
			return ULST_EXIT_OK;
		default:
			ulst_getopt_error("brw", c, optopt, argv[optind - 1]);
			return ULST_EXIT_USAGE;
		}
	}
	memset(b, 0, sizeof(*b));
	if (optind >= argc) {
		ulst_arg_error("brw", "read or write is required");
		return ULST_EXIT_USAGE;
	}
	if (strcmp(argv[optind], "read") && strcmp(argv[optind], "write")) {
		ulst_arg_error("brw", "'%s': expected read or write", argv[optind]);
		return ULST_EXIT_USAGE;
	}
	b->write = !strcmp(argv[optind], "write");
	if (optind + 1 >= argc) {
		ulst_arg_error("brw", "NID is required: the 'ulst serve' node");
		return ULST_EXIT_USAGE;
	}
	if (ulst_parse_nid("brw", "NID", argv[optind + 1], &b->target.nid))
		return ULST_EXIT_USAGE;
	if (optind + 2 < argc) {
		ulst_arg_error("brw", "unexpected argument '%s' (one target NID)", argv[optind + 2]);
		return ULST_EXIT_USAGE;
	}
	b->target.pid = ULNET_PID_LUSTRE;
	b->portal = (unsigned)portal;
	b->size = size;
	b->count = count;
	b->conc = (int)(conc < count ? conc : count);
	b->check = check;
	b->corrupt = getenv("ULST_TEST_CORRUPT") != NULL;
	b->keep_going = keep_going;
	b->run_id = ((uint64_t)getpid() << 16) ^ (ulst_now_ns() & 0xffffffffULL);
	ulnet_nid_str(&b->target.nid, b->target_str);
	ulst_size_str(size, sz, sizeof(sz));

	/* SIGINT/SIGTERM go to this thread alone (ulnet's threads start with
	 * them blocked) and set brw_signal, which every wait below reads */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	rc = ulst_node_start(g, "brw", &node);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = brw_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
	if (rc)
		return rc;
	ulnet_nid_str(&node.nid, self);
	if (ulnet_nid_same(&node.nid, &b->target.nid)) {
		ulst_node_stop(&node);
		ulst_arg_error("brw", "NID '%s' is this node (--nid); brw needs a 'ulst serve' peer",
			       argv[optind + 1]);
		return ULST_EXIT_USAGE;
	}
	b->ln = node.ln;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	pthread_mutex_init(&sop.mu, NULL);
	pthread_cond_init(&sop.cv, NULL);
	for (int k = 0; k < b->conc; k++) {
		b->slots[k].b = b;
		b->slots[k].idx = k;
		b->slots[k].buf = malloc(size ? size : 1);
		if (!b->slots[k].buf) {
			fprintf(stderr, "ulst brw: out of memory\n");
			exit_rc = ULST_EXIT_FAIL;
			goto out;
		}
		/* whole buffers: the unchecked bytes are sent too */
		ulst_pattern_fill(b->slots[k].buf, size, ULST_READ_SEED, ULST_CHECK_FULL);
		/* each slot's buffer serves its every RPC, and stays until the
		 * node is gone: registered with an RDMA device once */
		if (size)
			(void)ulnet_mem_register(b->ln, b->slots[k].buf, size);
	}

	t0 = ulst_now_ns();
	end = t0 + (uint64_t)(timeout * 1e9);
	/* is it a ulst serve node? (also sets up the connections) */
	rc = get_server_stats(b, &sop, (int)((end - t0) / 1000000ULL), st0);
	if (rc == -EINTR) {
		fprintf(stderr, "ulst brw: stopped by %s before the run, waiting for %s to answer\n",
			ulst_stop_signal_name(brw_signal), b->target_str);
		exit_rc = ULST_EXIT_FAIL;
		goto out;
	}
	if (rc) {
		fprintf(stderr, "ulst brw: %s does not answer as a 'ulst serve' node on portal %u: %s\n",
			b->target_str, b->portal,
			rc == -EPROTO ? "wrong reply to the counters GET" : ulnet_strerror(rc));
		exit_rc = ULST_EXIT_FAIL;
		goto out;
	}
	printf("ulst brw %s %s: %llu x %s, concurrency %d, check %s, portal %u, from %s\n",
	       b->write ? "write" : "read", b->target_str, (unsigned long long)count, sz, b->conc,
	       check == ULST_CHECK_SIMPLE ? "simple" : check == ULST_CHECK_FULL ? "full" : "none",
	       b->portal, self);
	fflush(stdout);

	ulst_rates_start(&rs, b->ln);
	t0 = ulst_now_ns();
	for (int k = 0; k < b->conc; k++)
		brw_issue(&b->slots[k]);
	pthread_mutex_lock(&b->mu);
	while (b->done + b->failed < b->count && !(b->stop && b->inflight == 0)) {
		if (ulst_now_ns() >= end) {
			brw_fail_locked(b, -ETIMEDOUT, "timed out after %.1f s: %llu of %llu done, %llu in flight",
					timeout, (unsigned long long)b->done, (unsigned long long)b->count,
					(unsigned long long)b->inflight);
			break;
		}
		cond_wait_ms(&b->cv, &b->mu, 100);
		pthread_mutex_unlock(&b->mu);
		ulst_rates_tick(&rs, b->ln);
		pthread_mutex_lock(&b->mu);
		if (brw_signal) {
			brw_fail_locked(b, -EINTR, "stopped by %s: %llu of %llu done, %llu in flight",
					ulst_stop_signal_name(brw_signal), (unsigned long long)b->done,
					(unsigned long long)b->count, (unsigned long long)b->inflight);
			break;
		}
	}
	t1 = ulst_now_ns();
	/* what the summary tells, as of now: after a timeout, operations
	 * still in flight end (and count) on the node's thread meanwhile */
	done = b->done;
	failed = b->failed;
	check_errors = b->check_errors;
	first_err = b->first_err;
	pthread_mutex_unlock(&b->mu);

	ulst_rates_print(&rs, b->ln, self);
	{
		double secs = (double)(t1 - t0) / 1e9;

		if (secs <= 0)
			secs = 1e-9;
		printf("ulst brw %s %s: %llu of %llu done in %.3f s: %.0f RPC/s, %.2f MiB/s",
		       b->write ? "write" : "read", b->target_str, (unsigned long long)done,
		       (unsigned long long)b->count, secs, (double)done / secs,
		       (double)done * (double)size / secs / 1048576.0);
	}
	if (b->keep_going)
		printf(", %llu failed", (unsigned long long)failed);
	if (failed)
		exit_rc = ULST_EXIT_FAIL;
	if (first_err) {
		printf("\n");
		fprintf(stderr, "ulst brw: %s\n", b->err);
		exit_rc = ULST_EXIT_FAIL;
	} else if (check != ULST_CHECK_NONE && !b->write) {
		printf(", check %s: %llu errors\n", check == ULST_CHECK_SIMPLE ? "simple" : "full",
		       (unsigned long long)check_errors);
		if (check_errors)
			exit_rc = ULST_EXIT_FAIL;
	} else if (check != ULST_CHECK_NONE) {
		uint64_t now = ulst_now_ns();
		int left = now < end ? (int)((end - now) / 1000000ULL) : 0;

		rc = get_server_stats(b, &sop, left > 1000 ? left : 1000, st1);
		if (rc) {
			printf("\n");
			fprintf(stderr, "ulst brw: cannot read the counters of %s after the run: %s\n",
				b->target_str, ulnet_strerror(rc));
			exit_rc = ULST_EXIT_FAIL;
		} else {
			uint64_t errs = st1[ULST_STAT_CHECK_ERRORS] - st0[ULST_STAT_CHECK_ERRORS];

			printf(", check %s by the target: %llu errors\n",
			       check == ULST_CHECK_SIMPLE ? "simple" : "full", (unsigned long long)errs);
			if (errs) {
				fprintf(stderr, "ulst brw: %s found wrong data in %llu PUTs\n", b->target_str,
					(unsigned long long)errs);
				exit_rc = ULST_EXIT_FAIL;
			}
		}
	} else {
		printf("\n");
	}
out:
	fflush(stdout);
	/* in-flight operations end (-ESHUTDOWN) and their MDs go before the
	 * buffers do */
	pthread_mutex_lock(&b->mu);
	b->stop = true;
	pthread_mutex_unlock(&b->mu);
	ulst_node_stop(&node);
	for (int k = 0; k < ULST_SLOTS; k++)
		free(b->slots[k].buf);
	return exit_rc;
}
