/* SPDX-License-Identifier: MIT */
/*
 * list.h - the core's invariant check (LASSERT(), always on) and its
 * intrusive doubly linked list (struct ul_list).
 */
#ifndef ULNET_CORE_LIST_H
#define ULNET_CORE_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* --- invariants ------------------------------------------------------------ */

/* Always on (release builds too): a broken invariant is a bug in the core or
 * an LND (a message finalized twice), and continuing would corrupt memory. */
#define LASSERT(cond)                                                          \
	do {                                                                   \
		if (__builtin_expect(!(cond), 0))                              \
			lnet_assert_fail(#cond, __FILE__, __LINE__);           \
	} while (0)
_Noreturn void lnet_assert_fail(const char *expr, const char *file, int line);

/* --- intrusive doubly linked list ------------------------------------------ */

struct ul_list {
	struct ul_list *next, *prev;
};

#define ul_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void ul_list_init(struct ul_list *l) { l->next = l->prev = l; }
static inline bool ul_list_empty(const struct ul_list *l) { return l->next == l; }
static inline void ul_list_insert(struct ul_list *n, struct ul_list *prev, struct ul_list *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}
static inline void ul_list_add(struct ul_list *n, struct ul_list *head) { ul_list_insert(n, head, head->next); }
static inline void ul_list_add_tail(struct ul_list *n, struct ul_list *head) { ul_list_insert(n, head->prev, head); }
static inline void ul_list_del(struct ul_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	ul_list_init(n);
}
/* Move every entry of `from` to the tail of `to`. */
static inline void ul_list_splice_tail(struct ul_list *from, struct ul_list *to)
{
	if (ul_list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	ul_list_init(from);
}
#define ul_list_first(head, type, member) \
	(ul_list_empty(head) ? NULL : ul_container_of((head)->next, type, member))
#define ul_list_for_each(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)
#define ul_list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)

#endif
