/* SPDX-License-Identifier: MIT */
/*
 * peer.h - peers and peer NIs (struct lnet_peer, struct lnet_peer_ni,
 * peer.c): the peer table, references, health values, peer NIDs, and the
 * messages that wait on a peer for its discovery.
 */
#ifndef ULNET_CORE_PEER_H
#define ULNET_CORE_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/instance.h"
#include "core/latency.h"
#include "core/list.h"
#include "core/msg.h"
#include "ulnet/ulnet.h"

/* --- peers ----------------------------------------------------------------------- */

/* lp_state bits (the kernel's values). */
#define LNET_PEER_MULTI_RAIL     (1u << 0)
#define LNET_PEER_NO_DISCOVERY   (1u << 1)
#define LNET_PEER_ROUTER_ENABLED (1u << 2)
#define LNET_PEER_CONFIGURED     (1u << 3)
#define LNET_PEER_DISCOVERED     (1u << 4)
#define LNET_PEER_REDISCOVER     (1u << 5)
#define LNET_PEER_DISCOVERING    (1u << 6)
#define LNET_PEER_DATA_PRESENT   (1u << 7)
#define LNET_PEER_NIDS_UPTODATE  (1u << 8)
#define LNET_PEER_PING_SENT      (1u << 9)
#define LNET_PEER_PUSH_SENT      (1u << 10)
#define LNET_PEER_PING_FAILED    (1u << 11)
#define LNET_PEER_PUSH_FAILED    (1u << 12)
#define LNET_PEER_FORCE_PING     (1u << 13)
#define LNET_PEER_FORCE_PUSH     (1u << 14)
#define LNET_PEER_RTR_DISCOVERED (1u << 17)   /* a gateway the router checker heard */
#define LNET_PEER_LOCK_PRIMARY   (1u << 20)   /* its primary NID stays (peer add --lock_prim) */
#define LNET_PEER_BAD_CONFIG     (1u << 21)   /* two locked peers claim one NID */

struct lnet_peer;
struct lnet_udsp_pref;   /* udsp.h */

struct lnet_peer_ni {
	struct ul_list lpni_hash;      /* ln_pni_hash chain */
	struct ul_list lpni_peer_list; /* lp_nis */
	struct lnet_peer *lpni_peer;   /* NULL once removed */
	ulnet_nid_t lpni_nid;
	int lpni_refcount;             /* table + messages */
	int lpni_txcredits, lpni_mintxcredits, lpni_maxtxcredits;
	long lpni_txqnob;
	struct ul_list lpni_txq;       /* messages waiting for a peer credit */
	/* router credits: messages from it we forward (router.c) */
	int lpni_rtrcredits, lpni_minrtrcredits, lpni_maxrtrcredits;
	struct ul_list lpni_rtrq;      /* forwarded messages waiting for one */
	uint32_t lpni_ns_status;       /* as the peer's ping info said */
	bool lpni_recovering;          /* a recovery ping is out (peer.c) */
	uint64_t lpni_next_ping;       /* instance clock: next recovery ping no sooner */
	uint64_t lpni_last_alive;      /* instance clock: last message from it; 0 never */
	unsigned lpni_seq;
	/* a non-Multi-Rail peer hears from one NI of ours (send.c) */
	bool lpni_pref_set;
	ulnet_nid_t lpni_pref_nid;
	/* UDSP (udsp.c): priorities as the NI's, and the preferred lists */
	uint32_t lpni_sel_prio;        /* this peer NI's */
	uint32_t lpni_net_sel_prio;    /* its peer net's (the kernel's lpn_sel_priority) */
	struct lnet_udsp_pref *lpni_udsp; /* NULL: no preferred NIs or gateways */
	/* per message type; the totals are their sums (lnet_type_counts_sum()) */
	struct ulnet_msg_type_counts lpni_sent, lpni_received, lpni_dropped;
	/* and their payload bytes, as the NI's */
	struct ulnet_msg_type_counts lpni_sent_bytes, lpni_received_bytes, lpni_dropped_bytes;
	struct lnet_latency lpni_put_egress, lpni_get_rtt, lpni_put_ack;
	struct ulnet_health_stats lpni_health;
};

struct lnet_peer {
	struct ul_list lp_list;        /* ln_peers */
	ulnet_nid_t lp_primary;
	unsigned lp_state;
	struct ul_list lp_nis;         /* lnet_peer_ni, primary first (but for a locked
					* primary NID taken from another peer) */
	int lp_nnis;
	struct ul_list lp_pending;     /* messages waiting for discovery */
	uint32_t lp_peer_seqno;        /* the peer's ping sequence number */
	uint32_t lp_node_seqno;        /* our sequence number it has (pushed) */
	uint32_t lp_features;          /* of its last ping info */
	unsigned lp_data_nbytes;       /* size of its last ping info */
	int lp_dc_error;               /* result of the last discovery */
	unsigned lp_dc_gen;            /* bumped when a discovery ends */
	ulnet_handle_t lp_ping_mdh;
	ulnet_handle_t lp_push_mdh;
	uint8_t *lp_ping_buf;          /* sink of the discovery ping */
	unsigned lp_ping_buflen;
	uint8_t *lp_push_buf;          /* our ping info as pushed */
	bool lp_removed;
	int lp_refcount;               /* ln_peers + in-flight discovery */
	uint64_t lp_rtrcheck_next;     /* a gateway: its next router check (route.c) */
	uint64_t lp_prim_lock_seq;     /* LOCK_PRIMARY: when it was locked (ln_prim_lock_seq) */
	/* push data received while busy: applied when the discovery ends */
	uint8_t *lp_data;
	unsigned lp_data_len;
};

