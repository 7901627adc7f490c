/* SPDX-License-Identifier: MIT */
/*
 * test_match.c - matching of incoming PUT/GET against MEs and MDs.
 *
 * Hundreds of generated cases (seeded, reproducible): random MEs (match and
 * ignore bits, NID/PID wildcards, insert positions, unlink modes) with random
 * MDs (OP_PUT/OP_GET, MANAGE_REMOTE, TRUNCATE, MAX_SIZE, thresholds, sizes),
 * then random requests from three other instances and from the node itself
 * (0@lo). Each outcome - which MD, at which offset, how many bytes, whether
 * it unlinked, or a drop - is checked against a reference model written
 * here, independently of the library:
 *   - MEs with ignore bits are tried before exact MEs (the kernel keeps them
 *     in a separate list walked first); within each group BEFORE inserts at
 *     the head, AFTER/LOCAL at the tail; the first acceptable ME wins;
 *   - a matching MD with no room and no TRUNCATE drops the request;
 *   - the portal's unique/wildcard kind is fixed by its first ME.
 * A few hand-written cases pin the rules down by name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlnd.h"
#include "ulnet/ulnet.h"

#define NSENDERS 4          /* three remote instances + the node itself */
#define MAXME 8
#define MAXREQ 4

static void quiet_log(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	(void)lvl;
	(void)msg;
}

/* --- the world: target T and senders ------------------------------------------- */

struct world {
	struct memlnd_net *net;
	ulnet_t *t;
	ulnet_nid_t tnid;
	ulnet_t *s[NSENDERS];       /* s[3] is T itself */
	ulnet_process_id_t sid[NSENDERS]; /* as T sees them: NID and PID */
};

static ulnet_t *mk(ulnet_pid_t pid)
{
	struct ulnet_opts o = { .pid = pid, .flags = ULNET_OPT_MANUAL_PROGRESS, .log = quiet_log };
	struct ulnet_globals g;
	ulnet_t *ln;

	assert_int_equal(ulnet_create(&o, &ln), 0);
	ulnet_globals_get(ln, &g);
	g.discovery = 0;
	assert_int_equal(ulnet_globals_set(ln, &g), 0);
	return ln;
}

static void world_up(struct world *w)
{
	static const ulnet_pid_t pids[3] = { 12345, 12345, 4242 };
	int i;

	w->net = memlnd_net_create();
	w->t = mk(12345);
	assert_int_equal(memlnd_add_ni(w->net, w->t, 100, &w->tnid), 0);
	for (i = 0; i < 3; i++) {
		w->s[i] = mk(pids[i]);
		assert_int_equal(memlnd_add_ni(w->net, w->s[i], 1 + (uint32_t)i, &w->sid[i].nid), 0);
		w->sid[i].pid = pids[i];
	}
	w->s[3] = w->t;
	/* T sending to its own NID: through its LND, from that NID */
	w->sid[3].nid = w->tnid;
	w->sid[3].pid = 12345;
}

static void world_down(struct world *w)
{
	int i;

	for (i = 0; i < 3; i++)
		ulnet_destroy(w->s[i]);
	ulnet_destroy(w->t);
	memlnd_net_destroy(w->net);
}

/* --- the reference model ------------------------------------------------------- */

struct ref_me {
	bool alive, has_md, md_alive;
	ulnet_process_id_t id;
	uint64_t bits, ignore;
	enum ulnet_unlink me_unlink;
	enum ulnet_ins_pos pos;
	ulnet_handle_t meh, mdh;
	/* MD */
	unsigned options;
	size_t length, max_size, offset;
	int threshold;
	enum ulnet_unlink md_unlink;
	uint8_t *buf;
	/* what the library reported */
	int nev;
	struct ulnet_event ev;
};

struct ref_portal {
	int kind;                  /* 0 none yet, 1 unique, 2 wildcard */
	int ign[MAXME], nign;      /* ME indexes in match order */
	int ex[MAXME], nex;
};

