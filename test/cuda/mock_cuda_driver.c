/* A stand-in for libcuda.so.1 that runs no kernels: it lets the runtime's CUDA device (dlopen,
 * context, module loading, memory, launches, errors) be tested on machines without a GPU. Device
 * memory is host memory; a "module" is the PTX text or cubin it was given, and a function exists when
 * the image names it as a kernel entry. Environment: KILN_MOCK_CUDA_DEVICES (default 1),
 * KILN_MOCK_CUDA_CC (compute capability as major*10+minor, default 90), KILN_MOCK_CUDA_FAIL_LAUNCH (the
 * Nth launch counted in the stats, from 1, fails at once with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, a
 * launch error that leaves the context usable), KILN_MOCK_CUDA_FAULT_LAUNCH (the Nth launch is accepted,
 * then "faults" as a kernel reading a bad address does on a GPU: from then on every call returns
 * CUDA_ERROR_ILLEGAL_ADDRESS (700) for the life of the process (a reset does not clear it), as the real driver's sticky errors
 * do). Strict about memory like the real driver: it tracks every live allocation, answers
 * cuMemGetAddressRange_v2 from them (CUDA_ERROR_NOT_FOUND for an address in none), and refuses copies
 * and clears outside one live allocation and frees of unknown pointers (CUDA_ERROR_INVALID_VALUE).
 * Stream capture as the driver does it: while a stream captures (cuStreamBeginCapture_v2), its
 * launches (and host functions) are recorded into a graph instead of run; cuGraphLaunch replays
 * them (counted in replayed_launches); copies, clears and synchronizations while any stream captures
 * fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) and invalidate the capture, whose
 * cuStreamEndCapture then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901), as it does for
 * every capture while KILN_MOCK_CUDA_INVALIDATE_CAPTURE=1. cuStreamGetCaptureInfo names the node
 * captured last, and cuGraphExecKernelNodeSetParams_v2 sets a kernel node of an executable graph
 * (refused for a node of another graph, one that is no kernel, or a change of function: kiln never
 * changes one, so that would be a node taken for another).
 * Where a module is PTX, each kernel's parameter sizes are read from its .entry, so a launch's
 * parameters can be copied: a captured node keeps them, and kiln_mock_cuda_set_trace(path) writes
 * one line per kernel run (launched, or replayed by cuGraphLaunch) with its name, grid, block and
 * parameters, each 8-byte value inside a live allocation written as "@<allocation size>+<offset>"
 * so that two runs of the same work in one process give the same lines.
 * What the runtime did is readable through kiln_mock_cuda_stats(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#include "mock_cuda_driver.h"

static kiln_mock_cuda_stats_t stats;
static const char *image;
static size_t image_size;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, ILLEGAL_STATE = 401, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700,
       CAPTURE_UNSUPPORTED = 900, CAPTURE_INVALIDATED = 901 };

/* A kernel of the loaded module: its name and, from PTX, the size of each parameter (count -1:
 * unknown, a cubin). The function handle is a pointer to one. */
enum { MAX_FUNCTIONS = 4096, MAX_PARAMS = 512 };
typedef struct { const char *name; int count; unsigned char sizes[MAX_PARAMS]; } function_t;
static function_t functions[MAX_FUNCTIONS];
static int function_count;

/* A launch as a node holds it: the function, grid and block and shared bytes, the parameters. */
typedef struct { const function_t *f; unsigned dims[7]; unsigned char *params; size_t param_bytes; } launch_t;

/* A graph: its nodes in capture order (one stream: a chain). Shared by the CUgraph and the
 * executable graphs made from it, freed with the last reference. A node's handle (`ref`) names
 * its graph and index. */
struct graph;
typedef struct { struct graph *g; size_t index; } node_ref_t;
typedef struct { int kernel; void (*fn)(void *); void *data; void (*release)(void *); launch_t launch; node_ref_t *ref; } node_t;
typedef struct graph { node_t *nodes; size_t count, capacity; int refs; } graph_t;
typedef struct { graph_t *graph; int invalidated; } stream_t; /* graph: the open capture, if any */

static int open_captures;

static void graph_unref(graph_t *g) {
  if (!g || --g->refs > 0) return;
  for (size_t i = 0; i < g->count; ++i) {
    if (g->nodes[i].release) g->nodes[i].release(g->nodes[i].data);
    free(g->nodes[i].launch.params);
    free(g->nodes[i].ref);
  }
  free(g->nodes);
  free(g);
  stats.live_graphs--;
}
static int graph_add(graph_t *g, node_t n) {
  if (g->count == g->capacity) {
    size_t cap = g->capacity ? 2 * g->capacity : 16;
    node_t *grown = realloc(g->nodes, cap * sizeof *grown);
    if (!grown) return OUT_OF_MEMORY;
    g->nodes = grown;
    g->capacity = cap;
  }
  n.ref = malloc(sizeof *n.ref);
  if (!n.ref) return OUT_OF_MEMORY;
  *n.ref = (node_ref_t){g, g->count};
  g->nodes[g->count++] = n;
  return OK;
}

