/* SPDX-License-Identifier: MIT */
/*
 * ulnet/nid.h - LNet network identifiers: NIDs, nets, PIDs and NID lists.
 *
 * A NID names one network interface: "<address>@<net>", for example
 * "192.168.1.2@tcp", "0@lo", "[2001:db8::1]@tcp1" is NOT accepted (LNet writes
 * IPv6 NIDs bare: "2001:db8::1@tcp"), "12@gni3".
 *
 * Two binary forms exist on the wire:
 *  - nid4: 64 bits, net in bits 63..32, address in bits 31..0;
 *  - large NID: 20 bytes {size, type, net number (BE16), address (16, BE)}.
 * ulnet_nid_t is the host form of the large NID and can hold both.
 *
 * All functions are pure and thread-safe. Errors are negative errno values.
 */
#ifndef ULNET_NID_H
#define ULNET_NID_H

#include "ulnet/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LND (network) types, numbers from the kernel's nidstr.h; never reused. */
enum ulnet_lnd_type {
	ULNET_LND_TCP = 2,   /* socklnd: "tcp" */
	ULNET_LND_O2IB = 5,  /* "o2ib" */
	ULNET_LND_LO = 9,    /* "lo" */
	ULNET_LND_GNI = 13,  /* "gni" */
	ULNET_LND_GIP = 14,  /* "gip" */
	ULNET_LND_PTLF = 15, /* "ptlf" */
	ULNET_LND_KFI = 16,  /* "kfi" */
	ULNET_LND_TOFU = 17, /* reserved, no string form */
	ULNET_LND_EFA = 18,  /* "efa" */
	ULNET_LND_BXI3F = 19,/* "bxi3f" */
	ULNET_LND_ANY = 0xff /* type byte of the large NID "ANY" */
};

typedef uint64_t ulnet_nid4_t;   /* 64-bit NID */
typedef uint32_t ulnet_net_t;    /* (type << 16) | number */
typedef uint32_t ulnet_pid_t;

#define ULNET_NID4_ANY ((ulnet_nid4_t)~0ULL)
#define ULNET_NET_ANY ((ulnet_net_t)~0U)
#define ULNET_PID_ANY ((ulnet_pid_t)~0U)
#define ULNET_PID_LUSTRE ((ulnet_pid_t)12345)
#define ULNET_PID_USERFLAG ((ulnet_pid_t)0x80000000U)
#define ULNET_PID_RESERVED ((ulnet_pid_t)0xf0000000U)

/*
 * Host form of a NID. `size` is the address length minus 4 (0 for IPv4 and
 * numeric addresses, 12 for IPv6); `num` is the net number in host order;
 * `addr` holds the address bytes in network (big-endian) order, unused bytes
 * zero. Numeric addresses (gni, kfi, lo) are 32-bit values stored big-endian
 * in addr[0..3], exactly like an IPv4 address.
 */
typedef struct ulnet_nid {
	uint8_t size;
	uint8_t type;
	uint16_t num;
	uint8_t addr[16];
} ulnet_nid_t;

typedef struct ulnet_process_id {
	ulnet_nid_t nid;
	ulnet_pid_t pid;
} ulnet_process_id_t;

/* Largest formatted NID, including the terminating NUL. */
#define ULNET_NIDSTR_SIZE 64
#define ULNET_NETSTR_SIZE 24

/* Where and why a string failed to parse. */
struct ulnet_parse_err {
	int pos;          /* byte offset in the input of the offending part */
	char msg[120];    /* human-readable reason, e.g. "unknown network type 'tpc'" */
};

/* --- nets ------------------------------------------------------------- */

static inline ulnet_net_t ulnet_mknet(unsigned type, unsigned num)
{
	return ((ulnet_net_t)type << 16) | (num & 0xffff);
}
static inline unsigned ulnet_net_type(ulnet_net_t net) { return (net >> 16) & 0xffff; }
static inline unsigned ulnet_net_num(ulnet_net_t net) { return net & 0xffff; }

/*
 * Parse a net name ("tcp", "tcp0", "o2ib3", "lo"). Returns 0, or -EINVAL with
 * `err` (may be NULL) filled.
 */
ULNET_API int ulnet_net_parse(const char *s, ulnet_net_t *net, struct ulnet_parse_err *err);

/* Format a net ("tcp", "tcp7"). Returns the length written, -ENOSPC if `len`
 * is too small, -EINVAL for an unknown type. */
ULNET_API int ulnet_net_format(ulnet_net_t net, char *buf, size_t len);

/* Name of an LND type ("tcp"), or NULL if it has none. */
ULNET_API const char *ulnet_lnd_type_name(unsigned type);

/* --- NIDs ------------------------------------------------------------- */

/* The NID "ANY" (large form: type 0xff). */
ULNET_API extern const ulnet_nid_t ULNET_NID_ANY;
/* "0@lo". */
ULNET_API extern const ulnet_nid_t ULNET_NID_LO0;

