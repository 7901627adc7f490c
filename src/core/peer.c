/* SPDX-License-Identifier: MIT */
/*
 * peer.c - the peer table: peers (one per remote node) own peer NIs (one per
 * remote NID), found by NID through a hash. Peer NIs carry the tx credits and
 * the per-NID counters. Peers are created on first contact, in either
 * direction, or by hand (ulnet_peer_add).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/route.h"
#include "core/router.h"
#include "core/udsp.h"

#define LNET_PNI_HASH_SIZE 256

/* Every receive and send looks a peer NI up: two 64-bit multiplies over
 * the 20 bytes, and a multiply-shift instead of a division into `size`. */
static unsigned lnet_nid_hash(const ulnet_nid_t *nid, unsigned size)
{
	uint64_t a, b, h;

	memcpy(&a, nid->addr, 8);
	memcpy(&b, nid->addr + 8, 8);
	h = (a ^ ((uint64_t)nid->type << 56 | (uint64_t)nid->num << 40 | nid->size)) *
	    0x9e3779b97f4a7c15ULL;
	h = (h ^ (h >> 29) ^ b) * 0xbf58476d1ce4e5b9ULL;
	return (unsigned)(((h >> 32) * (uint64_t)size) >> 32);
}

int lnet_peer_tables_init(ulnet_t *ln)
{
	unsigned i;

	lnet_recovery_init(ln);
	ul_list_init(&ln->ln_peers);
	ln->ln_pni_hash = malloc(LNET_PNI_HASH_SIZE * sizeof(*ln->ln_pni_hash));
	if (!ln->ln_pni_hash)
		return -ENOMEM;
	ln->ln_pni_hash_size = LNET_PNI_HASH_SIZE;
	for (i = 0; i < LNET_PNI_HASH_SIZE; i++)
		ul_list_init(&ln->ln_pni_hash[i]);
	return 0;
}

static void lnet_peer_free(struct lnet_peer *lp)
{
	free(lp->lp_ping_buf);
	free(lp->lp_push_buf);
	free(lp->lp_data);
	free(lp);
}

void lnet_peer_tables_fini(ulnet_t *ln)
{
	unsigned i;

	if (!ln->ln_pni_hash)
		return;
	if (ln->ln_loop)
		ul_timer_stop(ln->ln_loop, &ln->ln_recovery_timer);
	ln->ln_pni_last = NULL;
	for (i = 0; i < ln->ln_pni_hash_size; i++) {
		struct lnet_peer_ni *lpni;

		while ((lpni = ul_list_first(&ln->ln_pni_hash[i], struct lnet_peer_ni, lpni_hash))) {
			ul_list_del(&lpni->lpni_hash);
			lnet_udsp_lpni_fini(lpni);
			free(lpni);
		}
	}
	while (!ul_list_empty(&ln->ln_peers)) {
		struct lnet_peer *lp = ul_list_first(&ln->ln_peers, struct lnet_peer, lp_list);

		ul_list_del(&lp->lp_list);
		lnet_peer_free(lp);
	}
	free(ln->ln_pni_hash);
	ln->ln_pni_hash = NULL;
}

struct lnet_peer_ni *lnet_peer_ni_find_hash_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct ul_list *head, *pos;

	head = &ln->ln_pni_hash[lnet_nid_hash(nid, ln->ln_pni_hash_size)];
	ul_list_for_each(pos, head) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_hash);

		if (lnet_nid_eq(&lpni->lpni_nid, nid)) {
			ln->ln_pni_last = lpni;
			return lpni;
		}
	}
	return NULL;
}

void lnet_peer_ni_free_locked(struct lnet_peer_ni *lpni)
{
	LASSERT(!lpni->lpni_peer && ul_list_empty(&lpni->lpni_txq));
	lnet_udsp_lpni_fini(lpni);
	free(lpni);
}

void lnet_peer_decref_locked(ulnet_t *ln, struct lnet_peer *lp)
{
	(void)ln;
	LASSERT(lp->lp_refcount > 0);
	if (--lp->lp_refcount == 0) {
		LASSERT(lp->lp_removed && ul_list_empty(&lp->lp_nis));
		lnet_peer_free(lp);
	}
}

