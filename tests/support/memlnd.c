/* SPDX-License-Identifier: MIT */
/* memlnd.c - the in-memory test LND; see memlnd.h. */
#include "memlnd.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/evloop.h"

enum pkt_state { PKT_QUEUED, PKT_HELD, PKT_PARSING };

struct memlnd_node;

struct memlnd_pkt {
	struct memlnd_pkt *next, *prev;
	enum pkt_state state;
	struct memlnd_node *src, *dst;
	struct lnet_msg *tx;       /* the sender's message; NULL once it is gone */
	/* rdma mode, a GET: the REPLY the core made for it, and where the
	 * target writes the REPLY's bytes (the GET's MD) */
	struct lnet_msg *reply;
	const struct iovec *sink;
	unsigned nsink;
	size_t sink_len;
	struct lnet_hdr hdr;
	ulnet_nid_t from;
	int status;                /* shutdown: how the sender's message ends */
};

struct pkt_list {
	struct memlnd_pkt head;    /* sentinel */
	int n;
};

struct memlnd_node {
	struct memlnd_node *next;
	struct memlnd_net *net;
	struct lnet_ni *ni;
	ulnet_nid_t nid;
	struct ul_work work;       /* auto mode: deliver on this node's loop */
	bool dead;
	bool link_down;            /* the core's link_state(): a pulled cable */
	/* its sends that a receiver's thread is finalizing right now: its
	 * shutdown waits for them (the instance goes after it) */
	int tx_finalizing;
};

struct memlnd_net {
	pthread_mutex_t lock;
	struct memlnd_node *nodes; /* live and dead (freed at destroy) */
	struct pkt_list queued, held, parsing;
	bool auto_mode;
	bool rdma;                 /* GETs as o2iblnd sends them (memlnd_set_rdma) */
	memlnd_filter_fn filter;
	void *filter_arg;
	int drop_n;
	unsigned drop_mask;
	int fail_n, fail_status;
	unsigned fail_mask;
	struct {
		ulnet_nid_t nid;
		int status;
	} fail_nids[MEMLND_MAX_FAIL_NIDS];
	struct memlnd_trace_ent *trace;
	int ntrace, captrace;
};

/* instance -> network, so startup() finds its network */
struct memlnd_reg {
	struct memlnd_reg *next;
	ulnet_t *ln;
	struct memlnd_net *net;
};
static pthread_mutex_t memlnd_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct memlnd_reg *memlnd_regs;

static void pl_init(struct pkt_list *l)
{
	l->head.next = l->head.prev = &l->head;
	l->n = 0;
}

static void pl_add_tail(struct pkt_list *l, struct memlnd_pkt *p)
{
	p->prev = l->head.prev;
	p->next = &l->head;
	l->head.prev->next = p;
	l->head.prev = p;
	l->n++;
}

static void pl_del(struct pkt_list *l, struct memlnd_pkt *p)
{
	p->prev->next = p->next;
	p->next->prev = p->prev;
	p->next = p->prev = p;
	l->n--;
}

static struct memlnd_pkt *pl_first(struct pkt_list *l)
{
	return l->head.next == &l->head ? NULL : l->head.next;
}

void memlnd_nid(uint32_t addr, ulnet_nid_t *nid)
{
	ulnet_nid_from_ipv4(addr, ulnet_mknet(MEMLND_TYPE, 0), nid);
}

struct memlnd_net *memlnd_net_create(void)
{
	struct memlnd_net *net = calloc(1, sizeof(*net));

	if (!net)
		return NULL;
	pthread_mutex_init(&net->lock, NULL);
	pl_init(&net->queued);
	pl_init(&net->held);
	pl_init(&net->parsing);
	return net;
}

