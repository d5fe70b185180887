// Lowering of the graph ops whose shape-like operands (axes, steps, repeats, pads) are run-time values.
//
// The values are read in @main (tensor.extract, index arithmetic) and size
// dynamic tensor.empty results. ONNX calls bad values (axes out of range,
// sizes that do not fit) errors; the generated code has no way to report one
// from the middle of a run, so each op clamps or falls back to a shape that
// keeps every read inside its buffer (the op descriptions say how).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

Value idx(OpBuilder &b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

/// Element `k` of the 1-D integer or float tensor `t` as an index (floats
/// truncated; NaN and huge values pinned to a range no allocation reaches).
Value readIndex(OpBuilder &b, Location loc, Value t, int64_t k) {
  auto tt = cast<RankedTensorType>(t.getType());
  SmallVector<Value> at(tt.getRank(), idx(b, loc, 0));
  if (tt.getRank() == 1)
    at[0] = idx(b, loc, k);
  Value e = tensor::ExtractOp::create(b, loc, t, at);
  if (auto ft = dyn_cast<FloatType>(e.getType())) {
    Value lo = arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, -4.0e18));
    Value hi = arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, 4.0e18));
    e = arith::MinNumFOp::create(b, loc, arith::MaxNumFOp::create(b, loc, e, lo), hi);
  }
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), castScalar(b, loc, e, b.getI64Type()));
}

Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
Value select(OpBuilder &b, Location loc, Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
Value clamp(OpBuilder &b, Location loc, Value v, Value lo, Value hi) {
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, v, lo), hi);
}

/// An axis value wrapped from the end of a rank-`rank` shape (may still be out of range).
Value wrapAxisValue(OpBuilder &b, Location loc, Value a, int64_t rank) {
  Value neg = cmp(b, loc, arith::CmpIPredicate::slt, a, idx(b, loc, 0));
  return select(b, loc, neg, arith::AddIOp::create(b, loc, a, idx(b, loc, rank)), a);
}

/// For each of `rank` positions, whether one of the axes in the 1-D tensor
/// `axes` names it (after wrapping), and how many positions are named.
std::pair<SmallVector<Value>, Value> namedAxes(OpBuilder &b, Location loc, Value axes, int64_t rank) {
  int64_t n = cast<RankedTensorType>(axes.getType()).getDimSize(0);
  Value f = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  SmallVector<Value> named(rank, f);
  for (int64_t k = 0; k < n; ++k) {
    Value a = wrapAxisValue(b, loc, readIndex(b, loc, axes, k), rank);
    for (int64_t d = 0; d < rank; ++d)
      named[d] = arith::OrIOp::create(b, loc, named[d], cmp(b, loc, arith::CmpIPredicate::eq, a, idx(b, loc, d)));
  }
  Value count = idx(b, loc, 0);
  for (Value v : named)
    count = arith::AddIOp::create(b, loc, count, select(b, loc, v, idx(b, loc, 1), idx(b, loc, 0)));
  return {named, count};
}

Value product(OpBuilder &b, Location loc, ArrayRef<Value> dims) {
  Value p = idx(b, loc, 1);
  for (Value d : dims)
    p = arith::MulIOp::create(b, loc, p, d);
  return p;
}


/// The dims of `inDims` that `keep` selects, in order, as `outRank` values
/// (keep must select exactly outRank of them for the result to mean anything).
SmallVector<Value> keptDims(OpBuilder &b, Location loc, ArrayRef<Value> inDims, ArrayRef<Value> keep,
                            int64_t outRank) {
  SmallVector<Value> out(outRank, idx(b, loc, 0));
  Value pos = idx(b, loc, 0);
  for (size_t d = 0; d < inDims.size(); ++d) {
    for (int64_t j = 0; j < outRank; ++j) {
      Value here = arith::AndIOp::create(b, loc, keep[d], cmp(b, loc, arith::CmpIPredicate::eq, pos, idx(b, loc, j)));
      out[j] = select(b, loc, here, inDims[d], out[j]);
    }
    pos = arith::AddIOp::create(b, loc, pos, select(b, loc, keep[d], idx(b, loc, 1), idx(b, loc, 0)));
  }
  return out;
}