static struct lnet_peer *lnet_peer_alloc_locked(ulnet_t *ln, const ulnet_nid_t *primary)
{
	struct lnet_peer *lp = calloc(1, sizeof(*lp));

	if (!lp)
		return NULL;
	lp->lp_primary = *primary;
	ul_list_init(&lp->lp_nis);
	ul_list_init(&lp->lp_pending);
	lp->lp_refcount = 1; /* ln_peers */
	ul_list_add_tail(&lp->lp_list, &ln->ln_peers);
	ln->ln_npeers++;
	return lp;
}

/* The peer credits of a NID's net (the first NI of ours there that sets
 * them); *rtr: its router credits (peer_buffer_credits if set, else the
 * peer credits, as the kernel's lnet_peer_buffer_credits()). None on a net
 * we have no NI on (a gateway's NI on a remote net, a routed peer): the
 * kernel shows 0 there, and nothing is sent to such a peer NI directly; an
 * NI added on its net later gives them (lnet_peer_net_added_locked()). */
static int lnet_peer_credits_for_locked(ulnet_t *ln, const ulnet_nid_t *nid, int *rtr)
{
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ulnet_nid_net(&ni->ni_nid) == ulnet_nid_net(nid) && ni->ni_conf.tun.peer_credits) {
			*rtr = ni->ni_conf.tun.peer_buffer_credits > 0 ? ni->ni_conf.tun.peer_buffer_credits
								       : ni->ni_conf.tun.peer_credits;
			return ni->ni_conf.tun.peer_credits;
		}
	}
	*rtr = 0;
	return 0;
}

void lnet_peer_net_added_locked(ulnet_t *ln, ulnet_net_t net)
{
	for (unsigned b = 0; b < ln->ln_pni_hash_size; b++) {
		struct ul_list *pos;

		ul_list_for_each(pos, &ln->ln_pni_hash[b]) {
			struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_hash);
			int credits, rtr;

			if (lpni->lpni_maxtxcredits || ulnet_nid_net(&lpni->lpni_nid) != net)
				continue;
			credits = lnet_peer_credits_for_locked(ln, &lpni->lpni_nid, &rtr);
			lpni->lpni_txcredits = lpni->lpni_mintxcredits = lpni->lpni_maxtxcredits = credits;
			lpni->lpni_rtrcredits = lpni->lpni_minrtrcredits = lpni->lpni_maxrtrcredits = rtr;
		}
	}
}

/*
 * Put a NI in its peer's list as the kernel orders them (a peer's NIs
 * grouped by net, the nets in the order they first came, the NIs of a net
 * in the order they came): the primary NI first, any other after the last
 * NI of its net, or last.
 */
static void lnet_peer_ni_link_locked(struct lnet_peer *lp, struct lnet_peer_ni *lpni)
{
	ulnet_net_t net = ulnet_nid_net(&lpni->lpni_nid);
	struct ul_list *pos, *after = NULL;

	if (lnet_nid_eq(&lpni->lpni_nid, &lp->lp_primary)) {
		ul_list_add(&lpni->lpni_peer_list, &lp->lp_nis);
		return;
	}
	ul_list_for_each(pos, &lp->lp_nis) {
		struct lnet_peer_ni *o = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);

		if (ulnet_nid_net(&o->lpni_nid) == net)
			after = pos;
	}
	if (after)
		ul_list_add(&lpni->lpni_peer_list, after);
	else
		ul_list_add_tail(&lpni->lpni_peer_list, &lp->lp_nis);
}

static struct lnet_peer_ni *lnet_peer_ni_alloc_locked(ulnet_t *ln, struct lnet_peer *lp,
						      const ulnet_nid_t *nid)
{
	struct lnet_peer_ni *lpni = calloc(1, sizeof(*lpni));
	int credits, rtr;

	if (!lpni)
		return NULL;
	lpni->lpni_nid = *nid;
	lpni->lpni_refcount = 1; /* the table */
	credits = lnet_peer_credits_for_locked(ln, nid, &rtr);
	lpni->lpni_txcredits = lpni->lpni_mintxcredits = lpni->lpni_maxtxcredits = credits;
	lpni->lpni_rtrcredits = lpni->lpni_minrtrcredits = lpni->lpni_maxrtrcredits = rtr;
	ul_list_init(&lpni->lpni_rtrq);
	ul_list_init(&lpni->lpni_txq);
	/* a peer NI is taken to be alive until something says otherwise
	 * (unless check_routers_before_use): a router forwards to it at once
	 * (peer aliveness, send.c) */
	lpni->lpni_ns_status = ln->ln_rtr_params.check_routers_before_use ? LNET_NI_STATUS_DOWN
									   : LNET_NI_STATUS_UP;
	lpni->lpni_health.health_value = 1000;
	ul_list_add_tail(&lpni->lpni_hash, &ln->ln_pni_hash[lnet_nid_hash(nid, ln->ln_pni_hash_size)]);
	lpni->lpni_peer = lp;
	lnet_peer_ni_link_locked(lp, lpni);
	lp->lp_nnis++;
	lnet_udsp_lpni_added_locked(ln, lpni);
	return lpni;
}

