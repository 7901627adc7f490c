/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the LNet selftest (SRPC) agent, server side (ulnet/selftest.h).
 *
 * Request buffers: each RPC slot owns one 160-byte request buffer, posted as
 * an ME (match bits = service id) + MD (threshold 1, unlinked on use) on
 * portal 51 (framework) or 50 (tests). Slots come in chunks allocated
 * whole: the framework's at start (FW_NBUF per service), a test service's
 * when a server test is added (as many as the kernel's sfw_test_buffers()).
 * A chunk of a session's tests is retired when the session ends: its
 * posted buffers are unlinked, and it is freed once none of its slots is in
 * use (srpc_service_remove_buffers()). Both portals are lazy, as in the
 * kernel: a request that finds no buffer waits until one is posted again.
 *
 * brw bulk buffers are not tied to slots: they come from a pool bounded by
 * the concurrency of the session's brw server tests (BULK_MIN..BULK_MAX),
 * allocated on demand and kept until the session ends. A brw request that
 * finds the pool empty waits in the agent (bwait), its request already
 * received, until a bulk buffer comes back.
 *
 * An RPC: the PUT event hands the slot its request; the slot is answered in
 * the handler (framework, ping) or after its bulk transfer (brw); the reply
 * is PUT from the slot's reply buffer (no ACK) to portal 52, match bits the
 * rpyid; its SEND event reposts the request buffer.
 *
 * Locking: `lock` guards the session, batches, counters and slot states. It
 * is never held across a ulnet call: those may run our handler at once
 * (loopback, lazy-queued PUTs delivered by ulnet_md_attach()).
 *
 * Behaviour follows lnet/selftest/{rpc,framework,brw_test,ping_test}.c of
 * Lustre 2.17 (read for facts; docs/selftest.md lists the differences).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "selftest/srpc_wire.h"
#include "util/evloop.h"
#include "ulnet/selftest.h"
#include "util/util_bytes.h"

#define SESSION_TIMEOUT_DEFAULT 100     /* s, lnet_selftest session_timeout */
#define FW_NBUF 16                      /* per framework service: SFW_FRWK_WI_MIN */
/* request buffers a server test adds to its service (sfw_test_buffers()):
 * max(SFW_TEST_WI_MIN, min(SFW_TEST_WI_MAX, loop) + SFW_TEST_WI_EXTRA), loop
 * signed (-1: 256) */
#define TEST_WI_MIN 256
#define TEST_WI_MAX 2048
#define TEST_WI_EXTRA 64
#define TEST_NBUF_MAX 8192              /* per test service, all tests of a session */
#define BULK_MIN 8                      /* brw bulk buffers: the pool's bound is the */
#define BULK_MAX 64                     /* brw server tests' concurrency, within these */
#define MAX_BATCHES 16
#define MAX_TESTS 64                    /* server tests per session */
#define STOP_WAIT_NS (5 * LNET_NSEC_PER_SEC)
#define RPC_TIMEOUT_DEFAULT 64          /* s, lnet_selftest rpc_timeout */
#define MAX_UNITS 4096                  /* client test: ndest x concur */
#define MAX_CLIENT_BULK (256u << 20)    /* client test: bytes of brw buffers */
#define MAX_PINNED (2 * MAX_TESTS)      /* client tests one sweep looks at */
#define SWEEP_NS LNET_NSEC_PER_SEC      /* RPC timeouts are checked every second */

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

/* One agent per instance. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ulnet_selftest *registry;

static void handler(const struct ulnet_event *ev);

static bool is_framework(int service)
{
	return service < SRPC_FRAMEWORK_SERVICE_MAX_ID;
}

static int test_index(int service)
{
	return service == SRPC_SERVICE_BRW ? 0 : 1;
}

static void peer_str(const struct slot *s, char buf[ULNET_NIDSTR_SIZE])
{
	lnet_nidstr(&s->peer.nid, buf);
}

/* --- request buffers --------------------------------------------------------- */

/* Whether requests of this service are being taken (lock held). */
static bool service_on(const struct ulnet_selftest *st, int service)
{
	if (st->stopping)
		return false;
	return is_framework(service) || st->test_enabled[test_index(service)];
}

/* The slot's state (lock held): its chunk counts the slots in use. */
static void slot_set_state_locked(struct slot *s, enum slot_state state)
{
	if (s->state == SLOT_IDLE && state != SLOT_IDLE)
		s->chunk->nlive++;
	else if (s->state != SLOT_IDLE && state == SLOT_IDLE)
		s->chunk->nlive--;
	s->state = state;
}

static void chunk_free(struct chunk *c)
{
	for (int i = 0; i < c->nslots; i++)
		free(c->slots[i].bulk);
	free(c);
}

/* Free the retired chunks none of whose slots is in use (lock held; not
 * while a walk of the chunks is under way: the last one out does it). A
 * caller that idled a slot must not touch it after this. */
static void chunks_reap_locked(struct ulnet_selftest *st)
{
	struct chunk **pp = &st->chunks;

	if (st->slot_iters > 0)
		return;
	while (*pp) {
		struct chunk *c = *pp;

		if (c->retired && c->nlive == 0) {
			*pp = c->next;
			chunk_free(c);
		} else {
			pp = &c->next;
		}
	}
}

/* A walk of the chunks that drops the lock on the way: no chunk is freed
 * until it ends. */
static void slots_walk_begin(struct ulnet_selftest *st)
{
	pthread_mutex_lock(&st->lock);
	st->slot_iters++;
	pthread_mutex_unlock(&st->lock);
}

static void slots_walk_end(struct ulnet_selftest *st)
{
	pthread_mutex_lock(&st->lock);
	st->slot_iters--;
	chunks_reap_locked(st);
	pthread_mutex_unlock(&st->lock);
}

/* A chunk of `n` slots of `service` (all of them -1: the framework's, one
 * service after the other), linked in (lock held; its slots are posted by
 * post_service()). NULL: no memory. */
static struct chunk *chunk_add_locked(struct ulnet_selftest *st, int service, int n)
{
	struct chunk *c = calloc(1, sizeof(*c) + (size_t)n * sizeof(struct slot));

	if (!c)
		return NULL;
	c->nslots = n;
	for (int i = 0; i < n; i++) {
		struct slot *s = &c->slots[i];

		s->st = st;
		s->chunk = c;
		s->service = service >= 0 ? service : fw_services[i / FW_NBUF];
		for (int k = 0; k < TAG_COUNT; k++)
			s->tags[k] = (struct tag){ s, (enum tag_kind)k };
	}
	c->next = st->chunks;
	st->chunks = c;
	return c;
}

/* The session's tests are gone: their chunks are retired, their bulk
 * buffers freed once back (lock held). */
static void bulk_free(struct ulnet_selftest *st, struct bulkbuf *b);

static void tests_buffers_retire_locked(struct ulnet_selftest *st)
{
	for (struct chunk *c = st->chunks; c; c = c->next)
		if (c->nslots > 0 && !is_framework(c->slots[0].service))
			c->retired = true;
	st->test_nbuf[0] = st->test_nbuf[1] = 0;
	st->bulk_concur = 0;
	st->bulk_limit = BULK_MIN;
	while (st->bulk_free) {
		struct bulkbuf *b = st->bulk_free;

		st->bulk_free = b->next;
		st->bulk_count--;
		bulk_free(st, b);
	}
	chunks_reap_locked(st);
}

/* Post slot `s` (IDLE, the caller moved it to POSTED under the lock). On
 * failure the slot goes back to IDLE. */
static void post_slot(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = {
		.start = s->req,
		.length = sizeof(s->req),
		.threshold = 1,
		.options = ULNET_MD_OP_PUT,
		.user_ptr = &s->tags[TAG_REQ],
		.handler = handler,
	};
	unsigned portal = is_framework(s->service) ? SRPC_FRAMEWORK_REQUEST_PORTAL : SRPC_REQUEST_PORTAL;
	ulnet_handle_t me, mdh;
	int rc;

	rc = ulnet_me_attach(st->ln, portal, any, (uint64_t)s->service, 0, ULNET_UNLINK,
			     is_framework(s->service) ? ULNET_INS_AFTER : ULNET_INS_LOCAL, &me);
	if (rc == 0) {
		bool on;

		pthread_mutex_lock(&st->lock);
		s->me = me;
		/* unpost_service() may have passed this slot before its ME
		 * existed: look again now that it can be unlinked */
		on = service_on(st, s->service) && !s->chunk->retired;
		pthread_mutex_unlock(&st->lock);
		/* may deliver a queued request (and run handler()) at once */
		rc = ulnet_md_attach(st->ln, me, &md, ULNET_UNLINK, &mdh);
		if (rc)
			(void)ulnet_me_unlink(st->ln, me);
		else if (!on)
			(void)ulnet_me_unlink(st->ln, me);   /* its UNLINK event idles the slot */
	}
	if (rc) {
		lnet_log(st->ln, ULNET_LOG_ERROR, "selftest: cannot post a request buffer of service %d: %s",
			 s->service, ulnet_strerror(rc));
		pthread_mutex_lock(&st->lock);
		st->refs--;
		slot_set_state_locked(s, SLOT_IDLE);
		chunks_reap_locked(st);
		pthread_mutex_unlock(&st->lock);
	}
}

/* An RPC of slot `s` is over (or its buffer came back): repost or idle. */
static void slot_done(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	bool post;

	pthread_mutex_lock(&st->lock);
	post = service_on(st, s->service) && !s->chunk->retired;
	slot_set_state_locked(s, post ? SLOT_POSTED : SLOT_IDLE);
	if (post)
		st->refs++;
	else
		chunks_reap_locked(st);
	pthread_mutex_unlock(&st->lock);
	if (post)
		post_slot(s);
}

/* Post every idle slot of `service` (after enabling it). */
static void post_service(struct ulnet_selftest *st, int service)
{
	slots_walk_begin(st);
	pthread_mutex_lock(&st->lock);
	for (struct chunk *c = st->chunks; c; c = c->next) {
		for (int i = 0; i < c->nslots; i++) {
			struct slot *s = &c->slots[i];

			if (s->service != service || c->retired || s->state != SLOT_IDLE ||
			    !service_on(st, service))
				continue;
			slot_set_state_locked(s, SLOT_POSTED);
			st->refs++;
			pthread_mutex_unlock(&st->lock);
			post_slot(s);
			pthread_mutex_lock(&st->lock);
		}
	}
	pthread_mutex_unlock(&st->lock);
	slots_walk_end(st);
}

/* Take back the posted buffers of `service` (-1: all). Their UNLINK
 * events idle the slots; a buffer consumed meanwhile ends in the PUT path,
 * which sees the service off and drops the request. */
static void unpost_service(struct ulnet_selftest *st, int service)
{
	slots_walk_begin(st);
	pthread_mutex_lock(&st->lock);
	for (struct chunk *c = st->chunks; c; c = c->next) {
		for (int i = 0; i < c->nslots; i++) {
			struct slot *s = &c->slots[i];
			ulnet_handle_t me;

			if (service >= 0 && s->service != service)
				continue;
			/* only retired chunks' buffers: those a new session's
			 * tests added stay (the agent's stop takes them all: -1) */
			if (s->state != SLOT_POSTED || (service >= 0 && !c->retired) ||
			    ulnet_handle_is_none(s->me))
				continue;
			me = s->me;
			pthread_mutex_unlock(&st->lock);
			(void)ulnet_me_unlink(st->ln, me);
			pthread_mutex_lock(&st->lock);
		}
	}
	pthread_mutex_unlock(&st->lock);
	slots_walk_end(st);
}

/* --- the test-client role (lock rules as above) ---------------------------------- */

static void chandler(const struct ulnet_event *ev);
static void client_sweep(struct ulnet_selftest *st);
static bool session_check_expiry_locked(struct ulnet_selftest *st, uint64_t now);

static void ctest_free(struct ctest *t)
{
	if (t->bulk_mem)
		ulnet_mem_deregister(t->st->ln, t->bulk_mem, (size_t)t->nunits * t->len);
	free(t->bulk_mem);
	free(t);
}

/* Free `t` if nothing refers to it any more (lock held). */
static void ctest_maybe_free_locked(struct ulnet_selftest *st, struct ctest *t)
{
	struct ctest **pp;

	if (!t->zombie || t->nactive > 0 || t->pins > 0)
		return;
	for (pp = &st->ctests; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	ctest_free(t);
}

static bool batch_active_locked(const struct ulnet_selftest *st, uint64_t bid)
{
	for (const struct ctest *t = st->ctests; t; t = t->next)
		if (!t->zombie && t->bid == bid && t->nactive > 0)
			return true;
	return false;
}

/* The agent's 1 s sweep is wanted while a client test runs under an RPC
 * timeout, or while a session can expire (the kernel's session timer fires
 * by itself, not only when the next request comes). */
static bool sweep_wanted_locked(const struct ulnet_selftest *st)
{
	if (st->sn_active && st->timeout_s != 0)
		return true;
	if (st->rpc_timeout_s == 0)
		return false;
	for (const struct ctest *t = st->ctests; t; t = t->next)
		if (t->nactive > 0)
			return true;
	return false;
}

static void arm_timer_locked(struct ulnet_selftest *st)
{
	if (st->timer_armed || st->stopping || !sweep_wanted_locked(st))
		return;
	st->timer_armed = true;
	st->refs++;
	if (ul_timer_start(st->ln->ln_loop, &st->timer, ul_loop_now(st->ln->ln_loop) + SWEEP_NS)) {
		st->timer_armed = false;
		st->refs--;
	}
}

/* Bind an MD of the agent's: it holds a reference of the agent, dropped by
 * its UNLINK event (the agent's stop waits for it); taken before the bind,
 * as the operation the caller then starts may end on another thread at
 * once. On failure the reference is given back (and, with `count_error`,
 * an error counted). */
static int agent_md_bind(struct ulnet_selftest *st, const struct ulnet_md *md, ulnet_handle_t *mdh,
			 bool count_error)
{
	int rc;

	pthread_mutex_lock(&st->lock);
	st->refs++;
	pthread_mutex_unlock(&st->lock);
	rc = ulnet_md_bind(st->ln, md, ULNET_UNLINK, mdh);
	if (rc) {
		pthread_mutex_lock(&st->lock);
		st->refs--;
		if (count_error)
			st->stats.errors++;
		pthread_mutex_unlock(&st->lock);
	}
	return rc;
}

/* The MD a busy slot sends from now: the agent's stop unlinks it, so that
 * a reply waiting for the console's discovery (or credits) ends at once
 * rather than at transaction_timeout. */
static void slot_set_inflight(struct slot *s, ulnet_handle_t mdh)
{
	pthread_mutex_lock(&s->st->lock);
	s->md_inflight = mdh;
	pthread_mutex_unlock(&s->st->lock);
}

/* The agent's stop: end what its busy slots still send. A handle already
 * gone (the operation ended) is refused with -ENOENT, harmlessly. */
static void slots_abort_inflight(struct ulnet_selftest *st)
{
	slots_walk_begin(st);
	pthread_mutex_lock(&st->lock);
	for (struct chunk *c = st->chunks; c; c = c->next) {
		for (int i = 0; i < c->nslots; i++) {
			struct slot *s = &c->slots[i];
			ulnet_handle_t mdh;

			if (s->state != SLOT_BUSY || ulnet_handle_is_none(s->md_inflight))
				continue;
			mdh = s->md_inflight;
			s->md_inflight = ULNET_HANDLE_NONE;
			pthread_mutex_unlock(&st->lock);
			(void)ulnet_md_unlink(st->ln, mdh);
			pthread_mutex_lock(&st->lock);
		}
	}
	pthread_mutex_unlock(&st->lock);
	slots_walk_end(st);
}

/* A unit is over (lock held). */
static void unit_finish_locked(struct ulnet_selftest *st, struct unit *u)
{
	struct ctest *t = u->t;

	if (--t->nactive > 0)
		return;
	t->stopping = false;
	t->abort_req = false;
	ctest_maybe_free_locked(st, t);
}

static void post_unit_locked(struct ulnet_selftest *st, struct unit *u)
{
	st->refs++;
	ul_loop_post(st->ln->ln_loop, &u->work);
}

/* The kernel's brw pattern, fragment by fragment: the first fragment ends
 * at the page boundary after `off`. */
static void brw_fill_off(uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, uint64_t magic);
static bool brw_check_off(const uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, int be);

/* An MD of `u` is done with (lock held); returns whether the RPC is over. */
static bool unit_md_gone_locked(struct ulnet_selftest *st, struct unit *u, enum ctag_kind k)
{
	if (!u->live[k])
		return false;
	u->live[k] = false;
	u->mdh[k] = ULNET_HANDLE_NONE;
	st->refs--;
	return !u->live[CTAG_REQ] && !u->live[CTAG_REPLY] && !u->live[CTAG_BULK];
}

static void unit_rpc_done(struct unit *u);

/* Abort the RPC of `u` (lock held): unlink what is posted; the caller
 * unlinks the handles left in `out` after dropping the lock. */
static int unit_abort_locked(struct unit *u, int why, ulnet_handle_t out[CTAG_COUNT])
{
	int n = 0;

	if (!u->in_rpc || u->aborted)
		return 0;
	u->aborted = true;
	u->abort_status = why;
	for (int k = 0; k < CTAG_COUNT; k++)
		if (u->live[k] && !ulnet_handle_is_none(u->mdh[k]))
			out[n++] = u->mdh[k];
	return n;
}

static uint64_t next_id_locked(struct ulnet_selftest *st)
{
	return ++st->matchbits;
}

/* Post a passive MD on portal 52 for `u`; returns 0 or -errno. */
static int unit_post52(struct unit *u, enum ctag_kind k, uint64_t bits, void *buf, size_t len, unsigned ops)
{
	struct ulnet_selftest *st = u->t->st;
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md md = {
		.start = buf,
		.length = len,
		.threshold = 1,
		.options = ops,
		.user_ptr = &u->tags[k],
		.handler = chandler,
	};
	ulnet_handle_t me, mdh;
	bool aborted;
	int rc;

	rc = ulnet_me_attach(st->ln, SRPC_RDMA_PORTAL, any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me);
	if (rc)
		return rc;
	rc = ulnet_md_attach(st->ln, me, &md, ULNET_UNLINK, &mdh);
	if (rc) {
		(void)ulnet_me_unlink(st->ln, me);
		return rc;
	}
	pthread_mutex_lock(&st->lock);
	u->mdh[k] = mdh;
	aborted = u->aborted;
	pthread_mutex_unlock(&st->lock);
	if (aborted)
		(void)ulnet_md_unlink(st->ln, mdh);   /* its UNLINK event counts it gone */
	return 0;
}

/* Start the next RPC of a unit (on the loop thread, from its work item). */
static void unit_start(struct ul_work *w)
{
	struct unit *u = (struct unit *)((char *)w - offsetof(struct unit, work));
	struct ctest *t = u->t;
	struct ulnet_selftest *st = t->st;
	bool brw = t->service == SRPC_SERVICE_BRW;
	ulnet_process_id_t to = u->dest;
	struct ulnet_md md = {
		.start = u->req,
		.length = SRPC_MSG_SIZE,
		.threshold = 1,
		.user_ptr = &u->tags[CTAG_REQ],
		.handler = chandler,
	};
	struct srpc_msg m = { .version = SRPC_MSG_VERSION };
	uint64_t rpyid, bulkid = 0;
	ulnet_handle_t mdh;
	struct timespec ts;
	bool over = false, aborted;
	int rc;

	pthread_mutex_lock(&st->lock);
	st->refs--;
	if (t->stopping || st->stopping) {
		unit_finish_locked(st, u);
		pthread_mutex_unlock(&st->lock);
		return;
	}
	if (u->loop > 0)
		u->loop--;
	u->in_rpc = true;
	u->aborted = u->expired = u->got_reply = u->bulk_unlinked = false;
	u->abort_status = 0;
	for (int k = 0; k < CTAG_COUNT; k++) {
		u->status[k] = 0;
		u->mdh[k] = ULNET_HANDLE_NONE;
		u->live[k] = k != CTAG_BULK || brw;
		st->refs += u->live[k];
	}
	u->deadline = st->rpc_timeout_s ? ul_loop_now(st->ln->ln_loop) +
		(uint64_t)st->rpc_timeout_s * LNET_NSEC_PER_SEC : UINT64_MAX;
	rpyid = next_id_locked(st);
	if (brw)
		bulkid = next_id_locked(st);
	if (!brw)
		u->seq = st->ping_seq++;
	m.ses_feats = t->features;
	pthread_mutex_unlock(&st->lock);

	m.type = (uint32_t)srpc_service2request((int)t->service);
	if (brw) {
		m.body.brw_reqst = (struct srpc_brw_reqst){ .rpyid = rpyid, .bulkid = bulkid, .rw = t->opc,
							    .len = t->len, .flags = t->flags };
		brw_fill_off(u->bulk, t->len, t->off, t->flags,
			     t->opc == LST_BRW_WRITE ? LST_BRW_MAGIC : LST_BRW_POISON);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		m.body.ping_reqst = (struct srpc_ping_reqst){ .rpyid = rpyid, .magic = LST_PING_TEST_MAGIC,
							      .seq = u->seq, .time_sec = (uint64_t)ts.tv_sec,
							      .time_nsec = (uint64_t)ts.tv_nsec };
	}
	(void)srpc_msg_encode(&m, u->req, sizeof(u->req));
	memset(u->rep, 0, sizeof(u->rep));

	rc = unit_post52(u, CTAG_REPLY, rpyid, u->rep, sizeof(u->rep), ULNET_MD_OP_PUT);
	if (rc) {
		pthread_mutex_lock(&st->lock);
		u->status[CTAG_REPLY] = rc;
		(void)unit_md_gone_locked(st, u, CTAG_REPLY);
		if (brw)
			(void)unit_md_gone_locked(st, u, CTAG_BULK);
		over = unit_md_gone_locked(st, u, CTAG_REQ);
		pthread_mutex_unlock(&st->lock);
		goto out;
	}
	if (brw) {
		/* write: the server GETs from it; read: it PUTs into it */
		unsigned ops = t->opc == LST_BRW_WRITE ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT;

		if (t->opc == LST_BRW_READ && t->flags == LST_BRW_CHECK_DISCARD)
			ops |= ULNET_MD_DISCARD;
		rc = unit_post52(u, CTAG_BULK, bulkid, u->bulk, t->len, ops);
		if (rc) {
			ulnet_handle_t un[CTAG_COUNT];
			int n;

			pthread_mutex_lock(&st->lock);
			u->status[CTAG_BULK] = rc;
			(void)unit_md_gone_locked(st, u, CTAG_BULK);
			(void)unit_md_gone_locked(st, u, CTAG_REQ);
			n = unit_abort_locked(u, rc, un);
			pthread_mutex_unlock(&st->lock);
			for (int i = 0; i < n; i++)
				(void)ulnet_md_unlink(st->ln, un[i]);
			return;
		}
	}
	rc = ulnet_md_bind(st->ln, &md, ULNET_UNLINK, &mdh);
	if (!rc) {
		pthread_mutex_lock(&st->lock);
		u->mdh[CTAG_REQ] = mdh;
		aborted = u->aborted;
		pthread_mutex_unlock(&st->lock);
		if (aborted) {
			(void)ulnet_md_unlink(st->ln, mdh);
			return;
		}
		rc = ulnet_put(st->ln, NULL, mdh, ULNET_NOACK_REQ, to, SRPC_REQUEST_PORTAL, t->service, 0, 0);
		if (!rc)
			return;                 /* events go on */
		pthread_mutex_lock(&st->lock);
		u->status[CTAG_REQ] = rc;
		pthread_mutex_unlock(&st->lock);
		(void)ulnet_md_unlink(st->ln, mdh);
	} else {
		pthread_mutex_lock(&st->lock);
		u->status[CTAG_REQ] = rc;
		over = unit_md_gone_locked(st, u, CTAG_REQ);
		pthread_mutex_unlock(&st->lock);
	}
	/* the request did not go: take the reply and bulk buffers back */
	{
		ulnet_handle_t un[CTAG_COUNT];
		int n;

		pthread_mutex_lock(&st->lock);
		n = unit_abort_locked(u, rc, un);
		pthread_mutex_unlock(&st->lock);
		for (int i = 0; i < n; i++)
			(void)ulnet_md_unlink(st->ln, un[i]);
	}
out:
	if (over)
		unit_rpc_done(u);
}

/* Events of a client RPC's MDs. */
static void chandler(const struct ulnet_event *ev)
{
	const struct ctag *tag = ev->md_user_ptr;
	struct unit *u = tag->u;
	struct ulnet_selftest *st = u->t->st;
	ulnet_handle_t unlink_bulk = ULNET_HANDLE_NONE;
	ulnet_handle_t un[CTAG_COUNT];
	int n = 0, status = ev->type == ULNET_EVENT_UNLINK ? -EINTR : ev->status;
	bool over = false;

	pthread_mutex_lock(&st->lock);
	if (ev->status && ev->type != ULNET_EVENT_UNLINK)
		st->stats.errors++;
	if (status && !u->status[tag->kind])
		u->status[tag->kind] = status;
	switch (tag->kind) {
	case CTAG_REQ:
		if (ev->type == ULNET_EVENT_SEND && !ev->status)
			st->stats.rpcs_sent++;
		if (status)
			n = unit_abort_locked(u, status, un);
		break;
	case CTAG_REPLY:
		if (ev->type == ULNET_EVENT_PUT && !ev->status) {
			u->got_reply = true;
			/* a remote error: the server may never touch the bulk */
			if (u->live[CTAG_BULK] && ev->mlength >= SRPC_HDR_SIZE + 4 &&
			    ul_get_le32(u->rep) == SRPC_MSG_MAGIC && ul_get_le32(u->rep + SRPC_HDR_SIZE) != 0)
				unlink_bulk = u->mdh[CTAG_BULK];
			else if (u->live[CTAG_BULK] && ev->mlength >= SRPC_HDR_SIZE + 4 &&
				 ul_get_be32(u->rep) == SRPC_MSG_MAGIC && ul_get_be32(u->rep + SRPC_HDR_SIZE) != 0)
				unlink_bulk = u->mdh[CTAG_BULK];
		} else if (status) {
			n = unit_abort_locked(u, status, un);
		}
		break;
	case CTAG_BULK:
		if (ev->type == ULNET_EVENT_UNLINK)
			u->bulk_unlinked = true;
		break;
	default:
		break;
	}
	if (ev->unlinked || ev->type == ULNET_EVENT_UNLINK)
		over = unit_md_gone_locked(st, u, tag->kind);
	pthread_mutex_unlock(&st->lock);
	for (int i = 0; i < n; i++)
		(void)ulnet_md_unlink(st->ln, un[i]);
	if (!ulnet_handle_is_none(unlink_bulk))
		(void)ulnet_md_unlink(st->ln, unlink_bulk);
	if (over)
		unit_rpc_done(u);
}

/* Every MD of the unit's RPC is gone: judge it as the kernel does
 * (srpc_send_rpc, then the test's done_rpc), count, and go on or stop. */
static void unit_rpc_done(struct unit *u)
{
	struct ctest *t = u->t;
	struct ulnet_selftest *st = t->st;
	bool brw = t->service == SRPC_SERVICE_BRW;
	struct srpc_msg m = { 0 };
	char pb[ULNET_NIDSTR_SIZE];
	bool stopping, done;
	uint32_t remote = 0;
	int rc, brw_err = 0, ping_err = 0;

	lnet_nidstr(&u->dest.nid, pb);
	pthread_mutex_lock(&st->lock);
	stopping = t->stopping;
	u->in_rpc = false;              /* sweeps leave it alone from now on */
	if (u->expired)
		st->stats.rpcs_expired++;
	rc = u->abort_status;
	pthread_mutex_unlock(&st->lock);

	if (!rc)
		rc = u->status[CTAG_REQ];
	if (!rc)
		rc = u->status[CTAG_REPLY];
	if (!rc && !u->got_reply)
		rc = -EINTR;
	if (!rc) {
		if (srpc_msg_decode(u->rep, sizeof(u->rep), &m) ||
		    m.type != (uint32_t)srpc_service2reply((int)t->service)) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: bad reply from %s: type %u (%d expected)", pb,
				 ul_get_le32(u->rep + 8), srpc_service2reply((int)t->service));
			rc = -EBADMSG;
		}
	}
	if (!rc && brw) {
		remote = m.body.brw_reply.status;
		rc = u->status[CTAG_BULK];
		if (rc && u->bulk_unlinked && remote != 0)
			rc = 0;
	}
	if (brw) {
		if (rc) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw RPC to %s failed: %s", pb, ulnet_strerror(rc));
			brw_err = !stopping;
		} else if (remote) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw RPC to %s finished with status %u", pb, remote);
			brw_err = 1;
			rc = -(int)remote;
		} else if (t->opc == LST_BRW_READ &&
			   brw_check_off(u->bulk, t->len, t->off, t->flags, m.swapped)) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw read data from %s is corrupted", pb);
			brw_err = 1;
			rc = -EBADMSG;
		}
	} else {
		if (rc) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: cannot ping %s (seq %u): %s", pb, u->seq,
				 ulnet_strerror(rc));
			ping_err = !stopping;
		} else if (m.body.ping_reply.magic != LST_PING_TEST_MAGIC) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: bad ping magic %#x from %s",
				 m.body.ping_reply.magic, pb);
			ping_err = 1;
			rc = -EBADMSG;
		} else if (m.body.ping_reply.seq != u->seq) {
			lnet_log(st->ln, ULNET_LOG_WARN, "selftest: bad ping seq %u from %s, %u expected",
				 m.body.ping_reply.seq, pb, u->seq);
			ping_err = 1;
			rc = -EBADMSG;
		}
	}

	pthread_mutex_lock(&st->lock);
	st->stats.client_rpcs++;
	if (rc)
		st->stats.client_errors++;
	st->sn_brw_errors += (uint32_t)brw_err;
	st->sn_ping_errors += (uint32_t)ping_err;
	st->stats.brw_errors += (uint32_t)brw_err;
	st->stats.ping_errors += (uint32_t)ping_err;
	done = t->stopping || st->stopping || u->loop == 0 || (rc && t->stop_onerr);
	if (done)
		unit_finish_locked(st, u);
	else
		post_unit_locked(st, u);
	pthread_mutex_unlock(&st->lock);
}

