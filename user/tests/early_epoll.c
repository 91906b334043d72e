// SPDX-License-Identifier: GPL-2.0
/*
 * A library that makes an epoll instance from its constructor, which the
 * dynamic loader runs before the constructor of a preloaded library: the
 * instance must still get the preloaded library's settings. It prints
 * them as epoll_probe prints its own, with the label "early".
 */
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "epoll_params.h"

__attribute__((constructor))
static void early_epoll(void)
{
	struct epoll_params p;
	int ep = epoll_create1(0);

	if (ep < 0) {
		printf("early create failed\n");
	} else if (ioctl(ep, EPIOCGPARAMS, &p)) {
		printf("early EPIOCGPARAMS failed\n");
	} else {
		printf("early usecs=%u budget=%u prefer=%u\n", p.busy_poll_usecs,
		       p.busy_poll_budget, p.prefer_busy_poll);
	}
	fflush(stdout);
	if (ep >= 0)
		close(ep);
}
