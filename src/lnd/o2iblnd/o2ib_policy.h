/* SPDX-License-Identifier: MIT */
/*
 * o2ib_policy.h - the o2ib LND's decisions that need no verbs: tunable
 * defaults, the passive side's verdict on a CONNREQ, the active side's on a
 * CONNACK, the connection race, and the credit rules (when a NOOP is due,
 * whether a message may be posted). Built whether or not the LND is, so the
 * unit tests reach it (tests/unit/test_o2ib_policy.c).
 */
#ifndef ULNET_LND_O2IB_POLICY_H
#define ULNET_LND_O2IB_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "lnd/o2iblnd/o2ib_wire.h"
#include "ulnet/ulnet.h"

#define KIB_SERVICE_DEFAULT	987
#define KIB_TIMEOUT_DEFAULT	50	/* s */
#define KIB_KEEPALIVE_DEFAULT	100	/* s */
#define KIB_NTX_DEFAULT		512
#define KIB_PEER_CREDITS_DEFAULT 8
#define KIB_RETRY_COUNT_DEFAULT	5
#define KIB_RNR_RETRY_DEFAULT	6
#define KIB_OOB_MSGS		2	/* V2: one keepalive, one credit return */
#define KIB_MAX_CONN_RACES	20	/* then the lower NID is let win */

/* Receive buffers a connection posts: twice the queue depth, OOB included. */
static inline int kib_rx_msgs(int queue_depth) { return queue_depth * 2 + KIB_OOB_MSGS; }

/* The LND tunables of an NI, resolved as the kernel's kiblnd_tunables_setup()
 * and module parameters (o2iblnd_modparams.c). */
struct kib_tunables {
	int peer_credits;       /* queue depth asked for */
	int peercredits_hiw;    /* credits to return that trigger a NOOP */
	int concurrent_sends;
	int map_on_demand;      /* shown; nothing is mapped on demand here */
	int fmr_pool_size, fmr_flush_trigger, fmr_cache; /* shown only: no FMR pool */
	int ntx;
	int conns_per_peer;         /* connections made to a new peer: 1..ULNET_MAX_CONNS_PER_PEER */
	int timeout;            /* s */
	int keepalive;          /* s, 0 never */
	int service;            /* port */
	int retry_count, rnr_retry_count;
	bool cksum;             /* checksum what we send */
	int tos;                /* -1: leave the CM's */
	bool use_priv_port;     /* connect from a port below 1024 */
	bool require_priv_port; /* refuse requests from ports of 1024 and above */
};

#define KIB_FMR_POOL_SIZE	512	/* the kernel's defaults of what we do not have */
#define KIB_FMR_FLUSH_TRIGGER	384
#define KIB_FMR_CACHE		1
#define KIB_RETRY_MAX		7	/* IB's retry counts are 3 bits */
#define KIB_TIMEOUT_MAX		86400	/* s */

/* Fill `t` from an NI's conf (its peer credits, conns_per_peer and tos,
 * and its o2ib tunables; 0 fields take the kernel's defaults); `lnd_timeout`
 * is the global lnd_timeout, for an o2ib timeout of -1. Returns 0, -EINVAL
 * for a value out of range or -EOPNOTSUPP for one ulnet cannot honour,
 * with `*what` naming the tunable. */
/* Address and route resolution time out after 5 s, and a connect request
 * after the larger of 5 s and a quarter of the LND's timeout (the kernel's
 * RDMA_RESOLVE_TIMEOUT and kiblnd_connreq_timeout_ms()). */
#define KIB_RESOLVE_TIMEOUT_MS 5000
int kib_connreq_timeout_ms(const struct kib_tunables *t);

int kib_tunables_setup(struct kib_tunables *t, const struct ulnet_ni_conf *conf, int lnd_timeout,
		       const char **what);
/* The values of `t` as a ulnet_ni_info shows them. */
void kib_tunables_show(const struct kib_tunables *t, struct ulnet_o2ib_tunables *o);

/* What an o2ib NI shows (ulnet_ni_info: lnd_timeout, conns_per_peer, tos,
 * the lnd tunables): the values resolved from its conf as startup does;
 * nothing is filled when the conf does not resolve. */
void kib_tunables_info(const struct ulnet_ni_conf *conf, int lnd_timeout,
		       struct ulnet_ni_info *info);

