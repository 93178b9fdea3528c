/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the harness's guest tests.
 *
 * Every test is a static program that prints `# ...` progress lines, one
 * `FAIL: ...` line per broken expectation, and a last line
 *   RESULT <name> PASS|FAIL|SKIP <summary>
 * and exits 0 (pass), 1 (fail) or 4 (skip, the kselftest convention).
 *
 * The tests place their processes on both NUMA nodes (pin_node()), because
 * the split designs keep a file's mappings in one tree per node: a walk that
 * misses one node's tree is caught only if some mapping lives there.
 */
#ifndef ASPACE_TEST_COMMON_H
#define ASPACE_TEST_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL
#define HPAGE (2UL << 20)

static const char *test_name = "?";
static int test_failures;

static void test_start(const char *name)
{
	test_name = name;
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# %s: ", test_name);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* A broken expectation: reported, counted, and the test goes on. */
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: %s: ", test_name);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	test_failures++;
}

#define check(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

/* Stop at once: the test cannot go on (a setup step failed). */
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: %s: ", test_name);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d: %s)\nRESULT %s FAIL setup\n", errno,
	       strerror(errno), test_name);
	exit(1);
}

static void spawn_fini(void);

static int test_end(const char *summary)
{
	spawn_fini();
	printf("RESULT %s %s %s\n", test_name, test_failures ? "FAIL" : "PASS",
	       summary);
	return test_failures ? 1 : 0;
}

static void test_skip(const char *why)
{
	spawn_fini();
	printf("RESULT %s SKIP %s\n", test_name, why);
	exit(4);
}

/* ---- NUMA placement ------------------------------------------------ */

static int nr_nodes(void)
{
	int n = 0;
	char path[64];

	for (;;) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

/* The CPUs of one node, from sysfs's cpulist ("0-1,4"). */
static int node_cpus(int node, cpu_set_t *set)
{
	char path[80], buf[256], *p;
	FILE *f;
	int count = 0;

	CPU_ZERO(set);
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist",
		 node);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	for (p = buf; *p && *p != '\n';) {
		long a = strtol(p, &p, 10), b = a;

		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (; a <= b; a++, count++)
			CPU_SET(a, set);
		if (*p == ',')
			p++;
	}
	return count;
}

/* Run the caller on the CPUs of @node (modulo the number of nodes). */
static void pin_node(int node)
{
	cpu_set_t set;
	int nodes = nr_nodes();

	if (nodes < 1)
		die("no NUMA nodes in sysfs");
	if (!node_cpus(node % nodes, &set))
		die("node %d has no CPUs", node % nodes);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(node %d)", node % nodes);
}

/* Run the caller on one CPU (modulo the number of CPUs). */
static void pin_cpu(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	CPU_SET(cpu % (n > 0 ? n : 1), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(cpu %d)", cpu);
}

/*
 * fork() with the child on @node's CPUs, for a child that execs: the
 * exec creates its mm there. Returns fork()'s value.
 */
static pid_t fork_pinned(int node)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid)
		pin_node(node);
	return pid;
}

/* ---- faults as values ---------------------------------------------- */

static sigjmp_buf probe_env;
static volatile sig_atomic_t probe_armed;
static volatile int probe_code;

static void probe_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!probe_armed) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	probe_code = si->si_code;
	siglongjmp(probe_env, sig);
}

static void probe_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = probe_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/*
 * Read one byte at @p: returns 0 and stores it in *out, or the signal
 * (SIGBUS, SIGSEGV) the access raised.
 */
static int probe_read(const volatile char *p, char *out)
{
	int sig;

	probe_install();
	sig = sigsetjmp(probe_env, 1);
	if (sig) {
		probe_armed = 0;
		return sig;
	}
	probe_armed = 1;
	*out = *p;
	probe_armed = 0;
	return 0;
}

static const char *signame(int sig)
{
	switch (sig) {
	case 0: return "no fault";
	case SIGBUS: return "SIGBUS";
	case SIGSEGV: return "SIGSEGV";
	default: return "signal";
	}
}

/* ---- files ---------------------------------------------------------- */

