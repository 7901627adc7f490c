/* SPDX-License-Identifier: MIT */
/*
 * prog_lnet_traffic.c - two ulnet nodes (two processes) with tcp NIs on two
 * loopback addresses exchange a fixed, known set of LNet traffic, so that a
 * capture of it can be checked message by message (test_capture_decode.sh):
 *
 *   for node A (parent), then node B (child), towards the other node:
 *     - LNet ping (GET of the ping info on portal 0)
 *     - discovery (ping + push: a PUT of the ping info with an ACK)
 *     - PUT with ACK of 0 B, 1 B, 4 KiB and 1 MiB, the bytes checked on
 *       arrival (the target verifies a pattern), the ACK's mlength checked
 *     - GET of 0 B, 1 B, 4 KiB and 1 MiB, the REPLY's bytes checked
 *   and each node checks what it received as a target (4 PUTs, 4 GETs).
 *
 * usage: prog_lnet_traffic [options] ADDR_A ADDR_B PORT
 *   ADDR_A/ADDR_B  127.x.y.z or 127.x.y.z@tcp[N] (loopback only)
 *   PORT           the acceptor port both nodes use (LNet has one port per
 *                  network, like the kernel's accept_port)
 *   -t, --timeout S   whole-run limit in seconds (default 30, 1..300)
 *   -a, --accept M    acceptor mode: all (default), secure, none
 *   -v, --verbose     ulnet log at INFO (twice: DEBUG) on stderr
 *
 * Exit status: 0 everything passed; 1 a step failed (message on stderr:
 * which node, which step, what was expected); 2 usage; 3 the time limit
 * expired.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/lnd.h"
#include "ulnet/ulnet.h"

#define PORTAL 21          /* not one tshark hands to its lustre dissector */
#define MB_PUT 0x5000ULL   /* + size index: PUT sinks */
#define MB_GET 0x6000ULL   /* + size index: GET sources */
#define NSIZES 4
#define OP_TIMEOUT_MS 10000

#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_TIMEOUT 3

static const size_t sizes[NSIZES] = { 0, 1, 4096, 1u << 20 };
static const char *const size_names[NSIZES] = { "0 B", "1 B", "4 KiB", "1 MiB" };

static const char *role_name = "main";
static uint64_t deadline_ms;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Milliseconds left for one wait: at most `cap`, never past the deadline. */
static int wait_budget(int cap)
{
	uint64_t now = now_ms();

	if (now >= deadline_ms)
		return 0;
	return deadline_ms - now < (uint64_t)cap ? (int)(deadline_ms - now) : cap;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", role_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "prog_lnet_traffic [%s]: FAIL: ", role_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
}

static void on_alarm(int sig)
{
	static const char msg[] = "prog_lnet_traffic: FAIL: time limit expired\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(EXIT_TIMEOUT);
}

/* --- payload pattern ----------------------------------------------------------- */

static uint8_t pat(size_t k, unsigned seed)
{
	return (uint8_t)(k * 131u + seed * 17u + (k >> 10) + (k >> 17) * 3u);
}

static void pat_fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t k = 0; k < len; k++)
		b[k] = pat(k, seed);
}

/* Offset of the first wrong byte, or -1. */
static long pat_check(const uint8_t *b, size_t len, unsigned seed)
{
	for (size_t k = 0; k < len; k++)
		if (b[k] != pat(k, seed))
			return (long)k;
	return -1;
}

/* Seeds: PUT data from node `from`, GET data served by node `owner`. */
static unsigned seed_put(int from, int i) { return 1u + (unsigned)from * 8u + (unsigned)i; }
static unsigned seed_get(int owner, int i) { return 101u + (unsigned)owner * 8u + (unsigned)i; }

/* --- one node ------------------------------------------------------------------ */

