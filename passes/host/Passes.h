// Host passes both targets run (generated declarations) and the ABI record's attribute names.
#ifndef KILN_PASSES_HOST_PASSES_H
#define KILN_PASSES_HOST_PASSES_H

#include "dialects/cpu/IR/Cpu.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {
#define GEN_PASS_DECL
#include "passes/host/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/host/Passes.h.inc"

/// Attribute names of the ABI record on @main.
namespace abi {
constexpr const char *kContextArg = "kiln.context";
constexpr const char *kArgRanks = "kiln.abi_arg_ranks";
constexpr const char *kResultRanks = "kiln.abi_result_ranks";
constexpr const char *kResultElemBytes = "kiln.abi_result_elem_bytes";
constexpr const char *kKernelId = "kiln.kernel_id";
constexpr const char *kSourceNodes = "kiln.source_nodes";
} // namespace abi
} // namespace kiln

#endif
