/* SPDX-License-Identifier: MIT */
/*
 * portal.h - portals and match entries (portal.c): the 64 portals of an
 * instance, their ME hash chains and lazy queues, what a request asks to
 * match and the outcome bits of matching.
 */
#ifndef ULNET_CORE_PORTAL_H
#define ULNET_CORE_PORTAL_H

#include <stdint.h>

#include "core/list.h"
#include "ulnet/ulnet.h"

struct lnet_libmd;   /* md.h */
struct lnet_msg;     /* msg.h */
struct lnet_ni;      /* ni.h */

/* --- MEs, portals --------------------------------------------------------- */

#define LNET_MT_HASH_BITS 12   /* the kernel has 8; more chains, same order */
#define LNET_MT_HASH_SIZE (1u << LNET_MT_HASH_BITS)
#define LNET_MT_HASH_IGNORE LNET_MT_HASH_SIZE   /* the list of MEs with ignore bits */

struct lnet_me {
	struct ul_list me_list;        /* in its portal's hash chain or ignore list */
	struct ul_list me_ptl_link;    /* in its portal's ptl_me_all */
	uint64_t me_cookie;
	unsigned me_portal;
	ulnet_process_id_t me_match_id;
	uint64_t me_match_bits;
	uint64_t me_ignore_bits;
	enum ulnet_unlink me_unlink;
	unsigned me_pos;               /* hash chain index or LNET_MT_HASH_IGNORE */
	struct lnet_libmd *me_md;
};

#define LNET_PTL_LAZY     0x1u
#define LNET_PTL_UNIQUE   0x2u
#define LNET_PTL_WILDCARD 0x4u

struct lnet_portal {
	unsigned ptl_index;
	unsigned ptl_options;
	unsigned ptl_nme;
	/* LNET_MT_HASH_SIZE chains plus the ignore-bits list; allocated
	 * zeroed with the first ME (most portals are never used), a chain
	 * initialised when an ME first goes in (a zeroed chain is empty), so
	 * neither set-up nor teardown walks thousands of empty chains. */
	struct ul_list *ptl_mhash;
	struct ul_list ptl_me_all;     /* every ME of the portal, for teardown */
	struct ul_list ptl_msg_delayed; /* PUTs waiting on a lazy portal */
};

/* What a request asks to match (lnet_try_match_md(), portal.c). */
struct lnet_match_info {
	ulnet_process_id_t mi_id;      /* initiator (primary NID) and PID */
	unsigned mi_opc;               /* ULNET_MD_OP_PUT or ULNET_MD_OP_GET */
	unsigned mi_portal;
	uint32_t mi_rlength;
	uint32_t mi_roffset;
	uint64_t mi_mbits;
};

/* Outcome bits of matching, as the kernel's LNET_MATCHMD_*. */
#define LNET_MATCHMD_NONE      0x01  /* no match (try the next ME) */
#define LNET_MATCHMD_OK        0x02  /* matched: take it */
#define LNET_MATCHMD_DROP      0x04  /* matched but must be dropped (too long), or give up */
#define LNET_MATCHMD_EXHAUSTED 0x08  /* the MD is (now) exhausted */
#define LNET_MATCHMD_FINISH    (LNET_MATCHMD_OK | LNET_MATCHMD_DROP)

/* --- portals and MEs (portal.c) ---------------------------------------------- */

void lnet_portals_init(ulnet_t *ln);
void lnet_portals_fini(ulnet_t *ln);
/* Match an incoming PUT/GET: OK (MD attached to msg), NONE (delayed on a
 * lazy portal) or DROP. */
int lnet_ptl_match_md_locked(ulnet_t *ln, const struct lnet_match_info *info,
			     struct lnet_msg *msg);
/* Try the delayed PUTs of the ME's portal against its new MD; matched ones
 * go on `matches`, too-long ones on `drops`. */
void lnet_ptl_attach_md_locked(ulnet_t *ln, struct lnet_me *me, struct lnet_libmd *md,
			       struct ul_list *matches, struct ul_list *drops);
void lnet_me_unlink_locked(ulnet_t *ln, struct lnet_me *me);
/* Take every delayed message (of `ni`, or all with NULL) off the lazy
 * queues; `all_lazy_off` also clears the lazy flags. */
void lnet_ptl_take_delayed_locked(ulnet_t *ln, struct lnet_ni *ni, struct ul_list *out);
void lnet_drop_delayed_msg_list(ulnet_t *ln, struct ul_list *list, const char *reason);
void lnet_recv_delayed_msg_list(ulnet_t *ln, struct ul_list *list);

#endif
