// graph normalization, pooling, softmax and reduction ops -> linalg.generic reductions.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;
using Combine = std::function<Value(OpBuilder &, Location, Value acc, Value x)>;

/// The iteration space of a reduction of `input` over the `reduced` dims:
/// kept dims first, then reduced ones. `position` maps an input dim to its
/// iteration dim; the maps read the input and the kept dims; the kept dims'
/// static shape and run-time sizes size the result.
struct ReductionSpace {
  SmallVector<int64_t> position;
  int64_t numKept = 0;
  AffineMap inMap, outMap;
  SmallVector<int64_t> outShape;
  SmallVector<Value> outDims;
};

ReductionSpace reductionSpace(OpBuilder &b, Location loc, Value input, ArrayRef<bool> reduced) {
  MLIRContext *ctx = b.getContext();
  auto it = cast<RankedTensorType>(input.getType());
  int64_t rank = it.getRank();
  ReductionSpace s;
  s.position.resize(rank);
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[i])
      s.position[i] = s.numKept++;
  int64_t next = s.numKept;
  for (int64_t i = 0; i < rank; ++i)
    if (reduced[i])
      s.position[i] = next++;
  SmallVector<AffineExpr> inExprs, outExprs;
  for (int64_t i = 0; i < rank; ++i) {
    inExprs.push_back(getAffineDimExpr(s.position[i], ctx));
    if (!reduced[i]) {
      outExprs.push_back(getAffineDimExpr(s.position[i], ctx));
      s.outShape.push_back(it.getDimSize(i));
      s.outDims.push_back(dimValue(b, loc, input, i));
    }
  }
  s.inMap = AffineMap::get(rank, 0, inExprs, ctx);
  s.outMap = AffineMap::get(rank, 0, outExprs, ctx);
  return s;
}

/// A reduction over the last axis only (static, 16+ f32 elements) as vector
/// code: one work item per row (the kept dims), the row combined in vectors
/// of `lanes` (16 with 512-bit vectors: a softmax's exp pass is bound by its
/// polynomial's instructions, so whole-register vectors halve it) with the
/// accumulator in registers, then across its lanes and with
/// the row's last elements. The scalar loop that linalg gives keeps the
/// accumulator in memory (LLVM cannot prove it apart from the input), one
/// store-to-load round trip per element: 6625-class softmax rows ran at
/// 1 GFLOP/s. Null when the shapes do not fit.
Value rowReduce(OpBuilder &b, Location loc, Value input, ArrayRef<bool> reduced, Value initScalar,
                const Combine &combine, ValueRange extra,
                const std::function<Value(OpBuilder &, Location, ValueRange)> &pre, int64_t lanes) {
  auto it = cast<RankedTensorType>(input.getType());
  int64_t rank = it.getRank(), length = it.getShape().back();
  if (rank < 2 || !it.getElementType().isF32() || ShapedType::isDynamic(length) || length < 16 ||
      llvm::count(reduced, true) != 1 || !reduced.back())
    return {};
  const int64_t kWidth = length >= 2 * lanes ? lanes : 8;
  Type et = it.getElementType();
  auto vecType = VectorType::get({kWidth}, et);
  ReductionSpace space = reductionSpace(b, loc, input, reduced);
  auto outType = RankedTensorType::get(space.outShape, et);
  Value init = emptyTensor(b, loc, outType, space.outDims);
  SmallVector<OpFoldResult> ubs;
  for (Value d : space.outDims)
    ubs.push_back(d);
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  int64_t whole = length - length % kWidth;
  return forallBlocks(b, loc, init, ubs, {}, [&](OpBuilder &fb, ValueRange ivs, Value cell) {
    // The row's kept-dims operands (a softmax's max), as scalars and vectors.
    SmallVector<Value> scalars, vectors;
    for (Value e : extra) {
      scalars.push_back(tensor::ExtractOp::create(fb, loc, e, ivs));
      vectors.push_back(vector::BroadcastOp::create(fb, loc, vecType, scalars.back()));
    }
    auto element = [&](OpBuilder &nb, Value x, ArrayRef<Value> ops) -> Value {
      if (!pre)
        return x;
      SmallVector<Value> args = {x};
      args.append(ops.begin(), ops.end());
      return pre(nb, loc, args);
    };
    auto index = [&](Value j) {
      SmallVector<Value> idx(ivs.begin(), ivs.end());
      idx.push_back(j);
      return idx;
    };
    Value pad = arith::ConstantOp::create(fb, loc, fb.getZeroAttr(et));
    Value start = vector::BroadcastOp::create(fb, loc, vecType, initScalar);
    auto chunks = scf::ForOp::create(fb, loc, c(fb, 0), c(fb, whole), c(fb, kWidth), ValueRange{start});
    {
      OpBuilder lb = OpBuilder::atBlockBegin(chunks.getBody());
      Value v = vector::TransferReadOp::create(lb, loc, vecType, input, index(chunks.getInductionVar()), pad,
                                               ArrayRef<bool>{true});
      scf::YieldOp::create(lb, loc, combine(lb, loc, chunks.getRegionIterArg(0), element(lb, v, vectors)));
    }
    Value acc = vector::ExtractOp::create(fb, loc, chunks.getResult(0), ArrayRef<int64_t>{0});
    for (int64_t lane = 1; lane < kWidth; ++lane)
      acc = combine(fb, loc, acc, vector::ExtractOp::create(fb, loc, chunks.getResult(0), ArrayRef<int64_t>{lane}));
    for (int64_t j = whole; j < length; ++j)
      acc = combine(fb, loc, acc, element(fb, tensor::ExtractOp::create(fb, loc, input, index(c(fb, j))), scalars));
    return tensor::InsertOp::create(fb, loc, acc, cell, ValueRange{}).getResult();
  });
}

/// A reduction that keeps the innermost dim (static, f32, a multiple of 8):
/// a channels-last global pool's mean over H and W, say, as vector code.
/// The work items are the other kept dims times blocks of `lanes` channels
/// (8 where 16 do not divide); each walks the reduced positions with its
/// channels' vector accumulator in registers. The generic that linalg gives
/// made the channel the parallel dim and read every position's floats one
/// channel at a time (a cache line reread per channel: 5 GB/s on
/// efficientnet_b0's squeeze-and-excitation pools). Null when the shapes do
/// not fit or `extra` operands are given.
Value channelReduce(OpBuilder &b, Location loc, Value input, ArrayRef<bool> reduced, Value initScalar,
                    const Combine &combine, ValueRange extra,
                    const std::function<Value(OpBuilder &, Location, ValueRange)> &pre, int64_t lanes) {
  auto it = cast<RankedTensorType>(input.getType());
  int64_t rank = it.getRank(), channels = it.getShape().back();
  if (rank < 3 || !it.getElementType().isF32() || ShapedType::isDynamic(channels) || channels % 8 != 0 ||
      reduced.back() || !extra.empty() || llvm::count(reduced, true) == 0)
    return {};
  for (int64_t i = 0; i < rank; ++i)
    if (reduced[i] && it.isDynamicDim(i))
      return {};
  int64_t width = channels % lanes == 0 ? lanes : 8;
  Type et = it.getElementType();
  auto vecType = VectorType::get({width}, et);
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  ReductionSpace space = reductionSpace(b, loc, input, reduced);
  // [kept dims but the last..., channels / width, width]
  SmallVector<int64_t> blockedShape(space.outShape.begin(), space.outShape.end() - 1);
  SmallVector<Value> blockedDims(space.outDims.begin(), space.outDims.end() - 1);
  blockedShape.append({channels / width, width});
  blockedDims.append({c(b, channels / width), c(b, width)});
  Value init = emptyTensor(b, loc, RankedTensorType::get(blockedShape, et), blockedDims);
  SmallVector<OpFoldResult> ubs;
  for (Value d : ArrayRef<Value>(blockedDims).drop_back())
    ubs.push_back(d);
  Value blocked = forallBlocks(b, loc, init, ubs, {width}, [&](OpBuilder &fb, ValueRange ivs, Value block) {
    Value channel = arith::MulIOp::create(fb, loc, ivs.back(), c(fb, width));
    Value pad = arith::ConstantOp::create(fb, loc, fb.getZeroAttr(et));
    Value start = vector::BroadcastOp::create(fb, loc, vecType, initScalar);
    // Nested loops over the reduced dims, the accumulator carried.
    SmallVector<Value> index(rank);
    for (int64_t i = 0, k = 0; i < rank - 1; ++i)
      if (!reduced[i])
        index[i] = ivs[k++];
    index[rank - 1] = channel;
    SmallVector<scf::ForOp> loops;
    OpBuilder lb = fb;
    Value acc = start;
    for (int64_t i = 0; i < rank; ++i) {
      if (!reduced[i])
        continue;
      auto loop = scf::ForOp::create(lb, loc, c(lb, 0), c(lb, it.getDimSize(i)), c(lb, 1), ValueRange{acc});
      if (!loops.empty())
        scf::YieldOp::create(lb, loc, loop.getResults());
      loops.push_back(loop);
      lb = OpBuilder::atBlockBegin(loop.getBody());
      index[i] = loop.getInductionVar();
      acc = loop.getRegionIterArg(0);
    }
    Value x = vector::TransferReadOp::create(lb, loc, vecType, input, index, pad, ArrayRef<bool>{true});
    if (pre)
      x = pre(lb, loc, ValueRange{x});
    scf::YieldOp::create(lb, loc, combine(lb, loc, acc, x));
    return vector::TransferWriteOp::create(fb, loc, loops.front().getResult(0), block, ValueRange{c(fb, 0)},
                                           ArrayRef<bool>{true})
        .getResult();
  });
  SmallVector<ReassociationIndices> merge;
  for (int64_t i = 0; i + 2 < int64_t(blockedShape.size()); ++i)
    merge.push_back({i});
  merge.push_back({int64_t(blockedShape.size()) - 2, int64_t(blockedShape.size()) - 1});
  return tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get(space.outShape, et), blocked, merge);
}