/* Abort the RPCs that must end: of tests stopped with force, and those past
 * their deadline. Tests are pinned while we look at them unlocked. */
static void client_sweep(struct ulnet_selftest *st)
{
	struct ctest *pinned[MAX_PINNED];
	uint64_t now = ul_loop_now(st->ln->ln_loop);
	int np = 0;

	pthread_mutex_lock(&st->lock);
	for (struct ctest *t = st->ctests; t && np < MAX_PINNED; t = t->next)
		if (t->nactive > 0) {
			t->pins++;
			pinned[np++] = t;
		}
	pthread_mutex_unlock(&st->lock);
	for (int i = 0; i < np; i++) {
		struct ctest *t = pinned[i];

		for (int j = 0; j < t->nunits; j++) {
			struct unit *u = &t->units[j];
			ulnet_handle_t un[CTAG_COUNT];
			int n = 0;

			pthread_mutex_lock(&st->lock);
			if (u->in_rpc && !u->aborted) {
				if (t->abort_req || st->stopping) {
					n = unit_abort_locked(u, -EINTR, un);
				} else if (now >= u->deadline) {
					char pb[ULNET_NIDSTR_SIZE];

					lnet_nidstr(&u->dest.nid, pb);
					lnet_log(st->ln, ULNET_LOG_WARN,
						 "selftest: RPC (service %u) to %s timed out after %d s", t->service,
						 pb, st->rpc_timeout_s);
					u->expired = true;
					n = unit_abort_locked(u, -ETIMEDOUT, un);
				}
			}
			pthread_mutex_unlock(&st->lock);
			for (int k = 0; k < n; k++)
				(void)ulnet_md_unlink(st->ln, un[k]);
		}
		pthread_mutex_lock(&st->lock);
		t->pins--;
		ctest_maybe_free_locked(st, t);
		pthread_mutex_unlock(&st->lock);
	}
}

