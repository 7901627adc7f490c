/* SPDX-License-Identifier: MIT */
/*
 * ulnet/ulnet.h - the LNet API in user space.
 *
 * One ulnet_t is one LNet node: its NIs (always 0@lo, plus tcp NIs), its 64
 * portals with match entries (ME) and memory descriptors (MD), its peers and
 * its counters. Several instances may live in one process; there is no
 * global state.
 *
 * Conventions:
 *  - Every function returning int returns 0 (or a count) on success and a
 *    negative errno on failure; each function lists the errors it returns.
 *  - Handles (ulnet_handle_t) are opaque 64-bit cookies; a stale handle is
 *    detected and rejected with -ENOENT, never dereferenced.
 *  - Threading: an instance is thread-safe. Unless created with
 *    ULNET_OPT_MANUAL_PROGRESS it runs one progress thread that drives socket
 *    I/O and timers. Event handlers are called with no ulnet lock held, on the
 *    thread that completed the operation (the progress thread, or the caller
 *    of ulnet_put()/ulnet_get() for loopback); they may call any function of
 *    this API except ulnet_destroy().
 *  - Time: the instance reads time only through its clock (ulnet_opts.clock),
 *    so tests can drive it deterministically.
 */
#ifndef ULNET_ULNET_H
#define ULNET_ULNET_H

#include "ulnet/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ulnet/nid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ulnet ulnet_t;

/* Opaque handle of an ME or MD. ULNET_HANDLE_NONE never names an object. */
typedef struct ulnet_handle {
	uint64_t cookie;
} ulnet_handle_t;
#define ULNET_HANDLE_NONE ((ulnet_handle_t){ 0 })
static inline bool ulnet_handle_is_none(ulnet_handle_t h) { return h.cookie == 0; }

/* --- limits and protocol constants --------------------------------------- */

#define ULNET_MAX_PORTALS 64
#define ULNET_RESERVED_PORTAL 0                  /* ping and push target */
#define ULNET_PROTO_PING_MATCHBITS 0x8000000000000000ULL
#define ULNET_MTU (1u << 20)                     /* max payload: 1 MiB */
#define ULNET_MAX_IOV 256                        /* max MD fragments */
#define ULNET_MD_THRESH_INF (-1)

/* --- instance --------------------------------------------------------------- */

enum ulnet_log_level { ULNET_LOG_ERROR = 0, ULNET_LOG_WARN, ULNET_LOG_INFO, ULNET_LOG_DEBUG };

typedef void (*ulnet_log_fn)(void *arg, enum ulnet_log_level level, const char *msg);
typedef uint64_t (*ulnet_clock_fn)(void *arg);   /* monotonic nanoseconds */

enum ulnet_opt_flags {
	/* Start no thread; the application calls ulnet_progress(). A send
	 * that follows another to the same peer within a few microseconds may
	 * be queued and leave on the next ulnet_progress() call (so that a
	 * burst leaves in a few TCP segments); a lone send leaves at once. */
	ULNET_OPT_MANUAL_PROGRESS = 1u << 0,
	/* Do not add the implicit 0@lo NI (tests of the bare core). */
	ULNET_OPT_NO_LOOPBACK = 1u << 1,
	/* The progress thread spins instead of sleeping in epoll_wait: lower
	 * latency for one busy core. */
	ULNET_OPT_BUSY_POLL = 1u << 2,
};

struct ulnet_opts {
	ulnet_pid_t pid;            /* 0: ULNET_PID_LUSTRE (12345) */
	unsigned flags;             /* enum ulnet_opt_flags */
	ulnet_clock_fn clock;       /* NULL: CLOCK_MONOTONIC */
	void *clock_arg;
	ulnet_log_fn log;           /* NULL: stderr */
	void *log_arg;
	enum ulnet_log_level log_level; /* messages above this are dropped; default WARN (0 means ERROR) */
};

/*
 * Create an instance (the equivalent of LNetNIInit). `opts` may be NULL.
 * Errors: -ENOMEM; -EINVAL for a reserved pid; errors of thread creation.
 */
ULNET_API int ulnet_create(const struct ulnet_opts *opts, ulnet_t **out);

/*
 * Stop and free an instance: every NI is shut down, in-flight operations end
 * with an event whose status is -ESHUTDOWN, MDs are unlinked (UNLINK events
 * delivered), then memory is released. Must not be called from a handler.
 */
ULNET_API void ulnet_destroy(ulnet_t *ln);

