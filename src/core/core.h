/* SPDX-License-Identifier: MIT */
/*
 * core.h - internal types of the LNet core: the instance, its NIs, portals,
 * match entries (ME), memory descriptors (MD), messages and peers.
 *
 * Locking: every field below that can change after creation is protected by
 * the instance mutex `ln_lock` unless its comment says otherwise. The lock
 * is never held while an event handler or an LND op runs; functions named
 * *_locked expect it held.
 */
#ifndef ULNET_CORE_CORE_H
#define ULNET_CORE_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "core/lnd.h"
#include "core/lnet_hdr.h"
#include "core/memreg.h"
#include "core/ping_info.h"
#include "util/ul_lock.h"
#include "ulnet/routing.h"
#include "ulnet/ulnet.h"
#include "util/evloop.h"
#include "util/log.h"

/* --- invariants ------------------------------------------------------------ */

/* Always on (release builds too): a broken invariant is a bug in the core or
 * an LND (a message finalized twice), and continuing would corrupt memory. */
#define LASSERT(cond)                                                          \
	do {                                                                   \
		if (__builtin_expect(!(cond), 0))                              \
			lnet_assert_fail(#cond, __FILE__, __LINE__);           \
	} while (0)
_Noreturn void lnet_assert_fail(const char *expr, const char *file, int line);

/* --- intrusive doubly linked list ------------------------------------------ */

struct ul_list {
	struct ul_list *next, *prev;
};

#define ul_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void ul_list_init(struct ul_list *l) { l->next = l->prev = l; }
static inline bool ul_list_empty(const struct ul_list *l) { return l->next == l; }
static inline void ul_list_insert(struct ul_list *n, struct ul_list *prev, struct ul_list *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}
static inline void ul_list_add(struct ul_list *n, struct ul_list *head) { ul_list_insert(n, head, head->next); }
static inline void ul_list_add_tail(struct ul_list *n, struct ul_list *head) { ul_list_insert(n, head->prev, head); }
static inline void ul_list_del(struct ul_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	ul_list_init(n);
}
/* Move every entry of `from` to the tail of `to`. */
static inline void ul_list_splice_tail(struct ul_list *from, struct ul_list *to)
{
	if (ul_list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	ul_list_init(from);
}
#define ul_list_first(head, type, member) \
	(ul_list_empty(head) ? NULL : ul_container_of((head)->next, type, member))
#define ul_list_for_each(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)
#define ul_list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)

/* --- handles ---------------------------------------------------------------- */

/*
 * Cookie layout: bits 0-1 object type, bits 2-33 slot index, bits 34-63 slot
 * generation (never 0). A freed slot bumps its generation, so an old cookie
 * never names a new object. Type 3 is unused, so no cookie is all-ones (the
 * "no ACK" wire handle) and none is 0 (ULNET_HANDLE_NONE).
 */
enum lnet_obj_type { LNET_OBJ_MD = 1, LNET_OBJ_ME = 2 };

struct lnet_handle_slot {
	void *obj;          /* NULL: free */
	uint32_t gen;
	uint32_t next_free; /* free list link (index + 1; 0 ends) */
};

struct lnet_handle_table {
	struct lnet_handle_slot *slots;
	uint32_t nslots, cap;
	uint32_t free_head; /* index + 1 of the first free slot, 0: none */
	uint32_t nused;
};

void lnet_handle_table_init(struct lnet_handle_table *t);
void lnet_handle_table_fini(struct lnet_handle_table *t);
/* Returns 0 and the cookie, or -ENOMEM. */
int lnet_handle_alloc(struct lnet_handle_table *t, void *obj, enum lnet_obj_type type,
		      uint64_t *cookie);
#define LNET_HANDLE_TYPE_BITS 2
#define LNET_HANDLE_GEN_SHIFT (LNET_HANDLE_TYPE_BITS + 32)   /* after the 32 index bits */
/* The object named by `cookie` if it is live and of `type`, else NULL.
 * Inline: every PUT/GET and every ACK/REPLY looks its MD up. */
static inline void *lnet_handle_lookup(const struct lnet_handle_table *t, uint64_t cookie,
				       enum lnet_obj_type type)
{
	uint64_t idx = (cookie >> LNET_HANDLE_TYPE_BITS) & 0xffffffffu;
	uint32_t gen = (uint32_t)(cookie >> LNET_HANDLE_GEN_SHIFT);
	const struct lnet_handle_slot *s;

	if ((cookie & ((1u << LNET_HANDLE_TYPE_BITS) - 1)) != (uint64_t)type)
		return NULL;
	if (idx >= t->nslots)
		return NULL;
	s = &t->slots[idx];
	if (!s->obj || s->gen != gen)
		return NULL;
	return s->obj;
}

/* Invalidate a live cookie (its slot is reused later, with a new generation). */
void lnet_handle_free(struct lnet_handle_table *t, uint64_t cookie);

/* --- MEs, MDs, portals ------------------------------------------------------ */

#define LNET_MD_FLAG_ZOMBIE      0x1u  /* unlinked; freed when idle */
#define LNET_MD_FLAG_AUTO_UNLINK 0x2u  /* ULNET_UNLINK: unlink when exhausted */
#define LNET_MD_FLAG_ABORTED     0x4u  /* ulnet_md_unlink()/timeout: abort sends */
#define LNET_MD_FLAG_HANDLING    0x8u  /* a handler runs on it without the lock */

struct lnet_me;

struct lnet_libmd {
	struct ul_list md_list;        /* ln_md_active */
	uint64_t md_cookie;
	struct lnet_me *md_me;         /* attached ME, NULL when bound */
	void *md_start;                /* as given: buffer or iovec array */
	size_t md_length;              /* total bytes */
	size_t md_offset;              /* running offset (shared by PUT and GET) */
	size_t md_max_size;
	unsigned md_options;
	int md_threshold;
	int md_refcount;               /* messages holding it */
	unsigned md_flags;
	void *md_user_ptr;
	ulnet_handler_t md_handler;
	pthread_t md_handling_thread;  /* valid with LNET_MD_FLAG_HANDLING */
	/* response tracking (one tracker per MD, as the kernel) */
	struct ul_list md_rspt_list;   /* ln_rspt_list while tracked */
	uint64_t md_rspt_deadline;
	uint64_t md_rspt_start;
	int md_rspt_pending;           /* responses (ACK/REPLY) still expected */
	bool md_rspt_active;
	bool md_rspt_hop_set;
	ulnet_nid_t md_rspt_hop;       /* the peer NI the last request went to */
	unsigned md_niov;
	struct iovec md_iov[];         /* md_niov fragments (1 for a plain buffer) */
};

static inline bool lnet_md_exhausted(const struct lnet_libmd *md)
{
	return md->md_threshold == 0 ||
	       ((md->md_options & ULNET_MD_MAX_SIZE) && md->md_offset + md->md_max_size > md->md_length);
}

static inline bool lnet_md_unlinkable(const struct lnet_libmd *md)
{
	if (md->md_refcount != 0)
		return false;
	if (md->md_flags & LNET_MD_FLAG_ZOMBIE)
		return true;
	return (md->md_flags & LNET_MD_FLAG_AUTO_UNLINK) && lnet_md_exhausted(md);
}

#define LNET_MT_HASH_BITS 12   /* the kernel has 8; more chains, same order */
#define LNET_MT_HASH_SIZE (1u << LNET_MT_HASH_BITS)
#define LNET_MT_HASH_IGNORE LNET_MT_HASH_SIZE   /* the list of MEs with ignore bits */

struct lnet_me {
	struct ul_list me_list;        /* in its portal's hash chain or ignore list */
	struct ul_list me_ptl_link;    /* in its portal's ptl_me_all */
	uint64_t me_cookie;
	unsigned me_portal;
	ulnet_process_id_t me_match_id;
	uint64_t me_match_bits;
	uint64_t me_ignore_bits;
	enum ulnet_unlink me_unlink;
	unsigned me_pos;               /* hash chain index or LNET_MT_HASH_IGNORE */
	struct lnet_libmd *me_md;
};

#define LNET_PTL_LAZY     0x1u
#define LNET_PTL_UNIQUE   0x2u
#define LNET_PTL_WILDCARD 0x4u

struct lnet_portal {
	unsigned ptl_index;
	unsigned ptl_options;
	unsigned ptl_nme;
	/* LNET_MT_HASH_SIZE chains plus the ignore-bits list; allocated
	 * zeroed with the first ME (most portals are never used), a chain
	 * initialised when an ME first goes in (a zeroed chain is empty), so
	 * neither set-up nor teardown walks thousands of empty chains. */
	struct ul_list *ptl_mhash;
	struct ul_list ptl_me_all;     /* every ME of the portal, for teardown */
	struct ul_list ptl_msg_delayed; /* PUTs waiting on a lazy portal */
};

/* What a request asks to match (lnet_try_match_md(), portal.c). */
struct lnet_match_info {
	ulnet_process_id_t mi_id;      /* initiator (primary NID) and PID */
	unsigned mi_opc;               /* ULNET_MD_OP_PUT or ULNET_MD_OP_GET */
	unsigned mi_portal;
	uint32_t mi_rlength;
	uint32_t mi_roffset;
	uint64_t mi_mbits;
};

/* Outcome bits of matching, as the kernel's LNET_MATCHMD_*. */
#define LNET_MATCHMD_NONE      0x01  /* no match (try the next ME) */
#define LNET_MATCHMD_OK        0x02  /* matched: take it */
#define LNET_MATCHMD_DROP      0x04  /* matched but must be dropped (too long), or give up */
#define LNET_MATCHMD_EXHAUSTED 0x08  /* the MD is (now) exhausted */
#define LNET_MATCHMD_FINISH    (LNET_MATCHMD_OK | LNET_MATCHMD_DROP)


/* --- messages --------------------------------------------------------------- */

enum lnet_msg_state { LNET_MSG_FREE = 0, LNET_MSG_BUSY = 1 };

struct lnet_rtrbuf;       /* router.h */
struct lnet_rtrbufpool;

struct lnet_msg {
	struct ul_list msg_list;       /* free list, credit queue, lazy queue, discovery queue */
	ulnet_t *msg_ln;
	struct lnet_msg *msg_fin_next; /* per-thread finalize queue */
	int msg_fin_status;
	unsigned msg_state;
	int msg_finalized;             /* exactly-once guard, atomic */

	uint32_t msg_type;             /* enum ulnet_msg_type */
	ulnet_process_id_t msg_target; /* where it goes (sending) */
	ulnet_nid_t msg_from;          /* last hop (receiving) */
	ulnet_nid_t msg_initiator;     /* primary NID of the sender (receiving) */
	ulnet_nid_t msg_src_nid_param; /* local NID the caller asked for, or ANY */
	struct lnet_hdr msg_hdr;

	union {
		struct {
			unsigned msg_sending:1;
			unsigned msg_receiving:1;
			unsigned msg_tx_committed:1;
			unsigned msg_rx_committed:1;
			unsigned msg_ack:1;            /* send an ACK once the PUT is in */
			unsigned msg_txcredit:1;
			unsigned msg_peertxcredit:1;
			unsigned msg_tx_delayed:1;
			unsigned msg_rx_delayed:1;     /* waiting on a lazy portal */
			unsigned msg_discovery_wait:1; /* queued on a peer until discovered */
			unsigned msg_tracked:1;        /* counted in md_rspt_pending */
			unsigned msg_retries:8;        /* resends so far (lnet_health_check_locked()) */
			unsigned msg_recovery:1;       /* recovery ping: to its NID only, never resent */
			unsigned msg_routed:1;         /* goes to a gateway (msg_txpeer), not its dest */
			unsigned msg_forward:1;        /* not ours: received, then sent on (router.c) */
			unsigned msg_rtrcredit:1;      /* holds a router credit of msg_rxpeer */
			/* a GET whose REPLY the LND moves itself: on the
			 * target, parsed with rdma_req (its recv() writes the
			 * REPLY); on the requester, its REPLY message made by
			 * lnet_create_reply_msg() (never resent) */
			unsigned msg_rdma_get:1;
			/* enum ulnet_hstatus of a failed send, as the LND or a
			 * fault rule classed it (the kernel's msg_health_status);
			 * 0: classed from the errno (lnet_health_check_locked()) */
			unsigned msg_hstatus:4;
		};
		unsigned msg_bits;             /* all of the above at once */
	};

	struct lnet_ni *msg_txni;
	struct lnet_ni *msg_rxni;
	struct lnet_peer_ni *msg_txpeer;
	struct lnet_peer_ni *msg_rxpeer;
	struct lnet_libmd *msg_md;

	uint32_t msg_len;              /* payload bytes on the wire */
	uint32_t msg_offset;           /* into the MD */
	uint32_t msg_wanted;           /* bytes placed (receiving) */
	const struct iovec *msg_iov;   /* payload fragments (the MD's) */
	unsigned msg_niov;

	void *msg_rx_private;
	uint64_t msg_deadline;         /* instance clock */
	uint64_t msg_t_start;
	uint64_t msg_resend_deadline;  /* no resend after it; valid once msg_retries > 0 */
	void *msg_lnd_slot;
	struct lnet_rtrbuf *msg_rtrbuf; /* a forwarded message's router buffer */
	uint64_t msg_fault_release;    /* held by a delay rule until (fault.c) */
	struct ulnet_event msg_ev;
};

/* One message of `type` and its payload bytes, in an NI's or a peer NI's
 * per-type counts (sent, received or dropped: each kept with its bytes). */
static inline void lnet_count_type(struct ulnet_msg_type_counts *msgs,
				   struct ulnet_msg_type_counts *bytes, unsigned type, uint64_t nob)
{
	msgs->n[type]++;
	bytes->n[type] += nob;
}

/* --- latency figures ------------------------------------------------------- */

/* struct ulnet_latency kept as a sum: adding a sample needs no division
 * (the average is computed when read, lnet_latency_get()); and by bucket
 * (ULNET_LAT_BUCKETS of them, each sample counted in its own only: the
 * cumulative counts a histogram shows are summed when read). */
struct lnet_latency {
	uint64_t samples, min_nsec, max_nsec, sum_nsec;
	uint64_t bucket[ULNET_LAT_BUCKETS];
};

/* The bucket of a sample of `ns` nanoseconds: the first whose bound,
 * 2^(ULNET_LAT_BUCKET_SHIFT + k), it does not pass, or the last (+Inf).
 * ns <= 2^b for b the bit length of ns - 1 (of 0 for ns 0), so
 * k = b - SHIFT; OR-ing in 2^SHIFT - 1 puts every ns up to the first bound
 * in bucket 0. No loop, no division: one count of leading zeros. */
_Static_assert(ULNET_LAT_BUCKET_SHIFT + ULNET_LAT_BUCKETS - 2 < 64,
	       "the last finite latency bound fits in 64 bits");
static inline unsigned lnet_latency_bucket(uint64_t ns)
{
	uint64_t v = (ns - (ns != 0)) | ((UINT64_C(1) << ULNET_LAT_BUCKET_SHIFT) - 1);
	unsigned k = (unsigned)(64 - ULNET_LAT_BUCKET_SHIFT) - (unsigned)__builtin_clzll(v);

	return k < ULNET_LAT_BUCKETS - 1 ? k : ULNET_LAT_BUCKETS - 1;
}

static inline void lnet_latency_add(struct lnet_latency *l, uint64_t ns)
{
	if (!l->samples || ns < l->min_nsec)
		l->min_nsec = ns;
	if (ns > l->max_nsec)
		l->max_nsec = ns;
	l->sum_nsec += ns;
	l->samples++;
	l->bucket[lnet_latency_bucket(ns)]++;
}

static inline struct ulnet_latency lnet_latency_get(const struct lnet_latency *l)
{
	struct ulnet_latency r = { .samples = l->samples, .min_nsec = l->min_nsec,
				   .max_nsec = l->max_nsec,
				   .avg_nsec = l->samples ? l->sum_nsec / l->samples : 0,
				   .sum_nsec = l->sum_nsec };

	memcpy(r.bucket, l->bucket, sizeof(r.bucket));
	return r;
}

/* A total of per-type counts: kept as the sum, not a counter of its own,
 * so a message costs one increment per NI and peer NI, not two. */
static inline uint64_t lnet_type_counts_sum(const struct ulnet_msg_type_counts *c)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(c->n) / sizeof(c->n[0]); i++)
		sum += c->n[i];
	return sum;
}

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

