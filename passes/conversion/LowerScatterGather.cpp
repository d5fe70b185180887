// graph index-driven ops (GatherND, ScatterElements, ScatterND, TopK) and Einsum -> linalg.generic on tensors.
//
// The scatters are written as gathers: each output element reduces, in a
// linalg.generic, over the update positions that can reach it and combines the
// ones whose index matches. Every write then stays inside the output's
// iteration space, so no index value, however wrong, can write out of bounds,
// and the loops stay parallel over the output (work items for the runtime).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

Value idx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// An index element (i32/i64) as `index`, negative values counting back from `size` (ONNX).
Value wrapIndex(OpBuilder &b, Location l, Value raw, Value size) {
  Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, idx(b, l, 0));
  return arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, size), i);
}

/// `i` clamped into [0, size - 1].
Value clampIndex(OpBuilder &b, Location l, Value i, Value size) {
  i = arith::MaxSIOp::create(b, l, i, idx(b, l, 0));
  return arith::MinSIOp::create(b, l, i, arith::SubIOp::create(b, l, size, idx(b, l, 1)));
}

/// The linalg.index values of dims [0, n) of the enclosing generic.
SmallVector<Value> loopIndices(OpBuilder &b, Location l, int64_t n) {
  SmallVector<Value> c;
  for (int64_t d = 0; d < n; ++d)
    c.push_back(linalg::IndexOp::create(b, l, d));
  return c;
}

/// Combines the current value with an update per the scatter `reduction`.
Value combine(OpBuilder &b, Location l, StringRef reduction, Value acc, Value update) {
  if (reduction == "add")
    return addValues(b, l, acc, update);
  if (reduction == "mul")
    return mulValues(b, l, acc, update);
  if (reduction == "max")
    return maxValues(b, l, acc, update);
  if (reduction == "min")
    return minValues(b, l, acc, update);
  return update; // none
}

/// GatherND: out[b..., q..., t...] = data[b..., indices[b..., q..., :], t...].
/// Out-of-range coordinates are clamped to the axis (like Gather), so a bad
/// index reads a wrong element but never outside the tensor.
struct GatherNDPattern : OpConversionPattern<GatherNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto rt = cast<RankedTensorType>(op.getType());
    auto it = cast<RankedTensorType>(indices.getType());
    int64_t q = it.getRank(), batch = op.getBatchDims(), k = it.getDimSize(q - 1);
    int64_t r = cast<RankedTensorType>(data.getType()).getRank(), rank = rt.getRank();
    SmallVector<Value> dataDims, dims;
    for (int64_t i = 0; i < r; ++i)
      dataDims.push_back(dimValue(rewriter, loc, data, i));
    for (int64_t i = 0; i < q - 1; ++i)
      dims.push_back(dimValue(rewriter, loc, indices, i));
    for (int64_t i = batch + k; i < r; ++i)
      dims.push_back(dataDims[i]);
    // Clamping needs an element to clamp to; guard reads only where an
    // addressed axis may be empty (not statically positive).
    bool mayBeEmpty = false;
    for (int64_t i = 0; i < batch + k; ++i)
      mayBeEmpty |= !(cast<RankedTensorType>(data.getType()).getDimSize(i) > 0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, rt, ValueRange{}, ValueRange{emptyTensor(rewriter, loc, rt, dims)},
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, getContext())},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> c = loopIndices(b, l, rank);
          SmallVector<Value> src;
          // Batch coordinates come from the indices' extent: clamped too, in
          // case a dynamic batch dim of indices exceeds the data's.
          for (int64_t j = 0; j < batch; ++j)
            src.push_back(clampIndex(b, l, c[j], dataDims[j]));
          SmallVector<Value> at(c.begin(), c.begin() + (q - 1));
          at.push_back(Value());
          for (int64_t j = 0; j < k; ++j) {
            at.back() = idx(b, l, j);
            Value raw = tensor::ExtractOp::create(b, l, indices, at);
            Value size = dataDims[batch + j];
            src.push_back(clampIndex(b, l, wrapIndex(b, l, raw, size), size));
          }
          src.append(c.begin() + (q - 1), c.end());
          if (!mayBeEmpty) {
            linalg::YieldOp::create(b, l, tensor::ExtractOp::create(b, l, data, src).getResult());
            return;
          }
          // An empty addressed axis has no element to clamp to: yield zero.
          Value nonEmpty = arith::ConstantIntOp::create(b, l, 1, 1);
          for (int64_t j = 0; j < batch + k; ++j)
            nonEmpty = arith::AndIOp::create(
                b, l, nonEmpty, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, dataDims[j], idx(b, l, 0)));
          auto guarded = scf::IfOp::create(
              b, l, nonEmpty,
              [&](OpBuilder &tb, Location tl) {
                scf::YieldOp::create(tb, tl, tensor::ExtractOp::create(tb, tl, data, src).getResult());
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, scalarConstant(eb, el, rt.getElementType(), 0));
              });
          linalg::YieldOp::create(b, l, guarded.getResult(0));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// ScatterElements: out = data; out[p with axis = indices[u]] (op)= updates[u].
