/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_gather.c - a connection's queue longer than one sendmsg().
 *
 * One sendmsg() gathers at most 512 iovecs (and 1 MiB) of a connection's
 * queue. A PUT from an MD of 256 one-byte fragments takes 258 of them, so
 * three such PUTs queued together (a batch) leave in three calls. The
 * write loop must go on after a call that wrote all it was given: only a
 * short write means the socket is full (then EPOLLOUT resumes it). Here
 * nothing comes back from the peer (no ACK, no ZC-ACK for such small
 * payloads), so a queue left behind would wait for the reaper's timeout.
 *
 * Also: a lone message (the writer's one-tx direct path) larger than the
 * socket buffers: the first write is short, EPOLLOUT writes the rest from
 * where it stopped, and the message completes once, intact.
 *
 * And: messages of at most 512 bytes, headers included, leave from one
 * buffer (the fragments copied behind each other, one send() instead of
 * a sendmsg()); fragmented payloads on both sides of that limit, alone
 * and queued together, arrive intact.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "socklnd_util.h"

#define PORTAL 21
#define MB 0x5eed
#define NFRAG ULNET_MAX_IOV
#define NPUT 3

static void test_queue_longer_than_one_sendmsg(void **state)
{
	static uint8_t src[NFRAG], dst[NFRAG];
	static struct iovec frags[NFRAG];
	struct st_node a, b;
	struct st_md am, bm;
	struct ulnet_md md = { 0 };
	ulnet_process_id_t target;
	uint16_t port = st_port();

	(void)state;
	assert_int_equal(st_pair_start(&a, &am, &b, &bm, port), 0);
	assert_int_equal(st_target(&b, PORTAL, MB, dst, sizeof(dst), &bm), 0);
	st_fill(src, sizeof(src), 7);
	for (int i = 0; i < NFRAG; i++) {
		frags[i].iov_base = &src[i];
		frags[i].iov_len = 1;
	}
	md.start = frags;
	md.length = NFRAG;
	md.threshold = ULNET_MD_THRESH_INF;
	md.options = ULNET_MD_IOVEC;
	md.user_ptr = &am;
	md.handler = st_md_handler;
	assert_int_equal(ulnet_md_bind(a.ln, &md, ULNET_RETAIN, &am.h), 0);
	target.nid = b.nid;
	target.pid = ulnet_pid(b.ln);

	/* connected and idle first */
	assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_NOACK_REQ, target, PORTAL, MB, 0, 0), 0);
	assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, 1));

	/* NPUT PUTs queued on the conn together, written at the batch end */
	assert_int_equal(ulnet_batch_begin(a.ln), 0);
	for (int i = 1; i <= NPUT; i++)
		assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_NOACK_REQ, target, PORTAL, MB, 0,
					   (uint64_t)i), 0);
	assert_int_equal(ulnet_batch_end(a.ln), 0);

	assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, 1 + NPUT));
	assert_true(st_md_wait(&am, ULNET_EVENT_SEND, 1 + NPUT));
	assert_int_equal(am.nerr, 0);
	assert_int_equal(bm.nerr, 0);
	assert_true(st_check(dst, sizeof(dst), 7));

	st_pair_stop(&a, &am, &b, &bm);
}

/* socket buffers far below the 1 MiB message (tinier ones make loopback
 * TCP crawl: tiny windows against delayed ACKs) */
static void small_bufs(struct ulnet_ni_conf *c)
{
	c->sock.tx_buffer_size = 64 << 10;
	c->sock.rx_buffer_size = 64 << 10;
}

