/* SPDX-License-Identifier: MIT */
/*
 * ulnet/selftest.h - the LNet selftest (SRPC) agent: makes a ulnet node a
 * test node of a kernel `lst` console, as loading lnet_selftest does on a
 * kernel node.
 *
 * The agent serves the framework services on portal 51 (make/remove
 * session, batch run/stop/query, test add, stat query, debug) and, once a
 * server-side test of that kind is added, the ping and brw test services on
 * portal 50. Replies go back with a PUT (no ACK) to portal 52 with the
 * request's rpyid as match bits; brw bulk is moved by the agent (GET from
 * the client for writes, PUT to it for reads). One session at a time, with
 * the kernel's session timeout. Test-client role: a TEST add with is_client
 * set fetches the destination list from the console, and a batch RUN sends
 * the test's ping or brw RPCs to them (docs/selftest.md).
 *
 * The agent runs on the instance's event handlers: with
 * ULNET_OPT_MANUAL_PROGRESS the application must keep calling
 * ulnet_progress().
 */
#ifndef ULNET_SELFTEST_H
#define ULNET_SELFTEST_H

#include "ulnet/export.h"

#include <stdint.h>

#include "ulnet/ulnet.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ulnet_selftest ulnet_selftest_t;

struct ulnet_selftest_conf {
	/* Seconds without a framework RPC before the session ends (the
	 * lnet_selftest module parameter session_timeout): 0 takes the
	 * default, 100; -1 means never. */
	int session_timeout;
	/* Seconds a test RPC this node sends (test-client role) may take (the
	 * module parameter rpc_timeout): 0 takes the default, 64; -1: never. */
	int rpc_timeout;
};

/* What the agent counted (the SRPC counters of a STAT reply, and more). */
struct ulnet_selftest_stats {
	uint32_t rpcs_rcvd;       /* requests received, good or bad */
	uint32_t rpcs_dropped;    /* requests dropped (bad, or bulk failed) */
	uint32_t errors;          /* LNet events that failed */
	uint64_t bulk_get;        /* bytes fetched by brw write bulk GETs */
	uint64_t bulk_put;        /* bytes sent by brw read bulk PUTs */
	uint32_t brw_reqs;        /* brw requests served */
	uint32_t brw_check_errors;/* brw writes whose data failed the check */
	uint32_t ping_reqs;       /* ping requests served */
	/* test-client role */
	uint32_t rpcs_sent;       /* test requests sent */
	uint32_t rpcs_expired;    /* test RPCs that timed out */
	uint32_t client_rpcs;     /* test RPCs ended, good or bad */
	uint32_t client_errors;   /* test RPCs that failed (any reason) */
	uint32_t brw_errors;      /* brw RPCs failed, as the STAT's brw_errors */
	uint32_t ping_errors;     /* pings failed, as the STAT's ping_errors */
	int session_active;       /* 1 while a session exists */
};

/*
 * Start the agent on `ln` (one per instance). `conf` may be NULL.
 * Makes portals 50 and 51 lazy and posts the framework request buffers.
 * Errors: -EINVAL (ln or out NULL, session_timeout < -1), -EEXIST (an agent
 * already runs on ln), -ENOMEM, and the errors of ulnet_me_attach() and
 * ulnet_md_attach().
 */
ULNET_API int ulnet_selftest_start(ulnet_t *ln, const struct ulnet_selftest_conf *conf,
			 ulnet_selftest_t **out);

/*
 * Stop the agent: unlink its buffers, wait (progressing the instance if it
 * has no thread) up to 5 s for its RPCs in flight to end, free it. NULL is
 * allowed. Must not be called from an event handler.
 */
ULNET_API void ulnet_selftest_stop(ulnet_selftest_t *st);

/* Read the counters. Errors: -EINVAL (st or out NULL). */
ULNET_API int ulnet_selftest_stats_get(ulnet_selftest_t *st, struct ulnet_selftest_stats *out);

#ifdef __cplusplus
}
#endif
#endif