/* Take a peer NI out of its peer and of the table. */
void lnet_peer_ni_remove_locked(ulnet_t *ln, struct lnet_peer_ni *lpni)
{
	struct lnet_peer *lp = lpni->lpni_peer;

	ul_list_del(&lpni->lpni_hash);
	if (ln->ln_pni_last == lpni)
		ln->ln_pni_last = NULL;
	if (lp) {
		ul_list_del(&lpni->lpni_peer_list);
		lp->lp_nnis--;
		lpni->lpni_peer = NULL;
	}
	lnet_peer_ni_decref_locked(ln, lpni);
}

struct lnet_peer_ni *lnet_peer_ni_get_slow_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct lnet_peer_ni *lpni = lnet_peer_ni_find_hash_locked(ln, nid);
	struct lnet_peer *lp;

	if (lpni)
		return lpni;
	lp = lnet_peer_alloc_locked(ln, nid);
	if (!lp)
		return NULL;
	lpni = lnet_peer_ni_alloc_locked(ln, lp, nid);
	if (!lpni) {
		lp->lp_removed = true;
		ul_list_del(&lp->lp_list);
		ln->ln_npeers--;
		lnet_peer_decref_locked(ln, lp);
	}
	return lpni;
}

void lnet_peer_primary_nid_locked(ulnet_t *ln, const ulnet_nid_t *nid, ulnet_nid_t *primary)
{
	struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, nid);

	*primary = lpni && lpni->lpni_peer ? lpni->lpni_peer->lp_primary : *nid;
}

bool lnet_peer_same_locked(void *arg, const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	ulnet_t *ln = arg;
	struct lnet_peer_ni *pa = lnet_peer_ni_find_locked(ln, a);
	struct lnet_peer_ni *pb = lnet_peer_ni_find_locked(ln, b);
	char na[ULNET_NIDSTR_SIZE], nb[ULNET_NIDSTR_SIZE];

	if (!pa || !pb || !pa->lpni_peer || pa->lpni_peer != pb->lpni_peer)
		return false;
	lnet_log(ln, ULNET_LOG_WARN, "message from %s matched ME of %s: same peer, accepted",
		 lnet_nidstr(b, nb), lnet_nidstr(a, na));
	return true;
}

static void lnet_peer_delete_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_sendq *q);