/*
 * Run I/O and timers once, waiting at most `timeout_ms` (0: do not wait, -1:
 * until something happens). Needed only with ULNET_OPT_MANUAL_PROGRESS; with
 * a progress thread it returns -EBUSY. Also writes sends queued since the
 * last call (see ULNET_OPT_MANUAL_PROGRESS). Returns the number of events
 * handled.
 * A caller that spins on ulnet_progress(ln, 0) is served as a busy poller:
 * while it comes back within 20 us, connections that had input lately are
 * read directly (one recv() instead of epoll_wait() + recv()), with a full
 * epoll turn every 16th call; a call after a longer pause always makes a
 * full turn. Timers run on every call.
 * One thread at a time runs an instance's loop: with manual progress, do
 * not call ulnet_progress() from two threads at once, nor while another
 * thread is in ulnet_ping() or ulnet_discover() (they progress the loop
 * themselves while they wait).
 * Errors: -EINVAL (ln NULL), -EBUSY (progress thread), or epoll's -errno.
 */
ULNET_API int ulnet_progress(ulnet_t *ln, int timeout_ms);

/* The PID of this node. */
ULNET_API ulnet_pid_t ulnet_pid(const ulnet_t *ln);

/* --- network interfaces ------------------------------------------------------ */

/* conns_per_peer's upper bound, as lnetctl's and ksocklnd's */
#define ULNET_MAX_CONNS_PER_PEER 127

/* Tunables of an NI; a 0 field takes the kernel's default. */
struct ulnet_ni_tunables {
	int peer_timeout;        /* s, default 180 */
	int peer_credits;        /* default 8 */
	int peer_buffer_credits; /* default 0 */
	int credits;             /* default 256 */
	int conns_per_peer;      /* socklnd: 0 from the link speed, as ksocklnd; o2ib: 0 is 1,
				  * connections made at once to a new peer; at most
				  * ULNET_MAX_CONNS_PER_PEER for both (lnetctl's bound) */
	int tos;                 /* socklnd, -1 = leave (default) */
};

/*
 * socklnd tunables (the ksocklnd module parameters of the same names).
 * 0 takes the ksocklnd default; for on/off settings 1 is on and -1 off.
 */
struct ulnet_sock_tunables {
	int sock_timeout;        /* s without progress before a connection dies; 50;
				  * -1: the global lnd_timeout (the kernel's
				  * sock_timeout=0) */
	int keepalive;           /* s of silence before a keepalive NOOP; 30; -1 never */
	int keepalive_idle;      /* TCP_KEEPIDLE s; 30; -1 no TCP keepalive */
	int keepalive_count;     /* TCP_KEEPCNT; 5 */
	int keepalive_intvl;     /* TCP_KEEPINTVL s; 5 */
	int min_bulk;            /* bytes; messages this large use BULK connections; 1024 */
	int zc_min_payload;      /* bytes; payloads this large request a ZC-ACK; 16384 (floor 2048); -1 never */
	int enable_csum;         /* send checksums on V2 connections; off */
	int nonblk_zcack;        /* ZC-ACK NOOPs on the BULK_IN connection; on */
	int typed_conns;         /* CONTROL/BULK_IN/BULK_OUT; on; -1: one ANY connection (V1/V2 only) */
	int tx_buffer_size;      /* SO_SNDBUF bytes; system default */
	int rx_buffer_size;      /* SO_RCVBUF bytes; system default */
	int nagle;               /* leave Nagle on; off (TCP_NODELAY) */
	int min_reconnectms;     /* first reconnect delay; 1000 */
	int max_reconnectms;     /* reconnect delay cap; 60000 */
	int protocol;            /* HELLO version to start with: 2, 3 or 4; 3 on IPv4, 4 on IPv6 */
	int nscheds;             /* 0: the NI's sockets and timers run on the
				  * instance's progress thread; 1: on a thread
				  * of the NI's own ("ulnet-NET"), so that a
				  * router's NIs move payloads in parallel; not
				  * with ULNET_OPT_MANUAL_PROGRESS; else -EINVAL */
};

/*
 * o2ib LND tunables (the ko2iblnd module parameters of the same names, and
 * the o2ib "lnd tunables" of lnetctl; docs/o2iblnd.md). 0 takes ko2iblnd's
 * default. The NI's conns_per_peer and tos are in its
 * ulnet_ni_tunables. In a ulnet_ni_info the values the NI runs with
 * (cksum 0 or 1, keepalive 0 for never, retry counts as they are).
 */
struct ulnet_o2ib_tunables {
	int service;             /* rdma_cm port listened on and connected to; 987 */
	int cksum;               /* 1: checksum every message sent; off (-1 or 0) */
	int timeout;             /* s: a tx or a connect not done in time fails; 50;
				  * -1: the global lnd_timeout (the kernel's timeout=0) */
	int keepalive;           /* s idle before a NOOP; 100; -1 never */
	int ntx;                 /* tx descriptors of the NI; 512 */
	int peercredits_hiw;     /* credits owed that send a NOOP; peer_credits / 2 */
	int concurrent_sends;    /* sends posted at once on a connection; peer_credits */
	int retry_count;         /* RC transport retries; 5; -1: none */
	int rnr_retry_count;     /* RNR retries; 6 (7: for ever); -1: none */
	int map_on_demand;       /* obsolete, read by nothing (as in 2.17); shown; 1 */
	/* module-wide in the kernel, so no lnetctl "lnd tunables" key: set
	 * through ulnetd's ko2iblnd module options */
	int use_privileged_port; /* 1: connect from a port below 1024 (falling
				  * back to any port without the privilege); 1;
				  * -1: any port */
	int require_privileged_port; /* 1: refuse a connection request from a
				      * port of 1024 or above; off (-1 or 0) */
};

