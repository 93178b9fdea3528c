// SPDX-License-Identifier: GPL-2.0
/*
 * fork_exec: fork + exec + exit of processes that share a file mapping.
 *
 * A worker on each node (its mm created there) maps a tmpfs file
 * MAP_SHARED and splits the mapping into SPLITS VMAs (alternating
 * protections), so that every fork copies SPLITS VMAs of one file into its
 * i_mmap (dup_mmap links each one next to its parent's, in the parent's
 * part of a split map). Rounds of children write through the inherited
 * mapping, fork a grandchild that writes through its own inherited copy,
 * and a second grandchild that execs the dynamic helper, which maps the
 * file anew and writes its slot; then all exit (the exit unlinks).
 *
 * Checks: every slot holds what its writer stored (the worker sees it
 * through its own mapping); then each worker forks children that hold only
 * inherited VMAs, and all wait while the test truncates the file: every
 * page of every VMA, inherited or not, must raise SIGBUS (a VMA that fork
 * failed to link, or linked with a wrong range, keeps the old page).
 *
 * Usage: fork_exec HELPER [-r ROUNDS]
 */
#include "common.h"

#define SPLITS 8
#define NPAGES (2 * SPLITS)
#define WORKERS_PER_NODE 2
#define KIDS 2

static const char *path = "/tmp/fork_exec.dat";

/* slot layout: page p holds slots at p*PAGE .. ; a slot is a long */
static long *slot(char *map, int n)
{
	return (long *)map + n;
}

struct worker_arg {
	char path[256], helper[256];
	int w, node, rounds;
	struct gate *g;
};

static int slot_base(int w, int r, int k)
{
	return (w * 1024 + r * 64 + k * 4) % (int)(NPAGES * PAGE / 8 - 4);
}

static int child(char *map, struct worker_arg *a, int base)
{
	char n[32], b[32];
	pid_t p;
	int bad = 0;

	*slot(map, base) = 1000 + base;
	p = fork();
	if (p < 0)
		return 2;
	if (!p) {
		*slot(map, base + 1) = 1000 + base + 1;
		_exit(0);
	}
	bad |= reap(p, "grandchild (fork)");
	p = fork();
	if (p < 0)
		return 2;
	if (!p) {
		snprintf(n, sizeof(n), "%d", 1000 + base + 2);
		snprintf(b, sizeof(b), "%d", base + 2);
		execl(a->helper, a->helper, "churn", n, n, a->path, b, (char *)NULL);
		_exit(99);
	}
	bad |= reap(p, "grandchild (exec)");
	return bad;
}

/* After the truncate, every page of this process's VMAs raises SIGBUS. */
static int all_sigbus(char *map, struct gate *g, int node, const char *who)
{
	int pg, bad = 0;
	char c;

	gate_pass(g);
	for (pg = 0; pg < NPAGES; pg++) {
		int sig = probe_read(map + pg * PAGE, &c);

		if (sig != SIGBUS) {
			fail("%s on node %d, page %d after truncate: %s, want SIGBUS",
			     who, node, pg, signame(sig));
			bad = 1;
		}
	}
	return bad;
}

static int worker(void *p)
{
	struct worker_arg *a = p;
	int fd = open(a->path, O_RDWR), r, k, i, bad = 0;
	pid_t pids[KIDS];
	char *map;

	if (fd < 0)
		die("open %s", a->path);
	map = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	close(fd);
	/* SPLITS VMAs: every other pair of pages also executable */
	for (i = 0; i < SPLITS; i += 2)
		if (mprotect(map + i * 2 * PAGE, 2 * PAGE,
			     PROT_READ | PROT_WRITE | PROT_EXEC))
			die("mprotect");

	for (r = 0; r < a->rounds; r++) {
		for (k = 0; k < KIDS; k++) {
			pids[k] = fork();
			if (pids[k] < 0)
				die("fork");
			if (!pids[k])
				_exit(child(map, a, slot_base(a->w, r, k)));
		}
		for (k = 0; k < KIDS; k++)
			bad |= reap(pids[k], "child");
		for (k = 0; k < KIDS; k++) {
			int base = slot_base(a->w, r, k);

			for (i = 0; i < 3; i++)
				if (*slot(map, base + i) != 1000 + base + i) {
					fail("worker %d round %d child %d slot %d: %ld, want %d",
					     a->w, r, k, i, *slot(map, base + i),
					     1000 + base + i);
					bad = 1;
				}
		}
	}

	for (k = 0; k < KIDS; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			die("fork");
		if (!pids[k])
			_exit(all_sigbus(map, a->g, a->node, "inherited mapping"));
	}
	bad |= all_sigbus(map, a->g, a->node, "worker's mapping");
	for (k = 0; k < KIDS; k++)
		bad |= reap(pids[k], "holder");
	return bad;
}

int main(int argc, char **argv)
{
	int rounds = 4, nodes, w, n, opt, fd;
	struct worker_arg a = { .rounds = 4 };
	pid_t pids[64];

	test_start("fork_exec");
	spawn_init(argv);
	nodes = nr_nodes();
	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			die("usage: fork_exec HELPER [-r ROUNDS]");
		rounds = atoi(optarg);
	}
	if (optind >= argc)
		die("usage: fork_exec HELPER [-r ROUNDS]");
	snprintf(a.helper, sizeof(a.helper), "%s", argv[optind]);
	snprintf(a.path, sizeof(a.path), "%s", path);
	a.rounds = rounds;
	a.g = gate_new();

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, NPAGES * PAGE))
		die("create %s", path);
	n = nodes * WORKERS_PER_NODE;
	for (w = 0; w < n; w++) {
		a.w = w;
		a.node = w % nodes;
		pids[w] = spawn_on_node(a.node, w / nodes, worker, &a, sizeof(a));
	}
	/* each worker and its KIDS holders wait at the gate */
	if (!gate_collect(a.g, n * (KIDS + 1)))
		fail("a process died before the truncate");
	if (ftruncate(fd, 0))
		die("truncate");
	gate_open(a.g);
	for (w = 0; w < n; w++)
		reap(pids[w], "worker");
	close(fd);
	unlink(path);
	note("%d workers on %d node(s): %d rounds of %d children (fork, fork+exec, exit), %d VMAs each",
	     n, nodes, rounds, KIDS, SPLITS);
	return test_end("writes through forked and exec'd mappings; truncate reaches every inherited VMA");
}
