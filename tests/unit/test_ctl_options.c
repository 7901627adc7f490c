/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_options.c - the walk: no option or YAML key is accepted and
 * silently ignored.
 *
 * It walks the real tables: every command of the command tree
 * (ctl_cmd_root(), groups recursively) and each of its options, and every
 * key of every section of import's schema (ctl_import_schema(), the tables
 * the parsers look keys up in). Each must have a probe below, or the test
 * fails naming it; a probe that names no option or key of the tables fails
 * it too. Every probe runs on fresh in-process nodes (ctl_run() on a real
 * instance, 127.0.21.x, high ports, no root):
 *
 *   EFFECT   the line with the option and the line without it, each on
 *            fresh nodes after the same setup, then the same check lines:
 *            `want` is in the transcript (exit codes, stdout, stderr) of the
 *            run with it and not in the other ("!x": the reverse)
 *   OUTPUT   the same, for an option that changes what is printed only
 *            (--verbose, --backup, import --show)
 *   REFUSED  with it the command fails, errno -95 naming it; the line
 *            without it (when given) succeeds
 *   ALWAYS   what the option asks for is always so in ulnet (lnet
 *            configure --large): with and without alike, `want` in both
 *   NOOP     documented as printing the same (global show --verbose, as
 *            lnetctl's, which has no verbose form): with and without alike,
 *            and the command's help says so (`want`)
 *   CHECKED  (YAML) only ulnet's own value is taken (CPT "[0]"): `base`
 *            with it succeeds, `with` another is refused, -95 naming it
 *   ELSEWHERE what it does cannot be seen by an unprivileged in-process
 *            node without touching the host (the Multi-Rail routing
 *            setup: root, ip(8), the routing tables): both lines succeed,
 *            and `want`, a test file under $ULNET_SRC, uses the option
 *   STATE    (YAML) the node's own state that export or a show writes:
 *            `want` (that command) prints the key on a node the base line
 *            configured, and importing it changes nothing (with and
 *            without alike) - so an export imports again
 *
 * Each line's words are checked: the line "with" holds the option (--name)
 * or key ("key:") more often than the line without, so a probe cannot
 * prove one option with another. --help and -h of every command print its
 * help (exit 0, nothing on stderr); a made-up key in every section is
 * refused. What fault show does not print of a rule is seen in what it
 * does to a ping (random, drop_all, health_error, local_nid), but for
 * --seed: the probe reads the rule the node keeps (ulnet_fault_list()),
 * and test_fault.c test_seed_reproducible shows the core replays a seed.
 *
 * test_combinations: an option another makes meaningless is refused, and
 * of two that exclude each other the last wins (lnetctl's option loops).
 *
 * Lines: "B:" runs on a second node; "$P" and "$Q" are two free ports of
 * the probe; "@" lines are the test's own: "@timed LINE" (adds "took under
 * 2 s" or "took at least 2 s"),
 * "@listen HOST PORT" (a socket that never accepts), "@connect HOST PORT",
 * "@fault drop|delay" (every field of the rules the node keeps, as
 * ulnet_fault_list() gives them), "@modparams" + YAML (the --config text of
 * lnet configure --all), "@accept_port N" (ulnetd --accept-port), "@o2ib"
 * (a stand-in for the o2ib LND, tests/support/fake_o2ib.h: o2ib NIs come
 * up without RDMA, and show the tunables the real LND resolves). An
 * import line is "import [OPTS] FILE" then, after a newline, the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl_cmds.h"
#include "ctl_cmds_int.h"
#include "ctl_import_int.h"
#include "ctl_test.h"
#include "fake_o2ib.h"
#include "ulnet/fault.h"

enum kind { EFFECT, OUTPUT, REFUSED, ALWAYS, NOOP, CHECKED, STATE, ELSEWHERE, NKINDS };
static const char *const kind_name[NKINDS] = { "effect", "output", "refused", "always",
					       "noop", "checked", "state", "elsewhere" };

struct probe {
	const char *at;            /* "net add --peer-credits", "yaml net/local NI(s)/status" */
	enum kind kind;
	const char *const *setup;  /* run first on fresh nodes; each must succeed */
	const char *base;          /* the line without the option or key */
	const char *with;          /* the line with it */
	const char *const *check;  /* run after; their transcript is compared too */
	const char *want;
};

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* What failed: every probe runs, the test fails at the end with them all. */
static struct ybuf fails;
static int nfails;

static void __attribute__((format(printf, 1, 2))) failf(const char *fmt, ...)
{
	va_list ap;
	char buf[16384];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ybuf_printf(&fails, "### %s\n", buf);
	nfails++;
}

#define SETUP_FAILED (-1000)

/* --- the nodes of one side of a probe ------------------------------------------------ */

#define MAX_LISTEN 4

struct side {
	struct ctl_fix a, b;
	bool have_b;
	int port, port2;
	int lfd[MAX_LISTEN];
	int nl;
	struct ybuf tr;    /* the transcript */
	const char *at;
};

static void side_init(struct side *s, const char *at, int port, int port2)
{
	memset(s, 0, sizeof(*s));
	s->at = at;
	s->port = port;
	s->port2 = port2;
	ybuf_init(&s->tr);
	if (ctl_fix_init(&s->a, NULL, NULL) < 0)
		fail_msg("%s: cannot start a node", at);
}

static void side_fini(struct side *s)
{
	for (int i = 0; i < s->nl; i++)
		close(s->lfd[i]);
	if (s->have_b)
		ctl_fix_fini(&s->b);
	ctl_fix_fini(&s->a);
	ybuf_free(&s->tr);
}

static struct ctl_fix *side_node_b(struct side *s)
{
	if (!s->have_b) {
		if (ctl_fix_init(&s->b, NULL, NULL) < 0)
			fail_msg("%s: cannot start node B", s->at);
		s->have_b = true;
	}
	return &s->b;
}

/* `in` with $P and $Q replaced by the side's ports. */
static char *subst(const struct side *s, const char *in)
{
	struct ybuf b;

	ybuf_init(&b);
	for (const char *p = in; *p; p++) {
		if (p[0] == '$' && (p[1] == 'P' || p[1] == 'Q')) {
			ybuf_printf(&b, "%d", p[1] == 'P' ? s->port : s->port2);
			p++;
		} else {
			ybuf_add(&b, p, 1);
		}
	}
	ybuf_add(&b, "", 0);
	return b.s ? b.s : calloc(1, 1);
}

/* Whether `port` can be bound on 127.0.21.`host`. */
static bool port_free_on(int host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(0x7f001500u | (uint32_t)host) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A TCP port free on every address the probes listen on (127.0.21.x, a
 * subnet no other test uses): one the kernel gives, checked there. */
static int free_port(void)
{
	static const int hosts[] = { 2, 3, 4, 77 };

	for (int tries = 0; tries < 100; tries++) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(0x7f001502u) };
		socklen_t len = sizeof(sa);
		int fd = socket(AF_INET, SOCK_STREAM, 0), port;
		bool ok = true;

		assert_true(fd >= 0);
		assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
		port = ntohs(sa.sin_port);
		close(fd);
		for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
			ok &= port_free_on(hosts[i], port);
		if (ok)
			return port;
	}
	fail_msg("no TCP port free on 127.0.21.x");
	return -1;
}

static bool parse_addr(const char *host, const char *port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(port));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1;
}

/* "@listen HOST PORT": a socket that listens and never accepts (a peer
 * that takes the connection and never answers). */
static int at_listen(struct side *s, const char *host, const char *port)
{
	struct sockaddr_in sa;
	int one = 1, fd;

	if (s->nl == MAX_LISTEN || !parse_addr(host, port, &sa))
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	s->lfd[s->nl++] = fd;
	return 0;
}

/* "@connect HOST PORT": whether a TCP connection is taken (1 s bound). */
static bool at_connect(const char *host, const char *port)
{
	struct sockaddr_in sa;
	struct pollfd pfd;
	int fd, err = 0;
	socklen_t el = sizeof(err);
	bool ok = false;

	if (!parse_addr(host, port, &sa))
		return false;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		ok = true;
	} else if (errno == EINPROGRESS) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		ok = poll(&pfd, 1, 1000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
		     err == 0;
	}
	close(fd);
	return ok;
}

/* "@fault drop|delay": every field of every rule, as the node keeps it. */
static void at_fault(struct ctl_fix *f, const char *kind, struct ybuf *out)
{
	enum ulnet_fault_kind k = strcmp(kind, "delay") == 0 ? ULNET_FAULT_DELAY : ULNET_FAULT_DROP;
	struct ulnet_fault_rule r;
	struct ulnet_fault_stats st;
	char b1[ULNET_NIDSTR_SIZE], b2[ULNET_NIDSTR_SIZE], b3[ULNET_NIDSTR_SIZE];

	for (int i = 0; f->ctx.ln && ulnet_fault_list(f->ctx.ln, k, i, &r, &st) == 0; i++)
		ybuf_printf(out, "rule %d: src %s dst %s local %s portal_mask %#llx msg_mask %#x "
			    "rate %u interval %u latency %u random %d drop_all %d "
			    "health_error_mask %#x seed %llu\n",
			    i, ulnet_nid_str(&r.src, b1), ulnet_nid_str(&r.dst, b2),
			    ulnet_nid_str(&r.local, b3), (unsigned long long)r.portal_mask,
			    r.msg_mask, r.rate, r.interval, r.latency, r.random, r.drop_all,
			    r.health_error_mask, (unsigned long long)r.seed);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Split `cmd` at spaces, "double quotes" keeping a word whole. */
static int split_words(char *cmd, char **argv, int max)
{
	int argc = 0;
	char *p = cmd;

	while (*p && argc < max - 1) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (*p == '"') {
			argv[argc++] = ++p;
			while (*p && *p != '"')
				p++;
		} else {
			argv[argc++] = p;
			while (*p && *p != ' ')
				p++;
		}
		if (*p)
			*p++ = '\0';
	}
	argv[argc] = NULL;
	return argc;
}

/*
 * Run one line on the side's nodes; its exit code, stdout and stderr go to
 * the transcript. Returns the exit code (the test's own lines: 0, or 1
 * when they could not do what they say).
 */