/// Reduces `input` over the `reduced` dims; the result keeps the other dims.
/// `pre` optionally transforms each element (with the kept-dims `extra`
/// tensors broadcast alongside) before `combine`. `rowLanes` (x86, 0: off):
/// a reduction over the last axis as rowReduce's vector code, one that keeps
/// the last axis as channelReduce's.
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<bool> reduced,
             Value initScalar, const Combine &combine,
             ValueRange extra = {},
             std::function<Value(OpBuilder &, Location, ValueRange)> pre = {}, int64_t rowLanes = 0) {
  if (rowLanes > 0) {
    if (Value rows = rowReduce(b, loc, input, reduced, initScalar, combine, extra, pre, rowLanes))
      return rows;
    if (Value columns = channelReduce(b, loc, input, reduced, initScalar, combine, extra, pre, rowLanes))
      return columns;
  }
  auto it = cast<RankedTensorType>(input.getType());
  int64_t rank = it.getRank();
  ReductionSpace space = reductionSpace(b, loc, input, reduced);
  auto outType = RankedTensorType::get(space.outShape, it.getElementType());
  Value init = filledTensor(b, loc, outType, space.outDims, initScalar);
  SmallVector<Value> inputs = {input};
  SmallVector<AffineMap> maps = {space.inMap};
  for (Value e : extra) {
    inputs.push_back(e);
    maps.push_back(space.outMap);
  }
  maps.push_back(space.outMap);
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  for (int64_t i = space.numKept; i < rank; ++i)
    iters[i] = IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, outType, inputs, ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value x = pre ? pre(nb, nl, args.drop_back()) : args[0];
               linalg::YieldOp::create(nb, nl, combine(nb, nl, args.back(), x));
             })
      .getResult(0);
}

/// Elementwise over the full `input` shape with kept-dims tensors (results of
/// `reduce` with the same `reduced`) and extra full-shape-broadcast operands.
Value mapWithReduced(OpBuilder &b, Location loc, Value input,
                     ArrayRef<bool> reduced, ValueRange keptInputs,
                     ArrayRef<std::pair<Value, AffineMap>> others,
                     const BodyFn &body) {
  MLIRContext *ctx = b.getContext();
  auto it = cast<RankedTensorType>(input.getType());
  int64_t rank = it.getRank();
  SmallVector<AffineExpr> keptExprs;
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[i])
      keptExprs.push_back(getAffineDimExpr(i, ctx));
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<Value> inputs = {input};
  SmallVector<AffineMap> maps = {id};
  for (Value k : keptInputs) {
    inputs.push_back(k);
    maps.push_back(AffineMap::get(rank, 0, keptExprs, ctx));
  }
  for (auto &[v, m] : others) {
    inputs.push_back(v);
    maps.push_back(m);
  }
  maps.push_back(id);
  SmallVector<Value> dims;
  for (int64_t i = 0; i < rank; ++i)
    dims.push_back(dimValue(b, loc, input, i));
  Value empty = emptyTensor(b, loc, it, dims);
  return linalg::GenericOp::create(
             b, loc, it, inputs, ValueRange{empty}, maps,
             SmallVector<IteratorType>(rank, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, body(nb, nl, args.drop_back()));
             })
      .getResult(0);
}

/// Number of elements in the reduced dims, as a scalar of `type`.
Value reducedCount(OpBuilder &b, Location loc, Value input,
                   ArrayRef<bool> reduced, Type type) {
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i])
      count = arith::MulIOp::create(b, loc, count, dimValue(b, loc, input, i));
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  return castScalar(b, loc, asInt, type);
}

Combine sumCombine() {
  return [](OpBuilder &b, Location l, Value acc, Value x) { return addValues(b, l, acc, x); };
}
Combine maxCombine() {
  return [](OpBuilder &b, Location l, Value acc, Value x) { return maxValues(b, l, acc, x); };
}

/// Reshapes a kept-dims reduction result to the op's (keepdims) result type:
/// reduced axes come back as size-1 axes at their places.
Value toResultShape(OpBuilder &b, Location loc, Value reducedValue,
                    RankedTensorType resultType, ArrayRef<bool> reduced) {
  if (reducedValue.getType() == resultType)
    return reducedValue;
  SmallVector<Value> dims;
  int64_t next = 0;
  for (bool r : reduced)
    dims.push_back(r ? arith::ConstantIndexOp::create(b, loc, 1)
                     : dimValue(b, loc, reducedValue, next++));
  return reshapeTo(b, loc, reducedValue, resultType, dims);
}

/// Elementwise `t / count` (the mean of a sum over `count` elements).
Value divideBy(OpBuilder &b, Location loc, Value t, Value count) {
  return buildElementwise(b, loc, cast<RankedTensorType>(t.getType()), t,
                          [count](OpBuilder &nb, Location l, ValueRange a) {
                            return divValues(nb, l, a[0], count);
                          });
}

/// How one Reduce* op reduces: start value, per-element transform, combine,
/// and a final per-result transform.
struct ReduceKind {
  enum Init { Zero, One, Lowest, Highest } init = Zero;
  std::function<Value(OpBuilder &, Location, Value)> pre;  // element -> term
  Combine combine;
  std::function<Value(OpBuilder &, Location, Value)> post; // accumulated -> result
};

/// Mean and 1/sqrt(variance + eps) over the `reduced` dims (kept-dims
/// tensors), as LayerNormalization and InstanceNormalization need them.
std::pair<Value, Value> normStatistics(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced,
                                       double epsilon) {
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  Value count = reducedCount(b, loc, x, reduced, et);
  Value zero = scalarConstant(b, loc, et, 0);
  Value mean = divideBy(b, loc, reduce(b, loc, x, reduced, zero, sumCombine()), count);
  Value sq = reduce(b, loc, x, reduced, zero, sumCombine(), ValueRange{mean},
                    [](OpBuilder &nb, Location l, ValueRange a) {
                      Value d = subValues(nb, l, a[0], a[1]);
                      return mulValues(nb, l, d, d);
                    });
  Value eps = scalarConstant(b, loc, et, epsilon);
  Value rstd = buildElementwise(b, loc, cast<RankedTensorType>(sq.getType()), sq,
                                [count, eps](OpBuilder &nb, Location l, ValueRange a) -> Value {
                                  Value var = divValues(nb, l, a[0], count);
                                  return math::RsqrtOp::create(nb, l, addValues(nb, l, var, eps));
                                });
  return {mean, rstd};
}

template <typename OpTy> ReduceKind reduceKind();

using Fn = std::function<Value(OpBuilder &, Location, Value)>;
Combine mulCombine() {
  return [](OpBuilder &b, Location l, Value acc, Value x) { return mulValues(b, l, acc, x); };
}
Combine minCombine() {
  return [](OpBuilder &b, Location l, Value acc, Value x) { return minValues(b, l, acc, x); };
}
Value absOf(OpBuilder &b, Location l, Value x) {
  if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return math::AbsFOp::create(b, l, x);
  return math::AbsIOp::create(b, l, x);
}

