/* SPDX-License-Identifier: MIT */
/*
 * udsp.c - user defined selection policies (UDSP), kernel LNet 2.17's
 * lnetctl udsp add/del/show: the rule table of an instance, the parsing,
 * matching and canonical form of a rule's descriptors, and what the rules
 * set on our NIs and on peer NIs (the send path reads those, send.c and
 * route.c).
 *
 * The kernel applies a rule by writing into every construct it matches,
 * the rules in reverse index order, so that the lowest index wins. Here a
 * construct's values are computed from the whole table, the first rule in
 * index order that matches winning, which gives the same values; they are
 * computed again when the table changes (so a deleted rule's constructs go
 * back to what the other rules give them, where the kernel leaves them
 * with no priority until some later change) and when what a value depends
 * on changes: a peer NI added, an NI added or taken out (the preferred
 * local NIs), a route added or deleted (the preferred gateways).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nidlist.h"
#include "core/route.h"
#include "core/udsp.h"
#include "util/util_bytes.h"

/* One descriptor: a net type, its net numbers (none: number 0 only, as
 * the kernel's cfs_match_net()), and 0, 1 (numeric nets) or 4 (IP nets)
 * address fields, each a list of ranges. */
#define UDSP_FIELDS 5   /* [0] net numbers, [1..4] address fields */

struct lnet_udsp_descr {
	uint8_t type;                  /* 0: absent */
	uint8_t nfields;               /* address fields: 0 (a net alone), 1, 4 */
	uint32_t first[UDSP_FIELDS], count[UDSP_FIELDS];
	struct lnet_range *r;
	uint32_t nr;
	char text[ULNET_UDSP_STR_MAX]; /* canonical form */
};

struct lnet_udsp {
	struct ul_list ud_list;        /* ln_udsp, index order */
	struct lnet_udsp_descr ud_d[ULNET_UDSP_NPARTS];
	enum ulnet_udsp_action ud_action;
	uint32_t ud_priority;
	unsigned ud_kind;              /* LNET_UDSP_K_* */
};

static const char *const udsp_part_name[ULNET_UDSP_NPARTS] = { "src", "dst", "rte" };

/* --- descriptors ----------------------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static int udsp_fail(struct ulnet_parse_err *err, const char *s, const char *at, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -EINVAL;
	err->pos = (int)(at - s);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* One field's ranges as lnetctl writes them: "7", "[1-3]", "[2-8/2]",
 * and a list (lnetctl garbles those) as "[1,3-5]". */
static void udsp_field_str(char *buf, size_t len, size_t *off, const struct lnet_range *r,
			   uint32_t n)
{
	if (n == 1 && r[0].lo == r[0].hi) {
		*off += (size_t)snprintf(buf + *off, *off < len ? len - *off : 0, "%u", r[0].lo);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const char *sep = i ? "," : "[";

		if (r[i].lo == r[i].hi)
			*off += (size_t)snprintf(buf + *off, *off < len ? len - *off : 0, "%s%u", sep,
						 r[i].lo);
		else if (r[i].stride > 1)
			*off += (size_t)snprintf(buf + *off, *off < len ? len - *off : 0, "%s%u-%u/%u",
						 sep, r[i].lo, r[i].hi, r[i].stride);
		else
			*off += (size_t)snprintf(buf + *off, *off < len ? len - *off : 0, "%s%u-%u", sep,
						 r[i].lo, r[i].hi);
	}
	*off += (size_t)snprintf(buf + *off, *off < len ? len - *off : 0, "]");
}

static void udsp_descr_free(struct lnet_udsp_descr *d)
{
	free(d->r);
	memset(d, 0, sizeof(*d));
}

/*
 * "tcp", "tcp1", "tcp[1-3]", "192.168.1.[1-10/2]@tcp", "[5-9]@gni1": the
 * kernel's cfs_parse_nid_parts() syntax, its numbers and ranges read by
 * the nidlist parser. Returns 0, -ENOMEM or -EINVAL (err says why).
 */
