/* SPDX-License-Identifier: MIT */
/*
 * socklnd.c - the TCP LND: ops table, NI startup/shutdown, peers, the tx
 * pool, and the reaper (timeouts, keepalives, reconnects).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/tcp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/lnd.h"
#include "lnd/socklnd/sock_int.h"

static void ksock_startup_fail_free(struct ksock_net *net);

const char *ksock_nidstr(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE])
{
	return ulnet_nid_str(nid, buf);
}

/* once per thread, not a gettid() per loop callback */
static _Thread_local int ksock_tid;

void ksock_loop_enter(struct ksock_net *net)
{
	int tid = ksock_tid;

	if (!tid)
		ksock_tid = tid = (int)syscall(SYS_gettid);
	/* read by other threads without the lock (ksock_on_loop_thread) */
	if (__atomic_load_n(&net->loop_tid, __ATOMIC_RELAXED) != tid)
		__atomic_store_n(&net->loop_tid, tid, __ATOMIC_RELAXED);
}

/* --- finalize lists ---------------------------------------------------------- */

void ksock_done_add_slow(struct ksock_net *net, struct ksock_done *d, struct ksock_tx *tx,
			 int status)
{
	(void)net;
	/* the status rides in `deadline` once the tx is off every queue */
	tx->deadline = (uint64_t)(int64_t)status;
	tx->next = NULL;
	if (d->head)
		d->tail->next = tx;
	else
		d->head = tx;
	d->tail = tx;
}

void ksock_done_notify(struct ksock_done *d, const ulnet_nid_t *nid, int err)
{
	for (unsigned i = 0; i < d->nnotify; i++)
		if (ulnet_nid_same(&d->notify_nid[i], nid))
			return;
	if (d->nnotify < 4) {
		d->notify_nid[d->nnotify] = *nid;
		d->notify_err[d->nnotify++] = err;
	}
}

/* Finalize (without the lock) every message collected under it, then
 * report failed peers to the core. */
void ksock_done_run_slow(struct ksock_net *net, struct ksock_done *d)
{
	struct ksock_tx *tx = d->head, *next;
	unsigned ninline = d->n;

	d->head = NULL;
	d->n = 0;
	for (unsigned i = 0; i < d->nnotify; i++)
		lnet_notify_peer_ni(net->ni, &d->notify_nid[i], d->notify_err[i]);
	d->nnotify = 0;
	if (ninline)
		lnet_finalize_many(d->msgs, d->status, ninline);
	while (tx) {
		/* free a batch of txs under one lock, then finalize them */
		struct lnet_msg *msgs[32];
		int status[32];
		unsigned n = 0;

		ksock_lock(net);
		for (; tx && n < 32; tx = next) {
			next = tx->next;
			msgs[n] = tx->msg;
			status[n++] = (int)(int64_t)tx->deadline;
			ksock_tx_free(net, tx);
		}
		ksock_unlock(net);
		lnet_finalize_many(msgs, status, n);
	}
}

/* --- tx pool ------------------------------------------------------------------ */

struct ksock_tx *ksock_tx_alloc(struct ksock_net *net)
{
	struct ksock_tx *tx = net->tx_free;

	if (!tx) {
		struct ksock_txblock *b = calloc(1, sizeof(*b));

		if (!b)
			return NULL;
		b->next = net->txblocks;
		net->txblocks = b;
		for (size_t i = 0; i < sizeof(b->tx) / sizeof(b->tx[0]); i++) {
			b->tx[i].next = net->tx_free;
			net->tx_free = &b->tx[i];
		}
		tx = net->tx_free;
	}
	net->tx_free = tx->next;
	memset(tx, 0, offsetof(struct ksock_tx, hdr));
	return tx;
}

/* --- peers ---------------------------------------------------------------------- */

static unsigned ksock_nid_hash(const ulnet_nid_t *nid, unsigned size)
{
	uint64_t h = (uint64_t)nid->type << 48 ^ (uint64_t)nid->num << 32;

	for (unsigned i = 0; i < sizeof(nid->addr); i += 4)
		h = (h ^ ((uint64_t)nid->addr[i] << 24 | (uint64_t)nid->addr[i + 1] << 16 |
			  (uint64_t)nid->addr[i + 2] << 8 | nid->addr[i + 3])) * 0x9e3779b97f4a7c15ULL;
	return (unsigned)(h >> 32) & (size - 1);
}

