/* hog_wakeup: a 1 ms run / 9 ms sleep task sharing one CPU with a CPU hog
 * (both SCHED_OTHER, pinned to CPU 0) for `secs` seconds. Record it with
 *   perf sched record -o hog.data -- ./hog_wakeup 5
 *   perf script -i hog.data > hog.txt
 * and compare `schedlab replay`-free: the sched_waking → sched_switch-in
 * latency of the `periodic` task (comm "hogw-periodic") against
 *   schedlab run --machine vm-2 --set kernel.hz=250 --set kernel.preempt='"none"' \
 *     --workload periodic:tasks=1,run=1ms,sleep=9ms,cpu=0 --workload stress-ng:cpu=1 ...
 * Build: cc -O2 -o hog_wakeup hog_wakeup.c */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin0(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* Burn `ns` of this thread's CPU time. */
static void burn(long long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < ns);
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 5;
	pin0();
	pid_t hog = fork();
	if (hog == 0) {
		prctl(PR_SET_NAME, "hogw-hog");
		for (;;)
			;
	}
	prctl(PR_SET_NAME, "hogw-periodic");
	long long end = now_ns() + secs * 1000000000LL;
	struct timespec sl = { 0, 9000000 };
	while (now_ns() < end) {
		burn(1000000);
		nanosleep(&sl, NULL);
	}
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	return 0;
}
