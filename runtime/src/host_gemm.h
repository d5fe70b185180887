// The ABI's matrix product (kiln_abi_gemm) computed on the calling thread, for CPU artifacts.
#ifndef KILN_RUNTIME_HOST_GEMM_H
#define KILN_RUNTIME_HOST_GEMM_H

#include "kiln/abi.h"

namespace kiln::runtime {

/// Computes `product` and its `epilogue` (null: none) in host memory, accumulating in float as cuBLASLt's CUBLAS_COMPUTE_32F does.
/// Returns 0 when done, nonzero when declined (an element type or batch rank the ABI does not
/// define), as the context's `gemm` does. Only code compiled with --target=cuda-emulated calls
/// it: the CUDA pipeline's product calls then check their descriptors (strides, batch
/// broadcasts, alpha, beta) on the CPU.
int32_t hostGemm(const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue = nullptr);

/// Whether the output C shares bytes with A, B or the bias, or partly with the epilogue's C source
/// (the whole of it, at C's own address, is a product in place). Such a product cannot be one
/// library call, which reads its operands while it writes: the generated code's memory plan may
/// put an epilogue's output over the product's operands, which die at the product (kiln's kernels
/// write the product elsewhere first and are right). Both gemm paths decline it.
bool gemmOutputOverlaps(const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue);

} // namespace kiln::runtime

#endif
