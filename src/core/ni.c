/* SPDX-License-Identifier: MIT */
/*
 * ni.c - network interfaces: add/del/list, the accessors an LND uses, NI
 * info, and shutdown.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/ni_thread.h"
#include "core/udsp.h"

/* --- accessors of lnd.h ------------------------------------------------------- */

ulnet_t *lnet_ni_instance(const struct lnet_ni *ni) { return ni->ni_ln; }
const ulnet_nid_t *lnet_ni_nid(const struct lnet_ni *ni) { return &ni->ni_nid; }
const struct ulnet_ni_conf *lnet_ni_conf(const struct lnet_ni *ni) { return &ni->ni_conf; }
void lnet_ni_set_data(struct lnet_ni *ni, void *data) { ni->ni_data = data; }
void *lnet_ni_data(const struct lnet_ni *ni) { return ni->ni_data; }
struct ul_loop *lnet_ni_loop(const struct lnet_ni *ni)
{
	return ni->ni_loop ? ni->ni_loop : ni->ni_ln->ln_loop;
}
void **lnet_ni_lnd_shared(const struct lnet_ni *ni) { return &ni->ni_ln->ln_lnd_shared[ni->ni_lnd->type & 0xff]; }
uint64_t lnet_ni_now(const struct lnet_ni *ni) { return lnet_now(ni->ni_ln); }
uint64_t lnet_ni_incarnation(const struct lnet_ni *ni) { return ni->ni_incarnation; }

void lnet_ni_log(const struct lnet_ni *ni, enum ulnet_log_level lvl, const char *fmt, ...)
{
	char nid[ULNET_NIDSTR_SIZE], msg[448];
	va_list ap;

	if (lvl > ni->ni_ln->ln_log.level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lnet_log(ni->ni_ln, lvl, "%s: %s", lnet_nidstr(&ni->ni_nid, nid), msg);
}

bool lnet_ni_log_enabled(const struct lnet_ni *ni, enum ulnet_log_level lvl)
{
	return lvl <= ni->ni_ln->ln_log.level;
}

int ulnet_lnd_timeout(const struct ulnet_globals *g)
{
	int t = (g->transaction_timeout - 1) / (g->retry_count + 1);

	return t >= 1 ? t : 1;
}

int lnet_ni_global_lnd_timeout(struct lnet_ni *ni)
{
	ulnet_t *ln = ni->ni_ln;
	int t;

	lnet_lock(ln);
	t = ulnet_lnd_timeout(&ln->ln_g);
	lnet_unlock(ln);
	return t;
}

/* --- lookups -------------------------------------------------------------------- */

struct lnet_ni *lnet_nid2ni_walk_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (lnet_nid_eq(&ni->ni_nid, nid))
			return ni;
	}
	return NULL;
}

void lnet_net_cache_fill_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct lnet_ni *only = NULL;
	struct ul_list *pos;
	int n = 0;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni->ni_up && ulnet_nid_net(&ni->ni_nid) == net) {
			only = ni;
			n++;
		}
	}
	ln->ln_net_cache.nc_gen = ln->ln_ni_gen;
	ln->ln_net_cache.nc_net = net;
	ln->ln_net_cache.nc_nnis = n;
	ln->ln_net_cache.nc_only = n == 1 ? only : NULL;
}

void lnet_ni_free_locked(struct lnet_ni *ni)
{
	LASSERT(!ni->ni_up);
	free(ni);
}

/* --- add / del -------------------------------------------------------------------- */

static void lnet_ni_fill_defaults(struct ulnet_ni_conf *c, bool lo)
{
	struct ulnet_ni_tunables *t = &c->tun;

	if (lo) {
		/* the kernel's 0@lo has no credits and no tunables */
		memset(t, 0, sizeof(*t));
		t->tos = -1;
		return;
	}
	if (!t->peer_timeout)
		t->peer_timeout = 180;
	if (!t->peer_credits)
		t->peer_credits = 8;
	if (!t->credits)
		t->credits = 256;
	if (!t->tos)
		t->tos = -1;
	if (!c->accept_port)
		c->accept_port = 988;
	if (!c->accept[0])
		snprintf(c->accept, sizeof(c->accept), "secure");
}

