/* SPDX-License-Identifier: MIT */
/*
 * sock_int.h - internals of the TCP LND (ksocklnd-compatible).
 *
 * Threads: every socket is driven by the instance's event loop
 * (lnet_ni_loop()). send() may run on any thread: it picks a connection
 * and, if that connection has nothing queued, writes straight from the
 * caller's thread; otherwise the tx waits on the connection and EPOLLOUT
 * (edge-triggered) drains it on the loop. All shared state (peers, conn
 * lists, tx queues, ZC lists) is under one per-NI mutex; lnet_parse() and
 * lnet_finalize() are always called without it.
 *
 * Sans-I/O pieces (protocol tables, matching, ZC-ACK forms, admission
 * decisions) are in sock_proto.c and have no dependency on sockets or on
 * the core, so unit tests can drive them directly.
 */
#ifndef ULNET_SOCKLND_SOCK_INT_H
#define ULNET_SOCKLND_SOCK_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/lnd.h"
#include "core/lnet_hdr.h"
#include "lnd/socklnd/sock_wire.h"
#include "ulnet/nid.h"
#include "util/evloop.h"
#include "util/ratelimit.h"
#include "util/ul_lock.h"

struct lnet_ni;
struct lnet_msg;

/* Defaults of the kernel's ksocklnd module parameters (reference §3.2). */
#define KSOCK_SOCK_TIMEOUT_S 50
#define KSOCK_ACCEPT_TIMEOUT_S 5
#define KSOCK_MIN_BULK 1024
#define KSOCK_ZC_MIN_PAYLOAD 16384
#define KSOCK_KEEPALIVE_S 30
#define KSOCK_KEEPALIVE_MIN_INTERVAL_S 10
#define KSOCK_KEEPALIVE_IDLE 30
#define KSOCK_KEEPALIVE_INTVL 5
#define KSOCK_KEEPALIVE_COUNT 5
#define KSOCK_MIN_RECONNECT_MS 1000
#define KSOCK_MAX_RECONNECT_MS 60000
#define KSOCK_ZC_MIN_PAYLOAD_FLOOR 2048
#define KSOCK_DEFAULT_PORT 988
#define KSOCK_ACCEPT_BACKLOG 127       /* the lnet module parameter accept_backlog */
#define KSOCK_ACCEPT_BACKLOG_MAX 65535
/* accept() out of fds or memory: the listener is parked and retried after
 * 100 ms, doubling to 1 s, until it accepts again */
#define KSOCK_ACCEPT_RETRY_MIN_MS 100
#define KSOCK_ACCEPT_RETRY_MAX_MS 1000
#define KSOCK_PRIV_PORT_HI 1023
#define KSOCK_PRIV_PORT_LO 512
#define KSOCK_MAX_PAYLOAD (1u << 20)
#define KSOCK_EALREADY_RETRIES 3
#define KSOCK_NS_PER_S 1000000000ULL
#define KSOCK_NS_PER_MS 1000000ULL

/* --- protocol tables (sock_proto.c) -------------------------------------- */

enum ksock_match { KSOCK_MATCH_NO = 0, KSOCK_MATCH_MAY = 1, KSOCK_MATCH_YES = 2 };

/*
 * One const table per (HELLO version, peer byte order), chosen once when the
 * HELLO is read. We always send little-endian; `peer_be` only drives the
 * decoding of what the peer writes.
 */
struct ksock_proto {
	const char *name;             /* "V3/le" */
	unsigned version;             /* KSOCK_PROTO_V1..V4 */
	bool peer_be;
	const struct lnet_hdr_codec *codec;
	size_t khdr_size;             /* 24, or 0 for V1 (bare LNet header) */
	/* The headers the kernel counts with the payload when matching a
	 * message to a connection: ksock header (not V1) + the LNet header of
	 * this version (nid4; nid16 on V4: ksocknal_match_tx_v4). */
	size_t match_hdr;
	bool zc;                      /* ZC cookies and NOOPs exist */
	bool keepalive;               /* keepalive NOOP [0,1] (V3/V4) */
	bool csum_hdr;                /* V2: checksum covers the headers too */
	/* Decode the ksock header of a message (V1: synthesises an LNET one
	 * from zero bytes). Returns bytes consumed or -errno. */
	ssize_t (*khdr_decode)(const uint8_t *buf, size_t len, struct ksock_msg_hdr *m);
	/* Encode ours (little-endian); V1 writes nothing. */
	ssize_t (*khdr_encode)(const struct ksock_msg_hdr *m, uint8_t *buf, size_t len);
	/* Which connection may carry `nob` bytes (ksock hdr + LNet hdr +
	 * payload); `nonblk` marks ZC-ACK/keepalive NOOPs. */
	enum ksock_match (*match)(int ctype, size_t nob, bool nonblk, size_t min_bulk);
};

const struct ksock_proto *ksock_proto_find(unsigned version, bool peer_be);
/* Version the active side starts with: V4 on IPv6, V3 on IPv4. */
unsigned ksock_proto_default_version(int family);
/* BULK_IN <-> BULK_OUT; ANY and CONTROL stay; anything else -> NONE. */
int ksock_invert_ctype(int ctype);
const char *ksock_ctype_str(int ctype);

