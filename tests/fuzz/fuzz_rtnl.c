/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rtnl.c - the rtnetlink link message decoder (util/rtnl.c): any
 * bytes decode without reading outside them; what it hands out holds
 * (a terminated name, an operstate that fits a byte or -1), and the same
 * bytes decode the same way twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a = { 0 }, b = { 0 };
	/* a copy of exactly `size` bytes: a read past them is caught */
	uint8_t *buf = malloc(size ? size : 1);
	int r1, r2;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	r1 = ul_rtnl_decode(buf, size, fuzz_rtnl_link, &a);
	r2 = ul_rtnl_decode(buf, size, fuzz_rtnl_link, &b);
	if (r1 != r2 || a.n != b.n || a.sum != b.sum)
		abort();
	if (r1 >= 0 && r1 != a.n)
		abort();
	free(buf);
	return 0;
}