void memlnd_net_destroy(struct memlnd_net *net)
{
	struct memlnd_reg **rp;
	struct memlnd_pkt *p;

	if (!net)
		return;
	pthread_mutex_lock(&memlnd_reg_lock);
	for (rp = &memlnd_regs; *rp;) {
		if ((*rp)->net == net) {
			struct memlnd_reg *r = *rp;

			*rp = r->next;
			free(r);
		} else {
			rp = &(*rp)->next;
		}
	}
	pthread_mutex_unlock(&memlnd_reg_lock);
	/* every instance is gone: packets left have no owner */
	while ((p = pl_first(&net->queued)) || (p = pl_first(&net->held)) ||
	       (p = pl_first(&net->parsing))) {
		struct pkt_list *l = p->state == PKT_QUEUED ? &net->queued
				     : p->state == PKT_HELD ? &net->held : &net->parsing;

		pl_del(l, p);
		free(p);
	}
	while (net->nodes) {
		struct memlnd_node *n = net->nodes;

		net->nodes = n->next;
		free(n);
	}
	free(net->trace);
	pthread_mutex_destroy(&net->lock);
	free(net);
}

static struct memlnd_net *memlnd_net_of(ulnet_t *ln)
{
	struct memlnd_net *net = NULL;
	struct memlnd_reg *r;

	pthread_mutex_lock(&memlnd_reg_lock);
	for (r = memlnd_regs; r; r = r->next)
		if (r->ln == ln)
			net = r->net;
	pthread_mutex_unlock(&memlnd_reg_lock);
	return net;
}

static struct memlnd_node *memlnd_find_locked(struct memlnd_net *net, const ulnet_nid_t *nid)
{
	struct memlnd_node *n;

	for (n = net->nodes; n; n = n->next)
		if (!n->dead && ulnet_nid_same(&n->nid, nid))
			return n;
	return NULL;
}

static void memlnd_deliver(struct memlnd_net *net, struct memlnd_pkt *p);

/* A sender's message ends: in rdma mode a GET's REPLY ends with it, after
 * it (as the kernel's kiblnd_tx_done()). */
static void memlnd_tx_done(struct lnet_msg *tx, struct lnet_msg *reply, int status)
{
	lnet_finalize(tx, status);
	lnet_finalize(reply, status);
}

/* A sender's message finalized from the receiver's side (src->tx_finalizing
 * was counted under the lock when the message was taken off its packet). */
static void memlnd_finalize_tx(struct memlnd_net *net, struct memlnd_node *src,
			       struct lnet_msg *tx, struct lnet_msg *reply, int status)
{
	memlnd_tx_done(tx, reply, status);
	pthread_mutex_lock(&net->lock);
	src->tx_finalizing--;
	pthread_mutex_unlock(&net->lock);
}

/* auto mode: drain what is queued for this node */
static void memlnd_node_work(struct ul_work *w)
{
	struct memlnd_node *node = (struct memlnd_node *)((char *)w - offsetof(struct memlnd_node, work));
	struct memlnd_net *net = node->net;

	for (;;) {
		struct memlnd_pkt *p, *found = NULL;

		pthread_mutex_lock(&net->lock);
		if (node->dead) {
			pthread_mutex_unlock(&net->lock);
			return;
		}
		for (p = pl_first(&net->queued); p && p != &net->queued.head; p = p->next) {
			if (p->dst == node) {
				found = p;
				break;
			}
		}
		if (found) {
			pl_del(&net->queued, found);
			found->state = PKT_PARSING;
			pl_add_tail(&net->parsing, found);
		}
		pthread_mutex_unlock(&net->lock);
		if (!found)
			return;
		memlnd_deliver(net, found);
	}
}

static int memlnd_startup(struct lnet_ni *ni)
{
	struct memlnd_net *net = memlnd_net_of(lnet_ni_instance(ni));
	struct memlnd_node *node;

	if (!net)
		return -ENODEV;
	node = calloc(1, sizeof(*node));
	if (!node)
		return -ENOMEM;
	node->net = net;
	node->ni = ni;
	node->nid = *lnet_ni_nid(ni);
	node->work.fn = memlnd_node_work;
	pthread_mutex_lock(&net->lock);
	if (memlnd_find_locked(net, &node->nid)) {
		pthread_mutex_unlock(&net->lock);
		free(node);
		return -EADDRINUSE;
	}
	node->next = net->nodes;
	net->nodes = node;
	pthread_mutex_unlock(&net->lock);
	lnet_ni_set_data(ni, node);
	return 0;
}

