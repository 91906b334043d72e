/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The epoll busy poll ioctls of include/uapi/linux/eventpoll.h (Linux 6.9
 * and later), for C libraries whose headers predate them.
 */
#ifndef USER_EPOLL_PARAMS_H
#define USER_EPOLL_PARAMS_H

#include <sys/ioctl.h>
#include <linux/types.h>

#ifndef EPIOCSPARAMS
struct epoll_params {
	__u32 busy_poll_usecs;
	__u16 busy_poll_budget;
	__u8 prefer_busy_poll;
	__u8 __pad;
};

#define EPOLL_IOC_TYPE	0x8A
#define EPIOCSPARAMS	_IOW(EPOLL_IOC_TYPE, 0x01, struct epoll_params)
#define EPIOCGPARAMS	_IOR(EPOLL_IOC_TYPE, 0x02, struct epoll_params)
#endif

_Static_assert(sizeof(struct epoll_params) == 8, "struct epoll_params is 8 bytes");

#endif
