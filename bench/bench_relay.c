/* SPDX-License-Identifier: MIT */
/*
 * bench_relay.c - the floor under a routed figure: what a relay with no
 * LNet in it at all reaches on this machine, beside the same traffic
 * direct. Three processes on loopback, as bench_tcp's routed runs (source,
 * relay, sink), plain TCP and nothing else:
 *   bw  : 1 MiB writes for SECS seconds, direct and through two relays:
 *         "copy" (read into a 1 MiB buffer, write it out: the copies a
 *         ulnet router makes), "splice" (socket -> 1 MiB pipe -> socket:
 *         the payload never enters the relay's memory). Each relay's CPU
 *         time per GiB is printed. (haproxy, a relay of someone else's, is
 *         measured by bench/relay_peers.sh.)
 *   lat : a 104-byte message and a 96-byte answer (the sizes of an 8-byte
 *         PUT and its ACK on a socklnd connection), direct and through a
 *         relay; every process spins on non-blocking reads and yields the
 *         CPU on an empty one, as ulnet's progress thread does, so the
 *         relayed figure is a floor for bench_tcp's routed round trip.
 * Prints one line per figure: "<name> <value> <unit>". Not a test.
 *
 * usage: bench_relay [bw|lat|all] [seconds]
 *
 * Why a floor and not only a ratio target: on a 2-vCPU machine all three
 * processes share two CPUs, so the relay's CPU time comes out of the
 * source's and the sink's; a relay that does nothing but move bytes shows
 * how much of the direct figure is left for any router.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)   /* bench_tcp's bw PUT size and its router's large buffer */
#define REQ_BYTES 104     /* ksock header 24 + LNet header 72 + 8 B payload */
#define ANS_BYTES 96      /* ksock header 24 + LNet header 72 (the ACK) */
#define LAT_MAX_ROUNDS 5000000

enum relay_kind { RELAY_NONE, RELAY_COPY, RELAY_SPLICE, RELAY_SPIN };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* the source's children, stopped when the source gives up (a child that
 * fails exits, and the others see EOF or their alarm) */
static pid_t parent_pid, kids[2] = { -1, -1 };

static void stop_kids(void)
{
	if (getpid() != parent_pid)
		return;
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
}

static void fail(const char *what)
{
	fprintf(stderr, "bench_relay: %s: %s\n", what, strerror(errno));
	stop_kids();
	exit(1);
}

static void nodelay(int s)
{
	int one = 1;
	if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		fail("TCP_NODELAY");
}

/* A listener on 127.0.0.1 and an ephemeral port, made before any fork so
 * that nobody has to retry a connect or guess a free port. */
static int listener(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 4) ||
	    getsockname(s, (struct sockaddr *)&a, &len))
		fail("listener");
	*port = ntohs(a.sin_port);
	return s;
}

static int dial(uint16_t port, int lat)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		fail("connect");
	if (lat)   /* a bulk stream leaves Nagle on, as iperf3 does */
		nodelay(s);
	return s;
}

static int take(int l, int lat)
{
	int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		fail("accept");
	if (lat)
		nodelay(s);
	close(l);
	return s;
}

static void write_all(int s, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(s, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			fail("write");
		p += w;
		n -= (size_t)w;
	}
}

/* Spin for exactly n bytes: non-blocking reads, the CPU yielded on an
 * empty one (ulnet's progress thread's idle turn). 0, or -1 at EOF. */
