/* SPDX-License-Identifier: MIT */
/*
 * replay_main.c - without libFuzzer (gcc builds), each fuzz target is linked
 * with this driver: it feeds every file of the given corpus directory, every
 * prefix of it, and a few thousand deterministic mutations of it, to the
 * target. The point is that the decoders meet hostile bytes in every build.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return rng;
}

static void run_one(const uint8_t *buf, size_t len)
{
	uint8_t *copy = malloc(len + 1);
	size_t i;
	int m;

	for (i = 0; i <= len; i++) {        /* every prefix, exact-size buffers */
		uint8_t *p = malloc(i ? i : 1);
		memcpy(p, buf, i);
		LLVMFuzzerTestOneInput(p, i);
		free(p);
	}
	for (m = 0; m < 2000 && len > 0; m++) {
		int flips = 1 + (int)(next_rand() % 4), f;
		memcpy(copy, buf, len);
		for (f = 0; f < flips; f++)
			copy[next_rand() % len] = (uint8_t)next_rand();
		LLVMFuzzerTestOneInput(copy, len);
	}
	free(copy);
}

int main(int argc, char **argv)
{
	int files = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			char path[4096];
			FILE *f;
			uint8_t buf[1 << 16];
			size_t n;
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
			f = fopen(path, "rb");
			if (!f)
				continue;
			n = fread(buf, 1, sizeof(buf), f);
			fclose(f);
			run_one(buf, n);
			files++;
		}
		closedir(d);
	}
	/* Pure random inputs as well, so an empty corpus still tests something. */
	for (int i = 0; i < 2000; i++) {
		uint8_t buf[256];
		size_t n = next_rand() % sizeof(buf);
		for (size_t j = 0; j < n; j++)
			buf[j] = (uint8_t)next_rand();
		LLVMFuzzerTestOneInput(buf, n);
	}
	printf("replayed %d corpus files plus 2000 random inputs\n", files);
	return 0;
}