/// Lowered on the slice of data that the updates can reach (the updates'
/// extent on every axis but `axis`): each element of the slice reduces over
/// the updates' positions along the axis and combines those whose index names
/// it, in order (for "none", the last one wins). An index outside the axis
/// names no element and is skipped.
struct ScatterElementsPattern : OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value data = adaptor.getData(), indices = adaptor.getIndices(), updates = adaptor.getUpdates();
    int64_t rank = cast<RankedTensorType>(data.getType()).getRank();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    StringRef reduction = op.getReduction();
    Value axisDim = dimValue(rewriter, loc, data, axis);
    // The reachable extent: the updates' (ONNX requires them no larger than
    // data), cut to data's so that even a malformed shape stays in bounds.
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)), sizes, updSizes,
        strides(rank, rewriter.getIndexAttr(1));
    auto minSize = [&](Value x, Value y) -> OpFoldResult {
      std::optional<int64_t> sx = getConstantIntValue(getAsOpFoldResult(x)),
                             sy = getConstantIntValue(getAsOpFoldResult(y));
      if (sx && sy)
        return rewriter.getIndexAttr(std::min(*sx, *sy));
      return arith::MinSIOp::create(rewriter, loc, x, y).getResult();
    };
    for (int64_t i = 0; i < rank; ++i) {
      OpFoldResult u = minSize(dimValue(rewriter, loc, indices, i), dimValue(rewriter, loc, updates, i));
      if (i == axis) {
        sizes.push_back(getAsOpFoldResult(axisDim));
        updSizes.push_back(u);
        continue;
      }
      OpFoldResult s = minSize(getValueOrCreateConstantIndexOp(rewriter, loc, u),
                               dimValue(rewriter, loc, data, i));
      sizes.push_back(s);
      updSizes.push_back(s);
    }
    Value slice = tensor::ExtractSliceOp::create(rewriter, loc, data, offsets, sizes, strides);
    indices = tensor::ExtractSliceOp::create(rewriter, loc, indices, offsets, updSizes, strides);
    updates = tensor::ExtractSliceOp::create(rewriter, loc, updates, offsets, updSizes, strides);
    // Loop dims: the slice's, then j along the updates' axis.
    SmallVector<AffineExpr> in, out;
    for (int64_t i = 0; i < rank; ++i) {
      in.push_back(getAffineDimExpr(i == axis ? rank : i, ctx));
      out.push_back(getAffineDimExpr(i, ctx));
    }
    AffineMap inMap = AffineMap::get(rank + 1, 0, in, ctx), outMap = AffineMap::get(rank + 1, 0, out, ctx);
    SmallVector<IteratorType> iters(rank + 1, IteratorType::parallel);
    iters[rank] = IteratorType::reduction;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, slice.getType(), ValueRange{indices, updates}, ValueRange{slice},
        SmallVector<AffineMap>{inMap, inMap, outMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value target = wrapIndex(b, l, a[0], axisDim);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, target,
                                            linalg::IndexOp::create(b, l, axis));
          Value next = combine(b, l, reduction, a[2], a[1]);
          linalg::YieldOp::create(b, l, arith::SelectOp::create(b, l, hit, next, a[2]).getResult());
        });
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(op, generic.getResult(0), data, offsets, sizes,
                                                       strides);
    return success();
  }
};

