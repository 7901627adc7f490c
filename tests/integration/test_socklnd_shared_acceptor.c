/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_shared_acceptor.c - two nets on one address (127.0.31.1@tcp
 * and 127.0.31.1@tcp1, one acceptor port) share one listener, as the
 * kernel's one acceptor per port: both NIs start (no EADDRINUSE); a peer
 * reaches each, its connection handed to the NI its acceptor request names;
 * a request for a NID no NI of the group has is refused; when the NI that
 * holds the listener goes, the other takes it over and new connections
 * still reach it; the last one closes it (the port is free again).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "socklnd_util.h"

static uint16_t g_port;

static void add_ni(struct st_node *n, const char *nid, int want)
{
	struct ulnet_ni_conf c = { 0 };

	assert_int_equal(ulnet_nid_parse(nid, &c.nid, NULL), 0);
	c.accept_port = g_port;
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "all");
	assert_int_equal(ulnet_ni_add(n->ln, &c), want);
}

static int ping(struct st_node *from, const char *to)
{
	ulnet_process_id_t t = { .pid = ULNET_PID_ANY };
	struct ulnet_ping_peer pp;

	assert_int_equal(ulnet_nid_parse(to, &t.nid, NULL), 0);
	return ulnet_ping(from->ln, t, NULL, 0, 5000, &pp);
}

static void test_two_nets_one_port(void **state)
{
	(void)state;
	struct st_node a, b, c;
	ulnet_nid_t a0;

	assert_int_equal(st_node_start(&a, "127.0.31.1@tcp", g_port, "all"), 0);
	add_ni(&a, "127.0.31.1@tcp1", 0);
	assert_true(st_log_has(&a, "127.0.31.1@tcp1 shares the listener of 127.0.31.1@tcp", NULL));
	assert_int_equal(st_node_start(&b, "127.0.31.2@tcp", g_port, "all"), 0);
	add_ni(&b, "127.0.31.2@tcp1", 0);

	/* each of A's NIs answers on its own net, through the one listener */
	assert_int_equal(ping(&b, "127.0.31.1@tcp"), 0);
	assert_int_equal(ping(&b, "127.0.31.1@tcp1"), 0);
	assert_true(st_log_has(&a, "127.0.31.2@tcp1", NULL));

	/* a NID on that address no NI of A has: refused */
	add_ni(&b, "127.0.31.2@tcp2", 0);
	assert_true(ping(&b, "127.0.31.1@tcp2") != 0);
	assert_true(st_wait_log(&a, "refusing connection to 127.0.31.1@tcp2", NULL));

	/* the holder goes: tcp1 takes the listener; a new node still gets in */
	assert_int_equal(ulnet_nid_parse("127.0.31.1@tcp", &a0, NULL), 0);
	assert_int_equal(ulnet_ni_del(a.ln, &a0), 0);
	assert_true(st_log_has(&a, "127.0.31.1@tcp1 holds the listener", NULL));
	assert_int_equal(st_node_start(&c, "127.0.31.3@tcp1", g_port, "all"), 0);
	assert_int_equal(ping(&c, "127.0.31.1@tcp1"), 0);
	st_node_stop(&c);

	/* the last one closes it: the port can be bound again */
	st_node_stop(&a);
	assert_int_equal(st_node_start(&a, "127.0.31.1@tcp1", g_port, "all"), 0);
	st_node_stop(&a);
	st_node_stop(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_nets_one_port),
	};

	g_port = (uint16_t)(st_port() + 31);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
