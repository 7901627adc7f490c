/* SPDX-License-Identifier: MIT */
/*
 * lnet_hdr.c - LNet message header codecs, nid4 (72 bytes) and nid16 (96).
 *
 * Both forms share one layout after the two NIDs: four LE u32 fields and a
 * 40-byte message union. Numeric fields are little-endian whatever the
 * sender's byte order; wire handles and PUT hdr_data are written LE too (the
 * kernel copies them raw, which is LE on every node that exists).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/lnet_hdr.h"
#include "util/util_bytes.h"

/* nid4 form */
#define LNET_HDR_NID4_OFF_DEST_NID	0
#define LNET_HDR_NID4_OFF_SRC_NID	8
#define LNET_HDR_NID4_OFF_DEST_PID	16
#define LNET_HDR_NID4_OFF_SRC_PID	20
#define LNET_HDR_NID4_OFF_TYPE		24
#define LNET_HDR_NID4_OFF_PAYLOAD_LEN	28
#define LNET_HDR_NID4_OFF_MSG		32

/* nid16 form: NIDs are 20-byte struct lnet_nid */
#define LNET_HDR_NID16_OFF_DEST_NID	0
#define LNET_HDR_NID16_OFF_SRC_NID	20
#define LNET_HDR_NID16_OFF_DEST_PID	40
#define LNET_HDR_NID16_OFF_SRC_PID	44
#define LNET_HDR_NID16_OFF_TYPE		48
#define LNET_HDR_NID16_OFF_PAYLOAD_LEN	52
#define LNET_HDR_NID16_OFF_MSG		56

/* The union, offsets relative to its start; always 40 bytes on the wire. */
#define LNET_HDR_MSG_SIZE		40
#define LNET_HDR_MSG_OFF_WMD		0	/* every type but HELLO */
#define LNET_HDR_MSG_OFF_MATCH		16	/* PUT, GET, ACK */
#define LNET_HDR_MSG_OFF_PUT_HDR_DATA	24
#define LNET_HDR_MSG_OFF_PUT_PTL	32
#define LNET_HDR_MSG_OFF_PUT_OFFSET	36
#define LNET_HDR_MSG_OFF_GET_PTL	24
#define LNET_HDR_MSG_OFF_GET_SRC_OFFSET	28
#define LNET_HDR_MSG_OFF_GET_SINK_LEN	32
#define LNET_HDR_MSG_OFF_ACK_MLENGTH	24
#define LNET_HDR_MSG_OFF_HELLO_INC	0
#define LNET_HDR_MSG_OFF_HELLO_TYPE	8

_Static_assert(LNET_HDR_NID4_OFF_SRC_NID == LNET_HDR_NID4_OFF_DEST_NID + 8, "nid4 src_nid");
_Static_assert(LNET_HDR_NID4_OFF_DEST_PID == LNET_HDR_NID4_OFF_SRC_NID + 8, "nid4 dest_pid");
_Static_assert(LNET_HDR_NID4_OFF_SRC_PID == LNET_HDR_NID4_OFF_DEST_PID + 4, "nid4 src_pid");
_Static_assert(LNET_HDR_NID4_OFF_TYPE == LNET_HDR_NID4_OFF_SRC_PID + 4, "nid4 type");
_Static_assert(LNET_HDR_NID4_OFF_PAYLOAD_LEN == LNET_HDR_NID4_OFF_TYPE + 4, "nid4 payload_length");
_Static_assert(LNET_HDR_NID4_OFF_MSG == LNET_HDR_NID4_OFF_PAYLOAD_LEN + 4, "nid4 msg");
_Static_assert(LNET_HDR_NID4_SIZE == LNET_HDR_NID4_OFF_MSG + LNET_HDR_MSG_SIZE, "nid4 is 72 bytes");

_Static_assert(LNET_HDR_NID16_OFF_SRC_NID == LNET_HDR_NID16_OFF_DEST_NID + ULNET_NID_WIRE_SIZE, "nid16 src_nid");
_Static_assert(LNET_HDR_NID16_OFF_DEST_PID == LNET_HDR_NID16_OFF_SRC_NID + ULNET_NID_WIRE_SIZE, "nid16 dest_pid");
_Static_assert(LNET_HDR_NID16_OFF_SRC_PID == LNET_HDR_NID16_OFF_DEST_PID + 4, "nid16 src_pid");
_Static_assert(LNET_HDR_NID16_OFF_TYPE == LNET_HDR_NID16_OFF_SRC_PID + 4, "nid16 type");
_Static_assert(LNET_HDR_NID16_OFF_PAYLOAD_LEN == LNET_HDR_NID16_OFF_TYPE + 4, "nid16 payload_length");
_Static_assert(LNET_HDR_NID16_OFF_MSG == LNET_HDR_NID16_OFF_PAYLOAD_LEN + 4, "nid16 msg");
_Static_assert(LNET_HDR_NID16_SIZE == LNET_HDR_NID16_OFF_MSG + LNET_HDR_MSG_SIZE, "nid16 is 96 bytes");
_Static_assert(LNET_HDR_MAX_SIZE >= LNET_HDR_NID4_SIZE && LNET_HDR_MAX_SIZE >= LNET_HDR_NID16_SIZE, "max size");

