/* A stand-in for libcuda.so.1 that runs no kernels: it lets the runtime's CUDA device (dlopen,
 * context, module loading, memory, launches, errors) be tested on machines without a GPU. Device
 * memory is host memory; a "module" is the PTX text or cubin it was given, and a function exists when
 * the image names it as a kernel entry. Environment: KILN_MOCK_CUDA_DEVICES (default 1),
 * KILN_MOCK_CUDA_CC (compute capability as major*10+minor, default 90), KILN_MOCK_CUDA_FAIL_LAUNCH (the
 * Nth launch counted in the stats, from 1, fails at once with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, a
 * launch error that leaves the context usable), KILN_MOCK_CUDA_FAULT_LAUNCH (the Nth launch is accepted,
 * then "faults" as a kernel reading a bad address does on a GPU: from then on every call returns
 * CUDA_ERROR_ILLEGAL_ADDRESS (700) until cuDevicePrimaryCtxReset_v2, as the real driver's sticky errors
 * do). Strict about memory like the real driver: it tracks every live allocation, answers
 * cuMemGetAddressRange_v2 from them (CUDA_ERROR_NOT_FOUND for an address in none), and refuses copies
 * and clears outside one live allocation and frees of unknown pointers (CUDA_ERROR_INVALID_VALUE).
 * What the runtime did is readable through kiln_mock_cuda_stats(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#include "mock_cuda_driver.h"

static kiln_mock_cuda_stats_t stats;
static const char *image;
static size_t image_size;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700 };

/* Live allocations, in no order (the tests make a few hundred at most). */
typedef struct { CUdeviceptr base; size_t size; } allocation_t;
static allocation_t *live;
static size_t live_count, live_capacity;

static allocation_t *find(CUdeviceptr p) {
  for (size_t i = 0; i < live_count; ++i)
    if (p >= live[i].base && p - live[i].base < live[i].size) return &live[i];
  return NULL;
}
/* [p, p + n) inside one live allocation (n > 0). */
static int inside(CUdeviceptr p, size_t n) {
  allocation_t *a = find(p);
  return a && n <= a->size - (size_t)(p - a->base);
}
/* The sticky error a "faulted" kernel left, 0 when the context is healthy. */
#define STICKY() do { if (stats.sticky) return stats.sticky; } while (0)

__attribute__((visibility("default"))) kiln_mock_cuda_stats_t *kiln_mock_cuda_stats(void) { return &stats; }

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

