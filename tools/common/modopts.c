/* SPDX-License-Identifier: MIT */
/*
 * modopts.c - the lnet and ksocklnd module parameters ulnetd takes
 * (modopts.h): the table of every parameter of the two 2.17 modules and
 * what becomes of it (ko2iblnd's is modopts_o2ib.c's), the values as the
 * kernel parses them, and the modprobe.d syntax of --module-options files.
 */
#include "modopts_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_ip2nets.h"
#include "ctl_render.h"

int modopts_errf(char *buf, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return rc;
}

static void mo_log(struct modopts *mo, enum ulnet_log_level lvl, const char *msg)
{
	if (mo->log)
		mo->log(mo->log_arg, lvl, msg);
	else
		fprintf(stderr, "ulnetd: %s: %s\n", lvl == ULNET_LOG_ERROR ? "error" : "warn", msg);
}

void mo_warn(struct mo_call *c, const char *fmt, ...)
{
	char msg[700], full[1100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s: %s.%s=%.64s: %s", c->where, c->p->module, c->p->name,
		 c->v, msg);
	mo_log(c->mo, ULNET_LOG_WARN, full);
}

void mo_copy_where(char *dst, const char *where)
{
	snprintf(dst, MODOPT_WHERE_MAX, "%s", where);
}

/* --- generic handlers ---------------------------------------------------------- */

/* A parameter ulnet has no counterpart for. */
int mo_h_unsup(struct mo_call *c)
{
	return why(c, -EOPNOTSUPP, "not supported by ulnet: %s", c->p->text);
}

/* A no-op in the 2.17 kernel too (deprecated, or read by nothing): the
 * kernel takes it and does nothing; so do we, saying so. */
int mo_h_noop(struct mo_call *c)
{
	mo_warn(c, "%s; ignored (as the kernel does)", c->p->text);
	return 0;
}

/* ulnet behaves as this parameter set to `arg` (0: off, 1: on, as the
 * kernel reads it: any non-zero value is on), and cannot otherwise. */
int mo_h_fixed_bool(struct mo_call *c)
{
	if ((c->n != 0) == (c->p->arg != 0))
		return 0;
	return why(c, -EOPNOTSUPP, "not supported by ulnet: only %s=%d: %s", c->p->name, c->p->arg,
		   c->p->text);
}

/* As mo_h_fixed_bool, for an exact number. */
int mo_h_fixed_int(struct mo_call *c)
{
	if (c->n == c->p->arg)
		return 0;
	return why(c, -EOPNOTSUPP, "not supported by ulnet: only %s=%d: %s", c->p->name, c->p->arg,
		   c->p->text);
}

/* --- lnet: networks, routes, forwarding, acceptor, config_on_load -------------- */

static int h_networks(struct mo_call *c)
{
	struct modopts *mo = c->mo;
	int n = 0, rc;

	if (strlen(c->v) > MODOPT_NETWORKS_MAX)
		return why(c, -EINVAL, "longer than %d bytes (the kernel's limit)", MODOPT_NETWORKS_MAX);
	rc = modopts_parse_networks(c->v, mo->nis, MODOPT_MAX_NIS, &n, c->why, sizeof(c->why));
	if (rc < 0) {
		mo->nnis = 0;
		mo->networks_set = false;
		return rc;
	}
	mo->nnis = n;
	mo->networks_set = true;
	mo->networks_named = *c->v != '\0';
	mo_copy_where(mo->networks_where, c->where);
	return 0;
}

/* ip2nets=: the syntax now (every entry, as the kernel parses every
 * pattern), the matching against the node's addresses when LNet is
 * configured (modopts_configure), as the kernel's lnet_parse_ip2nets(). */
static int h_ip2nets(struct mo_call *c)
{
	struct modopts *mo = c->mo;
	int rc = ip2n_kernel_networks(c->v, NULL, NULL, 0, c->why, sizeof(c->why));

	if (rc < 0)
		return rc;
	/* a later setting replaces an earlier one; "" (the kernel's
	 * default) is no ip2nets */
	free(mo->ip2nets);
	mo->ip2nets = NULL;
	if (*c->v && !(mo->ip2nets = strdup(c->v)))
		return why(c, -ENOMEM, "out of memory");
	mo_copy_where(mo->ip2nets_where, c->where);
	return 0;
}

static int h_routes(struct mo_call *c)
{
	struct modopts *mo = c->mo;
	struct modopt_route *r = NULL;
	int n = 0;
	int rc = modopts_parse_routes(c->v, &r, &n, c->why, sizeof(c->why));

	if (rc < 0)
		return rc;
	/* the last setting wins, as the kernel's (a later `options lnet
	 * routes=` line replaces the string) */
	free(mo->routes);
	mo->routes = r;
	mo->nroutes = n;
	mo->routes_set = true;
	mo_copy_where(mo->routes_where, c->where);
	return 0;
}

static int h_forwarding(struct mo_call *c)
{
	if (strcmp(c->v, "") == 0)
		c->mo->forwarding = -1;
	else if (strcmp(c->v, "enabled") == 0)
		c->mo->forwarding = 1;
	else if (strcmp(c->v, "disabled") == 0)
		c->mo->forwarding = 0;
	else
		return why(c, -EINVAL, "'%.64s' is neither 'enabled' nor 'disabled'", c->v);
	return 0;
}

bool modopts_accept_mode_ok(const char *mode)
{
	return strcmp(mode, "secure") == 0 || strcmp(mode, "all") == 0 || strcmp(mode, "none") == 0;
}

