// SPDX-License-Identifier: GPL-2.0
/*
 * An epoll program that knows nothing of EPIOCSPARAMS: it creates epoll
 * instances, checks that each one works, and prints the busy poll
 * parameters each has (EPIOCGPARAMS), one line per instance:
 *
 *   LABEL usecs=U budget=B prefer=P
 *
 * usage: epoll_probe [fork | exec | threads N | stderr-to FILE]
 *   (none)     one instance from epoll_create(), one from epoll_create1()
 *   fork       one before fork(), one in the parent and one in the child
 *              after it
 *   exec       the program again through execv(), which prints as (none)
 *   threads N  one instance from each of N threads at once
 *   stderr-to FILE
 *              as (none), with FILE opened on file descriptor 2 first, as
 *              a daemon may do: nothing but the program may write there
 * It also checks that epoll_create*() sets errno as the C library does:
 * EINVAL for a size of 0 and for unknown flags, unchanged on success.
 *
 * Exit status 0 if every instance worked, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "epoll_params.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* A pipe's readiness must come out of @ep: the instance works. */
static int works(int ep)
{
	struct epoll_event ev = { .events = EPOLLIN }, got;
	int p[2], ok;

	if (pipe(p))
		return 0;
	ok = !epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) && write(p[1], "x", 1) == 1 &&
	     epoll_wait(ep, &got, 1, 1000) == 1 && got.events & EPOLLIN;
	close(p[0]);
	close(p[1]);
	return ok;
}

/* Prints what the kernel holds for @ep; returns 0 if @ep works. */
static int report(const char *label, int ep)
{
	struct epoll_params p;
	int ret = 0;

	pthread_mutex_lock(&out_lock);
	if (ep < 0) {
		printf("%s create failed: %s\n", label, strerror(errno));
		ret = 1;
	} else if (!works(ep)) {
		printf("%s does not work\n", label);
		ret = 1;
	} else if (ioctl(ep, EPIOCGPARAMS, &p)) {
		printf("%s EPIOCGPARAMS failed: %s\n", label, strerror(errno));
	} else {
		printf("%s usecs=%u budget=%u prefer=%u\n", label,
		       p.busy_poll_usecs, p.busy_poll_budget, p.prefer_busy_poll);
	}
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	if (ep >= 0)
		close(ep);
	return ret;
}

/*
 * A failing call must fail with the C library's errno, and a successful
 * one leave errno as it was (glibc's does).
 */
static int errno_as_documented(void)
{
	int ret = 0, ep;

	errno = EDOM;
	ep = epoll_create1(0);
	if (ep < 0 || errno != EDOM) {
		printf("epoll_create1(0): errno %d after success, was EDOM\n", errno);
		ret = 1;
	}
	if (ep >= 0)
		close(ep);

	errno = 0;
	if (epoll_create(0) != -1 || errno != EINVAL) {
		printf("epoll_create(0): errno %d, expected EINVAL\n", errno);
		ret = 1;
	}
	errno = 0;
	if (epoll_create1(~EPOLL_CLOEXEC) != -1 || errno != EINVAL) {
		printf("epoll_create1(bad flags): errno %d, expected EINVAL\n", errno);
		ret = 1;
	}
	return ret;
}

static void *thread_fn(void *arg)
{
	char label[32];

	snprintf(label, sizeof(label), "thread%ld", (long)(intptr_t)arg);
	return (void *)(intptr_t)report(label, epoll_create1(0));
}

static int threads(int n)
{
	pthread_t t[64];
	int i, ret = 0;
	void *r;

	if (n < 1 || n > 64)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, thread_fn, (void *)(intptr_t)i))
			return 1;
	for (i = 0; i < n; i++) {
		pthread_join(t[i], &r);
		ret |= (int)(intptr_t)r;
	}
	return ret;
}

static int forked(void)
{
	int ret = report("before_fork", epoll_create1(0)), status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid)
		_exit(report("child", epoll_create1(0)));
	ret |= report("parent", epoll_create1(0));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return ret | WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	int ret;

	if (argc > 1 && !strcmp(argv[1], "fork"))
		return forked();
	if (argc > 2 && !strcmp(argv[1], "threads"))
		return threads(atoi(argv[2]));
	if (argc > 2 && !strcmp(argv[1], "stderr-to")) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
			return 1;
		close(fd);
	}
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		char *args[] = { argv[0], NULL };

		execv("/proc/self/exe", args);
		perror("execv");
		return 1;
	}
	ret = report("epoll_create", epoll_create(1));
	ret |= report("epoll_create1", epoll_create1(EPOLL_CLOEXEC));
	return ret | errno_as_documented();
}
