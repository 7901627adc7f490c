/* SPDX-License-Identifier: MIT */
/*
 * srpc_wire.h - the LNet selftest RPC message (struct srpc_msg) on the wire.
 *
 * Every SRPC request and reply is one 160-byte message: a 24-byte header
 * (magic, version, type, two reserved words, session features) and a
 * 136-byte body whose packed layout depends on the type. It travels in the
 * sender's byte order; the receiver detects a swapped magic. We decode
 * either order and always encode little-endian (what the kernel sends on
 * x86). Field by field through util_bytes.h: no struct overlay.
 */
#ifndef ULNET_SELFTEST_SRPC_WIRE_H
#define ULNET_SELFTEST_SRPC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRPC_MSG_SIZE 160
#define SRPC_HDR_SIZE 24
#define SRPC_BODY_SIZE (SRPC_MSG_SIZE - SRPC_HDR_SIZE)
#define SRPC_MSG_MAGIC 0xeeb0f00du
#define SRPC_MSG_VERSION 1u
#define SRPC_NAME_SIZE 32              /* LST_NAME_SIZE */
#define SRPC_NID4_ANY UINT64_MAX       /* LNET_NID_ANY */

/* Portals: framework requests, test requests, replies and bulk. */
#define SRPC_FRAMEWORK_REQUEST_PORTAL 51
#define SRPC_REQUEST_PORTAL 50
#define SRPC_RDMA_PORTAL 52

/* Services: a request PUT's match bits are its service id. */
enum srpc_service {
	SRPC_SERVICE_DEBUG = 0,
	SRPC_SERVICE_MAKE_SESSION = 1,
	SRPC_SERVICE_REMOVE_SESSION = 2,
	SRPC_SERVICE_BATCH = 3,
	SRPC_SERVICE_TEST = 4,
	SRPC_SERVICE_QUERY_STAT = 5,
	SRPC_SERVICE_JOIN = 6,
	SRPC_FRAMEWORK_SERVICE_MAX_ID = 10,
	SRPC_SERVICE_BRW = 11,
	SRPC_SERVICE_PING = 12,
	SRPC_SERVICE_MAX_ID = 13,       /* one past the last */
};

enum srpc_msg_type {
	SRPC_MSG_MKSN_REQST = 0,
	SRPC_MSG_MKSN_REPLY = 1,
	SRPC_MSG_RMSN_REQST = 2,
	SRPC_MSG_RMSN_REPLY = 3,
	SRPC_MSG_BATCH_REQST = 4,
	SRPC_MSG_BATCH_REPLY = 5,
	SRPC_MSG_STAT_REQST = 6,
	SRPC_MSG_STAT_REPLY = 7,
	SRPC_MSG_TEST_REQST = 8,
	SRPC_MSG_TEST_REPLY = 9,
	SRPC_MSG_DEBUG_REQST = 10,
	SRPC_MSG_DEBUG_REPLY = 11,
	SRPC_MSG_BRW_REQST = 12,
	SRPC_MSG_BRW_REPLY = 13,
	SRPC_MSG_PING_REQST = 14,
	SRPC_MSG_PING_REPLY = 15,
	SRPC_MSG_JOIN_REQST = 16,
	SRPC_MSG_JOIN_REPLY = 17,
	SRPC_MSG_TYPE_COUNT = 18,
};

/* Session features (LST_FEAT_*). */
#define LST_FEAT_BULK_LEN 0x1u
#define LST_FEATS_MASK LST_FEAT_BULK_LEN

#define SRPC_BATCH_OPC_RUN 1
#define SRPC_BATCH_OPC_STOP 2
#define SRPC_BATCH_OPC_QUERY 3

#define LST_BRW_READ 1
#define LST_BRW_WRITE 2
#define LST_BRW_CHECK_NONE 1
#define LST_BRW_CHECK_SIMPLE 2
#define LST_BRW_CHECK_FULL 3
#define LST_BRW_CHECK_DISCARD 4
#define LST_BRW_MAGIC 0xeeb0eeb1eeb2eeb3ULL
#define LST_BRW_POISON 0xbeefbeefbeefbeefULL
#define LST_PING_TEST_MAGIC 0xbabefaceu
#define LST_MAX_CONCUR 1024
#define SRPC_PAGE_SIZE 4096              /* brw pattern unit (kernel PAGE_SIZE on x86) */
#define SRPC_ID_PACKED_SIZE 12           /* nid4 + pid: test-add destinations */

/* The request service for a message type and the reverse. */
int srpc_service2request(int service);   /* -1 for no such service */
int srpc_service2reply(int service);

struct srpc_sid {
	uint64_t nid;      /* nid4 of the console */
	int64_t stamp;     /* ms */
};

/* --- bodies (host order); names are raw 32-byte fields ----------------------- */