/* Grow the table to `size` chains (lock held); on no memory the old one
 * stays (lookups only get longer). */
static void ksock_peer_hash_resize(struct ksock_net *net, unsigned size)
{
	struct ksock_peer **t = calloc(size, sizeof(*t));

	if (!t)
		return;
	for (struct ksock_peer *p = net->peers; p; p = p->next) {
		unsigned h = ksock_nid_hash(&p->nid, size);

		p->hnext = t[h];
		t[h] = p;
	}
	free(net->peer_hash);
	net->peer_hash = t;
	net->peer_hash_size = size;
}

struct ksock_peer *ksock_peer_find(struct ksock_net *net, const ulnet_nid_t *nid)
{
	struct ksock_peer *p = net->peer_last;

	if (p && ksock_nid_same(&p->nid, nid))
		return p;
	if (!net->peer_hash_size)
		return NULL;
	for (p = net->peer_hash[ksock_nid_hash(nid, net->peer_hash_size)]; p; p = p->hnext)
		if (ksock_nid_same(&p->nid, nid)) {
			net->peer_last = p;
			return p;
		}
	return NULL;
}

struct ksock_peer *ksock_peer_find_or_create(struct ksock_net *net, const ulnet_nid_t *nid,
					     ulnet_pid_t pid)
{
	struct ksock_peer *p = ksock_peer_find(net, nid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->nid = *nid;
	p->pid = pid;
	p->retry_ms = net->tun.min_reconnect_ms;
	p->zc_next = KSOCK_KEEPALIVE_COOKIE + 1;
	p->last_alive = ksock_now(net);
	p->next = net->peers;
	net->peers = p;
	net->npeers++;
	unsigned before = net->peer_hash_size;

	if (net->npeers > before)
		ksock_peer_hash_resize(net, before ? before * 2 : 64);   /* rehashes p too */
	if (net->peer_hash_size == before) {
		if (!before) {
			/* no table at all (no memory): no peer */
			net->npeers--;
			net->peers = p->next;
			free(p);
			return NULL;
		}
		/* not grown (no memory): into the table as it is */
		unsigned h = ksock_nid_hash(nid, before);

		p->hnext = net->peer_hash[h];
		net->peer_hash[h] = p;
	}
	net->peer_last = p;
	return p;
}

static bool ksock_peer_idle(const struct ksock_peer *p, uint64_t now)
{
	return !p->conns && !p->txq_head && !p->zc_head && p->nconnecting == 0 &&
	       p->accepting == 0 && p->nacks == 0 && now >= p->retry_at;
}

static void ksock_peer_unlink_free(struct ksock_net *net, struct ksock_peer *peer)
{
	if (net->peer_last == peer)
		net->peer_last = NULL;
	if (net->peer_hash_size) {
		struct ksock_peer **hp = &net->peer_hash[ksock_nid_hash(&peer->nid, net->peer_hash_size)];

		for (; *hp; hp = &(*hp)->hnext)
			if (*hp == peer) {
				*hp = peer->hnext;
				break;
			}
	}
	for (struct ksock_peer **pp = &net->peers; *pp; pp = &(*pp)->next) {
		if (*pp == peer) {
			*pp = peer->next;
			net->npeers--;
			free(peer->acks);
			free(peer);
			return;
		}
	}
}

/* --- the kick (work for the loop thread) ---------------------------------------- */

void ksock_kick(struct ksock_net *net)
{
	/* due now: runs after the current epoll batch of the loop */
	ul_timer_start(net->loop, &net->kick, 0);
}

void ksock_kick_conn_locked(struct ksock_conn *c)
{
	struct ksock_net *net = c->net;

	if (c->kicked || c->state == KSOCK_CS_CLOSED)
		return;
	c->kicked = true;
	c->refs++;
	c->kick_next = net->kick_conns;
	net->kick_conns = c;
	ksock_kick(net);
}

static void ksock_kick_cb(struct ul_timer *t)
{
	struct ksock_net *net = (struct ksock_net *)((char *)t - offsetof(struct ksock_net, kick));
	struct ksock_conn *list, *dead, *c, *next;
	bool connect;

	ksock_loop_enter(net);
	ksock_flush_deferred(net);
	ksock_lock(net);
	list = net->kick_conns;
	net->kick_conns = NULL;
	dead = net->dead_conns;
	net->dead_conns = NULL;
	connect = net->kick_connect;
	net->kick_connect = false;
	ksock_unlock(net);
	ksock_link_close_conns(net);

	for (c = dead; c; c = next) {
		next = c->kick_next;
		ksock_conn_free(c);
	}
	for (c = list; c; c = next) {
		next = c->kick_next;
		ksock_lock(net);
		c->kicked = false;
		ksock_unlock(net);
		if (c->state == KSOCK_CS_UP)
			ksock_conn_rx(c);
		else if (c->state == KSOCK_CS_HELLO)   /* moved here from another loop */
			ksock_hs_readable(c);
		ksock_conn_put(c);
	}
	if (connect) {
		struct ksock_done done = { 0 };

		ksock_lock(net);
		for (struct ksock_peer *p = net->peers; p; p = p->next)
			if (p->txq_head || p->nacks || (p->connector && p->conns))
				ksock_peer_connect_locked(net, p, &done);
		ksock_unlock(net);
		ksock_done_run(net, &done);
	}
}

/* --- reaper ------------------------------------------------------------------------ */

uint64_t ksock_conn_tcp_acked(const struct ksock_conn *c)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0 ||
	    l < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
		return 0;
	return ti.tcpi_bytes_acked;
}

