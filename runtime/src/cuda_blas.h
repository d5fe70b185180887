// Matrix products on the GPU through cuBLASLt, loaded at run time with dlopen like the driver: the
// generated code's `gemm` calls (kiln_abi_gemm) become cublasLtMatmul on the run's stream. Without
// the library, or for a layout it cannot take, the call is declined and the code's own kernels run.
#ifndef KILN_RUNTIME_CUDA_BLAS_H
#define KILN_RUNTIME_CUDA_BLAS_H

#include "kiln/abi.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::runtime {

namespace cublaslt {
// cuBLASLt's enums and its one struct kiln reads, as cublasLt.h / library_types.h define them;
// test/cuda/cublaslt_header_test.cpp checks them against the headers where the toolkit is installed.
constexpr int32_t kComputeF32 = 68;       // CUBLAS_COMPUTE_32F: fp32 accumulation (tensor cores for f16/bf16)
constexpr int32_t kTypeF32 = 0, kTypeF16 = 2, kTypeBF16 = 14; // CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF
constexpr int kDescTransA = 3, kDescTransB = 4;                // CUBLASLT_MATMUL_DESC_TRANSA/B (int32)
constexpr int kDescEpilogue = 7;                               // CUBLASLT_MATMUL_DESC_EPILOGUE (uint32)
constexpr int kDescBiasPointer = 8;                            // CUBLASLT_MATMUL_DESC_BIAS_POINTER (const void *)
constexpr uint32_t kEpilogueDefault = 1, kEpilogueRelu = 2, kEpilogueBias = 4; // cublasLtEpilogue_t (RELU_BIAS = 6)
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;   // CUBLASLT_MATRIX_LAYOUT_* (int32, int64)
constexpr int kPrefMaxWorkspace = 1;                           // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64)
constexpr int kPrefMinAlignmentA = 5;                          // ..._A_BYTES; B, C, D follow (uint32)
constexpr int32_t kOpN = 0, kOpT = 1;                          // CUBLAS_OP_N, CUBLAS_OP_T

struct HeuristicResult { // cublasLtMatmulHeuristicResult_t
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");

} // namespace cublaslt

// One operand as cublasLtMatmul takes it: column-major `rows` x `cols` with leading dimension
// `ld`, used as is or transposed; strides in elements.
struct BlasMatrix {
  const void *data = nullptr;
  int32_t type = 0; // cudaDataType: 0 float, 2 half, 14 bfloat16
  bool transposed = false;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int64_t batchStride = 0;
  int64_t outerStride[KILN_ABI_GEMM_MAX_BATCH] = {};
  uint32_t alignment = 0; // bytes, a power of two up to 256: every batch's start and column
};

// A kiln_abi_gemm as cuBLASLt's D = epilogue(alpha * op(A) op(B) + beta * C) (D is m x n,
// column-major; C is D itself, or `cSource` with D's layout), run `batch` at a time (strided
// batch) for each index of the outer batch loops the runtime iterates. The epilogue adds `bias`
// (one value per row of D, every column and batch) and applies ReLU as `epilogue` says.
struct BlasPlan {
  BlasMatrix a, b, d;
  int32_t batch = 1;
  int outerRank = 0;
  int64_t outer[KILN_ABI_GEMM_MAX_BATCH] = {};
  float alpha = 1, beta = 0;
  const void *cSource = nullptr; // null: C is D (in place)
  uint32_t cAlignment = 0;       // of cSource, as BlasMatrix::alignment
  const void *bias = nullptr;
  uint32_t biasAlignment = 0;
  uint32_t epilogue = cublaslt::kEpilogueDefault;
};

// The plan for `g` and its `epilogue` (null: none); false with the reason when cuBLASLt cannot take
// it (kiln's kernels then do): element types it has no kernel for, an operand strided along both
// of its dims, empty or int32-overflowing sizes, a negative stride; a bias that is not one packed
// value per row of D (C not row-major, a batch folded into n, a strided bias, another type). Batch dims of size 1 are dropped, a batch that only
// A has folds into m where A's and C's strides allow (a [B, S, K] x [K, N] product is one
// [B*S, K] x [K, N] product), one only B has into n, and adjacent contiguous batch dims merge.
bool planGemm(const kiln_abi_gemm &g, const kiln_abi_epilogue *epilogue, BlasPlan &plan, std::string &why);

class CudaBlas {
public:
  // Loads cuBLASLt ($KILN_CUBLASLT, else libcublasLt.so.13, .12, the same in /usr/local/cuda/lib64,
  // then libcublasLt.so; KILN_CUBLASLT=none turns it off) and creates a handle on the current CUDA context. Null with the reason when it cannot.
  static std::unique_ptr<CudaBlas> load(std::string &why);
  ~CudaBlas();
  CudaBlas(const CudaBlas &) = delete;
  CudaBlas &operator=(const CudaBlas &) = delete;

  const std::string &description() const { return description_; } // "cuBLASLt 130100 (libcublasLt.so.13)"

  enum class Result { Done, Declined, Failed };
  // Enqueues the plan's products on `stream`. Declined when the library has no algorithm for it
  // (nothing was enqueued); Failed with the library's status in `error`.
  Result run(const BlasPlan &plan, void *stream, void *workspace, uint64_t workspaceBytes, std::string &error);

  // cuBLASLt's workspace per stream: what Hopper's kernels are tuned for.
  static constexpr uint64_t kWorkspaceBytes = uint64_t(32) << 20;

private:
  CudaBlas() = default;
  struct Library;
  struct Algorithm {
    bool found = false;
    uint64_t data[8] = {}; // cublasLtMatmulAlgo_t
  };
  std::unique_ptr<Library> lib_;
  void *handle_ = nullptr;
  std::string description_;
  std::mutex mutex_; // guards algorithms_ (sessions run on several threads)
  std::map<std::vector<int64_t>, Algorithm> algorithms_;
};

} // namespace kiln::runtime

#endif
