/* SPDX-License-Identifier: MIT */
/*
 * srpc_wire.c - encode and decode struct srpc_msg (see srpc_wire.h).
 *
 * Each body is described by a table of fields: wire offset (from the body),
 * wire size (1, 4, 8, or 32 for a name) and where the value lives in the
 * host struct. The tables drive both directions; the static asserts below
 * pin every packed offset and size to the kernel's layout (rpc.h, lnetst.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "selftest/srpc_wire.h"
#include "util/util_bytes.h"

#define HDR_OFF_MAGIC 0
#define HDR_OFF_VERSION 4
#define HDR_OFF_TYPE 8
#define HDR_OFF_RESERVED0 12
#define HDR_OFF_RESERVED1 16
#define HDR_OFF_SES_FEATS 20

_Static_assert(HDR_OFF_SES_FEATS + 4 == SRPC_HDR_SIZE, "header is 24 bytes");
_Static_assert(SRPC_HDR_SIZE + SRPC_BODY_SIZE == SRPC_MSG_SIZE, "message is 160 bytes");
_Static_assert(SRPC_BODY_SIZE == 136, "body union is 136 bytes (stat reply)");

struct field {
	uint8_t off;      /* in the body */
	uint8_t size;     /* 1, 2, 4, 8, or SRPC_NAME_SIZE (raw bytes) */
	uint16_t host;    /* offsetof in struct srpc_msg */
};

#define F(member, off, size) { (off), (size), (uint16_t)offsetof(struct srpc_msg, body.member) }
#define SID(m, off) F(m.sid.nid, off, 8), F(m.sid.stamp, (off) + 8, 8)

/* --- body layouts ------------------------------------------------------------ */

/* sid: nid4 (8) + stamp (8) */
#define SID_SIZE 16

#define MKSN_RQ_RPYID 0
#define MKSN_RQ_SID 8
#define MKSN_RQ_FORCE (MKSN_RQ_SID + SID_SIZE)
#define MKSN_RQ_NAME (MKSN_RQ_FORCE + 4)
#define MKSN_RQ_SIZE (MKSN_RQ_NAME + SRPC_NAME_SIZE)
_Static_assert(MKSN_RQ_FORCE == 24 && MKSN_RQ_SIZE == 60, "mksn request is 60 bytes");
static const struct field mksn_rq[] = {
	F(mksn_reqst.rpyid, MKSN_RQ_RPYID, 8), SID(mksn_reqst, MKSN_RQ_SID),
	F(mksn_reqst.force, MKSN_RQ_FORCE, 4), F(mksn_reqst.name, MKSN_RQ_NAME, SRPC_NAME_SIZE),
};

/* generic reply: status (4) + sid (16) */
#define RP_STATUS 0
#define RP_SID 4
#define RP_GENERIC_SIZE (RP_SID + SID_SIZE)
_Static_assert(RP_GENERIC_SIZE == 20, "generic reply is 20 bytes");

#define MKSN_RP_TIMEOUT RP_GENERIC_SIZE
#define MKSN_RP_NAME (MKSN_RP_TIMEOUT + 4)
#define MKSN_RP_SIZE (MKSN_RP_NAME + SRPC_NAME_SIZE)
_Static_assert(MKSN_RP_SIZE == 56, "mksn reply is 56 bytes");
static const struct field mksn_rp[] = {
	F(mksn_reply.status, RP_STATUS, 4), SID(mksn_reply, RP_SID),
	F(mksn_reply.timeout, MKSN_RP_TIMEOUT, 4), F(mksn_reply.name, MKSN_RP_NAME, SRPC_NAME_SIZE),
};

#define RMSN_RQ_SIZE (8 + SID_SIZE)
_Static_assert(RMSN_RQ_SIZE == 24, "rmsn request is 24 bytes");
static const struct field rmsn_rq[] = { F(rmsn_reqst.rpyid, 0, 8), SID(rmsn_reqst, 8) };
static const struct field rmsn_rp[] = { F(rmsn_reply.status, RP_STATUS, 4), SID(rmsn_reply, RP_SID) };

