/* SPDX-License-Identifier: MIT */
/*
 * ping.c - the node's ping target and push target on portal 0, and
 * ulnet_ping().
 *
 * Ping target: a retained MD (GET | TRUNCATE | MANAGE_REMOTE, infinite
 * threshold, match any NID/PID, bits 0x8000000000000000) holding our ping
 * info, rebuilt (new ME+MD, old one unlinked) on every NI change with the
 * sequence number in entry 0 (0@lo) incremented.
 * Push target: a one-shot PUT | TRUNCATE MD on lazy portal 0, same bits,
 * re-posted after each push (enlarged when a push was truncated).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/router.h"

static const ulnet_process_id_t lnet_any_id = {
	.nid = { .type = ULNET_LND_ANY, .num = 0xffff, .addr = { 0xff, 0xff, 0xff, 0xff } },
	.pid = ULNET_PID_ANY,
};

/* --- ping info -------------------------------------------------------------------- */

int lnet_ping_info_build_locked(ulnet_t *ln, uint8_t **bufp, size_t *lenp)
{
	struct lnet_ping_info pi;
	struct lnet_ping_ni *nis;
	struct ul_list *pos;
	unsigned n = 0;
	uint8_t *buf;
	ssize_t rc;
	size_t len;

	nis = calloc((size_t)ln->ln_nnis + 1, sizeof(*nis));
	if (!nis)
		return -ENOMEM;
	/* 0@lo first: its status is our sequence number */
	nis[n].nid = ULNET_NID_LO0;
	nis[n].status = ln->ln_ping_seqno;
	n++;
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni == ln->ln_loni)
			continue;
		nis[n].nid = ni->ni_nid;
		nis[n].status = ni->ni_status;
		n++;
	}
	memset(&pi, 0, sizeof(pi));
	pi.features = LNET_PING_FEAT_NI_STATUS | LNET_PING_FEAT_MULTI_RAIL;
	if (lnet_rte_disabled(ln))
		pi.features |= LNET_PING_FEAT_RTE_DISABLED;
	if (ln->ln_g.discovery)
		pi.features |= LNET_PING_FEAT_DISCOVERY;
	/* a first NI with no nid4 form is the primary: a kernel reading the
	 * info finds it only so (without, it takes the first nid4 entry, or
	 * with none drops the info) */
	if (n > 1 && lnet_ping_info_primary_is_large(&nis[1].nid))
		pi.features |= LNET_PING_FEAT_PRIMARY_LARGE;
	pi.pid = ln->ln_pid;
	pi.nnis = n;
	pi.nis = nis;
	pi.max_nis = n;
	len = lnet_ping_info_size(&pi);
	buf = malloc(len);
	if (!buf) {
		free(nis);
		return -ENOMEM;
	}
	rc = lnet_ping_info_encode(&pi, buf, len);
	free(nis);
	if (rc < 0) {
		free(buf);
		return (int)rc;
	}
	*bufp = buf;
	*lenp = (size_t)rc;
	return 0;
}

/* --- ping target -------------------------------------------------------------- */

/* The buffer goes with the MD (a REPLY may still be reading it). */
static void lnet_ping_target_handler(const struct ulnet_event *ev)
{
	if (ev->unlinked)
		free(ev->md_start);
}

static int lnet_ping_target_install(ulnet_t *ln, ulnet_handle_t *mdh)
{
	struct ulnet_md md = { .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_GET | ULNET_MD_TRUNCATE | ULNET_MD_MANAGE_REMOTE,
			       .handler = lnet_ping_target_handler };
	ulnet_handle_t meh;
	uint8_t *buf;
	size_t len;
	int rc;

	lnet_lock(ln);
	ln->ln_ping_seqno++;
	rc = lnet_ping_info_build_locked(ln, &buf, &len);
	lnet_unlock(ln);
	if (rc)
		return rc;
	md.start = buf;
	md.length = len;
	rc = ulnet_me_attach(ln, ULNET_RESERVED_PORTAL, lnet_any_id, ULNET_PROTO_PING_MATCHBITS, 0,
			     ULNET_UNLINK, ULNET_INS_AFTER, &meh);
	if (rc)
		goto out_free;
	rc = ulnet_md_attach(ln, meh, &md, ULNET_RETAIN, mdh);
	if (rc) {
		ulnet_me_unlink(ln, meh);
		goto out_free;
	}
	return 0;
out_free:
	lnet_log(ln, ULNET_LOG_ERROR, "can't set up the ping target: %s", ulnet_strerror(rc));
	free(buf);
	return rc;
}

