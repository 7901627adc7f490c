/* SPDX-License-Identifier: MIT */
/*
 * o2ib_int.h - the o2ib LND's internals shared by its files:
 *   o2iblnd.c   ops table, NI startup/shutdown, listener, the 1 s tick
 *   o2ib_conn.c RDMA CM: connect, accept, CONNREQ/CONNACK, reject, close
 *   o2ib_tx.c   tx pool, send(), credits and NOOPs, posting, tx completion
 *   o2ib_rx.c   rx buffers, receive completions, recv()
 *   o2ib_rdma.c memory registration cache, RDMA descriptors, RDMA writes,
 *               the PUT/GET handshakes (PUT_REQ/ACK/NAK/DONE, GET_REQ/DONE)
 *   o2ib_link.c the device port's state followed; a dead link while down
 *
 * Locking: one mutex per NI (kib_net.lock) guards peers, connections and
 * txs. The core is never called with it held: finalizations are queued on
 * net->fin and run by kib_unlock(). Verbs and CM objects are created and
 * destroyed on the instance's loop thread; posting happens under the lock
 * from any thread (send(), a delayed recv()).
 */
#ifndef ULNET_LND_O2IB_INT_H
#define ULNET_LND_O2IB_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/lnd.h"
#include "core/memreg.h"
#include "lnd/o2iblnd/o2ib_policy.h"
#include "lnd/o2iblnd/o2ib_wire.h"
#include "util/evloop.h"

struct kib_list {
	struct kib_list *next, *prev;
};

static inline void kib_list_init(struct kib_list *l) { l->next = l->prev = l; }
static inline bool kib_list_empty(const struct kib_list *l) { return l->next == l; }
static inline void kib_list_del(struct kib_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	kib_list_init(e);
}
static inline void kib_list_add_tail(struct kib_list *e, struct kib_list *head)
{
	e->prev = head->prev;
	e->next = head;
	head->prev->next = e;
	head->prev = e;
}
#define kib_container(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

enum kib_conn_state {
	KIB_CONN_INIT = 0,
	KIB_CONN_ACTIVE_CONNECT,    /* resolving, connecting */
	KIB_CONN_PASSIVE_WAIT,      /* accepted, waiting for ESTABLISHED */
	KIB_CONN_ESTABLISHED,
	KIB_CONN_CLOSING,           /* disconnecting; txs fail */
	KIB_CONN_DEAD,              /* QP gone; freed on the last reference */
};

struct kib_net;
struct kib_peer;
struct kib_conn;

#define KIB_TX_MAX_MRS	16	/* registrations one tx may use */

/* A cached memory registration (o2ib_rdma.c). */
struct kib_mr {
	struct kib_list link;       /* net->mrs, most recently used first */
	uintptr_t lo, hi;           /* page-aligned range */
	int access;                 /* ibv_access_flags it was registered with */
	struct ibv_mr *mr;
	int inuse;                  /* txs holding it */
	bool region;                /* inside a ulnet_mem_register() region */
	bool stale;                 /* its memory was released while in use:
				     * matched no more, dropped when idle */
};

struct kib_tx {
	struct kib_list link;       /* idle pool, a queue, or conn->active */
	struct kib_conn *conn;
	uint8_t *buf;               /* KIB_MSG_SIZE, in the pool's MR */
	uint32_t nob;               /* encoded bytes */
	uint8_t type;
	int sending;                /* work requests posted, not completed */
	bool queued;
	int status;
	uint64_t deadline;          /* ns */
	struct lnet_msg *lntmsg[2];
	struct kib_tx *fin_next;    /* net->fin */
	struct kib_msg m;           /* encoded when posted (credits, stamps) */
	uint64_t cookie;            /* matches the peer's answer */
	bool waiting;               /* for the peer's PUT_ACK/NAK/DONE, GET_DONE */
	int64_t done_len;           /* GET_DONE's length for the REPLY; -1 none */
	/* RDMA: the local payload (source of the writes) */
	const struct iovec *src_iov;
	unsigned src_niov;
	size_t src_off;
	uint32_t rdma_nob;          /* bytes to write before the completion */
	/* a descriptor: ours (PUT_ACK, GET_REQ) or the peer's (writes) */
	uint32_t rd_key, rd_nfrags;
	struct kib_rdma_frag *rd_frags; /* KIB_MAX_RDMA_FRAGS, from the pool */
	struct kib_mr *mrs[KIB_TX_MAX_MRS];
	int nmrs;
};

struct kib_rx {
	struct kib_conn *conn;
	uint8_t *buf;
	bool posted;
	struct kib_msg msg;         /* the decoded message */
	struct kib_list early;      /* arrived before ESTABLISHED */
	uint32_t nob;               /* bytes received */
	struct kib_rx *parse_next;  /* net->parse */
};

