/* SPDX-License-Identifier: MIT */
/*
 * test_modopts.c - the lnet, ksocklnd and ko2iblnd module parameters of ulnetd
 * (tools/common/modopts*.c): the modprobe.d syntax (quoting, `\`
 * continuations, comments, directives, FILE:LINE in errors), every
 * parameter's value as the kernel parses it, refusals (-95 for what ulnet
 * does not have, -22 for a bad value), deprecated no-ops accepted with a
 * warning, the networks= and routes= strings, the checks between
 * parameters; then, on an in-process node, what they do: NIs, routes,
 * forwarding, buffers, globals, router parameters, NI defaults, and
 * again at "lnet configure --all".
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
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_cmds.h"
#include "ctl_cmds_int.h"
#include "ctl_test.h"
#include "fake_o2ib.h"
#include "lnd/o2iblnd/o2ib_policy.h"
#include "modopts.h"

/* --- helpers ------------------------------------------------------------------- */

static char warnings[8192];

static void capture(void *arg, enum ulnet_log_level level, const char *msg)
{
	(void)arg;
	size_t n = strlen(warnings);

	snprintf(warnings + n, sizeof(warnings) - n, "%s: %s\n",
		 level == ULNET_LOG_WARN ? "warn" : level == ULNET_LOG_ERROR ? "error" : "info", msg);
}

static void mo_new(struct modopts *mo)
{
	modopts_init(mo);
	mo->log = capture;
	warnings[0] = '\0';
}

static int text(struct modopts *mo, const char *t)
{
	return modopts_parse_text(mo, "f.conf", t, strlen(t));
}

/* `t` (a modprobe.d text) fails with `rc` and a message containing each
 * of the NULL-terminated strings. */
static void text_fails(const char *t, int rc, ...)
{
	struct modopts mo;
	va_list ap;

	mo_new(&mo);
	int got = text(&mo, t);

	if (got != rc)
		fail_msg("'%s': rc %d, want %d (%s)", t, got, rc, mo.err);
	va_start(ap, rc);
	for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
		if (!strstr(mo.err, s))
			fail_msg("'%s': message '%s' lacks '%s'", t, mo.err, s);
	va_end(ap);
	modopts_free(&mo);
}

/* One --module-option fails with `rc` and a message containing `want`. */
static void arg_fails(const char *arg, int rc, const char *want)
{
	struct modopts mo;

	mo_new(&mo);
	int got = modopts_set_arg(&mo, arg);

	if (got != rc)
		fail_msg("'%s': rc %d, want %d (%s)", arg, got, rc, mo.err);
	if (want && !strstr(mo.err, want))
		fail_msg("'%s': message '%s' lacks '%s'", arg, mo.err, want);
	modopts_free(&mo);
}

static void arg_ok(struct modopts *mo, const char *arg)
{
	int rc = modopts_set_arg(mo, arg);

	if (rc != 0)
		fail_msg("'%s': rc %d: %s", arg, rc, mo->err);
}

static const char *nid(const ulnet_nid_t *n)
{
	static char b[4][ULNET_NIDSTR_SIZE];
	static int i;

	return ulnet_nid_str(n, b[i++ & 3]);
}

static ulnet_net_t net(const char *s)
{
	ulnet_net_t n = 0;

	assert_int_equal(ulnet_net_parse(s, &n, NULL), 0);
	return n;
}

/* --- ko2iblnd ------------------------------------------------------------------ */

/* Every parameter of the 2.17 ko2iblnd (o2iblnd_modparams.c) is known. */
static const char *const o2ib_all[] = {
	"service", "cksum", "timeout", "nscheds", "conns_per_peer", "ntx", "credits",
	"peer_credits", "peer_credits_hiw", "peer_buffer_credits", "peer_timeout", "ipif_name",
	"retry_count", "rnr_retry_count", "keepalive", "ib_mtu", "concurrent_sends",
	"use_fastreg_gaps", "map_on_demand", "fmr_pool_size", "fmr_flush_trigger", "fmr_cache",
	"dev_failover", "require_privileged_port", "use_privileged_port", "wrq_sge", "tos",
};

/* The ko2iblnd parameters that take effect become the defaults of every
 * o2ib NI (not of a tcp one), and the LND resolves them as the kernel. */
static void test_o2ib_effect(void **state)
{
	struct modopts mo;
	struct ctl_ctx ctx;
	struct ulnet_ni_conf conf, tcp;
	struct kib_tunables t;
	const char *what;

	(void)state;
	mo_new(&mo);
	assert_int_equal(text(&mo, "options ko2iblnd service=18515 cksum=1 timeout=20 keepalive=7 "
				   "ntx=1024 peer_credits=32 credits=512 peer_credits_hiw=20 "
				   "concurrent_sends=40 retry_count=3 rnr_retry_count=0 tos=96 "
				   "peer_timeout=90 peer_buffer_credits=16 conns_per_peer=1 "
				   "map_on_demand=1 fmr_pool_size=512 fmr_flush_trigger=384 fmr_cache=1 "
				   "ib_mtu=0 nscheds=0 dev_failover=0 wrq_sge=2 use_fastreg_gaps=0 "
				   "require_privileged_port=0 use_privileged_port=0\n"), 0);
	assert_int_equal(modopts_finish(&mo), 0);
	assert_int_equal(ctl_ctx_init(&ctx, NULL, false), 0);
	assert_int_equal(modopts_load(&ctx, &mo), 0);

	memset(&conf, 0, sizeof(conf));
	conf.tun.tos = -1;
	assert_int_equal(ulnet_nid_parse("10.0.0.1@o2ib", &conf.nid, NULL), 0);
	tcp = conf;
	assert_int_equal(ulnet_nid_parse("10.0.0.1@tcp", &tcp.nid, NULL), 0);
	ctl_ni_conf_defaults(&ctx, &conf);
	ctl_ni_conf_defaults(&ctx, &tcp);
	assert_int_equal(conf.tun.peer_credits, 32);
	assert_int_equal(conf.tun.credits, 512);
	assert_int_equal(conf.tun.peer_timeout, 90);
	assert_int_equal(conf.tun.peer_buffer_credits, 16);
	assert_int_equal(conf.tun.tos, 96);
	assert_int_equal(conf.o2ib.service, 18515);
	assert_int_equal(conf.o2ib.rnr_retry_count, -1);   /* 0: none */
	/* not ksocklnd's */
	assert_int_equal(tcp.tun.peer_credits, 0);
	assert_int_equal(tcp.tun.tos, -1);
	assert_int_equal(tcp.o2ib.service, 0);

	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	assert_int_equal(t.service, 18515);
	assert_true(t.cksum);
	assert_int_equal(t.timeout, 20);
	assert_int_equal(t.keepalive, 7);
	assert_int_equal(t.ntx, 1024);
	assert_int_equal(t.peer_credits, 32);
	assert_int_equal(t.peercredits_hiw, 20);
	assert_int_equal(t.concurrent_sends, 40);
	assert_false(t.use_priv_port);      /* use_privileged_port=0 */
	assert_false(t.require_priv_port);
	assert_int_equal(t.retry_count, 3);
	assert_int_equal(t.rnr_retry_count, 0);
	assert_int_equal(t.tos, 96);
	/* what an NI sets itself wins */
	conf.o2ib.keepalive = 0;
	conf.o2ib.timeout = 9;
	conf.tun.peer_credits = 0;
	ctl_ni_conf_defaults(&ctx, &conf);
	assert_int_equal(conf.o2ib.keepalive, 7);
	assert_int_equal(conf.o2ib.timeout, 9);
	ctl_ctx_fini(&ctx);
	modopts_free(&mo);

	/* timeout=0 and keepalive=0 as the kernel: the global lnd_timeout, never */
	mo_new(&mo);
	arg_ok(&mo, "ko2iblnd.timeout=0");
	arg_ok(&mo, "ko2iblnd.keepalive=0");
	arg_ok(&mo, "ko2iblnd.cksum=0");
	/* the privileged ports take effect both ways */
	arg_ok(&mo, "ko2iblnd.require_privileged_port=1");
	assert_int_equal(mo.o2ib.require_privileged_port, 1);
	arg_ok(&mo, "ko2iblnd.use_privileged_port=0");
	assert_int_equal(mo.o2ib.use_privileged_port, -1);
	assert_int_equal(mo.o2ib.timeout, -1);
	assert_int_equal(mo.o2ib.keepalive, -1);
	assert_int_equal(mo.o2ib.cksum, -1);
	/* peer_credits raised to 8 and capped at 255, as the kernel, saying so */
	arg_ok(&mo, "ko2iblnd.peer_credits=2");
	assert_int_equal(mo.o2ib_tun.peer_credits, 8);
	assert_non_null(strstr(warnings, "ko2iblnd.peer_credits=2: raised to 8"));
	arg_ok(&mo, "ko2iblnd.peer_credits=1000");
	assert_int_equal(mo.o2ib_tun.peer_credits, 255);
	/* map_on_demand: obsolete, shown, with a warning */
	arg_ok(&mo, "ko2iblnd.map_on_demand=32");
	assert_int_equal(mo.o2ib.map_on_demand, 32);
	assert_non_null(strstr(warnings, "ko2iblnd.map_on_demand=32: obsolete"));
	modopts_free(&mo);
}

