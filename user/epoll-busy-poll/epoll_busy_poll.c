// SPDX-License-Identifier: GPL-2.0
/*
 * libepoll-busy-poll.so: busy polling and IRQ suspension for epoll
 * programs that do not ask for it themselves.
 *
 * Preloaded (LD_PRELOAD), it wraps epoll_create() and epoll_create1():
 * each new epoll instance gets the EPIOCSPARAMS ioctl before the program
 * sees its file descriptor. The values come from the environment:
 *
 *   EPOLL_BUSY_POLL_USECS   busy_poll_usecs   0..2147483647, default 0
 *   EPOLL_BUSY_POLL_BUDGET  busy_poll_budget  1..65535, default 64
 *                           (above 64 the kernel wants CAP_NET_ADMIN)
 *   EPOLL_PREFER_BUSY_POLL  prefer_busy_poll  0 or 1, default 1
 *
 * The defaults are what Documentation/networking/napi.rst recommends for
 * IRQ suspension. The library never changes what the program sees: an
 * environment value it cannot use, or a kernel that refuses the ioctl
 * (one without it answers ENOTTY or EINVAL, one without busy polling
 * EOPNOTSUPP), is reported once on stderr and every epoll instance is
 * left as the kernel made it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/types.h>

#ifndef EPIOCSPARAMS
/* include/uapi/linux/eventpoll.h of Linux 6.9 and later */
struct epoll_params {
	__u32 busy_poll_usecs;
	__u16 busy_poll_budget;
	__u8 prefer_busy_poll;
	__u8 __pad;
};

#define EPOLL_IOC_TYPE	0x8A
#define EPIOCSPARAMS	_IOW(EPOLL_IOC_TYPE, 0x01, struct epoll_params)
#endif

#define LIB_NAME	"libepoll-busy-poll"

static struct epoll_params params = {
	.busy_poll_usecs = 0,
	.busy_poll_budget = 64,
	.prefer_busy_poll = 1,
};

/* Cleared when the settings or the kernel rule the ioctl out */
static bool enabled;
/* Set once the first refusal by the kernel has been reported */
static int refusal_reported;

static int (*real_epoll_create)(int size);
static int (*real_epoll_create1)(int flags);

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, LIB_NAME ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "; epoll instances are left as they are\n");
	va_end(ap);
}

/*
 * Reads the environment variable @name into @val if it is set: a decimal
 * number in [@min, @max], nothing else (no sign, no blanks, no suffix).
 */
static bool env_value(const char *name, unsigned long min, unsigned long max,
		      unsigned long *val)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s)
		return true;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v < min || v > max) {
		say("%s=\"%s\" is not a number in %lu..%lu", name, s, min, max);
		return false;
	}
	*val = v;
	return true;
}

static bool read_settings(void)
{
	unsigned long usecs = params.busy_poll_usecs;
	unsigned long budget = params.busy_poll_budget;
	unsigned long prefer = params.prefer_busy_poll;

	if (!env_value("EPOLL_BUSY_POLL_USECS", 0, INT32_MAX, &usecs) ||
	    !env_value("EPOLL_BUSY_POLL_BUDGET", 1, UINT16_MAX, &budget) ||
	    !env_value("EPOLL_PREFER_BUSY_POLL", 0, 1, &prefer))
		return false;
	params.busy_poll_usecs = usecs;
	params.busy_poll_budget = budget;
	params.prefer_busy_poll = prefer;
	return true;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
	real_epoll_create = (int (*)(int))dlsym(RTLD_NEXT, "epoll_create");
	real_epoll_create1 = (int (*)(int))dlsym(RTLD_NEXT, "epoll_create1");
	enabled = read_settings();
}

/*
 * At load time, so that a bad setting is reported when the program
 * starts; the wrappers make sure of it too, as another library's
 * constructor may create an epoll instance before this one ran.
 */
__attribute__((constructor))
static void epoll_busy_poll_init(void)
{
	pthread_once(&init_once, init);
}

/* What the kernel said to EPIOCSPARAMS, once per process */
static void report_refusal(int err)
{
	if (__atomic_exchange_n(&refusal_reported, 1, __ATOMIC_RELAXED))
		return;
	switch (err) {
	case ENOTTY:
	case EINVAL:
		say("this kernel has no EPIOCSPARAMS (%s)", strerror(err));
		break;
	case EOPNOTSUPP:
		say("this kernel cannot busy poll from epoll (%s)", strerror(err));
		break;
	case EPERM:
		say("EPIOCSPARAMS: %s (a busy_poll_budget above 64 needs CAP_NET_ADMIN)",
		    strerror(err));
		break;
	default:
		say("EPIOCSPARAMS: %s", strerror(err));
	}
}

/*
 * Applies the settings to a new epoll instance @fd. errno is the caller's
 * again on return: the program must see what epoll_create*() left.
 */
static int set_params(int fd)
{
	int saved = errno;

	if (fd >= 0 && __atomic_load_n(&enabled, __ATOMIC_RELAXED) &&
	    ioctl(fd, EPIOCSPARAMS, &params)) {
		int err = errno;

		/* A kernel without the ioctl will not grow one */
		if (err == ENOTTY || err == EINVAL || err == EOPNOTSUPP)
			__atomic_store_n(&enabled, false, __ATOMIC_RELAXED);
		report_refusal(err);
	}
	errno = saved;
	return fd;
}

int epoll_create(int size)
{
	pthread_once(&init_once, init);
	if (!real_epoll_create) {
		errno = ENOSYS;
		return -1;
	}
	return set_params(real_epoll_create(size));
}

int epoll_create1(int flags)
{
	pthread_once(&init_once, init);
	if (!real_epoll_create1) {
		errno = ENOSYS;
		return -1;
	}
	return set_params(real_epoll_create1(flags));
}
