/* SPDX-License-Identifier: MIT */
/*
 * o2ib_wire.h - o2iblnd wire formats: the IB LND message (every type, the
 * connection parameters of CONNREQ/CONNACK), the RDMA descriptor, the
 * connection rejection, and the LND's checksum.
 *
 * Byte order: a message and a rejection are in the sender's order; the
 * receiver tells it from the magic (`be` selects it for encoding), except
 * the completion cookies, which are opaque and never swapped (each side
 * echoes the 8 bytes it got: they are kept as the bytes are). The LNet
 * header inside IMMEDIATE, PUT_REQ and GET_REQ is the 72-byte nid4 form,
 * little-endian as always (lnet_hdr.h). NIDs in the o2ib header are nid4.
 *
 * Layout (offsets in bytes; the kernel's structures are packed):
 *   header      0 magic u32, 4 version u16, 6 type u8, 7 credits u8,
 *               8 nob u32 (the whole message), 12 cksum u32 (0: none),
 *               16 srcnid u64, 24 srcstamp u64, 32 dstnid u64,
 *               40 dststamp u64; the body starts at 48
 *   CONNREQ/ACK 48 queue_depth u16, 50 max_frags u16, 52 max_msg_size u32
 *   IMMEDIATE   48 LNet header (72), 120 payload
 *   PUT_REQ     48 LNet header, 120 cookie u64
 *   PUT_ACK     48 src_cookie u64, 56 dst_cookie u64, 64 RDMA descriptor
 *   GET_REQ     48 LNet header, 120 cookie u64, 128 RDMA descriptor
 *   PUT_NAK, PUT_DONE, GET_DONE
 *               48 cookie u64, 56 status s32 (< 0 failure, else length)
 *   RDMA desc   0 key u32, 4 nfrags u32, 8 frags: { nob u32, addr u64 }[n]
 *               (12 bytes each, so addr is misaligned on the wire)
 *   rejection   0 magic u32, 4 version u16, 6 why u8, 7 pad u8,
 *               8 incarnation u64, 16 connection parameters (8)
 *
 * Decoders return the bytes the message covers (its nob), or -EMSGSIZE for
 * a buffer shorter than what it must hold, -EPROTO for anything malformed
 * (bad magic, version, type, nob, checksum, fragment count, src NID ANY),
 * as the kernel's kiblnd_unpack_msg() refuses them. Encoders return the
 * bytes written, -ENOSPC, or -EINVAL.
 */
#ifndef ULNET_LND_O2IB_WIRE_H
#define ULNET_LND_O2IB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/lnet_hdr.h"
#include "ulnet/ulnet.h"

#define KIB_MSG_MAGIC		0x0be91b91U	/* LNET_PROTO_IB_MAGIC */
#define KIB_MSG_VERSION_1	0x11
#define KIB_MSG_VERSION_2	0x12
#define KIB_MSG_VERSION		KIB_MSG_VERSION_2

enum kib_msg_type {
	KIB_MSG_CONNREQ		= 0xc0,
	KIB_MSG_CONNACK		= 0xc1,
	KIB_MSG_NOOP		= 0xd0,	/* nothing but returned credits */
	KIB_MSG_IMMEDIATE	= 0xd1,
	KIB_MSG_PUT_REQ		= 0xd2,	/* source -> sink */
	KIB_MSG_PUT_NAK		= 0xd3,	/* sink -> source: a completion */
	KIB_MSG_PUT_ACK		= 0xd4,	/* sink -> source: the sink's buffer */
	KIB_MSG_PUT_DONE	= 0xd5,	/* source -> sink: a completion */
	KIB_MSG_GET_REQ		= 0xd6,	/* sink -> source: the sink's buffer */
	KIB_MSG_GET_DONE	= 0xd7,	/* source -> sink: a completion */
};

