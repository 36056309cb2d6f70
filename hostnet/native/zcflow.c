/* zcflow: one TCP flow whose send and receive mechanism is chosen, for a fixed time.
 *
 * The same loop moves the data in every mode, so two points differ only in the mechanism:
 *   sender   -m copy      send()                     user -> kernel copy
 *            -m sendfile  sendfile() from a memfd    page cache pages, no user copy
 *            -m zerocopy  send(MSG_ZEROCOPY)         user pages pinned; completions read from
 *                                                    the error queue, those the kernel flagged
 *                                                    SO_EE_CODE_ZEROCOPY_COPIED counted
 *   receiver -m copy      recv()
 *            -m mmap      TCP_ZEROCOPY_RECEIVE       payload pages mapped into the process when
 *                                                    the kernel can (whole pages), the rest read
 *
 * ADDR is an IPv4 or an IPv6 address, as given (no name lookup).
 * Usage: zcflow -s -B ADDR -p PORT -m copy|mmap [-t SECS -O WARMUP] [-C CPU] [-l CHUNK] [-M MSS]
 *        zcflow -c ADDR    -p PORT -m copy|sendfile|zerocopy -t SECS [-O WARMUP] [-C CPU] [-l CHUNK] [-M MSS]
 * -M sets TCP_MAXSEG on the socket (the server's before it listens): with timestamps, 4108 carries
 * 4096 bytes of payload a segment, whole pages a receiver can map below a 61492-byte MTU (tcp_mmap's -M).
 * The server serves one connection and exits at end of stream. Each side counts bytes and its
 * own thread's CPU (getrusage RUSAGE_THREAD) inside the window [warm-up, warm-up + SECS] of its
 * clock (the server's from the accept), and prints one "zcflow key=value ..." line
 * (parsers/native.py reads it). Written for hostnet; the
 * kernel's selftests tcp_mmap.c and msg_zerocopy.c document the interfaces used.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define RING_BYTES (8u << 20) /* the sender cycles through 8 MB, so pinned pages are rarely reused */

struct counts {
	double window_start, window_end; /* seconds on this side's clock from the connection */
	int in_window, done_window;
	unsigned long long bytes, bytes_total, mapped, mapped_total, calls;
	unsigned long long zc_sends, zc_completed, zc_copied, zc_notifications, enobufs;
	struct rusage ru0, ru1;
	double t0, t_open, t_close;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "zcflow: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: zcflow -s -B ADDR -p PORT -m copy|mmap [-t SECS -O WARMUP] [-C CPU] [-l CHUNK] [-M MSS]\n"
			"       zcflow -c ADDR -p PORT -m copy|sendfile|zerocopy -t SECS [-O WARMUP] [-C CPU] [-l CHUNK]"
			" [-M MSS]\n");
	exit(2);
}

/* Account n bytes (m of them mapped) at time t, opening and closing the window on the way. */
static void account(struct counts *c, unsigned long long n, unsigned long long m)
{
	double t = now() - c->t0;
	if (!c->in_window && !c->done_window && t >= c->window_start) {
		c->in_window = 1;
		c->t_open = t;
		getrusage(RUSAGE_THREAD, &c->ru0);
	}
	if (c->in_window && t >= c->window_end) {
		c->in_window = 0;
		c->done_window = 1;
		c->t_close = t;
		getrusage(RUSAGE_THREAD, &c->ru1);
	}
	c->bytes_total += n;
	c->mapped_total += m;
	c->calls++;
	if (c->in_window) {
		c->bytes += n;
		c->mapped += m;
	}
}

static unsigned long long cpu_ns(const struct rusage *a, const struct rusage *b, int sys)
{
	const struct timeval *x = sys ? &a->ru_stime : &a->ru_utime, *y = sys ? &b->ru_stime : &b->ru_utime;
	return ((y->tv_sec - x->tv_sec) * 1000000ULL + y->tv_usec - x->tv_usec) * 1000ULL;
}

/* One result line: "zcflow key=value ..." (window fields 0 when the window never opened). */
static void report(struct counts *c, const char *role, const char *mode, int rcv_mss)
{
	if (c->in_window) { /* the stream ended inside the window: close it there */
		c->in_window = 0;
		c->done_window = 1;
		c->t_close = now() - c->t0;
		getrusage(RUSAGE_THREAD, &c->ru1);
	}
	int w = c->done_window;
	printf("zcflow role=%s mode=%s window_ns=%llu bytes=%llu bytes_total=%llu calls=%llu user_ns=%llu sys_ns=%llu",
	       role, mode, w ? (unsigned long long)((c->t_close - c->t_open) * 1e9) : 0ULL, c->bytes, c->bytes_total,
	       c->calls, w ? cpu_ns(&c->ru0, &c->ru1, 0) : 0ULL, w ? cpu_ns(&c->ru0, &c->ru1, 1) : 0ULL);
	if (!strcmp(mode, "mmap"))
		printf(" mapped=%llu mapped_total=%llu", c->mapped, c->mapped_total);
	if (!strcmp(mode, "zerocopy"))
		printf(" zc_sends=%llu zc_completed=%llu zc_copied=%llu zc_notifications=%llu enobufs=%llu",
		       c->zc_sends, c->zc_completed, c->zc_copied, c->zc_notifications, c->enobufs);
	if (rcv_mss >= 0)
		printf(" rcv_mss=%d", rcv_mss);
	printf("\n");
}

