/* SPDX-License-Identifier: MIT */
/*
 * test_api_misuse.c - every misuse returns its documented error and nothing
 * crashes: NULL arguments, bad and stale handles, double unlink, exhausted
 * MDs, portal out of range, too many fragments, unique/wildcard conflicts,
 * oversized PUTs, MDs too small without TRUNCATE (dropped and counted), bad
 * LND registrations and an LND that finalizes twice (the core aborts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/lnd.h"
#include "ulnet/ulnet.h"

static void quiet_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	(void)msg;
}

static ulnet_t *mk(void)
{
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS, .log = quiet_log };
	ulnet_t *ln;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	return ln;
}

static const ulnet_process_id_t any = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						 .addr = { 0xff, 0xff, 0xff, 0xff } },
					.pid = ULNET_PID_ANY };
static const ulnet_process_id_t self = { .nid = { .type = ULNET_LND_LO }, .pid = 12345 };

static void test_create_args(void **state)
{
	(void)state;
	struct ulnet_opts o = { .pid = ULNET_PID_ANY, .flags = ULNET_OPT_MANUAL_PROGRESS };
	ulnet_t *ln = (ulnet_t *)1;

	assert_int_equal(ulnet_create(NULL, NULL), -EINVAL);
	assert_int_equal(ulnet_create(&o, &ln), -EINVAL);
	assert_null(ln);
	o.pid = ULNET_PID_USERFLAG | 5;  /* reserved bits */
	assert_int_equal(ulnet_create(&o, &ln), -EINVAL);
	o.pid = 77;
	assert_int_equal(ulnet_create(&o, &ln), 0);
	assert_int_equal(ulnet_pid(ln), 77);
	ulnet_destroy(ln);
	ulnet_destroy(NULL);
	/* default options: a progress thread, so manual progress is refused */
	assert_int_equal(ulnet_create(NULL, &ln), 0);
	assert_int_equal(ulnet_pid(ln), ULNET_PID_LUSTRE);
	assert_int_equal(ulnet_progress(ln, 0), -EBUSY);
	ulnet_destroy(ln);
	assert_int_equal(ulnet_progress(NULL, 0), -EINVAL);
}

static void test_null_args(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	ulnet_handle_t h = ULNET_HANDLE_NONE;
	struct ulnet_md md = { .start = NULL, .length = 0, .threshold = 1, .options = ULNET_MD_OP_PUT };
	struct ulnet_ni_info ni;
	struct ulnet_peer_info pi;

	assert_int_equal(ulnet_me_attach(NULL, 1, any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &h), -EINVAL);
	assert_int_equal(ulnet_me_attach(ln, 1, any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, NULL), -EINVAL);
	assert_int_equal(ulnet_md_attach(ln, h, NULL, ULNET_UNLINK, &h), -EINVAL);
	assert_int_equal(ulnet_md_attach(ln, h, &md, ULNET_UNLINK, NULL), -EINVAL);
	assert_int_equal(ulnet_md_bind(ln, NULL, ULNET_UNLINK, &h), -EINVAL);
	assert_int_equal(ulnet_md_bind(NULL, &md, ULNET_UNLINK, &h), -EINVAL);
	assert_int_equal(ulnet_md_unlink(NULL, h), -EINVAL);
	assert_int_equal(ulnet_me_unlink(NULL, h), -EINVAL);
	assert_int_equal(ulnet_put(NULL, NULL, h, ULNET_ACK_REQ, self, 1, 0, 0, 0), -EINVAL);
	assert_int_equal(ulnet_get(NULL, NULL, h, self, 1, 0, 0), -EINVAL);
	assert_int_equal(ulnet_ni_add(ln, NULL), -EINVAL);
	assert_int_equal(ulnet_ni_del(ln, NULL), -EINVAL);
	assert_int_equal(ulnet_ni_list(ln, NULL, 4), -EINVAL);
	assert_int_equal(ulnet_ni_list(ln, NULL, 0), 1);   /* just the count */
	assert_int_equal(ulnet_ni_info(ln, 0, NULL), -EINVAL);
	assert_int_equal(ulnet_ni_info(ln, -1, &ni), -EINVAL);
	assert_int_equal(ulnet_ni_info(ln, 1, &ni), -ENOENT);
	assert_int_equal(ulnet_conn_list(NULL, NULL, 0), -EINVAL);
	assert_int_equal(ulnet_conn_list(ln, NULL, 4), -EINVAL);
	assert_int_equal(ulnet_conn_list(ln, NULL, -1), -EINVAL);
	assert_int_equal(ulnet_conn_list(ln, NULL, 0), 0);   /* 0@lo: none */
	assert_int_equal(ulnet_peer_info(ln, 0, &pi), -ENOENT);
	assert_int_equal(ulnet_peer_info(ln, 0, NULL), -EINVAL);
	assert_int_equal(ulnet_peer_add(ln, NULL, NULL, 0, false), -EINVAL);
	assert_int_equal(ulnet_peer_del(ln, NULL, NULL, 0), -EINVAL);
	assert_int_equal(ulnet_globals_set(ln, NULL), -EINVAL);
	assert_int_equal(ulnet_portal_set_lazy(NULL, 1, true), -EINVAL);
	assert_int_equal(ulnet_lnd_register(ln, NULL), -EINVAL);
	assert_non_null(ulnet_strerror(-ENOENT));
	assert_string_equal(ulnet_strerror(-ENOENT), "No such file or directory");
	ulnet_destroy(ln);
}