/* Streams are tracked so that a synchronous call can invalidate every open capture. */
static stream_t *streams[256];
static int stream_count;
/* A synchronous call while a capture is open: refused, and the capture is invalidated (the real
 * driver's legacy-stream synchronization with a capturing blocking stream). */
#define NO_CAPTURE() do { if (open_captures) { \
    for (int i_ = 0; i_ < stream_count; ++i_) if (streams[i_]->graph) streams[i_]->invalidated = 1; \
    stats.refused_in_capture++; return CAPTURE_UNSUPPORTED; } } while (0)

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
/* A launch's parameters copied (known sizes only); dims: grid, block, shared bytes. */
static launch_t copy_launch(const function_t *f, const unsigned dims[7], void **params) {
  launch_t l = {f, {0}, NULL, 0};
  memcpy(l.dims, dims, sizeof l.dims);
  if (!f || f->count < 0 || !params) return l;
  size_t total = 0;
  for (int i = 0; i < f->count; ++i) total += f->sizes[i];
  l.params = malloc(total ? total : 1);
  if (!l.params) return l;
  for (int i = 0; i < f->count; ++i) {
    memcpy(l.params + l.param_bytes, params[i], f->sizes[i]);
    l.param_bytes += f->sizes[i];
  }
  return l;
}

static FILE *trace;
__attribute__((visibility("default"))) int kiln_mock_cuda_set_trace(const char *path) {
  if (trace) fclose(trace);
  trace = path ? fopen(path, "w") : NULL;
  return path && !trace ? 1 : 0;
}
static void trace_launch(const launch_t *l) {
  if (!trace) return;
  fprintf(trace, "%s grid %u,%u,%u block %u,%u,%u shared %u:", l->f ? l->f->name : "?", l->dims[0], l->dims[1],
          l->dims[2], l->dims[3], l->dims[4], l->dims[5], l->dims[6]);
  if (!l->f || l->f->count < 0) { fputs(" ?\n", trace); return; }
  size_t at = 0;
  for (int i = 0; i < l->f->count; ++i) {
    uint64_t v = 0;
    memcpy(&v, l->params + at, l->f->sizes[i]);
    at += l->f->sizes[i];
    allocation_t *a = l->f->sizes[i] == 8 ? find((CUdeviceptr)v) : NULL;
    if (a) fprintf(trace, " @%zu+%llu", a->size, (unsigned long long)(v - a->base));
    else fprintf(trace, " %llu", (unsigned long long)v);
  }
  fputc('\n', trace);
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
API CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; STICKY(); *ctx = &stats; stats.contexts++; return 0; }
API CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; stats.contexts--; return 0; }
/* Destroys the primary context's state: its allocations go, but not a sticky error: on an H200
 * (driver 580) cuDevicePrimaryCtxRetain still failed with 700 after a reset, as CUDA's documentation
 * says of sticky errors (the process must be restarted). */
API CUresult cuDevicePrimaryCtxReset_v2(int d) {
  (void)d;
  for (size_t i = 0; i < live_count; ++i) { free((void *)(uintptr_t)live[i].base); stats.live_allocations--; }
  live_count = 0;
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
  function_count = 0;
  if (!stats.module_is_cubin && !strstr(p, ".entry")) return 218; /* CUDA_ERROR_INVALID_PTX */
  *module = (void *)p;
  return 0;
}
API CUresult cuModuleUnload(void *m) { (void)m; return 0; }
/* The byte size of a PTX parameter's type (".u64" and the like; ".b8 name[N]" is N bytes). */
static int param_size(const char *decl, const char *end) {
  static const struct { const char *type; int bytes; } types[] = {
      {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4},
      {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2}, {".u8", 1},  {".s8", 1},  {".b8", 1}};
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
    const char *at = strstr(decl, types[t].type);
    if (!at || at >= end) continue;
    const char *bracket = memchr(at, '[', (size_t)(end - at));
    return bracket ? types[t].bytes * atoi(bracket + 1) : types[t].bytes;
  }
  return -1;
}
API CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  if (module != image) return 400;
  if (function_count == MAX_FUNCTIONS) return OUT_OF_MEMORY;
  function_t *f = &functions[function_count];
  f->name = name;
  f->count = -1;
  if (!image_size) { function_count++; *fn = f; return 0; } /* cubin: names are not checked */
  char want[512];
  size_t n = strlen(name);
  if (n + 9 > sizeof want) return 500;
  memcpy(want, ".entry ", 7);
  memcpy(want + 7, name, n);
  want[7 + n] = '(';
  want[8 + n] = 0;
  const char *entry = strstr(image, want);
  if (!entry) return 500; /* CUDA_ERROR_NOT_FOUND */
  /* ".param .u64 .ptr .align 1 name_param_0, .param .u32 name_param_1 )": one size per ".param". */
  const char *at = entry + 8 + n, *close = strchr(at, ')');
  int count = 0;
  while (close && (at = strstr(at, ".param")) && at < close && count < MAX_PARAMS) {
    const char *next = strstr(at + 6, ".param");
    const char *end = next && next < close ? next : close;
    const int bytes = param_size(at + 6, end);
    if (bytes <= 0 || bytes > 255) { count = -1; break; }
    f->sizes[count++] = (unsigned char)bytes;
    at = end;
  }
  f->count = count;
  function_count++;
  *fn = f;
  return 0;
}
/* The allocation table goes with the library (the runtime dlcloses the driver when its last model
 * is destroyed), so LeakSanitizer finds no table that nothing points to any more. */
