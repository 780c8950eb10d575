/* vcpu_pack: where does a wakee run when its previous CPU is idle?
 * Mainline select_task_rq_fair returns the idle previous CPU (wake_affine_idle,
 * then select_idle_sibling's "prev is idle and cache affine"). This VM's
 * kernel (sched_vcpu_pack=15 on its command line, vcpu_pack_room in
 * /proc/kallsyms) often puts it on the waker's CPU instead.
 *
 *   ./vcpu_pack duty PCT [futex]  the waker (CPU 0) runs a PCT % duty cycle
 *                                 (1 ms periods) for 30 ms, then wakes a
 *                                 thread that rested on CPU 1, unpinned;
 *                                 by pipe write (a sync wakeup) or futex
 *   ./vcpu_pack gap US [spin]     ping-pong through pipes, the wakee side
 *                                 unpinned; before each write the waker
 *                                 sleeps (or spins) US µs
 * Prints how often the wakee ran on the waker's CPU (sched_getcpu).
 * Build: cc -O2 -pthread -o vcpu_pack vcpu_pack.c */
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

static int to_wakee[2], to_waker[2];
static atomic_int word;
static int use_futex, rounds;

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Pin to `cpu`, or allow CPUs 0 and 1 when cpu < 0. */
static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	if (cpu < 0) {
		CPU_SET(0, &s);
		CPU_SET(1, &s);
	} else {
		CPU_SET(cpu, &s);
	}
	sched_setaffinity(0, sizeof(s), &s);
}

static void wait_for_waker(void)
{
	char c;

	if (!use_futex) {
		if (read(to_wakee[0], &c, 1) != 1)
			exit(1);
		return;
	}
	while (atomic_load(&word) == 0)
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	atomic_store(&word, 0);
}

static void wake_wakee(void)
{
	char c = 'x';

	if (!use_futex) {
		if (write(to_wakee[1], &c, 1) != 1)
			exit(1);
		return;
	}
	atomic_store(&word, 1);
	syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Rests on CPU 1 before each wait (duty mode) or once (gap mode). */
static void *wakee(void *arg)
{
	int rest_each = *(int *)arg;

	pin(1);
	pin(-1);
	for (int i = 0; i < rounds; i++) {
		if (rest_each) {
			pin(1);
			pin(-1);
		}
		wait_for_waker();
		int cpu = sched_getcpu();
		if (write(to_waker[1], &cpu, sizeof(cpu)) != sizeof(cpu))
			exit(1);
	}
	return NULL;
}

static void spin_until(long long t)
{
	while (now_ns() < t)
		;
}

/* The waker's duty cycle: 1 ms periods, `pct` % busy, for `ms`. */
static void duty_cycle(int pct, int ms)
{
	long long end = now_ns() + ms * 1000000LL;

	while (now_ns() < end) {
		spin_until(now_ns() + pct * 10000LL);
		if (pct < 100)
			usleep((100 - pct) * 10);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "duty") && strcmp(argv[1], "gap"))) {
		fprintf(stderr, "usage: %s duty PCT [futex] | gap US [spin]\n", argv[0]);
		return 2;
	}
	int duty = !strcmp(argv[1], "duty");
	long v = atol(argv[2]);
	int variant = argc > 3;
	int on_waker = 0;
	pthread_t t;

	use_futex = duty && variant;
	rounds = duty ? 40 : 4000;
	if (pipe(to_wakee) || pipe(to_waker))
		return 1;
	pin(0);
	pthread_create(&t, NULL, wakee, &duty);
	for (int i = 0; i < rounds; i++) {
		if (duty) {
			duty_cycle(v, 30);
			usleep(200); /* the wakee is blocked by now */
		} else if (variant) {
			spin_until(now_ns() + v * 1000);
		} else if (v) {
			usleep(v);
		}
		wake_wakee();
		int cpu;
		if (read(to_waker[0], &cpu, sizeof(cpu)) != sizeof(cpu))
			return 1;
		on_waker += cpu == 0;
	}
	pthread_join(t, NULL);
	if (duty)
		printf("duty %ld %% (%s): ", v, use_futex ? "futex" : "pipe");
	else
		printf("gap %ld us (%s): ", v, variant ? "spin" : "sleep");
	printf("the wakee ran on the waker's CPU in %d of %d\n", on_waker, rounds);
	return 0;
}