/* The byte the tests write at @off of a file, in generation @gen. */
static inline char pattern(unsigned long off, int gen)
{
	return (char)(((off / PAGE) * 7 + off % 251 + gen * 31) | 1);
}

/* Create @path with @size bytes of pattern(gen); fsync when @sync. */
static int make_file(const char *path, size_t size, int gen, int sync)
{
	char *buf = malloc(PAGE);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	size_t off, i;

	if (fd < 0 || !buf)
		die("create %s", path);
	for (off = 0; off < size; off += PAGE) {
		for (i = 0; i < PAGE; i++)
			buf[i] = pattern(off + i, gen);
		if (pwrite(fd, buf, PAGE, off) != (ssize_t)PAGE)
			die("write %s", path);
	}
	if (sync && fsync(fd))
		die("fsync %s", path);
	free(buf);
	return fd;
}

/* ---- processes on every node ---------------------------------------- */

/*
 * Where a process's mappings of a file live can depend on the CPU its mm
 * was created on (the split designs pick a VMA's tree by it, and a forked
 * mm keeps its parent's), not on where the process runs. So a test cannot
 * place a child on a node by pinning it after fork(): the child's mm is
 * a copy of the test's. Instead, spawn_init() starts one "zygote" per CPU:
 * a copy of the test, pinned to that CPU and exec'd there, so its mm was
 * created on it. spawn_on_cpu() asks a zygote for a worker: the zygote
 * clones itself with CLONE_PARENT (the worker is the test's child, for
 * waitpid), and the worker runs fn(arg) and exits with its value.
 *
 * A worker shares nothing with the test but the shared area: a tmpfs file
 * mapped at the same fixed address in every process (shared_alloc(), and
 * gates), and the binary itself (static, not PIE: function pointers and
 * read-only data have the same addresses everywhere). Arguments are copied.
 */
#define SHARED_BASE ((void *)0x600000000000UL)
#define SHARED_SIZE (1UL << 20)
#define MAX_ZYGOTES 64
#define MAX_ARG 1024

struct shared_hdr {
	size_t used;
};

struct spawn_req {
	int (*fn)(void *arg);
	size_t len;
	char arg[MAX_ARG];
};

static int zygote_req[MAX_ZYGOTES], zygote_rep[MAX_ZYGOTES];
static pid_t zygote_pid[MAX_ZYGOTES];
static int nr_zygotes;

static void shared_map(const char *path, int create)
{
	int fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0600);

	if (fd < 0 || (create && ftruncate(fd, SHARED_SIZE)))
		die("shared area %s", path);
	if (mmap(SHARED_BASE, SHARED_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0) != SHARED_BASE)
		die("map the shared area");
	close(fd);
}

/* Zeroed memory every process of the test sees at the same address. */
static void *shared_alloc(size_t len)
{
	struct shared_hdr *h = SHARED_BASE;
	size_t off;

	if (!nr_zygotes)
		die("shared_alloc before spawn_init");
	if (!h->used)
		h->used = 64;
	off = h->used;
	h->used += (len + 63) & ~63UL;
	if (h->used > SHARED_SIZE)
		die("shared area full");
	return (char *)SHARED_BASE + off;
}

static void zygote_serve(int cpu, int req, int rep)
{
	static struct spawn_req r;
	size_t got;
	ssize_t n;
	pid_t pid;

	for (;;) {
		for (got = 0; got < sizeof(r); got += n) {
			n = read(req, (char *)&r + got, sizeof(r) - got);
			if (n <= 0)
				_exit(0); /* the test is done */
		}
		pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
		if (!pid) {
			close(req);
			close(rep);
			_exit(r.fn(r.arg));
		}
		if (pid < 0)
			pid = -errno;
		if (write(rep, &pid, sizeof(pid)) != sizeof(pid))
			_exit(1);
	}
	(void)cpu;
}

/*
 * First thing in main() (after test_start): in the test, start the
 * zygotes and return; in a zygote (the same program, exec'd again), serve
 * and never return.
 */
