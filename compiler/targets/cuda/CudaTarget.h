// The CUDA target's device code: validating the GPU architecture and assembling PTX into a cubin with ptxas.
// The PTX itself comes from the pipeline (NVVM -> LLVM's NVPTX backend, in-process); ptxas is optional.
#ifndef KILN_COMPILER_TARGETS_CUDA_CUDATARGET_H
#define KILN_COMPILER_TARGETS_CUDA_CUDATARGET_H

#include <string>

namespace kiln {

/// sm_NN, sm_NNN, optionally with the arch-specific suffix 'a' (sm_90a).
bool isGpuArch(const std::string &arch);

/// The ptxas to use: `requested` when given ("none": no ptxas), else ptxas on PATH, else
/// /usr/local/cuda/bin/ptxas. "" when there is none.
std::string findPtxas(const std::string &requested);

/// Assembles `ptx` for `arch` with `ptxas` into `cubin`. On failure returns false with ptxas's first
/// error lines in `error`.
bool assemblePtx(const std::string &ptxas, const std::string &ptx, const std::string &arch, std::string &cubin,
                 std::string &error);

} // namespace kiln

#endif