template <> ReduceKind reduceKind<ReduceSumOp>() { return {ReduceKind::Zero, {}, sumCombine(), {}}; }
template <> ReduceKind reduceKind<ReduceMeanOp>() { return {ReduceKind::Zero, {}, sumCombine(), {}}; }
template <> ReduceKind reduceKind<ReduceMaxOp>() { return {ReduceKind::Lowest, {}, maxCombine(), {}}; }
template <> ReduceKind reduceKind<ReduceMinOp>() { return {ReduceKind::Highest, {}, minCombine(), {}}; }
template <> ReduceKind reduceKind<ReduceProdOp>() { return {ReduceKind::One, {}, mulCombine(), {}}; }
template <> ReduceKind reduceKind<ReduceL1Op>() { return {ReduceKind::Zero, Fn(absOf), sumCombine(), {}}; }
template <> ReduceKind reduceKind<ReduceSumSquareOp>() {
  return {ReduceKind::Zero, [](OpBuilder &b, Location l, Value x) { return mulValues(b, l, x, x); },
          sumCombine(), {}};
}
template <> ReduceKind reduceKind<ReduceL2Op>() {
  return {ReduceKind::Zero, [](OpBuilder &b, Location l, Value x) { return mulValues(b, l, x, x); },
          sumCombine(), [](OpBuilder &b, Location l, Value s) -> Value {
            return math::SqrtOp::create(b, l, s);
          }};
}
template <> ReduceKind reduceKind<ReduceLogSumOp>() {
  return {ReduceKind::Zero, {}, sumCombine(),
          [](OpBuilder &b, Location l, Value s) -> Value { return math::LogOp::create(b, l, s); }};
}

/// Highest value of a type (the start of a min-reduction).
Value highestValue(OpBuilder &b, Location loc, Type type) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), false)));
  auto it = cast<IntegerType>(type);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, APInt::getSignedMaxValue(it.getWidth())));
}

template <typename OpTy>
struct ReducePattern : OpConversionPattern<OpTy> {
  ReducePattern(MLIRContext *ctx, int64_t rowLanes) : OpConversionPattern<OpTy>(ctx), rowLanes(rowLanes) {}
  int64_t rowLanes;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = xt.getElementType();
    SmallVector<bool> reduced(xt.getRank(), op.getAxes().empty());
    for (int64_t a : op.getAxes())
      reduced[wrapAxis(a, xt.getRank())] = true;
    ReduceKind kind = reduceKind<OpTy>();
    Value init = kind.init == ReduceKind::Lowest    ? lowestValue(rewriter, loc, et)
                 : kind.init == ReduceKind::Highest ? highestValue(rewriter, loc, et)
                 : scalarConstant(rewriter, loc, et, kind.init == ReduceKind::One ? 1 : 0);
    std::function<Value(OpBuilder &, Location, ValueRange)> pre;
    if (kind.pre)
      pre = [&](OpBuilder &b, Location l, ValueRange a) { return kind.pre(b, l, a[0]); };
    Value r = reduce(rewriter, loc, x, reduced, init, kind.combine, {}, pre, rowLanes);
    if (std::is_same_v<OpTy, ReduceMeanOp>)
      r = divideBy(rewriter, loc, r, reducedCount(rewriter, loc, x, reduced, et));
    if (kind.post)
      r = buildElementwise(rewriter, loc, cast<RankedTensorType>(r.getType()), r,
                           [&](OpBuilder &b, Location l, ValueRange a) { return kind.post(b, l, a[0]); });
    rewriter.replaceOp(op, toResultShape(rewriter, loc, r, rt, reduced));
    return success();
  }
};

/// log(sum(exp(x - max))) + max, stable for large inputs.
struct ReduceLogSumExpPattern : OpConversionPattern<ReduceLogSumExpOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceLogSumExpOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    Type et = xt.getElementType();
    SmallVector<bool> reduced(xt.getRank(), op.getAxes().empty());
    for (int64_t a : op.getAxes())
      reduced[wrapAxis(a, xt.getRank())] = true;
    Value maxV = reduce(rewriter, loc, x, reduced, lowestValue(rewriter, loc, et), maxCombine());
    // A row of -inf would make x - max NaN; shift by 0 there instead.
    Value shift = buildElementwise(rewriter, loc, cast<RankedTensorType>(maxV.getType()), maxV,
                                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                     Value inf = lowestValue(b, l, et);
                                     Value isInf = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a[0], inf);
                                     return arith::SelectOp::create(b, l, isInf, scalarConstant(b, l, et, 0), a[0]);
                                   });
    Value sum = reduce(rewriter, loc, x, reduced, scalarConstant(rewriter, loc, et, 0), sumCombine(),
                       ValueRange{shift}, [](OpBuilder &b, Location l, ValueRange a) -> Value {
                         return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]));
                       });
    auto st = cast<RankedTensorType>(sum.getType());
    Value r = buildElementwise(rewriter, loc, st, ValueRange{sum, shift},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return arith::AddFOp::create(b, l, math::LogOp::create(b, l, a[0]), a[1]);
                               });
    rewriter.replaceOp(op, toResultShape(rewriter, loc, r, cast<RankedTensorType>(op.getType()), reduced));
    return success();
  }
};

// Run-time reduce axes (shapeinputs): graph.dynamic_reduce.
/// The Reduce* kind that `name` (dynamic_reduce's `kind`) stands for;
/// log_sum_exp is handled apart (two passes).
ReduceKind reduceKindNamed(StringRef name) {
  if (name == "mean")
    return reduceKind<ReduceMeanOp>();
  if (name == "max")
    return reduceKind<ReduceMaxOp>();
  if (name == "min")
    return reduceKind<ReduceMinOp>();
  if (name == "prod")
    return reduceKind<ReduceProdOp>();
  if (name == "l1")
    return reduceKind<ReduceL1Op>();
  if (name == "l2")
    return reduceKind<ReduceL2Op>();
  if (name == "sum_square")
    return reduceKind<ReduceSumSquareOp>();
  if (name == "log_sum")
    return reduceKind<ReduceLogSumOp>();
  return reduceKind<ReduceSumOp>();
}

/// Which axes are reduced is data, so no indexing map can say it: the
/// result is computed in the keepdims shape (a reduced axis has size 1
/// there), each element an scf.for over the R elements of the reduced axes
/// (extent = dim where reduced, 1 elsewhere), read at output coordinate +
/// decoded offset. Without keepdims the kept dims are then regrouped.
struct DynamicReducePattern : OpConversionPattern<DynamicReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput(), axes = adaptor.getAxes();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = xt.getElementType();
    int64_t rank = xt.getRank();
    int64_t n = cast<RankedTensorType>(axes.getType()).getDimSize(0);
    auto c = [&](OpBuilder &ob, int64_t v) -> Value { return arith::ConstantIndexOp::create(ob, loc, v); };
    Value f = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    SmallVector<Value> reduced(rank, f);
    Value count = c(b, 0);
    for (int64_t k = 0; k < n; ++k) {
      Value e = tensor::ExtractOp::create(b, loc, axes, ValueRange{c(b, k)});
      Value a = arith::IndexCastOp::create(b, loc, b.getIndexType(), e);
      Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, c(b, 0));
      a = arith::SelectOp::create(b, loc, neg, arith::AddIOp::create(b, loc, a, c(b, rank)), a);
      for (int64_t d = 0; d < rank; ++d)
        reduced[d] = arith::OrIOp::create(b, loc, reduced[d],
                                          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c(b, d)));
    }
    for (Value r : reduced)
      count = arith::AddIOp::create(b, loc, count, arith::SelectOp::create(b, loc, r, c(b, 1), c(b, 0)));
    if (!op.getKeepdims()) {
      // The declared rank needs n distinct axes; otherwise reduce the first n.
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count, c(b, n));
      for (int64_t d = 0; d < rank; ++d)
        reduced[d] = arith::SelectOp::create(b, loc, valid, reduced[d],
                                             arith::ConstantIntOp::create(b, loc, b.getI1Type(), d < n));
    }
    SmallVector<Value> extents, outDims;
    Value total = c(b, 1);
    for (int64_t d = 0; d < rank; ++d) {
      Value dim = dimValue(b, loc, x, d);
      extents.push_back(arith::SelectOp::create(b, loc, reduced[d], dim, c(b, 1)));
      outDims.push_back(arith::SelectOp::create(b, loc, reduced[d], c(b, 1), dim));
      total = arith::MulIOp::create(b, loc, total, extents.back());
    }
    StringRef kindName = op.getKind();
    bool logSumExp = kindName == "log_sum_exp";
    ReduceKind kind = reduceKindNamed(kindName);
    auto keptType = RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic), et);
    if (op.getKeepdims())
      keptType = rt;
    // acc = fold(combine, pre(x[o + offset(r)])) over r in [0, total).
    auto loopOver = [&](OpBuilder &lb, Location l, ArrayRef<Value> o, Value init,
                        const std::function<Value(OpBuilder &, Location, Value acc, Value v)> &step) {
      auto loop = scf::ForOp::create(lb, l, c(lb, 0), total, c(lb, 1), ValueRange{init});
      OpBuilder fb = OpBuilder::atBlockBegin(loop.getBody());
      Value rest = loop.getInductionVar();
      SmallVector<Value> at(rank);
      for (int64_t d = rank - 1; d >= 0; --d) {
        Value off = arith::RemUIOp::create(fb, l, rest, extents[d]);
        rest = arith::DivUIOp::create(fb, l, rest, extents[d]);
        at[d] = arith::AddIOp::create(fb, l, o[d], off);
      }
      Value v = tensor::ExtractOp::create(fb, l, x, at);
      scf::YieldOp::create(fb, l, step(fb, l, loop.getRegionIterArgs()[0], v));
      return loop.getResult(0);
    };
    Value keptResult = linalg::GenericOp::create(
        b, loc, keptType, ValueRange{}, ValueRange{emptyTensor(b, loc, keptType, outDims)},
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, getContext())},
        SmallVector<IteratorType>(rank, IteratorType::parallel), [&](OpBuilder &nb, Location l, ValueRange) {
          SmallVector<Value> o;
          for (int64_t d = 0; d < rank; ++d)
            o.push_back(linalg::IndexOp::create(nb, l, d));
          Value result;
          if (logSumExp) {
            Value maxV = loopOver(nb, l, o, lowestValue(nb, l, et), [](OpBuilder &sb, Location sl, Value acc, Value v) {
              return maxValues(sb, sl, acc, v);
            });
            // A row of -inf would make x - max NaN; shift by 0 there instead.
            Value isInf = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, maxV, lowestValue(nb, l, et));
            Value shift = arith::SelectOp::create(nb, l, isInf, scalarConstant(nb, l, et, 0), maxV);
            Value zero = scalarConstant(nb, l, et, 0);
            Value sum = loopOver(nb, l, o, zero, [&](OpBuilder &sb, Location sl, Value acc, Value v) {
              return addValues(sb, sl, acc, math::ExpOp::create(sb, sl, arith::SubFOp::create(sb, sl, v, shift)));
            });
            result = arith::AddFOp::create(nb, l, math::LogOp::create(nb, l, sum), shift);
          } else {
            Value init = kind.init == ReduceKind::Lowest    ? lowestValue(nb, l, et)
                         : kind.init == ReduceKind::Highest ? highestValue(nb, l, et)
                         : scalarConstant(nb, l, et, kind.init == ReduceKind::One ? 1 : 0);
            result = loopOver(nb, l, o, init, [&](OpBuilder &sb, Location sl, Value acc, Value v) {
              return kind.combine(sb, sl, acc, kind.pre ? kind.pre(sb, sl, v) : v);
            });
            if (kindName == "mean") {
              Value cnt = arith::IndexCastOp::create(nb, l, nb.getI64Type(), total);
              result = divValues(nb, l, result, castScalar(nb, l, cnt, et));
            }
            if (kind.post)
              result = kind.post(nb, l, result);
          }
          linalg::YieldOp::create(nb, l, result);
        })
                           .getResult(0);
    if (op.getKeepdims()) {
      rewriter.replaceOp(op, keptResult);
      return success();
    }
    // The kept dims, in order (exactly rank - n of them after the fallback above).
    int64_t outRank = rt.getRank();
    SmallVector<Value> dims(outRank, c(b, 1));
    Value pos = c(b, 0);
    for (int64_t d = 0; d < rank; ++d) {
      Value dim = dimValue(b, loc, x, d);
      Value kept = arith::XOrIOp::create(b, loc, reduced[d], arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
      for (int64_t j = 0; j < outRank; ++j) {
        Value here = arith::AndIOp::create(b, loc, kept,
                                           arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pos, c(b, j)));
        dims[j] = arith::SelectOp::create(b, loc, here, dim, dims[j]);
      }
      pos = arith::AddIOp::create(b, loc, pos, arith::SelectOp::create(b, loc, kept, c(b, 1), c(b, 0)));
    }
    rewriter.replaceOp(op, reshapeTo(b, loc, keptResult, rt, dims));
    return success();
  }
};