#define JOIN_RQ_GROUP (8 + SID_SIZE)
#define JOIN_RQ_SIZE (JOIN_RQ_GROUP + SRPC_NAME_SIZE)
_Static_assert(JOIN_RQ_SIZE == 56, "join request is 56 bytes");
static const struct field join_rq[] = {
	F(join_reqst.rpyid, 0, 8), SID(join_reqst, 8), F(join_reqst.group, JOIN_RQ_GROUP, SRPC_NAME_SIZE),
};
#define JOIN_RP_SIZE (RP_GENERIC_SIZE + 4 + SRPC_NAME_SIZE)
_Static_assert(JOIN_RP_SIZE == 56, "join reply is 56 bytes");
static const struct field join_rp[] = {
	F(join_reply.status, RP_STATUS, 4), SID(join_reply, RP_SID),
	F(join_reply.timeout, RP_GENERIC_SIZE, 4), F(join_reply.session, RP_GENERIC_SIZE + 4, SRPC_NAME_SIZE),
};

#define DBG_RQ_FLAGS (8 + SID_SIZE)
#define DBG_RQ_SIZE (DBG_RQ_FLAGS + 4)
_Static_assert(DBG_RQ_SIZE == 28, "debug request is 28 bytes");
static const struct field dbg_rq[] = { F(dbg_reqst.rpyid, 0, 8), SID(dbg_reqst, 8), F(dbg_reqst.flags, DBG_RQ_FLAGS, 4) };
#define DBG_RP_TIMEOUT RP_GENERIC_SIZE
#define DBG_RP_NBATCH (DBG_RP_TIMEOUT + 4)
#define DBG_RP_NAME (DBG_RP_NBATCH + 4)
#define DBG_RP_SIZE (DBG_RP_NAME + SRPC_NAME_SIZE)
_Static_assert(DBG_RP_SIZE == 60, "debug reply is 60 bytes");
static const struct field dbg_rp[] = {
	F(dbg_reply.status, RP_STATUS, 4), SID(dbg_reply, RP_SID), F(dbg_reply.timeout, DBG_RP_TIMEOUT, 4),
	F(dbg_reply.nbatch, DBG_RP_NBATCH, 4), F(dbg_reply.name, DBG_RP_NAME, SRPC_NAME_SIZE),
};

#define BAT_RQ_BID (8 + SID_SIZE)
#define BAT_RQ_OPC (BAT_RQ_BID + 8)
#define BAT_RQ_TESTIDX (BAT_RQ_OPC + 4)
#define BAT_RQ_ARG (BAT_RQ_TESTIDX + 4)
#define BAT_RQ_SIZE (BAT_RQ_ARG + 4)
_Static_assert(BAT_RQ_SIZE == 44, "batch request is 44 bytes");
static const struct field bat_rq[] = {
	F(bat_reqst.rpyid, 0, 8), SID(bat_reqst, 8), F(bat_reqst.bid, BAT_RQ_BID, 8),
	F(bat_reqst.opc, BAT_RQ_OPC, 4), F(bat_reqst.testidx, BAT_RQ_TESTIDX, 4), F(bat_reqst.arg, BAT_RQ_ARG, 4),
};
#define BAT_RP_ACTIVE RP_GENERIC_SIZE
#define BAT_RP_TIME (BAT_RP_ACTIVE + 4)
#define BAT_RP_SIZE (BAT_RP_TIME + 4)
_Static_assert(BAT_RP_SIZE == 28, "batch reply is 28 bytes");
static const struct field bat_rp[] = {
	F(bat_reply.status, RP_STATUS, 4), SID(bat_reply, RP_SID), F(bat_reply.active, BAT_RP_ACTIVE, 4),
	F(bat_reply.time, BAT_RP_TIME, 4),
};

#define STAT_RQ_TYPE (8 + SID_SIZE)
#define STAT_RQ_SIZE (STAT_RQ_TYPE + 4)
_Static_assert(STAT_RQ_SIZE == 28, "stat request is 28 bytes");
static const struct field stat_rq[] = { F(stat_reqst.rpyid, 0, 8), SID(stat_reqst, 8), F(stat_reqst.type, STAT_RQ_TYPE, 4) };

