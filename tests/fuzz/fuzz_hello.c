/* SPDX-License-Identifier: MIT */
/*
 * fuzz_hello.c - socklnd HELLO V1-V4 and the streaming helpers. The prefix
 * peek and the size helper must agree with the full decode; V4 re-encodes
 * byte for byte, V1-V3 re-decode to the same struct (V1 ignores its
 * dest_pid slot and union tail; nid4 NIDs may lose their top byte or
 * become ANY, as in the kernel) and then are stable.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/socklnd/sock_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HELLO_MAX (KSOCK_HELLO_V1_SIZE + 4 * KSOCK_HELLO_MAX_IPS)

static bool nid_eq(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	return ulnet_nid_same(a, b) || (ulnet_nid_is_any(a) && ulnet_nid_is_any(b));
}

static void same_hello(const struct ksock_hello *a, const struct ksock_hello *b)
{
	if (a->version != b->version || a->swapped != b->swapped ||
	    !nid_eq(&a->src_nid, &b->src_nid) || !nid_eq(&a->dst_nid, &b->dst_nid) ||
	    a->src_pid != b->src_pid || a->dst_pid != b->dst_pid ||
	    a->src_incarnation != b->src_incarnation || a->dst_incarnation != b->dst_incarnation ||
	    a->ctype != b->ctype || a->nips != b->nips)
		abort();
	if (a->version != KSOCK_PROTO_V4 && memcmp(a->ips, b->ips, a->nips * sizeof(a->ips[0])))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksock_hello h, h2, p;
	uint8_t out[HELLO_MAX], out2[HELLO_MAX];
	ssize_t rc, sz, pre, n;

	pre = ksock_hello_decode_prefix(data, size, &p);
	sz = ksock_hello_size(data, size);
	rc = ksock_hello_decode(data, size, &h);
	if (pre < 0 && (sz != pre || rc != pre))
		abort();		/* a bad prefix fails everything alike */
	if (sz >= 0 && (sz > HELLO_MAX || (rc >= 0 && rc != sz)))
		abort();
	if (rc < 0)
		return 0;
	if (pre != 8 || p.version != h.version || p.swapped != h.swapped || (size_t)rc > size)
		abort();
	if (h.version != KSOCK_PROTO_V4 && h.nips > KSOCK_HELLO_MAX_IPS)
		abort();

	n = ksock_hello_encode(&h, h.swapped, out, sizeof(out));
	if (n != rc)
		abort();
	if (h.version == KSOCK_PROTO_V4 && memcmp(out, data, (size_t)n))
		abort();
	if (ksock_hello_decode(out, (size_t)n, &h2) != n)
		abort();
	same_hello(&h, &h2);
	if (ksock_hello_encode(&h2, h2.swapped, out2, sizeof(out2)) != n || memcmp(out, out2, (size_t)n))
		abort();
	return 0;
}
