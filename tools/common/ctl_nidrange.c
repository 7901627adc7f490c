/* SPDX-License-Identifier: MIT */
/*
 * ctl_nidrange.c - lnetctl's NID range lists, as "peer add|del --nid",
 * "route add|del|show --gateway" and import's route gateways take them:
 * comma-separated items, each one NID whose address may hold bracketed
 * ranges ("10.0.[1-2].[1-9/4]@tcp", "[8-12]@gni", "5.5.5.[1,2,3-4]@o2ib").
 *
 * The grammar and the texts follow lnetctl 2.17
 * (liblnetconfig.c: lustre_lnet_parse_nid_range, unroll_nid_range_scan):
 *  - inside brackets: a comma list of N, N-M and N-M/STEP, decimal;
 *  - several bracketed fields expand with the leftmost slowest;
 *  - the whole string is refused first for '*', "<?>" or no '@'.
 * Unlike lnetctl, every expanded NID is checked as a NID (lnetctl passes
 * "1.1.1.300@tcp" on for the kernel to refuse), a range never expands past
 * the caller's maximum (lnetctl builds the whole list first), [0] is 0
 * (lnetctl drops a range whose bounds are both 0) and a step of 0 is
 * refused (lnetctl would loop forever).
 */
#include "ctl_cmds_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NR_MSG(x) "\"Unable to parse nidlist: " x "\""
/* An item of a list ("10.0.0.[1-3]@tcp") is short; these bound the work
 * and the stack of a hostile one. */
#define NR_ITEM_MAX 256
#define NR_BRACKETS_MAX 16

struct nr_exp {
	ulnet_nid_t *nids;
	int max, n;
	const char *msg;
};

static int nr_fail(struct nr_exp *e, const char *msg, int err)
{
	e->msg = msg;
	return err;
}

/* A decimal number of at most 10 digits that fits 32 bits; *q moves past. */
static bool nr_number(const char **q, unsigned long *v)
{
	const char *s = *q;
	unsigned long x = 0;
	int nd = 0;

	while (isdigit((unsigned char)*s) && nd < 11) {
		x = x * 10 + (unsigned long)(*s - '0');
		s++;
		nd++;
	}
	if (nd == 0 || nd > 10 || x > UINT32_MAX)
		return false;
	*q = s;
	*v = x;
	return true;
}

/* One NID with brackets left in `s`: expand the first, recursively. */
static int nr_item(struct nr_exp *e, const char *s, int depth)
{
	const char *lb = strchr(s, '['), *at = strchr(s, '@');

	if (!lb) {
		if (strchr(s, ']'))
			return nr_fail(e, NR_MSG("incomplete bracket set"), -EINVAL);
		if (e->n >= e->max)
			return nr_fail(e, NR_MSG("too many NIDs"), -E2BIG);
		if (ulnet_nid_parse(s, &e->nids[e->n], NULL) < 0)
			return nr_fail(e, NR_MSG("invalid NID in nidstr"), -EINVAL);
		e->n++;
		return 0;
	}
	const char *rb = strchr(lb + 1, ']');

	if (!rb || memchr(lb + 1, '[', (size_t)(rb - lb - 1)))
		return nr_fail(e, NR_MSG("incomplete bracket set"), -EINVAL);
	if ((at && lb > at) || depth >= NR_BRACKETS_MAX)
		return nr_fail(e, NR_MSG("invalid NID in nidstr"), -EINVAL);

	const char *q = lb + 1;
	bool after_comma = false;

	for (;;) {
		unsigned long first, last, step = 1;

		if (!nr_number(&q, &first))
			return after_comma ? nr_fail(e, NR_MSG("range needs number after ,"), -ERANGE)
					   : nr_fail(e, NR_MSG("invalid NID in nidstr"), -EINVAL);
		last = first;
		if (*q == '-') {
			q++;
			if (!nr_number(&q, &last))
				return nr_fail(e, NR_MSG("range needs number after -"), -ERANGE);
		}
		if (*q == '/') {
			q++;
			if (!nr_number(&q, &step))
				return nr_fail(e, NR_MSG("range needs number after /"), -ERANGE);
			if (step == 0)
				return nr_fail(e, NR_MSG("invalid NID in nidstr"), -EINVAL);
		}
		if (first > last)
			return nr_fail(e, NR_MSG("range is wrong order"), -ERANGE);
		for (unsigned long v = first;; v += step) {
			char buf[NR_ITEM_MAX + 16];

			snprintf(buf, sizeof(buf), "%.*s%lu%s", (int)(lb - s), s, v, rb + 1);
			int rc = nr_item(e, buf, depth + 1);

			if (rc < 0)
				return rc;
			if (last - v < step)
				break;
		}
		if (*q == ',') {
			q++;
			after_comma = true;
			continue;
		}
		if (q == rb)
			return 0;
		return nr_fail(e, NR_MSG("invalid NID in nidstr"), -EINVAL);
	}
}

int ctl_nid_range_expand(const char *s, ulnet_nid_t *nids, int max, const char **msg,
			 struct ctl_nidrange_err *where)
{
	struct nr_exp e = { .nids = nids, .max = max };

	if (where)
		*where = (struct ctl_nidrange_err){ 0, strlen(s) };
	/* lnetctl's checks of the whole string, in its order */
	if (strchr(s, '*')) {
		*msg = "asterisk not allowed in nidstring";
		return -EINVAL;
	}
	if (strstr(s, "<?>")) {
		*msg = NR_MSG("LNET_ANY_NID is unsupported");
		return -EINVAL;
	}
	if (!strchr(s, '@')) {
		*msg = NR_MSG("no valid NIDs in string");
		return -EINVAL;
	}
	/* items are separated by commas outside brackets */
	for (const char *p = s;;) {
		const char *end = p;
		int depth = 0;

		while (*end && (depth > 0 || *end != ',')) {
			depth += *end == '[' ? 1 : *end == ']' ? -1 : 0;
			end++;
		}
		char item[NR_ITEM_MAX + 1];
		size_t len = (size_t)(end - p);
		int rc;

		if (where)
			*where = (struct ctl_nidrange_err){ (size_t)(p - s), len };
		if (len > NR_ITEM_MAX) {
			*msg = NR_MSG("invalid NID in nidstr");
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		rc = nr_item(&e, item, 0);
		if (rc < 0) {
			*msg = e.msg;
			return rc;
		}
		if (!*end)
			break;
		p = end + 1;
	}
	return e.n;
}
