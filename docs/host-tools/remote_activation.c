// What a waker pays to activate a task on another CPU, with and without an IPI.
// A waker on CPU W (SCHED_OTHER, spinning between wakeups, as calibrate's waker does for gaps
// under 100 us) wakes a task blocked in futex_wait on CPU T, GAP ns after it last blocked; the
// waker's clock_gettime + futex_wake time is recorded (as calibrate's waker_* primitives), and
// CPU T's "Function call interrupts" (CAL) and "Rescheduling interrupts" (RES) are counted from
// /proc/interrupts around each case. Cases (what CPU T runs while the wakee sleeps):
//   idle   nothing: ttwu_queue_wakelist (the target rq has nr_running 0), IPI unless polling
//   sidle  a SCHED_IDLE spinner, wakee SCHED_OTHER: remote rq lock, enqueue, resched_curr (IPI)
//   nopre  a SCHED_OTHER spinner, wakee SCHED_BATCH: remote rq lock, enqueue, and
//          check_preempt_wakeup_fair returns at "p->policy != SCHED_NORMAL": no resched, no IPI.
//          The spinner sched_yield()s only after the waker has stopped its clock, so the wakee
//          runs without waiting for the tick.
//   local  waker and wakee (both SCHED_BATCH) on CPU W, the wakee blocked: calibrate's
//          futex_wake_local (a BATCH wakee never preempts), for the same-run difference.
// Rounds alternate the cases (ABCD ABCD ...) so that load from other tasks hits all alike.
// Usage: remote_activation W T ROUNDS N_PER_ROUND [GAP_NS [CASES]]   (prints per-round medians, then the
// median of the round medians and IPIs per wakeup)
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); if (pthread_setaffinity_np(pthread_self(), sizeof s, &s)) { perror("affinity"); exit(1); } }
static void policy(int p) { struct sched_param sp = {0}; if (sched_setscheduler(0, p, &sp)) { perror("sched_setscheduler"); exit(1); } }
static long fwait(atomic_uint *w, unsigned v) { return syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, 0, 0, 0); }
static long fwake(atomic_uint *w) { return syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0); }

// Each word on its own line.
static struct { _Alignas(64) atomic_uint seq; _Alignas(64) atomic_uint ready; _Alignas(64) atomic_uint kick; _Alignas(64) atomic_uint stop; } sh;
static int W, T, N; static long long GAP;
enum { IDLE, SIDLE, NOPRE, LOCAL, NCASE };
static long missed[NCASE];
static const char *names[NCASE] = {"idle", "sidle", "nopre", "local"};

static void irq_counts(int cpu, long long *cal, long long *res) {
  FILE *f = fopen("/proc/interrupts", "r"); char line[4096]; *cal = *res = -1;
  while (f && fgets(line, sizeof line, f)) {
    char *p = line; while (*p == ' ') p++;
    long long *dst = !strncmp(p, "CAL:", 4) ? cal : !strncmp(p, "RES:", 4) ? res : 0;
    if (!dst) continue;
    p += 4; for (int c = 0; c <= cpu; c++) { long long v = strtoll(p, &p, 10); if (c == cpu) *dst = v; }
  }
  if (f) fclose(f);
}

struct wakee_arg { int cpu, pol; };
static void *wakee(void *a) {
  struct wakee_arg *x = a; pin(x->cpu); policy(x->pol);
  for (unsigned i = 0; i < (unsigned)N; i++) {
    atomic_store(&sh.ready, i + 1);
    while (atomic_load(&sh.seq) == i) fwait(&sh.seq, i);
  }
  atomic_store(&sh.ready, N + 1);
  return 0;
}
struct spin_arg { int pol, yield; };
static void *spinner(void *a) {
  struct spin_arg *x = a; pin(T); policy(x->pol);
  while (!atomic_load_explicit(&sh.stop, memory_order_relaxed)) {
    // yield while the waker has kicked and the wakee has not yet come back
    if (x->yield && atomic_load(&sh.kick) >= atomic_load(&sh.ready)) sched_yield();
  }
  return 0;
}

