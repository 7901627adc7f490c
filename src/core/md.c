/* SPDX-License-Identifier: MIT */
/*
 * md.c - memory descriptors: build, attach to an ME, bind, unlink, and the
 * rules of the UNLINK event (idle: now; busy: the last completion event says
 * unlinked).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"


static int lnet_md_build(const struct ulnet_md *umd, enum ulnet_unlink unlink,
			 struct lnet_libmd **out)
{
	struct lnet_libmd *md;
	unsigned niov, i;
	uint64_t total = 0;

	if (unlink != ULNET_RETAIN && unlink != ULNET_UNLINK)
		return -EINVAL;
	if (umd->threshold < ULNET_MD_THRESH_INF)
		return -EINVAL;
	if (!umd->start && umd->length != 0)
		return -EINVAL;
	if (umd->options & ULNET_MD_IOVEC) {
		const struct iovec *iov = umd->start;

		if (umd->length > ULNET_MAX_IOV)
			return -EINVAL;
		niov = (unsigned)umd->length;
		for (i = 0; i < niov; i++) {
			if (!iov[i].iov_base && iov[i].iov_len)
				return -EINVAL;
			total += iov[i].iov_len;
			if (total > UINT32_MAX)
				return -EINVAL;
		}
	} else {
		niov = 1;
		total = umd->length;
	}
	/* offsets and lengths travel as 32-bit values */
	if (total > UINT32_MAX)
		return -EINVAL;
	if ((umd->options & ULNET_MD_MAX_SIZE) && umd->max_size > total)
		return -EINVAL;

	md = calloc(1, sizeof(*md) + (size_t)niov * sizeof(struct iovec));
	if (!md)
		return -ENOMEM;
	ul_list_init(&md->md_list);
	ul_list_init(&md->md_rspt_list);
	md->md_start = umd->start;
	md->md_length = (size_t)total;
	md->md_max_size = umd->max_size;
	md->md_options = umd->options;
	md->md_threshold = umd->threshold;
	md->md_user_ptr = umd->user_ptr;
	md->md_handler = umd->handler;
	md->md_flags = unlink == ULNET_UNLINK ? LNET_MD_FLAG_AUTO_UNLINK : 0;
	md->md_niov = niov;
	if (umd->options & ULNET_MD_IOVEC) {
		if (niov)
			memcpy(md->md_iov, umd->start, (size_t)niov * sizeof(struct iovec));
	} else {
		md->md_iov[0].iov_base = umd->start;
		md->md_iov[0].iov_len = umd->length;
	}
	*out = md;
	return 0;
}

static int lnet_md_link_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	int rc = lnet_handle_alloc(&ln->ln_handles, md, LNET_OBJ_MD, &md->md_cookie);

	if (rc)
		return rc;
	ul_list_add(&md->md_list, &ln->ln_md_active);
	return 0;
}

void lnet_md_free_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	if (!(md->md_flags & LNET_MD_FLAG_ZOMBIE)) {
		if (md->md_me) {
			md->md_me->me_md = NULL;
			md->md_me = NULL;
		}
		lnet_handle_free(&ln->ln_handles, md->md_cookie);
	}
	if (md->md_rspt_active)
		lnet_rspt_detach_locked(ln, md);
	ul_list_del(&md->md_list);
	/* the memory is the application's again, to free or remap */
	lnet_memreg_released(ln, md->md_iov, md->md_niov);
	free(md);
}

void lnet_md_unlink_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	if (!(md->md_flags & LNET_MD_FLAG_ZOMBIE)) {
		struct lnet_me *me = md->md_me;

		md->md_flags |= LNET_MD_FLAG_ZOMBIE;
		if (me) {
			me->me_md = NULL;
			md->md_me = NULL;
			if (me->me_unlink == ULNET_UNLINK)
				lnet_me_unlink_locked(ln, me);
		}
		/* every later lookup of the handle fails */
		lnet_handle_free(&ln->ln_handles, md->md_cookie);
	}
	/* busy, or a handler still runs on it: freed when that ends */
	if (md->md_refcount != 0 || (md->md_flags & LNET_MD_FLAG_HANDLING))
		return;
	lnet_md_free_locked(ln, md);
}

bool lnet_md_wait_handling_locked(ulnet_t *ln, uint64_t cookie, struct lnet_libmd **mdp)
{
	for (;;) {
		struct lnet_libmd *md = lnet_handle_lookup(&ln->ln_handles, cookie, LNET_OBJ_MD);

		if (!md)
			return false;
		/* a handler of this MD runs on another thread without the
		 * lock: let it finish so events stay ordered */
		if (md->md_refcount == 0 && (md->md_flags & LNET_MD_FLAG_HANDLING) &&
		    !pthread_equal(md->md_handling_thread, pthread_self())) {
			ln->ln_handling_waiters++;
			lnet_cond_wait_locked(ln, NULL);
			ln->ln_handling_waiters--;
			continue;
		}
		*mdp = md;
		return true;
	}
}


