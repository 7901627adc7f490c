/* SPDX-License-Identifier: MIT */
/*
 * sock_wire.h - socklnd wire formats: acceptor request, HELLO V1-V4, the
 * 24-byte ksock message header, and the socklnd checksum.
 *
 * Byte order: the acceptor request, HELLO V2-V4 and the ksock header are in
 * the sender's order (`be` selects it for encoding; decoders detect it from
 * the magic and report it in `swapped`); HELLO V1 is always LE; large NIDs
 * are always big-endian inside.
 *
 * Decoders return bytes consumed, -EMSGSIZE for a short buffer (every
 * truncated prefix), -EPROTO for a bad magic/version/field. Encoders return
 * bytes written or -ENOSPC (also -EINVAL for an unknown version or nips > 16,
 * -ERANGE for a large NID in a nid4 form).
 */
#ifndef ULNET_SOCKLND_SOCK_WIRE_H
#define ULNET_SOCKLND_SOCK_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ulnet/nid.h"
#include "util/util_bytes.h"

#define LNET_PROTO_ACCEPTOR_MAGIC 0xacce7100u
#define LNET_PROTO_TCP_MAGIC 0xeebc0dedu     /* HELLO V1 */
#define LNET_PROTO_MAGIC 0x45726963u         /* HELLO V2+ ("Eric") */
#define LNET_ACCEPTOR_REQ_V1_SIZE 16
#define LNET_ACCEPTOR_REQ_V2_SIZE 28

#define KSOCK_PROTO_V1 1
#define KSOCK_PROTO_V2 2
#define KSOCK_PROTO_V3 3
#define KSOCK_PROTO_V4 4

#define KSOCK_HELLO_V1_SIZE 72
#define KSOCK_HELLO_V2_SIZE 56   /* V2 and V3; plus 4 * nips */
#define KSOCK_HELLO_V4_SIZE 80
#define KSOCK_HELLO_MAX_IPS 16

#define KSOCK_MSG_HDR_SIZE 24
#define KSOCK_MSG_NOOP 0xc0u
#define KSOCK_MSG_LNET 0xc1u
#define KSOCK_KEEPALIVE_COOKIE 1ULL

enum ksock_ctype {
	SOCKLND_CONN_NONE = -1,
	SOCKLND_CONN_ANY = 0,
	SOCKLND_CONN_CONTROL = 1,
	SOCKLND_CONN_BULK_IN = 2,
	SOCKLND_CONN_BULK_OUT = 3,
};

struct lnet_acceptor_req {
	uint32_t version;      /* 1 or 2 */
	ulnet_nid_t target;    /* v1: from nid4 */
	bool swapped;          /* decode: magic was byte-swapped */
};

ssize_t lnet_acceptor_req_encode(const struct lnet_acceptor_req *r, bool be,
				 uint8_t *buf, size_t len);
/* Decodes v1 and v2. Unknown version: -EPROTO with r->version set, so the
 * acceptor can answer it. Magic LNET_PROTO_MAGIC: -EPROTONOSUPPORT. */
ssize_t lnet_acceptor_req_decode(const uint8_t *buf, size_t len, struct lnet_acceptor_req *r);

struct ksock_hello {
	uint32_t version;          /* 1..4 */
	ulnet_nid_t src_nid, dst_nid;
	ulnet_pid_t src_pid, dst_pid;
	uint64_t src_incarnation, dst_incarnation;
	int32_t ctype;             /* enum ksock_ctype */
	uint32_t nips;
	uint32_t ips[KSOCK_HELLO_MAX_IPS];
	bool swapped;              /* decode: sender had the other byte order */
};

/* Peek: the magic+version prefix (8 bytes) tells the version and order.
 * Returns 8, -EMSGSIZE, or -EPROTO (unknown magic or version, with
 * h->version set to what was read for a known magic). */
ssize_t ksock_hello_decode_prefix(const uint8_t *buf, size_t len, struct ksock_hello *h);
/* Total size of the HELLO given the bytes read so far (needs 56 for V2/V3 to
 * see nips); returns -EMSGSIZE if not yet known, -EPROTO if nips > 16. */
ssize_t ksock_hello_size(const uint8_t *buf, size_t len);
ssize_t ksock_hello_encode(const struct ksock_hello *h, bool be, uint8_t *buf, size_t len);
ssize_t ksock_hello_decode(const uint8_t *buf, size_t len, struct ksock_hello *h);

struct ksock_msg_hdr {
	uint32_t type;             /* KSOCK_MSG_NOOP / KSOCK_MSG_LNET */
	uint32_t csum;
	uint64_t zc_cookies[2];
};
ssize_t ksock_msg_hdr_encode(const struct ksock_msg_hdr *m, bool be, uint8_t *buf, size_t len);
ssize_t ksock_msg_hdr_decode(const uint8_t *buf, size_t len, bool be, struct ksock_msg_hdr *m);

#define KSM_OFF_TYPE		0
#define KSM_OFF_CSUM		4
#define KSM_OFF_ZC0		8
#define KSM_OFF_ZC1		16

_Static_assert(KSM_OFF_CSUM == KSM_OFF_TYPE + 4, "ksm csum");
_Static_assert(KSM_OFF_ZC0 == KSM_OFF_CSUM + 4, "ksm cookie 0");
_Static_assert(KSM_OFF_ZC1 == KSM_OFF_ZC0 + 8, "ksm cookie 1");
_Static_assert(KSOCK_MSG_HDR_SIZE == KSM_OFF_ZC1 + 8, "ksm header is 24 bytes");

/* The little-endian forms, inline for the per-message paths (the same
 * bytes and checks as ksock_msg_hdr_encode/decode with be = false; the
 * ul_put_le* stores are plain word stores). We always send
 * little-endian. The caller provides KSOCK_MSG_HDR_SIZE bytes. */
static inline void ksock_msg_hdr_put_le(uint8_t *buf, uint32_t type, uint32_t csum, uint64_t c0,
					uint64_t c1)
{
	ul_put_le32(buf + KSM_OFF_TYPE, type);
	ul_put_le32(buf + KSM_OFF_CSUM, csum);
	ul_put_le64(buf + KSM_OFF_ZC0, c0);
	ul_put_le64(buf + KSM_OFF_ZC1, c1);
}

static inline ssize_t ksock_msg_hdr_decode_le(const uint8_t *buf, size_t len, struct ksock_msg_hdr *m)
{
	if (len < KSOCK_MSG_HDR_SIZE)
		return -EMSGSIZE;
	m->type = ul_get_le32(buf + KSM_OFF_TYPE);
	if (m->type != KSOCK_MSG_NOOP && m->type != KSOCK_MSG_LNET)
		return -EPROTO;		/* the kernel closes the connection */
	m->csum = ul_get_le32(buf + KSM_OFF_CSUM);
	m->zc_cookies[0] = ul_get_le64(buf + KSM_OFF_ZC0);
	m->zc_cookies[1] = ul_get_le64(buf + KSM_OFF_ZC1);
	return KSOCK_MSG_HDR_SIZE;
}

/* socklnd checksum: CRC-32 (reflected 0xEDB88320) seeded 0xffffffff, no final
 * inversion. Chain by passing the previous value as `crc`. */
#define KSOCK_CSUM_SEED 0xffffffffu
uint32_t ksock_csum(uint32_t crc, const void *buf, size_t len);

#endif