/* --- the instance ------------------------------------------------------------- */

enum lnet_state { LNET_STATE_RUNNING = 1, LNET_STATE_STOPPING = 2 };

struct ulnet {
	pthread_mutex_t ln_api_lock;   /* serializes configuration (taken before ln_lock) */
	uint32_t ln_lock;              /* lnet_lock(): a futex lock, util/ul_lock.h */
	uint32_t ln_cond_seq;          /* lnet_cond_*(): MD handling ends, discovery ends */
	int ln_handling_waiters;       /* threads waiting on the condition for an MD's
					* LNET_MD_FLAG_HANDLING to clear */
	enum lnet_state ln_state;
	ulnet_pid_t ln_pid;
	unsigned ln_flags;
	ulnet_clock_fn ln_clock;
	void *ln_clock_arg;
	struct ul_logger ln_log;
	char ln_log_prefix[ULNET_NIDSTR_SIZE];
	struct ul_loop *ln_loop;
	pthread_t ln_thread;
	bool ln_has_thread;
	int ln_stop;                   /* atomic: progress thread must exit */
	uint64_t ln_interface_cookie;

	const struct ulnet_lnd *ln_lnds[256];
	void *ln_lnd_shared[256];      /* lnet_ni_lnd_shared(): each LND's own */

	struct ul_list ln_nis;
	int ln_nnis;
	unsigned ln_ni_gen;            /* bumped whenever ln_nis changes (never 0) */
	/* The up NIs on one net, for the send path (lnet_net_nis_locked()):
	 * valid while nc_gen == ln_ni_gen. nc_only is the NI when there is
	 * exactly one (never read once the NI list changed). */
	struct {
		unsigned nc_gen;
		ulnet_net_t nc_net;
		int nc_nnis;
		struct lnet_ni *nc_only;
	} ln_net_cache;
	unsigned ln_tx_waiting;        /* messages on ni_tx_delayed/lpni_txq; changed under
					 * the lock with atomics, read without it */
	struct lnet_ni *ln_loni;

