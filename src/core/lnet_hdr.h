/* SPDX-License-Identifier: MIT */
/*
 * lnet_hdr.h - the LNet message header: host struct and wire codecs.
 *
 * Two wire forms: nid4 (72 bytes, socklnd V1-V3) and nid16 (96 bytes, V4,
 * NIDs as 20-byte large NIDs). Numeric fields are always little-endian; wire
 * handles are opaque and echoed (we write them LE); PUT hdr_data is written
 * LE (the kernel copies it raw, i.e. LE on every x86/arm64 node).
 * A connection picks one codec (const table) at HELLO time; the data path
 * calls through it with no version test.
 */
#ifndef ULNET_CORE_LNET_HDR_H
#define ULNET_CORE_LNET_HDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ulnet/ulnet.h"

#define LNET_HDR_NID4_SIZE 72
#define LNET_HDR_NID16_SIZE 96
#define LNET_HDR_MAX_SIZE LNET_HDR_NID16_SIZE
#define LNET_WIRE_HANDLE_SIZE 16

typedef struct lnet_wire_handle {
	uint64_t wh_interface_cookie;
	uint64_t wh_object_cookie;
} lnet_wire_handle_t;

/* "No ACK wanted": both cookies all-ones. */
#define LNET_WIRE_HANDLE_NONE ((lnet_wire_handle_t){ ~0ULL, ~0ULL })

struct lnet_hdr {
	ulnet_nid_t dest_nid;
	ulnet_nid_t src_nid;
	ulnet_pid_t dest_pid;
	ulnet_pid_t src_pid;
	uint32_t type;            /* enum ulnet_msg_type */
	uint32_t payload_length;
	union {
		struct {
			lnet_wire_handle_t ack_wmd;
			uint64_t match_bits;
			uint64_t hdr_data;
			uint32_t ptl_index;
			uint32_t offset;
		} put;
		struct {
			lnet_wire_handle_t return_wmd;
			uint64_t match_bits;
			uint32_t ptl_index;
			uint32_t src_offset;
			uint32_t sink_length;
		} get;
		struct {
			lnet_wire_handle_t dst_wmd;
			uint64_t match_bits;
			uint32_t mlength;
		} ack;
		struct {
			lnet_wire_handle_t dst_wmd;
		} reply;
		struct {
			uint64_t incarnation;
			uint32_t type;
		} hello;
	} msg;
};

/*
 * Encoders write exactly `size` bytes and return it, or -ENOSPC if `len` is
 * short, -ERANGE (nid4 only) if a NID is large, -EPROTO for an unknown type.
 * Decoders return the bytes consumed, -EMSGSIZE if `len` is short (so every
 * truncated prefix fails), -EPROTO for an unknown message type, and -EINVAL
 * for a malformed large NID.
 */
ssize_t lnet_hdr_encode_nid4(const struct lnet_hdr *h, uint8_t *buf, size_t len);
ssize_t lnet_hdr_decode_nid4(const uint8_t *buf, size_t len, struct lnet_hdr *h);
ssize_t lnet_hdr_encode_nid16(const struct lnet_hdr *h, uint8_t *buf, size_t len);
ssize_t lnet_hdr_decode_nid16(const uint8_t *buf, size_t len, struct lnet_hdr *h);

/* The codec a connection uses, chosen once. */
struct lnet_hdr_codec {
	size_t size;   /* 72 or 96 */
	ssize_t (*encode)(const struct lnet_hdr *h, uint8_t *buf, size_t len);
	ssize_t (*decode)(const uint8_t *buf, size_t len, struct lnet_hdr *h);
};
extern const struct lnet_hdr_codec lnet_hdr_codec_nid4;
extern const struct lnet_hdr_codec lnet_hdr_codec_nid16;

#endif
