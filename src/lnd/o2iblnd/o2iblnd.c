/* SPDX-License-Identifier: MIT */
/*
 * o2iblnd.c - the o2ib LND over rdma-core (docs/o2iblnd.md): its ops table,
 * NI startup and shutdown, the rdma_cm listener on the NI's address at the
 * service port, peers, and the 1 s tick (tx timeouts, keepalives, closing
 * connections, reconnects, the port's state: o2ib_link.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lnd/o2iblnd/o2ib_int.h"

#define KIB_NS 1000000000ULL

void kib_lock(struct kib_net *net)
{
	pthread_mutex_lock(&net->lock);
}

/* Finalize what completed while the lock was held, without it. */
void kib_unlock(struct kib_net *net)
{
again:
	while (net->parse && !net->in_unlock) {
		struct kib_rx *rx = net->parse;

		net->parse = rx->parse_next;
		if (!net->parse)
			net->parse_tail = &net->parse;
		rx->parse_next = NULL;
		net->in_unlock = true;
		pthread_mutex_unlock(&net->lock);
		kib_parse_rx(net, rx);
		pthread_mutex_lock(&net->lock);
		net->in_unlock = false;
	}
	while (net->fin && !net->in_unlock) {
		struct kib_tx *tx = net->fin;
		struct lnet_msg *m0, *m1;
		int64_t reply_len;
		int st;

		net->fin = tx->fin_next;
		if (!net->fin)
			net->fin_tail = &net->fin;
		m0 = tx->lntmsg[0];
		m1 = tx->lntmsg[1];
		st = tx->status;
		reply_len = tx->done_len;
		kib_mr_release(net, tx);
		tx->lntmsg[0] = tx->lntmsg[1] = NULL;
		tx->fin_next = NULL;
		tx->conn = NULL;
		kib_list_add_tail(&tx->link, &net->idle_txs);
		net->nidle++;
		net->in_unlock = true;
		pthread_mutex_unlock(&net->lock);
		/* a GET whose REPLY the peer wrote: its length first */
		if (m1 && st == 0 && reply_len >= 0)
			st = lnet_set_reply_msg_len(net->ni, m1, (size_t)reply_len);
		else if (m1 && st == 0)
			st = -EPROTO;
		if (m0)
			lnet_finalize(m0, st);
		if (m1)
			lnet_finalize(m1, st);
		pthread_mutex_lock(&net->lock);
		net->in_unlock = false;
	}
	if (net->parse && !net->in_unlock)
		goto again;
	pthread_mutex_unlock(&net->lock);
}

uint64_t kib_now(const struct kib_net *net)
{
	return lnet_ni_now(net->ni);
}

struct kib_peer *kib_peer_find(struct kib_net *net, ulnet_nid4_t nid4)
{
	for (struct kib_list *l = net->peers.next; l != &net->peers; l = l->next) {
		struct kib_peer *p = kib_container(l, struct kib_peer, link);

		if (p->nid4 == nid4)
			return p;
	}
	return NULL;
}

struct kib_peer *kib_peer_create(struct kib_net *net, ulnet_nid4_t nid4)
{
	struct kib_peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->net = net;
	p->nid4 = nid4;
	ulnet_nid_from_nid4(nid4, &p->nid);
	ulnet_nid_str(&p->nid, p->nidstr);
	p->queue_depth = net->tun.peer_credits;
	p->max_frags = KIB_MAX_RDMA_FRAGS;
	kib_list_init(&p->tx_queue);
	kib_list_init(&p->estab);
	kib_list_add_tail(&p->link, &net->peers);
	return p;
}

/* A peer with nothing going on is forgotten (it keeps its incarnation
 * while a connection or an attempt exists, as the kernel's peer does); a
 * connection being closed still points to it until it is destroyed. */
void kib_peer_maybe_free(struct kib_peer *peer)
{
	if (peer->conn || peer->connecting || peer->accepting || peer->nconns > 0 ||
	    !kib_list_empty(&peer->tx_queue))
		return;
	kib_list_del(&peer->link);
	free(peer);
}