static int udsp_descr_parse(const char *s, struct lnet_udsp_descr *d, struct ulnet_parse_err *err)
{
	size_t slen = strnlen(s, ULNET_UDSP_STR_MAX);
	const char *end = s + slen, *at = memchr(s, '@', slen), *nb, *p;
	unsigned fields;
	size_t nl, off = 0;
	int rc;

	memset(d, 0, sizeof(*d));
	if (slen == ULNET_UDSP_STR_MAX)
		return udsp_fail(err, s, s + ULNET_UDSP_STR_MAX - 1, "longer than %d bytes",
				 ULNET_UDSP_STR_MAX - 1);
	if (slen == 0)
		return udsp_fail(err, s, s, "empty");
	if (at && memchr(at + 1, '@', (size_t)(end - at - 1)))
		return udsp_fail(err, s, at, "more than one '@'");
	nb = at ? at + 1 : s;
	if (lnet_nidlist_net_name(nb, end, &d->type, &nl, &fields) < 0)
		return udsp_fail(err, s, nb, "unknown network type '%.*s'", (int)(end - nb), nb);
	/* the net number: none, a number, "*" or a bracketed list */
	p = nb + nl;
	if (p < end) {
		if (*p != '[' && *p != '*' && (*p < '0' || *p > '9'))
			return udsp_fail(err, s, nb, "unknown network '%.*s'", (int)(end - nb), nb);
		d->first[0] = d->nr;
		rc = lnet_nidlist_field_parse(s, p, end, 0xffff, &d->r, &d->nr, err);
		if (rc)
			goto fail;
		d->count[0] = d->nr - d->first[0];
	}
	if (at) {
		const char *fb = s;

		if (at == s) {
			rc = udsp_fail(err, s, s, "missing address range before '@'");
			goto fail;
		}
		d->nfields = (uint8_t)fields;
		for (unsigned f = 1; f <= fields; f++) {
			const char *dot = fields > 1 && f < fields ? memchr(fb, '.', (size_t)(at - fb)) : NULL;
			const char *fe = dot ? dot : at;

			if (fields > 1 && f < fields && !dot) {
				rc = udsp_fail(err, s, s, "address range '%.*s' needs %u dotted fields",
					       (int)(at - s), s, fields);
				goto fail;
			}
			d->first[f] = d->nr;
			rc = lnet_nidlist_field_parse(s, fb, fe, fields > 1 ? 255 : 0xffffffffu, &d->r,
						      &d->nr, err);
			if (rc)
				goto fail;
			d->count[f] = d->nr - d->first[f];
			fb = fe + 1;
		}
		/* canonical form: fields, '@', the net */
		for (unsigned f = 1; f <= fields; f++) {
			if (f > 1)
				off += (size_t)snprintf(d->text + off, off < sizeof(d->text) ? sizeof(d->text) - off : 0, ".");
			udsp_field_str(d->text, sizeof(d->text), &off, d->r + d->first[f], d->count[f]);
		}
		off += (size_t)snprintf(d->text + off, off < sizeof(d->text) ? sizeof(d->text) - off : 0, "@");
	}
	off += (size_t)snprintf(d->text + off, off < sizeof(d->text) ? sizeof(d->text) - off : 0, "%s",
				ulnet_lnd_type_name(d->type));
	if (d->count[0])
		udsp_field_str(d->text, sizeof(d->text), &off, d->r + d->first[0], d->count[0]);
	if (off >= sizeof(d->text)) {
		rc = udsp_fail(err, s, s, "longer than %d bytes once written out",
			       ULNET_UDSP_STR_MAX - 1);
		goto fail;
	}
	return 0;
fail:
	udsp_descr_free(d);
	return rc;
}

static bool udsp_ranges_match(const struct lnet_udsp_descr *d, unsigned f, uint32_t v)
{
	for (uint32_t i = d->first[f]; i < d->first[f] + d->count[f]; i++) {
		const struct lnet_range *r = &d->r[i];

		if (v >= r->lo && v <= r->hi && (v - r->lo) % r->stride == 0)
			return true;
	}
	return false;
}

