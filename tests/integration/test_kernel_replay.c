/* SPDX-License-Identifier: MIT */
/*
 * test_kernel_replay.c - ulnet against real kernel LNet 2.17 exchanges.
 *
 * Each test loads one capture of two kernel nodes (192.168.77.11@tcp and
 * .12@tcp), starts a ulnet node that plays one of them and a scripted
 * kernel peer (tests/support/kpeer.c) that plays the other, over TCP on
 * 127.0.1.x. kpeer sends the kernel's captured messages (NIDs mapped) and
 * compares every message ulnet sends, field by field, with the captured one.
 * routed-ping.br0 is the hop between .11 and the router .12: ulnet is .11,
 * kpeer the router, and the far NID 192.168.77.141@tcp1 stays as captured.
 * The router tests take both hops of a routed capture pair (br0: .11 <->
 * .12@tcp, br1: 192.168.77.140@tcp1 <-> .141@tcp1): ulnet is the router
 * with an NI on each net, and two kpeers play .11 and .13 at once; there
 * the far ends' NIDs are mapped too, as ulnet must reach them.
 *
 * As root (CI) both sides use privileged source ports and ulnet's acceptor
 * runs with accept=secure, as the kernel. Without CAP_NET_BIND_SERVICE (or
 * with ULNET_REPLAY_UNPRIV=1, which drops it) ulnet is a user-space peer:
 * its PID on the wire is 12345 | 0x80000000 (its ping info keeps 12345,
 * docs/interop.md) and it dials CONTROL alone: kpeer expects both
 * (kpeer.c, userspace_control_only()). CTest runs this mode too
 * (integration/test_kernel_replay_unpriv). The one exception: the router's
 * routed-ping test skips there, saying why (forwarding between user-space
 * peers cannot keep a header's source: docs/routing.md).
 *
 * Every test drives ulnet's real paths: its ping target and push target on
 * portal 0 (passive tests), ulnet_ping() and ulnet_discover() (active
 * tests), its forwarding and routing state machine (router tests). Nothing
 * is stood in for and no message is skipped: a difference from
 * the capture, or an error from ulnet, fails the test with a message naming
 * the message and field (or the errno), and the next test still runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "kpeer.h"
#include "ulnet/routing.h"
#include "ulnet/selftest.h"
#include "socklnd_util.h"
#include "test_util.h"

#define IP_G1 0xc0a84d0bu          /* 192.168.77.11 */
#define IP_G2 0xc0a84d0cu          /* 192.168.77.12 */
#define IP_G13_TCP1 0xc0a84d8du    /* 192.168.77.141, on tcp1 behind the router */
#define IP_G12_TCP1 0xc0a84d8cu    /* 192.168.77.140: the router's NI on tcp1 */
#define IP_G1_REFUSED 0xc0a84d01u  /* 192.168.77.1: no listener */
#define LIVE_BASE 0x7f000100u      /* 127.0.1.0 */
#define OP_TIMEOUT_MS 10000

static bool g_priv;            /* privileged source ports available */
static uint16_t g_port;
static void (*g_after)(void *arg);   /* passive_replay: checks before the node stops */
static void *g_after_arg;
static bool g_srpc;            /* passive_replay: kpeer compares SRPC replies */
static ulnet_selftest_t *g_agent;

/* The test's ulnet node and kpeers live outside any stack frame: a failed
 * check leaves the test by longjmp, and teardown() then stops the node
 * (whose threads still run and log into it) and closes the kpeers. */
static struct st_node g_node;
static struct kpeer g_kp[2];

/* Test k uses 127.0.1.(2k+1) for .11 and 127.0.1.(2k+2) for .12. */
static uint32_t live_ip(unsigned k, uint32_t cap_ip)
{
	return LIVE_BASE + 2 * k + (cap_ip == IP_G1 ? 1 : 2);
}

static void ipstr(uint32_t ip, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u@tcp", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

static void pcap_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/pcaps/%s.pcap", tu_shared_dir(), name);
}

/* The test's ulnet node (g_node) on `ip`; `skew` (may be NULL) moves its
 * clock. */
static struct st_node *node_start(uint32_t ip, uint64_t *skew)
{
	char nid[64];
	int rc;

	assert_null(g_node.log);   /* one node per test */
	ipstr(ip, nid, sizeof(nid));
	rc = st_node_start_clock(&g_node, nid, g_port, g_priv ? "secure" : "all", skew);
	if (rc)
		fail_msg("ulnet node %s: %s", nid, ulnet_strerror(rc));
	return &g_node;
}

static void kpeer_conf_init(struct kpeer_conf *c, const char *pcap, unsigned k, uint32_t cap_kpeer,
			    uint32_t cap_ulnet)
{
	static char path[8][512];
	static unsigned next;
	char *p = path[next++ % 8];

	memset(c, 0, sizeof(*c));
	pcap_path(pcap, p, 512);
	c->pcap = p;
	c->cap_kpeer_ip = cap_kpeer;
	c->cap_ulnet_ip = cap_ulnet;
	c->kpeer_ip = live_ip(k, cap_kpeer);
	c->ulnet_ip = live_ip(k, cap_ulnet);
	c->port = g_port;
	c->kpeer_privileged = g_priv;
	c->ulnet_userspace = !g_priv;
}

static void kp_load(struct kpeer *kp, const struct kpeer_conf *c)
{
	if (kpeer_load(kp, c))
		fail_msg("%s: %s", c->pcap, kpeer_error(kp));
}

static void report(struct kpeer *kp, const char *what, int rc)
{
	if (kpeer_notes(kp)[0])
		print_message("[   NOTE   ] %s: %s", what, kpeer_notes(kp));
	if (rc) {
		print_error("%s: %s\n", what, kpeer_error(kp));
		fail_msg("%s: ulnet differs from the kernel (see above)", what);
	}
	print_message("[  REPLAY  ] %s: %u messages from ulnet matched the capture\n", what,
		      kp->received);
}

static ulnet_process_id_t kpeer_id(const struct kpeer *kp)
{
	ulnet_process_id_t id = { .nid = kpeer_tcp_nid(kp->conf.kpeer_ip), .pid = ULNET_PID_LUSTRE };

	return id;
}

/* What ulnet_ping/ulnet_discover returned about the peer kpeer plays: the
 * NIDs of the captured ping info (mapped), UP. */
static void check_ping_peer(const struct kpeer *kp, const char *what,
			    const struct ulnet_ping_peer *out)
{
	ulnet_nid_t want = kpeer_tcp_nid(kp->conf.kpeer_ip);
	char a[ULNET_NIDSTR_SIZE], b[ULNET_NIDSTR_SIZE];

	if (out->nnids != 1)
		fail_msg("%s: ping result: %d NIDs, the peer listed 1", what, out->nnids);
	if (!ulnet_nid_same(&out->nids[0], &want))
		fail_msg("%s: ping result: NID %s != %s", what, ulnet_nid_str(&out->nids[0], a),
			 ulnet_nid_str(&want, b));
	if (out->status[0] != LNET_NI_STATUS_UP)
		fail_msg("%s: ping result: status 0x%x != UP", what, out->status[0]);
	if (out->features != 0x1e)
		fail_msg("%s: ping result: features 0x%x != 0x1e", what, out->features);
}

/* ---------------------------------------------------------------------- */
/* ulnet passive: kpeer (the connector of the capture) dials ulnet          */

/* Play `pcap` with kpeer as .11 (the capture's connector) against ulnet as
 * .12. */
