/* SPDX-License-Identifier: MIT */
/*
 * ctl_import_int.h - what the parts of import share (ctl_import.c,
 * ctl_import_ip2nets.c, ctl_import_udsp.c): the state of one import, the
 * YAML node helpers, and error reporting with the file, line and column
 * of the node at fault.
 */
#ifndef ULNET_TOOLS_CTL_IMPORT_INT_H
#define ULNET_TOOLS_CTL_IMPORT_INT_H

#include <yaml.h>

#include "ctl_cmds_int.h"

enum imp_mode { IMP_ADD, IMP_DEL, IMP_SHOW, IMP_EXEC };

/* --- the schema (ctl_import_schema.c) --------------------------------------- */

/* What becomes of a key. */
enum imp_key_kind {
	IMPK_APPLY,   /* it configures the node (ping:, discover: act under --exec) */
	IMPK_CHECKED, /* only ulnet's own value is taken (CPT "[0]"); another is refused (-95) */
	IMPK_STATE,   /* the node's own state as export (or a show) writes it: read back,
		       * it changes nothing */
	IMPK_REFUSED, /* a key of lnetctl's that ulnet cannot honour: refused (-95) */
};

struct imp_key {
	const char *name;       /* "cpt[N]": "cpt[" digits "]" */
	enum imp_key_kind kind;
};

struct imp_section {
	const char *path;       /* "" (the top level), "net/local NI(s)", ... */
	const struct imp_key *keys;
	int nkeys;
};

/* The sections; a key not in its section's table is refused. */
enum imp_sec {
	IMPS_TOP, IMPS_NET, IMPS_NI, IMPS_NI_TUN, IMPS_NI_LND_TUN, IMPS_PEER, IMPS_PEER_NI,
	IMPS_ROUTE, IMPS_ROUTING, IMPS_ROUTING_CPT, IMPS_ROUTING_POOL, IMPS_BUFFERS, IMPS_GLOBAL,
	IMPS_NUMA, IMPS_IP2NETS, IMPS_IP2NETS_TUN, IMPS_IP2NETS_LND_TUN, IMPS_UDSP,
	IMPS_UDSP_ACTION, IMPS_PING, IMPS_PING_NID, IMPS_DISCOVER, IMPS_DISCOVER_NID, IMPS_COUNT
};

/* Each section's keys, in the order of its table. */
enum { IK_TOP_NET, IK_TOP_ROUTE, IK_TOP_PEER, IK_TOP_ROUTING, IK_TOP_BUFFERS, IK_TOP_GLOBAL,
       IK_TOP_NUMA, IK_TOP_IP2NETS, IK_TOP_UDSP, IK_TOP_PING, IK_TOP_DISCOVER,
       IK_TOP_STATISTICS, IK_TOP_COUNT };
enum { IK_NET_TYPE, IK_NET_NIS, IK_NET_COUNT };
enum { IK_NI_NID, IK_NI_INTERFACES, IK_NI_TUNABLES, IK_NI_LND_TUNABLES, IK_NI_CPT,
       IK_NI_STATUS, IK_NI_STATISTICS, IK_NI_SENT_STATS, IK_NI_RECEIVED_STATS,
       IK_NI_DROPPED_STATS, IK_NI_HEALTH_STATS, IK_NI_DEV_CPT, IK_NI_COUNT };
enum { IK_TUN_PEER_TIMEOUT, IK_TUN_PEER_CREDITS, IK_TUN_PEER_BUFFER_CREDITS, IK_TUN_CREDITS,
       IK_TUN_COUNT };
enum { IK_LND_CONNS_PER_PEER, IK_LND_TOS, IK_LND_TIMEOUT,
       /* o2ib only (lnetctl's o2ib "lnd tunables") */
       IK_LND_PEERCREDITS_HIW, IK_LND_MAP_ON_DEMAND, IK_LND_CONCURRENT_SENDS,
       IK_LND_FMR_POOL_SIZE, IK_LND_FMR_FLUSH_TRIGGER, IK_LND_FMR_CACHE, IK_LND_NTX,
       IK_LND_COUNT };
enum { IK_PEER_PRIMARY, IK_PEER_MR, IK_PEER_NIS, IK_PEER_STATE, IK_PEER_COUNT };
enum { IK_PNI_NID, IK_PNI_STATE, IK_PNI_MAX_TX_CREDITS, IK_PNI_AVAIL_TX_CREDITS,
       IK_PNI_MIN_TX_CREDITS, IK_PNI_TX_Q, IK_PNI_AVAIL_RTR_CREDITS, IK_PNI_MIN_RTR_CREDITS,
       IK_PNI_REFCOUNT, IK_PNI_STATISTICS, IK_PNI_SENT_STATS, IK_PNI_RECEIVED_STATS,
       IK_PNI_DROPPED_STATS, IK_PNI_HEALTH_STATS, IK_PNI_COUNT };
enum { IK_ROUTE_NET, IK_ROUTE_GATEWAY, IK_ROUTE_HOP, IK_ROUTE_PRIORITY, IK_ROUTE_STATE,
       IK_ROUTE_TYPE, IK_ROUTE_HEALTH_SENSITIVITY, IK_ROUTE_COUNT };
