/* SPDX-License-Identifier: MIT */
/*
 * preload_slow_qp_destroy.c - LD_PRELOAD'ed into a rig guest's ulst
 * (tests/rdma/test_o2ib_multirail.sh): ibv_destroy_qp() of a QP whose port
 * is not active first sleeps RIG_SLOW_QP_DESTROY_S seconds (20 by default).
 *
 * Soft-RoCE does this by itself at times: destroying a QP waits until the
 * packets it handed to its network device are freed, and a device taken
 * down keeps those in its transmit ring until it comes back up. How long
 * depends on how many were in the ring when the link went, so the test
 * makes the wait certain: a node whose destroy of a dead rail's QP holds
 * up its other rails fails the test every time, not once in a few runs.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int (*real_destroy_qp)(struct ibv_qp *);

/* resolved once, when the library is loaded: each NI's reaper thread may
 * destroy a QP at the same time as another's */
__attribute__((constructor)) static void preload_init(void)
{
	real_destroy_qp = (int (*)(struct ibv_qp *))dlsym(RTLD_NEXT, "ibv_destroy_qp");
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_port_attr port;
	struct ibv_qp_attr attr;

	if (!real_destroy_qp)
		abort();
	if (ibv_query_qp(qp, &attr, IBV_QP_PORT, &init) == 0 &&
	    ibv_query_port(qp->context, attr.port_num, &port) == 0 && port.state != IBV_PORT_ACTIVE) {
		const char *s = getenv("RIG_SLOW_QP_DESTROY_S");

		sleep(s ? (unsigned)atoi(s) : 20);
	}
	return real_destroy_qp(qp);
}