static int h_accept(struct mo_call *c)
{
	if (!modopts_accept_mode_ok(c->v))
		return why(c, -EINVAL, "'%.64s' is not one of secure, all, none", c->v);
	snprintf(c->mo->accept, sizeof(c->mo->accept), "%s", c->v);
	return 0;
}

static int h_accept_port(struct mo_call *c)
{
	if (c->n < 1 || c->n > 65535)
		return why(c, -EINVAL, "%lld is not a port (1..65535)", c->n);
	c->mo->accept_port = (int)c->n;
	return 0;
}

/* Read by lnetctl's ksocklnd-config script (from /sys), not by the
 * module: net add then sets up no Multi-Rail routing (ctl_mrroute.h). */
static int h_skip_mr(struct mo_call *c)
{
	c->mo->skip_mr_route_setup = c->n != 0;
	return 0;
}

static int h_accept_bulk(struct mo_call *c)
{
	if (c->n < 1 || c->n > 65535)
		return why(c, -EINVAL, "%lld is not a port (1..65535)", c->n);
	/* the port bulk connections are dialled to and taken on, beside
	 * accept_port's (the same one: a single listener) */
	c->mo->accept_port_bulk = (int)c->n;
	return 0;
}

static int h_accept_backlog(struct mo_call *c)
{
	if (c->n < MODOPT_BACKLOG_MIN || c->n > MODOPT_BACKLOG_MAX)
		return why(c, -EINVAL, "%lld is out of range (%d..%d)", c->n, MODOPT_BACKLOG_MIN,
			   MODOPT_BACKLOG_MAX);
	c->mo->accept_backlog = (int)c->n;
	return 0;
}

/* ulnetd configures LNet when it starts (its start is the kernel's load
 * with config_on_load=1 and "lnetctl lnet configure --all"): 1 is what it
 * does; 0 asks for what it cannot do. */
static int h_config_on_load(struct mo_call *c)
{
	if (c->n != 0)
		return 0;
	return why(c, -EOPNOTSUPP, "not supported by ulnet: ulnetd configures LNet when it starts "
		   "(use 'ulnetctl lnet unconfigure' to take it down)");
}

/* --- lnet: globals (the lnet_* parameters), with the kernel's checks ------------ */

enum { G_NUMA, G_HEALTH, G_RECOVERY_LIMIT, G_MAX_RPI, G_IFMAX, G_DISCOVERY_OFF, G_DROP_ASYM,
       G_TT, G_RETRY, G_RESPONSE, G_RTR_SENS };

static int h_global(struct mo_call *c)
{
	struct ulnet_globals *g = &c->mo->g;
	long long n = c->n;

	/* every global is an int in ulnet */
	if (n > INT_MAX)
		return why(c, -EINVAL, "%lld is out of range (at most %d)", n, INT_MAX);
	switch (c->p->arg) {
	case G_NUMA:
		g->numa_range = (int)n;
		break;
	case G_HEALTH:
		if (n > ULNET_MAX_HEALTH)
			return why(c, -EINVAL, "%lld is out of range (0..%d)", n, ULNET_MAX_HEALTH);
		/* the kernel: turning health off turns retries off with it */
		if (g->health_sensitivity != 0 && n == 0 && g->retry_count != 0) {
			mo_warn(c, "health off: lnet_retry_count set to 0 with it, as the kernel does");
			g->retry_count = 0;
		}
		g->health_sensitivity = (int)n;
		break;
	case G_RECOVERY_LIMIT:
		g->recovery_limit = (int)n;
		break;
	case G_MAX_RPI:
		if (n == 0)
			return why(c, -EINVAL, "must be at least 1");
		g->max_recovery_ping_interval = (int)n;
		break;
	case G_IFMAX:
		/* the kernel takes a value below its minimum as the default */
		if (n < 16) {
			mo_warn(c, "below the minimum, 16: 4096 instead, as the kernel does");
			n = 4096;
		}
		g->max_interfaces = (int)n;
		break;
	case G_DISCOVERY_OFF:
		g->discovery = n ? 0 : 1;
		break;
	case G_DROP_ASYM:
		g->drop_asym_route = n ? 1 : 0;
		break;
	case G_TT:
		if (n == 0 || n <= g->retry_count)
			return why(c, -EINVAL, "must be greater than lnet_retry_count (%d)",
				   g->retry_count);
		g->transaction_timeout = (int)n;
		break;
	case G_RETRY:
		if (g->health_sensitivity == 0 && n > 0)
			return why(c, -EINVAL, "no retries while lnet_health_sensitivity is 0");
		/* the kernel's setter lets it equal the timeout; ulnet, as the
		 * kernel's timeout setter, keeps the timeout above it */
		if (n >= g->transaction_timeout)
			return why(c, -EINVAL, "must be less than lnet_transaction_timeout (%d)",
				   g->transaction_timeout);
		g->retry_count = (int)n;
		break;
	case G_RESPONSE:
		if (n > 3)
			return why(c, -EINVAL, "%lld is out of range (0..3)", n);
		g->response_tracking = (int)n;
		break;
	case G_RTR_SENS:
		if (n > 100)
			return why(c, -EINVAL, "%lld is out of range (0..100)", n);
		g->router_sensitivity = (int)n;
		break;
	default:
		return why(c, -EINVAL, "internal: no such global");
	}
	c->mo->g_set = true;
	return 0;
}

/* --- lnet: router parameters, router buffers, peer_buffer_credits ------------- */

