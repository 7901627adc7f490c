/* SPDX-License-Identifier: MIT */
/*
 * prog_o2ib_remap.c - the o2ib LND's registration cache against memory the
 * application frees and maps again at the same address (test_o2ib_remap.sh).
 *
 *   prog_o2ib_remap serve NID SECS
 *       the target: on portal 40, match bits 1 a 64 KiB buffer for PUTs
 *       (each PUT's bytes are checked to be all one value and printed:
 *       "put N: XX"), match bits 2 a 64 KiB buffer of 0xc3 for GETs; runs
 *       SECS seconds
 *   prog_o2ib_remap init NID TARGET
 *       the initiator, over o2ib (64 KiB: RDMA, not IMMEDIATE):
 *       1. PUT from an anonymous mapping filled with 0xa1, MD unlinked;
 *          the mapping is unmapped and mapped again at the same address
 *          (MAP_FIXED: other pages), filled with 0xb2, PUT again: the
 *          target must get 0xb2 (a registration kept from the first PUT
 *          would send the old pages' 0xa1);
 *       2. GET into a mapping (0xc3 lands), unmapped and mapped again,
 *          zeroed, GET again: the new pages must hold 0xc3 (through a kept
 *          registration the data would land in the old pages);
 *       3. a registered region (ulnet_mem_register): two PUTs from two MDs
 *          (registered once: the LND's DEBUG lines, printed with "lnd: "),
 *          then deregistered, remapped, filled 0xd4, registered again, PUT:
 *          the target must get 0xd4.
 *       Prints "init: ok" when its own checks pass.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ulnet/ulnet.h"

#define PORTAL 40
#define LEN (64u * 1024)

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int want;
	int status;
	bool done;
};

static void handler(const struct ulnet_event *ev)
{
	struct waiter *w = ev->md_user_ptr;

	pthread_mutex_lock(&w->mu);
	/* the final event: the MD is gone, its memory ours again */
	if (ev->unlinked || ev->status != 0) {
		w->status = ev->status;
		w->done = true;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
}

static int wait_for(struct waiter *w, int secs)
{
	struct timespec dl;
	int rc;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < 1000 && !w->done; i++)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
			break;
	rc = w->done ? w->status : -ETIMEDOUT;
	w->done = false;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

static void lndlog(void *arg, enum ulnet_log_level lvl, const char *msg)
{
	(void)arg;
	if (lvl != ULNET_LOG_DEBUG || strstr(msg, "registered"))
		printf("lnd: %s\n", msg);
	fflush(stdout);
}

static ulnet_t *node(const char *nidstr)
{
	struct ulnet_opts o = { .log = lndlog, .log_level = ULNET_LOG_DEBUG };
	struct ulnet_ni_conf c;
	ulnet_t *ln;
	int rc;

	if ((rc = ulnet_create(&o, &ln)) < 0) {
		fprintf(stderr, "remap: create: %s\n", ulnet_strerror(rc));
		exit(1);
	}
	memset(&c, 0, sizeof(c));
	c.tun.tos = -1;
	if (ulnet_nid_parse(nidstr, &c.nid, NULL) < 0) {
		fprintf(stderr, "remap: bad NID %s\n", nidstr);
		exit(2);
	}
	snprintf(c.iface, sizeof(c.iface), "eth0");
	if ((rc = ulnet_ni_add(ln, &c)) < 0) {
		fprintf(stderr, "remap: ni_add %s: %s\n", nidstr, ulnet_strerror(rc));
		exit(1);
	}
	return ln;
}

/* --- the target -------------------------------------------------------------- */

static unsigned char put_buf[LEN], get_buf[LEN];
static int nputs;

static void put_handler(const struct ulnet_event *ev)
{
	unsigned char v = put_buf[0];
	bool same = true;

	if (ev->type != ULNET_EVENT_PUT || ev->status != 0)
		return;
	for (size_t i = 0; i < ev->mlength; i++)
		same &= put_buf[i] == v;
	printf("put %d: %02x%s (%u bytes)\n", ++nputs, v, same ? "" : " MIXED", (unsigned)ev->mlength);
	fflush(stdout);
}

