/* SPDX-License-Identifier: MIT */
/*
 * metrics_http.c - the HTTP endpoint of ulnetd --metrics (metrics_http.h):
 * one thread, one poll loop over the listening socket and at most
 * max_conns clients, every socket non-blocking, every client with a
 * deadline. Only as much of HTTP/1.x as a scraper needs: one request per
 * connection, answered with Connection: close.
 */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"

/* After its answer a client has this long to close its end: what it still
 * sends is read and dropped meanwhile, so that closing with unread data
 * (which makes the kernel send a reset) does not destroy the answer. */
#define LINGER_MS 1000
/* While accept() fails for want of descriptors, the listening socket rests
 * this long (it would poll readable again at once). */
#define ACCEPT_PAUSE_MS 100

enum { HC_FREE, HC_READ, HC_WRITE, HC_LINGER };

struct hconn {
	int state;
	int fd;
	uint64_t deadline;               /* ms, CLOCK_MONOTONIC */
	char peer[64];                   /* "ADDR:PORT", for the log */
	size_t rlen;
	char req[METRICS_HTTP_MAX_REQUEST];
	struct ybuf out;                 /* the answer, whole */
	size_t off;                      /* how much of it is written */
};

struct metrics_http {
	struct ctl_ctx *ctx;
	struct metrics_http_conf conf;
	int lfd;
	int stop[2];                     /* a byte here ends the thread */
	pthread_t th;
	struct hconn *c;                 /* conf.max_conns of them */
	struct pollfd *pf;               /* 2 + conf.max_conns */
	int *pf_conn;                    /* the connection of each pf[k], k >= 2 */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* --- ADDR:PORT ------------------------------------------------------------------ */

int metrics_addr_parse(const char *s, struct sockaddr_storage *sa, socklen_t *salen, char *why,
		       size_t whylen)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port;
	size_t hlen;
	bool v6 = s[0] == '[';

	if (v6) {
		const char *close = strchr(s, ']');

		if (!close) {
			snprintf(why, whylen, "no ']' after the IPv6 address");
			return -EINVAL;
		}
		hlen = (size_t)(close - s - 1);
		if (close[1] != ':') {
			snprintf(why, whylen, "no port: ADDR:PORT");
			return -EINVAL;
		}
		port = close + 2;
		s++;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon) {
			snprintf(why, whylen, "no port: ADDR:PORT");
			return -EINVAL;
		}
		if (memchr(s, ':', (size_t)(colon - s))) {
			snprintf(why, whylen, "an IPv6 address goes in brackets: [ADDR]:PORT");
			return -EINVAL;
		}
		hlen = (size_t)(colon - s);
		port = colon + 1;
	}
	if (hlen == 0) {
		snprintf(why, whylen, "no address: ADDR:PORT, 0.0.0.0 for every IPv4 address");
		return -EINVAL;
	}
	if (hlen >= sizeof(host)) {
		snprintf(why, whylen, "the address is not a numeric IPv4 or IPv6 address");
		return -EINVAL;
	}
	memcpy(host, s, hlen);
	host[hlen] = '\0';

	char *end;
	long p = strtol(port, &end, 10);

	if (!*port || *end || port[0] < '0' || port[0] > '9' || p < 1 || p > 65535) {
		snprintf(why, whylen, "the port is not a number in 1..65535");
		return -EINVAL;
	}
	memset(sa, 0, sizeof(*sa));
	if (v6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)sa;

		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1) {
			snprintf(why, whylen, "'%s' is not a numeric IPv6 address", host);
			return -EINVAL;
		}
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
		*salen = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)sa;

		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) {
			snprintf(why, whylen, "'%s' is not a numeric IPv4 address (an IPv6 one goes in "
				 "brackets)", host);
			return -EINVAL;
		}
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)p);
		*salen = sizeof(*a4);
	}
	return 0;
}

int metrics_http_listen(const struct sockaddr_storage *sa, socklen_t salen)
{
	int one = 1;
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* a restarted daemon binds again while its old connections linger in
	 * TIME_WAIT; a port another socket listens on is still refused */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, salen) < 0 || listen(fd, 64) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

