/* SPDX-License-Identifier: MIT */
/*
 * lnd.h - the contract between the LNet core and an LND (network driver).
 *
 * An LND is a const struct ulnet_lnd registered once per instance
 * (ulnet_lnd_register); the core keeps one table indexed by LND type.
 *
 * Ownership and completion rules (the core enforces them):
 *  - send(): the LND takes the message. It transmits the header (the host
 *    struct from lnet_msg_hdr(), encoded with the connection's codec) and
 *    then the payload described by lnet_msg_payload(). When the send is over
 *    (bytes handed to the kernel, or the peer's ZC-ACK received, or failure)
 *    it calls lnet_finalize(msg, status) exactly once. send() never reports
 *    an error by return value: one path for async errors.
 *  - On receipt the LND decodes the LNet header and calls lnet_parse(). If
 *    lnet_parse() returns 0 the core calls recv() exactly once for that
 *    rx_private, possibly before lnet_parse() returns (`delayed` says
 *    which). recv() gives the
 *    destination fragments: the LND places `mlen` payload bytes there
 *    (starting `offset` bytes into the fragment list), discards rlen - mlen
 *    bytes, then calls lnet_finalize(msg, status) if msg is not NULL.
 *    msg == NULL means "drop": discard rlen bytes, nothing to finalize.
 *  - If lnet_parse() returns < 0 the message is a protocol error: the LND
 *    closes the connection it came from, and recv() is not called.
 *  - The fragment list given to recv() stays valid until lnet_finalize().
 *  - All of these may be called from any thread; the core holds no lock
 *    while it calls into the LND, and the LND must not hold its own locks
 *    while calling lnet_parse()/lnet_finalize() if the core could call back
 *    into it (send() from an event handler).
 */
#ifndef ULNET_CORE_LND_H
#define ULNET_CORE_LND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/lnet_hdr.h"
#include "ulnet/fault.h"
#include "ulnet/ulnet.h"

struct lnet_ni;    /* one network interface of an instance */
struct lnet_msg;   /* one message in flight */
struct ul_loop;    /* the instance's event loop (util/evloop.h) */

struct ulnet_lnd {
	unsigned type;             /* enum ulnet_lnd_type */
	const char *name;          /* "tcp", "lo" */

	/* Bring up `ni` (conf in lnet_ni_conf()). Store private state with
	 * lnet_ni_set_data(). Returns 0 or -errno (the NI is not added). */
	int (*startup)(struct lnet_ni *ni);

	/* Tear down: close connections, fail queued messages (finalize with
	 * -ESHUTDOWN), free private state. Called once, after which no other
	 * op is called for this NI. */
	void (*shutdown)(struct lnet_ni *ni);

	/* Transmit; see the rules above. `target` is the peer NI's NID and PID
	 * (the header's dest), already chosen by the core. */
	void (*send)(struct lnet_ni *ni, struct lnet_msg *msg);

	/* Receive into fragments; see the rules above. `delayed` false: the
	 * call comes from inside lnet_parse() of this rx_private, on the
	 * LND's own thread, before it returns; true: later, from any thread
	 * (a PUT that waited on a lazy portal, a forwarded message that
	 * waited for a router buffer or credit), so the LND must have paused
	 * that connection's receive when lnet_parse() returned without it. */
	void (*recv)(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
		     const struct iovec *iov, unsigned niov, size_t offset,
		     size_t mlen, size_t rlen);

	/* Optional (may be NULL): fill LND-specific NI info (lnd timeout). */
	void (*ni_info)(struct lnet_ni *ni, struct ulnet_ni_info *info);

	/* Optional: the core asks the LND to notice peer death sooner (a
	 * transaction timed out). */
	void (*notify_peer_down)(struct lnet_ni *ni, const ulnet_nid_t *peer);

	/* Optional: write every message held because it was sent inside a
	 * batch (send() got true from lnet_ni_batch_hold()). Completions may
	 * run before it returns and send (and hold) more; the core calls it
	 * again until nothing more was held. `more`: messages wait for
	 * credits, so this batch will send more: the LND may let the kernel
	 * keep a partial segment (MSG_MORE); a later call with more == false
	 * must push out everything written so far. */
	void (*flush)(struct lnet_ni *ni, bool more);

	/* Optional: the NI's link went down (`down`) or came back, as a
	 * cable pulled or plugged in: while down the LND closes the NI's
	 * connections, fails its sends as a dead link does (-ENETUNREACH),
	 * makes no connection and takes none. The core calls it when the NI's
	 * fatal state flips, whatever the cause (fault link, or the LND's own
	 * lnet_ni_link_event()). Without it, fault link refuses the NI. */
	void (*link_state)(struct lnet_ni *ni, bool down);