int lnet_peer_add_nid_locked(ulnet_t *ln, struct lnet_peer *lp, const ulnet_nid_t *nid)
{
	struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, nid);

	if (lpni) {
		struct lnet_peer *old = lpni->lpni_peer;
		bool take_lock = false;
		struct lnet_sendq q;

		if (old == lp)
			return 0;
		/* The primary NID of a locked peer: a configured peer keeps
		 * it; so does one with other NIDs too, both peers then marked
		 * as badly configured. Otherwise it comes here, and stays a
		 * locked primary NID: this peer's, unless this one's own was
		 * locked earlier (the kernel's lnet_peer_add_nid()). */
		if ((old->lp_state & LNET_PEER_LOCK_PRIMARY) &&
		    lnet_nid_eq(&old->lp_primary, nid)) {
			char n1[ULNET_NIDSTR_SIZE], n2[ULNET_NIDSTR_SIZE], n3[ULNET_NIDSTR_SIZE];

			if (old->lp_state & LNET_PEER_CONFIGURED)
				return -EEXIST;
			if (old->lp_nnis > 1) {
				old->lp_state |= LNET_PEER_BAD_CONFIG;
				lp->lp_state |= LNET_PEER_BAD_CONFIG;
				lnet_log(ln, ULNET_LOG_ERROR, "peer %s NID %s is already locked with peer %s",
					 lnet_nidstr(&lp->lp_primary, n1), lnet_nidstr(nid, n2),
					 lnet_nidstr(&old->lp_primary, n3));
				return -EEXIST;
			}
			take_lock = !(lp->lp_state & LNET_PEER_LOCK_PRIMARY) ||
				    old->lp_prim_lock_seq < lp->lp_prim_lock_seq;
		}
		/* the NID moves to this peer (it was learnt as a peer of its
		 * own before discovery told us better) */
		ul_list_del(&lpni->lpni_peer_list);
		old->lp_nnis--;
		lpni->lpni_peer = lp;
		lnet_peer_ni_link_locked(lp, lpni);
		lp->lp_nnis++;
		if (take_lock) {
			/* linked first: it keeps its place among the NIs */
			lp->lp_primary = *nid;
			lp->lp_state |= LNET_PEER_LOCK_PRIMARY;
			lp->lp_prim_lock_seq = old->lp_prim_lock_seq;
		}
		if (old->lp_nnis == 0 && !(old->lp_state & LNET_PEER_CONFIGURED)) {
			lnet_sendq_init(&q);
			lnet_peer_delete_locked(ln, old, &q);
			/* only discovery-queued messages can be there; the
			 * new owner is being discovered, so park them on it */
			ul_list_splice_tail(&q.sq_send, &lp->lp_pending);
		}
		return 0;
	}
	lpni = lnet_peer_ni_alloc_locked(ln, lp, nid);
	return lpni ? 0 : -ENOMEM;
}

/* Remove a peer; messages it held for discovery go to q->sq_send unsent
 * (the caller re-sends or fails them). */
static void lnet_peer_delete_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_sendq *q)
{
	lnet_peer_cancel_discovery_locked(ln, lp);
	while (!ul_list_empty(&lp->lp_nis)) {
		struct lnet_peer_ni *lpni = ul_list_first(&lp->lp_nis, struct lnet_peer_ni,
							  lpni_peer_list);

		lnet_peer_ni_remove_locked(ln, lpni);
	}
	ul_list_splice_tail(&lp->lp_pending, &q->sq_send);
	lp->lp_removed = true;
	ul_list_del(&lp->lp_list);
	ln->ln_npeers--;
	lnet_cond_broadcast(ln);
	lnet_peer_decref_locked(ln, lp);
}

void lnet_peer_fail_pending_locked(ulnet_t *ln, struct ul_list *out)
{
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_peers) {
		struct lnet_peer *lp = ul_container_of(pos, struct lnet_peer, lp_list);
		struct lnet_msg *msg;

		while ((msg = ul_list_first(&lp->lp_pending, struct lnet_msg, msg_list))) {
			ul_list_del(&msg->msg_list);
			lnet_msg_dc_wait_end(ln, msg);
			msg->msg_fin_status = -ESHUTDOWN;
			ul_list_add_tail(&msg->msg_list, out);
		}
	}
}

void lnet_peer_cancel_md_pending_locked(ulnet_t *ln, const struct lnet_libmd *md,
					struct lnet_sendq *q)
{
	struct ul_list *pos;

	/* nothing waits for discovery in steady state: no walk at all */
	if (ln->ln_dc_waiting == 0)
		return;
	ul_list_for_each(pos, &ln->ln_peers) {
		struct lnet_peer *lp = ul_container_of(pos, struct lnet_peer, lp_list);
		struct ul_list *m, *n;

		ul_list_for_each_safe(m, n, &lp->lp_pending) {
			struct lnet_msg *msg = ul_container_of(m, struct lnet_msg, msg_list);

			if (msg->msg_md != md)
				continue;
			ul_list_del(&msg->msg_list);
			lnet_msg_dc_wait_end(ln, msg);
			msg->msg_fin_status = -ECANCELED;
			ul_list_add_tail(&msg->msg_list, &q->sq_fail);
		}
	}
}

static struct lnet_peer *lnet_peer_find_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, nid);

	return lpni ? lpni->lpni_peer : NULL;
}

