/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_peer_death.c - every PUT and GET ends when its peer dies,
 * stalls, restarts or never answers.
 *
 * The peer is another process (this program re-executed as a server: a
 * node with a target MD), so it can be killed with SIGKILL or stopped with
 * SIGSTOP as an operator's node would be. This process streams PUTs (with
 * ACK) and GETs, 8 in flight, each on an MD of threshold 2 (SEND, then
 * ACK/REPLY) that the application never unlinks itself: the operation
 * ends only through LNet (the LND's failure of the send, then the response
 * tracker at transaction_timeout).
 *
 * Each scenario asserts that every operation issued gets exactly one
 * unlinked event within the documented bound (sock_timeout +
 * transaction_timeout + slack, see docs/core.md "Every operation ends"),
 * with at most one SEND and one ACK/REPLY or UNLINK, and that afterwards
 * the node is idle: no message, no response tracker, no MD of the stream
 * left, every NI's and peer NI's credits back (tests/support/failmodel.h);
 * once the peer is back (SIGCONT, restart) a fresh PUT and GET succeed.
 *
 * Timeouts are shortened for the test: sock_timeout 2 s, transaction_timeout
 * 5 s (retry_count 2).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "failmodel.h"
#include "socklnd_util.h"

#define PORTAL 41
#define MB 0xdead
#define OPSIZE (256 * 1024)
#define CONC 8
#define MAXOPS 200000
#define SOCK_TIMEOUT_S 2
#define TX_TIMEOUT_S 5
/* the most an operation may take once its peer is gone */
#define END_BOUND_MS ((SOCK_TIMEOUT_S + TX_TIMEOUT_S + 3) * 1000)

#define CLIENT_NID "127.0.0.61@tcp"
#define SERVER_NID "127.0.0.62@tcp"
#define SERVER_IP "127.0.0.62"

static char *self_exe;
static uint16_t port;
static pid_t server_pid;        /* the live server, killed at teardown */

/* --- the server: this program with argv[1] == "serve" ---------------------- */