static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; }

// One case: returns the median waker time; adds IPIs seen on the target.
static double run_case(int c, long long *cal, long long *res) {
  pthread_t wk, sp = 0; struct wakee_arg wa; struct spin_arg sa = {0, 0};
  atomic_store(&sh.seq, 0); atomic_store(&sh.ready, 0); atomic_store(&sh.kick, 0); atomic_store(&sh.stop, 0);
  int target = c == LOCAL ? W : T;
  wa.cpu = target; wa.pol = (c == NOPRE || c == LOCAL) ? SCHED_BATCH : SCHED_OTHER;
  if (c == SIDLE) { sa.pol = SCHED_IDLE; pthread_create(&sp, 0, spinner, &sa); }
  if (c == NOPRE) { sa.pol = SCHED_OTHER; sa.yield = 1; pthread_create(&sp, 0, spinner, &sa); }
  pthread_create(&wk, 0, wakee, &wa);
  double *v = malloc(N * sizeof *v); int n = 0;
  if (c == LOCAL) policy(SCHED_BATCH);
  long long c0, r0, c1, r1; irq_counts(target, &c0, &r0);
  for (unsigned i = 0; i < (unsigned)N; i++) {
    while (atomic_load(&sh.ready) != i + 1) { if (c == LOCAL) sched_yield(); }
    if (c == LOCAL) {
      // the wakee stored ready and is about to block: let it (same CPU)
      for (int k = 0; k < 4; k++) sched_yield();
    } else { long long until = now() + GAP; while (now() < until) ; }
    long long t0 = now();
    atomic_store(&sh.seq, i + 1);
    long woke = fwake(&sh.seq);
    long long t1 = now();
    if (woke == 1) v[n++] = t1 - t0; else missed[c]++;
    atomic_store(&sh.kick, i + 1);
  }
  while (atomic_load(&sh.ready) != (unsigned)N + 1) if (c == LOCAL) sched_yield();
  irq_counts(target, &c1, &r1);
  atomic_store(&sh.stop, 1);
  pthread_join(wk, 0); if (sp) pthread_join(sp, 0);
  if (c == LOCAL) policy(SCHED_OTHER);
  *cal += c1 - c0; *res += r1 - r0;
  double m = n ? median(v, n) : 0; free(v); return m;
}

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: %s W T ROUNDS N [GAP_NS]\n", argv[0]); return 2; }
  W = atoi(argv[1]); T = atoi(argv[2]); int rounds = atoi(argv[3]); N = atoi(argv[4]);
  GAP = argc > 5 ? atoll(argv[5]) : 50000;
  const char *only = argc > 6 ? argv[6] : 0; // run only the cases named here (e.g. "nopre,local")
  pin(W);
  double med[NCASE][64]; long long cal[NCASE] = {0}, res[NCASE] = {0};
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++) {
    printf("round %d:", r);
    for (int c = 0; c < NCASE; c++) { if (only && !strstr(only, names[c])) { med[c][r] = 0; continue; } med[c][r] = run_case(c, &cal[c], &res[c]); printf(" %s %.0f", names[c], med[c][r]); }
    printf("\n"); fflush(stdout);
  }
  for (int c = 0; c < NCASE; c++) {
    double lo = 1e18, hi = 0; for (int r = 0; r < rounds; r++) { if (med[c][r] < lo) lo = med[c][r]; if (med[c][r] > hi) hi = med[c][r]; }
    double m = median(med[c], rounds);
    printf("%-6s waker ns: median of round medians %.0f (range %.0f-%.0f); per wakeup on CPU %d: CAL %.2f RES %.2f; futex_wake found no waiter %ld times\n",
           names[c], m, lo, hi, c == LOCAL ? W : T, (double)cal[c] / (rounds * N), (double)res[c] / (rounds * N), missed[c]);
  }
  return 0;
}
