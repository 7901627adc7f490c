/* SPDX-License-Identifier: MIT */
/*
 * ping_info.h - the ping/push payload (struct lnet_ping_info on the wire).
 * Written in the sender's byte order; a reader detects a swapped magic.
 */
#ifndef ULNET_CORE_PING_INFO_H
#define ULNET_CORE_PING_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ulnet/nid.h"

#define LNET_PROTO_PING_MAGIC 0x70696e67u   /* "ping" */
#define LNET_PING_INFO_HDR_SIZE 16
#define LNET_PING_NI_NID4_SIZE 16
#define LNET_PING_INFO_MIN_SIZE (16 + 16 * 16)  /* 272 */
#define LNET_PING_INFO_LNETCTL_SIZE 3960

#define LNET_NI_STATUS_UP 0x15aac0deu
#define LNET_NI_STATUS_DOWN 0xdeadfaceu
#define LNET_NI_STATUS_INVALID 0u

enum lnet_ping_feat {
	LNET_PING_FEAT_BASE = 0x01,
	LNET_PING_FEAT_NI_STATUS = 0x02,
	LNET_PING_FEAT_RTE_DISABLED = 0x04,
	LNET_PING_FEAT_MULTI_RAIL = 0x08,
	LNET_PING_FEAT_DISCOVERY = 0x10,
	LNET_PING_FEAT_LARGE_ADDR = 0x20,
	LNET_PING_FEAT_PRIMARY_LARGE = 0x40,
	LNET_PING_FEAT_METADATA = 0x80,
};

struct lnet_ping_ni {
	ulnet_nid_t nid;
	uint32_t status;     /* entry 0 (0@lo): the sender's sequence number */
	uint32_t msg_size;   /* entry 0 with LARGE_ADDR: total size in bytes */
};

struct lnet_ping_info {
	uint32_t features;
	ulnet_pid_t pid;
	unsigned nnis;             /* entries decoded into `nis` (0@lo first) */
	unsigned nnis_wire;        /* entries the sender listed (may exceed nnis) */
	unsigned nnis_skipped;     /* decode: listed, but not a NID we can parse */
	struct lnet_ping_ni *nis;  /* caller's array */
	unsigned max_nis;          /* its capacity */
	bool swapped;              /* decode: sender was of the other byte order */
	bool truncated;            /* decode: the buffer ended before the list */
};

/*
 * Encode in little-endian (our byte order). NIDs with no nid4 form go in the
 * large-address section (LARGE_ADDR set by the caller in `features`).
 * Returns the bytes written or -ENOSPC.
 */
ssize_t lnet_ping_info_encode(const struct lnet_ping_info *pi, uint8_t *buf, size_t len);

/* Size that lnet_ping_info_encode() needs. */
size_t lnet_ping_info_size(const struct lnet_ping_info *pi);

/*
 * Decode and validate as the kernel does: at least 16 bytes (-EMSGSIZE),
 * magic in either order (-EPROTO), NI_STATUS set (-EPROTO), 1..4096 entries
 * (-EPROTO), entry 0 whole (32 bytes, -EMSGSIZE) and 0@lo (-EPROTO); with
 * LARGE_ADDR, a total size below the nid4 list is -EPROTO. A buffer that
 * ends inside the list sets `truncated` and decodes what is whole. Returns
 * the bytes consumed.
 */
ssize_t lnet_ping_info_decode(const uint8_t *buf, size_t len, struct lnet_ping_info *pi);

/*
 * The entry naming the sender's primary NID, by the kernel's rule: with
 * PRIMARY_LARGE the first large (non-nid4) NID, else the first entry after
 * 0@lo. NULL when the info lists nothing but 0@lo.
 */
const struct lnet_ping_ni *lnet_ping_info_primary(const struct lnet_ping_info *pi);

/* Whether `features` needs PRIMARY_LARGE for NIs listed in this order
 * (0@lo aside): the first one has no nid4 form (the kernel's rule). */
bool lnet_ping_info_primary_is_large(const ulnet_nid_t *first_ni);

#endif