static bool lnet_nid_ok_for_peer(const ulnet_nid_t *nid)
{
	return !ulnet_nid_is_any(nid) && nid->type != ULNET_LND_LO &&
	       (nid->size == 0 || nid->size == 12);
}

/* Re-send messages that were parked on a deleted peer. */
static void lnet_resend_parked(ulnet_t *ln, struct lnet_sendq *parked)
{
	struct lnet_msg *msg;

	while ((msg = ul_list_first(&parked->sq_send, struct lnet_msg, msg_list))) {
		ulnet_nid_t src = msg->msg_src_nid_param;
		int rc;

		ul_list_del(&msg->msg_list);
		lnet_lock(ln);
		lnet_msg_dc_wait_end(ln, msg);
		lnet_unlock(ln);
		msg->msg_sending = 0;
		rc = lnet_send(ln, ulnet_nid_is_any(&src) ? NULL : &src, msg);
		if (rc < 0)
			lnet_finalize_core(msg, rc);
	}
}

_Static_assert(ULNET_PEER_STATE_LOCK_PRIMARY == LNET_PEER_LOCK_PRIMARY, "the kernel's bit");

/* Lock the primary NID of lp (LNET_PEER_LOCK_PRIMARY), stamped with the
 * order of locking: of two locked peers meeting, the earlier keeps its. */
static void lnet_peer_lock_primary_locked(ulnet_t *ln, struct lnet_peer *lp)
{
	lp->lp_state |= LNET_PEER_LOCK_PRIMARY;
	lp->lp_prim_lock_seq = ++ln->ln_prim_lock_seq;
}

int ulnet_peer_add_flags(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
			 int nnids, unsigned flags)
{
	uint32_t mr = (flags & ULNET_PEER_ADD_NON_MR) ? 0 : LNET_PEER_MULTI_RAIL;
	bool lock = flags & ULNET_PEER_ADD_LOCK_PRIMARY;
	struct lnet_peer *lp;
	int i, rc = 0, added = 0;

	if (!ln || !primary || nnids < 0 || (nnids > 0 && !nids) ||
	    (flags & ~(ULNET_PEER_ADD_NON_MR | ULNET_PEER_ADD_LOCK_PRIMARY)))
		return -EINVAL;
	if (!lnet_nid_ok_for_peer(primary))
		return -EINVAL;
	for (i = 0; i < nnids; i++)
		if (!lnet_nid_ok_for_peer(&nids[i]))
			return -EINVAL;

	lnet_lock(ln);
	/* A configured peer with this primary NID and Multi-Rail state gets
	 * the NIDs it lacks (the kernel's lnet_peer_add() on an existing
	 * configured peer); a peer learnt by traffic or discovery (a
	 * gateway's) with this primary NID becomes configured, as the
	 * kernel's delete and re-create leaves it, keeping its state; a peer
	 * holding the NID as another than its primary is an error. A peer
	 * not configured whose primary NID is locked is the kernel's
	 * -EEXIST (this NID) or -EALREADY (another). */
	lp = lnet_peer_find_locked(ln, primary);
	if (lp) {
		bool same = lnet_nid_eq(&lp->lp_primary, primary);

		if (!(lp->lp_state & LNET_PEER_CONFIGURED) &&
		    (lp->lp_state & LNET_PEER_LOCK_PRIMARY)) {
			rc = same ? -EEXIST : -EALREADY;
			goto out;
		}
		if (!same) {
			rc = -EEXIST;
			goto out;
		}
		if ((lp->lp_state & LNET_PEER_CONFIGURED) &&
		    ((lp->lp_state ^ mr) & LNET_PEER_MULTI_RAIL)) {
			rc = -EPERM;
			goto out;
		}
	}
	/* every NID is checked before any is added: one held by another
	 * peer leaves the peers as they were */
	for (i = 0; i < nnids; i++) {
		struct lnet_peer *other = lnet_peer_find_locked(ln, &nids[i]);

		if (other && other != lp && !lnet_nid_eq(&nids[i], primary)) {
			rc = -EEXIST;
			goto out;
		}
	}
	if (lp && !(lp->lp_state & LNET_PEER_CONFIGURED)) {
		lp->lp_state = (lp->lp_state & ~LNET_PEER_MULTI_RAIL) | LNET_PEER_CONFIGURED | mr;
		if (lock)
			lnet_peer_lock_primary_locked(ln, lp);
	} else if (!lp) {
		lp = lnet_peer_alloc_locked(ln, primary);
		if (!lp) {
			rc = -ENOMEM;
			goto out;
		}
		lp->lp_state = LNET_PEER_CONFIGURED | mr;
		if (lock)
			lnet_peer_lock_primary_locked(ln, lp);
		if (!lnet_peer_ni_alloc_locked(ln, lp, primary)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	/* (an existing configured peer is locked only by a NID added to it
	 * with the lock asked for, as the kernel's) */
	for (i = 0; i < nnids && !rc; i++)
		if (!lnet_peer_ni_find_locked(ln, &nids[i])) {
			rc = lnet_peer_add_nid_locked(ln, lp, &nids[i]);
			added += !rc;
		}
	if (lock && added && !(lp->lp_state & LNET_PEER_LOCK_PRIMARY))
		lnet_peer_lock_primary_locked(ln, lp);
out:
	lnet_unlock(ln);
	return rc;
}

int ulnet_peer_add(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
		   int nnids, bool non_mr)
{
	return ulnet_peer_add_flags(ln, primary, nids, nnids, non_mr ? ULNET_PEER_ADD_NON_MR : 0);
}

/* A locked peer asked to go without force keeps its primary NID and loses
 * the others, to be discovered again (the kernel's lnet_reset_peer()). */
static void lnet_peer_reset_locked(ulnet_t *ln, struct lnet_peer *lp)
{
	struct ul_list *pos, *n;

	ul_list_for_each_safe(pos, n, &lp->lp_nis) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);

		if (!lnet_nid_eq(&lpni->lpni_nid, &lp->lp_primary))
			lnet_peer_ni_remove_locked(ln, lpni);
	}
	lp->lp_state &= ~LNET_PEER_NIDS_UPTODATE;
}

