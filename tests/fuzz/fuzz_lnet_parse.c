/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lnet_parse.c - the LNet core's receive state machine: lnet_parse(),
 * matching, lazy portals, ACK/REPLY generation, response tracking and MD
 * completion, driven through a tiny LND of this file.
 *
 * One node (manual progress, fake clock, discovery off) with the NI 1@ptlf
 * runs a sequence of operations read from the input; the first byte of each
 * chooses it:
 *   attach an ME+MD (portal, match id, bits, ignore bits, options,
 *   threshold, length, iovec or flat, position from the input), unlink one,
 *   set/clear a portal's lazy flag, bind an MD and PUT/GET from it to a
 *   peer (the LND keeps the sends), complete a kept send (status from the
 *   input), inject a header built field by field (PUT/GET/ACK/REPLY/HELLO
 *   or garbage; ACK/REPLY may name the wire handle of a send we made),
 *   inject raw header bytes through the nid4/nid16 decoders, move the clock
 *   and progress (response tracking, timeouts). The first byte's upper
 *   bits add fault rules: drop (on arrival, or health errors on sends)
 *   and delay (arrivals and sends held until the clock moves).
 * The LND checks the contract (lnd.h): recv() once per accepted
 * rx_private, never beyond the fragments; after ulnet_destroy() no
 * rx_private is left without its recv() (checked by abort), and ASan sees
 * every leak. Events are checked for sane lengths and for nothing after an
 * MD's unlinked event.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lnd.h"
#include "core/lnet_hdr.h"
#include "ulnet/fault.h"
#include "ulnet/ulnet.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_TYPE ULNET_LND_PTLF
#define MAX_SLOTS 16
#define MAX_SENDS 32
#define MAX_WMDS 16
#define MAX_RX 64
#define BUF_MAX 256

/* A received message the core has accepted (lnet_parse() returned 0) and
 * not yet recv()ed: payload bytes from the input. */
struct fz_rx {
	bool live;
	bool rdma;                     /* parsed with rdma_req: a GET's REPLY comes to recv() */
	bool get;                      /* the header was a GET (a wire REPLY parsed with
					* rdma_req is an ordinary REPLY, truncation included) */
	uint32_t len;
	uint8_t data[BUF_MAX];
};

struct slot {                      /* one ME+MD we attached or bound */
	bool used, unlinked;
	ulnet_handle_t meh, mdh;
	uint8_t *buf;                  /* flat buffer or iovec bytes */
	size_t len;
	struct iovec iov[4];
};

static struct {
	ulnet_t *ln;
	struct lnet_ni *ni;
	ulnet_nid_t self, peers[3];
	struct lnet_msg *sends[MAX_SENDS];
	int nsends;
	lnet_wire_handle_t wmds[MAX_WMDS];
	int nwmds;
	struct fz_rx rx[MAX_RX];
	struct slot slots[MAX_SLOTS];
	uint64_t now;
	bool shutting_down;
} fz;

/* FUZZ_LOG=1: print the node's log, sends and events (one input by hand) */
static bool verbose(void)
{
	static int v = -1;

	if (v < 0)
		v = getenv("FUZZ_LOG") != NULL;
	return v;
}

static uint64_t fz_clock(void *arg)
{
	(void)arg;
	return fz.now;
}

static void fz_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	if (verbose())
		fprintf(stderr, "[%d] %s\n", lvl, msg);
}

static int fz_startup(struct lnet_ni *ni)
{
	fz.ni = ni;
	return 0;
}

static void fz_shutdown(struct lnet_ni *ni)
{
	(void)ni;
	fz.shutting_down = true;
	while (fz.nsends > 0)
		lnet_finalize(fz.sends[--fz.nsends], -ESHUTDOWN);
	fz.ni = NULL;
}

static void fz_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	const struct lnet_hdr *h = lnet_msg_hdr(msg);
	const struct iovec *iov;
	unsigned niov;
	size_t off, len;

	(void)ni;
	/* the payload the core hands us must be readable */
	lnet_msg_payload(msg, &iov, &niov, &off, &len);
	if (len) {
		uint8_t sink[BUF_MAX];
		struct iovec one = { sink, sizeof(sink) };

		lnet_copy_iov(&one, 1, 0, iov, niov, off, len < sizeof(sink) ? len : sizeof(sink));
	}
	if (fz.nwmds < MAX_WMDS) {
		if (h->type == ULNET_MSG_PUT)
			fz.wmds[fz.nwmds++] = h->msg.put.ack_wmd;
		else if (h->type == ULNET_MSG_GET)
			fz.wmds[fz.nwmds++] = h->msg.get.return_wmd;
	}
	if (verbose())
		fprintf(stderr, "send type %u length %u\n", h->type, h->payload_length);
	if (fz.shutting_down || fz.nsends == MAX_SENDS) {
		lnet_finalize(msg, fz.shutting_down ? -ESHUTDOWN : 0);
		return;
	}
	fz.sends[fz.nsends++] = msg;
}

