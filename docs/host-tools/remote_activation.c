// What a waker pays to activate a task on another CPU, with and without an IPI
// (docs/machines.md, "Rule lock: what the measurements say").
// A waker on CPU W (SCHED_OTHER, spinning between wakeups, as calibrate's waker does for gaps
// under 100 us) wakes a task blocked in futex_wait on CPU T, GAP ns after it last blocked; the
// waker's clock_gettime + futex_wake time is one sample (as calibrate's waker_* primitives).
// Each sample is classed by what happened around it: for the remote cases, whether CPU T's
// "Rescheduling interrupts" (RES) or "Function call interrupts" (CAL) in /proc/interrupts rose
// between just before the gap and the wakee's return; for the local case, whether the waker was
// switched out involuntarily (getrusage ru_nivcsw) inside the timed call.
// Cases (what CPU T runs while the wakee sleeps):
//   idle   nothing: ttwu_queue_wakelist (the target rq has nr_running 0), IPI unless polling
//   sidle  a SCHED_IDLE spinner, wakee SCHED_OTHER: remote rq lock, enqueue, and
//          check_preempt_wakeup_fair preempts the idle-policy curr: resched_curr(_lazy), an IPI
//   nopre  a SCHED_OTHER spinner, wakee SCHED_BATCH: remote rq lock, enqueue; update_curr returns
//          at nr_queued == 1 and check_preempt_wakeup_fair at !normal_policy(p->policy): no
//          resched, no IPI -- as long as nothing else is queued on CPU T. The spinner
//          sched_yield()s only after the waker has stopped its clock, so the wakee runs at once.
//   local  waker and wakee (both SCHED_BATCH) on CPU W, the wakee blocked: calibrate's
//          futex_wake_local (a BATCH wakee never preempts). nopre - local = the remote rq lock.
// Rounds alternate the cases so that load from other tasks hits all alike. Each round first
// measures the W <-> T line transfer (it moves between runs on a guest whose vCPUs the host
// moves), then prints its own nopre - local in ns and in lines.
// Usage: remote_activation W T ROUNDS N_PER_ROUND [GAP_NS [CASES]]   (CASES e.g. "nopre,local")
// Build: gcc -O2 -pthread -o remote_activation remote_activation.c
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); if (pthread_setaffinity_np(pthread_self(), sizeof s, &s)) { perror("affinity"); exit(1); } }
static void policy(int p) { struct sched_param sp = {0}; if (sched_setscheduler(0, p, &sp)) { perror("sched_setscheduler"); exit(1); } }
static long fwait(atomic_uint *w, unsigned v) { return syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, 0, 0, 0); }
static long fwake(atomic_uint *w) { return syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0); }
static long nivcsw(void) { struct rusage u; getrusage(RUSAGE_THREAD, &u); return u.ru_nivcsw; }

// Each word on its own line.
static struct { _Alignas(64) atomic_uint seq; _Alignas(64) atomic_uint ready; _Alignas(64) atomic_uint kick; _Alignas(64) atomic_uint stop; } sh;
static int W, T, N; static long long GAP;
enum { IDLE, SIDLE, NOPRE, LOCAL, NCASE };
static const char *names[NCASE] = {"idle", "sidle", "nopre", "local"};

