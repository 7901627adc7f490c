/* SPDX-License-Identifier: MIT */
/*
 * ctl_mrroute.h - Multi-Rail routing setup: what lnetctl's
 * `setup-mrrouting` (and `net add` unless --skip-mr-route-setup) does
 * through Lustre's ksocklnd-config script.
 *
 * With several interfaces on one subnet Linux sends every packet out of
 * the interface of the first matching route, whatever source address a
 * socket bound; Multi-Rail needs each NI's traffic to leave by its own
 * interface. For each interface of a tcp NI that has no routing table of
 * its own yet, this gives it one named after it (an /etc/iproute2/rt_tables
 * entry), holding its subnet (and its default gateway, if the main table
 * has one on that subnet), and a rule sending traffic from its address
 * there. docs/tools.md says where it differs from the script.
 */
#ifndef ULNET_TOOLS_CTL_MRROUTE_H
#define ULNET_TOOLS_CTL_MRROUTE_H

#include "ctl_cmds.h"

/* Set up the tables of every tcp NI's interface of ctx's instance, in the
 * calling thread's network namespace. What was done and what failed is
 * logged (ctl_log: info and warn lines naming the interface, and the ip
 * command that failed with what it said); as with the script, a failure
 * never fails the command that asked for the setup. */
void ctl_mrroute_setup(struct ctl_ctx *ctx);

#endif