/// Slice with run-time axes and steps: start, step and size of every input
/// axis are selected from the entries that name it (later entries win).
struct DynamicStridedSlicePattern : OpConversionPattern<DynamicStridedSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicStridedSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    int64_t n = cast<RankedTensorType>(adaptor.getStarts().getType()).getDimSize(0);
    SmallVector<Value> inDims = dimsOf(b, loc, x), starts(rank, idx(b, loc, 0)), steps(rank, idx(b, loc, 1));
    SmallVector<Value> sizes(inDims);
    Value zero = idx(b, loc, 0), one = idx(b, loc, 1), minusOne = idx(b, loc, -1);
    Value big = idx(b, loc, int64_t(1) << 62), minusBig = idx(b, loc, -(int64_t(1) << 62));
    for (int64_t k = 0; k < n; ++k) {
      Value a = wrapAxisValue(b, loc, readIndex(b, loc, adaptor.getAxes(), k), rank);
      // Steps beyond +-2^62 behave as +-2^62 (one element): no overflow below.
      Value step = clamp(b, loc, readIndex(b, loc, adaptor.getSteps(), k), minusBig, big);
      Value rawStart = clamp(b, loc, readIndex(b, loc, adaptor.getStarts(), k), minusBig, big);
      Value rawEnd = clamp(b, loc, readIndex(b, loc, adaptor.getEnds(), k), minusBig, big);
      Value forward = cmp(b, loc, arith::CmpIPredicate::sgt, step, zero);
      Value stepZero = cmp(b, loc, arith::CmpIPredicate::eq, step, zero);
      Value magnitude = arith::MaxSIOp::create(
          b, loc, select(b, loc, forward, step, arith::SubIOp::create(b, loc, zero, step)), one);
      for (int64_t d = 0; d < rank; ++d) {
        Value dim = inDims[d], last = arith::SubIOp::create(b, loc, dim, one);
        auto wrap = [&](Value v) {
          return select(b, loc, cmp(b, loc, arith::CmpIPredicate::slt, v, zero),
                        arith::AddIOp::create(b, loc, v, dim), v);
        };
        Value s = wrap(rawStart), e = wrap(rawEnd);
        // ONNX clamping: [0, dim] going forward, [0, dim-1] / [-1, dim-1] backward.
        Value sFwd = clamp(b, loc, s, zero, dim), eFwd = clamp(b, loc, e, zero, dim);
        Value sBwd = clamp(b, loc, s, zero, last), eBwd = clamp(b, loc, e, minusOne, last);
        Value nFwd = arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, eFwd, sFwd), magnitude);
        Value nBwd = arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, sBwd, eBwd), magnitude);
        Value count = arith::MaxSIOp::create(b, loc, select(b, loc, forward, nFwd, nBwd), zero);
        count = select(b, loc, stepZero, zero, count);
        Value hit = cmp(b, loc, arith::CmpIPredicate::eq, a, idx(b, loc, d));
        starts[d] = select(b, loc, hit, select(b, loc, forward, sFwd, sBwd), starts[d]);
        steps[d] = select(b, loc, hit, step, steps[d]);
        sizes[d] = select(b, loc, hit, count, sizes[d]);
      }
    }
    Value result = generate(b, loc, rt, sizes, [&](OpBuilder &nb, Location l, ArrayRef<Value> c) -> Value {
      SmallVector<Value> src;
      for (int64_t d = 0; d < rank; ++d)
        src.push_back(arith::AddIOp::create(nb, l, starts[d], arith::MulIOp::create(nb, l, c[d], steps[d])));
      return tensor::ExtractOp::create(nb, l, x, src);
    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Squeeze: the kept dims in order when the axes name `n` distinct size-1
/// dims; otherwise [total, 1, ...] (same elements, never more).
struct DynamicSqueezePattern : OpConversionPattern<DynamicSqueezeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicSqueezeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = xt.getRank(), outRank = rt.getRank();
    SmallVector<Value> inDims = dimsOf(b, loc, x);
    Value total = product(b, loc, inDims);
    if (outRank == 0) {
      // Every axis is squeezed: the one element, or 0 for an empty input.
      if (xt.hasStaticShape() && xt.getNumElements() >= 1) {
        rewriter.replaceOp(op, reshapeTo(b, loc, x, rt, {}));
        return success();
      }
      Value some = cmp(b, loc, arith::CmpIPredicate::sgt, total, idx(b, loc, 0));
      auto read = scf::IfOp::create(
          b, loc, some,
          [&](OpBuilder &nb, Location l) {
            SmallVector<Value> zeros(rank, idx(nb, l, 0));
            scf::YieldOp::create(nb, l, ValueRange{tensor::ExtractOp::create(nb, l, x, zeros)});
          },
          [&](OpBuilder &nb, Location l) {
            scf::YieldOp::create(nb, l, scalarConstant(nb, l, xt.getElementType(), 0));
          });
      rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, rt, read.getResult(0));
      return success();
    }
    auto [named, count] = namedAxes(b, loc, adaptor.getAxes(), rank);
    Value t = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    SmallVector<Value> keep;
    for (Value v : named)
      keep.push_back(arith::XOrIOp::create(b, loc, v, t));
    SmallVector<Value> dims = keptDims(b, loc, inDims, keep, outRank);
    Value valid = arith::AndIOp::create(
        b, loc, cmp(b, loc, arith::CmpIPredicate::eq, count, idx(b, loc, rank - outRank)),
        cmp(b, loc, arith::CmpIPredicate::eq, product(b, loc, dims), total));
    for (int64_t j = 0; j < outRank; ++j)
      dims[j] = select(b, loc, valid, dims[j], j == 0 ? total : idx(b, loc, 1));
    rewriter.replaceOp(op, reshapeTo(b, loc, x, rt, dims));
    return success();
  }
};

