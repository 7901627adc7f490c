/* SPDX-License-Identifier: MIT */
/*
 * node_info.h - lookups for in-process tests: one NI or one peer NI of an
 * instance, by NID, as `net show -v` and `peer show -v` see it (a cmocka
 * failure if there is none). Include after <cmocka.h>.
 */
#ifndef ULNET_TEST_NODE_INFO_H
#define ULNET_TEST_NODE_INFO_H

#include "ulnet/ulnet.h"

static inline struct ulnet_ni_info ni_info(ulnet_t *ln, const ulnet_nid_t *nid)
{
	struct ulnet_ni_info info;

	for (int i = 0; ulnet_ni_info(ln, i, &info) == 0; i++)
		if (ulnet_nid_same(&info.nid, nid))
			return info;
	fail_msg("no such NI");
	return info;
}

static inline struct ulnet_peer_ni_info peer_ni(ulnet_t *ln, const ulnet_nid_t *nid)
{
	static struct ulnet_peer_info pi;

	for (int p = 0; ulnet_peer_info(ln, p, &pi) == 0; p++)
		for (int i = 0; i < pi.nnis; i++)
			if (ulnet_nid_same(&pi.nis[i].nid, nid))
				return pi.nis[i];
	fail_msg("no such peer NI");
	return pi.nis[0];
}

#endif