/* The kernel's cfs_match_net(): a descriptor without net numbers names
 * number 0 only. */
static bool udsp_match_net(const struct lnet_udsp_descr *d, ulnet_net_t net)
{
	if (ulnet_net_type(net) != d->type)
		return false;
	if (!d->count[0])
		return ulnet_net_num(net) == 0;
	return udsp_ranges_match(d, 0, ulnet_net_num(net));
}

/* The kernel's cfs_match_nid_net(): a net alone matches no NID; a large
 * (IPv6) NID matches no address range. */
static bool udsp_match_nid(const struct lnet_udsp_descr *d, const ulnet_nid_t *nid)
{
	if (!d->nfields || nid->size != 0 || !udsp_match_net(d, ulnet_nid_net(nid)))
		return false;
	if (d->nfields == 1)
		return udsp_ranges_match(d, 1, ul_get_be32(nid->addr));
	for (unsigned f = 0; f < 4; f++)
		if (!udsp_ranges_match(d, f + 1, nid->addr[f]))
			return false;
	return true;
}

/* A peer NI matches a descriptor by its NID, or by its net when the
 * descriptor is a net alone (the kernel's lnet_udsp_apply_rule_on_lpni()). */
static bool udsp_match_lpni(const struct lnet_udsp_descr *d, const ulnet_nid_t *nid)
{
	return d->nfields ? udsp_match_nid(d, nid) : udsp_match_net(d, ulnet_nid_net(nid));
}

/* --- the table --------------------------------------------------------------------- */

void lnet_udsp_init(ulnet_t *ln)
{
	ul_list_init(&ln->ln_udsp);
	ln->ln_nudsp = 0;
	ln->ln_udsp_kinds = 0;
}

static void udsp_free(struct lnet_udsp *u)
{
	for (int i = 0; i < ULNET_UDSP_NPARTS; i++)
		udsp_descr_free(&u->ud_d[i]);
	free(u);
}

void lnet_udsp_fini(ulnet_t *ln)
{
	struct lnet_udsp *u;

	while ((u = ul_list_first(&ln->ln_udsp, struct lnet_udsp, ud_list))) {
		ul_list_del(&u->ud_list);
		udsp_free(u);
	}
	ln->ln_nudsp = 0;
	ln->ln_udsp_kinds = 0;
}

static void udsp_kinds_locked(ulnet_t *ln)
{
	struct ul_list *pos;

	ln->ln_udsp_kinds = 0;
	ul_list_for_each(pos, &ln->ln_udsp)
		ln->ln_udsp_kinds |= ul_container_of(pos, struct lnet_udsp, ud_list)->ud_kind;
}

/* --- what the rules set ----------------------------------------------------------- */

static void udsp_apply_ni_locked(ulnet_t *ln, struct lnet_ni *ni)
{
	bool net_set = false, nid_set = false;
	struct ul_list *pos;

	ni->ni_sel_prio = ULNET_UDSP_PRIO_NONE;
	ni->ni_net_sel_prio = ULNET_UDSP_PRIO_NONE;
	ul_list_for_each(pos, &ln->ln_udsp) {
		const struct lnet_udsp *u = ul_container_of(pos, struct lnet_udsp, ud_list);
		const struct lnet_udsp_descr *d = &u->ud_d[ULNET_UDSP_SRC];

		if (u->ud_kind != LNET_UDSP_K_SRC)
			continue;
		if (!d->nfields && !net_set && udsp_match_net(d, ulnet_nid_net(&ni->ni_nid))) {
			ni->ni_net_sel_prio = u->ud_priority;
			net_set = true;
		} else if (d->nfields && !nid_set && udsp_match_nid(d, &ni->ni_nid)) {
			ni->ni_sel_prio = u->ud_priority;
			nid_set = true;
		}
	}
}

/* The gateway of route r by its primary NID, as the kernel matches it. */
static const ulnet_nid_t *udsp_gw_primary(const struct lnet_route *r)
{
	return r->lr_gw->lpni_peer ? &r->lr_gw->lpni_peer->lp_primary : &r->lr_nid;
}

