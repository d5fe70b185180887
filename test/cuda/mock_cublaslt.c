/* A stand-in for libcublasLt.so that computes on the host: with the mock driver, device memory is
 * host memory, so the runtime's cuBLASLt calls (layouts, transposes, strided batches, leading
 * dimensions, alpha and beta) can be checked against reference outputs without a GPU. It
 * implements what kiln uses, as cuBLASLt documents it: column-major matrices, D = epilogue(alpha *
 * op(A) op(B) + beta * C) with C in place (C == D) or another buffer of D's layout, the epilogues
 * BIAS (one value per row of D, D's type), RELU and RELU_BIAS, fp32 accumulation over float, half
 * and bfloat16 data. Environment:
 * KILN_MOCK_CUBLASLT_NO_ALGO=1 makes the heuristic find no algorithm, KILN_MOCK_CUBLASLT_FAIL=1 makes
 * cublasLtMatmul fail as a faulting kernel would (CUBLAS_STATUS_EXECUTION_FAILED). When the mock CUDA
 * driver is loaded ($KILN_CUDA_DRIVER), cublasLtMatmul refuses (CUBLAS_STATUS_INVALID_VALUE) an
 * operand that is not inside one of the driver's live allocations, asking it through
 * cuMemGetAddressRange_v2 (a real GPU would read it and fault). With the mock driver the product is
 * enqueued on the stream as a host function (kiln_mock_cuda_launch_host_owned): run at once, or,
 * while the stream is being captured into a CUDA graph, recorded and run each time the graph is
 * launched, as a real cuBLASLt's kernels are. Statistics through kiln_mock_cublaslt_stats()
 * (matmuls counts products computed). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mock_cublaslt.h"
#include "mock_cuda_driver.h"

#define API __attribute__((visibility("default")))

enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, EXECUTION_FAILED = 13, NOT_SUPPORTED = 15 };

static int env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0");
}
enum { R_32F = 0, R_16F = 2, R_16BF = 14 };

static kiln_mock_cublaslt_stats_t stats;
API kiln_mock_cublaslt_stats_t *kiln_mock_cublaslt_stats(void) { return &stats; }

typedef struct { int compute, scale, transa, transb; uint32_t epilogue; const void *bias; } desc_t;
enum { EPILOGUE_DEFAULT = 1, EPILOGUE_RELU = 2, EPILOGUE_BIAS = 4, EPILOGUE_RELU_BIAS = 6 };
typedef struct { int type; uint64_t rows, cols; int64_t ld; int32_t batch; int64_t stride; } layout_t;
typedef struct { uint64_t workspace; uint32_t align[4]; } pref_t;
typedef struct { uint64_t algo[8]; size_t workspace_size; int state; float waves; int reserved[4]; } heuristic_t;

API int cublasLtCreate(void **handle) { *handle = malloc(1); stats.handles++; return OK; }
API int cublasLtDestroy(void *handle) { free(handle); stats.handles--; return OK; }
API size_t cublasLtGetVersion(void) { return 990000; }

static void *make(size_t bytes) { stats.live_descriptors++; return calloc(1, bytes); }
static int release(void *p) { if (p) stats.live_descriptors--; free(p); return OK; }

API int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
  desc_t *x = make(sizeof *x);
  x->compute = compute;
  x->scale = scale;
  x->epilogue = EPILOGUE_DEFAULT;
  *d = x;
  return OK;
}
API int cublasLtMatmulDescDestroy(void *d) { return release(d); }
API int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t size) {
  desc_t *x = d;
  if ((attr == 3 || attr == 4) && size == sizeof(int32_t)) {
    int32_t op;
    memcpy(&op, buf, sizeof op);
    if (op != 0 && op != 1) return INVALID_VALUE;
    *(attr == 3 ? &x->transa : &x->transb) = op;
    return OK;
  }
  if (attr == 7 && size == sizeof(uint32_t)) { /* CUBLASLT_MATMUL_DESC_EPILOGUE */
    uint32_t e;
    memcpy(&e, buf, sizeof e);
    if (e != EPILOGUE_DEFAULT && e != EPILOGUE_RELU && e != EPILOGUE_BIAS && e != EPILOGUE_RELU_BIAS) return NOT_SUPPORTED;
    x->epilogue = e;
    return OK;
  }
  if (attr == 8 && size == sizeof(void *)) { /* CUBLASLT_MATMUL_DESC_BIAS_POINTER */
    memcpy(&x->bias, buf, sizeof x->bias);
    return OK;
  }
  return INVALID_VALUE; /* kiln sets nothing else */
}