	/* Optional: describe the NI's established connections
	 * (ulnet_conn_list()): fill at most `max` of `out` (max may be 0)
	 * and return how many the NI has. Called without core locks, from
	 * any thread, on an NI in service: its shutdown waits for the call
	 * to return. The LND reads its connections under its own lock. */
	int (*conn_list)(struct lnet_ni *ni, struct ulnet_conn_info *out, int max);

	/* Optional: free what the LND put in the instance's slot
	 * (lnet_ni_lnd_shared()), once every NI of the instance is down. */
	void (*shared_fini)(void *shared);
};

/* Register an LND with an instance. Errors: -EEXIST (type already there),
 * -EINVAL (missing startup/shutdown/send/recv). */
int ulnet_lnd_register(ulnet_t *ln, const struct ulnet_lnd *lnd);

/* Built-in LNDs, registered by ulnet_create(). */
extern const struct ulnet_lnd lnet_lolnd;
extern const struct ulnet_lnd ksocklnd;
#ifdef ULNET_HAVE_O2IB
extern const struct ulnet_lnd ko2iblnd;   /* built with ULNET_O2IB */
#endif

/* --- what an LND may ask of an NI ---------------------------------------- */

ulnet_t *lnet_ni_instance(const struct lnet_ni *ni);
const ulnet_nid_t *lnet_ni_nid(const struct lnet_ni *ni);
const struct ulnet_ni_conf *lnet_ni_conf(const struct lnet_ni *ni);
void lnet_ni_set_data(struct lnet_ni *ni, void *data);
void *lnet_ni_data(const struct lnet_ni *ni);
struct ul_loop *lnet_ni_loop(const struct lnet_ni *ni);
/* One pointer per instance and LND type, for what the LND's NIs of one
 * instance share (socklnd: the listeners). The LND installs and frees
 * it installs there (atomically: NIs may start on several threads); the
 * core keeps it, NULL at first, and gives it to the LND's shared_fini op
 * when the instance goes. */
