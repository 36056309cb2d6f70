// SPDX-License-Identifier: GPL-2.0
/*
 * rxload: traffic for the rx_prof boot test, over loopback inside the guest.
 *   rxload tcp PORT BYTES       one TCP flow, 64 KiB writes and reads
 *   rxload udp PORT COUNT SIZE  COUNT datagrams, counted by the receiver
 *   rxload lo-offloads-off      TSO and GSO off on lo (ethtool ioctl)
 * Built static, because the initramfs holds only busybox.
 */
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static struct sockaddr_in lo_addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int tcp(int port, long long bytes)
{
	static char buf[65536];
	struct sockaddr_in a = lo_addr(port);
	int one = 1, ls, s, status;
	long long got = 0;
	double t0;
	pid_t pid;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (void *)&a, sizeof(a)) || listen(ls, 1))
		die("listen");
	pid = fork();
	if (pid == 0) {
		long long sent = 0;

		s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (void *)&a, sizeof(a)))
			die("connect");
		while (sent < bytes) {
			ssize_t n = write(s, buf, bytes - sent < (long long)sizeof(buf) ?
					  bytes - sent : (long long)sizeof(buf));

			if (n <= 0)
				die("write");
			sent += n;
		}
		close(s);
		_exit(0);
	}
	s = accept(ls, NULL, NULL);
	t0 = now();
	for (;;) {
		ssize_t n = read(s, buf, sizeof(buf));

		if (n < 0)
			die("read");
		if (n == 0)
			break;
		got += n;
	}
	waitpid(pid, &status, 0);
	printf("rxload tcp port=%d bytes=%lld seconds=%.3f\n", port, got, now() - t0);
	return got == bytes ? 0 : 1;
}

static int udp(int port, long count, int size)
{
	static char buf[65536];
	struct sockaddr_in a = lo_addr(port);
	struct timeval tv = { .tv_sec = 1 };
	int r = socket(AF_INET, SOCK_DGRAM, 0), rcvbuf = 4 << 20, status;
	long got = 0;
	pid_t pid;

	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(r, (void *)&a, sizeof(a)))
		die("bind");
	pid = fork();
	if (pid == 0) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);

		for (long i = 0; i < count; i++) {
			if (sendto(s, buf, size, 0, (void *)&a, sizeof(a)) != size)
				die("sendto");
			if (i % 32 == 31)	/* let the receiver keep up */
				sched_yield();
		}
		_exit(0);
	}
	while (recv(r, buf, sizeof(buf), 0) > 0)
		got++;
	waitpid(pid, &status, 0);
	printf("rxload udp port=%d sent=%ld received=%ld\n", port, count, got);
	return 0;
}

static int lo_offloads_off(void)
{
	static const int cmds[] = { ETHTOOL_STSO, ETHTOOL_SGSO };
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct ethtool_value v = { .cmd = cmds[i], .data = 0 };
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, "lo");
		ifr.ifr_data = (void *)&v;
		if (ioctl(s, SIOCETHTOOL, &ifr))
			die("SIOCETHTOOL");
	}
	printf("rxload lo tso=off gso=off\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "tcp"))
		return tcp(atoi(argv[2]), atoll(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "udp"))
		return udp(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
	if (argc == 2 && !strcmp(argv[1], "lo-offloads-off"))
		return lo_offloads_off();
	fprintf(stderr, "usage: rxload tcp PORT BYTES | udp PORT COUNT SIZE | lo-offloads-off\n");
	return 2;
}
