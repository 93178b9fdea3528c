/* The VMA flags mlock, mlock2, munlock, mlockall, munlockall, MAP_LOCKED and
 * madvise (MADV_RANDOM, MADV_SEQUENTIAL, MADV_NORMAL, MADV_MERGEABLE,
 * MADV_UNMERGEABLE) set, each splitting areas or keeping new ones apart, and a
 * fork whose child loses the lock bits. Recorded (as root: CAP_IPC_LOCK, no
 * RLIMIT_MEMLOCK for mlockall(MCL_CURRENT)) and replayed by
 * crates/mm/tests/lock_recording.rs, which stores
 * tests/data/mlock-madvise-flags.{strace,maps}, recorded so:
 *
 *   D=/tmp/aspace-mlock-madvise-flags-00000000; mkdir $D; cp mlock_madvise_flags.c $D
 *   (cd $D && cc -O2 -s -o mlock-madvise-flags mlock_madvise_flags.c)
 *   cd / && env -i PATH=/usr/bin:/bin scripts/record.sh $D/mlock-madvise-flags \
 *       $D/mlock-madvise-flags
 *
 * No stdio (its buffers would add memory calls); each area goes top-down into the
 * highest hole that fits, next to an area made before. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define P 4096L

static char *anon(long pages, int flags)
{
	return mmap(NULL, pages * P, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

int main(void)
{
	/* Part of an anonymous area locked, a page of that unlocked again, another
	 * part locked on fault; a bad mlock2 flag and a MADV_DONTNEED of a locked
	 * page are EINVAL. */
	char *a = anon(16, 0);
	mlock(a + 4 * P + 100, 3 * P);		/* pages 4..7 */
	munlock(a + 5 * P, P);
	mlock2(a + 10 * P, 2 * P, MLOCK_ONFAULT);
	mlock2(a, P, 2);
	madvise(a + 4 * P, P, MADV_DONTNEED);

	/* Read advice on parts of a file mapping; one part advised and made
	 * normal again merges back. */
	int fd = open("/usr/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	char *f = mmap(NULL, 32 * P, PROT_READ, MAP_PRIVATE, fd, 0);
	madvise(f + 2 * P, 8 * P, MADV_RANDOM);
	madvise(f + 6 * P, 8 * P, MADV_SEQUENTIAL);
	madvise(f + 8 * P, 2 * P, MADV_NORMAL);
	madvise(f + 20 * P, 4 * P, MADV_RANDOM);
	madvise(f + 20 * P, 4 * P, MADV_NORMAL);

	/* KSM: part of a private area mergeable, a page of it not again; a
	 * shared area is left alone. */
	char *m = anon(8, 0);
	madvise(m + 2 * P, 3 * P, MADV_MERGEABLE);
	madvise(m + 3 * P, P, MADV_UNMERGEABLE);
	char *s = mmap(NULL, 4 * P, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	madvise(s, 4 * P, MADV_MERGEABLE);

	/* MAP_LOCKED, then a plain area below it: two areas. */
	char *l = anon(2, MAP_LOCKED);
	anon(2, 0);

	/* A heap, then mlockall(MCL_FUTURE): two new areas locked (one area, not
	 * merged with the unlocked one above), the heap's growth a second
	 * [heap]. */
	sbrk(8 * P);
	mlockall(MCL_FUTURE);
	anon(2, 0);
	anon(2, 0);
	sbrk(4 * P);

	/* The child's copies are not locked, its areas the parent's; a file page
	 * it maps is not locked either. */
	pid_t child = fork();
	if (child == 0) {
		mmap(NULL, P, PROT_READ, MAP_PRIVATE, fd, 0);
		_exit(0);
	}
	waitpid(child, NULL, 0);

	/* (The MAP_LOCKED area goes: its pages, faulted in when it was mapped,
	 * have an anon_vma of their own, which would keep it apart from a
	 * neighbour the trace cannot tell.) */
	munmap(l, 2 * P);

	/* Everything locked: the areas only the lock told apart merge; then a new
	 * one and the heap's growth are locked too. */
	mlockall(MCL_CURRENT | MCL_FUTURE);
	anon(3, 0);
	sbrk(P);

	/* Nothing locked, now or later. (Three pages: too many for the hole the
	 * MAP_LOCKED area left.) */
	munlockall();
	anon(3, 0);
	close(fd);
	return 0;
}