static void timer_cb(struct ul_timer *tm)
{
	struct ulnet_selftest *st = (struct ulnet_selftest *)((char *)tm - offsetof(struct ulnet_selftest, timer));
	bool unpost_tests;

	pthread_mutex_lock(&st->lock);
	if (!st->timer_armed) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	st->timer_armed = false;
	/* the session first: ending it marks its client tests for abort,
	 * which the sweep then carries out */
	unpost_tests = !st->stopping && session_check_expiry_locked(st, lnet_now(st->ln));
	pthread_mutex_unlock(&st->lock);
	client_sweep(st);
	/* still under the timer's reference: stop() waits for it */
	if (unpost_tests) {
		unpost_service(st, SRPC_SERVICE_BRW);
		unpost_service(st, SRPC_SERVICE_PING);
	}
	pthread_mutex_lock(&st->lock);
	arm_timer_locked(st);
	st->refs--;                     /* the timer's own */
	pthread_mutex_unlock(&st->lock);
}

static void barrier_cb(struct ul_work *w)
{
	struct ulnet_selftest *st = (struct ulnet_selftest *)((char *)w - offsetof(struct ulnet_selftest, barrier));

	pthread_mutex_lock(&st->lock);
	st->refs--;
	pthread_mutex_unlock(&st->lock);
}