static void spawn_init(char **argv)
{
	char path[64], env[160];
	const char *z = getenv("ASPACE_ZYGOTE");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int cpu;

	if (z) {
		int c, req, rep;

		if (sscanf(z, "%d,%d,%d,%63s", &c, &req, &rep, path) != 4)
			die("bad ASPACE_ZYGOTE");
		shared_map(path, 0);
		if (write(rep, &c, sizeof(c)) != sizeof(c)) /* ready */
			_exit(1);
		zygote_serve(c, req, rep);
	}
	snprintf(path, sizeof(path), "/tmp/.aspace-shared.%d", (int)getpid());
	shared_map(path, 1);
	for (cpu = 0; cpu < ncpu && cpu < MAX_ZYGOTES; cpu++) {
		int req[2], rep[2];
		pid_t pid;

		if (pipe(req) || pipe(rep))
			die("pipe");
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			close(req[1]);
			close(rep[0]);
			pin_cpu(cpu);
			snprintf(env, sizeof(env), "ASPACE_ZYGOTE=%d,%d,%d,%s", cpu,
				 req[0], rep[1], path);
			putenv(env);
			execv("/proc/self/exe", argv);
			_exit(99);
		}
		close(req[0]);
		close(rep[1]);
		fcntl(req[1], F_SETFD, FD_CLOEXEC);
		fcntl(rep[0], F_SETFD, FD_CLOEXEC);
		zygote_req[cpu] = req[1];
		zygote_rep[cpu] = rep[0];
		zygote_pid[cpu] = pid;
		nr_zygotes++;
	}
	for (cpu = 0; cpu < nr_zygotes; cpu++) {
		int ready;

		if (read(zygote_rep[cpu], &ready, sizeof(ready)) != sizeof(ready))
			die("zygote %d did not start", cpu);
	}
	unlink(path); /* every process has it mapped */
}

/* Run fn(arg) in a new process whose mm was created on @cpu. */
static pid_t spawn_on_cpu(int cpu, int (*fn)(void *), const void *arg,
			  size_t len)
{
	static struct spawn_req r;
	pid_t pid;
	int z;

	if (!nr_zygotes)
		die("spawn before spawn_init");
	if (len > MAX_ARG)
		die("spawn argument too large");
	z = cpu % nr_zygotes;
	memset(&r, 0, sizeof(r));
	r.fn = fn;
	r.len = len;
	memcpy(r.arg, arg, len);
	if (write(zygote_req[z], &r, sizeof(r)) != sizeof(r) ||
	    read(zygote_rep[z], &pid, sizeof(pid)) != sizeof(pid))
		die("zygote %d does not answer", z);
	if (pid < 0) {
		errno = -pid;
		die("clone in zygote %d", z);
	}
	return pid;
}

/* The @idx-th CPU (modulo their count) of @node. */
static int node_cpu(int node, int idx)
{
	cpu_set_t set;
	int nodes = nr_nodes(), count, cpu, seen = 0;

	count = node_cpus(node % (nodes ? nodes : 1), &set);
	if (!count)
		die("node %d has no CPUs", node);
	idx %= count;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && seen++ == idx)
			return cpu;
	return 0;
}

/* Run fn(arg) in a new process whose mm was created on a CPU of @node. */
static pid_t spawn_on_node(int node, int idx, int (*fn)(void *),
			   const void *arg, size_t len)
{
	return spawn_on_cpu(node_cpu(node, idx), fn, arg, len);
}

/* The arguments most tests give a worker: spawn_task(node, idx, fn, &t). */
struct task {
	char path[256];
	int k, n, node, kind, flag, count;
	struct gate *g;
	void *sh;
};

#define spawn_task(node, idx, fn, t) spawn_on_node(node, idx, fn, t, sizeof(*(t)))

/* End the zygotes (test_end does it). */
static void spawn_fini(void)
{
	int i;

	for (i = 0; i < nr_zygotes; i++) {
		close(zygote_req[i]);
		close(zygote_rep[i]);
		waitpid(zygote_pid[i], NULL, 0);
	}
	nr_zygotes = 0;
}

/* ---- processes ------------------------------------------------------ */

/*
 * A gate holds a parent's children at a point until the parent lets them
 * all go on: each child calls gate_pass(); the parent calls gate_collect()
 * (every child has arrived) and then gate_open(). Shared memory and futexes,
 * one generation per opening, so a fast child cannot run two steps ahead.
 */
