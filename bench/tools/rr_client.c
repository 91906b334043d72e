// SPDX-License-Identifier: GPL-2.0
/*
 * rr_client: load generator for rr_server and for memcached (-m).
 *
 * Open loop (-r RATE): requests leave at fixed intervals, spread round-robin
 * over the connections, whether or not earlier answers have come back. A
 * request's latency is counted from the time it was due, so a client that
 * falls behind does not hide the delay (no coordinated omission).
 * Closed loop (-r 0): every connection keeps -q requests outstanding
 * (pipelined), which measures the highest rate the server sustains.
 *
 * Every reply is checked byte for byte against the one its request must
 * get; a wrong or unexpected byte ends the run with status 1. With -m the
 * client first sets every key, then sends gets and -s percent sets of
 * random keys, the values derived from the key.
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

/*
 * The protocols. rr: a request is RR_MSG_SIZE bytes holding its due time,
 * and the answer is the request sent back. memcached: the text protocol's
 * "get" and "set" of keys whose values are derived from the key, so that
 * every reply (STORED, or the value and END) is known byte for byte.
 */
enum proto { PROTO_RR, PROTO_MEMCACHED };

#define MC_VALUE_SIZE	32
#define MC_REQ_MAX	(64 + MC_VALUE_SIZE)
#define RING_SIZE	1024		/* requests outstanding per connection */

struct req {
	uint64_t due;
	uint32_t key;
	uint32_t set;
};

struct conn {
	int fd;
	unsigned int head, tail;	/* ring of outstanding requests */
	struct req ring[RING_SIZE];
	char exp[MC_REQ_MAX];		/* the head's expected reply */
	size_t exp_len, exp_pos;
};

struct run {
	struct conn conns[MAX_CONNS];
	int nconns, ep, depth;
	enum proto proto;
	uint32_t keys, set_percent, seed;
	uint64_t start, end;		/* the measurement window */
	uint64_t sent, answered, dropped, checked;
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

/* mc_value: the value of @key, MC_VALUE_SIZE printable bytes. */
static void mc_value(uint32_t key, char *val)
{
	uint32_t x = key * 2654435761u + 1;
	int i;

	for (i = 0; i < MC_VALUE_SIZE; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		val[i] = 'a' + x % 26;
	}
}

/* request_bytes: the bytes of request @q into @buf; returns the length. */
static size_t request_bytes(const struct run *r, const struct req *q, char *buf)
{
	char val[MC_VALUE_SIZE];
	int n;

	if (r->proto == PROTO_RR) {
		memset(buf, 0, RR_MSG_SIZE);
		memcpy(buf, &q->due, sizeof(q->due));
		return RR_MSG_SIZE;
	}
	if (!q->set)
		return sprintf(buf, "get key:%08u\r\n", q->key);
	mc_value(q->key, val);
	n = sprintf(buf, "set key:%08u 0 0 %d\r\n", q->key, MC_VALUE_SIZE);
	memcpy(buf + n, val, MC_VALUE_SIZE);
	memcpy(buf + n + MC_VALUE_SIZE, "\r\n", 2);
	return n + MC_VALUE_SIZE + 2;
}

/* reply_bytes: the only correct reply to request @q, into @buf. */
static size_t reply_bytes(const struct run *r, const struct req *q, char *buf)
{
	char val[MC_VALUE_SIZE];
	int n;

	if (r->proto == PROTO_RR)
		return request_bytes(r, q, buf);
	if (q->set)
		return sprintf(buf, "STORED\r\n");
	mc_value(q->key, val);
	n = sprintf(buf, "VALUE key:%08u 0 %d\r\n", q->key, MC_VALUE_SIZE);
	memcpy(buf + n, val, MC_VALUE_SIZE);
	return n + MC_VALUE_SIZE + sprintf(buf + n + MC_VALUE_SIZE, "\r\nEND\r\n");
}

/* next_req: a request due at @due; memcached keys and sets are random. */
static struct req next_req(struct run *r, uint64_t due)
{
	struct req q = { .due = due };

