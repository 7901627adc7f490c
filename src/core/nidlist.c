/* SPDX-License-Identifier: MIT */
/*
 * nidlist.c - Lustre NID range lists ("192.168.[1-10/2].*@tcp 2001:db8::/32@tcp
 * [0-3]@gni"), parsed into flat arrays and matched against NIDs.
 *
 * Syntax and number rules follow lustre-release 2.17 (cfs_parse_nidlist):
 *  - numbers inside ranges and net numbers after the net name are read like
 *    the kernel's kstrtouint(..., 0): "0x" hex, a leading "0" octal, else
 *    decimal (so "010" is 8 here, unlike in a plain NID);
 *  - an item whose address part has a ':' or a '/' outside brackets is a
 *    netmask; an IPv6 address without "/n" is "/128"; prefix 0 is refused;
 *  - "*" inside a range expression means the whole field range.
 * Differences, all on the safe side: stride 0 is refused (the kernel would
 * divide by zero); dotted ranges and numbers match 4-byte NIDs only (the
 * kernel compares the first word of an IPv6 NID); netmasks are refused on
 * nets that have no IP addresses (as user-space libcfs does), and they do
 * match on efa (kernel efa has no netmask hook, so never matches).
 * Items are separated by any whitespace, not just ' '.
 * No recursion in the parser; memory is bounded by the input length, itself
 * capped. ulnet_nidlist_expand() lists the NIDs of a parsed list (recursing
 * at most four fields deep), never more than the caller's room. The net
 * names and one field's range expression are also parsed for other parsers
 * (nidlist.h: the UDSP descriptors of udsp.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nidlist.h"
#include "ulnet/nid.h"
#include "util/util_bytes.h"

/* Longer lists are refused: real ones are a few hundred bytes. */
#define NIDLIST_MAX_LEN 65536
#define NIDLIST_QUOTE_MAX 48
#define NIDLIST_Q(len) ((int)((len) > NIDLIST_QUOTE_MAX ? NIDLIST_QUOTE_MAX : (len)))

enum nidlist_addr_kind {
	NIDLIST_ADDR_IP,	/* dotted ranges and netmasks */
	NIDLIST_ADDR_IP4,	/* dotted ranges only (gip) */
	NIDLIST_ADDR_NUM,	/* one numeric range */
};

/* Net types a list may name; names come from ulnet_lnd_type_name(). */
static const struct {
	uint8_t type;
	uint8_t kind;
} nidlist_lnds[] = {
	{ ULNET_LND_LO, NIDLIST_ADDR_NUM },
	{ ULNET_LND_TCP, NIDLIST_ADDR_IP },
	{ ULNET_LND_O2IB, NIDLIST_ADDR_IP },
	{ ULNET_LND_GNI, NIDLIST_ADDR_NUM },
	{ ULNET_LND_GIP, NIDLIST_ADDR_IP4 },
	{ ULNET_LND_PTLF, NIDLIST_ADDR_NUM },
	{ ULNET_LND_KFI, NIDLIST_ADDR_NUM },
	{ ULNET_LND_EFA, NIDLIST_ADDR_IP },
	{ ULNET_LND_BXI3F, NIDLIST_ADDR_NUM },
};
#define NIDLIST_NLNDS (sizeof(nidlist_lnds) / sizeof(nidlist_lnds[0]))

/* lo-hi/stride, inclusive. */
struct nidlist_expr {
	uint32_t lo, hi, stride;
};

enum nidlist_item_kind {
	NIDLIST_ALL,	/* "*@net" */
	NIDLIST_IPV4,	/* four fields, each a list of exprs */
	NIDLIST_NUM,	/* one list of exprs over the 32-bit address */
	NIDLIST_MASK4,	/* a.b.c.d/n */
	NIDLIST_MASK6,	/* IPv6[/n] */
};

struct nidlist_item {
	uint8_t kind;
	uint8_t type;
	uint16_t num;
	uint32_t pos;		/* offset of the item in the parsed text */
	union {
		struct {
			/* Field f uses exprs[first[f] .. first[f]+count[f]). */
			uint32_t first[4];
			uint32_t count[4];
		} range;
		struct {
			uint8_t net[16];	/* address & mask */
			uint8_t mask[16];
		} mask;
	} u;
};

