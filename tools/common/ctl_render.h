/* SPDX-License-Identifier: MIT */
/*
 * ctl_render.h - lnetctl 2.17 YAML for every show command, rendered from the
 * library's info structs (so it can be tested with fixed values).
 */
#ifndef ULNET_TOOLS_CTL_RENDER_H
#define ULNET_TOOLS_CTL_RENDER_H

#include <stdbool.h>

#include "ulnet/routing.h"
#include "ulnet/udsp.h"
#include "ulnet/ulnet.h"
#include "yaml_out.h"

/* net show [-v N]; `filter` (may be NULL) keeps one net. Nothing is written
 * when no NI matches. */
void ctl_render_net_show(struct ybuf *out, const struct ulnet_ni_info *nis, int n, int verbose,
			 const ulnet_net_t *filter);
/* peer show [-v N]. */
void ctl_render_peer_show(struct ybuf *out, const struct ulnet_peer_info *peers, int n,
			  int verbose);
/* peer list */
void ctl_render_peer_list(struct ybuf *out, const struct ulnet_peer_info *peers, int n);
void ctl_render_stats(struct ybuf *out, const struct ulnet_counters *c);
void ctl_render_global(struct ybuf *out, const struct ulnet_globals *g);

/* route show [-v]: net and gateway, with `verbose` also hop, priority,
 * state and type. Nothing is written for no routes. */
void ctl_render_route_show(struct ybuf *out, const struct ulnet_route_info *routes, int n,
			   bool verbose);

/* routing show: the pools (one CPT) and the state ("enable"), then
 * buffers: (nbuffers of each pool); --backup (export): enable and buffers
 * only. Nothing is written while the pools were never allocated (NULL or
 * !ri->pools). */
void ctl_render_routing(struct ybuf *out, const struct ulnet_routing_info *ri, bool backup);

/* export [--backup]: net, route, peer, routing + buffers (`routing` may be
 * NULL), global. */
void ctl_render_export(struct ybuf *out, const struct ulnet_ni_info *nis, int nni,
		       const struct ulnet_route_info *routes, int nroute,
		       const struct ulnet_peer_info *peers, int npeer,
		       const struct ulnet_routing_info *routing, const struct ulnet_globals *g,
		       bool backup);

/* udsp show (and export's udsp:): `n` rules, the first of index `first`,
 * in lnetctl's cYAML; nothing for none. */
void ctl_render_udsp(struct ybuf *out, const struct ulnet_udsp_rule *rules, int n, int first);
/* conn show: the connections `conns` (n of them), in cYAML; nothing for
 * none. */
void ctl_render_conn_show(struct ybuf *out, const struct ulnet_conn_info *conns, int n);
/* "control", "bulk_in", "bulk_out", "any" ("?" for anything else). */
const char *ctl_conn_type_str(int type);

/* One ping/discover result: rc 0 with `peer`, or a negative errno. */
struct ctl_ping_result {
	ulnet_nid_t target;
	int rc;
	struct ulnet_ping_peer peer;
};

/* ping/discover output (`what` is "ping" or "discover"): successes under
 * `what:`, failures under `manage:` as lnetctl 2.17 prints them. */
void ctl_render_ping(struct ybuf *out, const char *what, const struct ctl_ping_result *r, int n);

/* Text lnetctl shows for an errno (strerror wording, thread-safe). */
const char *ctl_strerror(int err, char *buf, size_t len);

#endif
