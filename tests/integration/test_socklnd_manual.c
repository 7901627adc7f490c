/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_manual.c - implicit coalescing with ULNET_OPT_MANUAL_PROGRESS.
 *
 * Node a has no progress thread (the test calls ulnet_progress()), node b
 * has one. After a pause, a lone PUT from a is written at once by ulnet_put()
 * itself (it reaches b while a makes no progress at all); the PUTs that
 * follow it closely (more than the 8 peer credits) are deferred to a's next
 * ulnet_progress(), which writes them together; every one arrives, in
 * order, and completes exactly once.
 *
 * a's clock runs 10000x slower than real time, so "closely" (within
 * KSOCK_COALESCE_NS, 5 us, of the last write: 50 ms real) holds even on a
 * slow (sanitized, loaded) machine, and a 100 ms pause is past it.
 *
 * Last, 1 MiB PUTs that pile up on one conn all leave while a makes
 * progress (a write that took its whole 1 MiB gather goes on with the rest).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "socklnd_util.h"

#define PORTAL 13
#define MB 0x77
#define BURST 40
#define PAUSE_US 100000   /* > KSOCK_COALESCE_NS on a's clock */

static uint64_t slow_clock(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) / 10000;
}

/* b's target: the hdr_data of every PUT, in arrival order */
static pthread_mutex_t rx_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rx_seq[BURST + 8];
static int rx_n, rx_err;

static void rx_handler(const struct ulnet_event *ev)
{
	if (ev->type != ULNET_EVENT_PUT)
		return;
	pthread_mutex_lock(&rx_mu);
	if (ev->status || ev->mlength != 64)
		rx_err++;
	if (rx_n < (int)(sizeof(rx_seq) / sizeof(rx_seq[0])))
		rx_seq[rx_n] = ev->hdr_data;
	rx_n++;
	pthread_mutex_unlock(&rx_mu);
}

static int rx_count(void)
{
	int n;

	pthread_mutex_lock(&rx_mu);
	n = rx_n;
	pthread_mutex_unlock(&rx_mu);
	return n;
}

/* a's source MD: SEND events, counted on whatever thread runs them */
static int tx_sends, tx_errs;

static void tx_handler(const struct ulnet_event *ev)
{
	if (ev->type != ULNET_EVENT_SEND)
		return;
	__atomic_fetch_add(&tx_sends, 1, __ATOMIC_RELAXED);
	if (ev->status)
		__atomic_fetch_add(&tx_errs, 1, __ATOMIC_RELAXED);
}

static int sends(void)
{
	return __atomic_load_n(&tx_sends, __ATOMIC_RELAXED);
}

static int start_manual(struct st_node *n, const char *nid, uint16_t port)
{
	return st_node_start_opts(n, nid, port, "all", slow_clock, NULL,
				  ULNET_OPT_MANUAL_PROGRESS);
}

/* Drive a's loop until `pred` holds or 15 s pass. */
static bool progress_until(struct st_node *a, int (*count)(void), int want)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;

	while (count() < want) {
		if (st_now_ms() > end)
			return false;
		ulnet_progress(a->ln, 1);
	}
	return true;
}

/* Wait for b (it has its own thread) without driving a. */
static bool wait_rx(int want)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;

	while (rx_count() < want) {
		if (st_now_ms() > end)
			return false;
		usleep(1000);
	}
	return true;
}

/* a (manual progress) and b (own thread) on `port`; b's MD counts PUTs
 * (rx_handler), a's 64-byte MD counts SENDs (tx_handler). The first PUT
 * (hdr_data 0) connects; returns once b has it. */