int ulnet_peer_del_flags(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
			 int nnids, unsigned flags)
{
	bool force = flags & ULNET_PEER_DEL_FORCE;
	struct lnet_peer *lp;
	struct lnet_sendq parked;
	int i;

	if (!ln || !primary || nnids < 0 || (nnids > 0 && !nids) || (flags & ~ULNET_PEER_DEL_FORCE))
		return -EINVAL;
	lnet_sendq_init(&parked);
	lnet_lock(ln);
	lp = lnet_peer_find_locked(ln, primary);
	if (!lp || !lnet_nid_eq(&lp->lp_primary, primary)) {
		lnet_unlock(ln);
		return -ENOENT;
	}
	/* The kernel's netlink handler deletes the NIDs in order, and the
	 * whole peer once it meets the primary NID; here every NID before
	 * the primary is checked first, so that an error changes nothing. */
	bool whole = nnids == 0;

	for (i = 0; i < nnids && !whole; i++) {
		struct lnet_peer_ni *lpni;

		if (lnet_nid_eq(&nids[i], primary)) {
			whole = true;
			break;
		}
		lpni = lnet_peer_ni_find_locked(ln, &nids[i]);
		if (!lpni || lpni->lpni_peer != lp) {
			lnet_unlock(ln);
			return -ENOENT;
		}
	}
	if (whole && (lp->lp_state & LNET_PEER_LOCK_PRIMARY) && !force) {
		char nb[ULNET_NIDSTR_SIZE];

		lnet_log(ln, ULNET_LOG_ERROR,
			 "peer %s created by Lustre. Must preserve primary NID, but will remove other NIDs",
			 lnet_nidstr(&lp->lp_primary, nb));
		lnet_peer_reset_locked(ln, lp);
	} else if (whole) {
		lnet_peer_delete_locked(ln, lp, &parked);
	} else {
		for (i = 0; i < nnids; i++) {
			struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, &nids[i]);

			if (lpni && lpni->lpni_peer == lp)
				lnet_peer_ni_remove_locked(ln, lpni);
		}
		if (lp->lp_nnis == 0)
			lnet_peer_delete_locked(ln, lp, &parked);
	}
	lnet_unlock(ln);
	lnet_resend_parked(ln, &parked);
	return 0;
}

int ulnet_peer_del(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
		   int nnids)
{
	return ulnet_peer_del_flags(ln, primary, nids, nnids, 0);
}