/* Refusals: -95 for what ulnet does not do, -22 for a bad value, naming
 * the parameter; every parameter of the module is known. */
static void test_o2ib_refusals(void **state)
{
	struct modopts mo;
	char arg[80];

	(void)state;
	for (size_t i = 0; i < sizeof(o2ib_all) / sizeof(o2ib_all[0]); i++) {
		mo_new(&mo);
		snprintf(arg, sizeof(arg), "ko2iblnd.%s=zz", o2ib_all[i]);
		int rc = modopts_set_arg(&mo, arg);

		/* known: a number refuses it as a value (ipif_name, a string,
		 * as a parameter ulnet has no use for), never as unknown */
		if (strstr(mo.err, "no such parameter"))
			fail_msg("%s: %s", arg, mo.err);
		assert_int_equal(rc, strcmp(o2ib_all[i], "ipif_name") ? -EINVAL : -EOPNOTSUPP);
		modopts_free(&mo);
	}
	arg_fails("ko2iblnd.conns_per_peer=128", -EINVAL,
		  "ko2iblnd.conns_per_peer: 128 is out of range (0..127)");
	arg_fails("ko2iblnd.fmr_pool_size=1024", -EOPNOTSUPP, "only fmr_pool_size=512");
	arg_fails("ko2iblnd.fmr_flush_trigger=10", -EOPNOTSUPP, "only fmr_flush_trigger=384");
	arg_fails("ko2iblnd.fmr_cache=0", -EOPNOTSUPP, "only fmr_cache=1");
	arg_fails("ko2iblnd.ib_mtu=2048", -EOPNOTSUPP, "only ib_mtu=0");
	arg_fails("ko2iblnd.ib_mtu=1500", -EINVAL, "not an IB MTU");
	arg_fails("ko2iblnd.nscheds=4", -EOPNOTSUPP, "no scheduler threads");
	arg_fails("ko2iblnd.dev_failover=1", -EOPNOTSUPP, "HCA failover");
	arg_fails("ko2iblnd.use_fastreg_gaps=1", -EOPNOTSUPP, "FMR");
	arg_fails("ko2iblnd.wrq_sge=1", -EOPNOTSUPP, "only wrq_sge=2");
	arg_fails("ko2iblnd.peer_timeout=0", -EOPNOTSUPP, "no peer aliveness");
	arg_fails("ko2iblnd.service=0", -EINVAL, "ko2iblnd.service: 0 is not a port");
	arg_fails("ko2iblnd.service=70000", -EINVAL, "not a port");
	arg_fails("ko2iblnd.timeout=-1", -EINVAL, "ko2iblnd.timeout: -1 is out of range");
	arg_fails("ko2iblnd.retry_count=8", -EINVAL, "ko2iblnd.retry_count: 8 is out of range (0..7");
	arg_fails("ko2iblnd.rnr_retry_count=-1", -EINVAL, "out of range");
	arg_fails("ko2iblnd.ntx=0", -EINVAL, "ko2iblnd.ntx: must be at least 1");
	arg_fails("ko2iblnd.ntx=2052", -EINVAL, "above fmr_pool_size");
	arg_fails("ko2iblnd.tos=256", -EINVAL, "ko2iblnd.tos: 256 is out of range (-1..255)");
	arg_fails("ko2iblnd.credits=0", -EINVAL, "must be at least 1");
	arg_fails("ko2iblnd.ipif_name=ib0", -EOPNOTSUPP, "networks takes tcp nets only");
	arg_fails("ko2iblnd.keepalive=x", -EINVAL, "is not a 32-bit integer");
	/* between parameters: peer_credits above credits */
	mo_new(&mo);
	assert_int_equal(text(&mo, "options ko2iblnd peer_credits=64 credits=32\n"), 0);
	assert_int_equal(modopts_finish(&mo), -EINVAL);
	assert_non_null(strstr(mo.err, "f.conf:1: ko2iblnd.peer_credits: peer_credits 64 exceeds credits 32"));
	modopts_free(&mo);
}

/* --- modprobe.d syntax ---------------------------------------------------------- */

static void test_file_syntax(void **state)
{
	(void)state;
	struct modopts mo;
	static const char f[] =
		"# LNet, as on the kernel nodes\n"
		"\n"
		"   # an indented comment\n"
		"options lnet networks=\"tcp0(eth0), tcp1(eth1)\" forwarding=enabled\n"
		"options lnet \\\n"
		"    routes=\"o2ib 2 10.0.0.[1-2]@tcp0:3; tcp2 192.168.1.1@tcp1\" \\\n"
		"    lnet_transaction_timeout=60 lnet-retry-count=1\n"
		"\toptions\tksocklnd\tpeer_credits=16 \"conns_per_peer=4\" tos=0x20\n"
		"options ksocklnd nagle=1 keepalive=0 sock_timeout=77\n"
		"options lnet small_router_buffers=500 alive_router_check_interval=0 \\\n"
		"check_routers_before_use=1";

	mo_new(&mo);
	assert_int_equal(text(&mo, f), 0);
	assert_int_equal(modopts_finish(&mo), 0);
	/* networks: two NIs, with the continued line counted */
	assert_true(mo.networks_set);
	assert_int_equal(mo.nnis, 2);
	assert_int_equal(mo.nis[0].net, net("tcp"));
	assert_string_equal(mo.nis[0].iface, "eth0");
	assert_int_equal(mo.nis[1].net, net("tcp1"));
	assert_string_equal(mo.nis[1].iface, "eth1");
	assert_string_equal(mo.networks_where, "f.conf:4");
	assert_int_equal(mo.forwarding, 1);
	/* routes: expanded, hop count and priority */
	assert_true(mo.routes_set);
	assert_string_equal(mo.routes_where, "f.conf:5");
	assert_int_equal(mo.nroutes, 3);
	assert_int_equal(mo.routes[0].net, net("o2ib"));
	assert_string_equal(nid(&mo.routes[0].gw), "10.0.0.1@tcp");
	assert_string_equal(nid(&mo.routes[1].gw), "10.0.0.2@tcp");
	assert_int_equal(mo.routes[1].hops, 2);
	assert_int_equal(mo.routes[1].priority, 3);
	assert_int_equal(mo.routes[2].net, net("tcp2"));
	assert_string_equal(nid(&mo.routes[2].gw), "192.168.1.1@tcp1");
	assert_int_equal(mo.routes[2].hops, ULNET_ROUTE_HOPS_UNSET);
	assert_int_equal(mo.routes[2].priority, 0);
	/* globals, '-' read as '_' */
	assert_true(mo.g_set);
	assert_int_equal(mo.g.transaction_timeout, 60);
	assert_int_equal(mo.g.retry_count, 1);
	/* ksocklnd, a wholly quoted pair, a hex value */
	assert_int_equal(mo.tun.peer_credits, 16);
	assert_int_equal(mo.tun.conns_per_peer, 4);
	assert_int_equal(mo.tun.tos, 0x20);
	assert_int_equal(mo.sock.nagle, 1);
	assert_int_equal(mo.sock.keepalive, -1);   /* <= 0: never */
	assert_int_equal(mo.sock.sock_timeout, 77);
	/* router */
	assert_int_equal(mo.rtr_buffers[ULNET_RTR_POOL_SMALL], 500);
	assert_int_equal(mo.rtr_buffers[ULNET_RTR_POOL_TINY], -1);
	assert_int_equal(mo.rp_set, MO_RP_INTERVAL | MO_RP_CHECK);
	assert_int_equal(mo.rp.alive_router_check_interval, 0);
	assert_true(mo.rp.check_routers_before_use);
	assert_string_equal(warnings, "");
	modopts_free(&mo);
}

