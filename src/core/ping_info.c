/* SPDX-License-Identifier: MIT */
/*
 * ping_info.c - struct lnet_ping_info on the wire (ping REPLY and push PUT
 * payload).
 *
 * Layout: a 16-byte header, then pi_nnis nid4 entries of 16 bytes. With
 * LARGE_ADDR, entry 0's msg_size is the total size (a multiple of 4) and the
 * nid4 entries are followed by large entries: status (4), then the NID's
 * 4 header bytes and its address bytes, padded to 4. Everything numeric is in
 * the sender's byte order; the NID bytes of a large entry never are swapped.
 * NID metadata (METADATA, EFA only) lies past msg_size and is ignored.
 */
#include <errno.h>
#include <string.h>

#include "core/ping_info.h"
#include "util/util_bytes.h"

#define PI_OFF_MAGIC		0
#define PI_OFF_FEATURES		4
#define PI_OFF_PID		8
#define PI_OFF_NNIS		12
#define PI_OFF_NI		16

/* nid4 entry (struct lnet_ni_status) */
#define PI_NI4_OFF_NID		0
#define PI_NI4_OFF_STATUS	8
#define PI_NI4_OFF_MSG_SIZE	12

/* large entry (struct lnet_ni_large_status): status, then struct lnet_nid
 * cut after its address bytes */
#define PI_NIL_OFF_STATUS	0
#define PI_NIL_OFF_NID		4
#define PI_NIL_NID_HDR_SIZE	4	/* size, type, net number (BE16) */
#define PI_NIL_MIN_SIZE		(PI_NIL_OFF_NID + PI_NIL_NID_HDR_SIZE + 4)

#define PI_INTERFACES_MAX	4096	/* the kernel's lnet_interfaces_max */
#define PI_NID4_LO0		0x0009000000000000ULL

_Static_assert(PI_OFF_FEATURES == PI_OFF_MAGIC + 4, "features");
_Static_assert(PI_OFF_PID == PI_OFF_FEATURES + 4, "pid");
_Static_assert(PI_OFF_NNIS == PI_OFF_PID + 4, "nnis");
_Static_assert(PI_OFF_NI == PI_OFF_NNIS + 4, "entries");
_Static_assert(LNET_PING_INFO_HDR_SIZE == PI_OFF_NI, "header is 16 bytes");
_Static_assert(PI_NI4_OFF_STATUS == PI_NI4_OFF_NID + 8, "ni status");
_Static_assert(PI_NI4_OFF_MSG_SIZE == PI_NI4_OFF_STATUS + 4, "ni msg_size");
_Static_assert(LNET_PING_NI_NID4_SIZE == PI_NI4_OFF_MSG_SIZE + 4, "nid4 entry is 16 bytes");
_Static_assert(LNET_PING_INFO_MIN_SIZE == PI_OFF_NI + 16 * LNET_PING_NI_NID4_SIZE, "min size 272");
_Static_assert(PI_NIL_OFF_NID == PI_NIL_OFF_STATUS + 4, "large nid");
_Static_assert(PI_NIL_MIN_SIZE == 12, "IPv4 large entry is 12 bytes");
_Static_assert(PI_NIL_OFF_NID + ULNET_NID_WIRE_SIZE == 24, "IPv6 large entry is 24 bytes");

static size_t round4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Size of a large entry for this NID: status + NID header + address. */
static size_t large_entry_size(unsigned nid_size)
{
	return round4(PI_NIL_OFF_NID + PI_NIL_NID_HDR_SIZE + 4 + nid_size);
}

size_t lnet_ping_info_size(const struct lnet_ping_info *pi)
{
	size_t size = LNET_PING_INFO_HDR_SIZE;
	ulnet_nid4_t nid4;

	for (unsigned i = 0; i < pi->nnis; i++) {
		if (ulnet_nid_to_nid4(&pi->nis[i].nid, &nid4) == 0)
			size += LNET_PING_NI_NID4_SIZE;
		else
			size += large_entry_size(pi->nis[i].nid.size);
	}
	return size;
}

