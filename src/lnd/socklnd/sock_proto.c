/* SPDX-License-Identifier: MIT */
/*
 * sock_proto.c - the socklnd protocol tables and the connection rules that
 * need no socket: which table a HELLO selects, which connection may carry a
 * message, ZC-ACK forms, race resolution and connection admission.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/socklnd/sock_int.h"

/* --- ksock header per byte order ----------------------------------------- */

static ssize_t khdr_decode_le(const uint8_t *buf, size_t len, struct ksock_msg_hdr *m)
{
	return ksock_msg_hdr_decode_le(buf, len, m);
}

static ssize_t khdr_decode_be(const uint8_t *buf, size_t len, struct ksock_msg_hdr *m)
{
	return ksock_msg_hdr_decode(buf, len, true, m);
}

static ssize_t khdr_encode_le(const struct ksock_msg_hdr *m, uint8_t *buf, size_t len)
{
	if (len < KSOCK_MSG_HDR_SIZE)
		return -ENOSPC;
	ksock_msg_hdr_put_le(buf, m->type, m->csum, m->zc_cookies[0], m->zc_cookies[1]);
	return KSOCK_MSG_HDR_SIZE;
}

/* V1 has no ksock header: every message is an LNET one, no cookies. */
static ssize_t khdr_decode_v1(const uint8_t *buf, size_t len, struct ksock_msg_hdr *m)
{
	(void)buf;
	(void)len;
	memset(m, 0, sizeof(*m));
	m->type = KSOCK_MSG_LNET;
	return 0;
}

static ssize_t khdr_encode_v1(const struct ksock_msg_hdr *m, uint8_t *buf, size_t len)
{
	(void)m;
	(void)buf;
	(void)len;
	return 0;
}

/* --- message to connection matching (reference §1.4) --------------------- */

/* V1/V2: anything may go anywhere; size picks the preferred type. */
static enum ksock_match match_v2(int ctype, size_t nob, bool nonblk, size_t min_bulk)
{
	(void)nonblk;
	switch (ctype) {
	case SOCKLND_CONN_ANY:
		return KSOCK_MATCH_YES;
	case SOCKLND_CONN_CONTROL:
		return nob < min_bulk ? KSOCK_MATCH_YES : KSOCK_MATCH_MAY;
	case SOCKLND_CONN_BULK_OUT:
		return nob >= min_bulk ? KSOCK_MATCH_YES : KSOCK_MATCH_MAY;
	case SOCKLND_CONN_BULK_IN:
		return KSOCK_MATCH_MAY;
	default:
		return KSOCK_MATCH_NO;
	}
}

/* V3/V4: never ANY; non-blocking NOOPs only on the conn we hold as
 * BULK_IN, which carries nothing else but other NOOPs. */
static enum ksock_match match_v3(int ctype, size_t nob, bool nonblk, size_t min_bulk)
{
	bool noop = nob <= KSOCK_MSG_HDR_SIZE;

	switch (ctype) {
	case SOCKLND_CONN_BULK_IN:
		if (nonblk)
			return KSOCK_MATCH_YES;
		return noop ? KSOCK_MATCH_MAY : KSOCK_MATCH_NO;
	case SOCKLND_CONN_BULK_OUT:
		if (nonblk)
			return KSOCK_MATCH_NO;
		return nob >= min_bulk ? KSOCK_MATCH_YES : KSOCK_MATCH_MAY;
	case SOCKLND_CONN_CONTROL:
		if (nonblk)
			return KSOCK_MATCH_NO;
		return nob < min_bulk ? KSOCK_MATCH_YES : KSOCK_MATCH_MAY;
	default:
		return KSOCK_MATCH_NO;
	}
}

/* --- the tables ------------------------------------------------------------ */

#define PROTO(n, v, be, cod, ksz, lsz, dec, enc, zc_, ka, ch, m)                      \
	{ .name = n, .version = v, .peer_be = be, .codec = &cod, .khdr_size = ksz,     \
	  .match_hdr = (ksz) + (lsz), .khdr_decode = dec, .khdr_encode = enc,          \
	  .zc = zc_, .keepalive = ka, .csum_hdr = ch, .match = m }

