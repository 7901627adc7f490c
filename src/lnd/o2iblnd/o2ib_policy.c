/* SPDX-License-Identifier: MIT */
/*
 * o2ib_policy.c - the o2ib LND's pure decisions (o2ib_policy.h): tunables,
 * CONNREQ/CONNACK verdicts, the connection race, credits and NOOPs, with
 * the kernel ko2iblnd's rules (o2iblnd_modparams.c, o2iblnd_cb.c).
 */
#include <errno.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_policy.h"

/* 0: `def`; -1: none (0); 1..KIB_RETRY_MAX */
static int retry_value(int v, int def, int *out)
{
	if (v == 0)
		*out = def;
	else if (v == -1)
		*out = 0;
	else if (v >= 1 && v <= KIB_RETRY_MAX)
		*out = v;
	else
		return -EINVAL;
	return 0;
}

#define BAD(name, rc) do { *what = (name); return (rc); } while (0)

int kib_tunables_setup(struct kib_tunables *t, const struct ulnet_ni_conf *conf, int lnd_timeout,
		       const char **what)
{
	const struct ulnet_o2ib_tunables *o = &conf->o2ib;
	int pc = conf->tun.peer_credits;

	memset(t, 0, sizeof(*t));
	*what = NULL;
	if (pc == 0)
		pc = KIB_PEER_CREDITS_DEFAULT;
	/* a message returns at most 255 credits (ibm_credits is a byte) */
	if (pc < 1 || pc > KIB_CREDITS_MAX)
		BAD("peer_credits", -EINVAL);
	t->peer_credits = pc;
	/* the kernel's rules: at least half the credits, never all of them */
	if (o->peercredits_hiw < 0)
		BAD("peercredits_hiw", -EINVAL);
	t->peercredits_hiw = o->peercredits_hiw;
	if (t->peercredits_hiw < pc / 2)
		t->peercredits_hiw = pc / 2;
	if (t->peercredits_hiw >= pc)
		t->peercredits_hiw = pc - 1;
	/* peer_credits unless set; between half and twice them */
	if (o->concurrent_sends < 0)
		BAD("concurrent_sends", -EINVAL);
	t->concurrent_sends = o->concurrent_sends ? o->concurrent_sends : pc;
	if (t->concurrent_sends > pc * 2)
		t->concurrent_sends = pc * 2;
	if (t->concurrent_sends < pc / 2)
		t->concurrent_sends = pc / 2;
	if (t->concurrent_sends < 1)
		t->concurrent_sends = 1;
	/* obsolete: the kernel turns 0 into 1 and reads it no further */
	if (o->map_on_demand < 0)
		BAD("map_on_demand", -EINVAL);
	t->map_on_demand = o->map_on_demand ? o->map_on_demand : 1;
	t->fmr_pool_size = KIB_FMR_POOL_SIZE;
	t->fmr_flush_trigger = KIB_FMR_FLUSH_TRIGGER;
	t->fmr_cache = KIB_FMR_CACHE;
	if (o->ntx < 0)
		BAD("ntx", -EINVAL);
	t->ntx = o->ntx ? o->ntx : KIB_NTX_DEFAULT;
	/* the kernel refuses an NI whose fmr_pool_size is below ntx / 4:
	 * ours is its default (this bounds the tx pool's memory too) */
	if (t->ntx / 4 > t->fmr_pool_size)
		BAD("ntx", -EINVAL);
	/* the kernel's 0 is 1 */
	if (conf->tun.conns_per_peer < 0 || conf->tun.conns_per_peer > ULNET_MAX_CONNS_PER_PEER)
		BAD("conns_per_peer", -EINVAL);
	t->conns_per_peer = conf->tun.conns_per_peer ? conf->tun.conns_per_peer : 1;
	/* a day at most: it is also rdma_cm's resolution timeout, in ms */
	if (o->timeout == -1)
		t->timeout = lnd_timeout > 0 && lnd_timeout <= KIB_TIMEOUT_MAX ? lnd_timeout
									   : KIB_TIMEOUT_DEFAULT;
	else if (o->timeout < 0 || o->timeout > KIB_TIMEOUT_MAX)
		BAD("timeout", -EINVAL);
	else
		t->timeout = o->timeout ? o->timeout : KIB_TIMEOUT_DEFAULT;
	t->keepalive = o->keepalive == 0 ? KIB_KEEPALIVE_DEFAULT : o->keepalive < 0 ? 0 : o->keepalive;
	if (o->service < 0 || o->service > 65535)
		BAD("service", -EINVAL);
	t->service = o->service ? o->service : KIB_SERVICE_DEFAULT;
	if (retry_value(o->retry_count, KIB_RETRY_COUNT_DEFAULT, &t->retry_count) < 0)
		BAD("retry_count", -EINVAL);
	if (retry_value(o->rnr_retry_count, KIB_RNR_RETRY_DEFAULT, &t->rnr_retry_count) < 0)
		BAD("rnr_retry_count", -EINVAL);
	t->cksum = o->cksum > 0;
	t->use_priv_port = o->use_privileged_port >= 0;
	t->require_priv_port = o->require_privileged_port > 0;
	if (conf->tun.tos < -1 || conf->tun.tos > 255)
		BAD("tos", -EINVAL);
	t->tos = conf->tun.tos;
	return 0;
}

