/* SPDX-License-Identifier: MIT */
/*
 * fuzz_o2ib_msg.c - the o2iblnd message and rejection decoders
 * (src/lnd/o2iblnd/o2ib_wire.c), fed what a peer could send: a message
 * that decodes re-encodes (and reseals, in the checksum form it matched)
 * to one that decodes to the same fields; the fragments of a descriptor are
 * all inside the message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct kib_rdma_frag frags[KIB_MAX_RDMA_FRAGS];
static uint8_t out[KIB_MSG_SIZE];

static void check_msg(const uint8_t *data, size_t size)
{
	struct kib_msg m, d;
	ssize_t rc = kib_msg_decode(data, size, &m), n;
	uint32_t nfr = 0;

	if (rc < 0)
		return;
	if ((size_t)rc > size || rc != (ssize_t)m.nob || rc < KIB_HDR_SIZE)
		abort();
	if (m.type == KIB_MSG_PUT_ACK || m.type == KIB_MSG_GET_REQ) {
		if (m.rd.nfrags == 0 || m.rd.nfrags > KIB_MAX_RDMA_FRAGS)
			abort();
		if (m.rd.frags + (size_t)m.rd.nfrags * KIB_RDMA_FRAG_SIZE > data + m.nob)
			abort();
		for (nfr = 0; nfr < m.rd.nfrags; nfr++)
			frags[nfr] = kib_rd_frag(&m.rd, nfr);
	}
	if (m.nob > KIB_MSG_SIZE)
		return; /* a peer may send more than we would; we never encode it */
	n = kib_msg_encode(&m, frags, nfr, m.be, out, sizeof(out));
	if (n < 0)
		abort();
	if (m.type == KIB_MSG_IMMEDIATE)
		memcpy(out + n, data + KIB_IMMEDIATE_SIZE, m.payload_nob), n += m.payload_nob;
	if (m.cksum)
		kib_msg_seal(out, (uint32_t)n, m.be, m.cksum_unsigned ? KIB_CKSUM_UNSIGNED : KIB_CKSUM_SIGNED);
	if (kib_msg_decode(out, (size_t)n, &d) != n)
		abort();
	if (d.type != m.type || d.version != m.version || d.credits != m.credits || d.be != m.be ||
	    d.srcstamp != m.srcstamp || d.dststamp != m.dststamp || d.cookie != m.cookie ||
	    d.src_cookie != m.src_cookie || d.dst_cookie != m.dst_cookie || d.status != m.status ||
	    d.payload_nob != m.payload_nob || d.rd.nfrags != m.rd.nfrags || d.rd.key != m.rd.key ||
	    memcmp(&d.cp, &m.cp, sizeof(d.cp)) || d.srcnid != m.srcnid || d.dstnid != m.dstnid)
		abort();
	for (uint32_t i = 0; i < nfr; i++) {
		struct kib_rdma_frag f = kib_rd_frag(&d.rd, i);

		if (f.nob != frags[i].nob || f.addr != frags[i].addr)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kib_rej r, r2;
	uint8_t e[KIB_REJ_SIZE];
	ssize_t rc;

	check_msg(data, size);
	rc = kib_rej_decode(data, size, &r);
	if (rc >= 0) {
		if (rc != KIB_REJ_MIN_SIZE && rc != KIB_REJ_SIZE)
			abort();
		if (kib_rej_encode(&r, r.be, e, sizeof(e)) != KIB_REJ_SIZE)
			abort();
		if (kib_rej_decode(e, sizeof(e), &r2) < 0 || r2.why != r.why || r2.magic != r.magic ||
		    r2.version != r.version)
			abort();
	}
	return 0;
}
