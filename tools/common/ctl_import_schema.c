/* SPDX-License-Identifier: MIT */
/*
 * ctl_import_schema.c - every key import takes, section by section, and
 * what becomes of it. The parsers (ctl_import.c, ctl_import_ip2nets.c,
 * ctl_import_udsp.c) look each key up here and act on the index they get,
 * so a key is taken only if it is listed; test_ctl_options walks these
 * tables and proves each key takes effect, is refused, or is the node's own
 * state written back by export.
 */
#include "ctl_import_int.h"

#include <ctype.h>
#include <string.h>

#define K(idx, n, kind) [idx] = { n, kind }
#define SEC(path, keys) { path, keys, (int)(sizeof(keys) / sizeof((keys)[0])) }

static const struct imp_key top_keys[IK_TOP_COUNT] = {
	K(IK_TOP_NET, "net", IMPK_APPLY),
	K(IK_TOP_ROUTE, "route", IMPK_APPLY),
	K(IK_TOP_PEER, "peer", IMPK_APPLY),
	K(IK_TOP_ROUTING, "routing", IMPK_APPLY),
	K(IK_TOP_BUFFERS, "buffers", IMPK_APPLY),
	K(IK_TOP_GLOBAL, "global", IMPK_APPLY),
	K(IK_TOP_NUMA, "numa", IMPK_APPLY),
	K(IK_TOP_IP2NETS, "ip2nets", IMPK_APPLY),
	K(IK_TOP_UDSP, "udsp", IMPK_APPLY),
	/* act under --exec only, as lnetctl's (nothing to configure) */
	K(IK_TOP_PING, "ping", IMPK_APPLY),
	K(IK_TOP_DISCOVER, "discover", IMPK_APPLY),
	/* what "stats show" prints: counters the node keeps itself */
	K(IK_TOP_STATISTICS, "statistics", IMPK_STATE),
};

static const struct imp_key net_keys[IK_NET_COUNT] = {
	K(IK_NET_TYPE, "net type", IMPK_APPLY),
	K(IK_NET_NIS, "local NI(s)", IMPK_APPLY),
};

/* An NI as export writes it: what configures it, then its state. */
static const struct imp_key ni_keys[IK_NI_COUNT] = {
	K(IK_NI_NID, "nid", IMPK_APPLY),
	K(IK_NI_INTERFACES, "interfaces", IMPK_APPLY),
	K(IK_NI_TUNABLES, "tunables", IMPK_APPLY),
	K(IK_NI_LND_TUNABLES, "lnd tunables", IMPK_APPLY),
	K(IK_NI_CPT, "CPT", IMPK_CHECKED),
	K(IK_NI_STATUS, "status", IMPK_STATE),
	K(IK_NI_STATISTICS, "statistics", IMPK_STATE),
	K(IK_NI_SENT_STATS, "sent_stats", IMPK_STATE),
	K(IK_NI_RECEIVED_STATS, "received_stats", IMPK_STATE),
	K(IK_NI_DROPPED_STATS, "dropped_stats", IMPK_STATE),
	K(IK_NI_HEALTH_STATS, "health stats", IMPK_STATE),
	K(IK_NI_DEV_CPT, "dev cpt", IMPK_STATE),
};

static const struct imp_key tun_keys[IK_TUN_COUNT] = {
	K(IK_TUN_PEER_TIMEOUT, "peer_timeout", IMPK_APPLY),
	K(IK_TUN_PEER_CREDITS, "peer_credits", IMPK_APPLY),
	K(IK_TUN_PEER_BUFFER_CREDITS, "peer_buffer_credits", IMPK_APPLY),
	K(IK_TUN_CREDITS, "credits", IMPK_APPLY),
};

