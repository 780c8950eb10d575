/* late_sleeper: sleeps 1 ms to absolute deadlines 1,000 times and prints
 * how late it woke (median, p99, max). Run it as SCHED_BATCH next to a
 * SCHED_IDLE spinner on the same CPU to see whether a waking batch task
 * preempts an idle-policy one at once (check_preempt_wakeup_fair):
 *   taskset -c 0 chrt --idle 0 timeout 3 sh -c 'while :; do :; done' &
 *   taskset -c 0 chrt --batch 0 ./late_sleeper
 * Build: cc -O2 -o late_sleeper late_sleeper.c */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	struct timespec t, n;
	long late[1000];
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (int i = 0; i < 1000; i++) {
		t.tv_nsec += 1000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_nsec -= 1000000000;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, 0);
		clock_gettime(CLOCK_MONOTONIC, &n);
		late[i] = (n.tv_sec - t.tv_sec) * 1000000000L + (n.tv_nsec - t.tv_nsec);
	}
	qsort(late, 1000, sizeof late[0], cmp);
	printf("late µs: median %.1f p99 %.1f max %.1f\n", late[500] / 1e3, late[990] / 1e3, late[999] / 1e3);
	return 0;
}