/* A ZC-ACK as carried by (cookies[0], cookies[1]) of a NOOP (for an LNET
 * message pass c0 = 0: only cookies[1] is an ACK there). */
struct ksock_zcack {
	uint64_t lo, hi;      /* range [lo, hi], or the pair {lo, hi} */
	bool pair;            /* exactly lo and hi */
	bool keepalive;       /* cookie 1 on V3/V4: nothing to ACK */
	unsigned count;       /* cookies that must be outstanding (range: hi-lo+1) */
};
/* Returns 0, or -EPROTO for a malformed form (keepalive inside a range). */
int ksock_zcack_parse(uint64_t c0, uint64_t c1, bool keepalive_ok, struct ksock_zcack *z);
bool ksock_zcack_covers(const struct ksock_zcack *z, uint64_t cookie);
/* Next ZC request cookie: > 1, skipping 0 and 1 on wrap. */
uint64_t ksock_cookie_next(uint64_t *counter);

/* Race resolution: refuse an incoming connection when I am connecting to
 * that peer and its NID is lower than mine (higher NID wins). */
bool ksock_race_refuse(const ulnet_nid_t *peer_nid, const ulnet_nid_t *my_nid, bool connecting);

/* Connection-admission decision once a HELLO is read. */
enum ksock_admit {
	KSOCK_ADMIT_OK = 0,
	KSOCK_ADMIT_RACE,         /* passive: refuse with NONE (I'm connecting, higher NID) */
	KSOCK_ADMIT_REBOOT,       /* incarnation changed: close all, refuse */
	KSOCK_ADMIT_WRONG_PROTO,  /* protocol differs from the peer's other conns */
	KSOCK_ADMIT_LOST_RACE,    /* active: the peer answered NONE in my version */
	KSOCK_ADMIT_RETRY_PROTO,  /* active: the peer answered another version */
	KSOCK_ADMIT_DUP,          /* same type beyond conns_per_peer */
};
struct ksock_admit_in {
	bool active;
	const ulnet_nid_t *my_nid, *peer_nid;
	bool connecting;              /* I have an active attempt to this peer */
	bool peer_known;              /* the peer has agreed a proto/incarnation */
	const struct ksock_proto *peer_proto, *conn_proto;
	uint64_t peer_incarnation, incarnation;
	int hello_rc;                 /* active: 0, EALREADY or EPROTO from the reply */
	int ndup;                     /* established conns of the same type
				       * between the same two addresses */
	int conns_per_peer;           /* refuse when ndup reaches it (< 1: 1) */
	bool loopback;                /* same IP both ends: duplicates allowed */
};
enum ksock_admit ksock_admit(const struct ksock_admit_in *in);
const char *ksock_admit_str(enum ksock_admit a);

/* Active side: check a reply HELLO against what we asked for.
 * Returns 0 (accepted), EALREADY (NONE, same version), EPROTO (other
 * version: retry with h->version) or -EPROTO with *why set. */
int ksock_hello_check_reply(const struct ksock_hello *h, const ulnet_nid_t *target_nid,
			    ulnet_pid_t target_pid, unsigned sent_version, int sent_ctype,
			    const char **why);
/* Passive side: is this HELLO acceptable at all? 0 or -EPROTO with *why. */
int ksock_hello_check_passive(const struct ksock_hello *h, const char **why);
/* Whether `nid`'s address is `sa`'s (an IPv4-mapped IPv6 address is its
 * IPv4 one): verify_peer_nid. */
bool ksock_nid_is_addr(const ulnet_nid_t *nid, const struct sockaddr_storage *sa);

/* Fold one more ZC-ACK cookie into the cookies of a NOOP that has not gone
 * out yet (V3/V4 forms): (0,a) -> pair (max,min); a pair whose three cookies
 * are consecutive -> range; a range grows by one at either end. Returns true
 * when `cookie` is now covered (also when it already was). Keepalive cookie
 * [0,1] is replaced by the ACK. */
bool ksock_zcack_merge(uint64_t ck[2], uint64_t cookie);
/* Sort cookies in descending order (small n). */
void ksock_acks_sort(uint64_t *acks, unsigned n);

/* The socklnd tunables of one NI, resolved from ulnet_ni_conf (0 = default,
 * checked ranges). */
struct ksock_tun {
	int sock_timeout;             /* s */
	int keepalive;                /* s of silence before a keepalive NOOP; 0 never */
	int keepalive_idle;           /* TCP keepalive; 0: SO_KEEPALIVE off */
	int keepalive_count;
	int keepalive_intvl;
	size_t min_bulk;
	size_t zc_min_payload;        /* 0: never request a ZC-ACK */
	bool enable_csum;             /* send checksums on V2 */
	bool nonblk_zcack;            /* ZC-ACK NOOPs on the BULK_IN conn */
	bool typed_conns;
	bool nagle;
	int tx_buffer_size, rx_buffer_size;   /* 0: system default */
	uint64_t min_reconnect_ms, max_reconnect_ms;
	unsigned protocol;            /* first HELLO version */
	int conns_per_peer;
	int tos;                      /* -1 leave */
};
/* Resolve and check `conf` for an NI of `family`. 0, or -EINVAL with the
 * offending tunable explained in `why`; `note` (may stay empty) tells of a
 * value adjusted as the kernel does (zc_min_payload floor). */
