/* SPDX-License-Identifier: MIT */
/*
 * counters.c - global settings (lnetctl set / global show) with the kernel's
 * range checks, and the instance counters (lnetctl stats).
 */
#include <errno.h>
#include <string.h>

#include "core/core.h"

void ulnet_globals_get(ulnet_t *ln, struct ulnet_globals *g)
{
	lnet_lock(ln);
	*g = ln->ln_g;
	lnet_unlock(ln);
}

/* Ranges as the kernel's parameter setters enforce them. */
static int lnet_globals_check(const struct ulnet_globals *g)
{
	if (g->numa_range < 0)
		return -EINVAL;
	if (g->max_interfaces < 16)            /* LNET_INTERFACES_MIN */
		return -EINVAL;
	if (g->discovery != 0 && g->discovery != 1)
		return -EINVAL;
	if (g->drop_asym_route != 0 && g->drop_asym_route != 1)
		return -EINVAL;
	if (g->health_sensitivity < 0 || g->health_sensitivity > 1000)
		return -EINVAL;
	if (g->retry_count < 0)
		return -EINVAL;
	/* no resend without health */
	if (g->health_sensitivity == 0 && g->retry_count > 0)
		return -EINVAL;
	/* the transaction timeout must exceed the retry count */
	if (g->transaction_timeout <= 0 || g->transaction_timeout <= g->retry_count)
		return -EINVAL;
	if (g->recovery_interval <= 0)
		return -EINVAL;
	if (g->router_sensitivity < 0 || g->router_sensitivity > 100)
		return -EINVAL;
	if (g->response_tracking < 0 || g->response_tracking > 3)
		return -EINVAL;
	if (g->recovery_limit < 0)
		return -EINVAL;
	if (g->max_recovery_ping_interval <= 0)
		return -EINVAL;
	return 0;
}

int ulnet_globals_set(ulnet_t *ln, const struct ulnet_globals *gin)
{
	struct ulnet_globals g;
	bool discovery_changed;
	int rc;

	if (!ln || !gin)
		return -EINVAL;
	g = *gin;
	lnet_lock(ln);
	/* health turned off with the retry count left as it was: no resends
	 * either (the kernel's sensitivity_set() zeroes lnet_retry_count);
	 * a retry count asked for without health stays refused */
	if (g.health_sensitivity == 0 && ln->ln_g.health_sensitivity != 0 &&
	    g.retry_count == ln->ln_g.retry_count)
		g.retry_count = 0;
	lnet_unlock(ln);
	rc = lnet_globals_check(&g);
	if (rc)
		return rc;
	lnet_lock(ln);
	discovery_changed = ln->ln_g.discovery != g.discovery;
	ln->ln_g = g;
	lnet_unlock(ln);
	/* the DISCOVERY feature bit of our ping info follows the setting */
	if (discovery_changed)
		lnet_ping_target_update(ln);
	return 0;
}

void ulnet_counters_get(ulnet_t *ln, struct ulnet_counters *c)
{
	lnet_lock(ln);
	*c = ln->ln_ctr;
	lnet_unlock(ln);
}

/* An NI's or peer NI's counts and bytes by type (sent, received, dropped)
 * and latency samples (put_egress, get_rtt, put_ack). */
static void lnet_iface_stats_reset(struct ulnet_msg_type_counts *const cnt[6],
				   struct lnet_latency *const lat[3])
{
	for (int i = 0; i < 6; i++)
		memset(cnt[i], 0, sizeof(*cnt[i]));
	for (int i = 0; i < 3; i++)
		memset(lat[i], 0, sizeof(*lat[i]));
}

void ulnet_counters_reset(ulnet_t *ln)
{
	struct ul_list *pos, *p2;
	uint64_t alloc, rst;

	lnet_lock(ln);
	/* what is in flight stays counted */
	alloc = ln->ln_ctr.msgs_alloc;
	rst = ln->ln_ctr.rst_alloc;
	memset(&ln->ln_ctr, 0, sizeof(ln->ln_ctr));
	ln->ln_ctr.msgs_alloc = alloc;
	ln->ln_ctr.msgs_max = alloc;
	ln->ln_ctr.rst_alloc = rst;
	/* and every NI's and peer NI's counts and bytes by type and latency
	 * samples, as the kernel's lnet_iface_stats_reset() (health stats
	 * stay) */
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		lnet_iface_stats_reset((struct ulnet_msg_type_counts *const[6]){
					       &ni->ni_sent, &ni->ni_received, &ni->ni_dropped,
					       &ni->ni_sent_bytes, &ni->ni_received_bytes,
					       &ni->ni_dropped_bytes },
				       (struct lnet_latency *const[3]){
					       &ni->ni_put_egress, &ni->ni_get_rtt, &ni->ni_put_ack });
	}
	ul_list_for_each(pos, &ln->ln_peers) {
		struct lnet_peer *lp = ul_container_of(pos, struct lnet_peer, lp_list);

		ul_list_for_each(p2, &lp->lp_nis) {
			struct lnet_peer_ni *lpni =
				ul_container_of(p2, struct lnet_peer_ni, lpni_peer_list);

			lnet_iface_stats_reset((struct ulnet_msg_type_counts *const[6]){
						       &lpni->lpni_sent, &lpni->lpni_received,
						       &lpni->lpni_dropped, &lpni->lpni_sent_bytes,
						       &lpni->lpni_received_bytes,
						       &lpni->lpni_dropped_bytes },
					       (struct lnet_latency *const[3]){
						       &lpni->lpni_put_egress, &lpni->lpni_get_rtt,
						       &lpni->lpni_put_ack });
		}
	}
	lnet_unlock(ln);
}