static int lnet_peer_info(ulnet_t *ln, int index, struct ulnet_peer_info *info, bool all)
{
	struct lnet_peer *lp = NULL;
	struct ul_list *pos;
	int i = 0;

	if (!ln || !info || index < 0)
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_peers) {
		if (i++ == index) {
			lp = ul_container_of(pos, struct lnet_peer, lp_list);
			break;
		}
	}
	if (!lp) {
		lnet_unlock(ln);
		return -ENOENT;
	}
	memset(info, 0, sizeof(*info));
	if (all && lp->lp_nnis > ULNET_PEER_INFO_NIS) {
		info->more = calloc((size_t)(lp->lp_nnis - ULNET_PEER_INFO_NIS), sizeof(*info->more));
		if (!info->more) {
			lnet_unlock(ln);
			return -ENOMEM;
		}
	}
	info->primary = lp->lp_primary;
	info->multi_rail = (lp->lp_state & LNET_PEER_MULTI_RAIL) != 0;
	info->state = lp->lp_state;
	ul_list_for_each(pos, &lp->lp_nis) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);
		struct ulnet_peer_ni_info *pi;

		if (info->nnis >= ULNET_PEER_INFO_NIS &&
		    (!info->more || info->nnis >= lp->lp_nnis))
			break;
		pi = info->nnis < ULNET_PEER_INFO_NIS ? &info->nis[info->nnis]
						      : &info->more[info->nnis - ULNET_PEER_INFO_NIS];
		info->nnis++;
		pi->nid = lpni->lpni_nid;
		/* aliveness is tracked for gateways, and on a router for
		 * peers on nets with a peer_timeout; "NA" otherwise */
		if (lnet_peer_is_gateway_locked(ln, lp) || lnet_peer_aliveness_enabled_locked(ln, lpni))
			pi->state = lpni->lpni_ns_status == LNET_NI_STATUS_UP;
		else
			pi->state = -1;
		pi->max_tx_credits = lpni->lpni_maxtxcredits;
		pi->available_tx_credits = lpni->lpni_txcredits;
		pi->min_tx_credits = lpni->lpni_mintxcredits;
		pi->tx_q_num_of_buf = (int)lpni->lpni_txqnob;
		pi->available_rtr_credits = lpni->lpni_rtrcredits;
		pi->min_rtr_credits = lpni->lpni_minrtrcredits;
		pi->refcount = lpni->lpni_refcount;
		pi->send_count = lnet_type_counts_sum(&lpni->lpni_sent);
		pi->recv_count = lnet_type_counts_sum(&lpni->lpni_received);
		pi->drop_count = lnet_type_counts_sum(&lpni->lpni_dropped);
		pi->sent = lpni->lpni_sent;
		pi->received = lpni->lpni_received;
		pi->dropped = lpni->lpni_dropped;
		pi->sent_bytes = lpni->lpni_sent_bytes;
		pi->received_bytes = lpni->lpni_received_bytes;
		pi->dropped_bytes = lpni->lpni_dropped_bytes;
		pi->put_egress = lnet_latency_get(&lpni->lpni_put_egress);
		pi->get_rtt = lnet_latency_get(&lpni->lpni_get_rtt);
		pi->put_ack = lnet_latency_get(&lpni->lpni_put_ack);
		pi->health = lpni->lpni_health;
		pi->health.in_recovery = lnet_peer_ni_in_recovery_locked(ln, lpni, lnet_now(ln));
		pi->udsp_net_prio = lpni->lpni_net_sel_prio;
		pi->udsp_nid_prio = lpni->lpni_sel_prio;
		if (all && lpni->lpni_udsp) {
			const struct lnet_udsp_pref *up = lpni->lpni_udsp;
			size_t n = (size_t)up->nsrc + up->nrtr;

			pi->udsp_pref = malloc(n * sizeof(*pi->udsp_pref));
			if (!pi->udsp_pref) {
				lnet_unlock(ln);
				ulnet_peer_info_release(info);
				return -ENOMEM;
			}
			memcpy(pi->udsp_pref, up->nids, n * sizeof(*pi->udsp_pref));
			pi->udsp_npref_src = up->nsrc;
			pi->udsp_npref_rtr = up->nrtr;
		}
	}
	lnet_unlock(ln);
	return 0;
}