static bool udsp_nid_in(const ulnet_nid_t *v, int n, const ulnet_nid_t *nid)
{
	for (int i = 0; i < n; i++)
		if (lnet_nid_eq(&v[i], nid))
			return true;
	return false;
}

/* Our NIDs matching `src`, into v (room for ln_nnis). */
static int udsp_local_nids_locked(ulnet_t *ln, const struct lnet_udsp_descr *src, ulnet_nid_t *v)
{
	struct ul_list *pos;
	int n = 0;

	ul_list_for_each(pos, &ln->ln_nis) {
		const struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (n < ln->ln_nnis && udsp_match_nid(src, &ni->ni_nid))
			v[n++] = ni->ni_nid;
	}
	return n;
}

/* The primary NIDs of the gateways matching `rte`, each once, into v
 * (room for ln_nroutes). */
static int udsp_gateways_locked(ulnet_t *ln, const struct lnet_udsp_descr *rte, ulnet_nid_t *v)
{
	int n = 0;

	lnet_for_each_route(ln, rn, r) {
		const ulnet_nid_t *gw = udsp_gw_primary(r);

		if (n < ln->ln_nroutes && udsp_match_nid(rte, gw) && !udsp_nid_in(v, n, gw))
			v[n++] = *gw;
	}
	return n;
}

static int udsp_apply_lpni_locked(ulnet_t *ln, struct lnet_peer_ni *lpni)
{
	const ulnet_nid_t *nid = &lpni->lpni_nid;
	bool net_set = false, nid_set = false, src_set = false, rtr_set = false;
	ulnet_nid_t *src = NULL, *rtr = NULL;
	int nsrc = 0, nrtr = 0, rc = 0;
	struct ul_list *pos;

	lpni->lpni_sel_prio = ULNET_UDSP_PRIO_NONE;
	lpni->lpni_net_sel_prio = ULNET_UDSP_PRIO_NONE;
	ul_list_for_each(pos, &ln->ln_udsp) {
		const struct lnet_udsp *u = ul_container_of(pos, struct lnet_udsp, ud_list);
		const struct lnet_udsp_descr *d = &u->ud_d[ULNET_UDSP_DST];

		switch (u->ud_kind) {
		case LNET_UDSP_K_DST:
			if (!d->nfields && !net_set && udsp_match_net(d, ulnet_nid_net(nid))) {
				lpni->lpni_net_sel_prio = u->ud_priority;
				net_set = true;
			} else if (d->nfields && !nid_set && udsp_match_nid(d, nid)) {
				lpni->lpni_sel_prio = u->ud_priority;
				nid_set = true;
			}
			break;
		case LNET_UDSP_K_PAIR:
			/* the first matching rule that names one of our NIs */
			if (src_set || !udsp_match_lpni(d, nid))
				break;
			if (!src && !(src = malloc((size_t)(ln->ln_nnis + 1) * sizeof(*src)))) {
				rc = -ENOMEM;
				goto out;
			}
			nsrc = udsp_local_nids_locked(ln, &u->ud_d[ULNET_UDSP_SRC], src);
			src_set = nsrc > 0;
			break;
		case LNET_UDSP_K_RTE:
			if (rtr_set || !udsp_match_lpni(d, nid))
				break;
			if (!rtr && !(rtr = malloc((size_t)(ln->ln_nroutes + 1) * sizeof(*rtr)))) {
				rc = -ENOMEM;
				goto out;
			}
			nrtr = udsp_gateways_locked(ln, &u->ud_d[ULNET_UDSP_RTE], rtr);
			rtr_set = nrtr > 0;
			break;
		default:
			break;
		}
	}
	lnet_udsp_lpni_fini(lpni);
	if (nsrc + nrtr > 0) {
		struct lnet_udsp_pref *p = malloc(sizeof(*p) + (size_t)(nsrc + nrtr) * sizeof(p->nids[0]));

		if (!p) {
			rc = -ENOMEM;
			goto out;
		}
		p->nsrc = (uint16_t)nsrc;
		p->nrtr = (uint16_t)nrtr;
		if (nsrc)
			memcpy(p->nids, src, (size_t)nsrc * sizeof(*src));
		if (nrtr)
			memcpy(p->nids + nsrc, rtr, (size_t)nrtr * sizeof(*rtr));
		lpni->lpni_udsp = p;
	}
out:
	free(src);
	free(rtr);
	return rc;
}