__attribute__((destructor)) static void release_table(void) {
  free(live);
  live = NULL;
  live_count = live_capacity = 0;
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
  /* Aligned to 256 bytes as cuMemAlloc's are (the generated code aligns its views from there). */
  const size_t rounded = (bytes + 255) / 256 * 256;
  void *m = aligned_alloc(256, rounded);
  if (!m) return OUT_OF_MEMORY;
  memset(m, 0, rounded);
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
  NO_CAPTURE();
  if (n && !inside(d, n)) { stats.bad_copies++; return INVALID_VALUE; }
  memcpy((void *)(uintptr_t)d, h, n);
  stats.bytes_to_device += (int64_t)n;
  return OK;
}
API CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  STICKY();
  NO_CAPTURE();
  if (n && !inside(d, n)) { stats.bad_copies++; return INVALID_VALUE; }
  memcpy(h, (void *)(uintptr_t)d, n);
  stats.bytes_to_host += (int64_t)n;
  stats.copies_to_host++;
  return OK;
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, size_t n, void *stream) {
  (void)stream;
  STICKY();
  NO_CAPTURE(); /* kiln copies outputs after a run, never inside a captured one */
  if (n && (!inside(to, n) || !inside(from, n))) { stats.bad_copies++; return INVALID_VALUE; }
  memmove((void *)(uintptr_t)to, (const void *)(uintptr_t)from, n);
  stats.bytes_on_device += (int64_t)n;
  return OK;
}
API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  STICKY();
  NO_CAPTURE();
  if (n && !inside(d, n)) { stats.bad_copies++; return INVALID_VALUE; }
  memset((void *)(uintptr_t)d, v, n);
  stats.bytes_set += (int64_t)n;
  return OK;
}
API CUresult cuStreamCreate(void **s, unsigned flags) {
  (void)flags;
  if (stream_count == 256) return OUT_OF_MEMORY;
  stream_t *x = calloc(1, sizeof *x);
  if (!x) return OUT_OF_MEMORY;
  streams[stream_count++] = x;
  *s = x;
  return 0;
}
API CUresult cuStreamDestroy_v2(void *s) {
  stream_t *x = s;
  for (int i = 0; i < stream_count; ++i)
    if (streams[i] == x) { streams[i] = streams[--stream_count]; break; }
  if (x->graph) { graph_unref(x->graph); open_captures--; }
  free(x);
  return 0;
}
API CUresult cuStreamSynchronize(void *s) { (void)s; STICKY(); NO_CAPTURE(); return 0; }

API CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  stream_t *x = s;
  STICKY();
  if (!x || x->graph || mode < 0 || mode > 2) return ILLEGAL_STATE;
  graph_t *g = calloc(1, sizeof *g);
  if (!g) return OUT_OF_MEMORY;
  g->refs = 1;
  stats.live_graphs++;
  x->graph = g;
  x->invalidated = 0;
  open_captures++;
  stats.captures++;
  return OK;
}
API CUresult cuStreamEndCapture(void *s, void **graph) {
  stream_t *x = s;
  *graph = NULL;
  if (!x || !x->graph) return ILLEGAL_STATE;
  graph_t *g = x->graph;
  x->graph = NULL;
  open_captures--;
  if (env_int("KILN_MOCK_CUDA_INVALIDATE_CAPTURE", 0)) x->invalidated = 1; /* as an unsupported call would */
  if (x->invalidated) { graph_unref(g); return CAPTURE_INVALIDATED; }
  *graph = g;
  return OK;
}
API CUresult cuStreamIsCapturing(void *s, int *status) {
  stream_t *x = s;
  *status = !x || !x->graph ? 0 : x->invalidated ? 2 : 1;
  return OK;
}
/* The node the next captured work would depend on: the last one captured (a chain). */
API CUresult cuStreamGetCaptureInfo_v3(void *s, int *status, unsigned long long *id, void **graph,
                                       void *const **deps, const void **edges, size_t *count) {
  stream_t *x = s;
  static void *last;
  *status = !x || !x->graph ? 0 : x->invalidated ? 2 : 1;
  if (id) *id = 0;
  if (graph) *graph = x && x->graph ? x->graph : NULL;
  if (edges) *edges = NULL;
  last = x && x->graph && x->graph->count ? x->graph->nodes[x->graph->count - 1].ref : NULL;
  if (deps) *deps = &last;
  if (count) *count = last ? 1 : 0;
  return OK;
}
API CUresult cuStreamGetCaptureInfo_v2(void *s, int *status, unsigned long long *id, void **graph,
                                       void *const **deps, size_t *count) {
  return cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, NULL, count);
}
/* CUDA_KERNEL_NODE_PARAMS_v2. */
typedef struct {
  void *func;
  unsigned dims[7];
  void **kernelParams, **extra;
  void *kern, *ctx;
} kernel_node_params_t;
/* `params` as the runtime declares it (const void *): UBSan's function check compares the types. */
API CUresult cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const void *params) {
  const kernel_node_params_t *p = params;
  STICKY();
  graph_t *g = exec;
  node_ref_t *ref = node;
  if (!g || !ref || ref->g != g || ref->index >= g->count || !p) return INVALID_VALUE;
  node_t *n = &g->nodes[ref->index];
  if (!n->kernel || p->func != n->launch.f || !p->kernelParams) return INVALID_VALUE;
  for (int i = 0; i < 6; ++i)
    if (!p->dims[i]) return INVALID_VALUE;
  free(n->launch.params);
  n->launch = copy_launch(p->func, p->dims, p->kernelParams);
  stats.kernel_nodes_set++;
  return OK;
}
API CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  (void)flags;
  STICKY();
  graph_t *g = graph;
  if (!g) return INVALID_VALUE;
  g->refs++;
  *exec = g;
  stats.graphs_instantiated++;
  return OK;
}
API CUresult cuGraphDestroy(void *graph) { graph_unref(graph); return OK; }
API CUresult cuGraphExecDestroy(void *exec) { graph_unref(exec); return OK; }
API CUresult cuGraphLaunch(void *exec, void *s) {
  stream_t *x = s;
  graph_t *g = exec;
  STICKY();
  if (!g || (x && x->graph)) return INVALID_VALUE;
  stats.graph_launches++;
  for (size_t i = 0; i < g->count; ++i) {
    if (g->nodes[i].kernel) {
      stats.replayed_launches++;
      trace_launch(&g->nodes[i].launch);
    } else {
      g->nodes[i].fn(g->nodes[i].data);
    }
  }
  return OK;
}
/* A host function: run now, or recorded while the stream captures. */
static CUresult launch_host(void *s, void (*fn)(void *), void *data, void (*release)(void *)) {
  stream_t *x = s;
  if (stats.sticky) { if (release) release(data); return stats.sticky; }
  if (x && x->graph) {
    if (graph_add(x->graph, (node_t){0, fn, data, release, {0}, NULL}) != OK) { if (release) release(data); return OUT_OF_MEMORY; }
    return OK;
  }
  fn(data);
  if (release) release(data);
  return OK;
}
API CUresult cuLaunchHostFunc(void *s, void (*fn)(void *), void *data) { return launch_host(s, fn, data, NULL); }
API int kiln_mock_cuda_launch_host_owned(void *s, void (*fn)(void *), void *data, void (*release)(void *)) {
  return launch_host(s, fn, data, release);
}
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, void *stream, void **params, void **extra) {
  (void)extra;
  STICKY();
  stream_t *x = stream;
  const unsigned dims[7] = {gx, gy, gz, bx, by, bz, smem};
  if (x && x->graph) { /* recorded, run by cuGraphLaunch */
    if (!f || !params || !gx || !gy || !gz || !bx || !by || !bz) stats.bad_launches++;
    stats.captured_launches++;
    node_t n = {1, NULL, NULL, NULL, copy_launch(f, dims, params), NULL};
    const CUresult r = graph_add(x->graph, n);
    if (r != OK) free(n.launch.params);
    return r;
  }
  stats.launches++;
  if (!f || !params || !gx || !gy || !gz || !bx || !by || !bz) stats.bad_launches++;
  if (trace) {
    launch_t l = copy_launch(f, dims, params);
    trace_launch(&l);
    free(l.params);
  }
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
