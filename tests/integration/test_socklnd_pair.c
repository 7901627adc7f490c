/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_pair.c - two instances (each with its progress thread) with
 * tcp NIs on 127.0.0.2 and 127.0.0.3 talk through ksocklnd: PUT and GET of
 * 0 B, 1 B, 4 KiB and 1 MiB with the payload checked, ACKs, the typed
 * connections (CONTROL, BULK_IN, BULK_OUT) coming up, ZC cookies exchanged
 * for payloads >= 16 KiB, and many messages in flight at once.
 *
 * With the right to bind ports < 1024 the nodes use privileged source ports
 * and accept=secure; a second case drops that right in a child process and
 * runs the same exchange as user-space peers (accept=all).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "socklnd_util.h"

#define PORTAL 12
#define MB_DATA 0x5a5a

static const size_t sizes[] = { 0, 1, 4096, 1u << 20 };

static ulnet_process_id_t st_target_id(const struct st_node *n)
{
	ulnet_process_id_t id;

	id.nid = n->nid;
	id.pid = ulnet_pid(n->ln);
	return id;
}

/* PUT from a to b and GET it back, every size; returns 0 or a line number. */
static int exchange(struct st_node *a, struct st_node *b)
{
	uint8_t *src = malloc(1u << 20), *dst = malloc(1u << 20), *back = malloc(1u << 20);
	struct st_md tmd, smd;
	int rc = 0;

	if (!src || !dst || !back)
		return __LINE__;
	st_md_init(&tmd);
	if (st_target(b, PORTAL, MB_DATA, dst, 1u << 20, &tmd)) {
		rc = __LINE__;
		goto out;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && !rc; i++) {
		size_t len = sizes[i];
		int puts_before = tmd.n[ULNET_EVENT_PUT], gets_before = tmd.n[ULNET_EVENT_GET];

		/* PUT with an ACK */
		st_fill(src, len, (unsigned)i + 1);
		memset(dst, 0xee, len);
		st_md_init(&smd);
		if (st_bind(a, src, len, 2, &smd) ||
		    ulnet_put(a->ln, NULL, smd.h, ULNET_ACK_REQ, st_target_id(b), PORTAL, MB_DATA, 0, 7)) {
			st_md_release(a, &smd);
			st_md_fini(&smd);
			rc = __LINE__;
			break;
		}
		if (!st_md_wait(&smd, ULNET_EVENT_SEND, 1) || !st_md_wait(&smd, ULNET_EVENT_ACK, 1) ||
		    smd.nerr || !st_md_wait(&tmd, ULNET_EVENT_PUT, puts_before + 1))
			rc = __LINE__;
		else if (tmd.last_mlength != len || !st_check(dst, len, (unsigned)i + 1))
			rc = __LINE__;
		st_md_release(a, &smd);
		st_md_fini(&smd);
		if (rc)
			break;

		/* GET the same bytes back */
		memset(back, 0, len);
		st_md_init(&smd);
		if (st_bind(a, back, len, 2, &smd) ||
		    ulnet_get(a->ln, NULL, smd.h, st_target_id(b), PORTAL, MB_DATA, 0)) {
			st_md_release(a, &smd);
			st_md_fini(&smd);
			rc = __LINE__;
			break;
		}
		if (!st_md_wait(&smd, ULNET_EVENT_SEND, 1) || !st_md_wait(&smd, ULNET_EVENT_REPLY, 1) ||
		    smd.nerr || !st_md_wait(&tmd, ULNET_EVENT_GET, gets_before + 1))
			rc = __LINE__;
		else if (smd.last_mlength != len || !st_check(back, len, (unsigned)i + 1))
			rc = __LINE__;
		st_md_release(a, &smd);
		st_md_fini(&smd);
	}
out:
	st_md_release(b, &tmd);
	st_md_fini(&tmd);
	free(src);
	free(dst);
	free(back);
	return rc;
}

/* PUTs from a to one target MD of b, every fourth of them 64 KiB (a ZC
 * request, completed by the peer's ZC-ACK), the others `small` bytes. */
struct mix {
	size_t big, small;
	uint8_t *src, *dst;
	struct st_md tmd, bmd, smd;
	int nbig, nsmall;
	uint64_t mb;
	unsigned seed;
};

