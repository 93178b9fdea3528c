// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe: a uprobe on libc's getppid, placed while processes on every node
 * already map libc. Registering a uprobe finds the processes that map the
 * file by walking its i_mmap (build_map_info) and writes a breakpoint into
 * each; unregistering walks again to take them out.
 *
 *   registered: every running process calls getppid CALLS times, and the
 *               probe's hit count (uprobe_profile) must be exactly
 *               processes x CALLS (a process the walk missed has no
 *               breakpoint and adds nothing);
 *   new process started after registering adds CALLS (uprobe_mmap);
 *   unregistered: every process calls it again and must survive (one the
 *               walk missed keeps the breakpoint and dies of SIGTRAP).
 *
 * Usage: uprobe HELPER [CALLS]
 */
#include "common.h"

#define PER_NODE 2
#define TRACING "/sys/kernel/tracing"
#define EVENT "aspace_uprobe/getppid"

struct target {
	pid_t pid;
	FILE *to, *from;
};

static void start(struct target *t, const char *helper, int calls, int node,
		  char *file, size_t len)
{
	int in[2], out[2];
	char arg[16], line[512];

	/* close-on-exec: the other targets must not hold this one's pipes */
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		die("pipe");
	t->pid = fork_pinned(node); /* the helper's exec creates its mm there */
	if (!t->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		snprintf(arg, sizeof(arg), "%d", calls);
		execl(helper, helper, "uprobe", arg, (char *)NULL);
		_exit(99);
	}
	close(in[0]);
	close(out[1]);
	t->to = fdopen(in[1], "w");
	t->from = fdopen(out[0], "r");
	if (!t->to || !t->from || !fgets(line, sizeof(line), t->from))
		die("target on node %d did not start", node);
	line[strcspn(line, "\n")] = 0;
	snprintf(file, len, "%s", line);
}

static int call(struct target *t)
{
	char line[64];

	if (fprintf(t->to, "call\n") < 0 || fflush(t->to))
		return -1;
	if (!fgets(line, sizeof(line), t->from) || strcmp(line, "done\n"))
		return -1;
	return 0;
}

static long hits(void)
{
	char line[512], ev[128];
	long n = -1, v;
	FILE *f = fopen(TRACING "/uprobe_profile", "r");

	if (!f)
		die("open uprobe_profile");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %127s %ld", ev, &v) == 2 &&
		    !strcmp(ev, strchr(EVENT, '/') + 1))
			n = v;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	int nodes = nr_nodes(), n = nodes * PER_NODE, calls = 5, i;
	struct target t[64];
	char file[512], def[700];
	long h;

	test_start("uprobe");
	if (argc < 2)
		die("usage: uprobe HELPER [CALLS]");
	if (argc > 2)
		calls = atoi(argv[2]);
	if (access(TRACING "/uprobe_events", W_OK))
		test_skip("no " TRACING "/uprobe_events");

	for (i = 0; i < n; i++)
		start(&t[i], argv[1], calls, i % nodes, file, sizeof(file));
	/* "<libc path> 0x<offset>" */
	snprintf(def, sizeof(def), "p:%s %.*s:%s", EVENT,
		 (int)strcspn(file, " "), file, strchr(file, ' ') + 1);
	if (write_str(TRACING "/uprobe_events", def))
		die("register %s", def);
	if (write_str(TRACING "/events/" EVENT "/enable", "1"))
		die("enable");
	note("%s, %d processes on %d node(s)", def, n, nodes);

	for (i = 0; i < n; i++)
		check(!call(&t[i]), "process %d (node %d) did not answer", i, i % nodes);
	h = hits();
	note("after registering: %ld hits", h);
	check(h == (long)n * calls,
	      "after registering: %ld hits, want %d (%d processes x %d calls)",
	      h, n * calls, n, calls);

	start(&t[n], argv[1], calls, n % nodes, file, sizeof(file));
	check(!call(&t[n]), "the process started later did not answer");
	h = hits();
	note("after a new process: %ld hits", h);
	check(h == (long)(n + 1) * calls,
	      "after a new process: %ld hits, want %d", h, (n + 1) * calls);
	n++;

	if (write_str(TRACING "/events/" EVENT "/enable", "0"))
		die("disable");
	snprintf(def, sizeof(def), "-:%s", EVENT);
	if (write_str(TRACING "/uprobe_events", def))
		die("unregister");
	for (i = 0; i < n; i++) {
		char what[48];

		check(!call(&t[i]), "process %d (node %d) did not survive the unregister",
		      i, i % nodes);
		fclose(t[i].to); /* end of input: the target exits */
		snprintf(what, sizeof(what), "process %d", i);
		reap(t[i].pid, what);
		fclose(t[i].from);
	}
	return test_end("breakpoints placed in and removed from every process mapping libc");
}
