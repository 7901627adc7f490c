/* SPDX-License-Identifier: MIT */
/*
 * portal.c - the 64 portals, match entries and the walk that finds the MD an
 * incoming PUT or GET lands in.
 *
 * As in the kernel, each portal keeps its MEs in hash chains keyed by match
 * bits (wildcard portals) or by bits, NID and PID (unique portals), plus one
 * list of the MEs that have ignore bits. A request first walks the
 * ignore-bits list, then the chain of its bits; within a list the insertion
 * order (BEFORE = head, AFTER/LOCAL = tail) decides, and the first ME whose
 * MD matches wins. An ME can only match requests whose bits hash to its
 * chain, so this is "first match in list order" among the MEs able to
 * match, with ignore-bits MEs ahead of exact ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static unsigned lnet_hash64(uint64_t v)
{
	return (unsigned)((v * 0x9e3779b97f4a7c15ULL) >> (64 - LNET_MT_HASH_BITS));
}

static uint64_t lnet_nidhash(const ulnet_nid_t *nid)
{
	uint64_t h = (uint64_t)nid->type << 16 | nid->num;
	unsigned i;

	for (i = 0; i < 16; i++)
		h = h * 31 + nid->addr[i];
	return h;
}

static struct ul_list *lnet_mt_match_head(struct lnet_portal *ptl, const ulnet_process_id_t *id,
					  uint64_t mbits)
{
	if (ptl->ptl_options & LNET_PTL_WILDCARD)
		return &ptl->ptl_mhash[lnet_hash64(mbits)];
	return &ptl->ptl_mhash[lnet_hash64(mbits + lnet_nidhash(&id->nid) + id->pid)];
}

/* The chain (or ignore list) as a list to walk: NULL while no ME ever
 * went in (the table is allocated zeroed). */
static struct ul_list *lnet_mt_chain_live(struct ul_list *head)
{
	return head->next ? head : NULL;
}

void lnet_portals_init(ulnet_t *ln)
{
	int i;

	for (i = 0; i < ULNET_MAX_PORTALS; i++) {
		struct lnet_portal *ptl = &ln->ln_portals[i];

		ptl->ptl_index = (unsigned)i;
		ptl->ptl_options = 0;
		ptl->ptl_nme = 0;
		ptl->ptl_mhash = NULL;
		ul_list_init(&ptl->ptl_me_all);
		ul_list_init(&ptl->ptl_msg_delayed);
	}
}

void lnet_portals_fini(ulnet_t *ln)
{
	int i;

	for (i = 0; i < ULNET_MAX_PORTALS; i++) {
		struct lnet_portal *ptl = &ln->ln_portals[i];
		struct lnet_me *me;

		while ((me = ul_list_first(&ptl->ptl_me_all, struct lnet_me, me_ptl_link))) {
			ul_list_del(&me->me_ptl_link);
			ul_list_del(&me->me_list);
			free(me);
		}
		free(ptl->ptl_mhash);
		ptl->ptl_mhash = NULL;
	}
}

/* A portal's kind is fixed by its first ME; later MEs must agree. */
static bool lnet_ptl_match_type_locked(struct lnet_portal *ptl, const ulnet_process_id_t *id,
				       uint64_t ignore_bits)
{
	bool unique = ignore_bits == 0 && !ulnet_nid_is_any(&id->nid) && id->pid != ULNET_PID_ANY;

	if (!(ptl->ptl_options & (LNET_PTL_UNIQUE | LNET_PTL_WILDCARD))) {
		ptl->ptl_options |= unique ? LNET_PTL_UNIQUE : LNET_PTL_WILDCARD;
		return true;
	}
	return unique ? (ptl->ptl_options & LNET_PTL_UNIQUE) != 0
		      : (ptl->ptl_options & LNET_PTL_WILDCARD) != 0;
}

