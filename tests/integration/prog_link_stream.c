/* SPDX-License-Identifier: MIT */
/*
 * prog_link_stream.c - one ulnet node with several tcp NIs, for
 * test_link_netns.sh: a target that checks every 1 MiB PUT it gets, or a
 * source that streams 1 MiB PUTs (with ACK) to it until told to stop.
 * Both print each change of their NIs' state (fatal_error, status), so a
 * script that pulls a link under them can see the NIs follow it.
 *
 * usage: prog_link_stream serve|send --nid NID[,NID...] --port P
 *                         [--to NID] [--stop FILE] [--timeout S]
 *                         [--transaction-timeout S]
 *   serve   PUT i goes to its own target (match bits i) on portal 33, 1 MiB
 *           in slot i % NSLOTS, checked against the pattern of i; a target
 *           stays until no resend of its PUT can come (see target_handler)
 *           and its slot then takes the target NSLOTS on. Ends when FILE
 *           exists, printing "served N bad M aborted K again D" (N PUTs
 *           whole and right, M whole and wrong, K cut short by a link, D
 *           right ones that came again: resent after a lost ACK)
 *   send    PUTs of 1 MiB to --to, 4 in flight and none more than SPREAD
 *           ahead of the oldest in flight (so its target is posted); after
 *           each ACK prints "done I via NID" (the peer NI that answered);
 *           ends when FILE exists (after what is in flight), printing
 *           "sent N failed M"
 *   --timeout S  the whole run (default 120): exit 3 when it expires
 *   --transaction-timeout S  LNet's (default 150): a PUT whose ACK is lost
 *           ends (fails) that long after it was sent
 *
 * Lines: "ready", "ni NID fatal=F status=up|down" (at start and on every
 * change), then as above. Exit 0 when no PUT failed and none had a wrong
 * byte, 1 otherwise, 2 usage, 3 time limit.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ulnet/ulnet.h"

#define PORTAL 33
#define SIZE (1u << 20)
#define NSLOTS 64
#define SPREAD 32
#define WINDOW 4
#define MAX_NIS 4
#define MAX_PUTS 1000000

static ulnet_t *ln;
static ulnet_nid_t nids[MAX_NIS];
static int nnids;
static const char *stop_file;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&mu);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&mu);
}

static void on_alarm(int sig)
{
	static const char msg[] = "prog_link_stream: FAIL: time limit expired\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(3);
}

static uint8_t pat(uint64_t i, size_t k)
{
	return (uint8_t)(i * 131u + k * 7u + (k >> 9));
}

static bool stop_asked(void)
{
	return stop_file && access(stop_file, F_OK) == 0;
}

/* Print the NIs whose state changed since the last call. */
static void watch_nis(void)
{
	static int last_fatal[MAX_NIS], last_up[MAX_NIS];
	static bool first = true;
	struct ulnet_ni_info info;

	for (int i = 0; ulnet_ni_info(ln, i, &info) == 0; i++) {
		char nb[ULNET_NIDSTR_SIZE];

		for (int k = 0; k < nnids; k++) {
			if (!ulnet_nid_same(&info.nid, &nids[k]))
				continue;
			if (first || last_fatal[k] != info.health.fatal_error ||
			    last_up[k] != info.up)
				out("ni %s fatal=%d status=%s\n", ulnet_nid_str(&info.nid, nb),
				    info.health.fatal_error, info.up ? "up" : "down");
			last_fatal[k] = info.health.fatal_error;
			last_up[k] = info.up;
		}
	}
	first = false;
}

static void nap_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* --- serve ------------------------------------------------------------------------------ */

static uint8_t *slots[NSLOTS];
static ulnet_handle_t target_me[NSLOTS];
static uint64_t served, served_bad, served_aborted, served_dup;
static uint64_t retire_next;          /* the oldest target still posted */
static uint8_t seen[MAX_PUTS / 8];    /* PUTs that arrived whole and right */
static int post_err;

static void target_handler(const struct ulnet_event *ev);

/* The target of PUT i: match bits i, in slot i % NSLOTS, for as long as
 * a resend of i may come (a resend after a lost ACK must find it). */