static void test_quoting_and_continuation(void **state)
{
	(void)state;
	struct modopts mo;

	/* a value with blanks, a quote closing a value, an empty value */
	mo_new(&mo);
	assert_int_equal(text(&mo, "options lnet routes=\"tcp1  1.2.3.4@tcp  1.2.3.5@tcp:2\""), 0);
	assert_int_equal(mo.nroutes, 2);
	assert_int_equal(mo.routes[1].priority, 2);
	assert_int_equal(text(&mo, "options lnet forwarding=\"\""), 0);
	assert_int_equal(mo.forwarding, -1);
	/* the last setting wins, as in the kernel */
	assert_int_equal(text(&mo, "options lnet forwarding=enabled\noptions lnet forwarding=disabled"), 0);
	assert_int_equal(mo.forwarding, 0);
	/* a backslash before another character keeps the character (kmod) */
	assert_int_equal(text(&mo, "options lnet accept=\\all"), 0);
	assert_string_equal(mo.accept, "all");
	/* joined lines without a blank between them, no trailing newline */
	assert_int_equal(text(&mo, "options lnet accept_port=2\\\n2990"), 0);
	assert_int_equal(mo.accept_port, 22990);
	/* CRLF-free file ending in a backslash */
	assert_int_equal(text(&mo, "options lnet accept_backlog=64\\"), 0);
	assert_int_equal(mo.accept_backlog, 64);
	assert_int_equal(mo.accept_port_bulk, -1);   /* not given */
	assert_int_equal(text(&mo, "options lnet accept_port_bulk=0x3dd"), 0);
	assert_int_equal(mo.accept_port_bulk, 989);
	modopts_free(&mo);

	/* an error after a continuation names the line the option starts on */
	text_fails("# one\noptions lnet \\\n  ip2nets=\"tcp0(eth0) 10.0.0\"\n", -EINVAL,
		   "f.conf:2: lnet.ip2nets: entry 1 (tcp0(eth0)): bad IP pattern '10.0.0'", "(errno -22)", NULL);
	text_fails("options lnet networks=tcp\n\n\noptions lnet lnet_retry_count=x\n", -EINVAL,
		   "f.conf:4: lnet.lnet_retry_count: 'x' is not", "(errno -22)", NULL);
	/* quotes */
	text_fails("options lnet networks=\"tcp(eth0)", -EINVAL, "f.conf:1:",
		   "double quote is not closed", NULL);
	/* '#' in the middle of a line is not a comment in modprobe.d */
	text_fails("options lnet forwarding=enabled # on", -EINVAL, "f.conf:1:",
		   "'#' starts a comment only at the start of a line", NULL);
}

static void test_file_errors(void **state)
{
	(void)state;
	/* other directives and other modules: -95 with FILE:LINE */
	text_fails("alias eth0 e1000e\n", -EOPNOTSUPP, "f.conf:1: 'alias'", "takes only 'options'", NULL);
	text_fails("\ninstall lnet /sbin/modprobe --ignore-install lnet\n", -EOPNOTSUPP, "f.conf:2: 'install'", NULL);
	text_fails("blacklist ksocklnd\n", -EOPNOTSUPP, "f.conf:1: 'blacklist'", NULL);
	text_fails("softdep lnet pre: libcfs\n", -EOPNOTSUPP, "f.conf:1: 'softdep'", NULL);
	text_fails("remove lnet /bin/true\n", -EOPNOTSUPP, "'remove'", NULL);
	text_fails("frobnicate lnet\n", -EINVAL, "f.conf:1: 'frobnicate' is not a modprobe.d directive", NULL);
	text_fails("options libcfs cpu_npartitions=2\n", -EOPNOTSUPP,
		   "f.conf:1: libcfs.cpu_npartitions:", "lnet, ksocklnd and ko2iblnd only", "(errno -95)", NULL);
	text_fails("options kgnilnd peer_credits=8\n", -EOPNOTSUPP, "kgnilnd.peer_credits", NULL);
	text_fails("options ko2iblnd no_such=1\n", -EOPNOTSUPP,
		   "ko2iblnd.no_such: not supported by ulnet: no such parameter of the 2.17 ko2iblnd module", NULL);
	/* unknown and unsupported parameters: -95; bad values: -22 */
	text_fails("options lnet no_such_param=1\n", -EOPNOTSUPP,
		   "lnet.no_such_param: not supported by ulnet: no such parameter of the 2.17 lnet module", NULL);
	text_fails("options ksocklnd protocol=2\n", -EOPNOTSUPP, "ksocklnd.protocol", "no such parameter", NULL);
	text_fails("options lnet cpu_pattern=\"0[0-1]\"\n", -EOPNOTSUPP, "lnet.cpu_pattern", NULL);
	text_fails("options lnet lnet_retry_count\n", -EINVAL, "lnet.lnet_retry_count: needs a value", NULL);
	text_fails("options lnet\n", -EINVAL, "f.conf:1: 'options' needs a module name and parameters", NULL);
	text_fails("options\n", -EINVAL, "needs a module name", NULL);
	text_fails("options lnet =5\n", -EINVAL, "without a parameter name", NULL);
	text_fails("options lnet forwarding=maybe\n", -EINVAL,
		   "lnet.forwarding: 'maybe' is neither 'enabled' nor 'disabled'", NULL);
	text_fails("options lnet bad.name=1\n", -EINVAL, "bad parameter name", NULL);
	/* bounds */
	{
		struct modopts mo;
		static const char nul[] = "options lnet accept=all\n\0\n";

		mo_new(&mo);
		assert_int_equal(modopts_parse_text(&mo, "n.conf", nul, sizeof(nul) - 1), -EINVAL);
		assert_non_null(strstr(mo.err, "n.conf:2: a NUL byte"));
		char *big = malloc(MODOPT_LINE_MAX + 100);

		assert_non_null(big);
		memset(big, 'a', MODOPT_LINE_MAX + 99);
		big[MODOPT_LINE_MAX + 99] = '\0';
		assert_int_equal(text(&mo, big), -EINVAL);
		assert_non_null(strstr(mo.err, "a line longer than"));
		free(big);
		assert_int_equal(modopts_parse_text(&mo, "big", "", (size_t)MODOPT_FILE_MAX + 1), -EFBIG);
		assert_int_equal(modopts_parse_file(&mo, "/nonexistent/modprobe.conf"), -ENOENT);
		assert_non_null(strstr(mo.err, "/nonexistent/modprobe.conf: cannot open"));
		modopts_free(&mo);
	}
}

/* --- values --------------------------------------------------------------------- */