// CPU cpu's RES + CAL count.
static long long irqs(int cpu) {
  FILE *f = fopen("/proc/interrupts", "r"); char line[4096]; long long sum = 0;
  while (f && fgets(line, sizeof line, f)) {
    char *p = line; while (*p == ' ') p++;
    if (strncmp(p, "CAL:", 4) && strncmp(p, "RES:", 4)) continue;
    p += 4; for (int c = 0; c <= cpu; c++) { long long v = strtoll(p, &p, 10); if (c == cpu) sum += v; }
  }
  if (f) fclose(f);
  return sum;
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

// Samples, pooled over rounds: [case][0] clean (no interrupt / no involuntary switch), [1] not.
static double *samp[NCASE][2]; static int ns[NCASE][2]; static long missed[NCASE];

static void run_case(int c) {
  pthread_t wk, sp = 0; struct wakee_arg wa; struct spin_arg sa = {0, 0};
  atomic_store(&sh.seq, 0); atomic_store(&sh.ready, 0); atomic_store(&sh.kick, 0); atomic_store(&sh.stop, 0);
  int local = c == LOCAL;
  wa.cpu = local ? W : T; wa.pol = (c == NOPRE || local) ? SCHED_BATCH : SCHED_OTHER;
  if (c == SIDLE) { sa.pol = SCHED_IDLE; pthread_create(&sp, 0, spinner, &sa); }
  if (c == NOPRE) { sa.pol = SCHED_OTHER; sa.yield = 1; pthread_create(&sp, 0, spinner, &sa); }
  pthread_create(&wk, 0, wakee, &wa);
  if (local) policy(SCHED_BATCH);
  long long before = 0, t0 = 0, t1 = 0; long sw = 0; int pending = 0;
  for (unsigned i = 0; i <= (unsigned)N; i++) {
    while (atomic_load(&sh.ready) != i + 1) if (local) sched_yield();
    // the previous wakeup is complete (its wakee is back): class its sample
    if (pending) {
      int dirty = local ? sw != 0 : irqs(T) != before;
      samp[c][dirty][ns[c][dirty]++] = t1 - t0; pending = 0;
    }
    if (i == (unsigned)N) break;
    if (local) { sw = nivcsw(); } else { before = irqs(T); long long until = now() + GAP; while (now() < until) ; }
    t0 = now();
    atomic_store(&sh.seq, i + 1);
    long woke = fwake(&sh.seq);
    t1 = now();
    if (local) sw = nivcsw() - sw;
    if (woke == 1) pending = 1; else missed[c]++;
    atomic_store(&sh.kick, i + 1);
  }
  atomic_store(&sh.stop, 1);
  pthread_join(wk, 0); if (sp) pthread_join(sp, 0);
  if (local) policy(SCHED_OTHER);
}

// One-way cache-line transfer W <-> T (calibrate's line_transfer): two threads hand one word
// back and forth; the median over 300 batches of 200 round trips, ns per one-way hand-off.
static void *line_peer(void *a) {
  (void)a; pin(T);
  for (unsigned j = 0; j < 300 * 200; j++) { while (atomic_load_explicit(&sh.seq, memory_order_acquire) != 2 * j + 1) ; atomic_store_explicit(&sh.seq, 2 * j + 2, memory_order_release); }
  return 0;
}
static double median_of(double *v, int n);
static double line_ns(void) {
  pthread_t p; double b[300]; atomic_store(&sh.seq, 0);
  pthread_create(&p, 0, line_peer, 0);
  for (unsigned k = 0; k < 300; k++) {
    long long t0 = now();
    for (unsigned j = 0; j < 200; j++) { unsigned v = 2 * (k * 200 + j) + 1; atomic_store_explicit(&sh.seq, v, memory_order_release); while (atomic_load_explicit(&sh.seq, memory_order_acquire) != v + 1) ; }
    b[k] = (now() - t0) / 400.0;
  }
  pthread_join(p, 0);
  return median_of(b, 300);
}

static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
static double pct(double *v, int n, double p) { if (!n) return 0; qsort(v, n, sizeof *v, cmp); return v[(int)(p * (n - 1))]; }
static double median_of(double *v, int n) { return pct(v, n, 0.5); }

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: %s W T ROUNDS N [GAP_NS [CASES]]\n", argv[0]); return 2; }
  W = atoi(argv[1]); T = atoi(argv[2]); int rounds = atoi(argv[3]); N = atoi(argv[4]);
  GAP = argc > 5 ? atoll(argv[5]) : 50000;
  const char *only = argc > 6 ? argv[6] : 0;
  pin(W);
  for (int c = 0; c < NCASE; c++) for (int k = 0; k < 2; k++) samp[c][k] = malloc(sizeof(double) * rounds * N);
  printf("round   line  nopre(no IRQ)  local(not switched)  lock = nopre - local  in lines\n");
  double lines[64]; if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++) {
    int from[NCASE]; for (int c = 0; c < NCASE; c++) from[c] = ns[c][0];
    double line = line_ns();
    for (int c = 0; c < NCASE; c++) if (!only || strstr(only, names[c])) run_case(c);
    double tmp[2][ns[NOPRE][0] + ns[LOCAL][0] + 1];
    int nn = ns[NOPRE][0] - from[NOPRE], nl = ns[LOCAL][0] - from[LOCAL];
    memcpy(tmp[0], samp[NOPRE][0] + from[NOPRE], nn * sizeof(double)); memcpy(tmp[1], samp[LOCAL][0] + from[LOCAL], nl * sizeof(double));
    double mn = median_of(tmp[0], nn), ml = median_of(tmp[1], nl);
    lines[r] = nn && nl ? (mn - ml) / line : 0;
    printf("%5d %6.0f %14.0f %20.0f %21.0f %9.1f\n", r, line, mn, ml, mn - ml, lines[r]);
  }
  printf("lines per round, median: %.1f\n", median_of(lines, rounds));
  printf("case   class           samples  p10 / median / p90 (ns, waker's clock_gettime + futex_wake)\n");
  for (int c = 0; c < NCASE; c++) {
    if (only && !strstr(only, names[c])) continue;
    for (int k = 0; k < 2; k++) {
      const char *cls = c == LOCAL ? (k ? "switched out" : "not switched") : (k ? "RES/CAL on T" : "no RES/CAL on T");
      int n = ns[c][k]; double *v = samp[c][k];
      printf("%-6s %-15s %7d  %.0f / %.0f / %.0f\n", names[c], cls, n, pct(v, n, 0.1), pct(v, n, 0.5), pct(v, n, 0.9));
      if (getenv("HIST") && n) { int h[32] = {0}; for (int j = 0; j < n; j++) { int b = v[j] / 500; h[b > 31 ? 31 : b]++; }
        printf("       per 500 ns:"); for (int b = 0; b < 32; b++) printf(" %d", h[b]); printf("\n"); }
    }
    if (missed[c]) printf("%-6s futex_wake found no waiter %ld times (not sampled)\n", names[c], missed[c]);
  }
  return 0;
}
