/* SPDX-License-Identifier: MIT */
/*
 * modopts_o2ib.c - the ko2iblnd module parameters ulnetd takes (modopts.h):
 * every parameter of the 2.17 module (o2iblnd_modparams.c) and what becomes
 * of it. Those the LND has a counterpart for become the defaults of every
 * o2ib NI (ctl_ni_conf_defaults), in ulnet's encoding (struct
 * ulnet_o2ib_tunables: 0 not given); the others are taken only at the value
 * ulnet behaves as, or refused (-EOPNOTSUPP) naming why. docs/o2iblnd.md
 * lists them all.
 */
#include "modopts_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_policy.h"

enum { KO_SERVICE, KO_CKSUM, KO_TIMEOUT, KO_CPP, KO_NTX, KO_CREDITS, KO_PEER_CREDITS,
       KO_HIW, KO_PBC, KO_PEER_TIMEOUT, KO_RETRY, KO_RNR_RETRY, KO_KEEPALIVE,
       KO_IB_MTU, KO_SENDS, KO_MOD, KO_TOS, KO_USE_PRIV, KO_REQ_PRIV };

/* IB's retry counts are 3 bits: 0 is ulnet's -1 ("none"), 1..7. */
static int ko_retry(struct mo_call *c, int *dst)
{
	if (c->n < 0 || c->n > KIB_RETRY_MAX)
		return why(c, -EINVAL, "%lld is out of range (0..%d: IB's 3-bit count)", c->n,
			   KIB_RETRY_MAX);
	*dst = c->n == 0 ? -1 : (int)c->n;
	return 0;
}