int ulnet_peer_info(ulnet_t *ln, int index, struct ulnet_peer_info *info)
{
	return lnet_peer_info(ln, index, info, false);
}

int ulnet_peer_info_all(ulnet_t *ln, int index, struct ulnet_peer_info *info)
{
	return lnet_peer_info(ln, index, info, true);
}

void ulnet_peer_info_release(struct ulnet_peer_info *info)
{
	if (!info)
		return;
	for (int j = 0; j < info->nnis; j++) {
		struct ulnet_peer_ni_info *pi = j < ULNET_PEER_INFO_NIS ? &info->nis[j]
									 : &info->more[j - ULNET_PEER_INFO_NIS];

		free(pi->udsp_pref);
		pi->udsp_pref = NULL;
		pi->udsp_npref_src = pi->udsp_npref_rtr = 0;
	}
	free(info->more);
	info->more = NULL;
	if (info->nnis > ULNET_PEER_INFO_NIS)
		info->nnis = ULNET_PEER_INFO_NIS;
}

/* --- aliveness ----------------------------------------------------------------- */

bool lnet_peer_aliveness_enabled_locked(ulnet_t *ln, const struct lnet_peer_ni *lpni)
{
	ulnet_net_t net = ulnet_nid_net(&lpni->lpni_nid);
	struct lnet_ni *only;
	struct ul_list *pos;

	if (ln->ln_routing == ULNET_ROUTING_DISABLED || lnet_net_nis_locked(ln, net, &only) == 0)
		return false;
	if (only)
		return only->ni_conf.tun.peer_timeout > 0;
	ul_list_for_each(pos, &ln->ln_nis) {
		const struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ulnet_nid_net(&ni->ni_nid) == net)
			return ni->ni_conf.tun.peer_timeout > 0;
	}
	return false;
}

/* --- health ------------------------------------------------------------------ */

void lnet_peer_ni_set_ns_status_locked(ulnet_t *ln, struct lnet_peer_ni *lpni, uint32_t status)
{
	uint32_t old = lpni->lpni_ns_status;
	char nid[ULNET_NIDSTR_SIZE];

	lpni->lpni_ns_status = status;
	if (old == status || status != LNET_NI_STATUS_DOWN)
		return;
	lnet_peer_ni_health_dec_locked(ln, lpni);
	lnet_recovery_arm_locked(ln);
	lnet_log(ln, ULNET_LOG_INFO, "peer NI %s: reported down by its node, health %d",
		 lnet_nidstr(&lpni->lpni_nid, nid), lpni->lpni_health.health_value);
}

/* --- runtime settings (lnetctl peer set) ------------------------------------ */

int ulnet_peer_ni_set_health(ulnet_t *ln, const ulnet_nid_t *nid, int value)
{
	int rc = 0;

	if (!ln || value < 0 || value > ULNET_MAX_HEALTH)
		return -EINVAL;
	lnet_lock(ln);
	if (nid) {
		struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, nid);

		if (lpni && lpni->lpni_peer)
			lpni->lpni_health.health_value = value;
		else
			rc = -ENOENT;
		if (!rc && value < ULNET_MAX_HEALTH)
			lnet_recovery_arm_locked(ln);
	} else {
		struct ul_list *pos, *p2;

		ul_list_for_each(pos, &ln->ln_peers) {
			struct lnet_peer *lp = ul_container_of(pos, struct lnet_peer, lp_list);

			ul_list_for_each(p2, &lp->lp_nis)
				ul_container_of(p2, struct lnet_peer_ni, lpni_peer_list)
					->lpni_health.health_value = value;
		}
	}
	lnet_unlock(ln);
	return rc;
}

int ulnet_peer_set_state(ulnet_t *ln, const ulnet_nid_t *nid, uint32_t state)
{
	const unsigned busy = LNET_PEER_DISCOVERING | LNET_PEER_PING_SENT | LNET_PEER_PUSH_SENT;
	struct lnet_peer *lp;

	if (!ln || !nid)
		return -EINVAL;
	lnet_lock(ln);
	lp = lnet_peer_find_locked(ln, nid);
	if (lp)
		lp->lp_state = (lp->lp_state & busy) | (state & ~busy);
	lnet_unlock(ln);
	return lp ? 0 : -ENOENT;
}
