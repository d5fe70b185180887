// Graph-level fusion passes (generated declarations).
#ifndef KILN_PASSES_FUSION_PASSES_H
#define KILN_PASSES_FUSION_PASSES_H

#include "dialects/graph/IR/Graph.h"

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