/* --- judging a request ------------------------------------------------------------- */

/* RFC 9110 token characters (method, header names). */
static bool tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* The length of the line at `p` (up to `end`) without its CRLF or LF, and
 * where the next one starts; -1 if no LF ends it. */
static long line_len(const char *p, const char *end, const char **next)
{
	const char *lf = memchr(p, '\n', (size_t)(end - p));

	if (!lf)
		return -1;
	*next = lf + 1;
	return (long)(lf - p) - (lf > p && lf[-1] == '\r');
}

int metrics_http_judge(const char *req, size_t len, bool *head, const char **why)
{
	const char *end = req + len, *next;
	long n = line_len(req, end, &next);

	*head = false;
	*why = NULL;
	if (n <= 0) {
		*why = "no request line";
		return 400;
	}
	/* METHOD SP TARGET SP HTTP/1.x, nothing else on the line */
	const char *sp1 = memchr(req, ' ', (size_t)n);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(req + n - sp1 - 1)) : NULL;

	if (!sp1 || !sp2 || sp1 == req || sp2 == sp1 + 1 || memchr(sp2 + 1, ' ', (size_t)(req + n - sp2 - 1))) {
		*why = "the request line is not METHOD TARGET VERSION";
		return 400;
	}
	for (const char *p = req; p < sp1; p++)
		if (!tchar(*p)) {
			*why = "a method is a token";
			return 400;
		}
	/* (a target is ASCII: anything else must be percent-encoded) */
	for (const unsigned char *p = (const unsigned char *)sp1 + 1; p < (const unsigned char *)sp2; p++)
		if (*p <= ' ' || *p >= 0x7f) {
			*why = "a space, control character or non-ASCII byte in the request target";
			return 400;
		}
	size_t vlen = (size_t)(req + n - sp2 - 1);

	if (vlen != 8 || (memcmp(sp2 + 1, "HTTP/1.0", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.1", 8) != 0)) {
		*why = "the version is not HTTP/1.0 or HTTP/1.1";
		return 400;
	}
	/* the headers: NAME ":" VALUE lines, then an empty one */
	bool ended = false;

	for (const char *p = next; p < end;) {
		const char *nx;
		long hl = line_len(p, end, &nx);

		if (hl < 0) {
			*why = "a header line without its end";
			return 400;
		}
		if (hl == 0) {
			ended = true;
			break;
		}
		const char *colon = memchr(p, ':', (size_t)hl);

		if (!colon || colon == p) {
			*why = "a header line is not NAME: VALUE";
			return 400;
		}
		for (const char *q = p; q < colon; q++)
			if (!tchar(*q)) {
				*why = "a header name is a token (no space before its colon, no folded lines)";
				return 400;
			}
		/* (bytes past ASCII are allowed in a value: obs-text) */
		for (const unsigned char *q = (const unsigned char *)colon + 1;
		     q < (const unsigned char *)p + hl; q++)
			if ((*q < ' ' && *q != '\t') || *q == 0x7f) {
				*why = "a control character in a header value";
				return 400;
			}
		p = nx;
	}
	if (!ended) {
		*why = "the headers do not end with an empty line";
		return 400;
	}
	/* the path of an origin-form target, or of an absolute-form one */
	const char *path = sp1 + 1, *pend = sp2;

	if ((size_t)(pend - path) > 7 && (strncmp(path, "http://", 7) == 0 ||
					  strncmp(path, "https://", 8) == 0)) {
		const char *slash = memchr(path + 8, '/', (size_t)(pend - path - 8));

		path = slash ? slash : pend;
	} else if (*path != '/') {
		*why = "the request target is not a path";
		return 400;
	}
	const char *q = path;

	while (q < pend && *q != '?' && *q != '#')
		q++;
	if (!(q - path == 8 && memcmp(path, "/metrics", 8) == 0))
		return 404;
	if ((size_t)(sp1 - req) == 3 && memcmp(req, "GET", 3) == 0)
		return 200;
	if ((size_t)(sp1 - req) == 4 && memcmp(req, "HEAD", 4) == 0) {
		*head = true;
		return 200;
	}
	return 405;
}

/* --- the connections ------------------------------------------------------------------ */

static const char *status_text(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	default:
		return "Internal Server Error";
	}
}