static int h_router(struct mo_call *c)
{
	struct ulnet_router_params *rp = &c->mo->rp;

	switch (c->p->arg) {
	case MO_RP_INTERVAL:
		rp->alive_router_check_interval = (int)c->n; /* <= 0: no periodic check */
		break;
	case MO_RP_TIMEOUT:
		if (c->n < 0)
			return why(c, -EINVAL, "must not be negative");
		rp->router_ping_timeout = (int)c->n;
		break;
	case MO_RP_CHECK:
		rp->check_routers_before_use = c->n != 0;
		break;
	case MO_RP_ASYM:
		rp->avoid_asym_router_failure = c->n != 0;
		break;
	default:
		return why(c, -EINVAL, "internal: no such router parameter");
	}
	c->mo->rp_set |= (unsigned)c->p->arg;
	return 0;
}

static int h_buffers(struct mo_call *c)
{
	/* 0: the default; the kernel refuses a negative count when it
	 * enables routing, ulnet at once */
	if (c->n < 0)
		return why(c, -EINVAL, "must not be negative (0: the default)");
	c->mo->rtr_buffers[c->p->arg] = (long)c->n;
	return 0;
}

static int h_lnet_pbc(struct mo_call *c)
{
	/* the kernel uses it only when positive: else a peer's router
	 * credits are its peer_credits, ulnet's 0 */
	c->mo->lnet_peer_buffer_credits = c->n > 0 ? (int)c->n : 0;
	return 0;
}

/* --- ksocklnd: NI defaults, in ulnet's encoding --------------------------------- */

enum { KT_CREDITS, KT_PEER_CREDITS, KT_PBC, KT_PEER_TIMEOUT, KT_CPP, KT_TOS };

static int h_ktun(struct mo_call *c)
{
	struct ulnet_ni_tunables *t = &c->mo->tun;
	long long n = c->n;

	switch (c->p->arg) {
	case KT_CREDITS:
	case KT_PEER_CREDITS:
		if (n < 1)
			return why(c, -EINVAL, "must be at least 1");
		*(c->p->arg == KT_CREDITS ? &t->credits : &t->peer_credits) = (int)n;
		mo_copy_where(c->mo->credits_where, c->where);
		break;
	case KT_PBC:
		/* as lnet's: used only when positive */
		t->peer_buffer_credits = n > 0 ? (int)n : 0;
		break;
	case KT_PEER_TIMEOUT:
		if (n <= 0)
			return why(c, -EOPNOTSUPP, "not supported by ulnet: %lld (no peer aliveness); "
				   "ulnet's peer_timeout is at least 1", n);
		t->peer_timeout = (int)n;
		break;
	case KT_CPP:
		/* 0: derived from the link speed at NI startup, as the kernel's */
		if (n > ULNET_MAX_CONNS_PER_PEER)
			return why(c, -EINVAL, "%lld is out of range (0..%d)", n, ULNET_MAX_CONNS_PER_PEER);
		t->conns_per_peer = (int)n;
		break;
	case KT_TOS:
		if (n < -1 || n > 255)
			return why(c, -EINVAL, "%lld is out of range (-1..255)", n);
		t->tos = (int)n;
		break;
	default:
		return why(c, -EINVAL, "internal: no such tunable");
	}
	return 0;
}

enum { KS_SOCK_TIMEOUT, KS_KEEPALIVE, KS_KA_IDLE, KS_KA_COUNT, KS_KA_INTVL, KS_MIN_BULK,
       KS_ZC_MIN, KS_CSUM, KS_NBZC, KS_TYPED, KS_NAGLE, KS_TXBUF, KS_RXBUF, KS_MIN_RC,
       KS_MAX_RC, KS_NSCHEDS };

/* A "<= 0 is off" tunable: ulnet's off is -1, else lo..hi. */
static int ks_off_or(struct mo_call *c, int *dst, long long hi)
{
	if (c->n <= 0) {
		*dst = -1;
		return 0;
	}
	if (c->n > hi)
		return why(c, -EINVAL, "%lld is out of range (<= 0 off, 1..%lld)", c->n, hi);
	*dst = (int)c->n;
	return 0;
}

/* A positive tunable (ulnet's 0 would be its default, not the value). */
static int ks_pos(struct mo_call *c, int *dst, long long hi)
{
	if (c->n < 1 || c->n > hi)
		return why(c, -EINVAL, "%lld is out of range (1..%lld)", c->n, hi);
	*dst = (int)c->n;
	return 0;
}