static void memlnd_shutdown(struct lnet_ni *ni)
{
	struct memlnd_node *node = lnet_ni_data(ni);
	struct memlnd_net *net = node->net;
	struct memlnd_pkt *fail_head = NULL;
	struct pkt_list *lists[] = { &net->queued, &net->held, &net->parsing };
	unsigned i;

	pthread_mutex_lock(&net->lock);
	node->dead = true;
	for (i = 0; i < 3; i++) {
		struct memlnd_pkt *p, *nx;

		for (p = pl_first(lists[i]); p && p != &lists[i]->head; p = nx) {
			nx = p->next;
			if (p->src != node && p->dst != node)
				continue;
			if (p->state == PKT_PARSING && p->dst != node) {
				/* the receiver still reads it: its payload is
				 * gone, the sender's message ends now */
				if (p->tx) {
					struct memlnd_pkt *f = calloc(1, sizeof(*f));

					if (f) {
						f->tx = p->tx;
						f->reply = p->reply;
						f->status = -ESHUTDOWN;
						f->next = fail_head;
						fail_head = f;
					}
					p->tx = NULL;
					p->reply = NULL;
				}
				continue;
			}
			pl_del(lists[i], p);
			p->status = p->src == node ? -ESHUTDOWN : -ECONNRESET;
			p->next = fail_head;
			fail_head = p;
		}
	}
	pthread_mutex_unlock(&net->lock);

	/* finalize outside the lock: the core may call back */
	while (fail_head) {
		struct memlnd_pkt *p = fail_head;

		fail_head = p->next;
		if (p->tx)
			memlnd_tx_done(p->tx, p->reply, p->status);
		free(p);
	}
	/* a receiver's thread may be finalizing one of our sends it took
	 * before we were dead: the instance must outlive that (5 s bound) */
	for (i = 0; i < 5000; i++) {
		struct timespec ts = { 0, 1000000 };
		int busy;

		pthread_mutex_lock(&net->lock);
		busy = node->tx_finalizing;
		pthread_mutex_unlock(&net->lock);
		if (!busy)
			break;
		nanosleep(&ts, NULL);
	}
	lnet_ni_set_data(ni, NULL);
}

