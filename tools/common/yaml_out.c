/* SPDX-License-Identifier: MIT */
/* yaml_out.c - text buffers, the libyaml emitter front end, cYAML layout. */
#include "yaml_out.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ybuf_init(struct ybuf *b)
{
	b->s = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

void ybuf_free(struct ybuf *b)
{
	free(b->s);
	ybuf_init(b);
}

void ybuf_reset(struct ybuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

void ybuf_add(struct ybuf *b, const char *s, size_t n)
{
	if (b->oom || n == 0)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n + 1 && cap < ((size_t)1 << 40))
			cap *= 2;
		char *p = realloc(b->s, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void ybuf_puts(struct ybuf *b, const char *s)
{
	ybuf_add(b, s, strlen(s));
}

void ybuf_vprintf(struct ybuf *b, const char *fmt, va_list ap)
{
	char small[256];
	va_list ap2;

	va_copy(ap2, ap);
	int n = vsnprintf(small, sizeof(small), fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		ybuf_add(b, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);

	if (!big) {
		b->oom = true;
		return;
	}
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	ybuf_add(b, big, (size_t)n);
	free(big);
}

void ybuf_printf(struct ybuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ybuf_vprintf(b, fmt, ap);
	va_end(ap);
}

const char *ybuf_str(const struct ybuf *b)
{
	return b->s ? b->s : "";
}

/* --- emitter ---------------------------------------------------------------- */

static int yo_write(void *data, unsigned char *buffer, size_t size)
{
	struct ybuf *b = data;

	ybuf_add(b, (const char *)buffer, size);
	return b->oom ? 0 : 1;
}

static void yo_emit(struct yout *y, yaml_event_t *ev)
{
	if (y->failed) {
		yaml_event_delete(ev);
		return;
	}
	if (!yaml_emitter_emit(&y->em, ev))
		y->failed = true;
}

void yo_begin(struct yout *y, struct ybuf *out, int indent, bool explicit_doc)
{
	yaml_event_t ev;

	y->out = out;
	y->failed = false;
	y->explicit_doc = explicit_doc;
	yaml_emitter_initialize(&y->em);
	yaml_emitter_set_indent(&y->em, indent);
	/* Long descriptions must stay on one line, as lnetctl users grep them. */
	yaml_emitter_set_width(&y->em, -1);
	yaml_emitter_set_unicode(&y->em, 1);
	yaml_emitter_set_output(&y->em, yo_write, out);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	yo_emit(y, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, explicit_doc ? 0 : 1);
	yo_emit(y, &ev);
}

int yo_end(struct yout *y)
{
	yaml_event_t ev;

	yaml_document_end_event_initialize(&ev, y->explicit_doc ? 0 : 1);
	yo_emit(y, &ev);
	yaml_stream_end_event_initialize(&ev);
	yo_emit(y, &ev);
	yaml_emitter_flush(&y->em);
	yaml_emitter_delete(&y->em);
	return y->failed ? -EIO : 0;
}

void yo_map(struct yout *y)
{
	yaml_event_t ev;

	yaml_mapping_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_MAP_TAG, 1,
					    YAML_ANY_MAPPING_STYLE);
	yo_emit(y, &ev);
}

void yo_seq(struct yout *y)
{
	yaml_event_t ev;

	yaml_sequence_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_SEQ_TAG, 1,
					     YAML_ANY_SEQUENCE_STYLE);
	yo_emit(y, &ev);
}

void yo_flow_seq(struct yout *y)
{
	yaml_event_t ev;

	yaml_sequence_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_SEQ_TAG, 1,
					     YAML_FLOW_SEQUENCE_STYLE);
	yo_emit(y, &ev);
}

void yo_end_map(struct yout *y)
{
	yaml_event_t ev;

	yaml_mapping_end_event_initialize(&ev);
	yo_emit(y, &ev);
}

void yo_end_seq(struct yout *y)
{
	yaml_event_t ev;

	yaml_sequence_end_event_initialize(&ev);
	yo_emit(y, &ev);
}

static void yo_scalar(struct yout *y, const char *s, int plain_implicit, int quoted_implicit,
		      yaml_scalar_style_t style, const char *tag)
{
	yaml_event_t ev;

	yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)tag, (yaml_char_t *)s,
				     (int)strlen(s), plain_implicit, quoted_implicit, style);
	yo_emit(y, &ev);
}

void yo_str(struct yout *y, const char *s)
{
	yo_scalar(y, s, 1, 0, YAML_PLAIN_SCALAR_STYLE, YAML_STR_TAG);
}

void yo_str_tagged(struct yout *y, const char *s, yaml_scalar_style_t style)
{
	yo_scalar(y, s, 1, 0, style, YAML_STR_TAG);
}

void yo_dq(struct yout *y, const char *s)
{
	yo_scalar(y, s, 1, 1, YAML_DOUBLE_QUOTED_SCALAR_STYLE, YAML_STR_TAG);
}

void yo_int(struct yout *y, long long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", v);
	yo_scalar(y, s, 1, 0, YAML_PLAIN_SCALAR_STYLE, YAML_INT_TAG);
}

void yo_uint(struct yout *y, unsigned long long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%llu", v);
	yo_scalar(y, s, 1, 0, YAML_PLAIN_SCALAR_STYLE, YAML_INT_TAG);
}

void yo_kv_str(struct yout *y, const char *k, const char *v)
{
	yo_str(y, k);
	yo_str(y, v);
}

void yo_kv_int(struct yout *y, const char *k, long long v)
{
	yo_str(y, k);
	yo_int(y, v);
}

void yo_kv_uint(struct yout *y, const char *k, unsigned long long v)
{
	yo_str(y, k);
	yo_uint(y, v);
}

/* --- cYAML layout ------------------------------------------------------------ */

void cy_kv(struct ybuf *b, int level, const char *k, const char *fmt, ...)
{
	va_list ap;

	ybuf_printf(b, "%*s%s: ", 4 * level, "", k);
	va_start(ap, fmt);
	ybuf_vprintf(b, fmt, ap);
	va_end(ap);
	ybuf_puts(b, "\n");
}

void cy_key(struct ybuf *b, int level, const char *k)
{
	ybuf_printf(b, "%*s%s:\n", 4 * level, "", k);
}

/* --- errors ------------------------------------------------------------------- */

void y_nl_error(struct ybuf *err, const char *op, const char *cmd, int errnum, const char *msg)
{
	struct yout y;

	yo_begin(&y, err, 6, true);
	yo_map(&y);
	yo_str(&y, op);
	yo_seq(&y);
	yo_map(&y);
	yo_kv_str(&y, cmd, "");
	yo_kv_int(&y, "errno", errnum);
	yo_str(&y, "descr");
	yo_str_tagged(&y, msg ? msg : "", YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	yo_end_map(&y);
	yo_end_seq(&y);
	yo_end_map(&y);
	yo_end(&y);
}

void y_cy_error(struct ybuf *err, const char *cmd, const char *entity, int errnum, const char *msg)
{
	ybuf_printf(err, "%s:\n    - %s:\n          errno: %d\n          descr: %s\n", cmd, entity,
		    errnum, msg);
}
