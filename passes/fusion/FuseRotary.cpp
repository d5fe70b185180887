// Recognizes the rotate-half rotary embedding x * cos + concat(-x[H/2:], x[:H/2]) * sin as graph.rotary.
#include "passes/fusion/FusionUtils.h"
#include "passes/fusion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEROTARYPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::fusion;

namespace kiln {
namespace {

// `v` is Slice(x) of the last axis alone, step 1, from `begin` to `end` of its H elements (ONNX's
// clamping: negative bounds count from the end, ends past it stop there), read by `reader` only.
bool isLastAxisSlice(Value v, Value x, int64_t begin, int64_t end, Operation *reader) {
  auto slice = v.getDefiningOp<graph::SliceOp>();
  if (!slice || slice.getInput() != x || !v.hasOneUse() || *v.getUsers().begin() != reader)
    return false;
  auto type = cast<RankedTensorType>(x.getType());
  const int64_t rank = type.getRank(), h = type.getDimSize(rank - 1);
  if (slice.getAxes().size() != 1 || (slice.getAxes()[0] != -1 && slice.getAxes()[0] != rank - 1))
    return false;
  if (!slice.getSteps().empty() && (slice.getSteps().size() != 1 || slice.getSteps()[0] != 1))
    return false;
  auto clamp = [h](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + h : i, 0, h); };
  return clamp(slice.getStarts()[0]) == begin && clamp(slice.getEnds()[0]) == end;
}

// `v` = rotate_half(x) = Concat(Neg(x[H/2:]), x[:H/2]) along the last axis, its pieces read by it
// alone: returns x, or null.
Value rotateHalfOf(Value v) {
  auto concat = v.getDefiningOp<graph::ConcatOp>();
  if (!concat || concat.getInputs().size() != 2 || !v.hasOneUse())
    return {};
  auto neg = concat.getInputs()[0].getDefiningOp<graph::NegOp>();
  if (!neg || !neg->hasOneUse())
    return {};
  auto second = concat.getInputs()[1].getDefiningOp<graph::SliceOp>();
  if (!second)
    return {};
  Value x = second.getInput();
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || !isFloatTensor(x) || type != v.getType() || type.isDynamicDim(type.getRank() - 1))
    return {};
  const int64_t rank = type.getRank(), h = type.getDimSize(rank - 1);
  if (h % 2 != 0 || (concat.getAxis() != -1 && concat.getAxis() != rank - 1))
    return {};
  if (!isLastAxisSlice(neg.getInput(), x, h / 2, h, neg) || !isLastAxisSlice(second, x, 0, h / 2, concat))
    return {};
  return x;
}

// `t` broadcasts to x's shape (numpy-style) and has its element type.
bool isTable(Value t, Value x) {
  auto tt = dyn_cast<RankedTensorType>(t.getType());
  auto xt = cast<RankedTensorType>(x.getType());
  if (!tt || tt.getElementType() != xt.getElementType() || tt.getRank() > xt.getRank())
    return false;
  for (int64_t i = 0; i < tt.getRank(); ++i) {
    const int64_t d = tt.getDimSize(i), xd = xt.getDimSize(i + xt.getRank() - tt.getRank());
    if (d != 1 && d != xd && !ShapedType::isDynamic(d))
      return false;
  }
  return true;
}

struct FuseRotaryPattern : OpRewritePattern<graph::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(graph::AddOp add, PatternRewriter &rewriter) const override {
    for (auto [p, q] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
      auto cosMul = p.getDefiningOp<graph::MulOp>(), sinMul = q.getDefiningOp<graph::MulOp>();
      if (!cosMul || !sinMul || !p.hasOneUse() || !q.hasOneUse())
        continue;
      // sin * rotate_half(x), either order; then cos * x, either order, with the same x.
      for (auto [r, sin] : {std::pair(sinMul.getLhs(), sinMul.getRhs()), std::pair(sinMul.getRhs(), sinMul.getLhs())}) {
        Value x = rotateHalfOf(r);
        if (!x || !keepsType(sinMul, r) || !keepsType(cosMul, x) || !keepsType(add, x) || !isTable(sin, x))
          continue;
        Value cos = otherOperand(cosMul, x);
        if (!cos || cos == x || !isTable(cos, x))
          continue;
        rewriter.replaceOpWithNewOp<graph::RotaryOp>(add, add.getType(), x, cos, sin);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(add, "not x * cos + rotate_half(x) * sin");
  }
};

struct FuseRotaryPass : impl::FuseRotaryPassBase<FuseRotaryPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRotaryPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
