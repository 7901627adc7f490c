/* SPDX-License-Identifier: MIT */
/*
 * bench_tcp.c - two ulnet nodes over TCP on loopback (two processes):
 *   bw   : 1 MiB PUT bandwidth, W PUTs in flight (completion = SEND event,
 *          which with zero-copy cookies means the receiver has the data)
 *   lat  : 8-byte PUT + LNet ACK round trip, next PUT issued from the ACK
 *          handler (no thread hand-off), avg and p50 in microseconds
 *   rate : 64-byte PUTs without ACK, pipelined; the rate is what the
 *          receiver counted (read back with a GET), per second; then the
 *          same with ulnet_batch_begin/end around every BENCH_BATCH PUTs
 *          (ratebatch: only that one)
 * Prints one line per figure: "<name> <value> <unit>". Not a test.
 *
 * usage: bench_tcp [bw|lat|rate|ratebatch|all] [seconds]
 * env: BENCH_PORT (acceptor port, default 21988), BENCH_WINDOW (bw, default 4),
 *      BENCH_BATCH (PUTs per batch in ratebatch, default 32),
 *      BENCH_PEER_CREDITS (peer_credits tunable of both NIs, default 8),
 *      BENCH_CONNS (conns_per_peer of both NIs: parallel bulk streams, default 1),
 *      BENCH_SOCKBUF (tx/rx_buffer_size tunables of both NIs, default system),
 *      BENCH_ZC_MIN (zc_min_payload tunable of both NIs; -1: no ZC-ACKs, a
 *      PUT's SEND event then only means its bytes are in the socket),
 *      BENCH_NAGLE=1 (the nagle tunable on both NIs: Nagle left on),
 *      BENCH_BUSY_POLL=1 (both nodes' progress threads spin: ULNET_OPT_BUSY_POLL;
 *      the main thread still sleeps in its waiter, so two threads spin in all),
 *      BENCH_MANUAL=1 (both nodes ULNET_OPT_MANUAL_PROGRESS: no progress thread;
 *      each process's one thread spins on ulnet_progress(ln, 0) while it waits,
 *      the model of ucx_perftest, whose worker is progressed by its caller),
 *      BENCH_WAIT_MS=n (with BENCH_MANUAL: wait in ulnet_progress(ln, n), not
 *      spin; bench/instr.py uses 1 so that callgrind counts no empty polls),
 *      BENCH_LAT_HIST=1 (lat: print deciles and the tail as comments),
 *      BENCH_LAT_DUMP=<file> (lat: every round trip in ns, in order, one a line),
 *      BENCH_DISTINCT_BUFS=1 (bw/rate: the W MDs of the window each cover their
 *      own buffer; default: all cover one buffer, as ucx_perftest and iperf3
 *      send from one buffer; the server always receives into one),
 *      BENCH_ROUTED=1 (a third process, the router R: 127.0.0.4@tcp and
 *      127.0.0.5@tcp1, forwarding at once; the server is 127.0.0.3@tcp1 and
 *      each side routes to the other's net through R. At the end R's CPU
 *      time per GiB forwarded is printed beside one memcpy of a GiB here),
 *      BENCH_NSCHEDS=1 (every NI, the router's two among them, on a thread of
 *      its own: the socklnd nscheds tunable; the router then receives on
 *      one NI's thread while the other NI's thread sends),
 *      BENCH_IDLE_PEERS=n (with BENCH_ROUTED: before anything is timed, a
 *      fourth process attaches n idle peers to R, 127.1.x.y@tcp, each having
 *      pinged R once: three connections each, then silence)
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ulnet/routing.h"
#include "ulnet/ulnet.h"

#define PORTAL_SINK 10
#define PORTAL_COUNTER 11
#define MAX_WINDOW 256
#define LAT_MAX_SAMPLES 2000000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_tcp: %s: %s\n", what, ulnet_strerror(rc));
	exit(1);
}

static unsigned node_flags;   /* ULNET_OPT_BUSY_POLL from BENCH_BUSY_POLL */
static int onebuf = 1;        /* every window MD over one buffer; BENCH_DISTINCT_BUFS=1: not */
static int manual;            /* BENCH_MANUAL=1: ULNET_OPT_MANUAL_PROGRESS, callers spin */
static int wait_ms;           /* BENCH_WAIT_MS: manual mode waits in ulnet_progress(ln, this) */

