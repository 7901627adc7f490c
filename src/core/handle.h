/* SPDX-License-Identifier: MIT */
/*
 * handle.h - the handle table (handle.c): the cookies that name MDs and MEs,
 * each checked by type and generation before its object is used.
 */
#ifndef ULNET_CORE_HANDLE_H
#define ULNET_CORE_HANDLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Cookie layout: bits 0-1 object type, bits 2-33 slot index, bits 34-63 slot
 * generation (never 0). A freed slot bumps its generation, so an old cookie
 * never names a new object. Type 3 is unused, so no cookie is all-ones (the
 * "no ACK" wire handle) and none is 0 (ULNET_HANDLE_NONE).
 */
enum lnet_obj_type { LNET_OBJ_MD = 1, LNET_OBJ_ME = 2 };

struct lnet_handle_slot {
	void *obj;          /* NULL: free */
	uint32_t gen;
	uint32_t next_free; /* free list link (index + 1; 0 ends) */
};

struct lnet_handle_table {
	struct lnet_handle_slot *slots;
	uint32_t nslots, cap;
	uint32_t free_head; /* index + 1 of the first free slot, 0: none */
	uint32_t nused;
};

void lnet_handle_table_init(struct lnet_handle_table *t);
void lnet_handle_table_fini(struct lnet_handle_table *t);
/* Returns 0 and the cookie, or -ENOMEM. */
int lnet_handle_alloc(struct lnet_handle_table *t, void *obj, enum lnet_obj_type type,
		      uint64_t *cookie);
#define LNET_HANDLE_TYPE_BITS 2
#define LNET_HANDLE_GEN_SHIFT (LNET_HANDLE_TYPE_BITS + 32)   /* after the 32 index bits */
/* The object named by `cookie` if it is live and of `type`, else NULL.
 * Inline: every PUT/GET and every ACK/REPLY looks its MD up. */
static inline void *lnet_handle_lookup(const struct lnet_handle_table *t, uint64_t cookie,
				       enum lnet_obj_type type)
{
	uint64_t idx = (cookie >> LNET_HANDLE_TYPE_BITS) & 0xffffffffu;
	uint32_t gen = (uint32_t)(cookie >> LNET_HANDLE_GEN_SHIFT);
	const struct lnet_handle_slot *s;

	if ((cookie & ((1u << LNET_HANDLE_TYPE_BITS) - 1)) != (uint64_t)type)
		return NULL;
	if (idx >= t->nslots)
		return NULL;
	s = &t->slots[idx];
	if (!s->obj || s->gen != gen)
		return NULL;
	return s->obj;
}

/* Invalidate a live cookie (its slot is reused later, with a new generation). */
void lnet_handle_free(struct lnet_handle_table *t, uint64_t cookie);

#endif
