/* SPDX-License-Identifier: MIT */
/*
 * modopts_nets.c - the lnet module's networks= and routes= strings, read
 * with the kernel's syntax (lnet/lnet/config.c of 2.17), stricter where
 * the kernel skips text silently:
 *
 *   networks="tcp0(eth0),tcp1(eth1,eth2)"   nets separated by commas, each
 *       with an optional list of interfaces (one NI each); "tcp" alone: the
 *       first interface that is up, not loopback, with an IPv4 address;
 *       "" is "tcp", the kernel's default; "lo" is implicit.
 *   routes="tcp1 192.168.1.1@tcp; o2ib 2 10.0.0.[1-4]@tcp:1"   entries
 *       separated by ';' (or a newline), '#' comments to the next one; in
 *       each, blank-separated: the net, an optional hop count (1..255),
 *       then one or more gateways, each with an optional ":PRIORITY".
 *       A NID without "@" is on tcp. '[a,b-c,d-e/s]' in a net or gateway
 *       expands to each item (numbers or text), bracket after bracket.
 *
 * The kernel's routes= expansion is not lnetctl's (ctl_nid_range_expand):
 * it expands text items too, nets as well as gateways, needs a range to
 * be a whole number of strides, and a gateway list is blank-separated; so
 * it has its own expander here, bounded, and each result goes through
 * ulnet_nid_parse()/ulnet_net_parse().
 */
#include "modopts.h"

#include "ctl_ip2nets.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_MAX 1024          /* a net or gateway, expanded */
#define BRACKETS_MAX 16         /* brackets in one token */


/* --- networks= ------------------------------------------------------------------ */

#define NET_DELIMS " \t\v\r\n\f:()[],"

