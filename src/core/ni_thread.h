/* SPDX-License-Identifier: MIT */
/* ni_thread.h - NIs that run on a thread of their own (ni_thread.c). */
#ifndef ULNET_CORE_NI_THREAD_H
#define ULNET_CORE_NI_THREAD_H

#include <stdbool.h>

#include "ulnet/ulnet.h"

struct lnet_ni;

/* Does this NI's configuration ask for a thread of its own? */
bool lnet_ni_wants_thread(const struct lnet_ni *ni);
/* Before the LND's startup(): its loop and thread. 0 or -errno. */
int lnet_ni_thread_start(struct lnet_ni *ni);
/* Stop and join the NI's thread (none: nothing); its loop stays. */
void lnet_ni_thread_stop(struct lnet_ni *ni);
/* After the LND's shutdown(): the thread (if still running) and the loop. */
void lnet_ni_loop_release(struct lnet_ni *ni);
/* Instance teardown: every NI's thread, before anything is torn down. */
void lnet_ni_threads_stop_all(ulnet_t *ln);

#endif
