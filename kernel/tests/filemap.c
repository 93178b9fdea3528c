// SPDX-License-Identifier: GPL-2.0
/*
 * filemap: MAP_SHARED and MAP_PRIVATE mappings of one file in processes on
 * every node, then a hole punch and a truncate (unmap_mapping_range, which
 * walks the file's i_mmap) and a re-extension.
 *
 * Each child maps the file one way and checks, after each step, what every
 * page must read:
 *   punch [4,8):  shared and untouched private pages read zeros; a private
 *                 page the child wrote (COW) keeps the child's data;
 *   truncate to 8 pages: every page at or past 8 raises SIGBUS, COWed
 *                 private pages included (truncation zaps COWs too);
 *   extend to 16: pages 8.. read zeros, never the old data.
 * A mapping the walk misses keeps the old page: the child reads stale data
 * where it must see zeros or SIGBUS.
 *
 * Usage: filemap DIR...   (a tmpfs and a disk file system, e.g. ext2)
 */
#include "common.h"
#include <linux/falloc.h>

#define NPAGES 16
#define PUNCH_FIRST 4
#define PUNCH_END 8
#define TRUNC_PAGES 8
#define COW_LOW 2   /* below the truncation point: survives it */
#define COW_HIGH 12 /* past it: dropped by the truncation */

enum kind { SHARED, PRIVATE, PRIVATE_COW, SHARED_SPLIT, NKINDS };
static const char *kind_name[] = { "shared", "private", "private-cow",
				   "shared-split" };

/* What page @pg of a @kind mapping must read after @step (0..3). */
static int expect(enum kind kind, int pg, int step, int punched, char *want)
{
	int cow = kind == PRIVATE_COW && (pg == COW_LOW || pg == COW_HIGH);

	if (step == 2 && pg >= TRUNC_PAGES)
		return SIGBUS;
	if (step == 3 && pg >= TRUNC_PAGES) {
		*want = 0;
		return 0;
	}
	if (cow) {
		*want = 'P';
		return 0;
	}
	if (step >= 1 && punched && pg >= PUNCH_FIRST && pg < PUNCH_END) {
		*want = 0;
		return 0;
	}
	*want = pattern(pg * PAGE + 17, 0);
	return 0;
}

struct child_arg {
	char path[256];
	enum kind kind;
	int node, punched;
	struct gate *g;
};

static int child(void *p)
{
	struct child_arg *a = p;
	const char *path = a->path;
	enum kind kind = a->kind;
	int node = a->node, punched = a->punched;
	struct gate *g = a->g;
	int fd, step, pg, bad = 0;
	int flags = kind == PRIVATE || kind == PRIVATE_COW ? MAP_PRIVATE : MAP_SHARED;
	char *map;

	fd = open(path, O_RDWR);
	if (fd < 0)
		die("open %s", path);
	map = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (map == MAP_FAILED)
		die("mmap %s", path);
	if (kind == SHARED_SPLIT &&
	    mprotect(map + 6 * PAGE, 4 * PAGE, PROT_READ))
		die("mprotect split");
	if (kind == PRIVATE_COW) {
		map[COW_LOW * PAGE + 17] = 'P';
		map[COW_HIGH * PAGE + 17] = 'P';
	}
	for (step = 0; step < 4; step++) {
		gate_pass(g);
		for (pg = 0; pg < NPAGES; pg++) {
			char want = 0, got = 0;
			int sig, want_sig = expect(kind, pg, step, punched, &want);

			sig = probe_read(map + pg * PAGE + 17, &got);
			if (sig != want_sig || (!sig && got != want)) {
				fail("%s %s node %d step %d page %d: %s %#x, want %s %#x",
				     path, kind_name[kind], node, step, pg,
				     signame(sig), got & 0xff, signame(want_sig),
				     want & 0xff);
				bad++;
			}
		}
	}
	return bad ? 1 : 0;
}

static void run_dir(const char *dir)
{
	char path[256];
	int nodes = nr_nodes(), n = 0, fd, punched, i, node, kind;
	pid_t pids[64];
	struct gate *g = gate_new();

	snprintf(path, sizeof(path), "%s/filemap.dat", dir);
	fd = make_file(path, NPAGES * PAGE, 0, 1);
	/* a punch past the end changes nothing but tells whether we can */
	punched = !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			     NPAGES * PAGE, PAGE);
	if (!punched && errno != EOPNOTSUPP)
		die("fallocate probe on %s", dir);
	for (node = 0; node < nodes; node++)
		for (kind = 0; kind < NKINDS; kind++) {
			struct child_arg a = { .kind = kind, .node = node,
					       .punched = punched, .g = g };

			snprintf(a.path, sizeof(a.path), "%s", path);
			pids[n++] = spawn_on_node(node, kind, child, &a, sizeof(a));
		}

	for (i = 0; i < 4; i++) {
		if (!gate_collect(g, n)) {
			fail("%s: a child died before step %d", dir, i);
			break;
		}
		if (i == 1 && punched &&
		    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      PUNCH_FIRST * PAGE, (PUNCH_END - PUNCH_FIRST) * PAGE))
			die("punch");
		if (i == 2 && ftruncate(fd, TRUNC_PAGES * PAGE))
			die("truncate");
		if (i == 3 && ftruncate(fd, NPAGES * PAGE))
			die("extend");
		gate_open(g);
	}
	for (i = 0; i < n; i++)
		reap(pids[i], "child");
	close(fd);
	unlink(path);
	note("%s: %d mappings on %d node(s), hole punch %s", dir, n, nodes,
	     punched ? "checked" : "not supported here");
}

int main(int argc, char **argv)
{
	int i;

	test_start("filemap");
	spawn_init(argv);
	if (argc < 2)
		die("usage: filemap DIR...");
	for (i = 1; i < argc; i++)
		run_dir(argv[i]);
	return test_end("shared/private/COW/split mappings vs punch, truncate, extend");
}