static int serve(const char *nid, uint16_t p)
{
	static uint8_t buf[OPSIZE];
	struct st_node n;
	struct st_md m;

	st_md_init(&m);
	if (st_node_start(&n, nid, p, "all") || st_target(&n, PORTAL, MB, buf, sizeof(buf), &m))
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* Start a server process; returns its pid once its node is up. */
static pid_t server_start(void)
{
	int fds[2];
	char pbuf[16], line[16] = { 0 };
	pid_t pid;
	uint64_t end;
	size_t got = 0;

	assert_int_equal(pipe(fds), 0);
	snprintf(pbuf, sizeof(pbuf), "%u", port);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl(self_exe, self_exe, "serve", SERVER_NID, pbuf, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	end = st_now_ms() + ST_WAIT_MS;
	while (got < 6 && st_now_ms() < end) {
		ssize_t r = read(fds[0], line + got, sizeof(line) - 1 - got);

		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			break;
		else
			usleep(10000);
	}
	close(fds[0]);
	server_pid = pid;
	assert_memory_equal(line, "ready\n", 6);
	return pid;
}

static ulnet_nid_t server_nid(void)
{
	ulnet_nid_t n;

	assert_int_equal(ulnet_nid_parse(SERVER_NID, &n, NULL), 0);
	return n;
}

static void server_kill(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (pid == server_pid)
		server_pid = 0;
}

/* SIGSTOP, and wait until it has taken effect */
static void server_stop(pid_t pid)
{
	int st;

	kill(pid, SIGSTOP);
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
}

/* --- the client's stream of operations ------------------------------------ */

struct op {
	int events, unlinked, status;
	int sends, responses, unlinks;  /* SEND, ACK or REPLY, UNLINK events */
	bool responded;
};

static struct {
	struct st_node node;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct op *ops;
	int issued, ended, ok, failed;
	int inflight;
	bool issue;                 /* keep the window full */
	uint64_t last_end_ms;
	uint8_t bufs[CONC][OPSIZE];
	bool slot_busy[CONC];
	int slot_of[MAXOPS];
	bool twice;                 /* an operation ended twice (or got events after) */
	int mds0;                   /* MDs the idle node holds */
} S;

static void issue(int k);

static void op_handler(const struct ulnet_event *ev)
{
	int seq = (int)(intptr_t)ev->md_user_ptr;
	struct op *o = &S.ops[seq];
	int refill = -1;

	pthread_mutex_lock(&S.mu);
	if (o->unlinked)
		S.twice = true;
	o->events++;
	if (ev->type == ULNET_EVENT_SEND)
		o->sends++;
	else if (ev->type == ULNET_EVENT_ACK || ev->type == ULNET_EVENT_REPLY)
		o->responses++;
	else if (ev->type == ULNET_EVENT_UNLINK)
		o->unlinks++;
	if (ev->status && !o->status)
		o->status = ev->status;
	if ((ev->type == ULNET_EVENT_ACK || ev->type == ULNET_EVENT_REPLY) && !ev->status)
		o->responded = true;
	if (ev->unlinked) {
		o->unlinked++;
		S.ended++;
		S.inflight--;
		S.slot_busy[S.slot_of[seq]] = false;
		if (!o->status && o->responded)
			S.ok++;
		else
			S.failed++;
		S.last_end_ms = st_now_ms();
		/* the stream goes on from here, as an application's would,
		 * whatever the test thread is doing */
		if (S.issue && o->status == 0)
			refill = S.slot_of[seq];
		pthread_cond_broadcast(&S.cv);
	}
	pthread_mutex_unlock(&S.mu);
	if (refill >= 0)
		issue(refill);
}

/* Start the next operation in slot k, if it is free and the stream on. */
static void issue(int k)
{
	ulnet_process_id_t target = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_md md = { 0 };
	ulnet_handle_t h;
	int seq, rc;

	(void)ulnet_nid_parse(SERVER_NID, &target.nid, NULL);
	pthread_mutex_lock(&S.mu);
	if (!S.issue || S.slot_busy[k] || S.issued >= MAXOPS) {
		pthread_mutex_unlock(&S.mu);
		return;
	}
	seq = S.issued++;
	S.slot_busy[k] = true;
	S.slot_of[seq] = k;
	S.inflight++;
	pthread_mutex_unlock(&S.mu);
	md.start = S.bufs[k];
	md.length = OPSIZE;
	md.threshold = 2;
	md.user_ptr = (void *)(intptr_t)seq;
	md.handler = op_handler;
	rc = ulnet_md_bind(S.node.ln, &md, ULNET_UNLINK, &h);
	assert_int_equal(rc, 0);
	if (seq % 2)
		rc = ulnet_get(S.node.ln, NULL, h, target, PORTAL, MB, 0);
	else
		rc = ulnet_put(S.node.ln, NULL, h, ULNET_ACK_REQ, target, PORTAL, MB, 0, 0);
	if (rc)      /* refused at once: its UNLINK event ends it */
		(void)ulnet_md_unlink(S.node.ln, h);
}

/* Issue into every free slot (mu held; dropped around the calls). */
static void fill_window_locked(void)
{
	for (int k = 0; k < CONC; k++) {
		if (S.slot_busy[k] || !S.issue)
			continue;
		pthread_mutex_unlock(&S.mu);
		issue(k);
		pthread_mutex_lock(&S.mu);
	}
}

/* Keep CONC operations in flight for `ms`; returns how many succeeded. */
static int stream_for(int ms)
{
	uint64_t end = st_now_ms() + (uint64_t)ms;
	int ok0;

	pthread_mutex_lock(&S.mu);
	ok0 = S.ok;
	S.issue = true;
	while (st_now_ms() < end) {
		fill_window_locked();
		st_cond_tick(&S.cv, &S.mu);
	}
	ok0 = S.ok - ok0;
	pthread_mutex_unlock(&S.mu);
	return ok0;
}

/* Keep the window full until `want` more operations succeeded, at most
 * `ms`; returns how long it took (ms), or -1. */
static long stream_until_ok(int want, int ms)
{
	uint64_t t0 = st_now_ms(), end = t0 + (uint64_t)ms;
	long took = -1;
	int ok0;

	pthread_mutex_lock(&S.mu);
	ok0 = S.ok;
	S.issue = true;
	while (st_now_ms() < end) {
		if (S.ok - ok0 >= want) {
			took = (long)(st_now_ms() - t0);
			break;
		}
		fill_window_locked();
		st_cond_tick(&S.cv, &S.mu);
	}
	pthread_mutex_unlock(&S.mu);
	return took;
}

/* Stop issuing and wait, at most `bound_ms`, for every operation to end;
 * returns how long the last one took to end, from now (ms). */
static long drain(int bound_ms)
{
	uint64_t t0 = st_now_ms(), end = t0 + (uint64_t)bound_ms;
	long took;

	pthread_mutex_lock(&S.mu);
	S.issue = false;
	while (S.inflight > 0 && st_now_ms() < end)
		st_cond_tick(&S.cv, &S.mu);
	if (S.inflight > 0)
		fprintf(stderr, "%d operations still in flight after %d ms\n", S.inflight, bound_ms);
	assert_int_equal(S.inflight, 0);
	took = S.last_end_ms > t0 ? (long)(S.last_end_ms - t0) : 0;
	pthread_mutex_unlock(&S.mu);
	return took;
}

/* Every operation issued ended exactly once, with at most one SEND and
 * one response (ACK or REPLY) or UNLINK; the node holds nothing: no
 * message, no tracker, no MD, every NI's and peer NI's credits back
 * (tests/support/failmodel.h). */
static void assert_all_ended_once_and_idle(void)
{
	pthread_mutex_lock(&S.mu);
	assert_false(S.twice);
	assert_int_equal(S.ended, S.issued);
	for (int i = 0; i < S.issued; i++) {
		const struct op *o = &S.ops[i];

		assert_int_equal(o->unlinked, 1);
		assert_true(o->sends <= 1);
		assert_true(o->responses + o->unlinks <= 1);
		assert_int_equal(o->events, o->sends + o->responses + o->unlinks);
	}
	pthread_mutex_unlock(&S.mu);
	fm_assert_idle(S.node.ln, S.mds0);
}

static void tweak(struct ulnet_ni_conf *c)
{
	c->sock.sock_timeout = SOCK_TIMEOUT_S;
	/* reconnect quickly once the peer is back: the test's bounds stay
	 * short (the defaults, 1 s doubling to 60 s, behave alike, slower) */
	c->sock.min_reconnectms = 200;
	c->sock.max_reconnectms = 1000;
}

static int setup(void **state)
{
	struct ulnet_globals g;

	(void)state;
	memset(&S.mu, 0, sizeof(S.mu));
	pthread_mutex_init(&S.mu, NULL);
	pthread_cond_init(&S.cv, NULL);
	S.ops = calloc(MAXOPS, sizeof(*S.ops));
	S.issued = S.ended = S.ok = S.failed = S.inflight = 0;
	S.twice = false;
	memset(S.slot_busy, 0, sizeof(S.slot_busy));
	port = st_port();
	if (st_node_start_conf(&S.node, CLIENT_NID, port, "all", NULL, NULL, 0, tweak))
		return -1;
	ulnet_globals_get(S.node.ln, &g);
	g.transaction_timeout = TX_TIMEOUT_S;
	S.mds0 = fm_md_count(S.node.ln);
	return ulnet_globals_set(S.node.ln, &g);
}

static int teardown(void **state)
{
	(void)state;
	if (server_pid > 0)
		server_kill(server_pid);
	st_node_stop(&S.node);
	free(S.ops);
	S.ops = NULL;
	pthread_mutex_destroy(&S.mu);
	pthread_cond_destroy(&S.cv);
	return 0;
}

static void report(const char *what, long ms)
{
	fprintf(stderr, "%s: %d operations, %d ok, %d failed; the last ended %ld ms after the event\n",
		what, S.issued, S.ok, S.failed, ms);
}

/* A server, a stream to it for 500 ms, then kill -9 of the server while
 * the stream goes on; the stream keeps going for `after_ms`. */
static void kill_mid_stream(int after_ms)
{
	pid_t pid = server_start();

	assert_true(stream_for(500) > 0);
	server_kill(pid);
	stream_for(after_ms);
}

/* kill -9 of the peer in the middle of a stream. */
static void test_peer_killed(void **state)
{
	long took;

	(void)state;
	kill_mid_stream(100);
	took = drain(END_BOUND_MS);
	report("kill -9", took);
	assert_true(S.failed >= 1);
	assert_all_ended_once_and_idle();
}

/* SIGSTOP for longer than sock_timeout and transaction_timeout: every
 * operation ends meanwhile; after SIGCONT new traffic flows again. */
static void test_peer_stopped_then_continued(void **state)
{
	pid_t pid;
	long took;
	uint64_t t0;

	(void)state;
	pid = server_start();
	assert_true(stream_for(500) > 0);
	t0 = st_now_ms();
	server_stop(pid);
	/* the stream runs into the stopped peer a little longer */
	stream_for(300);
	took = drain(END_BOUND_MS);
	report("SIGSTOP", took);
	assert_true(S.failed >= 1);
	assert_all_ended_once_and_idle();
	/* stopped for longer than both timeouts */
	while (st_now_ms() < t0 + (uint64_t)(SOCK_TIMEOUT_S + TX_TIMEOUT_S + 1) * 1000)
		usleep(50000);
	kill(pid, SIGCONT);
	took = stream_until_ok(50, 30000);
	fprintf(stderr, "SIGCONT: 50 operations succeeded again after %ld ms\n", took);
	assert_true(took >= 0);
	drain(END_BOUND_MS);
	assert_all_ended_once_and_idle();
	fm_assert_put_get_ok(S.node.ln, server_nid(), PORTAL, MB, ST_WAIT_MS);
	assert_all_ended_once_and_idle();
	server_kill(pid);
}

/* kill -9 and a restart on the same NID while the stream keeps going: the
 * operations meanwhile fail and end, then the stream succeeds again with
 * no restart of this node. */
static void test_peer_restarted_during_stream(void **state)
{
	pid_t pid;
	long took;

	(void)state;
	/* the stream goes on against the dead peer for a second */
	kill_mid_stream(1000);
	pid = server_start();
	took = stream_until_ok(50, 30000);
	fprintf(stderr, "restart: 50 operations succeeded again after %ld ms\n", took);
	assert_true(took >= 0);
	took = drain(END_BOUND_MS);
	report("kill + restart", took);
	assert_true(S.failed >= 1);
	assert_all_ended_once_and_idle();
	fm_assert_put_get_ok(S.node.ln, server_nid(), PORTAL, MB, ST_WAIT_MS);
	assert_all_ended_once_and_idle();
	server_kill(pid);
}

/* A peer whose TCP listener never accepts (the kernel completes the
 * handshake into the backlog; nothing reads it): the operations wait for a
 * connection that never comes up and end after the LND's handshake
 * timeout and the response tracker. */
static void test_peer_never_accepts(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	long took;

	(void)state;
	assert_true(fd >= 0);
	inet_pton(AF_INET, SERVER_IP, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	pthread_mutex_lock(&S.mu);
	S.issue = true;
	fill_window_locked();
	S.issue = false;
	pthread_mutex_unlock(&S.mu);
	took = drain(END_BOUND_MS);
	report("never accepts", took);
	assert_int_equal(S.issued, CONC);
	assert_int_equal(S.failed, CONC);
	assert_true(st_log_has(&S.node, "handshake timed out", NULL));
	assert_all_ended_once_and_idle();
	close(fd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_peer_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_stopped_then_continued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_restarted_during_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_never_accepts, setup, teardown),
	};

	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(argv[2], (uint16_t)atoi(argv[3]));
	self_exe = realpath("/proc/self/exe", NULL);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