	if (r->proto == PROTO_MEMCACHED) {
		q.key = rand_r(&r->seed) % r->keys;
		q.set = (uint32_t)rand_r(&r->seed) % 100 < r->set_percent;
	}
	return q;
}

static int in_window(const struct run *r, uint64_t t)
{
	return t >= r->start && t < r->end;
}

/*
 * send_request: request @q on connection @c. A request that finds the
 * connection's ring or socket full is dropped (the server is that far
 * behind) and counted if it was due in the window.
 */
static void send_request(struct run *r, struct conn *c, struct req q)
{
	char msg[MC_REQ_MAX];
	size_t len;
	ssize_t n;

	if (c->tail - c->head == RING_SIZE) {
		r->dropped += in_window(r, q.due);
		return;
	}
	len = request_bytes(r, &q, msg);
	n = write(c->fd, msg, len);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		r->dropped += in_window(r, q.due);
		return;
	}
	if (n < 0 || ((size_t)n < len && rr_write_all(c->fd, msg + n, len - n)))
		rr_die("write");
	if (c->tail == c->head)
		c->exp_len = reply_bytes(r, &q, c->exp);
	c->ring[c->tail++ % RING_SIZE] = q;
	r->sent += in_window(r, q.due);
}

static void bad_reply(const struct conn *c, const char *got, size_t len)
{
	fprintf(stderr, "wrong reply on connection %d after %zu good bytes: "
		"expected \"%.*s\", got \"%.*s\"\n", c->fd, c->exp_pos,
		(int)c->exp_len, c->exp, (int)len, got);
	exit(1);
}

/*
 * complete: the head request of @c has its whole reply; account for it,
 * and in closed loop send the connection's next request.
 */
static void complete(struct run *r, struct conn *c, int closed_loop)
{
	struct req q = c->ring[c->head++ % RING_SIZE];
	uint64_t now = rr_now_ns();

	r->checked++;
	if (in_window(r, now))
		r->answered++;
	if (in_window(r, q.due))
		hist_add(&r->lat, now - q.due);
	c->exp_pos = 0;
	c->exp_len = 0;
	if (c->head != c->tail)
		c->exp_len = reply_bytes(r, &c->ring[c->head % RING_SIZE], c->exp);
	if (closed_loop && now < r->end)
		send_request(r, c, next_req(r, now));
}

/*
 * receive: read what the server sent on @c and check it, byte for byte,
 * against the replies its outstanding requests must get, in order.
 */
static void receive(struct run *r, struct conn *c, int closed_loop)
{
	char buf[16384];
	size_t off, k;
	ssize_t n;

	for (;;) {
		n = read(c->fd, buf, sizeof(buf));
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "server closed the connection\n");
			exit(1);
		}
		for (off = 0; off < (size_t)n; off += k) {
			if (!c->exp_len)
				bad_reply(c, buf + off, n - off);
			k = c->exp_len - c->exp_pos;
			if (k > n - off)
				k = n - off;
			if (memcmp(buf + off, c->exp + c->exp_pos, k))
				bad_reply(c, buf + off, k);
			c->exp_pos += k;
			if (c->exp_pos == c->exp_len)
				complete(r, c, closed_loop);
		}
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

static uint64_t outstanding(const struct run *r)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < r->nconns; i++)
		n += r->conns[i].tail - r->conns[i].head;
	return n;
}

/*
 * preload: set every key once, in closed loop, before the run, so that
 * every get has a value to check.
 */
static void preload(struct run *r)
{
	uint32_t key = 0;
	int i;

	if (r->proto != PROTO_MEMCACHED)
		return;
	while (key < r->keys || outstanding(r)) {
		for (i = 0; i < r->nconns && key < r->keys; i++) {
			struct conn *c = &r->conns[i];

			if (c->tail - c->head < 8)
				send_request(r, c, (struct req){ .key = key++, .set = 1 });
		}
		poll_once(r, 1000000, 0);
	}
	r->checked = 0;
}

