// Chooses channels-last (NHWC) for the 2-D convolutions of x86 programs and moves the layout changes to the edges of conv segments.
//
// NCHW makes a convolution's patch rows gathers of single floats H*W apart
// (im2col), a depthwise convolution a product with one channel per row, and
// every packed product's output a transpose back to NCHW. With the channels
// innermost, patch rows are contiguous runs of channels, a 1x1 convolution
// is a plain product over [N*H*W, C], and depthwise kernels vectorize over
// the channels. The pass rewrites each eligible graph.conv into
// transpose(NCHW->NHWC) -> graph.nhwc_conv (weight permuted to HWIO at compile
// time) -> transpose(NHWC->NCHW) (and a transposed conv whose windows do not
// overlap into a product and a pixel shuffle), then sinks the transposes
// through the ops that do not care about layout (elementwise ops, clip,
// concat, pooling, nearest resizing) and cancels the pairs that meet: what
// is left are the layout changes at the segment's edges (graph inputs and
// outputs, ops that need NCHW such as a reshape or a linear resize).
#include "passes/cpu/ConstantLayout.h"
#include "passes/cpu/Passes.h"
#include "passes/host/SourceNodes.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {
#define GEN_PASS_DEF_CHANNELSLASTPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kToNhwc[] = {0, 2, 3, 1};
constexpr int64_t kToNchw[] = {0, 3, 1, 2};

Value transposeOf(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  return graph::TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
}

bool isIdentity(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != (int64_t)i)
      return false;
  return true;
}

/// How a graph.conv is lowered channels-last, or why it stays NCHW.
enum class ConvPlan { Nchw, Packed, Depthwise };

ConvPlan planConv(graph::ConvOp conv, std::string &why) {
  auto x = cast<RankedTensorType>(conv.getInput().getType());
  auto y = cast<RankedTensorType>(conv.getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  if (x.getRank() != 4 || !x.getElementType().isF32()) {
    why = "not a 2-D f32 convolution";
    return ConvPlan::Nchw;
  }
  if (conv.getAutoPad() || !w.hasStaticShape() || !conv.getWeight().getDefiningOp<graph::ConstantOp>()) {
    why = "pads or weight known at run time only";
    return ConvPlan::Nchw;
  }
  for (int64_t i = 1; i < 4; ++i)
    if (x.isDynamicDim(i) || y.isDynamicDim(i)) {
      why = "channels or spatial sizes known at run time only";
      return ConvPlan::Nchw;
    }
  int64_t group = conv.getGroup(), cin = x.getDimSize(1), cout = w.getDimSize(0);
  // Group 1: the packed product (a Cout that 16 does not divide is padded
  // with zero filters to the panel).
  if (group == 1 && cout >= 8 && (cout % 16 == 0 || !conv.getBias() || conv.getBias().getDefiningOp<graph::ConstantOp>()))
    return ConvPlan::Packed;
  // Depthwise, vectorized over the channels (a handful are not worth it).
  if (group == cin && cout == cin && w.getDimSize(1) == 1 && cin >= 8)
    return ConvPlan::Depthwise;
  why = group == 1 ? "fewer than 8 output channels" : "grouped (not depthwise)";
  return ConvPlan::Nchw;
}

/// A transpose feeding `v`, with the perm it applies.
graph::TransposeOp transposeFeeding(Value v) {
  auto t = v.getDefiningOp<graph::TransposeOp>();
  return t && cast<RankedTensorType>(t.getType()).getRank() == 4 ? t : nullptr;
}

/// The NHWC value `v` is the transpose to NCHW of, or null.
Value nhwcSource(Value v) {
  auto t = transposeFeeding(v);
  return t && t.getPerm() == ArrayRef<int64_t>(kToNchw) ? t.getInput() : Value();
}

/// A value whose broadcast does not depend on the layout: every dim 1.
bool layoutFree(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getRank() <= 4 && llvm::all_of(t.getShape(), [](int64_t d) { return d == 1; });
}

/// Whether `v` is also read channels-last elsewhere (a user transposes it
/// to NHWC): reading it through that transpose here costs nothing more.
bool readChannelsLast(Value v) {
  return llvm::any_of(v.getUsers(), [](Operation *user) {
    auto t = dyn_cast<graph::TransposeOp>(user);
    return t && t.getPerm() == ArrayRef<int64_t>(kToNhwc);
  });
}

/// The NHWC form of operand `v` of an op moved to NHWC, or null: the input
/// of a transpose to NCHW, `v` itself when its broadcast ignores layout, a
/// small constant permuted here, or a transpose of a value that is read
/// channels-last anyway.
Value channelsLastOperand(PatternRewriter &rewriter, Location loc, Value v) {
  if (auto t = transposeFeeding(v); t && t.getPerm() == ArrayRef<int64_t>(kToNchw))
    return t.getInput();
  if (layoutFree(v))
    return v;
  auto vt = cast<RankedTensorType>(v.getType());
  if (vt.getRank() > 4)
    return {};
  if (vt.hasStaticShape() && vt.getNumElements() <= (1 << 16))
    if (Value p = permutedConstant(rewriter, v, kToNhwc, ".nhwc"))
      return p;
  if (vt.getRank() == 4 && readChannelsLast(v))
    return transposeOf(rewriter, loc, v, kToNhwc);
  return {};
}

/// op(T_nchw(x), ...) -> T_nchw(op'(x, ...)) for ops that read their
/// operands elementwise (with broadcasting): unary ops, activations, clip,
/// binary arithmetic. Only the transposes back to NCHW move (down, towards
/// the outputs), so the rewrite cannot undo itself.
struct SinkTransposeThroughElementwise : RewritePattern {
  SinkTransposeThroughElementwise(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}

  static bool elementwise(Operation *op) {
    if (op->getNumResults() != 1 || op->getNumRegions() != 0)
      return false;
    if (op->getNumOperands() == 1 && op->hasTrait<OpTrait::SameOperandsAndResultType>() &&
        op->getDialect() && op->getDialect()->getNamespace() == "graph")
      return true;
    return isa<graph::ClipOp, graph::AddOp, graph::SubOp, graph::MulOp, graph::DivOp, graph::MaxOp, graph::MinOp>(
        op);
  }

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!elementwise(op))
      return failure();
    auto rt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!rt || rt.getRank() != 4 || llvm::none_of(op->getOperands(), [](Value v) {
          auto t = transposeFeeding(v);
          return t && t.getPerm() == ArrayRef<int64_t>(kToNchw);
        }))
      return failure();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      Value moved = channelsLastOperand(rewriter, op->getLoc(), v);
      if (!moved)
        return failure();
      operands.push_back(moved);
    }
    auto type = RankedTensorType::get(permuted(rt.getShape(), kToNhwc), rt.getElementType());
    OperationState state(op->getLoc(), op->getName(), operands, TypeRange{type}, op->getAttrs());
    Operation *moved = rewriter.create(state);
    rewriter.replaceOp(op, transposeOf(rewriter, op->getLoc(), moved->getResult(0), kToNchw));
    return success();
  }
};

