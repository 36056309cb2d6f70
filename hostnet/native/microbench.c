/* microbench: per-operation costs the time-budget notebook sets against the per-packet budget.
 *
 *   microbench BENCH [--iterations N] [--cpu C]
 *
 * BENCH is one of:
 *   atomic        a LOCK-prefixed atomic add (__atomic_fetch_add, seq_cst)
 *   cmpxchg       a LOCK-prefixed compare-and-exchange that succeeds
 *   spinlock      lock + unlock of an uncontended test-and-set spinlock (one CPU)
 *   malloc        malloc + free of a 256-byte object, the same one reused (allocator fast path)
 *   malloc256     256 mallocs then 256 frees of 256-byte objects, per alloc+free pair
 *                 (N rounded up to a multiple of 256; the output line gives the N run)
 *   skballoc      an skb-like pair: a 256-byte head (zeroed, as the kernel zeroes an skb)
 *                 and a 2048-byte data buffer, allocated and freed
 *   syscall       getppid() through syscall(2): a minimal system call
 *   idlespin      1000 volatile increments at SCHED_IDLE priority: it runs only when nothing else
 *                 wants the CPU, so its ns_per_op against an idle CPU's says what share of the CPU
 *                 other work took, without the kernel's CPU time accounting (bench/, benchmark 3)
 * One line on stdout: "microbench bench=atomic iterations=... total_ns=... ns_per_op=..."
 * Argument errors exit 2 with "microbench: ..." on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "microbench: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "usage: microbench atomic|cmpxchg|spinlock|malloc|malloc256|skballoc|syscall|idlespin "
                    "[--iterations N] [--cpu C]\n");
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

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Results go through a volatile sink so the compiler cannot drop the loops. */
static volatile uintptr_t sink;
static long counter;
static int lock_word;

static void bench_atomic(long n)
{
    for (long i = 0; i < n; i++)
        __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
    sink = (uintptr_t)counter;
}

static void bench_cmpxchg(long n)
{
    for (long i = 0; i < n; i++) {
        long expected = counter;
        __atomic_compare_exchange_n(&counter, &expected, expected + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
    sink = (uintptr_t)counter;
}

static void bench_spinlock(long n)
{
    for (long i = 0; i < n; i++) {
        while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
            ;
        counter++;
        __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
    }
    sink = (uintptr_t)counter;
}

static void bench_malloc(long n)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(256);
        p[0] = (char)i;
        sink = (uintptr_t)p;
        free(p);
    }
}

static void bench_malloc256(long n)
{
    void *ptrs[256];
    for (long i = 0; i < n; i += 256) {
        for (int j = 0; j < 256; j++) {
            ptrs[j] = malloc(256);
            ((char *)ptrs[j])[0] = (char)j;
        }
        sink = (uintptr_t)ptrs[255];
        for (int j = 0; j < 256; j++)
            free(ptrs[j]);
    }
}

static void bench_skballoc(long n)
{
    for (long i = 0; i < n; i++) {
        char *head = malloc(256);
        char *data = malloc(2048);
        memset(head, 0, 256);
        data[0] = (char)i;
        sink = (uintptr_t)head ^ (uintptr_t)data;
        free(data);
        free(head);
    }
}

static void bench_syscall(long n)
{
    for (long i = 0; i < n; i++)
        sink = (uintptr_t)syscall(SYS_getppid);
}

static void bench_idlespin(long n)
{
    static int idle_class;
    if (!idle_class) {  /* once, before the warm-up: the timed run is SCHED_IDLE throughout */
        struct sched_param p = {0};
        if (sched_setscheduler(0, SCHED_IDLE, &p) < 0) {
            fprintf(stderr, "microbench: sched_setscheduler(SCHED_IDLE): %s\n", strerror(errno));
            exit(1);
        }
        idle_class = 1;
    }
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 1000; k++)
            sink++;
}

static const struct {
    const char *name;
    void (*fn)(long);
    long default_iterations;
    long unit; /* fn(n) runs whole multiples of this many operations */
} benches[] = {
    {"atomic", bench_atomic, 50000000, 1},     {"cmpxchg", bench_cmpxchg, 50000000, 1},
    {"spinlock", bench_spinlock, 50000000, 1}, {"malloc", bench_malloc, 20000000, 1},
    {"malloc256", bench_malloc256, 10000000, 256}, {"skballoc", bench_skballoc, 10000000, 1},
    {"syscall", bench_syscall, 2000000, 1},    {"idlespin", bench_idlespin, 4000000, 1},
};

int main(int argc, char **argv)
{
    if (argc < 2)
        usage_error("missing benchmark name", NULL);
    int which = -1;
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
        if (!strcmp(argv[1], benches[i].name))
            which = (int)i;
    if (which < 0)
        usage_error("unknown benchmark", argv[1]);
    long n = benches[which].default_iterations, cpu = -1;
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage_error("option needs a value", argv[i]);
        if (!strcmp(argv[i], "--iterations"))
            n = parse_long(argv[i + 1], 256, 1000000000L, "--iterations");
        else if (!strcmp(argv[i], "--cpu"))
            cpu = parse_long(argv[i + 1], 0, CPU_SETSIZE - 1, "--cpu");
        else
            usage_error("unknown option", argv[i]);
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0) {
            fprintf(stderr, "microbench: sched_setaffinity: %s\n", strerror(errno));
            return 1;
        }
    }
    /* round up to what fn actually runs, so ns_per_op divides by the operations timed */
    long unit = benches[which].unit;
    n = (n + unit - 1) / unit * unit;
    benches[which].fn(n / 100);  /* warm caches and the allocator's free lists */
    int64_t t0 = now_ns();
    benches[which].fn(n);
    int64_t dt = now_ns() - t0;
    printf("microbench bench=%s iterations=%ld total_ns=%lld ns_per_op=%.3f\n", benches[which].name, n,
           (long long)dt, (double)dt / (double)n);
    return 0;
}