static int spin_read(int s, char *p, size_t n)
{
	while (n) {
		ssize_t r = recv(s, p, n, MSG_DONTWAIT);
		if (r == 0)
			return -1;
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				fail("recv");
			sched_yield();
			continue;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* ---- the three processes ------------------------------------------------ */

/* bw: reads to EOF and reports the bytes on `rep`, which the source
 * checks against what it wrote; lat: answers each request until EOF */
static void run_sink(int l, int lat, int rep)
{
	int s = take(l, lat);
	static char buf[CHUNK];

	if (lat) {   /* echo: an answer for each request, until EOF */
		while (!spin_read(s, buf, REQ_BYTES))
			write_all(s, buf, ANS_BYTES);
		_exit(0);
	}
	for (uint64_t got = 0;;) {
		ssize_t r = read(s, buf, sizeof(buf));
		if (r == 0) {
			if (write(rep, &got, sizeof(got)) != sizeof(got))
				_exit(1);
			_exit(0);
		}
		if (r < 0 && errno != EINTR)
			fail("sink read");
		if (r > 0)
			got += (uint64_t)r;
	}
}

/* Relay from `in` to `out` until EOF, then report CPU seconds on `rep`. */
static void run_relay(enum relay_kind kind, int l, uint16_t sink_port, int rep)
{
	int lat = kind == RELAY_SPIN;
	int out = dial(sink_port, lat), in = take(l, lat);
	static char buf[CHUNK];
	double c0 = cpu_s();

	if (kind == RELAY_COPY) {
		ssize_t r;
		while ((r = read(in, buf, sizeof(buf))) > 0)
			write_all(out, buf, (size_t)r);
		if (r < 0)
			fail("relay read");
	} else if (kind == RELAY_SPLICE) {
		int p[2];
		if (pipe2(p, O_CLOEXEC))
			fail("pipe");
		/* a 1 MiB pipe: one router buffer's worth (fs.pipe-max-size
		 * is 1 MiB by default; a smaller limit is an error, not a
		 * quietly smaller pipe) */
		if (fcntl(p[1], F_SETPIPE_SZ, CHUNK) < CHUNK)
			fail("F_SETPIPE_SZ 1 MiB");
		for (;;) {
			ssize_t r = splice(in, NULL, p[1], NULL, CHUNK, SPLICE_F_MOVE | SPLICE_F_MORE);
			if (r == 0)
				break;
			if (r < 0)
				fail("splice in");
			while (r > 0) {
				ssize_t w = splice(p[0], NULL, out, NULL, (size_t)r,
						   SPLICE_F_MOVE | SPLICE_F_MORE);
				if (w <= 0)
					fail("splice out");
				r -= w;
			}
		}
	} else {   /* RELAY_SPIN: both directions, one spinning thread */
		int fd[2] = { in, out };
		for (;;) {
			int busy = 0;
			for (int i = 0; i < 2; i++) {
				ssize_t r = recv(fd[i], buf, sizeof(buf), MSG_DONTWAIT);
				if (r == 0)
					goto done;
				if (r < 0 && errno != EAGAIN && errno != EINTR)
					fail("relay recv");
				if (r > 0) {
					write_all(fd[1 - i], buf, (size_t)r);
					busy = 1;
				}
			}
			if (!busy)
				sched_yield();
		}
	}
done:
	close(out);
	double c = cpu_s() - c0;
	if (write(rep, &c, sizeof(c)) != sizeof(c))
		_exit(1);
	_exit(0);
}

struct run {   /* the source's ends of a run; its children are kids[] */
	int to;          /* the source's connection */
	int rep;         /* the relay's CPU report */
	int sink_rep;    /* the sink's byte count */
};

/* Fork child `slot` of a run with a report pipe and an alarm (nothing
 * outlives a stuck run). Returns 0 in the child, *rep the pipe's write
 * end; the child's pid in the source, *rep the read end. */
static pid_t spawn(int slot, unsigned secs, int *rep)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		fail("pipe");
	pid = kids[slot] = fork();
	if (pid < 0)
		fail("fork");
	close(p[pid == 0 ? 0 : 1]);
	*rep = p[pid == 0 ? 1 : 0];
	if (pid == 0)
		alarm(secs * 4 + 30);
	return pid;
}

static struct run start(enum relay_kind kind, int lat, unsigned secs)
{
	struct run r = { .rep = -1 };
	uint16_t sport, rport = 0;
	int sl = listener(&sport), rl;

	if (spawn(0, secs, &r.sink_rep) == 0)
		run_sink(sl, lat, r.sink_rep);
	if (kind != RELAY_NONE) {
		rl = listener(&rport);
		if (spawn(1, secs, &r.rep) == 0)
			run_relay(kind, rl, sport, r.rep);
		close(rl);
	}
	close(sl);
	r.to = dial(kind != RELAY_NONE ? rport : sport, lat);
	return r;
}

/* Close the source's side and wait for both; the relay's CPU seconds
 * (0 direct). Exits on a child that failed, or (bw) on a sink that got
 * other than `sent` bytes. */
static double finish(struct run *r, int lat, uint64_t sent)
{
	double c = 0;
	uint64_t got = 0;
	int st;

	close(r->to);
	if (!lat && (read(r->sink_rep, &got, sizeof(got)) != sizeof(got) || got != sent)) {
		fprintf(stderr, "bench_relay: the sink got %llu bytes of %llu\n",
			(unsigned long long)got, (unsigned long long)sent);
		stop_kids();
		exit(1);
	}
	close(r->sink_rep);
	if (r->rep >= 0) {
		if (read(r->rep, &c, sizeof(c)) != sizeof(c))
			c = -1;
		close(r->rep);
	}
	for (int i = 0; i < 2; i++) {
		if (kids[i] < 0)
			continue;
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "bench_relay: %s failed\n", i ? "relay" : "sink");
			stop_kids();
			exit(1);
		}
		kids[i] = -1;
	}
	return c;
}

