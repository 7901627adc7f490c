/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - the Prometheus exposition of ulnetd --metrics
 * (tools/common/metrics.c) and the judging of its HTTP requests
 * (metrics_http.c), in-process:
 *  - rendered from fixed values: names, types, labels and values of every
 *    kind of family; the cap on peer NIDs with series of their own and the
 *    gauges counting what it left out; nothing but ulnet_lnet_up while LNet
 *    is down; no router pool families before routing was ever enabled;
 *  - every output obeys the text format's rules as this test reads them
 *    (HELP and TYPE before each family, every sample of a family together,
 *    counters and only counters named _total, well-formed labels and
 *    values, a histogram's buckets cumulative up to +Inf and its _count
 *    the +Inf bucket's); promtool's own check runs in test_metrics_prom.sh;
 *  - a live node (ctl_test fixture) PUTs to another over TCP: its send
 *    counters and bytes by type, its latency histograms, its peer NI's
 *    and the connection families move, and the receiver's receive
 *    counters and bytes;
 *  - requests judged: GET and HEAD of /metrics, other paths 404, other
 *    methods 405, malformed request lines and headers 400.
 * NIs are on 127.0.41.x, a subnet no other test uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_test.h"
#include "metrics.h"
#include "metrics_http.h"

/* --- reading an exposition --------------------------------------------------- */

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Fail unless `text` follows the text format as metrics.c must write it. */
static void check_exposition(const char *text)
{
	char fam[128] = "", help[128] = "", type[16] = "";
	/* every family seen, to catch one split in two */
	char *seen = calloc(1, strlen(text) + 2);
	size_t seen_len = 0;
	int lineno = 0;

	assert_non_null(seen);
	seen[0] = '\n';
	seen_len = 1;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		char line[1024];

		lineno++;
		assert_non_null(nl);    /* the last line ends too */
		assert_true((size_t)(nl - p) < sizeof(line));
		memcpy(line, p, (size_t)(nl - p));
		line[nl - p] = '\0';
		p = nl + 1;
		if (strncmp(line, "# HELP ", 7) == 0) {
			if (sscanf(line + 7, "%127s", help) != 1 || strlen(line + 7) <= strlen(help) + 1)
				fail_msg("line %d: HELP without a text: %s", lineno, line);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char name[128], key[132];

			if (sscanf(line + 7, "%127s %15s", name, type) != 2)
				fail_msg("line %d: bad TYPE: %s", lineno, line);
			if (strcmp(name, help) != 0)
				fail_msg("line %d: TYPE of %s not after its HELP", lineno, name);
			if (strcmp(type, "counter") != 0 && strcmp(type, "gauge") != 0 &&
			    strcmp(type, "histogram") != 0)
				fail_msg("line %d: type %s", lineno, type);
			if (strcmp(type, "counter") == 0 && !ends_with(name, strlen(name), "_total"))
				fail_msg("line %d: counter %s does not end in _total", lineno, name);
			if (strcmp(type, "counter") != 0 && ends_with(name, strlen(name), "_total"))
				fail_msg("line %d: %s %s ends in _total", lineno, type, name);
			if (strcmp(type, "histogram") == 0 && !ends_with(name, strlen(name), "_seconds"))
				fail_msg("line %d: histogram %s not in seconds", lineno, name);
			if (strncmp(name, "ulnet_", 6) != 0)
				fail_msg("line %d: %s has no ulnet_ prefix", lineno, name);
			snprintf(key, sizeof(key), "\n%s\n", name);
			if (strstr(seen, key))
				fail_msg("line %d: family %s given twice", lineno, name);
			memcpy(seen + seen_len, name, strlen(name));
			seen_len += strlen(name);
			seen[seen_len++] = '\n';
			snprintf(fam, sizeof(fam), "%s", name);
			continue;
		}
		if (line[0] == '#' || line[0] == '\0')
			fail_msg("line %d: unexpected: '%s'", lineno, line);
		/* NAME[{LABELS}] VALUE */
		size_t n = 0;

		while (name_char(line[n], n == 0))
			n++;
		/* a histogram's samples: NAME_bucket (with an le label), NAME_sum,
		 * NAME_count */
		bool hist = strcmp(type, "histogram") == 0;
		size_t fl = strlen(fam);
		const char *sfx = n > fl && strncmp(line, fam, fl) == 0 ? line + fl : "";

		if (hist && n - fl == 7 && strncmp(sfx, "_bucket", 7) == 0) {
			if (!strstr(line, ",le=\"") && !strstr(line, "{le=\""))
				fail_msg("line %d: bucket without le: %s", lineno, line);
		} else if (hist && ((n - fl == 4 && strncmp(sfx, "_sum", 4) == 0) ||
				    (n - fl == 6 && strncmp(sfx, "_count", 6) == 0))) {
			/* its sum and count */
		} else if (hist || n != fl || strncmp(line, fam, n) != 0) {
			fail_msg("line %d: sample of another family than %s: %s", lineno, fam, line);
		}
		const char *q = line + n;

		if (*q == '{') {
			q++;
			while (*q != '}') {
				size_t k = 0;

				while (name_char(q[k], k == 0))
					k++;
				if (k == 0 || q[k] != '=' || q[k + 1] != '"')
					fail_msg("line %d: bad label: %s", lineno, line);
				q += k + 2;
				while (*q && *q != '"')
					q += *q == '\\' ? 2 : 1;
				if (*q != '"')
					fail_msg("line %d: unterminated label value: %s", lineno, line);
				q++;
				if (*q == ',')
					q++;
				else if (*q != '}')
					fail_msg("line %d: bad labels: %s", lineno, line);
			}
			q++;
		}
		if (*q != ' ')
			fail_msg("line %d: no space before the value: %s", lineno, line);
		char *end;
		double v = strtod(q + 1, &end);

		if (end == q + 1 || *end || !isfinite(v))
			fail_msg("line %d: bad value: %s", lineno, line);
		if ((strcmp(type, "counter") == 0 || hist) && v < 0)
			fail_msg("line %d: negative counter: %s", lineno, line);
	}
	free(seen);
}