static int routed;            /* BENCH_ROUTED=1: through a router process */

static void add_tcp_ni(ulnet_t *ln, uint32_t ip, unsigned netnum, uint16_t port);

static void log_stderr(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	fprintf(stderr, "[%d %d] %s\n", (int)getpid(), lvl, msg);
}

static ulnet_t *make_node_on(uint32_t ip, unsigned netnum, uint16_t port)
{
	ulnet_t *ln;
	struct ulnet_opts opts = { .flags = node_flags };
	int rc;

	if (getenv("BENCH_LOG")) {   /* the nodes' log on stderr, at that level */
		opts.log = log_stderr;
		opts.log_level = (enum ulnet_log_level)atoi(getenv("BENCH_LOG"));
	}
	rc = ulnet_create(&opts, &ln);

	if (rc)
		die("ulnet_create", rc);
	add_tcp_ni(ln, ip, netnum, port);
	return ln;
}

static ulnet_t *make_node(uint32_t ip, uint16_t port)
{
	return make_node_on(ip, 0, port);
}

/* A route to tcp<netnum> through the gateway ip@tcp<gwnet>. */
static void add_route(ulnet_t *ln, unsigned netnum, uint32_t gw, unsigned gwnet)
{
	struct ulnet_route_conf rc = { .net = ulnet_mknet(ULNET_LND_TCP, netnum),
				       .hops = ULNET_ROUTE_HOPS_UNSET };
	int rc2;

	ulnet_nid_from_ipv4(gw, ulnet_mknet(ULNET_LND_TCP, gwnet), &rc.gateway);
	rc2 = ulnet_route_add(ln, &rc);
	if (rc2)
		die("ulnet_route_add", rc2);
}

static void add_tcp_ni(ulnet_t *ln, uint32_t ip, unsigned netnum, uint16_t port)
{
	struct ulnet_ni_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	ulnet_nid_from_ipv4(ip, ulnet_mknet(ULNET_LND_TCP, netnum), &conf.nid);
	conf.accept_port = port;
	if (getenv("BENCH_PEER_CREDITS"))   /* default: the kernel's 8 */
		conf.tun.peer_credits = atoi(getenv("BENCH_PEER_CREDITS"));
	if (getenv("BENCH_NAGLE") && atoi(getenv("BENCH_NAGLE")))   /* the nagle tunable */
		conf.sock.nagle = 1;
	if (getenv("BENCH_NSCHEDS"))        /* nscheds 1: each NI on a thread of its own */
		conf.sock.nscheds = atoi(getenv("BENCH_NSCHEDS"));
	if (getenv("BENCH_CONNS"))          /* conns_per_peer: parallel bulk streams */
		conf.tun.conns_per_peer = atoi(getenv("BENCH_CONNS"));
	if (getenv("BENCH_ZC_MIN"))         /* zc_min_payload tunable; -1: no ZC-ACKs */
		conf.sock.zc_min_payload = atoi(getenv("BENCH_ZC_MIN"));
	if (getenv("BENCH_NONBLK_ZCACK"))   /* 0: ZC-ACK NOOPs on CONTROL, not BULK_IN */
		conf.sock.nonblk_zcack = atoi(getenv("BENCH_NONBLK_ZCACK")) ? 1 : -1;
	if (getenv("BENCH_SOCKBUF"))        /* SO_SNDBUF/SO_RCVBUF; default: system */
		conf.sock.tx_buffer_size = conf.sock.rx_buffer_size = atoi(getenv("BENCH_SOCKBUF"));
	strcpy(conf.accept, "all");
	rc = ulnet_ni_add(ln, &conf);
	if (rc)
		die("ulnet_ni_add", rc);
}

/* A child node serves until the parent closes its stop pipe: manual mode
 * progresses it here, else its progress thread does. */