/* The kernel also takes a peer for alive when its TCP has acknowledged
 * bytes we sent (ksocknal_transmit: the socket's queued bytes went down),
 * as seen at its next send. We look only when a keepalive is due: if a
 * conn's acknowledged count moved since the last look, the peer was alive
 * when we last wrote on it (the reaper's stamp, 1 s resolution). Returns
 * the latest such time, 0 if none (the stamp is the pass before the write,
 * so a keepalive may come up to 1 s early, never late). A peer that reads
 * what we keep sending gets no keepalive; one we stopped writing to gets it
 * on time. One getsockopt per conn, only when a keepalive would go. */
static uint64_t ksock_peer_tx_acked_locked(struct ksock_peer *peer)
{
	uint64_t alive = 0;

	for (struct ksock_conn *c = peer->conns; c; c = c->next) {
		uint64_t a = ksock_conn_tcp_acked(c);

		if (a > c->tx_acked) {
			c->tx_acked = a;
			if (c->tx_active_at > alive)
				alive = c->tx_active_at;
		}
	}
	return alive;
}

static void ksock_reap_peer_locked(struct ksock_net *net, struct ksock_peer *peer, uint64_t now,
				   struct ksock_done *done)
{
	char nidbuf[ULNET_NIDSTR_SIZE];
	struct ksock_conn *c;

	for (c = peer->conns; c; c = c->next) {
		const char *why = NULL;

		if (c->tx_bytes != c->tx_bytes_seen) {
			/* we wrote since the last pass: at least as late as it */
			c->tx_bytes_seen = c->tx_bytes;
			c->tx_active_at = net->reap_prev;
		}
		if (c->rx_started && now - c->rx_last_progress > net->timeout_ns)
			why = "timed out receiving";
		else if (c->tx_queued && now - c->tx_last_progress > net->timeout_ns)
			why = "timed out sending";
		if (why) {
			char desc[160];

			ksock_conn_describe(c, desc, sizeof(desc));
			lnet_ni_log(net->ni, ULNET_LOG_ERROR, "%s: %s, closing it and its siblings",
				    desc, why);
			ksock_conn_close_locked(c, -ETIMEDOUT, true, done);
			return;      /* the peer's conn list changed */
		}
	}
	for (struct ksock_tx *tx = peer->zc_head; tx; tx = tx->next) {
		if (now > tx->deadline && tx->conn) {
			char desc[160];

			ksock_conn_describe(tx->conn, desc, sizeof(desc));
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "%s: stale ZC request (cookie %llu unacked for %llu s), closing it and its siblings",
				    desc, (unsigned long long)tx->zc_cookie,
				    (unsigned long long)(net->timeout_ns / KSOCK_NS_PER_S));
			ksock_conn_close_locked(tx->conn, -ETIMEDOUT, true, done);
			return;
		}
	}
	/* messages that never found a connection */
	for (struct ksock_tx **pp = &peer->txq_head; *pp;) {
		struct ksock_tx *tx = *pp;

		if (now > tx->deadline) {
			*pp = tx->next;
			if (peer->txq_tail == tx) {
				peer->txq_tail = NULL;
				for (struct ksock_tx *t = peer->txq_head; t; t = t->next)
					peer->txq_tail = t;
			}
			lnet_ni_log(net->ni, ULNET_LOG_WARN, "peer %s: message timed out waiting for a connection",
				    ksock_nidstr(&peer->nid, nidbuf));
			ksock_done_add(net, done, tx, -ETIMEDOUT);
			continue;
		}
		pp = &tx->next;
	}
	if (peer->proto && peer->proto->keepalive && peer->conns && net->tun.keepalive > 0 &&
	    now - peer->last_alive > (uint64_t)net->tun.keepalive * KSOCK_NS_PER_S &&
	    now - peer->last_keepalive > (uint64_t)KSOCK_KEEPALIVE_MIN_INTERVAL_S * KSOCK_NS_PER_S &&
	    peer->nacks == 0) {
		/* a keepalive would go now: did the peer take what we sent? */
		uint64_t tx_alive = ksock_peer_tx_acked_locked(peer);

		if (tx_alive > peer->last_alive)
			peer->last_alive = tx_alive;
		if (now - peer->last_alive > (uint64_t)net->tun.keepalive * KSOCK_NS_PER_S) {
			peer->last_keepalive = now;
			ksock_send_keepalive_locked(net, peer, done);
		}
	}
	if ((peer->txq_head || peer->nacks || (peer->connector && peer->conns)) &&
	    peer->nconnecting == 0 && now >= peer->retry_at)
		ksock_peer_connect_locked(net, peer, done);
}