int lnet_ping_target_setup(ulnet_t *ln)
{
	ulnet_handle_t mdh;
	int rc;

	pthread_mutex_lock(&ln->ln_api_lock);
	rc = lnet_ping_target_install(ln, &mdh);
	if (!rc)
		ln->ln_ping_mdh = mdh;
	pthread_mutex_unlock(&ln->ln_api_lock);
	return rc;
}

int lnet_ping_target_update(ulnet_t *ln)
{
	ulnet_handle_t mdh, old;
	struct lnet_sendq q;
	int rc;

	pthread_mutex_lock(&ln->ln_api_lock);
	rc = lnet_ping_target_install(ln, &mdh);
	if (rc) {
		pthread_mutex_unlock(&ln->ln_api_lock);
		return rc;
	}
	lnet_lock(ln);
	old = ln->ln_ping_mdh;
	ln->ln_ping_mdh = mdh;
	lnet_unlock(ln);
	/* the new target sits after the old one: unlink the old */
	if (!ulnet_handle_is_none(old))
		ulnet_md_unlink(ln, old);
	pthread_mutex_unlock(&ln->ln_api_lock);

	/* peers that know us learn the change */
	lnet_sendq_init(&q);
	lnet_lock(ln);
	lnet_push_update_to_peers_locked(ln, &q);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	return 0;
}

void lnet_ping_target_fini(ulnet_t *ln)
{
	ulnet_handle_t mdh;

	pthread_mutex_lock(&ln->ln_api_lock);
	lnet_lock(ln);
	mdh = ln->ln_ping_mdh;
	ln->ln_ping_mdh = ULNET_HANDLE_NONE;
	lnet_unlock(ln);
	if (!ulnet_handle_is_none(mdh))
		ulnet_md_unlink(ln, mdh);
	pthread_mutex_unlock(&ln->ln_api_lock);
}

/* --- push target ---------------------------------------------------------------- */

static void lnet_push_target_handler(const struct ulnet_event *ev)
{
	ulnet_t *ln = ev->ln;
	uint8_t *buf = ev->md_start;
	bool current, repost;

	if (ev->type == ULNET_EVENT_PUT) {
		lnet_lock(ln);
		/* a truncated push: the next target is big enough */
		if (ev->rlength > ev->mlength && ev->rlength > ln->ln_push_nbytes)
			ln->ln_push_nbytes = ev->rlength;
		lnet_unlock(ln);
		if (ev->status == 0)
			lnet_peer_push_event(ln, ev, buf, ev->mlength);
	}
	if (!ev->unlinked)
		return;
	free(buf);
	lnet_lock(ln);
	/* the current target (or one still being posted: the placeholder)
	 * is used up: post the next */
	current = ev->md_handle.cookie == ln->ln_push_mdh.cookie || ln->ln_push_mdh.cookie == ~0ULL;
	if (current)
		ln->ln_push_mdh = ULNET_HANDLE_NONE;
	repost = current && ev->type == ULNET_EVENT_PUT && ln->ln_state == LNET_STATE_RUNNING;
	lnet_unlock(ln);
	/* one push per MD: post the next one */
	if (repost)
		lnet_push_target_post(ln);
}