static const struct imp_key lnd_tun_keys[IK_LND_COUNT] = {
	K(IK_LND_CONNS_PER_PEER, "conns_per_peer", IMPK_APPLY),
	K(IK_LND_TOS, "tos", IMPK_APPLY),
	/* net show -v prints it: the LND's timeout (socklnd's, o2iblnd's) */
	K(IK_LND_TIMEOUT, "timeout", IMPK_APPLY),
	/* o2ib NIs only (refused on others): the o2ib LND's, or for fmr_*
	 * (ulnet has no FMR pool) only the kernel's defaults */
	K(IK_LND_PEERCREDITS_HIW, "peercredits_hiw", IMPK_APPLY),
	K(IK_LND_MAP_ON_DEMAND, "map_on_demand", IMPK_APPLY),
	K(IK_LND_CONCURRENT_SENDS, "concurrent_sends", IMPK_APPLY),
	K(IK_LND_FMR_POOL_SIZE, "fmr_pool_size", IMPK_CHECKED),
	K(IK_LND_FMR_FLUSH_TRIGGER, "fmr_flush_trigger", IMPK_CHECKED),
	K(IK_LND_FMR_CACHE, "fmr_cache", IMPK_CHECKED),
	K(IK_LND_NTX, "ntx", IMPK_APPLY),
};

/* An ip2nets rule configures tcp NIs only: socklnd's keys. */
static const struct imp_key ip2n_lnd_tun_keys[IK_LND_TIMEOUT + 1] = {
	K(IK_LND_CONNS_PER_PEER, "conns_per_peer", IMPK_APPLY),
	K(IK_LND_TOS, "tos", IMPK_APPLY),
	K(IK_LND_TIMEOUT, "timeout", IMPK_APPLY),
};

static const struct imp_key peer_keys[IK_PEER_COUNT] = {
	K(IK_PEER_PRIMARY, "primary nid", IMPK_APPLY),
	K(IK_PEER_MR, "Multi-Rail", IMPK_APPLY),
	K(IK_PEER_NIS, "peer ni", IMPK_APPLY),
	K(IK_PEER_STATE, "peer state", IMPK_STATE),
};

static const struct imp_key peer_ni_keys[IK_PNI_COUNT] = {
	K(IK_PNI_NID, "nid", IMPK_APPLY),
	K(IK_PNI_STATE, "state", IMPK_STATE),
	K(IK_PNI_MAX_TX_CREDITS, "max_ni_tx_credits", IMPK_STATE),
	K(IK_PNI_AVAIL_TX_CREDITS, "available_tx_credits", IMPK_STATE),
	K(IK_PNI_MIN_TX_CREDITS, "min_tx_credits", IMPK_STATE),
	K(IK_PNI_TX_Q, "tx_q_num_of_buf", IMPK_STATE),
	K(IK_PNI_AVAIL_RTR_CREDITS, "available_rtr_credits", IMPK_STATE),
	K(IK_PNI_MIN_RTR_CREDITS, "min_rtr_credits", IMPK_STATE),
	K(IK_PNI_REFCOUNT, "refcount", IMPK_STATE),
	K(IK_PNI_STATISTICS, "statistics", IMPK_STATE),
	K(IK_PNI_SENT_STATS, "sent_stats", IMPK_STATE),
	K(IK_PNI_RECEIVED_STATS, "received_stats", IMPK_STATE),
	K(IK_PNI_DROPPED_STATS, "dropped_stats", IMPK_STATE),
	K(IK_PNI_HEALTH_STATS, "health stats", IMPK_STATE),
};

static const struct imp_key route_keys[IK_ROUTE_COUNT] = {
	K(IK_ROUTE_NET, "net", IMPK_APPLY),
	K(IK_ROUTE_GATEWAY, "gateway", IMPK_APPLY),
	K(IK_ROUTE_HOP, "hop", IMPK_APPLY),
	K(IK_ROUTE_PRIORITY, "priority", IMPK_APPLY),
	/* route show -v's view: checked, changes nothing */
	K(IK_ROUTE_STATE, "state", IMPK_STATE),
	K(IK_ROUTE_TYPE, "type", IMPK_STATE),
	/* lnetctl lists it and does not take it */
	K(IK_ROUTE_HEALTH_SENSITIVITY, "health_sensitivity", IMPK_REFUSED),
};

static const struct imp_key routing_keys[IK_ROUTING_COUNT] = {
	K(IK_ROUTING_ENABLE, "enable", IMPK_APPLY),
	/* routing show's pools of a CPT: counters, checked, changing nothing */
	K(IK_ROUTING_CPT, "cpt[N]", IMPK_STATE),
};