#undef BAD

void kib_tunables_show(const struct kib_tunables *t, struct ulnet_o2ib_tunables *o)
{
	memset(o, 0, sizeof(*o));
	o->service = t->service;
	o->cksum = t->cksum;
	o->timeout = t->timeout;
	o->keepalive = t->keepalive;
	o->ntx = t->ntx;
	o->peercredits_hiw = t->peercredits_hiw;
	o->concurrent_sends = t->concurrent_sends;
	o->retry_count = t->retry_count;
	o->rnr_retry_count = t->rnr_retry_count;
	o->map_on_demand = t->map_on_demand;
	o->use_privileged_port = t->use_priv_port;
	o->require_privileged_port = t->require_priv_port;
}

void kib_msg_finish(const struct kib_tunables *t, uint8_t *buf, uint32_t nob,
		    enum kib_cksum_form form)
{
	/* the field is 0 from kib_msg_encode(): 0 says "no checksum" */
	if (t->cksum)
		kib_msg_seal(buf, nob, false, form);
}

uint32_t kib_nid4_hash(ulnet_nid4_t nid)
{
	uint32_t net = (uint32_t)(nid >> 32), a = (uint32_t)nid;
	/* the kernel XORs the net with the address word as it lies in memory:
	 * big-endian bytes read by a little-endian CPU */
	uint32_t mem = ((a & 0xffU) << 24) | ((a & 0xff00U) << 8) | ((a >> 8) & 0xff00U) | (a >> 24);

	return net ^ mem;
}

static void rej_init(struct kib_rej *rej, const struct kib_accept_ctx *ctx, int version)
{
	memset(rej, 0, sizeof(*rej));
	rej->magic = KIB_MSG_MAGIC;
	rej->version = (uint16_t)version;
	rej->why = KIB_REJECT_FATAL;
	rej->cp.max_msg_size = KIB_MSG_SIZE;
	rej->incarnation = ctx->my_incarnation;
	rej->cp.queue_depth = (uint16_t)ctx->queue_depth_max;
	rej->cp.max_frags = KIB_MAX_RDMA_FRAGS;
}

enum kib_accept_verdict kib_connreq_check(const uint8_t *priv, size_t len,
					  const struct kib_accept_ctx *ctx, struct kib_msg *req,
					  struct kib_rej *rej, const char **why)
{
	int version = KIB_MSG_VERSION;

