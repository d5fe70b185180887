// Ops along an axis: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum, TopK and the two losses.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// Reduce axes come from the `axes` attribute (older opsets) or input 1.
template <typename OpTy> NodeImporter reduce(int64_t axesInputSince, const char *kind) {
  return [axesInputSince, kind](NodeContext &c) -> Results {
    if (failed(require(c, 1)))
      return failure();
    SmallVector<int64_t> axes;
    if (c.opset >= axesInputSince) {
      auto axesType = c.input(1) ? dyn_cast<RankedTensorType>(c.input(1).getType()) : RankedTensorType();
      if (axesType && axesType.hasStaticShape() && axesType.getNumElements() == 0) {
        // An empty axes tensor needs no values: its length alone says "default axes".
      } else if (isRuntime(c.input(1))) {
        if (failed(runtimeLength(c, c.input(1), "axes", /*needInt64=*/true)))
          return failure();
        return single(create<DynamicReduceOp>(c, c.input(0), c.input(1), StringRef(kind),
                                              c.intAttr("keepdims", 1)));
      } else if (c.input(1)) {
        auto v = c.constantInts(c.input(1), "axes");
        if (failed(v))
          return failure();
        axes = *v;
      }
    } else if (auto a = c.intsAttr("axes")) {
      axes = *a;
    }
    if (axes.empty() && c.intAttr("noop_with_empty_axes", 0))
      return SmallVector<Value>{c.input(0)};
    return single(create<OpTy>(c, c.input(0), axes, c.intAttr("keepdims", 1)));
  };
}

template <typename OpTy> Results importArg(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<OpTy>(c, c.input(0), c.intAttr("axis", 0), c.intAttr("keepdims", 1),
                             c.intAttr("select_last_index", 0)));
}

/// Softmax and LogSoftmax: before opset 13 they worked on the input
/// flattened to 2-D at `axis`.
template <typename OpTy> Results importSoftmaxLike(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  int64_t rank = rankOf(x);
  if (c.opset >= 13)
    return single(create<OpTy>(c, x, c.intAttr("axis", -1)));
  int64_t axis = c.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis == rank - 1)
    return single(create<OpTy>(c, x, (int64_t)-1));
  auto flat = create<FlattenOp>(c, x, axis);
  if (failed(flat))
    return failure();
  auto sm = create<OpTy>(c, *flat, (int64_t)1);
  if (failed(sm))
    return failure();
  auto shape = create<ShapeOp>(c, x, (int64_t)0, IntegerAttr());
  if (failed(shape))
    return failure();
  return single(create<ReshapeOp>(c, *sm, *shape, (int64_t)0));
}

Results importCumSum(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  int64_t exclusive = c.intAttr("exclusive", 0), reverse = c.intAttr("reverse", 0);
  Value x = c.input(0), axisIn = c.input(1);
  DenseIntElementsAttr axisAttr;
  if (matchPattern(axisIn, m_Constant(&axisAttr))) {
    if (axisAttr.getNumElements() != 1)
      return c.fail("axis must be a single value");
    return single(create<CumSumOp>(c, x, (*axisAttr.getValues<APInt>().begin()).getSExtValue(),
                                   exclusive, reverse));
  }
  // The axis is computed by the model. It never changes the shape, and
  // there are only rank many valid axes: compute each sum and let the
  // run-time axis choose (a rank-1 input has a single choice).
  auto at = cast<RankedTensorType>(axisIn.getType());
  auto xt = cast<RankedTensorType>(x.getType());
  if (!at.hasStaticShape() || at.getNumElements() != 1 || !isa<IntegerType>(at.getElementType()))
    return c.fail("axis must be a single integer value");
  int64_t rank = xt.getRank();
  if (rank == 0)
    return c.fail("cum_sum input must have rank >= 1");
  auto result = create<CumSumOp>(c, x, rank - 1, exclusive, reverse);
  if (failed(result))
    return failure();
  auto scalarType = RankedTensorType::get({}, at.getElementType());
  unsigned width = at.getElementType().getIntOrFloatBitWidth();
  for (int64_t a = rank - 2; a >= 0; --a) {
    auto sum = create<CumSumOp>(c, x, a, exclusive, reverse);
    if (failed(sum))
      return failure();
    Value cond;
    for (int64_t v : {a, a - rank}) {
      Value cst = ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(scalarType, APInt(width, v, true)));
      auto eq = create<EqualOp>(c, axisIn, cst);
      if (failed(eq))
        return failure();
      if (cond) {
        auto both = create<OrOp>(c, cond, *eq);
        if (failed(both))
          return failure();
        cond = *both;
      } else {
        cond = *eq;
      }
    }
    result = create<WhereOp>(c, cond, *sum, *result);
    if (failed(result))
      return failure();
  }
  return single(result);
}