static const char *skip_blanks(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

static int add_ni(struct modopt_ni *nis, int max, int *n, ulnet_net_t net, const char *iface,
		  size_t ilen, const char *netname, char *why, size_t wl)
{
	if (ilen >= sizeof(nis[0].iface))
		return modopts_errf(why, wl, -EINVAL, "interface name '%.*s' longer than %zu characters",
			    (int)ilen, iface, sizeof(nis[0].iface) - 1);
	for (int i = 0; i < *n; i++)
		if (ilen && nis[i].net == net && strlen(nis[i].iface) == ilen &&
		    memcmp(nis[i].iface, iface, ilen) == 0)
			return modopts_errf(why, wl, -EINVAL, "interface %.*s listed twice for %s", (int)ilen,
				    iface, netname);
	if (*n >= max)
		return modopts_errf(why, wl, -EINVAL, "more than %d NIs", max);
	nis[*n].net = net;
	memcpy(nis[*n].iface, iface, ilen);
	nis[*n].iface[ilen] = '\0';
	(*n)++;
	return 0;
}

int modopts_parse_networks(const char *s, struct modopt_ni *nis, int max, int *n, char *why,
			   size_t wl)
{
	const char *p = *s ? s : "tcp"; /* the kernel's default networks */

	*n = 0;
	for (;;) {
		char name[ULNET_NETSTR_SIZE];
		const char *ifs = NULL, *ife = NULL;
		ulnet_net_t net;
		size_t len;

		p = skip_blanks(p);
		if (!*p)
			break;
		len = strcspn(p, NET_DELIMS);
		if (len == 0)
			return modopts_errf(why, wl, -EINVAL, "a net name expected at '%.32s'", p);
		if (len >= sizeof(name))
			return modopts_errf(why, wl, -EINVAL, "net name '%.*s' too long", (int)len, p);
		memcpy(name, p, len);
		name[len] = '\0';
		p = skip_blanks(p + len);
		if (*p == '(') {
			ifs = p + 1;
			ife = strchr(ifs, ')');
			if (!ife)
				return modopts_errf(why, wl, -EINVAL, "'(' without ')' after %s", name);
			p = skip_blanks(ife + 1);
		}
		if (*p == '[')
			return modopts_errf(why, wl, -EOPNOTSUPP, "not supported by ulnet: the CPT expression "
				    "of %s (%s one CPU partition)", name, "ulnet has");
		/* the kernel skips anything else up to the next comma */
		if (*p && *p != ',')
			return modopts_errf(why, wl, -EINVAL, "unexpected '%.16s' after %s", p, name);
		if (*p == ',')
			p++;

		if (ulnet_net_parse(name, &net, NULL) < 0)
			return modopts_errf(why, wl, -EINVAL, "'%s' is not a net", name);
		if (ulnet_net_type(net) == ULNET_LND_LO) {
			/* 0@lo is implicit, as in the kernel */
			if (ifs)
				return modopts_errf(why, wl, -EINVAL, "%s takes no interfaces", name);
			continue;
		}
		if (ulnet_net_type(net) != ULNET_LND_TCP)
			return modopts_errf(why, wl, -EOPNOTSUPP, "not supported by ulnet: %s (ulnet's only "
				    "LND for networks is ksocklnd: tcp)", name);
		if (!ifs) {
			int rc = add_ni(nis, max, n, net, "", 0, name, why, wl);

			if (rc < 0)
				return rc;
			continue;
		}
		/* "eth0, eth1": one NI per interface */
		const char *q = ifs;

		for (;;) {
			q = skip_blanks(q);
			size_t il = strcspn(q, " \t\v\r\n\f[],)");
			const char *ifn = q;

			if (q + il > ife)
				il = (size_t)(ife - q);
			q = skip_blanks(q + il);
			if (*q == '[')
				return modopts_errf(why, wl, -EOPNOTSUPP, "not supported by ulnet: the CPT "
					    "expression of %.*s in %s", (int)il, ifn, name);
			if (il == 0)
				return modopts_errf(why, wl, -EINVAL, "an empty interface name in %s(...)", name);
			if (q != ife && *q != ',')
				return modopts_errf(why, wl, -EINVAL, "unexpected '%.*s' in %s(...)",
					    (int)(ife - q < 16 ? ife - q : 16), q, name);
			int rc = add_ni(nis, max, n, net, ifn, il, name, why, wl);

			if (rc < 0)
				return rc;
			if (q == ife)
				break;
			q++; /* ',' */
		}
	}
	return 0;
}

/* --- ip2nets= ------------------------------------------------------------------- */

int modopts_ip2nets_nis(const char *ip2nets, const struct ip2n_addrs *a, struct modopt_ni *nis,
			int max, int *n, char *why, size_t wl)
{
	char nets[IP2N_NETWORKS_MAX + 1], w[300];
	int rc = ip2n_kernel_networks(ip2nets, a, nets, sizeof(nets), why, wl);

	*n = 0;
	if (rc < 0)
		return rc;
	if (rc == 0)
		return modopts_errf(why, wl, -ENOENT, "does not match any local IP interface (no "
				    "pattern matches an IPv4 address of an interface that is up, not "
				    "loopback)");
	/* then the kernel's lnet_parse_networks() of what matched */
	rc = modopts_parse_networks(nets, nis, max, n, w, sizeof(w));
	if (rc < 0)
		return modopts_errf(why, wl, rc, "the networks of the matching entries, '%.200s': %s",
				    nets, w);
	return 0;
}

/* --- routes= -------------------------------------------------------------------- */

/* What becomes of each expanded token. */
struct expand {
	int budget;              /* results still allowed */
	int (*leaf)(struct expand *e, const char *s);
	/* the leaf's */
	ulnet_net_t *nets;
	int nnets;
	struct modopt_route *gws;  /* net unset: the gateways of an entry */
	int ngws;
	char *why;
	size_t wl;
};

/* A range item "LO-HI" or "LO-HI/STRIDE" (decimal). 1: it is one (lo, hi,
 * stride set), 0: it is text, <0: it starts as one and goes wrong. */
static int range_item(const char *s, size_t len, long *lo, long *hi, long *stride)
{
	const char *p = s, *end = s + len;
	char *e;

	if (p == end || !isdigit((unsigned char)*p))
		return 0;
	*lo = strtol(p, &e, 10);
	if (e >= end || *e != '-' || e + 1 >= end || !isdigit((unsigned char)e[1]))
		return 0;
	*hi = strtol(e + 1, &e, 10);
	*stride = 1;
	if (e < end && *e == '/') {
		if (e + 1 >= end || !isdigit((unsigned char)e[1]))
			return -EINVAL;
		*stride = strtol(e + 1, &e, 10);
	}
	if (e != end)
		return -EINVAL;
	return 1;
}

/* Expand the first bracket of `s`, then the results' (at most
 * BRACKETS_MAX deep); each token without brackets goes to e->leaf. */
static int expand(struct expand *e, const char *s, int depth)
{
	const char *lb = strchr(s, '[');

	if (!lb) {
		if (e->budget <= 0)
			return modopts_errf(e->why, e->wl, -EINVAL, "expands to more than %d routes",
				    MODOPT_MAX_ROUTES);
		e->budget--;
		return e->leaf(e, s);
	}
	const char *rb = strchr(lb, ']');

	if (!rb)
		return modopts_errf(e->why, e->wl, -EINVAL, "'[' without ']' in '%.64s'", s);
	if (depth >= BRACKETS_MAX)
		return modopts_errf(e->why, e->wl, -EINVAL, "more than %d brackets in '%.64s'", BRACKETS_MAX, s);
	for (const char *it = lb + 1; it <= rb;) {
		size_t il = strcspn(it, ",]");
		long lo, hi, stride;
		char buf[TOKEN_MAX + 1];
		int rc;

		if (it + il > rb)
			il = (size_t)(rb - it);
		if (il == 0)
			return modopts_errf(e->why, e->wl, -EINVAL, "an empty item in '%.64s'", s);
		rc = range_item(it, il, &lo, &hi, &stride);
		if (rc < 0 || (rc == 1 && (hi < lo || hi > INT_MAX || stride <= 0 || stride > INT_MAX ||
					   (hi - lo) % stride != 0)))
			return modopts_errf(e->why, e->wl, -EINVAL, "bad range '%.*s' in '%.64s' (LO-HI or "
				    "LO-HI/STRIDE, HI-LO a multiple of STRIDE)", (int)il, it, s);
		if (rc == 0) {
			/* a text item */
			int m = snprintf(buf, sizeof(buf), "%.*s%.*s%s", (int)(lb - s), s, (int)il, it,
					 rb + 1);

			if (m < 0 || (size_t)m >= sizeof(buf))
				return modopts_errf(e->why, e->wl, -EINVAL, "'%.64s' expands past %d characters",
					    s, TOKEN_MAX);
			rc = expand(e, buf, depth + 1);
			if (rc < 0)
				return rc;
			it += il + 1;
			continue;
		}
		if ((hi - lo) / stride >= e->budget)
			return modopts_errf(e->why, e->wl, -EINVAL, "expands to more than %d routes",
				    MODOPT_MAX_ROUTES);
		for (long v = lo; v <= hi; v += stride) {
			int m = snprintf(buf, sizeof(buf), "%.*s%ld%s", (int)(lb - s), s, v, rb + 1);

			if (m < 0 || (size_t)m >= sizeof(buf))
				return modopts_errf(e->why, e->wl, -EINVAL, "'%.64s' expands past %d characters",
					    s, TOKEN_MAX);
			rc = expand(e, buf, depth + 1);
			if (rc < 0)
				return rc;
		}
		it += il + 1;
	}
	return 0;
}

static int leaf_net(struct expand *e, const char *s)
{
	ulnet_net_t net;

	if (ulnet_net_parse(s, &net, NULL) < 0)
		return modopts_errf(e->why, e->wl, -EINVAL, "'%.64s' is not a net", s);
	if (ulnet_net_type(net) == ULNET_LND_LO)
		return modopts_errf(e->why, e->wl, -EINVAL, "no route to %s (a loopback net)", s);
	ulnet_net_t *nn = realloc(e->nets, (size_t)(e->nnets + 1) * sizeof(*nn));

	if (!nn)
		return modopts_errf(e->why, e->wl, -ENOMEM, "out of memory");
	e->nets = nn;
	e->nets[e->nnets++] = net;
	return 0;
}

/* "NID[:PRIORITY]"; a NID without '@' is on tcp (libcfs's default). */
static int leaf_gw(struct expand *e, const char *s)
{
	char nid[TOKEN_MAX + 8];
	const char *at = strchr(s, '@');
	/* the priority follows the net; an IPv6 address has colons before '@' */
	const char *colon = strchr(at ? at : s, ':');
	unsigned long prio = 0;
	size_t nl = colon ? (size_t)(colon - s) : strlen(s);
	struct modopt_route r;

	if (colon) {
		const char *q = colon + 1;
		char *end;

		if (!isdigit((unsigned char)*q))
			return modopts_errf(e->why, e->wl, -EINVAL, "bad priority in '%.64s'", s);
		prio = strtoul(q, &end, 10);
		if (*end || prio > 0xffffffffUL)
			return modopts_errf(e->why, e->wl, -EINVAL, "bad priority in '%.64s'", s);
	}
	snprintf(nid, sizeof(nid), "%.*s%s", (int)nl, s, at ? "" : "@tcp");
	memset(&r, 0, sizeof(r));
	if (ulnet_nid_parse(nid, &r.gw, NULL) < 0)
		return modopts_errf(e->why, e->wl, -EINVAL, "'%.64s' is not a NID", nid);
	if (ulnet_nid_same(&r.gw, &ULNET_NID_LO0) || ulnet_nid_is_any(&r.gw))
		return modopts_errf(e->why, e->wl, -EINVAL, "%s cannot be a gateway", nid);
	r.priority = (unsigned)prio;
	struct modopt_route *ng = realloc(e->gws, (size_t)(e->ngws + 1) * sizeof(*ng));

	if (!ng)
		return modopts_errf(e->why, e->wl, -ENOMEM, "out of memory");
	e->gws = ng;
	e->gws[e->ngws++] = r;
	return 0;
}

/* The kernel's hop count: the second word, when it is a number 1..255. */
static bool hop_word(const char *w, int *hops)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)*w))
		return false;
	v = strtoul(w, &end, 10);
	if (*end || v < 1 || v > ULNET_ROUTE_HOPS_MAX)
		return false;
	*hops = (int)v;
	return true;
}

