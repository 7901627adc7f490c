/* SPDX-License-Identifier: MIT */
/*
 * fuzz_srpc.c - SRPC message decode on arbitrary bytes. Properties: a
 * decode never reads past `size` (ASan), fails under 160 bytes, and a
 * decoded message re-encodes to 160 little-endian bytes that decode to the
 * same fields and re-encode to the same bytes (a fixed point).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "selftest/srpc_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct srpc_msg a, b;
	uint8_t e1[SRPC_MSG_SIZE], e2[SRPC_MSG_SIZE];
	int rc = srpc_msg_decode(data, size, &a);

	if (size < SRPC_MSG_SIZE && rc == 0)
		abort();
	if (rc)
		return 0;
	if (srpc_msg_encode(&a, e1, sizeof(e1)) != SRPC_MSG_SIZE)
		abort();
	if (srpc_msg_decode(e1, sizeof(e1), &b) != 0 || b.swapped || b.type != a.type ||
	    b.version != a.version || b.ses_feats != a.ses_feats)
		abort();
	if (srpc_msg_encode(&b, e2, sizeof(e2)) != SRPC_MSG_SIZE || memcmp(e1, e2, sizeof(e1)))
		abort();
	return 0;
}
