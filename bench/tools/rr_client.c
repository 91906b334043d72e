// SPDX-License-Identifier: GPL-2.0
/*
 * rr_client: load generator for rr_server.
 *
 * Open loop (-r RATE): requests leave at fixed intervals, spread round-robin
 * over the connections, whether or not earlier answers have come back. A
 * request's latency is counted from the time it was due, so a client that
 * falls behind does not hide the delay (no coordinated omission).
 * Closed loop (-r 0): every connection keeps one request outstanding, which
 * measures the highest rate the server sustains.
 *
 * After -w seconds of warm-up the client measures for -d seconds. With -S
 * DIR it copies /proc/stat, /proc/interrupts and /proc/softirqs to DIR at
 * the start and the end of that window, so that CPU time, interrupts and
 * softirqs can be put per request. Prints one JSON object.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "rr.h"

#define MAX_EVENTS	64
#define MAX_CONNS	256
#define DRAIN_NS	500000000ull	/* wait for late answers after the window */

/*
 * Latency histogram in nanoseconds: exact below 64, then 32 buckets per
 * power of two (at most 1/32 relative error).
 */
#define HIST_SUB_BITS	5
#define HIST_BUCKETS	(64 + 64 * (1 << HIST_SUB_BITS))

struct hist {
	uint64_t count[HIST_BUCKETS];
	uint64_t n, sum, max;
};

static unsigned int hist_index(uint64_t v)
{
	unsigned int shift;

	if (v < 64)
		return v;
	shift = 63 - __builtin_clzll(v) - HIST_SUB_BITS;
	return (shift << HIST_SUB_BITS) + (v >> shift);
}

/* The middle of bucket @i. */
static uint64_t hist_value(unsigned int i)
{
	unsigned int shift;

	if (i < 64)
		return i;
	shift = (i >> HIST_SUB_BITS) - 1;
	return ((uint64_t)(i - (shift << HIST_SUB_BITS)) << shift) +
	       (1ull << shift) / 2;
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->count[hist_index(v)]++;
	h->n++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

static uint64_t hist_percentile(const struct hist *h, double pct)
{
	uint64_t want = (uint64_t)ceil(h->n * pct / 100.0), seen = 0;
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->count[i];
		if (seen >= want && seen)
			return hist_value(i);
	}
	return h->max;
}

struct conn {
	int fd;
	size_t have;
	char buf[RR_MSG_SIZE];
};

struct run {
	struct conn conns[MAX_CONNS];
	int nconns, ep;
	uint64_t start, end;		/* the measurement window */
	uint64_t sent, answered, dropped;
	struct hist lat;
	const char *snapdir;
};

static int connect_to(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, one = 1;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", addr);
		exit(2);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		rr_die("socket");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		rr_die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* copy_file: SRC to DIR/PREFIX-NAME, where NAME is SRC's last component. */
static void copy_file(const char *dir, const char *prefix, const char *src)
{
	char path[512], buf[65536];
	FILE *in, *out;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s-%s", dir, prefix, strrchr(src, '/') + 1);
	in = fopen(src, "r");
	out = fopen(path, "w");
	if (!in || !out)
		rr_die(path);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
}

static void snapshot(const struct run *r, const char *prefix)
{
	if (!r->snapdir)
		return;
	copy_file(r->snapdir, prefix, "/proc/stat");
	copy_file(r->snapdir, prefix, "/proc/interrupts");
	copy_file(r->snapdir, prefix, "/proc/softirqs");
}

/* send_request: one request stamped @due on connection @c. */
static void send_request(struct run *r, struct conn *c, uint64_t due)
{
	char msg[RR_MSG_SIZE] = { 0 };
	ssize_t n;

	memcpy(msg, &due, sizeof(due));
	n = write(c->fd, msg, sizeof(msg));
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		/* The server is so far behind that the socket is full. */
		if (due >= r->start && due < r->end)
			r->dropped++;
		return;
	}
	if (n < 0 || (n < (ssize_t)sizeof(msg) &&
		      rr_write_all(c->fd, msg + n, sizeof(msg) - n)))
		rr_die("write");
	if (due >= r->start && due < r->end)
		r->sent++;
}

/*
 * receive: read the answers on @c; in closed loop each answer sends the
 * connection's next request.
 */
