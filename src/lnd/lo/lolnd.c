/* SPDX-License-Identifier: MIT */
/*
 * lolnd.c - the loopback LND (0@lo): send() hands the message straight to
 * lnet_parse() of the same instance, with the sending message as rx_private;
 * recv() copies the payload between the two fragment lists and completes
 * both messages. Only 0@lo: the node's other NIDs go through their LNDs.
 */
#include "core/lnd.h"

static int lolnd_startup(struct lnet_ni *ni)
{
	(void)ni;
	return 0;
}

static void lolnd_shutdown(struct lnet_ni *ni)
{
	(void)ni;
}

static void lolnd_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	int rc = lnet_parse(ni, lnet_msg_hdr(msg), lnet_ni_nid(ni), msg, false);

	/* a protocol error here is a core bug, but complete the send anyway */
	if (rc < 0)
		lnet_finalize(msg, rc);
}

static void lolnd_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
		       const struct iovec *iov, unsigned niov, size_t offset, size_t mlen,
		       size_t rlen)
{
	struct lnet_msg *tx = rx_private;

	(void)ni;
	(void)rlen;
	if (msg) {
		const struct iovec *siov;
		unsigned sniov;
		size_t soff, slen;

		lnet_msg_payload(tx, &siov, &sniov, &soff, &slen);
		lnet_copy_iov(iov, niov, offset, siov, sniov, soff, mlen);
		lnet_finalize(msg, 0);
	}
	lnet_finalize(tx, 0);
}

const struct ulnet_lnd lnet_lolnd = {
	.type = ULNET_LND_LO,
	.name = "lo",
	.startup = lolnd_startup,
	.shutdown = lolnd_shutdown,
	.send = lolnd_send,
	.recv = lolnd_recv,
};