static int h_ko2ib(struct mo_call *c)
{
	struct modopts *mo = c->mo;
	struct ulnet_o2ib_tunables *o = &mo->o2ib;
	struct ulnet_ni_tunables *t = &mo->o2ib_tun;
	long long n = c->n;

	switch (c->p->arg) {
	case KO_SERVICE:
		/* the rdma_cm port (RDMA_PS_TCP) listened on and connected to */
		if (n < 1 || n > 65535)
			return why(c, -EINVAL, "%lld is not a port (1..65535)", n);
		o->service = (int)n;
		return 0;
	case KO_CKSUM:
		o->cksum = n ? 1 : -1;
		return 0;
	case KO_USE_PRIV:
		o->use_privileged_port = n ? 1 : -1;
		return 0;
	case KO_REQ_PRIV:
		o->require_privileged_port = n ? 1 : -1;
		return 0;
	case KO_TIMEOUT:
		/* 0: the global lnd_timeout, as the kernel's kiblnd_timeout() */
		if (n < 0 || n > KIB_TIMEOUT_MAX)
			return why(c, -EINVAL, "%lld is out of range (0..%d)", n, KIB_TIMEOUT_MAX);
		o->timeout = n == 0 ? -1 : (int)n;
		return 0;
	case KO_CPP:
		/* the kernel takes 0 as 1 */
		if (n > ULNET_MAX_CONNS_PER_PEER)
			return why(c, -EINVAL, "%lld is out of range (0..%d)", n, ULNET_MAX_CONNS_PER_PEER);
		t->conns_per_peer = n ? (int)n : 1;
		return 0;
	case KO_NTX:
		if (n < 1)
			return why(c, -EINVAL, "must be at least 1");
		/* the kernel refuses an NI whose fmr_pool_size is below ntx / 4,
		 * and ulnet takes only its default fmr_pool_size */
		if (n / 4 > KIB_FMR_POOL_SIZE)
			return why(c, -EINVAL, "%lld / 4 is above fmr_pool_size (%d): the kernel "
				   "refuses such an NI (at most %d)", n, KIB_FMR_POOL_SIZE,
				   KIB_FMR_POOL_SIZE * 4 + 3);
		o->ntx = (int)n;
		mo_copy_where(mo->o2ib_ntx_where, c->where);
		return 0;
	case KO_CREDITS:
		if (n < 1)
			return why(c, -EINVAL, "must be at least 1");
		t->credits = (int)n;
		mo_copy_where(mo->o2ib_credits_where, c->where);
		return 0;
	case KO_PEER_CREDITS:
		/* kiblnd_tunables_setup() raises it to 8 and caps it at 255 */
		if (n < 1)
			return why(c, -EINVAL, "must be at least 1");
		if (n < KIB_PEER_CREDITS_DEFAULT) {
			mo_warn(c, "raised to %d, the minimum, as the kernel does",
				KIB_PEER_CREDITS_DEFAULT);
			n = KIB_PEER_CREDITS_DEFAULT;
		} else if (n > KIB_CREDITS_MAX) {
			mo_warn(c, "lowered to %d, the most a message can return, as the kernel does",
				KIB_CREDITS_MAX);
			n = KIB_CREDITS_MAX;
		}
		t->peer_credits = (int)n;
		mo_copy_where(mo->o2ib_credits_where, c->where);
		return 0;
	case KO_HIW:
		/* raised to peer_credits / 2 at NI startup, as the kernel's */
		o->peercredits_hiw = n > 0 ? (int)n : 0;
		return 0;
	case KO_PBC:
		/* as lnet's: used only when positive */
		t->peer_buffer_credits = n > 0 ? (int)n : 0;
		return 0;
	case KO_PEER_TIMEOUT:
		if (n <= 0)
			return why(c, -EOPNOTSUPP, "not supported by ulnet: %lld (no peer aliveness); "
				   "ulnet's peer_timeout is at least 1", n);
		t->peer_timeout = (int)n;
		return 0;
	case KO_RETRY:
		return ko_retry(c, &o->retry_count);
	case KO_RNR_RETRY:
		return ko_retry(c, &o->rnr_retry_count);
	case KO_KEEPALIVE:
		/* <= 0: never, as the kernel's kiblnd_send_keepalive() */
		if (n > 86400)
			return why(c, -EINVAL, "%lld is out of range (<= 0 never, 1..86400)", n);
		o->keepalive = n <= 0 ? -1 : (int)n;
		return 0;
	case KO_IB_MTU:
		if (n == 0)
			return 0;
		if (n != 256 && n != 512 && n != 1024 && n != 2048 && n != 4096)
			return why(c, -EINVAL, "%lld is not an IB MTU (256/512/1024/2048/4096)", n);
		return why(c, -EOPNOTSUPP, "not supported by ulnet: only ib_mtu=0 (rdma_cm's path "
			   "MTU is used)");
	case KO_SENDS:
		/* kept between peer_credits / 2 and twice them at NI startup,
		 * as the kernel's; a negative value ends at the floor there */
		o->concurrent_sends = n < 0 ? 1 : (int)n;
		return 0;
	case KO_MOD:
		mo_warn(c, "obsolete: read by nothing in the 2.17 kernel's ko2iblnd, which shows "
			"it; so does ulnet");
		o->map_on_demand = n > 0 ? (int)n : 0;
		return 0;
	case KO_TOS:
		/* the kernel's param_set_tos(): -1 (leave) or a byte */
		if (n < -1 || n > 255)
			return why(c, -EINVAL, "%lld is out of range (-1..255)", n);
		t->tos = (int)n;
		return 0;
	default:
		return why(c, -EINVAL, "internal: no such tunable");
	}
}

#define NO_FMR "ulnet has no FMR/FastReg pool (a registration cache instead)"