static void passive_replay(const char *pcap, unsigned k, const char *what,
			   void (*before)(struct st_node *n, void *arg), void *arg,
			   unsigned (*limit)(struct kpeer *kp))
{
	struct st_node *n;
	struct kpeer *kp = &g_kp[0];
	struct kpeer_conf c;
	int rc;

	kpeer_conf_init(&c, pcap, k, IP_G1, IP_G2);
	n = node_start(c.ulnet_ip, NULL);
	if (before)
		before(n, arg);
	kp_load(kp, &c);
	kp->conf.srpc = g_srpc;
	if (limit)
		kp->conf.limit = limit(kp);
	rc = kpeer_start(kp);
	if (!rc)
		rc = kpeer_run(kp);
	report(kp, what, rc);
	if (g_after)
		g_after(g_after_arg);
	kpeer_close(kp);
	st_node_stop(n);
}

/* ---------------------------------------------------------------------- */
/* ulnet active: ulnet dials kpeer (the capture's listener)                 */

enum active_op { OP_PING, OP_DISCOVER };

static void active_replay(const char *pcap, unsigned k, const char *what, enum active_op op)
{
	struct st_node *n;
	struct kpeer *kp = &g_kp[0];
	struct kpeer_conf c;
	struct ulnet_ping_peer out;
	int rc, krc;

	kpeer_conf_init(&c, pcap, k, IP_G2, IP_G1);
	n = node_start(c.ulnet_ip, NULL);
	kp_load(kp, &c);
	memset(&out, 0, sizeof(out));
	if (kpeer_start(kp) || kpeer_run_async(kp))
		report(kp, what, -1);
	if (op == OP_PING)
		rc = ulnet_ping(n->ln, kpeer_id(kp), NULL, 0, OP_TIMEOUT_MS, &out);
	else {
		ulnet_process_id_t id = kpeer_id(kp);

		rc = ulnet_discover(n->ln, &id.nid, true, OP_TIMEOUT_MS, &out);
	}
	krc = kpeer_join(kp);
	report(kp, what, krc);
	if (rc)
		fail_msg("%s: %s returned %d (%s)", what,
			 op == OP_PING ? "ulnet_ping" : "ulnet_discover", rc, ulnet_strerror(rc));
	check_ping_peer(kp, what, &out);
	kpeer_close(kp);
	st_node_stop(n);
}

/* ---------------------------------------------------------------------- */
/* the tests                                                                */

static void test_ping_ulnet_passive(void **state)
{
	(void)state;
	passive_replay("ping", 0, "ping.pcap, ulnet passive (.12)", NULL, NULL, NULL);
}

static void test_ping_ulnet_active(void **state)
{
	(void)state;
	active_replay("ping", 1, "ping.pcap, ulnet active (.11)", OP_PING);
}

static void test_discover_ulnet_passive(void **state)
{
	(void)state;
	passive_replay("discover", 2, "discover.pcap, ulnet passive (.12)", NULL, NULL, NULL);
}

static void test_discover_ulnet_active(void **state)
{
	(void)state;
	active_replay("discover", 3, "discover.pcap, ulnet active (.11)", OP_DISCOVER);
}

static void test_discover_fresh_ulnet_passive(void **state)
{
	(void)state;
	passive_replay("discover-fresh", 4, "discover-fresh.pcap, ulnet passive (.12)", NULL, NULL,
		       NULL);
}

static void test_discover_fresh_ulnet_active(void **state)
{
	(void)state;
	active_replay("discover-fresh", 5, "discover-fresh.pcap, ulnet active (.11)", OP_DISCOVER);
}

/* first-contact-lst: up to (not including) the lst server's reply on
 * portal 52, which is selftest's business, not LNet's. */
static bool is_ulnet_put52(const struct kpeer_msg *m, void *arg)
{
	(void)arg;
	return !m->from_kpeer && m->kind == KP_LNET && m->hdr.type == ULNET_MSG_PUT &&
	       m->hdr.msg.put.ptl_index == 52;
}

static unsigned lst_limit(struct kpeer *kp)
{
	int i = kpeer_find(kp, 0, is_ulnet_put52, NULL);

	return i < 0 ? kp->nmsgs : (unsigned)i;
}

struct lst_target {
	struct st_md md;
	uint8_t buf[4096];
};

static void lst_before(struct st_node *n, void *arg)
{
	struct lst_target *t = arg;
	struct ulnet_md md = { 0 };
	ulnet_handle_t me;

	st_md_init(&t->md);
	assert_int_equal(ulnet_me_attach(n->ln, 51, st_any_id(), 0, ~0ULL, ULNET_RETAIN,
					 ULNET_INS_AFTER, &me), 0);
	md.start = t->buf;
	md.length = sizeof(t->buf);
	md.threshold = ULNET_MD_THRESH_INF;
	md.options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE;
	md.user_ptr = &t->md;
	md.handler = st_md_handler;
	assert_int_equal(ulnet_md_attach(n->ln, me, &md, ULNET_RETAIN, &t->md.h), 0);
}

static void lst_after(void *arg);

static void test_first_contact_lst(void **state)
{
	static struct lst_target t;
	const char *what = "first-contact-lst.pcap, ulnet passive (.12)";

	(void)state;
	memset(&t, 0, sizeof(t));
	g_after = lst_after;
	g_after_arg = &t;
	passive_replay("first-contact-lst", 6, what, lst_before, &t, lst_limit);
	g_after = NULL;
	st_md_fini(&t.md);
}

/* Checked before passive_replay() stops the node. */
static void lst_after(void *arg)
{
	struct lst_target *t = arg;
	int nput;
	uint32_t mlen;

	/* the node's thread may still be in the handler */
	pthread_mutex_lock(&t->md.mu);
	nput = t->md.n[ULNET_EVENT_PUT];
	mlen = t->md.last_mlength;
	pthread_mutex_unlock(&t->md.mu);
	if (nput != 1)
		fail_msg("the kernel's PUT to portal 51 was not delivered (%d PUT events)", nput);
	if (mlen != 160)
		fail_msg("PUT to portal 51: mlength %u != 160", mlen);
	print_message("[  REPLAY  ] the kernel's lst PUT (ptl 51, 160 bytes) was delivered\n");
}

/* The lst captures played to their end with the selftest agent running on
 * ulnet (.12): every SRPC reply, the brw bulk GETs and PUTs, compared with
 * the kernel server's (kpeer_conf.srpc says what is not compared). */
struct lst_agent {
	unsigned rpcs;          /* requests in the capture */
	unsigned brw, ping;
	bool mid_session;       /* the capture starts after .12 discovered .11 */
};

static void agent_before(struct st_node *n, void *arg)
{
	const struct lst_agent *want = arg;
	int rc;

	if (want->mid_session) {
		/* the kernel node had discovered its peer before the capture
		 * began: ulnet must not start a discovery the capture lacks */
		struct ulnet_globals g;

		ulnet_globals_get(n->ln, &g);
		g.discovery = 0;
		assert_int_equal(ulnet_globals_set(n->ln, &g), 0);
	}
	rc = ulnet_selftest_start(n->ln, NULL, &g_agent);
	if (rc)
		fail_msg("ulnet_selftest_start: %s", ulnet_strerror(rc));
}

static void agent_after(void *arg)
{
	const struct lst_agent *want = arg;
	struct ulnet_selftest_stats s;

	assert_int_equal(ulnet_selftest_stats_get(g_agent, &s), 0);
	ulnet_selftest_stop(g_agent);
	g_agent = NULL;
	if (s.rpcs_rcvd != want->rpcs || s.rpcs_dropped || s.brw_reqs != want->brw ||
	    s.ping_reqs != want->ping || s.brw_check_errors || s.session_active)
		fail_msg("selftest agent: %u RPCs (%u dropped), brw %u, ping %u, check errors %u, "
			 "session %d; the capture has %u RPCs, brw %u, ping %u, the session removed",
			 s.rpcs_rcvd, s.rpcs_dropped, s.brw_reqs, s.ping_reqs, s.brw_check_errors,
			 s.session_active, want->rpcs, want->brw, want->ping);
	print_message("[  REPLAY  ] selftest agent served %u RPCs (brw %u, ping %u) as the kernel did\n",
		      s.rpcs_rcvd, s.brw_reqs, s.ping_reqs);
}