#define STAT_RP_FW RP_GENERIC_SIZE
#define SFW_COUNTERS_SIZE 20
#define STAT_RP_RPC (STAT_RP_FW + SFW_COUNTERS_SIZE)
#define SRPC_COUNTERS_SIZE 36
#define STAT_RP_LNET (STAT_RP_RPC + SRPC_COUNTERS_SIZE)
#define LNET_COUNTERS_COMMON_SIZE 60
#define STAT_RP_SIZE (STAT_RP_LNET + LNET_COUNTERS_COMMON_SIZE)
_Static_assert(STAT_RP_RPC == 40 && STAT_RP_LNET == 76, "stat reply counter offsets");
_Static_assert(STAT_RP_SIZE == 136, "stat reply is 136 bytes");
static const struct field stat_rp[] = {
	F(stat_reply.status, RP_STATUS, 4), SID(stat_reply, RP_SID),
	F(stat_reply.fw.running_ms, STAT_RP_FW + 0, 4), F(stat_reply.fw.active_batches, STAT_RP_FW + 4, 4),
	F(stat_reply.fw.zombie_sessions, STAT_RP_FW + 8, 4), F(stat_reply.fw.brw_errors, STAT_RP_FW + 12, 4),
	F(stat_reply.fw.ping_errors, STAT_RP_FW + 16, 4),
	F(stat_reply.rpc.errors, STAT_RP_RPC + 0, 4), F(stat_reply.rpc.rpcs_sent, STAT_RP_RPC + 4, 4),
	F(stat_reply.rpc.rpcs_rcvd, STAT_RP_RPC + 8, 4), F(stat_reply.rpc.rpcs_dropped, STAT_RP_RPC + 12, 4),
	F(stat_reply.rpc.rpcs_expired, STAT_RP_RPC + 16, 4), F(stat_reply.rpc.bulk_get, STAT_RP_RPC + 20, 8),
	F(stat_reply.rpc.bulk_put, STAT_RP_RPC + 28, 8),
	F(stat_reply.lnet.msgs_alloc, STAT_RP_LNET + 0, 4), F(stat_reply.lnet.msgs_max, STAT_RP_LNET + 4, 4),
	F(stat_reply.lnet.errors, STAT_RP_LNET + 8, 4), F(stat_reply.lnet.send_count, STAT_RP_LNET + 12, 4),
	F(stat_reply.lnet.recv_count, STAT_RP_LNET + 16, 4), F(stat_reply.lnet.route_count, STAT_RP_LNET + 20, 4),
	F(stat_reply.lnet.drop_count, STAT_RP_LNET + 24, 4), F(stat_reply.lnet.send_length, STAT_RP_LNET + 28, 8),
	F(stat_reply.lnet.recv_length, STAT_RP_LNET + 36, 8), F(stat_reply.lnet.route_length, STAT_RP_LNET + 44, 8),
	F(stat_reply.lnet.drop_length, STAT_RP_LNET + 52, 8),
};
_Static_assert(STAT_RP_LNET + 52 + 8 == STAT_RP_SIZE, "lnet counters end the body");

#define TES_RQ_BULKID 8
#define TES_RQ_SID 16
#define TES_RQ_BID (TES_RQ_SID + SID_SIZE)
#define TES_RQ_SERVICE (TES_RQ_BID + 8)
#define TES_RQ_LOOP (TES_RQ_SERVICE + 4)
#define TES_RQ_CONCUR (TES_RQ_LOOP + 4)
#define TES_RQ_IS_CLIENT (TES_RQ_CONCUR + 4)
#define TES_RQ_STOP_ONERR (TES_RQ_IS_CLIENT + 1)
#define TES_RQ_NDEST (TES_RQ_STOP_ONERR + 1)
#define TES_RQ_PARAM (TES_RQ_NDEST + 4)
#define TES_PARAM_SIZE 12
#define TES_RQ_SIZE (TES_RQ_PARAM + TES_PARAM_SIZE)
_Static_assert(TES_RQ_IS_CLIENT == 52 && TES_RQ_NDEST == 54 && TES_RQ_PARAM == 58, "test request offsets");
_Static_assert(TES_RQ_SIZE == 70, "test request is 70 bytes");
static const struct field tes_rq[] = {
	F(tes_reqst.rpyid, 0, 8), F(tes_reqst.bulkid, TES_RQ_BULKID, 8), SID(tes_reqst, TES_RQ_SID),
	F(tes_reqst.bid, TES_RQ_BID, 8), F(tes_reqst.service, TES_RQ_SERVICE, 4),
	F(tes_reqst.loop, TES_RQ_LOOP, 4), F(tes_reqst.concur, TES_RQ_CONCUR, 4),
	F(tes_reqst.is_client, TES_RQ_IS_CLIENT, 1), F(tes_reqst.stop_onerr, TES_RQ_STOP_ONERR, 1),
	F(tes_reqst.ndest, TES_RQ_NDEST, 4),
};
/* the parameter union, by kind */
static const struct field tes_ping[] = {
	F(tes_reqst.param.png_size, TES_RQ_PARAM + 0, 4), F(tes_reqst.param.png_flags, TES_RQ_PARAM + 4, 4),
};
static const struct field tes_bulk_v0[] = {
	F(tes_reqst.param.blk_opc, TES_RQ_PARAM + 0, 4), F(tes_reqst.param.blk_npg, TES_RQ_PARAM + 4, 4),
	F(tes_reqst.param.blk_flags, TES_RQ_PARAM + 8, 4),
};
static const struct field tes_bulk_v1[] = {
	F(tes_reqst.param.blk_opc, TES_RQ_PARAM + 0, 2), F(tes_reqst.param.blk_flags, TES_RQ_PARAM + 2, 2),
	F(tes_reqst.param.blk_len, TES_RQ_PARAM + 4, 4), F(tes_reqst.param.blk_offset, TES_RQ_PARAM + 8, 4),
};
static const struct field tes_rp[] = { F(tes_reply.status, RP_STATUS, 4), SID(tes_reply, RP_SID) };

