/* SPDX-License-Identifier: MIT */
/*
 * core.h - internal types of the LNet core: the instance, its NIs, portals,
 * match entries (ME), memory descriptors (MD), messages and peers. Each
 * module's types and prototypes are in a header of its own, included below
 * in dependency order; the files of the core include this one.
 *
 * Locking: every field of these headers that can change after creation is
 * protected by the instance mutex `ln_lock` unless its comment says
 * otherwise. The lock is never held while an event handler or an LND op
 * runs; functions named *_locked expect it held.
 */
#ifndef ULNET_CORE_CORE_H
#define ULNET_CORE_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "core/lnd.h"
#include "core/lnet_hdr.h"
#include "core/memreg.h"
#include "core/ping_info.h"
#include "util/ul_lock.h"
#include "ulnet/routing.h"
#include "ulnet/ulnet.h"
#include "util/evloop.h"
#include "util/log.h"

#include "core/list.h"       /* LASSERT(), struct ul_list */
#include "core/handle.h"     /* handle table (handle.c) */
#include "core/portal.h"     /* MEs and portals (portal.c) */
#include "core/instance.h"   /* struct ulnet, lock, clock, log (instance.c) */
#include "core/md.h"         /* MDs (md.c) */
#include "core/msg.h"        /* messages, struct lnet_sendq (msg.c) */
#include "core/latency.h"    /* latency figures */
#include "core/ni.h"         /* NIs (ni.c, ni_link.c) */
#include "core/peer.h"       /* peers and peer NIs (peer.c) */
#include "core/recovery.h"   /* recovery pings, NI health (recovery.c) */
#include "core/counters.h"   /* peer NI latency samples (counters.c) */
#include "core/send.h"       /* the send path (send.c) */
#include "core/recv.h"       /* the receive path (recv.c) */
#include "core/ping.h"       /* ping and push targets (ping.c) */
#include "core/discovery.h"  /* peer discovery (discovery.c) */

#endif /* ULNET_CORE_CORE_H */
