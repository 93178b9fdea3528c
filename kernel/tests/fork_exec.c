// SPDX-License-Identifier: GPL-2.0
/*
 * fork_exec: fork + exec + exit of processes that share a file mapping.
 *
 * The parent maps a tmpfs file MAP_SHARED and splits the mapping into
 * SPLITS VMAs (alternating protections), so that every fork copies SPLITS
 * VMAs of one file into its i_mmap (dup_mmap links each one next to its
 * parent's). Rounds of children on every node write through the inherited
 * mapping, fork a grandchild that writes through its own inherited copy,
 * and a second grandchild that execs the dynamic helper, which maps the
 * file anew and writes its slot; then all exit (the exit unlinks).
 *
 * Checks: every slot holds what its writer stored (the parent sees it
 * through its own mapping); then children that hold only inherited VMAs
 * wait while the parent truncates the file: every page of every inherited
 * VMA must raise SIGBUS (a VMA that fork failed to link, or linked with a
 * wrong range, keeps the old page).
 *
 * Usage: fork_exec HELPER [-r ROUNDS]
 */
#include "common.h"

#define SPLITS 8
#define NPAGES (2 * SPLITS)
#define KIDS_PER_NODE 2

static const char *path = "/tmp/fork_exec.dat";

/* slot layout: page p holds slots at p*PAGE .. ; a slot is a long */
static long *slot(char *map, int n)
{
	return (long *)map + n;
}

static int child(char *map, const char *helper, int round, int kid)
{
	int base = (round * 16 + kid * 4) % (int)(NPAGES * PAGE / 8 - 4);
	char a[32], b[32];
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
		snprintf(a, sizeof(a), "%d", 1000 + base + 2);
		snprintf(b, sizeof(b), "%d", base + 2);
		execl(helper, helper, "churn", a, a, path, b, (char *)NULL);
		_exit(99);
	}
	bad |= reap(p, "grandchild (exec)");
	return bad;
}

/* Held at the gate with inherited VMAs; after the truncate, all SIGBUS. */
static int holder(char *map, struct gate *g, int node)
{
	int pg, bad = 0;
	char c;

	gate_pass(g);
	for (pg = 0; pg < NPAGES; pg++) {
		int sig = probe_read(map + pg * PAGE, &c);

		if (sig != SIGBUS) {
			fail("holder on node %d, page %d after truncate: %s, want SIGBUS",
			     node, pg, signame(sig));
			bad = 1;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	int rounds = 4, nodes = nr_nodes(), r, k, i, opt, fd, n;
	pid_t pids[64];
	struct gate *g;
	const char *helper;
	char *map;

	test_start("fork_exec");
	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			die("usage: fork_exec HELPER [-r ROUNDS]");
		rounds = atoi(optarg);
	}
	if (optind >= argc)
		die("usage: fork_exec HELPER [-r ROUNDS]");
	helper = argv[optind];

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, NPAGES * PAGE))
		die("create %s", path);
	map = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	/* SPLITS VMAs: every other pair of pages read-only, then writable again */
	for (i = 0; i < SPLITS; i += 2)
		if (mprotect(map + i * 2 * PAGE, 2 * PAGE, PROT_READ) ||
		    mprotect(map + i * 2 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE | PROT_EXEC))
			die("mprotect");

	for (r = 0; r < rounds; r++) {
		memset(map, 0, NPAGES * PAGE);
		n = 0;
		for (k = 0; k < nodes * KIDS_PER_NODE; k++) {
			pids[n] = fork_on_node(k % nodes);
			if (!pids[n])
				_exit(child(map, helper, r, k));
			n++;
		}
		for (i = 0; i < n; i++)
			reap(pids[i], "child");
		for (k = 0; k < nodes * KIDS_PER_NODE; k++) {
			int base = (r * 16 + k * 4) % (int)(NPAGES * PAGE / 8 - 4);

			for (i = 0; i < 3; i++)
				check(*slot(map, base + i) == 1000 + base + i,
				      "round %d child %d slot %d: %ld, want %d", r, k,
				      i, *slot(map, base + i), 1000 + base + i);
		}
	}

	g = gate_new();
	n = 0;
	for (k = 0; k < nodes * KIDS_PER_NODE; k++) {
		pids[n] = fork_on_node(k % nodes);
		if (!pids[n])
			_exit(holder(map, g, k % nodes));
		n++;
	}
	if (!gate_collect(g, n))
		fail("a holder died before the truncate");
	if (ftruncate(fd, 0))
		die("truncate");
	gate_open(g);
	for (i = 0; i < n; i++)
		reap(pids[i], "holder");
	close(fd);
	unlink(path);
	note("%d rounds of %d children (fork, fork+exec, exit), %d VMAs each",
	     rounds, nodes * KIDS_PER_NODE, SPLITS);
	return test_end("writes through forked and exec'd mappings; truncate reaches every inherited VMA");
}