/// concat(T_nchw(x_i), ...) -> T_nchw(concat(x_i, ...)) along the permuted axis.
struct SinkTransposeThroughConcat : OpRewritePattern<graph::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(graph::ConcatOp op, PatternRewriter &rewriter) const override {
    auto rt = cast<RankedTensorType>(op.getType());
    if (rt.getRank() != 4 || llvm::none_of(op.getInputs(), [](Value v) {
          auto t = transposeFeeding(v);
          return t && t.getPerm() == ArrayRef<int64_t>(kToNchw);
        }))
      return failure();
    SmallVector<Value> inputs;
    for (Value v : op.getInputs()) {
      Value moved = channelsLastOperand(rewriter, op.getLoc(), v);
      if (!moved || moved == v) // a layout-free input still has its own axes
        return failure();
      inputs.push_back(moved);
    }
    int64_t axis = op.getAxis() < 0 ? op.getAxis() + 4 : op.getAxis();
    auto moved = graph::ConcatOp::create(rewriter, op.getLoc(), inputs, rewriter.getI64IntegerAttr(kToNchw[axis]));
    rewriter.replaceOp(op, transposeOf(rewriter, op.getLoc(), moved, kToNchw));
    return success();
  }
};

/// global_average_pool(T_nchw(y)) -> T_nchw(reduce_mean(y) over H and W).
struct GlobalAveragePoolChannelsLast : OpRewritePattern<graph::GlobalAveragePoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(graph::GlobalAveragePoolOp op, PatternRewriter &rewriter) const override {
    Value y = nhwcSource(op.getInput());
    if (!y)
      return failure();
    Value mean = graph::ReduceMeanOp::create(rewriter, op.getLoc(), y, rewriter.getDenseI64ArrayAttr({1, 2}),
                                             rewriter.getI64IntegerAttr(1));
    rewriter.replaceOp(op, transposeOf(rewriter, op.getLoc(), mean, kToNchw));
    return success();
  }
};

