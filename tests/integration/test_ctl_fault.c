/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_fault.c - "ulnetctl fault drop|delay add|del|show|reset" end to
 * end: two ulnetd nodes (the built binaries, $ULNET_BIN) on 127.0.11.1@tcp
 * and 127.0.11.2@tcp with private control sockets, a high acceptor port and
 * accept=all (so it runs unprivileged too), driven by the built ulnetctl;
 * stdout, stderr and exit codes are compared with lnetctl 2.17's
 * (shared/reference/lnetctl-yaml/lnetctl-fault.txt and errors/fault-*.txt,
 * whose 192.168.77.11@tcp / .12@tcp are .1 / .2 here). A drop rule added
 * through ulnetctl makes a ping fail and is counted; a delay rule holds
 * one. Skipped when the binaries are missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N1 "127.0.11.1@tcp"
#define N2 "127.0.11.2@tcp"

static char bin_ulnetd[512], bin_ulnetctl[512];
static char dir[64];
static pid_t pids[2] = { -1, -1 };
static bool have_nodes;

static void sock_path(int node, char *buf, size_t len)
{
	snprintf(buf, len, "%s/n%d.sock", dir, node);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = calloc(1, 1 << 16);
	size_t n = 0;

	if (f && s)
		n = fread(s, 1, (1 << 16) - 1, f);
	if (s)
		s[n] = '\0';
	if (f)
		fclose(f);
	return s;
}

/* Run ulnetctl on `node` (1 or 2, 0: no --ctl) with the words of `line`
 * (split at spaces, no shell); stdout and stderr into *out / *err (to
 * free). Returns the exit status. */
