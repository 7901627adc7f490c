/* SPDX-License-Identifier: MIT */
/*
 * fake_o2ib.h - a stand-in for the o2ib LND, for in-process tests of what
 * reaches an o2ib NI (no RDMA device needed): its startup records the NI's
 * conf, and its ni_info shows the tunables resolved from it exactly as the
 * real LND's does (o2ib_policy.h). It sends nothing.
 */
#ifndef ULNET_TEST_FAKE_O2IB_H
#define ULNET_TEST_FAKE_O2IB_H

#include "ulnet/ulnet.h"

/* The conf of the last o2ib NI started, and how many were started. */
extern struct ulnet_ni_conf fake_o2ib_seen;
extern int fake_o2ib_started;

/* Put the stand-in in the place of the o2ib LND of `ln` (built or not). */
void fake_o2ib_install(ulnet_t *ln);

#endif