static void serve_until_stopped(ulnet_t *ln, int stop_fd)
{
	char b;

	if (manual) {
		struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
		unsigned turn = 0;

		for (;;) {
			ulnet_progress(ln, wait_ms);
			if ((++turn & 1023) == 0 && poll(&pfd, 1, 0) > 0 && read(stop_fd, &b, 1) <= 0)
				break;
		}
	} else {
		while (read(stop_fd, &b, 1) > 0)
			;
	}
}

/* --- idle peers ------------------------------------------------------------------ */

/* The crowd: n nodes that each ping R once (opening their connections to
 * it) and then stay, idle, until the stop pipe closes. */
static void run_crowd(int n, uint16_t port, int ready_fd, int stop_fd)
{
	ulnet_t **lns = calloc((size_t)n, sizeof(*lns));
	ulnet_process_id_t r = { .pid = ULNET_PID_LUSTRE };
	struct rlimit rl;
	int ok = 0;
	char b;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	ulnet_nid_from_ipv4(0x7f000004, ulnet_mknet(ULNET_LND_TCP, 0), &r.nid);
	for (int i = 0; lns && i < n; i++) {
		struct ulnet_opts opts = { .flags = ULNET_OPT_MANUAL_PROGRESS };
		struct ulnet_ni_conf conf;

		if (ulnet_create(&opts, &lns[i]))
			break;
		memset(&conf, 0, sizeof(conf));
		ulnet_nid_from_ipv4(0x7f010000u | (uint32_t)((i / 250) << 8) | (uint32_t)(i % 250 + 1),
				    ulnet_mknet(ULNET_LND_TCP, 0), &conf.nid);
		conf.accept_port = port;
		strcpy(conf.accept, "none");
		if (ulnet_ni_add(lns[i], &conf) == 0 && ulnet_ping(lns[i], r, NULL, 0, 5000, NULL) == 0)
			ok++;
	}
	/* their connections finish (BULK_IN and BULK_OUT follow CONTROL) */
	for (int k = 0; k < 20; k++)
		for (int i = 0; lns && i < n; i++)
			if (lns[i])
				ulnet_progress(lns[i], 0);
	fprintf(stderr, "bench_tcp: %d of %d idle peers attached to the router\n", ok, n);
	if (write(ready_fd, "r", 1) != 1)
		exit(1);
	/* idle: a sweep a second answers keepalives, nothing else */
	for (;;) {
		struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };

		if (poll(&pfd, 1, 1000) > 0 && read(stop_fd, &b, 1) <= 0)
			break;
		for (int i = 0; lns && i < n; i++)
			if (lns[i])
				ulnet_progress(lns[i], 0);
	}
	for (int i = 0; lns && i < n; i++)
		if (lns[i])
			ulnet_destroy(lns[i]);
	free(lns);
	exit(0);
}

/* --- router ------------------------------------------------------------------ */

