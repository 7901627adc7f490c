/* SPDX-License-Identifier: MIT */
/*
 * kpeer.c - the scripted kernel peer (see kpeer.h).
 *
 * Three parts: the script (packet order from a light scan of the pcap
 * records, streams from pcap.c, decoding with our codecs), the live side
 * (sockets, one poll loop, per-connection receive state machines), and the
 * comparison of what ulnet sent against the script.
 */
#include "kpeer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "selftest/srpc_wire.h"
#include "test_util.h"
#include "util/util_bytes.h"

#define KP_ACCEPT_PORT 988
#define KP_DEFAULT_TIMEOUT_MS 5000
#define KP_DEFAULT_QUIET_MS 300
#define KP_MAX_SEGS 8192

enum kp_state { ST_CONNREQ, ST_HELLO, ST_MSGS, ST_DEAD };

struct kp_conn {
	int fd;
	bool active;               /* kpeer dialled it */
	int ctype;                 /* connector's type; SOCKLND_CONN_NONE until known */
	enum kp_state st;
	bool be;                   /* the peer writes big-endian */
	uint16_t lport, rport;
	bool have_acr;
	struct lnet_acceptor_req acr;
	uint8_t *rbuf;
	size_t rlen;
};

/* ---------------------------------------------------------------------- */
/* helpers                                                                  */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool verbose(const struct kpeer *kp)
{
	return kp->conf.verbose || getenv("KPEER_VERBOSE");
}

