// The graph dialect's C++ declarations: include this to use graph ops.
#ifndef KILN_DIALECTS_GRAPH_GRAPH_H
#define KILN_DIALECTS_GRAPH_GRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <string>
#include <vector>

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

/// ONNX Slice along one static dim of size `dim`: the first index taken (start clamped into the
/// dim after wrapping a negative one) and the number of elements (0 or more); step != 0.
struct SliceExtent {
  int64_t start = 0, count = 0;
};
SliceExtent sliceExtent(int64_t start, int64_t end, int64_t step, int64_t dim);

/// Output size of one spatial axis of a sliding window (conv or pool).
int64_t slidingWindowSize(int64_t in, int64_t kernel, int64_t padBegin,
                          int64_t padEnd, int64_t stride, int64_t dilation,
                          bool ceilMode);

/// An Einsum equation resolved against its operands' ranks: one label per
/// dim of each operand and of the result. Letters keep their character code;
/// the dims an ellipsis stands for get kEllipsisLabel + position, right-aligned
/// across operands. The implicit form's result is the ellipsis dims, then the
/// letters used once, in alphabetical order (ONNX, numpy).
struct EinsumSpec {
  static constexpr int64_t kEllipsisLabel = 1000;
  llvm::SmallVector<llvm::SmallVector<int64_t>> inputs;
  llvm::SmallVector<int64_t> output;
};
mlir::FailureOr<EinsumSpec> parseEinsum(llvm::StringRef equation,
                                        llvm::ArrayRef<int64_t> ranks);

/// The first name in a (possibly fused) location: the ONNX node or
/// initializer an op or constant came from; "" if there is none.
std::string firstName(mlir::Location loc);

/// The bytes of a constant's value: a dense_resource blob, or dense data (a
/// splat expanded into `scratch`); false if the attribute holds none.
bool constantBytes(mlir::ElementsAttr value, std::vector<char> &scratch, llvm::ArrayRef<char> &bytes);
} // namespace kiln::graph

#endif