static void ref_insert(int *list, int *n, int idx, enum ulnet_ins_pos pos)
{
	if (pos == ULNET_INS_BEFORE) {
		memmove(list + 1, list, (size_t)*n * sizeof(int));
		list[0] = idx;
	} else {
		list[*n] = idx;
	}
	(*n)++;
}

static void ref_remove(int *list, int *n, int idx)
{
	int i;

	for (i = 0; i < *n; i++) {
		if (list[i] == idx) {
			memmove(list + i, list + i + 1, (size_t)(*n - i - 1) * sizeof(int));
			(*n)--;
			return;
		}
	}
}

/* Would the portal accept this ME? (and fix its kind) */
static int ref_attach_me(struct ref_portal *p, struct ref_me *mes, int idx)
{
	struct ref_me *m = &mes[idx];
	bool unique = m->ignore == 0 && !ulnet_nid_is_any(&m->id.nid) && m->id.pid != ULNET_PID_ANY;
	int want = unique ? 1 : 2;

	if (p->kind && p->kind != want)
		return -EPERM;
	p->kind = want;
	if (m->ignore)
		ref_insert(p->ign, &p->nign, idx, m->pos);
	else
		ref_insert(p->ex, &p->nex, idx, m->pos);
	return 0;
}

static bool ref_exhausted(const struct ref_me *m)
{
	return m->threshold == 0 ||
	       ((m->options & ULNET_MD_MAX_SIZE) && m->offset + m->max_size > m->length);
}

struct ref_req {
	int sender;
	bool get;
	uint64_t bits;
	uint32_t rlength, roffset;
};

struct ref_result {
	int me;                    /* -1: dropped */
	uint32_t offset, mlength;
	bool unlinked;
};

static void ref_unlink_md(struct ref_portal *p, struct ref_me *mes, int idx)
{
	struct ref_me *m = &mes[idx];

	m->md_alive = false;
	if (m->me_unlink == ULNET_UNLINK) {
		m->alive = false;
		if (m->ignore)
			ref_remove(p->ign, &p->nign, idx);
		else
			ref_remove(p->ex, &p->nex, idx);
	}
}

static struct ref_result ref_match(struct ref_portal *p, struct ref_me *mes,
				   const ulnet_process_id_t *from, const struct ref_req *rq)
{
	struct ref_result r = { .me = -1 };
	int pass, i;

	for (pass = 0; pass < 2; pass++) {
		int *list = pass == 0 ? p->ign : p->ex;
		int n = pass == 0 ? p->nign : p->nex;

		for (i = 0; i < n; i++) {
			struct ref_me *m = &mes[list[i]];
			size_t off, room, want;

			if (!m->md_alive)
				continue;
			if (ref_exhausted(m))
				continue;
			if (!(m->options & (rq->get ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT)))
				continue;
			if ((m->bits ^ rq->bits) & ~m->ignore)
				continue;
			if (m->id.pid != ULNET_PID_ANY && m->id.pid != from->pid)
				continue;
			if (!ulnet_nid_is_any(&m->id.nid) && !ulnet_nid_same(&m->id.nid, &from->nid))
				continue;
			off = (m->options & ULNET_MD_MANAGE_REMOTE) ? rq->roffset : m->offset;
			room = off < m->length ? m->length - off : 0;
			if ((m->options & ULNET_MD_MAX_SIZE) && m->max_size < room)
				room = m->max_size;
			if (rq->rlength <= room)
				want = rq->rlength;
			else if (m->options & ULNET_MD_TRUNCATE)
				want = room;
			else
				return r; /* too long: dropped, no further ME tried */
			r.me = list[i];
			r.offset = (uint32_t)off;
			r.mlength = (uint32_t)want;
			if (m->threshold != ULNET_MD_THRESH_INF)
				m->threshold--;
			m->offset = off + want;
			if (ref_exhausted(m) && m->md_unlink == ULNET_UNLINK) {
				r.unlinked = true;
				ref_unlink_md(p, mes, list[i]);
			}
			return r;
		}
	}
	return r;
}

