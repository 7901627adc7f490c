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

#include "core/core.h"

/* The index-th NI of the instance, held for a conn_list call (a reference,
 * and ni_conns_busy, which its shutdown waits for); NULL past the last NI.
 * *skip: that NI exists but has nothing to list (its LND keeps no
 * connections), and is not held. */
static struct lnet_ni *lnet_conn_ni_hold(ulnet_t *ln, int index, bool *skip)
{
	struct ul_list *pos;
	int i = 0;

	*skip = false;
	lnet_lock(ln);
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (i++ != index)
			continue;
		if (!ni->ni_lnd->conn_list || !ni->ni_up) {
			*skip = true;
			lnet_unlock(ln);
			return NULL;
		}
		lnet_ni_addref_locked(ni);
		ni->ni_conns_busy++;
		lnet_unlock(ln);
		return ni;
	}
	lnet_unlock(ln);
	return NULL;
}

static void lnet_conn_ni_release(ulnet_t *ln, struct lnet_ni *ni)
{
	lnet_lock(ln);
	ni->ni_conns_busy--;
	lnet_ni_decref_locked(ni);
	lnet_unlock(ln);
}

int ulnet_conn_list(ulnet_t *ln, struct ulnet_conn_info *conns, int max)
{
	int total = 0;

	if (!ln || max < 0 || (max > 0 && !conns))
		return -EINVAL;
	/* NI by NI, by index, each looked up again under the lock: no LND op
	 * runs under the core lock, and the list may change meanwhile (an NI
	 * added or removed between two steps is listed or not) */
	for (int i = 0;; i++) {
		bool skip;
		struct lnet_ni *ni = lnet_conn_ni_hold(ln, i, &skip);
		int room = total < max ? max - total : 0, n;

		if (!ni && !skip)
			break;
		if (!ni)
			continue;
		n = ni->ni_lnd->conn_list(ni, room ? conns + total : NULL, room);
		lnet_conn_ni_release(ln, ni);
		if (n > 0)
			total = n > INT_MAX - total ? INT_MAX : total + n;
	}
	return total;
}