/* --- peers (peer.c) ------------------------------------------------------------- */

int lnet_peer_tables_init(ulnet_t *ln);
void lnet_peer_tables_fini(ulnet_t *ln);
/* The lookups by hash (the last peer NI found missed). */
struct lnet_peer_ni *lnet_peer_ni_find_hash_locked(ulnet_t *ln, const ulnet_nid_t *nid);
struct lnet_peer_ni *lnet_peer_ni_get_slow_locked(ulnet_t *ln, const ulnet_nid_t *nid);
/* The peer NI of `nid`, or NULL. Inline: a busy node mostly talks to the
 * peer it just talked to (ln_pni_last), one compare and no call. */
static inline struct lnet_peer_ni *lnet_peer_ni_find_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct lnet_peer_ni *last = ln->ln_pni_last;

	if (last && lnet_nid_eq(&last->lpni_nid, nid))
		return last;
	return lnet_peer_ni_find_hash_locked(ln, nid);
}
/* Find the peer NI of `nid`, creating peer and peer NI if needed. */
static inline struct lnet_peer_ni *lnet_peer_ni_get_locked(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct lnet_peer_ni *last = ln->ln_pni_last;

	if (last && lnet_nid_eq(&last->lpni_nid, nid))
		return last;
	return lnet_peer_ni_get_slow_locked(ln, nid);
}
void lnet_peer_ni_free_locked(struct lnet_peer_ni *lpni);
static inline void lnet_peer_ni_addref_locked(struct lnet_peer_ni *lpni) { lpni->lpni_refcount++; }
static inline void lnet_peer_ni_decref_locked(ulnet_t *ln, struct lnet_peer_ni *lpni)
{
	(void)ln;
	LASSERT(lpni->lpni_refcount > 0);
	if (--lpni->lpni_refcount == 0)
		lnet_peer_ni_free_locked(lpni);
}
/* Peer NI health, as the kernel's lnet_dec/inc_healthv(): down by
 * health_sensitivity on a failure (not below 0), up by it on a success
 * (not above ULNET_MAX_HEALTH). Selection prefers the healthiest peer NI. */
static inline void lnet_healthv_dec_locked(ulnet_t *ln, struct ulnet_health_stats *hs)
{
	int h = hs->health_value, s = ln->ln_g.health_sensitivity;

	hs->health_value = h < s ? 0 : h - s;
}
static inline void lnet_healthv_inc_locked(ulnet_t *ln, struct ulnet_health_stats *hs)
{
	int h = hs->health_value + ln->ln_g.health_sensitivity;

	hs->health_value = h > ULNET_MAX_HEALTH ? ULNET_MAX_HEALTH : h;
}
static inline void lnet_peer_ni_health_dec_locked(ulnet_t *ln, struct lnet_peer_ni *lpni)
{
	lnet_healthv_dec_locked(ln, &lpni->lpni_health);
}
static inline void lnet_peer_ni_health_inc_locked(ulnet_t *ln, struct lnet_peer_ni *lpni)
{
	lnet_healthv_inc_locked(ln, &lpni->lpni_health);
}
/* The NI status a ping/push reported for `lpni` (handle_disc_lpni_health()
 * in the kernel): a change to DOWN lowers its health once. */
void lnet_peer_ni_set_ns_status_locked(ulnet_t *ln, struct lnet_peer_ni *lpni, uint32_t status);
/* Primary NID of the peer owning `nid` (or `nid` itself). */
void lnet_peer_primary_nid_locked(ulnet_t *ln, const ulnet_nid_t *nid, ulnet_nid_t *primary);
bool lnet_peer_same_locked(void *ln, const ulnet_nid_t *a, const ulnet_nid_t *b);
/* Add a NID to a peer (moving it from another peer when needed). */
int lnet_peer_add_nid_locked(ulnet_t *ln, struct lnet_peer *lp, const ulnet_nid_t *nid);
void lnet_peer_decref_locked(ulnet_t *ln, struct lnet_peer *lp);
/* An NI came up on `net`: peer NIs there created without credits get them. */
void lnet_peer_net_added_locked(ulnet_t *ln, ulnet_net_t net);
/* Take a peer NI out of its peer and of the table (freed when unused). */
void lnet_peer_ni_remove_locked(ulnet_t *ln, struct lnet_peer_ni *lpni);
/* Fail every message queued for discovery (destroy). */
void lnet_peer_fail_pending_locked(ulnet_t *ln, struct ul_list *out);
/* Take the messages of `md` that wait for a peer's discovery off their
 * queue, into q->sq_fail with -ECANCELED (md.c, when the MD is unlinked). */
void lnet_peer_cancel_md_pending_locked(ulnet_t *ln, const struct lnet_libmd *md,
					struct lnet_sendq *q);
/* Peer aliveness (the kernel's, on routers only): while routing is not
 * DISABLED, a peer NI on a net whose NI has a peer_timeout is alive as
 * long as its status is UP: a receive from it sets UP, its LND reporting
 * it failed (lnet_notify_peer_ni()) sets DOWN. */
bool lnet_peer_aliveness_enabled_locked(ulnet_t *ln, const struct lnet_peer_ni *lpni);

/* A message stops waiting for discovery (sent, failed or cancelled). */
static inline void lnet_msg_dc_wait_end(ulnet_t *ln, struct lnet_msg *msg)
{
	if (msg->msg_discovery_wait) {
		msg->msg_discovery_wait = 0;
		ln->ln_dc_waiting--;
	}
}

#endif