/* One entry: "NET [HOPS] GW[:PRIO] ...", each route appended to *out. */
static int parse_entry(char *entry, struct modopt_route **out, int *n, int *cap, int *budget,
		       char *why, size_t wl)
{
	struct expand e = { .budget = *budget, .why = why, .wl = wl };
	int hops = ULNET_ROUTE_HOPS_UNSET, nwords = 0, rc = 0;
	char *save = NULL;
	const char *first = NULL;

	for (char *w = strtok_r(entry, " \t\v\f", &save); w && rc == 0;
	     w = strtok_r(NULL, " \t\v\f", &save)) {
		nwords++;
		if (strlen(w) > TOKEN_MAX) {
			rc = modopts_errf(why, wl, -EINVAL, "'%.64s...' longer than %d characters", w, TOKEN_MAX);
			break;
		}
		if (nwords == 1) {
			first = w;
			e.leaf = leaf_net;
			rc = expand(&e, w, 0);
		} else if (nwords == 2 && hop_word(w, &hops)) {
			continue;
		} else {
			e.leaf = leaf_gw;
			rc = expand(&e, w, 0);
		}
	}
	if (rc == 0 && e.ngws == 0)
		rc = modopts_errf(why, wl, -EINVAL, "'%.64s': a route needs a net and a gateway",
			  first ? first : "");
	for (int i = 0; rc == 0 && i < e.nnets; i++) {
		for (int j = 0; j < e.ngws; j++) {
			if (*n >= MODOPT_MAX_ROUTES) {
				rc = modopts_errf(why, wl, -EINVAL, "more than %d routes", MODOPT_MAX_ROUTES);
				break;
			}
			if (*n == *cap) {
				int nc = *cap ? *cap * 2 : 16;
				struct modopt_route *nr = realloc(*out, (size_t)nc * sizeof(*nr));

				if (!nr) {
					rc = modopts_errf(why, wl, -ENOMEM, "out of memory");
					break;
				}
				*out = nr;
				*cap = nc;
			}
			(*out)[*n] = e.gws[j];
			(*out)[*n].net = e.nets[i];
			(*out)[*n].hops = hops;
			(*n)++;
		}
	}
	*budget = e.budget;
	free(e.nets);
	free(e.gws);
	return rc;
}