static void test_bad_and_stale_handles(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[8];
	struct ulnet_md md = { .start = buf, .length = 8, .threshold = 1, .options = ULNET_MD_OP_PUT };
	struct ulnet_md bmd = { .start = buf, .length = 8, .threshold = 1 };
	ulnet_handle_t meh, mdh, bmdh, bogus = { 0x123456789abcdefULL };

	assert_int_equal(ulnet_md_unlink(ln, ULNET_HANDLE_NONE), -ENOENT);
	assert_int_equal(ulnet_me_unlink(ln, ULNET_HANDLE_NONE), -ENOENT);
	assert_int_equal(ulnet_md_unlink(ln, bogus), -ENOENT);
	assert_int_equal(ulnet_me_unlink(ln, bogus), -ENOENT);
	assert_int_equal(ulnet_md_attach(ln, bogus, &md, ULNET_UNLINK, &mdh), -ENOENT);
	assert_int_equal(ulnet_put(ln, NULL, bogus, ULNET_NOACK_REQ, self, 1, 0, 0, 0), -ENOENT);
	assert_int_equal(ulnet_get(ln, NULL, bogus, self, 1, 0, 0), -ENOENT);

	assert_int_equal(ulnet_me_attach(ln, 1, any, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
	/* a handle of the wrong kind is not found */
	assert_int_equal(ulnet_md_unlink(ln, meh), -ENOENT);
	assert_int_equal(ulnet_me_unlink(ln, mdh), -ENOENT);
	/* an ME already has an MD */
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &bmdh), -EBUSY);
	/* an attached MD cannot initiate */
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, self, 1, 0, 0, 0), -EINVAL);

	/* double unlink, and a stale handle whose slot got reused */
	assert_int_equal(ulnet_md_unlink(ln, mdh), 0);
	assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	assert_int_equal(ulnet_md_bind(ln, &bmd, ULNET_UNLINK, &bmdh), 0);
	assert_int_not_equal(bmdh.cookie, mdh.cookie);
	assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	assert_int_equal(ulnet_me_unlink(ln, meh), 0);
	assert_int_equal(ulnet_me_unlink(ln, meh), -ENOENT);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), -ENOENT);
	assert_int_equal(ulnet_md_unlink(ln, bmdh), 0);
	/* thousands of stale cookies are all refused */
	for (int i = 0; i < 2000; i++) {
		ulnet_handle_t h;

		assert_int_equal(ulnet_md_bind(ln, &bmd, ULNET_UNLINK, &h), 0);
		assert_int_equal(ulnet_md_unlink(ln, h), 0);
		assert_int_equal(ulnet_md_unlink(ln, h), -ENOENT);
		assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	}
	ulnet_destroy(ln);
}