struct ulnet_ni_conf {
	ulnet_nid_t nid;         /* the NI's NID; for tcp the address to bind */
	char iface[16];          /* interface name for display/selection ("" ok) */
	struct ulnet_ni_tunables tun;
	/* socklnd acceptor: 0 = 988. Tests use high ports. */
	uint16_t accept_port;
	/* acceptor mode: "secure" (default), "all", "none" */
	char accept[8];
	struct ulnet_sock_tunables sock;
	/* socklnd acceptor: listen() backlog, 1..65535; 0 = 127 (the lnet
	 * module parameter accept_backlog). The kernel caps it at
	 * net.core.somaxconn. Refused with accept "none" (no listener). */
	int accept_backlog;
	/* socklnd, beyond the kernel: 1 refuses an incoming connection whose
	 * HELLO claims a NID other than the connection's source address (the
	 * kernel, and the default 0, trust the claim of a privileged port);
	 * anything but 0 or 1 is refused (-EINVAL). */
	int verify_peer_nid;
	/* socklnd acceptor: the port of bulk connections (the lnet module
	 * parameter accept_port_bulk): BULK_IN, BULK_OUT and ANY connections
	 * are dialled to it, CONTROL ones to accept_port, and the NI listens
	 * on both (unless accept is "none"). 0 = accept_port (one port for
	 * all, the kernel's default of 988 for both). */
	uint16_t accept_port_bulk;
	/* o2ib NIs: the LND's tunables (ignored by other LNDs) */
	struct ulnet_o2ib_tunables o2ib;
};

/*
 * Add an NI. Errors: -EEXIST (NID already configured), -EINVAL (bad conf,
 * lo net, or a net whose LND is not registered: -EPROTONOSUPPORT),
 * -EADDRNOTAVAIL (tcp: address not on this host), -EADDRINUSE, -EACCES
 * (privileged port without the right), -ENOMEM.
 */
ULNET_API int ulnet_ni_add(ulnet_t *ln, const struct ulnet_ni_conf *conf);

/* Remove an NI by NID. Errors: -ENOENT, -EINVAL (0@lo cannot be removed). */
ULNET_API int ulnet_ni_del(ulnet_t *ln, const ulnet_nid_t *nid);

/* The NIDs of the node, 0@lo first. Returns the count (which may exceed
 * `max`; only `max` are written). */
ULNET_API int ulnet_ni_list(ulnet_t *ln, ulnet_nid_t *nids, int max);

/* --- match entries and memory descriptors -------------------------------- */

enum ulnet_unlink { ULNET_RETAIN = 0, ULNET_UNLINK = 1 };
enum ulnet_ins_pos { ULNET_INS_BEFORE = 0, ULNET_INS_AFTER = 1, ULNET_INS_LOCAL = 2 };

enum ulnet_md_options {
	ULNET_MD_OP_PUT = 0x0001,
	ULNET_MD_OP_GET = 0x0002,
	ULNET_MD_MANAGE_REMOTE = 0x0004,
	ULNET_MD_TRUNCATE = 0x0010,
	ULNET_MD_ACK_DISABLE = 0x0020,
	ULNET_MD_MAX_SIZE = 0x0080,
	ULNET_MD_IOVEC = 0x0100,  /* start is a struct iovec[], length the count (kernel: KIOV) */
	ULNET_MD_TRACK_RESPONSE = 0x0400,
	ULNET_MD_NO_TRACK_RESPONSE = 0x0800,
	ULNET_MD_DISCARD = 0x4000,
};

enum ulnet_event_kind {
	ULNET_EVENT_GET = 1,
	ULNET_EVENT_PUT = 2,
	ULNET_EVENT_REPLY = 3,
	ULNET_EVENT_ACK = 4,
	ULNET_EVENT_SEND = 5,
	ULNET_EVENT_UNLINK = 6,
};

enum ulnet_msg_type {
	ULNET_MSG_ACK = 0,
	ULNET_MSG_PUT = 1,
	ULNET_MSG_GET = 2,
	ULNET_MSG_REPLY = 3,
	ULNET_MSG_HELLO = 4,
};

struct ulnet_event;
typedef void (*ulnet_handler_t)(const struct ulnet_event *ev);