/* --- the case generator ---------------------------------------------------------- */

static unsigned rnd(unsigned *seed, unsigned n)
{
	return (unsigned)rand_r(seed) % n;
}

static uint64_t pick_bits(unsigned *seed)
{
	static const uint64_t v[] = { 0, 1, 2, 3, 0x10, 0x11, 0x8000000000000000ULL, 0xffffffffffffffffULL };

	return v[rnd(seed, 8)];
}

static uint64_t pick_ignore(unsigned *seed)
{
	static const uint64_t v[] = { 0, 0, 0, 0, 1, 0xf, 0xffffffffffffffffULL, 0x8000000000000000ULL };

	return v[rnd(seed, 8)];
}

static void rec_target(const struct ulnet_event *ev)
{
	struct ref_me *m = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_UNLINK)
		return;
	m->nev++;
	m->ev = *ev;
}

struct sender_log {
	int nsend, nreply, nack, nunlink;
	uint32_t reply_mlength;
};

static void rec_sender(const struct ulnet_event *ev)
{
	struct sender_log *l = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_REPLY)
		l->reply_mlength = ev->mlength;
	if (ev->type == ULNET_EVENT_SEND)
		l->nsend++;
	else if (ev->type == ULNET_EVENT_REPLY)
		l->nreply++;
	else if (ev->type == ULNET_EVENT_ACK)
		l->nack++;
	else if (ev->type == ULNET_EVENT_UNLINK)
		l->nunlink++;
}

static uint64_t drops_of(ulnet_t *ln)
{
	struct ulnet_counters c;

	ulnet_counters_get(ln, &c);
	return c.drop_count;
}

static int ndropped;

