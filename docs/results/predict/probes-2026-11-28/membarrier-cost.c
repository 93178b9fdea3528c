// SPDX-License-Identifier: MIT OR Apache-2.0
// membarrier(PRIVATE_EXPEDITED) cost with 0 or 1 other thread of the process running (spinning)
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static volatile int stop; static volatile unsigned long spins;
static void *spin(void *a) { (void)a; while (!stop) spins++; return 0; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static double run(int n) { double v[20]; for (int r = 0; r < 20; r++) { double t0 = now(); for (int i = 0; i < n; i++) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0); v[r] = (now() - t0) / n; } qsort(v, 20, sizeof v[0], cmp); printf("  min %.0f median %.0f max %.0f\n", v[0], v[10], v[19]); return v[0]; }
int main(void) {
  syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
  printf("alone: %.0f ns per barrier (best of 20 x 200)\n", run(200));
  pthread_t t; pthread_create(&t, 0, spin, 0); usleep(10000);
  unsigned long s0 = spins; double t0 = now(); double b = run(200); double el = now() - t0; unsigned long s1 = spins;
  printf("with a spinning thread: %.0f ns per barrier (best of 20 x 200)\n", b);
  stop = 1; pthread_join(t, 0);
  (void)s0; (void)s1; (void)el; return 0;
}
