// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * execl: the real kernel's exec path under P copies at once, as UnixBench's
 * execl test drives it: each copy re-execs itself, passing a counter, and
 * never forks. Part of `aspace survey` (crates/lab/src/survey.rs), which
 * builds it twice, linked dynamically (every exec maps libc and ld.so, so the
 * copies meet in those files' reverse maps) and statically (the copies share
 * only this binary).
 *
 *   execl COPIES SECONDS
 *
 * forks COPIES children that all start at one instant (a little after the
 * forks) and re-exec themselves until SECONDS later, then prints one line:
 *
 *   copies 16 seconds 2.000 execs 57321 per_s 28660.5
 *
 * `execs` counts the execs completed inside the window by all copies
 * together. Each copy reports its count through a pipe that it keeps open
 * across its execs; the parent sums them and exits non-zero if a copy failed.
 *
 * Internal form, run by the copies themselves:
 *
 *   execl --loop START_NS END_NS COUNT FD
 *
 * (CLOCK_MONOTONIC nanoseconds): before START it waits for START; from then
 * on it execs itself with COUNT + 1 until END, then writes COUNT to FD.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(long long t)
{
	struct timespec ts = { .tv_sec = t / 1000000000LL,
			       .tv_nsec = t % 1000000000LL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* One step of a copy: exec the next one, or report at the end. */
static int loop_step(const char *self, char **argv)
{
	long long start = atoll(argv[2]), end = atoll(argv[3]);
	long long count = atoll(argv[4]);
	int fd = atoi(argv[5]);
	char a[24], b[24], c[24], d[16];
	long long t = now_ns();

	if (t < start) {
		/* The first step of this copy: wait for the common start. */
		sleep_until(start);
		count = 0;
	} else if (t >= end) {
		int n = snprintf(a, sizeof(a), "%lld\n", count);

		/* One line of at most 21 bytes: atomic on a pipe. */
		if (write(fd, a, n) != n)
			return 1;
		return 0;
	}
	snprintf(a, sizeof(a), "%lld", start);
	snprintf(b, sizeof(b), "%lld", end);
	snprintf(c, sizeof(c), "%lld", count + 1);
	snprintf(d, sizeof(d), "%d", fd);
	execl(self, self, "--loop", a, b, c, d, (char *)NULL);
	perror("execl");
	return 1;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	self[len] = '\0';
	if (argc == 6 && strcmp(argv[1], "--loop") == 0)
		return loop_step(self, argv);
	if (argc != 3) {
		fprintf(stderr, "usage: %s COPIES SECONDS\n", argv[0]);
		return 2;
	}

	int copies = atoi(argv[1]);
	double seconds = atof(argv[2]);

	if (copies < 1 || copies > 65536 || !(seconds > 0 && seconds <= 3600)) {
		fprintf(stderr, "%s: COPIES must be 1..65536 and SECONDS in (0, 3600]\n",
			argv[0]);
		return 2;
	}

	int fds[2];

	if (pipe(fds) != 0) {
		perror("pipe");
		return 1;
	}
	/* Time for the forks (about 0.1 ms each), then the window. */
	long long start = now_ns() + 100000000LL + 200000LL * copies;
	long long end = start + (long long)(seconds * 1e9);
	char a[24], b[24], d[16];

	snprintf(a, sizeof(a), "%lld", start);
	snprintf(b, sizeof(b), "%lld", end);
	snprintf(d, sizeof(d), "%d", fds[1]);
	for (int i = 0; i < copies; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			close(fds[0]);
			execl(self, self, "--loop", a, b, "0", d, (char *)NULL);
			perror("execl");
			_exit(1);
		}
	}
	close(fds[1]);

	/* Every copy's count, until the last copy closes the pipe. */
	FILE *in = fdopen(fds[0], "r");
	long long total = 0, n;
	int reported = 0, failed = 0, status;

	while (in && fscanf(in, "%lld", &n) == 1) {
		total += n;
		reported++;
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	if (failed || reported != copies) {
		fprintf(stderr, "%s: %d of %d copies failed, %d reported\n", argv[0],
			failed, copies, reported);
		return 1;
	}
	printf("copies %d seconds %.3f execs %lld per_s %.1f\n", copies, seconds,
	       total, total / seconds);
	return 0;
}
