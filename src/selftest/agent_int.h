/* SPDX-License-Identifier: MIT */
/*
 * agent_int.h - internals of the LNet selftest (SRPC) agent, shared by its
 * files: the agent (struct ulnet_selftest), its request slots and their
 * chunks, the brw bulk buffers, the client tests and their units.
 *
 *   agent.c         start, stop, counters; the event handler of the server
 *                   side, which takes a request to its service; ping
 *   srpc_service.c  request buffers (slots, chunks), replies, drops
 *   sfw_session.c   the session, batches, the framework services
 *   sfw_client.c    client tests: units, their RPCs, the 1 s sweep
 *   brw_test.c      brw data patterns, the bulk buffer pool, the brw service
 *
 * Locking: `lock` guards the session, batches, counters and slot states. It
 * is never held across a ulnet call: those may run our handler at once
 * (loopback, lazy-queued PUTs delivered by ulnet_md_attach()).
 */
#ifndef ULNET_SELFTEST_AGENT_INT_H
#define ULNET_SELFTEST_AGENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "selftest/srpc_wire.h"
#include "util/evloop.h"
#include "ulnet/selftest.h"

#define FW_NBUF 16                      /* per framework service: SFW_FRWK_WI_MIN */
#define BULK_MIN 8                      /* brw bulk buffers: the pool's bound is the */
#define BULK_MAX 64                     /* brw server tests' concurrency, within these */
#define MAX_BATCHES 16
#define MAX_TESTS 64                    /* server tests per session */

static const int fw_services[] = {
	SRPC_SERVICE_DEBUG, SRPC_SERVICE_MAKE_SESSION, SRPC_SERVICE_REMOVE_SESSION,
	SRPC_SERVICE_BATCH, SRPC_SERVICE_TEST, SRPC_SERVICE_QUERY_STAT,
};
#define N_FW_SERVICES (int)(sizeof(fw_services) / sizeof(fw_services[0]))

enum tag_kind { TAG_REQ, TAG_BULK, TAG_REPLY, TAG_COUNT };
enum slot_state { SLOT_IDLE, SLOT_POSTED, SLOT_BUSY };

struct slot;
struct chunk;
struct tag {
	struct slot *slot;
	enum tag_kind kind;
};

/* A brw bulk buffer of the pool. */
struct bulkbuf {
	struct bulkbuf *next;           /* st->bulk_free */
	size_t cap;
	size_t dirty;                   /* bytes a write or a full pattern may have set */
	uint8_t mem[];
};

struct slot {
	struct ulnet_selftest *st;
	struct chunk *chunk;
	int service;
	enum slot_state state;
	struct tag tags[TAG_COUNT];
	ulnet_handle_t me;              /* while POSTED */
	uint8_t req[SRPC_MSG_SIZE];
	uint8_t rep[SRPC_MSG_SIZE];
	struct srpc_msg msg;            /* the request, decoded */
	struct srpc_msg reply;
	ulnet_process_id_t peer;
	ulnet_nid_t self;
	uint64_t rpyid;
	uint8_t *bulk;                  /* test add (framework): kept between RPCs */
	size_t bulk_cap;
	struct bulkbuf *bb;             /* brw: the pool's buffer, while in use */
	struct slot *wait_next;         /* st->bwait */
	int bulk_status;                /* first failure of the bulk MD's events */
	uint32_t bulk_mlength;          /* test add: bytes the GET brought */
	ulnet_handle_t md_inflight;     /* the reply's or bulk's MD, for the stop */
};

/* Slots allocated together: the framework's, or those of one server test. */
struct chunk {
	struct chunk *next;             /* st->chunks */
	bool retired;                   /* its test is gone: not reposted, freed once idle */
	int nlive;                      /* slots not IDLE */
	int nslots;
	struct slot slots[];
};

/* --- the test-client role: a test instance with is_client set ------------------ */

enum ctag_kind { CTAG_REQ, CTAG_REPLY, CTAG_BULK, CTAG_COUNT };
struct unit;
struct ctag {
	struct unit *u;
	enum ctag_kind kind;
};

/* One unit per (destination, concurrency slot) as in the kernel: it sends
 * its RPCs one after the other, `loop` of them. Everything it needs is
 * allocated when the test is added. */
struct unit {
	struct ctest *t;
	ulnet_process_id_t dest;
	int64_t loop;                   /* RPCs left to send; < 0: no end */
	struct ul_work work;            /* starts the next RPC */
	struct ctag tags[CTAG_COUNT];
	bool live[CTAG_COUNT];          /* the MD's last event is still to come */
	ulnet_handle_t mdh[CTAG_COUNT];
	bool in_rpc, aborted, expired, got_reply, bulk_unlinked;
	int abort_status;
	int status[CTAG_COUNT];         /* first failure of each MD */
	uint64_t deadline;              /* loop clock */
	uint32_t seq;
	uint8_t req[SRPC_MSG_SIZE];
	uint8_t rep[SRPC_MSG_SIZE];
	uint8_t *bulk;                  /* brw: len bytes */
};

struct ctest {
	struct ulnet_selftest *st;
	struct ctest *next;             /* st->ctests */
	uint64_t bid;
	bool zombie;                    /* no longer in the session: freed when idle */
	uint32_t service, concur, features;
	int32_t loop;                   /* the kernel's int: -1 runs until stopped */
	bool stop_onerr;
	bool stopping, abort_req;       /* batch STOP (abort_req: with force) */
	int nactive;                    /* units running */
	int pins;                       /* sweeps looking at it */
	uint32_t opc, flags, len, off;  /* brw */
	int nunits;
	uint8_t *bulk_mem;
	struct unit units[];
};

