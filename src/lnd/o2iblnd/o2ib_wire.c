/* SPDX-License-Identifier: MIT */
/*
 * o2ib_wire.c - o2iblnd wire formats (o2ib_wire.h has the layouts): the
 * IB LND message of every type, RDMA descriptors, rejections, and the
 * LND's checksum.
 */
#include <errno.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_wire.h"
#include "util/util_bytes.h"

/* body offsets */
#define KIB_OFF_BODY		KIB_HDR_SIZE
#define KIB_OFF_CP		KIB_OFF_BODY	/* queue_depth u16, max_frags u16, max_msg_size u32 */
#define KIB_OFF_LNET_HDR	KIB_OFF_BODY
#define KIB_OFF_REQ_COOKIE	(KIB_OFF_LNET_HDR + LNET_HDR_NID4_SIZE)
#define KIB_OFF_GET_RD		(KIB_OFF_REQ_COOKIE + 8)
#define KIB_OFF_PA_SRC_COOKIE	(KIB_OFF_BODY + 0)
#define KIB_OFF_PA_DST_COOKIE	(KIB_OFF_BODY + 8)
#define KIB_OFF_PA_RD		(KIB_OFF_BODY + 16)
#define KIB_OFF_CMPL_COOKIE	(KIB_OFF_BODY + 0)
#define KIB_OFF_CMPL_STATUS	(KIB_OFF_BODY + 8)
/* within a descriptor and a fragment */
#define KIB_RD_OFF_KEY		0
#define KIB_RD_OFF_NFRAGS	4
#define KIB_RD_OFF_FRAGS	8
#define KIB_RF_OFF_NOB		0
#define KIB_RF_OFF_ADDR		4
/* rejection */
#define KIB_REJ_OFF_MAGIC	0
#define KIB_REJ_OFF_VERSION	4
#define KIB_REJ_OFF_WHY		6
#define KIB_REJ_OFF_PAD		7
#define KIB_REJ_OFF_INC		8
#define KIB_REJ_OFF_CP		16

_Static_assert(KIB_OFF_VERSION == KIB_OFF_MAGIC + 4, "version");
_Static_assert(KIB_OFF_TYPE == KIB_OFF_VERSION + 2, "type");
_Static_assert(KIB_OFF_CREDITS == KIB_OFF_TYPE + 1, "credits");
_Static_assert(KIB_OFF_NOB == KIB_OFF_CREDITS + 1, "nob");
_Static_assert(KIB_OFF_CKSUM == KIB_OFF_NOB + 4, "cksum");
_Static_assert(KIB_OFF_SRCNID == KIB_OFF_CKSUM + 4, "srcnid");
_Static_assert(KIB_OFF_SRCSTAMP == KIB_OFF_SRCNID + 8, "srcstamp");
_Static_assert(KIB_OFF_DSTNID == KIB_OFF_SRCSTAMP + 8, "dstnid");
_Static_assert(KIB_OFF_DSTSTAMP == KIB_OFF_DSTNID + 8, "dststamp");
_Static_assert(KIB_HDR_SIZE == KIB_OFF_DSTSTAMP + 8, "the header is 48 bytes");
_Static_assert(KIB_CONNMSG_SIZE == KIB_OFF_CP + KIB_CONNPARAMS_SIZE, "connparams");
_Static_assert(KIB_IMMEDIATE_SIZE == 120, "IMMEDIATE payload at 120");
_Static_assert(KIB_PUTREQ_SIZE == KIB_OFF_REQ_COOKIE + 8, "PUT_REQ is 128 bytes");
_Static_assert(KIB_GETREQ_SIZE(0) == KIB_OFF_GET_RD + KIB_RD_OFF_FRAGS, "GET_REQ's descriptor");
_Static_assert(KIB_PUTACK_SIZE(0) == KIB_OFF_PA_RD + KIB_RD_OFF_FRAGS, "PUT_ACK's descriptor");
_Static_assert(KIB_COMPLETION_SIZE == KIB_OFF_CMPL_STATUS + 4, "completion is 60 bytes");
_Static_assert(KIB_RDMA_FRAG_SIZE == KIB_RF_OFF_ADDR + 8, "a fragment is 12 bytes (packed)");
_Static_assert(KIB_RDMA_DESC_SIZE == KIB_RD_OFF_FRAGS, "descriptor head");
_Static_assert(KIB_REJ_OFF_VERSION == KIB_REJ_OFF_MAGIC + 4 && KIB_REJ_OFF_WHY == KIB_REJ_OFF_VERSION + 2 &&
	       KIB_REJ_OFF_PAD == KIB_REJ_OFF_WHY + 1 && KIB_REJ_OFF_INC == KIB_REJ_OFF_PAD + 1 &&
	       KIB_REJ_OFF_CP == KIB_REJ_OFF_INC + 8, "rejection");
