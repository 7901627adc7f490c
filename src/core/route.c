/* SPDX-License-Identifier: MIT */
/*
 * route.c - the route table (ulnet_route_add/del/info) and the choice of
 * route and gateway for a message to a remote net.
 *
 * Remote nets are few (a handful per site), so they are a list walked per
 * routed send; a net's routes are a list in the order added. The checks
 * and errors of ulnet_route_add() are the kernel's (lnet_add_route(), and
 * the netlink handler before it), in its order, so ulnetctl reports what
 * lnetctl reports.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/ping_info.h"
#include "core/route.h"
#include "core/udsp.h"

static void lnet_rtrcheck_timer_cb(struct ul_timer *t);

void lnet_routes_init(ulnet_t *ln)
{
	ul_list_init(&ln->ln_remote_nets);
	ln->ln_nroutes = 0;
	ul_timer_init(&ln->ln_rtrcheck_timer, lnet_rtrcheck_timer_cb);
}

void lnet_routes_shutdown(ulnet_t *ln)
{
	if (ln->ln_loop)
		ul_timer_stop(ln->ln_loop, &ln->ln_rtrcheck_timer);
}

/* The checker ticks each second while a route exists. */
static void lnet_rtrcheck_arm_locked(ulnet_t *ln)
{
	if (ln->ln_loop && ln->ln_state == LNET_STATE_RUNNING && ln->ln_nroutes &&
	    !ul_timer_armed(&ln->ln_rtrcheck_timer))
		ul_timer_start(ln->ln_loop, &ln->ln_rtrcheck_timer, lnet_now(ln) + LNET_NSEC_PER_SEC);
}

static void lnet_route_free_locked(ulnet_t *ln, struct lnet_route *r)
{
	ul_list_del(&r->lr_list);
	lnet_peer_ni_decref_locked(ln, r->lr_gw);
	ln->ln_nroutes--;
	free(r);
}

static void lnet_rnet_free_locked(ulnet_t *ln, struct lnet_remotenet *rn)
{
	struct lnet_route *r;

	while ((r = ul_list_first(&rn->lrn_routes, struct lnet_route, lr_list)))
		lnet_route_free_locked(ln, r);
	ul_list_del(&rn->lrn_list);
	free(rn);
}

void lnet_routes_fini(ulnet_t *ln)
{
	struct lnet_remotenet *rn;

	while ((rn = ul_list_first(&ln->ln_remote_nets, struct lnet_remotenet, lrn_list)))
		lnet_rnet_free_locked(ln, rn);
}

static struct lnet_remotenet *lnet_rnet_find_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_remote_nets) {
		struct lnet_remotenet *rn = ul_container_of(pos, struct lnet_remotenet, lrn_list);

		if (rn->lrn_net == net)
			return rn;
	}
	return NULL;
}

/* The gateway's peer now; its peer NI is looked up again (and the route's
 * reference moved) when the peer it belonged to was deleted. */
static struct lnet_peer *lnet_route_gw_peer_locked(ulnet_t *ln, struct lnet_route *r)
{
	if (!r->lr_gw->lpni_peer) {
		struct lnet_peer_ni *lpni = lnet_peer_ni_get_locked(ln, &r->lr_nid);

		if (!lpni)
			return NULL;
		lnet_peer_ni_addref_locked(lpni);
		lnet_peer_ni_decref_locked(ln, r->lr_gw);
		r->lr_gw = lpni;
	}
	return r->lr_gw->lpni_peer;
}

/* Whether route `r` goes through the gateway whose primary NID is
 * `primary` (any NID of a gateway peer names it). */
static bool lnet_route_gw_is_locked(ulnet_t *ln, struct lnet_route *r, const ulnet_nid_t *primary)
{
	struct lnet_peer *gp = lnet_route_gw_peer_locked(ln, r);

	return lnet_nid_eq(gp ? &gp->lp_primary : &r->lr_nid, primary);
}

