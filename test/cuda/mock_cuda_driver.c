/* A stand-in for libcuda.so.1 that runs no kernels: it lets the runtime's CUDA device (dlopen,
 * context, module loading, memory, launches, errors) be tested on machines without a GPU. Device
 * memory is host memory; a "module" is the PTX text or cubin it was given, and a function exists when
 * the image names it as a kernel entry. Environment: KILN_MOCK_CUDA_DEVICES (default 1),
 * KILN_MOCK_CUDA_CC (compute capability as major*10+minor, default 90), KILN_MOCK_CUDA_FAIL_LAUNCH (the
 * Nth launch counted in the stats, from 1, fails as a faulting kernel would). What the runtime did is
 * readable through kiln_mock_cuda_stats(). */
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
API CUresult cuCtxSetCurrent(void *ctx) { return ctx == &stats ? 0 : 201; }
API CUresult cuModuleLoadData(void **module, const void *data) {
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
  void *m = calloc(1, bytes);
  if (!m) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *p = (CUdeviceptr)(uintptr_t)m;
  stats.live_allocations++;
  stats.allocations++;
  return 0;
}
API CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); stats.live_allocations--; return 0; }
API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { memcpy((void *)(uintptr_t)d, h, n); stats.bytes_to_device += (int64_t)n; return 0; }
API CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  memcpy(h, (void *)(uintptr_t)d, n);
  stats.bytes_to_host += (int64_t)n;
  stats.copies_to_host++;
  return 0;
}
API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); stats.bytes_set += (int64_t)n; return 0; }
API CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = malloc(1); return 0; }
API CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
API CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, void *stream, void **params, void **extra) {
  (void)smem; (void)stream; (void)extra;
  stats.launches++;
  if (!f || !params || !gx || !gy || !gz || !bx || !by || !bz) stats.bad_launches++;
  if (stats.launches == env_int("KILN_MOCK_CUDA_FAIL_LAUNCH", 0)) return 719; /* CUDA_ERROR_LAUNCH_FAILED */
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
  *s = r == 218 ? "invalid PTX" : r == 719 ? "unspecified launch failure" : "mock error";
  return 0;
}
