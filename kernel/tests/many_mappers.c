// SPDX-License-Identifier: GPL-2.0
/*
 * many_mappers: the libc case. Hundreds of processes, spread over every
 * CPU, each map one file as five VMAs the way ld.so maps libc.so (r--,
 * r-x, r--, rw- private, r--), so the file's i_mmap holds thousands of
 * VMAs, most of them identical intervals. Then:
 *   migrate: one page of the r-x segment moves to the other node with
 *            MPOL_MF_MOVE_ALL: the rmap walks visit every VMA; every
 *            process must read the same data and see the page there;
 *   truncate: the file shrinks into its third segment: every process must
 *            still read the first pages and get SIGBUS past the new end;
 *   exit:    all processes exit at once (unlinks from every CPU).
 *
 * Usage: many_mappers [-n PROCESSES]     (default 1200: 6000 VMAs)
 */
#include "common.h"

#define NPAGES 27
#define TRUNC 22 /* inside the third segment, [20, 24) */
#define MOVED 5  /* a page of the r-x segment */
#define MAX_PROCS 4096

static const struct seg {
	int first, pages, prot, flags;
} segs[] = {
	{ 0, 4, PROT_READ, MAP_PRIVATE },
	{ 4, 16, PROT_READ | PROT_EXEC, MAP_PRIVATE },
	{ 20, 4, PROT_READ, MAP_PRIVATE },
	{ 24, 2, PROT_READ | PROT_WRITE, MAP_PRIVATE },
	{ 26, 1, PROT_READ, MAP_PRIVATE },
};

struct arg {
	char path[128];
	struct gate *g;
	int *target;
	int k;
};

static int mapper(void *p)
{
	struct arg *a = p;
	int fd = open(a->path, O_RDONLY), i, bad = 0, node, sig;
	char *base, c;

	if (fd < 0)
		die("open");
	/* reserve, then place each segment: five VMAs that do not merge */
	base = mmap(NULL, NPAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		die("reserve");
	for (i = 0; i < 5; i++)
		if (mmap(base + segs[i].first * PAGE, segs[i].pages * PAGE,
			 segs[i].prot, segs[i].flags | MAP_FIXED, fd,
			 segs[i].first * PAGE) == MAP_FAILED)
			die("mmap segment %d", i);
	close(fd);
	for (i = 0; i < NPAGES; i++)
		probe_read(base + i * PAGE, &c);

	gate_pass(a->g); /* all mapped; the page moves */
	sig = probe_read(base + MOVED * PAGE + 9, &c);
	node = page_node(base + MOVED * PAGE);
	if (sig || c != pattern(MOVED * PAGE + 9, 0) || node != *a->target) {
		fail("process %d after the move: %s %#x, on node %d (want %d)", a->k,
		     signame(sig), c & 0xff, node, *a->target);
		bad = 1;
	}
	gate_pass(a->g); /* truncated */
	for (i = 0; i < NPAGES; i++) {
		sig = probe_read(base + i * PAGE + 9, &c);
		if (i < TRUNC ? sig || c != pattern(i * PAGE + 9, 0) : sig != SIGBUS) {
			fail("process %d page %d after truncate: %s %#x", a->k, i,
			     signame(sig), c & 0xff);
			bad = 1;
			break;
		}
	}
	gate_pass(a->g); /* exit all at once */
	return bad;
}

int main(int argc, char **argv)
{
	int n = 1200, opt, i, fd, node, status = -1;
	long ncpu;
	struct arg a = { .k = 0 };
	pid_t *pids;
	void *page;
	char *map, c;

	test_start("many_mappers");
	spawn_init(argv);
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n')
			die("usage: many_mappers [-n PROCESSES]");
		n = atoi(optarg);
	}
	if (n < 1 || n > MAX_PROCS)
		die("-n between 1 and %d", MAX_PROCS);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	pids = calloc(n, sizeof(*pids));
	a.g = gate_new();
	a.target = shared_alloc(sizeof(int));
	snprintf(a.path, sizeof(a.path), "/tmp/many_mappers.dat");
	fd = make_file(a.path, NPAGES * PAGE, 0, 0);
	map = mmap(NULL, NPAGES * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (!pids || map == MAP_FAILED)
		die("setup");
	probe_read(map + MOVED * PAGE, &c);

	for (i = 0; i < n; i++) {
		a.k = i;
		pids[i] = spawn_on_cpu(i % ncpu, mapper, &a, sizeof(a));
	}
	if (!gate_collect(a.g, n))
		die("a process died while mapping");
	node = page_node(map + MOVED * PAGE);
	*a.target = (node + 1) % nr_nodes();
	page = map + MOVED * PAGE;
	for (i = 0; i < 5 && status != *a.target; i++)
		sys_move_pages(0, 1, &page, a.target, &status, MPOL_MF_MOVE_ALL);
	check(status == *a.target, "the page under %d mappings did not move: status %d",
	      5 * n, status);
	gate_open(a.g);
	if (!gate_collect(a.g, n))
		fail("a process died after the move");
	if (ftruncate(fd, TRUNC * PAGE))
		die("truncate");
	gate_open(a.g);
	if (!gate_collect(a.g, n))
		fail("a process died after the truncate");
	gate_open(a.g);
	for (i = 0; i < n; i++)
		reap(pids[i], "mapper");
	note("%d processes on %ld CPUs, %d VMAs of one file; a page moved from node %d to %d",
	     n, ncpu, 5 * n, node, *a.target);
	close(fd);
	unlink(a.path);
	return test_end("thousands of VMAs of one file: migrated, truncated, all exit");
}