	struct lnet_portal ln_portals[ULNET_MAX_PORTALS];
	struct lnet_handle_table ln_handles;
	struct ul_list ln_md_active;
	struct lnet_memreg ln_memreg;  /* for LNDs that keep device registrations */

	/* message pool: allocated in chunks, never freed before destroy */
	struct ul_list ln_msg_free;
	void **ln_msg_chunks;
	unsigned ln_nmsg_chunks;

	/* response tracking, ordered by deadline */
	struct ul_list ln_rspt_list;
	struct ul_timer ln_rspt_timer;

	/* peers */
	struct ul_list ln_peers;
	int ln_npeers;
	uint64_t ln_prim_lock_seq;     /* orders the locking of primary NIDs */
	int ln_dc_waiting;             /* messages queued on peers until discovered */
	/* routes (route.c): struct lnet_remotenet, in the order first added */
	struct ul_list ln_remote_nets;
	int ln_nroutes;
	struct ul_timer ln_rtrcheck_timer; /* the router checker, while routes exist */
	/* the router role (router.c) */
	int ln_routing;                /* enum ulnet_routing_state */
	bool ln_rtrpools_alloc;        /* routing was enabled once: pools exist */
	struct ulnet_router_params ln_rtr_params;
	/* fault injection (fault.c): rules by kind, drop and delay */
	struct ul_list ln_fault_rules[2];
	int ln_fault_n[2];             /* rules of each kind (lock-free hint) */
	int ln_fault_nhealth;          /* drop rules acting on the send path */
	struct ul_timer ln_fault_timer;  /* releases held messages */
	/* selection policies (udsp.c): struct lnet_udsp, index order */
	struct ul_list ln_udsp;
	int ln_nudsp;
	unsigned ln_udsp_kinds;        /* LNET_UDSP_K_* of the rules there are */
	/* link state (ni_link.c) */
	int ln_nfatal;                 /* NIs with a link held down: selection looks */
	struct ul_timer ln_link_timer; /* ends fault link --duration */
	struct lnet_rtrbufpool *ln_rtrpools;   /* ULNET_RTR_NPOOLS */
	int ln_rtr_nbuffers[3];        /* wanted totals (0: the default) */
	uint64_t ln_rtr_phase_min, ln_rtr_phase_max; /* STARTING/STOPPING ends */
	struct ul_timer ln_rtr_timer;  /* ticks while STARTING or STOPPING */
	struct ul_list *ln_pni_hash;
	unsigned ln_pni_hash_size;
	struct lnet_peer_ni *ln_pni_last; /* last one found (in the table), or NULL */
	struct ul_timer ln_recovery_timer; /* pings unhealthy NIs (recovery.c) */
	bool ln_ping_stale;            /* an NI's status changed: rebuild the ping target */