/* The primary NID of the peer that owns `nid` (itself when unknown). */
static ulnet_nid_t lnet_gw_primary_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	ulnet_nid_t p;

	lnet_peer_primary_nid_locked(ln, nid, &p);
	return p;
}

int ulnet_route_add(ulnet_t *ln, const struct ulnet_route_conf *rc)
{
	ulnet_net_t gwnet;
	struct lnet_remotenet *rn;
	struct lnet_route *r;
	struct lnet_peer_ni *lpni;
	char nb[ULNET_NIDSTR_SIZE];
	int rc2 = 0;

	if (!ln || !rc)
		return -EINVAL;
	if (rc->net == ULNET_NET_ANY)
		return -ENXIO;
	if (ulnet_net_type(rc->net) == ULNET_LND_LO)
		return -EACCES;
	gwnet = ulnet_nid_net(&rc->gateway);
	if (lnet_nid_is_any(&rc->gateway) || lnet_nid_is_lo0(&rc->gateway) || gwnet == rc->net ||
	    rc->gateway.type == ULNET_LND_LO ||
	    (rc->hops != ULNET_ROUTE_HOPS_UNSET && (rc->hops < 1 || rc->hops > ULNET_ROUTE_HOPS_MAX)))
		return -EINVAL;

	r = calloc(1, sizeof(*r));
	rn = calloc(1, sizeof(*rn));
	if (!r || !rn) {
		free(r);
		free(rn);
		return -ENOMEM;
	}
	lnet_lock(ln);
	if (lnet_net_is_local_locked(ln, rc->net)) {
		rc2 = -EEXIST;
		goto out;
	}
	if (!lnet_net_is_local_locked(ln, gwnet)) {
		lnet_log(ln, ULNET_LOG_ERROR,
			 "cannot add route with gateway %s: no local interface on its net",
			 lnet_nidstr(&rc->gateway, nb));
		rc2 = -EHOSTUNREACH;
		goto out;
	}
	struct lnet_remotenet *have = lnet_rnet_find_locked(ln, rc->net);

	if (have) {
		/* one route per gateway peer, whichever of its NIDs names it */
		ulnet_nid_t want = lnet_gw_primary_locked(ln, &rc->gateway);
		struct ul_list *pos;

		ul_list_for_each(pos, &have->lrn_routes) {
			struct lnet_route *o = ul_container_of(pos, struct lnet_route, lr_list);

			if (lnet_route_gw_is_locked(ln, o, &want)) {
				rc2 = -EEXIST;
				goto out;
			}
		}
	}
	lpni = lnet_peer_ni_get_locked(ln, &rc->gateway);
	if (!lpni) {
		rc2 = -ENOMEM;
		goto out;
	}
	lnet_peer_ni_addref_locked(lpni);
	if (!have) {
		rn->lrn_net = rc->net;
		ul_list_init(&rn->lrn_routes);
		ul_list_add_tail(&rn->lrn_list, &ln->ln_remote_nets);
		have = rn;
		rn = NULL;
	}
	r->lr_rnet = have;
	r->lr_nid = rc->gateway;
	r->lr_gw = lpni;
	r->lr_hops = rc->hops;
	r->lr_priority = rc->priority;
	/* usable at once, unless check_routers_before_use; the router
	 * checker judges it from the gateway's ping info, starting at its
	 * next tick */
	r->lr_alive = !ln->ln_rtr_params.check_routers_before_use;
	ul_list_add_tail(&r->lr_list, &have->lrn_routes);
	ln->ln_nroutes++;
	if (lpni->lpni_peer)
		lpni->lpni_peer->lp_rtrcheck_next = 0;
	lnet_rtrcheck_arm_locked(ln);
	lnet_udsp_routes_changed_locked(ln);
	r = NULL;
out:
	lnet_unlock(ln);
	free(r);
	free(rn);
	return rc2;
}