static void test_md_options(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	static uint8_t buf[16];
	static struct iovec iov[257];
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = buf, .length = 16, .threshold = 1 };
	int i;

	assert_int_equal(ulnet_me_attach(ln, 1, any, 0, 0, ULNET_RETAIN, ULNET_INS_AFTER, &meh), 0);
	/* attach needs OP_PUT or OP_GET; bind refuses them (as the kernel) */
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.options = ULNET_MD_OP_PUT;
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), -EINVAL);
	/* NULL start with a length */
	md.start = NULL;
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.start = buf;
	/* threshold below -1 */
	md.threshold = -2;
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.threshold = 1;
	/* max_size beyond the length */
	md.options |= ULNET_MD_MAX_SIZE;
	md.max_size = 17;
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.options &= ~(unsigned)ULNET_MD_MAX_SIZE;
	/* bad unlink value */
	assert_int_equal(ulnet_md_attach(ln, meh, &md, (enum ulnet_unlink)7, &mdh), -EINVAL);
	/* more than 256 fragments */
	for (i = 0; i < 257; i++) {
		iov[i].iov_base = buf;
		iov[i].iov_len = 1;
	}
	md.start = iov;
	md.length = 257;
	md.options = ULNET_MD_OP_PUT | ULNET_MD_IOVEC;
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.options = ULNET_MD_IOVEC;
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.length = 256;
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_md_unlink(ln, mdh), 0);
	/* a fragment with a NULL base and a length */
	iov[3].iov_base = NULL;
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), -EINVAL);
	/* the ME is still usable after all that */
	md.start = buf;
	md.length = 16;
	md.options = ULNET_MD_OP_PUT;
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
	ulnet_destroy(ln);
}

static void test_too_big(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t *big = calloc(1, ULNET_MTU + 1);
	struct ulnet_md md = { .start = big, .length = ULNET_MTU + 1, .threshold = 1 };
	ulnet_handle_t mdh;

	/* more than 1 MiB cannot be sent: the bound MD is refused */
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), -EINVAL);
	md.length = ULNET_MTU;
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_md_unlink(ln, mdh), 0);
	free(big);
	ulnet_destroy(ln);
}

static void test_portal_range_and_args(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t buf[8];
	struct ulnet_md md = { .start = buf, .length = 8, .threshold = 1 };
	ulnet_handle_t meh, mdh;
	ulnet_process_id_t nowhere = any;

	assert_int_equal(ulnet_me_attach(ln, ULNET_MAX_PORTALS, any, 0, 0, ULNET_UNLINK,
					 ULNET_INS_AFTER, &meh), -EINVAL);
	assert_int_equal(ulnet_me_attach(ln, 1, any, 0, 0, ULNET_UNLINK, (enum ulnet_ins_pos)9, &meh),
			 -EINVAL);
	assert_int_equal(ulnet_me_attach(ln, 1, any, 0, 0, (enum ulnet_unlink)3, ULNET_INS_AFTER, &meh),
			 -EINVAL);
	assert_int_equal(ulnet_portal_set_lazy(ln, ULNET_MAX_PORTALS, true), -EINVAL);
	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_RETAIN, &mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, self, ULNET_MAX_PORTALS, 0, 0, 0),
			 -EINVAL);
	assert_int_equal(ulnet_get(ln, NULL, mdh, self, 100, 0, 0), -EINVAL);
	assert_int_equal(ulnet_put(ln, NULL, mdh, (enum ulnet_ack_req)5, self, 1, 0, 0, 0), -EINVAL);
	/* the ANY NID is not a target */
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, nowhere, 1, 0, 0, 0), -EINVAL);
	/* exhausted (RETAIN, threshold used up): inactive */
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, self, 1, 0, 0, 0), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, self, 1, 0, 0, 0), -EINVAL);
	assert_int_equal(ulnet_get(ln, NULL, mdh, self, 1, 0, 0), -EINVAL);
	assert_int_equal(ulnet_md_unlink(ln, mdh), 0);
	ulnet_destroy(ln);
}