struct node {
	int role;                  /* 0 = A (parent), 1 = B (child) */
	ulnet_t *ln;
	ulnet_nid_t self, peer;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* target side */
	uint8_t *put_sink[NSIZES];
	uint8_t *get_src[NSIZES];
	ulnet_handle_t put_md[NSIZES], get_md[NSIZES];
	int puts_seen[NSIZES], gets_seen[NSIZES];
	char target_err[300];      /* first problem seen as a target */
};

static struct node self_node;

static void target_handler(const struct ulnet_event *ev)
{
	struct node *n = &self_node;
	uintptr_t tag = (uintptr_t)ev->md_user_ptr;
	int i = (int)(tag & 0xff);
	bool is_put = (tag & 0x100) != 0;
	char err[300] = "";
	char nb[ULNET_NIDSTR_SIZE];

	if (ev->type == ULNET_EVENT_UNLINK)
		return;
	if (ev->status)
		snprintf(err, sizeof(err), "%s %s target event: status %d (%s)", is_put ? "PUT" : "GET",
			 size_names[i], ev->status, ulnet_strerror(ev->status));
	else if (is_put && ev->type == ULNET_EVENT_PUT) {
		long bad;

		if (ev->rlength != sizes[i] || ev->mlength != sizes[i] || ev->offset != 0)
			snprintf(err, sizeof(err),
				 "PUT %s arrived with rlength %u mlength %u offset %u, expected %zu/%zu/0",
				 size_names[i], ev->rlength, ev->mlength, ev->offset, sizes[i], sizes[i]);
		else if ((bad = pat_check(n->put_sink[i], sizes[i], seed_put(!n->role, i))) >= 0)
			snprintf(err, sizeof(err),
				 "PUT %s payload mismatch at byte %ld: got 0x%02x, expected 0x%02x",
				 size_names[i], bad, n->put_sink[i][bad], pat((size_t)bad, seed_put(!n->role, i)));
		else if (!ulnet_nid_same(&ev->initiator.nid, &n->peer))
			snprintf(err, sizeof(err), "PUT %s from unexpected initiator %s", size_names[i],
				 ulnet_nid_str(&ev->initiator.nid, nb));
	} else if (!is_put && ev->type == ULNET_EVENT_GET) {
		/* as in the kernel, a GET event's rlength is the header's
		 * payload_length (0); mlength is what the REPLY carries */
		if (ev->mlength != sizes[i])
			snprintf(err, sizeof(err), "GET %s served with mlength %u, expected %zu",
				 size_names[i], ev->mlength, sizes[i]);
	} else {
		snprintf(err, sizeof(err), "unexpected event type %d on the %s %s target MD",
			 ev->type, is_put ? "PUT" : "GET", size_names[i]);
	}
	pthread_mutex_lock(&n->mu);
	if (ev->type == ULNET_EVENT_PUT)
		n->puts_seen[i]++;
	else if (ev->type == ULNET_EVENT_GET)
		n->gets_seen[i]++;
	if (err[0] && !n->target_err[0])
		snprintf(n->target_err, sizeof(n->target_err), "%s", err);
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
}

static void log_to_stderr(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	static const char *const names[] = { "E", "W", "I", "D" };

	(void)arg;
	fprintf(stderr, "[%s ulnet %s] %s\n", role_name, names[lvl & 3], msg);
}