/* An answer other than a scrape: a line of text saying why. */
static void error_answer(struct ybuf *out, int status, const char *why)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "%d %s%s%s\n", status, status_text(status),
			 why ? ": " : "", why ? why : "");

	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)strlen(body);
	ybuf_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		    "Content-Length: %d\r\n%sConnection: close\r\n\r\n%s", status,
		    status_text(status), n, status == 405 ? "Allow: GET, HEAD\r\n" : "", body);
}

static void hc_close(struct hconn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	ybuf_free(&c->out);
	c->state = HC_FREE;
}

/* Write what the socket takes now; the whole answer: linger. */
static void hc_write(struct metrics_http *h, struct hconn *c)
{
	while (c->off < c->out.len) {
		ssize_t w = send(c->fd, c->out.s + c->off, c->out.len - c->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			ctl_log(h->ctx, ULNET_LOG_DEBUG, "metrics: %s: answer not delivered: %s",
				c->peer, strerror(errno));
			hc_close(c);
			return;
		}
		c->off += (size_t)w;
	}
	ybuf_free(&c->out);
	shutdown(c->fd, SHUT_WR);
	c->state = HC_LINGER;
	c->deadline = now_ms() + LINGER_MS;
}

/* Answer `c` with `status` (200: a scrape, its body left out for HEAD;
 * else a line saying `why`) and start writing it. */
static void hc_answer(struct metrics_http *h, struct hconn *c, int status, const char *why,
		      bool head)
{
	ybuf_reset(&c->out);
	if (status == 200) {
		struct ybuf body;

		ybuf_init(&body);
		if (metrics_scrape(h->ctx, h->conf.max_peer_nis, &body) < 0) {
			status = 500;
			why = "out of memory";
		} else {
			ybuf_printf(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
				    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
				    METRICS_CONTENT_TYPE, body.len);
			if (!head)
				ybuf_add(&c->out, body.s ? body.s : "", body.len);
		}
		ybuf_free(&body);
	}
	if (status != 200) {
		ybuf_reset(&c->out);
		error_answer(&c->out, status, why);
		ctl_log(h->ctx, ULNET_LOG_INFO, "metrics: %s: %d %s%s%s", c->peer, status,
			status_text(status), why ? ": " : "", why ? why : "");
	}
	if (c->out.oom) {
		hc_close(c);
		return;
	}
	c->state = HC_WRITE;
	c->off = 0;
	c->deadline = now_ms() + (uint64_t)h->conf.timeout_ms;
	hc_write(h, c);
}

/* Where the head of a request ends (the byte after its empty line), or 0
 * if it has not yet come whole. `from`: what was searched before. */
