// SPDX-License-Identifier: GPL-2.0
/*
 * promote_race: many fresh files, each promoted from the central tree to
 * shards (the aspace design) while every CPU links, unlinks and walks it.
 *
 * `promotion` promotes a few files once each (libc.so, ld.so, its own
 * file), so a promotion that goes wrong for a moment (its shards seen
 * before they hold the file's VMAs, say) must meet a walk by chance. This
 * test makes the promotion itself the event: FILES times, a new tmpfs file
 * is created and, with the promotion rule lowered through debugfs (8
 * handoffs within 2 s), promoted by the mmap/munmap churn of workers on
 * every CPU, while a puncher on the other node punches one page and
 * writes it back, back to back (unmap_mapping_range's walk). So every
 * promotion happens while links, unlinks and walks of the same file run on
 * the other CPUs.
 *
 * What it checks, in every mapping of every worker:
 *  - the churn's mappings read the file's data (or zeros in the punched
 *    page while it is punched); a read of the punched page that returns
 *    data while the page is punched (the punch returned, its generation
 *    is odd before and after the read) is a mapping the punch's walk
 *    missed;
 *  - each worker keeps one mapping made before the promotion (in the
 *    central tree, moved to a shard by the promotion); after the churn the
 *    file is truncated to nothing and every page of every kept mapping
 *    must raise SIGBUS (a VMA the promotion lost from the map keeps its
 *    pages mapped);
 *  - at least half the files were seen promoted (i_mmap/promotions grew
 *    while the file churned), or the test tested nothing.
 * The kernel's own checks (DEBUG_VM's "mapped page removed from the page
 * cache", lockdep, KASAN, the interval tree's WARN on a duplicate) report
 * in the console log, which the harness checks.
 *
 * Other designs: SKIP (nothing promotes).
 *
 * Usage: promote_race DIR [-f FILES]
 */
#include "common.h"
#include <time.h>

#define NPAGES 8
#define PUNCHED (NPAGES - 1)	/* the page the puncher punches */
#define MAX_WORKERS 16
enum { CHURN = 1, HOLD, TRUNCATED };

struct race {
	int round;	/* the file the workers work on */
	int phase;	/* of that round: CHURN, HOLD, TRUNCATED */
	int gen;	/* odd: the puncher's page is punched */
	int stop;
	int started, held, checked;	/* the workers' acks, per round */
	int punching;			/* the puncher is inside a round */
	long stale_punch, stale_trunc, bad_data, maps, punches;
};

struct arg {
	char dir[200];
	struct race *r;
	int cpu;
};

static void file_path(char *buf, size_t len, const char *dir, int round)
{
	snprintf(buf, len, "%s/promote_race.%d", dir, round);
}

static int load(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static void wait_phase(struct race *r, int round, int phase)
{
	while (!load(&r->stop) &&
	       (load(&r->round) < round ||
		(load(&r->round) == round && load(&r->phase) < phase)))
		sched_yield();
}

static char *map_file(int fd, size_t pages, off_t pgoff)
{
	char *map = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, pgoff * PAGE);

	if (map == MAP_FAILED)
		die("mmap");
	return map;
}

/*
 * Read page @pg of a mapping of round @round's file: its data, or zeros
 * while the punched page is punched. Returns 1 for a stale read (the
 * page read data although a completed punch had removed it).
 */
static int check_page(struct race *r, struct arg *a, char *p, int pg,
		      int round)
{
	char c;
	int g1, g2, sig;

	g1 = load(&r->gen);
	sig = probe_read(p, &c);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	g2 = load(&r->gen);
	if (sig) {
		if (__atomic_add_fetch(&r->bad_data, 1, __ATOMIC_SEQ_CST) <= 3)
			fail("cpu %d: file %d page %d: %s while the file is whole",
			     a->cpu, round, pg, signame(sig));
		return 0;
	}
	if (c == pattern(pg * PAGE, round))
		return 0;
	if (pg == PUNCHED && c == 0)
		return 0;	/* punched meanwhile */
	if (pg == PUNCHED && (g1 & 1) && g1 == g2)
		return 1;
	if (pg != PUNCHED && __atomic_add_fetch(&r->bad_data, 1, __ATOMIC_SEQ_CST) <= 3)
		fail("cpu %d: file %d page %d read %#x, want %#x", a->cpu, round,
		     pg, c & 0xff, pattern(pg * PAGE, round) & 0xff);
	return 0;
}