static struct lnet_ni *lnet_ni_alloc(ulnet_t *ln, const struct ulnet_ni_conf *conf,
				     const struct ulnet_lnd *lnd, bool lo)
{
	struct lnet_ni *ni = calloc(1, sizeof(*ni));

	if (!ni)
		return NULL;
	ni->ni_ln = ln;
	ni->ni_nid = conf->nid;
	ni->ni_conf = *conf;
	ni->ni_conf.iface[sizeof(ni->ni_conf.iface) - 1] = '\0';
	ni->ni_conf.accept[sizeof(ni->ni_conf.accept) - 1] = '\0';
	lnet_ni_fill_defaults(&ni->ni_conf, lo);
	ni->ni_lnd = lnd;
	ni->ni_incarnation = lnet_now(ln);
	ni->ni_rtr_ping_last = ni->ni_incarnation;
	ni->ni_refcount = 1; /* the NI list */
	ni->ni_status = LNET_NI_STATUS_UP;
	ni->ni_tx_credits = ni->ni_tx_credits_max = ni->ni_tx_credits_min = ni->ni_conf.tun.credits;
	ul_list_init(&ni->ni_tx_delayed);
	ul_list_init(&ni->ni_list);
	ni->ni_health.health_value = lo ? 0 : 1000;
	ni->ni_sel_prio = ni->ni_net_sel_prio = ULNET_UDSP_PRIO_NONE;
	return ni;
}

int lnet_ni_add_locked_lo(ulnet_t *ln)
{
	struct ulnet_ni_conf conf;
	struct lnet_ni *ni;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.nid = ULNET_NID_LO0;
	ni = lnet_ni_alloc(ln, &conf, &lnet_lolnd, true);
	if (!ni)
		return -ENOMEM;
	rc = lnet_lolnd.startup(ni);
	if (rc) {
		free(ni);
		return rc;
	}
	ni->ni_up = true;
	ul_list_add(&ni->ni_list, &ln->ln_nis);
	ln->ln_nnis++;
	ln->ln_loni = ni;
	lnet_ni_list_changed_locked(ln);
	lnet_udsp_ni_added_locked(ln, ni);
	return 0;
}