static int post_target(uint64_t i)
{
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = { 0 };
	ulnet_handle_t me, mdh;
	int rc;

	md.start = slots[i % NSLOTS];
	md.length = SIZE;
	md.threshold = ULNET_MD_THRESH_INF;
	/* each PUT at offset 0 (a resend lands where its first copy did) */
	md.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE;
	md.user_ptr = (void *)(uintptr_t)i;
	md.handler = target_handler;
	rc = ulnet_me_attach(ln, PORTAL, any, i, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me);
	if (!rc) {
		rc = ulnet_md_attach(ln, me, &md, ULNET_RETAIN, &mdh);
		if (rc)
			(void)ulnet_me_unlink(ln, me);
	}
	if (!rc)
		target_me[i % NSLOTS] = me;
	return rc;
}

/* Handlers run one at a time (the progress thread): the targets are
 * changed here only. */
static void target_handler(const struct ulnet_event *ev)
{
	uint64_t i = (uintptr_t)ev->md_user_ptr;
	const uint8_t *b = (const uint8_t *)ev->md_start + ev->offset;
	bool bad = false, aborted = false, dup = false;
	int rc = 0;

	if (ev->type != ULNET_EVENT_PUT)
		return;
	if (ev->status) {
		aborted = true;   /* cut short by the pull: its resend comes */
	} else if (ev->mlength != SIZE || ev->hdr_data != i) {
		bad = true;
	} else {
		for (size_t k = 0; k < SIZE; k++) {
			if (b[k] != pat(i, k)) {
				bad = true;
				break;
			}
		}
	}
	if (!aborted && !bad && i < MAX_PUTS) {
		dup = seen[i / 8] & (1u << (i % 8));
		seen[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	/* The sender starts PUT j only once every PUT before j - SPREAD is
	 * ACKed: with j here, those before j - SPREAD get no more resends,
	 * and their slots take the targets NSLOTS on */
	while (!aborted && !bad && retire_next + SPREAD <= i) {
		(void)ulnet_me_unlink(ln, target_me[retire_next % NSLOTS]);
		if (!rc)
			rc = post_target(retire_next + NSLOTS);
		retire_next++;
	}
	pthread_mutex_lock(&mu);
	if (aborted)
		served_aborted++;
	else if (bad)
		served_bad++;
	else if (dup)
		served_dup++;
	else
		served++;
	if (rc && !post_err)
		post_err = rc;
	pthread_mutex_unlock(&mu);
	if (bad)
		out("bad PUT %llu (mlength %u)\n", (unsigned long long)i, ev->mlength);
}

static int serve(void)
{
	for (int s = 0; s < NSLOTS; s++) {
		int rc;

		slots[s] = malloc(SIZE);
		rc = slots[s] ? post_target((uint64_t)s) : -ENOMEM;
		if (rc) {
			fprintf(stderr, "prog_link_stream: posting target %d: %s\n", s, ulnet_strerror(rc));
			return 1;
		}
	}
	out("ready\n");
	while (!stop_asked()) {
		watch_nis();
		nap_ms(20);
	}
	nap_ms(200);   /* what was in flight lands */
	pthread_mutex_lock(&mu);
	uint64_t n = served, bad = served_bad, cut = served_aborted, dup = served_dup;
	int perr = post_err;

	pthread_mutex_unlock(&mu);
	if (perr)
		out("posting a target failed: %s\n", ulnet_strerror(perr));
	out("served %llu bad %llu aborted %llu again %llu\n", (unsigned long long)n,
	    (unsigned long long)bad, (unsigned long long)cut, (unsigned long long)dup);
	return bad || perr ? 1 : 0;
}

/* --- send -------------------------------------------------------------------------------- */

struct op {
	uint64_t i;
	uint8_t *buf;
	int status;
	bool acked, sent, done;
	ulnet_nid_t via;
};

static struct op ops[WINDOW];
static int inflight;

static void op_handler(const struct ulnet_event *ev)
{
	struct op *op = ev->md_user_ptr;

	pthread_mutex_lock(&mu);
	if (ev->status && !op->status)
		op->status = ev->status;
	if (ev->type == ULNET_EVENT_SEND)
		op->sent = true;
	if (ev->type == ULNET_EVENT_ACK) {
		op->acked = true;
		op->via = ev->source.nid;
	}
	if (ev->unlinked) {
		op->done = true;
		inflight--;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
}

static int start_put(struct op *op, uint64_t i, const ulnet_nid_t *to)
{
	struct ulnet_md md = { 0 };
	ulnet_process_id_t target = { .nid = *to, .pid = ULNET_PID_LUSTRE };
	ulnet_handle_t h;
	int rc;

	for (size_t k = 0; k < SIZE; k++)
		op->buf[k] = pat(i, k);
	op->i = i;
	op->status = 0;
	op->acked = op->sent = op->done = false;
	md.start = op->buf;
	md.length = SIZE;
	md.threshold = 2;
	md.user_ptr = op;
	md.handler = op_handler;
	rc = ulnet_md_bind(ln, &md, ULNET_UNLINK, &h);
	if (rc)
		return rc;
	pthread_mutex_lock(&mu);
	inflight++;
	pthread_mutex_unlock(&mu);
	rc = ulnet_put(ln, NULL, h, ULNET_ACK_REQ, target, PORTAL, i, 0, i);
	if (rc) {
		pthread_mutex_lock(&mu);
		inflight--;
		pthread_mutex_unlock(&mu);
		(void)ulnet_md_unlink(ln, h);
	}
	return rc;
}

static int send_stream(const ulnet_nid_t *to)
{
	uint64_t next = 0, sent = 0, failed = 0;
	bool stopping = false;

	for (int w = 0; w < WINDOW; w++) {
		ops[w].buf = malloc(SIZE);
		if (!ops[w].buf)
			return 1;
		ops[w].done = true;
		ops[w].i = UINT64_MAX;   /* free */
	}
	out("ready\n");
	for (;;) {
		char nb[ULNET_NIDSTR_SIZE];

		watch_nis();
		if (!stopping && stop_asked())
			stopping = true;
		/* the finished ones, in any order */
		for (int w = 0; w < WINDOW; w++) {
			struct op *op = &ops[w];

			pthread_mutex_lock(&mu);
			bool done = op->done && op->i != UINT64_MAX;
			pthread_mutex_unlock(&mu);
			if (!done)
				continue;
			if (op->status || !op->acked || !op->sent) {
				failed++;
				out("failed %llu: status %d (%s)%s\n", (unsigned long long)op->i,
				    op->status, ulnet_strerror(op->status), op->acked ? "" : ", no ACK");
			} else {
				sent++;
				out("done %llu via %s\n", (unsigned long long)op->i,
				    ulnet_nid_str(&op->via, nb));
			}
			op->i = UINT64_MAX;   /* reported: free */
		}
		if (stopping) {
			pthread_mutex_lock(&mu);
			int n = inflight;

			pthread_mutex_unlock(&mu);
			if (n == 0)
				break;
			nap_ms(5);
			continue;
		}
		/* refill the window, never SPREAD past the oldest in flight
		 * (its target may not be posted yet) */
		bool started = false;
		uint64_t oldest = next;

		for (int w = 0; w < WINDOW; w++) {
			pthread_mutex_lock(&mu);
			if (!ops[w].done && ops[w].i < oldest)
				oldest = ops[w].i;
			pthread_mutex_unlock(&mu);
		}
		for (int w = 0; w < WINDOW && next < MAX_PUTS && next < oldest + SPREAD; w++) {
			struct op *op = &ops[w];

			pthread_mutex_lock(&mu);
			bool free_slot = op->done && op->i == UINT64_MAX;
			pthread_mutex_unlock(&mu);
			if (!free_slot)
				continue;
			int rc = start_put(op, next, to);

			if (rc) {
				out("failed %llu: ulnet_put: %s\n", (unsigned long long)next,
				    ulnet_strerror(rc));
				failed++;
				op->done = true;
				op->i = UINT64_MAX;
			}
			next++;
			started = true;
		}
		if (!started) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_mutex_lock(&mu);
			pthread_cond_timedwait(&cv, &mu, &ts);
			pthread_mutex_unlock(&mu);
		}
	}
	out("sent %llu failed %llu\n", (unsigned long long)sent, (unsigned long long)failed);
	return failed ? 1 : 0;
}

/* --- main ----------------------------------------------------------------------------------- */

static void log_to_stderr(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	static const char *const names[] = { "E", "W", "I", "D" };

	(void)arg;
	fprintf(stderr, "[ulnet %s] %s\n", names[lvl & 3], msg);
}

static int usage(const char *why)
{
	fprintf(stderr, "prog_link_stream: %s\nusage: prog_link_stream serve|send --nid NID[,NID...] "
		"--port P [--to NID] [--stop FILE] [--timeout S] [--transaction-timeout S]\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "nid", required_argument, NULL, 'n' }, { "port", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' }, { "stop", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "transaction-timeout", required_argument, NULL, 'X' }, { NULL, 0, NULL, 0 },
	};
	struct ulnet_opts o = { 0 };
	const char *nidlist = NULL, *to = NULL;
	long port = 0, timeout = 120, tx_timeout = 0;
	ulnet_nid_t to_nid;
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "n:p:t:s:T:X:", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			nidlist = optarg;
			break;
		case 'p':
			port = strtol(optarg, &end, 10);
			if (*end || port < 1 || port > 65535)
				return usage("--port: 1..65535");
			break;
		case 't':
			to = optarg;
			break;
		case 's':
			stop_file = optarg;
			break;
		case 'T':
			timeout = strtol(optarg, &end, 10);
			if (*end || timeout < 1 || timeout > 600)
				return usage("--timeout: 1..600 seconds");
			break;
		case 'X':
			tx_timeout = strtol(optarg, &end, 10);
			if (*end || tx_timeout < 1 || tx_timeout > 600)
				return usage("--transaction-timeout: 1..600 seconds");
			break;
		default:
			return usage("unknown option");
		}
	}
	if (optind + 1 != argc || (strcmp(argv[optind], "serve") && strcmp(argv[optind], "send")))
		return usage("serve or send");
	bool sender = strcmp(argv[optind], "send") == 0;

	if (!nidlist || !port || !stop_file)
		return usage("--nid, --port and --stop are required");
	if (sender && (!to || ulnet_nid_parse(to, &to_nid, NULL)))
		return usage("send needs --to NID");
	signal(SIGALRM, on_alarm);
	alarm((unsigned)timeout);

	o.log = log_to_stderr;
	o.log_level = getenv("LINK_STREAM_DEBUG") ? ULNET_LOG_DEBUG : ULNET_LOG_INFO;
	rc = ulnet_create(&o, &ln);
	if (rc) {
		fprintf(stderr, "prog_link_stream: ulnet_create: %s\n", ulnet_strerror(rc));
		return 1;
	}
	if (tx_timeout) {
		struct ulnet_globals g;

		ulnet_globals_get(ln, &g);
		g.transaction_timeout = (int)tx_timeout;
		rc = ulnet_globals_set(ln, &g);
		if (rc) {
			fprintf(stderr, "prog_link_stream: transaction_timeout %ld: %s\n", tx_timeout,
				ulnet_strerror(rc));
			return 1;
		}
	}
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", nidlist);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct ulnet_ni_conf conf = { 0 };

		if (nnids == MAX_NIS || ulnet_nid_parse(t, &nids[nnids], NULL))
			return usage("--nid: up to 4 NIDs");
		conf.nid = nids[nnids];
		conf.accept_port = (uint16_t)port;
		conf.tun.tos = -1;
		snprintf(conf.accept, sizeof(conf.accept), "all");
		rc = ulnet_ni_add(ln, &conf);
		if (rc) {
			fprintf(stderr, "prog_link_stream: adding NI %s: %s\n", t, ulnet_strerror(rc));
			return 1;
		}
		nnids++;
	}
	rc = sender ? send_stream(&to_nid) : serve();
	ulnet_destroy(ln);
	return rc;
}
