/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the node's state in the Prometheus text exposition format
 * (metrics.h). The format wants every sample of a family together, after
 * its HELP and TYPE lines, so each family below walks its NIs, peer NIs or
 * connections on its own.
 *
 * Names follow Prometheus's conventions: ulnet_ prefix, counters end in
 * _total, base units (seconds, bytes) in the name. Where the node keeps a
 * current value rather than a count (credits, health, messages in flight,
 * the bytes of connections that come and go) the family is a gauge. The
 * latency samples, counted by the core in fixed buckets, are histograms.
 */
#include "metrics.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmds_int.h"

/* --- snapshot ------------------------------------------------------------------ */

int metrics_snap_take(struct ctl_ctx *ctx, struct metrics_snap *s)
{
	int rc = 0;

	memset(s, 0, sizeof(*s));
	/* the show commands' lock: a scrape is as safe as `net show` */
	pthread_rwlock_rdlock(&ctx->lock);
	if (ctx->ln) {
		s->configured = true;
		ulnet_counters_get(ctx->ln, &s->counters);
		s->nnis = ctl_get_nis(ctx->ln, &s->nis);
		if (s->nnis >= 0)
			s->npeers = ctl_get_peers(ctx->ln, &s->peers);
		if (s->nnis >= 0 && s->npeers >= 0)
			s->nconns = ctl_get_conns(ctx->ln, &s->conns);
		if (s->nnis < 0 || s->npeers < 0 || s->nconns < 0)
			rc = -ENOMEM;
		else
			s->have_routing = ulnet_routing_info(ctx->ln, &s->routing) == 0;
	}
	pthread_rwlock_unlock(&ctx->lock);
	if (rc < 0) {
		/* the counts are the errors; what was allocated is freed */
		s->nnis = s->nnis < 0 ? 0 : s->nnis;
		s->npeers = s->npeers < 0 ? 0 : s->npeers;
		s->nconns = s->nconns < 0 ? 0 : s->nconns;
		metrics_snap_free(s);
	}
	return rc;
}

void metrics_snap_free(struct metrics_snap *s)
{
	free(s->nis);
	ctl_free_peers(s->peers, s->npeers);
	free(s->conns);
	memset(s, 0, sizeof(*s));
}

/* --- text ------------------------------------------------------------------------ */

/* Labels of one sample: "k1=\"v1\",k2=\"v2\"", values escaped as the format
 * says (backslash, double quote, newline). */
struct labels {
	char s[512];
	size_t len;
};

static void lb_init(struct labels *l)
{
	l->s[0] = '\0';
	l->len = 0;
}

static void lb_add(struct labels *l, const char *key, const char *val)
{
	char esc[256];
	size_t n = 0;

	for (const char *p = val; *p && n + 2 < sizeof(esc); p++) {
		if (*p == '\\' || *p == '"') {
			esc[n++] = '\\';
			esc[n++] = *p;
		} else if (*p == '\n') {
			esc[n++] = '\\';
			esc[n++] = 'n';
		} else {
			esc[n++] = *p;
		}
	}
	esc[n] = '\0';
	int w = snprintf(l->s + l->len, sizeof(l->s) - l->len, "%s%s=\"%s\"", l->len ? "," : "",
			 key, esc);

	if (w > 0)
		l->len = l->len + (size_t)w < sizeof(l->s) ? l->len + (size_t)w : sizeof(l->s) - 1;
}

