/* SPDX-License-Identifier: MIT */
/* failmodel.c - the failure model's checks (failmodel.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "failmodel.h"
#include "ulnet/routing.h"

#define FM_IDLE_WAIT_MS 15000

uint64_t fm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One bounded step of a wait: at most 50 ms (mu held). */
static void fm_tick(pthread_cond_t *cv, pthread_mutex_t *mu)
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

void fm_init(struct fm_ops *s, ulnet_t *ln, int max, size_t oplen)
{
	assert_true(oplen <= FM_OPSIZE_MAX);
	memset(s, 0, sizeof(*s));
	s->ln = ln;
	s->max = max;
	s->oplen = oplen;
	s->op = calloc((size_t)max, sizeof(*s->op));
	assert_non_null(s->op);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
}

void fm_fini(struct fm_ops *s)
{
	/* a handler that counted the last event may still be in the mutex */
	pthread_mutex_lock(&s->mu);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->n; i++)
		free(s->op[i]);
	free(s->op);
	s->op = NULL;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

static void fm_handler(const struct ulnet_event *ev)
{
	struct fm_op *o = ev->md_user_ptr;
	struct fm_ops *s = o->set;

	pthread_mutex_lock(&s->mu);
	if (o->unlinked)
		o->after_end++;
	if (ev->type < 8)
		o->ev[ev->type]++;
	if (ev->type == ULNET_EVENT_SEND)
		o->send_status = ev->status;
	if (ev->status && !o->first_status)
		o->first_status = ev->status;
	if ((ev->type == ULNET_EVENT_ACK || ev->type == ULNET_EVENT_REPLY) && !ev->status)
		o->responded = true;
	if (ev->unlinked) {
		if (!o->unlinked++) {
			s->ended++;
			o->end_status = ev->status;
			o->end_type = ev->type;
			o->t_end_ms = fm_now_ms();
		}
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

int fm_issue(struct fm_ops *s, bool get, const ulnet_nid_t *self, ulnet_nid_t target,
	     unsigned portal, uint64_t mb)
{
	ulnet_process_id_t to = { .nid = target, .pid = ULNET_PID_LUSTRE };
	struct ulnet_md md = { 0 };
	ulnet_handle_t h;
	struct fm_op *o;
	int idx, rc;

	o = calloc(1, sizeof(*o) + s->oplen);
	assert_non_null(o);
	pthread_mutex_lock(&s->mu);
	assert_true(s->n < s->max);
	idx = s->n++;
	s->op[idx] = o;
	o->set = s;
	o->idx = idx;
	o->is_get = get;
	o->t_issue_ms = fm_now_ms();
	pthread_mutex_unlock(&s->mu);
	memset(o->buf, (int)(idx & 0xff), s->oplen);
	md.start = o->buf;
	md.length = s->oplen;
	md.threshold = 2;
	md.options = ULNET_MD_TRUNCATE;
	md.user_ptr = o;
	md.handler = fm_handler;
	rc = ulnet_md_bind(s->ln, &md, ULNET_UNLINK, &h);
	assert_int_equal(rc, 0);
	if (get)
		rc = ulnet_get(s->ln, self, h, to, portal, mb, 0);
	else
		rc = ulnet_put(s->ln, self, h, ULNET_ACK_REQ, to, portal, mb, 0, 0);
	if (rc)
		fprintf(stderr, "fm_issue: %s %d refused: %d\n", get ? "GET" : "PUT", idx, rc);
	assert_int_equal(rc, 0);
	return idx;
}

bool fm_wait_all(struct fm_ops *s, int bound_ms)
{
	uint64_t end = fm_now_ms() + (uint64_t)bound_ms;
	bool all;

	pthread_mutex_lock(&s->mu);
	while (s->ended < s->n && fm_now_ms() < end)
		fm_tick(&s->cv, &s->mu);
	all = s->ended >= s->n;
	if (!all)
		fprintf(stderr, "fm_wait_all: %d of %d operations still in flight after %d ms\n",
			s->n - s->ended, s->n, bound_ms);
	pthread_mutex_unlock(&s->mu);
	return all;
}

void fm_check_ended(struct fm_ops *s, struct fm_result *r)
{
	struct fm_result res = { .max_failed_ms = -1, .min_failed_ms = -1 };

	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->n; i++) {
		struct fm_op *o = s->op[i];
		enum ulnet_event_kind resp = o->is_get ? ULNET_EVENT_REPLY : ULNET_EVENT_ACK;
		long ms = (long)(o->t_end_ms - o->t_issue_ms);
		bool ok;

		if (o->unlinked != 1 || o->after_end || o->ev[ULNET_EVENT_SEND] > 1 || o->ev[resp] > 1 ||
		    o->ev[o->is_get ? ULNET_EVENT_ACK : ULNET_EVENT_REPLY] ||
		    o->ev[ULNET_EVENT_PUT] || o->ev[ULNET_EVENT_GET])
			fprintf(stderr,
				"op %d (%s): unlinked %d, after %d, SEND %d ACK %d REPLY %d UNLINK %d, "
				"status %d/%d\n",
				i, o->is_get ? "GET" : "PUT", o->unlinked, o->after_end,
				o->ev[ULNET_EVENT_SEND], o->ev[ULNET_EVENT_ACK], o->ev[ULNET_EVENT_REPLY],
				o->ev[ULNET_EVENT_UNLINK], o->first_status, o->end_status);
		assert_int_equal(o->unlinked, 1);
		assert_int_equal(o->after_end, 0);
		assert_true(o->ev[ULNET_EVENT_SEND] <= 1);
		assert_true(o->ev[resp] <= 1);
		assert_int_equal(o->ev[o->is_get ? ULNET_EVENT_ACK : ULNET_EVENT_REPLY], 0);
		assert_int_equal(o->ev[ULNET_EVENT_PUT], 0);
		assert_int_equal(o->ev[ULNET_EVENT_GET], 0);
		ok = o->responded && o->first_status == 0;
		if (ok) {
			/* SEND and the response, nothing else */
			assert_int_equal(o->ev[ULNET_EVENT_SEND], 1);
			assert_int_equal(o->ev[ULNET_EVENT_UNLINK], 0);
			assert_int_equal(o->end_status, 0);
			res.ok++;
		} else {
			/* it ended, and says it failed */
			assert_int_not_equal(o->end_status, 0);
			res.failed++;
			if (o->end_status == -ETIMEDOUT)
				res.timedout++;
			if (res.max_failed_ms < ms)
				res.max_failed_ms = ms;
			if (res.min_failed_ms < 0 || res.min_failed_ms > ms)
				res.min_failed_ms = ms;
		}
		if (res.max_ms < ms)
			res.max_ms = ms;
	}
	pthread_mutex_unlock(&s->mu);
	if (r)
		*r = res;
}

int fm_md_count(ulnet_t *ln)
{
	struct ul_list *pos;
	int n = 0;

	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_md_active)
		n++;
	lnet_unlock(ln);
	return n;
}