const struct mo_param modopts_o2ib_params[] = {
	{ "ko2iblnd", "service", T_INT, h_ko2ib, KO_SERVICE, NULL },
	{ "ko2iblnd", "cksum", T_INT, h_ko2ib, KO_CKSUM, NULL },
	{ "ko2iblnd", "timeout", T_INT, h_ko2ib, KO_TIMEOUT, NULL },
	{ "ko2iblnd", "nscheds", T_INT, mo_h_fixed_int, 0, "ulnet has no scheduler threads (one event loop)" },
	{ "ko2iblnd", "conns_per_peer", T_UINT, h_ko2ib, KO_CPP, NULL },
	{ "ko2iblnd", "ntx", T_INT, h_ko2ib, KO_NTX, NULL },
	{ "ko2iblnd", "credits", T_INT, h_ko2ib, KO_CREDITS, NULL },
	{ "ko2iblnd", "peer_credits", T_INT, h_ko2ib, KO_PEER_CREDITS, NULL },
	{ "ko2iblnd", "peer_credits_hiw", T_INT, h_ko2ib, KO_HIW, NULL },
	{ "ko2iblnd", "peer_buffer_credits", T_INT, h_ko2ib, KO_PBC, NULL },
	{ "ko2iblnd", "peer_timeout", T_INT, h_ko2ib, KO_PEER_TIMEOUT, NULL },
	/* the kernel's interface of an o2ib net named without one in
	 * networks=, which takes tcp nets only in ulnet */
	{ "ko2iblnd", "ipif_name", T_STR, mo_h_unsup, 0, "ulnet's lnet.networks takes tcp nets only (an o2ib NI: net add or import, naming its interface)" },
	{ "ko2iblnd", "retry_count", T_INT, h_ko2ib, KO_RETRY, NULL },
	{ "ko2iblnd", "rnr_retry_count", T_INT, h_ko2ib, KO_RNR_RETRY, NULL },
	{ "ko2iblnd", "keepalive", T_INT, h_ko2ib, KO_KEEPALIVE, NULL },
	{ "ko2iblnd", "ib_mtu", T_INT, h_ko2ib, KO_IB_MTU, NULL },
	{ "ko2iblnd", "concurrent_sends", T_INT, h_ko2ib, KO_SENDS, NULL },
	{ "ko2iblnd", "use_fastreg_gaps", T_INT, mo_h_fixed_bool, 0, NO_FMR },
	{ "ko2iblnd", "map_on_demand", T_INT, h_ko2ib, KO_MOD, NULL },
	{ "ko2iblnd", "fmr_pool_size", T_INT, mo_h_fixed_int, KIB_FMR_POOL_SIZE, NO_FMR },
	{ "ko2iblnd", "fmr_flush_trigger", T_INT, mo_h_fixed_int, KIB_FMR_FLUSH_TRIGGER, NO_FMR },
	{ "ko2iblnd", "fmr_cache", T_INT, mo_h_fixed_bool, KIB_FMR_CACHE, NO_FMR },
	{ "ko2iblnd", "dev_failover", T_INT, mo_h_fixed_int, 0, "ulnet has no HCA failover for bonding" },
	{ "ko2iblnd", "require_privileged_port", T_INT, h_ko2ib, KO_REQ_PRIV, NULL },
	{ "ko2iblnd", "use_privileged_port", T_INT, h_ko2ib, KO_USE_PRIV, NULL },
	{ "ko2iblnd", "wrq_sge", T_UINT, mo_h_fixed_int, 2, "ulnet builds its RDMA writes its own way; only the default is taken" },
	{ "ko2iblnd", "tos", T_INT, h_ko2ib, KO_TOS, NULL },
};
const size_t modopts_o2ib_nparams = sizeof(modopts_o2ib_params) / sizeof(modopts_o2ib_params[0]);

int modopts_o2ib_finish(struct modopts *mo)
{
	int credits = mo->o2ib_tun.credits ? mo->o2ib_tun.credits : 256;
	int peer = mo->o2ib_tun.peer_credits ? mo->o2ib_tun.peer_credits : KIB_PEER_CREDITS_DEFAULT;

	/* ulnet refuses an NI whose peer_credits exceed its credits (the
	 * kernel lowers them): said once here, as for ksocklnd */
	if (peer > credits)
		return modopts_errf(mo->err, sizeof(mo->err), -EINVAL,
				    "%s: ko2iblnd.%s: peer_credits %d%s exceeds credits %d%s "
				    "(errno %d)", mo->o2ib_credits_where,
				    mo->o2ib_tun.peer_credits ? "peer_credits" : "credits", peer,
				    mo->o2ib_tun.peer_credits ? "" : " (the default)", credits,
				    mo->o2ib_tun.credits ? "" : " (the default)", -EINVAL);
	return 0;
}
