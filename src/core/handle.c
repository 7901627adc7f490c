/* SPDX-License-Identifier: MIT */
/*
 * handle.c - the handle table: ME and MD cookies carry type, slot index and
 * slot generation, so a stale or forged cookie is recognised by comparison
 * and never dereferenced.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"

#define HANDLE_GEN_MAX ((1u << (64 - LNET_HANDLE_GEN_SHIFT)) - 1)

static uint64_t make_cookie(uint32_t idx, uint32_t gen, enum lnet_obj_type type)
{
	return (uint64_t)gen << LNET_HANDLE_GEN_SHIFT | (uint64_t)idx << LNET_HANDLE_TYPE_BITS | (uint64_t)type;
}

void lnet_handle_table_init(struct lnet_handle_table *t)
{
	t->slots = NULL;
	t->nslots = t->cap = 0;
	t->free_head = 0;
	t->nused = 0;
}

void lnet_handle_table_fini(struct lnet_handle_table *t)
{
	free(t->slots);
	lnet_handle_table_init(t);
}

int lnet_handle_alloc(struct lnet_handle_table *t, void *obj, enum lnet_obj_type type,
		      uint64_t *cookie)
{
	struct lnet_handle_slot *s;
	uint32_t idx;

	if (t->free_head) {
		idx = t->free_head - 1;
		s = &t->slots[idx];
		t->free_head = s->next_free;
	} else {
		if (t->nslots == t->cap) {
			uint32_t cap = t->cap ? t->cap * 2 : 64;
			struct lnet_handle_slot *ns;

			if (cap <= t->cap) /* 2^31 objects: no */
				return -ENOMEM;
			ns = realloc(t->slots, (size_t)cap * sizeof(*ns));
			if (!ns)
				return -ENOMEM;
			t->slots = ns;
			t->cap = cap;
		}
		idx = t->nslots++;
		s = &t->slots[idx];
		s->gen = 1;
	}
	s->obj = obj;
	s->next_free = 0;
	t->nused++;
	*cookie = make_cookie(idx, s->gen, type);
	return 0;
}


void lnet_handle_free(struct lnet_handle_table *t, uint64_t cookie)
{
	uint32_t idx = (uint32_t)((cookie >> LNET_HANDLE_TYPE_BITS) & 0xffffffffu);
	struct lnet_handle_slot *s;

	LASSERT(idx < t->nslots);
	s = &t->slots[idx];
	LASSERT(s->obj && s->gen == (uint32_t)(cookie >> LNET_HANDLE_GEN_SHIFT));
	s->obj = NULL;
	/* a new generation for the next user of this slot; skip 0 */
	s->gen = s->gen >= HANDLE_GEN_MAX ? 1 : s->gen + 1;
	s->next_free = t->free_head;
	t->free_head = idx + 1;
	t->nused--;
}
