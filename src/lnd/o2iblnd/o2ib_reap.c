/* SPDX-License-Identifier: MIT */
/*
 * o2ib_reap.c - destroying a dead connection's verbs objects (its QP, then
 * its CQ, then its completion channel) on a thread of their own, off the
 * NI's loop.
 *
 * Why. Destroying a QP may block in the kernel: soft-RoCE (rxe) waits
 * until every packet the QP handed to its network device has been freed,
 * and a device taken down (`ip link set eth1 down`, a pulled cable) frees
 * the packets still in its transmit ring only when it comes back up; the
 * wait then lasts tens of seconds. The loop that destroys the connection
 * also carries the process's other NIs (the other rails of a Multi-Rail
 * node), so one dead rail stalled them all: no completion polled, no
 * receive reposted, no connect request answered. The kernel's ko2iblnd
 * destroys its connections in its connd thread, away from the schedulers
 * that move data, for the same reason.
 *
 * The loop hands the objects over once the QP is in the error state (so
 * nothing can move through it into our memory any more) and the CQ's fd
 * is off the loop; the connection itself goes on as before and may be
 * freed while the objects wait here. The thread starts with the first
 * handover and is joined when the NI shuts down, after its last
 * connection was destroyed, before the PD and the device's context go.
 */
#include <errno.h>
#include <stdlib.h>

#include "o2ib_int.h"

struct kib_reap_item {
	struct kib_reap_item *next;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_comp_channel *cch;
};

static void kib_reap_destroy(struct kib_reap_item *it)
{
	if (it->qp)
		ibv_destroy_qp(it->qp);
	if (it->cq)
		ibv_destroy_cq(it->cq);
	if (it->cch)
		ibv_destroy_comp_channel(it->cch);
}

static void *kib_reaper_main(void *arg)
{
	struct kib_reaper *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct kib_reap_item *it = r->head;

		if (!it) {
			if (r->stop)
				break;
			pthread_cond_wait(&r->cv, &r->lock);
			continue;
		}
		r->head = it->next;
		if (!r->head)
			r->tail = &r->head;
		pthread_mutex_unlock(&r->lock);
		kib_reap_destroy(it);
		free(it);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

void kib_reaper_init(struct kib_reaper *r)
{
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->head = NULL;
	r->tail = &r->head;
	r->started = false;
	r->stop = false;
}

void kib_reap(struct kib_net *net, struct ibv_qp *qp, struct ibv_cq *cq,
	      struct ibv_comp_channel *cch)
{
	struct kib_reaper *r = &net->reaper;
	struct kib_reap_item now = { .qp = qp, .cq = cq, .cch = cch };
	struct kib_reap_item *it;

	if (!qp && !cq && !cch)
		return;
	it = malloc(sizeof(*it));
	if (it) {
		*it = now;
		pthread_mutex_lock(&r->lock);
		if (!r->started && !r->stop &&
		    pthread_create(&r->thread, NULL, kib_reaper_main, r) == 0)
			r->started = true;
		if (r->started) {
			*r->tail = it;
			r->tail = &it->next;
			pthread_cond_signal(&r->cv);
			pthread_mutex_unlock(&r->lock);
			return;
		}
		pthread_mutex_unlock(&r->lock);
	}
	/* no memory or no thread: here, as before, blocking or not */
	lnet_ni_log(net->ni, ULNET_LOG_WARN,
		    "o2iblnd: destroying a connection's QP on the NI's loop (%s)",
		    it ? "no reaper thread" : "no memory");
	free(it);
	kib_reap_destroy(&now);
}

void kib_reaper_fini(struct kib_reaper *r)
{
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->lock);
	if (r->started)
		pthread_join(r->thread, NULL);
	r->started = false;
	/* nothing queued is left: the thread drains the queue before it
	 * ends, and no thread means nothing was ever queued */
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->lock);
}
