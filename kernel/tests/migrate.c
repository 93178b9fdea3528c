// SPDX-License-Identifier: GPL-2.0
/*
 * migrate: page migration of file pages that processes on every node map.
 * Migration walks the reverse map twice per page: try_to_migrate replaces
 * every mapping by a migration entry, remove_migration_ptes puts the new
 * page in every one of them (both rmap_walk_file).
 *
 * Every process maps the whole file shared and reads it. The mover then
 * migrates all pages to each node in turn, by move_pages(MPOL_MF_MOVE_ALL)
 * and by mbind(MPOL_BIND, MPOL_MF_MOVE_ALL | MPOL_MF_STRICT). After each
 * move: every page must be on the target node (a mapping the first walk
 * misses keeps the page pinned there and the move fails), and every
 * process must read its data through its own mapping and see the page on
 * the target node (a mapping the second walk misses is left with a
 * migration entry to a freed page).
 *
 * Usage: migrate DIR...
 */
#include "common.h"

#define NPAGES 32
#define PER_NODE 2

struct shared {
	int target;
	int step;
};

static int node_of_all(char *map, int target, const char *what)
{
	void *pages[NPAGES];
	int status[NPAGES], i, off = 0;

	for (i = 0; i < NPAGES; i++)
		pages[i] = map + i * PAGE;
	if (sys_move_pages(0, NPAGES, pages, NULL, status, 0))
		die("move_pages query");
	for (i = 0; i < NPAGES; i++)
		if (status[i] != target) {
			if (!off)
				fail("%s: page %d on node %d, want %d", what, i,
				     status[i], target);
			off++;
		}
	return off;
}

static int verify(char *map, int target, const char *what)
{
	int pg, bad = 0;

	for (pg = 0; pg < NPAGES; pg++) {
		char c, want = pattern(pg * PAGE + 5, 0);
		int sig = probe_read(map + pg * PAGE + 5, &c);

		if (sig || c != want) {
			fail("%s: page %d reads %s %#x, want %#x", what, pg,
			     signame(sig), c & 0xff, want & 0xff);
			bad = 1;
			break;
		}
	}
	return bad | (node_of_all(map, target, what) != 0);
}

static int child(const char *path, int node, struct gate *g, struct shared *sh,
		 int steps)
{
	char *map = map_touch(path, NPAGES), what[300];
	int bad = 0, s;

	gate_pass(g); /* mapped */
	for (s = 0; s < steps; s++) {
		gate_pass(g); /* the mover has moved */
		snprintf(what, sizeof(what), "%s, process on node %d, step %d",
			 path, node, s);
		bad |= verify(map, sh->target, what);
	}
	return bad;
}

/* Move every page of @map to @node, by move_pages or mbind. */
static int move_all(char *map, int node, int use_mbind, const char *what)
{
	void *pages[NPAGES];
	int nodes[NPAGES], status[NPAGES], i, tries, off = 0;
	unsigned long mask = 1UL << node;

	for (tries = 0; tries < 5; tries++) {
		if (use_mbind) {
			if (!sys_mbind(map, NPAGES * PAGE, MPOL_BIND, &mask,
				       sizeof(mask) * 8,
				       MPOL_MF_MOVE_ALL | MPOL_MF_STRICT))
				return 0;
			off = -errno;
			continue;
		}
		for (i = 0; i < NPAGES; i++) {
			pages[i] = map + i * PAGE;
			nodes[i] = node;
		}
		if (sys_move_pages(0, NPAGES, pages, nodes, status, MPOL_MF_MOVE_ALL))
			die("move_pages");
		for (off = 0, i = 0; i < NPAGES; i++)
			off += status[i] != node;
		if (!off)
			return 0;
	}
	if (use_mbind)
		fail("%s: mbind to node %d: %s", what, node, strerror(-off));
	else
		fail("%s: move_pages: %d pages not on node %d", what, off, node);
	return 1;
}

static int child_task(void *p)
{
	struct task *t = p;

	return child(t->path, t->node, t->g, t->sh, t->count);
}

static void run_dir(const char *dir)
{
	int nodes = nr_nodes(), n = nodes * PER_NODE, steps = 2 * nodes * 2;
	struct shared *sh = shared_alloc(sizeof(*sh));
	struct gate *g = gate_new();
	char path[256], what[300], *map;
	pid_t pids[64];
	int k, s;

	snprintf(path, sizeof(path), "%s/migrate.dat", dir);
	close(make_file(path, NPAGES * PAGE, 0, 1));
	for (k = 0; k < n; k++) {
		struct task t = { .node = k % nodes, .g = g, .sh = sh, .count = steps };

		snprintf(t.path, sizeof(t.path), "%s", path);
		pids[k] = spawn_task(k % nodes, k / nodes, child_task, &t);
	}
	map = map_touch(path, NPAGES);
	if (!gate_collect(g, n))
		die("a process died before the moves");
	gate_open(g);
	/* each node in turn, first by move_pages, then by mbind */
	for (s = 0; s < steps; s++) {
		int target = (s / 2 + 1) % nodes, use_mbind = s % 2;

		snprintf(what, sizeof(what), "%s, mover, step %d (%s)", path, s,
			 use_mbind ? "mbind" : "move_pages");
		if (!gate_collect(g, n)) {
			fail("%s: a process died", path);
			break;
		}
		move_all(map, target, use_mbind, what);
		sh->target = target;
		verify(map, target, what);
		gate_open(g);
	}
	for (k = 0; k < n; k++)
		reap(pids[k], "child");
	munmap(map, NPAGES * PAGE);
	unlink(path);
	note("%s: %d pages, %d processes on %d node(s), %d moves", dir, NPAGES,
	     n + 1, nodes, steps);
}

int main(int argc, char **argv)
{
	int i;

	test_start("migrate");
	spawn_init(argv);
	if (nr_nodes() < 2)
		test_skip("one NUMA node: nowhere to migrate to");
	for (i = 1; i < argc; i++)
		run_dir(argv[i]);
	return test_end("shared file pages moved between nodes by move_pages and mbind");
}