/* Every peer NI (the table holds each peer NI of a peer, and only those). */
static void udsp_apply_lpnis_locked(ulnet_t *ln)
{
	char nb[ULNET_NIDSTR_SIZE];

	for (unsigned b = 0; ln->ln_pni_hash && b < ln->ln_pni_hash_size; b++) {
		struct ul_list *pos;

		ul_list_for_each(pos, &ln->ln_pni_hash[b]) {
			struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_hash);

			if (udsp_apply_lpni_locked(ln, lpni) < 0)
				lnet_log(ln, ULNET_LOG_ERROR, "UDSP: no memory for the preferred lists of %s",
					 lnet_nidstr(&lpni->lpni_nid, nb));
		}
	}
}

static void udsp_apply_all_locked(ulnet_t *ln)
{
	struct ul_list *pos;

	udsp_kinds_locked(ln);
	ul_list_for_each(pos, &ln->ln_nis)
		udsp_apply_ni_locked(ln, ul_container_of(pos, struct lnet_ni, ni_list));
	udsp_apply_lpnis_locked(ln);
}

void lnet_udsp_ni_added_locked(ulnet_t *ln, struct lnet_ni *ni)
{
	udsp_apply_ni_locked(ln, ni);
	if (ln->ln_udsp_kinds & LNET_UDSP_K_PAIR)
		udsp_apply_lpnis_locked(ln);
}

void lnet_udsp_ni_removed_locked(ulnet_t *ln)
{
	if (ln->ln_udsp_kinds & LNET_UDSP_K_PAIR)
		udsp_apply_lpnis_locked(ln);
}

void lnet_udsp_lpni_added_locked(ulnet_t *ln, struct lnet_peer_ni *lpni)
{
	char nb[ULNET_NIDSTR_SIZE];

	lpni->lpni_sel_prio = ULNET_UDSP_PRIO_NONE;
	lpni->lpni_net_sel_prio = ULNET_UDSP_PRIO_NONE;
	if (ln->ln_nudsp && udsp_apply_lpni_locked(ln, lpni) < 0)
		lnet_log(ln, ULNET_LOG_ERROR, "UDSP: no memory for the preferred lists of %s",
			 lnet_nidstr(&lpni->lpni_nid, nb));
}

void lnet_udsp_routes_changed_locked(ulnet_t *ln)
{
	if (ln->ln_udsp_kinds & LNET_UDSP_K_RTE)
		udsp_apply_lpnis_locked(ln);
}

/* --- selection ----------------------------------------------------------------------- */

uint32_t lnet_udsp_net_prio_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		const struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ulnet_nid_net(&ni->ni_nid) == net)
			return ni->ni_net_sel_prio;
	}
	return ULNET_UDSP_PRIO_NONE;
}

bool lnet_udsp_src_preferred(const struct lnet_peer_ni *lpni, const ulnet_nid_t *nid)
{
	const struct lnet_udsp_pref *p = lpni->lpni_udsp;

	return p && udsp_nid_in(p->nids, p->nsrc, nid);
}

bool lnet_udsp_rtr_preferred(const struct lnet_peer_ni *lpni, const ulnet_nid_t *gw)
{
	const struct lnet_udsp_pref *p = lpni->lpni_udsp;

	return p && udsp_nid_in(p->nids + p->nsrc, p->nrtr, gw);
}

/* --- API ------------------------------------------------------------------------------ */

static bool udsp_same(const struct lnet_udsp *a, const struct lnet_udsp *b)
{
	for (int i = 0; i < ULNET_UDSP_NPARTS; i++)
		if (a->ud_d[i].type != b->ud_d[i].type ||
		    strcmp(a->ud_d[i].text, b->ud_d[i].text) != 0)
			return false;
	return true;
}

