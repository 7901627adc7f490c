/* SPDX-License-Identifier: MIT */
/*
 * nidlist.h - pieces of the NID range list parser (nidlist.c) that other
 * parts of the core reuse: the net names a list may use, and one field's
 * range expression ("7", "*", "[1-3,8-20/4]") with the nidlist rules for
 * numbers (base 0), strides and "*".
 */
#ifndef ULNET_CORE_NIDLIST_H
#define ULNET_CORE_NIDLIST_H

#include <stddef.h>
#include <stdint.h>

#include "ulnet/nid.h"

/* lo-hi/stride, inclusive; stride at least 1. */
struct lnet_range {
	uint32_t lo, hi, stride;
};

/*
 * The net name that begins [b, e) ("tcp" of "tcp1", "o2ib" of "o2ib[2-3]"):
 * its LND type, the length of the name, and how many dotted fields an
 * address range on that net has (4 for IP nets, 1 for numeric ones).
 * Returns 0, or -EINVAL when no net name a list may use begins the text.
 */
int lnet_nidlist_net_name(const char *b, const char *e, uint8_t *type, size_t *len,
			  unsigned *fields);

/*
 * One field's expression in [b, e): a number, "*" (0..max), or a bracketed
 * comma list of numbers and "lo-hi[/stride]" ranges. The ranges are
 * appended to *v (grown with realloc; *n counts them). Returns 0, -ENOMEM,
 * or -EINVAL with `err` (may be NULL) saying why, its position counted
 * from `s`, the start of the whole text.
 */
int lnet_nidlist_field_parse(const char *s, const char *b, const char *e, uint32_t max,
			     struct lnet_range **v, uint32_t *n, struct ulnet_parse_err *err);

#endif