static void pin(int cpu)
{
	cpu_set_t set;
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* An IPv4 or IPv6 address, as given (no name lookup); its length in *len. */
static struct sockaddr_storage address(const char *ip, int port, socklen_t *len)
{
	struct sockaddr_storage s = {0};
	struct sockaddr_in *a4 = (struct sockaddr_in *)&s;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&s;
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		*len = sizeof(*a6);
	} else {
		fprintf(stderr, "zcflow: %s is not an IPv4 or IPv6 address\n", ip);
		exit(2);
	}
	return s;
}

/* Read every completion queued on the error queue; returns how many ranges were read. */
static int completions(int fd, struct counts *c)
{
	int got = 0;
	for (;;) {
		char control[128];
		struct msghdr msg = {.msg_control = control, .msg_controllen = sizeof(control)};
		if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return got;
			die("recvmsg MSG_ERRQUEUE");
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			/* an IPv6 socket's completions come as IPV6_RECVERR */
			if (!(cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) &&
			    !(cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR))
				continue;
			struct sock_extended_err *e = (void *)CMSG_DATA(cm);
			if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY || e->ee_errno)
				continue;
			/* ids are 32-bit and wrap: the range's length is their difference modulo 2^32 */
			unsigned long long range = (uint32_t)(e->ee_data - e->ee_info) + 1ULL;
			c->zc_completed += range;
			c->zc_notifications++;
			/* the kernel merges consecutive completions and keeps the first one's flag, so in a
			 * stream that mixes copied and zero-copy sends this count is approximate; on one path
			 * (every send copied, or none) it is exact */
			if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				c->zc_copied += range;
			got++;
		}
	}
}

static int mss; /* -M: TCP_MAXSEG, 0 = the kernel's */

static void set_mss(int fd)
{
	if (mss > 0 && setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)))
		die("setsockopt TCP_MAXSEG");
}

static int run_client(const char *ip, int port, const char *mode, double secs, double warmup, size_t chunk)
{
	int zerocopy = !strcmp(mode, "zerocopy"), use_sendfile = !strcmp(mode, "sendfile");
	if (!zerocopy && !use_sendfile && strcmp(mode, "copy"))
		usage();
	unsigned char *ring = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < RING_BYTES; i++)
		ring[i] = (unsigned char)(i * 2654435761u >> 24);
	int memfd = -1;
	if (use_sendfile) {
		memfd = memfd_create("zcflow", 0);
		if (memfd < 0)
			die("memfd_create");
		for (size_t off = 0; off < RING_BYTES;) {
			ssize_t w = write(memfd, ring + off, RING_BYTES - off);
			if (w <= 0)
				die("write memfd");
			off += w;
		}
	}
	socklen_t len;
	struct sockaddr_storage a = address(ip, port, &len);
	int fd = socket(a.ss_family, SOCK_STREAM, 0), on = 1;
	if (fd < 0)
		die("socket");
	if (zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &on, sizeof(on)))
		die("setsockopt SO_ZEROCOPY");
	set_mss(fd);
	if (connect(fd, (struct sockaddr *)&a, len))
		die("connect");
	struct counts c = {.window_start = warmup, .window_end = warmup + secs, .t0 = now()};
	size_t off = 0;
	while (now() - c.t0 < warmup + secs) {
		ssize_t n;
		if (use_sendfile) {
			off_t pos = off;
			n = sendfile(fd, memfd, &pos, chunk);
		} else {
			n = send(fd, ring + off, chunk, zerocopy ? MSG_ZEROCOPY : 0);
		}
		if (n < 0 && errno == ENOBUFS && zerocopy) { /* too many pinned sends: wait for completions */
			c.enobufs++;
			struct pollfd p = {.fd = fd, .events = 0};
			poll(&p, 1, 100);
			completions(fd, &c);
			continue;
		}
		if (n < 0)
			die(use_sendfile ? "sendfile" : "send");
		if (zerocopy) {
			c.zc_sends++;
			completions(fd, &c);
		}
		account(&c, n, 0);
		off = (off + chunk) % RING_BYTES;
	}
	if (c.in_window)
		account(&c, 0, 0);
	for (double until = now() + 2; zerocopy && c.zc_completed < c.zc_sends && now() < until;) {
		struct pollfd p = {.fd = fd, .events = 0};
		poll(&p, 1, 50);
		completions(fd, &c);
	}
	report(&c, "sender", mode, -1);
	close(fd);
	return 0;
}