static void fz_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
		    const struct iovec *iov, unsigned niov, size_t offset, size_t mlen,
		    size_t rlen)
{
	struct fz_rx *rx = rx_private;

	(void)ni;
	if (rx && rx->live && rx->rdma && rx->get && msg &&
	    lnet_msg_hdr(msg)->type == ULNET_MSG_REPLY) {
		/* an rdma GET: the LND reads the REPLY's mlen bytes from the
		 * MD (as an RDMA write would): all of them must be there */
		if (mlen != rlen)
			abort();
		rx->live = false;
		for (size_t done = 0; done < mlen;) {
			size_t chunk = mlen - done < BUF_MAX ? mlen - done : BUF_MAX;
			struct iovec one = { rx->data, chunk };

			if (lnet_copy_iov(&one, 1, 0, iov, niov, offset + done, chunk) != chunk)
				abort();
			done += chunk;
		}
		lnet_finalize(msg, 0);
		return;
	}
	if (!rx || !rx->live || mlen > rlen || rlen != rx->len)
		abort();
	rx->live = false;
	if (msg && mlen) {
		/* the core promised mlen bytes of room at offset: write them
		 * all (ASan sees an overflow); our payload repeats if short */
		size_t done = 0;

		while (done < mlen) {
			size_t chunk = mlen - done, src = rx->len ? rx->len : 1;
			struct iovec one = { rx->data, chunk < src ? chunk : src };

			if (!rx->len)
				rx->data[0] = 0;
			if (lnet_copy_iov(iov, niov, offset + done, &one, 1, 0, one.iov_len) != one.iov_len)
				abort();
			done += one.iov_len;
		}
	}
	if (msg)
		lnet_finalize(msg, 0);
}

static const struct ulnet_lnd fz_lnd = {
	.type = FZ_TYPE,
	.name = "ptlf",
	.startup = fz_startup,
	.shutdown = fz_shutdown,
	.send = fz_send,
	.recv = fz_recv,
};

static void fz_event(const struct ulnet_event *ev)
{
	struct slot *s = ev->md_user_ptr;

	if (!s || s < fz.slots || s >= fz.slots + MAX_SLOTS)
		abort();
	if (s->unlinked)
		abort();                /* an event after the last one */
	if (ev->type != ULNET_EVENT_SEND && ev->type != ULNET_EVENT_UNLINK &&
	    ev->type != ULNET_EVENT_ACK && ev->status == 0) {
		/* a GET event's rlength is the GET's payload length, 0, as
		 * the kernel's (lnet_build_msg_event() reads it before the
		 * GET becomes its REPLY) */
		if (ev->type != ULNET_EVENT_GET && ev->mlength > ev->rlength)
			abort();
		/* a MANAGE_REMOTE offset past the end matches with no room
		 * (0 bytes, with TRUNCATE: portal.c), reported as sent */
		if (ev->mlength && (uint64_t)ev->offset + ev->mlength > s->len)
			abort();
	}
	if (ev->unlinked)
		s->unlinked = true;
	if (verbose())
		fprintf(stderr, "event %d status %d mlength %u offset %u%s\n", ev->type, ev->status,
			ev->mlength, ev->offset, ev->unlinked ? " unlinked" : "");
}

static struct slot *slot_new(void)
{
	for (int i = 0; i < MAX_SLOTS; i++) {
		struct slot *s = &fz.slots[i];

		if (!s->used || s->unlinked) {
			if (s->used)
				free(s->buf);   /* its MD is gone */
			memset(s, 0, sizeof(*s));
			s->used = true;
			return s;
		}
	}
	return NULL;
}

