// Matching helpers shared by the graph fusion patterns: splat constants, last-axis means, single users.
#ifndef KILN_PASSES_FUSION_FUSIONUTILS_H
#define KILN_PASSES_FUSION_FUSIONUTILS_H

#include "dialects/graph/IR/Graph.h"

#include <optional>

namespace kiln::fusion {

/// The value of a graph.constant whose elements are all equal (a scalar or a
/// splat of any shape), as a double; nullopt for anything else.
std::optional<double> splatValue(mlir::Value v);

/// True when `v` is a splat constant within `tolerance` of `expected`
/// (absolute, scaled by max(1, |expected|)). Exporters print irrational
/// constants rounded (1.4142, 0.7071), so those take ~1e-4; exact ones
/// (0.5, 1, 2, 3) take kExact.
constexpr double kExact = 1e-6;
constexpr double kRounded = 1e-4;
bool isConstantNear(mlir::Value v, double expected, double tolerance);

/// For a binary op with operands (a, b): if one of them is `known`, the other.
mlir::Value otherOperand(mlir::Operation *op, mlir::Value known);

/// A float tensor of rank >= 1.
bool isFloatTensor(mlir::Value v);

/// A graph.reduce_mean over exactly the last axis with keepdims = 1.
bool isLastAxisMean(mlir::Operation *op);

/// True when every user of `v` is one of `allowed` (an op using `v` twice
/// counts once): the value dies inside the fused pattern.
bool usedOnlyBy(mlir::Value v, llvm::ArrayRef<mlir::Operation *> allowed);

/// The op result's type is exactly `v`'s type: broadcasting against the
/// other operand did not change the shape (a constant of higher rank would).
bool keepsType(mlir::Operation *op, mlir::Value v);

/// `v` squared, written as Pow(v, 2) or Mul(v, v): returns v.
mlir::Value squaredOperand(mlir::Operation *op);

} // namespace kiln::fusion

#endif