static void memlnd_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	struct memlnd_node *node = lnet_ni_data(ni);
	struct memlnd_net *net = node->net;
	const struct lnet_hdr *hdr = lnet_msg_hdr(msg);
	enum memlnd_verdict v = MEMLND_PASS;
	struct memlnd_node *dst;
	struct memlnd_pkt *p;
	struct ul_loop *loop = NULL;
	int fail_status = 0;

	p = calloc(1, sizeof(*p));
	if (!p) {
		lnet_finalize(msg, -ENOMEM);
		return;
	}
	/* the next hop: the header's dest, or a gateway for a routed message */
	ulnet_process_id_t hop = lnet_msg_target(msg);

	pthread_mutex_lock(&net->lock);
	dst = memlnd_find_locked(net, &hop.nid);
	if (net->filter)
		v = net->filter(net->filter_arg, hdr);
	if (v == MEMLND_PASS && net->drop_n > 0 &&
	    (!net->drop_mask || (net->drop_mask & (1u << hdr->type)))) {
		net->drop_n--;
		v = MEMLND_DROP;
	}
	if (v == MEMLND_FAIL)
		fail_status = -EHOSTUNREACH;
	/* a link down: ours gives what connect() does with no route; the
	 * peer's, what a host that stopped answering gives */
	if (v == MEMLND_PASS && (node->link_down || (dst && dst->link_down))) {
		v = MEMLND_FAIL;
		fail_status = node->link_down ? -ENETUNREACH : -EHOSTUNREACH;
	}
	for (int i = 0; v == MEMLND_PASS && i < MEMLND_MAX_FAIL_NIDS; i++) {
		if (net->fail_nids[i].status && ulnet_nid_same(&net->fail_nids[i].nid, &hop.nid)) {
			v = MEMLND_FAIL;
			fail_status = net->fail_nids[i].status;
		}
	}
	if (v == MEMLND_PASS && net->fail_n > 0 &&
	    (!net->fail_mask || (net->fail_mask & (1u << hdr->type)))) {
		net->fail_n--;
		v = MEMLND_FAIL;
		fail_status = net->fail_status;
	}
	if (net->ntrace == net->captrace) {
		int cap = net->captrace ? net->captrace * 2 : 64;
		struct memlnd_trace_ent *t = realloc(net->trace, (size_t)cap * sizeof(*t));

		if (t) {
			net->trace = t;
			net->captrace = cap;
		}
	}
	if (net->ntrace < net->captrace) {
		struct memlnd_trace_ent *t = &net->trace[net->ntrace++];
		const struct iovec *iov;
		unsigned niov;
		size_t off, len;
		struct iovec one;

		t->hdr = *hdr;
		t->hop = hop.nid;
		t->verdict = v;
		lnet_msg_payload(msg, &iov, &niov, &off, &len);
		if (len > MEMLND_TRACE_DATA)
			len = MEMLND_TRACE_DATA;
		one.iov_base = t->data;
		one.iov_len = len;
		t->data_len = (uint32_t)lnet_copy_iov(&one, 1, 0, iov, niov, off, len);
	}
	if (v == MEMLND_FAIL) {
		pthread_mutex_unlock(&net->lock);
		free(p);
		lnet_finalize(msg, fail_status);
		return;
	}
	if (!dst || v == MEMLND_DROP) {
		pthread_mutex_unlock(&net->lock);
		free(p);
		/* a lost packet: the send itself went fine; no such node is
		 * an unreachable host */
		lnet_finalize(msg, dst ? 0 : -EHOSTUNREACH);
		return;
	}
	/* rdma mode: a GET to its final destination carries its sink, and
	 * its REPLY will not come as a message (o2iblnd's GET_REQ). The
	 * core's lock nests inside ours here: the core calls LNDs unlocked. */
	if (net->rdma && hdr->type == ULNET_MSG_GET &&
	    lnet_msg_get_sink(msg, &p->sink, &p->nsink, &p->sink_len) == 0) {
		p->reply = lnet_create_reply_msg(ni, msg);
		if (!p->reply) {
			pthread_mutex_unlock(&net->lock);
			free(p);
			lnet_finalize(msg, -EIO);
			return;
		}
	}
	p->src = node;
	p->dst = dst;
	p->tx = msg;
	p->hdr = *hdr;
	p->from = node->nid;
	if (v == MEMLND_HOLD) {
		p->state = PKT_HELD;
		pl_add_tail(&net->held, p);
	} else {
		p->state = PKT_QUEUED;
		pl_add_tail(&net->queued, p);
		if (net->auto_mode)
			loop = lnet_ni_loop(dst->ni);
	}
	if (loop)
		ul_loop_post(loop, &dst->work);
	pthread_mutex_unlock(&net->lock);
}

static void memlnd_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
			const struct iovec *iov, unsigned niov, size_t offset, size_t mlen,
			size_t rlen)
{
	struct memlnd_pkt *p = rx_private;
	struct memlnd_net *net = p->dst->net;
	struct memlnd_node *src = p->src;
	struct lnet_msg *tx, *reply;
	size_t wrote = 0;

	(void)ni;
	(void)rlen;
	pthread_mutex_lock(&net->lock);
	tx = p->tx;
	reply = p->reply;
	if (reply) {
		/* an rdma GET: msg is the REPLY, the MD's bytes go straight
		 * into the requester's sink (o2iblnd's RDMA write, then
		 * GET_DONE with the length); no match: GET_DONE -ENODATA */
		if (msg && tx && mlen)
			wrote = lnet_copy_iov(p->sink, p->nsink, 0, iov, niov, offset,
					      mlen < p->sink_len ? mlen : p->sink_len);
		pl_del(&net->parsing, p);
		if (tx)
			src->tx_finalizing++;
		pthread_mutex_unlock(&net->lock);
		free(p);
		lnet_finalize(msg, tx ? 0 : -ECONNABORTED);
		if (!tx)
			return;
		if (!msg) {
			lnet_msg_set_hstatus(tx, ULNET_HSTATUS_REMOTE_ERROR);
			memlnd_finalize_tx(net, src, tx, reply, -ENODATA);
		} else if (lnet_set_reply_msg_len(src->ni, reply, wrote)) {
			memlnd_finalize_tx(net, src, tx, reply, -EPROTO);
		} else {
			memlnd_finalize_tx(net, src, tx, reply, 0);
		}
		return;
	}
	/* copy under the lock: the sender cannot go away meanwhile */
	if (msg && tx && mlen) {
		const struct iovec *siov;
		unsigned sniov;
		size_t soff, slen;

		lnet_msg_payload(tx, &siov, &sniov, &soff, &slen);
		lnet_copy_iov(iov, niov, offset, siov, sniov, soff, mlen);
	}
	pl_del(&net->parsing, p);
	if (tx)
		src->tx_finalizing++;
	pthread_mutex_unlock(&net->lock);
	free(p);
	if (msg)
		lnet_finalize(msg, tx || !mlen ? 0 : -EIO);
	if (tx)
		memlnd_finalize_tx(net, src, tx, NULL, 0);
}

