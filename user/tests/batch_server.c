// SPDX-License-Identifier: GPL-2.0
/*
 * An epoll server that spends a set time on every batch of events, as an
 * application with work per request does: it accepts TCP connections on
 * PORT, and each time epoll_wait() returns, it reads what every ready
 * connection has, then sleeps WORK_MS before it waits again. It never
 * sets EPIOCSPARAMS itself (run it under libepoll-busy-poll.so).
 *
 * usage: batch_server ADDR PORT WORK_MS SECONDS
 *   Exits after SECONDS or on SIGTERM, printing "bytes N batches N
 *   gaps N gap_p99_us N": the gaps are its own measure of what the batch
 *   report of libepoll-busy-poll.so counts, the time from each return of
 *   epoll_wait() to the next call, and the p99 is of the same rank.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS	64
#define MAX_GAPS	(1 << 20)

static volatile sig_atomic_t stop;
static double gaps[MAX_GAPS];

static void on_term(int sig __attribute__((unused)))
{
	stop = 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event ev = { .events = EPOLLIN }, evs[MAX_EVENTS];
	unsigned long long bytes = 0, batches = 0;
	size_t ngaps = 0, rank;
	struct timespec work;
	double end, last = 0;
	int ep, ls, one = 1, i, n;
	char buf[65536];

	if (argc != 5 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: batch_server ADDR PORT WORK_MS SECONDS\n");
		return 2;
	}
	sa.sin_port = htons(atoi(argv[2]));
	work.tv_sec = atoi(argv[3]) / 1000;
	work.tv_nsec = (atoi(argv[3]) % 1000) * 1000000L;
	end = now_s() + atof(argv[4]);

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 16)) {
		perror("batch_server: listen");
		return 1;
	}
	ep = epoll_create1(0);
	ev.data.fd = ls;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev)) {
		perror("batch_server: epoll");
		return 1;
	}
	signal(SIGTERM, on_term);
	printf("listening\n");
	fflush(stdout);
	while (!stop && now_s() < end) {
		if (last && ngaps < MAX_GAPS)
			gaps[ngaps++] = now_s() - last;
		n = epoll_wait(ep, evs, MAX_EVENTS, 100);
		last = now_s();
		if (n < 0 && errno != EINTR) {
			perror("batch_server: epoll_wait");
			return 1;
		}
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			ssize_t got;

			if (fd == ls) {
				fd = accept(ls, NULL, NULL);
				ev.data.fd = fd;
				if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
					perror("batch_server: accept");
					return 1;
				}
				continue;
			}
			while ((got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				bytes += got;
			if (got == 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
		if (n > 0) {
			batches++;
			nanosleep(&work, NULL);
		}
	}
	qsort(gaps, ngaps, sizeof(gaps[0]), cmp_double);
	rank = ngaps ? (size_t)ceil(ngaps * 0.99) - 1 : 0;
	printf("bytes %llu batches %llu gaps %zu gap_p99_us %.0f\n", bytes,
	       batches, ngaps, ngaps ? gaps[rank] * 1e6 : 0);
	return 0;
}