static int h_ksock(struct mo_call *c)
{
	struct ulnet_sock_tunables *s = &c->mo->sock;
	long long n = c->n;

	switch (c->p->arg) {
	case KS_SOCK_TIMEOUT:
		if (n < 0 || n > 86400)
			return why(c, -EINVAL, "%lld is out of range (0..86400)", n);
		/* 0: the global lnd_timeout, as in the kernel */
		s->sock_timeout = n == 0 ? -1 : (int)n;
		return 0;
	case KS_NSCHEDS:
		/* the kernel's: scheduler threads per CPT, 0 for its own
		 * count; ulnet's: 0 every NI on the node's one progress
		 * thread, 1 a thread for each tcp NI (ni_thread.c) */
		if (n < 0)
			return why(c, -EINVAL, "%lld is out of range (0 or 1)", n);
		if (n > 1)
			return why(c, -EOPNOTSUPP, "not supported by ulnet: %lld (ulnet runs one thread "
				   "per NI at most: 0, the node's one thread, or 1, a thread of each NI's own)", n);
		s->nscheds = (int)n;
		return 0;
	case KS_KEEPALIVE:
		return ks_off_or(c, &s->keepalive, 86400);
	case KS_KA_IDLE:
		return ks_off_or(c, &s->keepalive_idle, 32767);
	case KS_KA_COUNT:
		return ks_off_or(c, &s->keepalive_count, 127);
	case KS_KA_INTVL:
		return ks_off_or(c, &s->keepalive_intvl, 32767);
	case KS_MIN_BULK:
		return ks_pos(c, &s->min_bulk, INT_MAX);
	case KS_ZC_MIN:
		/* the kernel's is unsigned: a negative value is never reached */
		if (n < 0) {
			s->zc_min_payload = -1;
		} else if (n < 2048) {
			mo_warn(c, "raised to 2048, the floor, as the kernel does");
			s->zc_min_payload = 2048;
		} else {
			s->zc_min_payload = (int)n;
		}
		return 0;
	case KS_CSUM:
		s->enable_csum = n ? 1 : -1;
		return 0;
	case KS_NBZC:
		s->nonblk_zcack = n ? 1 : -1;
		return 0;
	case KS_NAGLE:
		s->nagle = n ? 1 : -1;
		return 0;
	case KS_TYPED:
		if (!n)
			return why(c, -EOPNOTSUPP, "not supported by ulnet: untyped connections need "
				   "HELLO V2, and ulnet starts V3 (the kernel's protocol parameter is "
				   "not in a 2.17 build)");
		s->typed_conns = 1;
		return 0;
	case KS_TXBUF:
	case KS_RXBUF:
		/* 0: the system's default, in both */
		if (n < 0)
			return why(c, -EINVAL, "must not be negative (0: the system's default)");
		*(c->p->arg == KS_TXBUF ? &s->tx_buffer_size : &s->rx_buffer_size) = (int)n;
		return 0;
	case KS_MIN_RC:
	case KS_MAX_RC:
		mo_copy_where(c->mo->reconnect_where, c->where);
		return ks_pos(c, c->p->arg == KS_MIN_RC ? &s->min_reconnectms : &s->max_reconnectms,
			      INT_MAX);
	default:
		return why(c, -EINVAL, "internal: no such tunable");
	}
}

/* --- the table: every parameter of the two 2.17 modules ------------------------ */

#define NO_CPT "ulnet has one CPU partition"
#define NOOP_KSOCK "read by nothing in the 2.17 kernel's ksocklnd"

