/* SPDX-License-Identifier: MIT */
/*
 * nid_str.c - text forms of nets and NIDs, as the kernel's libcfs prints and
 * parses them ("192.168.1.2@tcp", "0@lo", "12@gni3", "2001:db8::1@tcp1").
 *
 * Behaviour follows lustre-release 2.17 (lnet/lnet/nidstrings.c):
 *  - net names are matched by prefix, the rest must be a decimal number;
 *    "lo" takes no number at all ("lo0" is refused, as in the kernel);
 *  - a NID without "@<net>" is on tcp0, like libcfs_strnid();
 *  - the address of an "@lo" NID is not looked at: it is always 0;
 *  - "<?>" is the ANY NID (the kernel prints ANY that way and reads it back);
 *  - gip has no IPv6 form (the kernel gives it no size-aware address hooks).
 * Deliberately stricter than the kernel's sscanf-based paths: no whitespace,
 * no signs, and numbers that do not fit are refused instead of truncated.
 * Host names are not resolved (the parser is pure).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ulnet/nid.h"
#include "util/util_bytes.h"

enum nidstr_kind {
	NIDSTR_IP,	/* IPv4 or IPv6 */
	NIDSTR_IP4,	/* IPv4 only */
	NIDSTR_NUM,	/* 32-bit number */
	NIDSTR_LO,	/* address ignored, always 0 */
};

struct nidstr_lnd {
	uint8_t type;
	uint8_t kind;
	const char *name;
};

/* The kernel's table order; no name is a prefix of another. */
static const struct nidstr_lnd nidstr_lnds[] = {
	{ ULNET_LND_LO, NIDSTR_LO, "lo" },
	{ ULNET_LND_TCP, NIDSTR_IP, "tcp" },
	{ ULNET_LND_O2IB, NIDSTR_IP, "o2ib" },
	{ ULNET_LND_GNI, NIDSTR_NUM, "gni" },
	{ ULNET_LND_GIP, NIDSTR_IP4, "gip" },
	{ ULNET_LND_PTLF, NIDSTR_NUM, "ptlf" },
	{ ULNET_LND_KFI, NIDSTR_NUM, "kfi" },
	{ ULNET_LND_EFA, NIDSTR_IP, "efa" },
	{ ULNET_LND_BXI3F, NIDSTR_NUM, "bxi3f" },
};

#define NIDSTR_NLNDS (sizeof(nidstr_lnds) / sizeof(nidstr_lnds[0]))
/* Longest piece of input quoted back in an error message. */
#define NIDSTR_QUOTE_MAX 48

static const struct nidstr_lnd *nidstr_lnd_by_type(unsigned type)
{
	for (size_t i = 0; i < NIDSTR_NLNDS; i++)
		if (nidstr_lnds[i].type == type)
			return &nidstr_lnds[i];
	return NULL;
}

