// SPDX-License-Identifier: GPL-2.0
/*
 * An epoll server that spends a set time on every batch of events, as an
 * application with work per request does: it accepts TCP connections on
 * PORT, and each time epoll_wait() returns, it reads what every ready
 * connection has, then sleeps WORK_MS before it waits again. It never
 * sets EPIOCSPARAMS itself (run it under libepoll-busy-poll.so).
 *
 * usage: batch_server ADDR PORT WORK_MS SECONDS
 *   Exits after SECONDS, printing "bytes N batches N".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS	64

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
	struct timespec work;
	double end;
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
	printf("listening\n");
	fflush(stdout);
	while (now_s() < end) {
		n = epoll_wait(ep, evs, MAX_EVENTS, 100);
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
	printf("bytes %llu batches %llu\n", bytes, batches);
	return 0;
}
