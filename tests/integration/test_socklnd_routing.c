/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_routing.c - routing over real TCP on loopback (addresses
 * 127.0.8.x, which no other test uses, so tests running at once never
 * share an address and port): A
 * (127.0.8.2@tcp) reaches B (127.0.8.5@tcp1) through the router R
 * (127.0.8.3@tcp and 127.0.8.4@tcp1), each node with its own progress
 * thread (R forwards at once: no start-up phase, whose RTE_DISABLED would
 * take the routes down at the first router check, a second in):
 *  - a routed ping of A from B, a routed ping and a discovery of B from A
 *    (through R, both ways);
 *  - 64 PUTs of 1 MiB at once, with ACKs, through a router with 4 large
 *    buffers: the connection from A pauses while a message waits for a
 *    buffer (socklnd's delayed receive), and resumes when recv() comes from
 *    another thread; every PUT arrives intact, every ACK returns;
 *  - GETs of 1 MiB through R (the REPLY forwarded back).
 * All of it twice: R's NIs on the node's one progress thread, then each on
 * a thread of its own (socklnd nscheds 1, ni_thread.c: named ulnet-tcp and
 * ulnet-tcp1, gone once the NI is), R's tcp1 NI then on the same address
 * and port as its tcp NI (127.0.8.6), so that B's connections come in on
 * the tcp NI's listener and are handed over to the tcp1 NI's thread.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "socklnd_util.h"
#include "ulnet/routing.h"

#define NPUT 64
#define SZ (1u << 20)

static int add_ni(struct st_node *n, const char *nid, uint16_t port, int nscheds)
{
	struct ulnet_ni_conf c = { 0 };
	int rc = ulnet_nid_parse(nid, &c.nid, NULL);

	if (rc)
		return rc;
	c.sock.nscheds = nscheds;
	c.accept_port = port;
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "all");
	return ulnet_ni_add(n->ln, &c);
}

static int route(struct st_node *n, const char *net, const char *gw)
{
	struct ulnet_route_conf rc = { .hops = ULNET_ROUTE_HOPS_UNSET };

	if (ulnet_net_parse(net, &rc.net, NULL) || ulnet_nid_parse(gw, &rc.gateway, NULL))
		return -EINVAL;
	return ulnet_route_add(n->ln, &rc);
}

static void dump(struct st_node *n, const char *name)
{
	pthread_mutex_lock(&n->mu);
	fprintf(stderr, "---- %s log tail ----\n%s\n", name,
		n->log ? n->log + (n->loglen > 6000 ? n->loglen - 6000 : 0) : "");
	pthread_mutex_unlock(&n->mu);
}

static void own_thread(struct ulnet_ni_conf *c)
{
	c->sock.nscheds = 1;
}

/* How many of this process's threads have the name `name`. */
static int threads_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		n += strcmp(comm, name) == 0;
	}
	closedir(d);
	return n;
}

struct variant {
	const char *a, *r_tcp, *r_tcp1, *b;
	bool threads;   /* R's NIs each on a thread of its own */
};