static void pair_start(struct st_node *a, struct st_node *b, uint16_t port, ulnet_handle_t *amd,
		       ulnet_process_id_t *target)
{
	static uint8_t src[64], dst[64];
	struct ulnet_md md = { 0 };
	ulnet_handle_t me, bmd;

	pthread_mutex_lock(&rx_mu);
	rx_n = rx_err = 0;
	pthread_mutex_unlock(&rx_mu);
	tx_sends = tx_errs = 0;
	assert_int_equal(start_manual(a, "127.0.0.2@tcp", port), 0);
	assert_int_equal(st_node_start(b, "127.0.0.3@tcp", port, "all"), 0);
	assert_int_equal(ulnet_me_attach(b->ln, PORTAL, st_any_id(), MB, 0, ULNET_RETAIN,
					 ULNET_INS_AFTER, &me), 0);
	md.start = dst;
	md.length = sizeof(dst);
	md.threshold = ULNET_MD_THRESH_INF;
	md.options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE;
	md.handler = rx_handler;
	assert_int_equal(ulnet_md_attach(b->ln, me, &md, ULNET_RETAIN, &bmd), 0);
	memset(&md, 0, sizeof(md));
	memset(src, 0x5a, sizeof(src));
	md.start = src;
	md.length = sizeof(src);
	md.threshold = ULNET_MD_THRESH_INF;
	md.handler = tx_handler;
	assert_int_equal(ulnet_md_bind(a->ln, &md, ULNET_RETAIN, amd), 0);
	target->nid = b->nid;
	target->pid = ulnet_pid(b->ln);

	/* connect: the first PUT waits for the handshake, a's loop drives it */
	assert_int_equal(ulnet_put(a->ln, NULL, *amd, ULNET_NOACK_REQ, *target, PORTAL, MB, 0, 0),
			 0);
	assert_true(progress_until(a, sends, 1));
	assert_true(wait_rx(1));
}

static void test_manual_coalescing(void **state)
{
	struct st_node a, b;
	ulnet_handle_t amd;
	ulnet_process_id_t target;
	int i, n;

	(void)state;
	pair_start(&a, &b, st_port(), &amd, &target);

	/* a lone PUT after a pause: written by ulnet_put() itself */
	usleep(PAUSE_US);
	assert_int_equal(ulnet_put(a.ln, NULL, amd, ULNET_NOACK_REQ, target, PORTAL, MB, 0, 1), 0);
	assert_int_equal(sends(), 2);
	assert_true(wait_rx(2));

	/* a burst within the coalescing window of that write (or of its own
	 * first PUT, if the wait for b was long on a's clock): not every PUT is
	 * written by ulnet_put(); what is deferred does not leave until a's
	 * next ulnet_progress() */
	for (i = 2; i < BURST; i++)
		assert_int_equal(ulnet_put(a.ln, NULL, amd, ULNET_NOACK_REQ, target, PORTAL, MB, 0,
					   (uint64_t)i), 0);
	n = sends();
	assert_true(n >= 2 && n < BURST);
	assert_true(wait_rx(n));
	usleep(PAUSE_US);
	assert_int_equal(rx_count(), n);

	/* one progress call writes them (credit rounds included) */
	ulnet_progress(a.ln, 0);
	assert_int_equal(sends(), BURST);
	assert_true(wait_rx(BURST));
	usleep(PAUSE_US);   /* nothing more arrives: each exactly once */
	assert_int_equal(rx_count(), BURST);
	assert_int_equal(sends(), BURST);
	assert_int_equal(tx_errs, 0);
	assert_int_equal(rx_err, 0);
	for (i = 0; i < BURST; i++)
		assert_int_equal(rx_seq[i], (uint64_t)i);

	/* idle again: a lone PUT still leaves at once */
	usleep(PAUSE_US);
	assert_int_equal(ulnet_put(a.ln, NULL, amd, ULNET_NOACK_REQ, target, PORTAL, MB, 0, BURST),
			 0);
	assert_int_equal(sends(), BURST + 1);
	assert_true(wait_rx(BURST + 1));

	ulnet_md_unlink(a.ln, amd);
	st_node_stop(&a);
	st_node_stop(&b);
}

/* A burst that fits the peer credits, then ulnet_destroy() without any
 * ulnet_progress(): what the coalescing deferred is written before the NI
 * closes, so every PUT completes without error and arrives (as it did
 * when each was written by its ulnet_put()). */
static void test_manual_destroy_writes_deferred(void **state)
{
	struct st_node a, b;
	ulnet_handle_t amd;
	ulnet_process_id_t target;
	int i;

	(void)state;
	pair_start(&a, &b, (uint16_t)(st_port() + 1), &amd, &target);
	usleep(PAUSE_US);
	/* 1 + 7: the peer credits (8) hold them all in the LND */
	for (i = 1; i <= 8; i++)
		assert_int_equal(ulnet_put(a.ln, NULL, amd, ULNET_NOACK_REQ, target, PORTAL, MB, 0,
					   (uint64_t)i), 0);
	assert_true(sends() < 9);    /* some wait in the LND */
	st_node_stop(&a);
	assert_int_equal(sends(), 9);
	assert_int_equal(tx_errs, 0);
	assert_true(wait_rx(9));
	for (i = 0; i <= 8; i++)
		assert_int_equal(rx_seq[i], (uint64_t)i);
	assert_int_equal(rx_err, 0);
	st_node_stop(&b);
}