/* An MD description from the input; the buffer is allocated exactly. */
static void md_from_input(struct in *in, struct slot *s, struct ulnet_md *md)
{
	uint8_t opt = u8(in), lenb = u8(in), thr = u8(in);
	size_t len = lenb % (BUF_MAX + 1 - 64) + ((opt & 0x80) ? 64 : 0);

	memset(md, 0, sizeof(*md));
	s->len = len;
	s->buf = malloc(len ? len : 1);
	memset(s->buf, 0xa5, len);
	md->options = 0;
	if (opt & 1)
		md->options |= ULNET_MD_OP_PUT;
	if (opt & 2)
		md->options |= ULNET_MD_OP_GET;
	if (opt & 4)
		md->options |= ULNET_MD_MANAGE_REMOTE;
	if (opt & 8)
		md->options |= ULNET_MD_TRUNCATE;
	if (opt & 0x10)
		md->options |= ULNET_MD_ACK_DISABLE;
	if (opt & 0x20) {
		md->options |= ULNET_MD_MAX_SIZE;
		md->max_size = u8(in);
	}
	if (opt & 0x40 && len >= 4) {
		/* four fragments of the one buffer, unequal */
		size_t a = len / 8, b = len / 4, c = len / 2;

		s->iov[0] = (struct iovec){ s->buf, a };
		s->iov[1] = (struct iovec){ s->buf + a, b - a };
		s->iov[2] = (struct iovec){ s->buf + b, c - b };
		s->iov[3] = (struct iovec){ s->buf + c, len - c };
		md->options |= ULNET_MD_IOVEC;
		md->start = s->iov;
		md->length = 4;
	} else {
		md->start = len ? s->buf : NULL;
		md->length = len;
	}
	md->threshold = thr >= 0xf0 ? ULNET_MD_THRESH_INF : thr % 4;
	md->user_ptr = s;
	md->handler = fz_event;
}

static const uint64_t mbits_set[] = { 0, 1, 0x10, 0x11, 0xff00, ULNET_PROTO_PING_MATCHBITS };

static void op_attach(struct in *in)
{
	struct slot *s = slot_new();
	uint8_t a = u8(in), b = u8(in);
	unsigned portal = a & 7;             /* 0 (reserved) .. 7, plus 63 */
	ulnet_process_id_t id;
	uint64_t ignore = 0;
	struct ulnet_md md;
	int rc;

	if (!s)
		return;
	if (portal == 7)
		portal = 63;
	id.nid = (a & 0x18) == 0 ? ULNET_NID_ANY : fz.peers[((a >> 3) & 3) - 1];
	id.pid = (a & 0x20) ? ULNET_PID_ANY : ULNET_PID_LUSTRE;
	if (b & 0x80)
		ignore = u64(in);
	else if (b & 0x40)
		ignore = 0xff;
	rc = ulnet_me_attach(fz.ln, portal, id, mbits_set[(b & 7) % 6], ignore,
			     (b & 8) ? ULNET_UNLINK : ULNET_RETAIN, (enum ulnet_ins_pos)((b >> 4) % 3),
			     &s->meh);
	if (rc) {
		s->used = false;
		return;
	}
	md_from_input(in, s, &md);
	rc = ulnet_md_attach(fz.ln, s->meh, &md, (b & 0x20) ? ULNET_UNLINK : ULNET_RETAIN, &s->mdh);
	if (rc) {
		ulnet_me_unlink(fz.ln, s->meh);
		free(s->buf);
		s->used = false;
	}
}

static void op_unlink(struct in *in)
{
	uint8_t a = u8(in);
	struct slot *s = &fz.slots[a % MAX_SLOTS];

	if (!s->used)
		return;
	if (a & 0x80)
		ulnet_me_unlink(fz.ln, s->meh);
	else
		ulnet_md_unlink(fz.ln, s->mdh);
}

static void op_initiate(struct in *in)
{
	struct slot *s = slot_new();
	uint8_t a = u8(in);
	ulnet_process_id_t target = { fz.peers[a & 1], ULNET_PID_LUSTRE };
	struct ulnet_md md;

	if (!s)
		return;
	md_from_input(in, s, &md);
	if (!(a & 0x08))        /* else: a bound MD with OP_PUT/OP_GET, refused */
		md.options &= ~(unsigned)(ULNET_MD_OP_PUT | ULNET_MD_OP_GET);
	if (ulnet_md_bind(fz.ln, &md, (a & 2) ? ULNET_UNLINK : ULNET_RETAIN, &s->mdh)) {
		free(s->buf);
		s->used = false;
		return;
	}
	if (a & 4)
		ulnet_get(fz.ln, NULL, s->mdh, target, a >> 4, mbits_set[(a >> 3) & 1], 0);
	else
		ulnet_put(fz.ln, NULL, s->mdh, (a & 8) ? ULNET_NOACK_REQ : ULNET_ACK_REQ, target,
			  a >> 4, 0x10, 0, 0);
}

static void op_complete(struct in *in)
{
	uint8_t a = u8(in);
	static const int st[] = { 0, 0, -EIO, -ECONNRESET, -ETIMEDOUT, -EHOSTUNREACH, -ENOMEM, 0 };
	struct lnet_msg *m;
	int i;

	if (!fz.nsends)
		return;
	i = a % fz.nsends;
	m = fz.sends[i];
	fz.sends[i] = fz.sends[--fz.nsends];
	lnet_finalize(m, st[(a >> 5) & 7]);
}

