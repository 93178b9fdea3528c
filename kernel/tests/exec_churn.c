// SPDX-License-Identifier: GPL-2.0
/*
 * exec_churn: several copies of a dynamically linked program re-exec
 * themselves (UnixBench execl's pattern), every copy pinned to its own CPU,
 * so that libc.so.6's and ld.so's i_mmap see links and unlinks from every
 * CPU of both nodes at once. Meanwhile a walker migrates the libraries'
 * page-cache pages between the nodes: each move walks every VMA mapping the
 * page (rmap_walk_file: try_to_migrate, then remove_migration_ptes) while
 * the copies link and unlink theirs.
 *
 * Checks: every copy reaches its count (it stores it in a shared file at
 * the end) and exits 0, no copy dies of a fault; and once the churn is
 * over, a process on each node can move every page of both libraries to
 * the other node and back (a walk that misses a VMA leaves the page mapped
 * and the move fails).
 *
 * Usage: exec_churn HELPER LIB... [-c COPIES_PER_CPU] [-n EXECS]
 */
#include "common.h"

#define MAX_LIBS 4

struct shared {
	int stop;
	long moves_ok, moves_failed;
};

struct lib {
	char path[200];
	char *map;
	size_t pages;
};

struct walker_arg {
	struct lib libs[MAX_LIBS];
	int nlibs, from;
	struct shared *sh;
};

static void map_lib(struct lib *l)
{
	struct stat st;
	int fd = open(l->path, O_RDONLY);
	size_t i;
	volatile char sink;

	if (fd < 0 || fstat(fd, &st))
		die("open %s", l->path);
	l->pages = (st.st_size + PAGE - 1) / PAGE;
	l->map = mmap(NULL, l->pages * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	if (l->map == MAP_FAILED)
		die("mmap %s", l->path);
	close(fd);
	for (i = 0; i < l->pages; i++)
		sink = l->map[i * PAGE];
	(void)sink;
}

/* Move every page of @l to @node; the number of pages not there after. */
static long move_lib(struct lib *l, int node, int report)
{
	void **pages = calloc(l->pages, sizeof(void *));
	int *nodes = calloc(l->pages, sizeof(int));
	int *status = calloc(l->pages, sizeof(int));
	long off = 0;
	size_t i;

	if (!pages || !nodes || !status)
		die("calloc");
	for (i = 0; i < l->pages; i++) {
		pages[i] = l->map + i * PAGE;
		nodes[i] = node;
	}
	if (sys_move_pages(0, l->pages, pages, nodes, status, MPOL_MF_MOVE_ALL))
		off = -1;
	for (i = 0; i < l->pages; i++)
		if (status[i] != node) {
			if (report && off >= 0 && off < 3)
				note("%s page %zu: status %d, want node %d",
				     l->path, i, status[i], node);
			off++;
		}
	free(pages);
	free(nodes);
	free(status);
	return off;
}

static int walker(void *p)
{
	struct walker_arg *a = p;
	struct lib *libs = a->libs;
	struct shared *sh = a->sh;
	int round, i, nlibs = a->nlibs;

	for (i = 0; i < nlibs; i++)
		map_lib(&libs[i]);
	for (round = 0; !__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST); round++)
		for (i = 0; i < nlibs; i++) {
			if (move_lib(&libs[i], round % nr_nodes(), 0))
				__atomic_add_fetch(&sh->moves_failed, 1, __ATOMIC_SEQ_CST);
			else
				__atomic_add_fetch(&sh->moves_ok, 1, __ATOMIC_SEQ_CST);
		}
	return 0;
}

/* After the churn: every page moves to each node, from each node. */
static int final_moves(void *p)
{
	struct walker_arg *a = p;
	struct lib *libs = a->libs;
	int nodes = nr_nodes(), bad = 0, i, to, tries, nlibs = a->nlibs;
	int from = a->from;

	for (i = 0; i < nlibs; i++)
		map_lib(&libs[i]);
	for (to = 0; to < nodes; to++)
		for (i = 0; i < nlibs; i++) {
			long off = 0;

			/* a page can be briefly pinned elsewhere: retry */
			for (tries = 0; tries < 5; tries++)
				if (!(off = move_lib(&libs[i], (from + 1 + to) % nodes,
						     tries == 4)))
					break;
			if (off) {
				fail("from node %d: %ld of %zu pages of %s not moved to node %d",
				     from, off, libs[i].pages, libs[i].path,
				     (from + 1 + to) % nodes);
				bad++;
			}
		}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct walker_arg wa = { .nlibs = 0 };
	int per_cpu = 2, execs = 40, i, opt, nodes;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *helper;
	struct churn churn;
	struct shared *sh;
	pid_t walk;

	test_start("exec_churn");
	spawn_init(argv);
	while ((opt = getopt(argc, argv, "c:n:")) != -1) {
		if (opt == 'c')
			per_cpu = atoi(optarg);
		else if (opt == 'n')
			execs = atoi(optarg);
		else
			die("usage: exec_churn HELPER LIB... [-c COPIES_PER_CPU] [-n EXECS]");
	}
	if (optind + 2 > argc)
		die("usage: exec_churn HELPER LIB... [-c COPIES_PER_CPU] [-n EXECS]");
	helper = argv[optind++];
	for (; optind < argc && wa.nlibs < MAX_LIBS; optind++)
		snprintf(wa.libs[wa.nlibs++].path, sizeof(wa.libs[0].path), "%s",
			 argv[optind]);
	nodes = nr_nodes();
	sh = shared_alloc(sizeof(*sh));
	wa.sh = sh;

	walk = spawn_on_node(0, 0, walker, &wa, sizeof(wa));
	churn_start(&churn, helper, per_cpu * ncpu, execs);
	churn_wait(&churn);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
	reap(walk, "walker");
	note("%d copies x %d execs on %ld CPUs; walker moves during the churn: %ld whole, %ld partial",
	     churn.n, execs, ncpu, sh->moves_ok, sh->moves_failed);

	for (i = 0; i < nodes; i++) {
		wa.from = i;
		reap(spawn_on_node(i, 0, final_moves, &wa, sizeof(wa)), "final mover");
	}
	return test_end("execs complete; libc/ld.so pages migrate between nodes during and after");
}