/// Softmax (or log-softmax) over the last axis (static, 16+ f32) as one work
/// item per row: the max, the shifted exponentials (written to the output row
/// as they are summed, for softmax) and the scaling, three passes over a row
/// that stays in cache. As three kernels (two rowReduce's and an elementwise
/// pass recomputing the exponentials), a CTC head's [80, 6625] softmax read its
/// input from memory three times and computed each exponential twice: 207 us,
/// where ONNX Runtime takes 180 (this: 131). The max and the sum combine in
/// the order rowReduce uses; the exponentials are kiln's own
/// (expOfNonPositive: 0 below -87.3, where math.exp gives subnormals). Null
/// when the shapes do not fit.
template <bool isLog>
Value rowSoftmax(OpBuilder &b, Location loc, Value x, int64_t lanes) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank(), length = xt.getShape().back();
  if (rank < 2 || !xt.getElementType().isF32() || ShapedType::isDynamic(length) || length < 16)
    return {};
  const int64_t width = length >= 2 * lanes ? lanes : 8;
  const int64_t whole = length - length % width;
  Type et = xt.getElementType();
  auto vecType = VectorType::get({width}, et);
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  SmallVector<Value> dims;
  SmallVector<OpFoldResult> ubs;
  for (int64_t i = 0; i < rank; ++i) {
    dims.push_back(dimValue(b, loc, x, i));
    if (i + 1 < rank)
      ubs.push_back(dims.back());
  }
  Value init = emptyTensor(b, loc, xt, dims);
  return forallBlocks(b, loc, init, ubs, {length}, [&](OpBuilder &fb, ValueRange ivs, Value row) {
    Value pad = arith::ConstantOp::create(fb, loc, fb.getZeroAttr(et));
    auto at = [&](Value j) {
      SmallVector<Value> idx(ivs.begin(), ivs.end());
      idx.push_back(j);
      return idx;
    };
    auto readX = [&](OpBuilder &nb, Value j) {
      return vector::TransferReadOp::create(nb, loc, vecType, x, at(j), pad, ArrayRef<bool>{true}).getResult();
    };
    // for (j = 0; j < whole; j += width) carried = step(j, carried...), then the lanes.
    auto chunks = [&](ValueRange inits, const std::function<SmallVector<Value>(OpBuilder &, Value, ValueRange)> &step) {
      auto loop = scf::ForOp::create(fb, loc, c(fb, 0), c(fb, whole), c(fb, width), inits);
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      scf::YieldOp::create(lb, loc, step(lb, loop.getInductionVar(), loop.getRegionIterArgs()));
      return loop;
    };
    auto acrossLanes = [&](Value v, const Combine &combine) {
      Value acc = vector::ExtractOp::create(fb, loc, v, ArrayRef<int64_t>{0});
      for (int64_t lane = 1; lane < width; ++lane)
        acc = combine(fb, loc, acc, vector::ExtractOp::create(fb, loc, v, ArrayRef<int64_t>{lane}));
      return acc;
    };
    auto xAt = [&](int64_t j) { return tensor::ExtractOp::create(fb, loc, x, at(c(fb, j))).getResult(); };
    // The row max: four accumulators over blocks of four vectors (a max waits 4 cycles for the
    // previous one; one accumulator spent 26 us of a CTC head's 40 x 6625 softmax on that
    // chain), the vectors left after the blocks into the first. The max is exact, so the
    // grouping changes nothing.
    Combine maxOf = maxCombine(), sumOf = sumCombine();
    Value lowest = vector::BroadcastOp::create(fb, loc, vecType, lowestValue(fb, loc, et));
    constexpr int64_t kMaxChains = 4;
    const int64_t blocked = whole - whole % (kMaxChains * width);
    auto blockLoop = scf::ForOp::create(fb, loc, c(fb, 0), c(fb, blocked), c(fb, kMaxChains * width),
                                        SmallVector<Value>(kMaxChains, lowest));
    {
      OpBuilder lb = OpBuilder::atBlockBegin(blockLoop.getBody());
      SmallVector<Value> next;
      for (int64_t i = 0; i < kMaxChains; ++i) {
        Value j = arith::AddIOp::create(lb, loc, blockLoop.getInductionVar(), c(lb, i * width));
        next.push_back(maxOf(lb, loc, blockLoop.getRegionIterArgs()[i], readX(lb, j)));
      }
      scf::YieldOp::create(lb, loc, next);
    }
    Value mxVec = blockLoop.getResult(0);
    for (int64_t i = 1; i < kMaxChains; ++i)
      mxVec = maxOf(fb, loc, mxVec, blockLoop.getResult(i));
    auto restLoop = scf::ForOp::create(fb, loc, c(fb, blocked), c(fb, whole), c(fb, width), ValueRange{mxVec});
    {
      OpBuilder lb = OpBuilder::atBlockBegin(restLoop.getBody());
      scf::YieldOp::create(lb, loc, maxOf(lb, loc, restLoop.getRegionIterArgs()[0], readX(lb, restLoop.getInductionVar())));
    }
    Value mx = acrossLanes(restLoop.getResult(0), maxOf);
    for (int64_t j = whole; j < length; ++j)
      mx = maxOf(fb, loc, mx, xAt(j));
    // The exponentials' sum; softmax writes them to the row.
    Value mxV = vector::BroadcastOp::create(fb, loc, vecType, mx);
    Value zeroV = vector::BroadcastOp::create(fb, loc, vecType, scalarConstant(fb, loc, et, 0));
    auto sumLoop = chunks(ValueRange{zeroV, row}, [&](OpBuilder &lb, Value j, ValueRange acc) -> SmallVector<Value> {
      Value e = expOfNonPositive(lb, loc, arith::SubFOp::create(lb, loc, readX(lb, j), mxV));
      Value out = acc[1];
      if (!isLog)
        out = vector::TransferWriteOp::create(lb, loc, e, out, ValueRange{j}, ArrayRef<bool>{true}).getResult();
      return {sumOf(lb, loc, acc[0], e), out};
    });
    Value sum = acrossLanes(sumLoop.getResult(0), sumOf);
    row = sumLoop.getResult(1);
    for (int64_t j = whole; j < length; ++j) {
      Value e = expOfNonPositive(fb, loc, arith::SubFOp::create(fb, loc, xAt(j), mx));
      sum = sumOf(fb, loc, sum, e);
      if (!isLog)
        row = tensor::InsertOp::create(fb, loc, e, row, ValueRange{c(fb, j)});
    }
    // softmax: e * (1 / sum); log-softmax: x - max - log(sum).
    Value factor = isLog ? math::LogOp::create(fb, loc, sum).getResult()
                         : arith::DivFOp::create(fb, loc, scalarConstant(fb, loc, et, 1.0), sum).getResult();
    Value factorV = vector::BroadcastOp::create(fb, loc, vecType, factor);
    auto finish = [&](OpBuilder &nb, Value value, Value f, Value shiftBy) -> Value {
      if (isLog)
        return arith::SubFOp::create(nb, loc, arith::SubFOp::create(nb, loc, value, shiftBy), f);
      return arith::MulFOp::create(nb, loc, value, f);
    };
    auto scaleLoop = chunks(ValueRange{row}, [&](OpBuilder &lb, Value j, ValueRange acc) -> SmallVector<Value> {
      Value v = isLog ? readX(lb, j)
                      : vector::TransferReadOp::create(lb, loc, vecType, acc[0], ValueRange{j}, pad, ArrayRef<bool>{true})
                            .getResult();
      Value y = finish(lb, v, factorV, mxV);
      return {vector::TransferWriteOp::create(lb, loc, y, acc[0], ValueRange{j}, ArrayRef<bool>{true}).getResult()};
    });
    row = scaleLoop.getResult(0);
    for (int64_t j = whole; j < length; ++j) {
      Value v = isLog ? xAt(j) : tensor::ExtractOp::create(fb, loc, row, ValueRange{c(fb, j)}).getResult();
      row = tensor::InsertOp::create(fb, loc, finish(fb, v, factor, mx), row, ValueRange{c(fb, j)});
    }
    return row;
  });
}