_Static_assert(LNET_WIRE_HANDLE_SIZE == 16, "wire handle is two u64 cookies");
_Static_assert(LNET_HDR_MSG_OFF_MATCH == LNET_HDR_MSG_OFF_WMD + LNET_WIRE_HANDLE_SIZE, "match after wmd");
/* PUT: wmd 16 + match 8 + hdr_data 8 + ptl 4 + offset 4 = 40 */
_Static_assert(LNET_HDR_MSG_OFF_PUT_HDR_DATA == LNET_HDR_MSG_OFF_MATCH + 8, "put hdr_data");
_Static_assert(LNET_HDR_MSG_OFF_PUT_PTL == LNET_HDR_MSG_OFF_PUT_HDR_DATA + 8, "put ptl_index");
_Static_assert(LNET_HDR_MSG_OFF_PUT_OFFSET == LNET_HDR_MSG_OFF_PUT_PTL + 4, "put offset");
_Static_assert(LNET_HDR_MSG_OFF_PUT_OFFSET + 4 == LNET_HDR_MSG_SIZE, "PUT fills the union");
/* GET: wmd 16 + match 8 + ptl 4 + src_offset 4 + sink_length 4 = 36 */
_Static_assert(LNET_HDR_MSG_OFF_GET_PTL == LNET_HDR_MSG_OFF_MATCH + 8, "get ptl_index");
_Static_assert(LNET_HDR_MSG_OFF_GET_SRC_OFFSET == LNET_HDR_MSG_OFF_GET_PTL + 4, "get src_offset");
_Static_assert(LNET_HDR_MSG_OFF_GET_SINK_LEN == LNET_HDR_MSG_OFF_GET_SRC_OFFSET + 4, "get sink_length");
_Static_assert(LNET_HDR_MSG_OFF_GET_SINK_LEN + 4 <= LNET_HDR_MSG_SIZE, "GET fits");
/* ACK: wmd 16 + match 8 + mlength 4 = 28 */
_Static_assert(LNET_HDR_MSG_OFF_ACK_MLENGTH == LNET_HDR_MSG_OFF_MATCH + 8, "ack mlength");
/* HELLO: incarnation 8 + type 4 = 12 */
_Static_assert(LNET_HDR_MSG_OFF_HELLO_TYPE == LNET_HDR_MSG_OFF_HELLO_INC + 8, "hello type");

/* The codec's helpers are all inlined into the four entry points (one
 * call per header); the loads and stores are util_bytes.h's word-sized
 * ones. */
#define HDR_INLINE static inline __attribute__((always_inline))

/* ulnet_nid_to_nid4() / ulnet_nid_from_nid4() inline: two of each per
 * header on the nid4 wire form, every message. */
HDR_INLINE int nid_to_nid4(const ulnet_nid_t *nid, ulnet_nid4_t *nid4)
{
	if (nid->type == ULNET_LND_ANY) {
		*nid4 = ULNET_NID4_ANY;
		return 0;
	}
	if (nid->size != 0)
		return -ERANGE;
	*nid4 = (uint64_t)nid->type << 48 | (uint64_t)nid->num << 32 | ul_get_be32(nid->addr);
	return 0;
}

HDR_INLINE void nid_from_nid4(ulnet_nid4_t nid4, ulnet_nid_t *nid)
{
	if (nid4 == ULNET_NID4_ANY) {
		*nid = ULNET_NID_ANY;
		return;
	}
	memset(nid, 0, sizeof(*nid));
	nid->type = (uint8_t)(nid4 >> 48);
	nid->num = (uint16_t)(nid4 >> 32);
	ul_put_be32(nid->addr, (uint32_t)nid4);
}

static bool type_known(uint32_t type)
{
	return type <= ULNET_MSG_HELLO;
}

HDR_INLINE void put_wmd(uint8_t *p, const lnet_wire_handle_t *wh)
{
	ul_put_le64(p, wh->wh_interface_cookie);
	ul_put_le64(p + 8, wh->wh_object_cookie);
}