#include <linux/futex.h>
#include <time.h>

struct gate {
	int arrived;
	int gen;
};

static long futex(int *addr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static struct gate *gate_new(void)
{
	return shared_alloc(sizeof(struct gate));
}

static void gate_pass(struct gate *g)
{
	int gen = __atomic_load_n(&g->gen, __ATOMIC_SEQ_CST);

	__atomic_add_fetch(&g->arrived, 1, __ATOMIC_SEQ_CST);
	futex(&g->arrived, FUTEX_WAKE, 1, NULL);
	while (__atomic_load_n(&g->gen, __ATOMIC_SEQ_CST) == gen)
		futex(&g->gen, FUTEX_WAIT, gen, NULL);
}

/* Wait until @n children have arrived; 0 if a child of ours died first. */
static int gate_collect(struct gate *g, int n)
{
	struct timespec ts = { .tv_sec = 1 };
	siginfo_t si;
	int cur;

	while ((cur = __atomic_load_n(&g->arrived, __ATOMIC_SEQ_CST)) < n) {
		futex(&g->arrived, FUTEX_WAIT, cur, &ts);
		memset(&si, 0, sizeof(si));
		if (!waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid)
			return 0;
	}
	return 1;
}

static void gate_open(struct gate *g)
{
	__atomic_store_n(&g->arrived, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&g->gen, 1, __ATOMIC_SEQ_CST);
	futex(&g->gen, FUTEX_WAKE, INT32_MAX, NULL);
}

/* Wait for @pid; 0 if it exited 0, else report how it ended and return 1. */
static int reap(pid_t pid, const char *what)
{
	int st;

	if (waitpid(pid, &st, 0) != pid) {
		fail("%s: waitpid", what);
		return 1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st))
		fail("%s: exit status %d", what, WEXITSTATUS(st));
	else
		fail("%s: killed by signal %d", what, WTERMSIG(st));
	return 1;
}

/* ---- NUMA syscalls (no libnuma in the guest) ------------------------ */

#ifndef MPOL_BIND
#define MPOL_BIND 2
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_STRICT (1 << 0)
#define MPOL_MF_MOVE (1 << 1)
#define MPOL_MF_MOVE_ALL (1 << 2)
#endif

static long sys_move_pages(pid_t pid, unsigned long count, void **pages,
			   const int *nodes, int *status, int flags)
{
	return syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
}

static long sys_mbind(void *addr, unsigned long len, int mode,
		      const unsigned long *mask, unsigned long maxnode,
		      unsigned int flags)
{
	return syscall(SYS_mbind, addr, len, mode, mask, maxnode, flags);
}

/* The node the page at @p is on, or a negative errno. */
static int page_node(void *p)
{
	int status = -1;

	if (sys_move_pages(0, 1, &p, NULL, &status, 0))
		return -errno;
	return status;
}

/* Is the page cache page behind @p resident (mincore)? */
static int resident(void *p)
{
	unsigned char v = 0;

	if (mincore((void *)((uintptr_t)p & ~(PAGE - 1)), PAGE, &v))
		die("mincore");
	return v & 1;
}

/* Is @p mapped by a present page table entry (pagemap bit 63)? */
static int pte_present(void *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0 || pread(fd, &e, 8, ((uintptr_t)p / PAGE) * 8) != 8)
		die("pagemap");
	close(fd);
	return (e >> 63) & 1;
}

