// SPDX-License-Identifier: GPL-2.0
/*
 * loopcost: the uncontended paths of the file reverse map, timed by the
 * guest's CLOCK_MONOTONIC.  Under QEMU with -icount shift=0 one guest
 * nanosecond is one guest instruction, so the times are instruction counts.
 *
 *   loopcost mmap N FILE        N times: mmap 4 pages of FILE MAP_SHARED,
 *                               munmap them (one link, one unlink each)
 *   loopcost exec N EXECSELF    one process that execs EXECSELF N times in
 *                               a row (UnixBench execl with one copy)
 *
 * Prints "LOOPCOST <what> <N> <total ns> <ns per iteration>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGES 4

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int loop_mmap(long n, const char *path)
{
	long page = sysconf(_SC_PAGESIZE), i;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, 16 * page)) {
		perror(path);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char *p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);

		if (p == MAP_FAILED || munmap(p, PAGES * page)) {
			perror("mmap/munmap");
			return -1;
		}
	}
	close(fd);
	return 0;
}

/* execself's churn mode re-execs itself n times, then writes n at slot 0 */
static int loop_exec(long n, const char *execself)
{
	char total[32], slots[] = "/tmp/loopcost.slots";
	long long got = 0;
	int fd, st;
	pid_t pid;

	fd = open(slots, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096)) {
		perror(slots);
		return -1;
	}
	snprintf(total, sizeof(total), "%ld", n);
	pid = fork();
	if (pid == 0) {
		execl(execself, execself, "churn", total, "0", slots, "0",
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		fprintf(stderr, "loopcost: %s failed\n", execself);
		return -1;
	}
	if (pread(fd, &got, sizeof(got), 0) != sizeof(got) || got != n) {
		fprintf(stderr, "loopcost: %s did %lld of %ld execs\n",
			execself, got, n);
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	long long start, ns;
	long n;
	int rc;

	if (argc != 4 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: loopcost mmap|exec N FILE|EXECSELF\n");
		return 2;
	}
	start = now_ns();
	if (!strcmp(argv[1], "mmap"))
		rc = loop_mmap(n, argv[3]);
	else if (!strcmp(argv[1], "exec"))
		rc = loop_exec(n, argv[3]);
	else
		rc = -1;
	ns = now_ns() - start;
	if (rc)
		return 1;
	printf("LOOPCOST %s %ld %lld %lld\n", argv[1], n, ns, ns / n);
	return 0;
}
