/* bigtcp: read or set a link's GSO/GRO size limits over rtnetlink, IPv4 ones included.
 *
 * BIG TCP (Linux 5.19 for IPv6, 6.3 for IPv4) lets GSO and GRO build packets above 64 KB. IPv6
 * takes gso_max_size/gro_max_size, which iproute2 sets; IPv4 takes gso_ipv4_max_size and
 * gro_ipv4_max_size (IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE), which iproute2 before 6.3
 * neither shows nor sets. This tool does both, one netlink request each.
 *
 * Usage: bigtcp show DEV
 *        bigtcp set DEV ATTR VALUE [ATTR VALUE ...]
 * ATTR: gso_max_size gro_max_size gso_ipv4_max_size gro_ipv4_max_size
 * show prints one line, "bigtcp dev=DEV tso_max_size=N gso_max_size=N ...", an attribute the
 * kernel does not report as =unsupported. Exit 1: the kernel refused (its error named); 2: usage.
 */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* uapi numbers (include/uapi/linux/if_link.h), for headers older than the kernel */
enum { A_GSO_MAX_SIZE = 41, A_GRO_MAX_SIZE = 58, A_TSO_MAX_SIZE = 59, A_GSO_IPV4_MAX_SIZE = 63,
       A_GRO_IPV4_MAX_SIZE = 64 };

static const struct { const char *name; int type; int settable; } ATTRS[] = {
	{"tso_max_size", A_TSO_MAX_SIZE, 0},       {"gso_max_size", A_GSO_MAX_SIZE, 1},
	{"gro_max_size", A_GRO_MAX_SIZE, 1},       {"gso_ipv4_max_size", A_GSO_IPV4_MAX_SIZE, 1},
	{"gro_ipv4_max_size", A_GRO_IPV4_MAX_SIZE, 1},
};
#define NATTRS (sizeof(ATTRS) / sizeof(ATTRS[0]))

struct request {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char attrs[256];
};

static void usage(void)
{
	fprintf(stderr, "usage: bigtcp show DEV\n"
			"       bigtcp set DEV ATTR VALUE [ATTR VALUE ...]\n"
			"ATTR: gso_max_size gro_max_size gso_ipv4_max_size gro_ipv4_max_size\n");
	exit(2);
}

static void add_u32(struct request *r, int type, uint32_t value)
{
	struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(sizeof(value));
	memcpy(RTA_DATA(a), &value, sizeof(value));
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Send the request; read the answer into buf. Returns the answer's length; exits on an error. */
static int talk(struct request *r, char *buf, int size, const char *dev)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		fprintf(stderr, "bigtcp: netlink socket: %s\n", strerror(errno));
		exit(1);
	}
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	if (sendto(fd, r, r->nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		fprintf(stderr, "bigtcp: netlink send: %s\n", strerror(errno));
		exit(1);
	}
	int n = recv(fd, buf, size, 0);
	close(fd);
	if (n < 0) {
		fprintf(stderr, "bigtcp: netlink receive: %s\n", strerror(errno));
		exit(1);
	}
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (!NLMSG_OK(h, (unsigned)n)) {
		fprintf(stderr, "bigtcp: a truncated netlink answer\n");
		exit(1);
	}
	if (h->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(h);
		if (e->error) {
			fprintf(stderr, "bigtcp: %s: the kernel refused: %s\n", dev, strerror(-e->error));
			exit(1);
		}
	}
	return n;
}

static void init(struct request *r, int type, int flags, int ifindex)
{
	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	r->nh.nlmsg_type = type;
	r->nh.nlmsg_flags = NLM_F_REQUEST | flags;
	r->ifi.ifi_family = AF_UNSPEC;
	r->ifi.ifi_index = ifindex;
}

static int show(const char *dev, int ifindex)
{
	struct request r;
	static char buf[65536];
	init(&r, RTM_GETLINK, 0, ifindex);
	int n = talk(&r, buf, sizeof(buf), dev);
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (h->nlmsg_type != RTM_NEWLINK) {
		fprintf(stderr, "bigtcp: %s: unexpected netlink answer type %d\n", dev, h->nlmsg_type);
		return 1;
	}
	long long value[NATTRS];
	for (unsigned i = 0; i < NATTRS; i++)
		value[i] = -1;
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	(void)n;
	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
		for (unsigned i = 0; i < NATTRS; i++)
			if (a->rta_type == ATTRS[i].type && RTA_PAYLOAD(a) == sizeof(uint32_t))
				value[i] = *(uint32_t *)RTA_DATA(a);
	printf("bigtcp dev=%s", dev);
	for (unsigned i = 0; i < NATTRS; i++) {
		if (value[i] < 0)
			printf(" %s=unsupported", ATTRS[i].name);
		else
			printf(" %s=%lld", ATTRS[i].name, value[i]);
	}
	printf("\n");
	return 0;
}

static int set(const char *dev, int ifindex, int argc, char **argv)
{
	struct request r;
	char buf[4096];
	if (argc < 2 || argc % 2 || argc / 2 > (int)NATTRS) /* each attribute once at most: attrs[] holds them */
		usage();
	init(&r, RTM_NEWLINK, NLM_F_ACK, ifindex);
	for (int k = 0; k < argc; k += 2) {
		unsigned i;
		for (i = 0; i < NATTRS; i++)
			if (ATTRS[i].settable && !strcmp(argv[k], ATTRS[i].name))
				break;
		char *end;
		unsigned long v = strtoul(argv[k + 1], &end, 10);
		if (i == NATTRS || *end || !*argv[k + 1] || v > 0xffffffffUL) {
			fprintf(stderr, "bigtcp: %s %s: not a settable attribute and a byte count\n", argv[k], argv[k + 1]);
			usage();
		}
		add_u32(&r, ATTRS[i].type, (uint32_t)v);
	}
	talk(&r, buf, sizeof(buf), dev);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	unsigned ifindex = if_nametoindex(argv[2]);
	int is_show = !strcmp(argv[1], "show"), is_set = !strcmp(argv[1], "set");
	if (!is_show && !is_set)
		usage();
	if (!ifindex) {
		fprintf(stderr, "bigtcp: %s: no such device\n", argv[2]);
		return 1;
	}
	return is_show ? show(argv[2], ifindex) : set(argv[2], ifindex, argc - 3, argv + 3);
}