static void kib_kick_work(struct ul_work *w)
{
	struct kib_net *net = kib_container(w, struct kib_net, kick);
	uint64_t now;

	kib_lock(net);
	net->kick_pending = false;
	kib_link_close_conns(net);
	now = kib_now(net);
	for (struct kib_list *l = net->peers.next, *n; l != &net->peers; l = n) {
		struct kib_peer *p = kib_container(l, struct kib_peer, link);

		n = l->next;
		if (!net->shutdown && !p->conn && !p->connecting && !p->accepting &&
		    !kib_list_empty(&p->tx_queue) && now >= p->retry_at)
			kib_connect_peer_all(p);
	}
	kib_unlock(net);
}

/* Locked: have the loop thread connect peers with txs waiting. */
void kib_kick(struct kib_net *net)
{
	if (net->kick_pending || net->shutdown)
		return;
	net->kick_pending = true;
	ul_loop_post(net->loop, &net->kick);
}

static void kib_tick_cb(struct ul_timer *t)
{
	struct kib_net *net = kib_container(t, struct kib_net, tick);
	uint64_t now;

	kib_link_poll(net);
	kib_lock(net);
	now = kib_now(net);
	for (struct kib_list *l = net->conns.next, *n; l != &net->conns; l = n) {
		struct kib_conn *c = kib_container(l, struct kib_conn, link);

		n = l->next;
		if (c->state == KIB_CONN_ESTABLISHED) {
			kib_check_txs(c, now);
			if (c->state == KIB_CONN_ESTABLISHED)
				kib_check_sends(c);     /* keepalive NOOP when idle */
		} else if (c->state == KIB_CONN_CLOSING &&
			   now - c->closing_since > 2 * KIB_NS) {
			kib_destroy_conn(c);
		} else if ((c->state == KIB_CONN_ACTIVE_CONNECT ||
			    c->state == KIB_CONN_PASSIVE_WAIT) &&
			   now - c->last_send > (uint64_t)kib_connreq_timeout_ms(&net->tun) * 1000000ULL) {
			kib_close_conn(c, -ETIMEDOUT, "connection not established in time");
		}
	}
	/* txs waiting for a connection that never comes */
	for (struct kib_list *l = net->peers.next, *n; l != &net->peers; l = n) {
		struct kib_peer *p = kib_container(l, struct kib_peer, link);

		n = l->next;
		while (!kib_list_empty(&p->tx_queue)) {
			struct kib_tx *tx = kib_container(p->tx_queue.next, struct kib_tx, link);

			if (tx->deadline > now)
				break;
			kib_list_del(&tx->link);
			tx->queued = false;
			tx->status = -ETIMEDOUT;
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: tx timed out waiting for a connection", p->nidstr);
			kib_tx_done(net, tx);
		}
		if (!p->conn && !p->connecting && !p->accepting && !kib_list_empty(&p->tx_queue) &&
		    now >= p->retry_at)
			kib_connect_peer_all(p);
		else
			kib_peer_maybe_free(p);
	}
	if (!net->shutdown)
		ul_timer_start(net->loop, &net->tick, now + KIB_NS);
	kib_unlock(net);
}

