/* SPDX-License-Identifier: MIT */
/*
 * ulnetd - one ulnet node as a daemon, managed with ulnetctl.
 *
 *   ulnetd [--config FILE] [--ctl PATH] [--foreground | --daemon]
 *          [--log-level error|warn|info|debug] [--syslog]
 *          [--accept-port N] [--accept secure|all|none] [--accept-backlog N]
 *          [--accept-port-bulk N]
 *          [--verify-peer-nid] [--pid N]
 *          [--module-option MODULE.PARAM=VALUE]... [--module-options FILE]...
 *          [--metrics ADDR:PORT]
 *
 * Module options (the kernel's lnet, ksocklnd and ko2iblnd parameters,
 * modopts.h) come first, as at module load, then --config, then the
 * control socket serves.
 *
 * Runs in the foreground by default (systemd Type=simple); --daemon forks.
 * The main thread polls the control socket and a signal pipe; each
 * accepted client is served by a short-lived worker thread (at most
 * MAX_WORKERS at once), so a blocking ping cannot wedge other clients, and
 * ping/discover waits are capped (ctl_ctx.max_wait_s).
 * SIGTERM/SIGINT: stop accepting, wait for workers, ulnet_destroy(),
 * remove the socket, exit 0.
 *
 * --metrics serves Prometheus scrapes from a thread of its own
 * (metrics_http.h), which reads the node under the same read lock as the
 * show commands and never holds up the control socket.
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "ctl_cmds.h"
#include "ctl_proto.h"
#include "metrics_http.h"
#include "modopts.h"

#define MAX_WORKERS 16
#define REQ_TIMEOUT_MS 5000   /* a whole request must arrive within this */
#define STOP_GRACE_MS 3000    /* SIGTERM: how long running commands may finish */
#define MAX_MODOPT_ARGS 1024  /* --module-option and --module-options, in all */

static int sig_pipe[2] = { -1, -1 };
static atomic_int nworkers;
static bool use_syslog;
static enum ulnet_log_level log_level = ULNET_LOG_WARN;

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* pipe full: a stop is already pending */
	}
	errno = saved;
}

static void dlog(enum ulnet_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dlog(enum ulnet_log_level lvl, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *const name[] = { "error", "warn", "info", "debug" };
	char msg[1024];
	va_list ap;

	if (lvl > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (use_syslog)
		syslog(prio[lvl], "%s", msg);
	else
		fprintf(stderr, "ulnetd: %s: %s\n", name[lvl], msg);
}

static void lib_log(void *arg, enum ulnet_log_level level, const char *msg)
{
	dlog(level, "%s", msg);
}

/*
 * One slot per running client. `claimed` decides who answers the client and
 * owns its fd: the worker when its command ends, or the main thread when it
 * gives up on a command at exit. Slots are static, so the main thread can
 * look at them while workers finish.
 */
struct worker {
	struct ctl_ctx *ctx;
	int fd;
	/* the client's network namespace (client_netns_open()): an fd, -1
	 * ours, -2 unknown (ns_why says why) */
	int nsfd;
	char ns_why[256];
	bool busy;                /* slots_lock */
	atomic_int claimed;
};

static struct worker slots[MAX_WORKERS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* Text for a request that could not be read (NULL: say nothing, the
 * client is gone). */
static const char *bad_request_text(int rc)
{
	switch (rc) {
	case -ECONNRESET:
	case -EPIPE:
		return NULL;
	case -EPROTO:
		return "ulnetd: malformed request (not the ulnetctl control protocol)\n";
	case -E2BIG:
		return "ulnetd: request too large (at most 128 arguments of 4 KiB and a 4 MiB file)\n";
	case -ETIMEDOUT:
		return "ulnetd: incomplete request (timed out)\n";
	case -ENOMEM:
		return "ulnetd: out of memory\n";
	default:
		return "ulnetd: cannot read the request\n";
	}
}

/* After an error reply: stop writing, read (and drop) what the client still
 * sends for a moment, so it sees the reply rather than a reset. */
static void linger_close(int fd)
{
	char junk[4096];

	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 64; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) <= 0 || read(fd, junk, sizeof(junk)) <= 0)
			break;
	}
	close(fd);
}