/// reduce(T_nchw(y)) over NCHW axes -> the same reduction of y over their NHWC axes: with
/// keepdims, T_nchw of it; without, as it is when the axes left keep their order (shufflenet's
/// ReduceMean over H and W -> [N, C] after its last conv no longer transposes the map to NCHW
/// first: 88 us of 2.7 ms at 1 thread, a strided copy).
template <typename ReduceOp>
struct ReduceChannelsLast : OpRewritePattern<ReduceOp> {
  using OpRewritePattern<ReduceOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    Value y = nhwcSource(op.getInput());
    if (!y)
      return failure();
    SmallVector<bool> reduced(4, op.getAxes().empty());
    for (int64_t a : op.getAxes()) {
      if (a < -4 || a >= 4)
        return failure();
      reduced[a < 0 ? a + 4 : a] = true;
    }
    SmallVector<int64_t> axes;
    int64_t lastKept = -1;
    for (int64_t a = 0; a < 4; ++a) {
      if (reduced[a]) {
        axes.push_back(kToNchw[a]);
      } else if (!op.getKeepdims()) {
        if (kToNchw[a] < lastKept) // the dims left would come out in another order
          return failure();
        lastKept = kToNchw[a];
      }
    }
    llvm::sort(axes);
    Value moved = ReduceOp::create(rewriter, op.getLoc(), y, rewriter.getDenseI64ArrayAttr(axes),
                                   rewriter.getI64IntegerAttr(op.getKeepdims()));
    rewriter.replaceOp(op, op.getKeepdims() ? transposeOf(rewriter, op.getLoc(), moved, kToNchw) : moved);
    return success();
  }
};

/// max_pool / average_pool (2-D, static sizes) of T_nchw(y) ->
/// T_nchw(nhwc_pool(y)). An average pool qualifies where every window counts
/// kh*kw elements: no padding, or padding counted, and no ceil_mode windows
/// past the padded input.
template <typename PoolOp>
struct PoolChannelsLast : OpRewritePattern<PoolOp> {
  using OpRewritePattern<PoolOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(PoolOp op, PatternRewriter &rewriter) const override {
    constexpr bool isMax = std::is_same_v<PoolOp, graph::MaxPoolOp>;
    auto t = transposeFeeding(op.getInput());
    auto xt = cast<RankedTensorType>(op.getInput().getType());
    auto rt = cast<RankedTensorType>(op.getType());
    if (!t || t.getPerm() != ArrayRef<int64_t>(kToNchw) || op.getAutoPad() || rt.getRank() != 4)
      return failure();
    for (int64_t i = 1; i < 4; ++i)
      if (xt.isDynamicDim(i) || rt.isDynamicDim(i))
        return failure();
    ArrayRef<int64_t> kernel = op.getKernelShape(), pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    SmallVector<int64_t> nhwcPads(pads.begin(), pads.end());
    bool extra = false;
    for (int64_t i = 0; i < 2; ++i) {
      // ceil_mode's last windows may run past the end padding: pad for them.
      int64_t reach = (kernel[i] - 1) * dilations[i] + 1;
      int64_t past = (rt.getDimSize(2 + i) - 1) * strides[i] + reach - (xt.getDimSize(2 + i) + pads[i] + pads[2 + i]);
      if (past > 0) {
        nhwcPads[2 + i] += past;
        extra = true;
      }
    }
    if constexpr (!isMax) {
      bool padded = llvm::any_of(pads, [](int64_t p) { return p != 0; });
      if (extra || (padded && !op.getCountIncludePad()))
        return failure();
    }
    auto pool = graph::NhwcPoolOp::create(rewriter, op.getLoc(), t.getInput(), rewriter.getStringAttr(isMax ? "max" : "average"),
                                          op.getKernelShapeAttr(), rewriter.getDenseI64ArrayAttr(nhwcPads),
                                          op.getStridesAttr(), op.getDilationsAttr());
    Value back = transposeOf(rewriter, op.getLoc(), pool, kToNchw);
    if (back.getType() != op.getType()) {
      rewriter.eraseOp(back.getDefiningOp());
      rewriter.eraseOp(pool);
      return failure();
    }
    rewriter.replaceOp(op, back);
    return success();
  }
};

