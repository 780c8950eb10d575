/* timer_cost: CPU time a timer wakeup takes from the task it interrupts.
 * A hog pinned to CPU 0 counts loop iterations for 3 s, alone and then
 * beside a SCHED_FIFO thread (also CPU 0) that sleeps to absolute
 * deadlines every 250 µs and does nothing else. The hog's lost fraction
 * × 250 µs is the CPU time of one timer interrupt + wakeup + two switches
 * + the sleeper's clock_nanosleep, measured without tracing.
 * Build: cc -O2 -o timer_cost timer_cost.c */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static double hog_rate(double secs)
{
	volatile unsigned long n = 0;
	double end = now() + secs;
	while (1) {
		for (int i = 0; i < 100000; i++)
			n++;
		if (now() >= end)
			break;
	}
	return n / secs;
}

int main(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	double r0 = hog_rate(3);
	long *wakes = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct sched_param sp = { .sched_priority = 80 };
		sched_setscheduler(0, SCHED_FIFO, &sp);
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		for (;;) {
			t.tv_nsec += 250000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_nsec -= 1000000000;
				t.tv_sec++;
			}
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
			__atomic_add_fetch(wakes, 1, __ATOMIC_RELAXED);
		}
	}
	usleep(10000);
	long w0 = *wakes;
	double r1 = hog_rate(3);
	long w = *wakes - w0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	double lost = (1 - r1 / r0) * 3.0;
	printf("hog alone %.4g/s, with timer %.4g/s; %ld wakeups; CPU per wakeup %.2f us\n", r0, r1, w,
	       lost / w * 1e6);
	return 0;
}