static void run_router(uint16_t port, int ready_fd, int stop_fd)
{
	ulnet_t *ln;
	struct ulnet_counters c;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {   /* idle peers: 3 conns each */
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	ln = make_node_on(0x7f000004, 0, port);

	add_tcp_ni(ln, 0x7f000005, 1, port);
	if (ulnet_routing_enable_now(ln))
		die("routing", -EINVAL);
	if (write(ready_fd, "r", 1) != 1)
		exit(1);
	serve_until_stopped(ln, stop_fd);
	ulnet_counters_get(ln, &c);
	/* the forwarded bytes, for the parent's CPU per GiB */
	if (write(ready_fd, &c.route_length, sizeof(c.route_length)) != sizeof(c.route_length))
		exit(1);
	ulnet_destroy(ln);
	exit(0);
}

/* --- server ------------------------------------------------------------------ */

static _Atomic uint64_t srv_puts;
static uint64_t srv_counter_buf;   /* read by the client's GET */

static void srv_handler(const struct ulnet_event *ev)
{
	if (ev->type == ULNET_EVENT_PUT && ev->status == 0) {
		uint64_t n = atomic_fetch_add(&srv_puts, 1) + 1;
		__atomic_store_n(&srv_counter_buf, n, __ATOMIC_RELEASE);
	}
}

static void run_server(uint16_t port, int ready_fd, int stop_fd)
{
	static char sink[1 << 20];
	ulnet_t *ln = make_node_on(0x7f000003, routed ? 1 : 0, port);
	ulnet_handle_t me, md;
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md d = { .start = sink, .length = sizeof(sink), .threshold = ULNET_MD_THRESH_INF,
			      .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_TRUNCATE |
					 ULNET_MD_MANAGE_REMOTE,
			      .handler = srv_handler };
	struct ulnet_md c = { .start = &srv_counter_buf, .length = sizeof(srv_counter_buf),
			      .threshold = ULNET_MD_THRESH_INF,
			      .options = ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE };

	if (ulnet_me_attach(ln, PORTAL_SINK, any, 0, ~0ULL, ULNET_RETAIN, ULNET_INS_AFTER, &me) ||
	    ulnet_md_attach(ln, me, &d, ULNET_RETAIN, &md))
		die("server MD", -EINVAL);
	if (ulnet_me_attach(ln, PORTAL_COUNTER, any, 0, ~0ULL, ULNET_RETAIN, ULNET_INS_AFTER, &me) ||
	    ulnet_md_attach(ln, me, &c, ULNET_RETAIN, &md))
		die("server counter MD", -EINVAL);
	if (routed)
		add_route(ln, 0, 0x7f000005, 1);
	if (write(ready_fd, "r", 1) != 1)
		exit(1);
	/* Parent closes the pipe to stop us. */
	serve_until_stopped(ln, stop_fd);
	ulnet_destroy(ln);
	exit(0);
}

/* --- client ------------------------------------------------------------------ */

struct client {
	_Atomic int sleepers;     /* threads in pthread_cond_timedwait */
	ulnet_t *ln;
	ulnet_process_id_t peer;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* issued: main thread only; done: handlers (any thread). In flight =
	 * issued - done, so a completion costs one atomic add (the benchmark
	 * should not measure its own bookkeeping). */
	uint64_t issued;
	_Atomic uint64_t done_ops;
	/* a sleeping stream() wants waking once done_ops reaches this (0:
	 * at any completion); set before it sleeps */
	_Atomic uint64_t wake_done;
	size_t op_size;
	_Atomic int errors;
	/* latency */
	ulnet_handle_t lat_md;
	uint64_t lat_t0, *lat_samples;
	_Atomic uint64_t lat_n, lat_target;
	_Atomic int lat_done;
	/* counter GET */
	uint64_t counter;
	_Atomic int get_done;
};

static struct client C;

/* Signal the waiting thread only when it sleeps: a futex call per event
 * would measure the benchmark, not ulnet. */
static void wake(void)
{
	if (!atomic_load(&C.sleepers))
		return;
	pthread_mutex_lock(&C.lock);
	pthread_cond_broadcast(&C.cond);
	pthread_mutex_unlock(&C.lock);
}

static void wait_until(int (*pred)(void), int timeout_s)
{
	uint64_t deadline;

	if (pred())
		return;
	deadline = now_ns() + (uint64_t)timeout_s * 1000000000ULL;
	if (manual) {
		unsigned turn = 0;

		while (!pred()) {
			ulnet_progress(C.ln, wait_ms);
			if ((++turn & 1023) == 0 && now_ns() > deadline) {
				fprintf(stderr, "bench_tcp: timed out waiting\n");
				exit(1);
			}
		}
		return;
	}
	while (!pred()) {
		if (now_ns() > deadline) {
			fprintf(stderr, "bench_tcp: timed out waiting\n");
			exit(1);
		}
		/* wake() never misses a sleeper (sleepers is raised before
		 * pred() is read again), so this bound is only a safety net:
		 * keep it long, since on a 2-vCPU box every wake-up of this
		 * thread preempts one of the two spinning progress threads
		 * (at 100 Hz that put ~0.5 us on the busy-poll round trip's
		 * average) */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec++;
		pthread_mutex_lock(&C.lock);
		atomic_fetch_add(&C.sleepers, 1);
		if (!pred())
			pthread_cond_timedwait(&C.cond, &C.lock, &ts);
		atomic_fetch_sub(&C.sleepers, 1);
		pthread_mutex_unlock(&C.lock);
	}
}

static void stream_handler(const struct ulnet_event *ev)
{
	if (ev->type != ULNET_EVENT_SEND)
		return;
	if (ev->status || ev->mlength != C.op_size)
		atomic_fetch_add(&C.errors, 1);
	/* wake a window wait only at its low-water mark, not at every
	 * completion: woken per completion, the waiter refilled one slot and
	 * slept again, some 60 000 futex round trips a second that measured
	 * the benchmark's hand-off, not ulnet */
	if (atomic_fetch_add(&C.done_ops, 1) + 1 >= atomic_load(&C.wake_done))
		wake();
}

static int window_free_pred_w;
static uint64_t inflight(void)
{
	return C.issued - atomic_load_explicit(&C.done_ops, memory_order_acquire);
}
static int window_free(void) { return inflight() < (uint64_t)window_free_pred_w; }
/* a full window refills from a quarter free: PUTs then go in bursts, as an
 * application pipelining them would issue them */
static uint64_t window_low(void)
{
	return (uint64_t)(window_free_pred_w - (window_free_pred_w / 4 ? window_free_pred_w / 4 : 1));
}
static int window_low_reached(void) { return inflight() <= window_low(); }
static int all_done(void) { return inflight() == 0; }

/* Keep `window` PUTs of `size` bytes in flight for `secs`; returns elapsed ns.
 * batch > 0: ulnet_batch_begin/end around every `batch` PUTs (and before
 * waiting for the window), so several PUTs leave in one sendmsg(). */
static uint64_t stream(size_t size, int window, double secs, int batch, uint64_t *ops,
		       uint64_t *bytes)
{
	static ulnet_handle_t mds[MAX_WINDOW];
	static char *bufs[MAX_WINDOW];
	int i, next = 0, rc, held = 0;
	unsigned iter = 0;
	uint64_t t0, end;

	for (i = 0; i < window; i++) {
		struct ulnet_md d = { .length = size, .threshold = ULNET_MD_THRESH_INF,
				      .handler = stream_handler };
		if (i > 0 && onebuf) {
			bufs[i] = NULL;   /* shares bufs[0] */
			d.start = bufs[0];
			rc = ulnet_md_bind(C.ln, &d, ULNET_RETAIN, &mds[i]);
			if (rc)
				die("md_bind", rc);
			continue;
		}
		bufs[i] = malloc(size ? size : 1);
		memset(bufs[i], 0x5a, size);
		d.start = bufs[i];
		rc = ulnet_md_bind(C.ln, &d, ULNET_RETAIN, &mds[i]);
		if (rc)
			die("md_bind", rc);
	}
	window_free_pred_w = window;
	atomic_store(&C.done_ops, 0);
	C.issued = 0;
	C.op_size = size;
	t0 = now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	if (batch)
		ulnet_batch_begin(C.ln);
	/* the clock every 16 PUTs: the benchmark should not measure it */
	while ((iter++ & 15) || now_ns() < end) {
		if (batch && held && !window_free()) {
			ulnet_batch_end(C.ln);   /* what is held must go before we wait */
			ulnet_batch_begin(C.ln);
			held = 0;
		}
		if (!window_free()) {
			atomic_store(&C.wake_done, C.issued - window_low());
			wait_until(window_low_reached, 30);
		}
		C.issued++;
		rc = ulnet_put(C.ln, NULL, mds[next], ULNET_NOACK_REQ, C.peer, PORTAL_SINK, 0, 0, 0);
		if (rc)
			die("put", rc);
		next = next + 1 == window ? 0 : next + 1;
		if (batch && ++held >= batch) {
			ulnet_batch_end(C.ln);
			ulnet_batch_begin(C.ln);
			held = 0;
		}
	}
	if (batch)
		ulnet_batch_end(C.ln);
	atomic_store(&C.wake_done, 0);
	wait_until(all_done, 60);
	*ops = atomic_load(&C.done_ops);
	*bytes = *ops * size;   /* every PUT moves the whole MD (the handler checks) */
	for (i = 0; i < window; i++) {
		ulnet_md_unlink(C.ln, mds[i]);
		free(bufs[i]);
	}
	return now_ns() - t0;
}

static void lat_handler(const struct ulnet_event *ev)
{
	if (ev->type != ULNET_EVENT_ACK)
		return;
	uint64_t t = now_ns();
	uint64_t n = atomic_fetch_add(&C.lat_n, 1);
	if (n < LAT_MAX_SAMPLES)
		C.lat_samples[n] = t - C.lat_t0;
	if (ev->status || n + 1 >= atomic_load(&C.lat_target)) {
		if (ev->status)
			atomic_fetch_add(&C.errors, 1);
		atomic_store(&C.lat_done, 1);
		wake();
		return;
	}
	C.lat_t0 = t;   /* one clock read per round trip, as ucx_perftest */
	if (ulnet_put(C.ln, NULL, C.lat_md, ULNET_ACK_REQ, C.peer, PORTAL_SINK, 0, 0, 0)) {
		atomic_fetch_add(&C.errors, 1);
		atomic_store(&C.lat_done, 1);
		wake();
	}
}

static int lat_finished(void) { return atomic_load(&C.lat_done); }

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void bench_lat(double secs)
{
	static char buf[8];
	struct ulnet_md d = { .start = buf, .length = 8, .threshold = ULNET_MD_THRESH_INF,
			      .handler = lat_handler };
	uint64_t n, sum = 0, i, t0;
	int rc = ulnet_md_bind(C.ln, &d, ULNET_RETAIN, &C.lat_md);

	if (rc)
		die("md_bind", rc);
	C.lat_samples = calloc(LAT_MAX_SAMPLES, sizeof(uint64_t));
	if (!C.lat_samples)
		die("samples", -ENOMEM);
	/* touch every page now: a first-touch fault inside the timed loop
	 * would land in the next sample */
	memset(C.lat_samples, 0, LAT_MAX_SAMPLES * sizeof(uint64_t));
	/* Calibrate: 2000 round trips, then size the run to `secs`. */
	for (int pass = 0; pass < 2; pass++) {
		atomic_store(&C.lat_n, 0);
		atomic_store(&C.lat_done, 0);
		atomic_store(&C.lat_target, pass == 0 ? 2000 : C.lat_target);
		t0 = now_ns();
		C.lat_t0 = now_ns();
		rc = ulnet_put(C.ln, NULL, C.lat_md, ULNET_ACK_REQ, C.peer, PORTAL_SINK, 0, 0, 0);
		if (rc)
			die("put", rc);
		wait_until(lat_finished, 120);
		if (pass == 0) {
			uint64_t per = (now_ns() - t0) / 2000;
			uint64_t target = per ? (uint64_t)(secs * 1e9) / per : 100000;
			if (target > LAT_MAX_SAMPLES)
				target = LAT_MAX_SAMPLES;
			if (target < 1000)
				target = 1000;
			atomic_store(&C.lat_target, target);
		}
	}
	n = atomic_load(&C.lat_n);
	if (n > LAT_MAX_SAMPLES)
		n = LAT_MAX_SAMPLES;
	if (getenv("BENCH_LAT_DUMP")) {
		FILE *f = fopen(getenv("BENCH_LAT_DUMP"), "w");
		for (i = 0; f && i < n; i++)
			fprintf(f, "%llu\n", (unsigned long long)C.lat_samples[i]);
		if (f)
			fclose(f);
	}
	for (i = 0; i < n; i++)
		sum += C.lat_samples[i];
	qsort(C.lat_samples, n, sizeof(uint64_t), cmp_u64);
	printf("ulnet_put_ack_rtt_8B_avg %.2f us\n", n ? sum / (double)n / 1000.0 : 0.0);
	printf("ulnet_put_ack_rtt_8B_p50 %.2f us\n", n ? C.lat_samples[n / 2] / 1000.0 : 0.0);
	printf("ulnet_put_ack_rtt_8B_p90 %.2f us\n", n ? C.lat_samples[n * 90 / 100] / 1000.0 : 0.0);
	printf("ulnet_put_ack_rtt_8B_p99 %.2f us\n", n ? C.lat_samples[n * 99 / 100] / 1000.0 : 0.0);
	if (getenv("BENCH_LAT_HIST")) {   /* deciles and the tail: where the average goes */
		static const int pm[] = { 100, 200, 300, 400, 500, 600, 700, 800, 900, 950, 990, 995, 999 };

		for (size_t k = 0; k < sizeof(pm) / sizeof(pm[0]) && n; k++)
			printf("# p%g %.2f us\n", pm[k] / 10.0, C.lat_samples[n * pm[k] / 1000] / 1000.0);
		if (n)
			printf("# max %.2f us\n", C.lat_samples[n - 1] / 1000.0);
	}
	ulnet_md_unlink(C.ln, C.lat_md);
	free(C.lat_samples);
}

static void get_handler(const struct ulnet_event *ev)
{
	if (ev->type == ULNET_EVENT_REPLY) {
		if (ev->status)
			atomic_fetch_add(&C.errors, 1);
		atomic_store(&C.get_done, 1);
		wake();
	}
}
static int get_finished(void) { return atomic_load(&C.get_done); }

static uint64_t read_server_counter(void)
{
	ulnet_handle_t md;
	struct ulnet_md d = { .start = &C.counter, .length = sizeof(C.counter), .threshold = 2,
			      .handler = get_handler };
	int rc = ulnet_md_bind(C.ln, &d, ULNET_UNLINK, &md);
	if (rc)
		die("md_bind", rc);
	atomic_store(&C.get_done, 0);
	rc = ulnet_get(C.ln, NULL, md, C.peer, PORTAL_COUNTER, 0, 0);
	if (rc)
		die("get", rc);
	wait_until(get_finished, 30);
	return C.counter;
}

static void bench_rate(double secs, const char *name, int batch)
{
	uint64_t ops, bytes, c0, c1, t0, el;
	c0 = read_server_counter();
	t0 = now_ns();
	stream(64, MAX_WINDOW, secs, batch, &ops, &bytes);
	c1 = read_server_counter();
	el = now_ns() - t0;
	printf("%s %.0f msg/s\n", name, (double)(c1 - c0) / (el / 1e9));
}

static void bench_bw(double secs)
{
	uint64_t ops, bytes, el;
	const char *w = getenv("BENCH_WINDOW");
	int window = w ? atoi(w) : 4;
	if (window < 1 || window > MAX_WINDOW)
		window = 4;
	el = stream(1 << 20, window, secs, 0, &ops, &bytes);
	printf("ulnet_put_bw_1MiB %.3f GB/s\n", (double)bytes / (double)el);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	double secs = argc > 2 ? atof(argv[2]) : 3.0;
	const char *p = getenv("BENCH_PORT");
	uint16_t port = (uint16_t)(p ? atoi(p) : 21988);
	int ready[2], stop[2], st;
	pid_t srv;
	char b;

	signal(SIGPIPE, SIG_IGN);
	if (getenv("BENCH_BUSY_POLL") && atoi(getenv("BENCH_BUSY_POLL")))
		node_flags |= ULNET_OPT_BUSY_POLL;
	if (getenv("BENCH_DISTINCT_BUFS") && atoi(getenv("BENCH_DISTINCT_BUFS")))
		onebuf = 0;
	if (getenv("BENCH_MANUAL") && atoi(getenv("BENCH_MANUAL"))) {
		manual = 1;
		node_flags |= ULNET_OPT_MANUAL_PROGRESS;
		if (getenv("BENCH_WAIT_MS"))
			wait_ms = atoi(getenv("BENCH_WAIT_MS"));
	}
	if (getenv("BENCH_ROUTED") && atoi(getenv("BENCH_ROUTED")))
		routed = 1;
	int rready[2] = { -1, -1 }, rstop[2] = { -1, -1 };
	pid_t rtr = -1;

	/* the router first: it must not hold the server's pipes (the server
	 * stops when its stop pipe's last writer closes) */
	if (routed) {
		if (pipe(rready) || pipe(rstop))
			return 1;
		rtr = fork();
		if (rtr == 0) {
			close(rready[0]);
			close(rstop[1]);
			run_router(port, rready[1], rstop[0]);
		}
		close(rready[1]);
		close(rstop[0]);
		if (read(rready[0], &b, 1) != 1) {
			fprintf(stderr, "bench_tcp: router did not start\n");
			return 1;
		}
	}
	int cready[2] = { -1, -1 }, cstop[2] = { -1, -1 };
	pid_t crowd = -1;
	int idle = routed && getenv("BENCH_IDLE_PEERS") ? atoi(getenv("BENCH_IDLE_PEERS")) : 0;

	if (idle > 0) {
		if (pipe(cready) || pipe(cstop))
			return 1;
		crowd = fork();
		if (crowd == 0) {
			close(rready[0]);
			close(rstop[1]);
			close(cready[0]);
			close(cstop[1]);
			run_crowd(idle, port, cready[1], cstop[0]);
		}
		close(cready[1]);
		close(cstop[0]);
		if (read(cready[0], &b, 1) != 1) {
			fprintf(stderr, "bench_tcp: idle peers did not start\n");
			return 1;
		}
	}
	if (pipe(ready) || pipe(stop))
		return 1;
	srv = fork();
	if (srv == 0) {
		if (routed) {
			close(rready[0]);
			close(rstop[1]);
		}
		if (idle > 0) {
			close(cready[0]);
			close(cstop[1]);
		}
		close(ready[0]);
		close(stop[1]);
		run_server(port, ready[1], stop[0]);
	}
	close(ready[1]);
	close(stop[0]);
	if (read(ready[0], &b, 1) != 1) {
		fprintf(stderr, "bench_tcp: server did not start\n");
		return 1;
	}
	pthread_mutex_init(&C.lock, NULL);
	pthread_cond_init(&C.cond, NULL);
	C.ln = make_node(0x7f000002, port);
	if (routed)
		add_route(C.ln, 1, 0x7f000004, 0);
	ulnet_nid_from_ipv4(0x7f000003, ulnet_mknet(ULNET_LND_TCP, routed ? 1 : 0), &C.peer.nid);
	C.peer.pid = ULNET_PID_LUSTRE;

	read_server_counter(); /* connects and discovers before anything is timed */
	if (!strcmp(what, "bw") || !strcmp(what, "all"))
		bench_bw(secs);
	if (!strcmp(what, "lat") || !strcmp(what, "all"))
		bench_lat(secs);
	if (!strcmp(what, "rate") || !strcmp(what, "all"))
		bench_rate(secs, "ulnet_put_rate_64B", 0);
	if (!strcmp(what, "rate") || !strcmp(what, "ratebatch") || !strcmp(what, "all")) {
		const char *bs = getenv("BENCH_BATCH");
		int batch = bs ? atoi(bs) : 32;

		bench_rate(secs, "ulnet_put_rate_64B_batch", batch > 0 ? batch : 32);
	}
	if (atomic_load(&C.errors))
		fprintf(stderr, "bench_tcp: %d operations failed\n", atomic_load(&C.errors));
	ulnet_destroy(C.ln);
	close(stop[1]);
	waitpid(srv, &st, 0);
	if (idle > 0) {
		close(cstop[1]);
		waitpid(crowd, &st, 0);
	}
	if (routed) {
		struct rusage ru;
		uint64_t fwd = 0;

		close(rstop[1]);
		if (read(rready[0], &fwd, sizeof(fwd)) != sizeof(fwd))
			fwd = 0;
		if (wait4(rtr, &st, 0, &ru) == rtr && fwd > 0) {
			double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
				     (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
			size_t gib = (size_t)1 << 30;
			char *x = malloc(gib), *y = malloc(gib);
			double mc = 0;

			if (x && y) {
				memset(x, 1, gib);
				memset(y, 2, gib);   /* both faulted in before timing */
				/* through a volatile pointer: the compiler may not
				 * elide or shorten the copy it cannot see */
				void *(*volatile cp)(void *, const void *, size_t) = memcpy;
				uint64_t t0 = now_ns();

				cp(y, x, gib);
				mc = (now_ns() - t0) / 1e9;
				if (y[gib / 2] != 1)
					mc = 0;
			}
			free(x);
			free(y);
			printf("router_cpu_per_GiB %.3f s\n", cpu / ((double)fwd / (double)gib));
			if (mc > 0)
				printf("memcpy_1GiB %.3f s\n", mc);
		}
	}
	return atomic_load(&C.errors) ? 1 : 0;
}