	rej_init(rej, ctx, version);
	memset(req, 0, sizeof(*req));
	if (len < KIB_OFF_TYPE) {
		*why = "short connection request";
		return KIB_REJECT;
	}
	if (kib_msg_decode(priv, len, req) < 0) {
		*why = "cannot parse connection request";
		return KIB_REJECT;
	}
	/* the kernel checks the port before anything else: the rejection is
	 * FATAL at its own version whatever the request holds (decoded first
	 * only so that the log can name who asked) */
	if (ctx->require_priv_port && ctx->peer_port >= 1024) {
		*why = "the peer's source port is not privileged (require_privileged_port)";
		return KIB_REJECT;
	}
	if (!ctx->ready) {
		rej->why = KIB_REJECT_EARLY;
		*why = "NI not ready";
		return KIB_REJECT;
	}
	if (req->dstnid != ctx->my_nid) {
		*why = "bad destination NID";
		return KIB_REJECT;
	}
	if (req->dststamp != 0 && req->dststamp != ctx->my_incarnation) {
		rej->why = KIB_REJECT_CONN_STALE;
		*why = "stale connection request";
		return KIB_REJECT;
	}
	version = req->version;
	rej->version = (uint16_t)version;
	if (req->type != KIB_MSG_CONNREQ) {
		*why = "not a CONNREQ";
		return KIB_REJECT;
	}
	if (version != KIB_MSG_VERSION) {
		/* a V1 peer: this LND speaks V2 only */
		rej->why = KIB_REJECT_CONN_UNCOMPAT;
		rej->version = KIB_MSG_VERSION;
		*why = "version 1 not supported";
		return KIB_REJECT;
	}
	if (req->cp.queue_depth > ctx->queue_depth_max) {
		rej->why = KIB_REJECT_MSG_QUEUE_SIZE;
		*why = "queue depth too large";
		return KIB_REJECT;
	}
	if (req->cp.queue_depth == 0) {
		*why = "queue depth 0";
		return KIB_REJECT;
	}
	/* no FMR pool: the peer must take the whole fragment count */
	if (req->cp.max_frags != KIB_MAX_RDMA_FRAGS) {
		rej->why = KIB_REJECT_RDMA_FRAGS;
		*why = req->cp.max_frags > KIB_MAX_RDMA_FRAGS ? "max_frags too large"
							      : "max_frags needs an FMR pool";
		return KIB_REJECT;
	}
	if (req->cp.max_msg_size > KIB_MSG_SIZE) {
		*why = "message size too big";
		return KIB_REJECT;
	}
	if (ctx->peer_known && ctx->peer_version != 0 &&
	    (ctx->peer_incarnation != req->srcstamp || ctx->peer_version != version)) {
		rej->why = KIB_REJECT_CONN_STALE;
		*why = "peer restarted (stale connection)";
		return KIB_ACCEPT_STALE_PEER;
	}
	if (ctx->peer_known && ctx->peer_connecting &&
	    kib_nid4_hash(req->srcnid) < kib_nid4_hash(ctx->my_nid) &&
	    ctx->peer_races < KIB_MAX_CONN_RACES) {
		rej->why = KIB_REJECT_CONN_RACE;
		*why = "connection race (we win)";
		return KIB_REJECT;
	}
	*why = "ok";
	return KIB_ACCEPT;
}

int kib_connack_check(const uint8_t *priv, size_t len, int version, int queue_depth,
		      int max_frags, ulnet_nid4_t my_nid, uint64_t my_incarnation,
		      struct kib_msg *ack, const char **why)
{
	if (kib_msg_decode(priv, len, ack) < 0) {
		*why = "cannot unpack CONNACK";
		return -EPROTO;
	}
	if (ack->type != KIB_MSG_CONNACK) {
		*why = "not a CONNACK";
		return -EPROTO;
	}
	if (ack->version != version) {
		*why = "version differs from the request's";
		return -EPROTO;
	}
	if (ack->cp.queue_depth > queue_depth || ack->cp.queue_depth == 0) {
		*why = "incompatible queue depth";
		return -EPROTO;
	}
	if (ack->cp.max_frags > max_frags) {
		*why = "incompatible max_frags";
		return -EPROTO;
	}
	if (ack->cp.max_msg_size > KIB_MSG_SIZE) {
		*why = "max message size too big";
		return -EPROTO;
	}
	if (ack->dstnid != my_nid || ack->dststamp != my_incarnation) {
		*why = "stale connection reply";
		return -ESTALE;
	}
	*why = "ok";
	return 0;
}