static const struct mo_param params[] = {
	/* lnet: api-ni.c */
	{ "lnet", "networks", T_STR, h_networks, 0, NULL },
	{ "lnet", "routes", T_STR, h_routes, 0, NULL },
	{ "lnet", "ip2nets", T_STR, h_ip2nets, 0, NULL },
	{ "lnet", "rnet_htable_size", T_INT, mo_h_unsup, 0, "ulnet's table of remote nets has no size to set" },
	{ "lnet", "use_tcp_bonding", T_INT, mo_h_noop, 0, "removed from the kernel (Multi-Rail replaces it)" },
	{ "lnet", "lnet_numa_range", T_UINT, h_global, G_NUMA, NULL },
	{ "lnet", "lnet_health_sensitivity", T_UINT, h_global, G_HEALTH, NULL },
	{ "lnet", "lnet_recovery_interval", T_STR, mo_h_noop, 0, "deprecated in the kernel, which does not even read its value" },
	{ "lnet", "lnet_recovery_limit", T_UINT, h_global, G_RECOVERY_LIMIT, NULL },
	{ "lnet", "lnet_max_recovery_ping_interval", T_UINT, h_global, G_MAX_RPI, NULL },
	{ "lnet", "lnet_interfaces_max", T_INT, h_global, G_IFMAX, NULL },
	{ "lnet", "lnet_peer_discovery_disabled", T_UINT, h_global, G_DISCOVERY_OFF, NULL },
	{ "lnet", "lnet_drop_asym_route", T_UINT, h_global, G_DROP_ASYM, NULL },
	{ "lnet", "lnet_transaction_timeout", T_UINT, h_global, G_TT, NULL },
	{ "lnet", "lnet_retry_count", T_UINT, h_global, G_RETRY, NULL },
	{ "lnet", "lnet_response_tracking", T_UINT, h_global, G_RESPONSE, NULL },
	{ "lnet", "lock_prim_nid", T_INT, mo_h_unsup, 0, "ulnet has no Lustre above it to lock primary NIDs" },
	/* lnet: lib-move.c, lib-ptl.c */
	{ "lnet", "local_nid_dist_zero", T_INT, mo_h_unsup, 0, "ulnet has no LNetDist()" },
	{ "lnet", "portal_rotor", T_INT, mo_h_unsup, 0, NO_CPT },
	/* lnet: module.c */
	{ "lnet", "config_on_load", T_INT, h_config_on_load, 0, NULL },
	{ "lnet", "enable_sysctl_setup", T_INT, mo_h_unsup, 0, "it asks the kernel's lnet-sysctl-config script to tune sysctls; ulnet has none" },
	{ "lnet", "cpu_npartitions", T_INT, mo_h_unsup, 0, NO_CPT },
	{ "lnet", "cpu_pattern", T_STR, mo_h_unsup, 0, NO_CPT },
	/* lnet: acceptor.c */
	{ "lnet", "accept", T_STR, h_accept, 0, NULL },
	{ "lnet", "accept_port", T_INT, h_accept_port, 0, NULL },
	{ "lnet", "accept_port_bulk", T_INT, h_accept_bulk, 0, NULL },
	{ "lnet", "accept_backlog", T_INT, h_accept_backlog, 0, NULL },
	{ "lnet", "accept_timeout", T_INT, mo_h_fixed_int, 5, "the acceptor reads a connection request within 5 s" },
	/* lnet: router.c */
	{ "lnet", "forwarding", T_STR, h_forwarding, 0, NULL },
	{ "lnet", "tiny_router_buffers", T_INT, h_buffers, ULNET_RTR_POOL_TINY, NULL },
	{ "lnet", "small_router_buffers", T_INT, h_buffers, ULNET_RTR_POOL_SMALL, NULL },
	{ "lnet", "large_router_buffers", T_INT, h_buffers, ULNET_RTR_POOL_LARGE, NULL },
	{ "lnet", "peer_buffer_credits", T_INT, h_lnet_pbc, 0, NULL },
	{ "lnet", "auto_down", T_INT, mo_h_fixed_bool, 1, "an LND's failure report always marks the peer NI down" },
	{ "lnet", "check_routers_before_use", T_INT, h_router, MO_RP_CHECK, NULL },
	{ "lnet", "avoid_asym_router_failure", T_INT, h_router, MO_RP_ASYM, NULL },
	{ "lnet", "dead_router_check_interval", T_INT, mo_h_noop, 0, "deprecated in the kernel (alive_router_check_interval replaces it)" },
	{ "lnet", "live_router_check_interval", T_INT, mo_h_noop, 0, "deprecated in the kernel (alive_router_check_interval replaces it)" },
	{ "lnet", "alive_router_check_interval", T_INT, h_router, MO_RP_INTERVAL, NULL },
	{ "lnet", "router_ping_timeout", T_INT, h_router, MO_RP_TIMEOUT, NULL },
	{ "lnet", "router_sensitivity_percentage", T_UINT, h_global, G_RTR_SENS, NULL },

	/* ksocklnd: socklnd_modparams.c (protocol and backoff_* exist only
	 * in debug builds of it, so not here) */
	{ "ksocklnd", "sock_timeout", T_INT, h_ksock, KS_SOCK_TIMEOUT, NULL },
	{ "ksocklnd", "credits", T_INT, h_ktun, KT_CREDITS, NULL },
	{ "ksocklnd", "peer_credits", T_INT, h_ktun, KT_PEER_CREDITS, NULL },
	{ "ksocklnd", "peer_buffer_credits", T_INT, h_ktun, KT_PBC, NULL },
	{ "ksocklnd", "peer_timeout", T_INT, h_ktun, KT_PEER_TIMEOUT, NULL },
	{ "ksocklnd", "nscheds", T_INT, h_ksock, KS_NSCHEDS, NULL },
	{ "ksocklnd", "nconnds", T_INT, mo_h_unsup, 0, "ulnet has no connection daemons (one event loop)" },
	{ "ksocklnd", "nconnds_max", T_INT, mo_h_unsup, 0, "ulnet has no connection daemons (one event loop)" },
	{ "ksocklnd", "min_reconnectms", T_INT, h_ksock, KS_MIN_RC, NULL },
	{ "ksocklnd", "max_reconnectms", T_INT, h_ksock, KS_MAX_RC, NULL },
	{ "ksocklnd", "eager_ack", T_INT, mo_h_fixed_bool, 0, "ulnet leaves TCP's ACKs to TCP" },
	{ "ksocklnd", "typed_conns", T_INT, h_ksock, KS_TYPED, NULL },
	{ "ksocklnd", "min_bulk", T_INT, h_ksock, KS_MIN_BULK, NULL },
	{ "ksocklnd", "tx_buffer_size", T_INT, h_ksock, KS_TXBUF, NULL },
	{ "ksocklnd", "rx_buffer_size", T_INT, h_ksock, KS_RXBUF, NULL },
	{ "ksocklnd", "nagle", T_INT, h_ksock, KS_NAGLE, NULL },
	{ "ksocklnd", "round_robin", T_INT, mo_h_fixed_bool, 1, "ulnet always spreads traffic over a peer's connections" },
	{ "ksocklnd", "keepalive", T_INT, h_ksock, KS_KEEPALIVE, NULL },
	{ "ksocklnd", "keepalive_idle", T_INT, h_ksock, KS_KA_IDLE, NULL },
	{ "ksocklnd", "keepalive_count", T_INT, h_ksock, KS_KA_COUNT, NULL },
	{ "ksocklnd", "keepalive_intvl", T_INT, h_ksock, KS_KA_INTVL, NULL },
	{ "ksocklnd", "enable_csum", T_INT, h_ksock, KS_CSUM, NULL },
	{ "ksocklnd", "inject_csum_error", T_INT, mo_h_fixed_bool, 0, "ulnet injects no checksum errors" },
	{ "ksocklnd", "enable_irq_affinity", T_INT, mo_h_noop, 0, "removed from the kernel's ksocklnd" },
	{ "ksocklnd", "nonblk_zcack", T_INT, h_ksock, KS_NBZC, NULL },
	{ "ksocklnd", "zc_min_payload", T_INT, h_ksock, KS_ZC_MIN, NULL },
	{ "ksocklnd", "zc_recv", T_INT, mo_h_noop, 0, NOOP_KSOCK },
	{ "ksocklnd", "zc_recv_min_nfrags", T_INT, mo_h_noop, 0, NOOP_KSOCK },
	{ "ksocklnd", "conns_per_peer", T_UINT, h_ktun, KT_CPP, NULL },
	{ "ksocklnd", "skip_mr_route_setup", T_UINT, h_skip_mr, 0, NULL },
	{ "ksocklnd", "tos", T_INT, h_ktun, KT_TOS, NULL },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

/* --- values and names ---------------------------------------------------------- */

/* A number as the kernel's kstrtoint/kstrtoul read it (base 0): an
 * optional sign (a minus only when signed), digits, one trailing newline;
 * no spaces. */
static int parse_num(const char *s, bool is_signed, long long *out)
{
	const char *p = s;
	bool neg = false;
	char *end;

	if (*p == '+') {
		p++;
	} else if (*p == '-' && is_signed) {
		neg = true;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 0);

	if (errno)
		return -EINVAL;
	if (*end == '\n')
		end++;
	if (*end || v > (unsigned long long)LLONG_MAX)
		return -EINVAL;
	*out = neg ? -(long long)v : (long long)v;
	return 0;
}

/* A name, bounded, with '-' read as '_' (the kernel's parameq, kmod's
 * module names). */
static bool norm_name(char *dst, const char *src, size_t len)
{
	size_t i;

	if (len == 0 || len > MODOPT_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)src[i];

		if (!isalnum(ch) && ch != '_' && ch != '-')
			return false;
		dst[i] = ch == '-' ? '_' : (char)ch;
	}
	dst[i] = '\0';
	return true;
}