static int run_line(struct side *s, const char *line_in)
{
	char *line = subst(s, line_in), *blob = NULL, *words = line;
	struct ctl_fix *f = &s->a;
	char *argv[64];
	int argc, rc = 0;

	if (strncmp(words, "B:", 2) == 0) {
		f = side_node_b(s);
		words += 2;
	}
	if (strncmp(words, "@timed ", 7) == 0) {
		double t0 = now_s();

		rc = run_line(s, words + 7);
		ybuf_printf(&s->tr, "took %s 2 s\n", now_s() - t0 < 2 ? "under" : "at least");
		free(line);
		return rc;
	}
	char *nl = strchr(words, '\n');

	if (nl) {
		*nl = '\0';
		blob = nl + 1;
	}
	if (words[0] == '@') {
		argc = split_words(words, argv, 64);
		if (strcmp(argv[0], "@listen") == 0 && argc == 3) {
			rc = at_listen(s, argv[1], argv[2]) < 0;
		} else if (strcmp(argv[0], "@connect") == 0 && argc == 3) {
			ybuf_printf(&s->tr, "connect: %s\n", at_connect(argv[1], argv[2]) ? "ok" : "failed");
		} else if (strcmp(argv[0], "@fault") == 0 && argc == 2) {
			at_fault(f, argv[1], &s->tr);
		} else if (strcmp(argv[0], "@modparams") == 0 && blob) {
			rc = ctl_ctx_set_modparams(&f->ctx, "modparams.yaml", blob, strlen(blob)) < 0;
		} else if (strcmp(argv[0], "@accept_port") == 0 && argc == 2) {
			f->ctx.accept_port = (uint16_t)atoi(argv[1]);
		} else if (strcmp(argv[0], "@o2ib") == 0 && argc == 1) {
			fake_o2ib_install(f->ctx.ln);
		} else {
			fail_msg("%s: unknown test line '%s'", s->at, line_in);
		}
		free(line);
		return rc;
	}
	argc = split_words(words, argv, 64);
	ctl_reply_free(&f->rp);
	ctl_reply_init(&f->rp);
	ctl_run(&f->ctx, argc, argv, blob, blob ? strlen(blob) : 0, &f->rp);
	rc = f->rp.rc;
	ybuf_printf(&s->tr, "rc=%d\n--- out\n%s--- err\n%s", rc, ybuf_str(&f->rp.out),
		    ybuf_str(&f->rp.err));
	free(line);
	return rc;
}

/* One side: fresh nodes, the setup (each line must succeed), `line`, the
 * check lines. Returns `line`'s exit code; *tr gets the transcript of
 * `line` and the checks (to free). */
static int run_side(const struct probe *pr, const char *line, int port, int port2, char **tr)
{
	struct side s;
	int rc;

	side_init(&s, pr->at, port, port2);
	for (const char *const *l = pr->setup; l && *l; l++) {
		if (run_line(&s, *l) != 0) {
			failf("%s: setup line '%s' failed:\n%s", pr->at, *l, ybuf_str(&s.tr));
			side_fini(&s);
			*tr = strdup("");
			return SETUP_FAILED;
		}
		ybuf_free(&s.tr);
		ybuf_init(&s.tr);
	}
	rc = run_line(&s, line);
	for (const char *const *l = pr->check; l && *l; l++)
		run_line(&s, *l);
	ybuf_add(&s.tr, "", 0);
	*tr = strdup(ybuf_str(&s.tr));
	side_fini(&s);
	return rc;
}

/* --- the probes ---------------------------------------------------------------------- */

#define GW "127.0.21.12@tcp"
#define NI2 "net add --nid 127.0.21.2@tcp"
#define PEER_P "127.0.21.50@tcp"

/* fault rules: any source, any destination */
#define DROP "fault drop add --source * --dest *"
#define DELAY "fault delay add --source * --dest * --latency 1"

/* import's documents */
#define IMP "import w.yaml\n"
#define IMPX "import --exec w.yaml\n"
#define NI_DOC(extra) "net:\n- net type: tcp\n  local NI(s):\n  - nid: 127.0.21.3@tcp\n" extra
#define PEER_DOC(extra) "peer:\n- primary nid: " PEER_P "\n" extra
#define PNI_DOC(extra) PEER_DOC("  peer ni:\n  - nid: 127.0.21.51@tcp\n" extra)
#define ROUTE_DOC(extra) "route:\n- net: tcp9\n  gateway: " GW "\n" extra
#define RULE_DOC(extra) "ip2nets:\n- net-spec: tcp6\n" extra
#define RULE_LO(extra) RULE_DOC("  interfaces:\n    0: lo\n" extra)
#define CPT_DOC(extra) "routing:\n- cpt[0]:\n" extra "- enable: 1\n"

/* A peer (node B) on 127.0.21.4@tcp that node A (127.0.21.2@tcp, and
 * 127.0.21.3@tcp) reaches on port $P. */
#define AB1_SETUP "net add --nid 127.0.21.2@tcp --accept-port $P", \
	"B:net add --nid 127.0.21.4@tcp --accept all --accept-port $P"
#define AB_SETUP "net add --nid 127.0.21.2@tcp --accept-port $P", \
	"net add --nid 127.0.21.3@tcp --accept-port $P", \
	"B:net add --nid 127.0.21.4@tcp --accept all --accept-port $P"

/* An NI state key of export (STATE): taken, changes nothing. */
#define NI_STATE(key, extra) \
	{ "yaml net/local NI(s)/" key, STATE, NULL, IMP NI_DOC(""), IMP NI_DOC(extra), \
	  L("export"), "export" }
#define PNI_STATE(key, extra) \
	{ "yaml peer/peer ni/" key, STATE, L(NI2), IMP PNI_DOC(""), IMP PNI_DOC(extra), \
	  L("export"), "export" }
#define GLOBAL(key, value) \
	{ "yaml global/" key, EFFECT, NULL, IMP "global: {}\n", IMP "global:\n  " key ": " value "\n", \
	  L("global show"), key ": " value "\n" }
#define TUN(sec, key, value, want) \
	{ "yaml net/local NI(s)/" sec "/" key, EFFECT, NULL, \
	  IMP NI_DOC("    " sec ": {}\n"), IMP NI_DOC("    " sec ":\n      " key ": " value "\n"), \
	  L("net show -v"), want }
/* an o2ib NI's "lnd tunables" (the o2ib LND a stand-in: "@o2ib") */
#define O2IB_DOC(extra) "net:\n- net type: o2ib\n  local NI(s):\n  - nid: 10.21.0.3@o2ib\n" extra
#define TUNO(key, value, want) \
	{ "yaml net/local NI(s)/lnd tunables/" key, EFFECT, L("@o2ib"), \
	  IMP O2IB_DOC("    lnd tunables: {}\n"), \
	  IMP O2IB_DOC("    lnd tunables:\n      " key ": " value "\n"), L("net show -v"), want }
/* only the kernel's default (ulnet has no FMR pool) */
#define TUNOC(key, value, other) \
	{ "yaml net/local NI(s)/lnd tunables/" key, CHECKED, L("@o2ib"), \
	  IMP O2IB_DOC("    lnd tunables:\n      " key ": " value "\n"), \
	  IMP O2IB_DOC("    lnd tunables:\n      " key ": " other "\n"), NULL, NULL }
#define RTUN(sec, key, value, want) \
	{ "yaml ip2nets/" sec "/" key, EFFECT, NULL, \
	  IMP RULE_LO("  " sec ": {}\n"), IMP RULE_LO("  " sec ":\n    " key ": " value "\n"), \
	  L("net show -v"), want }
#define POOL(key) \
	{ "yaml routing/cpt[N]/" key, STATE, NULL, IMP "routing:\n- cpt[0]: {}\n- enable: 1\n", \
	  IMP CPT_DOC("    " key ":\n      npages: 0\n"), L("routing show"), "routing show" }
#define COUNTER(key) \
	{ "yaml routing/cpt[N]/POOL/" key, STATE, NULL, IMP CPT_DOC("    tiny: {}\n"), \
	  IMP CPT_DOC("    tiny:\n      " key ": 7\n"), L("routing show"), "routing show" }

