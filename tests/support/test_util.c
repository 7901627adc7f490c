/* SPDX-License-Identifier: MIT */
/* test_util.c - helpers shared by the tests. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

const char *tu_shared_dir(void)
{
	const char *s = getenv("ULNET_SHARED");
	return s && *s ? s : "../shared";
}

int tu_read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*buf = malloc(n > 0 ? (size_t)n : 1);
	*len = fread(*buf, 1, (size_t)n, f);
	fclose(f);
	return 0;
}
