// CUDA backend passes (generated declarations).
#ifndef KILN_PASSES_CUDA_PASSES_H
#define KILN_PASSES_CUDA_PASSES_H

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {
#define GEN_PASS_DECL
#include "passes/cuda/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/cuda/Passes.h.inc"

namespace cuda_attrs {
constexpr const char *kPtx = "kiln.cuda_ptx";         // module: the kernels' PTX text
constexpr const char *kKernels = "kiln.cuda_kernels"; // module: [{name, source_nodes, params}] by kernel id
constexpr const char *kKernelParams = "kiln.cuda_kernel_params"; // module: {kernel name: "m2:4 s8 ..."}
} // namespace cuda_attrs
} // namespace kiln

#endif
