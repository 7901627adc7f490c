/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ping_info.c - ping info decode and validation on arbitrary bytes.
 * Our encoding is canonical (LE, nid4 entries first, total recomputed), so
 * the property is a fixed point: encode(decode(x)) decodes whole and
 * re-encodes to the same bytes, with the same features, pid and entries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ping_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NIS 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static __thread struct lnet_ping_ni n1[MAX_NIS], n2[MAX_NIS], n3[MAX_NIS];
	struct lnet_ping_info p1 = { .nis = n1, .max_nis = MAX_NIS };
	struct lnet_ping_info p2 = { .nis = n2, .max_nis = MAX_NIS };
	struct lnet_ping_info p3 = { .nis = n3, .max_nis = MAX_NIS };
	uint8_t *e1, *e2;
	ssize_t rc = lnet_ping_info_decode(data, size, &p1), n;
	size_t need;

	if (rc < 0)
		return 0;
	if ((size_t)rc > size || p1.nnis > p1.nnis_wire || p1.nnis < 1)
		abort();
	if (!ulnet_nid_same(&p1.nis[0].nid, &ULNET_NID_LO0))
		abort();

	need = lnet_ping_info_size(&p1);
	e1 = malloc(need);		/* exact size: ASan sees any overrun */
	e2 = malloc(need);
	if (!e1 || !e2)
		abort();
	n = lnet_ping_info_encode(&p1, e1, need);
	if (n < 0 || (size_t)n != need || lnet_ping_info_encode(&p1, e1, need - 1) >= 0)
		abort();
	if (lnet_ping_info_decode(e1, need, &p2) != n || p2.truncated || p2.swapped ||
	    p2.nnis != p1.nnis || p2.nnis_wire != p2.nnis || p2.pid != p1.pid ||
	    (p2.features & ~(uint32_t)LNET_PING_FEAT_LARGE_ADDR) !=
	    (p1.features & ~(uint32_t)LNET_PING_FEAT_LARGE_ADDR))
		abort();
	if (lnet_ping_info_encode(&p2, e2, need) != n || memcmp(e1, e2, need))
		abort();
	if (lnet_ping_info_decode(e2, need, &p3) != n || p3.nnis != p2.nnis)
		abort();
	for (unsigned i = 0; i < p2.nnis; i++)
		if (!ulnet_nid_same(&n2[i].nid, &n3[i].nid) || n2[i].status != n3[i].status ||
		    n2[i].msg_size != n3[i].msg_size)
			abort();
	free(e1);
	free(e2);
	return 0;
}