static int serve(const char *nid, int secs)
{
	ulnet_t *ln = node(nid);
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md pm = { .start = put_buf, .length = LEN, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE, .handler = put_handler };
	struct ulnet_md gm = { .start = get_buf, .length = LEN, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE };
	ulnet_handle_t me, md;

	memset(get_buf, 0xc3, sizeof(get_buf));
	if (ulnet_me_attach(ln, PORTAL, any, 1, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me) < 0 ||
	    ulnet_md_attach(ln, me, &pm, ULNET_RETAIN, &md) < 0 ||
	    ulnet_me_attach(ln, PORTAL, any, 2, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me) < 0 ||
	    ulnet_md_attach(ln, me, &gm, ULNET_RETAIN, &md) < 0) {
		fprintf(stderr, "remap: ME/MD failed\n");
		return 1;
	}
	printf("serve: ready\n");
	fflush(stdout);
	sleep((unsigned)secs);
	ulnet_destroy(ln);
	return 0;
}

/* --- the initiator --------------------------------------------------------- */

static ulnet_t *iln;
static ulnet_process_id_t target = { .pid = ULNET_PID_LUSTRE };
static struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false };

static int op(void *buf, bool put)
{
	struct ulnet_md m = { .start = buf, .length = LEN, .threshold = 2, .user_ptr = &w,
			      .handler = handler };
	ulnet_handle_t h;
	int rc = ulnet_md_bind(iln, &m, ULNET_UNLINK, &h);

	if (rc == 0)
		rc = put ? ulnet_put(iln, NULL, h, ULNET_ACK_REQ, target, PORTAL, 1, 0, 0)
			 : ulnet_get(iln, NULL, h, target, PORTAL, 2, 0);
	if (rc == 0)
		rc = wait_for(&w, 30);
	if (rc)
		fprintf(stderr, "remap: %s: %s\n", put ? "PUT" : "GET", ulnet_strerror(rc));
	return rc;
}

/* unmaps p and maps fresh pages at the same address */
static void *remap(void *p)
{
	void *q;

	if (munmap(p, LEN) != 0)
		return NULL;
	q = mmap(p, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return q == MAP_FAILED ? NULL : q;
}

static bool all(const unsigned char *p, unsigned char v)
{
	for (size_t i = 0; i < LEN; i++)
		if (p[i] != v)
			return false;
	return true;
}

static int init(const char *nid, const char *tnid)
{
	unsigned char *p;
	int bad = 0;

	iln = node(nid);
	if (ulnet_nid_parse(tnid, &target.nid, NULL) < 0)
		return 2;
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	/* 1: PUT, remap, PUT */
	memset(p, 0xa1, LEN);
	if (op(p, true))
		return 1;
	if (!(p = remap(p)))
		return 1;
	memset(p, 0xb2, LEN);
	if (op(p, true))
		return 1;
	printf("init: PUTs sent (0xa1, then 0xb2 from new pages at %p)\n", (void *)p);
	/* 2: GET, remap, GET */
	memset(p, 0, LEN);
	if (op(p, false))
		return 1;
	if (!all(p, 0xc3)) {
		printf("init: FAIL: the first GET's data is wrong\n");
		bad++;
	}
	if (!(p = remap(p)))
		return 1;
	if (op(p, false))
		return 1;
	if (!all(p, 0xc3)) {
		printf("init: FAIL: a GET into remapped pages left them %02x (the data went to the "
		       "old pages)\n", p[0]);
		bad++;
	} else {
		printf("init: GETs into new pages: ok\n");
	}
	/* 3: a registered region: 2 PUTs, then deregistered, remapped, again */
	if (!(p = remap(p)) || ulnet_mem_register(iln, p, LEN) != 0)
		return 1;
	memset(p, 0xa1, LEN);
	printf("init: region\n");
	fflush(stdout);
	if (op(p, true) || op(p, true))
		return 1;
	printf("init: region: 2 PUTs done\n");
	fflush(stdout);
	if (ulnet_mem_deregister(iln, p, LEN) != 0 || !(p = remap(p)) ||
	    ulnet_mem_register(iln, p, LEN) != 0)
		return 1;
	memset(p, 0xd4, LEN);
	if (op(p, true))
		return 1;
	ulnet_mem_deregister(iln, p, LEN);
	ulnet_destroy(iln);
	munmap(p, LEN);
	printf("init: %s\n", bad ? "FAIL" : "ok");
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "init") == 0)
		return init(argv[2], argv[3]);
	fprintf(stderr, "usage: prog_o2ib_remap serve NID SECS | init NID TARGET\n");
	return 2;
}
