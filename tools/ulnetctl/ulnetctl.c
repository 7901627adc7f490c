/* SPDX-License-Identifier: MIT */
/*
 * ulnetctl - lnetctl for ulnet: sends its arguments to ulnetd over the
 * control socket and prints what the daemon answers, with its exit status.
 *
 *   ulnetctl [--ctl PATH] <lnetctl command...>
 *
 * The socket is --ctl PATH, else $ULNET_CTL, else the daemon's default path.
 * Help is answered locally. Files named by "import" are read here and sent
 * to the daemon; "export FILE" is written here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_cmds.h"
#include "ctl_proto.h"

/* Read an import file: at most CTL_YAML_MAX_BYTES, else -EFBIG. */
static int read_all(FILE *f, struct ybuf *b)
{
	char chunk[65536];

	for (size_t iter = 0; iter <= CTL_YAML_MAX_BYTES / sizeof(chunk) + 1; iter++) {
		size_t n = fread(chunk, 1, sizeof(chunk), f);

		if (n == 0)
			return ferror(f) ? -EIO : 0;
		ybuf_add(b, chunk, n);
		if (b->oom)
			return -ENOMEM;
		if (b->len > CTL_YAML_MAX_BYTES)
			return -EFBIG;
	}
	return -EFBIG;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ulnetctl [--ctl PATH] <command> [options]\n"
		   "       ulnetctl --list-commands\n"
		   "Talks to ulnetd at PATH (default: $ULNET_CTL or the daemon's default socket).\n");
}