void modopts_init(struct modopts *mo)
{
	memset(mo, 0, sizeof(*mo));
	mo->forwarding = -1;
	ulnet_globals_defaults(&mo->g);
	/* the kernel's (and ulnet's) defaults of the router parameters */
	mo->rp.alive_router_check_interval = 60;
	mo->rp.router_ping_timeout = 50;
	mo->rp.check_routers_before_use = false;
	mo->rp.avoid_asym_router_failure = true;
	for (int i = 0; i < ULNET_RTR_NPOOLS; i++)
		mo->rtr_buffers[i] = -1;
	mo->accept_port_bulk = -1;
	mo->tun.tos = -1;
	mo->o2ib_tun.tos = -1;
}

void modopts_free(struct modopts *mo)
{
	free(mo->ip2nets);
	mo->ip2nets = NULL;
	free(mo->routes);
	mo->routes = NULL;
	mo->nroutes = 0;
}

static int fail(struct modopts *mo, int rc, const char *where, const char *module,
		const char *param, const char *reason)
{
	if (param)
		snprintf(mo->err, sizeof(mo->err), "%s: %s.%s: %s (errno %d)", where, module, param,
			 reason, rc);
	else
		snprintf(mo->err, sizeof(mo->err), "%s: %s (errno %d)", where, reason, rc);
	return rc;
}

int modopts_set(struct modopts *mo, const char *module, const char *param, const char *value,
		const char *where)
{
	char mod[MODOPT_NAME_MAX + 1], name[MODOPT_NAME_MAX + 1], reason[200];
	struct mo_call c;
	const struct mo_param *p = NULL;

	if (!norm_name(mod, module, strlen(module))) {
		snprintf(reason, sizeof(reason), "bad module name '%.64s'", module);
		return fail(mo, -EINVAL, where, NULL, NULL, reason);
	}
	if (!norm_name(name, param, strlen(param))) {
		snprintf(reason, sizeof(reason), "bad parameter name '%.64s' in options of %s",
			 param, mod);
		return fail(mo, -EINVAL, where, NULL, NULL, reason);
	}
	if (strcmp(mod, "lnet") != 0 && strcmp(mod, "ksocklnd") != 0 && strcmp(mod, "ko2iblnd") != 0)
		return fail(mo, -EOPNOTSUPP, where, mod, name, "not supported by ulnet: ulnetd takes "
			    "the options of lnet, ksocklnd and ko2iblnd only");
	for (size_t i = 0; i < NPARAMS && !p; i++)
		if (strcmp(params[i].module, mod) == 0 && strcmp(params[i].name, name) == 0)
			p = &params[i];
	for (size_t i = 0; i < modopts_o2ib_nparams && !p; i++)
		if (strcmp(modopts_o2ib_params[i].module, mod) == 0 &&
		    strcmp(modopts_o2ib_params[i].name, name) == 0)
			p = &modopts_o2ib_params[i];
	if (!p) {
		snprintf(reason, sizeof(reason), "not supported by ulnet: no such parameter of the "
			 "2.17 %s module", mod);
		return fail(mo, -EOPNOTSUPP, where, mod, name, reason);
	}
	if (!value)
		return fail(mo, -EINVAL, where, mod, name, "needs a value (PARAM=VALUE)");
	if (strlen(value) > MODOPT_VALUE_MAX) {
		snprintf(reason, sizeof(reason), "value longer than %d bytes", MODOPT_VALUE_MAX);
		return fail(mo, -EINVAL, where, mod, name, reason);
	}
	memset(&c, 0, sizeof(c));
	c.mo = mo;
	c.p = p;
	c.where = where;
	c.v = value;
	if (p->type != T_STR) {
		long long lo = p->type == T_INT ? INT_MIN : 0;
		long long hi = p->type == T_INT ? INT_MAX : (long long)UINT_MAX;

		if (parse_num(value, p->type == T_INT, &c.n) < 0 || c.n < lo || c.n > hi) {
			snprintf(reason, sizeof(reason), "'%.64s' is not %s", value,
				 p->type == T_INT ? "a 32-bit integer" : "an unsigned 32-bit integer");
			return fail(mo, -EINVAL, where, mod, name, reason);
		}
	}
	int rc = p->set(&c);

	if (rc < 0)
		return fail(mo, rc, where, mod, name, c.why);
	return 0;
}

