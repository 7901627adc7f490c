/* SPDX-License-Identifier: MIT */
/*
 * socklnd_util.h - helpers shared by the socklnd integration tests: nodes
 * with a tcp NI on 127.0.0.x, a log capture, MDs whose events are counted,
 * and bounded waits. Header-only (static) so each test stays one program.
 */
#ifndef ULNET_TEST_SOCKLND_UTIL_H
#define ULNET_TEST_SOCKLND_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"
#include "ulnet/ulnet.h"

#define ST_LOG_MAX (256 * 1024)
#define ST_WAIT_MS 15000

struct st_node {
	ulnet_t *ln;
	ulnet_nid_t nid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *log;                 /* every line, '\n'-separated (bounded) */
	size_t loglen;
	bool echo;
};

static inline uint64_t st_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void st_log_cb(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	struct st_node *n = arg;
	size_t l = strlen(msg);

	(void)lvl;
	pthread_mutex_lock(&n->mu);
	if (n->echo || getenv("ST_VERBOSE"))
		fprintf(stderr, "[%d] %s\n", lvl, msg);
	if (n->loglen + l + 2 < ST_LOG_MAX) {
		memcpy(n->log + n->loglen, msg, l);
		n->loglen += l;
		n->log[n->loglen++] = '\n';
		n->log[n->loglen] = 0;
	} else {
		/* keep the tail: tests look for recent lines */
		n->loglen = 0;
		n->log[0] = 0;
	}
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
}

/* Accept port shared by the nodes of one test run: high, from the pid. */
static inline uint16_t st_port(void)
{
	return (uint16_t)(20000 + (getpid() * 7) % 30000);
}

/* Whether we may bind ports below 1024: socklnd's own test */
static inline bool st_is_privileged(void)
{
	return ksock_can_bind_privileged();
}

/* A clock the test can push forward: CLOCK_MONOTONIC + *(uint64_t *)arg. */
static inline uint64_t st_skewed_clock(void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec +
	       __atomic_load_n((uint64_t *)arg, __ATOMIC_ACQUIRE);
}

static inline int st_node_start_conf(struct st_node *n, const char *nid, uint16_t port,
				     const char *accept, ulnet_clock_fn clock, void *clock_arg,
				     unsigned flags, void (*tweak)(struct ulnet_ni_conf *));

static inline int st_node_start_opts(struct st_node *n, const char *nid, uint16_t port,
				     const char *accept, ulnet_clock_fn clock, void *clock_arg,
				     unsigned flags)
{
	return st_node_start_conf(n, nid, port, accept, clock, clock_arg, flags, NULL);
}

static inline int st_node_start(struct st_node *n, const char *nid, uint16_t port, const char *accept)
{
	return st_node_start_opts(n, nid, port, accept, NULL, NULL, 0);
}

static inline int st_node_start_clock(struct st_node *n, const char *nid, uint16_t port,
				      const char *accept, uint64_t *skew)
{
	return st_node_start_opts(n, nid, port, accept, skew ? st_skewed_clock : NULL, skew, 0);
}

/* A node with its own clock (NULL: real time) and ulnet_opts flags;
 * `tweak` (may be NULL) adjusts the NI's conf (tunables) before it is added. */
static inline int st_node_start_conf(struct st_node *n, const char *nid, uint16_t port,
				     const char *accept, ulnet_clock_fn clock, void *clock_arg,
				     unsigned flags, void (*tweak)(struct ulnet_ni_conf *))
{
	struct ulnet_opts o = { 0 };
	struct ulnet_ni_conf c = { 0 };
	int rc;

	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	n->log = calloc(1, ST_LOG_MAX);
	o.log = st_log_cb;
	o.log_arg = n;
	o.log_level = ULNET_LOG_DEBUG;
	o.clock = clock;
	o.clock_arg = clock_arg;
	o.flags = flags;
	rc = ulnet_create(&o, &n->ln);
	if (rc)
		return rc;
	/* until ulnet_create registers it as a built-in (then: -EEXIST) */
	rc = ulnet_lnd_register(n->ln, &ksocklnd);
	if (rc && rc != -EEXIST)
		return rc;
	rc = ulnet_nid_parse(nid, &c.nid, NULL);
	if (rc)
		return rc;
	n->nid = c.nid;
	c.accept_port = port;
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "%s", accept);
	if (tweak)
		tweak(&c);
	return ulnet_ni_add(n->ln, &c);
}

static inline void st_node_stop(struct st_node *n)
{
	if (n->ln)
		ulnet_destroy(n->ln);
	n->ln = NULL;
	free(n->log);
	n->log = NULL;
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->cv);
}

/* One bounded step of a wait on `cv`: at most 50 ms (mu held). */
static inline void st_cond_tick(pthread_cond_t *cv, pthread_mutex_t *mu)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