struct srpc_mksn_reqst { uint64_t rpyid; struct srpc_sid sid; uint32_t force; char name[SRPC_NAME_SIZE]; };
struct srpc_mksn_reply { uint32_t status; struct srpc_sid sid; uint32_t timeout; char name[SRPC_NAME_SIZE]; };
struct srpc_rmsn_reqst { uint64_t rpyid; struct srpc_sid sid; };
struct srpc_rmsn_reply { uint32_t status; struct srpc_sid sid; };
struct srpc_join_reqst { uint64_t rpyid; struct srpc_sid sid; char group[SRPC_NAME_SIZE]; };
struct srpc_join_reply { uint32_t status; struct srpc_sid sid; uint32_t timeout; char session[SRPC_NAME_SIZE]; };
struct srpc_debug_reqst { uint64_t rpyid; struct srpc_sid sid; uint32_t flags; };
struct srpc_debug_reply { uint32_t status; struct srpc_sid sid; uint32_t timeout; uint32_t nbatch; char name[SRPC_NAME_SIZE]; };
struct srpc_batch_reqst { uint64_t rpyid; struct srpc_sid sid; uint64_t bid; uint32_t opc, testidx, arg; };
struct srpc_batch_reply { uint32_t status; struct srpc_sid sid; uint32_t active; uint32_t time; };
struct srpc_stat_reqst { uint64_t rpyid; struct srpc_sid sid; uint32_t type; };

struct sfw_counters { uint32_t running_ms, active_batches, zombie_sessions, brw_errors, ping_errors; };
struct srpc_counters { uint32_t errors, rpcs_sent, rpcs_rcvd, rpcs_dropped, rpcs_expired; uint64_t bulk_get, bulk_put; };
struct lnet_counters_common {
	uint32_t msgs_alloc, msgs_max, errors, send_count, recv_count, route_count, drop_count;
	uint64_t send_length, recv_length, route_length, drop_length;
};
struct srpc_stat_reply {
	uint32_t status;
	struct srpc_sid sid;
	struct sfw_counters fw;
	struct srpc_counters rpc;
	struct lnet_counters_common lnet;
};

/* The 12-byte parameter of a test-add request: its meaning depends on the
 * service and, for brw, on LST_FEAT_BULK_LEN; the decoder picks it. */
enum srpc_test_param_kind { SRPC_TEST_PARAM_PING, SRPC_TEST_PARAM_BULK_V0, SRPC_TEST_PARAM_BULK_V1, SRPC_TEST_PARAM_RAW };
struct srpc_test_param {
	enum srpc_test_param_kind kind;
	uint32_t png_size, png_flags;                 /* ping */
	uint32_t blk_opc, blk_npg, blk_flags;          /* bulk v0 (pages) */
	uint32_t blk_len, blk_offset;                  /* bulk v1 (bytes); opc and flags as v0 */
	uint8_t raw[12];                               /* the bytes as sent (sender's order) */
};
struct srpc_test_reqst {
	uint64_t rpyid, bulkid;
	struct srpc_sid sid;
	uint64_t bid;
	uint32_t service, loop, concur;
	uint8_t is_client, stop_onerr;
	uint32_t ndest;
	struct srpc_test_param param;
};
struct srpc_test_reply { uint32_t status; struct srpc_sid sid; };
struct srpc_ping_reqst { uint64_t rpyid; uint32_t magic, seq; uint64_t time_sec, time_nsec; };
struct srpc_ping_reply { uint32_t status, magic, seq; };
struct srpc_brw_reqst { uint64_t rpyid, bulkid; uint32_t rw, len, flags; };
struct srpc_brw_reply { uint32_t status; };

struct srpc_msg {
	uint32_t version;
	uint32_t type;            /* enum srpc_msg_type */
	uint32_t reserved0, reserved1;
	uint32_t ses_feats;
	bool swapped;             /* decode: the sender's byte order differs */
	union {
		struct srpc_mksn_reqst mksn_reqst;
		struct srpc_mksn_reply mksn_reply;
		struct srpc_rmsn_reqst rmsn_reqst;
		struct srpc_rmsn_reply rmsn_reply;
		struct srpc_join_reqst join_reqst;
		struct srpc_join_reply join_reply;
		struct srpc_debug_reqst dbg_reqst;
		struct srpc_debug_reply dbg_reply;
		struct srpc_batch_reqst bat_reqst;
		struct srpc_batch_reply bat_reply;
		struct srpc_stat_reqst stat_reqst;
		struct srpc_stat_reply stat_reply;
		struct srpc_test_reqst tes_reqst;
		struct srpc_test_reply tes_reply;
		struct srpc_ping_reqst ping_reqst;
		struct srpc_ping_reply ping_reply;
		struct srpc_brw_reqst brw_reqst;
		struct srpc_brw_reply brw_reply;
	} body;
};

/* Packed size of each body on the wire (the rest of the 136 bytes is 0). */
size_t srpc_body_size(uint32_t type);

/*
 * Read only the header: -EMSGSIZE under 24 bytes, -EPROTO for a magic in
 * neither order. Sets version/type/reserved/ses_feats/swapped.
 */
int srpc_msg_decode_hdr(const uint8_t *buf, size_t len, struct srpc_msg *msg);

/*
 * Decode a whole message: -EMSGSIZE under 160 bytes (the kernel drops any
 * other length), -EPROTO for a bad magic, -EBADMSG for an unknown type
 * (the header is decoded anyway). The body is zeroed, then filled field by
 * field, each checked against `len`. Version is not checked (the caller
 * answers EPROTO to a wrong one, as the kernel does).
 */
int srpc_msg_decode(const uint8_t *buf, size_t len, struct srpc_msg *msg);

/*
 * Encode little-endian into `buf`: 160 bytes, unused body bytes zero; the
 * magic is written by the encoder, the rest comes from `msg`. A test request
 * with param.kind RAW writes param.raw as is. Returns 160, -ENOSPC if `len`
 * is short, -EINVAL for an unknown type.
 */
int srpc_msg_encode(const struct srpc_msg *msg, uint8_t *buf, size_t len);

#endif
