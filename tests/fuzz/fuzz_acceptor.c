/* SPDX-License-Identifier: MIT */
/*
 * fuzz_acceptor.c - the acceptor connection request. A v2 request
 * re-encodes byte for byte in the sender's order; a v1 one may lose its
 * NID's top byte (or become ANY), then must be stable.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/socklnd/sock_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lnet_acceptor_req r, r2;
	uint8_t out[LNET_ACCEPTOR_REQ_V2_SIZE];
	ssize_t rc = lnet_acceptor_req_decode(data, size, &r), n;

	if (rc == -EPROTO || rc == -EMSGSIZE || rc == -EPROTONOSUPPORT)
		return 0;
	if (rc < 0 || (size_t)rc > size)
		abort();
	if (rc != (r.version == 1 ? LNET_ACCEPTOR_REQ_V1_SIZE : LNET_ACCEPTOR_REQ_V2_SIZE))
		abort();
	n = lnet_acceptor_req_encode(&r, r.swapped, out, sizeof(out));
	if (n != rc || memcmp(out, data, 8))
		abort();
	if (r.version == 2 && memcmp(out, data, (size_t)n))
		abort();
	if (lnet_acceptor_req_decode(out, (size_t)n, &r2) != n || r2.version != r.version ||
	    r2.swapped != r.swapped)
		abort();
	if (!ulnet_nid_same(&r.target, &r2.target) &&
	    !(ulnet_nid_is_any(&r.target) && ulnet_nid_is_any(&r2.target)))
		abort();
	return 0;
}