/*
 * A client's network namespace. As a kernel NI is created in the namespace
 * of the process that configures it, an NI added by `ip netns exec NS
 * ulnetctl net add ...` must see NS's interfaces and open its sockets there
 * (socklnd keeps that namespace for the NI's life, sock_netns.c), so each
 * command runs in its client's namespace.
 *
 * Opened by the main thread as soon as the connection is accepted (the pid
 * is the one connect() recorded, and the client is still waiting for its
 * answer, so the pid cannot have been reused yet). Returns an fd of the
 * client's namespace when it differs from ours, -1 when it is ours (or
 * this host has no /proc: one namespace is all there is to know of), -2
 * with the reason in `why` when it cannot be told: the command is then
 * refused rather than run in the wrong namespace.
 */
static int client_netns_open(int cfd, char *why, size_t whylen)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct stat mine, theirs;
	char path[64];
	int nfd;

	if (stat("/proc/self/ns/net", &mine) < 0)
		return -1;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0) {
		snprintf(why, whylen, "ulnetd: cannot tell the client's network namespace "
			 "(it is in a pid namespace this daemon cannot see)\n");
		return -2;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)cr.pid);
	nfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nfd < 0 || fstat(nfd, &theirs) < 0) {
		snprintf(why, whylen, "ulnetd: cannot tell the network namespace of the client "
			 "(pid %d): %s: %s\n", (int)cr.pid, path, strerror(errno));
		if (nfd >= 0)
			close(nfd);
		return -2;
	}
	if (theirs.st_dev == mine.st_dev && theirs.st_ino == mine.st_ino) {
		close(nfd);
		return -1;
	}
	return nfd;
}

/* Enter the namespace client_netns_open() gave (a worker is a one-shot
 * thread: nothing to restore). 0, or -1 with the reason in `why`
 * (setns needs CAP_SYS_ADMIN). */
static int enter_client_netns(int nsfd, char *why, size_t whylen)
{
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) == 0)
		return 0;
	snprintf(why, whylen,
		 "ulnetd: the client is in another network namespace, which this daemon cannot "
		 "enter: %s\n", strerror(errno));
	return -1;
}

static void *serve(void *arg)
{
	struct worker *w = arg;
	struct ctl_request rq;
	struct ctl_reply rp;
	const char *bad = NULL;
	bool answer = true;
	int rc = ctl_read_request(w->fd, REQ_TIMEOUT_MS, &rq);

	ctl_reply_init(&rp);
	if (rc < 0) {
		dlog(ULNET_LOG_INFO, "bad client request: %s", strerror(-rc));
		bad = bad_request_text(rc);
		answer = bad != NULL;
		rp.rc = 255;
		if (bad)
			ybuf_puts(&rp.err, bad);
	} else {
		char nswhy[256];

		if (rq.argc > 0)
			dlog(ULNET_LOG_DEBUG, "command: %s%s%s", rq.argv[0], rq.argc > 1 ? " " : "",
			     rq.argc > 1 ? rq.argv[1] : "");
		if (w->nsfd == -2)
			snprintf(nswhy, sizeof(nswhy), "%s", w->ns_why);
		if (w->nsfd == -2 || enter_client_netns(w->nsfd, nswhy, sizeof(nswhy)) < 0) {
			dlog(ULNET_LOG_WARN, "%.*s", (int)strcspn(nswhy, "\n"), nswhy);
			rp.rc = 255;
			ybuf_puts(&rp.err, nswhy);
		} else {
			ctl_run(w->ctx, rq.argc, rq.argv, rq.blob, rq.bloblen, &rp);
		}
		ctl_request_free(&rq);
	}
	if (w->nsfd >= 0)
		close(w->nsfd);
	if (atomic_exchange(&w->claimed, 1) == 0) {
		if (answer) {
			int wrc = ctl_write_reply(w->fd, REQ_TIMEOUT_MS, &rp);

			if (wrc < 0)
				dlog(ULNET_LOG_INFO, "reply not delivered: %s", strerror(-wrc));
		}
		if (rc < 0)
			linger_close(w->fd);
		else
			close(w->fd);
	}
	/* else: the main thread answered (exit); the fd is its business */
	ctl_reply_free(&rp);
	pthread_mutex_lock(&slots_lock);
	w->busy = false;
	pthread_mutex_unlock(&slots_lock);
	atomic_fetch_sub(&nworkers, 1);
	return NULL;
}