static const struct probe probes[] = {
	/* --- lnet ------------------------------------------------------------ */
	{ "lnet configure --all", EFFECT,
	  L("@modparams\nnet:\n- net type: tcp\n  local NI(s):\n  - nid: 127.0.21.2@tcp\n",
	    "lnet unconfigure"),
	  "lnet configure", "lnet configure --all", L("net show"), "nid: 127.0.21.2@tcp" },
	/* the kernel's --large lets NIs take large (IPv6) addresses: ulnet's
	 * always do */
	{ "lnet configure --large", ALWAYS, L("lnet unconfigure"), "lnet configure",
	  "lnet configure --large", L("net add --nid ::1@tcp", "net show"), "nid: ::1@tcp" },

	/* --- route ----------------------------------------------------------- */
	{ "route add --net", EFFECT, L(NI2), "route add --gateway " GW,
	  "route add --net tcp9 --gateway " GW, L("route show"), "net: tcp9" },
	{ "route add --gateway", EFFECT, L(NI2), "route add --net tcp9",
	  "route add --net tcp9 --gateway " GW, L("route show"), "gateway: " GW },
	{ "route add --hop-count", EFFECT, L(NI2), "route add --net tcp9 --gateway " GW,
	  "route add --net tcp9 --gateway " GW " --hop-count 7", L("route show -v"), "hop: 7" },
	{ "route add --hop", EFFECT, L(NI2), "route add --net tcp9 --gateway " GW,
	  "route add --net tcp9 --gateway " GW " --hop 5", L("route show -v"), "hop: 5" },
	{ "route add --priority", EFFECT, L(NI2), "route add --net tcp9 --gateway " GW,
	  "route add --net tcp9 --gateway " GW " --priority 4", L("route show -v"), "priority: 4" },
	{ "route add --health_sensitivity", REFUSED, L(NI2), "route add --net tcp9 --gateway " GW,
	  "route add --net tcp9 --gateway " GW " --health_sensitivity 1", NULL, NULL },
	{ "route del --net", EFFECT, L(NI2, "route add --net tcp9 --gateway " GW),
	  "route del --gateway " GW, "route del --net tcp9 --gateway " GW, L("route show"),
	  "!net: tcp9" },
	{ "route del --gateway", EFFECT, L(NI2, "route add --net tcp9 --gateway " GW),
	  "route del --net tcp9", "route del --net tcp9 --gateway " GW, L("route show"),
	  "!net: tcp9" },
#define ROUTES L(NI2, "route add --net tcp9 --gateway " GW " --hop 3 --priority 1", \
		 "route add --net tcp9 --gateway 127.0.21.13@tcp --hop 5 --priority 2", \
		 "route add --net tcp8 --gateway " GW)
	{ "route show --net", EFFECT, ROUTES, "route show", "route show --net tcp9", NULL,
	  "!net: tcp8" },
	{ "route show --gateway", EFFECT, ROUTES, "route show", "route show --gateway 127.0.21.13@tcp",
	  NULL, "!gateway: " GW },
	{ "route show --hop-count", EFFECT, ROUTES, "route show --net tcp9",
	  "route show --net tcp9 --hop-count 5", NULL, "!gateway: " GW },
	{ "route show --hop", EFFECT, ROUTES, "route show --net tcp9", "route show --net tcp9 --hop 5",
	  NULL, "!gateway: " GW },
	{ "route show --priority", EFFECT, ROUTES, "route show --net tcp9",
	  "route show --net tcp9 --priority 2", NULL, "!gateway: " GW },
	{ "route show --verbose", OUTPUT, ROUTES, "route show", "route show --verbose", NULL,
	  "hop: 3" },

	/* --- net ------------------------------------------------------------- */
	{ "net add --net", EFFECT, NULL, "net add --if lo", "net add --net tcp5 --if lo",
	  L("net show"), "net type: tcp5" },
	{ "net add --if", EFFECT, NULL, "net add --net tcp5", "net add --net tcp5 --if lo",
	  L("net show"), "0: lo" },
	{ "net add --nid", EFFECT, NULL, "net add", NI2, L("net show"), "nid: 127.0.21.2@tcp" },
	/* matched against the host's interfaces (never lo): a pattern of
	 * none of them is tried, and fails saying so */
	{ "net add --ip2net", EFFECT, NULL, "net add", "net add --ip2net \"tcp6 10.99.99.*\"",
	  NULL, "does not match any local IP interface" },
	{ "net add --peer-timeout", EFFECT, NULL, NI2, NI2 " --peer-timeout 77", L("net show -v"),
	  "peer_timeout: 77" },
	{ "net add --peer-credits", EFFECT, NULL, NI2, NI2 " --peer-credits 16", L("net show -v"),
	  "peer_credits: 16" },
	{ "net add --peer-buffer-credits", EFFECT, NULL, NI2, NI2 " --peer-buffer-credits 33",
	  L("net show -v"), "peer_buffer_credits: 33" },
	{ "net add --credits", EFFECT, NULL, NI2, NI2 " --credits 512", L("net show -v"),
	  "credits: 512" },
	{ "net add --cpt", REFUSED, NULL, NI2, NI2 " --cpt 0", NULL, NULL },
	{ "net add --conns-per-peer", EFFECT, NULL, NI2, NI2 " --conns-per-peer 3", L("net show -v"),
	  "conns_per_peer: 3" },
	{ "net add --skip-mr-route-setup", ELSEWHERE, NULL, NI2, NI2 " --skip-mr-route-setup", NULL,
	  "tests/integration/test_mrroute.sh" },
	{ "net add --tos", EFFECT, NULL, NI2, NI2 " --tos 5", L("net show -v"), "tos: 5" },
	{ "net add --auth-key", REFUSED, NULL, NI2, NI2 " --auth-key 1", NULL, NULL },
	{ "net add --traffic-class", REFUSED, NULL, NI2, NI2 " --traffic-class 1", NULL, NULL },
	/* the NI listens on its port ($Q: ulnetd's --accept-port) */
	{ "net add --accept-port", EFFECT, L("@accept_port $Q"), NI2 " --accept all",
	  NI2 " --accept all --accept-port $P", L("@connect 127.0.21.2 $P"), "connect: ok" },
	/* the NI listens on its bulk port too */
	{ "net add --accept-port-bulk", EFFECT, NULL, NI2 " --accept all --accept-port $P",
	  NI2 " --accept all --accept-port $P --accept-port-bulk $Q", L("@connect 127.0.21.2 $Q"),
	  "connect: ok" },
	/* the fixture's nodes default to --accept none */
	{ "net add --accept", EFFECT, NULL, NI2 " --accept-port $P",
	  NI2 " --accept-port $P --accept all", L("@connect 127.0.21.2 $P"), "connect: ok" },
	{ "net del --net", EFFECT, L(NI2), "net del", "net del --net tcp", L("net show"),
	  "!nid: 127.0.21.2@tcp" },
	{ "net del --nid", EFFECT, L(NI2), "net del", "net del --nid 127.0.21.2@tcp", L("net show"),
	  "!nid: 127.0.21.2@tcp" },
	{ "net del --if", EFFECT, L(NI2, "net add --nid 127.0.21.3@tcp --if walk0"), "net del --net tcp",
	  "net del --net tcp --if walk0", L("net show"), "nid: 127.0.21.2@tcp" },
	{ "net show --net", EFFECT, L(NI2), "net show", "net show --net tcp", NULL,
	  "!net type: lo" },
	{ "net show --verbose", OUTPUT, L(NI2), "net show", "net show --verbose", NULL, "tunables:" },
#define TWO_NETS L(NI2, "net add --nid 127.0.21.3@tcp1")
	/* lnetctl's only use of it: refused with --nid */
	{ "net set --all", EFFECT, TWO_NETS, "net set --nid 127.0.21.2@tcp --health 500",
	  "net set --all --nid 127.0.21.2@tcp --health 500", NULL, "mutually exclusive" },
	{ "net set --net", EFFECT, TWO_NETS, "net set --health 500", "net set --net tcp1 --health 500",
	  L("net show -v 2"), "health value: 1000" },
	{ "net set --lnd-timeout", EFFECT, TWO_NETS, "net set --net tcp",
	  "net set --net tcp --lnd-timeout 33", L("net show -v"), "timeout: 33" },
	{ "net set --conns-per-peer", EFFECT, TWO_NETS, "net set --nid 127.0.21.2@tcp",
	  "net set --nid 127.0.21.2@tcp --conns-per-peer 5", L("net show -v"), "conns_per_peer: 5" },
	{ "net set --nid", EFFECT, TWO_NETS, "net set --health 500",
	  "net set --nid 127.0.21.3@tcp1 --health 500", L("net show -v 2"), "health value: 1000" },
	{ "net set --state", REFUSED, TWO_NETS, "net set --nid 127.0.21.2@tcp",
	  "net set --nid 127.0.21.2@tcp --state 1", NULL, NULL },
	{ "net set --health", EFFECT, TWO_NETS, "net set --nid 127.0.21.2@tcp",
	  "net set --nid 127.0.21.2@tcp --health 500", L("net show -v 2"), "health value: 500" },

	/* --- peer ------------------------------------------------------------ */
	{ "peer add --prim_nid", EFFECT, L(NI2), "peer add --nid 127.0.21.51@tcp",
	  "peer add --prim_nid " PEER_P " --nid 127.0.21.51@tcp", L("peer show"),
	  "primary nid: " PEER_P },
	{ "peer add --nid", EFFECT, L(NI2), "peer add --prim_nid " PEER_P,
	  "peer add --prim_nid " PEER_P " --nid 127.0.21.51@tcp", L("peer show"),
	  "nid: 127.0.21.51@tcp" },
	{ "peer add --non_mr", EFFECT, L(NI2), "peer add --prim_nid " PEER_P,
	  "peer add --prim_nid " PEER_P " --non_mr", L("peer show"), "Multi-Rail: false" },
	{ "peer add --ip2nets", REFUSED, L(NI2), "peer add --prim_nid " PEER_P,
	  "peer add --prim_nid " PEER_P " --ip2nets tcp", NULL, NULL },
	/* LNET_PEER_LOCK_PRIMARY (bit 20) in the peer's state */
	{ "peer add --lock_prim", EFFECT, L(NI2), "peer add --prim_nid " PEER_P,
	  "peer add --prim_nid " PEER_P " --lock_prim", L("peer show -v 4"),
	  "peer state: 1048585" },
	{ "peer add --force", EFFECT, L(NI2), "peer add --prim_nid " PEER_P,
	  "peer add --prim_nid " PEER_P " --force", L("peer show -v 4"), "peer state: 1048585" },
#define PEERS L(NI2, "peer add --prim_nid " PEER_P " --nid 127.0.21.51@tcp", \
		"peer add --prim_nid 127.0.21.60@tcp --lock_prim")
	{ "peer del --prim_nid", EFFECT, PEERS, "peer del", "peer del --prim_nid " PEER_P,
	  L("peer show"), "!primary nid: " PEER_P },
	{ "peer del --nid", EFFECT, PEERS, "peer del --prim_nid " PEER_P,
	  "peer del --prim_nid " PEER_P " --nid 127.0.21.51@tcp", L("peer show"),
	  "primary nid: " PEER_P },
	{ "peer del --force", EFFECT, PEERS, "peer del --prim_nid 127.0.21.60@tcp",
	  "peer del --prim_nid 127.0.21.60@tcp --force", L("peer show"),
	  "!primary nid: 127.0.21.60@tcp" },
	{ "peer del --lock_prim", EFFECT, PEERS, "peer del --prim_nid 127.0.21.60@tcp",
	  "peer del --prim_nid 127.0.21.60@tcp --lock_prim", L("peer show"),
	  "!primary nid: 127.0.21.60@tcp" },
	{ "peer show --nid", EFFECT, PEERS, "peer show", "peer show --nid " PEER_P, NULL,
	  "!primary nid: 127.0.21.60@tcp" },
	{ "peer show --verbose", OUTPUT, PEERS, "peer show", "peer show --verbose", NULL,
	  "max_ni_tx_credits" },
	{ "peer set --all", EFFECT, PEERS, "peer set --health 500", "peer set --all --health 500",
	  L("peer show -v 2"), "health value: 500" },
	{ "peer set --net", REFUSED, PEERS, "peer set --nid 127.0.21.51@tcp --health 500",
	  "peer set --nid 127.0.21.51@tcp --health 500 --net tcp", NULL, NULL },
	{ "peer set --lnd-timeout", REFUSED, PEERS, "peer set --nid 127.0.21.51@tcp --health 500",
	  "peer set --nid 127.0.21.51@tcp --health 500 --lnd-timeout 5 --net tcp", NULL, NULL },
	{ "peer set --conns-per-peer", REFUSED, PEERS, "peer set --nid 127.0.21.51@tcp --health 500",
	  "peer set --nid 127.0.21.51@tcp --health 500 --conns-per-peer 2", NULL, NULL },
	{ "peer set --nid", EFFECT, PEERS, "peer set --health 500",
	  "peer set --nid 127.0.21.51@tcp --health 500", L("peer show -v 2"), "health value: 500" },
	{ "peer set --state", EFFECT, PEERS, "peer set --nid " PEER_P,
	  "peer set --nid " PEER_P " --state 1048585", L("peer show -v 4 --nid " PEER_P),
	  "peer state: 1048585" },
	{ "peer set --health", EFFECT, PEERS, "peer set --nid 127.0.21.51@tcp",
	  "peer set --nid 127.0.21.51@tcp --health 500", L("peer show -v 2"), "health value: 500" },

	/* --- debug ----------------------------------------------------------- */
	{ "debug peer --nid", EFFECT, PEERS, "debug peer", "debug peer --nid " PEER_P, NULL,
	  "primary nid: " PEER_P },
	/* a local NI below full health, and a peer NI heard from (a ping) */