static void test_values(void **state)
{
	(void)state;
	struct modopts mo;

	mo_new(&mo);
	/* the kernel's kstrtoint/kstrtouint: base 0, a sign, a newline */
	arg_ok(&mo, "ksocklnd.tos=0x10");
	assert_int_equal(mo.tun.tos, 16);
	arg_ok(&mo, "ksocklnd.tos=010");
	assert_int_equal(mo.tun.tos, 8);
	arg_ok(&mo, "ksocklnd.tos=-1");
	assert_int_equal(mo.tun.tos, -1);
	arg_ok(&mo, "ksocklnd.nscheds=1");   /* each tcp NI on a thread of its own */
	assert_int_equal(mo.sock.nscheds, 1);
	arg_ok(&mo, "ksocklnd.nscheds=0");
	assert_int_equal(mo.sock.nscheds, 0);
	arg_ok(&mo, "lnet.lnet_numa_range=+3");
	assert_int_equal(mo.g.numa_range, 3);
	/* quotes around a --module-option value are dropped */
	arg_ok(&mo, "lnet.networks=\"tcp1(eth3)\"");
	assert_int_equal(mo.nnis, 1);
	assert_string_equal(mo.nis[0].iface, "eth3");
	assert_string_equal(mo.networks_where, "--module-option");
	modopts_free(&mo);

	arg_fails("lnet.lnet_numa_range=-1", -EINVAL, "'-1' is not an unsigned 32-bit integer");
	arg_fails("ksocklnd.tos= 5", -EINVAL, "is not a 32-bit integer");
	arg_fails("ksocklnd.tos=5 ", -EINVAL, NULL);
	arg_fails("ksocklnd.tos=0x", -EINVAL, NULL);
	arg_fails("ksocklnd.tos=4294967296", -EINVAL, NULL);
	arg_fails("ksocklnd.tos=256", -EINVAL, "ksocklnd.tos: 256 is out of range (-1..255)");
	arg_fails("ksocklnd.conns_per_peer=128", -EINVAL, "out of range (0..127)");
	arg_fails("ksocklnd.credits=0", -EINVAL, "ksocklnd.credits: must be at least 1");
	arg_fails("ksocklnd.peer_timeout=0", -EOPNOTSUPP, "no peer aliveness");
	arg_fails("ksocklnd.typed_conns=0", -EOPNOTSUPP, "untyped connections");
	arg_fails("ksocklnd.keepalive_count=128", -EINVAL, "out of range");
	arg_fails("ksocklnd.min_bulk=0", -EINVAL, "out of range (1..");
	arg_fails("ksocklnd.tx_buffer_size=-5", -EINVAL, "must not be negative");
	arg_fails("ksocklnd.sock_timeout=-1", -EINVAL, NULL);
	arg_fails("ksocklnd.nscheds=-1", -EINVAL, "out of range (0 or 1)");
	arg_fails("ksocklnd.nscheds=2", -EOPNOTSUPP, "one thread per NI at most");
	arg_fails("lnet.accept=maybe", -EINVAL, "not one of secure, all, none");
	arg_fails("lnet.accept_port=0", -EINVAL, "not a port");
	arg_fails("lnet.accept_port_bulk=0", -EINVAL,
		  "--module-option: lnet.accept_port_bulk: 0 is not a port (1..65535)");
	arg_fails("lnet.accept_port_bulk=65536", -EINVAL, "65536 is not a port (1..65535)");
	arg_fails("lnet.accept_port_bulk=-1", -EINVAL, NULL);
	arg_fails("lnet.accept_backlog=70000", -EINVAL, "out of range (1..65535)");
	arg_fails("lnet.tiny_router_buffers=-1", -EINVAL, "must not be negative");
	arg_fails("lnet.router_ping_timeout=-1", -EINVAL, "must not be negative");
	arg_fails("lnet.lnet_response_tracking=4", -EINVAL, "out of range (0..3)");
	arg_fails("lnet.router_sensitivity_percentage=101", -EINVAL, "out of range (0..100)");
	arg_fails("lnet.lnet_health_sensitivity=1001", -EINVAL, "out of range (0..1000)");
	arg_fails("lnet.lnet_max_recovery_ping_interval=0", -EINVAL, "at least 1");
	arg_fails("lnet.lnet_transaction_timeout=2", -EINVAL, "greater than lnet_retry_count (2)");
	arg_fails("lnet.lnet_retry_count=150", -EINVAL, "less than lnet_transaction_timeout (150)");
	arg_fails("lnet.config_on_load=0", -EOPNOTSUPP, "ulnetd configures LNet when it starts");
	/* --module-option's own syntax */
	arg_fails("lnet", -EINVAL, "expected MODULE.PARAM=VALUE");
	arg_fails("networks=tcp", -EINVAL, "expected MODULE.PARAM=VALUE");
	arg_fails(".networks=tcp", -EINVAL, "expected MODULE.PARAM=VALUE");
	arg_fails("lnet.forwarding", -EINVAL, "--module-option: lnet.forwarding: needs a value");
	arg_fails("lnet.nosuch", -EOPNOTSUPP, "no such parameter");
	arg_fails("libcfs.libcfs_debug=0", -EOPNOTSUPP, "lnet, ksocklnd and ko2iblnd only");
	arg_fails("lnet.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1",
		  -EINVAL, "bad parameter name");

	/* the kernel's order-dependent checks, and their side effects */
	mo_new(&mo);
	arg_ok(&mo, "lnet.lnet_retry_count=0");
	arg_ok(&mo, "lnet.lnet_transaction_timeout=10");
	arg_ok(&mo, "lnet.lnet_retry_count=9");
	assert_int_equal(modopts_set_arg(&mo, "lnet.lnet_transaction_timeout=9"), -EINVAL);
	arg_ok(&mo, "lnet.lnet_health_sensitivity=0");
	assert_int_equal(mo.g.retry_count, 0);
	assert_non_null(strstr(warnings, "lnet_retry_count set to 0"));
	assert_int_equal(modopts_set_arg(&mo, "lnet.lnet_retry_count=1"), -EINVAL);
	assert_non_null(strstr(mo.err, "no retries while lnet_health_sensitivity is 0"));
	arg_ok(&mo, "lnet.lnet_interfaces_max=4");
	assert_int_equal(mo.g.max_interfaces, 4096);
	assert_non_null(strstr(warnings, "below the minimum"));
	arg_ok(&mo, "lnet.lnet_peer_discovery_disabled=7");
	assert_int_equal(mo.g.discovery, 0);
	arg_ok(&mo, "lnet.lnet_drop_asym_route=2");
	assert_int_equal(mo.g.drop_asym_route, 1);
	arg_ok(&mo, "lnet.router_sensitivity_percentage=80");
	assert_int_equal(mo.g.router_sensitivity, 80);
	arg_ok(&mo, "lnet.lnet_recovery_limit=30");
	assert_int_equal(mo.g.recovery_limit, 30);
	arg_ok(&mo, "lnet.lnet_max_recovery_ping_interval=60");
	assert_int_equal(mo.g.max_recovery_ping_interval, 60);
	arg_ok(&mo, "lnet.lnet_response_tracking=1");
	assert_int_equal(mo.g.response_tracking, 1);
	/* ksocklnd encodings */
	arg_ok(&mo, "ksocklnd.zc_min_payload=100");
	assert_int_equal(mo.sock.zc_min_payload, 2048);
	assert_non_null(strstr(warnings, "raised to 2048"));
	arg_ok(&mo, "ksocklnd.zc_min_payload=-1");
	assert_int_equal(mo.sock.zc_min_payload, -1);
	arg_ok(&mo, "ksocklnd.nagle=0");
	assert_int_equal(mo.sock.nagle, -1);
	arg_ok(&mo, "ksocklnd.enable_csum=5");
	assert_int_equal(mo.sock.enable_csum, 1);
	arg_ok(&mo, "ksocklnd.nonblk_zcack=0");
	assert_int_equal(mo.sock.nonblk_zcack, -1);
	arg_ok(&mo, "ksocklnd.keepalive_idle=-3");
	assert_int_equal(mo.sock.keepalive_idle, -1);
	arg_ok(&mo, "ksocklnd.peer_buffer_credits=-3");
	assert_int_equal(mo.tun.peer_buffer_credits, 0);
	arg_ok(&mo, "lnet.peer_buffer_credits=32");
	assert_int_equal(mo.lnet_peer_buffer_credits, 32);
	arg_ok(&mo, "lnet.avoid_asym_router_failure=0");
	assert_false(mo.rp.avoid_asym_router_failure);
	arg_ok(&mo, "lnet.router_ping_timeout=20");
	assert_int_equal(mo.rp.router_ping_timeout, 20);
	modopts_free(&mo);
}

/* Deprecated no-ops and values ulnet always has: accepted, with a warning
 * for the no-ops; other values refused. */