	struct ulnet_globals ln_g;
	struct ulnet_counters ln_ctr;

	/* ping target (GET on portal 0) and push target (PUT on portal 0) */
	uint32_t ln_ping_seqno;
	uint8_t *ln_ping_buf;          /* the encoded ping info the target holds */
	size_t ln_ping_len;
	ulnet_handle_t ln_ping_mdh;
	uint8_t *ln_push_buf;
	size_t ln_push_len;
	size_t ln_push_nbytes;         /* wanted size of the next push target */
	ulnet_handle_t ln_push_mdh;
	bool ln_push_posted;
};

/* --- instance helpers (instance.c) ----------------------------------------- */

/* The instance lock is a futex lock (util/ul_lock.h) rather than a pthread
 * mutex: the core takes it four or five times per message. */
static inline void lnet_lock(ulnet_t *ln) { ul_lock(&ln->ln_lock); }
static inline void lnet_unlock(ulnet_t *ln) { ul_unlock(&ln->ln_lock); }
/* Condition of the instance lock (pthread_cond_wait()/timedwait() with
 * ln_lock): sleep until a broadcast or, with `abs_mono` (CLOCK_MONOTONIC,
 * absolute), a timeout (-ETIMEDOUT). Spurious wakeups happen: callers loop
 * on their predicate. */
static inline int lnet_cond_wait_locked(ulnet_t *ln, const struct timespec *abs_mono)
{
	return ul_cond_wait(&ln->ln_cond_seq, &ln->ln_lock, abs_mono);
}
static inline void lnet_cond_broadcast(ulnet_t *ln) { ul_cond_broadcast(&ln->ln_cond_seq); }
static inline uint64_t lnet_now(const ulnet_t *ln) { return ln->ln_clock(ln->ln_clock_arg); }
#define LNET_NSEC_PER_SEC 1000000000ULL

/* Turn `loop` until *stop (atomic): the progress thread's body, and each
 * NI thread's (ni_thread.c). */
void lnet_loop_serve(ulnet_t *ln, struct ul_loop *loop, const int *stop);
void lnet_log(const ulnet_t *ln, enum ulnet_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* NID text for logs (does not need nid_str.c). */
const char *lnet_nidstr(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE]);
/* ulnet_nid_same() without the wire encoding: for hot paths. */
/* size, type and num fill the first 4 bytes and addr the other 16: compared
 * as one 32-bit and two 64-bit words (several compares per message). */
_Static_assert(offsetof(ulnet_nid_t, type) == 1 && offsetof(ulnet_nid_t, num) == 2 &&
		       offsetof(ulnet_nid_t, addr) == 4 && sizeof(ulnet_nid_t) == 20,
	       "ulnet_nid_t has no padding");
static inline bool lnet_nid_eq(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	uint32_t ha, hb;
	uint64_t a0, a1, b0, b1;

	memcpy(&ha, a, sizeof(ha));
	memcpy(&hb, b, sizeof(hb));
	if (ha != hb)
		return false;
	memcpy(&a0, a->addr, 8);
	memcpy(&a1, a->addr + 8, 8);
	memcpy(&b0, b->addr, 8);
	memcpy(&b1, b->addr + 8, 8);
	return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}
/* Inline forms of ulnet_nid_is_any() and of "is 0@lo" for the send path
 * (most NIDs there are neither: one compare). */
static inline bool lnet_nid_is_any(const ulnet_nid_t *nid) { return nid->type == ULNET_LND_ANY; }
static inline bool lnet_nid_is_lo0(const ulnet_nid_t *nid)
{
	return nid->type == ULNET_LND_LO && lnet_nid_eq(nid, &ULNET_NID_LO0);
}

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