int ulnet_ni_add(ulnet_t *ln, const struct ulnet_ni_conf *conf)
{
	const struct ulnet_lnd *lnd;
	struct lnet_ni *ni;
	char nidbuf[ULNET_NIDSTR_SIZE];
	int rc;

	if (!ln || !conf)
		return -EINVAL;
	if (ulnet_nid_is_any(&conf->nid) || conf->nid.type == ULNET_LND_LO)
		return -EINVAL;
	if (conf->nid.size != 0 && conf->nid.size != 12)
		return -EINVAL;
	if (conf->tun.peer_credits < 0 || conf->tun.credits < 0 || conf->tun.peer_timeout < 0 ||
	    conf->tun.peer_buffer_credits < 0 || conf->tun.conns_per_peer < 0)
		return -EINVAL;
	if (conf->sock.nscheds < 0 || conf->sock.nscheds > 1 ||
	    (conf->sock.nscheds && conf->nid.type != ULNET_LND_TCP))
		return -EINVAL;

	lnet_lock(ln);
	if (ln->ln_state != LNET_STATE_RUNNING) {
		lnet_unlock(ln);
		return -ESHUTDOWN;
	}
	lnd = ln->ln_lnds[conf->nid.type];
	if (!lnd) {
		lnet_unlock(ln);
		return -EPROTONOSUPPORT;
	}
	if (lnet_nid2ni_locked(ln, &conf->nid)) {
		lnet_unlock(ln);
		return -EEXIST;
	}
	lnet_unlock(ln);

	ni = lnet_ni_alloc(ln, conf, lnd, false);
	if (!ni)
		return -ENOMEM;
	if (ni->ni_conf.tun.peer_credits > ni->ni_conf.tun.credits) {
		free(ni);
		return -EINVAL;
	}
	/* its thread first: startup() gives the LND lnet_ni_loop() */
	if (lnet_ni_wants_thread(ni)) {
		rc = lnet_ni_thread_start(ni);
		if (rc) {
			free(ni);
			return rc;
		}
	}
	/* startup may block (binding, threads): no lock */
	rc = lnd->startup(ni);
	if (rc) {
		lnet_log(ln, ULNET_LOG_ERROR, "can't start NI %s: %s",
			 lnet_nidstr(&conf->nid, nidbuf), ulnet_strerror(rc));
		lnet_ni_loop_release(ni);
		free(ni);
		return rc;
	}

	lnet_lock(ln);
	if (lnet_nid2ni_locked(ln, &conf->nid) || ln->ln_state != LNET_STATE_RUNNING) {
		rc = ln->ln_state != LNET_STATE_RUNNING ? -ESHUTDOWN : -EEXIST;
		lnet_unlock(ln);
		lnet_ni_thread_stop(ni);
		lnd->shutdown(ni);
		lnet_ni_loop_release(ni);
		free(ni);
		return rc;
	}
	ni->ni_up = true;
	ul_list_add_tail(&ni->ni_list, &ln->ln_nis);
	ln->ln_nnis++;
	lnet_ni_list_changed_locked(ln);
	lnet_udsp_ni_added_locked(ln, ni);
	lnet_peer_net_added_locked(ln, ulnet_nid_net(&ni->ni_nid));
	if (!ln->ln_log_prefix[0]) {
		lnet_nidstr(&ni->ni_nid, ln->ln_log_prefix);
		ln->ln_log.prefix = ln->ln_log_prefix;
	}
	lnet_unlock(ln);

	lnet_log(ln, ULNET_LOG_INFO, "added NI %s", lnet_nidstr(&conf->nid, nidbuf));
	lnet_ping_target_update(ln);
	return 0;
}

/* Take `ni` out of service and shut its LND side down; the memory goes when
 * the last message lets go of it. */
static void lnet_ni_shutdown(ulnet_t *ln, struct lnet_ni *ni)
{
	struct ul_list delayed;
	struct lnet_sendq q;

	ul_list_init(&delayed);
	lnet_sendq_init(&q);
	lnet_lock(ln);
	LASSERT(ni->ni_up);
	ni->ni_up = false;
	ul_list_del(&ni->ni_list);
	ln->ln_nnis--;
	if (ni == ln->ln_loni)
		ln->ln_loni = NULL;
	if (lnet_ni_fatal(ni))
		ln->ln_nfatal--;
	lnet_ni_list_changed_locked(ln);
	lnet_udsp_ni_removed_locked(ln);
	lnet_ptl_take_delayed_locked(ln, ni, &delayed);
	lnet_fail_queued_locked(ln, ni, &q, -ESHUTDOWN);
	/* a link_state or conn_list op started before ni_up went false
	 * still uses the LND's state: each is short and waits for nothing
	 * but the LND's own lock, so wait it out */
	for (int i = 0; (ni->ni_link_busy || ni->ni_conns_busy) && i < 100000; i++) {
		lnet_unlock(ln);
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
		lnet_lock(ln);
	}
	lnet_unlock(ln);

	lnet_drop_delayed_msg_list(ln, &delayed, "NI shut down");
	lnet_sendq_flush(ln, &q);
	/* no callback of its LND runs while shutdown() does */
	lnet_ni_thread_stop(ni);
	ni->ni_lnd->shutdown(ni);
	lnet_ni_loop_release(ni);

	lnet_lock(ln);
	lnet_ni_decref_locked(ni);
	lnet_unlock(ln);
}