static void test_noops_and_fixed(void **state)
{
	(void)state;
	struct modopts mo;
	struct modopts before;

	mo_new(&mo);
	before = mo;
	arg_ok(&mo, "lnet.live_router_check_interval=5");
	arg_ok(&mo, "lnet.dead_router_check_interval=5");
	arg_ok(&mo, "lnet.lnet_recovery_interval=whatever");
	arg_ok(&mo, "lnet.use_tcp_bonding=1");
	arg_ok(&mo, "ksocklnd.enable_irq_affinity=1");
	arg_ok(&mo, "ksocklnd.zc_recv=1");
	/* they change nothing */
	assert_memory_equal(&mo.g, &before.g, sizeof(mo.g));
	assert_memory_equal(&mo.rp, &before.rp, sizeof(mo.rp));
	assert_int_equal(mo.rp_set, 0);
	assert_non_null(strstr(warnings, "warn: --module-option: lnet.live_router_check_interval=5: "
				      "deprecated in the kernel"));
	assert_non_null(strstr(warnings, "lnet.lnet_recovery_interval=whatever: deprecated"));
	assert_non_null(strstr(warnings, "lnet.use_tcp_bonding=1: removed"));
	assert_non_null(strstr(warnings, "ksocklnd.zc_recv=1: read by nothing"));
	assert_non_null(strstr(warnings, "; ignored (as the kernel does)"));
	/* skip_mr_route_setup is read by lnetctl's routing setup, as ours */
	assert_false(mo.skip_mr_route_setup);
	arg_ok(&mo, "ksocklnd.skip_mr_route_setup=1");
	assert_true(mo.skip_mr_route_setup);
	/* the kernel parses these as ints: a bad one still fails */
	assert_int_equal(modopts_set_arg(&mo, "lnet.dead_router_check_interval=x"), -EINVAL);
	/* what ulnet always does */
	warnings[0] = '\0';
	arg_ok(&mo, "lnet.auto_down=1");
	arg_ok(&mo, "lnet.accept_timeout=5");
	arg_ok(&mo, "lnet.config_on_load=1");
	arg_ok(&mo, "ksocklnd.round_robin=1");
	arg_ok(&mo, "ksocklnd.eager_ack=0");
	arg_ok(&mo, "ksocklnd.inject_csum_error=0");
	assert_string_equal(warnings, "");
	modopts_free(&mo);
	arg_fails("lnet.auto_down=0", -EOPNOTSUPP, "only auto_down=1");
	arg_fails("lnet.accept_timeout=10", -EOPNOTSUPP, "only accept_timeout=5");
	arg_fails("ksocklnd.round_robin=0", -EOPNOTSUPP, NULL);
	arg_fails("ksocklnd.eager_ack=1", -EOPNOTSUPP, NULL);
	/* the rest of what ulnet does not have */
	static const char *const unsup[] = {
		"lnet.rnet_htable_size=128", "lnet.lock_prim_nid=0",
		"lnet.local_nid_dist_zero=0", "lnet.portal_rotor=1", "lnet.enable_sysctl_setup=1",
		"lnet.cpu_npartitions=2", "ksocklnd.nscheds=4", "ksocklnd.nconnds=2",
		"ksocklnd.nconnds_max=8",
	};

	for (size_t i = 0; i < sizeof(unsup) / sizeof(unsup[0]); i++)
		arg_fails(unsup[i], -EOPNOTSUPP, "not supported by ulnet");
}

/* --- networks= and routes= -------------------------------------------------------- */

static void nets_ok(const char *s, int want, const char *ifaces)
{
	struct modopt_ni nis[MODOPT_MAX_NIS];
	char why[300] = "", got[512] = "";
	int n = -1;

	if (modopts_parse_networks(s, nis, MODOPT_MAX_NIS, &n, why, sizeof(why)) != 0)
		fail_msg("networks='%s': %s", s, why);
	for (int i = 0; i < n; i++) {
		char nb[ULNET_NETSTR_SIZE];

		ulnet_net_format(nis[i].net, nb, sizeof(nb));
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s(%s)", i ? "," : "", nb,
			 nis[i].iface);
	}
	if (n != want || strcmp(got, ifaces) != 0)
		fail_msg("networks='%s': %d NIs '%s', want %d '%s'", s, n, got, want, ifaces);
}

static void nets_fail(const char *s, int rc, const char *want)
{
	struct modopt_ni nis[MODOPT_MAX_NIS];
	char why[300] = "";
	int n;
	int got = modopts_parse_networks(s, nis, MODOPT_MAX_NIS, &n, why, sizeof(why));

	if (got != rc || !strstr(why, want))
		fail_msg("networks='%s': rc %d '%s', want %d '%s'", s, got, why, rc, want);
}

static void test_networks(void **state)
{
	(void)state;
	nets_ok("tcp0(eth0),tcp1(eth1, eth2)", 3, "tcp(eth0),tcp1(eth1),tcp1(eth2)");
	nets_ok(" tcp1 ( eth1 ) , tcp2 ", 2, "tcp1(eth1),tcp2()");
	nets_ok("", 1, "tcp()");               /* the kernel's default */
	nets_ok("tcp", 1, "tcp()");
	nets_ok("lo,tcp3(lo)", 1, "tcp3(lo)"); /* lo is implicit */
	nets_ok("tcp(eth0),", 1, "tcp(eth0)");
	nets_ok("tcp(eth0),tcp(eth1)", 2, "tcp(eth0),tcp(eth1)");
	nets_ok("tcp(eth0:1)", 1, "tcp(eth0:1)"); /* an address label */
	nets_fail("o2ib0(ib0)", -EOPNOTSUPP, "not supported by ulnet: o2ib0");
	nets_fail("tcp[0,1]", -EOPNOTSUPP, "CPT expression");
	nets_fail("tcp(eth0[1])", -EOPNOTSUPP, "CPT expression");
	nets_fail("tcp(eth0", -EINVAL, "'(' without ')'");
	nets_fail("tcp(eth0) tcp1(eth1)", -EINVAL, "unexpected 'tcp1(eth1)' after tcp");
	nets_fail("tcp(eth0,eth0)", -EINVAL, "interface eth0 listed twice");
	nets_fail("tcp()", -EINVAL, "an empty interface name");
	nets_fail("tcp(eth0,)", -EINVAL, "an empty interface name");
	nets_fail("tcp(eth0 eth1)", -EINVAL, "unexpected 'eth1'");
	nets_fail("bogus0(eth0)", -EINVAL, "'bogus0' is not a net");
	nets_fail("lo(eth0)", -EINVAL, "takes no interfaces");
	nets_fail(",tcp", -EINVAL, "a net name expected");
	nets_fail("tcp(averyveryverylongname)", -EINVAL, "longer than 15");
	char many[2048] = "tcp(";

	for (int i = 0; i <= MODOPT_MAX_NIS; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%se%d", i ? "," : "", i);
	strcat(many, ")");
	nets_fail(many, -EINVAL, "more than 64 NIs");

	/* networks= longer than the kernel's limit */
	char *big = malloc(MODOPT_NETWORKS_MAX + 10);

	assert_non_null(big);
	memset(big, ' ', MODOPT_NETWORKS_MAX + 9);
	big[MODOPT_NETWORKS_MAX + 9] = '\0';
	struct modopts mo;

	mo_new(&mo);
	assert_int_equal(modopts_set(&mo, "lnet", "networks", big, "x"), -EINVAL);
	assert_non_null(strstr(mo.err, "longer than 4096 bytes"));
	free(big);
	modopts_free(&mo);
}

/* routes= gives `want`: "NET GW HOPS PRIO;..." */
static void routes_ok(const char *s, const char *want)
{
	struct modopt_route *r = NULL;
	char why[300] = "", got[4096] = "";
	int n = 0;

	if (modopts_parse_routes(s, &r, &n, why, sizeof(why)) != 0)
		fail_msg("routes='%s': %s", s, why);
	for (int i = 0; i < n; i++) {
		char nb[ULNET_NETSTR_SIZE];

		ulnet_net_format(r[i].net, nb, sizeof(nb));
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s %s %d %u", i ? ";" : "",
			 nb, nid(&r[i].gw), r[i].hops, r[i].priority);
	}
	free(r);
	if (strcmp(got, want) != 0)
		fail_msg("routes='%s': '%s', want '%s'", s, got, want);
}

static void routes_fail(const char *s, const char *want)
{
	struct modopt_route *r = NULL;
	char why[300] = "";
	int n = 0;
	int rc = modopts_parse_routes(s, &r, &n, why, sizeof(why));

	free(r);
	if (rc != -EINVAL || !strstr(why, want))
		fail_msg("routes='%s': rc %d '%s', want -22 '%s'", s, rc, why, want);
}

