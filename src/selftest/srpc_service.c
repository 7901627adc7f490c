/* SPDX-License-Identifier: MIT */
/*
 * srpc_service.c - the selftest agent's request buffers, replies and drops.
 *
 * Each RPC slot owns one 160-byte request buffer, posted as an ME (match
 * bits = service id) + MD (threshold 1, unlinked on use) on portal 51
 * (framework) or 50 (tests). Slots come in chunks allocated whole: the
 * framework's at start (FW_NBUF per service), a test service's when a
 * server test is added (as many as the kernel's sfw_test_buffers()).
 * A chunk of a session's tests is retired when the session ends: its
 * posted buffers are unlinked, and it is freed once none of its slots is in
 * use (srpc_service_remove_buffers()). Both portals are lazy, as in the
 * kernel: a request that finds no buffer waits until one is posted again.
 *
 * A request is answered from its slot's reply buffer, or dropped (counted,
 * one log line); the slot's bulk transfers (brw data, a client test's
 * destination list) start here too.
 */
#include <errno.h>
#include <stdlib.h>

#include "selftest/agent_int.h"

/* --- request buffers --------------------------------------------------------- */

/* Whether requests of this service are being taken (lock held). */
bool srpc_service_on(const struct ulnet_selftest *st, int service)
{
	if (st->stopping)
		return false;
	return srpc_is_framework(service) || st->test_enabled[srpc_test_index(service)];
}

/* The slot's state (lock held): its chunk counts the slots in use. */
void srpc_slot_set_state_locked(struct slot *s, enum slot_state state)
{
	if (s->state == SLOT_IDLE && state != SLOT_IDLE)
		s->chunk->nlive++;
	else if (s->state != SLOT_IDLE && state == SLOT_IDLE)
		s->chunk->nlive--;
	s->state = state;
}

void srpc_chunk_free(struct chunk *c)
{
	for (int i = 0; i < c->nslots; i++)
		free(c->slots[i].bulk);
	free(c);
}

/* Free the retired chunks none of whose slots is in use (lock held; not
 * while a walk of the chunks is under way: the last one out does it). A
 * caller that idled a slot must not touch it after this. */
