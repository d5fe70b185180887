/* What the runtime asked of the mock cuBLASLt (mock_cublaslt.c). */
#ifndef KILN_MOCK_CUBLASLT_H
#define KILN_MOCK_CUBLASLT_H

#include <stdint.h>

typedef struct kiln_mock_cublaslt_stats_t {
  int handles;             /* live cublasLtCreate handles */
  int64_t heuristics;      /* cublasLtMatmulAlgoGetHeuristic calls */
  int64_t matmuls;         /* cublasLtMatmul calls */
  int64_t products;        /* matrix products computed (batch counts summed) */
  int64_t live_descriptors; /* descriptors, layouts and preferences not yet destroyed */
  /* The last cublasLtMatmul: D's rows and columns, the inner dimension, the batch count, whether
   * A and B were transposed, and the workspace it was given. */
  int64_t last_m, last_n, last_k, last_batch;
  int last_transa, last_transb;
  uint64_t last_workspace_bytes;
  int64_t bad_operands;    /* cublasLtMatmul calls refused: an operand outside the mock driver's allocations */
} kiln_mock_cublaslt_stats_t;

#endif