/// softmax(x) = exp(x - max) / sum(exp(x - max)) and
/// log_softmax(x) = x - max - log(sum(exp(x - max))) along one axis: both
/// reduce the max, then the shifted exponentials' sum.
template <typename OpTy>
struct SoftmaxLikePattern : OpConversionPattern<OpTy> {
  SoftmaxLikePattern(MLIRContext *ctx, int64_t rowLanes) : OpConversionPattern<OpTy>(ctx), rowLanes(rowLanes) {}
  int64_t rowLanes;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool isLog = std::is_same_v<OpTy, LogSoftmaxOp>;
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    Type et = xt.getElementType();
    int64_t axis = wrapAxis(op.getAxis(), xt.getRank());
    if (rowLanes > 0 && axis == xt.getRank() - 1)
      if (Value y = rowSoftmax<isLog>(rewriter, loc, x, rowLanes)) {
        rewriter.replaceOp(op, y);
        return success();
      }
    SmallVector<bool> reduced(xt.getRank(), false);
    reduced[axis] = true;
    Value maxV = reduce(rewriter, loc, x, reduced, lowestValue(rewriter, loc, et), maxCombine(), {}, {}, rowLanes);
    // sum(exp(x - max)) with max broadcast along the reduced axis.
    Value sum = reduce(
        rewriter, loc, x, reduced, scalarConstant(rewriter, loc, et, 0), sumCombine(),
        ValueRange{maxV}, [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]));
        },
        rowLanes);
    Value y = mapWithReduced(rewriter, loc, x, reduced, ValueRange{maxV, sum}, {},
                             [](OpBuilder &b, Location l, ValueRange a) -> Value {
                               Value shifted = arith::SubFOp::create(b, l, a[0], a[1]);
                               if (isLog)
                                 return arith::SubFOp::create(b, l, shifted, math::LogOp::create(b, l, a[2]));
                               // exp * (1 / sum): the reciprocal is the row's, hoisted out of
                               // its loop, where a division per element bounded the pass.
                               Value inverse = arith::DivFOp::create(b, l, scalarConstant(b, l, a[2].getType(), 1.0), a[2]);
                               return arith::MulFOp::create(b, l, math::ExpOp::create(b, l, shifted), inverse);
                             });
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// The index (i64, kept dims only) of the max (or min) along `axis`: a
/// reduction carrying (best value, its index).
/// Marks axes [first, end) of a rank-`rank` tensor as reduced.
SmallVector<bool> reducedAxes(int64_t rank, int64_t first, int64_t end) {
  SmallVector<bool> reduced(rank, false);
  for (int64_t i = first; i < end; ++i)
    reduced[i] = true;
  return reduced;
}

Value argReduce(OpBuilder &rewriter, Location loc, Value x, int64_t axis, bool isMax, bool last) {
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  int64_t rank = xt.getRank();
  SmallVector<bool> reduced = reducedAxes(rank, axis, axis + 1);
  ReductionSpace space = reductionSpace(rewriter, loc, x, reduced);
  auto valType = RankedTensorType::get(space.outShape, et);
  auto idxType = RankedTensorType::get(space.outShape, rewriter.getI64Type());
  Value start = isMax ? lowestValue(rewriter, loc, et) : highestValue(rewriter, loc, et);
  Value vals = filledTensor(rewriter, loc, valType, space.outDims, start);
  Value idxs = filledTensor(rewriter, loc, idxType, space.outDims,
                            arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0)));
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  iters[rank - 1] = IteratorType::reduction;
  int64_t axisPos = space.position[axis];
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{valType, idxType}, ValueRange{x}, ValueRange{vals, idxs},
      SmallVector<AffineMap>{space.inMap, space.outMap, space.outMap}, iters,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value i = arith::IndexCastOp::create(b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axisPos));
        Value better;
        if (isa<FloatType>(et))
          better = arith::CmpFOp::create(b, l, isMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
                                                     : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT),
                                         a[0], a[1]);
        else
          better = arith::CmpIOp::create(b, l, isMax ? (last ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sgt)
                                                     : (last ? arith::CmpIPredicate::sle : arith::CmpIPredicate::slt),
                                         a[0], a[1]);
        // The first element always wins (covers all-NaN rows).
        Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, i,
                                            arith::ConstantOp::create(b, l, b.getI64IntegerAttr(0)));
        better = arith::OrIOp::create(b, l, better, first);
        linalg::YieldOp::create(b, l, ValueRange{arith::SelectOp::create(b, l, better, a[0], a[1]),
                                                 arith::SelectOp::create(b, l, better, i, a[2])});
      });
  return generic.getResult(1);
}

/// ArgMax/ArgMin.
template <typename OpTy>
struct ArgPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    Value idx = argReduce(rewriter, op.getLoc(), x, axis, std::is_same_v<OpTy, ArgMaxOp>,
                          op.getSelectLastIndex() != 0);
    SmallVector<bool> reduced = reducedAxes(rank, axis, axis + 1);
    rewriter.replaceOp(op, toResultShape(rewriter, op.getLoc(), idx, cast<RankedTensorType>(op.getType()), reduced));
    return success();
  }
};

/// Hardmax: 1 where the element is the first maximum along the axis.
struct HardmaxPattern : OpConversionPattern<HardmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(HardmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t rank = xt.getRank();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    Value idx = argReduce(rewriter, loc, x, axis, /*isMax=*/true, /*last=*/false);
    SmallVector<bool> reduced = reducedAxes(rank, axis, axis + 1);
    Type et = xt.getElementType();
    rewriter.replaceOp(op, mapWithReduced(rewriter, loc, x, reduced, ValueRange{idx}, {},
                                          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                            Value i = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                                                 linalg::IndexOp::create(b, l, axis));
                                            Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, i, a[1]);
                                            return arith::SelectOp::create(b, l, hit, scalarConstant(b, l, et, 1),
                                                                           scalarConstant(b, l, et, 0));
                                          }));
    return success();
  }
};

