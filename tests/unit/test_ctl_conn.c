/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_conn.c - ulnetctl "conn show" (ulnet_conn_list(), the kernel's
 * `lctl conn_list`) against an in-process node (ctl_run):
 *  - its YAML, rendered from fixed values (IPv4 and IPv6 addresses);
 *  - no tcp NI, a filter that matches nothing: nothing, exit 0; bad
 *    options and filters refused; LNet down: the netlink error;
 *  - a node pinging its own NID with conns_per_peer 1 and 3: as
 *    sanity-lnet 230 counts them with lctl conn_list, 2 CONTROL
 *    connections (ours and the one we accepted) plus 2 * conns_per_peer
 *    bulk ones (each BULK_IN we dial is accepted as a BULK_OUT), with
 *    the right ports, and --net / --nid keep only what they name;
 *  - with accept_port_bulk (net add --accept-port-bulk) the bulk
 *    connections we dial go to that port, CONTROL to accept_port.
 *
 * The self-ping cases need privileged source ports (root or
 * CAP_NET_BIND_SERVICE): without them a node opens CONTROL alone (a
 * user-space peer, docs/socklnd.md) and they are skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lnd/socklnd/sock_int.h"   /* ksock_can_bind_privileged() */
#include "ctl_cmds.h"
#include "ctl_cmds_int.h"
#include "ctl_test.h"

/* The node's address: a loopback one no other test uses. */
#define SELF "127.0.77.1@tcp"

/* An acceptor port of this run (high, from the pid), and the bulk one. */
static unsigned port_ctl(void)
{
	return 20000u + ((unsigned)getpid() * 7u + 3u) % 30000u;
}

static unsigned port_bulk(void)
{
	return port_ctl() + 1u;
}

static int setup(void **state)
{
	return ctl_fix_setup(state, NULL, NULL);
}

static int teardown(void **state)
{
	return ctl_fix_teardown(state);
}

static void run_ok(struct ctl_fix *f, const char *line, int rc, const char *out)
{
	ctl_run_expect(&f->ctx, &f->rp, line, rc, out);
}

static unsigned sa_port(const struct sockaddr_storage *sa)
{
	return sa->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)sa)->sin6_port)
					 : ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/* How many times `needle` occurs in `s`. */
static int count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* --- the YAML ------------------------------------------------------------ */

static void test_render(void **state)
{
	(void)state;
	struct ulnet_conn_info c[2];
	struct sockaddr_in *l4 = (struct sockaddr_in *)&c[0].local,
			   *r4 = (struct sockaddr_in *)&c[0].remote;
	struct sockaddr_in6 *l6 = (struct sockaddr_in6 *)&c[1].local,
			    *r6 = (struct sockaddr_in6 *)&c[1].remote;
	struct ybuf out;

	memset(c, 0, sizeof(c));
	assert_int_equal(ulnet_nid_parse("192.168.1.2@tcp1", &c[0].peer, NULL), 0);
	assert_int_equal(ulnet_nid_parse("192.168.1.1@tcp1", &c[0].ni, NULL), 0);
	c[0].type = ULNET_CONN_BULK_IN;
	l4->sin_family = r4->sin_family = AF_INET;
	inet_pton(AF_INET, "192.168.1.1", &l4->sin_addr);
	l4->sin_port = htons(1022);
	inet_pton(AF_INET, "192.168.1.2", &r4->sin_addr);
	r4->sin_port = htons(988);
	c[0].tx_buffer_size = 2626560;
	c[0].rx_buffer_size = 1061296;
	c[0].tx_msgs = 1;
	c[0].rx_msgs = 2;
	c[0].tx_bytes = 3;
	c[0].rx_bytes = 4;
	assert_int_equal(ulnet_nid_parse("2001:db8::2@tcp", &c[1].peer, NULL), 0);
	c[1].type = ULNET_CONN_CONTROL;
	c[1].nagle = true;
	l6->sin6_family = r6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &l6->sin6_addr);
	l6->sin6_port = htons(988);
	inet_pton(AF_INET6, "2001:db8::2", &r6->sin6_addr);
	r6->sin6_port = htons(1023);
	ybuf_init(&out);
	ctl_render_conn_show(&out, c, 2);
	assert_string_equal(ybuf_str(&out),
			    "conn:\n"
			    "    - nid: 192.168.1.2@tcp1\n"
			    "      net: tcp1\n"
			    "      type: bulk_in\n"
			    "      local: 192.168.1.1:1022\n"
			    "      remote: 192.168.1.2:988\n"
			    "      cpt: 0\n"
			    "      tx_buffer_size: 2626560\n"
			    "      rx_buffer_size: 1061296\n"
			    "      nagle: 0\n"
			    "      statistics:\n"
			    "          tx_msgs: 1\n"
			    "          rx_msgs: 2\n"
			    "          tx_bytes: 3\n"
			    "          rx_bytes: 4\n"
			    "    - nid: 2001:db8::2@tcp\n"
			    "      net: tcp\n"
			    "      type: control\n"
			    "      local: \"[2001:db8::1]:988\"\n"
			    "      remote: \"[2001:db8::2]:1023\"\n"
			    "      cpt: 0\n"
			    "      tx_buffer_size: 0\n"
			    "      rx_buffer_size: 0\n"
			    "      nagle: 1\n"
			    "      statistics:\n"
			    "          tx_msgs: 0\n"
			    "          rx_msgs: 0\n"
			    "          tx_bytes: 0\n"
			    "          rx_bytes: 0\n");
	/* none: nothing */
	ybuf_reset(&out);
	ctl_render_conn_show(&out, c, 0);
	assert_string_equal(ybuf_str(&out), "");
	ybuf_free(&out);
	assert_string_equal(ctl_conn_type_str(ULNET_CONN_ANY), "any");
	assert_string_equal(ctl_conn_type_str(ULNET_CONN_BULK_OUT), "bulk_out");
	assert_string_equal(ctl_conn_type_str(7), "?");
}