static void head(struct ybuf *out, const char *name, const char *type, const char *help)
{
	ybuf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void name_labels(struct ybuf *out, const char *name, const struct labels *l)
{
	if (l && l->len)
		ybuf_printf(out, "%s{%s} ", name, l->s);
	else
		ybuf_printf(out, "%s ", name);
}

static void put_u64(struct ybuf *out, const char *name, const struct labels *l, uint64_t v)
{
	name_labels(out, name, l);
	ybuf_printf(out, "%llu\n", (unsigned long long)v);
}

static void put_i64(struct ybuf *out, const char *name, const struct labels *l, long long v)
{
	name_labels(out, name, l);
	ybuf_printf(out, "%lld\n", v);
}

/* `ns` nanoseconds in seconds, exactly: the integer part, then the
 * fraction without its trailing zeros ("0.000001024", "68.719476736",
 * "3"). */
static const char *seconds_str(char buf[32], uint64_t ns)
{
	int n = snprintf(buf, 32, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
			 (unsigned long long)(ns % 1000000000u));

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

static void put_seconds(struct ybuf *out, const char *name, const struct labels *l, uint64_t nsec)
{
	char v[32];

	name_labels(out, name, l);
	ybuf_printf(out, "%s\n", seconds_str(v, nsec));
}

/* A family of one unlabelled sample. */
static void one_u64(struct ybuf *out, const char *name, const char *type, const char *help,
		    uint64_t v)
{
	head(out, name, type, help);
	put_u64(out, name, NULL, v);
}

static const char *const msg_types[5] = {
	[ULNET_MSG_ACK] = "ack", [ULNET_MSG_PUT] = "put", [ULNET_MSG_GET] = "get",
	[ULNET_MSG_REPLY] = "reply", [ULNET_MSG_HELLO] = "hello",
};

/* --- global statistics (stats show) ----------------------------------------------- */

static void render_counters(struct ybuf *out, const struct ulnet_counters *c)
{
	/* stats show's keys: X_count is ulnet_X_total, X_length
	 * ulnet_X_bytes_total; the three current figures are gauges */
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} f[] = {
#define CG(n, field, h) { "ulnet_" n, "gauge", h, offsetof(struct ulnet_counters, field) }
#define CC(n, field, h) { "ulnet_" n "_total", "counter", h, offsetof(struct ulnet_counters, field) }
		CG("msgs_alloc", msgs_alloc, "Messages allocated now (stats msgs_alloc)."),
		CG("msgs_max", msgs_max, "Most messages allocated at once since the last stats reset (stats msgs_max)."),
		CG("rst_alloc", rst_alloc, "Response trackers allocated now (stats rst_alloc)."),
		CC("errors", errors, "Errors (stats errors)."),
		CC("send", send_count, "Messages sent (stats send_count)."),
		CC("resend", resend_count, "Messages resent (stats resend_count)."),
		CC("response_timeout", response_timeout_count, "Responses (ACK, REPLY) that timed out (stats response_timeout_count)."),
		CC("local_interrupt", local_interrupt_count, "Sends that failed with a local interrupt (stats local_interrupt_count)."),
		CC("local_dropped", local_dropped_count, "Sends dropped locally (stats local_dropped_count)."),
		CC("local_aborted", local_aborted_count, "Sends aborted locally (stats local_aborted_count)."),
		CC("local_no_route", local_no_route_count, "Sends with no route (stats local_no_route_count)."),
		CC("local_timeout", local_timeout_count, "Sends that timed out locally (stats local_timeout_count)."),
		CC("local_error", local_error_count, "Sends with a local error (stats local_error_count)."),
		CC("remote_dropped", remote_dropped_count, "Messages the remote dropped (stats remote_dropped_count)."),
		CC("remote_error", remote_error_count, "Messages with a remote error (stats remote_error_count)."),
		CC("remote_timeout", remote_timeout_count, "Messages that timed out at the remote (stats remote_timeout_count)."),
		CC("network_timeout", network_timeout_count, "Messages that timed out in the network (stats network_timeout_count)."),
		CC("failed_resends", failed_resends, "Resends that failed (stats failed_resends)."),
		CC("successful_resends", successful_resends, "Resends that succeeded (stats successful_resends)."),
		CC("recv", recv_count, "Messages received (stats recv_count)."),
		CC("route", route_count, "Messages forwarded for other nodes (stats route_count)."),
		CC("drop", drop_count, "Messages dropped (stats drop_count)."),
		CC("send_bytes", send_length, "Payload bytes sent (stats send_length)."),
		CC("recv_bytes", recv_length, "Payload bytes received (stats recv_length)."),
		CC("route_bytes", route_length, "Payload bytes forwarded for other nodes (stats route_length)."),
		CC("drop_bytes", drop_length, "Payload bytes dropped (stats drop_length)."),
#undef CG
#undef CC
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)c + f[i].off, sizeof(v));
		one_u64(out, f[i].name, f[i].type, f[i].help, v);
	}
}

/* --- NIs and peer NIs ------------------------------------------------------------- */

/* What the NI and peer NI families share: an NI's or peer NI's NID label,
 * and where its figures are. */
