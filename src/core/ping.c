/* SPDX-License-Identifier: MIT */
/* ping.c - ping and push targets (Phase B; placeholders for now). */
#include <errno.h>

#include "core/core.h"

int lnet_ping_target_setup(ulnet_t *ln) { (void)ln; return 0; }
int lnet_ping_target_update(ulnet_t *ln) { (void)ln; return 0; }
void lnet_ping_target_fini(ulnet_t *ln) { (void)ln; }
int lnet_push_target_post(ulnet_t *ln) { (void)ln; return 0; }
void lnet_push_target_fini(ulnet_t *ln) { (void)ln; }

int ulnet_ping(ulnet_t *ln, ulnet_process_id_t target, const ulnet_nid_t *src,
	       unsigned sink_len, int timeout_ms, struct ulnet_ping_peer *out)
{
	(void)ln; (void)target; (void)src; (void)sink_len; (void)timeout_ms; (void)out;
	return -ENOSYS;
}
