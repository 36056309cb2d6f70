/* udpbatch: UDP packets per second with one packet per system call or batches of them
 * (sendmmsg / recvmmsg), for hostnet's time-budget notebook.
 *
 *   udpbatch send --dst IP --port N --batch B --size BYTES --seconds S [--warmup S] [--cpu C]
 *   udpbatch recv --bind IP --port N --batch B --seconds S [--warmup S] [--cpu C] [--wait S]
 *
 * batch 1 uses send()/recv(), the one-packet-per-call baseline; batch > 1 uses
 * sendmmsg()/recvmmsg() (MSG_WAITFORONE: the receiver takes what is queued). Only the window
 * after the warm-up is counted: the sender from its own start, the receiver from its first packet.
 * One result line on stdout:
 *   udpbatch role=send batch=32 size=64 packets=... calls=... errors=... window_ns=... cpu_ns=...
 * Argument errors exit 2 with "udpbatch: ..." on stderr; runtime errors exit 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 1024
#define MAX_SIZE 65507

struct opts {
    const char *role, *addr;
    long port, batch, size, cpu;
    double seconds, warmup, wait;
};

static void usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "udpbatch: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "usage: udpbatch send --dst IP --port N --batch B --size BYTES --seconds S "
                    "[--warmup S] [--cpu C]\n"
                    "       udpbatch recv --bind IP --port N --batch B --seconds S [--warmup S] "
                    "[--cpu C] [--wait S]\n");
    exit(2);
}

static long parse_long(const char *s, long lo, long hi, const char *name)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < lo || v > hi) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s must be an integer in %ld..%ld", name, lo, hi);
        usage_error(buf, s);
    }
    return v;
}

static double parse_seconds(const char *s, const char *name)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *s == '\0' || *end != '\0' || !(v >= 0 && v <= 3600)) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s must be a number of seconds in 0..3600", name);
        usage_error(buf, s);
    }
    return v;
}

static struct opts parse_args(int argc, char **argv)
{
    struct opts o = {.port = -1, .batch = -1, .size = -1, .cpu = -1, .seconds = -1, .warmup = 0, .wait = 5};
    if (argc < 2)
        usage_error("missing role (send or recv)", NULL);
    o.role = argv[1];
    int send = strcmp(o.role, "send") == 0;
    if (!send && strcmp(o.role, "recv") != 0)
        usage_error("role must be send or recv", o.role);
    for (int i = 2; i < argc; i += 2) {
        const char *k = argv[i];
        if (i + 1 >= argc)
            usage_error("option needs a value", k);
        const char *v = argv[i + 1];
        if ((send && !strcmp(k, "--dst")) || (!send && !strcmp(k, "--bind")))
            o.addr = v;
        else if (!strcmp(k, "--port"))
            o.port = parse_long(v, 1, 65535, "--port");
        else if (!strcmp(k, "--batch"))
            o.batch = parse_long(v, 1, MAX_BATCH, "--batch");
        else if (send && !strcmp(k, "--size"))
            o.size = parse_long(v, 1, MAX_SIZE, "--size");
        else if (!strcmp(k, "--cpu"))
            o.cpu = parse_long(v, 0, CPU_SETSIZE - 1, "--cpu");
        else if (!strcmp(k, "--seconds"))
            o.seconds = parse_seconds(v, "--seconds");
        else if (!strcmp(k, "--warmup"))
            o.warmup = parse_seconds(v, "--warmup");
        else if (!send && !strcmp(k, "--wait"))
            o.wait = parse_seconds(v, "--wait");
        else
            usage_error("unknown option", k);
    }
    if (!o.addr)
        usage_error(send ? "--dst is required" : "--bind is required", NULL);
    if (o.port < 0 || o.batch < 0 || o.seconds <= 0 || (send && o.size < 0))
        usage_error(send ? "--port, --batch, --size and --seconds (> 0) are required"
                         : "--port, --batch and --seconds (> 0) are required", NULL);
    return o;
}

static int64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "udpbatch: %s: %s\n", what, strerror(errno));
    exit(1);
}

static struct sockaddr_in address(const char *ip, long port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        usage_error("not an IPv4 address", ip);
    return sa;
}

static struct mmsghdr msgs[MAX_BATCH];
static struct iovec iovs[MAX_BATCH];

static void setup_batch(char *buf, long batch, long size)
{
    for (long i = 0; i < batch; i++) {
        iovs[i].iov_base = buf + i * size;
        iovs[i].iov_len = (size_t)size;
        msgs[i].msg_hdr = (struct msghdr){.msg_iov = &iovs[i], .msg_iovlen = 1};
    }
}

static void report(const struct opts *o, long size, long long packets, long long calls, long long errors,
                   int64_t window_ns, int64_t cpu_ns)
{
    printf("udpbatch role=%s batch=%ld size=%ld packets=%lld calls=%lld errors=%lld window_ns=%lld "
           "cpu_ns=%lld\n", o->role, o->batch, size, packets, calls, errors, (long long)window_ns,
           (long long)cpu_ns);
}

static int run_send(const struct opts *o)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in sa = address(o->addr, o->port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("connect");
    char *buf = calloc((size_t)o->batch, (size_t)o->size);
    if (!buf)
        die("calloc");
    setup_batch(buf, o->batch, o->size);
    int64_t start = now_ns(CLOCK_MONOTONIC);
    int64_t win_start = start + (int64_t)(o->warmup * 1e9), win_end = win_start + (int64_t)(o->seconds * 1e9);
    int64_t cpu0 = 0, t = start;
    long long packets = 0, calls = 0, errors = 0;
    int counting = 0;
    while (t < win_end) {
        int n;
        if (o->batch == 1)
            n = send(fd, buf, (size_t)o->size, 0) < 0 ? -1 : 1;
        else
            n = sendmmsg(fd, msgs, (unsigned)o->batch, 0);
        t = now_ns(CLOCK_MONOTONIC);
        if (!counting && t >= win_start) {  /* the window opens: reset the counters */
            counting = 1;
            packets = calls = errors = 0;
            win_start = t;
            cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
            continue;
        }
        calls++;
        if (n < 0) {
            if (errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED)
                die("send");
            errors++;
        } else {
            packets += n;
        }
    }
    report(o, o->size, packets, calls, errors, t - win_start, now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
    return 0;
}

