/* SPDX-License-Identifier: MIT */
/*
 * ctl_mrroute.c - Multi-Rail routing setup (ctl_mrroute.h): a routing
 * table and a source rule per interface of a tcp NI, made with ip(8) as
 * Lustre's ksocklnd-config makes them, so that `ip route show table eth0`
 * and `ip rule` read the same on a ulnet node as on a kernel one.
 *
 * ip(8) is run directly (posix_spawnp, an argument vector: no shell, and
 * interface names come from the kernel's own list), in the calling
 * thread's network namespace: ulnetd runs a command in its client's.
 */
#include "ctl_mrroute.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_cmds_int.h"

#define RT_TABLES "/etc/iproute2/rt_tables"
#define RT_TABLES_DIST "/usr/share/iproute2/rt_tables"
#define IP_OUT_MAX 4096
#define MR_MAX_IFACES 64
/* an ip(8) run that takes longer is killed: the daemon's write lock is
 * held meanwhile */
#define IP_TIMEOUT_MS 10000

extern char **environ;

/* Run ip(8) with `args` (NULL-terminated, without "ip"): its exit status
 * (0 ok), or -errno when it could not be started. Its stdout and stderr
 * together go to `out` (NUL-terminated, cut at outlen). */
static int run_ip(const char *const *args, char *out, size_t outlen)
{
	/* where Debian and the script keep it first: the daemon's PATH is
	 * whatever started it */
	static const char *const where[] = { "/usr/sbin/ip", "/sbin/ip", NULL };
	const char *argv[16];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	struct timespec t0, t1;
	int pfd[2], st = 0, n = 0, rc = ENOENT;
	size_t used = 0;
	pid_t pid;
	bool killed = false;

	argv[n++] = "ip";
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	/* ulnetd ignores SIGPIPE and blocks nothing the child should keep */
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	for (int i = 0; where[i] && rc == ENOENT; i++)
		rc = posix_spawn(&pid, where[i], &fa, &at, (char *const *)argv, environ);
	if (rc == ENOENT)
		rc = posix_spawnp(&pid, "ip", &fa, &at, (char *const *)argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return -rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		char junk[512];
		long left;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = IP_TIMEOUT_MS - ((t1.tv_sec - t0.tv_sec) * 1000 +
					(t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			break;
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = used + 1 < outlen ? read(pfd[0], out + used, outlen - 1 - used)
				      : read(pfd[0], junk, sizeof(junk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (used + 1 < outlen)
			used += (size_t)r;
	}
	out[used] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (killed)
		return -ETIMEDOUT;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Log one ip(8) run that failed: the command and what ip said. */
static void log_ip_fail(struct ctl_ctx *ctx, const char *iface, const char *const *args, int st,
			const char *out)
{
	char cmd[256];
	size_t k = 0;

	cmd[0] = '\0';
	for (int i = 0; args[i] && k < sizeof(cmd); i++)
		k += (size_t)snprintf(cmd + k, sizeof(cmd) - k, " %s", args[i]);
	ctl_log(ctx, ULNET_LOG_WARN, "MR route setup of %s: 'ip%s' failed (%s%d): %.*s", iface, cmd,
		st < 0 ? "errno " : "status ", st < 0 ? -st : st, (int)strcspn(out, "\n"), out);
}

/* Whether `name` names a table in rt_tables, with /etc/iproute2/rt_tables
 * made from the distribution's copy when missing, as the script does, and
 * `name` added as the highest number plus one when absent. 0 or -errno. */
/* Make /etc/iproute2/rt_tables from the distribution's copy (through a
 * temporary file renamed into place: never a half-written one). */
static int rt_tables_create(void)
{
	char tmp[] = RT_TABLES ".ulnet.XXXXXX", line[512];
	FILE *src = fopen(RT_TABLES_DIST, "re"), *dst;
	int fd, rc = 0;

	if (!src)
		return -ENOENT;
	mkdir("/etc/iproute2", 0755);
	fd = mkstemp(tmp);
	if (fd < 0 || !(dst = fdopen(fd, "w"))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		fclose(src);
		return rc;
	}
	while (fgets(line, sizeof(line), src))
		fputs(line, dst);
	fclose(src);
	fchmod(fd, 0644);
	if (fclose(dst) != 0 || rename(tmp, RT_TABLES) < 0) {
		rc = -EIO;
		unlink(tmp);
	}
	return rc;
}

/* Whether `name` names a table in rt_tables, /etc/iproute2/rt_tables made
 * when missing, as the script does, and `name` added as the highest number
 * plus one when absent. The file is locked while it is read and appended
 * to, against another ulnetd doing the same. 0 or -errno. (Tables named in
 * rt_tables.d/ are not read: their numbers could collide.) */
static int rt_table_ensure(const char *name)
{
	char line[512];
	long max = 0;
	bool found = false, skip_tail = false;
	int fd = open(RT_TABLES, O_RDWR | O_APPEND | O_CLOEXEC), rc;
	FILE *f;

	if (fd < 0 && errno == ENOENT) {
		rc = rt_tables_create();
		if (rc < 0)
			return rc;
		fd = open(RT_TABLES, O_RDWR | O_APPEND | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0 || !(f = fdopen(fd, "r+"))) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		bool whole = strchr(line, '\n') != NULL;
		char *p = line + strspn(line, " \t"), *end, tname[64];
		long id;

		/* the rest of a line longer than the buffer is not a line */
		if (skip_tail) {
			skip_tail = !whole;
			continue;
		}
		skip_tail = !whole;
		if (*p == '#' || *p == '\n' || *p == '\0')
			continue;
		/* iproute2 reads a table number in decimal or 0x hex */
		id = strtol(p, &end, strncmp(p, "0x", 2) == 0 ? 16 : 10);
		if (end == p || id < 0 || id >= 0x7fffffffL)
			continue;
		if (id > max)
			max = id;
		if (sscanf(end, " %63s", tname) == 1 && strcmp(tname, name) == 0)
			found = true;
	}
	rc = 0;
	if (!found) {
		if (max + 1 >= 0x7fffffffL)
			rc = -ERANGE;
		else if (fprintf(f, "%ld %s\n", max + 1, name) < 0 || fflush(f) != 0)
			rc = -EIO;
	}
	fclose(f);   /* and the lock */
	return rc;
}

struct mr_addr {
	bool set;
	int family;
	char addr[INET6_ADDRSTRLEN];
	char net[INET6_ADDRSTRLEN];   /* the subnet's first address */
	int prefix;
	unsigned char raw[16], mask[16];
};

static int mask_prefix(const unsigned char *m, int len)
{
	int bits = 0;

	for (int i = 0; i < len; i++)
		for (int b = 7; b >= 0 && (m[i] >> b) & 1; b--)
			bits++;
	return bits;
}

/* The interface's first IPv4 address and first IPv6 one that is not
 * link-local, with their subnets; whether it is a loopback. -ENOENT when
 * no such interface. */
static int iface_addrs(const char *iface, struct mr_addr *v4, struct mr_addr *v6, bool *loopback)
{
	struct ifaddrs *ifa, *a;
	bool seen = false;

	memset(v4, 0, sizeof(*v4));
	memset(v6, 0, sizeof(*v6));
	*loopback = false;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (a = ifa; a; a = a->ifa_next) {
		struct mr_addr *m;
		int len;
		const void *ap, *mp;

		if (strcmp(a->ifa_name, iface) != 0)
			continue;
		seen = true;
		if (a->ifa_flags & IFF_LOOPBACK)
			*loopback = true;
		if (!a->ifa_addr || !a->ifa_netmask)
			continue;
		if (a->ifa_addr->sa_family == AF_INET) {
			m = v4;
			len = 4;
			ap = &((struct sockaddr_in *)a->ifa_addr)->sin_addr;
			mp = &((struct sockaddr_in *)a->ifa_netmask)->sin_addr;
		} else if (a->ifa_addr->sa_family == AF_INET6) {
			const struct in6_addr *a6 = &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;

			if (IN6_IS_ADDR_LINKLOCAL(a6))
				continue;
			m = v6;
			len = 16;
			ap = a6;
			mp = &((struct sockaddr_in6 *)a->ifa_netmask)->sin6_addr;
		} else {
			continue;
		}
		if (m->set)
			continue;
		m->set = true;
		m->family = a->ifa_addr->sa_family;
		memcpy(m->raw, ap, (size_t)len);
		memcpy(m->mask, mp, (size_t)len);
		m->prefix = mask_prefix(m->mask, len);
		inet_ntop(m->family, m->raw, m->addr, sizeof(m->addr));
		unsigned char net[16];

		for (int i = 0; i < len; i++)
			net[i] = m->raw[i] & m->mask[i];
		inet_ntop(m->family, net, m->net, sizeof(m->net));
	}
	freeifaddrs(ifa);
	return seen ? 0 : -ENOENT;
}

/* A default gateway of the main table on `a`'s subnet: one via the
 * interface first, then any (the script's choice, without its ping of
 * the gateway: a route through a gateway that does not answer simply
 * carries nothing). Empty when none. */
static void default_gw(const char *iface, const struct mr_addr *a, char *gw, size_t gwlen)
{
	const char *fam = a->family == AF_INET ? "-4" : "-6";
	char out[IP_OUT_MAX];
	const char *const pass[2][8] = {
		{ fam, "-o", "route", "show", "default", "dev", iface, NULL },
		{ fam, "-o", "route", "show", "default", NULL },
	};

	gw[0] = '\0';
	for (int k = 0; k < 2; k++) {
		if (run_ip(pass[k], out, sizeof(out)) != 0)
			continue;
		char *save = NULL;

		for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *via = strstr(l, " via ");
			char cand[INET6_ADDRSTRLEN];
			unsigned char raw[16];
			int len = a->family == AF_INET ? 4 : 16;
			bool same = true;

			if (!via || sscanf(via + 5, "%45s", cand) != 1 ||
			    inet_pton(a->family, cand, raw) != 1)
				continue;
			for (int i = 0; i < len; i++)
				same = same && (raw[i] & a->mask[i]) == (a->raw[i] & a->mask[i]);
			if (same) {
				snprintf(gw, gwlen, "%s", cand);
				return;
			}
		}
	}
}

/* Run ip(8), logging a failure; its status. */
static int ip_do(struct ctl_ctx *ctx, const char *iface, const char *const *args)
{
	char out[IP_OUT_MAX];
	int st = run_ip(args, out, sizeof(out));

	if (st != 0)
		log_ip_fail(ctx, iface, args, st, out);
	return st;
}

/* The routes and rule of one address family of `iface` in its table. */
static void setup_family(struct ctl_ctx *ctx, const char *iface, const struct mr_addr *a)
{
	const char *fam = a->family == AF_INET ? "-4" : "-6";
	char subnet[INET6_ADDRSTRLEN + 8], gw[INET6_ADDRSTRLEN];

	/* the script routes an IPv6 address's own prefix from the address
	 * itself; `ip` takes either: the subnet is what the kernel shows */
	snprintf(subnet, sizeof(subnet), "%s/%d", a->net, a->prefix);
	default_gw(iface, a, gw, sizeof(gw));
	if (gw[0]) {
		const char *const r[] = { fam, "route", "add", "default", "via", gw, "dev", iface,
					  "table", iface, NULL };

		ip_do(ctx, iface, r);
	}
	const char *const r[] = { fam, "route", "add", subnet, "dev", iface, "proto", "kernel",
				  "scope", "link", "src", a->addr, "table", iface, NULL };
	const char *const del[] = { fam, "rule", "del", "from", a->addr, "table", iface, NULL };
	const char *const add[] = { fam, "rule", "add", "from", a->addr, "table", iface, NULL };
	char out[IP_OUT_MAX];

	ip_do(ctx, iface, r);
	(void)run_ip(del, out, sizeof(out));   /* none yet: nothing to say */
	if (ip_do(ctx, iface, add) == 0)
		ctl_log(ctx, ULNET_LOG_INFO, "MR route setup: %s: table %s, from %s%s%s", subnet,
			iface, a->addr, gw[0] ? ", default via " : "", gw);
}

/* Whether `iface`, in the calling thread's namespace, holds the NI's
 * address: an NI of another namespace (added by a client there) names an
 * interface of that namespace, and a same-named one here (eth0 is in
 * every container) is not its. */
static bool iface_holds(const char *iface, const ulnet_nid_t *nid)
{
	struct ifaddrs *ifa, *a;
	bool found = false;

	if (getifaddrs(&ifa) < 0)
		return false;
	for (a = ifa; a && !found; a = a->ifa_next) {
		if (!a->ifa_addr || strcmp(a->ifa_name, iface) != 0)
			continue;
		if (a->ifa_addr->sa_family == AF_INET && nid->size == 0)
			found = memcmp(&((struct sockaddr_in *)a->ifa_addr)->sin_addr, nid->addr, 4) == 0;
		else if (a->ifa_addr->sa_family == AF_INET6 && nid->size == 12)
			found = memcmp(&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, nid->addr,
				       16) == 0;
	}
	freeifaddrs(ifa);
	return found;
}

/* One interface, as the script takes it: skipped without an address or
 * when its table already has routes (set up before, or by the site). */
static void setup_iface(struct ctl_ctx *ctx, const char *iface)
{
	struct mr_addr v4, v6;
	bool lo;
	char out[IP_OUT_MAX];
	int rc = iface_addrs(iface, &v4, &v6, &lo);

	if (rc < 0) {
		ctl_log(ctx, ULNET_LOG_WARN, "MR route setup: skipping %s: %s", iface, strerror(-rc));
		return;
	}
	/* a loopback needs no table: its traffic never leaves by another
	 * interface (the script would make one; docs/tools.md) */
	if (lo)
		return;
	if (!v4.set && !v6.set) {
		ctl_log(ctx, ULNET_LOG_INFO, "MR route setup: skipping %s: IP address not found", iface);
		return;
	}
	/* an interface named after one of iproute2's reserved tables would
	 * fill that table */
	static const char *const reserved[] = { "local", "main", "default", "unspec", "all", NULL };

	for (int k = 0; reserved[k]; k++)
		if (strcmp(iface, reserved[k]) == 0) {
			ctl_log(ctx, ULNET_LOG_WARN, "MR route setup: skipping %s: its name is a "
				"reserved routing table's", iface);
			return;
		}
	rc = rt_table_ensure(iface);
	if (rc < 0) {
		ctl_log(ctx, ULNET_LOG_WARN, "MR route setup: skipping %s: cannot name its table in %s: %s",
			iface, RT_TABLES, strerror(-rc));
		return;
	}
	for (int k = 0; k < 2; k++) {
		const struct mr_addr *a = k ? &v6 : &v4;
		const char *const show[] = { k ? "-6" : "-4", "-o", "route", "show", "table", iface, NULL };

		if (a->set && run_ip(show, out, sizeof(out)) == 0 && out[0]) {
			ctl_log(ctx, ULNET_LOG_INFO, "MR route setup: skipping %s: %s route exists", iface,
				k ? "IPv6" : "IPv4");
			return;
		}
	}
	const char *const flush[] = { "route", "flush", "table", iface, NULL };
	const char *const neigh[] = { "neigh", "flush", "dev", iface, NULL };

	(void)run_ip(flush, out, sizeof(out));   /* empty already, as just seen */
	if (v4.set)
		setup_family(ctx, iface, &v4);
	if (v6.set)
		setup_family(ctx, iface, &v6);
	/* neighbours learnt through the old routing */
	ip_do(ctx, iface, neigh);
}

void ctl_mrroute_setup(struct ctl_ctx *ctx)
{
	struct ulnet_ni_info *nis = NULL;
	char done[MR_MAX_IFACES][IFNAMSIZ];
	int n, ndone = 0;

	if (!ctx->ln)
		return;
	n = ctl_get_nis(ctx->ln, &nis);
	for (int i = 0; i < n; i++) {
		const char *iface = nis[i].iface;
		bool seen = false;

		if (nis[i].nid.type != ULNET_LND_TCP || !iface[0] || !iface_holds(iface, &nis[i].nid))
			continue;
		for (int k = 0; k < ndone && !seen; k++)
			seen = strcmp(done[k], iface) == 0;
		if (seen || ndone == MR_MAX_IFACES)
			continue;
		snprintf(done[ndone++], IFNAMSIZ, "%s", iface);
		setup_iface(ctx, iface);
	}
	free(nis);
}