struct ulnet_md {
	void *start;            /* buffer, or struct iovec[] with ULNET_MD_IOVEC */
	size_t length;          /* bytes, or number of iovecs (<= ULNET_MAX_IOV) */
	int threshold;          /* operations before inactive; ULNET_MD_THRESH_INF */
	size_t max_size;        /* with ULNET_MD_MAX_SIZE */
	unsigned options;       /* enum ulnet_md_options */
	void *user_ptr;         /* returned in every event */
	ulnet_handler_t handler;/* may be NULL: no events */
};

struct ulnet_event {
	ulnet_t *ln;
	ulnet_process_id_t target;    /* who the operation was aimed at */
	ulnet_process_id_t initiator; /* peer's primary NID and PID */
	ulnet_process_id_t source;    /* NID actually used by the initiator */
	ulnet_nid_t sender;           /* last hop (a router, or = source) */
	enum ulnet_event_kind type;
	enum ulnet_msg_type msg_type; /* for SEND: PUT or GET */
	unsigned pt_index;
	uint64_t match_bits;
	uint32_t rlength;             /* requested length */
	uint32_t mlength;             /* length manipulated */
	uint32_t offset;              /* offset in the MD */
	ulnet_handle_t md_handle;
	void *md_start;
	void *md_user_ptr;
	unsigned md_options;
	uint64_t hdr_data;            /* PUT only */
	int status;                   /* 0 or -errno */
	bool unlinked;                /* the MD is unlinked; last event of it */
};

/*
 * Attach an ME to `portal` matching requests from `match_id` (NID and/or PID
 * may be ANY) whose bits satisfy ((bits ^ match_bits) & ~ignore_bits) == 0.
 * Errors: -EINVAL (portal >= 64, bad position), -EPERM (the ME's kind, unique
 * or wildcard, differs from the portal's), -ENOMEM.
 */
ULNET_API int ulnet_me_attach(ulnet_t *ln, unsigned portal, ulnet_process_id_t match_id,
		    uint64_t match_bits, uint64_t ignore_bits, enum ulnet_unlink unlink,
		    enum ulnet_ins_pos pos, ulnet_handle_t *meh);

/* Unlink an ME (and its MD, which gets an UNLINK event). Errors: -ENOENT. */
ULNET_API int ulnet_me_unlink(ulnet_t *ln, ulnet_handle_t meh);

/*
 * Attach an MD to an ME (the ME then becomes matchable). Requires OP_PUT or
 * OP_GET. Matching lazy-queued PUTs are delivered at once.
 * Errors: -EINVAL (bad options, iovec count > 256, NULL start with length),
 * -ENOENT (stale ME), -EBUSY (ME already has an MD), -ENOMEM.
 */
ULNET_API int ulnet_md_attach(ulnet_t *ln, ulnet_handle_t meh, const struct ulnet_md *md,
		    enum ulnet_unlink unlink, ulnet_handle_t *mdh);

/* Bind a free-floating MD for ulnet_put()/ulnet_get(). Errors: -EINVAL, -ENOMEM. */
ULNET_API int ulnet_md_bind(ulnet_t *ln, const struct ulnet_md *md, enum ulnet_unlink unlink,
		  ulnet_handle_t *mdh);

/*
 * Promise that [addr, addr+len) stays mapped (not freed, unmapped or
 * remapped) until ulnet_mem_deregister(). An LND that registers memory with
 * its device (o2ib) may then keep a registration of it from one MD to the
 * next, as for a pool of buffers reused by many transfers. Without the
 * promise a registration lasts only while an MD covers the memory, since
 * memory the application frees and maps again at the same address has
 * other pages (docs/o2iblnd.md). Errors: -EINVAL (NULL, 0 bytes, wraps),
 * -EEXIST (this region is registered), -ENOMEM.
 */
ULNET_API int ulnet_mem_register(ulnet_t *ln, const void *addr, size_t len);

/*
 * End that promise for a region given to ulnet_mem_register() (the same
 * addr and len): the LNDs drop their registrations of it (those of
 * transfers in flight when these end). Errors: -EINVAL, -ENOENT.
 */
ULNET_API int ulnet_mem_deregister(ulnet_t *ln, const void *addr, size_t len);

/*
 * Unlink an MD. Idle: an UNLINK event now. Busy: the last completion event
 * has unlinked=true. Errors: -ENOENT (stale or already unlinked handle).
 */
ULNET_API int ulnet_md_unlink(ulnet_t *ln, ulnet_handle_t mdh);

enum ulnet_ack_req { ULNET_ACK_REQ = 0, ULNET_NOACK_REQ = 1 };

/*
 * PUT the MD's bytes [offset of 0 .. length) to `target` on `portal`.
 * `self` (may be NULL) picks the local NI. Events on the MD: SEND, then ACK
 * if requested. Errors: -ENOENT (stale MD), -EINVAL (portal, length > 1 MiB,
 * inactive MD), -EHOSTUNREACH (no NI reaches the target), -ESHUTDOWN.
 * Once 0 is returned every failure arrives as an event status.
 */