__attribute__((format(printf, 3, 4)))
static int nidstr_fail(struct ulnet_parse_err *err, size_t pos, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -EINVAL;
	err->pos = (int)pos;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Quote at most NIDSTR_QUOTE_MAX bytes of a piece of input. */
#define NIDSTR_Q(len) ((int)((len) > NIDSTR_QUOTE_MAX ? NIDSTR_QUOTE_MAX : (len)))

static bool nidstr_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

static int nidstr_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Parse "<name>[<decimal>]" of `len` bytes at `s`; `base` is the offset of s
 * in the caller's input, for error positions.
 */
static int nidstr_net_parse(const char *s, size_t len, size_t base, ulnet_net_t *net,
			    const struct nidstr_lnd **lndp, struct ulnet_parse_err *err)
{
	const struct nidstr_lnd *lnd = NULL;
	size_t nl = 0, i;
	uint32_t num = 0;

	if (len == 0)
		return nidstr_fail(err, base, "missing network name");
	for (i = 0; i < NIDSTR_NLNDS; i++) {
		nl = strlen(nidstr_lnds[i].name);
		if (nl <= len && memcmp(s, nidstr_lnds[i].name, nl) == 0) {
			lnd = &nidstr_lnds[i];
			break;
		}
	}
	/* "tcpip" is an unknown type, "tcp1x" a bad number. */
	if (!lnd || (nl < len && !nidstr_isdigit(s[nl])))
		return nidstr_fail(err, base, "unknown network type '%.*s'", NIDSTR_Q(len), s);
	if (nl < len && lnd->kind == NIDSTR_LO)
		return nidstr_fail(err, base + nl, "network 'lo' takes no number");
	for (i = nl; i < len; i++) {
		if (!nidstr_isdigit(s[i]))
			return nidstr_fail(err, base + nl, "bad net number '%.*s'",
					   NIDSTR_Q(len - nl), s + nl);
		if (num <= 0xffff)	/* saturate: keeps the check overflow-free */
			num = num * 10 + (uint32_t)(s[i] - '0');
	}
	if (num > 0xffff)
		return nidstr_fail(err, base + nl, "net number %.*s out of range",
				   NIDSTR_Q(len - nl), s + nl);
	*net = ulnet_mknet(lnd->type, num);
	if (lndp)
		*lndp = lnd;
	return 0;
}

int ulnet_net_parse(const char *s, ulnet_net_t *net, struct ulnet_parse_err *err)
{
	return nidstr_net_parse(s, strlen(s), 0, net, NULL, err);
}

const char *ulnet_lnd_type_name(unsigned type)
{
	const struct nidstr_lnd *lnd = nidstr_lnd_by_type(type);

	return lnd ? lnd->name : NULL;
}

/* Copy a formatted string of length n out, or report -ENOSPC. */
static int nidstr_out(const char *tmp, int n, char *buf, size_t len)
{
	if (n < 0)
		return -EINVAL;
	if ((size_t)n + 1 > len) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	memcpy(buf, tmp, (size_t)n + 1);
	return n;
}

int ulnet_net_format(ulnet_net_t net, char *buf, size_t len)
{
	const struct nidstr_lnd *lnd = nidstr_lnd_by_type(ulnet_net_type(net));
	char tmp[ULNET_NETSTR_SIZE];
	int n;

	if (!lnd)
		return -EINVAL;
	if (ulnet_net_num(net) == 0)
		n = snprintf(tmp, sizeof(tmp), "%s", lnd->name);
	else
		n = snprintf(tmp, sizeof(tmp), "%s%u", lnd->name, ulnet_net_num(net));
	return nidstr_out(tmp, n, buf, len);
}

/* Strict dotted quad: four decimal fields 0-255, nothing else. */
static bool nidstr_ipv4_parse(const char *s, size_t len, uint8_t out[4])
{
	size_t i = 0;

	for (int f = 0; f < 4; f++) {
		unsigned v = 0, nd = 0;

		if (f > 0) {
			if (i >= len || s[i] != '.')
				return false;
			i++;
		}
		while (i < len && nidstr_isdigit(s[i]) && nd < 4) {
			v = v * 10 + (unsigned)(s[i] - '0');
			i++;
			nd++;
		}
		if (nd == 0 || nd > 3 || v > 255)
			return false;
		out[f] = (uint8_t)v;
	}
	return i == len;
}

/* "0x" hex or decimal, fitting 32 bits. */
static bool nidstr_num_parse(const char *s, size_t len, uint32_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < len; i++) {
			int d = nidstr_hexval(s[i]);

			if (d < 0)
				return false;
			v = v * 16 + (uint64_t)d;
			if (v > 0xffffffffu)
				return false;
		}
	} else {
		if (len == 0)
			return false;
		for (i = 0; i < len; i++) {
			if (!nidstr_isdigit(s[i]))
				return false;
			v = v * 10 + (uint64_t)(s[i] - '0');
			if (v > 0xffffffffu)
				return false;
		}
	}
	*out = (uint32_t)v;
	return true;
}