static int node_start(struct node *n, const char *self, const char *peer, uint16_t port,
		      const char *accept, int verbose)
{
	struct ulnet_opts o = { 0 };
	struct ulnet_ni_conf c = { 0 };
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	int rc;

	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	o.log = log_to_stderr;
	o.log_level = verbose >= 2 ? ULNET_LOG_DEBUG : verbose ? ULNET_LOG_INFO : ULNET_LOG_WARN;
	rc = ulnet_create(&o, &n->ln);
	if (rc) {
		fail("ulnet_create: %s", ulnet_strerror(rc));
		return rc;
	}
	if (ulnet_nid_parse(self, &n->self, NULL) || ulnet_nid_parse(peer, &n->peer, NULL)) {
		fail("bad NID %s or %s", self, peer);
		return -EINVAL;
	}
	c.nid = n->self;
	c.accept_port = port;
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "%s", accept);
	rc = ulnet_ni_add(n->ln, &c);
	if (rc) {
		fail("adding NI %s (port %u, accept %s): %s", self, port, accept, ulnet_strerror(rc));
		return rc;
	}
	for (int i = 0; i < NSIZES; i++) {
		struct ulnet_md md = { 0 };
		ulnet_handle_t me;

		n->put_sink[i] = calloc(1, sizes[i] + 1);
		n->get_src[i] = malloc(sizes[i] + 1);
		if (!n->put_sink[i] || !n->get_src[i])
			return -ENOMEM;
		memset(n->put_sink[i], 0xee, sizes[i] + 1);
		pat_fill(n->get_src[i], sizes[i], seed_get(n->role, i));

		rc = ulnet_me_attach(n->ln, PORTAL, any, MB_PUT + (uint64_t)i, 0, ULNET_RETAIN,
				     ULNET_INS_AFTER, &me);
		md.start = n->put_sink[i];
		md.length = sizes[i];
		md.threshold = ULNET_MD_THRESH_INF;
		md.options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE;
		md.user_ptr = (void *)(uintptr_t)(0x100 | i);
		md.handler = target_handler;
		if (!rc)
			rc = ulnet_md_attach(n->ln, me, &md, ULNET_RETAIN, &n->put_md[i]);
		if (!rc)
			rc = ulnet_me_attach(n->ln, PORTAL, any, MB_GET + (uint64_t)i, 0, ULNET_RETAIN,
					     ULNET_INS_AFTER, &me);
		md.start = n->get_src[i];
		md.options = ULNET_MD_OP_GET | ULNET_MD_TRUNCATE;
		md.user_ptr = (void *)(uintptr_t)i;
		if (!rc)
			rc = ulnet_md_attach(n->ln, me, &md, ULNET_RETAIN, &n->get_md[i]);
		if (rc) {
			fail("attaching the target MDs on portal %d: %s", PORTAL, ulnet_strerror(rc));
			return rc;
		}
	}
	return 0;
}

static void node_stop(struct node *n)
{
	if (n->ln)
		ulnet_destroy(n->ln);   /* unlinks the target MDs */
	n->ln = NULL;
	for (int i = 0; i < NSIZES; i++) {
		free(n->put_sink[i]);
		free(n->get_src[i]);
		n->put_sink[i] = n->get_src[i] = NULL;
	}
}

/* As a target: wait (bounded) for the peer's 4 PUTs and 4 GETs; 0 or -1. */
static int check_received(struct node *n)
{
	uint64_t end = now_ms() + (uint64_t)wait_budget(OP_TIMEOUT_MS);
	int rc = 0;
	bool all;

	pthread_mutex_lock(&n->mu);
	for (;;) {
		all = true;
		for (int i = 0; i < NSIZES; i++)
			all = all && n->puts_seen[i] >= 1 && n->gets_seen[i] >= 1;
		if (all || n->target_err[0] || now_ms() >= end)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&n->cv, &n->mu, &ts);
	}
	if (n->target_err[0]) {
		fail("as a target: %s", n->target_err);
		rc = -1;
	} else {
		for (int i = 0; i < NSIZES; i++) {
			if (n->puts_seen[i] != 1 || n->gets_seen[i] != 1) {
				fail("as a target: %s: saw %d PUT(s) and %d GET(s), expected 1 of each%s",
				     size_names[i], n->puts_seen[i], n->gets_seen[i],
				     all ? "" : " (timed out waiting)");
				rc = -1;
			}
		}
	}
	pthread_mutex_unlock(&n->mu);
	if (!rc)
		say("as a target: received 4 PUTs with the right bytes, served 4 GETs");
	return rc;
}

/* --- initiator side: one operation and its events ------------------------------- */

struct op {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n[8];                  /* per event kind */
	int status;                /* first non-zero status */
	uint32_t mlength[8];
	bool unlinked;
};