/* The value of the sample `series` (NAME or NAME{LABELS} exactly as
 * written), or NAN when there is none. */
static double value_of(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

static void expect(const char *text, const char *series, double want)
{
	double got = value_of(text, series);

	if (isnan(got) || fabs(got - want) > 1e-12 * (fabs(want) + 1))
		fail_msg("%s: %g, want %g in:\n%s", series, got, want, text);
}

static void absent(const char *text, const char *what)
{
	if (strstr(text, what))
		fail_msg("'%s' should not be in:\n%s", what, text);
}

/* Fail unless every series of the histogram `fam` has its buckets in
 * order of le, cumulative (never falling), the last one +Inf, a _count
 * equal to that last bucket and a _sum. Its labels are written before le
 * (as metrics.c does). Returns the number of series. */
static int check_histogram(const char *text, const char *fam)
{
	char pfx[128], key[512] = "", series[600];
	double last_le = -1, last_v = -1;
	int nseries = 0;

	snprintf(pfx, sizeof(pfx), "%s_bucket{", fam);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, pfx, strlen(pfx)) != 0)
			continue;
		const char *lb = p + strlen(pfx), *le = strstr(lb, "le=\""), *nl = strchr(p, '\n');

		assert_non_null(le);
		assert_true(le < nl);
		size_t klen = (size_t)(le - lb);

		assert_true(klen < sizeof(key));
		if (strncmp(key, lb, klen) != 0 || key[klen] != '\0') {
			/* a new series: the last one ended with +Inf */
			if (nseries && !isinf(last_le))
				fail_msg("%s{%s}: no +Inf bucket", fam, key);
			memcpy(key, lb, klen);
			key[klen] = '\0';
			last_le = -1;
			last_v = -1;
			nseries++;
		}
		double lev = strncmp(le + 4, "+Inf\"", 5) == 0 ? INFINITY : strtod(le + 4, NULL);
		const char *sp = strchr(le, ' ');
		double v = strtod(sp + 1, NULL);

		if (!(lev > last_le))
			fail_msg("%s{%s}: le %g after %g", fam, key, lev, last_le);
		if (v < last_v)
			fail_msg("%s{%s}: bucket le=%g holds %g, less than the one before (%g)", fam,
				 key, lev, v, last_v);
		last_le = lev;
		last_v = v;
		if (isinf(lev)) {
			/* key ends in ',' when there are labels before le */
			size_t kl = strlen(key);

			snprintf(series, sizeof(series), "%s_count{%.*s}", fam,
				 (int)(kl && key[kl - 1] == ',' ? kl - 1 : kl), key);
			if (value_of(text, series) != v)
				fail_msg("%s: %g, want the +Inf bucket's %g", series,
					 value_of(text, series), v);
			snprintf(series, sizeof(series), "%s_sum{%.*s}", fam,
				 (int)(kl && key[kl - 1] == ',' ? kl - 1 : kl), key);
			if (!(value_of(text, series) >= 0))
				fail_msg("%s: missing or negative", series);
		}
	}
	if (nseries && !isinf(last_le))
		fail_msg("%s{%s}: no +Inf bucket", fam, key);
	return nseries;
}

/* --- rendered from fixed values ------------------------------------------------ */

static ulnet_nid_t nid(const char *s)
{
	ulnet_nid_t n;

	assert_int_equal(ulnet_nid_parse(s, &n, NULL), 0);
	return n;
}

