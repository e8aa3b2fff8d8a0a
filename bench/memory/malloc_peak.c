/* A peak counter for any process's heap (issue 51: PyTorch eager's peak
 * measured, not guessed). Preloaded (LD_PRELOAD=libact_malloc_peak.so), it
 * wraps the C allocation functions, counts the live bytes of every block
 * (malloc_usable_size: what the block really holds) and their peak; a
 * program reads and resets them through act_malloc_peak_* (Python: act.
 * mallocpeak). PyTorch's CPU allocator takes its buffers from
 * posix_memalign, NumPy from malloc: both are counted, as act's own hooks
 * count its steps' buffers. Glibc's internal mmap of large blocks is below
 * these functions, so it is counted too. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);

static _Atomic int64_t live, peak;

/* dlsym may allocate (calloc) before the real functions are known: those
 * few bytes come from a static arena and are never freed. */
static char arena[4096];
static size_t arena_used;
static int resolving;

static int from_arena(void *p) {
  return (char *)p >= arena && (char *)p < arena + sizeof(arena);
}

static void resolve(void) {
  if (real_malloc || resolving)
    return;
  resolving = 1;
  real_malloc = dlsym(RTLD_NEXT, "malloc");
  real_free = dlsym(RTLD_NEXT, "free");
  real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc");
  real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  real_memalign = dlsym(RTLD_NEXT, "memalign");
  resolving = 0;
}

static void account(int64_t bytes) {
  int64_t now = atomic_fetch_add(&live, bytes) + bytes;
  int64_t high = atomic_load(&peak);
  while (now > high && !atomic_compare_exchange_weak(&peak, &high, now))
    ;
}

static void *counted(void *p) {
  if (p)
    account((int64_t)malloc_usable_size(p));
  return p;
}

void *malloc(size_t size) {
  resolve();
  if (!real_malloc) {
    size = (size + 15) & ~(size_t)15;
    if (arena_used + size > sizeof(arena))
      return NULL;
    void *p = arena + arena_used;
    arena_used += size;
    return p;
  }
  return counted(real_malloc(size));
}

void *calloc(size_t n, size_t size) {
  resolve();
  if (!real_calloc) {
    void *p = malloc(n * size);
    if (p)
      memset(p, 0, n * size);
    return p;
  }
  return counted(real_calloc(n, size));
}

void free(void *p) {
  if (!p || from_arena(p))
    return;
  resolve();
  account(-(int64_t)malloc_usable_size(p));
  real_free(p);
}

void *realloc(void *p, size_t size) {
  resolve();
  if (p && from_arena(p)) {
    void *q = malloc(size);
    if (q)
      memcpy(q, p, size);
    return q;
  }
  int64_t before = p ? (int64_t)malloc_usable_size(p) : 0;
  void *q = real_realloc(p, size);
  if (q || size == 0)
    account((q ? (int64_t)malloc_usable_size(q) : 0) - before);
  return q;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  resolve();
  int status = real_posix_memalign(out, alignment, size);
  if (status == 0)
    counted(*out);
  return status;
}

void *aligned_alloc(size_t alignment, size_t size) {
  resolve();
  return counted(real_aligned_alloc(alignment, size));
}

void *memalign(size_t alignment, size_t size) {
  resolve();
  return counted(real_memalign(alignment, size));
}

/* The interface: live bytes, the peak since the last reset, and a reset
 * (the peak becomes the live bytes). */
int64_t act_malloc_peak_live(void) { return atomic_load(&live); }
int64_t act_malloc_peak_get(void) { return atomic_load(&peak); }
void act_malloc_peak_reset(void) { atomic_store(&peak, atomic_load(&live)); }
