/* SPDX-License-Identifier: MIT */
/*
 * ctl_ip2nets.h - ip2nets: the networks of a node chosen by the IP
 * addresses of its interfaces, in the two forms LNet 2.17 has.
 *
 * - lnetctl's YAML rules (`ip2nets:` in `import` and ulnetd --config):
 *   each rule names a net (`net-spec`), optionally interfaces and
 *   optionally IP ranges (`ip-range`: an IPv4 range expression
 *   "10.0.[1-4].*", or an IPv6 address with an optional prefix length
 *   "2001:db8::1/64"). ip2n_rule_resolve() picks the interfaces of the
 *   node the rule configures, as liblnetconfig does.
 * - the kernel's string (the lnet module parameter `ip2nets=`, and
 *   `net add --ip2net`): entries "NETWORKS PATTERN..." separated by ';'
 *   or newlines, '#' comments; an entry whose IPv4 pattern matches an
 *   address of the node contributes its NETWORKS (a networks= string).
 *   ip2n_kernel_networks() does what the kernel's lnet_parse_ip2nets()
 *   does.
 *
 * The IP ranges are parsed by the NID list parser (ulnet_nidlist_parse,
 * src/core/nidlist.c), the kernel's syntax for the address part of a NID
 * range. Interfaces and addresses come from ip2n_addrs_get() (getifaddrs),
 * or from a test.
 */
#ifndef ULNET_TOOLS_CTL_IP2NETS_H
#define ULNET_TOOLS_CTL_IP2NETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ulnet/nid.h"

#define IP2N_IFNAME_SIZE 16     /* IFNAMSIZ */
#define IP2N_MAX_IFS 64         /* interfaces one rule may list */
#define IP2N_MAX_RANGES 64      /* ip-ranges one rule may list */
#define IP2N_RANGE_MAX 256      /* one ip-range, in bytes */
#define IP2N_ENTRY_MAX 4096     /* one entry of the kernel's string (its text buffer) */
#define IP2N_NETWORKS_MAX 4096  /* the networks the kernel's string yields */

/* One address of an interface (or the interface itself, without one). */
struct ip2n_addr {
	char name[IP2N_IFNAME_SIZE];
	bool up;
	bool loopback;
	int family;             /* AF_INET, AF_INET6, or AF_UNSPEC: the link */
	uint8_t addr[16];       /* network order; IPv4 in addr[0..3] */
};

/* The node's interfaces and addresses, in getifaddrs order. */
struct ip2n_addrs {
	struct ip2n_addr *v;
	int n;
};

/* Read them (getifaddrs). 0 or a negative errno. */
int ip2n_addrs_get(struct ip2n_addrs *a);
void ip2n_addrs_free(struct ip2n_addrs *a);

/*
 * One ip-range of a YAML rule: an IPv4 range expression (four fields,
 * each a number, "*" or "[a,b-c,d-e/s]") or an IPv6 address, with an
 * optional "/PREFIX" (1..128; none is /128). `v4_only`: the kernel's
 * patterns, which are IPv4 only. Returns 0 and a list to free with
 * ulnet_nidlist_free(), or -EINVAL with the reason in `why`.
 */
int ip2n_range_parse(const char *s, bool v4_only, ulnet_nidlist_t **out, char *why, size_t wl);
/* True if address `a` (AF_INET or AF_INET6) is in the range. */
bool ip2n_range_match(const ulnet_nidlist_t *range, const struct ip2n_addr *a);

/* One rule of lnetctl's ip2nets YAML. */
struct ip2n_rule {
	ulnet_net_t net;
	int nifs;
	char ifs[IP2N_MAX_IFS][IP2N_IFNAME_SIZE];
	int nranges;
	ulnet_nidlist_t *ranges[IP2N_MAX_RANGES];
};

void ip2n_rule_init(struct ip2n_rule *r);
void ip2n_rule_free(struct ip2n_rule *r);
/* Add an interface name ("eth0"); -EINVAL (why) for a bad or repeated
 * name or too many, -EOPNOTSUPP for a CPT expression ("eth0[1]"). */
int ip2n_rule_add_if(struct ip2n_rule *r, const char *name, char *why, size_t wl);
/* Add an ip-range (ip2n_range_parse); -EINVAL (why). */
int ip2n_rule_add_range(struct ip2n_rule *r, const char *range, char *why, size_t wl);

/*
 * The interfaces rule `r` configures on a node with addresses `a`, as
 * liblnetconfig resolves a rule:
 * - neither interfaces nor ranges: the first interface that is up, not
 *   "lo", with an IPv4 address;
 * - ranges only: every interface that is up with an address in a range;
 * - interfaces (and maybe ranges): all of them, each up and, with ranges,
 *   with an address in one; otherwise the rule does not match.
 * Returns 0 with the names in out[0..*n), or -ENOMSG (no match, the reason
 * in `why`).
 */
int ip2n_rule_resolve(const struct ip2n_rule *r, const struct ip2n_addrs *a,
		      char (*out)[IP2N_IFNAME_SIZE], int max, int *n, char *why, size_t wl);

/*
 * The kernel's ip2nets string `s` against the IPv4 addresses of the
 * interfaces of `a` that are up and not loopback (`a` NULL: check the
 * syntax only). The NETWORKS of each matching entry, joined with ',', go
 * to `nets` (at least IP2N_NETWORKS_MAX + 1 bytes; may be NULL when `a`
 * is). Returns the number of matching entries, or -EINVAL (syntax) /
 * -E2BIG (too long) with the reason in `why`.
 */
int ip2n_kernel_networks(const char *s, const struct ip2n_addrs *a, char *nets, size_t netslen,
			 char *why, size_t wl);

#endif
