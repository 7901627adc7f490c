/* SPDX-License-Identifier: MIT */
/*
 * fake_node.h - instances for in-process tests (memlnd): a test clock the
 * test moves by hand (fake_now), and a log captured into `logs` for
 * assertions. Static definitions: include from one test file only.
 */
#ifndef ULNET_TEST_FAKE_NODE_H
#define ULNET_TEST_FAKE_NODE_H

#include <stdbool.h>
#include <string.h>

#include "ulnet/ulnet.h"

static uint64_t fake_now = 1000000000ULL;
static bool fake_ticking;           /* each read moves the clock 1 ms */
static uint64_t fake_clock(void *arg)
{
	(void)arg;
	if (fake_ticking)
		fake_now += 1000000;
	return fake_now;
}

static char logs[16384];
static void capture_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	if (strlen(logs) + strlen(msg) + 2 < sizeof(logs)) {
		strcat(logs, msg);
		strcat(logs, "\n");
	}
}

/* A manual-progress instance on fake_now, its WARN log into `logs`. */
static ulnet_t *mk(void)
{
	struct ulnet_opts o = {
		.flags = ULNET_OPT_MANUAL_PROGRESS,
		.clock = fake_clock,
		.log = capture_log,
		.log_level = ULNET_LOG_WARN,
	};
	ulnet_t *ln = NULL;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	return ln;
}

#endif
