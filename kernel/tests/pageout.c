// SPDX-License-Identifier: GPL-2.0
/*
 * pageout: reclaim of mapped file pages (MADV_PAGEOUT), which unmaps each
 * page through the reverse map (try_to_unmap -> rmap_walk_file) before it
 * can drop it, and writeback of mapped dirty pages (msync), which
 * write-protects every mapping of the page (folio_mkclean, the same walk).
 *
 * Processes on every node map the whole file (untouched: overlapping
 * intervals in the tree) and, in a second VMA, their own chunk, which they
 * touch (MADV_PAGEOUT leaves alone pages that several processes map, and
 * fault-around would map the neighbours' pages too without a VMA boundary):
 *   clean: MADV_PAGEOUT its chunk; every page must leave the page cache
 *          (mincore) and read back intact afterwards;
 *   dirty: write the chunk through the mapping, msync, MADV_PAGEOUT; every
 *          page must leave the page cache, and read() and the mapping must
 *          both show the new data afterwards.
 * A walk that misses the process's VMA leaves the page mapped, so it stays
 * resident. On tmpfs the pages go to swap, so tmpfs is tested only when
 * swap is on.
 *
 * Usage: pageout DIR...
 */
#include "common.h"
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/vfs.h>

#define CHUNK 16
#define PER_NODE 2

/*
 * Drain every CPU's LRU batches: MADV_PAGEOUT skips a page that is not on
 * an LRU list yet, as one created by another CPU a moment ago may not be.
 * move_pages() drains them all before it starts (lru_cache_disable), even
 * when the page is already where it is asked to go.
 */
static void drain_lru(char *p)
{
	int node = page_node(p), st;
	void *pg = p;

	if (node >= 0)
		sys_move_pages(0, 1, &pg, &node, &st, MPOL_MF_MOVE);
}

static int all_out(char *map, int first, int n, const char *what, int node)
{
	int tries, pg, left = 0, mapped = 0;

	for (tries = 0; tries < 3; tries++) {
		drain_lru(map + first * PAGE);
		if (madvise(map + first * PAGE, n * PAGE, MADV_PAGEOUT))
			die("MADV_PAGEOUT");
		for (left = 0, pg = first; pg < first + n; pg++)
			left += resident(map + pg * PAGE);
		if (!left)
			return 0;
	}
	for (pg = first; pg < first + n; pg++)
		mapped += pte_present(map + pg * PAGE);
	fail("%s, node %d: %d of %d pages still resident after MADV_PAGEOUT, %d still mapped",
	     what, node, left, n, mapped);
	return 1;
}

static int check_chunk(int fd, char *map, int first, int gen, const char *what)
{
	char buf[PAGE];
	int pg, bad = 0;
	size_t i;

	for (pg = first; pg < first + CHUNK && !bad; pg++) {
		if (pread(fd, buf, PAGE, pg * PAGE) != (ssize_t)PAGE)
			die("pread");
		for (i = 0; i < PAGE; i += 97)
			if (buf[i] != pattern(pg * PAGE + i, gen) ||
			    map[pg * PAGE + i] != pattern(pg * PAGE + i, gen)) {
				fail("%s: page %d byte %zu: read %#x, mapped %#x, want %#x",
				     what, pg, i, buf[i] & 0xff,
				     map[pg * PAGE + i] & 0xff,
				     pattern(pg * PAGE + i, gen) & 0xff);
				bad = 1;
				break;
			}
	}
	return bad;
}

static int child(const char *path, int k, int node, int npages, struct gate *g)
{
	int fd, pg, first = k * CHUNK, bad = 0, lock;
	char *map, *whole, what[300];
	volatile char sink;
	size_t i;

	fd = open(path, O_RDWR);
	if (fd < 0)
		die("open");
	whole = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	/* indexed by page number of the file, as if it mapped the whole */
	map = mmap(NULL, CHUNK * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   first * PAGE);
	if (map == MAP_FAILED || whole == MAP_FAILED)
		die("mmap");
	map -= first * PAGE;
	for (pg = first; pg < first + CHUNK; pg++)
		sink = map[pg * PAGE];
	(void)sink;
	gate_pass(g); /* every process has its chunk mapped */
	/*
	 * One process at a time from here: while others write back and
	 * reclaim the same file at once, a page this one has unmapped can be
	 * held for a moment elsewhere and stay in the page cache, unmapped.
	 * That is not what this test is after; every process still maps the
	 * whole file meanwhile.
	 */
	lock = open("/tmp/pageout.lock", O_RDWR | O_CREAT, 0600);
	if (lock < 0 || flock(lock, LOCK_EX))
		die("lock");

	snprintf(what, sizeof(what), "%s clean", path);
	bad |= all_out(map, first, CHUNK, what, node);
	bad |= check_chunk(fd, map, first, 0, what);

	for (pg = first; pg < first + CHUNK; pg++)
		for (i = 0; i < PAGE; i++)
			map[pg * PAGE + i] = pattern(pg * PAGE + i, 1);
	if (msync(map + first * PAGE, CHUNK * PAGE, MS_SYNC))
		die("msync");
	snprintf(what, sizeof(what), "%s dirty", path);
	bad |= all_out(map, first, CHUNK, what, node);
	bad |= check_chunk(fd, map, first, 1, what);
	close(lock);
	return bad;
}

static int child_task(void *p)
{
	struct task *t = p;

	return child(t->path, t->k, t->node, t->count, t->g);
}

static void run_dir(const char *dir)
{
	int nodes = nr_nodes(), n = nodes * PER_NODE, k, fd;
	int npages = n * CHUNK;
	struct gate *g = gate_new();
	char path[256];
	pid_t pids[64];

	snprintf(path, sizeof(path), "%s/pageout.dat", dir);
	fd = make_file(path, npages * PAGE, 0, 1);
	close(fd);
	for (k = 0; k < n; k++) {
		struct task t = { .k = k, .node = k % nodes, .count = npages, .g = g };

		snprintf(t.path, sizeof(t.path), "%s", path);
		pids[k] = spawn_task(k % nodes, k / nodes, child_task, &t);
	}
	if (gate_collect(g, n))
		gate_open(g);
	else
		fail("%s: a process died before paging out", dir);
	for (k = 0; k < n; k++)
		reap(pids[k], "child");
	unlink(path);
	note("%s: %d processes on %d node(s), %d pages each", dir, n, nodes, CHUNK);
}

int main(int argc, char **argv)
{
	int i, ran = 0;

	test_start("pageout");
	spawn_init(argv);
	for (i = 1; i < argc; i++) {
		struct statfs sfs;

		if (statfs(argv[i], &sfs))
			die("statfs %s", argv[i]);
		if (sfs.f_type == TMPFS_MAGIC && meminfo("SwapTotal") <= 0) {
			note("%s: tmpfs pages need swap, and there is none: skipped", argv[i]);
			continue;
		}
		run_dir(argv[i]);
		ran++;
	}
	if (!ran)
		test_skip("no directory to test");
	return test_end("clean and dirty file pages reclaimed from every node's mappings");
}