int ulnet_ni_del(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct lnet_ni *ni;

	if (!ln || !nid)
		return -EINVAL;
	lnet_lock(ln);
	ni = lnet_nid2ni_locked(ln, nid);
	if (!ni) {
		lnet_unlock(ln);
		return -ENOENT;
	}
	if (ni->ni_lnd == &lnet_lolnd) {
		lnet_unlock(ln);
		return -EINVAL;
	}
	lnet_unlock(ln);

	lnet_ni_shutdown(ln, ni);
	lnet_ping_target_update(ln);
	return 0;
}

void lnet_ni_shutdown_all(ulnet_t *ln)
{
	for (;;) {
		struct lnet_ni *ni;

		lnet_lock(ln);
		/* 0@lo last: the others may still loop back through it */
		ni = ul_list_empty(&ln->ln_nis) ? NULL
						: ul_container_of(ln->ln_nis.prev, struct lnet_ni, ni_list);
		lnet_unlock(ln);
		if (!ni)
			break;
		lnet_ni_shutdown(ln, ni);
	}
}

int ulnet_ni_list(ulnet_t *ln, ulnet_nid_t *nids, int max)
{
	struct ul_list *pos;
	int n = 0;

	if (!ln || max < 0 || (max > 0 && !nids))
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (n < max)
			nids[n] = ni->ni_nid;
		n++;
	}
	lnet_unlock(ln);
	return n;
}

int ulnet_ni_info(ulnet_t *ln, int index, struct ulnet_ni_info *info)
{
	struct ul_list *pos;
	struct lnet_ni *ni = NULL;
	int i = 0, sock_timeout;

	if (!ln || !info || index < 0)
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		if (i++ == index) {
			ni = ul_container_of(pos, struct lnet_ni, ni_list);
			break;
		}
	}
	if (!ni) {
		lnet_unlock(ln);
		return -ENOENT;
	}
	memset(info, 0, sizeof(*info));
	info->nid = ni->ni_nid;
	info->up = ni->ni_up && ni->ni_status == LNET_NI_STATUS_UP;
	memcpy(info->iface, ni->ni_conf.iface, sizeof(info->iface));
	info->send_count = lnet_type_counts_sum(&ni->ni_sent);
	info->recv_count = lnet_type_counts_sum(&ni->ni_received);
	info->drop_count = lnet_type_counts_sum(&ni->ni_dropped);
	info->put_egress = lnet_latency_get(&ni->ni_put_egress);
	info->get_rtt = lnet_latency_get(&ni->ni_get_rtt);
	info->put_ack = lnet_latency_get(&ni->ni_put_ack);
	info->sent = ni->ni_sent;
	info->received = ni->ni_received;
	info->dropped = ni->ni_dropped;
	info->sent_bytes = ni->ni_sent_bytes;
	info->received_bytes = ni->ni_received_bytes;
	info->dropped_bytes = ni->ni_dropped_bytes;
	info->health = ni->ni_health;
	info->health.in_recovery = lnet_ni_in_recovery_locked(ln, ni);
	info->tun = ni->ni_conf.tun;
	info->lnd_timeout = ulnet_lnd_timeout(&ln->ln_g);
	info->credits_max = ni->ni_tx_credits_max;
	info->credits_avail = ni->ni_tx_credits;
	info->credits_min = ni->ni_tx_credits_min;
	info->dev_cpt = -1;
	info->peer_credits = ni->ni_conf.tun.peer_credits;
	info->udsp_net_prio = ni->ni_net_sel_prio;
	info->udsp_nid_prio = ni->ni_sel_prio;
	sock_timeout = ni->ni_conf.sock.sock_timeout;
	lnet_ni_addref_locked(ni);
	lnet_unlock(ln);
	/* the LND may refine (its own timeout); no lock across LND ops */
	if (ni->ni_lnd->ni_info)
		ni->ni_lnd->ni_info(ni, info);
	/* a timeout set in the conf (or by net set --lnd-timeout) wins; -1
	 * follows the global one, filled in above */
	if (sock_timeout > 0 && ni->ni_nid.type == ULNET_LND_TCP)
		info->lnd_timeout = sock_timeout;
	lnet_lock(ln);
	lnet_ni_decref_locked(ni);
	lnet_unlock(ln);
	return 0;
}