static const struct ksock_proto ksock_protos[] = {
	/* V1 HELLO is always little-endian; one table. */
	PROTO("V1", KSOCK_PROTO_V1, false, lnet_hdr_codec_nid4, 0, LNET_HDR_NID4_SIZE, khdr_decode_v1,
	      khdr_encode_v1, false, false, false, match_v2),
	PROTO("V2/le", KSOCK_PROTO_V2, false, lnet_hdr_codec_nid4, KSOCK_MSG_HDR_SIZE, LNET_HDR_NID4_SIZE,
	      khdr_decode_le, khdr_encode_le, true, false, true, match_v2),
	PROTO("V2/be", KSOCK_PROTO_V2, true, lnet_hdr_codec_nid4, KSOCK_MSG_HDR_SIZE, LNET_HDR_NID4_SIZE,
	      khdr_decode_be, khdr_encode_le, true, false, true, match_v2),
	PROTO("V3/le", KSOCK_PROTO_V3, false, lnet_hdr_codec_nid4, KSOCK_MSG_HDR_SIZE, LNET_HDR_NID4_SIZE,
	      khdr_decode_le, khdr_encode_le, true, true, false, match_v3),
	PROTO("V3/be", KSOCK_PROTO_V3, true, lnet_hdr_codec_nid4, KSOCK_MSG_HDR_SIZE, LNET_HDR_NID4_SIZE,
	      khdr_decode_be, khdr_encode_le, true, true, false, match_v3),
	PROTO("V4/le", KSOCK_PROTO_V4, false, lnet_hdr_codec_nid16, KSOCK_MSG_HDR_SIZE, LNET_HDR_NID16_SIZE,
	      khdr_decode_le, khdr_encode_le, true, true, false, match_v3),
	PROTO("V4/be", KSOCK_PROTO_V4, true, lnet_hdr_codec_nid16, KSOCK_MSG_HDR_SIZE, LNET_HDR_NID16_SIZE,
	      khdr_decode_be, khdr_encode_le, true, true, false, match_v3),
};

const struct ksock_proto *ksock_proto_find(unsigned version, bool peer_be)
{
	for (size_t i = 0; i < sizeof(ksock_protos) / sizeof(ksock_protos[0]); i++) {
		const struct ksock_proto *p = &ksock_protos[i];

		/* V1's byte order is fixed (LE), whatever the caller saw */
		if (p->version == version && (version == KSOCK_PROTO_V1 || p->peer_be == peer_be))
			return p;
	}
	return NULL;
}

unsigned ksock_proto_default_version(int family)
{
	return family == AF_INET6 ? KSOCK_PROTO_V4 : KSOCK_PROTO_V3;
}

int ksock_invert_ctype(int ctype)
{
	switch (ctype) {
	case SOCKLND_CONN_ANY:
	case SOCKLND_CONN_CONTROL:
		return ctype;
	case SOCKLND_CONN_BULK_IN:
		return SOCKLND_CONN_BULK_OUT;
	case SOCKLND_CONN_BULK_OUT:
		return SOCKLND_CONN_BULK_IN;
	default:
		return SOCKLND_CONN_NONE;
	}
}

const char *ksock_ctype_str(int ctype)
{
	switch (ctype) {
	case SOCKLND_CONN_NONE:
		return "NONE";
	case SOCKLND_CONN_ANY:
		return "ANY";
	case SOCKLND_CONN_CONTROL:
		return "CONTROL";
	case SOCKLND_CONN_BULK_IN:
		return "BULK_IN";
	case SOCKLND_CONN_BULK_OUT:
		return "BULK_OUT";
	default:
		return "?";
	}
}

/* --- ZC cookies -------------------------------------------------------------- */