int ulnet_me_attach(ulnet_t *ln, unsigned portal, ulnet_process_id_t match_id,
		    uint64_t match_bits, uint64_t ignore_bits, enum ulnet_unlink unlink,
		    enum ulnet_ins_pos pos, ulnet_handle_t *meh)
{
	struct lnet_portal *ptl;
	struct ul_list *head;
	struct lnet_me *me;
	int rc;

	if (!ln || !meh || portal >= ULNET_MAX_PORTALS)
		return -EINVAL;
	if (pos != ULNET_INS_BEFORE && pos != ULNET_INS_AFTER && pos != ULNET_INS_LOCAL)
		return -EINVAL;
	if (unlink != ULNET_RETAIN && unlink != ULNET_UNLINK)
		return -EINVAL;

	me = calloc(1, sizeof(*me));
	if (!me)
		return -ENOMEM;
	me->me_portal = portal;
	me->me_match_id = match_id;
	me->me_match_bits = match_bits;
	me->me_ignore_bits = ignore_bits;
	me->me_unlink = unlink;

	lnet_lock(ln);
	ptl = &ln->ln_portals[portal];
	if (!lnet_ptl_match_type_locked(ptl, &match_id, ignore_bits)) {
		rc = -EPERM;
		goto out_unlock;
	}
	if (!ptl->ptl_mhash) {
		ptl->ptl_mhash = calloc(LNET_MT_HASH_SIZE + 1, sizeof(*ptl->ptl_mhash));
		if (!ptl->ptl_mhash) {
			rc = -ENOMEM;
			goto out_unlock;
		}
	}
	rc = lnet_handle_alloc(&ln->ln_handles, me, LNET_OBJ_ME, &me->me_cookie);
	if (rc)
		goto out_unlock;

	head = ignore_bits ? &ptl->ptl_mhash[LNET_MT_HASH_IGNORE]
			   : lnet_mt_match_head(ptl, &match_id, match_bits);
	me->me_pos = (unsigned)(head - ptl->ptl_mhash);
	if (!lnet_mt_chain_live(head))
		ul_list_init(head);
	ul_list_add_tail(&me->me_ptl_link, &ptl->ptl_me_all);
	if (pos == ULNET_INS_BEFORE)
		ul_list_add(&me->me_list, head);
	else
		ul_list_add_tail(&me->me_list, head);
	ptl->ptl_nme++;
	meh->cookie = me->me_cookie;
	me = NULL;
out_unlock:
	lnet_unlock(ln);
	free(me);
	return rc;
}

void lnet_me_unlink_locked(ulnet_t *ln, struct lnet_me *me)
{
	ul_list_del(&me->me_list);
	ul_list_del(&me->me_ptl_link);
	ln->ln_portals[me->me_portal].ptl_nme--;
	if (me->me_md) {
		struct lnet_libmd *md = me->me_md;

		me->me_md = NULL;
		md->md_me = NULL;
		lnet_md_unlink_locked(ln, md);
	}
	lnet_handle_free(&ln->ln_handles, me->me_cookie);
	free(me);
}

int ulnet_me_unlink(ulnet_t *ln, ulnet_handle_t meh)
{
	ulnet_handler_t handler = NULL;
	struct ulnet_event ev;
	struct lnet_me *me;
	struct lnet_sendq q;

	if (!ln)
		return -EINVAL;
	lnet_sendq_init(&q);
	lnet_lock(ln);
	for (;;) {
		struct lnet_libmd *md;

		me = lnet_handle_lookup(&ln->ln_handles, meh.cookie, LNET_OBJ_ME);
		if (!me) {
			lnet_unlock(ln);
			return -ENOENT;
		}
		md = me->me_md;
		if (!md || lnet_md_wait_handling_locked(ln, md->md_cookie, &md))
			break;
		/* the MD went away while we waited; look at the ME again */
	}
	if (me->me_md) {
		struct lnet_libmd *md = me->me_md;

		md->md_flags |= LNET_MD_FLAG_ABORTED;
		if (md->md_refcount > 0)   /* as ulnet_md_unlink() */
			lnet_peer_cancel_md_pending_locked(ln, md, &q);
		if (md->md_handler && md->md_refcount == 0) {
			memset(&ev, 0, sizeof(ev));
			ev.ln = ln;
			ev.type = ULNET_EVENT_UNLINK;
			ev.unlinked = true;
			lnet_md_deconstruct(md, &ev);
			handler = md->md_handler;
		}
		if (md->md_rspt_active)
			lnet_rspt_detach_locked(ln, md);
	}
	lnet_me_unlink_locked(ln, me);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	if (handler)
		handler(&ev);
	return 0;
}

