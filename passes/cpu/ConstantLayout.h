// Constants re-laid out at compile time: permuted, padded, viewed with another shape.
#ifndef KILN_PASSES_CPU_CONSTANTLAYOUT_H
#define KILN_PASSES_CPU_CONSTANTLAYOUT_H

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Builders.h"

namespace kiln {

/// Zero columns to add to a packed product's N (a weight's columns, a convolution's Cout) so
/// that its panels are whole: to a multiple of 16, or, from 512 columns on where that leaves an
/// odd count of 16-column panels, to a multiple of 64. A 16-column panel's register block is one
/// vector per row, a broadcast load per multiply-add: squeezenet's 1000-class 1x1 convolution
/// ran at 150 GFLOP/s that way and at 190 as 1024 columns in 64-column panels (2.4% more work).
inline int64_t panelPadding(int64_t n) {
  int64_t to16 = (16 - n % 16) % 16;
  if (n >= 512 && ((n + to16) / 16) % 2 == 1)
    return (64 - n % 64) % 64;
  return to16;
}

/// A 1-D i64 graph.constant (a reshape's shape).
mlir::Value shapeConstant(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> shape);

/// `dims` permuted: result dim i is dims[perm[i]].
llvm::SmallVector<int64_t> permuted(llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<int64_t> perm);

/// A new graph.constant beside the one defining `value`: its elements
/// permuted by `perm` (a lower-rank constant first gets leading unit dims, as
/// broadcasting gives it), with `padLast` zeros after each innermost row,
/// optionally viewed with the shape `viewAs` (same element count). A
/// resource constant stays a resource (its key + `suffix`). Null when `value`
/// is not a readable constant.
mlir::Value permutedConstant(mlir::OpBuilder &b, mlir::Value value, llvm::ArrayRef<int64_t> perm,
                             llvm::StringRef suffix, llvm::ArrayRef<int64_t> viewAs = {}, int64_t padLast = 0);

/// A new graph.constant of `type` holding `data` (row-major), placed beside
/// `like` and stored as `like` is: a resource (its key + `suffix`) or dense
/// elements. Null when `data` does not fit `type`.
mlir::Value constantLike(mlir::OpBuilder &b, graph::ConstantOp like, mlir::RankedTensorType type,
                         llvm::ArrayRef<char> data, llvm::StringRef suffix);

} // namespace kiln

#endif
