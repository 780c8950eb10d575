/* yield_spin: a task that runs Y µs between sched_yield() calls and a
 * spinner, both pinned to CPU 0, for T ms. Each reads its own
 * /proc/self/sched at the end: how much CPU the yielder kept says what a
 * yield does to its vruntime (v6.12–v6.16 push only the deadline, and the
 * yielder keeps half the CPU; 6.18.y's "Forfeit vruntime on yield" moves
 * its vruntime to the deadline, and it keeps what it runs between yields).
 * Compare with an rt-app file of two tasks on CPU 0:
 *   {"yielder": {"cpus":[0], "loop":-1, "run":Y, "yield":""},
 *    "spinner": {"cpus":[0], "loop":-1, "run":1000000}}
 * Usage: ./yield_spin Y_US T_MS       Build: cc -O2 -o yield_spin yield_spin.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_sched.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: %s Y_US T_MS\n", argv[0]), 2;
	long y = atol(argv[1]) * 1000, t = atol(argv[2]) * 1000000L;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof s, &s);
	pid_t kid = fork();
	if (!kid) {
		spin(t);
		report("spinner", "yields", 0);
		_exit(0);
	}
	long end = now_ns() + t, n = 0;
	while (now_ns() < end) {
		spin(y);
		sched_yield();
		n++;
	}
	report("yielder", "yields", n);
	waitpid(kid, 0, 0);
	return 0;
}
