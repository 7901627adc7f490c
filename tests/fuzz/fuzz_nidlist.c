/* SPDX-License-Identifier: MIT */
/*
 * fuzz_nidlist.c - NID list parser. There is no list formatter, so the round
 * trip is by membership: every item of a parsed list that is itself a NID in
 * its canonical text must be matched by the list, and "*@<net>" of it too.
 * Every whitespace-separated token is also tried as a NID against the list,
 * and every NID the list expands to (into room the first byte chooses) must
 * be matched by it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/nid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_nidlist_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct ulnet_parse_err err;
	ulnet_nidlist_t *list = NULL;
	char *p, *tok;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (ulnet_nidlist_parse(s, &list, &err) != 0) {
		if (list || strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg) ||
		    err.pos < 0 || (size_t)err.pos > size)
			abort();
		free(s);
		return 0;
	}
	(void)ulnet_nidlist_match(list, &ULNET_NID_ANY);
	(void)ulnet_nidlist_match(list, &ULNET_NID_LO0);

	/* Expansion (import's "peer ni" ranges): bounded by the room given,
	 * every NID it yields is matched by the list, an error names a place
	 * in the input. */
	{
		ulnet_nid_t nids[64];
		int max = size ? data[0] % 65 : 0;
		int n = ulnet_nidlist_expand(list, nids, max, &err);

		if (n > max || (n < 0 && n != -E2BIG && n != -EDOM))
			abort();
		if (n < 0 && (err.pos < 0 || (size_t)err.pos > size ||
			      strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg)))
			abort();
		for (int i = 0; i < n; i++)
			if (!ulnet_nidlist_match(list, &nids[i]))
				abort();
	}

	for (p = s; *p;) {
		char canon[ULNET_NIDSTR_SIZE];
		ulnet_nid_t nid;
		bool m;

		while (*p && fuzz_nidlist_space(*p))
			p++;
		tok = p;
		while (*p && !fuzz_nidlist_space(*p))
			p++;
		if (*p)
			*p++ = '\0';
		if (!*tok || ulnet_nid_parse(tok, &nid, NULL) != 0)
			continue;
		m = ulnet_nidlist_match(list, &nid);
		if (ulnet_nid_format(&nid, canon, sizeof(canon)) > 0 && strcmp(canon, tok) == 0 &&
		    !m)
			abort();
		/* No list item matches a NID of a net no item names. */
		if (m && !ulnet_nid_is_any(&nid)) {
			char net[ULNET_NETSTR_SIZE], all[ULNET_NETSTR_SIZE + 2];
			ulnet_nidlist_t *l2 = NULL;

			if (ulnet_net_format(ulnet_nid_net(&nid), net, sizeof(net)) < 0)
				abort();
			snprintf(all, sizeof(all), "*@%s", net);
			if (ulnet_nidlist_parse(all, &l2, NULL) != 0 || !ulnet_nidlist_match(l2, &nid))
				abort();
			ulnet_nidlist_free(l2);
		}
	}
	ulnet_nidlist_free(list);
	free(s);
	return 0;
}