/* The timeout in seconds for a conf value `s`: 0 the default, -1 the
 * global lnd_timeout `global` (the kernel's sock_timeout=0). */
static int ksock_timeout_s(int s, int global)
{
	return s > 0 ? s : s == -1 ? global : KSOCK_SOCK_TIMEOUT_S;
}

/* lnetctl net set --lnd-timeout changes sock_timeout on a running NI (and
 * transaction_timeout the global one it may follow): take the new value at
 * the next reaper turn. `global`: read before the lock. */
static void ksock_timeout_refresh_locked(struct ksock_net *net, int global)
{
	int s = __atomic_load_n(&lnet_ni_conf(net->ni)->sock.sock_timeout, __ATOMIC_RELAXED);
	uint64_t ns = (uint64_t)ksock_timeout_s(s, global) * KSOCK_NS_PER_S;

	if (ns != net->timeout_ns) {
		lnet_ni_log(net->ni, ULNET_LOG_INFO, "sock_timeout now %llu s",
			    (unsigned long long)(ns / KSOCK_NS_PER_S));
		net->timeout_ns = ns;
		net->tun.sock_timeout = (int)(ns / KSOCK_NS_PER_S);
	}
}

static void ksock_reaper_cb(struct ul_timer *t)
{
	struct ksock_net *net = (struct ksock_net *)((char *)t - offsetof(struct ksock_net, reaper));
	struct ksock_done done = { 0 };
	struct ksock_conn *c, *next;
	uint64_t now;

	int global = lnet_ni_global_lnd_timeout(net->ni);

	ksock_loop_enter(net);
	ksock_lock(net);
	ksock_timeout_refresh_locked(net, global);
	/* read under the lock: progress stamps written by senders before we
	 * got it must not be later than `now` (now - stamp would wrap) */
	now = ksock_now(net);
	for (c = net->hs_conns; c; c = next) {
		next = c->next;
		if (c->hs_deadline && now > c->hs_deadline) {
			char desc[160];

			ksock_conn_describe(c, desc, sizeof(desc));
			ksock_log_limited(net, KSOCK_RL_HS_TIMEOUT, "handshake timed out", &c->peer_sa,
					  ULNET_LOG_ERROR, "%s: handshake timed out, closing", desc);
			ksock_conn_close_locked(c, -ETIMEDOUT, false, &done);
		}
	}
	for (struct ksock_peer *p = net->peers, *pn; p; p = pn) {
		pn = p->next;
		ksock_reap_peer_locked(net, p, now, &done);
		if (ksock_peer_idle(p, now))
			ksock_peer_unlink_free(net, p);
	}
	net->reap_prev = now;
	ksock_unlock(net);
	ksock_done_run(net, &done);
	ksock_log_flush(net, false);
	ksock_link_resync(net);
	ul_timer_start(net->loop, &net->reaper, now + KSOCK_NS_PER_S);
}

/* --- startup / shutdown ---------------------------------------------------------- */