__attribute__((format(printf, 3, 4)))
static int udsp_refuse(struct ulnet_udsp_err *err, int part, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -EOPNOTSUPP;
	err->part = part;
	err->parse.pos = 0;
	va_start(ap, fmt);
	vsnprintf(err->parse.msg, sizeof(err->parse.msg), fmt, ap);
	va_end(ap);
	return -EOPNOTSUPP;
}

/* The kind of rule, or -EOPNOTSUPP for what the kernel would keep and
 * never apply (lnet_udsp_apply_single_policy() skips it). */
static int udsp_kind(const struct lnet_udsp *u, struct ulnet_udsp_err *err)
{
	bool src = u->ud_d[ULNET_UDSP_SRC].type, dst = u->ud_d[ULNET_UDSP_DST].type;
	bool rte = u->ud_d[ULNET_UDSP_RTE].type;
	bool prio = u->ud_action == ULNET_UDSP_ACTION_PRIORITY;

	if (rte && !dst)
		return udsp_refuse(err, ULNET_UDSP_RTE, "rte without dst");
	if ((src && dst) || rte) {
		const int part = rte ? ULNET_UDSP_RTE : ULNET_UDSP_SRC;

		if (prio)
			return udsp_refuse(err, -1, "a priority on %s", rte ? "dst + rte" : "src + dst");
		if (!u->ud_d[part].nfields)
			return udsp_refuse(err, part,
					   "%s as a net alone in a %s rule (it is matched against NIDs only)",
					   udsp_part_name[part], rte ? "dst + rte" : "src + dst");
		return rte ? LNET_UDSP_K_RTE : LNET_UDSP_K_PAIR;
	}
	if (!prio)
		return udsp_refuse(err, -1, "a preferred list on %s alone", src ? "src" : "dst");
	return src ? LNET_UDSP_K_SRC : LNET_UDSP_K_DST;
}

/* A rule from its text form, checked: *out to free with udsp_free(). */
static int udsp_build(const struct ulnet_udsp_rule *rule, struct ulnet_udsp_err *err,
		      struct lnet_udsp **out)
{
	struct lnet_udsp *u;
	int rc, kind, nparts = 0;

	*out = NULL;
	if (err) {
		err->part = -1;
		err->parse.pos = 0;
		err->parse.msg[0] = '\0';
	}
	if (!rule)
		return -EINVAL;
	for (int p = 0; p < ULNET_UDSP_NPARTS; p++)
		nparts += rule->match[p][0] != '\0';
	if (!nparts || (rule->match[ULNET_UDSP_SRC][0] && rule->match[ULNET_UDSP_RTE][0]) ||
	    (rule->action != ULNET_UDSP_ACTION_PRIORITY && rule->action != ULNET_UDSP_ACTION_PREFERRED)) {
		if (err)
			snprintf(err->parse.msg, sizeof(err->parse.msg), "%s",
				 !nparts ? "no src, dst or rte"
				 : rule->match[ULNET_UDSP_SRC][0] && rule->match[ULNET_UDSP_RTE][0]
					 ? "src and rte cannot be combined" : "bad action type");
		return -EINVAL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->ud_action = rule->action;
	u->ud_priority = rule->action == ULNET_UDSP_ACTION_PRIORITY ? rule->priority : 0;
	for (int p = 0; p < ULNET_UDSP_NPARTS; p++) {
		if (!rule->match[p][0])
			continue;
		rc = udsp_descr_parse(rule->match[p], &u->ud_d[p], err ? &err->parse : NULL);
		if (rc) {
			if (err)
				err->part = p;
			udsp_free(u);
			return rc;
		}
	}
	kind = udsp_kind(u, err);
	if (kind < 0) {
		udsp_free(u);
		return kind;
	}
	u->ud_kind = (unsigned)kind;
	*out = u;
	return 0;
}

int ulnet_udsp_check(const struct ulnet_udsp_rule *rule, struct ulnet_udsp_err *err)
{
	struct lnet_udsp *u;
	int rc = udsp_build(rule, err, &u);

	if (u)
		udsp_free(u);
	return rc;
}

int ulnet_udsp_add(ulnet_t *ln, const struct ulnet_udsp_rule *rule, int idx,
		   struct ulnet_udsp_err *err)
{
	struct lnet_udsp *u;
	struct ul_list *pos, *before = NULL;
	int i = 0, rc;

