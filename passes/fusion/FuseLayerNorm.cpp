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

/// The chain `d = x - m; d / sqrt(var + eps)` (or `d * (1 / sqrt(...))`) over
/// the last axis, rooted at the op that divides, where m = mean(x) and var is
/// mean(d^2) (PyTorch exports) or mean(x^2) - m^2 (ONNX's own expansion of
/// LayerNormalization). Both are the variance; the fused op computes the
/// two-pass form, which is the more accurate of the two.
struct Normalization {
  Value x;
  graph::ReduceMeanOp mean;
  SmallVector<Operation *> meanChainUsers; // readers of m inside the chain
  Operation *sqrt;                         // sqrt(var + eps)
  double epsilon = 0;
  Operation *ownReciprocal;                // 1 / sqrt when the root multiplies by it
};

/// mean(x^2) - m^2 with every intermediate read once: true when `var` is that.
bool isExpandedVariance(Value var, Value x, Value m, Operation *&mSquare) {
  auto sub = var.getDefiningOp<graph::SubOp>();
  if (!sub || !var.hasOneUse() || !keepsType(sub, sub.getLhs()))
    return false;
  auto meanSq = sub.getLhs().getDefiningOp<graph::ReduceMeanOp>();
  Operation *sqm = sub.getRhs().getDefiningOp();
  if (!meanSq || !isLastAxisMean(meanSq) || !sub.getLhs().hasOneUse() || !sqm ||
      squaredOperand(sqm) != m || !sub.getRhs().hasOneUse())
    return false;
  Operation *sqx = meanSq.getInput().getDefiningOp();
  if (!sqx || squaredOperand(sqx) != x || !sqx->getResult(0).hasOneUse())
    return false;
  mSquare = sqm;
  return true;
}

std::optional<Normalization> matchNormalization(Operation *root) {
  for (DivisionBy div : divisions(root)) {
    Value d = div.numerator;
    if (!isFloatTensor(d) || !keepsType(root, d))
      continue;
    auto sub = d.getDefiningOp<graph::SubOp>();
    if (!sub)
      continue;
    Value x = sub.getLhs();
    auto mean = sub.getRhs().getDefiningOp<graph::ReduceMeanOp>();
    if (!mean || mean.getInput() != x || !isLastAxisMean(mean) || !keepsType(sub, x))
      continue;
    // The epsilon sits inside the square root, added to the variance.
    auto sqrt = div.denominator.getDefiningOp<graph::SqrtOp>();
    auto add = sqrt ? sqrt.getInput().getDefiningOp<graph::AddOp>() : graph::AddOp();
    if (!add || !add->hasOneUse())
      continue;
    for (auto [var, e] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
      std::optional<double> eps = splatValue(e);
      if (!eps || *eps < 0 || !keepsType(add, var))
        continue;
      Normalization n{x, mean, {sub}, sqrt, *eps, div.reciprocal};
      Operation *mSquare = nullptr;
      if (auto v = var.getDefiningOp<graph::ReduceMeanOp>()) {
        // mean(d^2): d dies here, read only by the square and the division.
        Operation *sq = v.getInput().getDefiningOp();
        if (!isLastAxisMean(v) || !var.hasOneUse() || squaredOperand(sq) != d ||
            !sq->getResult(0).hasOneUse() || !usedOnlyBy(d, {sq, root}))
          continue;
      } else if (isExpandedVariance(var, x, mean.getResult(), mSquare)) {
        if (!d.hasOneUse())
          continue;
        n.meanChainUsers.push_back(mSquare);
      } else {
        continue;
      }
      return n;
    }
  }
  return std::nullopt;
}

struct FuseLayerNormPattern : RewritePattern {
  FuseLayerNormPattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<graph::DivOp, graph::MulOp>(op))
      return failure();
    std::optional<Normalization> norm = matchNormalization(op);
    if (!norm)
      return rewriter.notifyMatchFailure(op, "not x - mean(x) over sqrt(variance + eps) on the last axis");
    // Absorb the gain and the shift when nothing else reads the value before them.
    Operation *last = op;
    Value scale, bias;
    if (Operation *mul = affineUser<graph::MulOp>(last->getResult(0), scale))
      last = mul;
    if (Operation *add = affineUser<graph::AddOp>(last->getResult(0), bias))
      last = add;

    // Other readers of the mean, and of 1 / sqrt(var + eps), get the fused
    // op's Mean and InvStdDev outputs (keepdims shape), which exist only
    // after `last`. Any other reader of the chain refuses the fusion.
    auto xt = cast<RankedTensorType>(norm->x.getType());
    SmallVector<int64_t> statShape(xt.getShape());
    statShape.back() = 1;
    Type statType = xt.clone(statShape);
    auto after = [&](Operation *user) {
      return user->getBlock() == last->getBlock() && last->isBeforeInBlock(user);
    };
    auto readLater = [&](Value v) { return v.getType() == statType && llvm::all_of(v.getUsers(), after); };
    SmallVector<Operation *> meanUsers;
    for (Operation *user : norm->mean->getUsers())
      if (!llvm::is_contained(norm->meanChainUsers, user))
        meanUsers.push_back(user);
    if (!meanUsers.empty() && (norm->mean.getType() != statType || !llvm::all_of(meanUsers, after)))
      return rewriter.notifyMatchFailure(op, "the mean is also read where the fused op cannot provide it");
    SmallVector<Operation *> invStdDevs;
    for (Operation *user : norm->sqrt->getUsers()) {
      if (user == op || user == norm->ownReciprocal)
        continue;
      if (reciprocalOperand(user) != norm->sqrt->getResult(0) || !readLater(user->getResult(0)))
        return rewriter.notifyMatchFailure(op, "the standard deviation is also read");
      invStdDevs.push_back(user);
    }

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
    for (Operation *r : invStdDevs)
      rewriter.replaceOp(r, ln.getInvStdDev());
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