static void agent_replay(const char *pcap, unsigned k, const char *what, struct lst_agent *want)
{
	g_after = agent_after;
	g_after_arg = want;
	g_srpc = true;
	passive_replay(pcap, k, what, agent_before, want, NULL);
	g_after = NULL;
	g_srpc = false;
}

static void test_first_contact_lst_agent(void **state)
{
	/* make session, add a ping server test, 2 pings, remove session */
	static struct lst_agent want = { .rpcs = 5, .brw = 0, .ping = 2 };

	(void)state;
	agent_replay("first-contact-lst", 16, "first-contact-lst.pcap to its end, selftest agent on .12",
		     &want);
}

static void test_lst_agent(void **state)
{
	/* make session, 3 test adds, 5 pings, 6 brw (3 write 64k full, 3 read
	 * 4k simple), 3 stats, remove session */
	static struct lst_agent want = { .rpcs = 19, .brw = 6, .ping = 5, .mid_session = true };

	(void)state;
	agent_replay("lst", 17, "lst.pcap, selftest agent on .12", &want);
}

/* idle-keepalive: ulnet plays .12, which sent the NOOPs; each NOOP is
 * awaited after ulnet's clock moved 35 s (keepalive=30). */
struct idle {
	uint64_t skew;
	unsigned noops;
};

static void idle_on_wait(void *arg, const struct kpeer_msg *m)
{
	struct idle *w = arg;

	if (m->kind == KP_NOOP) {
		w->noops++;
		__atomic_add_fetch(&w->skew, 35ULL * 1000000000ULL, __ATOMIC_RELEASE);
	}
}

static void test_idle_keepalive(void **state)
{
	static struct idle w;
	const char *what = "idle-keepalive.pcap, ulnet passive (.12)";
	static uint8_t buf[256];
	static struct st_md md;   /* the node may outlive this frame (teardown) */
	struct st_node *n;
	struct kpeer *kp = &g_kp[0];
	struct kpeer_conf c;
	struct lnet_hdr h;
	int rc;

	(void)state;
	memset(&w, 0, sizeof(w));
	kpeer_conf_init(&c, "idle-keepalive", 7, IP_G1, IP_G2);
	c.on_wait = idle_on_wait;
	c.arg = &w;
	c.timeout_ms = 8000;
	n = node_start(c.ulnet_ip, &w.skew);
	kp_load(kp, &c);
	rc = kpeer_start(kp);
	if (!rc)
		rc = kpeer_run(kp);
	report(kp, what, rc);
	assert_int_equal(w.noops, 3);

	/* Receive side: the kernel's keepalive (on the connection it holds as
	 * BULK_IN) is taken silently and the connection stays up. */
	assert_int_equal(kpeer_send_noop(kp, SOCKLND_CONN_BULK_IN, 0, KSOCK_KEEPALIVE_COOKIE), 0);
	if (kpeer_expect_quiet(kp, 500))
		fail_msg("after the kernel's keepalive: %s", kpeer_error(kp));
	st_md_init(&md);
	assert_int_equal(st_target(n, 14, 7, buf, sizeof(buf), &md), 0);
	memset(&h, 0, sizeof(h));
	h.dest_nid = kpeer_tcp_nid(c.ulnet_ip);
	h.src_nid = kpeer_tcp_nid(c.kpeer_ip);
	h.dest_pid = ULNET_PID_LUSTRE | (g_priv ? 0 : ULNET_PID_USERFLAG);
	h.src_pid = ULNET_PID_LUSTRE;
	h.type = ULNET_MSG_PUT;
	h.payload_length = 100;
	h.msg.put.ack_wmd = LNET_WIRE_HANDLE_NONE;
	h.msg.put.match_bits = 7;
	h.msg.put.ptl_index = 14;
	memset(buf + 128, 0x5a, 100);
	assert_int_equal(kpeer_send_lnet(kp, SOCKLND_CONN_CONTROL, &h, buf + 128), 0);
	if (!st_md_wait(&md, ULNET_EVENT_PUT, 1))
		fail_msg("a PUT after the keepalive was not delivered");
	st_md_release(n, &md);
	kpeer_close(kp);
	st_node_stop(n);
	st_md_fini(&md);
	print_message("[  REPLAY  ] %s: keepalive [0,1] ignored, connection still carries a PUT\n",
		      what);
}

/* Lines of the node's log containing `needle`. */
static unsigned log_count(struct st_node *n, const char *needle)
{
	unsigned c = 0;

	pthread_mutex_lock(&n->mu);
	for (const char *p = n->log; p && (p = strstr(p, needle)); p += strlen(needle))
		c++;
	pthread_mutex_unlock(&n->mu);
	return c;
}

/* ksocklnd's minimum reconnect interval (docs/socklnd.md: reconnect 1-60 s). */
#define RECONNECT_MIN_MS 1000
#define DIAL_FAILED "connect failed: Connection refused"

/*
 * errors-refused: the capture shows SYN -> RST and lnetctl ping -111; the
 * kernel's later pings of that address fail with -EIO at once, without a
 * new SYN (reconnect back-off and peer health, reference/kernel-wire-notes).
 * ulnet differs there, as documented (docs/interop.md): its health does not
 * steer sends and its LND queues the message through the back-off, so the
 * second ulnet_ping() redials once the 1 s back-off has passed (one new
 * SYN) and fails with -ECONNREFUSED again.
 */