	if (!ln)
		return -EINVAL;
	rc = udsp_build(rule, err, &u);
	if (rc)
		return rc;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_udsp) {
		struct lnet_udsp *o = ul_container_of(pos, struct lnet_udsp, ud_list);

		if (i++ == idx)
			before = pos;
		if (!udsp_same(o, u))
			continue;
		/* the kernel's lnet_udsp_add_policy(): a priority rule
		 * given again with another priority takes it */
		if (o->ud_action == ULNET_UDSP_ACTION_PRIORITY &&
		    u->ud_action == ULNET_UDSP_ACTION_PRIORITY && o->ud_priority != u->ud_priority) {
			o->ud_priority = u->ud_priority;
			rc = 0;
			udsp_apply_all_locked(ln);
		} else {
			rc = -EALREADY;
		}
		lnet_unlock(ln);
		udsp_free(u);
		return rc;
	}
	ul_list_add_tail(&u->ud_list, before ? before : &ln->ln_udsp);
	ln->ln_nudsp++;
	udsp_apply_all_locked(ln);
	lnet_unlock(ln);
	return 0;
}

int ulnet_udsp_del(ulnet_t *ln, int idx)
{
	struct ul_list *pos, *n;
	int i = 0, rc = -ENOENT;

	if (!ln)
		return -EINVAL;
	lnet_lock(ln);
	ul_list_for_each_safe(pos, n, &ln->ln_udsp) {
		struct lnet_udsp *u = ul_container_of(pos, struct lnet_udsp, ud_list);

		if (idx >= 0 && i++ != idx)
			continue;
		ul_list_del(&u->ud_list);
		ln->ln_nudsp--;
		udsp_free(u);
		rc = 0;
	}
	if (idx < 0)
		rc = 0;
	if (rc == 0)
		udsp_apply_all_locked(ln);
	lnet_unlock(ln);
	return rc;
}

int ulnet_udsp_get(ulnet_t *ln, int idx, struct ulnet_udsp_rule *rule)
{
	struct ul_list *pos;
	int i = 0;

	if (!ln || !rule || idx < 0)
		return ln && rule ? -ENOENT : -EINVAL;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_udsp) {
		const struct lnet_udsp *u = ul_container_of(pos, struct lnet_udsp, ud_list);

		if (i++ != idx)
			continue;
		memset(rule, 0, sizeof(*rule));
		for (int p = 0; p < ULNET_UDSP_NPARTS; p++)
			if (u->ud_d[p].type)
				memcpy(rule->match[p], u->ud_d[p].text, sizeof(rule->match[p]));
		rule->action = u->ud_action;
		rule->priority = u->ud_priority;
		lnet_unlock(ln);
		return 0;
	}
	lnet_unlock(ln);
	return -ENOENT;
}

int ulnet_udsp_find(ulnet_t *ln, const struct ulnet_udsp_rule *rule)
{
	struct lnet_udsp *u;
	struct ul_list *pos;
	int i = 0, rc;

	if (!ln)
		return -EINVAL;
	rc = udsp_build(rule, NULL, &u);
	if (rc)
		return rc;
	rc = -ENOENT;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_udsp) {
		if (udsp_same(ul_container_of(pos, struct lnet_udsp, ud_list), u)) {
			rc = i;
			break;
		}
		i++;
	}
	lnet_unlock(ln);
	udsp_free(u);
	return rc;
}

int ulnet_udsp_count(ulnet_t *ln)
{
	int n;

	if (!ln)
		return -EINVAL;
	lnet_lock(ln);
	n = ln->ln_nudsp;
	lnet_unlock(ln);
	return n;
}