/* RUN (lock held): as sfw_run_batch. */
static void batch_run_locked(struct ulnet_selftest *st, uint64_t bid)
{
	bool any = false;

	if (batch_active_locked(st, bid))
		return;
	for (struct ctest *t = st->ctests; t; t = t->next) {
		if (t->zombie || t->bid != bid)
			continue;
		t->stopping = t->abort_req = false;
		t->nactive = t->nunits;
		for (int j = 0; j < t->nunits; j++) {
			t->units[j].loop = t->loop;
			post_unit_locked(st, &t->units[j]);
		}
		any = true;
	}
	if (any)
		arm_timer_locked(st);
}

/* STOP (lock held): as sfw_stop_batch; the caller sweeps for `force`. */
static void batch_stop_locked(struct ulnet_selftest *st, uint64_t bid, bool force)
{
	for (struct ctest *t = st->ctests; t; t = t->next) {
		if (t->zombie || t->bid != bid || t->nactive == 0 || t->stopping)
			continue;
		t->stopping = true;
		t->abort_req = force;
	}
}

/* Build a client test from a TEST add request and its destination list
 * (`ids`: ndest packed ids in the sender's byte order). Returns the test,
 * or NULL with *status the reply status. No lock held. */
static struct ctest *ctest_create(struct ulnet_selftest *st, const struct srpc_msg *msg, const uint8_t *ids,
				  uint32_t *status)
{
	const struct srpc_test_reqst *rq = &msg->body.tes_reqst;
	uint64_t nunits = (uint64_t)rq->ndest * rq->concur;
	uint32_t opc = 0, flags = 0, len = 0, off = 0;
	struct ctest *t;

	if (rq->service == SRPC_SERVICE_BRW) {
		/* brw_client_init's checks */
		opc = rq->param.blk_opc;
		flags = rq->param.blk_flags;
		if (rq->param.kind == SRPC_TEST_PARAM_BULK_V1) {
			len = rq->param.blk_len;
			off = rq->param.blk_offset & (SRPC_PAGE_SIZE - 1);
		} else {
			len = rq->param.blk_npg > ULNET_MTU / SRPC_PAGE_SIZE ? ULNET_MTU + 1
									   : rq->param.blk_npg * SRPC_PAGE_SIZE;
		}
		if (off % 8 || len > ULNET_MTU || (opc != LST_BRW_READ && opc != LST_BRW_WRITE) ||
		    (flags != LST_BRW_CHECK_NONE && flags != LST_BRW_CHECK_FULL &&
		     flags != LST_BRW_CHECK_SIMPLE && flags != LST_BRW_CHECK_DISCARD)) {
			*status = EINVAL;
			return NULL;
		}
	}
	if (nunits > MAX_UNITS || (rq->service == SRPC_SERVICE_BRW && nunits * len > MAX_CLIENT_BULK)) {
		*status = ENOMEM;
		return NULL;
	}
	t = calloc(1, sizeof(*t) + (size_t)nunits * sizeof(struct unit));
	if (!t) {
		*status = ENOMEM;
		return NULL;
	}
	if (rq->service == SRPC_SERVICE_BRW && len > 0) {
		t->bulk_mem = calloc((size_t)nunits, len);
		if (!t->bulk_mem) {
			free(t);
			*status = ENOMEM;
			return NULL;
		}
		/* reused by every RPC of the test: registered with an RDMA
		 * device once (failing, only each RPC's MD is) */
		(void)ulnet_mem_register(st->ln, t->bulk_mem, (size_t)nunits * len);
	}
	t->st = st;
	t->bid = rq->bid;
	t->service = rq->service;
	t->concur = rq->concur;
	t->loop = (int32_t)rq->loop;
	t->stop_onerr = rq->stop_onerr != 0;
	t->features = msg->ses_feats;
	t->opc = opc;
	t->flags = flags;
	t->len = len;
	t->off = off;
	t->nunits = (int)nunits;
	for (uint32_t i = 0, n = 0; i < rq->ndest; i++) {
		const uint8_t *p = ids + (size_t)i * SRPC_ID_PACKED_SIZE;
		ulnet_process_id_t dest;

		ulnet_nid_from_nid4(ul_get_64(p, msg->swapped), &dest.nid);
		dest.pid = ul_get_32(p + 8, msg->swapped);
		for (uint32_t j = 0; j < rq->concur; j++, n++) {
			struct unit *u = &t->units[n];

			u->t = t;
			u->dest = dest;
			u->work.fn = unit_start;
			u->bulk = t->bulk_mem ? t->bulk_mem + (size_t)n * len : NULL;
			for (int k = 0; k < CTAG_COUNT; k++) {
				u->tags[k] = (struct ctag){ u, (enum ctag_kind)k };
				u->mdh[k] = ULNET_HANDLE_NONE;
			}
		}
	}
	*status = 0;
	return t;
}

/* --- session (lock held) --------------------------------------------------- */

static struct srpc_sid old_sid(const struct ulnet_selftest *st)
{
	if (st->sn_active)
		return st->sn_id;
	return (struct srpc_sid){ .nid = SRPC_NID4_ANY, .stamp = -1 };
}

static bool sid_equal(struct srpc_sid a, struct srpc_sid b)
{
	return a.nid == b.nid && a.stamp == b.stamp;
}

/* End the session; returns whether test services must be taken back. */
static bool session_end_locked(struct ulnet_selftest *st)
{
	bool had_tests = st->test_enabled[0] || st->test_enabled[1];

	st->sn_active = false;
	st->nbatches = 0;
	/* client tests: stopped with force and freed once idle, as the kernel
	 * keeps a zombie session until its tests end */
	for (int i = 0; i < st->ntests; i++) {
		struct ctest *t = st->tests[i].client;

		if (!t)
			continue;
		t->zombie = true;
		if (t->nactive > 0)
			t->stopping = t->abort_req = true;
		ctest_maybe_free_locked(st, t);
	}
	st->ntests = 0;
	st->test_enabled[0] = st->test_enabled[1] = false;
	tests_buffers_retire_locked(st);
	return had_tests;
}

/* The kernel's session timer: checked by the 1 s sweep and when a request
 * comes (the sweep may be up to a second late). */
static bool session_check_expiry_locked(struct ulnet_selftest *st, uint64_t now)
{
	if (!st->sn_active || st->timeout_s == 0)
		return false;
	if (now - st->sn_last_ns < (uint64_t)st->timeout_s * LNET_NSEC_PER_SEC)
		return false;
	lnet_log(st->ln, ULNET_LOG_WARN, "selftest: session expired: sid %llx-%lld, name %.32s",
		 (unsigned long long)st->sn_id.nid, (long long)st->sn_id.stamp, st->sn_name);
	return session_end_locked(st);
}

static int find_batch(const struct ulnet_selftest *st, uint64_t bid)
{
	for (int i = 0; i < st->nbatches; i++)
		if (st->batches[i] == bid)
			return i;
	return -1;
}

/* --- framework services (lock held); return 0 (reply) or -errno (drop) ---- */

static int fw_make_session(struct ulnet_selftest *st, struct slot *s, uint64_t now)
{
	const struct srpc_mksn_reqst *rq = &s->msg.body.mksn_reqst;
	struct srpc_mksn_reply *rp = &s->reply.body.mksn_reply;

	if (rq->sid.nid == SRPC_NID4_ANY) {
		rp->sid = old_sid(st);
		rp->status = EINVAL;
		return 0;
	}
	if (st->sn_active) {
		rp->status = 0;
		rp->sid = old_sid(st);
		rp->timeout = (uint32_t)st->timeout_s;
		if (sid_equal(rq->sid, st->sn_id)) {
			st->sn_refcount++;
			return 0;
		}
		if (!rq->force) {
			rp->status = EBUSY;
			memcpy(rp->name, st->sn_name, sizeof(rp->name));
			return 0;
		}
	}
	if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		rp->status = EPROTO;
		return 0;
	}
	if (st->sn_active) {
		char pb[ULNET_NIDSTR_SIZE];

		peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: session %.32s replaced by force from %s",
			 st->sn_name, pb);
		(void)session_end_locked(st);   /* the caller takes test buffers back */
	}
	st->sn_active = true;
	st->sn_id = rq->sid;
	st->sn_features = s->msg.ses_feats;
	memcpy(st->sn_name, rq->name, sizeof(st->sn_name));
	st->sn_name[SRPC_NAME_SIZE - 1] = '\0';
	st->sn_refcount = 1;
	st->sn_started_ns = now;
	st->sn_brw_errors = st->sn_ping_errors = 0;
	rp->status = 0;
	rp->sid = st->sn_id;
	rp->timeout = (uint32_t)st->timeout_s;
	return 0;
}