static void test_routes(void **state)
{
	(void)state;
	routes_ok("tcp1 192.168.1.1@tcp", "tcp1 192.168.1.1@tcp -1 0");
	routes_ok("o2ib 2 10.0.0.[1-3]@tcp:1",
		  "o2ib 10.0.0.1@tcp 2 1;o2ib 10.0.0.2@tcp 2 1;o2ib 10.0.0.3@tcp 2 1");
	/* a NID without '@' is on tcp (sanity-lnet test 255's form) */
	routes_ok("o2ib 10.73.0.[5-6]", "o2ib 10.73.0.5@tcp -1 0;o2ib 10.73.0.6@tcp -1 0");
	/* nets expand too, times every gateway; several gateways */
	routes_ok("tcp[1-2] 10.0.0.1 10.0.0.2@tcp3:5",
		  "tcp1 10.0.0.1@tcp -1 0;tcp1 10.0.0.2@tcp3 -1 5;"
		  "tcp2 10.0.0.1@tcp -1 0;tcp2 10.0.0.2@tcp3 -1 5");
	/* separators, comments, a stride, text items, two brackets */
	routes_ok("tcp1 1.2.3.4@tcp # a comment; tcp2 1.2.3.5@tcp\ntcp3 1.2.[1-5/2].9@tcp\r\n",
		  "tcp1 1.2.3.4@tcp -1 0;tcp2 1.2.3.5@tcp -1 0;tcp3 1.2.1.9@tcp -1 0;"
		  "tcp3 1.2.3.9@tcp -1 0;tcp3 1.2.5.9@tcp -1 0");
	routes_ok("[tcp,o2ib]5 1.2.3.[1,7]@tcp", "tcp5 1.2.3.1@tcp -1 0;tcp5 1.2.3.7@tcp -1 0;"
		  "o2ib5 1.2.3.1@tcp -1 0;o2ib5 1.2.3.7@tcp -1 0");
	/* a second word that is not a hop count (1..255) is a gateway */
	routes_fail("tcp1 256 1.2.3.4@tcp", "'256@tcp' is not a NID");
	routes_ok("", "");
	routes_ok(" ; # nothing\n", "");
	/* IPv6: the priority follows the net */
	routes_ok("tcp1 2001:db8::1@tcp:4", "tcp1 2001:db8::1@tcp -1 4");
	routes_fail("tcp1", "a route needs a net and a gateway");
	routes_fail("tcp1 3", "a route needs a net and a gateway");
	routes_fail("lo 1.2.3.4@tcp", "a loopback net");
	routes_fail("bogus 1.2.3.4@tcp", "'bogus' is not a net");
	routes_fail("tcp1 0@lo", "0@lo cannot be a gateway");
	routes_fail("tcp1 1.2.3.4@tcp:x", "bad priority");
	routes_fail("tcp1 1.2.3.4@tcp:", "bad priority");
	routes_fail("tcp1 1.2.3.[1-4/2]@tcp", "bad range '1-4/2'");
	routes_fail("tcp1 1.2.3.[4-1]@tcp", "bad range");
	routes_fail("tcp1 1.2.3.[1-3x]@tcp", "bad range");
	routes_fail("tcp1 1.2.3.[1,,2]@tcp", "an empty item");
	routes_fail("tcp1 1.2.3.[1-2@tcp", "'[' without ']'");
	routes_fail("tcp1 1.2.[0-255].[0-255]@tcp", "expands to more than 4096 routes");
	routes_fail("tcp1 1.2.3.[0-99999999999999999999]@tcp", "bad range");
	routes_fail("tcp1 nonsense@tcp", "in 'tcp1 nonsense@tcp': 'nonsense@tcp' is not a NID");
}

static void test_finish(void **state)
{
	(void)state;
	struct modopts mo;

	mo_new(&mo);
	assert_int_equal(text(&mo, "options ksocklnd peer_credits=512\n"), 0);
	assert_int_equal(modopts_finish(&mo), -EINVAL);
	assert_non_null(strstr(mo.err, "f.conf:1: ksocklnd.peer_credits: peer_credits 512 exceeds credits 256"));
	arg_ok(&mo, "ksocklnd.credits=1024");
	assert_int_equal(modopts_finish(&mo), 0);
	arg_ok(&mo, "ksocklnd.peer_credits=4");
	arg_ok(&mo, "ksocklnd.credits=2");
	assert_int_equal(modopts_finish(&mo), -EINVAL);
	assert_non_null(strstr(mo.err, "--module-option: ksocklnd.peer_credits: peer_credits 4 exceeds credits 2"));
	arg_ok(&mo, "ksocklnd.credits=4");
	assert_int_equal(modopts_finish(&mo), 0);
	/* a bulk port of its own (ulnet used to refuse it): taken as given */
	assert_int_equal(text(&mo, "options lnet accept_port_bulk=989\n"), 0);
	assert_int_equal(modopts_finish(&mo), 0);
	assert_int_equal(mo.accept_port_bulk, 989);
	arg_ok(&mo, "lnet.accept_port=989");
	assert_int_equal(modopts_finish(&mo), 0);
	arg_ok(&mo, "ksocklnd.max_reconnectms=500");
	assert_int_equal(modopts_finish(&mo), -EINVAL);
	assert_non_null(strstr(mo.err, "ksocklnd.max_reconnectms: 500 is below min_reconnectms (1000)"));
	arg_ok(&mo, "ksocklnd.min_reconnectms=100");
	assert_int_equal(modopts_finish(&mo), 0);
	modopts_free(&mo);
}

/* ip2nets=: the kernel's string, its syntax checked when it is set (every
 * entry, FILE:LINE in the error), matched when LNet is configured; not
 * with a networks= that names nets. */
static void test_ip2nets(void **state)
{
	(void)state;
	struct modopts mo;

	mo_new(&mo);
	assert_int_equal(text(&mo, "options lnet networks=\"\" ip2nets=\"tcp0(eth0) 10.0.0.*; "
			      "tcp1(eth1) 192.168.[1-4].*  # the other rack\"\n"
			      "options lnet ip2nets=\"tcp0(eth0) 10.0.0.*; o2ib 192.168.*.*\"\n"), 0);
	/* a later setting replaces an earlier one */
	assert_string_equal(mo.ip2nets, "tcp0(eth0) 10.0.0.*; o2ib 192.168.*.*");
	assert_string_equal(mo.ip2nets_where, "f.conf:2");
	assert_int_equal(modopts_finish(&mo), 0);
	/* networks="" is the kernel's "not set": with ip2nets, fine; naming
	 * nets, not (the kernel's lnet_get_networks) */
	arg_ok(&mo, "lnet.networks=tcp(eth0)");
	assert_int_equal(modopts_finish(&mo), -EINVAL);
	assert_non_null(strstr(mo.err, "f.conf:2: lnet.ip2nets: networks= is set too (--module-option)"));
	assert_non_null(strstr(mo.err, "(errno -22)"));
	/* ip2nets="" is no ip2nets */
	arg_ok(&mo, "lnet.ip2nets=");
	assert_null(mo.ip2nets);
	assert_int_equal(modopts_finish(&mo), 0);
	modopts_free(&mo);

	/* bad values: where, the parameter, why */
	arg_fails("lnet.ip2nets=\"tcp 10.0.0.0/24\"", -EINVAL,
		  "--module-option: lnet.ip2nets: entry 1 (tcp): bad IP pattern '10.0.0.0/24': an IPv4 "
		  "range takes no prefix length");
	arg_fails("lnet.ip2nets=tcp(eth0 10.0.0.1", -EINVAL, "'(' without ')' after tcp");
	arg_fails("lnet.ip2nets=tcp 10.0.0.1;tpc 10.0.0.2", -EINVAL, "entry 2: 'tpc' is not a net");
	arg_fails("lnet.ip2nets=tcp 2001:db8::1", -EINVAL, "IPv4 patterns only");
	text_fails("\n\noptions lnet ip2nets=\"tcp,tcp0 1.2.3.4\"", -EINVAL,
		   "f.conf:3: lnet.ip2nets: entry 1: net tcp0 named twice", "(errno -22)", NULL);
}

/* --- on a node ------------------------------------------------------------------- */

