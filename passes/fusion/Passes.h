// Fusion passes (generated declarations): composite graph patterns into one op, elementwise
// chains into one loop, a product's epilogue into its tiles.
#ifndef KILN_PASSES_FUSION_PASSES_H
#define KILN_PASSES_FUSION_PASSES_H

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace kiln {
#define GEN_PASS_DECL
#include "passes/fusion/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

#endif
