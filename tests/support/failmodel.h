/* SPDX-License-Identifier: MIT */
/*
 * failmodel.h - the checks of LNet's failure model, shared by the tests
 * that break things (tests/integration/test_failmodel.c,
 * test_socklnd_peer_death.c):
 *
 *  - every PUT and GET issued ends with exactly one terminal event (the
 *    one with `unlinked` set), nothing comes after it, a PUT has at most
 *    one SEND and one ACK and a GET at most one SEND and one REPLY;
 *  - it ends within a bound of its issue;
 *  - afterwards the node is idle: no message allocated, no response
 *    tracker, no MD but the ones the test keeps, every NI's and peer NI's
 *    credits back, nothing queued, and on a router every buffer back in
 *    its pool;
 *  - a fresh PUT and GET then succeed.
 *
 * Operations are tracked in a struct fm_ops: each is a free-floating MD of
 * threshold 2 (SEND, then ACK/REPLY) with ULNET_UNLINK, which the
 * application never unlinks itself, so it ends only through LNet (the
 * response, an LND failure plus the response tracker, or the tracker
 * alone). Failures are reported with cmocka's asserts.
 */
#ifndef ULNET_TEST_FAILMODEL_H
#define ULNET_TEST_FAILMODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ulnet/ulnet.h"

#define FM_OPSIZE_MAX (64 * 1024)

struct fm_ops;

struct fm_op {
	struct fm_ops *set;
	int idx;
	bool is_get;
	int ev[8];                  /* events by enum ulnet_event_kind */
	int unlinked;               /* events with `unlinked` (must be 1) */
	int after_end;              /* events after the unlinked one (must be 0) */
	int first_status;           /* the first non-zero status, or 0 */
	int end_status;             /* the status of the unlinked event */
	int send_status;            /* the status of the SEND event */
	enum ulnet_event_kind end_type;
	bool responded;             /* an ACK or REPLY with status 0 */
	uint64_t t_issue_ms, t_end_ms;
	uint8_t buf[];
};

struct fm_ops {
	ulnet_t *ln;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int max, n, ended;
	size_t oplen;
	struct fm_op **op;
};

/* What fm_check_ended() found. */
struct fm_result {
	int ok, failed;             /* ended with the response / without */
	int timedout;               /* failed ones that ended with -ETIMEDOUT */
	long max_ms;                /* the longest issue-to-end time */
	long max_failed_ms, min_failed_ms; /* among the failed ones (-1: none) */
};

uint64_t fm_now_ms(void);

/* Up to `max` operations of `oplen` bytes (<= FM_OPSIZE_MAX) on `ln`. */
void fm_init(struct fm_ops *s, ulnet_t *ln, int max, size_t oplen);
/* Free the records; every operation must have ended (or the node be gone). */
void fm_fini(struct fm_ops *s);

/* Start a PUT (with ACK) or a GET to `target`'s portal/match bits through
 * `self` (may be NULL). Returns the operation's index; asserts that LNet
 * took it (returned 0). */
int fm_issue(struct fm_ops *s, bool get, const ulnet_nid_t *self, ulnet_nid_t target,
	     unsigned portal, uint64_t mb);

/* Wait until every issued operation ended, at most `bound_ms` from now;
 * returns whether they all did. */
bool fm_wait_all(struct fm_ops *s, int bound_ms);

/* Every issued operation ended with exactly one terminal event and got no
 * event after it; a PUT at most one SEND and one ACK, a GET at most one
 * SEND and one REPLY; one that ended well has its response, one that
 * failed ends with an error status. Fills `r` (may be NULL). */
void fm_check_ended(struct fm_ops *s, struct fm_result *r);

/* The node holds nothing (waits up to 15 s for it, as an LND lets go of
 * its txs): msgs_alloc and rst_alloc 0, exactly `keep_mds` MDs (the
 * test's targets, the ping and push targets), each NI's and each peer
 * NI's tx credits back to their maximum and nothing queued. */
void fm_assert_idle(ulnet_t *ln, int keep_mds);

/* MDs the node holds now (active or waiting to be freed). */
int fm_md_count(ulnet_t *ln);

/* A fresh PUT and GET to `target` (portal/mb) both succeed within
 * `bound_ms`. */
void fm_assert_put_get_ok(ulnet_t *ln, ulnet_nid_t target, unsigned portal, uint64_t mb,
			  int bound_ms);

#endif