/// CumSum: out[i] = sum of x[j] along the axis for j before i (or after, when
/// reversed; strictly, when exclusive). A masked reduction over the axis.
struct CumSumPattern : OpConversionPattern<CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    Type et = xt.getElementType();
    int64_t rank = xt.getRank();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    bool exclusive = op.getExclusive() != 0, reverse = op.getReverse() != 0;
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(dimValue(rewriter, loc, x, i));
    Value init = filledTensor(rewriter, loc, xt, dims, scalarConstant(rewriter, loc, et, 0));
    // Iteration dims: the output's, then j along the axis.
    SmallVector<AffineExpr> in, out;
    for (int64_t i = 0; i < rank; ++i) {
      in.push_back(getAffineDimExpr(i == axis ? rank : i, ctx));
      out.push_back(getAffineDimExpr(i, ctx));
    }
    SmallVector<IteratorType> iters(rank + 1, IteratorType::parallel);
    iters[rank] = IteratorType::reduction;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, xt, ValueRange{x}, ValueRange{init},
        SmallVector<AffineMap>{AffineMap::get(rank + 1, 0, in, ctx), AffineMap::get(rank + 1, 0, out, ctx)},
        iters, [&](OpBuilder &b, Location l, ValueRange a) {
          Value i = linalg::IndexOp::create(b, l, axis), j = linalg::IndexOp::create(b, l, rank);
          arith::CmpIPredicate pred = reverse ? (exclusive ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sge)
                                              : (exclusive ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle);
          Value take = arith::CmpIOp::create(b, l, pred, j, i);
          Value term = arith::SelectOp::create(b, l, take, a[0], scalarConstant(b, l, et, 0));
          linalg::YieldOp::create(b, l, addValues(b, l, a[1], term));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// NegativeLogLikelihoodLoss: per target element the weighted negated input
/// at the target class (0 when ignored), then none/sum/mean.
struct NllLossPattern : OpConversionPattern<NllLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NllLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput(), target = adaptor.getTarget(), weight = adaptor.getWeight();
    auto tt = cast<RankedTensorType>(target.getType());
    Type et = cast<RankedTensorType>(x.getType()).getElementType();
    int64_t rank = tt.getRank();
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(dimValue(rewriter, loc, target, i));
    auto outType = RankedTensorType::get(tt.getShape(), et);
    Value classes = dimValue(rewriter, loc, x, 1);
    std::optional<int64_t> ignore = op.getIgnoreIndex();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{outType, outType}, ValueRange{target},
        ValueRange{emptyTensor(rewriter, loc, outType, dims), emptyTensor(rewriter, loc, outType, dims)},
        SmallVector<AffineMap>{id, id, id}, SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value c64 = castScalar(b, l, a[0], b.getI64Type());
          Value keep = arith::ConstantOp::create(b, l, b.getBoolAttr(true));
          if (ignore)
            keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, c64,
                                         arith::ConstantOp::create(b, l, b.getI64IntegerAttr(*ignore)));
          // Clamped so that an ignored or bad class never reads out of bounds.
          Value c = arith::IndexCastOp::create(b, l, b.getIndexType(), c64);
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          c = arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, c, zero),
                                     arith::SubIOp::create(b, l, classes, arith::ConstantIndexOp::create(b, l, 1)));
          SmallVector<Value> coords = {linalg::IndexOp::create(b, l, 0), c};
          for (int64_t d = 1; d < rank; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          Value v = tensor::ExtractOp::create(b, l, x, coords);
          Value w = weight ? (Value)tensor::ExtractOp::create(b, l, weight, ValueRange{c})
                           : scalarConstant(b, l, et, 1);
          w = arith::SelectOp::create(b, l, keep, w, scalarConstant(b, l, et, 0));
          Value loss = arith::NegFOp::create(b, l, mulValues(b, l, v, w));
          linalg::YieldOp::create(b, l, ValueRange{loss, w});
        });
    Value loss = generic.getResult(0), weights = generic.getResult(1);
    StringRef reduction = op.getReduction();
    if (reduction == "none") {
      rewriter.replaceOp(op, loss);
      return success();
    }
    SmallVector<bool> all(rank, true);
    Value zero = scalarConstant(rewriter, loc, et, 0);
    Value sum = reduce(rewriter, loc, loss, all, zero, sumCombine());
    if (reduction == "mean") {
      Value wsum = reduce(rewriter, loc, weights, all, zero, sumCombine());
      sum = buildElementwise(rewriter, loc, cast<RankedTensorType>(sum.getType()), ValueRange{sum, wsum},
                             [](OpBuilder &b, Location l, ValueRange a) { return divValues(b, l, a[0], a[1]); });
    }
    rewriter.replaceOp(op, sum);
    return success();
  }
};

struct LayerNormPattern : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t rank = xt.getRank();
    Type et = xt.getElementType();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    SmallVector<bool> reduced = reducedAxes(rank, axis, rank);
    auto [mean, rstd] = normStatistics(rewriter, loc, x, reduced, op.getEpsilon().convertToDouble());
    // Scale and bias broadcast numpy-style against the normalized axes.
    auto trailingMap = [&](Value v) {
      return broadcastMap(cast<RankedTensorType>(v.getType()), xt, ctx);
    };
    SmallVector<std::pair<Value, AffineMap>> others = {
        {adaptor.getScale(), trailingMap(adaptor.getScale())}};
    bool hasBias = (bool)adaptor.getBias();
    if (hasBias)
      others.push_back({adaptor.getBias(), trailingMap(adaptor.getBias())});
    Value y = mapWithReduced(rewriter, loc, x, reduced, ValueRange{mean, rstd}, others,
                             [hasBias](OpBuilder &b, Location l, ValueRange a) {
                               Value n = mulValues(b, l, subValues(b, l, a[0], a[1]), a[2]);
                               n = mulValues(b, l, n, a[3]);
                               return hasBias ? addValues(b, l, n, a[4]) : n;
                             });
    auto statType = cast<RankedTensorType>(op.getMean().getType());
    rewriter.replaceOp(op, {y, toResultShape(rewriter, loc, mean, statType, reduced),
                            toResultShape(rewriter, loc, rstd, statType, reduced)});
    return success();
  }
};

/// RMSNormalization: one reduction (the sum of squares per row) and one
/// elementwise pass x * rsqrt(sum / n + eps) * scale.
struct RmsNormPattern : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t rank = xt.getRank();
    Type et = xt.getElementType();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    SmallVector<bool> reduced = reducedAxes(rank, axis, rank);
    Value count = reducedCount(rewriter, loc, x, reduced, et);
    Value sumSq = reduce(rewriter, loc, x, reduced, scalarConstant(rewriter, loc, et, 0), sumCombine(), {},
                         [](OpBuilder &b, Location l, ValueRange a) { return mulValues(b, l, a[0], a[0]); });
    Value eps = scalarConstant(rewriter, loc, et, op.getEpsilon().convertToDouble());
    Value rstd = buildElementwise(rewriter, loc, cast<RankedTensorType>(sumSq.getType()), sumSq,
                                  [count, eps](OpBuilder &b, Location l, ValueRange a) -> Value {
                                    Value meanSq = divValues(b, l, a[0], count);
                                    return math::RsqrtOp::create(b, l, addValues(b, l, meanSq, eps));
                                  });
    SmallVector<std::pair<Value, AffineMap>> others;
    bool hasScale = (bool)adaptor.getScale();
    if (hasScale)
      others.push_back({adaptor.getScale(),
                        broadcastMap(cast<RankedTensorType>(adaptor.getScale().getType()), xt, getContext())});
    Value y = mapWithReduced(rewriter, loc, x, reduced, ValueRange{rstd}, others,
                             [hasScale](OpBuilder &b, Location l, ValueRange a) {
                               Value n = mulValues(b, l, a[0], a[1]);
                               return hasScale ? mulValues(b, l, n, a[2]) : n;
                             });
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// InstanceNormalization: mean and variance per (n, c) over the spatial axes,
/// then scale and bias per channel.
struct InstanceNormPattern : OpConversionPattern<InstanceNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(InstanceNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t rank = xt.getRank();
    Type et = xt.getElementType();
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    auto [mean, rstd] = normStatistics(rewriter, loc, x, reduced, op.getEpsilon().convertToDouble());
    AffineMap channel = AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    Value y = mapWithReduced(rewriter, loc, x, reduced, ValueRange{mean, rstd},
                             {{adaptor.getScale(), channel}, {adaptor.getBias(), channel}},
                             [](OpBuilder &b, Location l, ValueRange a) {
                               Value n = mulValues(b, l, subValues(b, l, a[0], a[1]), a[2]);
                               return addValues(b, l, mulValues(b, l, n, a[3]), a[4]);
                             });
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct BatchNormPattern : OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t rank = xt.getRank();
    Value eps = scalarConstant(rewriter, loc, xt.getElementType(),
                               op.getEpsilon().convertToDouble());
    // Per channel first: a = scale / sqrt(var + eps), b = bias - mean * a
    // (C values), then y = x * a + b per element. Constant parameters never
    // get here: the graph canonicalizer folds them into a multiply-add.
    auto paramType = cast<RankedTensorType>(adaptor.getScale().getType());
    Value a = buildElementwise(rewriter, loc, paramType,
                               ValueRange{adaptor.getScale(), adaptor.getVariance()},
                               [eps](OpBuilder &b, Location l, ValueRange v) -> Value {
                                 Value inv = math::RsqrtOp::create(b, l, addValues(b, l, v[1], eps));
                                 return mulValues(b, l, v[0], inv);
                               });
    Value shift = buildElementwise(rewriter, loc, paramType,
                                   ValueRange{adaptor.getBias(), adaptor.getMean(), a},
                                   [](OpBuilder &b, Location l, ValueRange v) {
                                     return subValues(b, l, v[0], mulValues(b, l, v[1], v[2]));
                                   });
    AffineMap channel = AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    SmallVector<std::pair<Value, AffineMap>> params = {{a, channel}, {shift, channel}};
    SmallVector<bool> none(rank, false);
    Value y = mapWithReduced(rewriter, loc, x, none, {}, params,
                             [](OpBuilder &b, Location l, ValueRange v) {
                               return addValues(b, l, mulValues(b, l, v[0], v[1]), v[2]);
                             });
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct GlobalAveragePoolPattern : OpConversionPattern<GlobalAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GlobalAveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    Type et = xt.getElementType();
    SmallVector<bool> reduced(xt.getRank(), true);
    reduced[0] = reduced[1] = false;
    Value sum = reduce(rewriter, loc, x, reduced, scalarConstant(rewriter, loc, et, 0), sumCombine());
    Value mean = divideBy(rewriter, loc, sum, reducedCount(rewriter, loc, x, reduced, et));
    rewriter.replaceOp(op, toResultShape(rewriter, loc, mean,
                                         cast<RankedTensorType>(op.getType()), reduced));
    return success();
  }
};

