/* SPDX-License-Identifier: MIT */
/*
 * fake_o2ib.c - a stand-in for the o2ib LND (fake_o2ib.h).
 */
#include "fake_o2ib.h"

#include <errno.h>

#include "core/core.h"
#include "lnd/o2iblnd/o2ib_policy.h"

struct ulnet_ni_conf fake_o2ib_seen;
int fake_o2ib_started;

static int fake_startup(struct lnet_ni *ni)
{
	fake_o2ib_seen = *lnet_ni_conf(ni);
	fake_o2ib_started++;
	return 0;
}

static void fake_shutdown(struct lnet_ni *ni)
{
	(void)ni;
}

static void fake_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	(void)ni;
	lnet_finalize(msg, -EHOSTUNREACH);
}

static void fake_recv(struct lnet_ni *ni, void *priv, struct lnet_msg *msg, bool delayed,
		      const struct iovec *iov, unsigned niov, size_t off, size_t mlen, size_t rlen)
{
	(void)ni, (void)priv, (void)delayed, (void)iov, (void)niov, (void)off, (void)mlen;
	(void)rlen;
	lnet_finalize(msg, -EIO);
}

/* as the real LND's kib_ni_info(): the values resolved from the conf */
static void fake_ni_info(struct lnet_ni *ni, struct ulnet_ni_info *info)
{
	kib_tunables_info(lnet_ni_conf(ni), lnet_ni_global_lnd_timeout(ni), info);
}

static const struct ulnet_lnd fake_o2ib = {
	.type = ULNET_LND_O2IB,
	.name = "o2ib",
	.startup = fake_startup,
	.shutdown = fake_shutdown,
	.send = fake_send,
	.recv = fake_recv,
	.ni_info = fake_ni_info,
};

void fake_o2ib_install(ulnet_t *ln)
{
	lnet_lock(ln);
	ln->ln_lnds[ULNET_LND_O2IB] = &fake_o2ib;
	lnet_unlock(ln);
}