static int run_case(struct world *w, struct ref_portal *portals, unsigned seed0, int ci)
{
	unsigned seed = seed0;
	unsigned portal = 1 + rnd(&seed, 62);
	struct ref_portal *p = &portals[portal];
	struct ref_me mes[MAXME];
	int nme = 1 + (int)rnd(&seed, 6), nreq = 1 + (int)rnd(&seed, MAXREQ), i;
	int checks = 0;

	memset(mes, 0, sizeof(mes));
	p->nign = p->nex = 0;
	for (i = 0; i < nme; i++) {
		struct ref_me *m = &mes[i];
		static const size_t lens[] = { 0, 1, 16, 100, 4096 };
		unsigned k = rnd(&seed, 5);
		int rc;

		m->id.nid = k == 4 ? ULNET_NID_ANY : w->sid[k].nid;
		if (rnd(&seed, 3) != 0)
			m->id.nid = ULNET_NID_ANY;
		m->id.pid = rnd(&seed, 2) ? ULNET_PID_ANY : (rnd(&seed, 2) ? 12345 : 4242);
		m->bits = pick_bits(&seed);
		m->ignore = pick_ignore(&seed);
		m->me_unlink = rnd(&seed, 2) ? ULNET_UNLINK : ULNET_RETAIN;
		m->pos = (enum ulnet_ins_pos)rnd(&seed, 3);
		rc = ulnet_me_attach(w->t, portal, m->id, m->bits, m->ignore, m->me_unlink, m->pos,
				     &m->meh);
		assert_int_equal(rc, ref_attach_me(p, mes, i));
		if (rc)
			continue;
		m->alive = true;
		if (rnd(&seed, 8) == 0)
			continue; /* an ME without an MD is never matched */
		m->options = (rnd(&seed, 4) ? ULNET_MD_OP_PUT : 0) | (rnd(&seed, 3) ? ULNET_MD_OP_GET : 0);
		if (!m->options)
			m->options = ULNET_MD_OP_PUT;
		if (rnd(&seed, 3) == 0)
			m->options |= ULNET_MD_MANAGE_REMOTE;
		if (rnd(&seed, 2) == 0)
			m->options |= ULNET_MD_TRUNCATE;
		/* fewer zero-room MDs: bias toward bigger buffers */
		m->length = lens[rnd(&seed, 5)];
		if (m->length < 16 && rnd(&seed, 2))
			m->length = 4096;
		if (rnd(&seed, 4) == 0) {
			m->options |= ULNET_MD_MAX_SIZE;
			m->max_size = rnd(&seed, (unsigned)m->length + 1);
		}
		m->threshold = (int[]){ 0, 1, 2, 3, ULNET_MD_THRESH_INF }[rnd(&seed, 5)];
		m->md_unlink = rnd(&seed, 2) ? ULNET_UNLINK : ULNET_RETAIN;
		m->buf = calloc(1, m->length + 1);
		struct ulnet_md md = { .start = m->buf, .length = m->length, .threshold = m->threshold,
				       .max_size = m->max_size, .options = m->options, .user_ptr = m,
				       .handler = rec_target };
		assert_int_equal(ulnet_md_attach(w->t, m->meh, &md, m->md_unlink, &m->mdh), 0);
		m->has_md = m->md_alive = true;
	}

	for (i = 0; i < nreq; i++) {
		static const uint32_t rlens[] = { 0, 1, 16, 50, 100, 5000 };
		static const uint32_t roffs[] = { 0, 10, 50, 4096 };
		struct ref_req rq = {
			.sender = (int)rnd(&seed, NSENDERS),
			.get = rnd(&seed, 2),
			.bits = pick_bits(&seed),
			.rlength = rlens[rnd(&seed, 6)],
			.roffset = roffs[rnd(&seed, 4)],
		};
		struct ref_result want;
		struct sender_log sl = { 0 };

		/* aim at an existing ME half of the time */
		if (rnd(&seed, 2))
			rq.bits = mes[rnd(&seed, (unsigned)nme)].bits ^ (rnd(&seed, 4) ? 0 : 1);
		ulnet_t *s = w->s[rq.sender];
		ulnet_process_id_t target = { .nid = w->tnid, .pid = 12345 };
		uint8_t *sbuf = malloc(rq.rlength + 1);
		uint64_t drops0 = drops_of(w->t);
		int nev0[MAXME], j;
		ulnet_handle_t smdh;
		struct ulnet_md smd = { .start = sbuf, .length = rq.rlength, .threshold = 2,
					.user_ptr = &sl, .handler = rec_sender };

		for (j = 0; j < (int)rq.rlength + 1; j++)
			sbuf[j] = (uint8_t)(j * 13 + i + 1);
		for (j = 0; j < nme; j++)
			nev0[j] = mes[j].nev;
		want = ref_match(p, mes, &w->sid[rq.sender], &rq);

		assert_int_equal(ulnet_md_bind(s, &smd, ULNET_RETAIN, &smdh), 0);
		if (rq.get)
			assert_int_equal(ulnet_get(s, NULL, smdh, target, portal, rq.bits, rq.roffset), 0);
		else
			assert_int_equal(ulnet_put(s, NULL, smdh, ULNET_NOACK_REQ, target, portal, rq.bits,
						   rq.roffset, 0x1234), 0);
		memlnd_pump(w->net);

		for (j = 0; j < nme; j++) {
			int expect = j == want.me ? 1 : 0;

			if (mes[j].nev - nev0[j] != expect) {
				print_error("case %d (seed %u) req %d: ME %d got %d events, want %d (winner %d)\n",
					    ci, seed0, i, j, mes[j].nev - nev0[j], expect, want.me);
				fail();
			}
		}
		assert_int_equal(sl.nsend, 1);
		if (want.me < 0) {
			ndropped++;
			assert_int_equal(drops_of(w->t), drops0 + 1);
			assert_int_equal(sl.nreply, 0);
		} else {
			struct ref_me *m = &mes[want.me];
			const struct ulnet_event *e = &m->ev;

			assert_int_equal(drops_of(w->t), drops0);
			assert_int_equal(e->type, rq.get ? ULNET_EVENT_GET : ULNET_EVENT_PUT);
			assert_int_equal(e->status, 0);
			assert_int_equal(e->offset, want.offset);
			assert_int_equal(e->mlength, want.mlength);
			assert_int_equal(e->rlength, rq.get ? 0 : rq.rlength);
			assert_int_equal(e->match_bits, rq.bits);
			assert_int_equal(e->pt_index, portal);
			assert_int_equal(e->unlinked, want.unlinked);
			assert_true(ulnet_nid_same(&e->initiator.nid, &w->sid[rq.sender].nid));
			assert_int_equal(e->initiator.pid, w->sid[rq.sender].pid);
			assert_int_equal(e->hdr_data, rq.get ? 0 : 0x1234);
			if (rq.get) {
				assert_int_equal(sl.nreply, 1);
				assert_int_equal(sl.reply_mlength, want.mlength);
				if (want.mlength)
					assert_memory_equal(sbuf, m->buf + want.offset, want.mlength);
			} else if (want.mlength) {
				assert_memory_equal(m->buf + want.offset, sbuf, want.mlength);
			}
			checks++;
		}
		assert_int_equal(ulnet_md_unlink(s, smdh), 0);
		free(sbuf);
	}

	/* tear down, checking which MEs/MDs the library unlinked by itself */
	for (i = 0; i < nme; i++) {
		struct ref_me *m = &mes[i];

		if (m->has_md && !m->md_alive)
			assert_int_equal(ulnet_md_unlink(w->t, m->mdh), -ENOENT);
		if (m->alive && m->md_alive) {
			assert_int_equal(ulnet_md_unlink(w->t, m->mdh), 0);
			/* the MD takes an UNLINK-mode ME with it */
			if (m->me_unlink == ULNET_UNLINK)
				m->alive = false;
		}
		if (m->alive) {
			assert_int_equal(ulnet_me_unlink(w->t, m->meh), 0);
		} else if (!ulnet_handle_is_none(m->meh)) {
			assert_int_equal(ulnet_me_unlink(w->t, m->meh), -ENOENT);
		}
		free(m->buf);
	}
	return checks;
}

