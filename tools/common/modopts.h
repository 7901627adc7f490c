/* SPDX-License-Identifier: MIT */
/*
 * modopts.h - the kernel's module parameters of lnet, ksocklnd and
 * ko2iblnd, for ulnetd: `--module-option MODULE.PARAM=VALUE` and
 * `--module-options FILE` (modprobe.d syntax: `options lnet
 * networks="tcp0(eth0)" ...`).
 *
 * A site that configured kernel LNet in /etc/modprobe.d keeps its file.
 * Every parameter either takes effect or is refused: -EOPNOTSUPP for one
 * ulnet does not have (or a value it cannot honour), -EINVAL for a bad
 * value, each with a message naming where it came from (FILE:LINE, or the
 * command line), the module and the parameter. A parameter that is a no-op
 * in the 2.17 kernel too (deprecated, or read by nothing) is accepted with
 * a warning that says it is ignored. docs/tools.md lists them all
 * (docs/o2iblnd.md those of ko2iblnd).
 *
 * Two steps, as the kernel's: "module load" parses and checks everything
 * (modopts_set*, no instance needed) and stores it (modopts_load); "lnet
 * configure" (modopts_configure, at ulnetd's start and at every `lnet
 * configure`) brings up what the kernel's LNetNIInit takes from module
 * parameters: with `all`, networks= (or ip2nets=), routes= and
 * forwarding=.
 *
 * modopts.c holds the parameter table, the values and the modprobe.d
 * syntax; modopts_o2ib.c ko2iblnd's table; modopts_nets.c the networks=
 * and routes= strings (and the NIs of ip2nets=, whose matching is
 * ctl_ip2nets.c's); modopts_apply.c what is done with them on a ctl_ctx.
 */
#ifndef ULNET_TOOLS_MODOPTS_H
#define ULNET_TOOLS_MODOPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "ulnet/routing.h"
#include "ulnet/ulnet.h"

struct ctl_ctx;

/* Bounds. A hostile or broken file is refused, never cut. */
#define MODOPT_NAME_MAX 63                  /* a module or parameter name */
#define MODOPT_NETWORKS_MAX 4096            /* networks=, the kernel's limit */
#define MODOPT_VALUE_MAX 65536              /* any value (routes= the longest) */
#define MODOPT_LINE_MAX (MODOPT_VALUE_MAX + 4096) /* a logical (joined) line */
#define MODOPT_FILE_MAX (1 << 20)           /* a --module-options file */
#define MODOPT_MAX_NIS 64                   /* NIs networks= may name */
#define MODOPT_MAX_ROUTES 4096              /* routes= after expansion */
#define MODOPT_WHERE_MAX 320                /* "FILE:LINE" */
#define MODOPT_ERR_MAX 1024

/* One NI of networks=: a net and an interface ("": the first interface
 * that is up, not loopback, with an IPv4 address, as the kernel picks). */
struct modopt_ni {
	ulnet_net_t net;
	char iface[16];
};

/* One route of routes= (after bracket expansion). */
struct modopt_route {
	ulnet_net_t net;
	ulnet_nid_t gw;
	int hops;                   /* 1..255, ULNET_ROUTE_HOPS_UNSET */
	unsigned priority;
};

/* Router parameters given (bits of modopts.rp_set). */
enum { MO_RP_INTERVAL = 1, MO_RP_TIMEOUT = 2, MO_RP_CHECK = 4, MO_RP_ASYM = 8 };

struct modopts {
	/* parse-time warnings (deprecated parameters, values raised as the
	 * kernel raises them); NULL: stderr */
	ulnet_log_fn log;
	void *log_arg;
	/* the message of the last error */
	char err[MODOPT_ERR_MAX];

	/* lnet networks=, routes=, forwarding= (brought up by "configure
	 * --all", i.e. at ulnetd's start) and where each was set */
	bool networks_set;
	struct modopt_ni nis[MODOPT_MAX_NIS];
	int nnis;
	char networks_where[MODOPT_WHERE_MAX];
	bool networks_named;        /* networks= set to a non-empty string */
	/* ip2nets= (ctl_ip2nets.h): its syntax checked when set, matched
	 * against the node's addresses at "configure --all", where it takes
	 * the place of networks=; NULL when not set */
	char *ip2nets;
	char ip2nets_where[MODOPT_WHERE_MAX];
	bool routes_set;
	struct modopt_route *routes;
	int nroutes;
	char routes_where[MODOPT_WHERE_MAX];
	int forwarding;             /* -1 "" (the default), 0 disabled, 1 enabled */

	/* lnet globals (the lnet_* parameters), from the defaults */
	bool g_set;
	struct ulnet_globals g;
	/* router parameters */
	unsigned rp_set;
	struct ulnet_router_params rp;
	/* tiny, small, large router buffers; -1: not given */
	long rtr_buffers[ULNET_RTR_NPOOLS];

