/* SPDX-License-Identifier: MIT */
/*
 * fuzz_metrics_http.c - what ulnetd --metrics reads from the network and
 * from its command line (tools/common/metrics_http.c): a request head
 * judged by metrics_http_judge(), and the same bytes as an ADDR:PORT.
 * A judgement is one of 200/400/404/405, a 400 says why, HEAD only with
 * 200, and a 200 is a GET or HEAD of /metrics; an address that parses
 * formats back and parses to the same socket address.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_judge(const char *req, size_t len)
{
	bool head = true;
	const char *why = (const char *)1;
	int st = metrics_http_judge(req, len, &head, &why);

	if (st != 200 && st != 400 && st != 404 && st != 405)
		abort();
	if ((st == 400) != (why != NULL) || (head && st != 200))
		abort();
	if (st == 200 && !(len > 4 && memcmp(req, "GET ", 4) == 0) &&
	    !(len > 5 && memcmp(req, "HEAD ", 5) == 0))
		abort();
	if (st == 200 && !memmem(req, len, "/metrics", 8))
		abort();
}

static void fuzz_addr(const char *s)
{
	struct sockaddr_storage sa, sb;
	socklen_t la = 0, lb = 0;
	char why[160], host[INET6_ADDRSTRLEN], again[INET6_ADDRSTRLEN + 16];

	why[0] = '\0';
	if (metrics_addr_parse(s, &sa, &la, why, sizeof(why)) < 0) {
		if (!why[0] || strnlen(why, sizeof(why)) == sizeof(why))
			abort();
		return;
	}
	if (sa.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&sa;

		if (la != sizeof(*a) || !a->sin_port || !inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host)))
			abort();
		snprintf(again, sizeof(again), "%s:%u", host, ntohs(a->sin_port));
	} else if (sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&sa;

		if (la != sizeof(*a) || !a->sin6_port ||
		    !inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host)))
			abort();
		snprintf(again, sizeof(again), "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		abort();
	}
	if (metrics_addr_parse(again, &sb, &lb, why, sizeof(why)) != 0 || la != lb ||
	    memcmp(&sa, &sb, la) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	/* exactly `size` bytes for the judge (ASan sees a read past them) */
	memcpy(s, data, size);
	fuzz_judge(s, size);
	s[size] = '\0';
	fuzz_addr(s);
	free(s);
	return 0;
}
