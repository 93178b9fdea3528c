// SPDX-License-Identifier: GPL-2.0
/*
 * hwpoison: MADV_HWPOISON on a file page that processes on every node map.
 * memory_failure() unmaps the poisoned page from every mapping through the
 * reverse map (try_to_unmap -> rmap_walk_file), replacing each mapping by a
 * poison entry, and collects the processes to signal by walking the file's
 * i_mmap (collect_procs_file).
 *
 Checks, for each file system given:
 *   tmpfs (the page is dirty: its data is lost): the injecting process gets
 *     SIGBUS (BUS_MCEERR_AR), and so does every other process when it
 *     touches the page; every other page reads intact. A mapping the walk
 *     missed would still map the poisoned page and read it.
 *   a disk file system (the page is clean): the kernel drops the page
 *     without killing anyone; every process reads the data back from the
 *     disk through a new page, and they must all share that page: each
 *     writes a byte into it and every other one must see all the bytes. A
 *     mapping the walk missed keeps the poisoned page, and the writes
 *     through it are seen by no one else.
 *
 * Usage: hwpoison DIR...    (never on a real machine: it poisons memory)
 */
#include "common.h"
#include <linux/magic.h>
#include <sys/vfs.h>

#ifndef BUS_MCEERR_AR
#define BUS_MCEERR_AR 4
#endif

#define NPAGES 8
#define VICTIM 3
#define PER_NODE 2

static volatile sig_atomic_t got_bus, bus_code;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got_bus = 1;
	bus_code = si->si_code;
}

static int reader(const char *path, int k, int n, int node, int lost,
		  struct gate *g)
{
	char *map = map_touch(path, NPAGES), c;
	int pg, sig, bad = 0, j;

	gate_pass(g); /* mapped; the page is poisoned when we go on */
	gate_pass(g);
	for (pg = 0; pg < NPAGES; pg++) {
		sig = probe_read(map + pg * PAGE + 11, &c);
		if (pg == VICTIM && lost) {
			if (sig != SIGBUS || probe_code != BUS_MCEERR_AR) {
				fail("%s: process on node %d, poisoned page: %s (code %d), want SIGBUS (BUS_MCEERR_AR)",
				     path, node, signame(sig), sig ? probe_code : 0);
				bad = 1;
			}
		} else if (sig || c != pattern(pg * PAGE + 11, 0)) {
			fail("%s: process on node %d, page %d: %s %#x", path, node,
			     pg, signame(sig), c & 0xff);
			bad = 1;
		}
	}
	if (lost)
		return bad;
	/* the page read back: one page, shared by every mapping */
	map[VICTIM * PAGE + 200 + k] = (char)(0x40 + k);
	gate_pass(g);
	for (j = 0; j < n; j++)
		if (map[VICTIM * PAGE + 200 + j] != (char)(0x40 + j)) {
			fail("%s: process on node %d does not see process %d's write to the page read back",
			     path, node, j);
			bad = 1;
		}
	return bad;
}

static int poisoner(const char *path, int lost)
{
	struct sigaction sa;
	char *map = map_touch(path, NPAGES);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);
	if (madvise(map + VICTIM * PAGE, PAGE, MADV_HWPOISON)) {
		fail("%s: MADV_HWPOISON: %s", path, strerror(errno));
		return 1;
	}
	if (!lost) {
		if (got_bus)
			fail("%s: the injecting process got SIGBUS for a clean page", path);
		return got_bus;
	}
	if (!got_bus || bus_code != BUS_MCEERR_AR) {
		fail("%s: the injecting process got %s (code %d), want SIGBUS (BUS_MCEERR_AR)",
		     path, got_bus ? "SIGBUS" : "no signal", (int)bus_code);
		return 1;
	}
	return 0;
}

static int reader_task(void *p)
{
	struct task *t = p;

	return reader(t->path, t->k, t->n, t->node, t->flag, t->g);
}

static int poisoner_task(void *p)
{
	struct task *t = p;

	return poisoner(t->path, t->flag);
}

static void run_dir(const char *dir)
{
	int nodes = nr_nodes(), n = nodes * PER_NODE, k, fd;
	struct gate *g = gate_new();
	struct statfs sfs;
	char path[256], buf[PAGE];
	pid_t pids[64], p;

	int lost;

	if (statfs(dir, &sfs))
		die("statfs");
	lost = sfs.f_type == TMPFS_MAGIC;
	snprintf(path, sizeof(path), "%s/hwpoison.dat", dir);
	close(make_file(path, NPAGES * PAGE, 0, 1));
	for (k = 0; k < n; k++) {
		struct task t = { .k = k, .n = n, .node = k % nodes, .flag = lost,
				  .g = g };

		snprintf(t.path, sizeof(t.path), "%s", path);
		pids[k] = spawn_task(k % nodes, k / nodes, reader_task, &t);
	}
	if (!gate_collect(g, n))
		die("a reader died before the poison");
	gate_open(g);
	{
		struct task t = { .flag = lost };

		snprintf(t.path, sizeof(t.path), "%s", path);
		p = spawn_task(n % nodes, n / nodes, poisoner_task, &t);
	}
	reap(p, "poisoner");
	for (k = 0; k < (lost ? 1 : 2); k++) {
		if (!gate_collect(g, n)) {
			fail("%s: a reader died after the poison", dir);
			break;
		}
		gate_open(g);
	}
	for (k = 0; k < n; k++)
		reap(pids[k], "reader");

	if (!lost) {
		/* the clean page left the page cache: read() fetches it again */
		fd = open(path, O_RDONLY);
		if (fd < 0 || pread(fd, buf, PAGE, VICTIM * PAGE) != (ssize_t)PAGE)
			fail("%s: read of the poisoned offset: %s", path, strerror(errno));
		else
			check(buf[11] == pattern(VICTIM * PAGE + 11, 0) &&
			      buf[200] == 0x40,
			      "%s: the page read back from disk is wrong", path);
		close(fd);
	}
	unlink(path);
	note("%s: %s page %d poisoned under %d mappings on %d node(s)", dir,
	     lost ? "dirty" : "clean", VICTIM, n + 1, nodes);
}

int main(int argc, char **argv)
{
	int i;

	test_start("hwpoison");
	spawn_init(argv);
	if (argc < 2)
		die("usage: hwpoison DIR...");
	for (i = 1; i < argc; i++)
		run_dir(argv[i]);
	return test_end("a poisoned dirty page: SIGBUS in every mapping; a clean one: every mapping re-reads one new page");
}
