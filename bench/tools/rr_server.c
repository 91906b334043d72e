// SPDX-License-Identifier: GPL-2.0
/*
 * rr_server: a single-threaded epoll request/response server for the IRQ
 * suspension benchmark. Every request is a fixed-size message that is sent
 * back unchanged (the client keeps its timestamp in it).
 *
 * The epoll context can be given busy poll parameters with EPIOCSPARAMS,
 * and epoll_wait() can block (-t -1, the default) or poll (-t 0, the
 * "fullbusy" mode). Runs until SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rr.h"

#ifndef EPIOCSPARAMS
struct epoll_params {
	uint32_t busy_poll_usecs;
	uint16_t busy_poll_budget;
	uint8_t prefer_busy_poll;
	uint8_t __pad;
};

#define EPIOCSPARAMS _IOW(0x8A, 0x01, struct epoll_params)
#endif

#define MAX_EVENTS	64
#define MAX_CONNS	1024

struct conn {
	int fd;
	size_t have;		/* bytes of a partial request in buf */
	char buf[RR_MSG_SIZE];
};

static volatile sig_atomic_t stop;
static unsigned long long served;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PORT] [-t EPOLL_TIMEOUT_MS] [-u BUSY_POLL_USECS -b BUDGET -P PREFER]\n"
		"  -t 0 polls epoll without sleeping; -u/-b/-P set EPIOCSPARAMS\n",
		prog);
	exit(2);
}

static int listen_on(int port)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		rr_die("socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		rr_die("SO_REUSEADDR");
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)))
		rr_die("bind");
	if (listen(fd, MAX_CONNS))
		rr_die("listen");
	return fd;
}

static void accept_all(int ep, int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct conn *c;
	int fd, one = 1;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c)
			rr_die("calloc");
		c->fd = fd;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			rr_die("epoll_ctl");
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		rr_die("accept4");
}

static void close_conn(struct conn *c)
{
	close(c->fd);
	free(c);
}

/* Reads what the socket has, answers every complete request. */
static void serve(struct conn *c)
{
	ssize_t n;

	for (;;) {
		n = read(c->fd, c->buf + c->have, sizeof(c->buf) - c->have);
		if (n == 0) {
			close_conn(c);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			close_conn(c);
			return;
		}
		c->have += n;
		if (c->have < sizeof(c->buf))
			continue;
		c->have = 0;
		if (rr_write_all(c->fd, c->buf, sizeof(c->buf))) {
			close_conn(c);
			return;
		}
		served++;
	}
}

int main(int argc, char **argv)
{
	struct epoll_params params = { 0 };
	struct epoll_event events[MAX_EVENTS], ev = { .events = EPOLLIN };
	int port = RR_PORT, timeout = -1, set_params = 0;
	int ep, lfd, n, i, opt;

	while ((opt = getopt(argc, argv, "p:t:u:b:P:")) != -1) {
		switch (opt) {
		case 'p':
			port = atoi(optarg);
			break;
		case 't':
			timeout = atoi(optarg);
			break;
		case 'u':
			params.busy_poll_usecs = strtoul(optarg, NULL, 0);
			set_params = 1;
			break;
		case 'b':
			params.busy_poll_budget = strtoul(optarg, NULL, 0);
			set_params = 1;
			break;
		case 'P':
			params.prefer_busy_poll = strtoul(optarg, NULL, 0);
			set_params = 1;
			break;
		default:
			usage(argv[0]);
		}
	}

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);

	ep = epoll_create1(0);
	if (ep < 0)
		rr_die("epoll_create1");
	if (set_params && ioctl(ep, EPIOCSPARAMS, &params))
		rr_die("EPIOCSPARAMS");
	lfd = listen_on(port);
	ev.data.ptr = NULL;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev))
		rr_die("epoll_ctl");
	printf("listening on %d\n", port);
	fflush(stdout);

	while (!stop) {
		n = epoll_wait(ep, events, MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rr_die("epoll_wait");
		}
		for (i = 0; i < n; i++) {
			if (!events[i].data.ptr)
				accept_all(ep, lfd);
			else
				serve(events[i].data.ptr);
		}
	}
	printf("served %llu requests\n", served);
	return 0;
}