/* connection rejection reasons */
enum kib_rej_why {
	KIB_REJECT_CONN_RACE		= 1,	/* you lost the connection race */
	KIB_REJECT_NO_RESOURCES		= 2,
	KIB_REJECT_FATAL		= 3,
	KIB_REJECT_CONN_UNCOMPAT	= 4,	/* incompatible version */
	KIB_REJECT_CONN_STALE		= 5,	/* stale peer */
	KIB_REJECT_RDMA_FRAGS		= 6,	/* max_frags differ */
	KIB_REJECT_MSG_QUEUE_SIZE	= 7,	/* queue depth differs */
	KIB_REJECT_INVALID_SRV_ID	= 8,
	KIB_REJECT_EARLY		= 9,	/* NI not set up yet */
};

#define KIB_MSG_SIZE		4096	/* the most one message may take */
#define KIB_MAX_RDMA_FRAGS	(ULNET_MAX_IOV + 1)
#define KIB_CREDITS_MAX		255	/* credits is a u8 */

#define KIB_OFF_MAGIC		0
#define KIB_OFF_VERSION		4
#define KIB_OFF_TYPE		6
#define KIB_OFF_CREDITS		7
#define KIB_OFF_NOB		8
#define KIB_OFF_CKSUM		12
#define KIB_OFF_SRCNID		16
#define KIB_OFF_SRCSTAMP	24
#define KIB_OFF_DSTNID		32
#define KIB_OFF_DSTSTAMP	40
#define KIB_HDR_SIZE		48

#define KIB_CONNPARAMS_SIZE	8
#define KIB_RDMA_FRAG_SIZE	12
#define KIB_RDMA_DESC_SIZE	8	/* key and nfrags; the frags follow */
#define KIB_IMMEDIATE_SIZE	(KIB_HDR_SIZE + LNET_HDR_NID4_SIZE)	/* payload follows */
#define KIB_PUTREQ_SIZE		(KIB_IMMEDIATE_SIZE + 8)
#define KIB_PUTACK_SIZE(n)	(KIB_HDR_SIZE + 16 + KIB_RDMA_DESC_SIZE + (n) * KIB_RDMA_FRAG_SIZE)
#define KIB_GETREQ_SIZE(n)	(KIB_PUTREQ_SIZE + KIB_RDMA_DESC_SIZE + (n) * KIB_RDMA_FRAG_SIZE)
#define KIB_COMPLETION_SIZE	(KIB_HDR_SIZE + 12)
#define KIB_CONNMSG_SIZE	(KIB_HDR_SIZE + KIB_CONNPARAMS_SIZE)
#define KIB_REJ_SIZE		(16 + KIB_CONNPARAMS_SIZE)
/* the part of a rejection every version has: magic, version, why */
#define KIB_REJ_MIN_SIZE	7

/* the largest descriptor still fits a message, as the kernel sizes them */
_Static_assert(KIB_GETREQ_SIZE(KIB_MAX_RDMA_FRAGS) <= KIB_MSG_SIZE, "GET_REQ fits a message");
/* a CONNREQ travels in the RDMA CM's connect private data: 56 bytes over IB */
_Static_assert(KIB_CONNMSG_SIZE == 56, "CONNREQ is 56 bytes");

struct kib_connparams {
	uint16_t queue_depth;
	uint16_t max_frags;
	uint32_t max_msg_size;
};

struct kib_rdma_frag {
	uint32_t nob;
	uint64_t addr;
};

/* A decoded RDMA descriptor: the fragments stay in the message buffer
 * (up to 257 of them) and are read with kib_rd_frag(). */
struct kib_rd {
	uint32_t key;
	uint32_t nfrags;
	const uint8_t *frags;
	bool be;
};

/* The checksum: each byte is added to the sum rotated left by one, as the
 * kernel's kiblnd_cksum() does over a `char *`. Whether that char is signed
 * depends on the kernel that built ko2iblnd (x86 kernels before 6.2: signed;
 * 6.2 and later, and arm64: unsigned), and changes the sum of any message
 * with a byte >= 0x80. A receiver accepts either; a sender uses the form the
 * peer's own checksums used (KIB_CKSUM_SIGNED until it is known). */
