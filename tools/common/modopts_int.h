/* SPDX-License-Identifier: MIT */
/*
 * modopts_int.h - what the module parameter tables share (modopts.h):
 * modopts.c has lnet's and ksocklnd's and the parser, modopts_o2ib.c
 * ko2iblnd's. A table entry names a parameter, the type its value is
 * parsed as (as the kernel's module_param type), and the handler that
 * makes it take effect or refuses it.
 */
#ifndef ULNET_TOOLS_MODOPTS_INT_H
#define ULNET_TOOLS_MODOPTS_INT_H

#include "modopts.h"

enum mo_type {
	T_STR,   /* a string (charp) */
	T_INT,   /* kstrtoint: signed, 32 bits */
	T_UINT,  /* kstrtouint / kstrtoul: no sign */
};

struct mo_param;

struct mo_call {
	struct modopts *mo;
	const struct mo_param *p;
	const char *where;
	const char *v;          /* the value as given */
	long long n;            /* the value as a number (T_INT, T_UINT) */
	char why[600];          /* the reason of a failure */
};

typedef int (*mo_set_fn)(struct mo_call *c);

struct mo_param {
	const char *module;
	const char *name;
	enum mo_type type;
	mo_set_fn set;
	int arg;                /* the handler's: which field, pool or value */
	const char *text;       /* the handler's: why it is refused or ignored */
};

/* The reason of a refusal, into the call's buffer; returns rc. */
#define why(c, rc, ...) modopts_errf((c)->why, sizeof((c)->why), (rc), __VA_ARGS__)

/* A warning naming the parameter and its origin. */
void mo_warn(struct mo_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mo_copy_where(char *dst, const char *where);

/* Generic handlers: refused (-EOPNOTSUPP with p->text); a no-op in the
 * 2.17 kernel too (accepted with a warning); only p->arg taken (as a
 * boolean, or exactly). */
int mo_h_unsup(struct mo_call *c);
int mo_h_noop(struct mo_call *c);
int mo_h_fixed_bool(struct mo_call *c);
int mo_h_fixed_int(struct mo_call *c);

/* ko2iblnd's table (modopts_o2ib.c). */
extern const struct mo_param modopts_o2ib_params[];
extern const size_t modopts_o2ib_nparams;
/* ko2iblnd's checks between parameters (modopts_finish). */
int modopts_o2ib_finish(struct modopts *mo);

#endif
