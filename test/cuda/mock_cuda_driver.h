/* What the mock CUDA driver (mock_cuda_driver.c) counts, shared with the tests that read it: one
 * declaration, so the test calls kiln_mock_cuda_stats through its exact type (UBSan's function check). */
#ifndef KILN_TEST_MOCK_CUDA_DRIVER_H
#define KILN_TEST_MOCK_CUDA_DRIVER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_mock_cuda_stats_t {
  int64_t launches;         /* cuLaunchKernel calls */
  int64_t bad_launches;     /* with a null function or params, or zero-sized grid/block */
  int64_t live_allocations; /* cuMemAlloc minus cuMemFree */
  int64_t allocations;      /* cuMemAlloc calls */
  int64_t bytes_to_device, bytes_to_host;
  int64_t copies_to_host;   /* cuMemcpyDtoH calls */
  int64_t bytes_on_device;  /* cuMemcpyDtoDAsync: bytes copied between device buffers */
  int64_t bytes_set;        /* by cuMemsetD8 */
  int64_t events;           /* cuEventCreate minus cuEventDestroy */
  int module_is_cubin;      /* the last module loaded: 1 cubin (ELF), 0 PTX text */
  int contexts;             /* retained primary contexts */
  int sticky;               /* the sticky error of a "faulted" launch (700), 0 when healthy */
  int64_t resets;           /* cuDevicePrimaryCtxReset_v2 calls */
  int64_t bad_copies;       /* copies and clears refused: outside every live allocation */
  int64_t bad_frees;        /* cuMemFree of a pointer that is no live allocation's base */
  /* Graphs (stream capture): launches recorded while a stream captured (not counted in `launches`),
   * captures begun, graphs instantiated, cuGraphLaunch calls, the kernel launches those replayed,
   * graphs and executable graphs alive, and calls refused because a capture was open (900). */
  int64_t captured_launches;
  int64_t captures;
  int64_t graphs_instantiated;
  int64_t graph_launches;
  int64_t replayed_launches;
  int64_t live_graphs;
  int64_t refused_in_capture;
  int64_t kernel_nodes_set; /* cuGraphExecKernelNodeSetParams_v2 calls that set a node */
} kiln_mock_cuda_stats_t;

/* Mock-only: writes one line per kernel run from now on to `path` (NULL: stop); nonzero when the
 * file cannot be made. */
typedef int (*kiln_mock_cuda_set_trace_fn)(const char *path);

/* A mock-only entry (not in the real driver): like cuLaunchHostFunc, but the node owns `data`
 * (freed with `release` when its graph goes, or right after `fn` when the stream is not capturing).
 * The mock cuBLASLt enqueues its host computation with it, so a captured product runs on replay. */
typedef int (*kiln_mock_cuda_launch_host_owned_fn)(void *stream, void (*fn)(void *), void *data,
                                                   void (*release)(void *));

typedef kiln_mock_cuda_stats_t *(*kiln_mock_cuda_stats_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