static int kib_startup(struct lnet_ni *ni)
{
	const struct ulnet_ni_conf *conf = lnet_ni_conf(ni);
	const ulnet_nid_t *nid = lnet_ni_nid(ni);
	struct kib_net *net;
	struct sockaddr_in sin;
	int rc;

	if (nid->size != 0)
		return -EINVAL;     /* IPv4 o2ib NIDs only */
	net = calloc(1, sizeof(*net));
	if (!net)
		return -ENOMEM;
	net->ni = ni;
	net->loop = lnet_ni_loop(ni);
	pthread_mutex_init(&net->lock, NULL);
	kib_reaper_init(&net->reaper);
	kib_list_init(&net->idle_txs);
	kib_list_init(&net->peers);
	kib_list_init(&net->conns);
	kib_list_init(&net->mrs);
	lnet_memreg_start(lnet_ni_instance(ni), &net->memreg);
	net->fin_tail = &net->fin;
	net->parse_tail = &net->parse;
	ul_timer_init(&net->tick, kib_tick_cb);
	net->kick.fn = kib_kick_work;
	rc = ulnet_nid_to_nid4(nid, &net->nid4);
	if (rc == 0) {
		const char *what;

		rc = kib_tunables_setup(&net->tun, conf, lnet_ni_global_lnd_timeout(ni), &what);
		if (rc < 0) {
			/* net add and import check them first: this is the
			 * library's own guard */
			lnet_ni_log(ni, ULNET_LOG_ERROR, "o2iblnd: tunable %s: %s", what,
				    rc == -EOPNOTSUPP ? "value not supported by ulnet"
						      : "out of range (docs/o2iblnd.md)");
			goto fail;
		}
	}
	if (rc < 0)
		goto fail;
	net->incarnation = lnet_ni_incarnation(ni);
	if (!net->incarnation)
		net->incarnation = 1;
	net->ip = ulnet_nid_ipv4(nid);

	net->cmch = rdma_create_event_channel();
	if (!net->cmch) {
		rc = -errno;
		goto fail;
	}
	fcntl(net->cmch->fd, F_SETFL, fcntl(net->cmch->fd, F_GETFL) | O_NONBLOCK);
	if (rdma_create_id(net->cmch, &net->listener, net, RDMA_PS_TCP) != 0) {
		rc = -errno;
		goto fail;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(net->ip);
	sin.sin_port = htons((uint16_t)net->tun.service);
	if (rdma_bind_addr(net->listener, (struct sockaddr *)&sin) != 0) {
		rc = -errno;
		lnet_ni_log(ni, ULNET_LOG_ERROR, "o2iblnd: cannot bind %s:%d: %s",
			    inet_ntoa(sin.sin_addr), net->tun.service, strerror(-rc));
		goto fail;
	}
	if (!net->listener->verbs) {
		rc = -ENODEV;
		lnet_ni_log(ni, ULNET_LOG_ERROR, "o2iblnd: no RDMA device has address %s",
			    inet_ntoa(sin.sin_addr));
		goto fail;
	}
	net->ctx = net->listener->verbs;
	net->pd = ibv_alloc_pd(net->ctx);
	if (!net->pd) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = kib_txpool_init(net);
	if (rc < 0)
		goto fail;
	if (rdma_listen(net->listener, 256) != 0) {
		rc = -errno;
		goto fail;
	}
	ul_io_init(&net->cm_io, net->cmch->fd, kib_cm_io_cb);
	rc = ul_io_start(net->loop, &net->cm_io, EPOLLIN);
	if (rc < 0)
		goto fail;
	kib_link_watch(net);
	lnet_ni_set_data(ni, net);
	lnet_ni_log(ni, ULNET_LOG_INFO, "o2iblnd: listening on %s:%d (device %s), peer_credits %d, "
		    "ntx %d, timeout %d s, keepalive %d s, checksums %s",
		    inet_ntoa(sin.sin_addr), net->tun.service,
		    ibv_get_device_name(net->ctx->device), net->tun.peer_credits, net->tun.ntx,
		    net->tun.timeout, net->tun.keepalive, net->tun.cksum ? "on" : "off");
	ul_timer_start(net->loop, &net->tick, kib_now(net) + KIB_NS);
	return 0;
fail:
	kib_txpool_fini(net);
	if (net->pd)
		ibv_dealloc_pd(net->pd);
	if (net->listener)
		rdma_destroy_id(net->listener);
	if (net->cmch)
		rdma_destroy_event_channel(net->cmch);
	kib_reaper_fini(&net->reaper);
	pthread_mutex_destroy(&net->lock);
	free(net);
	return rc < 0 ? rc : -EINVAL;
}

static void kib_shutdown_now(struct kib_net *net)
{
	kib_lock(net);
	net->shutdown = true;
	ul_timer_stop(net->loop, &net->tick);
	ul_io_stop(net->loop, &net->cm_io);
	kib_link_unwatch(net);
	for (struct kib_list *l = net->peers.next; l != &net->peers; l = l->next) {
		struct kib_peer *p = kib_container(l, struct kib_peer, link);

		kib_tx_fail_list(net, &p->tx_queue, -ESHUTDOWN);
	}
	while (!kib_list_empty(&net->conns)) {
		struct kib_conn *c = kib_container(net->conns.next, struct kib_conn, link);

		/* closing one that is still connecting destroys and frees
		 * it: held until destroyed */
		c->refs++;
		if (c->state < KIB_CONN_CLOSING)
			kib_close_conn(c, -ESHUTDOWN, "NI shutting down");
		kib_destroy_conn(c);
		kib_conn_decref(c);
	}
	/* messages not handed to LNet yet: dropped with their connection */
	while (net->parse) {
		struct kib_rx *rx = net->parse;

		net->parse = rx->parse_next;
		kib_conn_decref(rx->conn);
	}
	net->parse_tail = &net->parse;
	kib_unlock(net);
	/* everything finalized; no connection is left */
	kib_lock(net);
	while (!kib_list_empty(&net->peers)) {
		struct kib_peer *p = kib_container(net->peers.next, struct kib_peer, link);

		kib_list_del(&p->link);
		free(p);
	}
	kib_unlock(net);
	/* the connections' QPs are gone before the device may close */
	kib_reaper_fini(&net->reaper);
	if (net->listener)
		rdma_destroy_id(net->listener);
	net->listener = NULL;
}

struct kib_shutdown_wait {
	struct ul_timer t;
	struct kib_net *net;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool started, done;
};

static void kib_shutdown_timer_cb(struct ul_timer *t)
{
	struct kib_shutdown_wait *w = kib_container(t, struct kib_shutdown_wait, t);

	pthread_mutex_lock(&w->m);
	w->started = true;
	pthread_mutex_unlock(&w->m);
	kib_shutdown_now(w->net);
	pthread_mutex_lock(&w->m);
	w->done = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->m);
}

