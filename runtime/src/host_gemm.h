// The ABI's matrix product (kiln_abi_gemm) computed on the calling thread, for CPU artifacts.
#ifndef KILN_RUNTIME_HOST_GEMM_H
#define KILN_RUNTIME_HOST_GEMM_H

#include "kiln/abi.h"

namespace kiln::runtime {

/// Computes `product` in host memory, accumulating in float as cuBLASLt's CUBLAS_COMPUTE_32F does.
/// Returns 0 when done, nonzero when declined (an element type or batch rank the ABI does not
/// define), as the context's `gemm` does. Only code compiled with --target=cuda-emulated calls
/// it: the CUDA pipeline's product calls then check their descriptors (strides, batch
/// broadcasts, alpha, beta) on the CPU.
int32_t hostGemm(const kiln_abi_gemm &product);

} // namespace kiln::runtime

#endif
