// SPDX-License-Identifier: MIT
/*
 * sock_netns.c - the network namespace a tcp NI lives in.
 *
 * As in the kernel, an NI belongs to the network namespace of whoever
 * configured it (the thread that called ulnet_ni_add(); ulnetd runs a
 * command in its caller's namespace). Its listener, its dialled sockets
 * and its view of interfaces and addresses are all taken there, even when
 * the thread doing it later (the progress thread) lives elsewhere.
 *
 * The namespace is held open as an fd for the NI's life. Entering it is
 * per thread (setns(2) with CLONE_NEWNET moves only the caller) and costs
 * a few system calls, paid only by NIs whose namespace differs from the
 * calling thread's, and only on cold paths: a dial, a listener, an
 * address check.
 */
#include "sock_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KSOCK_NS_SELF "/proc/thread-self/ns/net"

void ksock_netns_init(struct ksock_net *net)
{
	struct stat st;
	int fd = open(KSOCK_NS_SELF, O_RDONLY | O_CLOEXEC);

	net->netns_fd = -1;
	if (fd < 0)   /* no /proc: every thread is taken to share one namespace */
		return;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return;
	}
	net->netns_fd = fd;
	net->netns_dev = st.st_dev;
	net->netns_ino = st.st_ino;
}

void ksock_netns_fini(struct ksock_net *net)
{
	if (net->netns_fd >= 0)
		close(net->netns_fd);
	net->netns_fd = -1;
}

bool ksock_netns_same(const struct ksock_net *a, const struct ksock_net *b)
{
	if (a->netns_fd < 0 || b->netns_fd < 0)
		return a->netns_fd < 0 && b->netns_fd < 0;
	return a->netns_dev == b->netns_dev && a->netns_ino == b->netns_ino;
}

int ksock_netns_enter(const struct ksock_net *net, int *saved)
{
	struct stat st;
	int fd;

	*saved = -1;
	if (net->netns_fd < 0)
		return 0;
	if (stat(KSOCK_NS_SELF, &st) == 0 && st.st_dev == net->netns_dev &&
	    st.st_ino == net->netns_ino)
		return 0;   /* already there: the usual case */
	fd = open(KSOCK_NS_SELF, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(net->netns_fd, CLONE_NEWNET) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*saved = fd;
	return 0;
}

void ksock_netns_leave(const struct ksock_net *net, int saved)
{
	if (saved < 0)
		return;
	/* Going back to where this thread came from cannot fail for want of
	 * rights we just used; if it did, the thread would go on in the NI's
	 * namespace, which only this NI's sockets would notice: say so. */
	if (setns(saved, CLONE_NEWNET) < 0)
		lnet_ni_log(net->ni, ULNET_LOG_ERROR,
			    "can't return to the thread's network namespace: %s", strerror(errno));
	close(saved);
}

int ksock_socket(const struct ksock_net *net, int type)
{
	int saved, fd, rc = ksock_netns_enter(net, &saved);

	if (rc < 0) {
		lnet_ni_log(net->ni, ULNET_LOG_ERROR,
			    "can't enter the NI's network namespace for a socket: %s", strerror(-rc));
		return rc;
	}
	fd = socket(net->family, type, 0);
	rc = fd < 0 ? -errno : fd;
	ksock_netns_leave(net, saved);
	return rc;
}