static size_t head_end(const char *b, size_t len, size_t from)
{
	size_t i = from > 3 ? from - 3 : 0;

	for (; i < len; i++) {
		if (b[i] != '\n')
			continue;
		if (i + 1 < len && b[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && b[i + 1] == '\r' && b[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static void hc_read(struct metrics_http *h, struct hconn *c)
{
	for (;;) {
		if (c->state != HC_READ)
			return;
		if (c->rlen == sizeof(c->req)) {
			hc_answer(h, c, 431, "the request line and headers exceed 8192 bytes", false);
			return;
		}
		ssize_t r = recv(c->fd, c->req + c->rlen, sizeof(c->req) - c->rlen, MSG_DONTWAIT);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			/* gone before its request came whole: nobody to answer */
			hc_close(c);
			return;
		}
		size_t from = c->rlen;

		c->rlen += (size_t)r;
		/* a request starts with its request line: empty lines before
		 * it (RFC 9112 2.2) are not its end */
		size_t skip = 0;

		while (skip < c->rlen && (c->req[skip] == '\r' || c->req[skip] == '\n'))
			skip++;
		size_t e = skip < c->rlen ? head_end(c->req + skip, c->rlen - skip,
						     from > skip ? from - skip : 0) : 0;

		if (e) {
			bool head;
			const char *why;
			int status = metrics_http_judge(c->req + skip, e, &head, &why);

			if (status == 404)
				why = "only /metrics is served";
			else if (status == 405)
				why = "only GET and HEAD";
			hc_answer(h, c, status, why, head);
			return;
		}
	}
}

static void hc_linger(struct hconn *c)
{
	char junk[4096];

	for (;;) {
		ssize_t r = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			hc_close(c);
			return;
		}
	}
}

static void peer_name(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &a4->sin_addr, a, sizeof(a));
		port = ntohs(a4->sin_port);
		snprintf(buf, len, "%s:%u", a, port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &a6->sin6_addr, a, sizeof(a));
		port = ntohs(a6->sin6_port);
		snprintf(buf, len, "[%s]:%u", a, port);
	} else {
		snprintf(buf, len, "?");
	}
}

/* Take the clients waiting; those past max_conns are told 503. Returns
 * false when descriptors ran out (the listening socket rests a while). */
static bool accept_all(struct metrics_http *h)
{
	for (int k = 0; k < 64; k++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(h->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				ctl_log(h->ctx, ULNET_LOG_WARN, "metrics: cannot accept a scrape "
					"connection: %s", strerror(errno));
				return false;
			}
			return true;
		}
		struct hconn *c = NULL;

		for (int i = 0; i < h->conf.max_conns && !c; i++)
			if (h->c[i].state == HC_FREE)
				c = &h->c[i];
		if (!c) {
			struct ybuf b;
			char name[64], junk[4096];

			ybuf_init(&b);
			error_answer(&b, 503, "too many scrape connections");
			if (b.s && send(fd, b.s, b.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* it is being refused anyway */
			}
			ybuf_free(&b);
			/* drop what it sent without waiting (a close with unread
			 * data would reset the answer away) */
			shutdown(fd, SHUT_WR);
			for (int i = 0; i < 4 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
				;
			close(fd);
			peer_name(&sa, name, sizeof(name));
			ctl_log(h->ctx, ULNET_LOG_INFO, "metrics: %s: 503: more than %d scrape "
				"connections", name, h->conf.max_conns);
			continue;
		}
		c->fd = fd;
		c->state = HC_READ;
		c->rlen = 0;
		c->off = 0;
		ybuf_init(&c->out);
		c->deadline = now_ms() + (uint64_t)h->conf.timeout_ms;
		peer_name(&sa, c->peer, sizeof(c->peer));
	}
	return true;
}

static void *serve(void *arg)
{
	struct metrics_http *h = arg;
	uint64_t lfd_rest_until = 0;

	for (;;) {
		uint64_t now = now_ms(), next = UINT64_MAX;
		int npf = 0;

		h->pf[npf++] = (struct pollfd){ .fd = h->stop[0], .events = POLLIN };
		h->pf[npf++] = (struct pollfd){ .fd = now >= lfd_rest_until ? h->lfd : -1,
						.events = POLLIN };
		if (now < lfd_rest_until)
			next = lfd_rest_until;
		for (int i = 0; i < h->conf.max_conns; i++) {
			struct hconn *c = &h->c[i];

			if (c->state == HC_FREE)
				continue;
			h->pf_conn[npf] = i;
			h->pf[npf++] = (struct pollfd){
				.fd = c->fd, .events = c->state == HC_WRITE ? POLLOUT : POLLIN
			};
			if (c->deadline < next)
				next = c->deadline;
		}
		int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 :
			      next - now > 60000 ? 60000 : (int)(next - now);
		int n = poll(h->pf, (nfds_t)npf, timeout);

		if (n < 0 && errno != EINTR) {
			ctl_log(h->ctx, ULNET_LOG_ERROR, "metrics: poll: %s; the endpoint stops",
				strerror(errno));
			break;
		}
		if (n > 0 && h->pf[0].revents)
			break;
		for (int k = 2; n > 0 && k < npf; k++) {
			struct hconn *c = &h->c[h->pf_conn[k]];

			if (!h->pf[k].revents)
				continue;
			if (c->state == HC_READ)
				hc_read(h, c);
			else if (c->state == HC_WRITE)
				hc_write(h, c);
			else if (c->state == HC_LINGER)
				hc_linger(c);
		}
		if (n > 0 && h->pf[1].revents && !accept_all(h))
			lfd_rest_until = now_ms() + ACCEPT_PAUSE_MS;
		now = now_ms();
		for (int i = 0; i < h->conf.max_conns; i++) {
			struct hconn *c = &h->c[i];

			if (c->state == HC_FREE || now < c->deadline)
				continue;
			if (c->state == HC_READ) {
				/* a trickle or a silence: told, then closed at once */
				struct ybuf b;

				ybuf_init(&b);
				error_answer(&b, 408, "the request did not come whole in time");
				if (b.s && send(c->fd, b.s, b.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
					/* it is closed anyway */
				}
				ybuf_free(&b);
				ctl_log(h->ctx, ULNET_LOG_INFO, "metrics: %s: 408: no whole request "
					"within %d ms (%zu bytes came)", c->peer, h->conf.timeout_ms,
					c->rlen);
			} else if (c->state == HC_WRITE) {
				ctl_log(h->ctx, ULNET_LOG_INFO, "metrics: %s: the answer was not taken "
					"within %d ms (%zu of %zu bytes)", c->peer, h->conf.timeout_ms,
					c->off, c->out.len);
			}
			hc_close(c);
		}
	}
	return NULL;
}

int metrics_http_start(struct metrics_http **out, struct ctl_ctx *ctx, int lfd,
		       const struct metrics_http_conf *conf)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!h) {
		close(lfd);
		return -ENOMEM;
	}
	h->ctx = ctx;
	h->lfd = lfd;
	h->stop[0] = h->stop[1] = -1;
	if (conf)
		h->conf = *conf;
	if (h->conf.max_conns <= 0 || h->conf.max_conns > 4096)
		h->conf.max_conns = METRICS_HTTP_MAX_CONNS;
	if (h->conf.timeout_ms <= 0)
		h->conf.timeout_ms = METRICS_HTTP_TIMEOUT_MS;
	if (h->conf.max_peer_nis <= 0)
		h->conf.max_peer_nis = METRICS_MAX_PEER_NIS;
	h->c = calloc((size_t)h->conf.max_conns, sizeof(*h->c));
	h->pf = calloc((size_t)h->conf.max_conns + 2, sizeof(*h->pf));
	h->pf_conn = calloc((size_t)h->conf.max_conns + 2, sizeof(*h->pf_conn));
	if (!h->c || !h->pf || !h->pf_conn) {
		rc = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < h->conf.max_conns; i++) {
		h->c[i].fd = -1;
		ybuf_init(&h->c[i].out);
	}
	if (pipe2(h->stop, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		goto fail;
	}
	/* the thread takes no signal: SIGTERM must reach the main loop */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&h->th, NULL, serve, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0)
		goto fail;
	*out = h;
	return 0;
fail:
	if (h->stop[0] >= 0) {
		close(h->stop[0]);
		close(h->stop[1]);
	}
	close(lfd);
	free(h->c);
	free(h->pf);
	free(h->pf_conn);
	free(h);
	return rc;
}

void metrics_http_stop(struct metrics_http *h)
{
	char c = 1;

	if (!h)
		return;
	if (write(h->stop[1], &c, 1) < 0) {
		/* the pipe is never full: one byte is all it gets */
	}
	pthread_join(h->th, NULL);
	for (int i = 0; i < h->conf.max_conns; i++)
		if (h->c[i].state != HC_FREE)
			hc_close(&h->c[i]);
	close(h->lfd);
	close(h->stop[0]);
	close(h->stop[1]);
	free(h->c);
	free(h->pf);
	free(h->pf_conn);
	free(h);
}