/* Whether the log so far has a line containing every needle (mu held). */
static inline bool st_log_scan_locked(const struct st_node *n, const char *needle,
				      const char *needle2)
{
	for (const char *p = n->log; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		char line[600];

		snprintf(line, sizeof(line), "%.*s", (int)(l < 599 ? l : 599), p);
		if (strstr(line, needle) && (!needle2 || strstr(line, needle2)))
			return true;
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

/* Wait (bounded) until the node logged a line containing every needle. */
static inline bool st_wait_log(struct st_node *n, const char *needle, const char *needle2)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;
	bool found = false;

	pthread_mutex_lock(&n->mu);
	while (!(found = st_log_scan_locked(n, needle, needle2)) && st_now_ms() <= end) {
		st_cond_tick(&n->cv, &n->mu);
	}
	pthread_mutex_unlock(&n->mu);
	return found;
}

/* Whether the node has logged such a line by now (no wait). */
static inline bool st_log_has(struct st_node *n, const char *needle, const char *needle2)
{
	bool found;

	pthread_mutex_lock(&n->mu);
	found = st_log_scan_locked(n, needle, needle2);
	pthread_mutex_unlock(&n->mu);
	return found;
}

/* Print what the node logged (kept, bounded): a failed check's context. */
static inline void st_log_dump(struct st_node *n, const char *who)
{
	pthread_mutex_lock(&n->mu);
	fprintf(stderr, "--- %s's log ---\n%s--- end of %s's log ---\n", who, n->log, who);
	pthread_mutex_unlock(&n->mu);
}

static inline void st_log_clear(struct st_node *n)
{
	pthread_mutex_lock(&n->mu);
	n->loglen = 0;
	n->log[0] = 0;
	pthread_mutex_unlock(&n->mu);
}

/* --- MDs whose events are counted ---------------------------------------- */

struct st_md {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n[8];                 /* per enum ulnet_event_kind */
	int nerr;
	int last_status;
	uint32_t last_mlength;
	ulnet_handle_t h;
};

static inline void st_md_handler(const struct ulnet_event *ev)
{
	struct st_md *m = ev->md_user_ptr;

	pthread_mutex_lock(&m->mu);
	if (ev->type < 8)
		m->n[ev->type]++;
	if (ev->status) {
		m->nerr++;
		m->last_status = ev->status;
	}
	if (ev->type == ULNET_EVENT_PUT || ev->type == ULNET_EVENT_REPLY || ev->type == ULNET_EVENT_GET)
		m->last_mlength = ev->mlength;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static inline void st_md_init(struct st_md *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
}

/* Unlink (if still linked: an UNLINK event comes now, while `m` lives) and
 * release. */
static inline void st_md_release(struct st_node *n, struct st_md *m)
{
	if (!ulnet_handle_is_none(m->h))
		(void)ulnet_md_unlink(n->ln, m->h);
	m->h = ULNET_HANDLE_NONE;
}

static inline void st_md_fini(struct st_md *m)
{
	/* a handler that counted the last event may still be inside the
	 * mutex (its broadcast): let it leave before the mutex goes */
	pthread_mutex_lock(&m->mu);
	pthread_mutex_unlock(&m->mu);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
}

/* The start of a two-node test: MD records ready, a on 127.0.0.2 and b on
 * 127.0.0.3 sharing `port`, accepting all. 0 or the first error. */
static inline int st_pair_start(struct st_node *a, struct st_md *am, struct st_node *b,
				struct st_md *bm, uint16_t port)
{
	int rc;

	st_md_init(am);
	st_md_init(bm);
	rc = st_node_start(a, "127.0.0.2@tcp", port, "all");
	return rc ? rc : st_node_start(b, "127.0.0.3@tcp", port, "all");
}

/* The end of a two-node test: each node's MD unlinked, the nodes stopped,
 * then the MD records freed (their handlers may run until the stop). */
static inline void st_pair_stop(struct st_node *a, struct st_md *am, struct st_node *b,
				struct st_md *bm)
{
	st_md_release(a, am);
	st_md_release(b, bm);
	st_node_stop(a);
	st_node_stop(b);
	st_md_fini(am);
	st_md_fini(bm);
}

/* Wait (bounded) until `kind` was seen `count` times; false on timeout. */
static inline bool st_md_wait(struct st_md *m, enum ulnet_event_kind kind, int count)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;
	bool ok;

	pthread_mutex_lock(&m->mu);
	while (m->n[kind] < count && st_now_ms() < end) {
		st_cond_tick(&m->cv, &m->mu);
	}
	ok = m->n[kind] >= count;
	pthread_mutex_unlock(&m->mu);
	return ok;
}

static inline void st_fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + seed + (i >> 8));
}

static inline bool st_check(const uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(i * 31 + seed + (i >> 8)))
			return false;
	return true;
}

static inline ulnet_process_id_t st_any_id(void)
{
	ulnet_process_id_t id;

	id.nid = ULNET_NID_ANY;
	id.pid = ULNET_PID_ANY;
	return id;
}

/* A target MD on `portal` (match bits `mb`) over `buf`, for PUT and GET. */
static inline int st_target(struct st_node *n, unsigned portal, uint64_t mb, void *buf, size_t len,
			    struct st_md *m)
{
	struct ulnet_md md = { 0 };
	ulnet_handle_t me;
	int rc;

	rc = ulnet_me_attach(n->ln, portal, st_any_id(), mb, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me);
	if (rc)
		return rc;
	md.start = buf;
	md.length = len;
	md.threshold = ULNET_MD_THRESH_INF;
	md.options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE;
	md.user_ptr = m;
	md.handler = st_md_handler;
	return ulnet_md_attach(n->ln, me, &md, ULNET_RETAIN, &m->h);
}

/* A free-floating MD over `buf` (source of a PUT, sink of a GET). */
static inline int st_bind(struct st_node *n, void *buf, size_t len, int threshold, struct st_md *m)
{
	struct ulnet_md md = { 0 };

	md.start = buf;
	md.length = len;
	md.threshold = threshold;
	md.options = ULNET_MD_TRUNCATE;
	md.user_ptr = m;
	md.handler = st_md_handler;
	return ulnet_md_bind(n->ln, &md, ULNET_UNLINK, &m->h);
}

#endif
