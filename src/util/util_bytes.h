/* SPDX-License-Identifier: MIT */
/*
 * util_bytes.h - explicit little/big-endian loads and stores on byte buffers.
 * Every wire codec goes through these; nothing overlays a struct on bytes.
 * Callers check lengths before calling.
 */
#ifndef ULNET_UTIL_BYTES_H
#define ULNET_UTIL_BYTES_H

#include <stdint.h>

static inline uint16_t ul_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t ul_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ul_get_le64(const uint8_t *p)
{
	return (uint64_t)ul_get_le32(p) | (uint64_t)ul_get_le32(p + 4) << 32;
}
static inline uint16_t ul_get_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t ul_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline uint64_t ul_get_be64(const uint8_t *p)
{
	return (uint64_t)ul_get_be32(p) << 32 | (uint64_t)ul_get_be32(p + 4);
}
static inline uint8_t *ul_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
	return p + 2;
}
static inline uint8_t *ul_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
	return p + 4;
}
static inline uint8_t *ul_put_le64(uint8_t *p, uint64_t v)
{
	ul_put_le32(p, (uint32_t)v);
	return ul_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint8_t *ul_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v;
	return p + 2;
}
static inline uint8_t *ul_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
	return p + 4;
}
static inline uint8_t *ul_put_be64(uint8_t *p, uint64_t v)
{
	ul_put_be32(p, (uint32_t)(v >> 32));
	return ul_put_be32(p + 4, (uint32_t)v);
}

/* Loads/stores in a byte order chosen at run time (sender's order on the wire:
 * HELLO, ksock header, ping info). `be` = the buffer is big-endian. */
static inline uint32_t ul_get_32(const uint8_t *p, int be) { return be ? ul_get_be32(p) : ul_get_le32(p); }
static inline uint64_t ul_get_64(const uint8_t *p, int be) { return be ? ul_get_be64(p) : ul_get_le64(p); }
static inline uint8_t *ul_put_32(uint8_t *p, uint32_t v, int be) { return be ? ul_put_be32(p, v) : ul_put_le32(p, v); }
static inline uint8_t *ul_put_64(uint8_t *p, uint64_t v, int be) { return be ? ul_put_be64(p, v) : ul_put_le64(p, v); }

#endif
