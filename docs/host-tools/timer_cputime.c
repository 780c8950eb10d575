/* timer_cputime: what CPU time a task woken by its own timer is charged.
 * A thread pinned to one CPU (default 1) runs 1 ms (busy, by the clock)
 * and sleeps to the next 10 ms deadline (clock_nanosleep TIMER_ABSTIME),
 * for 2 s: schedlab's `periodic:tasks=1,run=1ms,sleep=9ms`. At the end it
 * reads its own CPU time twice: /proc/self/schedstat's first field
 * (se.sum_exec_runtime, ns) and CLOCK_THREAD_CPUTIME_ID, and prints the
 * CPU time per period beyond the 1 ms run, with the p50/p90 lateness of
 * the wakeups (deadline → running, µs; the idle exit lies in it).
 *   ./timer_cputime [CPU]
 * Build: cc -O2 -o timer_cputime timer_cputime.c */
#define _GNU_SOURCE
#include "proc_sched.h"
#include <sched.h>

#define PERIODS 200
#define RUN_NS 1000000L
#define PERIOD_NS 10000000L

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static long schedstat_exec_ns(void)
{
	FILE *f = fopen("/proc/self/schedstat", "r");
	long exec = -1;
	if (!f || fscanf(f, "%ld", &exec) != 1)
		perror("/proc/self/schedstat");
	if (f)
		fclose(f);
	return exec;
}

static long thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 1;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		perror("sched_setaffinity");
	static long late[PERIODS];
	long exec0 = schedstat_exec_ns(), cpu0 = thread_cpu_ns();
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	long deadline = t.tv_sec * 1000000000L + t.tv_nsec;
	for (int i = 0; i < PERIODS; i++) {
		spin(RUN_NS);
		deadline += PERIOD_NS;
		t.tv_sec = deadline / 1000000000L;
		t.tv_nsec = deadline % 1000000000L;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		late[i] = now_ns() - deadline;
	}
	long exec = schedstat_exec_ns() - exec0, cput = thread_cpu_ns() - cpu0;
	qsort(late, PERIODS, sizeof late[0], cmp);
	printf("cpu %d periods %d sum_exec_ms %.3f thread_cputime_ms %.3f "
	       "beyond_run_us_per_period %.2f late_us p50 %.1f p90 %.1f\n",
	       cpu, PERIODS, exec / 1e6, cput / 1e6,
	       (exec - (long)PERIODS * RUN_NS) / 1e3 / PERIODS,
	       late[PERIODS / 2] / 1e3, late[PERIODS * 9 / 10] / 1e3);
	report("timer", "periods", PERIODS);
	return 0;
}