struct kib_conn {
	struct kib_list link;       /* net->conns */
	struct kib_list plink;      /* peer->estab while established */
	struct kib_net *net;
	struct kib_peer *peer;
	ulnet_nid_t peer_nid;       /* a copy: the peer may go before the conn */
	struct rdma_cm_id *cmid;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *rx_mr;
	uint8_t *rx_bufs;
	struct kib_rx *rxs;
	int nrx;
	struct ul_io cq_io;
	int refs;
	enum kib_conn_state state;
	bool active;                /* we connected */
	bool reconnect;             /* connect again when this one is gone */
	int version;
	int queue_depth, max_frags;
	uint64_t incarnation;       /* the peer's */
	int credits, outstanding, reserved, nsends_posted, noops_posted;
	int credit_stalls;          /* times a message waited for a credit */
	bool credit_stalled;        /* one waits now (logged once) */
	int comms_error;
	uint64_t last_send, closing_since;
	struct kib_list tx_queue;   /* needs a credit */
	struct kib_list tx_nocred;  /* NOOPs, completions */
	struct kib_list tx_rsrvd;   /* PUT_REQ, GET_REQ: need a reserved credit too */
	struct kib_list active_txs; /* posted */
	struct kib_list early_rxs;
	enum kib_cksum_form cksum_form;
	bool peer_cksum;            /* its CONNREQ/CONNACK had a checksum */
	char name[ULNET_NIDSTR_SIZE + 24]; /* "NID conn#N" */
	unsigned id;
};

struct kib_peer {
	struct kib_list link;       /* net->peers */
	struct kib_net *net;
	ulnet_nid4_t nid4;
	ulnet_nid_t nid;
	/* the established connection sends go on next (NULL: none); with
	 * several (a connection race, both sides' attempts accepted: the
	 * kernel keeps both too) they take turns */
	struct kib_conn *conn;
	struct kib_list estab;      /* every established connection (c->plink) */
	struct kib_list tx_queue;   /* waiting for a connection */
	int connecting, accepting, reconnecting, races;
	int nconns;                 /* connections not destroyed yet (c->peer) */
	int version;                /* 0 unknown */
	uint64_t incarnation;
	int queue_depth, max_frags;
	uint64_t retry_at;          /* ns: no new connect before */
	char nidstr[ULNET_NIDSTR_SIZE];
};

/* The thread that destroys dead connections' verbs objects (o2ib_reap.c) */
struct kib_reap_item;
struct kib_reaper {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	pthread_t thread;
	bool started;
	bool stop;
	struct kib_reap_item *head, **tail;
};

struct kib_net {
	struct lnet_ni *ni;
	struct ul_loop *loop;
	pthread_mutex_t lock;
	ulnet_nid4_t nid4;
	uint64_t incarnation;
	struct kib_tunables tun;
	bool no_priv_port;          /* binding one failed for lack of privilege */
	uint32_t ip;                /* host order */
	struct rdma_event_channel *cmch;
	struct ul_io cm_io;
	struct rdma_cm_id *listener;
	struct ibv_context *ctx;
	uint8_t port;               /* the listener's port of ctx's device */
	bool async_watch;           /* async_io reads ctx's events */
	struct ul_io async_io;      /* the device's port state (PORT_ERR/ACTIVE) */
	bool device_fatal;          /* DEVICE_FATAL came: down for good */
	bool link_down;             /* the core says so (kib_link_state()) */
	bool link_close;            /* the kick closes the connections */
	struct ibv_pd *pd;
	/* tx pool */
	struct kib_tx *txs;
	uint8_t *tx_bufs;
	struct ibv_mr *tx_mr;
	struct kib_list idle_txs;
	int nidle;
	struct kib_tx *fin;         /* txs to finalize once unlocked */
	struct kib_tx **fin_tail;
	struct kib_rx *parse;       /* rxs for lnet_parse() once unlocked */
	struct kib_rx **parse_tail;
	struct kib_rdma_frag *rd_pool;  /* ntx descriptors' fragments */
	uint64_t next_cookie;
	struct kib_list mrs;        /* registration cache */
	struct lnet_memreg_cursor memreg; /* releases read so far */
	int nmrs;
	struct kib_list peers;
	struct kib_list conns;
	struct ul_timer tick;
	struct ul_work kick;        /* connect what waits (from other threads) */
	bool kick_pending;
	bool shutdown;
	bool in_unlock;
	unsigned next_conn_id;
	struct kib_reaper reaper;
};

/* o2iblnd.c */
void kib_lock(struct kib_net *net);
void kib_unlock(struct kib_net *net);   /* runs the queued finalizations */
uint64_t kib_now(const struct kib_net *net);
struct kib_peer *kib_peer_find(struct kib_net *net, ulnet_nid4_t nid4);
struct kib_peer *kib_peer_create(struct kib_net *net, ulnet_nid4_t nid4);
void kib_peer_maybe_free(struct kib_peer *peer);
void kib_kick(struct kib_net *net);