static void test_render_fixed(void **state)
{
	(void)state;
	struct metrics_snap s;
	struct ulnet_ni_info nis[2];
	struct ulnet_peer_info peers[2];
	struct ulnet_conn_info conns[5];
	struct ybuf out;

	memset(&s, 0, sizeof(s));
	memset(nis, 0, sizeof(nis));
	memset(peers, 0, sizeof(peers));
	memset(conns, 0, sizeof(conns));
	s.configured = true;
	s.counters.msgs_alloc = 2;
	s.counters.send_count = 5;
	s.counters.send_length = 1000;
	s.counters.route_count = 3;
	s.counters.route_length = 4096;
	s.counters.drop_length = 17;
	nis[0].nid = nid("0@lo");
	nis[0].up = true;
	nis[1].nid = nid("10.0.0.1@tcp");
	nis[1].up = true;
	nis[1].sent.n[ULNET_MSG_PUT] = 7;
	nis[1].received.n[ULNET_MSG_ACK] = 6;
	nis[1].dropped.n[ULNET_MSG_HELLO] = 1;
	nis[1].sent_bytes.n[ULNET_MSG_PUT] = 7 * 4096;
	nis[1].received_bytes.n[ULNET_MSG_REPLY] = 123;
	nis[1].dropped_bytes.n[ULNET_MSG_PUT] = 17;
	nis[1].credits_avail = -2;
	nis[1].credits_min = -5;
	nis[1].credits_max = 256;
	nis[1].health.health_value = 900;
	nis[1].health.in_recovery = true;
	nis[1].health.timeouts = 4;
	nis[1].health.ping_count = 3;
	/* 1 ms and 2 ms: in the buckets of at most 2^20 and 2^21 ns */
	nis[1].put_ack = (struct ulnet_latency){ .samples = 2, .min_nsec = 1000000,
						 .max_nsec = 2000000, .avg_nsec = 1500000,
						 .sum_nsec = 3000000 };
	nis[1].put_ack.bucket[20 - ULNET_LAT_BUCKET_SHIFT] = 1;
	nis[1].put_ack.bucket[21 - ULNET_LAT_BUCKET_SHIFT] = 1;
	/* one of 100 s (+Inf) */
	peers[0].nis[0].get_rtt = (struct ulnet_latency){ .samples = 1, .sum_nsec = 100000000000 };
	peers[0].nis[0].get_rtt.bucket[ULNET_LAT_BUCKETS - 1] = 1;
	s.nis = nis;
	s.nnis = 2;
	/* three peer NIs, two of them on one peer; the cap keeps two */
	peers[0].primary = nid("10.0.0.2@tcp");
	peers[0].nnis = 2;
	peers[0].nis[0].nid = nid("10.0.0.2@tcp");
	peers[0].nis[0].state = 1;
	peers[0].nis[0].sent.n[ULNET_MSG_GET] = 9;
	peers[0].nis[0].sent_bytes.n[ULNET_MSG_GET] = 9 * 1024;
	peers[0].nis[0].received_bytes.n[ULNET_MSG_PUT] = 5;
	peers[0].nis[0].available_tx_credits = 7;
	peers[0].nis[0].min_tx_credits = -1;
	peers[0].nis[0].max_tx_credits = 8;
	peers[0].nis[0].available_rtr_credits = 5;
	peers[0].nis[0].min_rtr_credits = 4;
	peers[0].nis[0].tx_q_num_of_buf = 4096;
	peers[0].nis[0].health.health_value = 1000;
	peers[0].nis[0].health.network_timeout = 2;
	peers[0].nis[1].nid = nid("10.0.1.2@tcp1");
	peers[0].nis[1].state = -1;   /* not tracked: no ulnet_peer_ni_up */
	peers[1].primary = nid("10.0.0.3@tcp");
	peers[1].nnis = 1;
	peers[1].nis[0].nid = nid("10.0.0.3@tcp");
	s.peers = peers;
	s.npeers = 2;
	/* connections to three peer NIDs; the cap (2) keeps the first two */
	for (int i = 0; i < 5; i++) {
		conns[i].ni = nid("10.0.0.1@tcp");
		conns[i].peer = nid(i < 3 ? "10.0.0.2@tcp" : i == 3 ? "10.0.0.3@tcp" : "10.0.0.4@tcp");
		conns[i].tx_bytes = 100u * (i + 1u);
		conns[i].rx_bytes = 10u * (i + 1u);
		conns[i].tx_msgs = (uint64_t)i + 1u;
	}
	conns[0].type = ULNET_CONN_CONTROL;
	conns[1].type = ULNET_CONN_BULK_IN;
	conns[2].type = ULNET_CONN_CONTROL;
	conns[3].type = ULNET_CONN_CONTROL;
	conns[4].type = ULNET_CONN_BULK_OUT;
	s.conns = conns;
	s.nconns = 5;
	s.have_routing = true;
	s.routing.state = ULNET_ROUTING_ENABLED;
	s.routing.pools = true;
	s.routing.pool[ULNET_RTR_POOL_SMALL] = (struct ulnet_rtr_pool_info){ .npages = 1,
		.nbuffers = 16384, .credits = -3, .mincredits = -10 };

	ybuf_init(&out);
	metrics_render(&out, &s, 2);
	assert_false(out.oom);
	const char *t = ybuf_str(&out);

	check_exposition(t);
	/* global statistics, as stats show names them */
	ctl_has(&out, "# TYPE ulnet_send_total counter\n", "render");
	ctl_has(&out, "# TYPE ulnet_msgs_alloc gauge\n", "render");
	expect(t, "ulnet_lnet_up", 1);
	expect(t, "ulnet_msgs_alloc", 2);
	expect(t, "ulnet_send_total", 5);
	expect(t, "ulnet_send_bytes_total", 1000);
	expect(t, "ulnet_route_total", 3);
	expect(t, "ulnet_route_bytes_total", 4096);
	expect(t, "ulnet_drop_bytes_total", 17);
	/* NIs */
	ctl_has(&out, "# TYPE ulnet_ni_send_total counter\n", "render");
	expect(t, "ulnet_ni_up{nid=\"0@lo\"}", 1);
	expect(t, "ulnet_ni_send_total{nid=\"10.0.0.1@tcp\",type=\"put\"}", 7);
	expect(t, "ulnet_ni_send_total{nid=\"10.0.0.1@tcp\",type=\"get\"}", 0);
	expect(t, "ulnet_ni_recv_total{nid=\"10.0.0.1@tcp\",type=\"ack\"}", 6);
	expect(t, "ulnet_ni_drop_total{nid=\"10.0.0.1@tcp\",type=\"hello\"}", 1);
	expect(t, "ulnet_ni_drop_total{nid=\"0@lo\",type=\"reply\"}", 0);
	/* and their bytes, by the same types */
	ctl_has(&out, "# TYPE ulnet_ni_send_bytes_total counter\n", "render");
	expect(t, "ulnet_ni_send_bytes_total{nid=\"10.0.0.1@tcp\",type=\"put\"}", 7 * 4096);
	expect(t, "ulnet_ni_send_bytes_total{nid=\"10.0.0.1@tcp\",type=\"ack\"}", 0);
	expect(t, "ulnet_ni_recv_bytes_total{nid=\"10.0.0.1@tcp\",type=\"reply\"}", 123);
	expect(t, "ulnet_ni_drop_bytes_total{nid=\"10.0.0.1@tcp\",type=\"put\"}", 17);
	expect(t, "ulnet_ni_drop_bytes_total{nid=\"0@lo\",type=\"hello\"}", 0);
	expect(t, "ulnet_ni_tx_credits{nid=\"10.0.0.1@tcp\"}", -2);
	expect(t, "ulnet_ni_tx_credits_min{nid=\"10.0.0.1@tcp\"}", -5);
	expect(t, "ulnet_ni_tx_credits_max{nid=\"10.0.0.1@tcp\"}", 256);
	expect(t, "ulnet_ni_health_value{nid=\"10.0.0.1@tcp\"}", 900);
	expect(t, "ulnet_ni_in_recovery{nid=\"10.0.0.1@tcp\"}", 1);
	expect(t, "ulnet_ni_recovery_pings{nid=\"10.0.0.1@tcp\"}", 3);
	expect(t, "ulnet_ni_health_errors_total{nid=\"10.0.0.1@tcp\",error=\"timeout\"}", 4);
	expect(t, "ulnet_ni_health_errors_total{nid=\"10.0.0.1@tcp\",error=\"interrupt\"}", 0);
	/* latency: a histogram per NI and op, le in seconds, cumulative */
	ctl_has(&out, "# TYPE ulnet_ni_latency_seconds histogram\n", "render");
	absent(t, "ulnet_ni_latency_samples_total");
	absent(t, "_avg_seconds");
	assert_int_equal(check_histogram(t, "ulnet_ni_latency_seconds"), 2 * 3);
#define NI_PA "ulnet_ni_latency_seconds_bucket{nid=\"10.0.0.1@tcp\",op=\"put_ack\","
	expect(t, NI_PA "le=\"0.000001024\"}", 0);
	expect(t, NI_PA "le=\"0.000524288\"}", 0);
	expect(t, NI_PA "le=\"0.001048576\"}", 1);
	expect(t, NI_PA "le=\"0.002097152\"}", 2);
	expect(t, NI_PA "le=\"68.719476736\"}", 2);
	expect(t, NI_PA "le=\"+Inf\"}", 2);
#undef NI_PA
	expect(t, "ulnet_ni_latency_seconds_sum{nid=\"10.0.0.1@tcp\",op=\"put_ack\"}", 0.003);
	expect(t, "ulnet_ni_latency_seconds_count{nid=\"10.0.0.1@tcp\",op=\"put_ack\"}", 2);
	expect(t, "ulnet_ni_latency_seconds_count{nid=\"10.0.0.1@tcp\",op=\"get_rtt\"}", 0);
	expect(t, "ulnet_ni_latency_seconds_sum{nid=\"0@lo\",op=\"get_rtt\"}", 0);
	/* and per peer NI: a sample past the last bound is only in +Inf */
	ctl_has(&out, "# TYPE ulnet_peer_ni_latency_seconds histogram\n", "render");
	assert_int_equal(check_histogram(t, "ulnet_peer_ni_latency_seconds"), 2 * 3);
	expect(t, "ulnet_peer_ni_latency_seconds_bucket{peer_nid=\"10.0.0.2@tcp\",op=\"get_rtt\",le=\"68.719476736\"}", 0);
	expect(t, "ulnet_peer_ni_latency_seconds_bucket{peer_nid=\"10.0.0.2@tcp\",op=\"get_rtt\",le=\"+Inf\"}", 1);
	expect(t, "ulnet_peer_ni_latency_seconds_sum{peer_nid=\"10.0.0.2@tcp\",op=\"get_rtt\"}", 100);
	absent(t, "ulnet_peer_ni_latency_seconds_count{peer_nid=\"10.0.0.3@tcp\"");
	/* peer NIs: two of three, the third counted */
	expect(t, "ulnet_peers", 2);
	expect(t, "ulnet_peer_nis", 3);
	expect(t, "ulnet_peer_nis_omitted", 1);
	expect(t, "ulnet_peer_ni_up{peer_nid=\"10.0.0.2@tcp\"}", 1);
	absent(t, "ulnet_peer_ni_up{peer_nid=\"10.0.1.2@tcp1\"}");
	expect(t, "ulnet_peer_ni_send_total{peer_nid=\"10.0.0.2@tcp\",type=\"get\"}", 9);
	expect(t, "ulnet_peer_ni_send_total{peer_nid=\"10.0.1.2@tcp1\",type=\"get\"}", 0);
	expect(t, "ulnet_peer_ni_send_bytes_total{peer_nid=\"10.0.0.2@tcp\",type=\"get\"}", 9 * 1024);
	expect(t, "ulnet_peer_ni_recv_bytes_total{peer_nid=\"10.0.0.2@tcp\",type=\"put\"}", 5);
	expect(t, "ulnet_peer_ni_drop_bytes_total{peer_nid=\"10.0.1.2@tcp1\",type=\"put\"}", 0);
	absent(t, "ulnet_peer_ni_send_bytes_total{peer_nid=\"10.0.0.3@tcp\"");
	absent(t, "peer_nid=\"10.0.0.3@tcp\",type=\"get\"");
	absent(t, "ulnet_peer_ni_health_value{peer_nid=\"10.0.0.3@tcp\"}");
	expect(t, "ulnet_peer_ni_tx_credits{peer_nid=\"10.0.0.2@tcp\"}", 7);
	expect(t, "ulnet_peer_ni_tx_credits_min{peer_nid=\"10.0.0.2@tcp\"}", -1);
	expect(t, "ulnet_peer_ni_tx_credits_max{peer_nid=\"10.0.0.2@tcp\"}", 8);
	expect(t, "ulnet_peer_ni_rtr_credits{peer_nid=\"10.0.0.2@tcp\"}", 5);
	expect(t, "ulnet_peer_ni_rtr_credits_min{peer_nid=\"10.0.0.2@tcp\"}", 4);
	expect(t, "ulnet_peer_ni_tx_queued_bytes{peer_nid=\"10.0.0.2@tcp\"}", 4096);
	expect(t, "ulnet_peer_ni_health_value{peer_nid=\"10.0.0.2@tcp\"}", 1000);
	expect(t, "ulnet_peer_ni_health_errors_total{peer_nid=\"10.0.0.2@tcp\",error=\"network_timeout\"}", 2);
	/* the NI's list of errors has no network_timeout, the peer NI's no
	 * interrupt */
	absent(t, "ulnet_ni_health_errors_total{nid=\"10.0.0.1@tcp\",error=\"network_timeout\"}");
	absent(t, "peer_nid=\"10.0.0.2@tcp\",error=\"interrupt\"");
	/* connections: by NI, peer NID and type, summed; the third peer NID
	 * past the cap */
	expect(t, "ulnet_connections{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.2@tcp\",type=\"control\"}", 2);
	expect(t, "ulnet_connections{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.2@tcp\",type=\"bulk_in\"}", 1);
	expect(t, "ulnet_connection_sent_bytes{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.2@tcp\",type=\"control\"}", 400);
	expect(t, "ulnet_connection_received_bytes{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.2@tcp\",type=\"control\"}", 40);
	expect(t, "ulnet_connection_sent_messages{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.2@tcp\",type=\"bulk_in\"}", 2);
	expect(t, "ulnet_connections{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.3@tcp\",type=\"control\"}", 1);
	expect(t, "ulnet_connection_peers_omitted", 1);
	absent(t, "peer_nid=\"10.0.0.4@tcp\"");
	/* routing */
	expect(t, "ulnet_routing_state{state=\"enabled\"}", 1);
	expect(t, "ulnet_routing_state{state=\"disabled\"}", 0);
	expect(t, "ulnet_router_buffers{pool=\"small\"}", 16384);
	expect(t, "ulnet_router_buffer_credits{pool=\"small\"}", -3);
	expect(t, "ulnet_router_buffer_credits_min{pool=\"small\"}", -10);
	expect(t, "ulnet_router_buffer_pages{pool=\"small\"}", 1);

	/* with room for every peer NID nothing is left out */
	ybuf_reset(&out);
	metrics_render(&out, &s, 256);
	t = ybuf_str(&out);
	check_exposition(t);
	expect(t, "ulnet_peer_nis_omitted", 0);
	expect(t, "ulnet_connection_peers_omitted", 0);
	expect(t, "ulnet_peer_ni_health_value{peer_nid=\"10.0.0.3@tcp\"}", 0);
	expect(t, "ulnet_connections{nid=\"10.0.0.1@tcp\",peer_nid=\"10.0.0.4@tcp\",type=\"bulk_out\"}", 1);

	/* routing never enabled: its state, but no pools (routing show prints
	 * nothing) */
	s.routing.pools = false;
	s.routing.state = ULNET_ROUTING_DISABLED;
	ybuf_reset(&out);
	metrics_render(&out, &s, 256);
	t = ybuf_str(&out);
	check_exposition(t);
	expect(t, "ulnet_routing_state{state=\"disabled\"}", 1);
	absent(t, "ulnet_router_buffers");

	/* no NI, peer or connection: the families are there, empty, and the
	 * output is still well-formed */
	s.nnis = s.npeers = s.nconns = 0;
	ybuf_reset(&out);
	metrics_render(&out, &s, 256);
	check_exposition(ybuf_str(&out));
	expect(ybuf_str(&out), "ulnet_peers", 0);

	/* LNet down: that alone */
	memset(&s, 0, sizeof(s));
	ybuf_reset(&out);
	metrics_render(&out, &s, 256);
	check_exposition(ybuf_str(&out));
	assert_string_equal(ybuf_str(&out),
			    "# HELP ulnet_lnet_up 1 while LNet is configured (lnet configure), 0 "
			    "while it is down (lnet unconfigure): then no other ulnet_ family is "
			    "given.\n# TYPE ulnet_lnet_up gauge\nulnet_lnet_up 0\n");
	ybuf_free(&out);
}