static void op_handler(const struct ulnet_event *ev)
{
	struct op *op = ev->md_user_ptr;

	pthread_mutex_lock(&op->mu);
	if (ev->type < 8) {
		op->n[ev->type]++;
		op->mlength[ev->type] = ev->mlength;
	}
	if (ev->status && !op->status)
		op->status = ev->status;
	if (ev->unlinked)
		op->unlinked = true;
	pthread_cond_broadcast(&op->cv);
	pthread_mutex_unlock(&op->mu);
}

/* Wait until the MD is unlinked (its last event); false on timeout. */
static bool op_wait(struct op *op)
{
	uint64_t end = now_ms() + (uint64_t)wait_budget(OP_TIMEOUT_MS);
	bool done;

	pthread_mutex_lock(&op->mu);
	while (!op->unlinked && now_ms() < end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&op->cv, &op->mu, &ts);
	}
	done = op->unlinked;
	pthread_mutex_unlock(&op->mu);
	return done;
}

static ulnet_process_id_t peer_id(const struct node *n)
{
	ulnet_process_id_t id = { .nid = n->peer, .pid = ULNET_PID_LUSTRE };

	return id;
}

/*
 * One PUT (with an ACK) or GET of sizes[i] through a free-floating MD with a
 * threshold of 2 (SEND + ACK/REPLY), which unlinks itself after its last
 * event. On success the bytes are checked (GET). On failure the MD and its
 * buffer are left to the core (unlinked if possible, never freed: an event
 * may still come), which is fine for a program that is about to exit.
 */
static int do_op(struct node *n, int i, bool put)
{
	const char *what = put ? "PUT" : "GET";
	enum ulnet_event_kind done_kind = put ? ULNET_EVENT_ACK : ULNET_EVENT_REPLY;
	struct op *op = calloc(1, sizeof(*op));
	uint8_t *buf = malloc(sizes[i] + 1);
	struct ulnet_md md = { 0 };
	ulnet_handle_t h = ULNET_HANDLE_NONE;
	unsigned seed = put ? seed_put(n->role, i) : seed_get(!n->role, i);
	int r;
	long bad;

	if (!op || !buf) {
		fail("%s %s: out of memory", what, size_names[i]);
		return -1;
	}
	pthread_mutex_init(&op->mu, NULL);
	pthread_cond_init(&op->cv, NULL);
	if (put)
		pat_fill(buf, sizes[i], seed);
	else
		memset(buf, 0xee, sizes[i] + 1);
	md.start = buf;
	md.length = sizes[i];
	md.threshold = 2;
	md.user_ptr = op;
	md.handler = op_handler;
	r = ulnet_md_bind(n->ln, &md, ULNET_UNLINK, &h);
	if (r) {
		fail("%s %s: ulnet_md_bind: %s", what, size_names[i], ulnet_strerror(r));
		return -1;
	}
	if (put)
		r = ulnet_put(n->ln, NULL, h, ULNET_ACK_REQ, peer_id(n), PORTAL, MB_PUT + (uint64_t)i, 0,
			      0x1234500 + (uint64_t)i);
	else
		r = ulnet_get(n->ln, NULL, h, peer_id(n), PORTAL, MB_GET + (uint64_t)i, 0);
	if (r) {
		fail("%s %s: %s", what, size_names[i], ulnet_strerror(r));
		(void)ulnet_md_unlink(n->ln, h);
		return -1;
	}
	if (!op_wait(op)) {
		fail("%s %s: timed out after SEND x%d, %s x%d%s%s", what, size_names[i],
		     op->n[ULNET_EVENT_SEND], put ? "ACK" : "REPLY", op->n[done_kind],
		     op->status ? ", status " : "", op->status ? ulnet_strerror(op->status) : "");
		(void)ulnet_md_unlink(n->ln, h);
		return -1;
	}
	if (op->status) {
		fail("%s %s: event status %d (%s)", what, size_names[i], op->status,
		     ulnet_strerror(op->status));
		return -1;
	}
	if (op->n[ULNET_EVENT_SEND] != 1 || op->n[done_kind] != 1) {
		fail("%s %s: saw %d SEND and %d %s events, expected 1 of each", what, size_names[i],
		     op->n[ULNET_EVENT_SEND], op->n[done_kind], put ? "ACK" : "REPLY");
		return -1;
	}
	if (op->mlength[done_kind] != sizes[i]) {
		fail("%s %s: the %s says %u bytes, expected %zu", what, size_names[i],
		     put ? "ACK" : "REPLY", op->mlength[done_kind], sizes[i]);
		return -1;
	}
	if (!put && (bad = pat_check(buf, sizes[i], seed)) >= 0) {
		fail("GET %s: payload mismatch at byte %ld: got 0x%02x, expected 0x%02x", size_names[i],
		     bad, buf[bad], pat((size_t)bad, seed));
		return -1;
	}
	if (!put && buf[sizes[i]] != 0xee) {
		fail("GET %s: the REPLY wrote past the end of the MD", size_names[i]);
		return -1;
	}
	pthread_mutex_destroy(&op->mu);
	pthread_cond_destroy(&op->cv);
	free(op);
	free(buf);
	return 0;
}

