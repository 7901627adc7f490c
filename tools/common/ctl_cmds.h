/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds.h - the lnetctl command tree, run against one ulnet instance.
 *
 * ulnetd calls ctl_run() for every request; tests call it in-process.
 * Output, error text and exit status are exactly what lnetctl 2.17 prints
 * (see docs/tools.md for the deliberate differences).
 */
#ifndef ULNET_TOOLS_CTL_CMDS_H
#define ULNET_TOOLS_CTL_CMDS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_proto.h"
#include "ulnet/selftest.h"
#include "ulnet/ulnet.h"

/* Bounds of a YAML document (import, ulnetd --config): its size, and how
 * deep its collections may nest. lnetctl's own YAML nests 8 deep; a file
 * nested deeper than the limit is refused as soon as the parser gets
 * there, before any lock is taken. */
#define CTL_YAML_MAX_BYTES CTL_MAX_BLOB
#define CTL_YAML_MAX_DEPTH 64

struct modopts;

struct ctl_ctx {
	ulnet_t *ln;                /* NULL while LNet is unconfigured */
	struct ulnet_opts opts;     /* used by "lnet configure" */
	/* Defaults for tcp NIs added without --accept-port/--accept. */
	uint16_t accept_port;
	char accept[8];
	/* The port of bulk connections of tcp NIs added without
	 * --accept-port-bulk (ulnetd --accept-port-bulk, the lnet module
	 * parameter accept_port_bulk); 0: each NI's accept_port. */
	uint16_t accept_port_bulk;
	/* listen() backlog of tcp NIs that listen (ulnetd --accept-backlog,
	 * the lnet module parameter accept_backlog); 0: 127 */
	int accept_backlog;
	/* ulnetd --verify-peer-nid: tcp NIs refuse a HELLO whose NID is not
	 * the connection's source address (beyond the kernel) */
	bool verify_peer_nid;
	int max_wait_s;             /* cap of ping/discover timeouts */
	/* "Module parameters": the --config text whose networks "lnet
	 * configure --all" brings up (NULL: none). */
	char *modparams;
	size_t modparams_len;
	char modparams_name[256];
	/* The ksocklnd module parameters (ulnetd --module-option ksocklnd.*):
	 * defaults of every tcp NI for what it does not set itself, in
	 * ulnet's encoding (0, tos -1: not given); lnet's peer_buffer_credits
	 * after ksocklnd's. */
	struct ulnet_ni_tunables lnd_tun;
	struct ulnet_sock_tunables lnd_sock;
	int peer_buffer_credits;
	/* The ko2iblnd module parameters (ulnetd --module-option
	 * ko2iblnd.*): defaults of every o2ib NI, in the same encoding. */
	struct ulnet_ni_tunables lnd_o2ib_tun;
	struct ulnet_o2ib_tunables lnd_o2ib;
	/* ksocklnd's skip_mr_route_setup module parameter: net add never
	 * sets up Multi-Rail routing (ctl_mrroute.h) */
	bool skip_mr_route_setup;
	/* The module parameters ulnetd was given (modopts.h; NULL: none, and
	 * owned by ulnetd): "lnet configure" applies their router
	 * parameters, "--all" their networks=, routes= and forwarding=. */
	const struct modopts *modopts;
	/* Globals kept across unconfigure/configure, as module parameters. */
	struct ulnet_globals saved_g;
	bool saved_g_valid;
	/* Router pool sizes set (set *_buffers, import), tiny, small, large,
	 * kept across unconfigure/configure as module parameters; -1: never
	 * set. */
	int rtr_nbuffers[3];
	/* The selftest agent (ulnetd --selftest): started with the instance,
	 * stopped before it is destroyed (lnet unconfigure, fini). */
	bool selftest;
	struct ulnet_selftest_conf selftest_conf;
	ulnet_selftest_t *st;
	/* Writers: commands that change the node; readers: shows and pings
	 * (which may block), so one slow ping never blocks a show. */
	pthread_rwlock_t lock;
};

/* Set up a context; with `configure` an instance is created now.
 * Returns 0 or a negative errno from ulnet_create(). */
int ctl_ctx_init(struct ctl_ctx *ctx, const struct ulnet_opts *opts, bool configure);
/* Keep a copy of `text` (named `name` in errors) as the networks "lnet
 * configure --all" applies. Returns 0 or -ENOMEM. */
int ctl_ctx_set_modparams(struct ctl_ctx *ctx, const char *name, const char *text, size_t len);
/* Run the selftest agent on the instance, now (if configured) and after
 * every "lnet configure". Returns 0 or the error of ulnet_selftest_start(). */
int ctl_ctx_enable_selftest(struct ctl_ctx *ctx, const struct ulnet_selftest_conf *conf);
/* A line to the daemon's log (ctx->opts.log, at its level; without one,
 * warnings and errors to stderr). */
void ctl_log(struct ctl_ctx *ctx, enum ulnet_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Destroy the instance (if any) and the lock. */
void ctl_ctx_fini(struct ctl_ctx *ctx);

/*
 * Run one command (argv[0] is the first word after the program name, e.g.
 * "net"). `blob` is the content of a file read by the client (import), may
 * be NULL. The reply gets stdout/stderr text and the exit status (0..255).
 * `ctx` may be NULL: then only help requests succeed.
 */
void ctl_run(struct ctl_ctx *ctx, int argc, char **argv, const char *blob, size_t bloblen,
	     struct ctl_reply *rp);

/* True if argv asks only for help (answered without a daemon). */
bool ctl_is_help(int argc, char **argv);

/*
 * Apply a YAML configuration (the schema of "export") as "import --add"
 * does. `name` names the source in errors ("FILE:LINE:COL: ..."). Errors are
 * appended to `err`. Returns 0 or a negative errno.
 */
int ctl_apply_config(struct ctl_ctx *ctx, const char *name, const char *text, size_t len,
		     struct ybuf *err);

#endif