static void kp_log(const struct kpeer *kp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void kp_log(const struct kpeer *kp, const char *fmt, ...)
{
	va_list ap;

	if (!verbose(kp))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "kpeer: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Record the first failure only. */
static int kp_fail(struct kpeer *kp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int kp_fail(struct kpeer *kp, const char *fmt, ...)
{
	va_list ap;

	if (!kp->err[0]) {
		va_start(ap, fmt);
		vsnprintf(kp->err, sizeof(kp->err), fmt, ap);
		va_end(ap);
		kp_log(kp, "FAIL: %s", kp->err);
	}
	return -1;
}

static void kp_note(struct kpeer *kp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kp_note(struct kpeer *kp, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (strstr(kp->notes, line))
		return;
	if (strlen(kp->notes) + strlen(line) + 2 < sizeof(kp->notes)) {
		strcat(kp->notes, line);
		strcat(kp->notes, "\n");
	}
}

ulnet_nid_t kpeer_tcp_nid(uint32_t ip)
{
	ulnet_nid_t nid;

	ulnet_nid_from_ipv4(ip, ulnet_mknet(ULNET_LND_TCP, 0), &nid);
	return nid;
}

static bool nid_ipv4(const ulnet_nid_t *nid, uint32_t *ip)
{
	if (nid->size != 0 || nid->type != ULNET_LND_TCP)
		return false;
	*ip = ul_get_be32(nid->addr);
	return true;
}

/* Capture IPv4 -> live IPv4: the two nodes', then conf.map's. */
static bool map_ip(const struct kpeer *kp, uint32_t cap, uint32_t *live)
{
	if (cap == kp->conf.cap_kpeer_ip) {
		*live = kp->conf.kpeer_ip;
		return true;
	}
	if (cap == kp->conf.cap_ulnet_ip) {
		*live = kp->conf.ulnet_ip;
		return true;
	}
	for (unsigned i = 0; i < kp->conf.nmap && i < KPEER_MAX_MAP; i++)
		if (cap == kp->conf.map[i].cap_ip) {
			*live = kp->conf.map[i].live_ip;
			return true;
		}
	return false;
}

/* Capture NID -> live NID: the tcp NIDs of the nodes mapped (map_ip), on
 * their captured net; the rest (0@lo, nodes not mapped) is kept. */
static ulnet_nid_t map_nid(const struct kpeer *kp, const ulnet_nid_t *cap)
{
	uint32_t ip, live;

	if (nid_ipv4(cap, &ip) && map_ip(kp, ip, &live)) {
		ulnet_nid_t nid;

		ulnet_nid_from_ipv4(live, ulnet_nid_net(cap), &nid);
		return nid;
	}
	return *cap;
}

/* A node's NID on the hop's net (kpeer.net), capture address. */
static ulnet_nid_t hop_nid(const struct kpeer *kp, uint32_t ip)
{
	ulnet_nid_t nid;

	ulnet_nid_from_ipv4(ip, kp->net, &nid);
	return nid;
}

static const char *nidstr(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE])
{
	return ulnet_nid_str(nid, buf);
}

static const char *ctype_name(int ctype)
{
	switch (ctype) {
	case SOCKLND_CONN_ANY: return "ANY";
	case SOCKLND_CONN_CONTROL: return "CONTROL";
	case SOCKLND_CONN_BULK_IN: return "BULK_IN";
	case SOCKLND_CONN_BULK_OUT: return "BULK_OUT";
	case SOCKLND_CONN_NONE: return "NONE";
	default: return "?";
	}
}

static const char *type_name(uint32_t t)
{
	static const char *n[] = { "ACK", "PUT", "GET", "REPLY", "HELLO" };

	return t < 5 ? n[t] : "?";
}

static const char *kind_name(const struct kpeer_msg *m)
{
	switch (m->kind) {
	case KP_CONNREQ: return "CONNREQ";
	case KP_HELLO: return "HELLO";
	case KP_NOOP: return "NOOP";
	default: return type_name(m->hdr.type);
	}
}

void kpeer_describe(const struct kpeer *kp, const struct kpeer_msg *m, char *buf, size_t len)
{
	(void)kp;
	snprintf(buf, len, "msg %u %s (C%u %s, %s%s, t=%.6f)", m->idx, kind_name(m),
		 m->cap_conn, ctype_name(m->ctype), m->from_kpeer ? "kernel->ulnet" : "ulnet->kernel",
		 m->synth ? ", made up" : "", m->t);
}

/* ---------------------------------------------------------------------- */
/* the script                                                               */

struct seg_ref {
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint32_t seq;              /* of the first data byte */
	uint32_t len;
	bool syn;
	uint64_t pkt;
	double t;
};

struct scan {
	struct seg_ref *segs;
	size_t nsegs;
	double t0;
};

/* A light pass over the records: where and when each data segment was. */
static int scan_pcap(const uint8_t *buf, size_t len, struct scan *sc)
{
	uint32_t magic, linktype;
	bool swap, nsec;
	size_t off = 24;
	uint64_t pkt = 0;

	if (len < 24)
		return -EINVAL;
	magic = ul_get_le32(buf);
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du) {
		swap = false;
	} else if (ul_get_be32(buf) == 0xa1b2c3d4u || ul_get_be32(buf) == 0xa1b23c4du) {
		swap = true;
		magic = ul_get_be32(buf);
	} else {
		return -EINVAL;
	}
	nsec = magic == 0xa1b23c4du;
	linktype = swap ? ul_get_be32(buf + 20) : ul_get_le32(buf + 20);
	if (linktype != 1 && linktype != 101)
		return -ENOTSUP;
	sc->segs = calloc(KP_MAX_SEGS, sizeof(*sc->segs));
	if (!sc->segs)
		return -ENOMEM;
	while (off + 16 <= len && sc->nsegs < KP_MAX_SEGS) {
		const uint8_t *r = buf + off;
		uint32_t sec = swap ? ul_get_be32(r) : ul_get_le32(r);
		uint32_t frac = swap ? ul_get_be32(r + 4) : ul_get_le32(r + 4);
		uint32_t incl = swap ? ul_get_be32(r + 8) : ul_get_le32(r + 8);
		const uint8_t *f = r + 16, *ip, *tcp;
		size_t flen = incl, ihl, tot, doff;
		double t = sec + frac / (nsec ? 1e9 : 1e6);

		if (off + 16 + incl > len)
			break;
		off += 16 + incl;
		if (pkt++ == 0)
			sc->t0 = t;
		ip = f;
		if (linktype == 1) {
			uint16_t et;
			size_t eo = 14;

			if (flen < 14)
				continue;
			et = ul_get_be16(f + 12);
			while ((et == 0x8100 || et == 0x88a8) && flen >= eo + 4) {
				et = ul_get_be16(f + eo + 2);
				eo += 4;
			}
			if (et != 0x0800 || eo > flen)
				continue;
			ip = f + eo;
			flen -= eo;
		}
		if (flen < 20 || (ip[0] >> 4) != 4 || ip[9] != 6)
			continue;
		ihl = (size_t)(ip[0] & 15) * 4;
		tot = ul_get_be16(ip + 2);
		if (ihl < 20 || tot < ihl)
			continue;
		if (tot < flen)
			flen = tot;
		if (flen < ihl + 20)
			continue;
		tcp = ip + ihl;
		doff = (size_t)(tcp[12] >> 4) * 4;
		if (doff < 20 || ihl + doff > flen)
			continue;
		{
			struct seg_ref *s = &sc->segs[sc->nsegs++];

			s->saddr = ul_get_be32(ip + 12);
			s->daddr = ul_get_be32(ip + 16);
			s->sport = ul_get_be16(tcp);
			s->dport = ul_get_be16(tcp + 2);
			s->syn = tcp[13] & 0x02;
			s->seq = ul_get_be32(tcp + 4) + (s->syn ? 1 : 0);
			s->len = (uint32_t)(flen - ihl - doff);
			s->pkt = pkt;
			s->t = t;
		}
	}
	return 0;
}

/* Packet order of byte `off` of the stream from (saddr, sport). */
static void byte_when(const struct scan *sc, const struct pcap_conn *c, int dir, size_t off,
		      uint64_t *pkt, double *t)
{
	uint32_t base = 0;
	bool have = false;

	/* the stream's base: after the SYN, or the lowest seq seen */
	for (size_t i = 0; i < sc->nsegs; i++) {
		const struct seg_ref *s = &sc->segs[i];

		if (s->saddr != c->addr[dir] || s->sport != c->port[dir] ||
		    s->daddr != c->addr[!dir] || s->dport != c->port[!dir])
			continue;
		if (s->syn) {
			base = s->seq;
			have = true;
			break;
		}
		if (!s->len)
			continue;
		if (!have || (int32_t)(s->seq - base) < 0)
			base = s->seq;
		have = true;
	}
	*pkt = ~0ULL;
	*t = 0;
	for (size_t i = 0; i < sc->nsegs; i++) {
		const struct seg_ref *s = &sc->segs[i];
		int64_t start;

		if (s->saddr != c->addr[dir] || s->sport != c->port[dir] ||
		    s->daddr != c->addr[!dir] || s->dport != c->port[!dir] || !s->len)
			continue;
		start = (int32_t)(s->seq - base);
		if ((int64_t)off >= start && (int64_t)off < start + s->len) {
			*pkt = s->pkt;
			*t = s->t - sc->t0;
			return;
		}
	}
}

static struct kpeer_msg *new_msg(struct kpeer *kp)
{
	struct kpeer_msg *m;

	if (kp->nmsgs >= KPEER_MAX_MSGS)
		return NULL;
	m = &kp->msgs[kp->nmsgs++];
	memset(m, 0, sizeof(*m));
	return m;
}

/* The connector's type from its source port, for a stream caught after its
 * HELLO (the kernel counts down from 1023: CONTROL, BULK_IN, BULK_OUT). */
static int ctype_from_port(uint16_t port)
{
	switch (port) {
	case 1023: return SOCKLND_CONN_CONTROL;
	case 1022: return SOCKLND_CONN_BULK_IN;
	case 1021: return SOCKLND_CONN_BULK_OUT;
	default: return SOCKLND_CONN_NONE;
	}
}

static int decode_dir(struct kpeer *kp, const struct scan *sc, unsigned ci, int dir,
		      int *ctype, bool connector)
{
	const struct pcap_conn *c = &kp->cap.conns[ci];
	const struct pcap_stream *s = &c->dir[dir];
	const uint8_t *p = s->data;
	size_t len = s->len, off = 0;
	bool from_kpeer = c->addr[dir] == kp->conf.cap_kpeer_ip;
	bool be = false;
	ssize_t rc;
	unsigned rank = 0;

	if (s->gap)
		return kp_fail(kp, "C%u: a hole in the capture's stream", ci + 1);
	while (off < len) {
		struct kpeer_msg *m = new_msg(kp);

		if (!m)
			return kp_fail(kp, "capture: more than %d messages", KPEER_MAX_MSGS);
		m->cap_conn = ci + 1;
		m->from_kpeer = from_kpeer;
		m->from_connector = connector;
		byte_when(sc, c, dir, off, &m->order, &m->t);
		m->order = (m->order << 16) | rank++;
		if (s->syn && off == 0 && connector) {
			m->kind = KP_CONNREQ;
			rc = lnet_acceptor_req_decode(p, len, &m->acr);
		} else if (s->syn && (off == 0 || (connector && m[-1].kind == KP_CONNREQ &&
						     m[-1].cap_conn == ci + 1))) {
			m->kind = KP_HELLO;
			rc = ksock_hello_decode(p + off, len - off, &m->hello);
			if (rc > 0) {
				be = m->hello.swapped;
				if (m->hello.version != KSOCK_PROTO_V3)
					return kp_fail(kp, "C%u: HELLO V%u, only V3 is scripted",
						       ci + 1, m->hello.version);
				if (connector)
					*ctype = m->hello.ctype;
			}
		} else {
			rc = ksock_msg_hdr_decode(p + off, len - off, be, &m->ksm);
			if (rc == KSOCK_MSG_HDR_SIZE && m->ksm.type == KSOCK_MSG_LNET) {
				ssize_t h = lnet_hdr_decode_nid4(p + off + rc, len - off - (size_t)rc,
								 &m->hdr);
				m->kind = KP_LNET;
				if (h < 0) {
					rc = h;
				} else if (m->hdr.payload_length > len - off - (size_t)rc - (size_t)h) {
					rc = -EMSGSIZE;
				} else {
					m->payload = p + off + rc + h;
					rc += h + m->hdr.payload_length;
					if (m->hdr.payload_length >= LNET_PING_INFO_HDR_SIZE &&
					    ul_get_le32(m->payload) == LNET_PROTO_PING_MAGIC) {
						m->pi.nis = m->pi_nis;
						m->pi.max_nis = KPEER_PI_MAX;
						if (lnet_ping_info_decode(m->payload,
									  m->hdr.payload_length,
									  &m->pi) > 0)
							m->has_pi = true;
					}
				}
			} else if (rc == KSOCK_MSG_HDR_SIZE) {
				m->kind = KP_NOOP;
				if (m->ksm.type != KSOCK_MSG_NOOP)
					return kp_fail(kp, "C%u: ksock type 0x%x", ci + 1, m->ksm.type);
			}
		}
		if (rc <= 0)
			return kp_fail(kp, "C%u: cannot decode the capture at byte %zu (%zd)",
				       ci + 1, off, rc);
		off += (size_t)rc;
	}
	return 0;
}

static int order_cmp(const void *a, const void *b)
{
	const struct kpeer_msg *x = a, *y = b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->cap_conn < y->cap_conn ? -1 : x->cap_conn > y->cap_conn;
}

/* The standard handshake of a stream caught after it. */
static int synth_handshake(struct kpeer *kp, unsigned cap_conn, int ctype, uint32_t conn_ip,
			   uint32_t lis_ip, uint64_t rank)
{
	bool kp_conn = conn_ip == kp->conf.cap_kpeer_ip;
	struct kpeer_msg *m[3];

	for (int i = 0; i < 3; i++) {
		m[i] = new_msg(kp);
		if (!m[i])
			return kp_fail(kp, "capture: more than %d messages", KPEER_MAX_MSGS);
		m[i]->cap_conn = cap_conn;
		m[i]->ctype = ctype;
		m[i]->synth = true;
		m[i]->order = rank * 4 + (uint64_t)i;   /* before every real packet (pkt >= 1) */
		m[i]->from_connector = i < 2;
		m[i]->from_kpeer = (i < 2) == kp_conn;
		m[i]->t = 0;
	}
	m[0]->kind = KP_CONNREQ;
	m[0]->acr.version = 1;
	m[0]->acr.target = hop_nid(kp, lis_ip);
	for (int i = 1; i < 3; i++) {
		struct ksock_hello *h = &m[i]->hello;

		m[i]->kind = KP_HELLO;
		h->version = KSOCK_PROTO_V3;
		h->src_nid = hop_nid(kp, i == 1 ? conn_ip : lis_ip);
		h->dst_nid = hop_nid(kp, i == 1 ? lis_ip : conn_ip);
		h->src_pid = ULNET_PID_LUSTRE;
		h->dst_pid = 0;
		h->src_incarnation = 1;
		h->ctype = i == 1 ? ctype : (ctype == SOCKLND_CONN_BULK_IN ? SOCKLND_CONN_BULK_OUT :
					     ctype == SOCKLND_CONN_BULK_OUT ? SOCKLND_CONN_BULK_IN :
					     ctype);
	}
	return 0;
}

/* The hop's net: that of the first NID of kpeer's node in the script
 * (a HELLO, an acceptor request's target or an LNet header; routed-ping.br1
 * is on tcp1), else tcp. Made-up handshakes use it. */
static ulnet_net_t find_hop_net(const struct kpeer *kp)
{
	for (unsigned i = 0; i < kp->nmsgs; i++) {
		const struct kpeer_msg *m = &kp->msgs[i];
		const ulnet_nid_t *n[2] = { NULL, NULL };
		uint32_t ip;

		if (m->kind == KP_HELLO) {
			n[0] = &m->hello.src_nid;
			n[1] = &m->hello.dst_nid;
		} else if (m->kind == KP_CONNREQ) {
			n[0] = &m->acr.target;
		} else if (m->kind == KP_LNET) {
			n[0] = &m->hdr.src_nid;
			n[1] = &m->hdr.dest_nid;
		}
		for (int j = 0; j < 2; j++)
			if (n[j] && nid_ipv4(n[j], &ip) &&
			    (ip == kp->conf.cap_kpeer_ip || ip == kp->conf.cap_ulnet_ip))
				return ulnet_nid_net(n[j]);
	}
	return ulnet_mknet(ULNET_LND_TCP, 0);
}

/* A user-space ulnet dials CONTROL alone (docs/socklnd.md): the other
 * conns that ulnet's side dialled in the capture lose their handshakes,
 * and anything else they carried goes on that CONTROL conn. */
static void userspace_control_only(struct kpeer *kp)
{
	unsigned ctl = 0, n = 0;

	for (unsigned i = 0; i < kp->nmsgs && !ctl; i++) {
		const struct kpeer_msg *m = &kp->msgs[i];

		if (m->from_connector != m->from_kpeer && m->ctype == SOCKLND_CONN_CONTROL)
			ctl = m->cap_conn;
	}
	for (unsigned i = 0; i < kp->nmsgs; i++) {
		struct kpeer_msg *m = &kp->msgs[i];

		if (m->from_connector != m->from_kpeer && m->ctype != SOCKLND_CONN_CONTROL) {
			if (m->kind == KP_CONNREQ || m->kind == KP_HELLO || !ctl)
				continue;
			m->cap_conn = ctl;
			m->ctype = SOCKLND_CONN_CONTROL;
		}
		if (n != i)
			kp->msgs[n] = *m;   /* pi.nis is set again after the sort */
		n++;
	}
	kp->nmsgs = n;
}

static bool is_keepalive(const struct ksock_msg_hdr *k)
{
	return k->type == KSOCK_MSG_NOOP && k->zc_cookies[0] == 0 &&
	       k->zc_cookies[1] == KSOCK_KEEPALIVE_COOKIE;
}

/* conf.aside_keepalive: ulnet's side's keepalives leave the script. */
static void drop_ulnet_keepalives(struct kpeer *kp)
{
	unsigned n = 0;

	for (unsigned i = 0; i < kp->nmsgs; i++) {
		struct kpeer_msg *m = &kp->msgs[i];

		if (!m->from_kpeer && m->kind == KP_NOOP && is_keepalive(&m->ksm))
			continue;
		if (n != i)
			kp->msgs[n] = *m;   /* pi.nis is set again after the sort */
		n++;
	}
	kp->nmsgs = n;
}

int kpeer_load(struct kpeer *kp, const struct kpeer_conf *conf)
{
	struct scan sc = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	int ctypes[PCAP_MAX_CONNS];
	bool midstream = false;
	int rc = -1;

	memset(kp, 0, sizeof(*kp));
	kp->conf = *conf;
	kp->lfd = -1;
	if (!kp->conf.timeout_ms)
		kp->conf.timeout_ms = KP_DEFAULT_TIMEOUT_MS;
	if (!kp->conf.quiet_ms)
		kp->conf.quiet_ms = KP_DEFAULT_QUIET_MS;
	kp->next_port = 1023;
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		kp->incarnation = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
	kp->msgs = calloc(KPEER_MAX_MSGS, sizeof(*kp->msgs));
	kp->conns = calloc(KPEER_MAX_CONNS, sizeof(*kp->conns));
	if (!kp->msgs || !kp->conns)
		return kp_fail(kp, "out of memory");
	if (tu_read_file(conf->pcap, &buf, &len))
		return kp_fail(kp, "cannot read %s", conf->pcap);
	if (pcap_parse(buf, len, &kp->cap) || kp->cap.truncated) {
		kp_fail(kp, "%s: not a whole pcap", conf->pcap);
		goto out;
	}
	if (scan_pcap(buf, len, &sc)) {
		kp_fail(kp, "%s: cannot scan the records", conf->pcap);
		goto out;
	}
	kp->cap_nconns = (unsigned)kp->cap.nconns;
	kp->cap_t0 = sc.t0;
	for (unsigned ci = 0; ci < kp->cap.nconns; ci++) {
		const struct pcap_conn *c = &kp->cap.conns[ci];
		int conn = c->connector >= 0 ? c->connector : (c->port[0] == KP_ACCEPT_PORT);
		unsigned first = kp->nmsgs;

		ctypes[ci] = SOCKLND_CONN_NONE;
		if (!c->dir[0].len && !c->dir[1].len)
			continue;     /* refused or empty: no messages */
		if (!c->dir[conn].syn) {
			midstream = true;
			ctypes[ci] = ctype_from_port(c->port[conn]);
		}
		if (decode_dir(kp, &sc, ci, conn, &ctypes[ci], true) ||
		    decode_dir(kp, &sc, ci, !conn, &ctypes[ci], false))
			goto out;
		for (unsigned i = first; i < kp->nmsgs; i++)
			kp->msgs[i].ctype = ctypes[ci];
		if (ctypes[ci] == SOCKLND_CONN_NONE) {
			kp_fail(kp, "C%u: connection type unknown", ci + 1);
			goto out;
		}
	}
	kp->net = find_hop_net(kp);
	if (midstream) {
		/* The kernel's three connections: made-up handshakes for the
		 * types the capture caught mid-stream or did not see at all. */
		static const int std[3] = { SOCKLND_CONN_CONTROL, SOCKLND_CONN_BULK_IN,
					    SOCKLND_CONN_BULK_OUT };
		uint32_t conn_ip = 0, lis_ip = 0;
		unsigned extra = kp->cap_nconns;

		for (unsigned ci = 0; ci < kp->cap.nconns; ci++) {
			const struct pcap_conn *c = &kp->cap.conns[ci];
			int conn = c->connector >= 0 ? c->connector : (c->port[0] == KP_ACCEPT_PORT);

			if (c->dir[0].len || c->dir[1].len) {
				conn_ip = c->addr[conn];
				lis_ip = c->addr[!conn];
				break;
			}
		}
		for (int k = 0; k < 3; k++) {
			unsigned cap_conn = 0;
			bool has_hs = false;

			for (unsigned ci = 0; ci < kp->cap.nconns; ci++)
				if (ctypes[ci] == std[k]) {
					cap_conn = ci + 1;
					has_hs = kp->cap.conns[ci].dir[0].syn;
				}
			if (has_hs)
				continue;
			if (!cap_conn)
				cap_conn = ++extra;
			if (synth_handshake(kp, cap_conn, std[k], conn_ip, lis_ip, (uint64_t)k))
				goto out;
		}
		kp->cap_nconns = extra;
	}
	if (kp->conf.ulnet_userspace)
		userspace_control_only(kp);
	if (kp->conf.aside_keepalive)
		drop_ulnet_keepalives(kp);
	qsort(kp->msgs, kp->nmsgs, sizeof(*kp->msgs), order_cmp);
	for (unsigned i = 0; i < kp->nmsgs; i++) {
		kp->msgs[i].idx = i;
		kp->msgs[i].pi.nis = kp->msgs[i].pi_nis;   /* moved by the sort */
	}
	if (!kp->conf.limit || kp->conf.limit > kp->nmsgs)
		kp->conf.limit = kp->nmsgs;
	if (verbose(kp)) {
		for (unsigned i = 0; i < kp->nmsgs; i++) {
			char d[160];

			kpeer_describe(kp, &kp->msgs[i], d, sizeof(d));
			kp_log(kp, "script %s%s", d,
			       i >= kp->conf.limit ? " (not played)" : "");
		}
	}
	rc = 0;
out:
	free(sc.segs);
	free(buf);
	return rc;
}

int kpeer_find(const struct kpeer *kp, unsigned from,
	       bool (*pred)(const struct kpeer_msg *m, void *arg), void *arg)
{
	for (unsigned i = from; i < kp->nmsgs; i++)
		if (pred(&kp->msgs[i], arg))
			return (int)i;
	return -1;
}

/* ---------------------------------------------------------------------- */
/* wire handles                                                             */

static bool wmd_eq(const lnet_wire_handle_t *a, const lnet_wire_handle_t *b)
{
	return a->wh_interface_cookie == b->wh_interface_cookie &&
	       a->wh_object_cookie == b->wh_object_cookie;
}

static bool wmd_none(const lnet_wire_handle_t *a)
{
	return a->wh_interface_cookie == ~0ULL && a->wh_object_cookie == ~0ULL;
}

static const lnet_wire_handle_t *wmd_lookup(const struct kpeer *kp, const lnet_wire_handle_t *cap)
{
	for (unsigned i = 0; i < kp->nwmd; i++)
		if (wmd_eq(&kp->wmd[i].cap, cap))
			return &kp->wmd[i].live;
	return NULL;
}

static void wmd_learn(struct kpeer *kp, const lnet_wire_handle_t *cap, const lnet_wire_handle_t *live)
{
	if (wmd_lookup(kp, cap) || kp->nwmd >= sizeof(kp->wmd) / sizeof(kp->wmd[0]))
		return;
	kp->wmd[kp->nwmd].cap = *cap;
	kp->wmd[kp->nwmd].live = *live;
	kp->nwmd++;
}

/* The handles of a message: pointers into the union, by type. */
static lnet_wire_handle_t *hdr_wmd(struct lnet_hdr *h)
{
	switch (h->type) {
	case ULNET_MSG_PUT: return &h->msg.put.ack_wmd;
	case ULNET_MSG_GET: return &h->msg.get.return_wmd;
	case ULNET_MSG_ACK: return &h->msg.ack.dst_wmd;
	case ULNET_MSG_REPLY: return &h->msg.reply.dst_wmd;
	default: return NULL;
	}
}

/* ---------------------------------------------------------------------- */
/* sockets                                                                  */

static struct kp_conn *conn_by_ctype(struct kpeer *kp, int ctype)
{
	for (unsigned i = 0; i < kp->nconns; i++)
		if (kp->conns[i].st != ST_DEAD && kp->conns[i].ctype == ctype)
			return &kp->conns[i];
	return NULL;
}

static struct kp_conn *conn_add(struct kpeer *kp, int fd, bool active)
{
	struct kp_conn *c;
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int one = 1;

	if (kp->nconns >= KPEER_MAX_CONNS) {
		close(fd);
		kp_fail(kp, "more than %d connections", KPEER_MAX_CONNS);
		return NULL;
	}
	c = &kp->conns[kp->nconns++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->active = active;
	c->ctype = SOCKLND_CONN_NONE;
	c->st = active ? ST_HELLO : ST_CONNREQ;
	c->rbuf = malloc(KPEER_RBUF);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!getsockname(fd, (struct sockaddr *)&a, &al))
		c->lport = ntohs(a.sin_port);
	al = sizeof(a);
	if (!getpeername(fd, (struct sockaddr *)&a, &al))
		c->rport = ntohs(a.sin_port);
	return c;
}

static void conn_kill(struct kp_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->st = ST_DEAD;
}

static int send_all(struct kpeer *kp, struct kp_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t end = now_ms() + (uint64_t)kp->conf.timeout_ms;

	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR) && now_ms() < end) {
			struct pollfd pf = { .fd = c->fd, .events = POLLOUT };

			poll(&pf, 1, 50);
			continue;
		}
		return kp_fail(kp, "send on %s connection (port %u): %s", ctype_name(c->ctype),
			       c->lport, n < 0 ? strerror(errno) : "timed out");
	}
	return 0;
}

