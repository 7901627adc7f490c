/* SPDX-License-Identifier: MIT */
/* discovery.c - peer discovery (Phase B; placeholder for now). */
#include <errno.h>

#include "core/core.h"

bool lnet_peer_discovery_hold_locked(ulnet_t *ln, struct lnet_peer_ni *lpni,
				     struct lnet_msg *msg)
{
	(void)ln; (void)lpni; (void)msg;
	return false;
}

int ulnet_discover(ulnet_t *ln, const ulnet_nid_t *nid, bool force, int timeout_ms,
		   struct ulnet_ping_peer *out)
{
	(void)ln; (void)nid; (void)force; (void)timeout_ms; (void)out;
	return -ENOSYS;
}