HDR_INLINE void get_wmd(const uint8_t *p, lnet_wire_handle_t *wh)
{
	wh->wh_interface_cookie = ul_get_le64(p);
	wh->wh_object_cookie = ul_get_le64(p + 8);
}

/* Writes the 40-byte union; unused bytes are zero as receivers expect. */
HDR_INLINE int msg_encode(const struct lnet_hdr *h, uint8_t *u)
{
	memset(u, 0, LNET_HDR_MSG_SIZE);
	switch (h->type) {
	case ULNET_MSG_PUT:
		put_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.put.ack_wmd);
		ul_put_le64(u + LNET_HDR_MSG_OFF_MATCH, h->msg.put.match_bits);
		ul_put_le64(u + LNET_HDR_MSG_OFF_PUT_HDR_DATA, h->msg.put.hdr_data);
		ul_put_le32(u + LNET_HDR_MSG_OFF_PUT_PTL, h->msg.put.ptl_index);
		ul_put_le32(u + LNET_HDR_MSG_OFF_PUT_OFFSET, h->msg.put.offset);
		return 0;
	case ULNET_MSG_GET:
		put_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.get.return_wmd);
		ul_put_le64(u + LNET_HDR_MSG_OFF_MATCH, h->msg.get.match_bits);
		ul_put_le32(u + LNET_HDR_MSG_OFF_GET_PTL, h->msg.get.ptl_index);
		ul_put_le32(u + LNET_HDR_MSG_OFF_GET_SRC_OFFSET, h->msg.get.src_offset);
		ul_put_le32(u + LNET_HDR_MSG_OFF_GET_SINK_LEN, h->msg.get.sink_length);
		return 0;
	case ULNET_MSG_ACK:
		put_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.ack.dst_wmd);
		ul_put_le64(u + LNET_HDR_MSG_OFF_MATCH, h->msg.ack.match_bits);
		ul_put_le32(u + LNET_HDR_MSG_OFF_ACK_MLENGTH, h->msg.ack.mlength);
		return 0;
	case ULNET_MSG_REPLY:
		put_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.reply.dst_wmd);
		return 0;
	case ULNET_MSG_HELLO:
		ul_put_le64(u + LNET_HDR_MSG_OFF_HELLO_INC, h->msg.hello.incarnation);
		ul_put_le32(u + LNET_HDR_MSG_OFF_HELLO_TYPE, h->msg.hello.type);
		return 0;
	default:
		return -EPROTO;
	}
}

/* Reads the union for h->type (already set); bytes a type does not use are
 * ignored, as the kernel does. */
HDR_INLINE int msg_decode(const uint8_t *u, struct lnet_hdr *h)
{
	memset(&h->msg, 0, sizeof(h->msg));
	switch (h->type) {
	case ULNET_MSG_PUT:
		get_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.put.ack_wmd);
		h->msg.put.match_bits = ul_get_le64(u + LNET_HDR_MSG_OFF_MATCH);
		h->msg.put.hdr_data = ul_get_le64(u + LNET_HDR_MSG_OFF_PUT_HDR_DATA);
		h->msg.put.ptl_index = ul_get_le32(u + LNET_HDR_MSG_OFF_PUT_PTL);
		h->msg.put.offset = ul_get_le32(u + LNET_HDR_MSG_OFF_PUT_OFFSET);
		return 0;
	case ULNET_MSG_GET:
		get_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.get.return_wmd);
		h->msg.get.match_bits = ul_get_le64(u + LNET_HDR_MSG_OFF_MATCH);
		h->msg.get.ptl_index = ul_get_le32(u + LNET_HDR_MSG_OFF_GET_PTL);
		h->msg.get.src_offset = ul_get_le32(u + LNET_HDR_MSG_OFF_GET_SRC_OFFSET);
		h->msg.get.sink_length = ul_get_le32(u + LNET_HDR_MSG_OFF_GET_SINK_LEN);
		return 0;
	case ULNET_MSG_ACK:
		get_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.ack.dst_wmd);
		h->msg.ack.match_bits = ul_get_le64(u + LNET_HDR_MSG_OFF_MATCH);
		h->msg.ack.mlength = ul_get_le32(u + LNET_HDR_MSG_OFF_ACK_MLENGTH);
		return 0;
	case ULNET_MSG_REPLY:
		get_wmd(u + LNET_HDR_MSG_OFF_WMD, &h->msg.reply.dst_wmd);
		return 0;
	case ULNET_MSG_HELLO:
		h->msg.hello.incarnation = ul_get_le64(u + LNET_HDR_MSG_OFF_HELLO_INC);
		h->msg.hello.type = ul_get_le32(u + LNET_HDR_MSG_OFF_HELLO_TYPE);
		return 0;
	default:
		return -EPROTO;
	}
}