int ksock_tun_resolve(const struct ulnet_ni_conf *conf, int family, struct ksock_tun *t,
		      char *why, size_t whylen, char *note, size_t notelen);
/* The passive side's duplicate limit. The kernel refuses a passive conn
 * when the peer already has its own NI's conns_per_peer of that type
 * between the same two addresses. The kernel's value comes from its link
 * speed when unset (1-4 on 1-100 GbE) or from lnetctl (1..127). Ours is
 * derived the same way (ksock_speed_cpp) for what we open, but the peer's
 * link may be faster than ours, so unset (0) admits up to the most a kernel
 * can be told to open (a kernel peer gets all its connections, a 128th of a
 * type is refused); a value that was set is the limit, as in a kernel set
 * so. `conf` is the NI's configured value (lnet_ni_conns_per_peer_conf). */
static inline int ksock_passive_cpp(int conf)
{
	return conf > 0 ? conf : ULNET_MAX_CONNS_PER_PEER;
}

/* ksocklnd's conns_per_peer for an unset value, from the link speed in
 * Mb/s (below 1 Gb/s, or unknown, counts as 1 Gb/s): one more connection
 * per fourfold speed, 1 at 1 GbE, 2 at 10, 3 at 25-40, 4 at 100. */
int ksock_speed_cpp(long mbps);

/* V2 checksum of an outgoing message: the ksock header (csum field zero) and
 * LNet header in `hdr`, then `plen` payload bytes from `off` in the iovecs. */
uint32_t ksock_csum_msg(const uint8_t *hdr, size_t hdr_len, const struct iovec *iov,
			unsigned niov, size_t off, size_t plen);

/* For the per-message helpers that have two callers on the hot paths (a
 * fast and a general one): GCC would call them out of line from both. */
#define KSOCK_ALWAYS_INLINE inline __attribute__((always_inline))

/* A conn's txq_head and hs_out_len and a peer's zc_head (and the links
 * that lead to its first tx) are peeked at without the lock by the event
 * loop (ksock_conn_io, ksock_conn_note_cold): written, under the lock,
 * with a relaxed atomic store so that peek is defined (a plain store on
 * the usual targets). */
#define KSOCK_PEEKED_SET(lv, v) __atomic_store_n(&(lv), (v), __ATOMIC_RELAXED)

/* A conn's rx counters are written by the loop thread alone, without the
 * lock, and read by the conn list (ksock_conn_list) on any thread under
 * it: a relaxed atomic store, one plain add and store on the usual
 * targets, so that read is defined. */
#define KSOCK_RX_COUNT(lv, n) __atomic_store_n(&(lv), (lv) + (n), __ATOMIC_RELAXED)

/* --- runtime structures -------------------------------------------------- */

struct ksock_net;
struct ksock_peer;
struct ksock_conn;

/* A transmit descriptor: one LNET message or one NOOP. Pooled per NI. */
struct ksock_tx {
	struct ksock_tx *next;            /* conn/peer queue, ZC list, free list */
	struct lnet_msg *msg;             /* NULL for a NOOP */
	struct ksock_conn *conn;          /* the conn it went out on */
	bool nonblk;                      /* ZC-ACK / keepalive NOOP */
	uint64_t noop_cookies[2];         /* NOOP: the ACK it carries */
	uint64_t zc_cookie;               /* our ZC request, 0 if none */
	uint64_t deadline;                /* queued-without-conn / ZC-ACK deadline */
	size_t nob;                       /* ksock hdr + LNet hdr + payload */
	size_t sent;
	size_t hdr_len;
	const struct iovec *piov;         /* the MD's fragments */
	unsigned pniov;
	size_t poff, plen;
	uint8_t hdr[KSOCK_MSG_HDR_SIZE + LNET_HDR_MAX_SIZE];
};

enum ksock_conn_state {
	KSOCK_CS_CONNECTING = 1,  /* active: TCP connect in progress */
	KSOCK_CS_HS_SEND,         /* active: sending connreq + HELLO */
	KSOCK_CS_ACC_REQ,         /* passive: reading the acceptor request */
	KSOCK_CS_HELLO,           /* reading the peer's HELLO */
	KSOCK_CS_UP,
	KSOCK_CS_CLOSED,
};

enum ksock_rx_state {
	KSOCK_RX_KHDR = 0,
	KSOCK_RX_LHDR,
	KSOCK_RX_PARSE,           /* in lnet_parse / waiting for recv() */
	KSOCK_RX_PAYLOAD,
};

#define KSOCK_HS_BUF 128
/* Read-ahead buffer of an established conn: one recv() takes several small
 * messages; headers and small payloads (<= KSOCK_RX_COPY_MAX left to read)
 * are copied out of it, larger payloads are read with readv() straight into
 * the MD's fragments (at most KSOCK_RX_BUF bytes of a payload, read ahead
 * with its header, are ever copied). */
#define KSOCK_RX_BUF 8192
#define KSOCK_RX_COPY_MAX (KSOCK_RX_BUF / 2)

/* Sets of conns with txs waiting for a particular writer (conn->cset). */
enum ksock_cset { KSOCK_CSET_HELD, KSOCK_CSET_CORKED, KSOCK_CSET_DEFER, KSOCK_CSET_N };

struct ksock_clink {
	bool on;
	struct ksock_conn *next;
};

