/* SPDX-License-Identifier: MIT */
/*
 * ctl_ip2nets.c - ip2nets (ctl_ip2nets.h): the IP ranges, lnetctl's
 * resolution of a YAML rule to interfaces, and the kernel's ip2nets=
 * string to a networks= string.
 */
#include "ctl_ip2nets.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errf(char *why, size_t wl, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int errf(char *why, size_t wl, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && wl) {
		va_start(ap, fmt);
		vsnprintf(why, wl, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* Quote at most this much of a bad input in a message. */
#define Q(len) ((int)((len) > 64 ? 64 : (len)))

/* --- the node's addresses ------------------------------------------------------ */

int ip2n_addrs_get(struct ip2n_addrs *a)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	a->v = NULL;
	a->n = 0;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next)
		n++;
	a->v = calloc(n ? (size_t)n : 1, sizeof(*a->v));
	if (!a->v) {
		freeifaddrs(ifa);
		return -ENOMEM;
	}
	for (i = ifa; i; i = i->ifa_next) {
		struct ip2n_addr *e = &a->v[a->n];

		if (!i->ifa_name)
			continue;
		snprintf(e->name, sizeof(e->name), "%s", i->ifa_name);
		e->up = (i->ifa_flags & IFF_UP) != 0;
		e->loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
		e->family = AF_UNSPEC;
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
			e->family = AF_INET;
			memcpy(e->addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6) {
			e->family = AF_INET6;
			memcpy(e->addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		}
		a->n++;
	}
	freeifaddrs(ifa);
	return 0;
}

void ip2n_addrs_free(struct ip2n_addrs *a)
{
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

/* --- IP ranges ------------------------------------------------------------------- */

int ip2n_range_parse(const char *s, bool v4_only, ulnet_nidlist_t **out, char *why, size_t wl)
{
	const char *b = s, *e = s + strlen(s);
	char buf[IP2N_RANGE_MAX + 8];
	struct ulnet_parse_err pe = { 0 };
	int depth = 0, rc;

	*out = NULL;
	while (b < e && isspace((unsigned char)*b))
		b++;
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	size_t len = (size_t)(e - b);

	if (len == 0)
		return errf(why, wl, -EINVAL, "empty IP range");
	if (len > IP2N_RANGE_MAX)
		return errf(why, wl, -EINVAL, "IP range '%.*s...' longer than %d bytes", Q(len), b,
			    IP2N_RANGE_MAX);
	bool v6 = memchr(b, ':', len) != NULL;

	for (const char *p = b; p < e; p++) {
		if (isspace((unsigned char)*p) || *p == '@' || !isprint((unsigned char)*p))
			return errf(why, wl, -EINVAL, "'%.*s': unexpected character at byte %d",
				    Q(len), b, (int)(p - b) + 1);
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		else if (*p == '/' && depth == 0 && !v6)
			return errf(why, wl, -EINVAL, "'%.*s': an IPv4 range takes no prefix length "
				    "(write a.b.c.*, or a field as [a-b])", Q(len), b);
	}
	if (v6 && v4_only)
		return errf(why, wl, -EINVAL, "'%.*s': IPv4 patterns only (a.b.c.d, each field a "
			    "number, '*' or '[a,b-c,d-e/s]')", Q(len), b);
	if (!v6 && len == 1 && *b == '*')
		return errf(why, wl, -EINVAL, "'*': an IPv4 range has four fields ('*.*.*.*')");
	snprintf(buf, sizeof(buf), "%.*s@tcp", (int)len, b);
	rc = ulnet_nidlist_parse(buf, out, &pe);
	if (rc == -ENOMEM)
		return errf(why, wl, rc, "out of memory");
	if (rc < 0) {
		if (pe.pos < 0 || (size_t)pe.pos > len)
			pe.pos = 0;
		return errf(why, wl, -EINVAL, "'%.*s': %s (at byte %d)", Q(len), b,
			    pe.msg[0] ? pe.msg : "bad IP range", pe.pos + 1);
	}
	return 0;
}

bool ip2n_range_match(const ulnet_nidlist_t *range, const struct ip2n_addr *a)
{
	ulnet_nid_t nid;

	memset(&nid, 0, sizeof(nid));
	nid.type = ULNET_LND_TCP;
	if (a->family == AF_INET) {
		memcpy(nid.addr, a->addr, 4);
	} else if (a->family == AF_INET6) {
		nid.size = 12;
		memcpy(nid.addr, a->addr, 16);
	} else {
		return false;
	}
	return ulnet_nidlist_match(range, &nid);
}

/* --- lnetctl's YAML rules ------------------------------------------------------- */

void ip2n_rule_init(struct ip2n_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->net = ULNET_NET_ANY;
}

void ip2n_rule_free(struct ip2n_rule *r)
{
	for (int i = 0; i < r->nranges; i++)
		ulnet_nidlist_free(r->ranges[i]);
	r->nranges = 0;
	r->nifs = 0;
}

int ip2n_rule_add_if(struct ip2n_rule *r, const char *name, char *why, size_t wl)
{
	size_t len = strlen(name);

	if (len == 0)
		return errf(why, wl, -EINVAL, "empty interface name");
	if (strchr(name, '['))
		return errf(why, wl, -EOPNOTSUPP, "'%.64s': not supported by ulnet: a CPT expression "
			    "(ulnet has one CPU partition)", name);
	if (len >= IP2N_IFNAME_SIZE)
		return errf(why, wl, -EINVAL, "interface name '%.64s' longer than %d characters", name,
			    IP2N_IFNAME_SIZE - 1);
	for (const char *p = name; *p; p++)
		if (isspace((unsigned char)*p) || *p == '/' || !isprint((unsigned char)*p))
			return errf(why, wl, -EINVAL, "'%s' is not an interface name", name);
	for (int i = 0; i < r->nifs; i++)
		if (strcmp(r->ifs[i], name) == 0)
			return errf(why, wl, -EINVAL, "interface '%s' listed twice", name);
	if (r->nifs >= IP2N_MAX_IFS)
		return errf(why, wl, -EINVAL, "more than %d interfaces", IP2N_MAX_IFS);
	memcpy(r->ifs[r->nifs++], name, len + 1);
	return 0;
}

int ip2n_rule_add_range(struct ip2n_rule *r, const char *range, char *why, size_t wl)
{
	ulnet_nidlist_t *l;
	int rc;

	if (r->nranges >= IP2N_MAX_RANGES)
		return errf(why, wl, -EINVAL, "more than %d ip-ranges", IP2N_MAX_RANGES);
	rc = ip2n_range_parse(range, false, &l, why, wl);
	if (rc < 0)
		return rc;
	r->ranges[r->nranges++] = l;
	return 0;
}

static bool in_ranges(const struct ip2n_rule *r, const struct ip2n_addr *a)
{
	for (int i = 0; i < r->nranges; i++)
		if (ip2n_range_match(r->ranges[i], a))
			return true;
	return false;
}

static int add_out(char (*out)[IP2N_IFNAME_SIZE], int max, int *n, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(out[i], name) == 0)
			return 0; /* one NI per interface, however many addresses match */
	if (*n >= max)
		return -E2BIG;
	snprintf(out[*n], IP2N_IFNAME_SIZE, "%s", name);
	(*n)++;
	return 0;
}

