/* SPDX-License-Identifier: MIT */
/*
 * ctl_import_int.h - what the parts of import share (ctl_import.c,
 * ctl_import_ip2nets.c, ctl_import_udsp.c): the state of one import, the
 * YAML node helpers, and error reporting with the file, line and column
 * of the node at fault.
 */
#ifndef ULNET_TOOLS_CTL_IMPORT_INT_H
#define ULNET_TOOLS_CTL_IMPORT_INT_H

#include <yaml.h>

#include "ctl_cmds_int.h"

enum imp_mode { IMP_ADD, IMP_DEL, IMP_SHOW, IMP_EXEC };

struct imp {
	struct ctl_ctx *ctx;
	const char *name;
	yaml_document_t doc;
	enum imp_mode mode;
	struct ybuf *err;
	struct ctl_reply *rp; /* for ping/discover output (exec) */
	int nerr;
};

yaml_node_t *ynode(struct imp *im, yaml_node_item_t i);
/* The text of a scalar node, or NULL. */
const char *yscalar(yaml_node_t *n);
/* Value of key `k` in mapping `m`, or NULL. */
yaml_node_t *ymap_get(struct imp *im, yaml_node_t *m, const char *k);
/* Record an error (errno `err`) at node `at` ("FILE:LINE:COL: ..."). */
void imp_error(struct imp *im, yaml_node_t *at, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A scalar as a long: 0 or -EINVAL. */
int yint(yaml_node_t *n, long *v);
/* A value of key `k` that is not what it must be, in lnetctl's words (the
 * sanity suite looks for them): "no value specified for key 'K'" when it
 * is empty, else "invalid value 'V' for key 'K'". */
void imp_bad_value(struct imp *im, yaml_node_t *vn, const char *k);

/* A "CPT" value of `what` ("an NI", "an ip2nets rule"): "N" or
 * "[a,b-c]" naming partition 0 only (ulnet has one). An expression that
 * does not parse ("[1-0]", "[]") is -EINVAL, another partition -95. */
bool imp_cpt(struct imp *im, yaml_node_t *v, const char *what);

/* A "tunables" (`lnd` false) or "lnd tunables" map of `what` into conf:
 * each key lnetctl prints there takes effect; any other is refused (-95).
 * NULL m: nothing to do. */
bool imp_ni_tunables(struct imp *im, yaml_node_t *m, bool lnd, struct ulnet_ni_conf *conf,
		     const char *what);

/* The sections with their own files. */
void imp_ip2nets(struct imp *im, yaml_node_t *seq);   /* ctl_import_ip2nets.c */
void imp_udsp(struct imp *im, yaml_node_t *e);        /* ctl_import_udsp.c */

#endif
