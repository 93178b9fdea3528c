/* mseal, mbind and pkey_mprotect: the VMA flags they set (sealed, a memory
 * policy, a protection key) split areas and keep them apart, and a sealed area
 * refuses every change of its mapping. Recorded and replayed by
 * crates/mm/tests/seal_bind_key_recording.rs, which stores
 * tests/data/seal-bind-key.{strace,maps}, recorded so:
 *
 *   D=/tmp/aspace-seal-bind-key-00000000; mkdir $D; cp seal_bind_key.c $D
 *   (cd $D && cc -O2 -s -o seal-bind-key seal_bind_key.c)
 *   cd / && env -i PATH=/usr/bin:/bin scripts/record.sh $D/seal-bind-key \
 *       $D/seal-bind-key
 *
 * No stdio (its buffers would add memory calls). The calls go through
 * syscall(): glibc 2.36 has no mseal, and brk must be the raw call. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define P 4096L
#define MSEAL 462
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_INTERLEAVE 3
#define MPOL_DEFAULT 0

static char *anon(long pages, int prot)
{
	return mmap(NULL, pages * P, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static long bind(void *a, long len, long mode, unsigned long mask)
{
	return syscall(SYS_mbind, a, len, mode, &mask, 64, 0);
}

int main(void)
{
	char *k = anon(4, PROT_READ | PROT_WRITE);
	char *b = anon(8, PROT_READ | PROT_WRITE);
	char *s = anon(8, PROT_READ | PROT_WRITE);
	char *r = anon(2, PROT_READ);
	char *brk0;
	pid_t child;

	/* Protection keys: -1 is a plain mprotect; key 1 was never allocated
	 * (EINVAL, and no keys at all on a machine without them). */
	syscall(SYS_pkey_mprotect, k + P, P, PROT_READ, -1);
	syscall(SYS_pkey_mprotect, k + 2 * P, P, PROT_READ, 1);

	/* Memory policies: node 0 bound on page 1, interleaved on 3-4, preferred
	 * with no nodes (local) on 6, bound on 7 and the first page of the area
	 * above (the areas lie next to each other); node 63 is EINVAL; then
	 * MPOL_DEFAULT on 2-5 merges those pages back into one area. */
	bind(b + P, P, MPOL_BIND, 1);
	bind(b + 3 * P, 2 * P, MPOL_INTERLEAVE, 1);
	bind(b + 6 * P, P, MPOL_PREFERRED, 0);
	bind(b + 7 * P, 2 * P, MPOL_BIND, 1);
	bind(b, P, MPOL_BIND, 1UL << 63);
	bind(b + 2 * P, 4 * P, MPOL_DEFAULT, 0);

	/* Sealing: pages 2-3 of s, page 7 with the first page of the area above,
	 * an empty range, and bad flags (EINVAL); then
	 * munmap, mprotect, mremap, MAP_FIXED over it and a fixed mremap onto it
	 * are EPERM, and so is throwing away pages of sealed read-only memory
	 * (not of writable memory); other advice is allowed. */
	syscall(MSEAL, s + 2 * P, 2 * P, 0);
	syscall(MSEAL, s, P, 1);
	syscall(MSEAL, s + 7 * P, 2 * P, 0);
	syscall(MSEAL, s, 0, 0);
	munmap(s + P, 2 * P);
	mprotect(s + 3 * P, P, PROT_READ);
	mremap(s + 2 * P, P, 2 * P, MREMAP_MAYMOVE);
	mmap(s + 2 * P, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	mremap(k, P, P, MREMAP_MAYMOVE | MREMAP_FIXED, s + 3 * P);
	madvise(s + 2 * P, P, MADV_DONTNEED);
	syscall(MSEAL, r, 2 * P, 0);
	madvise(r, P, MADV_DONTNEED);
	madvise(r, P, MADV_DONTFORK);
	madvise(r + P, P, MADV_RANDOM);
	munmap(s + 4 * P, 4 * P);

	/* The heap: its top page sealed, a shrink over it fails. */
	brk0 = (char *)syscall(SYS_brk, 0);
	syscall(SYS_brk, brk0 + 2 * P);
	syscall(MSEAL, brk0 + P, P, 0);
	syscall(SYS_brk, brk0);

	/* A child has its parent's seals, policies and keys. */
	child = fork();
	if (child == 0) {
		munmap(s + 2 * P, P);
		syscall(SYS_exit_group, 0);
	}
	waitpid(child, NULL, 0);
	return 0;
}
