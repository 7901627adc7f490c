/* SPDX-License-Identifier: MIT */
/*
 * nid_wire.c - binary NID forms: nid4 <-> host, 20-byte large NID <-> host,
 * comparisons. String forms live in nid_str.c.
 */
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "ulnet/nid.h"
#include "util/util_bytes.h"

_Static_assert(sizeof(((ulnet_nid_t *)0)->addr) == 16, "large NID address is 16 bytes");

const ulnet_nid_t ULNET_NID_ANY = { .size = 0, .type = ULNET_LND_ANY, .num = 0xffff,
				    .addr = { 0xff, 0xff, 0xff, 0xff } };
const ulnet_nid_t ULNET_NID_LO0 = { .size = 0, .type = ULNET_LND_LO, .num = 0, .addr = { 0 } };

bool ulnet_nid_is_any(const ulnet_nid_t *nid)
{
	return nid->type == ULNET_LND_ANY;
}

void ulnet_nid_from_nid4(ulnet_nid4_t nid4, ulnet_nid_t *nid)
{
	memset(nid, 0, sizeof(*nid));
	if (nid4 == ULNET_NID4_ANY) {
		*nid = ULNET_NID_ANY;
		return;
	}
	nid->size = 0;
	nid->type = (uint8_t)(nid4 >> 48);
	nid->num = (uint16_t)(nid4 >> 32);
	ul_put_be32(nid->addr, (uint32_t)nid4);
}

int ulnet_nid_to_nid4(const ulnet_nid_t *nid, ulnet_nid4_t *nid4)
{
	if (ulnet_nid_is_any(nid)) {
		*nid4 = ULNET_NID4_ANY;
		return 0;
	}
	if (nid->size != 0)
		return -ERANGE;
	*nid4 = (uint64_t)nid->type << 48 | (uint64_t)nid->num << 32 | ul_get_be32(nid->addr);
	return 0;
}

void ulnet_nid_encode(const ulnet_nid_t *nid, uint8_t out[ULNET_NID_WIRE_SIZE])
{
	out[0] = nid->size;
	out[1] = nid->type;
	ul_put_be16(out + 2, nid->num);
	memcpy(out + 4, nid->addr, 16);
}

int ulnet_nid_decode(const uint8_t in[ULNET_NID_WIRE_SIZE], ulnet_nid_t *nid)
{
	memset(nid, 0, sizeof(*nid));
	nid->size = in[0];
	nid->type = in[1];
	nid->num = ul_get_be16(in + 2);
	memcpy(nid->addr, in + 4, 16);
	if (nid->type == ULNET_LND_ANY)
		return 0;
	if (nid->size != 0 && nid->size != 12)
		return -EINVAL;
	/* Bytes past the address must be zero, or two encodings of one NID
	 * would compare different. */
	for (unsigned i = 4u + nid->size; i < 16; i++)
		if (nid->addr[i] != 0)
			return -EINVAL;
	return 0;
}

bool ulnet_nid_same(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	/* All fields compared: the wire form is one-to-one with them, so
	 * this is ulnet_nid_cmp() == 0 without encoding two NIDs (LNDs call
	 * it for every message they send). */
	return lnet_nid_eq(a, b);
}

int ulnet_nid_cmp(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	uint8_t wa[ULNET_NID_WIRE_SIZE], wb[ULNET_NID_WIRE_SIZE];

	ulnet_nid_encode(a, wa);
	ulnet_nid_encode(b, wb);
	return memcmp(wa, wb, sizeof(wa));
}

void ulnet_nid_from_ipv4(uint32_t ip_host, ulnet_net_t net, ulnet_nid_t *nid)
{
	memset(nid, 0, sizeof(*nid));
	nid->type = (uint8_t)ulnet_net_type(net);
	nid->num = (uint16_t)ulnet_net_num(net);
	ul_put_be32(nid->addr, ip_host);
}

uint32_t ulnet_nid_ipv4(const ulnet_nid_t *nid)
{
	return ul_get_be32(nid->addr);
}
