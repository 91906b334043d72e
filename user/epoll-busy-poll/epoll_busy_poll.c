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
 * IRQ suspension. The library never changes what the program sees: a
 * setting it cannot use, or a kernel that refuses the ioctl (ENOTTY
 * before Linux 6.9, EOPNOTSUPP without CONFIG_NET_RX_BUSY_POLL, EPERM or
 * EINVAL for values it does not take), leaves every epoll instance as the
 * kernel made it, and is reported in one line on stderr by the first
 * epoll_create*() of a process (a process that makes no epoll instance
 * says nothing). The line is written only if file descriptor 2 is still
 * the stderr the program started with, never into a file the program
 * opened on it since.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "epoll_params.h"

#define LIB_NAME	"libepoll-busy-poll"

static struct epoll_params params = {
	.busy_poll_usecs = 0,
	.busy_poll_budget = 64,
	.prefer_busy_poll = 1,
};

/* Cleared when the settings or the kernel rule the ioctl out */
static bool enabled;
/* Why the settings ruled it out, reported by the first epoll_create*() */
static char bad_setting[160];
/* Set once this process reported something */
static int reported;
/* The stderr the program started with */
static struct stat stderr_st;
static bool stderr_ok;

static int (*real_epoll_create)(int size);
static int (*real_epoll_create1)(int flags);

/*
 * One line on stderr, in one write(), if file descriptor 2 is still the
 * stderr the program started with; at most once per process.
 */
static void say(const char *fmt, ...)
{
	char line[256];
	struct stat st;
	va_list ap;
	int len;

	if (__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
		return;
	if (!stderr_ok || fstat(STDERR_FILENO, &st) ||
	    st.st_dev != stderr_st.st_dev || st.st_ino != stderr_st.st_ino)
		return;
	len = snprintf(line, sizeof(line), LIB_NAME ": ");
	va_start(ap, fmt);
	len += vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	va_end(ap);
	if (len < (int)sizeof(line))
		len += snprintf(line + len, sizeof(line) - len,
				"; epoll instances are left as they are\n");
	if (len >= (int)sizeof(line)) {
		len = sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	if (write(STDERR_FILENO, line, len) < 0)
		return;
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
		snprintf(bad_setting, sizeof(bad_setting),
			 "%s=\"%.40s\" is not a number in %lu..%lu", name, s,
			 min, max);
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
	stderr_ok = !fstat(STDERR_FILENO, &stderr_st);
	enabled = read_settings();
}

/*
 * At load time, so that stderr is the one the program started with; the
 * wrappers make sure of it too, as another library's constructor may
 * create an epoll instance before this one ran.
 */
__attribute__((constructor))
static void epoll_busy_poll_init(void)
{
	pthread_once(&init_once, init);
}

/* What the kernel said to EPIOCSPARAMS */
static void report_refusal(int err)
{
	char buf[64];
	const char *msg = strerror_r(err, buf, sizeof(buf));

	switch (err) {
	case ENOTTY:
		say("this kernel has no EPIOCSPARAMS (%s)", msg);
		break;
	case EOPNOTSUPP:
		say("this kernel cannot busy poll from epoll (%s)", msg);
		break;
	case EPERM:
		say("EPIOCSPARAMS: %s (a busy_poll_budget above 64 needs CAP_NET_ADMIN)",
		    msg);
		break;
	default:
		say("the kernel refused EPIOCSPARAMS (%s)", msg);
	}
}

/*
 * Applies the settings to a new epoll instance @fd. errno is the caller's
 * again on return: the program must see what epoll_create*() left.
 */
static int set_params(int fd)
{
	int saved = errno;

	if (fd < 0)
		return fd;
	if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED)) {
		if (bad_setting[0])
			say("%s", bad_setting);
	} else if (ioctl(fd, EPIOCSPARAMS, &params)) {
		int err = errno;

		/* A kernel without the ioctl will not grow one */
		if (err == ENOTTY || err == EOPNOTSUPP)
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
		if (size <= 0) {
			errno = EINVAL;
			return -1;
		}
		return set_params(syscall(SYS_epoll_create1, 0));
	}
	return set_params(real_epoll_create(size));
}

int epoll_create1(int flags)
{
	pthread_once(&init_once, init);
	if (!real_epoll_create1)
		return set_params(syscall(SYS_epoll_create1, flags));
	return set_params(real_epoll_create1(flags));
}
