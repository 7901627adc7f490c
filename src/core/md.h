/* SPDX-License-Identifier: MIT */
/*
 * md.h - memory descriptors (struct lnet_libmd, md.c): their flags and
 * response tracking, binding and unlinking them, and looking one up by the
 * handle a peer sent back.
 */
#ifndef ULNET_CORE_MD_H
#define ULNET_CORE_MD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/handle.h"
#include "core/instance.h"
#include "core/list.h"
#include "core/lnet_hdr.h"
#include "ulnet/ulnet.h"

/* --- MDs ------------------------------------------------------------------ */

#define LNET_MD_FLAG_ZOMBIE      0x1u  /* unlinked; freed when idle */
#define LNET_MD_FLAG_AUTO_UNLINK 0x2u  /* ULNET_UNLINK: unlink when exhausted */
#define LNET_MD_FLAG_ABORTED     0x4u  /* ulnet_md_unlink()/timeout: abort sends */
#define LNET_MD_FLAG_HANDLING    0x8u  /* a handler runs on it without the lock */

struct lnet_me;

struct lnet_libmd {
	struct ul_list md_list;        /* ln_md_active */
	uint64_t md_cookie;
	struct lnet_me *md_me;         /* attached ME, NULL when bound */
	void *md_start;                /* as given: buffer or iovec array */
	size_t md_length;              /* total bytes */
	size_t md_offset;              /* running offset (shared by PUT and GET) */
	size_t md_max_size;
	unsigned md_options;
	int md_threshold;
	int md_refcount;               /* messages holding it */
	unsigned md_flags;
	void *md_user_ptr;
	ulnet_handler_t md_handler;
	pthread_t md_handling_thread;  /* valid with LNET_MD_FLAG_HANDLING */
	/* response tracking (one tracker per MD, as the kernel) */
	struct ul_list md_rspt_list;   /* ln_rspt_list while tracked */
	uint64_t md_rspt_deadline;
	uint64_t md_rspt_start;
	int md_rspt_pending;           /* responses (ACK/REPLY) still expected */
	bool md_rspt_active;
	bool md_rspt_hop_set;
	ulnet_nid_t md_rspt_hop;       /* the peer NI the last request went to */
	unsigned md_niov;
	struct iovec md_iov[];         /* md_niov fragments (1 for a plain buffer) */
};

static inline bool lnet_md_exhausted(const struct lnet_libmd *md)
{
	return md->md_threshold == 0 ||
	       ((md->md_options & ULNET_MD_MAX_SIZE) && md->md_offset + md->md_max_size > md->md_length);
}

static inline bool lnet_md_unlinkable(const struct lnet_libmd *md)
{
	if (md->md_refcount != 0)
		return false;
	if (md->md_flags & LNET_MD_FLAG_ZOMBIE)
		return true;
	return (md->md_flags & LNET_MD_FLAG_AUTO_UNLINK) && lnet_md_exhausted(md);
}

/* --- MDs (md.c) --------------------------------------------------------------- */

/* ulnet_md_bind with the lock held. */
int lnet_md_bind_locked(ulnet_t *ln, const struct ulnet_md *umd, enum ulnet_unlink unlink,
			struct lnet_libmd **mdp);
/* Start (or finish) the unlink of an MD; frees it once idle. */
void lnet_md_unlink_locked(ulnet_t *ln, struct lnet_libmd *md);
void lnet_md_free_locked(ulnet_t *ln, struct lnet_libmd *md);
/* The MD a wire handle names, if it is ours and live. */
static inline struct lnet_libmd *lnet_wire_handle2md_locked(ulnet_t *ln,
							     const lnet_wire_handle_t *wh)
{
	/* handles are only looked up by their creator */
	if (wh->wh_interface_cookie != ln->ln_interface_cookie)
		return NULL;
	return lnet_handle_lookup(&ln->ln_handles, wh->wh_object_cookie, LNET_OBJ_MD);
}

/* LNetMDUnlink with the status its UNLINK event carries (0, -ETIMEDOUT,
 * -ESHUTDOWN). Drops and retakes the lock to run the handler. */
void lnet_md_unlink_event_locked(ulnet_t *ln, struct lnet_libmd *md, int status);
/* Wait until no other thread runs a handler on `md`; returns false if the
 * MD went away meanwhile (looked up again by cookie). */
bool lnet_md_wait_handling_locked(ulnet_t *ln, uint64_t cookie, struct lnet_libmd **mdp);
static inline void lnet_md_deconstruct(const struct lnet_libmd *md, struct ulnet_event *ev)
{
	ev->md_start = md->md_start;
	ev->md_options = md->md_options;
	ev->md_user_ptr = md->md_user_ptr;
	ev->md_handle.cookie = md->md_cookie;
}

#endif
