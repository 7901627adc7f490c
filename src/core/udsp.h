/* SPDX-License-Identifier: MIT */
/*
 * udsp.h - user defined selection policies (udsp.c): the rule table of an
 * instance, what the rules set on NIs and peer NIs, and what the send path
 * (send.c, route.c) asks of them.
 *
 * Every value a rule sets is a function of the rules and of the construct
 * (its NID and net; for the preferred lists also our NIs and the routes),
 * computed when the construct appears and again when what it depends on
 * changes, so the send path only reads fields.
 */
#ifndef ULNET_CORE_UDSP_H
#define ULNET_CORE_UDSP_H

#include <stdlib.h>

#include "core/core.h"
#include "ulnet/udsp.h"

/* The kinds of rule (ln_udsp_kinds: those there are). */
#define LNET_UDSP_K_SRC  (1u << 0)   /* src: our net or NI priority */
#define LNET_UDSP_K_DST  (1u << 1)   /* dst: peer net or peer NI priority */
#define LNET_UDSP_K_PAIR (1u << 2)   /* src + dst: preferred local NIs */
#define LNET_UDSP_K_RTE  (1u << 3)   /* dst + rte: preferred gateways */

/* A peer NI's preferred lists: nsrc of our NIDs (a NID-pair rule), then
 * nrtr primary NIDs of gateways (a router rule). */
struct lnet_udsp_pref {
	uint16_t nsrc, nrtr;
	ulnet_nid_t nids[];
};

void lnet_udsp_init(ulnet_t *ln);
/* Destroy: the rules go (nothing is reverted: the NIs and peers go too). */
void lnet_udsp_fini(ulnet_t *ln);

/* What the rules give a new NI (in ln_nis) or peer NI; an NI added or
 * taken out also changes the peer NIs' preferred local NIs. */
void lnet_udsp_ni_added_locked(ulnet_t *ln, struct lnet_ni *ni);
void lnet_udsp_ni_removed_locked(ulnet_t *ln);
void lnet_udsp_lpni_added_locked(ulnet_t *ln, struct lnet_peer_ni *lpni);
/* A route came or went: the preferred gateways follow. */
void lnet_udsp_routes_changed_locked(ulnet_t *ln);
/* The peer NI's preferred lists go (it is freed). */
static inline void lnet_udsp_lpni_fini(struct lnet_peer_ni *lpni)
{
	free(lpni->lpni_udsp);
	lpni->lpni_udsp = NULL;
}

/* --- for selection ----------------------------------------------------------------- */

/* Rules exist (the send path skips every policy step without). */
static inline bool lnet_udsp_active(const ulnet_t *ln)
{
	return ln->ln_nudsp != 0;
}

/* The priority of our net `net` (of any of its NIs). */
uint32_t lnet_udsp_net_prio_locked(ulnet_t *ln, ulnet_net_t net);

/* Whether `nid`, one of ours, is among `lpni`'s preferred local NIDs. */
bool lnet_udsp_src_preferred(const struct lnet_peer_ni *lpni, const ulnet_nid_t *nid);

/* Whether `lpni` has preferred local NIDs at all. */
static inline bool lnet_udsp_has_src_pref(const struct lnet_peer_ni *lpni)
{
	return lpni->lpni_udsp && lpni->lpni_udsp->nsrc;
}

/* Whether the gateway of primary NID `gw` is among `lpni`'s preferred
 * gateways. */
bool lnet_udsp_rtr_preferred(const struct lnet_peer_ni *lpni, const ulnet_nid_t *gw);

#endif