static void fw_remove_session(struct ulnet_selftest *st, struct slot *s)
{
	const struct srpc_rmsn_reqst *rq = &s->msg.body.rmsn_reqst;
	struct srpc_rmsn_reply *rp = &s->reply.body.rmsn_reply;

	rp->sid = old_sid(st);
	if (rq->sid.nid == SRPC_NID4_ANY) {
		rp->status = EINVAL;
		return;
	}
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id)) {
		rp->status = st->sn_active ? EBUSY : ESRCH;
		return;
	}
	rp->status = 0;
	if (--st->sn_refcount > 0)
		return;
	(void)session_end_locked(st);
	rp->sid = old_sid(st);
}

static void fw_debug(struct ulnet_selftest *st, struct slot *s)
{
	struct srpc_debug_reply *rp = &s->reply.body.dbg_reply;

	rp->sid = old_sid(st);
	if (!st->sn_active) {
		rp->status = ESRCH;
		return;
	}
	rp->status = 0;
	rp->timeout = (uint32_t)st->timeout_s;
	memcpy(rp->name, st->sn_name, sizeof(rp->name));
}

static void fw_stat(struct ulnet_selftest *st, struct slot *s, uint64_t now)
{
	const struct srpc_stat_reqst *rq = &s->msg.body.stat_reqst;
	struct srpc_stat_reply *rp = &s->reply.body.stat_reply;
	struct ulnet_counters c;

	rp->sid = old_sid(st);
	if (rq->sid.nid == SRPC_NID4_ANY) {
		rp->status = EINVAL;
		return;
	}
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id)) {
		rp->status = ESRCH;
		return;
	}
	/* ulnet_counters_get() takes the instance lock, never ours: fine here */
	ulnet_counters_get(st->ln, &c);
	rp->lnet.msgs_alloc = (uint32_t)c.msgs_alloc;
	rp->lnet.msgs_max = (uint32_t)c.msgs_max;
	rp->lnet.errors = (uint32_t)c.errors;
	rp->lnet.send_count = (uint32_t)c.send_count;
	rp->lnet.recv_count = (uint32_t)c.recv_count;
	rp->lnet.route_count = (uint32_t)c.route_count;
	rp->lnet.drop_count = (uint32_t)c.drop_count;
	rp->lnet.send_length = c.send_length;
	rp->lnet.recv_length = c.recv_length;
	rp->lnet.route_length = c.route_length;
	rp->lnet.drop_length = c.drop_length;
	rp->rpc.errors = st->stats.errors;
	rp->rpc.rpcs_sent = st->stats.rpcs_sent;
	rp->rpc.rpcs_rcvd = st->stats.rpcs_rcvd;
	rp->rpc.rpcs_dropped = st->stats.rpcs_dropped;
	rp->rpc.rpcs_expired = st->stats.rpcs_expired;
	rp->rpc.bulk_get = st->stats.bulk_get;
	rp->rpc.bulk_put = st->stats.bulk_put;
	rp->fw.running_ms = (uint32_t)((now - st->sn_started_ns) / 1000000u);
	rp->fw.active_batches = 0;
	for (int i = 0; i < st->nbatches; i++)
		rp->fw.active_batches += batch_active_locked(st, st->batches[i]);
	rp->fw.zombie_sessions = 0;
	for (struct ctest *t = st->ctests; t; t = t->next)
		if (t->zombie) {
			rp->fw.zombie_sessions = 1;   /* the kernel counts sessions */
			break;
		}
	rp->fw.brw_errors = st->sn_brw_errors;
	rp->fw.ping_errors = st->sn_ping_errors;
	rp->status = 0;
}

/* Returns the test service to post now, or -1. *fetch: a client test whose
 * destination list must be fetched first (the reply waits for it). */
static int fw_add_test(struct ulnet_selftest *st, struct slot *s, int *drop, bool *fetch)
{
	const struct srpc_test_reqst *rq = &s->msg.body.tes_reqst;
	struct srpc_test_reply *rp = &s->reply.body.tes_reply;
	int b, ti, nbuf;

	rp->sid = old_sid(st);
	if (rq->ndest > ULNET_MAX_IOV * (SRPC_PAGE_SIZE / SRPC_ID_PACKED_SIZE)) {
		char pb[ULNET_NIDSTR_SIZE];

		peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: test add from console %s: %u destinations, at most %d",
			 pb, rq->ndest, ULNET_MAX_IOV * (SRPC_PAGE_SIZE / SRPC_ID_PACKED_SIZE));
	}
	if (rq->loop == 0 || rq->concur == 0 || rq->sid.nid == SRPC_NID4_ANY ||
	    rq->ndest > ULNET_MAX_IOV * (SRPC_PAGE_SIZE / SRPC_ID_PACKED_SIZE) ||
	    (rq->is_client && rq->ndest == 0) || rq->concur > LST_MAX_CONCUR ||
	    rq->service >= SRPC_SERVICE_MAX_ID || rq->service <= SRPC_FRAMEWORK_SERVICE_MAX_ID) {
		rp->status = EINVAL;
		return -1;
	}
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id) ||
	    (rq->service != SRPC_SERVICE_BRW && rq->service != SRPC_SERVICE_PING)) {
		rp->status = ENOENT;
		return -1;
	}
	b = find_batch(st, rq->bid);
	if (b < 0) {
		if (st->nbatches == MAX_BATCHES) {
			*drop = -ENOMEM;
			return -1;
		}
		b = st->nbatches++;
		st->batches[b] = rq->bid;
	}
	if (batch_active_locked(st, rq->bid)) {
		rp->status = EBUSY;
		return -1;
	}
	if (rq->is_client) {
		*fetch = true;              /* testadd_bulk_done() goes on */
		return -1;
	}
	if (st->ntests == MAX_TESTS) {
		rp->status = ENOMEM;
		return -1;
	}
	/* the request buffers this test adds to its service (sfw_load_test):
	 * the kernel's loop is an int, so -1 (run until stopped) gets the
	 * minimum */
	ti = test_index((int)rq->service);
	nbuf = ((int32_t)rq->loop < TEST_WI_MAX ? (int32_t)rq->loop : TEST_WI_MAX) + TEST_WI_EXTRA;
	if (nbuf < TEST_WI_MIN)
		nbuf = TEST_WI_MIN;
	if (nbuf > TEST_NBUF_MAX - st->test_nbuf[ti])
		nbuf = TEST_NBUF_MAX - st->test_nbuf[ti];
	if (nbuf > 0 && !chunk_add_locked(st, (int)rq->service, nbuf)) {
		rp->status = ENOMEM;
		return -1;
	}
	st->test_nbuf[ti] += nbuf;
	if (rq->service == SRPC_SERVICE_BRW) {
		st->bulk_concur += rq->concur;
		st->bulk_limit = st->bulk_concur < BULK_MIN ? BULK_MIN
			       : st->bulk_concur > BULK_MAX ? BULK_MAX : (int)st->bulk_concur;
	}
	st->tests[st->ntests++] = (struct test_rec){
		.bid = rq->bid, .service = rq->service, .loop = rq->loop, .concur = rq->concur, .client = NULL,
	};
	rp->status = 0;
	st->test_enabled[ti] = true;
	return (int)rq->service;
}

static int fw_batch(struct ulnet_selftest *st, struct slot *s)
{
	const struct srpc_batch_reqst *rq = &s->msg.body.bat_reqst;
	struct srpc_batch_reply *rp = &s->reply.body.bat_reply;

	rp->sid = old_sid(st);
	if (!st->sn_active || !sid_equal(rq->sid, st->sn_id)) {
		rp->status = ESRCH;
		return 0;
	}
	if (find_batch(st, rq->bid) < 0) {
		rp->status = ENOENT;
		return 0;
	}
	switch (rq->opc) {
	case SRPC_BATCH_OPC_RUN:
		batch_run_locked(st, rq->bid);
		rp->status = 0;
		return 0;
	case SRPC_BATCH_OPC_STOP:
		batch_stop_locked(st, rq->bid, rq->arg != 0);
		rp->status = 0;
		return 0;
	case SRPC_BATCH_OPC_QUERY: {
		int idx = (int)rq->testidx;

		if (idx < 0) {
			rp->status = EINVAL;
			return 0;
		}
		rp->active = 0;
		if (idx == 0) {
			/* test instances running */
			for (int i = 0; i < st->ntests; i++)
				if (st->tests[i].bid == rq->bid && st->tests[i].client &&
				    st->tests[i].client->nactive > 0)
					rp->active++;
			rp->status = 0;
			return 0;
		}
		for (int i = 0; i < st->ntests; i++)
			if (st->tests[i].bid == rq->bid && --idx == 0) {
				/* units running */
				if (st->tests[i].client)
					rp->active = (uint32_t)st->tests[i].client->nactive;
				rp->status = 0;
				return 0;
			}
		rp->status = ENOENT;
		return 0;
	}
	default:
		return -EINVAL;         /* dropped, as the kernel does */
	}
}

/* --- replies ----------------------------------------------------------------- */

static void finish_dropped(struct slot *s, int why)
{
	struct ulnet_selftest *st = s->st;

	pthread_mutex_lock(&st->lock);
	st->stats.rpcs_dropped++;
	pthread_mutex_unlock(&st->lock);
	(void)why;
	slot_done(s);
}

static void send_reply(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	struct ulnet_md md = {
		.start = s->rep,
		.length = SRPC_MSG_SIZE,
		.threshold = 1,
		.options = 0,
		.user_ptr = &s->tags[TAG_REPLY],
		.handler = handler,
	};
	ulnet_handle_t mdh;
	int rc;

	s->reply.version = SRPC_MSG_VERSION;
	s->reply.type = (uint32_t)srpc_service2reply(s->service);
	(void)srpc_msg_encode(&s->reply, s->rep, sizeof(s->rep));
	rc = agent_md_bind(st, &md, &mdh, true);
	if (rc) {
		finish_dropped(s, rc);
		return;
	}
	slot_set_inflight(s, mdh);
	rc = ulnet_put(st->ln, &s->self, mdh, ULNET_NOACK_REQ, s->peer, SRPC_RDMA_PORTAL, s->rpyid, 0, 0);
	if (rc) {
		char pb[ULNET_NIDSTR_SIZE];

		peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: cannot send the reply to %s: %s", pb,
			 ulnet_strerror(rc));
		(void)ulnet_md_unlink(st->ln, mdh);   /* its UNLINK event ends the RPC */
	}
}

/* --- test services ------------------------------------------------------------ */

/* The fragments of a buffer as the kernel's pages: the first ends at the
 * page boundary after `off`, then whole pages. */
static uint32_t frag_len(uint32_t pos, uint32_t len, uint32_t off)
{
	uint32_t room = SRPC_PAGE_SIZE - ((pos + off) & (SRPC_PAGE_SIZE - 1));

	return len - pos < room ? len - pos : room;
}