/* 0 or the line that failed */
static int mix_start(struct mix *m, struct st_node *a, struct st_node *b, size_t small,
		     uint64_t mb, unsigned seed)
{
	memset(m, 0, sizeof(*m));
	m->big = 64 * 1024;
	m->small = small;
	m->mb = mb;
	m->seed = seed;
	m->src = malloc(m->big);
	m->dst = malloc(m->big);
	st_md_init(&m->tmd);
	st_md_init(&m->bmd);
	st_md_init(&m->smd);
	st_fill(m->src, m->big, seed);
	if (st_target(b, PORTAL, mb, m->dst, m->big, &m->tmd) ||
	    st_bind(a, m->src, m->big, ULNET_MD_THRESH_INF, &m->bmd) ||
	    st_bind(a, m->src, m->small, ULNET_MD_THRESH_INF, &m->smd))
		return __LINE__;
	return 0;
}

/* PUT number i of the mix; 0 or the line that failed */
static int mix_put(struct mix *m, struct st_node *a, struct st_node *b, int i)
{
	bool isbig = i % 4 == 0;

	if (ulnet_put(a->ln, NULL, isbig ? m->bmd.h : m->smd.h, ULNET_ACK_REQ, st_target_id(b),
		      PORTAL, m->mb, 0, (uint64_t)i))
		return __LINE__;
	if (isbig)
		m->nbig++;
	else
		m->nsmall++;
	return 0;
}

/* Unless rc already says a line failed: every PUT sent and ACKed, every one
 * arrived, the data intact. Then release everything; returns rc or the line
 * that failed. */
static int mix_finish(struct mix *m, struct st_node *a, struct st_node *b, int rc)
{
	if (rc)
		;
	else if (!st_md_wait(&m->bmd, ULNET_EVENT_ACK, m->nbig) ||
		 !st_md_wait(&m->smd, ULNET_EVENT_ACK, m->nsmall) ||
		 !st_md_wait(&m->bmd, ULNET_EVENT_SEND, m->nbig) ||
		 !st_md_wait(&m->smd, ULNET_EVENT_SEND, m->nsmall) ||
		 !st_md_wait(&m->tmd, ULNET_EVENT_PUT, m->nbig + m->nsmall) || m->bmd.nerr ||
		 m->smd.nerr || m->tmd.nerr)
		rc = __LINE__;
	else if (!st_check(m->dst, m->big, m->seed))
		rc = __LINE__;
	st_md_release(a, &m->bmd);
	st_md_release(a, &m->smd);
	st_md_release(b, &m->tmd);
	st_md_fini(&m->tmd);
	st_md_fini(&m->bmd);
	st_md_fini(&m->smd);
	free(m->src);
	free(m->dst);
	return rc;
}

/* Many PUTs in flight at once from one thread (4 KiB and 64 KiB). */
static int pipeline(struct st_node *a, struct st_node *b, int count)
{
	struct mix m;
	int rc = mix_start(&m, a, b, 4096, MB_DATA + 1, 99);

	for (int i = 0; i < count && !rc; i++)
		rc = mix_put(&m, a, b, i);
	return mix_finish(&m, a, b, rc);
}

/* ulnet_batch_begin/end: the API's errors, then `count` PUTs (every fourth
 * 64 KiB, more than the 8 peer credits, one nested batch) started inside
 * one batch: all complete, the data arrives. Returns 0 or a line number. */
static int batched(struct st_node *a, struct st_node *b, int count)
{
	struct mix m;
	int rc = 0, start;

	if (ulnet_batch_begin(NULL) != -EINVAL || ulnet_batch_end(a->ln) != -EINVAL)
		rc = __LINE__;
	else if (ulnet_batch_begin(a->ln) || ulnet_batch_begin(b->ln) != -EBUSY ||
		 ulnet_batch_end(b->ln) != -EINVAL || ulnet_batch_end(a->ln) ||
		 ulnet_batch_end(a->ln) != -EINVAL)
		rc = __LINE__;
	start = mix_start(&m, a, b, 64, MB_DATA + 2, 77);
	rc = rc ? rc : start;
	if (rc)
		return mix_finish(&m, a, b, rc);
	if (ulnet_batch_begin(a->ln))
		return mix_finish(&m, a, b, __LINE__);
	for (int i = 0; i < count && !rc; i++) {
		if (i == count / 2 && ulnet_batch_begin(a->ln))   /* nested */
			rc = __LINE__;
		rc = rc ? rc : mix_put(&m, a, b, i);
		if (i == count / 2 && ulnet_batch_end(a->ln))
			rc = rc ? rc : __LINE__;
	}
	if (ulnet_batch_end(a->ln))
		rc = rc ? rc : __LINE__;
	return mix_finish(&m, a, b, rc);
}

