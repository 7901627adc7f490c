/* SPDX-License-Identifier: MIT */
/* log.h - formatting front end for an instance's log callback. */
#ifndef ULNET_UTIL_LOG_H
#define ULNET_UTIL_LOG_H

#include <stdarg.h>

#include "ulnet/ulnet.h"

struct ul_logger {
	ulnet_log_fn fn;       /* NULL: stderr */
	void *arg;
	enum ulnet_log_level level;
	const char *prefix;    /* e.g. the node's first NID, may be NULL */
};

void ul_vlog(const struct ul_logger *lg, enum ulnet_log_level lvl, const char *fmt, va_list ap);

#endif