enum kib_cksum_form {
	KIB_CKSUM_SIGNED = 0,
	KIB_CKSUM_UNSIGNED = 1,
};

struct kib_msg {
	uint16_t version;
	uint8_t type;                   /* enum kib_msg_type */
	uint8_t credits;                /* credits returned to the receiver */
	uint32_t nob;                   /* the whole message (encode: computed) */
	/* NIDs as the wire has them (nid4): any value round-trips, and the
	 * LND compares and converts them */
	ulnet_nid4_t srcnid, dstnid;
	uint64_t srcstamp, dststamp;    /* incarnations */
	/* decode only */
	uint32_t cksum;                 /* as received (0: none) */
	bool cksum_unsigned;            /* it matched the unsigned-char form only */
	bool be;                        /* the sender's order was big-endian */

	struct kib_connparams cp;       /* CONNREQ, CONNACK */
	struct lnet_hdr hdr;            /* IMMEDIATE, PUT_REQ, GET_REQ */
	uint64_t cookie;                /* PUT_REQ, GET_REQ, completions */
	uint64_t src_cookie, dst_cookie;/* PUT_ACK: the PUT_REQ's, the sink's */
	int32_t status;                 /* completions: < 0 failure, else length */
	struct kib_rd rd;               /* decode: PUT_ACK, GET_REQ */
	uint32_t payload_nob;           /* IMMEDIATE: bytes after the LNet header */
};

/* Bytes a message of this type takes before any fragment or payload;
 * -EPROTO for an unknown type. */
ssize_t kib_msg_min_size(uint8_t type);

/* Writes the message, its checksum field zero. For PUT_ACK and GET_REQ,
 * frags[0..nfrags) are the descriptor's (key: m->rd.key); for IMMEDIATE,
 * m->payload_nob bytes of payload are counted in nob but are the caller's
 * to place at KIB_IMMEDIATE_SIZE. Then kib_msg_seal() adds the checksum if
 * wanted. Returns bytes written up to the payload (nob less the payload). */
ssize_t kib_msg_encode(const struct kib_msg *m, const struct kib_rdma_frag *frags,
		       uint32_t nfrags, bool be, uint8_t *buf, size_t len);
/* Sets the checksum of the encoded message in buf (nob bytes, payload in
 * place) in the given form. */
void kib_msg_seal(uint8_t *buf, uint32_t nob, bool be, enum kib_cksum_form form);
/* Decodes and checks a received message of len bytes. */
ssize_t kib_msg_decode(const uint8_t *buf, size_t len, struct kib_msg *m);
/* Fragment i (< rd->nfrags) of a decoded descriptor. */
struct kib_rdma_frag kib_rd_frag(const struct kib_rd *rd, uint32_t i);

/* The checksum of nob bytes, computed with the cksum field (bytes 12..15)
 * taken as zero; never 0 (0 means "no checksum"). */
uint32_t kib_cksum(const uint8_t *buf, uint32_t nob, enum kib_cksum_form form);

#define KIB_LNET_PROTO_MAGIC	0xeebc0dedU	/* LNET_PROTO_MAGIC: a rejection may carry it */

struct kib_rej {
	uint32_t magic;                 /* encode: KIB_MSG_MAGIC if 0 */
	uint16_t version;
	uint8_t why;                    /* enum kib_rej_why */
	uint64_t incarnation;
	struct kib_connparams cp;
	bool has_cp;                    /* decode: the sender included them */
	bool be;                        /* decode: sender's order */
};
ssize_t kib_rej_encode(const struct kib_rej *r, bool be, uint8_t *buf, size_t len);
/* Needs KIB_REJ_MIN_SIZE bytes; the incarnation and parameters when they
 * are there (KIB_REJ_SIZE bytes and a version after V1: has_cp), as the
 * kernel reads a rejection. -EPROTO for a magic other than the IB LND's or
 * LNet's (the kernel's "consumer defined fatal error"). */
ssize_t kib_rej_decode(const uint8_t *buf, size_t len, struct kib_rej *r);

const char *kib_msg_type_str(uint8_t type);

#endif