/* Dial ulnet's acceptor as the kernel does: bound to our address and, when
 * privileged, to a port counted down from 1023. */
static struct kp_conn *dial(struct kpeer *kp)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
	int fd = -1, one = 1;
	uint64_t end = now_ms() + (uint64_t)kp->conf.timeout_ms;

	src.sin_addr.s_addr = htonl(kp->conf.kpeer_ip);
	dst.sin_addr.s_addr = htonl(kp->conf.ulnet_ip);
	dst.sin_port = htons(kp->conf.port);
	for (int tries = 0; tries < 512; tries++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		src.sin_port = 0;
		if (kp->conf.kpeer_privileged) {
			if (kp->next_port < 512) {
				close(fd);
				fd = -1;
				break;
			}
			src.sin_port = htons(kp->next_port--);
		}
		if (bind(fd, (struct sockaddr *)&src, sizeof(src))) {
			close(fd);
			fd = -1;
			if (errno == EADDRINUSE && kp->conf.kpeer_privileged)
				continue;
			kp_fail(kp, "bind: %s", strerror(errno));
			return NULL;
		}
		fcntl(fd, F_SETFL, O_NONBLOCK);
		if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) && errno != EINPROGRESS) {
			int e = errno;

			close(fd);
			fd = -1;
			if (e == EADDRNOTAVAIL && kp->conf.kpeer_privileged)
				continue;
			kp_fail(kp, "connect to ulnet's acceptor: %s", strerror(e));
			return NULL;
		}
		{
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			int err = 0;
			socklen_t el = sizeof(err);
			int left = (int)(end > now_ms() ? end - now_ms() : 0);

			if (poll(&pf, 1, left) != 1 ||
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
				close(fd);
				kp_fail(kp, "connect to ulnet's acceptor: %s",
					err ? strerror(err) : "timed out");
				return NULL;
			}
		}
		return conn_add(kp, fd, true);
	}
	kp_fail(kp, "no source port to dial from");
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* comparing what ulnet sent                                                */