/* o2ib_conn.c */
int kib_cm_handle_events(struct kib_net *net);
void kib_cm_io_cb(struct ul_io *io, uint32_t revents);
int kib_connect_peer(struct kib_peer *peer);    /* locked, loop thread */
void kib_close_conn(struct kib_conn *conn, int error, const char *why);  /* locked */
void kib_destroy_conn(struct kib_conn *conn);   /* locked, loop thread */
void kib_conn_decref(struct kib_conn *conn);    /* locked */
void kib_peer_connect_failed(struct kib_peer *peer, int error, const char *why);
void kib_peer_unlink_conn(struct kib_peer *peer, struct kib_conn *c);
void kib_connect_peer_all(struct kib_peer *peer);
struct kib_conn *kib_peer_send_conn(struct kib_peer *peer);
void kib_conn_established(struct kib_conn *conn); /* locked */

/* o2ib_link.c */
void kib_link_watch(struct kib_net *net);       /* startup */
void kib_link_unwatch(struct kib_net *net);     /* shutdown, loop thread */
void kib_link_poll(struct kib_net *net);        /* tick, loop thread, unlocked */
void kib_link_state(struct lnet_ni *ni, bool down);  /* the LND op */
void kib_link_close_conns(struct kib_net *net); /* kick, locked */

/* o2ib_reap.c */
void kib_reaper_init(struct kib_reaper *r);
void kib_reaper_fini(struct kib_reaper *r);     /* joins: all handed over is destroyed */
void kib_reap(struct kib_net *net, struct ibv_qp *qp, struct ibv_cq *cq,
	      struct ibv_comp_channel *cch);         /* hands over; never blocks */

/* o2ib_tx.c */
int kib_txpool_init(struct kib_net *net);
void kib_txpool_fini(struct kib_net *net);
struct kib_tx *kib_tx_get(struct kib_net *net);
void kib_tx_done(struct kib_net *net, struct kib_tx *tx);   /* locked */
void kib_tx_fail_list(struct kib_net *net, struct kib_list *q, int status);
void kib_queue_tx(struct kib_conn *conn, struct kib_tx *tx);
void kib_check_sends(struct kib_conn *conn);
void kib_tx_complete(struct kib_conn *conn, struct kib_tx *tx, int status);
void kib_send(struct lnet_ni *ni, struct lnet_msg *msg);
void kib_check_txs(struct kib_conn *conn, uint64_t now);

/* o2ib_rx.c */
int kib_rx_setup(struct kib_conn *conn);
void kib_rx_free(struct kib_conn *conn);
int kib_post_rx(struct kib_rx *rx);
enum kib_post_credit { KIB_POSTRX_NO_CREDIT, KIB_POSTRX_PEER_CREDIT, KIB_POSTRX_RSRVD_CREDIT };
void kib_repost_rx(struct kib_rx *rx, enum kib_post_credit credit);
void kib_cq_io_cb(struct ul_io *io, uint32_t revents);
int kib_poll_cq(struct kib_conn *conn);   /* completions taken */
void kib_handle_rx(struct kib_rx *rx);
void kib_parse_rx(struct kib_net *net, struct kib_rx *rx);  /* unlocked */
void kib_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
	      const struct iovec *iov, unsigned niov, size_t offset, size_t mlen, size_t rlen);

/* o2ib_rdma.c */
void kib_mr_release(struct kib_net *net, struct kib_tx *tx);
void kib_mr_cache_fini(struct kib_net *net);
int kib_setup_rd(struct kib_net *net, struct kib_tx *tx, const struct iovec *iov, unsigned niov,
		 size_t off, size_t len);
int kib_post_rdma(struct kib_conn *c, struct kib_tx *tx);
int kib_send_rdma_req(struct kib_net *net, struct lnet_msg *msg, struct kib_tx *tx,
		      const struct iovec *iov, unsigned niov, size_t off, size_t len);
void kib_handle_rdma_rx(struct kib_rx *rx);        /* PUT_ACK, PUT_NAK, PUT_DONE, GET_DONE */
void kib_send_completion(struct kib_conn *c, uint8_t type, int status, uint64_t cookie);
void kib_recv_rdma(struct kib_net *net, struct kib_rx *rx, struct lnet_msg *msg,
		   const struct iovec *iov, unsigned niov, size_t offset, size_t mlen);

#define KIB_WR_RX 1ULL    /* wr_id low bits: a receive */
#define KIB_WR_RDMA 2ULL  /* an (unsignalled) RDMA write of a tx */
#define KIB_WR_TAGS 3ULL

#endif
