/* SPDX-License-Identifier: MIT */
/*
 * fuzz_nid.c - NID text parser: whatever parses must format, re-parse to the
 * same NID, format to the same text, and be matched by nidlists built from
 * that text ("<nid>", "*@<net>", and "<ip>/32@<net>" for IPv4).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/nid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_nid_must_match(const char *text, const ulnet_nid_t *nid)
{
	ulnet_nidlist_t *list = NULL;

	if (ulnet_nidlist_parse(text, &list, NULL) != 0)
		abort();
	if (!ulnet_nidlist_match(list, nid))
		abort();
	ulnet_nidlist_free(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	char t1[ULNET_NIDSTR_SIZE], t2[ULNET_NIDSTR_SIZE], net[ULNET_NETSTR_SIZE];
	char l[ULNET_NIDSTR_SIZE + 16];
	struct ulnet_parse_err err;
	ulnet_nid_t a, b;
	uint8_t w[ULNET_NID_WIRE_SIZE];
	int n;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (ulnet_nid_parse(s, &a, &err) != 0) {
		if (strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg) || err.pos < 0 ||
		    (size_t)err.pos > size)
			abort();
		free(s);
		return 0;
	}
	n = ulnet_nid_format(&a, t1, sizeof(t1));
	if (n < 0 || (size_t)n != strlen(t1))
		abort();
	if (ulnet_nid_parse(t1, &b, NULL) != 0 || !ulnet_nid_same(&a, &b))
		abort();
	if (ulnet_nid_format(&b, t2, sizeof(t2)) != n || strcmp(t1, t2) != 0)
		abort();
	ulnet_nid_encode(&a, w);
	if (ulnet_nid_decode(w, &b) != 0 || !ulnet_nid_same(&a, &b))
		abort();

	if (!ulnet_nid_is_any(&a)) {
		fuzz_nid_must_match(t1, &a);
		if (ulnet_net_format(ulnet_nid_net(&a), net, sizeof(net)) < 0)
			abort();
		snprintf(l, sizeof(l), "*@%s", net);
		fuzz_nid_must_match(l, &a);
		if (!ulnet_nid_is_large(&a) &&
		    (a.type == ULNET_LND_TCP || a.type == ULNET_LND_O2IB || a.type == ULNET_LND_EFA)) {
			snprintf(l, sizeof(l), "%u.%u.%u.%u/32@%s", a.addr[0], a.addr[1],
				 a.addr[2], a.addr[3], net);
			fuzz_nid_must_match(l, &a);
		}
	}
	free(s);
	return 0;
}
