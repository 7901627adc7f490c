/* SPDX-License-Identifier: MIT */
/*
 * fuzz_nidlist.c - NID list parser. There is no list formatter, so the round
 * trip is by membership: every item of a parsed list that is itself a NID in
 * its canonical text must be matched by the list, and "*@<net>" of it too.
 * Every whitespace-separated token is also tried as a NID against the list,
 * and every NID the list expands to (into room the first byte chooses) must
 * be matched by it.
 *
 * The same text is also a UDSP descriptor (ulnet/udsp.h, parsed by the
 * nidlist's field parser): refused with its place in the text and a
 * terminated reason, or shown in a canonical form that parses back to
 * itself.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulnet/nid.h"
#include "ulnet/udsp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Add `text` as the src of a priority rule and read back its canonical
 * form into `canon` (the rule is deleted again): 0, or the add's error. */
static int fuzz_udsp_canon(ulnet_t *ln, const char *text, char canon[ULNET_UDSP_STR_MAX],
			   struct ulnet_udsp_err *e)
{
	struct ulnet_udsp_rule r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.action = ULNET_UDSP_ACTION_PRIORITY;
	memcpy(r.match[ULNET_UDSP_SRC], text, strlen(text) + 1);
	rc = ulnet_udsp_add(ln, &r, -1, e);
	if (rc)
		return rc;
	if (ulnet_udsp_get(ln, 0, &r) != 0 || ulnet_udsp_del(ln, 0) != 0 || ulnet_udsp_count(ln) != 0)
		abort();
	memcpy(canon, r.match[ULNET_UDSP_SRC], ULNET_UDSP_STR_MAX);
	if (strnlen(canon, ULNET_UDSP_STR_MAX) == ULNET_UDSP_STR_MAX)
		abort();
	return 0;
}

static void fuzz_udsp(const char *s, size_t size)
{
	static ulnet_t *ln;
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS | ULNET_OPT_NO_LOOPBACK };
	char c1[ULNET_UDSP_STR_MAX], c2[ULNET_UDSP_STR_MAX];
	struct ulnet_udsp_err e;
	int rc;

	if (size >= ULNET_UDSP_STR_MAX || !s[0] || strlen(s) != size)
		return;
	if (!ln && ulnet_create(&o, &ln) != 0)
		abort();
	rc = fuzz_udsp_canon(ln, s, c1, &e);
	if (rc == -EINVAL) {
		if (e.part != ULNET_UDSP_SRC || e.parse.pos < 0 || (size_t)e.parse.pos > size ||
		    strnlen(e.parse.msg, sizeof(e.parse.msg)) == sizeof(e.parse.msg))
			abort();
		return;
	}
	if (rc)
		abort();
	if (fuzz_udsp_canon(ln, c1, c2, &e) != 0 || strcmp(c1, c2) != 0)
		abort();
}

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
	fuzz_udsp(s, size);
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