static const char node_opts[] =
	"options lnet networks=\"tcp9(lo)\" accept=none\n"
	"options lnet routes=\"tcp10 127.0.9.[20-21]@tcp9:3; tcp11 2 127.0.9.30@tcp9; "
	"tcp12 127.0.9.40@tcp77\"\n"
	"options lnet forwarding=enabled small_router_buffers=500 alive_router_check_interval=0\n"
	"options lnet lnet_transaction_timeout=60 lnet_retry_count=1 lnet_peer_discovery_disabled=1\n"
	"options ksocklnd peer_credits=16 sock_timeout=77 conns_per_peer=3\n";

struct node {
	struct modopts mo;
	struct ctl_ctx ctx;
	struct ctl_reply rp;
};

static void node_start(struct node *n, const char *opts)
{
	struct ulnet_opts o;
	char err[MODOPT_ERR_MAX];

	mo_new(&n->mo);
	assert_int_equal(text(&n->mo, opts), 0);
	assert_int_equal(modopts_finish(&n->mo), 0);
	memset(&o, 0, sizeof(o));
	o.flags = ULNET_OPT_MANUAL_PROGRESS;
	o.log = capture;
	o.log_level = ULNET_LOG_WARN;
	assert_int_equal(ctl_ctx_init(&n->ctx, &o, true), 0);
	n->ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&n->rp);
	assert_int_equal(modopts_load(&n->ctx, &n->mo), 0);
	if (modopts_configure(&n->ctx, true, err, sizeof(err)) != 0)
		fail_msg("configure: %s", err);
}

static void node_stop(struct node *n)
{
	ctl_reply_free(&n->rp);
	ctl_ctx_fini(&n->ctx);
	modopts_free(&n->mo);
}

static void check_node(struct node *n)
{
	struct ctl_ctx *ctx = &n->ctx;
	struct ctl_reply *rp = &n->rp;
	struct ulnet_router_params rp_now;

	/* networks=: 127.0.0.1 is lo's address; ksocklnd's defaults on it */
	ctl_run_expect(ctx, rp, "net show -v --net tcp9", 0, NULL);
	ctl_has(&rp->out, "nid: 127.0.0.1@tcp9", "net show");
	ctl_has(&rp->out, "0: lo", "net show");
	ctl_has(&rp->out, "peer_credits: 16", "net show");
	ctl_has(&rp->out, "conns_per_peer: 3", "net show");
	ctl_has(&rp->out, "timeout: 77", "net show");
	/* routes=: expanded; the one with no NI on its gateway's net skipped */
	ctl_run_expect(ctx, rp, "route show -v", 0,
		       "route:\n"
		       "-     net: tcp10\n      gateway: 127.0.9.20@tcp9\n      hop: -1\n"
		       "      priority: 3\n      state: up\n      type: multi-hop\n"
		       "-     net: tcp10\n      gateway: 127.0.9.21@tcp9\n      hop: -1\n"
		       "      priority: 3\n      state: up\n      type: multi-hop\n"
		       "-     net: tcp11\n      gateway: 127.0.9.30@tcp9\n      hop: 2\n"
		       "      priority: 0\n      state: up\n      type: multi-hop\n");
	/* forwarding=enabled: at once; the small pool as set */
	ctl_run_expect(ctx, rp, "routing show", 0, NULL);
	ctl_has(&rp->out, "    - enable: 1\nbuffers:\n    tiny: 2048\n    small: 500\n    large: 1024\n",
		"routing show");
	ctl_run_expect(ctx, rp, "global show", 0, NULL);
	ctl_has(&rp->out, "    discovery: 0\n", "global show");
	ctl_has(&rp->out, "    retry_count: 1\n    transaction_timeout: 60\n", "global show");
	assert_int_equal(ulnet_router_params_get(ctx->ln, &rp_now), 0);
	assert_int_equal(rp_now.alive_router_check_interval, 0);
	assert_int_equal(rp_now.router_ping_timeout, 50);
}

static void test_on_a_node(void **state)
{
	(void)state;
	struct node *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	node_start(n, node_opts);
	assert_non_null(strstr(warnings, "f.conf:2: lnet.routes: route to tcp12 through "
				      "127.0.9.40@tcp77 skipped (as the kernel does): no NI of ours"));
	check_node(n);
	/* a later NI takes the ksocklnd defaults where it sets nothing */
	ctl_run_expect(&n->ctx, &n->rp, "net add --nid 127.0.0.1@tcp8 --peer-credits 4", 0, "");
	ctl_run_expect(&n->ctx, &n->rp, "net show -v --net tcp8", 0, NULL);
	ctl_has(&n->rp.out, "peer_credits: 4", "net show tcp8");
	ctl_has(&n->rp.out, "conns_per_peer: 3", "net show tcp8");

	/* "lnet configure" brings only 0@lo back, with the globals; "--all"
	 * the module parameters' networks, routes and forwarding */
	ctl_run_expect(&n->ctx, &n->rp, "lnet unconfigure", 0, "");
	ctl_run_expect(&n->ctx, &n->rp, "lnet configure", 0, "");
	ctl_run_expect(&n->ctx, &n->rp, "net show --net tcp9", 0, "");
	ctl_run_expect(&n->ctx, &n->rp, "route show", 0, "");
	ctl_run_expect(&n->ctx, &n->rp, "global show", 0, NULL);
	ctl_has(&n->rp.out, "    transaction_timeout: 60\n", "global show after configure");
	ctl_run_expect(&n->ctx, &n->rp, "lnet unconfigure", 0, "");
	ctl_run_expect(&n->ctx, &n->rp, "lnet configure --all", 0, "");
	check_node(n);
	node_stop(n);
	free(n);
}

/* ko2iblnd's parameters on a node: an o2ib NI added later (net add)
 * takes them, and net show -v prints them (the o2ib LND a stand-in: no
 * RDMA here); a tcp NI does not. */
static void test_o2ib_on_a_node(void **state)
{
	(void)state;
	struct ulnet_opts o;
	struct modopts mo;
	struct ctl_ctx ctx;
	struct ctl_reply rp;

	mo_new(&mo);
	assert_int_equal(text(&mo, "options ko2iblnd cksum=1 service=18515 timeout=20 "
				   "keepalive=0 ntx=1024 peer_credits=16 concurrent_sends=20 "
				   "peer_credits_hiw=10 tos=32 retry_count=7\n"), 0);
	assert_int_equal(modopts_finish(&mo), 0);
	memset(&o, 0, sizeof(o));
	o.flags = ULNET_OPT_MANUAL_PROGRESS;
	o.log = capture;
	o.log_level = ULNET_LOG_WARN;
	assert_int_equal(ctl_ctx_init(&ctx, &o, true), 0);
	ctx.skip_mr_route_setup = true;
	fake_o2ib_install(ctx.ln);
	fake_o2ib_started = 0;
	ctl_reply_init(&rp);
	assert_int_equal(modopts_load(&ctx, &mo), 0);
	ctl_run_expect(&ctx, &rp, "net add --nid 127.0.0.1@o2ib --if lo", 0, "");
	assert_int_equal(fake_o2ib_started, 1);
	assert_int_equal(fake_o2ib_seen.o2ib.cksum, 1);
	assert_int_equal(fake_o2ib_seen.o2ib.service, 18515);
	assert_int_equal(fake_o2ib_seen.o2ib.keepalive, -1);
	assert_int_equal(fake_o2ib_seen.o2ib.retry_count, 7);
	assert_int_equal(fake_o2ib_seen.tun.peer_credits, 16);
	ctl_run_expect(&ctx, &rp, "net show -v --net o2ib", 0, NULL);
	ctl_has(&rp.out, "peer_credits: 16", "net show o2ib");
	ctl_has(&rp.out, "peercredits_hiw: 10", "net show o2ib");
	ctl_has(&rp.out, "concurrent_sends: 20", "net show o2ib");
	ctl_has(&rp.out, "ntx: 1024", "net show o2ib");
	ctl_has(&rp.out, " timeout: 20", "net show o2ib");
	ctl_has(&rp.out, "tos: 32", "net show o2ib");
	/* the NI's own setting wins */
	ctl_run_expect(&ctx, &rp, "net add --nid 127.0.0.2@o2ib1 --peer-credits 8 --tos 4", 0, "");
	assert_int_equal(fake_o2ib_started, 2);
	assert_int_equal(fake_o2ib_seen.tun.peer_credits, 8);
	assert_int_equal(fake_o2ib_seen.tun.tos, 4);
	assert_int_equal(fake_o2ib_seen.o2ib.ntx, 1024);
	/* not a tcp NI's */
	ctl_run_expect(&ctx, &rp, "net add --nid 127.0.0.3@tcp7 --accept none", 0, "");
	ctl_run_expect(&ctx, &rp, "net show -v --net tcp7", 0, NULL);
	ctl_has(&rp.out, "peer_credits: 8", "net show tcp7");
	ctl_has(&rp.out, "tos: -1", "net show tcp7");
	ctl_reply_free(&rp);
	ctl_ctx_fini(&ctx);
	modopts_free(&mo);
}

