/* SPDX-License-Identifier: MIT */
/*
 * recovery.h - recovery (recovery.c): the timer that pings our NIs and the
 * peer NIs below full health, and the health of our NIs.
 */
#ifndef ULNET_CORE_RECOVERY_H
#define ULNET_CORE_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

struct lnet_ni;       /* ni.h */
struct lnet_peer_ni;  /* peer.h */

/* recovery.c: the recovery timer; a health value dropped: make sure it
 * runs. */
void lnet_recovery_init(ulnet_t *ln);
void lnet_recovery_arm_locked(ulnet_t *ln);
/* Whether recovery pings it (the kernel's recovery queues, as `debug
 * recovery` lists them): our up NI below full health; a peer NI below full
 * health we have heard from, not aged out by recovery_limit. */
bool lnet_ni_in_recovery_locked(const ulnet_t *ln, const struct lnet_ni *ni);
bool lnet_peer_ni_in_recovery_locked(const ulnet_t *ln, const struct lnet_peer_ni *lpni,
				     uint64_t now);
/* A send on our NI failed (`what`, `why` for the log): lower its health,
 * status DOWN at 0, recovery (the kernel's lnet_handle_local_failure()). */
void lnet_ni_health_fail_locked(ulnet_t *ln, struct lnet_ni *ni, const char *what, const char *why);
/* Something went well on our NI: raise its health, status UP at full. */
void lnet_ni_health_ok_locked(ulnet_t *ln, struct lnet_ni *ni);

#endif