/// ScatterND: out = data; out[indices[q, :], t...] (op)= updates[q, t...].
/// Each output element reduces over the index tuples q and combines the
/// updates whose tuple names it, in order (for "none", the last one wins). A
/// coordinate outside its axis names no element and is skipped.
struct ScatterNDPattern : OpConversionPattern<ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value data = adaptor.getData(), indices = adaptor.getIndices(), updates = adaptor.getUpdates();
    auto dt = cast<RankedTensorType>(data.getType());
    int64_t r = dt.getRank(), q = cast<RankedTensorType>(indices.getType()).getRank();
    int64_t k = cast<RankedTensorType>(indices.getType()).getDimSize(q - 1);
    StringRef reduction = op.getReduction();
    SmallVector<Value> dataDims;
    for (int64_t i = 0; i < r; ++i)
      dataDims.push_back(dimValue(rewriter, loc, data, i));
    // Loop dims: the output's r, then the q - 1 dims of the index tuples.
    SmallVector<AffineExpr> upd, out;
    for (int64_t i = 0; i < q - 1; ++i)
      upd.push_back(getAffineDimExpr(r + i, ctx));
    for (int64_t i = k; i < r; ++i)
      upd.push_back(getAffineDimExpr(i, ctx));
    for (int64_t i = 0; i < r; ++i)
      out.push_back(getAffineDimExpr(i, ctx));
    SmallVector<IteratorType> iters(r + q - 1, IteratorType::reduction);
    for (int64_t i = 0; i < r; ++i)
      iters[i] = IteratorType::parallel;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, dt, ValueRange{updates}, ValueRange{data},
        SmallVector<AffineMap>{AffineMap::get(r + q - 1, 0, upd, ctx), AffineMap::get(r + q - 1, 0, out, ctx)},
        iters, [&](OpBuilder &b, Location l, ValueRange a) {
          SmallVector<Value> c = loopIndices(b, l, r + q - 1);
          SmallVector<Value> at(c.begin() + r, c.end());
          at.push_back(Value());
          Value hit = arith::ConstantIntOp::create(b, l, 1, 1);
          for (int64_t j = 0; j < k; ++j) {
            at.back() = idx(b, l, j);
            Value raw = tensor::ExtractOp::create(b, l, indices, at);
            Value coord = wrapIndex(b, l, raw, dataDims[j]);
            hit = arith::AndIOp::create(
                b, l, hit, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, coord, c[j]));
          }
          Value next = combine(b, l, reduction, a[1], a[0]);
          linalg::YieldOp::create(b, l, arith::SelectOp::create(b, l, hit, next, a[1]).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// TopK in two generics over the axis: first each element's rank (how many
/// elements come before it: better values, or equal values at lower
/// indices, so ties keep the lower index first), then each output slot r
/// takes the element of rank r. O(n^2) along the axis; fine for the small
/// axes TopK sees outside of sampling, which the runtime does itself. A NaN
/// is unordered: ranks may then repeat and a slot keep its zero fill, but
/// every read and write stays inside the tensors.
struct TopKPattern : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput(), kTensor = adaptor.getK();
    auto xt = cast<RankedTensorType>(x.getType());
    auto vt = cast<RankedTensorType>(op.getValues().getType());
    auto it = cast<RankedTensorType>(op.getIndices().getType());
    Type et = xt.getElementType(), i64 = rewriter.getI64Type();
    bool isFloat = isa<FloatType>(et), largest = op.getLargest() != 0;
    int64_t rank = xt.getRank();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(dimValue(rewriter, loc, x, i));
    Value n = dims[axis];

    // Loop dims: the element's (or slot's) r dims, then j along the axis.
    SmallVector<AffineExpr> alongJ, own;
    for (int64_t i = 0; i < rank; ++i) {
      alongJ.push_back(getAffineDimExpr(i == axis ? rank : i, ctx));
      own.push_back(getAffineDimExpr(i, ctx));
    }
    AffineMap jMap = AffineMap::get(rank + 1, 0, alongJ, ctx), ownMap = AffineMap::get(rank + 1, 0, own, ctx);
    SmallVector<IteratorType> iters(rank + 1, IteratorType::parallel);
    iters[rank] = IteratorType::reduction;

    auto rankType = RankedTensorType::get(xt.getShape(), i64);
    Value zeros = filledTensor(rewriter, loc, rankType, dims, scalarConstant(rewriter, loc, i64, 0));
    Value ranks = linalg::GenericOp::create(
                      rewriter, loc, rankType, ValueRange{x, x}, ValueRange{zeros},
                      SmallVector<AffineMap>{jMap, ownMap, ownMap}, iters,
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        Value other = a[0], self = a[1];
                        Value better, equal;
                        if (isFloat) {
                          better = arith::CmpFOp::create(
                              b, l, largest ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, other, self);
                          equal = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, other, self);
                        } else {
                          better = arith::CmpIOp::create(
                              b, l, largest ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, other, self);
                          equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, other, self);
                        }
                        Value before = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                                             linalg::IndexOp::create(b, l, rank),
                                                             linalg::IndexOp::create(b, l, axis));
                        Value ahead = arith::OrIOp::create(b, l, better, arith::AndIOp::create(b, l, equal, before));
                        Value one = arith::ExtUIOp::create(b, l, i64, ahead);
                        linalg::YieldOp::create(b, l, arith::AddIOp::create(b, l, a[2], one).getResult());
                      })
                      .getResult(0);

    // The number of slots: the static k, or min(k, n) read at run time.
    SmallVector<Value> outDims(dims);
    if (vt.isDynamicDim(axis)) {
      auto kt = cast<RankedTensorType>(kTensor.getType());
      SmallVector<Value> zerosAt(kt.getRank(), idx(rewriter, loc, 0));
      Value k = tensor::ExtractOp::create(rewriter, loc, kTensor, zerosAt);
      k = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), k);
      k = arith::MaxSIOp::create(rewriter, loc, k, idx(rewriter, loc, 0));
      outDims[axis] = arith::MinSIOp::create(rewriter, loc, k, n);
    } else {
      outDims[axis] = idx(rewriter, loc, vt.getDimSize(axis));
    }
    Value valuesInit = filledTensor(rewriter, loc, vt, outDims, scalarConstant(rewriter, loc, et, 0));
    Value indicesInit = filledTensor(rewriter, loc, it, outDims, scalarConstant(rewriter, loc, i64, 0));
    auto pick = linalg::GenericOp::create(
        rewriter, loc, TypeRange{vt, it}, ValueRange{x, ranks}, ValueRange{valuesInit, indicesInit},
        SmallVector<AffineMap>{jMap, jMap, ownMap, ownMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value slot = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, axis));
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[1], slot);
          Value j = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, rank));
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(b, l, hit, a[0], a[2]).getResult(),
                                             arith::SelectOp::create(b, l, hit, j, a[3]).getResult()});
        });
    rewriter.replaceOp(op, pick.getResults());
    return success();
  }
};