/* --- runtime settings (lnetctl net set) ------------------------------------- */

int ulnet_ni_set_health(ulnet_t *ln, const ulnet_nid_t *nid, int value)
{
	struct ul_list *pos;
	bool found = false, changed = false;

	if (!ln || value < 0 || value > ULNET_MAX_HEALTH)
		return -EINVAL;
	if (nid && nid->type == ULNET_LND_LO)
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);
		uint32_t st = ni->ni_status;

		if (ni == ln->ln_loni || (nid && !lnet_nid_eq(&ni->ni_nid, nid)))
			continue;
		found = true;
		ni->ni_health.health_value = value;
		/* status follows the extremes, as the kernel (a link held
		 * down keeps it down); below full health, recovery pings it
		 * back (lnet_ni_set_healthv()) */
		if (value == 0)
			ni->ni_status = LNET_NI_STATUS_DOWN;
		else if (value == ULNET_MAX_HEALTH && !lnet_ni_fatal(ni))
			ni->ni_status = LNET_NI_STATUS_UP;
		changed |= st != ni->ni_status;
		if (value < ULNET_MAX_HEALTH)
			lnet_recovery_arm_locked(ln);
	}
	lnet_unlock(ln);
	if (!found)
		return nid ? -ENOENT : 0;
	if (changed)
		lnet_ping_target_update(ln);
	return 0;
}

int lnet_ni_conns_per_peer(const struct lnet_ni *ni)
{
	int v = __atomic_load_n(&ni->ni_conf.tun.conns_per_peer, __ATOMIC_RELAXED);

	if (v <= 0)
		v = __atomic_load_n(&ni->ni_cpp_auto, __ATOMIC_RELAXED);
	return v > 0 ? v : 1;
}

void lnet_ni_set_conns_per_peer_auto(struct lnet_ni *ni, int value)
{
	__atomic_store_n(&ni->ni_cpp_auto, value, __ATOMIC_RELAXED);
}

int lnet_ni_conns_per_peer_conf(const struct lnet_ni *ni)
{
	return __atomic_load_n(&ni->ni_conf.tun.conns_per_peer, __ATOMIC_RELAXED);
}

int ulnet_ni_set_conns_per_peer(ulnet_t *ln, const ulnet_nid_t *nid, int value)
{
	struct ul_list *pos;
	int rc = -ENOENT;

	if (!ln || value < 0 || value > 127)
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (nid && !lnet_nid_eq(&ni->ni_nid, nid))
			continue;
		if (ni->ni_nid.type != ULNET_LND_TCP) {
			if (nid)
				rc = -EINVAL;
			continue;
		}
		/* Atomic: the LND reads it without our lock. */
		__atomic_store_n(&ni->ni_conf.tun.conns_per_peer, value, __ATOMIC_RELAXED);
		rc = 0;
	}
	lnet_unlock(ln);
	return rc;
}

int ulnet_net_set_lnd_timeout(ulnet_t *ln, ulnet_net_t net, int seconds)
{
	struct ul_list *pos;
	int rc = -ENOENT;

	if (!ln || seconds < 0)
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ulnet_nid_net(&ni->ni_nid) != net)
			continue;
		if (ni->ni_nid.type != ULNET_LND_TCP) {
			rc = -EINVAL;
			continue;
		}
		/* Atomic: the socklnd reaper reads it without our lock. 0:
		 * the global lnd_timeout (-1 in the conf, where 0 is unset) */
		__atomic_store_n(&ni->ni_conf.sock.sock_timeout, seconds ? seconds : -1,
				 __ATOMIC_RELAXED);
		rc = 0;
	}
	lnet_unlock(ln);
	return rc;
}