static int ksock_parse_accept(const char *s)
{
	if (!s[0] || !strcmp(s, "secure"))
		return 0;
	if (!strcmp(s, "all"))
		return 1;
	if (!strcmp(s, "none"))
		return 2;
	return -EINVAL;
}

/* Is the NI's address one of this host's? (bind to port 0 tells.) */
static int ksock_check_addr(struct ksock_net *net)
{
	int fd = ksock_socket(net, SOCK_STREAM | SOCK_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return fd;
	if (bind(fd, (struct sockaddr *)&net->sa, net->salen) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int ksock_startup(struct lnet_ni *ni)
{
	const struct ulnet_ni_conf *conf = lnet_ni_conf(ni);
	const ulnet_nid_t *nid = lnet_ni_nid(ni);
	struct ksock_net *net;
	struct ksock_tun tun;
	char why[160], note[160];
	int rc;

	if (nid->type != ULNET_LND_TCP)
		return -EINVAL;
	rc = ksock_parse_accept(conf->accept);
	if (rc < 0) {
		lnet_ni_log(ni, ULNET_LOG_ERROR, "invalid accept mode \"%.8s\" (secure, all, none)",
			    conf->accept);
		return rc;
	}
	if (nid->size != 0 && nid->size != 12)
		return -EINVAL;
	if (ksock_tun_resolve(conf, nid->size == 12 ? AF_INET6 : AF_INET, &tun, why, sizeof(why),
			      note, sizeof(note)) < 0) {
		lnet_ni_log(ni, ULNET_LOG_ERROR, "%s", why);
		return -EINVAL;
	}
	if (note[0])
		lnet_ni_log(ni, ULNET_LOG_WARN, "%s", note);
	if (conf->accept_backlog < 0 || conf->accept_backlog > KSOCK_ACCEPT_BACKLOG_MAX ||
	    (conf->accept_backlog && rc == 2)) {
		lnet_ni_log(ni, ULNET_LOG_ERROR, "invalid accept_backlog = %d (%s)",
			    conf->accept_backlog,
			    rc == 2 ? "accept \"none\" has no listener"
				    : "1..65535, 0 for the default 127");
		return -EINVAL;
	}
	if (conf->verify_peer_nid != 0 && conf->verify_peer_nid != 1) {
		lnet_ni_log(ni, ULNET_LOG_ERROR, "invalid verify_peer_nid = %d (0 or 1)",
			    conf->verify_peer_nid);
		return -EINVAL;
	}
	net = calloc(1, sizeof(*net));
	if (!net)
		return -ENOMEM;
	net->tun = tun;
	net->ni = ni;
	net->loop = lnet_ni_loop(ni);
	net->nid = *nid;
	net->accept_mode = rc;
	net->incarnation = lnet_ni_incarnation(ni);
	net->accept_port = conf->accept_port ? conf->accept_port : KSOCK_DEFAULT_PORT;
	/* unset: bulk connections go to accept_port too (one listener) */
	net->accept_port_bulk = conf->accept_port_bulk ? conf->accept_port_bulk : net->accept_port;
	net->nlis = net->accept_port_bulk != net->accept_port ? 2 : 1;
	for (int i = 0; i < KSOCK_LIS_N; i++) {
		net->lis[i].net = net;
		net->lis[i].fd = -1;
		net->lis[i].port = i == KSOCK_LIS_BULK ? net->accept_port_bulk : net->accept_port;
	}
	if (net->tun.sock_timeout == 0)   /* the global lnd_timeout */
		net->tun.sock_timeout = lnet_ni_global_lnd_timeout(ni);
	net->timeout_ns = (uint64_t)net->tun.sock_timeout * KSOCK_NS_PER_S;
	net->rtnl_fd = -1;
	/* before anything looks at addresses or makes a socket */
	ksock_netns_init(net);
	net->accept_backlog = conf->accept_backlog ? conf->accept_backlog : KSOCK_ACCEPT_BACKLOG;
	net->verify_peer_nid = conf->verify_peer_nid == 1;
	ul_rl_init(&net->rl, NULL);
	net->next_priv_port = KSOCK_PRIV_PORT_HI;
	net->loop_tid = 0;
	net->lock = 0;
	net->shutdown_cond = 0;
	ul_timer_init(&net->reaper, ksock_reaper_cb);
	ul_timer_init(&net->kick, ksock_kick_cb);

	if (nid->size == 0) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&net->sa;

		net->family = AF_INET;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, nid->addr, 4);
		net->salen = sizeof(*sin);
	} else if (nid->size == 12) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&net->sa;

		net->family = AF_INET6;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, nid->addr, 16);
		net->salen = sizeof(*sin6);
	} else {
		ksock_startup_fail_free(net);
		return -EINVAL;
	}

	/* Without the right to bind ports < 1024 we are a "user-space peer":
	 * the kernel identifies us by our source port and never calls back. */
	net->user_mode = !ksock_can_bind_privileged();
	net->pid = ulnet_pid(lnet_ni_instance(ni));
	if (net->user_mode)
		net->pid |= ULNET_PID_USERFLAG;

	rc = ksock_check_addr(net);
	if (rc == 0 && net->accept_mode != 2)
		rc = ksock_acceptor_start(net);
	if (rc < 0) {
		ksock_startup_fail_free(net);
		return rc;
	}
	lnet_ni_set_data(ni, net);
	ksock_link_watch_start(net);
	ul_timer_start(net->loop, &net->reaper, ksock_now(net) + KSOCK_NS_PER_S);
	if (net->user_mode)
		lnet_ni_log(ni, ULNET_LOG_INFO,
			    "no privileged ports: connecting as a user-space peer (pid %#x)", net->pid);
	return 0;
}

