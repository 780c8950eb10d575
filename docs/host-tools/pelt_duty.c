// pelt_duty.c - duty-cycle task pinned to CPU 1, sampled from CPU 0 via /proc/PID/sched.
// build: gcc -O2 -o pelt_duty pelt_duty.c
// usage: ./pelt_duty RUN_MS SLEEP_MS [SETTLE_MS=1000] [SAMPLE_MS=1000] [INTERVAL_US=1000]
// output: one line per sample: t_ms state util_avg load_avg runnable_avg util_est last_update_time
//   state: 1 = worker in busy phase, 0 = worker in sleep phase (as announced by the worker itself)
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static void sleep_until(long long t) {
    struct timespec ts = { t / 1000000000LL, t % 1000000000LL };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) ;
}
static void pin(int cpu) {
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) { perror("sched_setaffinity"); exit(1); }
}
static long long field(const char *buf, const char *name) {
    const char *p = strstr(buf, name);
    if (!p) return -1;
    p = strchr(p, ':');
    return p ? atoll(p + 1) : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s RUN_MS SLEEP_MS [SETTLE_MS] [SAMPLE_MS] [INTERVAL_US]\n", argv[0]); return 1; }
    long long run = atoll(argv[1]) * 1000000LL, slp = atoll(argv[2]) * 1000000LL;
    long long settle = (argc > 3 ? atoll(argv[3]) : 1000) * 1000000LL;
    long long span = (argc > 4 ? atoll(argv[4]) : 1000) * 1000000LL;
    long long ivl = (argc > 5 ? atoll(argv[5]) : 1000) * 1000LL;
    volatile int *state = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    pid_t pid = fork();
    if (pid == 0) {                       /* worker: CPU 1, absolute-period duty cycle */
        pin(1);
        long long t = now_ns();
        for (;;) {
            *state = 1;
            while (now_ns() < t + run) ;
            *state = 0;
            sleep_until(t + run + slp);
            t += run + slp;
        }
    }
    pin(0);                               /* sampler: CPU 0 */
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/sched", pid);
    sleep_until(now_ns() + settle);
    long long t0 = now_ns(), t = t0;
    while (t - t0 < span) {
        FILE *f = fopen(path, "r");
        size_t n = fread(buf, 1, sizeof buf - 1, f); buf[n] = 0; fclose(f);
        int st = *state;
        printf("%.3f %d %lld %lld %lld %lld %lld\n", (now_ns() - t0) / 1e6, st,
               field(buf, "se.avg.util_avg"), field(buf, "se.avg.load_avg"),
               field(buf, "se.avg.runnable_avg"), field(buf, "se.avg.util_est"),
               field(buf, "se.avg.last_update_time"));
        t += ivl; sleep_until(t);
    }
    kill(pid, SIGKILL);
    return 0;
}
