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
/// (0.5, 1, 2, 3) take kExact. Constants of a type narrower than f32 get at
/// least one ulp of that type.
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

/// `mul` = x * g(x), in either order, where g is a `GateOp` of x read by the mul alone (read
/// elsewhere too it would be computed twice) and the product keeps x's float type: returns the
/// gate (x is its input), or null.
template <typename GateOp>
GateOp selfGate(graph::MulOp mul) {
  for (auto [x, g] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    auto gate = g.template getDefiningOp<GateOp>();
    if (gate && gate.getInput() == x && g.hasOneUse() && isFloatTensor(x) && keepsType(mul, x))
      return gate;
  }
  return nullptr;
}

/// `v` squared, written as Pow(v, 2) or Mul(v, v): returns v.
mlir::Value squaredOperand(mlir::Operation *op);

/// `1 / s` written as Reciprocal(s) or Div(1, s): returns s.
mlir::Value reciprocalOperand(mlir::Operation *op);

/// A gain or shift that applies per element of the last axis of
/// `normalized`: every other dim is 1 (or absent), so multiplying by it
/// means the same as a normalization op's scale/bias.
bool isLastAxisParameter(mlir::Value p, mlir::Value normalized);

/// The single user of `v` if it is `OpTy(v, p)` or `OpTy(p, v)` with a
/// last-axis parameter p that keeps v's type; sets `param`.
template <typename OpTy>
mlir::Operation *affineUser(mlir::Value v, mlir::Value &param) {
  if (!v.hasOneUse())
    return nullptr;
  auto op = llvm::dyn_cast<OpTy>(*v.getUsers().begin());
  if (!op || !keepsType(op, v))
    return nullptr;
  mlir::Value p = otherOperand(op, v);
  if (!p || p == v || !isLastAxisParameter(p, v))
    return nullptr;
  param = p;
  return op;
}

/// `sqrt(mean(v^2) + eps)` over the last axis, `s` being the Sqrt, every
/// intermediate read only by the next one and `s` only by `consumer`:
/// returns v, eps (the constant epsilon, >= 0) and the op squaring v.
struct RootMeanSquare {
  mlir::Value base;
  double epsilon;
  mlir::Operation *square;
};
std::optional<RootMeanSquare> matchRootMeanSquare(mlir::Value s, mlir::Operation *consumer);

/// The normalizing op `root`: Div(v, s), or Mul(v, r) / Mul(r, v) with r =
/// 1 / s. Returns each (v, s) reading and the reciprocal op, if any.
struct DivisionBy {
  mlir::Value numerator, denominator;
  mlir::Operation *reciprocal = nullptr; // the op computing 1 / denominator
};
llvm::SmallVector<DivisionBy, 2> divisions(mlir::Operation *root);

} // namespace kiln::fusion

#endif