/* --- no connections, errors ---------------------------------------------- */

static void test_empty_and_errors(void **state)
{
	struct ctl_fix *f = *state;

	/* 0@lo alone: no connection, nothing printed */
	run_ok(f, "conn show", 0, "");
	run_ok(f, "conn show --net tcp", 0, "");
	run_ok(f, "conn show --nid 127.0.77.9@tcp", 0, "");
	/* an NI, no peer yet: still nothing */
	run_ok(f, "net add --nid 127.0.77.2@tcp --accept none", 0, "");
	run_ok(f, "conn show", 0, "");
	/* refused as every command's options are (dispatch) */
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "conn show --bogus"), 234);
	ctl_has(&f->rp.err, "unrecognized option '--bogus'", "conn show --bogus");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "conn show extra"), 234);
	ctl_has(&f->rp.err, "unexpected argument 'extra'", "conn show extra");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "conn show --net bad!net"), 234);
	ctl_has(&f->rp.err, "errno: -22", "conn show --net bad!net");
	ctl_has(&f->rp.err, "cannot parse net 'bad!net'", "conn show --net bad!net");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "conn show --nid 1.2.3"), 234);
	ctl_has(&f->rp.err, "cannot parse NID '1.2.3'", "conn show --nid 1.2.3");
	/* the group alone: its help */
	run_ok(f, "conn", 0, NULL);
	ctl_has(&f->rp.out, "conn {show | help}", "conn");
	run_ok(f, "help", 0, NULL);
	ctl_has(&f->rp.out, "conn {show | help}", "help");
	/* LNet down: the netlink error of the other shows */
	run_ok(f, "lnet unconfigure", 0, "");
	assert_int_equal(ctl_run_line(&f->ctx, &f->rp, NULL, 0, "conn show"), 156);
	ctl_has(&f->rp.err, "errno: -100", "conn show (down)");
	ctl_has(&f->rp.err, "LNet stack down", "conn show (down)");
	assert_string_equal(ybuf_str(&f->rp.out), "");
}

/* --- a node pinging itself ------------------------------------------------ */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The connections of peer `nid` (into `c`, room for `max`), once there are
 * `want` of them, or after 10 s whatever there is: the bulk ones are
 * opened one after the other once the ping got its answer. */
static int peer_conns(ulnet_t *ln, const ulnet_nid_t *nid, struct ulnet_conn_info *c, int max)
{
	int n = ulnet_conn_list(ln, c, max), k = 0;

	assert_true(n >= 0 && n <= max);
	for (int i = 0; i < n; i++)
		if (ulnet_nid_same(&c[i].peer, nid))
			c[k++] = c[i];
	return k;
}

static int wait_conns(ulnet_t *ln, const ulnet_nid_t *nid, struct ulnet_conn_info *c, int max,
		      int want)
{
	uint64_t end = now_ms() + 10000;

	while (peer_conns(ln, nid, c, max) < want && now_ms() <= end)
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000L }, NULL);
	/* and no more come: nothing is opened past conns_per_peer */
	nanosleep(&(struct timespec){ .tv_nsec = 200 * 1000000L }, NULL);
	return peer_conns(ln, nid, c, max);
}