/* --- portals and MEs (portal.c) ---------------------------------------------- */

void lnet_portals_init(ulnet_t *ln);
void lnet_portals_fini(ulnet_t *ln);
/* Match an incoming PUT/GET: OK (MD attached to msg), NONE (delayed on a
 * lazy portal) or DROP. */
int lnet_ptl_match_md_locked(ulnet_t *ln, const struct lnet_match_info *info,
			     struct lnet_msg *msg);
/* Try the delayed PUTs of the ME's portal against its new MD; matched ones
 * go on `matches`, too-long ones on `drops`. */
void lnet_ptl_attach_md_locked(ulnet_t *ln, struct lnet_me *me, struct lnet_libmd *md,
			       struct ul_list *matches, struct ul_list *drops);
void lnet_me_unlink_locked(ulnet_t *ln, struct lnet_me *me);
/* Take every delayed message (of `ni`, or all with NULL) off the lazy
 * queues; `all_lazy_off` also clears the lazy flags. */
void lnet_ptl_take_delayed_locked(ulnet_t *ln, struct lnet_ni *ni, struct ul_list *out);
void lnet_drop_delayed_msg_list(ulnet_t *ln, struct ul_list *list, const char *reason);
void lnet_recv_delayed_msg_list(ulnet_t *ln, struct ul_list *list);

/* --- MDs (md.c) --------------------------------------------------------------- */

/* ulnet_md_bind with the lock held. */
int lnet_md_bind_locked(ulnet_t *ln, const struct ulnet_md *umd, enum ulnet_unlink unlink,
			struct lnet_libmd **mdp);
/* Start (or finish) the unlink of an MD; frees it once idle. */
void lnet_md_unlink_locked(ulnet_t *ln, struct lnet_libmd *md);
void lnet_md_free_locked(ulnet_t *ln, struct lnet_libmd *md);
/* The MD a wire handle names, if it is ours and live. */
static inline struct lnet_libmd *lnet_wire_handle2md_locked(ulnet_t *ln,
							     const lnet_wire_handle_t *wh)
{
	/* handles are only looked up by their creator */
	if (wh->wh_interface_cookie != ln->ln_interface_cookie)
		return NULL;
	return lnet_handle_lookup(&ln->ln_handles, wh->wh_object_cookie, LNET_OBJ_MD);
}

/* LNetMDUnlink with the status its UNLINK event carries (0, -ETIMEDOUT,
 * -ESHUTDOWN). Drops and retakes the lock to run the handler. */
void lnet_md_unlink_event_locked(ulnet_t *ln, struct lnet_libmd *md, int status);
/* Wait until no other thread runs a handler on `md`; returns false if the
 * MD went away meanwhile (looked up again by cookie). */
bool lnet_md_wait_handling_locked(ulnet_t *ln, uint64_t cookie, struct lnet_libmd **mdp);
static inline void lnet_md_deconstruct(const struct lnet_libmd *md, struct ulnet_event *ev)
{
	ev->md_start = md->md_start;
	ev->md_options = md->md_options;
	ev->md_user_ptr = md->md_user_ptr;
	ev->md_handle.cookie = md->md_cookie;
}

/* --- messages (msg.c) --------------------------------------------------------- */

int lnet_msg_pool_init(ulnet_t *ln);
void lnet_msg_pool_fini(ulnet_t *ln);
/* Alloc, free and commit are inline: each runs once or twice per message
 * (the pool grows out of line). */
int lnet_msg_pool_grow_locked(ulnet_t *ln);
static inline struct lnet_msg *lnet_msg_alloc_locked(ulnet_t *ln)
{
	struct lnet_msg *msg;

	if (__builtin_expect(ul_list_empty(&ln->ln_msg_free), 0) && lnet_msg_pool_grow_locked(ln))
		return NULL;
	msg = ul_list_first(&ln->ln_msg_free, struct lnet_msg, msg_list);
	ul_list_del(&msg->msg_list);
	LASSERT(msg->msg_state == LNET_MSG_FREE);
	/* No memset of the ~0.5 KiB message (a `rep stos` per message): the
	 * fields read before being written are cleared here. The header is
	 * written in full by lnet_prep_send() or lnet_parse() before anything
	 * reads it; msg_target, msg_from, msg_initiator and msg_src_nid_param
	 * by the path that reads them (send or receive); the event by
	 * lnet_build_msg_event() and lnet_md_deconstruct() before a handler
	 * sees it (only its type is read earlier, by the counters). */
	msg->msg_fin_next = NULL;
	msg->msg_fin_status = 0;
	msg->msg_finalized = 0;
	msg->msg_bits = 0;
	msg->msg_txni = NULL;
	msg->msg_rxni = NULL;
	msg->msg_txpeer = NULL;
	msg->msg_rxpeer = NULL;
	msg->msg_md = NULL;
	msg->msg_len = 0;
	msg->msg_offset = 0;
	msg->msg_wanted = 0;
	msg->msg_iov = NULL;
	msg->msg_niov = 0;
	msg->msg_rx_private = NULL;
	msg->msg_deadline = 0;
	msg->msg_t_start = 0;
	msg->msg_lnd_slot = NULL;
	ul_list_init(&msg->msg_list);
	msg->msg_ln = ln;
	msg->msg_state = LNET_MSG_BUSY;
	msg->msg_ev.ln = ln;
	msg->msg_ev.type = 0;
	return msg;
}

static inline void lnet_msg_free_locked(ulnet_t *ln, struct lnet_msg *msg)
{
	LASSERT(msg->msg_state == LNET_MSG_BUSY);
	LASSERT(!msg->msg_md && !msg->msg_tx_committed && !msg->msg_rx_committed);
	LASSERT(!msg->msg_rtrbuf);   /* so a new message starts without one */
	msg->msg_state = LNET_MSG_FREE;
	ul_list_add(&msg->msg_list, &ln->ln_msg_free);
}

static inline void lnet_msg_attach_md(struct lnet_msg *msg, struct lnet_libmd *md,
				      uint32_t offset, uint32_t mlen)
{
	/* from here the message owns a reference on the MD until finalize */
	msg->msg_md = md;
	if (msg->msg_receiving) {
		msg->msg_offset = offset;
		msg->msg_wanted = mlen;
	}
	md->md_refcount++;
	if (md->md_threshold != ULNET_MD_THRESH_INF) {
		LASSERT(md->md_threshold > 0);
		md->md_threshold--;
	}
	lnet_md_deconstruct(md, &msg->msg_ev);
}

