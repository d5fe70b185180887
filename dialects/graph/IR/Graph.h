// The graph dialect's C++ declarations: include this to use graph ops.
#ifndef KILN_DIALECTS_GRAPH_GRAPH_H
#define KILN_DIALECTS_GRAPH_GRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/graph/IR/GraphDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/graph/IR/GraphOps.h.inc"

namespace kiln::graph {
/// Numpy broadcasting of two shapes (ShapedType::kDynamic for unknown dims).
/// A dynamic dim against a static one other than 1 takes the static size.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Normalizes a possibly negative axis into [0, rank); fails when out of range.
mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Output size of one spatial axis of a sliding window (conv or pool).
int64_t slidingWindowSize(int64_t in, int64_t kernel, int64_t padBegin,
                          int64_t padEnd, int64_t stride, int64_t dilation,
                          bool ceilMode);
} // namespace kiln::graph

#endif
