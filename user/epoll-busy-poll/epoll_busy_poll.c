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
 * IRQ suspension.
 *
 *   EPOLL_BUSY_POLL_STATS   a path: each process writes its batch report
 *                           to PATH.PID (see write_stats())
 *
 * The batch report tells how long the program stays away from epoll
 * between two calls, which irq-suspend-timeout must cover (napictl(8)). The library never changes what the program sees: a
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
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
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
static int (*real_epoll_wait)(int epfd, struct epoll_event *events,
			      int maxevents, int timeout);
static int (*real_epoll_pwait)(int epfd, struct epoll_event *events,
			       int maxevents, int timeout,
			       const sigset_t *sigmask);
static int (*real_epoll_pwait2)(int epfd, struct epoll_event *events,
				int maxevents, const struct timespec *timeout,
				const sigset_t *sigmask);

#define NSEC_PER_SEC	1000000000ULL
/* The report is rewritten at most this often, by a returning call */
#define STATS_INTERVAL_NS	(2 * NSEC_PER_SEC)
/*
 * Gaps between calls are counted in a log-linear histogram of
 * nanoseconds: each power of two is split into 2^STATS_SUB_BITS buckets,
 * so a percentile is known to within 1/32 of its value.
 */
#define STATS_SUB_BITS	4
#define STATS_SUB	(1U << STATS_SUB_BITS)
#define STATS_BUCKETS	((64 - STATS_SUB_BITS + 1) * STATS_SUB)

/* The batch report: counters of this process, updated by every thread */
static struct {
	bool on;			/* EPOLL_BUSY_POLL_STATS is set */
	char path[PATH_MAX];		/* its value */
	uint64_t calls;			/* epoll_wait() and friends */
	uint64_t with_events;		/* calls that returned events */
	uint64_t empty;			/* calls that returned none */
	uint64_t failed;		/* calls that failed (EINTR...) */
	uint64_t max_gap;
	uint64_t hist[STATS_BUCKETS];
	uint64_t written;		/* when the report was last written */
	int writing;
} stats;

/* When this thread's last epoll_wait() returned, 0 before the first */
static __thread uint64_t last_return;

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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The histogram bucket of a gap of @ns */
static unsigned int stats_bucket(uint64_t ns)
{
	unsigned int msb;

	if (ns < STATS_SUB)
		return ns;
	msb = 63 - __builtin_clzll(ns);
	return (msb - STATS_SUB_BITS + 1) * STATS_SUB +
	       ((ns >> (msb - STATS_SUB_BITS)) & (STATS_SUB - 1));
}

/* The middle of bucket @b, in ns */
static uint64_t stats_bucket_ns(unsigned int b)
{
	unsigned int shift;

	if (b < STATS_SUB)
		return b;
	shift = b / STATS_SUB - 1;
	return ((uint64_t)(STATS_SUB + b % STATS_SUB) << shift) +
	       ((1ULL << shift) >> 1);
}

/* The gap below which @pct percent of @n counted gaps fall */
static uint64_t stats_percentile(const uint64_t *hist, uint64_t n,
				 unsigned int pct)
{
	uint64_t want = (n * pct + 99) / 100, seen = 0;
	unsigned int b;

	for (b = 0; b < STATS_BUCKETS; b++) {
		seen += hist[b];
		if (seen && seen >= want)
			return stats_bucket_ns(b);
	}
	return 0;
}

/*
 * The batch report, in PATH.PID: one "key: value" per line. Times are
 * microseconds; gaps are from a thread's return from epoll_wait() (or
 * epoll_pwait(), epoll_pwait2()) to its next call, which is the time the
 * program spends on the events it got. Written to a temporary file of
 * this process's own, made anew (never through a link planted there),
 * and renamed, so a reader never sees half of one. The caller holds
 * stats.writing.
 */
