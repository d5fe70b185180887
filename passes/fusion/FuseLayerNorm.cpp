// Recognizes LayerNormalization exported as a chain of small ops and replaces it with graph.layer_norm.
#include "passes/fusion/FusionUtils.h"
#include "passes/fusion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSELAYERNORMPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::fusion;

namespace kiln {
namespace {

/// `1 / s` written as Reciprocal(s) or Div(1, s): returns s.
Value reciprocalOperand(Operation *op) {
  if (auto r = dyn_cast_or_null<graph::ReciprocalOp>(op))
    return r.getInput();
  if (auto d = dyn_cast_or_null<graph::DivOp>(op))
    return isConstantNear(d.getLhs(), 1.0, kExact) && keepsType(op, d.getRhs()) ? d.getRhs() : Value();
  return {};
}

/// A gain or shift that applies per element of the normalized (last) axis:
/// every other dim is 1, so the fused op means the same as the broadcast.
bool isLastAxisParameter(Value p, Value normalized) {
  auto pt = dyn_cast<RankedTensorType>(p.getType());
  auto nt = cast<RankedTensorType>(normalized.getType());
  if (!pt || pt.getElementType() != nt.getElementType() || pt.getRank() > nt.getRank())
    return false;
  for (int64_t i = 0; i + 1 < pt.getRank(); ++i)
    if (pt.getDimSize(i) != 1)
      return false;
  return true;
}

/// The chain `d = x - mean(x); d / sqrt(mean(d^2) + eps)` (or `d * (1 / sqrt(...))`),
/// rooted at the op that divides.
struct Normalization {
  Value x;
  graph::ReduceMeanOp mean;
  Operation *sub;
  double epsilon = 0;
};

std::optional<Normalization> matchNormalization(Operation *root) {
  // Find d and the square root it is divided by.
  SmallVector<std::pair<Value, Value>, 2> candidates; // (d, sqrt value)
  Operation *recip = nullptr;
  if (auto div = dyn_cast<graph::DivOp>(root)) {
    candidates.push_back({div.getLhs(), div.getRhs()});
  } else if (auto mul = dyn_cast<graph::MulOp>(root)) {
    for (auto [d, r] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())})
      if (Value s = reciprocalOperand(r.getDefiningOp())) {
        candidates.push_back({d, s});
        recip = r.getDefiningOp();
        break;
      }
  }
  for (auto [d, s] : candidates) {
    if (!isFloatTensor(d) || !keepsType(root, d))
      continue;
    auto sqrt = s.getDefiningOp<graph::SqrtOp>();
    if (!sqrt || !usedOnlyBy(s, {recip ? recip : root}) || (recip && !usedOnlyBy(recip->getResult(0), {root})))
      continue;
    // The epsilon sits inside the square root, added to the variance.
    auto add = sqrt.getInput().getDefiningOp<graph::AddOp>();
    if (!add || !usedOnlyBy(add.getResult(), {sqrt}))
      continue;
    Value var;
    std::optional<double> eps;
    for (auto [v, e] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())})
      if ((eps = splatValue(e)) && v.getDefiningOp<graph::ReduceMeanOp>()) {
        var = v;
        break;
      }
    if (!var || *eps < 0 || !keepsType(add, var) || !isLastAxisMean(var.getDefiningOp()) ||
        !usedOnlyBy(var, {add}))
      continue;
    // The variance is the mean of d squared, and d = x - mean(x).
    Operation *sq = var.getDefiningOp<graph::ReduceMeanOp>().getInput().getDefiningOp();
    if (squaredOperand(sq) != d || !usedOnlyBy(sq->getResult(0), {var.getDefiningOp()}) ||
        !usedOnlyBy(d, {sq, root}))
      continue;
    auto sub = d.getDefiningOp<graph::SubOp>();
    if (!sub)
      continue;
    auto mean = sub.getRhs().getDefiningOp<graph::ReduceMeanOp>();
    if (!mean || mean.getInput() != sub.getLhs() || !isLastAxisMean(mean) || !keepsType(sub, sub.getLhs()))
      continue;
    return Normalization{sub.getLhs(), mean, sub, *eps};
  }
  return std::nullopt;
}

/// The single user of `v` if it is `OpTy(v, p)` or `OpTy(p, v)` with a
/// last-axis parameter p that keeps v's type; sets `param`.
template <typename OpTy>
Operation *affineUser(Value v, Value &param) {
  if (!v.hasOneUse())
    return nullptr;
  auto op = dyn_cast<OpTy>(*v.getUsers().begin());
  if (!op || !keepsType(op, v))
    return nullptr;
  Value p = otherOperand(op, v);
  if (!p || p == v || !isLastAxisParameter(p, v))
    return nullptr;
  param = p;
  return op;
}

struct FuseLayerNormPattern : RewritePattern {
  FuseLayerNormPattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<graph::DivOp, graph::MulOp>(op))
      return failure();
    std::optional<Normalization> norm = matchNormalization(op);
    if (!norm)
      return rewriter.notifyMatchFailure(op, "not x - mean(x) over sqrt(mean(sq) + eps) on the last axis");
    // Absorb the gain and the shift when nothing else reads the value before them.
    Operation *last = op;
    Value scale, bias;
    if (Operation *mul = affineUser<graph::MulOp>(last->getResult(0), scale))
      last = mul;
    if (Operation *add = affineUser<graph::AddOp>(last->getResult(0), bias))
      last = add;
    // Other readers of the mean get the op's own mean output (the same keepdims
    // shape), which exists only after `last`.
    SmallVector<Operation *> meanUsers;
    for (Operation *user : norm->mean->getUsers()) {
      if (user == norm->sub)
        continue;
      if (user->getBlock() != last->getBlock() || !last->isBeforeInBlock(user))
        return rewriter.notifyMatchFailure(op, "the mean is also read before the normalization ends");
      meanUsers.push_back(user);
    }
    auto xt = cast<RankedTensorType>(norm->x.getType());
    SmallVector<int64_t> statShape(xt.getShape());
    statShape.back() = 1;
    if (!meanUsers.empty() && xt.clone(statShape) != norm->mean.getType())
      return rewriter.notifyMatchFailure(op, "the mean's other readers need another shape");
    rewriter.setInsertionPoint(last);
    if (!scale) {
      auto one = RankedTensorType::get({1}, xt.getElementType());
      scale = graph::ConstantOp::create(rewriter, op->getLoc(),
                                        DenseElementsAttr::get(one, rewriter.getFloatAttr(xt.getElementType(), 1.0)));
    }
    Location loc = rewriter.getFusedLoc({norm->mean.getLoc(), op->getLoc(), last->getLoc()});
    auto ln = graph::LayerNormOp::create(rewriter, loc, norm->x, scale, bias, rewriter.getI64IntegerAttr(-1),
                                         rewriter.getF32FloatAttr(norm->epsilon));
    rewriter.replaceUsesWithIf(norm->mean.getResult(), ln.getMean(),
                               [&](OpOperand &use) { return llvm::is_contained(meanUsers, use.getOwner()); });
    rewriter.replaceOp(last, ln.getResult());
    return success();
  }
};

struct FuseLayerNormPass : impl::FuseLayerNormPassBase<FuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLayerNormPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
