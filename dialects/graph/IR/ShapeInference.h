// What the shape rules of every graph op section share: ranked types, errors, element counts, constants.
#ifndef KILN_DIALECTS_GRAPH_SHAPEINFERENCE_H
#define KILN_DIALECTS_GRAPH_SHAPEINFERENCE_H

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Matchers.h"

#include <optional>

// Internal to the dialect: included by ShapeInference.cpp and the <Section>Shapes.cpp files only.
namespace kiln::graph::detail {

constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

inline mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

inline mlir::LogicalResult fail(std::optional<mlir::Location> loc, const llvm::Twine &msg) {
  return mlir::emitOptionalError(loc, msg);
}

inline int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    // Past 2^63 elements the count is as unknown as a dynamic one (a hostile model's dims).
    if (d == kDyn || __builtin_mul_overflow(p, d, &p))
      return kDyn;
  }
  return p;
}

/// Reads a constant integer tensor produced by graph.constant, if it is one.
inline std::optional<llvm::SmallVector<int64_t>> constantInts(mlir::Value v) {
  mlir::DenseIntElementsAttr attr;
  if (!mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return std::nullopt;
  llvm::SmallVector<int64_t> values;
  for (const llvm::APInt &x : attr.getValues<llvm::APInt>())
    values.push_back(x.getSExtValue());
  return values;
}

} // namespace kiln::graph::detail

#endif