static void brw_fill_off(uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, uint64_t magic)
{
	if (pattern != LST_BRW_CHECK_SIMPLE && pattern != LST_BRW_CHECK_FULL)
		return;
	for (uint32_t pg = 0, plen; pg < len; pg += plen) {
		uint8_t *p = buf + pg;

		plen = frag_len(pg, len, off);
		if (pattern == LST_BRW_CHECK_SIMPLE) {
			if (plen >= 8)
				ul_put_le64(p, magic);
			if (plen > 8 && plen >= 16)
				ul_put_le64(p + ((plen - 8) & ~7u), magic);
			continue;
		}
		for (uint32_t i = 0; i + 8 <= plen; i += 8)
			ul_put_le64(p + i, magic);
	}
}

/* Returns whether the data is bad. `be`: the sender wrote big-endian words. */
static bool brw_check_off(const uint8_t *buf, uint32_t len, uint32_t off, uint32_t pattern, int be)
{
	if (pattern != LST_BRW_CHECK_SIMPLE && pattern != LST_BRW_CHECK_FULL)
		return false;
	for (uint32_t pg = 0, plen; pg < len; pg += plen) {
		const uint8_t *p = buf + pg;

		plen = frag_len(pg, len, off);
		if (pattern == LST_BRW_CHECK_SIMPLE) {
			if (plen >= 8 && ul_get_64(p, be) != LST_BRW_MAGIC)
				return true;
			if (plen >= 16 && ul_get_64(p + ((plen - 8) & ~7u), be) != LST_BRW_MAGIC)
				return true;
			continue;
		}
		for (uint32_t i = 0; i + 8 <= plen; i += 8)
			if (ul_get_64(p + i, be) != LST_BRW_MAGIC)
				return true;
	}
	return false;
}

static void brw_fill(uint8_t *buf, uint32_t len, uint32_t pattern, uint64_t magic)
{
	brw_fill_off(buf, len, 0, pattern, magic);
}

static bool brw_check(const uint8_t *buf, uint32_t len, uint32_t pattern, int be)
{
	return brw_check_off(buf, len, 0, pattern, be);
}

/* The slot's bulk buffer holds at least `len` bytes (zeroed when it
 * grows: bytes outside a brw pattern start as 0, as the kernel's fresh
 * pages). 0 or -ENOMEM. */
static int slot_bulk_reserve(struct slot *s, size_t len)
{
	uint8_t *b;

	if (s->bulk_cap >= len)
		return 0;
	b = calloc(1, len);
	if (!b)
		return -ENOMEM;
	free(s->bulk);
	s->bulk = b;
	s->bulk_cap = len;
	return 0;
}

/* Start the slot's bulk transfer of `len` bytes of its buffer with the
 * peer's MD `bulkid` on portal 52: GET into it (`sink`) or PUT from it.
 * Its events end in handler()'s TAG_BULK. Returns 1 (started: an error
 * after the bind still ends there, through the unlink) or -errno. */
static int slot_bulk_start(struct slot *s, uint8_t *buf, size_t len, bool sink, unsigned options,
			   uint64_t bulkid)
{
	struct ulnet_selftest *st = s->st;
	struct ulnet_md md = {
		.start = buf,
		.length = len,
		.threshold = sink ? 2 : 1,         /* GET: SEND and REPLY */
		/* a REPLY that never comes unlinks the MD after
		 * transaction_timeout (as the kernel's tracker does),
		 * whatever response_tracking says */
		.options = options | (sink ? ULNET_MD_TRACK_RESPONSE : 0),
		.user_ptr = &s->tags[TAG_BULK],
		.handler = handler,
	};
	ulnet_handle_t mdh;
	int rc;

	s->bulk_status = 0;
	s->bulk_mlength = 0;
	rc = agent_md_bind(st, &md, &mdh, false);
	if (rc)
		return rc;
	slot_set_inflight(s, mdh);
	if (sink)
		rc = ulnet_get(st->ln, &s->self, mdh, s->peer, SRPC_RDMA_PORTAL, bulkid, 0);
	else
		rc = ulnet_put(st->ln, &s->self, mdh, ULNET_NOACK_REQ, s->peer, SRPC_RDMA_PORTAL,
			       bulkid, 0, 0);
	if (rc) {
		s->bulk_status = rc;
		(void)ulnet_md_unlink(st->ln, mdh);   /* its UNLINK event ends the RPC */
	}
	return 1;
}

/* --- the brw bulk pool (lock rules as above) ------------------------------------ */

/* A pool buffer goes: its promise to stay mapped ends first. */
static void bulk_free(struct ulnet_selftest *st, struct bulkbuf *b)
{
	if (b->cap)
		ulnet_mem_deregister(st->ln, b->mem, b->cap);
	free(b);
}

/* A pool buffer of at least `len` bytes (lock held): a free one, or NULL
 * with *alloc set when the caller is to allocate it (counted already), or
 * NULL: none to be had now. */
static struct bulkbuf *bulk_take_locked(struct ulnet_selftest *st, size_t len, bool *alloc)
{
	struct bulkbuf **pp, *b;

	*alloc = false;
	for (pp = &st->bulk_free; *pp; pp = &(*pp)->next)
		if ((*pp)->cap >= len) {
			b = *pp;
			*pp = b->next;
			return b;
		}
	if (st->bulk_count < st->bulk_limit) {
		st->bulk_count++;
		*alloc = true;
	} else if (st->bulk_free) {
		/* too small ones only: one is replaced by a bigger one */
		b = st->bulk_free;
		st->bulk_free = b->next;
		bulk_free(st, b);
		*alloc = true;
	}
	return NULL;
}

/* Allocate the buffer bulk_take_locked() counted; on failure uncount it. */
static struct bulkbuf *bulk_alloc(struct ulnet_selftest *st, size_t len)
{
	/* zeroed: bytes outside a brw pattern start as 0, as the kernel's
	 * fresh pages */
	struct bulkbuf *b = calloc(1, sizeof(*b) + len);

	if (b) {
		b->cap = len;
		/* a pool buffer serves many RPCs: registered with an RDMA
		 * device once (failing, only each RPC's MD is) */
		if (len)
			(void)ulnet_mem_register(st->ln, b->mem, len);
		return b;
	}
	pthread_mutex_lock(&st->lock);
	st->bulk_count--;
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static void brw_bulk_begin(struct slot *s);
static void drop_request(struct slot *s, const char *why);

/* Hand the free buffers to the brw requests waiting for one, in order;
 * those of a service gone (or an agent stopping) are dropped. Buffers
 * beyond the pool's bound, or with no brw test left, are freed. One
 * thread at a time does it; one arriving meanwhile leaves its work to it. */
static void bulk_kick(struct ulnet_selftest *st)
{
	pthread_mutex_lock(&st->lock);
	if (st->bulk_kicking) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	st->bulk_kicking = true;
	while (st->bwait_head) {
		struct slot *s = st->bwait_head;
		bool on = service_on(st, SRPC_SERVICE_BRW), alloc = false;
		struct bulkbuf *b = NULL;

		if (on) {
			b = bulk_take_locked(st, s->msg.body.brw_reqst.len, &alloc);
			if (!b && !alloc)
				break;
		}
		st->bwait_head = s->wait_next;
		if (!st->bwait_head)
			st->bwait_tail = NULL;
		s->wait_next = NULL;
		pthread_mutex_unlock(&st->lock);
		if (alloc)
			b = bulk_alloc(st, s->msg.body.brw_reqst.len);
		if (b) {
			s->bb = b;
			brw_bulk_begin(s);
		} else {
			drop_request(s, on ? "no memory for its bulk" : "service is shut down");
		}
		pthread_mutex_lock(&st->lock);
	}
	while (st->bulk_free && (st->bulk_count > st->bulk_limit || !service_on(st, SRPC_SERVICE_BRW))) {
		struct bulkbuf *b = st->bulk_free;

		st->bulk_free = b->next;
		st->bulk_count--;
		bulk_free(st, b);
	}
	st->bulk_kicking = false;
	pthread_mutex_unlock(&st->lock);
}

/* The slot's bulk buffer goes back to the pool. */
static void bulk_release(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	struct bulkbuf *b = s->bb;

	if (!b)
		return;
	s->bb = NULL;
	pthread_mutex_lock(&st->lock);
	b->next = st->bulk_free;
	st->bulk_free = b;
	pthread_mutex_unlock(&st->lock);
	bulk_kick(st);
}

/* Start the bulk of brw request `s`, whose buffer it holds. */
static void brw_bulk_begin(struct slot *s)
{
	const struct srpc_brw_reqst *rq = &s->msg.body.brw_reqst;
	bool sink = rq->rw == LST_BRW_WRITE;
	char why[64];
	int rc;

	/* a read's bytes outside its pattern are 0, as in a fresh buffer */
	if (!sink && rq->flags != LST_BRW_CHECK_FULL) {
		memset(s->bb->mem, 0, s->bb->dirty);
		s->bb->dirty = 0;
	} else if (s->bb->dirty < rq->len) {
		s->bb->dirty = rq->len;
	}
	brw_fill(s->bb->mem, rq->len, rq->flags, sink ? LST_BRW_POISON : LST_BRW_MAGIC);
	rc = slot_bulk_start(s, s->bb->mem, rq->len, sink,
			     sink && rq->flags == LST_BRW_CHECK_DISCARD ? ULNET_MD_DISCARD : 0, rq->bulkid);
	if (rc < 0) {
		bulk_release(s);
		snprintf(why, sizeof(why), "request refused: %s", ulnet_strerror(rc));
		drop_request(s, why);
	}
}

/* Returns 0: reply now; 1: bulk started (or waits for a buffer); -errno: drop. */
static int brw_handle(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_brw_reqst *rq = &s->msg.body.brw_reqst;
	struct srpc_brw_reply *rp = &s->reply.body.brw_reply;
	struct bulkbuf *b = NULL;
	bool alloc = false;

	rp->status = 0;
	if ((rq->rw != LST_BRW_READ && rq->rw != LST_BRW_WRITE) ||
	    (rq->flags != LST_BRW_CHECK_NONE && rq->flags != LST_BRW_CHECK_FULL &&
	     rq->flags != LST_BRW_CHECK_SIMPLE && rq->flags != LST_BRW_CHECK_DISCARD)) {
		rp->status = EINVAL;
		return 0;
	}
	if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		s->reply.ses_feats = LST_FEATS_MASK;
		rp->status = EPROTO;
		return 0;
	}
	/* without BULK_LEN the length is still in bytes but must be whole pages */
	if (!(s->msg.ses_feats & LST_FEAT_BULK_LEN) && (rq->len % SRPC_PAGE_SIZE) != 0) {
		rp->status = EINVAL;
		return 0;
	}
	s->reply.ses_feats = s->msg.ses_feats;
	if (rq->len == 0 || rq->len > ULNET_MTU) {
		rp->status = EINVAL;
		return 0;
	}
	pthread_mutex_lock(&st->lock);
	st->stats.brw_reqs++;
	/* behind those waiting already, or with a buffer of the pool */
	if (!st->bwait_head)
		b = bulk_take_locked(st, rq->len, &alloc);
	if (!b && !alloc && st->stopping) {
		pthread_mutex_unlock(&st->lock);
		return -ESHUTDOWN;   /* the stop's bulk_kick() is past */
	}
	if (!b && !alloc) {
		s->wait_next = NULL;
		if (st->bwait_tail)
			st->bwait_tail->wait_next = s;
		else
			st->bwait_head = s;
		st->bwait_tail = s;
		pthread_mutex_unlock(&st->lock);
		return 1;            /* bulk_kick() goes on */
	}
	pthread_mutex_unlock(&st->lock);
	if (alloc) {
		b = bulk_alloc(st, rq->len);
		if (!b) {
			bulk_kick(st);   /* the room it took is free again */
			return -ENOMEM;
		}
	}
	s->bb = b;
	brw_bulk_begin(s);
	return 1;
}

