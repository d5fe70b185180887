// Recognizes GELU exported as Mul/Div/Erf (exact) or Pow/Mul/Tanh (tanh approximation) as graph.gelu.
#include "passes/fusion/FusionUtils.h"
#include "passes/fusion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_FUSEGELUPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::fusion;

namespace kiln {
namespace {

/// The single-use op of type OpTy defining `v` (an intermediate the fusion removes).
template <typename OpTy>
OpTy onlyUse(Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && v.hasOneUse() ? op : OpTy();
}

/// For a binary op reading `v` and a splat constant near `c`: the other operand.
Value withConstant(Operation *op, double c, double tolerance) {
  if (!op || op->getNumOperands() != 2)
    return {};
  for (int i = 0; i < 2; ++i)
    if (isConstantNear(op->getOperand(1 - i), c, tolerance) && keepsType(op, op->getOperand(i)))
      return op->getOperand(i);
  return {};
}

/// 1 + f(...) where f is OpTy (read only here): f's input.
template <typename OpTy>
Value onePlus(Value v) {
  auto add = onlyUse<graph::AddOp>(v);
  if (!add)
    return {};
  Value f = withConstant(add, 1.0, kExact);
  auto op = f ? onlyUse<OpTy>(f) : OpTy();
  return op ? op.getInput() : Value();
}

/// x / sqrt(2) or x * (1 / sqrt(2)): x.
Value overSqrt2(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !v.hasOneUse())
    return {};
  if (auto div = dyn_cast<graph::DivOp>(op))
    return isConstantNear(div.getRhs(), std::sqrt(2.0), kRounded) && keepsType(op, div.getLhs())
               ? div.getLhs() : Value();
  if (isa<graph::MulOp>(op))
    return withConstant(op, 1.0 / std::sqrt(2.0), kRounded);
  return {};
}

/// x^3 as Pow(x, 3), x * x * x or x * (x * x): x.
Value cubed(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !v.hasOneUse())
    return {};
  if (auto pow = dyn_cast<graph::PowOp>(op))
    return isConstantNear(pow.getRhs(), 3.0, kExact) && keepsType(op, pow.getLhs()) ? pow.getLhs() : Value();
  auto mul = dyn_cast<graph::MulOp>(op);
  if (!mul)
    return {};
  for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    auto sq = onlyUse<graph::MulOp>(b);
    if (sq && squaredOperand(sq) == a && keepsType(mul, a))
      return a;
  }
  return {};
}

/// sqrt(2/pi) * (x + 0.044715 * x^3): x.
Value tanhArgument(Value v) {
  auto scaled = onlyUse<graph::MulOp>(v);
  Value inner = scaled ? withConstant(scaled, std::sqrt(2.0 / M_PI), kRounded) : Value();
  auto add = inner ? onlyUse<graph::AddOp>(inner) : graph::AddOp();
  if (!add)
    return {};
  for (auto [x, t] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
    auto term = onlyUse<graph::MulOp>(t);
    Value cube = term ? withConstant(term, 0.044715, kRounded) : Value();
    if (cube && cubed(cube) == x && keepsType(add, x))
      return x;
  }
  return {};
}

/// Factors of the product rooted at `root`, expanding inner Muls that only
/// the product reads (at most `limit` factors); false when there are more.
bool productFactors(graph::MulOp mul, SmallVectorImpl<Value> &factors, unsigned limit) {
  for (Value v : {mul.getLhs(), mul.getRhs()}) {
    auto inner = onlyUse<graph::MulOp>(v);
    if (inner && keepsType(inner, mul.getResult())) {
      if (!productFactors(inner, factors, limit))
        return false;
    } else {
      factors.push_back(v);
    }
    if (factors.size() > limit)
      return false;
  }
  return true;
}

struct FuseGeluPattern : RewritePattern {
  FuseGeluPattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    // The product 0.5 * x * (1 + phi), in any order and association, or x * (1 + phi) / 2.
    SmallVector<Value, 3> factors;
    bool halved = false;
    if (auto div = dyn_cast<graph::DivOp>(op)) {
      auto num = onlyUse<graph::MulOp>(div.getLhs());
      if (!num || !isConstantNear(div.getRhs(), 2.0, kExact) || !keepsType(div, div.getLhs()))
        return failure();
      halved = true;
      if (!productFactors(num, factors, 2))
        return failure();
    } else if (auto mul = dyn_cast<graph::MulOp>(op)) {
      if (!productFactors(mul, factors, 3))
        return failure();
    } else {
      return failure();
    }
    if (factors.size() != (halved ? 2u : 3u))
      return failure();
    // Take the constant half out, then one factor is 1 + phi(x) and the other x.
    if (!halved) {
      auto half = llvm::find_if(factors, [](Value v) { return isConstantNear(v, 0.5, kExact); });
      if (half == factors.end())
        return rewriter.notifyMatchFailure(op, "no factor 0.5");
      factors.erase(half);
    }
    for (auto [x, t] : {std::pair(factors[0], factors[1]), std::pair(factors[1], factors[0])}) {
      if (!isFloatTensor(x) || !keepsType(op, x))
        continue;
      StringRef approximate;
      if (Value e = onePlus<graph::ErfOp>(t); e && overSqrt2(e) == x)
        approximate = "none";
      else if (Value h = onePlus<graph::TanhOp>(t); h && tanhArgument(h) == x)
        approximate = "tanh";
      else
        continue;
      rewriter.replaceOpWithNewOp<graph::GeluOp>(op, x, rewriter.getStringAttr(approximate));
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not 0.5 * x * (1 + erf(x / sqrt 2)) or its tanh form");
  }
};

struct FuseGeluPass : impl::FuseGeluPassBase<FuseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGeluPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