int lnet_push_target_post(ulnet_t *ln)
{
	struct ulnet_md md = { .threshold = 1, .options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE,
			       .handler = lnet_push_target_handler };
	ulnet_handle_t meh, mdh;
	size_t len;
	uint8_t *buf;
	int rc;

	lnet_lock(ln);
	if (!ln->ln_push_nbytes)
		ln->ln_push_nbytes = LNET_PING_INFO_MIN_SIZE;
	len = ln->ln_push_nbytes;
	lnet_unlock(ln);
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	md.start = buf;
	md.length = len;
	rc = ulnet_me_attach(ln, ULNET_RESERVED_PORTAL, lnet_any_id, ULNET_PROTO_PING_MATCHBITS, 0,
			     ULNET_UNLINK, ULNET_INS_AFTER, &meh);
	if (rc)
		goto out_free;
	/* a parked push may land at once, and its handler posts the next
	 * target: record this one first */
	lnet_lock(ln);
	ln->ln_push_mdh.cookie = ~0ULL;
	lnet_unlock(ln);
	rc = ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh);
	lnet_lock(ln);
	if (ln->ln_push_mdh.cookie == ~0ULL)
		ln->ln_push_mdh = rc ? ULNET_HANDLE_NONE : mdh;
	lnet_unlock(ln);
	if (rc) {
		ulnet_me_unlink(ln, meh);
		goto out_free;
	}
	return 0;
out_free:
	lnet_log(ln, ULNET_LOG_ERROR, "can't post the push target: %s", ulnet_strerror(rc));
	free(buf);
	return rc;
}

void lnet_push_target_fini(ulnet_t *ln)
{
	ulnet_handle_t mdh;

	lnet_lock(ln);
	mdh = ln->ln_push_mdh;
	ln->ln_push_mdh = ULNET_HANDLE_NONE;
	lnet_unlock(ln);
	if (!ulnet_handle_is_none(mdh) && mdh.cookie != ~0ULL)
		ulnet_md_unlink(ln, mdh);
}

/* --- ulnet_ping ------------------------------------------------------------------- */

struct lnet_ping_op {
	ulnet_t *ln;
	int refs;            /* the waiter and the MD */
	bool replied, failed;
	int status;
	uint32_t mlength, rlength;
	size_t len;
	uint8_t buf[];
};

static void lnet_ping_op_put_locked(struct lnet_ping_op *op)
{
	if (--op->refs == 0)
		free(op);
}

static void lnet_ping_handler(const struct ulnet_event *ev)
{
	struct lnet_ping_op *op = ev->md_user_ptr;
	ulnet_t *ln = op->ln;

	lnet_lock(ln);
	switch (ev->type) {
	case ULNET_EVENT_SEND:
		if (ev->status && !op->replied && !op->failed) {
			op->failed = true;
			op->status = ev->status;
		}
		break;
	case ULNET_EVENT_REPLY:
		if (ev->status == 0 && !op->failed) {
			op->replied = true;
			op->mlength = ev->mlength;
			op->rlength = ev->rlength;
		} else if (!op->replied && !op->failed) {
			op->failed = true;
			op->status = ev->status;
		}
		break;
	default:
		/* UNLINK: timed out, cancelled or shut down */
		if (!op->replied && !op->failed) {
			op->failed = true;
			op->status = ev->status ? ev->status : -ETIMEDOUT;
		}
		break;
	}
	lnet_cond_broadcast(ln);
	if (ev->unlinked)
		lnet_ping_op_put_locked(op);
	lnet_unlock(ln);
}

static bool lnet_ping_done(void *arg)
{
	struct lnet_ping_op *op = arg;

	return op->replied || op->failed;
}