static void test_errors_refused(void **state)
{
	const char *what = "errors-refused.pcap, ulnet active (.11)";
	struct pcap_capture cap;
	char path[512];
	struct st_node *n;
	ulnet_process_id_t target;
	struct ulnet_ping_peer out;
	uint64_t t0, t1, t2;
	int rc;

	(void)state;
	pcap_path("errors-refused", path, sizeof(path));
	assert_int_equal(pcap_load(path, &cap), 0);
	assert_true(cap.nconns >= 1);
	assert_true(cap.conns[0].rst);
	assert_int_equal(cap.conns[0].addr[1], IP_G1_REFUSED);
	assert_int_equal(cap.conns[0].dir[0].len + cap.conns[0].dir[1].len, 0);
	pcap_free(&cap);

	n = node_start(live_ip(8, IP_G1), NULL);
	target.nid = kpeer_tcp_nid(live_ip(8, IP_G2) + 100);  /* 127.0.1.118: no listener */
	target.pid = ULNET_PID_LUSTRE;

	/* first ping: SYN -> RST, -ECONNREFUSED as lnetctl's -111 */
	t0 = st_now_ms();
	rc = ulnet_ping(n->ln, target, NULL, 0, OP_TIMEOUT_MS, &out);
	t1 = st_now_ms();
	if (rc != -ECONNREFUSED)
		fail_msg("%s: ulnet_ping returned %d (%s), want -ECONNREFUSED (-111)", what, rc,
			 ulnet_strerror(rc));
	if (t1 - t0 > OP_TIMEOUT_MS)
		fail_msg("%s: took %llu ms", what, (unsigned long long)(t1 - t0));
	if (log_count(n, DIAL_FAILED) != 1)
		fail_msg("%s: first ping: %u failed dials logged, want 1", what,
			 log_count(n, DIAL_FAILED));
	print_message("[  REPLAY  ] %s: ulnet_ping -> -ECONNREFUSED in %llu ms\n", what,
		      (unsigned long long)(t1 - t0));

	/* second ping of the same dead address: fails too (kernel: -EIO, no
	 * SYN; ulnet: after the back-off, one redial, -ECONNREFUSED) */
	rc = ulnet_ping(n->ln, target, NULL, 0, OP_TIMEOUT_MS, &out);
	t2 = st_now_ms();
	if (rc == 0)
		fail_msg("%s: a second ulnet_ping of the dead address succeeded", what);
	if (rc != -ECONNREFUSED)
		fail_msg("%s: second ulnet_ping returned %d (%s), want -ECONNREFUSED (-111)", what,
			 rc, ulnet_strerror(rc));
	/* the back-off began after t0; ms readings truncate, hence the -1 */
	if (t2 - t0 < RECONNECT_MIN_MS - 1)
		fail_msg("%s: second ping failed %llu ms after the first began, before the "
			 "%d ms reconnect back-off", what, (unsigned long long)(t2 - t0),
			 RECONNECT_MIN_MS);
	if (t2 - t1 > OP_TIMEOUT_MS)
		fail_msg("%s: second ping took %llu ms", what, (unsigned long long)(t2 - t1));
	if (log_count(n, DIAL_FAILED) != 2)
		fail_msg("%s: after the second ping: %u failed dials logged, want 2 (one redial)",
			 what, log_count(n, DIAL_FAILED));
	print_message("[  REPLAY  ] %s: second ulnet_ping -> -ECONNREFUSED after the back-off, "
		      "%llu ms (one new dial; the kernel: -EIO, no SYN)\n", what,
		      (unsigned long long)(t2 - t1));
	st_node_stop(n);
}

/* ---------------------------------------------------------------------- */
/* routed-ping.br0: ulnet (.11) the client of the kernel router (.12), which
 * forwards to 192.168.77.141@tcp1 (routing-spec.md sections 4 and 6).
 * kpeer plays the router on .12's live address; 192.168.77.141@tcp1 is a
 * remote-net NID and stays as captured (LNet header NIDs are end to end).
 * The capture starts after the router checker's first discovery of the
 * gateway (the transcript's `peer show` lists it discovered): ulnet's
 * checker, which pings the gateway about 1 s after ulnet_route_add(), is
 * set aside by kpeer (a GET to the gateway's own NID on portal 0 with the
 * ping match bits, any sink length but the routed ping's) and left
 * unanswered; everything else is matched against the capture.          */

struct routed_aside {
	ulnet_nid_t gw;            /* the router's live NID */
	uint32_t ping_sink;        /* the routed ping's sink_length (captured) */
};

static bool is_rtrcheck_ping(void *arg, int ctype, const struct lnet_hdr *h)
{
	const struct routed_aside *a = arg;

	return ctype == SOCKLND_CONN_CONTROL && h->type == ULNET_MSG_GET &&
	       h->msg.get.ptl_index == 0 && h->msg.get.match_bits == ULNET_PROTO_PING_MATCHBITS &&
	       h->msg.get.sink_length != a->ping_sink && ulnet_nid_same(&h->dest_nid, &a->gw);
}

static bool is_kpeer_reply(const struct kpeer_msg *m, void *arg)
{
	(void)arg;
	return m->from_kpeer && m->kind == KP_LNET && m->hdr.type == ULNET_MSG_REPLY;
}

static bool is_ulnet_get(const struct kpeer_msg *m, void *arg)
{
	(void)arg;
	return !m->from_kpeer && m->kind == KP_LNET && m->hdr.type == ULNET_MSG_GET;
}

static void test_routed_ping_ulnet_client(void **state)
{
	static struct routed_aside aside;
	const char *what = "routed-ping.br0.pcap, ulnet the client (.11) of the router (.12)";
	struct kpeer *kp = &g_kp[0];
	struct kpeer_conf c;
	struct ulnet_route_conf route = { 0 };
	struct ulnet_ping_peer out;
	ulnet_process_id_t server = { .pid = ULNET_PID_LUSTRE };
	char a[ULNET_NIDSTR_SIZE], b[ULNET_NIDSTR_SIZE];
	struct st_node *n;
	int gi, ri, rc, krc;

	(void)state;
	ulnet_nid_from_ipv4(IP_G13_TCP1, ulnet_mknet(ULNET_LND_TCP, 1), &server.nid);
	kpeer_conf_init(&c, "routed-ping.br0", 18, IP_G2, IP_G1);
	n = node_start(c.ulnet_ip, NULL);
	memset(&aside, 0, sizeof(aside));
	aside.gw = kpeer_tcp_nid(c.kpeer_ip);
	c.aside = is_rtrcheck_ping;
	c.aside_arg = &aside;
	kp_load(kp, &c);
	/* the ping (GET -> REPLY); the capture's lnetctl discover after it
	 * is not played */
	gi = kpeer_find(kp, 0, is_ulnet_get, NULL);
	ri = gi < 0 ? -1 : kpeer_find(kp, (unsigned)gi, is_kpeer_reply, NULL);
	if (gi < 0 || ri < 0)
		fail_msg("%s: no GET -> REPLY in the capture", what);
	if (!ulnet_nid_same(&kp->msgs[gi].hdr.dest_nid, &server.nid))
		fail_msg("%s: the captured GET is for %s", what,
			 ulnet_nid_str(&kp->msgs[gi].hdr.dest_nid, a));
	aside.ping_sink = kp->msgs[gi].hdr.msg.get.sink_length;
	kp->conf.limit = (unsigned)ri + 1;
	if (kpeer_start(kp) || kpeer_run_async(kp))
		report(kp, what, -1);
	route.net = ulnet_mknet(ULNET_LND_TCP, 1);
	route.gateway = aside.gw;
	route.hops = ULNET_ROUTE_HOPS_UNSET;
	rc = ulnet_route_add(n->ln, &route);
	if (rc)
		fail_msg("%s: ulnet_route_add(tcp1 via %s): %s", what, ulnet_nid_str(&aside.gw, a),
			 ulnet_strerror(rc));
	memset(&out, 0, sizeof(out));
	rc = ulnet_ping(n->ln, server, NULL, 0, OP_TIMEOUT_MS, &out);
	krc = kpeer_join(kp);
	report(kp, what, krc);
	if (rc)
		fail_msg("%s: ulnet_ping(%s) returned %d (%s)", what, ulnet_nid_str(&server.nid, a),
			 rc, ulnet_strerror(rc));
	/* the answer is the server's ping info, which the router forwarded */
	if (out.nnids != 1 || !ulnet_nid_same(&out.nids[0], &server.nid))
		fail_msg("%s: ping result: %d NIDs, first %s; want 1, %s", what, out.nnids,
			 out.nnids > 0 ? ulnet_nid_str(&out.nids[0], a) : "-",
			 ulnet_nid_str(&server.nid, b));
	if (out.status[0] != LNET_NI_STATUS_UP || out.features != 0x1e)
		fail_msg("%s: ping result: status 0x%x features 0x%x, want UP, 0x1e", what,
			 out.status[0], out.features);
	/* ulnet's router checker pings the gateway itself (not the server) */
	if (!kp->aside) {
		int ctype;
		struct lnet_hdr h;

		if (kpeer_recv_msg(kp, 5000, &ctype, NULL, &h))
			fail_msg("%s: no router checker ping of %s: %s", what,
				 ulnet_nid_str(&aside.gw, a), kpeer_error(kp));
		if (!is_rtrcheck_ping(&aside, ctype, &h))
			fail_msg("%s: after the ping, ulnet sent %s to %s; want the router "
				 "checker's ping GET to the gateway %s", what,
				 h.type == ULNET_MSG_GET ? "a GET" : "a message",
				 ulnet_nid_str(&h.dest_nid, a), ulnet_nid_str(&aside.gw, b));
	}
	print_message("[  REPLAY  ] %s: routed GET to %s and its REPLY from it matched; router "
		      "checker ping of the gateway seen %s the script\n", what,
		      ulnet_nid_str(&server.nid, a), kp->aside ? "during" : "after");
	kpeer_close(kp);
	st_node_stop(n);
}