struct cmp {
	struct kpeer *kp;
	const struct kpeer_msg *m;
	int bad;
};

static void cmp_fail(struct cmp *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmp_fail(struct cmp *x, const char *fmt, ...)
{
	char what[300];
	va_list ap;

	if (x->bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	kp_fail(x->kp, "msg %u %s (C%u %s%s): %s", x->m->idx, kind_name(x->m), x->m->cap_conn,
		ctype_name(x->m->ctype), x->m->synth ? ", made-up handshake" : "", what);
}

static void cmp_u64(struct cmp *x, const char *field, uint64_t live, uint64_t cap)
{
	if (live != cap)
		cmp_fail(x, "%s %llu != %llu (0x%llx != 0x%llx)", field, (unsigned long long)live,
			 (unsigned long long)cap, (unsigned long long)live, (unsigned long long)cap);
}

static void cmp_nid(struct cmp *x, const char *field, const ulnet_nid_t *live, const ulnet_nid_t *cap)
{
	ulnet_nid_t want = map_nid(x->kp, cap);
	char a[ULNET_NIDSTR_SIZE], b[ULNET_NIDSTR_SIZE], c[ULNET_NIDSTR_SIZE];

	if (!ulnet_nid_same(live, &want))
		cmp_fail(x, "%s %s != %s (capture %s)", field, nidstr(live, a), nidstr(&want, b),
			 nidstr(cap, c));
}

/* ulnet's own PID: the capture's, with the user-space flag when ulnet has
 * no privileged port. */
static void cmp_own_pid(struct cmp *x, const char *field, uint32_t live, uint32_t cap)
{
	uint32_t want = cap;

	if (x->kp->conf.ulnet_userspace && cap != 0) {
		want = cap | ULNET_PID_USERFLAG;
		kp_note(x->kp, "ulnet is a user-space peer (no privileged port): its PID is "
			       "0x%x where the kernel wrote %u, as expected", want, cap);
	}
	cmp_u64(x, field, live, want);
}

/* kpeer's PID as ulnet writes it: the capture's, or, when kpeer dialled
 * from an unprivileged port, that port | 0x80000000 (ulnet's view of a
 * user-space peer). */
static void cmp_peer_pid(struct cmp *x, const char *field, uint32_t live, uint32_t cap)
{
	if (!x->kp->conf.kpeer_privileged &&
	    (live & ULNET_PID_USERFLAG) && cap != 0) {
		kp_note(x->kp, "kpeer dials from unprivileged ports: ulnet addresses it as "
			       "port|0x80000000 (0x%x) where the kernel wrote %u, as expected",
			live, cap);
		return;
	}
	cmp_u64(x, field, live, cap);
}

static void cmp_wmd(struct cmp *x, const char *field, const lnet_wire_handle_t *live,
		    const lnet_wire_handle_t *cap)
{
	const lnet_wire_handle_t *want = wmd_lookup(x->kp, cap);

	if (x->kp->conf.forwarded) {
		/* the handle is the far end's, as the other hop's kpeer sent it */
		if (!wmd_eq(live, cap))
			cmp_fail(x, "%s 0x%llx:0x%llx != 0x%llx:0x%llx (forwarded: the sender's "
				    "handle, as captured)", field,
				 (unsigned long long)live->wh_interface_cookie,
				 (unsigned long long)live->wh_object_cookie,
				 (unsigned long long)cap->wh_interface_cookie,
				 (unsigned long long)cap->wh_object_cookie);
		else if (!wmd_none(cap))
			wmd_learn(x->kp, cap, live);
		return;
	}
	if (wmd_none(cap)) {
		if (!wmd_none(live))
			cmp_fail(x, "%s 0x%llx:0x%llx != none (all-ones)", field,
				 (unsigned long long)live->wh_interface_cookie,
				 (unsigned long long)live->wh_object_cookie);
		return;
	}
	if (want) {
		/* an echo of a handle we sent, or one ulnet used before */
		if (!wmd_eq(live, want))
			cmp_fail(x, "%s 0x%llx:0x%llx != 0x%llx:0x%llx (echo)", field,
				 (unsigned long long)live->wh_interface_cookie,
				 (unsigned long long)live->wh_object_cookie,
				 (unsigned long long)want->wh_interface_cookie,
				 (unsigned long long)want->wh_object_cookie);
		return;
	}
	if (wmd_none(live)) {
		cmp_fail(x, "%s none (all-ones) where the kernel gave a handle", field);
		return;
	}
	wmd_learn(x->kp, cap, live);
}

static void cmp_ping_info(struct cmp *x, const uint8_t *payload, size_t len)
{
	const struct kpeer_msg *m = x->m;
	struct lnet_ping_ni nis[KPEER_PI_MAX];
	struct lnet_ping_info pi = { .nis = nis, .max_nis = KPEER_PI_MAX };
	ssize_t rc = lnet_ping_info_decode(payload, len, &pi);

	if (rc < 0) {
		/* say why: the header words as sent (LE, ulnet's order) */
		if (len >= 16)
			cmp_fail(x, "ping info does not decode (%zd): magic %#x, features %#x "
				    "(capture %#x), pid %u, nnis %u", rc, ul_get_le32(payload),
				 ul_get_le32(payload + 4), m->pi.features, ul_get_le32(payload + 8),
				 ul_get_le32(payload + 12));
		else
			cmp_fail(x, "ping info does not decode (%zd): %zu bytes", rc, len);
		return;
	}
	cmp_u64(x, "ping info features", pi.features, m->pi.features);
	/* The ping info carries the node's LNet PID; the user-space flag is
	 * a per-connection socklnd identity and never appears here. */
	cmp_u64(x, "ping info pid", pi.pid, m->pi.pid);
	cmp_u64(x, "ping info nnis", pi.nnis_wire, m->pi.nnis_wire);
	cmp_u64(x, "ping info byte order swapped", pi.swapped, m->pi.swapped);
	for (unsigned i = 0; i < pi.nnis && i < m->pi.nnis && !x->bad; i++) {
		char f[64];

		snprintf(f, sizeof(f), "ping info ni[%u] nid", i);
		cmp_nid(x, f, &pi.nis[i].nid, &m->pi.nis[i].nid);
		if (i > 0 || x->kp->conf.forwarded) {
			/* ni[0] (0@lo) carries a sequence number: the node's
			 * own, compared only in a ping info ulnet forwards */
			snprintf(f, sizeof(f), "ping info ni[%u] status", i);
			cmp_u64(x, f, pi.nis[i].status, m->pi.nis[i].status);
		} else if (!pi.nis[0].status) {
			cmp_fail(x, "ping info ni[0] status (sequence number) is 0");
		}
		snprintf(f, sizeof(f), "ping info ni[%u] msg_size", i);
		cmp_u64(x, f, pi.nis[i].msg_size, m->pi.nis[i].msg_size);
	}
}

static void cmp_hello(struct cmp *x, const struct ksock_hello *h)
{
	const struct ksock_hello *w = &x->m->hello;

	cmp_u64(x, "HELLO version", h->version, w->version);
	cmp_u64(x, "HELLO byte order swapped", h->swapped, w->swapped);
	cmp_nid(x, "HELLO src_nid", &h->src_nid, &w->src_nid);
	cmp_nid(x, "HELLO dst_nid", &h->dst_nid, &w->dst_nid);
	cmp_own_pid(x, "HELLO src_pid", h->src_pid, w->src_pid);
	cmp_u64(x, "HELLO dst_pid", h->dst_pid, w->dst_pid);
	cmp_u64(x, "HELLO ctype", (uint64_t)(int64_t)h->ctype, (uint64_t)(int64_t)w->ctype);
	cmp_u64(x, "HELLO nips", h->nips, w->nips);
	cmp_u64(x, "HELLO dst_incarnation is zero", h->dst_incarnation == 0,
		w->dst_incarnation == 0);
	if (!h->src_incarnation)
		cmp_fail(x, "HELLO src_incarnation is 0");
	/* every connection of one node carries its one incarnation */
	if (x->kp->have_ulnet_inc && h->src_incarnation != x->kp->ulnet_incarnation)
		cmp_fail(x, "HELLO src_incarnation 0x%llx differs from ulnet's earlier 0x%llx",
			 (unsigned long long)h->src_incarnation,
			 (unsigned long long)x->kp->ulnet_incarnation);
	x->kp->ulnet_incarnation = h->src_incarnation;
	x->kp->have_ulnet_inc = true;
}

/* An SRPC reply (or brw read bulk) on portal 52: see kpeer_conf.srpc. */
static void cmp_srpc(struct cmp *x, const uint8_t *live, const uint8_t *cap, size_t len)
{
	struct srpc_msg a, b;
	uint8_t ea[SRPC_MSG_SIZE], eb[SRPC_MSG_SIZE];

	if (len < 4 || ul_get_le32(cap) != SRPC_MSG_MAGIC) {
		/* brw read bulk: the pattern words of each page */
		for (size_t pg = 0; pg < len; pg += SRPC_PAGE_SIZE) {
			size_t plen = len - pg < SRPC_PAGE_SIZE ? len - pg : SRPC_PAGE_SIZE;
			size_t offs[2] = { pg, pg + plen - 8 };

			for (int i = 0; i < (plen >= 16 ? 2 : plen >= 8 ? 1 : 0); i++)
				if (memcmp(live + offs[i], cap + offs[i], 8)) {
					cmp_fail(x, "brw bulk: the 8 bytes at %zu are 0x%016llx, the kernel's 0x%016llx",
						 offs[i], (unsigned long long)ul_get_le64(live + offs[i]),
						 (unsigned long long)ul_get_le64(cap + offs[i]));
					return;
				}
		}
		return;
	}
	if (len != SRPC_MSG_SIZE || srpc_msg_decode(live, len, &a) || srpc_msg_decode(cap, len, &b)) {
		cmp_fail(x, "SRPC message does not decode (%zu bytes, magic 0x%x)", len, ul_get_le32(live));
		return;
	}
	cmp_u64(x, "srpc version", a.version, b.version);
	cmp_u64(x, "srpc type", a.type, b.type);
	cmp_u64(x, "srpc reserved0", a.reserved0, b.reserved0);
	cmp_u64(x, "srpc reserved1", a.reserved1, b.reserved1);
	cmp_u64(x, "srpc ses_feats", a.ses_feats, b.ses_feats);
	if (x->bad)
		return;
	if (a.type == SRPC_MSG_STAT_REPLY) {
		/* the node's own: how long the session ran (a replay runs in
		 * milliseconds what the capture took seconds for), its LNet
		 * counters */
		a.body.stat_reply.fw.running_ms = b.body.stat_reply.fw.running_ms = 0;
		memset(&a.body.stat_reply.lnet, 0, sizeof(a.body.stat_reply.lnet));
		memset(&b.body.stat_reply.lnet, 0, sizeof(b.body.stat_reply.lnet));
	}
	/* everything else as the kernel wrote it: compare the canonical
	 * encodings and name the first field that differs */
	srpc_msg_encode(&a, ea, sizeof(ea));
	srpc_msg_encode(&b, eb, sizeof(eb));
	for (size_t i = 0; i < SRPC_MSG_SIZE; i++)
		if (ea[i] != eb[i]) {
			cmp_fail(x, "srpc %s body byte %zu: 0x%02x != 0x%02x (status %u/%u)",
				 i < SRPC_HDR_SIZE ? "header" : "reply", i < SRPC_HDR_SIZE ? i : i - SRPC_HDR_SIZE,
				 ea[i], eb[i], ul_get_le32(ea + SRPC_HDR_SIZE), ul_get_le32(eb + SRPC_HDR_SIZE));
			return;
		}
}

static void cmp_lnet(struct cmp *x, const struct ksock_msg_hdr *k, struct lnet_hdr *h,
		     const uint8_t *payload)
{
	const struct kpeer_msg *m = x->m;
	const struct lnet_hdr *w = &m->hdr;

	cmp_u64(x, "ksock type", k->type, m->ksm.type);
	cmp_u64(x, "ksock csum", k->csum, m->ksm.csum);
	cmp_u64(x, "ksock zc_cookies[0] is set", k->zc_cookies[0] != 0, m->ksm.zc_cookies[0] != 0);
	cmp_u64(x, "ksock zc_cookies[1] is set", k->zc_cookies[1] != 0, m->ksm.zc_cookies[1] != 0);
	cmp_u64(x, "type", h->type, w->type);
	if (x->bad)
		return;
	cmp_nid(x, "dest_nid", &h->dest_nid, &w->dest_nid);
	cmp_nid(x, "src_nid", &h->src_nid, &w->src_nid);
	cmp_peer_pid(x, "dest_pid", h->dest_pid, w->dest_pid);
	cmp_own_pid(x, "src_pid", h->src_pid, w->src_pid);
	cmp_u64(x, "payload_length", h->payload_length, w->payload_length);
	switch (w->type) {
	case ULNET_MSG_PUT:
		cmp_u64(x, "ptl_index", h->msg.put.ptl_index, w->msg.put.ptl_index);
		cmp_u64(x, "match_bits", h->msg.put.match_bits, w->msg.put.match_bits);
		cmp_u64(x, "offset", h->msg.put.offset, w->msg.put.offset);
		cmp_u64(x, "hdr_data", h->msg.put.hdr_data, w->msg.put.hdr_data);
		cmp_wmd(x, "ack_wmd", &h->msg.put.ack_wmd, &w->msg.put.ack_wmd);
		break;
	case ULNET_MSG_GET:
		cmp_u64(x, "ptl_index", h->msg.get.ptl_index, w->msg.get.ptl_index);
		cmp_u64(x, "match_bits", h->msg.get.match_bits, w->msg.get.match_bits);
		cmp_u64(x, "src_offset", h->msg.get.src_offset, w->msg.get.src_offset);
		cmp_u64(x, "sink_length", h->msg.get.sink_length, w->msg.get.sink_length);
		cmp_wmd(x, "return_wmd", &h->msg.get.return_wmd, &w->msg.get.return_wmd);
		break;
	case ULNET_MSG_ACK:
		cmp_u64(x, "match_bits", h->msg.ack.match_bits, w->msg.ack.match_bits);
		cmp_u64(x, "mlength", h->msg.ack.mlength, w->msg.ack.mlength);
		cmp_wmd(x, "dst_wmd", &h->msg.ack.dst_wmd, &w->msg.ack.dst_wmd);
		break;
	case ULNET_MSG_REPLY:
		cmp_wmd(x, "dst_wmd", &h->msg.reply.dst_wmd, &w->msg.reply.dst_wmd);
		break;
	default:
		break;
	}
	if (x->bad || !h->payload_length)
		return;
	if (m->has_pi)
		cmp_ping_info(x, payload, h->payload_length);
	else if (x->kp->conf.srpc && w->type == ULNET_MSG_PUT && w->msg.put.ptl_index == SRPC_RDMA_PORTAL)
		cmp_srpc(x, payload, m->payload, h->payload_length);
	else if (memcmp(payload, m->payload, h->payload_length))
		cmp_fail(x, "payload bytes differ");
}

/* ---------------------------------------------------------------------- */
/* receiving                                                                */

/* Post-script raw mode: the last message received, for kpeer_recv_msg(). */
struct kp_raw {
	bool on, got;
	int ctype;
	struct ksock_msg_hdr ksm;
	struct lnet_hdr hdr;
};
static __thread struct kp_raw *kp_raw_slot;

/* The script message a received item is: first unmatched one of ulnet's
 * side, same kind (and LNet type) on a connection of the same type. */
static bool lnet_hdr_has_mbits(const struct lnet_hdr *h)
{
	return h->type == ULNET_MSG_PUT || h->type == ULNET_MSG_GET;
}

static uint64_t hdr_mbits(const struct lnet_hdr *h)
{
	return h->type == ULNET_MSG_PUT ? h->msg.put.match_bits : h->msg.get.match_bits;
}

static struct kpeer_msg *match_msg(struct kpeer *kp, struct kp_conn *c, enum kpeer_kind kind,
				   const struct lnet_hdr *h, const char *what)
{
	struct kpeer_msg *other = NULL;

	for (unsigned i = 0; i < kp->conf.limit; i++) {
		struct kpeer_msg *m = &kp->msgs[i];

		if (m->from_kpeer || m->matched || m->kind != kind ||
		    (kind == KP_LNET && m->hdr.type != h->type))
			continue;
		if (m->ctype == c->ctype && kind == KP_LNET && lnet_hdr_has_mbits(h)) {
			/* a later one with the same match bits goes first */
			for (unsigned j = i; j < kp->conf.limit; j++) {
				struct kpeer_msg *e = &kp->msgs[j];

				if (!e->from_kpeer && !e->matched && e->kind == KP_LNET &&
				    e->ctype == c->ctype && e->hdr.type == h->type &&
				    hdr_mbits(&e->hdr) == hdr_mbits(h)) {
					if (j != i)
						kp_log(kp, "%s arrived before script msg %u (order differs; "
							   "matched by its match bits)", what, m->idx);
					return e;
				}
			}
		}
		if (m->ctype == c->ctype) {
			/* connections open in the capture's order (CONTROL,
			 * BULK_IN, BULK_OUT, one after the other) */
			for (unsigned j = 0; kind == KP_CONNREQ && j < i; j++) {
				const struct kpeer_msg *e = &kp->msgs[j];

				if (e->kind == KP_CONNREQ && !e->from_kpeer && !e->matched) {
					kp_fail(kp, "msg %u CONNREQ: ulnet opened its %s connection "
						    "before its %s one (capture msg %u)", m->idx,
						ctype_name(m->ctype), ctype_name(e->ctype), e->idx);
					return NULL;
				}
			}
			/* the first of ulnet's messages not yet seen on this conn? */
			for (unsigned j = 0; j < i; j++) {
				const struct kpeer_msg *e = &kp->msgs[j];

				if (!e->from_kpeer && !e->matched && e->ctype == c->ctype) {
					kp_log(kp, "%s arrived before script msg %u %s (order differs)",
					       what, e->idx, kind_name(e));
					break;
				}
			}
			return m;
		}
		if (!other)
			other = m;
	}
	if (other)
		kp_fail(kp, "msg %u %s: came on the %s connection (port %u), the capture has it "
			    "on %s", other->idx, kind_name(other), ctype_name(c->ctype), c->lport,
			ctype_name(other->ctype));
	else
		kp_fail(kp, "unexpected from ulnet on the %s connection (port %u): %s "
			    "(not in the capture%s)", ctype_name(c->ctype), c->lport, what,
			kp->conf.limit < kp->nmsgs ? " as played" : "");
	return NULL;
}

static void received(struct kpeer *kp, struct kpeer_msg *m)
{
	char d[200];

	m->matched = true;
	kp->received++;
	kpeer_describe(kp, m, d, sizeof(d));
	kp_log(kp, "got  %s: matches", d);
}

/* Consume whole items from c->rbuf; returns -1 on a failure. */
static int parse_conn(struct kpeer *kp, struct kp_conn *c)
{
	size_t off = 0;
	int rc = 0;

	while (off < c->rlen && !rc && c->st != ST_DEAD) {
		const uint8_t *p = c->rbuf + off;
		size_t len = c->rlen - off;
		ssize_t n;

		if (c->st == ST_CONNREQ) {
			n = lnet_acceptor_req_decode(p, len, &c->acr);
			if (n == -EMSGSIZE)
				break;
			if (n < 0) {
				rc = kp_fail(kp, "ulnet's acceptor request does not decode (%zd)", n);
				break;
			}
			c->have_acr = true;
			c->st = ST_HELLO;
			off += (size_t)n;
		} else if (c->st == ST_HELLO) {
			struct ksock_hello h;
			struct kpeer_msg *m;
			struct cmp x = { .kp = kp };

			n = ksock_hello_size(p, len);
			if (n == -EMSGSIZE || (n > 0 && (size_t)n > len))
				break;
			if (n > 0)
				n = ksock_hello_decode(p, len, &h);
			if (n < 0) {
				rc = kp_fail(kp, "ulnet's HELLO does not decode (%zd)", n);
				break;
			}
			off += (size_t)n;
			c->be = h.swapped;
			c->st = ST_MSGS;
			if (!c->active) {
				c->ctype = h.ctype;
				if (c->have_acr) {
					m = match_msg(kp, c, KP_CONNREQ, NULL, "acceptor request");
					if (!m) {
						rc = -1;
						break;
					}
					x.m = m;
					cmp_u64(&x, "acceptor version", c->acr.version, m->acr.version);
					cmp_nid(&x, "acceptor target_nid", &c->acr.target, &m->acr.target);
					cmp_u64(&x, "acceptor byte order swapped", c->acr.swapped,
						m->acr.swapped);
					if (x.bad) {
						rc = -1;
						break;
					}
					received(kp, m);
				}
			}
			m = match_msg(kp, c, KP_HELLO, NULL, "HELLO");
			if (!m) {
				rc = -1;
				break;
			}
			x.m = m;
			x.bad = 0;
			cmp_hello(&x, &h);
			if (x.bad) {
				rc = -1;
				break;
			}
			received(kp, m);
		} else {
			struct ksock_msg_hdr k;
			struct lnet_hdr h;
			ssize_t hn = 0;
			char what[160];
			struct kpeer_msg *m;

			memset(&h, 0, sizeof(h));
			n = ksock_msg_hdr_decode(p, len, c->be, &k);
			if (n == -EMSGSIZE)
				break;
			if (n < 0) {
				rc = kp_fail(kp, "ksock header from ulnet does not decode (%zd)", n);
				break;
			}
			if (k.type == KSOCK_MSG_LNET) {
				hn = lnet_hdr_decode_nid4(p + n, len - (size_t)n, &h);
				if (hn == -EMSGSIZE)
					break;
				if (hn < 0) {
					rc = kp_fail(kp, "LNet header from ulnet does not decode (%zd)", hn);
					break;
				}
				if (h.payload_length > KPEER_RBUF - 200) {
					rc = kp_fail(kp, "payload_length %u from ulnet: too big for kpeer",
						     h.payload_length);
					break;
				}
				if (len < (size_t)(n + hn) + h.payload_length)
					break;
				snprintf(what, sizeof(what), "LNET %s ptl %u payload %u",
					 type_name(h.type),
					 h.type == ULNET_MSG_PUT ? h.msg.put.ptl_index :
					 h.type == ULNET_MSG_GET ? h.msg.get.ptl_index : 0,
					 h.payload_length);
			} else if (k.type == KSOCK_MSG_NOOP) {
				snprintf(what, sizeof(what), "NOOP [0x%llx, 0x%llx]",
					 (unsigned long long)k.zc_cookies[0],
					 (unsigned long long)k.zc_cookies[1]);
			} else {
				rc = kp_fail(kp, "ksock type 0x%x from ulnet", k.type);
				break;
			}
			off += (size_t)(n + hn) + h.payload_length;
			if (kp_raw_slot && kp_raw_slot->on) {
				kp_raw_slot->got = true;
				kp_raw_slot->ctype = c->ctype;
				kp_raw_slot->ksm = k;
				kp_raw_slot->hdr = h;
				kp_log(kp, "got  %s on %s (after the script)", what, ctype_name(c->ctype));
				continue;
			}
			if (kp->conf.aside_keepalive && is_keepalive(&k)) {
				kp->aside_keepalives++;
				kp_log(kp, "got  %s on %s (a keepalive: set aside)", what,
				       ctype_name(c->ctype));
				continue;
			}
			if (k.type == KSOCK_MSG_LNET && kp->conf.aside &&
			    kp->conf.aside(kp->conf.aside_arg, c->ctype, &h)) {
				kp->aside++;
				kp_log(kp, "got  %s on %s (set aside: not in the script)", what,
				       ctype_name(c->ctype));
				continue;
			}
			m = match_msg(kp, c, k.type == KSOCK_MSG_LNET ? KP_LNET : KP_NOOP, &h, what);
			if (!m) {
				if (kp->err[0])
					rc = -1;
				continue;
			}
			{
				struct cmp x = { .kp = kp, .m = m };

				if (k.type == KSOCK_MSG_NOOP) {
					cmp_u64(&x, "zc_cookies[0]", k.zc_cookies[0], m->ksm.zc_cookies[0]);
					cmp_u64(&x, "zc_cookies[1]", k.zc_cookies[1], m->ksm.zc_cookies[1]);
					cmp_u64(&x, "ksock csum", k.csum, m->ksm.csum);
				} else {
					cmp_lnet(&x, &k, &h, p + n + hn);
				}
				if (x.bad) {
					rc = -1;
					break;
				}
			}
			received(kp, m);
		}
	}
	if (off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
	}
	return rc;
}

/* One poll turn (at most `ms`): accept, read and check. -1 on a failure. */
static int pump(struct kpeer *kp, int ms)
{
	struct pollfd pf[KPEER_MAX_CONNS + 1];
	struct kp_conn *pc[KPEER_MAX_CONNS + 1];
	unsigned n = 0;
	int rc;

	if (kp->lfd >= 0) {
		pf[n] = (struct pollfd){ .fd = kp->lfd, .events = POLLIN };
		pc[n++] = NULL;
	}
	for (unsigned i = 0; i < kp->nconns; i++)
		if (kp->conns[i].st != ST_DEAD) {
			pf[n] = (struct pollfd){ .fd = kp->conns[i].fd, .events = POLLIN };
			pc[n++] = &kp->conns[i];
		}
	rc = poll(pf, n, ms);
	if (rc <= 0)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct kp_conn *c = pc[i];
		ssize_t r;

		if (!pf[i].revents)
			continue;
		if (!c) {
			int fd = accept4(kp->lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				c = conn_add(kp, fd, false);
				if (!c)
					return -1;
				kp_log(kp, "accepted a connection from port %u", c->rport);
				if (c->rport > 1023 && !kp->conf.ulnet_userspace)
					kp_note(kp, "ulnet dialled from unprivileged port %u", c->rport);
			}
			continue;
		}
		r = recv(c->fd, c->rbuf + c->rlen, KPEER_RBUF - c->rlen, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			int e = r < 0 ? errno : 0;

			conn_kill(c);
			return kp_fail(kp, "ulnet closed the %s connection (port %u)%s%s",
				       ctype_name(c->ctype), c->lport, e ? ": " : "",
				       e ? strerror(e) : "");
		}
		if (r > 0) {
			c->rlen += (size_t)r;
			if (parse_conn(kp, c))
				return -1;
			if (c->rlen == KPEER_RBUF)
				return kp_fail(kp, "receive buffer full");
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* sending                                                                  */

static int send_msg(struct kpeer *kp, struct kpeer_msg *m)
{
	/* brw bulk REPLYs carry up to 1 MiB */
	static __thread uint8_t buf[KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE + KPEER_SBUF_PAYLOAD];
	struct kp_conn *c = NULL;
	ssize_t n = 0;
	char d[200];

	kpeer_describe(kp, m, d, sizeof(d));
	kp_log(kp, "send %s", d);
	if (m->kind == KP_CONNREQ) {
		struct lnet_acceptor_req r = m->acr;

		c = dial(kp);
		if (!c)
			return -1;
		c->ctype = m->ctype;
		r.target = map_nid(kp, &m->acr.target);
		n = lnet_acceptor_req_encode(&r, m->acr.swapped, buf, sizeof(buf));
		if (n < 0)
			return kp_fail(kp, "%s: encode: %zd", d, n);
		return send_all(kp, c, buf, (size_t)n);
	}
	c = conn_by_ctype(kp, m->ctype);
	if (!c)
		return kp_fail(kp, "%s: no live %s connection to send it on", d, ctype_name(m->ctype));
	if (m->kind == KP_HELLO) {
		struct ksock_hello h = m->hello;

		h.src_nid = map_nid(kp, &m->hello.src_nid);
		h.dst_nid = map_nid(kp, &m->hello.dst_nid);
		h.src_incarnation = kp->incarnation;
		n = ksock_hello_encode(&h, m->hello.swapped, buf, sizeof(buf));
		if (c->active)
			c->be = m->hello.swapped;
	} else {
		n = ksock_msg_hdr_encode(&m->ksm, false, buf, sizeof(buf));
		if (n > 0 && m->kind == KP_LNET) {
			struct lnet_hdr h = m->hdr;
			lnet_wire_handle_t *w = hdr_wmd(&h);
			const lnet_wire_handle_t *live = w ? wmd_lookup(kp, w) : NULL;
			ssize_t hn;

			h.dest_nid = map_nid(kp, &m->hdr.dest_nid);
			h.src_nid = map_nid(kp, &m->hdr.src_nid);
			if (kp->conf.ulnet_userspace)
				h.dest_pid |= ULNET_PID_USERFLAG;
			if (w && live)
				*w = *live;         /* echo what ulnet gave */
			else if (w && !wmd_none(w))
				wmd_learn(kp, w, w); /* ours: ulnet must echo it as is */
			hn = lnet_hdr_encode_nid4(&h, buf + n, sizeof(buf) - (size_t)n);
			if (hn < 0)
				return kp_fail(kp, "%s: encode: %zd", d, hn);
			n += hn;
			if (m->hdr.payload_length > sizeof(buf) - (size_t)n)
				return kp_fail(kp, "%s: payload too big for kpeer", d);
			if (m->has_pi) {
				struct lnet_ping_info pi = m->pi;
				struct lnet_ping_ni nis[KPEER_PI_MAX];
				ssize_t pn;

				memcpy(nis, m->pi_nis, sizeof(nis));
				pi.nis = nis;
				for (unsigned i = 0; i < pi.nnis; i++)
					nis[i].nid = map_nid(kp, &m->pi_nis[i].nid);
				pn = lnet_ping_info_encode(&pi, buf + n, sizeof(buf) - (size_t)n);
				if (pn != (ssize_t)m->hdr.payload_length)
					return kp_fail(kp, "%s: ping info re-encodes to %zd bytes", d, pn);
			} else {
				memcpy(buf + n, m->payload, m->hdr.payload_length);
			}
			n += m->hdr.payload_length;
		}
	}
	if (n < 0)
		return kp_fail(kp, "%s: encode: %zd", d, n);
	return send_all(kp, c, buf, (size_t)n);
}

/* ---------------------------------------------------------------------- */
/* the run                                                                  */

/* Every ulnet message before `upto` on connection type `ctype` (all types
 * when ctype is NONE) has come. */
static struct kpeer_msg *first_missing(struct kpeer *kp, unsigned upto, int ctype)
{
	for (unsigned j = 0; j < upto && j < kp->conf.limit; j++) {
		struct kpeer_msg *e = &kp->msgs[j];

		if (!e->from_kpeer && !e->matched &&
		    (ctype == SOCKLND_CONN_NONE || e->ctype == ctype))
			return e;
	}
	return NULL;
}

/* The ulnet message before `i` whose handle kpeer's message `i` echoes (a
 * REPLY to its GET, an ACK of its PUT), possibly on another connection; -1
 * if none. */
static int echoed_msg(struct kpeer *kp, unsigned i)
{
	struct kpeer_msg *m = &kp->msgs[i];
	struct lnet_hdr h = m->hdr;
	lnet_wire_handle_t *w;

	if (m->kind != KP_LNET || (h.type != ULNET_MSG_REPLY && h.type != ULNET_MSG_ACK))
		return -1;
	w = hdr_wmd(&h);
	for (unsigned j = i; j-- > 0;) {
		struct kpeer_msg *e = &kp->msgs[j];
		struct lnet_hdr eh = e->hdr;
		lnet_wire_handle_t *ew;

		if (e->from_kpeer || e->kind != KP_LNET)
			continue;
		ew = hdr_wmd(&eh);
		if (ew && wmd_eq(ew, w))
			return (int)j;
	}
	return -1;
}

static int wait_for(struct kpeer *kp, unsigned upto, int ctype)
{
	struct kpeer_msg *e, *waited = NULL;
	uint64_t end = 0;

	while ((e = first_missing(kp, upto, ctype))) {
		if (e != waited) {
			waited = e;
			if (kp->conf.on_wait)
				kp->conf.on_wait(kp->conf.arg, e);
			/* the wait starts once on_wait (which may block) is done */
			end = now_ms() + (uint64_t)kp->conf.timeout_ms;
		}
		if (kp->err[0])
			return -1;
		if (now_ms() > end) {
			char d[200];

			kpeer_describe(kp, e, d, sizeof(d));
			return kp_fail(kp, "%s: not received from ulnet within %d ms", d,
				       kp->conf.timeout_ms);
		}
		if (pump(kp, 20))
			return -1;
	}
	return kp->err[0] ? -1 : 0;
}

int kpeer_start(struct kpeer *kp)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int one = 1;
	bool passive = false;

	/* passive when ulnet's side sends the first acceptor request */
	for (unsigned i = 0; i < kp->nmsgs; i++)
		if (kp->msgs[i].kind == KP_CONNREQ) {
			passive = !kp->msgs[i].from_kpeer;
			break;
		}
	if (!passive)
		return 0;
	kp->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (kp->lfd < 0)
		return kp_fail(kp, "socket: %s", strerror(errno));
	setsockopt(kp->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(kp->conf.kpeer_ip);
	a.sin_port = htons(kp->conf.port);
	if (bind(kp->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(kp->lfd, 16))
		return kp_fail(kp, "listen on %s:%u: %s", inet_ntoa(a.sin_addr), kp->conf.port,
			       strerror(errno));
	return 0;
}

/* Play script[kp->pos .. upto) and wait for ulnet's messages before upto. */
static int play(struct kpeer *kp, unsigned upto)
{
	for (; kp->pos < upto; kp->pos++) {
		unsigned i = kp->pos;
		struct kpeer_msg *m = &kp->msgs[i];

		if (!m->from_kpeer)
			continue;
		/* a connect is ordered after everything before it; a message
		 * after what ulnet said before it on that connection */
		if (wait_for(kp, i, m->kind == KP_CONNREQ ? SOCKLND_CONN_NONE : m->ctype))
			return -1;
		/* ... and after the message whose handle it echoes, which may
		 * have come on another connection (a bulk REPLY to a GET) */
		{
			int j = echoed_msg(kp, i);

			if (j >= 0 && wait_for(kp, (unsigned)j + 1, kp->msgs[j].ctype))
				return -1;
		}
		if (kp->conf.on_send)
			kp->conf.on_send(kp->conf.arg, m);
		if (send_msg(kp, m))
			return -1;
		/* take what already came before the next step */
		if (pump(kp, 0))
			return -1;
	}
	return wait_for(kp, upto, SOCKLND_CONN_NONE);
}

int kpeer_run_to(struct kpeer *kp, unsigned upto)
{
	unsigned limit = kp->conf.limit;
	int rc;

	if (kp->err[0])
		return -1;
	if (upto > limit)
		upto = limit;
	/* until then, ulnet's messages after `upto` are not expected yet */
	kp->conf.limit = upto;
	rc = play(kp, upto);
	kp->conf.limit = limit;
	return rc;
}

int kpeer_run(struct kpeer *kp)
{
	uint64_t end;

	if (kp->err[0])
		return -1;
	if (play(kp, kp->conf.limit))
		return -1;
	end = now_ms() + (uint64_t)kp->conf.quiet_ms;
	while (now_ms() < end)
		if (pump(kp, 20))
			return -1;
	kp_log(kp, "script done: %u messages from ulnet matched", kp->received);
	return 0;
}

static void *run_thread(void *arg)
{
	struct kpeer *kp = arg;

	kp->thr_rc = kpeer_run(kp);
	return NULL;
}

int kpeer_run_async(struct kpeer *kp)
{
	if (pthread_create(&kp->thr, NULL, run_thread, kp))
		return kp_fail(kp, "pthread_create failed");
	kp->thr_started = true;
	return 0;
}

int kpeer_join(struct kpeer *kp)
{
	if (!kp->thr_started)
		return -1;
	pthread_join(kp->thr, NULL);
	kp->thr_started = false;
	return kp->thr_rc;
}

const char *kpeer_error(const struct kpeer *kp)
{
	return kp->err[0] ? kp->err : "no error";
}

const char *kpeer_notes(const struct kpeer *kp)
{
	return kp->notes;
}

void kpeer_close(struct kpeer *kp)
{
	if (kp->thr_started)
		kpeer_join(kp);
	for (unsigned i = 0; kp->conns && i < kp->nconns; i++) {
		if (kp->conns[i].st != ST_DEAD)
			conn_kill(&kp->conns[i]);
		free(kp->conns[i].rbuf);
	}
	if (kp->lfd >= 0)
		close(kp->lfd);
	kp->lfd = -1;
	free(kp->conns);
	free(kp->msgs);
	kp->conns = NULL;
	kp->msgs = NULL;
	pcap_free(&kp->cap);
}

/* ---------------------------------------------------------------------- */
/* after the script                                                         */

int kpeer_send_noop(struct kpeer *kp, int ctype, uint64_t c0, uint64_t c1)
{
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_NOOP, .zc_cookies = { c0, c1 } };
	uint8_t buf[KSOCK_MSG_HDR_SIZE];
	struct kp_conn *c = conn_by_ctype(kp, ctype);

	if (!c)
		return kp_fail(kp, "no live %s connection", ctype_name(ctype));
	if (ksock_msg_hdr_encode(&k, false, buf, sizeof(buf)) != KSOCK_MSG_HDR_SIZE)
		return kp_fail(kp, "NOOP encode");
	kp_log(kp, "send NOOP [0x%llx, 0x%llx] on %s", (unsigned long long)c0,
	       (unsigned long long)c1, ctype_name(ctype));
	return send_all(kp, c, buf, sizeof(buf));
}

int kpeer_send_lnet(struct kpeer *kp, int ctype, const struct lnet_hdr *h, const void *payload)
{
	uint8_t buf[KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE + 4096];
	struct ksock_msg_hdr k = { .type = KSOCK_MSG_LNET };
	struct kp_conn *c = conn_by_ctype(kp, ctype);
	ssize_t n;

	if (!c)
		return kp_fail(kp, "no live %s connection", ctype_name(ctype));
	if (h->payload_length > 4096)
		return kp_fail(kp, "payload too big for kpeer_send_lnet");
	n = ksock_msg_hdr_encode(&k, false, buf, sizeof(buf));
	if (n > 0)
		n += lnet_hdr_encode_nid4(h, buf + n, sizeof(buf) - (size_t)n);
	if (n != KSOCK_MSG_HDR_SIZE + LNET_HDR_NID4_SIZE)
		return kp_fail(kp, "LNet encode");
	if (h->payload_length)
		memcpy(buf + n, payload, h->payload_length);
	return send_all(kp, c, buf, (size_t)n + h->payload_length);
}

static int raw_wait(struct kpeer *kp, int ms, struct kp_raw *raw)
{
	uint64_t end = now_ms() + (uint64_t)(ms > 0 ? ms : 0);
	int rc = 0;

	raw->on = true;
	raw->got = false;
	kp_raw_slot = raw;
	while (!raw->got && now_ms() < end && !rc)
		rc = pump(kp, 20);
	kp_raw_slot = NULL;
	return rc;
}

int kpeer_expect_quiet(struct kpeer *kp, int ms)
{
	struct kp_raw raw = { 0 };

	if (raw_wait(kp, ms, &raw))
		return -1;
	if (raw.got)
		return kp_fail(kp, "ulnet sent a ksock message type 0x%x (%s) on %s where nothing "
				   "was expected", raw.ksm.type,
			       raw.ksm.type == KSOCK_MSG_LNET ? type_name(raw.hdr.type) : "NOOP",
			       ctype_name(raw.ctype));
	return 0;
}

int kpeer_recv_msg(struct kpeer *kp, int ms, int *ctype, struct ksock_msg_hdr *ksm,
		   struct lnet_hdr *hdr)
{
	struct kp_raw raw = { 0 };

	if (raw_wait(kp, ms, &raw))
		return -1;
	if (!raw.got)
		return kp_fail(kp, "nothing from ulnet within %d ms", ms);
	if (ctype)
		*ctype = raw.ctype;
	if (ksm)
		*ksm = raw.ksm;
	if (hdr)
		*hdr = raw.hdr;
	return 0;
}