struct elem {
	const char *label;                /* "nid" or "peer_nid" */
	char nid[ULNET_NIDSTR_SIZE];
	const struct ulnet_msg_type_counts *cnt[3];    /* sent, received, dropped */
	const struct ulnet_msg_type_counts *bytes[3];  /* their payload bytes */
	const struct ulnet_latency *lat[3];            /* put_egress, get_rtt, put_ack */
	const struct ulnet_health_stats *health;
};

static void elem_labels(struct labels *l, const struct elem *e)
{
	lb_init(l);
	lb_add(l, e->label, e->nid);
}

/* ulnet_<pfx>_send_total, _recv_total, _drop_total by message type, each
 * followed by its payload bytes, ulnet_<pfx>_send_bytes_total, ... */
static void render_type_counts(struct ybuf *out, const char *pfx, const char *what,
			       const struct elem *e, int n)
{
	static const char *const dir[3] = { "send", "recv", "drop" };
	static const char *const verb[3] = { "sent", "received", "dropped" };

	for (int d = 0; d < 3; d++)
		for (int b = 0; b < 2; b++) {
			char name[96], help[400];

			snprintf(name, sizeof(name), "ulnet_%s_%s%s_total", pfx, dir[d],
				 b ? "_bytes" : "");
			if (!b)
				snprintf(help, sizeof(help), "Messages %s on the %s, by LNet message "
					 "type%s.", verb[d], what, d == 0 ? " (an ACK or REPLY sent "
					 "counts as the PUT or GET it answers, as the kernel's "
					 "sent_stats)" : "");
			else
				snprintf(help, sizeof(help), "Payload bytes of the messages %s on the "
					 "%s, by LNet message type as ulnet_%s_%s_total%s.", verb[d],
					 what, pfx, dir[d], d == 0 ? " (a REPLY's under get; an ACK "
					 "and a GET carry none)" : d == 1 ? " (of a PUT or REPLY for "
					 "this node, the bytes placed in its MD)" : "");
			head(out, name, "counter", help);
			for (int i = 0; i < n; i++)
				for (int t = 0; t < 5; t++) {
					struct labels l;

					elem_labels(&l, &e[i]);
					lb_add(&l, "type", msg_types[t]);
					put_u64(out, name, &l, (b ? e[i].bytes : e[i].cnt)[d]->n[t]);
				}
		}
}

/* The latency samples the node keeps, one histogram per element and op:
 * ulnet_<pfx>_latency_seconds_bucket{le=...} the samples of at most `le`
 * seconds (cumulative, to +Inf), _sum their exact total, _count their
 * number (the +Inf bucket's). */
static void render_latency(struct ybuf *out, const char *pfx, const char *what,
			   const struct elem *e, int n)
{
	static const char *const op[3] = { "put_egress", "get_rtt", "put_ack" };
	char name[96], sample[112], help[256], le[ULNET_LAT_BUCKETS][32];

	for (unsigned k = 0; k < ULNET_LAT_BUCKETS; k++) {
		if (k < ULNET_LAT_BUCKETS - 1)
			seconds_str(le[k], ulnet_latency_bucket_le(k));
		else
			snprintf(le[k], sizeof(le[k]), "+Inf");
	}
	snprintf(name, sizeof(name), "ulnet_%s_latency_seconds", pfx);
	snprintf(help, sizeof(help), "Latency samples taken on the %s since the last stats reset, "
		 "by op (put_egress: PUT to its send completion, get_rtt: GET to REPLY, put_ack: "
		 "PUT to ACK).", what);
	head(out, name, "histogram", help);
	for (int i = 0; i < n; i++)
		for (int o = 0; o < 3; o++) {
			const struct ulnet_latency *lt = e[i].lat[o];
			uint64_t cum = 0;
			struct labels l;

			snprintf(sample, sizeof(sample), "%s_bucket", name);
			for (unsigned k = 0; k < ULNET_LAT_BUCKETS; k++) {
				cum += lt->bucket[k];
				elem_labels(&l, &e[i]);
				lb_add(&l, "op", op[o]);
				lb_add(&l, "le", le[k]);
				put_u64(out, sample, &l, cum);
			}
			elem_labels(&l, &e[i]);
			lb_add(&l, "op", op[o]);
			snprintf(sample, sizeof(sample), "%s_sum", name);
			put_seconds(out, sample, &l, lt->sum_nsec);
			snprintf(sample, sizeof(sample), "%s_count", name);
			put_u64(out, sample, &l, cum);
		}
}

