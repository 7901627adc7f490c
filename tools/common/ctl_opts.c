/* SPDX-License-Identifier: MIT */
/*
 * ctl_opts.c - the option parsing of the lnetctl command tree: a reentrant
 * getopt_long (options and positional words mixed, as getopt_long permutes;
 * a long option may be given by a unique prefix of its name; every option
 * also kept in order), number and --verbose values, and the
 * help text of a command.
 */
#include "ctl_cmds_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --- option parsing (getopt_long-like, but reentrant) ---------------------- */

/* Returns 0, or -EINVAL with a message in err. Options and positionals may
 * be mixed, as getopt_long permutes. */
int ctl_parse_opts(int argc, char **argv, const struct optspec *specs, int nspecs,
		   struct parsed *p, struct ybuf *err)
{
	memset(p, 0, sizeof(*p));
	bool only_pos = false;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i];

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (p->npos >= (int)(sizeof(p->pos) / sizeof(p->pos[0]))) {
				ybuf_printf(err, "%s: too many arguments\n", PROG);
				return -EINVAL;
			}
			p->pos[p->npos++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		int k = -1;
		const char *inl = NULL;

		if (a[1] == '-') {
			const char *name = a + 2;
			const char *eq = strchr(name, '=');
			size_t nl = eq ? (size_t)(eq - name) : strlen(name);

			int nprefix = 0;

			/* an exact name, else a unique prefix of one, as
			 * getopt_long takes them ("--prim" is --prim_nid) */
			for (int s = 0; s < nspecs && k < 0; s++)
				if (strlen(specs[s].name) == nl && strncmp(specs[s].name, name, nl) == 0)
					k = s;
			for (int s = 0; s < nspecs && k < 0 && nl > 0; s++)
				if (strncmp(specs[s].name, name, nl) == 0)
					nprefix++;
			if (k < 0 && nprefix > 1) {
				ybuf_printf(err, "%s: option '--%.*s' is ambiguous; possibilities:", PROG,
					    (int)nl, name);
				for (int s = 0; s < nspecs; s++)
					if (strncmp(specs[s].name, name, nl) == 0)
						ybuf_printf(err, " '--%s'", specs[s].name);
				ybuf_printf(err, "\n");
				return -EINVAL;
			}
			for (int s = 0; s < nspecs && k < 0 && nprefix == 1; s++)
				if (strncmp(specs[s].name, name, nl) == 0)
					k = s;
			if (k < 0) {
				ybuf_printf(err, "%s: unrecognized option '%s'\n", PROG, a);
				return -EINVAL;
			}
			inl = eq ? eq + 1 : NULL;
		} else {
			for (int s = 0; s < nspecs && k < 0; s++)
				if (specs[s].shortc && specs[s].shortc == a[1])
					k = s;
			if (k < 0) {
				ybuf_printf(err, "%s: invalid option -- '%c'\n", PROG, a[1]);
				return -EINVAL;
			}
			inl = a[2] ? a + 2 : NULL;
		}
		if (p->nseq >= (int)(sizeof(p->seq) / sizeof(p->seq[0]))) {
			ybuf_printf(err, "%s: too many options\n", PROG);
			return -EINVAL;
		}
		const char *val = NULL;

		p->v[k].set = true;
		switch (specs[k].has_arg) {
		case ARG_NONE:
			if (inl && a[1] == '-') {
				ybuf_printf(err, "%s: option '--%s' doesn't allow an argument\n", PROG,
					    specs[k].name);
				return -EINVAL;
			}
			break;
		case ARG_REQ:
			if (inl) {
				val = inl;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				ybuf_printf(err, "%s: option '%s' requires an argument\n", PROG, a);
				return -EINVAL;
			}
			break;
		case ARG_OPT_NUM:
			/* "-v", "-v 3", "-v3", "--verbose=3": a following word is
			 * taken only when it is a number (lnetctl's rule). */
			if (inl)
				val = inl;
			else if (i + 1 < argc && isdigit((unsigned char)argv[i + 1][0]))
				val = argv[++i];
			break;
		}
		if (val)
			p->v[k].arg = val;
		p->seq[p->nseq].k = k;
		p->seq[p->nseq++].arg = val;
	}
	return 0;
}

int ctl_parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	long v = strtol(s, &end, 0);

	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int ctl_verbosity(const struct optval *v)
{
	long d = 1;

	if (!v->set)
		return 0;
	if (v->arg && ctl_parse_int(v->arg, 0, 100, &d) < 0)
		d = 1;
	return (int)d;
}

/* --- help -------------------------------------------------------------------- */

void ctl_print_help(struct ybuf *out, const char *parent, const struct cmd *c)
{
	if (parent)
		ybuf_printf(out, "%s %s: %s", parent, c->name, c->help);
	else
		ybuf_printf(out, "%s: %s", c->name, c->help);
	if (c->help[0] && c->help[strlen(c->help) - 1] != '\n')
		ybuf_puts(out, "\n");
}

void ctl_print_usage(struct ybuf *out, const char *parent, const struct cmd *c)
{
	ybuf_printf(out, "%s %s: %s\n", parent, c->name, c->help);
}

bool ctl_want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}
