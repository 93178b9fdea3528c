/* mremap's MREMAP_DONTUNMAP and old_len 0, and mprotect's PROT_GROWSDOWN and
 * PROT_GROWSUP, each where it works and where the kernel refuses it. Recorded
 * and replayed by crates/mm/tests/remap_protect_recording.rs, which stores
 * tests/data/remap-protect.{strace,maps}, recorded so:
 *
 *   D=/tmp/aspace-remap-protect-00000000; mkdir $D; cp remap_protect.c $D
 *   (cd $D && cc -O2 -s -o remap-protect remap_protect.c)
 *   cd / && env -i PATH=/usr/bin:/bin scripts/record.sh $D/remap-protect \
 *       $D/remap-protect
 *
 * No stdio (its buffers would add memory calls). mremap goes through syscall()
 * so that its fifth argument is always the one meant: glibc's wrapper passes
 * whatever is in the register when MREMAP_FIXED is not set, and the kernel
 * checks it for MREMAP_DONTUNMAP too. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define P 4096L
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static char *anon(long pages, int prot, int flags)
{
	return mmap(NULL, pages * P, prot, MAP_ANONYMOUS | flags, -1, 0);
}

static long remap(void *old, long old_len, long new_len, long flags, void *to)
{
	return syscall(SYS_mremap, old, old_len, new_len, flags, to);
}

int main(int argc, char **argv)
{
	const long move = MREMAP_MAYMOVE, keep = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
	char *a = anon(16, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	char *hole = anon(8, PROT_NONE, MAP_PRIVATE);
	char *s, *sa;
	volatile char on_stack = 1;
	long stack_page = (long)&on_stack & ~(P - 1);
	int fd;

	/* MREMAP_DONTUNMAP: pages 0..3 to where the search puts them; 4..5 to a
	 * hint strace does not print; 6..7 to a fixed place in the reserve, the
	 * old ranges left mapped. Of a locked area (8..11), the whole area
	 * loses its lock. A length change or no MREMAP_MAYMOVE is EINVAL. */
	for (long i = 0; i < 16 * P; i += P)
		a[i] = 1;
	remap(a, 4 * P, 4 * P, keep, NULL);
	remap(a + 4 * P, 2 * P, 2 * P, keep, a - 256 * P);
	remap(a + 6 * P, 2 * P, 2 * P, keep | MREMAP_FIXED, hole + 2 * P);
	mlock(a + 8 * P, 4 * P);
	remap(a + 9 * P, 2 * P, 2 * P, keep, NULL);
	remap(a + 12 * P, 2 * P, 4 * P, keep, NULL);
	remap(a + 12 * P, 2 * P, 2 * P, MREMAP_DONTUNMAP, NULL);

	/* old_len 0: a second mapping of a shared object; refused for private
	 * memory (EINVAL), and with nowhere to go without MREMAP_MAYMOVE
	 * (ENOMEM). The program's own file, mapped shared read-only, is shared
	 * for this (VM_MAYSHARE without VM_SHARED). */
	remap(a, 0, 2 * P, move, NULL);
	fd = open(argv[0], O_RDONLY);
	s = mmap(NULL, 2 * P, PROT_READ, MAP_SHARED, fd, 0);
	remap(s + P, 0, 3 * P, move, NULL);
	remap(s, 0, P, 0, NULL);
	sa = anon(4, PROT_READ | PROT_WRITE, MAP_SHARED);
	remap(sa, 0, 4 * P, move | MREMAP_FIXED, hole + 4 * P);
	remap(s, 2 * P, 2 * P, keep, NULL);

	/* PROT_GROWSDOWN: from the stack's first page up to the page given (a
	 * range starting below the stack, in its gap, reaches the stack too); on
	 * memory that does not grow down, EINVAL. PROT_GROWSUP (nothing grows up
	 * on x86-64) and both bits are EINVAL. The last call is ld.so's when it
	 * loads a library that wants an executable stack: the stack is rwx up to
	 * the page given, in one area where that page is its last. */
	mprotect((void *)(stack_page - 2048 * P), 2049 * P,
		 PROT_READ | PROT_WRITE | PROT_GROWSDOWN);
	mprotect(a + 13 * P, P, PROT_READ | PROT_GROWSDOWN);
	mprotect((void *)stack_page, P, PROT_READ | PROT_WRITE | PROT_GROWSUP);
	mprotect((void *)stack_page, P, PROT_READ | PROT_GROWSDOWN | PROT_GROWSUP);
	mprotect(a + 14 * P, 0, PROT_READ | PROT_GROWSDOWN);
	mprotect((void *)stack_page, P,
		 PROT_READ | PROT_WRITE | PROT_EXEC | PROT_GROWSDOWN);
	return on_stack - 1;
}
