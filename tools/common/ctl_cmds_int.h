/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds_int.h - what the parts of the lnetctl command tree share, inside
 * tools/common (ctl_cmds.h is the interface): a command and its options,
 * the parsed words a handler gets, and the helpers the commands call from
 * one file to another. ctl_cmds.c holds the tables and the dispatch,
 * ctl_opts.c the option parsing, ctl_cmds_net.c, ctl_cmds_peer.c and
 * ctl_cmds_route.c the "net", "peer" and "route" commands,
 * ctl_cmds_routing.c "routing show", "set routing" and "set *_buffers",
 * ctl_nidrange.c the NID range lists of peer and route commands,
 * ctl_cmds_fault.c the "fault" commands, ctl_cmds_conn.c the "conn"
 * commands, ctl_import.c export and import.
 */
#ifndef ULNET_TOOLS_CTL_CMDS_INT_H
#define ULNET_TOOLS_CTL_CMDS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_cmds.h"
#include "ctl_render.h"
#include "ulnet/routing.h"

#define PROG "ulnetctl"
#define MAX_NIS 256
#define MAX_PING 64

/* --- a command and its options -------------------------------------------- */

enum { ARG_NONE, ARG_REQ, ARG_OPT_NUM };

struct optspec {
	const char *name;
	char shortc;
	int has_arg;
};

struct optval {
	bool set;
	const char *arg;
};

/* One option as given on the command line. */
struct optocc {
	int k;              /* index in the command's optspec */
	const char *arg;    /* its value (NULL: none) */
};

struct parsed {
	struct optval v[24];    /* each option: set, and its last value */
	char *pos[64];
	int npos;
	/* every option in command-line order, for commands where an option
	 * may be given more than once and each counts (fault add --message) */
	struct optocc seq[CTL_MAX_ARGS];
	int nseq;
};

struct cmd;
typedef int (*cmd_fn)(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
		      int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp);

/* How dispatch() holds the context lock around a command. */
enum { LK_READ, LK_WRITE, LK_SELF /* the command takes it itself */ };

/*
 * One command. Its options are checked by dispatch() before it runs, the
 * same way for every command: an unknown option, a missing value or more
 * than `maxpos` positional words (-1: any) is refused (exit 234) with the
 * help text. `raw` commands (set NAME VALUE, and those refused as
 * unsupported whatever their arguments) check their words themselves.
 *
 * A group (`sub` set, no `fn`) holds commands or further groups ("fault
 * drop add"). A `raw` group answers a missing subcommand as lnetctl's
 * check_cmd() does: the help of each of its commands, exit 234 (the plain
 * groups print their own help and exit 0).
 */
struct cmd {
	const char *name;
	cmd_fn fn;
	const struct cmd *sub;
	const char *help;
	int lock;
	const struct optspec *opts;
	int nopts;
	int maxpos;
	bool raw;
};

#define OPTS(a) (a), (int)(sizeof(a) / sizeof((a)[0]))
#define NOOPTS NULL, 0

/* The top of the command tree dispatch() walks (ends with a NULL name),
 * read-only: for the tests that walk every command and option. */
const struct cmd *ctl_cmd_root(void);

/* --- option parsing and help (ctl_opts.c) --------------------------------- */

/* Returns 0, or -EINVAL with a message in err. */
int ctl_parse_opts(int argc, char **argv, const struct optspec *specs, int nspecs,
		   struct parsed *p, struct ybuf *err);
/* A number in [lo, hi] (strtol base 0): 0, or -EINVAL. */
int ctl_parse_int(const char *s, long lo, long hi, long *out);
/* The level of an optional-number option (--verbose [N]): 0 when unset. */
int ctl_verbosity(const struct optval *v);
/* "parent name: help" (parent may be NULL), ending in a newline. */
void ctl_print_help(struct ybuf *out, const char *parent, const struct cmd *c);
/* lnetctl's print_help() for one command: "parent name: help" and a blank
 * line (its help ends in a newline, and it adds one). */
void ctl_print_usage(struct ybuf *out, const char *parent, const struct cmd *c);
/* True if a word of argv (after argv[0]) is --help or -h. */
bool ctl_want_help(int argc, char **argv);

/* --- shared helpers (ctl_cmds.c) ------------------------------------------ */

/* 0 if LNet is up, else the netlink error "LNet stack down" and -ENETDOWN. */
int ctl_need_ln(struct ctl_ctx *ctx, const char *op, const char *what, struct ctl_reply *rp);
/* The first `max` NIs / peers of the instance; returns how many. */
int ctl_get_nis(ulnet_t *ln, struct ulnet_ni_info **out);
/* Peers come with all their NIs; free them with ctl_free_peers(). */
int ctl_get_peers(ulnet_t *ln, struct ulnet_peer_info **out);
void ctl_free_peers(struct ulnet_peer_info *pi, int n);
int ctl_get_routes(ulnet_t *ln, struct ulnet_route_info **out);
/* A NID, or HOST@NET on a tcp net with HOST a name, resolved (an IPv4
 * address first) as lnetctl's NID parser does: 0 or -EINVAL. It may
 * block on the resolver. */