#define RECOVERY L(AB_SETUP, "ping 127.0.21.4@tcp", "net set --nid 127.0.21.2@tcp --health 500", \
		   "peer set --nid 127.0.21.4@tcp --health 500")
	{ "debug recovery --local", EFFECT, RECOVERY, "debug recovery", "debug recovery --local", NULL,
	  "!Peer NI recovery" },
	{ "debug recovery --peer", EFFECT, RECOVERY, "debug recovery", "debug recovery --peer", NULL,
	  "!Local NI recovery" },

	/* --- global ---------------------------------------------------------- */
	{ "global show --verbose", NOOP, NULL, "global show", "global show --verbose", NULL,
	  "--verbose: the same (as lnetctl's, which has no verbose form)" },

	/* --- conn ------------------------------------------------------------ */
	/* node A's connections to node B, after a ping; a filter that matches
	 * none of them lists none */
	{ "conn show --net", EFFECT, L(AB1_SETUP, "ping 127.0.21.4@tcp"), "conn show",
	  "conn show --net tcp1", NULL, "!nid: 127.0.21.4@tcp" },
	{ "conn show --nid", EFFECT, L(AB1_SETUP, "ping 127.0.21.4@tcp"), "conn show",
	  "conn show --nid 127.0.21.99@tcp", NULL, "!nid: 127.0.21.4@tcp" },

	/* --- ping, discover -------------------------------------------------- */
	/* a peer that takes the connection and never answers: the ping
	 * waits its timeout (1 s without --timeout) */
	{ "ping --timeout", EFFECT, L(NI2 " --accept-port $P", "@listen 127.0.21.77 $P"),
	  "@timed ping 127.0.21.77@tcp", "@timed ping --timeout 3 127.0.21.77@tcp", NULL,
	  "took at least 2 s" },
	/* node B knows the peer by the NID the ping came from */
	{ "ping --source", EFFECT, L(AB_SETUP), "ping 127.0.21.4@tcp",
	  "ping --source 127.0.21.3@tcp 127.0.21.4@tcp", L("B:peer show"),
	  "primary nid: 127.0.21.3@tcp" },
	/* discovered already: again only with --force (a ping and a push
	 * more for node B) */
	{ "discover --force", EFFECT, L(AB_SETUP, "discover 127.0.21.4@tcp"), "discover 127.0.21.4@tcp",
	  "discover --force 127.0.21.4@tcp", L("B:stats show"), "recv_count: 5\n" },

	/* --- export, import -------------------------------------------------- */
	{ "export --backup", OUTPUT, L(NI2), "export", "export --backup", NULL, "!status: up" },
	{ "import --add", EFFECT, NULL, "import --del w.yaml\n" NI_DOC(""),
	  "import --del --add w.yaml\n" NI_DOC(""), L("net show"), "nid: 127.0.21.3@tcp" },
	{ "import --del", EFFECT, L("net add --nid 127.0.21.3@tcp"), IMP NI_DOC(""),
	  "import --del w.yaml\n" NI_DOC(""), L("net show"), "!nid: 127.0.21.3@tcp" },
	{ "import --show", OUTPUT, NULL, IMP NI_DOC(""), "import --show w.yaml\n" NI_DOC(""),
	  NULL, "local NI(s)" },
	{ "import --exec", EFFECT, L(AB_SETUP), IMP "ping:\n  nids:\n  - 127.0.21.4@tcp\n",
	  IMPX "ping:\n  nids:\n  - 127.0.21.4@tcp\n", NULL, "primary nid: 127.0.21.4@tcp" },

	/* --- udsp ------------------------------------------------------------ */
	{ "udsp add --src", EFFECT, L(NI2), "udsp add --priority 1", "udsp add --src tcp --priority 1",
	  L("udsp show"), "src: tcp" },
	{ "udsp add --dst", EFFECT, L(NI2), "udsp add --priority 1", "udsp add --dst tcp --priority 1",
	  L("udsp show"), "dst: tcp" },
	/* (a router alone: refused, as the kernel never applies it) */
	{ "udsp add --rte", EFFECT, L(NI2), "udsp add --dst tcp", "udsp add --dst tcp --rte " GW,
	  L("udsp show"), "rte: " GW },
	{ "udsp add --priority", EFFECT, L(NI2), "udsp add --src tcp",
	  "udsp add --src tcp --priority 3", L("udsp show"), "priority: 3" },
	{ "udsp add --idx", EFFECT, L(NI2, "udsp add --src tcp1"), "udsp add --src tcp2",
	  "udsp add --src tcp2 --idx 0", L("udsp show"), "idx: 0\n      src: tcp2" },
#define RULES L(NI2, "udsp add --src tcp1", "udsp add --src tcp2")
	{ "udsp del --all", EFFECT, RULES, "udsp del", "udsp del --all", L("udsp show"),
	  "!src: tcp1" },
	{ "udsp del --idx", EFFECT, RULES, "udsp del", "udsp del --idx 0", L("udsp show"),
	  "!src: tcp1" },
	{ "udsp show --idx", EFFECT, RULES, "udsp show", "udsp show --idx 1", NULL, "!src: tcp1" },

	/* --- fault drop ------------------------------------------------------ */
	{ "fault drop add --dest", EFFECT, L(NI2), "fault drop add --source 127.0.21.5@tcp --rate 1",
	  "fault drop add --source 127.0.21.5@tcp --dest 127.0.21.6@tcp --rate 1",
	  L("fault drop show"), "fa_dst: 127.0.21.6@tcp" },
	{ "fault drop add --source", EFFECT, L(NI2), "fault drop add --dest 127.0.21.6@tcp --rate 1",
	  "fault drop add --source 127.0.21.5@tcp --dest 127.0.21.6@tcp --rate 1",
	  L("fault drop show"), "fa_src: 127.0.21.5@tcp" },
	/* what the rules do to a ping of node B (the options fault show does
	 * not print): a health error fails the send, counted as its kind;
	 * without, the rule drops the REPLY as it arrives */
#define PING_B "ping --timeout 1 127.0.21.4@tcp"
	{ "fault drop add --health_error", EFFECT, L(AB1_SETUP), DROP " --rate 1",
	  DROP " --rate 1 --health_error remote_dropped", L(PING_B, "stats show"),
	  "remote_dropped_count: 1\n" },
	{ "fault drop add --interval", EFFECT, L(NI2), DROP, DROP " --interval 5",
	  L("fault drop show"), "da_interval: 5" },
	{ "fault drop add --latency", REFUSED, L(NI2), DROP " --rate 1", DROP " --rate 1 --latency 1",
	  NULL, NULL },
	{ "fault drop add --message", EFFECT, L(NI2), DROP " --rate 1", DROP " --rate 1 --message PUT",
	  L("fault drop show"), "fa_msg_mask: 2\n" },
	/* on node B: one in 1000 s drops nothing yet (this seed draws no
	 * drop now); at random, each GET with probability 1/2 (this seed:
	 * the first two) */
	{ "fault drop add --random", EFFECT, L(AB1_SETUP), "B:" DROP " --interval 1000 --seed 1",
	  "B:" DROP " --interval 1000 --seed 1 --random", L(PING_B, PING_B, "B:fault drop show"),
	  "!ds_dropped: 0\n" },
	/* a rule for what arrives on another NI drops nothing here */
	{ "fault drop add --local_nid", EFFECT, L(AB1_SETUP), DROP " --rate 1",
	  DROP " --rate 1 --local_nid 127.0.21.3@tcp", L(PING_B), "primary nid: 127.0.21.4@tcp" },
	{ "fault drop add --portal", EFFECT, L(NI2), DROP " --rate 1", DROP " --rate 1 --portal 4",
	  L("fault drop show"), "fa_ptl_mask: 16\n" },
	{ "fault drop add --rate", EFFECT, L(NI2), DROP, DROP " --rate 7", L("fault drop show"),
	  "da_rate: 7\n" },
	{ "fault drop add --rule_type", REFUSED, L(NI2), DROP " --rate 1",
	  DROP " --rate 1 --rule_type drop", NULL, NULL },
	{ "fault drop add --drop_all", EFFECT, L(AB1_SETUP), DROP " --interval 1000 --seed 7",
	  DROP " --interval 1000 --seed 7 --drop_all", L(PING_B), "!primary nid: 127.0.21.4@tcp" },
	/* the rule the node keeps: test_fault.c test_seed_reproducible shows
	 * the core replays a seed */
	{ "fault drop add --seed", EFFECT, L(NI2), DROP " --rate 1", DROP " --rate 1 --seed 4242",
	  L("@fault drop"), "seed 4242\n" },