struct ulnet_nidlist {
	struct nidlist_item *items;
	size_t nitems, items_cap;
	struct nidlist_expr *exprs;
	size_t nexprs, exprs_cap;
};

/* The whole input, for error positions. */
struct nidlist_ctx {
	const char *s;
	struct ulnet_parse_err *err;
	struct ulnet_nidlist *list;
};

__attribute__((format(printf, 3, 4)))
static int nidlist_fail(struct nidlist_ctx *cx, const char *at, const char *fmt, ...)
{
	va_list ap;

	if (!cx->err)
		return -EINVAL;
	cx->err->pos = (int)(at - cx->s);
	va_start(ap, fmt);
	vsnprintf(cx->err->msg, sizeof(cx->err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool nidlist_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static const char *nidlist_memchr(const char *b, const char *e, char c)
{
	return memchr(b, c, (size_t)(e - b));
}

static int nidlist_digit(char c, unsigned base)
{
	int d;

	if (c >= '0' && c <= '9')
		d = c - '0';
	else if (c >= 'a' && c <= 'f')
		d = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		d = c - 'A' + 10;
	else
		return -1;
	return d < (int)base ? d : -1;
}

/*
 * Number in [b, e) with kstrtouint base-0 rules. Returns 0, -EINVAL for a
 * malformed number, -ERANGE when it exceeds `max`.
 */
static int nidlist_number(const char *b, const char *e, uint32_t max, uint32_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (b == e)
		return -EINVAL;
	if (e - b > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
		base = 16;
		b += 2;
	} else if (e - b > 1 && b[0] == '0') {
		base = 8;
		b++;
	}
	for (; b < e; b++) {
		int d = nidlist_digit(*b, base);

		if (d < 0)
			return -EINVAL;
		v = v * base + (unsigned)d;
		if (v > max)
			return -ERANGE;
	}
	*out = (uint32_t)v;
	return 0;
}

static int nidlist_number_or_fail(struct nidlist_ctx *cx, const char *b, const char *e,
				  uint32_t max, uint32_t *out, const char *what)
{
	int rc = nidlist_number(b, e, max, out);

	if (rc == -ERANGE)
		return nidlist_fail(cx, b, "%s %.*s out of range (max %u)", what,
				    NIDLIST_Q(e - b), b, max);
	if (rc)
		return nidlist_fail(cx, b, "bad %s '%.*s'", what, NIDLIST_Q(e - b), b);
	return 0;
}

static int nidlist_add_expr(struct nidlist_ctx *cx, uint32_t lo, uint32_t hi, uint32_t stride)
{
	struct ulnet_nidlist *l = cx->list;

	if (l->nexprs == l->exprs_cap) {
		size_t cap = l->exprs_cap ? l->exprs_cap * 2 : 8;
		struct nidlist_expr *p = realloc(l->exprs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->exprs = p;
		l->exprs_cap = cap;
	}
	l->exprs[l->nexprs++] = (struct nidlist_expr){ lo, hi, stride };
	return 0;
}

/*
 * One range expression in [b, e): "*", "n", and when bracketed also "a-b" and
 * "a-b/s".
 */
static int nidlist_range_expr(struct nidlist_ctx *cx, const char *b, const char *e,
			      uint32_t max, bool bracketed)
{
	uint32_t lo, hi, stride = 1;
	const char *dash, *slash;
	int rc;

	if (e - b == 1 && *b == '*')
		return nidlist_add_expr(cx, 0, max, 1);
	rc = nidlist_number(b, e, max, &lo);
	if (rc == 0)
		return nidlist_add_expr(cx, lo, lo, 1);
	dash = nidlist_memchr(b, e, '-');
	if (!bracketed || !dash) {
		if (rc == -ERANGE)
			return nidlist_fail(cx, b, "number %.*s out of range (max %u)",
					    NIDLIST_Q(e - b), b, max);
		return nidlist_fail(cx, b, "bad range expression '%.*s'", NIDLIST_Q(e - b), b);
	}
	rc = nidlist_number_or_fail(cx, b, dash, max, &lo, "number");
	if (rc)
		return rc;
	slash = nidlist_memchr(dash + 1, e, '/');
	rc = nidlist_number_or_fail(cx, dash + 1, slash ? slash : e, max, &hi, "number");
	if (rc)
		return rc;
	if (slash) {
		rc = nidlist_number_or_fail(cx, slash + 1, e, max, &stride, "stride");
		if (rc)
			return rc;
		if (stride == 0)
			return nidlist_fail(cx, slash + 1, "stride must not be 0");
	}
	if (lo > hi)
		return nidlist_fail(cx, b, "range '%.*s' is backwards", NIDLIST_Q(e - b), b);
	return nidlist_add_expr(cx, lo, hi, stride);
}

/* "<expr>" or "[<expr>,<expr>...]" in [b, e); appends exprs, counts them. */
static int nidlist_expr_list(struct nidlist_ctx *cx, const char *b, const char *e,
			     uint32_t max, uint32_t *first, uint32_t *count)
{
	size_t start = cx->list->nexprs;
	int rc;

	if (b == e)
		return nidlist_fail(cx, b, "empty address field");
	if (e - b >= 2 && *b == '[' && e[-1] == ']') {
		const char *p = b + 1, *end = e - 1;

		for (;;) {
			const char *comma = nidlist_memchr(p, end, ',');
			const char *te = comma ? comma : end;

			if (p == te)
				return nidlist_fail(cx, p, "empty range expression");
			rc = nidlist_range_expr(cx, p, te, max, true);
			if (rc)
				return rc;
			if (!comma)
				break;
			p = comma + 1;
		}
	} else {
		rc = nidlist_range_expr(cx, b, e, max, false);
		if (rc)
			return rc;
	}
	*first = (uint32_t)start;
	*count = (uint32_t)(cx->list->nexprs - start);
	return 0;
}

/* --- pieces other parsers reuse (nidlist.h) --------------------------------- */

int lnet_nidlist_net_name(const char *b, const char *e, uint8_t *type, size_t *len,
			  unsigned *fields)
{
	for (size_t i = 0; i < NIDLIST_NLNDS; i++) {
		const char *name = ulnet_lnd_type_name(nidlist_lnds[i].type);
		size_t nl = name ? strlen(name) : 0;

		if (!name || nl > (size_t)(e - b) || memcmp(b, name, nl) != 0)
			continue;
		*type = nidlist_lnds[i].type;
		*len = nl;
		*fields = nidlist_lnds[i].kind == NIDLIST_ADDR_NUM ? 1 : 4;
		return 0;
	}
	return -EINVAL;
}

int lnet_nidlist_field_parse(const char *s, const char *b, const char *e, uint32_t max,
			     struct lnet_range **v, uint32_t *n, struct ulnet_parse_err *err)
{
	struct ulnet_nidlist tmp = { 0 };
	struct nidlist_ctx cx = { .s = s, .err = err, .list = &tmp };
	uint32_t first, count;
	int rc = nidlist_expr_list(&cx, b, e, max, &first, &count);

	if (rc == 0) {
		struct lnet_range *p = realloc(*v, (*n + count) * sizeof(**v));

		if (p) {
			for (uint32_t i = 0; i < count; i++)
				p[*n + i] = (struct lnet_range){ tmp.exprs[first + i].lo,
								 tmp.exprs[first + i].hi,
								 tmp.exprs[first + i].stride };
			*v = p;
			*n += count;
		} else {
			rc = -ENOMEM;
		}
	}
	free(tmp.exprs);
	return rc;
}

/* Strict dotted quad, as for NIDs. */
static bool nidlist_ipv4(const char *b, const char *e, uint8_t out[4])
{
	for (int f = 0; f < 4; f++) {
		unsigned v = 0, nd = 0;

		if (f > 0) {
			if (b >= e || *b != '.')
				return false;
			b++;
		}
		while (b < e && *b >= '0' && *b <= '9' && nd < 4) {
			v = v * 10 + (unsigned)(*b - '0');
			b++;
			nd++;
		}
		if (nd == 0 || nd > 3 || v > 255)
			return false;
		out[f] = (uint8_t)v;
	}
	return b == e;
}

/* "a.b.c.d/n", "ipv6" or "ipv6/n" in [b, e). */
static int nidlist_mask(struct nidlist_ctx *cx, const char *b, const char *e,
			struct nidlist_item *it)
{
	const char *slash = nidlist_memchr(b, e, '/');
	const char *ae = slash ? slash : e;
	bool v6 = nidlist_memchr(b, e, ':') != NULL;
	uint32_t max = v6 ? 128 : 32, plen = max;
	uint8_t addr[16] = { 0 };

	if (slash) {
		const char *p;

		/* The prefix length is plain decimal in the kernel. */
		for (p = slash + 1; p < e; p++)
			if (*p < '0' || *p > '9')
				break;
		if (p != e || nidlist_number(slash + 1, e, max, &plen) || plen == 0)
			return nidlist_fail(cx, slash + 1, "bad prefix length '%.*s' (1-%u)",
					    NIDLIST_Q(e - slash - 1), slash + 1, max);
	}
	if (v6) {
		char a6[INET6_ADDRSTRLEN];
		size_t alen = (size_t)(ae - b);

		if (alen >= sizeof(a6))
			return nidlist_fail(cx, b, "bad IPv6 address '%.*s'", NIDLIST_Q(alen), b);
		memcpy(a6, b, alen);
		a6[alen] = '\0';
		if (inet_pton(AF_INET6, a6, addr) != 1)
			return nidlist_fail(cx, b, "bad IPv6 address '%.*s'", NIDLIST_Q(alen), b);
		it->kind = NIDLIST_MASK6;
	} else {
		if (!nidlist_ipv4(b, ae, addr))
			return nidlist_fail(cx, b, "bad IPv4 address '%.*s'", NIDLIST_Q(ae - b), b);
		it->kind = NIDLIST_MASK4;
	}
	memset(it->u.mask.mask, 0, sizeof(it->u.mask.mask));
	for (uint32_t i = 0; i < plen; i++)
		it->u.mask.mask[i / 8] |= (uint8_t)(0x80u >> (i % 8));
	for (int i = 0; i < 16; i++)
		it->u.mask.net[i] = addr[i] & it->u.mask.mask[i];
	return 0;
}

/* Net name and optional number in [b, e). */
static int nidlist_net(struct nidlist_ctx *cx, const char *b, const char *e,
		       struct nidlist_item *it, uint8_t *kind)
{
	uint32_t num = 0;
	int rc;

	if (b == e)
		return nidlist_fail(cx, b, "missing network name");
	for (size_t i = 0; i < NIDLIST_NLNDS; i++) {
		const char *name = ulnet_lnd_type_name(nidlist_lnds[i].type);
		size_t nl = name ? strlen(name) : 0;

		if (!name || nl > (size_t)(e - b) || memcmp(b, name, nl) != 0)
			continue;
		if (b + nl < e) {
			rc = nidlist_number(b + nl, e, 0xffff, &num);
			if (rc == -ERANGE)
				return nidlist_fail(cx, b + nl, "net number %.*s out of range",
						    NIDLIST_Q(e - b - (ptrdiff_t)nl), b + nl);
			if (rc)
				return nidlist_fail(cx, b, "unknown network '%.*s'",
						    NIDLIST_Q(e - b), b);
		}
		it->type = nidlist_lnds[i].type;
		it->num = (uint16_t)num;
		*kind = nidlist_lnds[i].kind;
		return 0;
	}
	return nidlist_fail(cx, b, "unknown network type '%.*s'", NIDLIST_Q(e - b), b);
}

static int nidlist_add_item(struct nidlist_ctx *cx, const struct nidlist_item *it)
{
	struct ulnet_nidlist *l = cx->list;

	if (l->nitems == l->items_cap) {
		size_t cap = l->items_cap ? l->items_cap * 2 : 4;
		struct nidlist_item *p = realloc(l->items, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->items = p;
		l->items_cap = cap;
	}
	l->items[l->nitems++] = *it;
	return 0;
}

/* One "<addrrange>@<net>" item in [b, e) (no whitespace inside). */
static int nidlist_item(struct nidlist_ctx *cx, const char *b, const char *e)
{
	const char *at = nidlist_memchr(b, e, '@'), *slash, *second;
	struct nidlist_item it;
	uint8_t kind = NIDLIST_ADDR_NUM;
	int rc;

	memset(&it, 0, sizeof(it));
	it.pos = (uint32_t)(b - cx->s);
	if (!at)
		return nidlist_fail(cx, b, "missing '@' in '%.*s'", NIDLIST_Q(e - b), b);
	second = nidlist_memchr(at + 1, e, '@');
	if (second)
		return nidlist_fail(cx, second, "more than one '@' in '%.*s'", NIDLIST_Q(e - b), b);
	rc = nidlist_net(cx, at + 1, e, &it, &kind);
	if (rc)
		return rc;
	if (at == b)
		return nidlist_fail(cx, b, "missing address range before '@'");

	slash = nidlist_memchr(b, at, '/');
	if (at - b == 1 && *b == '*') {
		it.kind = NIDLIST_ALL;
	} else if (nidlist_memchr(b, at, ':') || (slash && !nidlist_memchr(slash, at, ']'))) {
		if (kind != NIDLIST_ADDR_IP)
			return nidlist_fail(cx, b, "network type '%s' does not take netmasks",
					    ulnet_lnd_type_name(it.type));
		rc = nidlist_mask(cx, b, at, &it);
	} else if (kind == NIDLIST_ADDR_NUM) {
		it.kind = NIDLIST_NUM;
		rc = nidlist_expr_list(cx, b, at, 0xffffffffu, &it.u.range.first[0],
				       &it.u.range.count[0]);
	} else {
		const char *p = b;
		int f = 0;

		it.kind = NIDLIST_IPV4;
		for (;;) {
			const char *dot = nidlist_memchr(p, at, '.');
			const char *fe = dot ? dot : at;

			if (f == 4)
				return nidlist_fail(cx, p, "IPv4 range has more than 4 fields");
			rc = nidlist_expr_list(cx, p, fe, 255, &it.u.range.first[f],
					       &it.u.range.count[f]);
			if (rc)
				return rc;
			f++;
			if (!dot)
				break;
			p = dot + 1;
		}
		if (f != 4)
			return nidlist_fail(cx, b, "IPv4 range '%.*s' needs 4 fields",
					    NIDLIST_Q(at - b), b);
	}
	if (rc)
		return rc;
	return nidlist_add_item(cx, &it);
}

void ulnet_nidlist_free(ulnet_nidlist_t *list)
{
	if (!list)
		return;
	free(list->items);
	free(list->exprs);
	free(list);
}

int ulnet_nidlist_parse(const char *s, ulnet_nidlist_t **out, struct ulnet_parse_err *err)
{
	struct nidlist_ctx cx = { .s = s, .err = err };
	size_t len = strnlen(s, NIDLIST_MAX_LEN + 1);
	const char *p = s, *end = s + len;
	int rc = 0;

	*out = NULL;
	if (len > NIDLIST_MAX_LEN)
		return nidlist_fail(&cx, s + NIDLIST_MAX_LEN, "NID list longer than %d bytes",
				    NIDLIST_MAX_LEN);
	cx.list = calloc(1, sizeof(*cx.list));
	if (!cx.list)
		return -ENOMEM;
	for (;;) {
		const char *b;

		while (p < end && nidlist_isspace(*p))
			p++;
		if (p == end)
			break;
		b = p;
		while (p < end && !nidlist_isspace(*p))
			p++;
		rc = nidlist_item(&cx, b, p);
		if (rc)
			break;
	}
	if (rc == 0 && cx.list->nitems == 0)
		rc = nidlist_fail(&cx, s, "empty NID list");
	if (rc) {
		ulnet_nidlist_free(cx.list);
		return rc;
	}
	*out = cx.list;
	return 0;
}

static bool nidlist_exprs_match(const ulnet_nidlist_t *list, uint32_t first, uint32_t count,
				uint32_t v)
{
	for (uint32_t i = first; i < first + count; i++) {
		const struct nidlist_expr *x = &list->exprs[i];

		if (v >= x->lo && v <= x->hi && (v - x->lo) % x->stride == 0)
			return true;
	}
	return false;
}

static bool nidlist_item_match(const ulnet_nidlist_t *list, const struct nidlist_item *it,
			       const ulnet_nid_t *nid)
{
	switch (it->kind) {
	case NIDLIST_ALL:
		return true;
	case NIDLIST_NUM:
		return nid->size == 0 &&
		       nidlist_exprs_match(list, it->u.range.first[0], it->u.range.count[0],
					   ul_get_be32(nid->addr));
	case NIDLIST_IPV4:
		if (nid->size != 0)
			return false;
		for (int f = 0; f < 4; f++)
			if (!nidlist_exprs_match(list, it->u.range.first[f], it->u.range.count[f],
						 nid->addr[f]))
				return false;
		return true;
	case NIDLIST_MASK4:
	case NIDLIST_MASK6: {
		int n = it->kind == NIDLIST_MASK4 ? 4 : 16;

		if (nid->size != (it->kind == NIDLIST_MASK4 ? 0 : 12))
			return false;
		for (int i = 0; i < n; i++)
			if ((nid->addr[i] & it->u.mask.mask[i]) != it->u.mask.net[i])
				return false;
		return true;
	}
	}
	return false;
}

bool ulnet_nidlist_match(const ulnet_nidlist_t *list, const ulnet_nid_t *nid)
{
	if (!list || ulnet_nid_is_any(nid))
		return false;
	for (size_t i = 0; i < list->nitems; i++) {
		const struct nidlist_item *it = &list->items[i];

		if (it->type == nid->type && it->num == nid->num &&
		    nidlist_item_match(list, it, nid))
			return true;
	}
	return false;
}

/* --- expansion ------------------------------------------------------------------ */

struct nidlist_exp {
	const ulnet_nidlist_t *list;
	const struct nidlist_item *it;
	ulnet_nid_t *nids;
	int max, n;
};

/* Every value of field f (and of the fields after it), in order. */
static int nidlist_expand_field(struct nidlist_exp *x, int f, int nfields, ulnet_nid_t *nid)
{
	const struct nidlist_item *it = x->it;

	if (f == nfields) {
		if (x->n >= x->max)
			return -E2BIG;
		x->nids[x->n++] = *nid;
		return 0;
	}
	for (uint32_t i = it->u.range.first[f]; i < it->u.range.first[f] + it->u.range.count[f];
	     i++) {
		const struct nidlist_expr *e = &x->list->exprs[i];

		for (uint64_t v = e->lo; v <= e->hi; v += e->stride) {
			int rc;

			if (nfields == 1)
				ul_put_be32(nid->addr, (uint32_t)v);
			else
				nid->addr[f] = (uint8_t)v;
			rc = nidlist_expand_field(x, f + 1, nfields, nid);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int ulnet_nidlist_expand(const ulnet_nidlist_t *list, ulnet_nid_t *nids, int max,
			 struct ulnet_parse_err *err)
{
	struct nidlist_exp x = { .list = list, .nids = nids, .max = max };

	if (!list || max < 0 || (max > 0 && !nids))
		return -EINVAL;
	for (size_t i = 0; i < list->nitems; i++) {
		const struct nidlist_item *it = &list->items[i];
		ulnet_nid_t nid;
		int rc;

		x.it = it;
		memset(&nid, 0, sizeof(nid));
		nid.type = it->type;
		nid.num = it->num;
		if (it->kind == NIDLIST_IPV4)
			rc = nidlist_expand_field(&x, 0, 4, &nid);
		else if (it->kind == NIDLIST_NUM)
			rc = nidlist_expand_field(&x, 0, 1, &nid);
		else
			rc = -EDOM;
		if (rc && err) {
			err->pos = (int)it->pos;
			if (rc == -EDOM)
				snprintf(err->msg, sizeof(err->msg),
					 "item is no list of NIDs ('*', a netmask or IPv6)");
			else
				snprintf(err->msg, sizeof(err->msg), "expands to more than %d NIDs",
					 max);
		}
		if (rc)
			return rc;
	}
	return x.n;
}