/*
 * Ping our own NID with conns_per_peer `cpp` (and `bulk` for a bulk
 * port, 0 none) and check the list: 2 CONTROL (one dialled to
 * accept_port, one accepted on it), `cpp` BULK_IN dialled (to the bulk
 * port) and as many BULK_OUT accepted there; --net and --nid filters.
 */
static void self_ping(struct ctl_fix *f, int cpp, unsigned bulk)
{
	struct ulnet_conn_info c[64];
	ulnet_nid_t self;
	char line[256];
	unsigned pc = port_ctl(), pb = bulk ? bulk : pc;
	int n, want = 2 + 2 * cpp, nctl = 0, nin = 0, nout = 0;
	uint64_t rx = 0, tx = 0;

	if (!ksock_can_bind_privileged()) {
		print_message("skipped: needs privileged source ports (root or CAP_NET_BIND_SERVICE)\n");
		skip();
	}
	assert_int_equal(ulnet_nid_parse(SELF, &self, NULL), 0);
	if (bulk)
		snprintf(line, sizeof(line), "net add --nid " SELF " --accept all --accept-port %u "
			 "--accept-port-bulk %u --conns-per-peer %d", pc, bulk, cpp);
	else
		snprintf(line, sizeof(line), "net add --nid " SELF " --accept all --accept-port %u "
			 "--conns-per-peer %d", pc, cpp);
	run_ok(f, line, 0, "");
	run_ok(f, "ping " SELF, 0, NULL);
	ctl_has(&f->rp.out, "primary nid: " SELF, "ping " SELF);

	n = wait_conns(f->ctx.ln, &self, c, 64, want);
	assert_int_equal(n, want);
	for (int i = 0; i < n; i++) {
		const struct ulnet_conn_info *ci = &c[i];

		assert_true(ulnet_nid_same(&ci->ni, &self));
		assert_int_equal(ci->cpt, 0);
		assert_true(ci->tx_buffer_size > 0 && ci->rx_buffer_size > 0);
		assert_false(ci->nagle);
		assert_int_equal(ci->proto_version, 3);
		rx += ci->rx_msgs;
		tx += ci->tx_msgs;
		switch (ci->type) {
		case ULNET_CONN_CONTROL:
			nctl++;
			/* ours dialled accept_port; the other is its accepted end */
			if (ci->active)
				assert_int_equal(sa_port(&ci->remote), pc);
			else
				assert_int_equal(sa_port(&ci->local), pc);
			break;
		case ULNET_CONN_BULK_IN:
			/* we dial BULK_IN (the first type after CONTROL) ... */
			nin++;
			assert_true(ci->active);
			assert_int_equal(sa_port(&ci->remote), pb);
			assert_true(sa_port(&ci->local) <= 1023);
			break;
		case ULNET_CONN_BULK_OUT:
			/* ... and accept it as our BULK_OUT, on the bulk port */
			nout++;
			assert_false(ci->active);
			assert_int_equal(sa_port(&ci->local), pb);
			break;
		default:
			fail_msg("connection %d of type %d", i, (int)ci->type);
		}
	}
	assert_int_equal(nctl, 2);
	assert_int_equal(nin, cpp);
	assert_int_equal(nout, cpp);
	/* the ping (GET, REPLY) went both ways on our own connections */
	assert_true(rx >= 2 && tx >= 2);

	/* conn show: the same, as YAML, and the filters */
	run_ok(f, "conn show", 0, NULL);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "    - nid: " SELF "\n"), want);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "      type: control\n"), 2);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "      type: bulk_in\n"), cpp);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "      type: bulk_out\n"), cpp);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "      net: tcp\n"), want);
	snprintf(line, sizeof(line), "      remote: 127.0.77.1:%u\n", pb);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), line), bulk ? cpp : cpp + 1);
	run_ok(f, "conn show --nid " SELF, 0, NULL);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "    - nid: " SELF "\n"), want);
	run_ok(f, "conn show --net tcp", 0, NULL);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "    - nid: "), want);
	run_ok(f, "conn show --net tcp --nid " SELF, 0, NULL);
	assert_int_equal(count_of(ybuf_str(&f->rp.out), "    - nid: "), want);
	run_ok(f, "conn show --net tcp1", 0, "");
	run_ok(f, "conn show --nid 127.0.77.9@tcp", 0, "");
	run_ok(f, "conn show --net tcp --nid 127.0.77.9@tcp", 0, "");
}

static void test_self_cpp1(void **state)
{
	self_ping(*state, 1, 0);
}

static void test_self_cpp3(void **state)
{
	self_ping(*state, 3, 0);
}

static void test_self_bulk_port(void **state)
{
	self_ping(*state, 2, port_bulk());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render),
		cmocka_unit_test_setup_teardown(test_empty_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_cpp1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_cpp3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_bulk_port, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