static void kib_shutdown(struct lnet_ni *ni)
{
	struct kib_net *net = lnet_ni_data(ni);

	if (!net)
		return;
	if (ul_loop_in_turn(net->loop)) {
		kib_shutdown_now(net);
	} else {
		/* do it on the loop thread; if no thread turns the loop
		 * (manual progress), here */
		struct kib_shutdown_wait w = { .net = net };
		struct timespec ts;
		bool inline_it = false;

		pthread_mutex_init(&w.m, NULL);
		pthread_cond_init(&w.cv, NULL);
		ul_timer_init(&w.t, kib_shutdown_timer_cb);
		ul_timer_start(net->loop, &w.t, 0);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_mutex_lock(&w.m);
		while (!w.done) {
			if (w.started) {
				pthread_cond_wait(&w.cv, &w.m);
			} else if (pthread_cond_timedwait(&w.cv, &w.m, &ts) == ETIMEDOUT && !w.started) {
				inline_it = true;
				break;
			}
		}
		pthread_mutex_unlock(&w.m);
		if (inline_it) {
			ul_timer_stop(net->loop, &w.t);
			kib_shutdown_now(net);
		}
		pthread_cond_destroy(&w.cv);
		pthread_mutex_destroy(&w.m);
	}
	/* connections still referenced by a delayed receive free themselves
	 * on the last reference; the tx pool and PD go now */
	kib_mr_cache_fini(net);
	kib_txpool_fini(net);
	if (net->pd)
		ibv_dealloc_pd(net->pd);
	if (net->cmch)
		rdma_destroy_event_channel(net->cmch);
	lnet_ni_set_data(ni, NULL);
	pthread_mutex_destroy(&net->lock);
	free(net);
}

/* What lnetctl shows as the o2ib "lnd tunables": the values in effect,
 * resolved from the conf as startup did (no NI state is touched, so this
 * is safe against a concurrent shutdown). */
static void kib_ni_info(struct lnet_ni *ni, struct ulnet_ni_info *info)
{
	kib_tunables_info(lnet_ni_conf(ni), lnet_ni_global_lnd_timeout(ni), info);
}

const struct ulnet_lnd ko2iblnd = {
	.type = ULNET_LND_O2IB,
	.name = "o2ib",
	.startup = kib_startup,
	.shutdown = kib_shutdown,
	.send = kib_send,
	.recv = kib_recv,
	.ni_info = kib_ni_info,
	.link_state = kib_link_state,
};