int ip2n_rule_resolve(const struct ip2n_rule *r, const struct ip2n_addrs *a,
		      char (*out)[IP2N_IFNAME_SIZE], int max, int *n, char *why, size_t wl)
{
	*n = 0;
	if (!r->nifs && !r->nranges) {
		/* liblnetconfig skips "lo" by name, not by its loopback flag */
		for (int i = 0; i < a->n; i++) {
			const struct ip2n_addr *e = &a->v[i];

			if (e->up && e->family == AF_INET && strcmp(e->name, "lo") != 0)
				return add_out(out, max, n, e->name);
		}
		return errf(why, wl, -ENOMSG, "No UP interfaces were found");
	}
	if (!r->nifs) {
		for (int i = 0; i < a->n; i++) {
			const struct ip2n_addr *e = &a->v[i];

			if (e->up && in_ranges(r, e) && add_out(out, max, n, e->name) < 0)
				return errf(why, wl, -E2BIG, "more than %d interfaces match", max);
		}
		if (*n)
			return 0;
		return errf(why, wl, -ENOMSG, "IP pattern(s) do not match available interfaces");
	}
	/* every interface listed must be up and, with ranges, have an
	 * address in one */
	for (int k = 0; k < r->nifs; k++) {
		bool seen = false, down = false, match = false;

		for (int i = 0; i < a->n && !match && !down; i++) {
			const struct ip2n_addr *e = &a->v[i];

			if (strcmp(e->name, r->ifs[k]) != 0)
				continue;
			seen = true;
			if (!e->up)
				down = true;
			else if (!r->nranges || in_ranges(r, e))
				match = true;
		}
		if (!match) {
			*n = 0;
			if (!seen)
				return errf(why, wl, -ENOMSG, "No interface matching '%s'", r->ifs[k]);
			if (down)
				return errf(why, wl, -ENOMSG, "Matched interface '%s' is not UP", r->ifs[k]);
			return errf(why, wl, -ENOMSG, "Interface '%s' doesn't match an IP pattern",
				    r->ifs[k]);
		}
		if (add_out(out, max, n, r->ifs[k]) < 0)
			return errf(why, wl, -E2BIG, "more than %d interfaces", max);
	}
	return 0;
}

/* --- the kernel's ip2nets= string ------------------------------------------------ */

static bool kern_sep(char c)
{
	return c == '\n' || c == '\r' || c == ';';
}

/* The NETWORKS of an entry: nets separated by ',', each with an optional
 * "(interfaces)"; names are checked, and a net named twice in one entry
 * is refused, as the kernel's lnet_splitnets() does. What follows a net
 * (interfaces, a CPT expression) is the networks= parser's business. */