/* The brw bulk is over (final event of its MD). */
static void brw_bulk_done(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_brw_reqst *rq = &s->msg.body.brw_reqst;
	char pb[ULNET_NIDSTR_SIZE];
	bool stopping;

	pthread_mutex_lock(&st->lock);
	stopping = st->stopping;
	pthread_mutex_unlock(&st->lock);
	if (s->bulk_status || stopping) {
		peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw %s bulk with %s failed: %s",
			 rq->rw == LST_BRW_READ ? "read" : "write", pb,
			 ulnet_strerror(s->bulk_status ? s->bulk_status : -ESHUTDOWN));
		bulk_release(s);
		finish_dropped(s, -EIO);
		return;
	}
	if (rq->rw == LST_BRW_WRITE && brw_check(s->bb->mem, rq->len, rq->flags, s->msg.swapped)) {
		peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: brw write data from %s is corrupted", pb);
		s->reply.body.brw_reply.status = EBADMSG;
		pthread_mutex_lock(&st->lock);
		st->stats.brw_check_errors++;
		pthread_mutex_unlock(&st->lock);
	}
	bulk_release(s);
	send_reply(s);
}

/* A client test add: GET the destination list from the console's bulk MD
 * (portal 52, bulkid), as the kernel's server bulk. Returns 1 (started) or
 * -errno (drop). */
static int dest_fetch(struct slot *s)
{
	const struct srpc_test_reqst *rq = &s->msg.body.tes_reqst;
	size_t len = (size_t)rq->ndest * SRPC_ID_PACKED_SIZE;

	if (slot_bulk_reserve(s, len))
		return -ENOMEM;
	memset(s->bulk, 0, len);
	return slot_bulk_start(s, s->bulk, len, true, 0, rq->bulkid);
}

/* The destination list is here (or not): add the client test and reply. */
static void testadd_bulk_done(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_test_reqst *rq = &s->msg.body.tes_reqst;
	struct srpc_test_reply *rp = &s->reply.body.tes_reply;
	uint32_t want = rq->ndest * SRPC_ID_PACKED_SIZE, status = 0;
	char pb[ULNET_NIDSTR_SIZE];
	struct ctest *t = NULL;
	int b;

	peer_str(s, pb);
	if (s->bulk_status || s->bulk_mlength != want) {
		/* the kernel drops the RPC (sfw_bulk_ready: EIO) */
		lnet_log(st->ln, ULNET_LOG_WARN,
			 "selftest: cannot fetch the destination list of a test from console %s (%u of %u bytes): %s",
			 pb, s->bulk_mlength, want, ulnet_strerror(s->bulk_status ? s->bulk_status : -EIO));
		finish_dropped(s, -EIO);
		return;
	}
	t = ctest_create(st, &s->msg, s->bulk, &status);
	pthread_mutex_lock(&st->lock);
	rp->sid = old_sid(st);
	if (t && (!st->sn_active || !sid_equal(rq->sid, st->sn_id)))
		status = ENOENT;
	else if (t && (b = find_batch(st, rq->bid)) < 0)
		status = ENOENT;
	else if (t && batch_active_locked(st, rq->bid))
		status = EBUSY;
	else if (t && st->ntests == MAX_TESTS)
		status = ENOMEM;
	if (t && !status) {
		st->tests[st->ntests++] = (struct test_rec){
			.bid = rq->bid, .service = rq->service, .loop = rq->loop, .concur = rq->concur, .client = t,
		};
		t->next = st->ctests;
		st->ctests = t;
		if (t->service == SRPC_SERVICE_PING)
			st->ping_seq = 0;       /* ping_client_init */
	}
	rp->status = status;
	pthread_mutex_unlock(&st->lock);
	if (status) {
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: client test (service %u) from console %s refused: %s",
			 rq->service, pb, ulnet_strerror(-(int)status));
		if (t)
			ctest_free(t);
	}
	send_reply(s);
}

static int ping_handle(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	const struct srpc_ping_reqst *rq = &s->msg.body.ping_reqst;
	struct srpc_ping_reply *rp = &s->reply.body.ping_reply;

	if (rq->magic != LST_PING_TEST_MAGIC)
		return -EBADMSG;
	rp->status = 0;
	rp->seq = rq->seq;
	rp->magic = LST_PING_TEST_MAGIC;
	if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		s->reply.ses_feats = LST_FEATS_MASK;
		rp->status = EPROTO;
		return 0;
	}
	s->reply.ses_feats = s->msg.ses_feats;
	pthread_mutex_lock(&st->lock);
	st->stats.ping_reqs++;
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* --- a request arrives --------------------------------------------------------- */

static uint64_t request_rpyid(const struct srpc_msg *m)
{
	/* every request body starts with rpyid */
	switch (m->type) {
	case SRPC_MSG_MKSN_REQST: return m->body.mksn_reqst.rpyid;
	case SRPC_MSG_RMSN_REQST: return m->body.rmsn_reqst.rpyid;
	case SRPC_MSG_BATCH_REQST: return m->body.bat_reqst.rpyid;
	case SRPC_MSG_STAT_REQST: return m->body.stat_reqst.rpyid;
	case SRPC_MSG_TEST_REQST: return m->body.tes_reqst.rpyid;
	case SRPC_MSG_DEBUG_REQST: return m->body.dbg_reqst.rpyid;
	case SRPC_MSG_BRW_REQST: return m->body.brw_reqst.rpyid;
	case SRPC_MSG_PING_REQST: return m->body.ping_reqst.rpyid;
	default: return 0;
	}
}

static void drop_request(struct slot *s, const char *why)
{
	char pb[ULNET_NIDSTR_SIZE];

	peer_str(s, pb);
	lnet_log(s->st->ln, ULNET_LOG_WARN, "selftest: dropping RPC (service %d) from %s: %s", s->service,
		 pb, why);
	finish_dropped(s, -EBADMSG);
}

/* Framework: returns 0 to reply, -errno to drop. */
static int framework_handle(struct slot *s, int *post_test, bool *unpost_tests, bool *fetch)
{
	struct ulnet_selftest *st = s->st;
	uint64_t now = lnet_now(st->ln);
	uint32_t features = LST_FEATS_MASK;
	int rc = 0;

	pthread_mutex_lock(&st->lock);
	*unpost_tests = session_check_expiry_locked(st, now);
	if (s->service != SRPC_SERVICE_MAKE_SESSION && s->service != SRPC_SERVICE_DEBUG) {
		if (st->sn_active && st->sn_features != s->msg.ses_feats) {
			char pb[ULNET_NIDSTR_SIZE];

			peer_str(s, pb);
			lnet_log(st->ln, ULNET_LOG_WARN,
				 "selftest: features of a framework RPC from %s (%#x) differ from the session's (%#x)",
				 pb, s->msg.ses_feats, st->sn_features);
			/* status and sid share their place in every reply */
			s->reply.body.tes_reply.status = EPROTO;
			s->reply.body.tes_reply.sid = st->sn_id;
			goto out;
		}
	} else if (s->msg.ses_feats & ~LST_FEATS_MASK) {
		s->reply.body.tes_reply.status = EPROTO;
		goto out;
	}
	switch (s->service) {
	case SRPC_SERVICE_TEST:
		*post_test = fw_add_test(st, s, &rc, fetch);
		break;
	case SRPC_SERVICE_BATCH:
		rc = fw_batch(st, s);
		break;
	case SRPC_SERVICE_QUERY_STAT:
		fw_stat(st, s, now);
		break;
	case SRPC_SERVICE_DEBUG:
		fw_debug(st, s);
		break;
	case SRPC_SERVICE_MAKE_SESSION: {
		bool had = st->test_enabled[0] || st->test_enabled[1];

		rc = fw_make_session(st, s, now);
		if (had && !st->test_enabled[0] && !st->test_enabled[1])
			*unpost_tests = true;
		break;
	}
	case SRPC_SERVICE_REMOVE_SESSION: {
		bool had = st->test_enabled[0] || st->test_enabled[1];

		fw_remove_session(st, s);
		if (had && !st->test_enabled[0] && !st->test_enabled[1])
			*unpost_tests = true;
		break;
	}
	default:
		rc = -EINVAL;
		break;
	}
	if (st->sn_active)
		features = st->sn_features;
out:
	s->reply.ses_feats = features;
	st->sn_last_ns = now;          /* the timer restarts after each framework RPC */
	arm_timer_locked(st);          /* a new session's expiry needs the sweep */
	pthread_mutex_unlock(&st->lock);
	return rc;
}