int ksock_zcack_parse(uint64_t c0, uint64_t c1, bool keepalive_ok, struct ksock_zcack *z)
{
	memset(z, 0, sizeof(*z));
	if (c1 == 0)
		return -EPROTO;
	if (c0 == 0)
		c0 = c1;               /* single form */
	if (c1 == KSOCK_KEEPALIVE_COOKIE && keepalive_ok) {
		/* [0,1] or [1,1]: a keepalive; anything bigger mixes it in */
		if (c0 != c1)
			return -EPROTO;
		z->keepalive = true;
		return 0;
	}
	if (c0 > c1) {
		z->pair = true;
		z->lo = c1;
		z->hi = c0;
		z->count = 2;
	} else {
		z->lo = c0;
		z->hi = c1;
		/* a range wider than anything we could have outstanding can
		 * never be satisfied; cap to keep count meaningful */
		z->count = (c1 - c0) >= 0x7fffffffULL ? 0x7fffffffu : (unsigned)(c1 - c0 + 1);
	}
	return 0;
}

bool ksock_zcack_covers(const struct ksock_zcack *z, uint64_t cookie)
{
	if (z->keepalive || cookie == 0)
		return false;
	if (z->pair)
		return cookie == z->lo || cookie == z->hi;
	return cookie >= z->lo && cookie <= z->hi;
}

bool ksock_zcack_merge(uint64_t ck[2], uint64_t cookie)
{
	uint64_t a = ck[0], b = ck[1];

	if (cookie <= KSOCK_KEEPALIVE_COOKIE)
		return cookie == KSOCK_KEEPALIVE_COOKIE;  /* a keepalive adds nothing */
	if (a == 0 && b == KSOCK_KEEPALIVE_COOKIE) {
		ck[1] = cookie;                             /* an ACK says more */
		return true;
	}
	if (a == 0 && b == 0)
		return false;
	if (a == 0) {
		/* single -> pair (bigger first) */
		if (cookie == b)
			return true;
		ck[0] = cookie > b ? cookie : b;
		ck[1] = cookie > b ? b : cookie;
		return true;
	}
	if (a > b) {
		/* pair {b, a}: three consecutive cookies make a range */
		uint64_t lo = b < cookie ? b : cookie, hi = a > cookie ? a : cookie;

		if (cookie == a || cookie == b)
			return true;
		if (hi - lo == 2) {
			ck[0] = lo;
			ck[1] = hi;
			return true;
		}
		return false;
	}
	/* range [a, b] */
	if (cookie >= a && cookie <= b)
		return true;
	if (cookie == b + 1) {
		ck[1] = cookie;
		return true;
	}
	if (cookie + 1 == a) {
		ck[0] = cookie;
		return true;
	}
	return false;
}

static int ksock_ack_cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Descending (popped from the end: ascending), so that neighbours fold
 * into ranges and pairs. */
void ksock_acks_sort(uint64_t *acks, unsigned n)
{
	qsort(acks, n, sizeof(*acks), ksock_ack_cmp_desc);
}

uint64_t ksock_cookie_next(uint64_t *counter)
{
	uint64_t c = *counter;

	if (c <= KSOCK_KEEPALIVE_COOKIE)
		c = KSOCK_KEEPALIVE_COOKIE + 1;
	*counter = c + 1;
	return c;
}

/* --- connection rules ---------------------------------------------------------- */

bool ksock_race_refuse(const ulnet_nid_t *peer_nid, const ulnet_nid_t *my_nid, bool connecting)
{
	return connecting && ulnet_nid_cmp(peer_nid, my_nid) < 0;
}

