// Recognizes scaled-dot-product attention (MatMul -> scale -> mask -> Softmax -> MatMul) as graph.attention.
#include "passes/fusion/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The value of a one-element float constant.
std::optional<double> scalarFloat(Value v) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

/// Strips multiplications/divisions of `v` by scalar constants that nothing
/// else reads and that keep its type, folding them into `scale`.
Value peelScale(Value v, double &scale) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<graph::MulOp, graph::DivOp>(op) || !op->hasOneUse() || op->getResult(0).getType() != v.getType())
      break;
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    std::optional<double> c;
    Value next;
    if ((c = scalarFloat(rhs)) && lhs.getType() == v.getType())
      next = lhs;
    else if (isa<graph::MulOp>(op) && (c = scalarFloat(lhs)) && rhs.getType() == v.getType())
      next = rhs;
    if (!next || *c == 0.0 || !std::isfinite(*c))
      break;
    scale = isa<graph::MulOp>(op) ? scale * *c : scale / *c;
    v = next;
  }
  return v;
}

/// One entry of a 1-D shape tensor: a constant, or dim `dim` of `source`.
struct ShapeEntry {
  int64_t value = kDyn;
  Value source;
  int64_t dim = -1;
  /// Whether the entry is dim `i` of `v` (by construction or by equal static size).
  bool isDimOf(Value v, int64_t i) const {
    int64_t size = typeOf(v).getDimSize(i);
    return (source == v && dim == i) || (size != kDyn && value == size);
  }
};

/// The entries of a shape tensor built as exporters do: Concat of constants
/// and Gather(Shape(x), constant index); empty when it is anything else.
SmallVector<ShapeEntry> shapeEntries(Value shape) {
  SmallVector<ShapeEntry> out;
  SmallVector<Value> pieces;
  if (auto concat = shape.getDefiningOp<graph::ConcatOp>())
    pieces.append(concat.getInputs().begin(), concat.getInputs().end());
  else
    pieces.push_back(shape);
  for (Value piece : pieces) {
    DenseIntElementsAttr values;
    if (matchPattern(piece, m_Constant(&values))) {
      for (const APInt &x : values.getValues<APInt>())
        out.push_back({x.getSExtValue(), {}, -1});
      continue;
    }
    auto gather = piece.getDefiningOp<graph::GatherOp>();
    DenseIntElementsAttr index;
    auto shapeOp = gather ? gather.getData().getDefiningOp<graph::ShapeOp>() : nullptr;
    if (!shapeOp || !matchPattern(gather.getIndices(), m_Constant(&index)) || index.getNumElements() != 1)
      return {};
    int64_t rank = typeOf(shapeOp.getInput()).getRank();
    int64_t i = (*index.getValues<APInt>().begin()).getSExtValue() + shapeOp.getStart();
    if (i < 0)
      i += rank;
    if (i < 0 || i >= rank || (shapeOp.getEnd() && i >= (int64_t)*shapeOp.getEnd()))
      return {};
    out.push_back({typeOf(shapeOp.getInput()).getDimSize(i), shapeOp.getInput(), i});
  }
  return out;
}

/// HF's repeat_kv: Reshape(Expand(Unsqueeze(kv, head + 1), [.., KV, rep, T, D]), [.., KV*rep, T, D])
/// with heads at axis rank - 3: query head h reads kv head h / rep, which graph.attention
/// does itself. Returns kv when `v` is that form.
Value ungroupHeads(Value v) {
  auto reshape = v.getDefiningOp<graph::ReshapeOp>();
  if (!reshape)
    return {};
  Operation *expand = reshape.getInput().getDefiningOp();
  if (!expand || !isa<graph::ExpandOp, graph::DynamicExpandOp>(expand))
    return {};
  auto unsq = expand->getOperand(0).getDefiningOp<graph::UnsqueezeOp>();
  if (!unsq || unsq.getAxes().size() != 1)
    return {};
  Value kv = unsq.getInput();
  auto in = typeOf(kv);
  int64_t rank = in.getRank();
  int64_t head = rank - 3;
  if (rank < 3 || typeOf(v).getRank() != rank || (unsq.getAxes()[0] != head + 1 && unsq.getAxes()[0] != -3))
    return {};
  int64_t kvHeads = in.getDimSize(head);
  if (kvHeads == kDyn || kvHeads == 0)
    return {};
  // The expand's target: kv's dims with `rep` inserted after the heads.
  SmallVector<ShapeEntry> target;
  if (auto e = dyn_cast<graph::ExpandOp>(expand)) {
    for (int64_t d : e.getShape())
      target.push_back({d, {}, -1});
  } else {
    target = shapeEntries(cast<graph::DynamicExpandOp>(expand).getShape());
  }
  SmallVector<ShapeEntry> result = shapeEntries(reshape.getShape());
  if ((int64_t)target.size() != rank + 1 || (int64_t)result.size() != rank)
    return {};
  int64_t rep = target[head + 1].value;
  if (rep == kDyn || rep < 1)
    return {};
  for (int64_t i = 0; i < rank; ++i) {
    bool isHead = i == head;
    if (!target[i < head + 1 ? i : i + 1].isDimOf(kv, i) && !(isHead && target[i].value == kvHeads))
      return {};
    if (isHead ? result[i].value != kvHeads * rep : !result[i].isDimOf(kv, i))
      return {};
  }
  return kv;
}

