/* SPDX-License-Identifier: MIT */
/*
 * ni.h - NIs (struct lnet_ni): adding, finding and referencing them (ni.c)
 * and the state of their links (ni_link.c).
 */
#ifndef ULNET_CORE_NI_H
#define ULNET_CORE_NI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/instance.h"
#include "core/latency.h"
#include "core/list.h"
#include "ulnet/ulnet.h"

/* --- NIs ---------------------------------------------------------------------- */

struct lnet_ni {
	struct ul_list ni_list;        /* ln_nis (0@lo first) */
	ulnet_t *ni_ln;
	ulnet_nid_t ni_nid;
	struct ulnet_ni_conf ni_conf;  /* tunables with defaults filled in */
	int ni_cpp_auto;               /* conns_per_peer the LND derived (0: none) */
	const struct ulnet_lnd *ni_lnd;
	void *ni_data;                 /* LND private */
	/* an NI with a thread of its own (socklnd nscheds 1, ni_thread.c):
	 * its loop, which lnet_ni_loop() gives its LND, and that thread */
	struct ul_loop *ni_loop;
	pthread_t ni_thread;
	bool ni_has_thread;
	int ni_thread_stop;
	uint64_t ni_incarnation;
	int ni_refcount;               /* list + messages */
	bool ni_up;                    /* in ln_nis and usable */
	bool ni_recovering;            /* a recovery ping of it is out (recovery.c) */
	uint64_t ni_next_ping;         /* instance clock: next recovery ping no sooner */
	/* link state (ni_link.c): LNET_NI_LINK_* causes holding the link
	 * down; any of them makes the NI "fatal" (ni_health.fatal_error):
	 * reported DOWN, chosen last */
	unsigned ni_link_down;
	uint64_t ni_link_fault_until;  /* fault link --duration: up again at (ns); 0 none */
	int ni_link_busy;              /* link_state op calls running: shutdown waits */
	int ni_conns_busy;             /* conn_list op calls running: shutdown waits */
	uint32_t ni_status;            /* LNET_NI_STATUS_* for the ping info */
	uint64_t ni_rtr_ping_last;     /* a router: the last ping from a node on its net */
	int ni_tx_credits, ni_tx_credits_max, ni_tx_credits_min;
	struct ul_list ni_tx_delayed;  /* messages waiting for an NI credit */
	unsigned ni_seq;               /* round robin among equals */
	/* per message type; the totals are their sums (lnet_type_counts_sum()) */
	struct ulnet_msg_type_counts ni_sent, ni_received, ni_dropped;
	/* and their payload bytes (struct ulnet_ni_info's sent_bytes ...) */
	struct ulnet_msg_type_counts ni_sent_bytes, ni_received_bytes, ni_dropped_bytes;
	struct lnet_latency ni_put_egress, ni_get_rtt, ni_put_ack;
	struct ulnet_health_stats ni_health;
	/* UDSP (udsp.c): 0 highest, ULNET_UDSP_PRIO_NONE when no rule names it */
	uint32_t ni_sel_prio;          /* this NI's ("nid priority") */
	uint32_t ni_net_sel_prio;      /* its net's ("net priority") */
};

/* --- NIs (ni.c) ------------------------------------------------------------- */

int lnet_ni_add_locked_lo(ulnet_t *ln);
/* ln_nis changed (NI added or taken out): forget what was derived from it. */
static inline void lnet_ni_list_changed_locked(ulnet_t *ln)
{
	if (++ln->ln_ni_gen == 0)
		ln->ln_ni_gen = 1;
}
void lnet_net_cache_fill_locked(ulnet_t *ln, ulnet_net_t net);

/* --- link state (ni_link.c) ---------------------------------------------------- */

/* What holds an NI's link down (bits of ni_link_down). */
#define LNET_NI_LINK_FAULT   (1u << 0)   /* ulnet_fault_link_set() */
#define LNET_NI_LINK_CARRIER (1u << 1)   /* its interface lost its link (rtnetlink) */

void lnet_ni_link_init(ulnet_t *ln);
/* Shutdown: the --duration timer stops. */
void lnet_ni_link_shutdown(ulnet_t *ln);
/* Set or clear `cause` on `ni` (not locked; the NI referenced by the
 * caller). When the NI's fatal state flips: status, the LND told
 * (link_state op), and peers pushed our new ping info. `why` goes in the
 * log. Returns 1 if the fatal state changed, 0 if not, -EAGAIN if the NI
 * is not in service (not yet, or no longer). */
int lnet_ni_link_set(ulnet_t *ln, struct lnet_ni *ni, unsigned cause, bool down,
		      const char *why);
/* Whether `net` has an up NI whose link is not held down. */
bool lnet_net_has_live_ni_locked(ulnet_t *ln, ulnet_net_t net);
static inline bool lnet_ni_fatal(const struct lnet_ni *ni)
{
	return ni->ni_link_down != 0;
}
/* How many up NIs `net` has, and (*only) the NI when it is one: the
 * cached answer of a walk of ln_nis, asked for every PUT/GET and ACK. */
static inline int lnet_net_nis_locked(ulnet_t *ln, ulnet_net_t net, struct lnet_ni **only)
{
	if (__builtin_expect(ln->ln_net_cache.nc_gen != ln->ln_ni_gen ||
			     ln->ln_net_cache.nc_net != net, 0))
		lnet_net_cache_fill_locked(ln, net);
	*only = ln->ln_net_cache.nc_only;
	return ln->ln_net_cache.nc_nnis;
}
/* The NI with this NID, by a walk of ln_nis (lnet_nid2ni_locked()). */
struct lnet_ni *lnet_nid2ni_walk_locked(ulnet_t *ln, const ulnet_nid_t *nid);
static inline struct lnet_ni *lnet_nid2ni_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct lnet_ni *only;

	/* an NI with this NID is on the NID's net: with at most one NI
	 * there, one compare answers */
	if (lnet_net_nis_locked(ln, ulnet_nid_net(nid), &only) <= 1)
		return only && lnet_nid_eq(&only->ni_nid, nid) ? only : NULL;
	return lnet_nid2ni_walk_locked(ln, nid);
}
static inline bool lnet_nid_is_local_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	return lnet_nid2ni_locked(ln, nid) != NULL;
}
static inline bool lnet_net_is_local_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct lnet_ni *only;

	return lnet_net_nis_locked(ln, net, &only) > 0;
}
/* References (inline: several per message); the last one frees. */
void lnet_ni_free_locked(struct lnet_ni *ni);
static inline void lnet_ni_addref_locked(struct lnet_ni *ni) { ni->ni_refcount++; }
static inline void lnet_ni_decref_locked(struct lnet_ni *ni)
{
	LASSERT(ni->ni_refcount > 0);
	if (--ni->ni_refcount == 0)
		lnet_ni_free_locked(ni);
}
/* Shut every NI down (destroy). */
void lnet_ni_shutdown_all(ulnet_t *ln);

#endif
