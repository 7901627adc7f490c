/* SPDX-License-Identifier: MIT */
#include "util/log.h"

#include <stdio.h>

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void ul_vlog(const struct ul_logger *lg, enum ulnet_log_level lvl, const char *fmt, va_list ap)
{
	char msg[512];

	if (lvl > lg->level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (lg->fn) {
		lg->fn(lg->arg, lvl, msg);
		return;
	}
	fprintf(stderr, "ulnet%s%s: %s: %s\n", lg->prefix ? " " : "", lg->prefix ? lg->prefix : "",
		level_names[lvl], msg);
}
