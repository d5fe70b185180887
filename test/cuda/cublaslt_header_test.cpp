// The cuBLASLt constants and struct the runtime declares itself (runtime/src/cuda_blas.h: it
// includes no CUDA header, so it builds where the toolkit is absent) against the toolkit's headers,
// where installed. A mismatch fails the build.
#include "runtime/src/cuda_blas.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

namespace lt = kiln::runtime::cublaslt;

static_assert(lt::kComputeF32 == CUBLAS_COMPUTE_32F);
static_assert(lt::kTypeF32 == CUDA_R_32F && lt::kTypeF16 == CUDA_R_16F && lt::kTypeBF16 == CUDA_R_16BF);
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA && lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              lt::kLayoutBatchStride == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(lt::kPrefMaxWorkspace == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(lt::kPrefMinAlignmentA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
              lt::kPrefMinAlignmentA + 1 == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES &&
              lt::kPrefMinAlignmentA + 2 == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES &&
              lt::kPrefMinAlignmentA + 3 == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T);
static_assert(lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              lt::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER);
static_assert(lt::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT && lt::kEpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
              lt::kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              (lt::kEpilogueRelu | lt::kEpilogueBias) == CUBLASLT_EPILOGUE_RELU_BIAS);
static_assert(sizeof(lt::HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(lt::HeuristicResult, workspaceSize) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(lt::HeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));

TEST(CublasLtHeader, ConstantsMatchTheToolkit) { SUCCEED() << "checked at compile time against " CUBLASLT_HEADER; }