static void test_unique_wildcard_conflict(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	ulnet_handle_t meh;
	ulnet_process_id_t exact = self;
	ulnet_process_id_t half = { .nid = ULNET_NID_LO0, .pid = ULNET_PID_ANY };

	assert_int_equal(ulnet_me_attach(ln, 2, half, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_me_attach(ln, 2, exact, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh),
			 -EPERM);
	assert_int_equal(ulnet_me_attach(ln, 3, exact, 1, 0, ULNET_UNLINK, ULNET_INS_BEFORE, &meh), 0);
	assert_int_equal(ulnet_me_attach(ln, 3, half, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), -EPERM);
	ulnet_destroy(ln);
}

static void test_md_too_small_dropped_and_counted(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	uint8_t small[4], src[8] = { 0 };
	struct ulnet_md md = { .start = small, .length = 4, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT };
	struct ulnet_md smd = { .start = src, .length = 8, .threshold = 1 };
	ulnet_handle_t meh, mdh, smdh;
	struct ulnet_counters c;
	struct ulnet_ni_info ni;

	assert_int_equal(ulnet_me_attach(ln, 4, any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_md_bind(ln, &smd, ULNET_UNLINK, &smdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, smdh, ULNET_NOACK_REQ, self, 4, 0, 0, 0), 0);
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 1);
	assert_int_equal(c.drop_length, 8);
	assert_int_equal(ulnet_ni_info(ln, 0, &ni), 0);
	assert_int_equal(ni.dropped.n[ULNET_MSG_PUT], 1);
	assert_int_equal(ni.dropped_bytes.n[ULNET_MSG_PUT], 8);
	assert_int_equal(ni.drop_count, 1);
	ulnet_counters_reset(ln);
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 0);
	ulnet_destroy(ln);
}

static void test_ni_misuse(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	struct ulnet_ni_conf conf;
	ulnet_nid_t nid;

	memset(&conf, 0, sizeof(conf));
	conf.nid = ULNET_NID_LO0;
	assert_int_equal(ulnet_ni_add(ln, &conf), -EINVAL);
	conf.nid = ULNET_NID_ANY;
	assert_int_equal(ulnet_ni_add(ln, &conf), -EINVAL);
	/* no LND for gni (o2ib has one when built with ULNET_O2IB) */
	ulnet_nid_from_ipv4(1, ulnet_mknet(ULNET_LND_GNI, 0), &conf.nid);
	assert_int_equal(ulnet_ni_add(ln, &conf), -EPROTONOSUPPORT);
	assert_int_equal(ulnet_ni_del(ln, &ULNET_NID_LO0), -EINVAL);
	ulnet_nid_from_ipv4(0x0a000001, ulnet_mknet(ULNET_LND_TCP, 0), &nid);
	assert_int_equal(ulnet_ni_del(ln, &nid), -ENOENT);
	ulnet_destroy(ln);
}

static int nop_startup(struct lnet_ni *ni) { (void)ni; return 0; }
static void nop_shutdown(struct lnet_ni *ni) { (void)ni; }
static void nop_recv(struct lnet_ni *ni, void *p, struct lnet_msg *msg, bool delayed, const struct iovec *iov,
		     unsigned niov, size_t off, size_t mlen, size_t rlen)
{
	(void)ni; (void)p; (void)iov; (void)niov; (void)off; (void)mlen; (void)rlen;
	lnet_finalize(msg, 0);
}
/* A broken LND: completes every send twice. */
static void twice_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	(void)ni;
	lnet_finalize(msg, 0);
	lnet_finalize(msg, 0);
}

static const struct ulnet_lnd bad_lnd = { .type = ULNET_LND_PTLF, .name = "bad",
					  .startup = nop_startup, .shutdown = nop_shutdown,
					  .send = twice_send, .recv = nop_recv };

static void test_lnd_registration(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	struct ulnet_lnd partial = bad_lnd;

	assert_int_equal(ulnet_lnd_register(ln, &lnet_lolnd), -EEXIST);
	partial.recv = NULL;
	assert_int_equal(ulnet_lnd_register(ln, &partial), -EINVAL);
	partial = bad_lnd;
	partial.type = 300;
	assert_int_equal(ulnet_lnd_register(ln, &partial), -EINVAL);
	assert_int_equal(ulnet_lnd_register(ln, &bad_lnd), 0);
	assert_int_equal(ulnet_lnd_register(ln, &bad_lnd), -EEXIST);
	ulnet_destroy(ln);
}