/* pids, type and payload_length: the same four LE words in both forms */
HDR_INLINE void common_encode(const struct lnet_hdr *h, uint8_t *p)
{
	ul_put_le32(p, h->dest_pid);
	ul_put_le32(p + 4, h->src_pid);
	ul_put_le32(p + 8, h->type);
	ul_put_le32(p + 12, h->payload_length);
}

HDR_INLINE void common_decode(const uint8_t *p, struct lnet_hdr *h)
{
	h->dest_pid = ul_get_le32(p);
	h->src_pid = ul_get_le32(p + 4);
	h->type = ul_get_le32(p + 8);
	h->payload_length = ul_get_le32(p + 12);
}

ssize_t lnet_hdr_encode_nid4(const struct lnet_hdr *h, uint8_t *buf, size_t len)
{
	ulnet_nid4_t dst, src;
	int rc;

	if (len < LNET_HDR_NID4_SIZE)
		return -ENOSPC;
	if (!type_known(h->type))
		return -EPROTO;
	if (nid_to_nid4(&h->dest_nid, &dst) || nid_to_nid4(&h->src_nid, &src))
		return -ERANGE;
	rc = msg_encode(h, buf + LNET_HDR_NID4_OFF_MSG);
	if (rc)
		return rc;
	ul_put_le64(buf + LNET_HDR_NID4_OFF_DEST_NID, dst);
	ul_put_le64(buf + LNET_HDR_NID4_OFF_SRC_NID, src);
	common_encode(h, buf + LNET_HDR_NID4_OFF_DEST_PID);
	return LNET_HDR_NID4_SIZE;
}

ssize_t lnet_hdr_decode_nid4(const uint8_t *buf, size_t len, struct lnet_hdr *h)
{
	int rc;

	if (len < LNET_HDR_NID4_SIZE)
		return -EMSGSIZE;
	if (!type_known(ul_get_le32(buf + LNET_HDR_NID4_OFF_TYPE)))
		return -EPROTO;
	common_decode(buf + LNET_HDR_NID4_OFF_DEST_PID, h);
	rc = msg_decode(buf + LNET_HDR_NID4_OFF_MSG, h);
	if (rc)
		return rc;
	nid_from_nid4(ul_get_le64(buf + LNET_HDR_NID4_OFF_DEST_NID), &h->dest_nid);
	nid_from_nid4(ul_get_le64(buf + LNET_HDR_NID4_OFF_SRC_NID), &h->src_nid);
	return LNET_HDR_NID4_SIZE;
}

ssize_t lnet_hdr_encode_nid16(const struct lnet_hdr *h, uint8_t *buf, size_t len)
{
	int rc;

	if (len < LNET_HDR_NID16_SIZE)
		return -ENOSPC;
	if (!type_known(h->type))
		return -EPROTO;
	rc = msg_encode(h, buf + LNET_HDR_NID16_OFF_MSG);
	if (rc)
		return rc;
	ulnet_nid_encode(&h->dest_nid, buf + LNET_HDR_NID16_OFF_DEST_NID);
	ulnet_nid_encode(&h->src_nid, buf + LNET_HDR_NID16_OFF_SRC_NID);
	common_encode(h, buf + LNET_HDR_NID16_OFF_DEST_PID);
	return LNET_HDR_NID16_SIZE;
}

ssize_t lnet_hdr_decode_nid16(const uint8_t *buf, size_t len, struct lnet_hdr *h)
{
	int rc;

	if (len < LNET_HDR_NID16_SIZE)
		return -EMSGSIZE;
	if (!type_known(ul_get_le32(buf + LNET_HDR_NID16_OFF_TYPE)))
		return -EPROTO;
	common_decode(buf + LNET_HDR_NID16_OFF_DEST_PID, h);
	rc = msg_decode(buf + LNET_HDR_NID16_OFF_MSG, h);
	if (rc)
		return rc;
	if (ulnet_nid_decode(buf + LNET_HDR_NID16_OFF_DEST_NID, &h->dest_nid) ||
	    ulnet_nid_decode(buf + LNET_HDR_NID16_OFF_SRC_NID, &h->src_nid))
		return -EINVAL;
	return LNET_HDR_NID16_SIZE;
}

const struct lnet_hdr_codec lnet_hdr_codec_nid4 = {
	.size = LNET_HDR_NID4_SIZE,
	.encode = lnet_hdr_encode_nid4,
	.decode = lnet_hdr_decode_nid4,
};

const struct lnet_hdr_codec lnet_hdr_codec_nid16 = {
	.size = LNET_HDR_NID16_SIZE,
	.encode = lnet_hdr_encode_nid16,
	.decode = lnet_hdr_decode_nid16,
};
