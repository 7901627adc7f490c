/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ctl_proto.c - the ulnetctl <-> ulnetd control protocol decoders
 * (tools/common/ctl_proto.c) on arbitrary bytes. The first byte picks the
 * request or the reply decoder. Properties: a decode never reads past
 * `size` (ASan) nor leaks (a failed decode frees what it took); a decoded
 * message re-encodes to exactly the bytes it used, which decode again to
 * the same message; every proper prefix of those bytes is -EAGAIN (more
 * bytes needed), never an error nor a success.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void request(const uint8_t *data, size_t size)
{
	struct ctl_request rq, rq2;
	struct ybuf enc;
	size_t used = 0, used2 = 0;
	int rc = ctl_request_decode(data, size, &rq, &used);

	if (rc != 0) {
		if (rc != -EAGAIN && rc != -EPROTO && rc != -E2BIG)
			abort();
		return;
	}
	if (used > size || rq.argc < 0 || rq.argc > CTL_MAX_ARGS || rq.argv[rq.argc])
		abort();
	ybuf_init(&enc);
	if (ctl_request_encode(rq.argc, rq.argv, rq.blob, rq.bloblen, &enc) != 0 ||
	    enc.len != used || memcmp(ybuf_str(&enc), data, used))
		abort();
	if (ctl_request_decode(data, used - 1, &rq2, NULL) != -EAGAIN ||
	    ctl_request_decode(data, used / 2, &rq2, NULL) != -EAGAIN)
		abort();
	if (ctl_request_decode(ybuf_str(&enc), enc.len, &rq2, &used2) != 0 || used2 != used ||
	    rq2.argc != rq.argc || rq2.bloblen != rq.bloblen || !rq2.blob != !rq.blob ||
	    (rq.blob && memcmp(rq.blob, rq2.blob, rq.bloblen)))
		abort();
	for (int i = 0; i < rq.argc; i++)
		if (strcmp(rq.argv[i], rq2.argv[i]))
			abort();
	ctl_request_free(&rq2);
	ctl_request_free(&rq);
	ybuf_free(&enc);
}

static void reply(const uint8_t *data, size_t size)
{
	struct ctl_reply rp, rp2;
	struct ybuf enc;
	size_t used = 0, used2 = 0;
	int rc;

	ctl_reply_init(&rp);
	rc = ctl_reply_decode(data, size, &rp, &used);
	if (rc != 0) {
		if (rc != -EAGAIN && rc != -EPROTO && rc != -E2BIG)
			abort();
		ctl_reply_free(&rp);
		return;
	}
	if (used > size)
		abort();
	ybuf_init(&enc);
	if (ctl_reply_encode(&rp, &enc) != 0 || enc.len != used || memcmp(ybuf_str(&enc), data, used))
		abort();
	ctl_reply_init(&rp2);
	if (ctl_reply_decode(data, used - 1, &rp2, NULL) != -EAGAIN)
		abort();
	ctl_reply_free(&rp2);
	ctl_reply_init(&rp2);
	if (ctl_reply_decode(ybuf_str(&enc), enc.len, &rp2, &used2) != 0 || used2 != used ||
	    rp2.rc != rp.rc || rp2.out.len != rp.out.len || rp2.err.len != rp.err.len ||
	    memcmp(ybuf_str(&rp2.out), ybuf_str(&rp.out), rp.out.len) ||
	    memcmp(ybuf_str(&rp2.err), ybuf_str(&rp.err), rp.err.len))
		abort();
	ctl_reply_free(&rp2);
	ctl_reply_free(&rp);
	ybuf_free(&enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		reply(data + 1, size - 1);
	else
		request(data + 1, size - 1);
	return 0;
}