static void receive(struct run *r, struct conn *c, int closed_loop)
{
	uint64_t due, now;
	ssize_t n;

	for (;;) {
		n = read(c->fd, c->buf + c->have, sizeof(c->buf) - c->have);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "server closed the connection\n");
			exit(1);
		}
		c->have += n;
		if (c->have < sizeof(c->buf))
			continue;
		c->have = 0;
		now = rr_now_ns();
		memcpy(&due, c->buf, sizeof(due));
		if (now >= r->start && now < r->end)
			r->answered++;
		if (due >= r->start && due < r->end)
			hist_add(&r->lat, now - due);
		if (closed_loop && now < r->end)
			send_request(r, c, now);
	}
}

static void poll_once(struct run *r, uint64_t timeout_ns, int closed_loop)
{
	struct epoll_event events[MAX_EVENTS];
	struct timespec ts = {
		.tv_sec = timeout_ns / 1000000000ull,
		.tv_nsec = timeout_ns % 1000000000ull,
	};
	int n, i;

	n = epoll_pwait2(r->ep, events, MAX_EVENTS, &ts, NULL);
	if (n < 0 && errno != EINTR)
		rr_die("epoll_pwait2");
	for (i = 0; i < n; i++)
		receive(r, &r->conns[events[i].data.u32], closed_loop);
}

static void run_load(struct run *r, double rate)
{
	uint64_t interval = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
	uint64_t next = rr_now_ns(), now, stop = r->end + DRAIN_NS;
	int started = 0, ended = 0, i = 0;

	if (!interval)
		for (i = 0; i < r->nconns; i++)
			send_request(r, &r->conns[i], next);

	while ((now = rr_now_ns()) < stop) {
		if (!started && now >= r->start) {
			snapshot(r, "start");
			started = 1;
		}
		if (!ended && now >= r->end) {
			snapshot(r, "end");
			ended = 1;
		}
		if (interval) {
			for (; next <= now && next < r->end; next += interval) {
				send_request(r, &r->conns[i], next);
				i = (i + 1) % r->nconns;
			}
			poll_once(r, next >= r->end ? 1000000 :
				  next > now ? next - now : 0, 0);
		} else {
			poll_once(r, 1000000, 1);
		}
		if (now >= r->end && r->lat.n + r->dropped >= r->sent)
			break;
	}
	if (!ended)
		snapshot(r, "end");
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -a ADDR [-p PORT] [-c CONNS] [-r RATE] [-w WARMUP_S] [-d DURATION_S] [-S DIR]\n"
		"  -r 0 (default): closed loop, one request outstanding per connection\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static struct run r;
	double rate = 0, warmup = 1, duration = 5, secs;
	const char *addr = NULL;
	int port = RR_PORT, opt, i;
	struct epoll_event ev = { .events = EPOLLIN };

	r.nconns = 16;
	while ((opt = getopt(argc, argv, "a:p:c:r:w:d:S:")) != -1) {
		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'c':
			r.nconns = atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'w':
			warmup = atof(optarg);
			break;
		case 'd':
			duration = atof(optarg);
			break;
		case 'S':
			r.snapdir = optarg;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (!addr || r.nconns < 1 || r.nconns > MAX_CONNS || duration <= 0)
		usage(argv[0]);

	/* Wake up on time for each request, not up to 50 us late. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	r.ep = epoll_create1(0);
	if (r.ep < 0)
		rr_die("epoll_create1");
	for (i = 0; i < r.nconns; i++) {
		r.conns[i].fd = connect_to(addr, port);
		ev.data.u32 = i;
		if (epoll_ctl(r.ep, EPOLL_CTL_ADD, r.conns[i].fd, &ev))
			rr_die("epoll_ctl");
	}

	r.start = rr_now_ns() + (uint64_t)(warmup * 1e9);
	r.end = r.start + (uint64_t)(duration * 1e9);
	run_load(&r, rate);

	secs = duration;
	printf("{\"offered\": %.0f, \"conns\": %d, \"duration_s\": %.3f, "
	       "\"sent\": %llu, \"answered\": %llu, \"dropped\": %llu, "
	       "\"measured\": %llu, \"qps\": %.1f, \"avg_us\": %.1f, "
	       "\"p50_us\": %.1f, \"p95_us\": %.1f, \"p99_us\": %.1f, "
	       "\"max_us\": %.1f}\n",
	       rate, r.nconns, secs, (unsigned long long)r.sent,
	       (unsigned long long)r.answered, (unsigned long long)r.dropped,
	       (unsigned long long)r.lat.n, r.answered / secs,
	       r.lat.n ? r.lat.sum / 1e3 / r.lat.n : 0.0,
	       hist_percentile(&r.lat, 50) / 1e3,
	       hist_percentile(&r.lat, 95) / 1e3,
	       hist_percentile(&r.lat, 99) / 1e3, r.lat.max / 1e3);
	return 0;
}