static void ksock_startup_fail_free(struct ksock_net *net)
{
	ksock_netns_fini(net);
	free(net);
}

/* Close everything and fail every message; must run where no loop callback
 * of ours can be running concurrently. */
static void ksock_shutdown_now(struct ksock_net *net)
{
	struct ksock_done done = { 0 };
	struct ksock_conn *c, *next;

	ksock_acceptor_stop(net);
	ksock_link_watch_stop(net);
	ul_timer_stop(net->loop, &net->reaper);
	ksock_log_flush(net, true);
	/* what the coalescing deferred was accepted by send(): write it (and
	 * push what MSG_MORE kept) before the conns close, as a direct write
	 * would have (manual progress: nobody may have turned the loop since) */
	ksock_flush_deferred(net);
	ksock_lock(net);
	net->shutdown = true;
	while (net->hs_conns)
		ksock_conn_close_locked(net->hs_conns, -ESHUTDOWN, false, &done);
	for (struct ksock_peer *p = net->peers; p; p = p->next) {
		while (p->conns)
			ksock_conn_close_locked(p->conns, -ESHUTDOWN, true, &done);
		while (p->txq_head) {
			struct ksock_tx *tx = p->txq_head;

			p->txq_head = tx->next;
			ksock_done_add(net, &done, tx, -ESHUTDOWN);
		}
		p->txq_tail = NULL;
		while (p->zc_head) {
			struct ksock_tx *tx = p->zc_head;

			KSOCK_PEEKED_SET(p->zc_head, tx->next);
			ksock_done_add(net, &done, tx, -ESHUTDOWN);
		}
	}
	ksock_unlock(net);
	ksock_done_run(net, &done);

	ul_timer_stop(net->loop, &net->kick);
	ksock_lock(net);
	/* conns still referenced (kick list, a recv() the core never made)
	 * die with the NI: no op is called after shutdown */
	for (c = net->kick_conns; c; c = next) {
		next = c->kick_next;
		c->kicked = false;
		c->refs--;
		if (c->refs == 0) {
			c->kick_next = net->dead_conns;
			net->dead_conns = c;
		}
	}
	net->kick_conns = NULL;
	c = net->dead_conns;
	net->dead_conns = NULL;
	ksock_unlock(net);
	for (; c; c = next) {
		next = c->kick_next;
		ksock_conn_free(c);
	}
	while (net->peers) {
		struct ksock_peer *p = net->peers;

		net->peers = p->next;
		free(p->acks);
		free(p);
	}
	free(net->peer_hash);
	net->peer_hash = NULL;
	net->peer_hash_size = 0;
	net->npeers = 0;
	net->peer_last = NULL;
	while (net->txblocks) {
		struct ksock_txblock *b = net->txblocks;

		net->txblocks = b->next;
		free(b);
	}
}