#define API __attribute__((visibility("default")))
API CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
API CUresult cuDeviceGetCount(int *n) { *n = env_int("KILN_MOCK_CUDA_DEVICES", 1); return 0; }
API CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal < env_int("KILN_MOCK_CUDA_DEVICES", 1) ? 0 : 101; }
API CUresult cuDeviceGetName(char *name, int len, int d) { (void)d; strncpy(name, "Mock GPU", (size_t)len); return 0; }
API CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  int cc = env_int("KILN_MOCK_CUDA_CC", 90);
  if (attr == 75) *v = cc / 10;
  else if (attr == 76) *v = cc % 10;
  else return 1;
  return 0;
}
API CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; *ctx = &stats; stats.contexts++; return 0; }
API CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; stats.contexts--; return 0; }
/* Destroys the primary context's state: its allocations go, and a sticky error with it. */
API CUresult cuDevicePrimaryCtxReset_v2(int d) {
  (void)d;
  for (size_t i = 0; i < live_count; ++i) { free((void *)(uintptr_t)live[i].base); stats.live_allocations--; }
  live_count = 0;
  stats.sticky = 0;
  stats.resets++;
  return 0;
}
API CUresult cuCtxSetCurrent(void *ctx) { return ctx == &stats ? 0 : 201; }
API CUresult cuModuleLoadData(void **module, const void *data) {
  STICKY();
  const char *p = (const char *)data;
  stats.module_is_cubin = memcmp(p, "\x7f" "ELF", 4) == 0;
  /* PTX is NUL-terminated text; a cubin's size is unknown here, so search its first 16 MiB at most
   * (the tests' cubins are a few KiB) by scanning to the end of its section names. */
  image = p;
  image_size = stats.module_is_cubin ? 0 : strlen(p);
  if (!stats.module_is_cubin && !strstr(p, ".entry")) return 218; /* CUDA_ERROR_INVALID_PTX */
  *module = (void *)p;
  return 0;
}
API CUresult cuModuleUnload(void *m) { (void)m; return 0; }
API CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  if (module != image) return 400;
  if (!image_size) { *fn = (void *)name; return 0; } /* cubin: names are not checked */
  char want[512];
  size_t n = strlen(name);
  if (n + 9 > sizeof want) return 500;
  memcpy(want, ".entry ", 7);
  memcpy(want + 7, name, n);
  want[7 + n] = '(';
  want[8 + n] = 0;
  if (!strstr(image, want)) return 500; /* CUDA_ERROR_NOT_FOUND */
  *fn = (void *)name;
  return 0;
}
API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  STICKY();
  if (bytes == 0) return INVALID_VALUE;
  if (live_count == live_capacity) {
    size_t cap = live_capacity ? 2 * live_capacity : 64;
    allocation_t *grown = realloc(live, cap * sizeof *grown);
    if (!grown) return OUT_OF_MEMORY;
    live = grown;
    live_capacity = cap;
  }
  void *m = calloc(1, bytes);
  if (!m) return OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)m;
  live[live_count++] = (allocation_t){*p, bytes};
  stats.live_allocations++;
  stats.allocations++;
  return OK;
}
API CUresult cuMemFree_v2(CUdeviceptr p) {
  allocation_t *a = find(p);
  if (!a || a->base != p) { stats.bad_frees++; return INVALID_VALUE; }
  free((void *)(uintptr_t)p);
  *a = live[--live_count];
  stats.live_allocations--;
  return stats.sticky; /* the memory goes, but a broken context still says so */
}
API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  STICKY();
  allocation_t *a = find(p);
  if (!a) return NOT_FOUND;
  if (base) *base = a->base;
  if (size) *size = a->size;
  return OK;
}
API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
  STICKY();
  if (n && !inside(d, n)) { stats.bad_copies++; return INVALID_VALUE; }
  memcpy((void *)(uintptr_t)d, h, n);
  stats.bytes_to_device += (int64_t)n;
  return OK;
}
API CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  STICKY();
  if (n && !inside(d, n)) { stats.bad_copies++; return INVALID_VALUE; }
  memcpy(h, (void *)(uintptr_t)d, n);
  stats.bytes_to_host += (int64_t)n;
  stats.copies_to_host++;
  return OK;
}
API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  STICKY();
  if (n && !inside(d, n)) { stats.bad_copies++; return INVALID_VALUE; }
  memset((void *)(uintptr_t)d, v, n);
  stats.bytes_set += (int64_t)n;
  return OK;
}
API CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = malloc(1); return 0; }
API CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
API CUresult cuStreamSynchronize(void *s) { (void)s; STICKY(); return 0; }
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, void *stream, void **params, void **extra) {
  (void)smem; (void)stream; (void)extra;
  STICKY();
  stats.launches++;
  if (!f || !params || !gx || !gy || !gz || !bx || !by || !bz) stats.bad_launches++;
  if (stats.launches == env_int("KILN_MOCK_CUDA_FAIL_LAUNCH", 0)) return 701; /* CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
  /* Accepted, as a launch is; the fault shows at the next call, as a GPU's does. */
  if (stats.launches == env_int("KILN_MOCK_CUDA_FAULT_LAUNCH", 0)) stats.sticky = ILLEGAL_ADDRESS;
  return 0;
}
/* Events hold the host's clock when recorded: the mock runs nothing, so "kernel time" is the
 * time between the runtime's two records. */
API CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof(double));
  stats.events++;
  return *e ? 0 : 2;
}
API CUresult cuEventDestroy_v2(void *e) { free(e); stats.events--; return 0; }
API CUresult cuEventRecord(void *e, void *stream) {
  (void)stream;
  STICKY();
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  *(double *)e = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
  return 0;
}
API CUresult cuEventElapsedTime(float *ms, void *from, void *to) {
  *ms = (float)(*(double *)to - *(double *)from);
  return 0;
}
API CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == 218   ? "invalid PTX"
       : r == 701 ? "too many resources requested for launch"
       : r == 700 ? "an illegal memory access was encountered"
       : r == 500 ? "named symbol not found"
       : r == 2   ? "out of memory"
       : r == 1   ? "invalid argument"
                  : "mock error";
  return 0;
}
