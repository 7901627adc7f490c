/* SPDX-License-Identifier: MIT */
/*
 * pcap.c - classic pcap reader and TCP reassembly for the tests.
 *
 * Every length read from the file is checked against what remains before it
 * is used. Segments are collected per direction first and put in order at
 * the end, so out-of-order and retransmitted segments need no special case.
 */
#include "pcap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "util/util_bytes.h"

#define PCAP_GHDR_SIZE 24
#define PCAP_RHDR_SIZE 16

#define LINKTYPE_ETHERNET 1
#define LINKTYPE_RAW 101
#define LINKTYPE_LINUX_SLL 113
#define LINKTYPE_IPV4 228
#define LINKTYPE_LINUX_SLL2 276

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

struct seg {
	uint32_t seq;        /* of the first data byte */
	uint32_t len;
	size_t order;        /* capture order, to keep the first copy first */
	uint8_t *data;
};

struct dir_state {
	struct seg *segs;
	size_t nsegs, cap;
	uint32_t isn;
	bool have_isn;
};

/* Reassembly state beside each public connection. */
struct conn_state {
	struct dir_state d[2];
};

struct parser {
	struct pcap_capture *cap;
	struct conn_state *st;
	size_t conns_cap;
	size_t order;
};

static int find_conn(struct parser *ps, uint32_t saddr, uint16_t sport,
		     uint32_t daddr, uint16_t dport, int *dir)
{
	/* the latest match wins, so a reused 4-tuple maps to its newest conn */
	for (size_t i = ps->cap->nconns; i-- > 0;) {
		struct pcap_conn *c = &ps->cap->conns[i];

		if (c->addr[0] == saddr && c->port[0] == sport &&
		    c->addr[1] == daddr && c->port[1] == dport) {
			*dir = 0;
			return (int)i;
		}
		if (c->addr[1] == saddr && c->port[1] == sport &&
		    c->addr[0] == daddr && c->port[0] == dport) {
			*dir = 1;
			return (int)i;
		}
	}
	return -1;
}

