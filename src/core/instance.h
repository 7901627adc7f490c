/* SPDX-License-Identifier: MIT */
/*
 * instance.h - the instance (struct ulnet, instance.c): everything one LNet
 * node holds, its lock, condition and clock, logging, and the NID compares
 * of the hot paths. The locking rule of the core is in core.h.
 */
#ifndef ULNET_CORE_INSTANCE_H
#define ULNET_CORE_INSTANCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core/handle.h"
#include "core/list.h"
#include "core/memreg.h"
#include "core/portal.h"
#include "ulnet/routing.h"
#include "ulnet/ulnet.h"
#include "util/evloop.h"
#include "util/log.h"
#include "util/ul_lock.h"

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
/* Wait (real time, driving progress in manual mode) until `done` says so. */
int lnet_wait_locked(ulnet_t *ln, bool (*done)(void *arg), void *arg, int timeout_ms);

#endif
