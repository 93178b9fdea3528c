// SPDX-License-Identifier: GPL-2.0
/*
 * collapse: khugepaged's collapse of a read-only file mapping into a huge
 * page (CONFIG_READ_ONLY_THP_FOR_FS), run synchronously by MADV_COLLAPSE,
 * which uses khugepaged's own collapse_file(). It unmaps the small pages
 * from every mapping through the reverse map (try_to_unmap), and then
 * walks the file's i_mmap to free the emptied page tables of every mapping
 * (retract_page_tables), so that each maps the huge page with one PMD on
 * its next fault.
 *
 * Processes on every node map the file read-only at a 2 MiB-aligned
 * address and read every page; another process collapses the first 2 MiB.
 * Checks: MADV_COLLAPSE succeeds (a small page still mapped somewhere makes
 * it fail); every process then reads the same data and maps the range with
 * a PMD (smaps FilePmdMapped; a mapping whose page table was not retracted
 * maps the huge page by 512 PTEs instead).
 *
 * Usage: collapse DIR     (a disk file system: tmpfs collapses by shmem rules)
 */
#include "common.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PER_NODE 2
#define SIZE (2 * HPAGE)
/* MADV_COLLAPSE's transient EAGAIN: up to 40 tries 25 ms apart */
#define COLLAPSE_TRIES 40
#define COLLAPSE_PAUSE_MS 25

static char *map_aligned(const char *path)
{
	char *area = mmap(NULL, SIZE + HPAGE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *map;
	int fd = open(path, O_RDONLY);
	size_t i;
	volatile char sink;

	if (area == MAP_FAILED || fd < 0)
		die("map %s", path);
	map = (char *)(((uintptr_t)area + HPAGE - 1) & ~(HPAGE - 1));
	if (mmap(map, SIZE, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != map)
		die("mmap %s", path);
	close(fd);
	for (i = 0; i < SIZE; i += PAGE)
		sink = map[i];
	(void)sink;
	return map;
}

/* smaps's FilePmdMapped for the VMA starting at @map, in kB. */
static long pmd_mapped_kb(char *map)
{
	char line[512], want[32];
	long v = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		die("smaps");
	snprintf(want, sizeof(want), "%lx-", (unsigned long)map);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, want, strlen(want));
		else if (in && !strncmp(line, "FilePmdMapped:", 14))
			v = strtol(line + 14, NULL, 10);
	}
	fclose(f);
	return v;
}

static int verify(char *map, const char *who)
{
	size_t i;
	long kb;

	for (i = 0; i < SIZE; i += 509)
		if (map[i] != pattern(i, 0)) {
			fail("%s: byte %zu reads %#x, want %#x", who, i,
			     map[i] & 0xff, pattern(i, 0) & 0xff);
			return 1;
		}
	kb = pmd_mapped_kb(map);
	if (kb < (long)(HPAGE >> 10)) {
		fail("%s: FilePmdMapped %ld kB, want %lu (the huge page by a PMD)",
		     who, kb, HPAGE >> 10);
		return 1;
	}
	return 0;
}

static int reader(const char *path, int node, struct gate *g)
{
	char *map = map_aligned(path), who[64];

	gate_pass(g); /* mapped and faulted in by small pages */
	gate_pass(g); /* collapsed */
	snprintf(who, sizeof(who), "process on node %d", node);
	return verify(map, who);
}

static int collapser(const char *path)
{
	char *map = map_aligned(path);
	int tries, err = 0;

	/*
	 * EAGAIN is the kernel's "transient, try again": a page briefly
	 * locked, off the LRU or with an extra reference elsewhere (an LRU
	 * batch, a reader's fault still finishing). Five tries back to back
	 * were not enough on a busy host (numa_split failed once in CI, with
	 * nothing of the series involved), so retry for up to a second, with
	 * a pause for the other CPUs to let go. A page still mapped after the
	 * unmap makes every try fail, so a broken reverse-map walk still
	 * fails here; any other error fails at once.
	 */
	for (tries = 1; tries <= COLLAPSE_TRIES; tries++) {
		if (!madvise(map, HPAGE, MADV_COLLAPSE))
			return verify(map, "collapsing process");
		err = errno;
		if (err != EAGAIN)
			break;
		pause_ms(COLLAPSE_PAUSE_MS);
	}
	fail("MADV_COLLAPSE: %s (try %d of %d)", strerror(err),
	     tries > COLLAPSE_TRIES ? COLLAPSE_TRIES : tries, COLLAPSE_TRIES);
	return 1;
}

static int reader_task(void *p)
{
	struct task *t = p;

	return reader(t->path, t->node, t->g);
}

static int collapser_task(void *p)
{
	struct task *t = p;

	return collapser(t->path);
}

int main(int argc, char **argv)
{
	int nodes = nr_nodes(), n = nodes * PER_NODE, k;
	struct gate *g;
	char path[256];
	pid_t pids[64], p;

	test_start("collapse");
	spawn_init(argv);
	g = gate_new();
	if (argc != 2)
		die("usage: collapse DIR");
	snprintf(path, sizeof(path), "%s/collapse.dat", argv[1]);
	close(make_file(path, SIZE, 0, 1)); /* no writer left: read-only THP */
	for (k = 0; k < n; k++) {
		struct task t = { .node = k % nodes, .g = g };

		snprintf(t.path, sizeof(t.path), "%s", path);
		pids[k] = spawn_task(k % nodes, k / nodes, reader_task, &t);
	}
	if (!gate_collect(g, n))
		die("a reader died before the collapse");
	gate_open(g);
	{
		struct task t = { .node = n % nodes };

		snprintf(t.path, sizeof(t.path), "%s", path);
		p = spawn_task(n % nodes, n / nodes, collapser_task, &t);
	}
	reap(p, "collapser");
	if (!gate_collect(g, n))
		fail("a reader died");
	gate_open(g);
	for (k = 0; k < n; k++)
		reap(pids[k], "reader");
	unlink(path);
	note("2 MiB of %s collapsed under %d mappings on %d node(s)", path, n + 1, nodes);
	return test_end("read-only file THP collapse reaches every mapping");
}