#define PING_RQ_SIZE 32
static const struct field ping_rq[] = {
	F(ping_reqst.rpyid, 0, 8), F(ping_reqst.magic, 8, 4), F(ping_reqst.seq, 12, 4),
	F(ping_reqst.time_sec, 16, 8), F(ping_reqst.time_nsec, 24, 8),
};
_Static_assert(24 + 8 == PING_RQ_SIZE, "ping request is 32 bytes");
#define PING_RP_SIZE 12
static const struct field ping_rp[] = {
	F(ping_reply.status, 0, 4), F(ping_reply.magic, 4, 4), F(ping_reply.seq, 8, 4),
};
#define BRW_RQ_SIZE 28
static const struct field brw_rq[] = {
	F(brw_reqst.rpyid, 0, 8), F(brw_reqst.bulkid, 8, 8), F(brw_reqst.rw, 16, 4),
	F(brw_reqst.len, 20, 4), F(brw_reqst.flags, 24, 4),
};
_Static_assert(24 + 4 == BRW_RQ_SIZE, "brw request is 28 bytes");
#define BRW_RP_SIZE 4
static const struct field brw_rp[] = { F(brw_reply.status, 0, 4) };

struct layout {
	const struct field *f;
	unsigned n;
	unsigned size;
};

#define L(tab, sz) { (tab), sizeof(tab) / sizeof((tab)[0]), (sz) }
static const struct layout layouts[SRPC_MSG_TYPE_COUNT] = {
	[SRPC_MSG_MKSN_REQST] = L(mksn_rq, MKSN_RQ_SIZE),
	[SRPC_MSG_MKSN_REPLY] = L(mksn_rp, MKSN_RP_SIZE),
	[SRPC_MSG_RMSN_REQST] = L(rmsn_rq, RMSN_RQ_SIZE),
	[SRPC_MSG_RMSN_REPLY] = L(rmsn_rp, RP_GENERIC_SIZE),
	[SRPC_MSG_BATCH_REQST] = L(bat_rq, BAT_RQ_SIZE),
	[SRPC_MSG_BATCH_REPLY] = L(bat_rp, BAT_RP_SIZE),
	[SRPC_MSG_STAT_REQST] = L(stat_rq, STAT_RQ_SIZE),
	[SRPC_MSG_STAT_REPLY] = L(stat_rp, STAT_RP_SIZE),
	[SRPC_MSG_TEST_REQST] = L(tes_rq, TES_RQ_SIZE),
	[SRPC_MSG_TEST_REPLY] = L(tes_rp, RP_GENERIC_SIZE),
	[SRPC_MSG_DEBUG_REQST] = L(dbg_rq, DBG_RQ_SIZE),
	[SRPC_MSG_DEBUG_REPLY] = L(dbg_rp, DBG_RP_SIZE),
	[SRPC_MSG_BRW_REQST] = L(brw_rq, BRW_RQ_SIZE),
	[SRPC_MSG_BRW_REPLY] = L(brw_rp, BRW_RP_SIZE),
	[SRPC_MSG_PING_REQST] = L(ping_rq, PING_RQ_SIZE),
	[SRPC_MSG_PING_REPLY] = L(ping_rp, PING_RP_SIZE),
	[SRPC_MSG_JOIN_REQST] = L(join_rq, JOIN_RQ_SIZE),
	[SRPC_MSG_JOIN_REPLY] = L(join_rp, JOIN_RP_SIZE),
};