/// resize (nearest) of T_nchw(y) -> T_nchw(resize(y)) with its constant
/// scales or sizes (and roi) permuted: nearest resizing picks each output
/// element from per-axis coordinates, whatever the axes' order. (An FPN's
/// upsampling would otherwise change layout twice.)
struct ResizeChannelsLast : OpRewritePattern<graph::ResizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(graph::ResizeOp op, PatternRewriter &rewriter) const override {
    auto t = transposeFeeding(op.getInput());
    if (!t || t.getPerm() != ArrayRef<int64_t>(kToNchw) || op.getMode() != "nearest")
      return failure();
    Value scales = op.getScales(), sizes = op.getSizes(), roi = op.getRoi();
    Value newScales = scales ? permuted1d(rewriter, scales, kToNhwc) : Value();
    Value newSizes = sizes ? permuted1d(rewriter, sizes, kToNhwc) : Value();
    Value newRoi;
    if (roi && cast<RankedTensorType>(roi.getType()).getNumElements() != 0)
      newRoi = permuted1d(rewriter, roi, {0, 2, 3, 1, 4, 6, 7, 5});
    else
      newRoi = roi;
    if ((scales && !newScales) || (sizes && !newSizes) || (roi && !newRoi))
      return failure();
    auto rt = cast<RankedTensorType>(op.getType());
    auto type = RankedTensorType::get(permuted(rt.getShape(), kToNhwc), rt.getElementType());
    auto moved = graph::ResizeOp::create(rewriter, op.getLoc(), type, t.getInput(), newRoi, newScales, newSizes,
                                         op.getModeAttr(), op.getCoordinateTransformationModeAttr(),
                                         op.getNearestModeAttr(), op.getCubicCoeffAAttr(),
                                         op.getExcludeOutsideAttr(), op.getExtrapolationValueAttr());
    rewriter.replaceOp(op, transposeOf(rewriter, op.getLoc(), moved, kToNchw));
    return success();
  }

  /// The 1-D constant `v` with its elements reordered: element i is v[perm[i]].
  static Value permuted1d(PatternRewriter &rewriter, Value v, ArrayRef<int64_t> perm) {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getRank() != 1 || vt.getDimSize(0) != (int64_t)perm.size())
      return {};
    auto constant = v.getDefiningOp<graph::ConstantOp>();
    auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : DenseElementsAttr();
    if (!dense)
      return {};
    SmallVector<Attribute> values(dense.getValues<Attribute>());
    SmallVector<Attribute> out;
    for (int64_t p : perm)
      out.push_back(values[p]);
    return graph::ConstantOp::create(rewriter, constant.getLoc(), cast<ElementsAttr>(DenseElementsAttr::get(vt, out)));
  }
};

/// T_q(T_p(x)) -> T_{p.q}(x), or x when they cancel.
struct ComposeTransposes : OpRewritePattern<graph::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(graph::TransposeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<graph::TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> composed = permuted(inner.getPerm(), op.getPerm());
    if (isIdentity(composed))
      rewriter.replaceOp(op, inner.getInput());
    else
      rewriter.replaceOp(op, transposeOf(rewriter, op.getLoc(), inner.getInput(), composed));
    return success();
  }
};

/// slice(T_nchw(y)) -> T_nchw(slice(y)) over the same axes of y: ShuffleNet's channel split
/// stays channels-last.
struct SliceChannelsLast : OpRewritePattern<graph::SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(graph::SliceOp op, PatternRewriter &rewriter) const override {
    Value y = nhwcSource(op.getInput());
    if (!y)
      return failure();
    SmallVector<int64_t> axes;
    for (int64_t a : op.getAxes()) {
      if (a < -4 || a >= 4)
        return failure();
      axes.push_back(kToNchw[a < 0 ? a + 4 : a]);
    }
    Value moved = graph::SliceOp::create(rewriter, op.getLoc(), y, op.getStartsAttr(), op.getEndsAttr(),
                                         rewriter.getDenseI64ArrayAttr(axes), op.getStepsAttr());
    rewriter.replaceOp(op, transposeOf(rewriter, op.getLoc(), moved, kToNchw));
    return success();
  }
};