static bool peer_lists(const struct ulnet_ping_peer *p, const ulnet_nid_t *nid)
{
	if (ulnet_nid_same(&p->primary, nid))
		return true;
	for (int k = 0; k < p->nnids && k < 16; k++)
		if (ulnet_nid_same(&p->nids[k], nid))
			return true;
	return false;
}

/* Ping, discovery, PUTs and GETs towards the peer. 0, -1 (failed) or 1
 * (passed, but ping/discovery not implemented). */
static int client_phase(struct node *n)
{
	struct ulnet_ping_peer pp;
	char nb[ULNET_NIDSTR_SIZE];
	int rc;
	uint64_t t0;

	ulnet_nid_str(&n->peer, nb);

	memset(&pp, 0, sizeof(pp));
	t0 = now_us();
	rc = ulnet_ping(n->ln, (ulnet_process_id_t){ .nid = n->peer, .pid = ULNET_PID_ANY }, NULL, 0,
			wait_budget(OP_TIMEOUT_MS), &pp);
	if (rc) {
		fail("ping %s: %s", nb, ulnet_strerror(rc));
		return -1;
	} else if (!peer_lists(&pp, &n->peer)) {
		fail("ping %s: the reply does not list %s (%d NIDs)", nb, nb, pp.nnids);
		return -1;
	} else {
		say("ping %s: ok, %d NID(s), %.3f ms", nb, pp.nnids, (double)(now_us() - t0) / 1000.0);
	}

	memset(&pp, 0, sizeof(pp));
	t0 = now_us();
	rc = ulnet_discover(n->ln, &n->peer, true, wait_budget(OP_TIMEOUT_MS), &pp);
	if (rc) {
		fail("discover %s: %s", nb, ulnet_strerror(rc));
		return -1;
	} else if (!peer_lists(&pp, &n->peer)) {
		fail("discover %s: the peer does not list %s (%d NIDs)", nb, nb, pp.nnids);
		return -1;
	} else {
		say("discover %s: ok, primary %s, %d NID(s), %.3f ms", nb,
		    ulnet_nid_str(&pp.primary, (char[ULNET_NIDSTR_SIZE]){ 0 }), pp.nnids,
		    (double)(now_us() - t0) / 1000.0);
	}

	for (int i = 0; i < NSIZES; i++) {
		if (do_op(n, i, true))
			return -1;
		say("PUT %s to %s: ACKed", size_names[i], nb);
	}
	for (int i = 0; i < NSIZES; i++) {
		if (do_op(n, i, false))
			return -1;
		say("GET %s from %s: REPLY bytes verified", size_names[i], nb);
	}
	return 0;
}

/* --- the two processes ------------------------------------------------------------ */

