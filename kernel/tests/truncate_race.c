// SPDX-License-Identifier: GPL-2.0
/*
 * truncate_race: truncation racing with exec churn and with mappings being
 * made and torn down on every CPU, and with a migration walker, so that
 * the walks of a file's i_mmap (unmap_mapping_range for the truncate,
 * rmap_walk_file for the migration) run while VMAs are linked and unlinked
 * everywhere, and while a design that promotes a contended file changes
 * the file's map under them.
 *
 * The test truncates a tmpfs file to nothing and extends it again, ROUNDS
 * times, and publishes after each truncate() returns an odd generation
 * (even again just before the file grows back).
 * Meanwhile mapper processes on every CPU map the file, touch its pages,
 * and read a page once more after seeing an odd generation: the read must
 * raise SIGBUS (a mapping the truncate's walk missed still maps the old
 * page and reads it: the test counts such stale reads). Exec churners (the
 * dynamic helper re-exec'ing itself on every CPU) keep libc's and ld.so's
 * maps busy; a walker migrates the file's pages between the nodes.
 *
 * Run as `promotion` (a link to this program), it is the same race in the
 * design that promotes a contended file to shards (aspace), with the
 * promotion rule lowered through debugfs (i_mmap/promote_handoffs,
 * promote_window_ns) so that libc.so, ld.so and the test's file are
 * promoted in the middle of the churn, with the truncates and the
 * migration walker running through the promotion; it checks that
 * i_mmap/promotions grew. Other designs: SKIP (nothing to promote).
 *
 * Usage: truncate_race HELPER [-r ROUNDS] [-n EXECS]
 *        promotion HELPER [-r ROUNDS] [-n EXECS]
 */
#include "common.h"
#include <time.h>

#define NPAGES 8
#define MAPPERS_PER_CPU 2
#define MAX_PROCS 64

struct race {
	int gen;  /* even: the file has its pages; odd: truncated */
	int stop;
	long stale, maps, sigbus;
};

struct mapper_arg {
	char path[256];
	struct race *r;
	int cpu;
};

static int mapper(void *p)
{
	struct mapper_arg *a = p;
	struct race *r = a->r;
	long stale = 0, maps = 0, bus = 0;
	int pg;
	char c;

	while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST)) {
		int gen = __atomic_load_n(&r->gen, __ATOMIC_SEQ_CST);
		int fd;
		char *map;

		if (gen & 1) {
			sched_yield();
			continue;
		}
		fd = open(a->path, O_RDWR);
		if (fd < 0)
			die("open");
		map = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			die("mmap");
		maps++;
		/* map the pages: this may already fault if a truncate began */
		for (pg = 0; pg < NPAGES; pg++)
			probe_read(map + pg * PAGE, &c);
		/* wait for the next truncate (or give up after a while) */
		for (int spin = 0; spin < 2000; spin++) {
			int now = __atomic_load_n(&r->gen, __ATOMIC_SEQ_CST);

			if (now == gen)  {
				sched_yield();
				continue;
			}
			if (now & 1) {
				/* truncated: every page must fault, while still odd */
				for (pg = 0; pg < NPAGES; pg++) {
					int sig = probe_read(map + pg * PAGE, &c);

					if (__atomic_load_n(&r->gen, __ATOMIC_SEQ_CST) != now)
						break; /* extended again meanwhile */
					if (sig == SIGBUS) {
						bus++;
					} else if (!sig) {
						if (stale++ < 3)
							fail("cpu %d: page %d of a truncated file still mapped (generation %d): read %#x",
							     a->cpu, pg, now, c & 0xff);
					}
				}
			}
			break;
		}
		munmap(map, NPAGES * PAGE);
	}
	__atomic_add_fetch(&r->stale, stale, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&r->maps, maps, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&r->sigbus, bus, __ATOMIC_SEQ_CST);
	return stale ? 1 : 0;
}