/* The whole scenario; returns 0 or the line that failed. */
static int scenario(const char *accept, bool expect_user_mode)
{
	struct st_node a, b;
	uint16_t port = st_port();
	int rc = 0;

	if (st_node_start(&a, "127.0.0.2@tcp", port, accept) ||
	    st_node_start(&b, "127.0.0.3@tcp", port, accept)) {
		rc = __LINE__;
		goto out;
	}
	if (expect_user_mode && !st_wait_log(&a, "user-space peer", NULL)) {
		rc = __LINE__;
		goto out;
	}
	rc = exchange(&a, &b);
	if (!rc)
		rc = exchange(&b, &a);
	if (!rc)
		rc = pipeline(&a, &b, 200);
	if (!rc)
		rc = batched(&a, &b, 200);
	if (rc)
		goto out;
	/* the typed connections, seen from the passive side of each */
	if (!st_wait_log(&a, "CONTROL", " up (") && !st_wait_log(&b, "CONTROL", " up ("))
		rc = __LINE__;
	else if (expect_user_mode) {
		/* A user-space peer opens CONTROL alone (a kernel can answer
		 * nothing sent on its bulk conns) and asks for no ZC-ACK on
		 * CONTROL (a kernel has no conn to send one on): the 1 MiB
		 * and 64 KiB payloads went on CONTROL and completed in the
		 * socket. */
		if (st_log_has(&a, "BULK_", " up (") || st_log_has(&b, "BULK_", " up ("))
			rc = __LINE__;
		else if (st_log_has(&a, "ZC-ACK", NULL) || st_log_has(&b, "ZC-ACK", NULL))
			rc = __LINE__;
	} else if (!st_wait_log(&a, "BULK_IN", " up (") || !st_wait_log(&b, "BULK_IN", " up ("))
		rc = __LINE__;
	else if (!st_wait_log(&a, "BULK_OUT", " up (") || !st_wait_log(&b, "BULK_OUT", " up ("))
		rc = __LINE__;
	/* 1 MiB and 64 KiB payloads completed on the peer's ZC-ACK */
	else if (!st_wait_log(&a, "ZC-ACK", NULL) || !st_wait_log(&b, "ZC-ACK", NULL))
		rc = __LINE__;
out:
	if (rc) {
		fprintf(stderr, "---- node a log tail ----\n%s\n", a.log ? a.log + (a.loglen > 4000 ? a.loglen - 4000 : 0) : "");
		fprintf(stderr, "---- node b log tail ----\n%s\n", b.log ? b.log + (b.loglen > 4000 ? b.loglen - 4000 : 0) : "");
	}
	st_node_stop(&a);
	st_node_stop(&b);
	return rc;
}

static void test_privileged_pair(void **state)
{
	(void)state;
	if (!st_is_privileged()) {
		printf("SKIP: needs root\n");
		skip();
	}
	assert_int_equal(scenario("secure", false), 0);
}

/* Drop CAP_NET_BIND_SERVICE (we keep our uid) so binding 512..1023 fails. */
static int drop_bind_cap(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[0].effective &= ~(1u << CAP_NET_BIND_SERVICE);
	d[0].permitted &= ~(1u << CAP_NET_BIND_SERVICE);
	d[0].inheritable &= ~(1u << CAP_NET_BIND_SERVICE);
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

static void test_user_space_peers(void **state)
{
	pid_t pid;
	int status = 0;

	(void)state;
	fflush(NULL);
	/* a child, so dropping the capability does not leak into other tests */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (st_is_privileged() && drop_bind_cap() < 0)
			_exit(100);
		if (st_is_privileged())
			_exit(101);
		_exit(scenario("all", true) ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_privileged_pair),
		cmocka_unit_test(test_user_space_peers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