void **lnet_ni_lnd_shared(const struct lnet_ni *ni);
/* The instance's clock (ns) and pid. */
uint64_t lnet_ni_now(const struct lnet_ni *ni);
/* Incarnation of the NI: its start time in ns (one value per NI). */
uint64_t lnet_ni_incarnation(const struct lnet_ni *ni);
/* The instance's logger; `fmt` names peer, connection and reason. */
void lnet_ni_log(const struct lnet_ni *ni, enum ulnet_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Whether a line of `lvl` would be written (the instance's log level). */
bool lnet_ni_log_enabled(const struct lnet_ni *ni, enum ulnet_log_level lvl);
/* send() asks whether it may hold the message (not write it yet): true if
 * the calling thread has a batch open on ni's instance (ulnet_batch_begin);
 * the batch then calls the LND's flush() when it ends. */
bool lnet_ni_batch_hold(const struct lnet_ni *ni);
/* Messages wait for credits on ni's instance (their senders' completions
 * release them). A lock-free hint: callable with LND locks held. */
bool lnet_ni_tx_waiting(const struct lnet_ni *ni);
/* Connections per type and peer (>= 1): the configured value, else the
 * one the LND derived, else 1. It can change while the NI runs (lnetctl
 * net set --conns-per-peer): read it when deciding, don't cache. */
int lnet_ni_conns_per_peer(const struct lnet_ni *ni);
/* The LND's own value for an unset conns_per_peer (socklnd: from the link
 * speed, as ksocklnd does), set at startup. */
void lnet_ni_set_conns_per_peer_auto(struct lnet_ni *ni, int value);
/* The value as configured: 0 when it was left unset (the default). */
int lnet_ni_conns_per_peer_conf(const struct lnet_ni *ni);
/* The global lnd_timeout (s), derived from transaction_timeout and
 * retry_count: an LND timeout set to follow it (the kernel's
 * sock_timeout=0) reads it again as it may change. Takes the core lock:
 * not with the LND's own held. */
int lnet_ni_global_lnd_timeout(struct lnet_ni *ni);

/* --- what an LND may ask of a message ------------------------------------ */

const struct lnet_hdr *lnet_msg_hdr(const struct lnet_msg *msg);
/* Payload fragments to send: `*iov` points into the MD's fragments, starting
 * `*offset` bytes in; `*len` bytes in total (0 for ACK/GET). */
void lnet_msg_payload(const struct lnet_msg *msg, const struct iovec **iov,
		      unsigned *niov, size_t *offset, size_t *len);
/* The peer NI the core chose (the header's dest NID) and PID. */
ulnet_process_id_t lnet_msg_target(const struct lnet_msg *msg);
/* LND scratch space: one pointer the LND may use while it owns the message
 * (e.g. to link it into a tx queue without allocating). */
void **lnet_msg_lnd_slot(struct lnet_msg *msg);
/* The health class of a send the LND is about to fail, where its errno
 * alone would class it otherwise (the kernel's tx_hstatus): e.g. the send
 * whose own write failed is a LOCAL_ERROR, though the same errno on a send
 * only queued behind it is a REMOTE_DROPPED. Call it before
 * lnet_finalize(); a class already set (by a fault rule) is kept. */
void lnet_msg_set_hstatus(struct lnet_msg *msg, enum ulnet_hstatus hs);

/* Copy `nob` bytes from the fragments `src` (starting `soff` bytes in) to the
 * fragments `dst` (starting `doff` bytes in); stops early if either list
 * ends. Returns the bytes copied. For recv() of loopback-style LNDs. */
size_t lnet_copy_iov(const struct iovec *dst, unsigned ndst, size_t doff,
		     const struct iovec *src, unsigned nsrc, size_t soff, size_t nob);

/* --- core entry points for LNDs ------------------------------------------ */

/*
 * A header arrived on `ni` from `from_nid` (the peer NI's NID as the LND
 * authenticated it). Returns 0 (recv() will be / was called) or -EPROTO
 * (malformed: the LND closes the connection).
 *
 * `rdma_req` (the kernel's argument of the same name): the LND moves the
 * payload itself, between the peer's memory and the MD's, as o2iblnd does.
 * It changes one thing, for a GET: the GET arrived with the requester's
 * sink buffer (o2iblnd's GET_REQ), so no REPLY message goes back. recv()
 * is then called with the REPLY the core made of the GET (its header, the
 * matched MD's fragments, offset, mlen = rlen = its length) and the LND
 * writes those bytes into the sink, tells the requester, and finalizes
 * that message: its status is the GET event's. A GET with rdma_req must be
 * for this node (the requester's LND sends routed GETs as ordinary
 * messages): -EPROTO otherwise. For a PUT nothing changes: recv() gives
 * the matched fragments, which such an LND advertises for the peer to
 * write into, and it finalizes once the peer says it is done.
 */
int lnet_parse(struct lnet_ni *ni, const struct lnet_hdr *hdr,
	       const ulnet_nid_t *from_nid, void *rx_private, bool rdma_req);

/*
 * The requester's side of a GET whose REPLY the peer's LND writes straight
 * into memory (o2iblnd's GET_REQ/GET_DONE; the kernel's
 * lnet_create_reply_msg() and lnet_set_reply_msg_len()):
 *  - lnet_msg_get_sink(): in send(), the fragments a GET's REPLY lands in
 *    (the whole MD, as the kernel's LND advertises it). -EINVAL when the
 *    GET must go as an ordinary message: this node forwards it (no MD), or
 *    it goes through a router (lnet_msg_target() is a gateway).
 *  - lnet_create_reply_msg(): a message standing for the REPLY that will
 *    not arrive, attached to the GET's MD, its REPLY event prepared. NULL if
 *    the MD is no longer active or no memory: the LND fails the GET.
 *  - lnet_set_reply_msg_len(): once the peer reports the bytes it wrote,
 *    before finalizing the REPLY with 0. -EPROTO (logged) if that is more
 *    than the MD holds: the peer lies, the LND fails both and closes.
 * The LND finalizes both messages once the peer reports completion (or
 * failure: both get the status), the GET first, as the kernel's
 * kiblnd_tx_done().
 */
int lnet_msg_get_sink(const struct lnet_msg *msg, const struct iovec **iov, unsigned *niov,
		      size_t *len);
struct lnet_msg *lnet_create_reply_msg(struct lnet_ni *ni, struct lnet_msg *getmsg);
int lnet_set_reply_msg_len(struct lnet_ni *ni, struct lnet_msg *reply, size_t len);

/* Complete a message the core handed to send() or recv(). Exactly once. */
void lnet_finalize(struct lnet_msg *msg, int status);
/* lnet_finalize() of n messages (NULL entries skipped), in order, with
 * fewer lock round trips. */
void lnet_finalize_many(struct lnet_msg *const *msgs, const int *status, unsigned n);

/* Connection-level health report: the LND tells the core a peer NI failed
 * (status -ECONNREFUSED, -ETIMEDOUT, ...) so health and resend can act. */
void lnet_notify_peer_ni(struct lnet_ni *ni, const ulnet_nid_t *peer, int status);

/* The LND saw the NI's interface lose (`down`) or regain its link (the
 * kernel's ksocknal_handle_link_state_change() -> lnet_set_link_fatal_state()):
 * the NI becomes fatal or no longer is (status, selection, push to peers),
 * and the LND's link_state op is called. Not with LND locks held. Returns
 * -EAGAIN while the NI is not in service yet (startup has not returned):
 * the LND tells it again later. */
int lnet_ni_link_event(struct lnet_ni *ni, bool down, const char *why);

#endif