/* A value from /proc/meminfo (kB or a count), -1 if absent. */
static long meminfo(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Map @pages pages of @path MAP_SHARED read-write and read each once. */
static char *map_touch(const char *path, int pages)
{
	int fd = open(path, O_RDWR), pg;
	char *map;
	volatile char sink;

	if (fd < 0)
		die("open %s", path);
	map = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap %s", path);
	close(fd);
	for (pg = 0; pg < pages; pg++)
		sink = map[pg * PAGE];
	(void)sink;
	return map;
}

/* ---- exec churn ------------------------------------------------------ */

#define MAX_CHURNERS 64

/*
 * Copies of the dynamic helper re-exec'ing themselves (`execself churn`),
 * copy i pinned to CPU i before its first exec, so that every exec creates
 * its mm on that CPU; each stores its final count in a slot of a file.
 */
struct churn {
	int n, execs;
	pid_t pid[MAX_CHURNERS];
	long *slot;
	char path[64];
};

static void churn_start(struct churn *c, const char *helper, int n, int execs)
{
	char total[16], idx[16];
	int fd, i;

	c->n = n < MAX_CHURNERS ? n : MAX_CHURNERS;
	c->execs = execs;
	snprintf(c->path, sizeof(c->path), "/tmp/%s.slots", test_name);
	fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, MAX_CHURNERS * 8))
		die("create %s", c->path);
	c->slot = mmap(NULL, MAX_CHURNERS * 8, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	if (c->slot == MAP_FAILED)
		die("mmap %s", c->path);
	for (i = 0; i < c->n; i++) {
		c->pid[i] = fork();
		if (c->pid[i] < 0)
			die("fork");
		if (!c->pid[i]) {
			pin_cpu(i);
			snprintf(total, sizeof(total), "%d", execs);
			snprintf(idx, sizeof(idx), "%d", i);
			execl(helper, helper, "churn", total, "0", c->path, idx,
			      (char *)NULL);
			_exit(99);
		}
	}
}

/* Wait for every copy; each must exit 0 having reached its count. */
static void churn_wait(struct churn *c)
{
	char what[32];
	int i;

	for (i = 0; i < c->n; i++) {
		snprintf(what, sizeof(what), "exec churner %d", i);
		reap(c->pid[i], what);
		check(c->slot[i] == c->execs, "exec churner %d stored %ld, want %d",
		      i, c->slot[i], c->execs);
	}
	munmap(c->slot, MAX_CHURNERS * 8);
	unlink(c->path);
}

/* aspace's debugfs files (promotions, promote_handoffs, promote_window_ns) */
#define I_MMAP_DEBUGFS "/sys/kernel/debug/i_mmap/"

/* A number read from a (debugfs or proc) file; -1 when it cannot be read. */
static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* Is the kernel running the design that promotes (i_mmap_design=aspace)? */
static int promoting_design(void)
{
	char line[1024] = "";
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, line, sizeof(line) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	line[n] = 0;
	return !!strstr(line, "i_mmap_design=aspace ") ||
	       !!strstr(line, "i_mmap_design=aspace\n");
}

/* aspace's rate rule as debugfs holds it (promote_handoffs, promote_window_ns) */
struct promote_rule {
	long handoffs, window_ns;
};

/*
 * Lowers aspace's rate rule to @handoffs within @window_ns, so that a
 * test's churn promotes its files, and keeps the rule in force in
 * @saved for restore_promote_rule().  Returns the promotions so far.
 */
static long lower_promote_rule(struct promote_rule *saved, long handoffs,
			       long window_ns)
{
	long promotions = read_long(I_MMAP_DEBUGFS "promotions");
	char num[32];

	saved->handoffs = read_long(I_MMAP_DEBUGFS "promote_handoffs");
	saved->window_ns = read_long(I_MMAP_DEBUGFS "promote_window_ns");
	if (promotions < 0 || saved->handoffs < 0 || saved->window_ns < 0)
		die("no %s{promotions,promote_handoffs,promote_window_ns}", I_MMAP_DEBUGFS);
	snprintf(num, sizeof(num), "%ld", handoffs);
	if (write_str(I_MMAP_DEBUGFS "promote_handoffs", num))
		die("lower the promotion rule");
	snprintf(num, sizeof(num), "%ld", window_ns);
	if (write_str(I_MMAP_DEBUGFS "promote_window_ns", num))
		die("lower the promotion rule");
	return promotions;
}

/* Puts back the rule that lower_promote_rule() saved. */
static void restore_promote_rule(const struct promote_rule *saved)
{
	char num[32];

	snprintf(num, sizeof(num), "%ld", saved->handoffs);
	write_str(I_MMAP_DEBUGFS "promote_handoffs", num);
	snprintf(num, sizeof(num), "%ld", saved->window_ns);
	write_str(I_MMAP_DEBUGFS "promote_window_ns", num);
}

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

#endif
