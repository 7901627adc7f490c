/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_bulk_port.c - accept_port_bulk (ulnet_ni_conf, the lnet
 * module parameter): two nodes on 127.0.79.1 and 127.0.79.2, both with an
 * acceptor port P and a bulk port Q ("the same on all nodes"):
 *  - each listens on P and Q; the connections a node dials go, as the
 *    kernel's lnet_connect() sends them, CONTROL to P and BULK_IN and
 *    BULK_OUT to Q (seen in ulnet_conn_list() on both sides: the remote
 *    port of what we dialled, the local port of what we accepted); a
 *    1 MiB PUT with its ACK goes through, on the BULK_OUT connection;
 *  - an untyped node (typed_conns off, HELLO V2) dials its one ANY
 *    connection to Q too;
 *  - a bulk port that cannot be bound fails the NI, naming the port, and
 *    frees its acceptor port (both or none, as the kernel's
 *    lnet_acceptor_add_sockets());
 *  - ulnet_conn_list() on another thread while the NI goes: the NI's
 *    shutdown waits for the call (run under ASan, a freed connection or
 *    NI read there would be reported).
 * Typed connections need privileged source ports (a user-space peer opens
 * CONTROL alone): those cases are skipped without them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "socklnd_util.h"

#define PORTAL 14
#define MB 0x7b

static uint16_t g_port, g_bulk;

static void with_bulk(struct ulnet_ni_conf *c)
{
	c->accept_port_bulk = g_bulk;
}

/* untyped: one ANY connection, which needs HELLO V2 */
static void with_bulk_untyped(struct ulnet_ni_conf *c)
{
	c->accept_port_bulk = g_bulk;
	c->sock.typed_conns = -1;
	c->sock.protocol = 2;
}

static void need_privileged(void)
{
	if (!st_is_privileged()) {
		print_message("skipped: typed connections need privileged source ports\n");
		skip();
	}
}

static unsigned sa_port(const struct sockaddr_storage *sa)
{
	return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/* The connections of `n` with peer `peer` (into `c`, room for `max`). */
static int conns_of(struct st_node *n, const struct st_node *peer, struct ulnet_conn_info *c,
		    int max)
{
	int total = ulnet_conn_list(n->ln, c, max), k = 0;

	assert_true(total >= 0 && total <= max);
	for (int i = 0; i < total; i++)
		if (ulnet_nid_same(&c[i].peer, &peer->nid))
			c[k++] = c[i];
	return k;
}

/* Wait (bounded) until `n` has `want` connections with `peer`. */
static int wait_conns(struct st_node *n, const struct st_node *peer, struct ulnet_conn_info *c,
		      int max, int want)
{
	uint64_t end = st_now_ms() + ST_WAIT_MS;
	int k;

	while ((k = conns_of(n, peer, c, max)) < want && st_now_ms() < end)
		usleep(10000);
	return k;
}

static int ping(struct st_node *from, const struct st_node *to)
{
	ulnet_process_id_t t = { .nid = to->nid, .pid = ULNET_PID_ANY };
	struct ulnet_ping_peer pp;

	return ulnet_ping(from->ln, t, NULL, 0, 5000, &pp);
}

static void test_bulk_port(void **state)
{
	(void)state;
	struct st_node a, b;
	struct st_md am, bm;
	struct ulnet_conn_info c[16];
	const size_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = malloc(len);
	ulnet_process_id_t to;
	int n, seen[4] = { 0 };

	need_privileged();
	assert_non_null(src);
	assert_non_null(dst);
	st_md_init(&am);
	st_md_init(&bm);
	assert_int_equal(st_node_start_conf(&a, "127.0.79.1@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk), 0);
	assert_int_equal(st_node_start_conf(&b, "127.0.79.2@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk), 0);

	/* a dials b: CONTROL, then BULK_IN and BULK_OUT */
	assert_int_equal(ping(&a, &b), 0);
	n = wait_conns(&a, &b, c, 16, 3);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++) {
		assert_true(c[i].active);
		assert_true(c[i].type >= ULNET_CONN_CONTROL && c[i].type <= ULNET_CONN_BULK_OUT);
		seen[c[i].type]++;
		assert_int_equal(sa_port(&c[i].remote),
				 c[i].type == ULNET_CONN_CONTROL ? g_port : g_bulk);
		assert_true(sa_port(&c[i].local) <= 1023);
	}
	assert_int_equal(seen[ULNET_CONN_CONTROL], 1);
	assert_int_equal(seen[ULNET_CONN_BULK_IN], 1);
	assert_int_equal(seen[ULNET_CONN_BULK_OUT], 1);
	/* b took them on the port of their type, inverted */
	n = wait_conns(&b, &a, c, 16, 3);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++) {
		assert_false(c[i].active);
		assert_int_equal(sa_port(&c[i].local),
				 c[i].type == ULNET_CONN_CONTROL ? g_port : g_bulk);
	}

	/* a 1 MiB PUT and its ACK, on a's BULK_OUT */
	st_fill(src, len, 3);
	memset(dst, 0, len);
	assert_int_equal(st_target(&b, PORTAL, MB, dst, len, &bm), 0);
	assert_int_equal(st_bind(&a, src, len, 2, &am), 0);
	to.nid = b.nid;
	to.pid = ulnet_pid(b.ln);
	assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_ACK_REQ, to, PORTAL, MB, 0, 0), 0);
	assert_true(st_md_wait(&am, ULNET_EVENT_ACK, 1));
	assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, 1));
	assert_int_equal(am.nerr, 0);
	assert_int_equal(bm.last_mlength, len);
	assert_true(st_check(dst, len, 3));
	n = conns_of(&a, &b, c, 16);
	for (int i = 0; i < n; i++) {
		if (c[i].type == ULNET_CONN_BULK_OUT) {
			assert_true(c[i].tx_bytes > len);
			assert_true(c[i].tx_msgs >= 1);
		}
	}
	n = conns_of(&b, &a, c, 16);
	for (int i = 0; i < n; i++)
		if (c[i].type == ULNET_CONN_BULK_IN)
			assert_true(c[i].rx_bytes > len && c[i].rx_msgs >= 1);
	st_pair_stop(&a, &am, &b, &bm);
	free(src);
	free(dst);
}

