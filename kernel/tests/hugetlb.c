// SPDX-License-Identifier: GPL-2.0
/*
 * hugetlb: a hugetlbfs file mapped by processes on every node (MAP_SHARED,
 * and MAP_PRIVATE with a copy-on-write page), then a hole punch and a
 * truncate. hugetlbfs unmaps punched and truncated pages from every mapping
 * by its own walk of the file's i_mmap (hugetlb_vmdelete_list), then
 * frees them (remove_inode_hugepages, which walks again for a page still
 * mapped).
 *
 *   start:    each shared mapping sees the words every process wrote;
 *   punch 1:  huge page 1 reads zeros everywhere (a private COW copy of
 *             page 1 would survive, but the COW pages are elsewhere);
 *   truncate to 2 huge pages: pages 2 and 3 raise SIGBUS in every mapping,
 *             private COW pages included;
 *   the end:  every huge page is free again, none reserved (a mapping that
 *             a walk missed would pin its page).
 *
 * Usage: hugetlb HUGETLBFS_DIR
 */
#include "common.h"
#include <linux/falloc.h>

#define NHUGE 4
#define TRUNC 2
#define PER_NODE 2
#define POOL 24

enum { SHARED, PRIVATE_COW };

static int child(const char *path, int k, int kind, int node, int n,
		 struct gate *g)
{
	int fd = open(path, O_RDWR), step, pg, bad = 0;
	char *map;

	if (fd < 0)
		die("open %s", path);
	map = mmap(NULL, NHUGE * HPAGE, PROT_READ | PROT_WRITE,
		   kind == SHARED ? MAP_SHARED : MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		die("mmap %s (%s)", path, kind == SHARED ? "shared" : "private");
	close(fd);
	if (kind == SHARED)
		((long *)(map + (k % NHUGE) * HPAGE))[k] = 1000 + k;
	else
		map[3 * HPAGE + 64 * 1024 + k] = 'P'; /* COW page 3 */
	for (step = 0; step < 3; step++) {
		gate_pass(g);
		for (pg = 0; pg < NHUGE; pg++) {
			int j, sig;
			char c;

			sig = probe_read(map + pg * HPAGE + 8 * 100, &c);
			if (step == 2 && pg >= TRUNC) {
				if (sig != SIGBUS) {
					fail("node %d %s huge page %d after truncate: %s, want SIGBUS",
					     node, kind == SHARED ? "shared" : "private",
					     pg, signame(sig));
					bad = 1;
				}
				continue;
			}
			if (sig) {
				fail("node %d huge page %d step %d: %s", node, pg,
				     step, signame(sig));
				bad = 1;
				continue;
			}
			/* the words of every sharer: kept, or zero if punched */
			for (j = 0; j < n && kind == SHARED; j++) {
				long want = step >= 1 && pg == 1 ? 0 : 1000 + j;

				if (j % NHUGE != pg)
					continue;
				if (((long *)(map + pg * HPAGE))[j] != want) {
					fail("node %d shared huge page %d step %d: word %d is %ld, want %ld",
					     node, pg, step, j,
					     ((long *)(map + pg * HPAGE))[j], want);
					bad = 1;
				}
			}
		}
	}
	return bad;
}

static int child_task(void *p)
{
	struct task *t = p;

	return child(t->path, t->k, t->kind, t->node, t->n, t->g);
}

int main(int argc, char **argv)
{
	int nodes = nr_nodes(), n = 0, i, k, fd, shared = nodes * PER_NODE;
	long total0, free_end, rsvd_end, total_end;
	char path[256], pool[24];
	struct gate *g;
	pid_t pids[64];

	test_start("hugetlb");
	spawn_init(argv);
	g = gate_new();
	if (argc != 2)
		die("usage: hugetlb HUGETLBFS_DIR");
	total0 = meminfo("HugePages_Total");
	snprintf(pool, sizeof(pool), "%d", POOL);
	if (write_str("/proc/sys/vm/nr_hugepages", pool))
		die("set nr_hugepages");
	if (meminfo("HugePages_Total") < POOL)
		test_skip("cannot allocate the huge page pool");
	snprintf(path, sizeof(path), "%s/hugetlb.dat", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, NHUGE * HPAGE))
		die("create %s", path);

	/* the sharers write first: the COW children copy what they see */
	for (k = 0; k < shared + nodes; k++) {
		int kind = k < shared ? SHARED : PRIVATE_COW;

		struct task t = { .k = k, .kind = kind, .node = k % nodes,
				  .n = shared, .g = g };

		snprintf(t.path, sizeof(t.path), "%s", path);
		pids[n++] = spawn_task(k % nodes, k / nodes, child_task, &t);
	}
	for (i = 0; i < 3; i++) {
		if (!gate_collect(g, n)) {
			fail("a process died before step %d", i);
			break;
		}
		if (i == 1 && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					HPAGE, HPAGE))
			die("punch");
		if (i == 2 && ftruncate(fd, TRUNC * HPAGE))
			die("truncate");
		gate_open(g);
	}
	for (i = 0; i < n; i++)
		reap(pids[i], "child");
	close(fd);
	unlink(path);
	free_end = meminfo("HugePages_Free");
	rsvd_end = meminfo("HugePages_Rsvd");
	total_end = meminfo("HugePages_Total");
	check(free_end == total_end && rsvd_end == 0,
	      "after every mapping is gone: %ld of %ld huge pages free, %ld reserved",
	      free_end, total_end, rsvd_end);
	snprintf(pool, sizeof(pool), "%ld", total0 > 0 ? total0 : 0);
	write_str("/proc/sys/vm/nr_hugepages", pool);
	note("%d shared and %d private mappings of %d huge pages on %d node(s)",
	     shared, nodes, NHUGE, nodes);
	return test_end("punch and truncate reach every mapping; the pool is whole again");
}