static void test_double_finalize_aborts(void **state)
{
	(void)state;
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		ulnet_t *ln = mk();
		struct ulnet_ni_conf conf;
		uint8_t buf[4];
		struct ulnet_md md = { .start = buf, .length = 4, .threshold = 1 };
		ulnet_handle_t mdh;
		ulnet_process_id_t t = { .pid = 12345 };
		struct ulnet_globals g;

		/* keep the child's abort message out of the test output */
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		ulnet_globals_get(ln, &g);
		g.discovery = 0;
		ulnet_globals_set(ln, &g);
		memset(&conf, 0, sizeof(conf));
		ulnet_nid_from_ipv4(1, ulnet_mknet(ULNET_LND_PTLF, 0), &conf.nid);
		if (ulnet_lnd_register(ln, &bad_lnd) || ulnet_ni_add(ln, &conf))
			_exit(2);
		ulnet_nid_from_ipv4(2, ulnet_mknet(ULNET_LND_PTLF, 0), &t.nid);
		ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh);
		ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, t, 1, 0, 0, 0);
		_exit(0); /* not reached: the second finalize aborts */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

static void test_globals_ranges(void **state)
{
	(void)state;
	ulnet_t *ln = mk();
	struct ulnet_globals g, d, bad;

	ulnet_globals_get(ln, &d);
	assert_int_equal(d.transaction_timeout, 150);
	assert_int_equal(d.retry_count, 2);
	assert_int_equal(d.discovery, 1);
	assert_int_equal(ulnet_lnd_timeout(&d), 49);
#define BAD(field, value)                                                         \
	do {                                                                      \
		bad = d;                                                          \
		bad.field = value;                                                \
		assert_int_equal(ulnet_globals_set(ln, &bad), -EINVAL);           \
		ulnet_globals_get(ln, &g);                                        \
		assert_memory_equal(&g, &d, sizeof(g));                           \
	} while (0)
	BAD(numa_range, -1);
	BAD(max_interfaces, 15);
	BAD(discovery, 2);
	BAD(drop_asym_route, -1);
	BAD(retry_count, -1);
	BAD(retry_count, 150);
	BAD(transaction_timeout, 0);
	BAD(transaction_timeout, 2);
	BAD(health_sensitivity, 1001);
	BAD(recovery_interval, 0);
	BAD(router_sensitivity, 101);
	BAD(response_tracking, 4);
	BAD(recovery_limit, -5);
	BAD(max_recovery_ping_interval, 0);
	/* health off with the retry count as it was: no retries either (the
	 * kernel's sensitivity_set()); a retry count asked for without
	 * health is refused */
	bad = d;
	bad.health_sensitivity = 0;
	assert_int_equal(ulnet_globals_set(ln, &bad), 0);
	ulnet_globals_get(ln, &g);
	assert_int_equal(g.retry_count, 0);
	bad.retry_count = 2;
	assert_int_equal(ulnet_globals_set(ln, &bad), -EINVAL);
	bad.retry_count = 0;
	assert_int_equal(ulnet_globals_set(ln, &bad), 0);
	bad.transaction_timeout = 10;
	bad.retry_count = 0;
	assert_int_equal(ulnet_globals_set(ln, &bad), 0);
	ulnet_globals_get(ln, &g);
	assert_int_equal(ulnet_lnd_timeout(&g), 9);
	ulnet_destroy(ln);
}

/* --- a misbehaving peer: lnet_parse() validation, in the order of §1.7 --------- */

static struct lnet_ni *raw_ni;
static struct lnet_msg *raw_sent;
static int raw_recvs, raw_recv_null;
static size_t raw_rlen, raw_mlen;
static uint8_t raw_payload[64];
static char raw_log[512];

static void raw_capture_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	snprintf(raw_log, sizeof(raw_log), "%s", msg);
}

static int raw_startup(struct lnet_ni *ni)
{
	raw_ni = ni;
	return 0;
}

static void raw_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	(void)ni;
	raw_sent = msg; /* completed by the test */
}

static void raw_recv(struct lnet_ni *ni, void *p, struct lnet_msg *msg, bool delayed, const struct iovec *iov,
		     unsigned niov, size_t off, size_t mlen, size_t rlen)
{
	struct iovec src = { .iov_base = raw_payload, .iov_len = sizeof(raw_payload) };

	(void)ni;
	(void)p;
	raw_recvs++;
	raw_rlen = rlen;
	raw_mlen = mlen;
	if (!msg) {
		raw_recv_null++;
		return;
	}
	lnet_copy_iov(iov, niov, off, &src, 1, 0, mlen);
	lnet_finalize(msg, 0);
}

