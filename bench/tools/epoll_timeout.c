// SPDX-License-Identifier: GPL-2.0
/*
 * libepoll-timeout.so: caps the timeout of epoll_wait() and epoll_pwait()
 * at BENCH_EPOLL_TIMEOUT_MS milliseconds (an infinite one included), for
 * the benchmark's "fullbusy" mode of an unmodified server. The IRQ
 * suspension cover letter patched libevent to the same effect: with busy
 * polling on the epoll instance, the server then polls without sleeping.
 *
 * LD_PRELOAD it with the epoll busy poll library; unset or invalid
 * BENCH_EPOLL_TIMEOUT_MS leaves every call as it is.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>

typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int,
			      const sigset_t *);

static int cap_ms = -1;
static epoll_pwait_fn real_epoll_pwait;

__attribute__((constructor)) static void epoll_timeout_init(void)
{
	const char *s = getenv("BENCH_EPOLL_TIMEOUT_MS");
	char *end;
	long v;

	real_epoll_pwait = (epoll_pwait_fn)dlsym(RTLD_NEXT, "epoll_pwait");
	if (!s || !*s)
		return;
	v = strtol(s, &end, 10);
	if (!*end && v >= 0 && v <= 1000)
		cap_ms = v;
}

static int capped(int timeout)
{
	if (cap_ms < 0 || (timeout >= 0 && timeout <= cap_ms))
		return timeout;
	return cap_ms;
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents,
		int timeout, const sigset_t *sigmask)
{
	if (!real_epoll_pwait)		/* called before the constructor */
		epoll_timeout_init();
	return real_epoll_pwait(epfd, events, maxevents, capped(timeout),
				sigmask);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents,
	       int timeout)
{
	return epoll_pwait(epfd, events, maxevents, timeout, NULL);
}