static int ctl(int node, const char *line, char **out, char **err)
{
	char buf[1024], sock[128], fout[128], ferr[128];
	char *argv[64];
	int argc = 0, st = -1;

	snprintf(buf, sizeof(buf), "%s", line);
	snprintf(fout, sizeof(fout), "%s/out", dir);
	snprintf(ferr, sizeof(ferr), "%s/err", dir);
	argv[argc++] = "ulnetctl";
	if (node) {
		sock_path(node, sock, sizeof(sock));
		argv[argc++] = "--ctl";
		argv[argc++] = sock;
	}
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 63;
	     t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(fout, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(ferr, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		execv(bin_ulnetctl, argv);
		_exit(127);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	*out = slurp(fout);
	*err = slurp(ferr);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run `line` on `node`: exit `rc`, stdout exactly `out` and stderr
 * exactly `err` (NULL: not checked). */
static void expect(int node, const char *line, int rc, const char *out, const char *err)
{
	char *o, *e;
	int got = ctl(node, line, &o, &e);

	if (got != rc)
		fail_msg("'%s' exited %d, want %d\nstdout:\n%s\nstderr:\n%s", line, got, rc, o, e);
	if (out && strcmp(o, out) != 0)
		fail_msg("'%s' printed\n%s--- want\n%s", line, o, out);
	if (err && strcmp(e, err) != 0)
		fail_msg("'%s' wrote on stderr\n%s--- want\n%s", line, e, err);
	free(o);
	free(e);
}

/* A command that works: exit 0, stdout `out`, nothing on stderr. */
static void ok(int node, const char *line, const char *out)
{
	expect(node, line, 0, out, "");
}

/* Run `line`; fail unless stdout contains `text`. */
static void has(int node, const char *line, int rc, const char *text)
{
	char *o, *e;
	int got = ctl(node, line, &o, &e);

	if (got != rc)
		fail_msg("'%s' exited %d, want %d\nstdout:\n%s\nstderr:\n%s", line, got, rc, o, e);
	if (!strstr(o, text) && !strstr(e, text))
		fail_msg("'%s' does not say '%s'\nstdout:\n%s\nstderr:\n%s", line, text, o, e);
	free(o);
	free(e);
}

/* --- the nodes ---------------------------------------------------------------------- */

static int start_node(int i, int port)
{
	char sock[128], portstr[16];

	sock_path(i + 1, sock, sizeof(sock));
	snprintf(portstr, sizeof(portstr), "%d", port);
	pids[i] = fork();
	if (pids[i] == 0) {
		char logp[128];

		snprintf(logp, sizeof(logp), "%s/n%d.log", dir, i + 1);
		int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		execl(bin_ulnetd, "ulnetd", "--ctl", sock, "--accept-port", portstr, "--accept", "all",
		      (char *)NULL);
		_exit(127);
	}
	if (pids[i] < 0)
		return -1;
	for (int k = 0; k < 200; k++) {
		struct stat st;

		if (stat(sock, &st) == 0)
			return 0;
		if (waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
			pids[i] = -1;
			return -1;
		}
		usleep(20000);
	}
	return -1;
}

static int setup_nodes(void **state)
{
	(void)state;
	const char *bin = getenv("ULNET_BIN");

	if (!bin)
		return 0;
	snprintf(bin_ulnetd, sizeof(bin_ulnetd), "%s/ulnetd", bin);
	snprintf(bin_ulnetctl, sizeof(bin_ulnetctl), "%s/ulnetctl", bin);
	if (access(bin_ulnetd, X_OK) != 0 || access(bin_ulnetctl, X_OK) != 0)
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/ulnet-fault-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	/* a high port: no privilege needed; 127.0.11.x is this test's own */
	int port = 24000 + (int)(getpid() % 4000) * 2;

	if (start_node(0, port) < 0 || start_node(1, port) < 0)
		return -1;
	have_nodes = true;

	char *o, *e;
	int rc1 = ctl(1, "net add --nid " N1, &o, &e);

	free(o);
	free(e);
	int rc2 = ctl(2, "net add --nid " N2, &o, &e);

	free(o);
	free(e);
	return rc1 == 0 && rc2 == 0 ? 0 : -1;
}

static int stop_nodes(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			waitpid(pids[i], NULL, 0);
		}
	}
	if (dir[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return 0;
}

/* Every test starts with no rule on either node. */
static int clean(void **state)
{
	(void)state;
	if (!have_nodes)
		return 0;
	for (int n = 1; n <= 2; n++) {
		char *o, *e;

		free((ctl(n, "fault drop del --all", &o, &e), o));
		free(e);
		free((ctl(n, "fault delay del --all", &o, &e), o));
		free(e);
		free((ctl(n, n == 1 ? "fault link up --nid " N1 : "fault link up --nid " N2, &o, &e),
		      o));
		free(e);
	}
	return 0;
}

#define NEED_NODES()                                               \
	do {                                                       \
		if (!have_nodes)                                   \
			skip(); /* ulnetd / ulnetctl not built */  \
	} while (0)

/* --- the YAML ------------------------------------------------------------------------- */

#define HDR "fault:\n"
#define RULE(type, src, dst, ptl, msg) \
	"-     rule_type: " type "\n      fa_src: " src "\n      fa_dst: " dst "\n" \
	"      fa_ptl_mask: " ptl "\n      fa_msg_mask: " msg "\n"
#define FS(count, put, ack, get, reply) \
	"      fs_count: " count "\n      fs_put: " put "\n      fs_ack: " ack "\n" \
	"      fs_get: " get "\n      fs_reply: " reply "\n"
#define DROP(src, dst, ptl, msg, rate, iv, dropped) \
	RULE("drop", src, dst, ptl, msg) "      da_rate: " rate "\n      da_interval: " iv "\n" \
	"      ds_dropped: " dropped "\n"
#define DELAY(src, dst, ptl, msg, rate, iv, lat, delayed) \
	RULE("delay", src, dst, ptl, msg) "      la_rate: " rate "\n      la_interval: " iv "\n" \
	"      la_latency: " lat "\n      ls_delayed: " delayed "\n"
#define FS0 FS("0", "0", "0", "0", "0")

/* --- tests ---------------------------------------------------------------------------- */

/* The reference session: no rules (nothing printed; lnetctl aborts after
 * it, exit 134, ulnet exits 0), add, show newest first, delay rules,
 * reset all, del by source and destination, del --all. */
static void test_add_show_del_reset(void **state)
{
	(void)state;
	NEED_NODES();
	ok(1, "fault drop show", "");
	ok(1, "fault delay show", "");
	ok(1, "fault drop add --source " N1 " --dest " N2 " --rate 2", "");
	ok(1, "fault drop show", HDR DROP(N1, N2, "0", "15", "2", "0", "0") FS0);
	ok(1, "fault drop add --source " N2 " --dest " N1 " --rate 2", "");
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "15", "2", "0", "0") FS0
	   DROP(N1, N2, "0", "15", "2", "0", "0") FS0);
	ok(1, "fault drop del --source " N2 " --dest " N1, "");
	ok(1, "fault delay add --source " N1 " --dest " N2 " --rate 1 --latency 2", "");
	ok(1, "fault delay show", HDR DELAY(N1, N2, "0", "15", "1", "0", "2", "0") FS0);
	/* the other kind's list is its own */
	ok(1, "fault drop show", HDR DROP(N1, N2, "0", "15", "2", "0", "0") FS0);
	/* reset wants one more word (lnetctl's check_cmd min 2) */
	expect(1, "fault drop reset", 234, "drop reset: reset counters for all drop rules\n\n", "");
	expect(1, "fault delay reset", 234, "delay reset: reset counters for all delay rules\n\n", "");
	ok(1, "fault drop reset all", "");
	ok(1, "fault delay reset all", "");
	ok(1, "fault drop show", HDR DROP(N1, N2, "0", "15", "2", "0", "0") FS0);
	ok(1, "fault drop del --source " N1 " --dest " N2, "");
	ok(1, "fault delay del --all", "");
	ok(1, "fault drop show", "");
	ok(1, "fault delay show", "");
	/* nothing left to delete: the kernel's -ENOENT, on stdout */
	expect(1, "fault drop del --source " N2 " --dest " N1, 254,
	       "failed to delete drop rule: Object not found\n", "");
	expect(1, "fault delay del --all", 254, "failed to delete delay rule: Object not found\n", "");
	/* del --all takes every rule, whatever its NIDs */
	ok(1, "fault drop add -s " N1 " -d " N2 " -r 2", "");
	ok(1, "fault drop add -s *@tcp -d " N2 " -r 2", "");
	ok(1, "fault drop del --all", "");
	ok(1, "fault drop show", "");
}

/* The reference's "other options", then how options add up: the masks,
 * NIDs with wildcards, short options. */
static void test_options(void **state)
{
	(void)state;
	NEED_NODES();
	ok(1, "fault drop add --source " N2 " --dest " N1 " --message GET --portal 0 --interval 5", "");
	ok(1, "fault drop add --source " N2 " --dest " N1 " --rate 3 --health_error local_timeout", "");
	ok(1, "fault drop add --source 255.255.255.255@tcp --dest " N1 " --interval 10 --random", "");
	ok(1, "fault drop add --source " N2 " --dest " N1 " --drop_all --rate 1 --local_nid " N1, "");
	ok(1, "fault delay add --source " N2 " --dest " N1 " --interval 7 --latency 3 --message PUT", "");
	/* random, drop_all, the health error and the local NID are not shown */
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "15", "1", "0", "0") FS0
	   DROP("255.255.255.255@tcp", N1, "0", "15", "0", "10", "0") FS0
	   DROP(N2, N1, "0", "15", "3", "0", "0") FS0
	   DROP(N2, N1, "1", "4", "0", "5", "0") FS0);
	ok(1, "fault delay show", HDR DELAY(N2, N1, "0", "2", "0", "7", "3", "0") FS0);
	ok(1, "fault drop del --all", "");
	ok(1, "fault delay del --all", "");

	/* --message and --portal add up (any case); a portal keeps only PUT
	 * and GET; "*@tcp" is every node of tcp, "*" any NID, no "@" tcp */
	ok(1, "fault drop add -s *@tcp -d * -r 4 -m put -m Get -m ACK -p 3 -p 63", "");
	ok(1, "fault drop add -s 127.0.11.2 -d " N1 " -i 9 -m REPLY -m ack", "");
	ok(1, "fault drop add -s " N2 " -d " N1 " -r 5 -e local_error -e remote_dropped -e random", "");
	ok(1, "fault delay add -s " N2 " -d *@tcp -l 4 -r 6 -p 1 -p 2 -o " N1, "");
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "15", "5", "0", "0") FS0
	   DROP(N2, N1, "0", "9", "0", "9", "0") FS0
	   DROP("255.255.255.255@tcp", "<?>", "9223372036854775816", "6", "4", "0", "0") FS0);
	ok(1, "fault delay show", HDR DELAY(N2, "255.255.255.255@tcp", "6", "6", "6", "0", "4", "0") FS0);
	/* del names a rule by its exact NIDs ("*@tcp" is 255.255.255.255@tcp) */
	ok(1, "fault delay del -s " N2 " -d *@tcp", "");
	ok(1, "fault delay show", "");
	ok(1, "fault drop del -s *@tcp -d *", "");
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "15", "5", "0", "0") FS0
	   DROP(N2, N1, "0", "9", "0", "9", "0") FS0);
	/* both of N2 -> N1 go at once */
	ok(1, "fault drop del -s 127.0.11.2@tcp -d 127.0.11.1", "");
	ok(1, "fault drop show", "");
	/* a portal with neither PUT nor GET left: the kernel's -EINVAL */
	expect(1, "fault drop add -s " N2 " -d " N1 " -r 1 -p 4 -m ACK", 234,
	       "failed to add drop rule: Invalid input data or parameter\n", "");
	ok(1, "fault drop show", "");
}

