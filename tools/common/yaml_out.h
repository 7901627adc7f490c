/* SPDX-License-Identifier: MIT */
/*
 * yaml_out.h - text buffers and the two YAML layouts lnetctl prints.
 *
 * lnetctl has two printers and an admin sees both:
 *  - the netlink path re-emits the kernel's YAML through libyaml's emitter,
 *    usually with indent 6 ("-     net type: lo"), or the default indent 2
 *    (ping/discover); we drive the same emitter with the same events, so the
 *    layout and the quoting ("! \"...\"", "! '...'") come out identically;
 *  - the older cYAML printer (global show, stats show, set errors) writes
 *    maps with 4 spaces per level and sequence items as "    - key:".
 */
#ifndef ULNET_TOOLS_YAML_OUT_H
#define ULNET_TOOLS_YAML_OUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

/* Growable NUL-terminated text buffer. A failed allocation sets `oom` and
 * further appends are dropped (the caller reports it once). */
struct ybuf {
	char *s;
	size_t len, cap;
	bool oom;
};

void ybuf_init(struct ybuf *b);
void ybuf_free(struct ybuf *b);
void ybuf_reset(struct ybuf *b);
void ybuf_add(struct ybuf *b, const char *s, size_t n);
void ybuf_puts(struct ybuf *b, const char *s);
void ybuf_printf(struct ybuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ybuf_vprintf(struct ybuf *b, const char *fmt, va_list ap);
/* Never NULL. */
const char *ybuf_str(const struct ybuf *b);

/* --- libyaml emitter front end ------------------------------------------- */

struct yout {
	yaml_emitter_t em;
	struct ybuf *out;
	bool failed;
	bool explicit_doc;
};

/* Start a stream + document into `out`. indent 2..9; explicit: "---"/"...". */
void yo_begin(struct yout *y, struct ybuf *out, int indent, bool explicit_doc);
/* End document + stream. Returns 0 or -EIO if the emitter failed. */
int yo_end(struct yout *y);

void yo_map(struct yout *y);
void yo_seq(struct yout *y);
void yo_flow_seq(struct yout *y);
void yo_end_map(struct yout *y);
void yo_end_seq(struct yout *y);
/* Plain scalar (libyaml may still quote it when it must). */
void yo_str(struct yout *y, const char *s);
/* Scalar with a requested style and quoted_implicit=false, i.e. what lnetctl
 * emits for error descriptions: libyaml prefixes it with "! ". */
void yo_str_tagged(struct yout *y, const char *s, yaml_scalar_style_t style);
/* Double-quoted scalar, no tag ("[0]" for CPT). */
void yo_dq(struct yout *y, const char *s);
void yo_int(struct yout *y, long long v);
void yo_uint(struct yout *y, unsigned long long v);
/* key: value helpers */
void yo_kv_str(struct yout *y, const char *k, const char *v);
void yo_kv_int(struct yout *y, const char *k, long long v);
void yo_kv_uint(struct yout *y, const char *k, unsigned long long v);

/* --- cYAML-style printer (4 spaces a level) ------------------------------ */

/* "<ind>key: value\n" with ind = 4*level. */
void cy_kv(struct ybuf *b, int level, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* "<ind>key:\n" */
void cy_key(struct ybuf *b, int level, const char *k);

/* --- error shapes ---------------------------------------------------------- */

/*
 * lnetctl's netlink-path error (yaml_lnet_print_error), written to `err`:
 *   ---
 *   <op>:
 *   -     <cmd>:
 *         errno: <errnum>
 *         descr: ! "<msg>"
 *   ...
 * op is "add", "del", "set", "show", "manage" or "configure".
 */
void y_nl_error(struct ybuf *err, const char *op, const char *cmd, int errnum, const char *msg);

/*
 * cYAML error (cYAML_build_error + print), e.g. for "set" commands:
 *   <cmd>:
 *       - <entity>:
 *             errno: <errnum>
 *             descr: <msg>
 * `msg` is printed verbatim (lnetctl often embeds literal quotes).
 */
void y_cy_error(struct ybuf *err, const char *cmd, const char *entity, int errnum, const char *msg);

#endif