struct test_rec {
	uint64_t bid;
	uint32_t service, loop, concur;
	struct ctest *client;           /* NULL: a server test */
};

struct ulnet_selftest {
	ulnet_t *ln;
	pthread_mutex_t lock;
	int timeout_s;                  /* 0: never */
	bool stopping;
	int refs;                       /* posted buffers + MDs with events to come */
	/* handlers running: a handler drops its ref and then still uses the
	 * agent, so stop waits for this too (atomic: the handler's very last
	 * access to the agent is the decrement) */
	_Atomic int in_handler;

	/* session */
	bool sn_active;
	struct srpc_sid sn_id;
	uint32_t sn_features;
	char sn_name[SRPC_NAME_SIZE];
	int sn_refcount;
	uint64_t sn_started_ns;
	uint64_t sn_last_ns;            /* last framework RPC: the expiry timer */
	uint64_t batches[MAX_BATCHES];
	int nbatches;
	struct test_rec tests[MAX_TESTS];
	int ntests;
	bool test_enabled[2];           /* brw, ping services */

	uint32_t sn_brw_errors, sn_ping_errors;

	/* client tests */
	struct ctest *ctests;           /* all of them, the session's and zombies */
	uint64_t matchbits;             /* rpyid and bulkid, as srpc_next_id() */
	uint32_t ping_seq;
	int rpc_timeout_s;              /* 0: never */
	struct ul_timer timer;
	bool timer_armed;
	struct ul_work barrier;

	struct ulnet_selftest_stats stats;
	struct chunk *chunks;           /* request buffers */
	int slot_iters;                 /* walks of the chunks under way: none freed */
	int test_nbuf[2];               /* request buffers the session's tests added */
	/* brw bulk pool */
	struct bulkbuf *bulk_free;
	int bulk_count;                 /* allocated: free or in use */
	int bulk_limit;
	uint32_t bulk_concur;           /* the session's brw server tests' concurrency */
	struct slot *bwait_head, *bwait_tail;   /* brw requests waiting for a buffer */
	bool bulk_kicking;
	struct ulnet_selftest *next;    /* registry */
};

static inline bool srpc_is_framework(int service)
{
	return service < SRPC_FRAMEWORK_SERVICE_MAX_ID;
}

static inline int srpc_test_index(int service)
{
	return service == SRPC_SERVICE_BRW ? 0 : 1;
}

static inline void srpc_peer_str(const struct slot *s, char buf[ULNET_NIDSTR_SIZE])
{
	lnet_nidstr(&s->peer.nid, buf);
}

/* srpc_service.c */
bool srpc_service_on(const struct ulnet_selftest *st, int service);
void srpc_slot_set_state_locked(struct slot *s, enum slot_state state);
void srpc_chunk_free(struct chunk *c);
void srpc_chunks_reap_locked(struct ulnet_selftest *st);
struct chunk *srpc_chunk_add_locked(struct ulnet_selftest *st, int service, int n);
void srpc_tests_buffers_retire_locked(struct ulnet_selftest *st);
void srpc_slot_done(struct slot *s);
void srpc_post_service(struct ulnet_selftest *st, int service);
void srpc_unpost_service(struct ulnet_selftest *st, int service);
void srpc_slots_abort_inflight(struct ulnet_selftest *st);
void srpc_finish_dropped(struct slot *s, int why);
void srpc_drop_request(struct slot *s, const char *why);
void srpc_send_reply(struct slot *s);
int srpc_slot_bulk_reserve(struct slot *s, size_t len);
int srpc_slot_bulk_start(struct slot *s, uint8_t *buf, size_t len, bool sink, unsigned options,
			 uint64_t bulkid);

/* sfw_session.c */
bool sfw_session_check_expiry_locked(struct ulnet_selftest *st, uint64_t now);
int sfw_framework_handle(struct slot *s, int *post_test, bool *unpost_tests, bool *fetch);
int sfw_dest_fetch(struct slot *s);
void sfw_testadd_bulk_done(struct slot *s);

/* sfw_client.c */
void sfw_ctest_free(struct ctest *t);
void sfw_ctest_maybe_free_locked(struct ulnet_selftest *st, struct ctest *t);
bool sfw_batch_active_locked(const struct ulnet_selftest *st, uint64_t bid);
void sfw_arm_timer_locked(struct ulnet_selftest *st);
void sfw_client_sweep(struct ulnet_selftest *st);
void sfw_timer_cb(struct ul_timer *tm);
void sfw_batch_run_locked(struct ulnet_selftest *st, uint64_t bid);
void sfw_batch_stop_locked(struct ulnet_selftest *st, uint64_t bid, bool force);
struct ctest *sfw_ctest_create(struct ulnet_selftest *st, const struct srpc_msg *msg, const uint8_t *ids,
			       uint32_t *status);

/* brw_test.c */
/* The kernel's brw pattern, fragment by fragment: the first fragment ends
 * at the page boundary after `off`. */
void brw_fill_off(uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, uint64_t magic);
bool brw_check_off(const uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, int be);
void brw_bulk_free(struct ulnet_selftest *st, struct bulkbuf *b);
void brw_bulk_kick(struct ulnet_selftest *st);
int brw_handle(struct slot *s);
void brw_bulk_done(struct slot *s);

/* agent.c */
void agent_handler(const struct ulnet_event *ev);

#endif