static void test_generated_cases(void **state)
{
	(void)state;
	struct world w;
	struct ref_portal portals[ULNET_MAX_PORTALS];
	int ci, matched = 0;
	const int ncases = 2000;

	memset(portals, 0, sizeof(portals));
	world_up(&w);
	for (ci = 0; ci < ncases; ci++)
		matched += run_case(&w, portals, 0x5eed0000u + (unsigned)ci, ci);
	/* the generator must exercise both outcomes a lot */
	print_message("%d cases: %d requests matched, %d dropped\n", ncases, matched, ndropped);
	assert_true(matched > 1000);
	assert_true(ndropped > 1000);
	world_down(&w);
}

/* --- named rules ----------------------------------------------------------------- */

struct hit {
	int id, n;
	uint32_t offset, mlength;
};

static void rec_hit(const struct ulnet_event *ev)
{
	struct hit *h = ev->md_user_ptr;

	if (ev->type == ULNET_EVENT_PUT || ev->type == ULNET_EVENT_GET) {
		h->n++;
		h->offset = ev->offset;
		h->mlength = ev->mlength;
	}
}

static const ulnet_process_id_t any = { .nid = { .type = ULNET_LND_ANY, .num = 0xffff,
						 .addr = { 0xff, 0xff, 0xff, 0xff } },
					.pid = ULNET_PID_ANY };

static void me_md(ulnet_t *ln, unsigned portal, ulnet_process_id_t id, uint64_t bits,
		  uint64_t ignore, enum ulnet_ins_pos pos, void *buf, size_t len, unsigned opt,
		  struct hit *h)
{
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = buf, .length = len, .threshold = ULNET_MD_THRESH_INF,
			       .options = opt, .user_ptr = h, .handler = rec_hit };

	assert_int_equal(ulnet_me_attach(ln, portal, id, bits, ignore, ULNET_UNLINK, pos, &meh), 0);
	if (buf)
		assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
}