int ctl_nid_parse_host(const char *s, ulnet_nid_t *nid);
/* Split "a,b c" lists into NIDs (each as ctl_nid_parse_host()). Returns
 * count or -EINVAL (bad item in `bad`). */
int ctl_parse_nid_list(char *const *words, int nwords, ulnet_nid_t *nids, int max, char *bad,
		       size_t badlen);
/* Show commands while LNet is down: the kernel's netlink error. */
int ctl_down_error(struct ctl_reply *rp, const char *what, const char *msg);
/* ping / discover the NIDs of p->pos (also import --exec). */
int ctl_ping_like(struct ctl_ctx *ctx, bool discover, const struct parsed *p,
		  struct ctl_reply *rp);
/* A global of "set NAME VALUE" (also import's global:). */
struct gset;
const struct gset *ctl_gset_find(const char *name);
/* Set one global; on failure a cYAML error is appended to err. */
int ctl_global_set_one(struct ctl_ctx *ctx, const struct gset *gs, long value, struct ybuf *err);
/* Its value in a new instance (import --del puts it back). */
long ctl_global_default(const struct gset *gs);
/* The words of "set NAME VALUE" (argv[0] NAME): 0, or the help (no VALUE)
 * or an error naming the extra word, and -EINVAL. */
int ctl_set_words(const struct cmd *c, int argc, char **argv, struct ctl_reply *rp);

/* --- net (ctl_cmds_net.c) ------------------------------------------------- */

extern const struct cmd ctl_net_cmds[];
/* Fill an NI conf from --nid or --net/--if. Errors go to rp as lnetctl's
 * "add: - net:" YAML. */
int ctl_ni_conf_addr(const char *nidstr, const char *netstr, const char *ifstr,
		     struct ulnet_ni_conf *conf, struct ctl_reply *rp, const char *op);
/* What the daemon's options set for every NI added ("net add", import,
 * networks=): acceptor settings, and for tcp NIs the ksocklnd module
 * parameters where the NI sets nothing itself. */
void ctl_ni_conf_defaults(const struct ctl_ctx *ctx, struct ulnet_ni_conf *conf);
/* An o2ib NI's conf sets an LND tunable the o2ib LND cannot take
 * (kib_tunables_setup(): conns_per_peer other than 1: -EOPNOTSUPP; a value
 * out of range: -EINVAL), with the message naming it; else 0. Called
 * before the defaults. */
int ctl_o2ib_tunables_check(const struct ulnet_ni_conf *conf, char *msg, size_t len);
/* IPv4 address (host order) of interface `name` (net add --if); 0 or
 * -ENETDOWN. */
int ctl_ip_of_iface(const char *name, uint32_t *ip);
/* The first interface that is up, not loopback, with an IPv4 address (the
 * kernel's choice for a net given without interface): its name and
 * address (host order); 0 or -ENETDOWN. */
int ctl_first_iface(char *name, size_t len, uint32_t *ip);

/* net set / peer set: the options (p->v[] in this order) and the setter. */
enum { SV_ALL, SV_NET, SV_LNDTO, SV_CPP, SV_NID, SV_STATE, SV_HEALTH, SV_COUNT };

extern const struct optspec ctl_set_value_opts[SV_COUNT];
int ctl_set_value(struct ctl_ctx *ctx, const struct cmd *c, bool peer, const struct parsed *p,
		  struct ctl_reply *rp);

/* --- peer (ctl_cmds_peer.c) ----------------------------------------------- */

extern const struct cmd ctl_peer_cmds[];
/* peer show / peer list (and debug peer): the peers, or the one that has
 * the NID `nidstr`. */
int ctl_peer_show_common(struct ctl_ctx *ctx, const char *nidstr, int verbose, bool list,
			 struct ctl_reply *rp);

/* --- NID range lists (ctl_nidrange.c) ------------------------------------ */

/* Most NIDs lnetctl lets one "peer add|del --nid" list expand to: its
 * LNET_MAX_NIDS_PER_PEER (128), plus one (its count check is "> 128"
 * before counting the NID). */
#define CTL_MAX_PEER_NIDS 129

/* Where in the list a bad item is: its offset and length. */
struct ctl_nidrange_err {
	size_t off, len;
};

/*
 * Expand a NID list as lnetctl does for peer NIDs and gateways
 * ("a@tcp,b@tcp", "10.0.0.[1-3,7]@tcp", "10.0.[1-2].[1-10/3]@tcp",
 * "[8-12]@gni": each bracket a comma list of N, N-M or N-M/STEP, decimal)
 * into at most `max` NIDs in `nids`, in order. Returns the count, or a
 * negative errno with `*msg` set to lnetctl's text (quotes included:
 * "\"Unable to parse nidlist: invalid NID in nidstr\"") and, when `where`
 * is not NULL, the item at fault in it (the whole string when the string
 * itself is refused). -E2BIG: more than `max` NIDs.
 */