/* At exit: answer the clients whose commands still run (a ping waiting for
 * its timeout) instead of leaving them hanging. */
static int abandon_workers(void)
{
	int n = 0;

	pthread_mutex_lock(&slots_lock);
	for (int i = 0; i < MAX_WORKERS; i++) {
		struct worker *w = &slots[i];

		if (!w->busy || atomic_exchange(&w->claimed, 1) != 0)
			continue;
		struct ctl_reply rp;

		ctl_reply_init(&rp);
		rp.rc = 255;
		ybuf_puts(&rp.err, "ulnetd: stopping (SIGTERM); the command was abandoned\n");
		ctl_write_reply(w->fd, 500, &rp);
		ctl_reply_free(&rp);
		shutdown(w->fd, SHUT_RDWR);
		n++;
	}
	pthread_mutex_unlock(&slots_lock);
	return n;
}

/* Read a --config file: at most CTL_YAML_MAX_BYTES (a larger one is
 * -EFBIG, never applied truncated). */
/* Only root and the daemon's own user may run commands (SO_PEERCRED):
 * the socket's mode keeps others out, this holds even when the mode or the
 * directory was loosened. A refused client is told why, logged, dropped. */
static bool client_allowed(int cfd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	uid_t me = geteuid();

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		dlog(ULNET_LOG_WARN, "refused a control connection: cannot get its credentials: %s",
		     strerror(errno));
		close(cfd);
		return false;
	}
	if (cr.uid == 0 || cr.uid == me)
		return true;
	dlog(ULNET_LOG_WARN, "refused a control connection from uid %u pid %d: only root and uid %u are served",
	     (unsigned)cr.uid, (int)cr.pid, (unsigned)me);
	struct ctl_reply no;

	ctl_reply_init(&no);
	no.rc = 255;
	ybuf_printf(&no.err, "ulnetd: permission denied: uid %u may not use this daemon (only root and uid %u)\n",
		    (unsigned)cr.uid, (unsigned)me);
	ctl_write_reply(cfd, 200, &no);
	ctl_reply_free(&no);
	/* Drop what the client already sent without waiting for more (the
	 * main thread must not block): it still reads the reply. */
	shutdown(cfd, SHUT_WR);
	char junk[4096];

	for (int i = 0; i < 4 && recv(cfd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
		;
	close(cfd);
	return false;
}

static int read_file(const char *path, struct ybuf *b)
{
	FILE *f = fopen(path, "r");
	char chunk[65536];
	int rc = 0;

	if (!f)
		return -errno;
	for (size_t iter = 0; iter <= CTL_YAML_MAX_BYTES / sizeof(chunk) + 1; iter++) {
		size_t n = fread(chunk, 1, sizeof(chunk), f);

		if (n == 0)
			break;
		ybuf_add(b, chunk, n);
		if (b->len > CTL_YAML_MAX_BYTES) {
			rc = -EFBIG;
			break;
		}
	}
	if (rc == 0)
		rc = ferror(f) ? -EIO : b->oom ? -ENOMEM : 0;
	fclose(f);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ulnetd [options]\n"
		"  --config FILE        apply FILE (lnetctl export/import YAML) at start\n"
		"  --ctl PATH           control socket (default: /run/ulnet/ulnetd.sock as root,\n"
		"                       else $XDG_RUNTIME_DIR/ulnet/ulnetd.sock or /tmp/ulnet-$UID/ulnetd.sock)\n"
		"  --foreground         stay in the foreground (default)\n"
		"  --daemon             fork into the background\n"
		"  --log-level LEVEL    error, warn (default), info or debug\n"
		"  --syslog             log to syslog instead of stderr\n"
		"  --accept-port N      default acceptor port of tcp NIs (default 988)\n"
		"  --accept MODE        default acceptor mode: secure (default), all, none\n"
		"  --accept-backlog N   listen() backlog of tcp NIs that listen, 1..65535\n"
		"                       (default 127, the lnet module parameter accept_backlog)\n"
		"  --accept-port-bulk N port of the bulk connections of tcp NIs, 0..65535:\n"
		"                       dialled for BULK_IN, BULK_OUT and ANY, and listened on\n"
		"                       beside the acceptor port (default 0: the acceptor port;\n"
		"                       the lnet module parameter accept_port_bulk)\n"
		"                       (these four take precedence over lnet.accept_port,\n"
		"                       lnet.accept, lnet.accept_backlog and lnet.accept_port_bulk)\n"
		"  --module-option MODULE.PARAM=VALUE\n"
		"                       a module parameter of lnet, ksocklnd or ko2iblnd, as in\n"
		"                       /etc/modprobe.d (lnet.networks=\"tcp0(eth0)\",\n"
		"                       lnet.routes=..., lnet.forwarding=enabled,\n"
		"                       ksocklnd.peer_credits=16, ko2iblnd.cksum=1...);\n"
		"                       repeatable. One ulnet cannot honour is refused: the\n"
		"                       daemon does not start\n"
		"  --module-options FILE\n"
		"                       module parameters in modprobe.d syntax ('options lnet\n"
		"                       P=V ...' lines); repeatable, in order with the above.\n"
		"                       Applied first, then --config\n"
		"  --verify-peer-nid    tcp NIs refuse an incoming connection whose HELLO claims\n"
		"                       a NID other than its source address (beyond the kernel,\n"
		"                       which trusts a privileged port's claim)\n"
		"  --pid N              LNet PID of the node (default 12345)\n"
		"  --selftest           run the LNet selftest agent: the node answers a kernel\n"
		"                       lst console as a test server (like loading lnet_selftest)\n"
		"  --session-timeout S  selftest session_timeout, seconds without a console\n"
		"                       RPC before the session ends (default 100, 0 never)\n"
		"  --metrics ADDR:PORT  serve Prometheus metrics on http://ADDR:PORT/metrics\n"
		"                       (ADDR numeric: 127.0.0.1, 0.0.0.0, [::1]; default off)\n"
		"  --help               this text\n");
}

