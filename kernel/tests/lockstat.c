// SPDX-License-Identifier: GPL-2.0
/*
 * lockstat: the exec churn with /proc/lock_stat on, reporting the figures
 * of every lock class whose name holds "i_mmap" (the one i_mmap_rwsem, or
 * a split design's per-part classes), summed over their read and write
 * sides. Runs in the lock_stat build (CONFIG_LOCK_STAT).
 *
 * The churn runs twice: a warm-up of WARM execs a copy, then, with the
 * counters cleared, the measured churn. The warm-up is where a design that
 * adapts (aspace promotes a file once its waits say it is contended) pays
 * for adapting; the measured churn is the steady state that every design
 * then runs in, as a long exec load (UnixBench execl runs for minutes)
 * does. Both are printed, so neither hides the other.
 *
 * Prints, besides the usual RESULT line:
 *   LOCKSTAT-WARMUP <execs> <contentions> <acquisitions> <promotions>
 *   LOCKSTAT-CLASS <class> <contentions> <acquisitions> <wait-total-us> <hold-total-us>
 *   LOCKSTAT <execs> <contentions> <acquisitions> <wait-total-us> <hold-total-us>
 *   LOCKSTAT-PROMOTIONS <before> <after> <churn-guest-ms>
 * and the contention points of those classes as lock_stat lists them.
 * Under TCG the times are not those of real hardware: compare designs
 * within one run, by counts first. LOCKSTAT-PROMOTIONS is the aspace
 * design's debugfs i_mmap/promotions counter around the churn (-1 where
 * there is none) and the churn's length in the guest's clock, to tell
 * whether the default promotion rule fired and at what rate the churn
 * took the locks in guest time.
 *
 * (LOCKSTAT-PROMOTIONS and LOCKSTAT-CLASS are of the measured churn; a
 * warm-up of 0 execs measures from a cold start, as before the warm-up.)
 *
 * Usage: lockstat HELPER [-c COPIES_PER_CPU] [-n EXECS] [-w WARM]
 */
#include "common.h"
#include <time.h>

static long promotions(void)
{
	return read_long(I_MMAP_DEBUGFS "promotions");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct totals {
	double con, acq, wait, hold;
};

/* One data line: "<class>: <12 numbers>"; 1 if it is one. */
static int parse(const char *line, char *cls, size_t len, double v[12])
{
	const char *colon = strrchr(line, ':');
	int n;

	if (!colon || colon == line)
		return 0;
	n = sscanf(colon + 1, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
		   &v[9], &v[10], &v[11]);
	if (n != 12)
		return 0;
	while (*line == ' ')
		line++;
	snprintf(cls, len, "%.*s", (int)(colon - line), line);
	return 1;
}

/* Sums the i_mmap classes into @t; lists them when @print. */
static int report(struct totals *t, int print)
{
	char line[512], cls[256];
	double v[12];
	int classes = 0, in_class = 0;
	FILE *f = fopen("/proc/lock_stat", "r");

	if (!f)
		die("open /proc/lock_stat");
	memset(t, 0, sizeof(*t));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (parse(line, cls, sizeof(cls), v)) {
			in_class = !!strstr(cls, "i_mmap");
			if (!in_class)
				continue;
			/* con-bounces contentions wait-min wait-max wait-total
			 * wait-avg acq-bounces acquisitions hold-min hold-max
			 * hold-total hold-avg */
			if (print)
				printf("LOCKSTAT-CLASS %s %.0f %.0f %.2f %.2f\n",
				       cls, v[1], v[7], v[4], v[10]);
			t->con += v[1];
			t->acq += v[7];
			t->wait += v[4];
			t->hold += v[10];
			classes++;
		} else if (print && in_class && strchr(line, '[')) {
			printf("#   %s\n", line); /* a contention point */
		} else if (!line[0] || strstr(line, "......")) {
			in_class = in_class && line[0];
		}
	}
	fclose(f);
	return classes;
}

int main(int argc, char **argv)
{
	int per_cpu = 2, execs = 50, warm = -1, opt;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct churn churn;
	struct totals t;
	long pw, p0, p1;
	double t0, t1;

	test_start("lockstat");
	while ((opt = getopt(argc, argv, "c:n:w:")) != -1) {
		if (opt == 'c')
			per_cpu = atoi(optarg);
		else if (opt == 'n')
			execs = atoi(optarg);
		else if (opt == 'w')
			warm = atoi(optarg);
		else
			die("usage: lockstat HELPER [-c COPIES_PER_CPU] [-n EXECS] [-w WARM]");
	}
	if (optind >= argc || per_cpu < 1 || execs < 1 || warm < -1)
		die("usage: lockstat HELPER [-c COPIES_PER_CPU] [-n EXECS] [-w WARM]");
	if (warm < 0)
		warm = execs; /* a warm-up as long as the measured churn */
	if (access("/proc/lock_stat", R_OK))
		test_skip("no /proc/lock_stat (not the lock_stat build)");

	if (write_str("/proc/lock_stat", "0") ||
	    write_str("/proc/sys/kernel/lock_stat", "1"))
		die("enable lock_stat");
	pw = promotions();
	if (warm > 0) {
		churn_start(&churn, argv[optind], per_cpu * ncpu, warm);
		churn_wait(&churn);
	}
	report(&t, 0);
	p0 = promotions();
	printf("LOCKSTAT-WARMUP %d %.0f %.0f %ld\n", warm > 0 ? churn.n * warm : 0,
	       t.con, t.acq, pw >= 0 ? p0 - pw : -1);
	if (write_str("/proc/lock_stat", "0"))
		die("clear lock_stat");
	t0 = now_ms();
	churn_start(&churn, argv[optind], per_cpu * ncpu, execs);
	churn_wait(&churn);
	t1 = now_ms();
	p1 = promotions();
	if (write_str("/proc/sys/kernel/lock_stat", "0"))
		die("disable lock_stat");
	if (!report(&t, 1))
		fail("no lock class named i_mmap in /proc/lock_stat");
	printf("LOCKSTAT %d %.0f %.0f %.2f %.2f\n", churn.n * execs, t.con, t.acq,
	       t.wait, t.hold);
	printf("LOCKSTAT-PROMOTIONS %ld %ld %.0f\n", p0, p1, t1 - t0);
	note("%d copies x %d execs on %ld CPUs, after a warm-up of %d execs a copy",
	     churn.n, execs, ncpu, warm);
	return test_end("i_mmap lock classes under the exec churn");
}
