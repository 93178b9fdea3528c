// SPDX-License-Identifier: GPL-2.0
/*
 * mremap: moving, growing, shrinking and partly moving file mappings, in
 * processes on every node. A move copies the VMA and links the copy into
 * the file's i_mmap under the rmap locks (take_rmap_locks), then unlinks
 * the old one; growing in place changes the VMA's range in the tree.
 *
 * Each process makes four mappings of one tmpfs file:
 *   moved:   pages [0,8) moved to a new address (MREMAP_FIXED);
 *   grown:   pages [0,4) grown to [0,12) (in place or moved);
 *   shrunk:  pages [0,8) shrunk to [0,2);
 *   part:    pages [0,8), of which [2,6) is moved elsewhere (a split).
 * Checks: the old addresses fault (SIGSEGV), the new ones read the file's
 * data; then the file is truncated to 1 page, and every page at or past it
 * must raise SIGBUS at the new addresses (a VMA the tree holds with its old
 * range, or not at all, keeps its pages); then the file grows back and the
 * pages read zeros.
 *
 * Usage: mremap DIR
 */
#include "common.h"

#define NPAGES 16
#define PER_NODE 2

struct view {
	const char *name;
	char *addr;
	int first, pages; /* file pages [first, first + pages) */
};

static char *map_at(int fd, int pages, off_t off)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       off);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* A free range of @pages pages, left unmapped. */
static char *hole(int pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED || munmap(p, pages * PAGE))
		die("hole");
	return p;
}

static int expect_fault(char *p, int sig, const char *what, int node)
{
	char c;
	int got = probe_read(p, &c);

	if (got == sig)
		return 0;
	fail("node %d: %s: %s, want %s", node, what, signame(got), signame(sig));
	return 1;
}

/* @step 0: data; 1: SIGBUS past page 0; 2: zeros past page 0 */
static int check_view(struct view *v, int step, int node)
{
	int i, bad = 0;

	for (i = 0; i < v->pages; i++) {
		int pg = v->first + i, sig;
		char c, want = step == 0 || pg == 0 ? pattern(pg * PAGE + 3, 0) : 0;

		sig = probe_read(v->addr + i * PAGE + 3, &c);
		if (step == 1 && pg > 0) {
			if (sig != SIGBUS) {
				fail("node %d %s page %d after truncate: %s, want SIGBUS",
				     node, v->name, pg, signame(sig));
				bad = 1;
			}
		} else if (sig || c != want) {
			fail("node %d %s page %d step %d: %s %#x, want %#x", node,
			     v->name, pg, step, signame(sig), c & 0xff, want & 0xff);
			bad = 1;
		}
	}
	return bad;
}

static int child(const char *path, int node, struct gate *g)
{
	int fd = open(path, O_RDWR), bad = 0, i, step;
	struct view v[5];
	char *a, *b;

	if (fd < 0)
		die("open");
	/* moved */
	a = map_at(fd, 8, 0);
	b = hole(8);
	if (mremap(a, 8 * PAGE, 8 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, b) != b)
		die("mremap move");
	bad |= expect_fault(a, SIGSEGV, "old address of the moved mapping", node);
	v[0] = (struct view){ "moved", b, 0, 8 };
	/* grown */
	a = map_at(fd, 4, 0);
	b = mremap(a, 4 * PAGE, 12 * PAGE, MREMAP_MAYMOVE);
	if (b == MAP_FAILED)
		die("mremap grow");
	v[1] = (struct view){ "grown", b, 0, 12 };
	/* shrunk */
	a = map_at(fd, 8, 0);
	if (mremap(a, 8 * PAGE, 2 * PAGE, 0) != a)
		die("mremap shrink");
	bad |= expect_fault(a + 2 * PAGE, SIGSEGV, "past the shrunk mapping", node);
	v[2] = (struct view){ "shrunk", a, 0, 2 };
	/* part of a mapping moved: three VMAs of one mapping */
	a = map_at(fd, 8, 0);
	b = hole(4);
	if (mremap(a + 2 * PAGE, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		   b) != b)
		die("mremap part");
	bad |= expect_fault(a + 3 * PAGE, SIGSEGV, "the moved-out middle", node);
	v[3] = (struct view){ "part-head", a, 0, 2 };
	v[4] = (struct view){ "part-middle", b, 2, 4 };

	for (step = 0; step < 3; step++) {
		gate_pass(g);
		for (i = 0; i < 5; i++)
			bad |= check_view(&v[i], step, node);
		/* the tail [6,8) of the split mapping */
		if (step == 1)
			bad |= expect_fault(a + 6 * PAGE, SIGBUS, "part-tail after truncate", node);
	}
	return bad;
}

static int child_task(void *p)
{
	struct task *t = p;

	return child(t->path, t->node, t->g);
}

int main(int argc, char **argv)
{
	int nodes = nr_nodes(), n = nodes * PER_NODE, k, i, fd;
	struct gate *g;
	char path[256];
	pid_t pids[64];

	test_start("mremap");
	spawn_init(argv);
	g = gate_new();
	if (argc != 2)
		die("usage: mremap DIR");
	snprintf(path, sizeof(path), "%s/mremap.dat", argv[1]);
	fd = make_file(path, NPAGES * PAGE, 0, 0);
	for (k = 0; k < n; k++) {
		struct task t = { .node = k % nodes, .g = g };

		snprintf(t.path, sizeof(t.path), "%s", path);
		pids[k] = spawn_task(k % nodes, k / nodes, child_task, &t);
	}
	for (i = 0; i < 3; i++) {
		if (!gate_collect(g, n)) {
			fail("a process died before step %d", i);
			break;
		}
		if (i == 1 && ftruncate(fd, PAGE))
			die("truncate");
		if (i == 2 && ftruncate(fd, NPAGES * PAGE))
			die("extend");
		gate_open(g);
	}
	for (k = 0; k < n; k++)
		reap(pids[k], "child");
	close(fd);
	unlink(path);
	note("%d processes on %d node(s), 5 remapped views each", n, nodes);
	return test_end("moved, grown, shrunk and split file mappings stay in the reverse map");
}