/*
 * Pure match test of one MD (and its ME) against a request: no side effect.
 * Returns NONE (maybe | EXHAUSTED), DROP (fits nowhere without TRUNCATE) or OK
 * with the offset and length to use. `same_peer` (may be NULL) says whether
 * two NIDs belong to one peer; the ME's NID is then accepted for a request
 * from another NID of that peer. Called with the instance lock held; inlined
 * in its two callers (once per PUT/GET received), which commit the result.
 */
static inline __attribute__((always_inline)) int
lnet_try_match_md(const struct lnet_libmd *md, const struct lnet_match_info *info,
		  bool (*same_peer)(void *arg, const ulnet_nid_t *a, const ulnet_nid_t *b),
		  void *arg, uint32_t *offsetp, uint32_t *mlengthp)
{
	const struct lnet_me *me = md->md_me;
	size_t offset, room, mlength;

	/* The ME's own tests first: a long walk then stays within the MEs
	 * and touches an MD only when its ME matches. The outcome is the same
	 * in any order (all of these say NONE). */
	if ((me->me_match_bits ^ info->mi_mbits) & ~me->me_ignore_bits)
		return LNET_MATCHMD_NONE;
	if (me->me_match_id.pid != ULNET_PID_ANY && me->me_match_id.pid != info->mi_id.pid)
		return LNET_MATCHMD_NONE;
	if (lnet_md_exhausted(md))
		return LNET_MATCHMD_NONE | LNET_MATCHMD_EXHAUSTED;
	if (!(md->md_options & info->mi_opc))
		return LNET_MATCHMD_NONE;
	if (!lnet_nid_is_any(&me->me_match_id.nid) &&
	    !lnet_nid_eq(&me->me_match_id.nid, &info->mi_id.nid)) {
		/* another NID of the same peer is let through, as the kernel
		 * does (with a warning there) */
		if (!same_peer || !same_peer(arg, &me->me_match_id.nid, &info->mi_id.nid))
			return LNET_MATCHMD_NONE;
	}

	/* It matches; now does the request fit? */
	offset = (md->md_options & ULNET_MD_MANAGE_REMOTE) ? info->mi_roffset : md->md_offset;
	/* The kernel trusts a remote offset past the end (its room
	 * underflows); here such a request simply finds no room. */
	room = offset < md->md_length ? md->md_length - offset : 0;
	if ((md->md_options & ULNET_MD_MAX_SIZE) && md->md_max_size < room)
		room = md->md_max_size;

	if (info->mi_rlength <= room)
		mlength = info->mi_rlength;
	else if (md->md_options & ULNET_MD_TRUNCATE)
		mlength = room;
	else
		return LNET_MATCHMD_DROP;

	*offsetp = (uint32_t)offset;
	*mlengthp = (uint32_t)mlength;
	return LNET_MATCHMD_OK;
}

/* Inlined in both matchers (once per PUT/GET matched). */
static inline __attribute__((always_inline)) void
lnet_ptl_commit_locked(ulnet_t *ln, struct lnet_msg *msg, struct lnet_libmd *md, uint32_t offset,
		       uint32_t mlength)
{
	lnet_msg_attach_md(msg, md, offset, mlength);
	md->md_offset = (size_t)offset + mlength;
	/* Auto-unlink now, so the ME goes too; the MD itself is freed when
	 * this message lets go of it. */
	if (lnet_md_exhausted(md) && (md->md_flags & LNET_MD_FLAG_AUTO_UNLINK))
		lnet_md_unlink_locked(ln, md);
}