ULNET_API int ulnet_put(ulnet_t *ln, const ulnet_nid_t *self, ulnet_handle_t mdh,
	      enum ulnet_ack_req ack, ulnet_process_id_t target, unsigned portal,
	      uint64_t match_bits, unsigned remote_offset, uint64_t hdr_data);

/*
 * GET into the MD from `target`'s `portal`. Events: SEND and REPLY (any
 * order). Errors as ulnet_put().
 */
ULNET_API int ulnet_get(ulnet_t *ln, const ulnet_nid_t *self, ulnet_handle_t mdh,
	      ulnet_process_id_t target, unsigned portal, uint64_t match_bits,
	      unsigned remote_offset);

/*
 * Batching small messages. Between ulnet_batch_begin() and ulnet_batch_end()
 * the PUTs and GETs (and ACKs/REPLYs sent from handlers) that the *calling
 * thread* starts over TCP may be held by the LND and written together: one
 * sendmsg() carries many messages, the TCP stack handles one segment for
 * them, and the message rate goes up several times. The cost is latency:
 * a held message leaves at ulnet_batch_end() at the latest (earlier when a
 * connection holds 64 KiB, or another thread writes to that connection), so
 * wrap bursts, not single requests whose answer you then wait for. Sends of
 * other threads (and of the progress thread) are not held. Nothing changes
 * on the wire but how bytes are grouped into segments.
 *
 * Batches nest (counted); the outermost ulnet_batch_end() writes what is
 * held, including messages that waited for credits and were released by
 * the completions of the batch itself; their SEND events (and any other
 * handlers that completion runs) come on the calling thread.
 * The progress thread batches the replies it sends while it reads a
 * socket on its own; a handler may open and must close its own batch.
 *
 * ulnet_batch_begin errors: -EINVAL (ln NULL), -EBUSY (this thread has a
 * batch open on another instance).
 * ulnet_batch_end errors: -EINVAL (ln NULL, or no batch of ln open on this
 * thread).
 */
ULNET_API int ulnet_batch_begin(ulnet_t *ln);
ULNET_API int ulnet_batch_end(ulnet_t *ln);

/* Make a portal lazy (unmatched PUTs wait for an MD) or not (queued PUTs are
 * dropped). Errors: -EINVAL. */
ULNET_API int ulnet_portal_set_lazy(ulnet_t *ln, unsigned portal, bool lazy);

/* --- ping and discovery (blocking; need progress) ------------------------- */

struct ulnet_ping_peer {
	ulnet_nid_t primary;
	bool multi_rail;
	int nnids;                /* NIDs the peer listed, 0@lo excluded */
	ulnet_nid_t nids[16];
	uint32_t status[16];
	uint32_t features;
};

/*
 * Ping `target` (pid ULNET_PID_ANY: 12345) through `src` (may be NULL) with
 * a sink of `sink_len` bytes (0: 3960 like lnetctl) and wait up to
 * `timeout_ms`. Errors: -ETIMEDOUT, -EHOSTUNREACH, -ECONNREFUSED, -EIO,
 * -EPROTO (invalid ping info), -EINVAL.
 */
ULNET_API int ulnet_ping(ulnet_t *ln, ulnet_process_id_t target, const ulnet_nid_t *src,
	       unsigned sink_len, int timeout_ms, struct ulnet_ping_peer *out);

/* Discover `nid` (ping + push) and wait. `force` re-discovers a known peer.
 * Errors as ulnet_ping(). */
ULNET_API int ulnet_discover(ulnet_t *ln, const ulnet_nid_t *nid, bool force, int timeout_ms,
		   struct ulnet_ping_peer *out);

/* --- global settings (lnetctl set / global show) ------------------------- */

struct ulnet_globals {
	int numa_range;
	int max_interfaces;          /* 4096 */
	int discovery;               /* 1 */
	int drop_asym_route;         /* 0 */
	int retry_count;             /* 2 */
	int transaction_timeout;     /* 150 */
	int health_sensitivity;      /* 100 */
	int recovery_interval;       /* 1 */
	int router_sensitivity;      /* 100 */
	int response_tracking;       /* 3 */
	int recovery_limit;          /* 0 */
	int max_recovery_ping_interval; /* 900 */
};

ULNET_API void ulnet_globals_get(ulnet_t *ln, struct ulnet_globals *g);
/* The values a new instance starts with (the kernel's module defaults). */
ULNET_API void ulnet_globals_defaults(struct ulnet_globals *g);
/* Set globals; every field is range-checked. Errors: -EINVAL (nothing set). */
ULNET_API int ulnet_globals_set(ulnet_t *ln, const struct ulnet_globals *g);
/* lnd_timeout derived from the globals: (tt - 1) / (retry + 1), at least 1. */
ULNET_API int ulnet_lnd_timeout(const struct ulnet_globals *g);