enum ksock_admit ksock_admit(const struct ksock_admit_in *in)
{
	if (!in->active && ksock_race_refuse(in->peer_nid, in->my_nid, in->connecting))
		return KSOCK_ADMIT_RACE;
	if (in->peer_known) {
		if (in->peer_incarnation != in->incarnation)
			return KSOCK_ADMIT_REBOOT;
		/* the version must agree; each conn has its own byte order */
		if (!in->peer_proto || !in->conn_proto ||
		    in->peer_proto->version != in->conn_proto->version)
			return KSOCK_ADMIT_WRONG_PROTO;
	}
	if (in->active && in->hello_rc == EALREADY)
		return KSOCK_ADMIT_LOST_RACE;
	if (in->active && in->hello_rc == EPROTO)
		return KSOCK_ADMIT_RETRY_PROTO;
	if (!in->loopback && in->ndup >= (in->conns_per_peer > 0 ? in->conns_per_peer : 1))
		return KSOCK_ADMIT_DUP;
	return KSOCK_ADMIT_OK;
}

const char *ksock_admit_str(enum ksock_admit a)
{
	switch (a) {
	case KSOCK_ADMIT_OK:
		return "ok";
	case KSOCK_ADMIT_RACE:
		return "connection race resolution";
	case KSOCK_ADMIT_REBOOT:
		return "peer rebooted";
	case KSOCK_ADMIT_WRONG_PROTO:
		return "wrong proto version";
	case KSOCK_ADMIT_LOST_RACE:
		return "lost conn race";
	case KSOCK_ADMIT_RETRY_PROTO:
		return "retry with different protocol version";
	case KSOCK_ADMIT_DUP:
		return "duplicate";
	}
	return "?";
}

int ksock_hello_check_reply(const struct ksock_hello *h, const ulnet_nid_t *target_nid,
			    ulnet_pid_t target_pid, unsigned sent_version, int sent_ctype,
			    const char **why)
{
	if (ulnet_nid_is_any(&h->src_nid)) {
		*why = "HELLO with NID ANY";
		return -EPROTO;
	}
	/* A user-space peer puts USERFLAG on its PID; the caller asked for
	 * the plain PID (deliberate difference: the kernel compares all bits). */
	if (!ulnet_nid_same(&h->src_nid, target_nid) ||
	    (h->src_pid & ~ULNET_PID_USERFLAG) != (target_pid & ~ULNET_PID_USERFLAG)) {
		*why = "they claimed another NID/PID";
		return -EPROTO;
	}
	if (h->ctype == SOCKLND_CONN_NONE)
		return h->version == sent_version ? EALREADY : EPROTO;
	if (h->version != sent_version)
		return EPROTO;
	if (ksock_invert_ctype(h->ctype) != sent_ctype || h->ctype == SOCKLND_CONN_NONE) {
		*why = "mismatched connection type";
		return -EPROTO;
	}
	return 0;
}

bool ksock_nid_is_addr(const ulnet_nid_t *nid, const struct sockaddr_storage *sa)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *ip;
	size_t len;

	if (sa->ss_family == AF_INET) {
		ip = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
		len = 4;
	} else if (sa->ss_family == AF_INET6) {
		ip = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		len = 16;
		if (!memcmp(ip, v4mapped, sizeof(v4mapped))) {
			ip += 12;
			len = 4;
		}
	} else {
		return false;
	}
	/* nid.size counts the address bytes past the first 4 (0 for IPv4) */
	return (size_t)nid->size + 4 == len && !memcmp(nid->addr, ip, len);
}

int ksock_hello_check_passive(const struct ksock_hello *h, const char **why)
{
	if (ulnet_nid_is_any(&h->src_nid)) {
		*why = "HELLO with NID ANY";
		return -EPROTO;
	}
	/* V4 carries nips but no list: ignored on receipt */
	if (h->version != KSOCK_PROTO_V4 && h->nips > KSOCK_HELLO_MAX_IPS) {
		*why = "too many IPs in HELLO";
		return -EPROTO;
	}
	for (uint32_t i = 0; h->version != KSOCK_PROTO_V4 && i < h->nips; i++) {
		if (h->ips[i] == 0) {
			*why = "zero IP in HELLO";
			return -EPROTO;
		}
	}
	if (ksock_invert_ctype(h->ctype) == SOCKLND_CONN_NONE) {
		*why = "bad connection type";
		return -EPROTO;
	}
	return 0;
}