/* ---------------------------------------------------------------------- */
/* ulnet the router (.12: 192.168.77.12@tcp and 192.168.77.140@tcp1)
 * between two kpeers, one per hop of a routed capture pair: on br0 kpeer
 * plays .11 (tcp), on br1 .13 (192.168.77.141@tcp1). Both kernel peers
 * dial the router, as in the captures. The four capture addresses map to
 * four live ones, in LNet headers and ping infos on both hops alike
 * (kpeer_conf.map): ulnet must reach each far end through the other
 * hop's kpeer, so the end-to-end NIDs cannot stay as captured here.
 *
 * Forwarding needs privileged ports: a user-space peer's connection NID
 * replaces the source of what it sends (docs/routing.md, "Privileged
 * ports"), so a routed header cannot survive between user-space peers.
 * Unprivileged, the routed-ping router test skips, saying so, as
 * test_socklnd_routing does. router-up forwards nothing (every message is
 * to or from the router) and runs in both modes.                          */

struct rtr_live {
	uint32_t g11, g12, g140, g141;   /* live addresses of the capture's NIDs */
};

/* Router test k uses 127.0.1.(2k+1 .. 2k+4) (two test slots). */
static struct rtr_live rtr_live(unsigned k)
{
	uint32_t b = LIVE_BASE + 2 * k;
	struct rtr_live l = { .g11 = b + 1, .g12 = b + 2, .g141 = b + 3, .g140 = b + 4 };

	return l;
}

static bool rtr_skip_unpriv(const char *what)
{
	if (g_priv)
		return false;
	print_message("[  SKIPPED ] %s: needs privileged ports: without them ulnet and kpeer are "
		      "user-space peers, whose connection NID replaces a message's source (the "
		      "kernel's rule, docs/routing.md), so routed headers cannot keep their "
		      "end-to-end NIDs\n", what);
	return true;
}

/* The router node: g_node on tcp (.12's live address), plus an NI on tcp1
 * (.140's), each with its acceptor on g_port. */
static struct st_node *router_start(const struct rtr_live *l, uint64_t *skew)
{
	struct st_node *n = node_start(l->g12, skew);
	struct ulnet_ni_conf c = { 0 };
	char a[ULNET_NIDSTR_SIZE];
	int rc;

	ulnet_nid_from_ipv4(l->g140, ulnet_mknet(ULNET_LND_TCP, 1), &c.nid);
	c.accept_port = g_port;
	c.tun.tos = -1;
	snprintf(c.accept, sizeof(c.accept), "%s", g_priv ? "secure" : "all");
	rc = ulnet_ni_add(n->ln, &c);
	if (rc)
		fail_msg("router NI %s: %s", ulnet_nid_str(&c.nid, a), ulnet_strerror(rc));
	return n;
}

/* kpeer confs of the two hops: br0 (kpeer .11, ulnet .12) and br1 (kpeer
 * .13 at 192.168.77.141, ulnet .140), each mapping the other hop's NIDs. */
static void rtr_confs(const char *cap, const struct rtr_live *l, struct kpeer_conf *c0,
		      struct kpeer_conf *c1)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.br0", cap);
	kpeer_conf_init(c0, name, 0, IP_G1, IP_G2);
	c0->kpeer_ip = l->g11;
	c0->ulnet_ip = l->g12;
	c0->map[0].cap_ip = IP_G13_TCP1;
	c0->map[0].live_ip = l->g141;
	c0->map[1].cap_ip = IP_G12_TCP1;
	c0->map[1].live_ip = l->g140;
	c0->nmap = 2;
	snprintf(name, sizeof(name), "%s.br1", cap);
	kpeer_conf_init(c1, name, 0, IP_G13_TCP1, IP_G12_TCP1);
	c1->kpeer_ip = l->g141;
	c1->ulnet_ip = l->g140;
	c1->map[0].cap_ip = IP_G1;
	c1->map[0].live_ip = l->g11;
	c1->map[1].cap_ip = IP_G2;
	c1->map[1].live_ip = l->g12;
	c1->nmap = 2;
}

/* Both hops' results: each error is printed (the first difference may be
 * on either hop, and the other hop then only misses a message), then the
 * test fails if either differs. */
static void report_hops(struct kpeer *kp[2], const char *cap, int rc[2])
{
	char what[2][128];

	for (int i = 0; i < 2; i++) {
		snprintf(what[i], sizeof(what[i]), "%s.br%d.pcap, kpeer %s against the router", cap,
			 i, i ? ".13" : ".11");
		if (kpeer_notes(kp[i])[0])
			print_message("[   NOTE   ] %s: %s", what[i], kpeer_notes(kp[i]));
		if (rc[i])
			print_error("%s: %s\n", what[i], kpeer_error(kp[i]));
	}
	if (rc[0] || rc[1])
		fail_msg("%s: ulnet, the router, differs from the kernel (see above)", cap);
	for (int i = 0; i < 2; i++)
		print_message("[  REPLAY  ] %s: %u messages from ulnet matched the capture\n",
			      what[i], kp[i]->received);
}

static bool is_handshake(const struct kpeer_msg *m, void *arg)
{
	(void)arg;
	return m->kind == KP_CONNREQ || m->kind == KP_HELLO;
}

static bool is_not_handshake(const struct kpeer_msg *m, void *arg)
{
	return !is_handshake(m, arg);
}

/* ulnet's LNet messages in a script (as played). */
static unsigned ulnet_lnet_msgs(const struct kpeer *kp)
{
	unsigned c = 0;

	for (unsigned i = 0; i < kp->conf.limit; i++)
		c += !kp->msgs[i].from_kpeer && kp->msgs[i].kind == KP_LNET;
	return c;
}

/* The peer of `nid` in the node's peer table, or fail. */
static void rtr_peer(struct st_node *n, const char *what, const ulnet_nid_t *nid,
		     struct ulnet_peer_ni_info *out)
{
	struct ulnet_peer_info pi;
	char a[ULNET_NIDSTR_SIZE];

	for (int i = 0; ulnet_peer_info(n->ln, i, &pi) == 0; i++)
		for (int j = 0; j < pi.nnis && j < 16; j++)
			if (ulnet_nid_same(&pi.nis[j].nid, nid)) {
				*out = pi.nis[j];
				return;
			}
	fail_msg("%s: the router has no peer %s", what, ulnet_nid_str(nid, a));
}

/*
 * routed-ping.br0 + .br1: `lnetctl ping 192.168.77.141@tcp1` on .11 (GET
 * -> REPLY), then `lnetctl discover` of it (GET -> REPLY, each side's push
 * PUT -> ACK), all through the router, which ulnet plays with forwarding
 * enabled (the capture starts long after `set routing 1`). Both captures
 * start after the router checkers' connections were made: kpeer makes up
 * their handshakes (each peer dials CONTROL, BULK_IN, BULK_OUT), .13's
 * first, so that the router has a connection to forward on; the router
 * never dials (kpeer has no listener, and a dial would be logged).
 * kpeer_conf.forwarded: every message ulnet sends on either hop must carry
 * the LNet header that the other hop's kpeer sent, as captured (NIDs,
 * PIDs, match bits, handles, lengths), and the same payload; and nothing
 * else may come (ulnet answers nothing that is not addressed to it).
 */