int modopts_parse_routes(const char *s, struct modopt_route **routes, int *n, char *why,
			 size_t wl)
{
	struct modopt_route *out = NULL;
	int cnt = 0, cap = 0, rc = 0, budget = MODOPT_MAX_ROUTES;
	size_t len = strlen(s);
	char *copy = malloc(len + 1);

	*routes = NULL;
	*n = 0;
	if (!copy)
		return modopts_errf(why, wl, -ENOMEM, "out of memory");
	memcpy(copy, s, len + 1);
	/* entries end at ';', '\n' or '\r'; '#' comments out the rest of one */
	for (char *p = copy; rc == 0;) {
		size_t el = strcspn(p, ";\n\r");
		char *next = p[el] ? p + el + 1 : NULL;
		char *hash;

		p[el] = '\0';
		hash = strchr(p, '#');
		if (hash)
			*hash = '\0';
		if (*skip_blanks(p)) {
			char ctx[80];

			snprintf(ctx, sizeof(ctx), "%.60s", skip_blanks(p));
			rc = parse_entry(p, &out, &cnt, &cap, &budget, why, wl);
			if (rc < 0) {
				/* name the entry the error is in */
				char inner[400];

				snprintf(inner, sizeof(inner), "%s", why);
				snprintf(why, wl, "in '%s': %s", ctx, inner);
			}
		}
		if (!next)
			break;
		p = next;
	}
	free(copy);
	if (rc < 0) {
		free(out);
		return rc;
	}
	*routes = out;
	*n = cnt;
	return 0;
}