static void run_load(struct run *r, double rate)
{
	uint64_t interval = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
	uint64_t next = rr_now_ns(), now, stop = r->end + DRAIN_NS;
	int started = 0, ended = 0, i = 0, d;

	if (!interval)
		for (i = 0; i < r->nconns; i++)
			for (d = 0; d < r->depth; d++)
				send_request(r, &r->conns[i], next_req(r, next));

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
				send_request(r, &r->conns[i], next_req(r, next));
				i = (i + 1) % r->nconns;
			}
			poll_once(r, next >= r->end ? 1000000 :
				  next > now ? next - now : 0, 0);
		} else {
			poll_once(r, 1000000, 1);
		}
		if (now >= r->end && !outstanding(r))
			break;
	}
	if (!ended)
		snapshot(r, "end");
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -a ADDR [-p PORT] [-c CONNS] [-r RATE] [-q DEPTH] [-w WARMUP_S] [-d DURATION_S] [-S DIR]\n"
		"          [-m [-k KEYS] [-s SET_PERCENT]]\n"
		"  -r 0 (default): closed loop, DEPTH requests (default 1) outstanding per connection\n"
		"  -m: memcached text protocol (port 11211), gets and SET_PERCENT%% sets of KEYS keys\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static struct run r;
	double rate = 0, warmup = 1, duration = 5;
	const char *addr = NULL;
	int port = 0, opt, i;
	struct epoll_event ev = { .events = EPOLLIN };

	r.nconns = 16;
	r.depth = 1;
	r.keys = 1000;
	r.set_percent = 10;
	r.seed = 1;
	while ((opt = getopt(argc, argv, "a:p:c:r:q:w:d:S:mk:s:")) != -1) {
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
		case 'q':
			r.depth = atoi(optarg);
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
		case 'm':
			r.proto = PROTO_MEMCACHED;
			break;
		case 'k':
			r.keys = strtoul(optarg, NULL, 0);
			break;
		case 's':
			r.set_percent = strtoul(optarg, NULL, 0);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (!addr || r.nconns < 1 || r.nconns > MAX_CONNS || duration <= 0 ||
	    r.depth < 1 || r.depth > RING_SIZE || r.keys < 1 ||
	    r.keys > 100000000 || r.set_percent > 100)
		usage(argv[0]);
	if (!port)
		port = r.proto == PROTO_MEMCACHED ? 11211 : RR_PORT;

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
	preload(&r);

	r.start = rr_now_ns() + (uint64_t)(warmup * 1e9);
	r.end = r.start + (uint64_t)(duration * 1e9);
	run_load(&r, rate);

	printf("{\"protocol\": \"%s\", \"offered\": %.0f, \"conns\": %d, "
	       "\"depth\": %d, \"duration_s\": %.3f, "
	       "\"sent\": %llu, \"answered\": %llu, \"dropped\": %llu, "
	       "\"unanswered\": %llu, \"checked\": %llu, "
	       "\"measured\": %llu, \"qps\": %.1f, \"avg_us\": %.1f, "
	       "\"p50_us\": %.1f, \"p95_us\": %.1f, \"p99_us\": %.1f, "
	       "\"max_us\": %.1f}\n",
	       r.proto == PROTO_MEMCACHED ? "memcached" : "rr", rate,
	       r.nconns, rate > 0 ? 1 : r.depth, duration,
	       (unsigned long long)r.sent, (unsigned long long)r.answered,
	       (unsigned long long)r.dropped,
	       (unsigned long long)outstanding(&r),
	       (unsigned long long)r.checked,
	       (unsigned long long)r.lat.n, r.answered / duration,
	       r.lat.n ? r.lat.sum / 1e3 / r.lat.n : 0.0,
	       hist_percentile(&r.lat, 50) / 1e3,
	       hist_percentile(&r.lat, 95) / 1e3,
	       hist_percentile(&r.lat, 99) / 1e3, r.lat.max / 1e3);
	return 0;
}