/*
 * Waits for @round's churn phase and opens that round's file; -1 once
 * the test is told to stop.
 */
static int open_round(struct race *r, const char *dir, int round)
{
	char path[256];
	int fd;

	wait_phase(r, round, CHURN);
	if (load(&r->stop))
		return -1;
	file_path(path, sizeof(path), dir, round);
	fd = open(path, O_RDWR);
	if (fd < 0)
		die("open %s", path);
	return fd;
}

static int worker(void *p)
{
	struct arg *a = p;
	struct race *r = a->r;
	long stale = 0, trunc = 0, maps = 0;
	int round, pg, fd, i;
	char c;

	for (round = 0;; round++) {
		char *keep;

		fd = open_round(r, a->dir, round);
		if (fd < 0)
			break;
		/* made before the file is promoted: the promotion moves it */
		keep = map_file(fd, NPAGES, 0);
		for (pg = 0; pg < NPAGES; pg++)
			stale += check_page(r, a, keep + pg * PAGE, pg, round);
		__atomic_add_fetch(&r->started, 1, __ATOMIC_SEQ_CST);
		/* links and unlinks, two distinct intervals, until told */
		for (i = 0; load(&r->phase) == CHURN && load(&r->round) == round; i++) {
			off_t off = i & 1;
			char *m = map_file(fd, NPAGES - off, off);

			maps++;
			for (pg = off; pg < NPAGES; pg++)
				stale += check_page(r, a, m + (pg - off) * PAGE,
						    pg, round);
			munmap(m, (NPAGES - off) * PAGE);
		}
		__atomic_add_fetch(&r->held, 1, __ATOMIC_SEQ_CST);
		wait_phase(r, round, TRUNCATED);
		if (load(&r->stop))
			break;
		/* truncated to nothing: every page of the kept map faults */
		for (pg = 0; pg < NPAGES; pg++) {
			int sig = probe_read(keep + pg * PAGE, &c);

			if (sig == SIGBUS)
				continue;
			if (trunc++ < 3)
				fail("cpu %d: file %d truncated, page %d of a mapping made before its promotion %s (read %#x)",
				     a->cpu, round, pg,
				     sig ? signame(sig) : "still reads", c & 0xff);
		}
		munmap(keep, NPAGES * PAGE);
		close(fd);
		__atomic_add_fetch(&r->checked, 1, __ATOMIC_SEQ_CST);
	}
	if (stale)
		fail("cpu %d: %ld reads of the punched page returned data after the punch",
		     a->cpu, stale);
	__atomic_add_fetch(&r->stale_punch, stale, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&r->stale_trunc, trunc, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&r->maps, maps, __ATOMIC_SEQ_CST);
	return stale || trunc ? 1 : 0;
}

/* Punch page PUNCHED of each round's file and write it back, until told. */
static int puncher(void *p)
{
	struct arg *a = p;
	struct race *r = a->r;
	char buf[PAGE];
	long punches = 0;
	int round, fd;
	size_t i;

	for (round = 0;; round++) {
		fd = open_round(r, a->dir, round);
		if (fd < 0)
			break;
		for (i = 0; i < PAGE; i++)
			buf[i] = pattern(PUNCHED * PAGE + i, round);
		while (load(&r->phase) == CHURN && load(&r->round) == round) {
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      PUNCHED * PAGE, PAGE))
				die("punch");
			__atomic_add_fetch(&r->gen, 1, __ATOMIC_SEQ_CST); /* odd */
			sched_yield();
			/* even before the data is back (see truncate_race) */
			__atomic_add_fetch(&r->gen, 1, __ATOMIC_SEQ_CST);
			if (pwrite(fd, buf, PAGE, PUNCHED * PAGE) != (ssize_t)PAGE)
				die("write back");
			punches++;
		}
		close(fd);
		__atomic_store_n(&r->punching, 0, __ATOMIC_SEQ_CST);
	}
	__atomic_add_fetch(&r->punches, punches, __ATOMIC_SEQ_CST);
	return 0;
}

static void wait_count(struct race *r, int *count, int want, const char *what,
		       int round)
{
	int ms;

	for (ms = 0; load(count) < want; ms++) {
		if (ms > 120000)
			die("round %d: %d of %d workers %s after 120 s", round,
			    load(count), want, what);
		pause_ms(1);
	}
	(void)r;
}