/* Health: the value (0..1000), in recovery, recovery pings, and the error
 * counts `net show -v` / `peer show -v` print for it. */
static void render_health(struct ybuf *out, const char *pfx, const char *what, const struct elem *e,
			  int n, bool peer)
{
	char name[96], help[200];

	snprintf(name, sizeof(name), "ulnet_%s_health_value", pfx);
	snprintf(help, sizeof(help), "Health value of the %s, 0..1000 (1000: healthy).", what);
	head(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		struct labels l;

		elem_labels(&l, &e[i]);
		put_i64(out, name, &l, e[i].health->health_value);
	}
	snprintf(name, sizeof(name), "ulnet_%s_in_recovery", pfx);
	snprintf(help, sizeof(help), "1 while the %s is in the recovery queue (health below 1000).",
		 what);
	head(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		struct labels l;

		elem_labels(&l, &e[i]);
		put_i64(out, name, &l, e[i].health->in_recovery);
	}
	snprintf(name, sizeof(name), "ulnet_%s_recovery_pings", pfx);
	snprintf(help, sizeof(help), "Recovery pings sent to the %s since it last recovered.", what);
	head(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		struct labels l;

		elem_labels(&l, &e[i]);
		put_u64(out, name, &l, e[i].health->ping_count);
	}
	/* the NI's and the peer NI's lists of net show -v / peer show -v */
	struct herr {
		const char *name;
		size_t off;
	};
#define HE(n, f) { n, offsetof(struct ulnet_health_stats, f) }
	static const struct herr ni_err[] = {
		HE("interrupt", interrupts), HE("dropped", dropped), HE("aborted", aborted),
		HE("no_route", no_route), HE("timeout", timeouts), HE("error", error),
	};
	static const struct herr pni_err[] = {
		HE("dropped", dropped), HE("timeout", timeouts), HE("error", error),
		HE("network_timeout", network_timeout),
	};
#undef HE
	const struct herr *errs = peer ? pni_err : ni_err;
	size_t nerr = peer ? sizeof(pni_err) / sizeof(pni_err[0]) : sizeof(ni_err) / sizeof(ni_err[0]);

	snprintf(name, sizeof(name), "ulnet_%s_health_errors_total", pfx);
	snprintf(help, sizeof(help), "Health events of the %s, by error (they lower its health value; "
		 "kept across stats reset).", what);
	head(out, name, "counter", help);
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < nerr; k++) {
			uint64_t v;
			struct labels l;

			memcpy(&v, (const char *)e[i].health + errs[k].off, sizeof(v));
			elem_labels(&l, &e[i]);
			lb_add(&l, "error", errs[k].name);
			put_u64(out, name, &l, v);
		}
}

/* A gauge of one int per element. */
static void render_int(struct ybuf *out, const char *name, const char *help, const struct elem *e,
		       const int *v, int n)
{
	head(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		struct labels l;

		elem_labels(&l, &e[i]);
		put_i64(out, name, &l, v[i]);
	}
}

static void elem_fill(struct elem *e, const char *label, const ulnet_nid_t *nid,
		      const struct ulnet_msg_type_counts *sent,
		      const struct ulnet_msg_type_counts *received,
		      const struct ulnet_msg_type_counts *dropped,
		      const struct ulnet_msg_type_counts *sent_bytes,
		      const struct ulnet_msg_type_counts *received_bytes,
		      const struct ulnet_msg_type_counts *dropped_bytes,
		      const struct ulnet_latency *pe, const struct ulnet_latency *gr,
		      const struct ulnet_latency *pa, const struct ulnet_health_stats *h)
{
	e->label = label;
	ulnet_nid_str(nid, e->nid);
	e->cnt[0] = sent;
	e->cnt[1] = received;
	e->cnt[2] = dropped;
	e->bytes[0] = sent_bytes;
	e->bytes[1] = received_bytes;
	e->bytes[2] = dropped_bytes;
	e->lat[0] = pe;
	e->lat[1] = gr;
	e->lat[2] = pa;
	e->health = h;
}

