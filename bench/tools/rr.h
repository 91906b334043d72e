/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rr_server and rr_client share: the message format and small helpers.
 * A request is RR_MSG_SIZE bytes; its first 8 bytes hold the client's
 * timestamp, which the server sends back untouched.
 */
#ifndef RR_H
#define RR_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define RR_MSG_SIZE	64
#define RR_PORT		7777

static inline void rr_die(const char *what)
{
	perror(what);
	exit(1);
}

static inline uint64_t rr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * rr_write_all - write a whole message to a non-blocking socket, retrying
 * while it is short (a 64-byte write is split only when the socket buffer
 * is nearly full). Returns 0, or -1 with errno set.
 */
static inline int rr_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

#endif /* RR_H */