static const char *const kind_name[] = { "direct", "copy", "splice", "spin" };

static void bench_bw(enum relay_kind kind, unsigned secs)
{
	static char buf[CHUNK];
	struct run r = start(kind, 0, secs);
	double t0, t, cpu;
	uint64_t bytes = 0;

	memset(buf, 0x5a, sizeof(buf));
	t0 = now_s();
	do {   /* bounded by time; a relay that stalls trips its alarm */
		write_all(r.to, buf, sizeof(buf));
		bytes += sizeof(buf);
	} while (now_s() - t0 < secs);
	cpu = finish(&r, 0, bytes);   /* the sink has read every byte */
	t = now_s() - t0;
	printf("relay_%s_bw_1MiB %.3f GB/s\n", kind_name[kind], (double)bytes / t / 1e9);
	if (kind != RELAY_NONE)
		printf("relay_%s_cpu_per_GiB %.3f s\n", kind_name[kind],
		       cpu / ((double)bytes / (double)(1u << 30)));
	fflush(stdout);
}

static void bench_lat(enum relay_kind kind, unsigned secs)
{
	char req[REQ_BYTES] = { 0 }, ans[ANS_BYTES];
	struct run r = start(kind, 1, secs);
	uint64_t n = 0;
	double t0, t;

	for (int i = 0; i < 2000; i++) {   /* warm up: first-touch costs */
		write_all(r.to, req, sizeof(req));
		if (spin_read(r.to, ans, sizeof(ans)))
			fail("warm-up answer");
	}
	t0 = now_s();
	do {
		for (int i = 0; i < 256; i++, n++) {
			write_all(r.to, req, sizeof(req));
			if (spin_read(r.to, ans, sizeof(ans)))
				fail("answer");
		}
		t = now_s() - t0;
	} while (t < secs && n < LAT_MAX_ROUNDS);
	finish(&r, 1, 0);
	printf("relay_%s_rtt_avg %.2f us\n", kind == RELAY_NONE ? "direct" : "spin", t / (double)n * 1e6);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	unsigned secs = argc > 2 ? (unsigned)atoi(argv[2]) : 3;

	if (secs < 1 || secs > 600 ||
	    (strcmp(what, "bw") && strcmp(what, "lat") && strcmp(what, "all"))) {
		fprintf(stderr, "usage: bench_relay [bw|lat|all] [seconds 1-600]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	parent_pid = getpid();
	if (!strcmp(what, "bw") || !strcmp(what, "all")) {
		bench_bw(RELAY_NONE, secs);
		bench_bw(RELAY_COPY, secs);
		bench_bw(RELAY_SPLICE, secs);
	}
	if (!strcmp(what, "lat") || !strcmp(what, "all")) {
		bench_lat(RELAY_NONE, secs);
		bench_lat(RELAY_SPIN, secs);
	}
	return 0;
}