static void render_nis(struct ybuf *out, const struct ulnet_ni_info *nis, int n)
{
	struct elem *e = calloc((size_t)n + 1, sizeof(*e));
	int *v = calloc((size_t)n + 1, sizeof(*v));

	if (!e || !v) {
		out->oom = true;
		goto out;
	}
	for (int i = 0; i < n; i++)
		elem_fill(&e[i], "nid", &nis[i].nid, &nis[i].sent, &nis[i].received, &nis[i].dropped,
			  &nis[i].sent_bytes, &nis[i].received_bytes, &nis[i].dropped_bytes,
			  &nis[i].put_egress, &nis[i].get_rtt, &nis[i].put_ack, &nis[i].health);
	for (int i = 0; i < n; i++)
		v[i] = nis[i].up;
	render_int(out, "ulnet_ni_up", "1 if the local NI is up (net show status).", e, v, n);
	render_type_counts(out, "ni", "local NI", e, n);
	for (int i = 0; i < n; i++)
		v[i] = nis[i].credits_avail;
	render_int(out, "ulnet_ni_tx_credits", "Transmit credits of the local NI available now "
		   "(negative: messages wait for one).", e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = nis[i].credits_min;
	render_int(out, "ulnet_ni_tx_credits_min", "The fewest transmit credits the local NI has had.",
		   e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = nis[i].credits_max;
	render_int(out, "ulnet_ni_tx_credits_max", "Transmit credits of the local NI (its credits "
		   "tunable).", e, v, n);
	render_health(out, "ni", "local NI", e, n, false);
	render_latency(out, "ni", "local NI", e, n);
out:
	free(e);
	free(v);
}

/* The peer NIs given series: the first `max` of the peers' NIs, in the
 * order peer show lists them (so the same ones scrape after scrape while
 * the peer table stays). */
static void render_peer_nis(struct ybuf *out, const struct ulnet_peer_info *peers, int npeers,
			    int max)
{
	int total = 0, n = 0;

	for (int p = 0; p < npeers; p++)
		total += peers[p].nnis;
	one_u64(out, "ulnet_peers", "gauge", "Peers the node knows.", (uint64_t)npeers);
	one_u64(out, "ulnet_peer_nis", "gauge", "Peer NIs the node knows.", (uint64_t)total);
	one_u64(out, "ulnet_peer_nis_omitted", "gauge", "Peer NIs past the cap on peer NIs with "
		"series of their own (docs/tools.md), left out of the ulnet_peer_ni_ families.",
		(uint64_t)(total > max ? total - max : 0));

	int cap = total < max ? total : max;
	struct elem *e = calloc((size_t)cap + 1, sizeof(*e));
	const struct ulnet_peer_ni_info **pn = calloc((size_t)cap + 1, sizeof(*pn));
	int *v = calloc((size_t)cap + 1, sizeof(*v));

	if (!e || !pn || !v) {
		out->oom = true;
		goto out;
	}
	for (int p = 0; p < npeers && n < cap; p++)
		for (int j = 0; j < peers[p].nnis && n < cap; j++)
			pn[n++] = ulnet_peer_info_ni(&peers[p], j);
	for (int i = 0; i < n; i++)
		elem_fill(&e[i], "peer_nid", &pn[i]->nid, &pn[i]->sent, &pn[i]->received,
			  &pn[i]->dropped, &pn[i]->sent_bytes, &pn[i]->received_bytes,
			  &pn[i]->dropped_bytes, &pn[i]->put_egress, &pn[i]->get_rtt,
			  &pn[i]->put_ack, &pn[i]->health);
	/* up or down only where the node tracks it (gateways, peers of a
	 * router with a peer_timeout); peer show's "NA" has no sample */
	head(out, "ulnet_peer_ni_up", "gauge", "1 if the peer NI is up, 0 if down (only peer NIs "
	     "whose aliveness the node tracks).");
	for (int i = 0; i < n; i++) {
		struct labels l;

		if (pn[i]->state < 0)
			continue;
		elem_labels(&l, &e[i]);
		put_i64(out, "ulnet_peer_ni_up", &l, pn[i]->state);
	}
	render_type_counts(out, "peer_ni", "peer NI", e, n);
	for (int i = 0; i < n; i++)
		v[i] = pn[i]->available_tx_credits;
	render_int(out, "ulnet_peer_ni_tx_credits", "Transmit credits to the peer NI available now "
		   "(negative: messages wait for one).", e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = pn[i]->min_tx_credits;
	render_int(out, "ulnet_peer_ni_tx_credits_min", "The fewest transmit credits to the peer NI "
		   "there have been.", e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = pn[i]->max_tx_credits;
	render_int(out, "ulnet_peer_ni_tx_credits_max", "Transmit credits to the peer NI (the NI's "
		   "peer_credits).", e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = pn[i]->tx_q_num_of_buf;
	render_int(out, "ulnet_peer_ni_tx_queued_bytes", "Bytes queued for the peer NI waiting for "
		   "credits (peer show tx_q_num_of_buf).", e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = pn[i]->available_rtr_credits;
	render_int(out, "ulnet_peer_ni_rtr_credits", "Router buffer credits of the peer NI "
		   "available now: how many more of its messages this router may hold to forward "
		   "(negative: they wait).", e, v, n);
	for (int i = 0; i < n; i++)
		v[i] = pn[i]->min_rtr_credits;
	render_int(out, "ulnet_peer_ni_rtr_credits_min", "The fewest router buffer credits of the "
		   "peer NI there have been.", e, v, n);
	render_health(out, "peer_ni", "peer NI", e, n, true);
	render_latency(out, "peer_ni", "peer NI", e, n);
out:
	free(e);
	free(pn);
	free(v);
}

/* --- connections ------------------------------------------------------------------- */

static int conn_cmp(const void *a, const void *b)
{
	const struct ulnet_conn_info *x = *(const struct ulnet_conn_info *const *)a;
	const struct ulnet_conn_info *y = *(const struct ulnet_conn_info *const *)b;
	int c = ulnet_nid_cmp(&x->ni, &y->ni);

	if (!c)
		c = ulnet_nid_cmp(&x->peer, &y->peer);
	if (!c)
		c = (int)x->type - (int)y->type;
	return c;
}

/* One (NI, peer NID, type) group of connections and its sums. */
struct conn_group {
	const struct ulnet_conn_info *first;
	uint64_t n, v[4];            /* tx bytes, rx bytes, tx msgs, rx msgs */
};

static void render_conns(struct ybuf *out, const struct ulnet_conn_info *conns, int nconns, int max)
{
	const struct ulnet_conn_info **ix = calloc((size_t)nconns + 1, sizeof(*ix));
	struct conn_group *g = calloc((size_t)nconns + 1, sizeof(*g));
	int ng = 0, npairs = 0, omitted = 0;

	if (!ix || !g) {
		out->oom = true;
		goto out;
	}
	for (int i = 0; i < nconns; i++)
		ix[i] = &conns[i];
	qsort(ix, (size_t)nconns, sizeof(*ix), conn_cmp);
	/* groups of the first `max` (NI, peer NID) pairs; the pairs past it
	 * are counted */
	for (int i = 0; i < nconns; i++) {
		const struct ulnet_conn_info *c = ix[i];
		bool new_pair = i == 0 || ulnet_nid_cmp(&c->ni, &ix[i - 1]->ni) != 0 ||
				ulnet_nid_cmp(&c->peer, &ix[i - 1]->peer) != 0;

		if (new_pair && ++npairs > max)
			omitted++;
		if (npairs > max)
			continue;
		if (new_pair || c->type != ix[i - 1]->type)
			g[ng++].first = c;
		struct conn_group *cg = &g[ng - 1];

		cg->n++;
		cg->v[0] += c->tx_bytes;
		cg->v[1] += c->rx_bytes;
		cg->v[2] += c->tx_msgs;
		cg->v[3] += c->rx_msgs;
	}
	one_u64(out, "ulnet_connection_peers_omitted", "gauge", "(local NI, peer NID) pairs past the "
		"cap on peers with series of their own (docs/tools.md), left out of the "
		"ulnet_connection families.", (uint64_t)omitted);

	static const struct {
		const char *name, *help;
	} fam[5] = {
		{ "ulnet_connections", "Established connections of the local NI (nid) to the peer "
		  "NID, by type (control, bulk_in, bulk_out, any)." },
		{ "ulnet_connection_sent_bytes", "Bytes written on those connections since each came "
		  "up (a gauge: it falls when one closes)." },
		{ "ulnet_connection_received_bytes", "Bytes read on those connections since each came "
		  "up (a gauge: it falls when one closes)." },
		{ "ulnet_connection_sent_messages", "Socket LND messages written on those connections "
		  "since each came up (a gauge: it falls when one closes)." },
		{ "ulnet_connection_received_messages", "Socket LND messages read on those connections "
		  "since each came up (a gauge: it falls when one closes)." },
	};

	for (int f = 0; f < 5; f++) {
		head(out, fam[f].name, "gauge", fam[f].help);
		for (int i = 0; i < ng; i++) {
			char ni[ULNET_NIDSTR_SIZE], peer[ULNET_NIDSTR_SIZE];
			struct labels l;

			lb_init(&l);
			lb_add(&l, "nid", ulnet_nid_str(&g[i].first->ni, ni));
			lb_add(&l, "peer_nid", ulnet_nid_str(&g[i].first->peer, peer));
			lb_add(&l, "type", ctl_conn_type_str(g[i].first->type));
			put_u64(out, fam[f].name, &l, f == 0 ? g[i].n : g[i].v[f - 1]);
		}
	}
out:
	free(ix);
	free(g);
}

/* --- routing ------------------------------------------------------------------------ */

static void render_routing(struct ybuf *out, const struct ulnet_routing_info *ri)
{
	static const char *const states[4] = {
		[ULNET_ROUTING_DISABLED] = "disabled", [ULNET_ROUTING_ENABLED] = "enabled",
		[ULNET_ROUTING_STOPPING] = "stopping", [ULNET_ROUTING_STARTING] = "starting",
	};
	static const char *const pools[ULNET_RTR_NPOOLS] = { "tiny", "small", "large" };

	head(out, "ulnet_routing_state", "gauge", "The router role (routing show enable): 1 for the "
	     "state it is in.");
	for (int s = 0; s < 4; s++) {
		struct labels l;

		lb_init(&l);
		lb_add(&l, "state", states[s]);
		put_u64(out, "ulnet_routing_state", &l, ri->state == (enum ulnet_routing_state)s);
	}
	/* the pools exist once routing was ever enabled (routing show prints
	 * nothing before) */
	static const struct {
		const char *name, *help;
	} fam[4] = {
		{ "ulnet_router_buffers", "Buffers the router pool holds (routing show nbuffers)." },
		{ "ulnet_router_buffer_credits", "Buffers of the router pool not in use (negative: "
		  "messages wait for one)." },
		{ "ulnet_router_buffer_credits_min", "The fewest buffers of the router pool there "
		  "have been free." },
		{ "ulnet_router_buffer_pages", "Pages (4 KiB) of each buffer of the router pool." },
	};

	for (int f = 0; f < 4 && ri->pools; f++) {
		head(out, fam[f].name, "gauge", fam[f].help);
		for (int p = 0; p < ULNET_RTR_NPOOLS; p++) {
			const struct ulnet_rtr_pool_info *pi = &ri->pool[p];
			int v = f == 0 ? pi->nbuffers : f == 1 ? pi->credits :
				f == 2 ? pi->mincredits : pi->npages;
			struct labels l;

			lb_init(&l);
			lb_add(&l, "pool", pools[p]);
			put_i64(out, fam[f].name, &l, v);
		}
	}
}

void metrics_render(struct ybuf *out, const struct metrics_snap *s, int max_peer_nis)
{
	one_u64(out, "ulnet_lnet_up", "gauge", "1 while LNet is configured (lnet configure), 0 while "
		"it is down (lnet unconfigure): then no other ulnet_ family is given.",
		s->configured);
	if (!s->configured)
		return;
	render_counters(out, &s->counters);
	render_nis(out, s->nis, s->nnis);
	render_peer_nis(out, s->peers, s->npeers, max_peer_nis < 0 ? 0 : max_peer_nis);
	render_conns(out, s->conns, s->nconns, max_peer_nis < 0 ? 0 : max_peer_nis);
	if (s->have_routing)
		render_routing(out, &s->routing);
}

int metrics_scrape(struct ctl_ctx *ctx, int max_peer_nis, struct ybuf *out)
{
	struct metrics_snap s;
	int rc = metrics_snap_take(ctx, &s);

	if (rc < 0)
		return rc;
	metrics_render(out, &s, max_peer_nis);
	metrics_snap_free(&s);
	return out->oom ? -ENOMEM : 0;
}