/* Migrate the file's pages between the nodes until told to stop. */
static int walker(void *p)
{
	struct mapper_arg *a = p;
	int nodes = nr_nodes(), round = 0, i;

	while (!__atomic_load_n(&a->r->stop, __ATOMIC_SEQ_CST)) {
		void *pages[NPAGES];
		int to[NPAGES], status[NPAGES];
		int fd = open(a->path, O_RDWR);
		char *map, c;

		if (fd < 0)
			die("open");
		map = mmap(NULL, NPAGES * PAGE, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			die("mmap");
		for (i = 0; i < NPAGES; i++) {
			probe_read(map + i * PAGE, &c);
			pages[i] = map + i * PAGE;
			to[i] = round % nodes;
		}
		sys_move_pages(0, NPAGES, pages, to, status, MPOL_MF_MOVE_ALL);
		munmap(map, NPAGES * PAGE);
		round++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 30, execs = 30, opt, i, n = 0, fd;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *path = "/tmp/truncate_race.dat";
	pid_t pids[MAX_PROCS], walk;
	struct churn churn;
	struct mapper_arg a = { .cpu = 0 };
	struct race *r;
	char buf[PAGE];

	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int promote = !strcmp(name, "promotion");
	struct promote_rule rule = { 0 };
	long promotions0 = 0;

	test_start(promote ? "promotion" : "truncate_race");
	spawn_init(argv);
	if (promote) {
		if (!promoting_design())
			test_skip("not the aspace design: nothing promotes");
		/* two handoffs within a second promote a file */
		promotions0 = lower_promote_rule(&rule, 2, 1000000000L);
	}
	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 'n')
			execs = atoi(optarg);
		else
			die("usage: truncate_race HELPER [-r ROUNDS] [-n EXECS]");
	}
	if (optind >= argc)
		die("usage: truncate_race HELPER [-r ROUNDS] [-n EXECS]");
	r = shared_alloc(sizeof(*r));
	a.r = r;
	snprintf(a.path, sizeof(a.path), "%s", path);
	fd = make_file(path, NPAGES * PAGE, 0, 0);

	/* exec churners: one per CPU, each exec creating its mm there */
	churn_start(&churn, argv[optind], ncpu, execs);
	for (i = 0; i < ncpu * MAPPERS_PER_CPU && n < MAX_PROCS; i++) {
		a.cpu = i % ncpu;
		pids[n++] = spawn_on_cpu(a.cpu, mapper, &a, sizeof(a));
	}
	walk = spawn_on_node(0, 0, walker, &a, sizeof(a));

	for (i = 0; i < rounds; i++) {
		pause_ms(20);
		if (ftruncate(fd, 0))
			die("truncate");
		__atomic_add_fetch(&r->gen, 1, __ATOMIC_SEQ_CST); /* odd */
		pause_ms(20);
		/*
		 * Even again BEFORE the file grows: a mapper that read a page
		 * and still sees this odd generation afterwards read it while
		 * the file was empty, so that read must have faulted. (Made
		 * even after the write, a read of the new page between the
		 * extend and the store counted as stale: a false failure.)
		 */
		__atomic_add_fetch(&r->gen, 1, __ATOMIC_SEQ_CST); /* even */
		if (ftruncate(fd, NPAGES * PAGE))
			die("extend");
		memset(buf, 'a' + i % 26, sizeof(buf));
		if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf))
			die("write");
	}
	churn_wait(&churn);
	__atomic_store_n(&r->stop, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		reap(pids[i], "mapper");
	reap(walk, "walker");
	check(r->stale == 0, "%ld reads of a truncated file's page did not fault",
	      r->stale);
	if (promote) {
		long promotions = read_long(I_MMAP_DEBUGFS "promotions");

		note("promotions: %ld before, %ld after", promotions0, promotions);
		check(promotions > promotions0,
		      "no file was promoted during the churn (%ld before, %ld after)",
		      promotions0, promotions);
		restore_promote_rule(&rule);
	}
	note("%d truncates; %d mappers on %ld CPUs made %ld mappings, saw %ld SIGBUS after a truncate; %d exec churners x %d execs",
	     rounds, n, ncpu, r->maps, r->sigbus, churn.n, execs);
	close(fd);
	unlink(path);
	return test_end(promote ? "files promoted mid-churn; no mapping keeps a truncated page"
			       : "no mapping keeps a truncated page while maps churn on every CPU");
}
