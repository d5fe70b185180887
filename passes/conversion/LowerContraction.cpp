// graph.matmul, graph.gemm and graph.conv -> linalg.generic contractions (later tiled for cache).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

/// Builds `init + sum(lhs * rhs)` over the reduction dims of the given maps.
Value contraction(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                  ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
                  Value scale = Value()) {
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{lhs, rhs}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value prod = mulValues(nb, nl, args[0], args[1]);
        if (scale)
          prod = mulValues(nb, nl, prod, scale);
        linalg::YieldOp::create(nb, nl, addValues(nb, nl, args[2], prod));
      });
  return generic.getResult(0);
}

struct MatMulPattern : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value a = adaptor.getLhs(), bv = adaptor.getRhs();
    auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(bv.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    bool aVec = at.getRank() == 1, bVec = bt.getRank() == 1;
    int64_t batch = rt.getRank() - (aVec ? 0 : 1) - (bVec ? 0 : 1);
    // Iteration dims: batch..., [m], [n], k.
    int64_t next = batch;
    int64_t m = aVec ? -1 : next++;
    int64_t n = bVec ? -1 : next++;
    int64_t k = next++;
    int64_t numDims = next;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    auto batchExprs = [&](RankedTensorType t, int64_t own) {
      SmallVector<AffineExpr> exprs;
      for (int64_t j = 0; j < own; ++j) {
        int64_t i = j + batch - own;
        bool bcast = t.getDimSize(j) == 1 && rt.getDimSize(i) != 1;
        exprs.push_back(bcast ? getAffineConstantExpr(0, ctx) : d(i));
      }
      return exprs;
    };
    SmallVector<AffineExpr> ae = aVec ? SmallVector<AffineExpr>{}
                                      : batchExprs(at, at.getRank() - 2);
    if (!aVec)
      ae.push_back(d(m));
    ae.push_back(d(k));
    SmallVector<AffineExpr> be = bVec ? SmallVector<AffineExpr>{}
                                      : batchExprs(bt, bt.getRank() - 2);
    be.push_back(d(k));
    if (!bVec)
      be.push_back(d(n));
    SmallVector<AffineExpr> oe;
    for (int64_t i = 0; i < batch; ++i)
      oe.push_back(d(i));
    if (!aVec)
      oe.push_back(d(m));
    if (!bVec)
      oe.push_back(d(n));
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, ae, ctx),
                                   AffineMap::get(numDims, 0, be, ctx),
                                   AffineMap::get(numDims, 0, oe, ctx)};
    SmallVector<IteratorType> iters(numDims, IteratorType::parallel);
    iters[k] = IteratorType::reduction;

    // Result dims: batch from whichever operand has them, then m and n.
    SmallVector<Value> dims;
    for (int64_t i = 0; i < batch; ++i) {
      Value dv;
      if (!rt.isDynamicDim(i)) {
        dv = arith::ConstantIndexOp::create(rewriter, loc, rt.getDimSize(i));
      } else {
        for (auto [v, t] : {std::pair{a, at}, std::pair{bv, bt}}) {
          int64_t own = t.getRank() - 2, j = i - (batch - own);
          if (own > 0 && j >= 0 && t.isDynamicDim(j)) {
            dv = tensor::DimOp::create(rewriter, loc, v, j);
            break;
          }
        }
      }
      dims.push_back(dv ? dv : arith::ConstantIndexOp::create(rewriter, loc, 1));
    }
    if (!aVec)
      dims.push_back(dimValue(rewriter, loc, a, at.getRank() - 2));
    if (!bVec)
      dims.push_back(dimValue(rewriter, loc, bv, bt.getRank() - 1));
    Value zero = scalarConstant(rewriter, loc, rt.getElementType(), 0);
    Value init = filledTensor(rewriter, loc, rt, dims, zero);
    rewriter.replaceOp(op, contraction(rewriter, loc, a, bv, init, maps, iters));
    return success();
  }
};

struct GemmPattern : OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    Value a = adaptor.getA(), bv = adaptor.getB();
    bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
    SmallVector<Value> dims = {dimValue(rewriter, loc, a, ta ? 1 : 0),
                               dimValue(rewriter, loc, bv, tb ? 0 : 1)};
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    // The accumulator starts as beta * C (broadcast), or zero.
    Value init;
    if (Value c = adaptor.getC(); c && beta != 0.0) {
      Value betaV = scalarConstant(rewriter, loc, et, beta);
      Value empty = emptyTensor(rewriter, loc, rt, dims);
      auto ct = cast<RankedTensorType>(c.getType());
      SmallVector<AffineExpr> exprs;
      for (int64_t j = 0; j < ct.getRank(); ++j) {
        int64_t i = j + 2 - ct.getRank();
        bool bcast = ct.getDimSize(j) == 1 && rt.getDimSize(i) != 1;
        exprs.push_back(bcast ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
      }
      SmallVector<AffineMap> maps = {AffineMap::get(2, 0, exprs, ctx),
                                     AffineMap::getMultiDimIdentityMap(2, ctx)};
      init = linalg::GenericOp::create(
                 rewriter, loc, rt, ValueRange{c}, ValueRange{empty}, maps,
                 SmallVector<IteratorType>(2, IteratorType::parallel),
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value v = beta == 1.0 ? args[0] : mulValues(nb, nl, args[0], betaV);
                   linalg::YieldOp::create(nb, nl, v);
                 })
                 .getResult(0);
    } else {
      init = filledTensor(rewriter, loc, rt, dims, scalarConstant(rewriter, loc, et, 0));
    }
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Iteration dims: m, n, k.
    SmallVector<AffineMap> maps = {
        AffineMap::get(3, 0, ta ? ArrayRef<AffineExpr>{d(2), d(0)} : ArrayRef<AffineExpr>{d(0), d(2)}, ctx),
        AffineMap::get(3, 0, tb ? ArrayRef<AffineExpr>{d(1), d(2)} : ArrayRef<AffineExpr>{d(2), d(1)}, ctx),
        AffineMap::get(3, 0, {d(0), d(1)}, ctx)};
    SmallVector<IteratorType> iters = {IteratorType::parallel, IteratorType::parallel,
                                       IteratorType::reduction};
    Value scale = alpha == 1.0 ? Value() : scalarConstant(rewriter, loc, et, alpha);
    rewriter.replaceOp(op, contraction(rewriter, loc, a, bv, init, maps, iters, scale));
    return success();
  }
};