/* --- counters (lnetctl stats / net show -v / peer show -v) --------------- */

/* Per message type counts: index by enum ulnet_msg_type (0..4). */
struct ulnet_msg_type_counts {
	uint64_t n[5];
};

struct ulnet_counters {
	uint64_t msgs_alloc, msgs_max, rst_alloc, errors;
	uint64_t send_count, resend_count, response_timeout_count;
	uint64_t local_interrupt_count, local_dropped_count, local_aborted_count;
	uint64_t local_no_route_count, local_timeout_count, local_error_count;
	uint64_t remote_dropped_count, remote_error_count, remote_timeout_count;
	uint64_t network_timeout_count, failed_resends, successful_resends;
	uint64_t recv_count, route_count, drop_count;
	uint64_t send_length, recv_length, route_length, drop_length;
};

/* Latency samples are also counted by duration, in ULNET_LAT_BUCKETS
 * buckets: bucket k (k < ULNET_LAT_BUCKETS - 1) holds the samples of more
 * than the bound of bucket k - 1 (of 0 for bucket 0) and at most
 * 2^(ULNET_LAT_BUCKET_SHIFT + k) ns: 1.024 us, 2.048 us, ... 2^36 ns
 * (68.7 s); the last bucket holds those above (+Inf).
 * ulnet_latency_bucket_le() gives the bounds. */
#define ULNET_LAT_BUCKET_SHIFT 10
#define ULNET_LAT_BUCKETS 28

struct ulnet_latency {
	uint64_t samples, min_nsec, max_nsec, avg_nsec;
	uint64_t sum_nsec;                    /* of every sample (avg_nsec: sum_nsec / samples) */
	uint64_t bucket[ULNET_LAT_BUCKETS];   /* samples in each bucket (not cumulative) */
};

/* The upper bound of latency bucket k, inclusive, in nanoseconds:
 * 2^(ULNET_LAT_BUCKET_SHIFT + k); UINT64_MAX for the last bucket (+Inf)
 * and for k past it. (Inline: a layout the caller's struct already
 * depends on, not a symbol of the library.) */
static inline uint64_t ulnet_latency_bucket_le(unsigned k)
{
	return k < ULNET_LAT_BUCKETS - 1 ? (uint64_t)1 << (ULNET_LAT_BUCKET_SHIFT + k) : UINT64_MAX;
}

struct ulnet_health_stats {
	int fatal_error;
	int health_value;            /* 0..1000 */
	uint64_t interrupts, dropped, aborted, no_route, timeouts, error;
	uint64_t network_timeout;
	uint64_t ping_count;
	int64_t next_ping;
	bool in_recovery;            /* in the recovery queue (debug recovery) */
};

struct ulnet_ni_info {
	ulnet_nid_t nid;
	bool up;
	char iface[16];
	uint64_t send_count, recv_count, drop_count;
	struct ulnet_latency put_egress, get_rtt, put_ack;
	struct ulnet_msg_type_counts sent, received, dropped;
	/* the payload bytes of those messages, under the same types (so a
	 * REPLY this node sends counts under GET, as in sent; an ACK and a
	 * GET carry none): the payload on the wire, but for a PUT or a REPLY
	 * received for this node the bytes placed in its MD, as
	 * ulnet_counters' recv_length counts them */
	struct ulnet_msg_type_counts sent_bytes, received_bytes, dropped_bytes;
	struct ulnet_health_stats health;
	struct ulnet_ni_tunables tun;
	int lnd_timeout;             /* socklnd "timeout" */
	int credits_max, credits_avail, credits_min; /* NI tx credits */
	int dev_cpt;
	int peer_credits;
	/* UDSP (ulnet/udsp.h): 0 highest, UINT32_MAX none (shown as -1) */
	uint32_t udsp_net_prio, udsp_nid_prio;
	/* o2ib NIs: the LND tunables in effect (zero for other LNDs) */
	struct ulnet_o2ib_tunables o2ib;
};

struct ulnet_peer_ni_info {
	ulnet_nid_t nid;
	int state;                   /* 1 up, 0 down, -1 NA */
	int max_tx_credits, available_tx_credits, min_tx_credits, tx_q_num_of_buf;
	int available_rtr_credits, min_rtr_credits, refcount;
	uint64_t send_count, recv_count, drop_count;
	struct ulnet_latency put_egress, get_rtt, put_ack;
	struct ulnet_msg_type_counts sent, received, dropped;
	/* the payload bytes of those messages, as the NI's */
	struct ulnet_msg_type_counts sent_bytes, received_bytes, dropped_bytes;
	struct ulnet_health_stats health;
	/* UDSP (ulnet/udsp.h): the priorities of its peer net and its own (0
	 * highest, UINT32_MAX none), and its preferred lists: udsp_npref_src
	 * of our NIDs, then udsp_npref_rtr gateway primary NIDs, in
	 * udsp_pref (from ulnet_peer_info_all() only, freed by
	 * ulnet_peer_info_release(); NULL when both are 0) */
	uint32_t udsp_net_prio, udsp_nid_prio;
	int udsp_npref_src, udsp_npref_rtr;
	ulnet_nid_t *udsp_pref;
};