static int new_conn(struct parser *ps, uint32_t saddr, uint16_t sport,
		    uint32_t daddr, uint16_t dport)
{
	struct pcap_capture *cap = ps->cap;
	struct pcap_conn *c;

	if (cap->nconns >= PCAP_MAX_CONNS)
		return -E2BIG;
	if (cap->nconns == ps->conns_cap) {
		size_t n = ps->conns_cap ? 2 * ps->conns_cap : 8;
		struct pcap_conn *nc = realloc(cap->conns, n * sizeof(*nc));
		struct conn_state *ns;

		if (!nc)
			return -ENOMEM;
		cap->conns = nc;
		ns = realloc(ps->st, n * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		ps->st = ns;
		ps->conns_cap = n;
	}
	c = &cap->conns[cap->nconns];
	memset(c, 0, sizeof(*c));
	memset(&ps->st[cap->nconns], 0, sizeof(ps->st[0]));
	c->addr[0] = saddr;
	c->port[0] = sport;
	c->addr[1] = daddr;
	c->port[1] = dport;
	c->connector = -1;
	return (int)cap->nconns++;
}

static int add_seg(struct parser *ps, struct dir_state *d, uint32_t seq,
		   const uint8_t *data, size_t len)
{
	struct seg *s;

	if (d->nsegs >= PCAP_MAX_SEGS)
		return -E2BIG;
	if (d->nsegs == d->cap) {
		size_t n = d->cap ? 2 * d->cap : 16;
		struct seg *ns = realloc(d->segs, n * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		d->segs = ns;
		d->cap = n;
	}
	s = &d->segs[d->nsegs];
	s->data = malloc(len);
	if (!s->data)
		return -ENOMEM;
	memcpy(s->data, data, len);
	s->seq = seq;
	s->len = (uint32_t)len;
	s->order = ps->order++;
	d->nsegs++;
	return 0;
}

static int on_tcp(struct parser *ps, uint32_t saddr, uint32_t daddr,
		  const uint8_t *tcp, size_t len)
{
	uint16_t sport, dport;
	uint32_t seq;
	size_t doff;
	uint8_t flags;
	int ci, dir, rc;
	struct pcap_conn *c;
	struct dir_state *d;

	if (len < 20)
		return 0;			/* not a whole TCP header: ignore */
	sport = ul_get_be16(tcp);
	dport = ul_get_be16(tcp + 2);
	seq = ul_get_be32(tcp + 4);
	doff = (size_t)(tcp[12] >> 4) * 4;
	flags = tcp[13];
	if (doff < 20 || doff > len)
		return 0;

	ci = find_conn(ps, saddr, sport, daddr, dport, &dir);
	/* A fresh SYN on a known tuple whose ISN differs: a new connection. */
	if (ci >= 0 && (flags & TCP_SYN) && !(flags & TCP_ACK)) {
		struct dir_state *od = &ps->st[ci].d[dir];

		if ((od->have_isn && od->isn != seq) || od->nsegs)
			ci = -1;
	}
	if (ci < 0) {
		ci = new_conn(ps, saddr, sport, daddr, dport);
		if (ci < 0)
			return ci;
		dir = 0;
	}
	c = &ps->cap->conns[ci];
	d = &ps->st[ci].d[dir];
	ps->cap->ntcp++;
	if (flags & TCP_RST)
		c->rst = true;
	if (flags & TCP_SYN) {
		d->have_isn = true;
		d->isn = seq;
		c->dir[dir].syn = true;
		if (!(flags & TCP_ACK))
			c->connector = dir;
		seq++;				/* data in a SYN starts after it */
	}
	if (len > doff) {
		rc = add_seg(ps, d, seq, tcp + doff, len - doff);
		if (rc)
			return rc;
		c->dir[dir].segs++;
	}
	return 0;
}

static int on_ipv4(struct parser *ps, const uint8_t *ip, size_t len)
{
	size_t ihl, tot;
	uint16_t frag;

	if (len < 20 || (ip[0] >> 4) != 4)
		return 0;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	tot = ul_get_be16(ip + 2);
	if (ihl < 20 || tot < ihl)
		return 0;
	/* A snapped packet keeps what was captured; an Ethernet pad is cut. */
	if (tot < len)
		len = tot;
	frag = ul_get_be16(ip + 6);
	if (frag & 0x3fff)
		return 0;			/* fragments: not reassembled */
	if (ip[9] != 6)
		return 0;
	return on_tcp(ps, ul_get_be32(ip + 12), ul_get_be32(ip + 16), ip + ihl, len - ihl);
}

static int on_frame(struct parser *ps, const uint8_t *f, size_t len)
{
	uint16_t et;
	size_t off;

	switch (ps->cap->linktype) {
	case LINKTYPE_ETHERNET:
		if (len < 14)
			return 0;
		et = ul_get_be16(f + 12);
		off = 14;
		while ((et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ) && len >= off + 4) {
			et = ul_get_be16(f + off + 2);
			off += 4;
		}
		break;
	case LINKTYPE_LINUX_SLL:
		if (len < 16)
			return 0;
		et = ul_get_be16(f + 14);
		off = 16;
		break;
	case LINKTYPE_LINUX_SLL2:
		if (len < 20)
			return 0;
		et = ul_get_be16(f);
		off = 20;
		break;
	default:	/* raw IP */
		et = ETHERTYPE_IPV4;
		off = 0;
		break;
	}
	if (et != ETHERTYPE_IPV4 || off > len)
		return 0;
	return on_ipv4(ps, f + off, len - off);
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;
	/* relative offsets were stored in seq by finish_dir */
	int32_t dx = (int32_t)x->seq, dy = (int32_t)y->seq;

	if (dx != dy)
		return dx < dy ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Order the segments and lay the bytes end to end from the stream start. */
static int finish_dir(struct dir_state *d, struct pcap_stream *out, bool *truncated)
{
	uint32_t base;
	size_t cur = 0;
	uint8_t *buf = NULL;
	size_t bcap = 0;

	if (!d->nsegs)
		return 0;
	if (d->have_isn) {
		base = d->isn + 1;
	} else {
		/* started mid-stream: the lowest sequence number seen, taken
		 * modulo 2^32 around the first segment */
		int32_t lo = 0;

		base = d->segs[0].seq;
		for (size_t i = 1; i < d->nsegs; i++) {
			int32_t r = (int32_t)(d->segs[i].seq - base);

			if (r < lo)
				lo = r;
		}
		base += (uint32_t)lo;
	}
	for (size_t i = 0; i < d->nsegs; i++)
		d->segs[i].seq -= base;
	qsort(d->segs, d->nsegs, sizeof(d->segs[0]), seg_cmp);

	for (size_t i = 0; i < d->nsegs; i++) {
		struct seg *s = &d->segs[i];
		int64_t start = (int32_t)s->seq, end = start + s->len;
		size_t skip, n;

		if (end <= (int64_t)cur)
			continue;		/* retransmit or before the start */
		if (start > (int64_t)cur) {
			out->gap = true;
			break;
		}
		if ((size_t)end > PCAP_MAX_STREAM) {
			*truncated = true;
			break;
		}
		skip = (size_t)((int64_t)cur - start);	/* bytes we already have */
		n = s->len - skip;
		if (cur + n > bcap) {
			size_t nc = bcap ? bcap : 4096;
			uint8_t *nb;

			while (nc < cur + n)
				nc *= 2;
			nb = realloc(buf, nc);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			bcap = nc;
		}
		memcpy(buf + cur, s->data + skip, n);
		cur += n;
	}
	out->data = buf;
	out->len = cur;
	return 0;
}

static void free_state(struct parser *ps)
{
	for (size_t i = 0; i < ps->cap->nconns; i++)
		for (int j = 0; j < 2; j++) {
			struct dir_state *d = &ps->st[i].d[j];

			for (size_t k = 0; k < d->nsegs; k++)
				free(d->segs[k].data);
			free(d->segs);
		}
	free(ps->st);
	ps->st = NULL;
}

int pcap_parse(const uint8_t *buf, size_t len, struct pcap_capture *cap)
{
	struct parser ps = { .cap = cap };
	uint32_t magic;
	int be, rc = 0;
	size_t off;

	memset(cap, 0, sizeof(*cap));
	if (len < PCAP_GHDR_SIZE)
		return -EINVAL;
	/* µs (a1b2c3d4) or ns (a1b23c4d) timestamps, in either byte order */
	magic = ul_get_le32(buf);
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		be = 0;
	else if (ul_get_be32(buf) == 0xa1b2c3d4u || ul_get_be32(buf) == 0xa1b23c4du)
		be = 1;
	else
		return -EINVAL;		/* pcapng and others are not read */
	cap->linktype = ul_get_32(buf + 20, be) & 0x0fffffff;
	switch (cap->linktype) {
	case LINKTYPE_ETHERNET:
	case LINKTYPE_RAW:
	case LINKTYPE_LINUX_SLL:
	case LINKTYPE_IPV4:
	case LINKTYPE_LINUX_SLL2:
		break;
	default:
		return -ENOTSUP;
	}

	off = PCAP_GHDR_SIZE;
	while (off < len) {
		uint32_t incl;

		if (len - off < PCAP_RHDR_SIZE) {
			cap->truncated = true;
			break;
		}
		incl = ul_get_32(buf + off + 8, be);
		off += PCAP_RHDR_SIZE;
		if (incl > len - off) {
			cap->truncated = true;
			break;
		}
		cap->npackets++;
		rc = on_frame(&ps, buf + off, incl);
		if (rc) {
			cap->truncated = true;
			break;
		}
		off += incl;
	}

	for (size_t i = 0; i < cap->nconns; i++)
		for (int j = 0; j < 2; j++) {
			int r = finish_dir(&ps.st[i].d[j], &cap->conns[i].dir[j], &cap->truncated);

			if (r && !rc)
				rc = r;
		}
	free_state(&ps);
	return rc;
}

int pcap_load(const char *path, struct pcap_capture *cap)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	memset(cap, 0, sizeof(*cap));
	if (tu_read_file(path, &buf, &len))
		return -ENOENT;
	rc = pcap_parse(buf, len, cap);
	free(buf);
	return rc;
}

void pcap_free(struct pcap_capture *cap)
{
	for (size_t i = 0; i < cap->nconns; i++) {
		free(cap->conns[i].dir[0].data);
		free(cap->conns[i].dir[1].data);
	}
	free(cap->conns);
	memset(cap, 0, sizeof(*cap));
}