static struct fz_rx *rx_new(struct in *in, uint32_t plen)
{
	for (int i = 0; i < MAX_RX; i++) {
		struct fz_rx *rx = &fz.rx[i];

		if (!rx->live) {
			rx->live = true;
			rx->len = plen;
			for (uint32_t j = 0; j < plen && j < BUF_MAX; j++)
				rx->data[j] = u8(in);
			return rx;
		}
	}
	return NULL;
}

static void inject(struct in *in, const struct lnet_hdr *h)
{
	struct fz_rx *rx;
	int rc;

	if (!fz.ni || (h->payload_length > BUF_MAX && h->payload_length <= ULNET_MTU))
		return;      /* payloads we keep are small; larger fail -EPROTO */
	rx = rx_new(in, h->payload_length);
	if (!rx)
		return;
	{
		uint8_t b = u8(in);

		/* the low bits pick the peer, the next one rdma_req */
		rx->rdma = (b >> 2) & 1;
		rx->get = h->type == ULNET_MSG_GET;
		rc = lnet_parse(fz.ni, h, &fz.peers[b % 3], rx, rx->rdma);
	}
	if (rc < 0) {
		if (rc != -EPROTO)
			abort();
		rx->live = false;    /* recv() is not called: the LND drops it */
	}
}

static void pick_nid(uint8_t c, ulnet_nid_t *nid)
{
	switch (c & 7) {
	case 0: case 1: case 2: case 3:
		*nid = fz.self;
		break;
	case 4:
		*nid = fz.peers[c >> 6 & 1];
		break;
	case 5:
		*nid = ULNET_NID_LO0;
		break;
	case 6:
		ulnet_nid_from_ipv4(0x0a000001, ulnet_mknet(ULNET_LND_TCP, 0), nid);
		break;
	default:
		*nid = ULNET_NID_ANY;
		break;
	}
}

static void op_header(struct in *in)
{
	struct lnet_hdr h;
	uint8_t a = u8(in), b = u8(in), c = u8(in);

	memset(&h, 0, sizeof(h));
	h.type = (a & 7) <= 4 ? (a & 7) : u32(in);
	pick_nid(b, &h.dest_nid);
	h.src_nid = fz.peers[(b >> 3) % 3];
	h.dest_pid = (b & 0x40) ? u32(in) : ULNET_PID_LUSTRE;
	h.src_pid = (b & 0x80) ? u32(in) : ULNET_PID_LUSTRE;
	h.payload_length = (a & 0x80) ? u32(in) : (uint32_t)(h.type == ULNET_MSG_PUT ||
					 h.type == ULNET_MSG_REPLY ? u8(in) : 0);
	switch (h.type) {
	case ULNET_MSG_PUT:
		h.msg.put.ack_wmd = (a & 8) ? LNET_WIRE_HANDLE_NONE : (lnet_wire_handle_t){ u64(in), 1 };
		h.msg.put.match_bits = (c & 0x80) ? u64(in) : mbits_set[c % 6];
		h.msg.put.hdr_data = u64(in);
		h.msg.put.ptl_index = (a & 0x40) ? u32(in) : (a >> 3) & 7;
		h.msg.put.offset = (c & 0x40) ? u32(in) : (c >> 3) & 7;
		break;
	case ULNET_MSG_GET:
		h.msg.get.return_wmd = (lnet_wire_handle_t){ u64(in), u64(in) };
		h.msg.get.match_bits = (c & 0x80) ? u64(in) : mbits_set[c % 6];
		h.msg.get.ptl_index = (a & 0x40) ? u32(in) : (a >> 3) & 7;
		h.msg.get.src_offset = (c & 0x40) ? u32(in) : (c >> 3) & 7;
		h.msg.get.sink_length = (c & 0x20) ? u32(in) : u8(in);
		break;
	case ULNET_MSG_ACK:
	case ULNET_MSG_REPLY: {
		lnet_wire_handle_t wh;

		if (fz.nwmds && !(c & 0x80)) {
			wh = fz.wmds[c % fz.nwmds];
			if (c & 0x40)
				wh.wh_object_cookie += u8(in);
		} else {
			wh = (lnet_wire_handle_t){ u64(in), u64(in) };
		}
		if (h.type == ULNET_MSG_ACK) {
			h.msg.ack.dst_wmd = wh;
			h.msg.ack.match_bits = u64(in);
			h.msg.ack.mlength = u32(in);
		} else {
			h.msg.reply.dst_wmd = wh;
		}
		break;
	}
	default:
		h.msg.hello.incarnation = u64(in);
		h.msg.hello.type = u32(in);
		break;
	}
	inject(in, &h);
}