ssize_t lnet_ping_info_encode(const struct lnet_ping_info *pi, uint8_t *buf, size_t len)
{
	size_t size = lnet_ping_info_size(pi);
	uint32_t features = pi->features;
	unsigned n4 = 0, i;
	ulnet_nid4_t nid4;
	uint8_t *p;

	if (len < size)
		return -ENOSPC;
	for (i = 0; i < pi->nnis; i++)
		if (ulnet_nid_to_nid4(&pi->nis[i].nid, &nid4) == 0)
			n4++;
	/* Large NIDs cannot be read without it; the kernel sets it itself. */
	if (n4 < pi->nnis)
		features |= LNET_PING_FEAT_LARGE_ADDR;

	ul_put_le32(buf + PI_OFF_MAGIC, LNET_PROTO_PING_MAGIC);
	ul_put_le32(buf + PI_OFF_FEATURES, features);
	ul_put_le32(buf + PI_OFF_PID, pi->pid);
	ul_put_le32(buf + PI_OFF_NNIS, n4);

	p = buf + PI_OFF_NI;
	for (i = 0; i < pi->nnis; i++) {
		const struct lnet_ping_ni *ni = &pi->nis[i];
		uint32_t msg_size = ni->msg_size;

		if (ulnet_nid_to_nid4(&ni->nid, &nid4))
			continue;
		/* Wire entry 0 carries the total size with LARGE_ADDR. */
		if (p == buf + PI_OFF_NI && (features & LNET_PING_FEAT_LARGE_ADDR))
			msg_size = (uint32_t)size;
		ul_put_le64(p + PI_NI4_OFF_NID, nid4);
		ul_put_le32(p + PI_NI4_OFF_STATUS, ni->status);
		ul_put_le32(p + PI_NI4_OFF_MSG_SIZE, msg_size);
		p += LNET_PING_NI_NID4_SIZE;
	}
	for (i = 0; i < pi->nnis; i++) {
		const struct lnet_ping_ni *ni = &pi->nis[i];
		uint8_t nid[ULNET_NID_WIRE_SIZE];
		size_t esz, nbytes;

		if (ulnet_nid_to_nid4(&ni->nid, &nid4) == 0)
			continue;
		esz = large_entry_size(ni->nid.size);
		nbytes = PI_NIL_NID_HDR_SIZE + 4u + ni->nid.size;
		if (nbytes > ULNET_NID_WIRE_SIZE)	/* cannot happen for a valid NID */
			nbytes = ULNET_NID_WIRE_SIZE;
		ulnet_nid_encode(&ni->nid, nid);
		memset(p, 0, esz);
		ul_put_le32(p + PI_NIL_OFF_STATUS, ni->status);
		memcpy(p + PI_NIL_OFF_NID, nid, nbytes);
		p += esz;
	}
	return (ssize_t)(p - buf);
}

static void add_ni(struct lnet_ping_info *pi, const ulnet_nid_t *nid,
		   uint32_t status, uint32_t msg_size)
{
	pi->nnis_wire++;
	if (pi->nis && pi->nnis < pi->max_nis) {
		struct lnet_ping_ni *ni = &pi->nis[pi->nnis++];

		ni->nid = *nid;
		ni->status = status;
		ni->msg_size = msg_size;
	}
}

