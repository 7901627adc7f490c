/* SPDX-License-Identifier: MIT */
/*
 * conn_list.c - ulnet_conn_list(): the established connections of every
 * NI, each NI's described by its LND (the conn_list op), as the kernel's
 * `lctl conn_list` asks ksocklnd for them one by one (IOC_LIBCFS_GET_CONN).
 * The core keeps no connection state of its own: it only holds each NI in
 * service while its LND is asked.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "core/core.h"

/* The NIs that can list connections, each held for the calls (a
 * reference, and ni_conns_busy, which its shutdown waits for), taken in
 * one pass under the lock: NIs added or removed meanwhile are simply not
 * listed, and no NI is skipped or listed twice. Returns how many (into
 * *out, to free), or -ENOMEM. */
static int lnet_conn_nis_hold(ulnet_t *ln, struct lnet_ni ***out)
{
	struct ul_list *pos;
	struct lnet_ni **nis = NULL;
	int n = 0, cap = 0;

	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni->ni_lnd->conn_list && ni->ni_up)
			cap++;
	}
	if (cap > 0) {
		nis = calloc((size_t)cap, sizeof(*nis));
		if (!nis) {
			lnet_unlock(ln);
			return -ENOMEM;
		}
	}
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (!ni->ni_lnd->conn_list || !ni->ni_up || n == cap)
			continue;
		lnet_ni_addref_locked(ni);
		ni->ni_conns_busy++;
		nis[n++] = ni;
	}
	lnet_unlock(ln);
	*out = nis;
	return n;
}

int ulnet_conn_list(ulnet_t *ln, struct ulnet_conn_info *conns, int max)
{
	struct lnet_ni **nis = NULL;
	int total = 0, n;

	if (!ln || max < 0 || (max > 0 && !conns))
		return -EINVAL;
	n = lnet_conn_nis_hold(ln, &nis);
	if (n < 0)
		return n;
	/* no LND op runs under the core lock */
	for (int i = 0; i < n; i++) {
		int room = total < max ? max - total : 0;
		int got = nis[i]->ni_lnd->conn_list(nis[i], room ? conns + total : NULL, room);

		if (got > 0)
			total = got > INT_MAX - total ? INT_MAX : total + got;
	}
	lnet_lock(ln);
	for (int i = 0; i < n; i++) {
		nis[i]->ni_conns_busy--;
		lnet_ni_decref_locked(nis[i]);
	}
	lnet_unlock(ln);
	free(nis);
	return total;
}