/* Several 1 MiB PUTs queued on one conn: one sendmsg() gathers at most
 * 1 MiB of the queue (KSOCK_TX_GATHER_MAX). When the socket takes all of
 * it, the write must go on with the rest at once: the socket was never
 * full, so no EPOLLOUT edge will come, and nothing arrives on that conn to
 * bring one (NOACK PUTs, no ZC-ACKs requested). The rest used to wait until
 * the reaper closed the conn (sock_timeout, never on a's slow clock). */
#define BIG_LEN (1u << 20)
#define BIG_BURST 8        /* the peer credits: all in the LND at once */
#define BIG_MB 0x78

static void no_zc(struct ulnet_ni_conf *c)
{
	c->sock.zc_min_payload = -1;   /* a PUT completes once written */
}

static int md_count(struct st_md *m, enum ulnet_event_kind kind)
{
	int n;

	pthread_mutex_lock(&m->mu);
	n = m->n[kind];
	pthread_mutex_unlock(&m->mu);
	return n;
}

/* Drive a's loop until `m` saw `want` SEND events or 15 s pass. */
static bool progress_sends(struct st_node *a, struct st_md *m, int want)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;

	while (md_count(m, ULNET_EVENT_SEND) < want) {
		if (st_now_ms() > end)
			return false;
		ulnet_progress(a->ln, 1);
	}
	return true;
}

static void test_manual_big_queue_drains(void **state)
{
	static uint8_t src[BIG_LEN], dst[BIG_LEN];
	uint16_t port = (uint16_t)(st_port() + 2);
	struct st_node a, b;
	struct st_md sm, dm;
	ulnet_process_id_t target;
	uint64_t end;
	int i;

	(void)state;
	st_md_init(&sm);
	st_md_init(&dm);
	st_fill(src, sizeof(src), 7);
	assert_int_equal(st_node_start_conf(&a, "127.0.0.2@tcp", port, "all", slow_clock, NULL,
					    ULNET_OPT_MANUAL_PROGRESS, no_zc), 0);
	assert_int_equal(st_node_start(&b, "127.0.0.3@tcp", port, "all"), 0);
	assert_int_equal(st_target(&b, PORTAL, BIG_MB, dst, sizeof(dst), &dm), 0);
	assert_int_equal(st_bind(&a, src, sizeof(src), ULNET_MD_THRESH_INF, &sm), 0);
	target.nid = b.nid;
	target.pid = ulnet_pid(b.ln);

	/* connect; then let the other conns (BULK_IN, BULK_OUT) come up */
	assert_int_equal(ulnet_put(a.ln, NULL, sm.h, ULNET_NOACK_REQ, target, PORTAL, BIG_MB, 0, 0),
			 0);
	assert_true(progress_sends(&a, &sm, 1));
	end = st_now_ms() + 200;
	while (st_now_ms() < end)
		ulnet_progress(a.ln, 1);

	/* back to back: they pile up on one conn (deferred, or behind a
	 * short write); every one leaves while a makes progress */
	for (i = 1; i <= BIG_BURST; i++)
		assert_int_equal(ulnet_put(a.ln, NULL, sm.h, ULNET_NOACK_REQ, target, PORTAL,
					   BIG_MB, 0, (uint64_t)i), 0);
	assert_true(progress_sends(&a, &sm, BIG_BURST + 1));
	assert_true(st_md_wait(&dm, ULNET_EVENT_PUT, BIG_BURST + 1));
	assert_int_equal(sm.nerr, 0);
	assert_int_equal(dm.nerr, 0);
	assert_int_equal(dm.last_mlength, BIG_LEN);
	assert_true(st_check(dst, sizeof(dst), 7));

	st_md_release(&a, &sm);
	st_node_stop(&a);
	st_md_release(&b, &dm);
	st_node_stop(&b);
	st_md_fini(&sm);
	st_md_fini(&dm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manual_coalescing),
		cmocka_unit_test(test_manual_destroy_writes_deferred),
		cmocka_unit_test(test_manual_big_queue_drains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
