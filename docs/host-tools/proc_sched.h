/* proc_sched.h: what the host tools share. now_ns (CLOCK_MONOTONIC), a
 * busy spin, and a task's switch counts and CPU time from its own
 * /proc/self/sched, printed as one line:
 *   WHO LABEL N voluntary V involuntary I cpu_ms C
 * Include it from a tool in this directory (cc finds it next to the .c). */
#ifndef PROC_SCHED_H
#define PROC_SCHED_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline void spin(long ns)
{
	long end = now_ns() + ns;
	while (now_ns() < end)
		;
}

static inline void report(const char *who, const char *label, long n)
{
	FILE *f = fopen("/proc/self/sched", "r");
	char l[256];
	long vol = 0, inv = 0;
	double exec = 0;
	while (f && fgets(l, sizeof l, f)) {
		if (strstr(l, "nr_voluntary_switches"))
			vol = atol(strchr(l, ':') + 1);
		if (strstr(l, "nr_involuntary_switches"))
			inv = atol(strchr(l, ':') + 1);
		if (strstr(l, "se.sum_exec_runtime"))
			exec = atof(strchr(l, ':') + 1);
	}
	if (f)
		fclose(f);
	printf("%s %s %ld voluntary %ld involuntary %ld cpu_ms %.1f\n", who, label, n, vol, inv, exec);
	fflush(stdout);
}
#endif