API int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  layout_t *x = make(sizeof *x);
  *x = (layout_t){type, rows, cols, ld, 1, 0};
  *l = x;
  return OK;
}
API int cublasLtMatrixLayoutDestroy(void *l) { return release(l); }
API int cublasLtMatrixLayoutSetAttribute(void *l, int attr, const void *buf, size_t size) {
  layout_t *x = l;
  if (attr == 5 && size == sizeof(int32_t)) { memcpy(&x->batch, buf, size); return x->batch >= 1 ? OK : INVALID_VALUE; }
  if (attr == 6 && size == sizeof(int64_t)) { memcpy(&x->stride, buf, size); return OK; }
  return INVALID_VALUE;
}

API int cublasLtMatmulPreferenceCreate(void **p) { *p = make(sizeof(pref_t)); return OK; }
API int cublasLtMatmulPreferenceDestroy(void *p) { return release(p); }
API int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t size) {
  pref_t *x = p;
  if (attr == 1 && size == sizeof(uint64_t)) { memcpy(&x->workspace, buf, size); return OK; }
  if (attr >= 5 && attr <= 8 && size == sizeof(uint32_t)) { memcpy(&x->align[attr - 5], buf, size); return OK; }
  return INVALID_VALUE;
}

static int type_ok(int t) { return t == R_32F || t == R_16F || t == R_16BF; }

/* The checks cuBLASLt makes of a problem: consistent dims, columns that do not overlap, types
 * with an fp32-accumulating kernel. */
static int check(const desc_t *d, const layout_t *a, const layout_t *b, const layout_t *c) {
  uint64_t m = c->rows, n = c->cols;
  uint64_t am = d->transa ? a->cols : a->rows, ak = d->transa ? a->rows : a->cols;
  uint64_t bk = d->transb ? b->cols : b->rows, bn = d->transb ? b->rows : b->cols;
  if (d->compute != 68 || d->scale != R_32F) return NOT_SUPPORTED;
  if (!type_ok(a->type) || a->type != b->type || (c->type != a->type && c->type != R_32F)) return NOT_SUPPORTED;
  if (am != m || bn != n || ak != bk) return INVALID_VALUE;
  if (a->ld < (int64_t)a->rows || b->ld < (int64_t)b->rows || c->ld < (int64_t)c->rows) return INVALID_VALUE;
  if (a->batch != c->batch || b->batch != c->batch) return INVALID_VALUE;
  if ((d->epilogue & EPILOGUE_BIAS) && !d->bias) return INVALID_VALUE;
  return OK;
}

API int cublasLtMatmulAlgoGetHeuristic(void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref,
                                       int requested, void *results_memory, int *count) {
  /* void *, as kiln's pointer to this function declares it: the same function type on both sides. */
  heuristic_t *results = (heuristic_t *)results_memory;
  (void)pref;
  stats.heuristics++;
  if (!handle || requested <= 0) return INVALID_VALUE;
  if (c != d) return NOT_SUPPORTED; /* kiln gives C D's layout */
  int r = check(desc, a, b, c);
  *count = 0;
  if (r != OK) return r;
  if (env_set("KILN_MOCK_CUBLASLT_NO_ALGO")) return OK;
  memset(&results[0], 0, sizeof results[0]);
  results[0].algo[0] = 42;
  *count = 1;
  return OK;
}