enum { IK_ROUTING_ENABLE, IK_ROUTING_CPT, IK_ROUTING_COUNT };
enum { IK_POOL_TINY, IK_POOL_SMALL, IK_POOL_LARGE, IK_POOL_COUNT };
enum { IK_CNT_NPAGES, IK_CNT_NBUFFERS, IK_CNT_CREDITS, IK_CNT_MINCREDITS, IK_CNT_COUNT };
enum { IK_BUF_TINY, IK_BUF_SMALL, IK_BUF_LARGE, IK_BUF_COUNT };
enum { IK_GLOBAL_NUMA_RANGE, IK_GLOBAL_MAX_INTERFACES, IK_GLOBAL_DISCOVERY,
       IK_GLOBAL_DROP_ASYM_ROUTE, IK_GLOBAL_RETRY_COUNT, IK_GLOBAL_TRANSACTION_TIMEOUT,
       IK_GLOBAL_HEALTH_SENSITIVITY, IK_GLOBAL_RECOVERY_INTERVAL, IK_GLOBAL_ROUTER_SENSITIVITY,
       IK_GLOBAL_RESPONSE_TRACKING, IK_GLOBAL_RECOVERY_LIMIT,
       IK_GLOBAL_MAX_RECOVERY_PING_INTERVAL, IK_GLOBAL_LND_TIMEOUT, IK_GLOBAL_COUNT };
enum { IK_NUMA_RANGE, IK_NUMA_COUNT };
enum { IK_IP2N_NET_SPEC, IK_IP2N_INTERFACES, IK_IP2N_IP_RANGE, IK_IP2N_TUNABLES,
       IK_IP2N_LND_TUNABLES, IK_IP2N_CPT, IK_IP2N_COUNT };
enum { IK_UDSP_SRC, IK_UDSP_DST, IK_UDSP_RTE, IK_UDSP_IDX, IK_UDSP_PRIORITY, IK_UDSP_ACTION,
       IK_UDSP_COUNT };
enum { IK_UACT_PRIORITY, IK_UACT_COUNT };
enum { IK_PING_NIDS, IK_PING_TIMEOUT, IK_PING_SOURCE, IK_PING_COUNT };
enum { IK_DISC_NIDS, IK_DISC_COUNT };
/* an entry of a nids: list that is a mapping ({primary nid: X} or {nid: X}) */
enum { IK_PNID_PRIMARY, IK_PNID_NID, IK_PNID_COUNT };

extern const struct imp_section imp_schema[IMPS_COUNT];
/* The index of key `k` in section `s`, or -1 (k NULL: -1). */
int imp_key_find(enum imp_sec s, const char *k);
/* The whole schema, for the tests that walk it: IMPS_COUNT sections. */
const struct imp_section *ctl_import_schema(int *n);

struct imp {
	struct ctl_ctx *ctx;
	const char *name;
	yaml_document_t doc;
	enum imp_mode mode;
	struct ybuf *err;
	struct ctl_reply *rp; /* for ping/discover output (exec) */
	int nerr;
};

yaml_node_t *ynode(struct imp *im, yaml_node_item_t i);
/* The text of a scalar node, or NULL. */
const char *yscalar(yaml_node_t *n);
/* Value of key `k` in mapping `m`, or NULL. */
yaml_node_t *ymap_get(struct imp *im, yaml_node_t *m, const char *k);
/* Record an error (errno `err`) at node `at` ("FILE:LINE:COL: ..."). */
void imp_error(struct imp *im, yaml_node_t *at, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A scalar as a long: 0 or -EINVAL. */
int yint(yaml_node_t *n, long *v);
/* A value of key `k` that is not what it must be, in lnetctl's words (the
 * sanity suite looks for them): "no value specified for key 'K'" when it
 * is empty, else "invalid value 'V' for key 'K'". */
void imp_bad_value(struct imp *im, yaml_node_t *vn, const char *k);

/* A "CPT" value of `what` ("an NI", "an ip2nets rule"): "N" or
 * "[a,b-c]" naming partition 0 only (ulnet has one). An expression that
 * does not parse ("[1-0]", "[]") is -EINVAL, another partition -95. */
bool imp_cpt(struct imp *im, yaml_node_t *v, const char *what);

/* A "tunables" or "lnd tunables" map (section `s`: IMPS_NI_TUN,
 * IMPS_NI_LND_TUN, IMPS_IP2NETS_TUN or IMPS_IP2NETS_LND_TUN) of `what`
 * into conf: each key lnetctl prints there takes effect; any other is
 * refused (-95). NULL m: nothing to do. */
bool imp_ni_tunables(struct imp *im, yaml_node_t *m, enum imp_sec s, struct ulnet_ni_conf *conf,
		     const char *what);
/* Refuse key node `kn` of a mapping of section `s` that is not in its
 * table (-95, naming it and the section). */
void imp_key_refuse(struct imp *im, yaml_node_t *kn, enum imp_sec s);
/* The value of key `k` (its index in section `s`) in mapping `m`, or NULL. */
yaml_node_t *imp_get(struct imp *im, yaml_node_t *m, enum imp_sec s, int k);
/* Every key of mapping `m` is one of section `s` and not one it refuses;
 * else the first other is refused (imp_key_refuse()) and false. Not a
 * mapping: true (the caller says what is wrong). */
bool imp_keys_check(struct imp *im, yaml_node_t *m, enum imp_sec s);

/* The sections with their own files. */
void imp_ip2nets(struct imp *im, yaml_node_t *seq);   /* ctl_import_ip2nets.c */
void imp_udsp(struct imp *im, yaml_node_t *e);        /* ctl_import_udsp.c */

#endif