/* A gateway that is one of our NIDs makes a router (forwarding= unset);
 * forwarding=disabled does not forward even then. */
static void test_router_by_route(void **state)
{
	(void)state;
	struct node *n = calloc(1, sizeof(*n));
	struct ulnet_routing_info ri;

	assert_non_null(n);
	node_start(n, "options lnet networks=tcp9(lo) accept=none "
		      "routes=\"tcp10 127.0.0.1@tcp9; tcp11 127.0.9.50@tcp9\"\n");
	assert_int_equal(ulnet_routing_info(n->ctx.ln, &ri), 0);
	assert_int_equal(ri.state, ULNET_ROUTING_ENABLED);
	/* the route through ourselves is not added */
	ctl_run_expect(&n->ctx, &n->rp, "route show", 0,
		       "route:\n-     net: tcp11\n      gateway: 127.0.9.50@tcp9\n");
	node_stop(n);

	memset(n, 0, sizeof(*n));
	node_start(n, "options lnet networks=tcp9(lo) accept=none forwarding=disabled "
		      "routes=\"tcp10 127.0.0.1@tcp9\"\n");
	assert_int_equal(ulnet_routing_info(n->ctx.ln, &ri), 0);
	assert_int_equal(ri.state, ULNET_ROUTING_DISABLED);
	node_stop(n);
	free(n);
}

/* Whether something listens on ip:port (a connect() that completes; the
 * node runs no progress here, the backlog takes it). */
static bool listening(const char *ip, unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return rc == 0;
}

/* lnet.accept_port_bulk: the tcp NIs added afterwards listen on it beside
 * accept_port (and dial their bulk connections there: test_ctl_conn,
 * test_socklnd_bulk_port); an NI's own --accept-port-bulk wins. */
static void test_accept_port_bulk(void **state)
{
	(void)state;
	struct node *n = calloc(1, sizeof(*n));
	unsigned p = 20000u + ((unsigned)getpid() * 11u + 5u) % 30000u;
	char opts[160], line[160];

	assert_non_null(n);
	snprintf(opts, sizeof(opts), "options lnet accept=all accept_port=%u accept_port_bulk=%u\n",
		 p, p + 1);
	node_start(n, opts);
	assert_int_equal(n->ctx.accept_port, p);
	assert_int_equal(n->ctx.accept_port_bulk, p + 1);
	assert_false(listening("127.0.9.5", p + 1));
	ctl_run_expect(&n->ctx, &n->rp, "net add --nid 127.0.9.5@tcp8", 0, "");
	assert_true(listening("127.0.9.5", p));
	assert_true(listening("127.0.9.5", p + 1));
	assert_false(listening("127.0.9.5", p + 2));
	/* the NI's own bulk port over the module parameter */
	snprintf(line, sizeof(line), "net add --nid 127.0.9.6@tcp8 --accept-port-bulk %u", p + 2);
	ctl_run_expect(&n->ctx, &n->rp, line, 0, "");
	assert_true(listening("127.0.9.6", p));
	assert_true(listening("127.0.9.6", p + 2));
	assert_false(listening("127.0.9.6", p + 1));
	/* out of range, as --accept-port */
	assert_int_equal(ctl_run_line(&n->ctx, &n->rp, NULL, 0,
				      "net add --nid 127.0.9.7@tcp8 --accept-port-bulk 65536"), 234);
	ctl_has(&n->rp.err, "invalid value for --accept-port-bulk: '65536'", "--accept-port-bulk 65536");
	/* the NI goes: both its ports close */
	ctl_run_expect(&n->ctx, &n->rp, "net del --nid 127.0.9.5@tcp8", 0, "");
	assert_false(listening("127.0.9.5", p));
	assert_false(listening("127.0.9.5", p + 1));
	node_stop(n);
	free(n);
}

/* An interface that is not there fails the whole configuration, naming
 * where networks= was set. */
/* ip2nets= that matches no address of the node stops the start, as the
 * kernel's LNetNIInit fails; a loopback address never matches. */
static void test_ip2nets_no_match(void **state)
{
	(void)state;
	struct node *n = calloc(1, sizeof(*n));
	char err[MODOPT_ERR_MAX];
	struct ulnet_opts o;

	assert_non_null(n);
	mo_new(&n->mo);
	assert_int_equal(text(&n->mo, "options lnet accept=none\n"
			      "options lnet ip2nets=\"tcp(lo) 127.0.0.*; tcp1 255.255.255.254\"\n"), 0);
	assert_int_equal(modopts_finish(&n->mo), 0);
	memset(&o, 0, sizeof(o));
	o.flags = ULNET_OPT_MANUAL_PROGRESS;
	assert_int_equal(ctl_ctx_init(&n->ctx, &o, true), 0);
	n->ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&n->rp);
	assert_int_equal(modopts_load(&n->ctx, &n->mo), 0);
	assert_int_equal(modopts_configure(&n->ctx, true, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "f.conf:2: lnet.ip2nets: does not match any local IP interface"));
	assert_non_null(strstr(err, "(errno -2)"));
	ctl_run_expect(&n->ctx, &n->rp, "lnet unconfigure", 0, "");
	assert_int_equal(ctl_run_line(&n->ctx, &n->rp, NULL, 0, "lnet configure --all"), 234);
	ctl_has(&n->rp.err, "lnet.ip2nets: does not match", "lnet configure --all");
	node_stop(n);
	free(n);
}

static void test_bad_interface(void **state)
{
	(void)state;
	struct node *n = calloc(1, sizeof(*n));
	char err[MODOPT_ERR_MAX];
	struct ulnet_opts o;

	assert_non_null(n);
	mo_new(&n->mo);
	assert_int_equal(text(&n->mo, "\noptions lnet networks=tcp(nosuch0)\n"), 0);
	memset(&o, 0, sizeof(o));
	o.flags = ULNET_OPT_MANUAL_PROGRESS;
	assert_int_equal(ctl_ctx_init(&n->ctx, &o, true), 0);
	n->ctx.skip_mr_route_setup = true;   /* never the host's routing */
	ctl_reply_init(&n->rp);
	assert_int_equal(modopts_load(&n->ctx, &n->mo), 0);
	assert_int_equal(modopts_configure(&n->ctx, true, err, sizeof(err)), -ENETDOWN);
	assert_non_null(strstr(err, "f.conf:2: lnet.networks: tcp(nosuch0): no IPv4 address on "
				    "interface nosuch0 (errno -100)"));
	/* and "lnet configure --all" says it too */
	ctl_run_expect(&n->ctx, &n->rp, "lnet unconfigure", 0, "");
	assert_int_equal(ctl_run_line(&n->ctx, &n->rp, NULL, 0, "lnet configure --all"), 234);
	ctl_has(&n->rp.err, "lnet.networks: tcp(nosuch0)", "lnet configure --all");
	node_stop(n);
	free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_syntax),
		cmocka_unit_test(test_quoting_and_continuation),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_noops_and_fixed),
		cmocka_unit_test(test_networks),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_ip2nets),
		cmocka_unit_test(test_on_a_node),
		cmocka_unit_test(test_router_by_route),
		cmocka_unit_test(test_ip2nets_no_match),
		cmocka_unit_test(test_bad_interface),
		cmocka_unit_test(test_accept_port_bulk),
		cmocka_unit_test(test_o2ib_effect),
		cmocka_unit_test(test_o2ib_refusals),
		cmocka_unit_test(test_o2ib_on_a_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