static int send_line(int fd, const char *s)
{
	size_t l = strlen(s);

	return write(fd, s, l) == (ssize_t)l ? 0 : -1;
}

/* Read one line (bounded by the deadline); 0, or -1 on EOF/timeout. */
static int recv_line(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int ms = wait_budget(60000);
		ssize_t r;

		if (ms <= 0 || poll(&p, 1, ms) <= 0)
			return -1;
		r = read(fd, buf + got, 1);
		if (r <= 0)
			return -1;
		if (buf[got] == '\n')
			break;
		got++;
	}
	buf[got] = 0;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: prog_lnet_traffic [options] ADDR_A ADDR_B PORT\n"
		"  Two ulnet nodes (A: this process, B: a child) with tcp NIs on ADDR_A and\n"
		"  ADDR_B (127.x.y.z or 127.x.y.z@tcp[N]), both accepting on PORT, exchange:\n"
		"  ping and discovery both ways, PUT (with ACK) and GET of 0 B, 1 B, 4 KiB,\n"
		"  1 MiB both ways, every payload verified.\n"
		"  -t, --timeout S   limit for the whole run, seconds (default 30, 1..300)\n"
		"  -a, --accept M    acceptor mode: all (default), secure, none\n"
		"  -v, --verbose     ulnet log at INFO on stderr (twice: DEBUG)\n"
		"  -h, --help        this text\n"
		"exit: 0 passed, 1 failed, 2 usage, 3 time limit\n");
}

