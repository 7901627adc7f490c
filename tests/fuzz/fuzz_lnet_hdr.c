/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lnet_hdr.c - both LNet header forms on arbitrary bytes. A header
 * that decodes must re-encode, decode again to the same struct, and encode
 * again to the same bytes. What may be lost on the first pass: unused union
 * bytes, and in the nid4 form the top byte of a NID (the host type is 8
 * bits, as in the kernel) and any type-0xff NID, which becomes ANY.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/lnet_hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_wmd(const lnet_wire_handle_t *a, const lnet_wire_handle_t *b)
{
	if (a->wh_interface_cookie != b->wh_interface_cookie ||
	    a->wh_object_cookie != b->wh_object_cookie)
		abort();
}

static bool nid_eq(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	return ulnet_nid_same(a, b) || (ulnet_nid_is_any(a) && ulnet_nid_is_any(b));
}

static void same_hdr(const struct lnet_hdr *a, const struct lnet_hdr *b)
{
	if (!nid_eq(&a->dest_nid, &b->dest_nid) || !nid_eq(&a->src_nid, &b->src_nid) ||
	    a->dest_pid != b->dest_pid || a->src_pid != b->src_pid || a->type != b->type ||
	    a->payload_length != b->payload_length)
		abort();
	switch (a->type) {
	case ULNET_MSG_PUT:
		same_wmd(&a->msg.put.ack_wmd, &b->msg.put.ack_wmd);
		if (a->msg.put.match_bits != b->msg.put.match_bits ||
		    a->msg.put.hdr_data != b->msg.put.hdr_data ||
		    a->msg.put.ptl_index != b->msg.put.ptl_index || a->msg.put.offset != b->msg.put.offset)
			abort();
		break;
	case ULNET_MSG_GET:
		same_wmd(&a->msg.get.return_wmd, &b->msg.get.return_wmd);
		if (a->msg.get.match_bits != b->msg.get.match_bits ||
		    a->msg.get.ptl_index != b->msg.get.ptl_index ||
		    a->msg.get.src_offset != b->msg.get.src_offset ||
		    a->msg.get.sink_length != b->msg.get.sink_length)
			abort();
		break;
	case ULNET_MSG_ACK:
		same_wmd(&a->msg.ack.dst_wmd, &b->msg.ack.dst_wmd);
		if (a->msg.ack.match_bits != b->msg.ack.match_bits || a->msg.ack.mlength != b->msg.ack.mlength)
			abort();
		break;
	case ULNET_MSG_REPLY:
		same_wmd(&a->msg.reply.dst_wmd, &b->msg.reply.dst_wmd);
		break;
	case ULNET_MSG_HELLO:
		if (a->msg.hello.incarnation != b->msg.hello.incarnation ||
		    a->msg.hello.type != b->msg.hello.type)
			abort();
		break;
	default:
		abort();	/* a decoder let an unknown type through */
	}
}

static void one(const struct lnet_hdr_codec *c, const uint8_t *data, size_t size)
{
	struct lnet_hdr h1, h2;
	uint8_t e1[LNET_HDR_MAX_SIZE], e2[LNET_HDR_MAX_SIZE];
	ssize_t rc = c->decode(data, size, &h1);

	if (rc < 0)
		return;
	if ((size_t)rc != c->size || size < c->size)
		abort();
	if (c->encode(&h1, e1, c->size) != (ssize_t)c->size)
		abort();
	/* pids, type and payload_length come back byte for byte; in the nid16
	 * form the NIDs too */
	if (memcmp(e1 + c->size - 56, data + c->size - 56, 16) != 0)
		abort();
	if (c == &lnet_hdr_codec_nid16 && memcmp(e1, data, 40) != 0)
		abort();
	if (c->decode(e1, c->size, &h2) != (ssize_t)c->size)
		abort();
	same_hdr(&h1, &h2);
	if (c->encode(&h2, e2, c->size) != (ssize_t)c->size || memcmp(e1, e2, c->size) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(&lnet_hdr_codec_nid4, data, size);
	one(&lnet_hdr_codec_nid16, data, size);
	return 0;
}