/* A decimal option value in min..max; else a message naming it, -1. */
static int parse_range(const char *opt, const char *v, long min, long max, long *out)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < min || n > max) {
		fprintf(stderr, "ulnetd: bad value for %s: '%s' (%ld..%ld)\n", opt, v, min, max);
		return -1;
	}
	*out = n;
	return 0;
}

static int parse_level(const char *s, enum ulnet_log_level *l)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };

	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*l = (enum ulnet_log_level)i;
			return 0;
		}
	return -EINVAL;
}

/* ulnetd's log, for the module options' warnings. */
static void modopt_log(void *arg, enum ulnet_log_level level, const char *msg)
{
	dlog(level, "%s", msg);
}

/* The module options in the order given (a file or one MODULE.PARAM=V). */
struct modopt_arg {
	bool file;
	const char *s;
};

/* Parse the module options, then take ulnetd's own acceptor options over
 * them. Returns 0, or 1 (the exit status) with the error logged. */
static int load_modopts(struct modopts *mo, const struct modopt_arg *a, int n, long accept_port,
			const char *accept, long accept_backlog, long accept_port_bulk)
{
	int rc = 0;

	for (int i = 0; i < n && rc == 0; i++)
		rc = a[i].file ? modopts_parse_file(mo, a[i].s) : modopts_set_arg(mo, a[i].s);
	if (rc == 0) {
		if (accept_port)
			mo->accept_port = (int)accept_port;
		if (accept)
			snprintf(mo->accept, sizeof(mo->accept), "%s", accept);
		if (accept_backlog)
			mo->accept_backlog = (int)accept_backlog;
		if (accept_port_bulk)
			mo->accept_port_bulk = (int)accept_port_bulk;
		rc = modopts_finish(mo);
	}
	if (rc < 0) {
		dlog(ULNET_LOG_ERROR, "%s", mo->err);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *config = NULL, *ctl = NULL, *accept = NULL;
	char path[256];
	bool daemonize = false, selftest = false, verify_peer_nid = false;
	long accept_port = 0, pid = 0, session_timeout = -2, accept_backlog = 0;
	long accept_port_bulk = 0;
	static struct modopt_arg moargs[MAX_MODOPT_ARGS];
	int nmoargs = 0;
	const char *metrics = NULL;
	struct sockaddr_storage metrics_sa;
	socklen_t metrics_salen = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--foreground") == 0 || strcmp(a, "-f") == 0) {
			daemonize = false;
		} else if (strcmp(a, "--daemon") == 0 || strcmp(a, "-d") == 0) {
			daemonize = true;
		} else if (strcmp(a, "--syslog") == 0) {
			use_syslog = true;
		} else if (v && strcmp(a, "--config") == 0) {
			config = v;
			i++;
		} else if (v && strcmp(a, "--ctl") == 0) {
			ctl = v;
			i++;
		} else if (v && strcmp(a, "--accept") == 0) {
			accept = v;
			i++;
			if (!modopts_accept_mode_ok(v)) {
				fprintf(stderr, "ulnetd: --accept must be secure, all or none\n");
				return 2;
			}
		} else if (v && (strcmp(a, "--accept-port") == 0 || strcmp(a, "--pid") == 0)) {
			char *end;
			long n = strtol(v, &end, 0);

			if (*end || n < 0 || (a[2] == 'a' && n > 65535) || n > 0x7fffffff) {
				fprintf(stderr, "ulnetd: bad value for %s: '%s'\n", a, v);
				return 2;
			}
			*(a[2] == 'a' ? &accept_port : &pid) = n;
			i++;
		} else if (v && strcmp(a, "--accept-port-bulk") == 0) {
			/* as --accept-port: 0 is "not given" (the acceptor port) */
			if (parse_range(a, v, 0, 65535, &accept_port_bulk) < 0)
				return 2;
			i++;
		} else if (v && strcmp(a, "--accept-backlog") == 0) {
			if (parse_range(a, v, MODOPT_BACKLOG_MIN, MODOPT_BACKLOG_MAX, &accept_backlog) < 0)
				return 2;
			i++;
		} else if (v && (strcmp(a, "--module-option") == 0 ||
				 strcmp(a, "--module-options") == 0)) {
			if (nmoargs == MAX_MODOPT_ARGS) {
				fprintf(stderr, "ulnetd: more than %d --module-option(s)\n",
					MAX_MODOPT_ARGS);
				return 2;
			}
			moargs[nmoargs].file = strcmp(a, "--module-options") == 0;
			moargs[nmoargs++].s = v;
			i++;
		} else if (strcmp(a, "--verify-peer-nid") == 0) {
			verify_peer_nid = true;
		} else if (strcmp(a, "--selftest") == 0) {
			selftest = true;
		} else if (v && strcmp(a, "--session-timeout") == 0) {
			if (parse_range(a, v, 0, 86400, &session_timeout) < 0)
				return 2;
			i++;
		} else if (v && strcmp(a, "--metrics") == 0) {
			char why[160];

			if (metrics_addr_parse(v, &metrics_sa, &metrics_salen, why, sizeof(why)) < 0) {
				fprintf(stderr, "ulnetd: bad value for --metrics: '%s' (%s)\n", v, why);
				return 2;
			}
			metrics = v;
			i++;
		} else if (v && strcmp(a, "--log-level") == 0) {
			if (parse_level(v, &log_level) < 0) {
				fprintf(stderr, "ulnetd: bad log level '%s'\n", v);
				return 2;
			}
			i++;
		} else {
			fprintf(stderr, "ulnetd: unrecognized or incomplete option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (session_timeout != -2 && !selftest) {
		fprintf(stderr, "ulnetd: --session-timeout needs --selftest\n");
		return 2;
	}
	if (ctl)
		snprintf(path, sizeof(path), "%s", ctl);
	else
		ctl_default_path(path, sizeof(path));
	if (use_syslog)
		openlog("ulnetd", LOG_PID, LOG_DAEMON);

	/* module options: all checked before anything else happens */
	static struct modopts mo;

	modopts_init(&mo);
	mo.log = modopt_log;
	if (load_modopts(&mo, moargs, nmoargs, accept_port, accept, accept_backlog,
			 accept_port_bulk)) {
		modopts_free(&mo);
		return 1;
	}

	struct ybuf cfg;

	ybuf_init(&cfg);
	if (config) {
		int rc = read_file(config, &cfg);

		if (rc == -EFBIG) {
			dlog(ULNET_LOG_ERROR, "config '%s' is larger than %u bytes (%u MiB), the limit of a YAML document",
			     config, CTL_YAML_MAX_BYTES, CTL_YAML_MAX_BYTES >> 20);
			ybuf_free(&cfg);
			return 1;
		}
		if (rc < 0) {
			dlog(ULNET_LOG_ERROR, "cannot read config '%s': %s", config, strerror(-rc));
			ybuf_free(&cfg);
			return 1;
		}
	}
	char why[512];
	int lfd = ctl_listen(path, why, sizeof(why));

	if (lfd < 0) {
		dlog(ULNET_LOG_ERROR, "cannot listen on %s: %s", path, why[0] ? why : strerror(-lfd));
		ybuf_free(&cfg);
		return 1;
	}
	/* bound before --daemon forks, so that a port in use is the exit
	 * status of the command that started us */
	int mfd = -1;

	if (metrics) {
		mfd = metrics_http_listen(&metrics_sa, metrics_salen);
		if (mfd < 0) {
			dlog(ULNET_LOG_ERROR, "cannot listen on --metrics %s: %s", metrics,
			     strerror(-mfd));
			close(lfd);
			unlink(path);
			ybuf_free(&cfg);
			return 1;
		}
	}
	if (daemonize) {
		/* Fork before any thread exists (ulnet_create starts one). */
		pid_t child = fork();

		if (child < 0) {
			dlog(ULNET_LOG_ERROR, "fork: %s", strerror(errno));
			return 1;
		}
		if (child > 0)
			_exit(0);
		setsid();
		int nul = open("/dev/null", O_RDWR);

		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			if (use_syslog)
				dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		dlog(ULNET_LOG_ERROR, "pipe: %s", strerror(errno));
		return 1;
	}
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct ulnet_opts opts;

	memset(&opts, 0, sizeof(opts));
	opts.pid = (ulnet_pid_t)pid;
	opts.log = lib_log;
	opts.log_level = log_level;

	struct ctl_ctx ctx;
	int rc = ctl_ctx_init(&ctx, &opts, true);

	if (rc < 0) {
		dlog(ULNET_LOG_ERROR, "cannot create the LNet instance: %s", strerror(-rc));
		unlink(path);
		return 1;
	}
	ctx.verify_peer_nid = verify_peer_nid;
	/* "module load", then "lnet configure --all" with the module
	 * parameters, as the kernel's config_on_load; --config after them */
	char moerr[MODOPT_ERR_MAX];

	rc = modopts_load(&ctx, &mo);
	if (rc == 0)
		rc = modopts_configure(&ctx, true, moerr, sizeof(moerr));
	else
		snprintf(moerr, sizeof(moerr), "%s", mo.err);
	if (rc < 0) {
		dlog(ULNET_LOG_ERROR, "%s", moerr);
		ybuf_free(&cfg);
		ctl_ctx_fini(&ctx);
		modopts_free(&mo);
		close(lfd);
		if (mfd >= 0)
			close(mfd);
		unlink(path);
		return 1;
	}
	if (config) {
		struct ybuf err;

		ybuf_init(&err);
		rc = ctl_apply_config(&ctx, config, ybuf_str(&cfg), cfg.len, &err);
		if (rc < 0) {
			dlog(ULNET_LOG_ERROR, "configuration '%s' failed:\n%s", config, ybuf_str(&err));
			ybuf_free(&err);
			ybuf_free(&cfg);
			ctl_ctx_fini(&ctx);
			close(lfd);
			if (mfd >= 0)
				close(mfd);
			unlink(path);
			return 1;
		}
		ybuf_free(&err);
		/* "module parameters" of lnet configure --all */
		if (ctl_ctx_set_modparams(&ctx, config, ybuf_str(&cfg), cfg.len) < 0)
			dlog(ULNET_LOG_WARN, "no memory to keep '%s' for lnet configure --all", config);
	}
	ybuf_free(&cfg);
	if (selftest) {
		/* lnet_selftest's session_timeout: 0 is never (the API's -1) */
		struct ulnet_selftest_conf sc = {
			.session_timeout = session_timeout == -2 ? 0 : session_timeout == 0 ? -1
										: (int)session_timeout,
		};

		rc = ctl_ctx_enable_selftest(&ctx, &sc);
		if (rc < 0) {
			dlog(ULNET_LOG_ERROR, "cannot start the selftest agent: %s", strerror(-rc));
			ctl_ctx_fini(&ctx);
			close(lfd);
			if (mfd >= 0)
				close(mfd);
			unlink(path);
			return 1;
		}
		dlog(ULNET_LOG_INFO, "selftest agent running (portals 50-52)");
	}
	struct metrics_http *mh = NULL;

	if (mfd >= 0) {
		rc = metrics_http_start(&mh, &ctx, mfd, NULL);
		if (rc < 0) {
			dlog(ULNET_LOG_ERROR, "cannot serve --metrics %s: %s", metrics, strerror(-rc));
			ctl_ctx_fini(&ctx);
			close(lfd);
			unlink(path);
			return 1;
		}
		dlog(ULNET_LOG_INFO, "serving metrics on http://%s/metrics", metrics);
	}
	dlog(ULNET_LOG_INFO, "listening on %s", path);

	bool stop = false;

	for (unsigned long iter = 0; !stop; iter++) {
		struct pollfd pf[2] = { { .fd = lfd, .events = POLLIN }, { .fd = sig_pipe[0], .events = POLLIN } };
		int n = poll(pf, 2, 1000);

		if (n < 0 && errno != EINTR) {
			dlog(ULNET_LOG_ERROR, "poll: %s", strerror(errno));
			break;
		}
		if (n <= 0)
			continue;
		if (pf[1].revents) {
			char c;

			while (read(sig_pipe[0], &c, 1) > 0)
				;
			stop = true;
			break;
		}
		if (!(pf[0].revents & POLLIN))
			continue;
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (cfd < 0)
			continue;
		if (!client_allowed(cfd))
			continue;
		char nswhy[256] = "";
		int nsfd = client_netns_open(cfd, nswhy, sizeof(nswhy));

		if (atomic_load(&nworkers) >= MAX_WORKERS) {
			struct ctl_reply busy;

			ctl_reply_init(&busy);
			busy.rc = 255;
			ybuf_puts(&busy.err, "ulnetd: busy, too many clients; try again\n");
			ctl_write_reply(cfd, 1000, &busy);
			ctl_reply_free(&busy);
			close(cfd);
			if (nsfd >= 0)
				close(nsfd);
			continue;
		}
		struct worker *w = NULL;
		pthread_t th;
		pthread_attr_t attr;

		pthread_mutex_lock(&slots_lock);
		for (int i = 0; i < MAX_WORKERS && !w; i++)
			if (!slots[i].busy)
				w = &slots[i];
		if (w) {
			w->busy = true;
			w->ctx = &ctx;
			w->fd = cfd;
			w->nsfd = nsfd;
			snprintf(w->ns_why, sizeof(w->ns_why), "%s", nswhy);
			atomic_store(&w->claimed, 0);
		}
		pthread_mutex_unlock(&slots_lock);
		if (!w) { /* a slot frees just after its worker counted down */
			close(cfd);
			if (nsfd >= 0)
				close(nsfd);
			continue;
		}
		atomic_fetch_add(&nworkers, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, serve, w) != 0) {
			atomic_fetch_sub(&nworkers, 1);
			close(cfd);
			if (nsfd >= 0)
				close(nsfd);
			pthread_mutex_lock(&slots_lock);
			w->busy = false;
			pthread_mutex_unlock(&slots_lock);
		}
		pthread_attr_destroy(&attr);
	}
	dlog(ULNET_LOG_INFO, "stopping");
	close(lfd);
	unlink(path);
	/* a scrape under way ends first; none starts after */
	metrics_http_stop(mh);
	/* Running commands get a short grace; one still blocked after it (a
	 * ping waiting out its timeout) is answered "abandoned" and the
	 * process exits without tearing the instance down under it. */
	for (int i = 0; i < STOP_GRACE_MS / 50 && atomic_load(&nworkers) > 0; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	if (atomic_load(&nworkers) > 0) {
		int n = abandon_workers();

		dlog(ULNET_LOG_WARN, "stopping with %d command(s) still running: abandoned", n);
		if (use_syslog)
			closelog();
		_exit(0);
	}
	ctl_ctx_fini(&ctx);
	modopts_free(&mo);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	if (use_syslog)
		closelog();
	return 0;
}