int ctl_nid_range_expand(const char *s, ulnet_nid_t *nids, int max, const char **msg,
			 struct ctl_nidrange_err *where);

/* --- route (ctl_cmds_route.c) --------------------------------------------- */

extern const struct cmd ctl_route_cmds[];

/* Most NIDs one gateway list may expand to. */
#define CTL_MAX_GW_NIDS 1024



/*
 * Add (or delete) the route to `netstr` through `gw` with the checks of the
 * kernel's netlink handler and lnet_add_route()/lnet_del_route(), in their
 * order. `hops` and `prio` are as lnetctl sends them: -1 is unset; del
 * ignores them. Returns 0 (del: also when nothing matched) or a negative
 * errno with `*descr` set to the kernel's text for it.
 */
int ctl_route_change(ulnet_t *ln, bool add, const char *netstr, const ulnet_nid_t *gw, int hops,
		     int prio, const char **descr);

/* --- routing, set *_buffers (ctl_cmds_routing.c) -------------------------- */

extern const struct cmd ctl_routing_cmds[];
/* set routing 0|1, set tiny_buffers|small_buffers|large_buffers N (in the
 * "set" table of ctl_cmds.c). */
int ctl_cmd_set_routing(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp);
int ctl_cmd_set_buffers(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			int argc, char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp);
/* Routing on or off (-ENETDOWN while LNet is down). Returns 0 or a
 * negative errno with lnetctl's descr (without its quotes) in `descr`. */
int ctl_routing_set(struct ctl_ctx *ctx, bool on, char *descr, size_t len);
/* Pool sizes tiny, small, large (-1: no change; 0: the default) with
 * lnetctl's checks (all three first: -ERANGE below -1), kept in the
 * context across unconfigure. Returns 0 or a negative errno with lnetctl's
 * descr in `descr`. */
int ctl_buffers_set(struct ctl_ctx *ctx, const long n[ULNET_RTR_NPOOLS], char *descr, size_t len);
/* Give a new instance the pool sizes set before (lnet configure). */
void ctl_routing_restore(struct ctl_ctx *ctx);

/* --- udsp (ctl_cmds_udsp.c) ---------------------------------------------- */

extern const struct cmd ctl_udsp_cmds[];
/*
 * Add a rule as "udsp add" does (also import): `match` the src, dst and
 * rte texts (NULL: not given), the priority if given (else lnetctl's
 * default: 0 for src or dst alone, a preferred list for the pairs), the
 * index (negative: appended). Returns 0 or an errno as lnetctl reports it
 * (negative for its own checks, positive for the kernel's answer;
 * -EOPNOTSUPP for a rule the kernel would never apply) with its descr,
 * quotes included, in `descr`. `ln` NULL: LNet is down.
 */
int ctl_udsp_add(ulnet_t *ln, const char *const match[ULNET_UDSP_NPARTS], bool have_prio,
		 long prio, long idx, char *descr, size_t len);
/* Every rule, in index order (*out to free). Returns the count or -ENOMEM. */
int ctl_get_udsp(ulnet_t *ln, struct ulnet_udsp_rule **out);

/* --- fault (ctl_cmds_fault.c) -------------------------------------------- */

extern const struct cmd ctl_fault_cmds[];

/* --- conn (ctl_cmds_conn.c) ---------------------------------------------- */

extern const struct cmd ctl_conn_cmds[];
/* Every connection of the node (*out to free): the count, or -ENOMEM
 * (also the metrics, metrics.c). */
int ctl_get_conns(ulnet_t *ln, struct ulnet_conn_info **out);

/* --- export / import (ctl_import.c) --------------------------------------- */

int ctl_cmd_export(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc,
		   char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp);
int ctl_cmd_import(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p, int argc,
		   char **argv, const char *blob, size_t bloblen, struct ctl_reply *rp);
/* Load `text` (bounded) and apply it; `mode` 0 adds (as import --add),
 * `nets_only` takes its net: entries only (lnet configure --all). */
int ctl_import_text(struct ctl_ctx *ctx, const char *name, const char *text, size_t len,
		    int mode, bool nets_only, struct ybuf *err, struct ctl_reply *rp);

/* setup-mrrouting (ctl_cmds_net.c): the Multi-Rail routing tables of the
 * tcp NIs' interfaces (ctl_mrroute.h), as net add sets them up. */
int ctl_cmd_setup_mrrouting(struct ctl_ctx *ctx, const struct cmd *c, const struct parsed *p,
			    int argc, char **argv, const char *blob, size_t bloblen,
			    struct ctl_reply *rp);

#endif