/* Fill `out` from a ping info (0@lo left out). */
static void lnet_ping_fill(ulnet_t *ln, const ulnet_nid_t *target, const struct lnet_ping_info *pi,
			   struct ulnet_ping_peer *out)
{
	struct lnet_peer_ni *lpni;
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->features = pi->features;
	lnet_lock(ln);
	lpni = lnet_peer_ni_find_locked(ln, target);
	out->primary = lpni && lpni->lpni_peer ? lpni->lpni_peer->lp_primary : *target;
	/* as lnetctl: Multi-Rail is what discovery concluded, not the bit */
	out->multi_rail = lpni && lpni->lpni_peer &&
			  (lpni->lpni_peer->lp_state & LNET_PEER_MULTI_RAIL);
	lnet_unlock(ln);
	for (i = 1; i < pi->nnis && out->nnids < (int)(sizeof(out->nids) / sizeof(out->nids[0])); i++) {
		out->nids[out->nnids] = pi->nis[i].nid;
		out->status[out->nnids] = pi->nis[i].status;
		out->nnids++;
	}
}

int ulnet_ping(ulnet_t *ln, ulnet_process_id_t target, const ulnet_nid_t *src,
	       unsigned sink_len, int timeout_ms, struct ulnet_ping_peer *out)
{
	struct lnet_ping_op *op;
	struct lnet_ping_ni nis[64];
	struct lnet_ping_info pi;
	ulnet_handle_t mdh;
	char nid[ULNET_NIDSTR_SIZE];
	ssize_t dr;
	int rc;

	if (!ln || ulnet_nid_is_any(&target.nid))
		return -EINVAL;
	if (!sink_len)
		sink_len = LNET_PING_INFO_LNETCTL_SIZE;
	if (sink_len < LNET_PING_INFO_HDR_SIZE || sink_len > ULNET_MTU)
		return -EINVAL;
	if (timeout_ms <= 0)
		timeout_ms = 1000;
	if (target.pid == ULNET_PID_ANY)
		target.pid = ULNET_PID_LUSTRE;

	op = calloc(1, sizeof(*op) + sink_len);
	if (!op)
		return -ENOMEM;
	op->ln = ln;
	op->refs = 2;
	op->len = sink_len;
	struct ulnet_md md = { .start = op->buf, .length = sink_len, .threshold = 2,
			       .options = ULNET_MD_TRUNCATE | ULNET_MD_TRACK_RESPONSE,
			       .user_ptr = op, .handler = lnet_ping_handler };
	rc = ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh);
	if (rc) {
		free(op);
		return rc;
	}
	rc = ulnet_get(ln, src, mdh, target, ULNET_RESERVED_PORTAL, ULNET_PROTO_PING_MATCHBITS, 0);
	if (rc) {
		ulnet_md_unlink(ln, mdh);
		lnet_lock(ln);
		lnet_ping_op_put_locked(op);
		lnet_unlock(ln);
		return rc;
	}

	lnet_lock(ln);
	rc = lnet_wait_locked(ln, lnet_ping_done, op, timeout_ms);
	lnet_unlock(ln);
	if (rc) {
		/* give up: the MD goes, and with it the late REPLY (the
		 * buffer lives until the MD lets go of it) */
		ulnet_md_unlink(ln, mdh);
	}
	lnet_lock(ln);
	if (op->replied)
		rc = 0;
	else if (op->failed)
		rc = op->status;
	else
		rc = -ETIMEDOUT;
	lnet_unlock(ln);
	if (rc) {
		lnet_log(ln, ULNET_LOG_INFO, "ping %s failed: %s", lnet_nidstr(&target.nid, nid),
			 ulnet_strerror(rc));
		goto out;
	}

	memset(&pi, 0, sizeof(pi));
	pi.nis = nis;
	pi.max_nis = sizeof(nis) / sizeof(nis[0]);
	dr = lnet_ping_info_decode(op->buf, op->mlength, &pi);
	if (dr < 0) {
		lnet_log(ln, ULNET_LOG_WARN, "ping %s: invalid ping info (%u bytes): %s",
			 lnet_nidstr(&target.nid, nid), op->mlength, ulnet_strerror((int)dr));
		rc = -EPROTO;
		goto out;
	}
	if (out)
		lnet_ping_fill(ln, &target.nid, &pi, out);
out:
	lnet_lock(ln);
	lnet_ping_op_put_locked(op);
	lnet_unlock(ln);
	return rc;
}