size_t srpc_body_size(uint32_t type)
{
	return type < SRPC_MSG_TYPE_COUNT ? layouts[type].size : 0;
}

int srpc_service2request(int service)
{
	switch (service) {
	case SRPC_SERVICE_DEBUG: return SRPC_MSG_DEBUG_REQST;
	case SRPC_SERVICE_MAKE_SESSION: return SRPC_MSG_MKSN_REQST;
	case SRPC_SERVICE_REMOVE_SESSION: return SRPC_MSG_RMSN_REQST;
	case SRPC_SERVICE_BATCH: return SRPC_MSG_BATCH_REQST;
	case SRPC_SERVICE_TEST: return SRPC_MSG_TEST_REQST;
	case SRPC_SERVICE_QUERY_STAT: return SRPC_MSG_STAT_REQST;
	case SRPC_SERVICE_JOIN: return SRPC_MSG_JOIN_REQST;
	case SRPC_SERVICE_BRW: return SRPC_MSG_BRW_REQST;
	case SRPC_SERVICE_PING: return SRPC_MSG_PING_REQST;
	default: return -1;
	}
}

int srpc_service2reply(int service)
{
	int t = srpc_service2request(service);

	return t < 0 ? -1 : t + 1;
}

/* --- field codec --------------------------------------------------------------- */

static int decode_fields(const struct field *f, unsigned n, const uint8_t *body, size_t blen,
			 int be, struct srpc_msg *msg)
{
	uint8_t *host = (uint8_t *)msg;

	for (unsigned i = 0; i < n; i++) {
		uint8_t *dst = host + f[i].host;
		const uint8_t *src = body + f[i].off;

		if ((size_t)f[i].off + f[i].size > blen)
			return -EMSGSIZE;
		switch (f[i].size) {
		case 1:
			*dst = *src;
			break;
		case 2: {
			uint16_t v = be ? ul_get_be16(src) : ul_get_le16(src);
			uint32_t w = v;     /* 16-bit wire fields widen into u32 host fields */

			memcpy(dst, &w, sizeof(w));
			break;
		}
		case 4: {
			uint32_t v = ul_get_32(src, be);

			memcpy(dst, &v, sizeof(v));
			break;
		}
		case 8: {
			uint64_t v = ul_get_64(src, be);

			memcpy(dst, &v, sizeof(v));
			break;
		}
		default:
			memcpy(dst, src, f[i].size);   /* names: bytes, never swapped */
			break;
		}
	}
	return 0;
}

static void encode_fields(const struct field *f, unsigned n, uint8_t *body, const struct srpc_msg *msg)
{
	const uint8_t *host = (const uint8_t *)msg;

	for (unsigned i = 0; i < n; i++) {
		const uint8_t *src = host + f[i].host;
		uint8_t *dst = body + f[i].off;

		switch (f[i].size) {
		case 1:
			*dst = *src;
			break;
		case 2: {
			uint32_t w;

			memcpy(&w, src, sizeof(w));
			ul_put_le16(dst, (uint16_t)w);
			break;
		}
		case 4: {
			uint32_t v;

			memcpy(&v, src, sizeof(v));
			ul_put_le32(dst, v);
			break;
		}
		case 8: {
			uint64_t v;

			memcpy(&v, src, sizeof(v));
			ul_put_le64(dst, v);
			break;
		}
		default:
			memcpy(dst, src, f[i].size);
			break;
		}
	}
}

/* Which parameter layout a test request carries (the kernel's choice). */
static enum srpc_test_param_kind test_param_kind(uint32_t service, uint32_t feats)
{
	if (service == SRPC_SERVICE_PING)
		return SRPC_TEST_PARAM_PING;
	if (service == SRPC_SERVICE_BRW)
		return (feats & LST_FEAT_BULK_LEN) ? SRPC_TEST_PARAM_BULK_V1 : SRPC_TEST_PARAM_BULK_V0;
	return SRPC_TEST_PARAM_RAW;
}