#define DROPS L(NI2, "fault drop add --source 127.0.21.5@tcp --dest 127.0.21.6@tcp --rate 1", \
		"fault drop add --source 127.0.21.7@tcp --dest 127.0.21.8@tcp --rate 1")
	{ "fault drop del --all", EFFECT, DROPS, "fault drop del --source 127.0.21.5@tcp "
	  "--dest 127.0.21.6@tcp", "fault drop del --all", L("fault drop show"),
	  "!fa_src: 127.0.21.7@tcp" },
	{ "fault drop del --dest", EFFECT, DROPS, "fault drop del --source 127.0.21.5@tcp",
	  "fault drop del --source 127.0.21.5@tcp --dest 127.0.21.6@tcp", L("fault drop show"),
	  "!fa_src: 127.0.21.5@tcp" },
	{ "fault drop del --source", EFFECT, DROPS, "fault drop del --dest 127.0.21.6@tcp",
	  "fault drop del --source 127.0.21.5@tcp --dest 127.0.21.6@tcp", L("fault drop show"),
	  "!fa_src: 127.0.21.5@tcp" },

	/* --- fault delay ----------------------------------------------------- */
	{ "fault delay add --dest", EFFECT, L(NI2),
	  "fault delay add --source 127.0.21.5@tcp --rate 1 --latency 1",
	  "fault delay add --source 127.0.21.5@tcp --dest 127.0.21.6@tcp --rate 1 --latency 1",
	  L("fault delay show"), "fa_dst: 127.0.21.6@tcp" },
	{ "fault delay add --source", EFFECT, L(NI2),
	  "fault delay add --dest 127.0.21.6@tcp --rate 1 --latency 1",
	  "fault delay add --source 127.0.21.5@tcp --dest 127.0.21.6@tcp --rate 1 --latency 1",
	  L("fault delay show"), "fa_src: 127.0.21.5@tcp" },
	{ "fault delay add --health_error", REFUSED, L(NI2), DELAY " --rate 1",
	  DELAY " --rate 1 --health_error local_timeout", NULL, NULL },
	{ "fault delay add --interval", EFFECT, L(NI2), DELAY, DELAY " --interval 5",
	  L("fault delay show"), "la_interval: 5" },
	{ "fault delay add --latency", EFFECT, L(NI2), "fault delay add --source * --dest * --rate 1",
	  "fault delay add --source * --dest * --rate 1 --latency 2", L("fault delay show"),
	  "la_latency: 2\n" },
	{ "fault delay add --message", EFFECT, L(NI2), DELAY " --rate 1",
	  DELAY " --rate 1 --message GET", L("fault delay show"), "fa_msg_mask: 4\n" },
	{ "fault delay add --random", REFUSED, L(NI2), DELAY " --interval 5",
	  DELAY " --interval 5 --random", NULL, NULL },
	/* as the kernel's: a delay rule with a local NID never matches (the
	 * ping's GET and REPLY are held 2 s each without it) */
	{ "fault delay add --local_nid", EFFECT, L(AB1_SETUP),
	  "fault delay add --source * --dest * --rate 1 --latency 2",
	  "fault delay add --source * --dest * --rate 1 --latency 2 --local_nid 127.0.21.2@tcp",
	  L("@timed ping --timeout 8 127.0.21.4@tcp"), "took under 2 s" },
	{ "fault delay add --portal", EFFECT, L(NI2), DELAY " --rate 1", DELAY " --rate 1 --portal 4",
	  L("fault delay show"), "fa_ptl_mask: 16\n" },
	{ "fault delay add --rate", EFFECT, L(NI2), DELAY, DELAY " --rate 7", L("fault delay show"),
	  "la_rate: 7\n" },
	{ "fault delay add --rule_type", REFUSED, L(NI2), DELAY " --rate 1",
	  DELAY " --rate 1 --rule_type delay", NULL, NULL },
	{ "fault delay add --drop_all", REFUSED, L(NI2), DELAY " --rate 1",
	  DELAY " --rate 1 --drop_all", NULL, NULL },
	/* the rule the node keeps (the same generator as drop rules') */
	{ "fault delay add --seed", EFFECT, L(NI2), DELAY " --rate 1", DELAY " --rate 1 --seed 4242",
	  L("@fault delay"), "seed 4242\n" },
