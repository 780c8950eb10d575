/* timer_sleep_lengths: the CPU time a sleeper is charged per nanosleep, by
 * the length of the sleep, on an otherwise idle CPU (the CPU idles for the
 * whole sleep). A thread pinned to CPU (default 1), timer slack 1 ns,
 * sleeps 1, 2, 3, 5, 9 and 20 ms in turn (200, 200, 200, 80, 80, 40
 * times) and reads CLOCK_THREAD_CPUTIME_ID around each sleep; it prints
 * the median, p10 and p90 per length. calibrate's `timer_sleep_idle` is
 * the 1 ms row.
 *   ./timer_sleep_lengths [CPU]
 * Build: cc -O2 -o timer_sleep_lengths timer_sleep_lengths.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static long long thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const long lens[] = { 1000000, 2000000, 3000000, 5000000, 9000000, 20000000 };
	static const int counts[] = { 200, 200, 200, 80, 80, 40 };
	int cpu = argc > 1 ? atoi(argv[1]) : 1;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	prctl(PR_SET_TIMERSLACK, 1);
	for (int l = 0; l < 6; l++) {
		long long v[200];
		int n = counts[l];
		for (int i = 0; i < n; i++) {
			struct timespec r = { 0, lens[l] };
			long long c0 = thread_cpu_ns();
			nanosleep(&r, NULL);
			v[i] = thread_cpu_ns() - c0;
		}
		qsort(v, n, sizeof v[0], cmp);
		printf("cpu %d sleep %4.1f ms: n %3d median %lld p10 %lld p90 %lld ns\n", cpu,
		       lens[l] / 1e6, n, v[n / 2], v[n / 10], v[n * 9 / 10]);
	}
	return 0;
}