static int run_recv(const struct opts *o)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in sa = address(o->addr, o->port);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("bind");
    /* a timeout lets the loop notice the end of the window when the sender has stopped */
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        die("setsockopt");
    long slot = MAX_SIZE;
    char *buf = malloc((size_t)o->batch * (size_t)slot);
    if (!buf)
        die("malloc");
    setup_batch(buf, o->batch, slot);
    int64_t deadline = now_ns(CLOCK_MONOTONIC) + (int64_t)(o->wait * 1e9);
    long long packets = 0, calls = 0, bytes = 0;
    long size = 0;
    for (;;) {  /* the first packet starts the clock */
        ssize_t r = recv(fd, buf, (size_t)slot, 0);
        if (r >= 0) {
            size = (long)r;
            break;
        }
        if (errno != EAGAIN && errno != EINTR)
            die("recv");
        if (now_ns(CLOCK_MONOTONIC) > deadline) {
            fprintf(stderr, "udpbatch: no packet within %.1f s\n", o->wait);
            return 1;
        }
    }
    int64_t win_start = now_ns(CLOCK_MONOTONIC) + (int64_t)(o->warmup * 1e9);
    int64_t win_end = win_start + (int64_t)(o->seconds * 1e9), t = now_ns(CLOCK_MONOTONIC), cpu0 = 0;
    int counting = 0;
    while (t < win_end) {
        int n;
        if (o->batch == 1) {
            ssize_t r = recv(fd, buf, (size_t)slot, 0);
            n = r < 0 ? -1 : 1;
            if (r >= 0)
                bytes += r;
        } else {
            /* wait for one packet, then take what is queued, up to the batch */
            n = recvmmsg(fd, msgs, (unsigned)o->batch, MSG_WAITFORONE, NULL);
            for (int i = 0; i < n; i++)
                bytes += msgs[i].msg_len;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            die("recvmmsg");
        t = now_ns(CLOCK_MONOTONIC);
        if (!counting && t >= win_start) {
            counting = 1;
            packets = calls = bytes = 0;
            win_start = t;
            cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
            continue;
        }
        if (n > 0) {
            calls++;
            packets += n;
        }
    }
    if (!counting) {
        fprintf(stderr, "udpbatch: the window never opened\n");
        return 1;
    }
    report(o, size, packets, calls, 0, t - win_start, now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = parse_args(argc, argv);
    if (o.cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)o.cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            die("sched_setaffinity");
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    return strcmp(o.role, "send") == 0 ? run_send(&o) : run_recv(&o);
}