/// 2-D pooling with unit stride along W and static sizes as whole-row vector
/// operations: out[n, c, oh, :] combines the rows x[n, c, oh*sh + kh*dh,
/// kw*dw : kw*dw + OW] over the window, in registers. LLVM does not vectorize
/// the scalar loop (it cannot prove input and output apart). Null when the
/// shapes do not fit.
static Value rowVectorPool(OpBuilder &b, Location loc, Value padded, Value init, RankedTensorType rt,
                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations, bool isMax) {
  if (rt.getRank() != 4 || strides[1] != 1 || !isa<FloatType>(rt.getElementType()))
    return {};
  for (int64_t i = 1; i < 4; ++i)
    if (rt.isDynamicDim(i))
      return {};
  int64_t channels = rt.getDimSize(1), oh = rt.getDimSize(2), ow = rt.getDimSize(3);
  if (ow < 4)
    return {};
  Type et = rt.getElementType();
  auto rowType = VectorType::get({ow}, et);
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  SmallVector<OpFoldResult> ubs = {tensor::getMixedSize(b, loc, init, 0), b.getIndexAttr(channels)};
  return forallBlocks(b, loc, init, ubs, {oh, ow}, [&](OpBuilder &fb, ValueRange ivs, Value plane) {
    Value n = ivs[0], ch = ivs[1];
    Value pad = arith::ConstantOp::create(fb, loc, fb.getZeroAttr(et));
    SmallVector<bool> inBounds = {true};
    auto rows = scf::ForOp::create(fb, loc, c(fb, 0), c(fb, oh), c(fb, 1), ValueRange{plane});
    OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
    Value ioh = rows.getInductionVar();
    Value acc = vector::BroadcastOp::create(rb, loc, rowType,
                                            isMax ? lowestValue(rb, loc, et) : scalarConstant(rb, loc, et, 0));
    for (int64_t kh = 0; kh < kernel[0]; ++kh)
      for (int64_t kw = 0; kw < kernel[1]; ++kw) {
        Value row = arith::AddIOp::create(rb, loc, arith::MulIOp::create(rb, loc, ioh, c(rb, strides[0])),
                                          c(rb, kh * dilations[0]));
        Value v = vector::TransferReadOp::create(rb, loc, rowType, padded,
                                                 ValueRange{n, ch, row, c(rb, kw * dilations[1])}, pad, inBounds);
        if (isMax) {
          Value greater = arith::CmpFOp::create(rb, loc, arith::CmpFPredicate::OGT, v, acc);
          acc = arith::SelectOp::create(rb, loc, greater, v, acc);
        } else {
          acc = arith::AddFOp::create(rb, loc, acc, v);
        }
      }
    Value written = vector::TransferWriteOp::create(rb, loc, acc, rows.getRegionIterArg(0),
                                                    ValueRange{ioh, c(rb, 0)}, inBounds)
                        .getResult();
    scf::YieldOp::create(rb, loc, written);
    return rows.getResult(0);
  });
}

