/* SPDX-License-Identifier: MIT */
/*
 * ping.h - the ping target and the push target (ping.c): the portal 0 MDs
 * that answer a ping with our ping info and take the pushes of peers.
 */
#ifndef ULNET_CORE_PING_H
#define ULNET_CORE_PING_H

#include <stddef.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

int lnet_ping_target_setup(ulnet_t *ln);
/* Rebuild the ping info after an NI change (lock not held). */
int lnet_ping_target_update(ulnet_t *ln);
void lnet_ping_target_fini(ulnet_t *ln);
int lnet_push_target_post(ulnet_t *ln);
void lnet_push_target_fini(ulnet_t *ln);
/* Encode our ping info into a new buffer (lock held). */
int lnet_ping_info_build_locked(ulnet_t *ln, uint8_t **buf, size_t *len);

#endif