static void write_stats(void)
{
	static char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	static uint64_t hist[STATS_BUCKETS];
	uint64_t gaps = 0;
	int saved = errno, fd;
	unsigned int b;
	FILE *f;

	for (b = 0; b < STATS_BUCKETS; b++) {
		hist[b] = __atomic_load_n(&stats.hist[b], __ATOMIC_RELAXED);
		gaps += hist[b];
	}
	snprintf(path, sizeof(path), "%s.%d", stats.path, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	fprintf(f, "pid: %d\ncalls: %llu\nwith_events: %llu\nempty: %llu\n"
		"failed: %llu\ngaps: %llu\ngap_p50_us: %llu\ngap_p99_us: %llu\n"
		"gap_max_us: %llu\n", (int)getpid(),
		(unsigned long long)__atomic_load_n(&stats.calls, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&stats.with_events, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&stats.empty, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&stats.failed, __ATOMIC_RELAXED),
		(unsigned long long)gaps,
		(unsigned long long)stats_percentile(hist, gaps, 50) / 1000,
		(unsigned long long)stats_percentile(hist, gaps, 99) / 1000,
		(unsigned long long)__atomic_load_n(&stats.max_gap, __ATOMIC_RELAXED) / 1000);
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
out:
	errno = saved;
}

/* A forked child reports only what it does itself */
static void stats_reset_child(void)
{
	memset(stats.hist, 0, sizeof(stats.hist));
	stats.calls = stats.with_events = stats.empty = stats.failed = 0;
	stats.max_gap = 0;
	stats.written = now_ns();
	stats.writing = 0;
}

static void stats_init(void)
{
	const char *path = getenv("EPOLL_BUSY_POLL_STATS");

	if (!path || !*path || strlen(path) >= sizeof(stats.path))
		return;
	strcpy(stats.path, path);
	stats.written = now_ns();
	pthread_atfork(NULL, NULL, stats_reset_child);
	stats.on = true;
}

/* Before a call: counts the gap since this thread's last return */
static void stats_enter(void)
{
	uint64_t gap, max;

	if (!last_return)
		return;
	gap = now_ns() - last_return;
	__atomic_fetch_add(&stats.hist[stats_bucket(gap)], 1, __ATOMIC_RELAXED);
	max = __atomic_load_n(&stats.max_gap, __ATOMIC_RELAXED);
	while (gap > max &&
	       !__atomic_compare_exchange_n(&stats.max_gap, &max, gap, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* After a call that returned @ret: counts it, and updates the report */
static int stats_leave(int ret)
{
	uint64_t *counter = ret > 0 ? &stats.with_events :
			    ret == 0 ? &stats.empty : &stats.failed;
	uint64_t now = now_ns();

	__atomic_fetch_add(&stats.calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
	if (now - __atomic_load_n(&stats.written, __ATOMIC_RELAXED) >=
	    STATS_INTERVAL_NS &&
	    !__atomic_exchange_n(&stats.writing, 1, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&stats.written, now, __ATOMIC_RELAXED);
		write_stats();
		__atomic_store_n(&stats.writing, 0, __ATOMIC_RELEASE);
		/* the report's own time is not the program's */
		now = now_ns();
	}
	last_return = now;
	return ret;
}

/*
 * The last report, at exit, once a write another thread may be doing is
 * over; a process that never waited writes none.
 */
__attribute__((destructor))
static void epoll_busy_poll_fini(void)
{
	if (!stats.on || !__atomic_load_n(&stats.calls, __ATOMIC_RELAXED))
		return;
	while (__atomic_exchange_n(&stats.writing, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	write_stats();
	__atomic_store_n(&stats.writing, 0, __ATOMIC_RELEASE);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
	real_epoll_create = (int (*)(int))dlsym(RTLD_NEXT, "epoll_create");
	real_epoll_create1 = (int (*)(int))dlsym(RTLD_NEXT, "epoll_create1");
	real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
	real_epoll_pwait = dlsym(RTLD_NEXT, "epoll_pwait");
	real_epoll_pwait2 = dlsym(RTLD_NEXT, "epoll_pwait2");
	stderr_ok = !fstat(STDERR_FILENO, &stderr_st);
	enabled = read_settings();
	stats_init();
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

/*
 * Whether the C library's @fn was found, once init() ran: a constructor
 * that runs before this library's may already wait.
 */
#define REAL_READY(fn)	(__builtin_expect((fn) != NULL, 1) ||	\
			 (pthread_once(&init_once, init), (fn) != NULL))

/*
 * The waits, wrapped for the batch report; without EPOLL_BUSY_POLL_STATS
 * each costs two tests and a call through a pointer. A C library without
 * one of them never had a program call it.
 */
int epoll_wait(int epfd, struct epoll_event *events, int maxevents,
	       int timeout)
{
	if (!REAL_READY(real_epoll_wait))
		return errno = ENOSYS, -1;
	if (!stats.on)
		return real_epoll_wait(epfd, events, maxevents, timeout);
	stats_enter();
	return stats_leave(real_epoll_wait(epfd, events, maxevents, timeout));
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents,
		int timeout, const sigset_t *sigmask)
{
	if (!REAL_READY(real_epoll_pwait))
		return errno = ENOSYS, -1;
	if (!stats.on)
		return real_epoll_pwait(epfd, events, maxevents, timeout,
					sigmask);
	stats_enter();
	return stats_leave(real_epoll_pwait(epfd, events, maxevents, timeout,
					    sigmask));
}

int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
		 const struct timespec *timeout, const sigset_t *sigmask)
{
	if (!REAL_READY(real_epoll_pwait2))
		return errno = ENOSYS, -1;
	if (!stats.on)
		return real_epoll_pwait2(epfd, events, maxevents, timeout,
					 sigmask);
	stats_enter();
	return stats_leave(real_epoll_pwait2(epfd, events, maxevents, timeout,
					     sigmask));
}
