/* SPDX-License-Identifier: MIT */
#ifndef ULNET_TEST_UTIL_H
#define ULNET_TEST_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* ../shared (ULNET_SHARED from CTest). */
const char *tu_shared_dir(void);
/* Read a whole file; returns 0 or -1. Caller frees *buf. */
int tu_read_file(const char *path, uint8_t **buf, size_t *len);
#endif