static inline void lnet_msg_commit_locked(ulnet_t *ln, struct lnet_msg *msg, bool timed)
{
	/* only sends that may wait for credits need a deadline, and only
	 * PUTs a start time (the egress latency); loopback and receives
	 * don't, and skip the clock. The deadline of the others is set when
	 * they wait for a credit (lnet_post_send_locked(): in this critical
	 * section, so the same instant). A PUT may come with its start time
	 * already read (msg_t_start, by response tracking). */
	if (timed && msg->msg_type == ULNET_MSG_PUT) {
		uint64_t now = msg->msg_t_start ? msg->msg_t_start : lnet_now(ln);

		msg->msg_t_start = now;
		msg->msg_deadline = now + (uint64_t)ln->ln_g.transaction_timeout * LNET_NSEC_PER_SEC;
	} else if (timed) {
		msg->msg_t_start = 0;
		msg->msg_deadline = 0;   /* set when it waits for a credit */
	} else {
		msg->msg_t_start = 0;
		msg->msg_deadline = UINT64_MAX;
	}
	if (msg->msg_sending) {
		LASSERT(!msg->msg_tx_committed);
		msg->msg_tx_committed = 1;
		if (msg->msg_rx_committed) /* a REPLY reusing its GET: counted once */
			return;
	} else {
		LASSERT(!msg->msg_rx_committed);
		msg->msg_rx_committed = 1;
	}
	ln->ln_ctr.msgs_alloc++;
	if (ln->ln_ctr.msgs_alloc > ln->ln_ctr.msgs_max)
		ln->ln_ctr.msgs_max = ln->ln_ctr.msgs_alloc;
}

/* Finalize a message the core owns (never handed to an LND, or handed back). */
void lnet_finalize_core(struct lnet_msg *msg, int status);

/* Messages to hand to LNDs / fail once the lock is dropped. */
struct lnet_sendq {
	struct ul_list sq_send;
	struct ul_list sq_fail;        /* msg_fin_status holds the error */
	struct ul_list sq_recv;        /* forwarded messages given a router buffer */
};
static inline void lnet_sendq_init(struct lnet_sendq *q)
{
	ul_list_init(&q->sq_recv);
	ul_list_init(&q->sq_send);
	ul_list_init(&q->sq_fail);
}

/* The start of a timer callback of the instance: `q` ready, the lock
 * taken and the clock read, or false (unlocked) once the node stops. */
static inline bool lnet_timer_enter(ulnet_t *ln, struct lnet_sendq *q, uint64_t *now)
{
	lnet_sendq_init(q);
	lnet_lock(ln);
	if (ln->ln_state != LNET_STATE_RUNNING) {
		lnet_unlock(ln);
		return false;
	}
	*now = lnet_now(ln);
	return true;
}

/* Our best NI on `net` (more credits, then round robin), or NULL (send.c). */
struct lnet_ni *lnet_best_ni_on_net_locked(ulnet_t *ln, ulnet_net_t net);

/* --- send and receive (send.c, recv.c) ---------------------------------------- */

static inline void lnet_setpayloadbuffer(struct lnet_msg *msg)
{
	LASSERT(msg->msg_md);
	msg->msg_iov = msg->msg_md->md_iov;
	msg->msg_niov = msg->msg_md->md_niov;
}

/* lnet_prep_send() writes every byte of the header: no padding between
 * the fields it sets. */
_Static_assert(sizeof(struct lnet_hdr) ==
		       offsetof(struct lnet_hdr, msg) + sizeof(((struct lnet_hdr *)0)->msg) &&
	       offsetof(struct lnet_hdr, msg) == 2 * sizeof(ulnet_nid_t) + 4 * sizeof(uint32_t),
	       "struct lnet_hdr has no padding");

/* The header and the fields of a message about to be sent (inline: once
 * per message sent). */
static inline void lnet_prep_send(ulnet_t *ln, struct lnet_msg *msg, uint32_t type,
				  const ulnet_process_id_t *target, uint32_t offset, uint32_t len)
{
	msg->msg_type = type;
	msg->msg_target = *target;
	msg->msg_len = len;
	msg->msg_offset = offset;
	msg->msg_iov = NULL;
	msg->msg_niov = 0;
	if (len)
		lnet_setpayloadbuffer(msg);
	/* field by field: a memset of the whole header is a `rep stos` */
	msg->msg_hdr.type = type;
	/* dest_nid is the peer NI chosen later; src_nid the local NI */
	msg->msg_hdr.dest_nid = target->nid;
	memset(&msg->msg_hdr.src_nid, 0, sizeof(msg->msg_hdr.src_nid));
	msg->msg_hdr.dest_pid = target->pid;
	msg->msg_hdr.src_pid = ln->ln_pid;
	msg->msg_hdr.payload_length = len;
	memset(&msg->msg_hdr.msg, 0, sizeof(msg->msg_hdr.msg));
	/* a new hand-over to an LND begins */
	__atomic_store_n(&msg->msg_finalized, 0, __ATOMIC_RELEASE);
}

/* Send a prepared message from `src` (NULL/ANY: choose). Returns 0 (sent,
 * queued for credits or for discovery) or -errno (not sent; the caller
 * finalizes). */
int lnet_send(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg);
/* The same with the lock held; ready messages go on `q`. */
int lnet_send_locked(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg,
		     struct lnet_sendq *q);
/* `now`: the clock if the caller read it (messages released from the
 * credit queues check their deadline), else 0. */
/* A credit came back to a queue of waiting messages: post its first. */
void lnet_release_delayed_locked(ulnet_t *ln, struct ul_list *queue, struct lnet_sendq *q,
				 uint64_t now);