/* What lnetctl prints for missing or bad options (errors/fault-*.txt). */
static void test_usage_errors(void **state)
{
	(void)state;
	NEED_NODES();
	const char *add = "fault drop add --source " N2 " --dest " N1;
	char line[256];

	expect(1, "fault foo", 255, "",
	       "ulnetctl: 'foo' is not a valid command. See 'ulnetctl --list-commands'.\n");
	snprintf(line, sizeof(line), "fault delay add --source %s --dest %s --rate 2", N2, N1);
	expect(1, line, 255, "", "latency cannot be zero\n");
	snprintf(line, sizeof(line), "%s --rate 2 --health_error foo", add);
	expect(1, line, 255, "", "");
	snprintf(line, sizeof(line), "%s --rate 2 --message FOO", add);
	expect(1, line, 255, "", "unknown message type FOO\n");
	expect(1, "fault drop add --source foo --dest " N1 " --rate 2", 234, "", "Invalid NID: foo\n");
	expect(1, "fault drop add --source " N2 " --dest " N1 " --rate 2 --local_nid <?>", 234, "",
	       "Invalid NID: <?>\n");
	expect(1, "fault drop add --source *@nonet --dest " N1 " --rate 2", 234, "",
	       "Invalid NID: *@nonet\n");
	expect(1, "fault drop add --source " N2 " --rate 2", 255, "",
	       "Please provide both source and destination of drop rule\n");
	expect(1, "fault delay add --dest " N2 " --rate 2 --latency 1", 255, "",
	       "Please provide both source and destination of delay rule\n");
	expect(1, add, 255, "",
	       "please provide either drop rate or interval but not both at the same time.\n");
	snprintf(line, sizeof(line), "%s --rate 2 --interval 3", add);
	expect(1, line, 255, "",
	       "please provide either drop rate or interval but not both at the same time.\n");
	snprintf(line, sizeof(line), "fault delay add -s %s -d %s -l 1", N2, N1);
	expect(1, line, 255, "",
	       "please provide either delay rate or interval but not both at the same time.\n");
	snprintf(line, sizeof(line), "%s --rate 2 --random", add);
	expect(1, line, 255, "", "please provide an interval to randomize\n");
	snprintf(line, sizeof(line), "%s --rate 2 --portal 64", add);
	expect(1, line, 255, "", "invalid portal: 64\n");
	snprintf(line, sizeof(line), "%s --rate 2 --portal -1", add);
	expect(1, line, 255, "", "invalid portal: 18446744073709551615\n");
	/* the first bad option in command-line order is the one reported */
	snprintf(line, sizeof(line), "%s --message BAR --portal 99 --rate 1", add);
	expect(1, line, 255, "", "unknown message type BAR\n");
	snprintf(line, sizeof(line), "%s --portal 99 --message BAR --rate 1", add);
	expect(1, line, 255, "", "invalid portal: 99\n");
	expect(1, "fault drop del --all --source " N2, 255, "",
	       "'-s' or '-d' cannot be combined with '-a'\n");
	expect(1, "fault drop del --dest " N2 " --all", 255, "",
	       "'-s' or '-d' cannot be combined with '-a'\n");
	expect(1, "fault drop del --source " N2, 255, "",
	       "Failed, please provide source and destination of rule\n");
	expect(1, "fault drop del", 234,
	       "drop del: delete LNet drop rules\n"
	       "\t--all:         Delete all drop rules\n"
	       "\t--source nid:  Delete drop rule with specified source NID\n"
	       "\t--dest nid:    Delete drop rule with specified destination NID\n\n", "");
	has(1, "fault drop add", 234, "drop add: add LNet drop rule\n\t--source nid:");
	has(1, "fault delay add", 234, "delay add: add LNet delay rule\n");
	/* the groups alone: their commands' help, exit 234 (no daemon needed) */
	has(0, "fault drop", 234, "drop del: delete LNet drop rules\n");
	has(0, "fault drop", 234, "\n\ndrop reset: reset counters for all drop rules\n\n"
	    "drop show: show drop rules\n\n");
	has(0, "fault", 234, "fault drop: Manage drop rules\nusage: ulnetctl fault drop add");
	has(0, "fault", 234, "\n\nfault delay: Manage delay rules\n");
	has(0, "fault drop help", 0, "add: add LNet drop rule");
	has(0, "fault delay add --help", 0, "\t--latency:");
	/* delay's optstring has no -i; show takes no word */
	has(1, "fault delay add -s " N2 " -d " N1 " -i 5 -l 1", 234,
	    "ulnetctl: invalid option -- 'i'");
	has(1, "fault drop show all", 234, "ulnetctl: unexpected argument 'all'");
	ok(1, "fault drop show", "");
	ok(1, "fault delay show", "");
}