static int run_server(const char *ip, int port, const char *mode, double secs, double warmup, size_t chunk)
{
	int use_mmap = !strcmp(mode, "mmap");
	if (!use_mmap && strcmp(mode, "copy"))
		usage();
	socklen_t len;
	struct sockaddr_storage a = address(ip, port, &len);
	int ls = socket(a.ss_family, SOCK_STREAM, 0), on = 1;
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	set_mss(ls); /* inherited by the accepted socket: the MSS it advertises */
	if (bind(ls, (struct sockaddr *)&a, len) || listen(ls, 1))
		die("bind/listen");
	int fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(ls);
	unsigned char *buf = malloc(chunk);
	unsigned char *map = NULL;
	if (!buf)
		die("malloc");
	if (use_mmap) {
		map = mmap(NULL, chunk, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			die("mmap of the socket (TCP_ZEROCOPY_RECEIVE unsupported?)");
	}
	/* the window on this side's clock, from the accept (the client's starts at its connect) */
	struct counts c = {.window_start = warmup, .window_end = secs > 0 ? warmup + secs : 1e18, .t0 = now()};
	for (;;) {
		if (use_mmap) {
			struct tcp_zerocopy_receive zc;
			socklen_t zc_len = sizeof(zc);
			struct pollfd p = {.fd = fd, .events = POLLIN};
			poll(&p, 1, 10000);
			memset(&zc, 0, sizeof(zc));
			zc.address = (uint64_t)(uintptr_t)map;
			zc.length = chunk;
			if (getsockopt(fd, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, &zc, &zc_len)) {
				if (errno == EIO) /* the kernel's end of stream: nothing queued, peer done */
					break;
				die("getsockopt TCP_ZEROCOPY_RECEIVE");
			}
			if (zc.err) {
				errno = zc.err;
				die("TCP_ZEROCOPY_RECEIVE");
			}
			if (zc.length) {
				madvise(map, zc.length, MADV_DONTNEED); /* unmap now, as tcp_mmap.c advises */
				account(&c, zc.length, zc.length);
			}
			if (zc.recv_skip_hint) {
				ssize_t n = recv(fd, buf, zc.recv_skip_hint < chunk ? zc.recv_skip_hint : chunk, 0);
				if (n < 0)
					die("recv");
				if (n == 0)
					break;
				account(&c, n, 0);
			} else if (!zc.length) {
				/* nothing mappable nor a skip hint: end of stream or an empty queue */
				ssize_t n = recv(fd, buf, chunk, MSG_DONTWAIT);
				if (n == 0)
					break;
				if (n > 0)
					account(&c, n, 0);
				else if (errno != EAGAIN && errno != EWOULDBLOCK)
					die("recv");
			}
		} else {
			ssize_t n = recv(fd, buf, chunk, 0);
			if (n < 0)
				die("recv");
			if (n == 0)
				break;
			account(&c, n, 0);
		}
	}
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	report(&c, "receiver", mode, getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) ? -1 : (int)ti.tcpi_rcv_mss);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *server_ip = NULL, *bind_ip = NULL, *mode = "copy";
	int port = 0, cpu = -1, opt;
	double secs = 0, warmup = 0;
	size_t chunk = 256 * 1024;
	while ((opt = getopt(argc, argv, "sB:c:p:m:t:O:C:l:M:")) != -1) {
		switch (opt) {
		case 's': break;
		case 'B': bind_ip = optarg; break;
		case 'c': server_ip = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'O': warmup = atof(optarg); break;
		case 'C': cpu = atoi(optarg); break;
		case 'l': chunk = strtoul(optarg, NULL, 10); break;
		case 'M': mss = atoi(optarg); break;
		default: usage();
		}
	}
	/* chunks divide the ring, so a send never runs past its end */
	if (port <= 0 || port > 65535 || chunk < 4096 || chunk > RING_BYTES || RING_BYTES % chunk || !(server_ip || bind_ip)
	    || mss < 0 || mss > 65535)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN); /* a receiver that died: EPIPE, named by die(), not a silent kill */
	pin(cpu);
	if (server_ip) {
		if (secs <= 0)
			usage();
		return run_client(server_ip, port, mode, secs, warmup, chunk);
	}
	return run_server(bind_ip, port, mode, secs, warmup, chunk);
}