int ulnet_route_del(ulnet_t *ln, ulnet_net_t net, const ulnet_nid_t *gateway)
{
	struct ul_list *pos, *n;
	ulnet_nid_t want;
	int ndel = 0;
	bool found = false;

	if (!ln)
		return -EINVAL;
	lnet_lock(ln);
	if (gateway)
		want = lnet_gw_primary_locked(ln, gateway);
	ul_list_for_each_safe(pos, n, &ln->ln_remote_nets) {
		struct lnet_remotenet *rn = ul_container_of(pos, struct lnet_remotenet, lrn_list);
		struct ul_list *rp, *rnx;

		if (net != ULNET_NET_ANY && rn->lrn_net != net)
			continue;
		found = true;
		ul_list_for_each_safe(rp, rnx, &rn->lrn_routes) {
			struct lnet_route *r = ul_container_of(rp, struct lnet_route, lr_list);

			if (gateway && !lnet_route_gw_is_locked(ln, r, &want))
				continue;
			lnet_route_free_locked(ln, r);
			ndel++;
		}
		if (ul_list_empty(&rn->lrn_routes))
			lnet_rnet_free_locked(ln, rn);
	}
	if (ndel)
		lnet_udsp_routes_changed_locked(ln);
	lnet_unlock(ln);
	return found ? ndel : -ENOENT;
}

int ulnet_route_info(ulnet_t *ln, int index, struct ulnet_route_info *info)
{
	int i = 0;

	if (!ln || !info || index < 0)
		return -EINVAL;
	lnet_lock(ln);
	lnet_for_each_route(ln, rn, r) {
		if (i++ != index)
			continue;
		info->net = rn->lrn_net;
		info->gateway = r->lr_nid;
		info->hops = r->lr_hops;
		info->priority = r->lr_priority;
		info->alive = r->lr_alive;
		info->single_hop = r->lr_single_hop;
		lnet_unlock(ln);
		return 0;
	}
	lnet_unlock(ln);
	return -ENOENT;
}

/* Each gateway whose time has come is discovered again (forced ping and
 * push, whatever the discovery setting: the kernel's router checker does
 * the same); its routes follow from the outcome. */
static void lnet_rtrcheck_timer_cb(struct ul_timer *t)
{
	ulnet_t *ln = ul_container_of(t, ulnet_t, ln_rtrcheck_timer);
	struct lnet_sendq q;
	uint64_t now;

	if (!lnet_timer_enter(ln, &q, &now))
		return;
	lnet_for_each_route(ln, rn, r) {
		struct lnet_peer *gp = lnet_route_gw_peer_locked(ln, r);

		if (!gp || gp->lp_rtrcheck_next > now)
			continue;
		/* alive_router_check_interval <= 0: this first check only */
		gp->lp_rtrcheck_next = ln->ln_rtr_params.alive_router_check_interval > 0
			? now + (uint64_t)ln->ln_rtr_params.alive_router_check_interval *
				      LNET_NSEC_PER_SEC
			: UINT64_MAX;
		(void)lnet_peer_start_discovery_locked(ln, gp, true, &q);
	}
	if (ln->ln_nroutes)
		ul_timer_start(ln->ln_loop, &ln->ln_rtrcheck_timer, now + LNET_NSEC_PER_SEC);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
}

/* Whether route `r` through `gp` is alive, from the gateway's last ping
 * info (the kernel's rules): it does not say "routing disabled"; one of
 * its NIs on our nets is up; and, with avoid_asym_router_failure, a
 * single-hop route (hops 1, or the gateway lists an NI on the remote net)
 * also needs one of those NIs up. */
