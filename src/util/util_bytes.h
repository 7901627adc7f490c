/* SPDX-License-Identifier: MIT */
/*
 * util_bytes.h - explicit little/big-endian loads and stores on byte buffers.
 * Every wire codec goes through these; nothing overlays a struct on bytes.
 * Callers check lengths before calling.
 */
#ifndef ULNET_UTIL_BYTES_H
#define ULNET_UTIL_BYTES_H

#include <stdint.h>
#include <string.h>

/* Each is a memcpy() of the value in wire byte order (a byte swap where the
 * host differs): compilers emit one plain load or store per field, where
 * the byte-by-byte form was not always merged (GCC built a 64-bit field
 * from ~25 shifts and ORs), and every message encodes and decodes headers.
 * A bounded copy of a value, not a struct overlay. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define UL_LE16(v) __builtin_bswap16(v)
#define UL_LE32(v) __builtin_bswap32(v)
#define UL_LE64(v) __builtin_bswap64(v)
#define UL_BE16(v) (v)
#define UL_BE32(v) (v)
#define UL_BE64(v) (v)
#else
#define UL_LE16(v) (v)
#define UL_LE32(v) (v)
#define UL_LE64(v) (v)
#define UL_BE16(v) __builtin_bswap16(v)
#define UL_BE32(v) __builtin_bswap32(v)
#define UL_BE64(v) __builtin_bswap64(v)
#endif

#define UL_BYTES_LOAD(name, type, swap)                 \
	static inline type name(const uint8_t *p)       \
	{                                               \
		type v;                                 \
		memcpy(&v, p, sizeof(v));               \
		return (type)swap(v);                   \
	}
#define UL_BYTES_STORE(name, type, swap)                \
	static inline uint8_t *name(uint8_t *p, type v) \
	{                                               \
		v = (type)swap(v);                      \
		memcpy(p, &v, sizeof(v));               \
		return p + sizeof(v);                   \
	}

UL_BYTES_LOAD(ul_get_le16, uint16_t, UL_LE16)
UL_BYTES_LOAD(ul_get_le32, uint32_t, UL_LE32)
UL_BYTES_LOAD(ul_get_le64, uint64_t, UL_LE64)
UL_BYTES_LOAD(ul_get_be16, uint16_t, UL_BE16)
UL_BYTES_LOAD(ul_get_be32, uint32_t, UL_BE32)
UL_BYTES_LOAD(ul_get_be64, uint64_t, UL_BE64)
UL_BYTES_STORE(ul_put_le16, uint16_t, UL_LE16)
UL_BYTES_STORE(ul_put_le32, uint32_t, UL_LE32)
UL_BYTES_STORE(ul_put_le64, uint64_t, UL_LE64)
UL_BYTES_STORE(ul_put_be16, uint16_t, UL_BE16)
UL_BYTES_STORE(ul_put_be32, uint32_t, UL_BE32)
UL_BYTES_STORE(ul_put_be64, uint64_t, UL_BE64)

/* Loads/stores in a byte order chosen at run time (sender's order on the wire:
 * HELLO, ksock header, ping info). `be` = the buffer is big-endian. */
static inline uint32_t ul_get_32(const uint8_t *p, int be) { return be ? ul_get_be32(p) : ul_get_le32(p); }
static inline uint64_t ul_get_64(const uint8_t *p, int be) { return be ? ul_get_be64(p) : ul_get_le64(p); }
static inline uint8_t *ul_put_32(uint8_t *p, uint32_t v, int be) { return be ? ul_put_be32(p, v) : ul_put_le32(p, v); }
static inline uint8_t *ul_put_64(uint8_t *p, uint64_t v, int be) { return be ? ul_put_be64(p, v) : ul_put_le64(p, v); }

#endif