#define DELAYS L(NI2, "fault delay add --source 127.0.21.5@tcp --dest 127.0.21.6@tcp --rate 1 " \
		 "--latency 1", "fault delay add --source 127.0.21.7@tcp --dest 127.0.21.8@tcp " \
		 "--rate 1 --latency 1")
	{ "fault delay del --all", EFFECT, DELAYS, "fault delay del --source 127.0.21.5@tcp "
	  "--dest 127.0.21.6@tcp", "fault delay del --all", L("fault delay show"),
	  "!fa_src: 127.0.21.7@tcp" },
	{ "fault delay del --dest", EFFECT, DELAYS, "fault delay del --source 127.0.21.5@tcp",
	  "fault delay del --source 127.0.21.5@tcp --dest 127.0.21.6@tcp", L("fault delay show"),
	  "!fa_src: 127.0.21.5@tcp" },
	{ "fault delay del --source", EFFECT, DELAYS, "fault delay del --dest 127.0.21.6@tcp",
	  "fault delay del --source 127.0.21.5@tcp --dest 127.0.21.6@tcp", L("fault delay show"),
	  "!fa_src: 127.0.21.5@tcp" },

	/* --- fault link ------------------------------------------------------ */
	{ "fault link down --nid", EFFECT, L(NI2), "fault link down",
	  "fault link down --nid 127.0.21.2@tcp", L("fault link show"), "fault: down" },
	{ "fault link down --duration", EFFECT, L(NI2), "fault link down --nid 127.0.21.2@tcp",
	  "fault link down --nid 127.0.21.2@tcp --duration 100", L("fault link show"),
	  "seconds_left" },
	{ "fault link up --nid", EFFECT, L(NI2, "fault link down --nid 127.0.21.2@tcp"),
	  "fault link up", "fault link up --nid 127.0.21.2@tcp", L("fault link show"),
	  "!fault: down" },
	{ "fault link up --duration", REFUSED, L(NI2, "fault link down --nid 127.0.21.2@tcp"),
	  "fault link up --nid 127.0.21.2@tcp", "fault link up --nid 127.0.21.2@tcp --duration 5",
	  NULL, NULL },

	/* === import's YAML ===================================================== */
	/* --- the top level --------------------------------------------------- */
	{ "yaml net", EFFECT, NULL, IMP, IMP NI_DOC(""), L("net show"), "nid: 127.0.21.3@tcp" },
	{ "yaml route", EFFECT, L(NI2), IMP, IMP ROUTE_DOC(""), L("route show"), "net: tcp9" },
	{ "yaml peer", EFFECT, L(NI2), IMP, IMP PEER_DOC(""), L("peer show"),
	  "primary nid: " PEER_P },
	{ "yaml routing", EFFECT, L(NI2), IMP, IMP "routing:\n  enable: 1\n", L("routing show"),
	  "enable: 3" },
	/* a pool grows at once */
	{ "yaml buffers", EFFECT, L(NI2, "set routing 1"), IMP, IMP "buffers:\n  tiny: 3000\n",
	  L("routing show"), "nbuffers: 3000" },
	{ "yaml global", EFFECT, NULL, IMP, IMP "global:\n  retry_count: 3\n", L("global show"),
	  "retry_count: 3\n" },
	{ "yaml numa", EFFECT, NULL, IMP, IMP "numa:\n  range: 5\n", L("global show"),
	  "numa_range: 5\n" },
	{ "yaml ip2nets", EFFECT, NULL, IMP, IMP RULE_LO(""), L("net show"), "net type: tcp6" },
	{ "yaml udsp", EFFECT, L(NI2), IMP, IMP "udsp:\n- src: tcp\n", L("udsp show"), "src: tcp" },
	/* ping: and discover: act under --exec, as lnetctl's */
	{ "yaml ping", EFFECT, L(AB_SETUP), IMPX, IMPX "ping:\n  nids:\n  - 127.0.21.4@tcp\n", NULL,
	  "ping:\n- primary nid: 127.0.21.4@tcp" },
	{ "yaml discover", EFFECT, L(AB_SETUP), IMPX, IMPX "discover:\n  nids:\n  - 127.0.21.4@tcp\n",
	  NULL, "discover:\n- primary nid: 127.0.21.4@tcp" },
	{ "yaml statistics", STATE, NULL, IMP, IMP "statistics:\n  send_count: 5\n",
	  L("stats show"), "stats show" },

	/* --- net: ------------------------------------------------------------ */
	{ "yaml net/net type", EFFECT, NULL,
	  IMP "net:\n- local NI(s):\n  - nid: 127.0.21.3@tcp\n", IMP NI_DOC(""), L("net show"),
	  "nid: 127.0.21.3@tcp" },
	{ "yaml net/local NI(s)", EFFECT, NULL, IMP "net:\n- net type: tcp\n", IMP NI_DOC(""),
	  L("net show"), "nid: 127.0.21.3@tcp" },
	{ "yaml net/local NI(s)/nid", EFFECT, NULL,
	  IMP "net:\n- net type: tcp\n  local NI(s):\n  - interfaces:\n      0: lo\n",
	  IMP "net:\n- net type: tcp\n  local NI(s):\n  - nid: 127.0.21.3@tcp\n"
	  "    interfaces:\n      0: lo\n", L("net show"), "nid: 127.0.21.3@tcp" },
	{ "yaml net/local NI(s)/interfaces", EFFECT, NULL, IMP NI_DOC(""),
	  IMP NI_DOC("    interfaces:\n      0: walk0\n"), L("net show"), "0: walk0" },
	{ "yaml net/local NI(s)/tunables", EFFECT, NULL, IMP NI_DOC(""),
	  IMP NI_DOC("    tunables:\n      peer_credits: 17\n"), L("net show -v"),
	  "peer_credits: 17" },
	{ "yaml net/local NI(s)/lnd tunables", EFFECT, NULL, IMP NI_DOC(""),
	  IMP NI_DOC("    lnd tunables:\n      conns_per_peer: 4\n"), L("net show -v"),
	  "conns_per_peer: 4" },
	{ "yaml net/local NI(s)/CPT", CHECKED, NULL, IMP NI_DOC("    CPT: \"[0]\"\n"),
	  IMP NI_DOC("    CPT: \"[1]\"\n"), NULL, NULL },
	NI_STATE("status", "    status: down\n"),
	NI_STATE("statistics", "    statistics:\n      send_count: 9\n"),
	NI_STATE("sent_stats", "    sent_stats:\n      put: 9\n"),
	NI_STATE("received_stats", "    received_stats:\n      put: 9\n"),
	NI_STATE("dropped_stats", "    dropped_stats:\n      put: 9\n"),
	NI_STATE("health stats", "    health stats:\n      health value: 9\n"),
	NI_STATE("dev cpt", "    dev cpt: 3\n"),
	TUN("tunables", "peer_timeout", "77", "peer_timeout: 77"),
	TUN("tunables", "peer_credits", "17", "peer_credits: 17"),
	TUN("tunables", "peer_buffer_credits", "33", "peer_buffer_credits: 33"),
	TUN("tunables", "credits", "300", "    credits: 300"),
	TUN("lnd tunables", "conns_per_peer", "4", "conns_per_peer: 4"),
	TUN("lnd tunables", "tos", "9", "tos: 9"),
	TUN("lnd tunables", "timeout", "44", " timeout: 44"),
	TUNO("peercredits_hiw", "6", "peercredits_hiw: 6"),
	TUNO("map_on_demand", "32", "map_on_demand: 32"),
	TUNO("concurrent_sends", "13", "concurrent_sends: 13"),
	TUNOC("fmr_pool_size", "512", "1024"),
	TUNOC("fmr_flush_trigger", "384", "100"),
	TUNOC("fmr_cache", "1", "2"),
	TUNO("ntx", "1024", "ntx: 1024"),

	/* --- peer: ----------------------------------------------------------- */
	{ "yaml peer/primary nid", EFFECT, L(NI2), IMP "peer:\n- Multi-Rail: true\n",
	  IMP PEER_DOC("  Multi-Rail: true\n"), L("peer show"), "primary nid: " PEER_P },
	{ "yaml peer/Multi-Rail", EFFECT, L(NI2), IMP PEER_DOC(""),
	  IMP PEER_DOC("  Multi-Rail: false\n"), L("peer show"), "Multi-Rail: false" },
	{ "yaml peer/peer ni", EFFECT, L(NI2), IMP PEER_DOC(""), IMP PNI_DOC(""), L("peer show"),
	  "nid: 127.0.21.51@tcp" },
	{ "yaml peer/peer state", STATE, L(NI2), IMP PEER_DOC(""),
	  IMP PEER_DOC("  peer state: 0\n"), L("export"), "export" },
	{ "yaml peer/peer ni/nid", EFFECT, L(NI2), IMP PEER_DOC("  peer ni:\n  - state: up\n"),
	  IMP PNI_DOC(""), L("peer show"), "nid: 127.0.21.51@tcp" },
	PNI_STATE("state", "    state: down\n"),
	PNI_STATE("max_ni_tx_credits", "    max_ni_tx_credits: 1\n"),
	PNI_STATE("available_tx_credits", "    available_tx_credits: 1\n"),
	PNI_STATE("min_tx_credits", "    min_tx_credits: 1\n"),
	PNI_STATE("tx_q_num_of_buf", "    tx_q_num_of_buf: 1\n"),
	PNI_STATE("available_rtr_credits", "    available_rtr_credits: 1\n"),
	PNI_STATE("min_rtr_credits", "    min_rtr_credits: 1\n"),
	PNI_STATE("refcount", "    refcount: 1\n"),
	PNI_STATE("statistics", "    statistics:\n      send_count: 9\n"),
	PNI_STATE("sent_stats", "    sent_stats:\n      put: 9\n"),
	PNI_STATE("received_stats", "    received_stats:\n      put: 9\n"),
	PNI_STATE("dropped_stats", "    dropped_stats:\n      put: 9\n"),
	PNI_STATE("health stats", "    health stats:\n      health value: 9\n"),

	/* --- route: ---------------------------------------------------------- */
	{ "yaml route/net", EFFECT, L(NI2), IMP "route:\n- gateway: " GW "\n", IMP ROUTE_DOC(""),
	  L("route show"), "net: tcp9" },
	{ "yaml route/gateway", EFFECT, L(NI2), IMP "route:\n- net: tcp9\n", IMP ROUTE_DOC(""),
	  L("route show"), "gateway: " GW },
	{ "yaml route/hop", EFFECT, L(NI2), IMP ROUTE_DOC(""), IMP ROUTE_DOC("  hop: 7\n"),
	  L("route show -v"), "hop: 7" },
	{ "yaml route/priority", EFFECT, L(NI2), IMP ROUTE_DOC(""), IMP ROUTE_DOC("  priority: 4\n"),
	  L("route show -v"), "priority: 4" },
	{ "yaml route/state", STATE, L(NI2), IMP ROUTE_DOC(""), IMP ROUTE_DOC("  state: down\n"),
	  L("route show -v"), "route show -v" },
	{ "yaml route/type", STATE, L(NI2), IMP ROUTE_DOC(""), IMP ROUTE_DOC("  type: single-hop\n"),
	  L("route show -v"), "route show -v" },
	{ "yaml route/health_sensitivity", REFUSED, L(NI2), IMP ROUTE_DOC(""),
	  IMP ROUTE_DOC("  health_sensitivity: 1\n"), NULL, NULL },

	/* --- routing:, buffers: ---------------------------------------------- */
	{ "yaml routing/enable", EFFECT, L(NI2), IMP "routing: {}\n", IMP "routing:\n  enable: 1\n",
	  L("routing show"), "enable: 3" },
	{ "yaml routing/cpt[N]", STATE, L(NI2), IMP "routing:\n- enable: 1\n",
	  IMP CPT_DOC("    tiny: {}\n"), L("routing show"), "routing show" },
	POOL("tiny"),
	POOL("small"),
	POOL("large"),
	COUNTER("npages"),
	COUNTER("nbuffers"),
	COUNTER("credits"),
	COUNTER("mincredits"),
	{ "yaml buffers/tiny", EFFECT, L(NI2, "set routing 1"), IMP "buffers: {}\n",
	  IMP "buffers:\n  tiny: 3000\n", L("routing show"), "nbuffers: 3000" },
	{ "yaml buffers/small", EFFECT, L(NI2, "set routing 1"), IMP "buffers: {}\n",
	  IMP "buffers:\n  small: 20000\n", L("routing show"), "nbuffers: 20000" },
	{ "yaml buffers/large", EFFECT, L(NI2, "set routing 1"), IMP "buffers: {}\n",
	  IMP "buffers:\n  large: 2000\n", L("routing show"), "nbuffers: 2000" },

	/* --- global:, numa: -------------------------------------------------- */
	GLOBAL("numa_range", "5"),
	GLOBAL("max_interfaces", "200"),
	GLOBAL("discovery", "0"),
	GLOBAL("drop_asym_route", "1"),
	GLOBAL("retry_count", "3"),
	GLOBAL("transaction_timeout", "60"),
	GLOBAL("health_sensitivity", "50"),
	GLOBAL("recovery_interval", "5"),
	GLOBAL("router_sensitivity", "50"),
	GLOBAL("response_tracking", "1"),
	GLOBAL("recovery_limit", "30"),
	GLOBAL("max_recovery_ping_interval", "100"),
	{ "yaml global/lnd_timeout", STATE, NULL, IMP "global: {}\n",
	  IMP "global:\n  lnd_timeout: 3\n", L("global show"), "global show" },
	{ "yaml numa/range", EFFECT, NULL, IMP "numa: {}\n", IMP "numa:\n  range: 5\n",
	  L("global show"), "numa_range: 5\n" },

	/* --- ip2nets: -------------------------------------------------------- */
	{ "yaml ip2nets/net-spec", EFFECT, NULL, IMP "ip2nets:\n- interfaces:\n    0: lo\n",
	  IMP RULE_LO(""), L("net show"), "net type: tcp6" },
	/* only the interfaces named (here one without the address) */
	{ "yaml ip2nets/interfaces", EFFECT, NULL, IMP RULE_DOC("  ip-range:\n    0: 127.0.0.1\n"),
	  IMP RULE_DOC("  interfaces:\n    0: walk0\n  ip-range:\n    0: 127.0.0.1\n"),
	  L("net show"), "!net type: tcp6" },
	{ "yaml ip2nets/ip-range", EFFECT, NULL, IMP RULE_LO(""),
	  IMP RULE_LO("  ip-range:\n    0: 10.255.255.*\n"), L("net show"), "!net type: tcp6" },
	{ "yaml ip2nets/tunables", EFFECT, NULL, IMP RULE_LO(""),
	  IMP RULE_LO("  tunables:\n    peer_credits: 17\n"), L("net show -v"), "peer_credits: 17" },
	{ "yaml ip2nets/lnd tunables", EFFECT, NULL, IMP RULE_LO(""),
	  IMP RULE_LO("  lnd tunables:\n    conns_per_peer: 4\n"), L("net show -v"),
	  "conns_per_peer: 4" },
	{ "yaml ip2nets/CPT", CHECKED, NULL, IMP RULE_LO("  CPT: \"[0]\"\n"),
	  IMP RULE_LO("  CPT: \"[1]\"\n"), NULL, NULL },
	RTUN("tunables", "peer_timeout", "77", "peer_timeout: 77"),
	RTUN("tunables", "peer_credits", "17", "peer_credits: 17"),
	RTUN("tunables", "peer_buffer_credits", "33", "peer_buffer_credits: 33"),
	RTUN("tunables", "credits", "300", "    credits: 300"),
	RTUN("lnd tunables", "conns_per_peer", "4", "conns_per_peer: 4"),
	RTUN("lnd tunables", "tos", "9", "tos: 9"),
	RTUN("lnd tunables", "timeout", "44", " timeout: 44"),

	/* --- udsp: ----------------------------------------------------------- */
	{ "yaml udsp/src", EFFECT, L(NI2), IMP, IMP "udsp:\n- src: tcp\n", L("udsp show"),
	  "src: tcp" },
	{ "yaml udsp/dst", EFFECT, L(NI2), IMP, IMP "udsp:\n- dst: tcp\n", L("udsp show"),
	  "dst: tcp" },
	{ "yaml udsp/rte", EFFECT, L(NI2), IMP "udsp:\n- dst: tcp\n",
	  IMP "udsp:\n- dst: tcp\n  rte: " GW "\n", L("udsp show"), "rte: " GW },
	{ "yaml udsp/idx", EFFECT, L(NI2, "udsp add --src tcp1"), IMP "udsp:\n- src: tcp2\n",
	  IMP "udsp:\n- src: tcp2\n  idx: 0\n", L("udsp show"), "idx: 0\n      src: tcp2" },
	{ "yaml udsp/priority", EFFECT, L(NI2), IMP "udsp:\n- src: tcp\n",
	  IMP "udsp:\n- src: tcp\n  priority: 3\n", L("udsp show"), "priority: 3" },
	{ "yaml udsp/action", EFFECT, L(NI2), IMP "udsp:\n- src: tcp\n",
	  IMP "udsp:\n- src: tcp\n  action:\n    priority: 3\n", L("udsp show"), "priority: 3" },
	{ "yaml udsp/action/priority", EFFECT, L(NI2), IMP "udsp:\n- src: tcp\n  action: {}\n",
	  IMP "udsp:\n- src: tcp\n  action:\n    priority: 3\n", L("udsp show"), "priority: 3" },

	/* --- ping:, discover: (import --exec) ------------------------------------ */
	{ "yaml ping/nids", EFFECT, L(AB_SETUP), IMPX "ping:\n  timeout: 1000\n",
	  IMPX "ping:\n  timeout: 1000\n  nids:\n  - 127.0.21.4@tcp\n", NULL,
	  "primary nid: 127.0.21.4@tcp" },
	{ "yaml ping/timeout", EFFECT, L(NI2 " --accept-port $P", "@listen 127.0.21.77 $P"),
	  "@timed " IMPX "ping:\n  nids:\n  - 127.0.21.77@tcp\n",
	  "@timed " IMPX "ping:\n  nids:\n  - 127.0.21.77@tcp\n  timeout: 3000\n", NULL,
	  "took at least 2 s" },
	{ "yaml ping/source", EFFECT, L(AB_SETUP), IMPX "ping:\n  nids:\n  - 127.0.21.4@tcp\n",
	  IMPX "ping:\n  nids:\n  - 127.0.21.4@tcp\n  source: 127.0.21.3@tcp\n", L("B:peer show"),
	  "primary nid: 127.0.21.3@tcp" },
	{ "yaml ping/nids/primary nid", EFFECT, L(AB_SETUP), IMPX "ping:\n  nids:\n  - {}\n",
	  IMPX "ping:\n  nids:\n  - primary nid: 127.0.21.4@tcp\n", NULL,
	  "primary nid: 127.0.21.4@tcp" },
	{ "yaml ping/nids/nid", EFFECT, L(AB_SETUP), IMPX "ping:\n  nids:\n  - {}\n",
	  IMPX "ping:\n  nids:\n  - nid: 127.0.21.4@tcp\n", NULL, "primary nid: 127.0.21.4@tcp" },
	{ "yaml discover/nids", EFFECT, L(AB_SETUP), IMPX "discover: {}\n",
	  IMPX "discover:\n  nids:\n  - 127.0.21.4@tcp\n", NULL, "primary nid: 127.0.21.4@tcp" },
	{ "yaml discover/nids/primary nid", EFFECT, L(AB_SETUP), IMPX "discover:\n  nids:\n  - {}\n",
	  IMPX "discover:\n  nids:\n  - primary nid: 127.0.21.4@tcp\n", NULL,
	  "primary nid: 127.0.21.4@tcp" },
	{ "yaml discover/nids/nid", EFFECT, L(AB_SETUP), IMPX "discover:\n  nids:\n  - {}\n",
	  IMPX "discover:\n  nids:\n  - nid: 127.0.21.4@tcp\n", NULL, "primary nid: 127.0.21.4@tcp" },
};