static void request_arrived(struct slot *s, const struct ulnet_event *ev)
{
	struct ulnet_selftest *st = s->st;
	bool on, unpost_tests = false, fetch = false;
	int post_test = -1;
	char why[96];
	int rc;

	s->peer = ev->source;
	s->self = ev->target.nid;
	pthread_mutex_lock(&st->lock);
	st->stats.rpcs_rcvd++;
	on = service_on(st, s->service);
	if (on && !is_framework(s->service) &&
	    session_check_expiry_locked(st, lnet_now(st->ln)))
		unpost_tests = true;
	pthread_mutex_unlock(&st->lock);
	if (unpost_tests) {
		unpost_service(st, SRPC_SERVICE_BRW);
		unpost_service(st, SRPC_SERVICE_PING);
		on = is_framework(s->service);
	}
	if (!on) {
		drop_request(s, "service is shut down");
		return;
	}
	if (ev->status) {
		snprintf(why, sizeof(why), "receive failed: %s", ulnet_strerror(ev->status));
		pthread_mutex_lock(&st->lock);
		st->stats.errors++;
		pthread_mutex_unlock(&st->lock);
		drop_request(s, why);
		return;
	}
	if (ev->mlength != SRPC_MSG_SIZE) {
		snprintf(why, sizeof(why), "%u bytes, not %d", ev->mlength, SRPC_MSG_SIZE);
		drop_request(s, why);
		return;
	}
	rc = srpc_msg_decode(s->req, ev->mlength, &s->msg);
	if (rc == -EPROTO) {
		snprintf(why, sizeof(why), "bad magic %#x", ul_get_le32(s->req));
		drop_request(s, why);
		return;
	}
	if (rc || s->msg.type != (uint32_t)srpc_service2request(s->service)) {
		snprintf(why, sizeof(why), "message type %u for this service", s->msg.type);
		drop_request(s, why);
		return;
	}
	s->rpyid = request_rpyid(&s->msg);
	memset(&s->reply, 0, sizeof(s->reply));
	if (s->msg.version != SRPC_MSG_VERSION) {
		char pb[ULNET_NIDSTR_SIZE];

		peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: version %u (%u expected) from %s",
			 s->msg.version, SRPC_MSG_VERSION, pb);
		/* status is the first word of every reply */
		s->reply.body.brw_reply.status = EPROTO;
		send_reply(s);
		return;
	}
	if (is_framework(s->service)) {
		rc = framework_handle(s, &post_test, &unpost_tests, &fetch);
		if (unpost_tests) {
			unpost_service(st, SRPC_SERVICE_BRW);
			unpost_service(st, SRPC_SERVICE_PING);
		}
		if (post_test >= 0)
			post_service(st, post_test);
		client_sweep(st);              /* a forced STOP, an ended session */
		if (!rc && fetch) {
			rc = dest_fetch(s);
			if (rc == 1)
				return;            /* the GET's events go on */
		}
	} else if (s->service == SRPC_SERVICE_PING) {
		rc = ping_handle(s);
	} else {
		rc = brw_handle(s);
		if (rc == 1)
			return;            /* the bulk's events go on */
	}
	if (rc) {
		snprintf(why, sizeof(why), "request refused: %s", ulnet_strerror(rc));
		drop_request(s, why);
		return;
	}
	send_reply(s);
}

static void handler_body(const struct ulnet_event *ev)
{
	const struct tag *t = ev->md_user_ptr;
	struct slot *s = t->slot;
	struct ulnet_selftest *st = s->st;
	bool last = ev->unlinked;

	if (ev->status && ev->type != ULNET_EVENT_UNLINK) {
		pthread_mutex_lock(&st->lock);
		st->stats.errors++;
		pthread_mutex_unlock(&st->lock);
	}
	switch (t->kind) {
	case TAG_REQ:
		pthread_mutex_lock(&st->lock);
		st->refs--;
		s->me = ULNET_HANDLE_NONE;
		if (ev->type == ULNET_EVENT_PUT) {
			slot_set_state_locked(s, SLOT_BUSY);
		} else {
			slot_set_state_locked(s, SLOT_IDLE);
			chunks_reap_locked(st);    /* s may be gone now */
		}
		pthread_mutex_unlock(&st->lock);
		if (ev->type == ULNET_EVENT_PUT)
			request_arrived(s, ev);
		return;
	case TAG_BULK:
		if (ev->type == ULNET_EVENT_UNLINK && !s->bulk_status)
			s->bulk_status = -EINTR;
		else if (ev->status && !s->bulk_status)
			s->bulk_status = ev->status;
		if (ev->type == ULNET_EVENT_REPLY)
			s->bulk_mlength = ev->mlength;
		if (!last) {
			/* a GET that failed to go: no REPLY will come, end the
			 * RPC now (its unlink brings the last event) */
			if (ev->status && ev->type != ULNET_EVENT_UNLINK)
				(void)ulnet_md_unlink(st->ln, ev->md_handle);
			return;
		}
		if (s->service == SRPC_SERVICE_TEST) {
			pthread_mutex_lock(&st->lock);
			st->refs--;
			if (!s->bulk_status)
				st->stats.bulk_get += s->bulk_mlength;
			pthread_mutex_unlock(&st->lock);
			testadd_bulk_done(s);
			return;
		}
		pthread_mutex_lock(&st->lock);
		st->refs--;
		if (!s->bulk_status) {
			if (s->msg.body.brw_reqst.rw == LST_BRW_WRITE)
				st->stats.bulk_get += ev->type == ULNET_EVENT_REPLY ? ev->mlength : s->msg.body.brw_reqst.len;
			else
				st->stats.bulk_put += s->msg.body.brw_reqst.len;
		}
		pthread_mutex_unlock(&st->lock);
		brw_bulk_done(s);
		return;
	case TAG_REPLY:
		if (!last)
			return;
		pthread_mutex_lock(&st->lock);
		st->refs--;
		if (ev->status || ev->type == ULNET_EVENT_UNLINK)
			st->stats.rpcs_dropped++;
		pthread_mutex_unlock(&st->lock);
		slot_done(s);
		return;
	default:
		return;
	}
}

/* Every MD's handler: the agent cannot go while one runs (the event's
 * MD still holds a ref when we count ourselves in). */
static void handler(const struct ulnet_event *ev)
{
	struct ulnet_selftest *st = ((const struct tag *)ev->md_user_ptr)->slot->st;

	atomic_fetch_add(&st->in_handler, 1);
	handler_body(ev);
	atomic_fetch_sub(&st->in_handler, 1);   /* our last touch of st */
}

/* --- API ------------------------------------------------------------------------ */

int ulnet_selftest_start(ulnet_t *ln, const struct ulnet_selftest_conf *conf, ulnet_selftest_t **out)
{
	struct ulnet_selftest *st, *it;
	int rc;

	if (!ln || !out || (conf && (conf->session_timeout < -1 || conf->rpc_timeout < -1)))
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->ln = ln;
	pthread_mutex_init(&st->lock, NULL);
	st->timeout_s = !conf || conf->session_timeout == 0 ? SESSION_TIMEOUT_DEFAULT
		       : conf->session_timeout < 0 ? 0 : conf->session_timeout;
	st->rpc_timeout_s = !conf || conf->rpc_timeout == 0 ? RPC_TIMEOUT_DEFAULT
			  : conf->rpc_timeout < 0 ? 0 : conf->rpc_timeout;
	st->matchbits = (uint64_t)time(NULL) << 48;   /* as srpc_startup() */
	ul_timer_init(&st->timer, timer_cb);
	st->barrier.fn = barrier_cb;
	st->bulk_limit = BULK_MIN;
	if (!chunk_add_locked(st, -1, N_FW_SERVICES * FW_NBUF)) {
		pthread_mutex_destroy(&st->lock);
		free(st);
		return -ENOMEM;
	}

	pthread_mutex_lock(&registry_lock);
	for (it = registry; it; it = it->next)
		if (it->ln == ln)
			break;
	if (!it) {
		st->next = registry;
		registry = st;
	}
	pthread_mutex_unlock(&registry_lock);
	if (it) {
		chunk_free(st->chunks);
		pthread_mutex_destroy(&st->lock);
		free(st);
		return -EEXIST;
	}

	rc = ulnet_portal_set_lazy(ln, SRPC_FRAMEWORK_REQUEST_PORTAL, true);
	if (!rc)
		rc = ulnet_portal_set_lazy(ln, SRPC_REQUEST_PORTAL, true);
	if (rc) {
		ulnet_selftest_stop(st);
		return rc;
	}
	for (int i = 0; i < N_FW_SERVICES; i++)
		post_service(st, fw_services[i]);
	/* every framework buffer must be posted */
	pthread_mutex_lock(&st->lock);
	for (struct chunk *c = st->chunks; c; c = c->next)
		for (int i = 0; i < c->nslots; i++)
			if (c->slots[i].state == SLOT_IDLE)
				rc = -ENOMEM;
	pthread_mutex_unlock(&st->lock);
	if (rc) {
		ulnet_selftest_stop(st);
		return rc;
	}
	*out = st;
	return 0;
}

void ulnet_selftest_stop(ulnet_selftest_t *st)
{
	struct ulnet_selftest **pp;
	uint64_t deadline;
	int refs;

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->stopping = true;
	for (struct ctest *t = st->ctests; t; t = t->next)
		if (t->nactive > 0)
			t->stopping = t->abort_req = true;
	if (st->timer_armed) {
		st->timer_armed = false;
		st->refs--;
		ul_timer_stop(st->ln->ln_loop, &st->timer);
	}
	/* a timer callback already under way ends before this runs */
	st->refs++;
	ul_loop_post(st->ln->ln_loop, &st->barrier);
	pthread_mutex_unlock(&st->lock);
	client_sweep(st);
	unpost_service(st, -1);
	bulk_kick(st);              /* drops the brw requests waiting for a buffer */
	/* Requests parked on the lazy portals are dropped now, not after the
	 * wait: one may be this agent's own (a client test aimed at its own
	 * node's 0@lo stays inside it), whose request MD stays busy, and so holds a
	 * reference, until the parked PUT is received or dropped. */
	(void)ulnet_portal_set_lazy(st->ln, SRPC_FRAMEWORK_REQUEST_PORTAL, false);
	(void)ulnet_portal_set_lazy(st->ln, SRPC_REQUEST_PORTAL, false);
	deadline = lnet_now(st->ln) + STOP_WAIT_NS;
	for (;;) {
		pthread_mutex_lock(&st->lock);
		refs = st->refs;
		pthread_mutex_unlock(&st->lock);
		/* refs first: a handler counts itself in before its ref goes */
		if (refs == 0 && atomic_load(&st->in_handler) == 0)
			break;
		slots_abort_inflight(st);
		if (lnet_now(st->ln) >= deadline) {
			lnet_log(st->ln, ULNET_LOG_ERROR,
				 "selftest: %d operations still pending at stop; leaking the agent", refs);
			return;
		}
		if (ulnet_progress(st->ln, 10) == -EBUSY) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	while (st->chunks) {
		struct chunk *c = st->chunks;

		st->chunks = c->next;
		chunk_free(c);
	}
	while (st->bulk_free) {
		struct bulkbuf *b = st->bulk_free;

		st->bulk_free = b->next;
		free(b);
	}
	while (st->ctests) {
		struct ctest *t = st->ctests;

		st->ctests = t->next;
		ctest_free(t);
	}
	pthread_mutex_destroy(&st->lock);
	free(st);
}

int ulnet_selftest_stats_get(ulnet_selftest_t *st, struct ulnet_selftest_stats *out)
{
	if (!st || !out)
		return -EINVAL;
	pthread_mutex_lock(&st->lock);
	*out = st->stats;
	out->session_active = st->sn_active;
	pthread_mutex_unlock(&st->lock);
	return 0;
}