struct ConvPattern : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    auto wt = cast<RankedTensorType>(w.getType());
    int64_t spatial = rt.getRank() - 2;
    ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    int64_t group = op.getGroup();
    int64_t cout = wt.getDimSize(0), cinPerGroup = wt.getDimSize(1);
    int64_t coutPerGroup = cout / group;

    // Zero-pad the input once; the loop nest then never checks bounds.
    bool padded = llvm::any_of(pads, [](int64_t p) { return p != 0; });
    if (padded) {
      SmallVector<OpFoldResult> low(2, rewriter.getIndexAttr(0)), high(2, rewriter.getIndexAttr(0));
      for (int64_t i = 0; i < spatial; ++i) {
        low.push_back(rewriter.getIndexAttr(pads[i]));
        high.push_back(rewriter.getIndexAttr(pads[spatial + i]));
      }
      x = tensor::PadOp::create(rewriter, loc, Type(), x, low, high,
                                scalarConstant(rewriter, loc, et, 0));
    }

    SmallVector<Value> dims = {dimValue(rewriter, loc, adaptor.getInput(), 0),
                               arith::ConstantIndexOp::create(rewriter, loc, cout)};
    for (int64_t i = 0; i < spatial; ++i) {
      if (!rt.isDynamicDim(2 + i)) {
        dims.push_back(arith::ConstantIndexOp::create(rewriter, loc, rt.getDimSize(2 + i)));
        continue;
      }
      // out = (in_padded - dilation*(k-1) - 1) / stride + 1
      Value in = dimValue(rewriter, loc, x, 2 + i);
      int64_t span = dilations[i] * (wt.getDimSize(2 + i) - 1) + 1;
      Value v = arith::SubIOp::create(rewriter, loc, in,
                                      arith::ConstantIndexOp::create(rewriter, loc, span));
      v = arith::DivSIOp::create(rewriter, loc, v,
                                 arith::ConstantIndexOp::create(rewriter, loc, strides[i]));
      dims.push_back(arith::AddIOp::create(rewriter, loc, v,
                                           arith::ConstantIndexOp::create(rewriter, loc, 1)));
    }

    Value init;
    if (Value bias = adaptor.getBias()) {
      init = buildElementwiseBias(rewriter, loc, rt, dims, bias);
    } else {
      init = filledTensor(rewriter, loc, rt, dims, scalarConstant(rewriter, loc, et, 0));
    }

    // Iteration dims: n, oc, o_1..o_s, ic, k_1..k_s.
    int64_t numDims = 2 + 2 * spatial + 1;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    int64_t icDim = 2 + spatial;
    AffineExpr channel = d(icDim);
    if (group > 1)
      channel = d(1).floorDiv(coutPerGroup) * cinPerGroup + d(icDim);
    SmallVector<AffineExpr> xe = {d(0), channel}, we = {d(1), d(icDim)}, oe = {d(0), d(1)};
    for (int64_t i = 0; i < spatial; ++i) {
      xe.push_back(d(2 + i) * strides[i] + d(icDim + 1 + i) * dilations[i]);
      we.push_back(d(icDim + 1 + i));
      oe.push_back(d(2 + i));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, xe, ctx),
                                   AffineMap::get(numDims, 0, we, ctx),
                                   AffineMap::get(numDims, 0, oe, ctx)};
    SmallVector<IteratorType> iters(numDims, IteratorType::parallel);
    for (int64_t i = icDim; i < numDims; ++i)
      iters[i] = IteratorType::reduction;
    rewriter.replaceOp(op, contraction(rewriter, loc, x, w, init, maps, iters));
    return success();
  }

  /// The output initialized with the bias broadcast along channels.
  static Value buildElementwiseBias(OpBuilder &b, Location loc,
                                    RankedTensorType rt, ArrayRef<Value> dims,
                                    Value bias) {
    MLIRContext *ctx = b.getContext();
    int64_t rank = rt.getRank();
    Value empty = emptyTensor(b, loc, rt, dims);
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    return linalg::GenericOp::create(
               b, loc, rt, ValueRange{bias}, ValueRange{empty}, maps,
               SmallVector<IteratorType>(rank, IteratorType::parallel),
               [](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, args[0]);
               })
        .getResult(0);
  }
};

} // namespace

void populateContractionLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<MatMulPattern, GemmPattern, ConvPattern>(patterns.getContext());
}

} // namespace kiln