#define NPROBES (sizeof(probes) / sizeof(probes[0]))

/* A made-up key in each section of the schema: refused, named. */
struct bogus {
	const char *path;
	const char *const *setup;
	const char *line;
};

#define BOGUS "ulnet_walk_bogus"

static const struct bogus boguses[] = {
	{ "", NULL, IMP BOGUS ": 1\n" },
	{ "net", NULL, IMP "net:\n- net type: tcp\n  " BOGUS ": 1\n  local NI(s):\n"
		       "  - nid: 127.0.21.3@tcp\n" },
	{ "net/local NI(s)", NULL, IMP NI_DOC("    " BOGUS ": 1\n") },
	{ "net/local NI(s)/tunables", NULL, IMP NI_DOC("    tunables:\n      " BOGUS ": 1\n") },
	{ "net/local NI(s)/lnd tunables", NULL, IMP NI_DOC("    lnd tunables:\n      " BOGUS ": 1\n") },
	{ "peer", L(NI2), IMP PEER_DOC("  " BOGUS ": 1\n") },
	{ "peer/peer ni", L(NI2), IMP PNI_DOC("    " BOGUS ": 1\n") },
	{ "route", L(NI2), IMP ROUTE_DOC("  " BOGUS ": 1\n") },
	{ "routing", L(NI2), IMP "routing:\n  enable: 1\n  " BOGUS ": 1\n" },
	{ "routing/cpt[N]", L(NI2), IMP CPT_DOC("    " BOGUS ": {}\n") },
	{ "routing/cpt[N]/POOL", L(NI2), IMP CPT_DOC("    tiny:\n      " BOGUS ": 1\n") },
	{ "buffers", L(NI2), IMP "buffers:\n  " BOGUS ": 1\n" },
	{ "global", NULL, IMP "global:\n  " BOGUS ": 1\n" },
	{ "numa", NULL, IMP "numa:\n  " BOGUS ": 1\n" },
	{ "ip2nets", NULL, IMP RULE_LO("  " BOGUS ": 1\n") },
	{ "ip2nets/tunables", NULL, IMP RULE_LO("  tunables:\n    " BOGUS ": 1\n") },
	{ "ip2nets/lnd tunables", NULL, IMP RULE_LO("  lnd tunables:\n    " BOGUS ": 1\n") },
	{ "udsp", L(NI2), IMP "udsp:\n- src: tcp\n  " BOGUS ": 1\n" },
	{ "udsp/action", L(NI2), IMP "udsp:\n- src: tcp\n  action:\n    " BOGUS ": 1\n" },
	{ "ping", L(NI2), IMPX "ping:\n  nids:\n  - 127.0.21.2@tcp\n  " BOGUS ": 1\n" },
	{ "ping/nids", L(NI2), IMPX "ping:\n  nids:\n  - nid: 127.0.21.2@tcp\n    " BOGUS ": 1\n" },
	{ "discover", L(NI2), IMPX "discover:\n  nids:\n  - 127.0.21.2@tcp\n  " BOGUS ": 1\n" },
	{ "discover/nids", L(NI2), IMPX "discover:\n  nids:\n  - nid: 127.0.21.2@tcp\n    " BOGUS
				   ": 1\n" },
};

#define NBOGUS (sizeof(boguses) / sizeof(boguses[0]))

/* --- running a probe -------------------------------------------------------------- */

struct tally {
	int ncmds, nopts, nsections, nkeys, nhelp;
	int kinds[2][NKINDS];   /* options, keys */
	int bogus_95, bogus_22;
	bool used[NPROBES];
	struct ybuf missing;
};

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The line (its command words, or for import its file) says the option
 * or key `name` more often with it than without. */
static bool check_words(const struct probe *pr, const char *token)
{
	int nw = count_of(pr->with, token), nb = pr->base ? count_of(pr->base, token) : 0;

	if (pr->kind == CHECKED ? nw == 0 || nw != nb : nw <= nb) {
		failf("%s: the probe's lines do not differ by '%s'", pr->at, token);
		return false;
	}
	return true;
}

static bool ipv6_lo(void)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* `want` in `with` and not in `base` ("!x": x in base, not in with). */
static void check_want(const struct probe *pr, const char *tb, const char *tw)
{
	bool neg = pr->want[0] == '!';
	const char *w = pr->want + neg;
	const char *has = neg ? tb : tw, *lacks = neg ? tw : tb;

	if (!strstr(has, w) || strstr(lacks, w))
		failf("%s: '%s' is not told apart:\n=== without\n%s=== with\n%s", pr->at, pr->want,
			 tb, tw);
}

/* The refusal: exit != 0, errno -95, the option or key named. */
static void check_refused(const struct probe *pr, int rc, const char *tw, const char *name)
{
	if (rc == 0 || !strstr(tw, "errno: -95") || !strstr(tw, name))
		failf("%s: not refused with -95 naming '%s' (exit %d):\n%s", pr->at, name, rc, tw);
}

static void run_probe(const struct probe *pr, const char *token, const char *name,
		      const char *help)
{
	int port = free_port(), port2 = free_port(), rcb = 0, rcw;
	char *tb = NULL, *tw = NULL;

	/* a probe with an IPv6 NI needs ::1 */
	bool v6 = false;

	for (const char *const *l = pr->check; l && *l; l++)
		v6 |= strstr(*l, "::1@") != NULL;
	if (v6 && !ipv6_lo()) {
		print_message("%s: skipped, no ::1 on this host\n", pr->at);
		return;
	}
	if (!check_words(pr, token))
		return;
	if (pr->base)
		rcb = run_side(pr, pr->base, port, port2, &tb);
	rcw = run_side(pr, pr->with, port, port2, &tw);
	if (rcb == SETUP_FAILED || rcw == SETUP_FAILED)
		goto out;
	switch (pr->kind) {
	case EFFECT:
	case OUTPUT:
		check_want(pr, tb, tw);
		break;
	case REFUSED:
	case CHECKED:
		if (pr->base && rcb != 0)
			failf("%s: the line without it fails (exit %d):\n%s", pr->at, rcb, tb);
		else
			check_refused(pr, rcw, tw, name);
		break;
	case ELSEWHERE: {
		char path[1024];
		const char *src = getenv("ULNET_SRC");
		FILE *f;
		bool named = false;

		if (rcb != 0 || rcw != 0) {
			failf("%s: a line fails (exit %d, %d):\n=== without\n%s=== with\n%s", pr->at,
			      rcb, rcw, tb, tw);
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", src ? src : ".", pr->want);
		f = fopen(path, "r");
		if (!f) {
			failf("%s: %s, which proves it, cannot be read", pr->at, path);
			break;
		}
		char line[4096];

		while (!named && fgets(line, sizeof(line), f))
			named = strstr(line, token) != NULL;
		fclose(f);
		if (!named)
			failf("%s: %s does not use %s", pr->at, path, token);
		break;
	}
	case ALWAYS:
	case NOOP:
	case STATE:
		if (rcb != 0 || rcw != 0 || strcmp(tb, tw) != 0) {
			failf("%s: with and without differ (exit %d, %d):\n=== without\n%s=== with\n%s",
			      pr->at, rcb, rcw, tb, tw);
			break;
		}
		if (pr->kind == ALWAYS && !strstr(tw, pr->want))
			failf("%s: '%s' is not so without it:\n%s", pr->at, pr->want, tb);
		if (pr->kind == NOOP && !strstr(help, pr->want))
			failf("%s: its help does not say '%s':\n%s", pr->at, pr->want, help);
		if (pr->kind == STATE) {
			/* the command that writes it does, on a node the base
			 * line configured */
			struct probe src = *pr;
			const char *const cmd[] = { pr->want, NULL };

			src.check = cmd;
			free(tb);
			run_side(&src, pr->base, port, port2, &tb);
			if (!strstr(tb, token))
				failf("%s: '%s' does not print '%s':\n%s", pr->at, pr->want, token, tb);
		}
		break;
	default:
		failf("%s: bad kind", pr->at);
	}
out:
	free(tb);
	free(tw);
}

static const struct probe *find_probe(struct tally *t, const char *at)
{
	for (size_t i = 0; i < NPROBES; i++)
		if (strcmp(probes[i].at, at) == 0) {
			if (t->used[i])
				fail_msg("%s: two probes", at);
			t->used[i] = true;
			return &probes[i];
		}
	return NULL;
}

/* --- the walk of the command tree ------------------------------------------------ */

/* --help and -h print the command's help (a group's, then its commands'),
 * exit 0, nothing on stderr. */
static void help_probe(const char *path, const char *parent, const struct cmd *c)
{
	static const char *const words[] = { "--help", "-h" };

	for (size_t i = 0; i < 2; i++) {
		struct ctl_fix f;
		struct ybuf want;
		char line[256];

		assert_int_equal(ctl_fix_init(&f, NULL, NULL), 0);
		ybuf_init(&want);
		if (c->sub) {
			ybuf_printf(&want, "%s", c->help);
		} else {
			ctl_print_help(&want, parent, c);
		}
		ybuf_add(&want, "", 0);
		snprintf(line, sizeof(line), "%s %s", path, words[i]);
		if (ctl_run_line(&f.ctx, &f.rp, NULL, 0, line) != 0 ||
		    strncmp(ybuf_str(&f.rp.out), ybuf_str(&want), strlen(ybuf_str(&want))) != 0 ||
		    f.rp.err.len)
			failf("'%s': exit %d, printed\n%s%s--- want\n%s", line, f.rp.rc,
			      ybuf_str(&f.rp.out), ybuf_str(&f.rp.err), ybuf_str(&want));
		ybuf_free(&want);
		ctl_fix_fini(&f);
	}
}

static void walk_cmds(const struct cmd *t, const char *prefix, const char *parent,
		      struct tally *tl)
{
	for (const struct cmd *c = t; c->name; c++) {
		char path[128];

		snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? " " : "", c->name);
		tl->ncmds++;
		help_probe(path, parent, c);
		tl->nhelp++;
		if (c->sub) {
			walk_cmds(c->sub, path, c->name, tl);
			continue;
		}
		for (int o = 0; o < c->nopts; o++) {
			char at[192], token[128], name[96];
			const struct probe *pr;
			struct ybuf help;

			snprintf(at, sizeof(at), "%s --%s", path, c->opts[o].name);
			snprintf(token, sizeof(token), "--%s", c->opts[o].name);
			snprintf(name, sizeof(name), "--%s", c->opts[o].name);
			tl->nopts++;
			pr = find_probe(tl, at);
			if (!pr) {
				ybuf_printf(&tl->missing, "  %s\n", at);
				continue;
			}
			ybuf_init(&help);
			ctl_print_help(&help, parent, c);
			ybuf_add(&help, "", 0);
			run_probe(pr, token, name, ybuf_str(&help));
			ybuf_free(&help);
			tl->kinds[0][pr->kind]++;
		}
	}
}

