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
  int64_t bytes_set;        /* by cuMemsetD8 */
  int64_t events;           /* cuEventCreate minus cuEventDestroy */
  int module_is_cubin;      /* the last module loaded: 1 cubin (ELF), 0 PTX text */
  int contexts;             /* retained primary contexts */
  int sticky;               /* the sticky error of a "faulted" launch (700), 0 when healthy */
  int64_t resets;           /* cuDevicePrimaryCtxReset_v2 calls */
  int64_t bad_copies;       /* copies and clears refused: outside every live allocation */
  int64_t bad_frees;        /* cuMemFree of a pointer that is no live allocation's base */
} kiln_mock_cuda_stats_t;

typedef kiln_mock_cuda_stats_t *(*kiln_mock_cuda_stats_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