static void op_raw(struct in *in)
{
	struct lnet_hdr h;
	bool big = u8(in) & 1;
	size_t need = big ? LNET_HDR_NID16_SIZE : LNET_HDR_NID4_SIZE;
	uint8_t buf[LNET_HDR_MAX_SIZE];
	ssize_t rc;

	if (in->n < need)
		return;
	memcpy(buf, in->p, need);
	in->p += need;
	in->n -= need;
	rc = big ? lnet_hdr_decode_nid16(buf, need, &h) : lnet_hdr_decode_nid4(buf, need, &h);
	if (rc < 0)
		return;
	inject(in, &h);
}

static void op_progress(struct in *in)
{
	uint8_t a = u8(in);

	/* 0 .. ~4 min in steps: past transaction timeouts */
	fz.now += (uint64_t)(a & 0x7f) * (a & 0x80 ? 2000000000ULL : 1000000ULL);
	ulnet_progress(fz.ln, 0);
}

static void op_lazy(struct in *in)
{
	uint8_t a = u8(in);

	ulnet_portal_set_lazy(fz.ln, a & 7, (a & 8) != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct ulnet_opts o = fuzz_node_opts(fz_clock, fz_log);
	struct ulnet_ni_conf conf;
	struct ulnet_globals g;
	int ops = 0, i;
	uint8_t first;

	memset(&fz, 0, sizeof(fz));
	fz.now = 1000000000ULL;
	if (verbose())
		o.log_level = ULNET_LOG_DEBUG;
	if (ulnet_create(&o, &fz.ln))
		return 0;
	ulnet_globals_get(fz.ln, &g);
	g.discovery = 0;
	first = u8(&in);
	g.response_tracking = first & 3;
	g.transaction_timeout = 10;
	ulnet_globals_set(fz.ln, &g);
	ulnet_nid_from_ipv4(1, ulnet_mknet(FZ_TYPE, 0), &fz.self);
	ulnet_nid_from_ipv4(2, ulnet_mknet(FZ_TYPE, 0), &fz.peers[0]);
	ulnet_nid_from_ipv4(3, ulnet_mknet(FZ_TYPE, 0), &fz.peers[1]);
	ulnet_nid_from_ipv4(0x0a000002, ulnet_mknet(ULNET_LND_TCP, 0), &fz.peers[2]);
	memset(&conf, 0, sizeof(conf));
	conf.nid = fz.self;
	if (ulnet_lnd_register(fz.ln, &fz_lnd) || ulnet_ni_add(fz.ln, &conf))
		abort();
	/* fault rules (fault.c) from the first byte's upper bits: a drop
	 * rule on arrival or with health errors on sends, a delay rule that
	 * holds arrivals and sends until op_progress moves the clock or the
	 * node is destroyed */
	if (first & 0xc0) {
		struct ulnet_fault_rule r;
		uint8_t b = u8(&in);

		memset(&r, 0, sizeof(r));
		r.src = r.dst = r.local = ULNET_NID_ANY;
		r.rate = 1 + (b & 3);
		r.msg_mask = (b >> 2) & 15;
		r.seed = 1 + (b >> 6);
		if (first & 0x80) {
			r.latency = 1 + (b >> 6);
			(void)ulnet_fault_add(fz.ln, ULNET_FAULT_DELAY, &r);
			r.latency = 0;
		}
		if (first & 0x40) {
			if (b & 0x80)
				r.health_error_mask = ULNET_HSTATUS_RANDOM;
			(void)ulnet_fault_add(fz.ln, ULNET_FAULT_DROP, &r);
		}
	}

	while (in.n && ops++ < 256) {
		switch (u8(&in) % 10) {
		case 0: op_attach(&in); break;
		case 1: op_unlink(&in); break;
		case 2: op_initiate(&in); break;
		case 3: op_complete(&in); break;
		case 4: case 5: case 6: op_header(&in); break;
		case 7: op_raw(&in); break;
		case 8: op_progress(&in); break;
		default: op_lazy(&in); break;
		}
	}

	ulnet_destroy(fz.ln);
	for (i = 0; i < MAX_RX; i++)
		if (fz.rx[i].live)
			abort();        /* accepted, never recv()ed */
	for (i = 0; i < MAX_SLOTS; i++)
		if (fz.slots[i].used)
			free(fz.slots[i].buf);
	return 0;
}
