/* SPDX-License-Identifier: MIT */
/*
 * test_memreg.c - what an LND that keeps device registrations learns of the
 * application's memory (core/memreg.h): nothing is logged before an LND
 * reads; an MD freed (auto-unlinked after its PUT, or unlinked) logs the
 * hull of its fragments; registered regions (ulnet_mem_register) and their
 * deregistration, logged as a region's; the API's errors; a reader that
 * falls behind the log is told what it lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ulnet/ulnet.h"

static void quiet_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	(void)msg;
}

static ulnet_t *mk(void)
{
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS, .log = quiet_log };
	ulnet_t *ln;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	return ln;
}

static void bind_unlink(ulnet_t *ln, void *start, size_t len, unsigned options)
{
	struct ulnet_md md = { .start = start, .length = len, .threshold = 1, .options = options };
	ulnet_handle_t h;

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_RETAIN, &h), 0);
	assert_int_equal(ulnet_md_unlink(ln, h), 0);
}

static void test_md_release(void **state)
{
	ulnet_t *ln = mk();
	static char buf[3][8192];
	struct iovec iov[2] = { { buf[2] + 100, 50 }, { buf[1], 10 } };
	struct lnet_memreg_cursor c;
	struct lnet_mem_release r[4];

	(void)state;
	/* before an LND reads, an MD's release costs nothing and leaves nothing */
	bind_unlink(ln, buf[0], 4096, 0);
	lnet_memreg_start(ln, &c);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 4), 0);
	bind_unlink(ln, buf[0], 4096, 0);
	/* an iovec MD: the hull of its fragments */
	bind_unlink(ln, iov, 2, ULNET_MD_IOVEC);
	/* nothing for an MD of no bytes */
	bind_unlink(ln, NULL, 0, 0);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 4), 2);
	assert_int_equal(r[0].lo, (uintptr_t)buf[0]);
	assert_int_equal(r[0].hi, (uintptr_t)buf[0] + 4096);
	assert_false(r[0].region);
	assert_int_equal(r[1].lo, (uintptr_t)buf[1]);
	assert_int_equal(r[1].hi, (uintptr_t)buf[2] + 150);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 4), 0);
	ulnet_destroy(ln);
}

static void test_regions(void **state)
{
	ulnet_t *ln = mk();
	static char buf[65536];
	struct lnet_memreg_cursor c;
	struct lnet_mem_release r[4];

	(void)state;
	lnet_memreg_start(ln, &c);
	assert_int_equal(ulnet_mem_register(ln, buf, 32768), 0);
	assert_int_equal(ulnet_mem_register(ln, buf, 32768), -EEXIST);
	assert_int_equal(ulnet_mem_register(ln, buf + 32768, 32768), 0);
	assert_int_equal(ulnet_mem_register(ln, NULL, 10), -EINVAL);
	assert_int_equal(ulnet_mem_register(ln, buf, 0), -EINVAL);
	assert_int_equal(ulnet_mem_register(ln, (void *)(UINTPTR_MAX - 10), 100), -EINVAL);
	assert_int_equal(ulnet_mem_register(NULL, buf, 10), -EINVAL);
	assert_true(lnet_memreg_in_region(ln, (uintptr_t)buf + 10, (uintptr_t)buf + 4096));
	assert_true(lnet_memreg_in_region(ln, (uintptr_t)buf, (uintptr_t)buf + 32768));
	/* across two regions is inside neither */
	assert_false(lnet_memreg_in_region(ln, (uintptr_t)buf + 30000, (uintptr_t)buf + 40000));
	assert_false(lnet_memreg_in_region(ln, (uintptr_t)buf + 60000, (uintptr_t)buf + 70000));
	/* registering logs nothing; deregistering logs a region's release */
	assert_int_equal(lnet_memreg_read(ln, &c, r, 4), 0);
	assert_int_equal(ulnet_mem_deregister(ln, buf, 4096), -ENOENT);
	assert_int_equal(ulnet_mem_deregister(ln, buf, 32768), 0);
	assert_int_equal(ulnet_mem_deregister(ln, buf, 32768), -ENOENT);
	assert_false(lnet_memreg_in_region(ln, (uintptr_t)buf + 10, (uintptr_t)buf + 4096));
	assert_int_equal(lnet_memreg_read(ln, &c, r, 4), 1);
	assert_true(r[0].region);
	assert_int_equal(r[0].lo, (uintptr_t)buf);
	assert_int_equal(r[0].hi, (uintptr_t)buf + 32768);
	ulnet_destroy(ln);
}

/* A reader that falls more than the log's length behind loses what was
 * overwritten, and is told whether a region's release was among it. */
static void test_overflow(void **state)
{
	ulnet_t *ln = mk();
	static char buf[2][4096];
	struct lnet_memreg_cursor c, c2;
	struct lnet_mem_release r[8];

	(void)state;
	lnet_memreg_start(ln, &c);
	for (int i = 0; i < LNET_MEMREG_LOG; i++)
		bind_unlink(ln, buf[0], 64, 0);
	c2 = c;
	/* exactly the log's length: all still there */
	int n = 0, k;

	while ((k = lnet_memreg_read(ln, &c2, r, 8)) > 0)
		n += k;
	assert_int_equal(k, 0);
	assert_int_equal(n, LNET_MEMREG_LOG);
	bind_unlink(ln, buf[0], 64, 0);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 8), LNET_MEMREG_LOST);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 8), 0);
	/* a region deregistered among what was lost */
	assert_int_equal(ulnet_mem_register(ln, buf[1], 4096), 0);
	assert_int_equal(ulnet_mem_deregister(ln, buf[1], 4096), 0);
	for (int i = 0; i < LNET_MEMREG_LOG; i++)
		bind_unlink(ln, buf[0], 64, 0);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 8), LNET_MEMREG_LOST_ALL);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 8), 0);
	/* one read as it happened: no loss */
	assert_int_equal(ulnet_mem_register(ln, buf[1], 4096), 0);
	assert_int_equal(ulnet_mem_deregister(ln, buf[1], 4096), 0);
	assert_int_equal(lnet_memreg_read(ln, &c, r, 8), 1);
	assert_true(r[0].region);
	ulnet_destroy(ln);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_md_release),
		cmocka_unit_test(test_regions),
		cmocka_unit_test(test_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