/* Inline: once per message sent; a call only when a message waits. */
static inline void lnet_return_tx_credits_locked(ulnet_t *ln, struct lnet_msg *msg,
						 struct lnet_sendq *q, uint64_t now)
{
	if (msg->msg_txcredit) {
		struct lnet_ni *ni = msg->msg_txni;

		msg->msg_txcredit = 0;
		ni->ni_tx_credits++;
		/* the queue may have been emptied by a shutdown */
		if (ni->ni_tx_credits <= 0 && !ul_list_empty(&ni->ni_tx_delayed))
			lnet_release_delayed_locked(ln, &ni->ni_tx_delayed, q, now);
	}
	if (msg->msg_peertxcredit) {
		struct lnet_peer_ni *lp = msg->msg_txpeer;

		msg->msg_peertxcredit = 0;
		lp->lpni_txqnob -= msg->msg_len + LNET_HDR_NID4_SIZE;
		lp->lpni_txcredits++;
		if (lp->lpni_txcredits <= 0 && !ul_list_empty(&lp->lpni_txq))
			lnet_release_delayed_locked(ln, &lp->lpni_txq, q, now);
	}
}
/* The LND calls (inline: once per message each). */
static inline void lnet_ni_recv(struct lnet_ni *ni, void *priv, struct lnet_msg *msg, bool delayed,
				uint32_t offset, uint32_t mlen, uint32_t rlen)
{
	const struct iovec *iov = NULL;
	unsigned niov = 0;

	LASSERT(mlen == 0 || msg);
	if (msg) {
		LASSERT(msg->msg_receiving);
		msg->msg_receiving = 0;
		if (mlen) {
			iov = msg->msg_iov;
			niov = msg->msg_niov;
		}
	}
	ni->ni_lnd->recv(ni, priv, msg, delayed, iov, niov, offset, mlen, rlen);
}

static inline void lnet_ni_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	ni->ni_lnd->send(ni, msg);
}

void lnet_fwd_recv_ready(struct lnet_msg *msg);   /* router.c */

/* Peer aliveness (the kernel's, on routers only): while routing is not
 * DISABLED, a peer NI on a net whose NI has a peer_timeout is alive as
 * long as its status is UP: a receive from it sets UP, its LND reporting
 * it failed (lnet_notify_peer_ni()) sets DOWN. */
bool lnet_peer_aliveness_enabled_locked(ulnet_t *ln, const struct lnet_peer_ni *lpni);

bool lnet_fault_send_error(ulnet_t *ln, struct lnet_msg *msg, int *status);   /* fault.c */

/* Hand the ready messages to their LNDs, fail the others (inline: a few
 * times per message). A drop rule with health errors fails a message
 * here, as its LND would (the kernel's lnet_send_error_simulation()). */
static inline void lnet_sendq_flush(ulnet_t *ln, struct lnet_sendq *q)
{
	struct lnet_msg *msg;

	while ((msg = ul_list_first(&q->sq_send, struct lnet_msg, msg_list))) {
		int status;

		ul_list_del(&msg->msg_list);
		if (__builtin_expect(__atomic_load_n(&ln->ln_fault_nhealth, __ATOMIC_RELAXED) != 0, 0) &&
		    lnet_fault_send_error(ln, msg, &status)) {
			lnet_finalize(msg, status);
			continue;
		}
		lnet_ni_send(msg->msg_txni, msg);
	}
	while ((msg = ul_list_first(&q->sq_fail, struct lnet_msg, msg_list))) {
		ul_list_del(&msg->msg_list);
		lnet_finalize_core(msg, msg->msg_fin_status);
	}
	/* a forwarded message that waited: its LND reads it now */
	while (__builtin_expect(!ul_list_empty(&q->sq_recv), 0)) {
		msg = ul_list_first(&q->sq_recv, struct lnet_msg, msg_list);
		ul_list_del(&msg->msg_list);
		lnet_fwd_recv_ready(msg);
	}
}

void lnet_recv_put(struct lnet_ni *ni, struct lnet_msg *msg, bool delayed);
/* Response tracking. */
/* Inline: once per tracked request. */
static inline void lnet_rspt_detach_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	if (!md->md_rspt_active)
		return;
	if (ln->ln_ctr.rst_alloc)
		ln->ln_ctr.rst_alloc--;
	md->md_rspt_active = false;
	md->md_rspt_pending = 0;
	ul_list_del(&md->md_rspt_list);
}

void lnet_rspt_timer_cb(struct ul_timer *t);
/* ulnet_put/ulnet_get on a looked-up MD, lock held; sends go on `q`. */
int lnet_put_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    enum ulnet_ack_req ack, const ulnet_process_id_t *target, unsigned portal,
		    uint64_t match_bits, unsigned remote_offset, uint64_t hdr_data,
		    struct lnet_sendq *q);
int lnet_get_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    const ulnet_process_id_t *target, unsigned portal, uint64_t match_bits,
		    unsigned remote_offset, struct lnet_sendq *q);
/* Can `target` be reached (from `self`)? 0, -EHOSTUNREACH or -EINVAL. */
int lnet_check_reachable_locked(ulnet_t *ln, const ulnet_nid_t *self, const ulnet_nid_t *target);
/* Fail every message waiting for credits (destroy). */
void lnet_fail_queued_locked(ulnet_t *ln, struct lnet_ni *ni, struct lnet_sendq *q, int status);

/* --- counters (counters.c) ------------------------------------------------- */

/* Latency sample of a peer NI, lock held: `what` ULNET_EVENT_SEND (a PUT
 * left: put_egress), ULNET_EVENT_REPLY (get_rtt) or ULNET_EVENT_ACK
 * (put_ack); others are ignored. `start` is the instance clock when the
 * PUT/GET was committed, `now` the clock read for the completion; inline:
 * once or twice per message. */
static inline void lnet_peer_ni_latency_at_locked(struct lnet_peer_ni *lpni,
						  enum ulnet_event_kind what, uint64_t start,
						  uint64_t now)
{
	struct lnet_latency *l;

	if (!lpni || !start)
		return;
	switch (what) {
	case ULNET_EVENT_SEND:
		l = &lpni->lpni_put_egress;
		break;
	case ULNET_EVENT_REPLY:
		l = &lpni->lpni_get_rtt;
		break;
	case ULNET_EVENT_ACK:
		l = &lpni->lpni_put_ack;
		break;
	default:
		return;
	}
	lnet_latency_add(l, now > start ? now - start : 0);
}

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
/* recovery.c: the recovery timer; a health value dropped: make sure it
 * runs. */