/* Set the checksum of an encoded message (nob bytes, payload in place)
 * when the NI sends checksums, as kiblnd_pack_msg(): computed over the
 * whole message with the cksum field zero, in the char form the peer
 * uses; else the field stays 0 (no checksum). */
void kib_msg_finish(const struct kib_tunables *t, uint8_t *buf, uint32_t nob,
		    enum kib_cksum_form form);

/* What the passive side knows when a CONNREQ arrives. */
struct kib_accept_ctx {
	ulnet_nid4_t my_nid;
	uint64_t my_incarnation;
	int queue_depth_max;    /* the NI's peer credits */
	bool ready;             /* the NI is up (else REJECT_EARLY) */
	bool require_priv_port; /* refuse a request from a port >= 1024 (FATAL) */
	int peer_port;          /* the request's source port (the CM's) */
	/* the peer as known, if it is */
	bool peer_known;
	bool peer_connecting;   /* an active connect of ours is in progress */
	int peer_version;       /* 0: none yet */
	uint64_t peer_incarnation;
	int peer_races;
};

enum kib_accept_verdict {
	KIB_ACCEPT = 0,
	KIB_ACCEPT_STALE_PEER,  /* reject STALE; close the peer's connections */
	KIB_REJECT,             /* reject with rej->why */
};

/* Decide on a CONNREQ of `len` bytes (the connect's private data). `req`
 * gets the decoded message when it decodes; `rej` is the rejection to send
 * (why, version, incarnation, parameters) when the verdict is not ACCEPT;
 * `why` a short reason for the log. */
enum kib_accept_verdict kib_connreq_check(const uint8_t *priv, size_t len,
					  const struct kib_accept_ctx *ctx, struct kib_msg *req,
					  struct kib_rej *rej, const char **why);

/* The active side's check of the CONNACK (private data of the ESTABLISHED
 * event). Returns 0, -EPROTO or -ESTALE; `why` for the log. */
int kib_connack_check(const uint8_t *priv, size_t len, int version, int queue_depth,
		      int max_frags, ulnet_nid4_t my_nid, uint64_t my_incarnation,
		      struct kib_msg *ack, const char **why);

/* The IB CM's reasons of a REJECTED event (its status) that the kernel's
 * kiblnd_rejected() tells apart. */
#define KIB_CM_REJ_INVALID_SERVICE_ID 8   /* nobody listens at the service */
#define KIB_CM_REJ_STALE_CONN 10          /* the CM's own: a stale QP/connection */
#define KIB_CM_REJ_CONSUMER_DEFINED 28    /* the peer's LND: a kib_rej follows */

/* How a REJECTED event with CM reason `status` and `len` bytes of private
 * data is taken (kiblnd_rejected): the CM's stale-connection rejection is a
 * CONN_STALE without parameters (`rej` filled in: reconnect, incarnation
 * unknown); no listener is -EHOSTUNREACH; otherwise the private data is
 * decoded as the peer LND's kib_rej. Returns 1 when `rej` holds a
 * rejection to act on, 0 when there is none (the caller fails the
 * connection with *err), never both. */
int kib_cm_rejection(int status, const uint8_t *priv, size_t len, struct kib_rej *rej,
		     int *err, const char **why);

/* The kernel's nidhash() of a nid4: who wins a connection race (the higher). */
uint32_t kib_nid4_hash(ulnet_nid4_t nid);

/* What an active connect does after a rejection (kiblnd_check_reconnect):
 * returns true to reconnect, updating *queue_depth / *max_frags when the
 * peer asked for less; `why` for the log. */
bool kib_reconnect_check(const struct kib_rej *rej, bool has_rej, bool txs_waiting,
			 bool version_changed, bool accepting, int *queue_depth, int *max_frags,
			 const char **why);

/* Credit state of a connection, for the two rules below. */
struct kib_credit_state {
	int queue_depth;
	int credits;            /* messages we may still send */
	int outstanding;        /* credits to return to the peer */
	int nsends_posted;
	int noops_posted;
	bool nocred_queued;     /* a message that needs no credit is queued */
	bool queued;            /* a message needing a credit is queued */
	bool keepalive_due;
};

/* A NOOP is wanted (kiblnd_need_noop, V2). */
bool kib_need_noop(const struct kib_credit_state *s, const struct kib_tunables *t);
/* A message may be posted now: -EAGAIN when concurrent sends or credits
 * forbid it. `credit`: it consumes one. */
int kib_may_post(const struct kib_credit_state *s, const struct kib_tunables *t, bool credit);

#endif