static void memlnd_deliver(struct memlnd_net *net, struct memlnd_pkt *p)
{
	int rc = lnet_parse(p->dst->ni, &p->hdr, &p->from, p, p->reply != NULL);

	if (rc < 0) {
		/* protocol error: a real LND drops the connection */
		struct lnet_msg *tx, *reply;

		struct memlnd_node *src = p->src;

		pthread_mutex_lock(&net->lock);
		tx = p->tx;
		reply = p->reply;
		pl_del(&net->parsing, p);
		if (tx)
			src->tx_finalizing++;
		pthread_mutex_unlock(&net->lock);
		free(p);
		if (tx)
			memlnd_finalize_tx(net, src, tx, reply, rc);
	}
}

int memlnd_pump_one(struct memlnd_net *net)
{
	struct memlnd_pkt *p;

	pthread_mutex_lock(&net->lock);
	p = pl_first(&net->queued);
	if (p) {
		pl_del(&net->queued, p);
		p->state = PKT_PARSING;
		pl_add_tail(&net->parsing, p);
	}
	pthread_mutex_unlock(&net->lock);
	if (!p)
		return 0;
	memlnd_deliver(net, p);
	return 1;
}

int memlnd_pump(struct memlnd_net *net)
{
	int n = 0;

	while (memlnd_pump_one(net))
		n++;
	return n;
}

int memlnd_queued(struct memlnd_net *net)
{
	int n;

	pthread_mutex_lock(&net->lock);
	n = net->queued.n;
	pthread_mutex_unlock(&net->lock);
	return n;
}

void memlnd_set_rdma(struct memlnd_net *net, bool on)
{
	pthread_mutex_lock(&net->lock);
	net->rdma = on;
	pthread_mutex_unlock(&net->lock);
}

void memlnd_set_auto(struct memlnd_net *net, bool on)
{
	pthread_mutex_lock(&net->lock);
	net->auto_mode = on;
	pthread_mutex_unlock(&net->lock);
}

void memlnd_set_filter(struct memlnd_net *net, memlnd_filter_fn fn, void *arg)
{
	pthread_mutex_lock(&net->lock);
	net->filter = fn;
	net->filter_arg = arg;
	pthread_mutex_unlock(&net->lock);
}

void memlnd_drop_next(struct memlnd_net *net, int n, unsigned type_mask)
{
	pthread_mutex_lock(&net->lock);
	net->drop_n = n;
	net->drop_mask = type_mask;
	pthread_mutex_unlock(&net->lock);
}

void memlnd_fail_next(struct memlnd_net *net, int n, unsigned type_mask, int status)
{
	pthread_mutex_lock(&net->lock);
	net->fail_n = n;
	net->fail_mask = type_mask;
	net->fail_status = status;
	pthread_mutex_unlock(&net->lock);
}

