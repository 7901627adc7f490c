/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ksock_hdr.c - the 24-byte ksock message header in both byte orders:
 * every field is meaningful, so a decoded header re-encodes byte for byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/socklnd/sock_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int be = 0; be < 2; be++) {
		struct ksock_msg_hdr m;
		uint8_t out[KSOCK_MSG_HDR_SIZE];
		ssize_t rc = ksock_msg_hdr_decode(data, size, be, &m);

		if (rc < 0)
			continue;
		if (rc != KSOCK_MSG_HDR_SIZE || size < KSOCK_MSG_HDR_SIZE)
			abort();
		if (m.type != KSOCK_MSG_NOOP && m.type != KSOCK_MSG_LNET)
			abort();
		if (ksock_msg_hdr_encode(&m, be, out, sizeof(out)) != rc || memcmp(out, data, sizeof(out)))
			abort();
	}
	return 0;
}