void lnet_recovery_init(ulnet_t *ln);
void lnet_recovery_arm_locked(ulnet_t *ln);
/* Whether recovery pings it (the kernel's recovery queues, as `debug
 * recovery` lists them): our up NI below full health; a peer NI below full
 * health we have heard from, not aged out by recovery_limit. */
bool lnet_ni_in_recovery_locked(const ulnet_t *ln, const struct lnet_ni *ni);
bool lnet_peer_ni_in_recovery_locked(const ulnet_t *ln, const struct lnet_peer_ni *lpni,
				     uint64_t now);
/* A send on our NI failed (`what`, `why` for the log): lower its health,
 * status DOWN at 0, recovery (the kernel's lnet_handle_local_failure()). */
void lnet_ni_health_fail_locked(ulnet_t *ln, struct lnet_ni *ni, const char *what, const char *why);
/* Something went well on our NI: raise its health, status UP at full. */
void lnet_ni_health_ok_locked(ulnet_t *ln, struct lnet_ni *ni);
/* The recovery ping (GET of the ping target) to `nid` exactly, on `md`
 * (send.c); sends go to `q`. */
int lnet_get_recovery_locked(ulnet_t *ln, struct lnet_libmd *md, const ulnet_nid_t *nid,
			     struct lnet_sendq *q);
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

/* A message stops waiting for discovery (sent, failed or cancelled). */
static inline void lnet_msg_dc_wait_end(ulnet_t *ln, struct lnet_msg *msg)
{
	if (msg->msg_discovery_wait) {
		msg->msg_discovery_wait = 0;
		ln->ln_dc_waiting--;
	}
}

/* --- ping target, push target, discovery (ping.c, discovery.c) --------------- */

int lnet_ping_target_setup(ulnet_t *ln);
/* Rebuild the ping info after an NI change (lock not held). */
int lnet_ping_target_update(ulnet_t *ln);
void lnet_ping_target_fini(ulnet_t *ln);
int lnet_push_target_post(ulnet_t *ln);
void lnet_push_target_fini(ulnet_t *ln);
/* Encode our ping info into a new buffer (lock held). */
int lnet_ping_info_build_locked(ulnet_t *ln, uint8_t **buf, size_t *len);
/* Incoming push (event on the push target MD). */
void lnet_peer_push_event(ulnet_t *ln, const struct ulnet_event *ev, const uint8_t *data,
			  size_t len);
/* Queue `msg` on `lp` until discovered, starting discovery: 1. */
int lnet_peer_discovery_queue_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_msg *msg,
				     struct lnet_sendq *q);
/* Traffic on portal 0 is what discovery itself uses, and responses carry no
 * portal: neither waits for discovery. */
static inline bool lnet_msg_discovery(const struct lnet_msg *msg)
{
	switch (msg->msg_type) {
	case ULNET_MSG_PUT:
		return msg->msg_hdr.msg.put.ptl_index != ULNET_RESERVED_PORTAL;
	case ULNET_MSG_GET:
		return msg->msg_hdr.msg.get.ptl_index != ULNET_RESERVED_PORTAL;
	default:
		return false;
	}
}

static inline bool lnet_peer_needs_push_locked(ulnet_t *ln, const struct lnet_peer *lp)
{
	if (!(lp->lp_state & LNET_PEER_MULTI_RAIL))
		return false;
	if (lp->lp_state & LNET_PEER_FORCE_PUSH)
		return true;
	if ((lp->lp_state & LNET_PEER_NO_DISCOVERY) || !ln->ln_g.discovery)
		return false;
	return lp->lp_node_seqno < ln->ln_ping_seqno;
}

static inline bool lnet_peer_is_uptodate_locked(ulnet_t *ln, const struct lnet_peer *lp)
{
	const unsigned want = LNET_PEER_DISCOVERED | LNET_PEER_NIDS_UPTODATE;

	if (lp->lp_state & (LNET_PEER_DISCOVERING | LNET_PEER_FORCE_PING | LNET_PEER_FORCE_PUSH |
			    LNET_PEER_REDISCOVER))
		return false;
	if (lnet_peer_needs_push_locked(ln, lp))
		return false;
	return (lp->lp_state & want) == want;
}

/* Does sending `msg` to `lpni` have to wait for discovery? If so it is
 * queued on the peer (discovery started if needed): 1. 0: send it now.
 * <0: discovery could not start. Lock held; sends go to `q`. Inline, with
 * the tests above: every PUT/GET asks. */
static inline int lnet_peer_discovery_hold_locked(ulnet_t *ln, struct lnet_peer_ni *lpni,
						  struct lnet_msg *msg, struct lnet_sendq *q)
{
	struct lnet_peer *lp = lpni->lpni_peer;

	if (!lp || !ln->ln_g.discovery || !lnet_msg_discovery(msg))
		return 0;
	if (lnet_peer_is_uptodate_locked(ln, lp))
		return 0;
	return lnet_peer_discovery_queue_locked(ln, lp, msg, q);
}
/* Start discovery of `lp` unless running (lock held); sends go to `q`. */
int lnet_peer_start_discovery_locked(ulnet_t *ln, struct lnet_peer *lp, bool force,
				     struct lnet_sendq *q);
/* Our ping info changed: push it to the Multi-Rail peers (lock held). */
void lnet_push_update_to_peers_locked(ulnet_t *ln, struct lnet_sendq *q);
/* A peer goes away: forget its discovery (lock held). */
void lnet_peer_cancel_discovery_locked(ulnet_t *ln, struct lnet_peer *lp);
/* Wait (real time, driving progress in manual mode) until `done` says so. */
int lnet_wait_locked(ulnet_t *ln, bool (*done)(void *arg), void *arg, int timeout_ms);

/* The match request an incoming PUT makes (parse, and lazy re-matching). */
static inline struct lnet_match_info lnet_put_match_info(const struct lnet_msg *msg)
{
	const struct lnet_hdr *hdr = &msg->msg_hdr;

	return (struct lnet_match_info){
		.mi_id = { .nid = msg->msg_initiator, .pid = hdr->src_pid },
		.mi_opc = ULNET_MD_OP_PUT,
		.mi_portal = hdr->msg.put.ptl_index,
		.mi_rlength = hdr->payload_length,
		.mi_roffset = hdr->msg.put.offset,
		.mi_mbits = hdr->msg.put.match_bits,
	};
}

#endif /* ULNET_CORE_CORE_H */