static void test_lone_message_longer_than_the_socket(void **state)
{
	static uint8_t src[1u << 20], dst[1u << 20];
	struct st_node a, b;
	struct st_md am, bm;
	ulnet_process_id_t target;
	uint16_t port = (uint16_t)(st_port() + 1);

	(void)state;
	st_md_init(&am);
	st_md_init(&bm);
	assert_int_equal(st_node_start_conf(&a, "127.0.0.2@tcp", port, "all", NULL, NULL, 0,
					    small_bufs), 0);
	assert_int_equal(st_node_start_conf(&b, "127.0.0.3@tcp", port, "all", NULL, NULL, 0,
					    small_bufs), 0);
	assert_int_equal(st_target(&b, PORTAL, MB, dst, sizeof(dst), &bm), 0);
	assert_int_equal(st_bind(&a, src, sizeof(src), ULNET_MD_THRESH_INF, &am), 0);
	target.nid = b.nid;
	target.pid = ulnet_pid(b.ln);
	/* the first one waits for the connection, the second finds it idle */
	for (int i = 1; i <= 2; i++) {
		st_fill(src, sizeof(src), (unsigned)(40 + i));
		assert_int_equal(ulnet_put(a.ln, NULL, am.h, ULNET_NOACK_REQ, target, PORTAL, MB, 0,
					   (uint64_t)i), 0);
		assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, i));
		assert_true(st_md_wait(&am, ULNET_EVENT_SEND, i));
		assert_true(st_check(dst, sizeof(dst), (unsigned)(40 + i)));
	}
	assert_int_equal(am.nerr, 0);
	assert_int_equal(bm.nerr, 0);
	assert_int_equal(am.n[ULNET_EVENT_SEND], 2);

	st_pair_stop(&a, &am, &b, &bm);
}

/* PUT `len` bytes of src from an MD of 13-byte fragments (the last one
 * shorter) to dst's offset `roff`; returns the MD. */
static ulnet_handle_t put_fragmented(struct st_node *a, struct st_md *am, const uint8_t *src,
				     size_t len, struct iovec *frags, ulnet_process_id_t target,
				     unsigned roff)
{
	struct ulnet_md md = { 0 };
	unsigned n = 0;
	ulnet_handle_t h;

	for (size_t off = 0; off < len; off += 13, n++) {
		frags[n].iov_base = (void *)(src + off);
		frags[n].iov_len = len - off < 13 ? len - off : 13;
	}
	md.start = frags;
	md.length = n;
	md.threshold = 1;
	md.options = ULNET_MD_IOVEC;
	md.user_ptr = am;
	md.handler = st_md_handler;
	assert_int_equal(ulnet_md_bind(a->ln, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(a->ln, NULL, h, ULNET_NOACK_REQ, target, PORTAL, MB, roff, 0), 0);
	return h;
}

static void test_small_messages_leave_from_one_buffer(void **state)
{
	/* a PUT's headers are 96 bytes with 4-byte NIDs: 416 payload bytes
	 * make 512, the most that leaves from one buffer */
	static const size_t lens[] = { 1, 415, 416, 417, 1000 };
	enum { NL = sizeof(lens) / sizeof(lens[0]), SLOT = 1024, NB = 3, BLEN = 60 };
	static uint8_t src[SLOT], dst[(NL + NB) * SLOT], want[(NL + NB) * SLOT];
	static struct iovec frags[NL + NB][SLOT / 13 + 1];
	struct st_node a, b;
	struct st_md am, bm;
	ulnet_process_id_t target;
	uint16_t port = (uint16_t)(st_port() + 2);
	int puts = 0;

	(void)state;
	assert_int_equal(st_pair_start(&a, &am, &b, &bm, port), 0);
	assert_int_equal(st_target(&b, PORTAL, MB, dst, sizeof(dst), &bm), 0);
	target.nid = b.nid;
	target.pid = ulnet_pid(b.ln);
	st_fill(src, sizeof(src), 11);
	/* one at a time: the writer's one-tx direct path */
	for (unsigned i = 0; i < NL; i++) {
		put_fragmented(&a, &am, src, lens[i], frags[i], target, i * SLOT);
		memcpy(want + i * SLOT, src, lens[i]);
		assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, ++puts));
	}
	/* NB small PUTs queued together: the queue's 468 bytes in one buffer */
	assert_int_equal(ulnet_batch_begin(a.ln), 0);
	for (unsigned i = 0; i < NB; i++) {
		put_fragmented(&a, &am, src + 7 * i, BLEN, frags[NL + i], target, (NL + i) * SLOT);
		memcpy(want + (NL + i) * SLOT, src + 7 * i, BLEN);
	}
	assert_int_equal(ulnet_batch_end(a.ln), 0);
	puts += NB;
	assert_true(st_md_wait(&bm, ULNET_EVENT_PUT, puts));
	assert_true(st_md_wait(&am, ULNET_EVENT_SEND, puts));
	assert_int_equal(am.nerr, 0);
	assert_int_equal(bm.nerr, 0);
	assert_memory_equal(dst, want, sizeof(dst));

	st_pair_stop(&a, &am, &b, &bm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_longer_than_one_sendmsg),
		cmocka_unit_test(test_lone_message_longer_than_the_socket),
		cmocka_unit_test(test_small_messages_leave_from_one_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