struct ksock_conn {
	struct ksock_net *net;
	struct ksock_peer *peer;          /* set once the HELLO is admitted */
	struct ksock_conn *next;          /* peer->conns or net->hs_conns */
	int fd;
	struct ul_io io;
	struct ksock_conn *kick_next;     /* net->kick_conns / dead_conns */
	bool kicked;
	int refs;                         /* under net->lock */
	enum ksock_conn_state state;
	bool active;
	bool on_list;                     /* linked in peer->conns or hs_conns */
	bool userspace;                   /* passive from port > 1023 */
	int ctype;                        /* my view */
	const struct ksock_proto *proto;
	struct sockaddr_storage peer_sa, my_sa;
	uint16_t peer_port;
	char addrstr[64];                 /* "ip:port" of the peer */
	int family;
	uint64_t id;                      /* for logs */

	/* handshake */
	ulnet_nid_t target_nid;           /* active: whom we dial */
	ulnet_pid_t target_pid;
	ulnet_pid_t id_pid;               /* peer identity (after HELLO) */
	ulnet_nid_t id_nid;
	unsigned hs_version;              /* active: version sent */
	int hs_port;                      /* active: next source port to try */
	uint64_t hs_deadline;
	uint8_t hs_in[KSOCK_HS_BUF];
	size_t hs_have;
	uint8_t hs_out[KSOCK_HS_BUF];
	size_t hs_out_len, hs_out_sent;
	bool hs_close_after_send;
	struct ksock_hello hs_hello;      /* the peer's HELLO */

	/* tx (under net->lock) */
	struct ksock_tx *txq_head, *txq_tail;
	size_t tx_queued;                 /* bytes not yet written */
	uint64_t tx_last_progress;
	/* The queue went non-empty and tx_last_progress is not set for it yet:
	 * whoever queued stamps it before unlocking if bytes still wait (most
	 * sends write at once: no clock read). */
	bool tx_stamp_due;
	uint64_t tx_seq;                  /* when it was last chosen (round robin) */
	bool tx_ready;                    /* EPOLLOUT seen since the last EAGAIN */
	/* The conn's queue waits to be written by someone in particular; one
	 * flag and link per reason (enum ksock_cset), the lists in net->cset:
	 * - HELD: txs of a batch (lnet_ni_batch_hold) that no write has tried
	 *   yet, so no EPOLLOUT will drain them: the next send to this conn,
	 *   or ksock_flush(), writes them;
	 * - CORKED: the last write had MSG_MORE (more to come): the kernel
	 *   may keep a partial segment until we push;
	 * - DEFER: coalescing: a caller's send shortly after the last write
	 *   is queued and the loop writes the queue (one sendmsg for several). */
	struct ksock_clink cset[KSOCK_CSET_N];
	uint64_t tx_last_write;           /* ns of the last direct/loop write */
	/* liveness from what we send (the keepalive check): bytes written;
	 * the count the reaper saw last and when (instance clock) it saw it
	 * move; the peer's TCP's acknowledged count at the last look */
	uint64_t tx_bytes, tx_bytes_seen, tx_active_at;
	uint64_t tx_acked;
	uint64_t tx_msgs;                 /* ksock messages written whole (conn list) */

	/* rx (loop thread; the recv() handoff under net->lock) */
	enum ksock_rx_state rx_state;
	bool rx_ready;                    /* EPOLLIN seen since the last EAGAIN */
	uint32_t rx_reads;                /* recv()/readv() that got bytes (busy poll) */
	/* ksock messages read whole and bytes read since the conn came up
	 * (the conn list): KSOCK_RX_COUNT, read by others with the lock */
	uint64_t rx_msgs, rx_bytes;
	bool rx_eof;
	bool rx_started;                  /* bytes of a message have arrived */
	uint64_t rx_last_progress;
	uint8_t rx_hbuf[KSOCK_MSG_HDR_SIZE + LNET_HDR_MAX_SIZE];
	size_t rx_have, rx_need;
	struct ksock_msg_hdr rx_khdr;
	struct lnet_hdr rx_lhdr;
	struct lnet_msg *rx_msg;
	bool rx_recv_called;
	bool rx_recv_sync;                /* recv() ran inside our lnet_parse() */
	bool rx_in_parse;
	size_t rx_mlen, rx_mlen_left, rx_discard_left;
	unsigned rx_niov, rx_iov_idx;
	size_t rx_iov_off;
	uint32_t rx_csum;
	struct iovec rx_iov[ULNET_MAX_IOV];
	size_t rx_buf_off, rx_buf_len;    /* unread bytes: rx_buf[off, len) */
	uint8_t rx_buf[KSOCK_RX_BUF];
};

