/* SPDX-License-Identifier: MIT */
/*
 * put_get.c - embedding libulnet: node 127.0.0.4@tcp PUTs 1 MiB to a second
 * node (127.0.0.5@tcp, another instance in this process, reached over TCP),
 * GETs it back, verifies it and prints the times.
 *
 *   put_get [--port N] [--accept secure|all|none]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ulnet/ulnet.h"

#define PORTAL 10
#define BITS 0x1234ULL
#define LEN (1u << 20)

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int want;           /* event kind awaited */
	int status;
	bool done;
};

static void handler(const struct ulnet_event *ev)
{
	struct waiter *w = ev->md_user_ptr;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if ((int)ev->type == w->want || ev->status != 0) {
		w->status = ev->status;
		w->done = true;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
}

static int wait_for(struct waiter *w, int secs)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < 1000 && !w->done; i++)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
			break;
	int rc = w->done ? w->status : -ETIMEDOUT;

	w->done = false;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int node(const char *nidstr, unsigned port, const char *accept, ulnet_t **ln)
{
	struct ulnet_ni_conf c;
	int rc = ulnet_create(NULL, ln);

	if (rc < 0)
		return rc;
	memset(&c, 0, sizeof(c));
	if ((rc = ulnet_nid_parse(nidstr, &c.nid, NULL)) < 0)
		return rc;
	c.accept_port = (uint16_t)port;
	snprintf(c.accept, sizeof(c.accept), "%s", accept);
	c.tun.tos = -1;
	return ulnet_ni_add(*ln, &c);
}

int main(int argc, char **argv)
{
	unsigned port = 20988;
	const char *accept = "all";

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port") == 0)
			port = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--accept") == 0)
			accept = argv[i + 1];
	}
	ulnet_t *a = NULL, *b = NULL;
	int rc;

	if ((rc = node("127.0.0.4@tcp", port, accept, &a)) < 0 ||
	    (rc = node("127.0.0.5@tcp", port, accept, &b)) < 0) {
		fprintf(stderr, "put_get: cannot set up nodes: %s\n", ulnet_strerror(rc));
		return 1;
	}
	char *target = malloc(LEN), *src = malloc(LEN), *back = calloc(1, LEN);

	if (!target || !src || !back)
		return 1;
	for (unsigned i = 0; i < LEN; i++)
		src[i] = (char)(i * 131 + 7);

	/* B exposes one buffer on PORTAL for PUT and GET. */
	ulnet_handle_t me, tmd, smd, bmd;
	ulnet_process_id_t any = { .nid = ULNET_NID_ANY, .pid = ULNET_PID_ANY };
	struct ulnet_md m = { .start = target, .length = LEN, .threshold = ULNET_MD_THRESH_INF,
			      .options = ULNET_MD_OP_PUT | ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE,
			      .handler = handler };

	if ((rc = ulnet_me_attach(b, PORTAL, any, BITS, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me)) < 0 ||
	    (rc = ulnet_md_attach(b, me, &m, ULNET_RETAIN, &tmd)) < 0) {
		fprintf(stderr, "put_get: ME/MD: %s\n", ulnet_strerror(rc));
		return 1;
	}
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, ULNET_EVENT_ACK, 0, false };
	struct ulnet_md sm = { .start = src, .length = LEN, .threshold = 2, .user_ptr = &w,
			       .handler = handler };
	ulnet_process_id_t tb = { .pid = ULNET_PID_LUSTRE };

	ulnet_nid_parse("127.0.0.5@tcp", &tb.nid, NULL);
	double t0 = now_s();

	if ((rc = ulnet_md_bind(a, &sm, ULNET_UNLINK, &smd)) < 0 ||
	    (rc = ulnet_put(a, NULL, smd, ULNET_ACK_REQ, tb, PORTAL, BITS, 0, 0)) < 0 ||
	    (rc = wait_for(&w, 30)) < 0) {
		fprintf(stderr, "put_get: PUT failed: %s\n", ulnet_strerror(rc));
		return 1;
	}
	double t1 = now_s();

	w.want = ULNET_EVENT_REPLY;
	struct ulnet_md bm = { .start = back, .length = LEN, .threshold = 2, .user_ptr = &w,
			       .handler = handler };

	if ((rc = ulnet_md_bind(a, &bm, ULNET_UNLINK, &bmd)) < 0 ||
	    (rc = ulnet_get(a, NULL, bmd, tb, PORTAL, BITS, 0)) < 0 ||
	    (rc = wait_for(&w, 30)) < 0) {
		fprintf(stderr, "put_get: GET failed: %s\n", ulnet_strerror(rc));
		return 1;
	}
	double t2 = now_s();
	int ok = memcmp(src, back, LEN) == 0 && memcmp(src, target, LEN) == 0;

	printf("PUT 1 MiB 127.0.0.4@tcp -> 127.0.0.5@tcp: %.3f ms\n", (t1 - t0) * 1e3);
	printf("GET 1 MiB 127.0.0.5@tcp -> 127.0.0.4@tcp: %.3f ms\n", (t2 - t1) * 1e3);
	printf("data %s\n", ok ? "verified" : "MISMATCH");
	ulnet_destroy(a);
	ulnet_destroy(b);
	free(target);
	free(src);
	free(back);
	return ok ? 0 : 1;
}
