/* SPDX-License-Identifier: MIT */
/*
 * pcap.h - a small reader of classic pcap files for the tests: Ethernet,
 * Linux cooked (SLL, SLL2) and raw-IP link types, IPv4/TCP only, with
 * per-direction TCP stream reassembly by sequence number.
 *
 * Bounded: at most PCAP_MAX_CONNS connections, PCAP_MAX_STREAM bytes per
 * direction; malformed records end the parse (cap->truncated) instead of
 * being trusted. Retransmitted and overlapping bytes are taken from the
 * first copy seen; a hole in the sequence space ends the stream (gap).
 */
#ifndef ULNET_TEST_PCAP_H
#define ULNET_TEST_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCAP_MAX_CONNS 256
#define PCAP_MAX_STREAM (64u << 20)
#define PCAP_MAX_SEGS (1u << 20)     /* per direction */

struct pcap_stream {
	uint8_t *data;      /* reassembled bytes (NULL when none) */
	size_t len;
	size_t segs;        /* data-carrying segments seen */
	bool syn;           /* SYN captured: data starts at the true stream start */
	bool gap;           /* bytes missing: data stops before the hole */
};

/* One TCP connection. Endpoint 0 is the SYN sender when the SYN was
 * captured, else the sender of the first packet seen. */
struct pcap_conn {
	uint32_t addr[2];           /* IPv4, host order */
	uint16_t port[2];
	int connector;              /* 0 or 1 when a SYN (no ACK) was seen, else -1 */
	bool rst;                   /* a RST was seen */
	struct pcap_stream dir[2];  /* dir[i]: bytes sent by endpoint i */
};

struct pcap_capture {
	uint32_t linktype;
	size_t npackets;            /* records read */
	size_t ntcp;                /* IPv4/TCP packets among them */
	bool truncated;             /* the file ended inside a record, or was cut at a limit */
	size_t nconns;
	struct pcap_conn *conns;    /* in order of first appearance */
};

/* Parse a pcap image. Returns 0, -EINVAL (not a classic pcap), -ENOTSUP
 * (link type), -ENOMEM or -E2BIG (a limit hit). *cap is valid (maybe empty)
 * on every return and must be freed. */
int pcap_parse(const uint8_t *buf, size_t len, struct pcap_capture *cap);
/* Read and parse a file; -ENOENT if it cannot be read. */
int pcap_load(const char *path, struct pcap_capture *cap);
void pcap_free(struct pcap_capture *cap);

#endif