	/* the acceptor (also ulnetd --accept-port, --accept, --accept-backlog,
	 * --accept-port-bulk): 0 / "": not given */
	int accept_port;
	char accept[8];
	int accept_backlog;
	/* -1: not given: bulk connections follow accept_port (where the
	 * kernel's default stays 988: docs/tools.md) */
	int accept_port_bulk;
	bool skip_mr_route_setup;   /* ksocklnd's: net add sets up no MR routing */

	/* defaults of every tcp NI for what it does not set itself: the
	 * ksocklnd parameters in ulnet's encoding (0: not given, tos -1), and
	 * lnet's peer_buffer_credits (after ksocklnd's) */
	struct ulnet_ni_tunables tun;
	struct ulnet_sock_tunables sock;
	int lnet_peer_buffer_credits;
	char credits_where[MODOPT_WHERE_MAX];
	char reconnect_where[MODOPT_WHERE_MAX];

	/* defaults of every o2ib NI: the ko2iblnd parameters in ulnet's
	 * encoding (0: not given, tos -1; modopts_o2ib.c), lnet's
	 * peer_buffer_credits after ko2iblnd's */
	struct ulnet_ni_tunables o2ib_tun;
	struct ulnet_o2ib_tunables o2ib;
	char o2ib_credits_where[MODOPT_WHERE_MAX];
	char o2ib_ntx_where[MODOPT_WHERE_MAX];
};

/* A refusal's reason, printf-style into buf; returns rc (modopts*.c). */
int modopts_errf(char *buf, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

void modopts_init(struct modopts *mo);
void modopts_free(struct modopts *mo);

/* Acceptor values shared with ulnetd's --accept and --accept-backlog. */
#define MODOPT_BACKLOG_MIN 1
#define MODOPT_BACKLOG_MAX 65535
bool modopts_accept_mode_ok(const char *mode);

/*
 * Set one parameter. `value` NULL: given without "=VALUE". `where` names
 * the origin in messages ("FILE:LINE", "--module-option"). Names match
 * with '-' and '_' alike, as the kernel's. Returns 0, or -EOPNOTSUPP /
 * -EINVAL / -ENOMEM with mo->err set to
 * "WHERE: MODULE.PARAM: reason (errno -N)".
 */
int modopts_set(struct modopts *mo, const char *module, const char *param, const char *value,
		const char *where);
/* "MODULE.PARAM=VALUE" (one pair of double quotes around VALUE is
 * dropped, as the kernel's parser does). */
int modopts_set_arg(struct modopts *mo, const char *arg);
/* modprobe.d text: `options MODULE P=V P2="quoted value"` lines, `#`
 * comment lines, blank lines, `\` continuations; other directives and
 * modules other than lnet, ksocklnd and ko2iblnd are refused. `name`
 * names the text in messages. */
int modopts_parse_text(struct modopts *mo, const char *name, const char *text, size_t len);
/* Read (at most MODOPT_FILE_MAX bytes) and parse a file. */
int modopts_parse_file(struct modopts *mo, const char *path);
/* The checks between parameters, once all are set (peer_credits against
 * credits, max_reconnectms against min_reconnectms, ip2nets against a
 * non-empty networks). */
int modopts_finish(struct modopts *mo);

/* The kernel's parsers of networks= and routes= (modopts_nets.c). On
 * error, -EINVAL or -EOPNOTSUPP with `why` set. */
int modopts_parse_networks(const char *s, struct modopt_ni *nis, int max, int *n, char *why,
			   size_t whylen);
int modopts_parse_routes(const char *s, struct modopt_route **routes, int *n, char *why,
			 size_t whylen);

/*
 * "Module load" on a context whose instance exists (ulnetd's start): the
 * globals, router buffers, acceptor and ksocklnd defaults; the context
 * keeps `mo` (which must outlive it) for modopts_configure. Returns 0 or
 * a negative errno with mo->err set.
 */
int modopts_load(struct ctl_ctx *ctx, struct modopts *mo);
/*
 * The NIs ip2nets= gives on a node with addresses `a` (ctl_ip2nets.h), as
 * the kernel's lnet_parse_ip2nets() then lnet_parse_networks(): -ENOENT
 * when no entry matches; -EINVAL, -E2BIG, -EOPNOTSUPP with `why`.
 */
struct ip2n_addrs;
int modopts_ip2nets_nis(const char *ip2nets, const struct ip2n_addrs *a, struct modopt_ni *nis,
			int max, int *n, char *why, size_t whylen);

/*
 * "lnet configure" of ctx->ln: the router parameters, and with `all`
 * (configure --all, ulnetd's start) networks= (or ip2nets=), routes= and
 * forwarding=, in the kernel's order. Returns 0 or a negative errno with `err` set.
 */
int modopts_configure(struct ctl_ctx *ctx, bool all, char *err, size_t errlen);

#endif