/// act(slice(y)) -> slice(act(y)) where the slice drops the zero filters a packed product's Cout
/// was padded with (see panelPadding) and act is unary elementwise (an activation, a clip with
/// scalar bounds) or a mean over rows and columns: the activation stays the product's epilogue
/// (squeezenet's 1000-class convolution, padded to 1024, ran its ReLU as a pass of its own, 38
/// us) and the mean reads whole rows of channels (34 us through the strided slice, 10 whole).
/// The padded channels' values are never read.
struct ActivationOverPaddedChannels : RewritePattern {
  ActivationOverPaddedChannels(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}

  static bool unary(Operation *op) {
    if (!SinkTransposeThroughElementwise::elementwise(op) || op->getNumOperands() == 0)
      return false;
    if (auto clip = dyn_cast<graph::ClipOp>(op))
      return layoutFree(clip.getMin()) && layoutFree(clip.getMax());
    return op->getNumOperands() == 1;
  }

  /// A slice of y's first channels, y a packed product's padded result (or an activation of one).
  static bool dropsPaddedChannels(graph::SliceOp slice) {
    auto t = cast<RankedTensorType>(slice.getInput().getType());
    ArrayRef<int64_t> axes = slice.getAxes();
    if (t.getRank() != 4 || axes.size() != 1 || (axes[0] != 3 && axes[0] != -1) || slice.getStarts()[0] != 0 ||
        (!slice.getSteps().empty() && slice.getSteps()[0] != 1))
      return false;
    Operation *def = slice.getInput().getDefiningOp();
    return def && (isa<graph::NhwcConvOp>(def) || unary(def));
  }

  /// A mean over the rows and columns only (squeezenet's global pooling after its classifier).
  static bool spatialMean(Operation *op) {
    auto mean = dyn_cast<graph::ReduceMeanOp>(op);
    return mean && mean.getKeepdims() == 1 && mean.getAxes() == ArrayRef<int64_t>{1, 2};
  }

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    bool mean = spatialMean(op);
    if (!unary(op) && !mean)
      return failure();
    auto slice = op->getOperand(0).getDefiningOp<graph::SliceOp>();
    if (!slice || !dropsPaddedChannels(slice) || (!mean && op->getResult(0).getType() != slice.getType()))
      return failure();
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<int64_t> shape(result.getShape());
    shape[3] = cast<RankedTensorType>(slice.getInput().getType()).getDimSize(3);
    Operation *full = rewriter.clone(*op);
    full->setOperand(0, slice.getInput());
    full->getResult(0).setType(result.clone(shape));
    Value sliced = graph::SliceOp::create(rewriter, op->getLoc(), full->getResult(0), slice.getStartsAttr(),
                                          slice.getEndsAttr(), slice.getAxesAttr(), slice.getStepsAttr());
    rewriter.replaceOp(op, sliced);
    return success();
  }
};

/// ShuffleNet's channel shuffle, reshape [N, C, H, W] -> [N, g, C/g, H, W], transpose
/// (0, 2, 1, 3, 4), reshape back, of T_nchw(y) -> T_nchw of the same shuffle of y's channels:
/// reshape [N, H, W, g, C/g], transpose (0, 1, 2, 4, 3), reshape [N, H, W, C]. With the
/// slices and concats around it channels-last too, a ShuffleNet unit no longer goes to NCHW
/// and back (two strided copies of the map per unit).
struct ChannelShuffleChannelsLast : OpRewritePattern<graph::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(graph::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto swap = op.getInput().getDefiningOp<graph::TransposeOp>();
    if (!swap || swap.getPerm() != ArrayRef<int64_t>{0, 2, 1, 3, 4})
      return failure();
    auto split = swap.getInput().getDefiningOp<graph::ReshapeOp>();
    if (!split)
      return failure();
    Value nhwc = nhwcSource(split.getInput());
    if (!nhwc)
      return failure();
    auto xt = cast<RankedTensorType>(split.getInput().getType());
    auto st = cast<RankedTensorType>(split.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    // Static but for the batch, which the NHWC reshapes copy (0).
    auto staticButBatch = [](RankedTensorType t) {
      return llvm::none_of(t.getShape().drop_front(), ShapedType::isDynamic);
    };
    if (rt != xt || !staticButBatch(st) || !staticButBatch(xt))
      return failure();
    int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2), w = xt.getDimSize(3);
    int64_t groups = st.getDimSize(1);
    if (st.getShape() != ArrayRef<int64_t>{n, groups, c / groups, h, w} || groups * (c / groups) != c)
      return failure();
    Location loc = op.getLoc();
    int64_t batch = ShapedType::isDynamic(n) ? 0 : n;
    Value y = graph::ReshapeOp::create(rewriter, loc, nhwc,
                                       shapeConstant(rewriter, loc, {batch, h, w, groups, c / groups}),
                                       rewriter.getI64IntegerAttr(0));
    y = transposeOf(rewriter, loc, y, ArrayRef<int64_t>{0, 1, 2, 4, 3});
    y = graph::ReshapeOp::create(rewriter, loc, y, shapeConstant(rewriter, loc, {batch, h, w, c}),
                                 rewriter.getI64IntegerAttr(0));
    rewriter.replaceOp(op, transposeOf(rewriter, loc, y, kToNchw));
    return success();
  }
};