void srpc_chunks_reap_locked(struct ulnet_selftest *st)
{
	struct chunk **pp = &st->chunks;

	if (st->slot_iters > 0)
		return;
	while (*pp) {
		struct chunk *c = *pp;

		if (c->retired && c->nlive == 0) {
			*pp = c->next;
			srpc_chunk_free(c);
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
	srpc_chunks_reap_locked(st);
	pthread_mutex_unlock(&st->lock);
}

/* A chunk of `n` slots of `service` (all of them -1: the framework's, one
 * service after the other), linked in (lock held; its slots are posted by
 * srpc_post_service()). NULL: no memory. */
struct chunk *srpc_chunk_add_locked(struct ulnet_selftest *st, int service, int n)
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
void srpc_tests_buffers_retire_locked(struct ulnet_selftest *st)
{
	for (struct chunk *c = st->chunks; c; c = c->next)
		if (c->nslots > 0 && !srpc_is_framework(c->slots[0].service))
			c->retired = true;
	st->test_nbuf[0] = st->test_nbuf[1] = 0;
	st->bulk_concur = 0;
	st->bulk_limit = BULK_MIN;
	while (st->bulk_free) {
		struct bulkbuf *b = st->bulk_free;

		st->bulk_free = b->next;
		st->bulk_count--;
		brw_bulk_free(st, b);
	}
	srpc_chunks_reap_locked(st);
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
		.handler = agent_handler,
	};
	unsigned portal = srpc_is_framework(s->service) ? SRPC_FRAMEWORK_REQUEST_PORTAL
							 : SRPC_REQUEST_PORTAL;
	ulnet_handle_t me, mdh;
	int rc;

	rc = ulnet_me_attach(st->ln, portal, any, (uint64_t)s->service, 0, ULNET_UNLINK,
			     srpc_is_framework(s->service) ? ULNET_INS_AFTER : ULNET_INS_LOCAL, &me);
	if (rc == 0) {
		bool on;

		pthread_mutex_lock(&st->lock);
		s->me = me;
		/* srpc_unpost_service() may have passed this slot before its ME
		 * existed: look again now that it can be unlinked */
		on = srpc_service_on(st, s->service) && !s->chunk->retired;
		pthread_mutex_unlock(&st->lock);
		/* may deliver a queued request (and run agent_handler()) at once */
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
		srpc_slot_set_state_locked(s, SLOT_IDLE);
		srpc_chunks_reap_locked(st);
		pthread_mutex_unlock(&st->lock);
	}
}

/* An RPC of slot `s` is over (or its buffer came back): repost or idle. */
void srpc_slot_done(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	bool post;

	pthread_mutex_lock(&st->lock);
	post = srpc_service_on(st, s->service) && !s->chunk->retired;
	srpc_slot_set_state_locked(s, post ? SLOT_POSTED : SLOT_IDLE);
	if (post)
		st->refs++;
	else
		srpc_chunks_reap_locked(st);
	pthread_mutex_unlock(&st->lock);
	if (post)
		post_slot(s);
}

/* Post every idle slot of `service` (after enabling it). */
void srpc_post_service(struct ulnet_selftest *st, int service)
{
	slots_walk_begin(st);
	pthread_mutex_lock(&st->lock);
	for (struct chunk *c = st->chunks; c; c = c->next) {
		for (int i = 0; i < c->nslots; i++) {
			struct slot *s = &c->slots[i];

			if (s->service != service || c->retired || s->state != SLOT_IDLE ||
			    !srpc_service_on(st, service))
				continue;
			srpc_slot_set_state_locked(s, SLOT_POSTED);
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
void srpc_unpost_service(struct ulnet_selftest *st, int service)
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
void srpc_slots_abort_inflight(struct ulnet_selftest *st)
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

/* --- replies ----------------------------------------------------------------- */

void srpc_finish_dropped(struct slot *s, int why)
{
	struct ulnet_selftest *st = s->st;

	pthread_mutex_lock(&st->lock);
	st->stats.rpcs_dropped++;
	pthread_mutex_unlock(&st->lock);
	(void)why;
	srpc_slot_done(s);
}

void srpc_drop_request(struct slot *s, const char *why)
{
	char pb[ULNET_NIDSTR_SIZE];

	srpc_peer_str(s, pb);
	lnet_log(s->st->ln, ULNET_LOG_WARN, "selftest: dropping RPC (service %d) from %s: %s", s->service,
		 pb, why);
	srpc_finish_dropped(s, -EBADMSG);
}

void srpc_send_reply(struct slot *s)
{
	struct ulnet_selftest *st = s->st;
	struct ulnet_md md = {
		.start = s->rep,
		.length = SRPC_MSG_SIZE,
		.threshold = 1,
		.options = 0,
		.user_ptr = &s->tags[TAG_REPLY],
		.handler = agent_handler,
	};
	ulnet_handle_t mdh;
	int rc;

	s->reply.version = SRPC_MSG_VERSION;
	s->reply.type = (uint32_t)srpc_service2reply(s->service);
	(void)srpc_msg_encode(&s->reply, s->rep, sizeof(s->rep));
	rc = agent_md_bind(st, &md, &mdh, true);
	if (rc) {
		srpc_finish_dropped(s, rc);
		return;
	}
	slot_set_inflight(s, mdh);
	rc = ulnet_put(st->ln, &s->self, mdh, ULNET_NOACK_REQ, s->peer, SRPC_RDMA_PORTAL, s->rpyid, 0, 0);
	if (rc) {
		char pb[ULNET_NIDSTR_SIZE];

		srpc_peer_str(s, pb);
		lnet_log(st->ln, ULNET_LOG_WARN, "selftest: cannot send the reply to %s: %s", pb,
			 ulnet_strerror(rc));
		(void)ulnet_md_unlink(st->ln, mdh);   /* its UNLINK event ends the RPC */
	}
}

/* --- a slot's bulk transfer --------------------------------------------------- */

/* The slot's bulk buffer holds at least `len` bytes (zeroed when it
 * grows: bytes outside a brw pattern start as 0, as the kernel's fresh
 * pages). 0 or -ENOMEM. */
int srpc_slot_bulk_reserve(struct slot *s, size_t len)
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
 * Its events end in agent_handler()'s TAG_BULK. Returns 1 (started: an error
 * after the bind still ends there, through the unlink) or -errno. */
int srpc_slot_bulk_start(struct slot *s, uint8_t *buf, size_t len, bool sink, unsigned options,
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
		.handler = agent_handler,
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
