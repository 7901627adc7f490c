/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_busypoll.c - two nodes whose progress threads spin
 * (ULNET_OPT_BUSY_POLL) over TCP loopback.
 *
 * A spinning loop takes a connection that keeps bringing input out of
 * epoll ("parked", src/util/evloop.c) and reads it with direct recv()
 * calls; it goes back into epoll when it goes quiet or streams bulk. Here:
 * during an 8-byte PUT+ACK ping-pong some connection socket is in no epoll
 * set of the process (read from /proc/self/fdinfo); a 1 MiB PUT (a large
 * payload, a ZC-ACK) sent beside the ping-pong completes intact; after the
 * traffic stops every socket is registered again.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "socklnd_util.h"

#define PORTAL 23
#define MB 0xb05

/* What /proc/self/fd/<name> points to ("socket:[...]", ...); false if
 * it is gone. */
static bool fd_link(const char *name, char *link, size_t size)
{
	char path[320];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%s", name);
	n = readlink(path, link, size - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return true;
}

/* Sockets of this process that no epoll set of it holds. */
static int sockets_outside_epoll(void)
{
	static int in_epoll[4096];
	char path[320], link[128], line[256];
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int outside = 0;

	assert_non_null(d);
	memset(in_epoll, 0, sizeof(in_epoll));
	/* pass 1: what the epoll sets hold ("tfd: N" lines) */
	while ((de = readdir(d))) {
		FILE *f;

		if (!fd_link(de->d_name, link, sizeof(link)) ||
		    strcmp(link, "anon_inode:[eventpoll]") != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			int fd;

			if (sscanf(line, "tfd: %d", &fd) == 1 && fd >= 0 && fd < 4096)
				in_epoll[fd] = 1;
		}
		fclose(f);
	}
	/* pass 2: the sockets */
	rewinddir(d);
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (fd_link(de->d_name, link, sizeof(link)) && strncmp(link, "socket:", 7) == 0 &&
		    fd >= 0 && fd < 4096 && !in_epoll[fd])
			outside++;
	}
	closedir(d);
	return outside;
}

/* The ping-pong runs in the handlers, as a latency benchmark's does: each
 * ACK's event (on the sender's progress thread) sends the next PUT. */
static struct {
	ulnet_t *ln;
	ulnet_handle_t md;
	ulnet_process_id_t target;
	int left;
} pp;

static void pp_handler(const struct ulnet_event *ev)
{
	st_md_handler(ev);
	if (ev->type == ULNET_EVENT_ACK && ev->status == 0 &&
	    __atomic_sub_fetch(&pp.left, 1, __ATOMIC_RELAXED) > 0)
		(void)ulnet_put(pp.ln, NULL, pp.md, ULNET_ACK_REQ, pp.target, PORTAL, MB, 0, 0);
}

static void test_busy_poll_parks_and_returns(void **state)
{
	enum { NPP = 40000 };
	static uint8_t dst[2u << 20], big[1u << 20];
	static uint8_t small[8];
	struct ulnet_md md = { 0 };
	struct st_node a, b;
	/* static: a failed assert leaves the nodes running, their handlers
	 * still pointing here */
	static struct st_md am, bm, abig;
	uint16_t port = (uint16_t)(st_port() + 3);
	int seen_parked = 0, looks = 0, left, last_left = NPP + 1;
	uint64_t end, stall_end = 0;

	(void)state;
	st_md_init(&am);
	st_md_init(&bm);
	st_md_init(&abig);
	assert_int_equal(st_node_start_opts(&a, "127.0.0.2@tcp", port, "all", NULL, NULL,
					    ULNET_OPT_BUSY_POLL), 0);
	assert_int_equal(st_node_start_opts(&b, "127.0.0.3@tcp", port, "all", NULL, NULL,
					    ULNET_OPT_BUSY_POLL), 0);
	assert_int_equal(st_target(&b, PORTAL, MB, dst, sizeof(dst), &bm), 0);
	md.start = small;
	md.length = sizeof(small);
	md.threshold = ULNET_MD_THRESH_INF;
	md.user_ptr = &am;
	md.handler = pp_handler;
	assert_int_equal(ulnet_md_bind(a.ln, &md, ULNET_RETAIN, &am.h), 0);
	assert_int_equal(st_bind(&a, big, sizeof(big), ULNET_MD_THRESH_INF, &abig), 0);
	pp.ln = a.ln;
	pp.md = am.h;
	pp.target.nid = b.nid;
	pp.target.pid = ulnet_pid(b.ln);
	pp.left = NPP;
	memset(small, 0x5a, sizeof(small));

	assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_ACK_REQ, pp.target, PORTAL, MB, 0, 0), 0);
	/* bulk through the same nodes meanwhile: it lands whole */
	st_fill(big, sizeof(big), 77);
	assert_int_equal(ulnet_put(a.ln, NULL, abig.h, ULNET_ACK_REQ, pp.target, PORTAL, MB,
				   1u << 20, 0), 0);
	/* a look at the epoll sets every 5 ms while the ping-pong runs: as
	 * long as it makes progress (two spinning nodes on a loaded 2-CPU
	 * machine, or under a sanitizer, take many times longer than alone),
	 * failing after 10 s without a round trip, or 280 s in all (CTest's limit is 300) */
	end = st_now_ms() + 280000;
	while ((left = __atomic_load_n(&pp.left, __ATOMIC_RELAXED)) > 0 && st_now_ms() < end) {
		if (left != last_left) {
			last_left = left;
			stall_end = st_now_ms() + 10000;
		} else if (st_now_ms() > stall_end) {
			fail_msg("the ping-pong stalled with %d round trips left", left);
		}
		if (sockets_outside_epoll() > 0)
			seen_parked++;
		looks++;
		usleep(5000);
	}
	assert_true(st_md_wait(&am, ULNET_EVENT_ACK, NPP));
	assert_true(st_md_wait(&abig, ULNET_EVENT_ACK, 1));
	assert_true(st_check(dst + (1u << 20), sizeof(big), 77));
	print_message("busy poll: %d round trips, a parked socket in %d of %d looks\n", NPP,
		      seen_parked, looks);
	assert_true(seen_parked > 0);
	assert_int_equal(am.nerr, 0);
	assert_int_equal(abig.nerr, 0);
	assert_int_equal(bm.nerr, 0);
	assert_int_equal(bm.n[ULNET_EVENT_PUT], NPP + 1);
	assert_int_equal(dst[0], 0x5a);

	/* quiet: all back in epoll soon (4096 empty polls, a few ms) */
	for (int i = 0; i < 200 && sockets_outside_epoll() > 0; i++)
		usleep(10000);
	assert_int_equal(sockets_outside_epoll(), 0);

	st_md_release(&a, &abig);
	st_pair_stop(&a, &am, &b, &bm);
	st_md_fini(&abig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_poll_parks_and_returns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