int modopts_set_arg(struct modopts *mo, const char *arg)
{
	static const char where[] = "--module-option";
	const char *dot = strchr(arg, '.');
	const char *eq = strchr(arg, '=');
	char mod[MODOPT_NAME_MAX + 2], name[MODOPT_NAME_MAX + 2];

	if (!dot || (eq && eq < dot) || dot == arg) {
		char reason[200];

		snprintf(reason, sizeof(reason), "'%.64s': expected MODULE.PARAM=VALUE "
			 "(lnet.PARAM, ksocklnd.PARAM or ko2iblnd.PARAM)", arg);
		return fail(mo, -EINVAL, where, NULL, NULL, reason);
	}
	size_t ml = (size_t)(dot - arg);
	size_t nl = eq ? (size_t)(eq - dot - 1) : strlen(dot + 1);

	/* one more than a name may be: modopts_set refuses it by length */
	snprintf(mod, sizeof(mod), "%.*s", (int)(ml < sizeof(mod) - 1 ? ml : sizeof(mod) - 1), arg);
	snprintf(name, sizeof(name), "%.*s", (int)(nl < sizeof(name) - 1 ? nl : sizeof(name) - 1),
		 dot + 1);
	if (!eq)
		return modopts_set(mo, mod, name, NULL, where);
	/* the kernel's parser drops a value's opening quote and a closing
	 * one: lnet.networks="tcp0(eth0)" is tcp0(eth0) */
	const char *v = eq + 1;
	size_t vl = strlen(v);

	if (vl > MODOPT_VALUE_MAX + 2)
		return modopts_set(mo, mod, name, v, where); /* refused by length */
	if (*v == '"') {
		v++;
		vl--;
		if (vl > 0 && v[vl - 1] == '"')
			vl--;
	}
	char *copy = malloc(vl + 1);

	if (!copy)
		return fail(mo, -ENOMEM, where, NULL, NULL, "out of memory");
	memcpy(copy, v, vl);
	copy[vl] = '\0';
	int rc = modopts_set(mo, mod, name, copy, where);

	free(copy);
	return rc;
}

/* --- modprobe.d ---------------------------------------------------------------- */

/* Split the next "param[=value]" off `s` in place, as the kernel's module
 * parameter parser does: blanks separate pairs except inside double
 * quotes; a value's opening quote and a quote ending the pair are dropped
 * (so are those around a wholly quoted pair). Returns the rest (blanks
 * skipped), or NULL for a quote left open. */
static char *next_pair(char *s, char **param, char **val)
{
	bool inq = false, quoted = false;
	size_t i, eq = 0;
	bool has_eq = false;

	if (*s == '"') {
		s++;
		inq = quoted = true;
	}
	for (i = 0; s[i]; i++) {
		if (isspace((unsigned char)s[i]) && !inq)
			break;
		if (!has_eq && s[i] == '=') {
			has_eq = true;
			eq = i;
		}
		if (s[i] == '"')
			inq = !inq;
	}
	if (inq)
		return NULL;
	char *rest = s[i] ? s + i + 1 : s + i;
	bool closing = i > 0 && s[i - 1] == '"';

	if (s[i])
		s[i] = '\0';
	*param = s;
	*val = NULL;
	if (has_eq) {
		s[eq] = '\0';
		*val = s + eq + 1;
		if (**val == '"') {
			(*val)++;
			if (closing && s + i - 1 >= *val)
				s[i - 1] = '\0';
		}
	}
	if (quoted && closing)
		s[i - 1] = '\0';
	while (isspace((unsigned char)*rest))
		rest++;
	return rest;
}

/* The directives of modprobe.d (and of the older modprobe.conf) that are
 * not "options": known, but not ulnetd's business. */
static const char *const other_directives[] = {
	"alias", "install", "remove", "blacklist", "softdep", "weakdep", "include", "config",
};

/* One logical line (continuations joined, comments not yet dropped). */
static int parse_line(struct modopts *mo, const char *name, int lineno, char *line)
{
	char where[MODOPT_WHERE_MAX], reason[300];
	char *p = line, *cmd, *mod;

	snprintf(where, sizeof(where), "%.280s:%d", name, lineno);
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '#')
		return 0;
	cmd = p;
	p += strcspn(p, " \t");
	if (*p)
		*p++ = '\0';
	if (strcmp(cmd, "options") != 0) {
		for (size_t i = 0; i < sizeof(other_directives) / sizeof(other_directives[0]); i++) {
			if (strcmp(cmd, other_directives[i]) == 0) {
				snprintf(reason, sizeof(reason), "'%s': not supported by ulnet: "
					 "ulnetd takes only 'options' lines", cmd);
				return fail(mo, -EOPNOTSUPP, where, NULL, NULL, reason);
			}
		}
		snprintf(reason, sizeof(reason), "'%.64s' is not a modprobe.d directive", cmd);
		return fail(mo, -EINVAL, where, NULL, NULL, reason);
	}
	while (*p == ' ' || *p == '\t')
		p++;
	mod = p;
	p += strcspn(p, " \t");
	if (*p)
		*p++ = '\0';
	while (isspace((unsigned char)*p))
		p++;
	if (!*mod || !*p)
		return fail(mo, -EINVAL, where, NULL, NULL,
			    "'options' needs a module name and parameters");
	while (*p) {
		char *param, *val;
		char *rest = next_pair(p, &param, &val);
		char modn[MODOPT_NAME_MAX + 2];

		snprintf(modn, sizeof(modn), "%.*s", MODOPT_NAME_MAX + 1, mod);
		if (!rest)
			return fail(mo, -EINVAL, where, NULL, NULL,
				    "a double quote is not closed");
		if (!*param) {
			snprintf(reason, sizeof(reason), "'=%.64s': a value without a parameter name",
				 val ? val : "");
			return fail(mo, -EINVAL, where, NULL, NULL, reason);
		}
		/* modprobe.d takes '#' only at the start of a line: anything
		 * else is handed to the module, which has no such parameter */
		if (*param == '#')
			return fail(mo, -EINVAL, where, NULL, NULL,
				    "'#' starts a comment only at the start of a line");
		int rc = modopts_set(mo, modn, param, val, where);

		if (rc < 0)
			return rc;
		p = rest;
	}
	return 0;
}