static void ksock_shutdown_timer_cb(struct ul_timer *t)
{
	struct ksock_net *net =
		(struct ksock_net *)((char *)t - offsetof(struct ksock_net, shutdown_timer));

	ksock_loop_enter(net);
	ksock_lock(net);
	if (net->shutdown_abandoned) {
		ksock_unlock(net);
		return;
	}
	net->shutdown_started = true;
	ksock_unlock(net);
	ksock_shutdown_now(net);
	ksock_lock(net);
	net->shutdown_done = true;
	ul_cond_broadcast(&net->shutdown_cond);
	ksock_unlock(net);
}

/* Is the thread that last ran our loop callbacks still alive? */
static bool ksock_loop_thread_alive(const struct ksock_net *net)
{
	int tid = __atomic_load_n(&net->loop_tid, __ATOMIC_RELAXED);

	if (tid <= 0)
		return false;
	return syscall(SYS_tgkill, getpid(), tid, 0) == 0;
}

static void ksock_shutdown(struct lnet_ni *ni)
{
	struct ksock_net *net = lnet_ni_data(ni);
	int self = (int)syscall(SYS_gettid);

	if (!net)
		return;
	if (__atomic_load_n(&net->loop_tid, __ATOMIC_RELAXED) != self &&
	    ksock_loop_thread_alive(net)) {
		/* Another thread runs the loop: do it there, so no callback of
		 * ours races with the teardown. If the loop does not turn within
		 * a while, it is not being run: do it here. */
		struct timespec ts;
		bool inline_it = false;

		ul_timer_init(&net->shutdown_timer, ksock_shutdown_timer_cb);
		ul_timer_start(net->loop, &net->shutdown_timer, 0);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 500 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		ksock_lock(net);
		while (!net->shutdown_done) {
			/* once the loop has started it, wait for the end without a
			 * deadline (a past one would make this spin) */
			const struct timespec *until = net->shutdown_started ? NULL : &ts;

			if (ul_cond_wait(&net->shutdown_cond, &net->lock, until) == -ETIMEDOUT &&
			    !net->shutdown_started) {
				net->shutdown_abandoned = true;
				inline_it = true;
				break;
			}
		}
		ksock_unlock(net);
		if (inline_it) {
			ul_timer_stop(net->loop, &net->shutdown_timer);
			ksock_shutdown_now(net);
		}
	} else {
		ksock_shutdown_now(net);
	}
	lnet_ni_set_data(ni, NULL);
	ksock_netns_fini(net);
	free(net);
}

/* What lnetctl shows as "lnd tunables" (conns_per_peer, timeout, tos): the
 * values in effect, resolved from the conf as startup did (no NI state is
 * touched, so this is safe against a concurrent shutdown). */
static void ksock_ni_info(struct lnet_ni *ni, struct ulnet_ni_info *info)
{
	const ulnet_nid_t *nid = lnet_ni_nid(ni);
	struct ksock_tun tun;
	char why[160];

	if (ksock_tun_resolve(lnet_ni_conf(ni), nid->size == 12 ? AF_INET6 : AF_INET, &tun, why,
			      sizeof(why), NULL, 0) < 0)
		return;
	if (tun.sock_timeout > 0)   /* else the global one the core filled in */
		info->lnd_timeout = tun.sock_timeout;
	info->tun.conns_per_peer = lnet_ni_conns_per_peer(ni);
	info->tun.tos = tun.tos;
}

static void ksock_notify_peer_down(struct lnet_ni *ni, const ulnet_nid_t *nid)
{
	struct ksock_net *net = lnet_ni_data(ni);
	struct ksock_done done = { 0 };
	struct ksock_peer *peer;

	if (!net)
		return;
	/* A transaction timed out: if that peer has nothing in flight on its
	 * conns, they are fine; otherwise let the reaper judge. We only make
	 * sure a failing peer is redialled without waiting for back-off. */
	ksock_lock(net);
	peer = ksock_peer_find(net, nid);
	if (peer && !peer->conns && peer->txq_head)
		peer->retry_at = 0;
	ksock_unlock(net);
	ksock_done_run(net, &done);
}

const struct ulnet_lnd ksocklnd = {
	.type = ULNET_LND_TCP,
	.name = "tcp",
	.startup = ksock_startup,
	.shutdown = ksock_shutdown,
	.send = ksock_send,
	.recv = ksock_recv,
	.ni_info = ksock_ni_info,
	.notify_peer_down = ksock_notify_peer_down,
	.flush = ksock_flush,
	.link_state = ksock_link_state,
	.conn_list = ksock_conn_list,
	.shared_fini = ksock_shared_fini,
};
