/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rtnl.c - the rtnetlink link and address message decoder
 * (util/rtnl.c): any bytes decode without reading outside them; what it
 * hands out holds (a terminated name, an operstate that fits a byte or -1,
 * an address only for AF_INET or AF_INET6), the same bytes decode the
 * same way twice, and the links-only decoder counts the links alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/rtnl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	int n;
	uint64_t sum;
};

static void fuzz_rtnl_link(void *arg, const struct ul_rtnl_link *l)
{
	struct seen *s = arg;

	if (strnlen(l->name, sizeof(l->name)) == sizeof(l->name))
		abort();
	if (l->operstate < -1 || l->operstate > 255)
		abort();
	(void)ul_rtnl_link_is_up(l);
	s->n++;
	s->sum = s->sum * 31 + (uint32_t)l->ifindex + l->flags + (unsigned)l->operstate +
		 strlen(l->name) + l->deleted;
}

static void fuzz_rtnl_addr(void *arg, const struct ul_rtnl_addr *a)
{
	struct seen *s = arg;

	if (a->has_addr && a->family != AF_INET && a->family != AF_INET6)
		abort();
	s->n++;
	s->sum = s->sum * 37 + (uint32_t)a->ifindex + (uint32_t)a->family + a->deleted +
		 (a->has_addr ? (unsigned)(a->addr[0] + a->addr[3] + a->addr[15]) : 0u);
}

struct links {
	int n;
};

static void fuzz_rtnl_count(void *arg, const struct ul_rtnl_link *l)
{
	(void)l;
	((struct links *)arg)->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a = { 0 }, b = { 0 };
	/* a copy of exactly `size` bytes: a read past them is caught */
	uint8_t *buf = malloc(size ? size : 1);
	int r1, r2;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	const struct ul_rtnl_handlers ha = { fuzz_rtnl_link, fuzz_rtnl_addr, &a };
	const struct ul_rtnl_handlers hb = { fuzz_rtnl_link, fuzz_rtnl_addr, &b };
	struct links l = { 0 };
	int r3;

	r1 = ul_rtnl_decode_all(buf, size, &ha);
	r2 = ul_rtnl_decode_all(buf, size, &hb);
	if (r1 != r2 || a.n != b.n || a.sum != b.sum)
		abort();
	if (r1 >= 0 && r1 != a.n)
		abort();
	/* links alone: as many as were delivered, no more */
	r3 = ul_rtnl_decode(buf, size, fuzz_rtnl_count, &l);
	if ((r1 < 0) != (r3 < 0) || (r3 >= 0 && (r3 != l.n || l.n > a.n)))
		abort();
	free(buf);
	return 0;
}