void kib_tunables_info(const struct ulnet_ni_conf *conf, int lnd_timeout,
		       struct ulnet_ni_info *info)
{
	struct kib_tunables t;
	const char *what;

	if (kib_tunables_setup(&t, conf, lnd_timeout, &what) < 0)
		return;
	info->lnd_timeout = t.timeout;
	info->tun.conns_per_peer = t.conns_per_peer;
	info->tun.tos = t.tos;
	kib_tunables_show(&t, &info->o2ib);
}

int kib_connreq_timeout_ms(const struct kib_tunables *t)
{
	long long ms = (long long)t->timeout * 1000 / 4;

	return ms > KIB_RESOLVE_TIMEOUT_MS ? (int)ms : KIB_RESOLVE_TIMEOUT_MS;
}

int kib_cm_rejection(int status, const uint8_t *priv, size_t len, struct kib_rej *rej,
		     int *err, const char **why)
{
	*err = -ECONNREFUSED;
	switch (status) {
	case KIB_CM_REJ_STALE_CONN:
		/* no private data of the peer's: a stale rejection of
		 * unknown incarnation, so the next CONNREQ carries 0 */
		memset(rej, 0, sizeof(*rej));
		rej->magic = KIB_MSG_MAGIC;
		rej->version = KIB_MSG_VERSION;
		rej->why = KIB_REJECT_CONN_STALE;
		*why = "stale connection (the CM's)";
		return 1;
	case KIB_CM_REJ_INVALID_SERVICE_ID:
		*err = -EHOSTUNREACH;
		*why = "no listener at the service port";
		return 0;
	default:
		break;
	}
	if (len >= KIB_REJ_MIN_SIZE && kib_rej_decode(priv, len, rej) >= 0 &&
	    rej->magic == KIB_MSG_MAGIC)
		return 1;
	*why = "no o2ib listener (or not a kib rejection)";
	return 0;
}

bool kib_reconnect_check(const struct kib_rej *rej, bool has_rej, bool txs_waiting,
			 bool version_changed, bool accepting, int *queue_depth, int *max_frags,
			 const char **why)
{
	if (!(txs_waiting || version_changed) || accepting) {
		*why = "no need";
		return false;
	}
	if (!has_rej) {
		*why = "no rejection";
		return false;
	}
	switch (rej->why) {
	case KIB_REJECT_RDMA_FRAGS:
		if (!rej->has_cp) {
			*why = "can't negotiate max frags";
			return false;
		}
		if (*max_frags <= rej->cp.max_frags) {
			*why = "unsupported max frags";
			return false;
		}
		*max_frags = rej->cp.max_frags;
		*why = "rdma fragments";
		return true;
	case KIB_REJECT_MSG_QUEUE_SIZE:
		if (!rej->has_cp) {
			*why = "can't negotiate queue depth";
			return false;
		}
		if (*queue_depth <= rej->cp.queue_depth || rej->cp.queue_depth == 0) {
			*why = "unsupported queue depth";
			return false;
		}
		*queue_depth = rej->cp.queue_depth;
		*why = "queue depth";
		return true;
	case KIB_REJECT_CONN_STALE:
		*why = "stale";
		return true;
	case KIB_REJECT_CONN_RACE:
		*why = "conn race";
		return true;
	case KIB_REJECT_CONN_UNCOMPAT:
		*why = "version negotiation";
		return true;
	default:
		*why = "unknown";
		return true;
	}
}

bool kib_need_noop(const struct kib_credit_state *s, const struct kib_tunables *t)
{
	int hiw = t->peer_credits ? s->queue_depth * t->peercredits_hiw / t->peer_credits : 0;

	if (s->outstanding < hiw && !s->keepalive_due)
		return false;
	if (s->nocred_queued)
		return false;   /* it will carry the credits */
	return !s->queued || s->credits == 0;
}

int kib_may_post(const struct kib_credit_state *s, const struct kib_tunables *t, bool credit)
{
	if (s->nsends_posted >= t->concurrent_sends)
		return -EAGAIN;
	if (credit && s->credits == 0)
		return -EAGAIN;
	return 0;
}