int main(int argc, char **argv)
{
	char path[256];
	const char *ctl = getenv("ULNET_CTL");
	int i = 1;

	/* Our own options come first, before the lnetctl command. */
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--ctl") == 0 && i + 1 < argc) {
			ctl = argv[++i];
		} else if (strncmp(argv[i], "--ctl=", 6) == 0) {
			ctl = argv[i] + 6;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			break;
		} else if (strcmp(argv[i], "--list-commands") == 0) {
			break;
		} else {
			fprintf(stderr, "ulnetctl: unrecognized option '%s'\n", argv[i]);
			usage(stderr);
			return 255;
		}
	}
	if (ctl && *ctl)
		snprintf(path, sizeof(path), "%s", ctl);
	else
		ctl_default_path(path, sizeof(path));
	int cargc = argc - i;
	char **cargv = argv + i;
	struct ctl_reply rp;

	if (cargc == 0 && i > 1 && strcmp(argv[i - 1], "--help") != 0 && strcmp(argv[i - 1], "-h") != 0) {
		usage(stderr);
		return 255;
	}
	if (cargc == 0 || ctl_is_help(cargc, cargv)) {
		ctl_reply_init(&rp);
		ctl_run(NULL, cargc, cargv, NULL, 0, &rp);
		fputs(ybuf_str(&rp.out), stdout);
		fputs(ybuf_str(&rp.err), stderr);
		int rc = rp.rc;

		ctl_reply_free(&rp);
		return rc;
	}

	struct ybuf blob;
	bool have_blob = false;
	const char *export_file = NULL;
	char *argv2[CTL_MAX_ARGS + 1];
	int argc2 = 0;

	ybuf_init(&blob);
	/* The limits of a request (ctl_proto.h), named here rather than
	 * failing later with a bare E2BIG. */
	if (cargc > CTL_MAX_ARGS) {
		fprintf(stderr, "ulnetctl: %d arguments, over the limit of %d arguments per command\n",
			cargc, CTL_MAX_ARGS);
		return 255;
	}
	for (int k = 0; k < cargc; k++) {
		size_t n = strlen(cargv[k]);

		if (n > CTL_MAX_ARG) {
			fprintf(stderr, "ulnetctl: argument %d ('%.32s...') is %zu bytes, over the limit of %d bytes per argument\n",
				k + 1, cargv[k], n, CTL_MAX_ARG);
			return 255;
		}
	}
	for (int k = 0; k < cargc; k++)
		argv2[argc2++] = cargv[k];
	argv2[argc2] = NULL;
	if (strcmp(cargv[0], "import") == 0) {
		/* The last non-option word is the file; none: stdin. */
		const char *file = NULL;

		for (int k = 1; k < cargc; k++)
			if (cargv[k][0] != '-')
				file = cargv[k];
		FILE *f = file ? fopen(file, "r") : stdin;

		if (!f) {
			/* lnetctl's wording for an unreadable import file. */
			struct ybuf e;
			char msg[512];

			ybuf_init(&e);
			snprintf(msg, sizeof(msg), "cannot open '%s': %s", file, strerror(errno));
			y_nl_error(&e, "add", "import", -errno, msg);
			fputs(ybuf_str(&e), stderr);
			ybuf_free(&e);
			return 234;
		}
		int rc = read_all(f, &blob);

		if (f != stdin)
			fclose(f);
		if (rc == -EFBIG) {
			struct ybuf e;
			char msg[512];
			bool del = false;

			for (int k = 1; k < cargc; k++)
				del |= strcmp(cargv[k], "--del") == 0 || strcmp(cargv[k], "-d") == 0;
			ybuf_init(&e);
			snprintf(msg, sizeof(msg),
				 "'%s' is larger than %u bytes (%u MiB), the limit of an import file (request size)",
				 file ? file : "<stdin>", CTL_YAML_MAX_BYTES, CTL_YAML_MAX_BYTES >> 20);
			y_nl_error(&e, del ? "del" : "add", "import", -EFBIG, msg);
			fputs(ybuf_str(&e), stderr);
			ybuf_free(&e);
			ybuf_free(&blob);
			return 234;
		}
		if (rc < 0) {
			fprintf(stderr, "ulnetctl: cannot read '%s': %s\n", file ? file : "<stdin>",
				strerror(-rc));
			ybuf_free(&blob);
			return 234;
		}
		have_blob = true;
	} else if (strcmp(cargv[0], "export") == 0) {
		/* Strip FILE: the daemon returns the text, we write it. */
		argc2 = 0;
		for (int k = 0; k < cargc; k++) {
			if (k > 0 && cargv[k][0] != '-' && !export_file)
				export_file = cargv[k];
			else
				argv2[argc2++] = cargv[k];
		}
		argv2[argc2] = NULL;
	}

	char why[512];
	int rc = ctl_call_ex(path, argc2, argv2, have_blob ? ybuf_str(&blob) : NULL, blob.len, -1, &rp,
			     why, sizeof(why));

	ybuf_free(&blob);
	if (rc < 0 && why[0]) {
		/* not the daemon we mean to talk to: nothing was sent */
		fprintf(stderr, "ulnetctl: refusing ulnetd at %s: %s\n", path, why);
		return 255;
	}
	if (rc < 0) {
		fprintf(stderr, "ulnetctl: cannot reach ulnetd at %s: %s\n", path, strerror(-rc));
		return 255;
	}
	if (export_file && rp.rc == 0) {
		FILE *f = fopen(export_file, "w");

		if (!f || fwrite(ybuf_str(&rp.out), 1, rp.out.len, f) != rp.out.len) {
			fprintf(stderr, "ulnetctl: cannot write '%s': %s\n", export_file, strerror(errno));
			if (f)
				fclose(f);
			ctl_reply_free(&rp);
			return 255;
		}
		if (fclose(f) != 0) {
			fprintf(stderr, "ulnetctl: cannot write '%s': %s\n", export_file, strerror(errno));
			ctl_reply_free(&rp);
			return 255;
		}
	} else {
		fwrite(ybuf_str(&rp.out), 1, rp.out.len, stdout);
	}
	fwrite(ybuf_str(&rp.err), 1, rp.err.len, stderr);
	rc = rp.rc;
	ctl_reply_free(&rp);
	return rc;
}
