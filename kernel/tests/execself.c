// SPDX-License-Identifier: GPL-2.0
/*
 * execself: the dynamically linked helper of the exec and uprobe tests.
 * Every copy maps the same libc.so.6 and ld.so, so each exec links and
 * unlinks about ten VMAs in those two files' i_mmap.
 *
 *   execself churn TOTAL I SLOTFILE SLOT
 *       re-exec itself with I+1 until I == TOTAL (UnixBench execl's
 *       pattern), then store TOTAL at 8 * SLOT in SLOTFILE through a
 *       MAP_SHARED mapping and exit 0.
 *   execself uprobe CALLS
 *       print "<libc path> <file offset of getppid>" on fd 1, then for each
 *       line read on fd 0 ("call"), call getppid() CALLS times and answer
 *       "done"; exit on end of input. The test places a uprobe there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int churn(char **argv)
{
	long total = atol(argv[2]), i = atol(argv[3]), slot = atol(argv[5]);
	char next[32];
	long *slots;
	int fd;

	if (i < total) {
		snprintf(next, sizeof(next), "%ld", i + 1);
		argv[3] = next;
		execv("/proc/self/exe", argv);
		fprintf(stderr, "execself: exec: %s\n", strerror(errno));
		return 2;
	}
	fd = open(argv[4], O_RDWR);
	if (fd < 0)
		return 3;
	slots = mmap(NULL, (slot + 1) * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slots == MAP_FAILED)
		return 4;
	slots[slot] = total;
	return 0;
}

/* The file and offset that map @addr, from /proc/self/maps. */
static int file_offset(uintptr_t addr, char *path, size_t len, uintptr_t *off)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8], file[400] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %399s", &start, &end,
			   perms, &pgoff, file) < 4)
			continue;
		if (addr < start || addr >= end || !file[0])
			continue;
		snprintf(path, len, "%s", file);
		*off = addr - start + pgoff;
		found = 1;
	}
	fclose(f);
	return found;
}

static int uprobe(char **argv)
{
	long calls = atol(argv[2]), i;
	pid_t (*volatile fn)(void) = getppid;
	char path[400], cmd[16];
	uintptr_t off;

	if (!file_offset((uintptr_t)fn, path, sizeof(path), &off) ||
	    !strstr(path, "libc.so")) {
		fprintf(stderr, "execself: getppid at %p is not in libc\n", fn);
		return 2;
	}
	printf("%s 0x%lx\n", path, (unsigned long)off);
	fflush(stdout);
	while (fgets(cmd, sizeof(cmd), stdin)) {
		for (i = 0; i < calls; i++)
			fn();
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "churn"))
		return churn(argv);
	if (argc == 3 && !strcmp(argv[1], "uprobe"))
		return uprobe(argv);
	fprintf(stderr, "usage: execself churn TOTAL I SLOTFILE SLOT | uprobe CALLS\n");
	return 1;
}