void memlnd_fail_nid(struct memlnd_net *net, const ulnet_nid_t *nid, int status)
{
	int i, free_slot = -1;

	pthread_mutex_lock(&net->lock);
	for (i = 0; i < MEMLND_MAX_FAIL_NIDS; i++) {
		if (net->fail_nids[i].status && ulnet_nid_same(&net->fail_nids[i].nid, nid))
			break;
		if (!net->fail_nids[i].status && free_slot < 0)
			free_slot = i;
	}
	if (i == MEMLND_MAX_FAIL_NIDS)
		i = free_slot;
	if (i >= 0) {
		net->fail_nids[i].nid = *nid;
		net->fail_nids[i].status = status;
	}
	pthread_mutex_unlock(&net->lock);
}

int memlnd_fail_held(struct memlnd_net *net, int status)
{
	struct memlnd_pkt *p, *head = NULL;
	int n = 0;

	pthread_mutex_lock(&net->lock);
	while ((p = pl_first(&net->held))) {
		pl_del(&net->held, p);
		p->next = head;
		head = p;
		n++;
	}
	pthread_mutex_unlock(&net->lock);
	/* finalize outside the lock: the core may send (resend) */
	while (head) {
		p = head;
		head = p->next;
		if (p->tx)
			memlnd_tx_done(p->tx, p->reply, status);
		free(p);
	}
	return n;
}

int memlnd_release_held(struct memlnd_net *net)
{
	struct memlnd_pkt *p;
	int n = 0;

	pthread_mutex_lock(&net->lock);
	while ((p = pl_first(&net->held))) {
		pl_del(&net->held, p);
		p->state = PKT_QUEUED;
		pl_add_tail(&net->queued, p);
		if (net->auto_mode)
			ul_loop_post(lnet_ni_loop(p->dst->ni), &p->dst->work);
		n++;
	}
	pthread_mutex_unlock(&net->lock);
	return n;
}

int memlnd_trace(struct memlnd_net *net, struct memlnd_trace_ent *out, int max)
{
	int n, i;

	pthread_mutex_lock(&net->lock);
	n = net->ntrace;
	for (i = 0; i < n && i < max; i++)
		out[i] = net->trace[i];
	pthread_mutex_unlock(&net->lock);
	return n;
}

void memlnd_trace_clear(struct memlnd_net *net)
{
	pthread_mutex_lock(&net->lock);
	net->ntrace = 0;
	pthread_mutex_unlock(&net->lock);
}

static void memlnd_link_state(struct lnet_ni *ni, bool down)
{
	struct memlnd_node *node = lnet_ni_data(ni);

	pthread_mutex_lock(&node->net->lock);
	node->link_down = down;
	pthread_mutex_unlock(&node->net->lock);
}

static const struct ulnet_lnd memlnd_lnd = {
	.type = MEMLND_TYPE,
	.name = "mem",
	.startup = memlnd_startup,
	.shutdown = memlnd_shutdown,
	.send = memlnd_send,
	.recv = memlnd_recv,
	.link_state = memlnd_link_state,
};

int memlnd_add_ni_conf(struct memlnd_net *net, ulnet_t *ln, struct ulnet_ni_conf *conf)
{
	struct memlnd_reg *r;
	int rc;

	rc = ulnet_lnd_register(ln, &memlnd_lnd);
	if (rc && rc != -EEXIST)
		return rc;
	pthread_mutex_lock(&memlnd_reg_lock);
	for (r = memlnd_regs; r; r = r->next)
		if (r->ln == ln)
			break;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			pthread_mutex_unlock(&memlnd_reg_lock);
			return -ENOMEM;
		}
		r->ln = ln;
		r->next = memlnd_regs;
		memlnd_regs = r;
	}
	r->net = net;
	pthread_mutex_unlock(&memlnd_reg_lock);
	return ulnet_ni_add(ln, conf);
}

int memlnd_add_ni(struct memlnd_net *net, ulnet_t *ln, uint32_t addr, ulnet_nid_t *nid)
{
	struct ulnet_ni_conf conf;

	memset(&conf, 0, sizeof(conf));
	memlnd_nid(addr, &conf.nid);
	if (nid)
		*nid = conf.nid;
	return memlnd_add_ni_conf(net, ln, &conf);
}
