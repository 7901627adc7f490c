/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_fdlimit.c - the acceptor out of file descriptors, and its
 * listen backlog.
 *
 * test_emfile_backoff: the process's soft RLIMIT_NOFILE is lowered
 * (setrlimit, no privilege needed) to a few fds above what two nodes use;
 * an attacker process holds 200 idle connections to the victim, so
 * accept() fails with EMFILE while connections wait. The victim parks its
 * listener and retries on a timer: over 3 s the whole process uses little
 * CPU (it spun at a full core before: accept4 failing ~27,000 times a
 * second), logs the episode once, an established peer still pings it;
 * once the attacker lets go the victim accepts again by itself and a new
 * node's connection is accepted and pinged.
 *
 * test_accept_backlog: ulnet_ni_conf.accept_backlog reaches listen() (the
 * listener's backlog as sock_diag reports it, as `ss -lt` shows);
 * out-of-range values, or one with accept "none", are refused.
 *
 * Loopback only; no root needed (the nodes accept "all").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>

#include "socklnd_attacker.h"
#include "socklnd_util.h"

#define VICTIM "127.0.0.3"
#define VICTIM_NID "127.0.0.3@tcp"
#define ATTACKER "127.0.0.4"

static uint16_t g_port;
static struct rlimit g_nofile;      /* restored after each test */

static int restore_nofile(void **state)
{
	(void)state;
	return setrlimit(RLIMIT_NOFILE, &g_nofile) == 0 ? 0 : -1;
}

static int ping(struct st_node *from, const struct st_node *to)
{
	struct ulnet_ping_peer out;
	ulnet_process_id_t id = { .nid = to->nid, .pid = ULNET_PID_ANY };

	return ulnet_ping(from->ln, id, NULL, 0, 5000, &out);
}

static void test_emfile_backoff(void **state)
{
	struct st_node v, h, n;
	struct rlimit low;
	uint64_t cpu0, cpu1, t0, t1;
	int base, held, released;

	(void)state;
	assert_int_equal(st_node_start(&v, VICTIM_NID, g_port, "all"), 0);
	assert_int_equal(st_node_start(&h, "127.0.0.2@tcp", g_port, "all"), 0);
	assert_int_equal(ping(&h, &v), 0);

	base = proc_fd_count();
	low = g_nofile;
	low.rlim_cur = (rlim_t)base + 24;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	print_message("fds in use %d, soft limit now %llu\n", base, (unsigned long long)low.rlim_cur);

	held = att_run(ATT_HOLD, 0, 200, ATTACKER, VICTIM, g_port, VICTIM_NID);
	assert_true(held > 24);
	assert_true(st_wait_log(&v, "can't accept connections", "Too many open files"));
	print_message("%d of 200 connections completed, fds in use %d\n", held, proc_fd_count());

	/* parked: the process idles, though connections still wait */
	cpu0 = proc_cpu_ms();
	t0 = st_now_ms();
	usleep(3000 * 1000);
	cpu1 = proc_cpu_ms();
	t1 = st_now_ms();
	print_message("at the fd limit with %d connections held: %llu ms CPU in %llu ms\n", held,
		      (unsigned long long)(cpu1 - cpu0), (unsigned long long)(t1 - t0));
	assert_true(cpu1 - cpu0 < 500);
	/* the established peer is still served */
	assert_int_equal(ping(&h, &v), 0);

	/* the attacker lets go: the victim accepts again by itself */
	released = att_run(ATT_RELEASE, 0, 0, NULL, NULL, 0, NULL);
	assert_int_equal(released, 200);
	assert_true(st_wait_log(&v, "acceptor: accepting again", NULL));
	/* a new node's connection is accepted */
	assert_int_equal(st_node_start(&n, "127.0.0.5@tcp", g_port, "all"), 0);
	assert_int_equal(ping(&n, &v), 0);
	assert_true(st_log_has(&v, "passive", "127.0.0.5@tcp"));
	st_node_stop(&n);

	assert_int_equal(setrlimit(RLIMIT_NOFILE, &g_nofile), 0);
	st_node_stop(&h);
	st_node_stop(&v);
}

/* The backlog of the listener on ip:port (sock_diag's idiag_wqueue for a
 * listening socket), or -errno. */
static int listen_backlog(const char *ip, uint16_t port)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	char buf[16384];
	struct in_addr a;
	int fd, found = -ENOENT;

	inet_pton(AF_INET, ip, &a);
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = AF_INET;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = 1u << TCP_LISTEN;
	if (send(fd, &req, sizeof(req), 0) < 0) {
		found = -errno;
		close(fd);
		return found;
	}
	for (int rounds = 0; rounds < 1000; rounds++) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh = (struct nlmsghdr *)buf;

		if (len <= 0)
			break;
		for (; NLMSG_OK(nh, (size_t)len); nh = NLMSG_NEXT(nh, len)) {
			struct inet_diag_msg *m = NLMSG_DATA(nh);

			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR)
				goto out;
			if (ntohs(m->id.idiag_sport) == port && m->id.idiag_src[0] == a.s_addr)
				found = (int)m->idiag_wqueue;
		}
	}
out:
	close(fd);
	return found;
}

static int tweak_backlog;
static void set_backlog(struct ulnet_ni_conf *c)
{
	c->accept_backlog = tweak_backlog;
}

static void test_accept_backlog(void **state)
{
	struct st_node a, b;
	int rc;

	(void)state;
	tweak_backlog = 16;
	assert_int_equal(st_node_start_conf(&a, "127.0.0.6@tcp", g_port, "all", NULL, NULL, 0,
					    set_backlog), 0);
	assert_int_equal(st_node_start(&b, "127.0.0.7@tcp", g_port, "all"), 0);
	rc = listen_backlog("127.0.0.6", g_port);
	if (rc == -EPROTONOSUPPORT || rc == -EACCES || rc == -EPERM) {
		print_message("sock_diag unavailable (%s): backlog not read back\n", strerror(-rc));
	} else {
		assert_int_equal(rc, 16);
		assert_int_equal(listen_backlog("127.0.0.7", g_port), 127);   /* the default */
	}
	st_node_stop(&a);
	st_node_stop(&b);

	/* out of range, and with no listener to apply it to: refused */
	tweak_backlog = -1;
	assert_int_equal(st_node_start_conf(&a, "127.0.0.6@tcp", g_port, "all", NULL, NULL, 0,
					    set_backlog), -EINVAL);
	assert_true(st_log_has(&a, "invalid accept_backlog = -1", NULL));
	st_node_stop(&a);
	tweak_backlog = 65536;
	assert_int_equal(st_node_start_conf(&a, "127.0.0.6@tcp", g_port, "all", NULL, NULL, 0,
					    set_backlog), -EINVAL);
	st_node_stop(&a);
	tweak_backlog = 8;
	assert_int_equal(st_node_start_conf(&a, "127.0.0.6@tcp", g_port, "none", NULL, NULL, 0,
					    set_backlog), -EINVAL);
	assert_true(st_log_has(&a, "invalid accept_backlog = 8", "has no listener"));
	st_node_stop(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_emfile_backoff, restore_nofile),
		cmocka_unit_test_teardown(test_accept_backlog, restore_nofile),
	};
	int rc;

	g_port = (uint16_t)(st_port() + 3);
	if (getrlimit(RLIMIT_NOFILE, &g_nofile) < 0)
		return 1;
	if (att_start() < 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	att_stop();
	return rc;
}