static bool lnet_route_judge_locked(ulnet_t *ln, struct lnet_route *r, struct lnet_peer *gp)
{
	bool local_up = false, remote_listed = false, remote_up = false;
	struct ul_list *pos;

	ul_list_for_each(pos, &gp->lp_nis) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);
		ulnet_net_t net = ulnet_nid_net(&lpni->lpni_nid);
		bool up = lpni->lpni_ns_status == LNET_NI_STATUS_UP;

		if (lnet_net_is_local_locked(ln, net) && up)
			local_up = true;
		if (net == r->lr_rnet->lrn_net) {
			remote_listed = true;
			remote_up |= up;
		}
	}
	r->lr_single_hop = remote_listed;
	if (gp->lp_features & LNET_PING_FEAT_RTE_DISABLED)
		return false;
	if (!local_up)
		return false;
	if (ln->ln_rtr_params.avoid_asym_router_failure && (r->lr_hops == 1 || remote_listed) &&
	    !remote_up)
		return false;
	return true;
}

void lnet_route_gw_discovered_locked(ulnet_t *ln, struct lnet_peer *lp, int status)
{
	char nb[ULNET_NIDSTR_SIZE], gb[ULNET_NIDSTR_SIZE];

	lnet_for_each_route(ln, rn, r) {
		bool alive;

		if (r->lr_gw->lpni_peer != lp)
			continue;
		lp->lp_state |= LNET_PEER_RTR_DISCOVERED;
		alive = status == 0 && lnet_route_judge_locked(ln, r, lp);
		if (alive == r->lr_alive)
			continue;
		ulnet_net_format(rn->lrn_net, nb, sizeof(nb));
		lnet_log(ln, ULNET_LOG_WARN, "route to %s through %s has gone from %s to %s%s", nb,
			 lnet_nidstr(&r->lr_nid, gb), r->lr_alive ? "up" : "down", alive ? "up" : "down",
			 status ? " (the gateway did not answer)"
				: (lp->lp_features & LNET_PING_FEAT_RTE_DISABLED)
					  ? " (the gateway's routing is off)" : "");
		r->lr_alive = alive;
	}
}

bool lnet_route_via_gw_locked(ulnet_t *ln, ulnet_net_t net, const struct lnet_peer *gp)
{
	struct lnet_remotenet *rn = lnet_rnet_find_locked(ln, net);
	struct ul_list *pos;

	if (!rn)
		return false;
	ul_list_for_each(pos, &rn->lrn_routes) {
		struct lnet_route *r = ul_container_of(pos, struct lnet_route, lr_list);

		if (r->lr_gw->lpni_peer == gp)
			return true;
	}
	return false;
}

bool lnet_route_exists_locked(ulnet_t *ln, ulnet_net_t net)
{
	return lnet_rnet_find_locked(ln, net) != NULL;
}

bool lnet_peer_is_gateway_locked(ulnet_t *ln, const struct lnet_peer *lp)
{
	lnet_for_each_route(ln, rn, r)
		if (r->lr_gw->lpni_peer == lp)
			return true;
	return false;
}

/* The gateway's best peer NI on our nets (on `net` when not ANY): the
 * healthiest, then the one of highest UDSP priority, then the fewest bytes
 * queued, then the most credits, then round robin (the kernel's
 * lnet_select_peer_ni() order). */
static struct lnet_peer_ni *lnet_gw_lpni_locked(ulnet_t *ln, struct lnet_peer *gp, ulnet_net_t net)
{
	struct lnet_peer_ni *best = NULL;
	struct ul_list *pos;

	ul_list_for_each(pos, &gp->lp_nis) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);
		ulnet_net_t pn = ulnet_nid_net(&lpni->lpni_nid);

		if (net != ULNET_NET_ANY ? pn != net : !lnet_net_is_local_locked(ln, pn))
			continue;
		if (!best) {
			best = lpni;
			continue;
		}
		if (lpni->lpni_health.health_value != best->lpni_health.health_value) {
			if (lpni->lpni_health.health_value > best->lpni_health.health_value)
				best = lpni;
			continue;
		}
		if (lpni->lpni_sel_prio != best->lpni_sel_prio) {
			if (lpni->lpni_sel_prio < best->lpni_sel_prio)
				best = lpni;
			continue;
		}
		if (lpni->lpni_txqnob != best->lpni_txqnob) {
			if (lpni->lpni_txqnob < best->lpni_txqnob)
				best = lpni;
			continue;
		}
		if (lpni->lpni_txcredits > best->lpni_txcredits ||
		    (lpni->lpni_txcredits == best->lpni_txcredits && lpni->lpni_seq < best->lpni_seq))
			best = lpni;
	}
	return best;
}