static void lo_put(ulnet_t *ln, unsigned portal, uint64_t bits, size_t len)
{
	static uint8_t src[256];
	ulnet_handle_t mdh;
	struct ulnet_md md = { .start = src, .length = len, .threshold = 1 };
	ulnet_process_id_t me = { .nid = ULNET_NID_LO0, .pid = 12345 };

	assert_int_equal(ulnet_md_bind(ln, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(ln, NULL, mdh, ULNET_NOACK_REQ, me, portal, bits, 0, 0), 0);
}

static void test_ignore_bits_list_first(void **state)
{
	(void)state;
	ulnet_t *ln = mk(12345);
	static uint8_t b1[64], b2[64];
	struct hit h1 = { 0 }, h2 = { 0 };

	/* exact ME first, then an ignore-bits ME inserted AFTER it */
	me_md(ln, 5, any, 0x42, 0, ULNET_INS_AFTER, b1, 64, ULNET_MD_OP_PUT, &h1);
	me_md(ln, 5, any, 0x40, 0xf, ULNET_INS_AFTER, b2, 64, ULNET_MD_OP_PUT, &h2);
	lo_put(ln, 5, 0x42, 8);
	assert_int_equal(h2.n, 1);
	assert_int_equal(h1.n, 0);
	ulnet_destroy(ln);
}

static void test_before_after_order(void **state)
{
	(void)state;
	ulnet_t *ln = mk(12345);
	static uint8_t b[3][64];
	struct hit h[3] = { { 0 } };

	me_md(ln, 6, any, 7, 0, ULNET_INS_AFTER, b[0], 64, ULNET_MD_OP_PUT, &h[0]);
	me_md(ln, 6, any, 7, 0, ULNET_INS_BEFORE, b[1], 64, ULNET_MD_OP_PUT, &h[1]);
	me_md(ln, 6, any, 7, 0, ULNET_INS_LOCAL, b[2], 64, ULNET_MD_OP_PUT, &h[2]);
	lo_put(ln, 6, 7, 8);
	assert_int_equal(h[1].n, 1);
	assert_int_equal(h[0].n + h[2].n, 0);
	ulnet_destroy(ln);
}

static void test_too_long_drops_without_trying_next(void **state)
{
	(void)state;
	ulnet_t *ln = mk(12345);
	static uint8_t small[4], big[64];
	struct hit hs = { 0 }, hb = { 0 };
	struct ulnet_counters c;

	me_md(ln, 7, any, 1, 0, ULNET_INS_AFTER, small, 4, ULNET_MD_OP_PUT, &hs);
	me_md(ln, 7, any, 1, 0, ULNET_INS_AFTER, big, 64, ULNET_MD_OP_PUT, &hb);
	lo_put(ln, 7, 1, 8);
	assert_int_equal(hs.n + hb.n, 0);
	ulnet_counters_get(ln, &c);
	assert_int_equal(c.drop_count, 1);
	ulnet_destroy(ln);
}

static void test_me_without_md_and_op_mismatch_skipped(void **state)
{
	(void)state;
	ulnet_t *ln = mk(12345);
	static uint8_t g[64], p[64];
	struct hit hn = { 0 }, hg = { 0 }, hp = { 0 };

	me_md(ln, 8, any, 1, 0, ULNET_INS_AFTER, NULL, 0, 0, &hn);
	me_md(ln, 8, any, 1, 0, ULNET_INS_AFTER, g, 64, ULNET_MD_OP_GET, &hg);
	me_md(ln, 8, any, 1, 0, ULNET_INS_AFTER, p, 64, ULNET_MD_OP_PUT, &hp);
	lo_put(ln, 8, 1, 8);
	assert_int_equal(hp.n, 1);
	assert_int_equal(hg.n, 0);
	ulnet_destroy(ln);
}

static void test_unique_wildcard_fixed_by_first_me(void **state)
{
	(void)state;
	ulnet_t *ln = mk(12345);
	ulnet_handle_t meh;
	ulnet_process_id_t exact = { .nid = ULNET_NID_LO0, .pid = 12345 };

	assert_int_equal(ulnet_me_attach(ln, 9, exact, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_me_attach(ln, 9, any, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), -EPERM);
	assert_int_equal(ulnet_me_attach(ln, 9, exact, 1, 1, ULNET_UNLINK, ULNET_INS_AFTER, &meh), -EPERM);
	assert_int_equal(ulnet_me_attach(ln, 10, any, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_me_attach(ln, 10, exact, 1, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), -EPERM);
	ulnet_destroy(ln);
}

static void test_max_size(void **state)
{
	(void)state;
	ulnet_t *ln = mk(12345);
	static uint8_t b[100];
	struct hit h = { 0 };
	ulnet_handle_t meh, mdh;
	struct ulnet_md md = { .start = b, .length = 100, .threshold = ULNET_MD_THRESH_INF,
			       .max_size = 40,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MAX_SIZE | ULNET_MD_TRUNCATE,
			       .user_ptr = &h, .handler = rec_hit };

	assert_int_equal(ulnet_me_attach(ln, 11, any, 0, 0, ULNET_UNLINK, ULNET_INS_AFTER, &meh), 0);
	assert_int_equal(ulnet_md_attach(ln, meh, &md, ULNET_UNLINK, &mdh), 0);
	lo_put(ln, 11, 0, 30);   /* at 0, 30 bytes */
	assert_int_equal(h.mlength, 30);
	lo_put(ln, 11, 0, 60);   /* at 30, truncated to max_size 40 */
	assert_int_equal(h.offset, 30);
	assert_int_equal(h.mlength, 40);
	/* 70 + 40 > 100: exhausted, and auto-unlinked */
	lo_put(ln, 11, 0, 1);
	assert_int_equal(h.n, 2);
	assert_int_equal(ulnet_md_unlink(ln, mdh), -ENOENT);
	ulnet_destroy(ln);
}

static void test_same_peer_nid_accepted(void **state)
{
	(void)state;
	/* an ME naming another NID of the sending peer still matches */
	struct memlnd_net *net = memlnd_net_create();
	ulnet_t *t = mk(12345), *s = mk(12345);
	ulnet_nid_t tn, s1, s2;
	static uint8_t b[16], src[4];
	struct hit h = { 0 };
	/* PID ANY keeps the portal wildcard: unique portals hash MEs by NID */
	ulnet_process_id_t other = { .pid = ULNET_PID_ANY };

	assert_int_equal(memlnd_add_ni(net, t, 50, &tn), 0);
	assert_int_equal(memlnd_add_ni(net, s, 51, &s1), 0);
	memlnd_nid(52, &s2);
	other.nid = s2;
	/* T knows that 51 and 52 are one peer (primary 51) */
	assert_int_equal(ulnet_peer_add(t, &s1, &s2, 1, false), 0);
	me_md(t, 12, other, 3, 0, ULNET_INS_AFTER, b, 16, ULNET_MD_OP_PUT, &h);
	ulnet_handle_t mdh;
	struct ulnet_md md = { .start = src, .length = 4, .threshold = 1 };
	ulnet_process_id_t tgt = { .nid = tn, .pid = 12345 };
	assert_int_equal(ulnet_md_bind(s, &md, ULNET_UNLINK, &mdh), 0);
	assert_int_equal(ulnet_put(s, NULL, mdh, ULNET_NOACK_REQ, tgt, 12, 3, 0, 0), 0);
	memlnd_pump(net);
	assert_int_equal(h.n, 1);
	ulnet_destroy(t);
	ulnet_destroy(s);
	memlnd_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated_cases),
		cmocka_unit_test(test_ignore_bits_list_first),
		cmocka_unit_test(test_before_after_order),
		cmocka_unit_test(test_too_long_drops_without_trying_next),
		cmocka_unit_test(test_me_without_md_and_op_mismatch_skipped),
		cmocka_unit_test(test_unique_wildcard_fixed_by_first_me),
		cmocka_unit_test(test_max_size),
		cmocka_unit_test(test_same_peer_nid_accepted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