ssize_t lnet_ping_info_decode(const uint8_t *buf, size_t len, struct lnet_ping_info *pi)
{
	size_t size, end, off;
	uint32_t magic, nnis4;
	ulnet_nid_t nid;
	int be;

	pi->nnis = 0;
	pi->nnis_wire = 0;
	pi->nnis_skipped = 0;
	pi->swapped = false;
	pi->truncated = false;

	if (len < LNET_PING_INFO_HDR_SIZE)
		return -EMSGSIZE;
	magic = ul_get_le32(buf + PI_OFF_MAGIC);
	if (magic == LNET_PROTO_PING_MAGIC)
		be = 0;
	else if (ul_get_be32(buf + PI_OFF_MAGIC) == LNET_PROTO_PING_MAGIC)
		be = 1;
	else
		return -EPROTO;
	pi->swapped = be;
	pi->features = ul_get_32(buf + PI_OFF_FEATURES, be);
	pi->pid = ul_get_32(buf + PI_OFF_PID, be);
	nnis4 = ul_get_32(buf + PI_OFF_NNIS, be);
	if (!(pi->features & LNET_PING_FEAT_NI_STATUS))
		return -EPROTO;
	if (nnis4 < 1 || nnis4 > PI_INTERFACES_MAX)
		return -EPROTO;
	/* Entry 0 must be whole before anything can be validated. */
	if (len < PI_OFF_NI + LNET_PING_NI_NID4_SIZE)
		return -EMSGSIZE;
	if (ul_get_64(buf + PI_OFF_NI + PI_NI4_OFF_NID, be) != PI_NID4_LO0)
		return -EPROTO;

	size = PI_OFF_NI + (size_t)nnis4 * LNET_PING_NI_NID4_SIZE;
	if (pi->features & LNET_PING_FEAT_LARGE_ADDR) {
		size_t total = ul_get_32(buf + PI_OFF_NI + PI_NI4_OFF_MSG_SIZE, be) & ~3u;

		/* The total must at least cover the nid4 entries it counts. */
		if (total < size)
			return -EPROTO;
		size = total;
	}
	end = size;
	if (len < size) {
		pi->truncated = true;
		end = len;
	}

	off = PI_OFF_NI;
	for (uint32_t i = 0; i < nnis4; i++) {
		const uint8_t *e = buf + off;

		if (end - off < LNET_PING_NI_NID4_SIZE)
			return (ssize_t)off;	/* truncated inside the list */
		ulnet_nid_from_nid4(ul_get_64(e + PI_NI4_OFF_NID, be), &nid);
		add_ni(pi, &nid, ul_get_32(e + PI_NI4_OFF_STATUS, be),
		       ul_get_32(e + PI_NI4_OFF_MSG_SIZE, be));
		off += LNET_PING_NI_NID4_SIZE;
	}
	if (!(pi->features & LNET_PING_FEAT_LARGE_ADDR))
		return (ssize_t)off;

	/* Large entries until the total size; a tail too short for one is slack. */
	while (size - off >= PI_NIL_MIN_SIZE) {
		const uint8_t *e = buf + off;
		uint8_t raw[ULNET_NID_WIRE_SIZE] = { 0 };
		size_t esz, nbytes;

		if (end - off < PI_NIL_OFF_NID + 1)
			return (ssize_t)off;
		esz = large_entry_size(e[PI_NIL_OFF_NID]);
		if (esz > size - off)
			break;			/* runs past the total: not an entry */
		if (esz > end - off)
			return (ssize_t)off;	/* truncated buffer */
		nbytes = PI_NIL_NID_HDR_SIZE + 4u + e[PI_NIL_OFF_NID];
		/* Like the kernel, skip NIDs we cannot hold or parse (they
		 * still count as listed). */
		if (nbytes <= ULNET_NID_WIRE_SIZE) {
			memcpy(raw, e + PI_NIL_OFF_NID, nbytes);
			if (ulnet_nid_decode(raw, &nid) == 0)
				add_ni(pi, &nid, ul_get_32(e + PI_NIL_OFF_STATUS, be), 0);
			else
				pi->nnis_wire++, pi->nnis_skipped++;
		} else {
			pi->nnis_wire++, pi->nnis_skipped++;
		}
		off += esz;
	}
	return (ssize_t)(pi->truncated ? off : size);
}

bool lnet_ping_info_primary_is_large(const ulnet_nid_t *first_ni)
{
	ulnet_nid4_t nid4;

	return first_ni && ulnet_nid_to_nid4(first_ni, &nid4) != 0;
}

const struct lnet_ping_ni *lnet_ping_info_primary(const struct lnet_ping_info *pi)
{
	unsigned i;

	if (pi->features & LNET_PING_FEAT_PRIMARY_LARGE)
		for (i = 1; i < pi->nnis; i++)
			if (lnet_ping_info_primary_is_large(&pi->nis[i].nid))
				return &pi->nis[i];
	/* no large NID after all: the kernel ignores the flag */
	return pi->nnis > 1 ? &pi->nis[1] : NULL;
}