int modopts_parse_text(struct modopts *mo, const char *name, const char *text, size_t len)
{
	char *line = malloc(MODOPT_LINE_MAX + 1);
	size_t n = 0;
	int lineno = 1, first = 1, rc = 0;

	if (!line)
		return fail(mo, -ENOMEM, name, NULL, NULL, "out of memory");
	if (len > MODOPT_FILE_MAX) {
		char reason[120];

		snprintf(reason, sizeof(reason), "larger than %d bytes", MODOPT_FILE_MAX);
		free(line);
		return fail(mo, -EFBIG, name, NULL, NULL, reason);
	}
	/* Join lines as kmod does: a backslash before a newline joins the
	 * next line; before any other character it is dropped and the
	 * character kept. A line is numbered where it starts. */
	for (size_t i = 0; i <= len && rc == 0; i++) {
		char ch = i < len ? text[i] : '\n';

		if (i < len && ch == '\0') {
			char where[MODOPT_WHERE_MAX];

			snprintf(where, sizeof(where), "%.280s:%d", name, lineno);
			rc = fail(mo, -EINVAL, where, NULL, NULL, "a NUL byte in the text");
			break;
		}
		if (ch == '\\' && i < len) {
			if (i + 1 == len)
				continue; /* a backslash at the very end: dropped */
			i++;
			ch = text[i];
			if (ch == '\n') {
				lineno++;
				continue;
			}
			if (ch == '\0') {
				i--; /* the NUL check above, on the next turn */
				continue;
			}
		} else if (ch == '\n') {
			line[n] = '\0';
			if (i < len || n > 0)
				rc = parse_line(mo, name, first, line);
			n = 0;
			lineno++;
			first = lineno;
			continue;
		}
		if (n >= MODOPT_LINE_MAX) {
			char where[MODOPT_WHERE_MAX], reason[120];

			snprintf(where, sizeof(where), "%.280s:%d", name, first);
			snprintf(reason, sizeof(reason), "a line longer than %d bytes", MODOPT_LINE_MAX);
			rc = fail(mo, -EINVAL, where, NULL, NULL, reason);
			break;
		}
		line[n++] = ch;
	}
	free(line);
	return rc;
}

int modopts_parse_file(struct modopts *mo, const char *path)
{
	FILE *f = fopen(path, "r");
	char eb[96], reason[200];
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(reason, sizeof(reason), "cannot open: %s", ctl_strerror(rc, eb, sizeof(eb)));
		return fail(mo, rc, path, NULL, NULL, reason);
	}
	/* one byte more than allowed tells a file over the limit */
	char *buf = malloc((size_t)MODOPT_FILE_MAX + 1);
	size_t len = 0;

	if (!buf) {
		fclose(f);
		return fail(mo, -ENOMEM, path, NULL, NULL, "out of memory");
	}
	for (;;) {
		size_t got = fread(buf + len, 1, (size_t)MODOPT_FILE_MAX + 1 - len, f);

		len += got;
		if (got == 0 || len > MODOPT_FILE_MAX)
			break;
	}
	if (ferror(f)) {
		rc = fail(mo, -EIO, path, NULL, NULL, "read error");
	} else if (len > MODOPT_FILE_MAX) {
		snprintf(reason, sizeof(reason), "larger than %d bytes", MODOPT_FILE_MAX);
		rc = fail(mo, -EFBIG, path, NULL, NULL, reason);
	} else {
		rc = modopts_parse_text(mo, path, buf, len);
	}
	free(buf);
	fclose(f);
	return rc;
}

int modopts_finish(struct modopts *mo)
{
	char reason[300];
	int credits = mo->tun.credits ? mo->tun.credits : 256;
	int peer = mo->tun.peer_credits ? mo->tun.peer_credits : 8;

	/* ulnet refuses an NI whose peer_credits exceed its credits (the
	 * kernel lowers them): better said here than at every net add */
	if (peer > credits) {
		snprintf(reason, sizeof(reason), "peer_credits %d%s exceeds credits %d%s", peer,
			 mo->tun.peer_credits ? "" : " (the default)", credits,
			 mo->tun.credits ? "" : " (the default)");
		return fail(mo, -EINVAL, mo->credits_where, "ksocklnd",
			    mo->tun.peer_credits ? "peer_credits" : "credits", reason);
	}
	if (mo->sock.max_reconnectms > 0 &&
	    mo->sock.max_reconnectms < (mo->sock.min_reconnectms > 0 ? mo->sock.min_reconnectms : 1000)) {
		snprintf(reason, sizeof(reason), "%d is below min_reconnectms (%d)",
			 mo->sock.max_reconnectms,
			 mo->sock.min_reconnectms > 0 ? mo->sock.min_reconnectms : 1000);
		return fail(mo, -EINVAL, mo->reconnect_where, "ksocklnd", "max_reconnectms", reason);
	}
	int rc = modopts_o2ib_finish(mo);

	if (rc < 0)
		return rc;
	/* the kernel's lnet_get_networks(): not both (networks="" is) */
	if (mo->ip2nets && mo->networks_set && mo->networks_named) {
		snprintf(reason, sizeof(reason), "networks= is set too (%.200s): specify either "
			 "networks or ip2nets, not both (as the kernel)", mo->networks_where);
		return fail(mo, -EINVAL, mo->ip2nets_where, "lnet", "ip2nets", reason);
	}
	return 0;
}