int main(int argc, char **argv)
{
	int files = 40, opt, i, n = 0, round, promoted = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), p0, p1;
	pid_t pids[MAX_WORKERS], punch;
	struct arg a = { .cpu = 0 };
	struct race *r;
	struct promote_rule rule;
	char path[256];
	int per_cpu = ncpu <= 4 ? 2 : 1;

	test_start("promote_race");
	spawn_init(argv);
	while ((opt = getopt(argc, argv, "f:")) != -1) {
		if (opt == 'f')
			files = atoi(optarg);
		else
			die("usage: promote_race DIR [-f FILES]");
	}
	if (optind >= argc || files < 2)
		die("usage: promote_race DIR [-f FILES] (FILES >= 2)");
	if (!promoting_design())
		test_skip("not the aspace design: nothing promotes");
	/*
	 * 8 handoffs within 2 s: a file is promoted once the workers of
	 * every CPU churn it, not at its first two links.
	 */
	p0 = lower_promote_rule(&rule, 8, 2000000000L);

	r = shared_alloc(sizeof(*r));
	a.r = r;
	snprintf(a.dir, sizeof(a.dir), "%s", argv[optind]);
	for (i = 0; i < ncpu * per_cpu && n < MAX_WORKERS; i++) {
		a.cpu = i % ncpu;
		pids[n++] = spawn_on_cpu(a.cpu, worker, &a, sizeof(a));
	}
	/* the puncher on the last node's CPUs, the workers everywhere */
	a.cpu = -1;
	punch = spawn_on_node(nr_nodes() - 1, 0, puncher, &a, sizeof(a));

	for (round = 0; round < files; round++) {
		int fd, ms;

		file_path(path, sizeof(path), a.dir, round);
		fd = make_file(path, NPAGES * PAGE, round, 0);
		__atomic_store_n(&r->started, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&r->held, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&r->checked, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&r->punching, 1, __ATOMIC_SEQ_CST);
		p1 = read_long(I_MMAP_DEBUGFS "promotions");
		/* the phase first: a worker that sees the round sees CHURN */
		__atomic_store_n(&r->phase, CHURN, __ATOMIC_SEQ_CST);
		__atomic_store_n(&r->round, round, __ATOMIC_SEQ_CST);
		wait_count(r, &r->started, n, "started", round);
		/* churn until the file is promoted (up to 10 s), then 20 ms more */
		for (ms = 0; ms < 10000 && read_long(I_MMAP_DEBUGFS "promotions") == p1; ms++)
			pause_ms(1);
		if (read_long(I_MMAP_DEBUGFS "promotions") > p1)
			promoted++;
		pause_ms(20);
		__atomic_store_n(&r->phase, HOLD, __ATOMIC_SEQ_CST);
		wait_count(r, &r->held, n, "held", round);
		for (ms = 0; load(&r->punching); ms++) {
			if (ms > 120000)
				die("round %d: the puncher did not stop", round);
			pause_ms(1);
		}
		if (ftruncate(fd, 0))
			die("truncate");
		__atomic_store_n(&r->phase, TRUNCATED, __ATOMIC_SEQ_CST);
		wait_count(r, &r->checked, n, "checked", round);
		close(fd);
		unlink(path);
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		reap(pids[i], "worker");
	reap(punch, "puncher");

	restore_promote_rule(&rule);

	note("%d files, %d seen promoted while they churned (promotions %ld -> %ld); %d workers on %ld CPUs made %ld mappings; %ld punches",
	     files, promoted, p0, read_long(I_MMAP_DEBUGFS "promotions"), n, ncpu,
	     r->maps, r->punches);
	check(r->stale_punch == 0,
	      "%ld reads of a punched page returned its data", r->stale_punch);
	check(r->stale_trunc == 0,
	      "%ld pages of truncated files still mapped", r->stale_trunc);
	check(r->bad_data == 0, "%ld reads returned wrong data or faulted",
	      r->bad_data);
	check(promoted * 2 >= files,
	      "only %d of %d files were promoted while they churned", promoted,
	      files);
	return test_end("files promoted one after another while mapped, unmapped and punched on every CPU; every mapping saw every walk");
}