static const struct imp_key pool_keys[IK_POOL_COUNT] = {
	K(IK_POOL_TINY, "tiny", IMPK_STATE),
	K(IK_POOL_SMALL, "small", IMPK_STATE),
	K(IK_POOL_LARGE, "large", IMPK_STATE),
};

static const struct imp_key counter_keys[IK_CNT_COUNT] = {
	K(IK_CNT_NPAGES, "npages", IMPK_STATE),
	K(IK_CNT_NBUFFERS, "nbuffers", IMPK_STATE),
	K(IK_CNT_CREDITS, "credits", IMPK_STATE),
	K(IK_CNT_MINCREDITS, "mincredits", IMPK_STATE),
};

static const struct imp_key buffers_keys[IK_BUF_COUNT] = {
	K(IK_BUF_TINY, "tiny", IMPK_APPLY),
	K(IK_BUF_SMALL, "small", IMPK_APPLY),
	K(IK_BUF_LARGE, "large", IMPK_APPLY),
};

/* The globals of "set NAME VALUE" (ctl_gset_find()), and lnd_timeout,
 * which global show prints and the node derives. */
static const struct imp_key global_keys[IK_GLOBAL_COUNT] = {
	K(IK_GLOBAL_NUMA_RANGE, "numa_range", IMPK_APPLY),
	K(IK_GLOBAL_MAX_INTERFACES, "max_interfaces", IMPK_APPLY),
	K(IK_GLOBAL_DISCOVERY, "discovery", IMPK_APPLY),
	K(IK_GLOBAL_DROP_ASYM_ROUTE, "drop_asym_route", IMPK_APPLY),
	K(IK_GLOBAL_RETRY_COUNT, "retry_count", IMPK_APPLY),
	K(IK_GLOBAL_TRANSACTION_TIMEOUT, "transaction_timeout", IMPK_APPLY),
	K(IK_GLOBAL_HEALTH_SENSITIVITY, "health_sensitivity", IMPK_APPLY),
	K(IK_GLOBAL_RECOVERY_INTERVAL, "recovery_interval", IMPK_APPLY),
	K(IK_GLOBAL_ROUTER_SENSITIVITY, "router_sensitivity", IMPK_APPLY),
	K(IK_GLOBAL_RESPONSE_TRACKING, "response_tracking", IMPK_APPLY),
	K(IK_GLOBAL_RECOVERY_LIMIT, "recovery_limit", IMPK_APPLY),
	K(IK_GLOBAL_MAX_RECOVERY_PING_INTERVAL, "max_recovery_ping_interval", IMPK_APPLY),
	K(IK_GLOBAL_LND_TIMEOUT, "lnd_timeout", IMPK_STATE),
};

static const struct imp_key numa_keys[IK_NUMA_COUNT] = {
	K(IK_NUMA_RANGE, "range", IMPK_APPLY),
};

static const struct imp_key ip2nets_keys[IK_IP2N_COUNT] = {
	K(IK_IP2N_NET_SPEC, "net-spec", IMPK_APPLY),
	K(IK_IP2N_INTERFACES, "interfaces", IMPK_APPLY),
	K(IK_IP2N_IP_RANGE, "ip-range", IMPK_APPLY),
	K(IK_IP2N_TUNABLES, "tunables", IMPK_APPLY),
	K(IK_IP2N_LND_TUNABLES, "lnd tunables", IMPK_APPLY),
	K(IK_IP2N_CPT, "CPT", IMPK_CHECKED),
};

static const struct imp_key udsp_keys[IK_UDSP_COUNT] = {
	K(IK_UDSP_SRC, "src", IMPK_APPLY),
	K(IK_UDSP_DST, "dst", IMPK_APPLY),
	K(IK_UDSP_RTE, "rte", IMPK_APPLY),
	K(IK_UDSP_IDX, "idx", IMPK_APPLY),
	K(IK_UDSP_PRIORITY, "priority", IMPK_APPLY),
	K(IK_UDSP_ACTION, "action", IMPK_APPLY),
};