/// Unsqueeze: 1 at the named positions, the input dims in order elsewhere;
/// positions that are not `n` distinct ones in range become the first `n`.
struct DynamicUnsqueezePattern : OpConversionPattern<DynamicUnsqueezeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicUnsqueezeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t outRank = rt.getRank();
    int64_t n = cast<RankedTensorType>(adaptor.getAxes().getType()).getDimSize(0);
    SmallVector<Value> inDims = dimsOf(b, loc, x);
    auto [named, count] = namedAxes(b, loc, adaptor.getAxes(), outRank);
    Value valid = cmp(b, loc, arith::CmpIPredicate::eq, count, idx(b, loc, n));
    SmallVector<Value> dims(outRank);
    Value pos = idx(b, loc, 0);
    for (int64_t j = 0; j < outRank; ++j) {
      Value front = arith::ConstantIntOp::create(b, loc, b.getI1Type(), j < n);
      Value inserted = select(b, loc, valid, named[j], front);
      Value d = idx(b, loc, 1);
      for (size_t i = 0; i < inDims.size(); ++i)
        d = select(b, loc, cmp(b, loc, arith::CmpIPredicate::eq, pos, idx(b, loc, i)), inDims[i], d);
      dims[j] = select(b, loc, inserted, idx(b, loc, 1), d);
      pos = arith::AddIOp::create(b, loc, pos, select(b, loc, inserted, idx(b, loc, 0), idx(b, loc, 1)));
    }
    rewriter.replaceOp(op, reshapeTo(b, loc, x, rt, dims));
    return success();
  }
};