/* Peer NIs a struct ulnet_peer_info holds in itself. */
#define ULNET_PEER_INFO_NIS 16

struct ulnet_peer_info {
	ulnet_nid_t primary;
	bool multi_rail;
	uint32_t state;              /* lp_state bits */
	int nnis;                    /* in nis[], then in more[] */
	struct ulnet_peer_ni_info nis[ULNET_PEER_INFO_NIS];
	/* The NIs past nis[] (nnis - ULNET_PEER_INFO_NIS of them), from
	 * ulnet_peer_info_all() only; NULL otherwise. */
	struct ulnet_peer_ni_info *more;
};

/* The j-th NI of a peer info (j < p->nnis). */
static inline const struct ulnet_peer_ni_info *ulnet_peer_info_ni(const struct ulnet_peer_info *p,
								  int j)
{
	return j < ULNET_PEER_INFO_NIS ? &p->nis[j] : &p->more[j - ULNET_PEER_INFO_NIS];
}

ULNET_API void ulnet_counters_get(ulnet_t *ln, struct ulnet_counters *c);
ULNET_API void ulnet_counters_reset(ulnet_t *ln);

/* Info of the i-th NI (0 = 0@lo). Errors: -ENOENT past the last. */
ULNET_API int ulnet_ni_info(ulnet_t *ln, int index, struct ulnet_ni_info *info);

/* Info of the i-th peer, with its first ULNET_PEER_INFO_NIS NIs (nnis says
 * how many; more is NULL). Errors: -ENOENT past the last. */
ULNET_API int ulnet_peer_info(ulnet_t *ln, int index, struct ulnet_peer_info *info);
/* The same with all its NIs: those past nis[] in `more`, allocated (free
 * it with ulnet_peer_info_release()). Errors: also -ENOMEM. */
ULNET_API int ulnet_peer_info_all(ulnet_t *ln, int index, struct ulnet_peer_info *info);
ULNET_API void ulnet_peer_info_release(struct ulnet_peer_info *info);

/* Add a peer by hand (lnetctl peer add); `nids` are extra NIDs. Errors:
 * -EEXIST, -EINVAL, -ENOMEM. */
ULNET_API int ulnet_peer_add(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
		   int nnids, bool non_mr);

/* ulnet_peer_add_flags() flags */
#define ULNET_PEER_ADD_NON_MR       (1u << 0)  /* not Multi-Rail (--non_mr) */
#define ULNET_PEER_ADD_LOCK_PRIMARY (1u << 1)  /* lock the primary NID (--lock_prim) */

/* The lp_state bit (ulnet_peer_info.state) of a peer whose primary NID is
 * locked: the kernel's LNET_PEER_LOCK_PRIMARY. */
#define ULNET_PEER_STATE_LOCK_PRIMARY (1u << 20)

/*
 * ulnet_peer_add() with flags. ULNET_PEER_ADD_LOCK_PRIMARY locks the
 * primary NID of a new peer (or of one learnt by traffic or discovery, that
 * becomes configured; an existing configured peer only when a NID of
 * `nids` is added to it, as the kernel does): discovery merging the peer
 * with another keeps it primary, and ulnet_peer_del() keeps the peer.
 * Errors: those of ulnet_peer_add(), and for a peer not configured whose
 * primary NID is locked -EEXIST (`primary` is it) or -EALREADY (another).
 */
ULNET_API int ulnet_peer_add_flags(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
			 int nnids, unsigned flags);

/* Delete a peer (or, with nids, some of its NIDs). A peer whose primary NID
 * is locked is kept, with its primary NID only (the kernel's reset of a
 * peer "created by Lustre"). Errors: -ENOENT. */
ULNET_API int ulnet_peer_del(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
		   int nnids);

/* ulnet_peer_del_flags() flags */
#define ULNET_PEER_DEL_FORCE (1u << 0)  /* delete a locked peer too (--force) */

/* ulnet_peer_del() with flags: ULNET_PEER_DEL_FORCE deletes a peer whose
 * primary NID is locked as any other. Errors: also -EINVAL (unknown flag). */
ULNET_API int ulnet_peer_del_flags(ulnet_t *ln, const ulnet_nid_t *primary, const ulnet_nid_t *nids,
			 int nnids, unsigned flags);

/* --- runtime settings (lnetctl net set / peer set) ----------------------- */

#define ULNET_MAX_HEALTH 1000