/// A transposed convolution whose windows do not overlap (kernel = stride,
/// no pads, dilation 1, group 1) is a product and a pixel shuffle:
/// y[n, h, w, (kh, kw, co)] = x[n, h, w, :] . W[:, (kh, kw, co)], then
/// out[n, h*kh + i, w*kw + j, co] = y[n, h, w, i, j, co]. Channels-last, the
/// product is a packed matmul over [N*H*W, Ci] and the shuffle one copy,
/// where the general lowering gathers every output element over Ci*kh*kw
/// taps that mostly miss (DB heads' 2x2/2 upsampling ran at 2 GFLOP/s).
/// Returns the NCHW result, or null (with `why`) when it does not apply.
Value productConvTranspose(OpBuilder &b, graph::ConvTransposeOp op, std::string &why) {
  auto x = cast<RankedTensorType>(op.getInput().getType());
  auto y = cast<RankedTensorType>(op.getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  if (x.getRank() != 4 || !x.getElementType().isF32() || !w.hasStaticShape() ||
      !op.getWeight().getDefiningOp<graph::ConstantOp>() || op.getAutoPad() || op.getOutputShape()) {
    why = "not a 2-D f32 transposed convolution with a constant weight";
    return {};
  }
  for (int64_t i = 1; i < 4; ++i)
    if (x.isDynamicDim(i) || y.isDynamicDim(i)) {
      why = "channels or spatial sizes known at run time only";
      return {};
    }
  int64_t ci = w.getDimSize(0), co = w.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3);
  bool plain = op.getGroup() == 1 && llvm::all_of(op.getPads(), [](int64_t p) { return p == 0; }) &&
               llvm::all_of(op.getDilations(), [](int64_t d) { return d == 1; }) &&
               llvm::all_of(op.getOutputPadding(), [](int64_t p) { return p == 0; }) &&
               op.getStrides()[0] == kh && op.getStrides()[1] == kw;
  if (!plain) {
    why = "windows overlap or are padded (kernel != stride, pads, dilation, groups)";
    return {};
  }
  Location loc = op.getLoc();
  int64_t h = x.getDimSize(2), wd = x.getDimSize(3);
  // [Ci, Co, kh, kw] -> [Ci, kh, kw, Co], viewed as [Ci, kh*kw*Co].
  Value weight = permutedConstant(b, op.getWeight(), ArrayRef<int64_t>{0, 2, 3, 1}, ".hwo", {ci, kh * kw * co});
  if (!weight) {
    why = "weight not readable";
    return {};
  }
  Value in = transposeOf(b, loc, op.getInput(), kToNhwc);
  Value product = graph::MatMulOp::create(b, loc, in, weight);
  Value taps = graph::ReshapeOp::create(b, loc, product, shapeConstant(b, loc, {0, h, wd, kh, kw, co}),
                                        b.getI64IntegerAttr(0));
  Value rows = transposeOf(b, loc, taps, ArrayRef<int64_t>{0, 1, 3, 2, 4, 5});
  Value out = graph::ReshapeOp::create(b, loc, rows, shapeConstant(b, loc, {0, h * kh, wd * kw, co}),
                                       b.getI64IntegerAttr(0));
  if (Value bias = op.getBias())
    out = graph::AddOp::create(b, loc, out, bias);
  return transposeOf(b, loc, out, kToNchw);
}

