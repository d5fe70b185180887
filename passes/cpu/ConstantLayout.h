// Constants re-laid out at compile time: permuted, padded, viewed with another shape.
#ifndef KILN_PASSES_CPU_CONSTANTLAYOUT_H
#define KILN_PASSES_CPU_CONSTANTLAYOUT_H

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Builders.h"

namespace kiln {

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
