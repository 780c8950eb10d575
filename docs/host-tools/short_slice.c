/* short_slice: a task that runs 50 us and sleeps 1 ms, next to two
 * spinners, all on CPU 0, for 3 s; with an argument N it first asks for a
 * custom slice of N us (sched_setattr, SCHED_OTHER with sched_runtime,
 * Linux 6.12+). Prints how late its sleeps end (median, p99, max, in us):
 * timer slack and wakeup latency. A short slice lets the waking task
 * preempt a spinner still inside its protected period (PREEMPT_SHORT).
 * Compare with
 *   schedlab run --machine FILE.toml --set kernel.preempt=none \
 *     -w periodic:tasks=2,run=10s,sleep=1ms,pin=true \
 *     -w periodic:tasks=1,run=50us,sleep=1ms,pin=true,slice=100us
 * Build: cc -O2 -o short_slice short_slice.c   Usage: ./short_slice [SLICE_US] */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_sched.h"

struct attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof s, &s);
	pid_t hog[2];
	for (int i = 0; i < 2; i++)
		if (!(hog[i] = fork()))
			for (;;)
				;
	if (argc > 1) {
		struct attr a = { .size = sizeof a, .policy = SCHED_OTHER,
				  .runtime = strtoull(argv[1], 0, 10) * 1000 };
		if (syscall(SYS_sched_setattr, 0, &a, 0))
			return perror("sched_setattr"), 1;
	}
	static long late[4000];
	int n = 0;
	long end = now_ns() + 3000000000L;
	while (now_ns() < end && n < 4000) {
		spin(50000);
		long t0 = now_ns();
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, 0);
		late[n++] = now_ns() - t0 - 1000000;
	}
	for (int i = 0; i < 2; i++)
		kill(hog[i], 9), waitpid(hog[i], 0, 0);
	qsort(late, n, sizeof late[0], cmp);
	printf("sleeps %d late us: median %.1f p99 %.1f max %.1f\n", n, late[n / 2] / 1e3,
	       late[n * 99 / 100] / 1e3, late[n - 1] / 1e3);
	return 0;
}