/// Max and average pooling: a window reduction over a padded input; the
/// average divides by the count ONNX prescribes for each output position.
template <typename OpTy>
struct PoolPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool isMax = std::is_same_v<OpTy, MaxPoolOp>;
    Location loc = op.getLoc();
    MLIRContext *ctx = this->getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = xt.getElementType();
    int64_t spatial = xt.getRank() - 2;
    ArrayRef<int64_t> kernel = op.getKernelShape(), pads = op.getPads(),
                      strides = op.getStrides(), dilations = op.getDilations();
    Value padValue = isMax ? lowestValue(rewriter, loc, et) : scalarConstant(rewriter, loc, et, 0);
    SmallVector<OpFoldResult> low(2, rewriter.getIndexAttr(0)), high(2, rewriter.getIndexAttr(0));
    SmallVector<Value> ceilDims(spatial); // run-time output sizes with ceil_mode
    bool anyPad = false;
    auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    // auto_pad SAME_* kept for run time (dynamic spatial sizes): the pads
    // are values, `pads` is ignored.
    std::optional<StringRef> autoPad = op.getAutoPad();
    SmallVector<Value> runTimePads(2 * spatial);
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = xt.getDimSize(2 + i), out = rt.getDimSize(2 + i);
      int64_t padBegin = pads[i], padEnd = pads[spatial + i];
      int64_t reach = (kernel[i] - 1) * dilations[i] + 1;
      if (autoPad) {
        auto [begin, end] = samePads(rewriter, loc, dimValue(rewriter, loc, x, 2 + i), c(reach), strides[i],
                                     *autoPad == "SAME_UPPER");
        runTimePads[i] = begin;
        runTimePads[spatial + i] = end;
        low.push_back(begin);
        high.push_back(end);
        anyPad = true;
        continue;
      }
      low.push_back(rewriter.getIndexAttr(padBegin));
      if (in != ShapedType::kDynamic && out != ShapedType::kDynamic) {
        // ceil_mode windows may run past the end padding.
        int64_t extra = std::max<int64_t>(0, (out - 1) * strides[i] + reach - (in + padBegin + padEnd));
        high.push_back(rewriter.getIndexAttr(padEnd + extra));
        anyPad |= padBegin || padEnd || extra;
        continue;
      }
      anyPad |= padBegin || padEnd || op.getCeilMode();
      if (!op.getCeilMode()) {
        high.push_back(rewriter.getIndexAttr(padEnd));
        continue;
      }
      // A dynamic size with ceil_mode: the rule of slidingWindowSize at run
      // time (the last window starts inside the input or the begin padding),
      // and end padding for the windows that run past the input.
      Value inV = dimValue(rewriter, loc, x, 2 + i);
      Value total = arith::AddIOp::create(rewriter, loc, inV, c(padBegin + padEnd));
      Value span = arith::SubIOp::create(rewriter, loc, total, c(reach));
      Value outV = arith::AddIOp::create(rewriter, loc, arith::CeilDivSIOp::create(rewriter, loc, span, c(strides[i])), c(1));
      Value lastStart = arith::MulIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, outV, c(1)), c(strides[i]));
      Value pastInput = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, lastStart,
                                              arith::AddIOp::create(rewriter, loc, inV, c(padBegin)));
      outV = arith::SelectOp::create(rewriter, loc, pastInput, arith::SubIOp::create(rewriter, loc, outV, c(1)), outV);
      Value empty = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, span, c(0));
      outV = arith::SelectOp::create(rewriter, loc, empty, c(0), outV);
      Value needed = arith::AddIOp::create(
          rewriter, loc, arith::MulIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, outV, c(1)), c(strides[i])),
          c(reach));
      Value extra = arith::MaxSIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, needed, total), c(0));
      high.push_back(arith::AddIOp::create(rewriter, loc, extra, c(padEnd)).getResult());
      ceilDims[i] = outV;
    }
    Value padded = anyPad ? (Value)tensor::PadOp::create(rewriter, loc, Type(), x, low, high, padValue) : x;

    SmallVector<Value> dims = {dimValue(rewriter, loc, x, 0), dimValue(rewriter, loc, x, 1)};
    for (int64_t i = 0; i < spatial; ++i) {
      if (!rt.isDynamicDim(2 + i)) {
        dims.push_back(arith::ConstantIndexOp::create(rewriter, loc, rt.getDimSize(2 + i)));
        continue;
      }
      dims.push_back(ceilDims[i] ? ceilDims[i]
                                 : windowCount(rewriter, loc, dimValue(rewriter, loc, padded, 2 + i), kernel[i],
                                               strides[i], dilations[i]));
    }
    Value init = filledTensor(rewriter, loc, rt, dims, padValue);
    // The window's extent comes from a shape-only operand, as linalg does.
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);
    int64_t numDims = 2 + 2 * spatial;
    // Logical dims n, c, o_1..o_s, k_1..k_s; the last output axis is moved
    // innermost so that the window loops run over contiguous rows that
    // vectorize, instead of short scalar window loops.
    int64_t lastOut = 1 + spatial;
    auto position = [&](int64_t i) {
      return i == lastOut ? numDims - 1 : (i < lastOut ? i : i - 1);
    };
    auto d = [&](int64_t i) { return getAffineDimExpr(position(i), ctx); };
    SmallVector<AffineExpr> xe = {d(0), d(1)}, ke, oe = {d(0), d(1)};
    for (int64_t i = 0; i < spatial; ++i) {
      xe.push_back(d(2 + i) * strides[i] + d(2 + spatial + i) * dilations[i]);
      ke.push_back(d(2 + spatial + i));
      oe.push_back(d(2 + i));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, xe, ctx),
                                   AffineMap::get(numDims, 0, ke, ctx),
                                   AffineMap::get(numDims, 0, oe, ctx)};
    SmallVector<IteratorType> iters(numDims, IteratorType::reduction);
    for (int64_t i = 0; i < 2 + spatial; ++i)
      iters[position(i)] = IteratorType::parallel;
    Value pooled = rowVectorPool(rewriter, loc, padded, init, rt, kernel, strides, dilations, isMax);
    if (!pooled)
      pooled = linalg::GenericOp::create(
                   rewriter, loc, rt, ValueRange{padded, window}, ValueRange{init}, maps, iters,
                   [&](OpBuilder &nb, Location nl, ValueRange args) {
                     Value v = isMax ? maxValues(nb, nl, args[2], args[0])
                                     : addValues(nb, nl, args[2], args[0]);
                     linalg::YieldOp::create(nb, nl, v);
                   })
                   .getResult(0);
    if constexpr (isMax) {
      rewriter.replaceOp(op, pooled);
    } else {
      bool includePad = op.getCountIncludePad() != 0;
      SmallVector<Value> inDims;
      for (int64_t i = 0; i < spatial; ++i)
        inDims.push_back(dimValue(rewriter, loc, x, 2 + i));
      Value result = buildElementwise(
          rewriter, loc, rt, pooled, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            // count = #{j in [0,k) : lo <= o*s - padBegin + j*d < hi}
            Value count = arith::ConstantIndexOp::create(b, l, 1);
            for (int64_t i = 0; i < spatial; ++i) {
              auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
              Value o = linalg::IndexOp::create(b, l, 2 + i);
              Value padBegin = autoPad ? runTimePads[i] : (Value)c(pads[i]);
              Value start = arith::SubIOp::create(b, l, arith::MulIOp::create(b, l, o, c(strides[i])), padBegin);
              Value lo = !includePad ? (Value)c(0)
                         : autoPad   ? (Value)arith::SubIOp::create(b, l, c(0), padBegin)
                                     : (Value)c(-pads[i]);
              Value padEnd = autoPad ? runTimePads[spatial + i] : Value();
              if (includePad && !padEnd)
                padEnd = c(pads[spatial + i]);
              Value hi = includePad ? (Value)arith::AddIOp::create(b, l, inDims[i], padEnd) : inDims[i];
              Value jmin = arith::CeilDivSIOp::create(b, l, arith::SubIOp::create(b, l, lo, start), c(dilations[i]));
              jmin = arith::MaxSIOp::create(b, l, jmin, c(0));
              Value jmax = arith::FloorDivSIOp::create(
                  b, l, arith::SubIOp::create(b, l, arith::SubIOp::create(b, l, hi, c(1)), start), c(dilations[i]));
              jmax = arith::MinSIOp::create(b, l, jmax, c(kernel[i] - 1));
              Value n = arith::AddIOp::create(b, l, arith::SubIOp::create(b, l, jmax, jmin), c(1));
              n = arith::MaxSIOp::create(b, l, n, c(1));
              count = arith::MulIOp::create(b, l, count, n);
            }
            Value cnt = arith::IndexCastOp::create(b, l, b.getI64Type(), count);
            return divValues(b, l, a[0], castScalar(b, l, cnt, et));
          });
      rewriter.replaceOp(op, result);
    }
    return success();
  }
};

/// nhwc_pool: out[n, oh, ow, c] combines x[n, oh*s + kh*d, ow*s + kw*d, c]
/// over the window in vectors of 8 channels (contiguous for any stride),
/// in registers across the taps; an average then divides by the window size.
struct NhwcPoolPattern : OpConversionPattern<NhwcPoolOp> {
  NhwcPoolPattern(MLIRContext *ctx, int64_t vectorBits) : OpConversionPattern(ctx), vectorBits(vectorBits) {}
  int64_t vectorBits;
  LogicalResult
  matchAndRewrite(NhwcPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    if (!isa<FloatType>(et) || rt.isDynamicDim(1) || rt.isDynamicDim(2) || rt.isDynamicDim(3))
      return rewriter.notifyMatchFailure(op, "nhwc_pool lowers float pooling of static sizes");
    bool isMax = op.getKind() == "max";
    ArrayRef<int64_t> kernel = op.getKernelShape(), pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    Value padValue = isMax ? lowestValue(rewriter, loc, et) : scalarConstant(rewriter, loc, et, 0);
    Value x = adaptor.getInput();
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
      SmallVector<OpFoldResult> low = {rewriter.getIndexAttr(0), rewriter.getIndexAttr(pads[0]),
                                       rewriter.getIndexAttr(pads[1]), rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> high = {rewriter.getIndexAttr(0), rewriter.getIndexAttr(pads[2]),
                                        rewriter.getIndexAttr(pads[3]), rewriter.getIndexAttr(0)};
      x = tensor::PadOp::create(rewriter, loc, Type(), x, low, high, padValue);
    }
    int64_t lanes = channelLanes(vectorBits, rt.getDimSize(3), et);
    auto vecType = VectorType::get({lanes}, et);
    ChannelWindow window;
    window.width = lanes;
    window.kernel = kernel;
    window.strides = strides;
    window.dilations = dilations;
    window.start = [&](OpBuilder &nb, Value) -> Value { return vector::BroadcastOp::create(nb, loc, vecType, padValue); };
    window.step = [&](OpBuilder &nb, Value acc, Value v, Value) -> Value {
      return isMax ? maxValues(nb, loc, v, acc) : addValues(nb, loc, acc, v);
    };
    // Outside the `if`: the lambda reads it when the kernel is built, below.
    Value count;
    if (!isMax) {
      count = vector::BroadcastOp::create(rewriter, loc, vecType,
                                          scalarConstant(rewriter, loc, et, double(kernel[0] * kernel[1])));
      window.finish = [&](OpBuilder &nb, Value acc, Value) -> Value { return divValues(nb, loc, acc, count); };
    }
    rewriter.replaceOp(op, channelWindowKernel(rewriter, loc, x, rt, window));
    return success();
  }
};

} // namespace

void populateNnLoweringPatterns(RewritePatternSet &patterns, bool rowVectors, int64_t vectorBits) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReducePattern<ReduceMeanOp>, ReducePattern<ReduceSumOp>, ReducePattern<ReduceMaxOp>,
               ReducePattern<ReduceMinOp>, ReducePattern<ReduceProdOp>, ReducePattern<ReduceL1Op>,
               ReducePattern<ReduceL2Op>, ReducePattern<ReduceSumSquareOp>, ReducePattern<ReduceLogSumOp>,
               SoftmaxLikePattern<SoftmaxOp>, SoftmaxLikePattern<LogSoftmaxOp>>(
      ctx, rowVectors ? (vectorBits >= 512 ? 16 : 8) : 0);
  patterns.add<ReduceLogSumExpPattern, DynamicReducePattern, ArgPattern<ArgMaxOp>, ArgPattern<ArgMinOp>,
               InstanceNormPattern, HardmaxPattern, CumSumPattern, NllLossPattern, LayerNormPattern, RmsNormPattern,
               BatchNormPattern, GlobalAveragePoolPattern, PoolPattern<MaxPoolOp>, PoolPattern<AveragePoolOp>>(ctx);
  patterns.add<NhwcPoolPattern>(ctx, vectorBits);
}

} // namespace kiln