struct DynamicTilePattern : OpConversionPattern<DynamicTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    SmallVector<Value> inDims = dimsOf(b, loc, x), outDims;
    for (int64_t i = 0; i < rank; ++i) {
      Value r = arith::MaxSIOp::create(b, loc, readIndex(b, loc, adaptor.getRepeats(), i), idx(b, loc, 0));
      outDims.push_back(arith::MulIOp::create(b, loc, inDims[i], r));
    }
    Value result = generate(b, loc, rt, outDims, [&](OpBuilder &nb, Location l, ArrayRef<Value> c) -> Value {
      SmallVector<Value> src;
      for (int64_t i = 0; i < rank; ++i)
        src.push_back(arith::RemSIOp::create(nb, l, c[i], inDims[i]));
      return tensor::ExtractOp::create(nb, l, x, src);
    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Pad: output coordinate o reads input o - begin, which constant mode
/// replaces by the value outside the input, edge clamps and reflect folds
/// back (periodically, so pads wider than the input still land inside).
struct DynamicPadPattern : OpConversionPattern<DynamicPadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicPadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    StringRef mode = op.getMode();
    bool constant = mode == "constant", reflect = mode == "reflect";
    Value zero = idx(b, loc, 0), one = idx(b, loc, 1);
    SmallVector<Value> inDims = dimsOf(b, loc, x), begins, outDims;
    for (int64_t i = 0; i < rank; ++i) {
      Value lo = readIndex(b, loc, adaptor.getPads(), i), hi = readIndex(b, loc, adaptor.getPads(), rank + i);
      begins.push_back(lo);
      Value d = arith::AddIOp::create(b, loc, inDims[i], arith::AddIOp::create(b, loc, lo, hi));
      d = arith::MaxSIOp::create(b, loc, d, zero);
      // Edge and reflect read the input everywhere: nothing to read, nothing to write.
      if (!constant)
        d = select(b, loc, cmp(b, loc, arith::CmpIPredicate::eq, inDims[i], zero), zero, d);
      outDims.push_back(d);
    }
    Value fill;
    if (constant) {
      auto vt = cast<RankedTensorType>(adaptor.getValue().getType());
      SmallVector<Value> zeros(vt.getRank(), zero);
      fill = tensor::ExtractOp::create(b, loc, adaptor.getValue(), zeros);
    }
    Value result = generate(b, loc, rt, outDims, [&](OpBuilder &nb, Location l, ArrayRef<Value> c) -> Value {
      SmallVector<Value> src;
      Value inside = arith::ConstantIntOp::create(nb, l, nb.getI1Type(), 1);
      for (int64_t i = 0; i < rank; ++i) {
        Value j = arith::SubIOp::create(nb, l, c[i], begins[i]);
        Value last = arith::SubIOp::create(nb, l, inDims[i], one);
        if (constant) {
          inside = arith::AndIOp::create(nb, l, inside, cmp(nb, l, arith::CmpIPredicate::sge, j, zero));
          inside = arith::AndIOp::create(nb, l, inside, cmp(nb, l, arith::CmpIPredicate::sle, j, last));
        } else if (reflect) {
          // Period 2 * (dim - 1); a dim of 1 reflects onto its one element.
          Value period = arith::MaxSIOp::create(nb, l, arith::AddIOp::create(nb, l, last, last), one);
          Value m = arith::RemSIOp::create(nb, l, j, period);
          m = select(nb, l, cmp(nb, l, arith::CmpIPredicate::slt, m, zero), arith::AddIOp::create(nb, l, m, period), m);
          j = select(nb, l, cmp(nb, l, arith::CmpIPredicate::sgt, m, last), arith::SubIOp::create(nb, l, period, m), m);
        }
        src.push_back(clamp(nb, l, j, zero, last));
      }
      if (!constant)
        return tensor::ExtractOp::create(nb, l, x, src);
      // Reads only inside: an empty input is never touched.
      auto read = scf::IfOp::create(
          nb, l, inside,
          [&](OpBuilder &ib, Location il) {
            scf::YieldOp::create(ib, il, ValueRange{tensor::ExtractOp::create(ib, il, x, src)});
          },
          [&](OpBuilder &ib, Location il) { scf::YieldOp::create(ib, il, fill); });
      return read.getResult(0);
    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// splitmix64's finalizer: a counter-based generator, one independent draw per element.
Value mix64(OpBuilder &b, Location loc, Value z) {
  auto c = [&](uint64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), (int64_t)v); };
  auto xorShift = [&](Value v, int64_t s) {
    return arith::XOrIOp::create(b, loc, v, arith::ShRUIOp::create(b, loc, v, c(s)));
  };
  z = arith::MulIOp::create(b, loc, xorShift(z, 30), c(0xBF58476D1CE4E5B9ull));
  z = arith::MulIOp::create(b, loc, xorShift(z, 27), c(0x94D049BB133111EBull));
  return xorShift(z, 31);
}

struct DropoutPattern : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto mt = cast<RankedTensorType>(op.getMask().getType());
    int64_t rank = xt.getRank();
    Type et = xt.getElementType(), f32 = b.getF32Type();
    auto scalar = [&](Value t) {
      auto tt = cast<RankedTensorType>(t.getType());
      SmallVector<Value> zeros(tt.getRank(), idx(b, loc, 0));
      return tensor::ExtractOp::create(b, loc, t, zeros).getResult();
    };
    Value ratio = castScalar(b, loc, scalar(adaptor.getRatio()), f32);
    Value training = scalar(adaptor.getTrainingMode());
    Value oneF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value kept = arith::SubFOp::create(b, loc, oneF, ratio);
    Value scale = select(b, loc, training, arith::DivFOp::create(b, loc, oneF, kept), oneF);
    scale = castScalar(b, loc, scale, et);
    SmallVector<Value> dims = dimsOf(b, loc, x);
    // Row-major strides give each element its counter.
    SmallVector<Value> strides(rank);
    Value stride = idx(b, loc, 1);
    for (int64_t i = rank - 1; i >= 0; --i) {
      strides[i] = stride;
      stride = arith::MulIOp::create(b, loc, stride, dims[i]);
    }
    Value seedBase = arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                                  (int64_t)((uint64_t)op.getSeed() * 0x9E3779B97F4A7C15ull));
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{xt, mt}, ValueRange{x},
        ValueRange{emptyTensor(b, loc, xt, dims), emptyTensor(b, loc, mt, dims)}, SmallVector<AffineMap>(3, id),
        SmallVector<IteratorType>(rank, IteratorType::parallel), [&](OpBuilder &nb, Location l, ValueRange args) {
          Value lin = idx(nb, l, 0);
          for (int64_t d = 0; d < rank; ++d)
            lin = arith::AddIOp::create(nb, l, lin,
                                        arith::MulIOp::create(nb, l, linalg::IndexOp::create(nb, l, d), strides[d]));
          Value counter = arith::AddIOp::create(nb, l, seedBase,
                                                arith::IndexCastOp::create(nb, l, nb.getI64Type(), lin));
          Value bits = arith::ShRUIOp::create(nb, l, mix64(nb, l, counter),
                                              arith::ConstantIntOp::create(nb, l, nb.getI64Type(), 40));
          // 24 random bits: a uniform float in [0, 1), exact in f32.
          Value u = arith::MulFOp::create(nb, l, arith::UIToFPOp::create(nb, l, f32, bits),
                                          arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0f / 16777216.0f)));
          Value drawn = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGE, u, ratio);
          Value untrained = arith::XOrIOp::create(nb, l, training,
                                                  arith::ConstantIntOp::create(nb, l, nb.getI1Type(), 1));
          Value keep = arith::OrIOp::create(nb, l, untrained, drawn);
          Value y = select(nb, l, keep, mulValues(nb, l, args[0], scale), scalarConstant(nb, l, et, 0));
          linalg::YieldOp::create(nb, l, ValueRange{y, keep});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void populateRuntimeOperandLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<DynamicStridedSlicePattern, DynamicSqueezePattern, DynamicUnsqueezePattern, DynamicTilePattern,
               DynamicPadPattern, DropoutPattern>(patterns.getContext());
}

} // namespace kiln