/* "127.0.2.2" or "127.0.2.2@tcp1" -> NID text; loopback tcp only. */
static int parse_addr(const char *what, const char *s, char *out, size_t len)
{
	ulnet_nid_t nid;
	struct ulnet_parse_err pe = { 0 };
	char tmp[ULNET_NIDSTR_SIZE];

	if (strlen(s) + 5 > sizeof(tmp)) {
		fprintf(stderr, "prog_lnet_traffic: %s: too long\n", what);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), strchr(s, '@') ? "%s" : "%s@tcp", s);
	if (ulnet_nid_parse(tmp, &nid, &pe)) {
		fprintf(stderr, "prog_lnet_traffic: %s '%s': %s\n", what, s, pe.msg);
		return -1;
	}
	if (ulnet_net_type(ulnet_nid_net(&nid)) != ULNET_LND_TCP || nid.size != 0 ||
	    (ulnet_nid_ipv4(&nid) >> 24) != 127) {
		fprintf(stderr, "prog_lnet_traffic: %s '%s': must be an IPv4 loopback tcp NID (127.x.y.z)\n",
			what, s);
		return -1;
	}
	ulnet_nid_format(&nid, out, len);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "accept", required_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char nid_a[ULNET_NIDSTR_SIZE], nid_b[ULNET_NIDSTR_SIZE], line[256], *end;
	const char *accept = "all";
	int timeout_s = 30, verbose = 0, c, p2c[2], c2p[2], result = 0;
	unsigned long port;
	pid_t child;

	while ((c = getopt_long(argc, argv, "t:a:vh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			errno = 0;
			timeout_s = (int)strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || timeout_s < 1 || timeout_s > 300) {
				fprintf(stderr, "prog_lnet_traffic: --timeout '%s': expected 1..300 seconds\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'a':
			if (strcmp(optarg, "all") && strcmp(optarg, "secure") && strcmp(optarg, "none")) {
				fprintf(stderr, "prog_lnet_traffic: --accept '%s': expected all, secure or none\n",
					optarg);
				return EXIT_USAGE;
			}
			accept = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 3) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (parse_addr("ADDR_A", argv[optind], nid_a, sizeof(nid_a)) ||
	    parse_addr("ADDR_B", argv[optind + 1], nid_b, sizeof(nid_b)))
		return EXIT_USAGE;
	if (!strcmp(nid_a, nid_b)) {
		fprintf(stderr, "prog_lnet_traffic: ADDR_A and ADDR_B are the same NID %s\n", nid_a);
		return EXIT_USAGE;
	}
	errno = 0;
	port = strtoul(argv[optind + 2], &end, 10);
	if (errno || *end || end == argv[optind + 2] || port < 1 || port > 65535) {
		fprintf(stderr, "prog_lnet_traffic: PORT '%s': expected 1..65535\n", argv[optind + 2]);
		return EXIT_USAGE;
	}

	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline_ms = now_ms() + (uint64_t)timeout_s * 1000;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	if (pipe(p2c) || pipe(c2p)) {
		perror("prog_lnet_traffic: pipe");
		return EXIT_FAIL;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		perror("prog_lnet_traffic: fork");
		return EXIT_FAIL;
	}
	alarm((unsigned)timeout_s + 2);  /* backstop for anything unbounded */

	if (child == 0) {
		/* node B */
		int rc;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p2c[1]);
		close(c2p[0]);
		role_name = "B";
		self_node.role = 1;
		if (node_start(&self_node, nid_b, nid_a, (uint16_t)port, accept, verbose)) {
			send_line(c2p[1], "FAIL\n");
			node_stop(&self_node);
			_exit(EXIT_FAIL);
		}
		say("node %s up, acceptor on port %lu", nid_b, port);
		send_line(c2p[1], "READY\n");
		if (recv_line(p2c[0], line, sizeof(line)) || strcmp(line, "GO")) {
			fail("no GO from node A (%s)", line);
			node_stop(&self_node);
			_exit(EXIT_FAIL);
		}
		rc = check_received(&self_node) ? -1 : client_phase(&self_node);
		send_line(c2p[1], rc < 0 ? "FAIL\n" : "DONE\n");
		/* stay up until A has checked what B sent */
		if (recv_line(p2c[0], line, sizeof(line)) || strcmp(line, "FIN"))
			fail("no FIN from node A");
		node_stop(&self_node);
		_exit(rc < 0 ? EXIT_FAIL : 0);
	}

	/* node A */
	close(p2c[0]);
	close(c2p[1]);
	role_name = "A";
	self_node.role = 0;
	if (node_start(&self_node, nid_a, nid_b, (uint16_t)port, accept, verbose)) {
		result = EXIT_FAIL;
		goto out;
	}
	say("node %s up, acceptor on port %lu", nid_a, port);
	if (recv_line(c2p[0], line, sizeof(line)) || strcmp(line, "READY")) {
		fail("node B did not come up");
		result = EXIT_FAIL;
		goto out;
	}
	c = client_phase(&self_node);
	if (c < 0) {
		result = EXIT_FAIL;
		goto out;
	}
	send_line(p2c[1], "GO\n");
	if (recv_line(c2p[0], line, sizeof(line))) {
		fail("no word from node B (time limit or crash)");
		result = EXIT_FAIL;
		goto out;
	}
	if (!strcmp(line, "FAIL")) {
		result = EXIT_FAIL;
		goto out;
	}
	if (check_received(&self_node))
		result = EXIT_FAIL;
out:
	send_line(p2c[1], "FIN\n");
	close(p2c[1]);
	{
		int st = 0;
		pid_t w = 0;

		/* bounded wait for B, then kill it */
		while ((w = waitpid(child, &st, WNOHANG)) == 0 && now_ms() < deadline_ms)
			usleep(10000);
		if (w == 0) {
			fail("node B did not exit in time; killing it");
			kill(child, SIGKILL);
			waitpid(child, &st, 0);
			result = result ? result : EXIT_TIMEOUT;
		} else if (w == child && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			if (!result)
				fail("node B exited with %s %d", WIFEXITED(st) ? "status" : "signal",
				     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			result = result ? result : WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_FAIL;
		}
	}
	node_stop(&self_node);
	alarm(0);
	if (!result)
		say("PASSED: ping and discovery both ways, PUT+ACK and GET of 0 B, 1 B, 4 KiB, 1 MiB both ways, payloads verified");
	return result;
}