int lnet_ptl_match_md_locked(ulnet_t *ln, const struct lnet_match_info *info,
			     struct lnet_msg *msg)
{
	struct lnet_portal *ptl;
	struct ul_list *head, *pos;
	char nid[ULNET_NIDSTR_SIZE];

	if (info->mi_portal >= ULNET_MAX_PORTALS) {
		lnet_log(ln, ULNET_LOG_ERROR, "request from %s to invalid portal %u (max %d)",
			 lnet_nidstr(&info->mi_id.nid, nid), info->mi_portal, ULNET_MAX_PORTALS - 1);
		return LNET_MATCHMD_DROP;
	}
	ptl = &ln->ln_portals[info->mi_portal];
	if (!(ptl->ptl_options & (LNET_PTL_UNIQUE | LNET_PTL_WILDCARD)) || !ptl->ptl_mhash)
		goto nomatch;

	head = lnet_mt_chain_live(&ptl->ptl_mhash[LNET_MT_HASH_IGNORE]);
	if (!head || ul_list_empty(head))
		head = lnet_mt_chain_live(lnet_mt_match_head(ptl, &info->mi_id, info->mi_mbits));
again:
	if (!head)
		goto nomatch;
	ul_list_for_each(pos, head) {
		struct lnet_me *me = ul_container_of(pos, struct lnet_me, me_list);
		uint32_t offset, mlength;
		int rc;

		if (!me->me_md)
			continue;
		rc = lnet_try_match_md(me->me_md, info, lnet_peer_same_locked, ln, &offset, &mlength);
		if (rc & LNET_MATCHMD_OK) {
			lnet_ptl_commit_locked(ln, msg, me->me_md, offset, mlength);
			return LNET_MATCHMD_OK;
		}
		if (rc & LNET_MATCHMD_DROP) {
			lnet_log(ln, ULNET_LOG_ERROR,
				 "matching %s from %s, match %#llx length %u too big: %zu left, %s",
				 info->mi_opc == ULNET_MD_OP_PUT ? "PUT" : "GET",
				 lnet_nidstr(&info->mi_id.nid, nid), (unsigned long long)info->mi_mbits,
				 info->mi_rlength,
				 me->me_md->md_length > me->me_md->md_offset
					 ? me->me_md->md_length - me->me_md->md_offset : 0,
				 "no TRUNCATE");
			return LNET_MATCHMD_DROP;
		}
	}
	if (head == &ptl->ptl_mhash[LNET_MT_HASH_IGNORE]) {
		head = lnet_mt_chain_live(lnet_mt_match_head(ptl, &info->mi_id, info->mi_mbits));
		goto again;
	}
nomatch:
	if (info->mi_opc == ULNET_MD_OP_GET || !(ptl->ptl_options & LNET_PTL_LAZY))
		return LNET_MATCHMD_DROP;
	msg->msg_rx_delayed = 1;
	ul_list_add_tail(&msg->msg_list, &ptl->ptl_msg_delayed);
	return LNET_MATCHMD_NONE;
}

void lnet_ptl_attach_md_locked(ulnet_t *ln, struct lnet_me *me, struct lnet_libmd *md,
			       struct ul_list *matches, struct ul_list *drops)
{
	struct lnet_portal *ptl = &ln->ln_portals[me->me_portal];
	struct ul_list *pos, *n;

