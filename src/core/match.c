/* SPDX-License-Identifier: MIT */
/*
 * match.c - does one MD (through its ME) accept a request? A pure function:
 * the caller commits the result (portal.c).
 */
#include "core/core.h"

int lnet_try_match_md(const struct lnet_libmd *md, const struct lnet_match_info *info,
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