struct ksock_peer {
	struct ksock_peer *next;          /* net->peers: every peer */
	struct ksock_peer *hnext;         /* its chain of net->peer_hash */
	ulnet_nid_t nid;
	ulnet_pid_t pid;
	bool known;                       /* proto and incarnation agreed */
	const struct ksock_proto *proto;
	uint64_t incarnation;
	unsigned want_version;            /* version for the next active HELLO */
	bool userspace;                   /* reached us from port > 1023 */
	bool connector;                   /* we dial this peer */
	struct ksock_conn *conns;         /* established (UP) */
	/* the conn an LNET message below (0) / from (1) min_bulk goes on when
	 * one conn alone matches best (no round robin to do); NULL: scan.
	 * Cleared whenever a conn joins or leaves `conns`. */
	struct ksock_conn *conn_hint[2];
	int nconnecting;                  /* our active attempts in flight */
	int accepting;                    /* passive HELLOs being processed */
	int ealready;                     /* consecutive lost races */
	uint64_t retry_at;
	uint64_t retry_ms;
	struct ksock_tx *txq_head, *txq_tail; /* waiting for a connection */
	struct ksock_tx *zc_head;         /* sent, waiting for the ZC-ACK */
	uint64_t zc_next;
	/* ZC-ACKs we owe and could not send yet (no conn held as BULK_IN):
	 * grown as needed, as the kernel queues them without limit; a
	 * sender times out a cookie left unacknowledged and closes every
	 * conn to us */
	uint64_t *acks;
	unsigned nacks, acks_cap;
	uint64_t last_alive;
	uint64_t last_keepalive;
	int last_error;
};

struct ksock_txblock {
	struct ksock_txblock *next;
	struct ksock_tx tx[64];
};

/* The socklnd NIs of one instance on one address and acceptor port share
 * one listener, as the kernel has one acceptor per port for all its NIs:
 * the first NI of the group holds it; a connection is taken by the holder
 * and handed to the NI its acceptor request names (sock_listener.c). */
struct ksock_lgroup {
	struct ksock_lgroup *next;
	struct ksock_listener *members;   /* via lg_next; the first holds the socket */
};

/* Which port a listener of an NI is on: accept_port, and accept_port_bulk
 * when it is another port (the kernel's acceptor listens on both). */
enum { KSOCK_LIS_CONTROL = 0, KSOCK_LIS_BULK, KSOCK_LIS_N };

/* One listening port of an NI (sock_acceptor.c). Only the holder of its
 * group has the socket open (fd >= 0); the others wait to take it over. */
struct ksock_listener {
	struct ksock_net *net;            /* the NI it is for */
	struct ksock_lgroup *lg;          /* its group, NULL without one */
	struct ksock_listener *lg_next;
	uint16_t port;
	int fd;
	struct ul_io io;
	/* accept() back-off (loop thread only): the socket is out of epoll
	 * while `paused`; `timer` retries it */
	struct ul_timer timer;
	bool paused;
	bool logged;                      /* this episode's first line was printed */
	int err;                          /* errno of the last failed retry */
	uint64_t delay_ns;
	uint64_t paused_at;
	uint32_t retries;                 /* retries that failed again */
};

/* What the socklnd NIs of one instance share (lnet_ni_lnd_shared()). */
struct ksock_shared {
	pthread_mutex_t lock;             /* the groups and their lists */
	struct ksock_lgroup *groups;
};

struct ksock_net {
	struct lnet_ni *ni;
	struct ul_loop *loop;
	ulnet_nid_t nid;
	ulnet_pid_t pid;                  /* PID we put on the wire */
	uint64_t incarnation;
	int family;
	struct sockaddr_storage sa;       /* NI address, port 0 */
	socklen_t salen;
	uint16_t accept_port;             /* CONTROL connections are dialled there */
	uint16_t accept_port_bulk;        /* every other type (accept_port when unset) */
	int accept_mode;                  /* 0 secure, 1 all, 2 none */
	struct ksock_tun tun;
	bool user_mode;                   /* no privileged ports: pid | USERFLAG */
	int next_priv_port;
	uint64_t next_conn_id;
	uint64_t timeout_ns;
	uint64_t tx_seq;                  /* conn choices made (round robin) */
	uint64_t reap_prev;               /* the reaper's previous pass (clock) */

	uint32_t lock;                    /* ul_lock() (util/ul_lock.h) */
	struct ksock_peer *peers;
	/* Peers by NID (ksock_peer_find()): a send costs the same with 1 or
	 * 10,000 peers (a router's case). Doubles past one peer per chain. */
	struct ksock_peer **peer_hash;
	unsigned peer_hash_size;          /* a power of 2, 0 before the first peer */
	unsigned npeers;
	struct ksock_peer *peer_last;     /* the last one found: the usual send */
	struct ksock_conn *hs_conns;      /* handshaking conns */
	struct ksock_tx *tx_free;
	struct ksock_conn *cset[KSOCK_CSET_N];   /* conns on each set (conn->cset) */
	bool in_defer_flush;              /* the loop is writing the DEFER set */
	struct ksock_txblock *txblocks;
	bool shutdown;

	/* its listeners: accept_port's, then accept_port_bulk's when that
	 * differs (nlis 2); none with accept "none" */
	struct ksock_listener lis[KSOCK_LIS_N];
	int nlis;
	int accept_backlog;
	bool verify_peer_nid;             /* ulnet_ni_conf.verify_peer_nid */
	/* log rate limiting (ksock_log_limited), under its own lock */
	uint32_t rl_lock;
	struct ul_rl rl;
	struct ul_timer reaper;
	/* "Post to the loop": a timer due now. Timers (unlike posted work) can
	 * be cancelled at shutdown, and they run after the epoll batch, so a
	 * conn freed there cannot be touched by a stale event of that batch. */
	struct ul_timer kick;
	struct ksock_conn *kick_conns;    /* conns whose rx must resume */
	struct ksock_conn *dead_conns;    /* refs dropped to 0: free on the loop */
	bool kick_connect;                /* some peer wants an active connect */
	/* shutdown handshake with a running loop */
	struct ul_timer shutdown_timer;
	uint32_t shutdown_cond;           /* ul_cond_*() with lock */
	bool shutdown_started, shutdown_done, shutdown_abandoned;
	int loop_tid;                     /* thread that ran our callbacks last */
	/* Tests (the fuzz targets): when set, replaces the dialling of an
	 * active connection (bind + non-blocking connect) and returns a
	 * connected fd, e.g. one end of a socketpair, or -errno. */
	int (*dial_hook)(struct ksock_net *net, const struct sockaddr_storage *to, socklen_t tolen);