	ul_list_for_each_safe(pos, n, &ptl->ptl_msg_delayed) {
		struct lnet_msg *msg = ul_container_of(pos, struct lnet_msg, msg_list);
		struct lnet_match_info info = lnet_put_match_info(msg);
		uint32_t offset, mlength;
		int rc;

		rc = lnet_try_match_md(md, &info, lnet_peer_same_locked, ln, &offset, &mlength);
		if (rc & LNET_MATCHMD_NONE) {
			if (rc & LNET_MATCHMD_EXHAUSTED)
				break;
			continue;
		}
		ul_list_del(&msg->msg_list);
		if (rc & LNET_MATCHMD_OK) {
			lnet_ptl_commit_locked(ln, msg, md, offset, mlength);
			ul_list_add_tail(&msg->msg_list, matches);
		} else {
			ul_list_add_tail(&msg->msg_list, drops);
		}
		if (lnet_md_exhausted(md))
			break;
	}
}

void lnet_ptl_take_delayed_locked(ulnet_t *ln, struct lnet_ni *ni, struct ul_list *out)
{
	int i;

	for (i = 0; i < ULNET_MAX_PORTALS; i++) {
		struct lnet_portal *ptl = &ln->ln_portals[i];
		struct ul_list *pos, *n;

		ul_list_for_each_safe(pos, n, &ptl->ptl_msg_delayed) {
			struct lnet_msg *msg = ul_container_of(pos, struct lnet_msg, msg_list);

			if (ni && msg->msg_rxni != ni)
				continue;
			ul_list_del(&msg->msg_list);
			ul_list_add_tail(&msg->msg_list, out);
		}
	}
}

void lnet_drop_delayed_msg_list(ulnet_t *ln, struct ul_list *list, const char *reason)
{
	struct lnet_msg *msg;

	while ((msg = ul_list_first(list, struct lnet_msg, msg_list))) {
		char nid[ULNET_NIDSTR_SIZE];

		ul_list_del(&msg->msg_list);
		LASSERT(msg->msg_rx_delayed && !msg->msg_md);
		lnet_log(ln, ULNET_LOG_WARN,
			 "dropping delayed PUT from %s pid %u portal %u match %#llx offset %u length %u: %s",
			 lnet_nidstr(&msg->msg_hdr.src_nid, nid), msg->msg_hdr.src_pid,
			 msg->msg_hdr.msg.put.ptl_index,
			 (unsigned long long)msg->msg_hdr.msg.put.match_bits,
			 msg->msg_hdr.msg.put.offset, msg->msg_hdr.payload_length, reason);
		lnet_lock(ln);
		ln->ln_ctr.drop_count++;
		ln->ln_ctr.drop_length += msg->msg_len;
		lnet_count_type(&msg->msg_rxni->ni_dropped, &msg->msg_rxni->ni_dropped_bytes,
		                ULNET_MSG_PUT, msg->msg_len);
		lnet_unlock(ln);
		lnet_ni_recv(msg->msg_rxni, msg->msg_rx_private, NULL, true, 0, 0, msg->msg_len);
		lnet_finalize_core(msg, -ENOENT);
	}
}

void lnet_recv_delayed_msg_list(ulnet_t *ln, struct ul_list *list)
{
	struct lnet_msg *msg;

	(void)ln;
	while ((msg = ul_list_first(list, struct lnet_msg, msg_list))) {
		ul_list_del(&msg->msg_list);
		LASSERT(msg->msg_rx_delayed && msg->msg_md);
		lnet_recv_put(msg->msg_rxni, msg, true);
	}
}

int ulnet_portal_set_lazy(ulnet_t *ln, unsigned portal, bool lazy)
{
	struct lnet_portal *ptl;
	struct ul_list zombies;

	if (!ln || portal >= ULNET_MAX_PORTALS)
		return -EINVAL;
	ul_list_init(&zombies);
	lnet_lock(ln);
	ptl = &ln->ln_portals[portal];
	if (lazy) {
		ptl->ptl_options |= LNET_PTL_LAZY;
	} else if (ptl->ptl_options & LNET_PTL_LAZY) {
		ptl->ptl_options &= ~LNET_PTL_LAZY;
		ul_list_splice_tail(&ptl->ptl_msg_delayed, &zombies);
	}
	lnet_unlock(ln);
	lnet_drop_delayed_msg_list(ln, &zombies, "lazy attribute cleared");
	return 0;
}