_Static_assert(KIB_REJ_SIZE == KIB_REJ_OFF_CP + KIB_CONNPARAMS_SIZE, "rejection is 24 bytes");
_Static_assert(KIB_REJ_MIN_SIZE == KIB_REJ_OFF_PAD, "a rejection's first 7 bytes");

/* Completion cookies are opaque: the kernel never swaps them, and echoes
 * the 8 bytes it got. So are ours: stored and read as the bytes are (host
 * order), whatever the message's order, so a cookie comes back as it went. */
static inline uint64_t get_cookie(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void put_cookie(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t get16(const uint8_t *p, bool be) { return be ? ul_get_be16(p) : ul_get_le16(p); }
static inline void put16(uint8_t *p, uint16_t v, bool be) { be ? ul_put_be16(p, v) : ul_put_le16(p, v); }

const char *kib_msg_type_str(uint8_t type)
{
	switch (type) {
	case KIB_MSG_CONNREQ:	return "CONNREQ";
	case KIB_MSG_CONNACK:	return "CONNACK";
	case KIB_MSG_NOOP:	return "NOOP";
	case KIB_MSG_IMMEDIATE:	return "IMMEDIATE";
	case KIB_MSG_PUT_REQ:	return "PUT_REQ";
	case KIB_MSG_PUT_NAK:	return "PUT_NAK";
	case KIB_MSG_PUT_ACK:	return "PUT_ACK";
	case KIB_MSG_PUT_DONE:	return "PUT_DONE";
	case KIB_MSG_GET_REQ:	return "GET_REQ";
	case KIB_MSG_GET_DONE:	return "GET_DONE";
	default:		return "???";
	}
}

ssize_t kib_msg_min_size(uint8_t type)
{
	switch (type) {
	case KIB_MSG_CONNREQ:
	case KIB_MSG_CONNACK:
		return KIB_CONNMSG_SIZE;
	case KIB_MSG_NOOP:
		return KIB_HDR_SIZE;
	case KIB_MSG_IMMEDIATE:
		return KIB_IMMEDIATE_SIZE;
	case KIB_MSG_PUT_REQ:
		return KIB_PUTREQ_SIZE;
	case KIB_MSG_PUT_ACK:
		return KIB_PUTACK_SIZE(0);
	case KIB_MSG_GET_REQ:
		return KIB_GETREQ_SIZE(0);
	case KIB_MSG_PUT_NAK:
	case KIB_MSG_PUT_DONE:
	case KIB_MSG_GET_DONE:
		return KIB_COMPLETION_SIZE;
	default:
		return -EPROTO;
	}
}

/* ---- checksum ------------------------------------------------------------ */

static uint32_t cksum_add(uint32_t sum, const uint8_t *p, size_t n, enum kib_cksum_form form)
{
	if (form == KIB_CKSUM_SIGNED) {
		for (size_t i = 0; i < n; i++)
			sum = ((sum << 1) | (sum >> 31)) + (uint32_t)(int32_t)(int8_t)p[i];
	} else {
		for (size_t i = 0; i < n; i++)
			sum = ((sum << 1) | (sum >> 31)) + p[i];
	}
	return sum;
}

uint32_t kib_cksum(const uint8_t *buf, uint32_t nob, enum kib_cksum_form form)
{
	static const uint8_t zero[4];
	uint32_t sum = 0;

	/* the sender sums its message with the cksum field zero: so do we,
	 * without writing into the buffer */
	if (nob <= KIB_OFF_CKSUM) {
		sum = cksum_add(sum, buf, nob, form);
	} else {
		uint32_t z = nob - KIB_OFF_CKSUM < 4 ? nob - KIB_OFF_CKSUM : 4;

		sum = cksum_add(sum, buf, KIB_OFF_CKSUM, form);
		sum = cksum_add(sum, zero, z, form);
		if (nob > KIB_OFF_CKSUM + 4)
			sum = cksum_add(sum, buf + KIB_OFF_CKSUM + 4, nob - KIB_OFF_CKSUM - 4, form);
	}
	return sum == 0 ? 1 : sum;
}

void kib_msg_seal(uint8_t *buf, uint32_t nob, bool be, enum kib_cksum_form form)
{
	ul_put_32(buf + KIB_OFF_CKSUM, kib_cksum(buf, nob, form), be);
}

/* ---- connection parameters (CONNREQ, CONNACK, rejections) --------------- */

static void cp_encode(uint8_t *p, const struct kib_connparams *cp, bool be)
{
	put16(p + 0, cp->queue_depth, be);
	put16(p + 2, cp->max_frags, be);
	ul_put_32(p + 4, cp->max_msg_size, be);
}

static void cp_decode(const uint8_t *p, struct kib_connparams *cp, bool be)
{
	cp->queue_depth = get16(p + 0, be);
	cp->max_frags = get16(p + 2, be);
	cp->max_msg_size = ul_get_32(p + 4, be);
}

/* ---- RDMA descriptors ---------------------------------------------------- */

struct kib_rdma_frag kib_rd_frag(const struct kib_rd *rd, uint32_t i)
{
	const uint8_t *p = rd->frags + (size_t)i * KIB_RDMA_FRAG_SIZE;

	return (struct kib_rdma_frag){ .nob = ul_get_32(p + KIB_RF_OFF_NOB, rd->be),
				       .addr = ul_get_64(p + KIB_RF_OFF_ADDR, rd->be) };
}

static void rd_encode(uint8_t *p, uint32_t key, const struct kib_rdma_frag *frags, uint32_t n, bool be)
{
	ul_put_32(p + KIB_RD_OFF_KEY, key, be);
	ul_put_32(p + KIB_RD_OFF_NFRAGS, n, be);
	p += KIB_RD_OFF_FRAGS;
	for (uint32_t i = 0; i < n; i++, p += KIB_RDMA_FRAG_SIZE) {
		ul_put_32(p + KIB_RF_OFF_NOB, frags[i].nob, be);
		ul_put_64(p + KIB_RF_OFF_ADDR, frags[i].addr, be);
	}
}

/* The descriptor at off of a message of nob bytes; fails as the kernel's
 * kiblnd_unpack_rd(): 0 < nfrags <= KIB_MAX_RDMA_FRAGS, all inside nob. */
static int rd_decode(const uint8_t *buf, uint32_t nob, size_t off, bool be, struct kib_rd *rd)
{
	rd->key = ul_get_32(buf + off + KIB_RD_OFF_KEY, be);
	rd->nfrags = ul_get_32(buf + off + KIB_RD_OFF_NFRAGS, be);
	rd->frags = buf + off + KIB_RD_OFF_FRAGS;
	rd->be = be;
	if (rd->nfrags == 0 || rd->nfrags > KIB_MAX_RDMA_FRAGS)
		return -EPROTO;
	if (nob < off + KIB_RD_OFF_FRAGS + (size_t)rd->nfrags * KIB_RDMA_FRAG_SIZE)
		return -EPROTO;
	return 0;
}

/* ---- messages ------------------------------------------------------------ */

ssize_t kib_msg_encode(const struct kib_msg *m, const struct kib_rdma_frag *frags,
		       uint32_t nfrags, bool be, uint8_t *buf, size_t len)
{
	ssize_t size = kib_msg_min_size(m->type);
	uint64_t nob;

	if (size < 0)
		return -EINVAL;
	if (m->type == KIB_MSG_PUT_ACK || m->type == KIB_MSG_GET_REQ) {
		if (nfrags == 0 || nfrags > KIB_MAX_RDMA_FRAGS || !frags)
			return -EINVAL;
		size += (ssize_t)nfrags * KIB_RDMA_FRAG_SIZE;
	}
	nob = (uint64_t)size + (m->type == KIB_MSG_IMMEDIATE ? m->payload_nob : 0);
	if (nob > KIB_MSG_SIZE)
		return -EINVAL;
	if ((size_t)size > len)
		return -ENOSPC;

	memset(buf, 0, (size_t)size);
	ul_put_32(buf + KIB_OFF_MAGIC, KIB_MSG_MAGIC, be);
	put16(buf + KIB_OFF_VERSION, m->version, be);
	buf[KIB_OFF_TYPE] = m->type;
	buf[KIB_OFF_CREDITS] = m->credits;
	ul_put_32(buf + KIB_OFF_NOB, (uint32_t)nob, be);
	/* cksum stays 0: kib_msg_seal() */
	ul_put_64(buf + KIB_OFF_SRCNID, m->srcnid, be);
	ul_put_64(buf + KIB_OFF_SRCSTAMP, m->srcstamp, be);
	ul_put_64(buf + KIB_OFF_DSTNID, m->dstnid, be);
	ul_put_64(buf + KIB_OFF_DSTSTAMP, m->dststamp, be);

	switch (m->type) {
	case KIB_MSG_CONNREQ:
	case KIB_MSG_CONNACK:
		cp_encode(buf + KIB_OFF_CP, &m->cp, be);
		break;
	case KIB_MSG_NOOP:
		break;
	case KIB_MSG_IMMEDIATE:
	case KIB_MSG_PUT_REQ:
	case KIB_MSG_GET_REQ:
		if (lnet_hdr_encode_nid4(&m->hdr, buf + KIB_OFF_LNET_HDR, LNET_HDR_NID4_SIZE) < 0)
			return -EINVAL;
		if (m->type == KIB_MSG_IMMEDIATE)
			break;
		put_cookie(buf + KIB_OFF_REQ_COOKIE, m->cookie);
		if (m->type == KIB_MSG_GET_REQ)
			rd_encode(buf + KIB_OFF_GET_RD, m->rd.key, frags, nfrags, be);
		break;
	case KIB_MSG_PUT_ACK:
		put_cookie(buf + KIB_OFF_PA_SRC_COOKIE, m->src_cookie);
		put_cookie(buf + KIB_OFF_PA_DST_COOKIE, m->dst_cookie);
		rd_encode(buf + KIB_OFF_PA_RD, m->rd.key, frags, nfrags, be);
		break;
	default: /* the completions */
		put_cookie(buf + KIB_OFF_CMPL_COOKIE, m->cookie);
		ul_put_32(buf + KIB_OFF_CMPL_STATUS, (uint32_t)m->status, be);
		break;
	}
	return size;
}

ssize_t kib_msg_decode(const uint8_t *buf, size_t len, struct kib_msg *m)
{
	uint32_t magic, nob;
	ssize_t min;
	bool be;

	memset(m, 0, sizeof(*m));
	/* magic and version first: they are fixed for all versions */
	if (len < KIB_OFF_TYPE)
		return -EMSGSIZE;
	magic = ul_get_le32(buf + KIB_OFF_MAGIC);
	if (magic == KIB_MSG_MAGIC)
		be = false;
	else if (magic == __builtin_bswap32(KIB_MSG_MAGIC))
		be = true;
	else
		return -EPROTO;
	m->be = be;
	m->version = get16(buf + KIB_OFF_VERSION, be);
	if (m->version != KIB_MSG_VERSION_1 && m->version != KIB_MSG_VERSION_2)
		return -EPROTO;
	if (len < KIB_HDR_SIZE)
		return -EMSGSIZE;
	nob = ul_get_32(buf + KIB_OFF_NOB, be);
	/* the kernel takes nob up to what arrived; below the header it would
	 * read past its own message, so refuse that too */
	if (nob > len)
		return -EMSGSIZE;
	if (nob < KIB_HDR_SIZE)
		return -EPROTO;
	m->nob = nob;
	m->cksum = ul_get_32(buf + KIB_OFF_CKSUM, be);
	if (m->cksum != 0 && m->cksum != kib_cksum(buf, nob, KIB_CKSUM_SIGNED)) {
		if (m->cksum != kib_cksum(buf, nob, KIB_CKSUM_UNSIGNED))
			return -EPROTO;
		m->cksum_unsigned = true;
	}
	m->type = buf[KIB_OFF_TYPE];
	m->credits = buf[KIB_OFF_CREDITS];
	m->srcnid = ul_get_64(buf + KIB_OFF_SRCNID, be);
	m->dstnid = ul_get_64(buf + KIB_OFF_DSTNID, be);
	m->srcstamp = ul_get_64(buf + KIB_OFF_SRCSTAMP, be);
	m->dststamp = ul_get_64(buf + KIB_OFF_DSTSTAMP, be);
	if (m->srcnid == ULNET_NID4_ANY)
		return -EPROTO;
	min = kib_msg_min_size(m->type);
	if (min < 0 || nob < (uint32_t)min)
		return -EPROTO;

	switch (m->type) {
	case KIB_MSG_CONNREQ:
	case KIB_MSG_CONNACK:
		cp_decode(buf + KIB_OFF_CP, &m->cp, be);
		break;
	case KIB_MSG_NOOP:
		break;
	case KIB_MSG_IMMEDIATE:
	case KIB_MSG_PUT_REQ:
	case KIB_MSG_GET_REQ:
		if (lnet_hdr_decode_nid4(buf + KIB_OFF_LNET_HDR, LNET_HDR_NID4_SIZE, &m->hdr) < 0)
			return -EPROTO;
		if (m->type == KIB_MSG_IMMEDIATE) {
			m->payload_nob = nob - KIB_IMMEDIATE_SIZE;
			break;
		}
		m->cookie = get_cookie(buf + KIB_OFF_REQ_COOKIE);
		if (m->type == KIB_MSG_GET_REQ && rd_decode(buf, nob, KIB_OFF_GET_RD, be, &m->rd))
			return -EPROTO;
		break;
	case KIB_MSG_PUT_ACK:
		m->src_cookie = get_cookie(buf + KIB_OFF_PA_SRC_COOKIE);
		m->dst_cookie = get_cookie(buf + KIB_OFF_PA_DST_COOKIE);
		if (rd_decode(buf, nob, KIB_OFF_PA_RD, be, &m->rd))
			return -EPROTO;
		break;
	default: /* the completions */
		m->cookie = get_cookie(buf + KIB_OFF_CMPL_COOKIE);
		m->status = (int32_t)ul_get_32(buf + KIB_OFF_CMPL_STATUS, be);
		break;
	}
	return nob;
}

/* ---- rejections ----------------------------------------------------------- */

ssize_t kib_rej_encode(const struct kib_rej *r, bool be, uint8_t *buf, size_t len)
{
	if (len < KIB_REJ_SIZE)
		return -ENOSPC;
	ul_put_32(buf + KIB_REJ_OFF_MAGIC, r->magic ? r->magic : KIB_MSG_MAGIC, be);
	put16(buf + KIB_REJ_OFF_VERSION, r->version, be);
	buf[KIB_REJ_OFF_WHY] = r->why;
	buf[KIB_REJ_OFF_PAD] = 0;
	ul_put_64(buf + KIB_REJ_OFF_INC, r->incarnation, be);
	cp_encode(buf + KIB_REJ_OFF_CP, &r->cp, be);
	return KIB_REJ_SIZE;
}

ssize_t kib_rej_decode(const uint8_t *buf, size_t len, struct kib_rej *r)
{
	uint32_t magic;

	memset(r, 0, sizeof(*r));
	if (len < KIB_REJ_MIN_SIZE)
		return -EMSGSIZE;
	magic = ul_get_le32(buf + KIB_REJ_OFF_MAGIC);
	if (magic == KIB_MSG_MAGIC || magic == KIB_LNET_PROTO_MAGIC)
		r->be = false;
	else if (magic == __builtin_bswap32(KIB_MSG_MAGIC) ||
		 magic == __builtin_bswap32(KIB_LNET_PROTO_MAGIC))
		r->be = true;
	else
		return -EPROTO;
	r->magic = r->be ? __builtin_bswap32(magic) : magic;
	r->version = get16(buf + KIB_REJ_OFF_VERSION, r->be);
	r->why = buf[KIB_REJ_OFF_WHY];
	/* a V1 peer's rejection has no incarnation or parameters; the RDMA
	 * CM pads private data, so the version tells, not the length */
	r->incarnation = ~0ULL;
	if (len >= KIB_REJ_SIZE && r->version > KIB_MSG_VERSION_1) {
		r->has_cp = true;
		r->incarnation = ul_get_64(buf + KIB_REJ_OFF_INC, r->be);
		cp_decode(buf + KIB_REJ_OFF_CP, &r->cp, r->be);
		return KIB_REJ_SIZE;
	}
	return KIB_REJ_MIN_SIZE;
}
