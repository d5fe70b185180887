// CPU-only passes (generated declarations): weight panels, tiling, microkernels, launches on the thread pool.
#ifndef KILN_PASSES_CPU_PASSES_H
#define KILN_PASSES_CPU_PASSES_H

#include "dialects/cpu/IR/Cpu.h"
#include "dialects/graph/IR/Graph.h"
#include "passes/host/Passes.h"

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
#include "passes/cpu/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/cpu/Passes.h.inc"

} // namespace kiln

#endif