void lnet_md_unlink_event_locked(ulnet_t *ln, struct lnet_libmd *md, int status)
{
	ulnet_handler_t handler = NULL;
	struct ulnet_event ev;

	if (md->md_flags & LNET_MD_FLAG_ZOMBIE) {
		if (md->md_rspt_active)
			lnet_rspt_detach_locked(ln, md);
		return;
	}
	if (!lnet_md_wait_handling_locked(ln, md->md_cookie, &md))
		return;
	md->md_flags |= LNET_MD_FLAG_ABORTED;
	if (md->md_handler && md->md_refcount == 0) {
		memset(&ev, 0, sizeof(ev));
		ev.ln = ln;
		ev.type = ULNET_EVENT_UNLINK;
		ev.status = status;
		ev.unlinked = true;
		lnet_md_deconstruct(md, &ev);
		handler = md->md_handler;
	}
	if (md->md_rspt_active)
		lnet_rspt_detach_locked(ln, md);
	lnet_md_unlink_locked(ln, md);
	if (handler) {
		lnet_unlock(ln);
		handler(&ev);
		lnet_lock(ln);
	}
}

int ulnet_md_attach(ulnet_t *ln, ulnet_handle_t meh, const struct ulnet_md *umd,
		    enum ulnet_unlink unlink, ulnet_handle_t *mdh)
{
	struct ul_list matches, drops;
	struct lnet_libmd *md;
	struct lnet_me *me;
	int rc;

	if (!ln || !umd || !mdh)
		return -EINVAL;
	if (!(umd->options & (ULNET_MD_OP_PUT | ULNET_MD_OP_GET)))
		return -EINVAL;
	rc = lnet_md_build(umd, unlink, &md);
	if (rc)
		return rc;

	ul_list_init(&matches);
	ul_list_init(&drops);
	lnet_lock(ln);
	me = lnet_handle_lookup(&ln->ln_handles, meh.cookie, LNET_OBJ_ME);
	if (!me) {
		rc = -ENOENT;
		goto out_free;
	}
	if (me->me_md) {
		rc = -EBUSY;
		goto out_free;
	}
	rc = lnet_md_link_locked(ln, md);
	if (rc)
		goto out_free;
	me->me_md = md;
	md->md_me = me;
	/* PUTs parked on a lazy portal may fit this MD */
	if (!ul_list_empty(&ln->ln_portals[me->me_portal].ptl_msg_delayed))
		lnet_ptl_attach_md_locked(ln, me, md, &matches, &drops);
	mdh->cookie = md->md_cookie;
	lnet_unlock(ln);

	lnet_drop_delayed_msg_list(ln, &drops, "too long for the new MD");
	lnet_recv_delayed_msg_list(ln, &matches);
	return 0;

out_free:
	lnet_unlock(ln);
	free(md);
	return rc;
}

int lnet_md_bind_locked(ulnet_t *ln, const struct ulnet_md *umd, enum ulnet_unlink unlink,
			struct lnet_libmd **mdp)
{
	struct lnet_libmd *md;
	int rc;

	/* as the kernel: a bound MD is for initiating; OP_PUT/OP_GET are the
	 * target-side options of attached MDs */
	if (umd->options & (ULNET_MD_OP_PUT | ULNET_MD_OP_GET))
		return -EINVAL;
	rc = lnet_md_build(umd, unlink, &md);
	if (rc)
		return rc;
	if (md->md_length > ULNET_MTU) {
		free(md);
		return -EINVAL;
	}
	rc = lnet_md_link_locked(ln, md);
	if (rc) {
		free(md);
		return rc;
	}
	*mdp = md;
	return 0;
}

int ulnet_md_bind(ulnet_t *ln, const struct ulnet_md *umd, enum ulnet_unlink unlink,
		  ulnet_handle_t *mdh)
{
	struct lnet_libmd *md;
	int rc;

	if (!ln || !umd || !mdh)
		return -EINVAL;
	lnet_lock(ln);
	rc = lnet_md_bind_locked(ln, umd, unlink, &md);
	if (!rc)
		mdh->cookie = md->md_cookie;
	lnet_unlock(ln);
	return rc;
}

int ulnet_md_unlink(ulnet_t *ln, ulnet_handle_t mdh)
{
	struct lnet_libmd *md;
	struct lnet_sendq q;

	if (!ln)
		return -EINVAL;
	lnet_sendq_init(&q);
	lnet_lock(ln);
	if (!lnet_md_wait_handling_locked(ln, mdh.cookie, &md)) {
		lnet_unlock(ln);
		return -ENOENT;
	}
	/* Its sends still waiting for a peer's discovery end now, with
	 * -ECANCELED: the kernel cancels them only when the discovery ends
	 * (up to transaction_timeout later), which would keep an unlinked
	 * MD, and whoever waits for its UNLINK event, that long. */
	if (md->md_refcount > 0)
		lnet_peer_cancel_md_pending_locked(ln, md, &q);
	lnet_md_unlink_event_locked(ln, md, 0);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	return 0;
}