	/* link state (sock_link.c). link_down (under lock): the core says
	 * the NI's link is down (a link fault, or the interface's): sends
	 * fail, no connection is made or taken; link_close: the loop has
	 * its conns to close (the kick does it) */
	bool link_down, link_close;
	/* the interface the NI's address is on, watched through rtnetlink
	 * (loop thread only); rtnl_fd -1: none watched */
	int rtnl_fd;
	struct ul_io rtnl_io;
	uint8_t *rtnl_buf;                /* KSOCK_RTNL_BUF bytes: one datagram */
	int ifindex;
	char ifname[16];
	bool if_down;                     /* the interface's link, as last seen */
	bool addr_gone;                   /* the NI's address is off the interface */
	bool carrier_down;                /* what we last told the core: either */
	bool link_resync;                 /* the core could not take it yet: ask again */

	/* the network namespace the NI was added in (sock_netns.c): an fd
	 * held for the NI's life, -1 without /proc */
	int netns_fd;
	dev_t netns_dev;
	ino_t netns_ino;
};

/* ulnet_nid_same() without its two encodes: the host form has no padding,
 * so its 20 bytes compare as the wire form does (one inline memcmp on the
 * per-send peer lookup). */
_Static_assert(sizeof(ulnet_nid_t) == 20, "ulnet_nid_t has no padding");
static inline bool ksock_nid_same(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* socklnd.c */
static inline void ksock_lock(struct ksock_net *net)
{
	ul_lock(&net->lock);
}

static inline void ksock_unlock(struct ksock_net *net)
{
	ul_unlock(&net->lock);
}

struct ksock_peer *ksock_peer_find(struct ksock_net *net, const ulnet_nid_t *nid);
struct ksock_peer *ksock_peer_find_or_create(struct ksock_net *net, const ulnet_nid_t *nid,
					     ulnet_pid_t pid);
/* A tx with every field but hdr[] zeroed. */
struct ksock_tx *ksock_tx_alloc(struct ksock_net *net);
/* Back to the pool (msg and conn cleared). */
static inline void ksock_tx_free(struct ksock_net *net, struct ksock_tx *tx)
{
	tx->msg = NULL;
	tx->conn = NULL;
	tx->next = net->tx_free;
	net->tx_free = tx;
}

/* A tx for an LNET message (send() fills msg and the payload fields, the
 * build the header ones): only what a message tx reads before setting it
 * is cleared, not the whole descriptor. */
static inline struct ksock_tx *ksock_tx_alloc_msg(struct ksock_net *net)
{
	struct ksock_tx *tx = net->tx_free;

	if (!tx)
		return ksock_tx_alloc(net);
	net->tx_free = tx->next;
	/* msg and conn: cleared by ksock_tx_free */
	tx->nonblk = false;
	tx->zc_cookie = 0;
	return tx;
}

/* The instance's clock (ns). */
static inline uint64_t ksock_now(const struct ksock_net *net)
{
	return lnet_ni_now(net->ni);
}
/* The same clock for progress and liveness stamps: on the loop thread, as
 * read when its turn began (one read per turn, not per message); else
 * read now. Never for deadlines. */
static inline uint64_t ksock_stamp_now(const struct ksock_net *net)
{
	return ul_loop_turn_now(net->loop);
}

const char *ksock_nidstr(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE]);

/* Rate-limited log lines (util/ratelimit.h): the call sites whose lines a
 * remote party can cause at will, one key per site, reason and source
 * address. */
enum ksock_rl_site {
	KSOCK_RL_HS = 0,          /* handshake failures (ksock_hs_fail) */
	KSOCK_RL_REFUSE,          /* HELLOs refused (ksock_refuse) */
	KSOCK_RL_ACCEPT,          /* acceptor: insecure port, accept() errors */
	KSOCK_RL_HS_TIMEOUT,      /* handshakes that timed out */
	KSOCK_RL_CONN,            /* protocol errors on established conns */
	KSOCK_RL_NSITES
};
_Static_assert(KSOCK_RL_NSITES <= UL_RL_SITES, "ratelimit sites");
/* Log a line caused by `src` (NULL: no address) for `reason` (a constant
 * text: the key) unless its key is over its rate; a line that follows
 * held-back ones says how many. Returns whether it was written. Any
 * thread, with or without net->lock. */
