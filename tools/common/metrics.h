/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - the node's state in the Prometheus text exposition format
 * (version 0.0.4), what `ulnetd --metrics` serves on GET /metrics
 * (metrics_http.h). docs/tools.md, "Metrics", lists every family.
 *
 * A scrape is taken in two steps so that the lock is held only while the
 * node is read: metrics_snap_take() copies the node's state through the
 * public API (the calls `stats show`, `net show`, `peer show`, `conn show`
 * and `routing show` make) under the context's read lock, as those show
 * commands do; metrics_render() then writes the text from the copy, so
 * tests can render fixed values too.
 */
#ifndef ULNET_TOOLS_METRICS_H
#define ULNET_TOOLS_METRICS_H

#include <stdbool.h>

#include "ctl_cmds.h"
#include "ulnet/routing.h"
#include "ulnet/ulnet.h"
#include "yaml_out.h"

/* What Prometheus is told the body is. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Most peer NIDs given series of their own, in the peer-NI families and in
 * the connection families alike (the rest are counted in
 * ulnet_peer_ni_series_omitted and ulnet_connection_series_omitted): a
 * node may know thousands of peers, and each peer NI is some forty series. */
#define METRICS_MAX_PEER_NIS 256

/* The node's state at one instant (every array allocated, or NULL). */
struct metrics_snap {
	bool configured;                  /* LNet is up (else nothing below) */
	struct ulnet_counters counters;
	struct ulnet_ni_info *nis;
	int nnis;
	struct ulnet_peer_info *peers;
	int npeers;
	struct ulnet_conn_info *conns;
	int nconns;
	struct ulnet_routing_info routing;
	bool have_routing;
};

/* Fill `s` from the node of `ctx` under ctx->lock (read). Returns 0, or
 * -ENOMEM (nothing to free then). */
int metrics_snap_take(struct ctl_ctx *ctx, struct metrics_snap *s);
void metrics_snap_free(struct metrics_snap *s);

/* Append the exposition of `s` to `out`, at most `max_peer_nis` peer NIDs
 * with series of their own (METRICS_MAX_PEER_NIS for ulnetd). The caller
 * checks out->oom. */
void metrics_render(struct ybuf *out, const struct metrics_snap *s, int max_peer_nis);

/* Both: the text of one scrape. Returns 0, or -ENOMEM (`out` then holds
 * nothing useful). */
int metrics_scrape(struct ctl_ctx *ctx, int max_peer_nis, struct ybuf *out);

#endif