/*
 * Set the health value of the local NI `nid`, or of every NI but 0@lo when
 * `nid` is NULL (lnetctl net set --health). 0 also marks the NI down in the
 * ping info and ULNET_MAX_HEALTH up again, as the kernel does; an NI below
 * the maximum is "in recovery". Errors: -EINVAL (value outside
 * 0..ULNET_MAX_HEALTH, NULL ln, or 0@lo named), -ENOENT (no such NI).
 */
ULNET_API int ulnet_ni_set_health(ulnet_t *ln, const ulnet_nid_t *nid, int value);

/*
 * Set conns_per_peer (0..127; 0: the value derived from the interface's link
 * speed when the NI started, 1 on loopback) of the tcp NI `nid`,
 * or of every tcp NI when `nid` is NULL (net set --conns-per-peer). It
 * applies to connections made afterwards. Errors: -EINVAL (out of range,
 * NULL ln, an NI whose LND has no such tunable), -ENOENT (no such NI, or no
 * tcp NI at all with NULL).
 */
ULNET_API int ulnet_ni_set_conns_per_peer(ulnet_t *ln, const ulnet_nid_t *nid, int value);

/*
 * Set the LND timeout (socklnd sock_timeout, seconds) of every NI of `net`
 * (net set --net N --lnd-timeout s); it shows as the NI's "timeout". 0
 * makes it follow the global lnd_timeout (global show), as the kernel's
 * sock_timeout=0 does. Errors: -EINVAL (negative, NULL ln, or a net whose LND
 * has no timeout: lo), -ENOENT (no NI on `net`).
 */
ULNET_API int ulnet_net_set_lnd_timeout(ulnet_t *ln, ulnet_net_t net, int seconds);

/*
 * Set the health value of the peer NI `nid`, or of every peer NI when `nid`
 * is NULL (lnetctl peer set --health). Errors: -EINVAL (value outside
 * 0..ULNET_MAX_HEALTH, NULL ln), -ENOENT (no such peer NI).
 */
ULNET_API int ulnet_peer_ni_set_health(ulnet_t *ln, const ulnet_nid_t *nid, int value);

/*
 * Overwrite the lp_state bits of the peer owning `nid` (lnetctl peer set
 * --state; for tests and debugging). The bits of a discovery in progress
 * (DISCOVERING, PING_SENT, PUSH_SENT) are kept as they are. Errors: -EINVAL
 * (NULL ln or nid), -ENOENT (no such peer NI).
 */
ULNET_API int ulnet_peer_set_state(ulnet_t *ln, const ulnet_nid_t *nid, uint32_t state);

/* --- connections (ulnetctl conn show; the kernel's lctl conn_list) ------- */

/* The type of a tcp (socklnd) connection as this node holds it: ksocklnd's
 * SOCKLND_CONN_* values. A peer holds our BULK_IN as its BULK_OUT. */
enum ulnet_conn_type {
	ULNET_CONN_ANY = 0,          /* untyped: one per peer (HELLO V1/V2 without typed_conns) */
	ULNET_CONN_CONTROL = 1,      /* small messages */
	ULNET_CONN_BULK_IN = 2,      /* the peer's bulk data comes in on it */
	ULNET_CONN_BULK_OUT = 3,     /* ours goes out on it */
};

struct ulnet_conn_info {
	ulnet_nid_t ni;              /* our NI it belongs to */
	ulnet_nid_t peer;            /* the peer's NID */
	ulnet_pid_t peer_pid;
	enum ulnet_conn_type type;
	bool active;                 /* we dialled it (else the peer did) */
	unsigned proto_version;      /* its HELLO version, 1..4 */
	/* our end and the peer's (AF_INET or AF_INET6, ports set) */
	struct sockaddr_storage local, remote;
	int cpt;                     /* its CPU partition: 0 (ulnet has one) */
	/* SO_SNDBUF and SO_RCVBUF as read back from the socket (Linux
	 * reports twice what was set) */
	int tx_buffer_size, rx_buffer_size;
	bool nagle;                  /* TCP_NODELAY is off */
	/* since it came up: ksock messages (LNET and NOOP) written whole and
	 * read whole, and bytes written and read after the handshake */
	uint64_t tx_msgs, rx_msgs, tx_bytes, rx_bytes;
};

/*
 * The established connections of the node's NIs, NI by NI (a connection
 * still in its handshake is not listed): the first `max` are written into
 * `conns`. Returns how many there are, which may exceed `max` (only `max`
 * are written); connections come and go meanwhile, so a caller that grows
 * its array and asks again may get another count. An NI whose LND keeps
 * no connections (0@lo) lists none.
 * Errors: -EINVAL (ln NULL, max < 0, conns NULL with max > 0).
 */
ULNET_API int ulnet_conn_list(ulnet_t *ln, struct ulnet_conn_info *conns, int max);

/* Text of an error returned by this API ("No such file or directory"). */
ULNET_API const char *ulnet_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* ULNET_ULNET_H */
