/* timer_wakeup: the primitive "a timer wakes a task on this CPU": a thread
 * pinned to CPU 0 sleeps to absolute deadlines (clock_nanosleep
 * TIMER_ABSTIME, 1 ms apart) and records how late it runs, like cyclictest.
 *   ./timer_wakeup rt  idle   SCHED_FIFO 80, CPU 0 otherwise idle
 *   ./timer_wakeup rt  busy   same, next to a SCHED_OTHER hog on CPU 0
 *   ./timer_wakeup fair idle  SCHED_OTHER (timer slack 50 µs applies)
 * Prints n, p10/p50/p90 of the lateness in µs.
 * Build: cc -O2 -o timer_wakeup timer_wakeup.c */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 3000

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rt = argc > 1 && !strcmp(argv[1], "rt");
	int busy = argc > 2 && !strcmp(argv[2], "busy");
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	pid_t hog = 0;
	if (busy && (hog = fork()) == 0)
		for (;;)
			;
	if (rt) {
		struct sched_param sp = { .sched_priority = 80 };
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			perror("sched_setscheduler");
	}
	static long long lat[N];
	struct timespec t, now;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (int i = 0; i < N; i++) {
		t.tv_nsec += 1000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_nsec -= 1000000000;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		lat[i] = (now.tv_sec - t.tv_sec) * 1000000000LL + now.tv_nsec - t.tv_nsec;
	}
	if (hog) {
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
	}
	qsort(lat, N, sizeof(lat[0]), cmp);
	printf("%s %s: n=%d lateness us p10 %.1f p50 %.1f p90 %.1f\n", rt ? "rt" : "fair",
	       busy ? "busy" : "idle", N, lat[N / 10] / 1e3, lat[N / 2] / 1e3, lat[N * 9 / 10] / 1e3);
	return 0;
}