struct ChannelsLastPass : impl::ChannelsLastPassBase<ChannelsLastPass> {
  using ChannelsLastPassBase::ChannelsLastPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<std::string> report;
    SmallVector<graph::ConvOp> convs;
    module.walk([&](graph::ConvOp conv) { convs.push_back(conv); });
    OpBuilder b(&getContext());
    for (graph::ConvOp conv : convs) {
      std::string why;
      ConvPlan plan = planConv(conv, why);
      std::string name = nodeName(conv.getLoc());
      if (plan == ConvPlan::Nchw) {
        report.push_back(name + ": NCHW (" + why + ")");
        continue;
      }
      b.setInsertionPoint(conv);
      Location loc = conv.getLoc();
      // A packed product's Cout padded to whole panels with zero filters (and
      // zero biases); the padding is sliced off its result.
      int64_t cout = cast<RankedTensorType>(conv.getWeight().getType()).getDimSize(0);
      int64_t pad = plan == ConvPlan::Packed ? panelPadding(cout) : 0;
      // [Cout, C/G, kh, kw] -> [kh, kw, C/G, Cout]
      Value weight = permutedConstant(b, conv.getWeight(), ArrayRef<int64_t>{2, 3, 1, 0}, ".hwio", {}, pad);
      Value bias = conv.getBias();
      if (bias && pad)
        bias = permutedConstant(b, bias, ArrayRef<int64_t>{0}, ".padded", {}, pad);
      if (!weight || (conv.getBias() && !bias)) {
        report.push_back(name + ": NCHW (weight not readable)");
        continue;
      }
      Value x = transposeOf(b, loc, conv.getInput(), kToNhwc);
      Value nhwc = graph::NhwcConvOp::create(b, loc, x, weight, bias, conv.getGroupAttr(), conv.getPadsAttr(),
                                             conv.getStridesAttr(), conv.getDilationsAttr());
      if (pad)
        nhwc = graph::SliceOp::create(b, loc, nhwc, b.getDenseI64ArrayAttr({0}), b.getDenseI64ArrayAttr({cout}),
                                      b.getDenseI64ArrayAttr({3}), b.getDenseI64ArrayAttr({1}));
      Value back = transposeOf(b, loc, nhwc, kToNchw);
      if (back.getType() != conv.getType()) {
        report.push_back(name + ": NCHW (result type differs)");
        continue; // the ops just built are dead: the rewrite below erases them
      }
      conv.replaceAllUsesWith(back);
      conv.erase();
      std::string how = plan == ConvPlan::Depthwise ? "depthwise"
                        : pad ? "packed product, Cout " + std::to_string(cout) + " padded to " + std::to_string(cout + pad)
                              : "packed product";
      report.push_back(name + ": NHWC (" + how + ")");
    }
    SmallVector<graph::ConvTransposeOp> transposed;
    module.walk([&](graph::ConvTransposeOp op) { transposed.push_back(op); });
    for (graph::ConvTransposeOp op : transposed) {
      std::string why, name = nodeName(op.getLoc());
      b.setInsertionPoint(op);
      Value result = productConvTranspose(b, op, why);
      if (!result || result.getType() != op.getType()) {
        report.push_back(name + ": NCHW transposed conv (" + (result ? "result type differs" : why) + ")");
        continue;
      }
      op.replaceAllUsesWith(result);
      op.erase();
      report.push_back(name + ": NHWC transposed conv (product + pixel shuffle)");
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkTransposeThroughElementwise, SinkTransposeThroughConcat, GlobalAveragePoolChannelsLast,
                 ReduceChannelsLast<graph::ReduceMeanOp>, ReduceChannelsLast<graph::ReduceSumOp>,
                 ReduceChannelsLast<graph::ReduceMaxOp>, ReduceChannelsLast<graph::ReduceMinOp>,
                 SliceChannelsLast, ActivationOverPaddedChannels, ChannelShuffleChannelsLast,
                 PoolChannelsLast<graph::MaxPoolOp>, PoolChannelsLast<graph::AveragePoolOp>, ResizeChannelsLast,
                 ComposeTransposes>(
        &getContext());
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
    if (!print)
      return;
    int64_t changes = 0;
    module.walk([&](graph::TransposeOp t) {
      ArrayRef<int64_t> p = t.getPerm();
      if (p == ArrayRef<int64_t>(kToNhwc) || p == ArrayRef<int64_t>(kToNchw))
        ++changes;
    });
    llvm::outs() << "channels-last layouts:\n";
    for (const std::string &line : report)
      llvm::outs() << "  " << line << "\n";
    llvm::outs() << "  layout changes left (NCHW<->NHWC transposes): " << changes << "\n";
  }
};

} // namespace
} // namespace kiln