struct FuseAttentionPattern : OpRewritePattern<graph::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(graph::MatMulOp av, PatternRewriter &rewriter) const override {
    auto softmax = av.getLhs().getDefiningOp<graph::SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse())
      return rewriter.notifyMatchFailure(av, "lhs is not a softmax read only here");
    auto scoresType = typeOf(softmax.getInput());
    int64_t rank = scoresType.getRank();
    if (rank < 2 || ((int64_t)softmax.getAxis() != rank - 1 && (int64_t)softmax.getAxis() != -1))
      return rewriter.notifyMatchFailure(av, "softmax is not over the last axis");
    if (!isa<FloatType>(scoresType.getElementType()))
      return failure();

    // Softmax input: [mask +] scores, or Where(keep, scores, -inf).
    Value x = softmax.getInput();
    Value mask, keep, fill;
    bool keepWhenTrue = true;
    if (auto add = x.getDefiningOp<graph::AddOp>()) {
      if (!add->hasOneUse())
        return rewriter.notifyMatchFailure(av, "masked scores have another user");
      // The operand that leads to Q K^T is the scores; the other is the mask.
      for (int side = 0; side < 2 && !mask; ++side) {
        Value s = add->getOperand(side), m = add->getOperand(1 - side);
        double unused = 1.0;
        if (s.getType() == x.getType() && peelScale(s, unused).getDefiningOp<graph::MatMulOp>()) {
          x = s;
          mask = m;
        }
      }
      if (!mask)
        return rewriter.notifyMatchFailure(av, "no Q K^T under the mask");
    } else if (auto where = x.getDefiningOp<graph::WhereOp>()) {
      // Where(keep, scores, fill) or masked_fill's Where(drop, fill, scores), the fill -inf
      // or a huge negative (HF's finfo.min): s + fill == fill for every score with
      // |s| < ulp(fill) / 2 (> 1e22 for fills <= -1e30), so an additive mask of the fill
      // is exact, a fully masked row included. -1e9 is not (-1e9 + 40 != -1e9).
      std::optional<double> fillY = scalarFloat(where.getY()), fillX = scalarFloat(where.getX());
      auto isNegInf = [](std::optional<double> f) { return f && *f < 0 && (std::isinf(*f) || *f <= -1e30); };
      if (!where->hasOneUse())
        return rewriter.notifyMatchFailure(av, "masked scores have another user");
      if (isNegInf(fillY) && where.getX().getType() == x.getType()) {
        x = where.getX();
        fill = where.getY();
        keepWhenTrue = true;
      } else if (isNegInf(fillX) && where.getY().getType() == x.getType()) {
        x = where.getY();
        fill = where.getX();
        keepWhenTrue = false;
      } else {
        return rewriter.notifyMatchFailure(av, "not Where(keep, scores, -inf or <= -1e30)");
      }
      keep = where.getCondition();
    }

    double scale = 1.0;
    x = peelScale(x, scale);
    auto qk = x.getDefiningOp<graph::MatMulOp>();
    if (!qk || !qk->hasOneUse() || qk.getType() != scoresType)
      return rewriter.notifyMatchFailure(av, "scores are not a Q K^T read only by the softmax chain");

    // Q and K, with scales applied to either folded in.
    Value q = peelScale(qk.getLhs(), scale);
    Value kt = peelScale(qk.getRhs(), scale);
    SmallVector<int64_t> swapLast;
    for (int64_t i = 0; i < rank; ++i)
      swapLast.push_back(i);
    std::swap(swapLast[rank - 2], swapLast[rank - 1]);
    Value k;
    if (auto t = kt.getDefiningOp<graph::TransposeOp>(); t && t.getPerm() == ArrayRef<int64_t>(swapLast)) {
      k = t->hasOneUse() ? peelScale(t.getInput(), scale) : t.getInput();
    }
    Value v = av.getRhs();
    auto qt = typeOf(q), vt = typeOf(v), ktType = typeOf(kt);
    if (qt.getRank() != rank || ktType.getRank() != rank || vt.getRank() != rank)
      return rewriter.notifyMatchFailure(av, "Q, K^T and V ranks differ from the scores'");
    // Grouped-query attention: read the key/value heads without the repeat.
    if (k)
      if (Value kv = ungroupHeads(k))
        k = kv;
    if (Value vv = ungroupHeads(v))
      v = vv;
    SmallVector<int64_t> kShape(ktType.getShape());
    std::swap(kShape[rank - 2], kShape[rank - 1]);
    auto kType = k ? typeOf(k) : ktType.clone(kShape);
    vt = typeOf(v);

    // Batch dims: the query's are the scores' (Q is not broadcast), and each key/value dim
    // is the query's, 1, or a whole fraction of it (grouped heads); a dynamic one is one of
    // those at run time (MatMul's rules), which the kernel computes.
    for (int64_t i = 0; i + 2 < rank; ++i) {
      int64_t bq = qt.getDimSize(i);
      if (bq != scoresType.getDimSize(i))
        return rewriter.notifyMatchFailure(av, "the query is broadcast against the keys");
      for (auto t : {kType, vt}) {
        int64_t bk = t.getDimSize(i);
        bool fits = bk == kDyn || bk == 1 || bq == bk || (bq != kDyn && bk > 0 && bq % bk == 0);
        if (!fits)
          return rewriter.notifyMatchFailure(av, "key/value batch dims do not fit the query's");
      }
    }
    // The mask must not broadcast the scores to a larger shape (Add's type is the scores').
    if (mask && (typeOf(mask).getElementType() != scoresType.getElementType() || typeOf(mask).getRank() > rank))
      return rewriter.notifyMatchFailure(av, "mask is not a float tensor within the scores' rank");
    if (keep) {
      auto keepType = typeOf(keep);
      auto shape = graph::broadcastShapes(keepType.getShape(), scoresType.getShape());
      if (keepType.getRank() > rank || failed(shape) || *shape != scoresType.getShape())
        return rewriter.notifyMatchFailure(av, "Where's condition broadcasts the scores");
    }
    // The fused op's result is the product's (the same batch, Sq, Dv), or more static.
    SmallVector<int64_t> out(qt.getShape());
    out.back() = vt.getDimSize(rank - 1);
    if (failed(verifyCompatibleShape(out, av.getType().getShape())))
      return rewriter.notifyMatchFailure(av, "the attention result type differs from the product's");

    Location loc = rewriter.getFusedLoc({qk.getLoc(), softmax.getLoc(), av.getLoc()});
    // K^T from elsewhere: the op reads K, so transpose it back.
    if (!k)
      k = graph::TransposeOp::create(rewriter, loc, kt, rewriter.getDenseI64ArrayAttr(swapLast));
    if (keep) {
      // Where(keep, s, fill) == s + Where(keep, 0, fill) (see above; not for s = +inf or NaN).
      auto scalar = RankedTensorType::get({}, scoresType.getElementType());
      auto zero = graph::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(scalar, rewriter.getFloatAttr(scoresType.getElementType(), 0.0)));
      mask = keepWhenTrue ? graph::WhereOp::create(rewriter, loc, keep, zero, fill)
                          : graph::WhereOp::create(rewriter, loc, keep, fill, zero);
    }
    auto attn = graph::AttentionOp::create(rewriter, loc, av.getType(), q, k, v, mask,
                                           rewriter.getF32FloatAttr((float)scale));
    rewriter.replaceOp(av, attn.getResult());
    return success();
  }
};

struct FuseAttentionPass : impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