static const struct imp_key udsp_action_keys[IK_UACT_COUNT] = {
	K(IK_UACT_PRIORITY, "priority", IMPK_APPLY),
};

static const struct imp_key ping_keys[IK_PING_COUNT] = {
	K(IK_PING_NIDS, "nids", IMPK_APPLY),
	K(IK_PING_TIMEOUT, "timeout", IMPK_APPLY),
	K(IK_PING_SOURCE, "source", IMPK_APPLY),
};

static const struct imp_key discover_keys[IK_DISC_COUNT] = {
	K(IK_DISC_NIDS, "nids", IMPK_APPLY),
};

/* an entry of nids: written as a mapping, as older exports have it */
static const struct imp_key ping_nid_keys[IK_PNID_COUNT] = {
	K(IK_PNID_PRIMARY, "primary nid", IMPK_APPLY),
	K(IK_PNID_NID, "nid", IMPK_APPLY),
};

_Static_assert((int)IK_PING_NIDS == (int)IK_DISC_NIDS, "ping and discover read nids alike");

const struct imp_section imp_schema[IMPS_COUNT] = {
	[IMPS_TOP] = SEC("", top_keys),
	[IMPS_NET] = SEC("net", net_keys),
	[IMPS_NI] = SEC("net/local NI(s)", ni_keys),
	[IMPS_NI_TUN] = SEC("net/local NI(s)/tunables", tun_keys),
	[IMPS_NI_LND_TUN] = SEC("net/local NI(s)/lnd tunables", lnd_tun_keys),
	[IMPS_PEER] = SEC("peer", peer_keys),
	[IMPS_PEER_NI] = SEC("peer/peer ni", peer_ni_keys),
	[IMPS_ROUTE] = SEC("route", route_keys),
	[IMPS_ROUTING] = SEC("routing", routing_keys),
	[IMPS_ROUTING_CPT] = SEC("routing/cpt[N]", pool_keys),
	[IMPS_ROUTING_POOL] = SEC("routing/cpt[N]/POOL", counter_keys),
	[IMPS_BUFFERS] = SEC("buffers", buffers_keys),
	[IMPS_GLOBAL] = SEC("global", global_keys),
	[IMPS_NUMA] = SEC("numa", numa_keys),
	[IMPS_IP2NETS] = SEC("ip2nets", ip2nets_keys),
	[IMPS_IP2NETS_TUN] = SEC("ip2nets/tunables", tun_keys),
	[IMPS_IP2NETS_LND_TUN] = SEC("ip2nets/lnd tunables", ip2n_lnd_tun_keys),
	[IMPS_UDSP] = SEC("udsp", udsp_keys),
	[IMPS_UDSP_ACTION] = SEC("udsp/action", udsp_action_keys),
	[IMPS_PING] = SEC("ping", ping_keys),
	[IMPS_PING_NID] = SEC("ping/nids", ping_nid_keys),
	[IMPS_DISCOVER] = SEC("discover", discover_keys),
	[IMPS_DISCOVER_NID] = SEC("discover/nids", ping_nid_keys),
};

/* "cpt[N]" in a table matches "cpt[" decimal digits "]". */
static bool key_match(const char *pat, const char *k)
{
	size_t pl = strlen(pat);

	if (pl > 3 && strcmp(pat + pl - 3, "[N]") == 0) {
		size_t n = pl - 2;   /* through the '[' */

		if (strncmp(k, pat, n) != 0 || !isdigit((unsigned char)k[n]))
			return false;
		k += n;
		while (isdigit((unsigned char)*k))
			k++;
		return strcmp(k, "]") == 0;
	}
	return strcmp(pat, k) == 0;
}

int imp_key_find(enum imp_sec s, const char *k)
{
	const struct imp_section *sec = &imp_schema[s];

	for (int i = 0; k && i < sec->nkeys; i++)
		if (key_match(sec->keys[i].name, k))
			return i;
	return -1;
}

const struct imp_section *ctl_import_schema(int *n)
{
	*n = IMPS_COUNT;
	return imp_schema;
}