/*
 * Parse "<addr>@<net>". tcp/o2ib/gip/efa addresses are IPv4 dotted quads or
 * IPv6 text (IPv6 yields a large NID, size 12); lo/gni/ptlf/kfi/bxi3f
 * addresses are decimal or 0x-hex numbers. "*" is not a NID (see nidlists).
 * Returns 0, or -EINVAL with `err` (may be NULL) naming what is wrong and where.
 */
ULNET_API int ulnet_nid_parse(const char *s, ulnet_nid_t *nid, struct ulnet_parse_err *err);

/* Format a NID as LNet prints it. Returns the length, or -ENOSPC. */
ULNET_API int ulnet_nid_format(const ulnet_nid_t *nid, char *buf, size_t len);

/* Convenience: format into `buf` (ULNET_NIDSTR_SIZE bytes) and return it;
 * never fails (prints "<bad nid>" for an unformattable NID). */
ULNET_API const char *ulnet_nid_str(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE]);

/* Net of a NID. */
static inline ulnet_net_t ulnet_nid_net(const ulnet_nid_t *nid)
{
	return ulnet_mknet(nid->type, nid->num);
}

/* True if the NID needs the large form (address longer than 4 bytes). */
static inline bool ulnet_nid_is_large(const ulnet_nid_t *nid) { return nid->size != 0; }

/* True if the NID is ANY (large type 0xff or nid4 all-ones). */
ULNET_API bool ulnet_nid_is_any(const ulnet_nid_t *nid);

/* True if both NIDs are the same (all fields). */
ULNET_API bool ulnet_nid_same(const ulnet_nid_t *a, const ulnet_nid_t *b);

/* Order of the 20-byte wire form compared bytewise (the kernel's race
 * resolution order): <0, 0, >0. */
ULNET_API int ulnet_nid_cmp(const ulnet_nid_t *a, const ulnet_nid_t *b);

/* nid4 -> host form (ULNET_NID4_ANY maps to ULNET_NID_ANY). */
ULNET_API void ulnet_nid_from_nid4(ulnet_nid4_t nid4, ulnet_nid_t *nid);

/* Host form -> nid4. Returns 0, or -ERANGE for a large NID (no nid4 form).
 * ANY maps to ULNET_NID4_ANY. */
ULNET_API int ulnet_nid_to_nid4(const ulnet_nid_t *nid, ulnet_nid4_t *nid4);

/* 20-byte wire form <-> host form. decode returns -EINVAL if `size` is not
 * 0 or 12 (unless type is ANY). */
#define ULNET_NID_WIRE_SIZE 20
ULNET_API void ulnet_nid_encode(const ulnet_nid_t *nid, uint8_t out[ULNET_NID_WIRE_SIZE]);
ULNET_API int ulnet_nid_decode(const uint8_t in[ULNET_NID_WIRE_SIZE], ulnet_nid_t *nid);

/* Build a tcp-style NID from an IPv4 address in host order. */
ULNET_API void ulnet_nid_from_ipv4(uint32_t ip_host, ulnet_net_t net, ulnet_nid_t *nid);
/* IPv4 address (host order) of a 4-byte NID. */
ULNET_API uint32_t ulnet_nid_ipv4(const ulnet_nid_t *nid);

/* --- NID lists ---------------------------------------------------------- */

/*
 * A parsed NID expression list, as Lustre writes them: space-separated
 * "<addrrange>@<net>" items where addrrange is "*", a CIDR (a.b.c.d/n or
 * IPv6/n), an IPv6 address, four dotted fields each a number, "*" or an
 * expression list "[a,b-c,d-e/step]", or for numeric nets a number or
 * expression list. Examples: "192.168.[1-10/2].[2,4,6]@tcp", "*@tcp",
 * "[0-3]@gni 10.0.0.1@tcp1".
 */
typedef struct ulnet_nidlist ulnet_nidlist_t;

/* Parse a list. Returns 0 and a new list in *out, -EINVAL with `err` filled,
 * or -ENOMEM. */
ULNET_API int ulnet_nidlist_parse(const char *s, ulnet_nidlist_t **out, struct ulnet_parse_err *err);

/* True if `nid` is matched by any item of the list. */
ULNET_API bool ulnet_nidlist_match(const ulnet_nidlist_t *list, const ulnet_nid_t *nid);

/*
 * Every NID a list names, into `nids` (room for `max`): the items in
 * order, in each the values of a field in order with the leftmost field
 * slowest ("1.1.[1-2].[5,6]@tcp": 1.1.1.5, 1.1.1.6, 1.1.2.5, 1.1.2.6), as
 * user-space libcfs's cfs_expand_nidlist() does for liblnetconfig. Returns
 * the count; -E2BIG past `max`; -EDOM for an item that is no list ("*@tcp",
 * a netmask, an IPv6 address); `err` (may be NULL) names the item.
 */
ULNET_API int ulnet_nidlist_expand(const ulnet_nidlist_t *list, ulnet_nid_t *nids, int max,
			 struct ulnet_parse_err *err);

/* Free a list (NULL is fine). */
ULNET_API void ulnet_nidlist_free(ulnet_nidlist_t *list);

#ifdef __cplusplus
}
#endif
#endif /* ULNET_NID_H */