bool ksock_log_limited(struct ksock_net *net, enum ksock_rl_site site, const char *reason,
		       const struct sockaddr_storage *src, enum ulnet_log_level lvl,
		       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Report the counts of held-back lines that no later line carried (the
 * reaper, each second; `all` at shutdown). */
void ksock_log_flush(struct ksock_net *net, bool all);
/* Record the loop thread (every loop callback calls it). */
void ksock_loop_enter(struct ksock_net *net);
/* The loop writes the deferred conns (kick handler). */
void ksock_flush_deferred(struct ksock_net *net);
/* Ask the loop to run the kick handler soon (any thread). */
void ksock_kick(struct ksock_net *net);
/* Resume rx of a conn on the loop (holds a ref until then). */
void ksock_kick_conn_locked(struct ksock_conn *c);

/* Messages to finalize after the lock is dropped, in the order added. The
 * first KSOCK_DONE_INLINE are kept as (msg, status) and their txs go back
 * to the pool at once (under the caller's lock: no second lock round trip
 * per completion); later ones wait as a list of txs. */
#define KSOCK_DONE_INLINE 16
struct ksock_done {
	unsigned n;
	struct lnet_msg *msgs[KSOCK_DONE_INLINE];
	int status[KSOCK_DONE_INLINE];
	struct ksock_tx *head, *tail;     /* overflow, after msgs[] */
	unsigned nnotify;                 /* peer failures to report */
	ulnet_nid_t notify_nid[4];
	int notify_err[4];
};
/* The hot paths' alternative to `= { 0 }`: no need to clear the arrays. */
static inline void ksock_done_init(struct ksock_done *d)
{
	d->n = 0;
	d->head = d->tail = NULL;
	d->nnotify = 0;
}
void ksock_done_notify(struct ksock_done *d, const ulnet_nid_t *nid, int err);
/* The overflow list and the notifications (out of line, rare). */
void ksock_done_add_slow(struct ksock_net *net, struct ksock_done *d, struct ksock_tx *tx,
			 int status);
void ksock_done_run_slow(struct ksock_net *net, struct ksock_done *d);

/* Under net->lock. Inline: one completion per message on the hot paths. */
static inline void ksock_done_add(struct ksock_net *net, struct ksock_done *d,
				  struct ksock_tx *tx, int status)
{
	/* in order: completions (SEND events) as the bytes left */
	if (!d->head && d->n < KSOCK_DONE_INLINE) {
		d->msgs[d->n] = tx->msg;
		d->status[d->n++] = status;
		ksock_tx_free(net, tx);
		return;
	}
	ksock_done_add_slow(net, d, tx, status);
}

static inline void ksock_done_run(struct ksock_net *net, struct ksock_done *d)
{
	unsigned n = d->n;

	if (d->head || d->nnotify) {
		ksock_done_run_slow(net, d);
	} else if (n) {
		d->n = 0;
		lnet_finalize_many(d->msgs, d->status, n);
	}
}

/* Bytes of ours the peer's TCP has acknowledged on c (0 if unknown). One
 * getsockopt: for the keepalive check and conn setup, never per message. */
uint64_t ksock_conn_tcp_acked(const struct ksock_conn *c);

/* Whether two socket addresses (AF_INET or AF_INET6) have the same IP,
 * ports aside (sock_conn.c). */
bool ksock_sa_same_ip(const struct sockaddr *a, const struct sockaddr *b);

/* sock_acceptor.c */
/* sock_link.c */
#define KSOCK_RTNL_BUF 65536              /* a link message with VF data can pass 8 KiB */
/* Start following the link of the NI's interface (none for a loopback
 * address or one on no interface). Failing to is logged, not fatal. */
void ksock_link_watch_start(struct ksock_net *net);

/* sock_netns.c: the NI's network namespace. init (at startup, in the
 * adding thread) takes that thread's; enter/leave run a cold section of
 * the calling thread there (leave with what enter saved); ksock_socket()
 * is socket(net->family, type) made there. */
void ksock_netns_init(struct ksock_net *net);
void ksock_netns_fini(struct ksock_net *net);
bool ksock_netns_same(const struct ksock_net *a, const struct ksock_net *b);
int ksock_netns_enter(const struct ksock_net *net, int *saved);
void ksock_netns_leave(const struct ksock_net *net, int saved);
int ksock_socket(const struct ksock_net *net, int type);
void ksock_link_watch_stop(struct ksock_net *net);
/* The LND's link_state op. */
void ksock_link_state(struct lnet_ni *ni, bool down);
/* The kick's part: the conns of a link gone down close (loop thread). */
void ksock_link_close_conns(struct ksock_net *net);
/* The reaper's part: ask for the interface's state again when the core
 * could not take the last answer (loop thread). */
void ksock_link_resync(struct ksock_net *net);

/* Listen on each port of the NI (its listeners, net->lis): 0, or -errno
 * with none left open. Stop listening. */
int ksock_acceptor_start(struct ksock_net *net);
void ksock_acceptor_stop(struct ksock_net *net);
/* The socket itself: bind and listen on the NI's address and l->port (0
 * or -errno), start it on the loop; stop and close it. */
int ksock_listener_open(struct ksock_listener *l);
void ksock_listener_close(struct ksock_listener *l);
/* Move the socket `from` holds to `to` (same address and port, same loop;
 * no loop callback of ours running). */
void ksock_listener_move(struct ksock_listener *from, struct ksock_listener *to);

/* sock_listener.c: listener groups */
/* Join the group of l's address and port, or open its socket and start
 * one. 0 or -errno (the socket could not be opened). */
int ksock_lgroup_join(struct ksock_listener *l);
/* Leave it; a socket it held goes to the next listener of the group, or
 * is closed with the last. */
void ksock_lgroup_leave(struct ksock_listener *l);
/* The lnd's shared_fini op: the instance goes. */
void ksock_shared_fini(void *shared);
/* An accepted connection whose acceptor request names `target`, another
 * NI that shares a listener with its own (an NI on the same address):
 * moved there (its conn list, its id). Returns that NI's net, or NULL
 * when no such NI has `target`. Loop thread only. */
struct ksock_net *ksock_lgroup_hand_over(struct ksock_conn *c, const ulnet_nid_t *target);
void ksock_acc_readable(struct ksock_conn *c);
/* Take an accepted socket (the listener's, or a test's socketpair end):
 * a passive connection that reads the acceptor request next. Returns 0, or
 * -errno with the fd closed. */
int ksock_acceptor_adopt(struct ksock_net *net, int fd);

/* sock_connect.c */
void ksock_peer_connect_locked(struct ksock_net *net, struct ksock_peer *peer,
			       struct ksock_done *done);
void ksock_kick_connect_locked(struct ksock_net *net);
void ksock_connect_io(struct ksock_conn *c, uint32_t revents);
void ksock_connect_failed_locked(struct ksock_net *net, struct ksock_peer *peer, int err,
				 struct ksock_done *done);
bool ksock_can_bind_privileged(void);

/* sock_conn.c */
struct ksock_conn *ksock_conn_new(struct ksock_net *net, int fd, bool active);
struct ksock_conn *ksock_conn_new_locked(struct ksock_net *net, int fd, bool active);
void ksock_conn_get_locked(struct ksock_conn *c);
void ksock_conn_put(struct ksock_conn *c);
void ksock_conn_put_locked(struct ksock_conn *c);
void ksock_conn_io(struct ul_io *io, uint32_t revents);
void ksock_conn_free(struct ksock_conn *c);
/* Close (and fail what it carries); with siblings, every conn of its peer. */
void ksock_conn_close_locked(struct ksock_conn *c, int err, bool siblings, struct ksock_done *done);
void ksock_conn_close(struct ksock_conn *c, int err, bool siblings);
void ksock_hs_readable(struct ksock_conn *c);
int ksock_hs_flush(struct ksock_conn *c);
/* Read handshake bytes until hs_have == need: 1 done, 0 EAGAIN, -errno
 * (-ECONNRESET on EOF). Reads exactly what is asked, never past it. */
int ksock_hs_fill(struct ksock_conn *c, size_t need);
void ksock_conn_describe(const struct ksock_conn *c, char *buf, size_t len);
void ksock_setup_socket(struct ksock_net *net, int fd);
int ksock_send_hello(struct ksock_conn *c, unsigned version, int ctype, const struct ksock_hello *in);
void ksock_hs_fail(struct ksock_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Fold a ZC-ACK into the NOOP at the tail of c's queue if it has not
 * started going out (V3/V4). True if it did. */
bool ksock_conn_merge_zcack_locked(struct ksock_conn *c, uint64_t cookie);
/* The tunable socket options (buffers, Nagle, TCP keepalive, ToS). */
void ksock_socket_bufs(struct ksock_net *net, int fd);

/* sock_tx.c */
void ksock_send(struct lnet_ni *ni, struct lnet_msg *msg);
/* A conn just came up: move the peer's waiting txs that fit it. */
void ksock_conn_take_txs_locked(struct ksock_conn *c, struct ksock_done *done);
/* Write what a batch held (the LND's flush op). */
void ksock_flush(struct lnet_ni *ni, bool more);
/* The conn closes: forget that it holds txs (they fail with it) or has
 * corked bytes. */
void ksock_conn_tx_forget_locked(struct ksock_conn *c);
/* Write what the conn has queued; returns 0 or -errno (conn must close). */
int ksock_conn_flush_locked(struct ksock_conn *c, struct ksock_done *done);
/* A write on `c` failed with `rc` (< 0): log it, class the send being
 * written, close `c` and its siblings. */
void ksock_conn_write_failed_locked(struct ksock_conn *c, int rc, struct ksock_done *done);
void ksock_send_zcack_locked(struct ksock_net *net, struct ksock_peer *peer, uint64_t cookie,
			     struct ksock_done *done);
/* ACK a cookie on the conn it arrived on (user-space mode). */
void ksock_send_zcack_conn_locked(struct ksock_conn *c, uint64_t cookie, struct ksock_done *done);
void ksock_send_keepalive_locked(struct ksock_net *net, struct ksock_peer *peer,
				 struct ksock_done *done);
int ksock_handle_zcack_locked(struct ksock_net *net, struct ksock_peer *peer, uint64_t c0,
			      uint64_t c1, struct ksock_done *done);

/* sock_conninfo.c: the conn_list op (ulnet_conn_list) */
int ksock_conn_list(struct lnet_ni *ni, struct ulnet_conn_info *out, int max);

/* sock_rx.c */
void ksock_conn_rx(struct ksock_conn *c);
bool ksock_conn_poll(struct ul_io *io);
void ksock_conn_note_cold(struct ksock_conn *c);
void ksock_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
		const struct iovec *iov, unsigned niov, size_t offset, size_t mlen, size_t rlen);

#endif