/* --seed (ulnet's) is taken and not shown; what lnetctl takes and ignores
 * is refused with -95, an unknown option as everywhere. */
static void test_seed_and_refused(void **state)
{
	(void)state;
	NEED_NODES();
	ok(1, "fault drop add -s " N2 " -d " N1 " -r 3 --seed 12345", "");
	ok(1, "fault delay add -s " N2 " -d " N1 " --interval 2 -l 1 --seed=0x10", "");
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "15", "3", "0", "0") FS0);
	ok(1, "fault delay show", HDR DELAY(N2, N1, "0", "15", "0", "2", "1", "0") FS0);
	expect(1, "fault drop add -s " N2 " -d " N1 " -r 3 --seed x", 255, "", "invalid seed: x\n");
	expect(1, "fault drop add -s " N2 " -d " N1 " -r 3 --seed -1", 255, "", "invalid seed: -1\n");
	expect(1, "fault drop add -s " N2 " -d " N1 " -r 3x", 255, "", "invalid rate: 3x\n");
	expect(1, "fault drop add -s " N2 " -d " N1 " -i 4294967296", 255, "",
	       "invalid interval: 4294967296\n");
	expect(1, "fault delay add -s " N2 " -d " N1 " -r 1 -l -2", 255, "", "invalid latency: -2\n");
	expect(1, "fault drop add -s " N2 " -d " N1 " -r 3 --rule_type drop", 234, "",
	       "---\nadd:\n-     fault:\n      errno: -95\n"
	       "      descr: ! \"--rule_type is not supported by ulnet\"\n...\n");
	expect(1, "fault delay add -s " N2 " -d " N1 " -r 3 -l 1 --random", 234, "",
	       "---\nadd:\n-     fault:\n      errno: -95\n"
	       "      descr: ! \"--random is not supported by ulnet for delay rules\"\n...\n");
	has(1, "fault delay add -s " N2 " -d " N1 " -r 3 -l 1 --health_error local_error", 234,
	    "--health_error is not supported by ulnet for delay rules");
	has(1, "fault delay add -s " N2 " -d " N1 " -r 3 -l 1 --drop_all", 234,
	    "--drop_all is not supported by ulnet for delay rules");
	has(1, "fault drop add -s " N2 " -d " N1 " -r 3 --latency 1", 234,
	    "--latency is not supported by ulnet for drop rules");
	has(1, "fault drop add -s " N2 " -d " N1 " -r 3 --bogus", 234,
	    "ulnetctl: unrecognized option '--bogus'");
	has(1, "fault drop reset everything", 234, "ulnetctl: unexpected argument 'everything'");
	has(1, "fault drop reset all more", 234, "ulnetctl: unexpected argument 'more'");
	/* nothing was added by the refused ones */
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "15", "3", "0", "0") FS0);
	ok(1, "fault delay show", HDR DELAY(N2, N1, "0", "15", "0", "2", "1", "0") FS0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Which of `n` pings of node 2 from node 1 (timeout 1 s) fail, as a
 * string of '.' (answered) and 'x' (failed). */
static void ping_pattern(int n, char *out)
{
	for (int i = 0; i < n; i++) {
		char *o, *e;
		int rc = ctl(1, "ping --timeout 1 " N2, &o, &e);

		out[i] = rc == 0 ? '.' : 'x';
		if (rc != 0 && rc != 255)
			fail_msg("ping exited %d: %s%s", rc, o, e);
		free(o);
		free(e);
	}
	out[n] = '\0';
}

/* The rules act. Delay rules on node 1 hold the push PUT it sends and
 * the ACK it gets (a discovery takes 2 s more); a drop rule on node 2 for
 * what node 1 sends it makes node 1's ping fail (its GET is dropped as it
 * arrives), one on node 1 for the REPLYs it gets too; each is counted by
 * type; deleted, the ping works again. */
static void test_rules_act(void **state)
{
	(void)state;
	NEED_NODES();
	const char *ping = "ping --timeout 1 " N2;

	ok(1, "fault delay add --source " N1 " --dest " N2 " --rate 1 --latency 1 --message PUT", "");
	ok(1, "fault delay add --source " N2 " --dest " N1 " --rate 1 --latency 1 --message ACK", "");
	double t0 = now_s();

	has(1, "discover --force " N2, 0, "primary nid: " N2);
	double took = now_s() - t0;

	if (took < 1.9)
		fail_msg("the delayed discovery took %.3f s, want at least 2 s", took);
	ok(1, "fault delay show",
	   HDR DELAY(N2, N1, "0", "1", "1", "0", "1", "1") FS("1", "0", "1", "0", "0")
	   DELAY(N1, N2, "0", "2", "1", "0", "1", "1") FS("1", "1", "0", "0", "0"));
	ok(1, "fault delay del --all", "");
	has(1, ping, 0, "primary nid: " N2);

	ok(2, "fault drop add --source " N1 " --dest " N2 " --rate 1", "");
	expect(1, ping, 255, "manage:\n- ping:\n  errno: -5\n"
	       "  descr: ! 'failed to ping " N2 ": Input/output error'\n", "");
	ok(2, "fault drop show", HDR DROP(N1, N2, "0", "15", "1", "0", "1") FS("1", "0", "0", "1", "0"));
	ok(2, "fault drop reset all", "");
	ok(2, "fault drop show", HDR DROP(N1, N2, "0", "15", "1", "0", "0") FS0);
	ok(2, "fault drop del --all", "");
	has(1, ping, 0, "primary nid: " N2);

	ok(1, "fault drop add --source " N2 " --dest " N1 " --rate 1 --message REPLY", "");
	expect(1, ping, 255, NULL, "");
	ok(1, "fault drop show", HDR DROP(N2, N1, "0", "8", "1", "0", "1") FS("1", "0", "0", "0", "1"));
	ok(1, "fault drop del --all", "");
	has(1, ping, 0, "primary nid: " N2);
}

/* --seed makes the picking reproducible: the same seed, the same pings
 * dropped (1 in 4, at a position drawn per run of 4). */
static void test_seed_replays(void **state)
{
	(void)state;
	NEED_NODES();
	char first[16], again[16];

	has(1, "ping --timeout 1 " N2, 0, "primary nid: " N2);
	ok(2, "fault drop add --source " N1 " --dest " N2 " --rate 4 --seed 4242", "");
	ping_pattern(8, first);
	ok(2, "fault drop del --all", "");
	ok(2, "fault drop add --source " N1 " --dest " N2 " --rate 4 --seed 4242", "");
	ping_pattern(8, again);
	ok(2, "fault drop del --all", "");
	/* one drop in each run of 4 */
	for (int run = 0; run < 2; run++) {
		int x = 0;

		for (int i = 0; i < 4; i++)
			x += first[run * 4 + i] == 'x';
		if (x != 1)
			fail_msg("pings with a 1-in-4 rule: %s", first);
	}
	if (strcmp(first, again) != 0)
		fail_msg("the same seed dropped %s, then %s", first, again);
	has(1, "ping --timeout 1 " N2, 0, "primary nid: " N2);
}

/* What "net show -v 3" on node 1 says of N1: its status (1 up, 0 down)
 * and fatal_error (0 or 1), from the lines after its nid (0@lo comes
 * first and is always up). */
static void n1_state(int *up, int *fatal)
{
	char *o, *e, *at, *st, *fe;

	assert_int_equal(ctl(1, "net show -v 3", &o, &e), 0);
	at = strstr(o, "nid: " N1 "\n");
	if (!at)
		fail_msg("net show -v 3 does not list " N1 ":\n%s", o);
	st = strstr(at, "status: ");
	fe = strstr(at, "fatal_error: ");
	if (!st || !fe)
		fail_msg("no status or fatal_error for " N1 ":\n%s", at);
	*up = strncmp(st + 8, "up\n", 3) == 0 ? 1 : strncmp(st + 8, "down\n", 5) == 0 ? 0 : -1;
	*fatal = atoi(fe + 13);
	free(o);
	free(e);
}

static void expect_n1(int up, int fatal)
{
	int u, f;

	n1_state(&u, &f);
	if (u != up || f != fatal)
		fail_msg(N1 ": status %s, fatal_error %d; want %s, %d", u == 1 ? "up" : "down", f,
			 up ? "up" : "down", fatal);
}

/* fault link (ulnet's own): node 1's only NI down makes it fatal and
 * down in net show -v 3, listed by fault link show, its pings fail both
 * ways (its connections closed, none made or taken); up
 * brings it back, and so does the end of --duration. Bad input is refused
 * naming the option or the NID. */
static void test_link(void **state)
{
	(void)state;
	NEED_NODES();
	const char *ping = "ping --timeout 1 " N2;

	ok(1, "fault link show", "");
	has(1, ping, 0, "primary nid: " N2);
	ok(1, "fault link down --nid " N1, "");
	expect_n1(0, 1);
	ok(1, "fault link show",
	   "link:\n-     nid: " N1 "\n      fault: down\n      interface: up\n");
	has(1, ping, 255, "failed to ping " N2);
	/* and nothing comes in: node 2's connection is closed at once */
	has(2, "ping --timeout 1 " N1, 255, "failed to ping " N1 ": Connection reset by peer");
	ok(1, "fault link up --nid " N1, "");
	has(2, "ping --timeout 1 " N1, 0, "primary nid: " N1);
	expect_n1(1, 0);
	ok(1, "fault link show", "");
	has(1, ping, 0, "primary nid: " N2);

	ok(1, "fault link down --nid " N1 " --duration 1", "");
	has(1, "fault link show", 0, "      seconds_left: ");
	expect_n1(0, 1);
	bool back = false;

	for (int i = 0; i < 50 && !back; i++) {
		int u, f;

		usleep(100000);
		n1_state(&u, &f);
		back = u == 1 && f == 0;
	}
	if (!back)
		fail_msg("the link is still down 5 s after its 1 s --duration");
	has(1, ping, 0, "primary nid: " N2);

	/* refused, naming what is wrong */
	has(1, "fault link down", 234, "--nid is required");
	has(1, "fault link down --nid 127.0.11.9@tcp", 254,
	    "--nid 127.0.11.9@tcp: no such local NI");
	has(1, "fault link down --nid bogus@@", 234, "invalid --nid: bogus@@");
	has(1, "fault link down --nid " N1 " --duration x", 234, "invalid --duration: x");
	has(1, "fault link down --nid " N1 " --duration 0", 234, "invalid --duration: 0");
	has(1, "fault link up --nid " N1 " --duration 3", 161,
	    "--duration is not supported by link up");
	has(1, "fault link down --nid 0@lo", 234, "--nid 0@lo: not a link");
	ok(1, "fault link show", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_add_show_del_reset, clean),
		cmocka_unit_test_setup(test_options, clean),
		cmocka_unit_test_setup(test_usage_errors, clean),
		cmocka_unit_test_setup(test_seed_and_refused, clean),
		cmocka_unit_test_setup(test_rules_act, clean),
		cmocka_unit_test_setup(test_seed_replays, clean),
		cmocka_unit_test_setup(test_link, clean),
	};

	return cmocka_run_group_tests(tests, setup_nodes, stop_nodes);
}