static float load(const void *base, int type, int64_t i) {
  if (type == R_32F) return ((const float *)base)[i];
  if (type == R_16F) return (float)((const _Float16 *)base)[i];
  uint32_t bits = (uint32_t)((const uint16_t *)base)[i] << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void store(void *base, int type, int64_t i, float v) {
  if (type == R_32F) { ((float *)base)[i] = v; return; }
  if (type == R_16F) { ((_Float16 *)base)[i] = (_Float16)v; return; }
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
  ((uint16_t *)base)[i] = (uint16_t)(bits >> 16);
}

typedef int (*range_fn)(unsigned long long *, size_t *, unsigned long long);

/* The mock driver's cuMemGetAddressRange_v2 when the process has loaded it, else null. */
static range_fn driver_range(void) {
  const char *path = getenv("KILN_CUDA_DRIVER");
  if (!path || !*path) return NULL;
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return NULL;
  range_fn fn = (range_fn)dlsym(lib, "cuMemGetAddressRange_v2");
  dlclose(lib); /* RTLD_NOLOAD took a reference to what was loaded: give it back */
  return fn;
}

/* Every element the layout addresses from `p` lies in one live allocation of the driver. */
static int in_device_memory(range_fn range, const void *p, const layout_t *l) {
  int64_t bytes = l->type == R_32F ? 4 : 2;
  uint64_t last = (l->rows - 1) + (l->cols - 1) * (uint64_t)l->ld + (uint64_t)(l->batch - 1) * (uint64_t)l->stride;
  unsigned long long base = 0, begin = (unsigned long long)(uintptr_t)p;
  size_t size = 0;
  if (range(&base, &size, begin) != 0) return 0;
  return (last + 1) * (uint64_t)bytes <= size - (begin - base);
}

/* One product as cublasLtMatmul was called with it (descriptors copied: the caller may destroy them). */
typedef struct {
  desc_t desc;
  layout_t a, b, c;
  const void *A, *B, *C;
  void *D;
  float alpha, beta;
} product_t;

static void compute(void *p) {
  const product_t *x = p;
  const desc_t *desc = &x->desc;
  const layout_t *a = &x->a, *b = &x->b, *c = &x->c;
  const void *A = x->A, *B = x->B, *C = x->C;
  void *D = x->D;
  float alpha = x->alpha, beta = x->beta;
  uint64_t m = c->rows, n = c->cols, k = desc->transa ? a->rows : a->cols;
  for (int32_t bi = 0; bi < c->batch; ++bi)
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (uint64_t l = 0; l < k; ++l) {
          int64_t ai = desc->transa ? (int64_t)(l + i * a->ld) : (int64_t)(i + l * a->ld);
          int64_t bj = desc->transb ? (int64_t)(j + l * b->ld) : (int64_t)(l + j * b->ld);
          acc += load(A, a->type, bi * a->stride + ai) * load(B, b->type, bi * b->stride + bj);
        }
        int64_t ci = bi * c->stride + (int64_t)(i + j * c->ld);
        float v = alpha * acc + (beta != 0 ? beta * load(C, c->type, ci) : 0); /* beta 0: C is not read */
        if (desc->epilogue & EPILOGUE_BIAS) v += load(desc->bias, c->type, (int64_t)i);
        if ((desc->epilogue & EPILOGUE_RELU) && !(v > 0)) v = 0;
        store(D, c->type, ci, v);
      }
  stats.matmuls++;
  stats.products += c->batch;
  stats.last_m = (int64_t)m;
  stats.last_n = (int64_t)n;
  stats.last_k = (int64_t)k;
  stats.last_batch = c->batch;
  stats.last_transa = desc->transa;
  stats.last_transb = desc->transb;
}

/* The mock driver's host-function entry when the process has loaded it, else null. */
static kiln_mock_cuda_launch_host_owned_fn driver_enqueue(void) {
  const char *path = getenv("KILN_CUDA_DRIVER");
  if (!path || !*path) return NULL;
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return NULL;
  kiln_mock_cuda_launch_host_owned_fn fn =
      (kiln_mock_cuda_launch_host_owned_fn)dlsym(lib, "kiln_mock_cuda_launch_host_owned");
  dlclose(lib);
  return fn;
}

static int beta_nonzero(const void *betap) { return *(const float *)betap != 0; }

API int cublasLtMatmul(void *handle, void *descp, const void *alphap, const void *A, void *ap, const void *B, void *bp,
                       const void *betap, const void *C, void *cp, void *D, void *dp, const void *algo, void *workspace,
                       size_t workspace_bytes, void *stream) {
  (void)workspace;
  const desc_t *desc = descp;
  const layout_t *a = ap, *b = bp, *c = cp;
  if (!handle || !algo || ((const uint64_t *)algo)[0] != 42) return INVALID_VALUE;
  if (cp != dp) return NOT_SUPPORTED; /* C and D share one layout, in place or not */
  int r = check(desc, a, b, c);
  if (r != OK) return r;
  if (env_set("KILN_MOCK_CUBLASLT_FAIL")) return EXECUTION_FAILED;
  range_fn range = driver_range();
  layout_t bias = {c->type, c->rows, 1, (int64_t)c->rows, 1, 0}; /* one value per row of D */
  if (range && (!in_device_memory(range, A, a) || !in_device_memory(range, B, b) || !in_device_memory(range, D, c) ||
                (C != D && beta_nonzero(betap) && !in_device_memory(range, C, c)) ||
                ((desc->epilogue & EPILOGUE_BIAS) && !in_device_memory(range, desc->bias, &bias)))) {
    stats.bad_operands++;
    return INVALID_VALUE;
  }
  product_t *x = malloc(sizeof *x);
  if (!x) return 3; /* CUBLAS_STATUS_ALLOC_FAILED */
  *x = (product_t){*desc, *a, *b, *c, A, B, C, D, *(const float *)alphap, *(const float *)betap};
  kiln_mock_cuda_launch_host_owned_fn enqueue = driver_enqueue();
  if (enqueue) {
    if (enqueue(stream, compute, x, free) != 0) return EXECUTION_FAILED;
  } else {
    compute(x);
    free(x);
  }
  stats.last_workspace_bytes = workspace_bytes;
  return OK;
}