static int kern_netspec(const char *spec, int no, char *why, size_t wl)
{
	ulnet_net_t seen[64];
	int nseen = 0;
	const char *p = spec;

	for (;;) {
		size_t nl = strcspn(p, "(,[");
		char name[ULNET_NETSTR_SIZE];
		ulnet_net_t net;

		if (nl == 0)
			return errf(why, wl, -EINVAL, "entry %d: a net name expected at '%.32s' in '%.64s'",
				    no, p, spec);
		if (nl >= sizeof(name))
			return errf(why, wl, -EINVAL, "entry %d: '%.*s' is not a net", no, Q(nl), p);
		memcpy(name, p, nl);
		name[nl] = '\0';
		if (ulnet_net_parse(name, &net, NULL) < 0)
			return errf(why, wl, -EINVAL, "entry %d: '%s' is not a net", no, name);
		for (int i = 0; i < nseen; i++)
			if (seen[i] == net)
				return errf(why, wl, -EINVAL, "entry %d: net %s named twice in '%.64s'", no,
					    name, spec);
		if (nseen < (int)(sizeof(seen) / sizeof(seen[0])))
			seen[nseen++] = net;
		p += nl;
		if (*p == '(') {
			const char *close = strchr(p, ')');

			if (!close)
				return errf(why, wl, -EINVAL, "entry %d: '(' without ')' after %s", no, name);
			p = close + 1;
			if (*p && *p != ',' && *p != '[')
				return errf(why, wl, -EINVAL, "entry %d: unexpected '%.16s' after %s(...)", no,
					    p, name);
		}
		p += strcspn(p, ",");
		if (!*p)
			return 0;
		p++;
	}
}

/* One entry (a NUL-terminated copy): its NETWORKS checked; *matched when
 * one of its patterns matches an IPv4 address of an interface of `a` that
 * is up and not loopback (the kernel's lnet_inet_enumerate()). */
static int kern_entry(char *text, int no, const struct ip2n_addrs *a, const char **netspec,
		      bool *matched, char *why, size_t wl)
{
	static const char blanks[] = " \t\n\r\v\f";
	char *p = text;
	int ntok = 0;

	*matched = false;
	*netspec = NULL;
	for (;;) {
		p += strspn(p, blanks);
		if (!*p)
			break;
		char *tok = p;

		p += strcspn(p, blanks);
		if (*p)
			*p++ = '\0';
		if (ntok++ == 0) {
			int rc = kern_netspec(tok, no, why, wl);

			if (rc < 0)
				return rc;
			*netspec = tok;
			continue;
		}
		ulnet_nidlist_t *l;
		char w[200];
		int rc = ip2n_range_parse(tok, true, &l, w, sizeof(w));

		if (rc < 0)
			return errf(why, wl, rc, "entry %d (%s): bad IP pattern %s", no, *netspec, w);
		for (int i = 0; a && i < a->n && !*matched; i++) {
			const struct ip2n_addr *e = &a->v[i];

			if (e->up && !e->loopback && e->family == AF_INET && ip2n_range_match(l, e))
				*matched = true;
		}
		ulnet_nidlist_free(l);
	}
	/* an entry of networks alone matches nothing (as the kernel's) */
	return 0;
}

int ip2n_kernel_networks(const char *s, const struct ip2n_addrs *a, char *nets, size_t netslen,
			 char *why, size_t wl)
{
	char *entry = malloc(IP2N_ENTRY_MAX + 1);
	const char *p = s;
	size_t used = 0;
	int count = 0, no = 0, rc = 0;

	if (!entry)
		return errf(why, wl, -ENOMEM, "out of memory");
	if (nets && netslen)
		nets[0] = '\0';
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		const char *e = p;

		while (*e && !kern_sep(*e) && *e != '#')
			e++;
		size_t len = (size_t)(e - p);

		if (len > 0) {
			const char *spec;
			bool matched;

			no++;
			if (len > IP2N_ENTRY_MAX) {
				rc = errf(why, wl, -EINVAL, "entry %d longer than %d bytes", no,
					  IP2N_ENTRY_MAX);
				break;
			}
			memcpy(entry, p, len);
			entry[len] = '\0';
			rc = kern_entry(entry, no, a, &spec, &matched, why, wl);
			if (rc < 0)
				break;
			if (matched && nets) {
				size_t sl = strlen(spec);

				if (used + (used ? 1 : 0) + sl > IP2N_NETWORKS_MAX || used + sl + 2 > netslen) {
					rc = errf(why, wl, -E2BIG, "the networks of the matching entries "
						  "exceed %d bytes", IP2N_NETWORKS_MAX);
					break;
				}
				used += (size_t)snprintf(nets + used, netslen - used, "%s%s",
							 used ? "," : "", spec);
			}
			count += matched;
		}
		if (*e == '#')
			while (*e && !kern_sep(*e))
				e++;
		if (!*e)
			break;
		p = e + 1;
	}
	free(entry);
	return rc < 0 ? rc : count;
}
