/* SPDX-License-Identifier: MIT */
/*
 * sock_listener.c - listener groups: the socklnd NIs of one instance on one
 * address and acceptor port share one listener, as the kernel has one
 * acceptor per port for every NI (a second net on the same interface,
 * `net add --net tcp1 --if eth0` beside tcp, must not fail with
 * EADDRINUSE). A group is per port: an NI with an accept_port_bulk of its
 * own is in two groups, one per listener. The first listener of a group
 * holds the socket and takes the connections; the acceptor request names
 * the NI a connection is for, and the connection is then handed to that
 * NI (ksock_lgroup_hand_over()). When the holder goes, the socket passes
 * to the next listener of the group; it is closed with the last.
 *
 * The groups live in the instance's socklnd slot (lnet_ni_lnd_shared()),
 * freed with the instance (ksock_shared_fini()), under their own mutex:
 * NIs start and stop on API threads, while hand overs happen on the loop
 * thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/socklnd/sock_int.h"

/* The instance's shared socklnd state, created by the first NI to ask. */
static struct ksock_shared *ksock_shared_get(struct ksock_net *net)
{
	void **slot = lnet_ni_lnd_shared(net->ni);
	struct ksock_shared *sh = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *fresh;

	if (sh)
		return sh;
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return NULL;
	pthread_mutex_init(&fresh->lock, NULL);
	void *cur = NULL;

	if (__atomic_compare_exchange_n(slot, &cur, (void *)fresh, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return fresh;
	pthread_mutex_destroy(&fresh->lock);   /* another NI installed one first */
	free(fresh);
	return cur;
}

static bool ksock_same_listen_addr(const struct ksock_listener *a, const struct ksock_listener *b)
{
	return a->port == b->port && ksock_netns_same(a->net, b->net) &&
	       ksock_sa_same_ip((const struct sockaddr *)&a->net->sa,
				(const struct sockaddr *)&b->net->sa);
}

int ksock_lgroup_join(struct ksock_listener *l)
{
	struct ksock_net *net = l->net;
	struct ksock_shared *sh = ksock_shared_get(net);
	struct ksock_lgroup *g;
	char nb[ULNET_NIDSTR_SIZE], hb[ULNET_NIDSTR_SIZE];
	int rc;

	if (!sh)
		return -ENOMEM;
	pthread_mutex_lock(&sh->lock);
	for (g = sh->groups; g; g = g->next)
		if (ksock_same_listen_addr(g->members, l))
			break;
	if (g) {
		struct ksock_listener **pp = &g->members;

		while (*pp)
			pp = &(*pp)->lg_next;
		*pp = l;
		l->lg_next = NULL;
		l->lg = g;
		pthread_mutex_unlock(&sh->lock);
		lnet_ni_log(net->ni, ULNET_LOG_INFO,
			    "acceptor: %s shares the listener of %s (port %u)",
			    ksock_nidstr(&net->nid, nb), ksock_nidstr(&g->members->net->nid, hb),
			    l->port);
		return 0;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		pthread_mutex_unlock(&sh->lock);
		return -ENOMEM;
	}
	rc = ksock_listener_open(l);
	if (rc < 0) {
		pthread_mutex_unlock(&sh->lock);
		free(g);
		return rc;
	}
	g->members = l;
	l->lg_next = NULL;
	l->lg = g;
	g->next = sh->groups;
	sh->groups = g;
	pthread_mutex_unlock(&sh->lock);
	return 0;
}

void ksock_lgroup_leave(struct ksock_listener *l)
{
	struct ksock_lgroup *g = l->lg, **gp;
	void **slot;
	struct ksock_shared *sh;
	struct ksock_listener **pp;

	if (!g) {
		ksock_listener_close(l);   /* never joined: nothing shared */
		return;
	}
	slot = lnet_ni_lnd_shared(l->net->ni);
	sh = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&sh->lock);
	for (pp = &g->members; *pp && *pp != l; pp = &(*pp)->lg_next)
		;
	if (*pp)
		*pp = l->lg_next;
	l->lg = NULL;
	l->lg_next = NULL;
	if (g->members) {
		/* the others still listen: the next one holds it now */
		if (l->fd >= 0) {
			struct ksock_listener *to = g->members;
			char nb[ULNET_NIDSTR_SIZE];

			ksock_listener_move(l, to);
			lnet_ni_log(to->net->ni, ULNET_LOG_INFO,
				    "acceptor: %s holds the listener of port %u now",
				    ksock_nidstr(&to->net->nid, nb), to->port);
		}
	} else {
		ksock_listener_close(l);
		for (gp = &sh->groups; *gp && *gp != g; gp = &(*gp)->next)
			;
		if (*gp)
			*gp = g->next;
		free(g);
	}
	pthread_mutex_unlock(&sh->lock);
}

void ksock_shared_fini(void *shared)
{
	struct ksock_shared *sh = shared;

	while (sh->groups) {   /* none left once every NI is down */
		struct ksock_lgroup *g = sh->groups;

		sh->groups = g->next;
		free(g);
	}
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

/* Unlink c from its net's handshaking conns. */
static void ksock_hs_unlink_locked(struct ksock_net *net, struct ksock_conn *c)
{
	for (struct ksock_conn **pp = &net->hs_conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			c->next = NULL;
			return;
		}
}

/* Under sh->lock: the NI other than `from` with the NID `target` among
 * the listeners of `from`'s groups (all on `from`'s address). */
static struct ksock_net *ksock_lgroup_find(const struct ksock_net *from, const ulnet_nid_t *target)
{
	for (int i = 0; i < from->nlis; i++) {
		const struct ksock_lgroup *g = from->lis[i].lg;

		for (const struct ksock_listener *m = g ? g->members : NULL; m; m = m->lg_next)
			if (m->net != from && ulnet_nid_same(&m->net->nid, target))
				return m->net;
	}
	return NULL;
}

struct ksock_net *ksock_lgroup_hand_over(struct ksock_conn *c, const ulnet_nid_t *target)
{
	struct ksock_net *from = c->net, *to;
	void **slot;
	struct ksock_shared *sh;

	if (!from->ni)
		return NULL;
	slot = lnet_ni_lnd_shared(from->ni);
	sh = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!sh)
		return NULL;
	pthread_mutex_lock(&sh->lock);
	/* whichever of our ports it came in on: the kernel has one acceptor
	 * for all its NIs and ports, and any NI of the address may take it */
	to = ksock_lgroup_find(from, target);
	if (to) {
		ksock_lock(from);
		ksock_hs_unlink_locked(from, c);
		c->on_list = false;
		ksock_unlock(from);
		ksock_lock(to);
		if (to->shutdown) {
			/* going away: the connection stays where it was, and
			 * is refused there */
			ksock_unlock(to);
			ksock_lock(from);
			c->next = from->hs_conns;
			from->hs_conns = c;
			c->on_list = true;
			ksock_unlock(from);
			to = NULL;
		} else {
			c->net = to;
			c->id = ++to->next_conn_id;
			/* a fresh handshake deadline: `to` may run on a thread
			 * of its own (nscheds 1), whose reaper must not close
			 * the connection while this thread still reads it */
			c->hs_deadline = ksock_now(to) + (uint64_t)KSOCK_ACCEPT_TIMEOUT_S * KSOCK_NS_PER_S;
			c->next = to->hs_conns;
			to->hs_conns = c;
			c->on_list = true;
			ksock_unlock(to);
		}
	}
	pthread_mutex_unlock(&sh->lock);
	return to;
}