static void test_untyped_any(void **state)
{
	(void)state;
	struct st_node a, b;
	struct ulnet_conn_info c[8];

	need_privileged();
	assert_int_equal(st_node_start_conf(&a, "127.0.79.1@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk_untyped), 0);
	assert_int_equal(st_node_start_conf(&b, "127.0.79.2@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk), 0);
	assert_int_equal(ping(&a, &b), 0);
	assert_int_equal(wait_conns(&a, &b, c, 8, 1), 1);
	assert_int_equal(c[0].type, ULNET_CONN_ANY);
	assert_true(c[0].active);
	assert_int_equal(c[0].proto_version, 2);
	/* ANY is not CONTROL: the bulk port, as the kernel */
	assert_int_equal(sa_port(&c[0].remote), g_bulk);
	assert_int_equal(wait_conns(&b, &a, c, 8, 1), 1);
	assert_int_equal(c[0].type, ULNET_CONN_ANY);
	assert_int_equal(sa_port(&c[0].local), g_bulk);
	/* and nothing more is opened */
	usleep(200000);
	assert_int_equal(conns_of(&a, &b, c, 8), 1);
	st_node_stop(&a);
	st_node_stop(&b);
}

/* A socket listening on 127.0.79.3:port (to hold it), or -1. */
static int hold_port(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, "127.0.79.3", &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_bulk_port_busy(void **state)
{
	(void)state;
	struct st_node a;
	char want[96];
	int fd = hold_port(g_bulk);

	assert_true(fd >= 0);
	assert_int_equal(st_node_start_conf(&a, "127.0.79.3@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk), -EADDRINUSE);
	snprintf(want, sizeof(want), "can't listen on port %u (accept_port_bulk)", g_bulk);
	assert_true(st_log_has(&a, want, "Address already in use"));
	st_node_stop(&a);
	close(fd);
	/* the acceptor port it had opened first is free again */
	fd = hold_port(g_port);
	assert_true(fd >= 0);
	close(fd);
}

struct lister {
	ulnet_t *ln;
	bool stop;
	unsigned long calls;
};

static void *lister_main(void *arg)
{
	struct lister *l = arg;
	struct ulnet_conn_info c[16];

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		assert_true(ulnet_conn_list(l->ln, c, 16) >= 0);
		l->calls++;
	}
	return NULL;
}

static void test_list_while_ni_goes(void **state)
{
	(void)state;
	struct st_node a, b;
	struct ulnet_conn_info c[8];

	need_privileged();
	assert_int_equal(st_node_start_conf(&a, "127.0.79.1@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk), 0);
	assert_int_equal(st_node_start_conf(&b, "127.0.79.2@tcp", g_port, "all", NULL, NULL, 0,
					    with_bulk), 0);
	for (int round = 0; round < 3; round++) {
		struct lister l = { .ln = a.ln };
		pthread_t t;

		assert_int_equal(ping(&a, &b), 0);
		assert_int_equal(wait_conns(&a, &b, c, 8, 3), 3);
		assert_int_equal(pthread_create(&t, NULL, lister_main, &l), 0);
		usleep(20000);
		assert_int_equal(ulnet_ni_del(a.ln, &a.nid), 0);
		usleep(20000);
		__atomic_store_n(&l.stop, true, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		assert_true(l.calls > 0);
		assert_int_equal(ulnet_conn_list(a.ln, c, 8), 0);
		/* back for the next round */
		{
			struct ulnet_ni_conf conf = { 0 };

			conf.nid = a.nid;
			conf.accept_port = g_port;
			conf.tun.tos = -1;
			snprintf(conf.accept, sizeof(conf.accept), "all");
			with_bulk(&conf);
			assert_int_equal(ulnet_ni_add(a.ln, &conf), 0);
		}
	}
	st_node_stop(&a);
	st_node_stop(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk_port),
		cmocka_unit_test(test_untyped_any),
		cmocka_unit_test(test_bulk_port_busy),
		cmocka_unit_test(test_list_while_ni_goes),
	};

	g_port = st_port();
	g_bulk = (uint16_t)(g_port + 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
