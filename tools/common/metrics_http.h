/* SPDX-License-Identifier: MIT */
/*
 * metrics_http.h - the HTTP endpoint of `ulnetd --metrics ADDR:PORT`: GET
 * (or HEAD) /metrics answers one scrape (metrics.h); anything else gets
 * 404 or 405, a malformed request 400, and the connection is closed after
 * every answer.
 *
 * It runs on a thread of its own, polling its listening socket and its
 * clients (all non-blocking), so that neither the control socket nor the
 * node ever waits for a scrape client. A client is bounded in what it may
 * cost: its request's head must fit METRICS_HTTP_MAX_REQUEST bytes and
 * arrive whole within the timeout of its connection, the answer must be
 * taken within the timeout too, and at most `max_conns` clients are served
 * at once (one more is answered 503 and closed). A slow or silent client
 * holds one slot until its timeout, never the others.
 */
#ifndef ULNET_TOOLS_METRICS_HTTP_H
#define ULNET_TOOLS_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "ctl_cmds.h"

#define METRICS_HTTP_MAX_REQUEST 8192   /* request line and headers */
#define METRICS_HTTP_TIMEOUT_MS 5000    /* to send the request; to take the answer */
#define METRICS_HTTP_MAX_CONNS 8        /* scrape connections at once */

/* The endpoint's bounds (0: the defaults above). */
struct metrics_http_conf {
	int max_conns;
	int timeout_ms;
	int max_peer_nis;                 /* 0: METRICS_MAX_PEER_NIS */
};

struct metrics_http;

/*
 * Parse "ADDR:PORT" (ADDR an IPv4 address or an IPv6 one in brackets,
 * numeric; PORT 1..65535) into `sa`. Returns 0, or -EINVAL with what is
 * wrong in `why`.
 */
int metrics_addr_parse(const char *s, struct sockaddr_storage *sa, socklen_t *salen, char *why,
		       size_t whylen);

/* A listening socket on `sa` (non-blocking, close-on-exec). Returns it, or
 * a negative errno (bind's: -EADDRINUSE, -EADDRNOTAVAIL, -EACCES...). */
int metrics_http_listen(const struct sockaddr_storage *sa, socklen_t salen);

/*
 * Serve `lfd` (from metrics_http_listen(), owned from now on) on a new
 * thread, scraping the node of `ctx`; the thread blocks every signal, so
 * they go to the caller's threads. Log lines go through ctl_log(ctx).
 * Returns 0 or a negative errno (-ENOMEM, pthread_create's); `lfd` is
 * closed on failure.
 */
int metrics_http_start(struct metrics_http **out, struct ctl_ctx *ctx, int lfd,
		       const struct metrics_http_conf *conf);
/* Stop the thread (a scrape under way ends first), close every socket,
 * free. NULL is allowed. */
void metrics_http_stop(struct metrics_http *h);

/*
 * Judge the head of one request (`len` bytes up to and including the blank
 * line that ends it): the HTTP status to answer, 200 for GET or HEAD of
 * /metrics (`*head` set for HEAD), else 400 (`*why` says what is
 * malformed), 404 (another path) or 405 (another method on /metrics).
 */
int metrics_http_judge(const char *req, size_t len, bool *head, const char **why);

#endif