static int lnet_route_hops(const struct lnet_route *r)
{
	return r->lr_hops == ULNET_ROUTE_HOPS_UNSET ? 1 : r->lr_hops;
}

/* < 0 when route a (through gateway NI la; pa: a gateway the destination
 * prefers) is better than b (lb, pb): the kernel's lnet_compare_routes()
 * then lnet_compare_gw_lpnis(). */
static int lnet_route_cmp(const struct lnet_route *a, const struct lnet_peer_ni *la, bool pa,
			  const struct lnet_route *b, const struct lnet_peer_ni *lb, bool pb)
{
	if (pa != pb)
		return pa ? -1 : 1;
	if (a->lr_priority != b->lr_priority)
		return a->lr_priority < b->lr_priority ? -1 : 1;
	if (lnet_route_hops(a) != lnet_route_hops(b))
		return lnet_route_hops(a) < lnet_route_hops(b) ? -1 : 1;
	if (la->lpni_health.health_value != lb->lpni_health.health_value)
		return la->lpni_health.health_value > lb->lpni_health.health_value ? -1 : 1;
	if (la->lpni_txqnob != lb->lpni_txqnob)
		return la->lpni_txqnob < lb->lpni_txqnob ? -1 : 1;
	if (la->lpni_txcredits != lb->lpni_txcredits)
		return la->lpni_txcredits > lb->lpni_txcredits ? -1 : 1;
	if (a->lr_seq != b->lr_seq)
		return a->lr_seq < b->lr_seq ? -1 : 1;
	return 0;
}

int lnet_route_select_locked(ulnet_t *ln, ulnet_net_t net, const struct lnet_peer_ni *dst,
			     struct lnet_ni *src_ni, struct lnet_ni **ni, struct lnet_peer_ni **gw)
{
	struct lnet_remotenet *rn = lnet_rnet_find_locked(ln, net);
	struct lnet_route *best = NULL;
	struct lnet_peer_ni *best_lpni = NULL;
	bool best_pref = false;
	unsigned seq = 0;
	struct ul_list *pos;

	if (!rn)
		return -EHOSTUNREACH;
	ul_list_for_each(pos, &rn->lrn_routes) {
		struct lnet_route *r = ul_container_of(pos, struct lnet_route, lr_list);
		struct lnet_peer *gp;
		struct lnet_peer_ni *lpni;

		if (!r->lr_alive)
			continue;
		if (r->lr_seq > seq)
			seq = r->lr_seq;
		gp = lnet_route_gw_peer_locked(ln, r);
		lpni = gp ? lnet_gw_lpni_locked(ln, gp, src_ni ? ulnet_nid_net(&src_ni->ni_nid)
							      : ULNET_NET_ANY) : NULL;
		if (!lpni)
			continue;
		/* a UDSP router rule names gateways by their primary NID */
		bool pref = dst && dst->lpni_udsp && lnet_udsp_rtr_preferred(dst, &gp->lp_primary);

		if (!best || lnet_route_cmp(r, lpni, pref, best, best_lpni, best_pref) < 0) {
			best = r;
			best_lpni = lpni;
			best_pref = pref;
		}
	}
	if (!best)
		return -EHOSTUNREACH;
	best->lr_seq = seq + 1;
	best_lpni->lpni_seq++;
	*ni = src_ni ? src_ni : lnet_best_ni_on_net_locked(ln, ulnet_nid_net(&best_lpni->lpni_nid));
	if (!*ni)
		return -EHOSTUNREACH;
	*gw = best_lpni;
	return 0;
}