static const struct ulnet_lnd raw_lnd = { .type = ULNET_LND_PTLF, .name = "raw",
					  .startup = raw_startup, .shutdown = nop_shutdown,
					  .send = raw_send, .recv = raw_recv };

struct rawev {
	int n;
	struct ulnet_event last;
};

static void raw_handler(const struct ulnet_event *ev)
{
	struct rawev *r = ev->md_user_ptr;

	r->n++;
	r->last = *ev;
}

static void test_parse_validation(void **state)
{
	(void)state;
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS, .log = raw_capture_log,
				.log_level = ULNET_LOG_DEBUG };
	ulnet_t *ln;
	struct ulnet_ni_conf conf;
	ulnet_nid_t me, peer, other, far;
	struct lnet_hdr h;
	struct ulnet_globals g;
	struct ulnet_counters c;
	struct rawev ev = { 0 }, tev = { 0 };
	uint8_t sink[32], tbuf[32];

	assert_int_equal(ulnet_create(&o, &ln), 0);
	ulnet_globals_get(ln, &g);
	g.discovery = 0;
	ulnet_globals_set(ln, &g);
	assert_int_equal(ulnet_lnd_register(ln, &raw_lnd), 0);
	memset(&conf, 0, sizeof(conf));
	ulnet_nid_from_ipv4(1, ulnet_mknet(ULNET_LND_PTLF, 0), &me);
	ulnet_nid_from_ipv4(2, ulnet_mknet(ULNET_LND_PTLF, 0), &peer);
	ulnet_nid_from_ipv4(9, ulnet_mknet(ULNET_LND_PTLF, 0), &other);
	ulnet_nid_from_ipv4(0x01020304, ulnet_mknet(ULNET_LND_TCP, 0), &far);
	conf.nid = me;
	assert_int_equal(ulnet_ni_add(ln, &conf), 0);
	assert_non_null(raw_ni);

	/* a GET out through the LND: the header as the core fills it */
	struct ulnet_md gmd = { .start = sink, .length = sizeof(sink), .threshold = 2,
				.user_ptr = &ev, .handler = raw_handler };
	ulnet_handle_t gmdh;
	ulnet_process_id_t tp = { .nid = peer, .pid = 12345 };
	assert_int_equal(ulnet_md_bind(ln, &gmd, ULNET_UNLINK, &gmdh), 0);
	assert_int_equal(ulnet_get(ln, NULL, gmdh, tp, 7, 0x99, 3), 0);
	assert_non_null(raw_sent);
	const struct lnet_hdr *sh = lnet_msg_hdr(raw_sent);
	assert_int_equal(sh->type, ULNET_MSG_GET);
	assert_true(ulnet_nid_same(&sh->dest_nid, &peer));
	assert_true(ulnet_nid_same(&sh->src_nid, &me));
	assert_int_equal(sh->dest_pid, 12345);
	assert_int_equal(sh->src_pid, ULNET_PID_LUSTRE);
	assert_int_equal(sh->payload_length, 0);
	assert_int_equal(sh->msg.get.sink_length, 32);
	assert_int_equal(sh->msg.get.src_offset, 3);
	assert_int_equal(sh->msg.get.ptl_index, 7);
	assert_int_equal(sh->msg.get.match_bits, 0x99);
	assert_int_equal(sh->msg.get.return_wmd.wh_object_cookie, gmdh.cookie);
	lnet_wire_handle_t wmd = sh->msg.get.return_wmd;
	ulnet_process_id_t tgt = lnet_msg_target(raw_sent);
	assert_true(ulnet_nid_same(&tgt.nid, &peer));
	lnet_finalize(raw_sent, 0);
	assert_int_equal(ev.n, 1);

	/* 1. payload rules and types: protocol errors, recv never called */
	raw_recvs = 0;
	memset(&h, 0, sizeof(h));
	h.dest_nid = me;
	h.src_nid = peer;
	h.src_pid = 12345;
	h.type = ULNET_MSG_ACK;
	h.payload_length = 5;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	assert_non_null(strstr(raw_log, "2@ptlf"));
	h.type = ULNET_MSG_GET;
	h.payload_length = 1;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	h.type = ULNET_MSG_PUT;
	h.payload_length = ULNET_MTU + 1;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	h.type = ULNET_MSG_HELLO;
	h.payload_length = 0;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	h.type = 77;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	/* 2. destination: our net but not us, or another of our NIDs */
	h.type = ULNET_MSG_PUT;
	h.payload_length = 4;
	h.dest_nid = other;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	assert_non_null(strstr(raw_log, "sent direct"));
	h.dest_nid = ULNET_NID_LO0;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), -EPROTO);
	assert_non_null(strstr(raw_log, "different network"));
	/* a GET whose REPLY the LND would write (rdma_req) must be for us:
	 * a hop cannot write the final destination's data */
	h.type = ULNET_MSG_GET;
	h.payload_length = 0;
	h.dest_nid = far;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, true), -EPROTO);
	assert_non_null(strstr(raw_log, "bad optimized GET"));
	h.type = ULNET_MSG_PUT;
	h.payload_length = 4;
	assert_int_equal(raw_recvs, 0);
	/* another net: not routed, dropped, the payload still discarded */
	h.dest_nid = far;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), 0);
	assert_int_equal(raw_recv_null, 1);
	assert_int_equal(raw_rlen, 4);
	assert_non_null(strstr(raw_log, "routing"));
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 1);

	/* a REPLY with a handle of another instance: dropped */
	memset(raw_payload, 0xab, sizeof(raw_payload));
	memset(&h, 0, sizeof(h));
	h.dest_nid = me;
	h.src_nid = peer;
	h.src_pid = 12345;
	h.type = ULNET_MSG_REPLY;
	h.payload_length = 10;
	h.msg.reply.dst_wmd = wmd;
	h.msg.reply.dst_wmd.wh_interface_cookie ^= 1;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), 0);
	assert_int_equal(raw_recv_null, 2);
	assert_int_equal(ev.n, 1);
	/* the real one lands, 10 bytes */
	h.msg.reply.dst_wmd = wmd;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), 0);
	assert_int_equal(ev.n, 2);
	assert_int_equal(ev.last.type, ULNET_EVENT_REPLY);
	assert_int_equal(ev.last.mlength, 10);
	assert_true(ev.last.unlinked);
	assert_int_equal(sink[9], 0xab);
	/* and a second one finds no MD */
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), 0);
	assert_int_equal(raw_recv_null, 3);

	/* dest_pid is not checked */
	ulnet_handle_t meh, tmdh;
	struct ulnet_md tmd = { .start = tbuf, .length = sizeof(tbuf), .threshold = 1,
				.options = ULNET_MD_OP_PUT, .user_ptr = &tev, .handler = raw_handler };
	assert_int_equal(ulnet_me_attach(ln, 9, any, 5, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &tmd, ULNET_UNLINK, &tmdh), 0);
	memset(&h, 0, sizeof(h));
	h.dest_nid = me;
	h.dest_pid = 999;
	h.src_nid = peer;
	h.src_pid = 4321;
	h.type = ULNET_MSG_PUT;
	h.payload_length = 8;
	h.msg.put.ptl_index = 9;
	h.msg.put.match_bits = 5;
	h.msg.put.ack_wmd = LNET_WIRE_HANDLE_NONE;
	assert_int_equal(lnet_parse(raw_ni, &h, &peer, NULL, false), 0);
	assert_int_equal(tev.n, 1);
	assert_int_equal(tev.last.target.pid, 999);
	assert_int_equal(tev.last.initiator.pid, 4321);
	assert_int_equal(tev.last.mlength, 8);
	ulnet_destroy(ln);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_args),
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_bad_and_stale_handles),
		cmocka_unit_test(test_md_options),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_portal_range_and_args),
		cmocka_unit_test(test_unique_wildcard_conflict),
		cmocka_unit_test(test_md_too_small_dropped_and_counted),
		cmocka_unit_test(test_ni_misuse),
		cmocka_unit_test(test_lnd_registration),
		cmocka_unit_test(test_double_finalize_aborts),
		cmocka_unit_test(test_globals_ranges),
		cmocka_unit_test(test_parse_validation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