/// TopK: k is an attribute before opset 10, then a one-element input (static
/// when it is a constant); largest and sorted arrive in opset 11. Results
/// are always sorted, which an unsorted request also accepts.
Results importTopK(NodeContext &c) {
  if (failed(require(c, c.opset >= 10 ? 2 : 1)))
    return failure();
  Value k = c.opset >= 10 ? c.input(1) : c.i64Constant({c.intAttr("k", 0)});
  auto kt = cast<RankedTensorType>(k.getType());
  if (!kt.getElementType().isInteger(64))
    return c.fail("k must be int64");
  auto op = createOperation<TopKOp, 2>(c, c.input(0), k, c.intAttr("axis", -1), c.intAttr("largest", 1),
                                    c.intAttr("sorted", 1));
  if (failed(op))
    return failure();
  return SmallVector<Value>((*op)->getResults());
}

Results importNllLoss(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  IntegerAttr ignore;
  if (c.attr("ignore_index"))
    ignore = c.b.getI64IntegerAttr(c.intAttr("ignore_index", 0));
  return single(create<NllLossOp>(c, c.input(0), c.input(1), c.input(2),
                                  c.b.getStringAttr(c.stringAttr("reduction", "mean")), ignore));
}

// SoftmaxCrossEntropyLoss = NLL over LogSoftmax along the class axis;
// the optional second output is that log-probability tensor.
Results importSoftmaxCrossEntropyLoss(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  auto logp = create<LogSoftmaxOp>(c, c.input(0), (int64_t)1);
  if (failed(logp))
    return failure();
  IntegerAttr ignore;
  if (c.attr("ignore_index"))
    ignore = c.b.getI64IntegerAttr(c.intAttr("ignore_index", 0));
  auto loss = create<NllLossOp>(c, *logp, c.input(1), c.input(2),
                                c.b.getStringAttr(c.stringAttr("reduction", "mean")), ignore);
  if (failed(loss))
    return failure();
  return SmallVector<Value>{*loss, *logp};
}

} // namespace

void addReductionImporters(llvm::StringMap<NodeImporter> &t) {
  t["ReduceMean"] = reduce<ReduceMeanOp>(18, "mean");
  t["ReduceSum"] = reduce<ReduceSumOp>(13, "sum");
  t["ReduceMax"] = reduce<ReduceMaxOp>(18, "max");
  t["ReduceMin"] = reduce<ReduceMinOp>(18, "min");
  t["ReduceProd"] = reduce<ReduceProdOp>(18, "prod");
  t["ReduceL1"] = reduce<ReduceL1Op>(18, "l1");
  t["ReduceL2"] = reduce<ReduceL2Op>(18, "l2");
  t["ReduceSumSquare"] = reduce<ReduceSumSquareOp>(18, "sum_square");
  t["ReduceLogSum"] = reduce<ReduceLogSumOp>(18, "log_sum");
  t["ReduceLogSumExp"] = reduce<ReduceLogSumExpOp>(18, "log_sum_exp");
  t["ArgMax"] = importArg<ArgMaxOp>;
  t["ArgMin"] = importArg<ArgMinOp>;
  t["Softmax"] = importSoftmaxLike<SoftmaxOp>;
  t["LogSoftmax"] = importSoftmaxLike<LogSoftmaxOp>;
  t["Hardmax"] = importSoftmaxLike<HardmaxOp>;
  t["CumSum"] = importCumSum;
  t["TopK"] = importTopK;
  t["NegativeLogLikelihoodLoss"] = importNllLoss;
  t["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropyLoss;
}

} // namespace kiln
