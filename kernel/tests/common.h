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

static int test_end(const char *summary)
{
	printf("RESULT %s %s %s\n", test_name, test_failures ? "FAIL" : "PASS",
	       summary);
	return test_failures ? 1 : 0;
}

static void test_skip(const char *why)
{
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
 * fork() with parent and child on @node: the child's mm is created, and its
 * mappings made, on that node's CPUs, whatever a design keys its split on
 * (the CPU that links a VMA, or the node the mm was created on). The
 * parent's affinity is restored. Returns fork()'s value.
 */
static pid_t fork_on_node(int node)
{
	cpu_set_t old;
	pid_t pid;

	if (sched_getaffinity(0, sizeof(old), &old))
		die("sched_getaffinity");
	pin_node(node);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid && sched_setaffinity(0, sizeof(old), &old))
		die("sched_setaffinity restore");
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

static int probe_write(volatile char *p, char v)
{
	int sig;

	probe_install();
	sig = sigsetjmp(probe_env, 1);
	if (sig) {
		probe_armed = 0;
		return sig;
	}
	probe_armed = 1;
	*p = v;
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
	struct gate *g = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (g == MAP_FAILED)
		die("mmap gate");
	return g;
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

#endif