/* Why the node is not idle, or NULL. */
static const char *fm_busy(ulnet_t *ln, int keep_mds, char *why, size_t len)
{
	struct ulnet_counters c;
	struct ulnet_ni_info ni;
	struct ulnet_peer_info pi;
	struct ulnet_routing_info ri;
	int mds;

	ulnet_counters_get(ln, &c);
	if (c.msgs_alloc || c.rst_alloc) {
		snprintf(why, len, "msgs_alloc %llu, rst_alloc %llu", (unsigned long long)c.msgs_alloc,
			 (unsigned long long)c.rst_alloc);
		return why;
	}
	mds = fm_md_count(ln);
	if (mds != keep_mds) {
		snprintf(why, len, "%d MDs, %d expected", mds, keep_mds);
		return why;
	}
	for (int i = 0; ulnet_ni_info(ln, i, &ni) == 0; i++) {
		if (ni.credits_avail != ni.credits_max) {
			snprintf(why, len, "NI %d: %d of %d credits", i, ni.credits_avail,
				 ni.credits_max);
			return why;
		}
	}
	/* a router: every buffer back in its pool */
	if (ulnet_routing_info(ln, &ri) == 0 && ri.pools) {
		for (int i = 0; i < ULNET_RTR_NPOOLS; i++) {
			if (ri.pool[i].credits != ri.pool[i].nbuffers) {
				snprintf(why, len, "router pool %d: %d of %d buffers free", i,
					 ri.pool[i].credits, ri.pool[i].nbuffers);
				return why;
			}
		}
	}
	for (int i = 0; ulnet_peer_info(ln, i, &pi) == 0; i++) {
		for (int k = 0; k < pi.nnis; k++) {
			const struct ulnet_peer_ni_info *p = &pi.nis[k];

			if (p->available_tx_credits != p->max_tx_credits || p->tx_q_num_of_buf) {
				snprintf(why, len, "peer %d NI %d: %d of %d credits, %d queued", i, k,
					 p->available_tx_credits, p->max_tx_credits,
					 p->tx_q_num_of_buf);
				return why;
			}
		}
	}
	return NULL;
}

void fm_assert_idle(ulnet_t *ln, int keep_mds)
{
	uint64_t end = fm_now_ms() + FM_IDLE_WAIT_MS;
	const char *busy;
	char why[160];

	while ((busy = fm_busy(ln, keep_mds, why, sizeof(why))) && fm_now_ms() < end)
		usleep(20000);
	if (busy)
		fprintf(stderr, "node not idle: %s\n", busy);
	assert_null(busy);
}

void fm_assert_put_get_ok(ulnet_t *ln, ulnet_nid_t target, unsigned portal, uint64_t mb,
			  int bound_ms)
{
	struct fm_ops s;
	struct fm_result r;

	fm_init(&s, ln, 2, 4096);
	fm_issue(&s, false, NULL, target, portal, mb);
	fm_issue(&s, true, NULL, target, portal, mb);
	assert_true(fm_wait_all(&s, bound_ms));
	fm_check_ended(&s, &r);
	assert_int_equal(r.ok, 2);
	fm_fini(&s);
}