/// Einsum as one linalg.generic: the result's labels are the parallel loop
/// dims, every other label a reduction dim; each operand is read through the
/// map of its labels (a repeated label reads a diagonal), and the body adds
/// the product of the operands to the accumulator.
struct EinsumPattern : OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    ValueRange inputs = adaptor.getInputs();
    auto rt = cast<RankedTensorType>(op.getType());
    SmallVector<int64_t> ranks;
    for (Value v : inputs)
      ranks.push_back(cast<RankedTensorType>(v.getType()).getRank());
    auto spec = parseEinsum(op.getEquation(), ranks);
    if (failed(spec))
      return rewriter.notifyMatchFailure(op, "invalid einsum equation");
    llvm::DenseMap<int64_t, unsigned> loopOf;
    SmallVector<int64_t> loopLabels;
    for (int64_t label : spec->output) {
      loopOf[label] = loopLabels.size();
      loopLabels.push_back(label);
    }
    int64_t outLoops = loopLabels.size();
    for (const auto &labels : spec->inputs)
      for (int64_t label : labels)
        if (loopOf.try_emplace(label, loopLabels.size()).second)
          loopLabels.push_back(label);
    int64_t loops = loopLabels.size();
    // An ellipsis dim of static size 1 broadcasts (reads index 0) where
    // another operand has that label larger.
    llvm::DenseMap<int64_t, int64_t> largest;
    for (auto [v, labels] : llvm::zip(inputs, spec->inputs))
      for (auto [dim, label] : llvm::enumerate(labels)) {
        int64_t size = cast<RankedTensorType>(v.getType()).getDimSize(dim);
        int64_t &l = largest.try_emplace(label, 1).first->second;
        if (l != ShapedType::kDynamic && (size == ShapedType::kDynamic || size > l))
          l = size;
      }
    auto broadcasts = [&](Value v, int64_t dim, int64_t label) {
      return label >= EinsumSpec::kEllipsisLabel &&
             cast<RankedTensorType>(v.getType()).getDimSize(dim) == 1 && largest[label] != 1;
    };
    SmallVector<AffineMap> maps;
    for (auto [v, labels] : llvm::zip(inputs, spec->inputs)) {
      SmallVector<AffineExpr> exprs;
      for (auto [dim, label] : llvm::enumerate(labels))
        exprs.push_back(broadcasts(v, dim, label) ? getAffineConstantExpr(0, ctx)
                                                  : getAffineDimExpr(loopOf[label], ctx));
      maps.push_back(AffineMap::get(loops, 0, exprs, ctx));
    }
    SmallVector<AffineExpr> outExprs;
    for (int64_t i = 0; i < outLoops; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
    maps.push_back(AffineMap::get(loops, 0, outExprs, ctx));
    // The result's dims: the size of each label in the first operand that
    // has it and does not broadcast it.
    SmallVector<Value> dims;
    for (int64_t label : spec->output) {
      for (auto [v, labels] : llvm::zip(inputs, spec->inputs)) {
        auto *pos = llvm::find(labels, label);
        if (pos != labels.end() && !broadcasts(v, pos - labels.begin(), label)) {
          dims.push_back(dimValue(rewriter, loc, v, pos - labels.begin()));
          break;
        }
      }
    }
    Type et = rt.getElementType();
    Value init = filledTensor(rewriter, loc, rt, dims, scalarConstant(rewriter, loc, et, 0));
    SmallVector<IteratorType> iters(loops, IteratorType::reduction);
    for (int64_t i = 0; i < outLoops; ++i)
      iters[i] = IteratorType::parallel;
    int64_t numInputs = inputs.size();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, rt, inputs, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value prod = a[0];
          for (int64_t i = 1; i < numInputs; ++i)
            prod = mulValues(b, l, prod, a[i]);
          linalg::YieldOp::create(b, l, addValues(b, l, a[numInputs], prod));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateScatterGatherLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<GatherNDPattern, ScatterElementsPattern, ScatterNDPattern, TopKPattern, EinsumPattern>(
      patterns.getContext());
}

} // namespace kiln