static void test_routed_ping_ulnet_router(void **state)
{
	const char *what = "routed-ping.br0+br1.pcap, ulnet the router (.12/.140)";
	struct rtr_live l = rtr_live(19);
	struct kpeer *k0 = &g_kp[0], *k1 = &g_kp[1], *kp[2] = { k0, k1 };
	struct kpeer_conf c0, c1;
	struct st_node *n;
	struct ulnet_counters ctr;
	struct ulnet_routing_info ri;
	struct ulnet_peer_ni_info p11, p13;
	ulnet_nid_t nid11, nid13;
	unsigned fwd;
	int hs, rc[2];

	(void)state;
	if (rtr_skip_unpriv(what))
		skip();
	rtr_confs("routed-ping", &l, &c0, &c1);
	c0.forwarded = c1.forwarded = true;
	n = router_start(&l, NULL);
	if (ulnet_routing_enable_now(n->ln))
		fail_msg("%s: ulnet_routing_enable_now failed", what);
	kp_load(k0, &c0);
	kp_load(k1, &c1);
	/* .13's connections first (the router forwards to 141@tcp1 on them) */
	hs = kpeer_find(k1, 0, is_not_handshake, NULL);
	if (hs < 0)
		fail_msg("%s: br1 has no message after the handshakes", what);
	if (kpeer_start(k1) || kpeer_run_to(k1, (unsigned)hs))
		report(k1, "routed-ping.br1.pcap: .13's connections to the router", -1);
	if (kpeer_start(k0) || kpeer_run_async(k0))
		report(k0, what, -1);
	if (kpeer_run_async(k1))
		report(k1, what, -1);
	rc[0] = kpeer_join(k0);
	rc[1] = kpeer_join(k1);
	report_hops(kp, "routed-ping", rc);

	/* everything ulnet sent was forwarded; it sent and dropped nothing
	 * of its own */
	fwd = ulnet_lnet_msgs(k0) + ulnet_lnet_msgs(k1);
	ulnet_counters_get(n->ln, &ctr);
	if (ctr.route_count != fwd || ctr.drop_count || ctr.send_count || ctr.recv_count)
		fail_msg("%s: counters route %llu drop %llu send %llu recv %llu; want route %u "
			 "(the LNet messages of both captures), the rest 0", what,
			 (unsigned long long)ctr.route_count, (unsigned long long)ctr.drop_count,
			 (unsigned long long)ctr.send_count, (unsigned long long)ctr.recv_count, fwd);
	if (log_count(n, "connect failed") || log_count(n, ": connect: "))
		fail_msg("%s: the router dialled a peer (the kernel's reused the peers' "
			 "connections)", what);
	/* The kernel router after this: mincredits tiny 2047 (the GETs and
	 * ACKs), small 16383 (the 48-byte REPLYs and PUTs), large untouched:
	 * one buffer at a time (ulnet forwards on its one progress thread,
	 * and gives a buffer back as its send ends, before it reads the
	 * next message). Every buffer back. */
	assert_int_equal(ulnet_routing_info(n->ln, &ri), 0);
	for (int p = 0; p < ULNET_RTR_NPOOLS; p++) {
		const struct ulnet_rtr_pool_info *pi = &ri.pool[p];
		int want = p == ULNET_RTR_POOL_LARGE ? pi->nbuffers : pi->nbuffers - 1;

		if (pi->credits != pi->nbuffers || pi->mincredits != want)
			fail_msg("%s: router pool %d: credits %d mincredits %d of %d buffers; "
				 "want %d, mincredits %d", what, p, pi->credits, pi->mincredits,
				 pi->nbuffers, pi->nbuffers, want);
	}
	/* both end nodes are the router's peers, each router credit back
	 * (peer_credits, 8: peer_buffer_credits is 0) after one in use at a
	 * time; and alive (`state: up`), as the kernel's `peer show` on the
	 * router has them (docs/routing.md, "Peer aliveness"). */
	ulnet_nid_from_ipv4(l.g11, ulnet_mknet(ULNET_LND_TCP, 0), &nid11);
	ulnet_nid_from_ipv4(l.g141, ulnet_mknet(ULNET_LND_TCP, 1), &nid13);
	rtr_peer(n, what, &nid11, &p11);
	rtr_peer(n, what, &nid13, &p13);
	if (p11.available_rtr_credits != 8 || p11.min_rtr_credits != 7 ||
	    p13.available_rtr_credits != 8 || p13.min_rtr_credits != 7)
		fail_msg("%s: router peers: .11 rtr credits %d (min %d), .13 %d (min %d); "
			 "want 8 (min 7)", what, p11.available_rtr_credits, p11.min_rtr_credits,
			 p13.available_rtr_credits, p13.min_rtr_credits);
	if (p11.state != 1 || p13.state != 1)
		fail_msg("%s: router peers: .11 state %d, .13 state %d; want 1 (up), as the "
			 "kernel router", what, p11.state, p13.state);
	print_message("[  REPLAY  ] %s: %u messages forwarded with the captured headers "
		      "(route_count %llu), none dropped, none of its own; pool mincredits tiny %d "
		      "small %d (the kernel's 2047, 16383)\n", what, fwd, (unsigned long long)ctr.route_count,
		      ri.pool[ULNET_RTR_POOL_TINY].mincredits, ri.pool[ULNET_RTR_POOL_SMALL].mincredits);
	kpeer_close(k0);
	kpeer_close(k1);
	st_node_stop(n);
}

/*
 * router-up.br0 + .br1: the router's cold start. ulnet gets its two NIs
 * and `set routing 1` (ulnet_routing_set: STARTING); then each kernel
 * peer's router checker dials it (CONTROL, BULK_IN, BULK_OUT) and
 * discovers it: GET -> REPLY with the router's ping info, features 0x1e
 * (RTE_DISABLED) and 0@lo plus both NIs UP; the peer's push -> ACK, and
 * the router's push back -> ACK. 60 s later, the second check (GET ->
 * REPLY still 0x1e, the peer's push -> ACK; the router pushes nothing).
 * 111.6 s after `set routing 1` STARTING ends and the router pushes its
 * ping info with features 0x1a to both peers (PUT portal 0, ACK
 * requested), which ACK.
 *
 * ulnet's clock (the instance's clock hook, st_skewed_clock) follows the
 * captures' time of day: before kpeer sends a message or waits for one of
 * ulnet's, it is moved (forward only) to that message's capture time,
 * counted from `set routing 1` (08:51:40.115 UTC in router-up.transcript.txt)
 * = the moment of ulnet_routing_set(); the two hops keep in step
 * (rtr_sync_locked). Two minutes of capture play in about three seconds.
 * Before the push is awaited the clock stands at 108 s for 1.2 s (running
 * on to about 109.2 s), and the router must still be STARTING; then it is
 * moved to the push's 111.6 s, and the router must be ENABLED within
 * 2.5 s and push on its own. Keepalives are set aside (kpeer_conf), as
 * their timing in these jumps is not the capture's.
 *
 * Unprivileged (ULNET_REPLAY_UNPRIV) ulnet is a user-space peer: its PID
 * on the wire has 0x80000000 and kpeer's is its port | 0x80000000 (as the
 * other passive tests expect); its ping infos keep 12345.
 */
#define ROUTER_UP_SET_ROUTING 1795683100.115   /* 2026-11-26 08:51:40.115 UTC */
#define ROUTER_UP_PUSH_S 111.6                 /* the captures' push, after that */

