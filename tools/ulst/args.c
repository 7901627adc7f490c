/* SPDX-License-Identifier: MIT */
/*
 * args.c - ulst argument parsers. Each names the option and the offending
 * text in its message ("ulst brw: --size '3x': ...") and returns -1; the
 * caller exits with ULST_EXIT_USAGE.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulst.h"

void ulst_arg_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ulst%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'ulst %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
}

void ulst_getopt_error(const char *cmd, int opt, int optopt_v, const char *arg)
{
	/* a long option is named as written (without "=value"), a short one
	 * by its letter */
	if (arg && !strncmp(arg, "--", 2)) {
		int len = (int)strcspn(arg, "=");

		if (opt == ':')
			ulst_arg_error(cmd, "option %.*s needs an argument", len, arg);
		else
			ulst_arg_error(cmd, "unknown option '%.*s'", len, arg);
	} else if (optopt_v > 0 && optopt_v < 256 && isprint(optopt_v)) {
		if (opt == ':')
			ulst_arg_error(cmd, "option -%c needs an argument", optopt_v);
		else
			ulst_arg_error(cmd, "unknown option -%c", optopt_v);
	} else {
		ulst_arg_error(cmd, "bad option '%s'", arg ? arg : "?");
	}
}

int ulst_parse_ulong(const char *cmd, const char *opt, const char *s, unsigned long min,
		     unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || !isdigit((unsigned char)s[0]) || v < min || v > max) {
		ulst_arg_error(cmd, "%s '%s': expected a whole number from %lu to %lu", opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int ulst_parse_size(const char *cmd, const char *opt, const char *s, size_t max, size_t *out)
{
	char *end;
	unsigned long long v, mult = 1;
	char maxs[32];

	ulst_size_str(max, maxs, sizeof(maxs));
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && *end && !end[1]) {
		switch (*end) {
		case 'k': case 'K': mult = 1024; end++; break;
		case 'm': case 'M': mult = 1024 * 1024; end++; break;
		default: break;
		}
	}
	if (!*s || end == s || *end || errno || !isdigit((unsigned char)s[0]) ||
	    v > max / mult) {
		ulst_arg_error(cmd, "%s '%s': expected bytes as N, Nk or Nm, at most %s", opt, s, maxs);
		return -1;
	}
	*out = (size_t)(v * mult);
	return 0;
}

int ulst_parse_seconds(const char *cmd, const char *opt, const char *s, double min, double max,
		       double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < min || v > max ||
	    !(isdigit((unsigned char)s[0]) || s[0] == '.')) {
		ulst_arg_error(cmd, "%s '%s': expected seconds from %g to %g", opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int ulst_parse_nid(const char *cmd, const char *what, const char *s, ulnet_nid_t *nid)
{
	struct ulnet_parse_err pe = { 0 };

	if (ulnet_nid_parse(s, nid, &pe)) {
		ulst_arg_error(cmd, "%s '%s': not a NID: %s", what, s, pe.msg[0] ? pe.msg : "invalid");
		return -1;
	}
	if (ulnet_nid_is_any(nid)) {
		ulst_arg_error(cmd, "%s '%s': LNET_NID_ANY is not a node", what, s);
		return -1;
	}
	return 0;
}

int ulst_parse_nids(const char *cmd, const char *what, const char *s, ulnet_nid_t *nids, int max)
{
	char *copy = strdup(s), *save = NULL, *tok;
	int n = 0;

	if (!copy) {
		ulst_arg_error(cmd, "out of memory");
		return -1;
	}
	if (!*s || s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,")) {
		ulst_arg_error(cmd, "%s '%s': expected NID[,NID...] without empty entries", what, s);
		free(copy);
		return -1;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			ulst_arg_error(cmd, "%s: more than %d NIDs", what, max);
			free(copy);
			return -1;
		}
		if (ulst_parse_nid(cmd, what, tok, &nids[n])) {
			free(copy);
			return -1;
		}
		n++;
	}
	free(copy);
	return n;
}

const char *ulst_size_str(size_t n, char *buf, size_t len)
{
	if (n >= 1024 * 1024 && n % (1024 * 1024) == 0)
		snprintf(buf, len, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%zu KiB", n >> 10);
	else
		snprintf(buf, len, "%zu B", n);
	return buf;
}
