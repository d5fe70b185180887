// Graph-level passes (generated declarations).
#ifndef KILN_PASSES_GRAPH_PASSES_H
#define KILN_PASSES_GRAPH_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {
#define GEN_PASS_DECL
#include "passes/graph/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/graph/Passes.h.inc"
} // namespace kiln

#endif