/* --- the walk of import's schema ------------------------------------------------- */

static void walk_schema(struct tally *tl)
{
	int nsec;
	const struct imp_section *sch = ctl_import_schema(&nsec);

	for (int s = 0; s < nsec; s++) {
		const struct imp_section *sec = &sch[s];
		const struct bogus *bg = NULL;

		tl->nsections++;
		for (size_t i = 0; i < NBOGUS; i++)
			if (strcmp(boguses[i].path, sec->path) == 0)
				bg = &boguses[i];
		if (!bg) {
			ybuf_printf(&tl->missing, "  yaml section '%s' (a made-up key)\n", sec->path);
		} else {
			struct probe pr = { sec->path, REFUSED, bg->setup, NULL, bg->line, NULL, NULL };
			char *tr;
			int rc = run_side(&pr, bg->line, free_port(), free_port(), &tr);

			if (rc == 0 || !strstr(tr, "'" BOGUS "'") ||
			    (!strstr(tr, "errno: -95") && !strstr(tr, "errno: -22")))
				failf("yaml section '%s': a made-up key is not refused (exit %d):\n%s",
				      sec->path, rc, tr);
			else if (strstr(tr, "errno: -95"))
				tl->bogus_95++;
			else
				tl->bogus_22++;
			free(tr);
		}
		for (int k = 0; k < sec->nkeys; k++) {
			const struct imp_key *key = &sec->keys[k];
			char at[192], token[128], name[96];
			const struct probe *pr;
			size_t nl;

			snprintf(at, sizeof(at), "yaml %s%s%s", sec->path, sec->path[0] ? "/" : "",
				 key->name);
			/* "cpt[N]" is written "cpt[0]" */
			snprintf(name, sizeof(name), "%s", key->name);
			nl = strlen(name);
			if (nl > 3 && strcmp(name + nl - 3, "[N]") == 0)
				name[nl - 2] = '0';
			snprintf(token, sizeof(token), "%s:", name);
			tl->nkeys++;
			pr = find_probe(tl, at);
			if (!pr) {
				ybuf_printf(&tl->missing, "  %s\n", at);
				continue;
			}
			/* the probe's kind is what the schema says of the key */
			if ((key->kind == IMPK_STATE) != (pr->kind == STATE) ||
			    (key->kind == IMPK_CHECKED) != (pr->kind == CHECKED) ||
			    (key->kind == IMPK_REFUSED) != (pr->kind == REFUSED))
				fail_msg("%s: the schema and the probe disagree on what it is", at);
			run_probe(pr, token, name, "");
			tl->kinds[1][pr->kind]++;
		}
	}
	/* every section named here is one of the schema's */
	for (size_t i = 0; i < NBOGUS; i++) {
		bool found = false;

		for (int s = 0; s < nsec; s++)
			found |= strcmp(boguses[i].path, sch[s].path) == 0;
		if (!found)
			fail_msg("yaml section '%s' is not in the schema", boguses[i].path);
	}
}

static void test_walk(void **state)
{
	(void)state;
	struct tally tl;

	memset(&tl, 0, sizeof(tl));
	ybuf_init(&tl.missing);
	ybuf_init(&fails);
	walk_cmds(ctl_cmd_root(), "", NULL, &tl);
	walk_schema(&tl);
	for (size_t i = 0; i < NPROBES; i++)
		if (!tl.used[i])
			failf("probe '%s' names no option or key of the tables", probes[i].at);
	ybuf_add(&tl.missing, "", 0);
	if (tl.missing.len > 1)
		failf("options and keys with no probe (each needs one in test_ctl_options.c):\n%s",
		      ybuf_str(&tl.missing));
	ybuf_add(&fails, "", 0);
	if (nfails) {
		/* (cmocka cuts a long message) */
		fprintf(stderr, "%s", ybuf_str(&fails));
		fail_msg("%d failure(s) (above)", nfails);
	}
	ybuf_free(&fails);
	print_message("walked %d commands (%d --help/-h pairs), %d options; %d YAML sections "
		      "(a made-up key refused in each: %d -95, %d -22), %d keys\n",
		      tl.ncmds, tl.nhelp, tl.nopts, tl.nsections, tl.bogus_95, tl.bogus_22, tl.nkeys);
	print_message("  %-8s %7s %5s\n", "", "options", "keys");
	for (int k = 0; k < NKINDS; k++)
		print_message("  %-8s %7d %5d\n", kind_name[k], tl.kinds[0][k], tl.kinds[1][k]);
	ybuf_free(&tl.missing);
}

/* Run `line` on `f`: exit `rc`, and `text` on stdout or stderr (NULL:
 * not checked). */
static void expect(struct ctl_fix *f, const char *line, int rc, const char *text)
{
	int got = ctl_run_line(&f->ctx, &f->rp, NULL, 0, line);

	if (got != rc || (text && !strstr(ybuf_str(&f->rp.out), text) &&
			  !strstr(ybuf_str(&f->rp.err), text)))
		fail_msg("'%s': exit %d (want %d), want '%s':\n%s%s", line, got, rc, text ? text : "",
			 ybuf_str(&f->rp.out), ybuf_str(&f->rp.err));
}

/* An option another makes meaningless is refused, never dropped; of two
 * that exclude each other the last given wins, as in lnetctl's option
 * loops. */
static void test_combinations(void **state)
{
	(void)state;
	static const char *const lines[] = { NI2, "net set --nid 127.0.21.2@tcp --health 500",
					     "route add --net tcp9 --gateway " GW, NULL };
	struct ctl_fix f;
	static const char nid_net[] = "--net is invalid with --nid option";

	assert_int_equal(ctl_fix_init(&f, NULL, lines), 0);
	/* the NID names the net (lnetctl's check and text) */
	expect(&f, "net add --nid 127.0.21.3@tcp --net tcp", 234, nid_net);
	expect(&f, "net del --nid 127.0.21.2@tcp --net tcp", 234, nid_net);
	/* ... and the NI */
	expect(&f, "net del --nid 127.0.21.2@tcp --if lo", 234,
	       "--if with --nid is not supported by ulnet");
	ctl_has(&f.rp.err, "errno: -95", "net del --nid --if");
	expect(&f, "net show", 0, "nid: 127.0.21.2@tcp");
	if (strstr(ybuf_str(&f.rp.out), "127.0.21.3@tcp"))
		fail_msg("net add --nid --net added the NI:\n%s", ybuf_str(&f.rp.out));
	/* filters lnetctl never sends without --net or --gateway */
	expect(&f, "route show --priority 0", 234, "--priority without --net or --gateway");
	ctl_has(&f.rp.err, "errno: -95", "route show --priority");
	/* the last of --local and --peer (only a local NI is in recovery) */
	expect(&f, "debug recovery --peer --local", 0, "Local NI recovery");
	expect(&f, "debug recovery --local --peer", 0, NULL);
	assert_string_equal(ybuf_str(&f.rp.out), "");
	/* the last of import's modes */
	ctl_run_line(&f.ctx, &f.rp, NI_DOC(""), strlen(NI_DOC("")), "import --del --add w.yaml");
	assert_int_equal(f.rp.rc, 0);
	ctl_run_line(&f.ctx, &f.rp, NI_DOC(""), strlen(NI_DOC("")), "import --add --del w.yaml");
	assert_int_equal(f.rp.rc, 0);
	expect(&f, "net show", 0, "nid: 127.0.21.2@tcp");
	if (strstr(ybuf_str(&f.rp.out), "127.0.21.3@tcp"))
		fail_msg("import --add --del left the NI:\n%s", ybuf_str(&f.rp.out));
	/* import --del of global: and numa: puts back the defaults */
	static const char globals[] = "global:\n  retry_count: 3\n  discovery: 0\nnuma:\n  range: 5\n";

	ctl_run_line(&f.ctx, &f.rp, globals, strlen(globals), "import w.yaml");
	assert_int_equal(f.rp.rc, 0);
	expect(&f, "global show", 0, "retry_count: 3\n");
	ctl_has(&f.rp.out, "discovery: 0\n", "global show");
	ctl_has(&f.rp.out, "numa_range: 5\n", "global show");
	ctl_run_line(&f.ctx, &f.rp, globals, strlen(globals), "import --del w.yaml");
	assert_int_equal(f.rp.rc, 0);
	expect(&f, "global show", 0, "retry_count: 2\n");
	ctl_has(&f.rp.out, "discovery: 1\n", "global show");
	ctl_has(&f.rp.out, "numa_range: 0\n", "global show");
	ctl_fix_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_combinations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