static const struct field *param_fields(enum srpc_test_param_kind k, unsigned *n)
{
	switch (k) {
	case SRPC_TEST_PARAM_PING:
		*n = sizeof(tes_ping) / sizeof(tes_ping[0]);
		return tes_ping;
	case SRPC_TEST_PARAM_BULK_V0:
		*n = sizeof(tes_bulk_v0) / sizeof(tes_bulk_v0[0]);
		return tes_bulk_v0;
	case SRPC_TEST_PARAM_BULK_V1:
		*n = sizeof(tes_bulk_v1) / sizeof(tes_bulk_v1[0]);
		return tes_bulk_v1;
	default:
		*n = 0;
		return NULL;
	}
}

int srpc_msg_decode_hdr(const uint8_t *buf, size_t len, struct srpc_msg *msg)
{
	uint32_t magic;
	int be;

	if (len < SRPC_HDR_SIZE)
		return -EMSGSIZE;
	magic = ul_get_le32(buf + HDR_OFF_MAGIC);
	if (magic == SRPC_MSG_MAGIC)
		be = 0;
	else if (magic == __builtin_bswap32(SRPC_MSG_MAGIC))
		be = 1;
	else
		return -EPROTO;
	msg->swapped = be != 0;
	msg->version = ul_get_32(buf + HDR_OFF_VERSION, be);
	msg->type = ul_get_32(buf + HDR_OFF_TYPE, be);
	msg->reserved0 = ul_get_32(buf + HDR_OFF_RESERVED0, be);
	msg->reserved1 = ul_get_32(buf + HDR_OFF_RESERVED1, be);
	msg->ses_feats = ul_get_32(buf + HDR_OFF_SES_FEATS, be);
	return 0;
}

int srpc_msg_decode(const uint8_t *buf, size_t len, struct srpc_msg *msg)
{
	const struct layout *l;
	const uint8_t *body;
	size_t blen;
	int be, rc;

	memset(msg, 0, sizeof(*msg));
	if (len < SRPC_MSG_SIZE)
		return -EMSGSIZE;
	rc = srpc_msg_decode_hdr(buf, len, msg);
	if (rc)
		return rc;
	if (msg->type >= SRPC_MSG_TYPE_COUNT)
		return -EBADMSG;
	be = ul_get_le32(buf) != SRPC_MSG_MAGIC;
	body = buf + SRPC_HDR_SIZE;
	blen = len - SRPC_HDR_SIZE;
	l = &layouts[msg->type];
	rc = decode_fields(l->f, l->n, body, blen, be, msg);
	if (rc)
		return rc;
	if (msg->type == SRPC_MSG_TEST_REQST) {
		struct srpc_test_param *p = &msg->body.tes_reqst.param;
		const struct field *pf;
		unsigned n;

		if (TES_RQ_PARAM + TES_PARAM_SIZE > blen)
			return -EMSGSIZE;
		memcpy(p->raw, body + TES_RQ_PARAM, TES_PARAM_SIZE);
		p->kind = test_param_kind(msg->body.tes_reqst.service, msg->ses_feats);
		pf = param_fields(p->kind, &n);
		rc = decode_fields(pf, n, body, blen, be, msg);
		if (rc)
			return rc;
	}
	return 0;
}

int srpc_msg_encode(const struct srpc_msg *msg, uint8_t *buf, size_t len)
{
	const struct layout *l;
	uint8_t *body = buf + SRPC_HDR_SIZE;

	if (msg->type >= SRPC_MSG_TYPE_COUNT)
		return -EINVAL;
	if (len < SRPC_MSG_SIZE)
		return -ENOSPC;
	memset(buf, 0, SRPC_MSG_SIZE);
	ul_put_le32(buf + HDR_OFF_MAGIC, SRPC_MSG_MAGIC);
	ul_put_le32(buf + HDR_OFF_VERSION, msg->version);
	ul_put_le32(buf + HDR_OFF_TYPE, msg->type);
	ul_put_le32(buf + HDR_OFF_RESERVED0, msg->reserved0);
	ul_put_le32(buf + HDR_OFF_RESERVED1, msg->reserved1);
	ul_put_le32(buf + HDR_OFF_SES_FEATS, msg->ses_feats);
	l = &layouts[msg->type];
	encode_fields(l->f, l->n, body, msg);
	if (msg->type == SRPC_MSG_TEST_REQST) {
		const struct srpc_test_param *p = &msg->body.tes_reqst.param;
		const struct field *pf;
		unsigned n;

		pf = param_fields(p->kind, &n);
		if (pf)
			encode_fields(pf, n, body, msg);
		else
			memcpy(body + TES_RQ_PARAM, p->raw, TES_PARAM_SIZE);
	}
	return SRPC_MSG_SIZE;
}