int ulnet_nid_parse(const char *s, ulnet_nid_t *nid, struct ulnet_parse_err *err)
{
	const struct nidstr_lnd *lnd;
	const char *at = strchr(s, '@');
	size_t alen = at ? (size_t)(at - s) : strlen(s);
	ulnet_nid_t tmp;
	ulnet_net_t net;
	int rc;

	if (!at && strcmp(s, "<?>") == 0) {
		*nid = ULNET_NID_ANY;
		return 0;
	}
	if (at) {
		rc = nidstr_net_parse(at + 1, strlen(at + 1), alen + 1, &net, &lnd, err);
		if (rc)
			return rc;
	} else {
		/* The kernel reads a bare address as a tcp0 NID. */
		net = ulnet_mknet(ULNET_LND_TCP, 0);
		lnd = nidstr_lnd_by_type(ULNET_LND_TCP);
	}

	memset(&tmp, 0, sizeof(tmp));
	tmp.type = (uint8_t)ulnet_net_type(net);
	tmp.num = (uint16_t)ulnet_net_num(net);

	switch (lnd->kind) {
	case NIDSTR_LO:
		break;
	case NIDSTR_NUM: {
		uint32_t v;

		if (alen == 0)
			return nidstr_fail(err, 0, "missing address");
		if (!nidstr_num_parse(s, alen, &v))
			return nidstr_fail(err, 0, "bad numeric address '%.*s'",
					   NIDSTR_Q(alen), s);
		ul_put_be32(tmp.addr, v);
		break;
	}
	case NIDSTR_IP:
	case NIDSTR_IP4:
		if (alen == 0)
			return nidstr_fail(err, 0, "missing address");
		if (memchr(s, ':', alen)) {
			char a6[INET6_ADDRSTRLEN];

			if (lnd->kind == NIDSTR_IP4)
				return nidstr_fail(err, 0, "network type '%s' has no IPv6 addresses",
						   lnd->name);
			if (alen >= sizeof(a6))
				return nidstr_fail(err, 0, "bad IPv6 address '%.*s'",
						   NIDSTR_Q(alen), s);
			memcpy(a6, s, alen);
			a6[alen] = '\0';
			if (inet_pton(AF_INET6, a6, tmp.addr) != 1)
				return nidstr_fail(err, 0, "bad IPv6 address '%.*s'",
						   NIDSTR_Q(alen), s);
			tmp.size = 12;
		} else if (!nidstr_ipv4_parse(s, alen, tmp.addr)) {
			return nidstr_fail(err, 0, "bad IPv4 address '%.*s'", NIDSTR_Q(alen), s);
		}
		break;
	}
	*nid = tmp;
	return 0;
}

int ulnet_nid_format(const ulnet_nid_t *nid, char *buf, size_t len)
{
	const struct nidstr_lnd *lnd;
	char tmp[ULNET_NIDSTR_SIZE];
	int n;

	if (ulnet_nid_is_any(nid))
		return nidstr_out("<?>", 3, buf, len);
	if (nid->size != 0 && nid->size != 12)
		return -EINVAL;

	lnd = nidstr_lnd_by_type(nid->type);
	if (!lnd) {
		/* Unknown type: the kernel prints hex words and "<type:num>". */
		int words = (nid->size + 4 + 3) / 4;

		n = 0;
		for (int i = 0; i < words; i++)
			n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%s%x", i ? ":" : "",
				      ul_get_be32(nid->addr + 4 * i));
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "@<%u:%u>", nid->type, nid->num);
		return nidstr_out(tmp, n, buf, len);
	}

	if (nid->size == 12) {
		/* Only IPv6-capable nets have a text form for a 16-byte address. */
		if (lnd->kind != NIDSTR_IP ||
		    !inet_ntop(AF_INET6, nid->addr, tmp, sizeof(tmp)))
			return -EINVAL;
		n = (int)strlen(tmp);
	} else if (lnd->kind == NIDSTR_IP || lnd->kind == NIDSTR_IP4) {
		n = snprintf(tmp, sizeof(tmp), "%u.%u.%u.%u", nid->addr[0], nid->addr[1],
			     nid->addr[2], nid->addr[3]);
	} else {
		n = snprintf(tmp, sizeof(tmp), "%u", ul_get_be32(nid->addr));
	}
	if (nid->num == 0)
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "@%s", lnd->name);
	else
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "@%s%u", lnd->name, nid->num);
	return nidstr_out(tmp, n, buf, len);
}

const char *ulnet_nid_str(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE])
{
	if (ulnet_nid_format(nid, buf, ULNET_NIDSTR_SIZE) < 0)
		snprintf(buf, ULNET_NIDSTR_SIZE, "<bad nid>");
	return buf;
}