static void routed_traffic(const struct variant *v)
{
	struct st_node a, r, b;
	uint16_t port = st_port();
	uint8_t *src = malloc((size_t)NPUT * SZ), *dst = calloc(NPUT, SZ), *got = calloc(1, SZ);
	struct st_md am[NPUT], bm, gm;
	struct ulnet_ping_peer pp;
	struct ulnet_routing_info info;
	struct ulnet_counters c;
	ulnet_process_id_t ta, tb;
	int line = 0;

	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(got);
	if (!st_is_privileged()) {
		/* without privileged ports the nodes are user-space peers, and
		 * a receiver takes a user-space peer's connection NID as the
		 * source of what it sends (the kernel's rule): a routed header
		 * cannot survive that */
		fprintf(stderr, "test_socklnd_routing: skipped: needs root (privileged ports): "
				"routing between user-space peers cannot keep end-to-end NIDs\n");
		free(src);
		free(dst);
		free(got);
		skip();
	}
	st_md_init(&bm);
	st_md_init(&gm);
	for (int i = 0; i < NPUT; i++)
		st_md_init(&am[i]);
	if (st_node_start(&a, v->a, port, "all") ||
	    st_node_start_conf(&r, v->r_tcp, port, "all", NULL, NULL, 0, v->threads ? own_thread : NULL) ||
	    add_ni(&r, v->r_tcp1, port, v->threads) || st_node_start(&b, v->b, port, "all")) {
		line = __LINE__;
		goto out;
	}
	if (threads_named("ulnet-tcp") != (v->threads ? 1 : 0) ||
	    threads_named("ulnet-tcp1") != (v->threads ? 1 : 0)) {
		line = __LINE__;
		goto out;
	}
	if (route(&a, "tcp1", v->r_tcp) || route(&b, "tcp", v->r_tcp1) ||
	    ulnet_routing_buffers_set(r.ln, ULNET_RTR_POOL_LARGE, 4) ||
	    ulnet_routing_enable_now(r.ln)) {
		line = __LINE__;
		goto out;
	}
	tb.nid = b.nid;
	tb.pid = ULNET_PID_LUSTRE;
	/* B pings A first: B dials R's tcp1 NI (with threads, that
	 * connection comes in on the tcp NI's listener and is handed over) */
	ta.nid = a.nid;
	ta.pid = ULNET_PID_LUSTRE;
	if (ulnet_ping(b.ln, ta, NULL, 0, 5000, &pp) != 0 || pp.nnids < 1 ||
	    !ulnet_nid_same(&pp.nids[0], &a.nid)) {
		line = __LINE__;
		goto out;
	}
	/* a routed ping: B's ping info comes back through R */
	if (ulnet_ping(a.ln, tb, NULL, 0, 5000, &pp) != 0 || pp.nnids < 1 ||
	    !ulnet_nid_same(&pp.nids[0], &b.nid)) {
		line = __LINE__;
		goto out;
	}
	/* discovery of B through R: B's push comes back to A the same way */
	if (ulnet_discover(a.ln, &b.nid, true, 5000, &pp) != 0) {
		line = __LINE__;
		goto out;
	}

	st_fill(src, (size_t)NPUT * SZ, 77);
	if (st_target(&b, 40, 7, dst, (size_t)NPUT * SZ, &bm)) {
		line = __LINE__;
		goto out;
	}
	for (int i = 0; i < NPUT; i++) {
		if (st_bind(&a, src + (size_t)i * SZ, SZ, 2, &am[i]) ||
		    ulnet_put(a.ln, NULL, am[i].h, ULNET_ACK_REQ, tb, 40, 7, (unsigned)i * SZ, 0)) {
			line = __LINE__;
			goto out;
		}
	}
	if (!st_md_wait(&bm, ULNET_EVENT_PUT, NPUT)) {
		line = __LINE__;
		goto out;
	}
	for (int i = 0; i < NPUT; i++) {
		if (!st_md_wait(&am[i], ULNET_EVENT_ACK, 1) || am[i].nerr) {
			line = __LINE__;
			goto out;
		}
		am[i].h = ULNET_HANDLE_NONE;   /* unlinked by its ACK */
	}
	if (memcmp(src, dst, (size_t)NPUT * SZ) != 0) {
		line = __LINE__;
		goto out;
	}
	/* a GET through R: the REPLY carries B's bytes back */
	if (st_bind(&a, got, SZ, 2, &gm) ||
	    ulnet_get(a.ln, NULL, gm.h, tb, 40, 7, 3 * SZ) ||
	    !st_md_wait(&gm, ULNET_EVENT_REPLY, 1) || gm.nerr || memcmp(got, src + 3 * SZ, SZ)) {
		line = __LINE__;
		goto out;
	}
	gm.h = ULNET_HANDLE_NONE;
	/* R: 4 large buffers, waited for, all back (the last one when A's
	 * ZC-ACK of the REPLY reaches R, after A's REPLY event); the traffic
	 * counted as routed */
	for (uint64_t end = st_now_ms() + ST_WAIT_MS; st_now_ms() < end;) {
		if (ulnet_routing_info(r.ln, &info) == 0 &&
		    info.pool[ULNET_RTR_POOL_LARGE].credits == info.pool[ULNET_RTR_POOL_LARGE].nbuffers)
			break;
		usleep(1000);
	}
	if (ulnet_routing_info(r.ln, &info) || info.pool[ULNET_RTR_POOL_LARGE].nbuffers != 4 ||
	    info.pool[ULNET_RTR_POOL_LARGE].credits != 4 ||
	    info.pool[ULNET_RTR_POOL_LARGE].mincredits >= 0) {
		fprintf(stderr, "large pool: %d buffers, %d credits, min %d\n",
			info.pool[ULNET_RTR_POOL_LARGE].nbuffers, info.pool[ULNET_RTR_POOL_LARGE].credits,
			info.pool[ULNET_RTR_POOL_LARGE].mincredits);
		line = __LINE__;
		goto out;
	}
	ulnet_counters_get(r.ln, &c);
	if (c.route_count < 2 * NPUT + 2 || c.route_length < (uint64_t)NPUT * SZ + SZ) {
		line = __LINE__;
		goto out;
	}
	if (v->threads) {
		/* B's connections came in on the tcp NI's listener (the same
		 * address and port) and went to the tcp1 NI's thread */
		pthread_mutex_lock(&r.mu);
		bool handed = r.log && strstr(r.log, "for 127.0.8.6@tcp1");
		pthread_mutex_unlock(&r.mu);
		ulnet_nid_t n1;

		if (!handed || ulnet_nid_parse(v->r_tcp1, &n1, NULL) || ulnet_ni_del(r.ln, &n1) ||
		    threads_named("ulnet-tcp1") != 0 || threads_named("ulnet-tcp") != 1) {
			line = __LINE__;
			goto out;
		}
	}
out:
	if (line) {
		fprintf(stderr, "failed at line %d\n", line);
		dump(&a, "A");
		dump(&r, "R");
		dump(&b, "B");
	}
	for (int i = 0; i < NPUT; i++)
		st_md_release(&a, &am[i]);
	st_md_release(&a, &gm);
	st_md_release(&b, &bm);
	st_node_stop(&a);
	st_node_stop(&r);
	st_node_stop(&b);
	for (int i = 0; i < NPUT; i++)
		st_md_fini(&am[i]);
	st_md_fini(&bm);
	st_md_fini(&gm);
	free(src);
	free(dst);
	free(got);
	assert_int_equal(line, 0);
}

static void test_routed_traffic(void **state)
{
	static const struct variant v = { "127.0.8.2@tcp", "127.0.8.3@tcp", "127.0.8.4@tcp1",
					  "127.0.8.5@tcp1", false };

	(void)state;
	routed_traffic(&v);
}

static void test_routed_traffic_ni_threads(void **state)
{
	static const struct variant v = { "127.0.8.7@tcp", "127.0.8.6@tcp", "127.0.8.6@tcp1",
					  "127.0.8.8@tcp1", true };

	(void)state;
	routed_traffic(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routed_traffic),
		cmocka_unit_test(test_routed_traffic_ni_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