struct rtr_clock {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t skew;             /* ulnet's clock: CLOCK_MONOTONIC + skew (ns) */
	uint64_t anchor;           /* ulnet's clock at ulnet_routing_set(1) */
	ulnet_t *ln;
	double pos[2];             /* each hop's capture time so far (s after set routing) */
	double last[2];            /* ... and that of its last script message */
	bool checked_109;
	int state_109;             /* routing state with the clock at 109 s */
	int enabled_ms;            /* then ENABLED this long after the clock reached
				    * the capture's push; -1: not within 4 s */
};

struct rtr_hop {
	struct rtr_clock *clk;
	const struct kpeer *kp;
	int i;                     /* 0: br0, 1: br1 */
};

/* Move ulnet's clock (forward only) to `secs` after `set routing 1`. */
static void rtr_clock_set(struct rtr_clock *c, double secs)
{
	uint64_t target = c->anchor + (uint64_t)(secs * 1e9);
	uint64_t mono = st_skewed_clock(&(uint64_t){ 0 });
	uint64_t want = target > mono ? target - mono : 0;
	uint64_t cur = __atomic_load_n(&c->skew, __ATOMIC_ACQUIRE);

	while (want > cur && !__atomic_compare_exchange_n(&c->skew, &cur, want, false,
							  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

static double rtr_cap_secs(const struct rtr_hop *h, const struct kpeer_msg *m)
{
	return h->kp->cap_t0 + m->t - ROUTER_UP_SET_ROUTING;
}

/* The two hops keep in step on the captures' common clock: a hop goes on
 * to capture time t (and moves ulnet's clock there) only once the other
 * hop got there too, or to its own last message. Otherwise one kpeer
 * could push ulnet's clock past a moment the other has not played yet
 * (the router would see a net silent for too long, for one). Bounded:
 * after 5 s it goes on anyway (the other hop failed), and the kpeer's
 * wait then fails. Called with c->mu held. */
static void rtr_sync_locked(struct rtr_hop *h, double t)
{
	struct rtr_clock *c = h->clk;
	uint64_t end = st_now_ms() + 5000;

	if (t > c->pos[h->i])
		c->pos[h->i] = t;
	pthread_cond_broadcast(&c->cv);
	while (c->pos[!h->i] < t && c->pos[!h->i] < c->last[!h->i] && st_now_ms() < end)
		st_cond_tick(&c->cv, &c->mu);
}

static void rtr_on_send(void *arg, const struct kpeer_msg *m)
{
	struct rtr_hop *h = arg;
	double t = rtr_cap_secs(h, m);

	pthread_mutex_lock(&h->clk->mu);
	rtr_sync_locked(h, t);
	if (t > 0)
		rtr_clock_set(h->clk, t);
	pthread_mutex_unlock(&h->clk->mu);
}

static void rtr_on_wait(void *arg, const struct kpeer_msg *m)
{
	struct rtr_hop *h = arg;
	struct rtr_clock *c = h->clk;
	double t = rtr_cap_secs(h, m);

	pthread_mutex_lock(&c->mu);
	rtr_sync_locked(h, t);
	if (m->has_pi && !(m->pi.features & LNET_PING_FEAT_RTE_DISABLED) && !c->checked_109) {
		/* the push that ends STARTING: not before 110 s ... */
		struct ulnet_routing_info ri;
		uint64_t t0;

		rtr_clock_set(c, ULNET_RTR_STARTUP_S - 2);
		/* the router's timer ticks every second; the clock runs on
		 * meanwhile, to about 109.2 s */
		usleep(1200 * 1000);
		c->state_109 = ulnet_routing_info(c->ln, &ri) ? -1 : (int)ri.state;
		c->checked_109 = true;
		/* ... and soon after: ENABLED within 2.5 s of the clock
		 * reaching the capture's push (by ~114 s; the timer's tick
		 * takes up to 1 s, a loaded machine some more) */
		rtr_clock_set(c, t);
		t0 = st_now_ms();
		c->enabled_ms = -1;
		while (st_now_ms() - t0 <= 4000) {
			if (!ulnet_routing_info(c->ln, &ri) && ri.state == ULNET_ROUTING_ENABLED) {
				c->enabled_ms = (int)(st_now_ms() - t0);
				break;
			}
			usleep(10 * 1000);
		}
	}
	if (t > 0)
		rtr_clock_set(c, t);
	pthread_mutex_unlock(&c->mu);
}

static bool is_push_0x1a(const struct kpeer_msg *m, void *arg)
{
	(void)arg;
	return !m->from_kpeer && m->kind == KP_LNET && m->hdr.type == ULNET_MSG_PUT && m->has_pi &&
	       m->pi.features == 0x1a;
}

static void test_router_up_ulnet_router(void **state)
{
	const char *what = "router-up.br0+br1.pcap, ulnet the router (.12/.140)";
	static struct rtr_clock clk;
	static struct rtr_hop hop[2];
	struct rtr_live l = rtr_live(21);
	struct kpeer *kp[2] = { &g_kp[0], &g_kp[1] };
	struct kpeer_conf c[2];
	struct ulnet_routing_info ri;
	struct ulnet_counters ctr;
	struct st_node *n;
	int rc[2];

	(void)state;
	memset(&clk, 0, sizeof(clk));
	pthread_mutex_init(&clk.mu, NULL);
	pthread_cond_init(&clk.cv, NULL);
	rtr_confs("router-up", &l, &c[0], &c[1]);
	n = router_start(&l, &clk.skew);
	clk.ln = n->ln;
	for (int i = 0; i < 2; i++) {
		hop[i].clk = &clk;
		hop[i].kp = kp[i];
		hop[i].i = i;
		c[i].on_send = rtr_on_send;
		c[i].on_wait = rtr_on_wait;
		c[i].arg = &hop[i];
		c[i].aside_keepalive = true;
		c[i].timeout_ms = 8000;
		kp_load(kp[i], &c[i]);
		if (kpeer_find(kp[i], 0, is_push_0x1a, NULL) < 0)
			fail_msg("%s: %s has no push with features 0x1a", what, c[i].pcap);
		clk.pos[i] = -1e9;
		clk.last[i] = rtr_cap_secs(&hop[i], &kp[i]->msgs[kp[i]->nmsgs - 1]);
	}
	clk.anchor = st_skewed_clock(&clk.skew);
	if (ulnet_routing_set(n->ln, true))
		fail_msg("%s: ulnet_routing_set(1) failed", what);
	assert_int_equal(ulnet_routing_info(n->ln, &ri), 0);
	if (ri.state != ULNET_ROUTING_STARTING)
		fail_msg("%s: routing state %d after ulnet_routing_set(1), want STARTING (3)", what,
			 ri.state);
	for (int i = 0; i < 2; i++)
		if (kpeer_start(kp[i]) || kpeer_run_async(kp[i])) {
			/* the other hop's hooks call the node: its thread ends
			 * before teardown stops the node */
			kpeer_close(kp[!i]);
			report(kp[i], what, -1);
		}
	rc[0] = kpeer_join(kp[0]);
	rc[1] = kpeer_join(kp[1]);
	report_hops(kp, "router-up", rc);
	if (!clk.checked_109 || clk.state_109 != ULNET_ROUTING_STARTING)
		fail_msg("%s: with the clock 109 s after ulnet_routing_set(1) the routing state "
			 "was %d, want STARTING (3) until 110 s", what, clk.state_109);
	if (clk.enabled_ms < 0 || clk.enabled_ms > 2500)
		fail_msg("%s: the router was ENABLED %d ms after its clock reached %.1f s (-1: not "
			 "within 4 s); the kernel's forwarding starts after 110 s", what,
			 clk.enabled_ms, ROUTER_UP_PUSH_S);
	assert_int_equal(ulnet_routing_info(n->ln, &ri), 0);
	if (ri.state != ULNET_ROUTING_ENABLED)
		fail_msg("%s: routing state %d after the push, want ENABLED (1)", what, ri.state);
	/* the router forwarded nothing: everything was addressed to it */
	ulnet_counters_get(n->ln, &ctr);
	if (ctr.route_count || ctr.drop_count)
		fail_msg("%s: route_count %llu drop_count %llu, want 0", what,
			 (unsigned long long)ctr.route_count, (unsigned long long)ctr.drop_count);
	print_message("[  REPLAY  ] %s: discovery answered with 0x1e while STARTING (still so at "
		      "109 s), ENABLED %d ms after the clock reached %.1f s, then the push with "
		      "0x1a to both peers, ACKed; keepalives set aside: %u and %u\n", what,
		      clk.enabled_ms, ROUTER_UP_PUSH_S, kp[0]->aside_keepalives,
		      kp[1]->aside_keepalives);
	kpeer_close(kp[0]);
	kpeer_close(kp[1]);
	st_node_stop(n);
	pthread_mutex_destroy(&clk.mu);
	pthread_cond_destroy(&clk.cv);
}

/* ---------------------------------------------------------------------- */
/* kpeer against kpeer: both sides of a capture scripted. Independently of
 * ulnet, this proves the script engine (order, NID mapping, handle echo,
 * comparisons) replays each capture without a difference.                 */

static void self_replay(const char *pcap, unsigned k)
{
	struct kpeer *a = &g_kp[0], *b = &g_kp[1];
	struct kpeer_conf ca, cb;
	int ra, rb;

	kpeer_conf_init(&ca, pcap, k, IP_G1, IP_G2);
	kpeer_conf_init(&cb, pcap, k, IP_G2, IP_G1);
	ca.ulnet_userspace = cb.ulnet_userspace = false;
	cb.kpeer_privileged = g_priv;
	kp_load(a, &ca);
	kp_load(b, &cb);
	if (kpeer_start(b) || kpeer_start(a) || kpeer_run_async(b) || kpeer_run_async(a))
		fail_msg("%s: %s / %s", pcap, kpeer_error(a), kpeer_error(b));
	ra = kpeer_join(a);
	rb = kpeer_join(b);
	if (ra || rb)
		fail_msg("%s self-replay: .11 side: %s; .12 side: %s", pcap, kpeer_error(a),
			 kpeer_error(b));
	print_message("[  REPLAY  ] %s kpeer vs kpeer: .11 side matched %u, .12 side %u messages\n",
		      pcap, a->received, b->received);
	kpeer_close(a);
	kpeer_close(b);
}

static bool is_get(const struct kpeer_msg *m, void *arg)
{
	(void)arg;
	return m->kind == KP_LNET && m->hdr.type == ULNET_MSG_GET;
}

/* kpeer reports the first difference precisely: the .12 side expects a
 * GET with sink_length 272 where the .11 side sends the captured 3960. */
static void test_kpeer_reports_difference(void **state)
{
	struct kpeer *a = &g_kp[0], *b = &g_kp[1];
	struct kpeer_conf ca, cb;
	int ra, rb, gi;
	char want[128];

	(void)state;
	kpeer_conf_init(&ca, "ping", 15, IP_G1, IP_G2);
	kpeer_conf_init(&cb, "ping", 15, IP_G2, IP_G1);
	ca.ulnet_userspace = cb.ulnet_userspace = false;
	ca.timeout_ms = cb.timeout_ms = 1000;
	kp_load(a, &ca);
	kp_load(b, &cb);
	gi = kpeer_find(b, 0, is_get, NULL);
	assert_true(gi > 0);
	b->msgs[gi].hdr.msg.get.sink_length = 272;
	assert_int_equal(kpeer_start(b), 0);
	assert_int_equal(kpeer_run_async(b), 0);
	ra = kpeer_run(a);
	rb = kpeer_join(b);
	snprintf(want, sizeof(want), "msg %d GET (C1 CONTROL): sink_length 3960 != 272", gi);
	print_message("[  REPLAY  ] planted difference reported as: %s\n", kpeer_error(b));
	assert_int_equal(rb, -1);
	assert_non_null(strstr(kpeer_error(b), want));
	(void)ra;   /* the .11 side then misses the REPLY */
	kpeer_close(a);
	kpeer_close(b);
}

static void test_kpeer_self(void **state)
{
	static const char *const caps[] = { "ping", "discover", "discover-fresh",
					    "first-contact-lst", "idle-keepalive" };

	(void)state;
	for (unsigned i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		self_replay(caps[i], 10 + i);
}

/* ---------------------------------------------------------------------- */

/* ULNET_REPLAY_UNPRIV=1: drop CAP_NET_BIND_SERVICE (before any thread) so
 * that a root run also covers the user-space peer mode. */
static void drop_bind_cap(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return;
	d[0].effective &= ~(1u << CAP_NET_BIND_SERVICE);
	if (syscall(SYS_capset, &h, d))
		fprintf(stderr, "capset: %s\n", strerror(errno));
}

static int group_setup(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 2; i++)
		g_kp[i].lfd = -1;     /* closed: kpeer_close() is a no-op */
	g_priv = st_is_privileged();
	g_port = (uint16_t)(20000 + (getpid() * 11 + 5) % 30000);
	print_message("[  REPLAY  ] %s; captures from %s/pcaps\n",
		      g_priv ? "privileged ports (kernel mode, accept=secure)"
			     : "no privileged ports: ulnet is a user-space peer (PID | 0x80000000), "
			       "accept=all",
		      tu_shared_dir());
	return 0;
}

/* After every test, passed or failed: whatever it left running. */
static int teardown(void **state)
{
	(void)state;
	g_after = NULL;
	g_srpc = false;
	ulnet_selftest_stop(g_agent);   /* a failed agent test left it running */
	g_agent = NULL;
	if (g_node.log)
		st_node_stop(&g_node);
	for (unsigned i = 0; i < 2; i++)
		kpeer_close(&g_kp[i]);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_kpeer_self, teardown),
		cmocka_unit_test_teardown(test_kpeer_reports_difference, teardown),
		cmocka_unit_test_teardown(test_ping_ulnet_passive, teardown),
		cmocka_unit_test_teardown(test_ping_ulnet_active, teardown),
		cmocka_unit_test_teardown(test_discover_ulnet_passive, teardown),
		cmocka_unit_test_teardown(test_discover_ulnet_active, teardown),
		cmocka_unit_test_teardown(test_discover_fresh_ulnet_passive, teardown),
		cmocka_unit_test_teardown(test_discover_fresh_ulnet_active, teardown),
		cmocka_unit_test_teardown(test_first_contact_lst, teardown),
		cmocka_unit_test_teardown(test_first_contact_lst_agent, teardown),
		cmocka_unit_test_teardown(test_lst_agent, teardown),
		cmocka_unit_test_teardown(test_idle_keepalive, teardown),
		cmocka_unit_test_teardown(test_errors_refused, teardown),
		cmocka_unit_test_teardown(test_routed_ping_ulnet_client, teardown),
		cmocka_unit_test_teardown(test_routed_ping_ulnet_router, teardown),
		cmocka_unit_test_teardown(test_router_up_ulnet_router, teardown),
	};
	const char *u = getenv("ULNET_REPLAY_UNPRIV");

	if (u && *u == '1')
		drop_bind_cap();
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