/* --- a live node ------------------------------------------------------------------- */

/* An acceptor port of this run (high, from the pid). */
static unsigned port(void)
{
	return 21000u + ((unsigned)getpid() * 13u + 5u) % 30000u;
}

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int want;
	int status;
	bool done;
};

static void handler(const struct ulnet_event *ev)
{
	struct waiter *w = ev->md_user_ptr;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if ((int)ev->type == w->want || ev->status != 0) {
		w->status = ev->status;
		w->done = true;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
}

static int wait_for(struct waiter *w, int secs)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
			break;
	int rc = w->done ? w->status : -ETIMEDOUT;

	w->done = false;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

static char *scrape(struct ctl_fix *f)
{
	struct ybuf out;

	ybuf_init(&out);
	assert_int_equal(metrics_scrape(&f->ctx, METRICS_MAX_PEER_NIS, &out), 0);
	check_exposition(ybuf_str(&out));
	return out.s;
}

/* A scrape once `series` is at least `min` (a send completes on its own
 * time, after the peer may have seen the message): within 10 s, or fail. */
static char *scrape_until(struct ctl_fix *f, const char *series, double min)
{
	for (int i = 0;; i++) {
		char *t = scrape(f);

		if (value_of(t, series) >= min)
			return t;
		if (i == 500)
			fail_msg("%s stayed at %g, below %g", series, value_of(t, series), min);
		free(t);
		usleep(20000);
	}
}

static void test_live_put(void **state)
{
	(void)state;
	struct ctl_fix a, b;
	char line[128];

	/* A listens; B dials A's port and takes no connection itself.
	 * Discovery is off, so that each PUT is all the traffic there is (a
	 * discovery's push, and its ACK, would come and go when they will) */
	snprintf(line, sizeof(line), "net add --nid 127.0.41.3@tcp --accept all --accept-port %u",
		 port());
	const char *la[] = { "set discovery 0", line, NULL };

	assert_int_equal(ctl_fix_init(&a, NULL, la), 0);
	snprintf(line, sizeof(line), "net add --nid 127.0.41.4@tcp --accept none --accept-port %u",
		 port());
	const char *lb[] = { "set discovery 0", line, NULL };

	assert_int_equal(ctl_fix_init(&b, NULL, lb), 0);

	char *before = scrape(&b);

	expect(before, "ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 0);
	expect(before, "ulnet_send_total", 0);
	expect(before, "ulnet_peers", 0);
	absent(before, "peer_nid=\"127.0.41.3@tcp\"");

	/* B PUTs 4 KiB to A's portal 10, with an ACK, twice */
	static char dst[4096], src[4096];
	ulnet_handle_t me, md, smd;
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md m = { .start = dst, .length = sizeof(dst), .threshold = ULNET_MD_THRESH_INF,
			      .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE };
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, ULNET_EVENT_ACK, 0,
			    false };
	struct ulnet_md sm = { .start = src, .length = sizeof(src), .threshold = 2, .user_ptr = &w,
			       .handler = handler };
	ulnet_process_id_t target = { .nid = nid("127.0.41.3@tcp"), .pid = ULNET_PID_LUSTRE };

	assert_int_equal(ulnet_me_attach(a.ctx.ln, 10, any, 0x77, 0, ULNET_RETAIN, ULNET_INS_AFTER,
					 &me), 0);
	assert_int_equal(ulnet_md_attach(a.ctx.ln, me, &m, ULNET_RETAIN, &md), 0);
	assert_int_equal(ulnet_md_bind(b.ctx.ln, &sm, ULNET_UNLINK, &smd), 0);
	assert_int_equal(ulnet_put(b.ctx.ln, NULL, smd, ULNET_ACK_REQ, target, 10, 0x77, 0, 0), 0);
	assert_int_equal(wait_for(&w, 30), 0);

	/* the ACK's event may come before its receive is counted, and before
	 * the PUT's send completes: wait for both counts */
	free(scrape_until(&b, "ulnet_ni_recv_total{nid=\"127.0.41.4@tcp\",type=\"ack\"}", 1));
	char *mid = scrape_until(&b, "ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 1);

	expect(mid, "ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 1);
	expect(mid, "ulnet_ni_recv_total{nid=\"127.0.41.4@tcp\",type=\"ack\"}", 1);
	expect(mid, "ulnet_send_total", 1);
	expect(mid, "ulnet_send_bytes_total", 4096);
	assert_int_equal(ulnet_md_bind(b.ctx.ln, &sm, ULNET_UNLINK, &smd), 0);
	assert_int_equal(ulnet_put(b.ctx.ln, NULL, smd, ULNET_ACK_REQ, target, 10, 0x77, 0, 0), 0);
	assert_int_equal(wait_for(&w, 30), 0);

	free(scrape_until(&b, "ulnet_ni_recv_total{nid=\"127.0.41.4@tcp\",type=\"ack\"}", 2));
	char *after = scrape_until(&b, "ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 2);

	/* the sender: one more PUT sent and ACK received, on the NI and the
	 * peer NI */
#define MOVED(series, by) expect(after, series, value_of(mid, series) + (by))
	MOVED("ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 1);
	MOVED("ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"get\"}", 0);
	MOVED("ulnet_ni_recv_total{nid=\"127.0.41.4@tcp\",type=\"ack\"}", 1);
	MOVED("ulnet_peer_ni_send_total{peer_nid=\"127.0.41.3@tcp\",type=\"put\"}", 1);
	MOVED("ulnet_peer_ni_recv_total{peer_nid=\"127.0.41.3@tcp\",type=\"ack\"}", 1);
	MOVED("ulnet_send_total", 1);
	MOVED("ulnet_send_bytes_total", 4096);
	/* the PUT's payload by type on the NI and the peer NI; the ACK
	 * brought none */
	MOVED("ulnet_ni_send_bytes_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 4096);
	MOVED("ulnet_ni_send_bytes_total{nid=\"127.0.41.4@tcp\",type=\"get\"}", 0);
	MOVED("ulnet_ni_recv_bytes_total{nid=\"127.0.41.4@tcp\",type=\"ack\"}", 0);
	MOVED("ulnet_peer_ni_send_bytes_total{peer_nid=\"127.0.41.3@tcp\",type=\"put\"}", 4096);
	MOVED("ulnet_ni_latency_seconds_count{nid=\"127.0.41.4@tcp\",op=\"put_ack\"}", 1);
	MOVED("ulnet_peer_ni_latency_seconds_count{peer_nid=\"127.0.41.3@tcp\",op=\"put_ack\"}", 1);
#undef MOVED
	/* the latency histograms: cumulative buckets, _count the +Inf one,
	 * a sum that took the PUT->ACK times */
	assert_true(check_histogram(after, "ulnet_ni_latency_seconds") >= 2 * 3);
	assert_int_equal(check_histogram(after, "ulnet_peer_ni_latency_seconds"), 3);
	assert_true(value_of(after, "ulnet_ni_latency_seconds_sum{nid=\"127.0.41.4@tcp\",op=\"put_ack\"}") > 0);
	expect(after, "ulnet_ni_latency_seconds_bucket{nid=\"127.0.41.4@tcp\",op=\"put_ack\",le=\"+Inf\"}",
	       value_of(after, "ulnet_ni_latency_seconds_count{nid=\"127.0.41.4@tcp\",op=\"put_ack\"}"));
	assert_true(value_of(after, "ulnet_ni_latency_seconds_count{nid=\"127.0.41.4@tcp\",op=\"put_ack\"}") >= 2);
	expect(after, "ulnet_peers", 1);
	expect(after, "ulnet_peer_ni_health_value{peer_nid=\"127.0.41.3@tcp\"}", 1000);
	expect(after, "ulnet_peer_ni_tx_credits_max{peer_nid=\"127.0.41.3@tcp\"}",
	       value_of(after, "ulnet_peer_ni_tx_credits{peer_nid=\"127.0.41.3@tcp\"}"));
	/* the connection it dialled: a CONTROL one at least, which carried
	 * the PUT */
	assert_true(value_of(after, "ulnet_connections{nid=\"127.0.41.4@tcp\",peer_nid=\"127.0.41.3@tcp\",type=\"control\"}") >= 1);
	assert_true(value_of(after, "ulnet_connection_sent_bytes{nid=\"127.0.41.4@tcp\",peer_nid=\"127.0.41.3@tcp\",type=\"control\"}") >= 4096);

	/* the receiver */
	/* the receiver: its ACKs count as the PUTs they answer, as the
	 * kernel's sent_stats (once their sends complete) */
	char *ra = scrape_until(&a, "ulnet_ni_send_total{nid=\"127.0.41.3@tcp\",type=\"put\"}", 2);

	expect(ra, "ulnet_ni_send_total{nid=\"127.0.41.3@tcp\",type=\"put\"}", 2);
	expect(ra, "ulnet_ni_send_total{nid=\"127.0.41.3@tcp\",type=\"ack\"}", 0);
	expect(ra, "ulnet_ni_recv_total{nid=\"127.0.41.3@tcp\",type=\"put\"}", 2);
	expect(ra, "ulnet_recv_bytes_total", 2 * 4096);
	expect(ra, "ulnet_ni_recv_bytes_total{nid=\"127.0.41.3@tcp\",type=\"put\"}", 2 * 4096);
	expect(ra, "ulnet_peer_ni_recv_bytes_total{peer_nid=\"127.0.41.4@tcp\",type=\"put\"}", 2 * 4096);
	expect(ra, "ulnet_ni_send_bytes_total{nid=\"127.0.41.3@tcp\",type=\"put\"}", 0);

	/* stats reset sets the counters back, as Prometheus expects of a
	 * counter reset */
	ctl_run_expect(&b.ctx, &b.rp, "stats reset", 0, NULL);
	char *reset = scrape(&b);

	expect(reset, "ulnet_ni_send_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 0);
	expect(reset, "ulnet_ni_send_bytes_total{nid=\"127.0.41.4@tcp\",type=\"put\"}", 0);
	expect(reset, "ulnet_ni_latency_seconds_count{nid=\"127.0.41.4@tcp\",op=\"put_ack\"}", 0);
	expect(reset, "ulnet_send_total", 0);

	/* LNet down: ulnet_lnet_up 0 and nothing else */
	ctl_run_expect(&b.ctx, &b.rp, "lnet unconfigure", 0, NULL);
	char *down = scrape(&b);

	expect(down, "ulnet_lnet_up", 0);
	absent(down, "ulnet_send_total");
	free(before);
	free(mid);
	free(after);
	free(ra);
	free(reset);
	free(down);
	ctl_fix_fini(&b);
	ctl_fix_fini(&a);
}

/* --- judging requests -------------------------------------------------------------------- */

static void test_judge(void **state)
{
	(void)state;
	static const struct {
		const char *req;
		int status;
		bool head;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, false },
		{ "GET /metrics HTTP/1.0\r\n\r\n", 200, false },
		{ "GET /metrics HTTP/1.1\n\n", 200, false },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", 200, true },
		{ "GET /metrics?x=1 HTTP/1.1\r\n\r\n", 200, false },
		{ "GET http://127.0.0.1:9100/metrics HTTP/1.1\r\n\r\n", 200, false },
		/* Prometheus's own */
		{ "GET /metrics HTTP/1.1\r\nHost: 127.0.41.1:9100\r\nUser-Agent: Prometheus/2.42.0\r\n"
		  "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
		  "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 1\r\n\r\n", 200, false },
		/* bytes past ASCII: allowed in a header value (obs-text) */
		{ "GET /metrics HTTP/1.1\r\nX-Name: caf\xc3\xa9\r\n\r\n", 200, false },
		{ "GET / HTTP/1.1\r\n\r\n", 404, false },
		{ "GET /metricsx HTTP/1.1\r\n\r\n", 404, false },
		{ "GET /metrics/ HTTP/1.1\r\n\r\n", 404, false },
		{ "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, false },
		{ "DELETE /metrics HTTP/1.1\r\n\r\n", 405, false },
		{ "get /metrics HTTP/1.1\r\n\r\n", 405, false },
		{ "POST /other HTTP/1.1\r\n\r\n", 404, false },
		{ "garbage\r\n\r\n", 400, false },
		{ "\r\n\r\n", 400, false },
		{ "GET /metrics\r\n\r\n", 400, false },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.1 x\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 400, false },
		{ "GET /metrics FTP/1.1\r\n\r\n", 400, false },
		{ "GET metrics HTTP/1.1\r\n\r\n", 400, false },
		{ "G(T /metrics HTTP/1.1\r\n\r\n", 400, false },
		{ "GET /met\x01rics HTTP/1.1\r\n\r\n", 400, false },
		{ "GET /m\xc3\xa9trics HTTP/1.1\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.1\r\nHost: a\x02" "b\r\n\r\n", 400, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool head = !cases[i].head;
		const char *why = NULL;
		int st = metrics_http_judge(cases[i].req, strlen(cases[i].req), &head, &why);

		if (st != cases[i].status || head != cases[i].head)
			fail_msg("case %zu '%s': %d head %d, want %d head %d", i, cases[i].req, st, head,
				 cases[i].status, cases[i].head);
		if (st == 400 && !why)
			fail_msg("case %zu: 400 without a reason", i);
	}
	/* a head cut before its empty line is not a request yet */
	bool head;
	const char *why;

	assert_int_equal(metrics_http_judge("GET /metrics HTTP/1.1\r\nHost: x\r\n", 33, &head, &why),
			 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_fixed),
		cmocka_unit_test(test_live_put),
		cmocka_unit_test(test_judge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