/* --- tunables ------------------------------------------------------------------ */

static int tun_bad(char *why, size_t len, const char *name, int v, const char *range)
{
	snprintf(why, len, "invalid socklnd tunable %s = %d (%s)", name, v, range);
	return -EINVAL;
}

/* on/off settings: 0 default, 1 on, -1 off */
static int tun_bool(int v, bool def, bool *out, const char *name, char *why, size_t len)
{
	if (v < -1 || v > 1)
		return tun_bad(why, len, name, v, "1 on, -1 off, 0 default");
	*out = v == 0 ? def : v > 0;
	return 0;
}

/* 0 default, -1 off (0), else lo..hi */
static int tun_int(int v, int def, bool off_ok, int lo, int hi, int *out, const char *name,
		   char *why, size_t len)
{
	char range[64];

	if (v == 0) {
		*out = def;
		return 0;
	}
	if (v == -1 && off_ok) {
		*out = 0;
		return 0;
	}
	if (v < lo || v > hi) {
		snprintf(range, sizeof(range), "%s%d..%d, 0 default", off_ok ? "-1 off, " : "", lo, hi);
		return tun_bad(why, len, name, v, range);
	}
	*out = v;
	return 0;
}

int ksock_tun_resolve(const struct ulnet_ni_conf *conf, int family, struct ksock_tun *t,
		      char *why, size_t whylen, char *note, size_t notelen)
{
	const struct ulnet_sock_tunables *s = &conf->sock;
	bool ka_off;
	int v, rc;

	memset(t, 0, sizeof(*t));
	if (note && notelen)
		note[0] = 0;
#define TRY(x) do { rc = (x); if (rc < 0) return rc; } while (0)
	/* -1: the global lnd_timeout (0 here: the caller reads it) */
	if (s->sock_timeout == -1)
		t->sock_timeout = 0;
	else
		TRY(tun_int(s->sock_timeout, KSOCK_SOCK_TIMEOUT_S, false, 1, 86400,
			    &t->sock_timeout, "sock_timeout", why, whylen));
	TRY(tun_int(s->keepalive, KSOCK_KEEPALIVE_S, true, 1, 86400, &t->keepalive, "keepalive",
		    why, whylen));
	TRY(tun_int(s->keepalive_idle, KSOCK_KEEPALIVE_IDLE, true, 1, 32767, &t->keepalive_idle,
		    "keepalive_idle", why, whylen));
	TRY(tun_int(s->keepalive_count, KSOCK_KEEPALIVE_COUNT, true, 1, 127, &t->keepalive_count,
		    "keepalive_count", why, whylen));
	TRY(tun_int(s->keepalive_intvl, KSOCK_KEEPALIVE_INTVL, true, 1, 32767,
		    &t->keepalive_intvl, "keepalive_intvl", why, whylen));
	/* as the kernel: any of the three off turns TCP keepalive off */
	ka_off = !t->keepalive_idle || !t->keepalive_count || !t->keepalive_intvl;
	if (ka_off)
		t->keepalive_idle = t->keepalive_count = t->keepalive_intvl = 0;
	TRY(tun_int(s->min_bulk, KSOCK_MIN_BULK, false, 1, 0x7fffffff, &v, "min_bulk", why,
		    whylen));
	t->min_bulk = (size_t)v;
	TRY(tun_int(s->zc_min_payload, KSOCK_ZC_MIN_PAYLOAD, true, 1, 0x7fffffff, &v,
		    "zc_min_payload", why, whylen));
	if (v > 0 && v < KSOCK_ZC_MIN_PAYLOAD_FLOOR) {
		if (note && notelen)
			snprintf(note, notelen, "zc_min_payload %d raised to the floor %d", v,
				 KSOCK_ZC_MIN_PAYLOAD_FLOOR);
		v = KSOCK_ZC_MIN_PAYLOAD_FLOOR;
	}
	t->zc_min_payload = (size_t)v;
	TRY(tun_bool(s->enable_csum, false, &t->enable_csum, "enable_csum", why, whylen));
	TRY(tun_bool(s->nonblk_zcack, true, &t->nonblk_zcack, "nonblk_zcack", why, whylen));
	TRY(tun_bool(s->typed_conns, true, &t->typed_conns, "typed_conns", why, whylen));
	TRY(tun_bool(s->nagle, false, &t->nagle, "nagle", why, whylen));
	TRY(tun_int(s->tx_buffer_size, 0, false, 1, 0x7fffffff, &t->tx_buffer_size,
		    "tx_buffer_size", why, whylen));
	TRY(tun_int(s->rx_buffer_size, 0, false, 1, 0x7fffffff, &t->rx_buffer_size,
		    "rx_buffer_size", why, whylen));
	TRY(tun_int(s->min_reconnectms, KSOCK_MIN_RECONNECT_MS, false, 1, 0x7fffffff, &v,
		    "min_reconnectms", why, whylen));
	t->min_reconnect_ms = (uint64_t)v;
	TRY(tun_int(s->max_reconnectms, 0, false, 1, 0x7fffffff, &v, "max_reconnectms", why,
		    whylen));
	if (v == 0) {
		t->max_reconnect_ms = KSOCK_MAX_RECONNECT_MS > t->min_reconnect_ms
					      ? KSOCK_MAX_RECONNECT_MS : t->min_reconnect_ms;
	} else if ((uint64_t)v < t->min_reconnect_ms) {
		snprintf(why, whylen,
			 "invalid socklnd tunable max_reconnectms = %d (below min_reconnectms %llu)", v,
			 (unsigned long long)t->min_reconnect_ms);
		return -EINVAL;
	} else {
		t->max_reconnect_ms = (uint64_t)v;
	}
	if (s->protocol == 0) {
		t->protocol = ksock_proto_default_version(family);
	} else if (s->protocol < KSOCK_PROTO_V2 || s->protocol > KSOCK_PROTO_V4) {
		return tun_bad(why, whylen, "protocol", s->protocol, "2, 3 or 4, 0 default");
	} else if (family == AF_INET6 && s->protocol != KSOCK_PROTO_V4) {
		return tun_bad(why, whylen, "protocol", s->protocol,
			       "an IPv6 NID needs HELLO V4");
	} else {
		t->protocol = (unsigned)s->protocol;
	}
	if (!t->typed_conns && t->protocol != KSOCK_PROTO_V2)
		return tun_bad(why, whylen, "typed_conns", s->typed_conns,
			       "untyped (ANY) connections need protocol = 2");
	v = conf->tun.conns_per_peer;
	if (v < 0 || v > ULNET_MAX_CONNS_PER_PEER)
		return tun_bad(why, whylen, "conns_per_peer", v, "0..127, 0 default");
	t->conns_per_peer = v ? v : 1;
	v = conf->tun.tos;
	if (v < -1 || v > 255)
		return tun_bad(why, whylen, "tos", v, "-1 leave, 0..255");
	t->tos = v;
#undef TRY
	return 0;
}

uint32_t ksock_csum_msg(const uint8_t *hdr, size_t hdr_len, const struct iovec *iov,
			unsigned niov, size_t off, size_t plen)
{
	uint32_t crc = ksock_csum(KSOCK_CSUM_SEED, hdr, hdr_len);

	for (unsigned i = 0; i < niov && plen; i++) {
		size_t len = iov[i].iov_len;

		if (off >= len) {
			off -= len;
			continue;
		}
		len -= off;
		if (len > plen)
			len = plen;
		crc = ksock_csum(crc, (const uint8_t *)iov[i].iov_base + off, len);
		plen -= len;
		off = 0;
	}
	return crc;
}

int ksock_speed_cpp(long mbps)
{
	int log2 = 0;

	if (mbps < 1000)
		mbps = 1000;
	for (long g = mbps / 1000; g > 1; g >>= 1)
		log2++;
	return log2 / 2 + 1;
}
