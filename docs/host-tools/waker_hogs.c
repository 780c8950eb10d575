/* waker_hogs: on CPU 0, a waker that spins X µs and then writes a byte to
 * reader i's pipe (round robin over R readers), R readers that read a byte
 * and spin Y µs, and H spinning hogs, for T ms. Each task reads its own
 * /proc/self/sched at the end. The waker's involuntary switches say how
 * often a wakee (or a third task) took the CPU from it: with hogs queued
 * that depends on RUN_TO_PARITY's protection and on the lag of the tasks.
 * Compare with an rt-app file (waker: run X, resume r_i, ...; readers:
 * suspend, run Y; hogs: run 1000000; all "cpus": [0]); rt-app's resume of
 * a reader that is not suspended is lost where a pipe keeps the byte, so
 * compare the waker's switches, not the readers'.
 * Usage: ./waker_hogs R X_US Y_US T_MS H    Build: cc -O2 -o waker_hogs waker_hogs.c */
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
	if (argc != 6)
		return fprintf(stderr, "usage: %s R X_US Y_US T_MS H\n", argv[0]), 2;
	int r = atoi(argv[1]), h = atoi(argv[5]);
	long x = atol(argv[2]) * 1000, y = atol(argv[3]) * 1000, t = atol(argv[4]) * 1000000L;
	if (r < 1 || r > 64 || h < 0 || h > 8)
		return fprintf(stderr, "R in 1..64, H in 0..8\n"), 2;
	int fds[64][2];
	pid_t kids[72];
	int nk = 0;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof s, &s);
	for (int i = 0; i < r; i++)
		if (pipe(fds[i]))
			return 1;
	for (int i = 0; i < r; i++)
		if (!(kids[nk++] = fork())) {
			char c;
			long n = 0;
			while (read(fds[i][0], &c, 1) == 1 && c != 'q') {
				n++;
				spin(y);
			}
			report("reader", "ops", n);
			_exit(0);
		}
	for (int i = 0; i < h; i++)
		if (!(kids[nk++] = fork())) {
			spin(t + 200000000L);
			report("hog", "ops", 0);
			_exit(0);
		}
	usleep(100000);
	long end = now_ns() + t, w = 0;
	for (int i = 0; now_ns() < end; i = (i + 1) % r, w++) {
		spin(x);
		if (write(fds[i][1], "x", 1) != 1)
			return 1;
	}
	report("waker", "ops", w);
	for (int i = 0; i < r; i++)
		if (write(fds[i][1], "q", 1) != 1)
			return 1;
	for (int i = 0; i < nk; i++)
		waitpid(kids[i], 0, 0);
	return 0;
}
