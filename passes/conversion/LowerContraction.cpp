// graph.matmul, graph.gemm and graph.conv -> linalg.generic contractions (later tiled for cache).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// Depthwise convolutions over maps of at most this many rows take work items by channel group.
constexpr int64_t kChannelGroupMaxRows = 7;
/// The bytes of a depthwise window's input rows that should stay in L1 (48 KiB on the Xeon).
constexpr int64_t kWindowRowsL1Bytes = 24 << 10;
/// Fewer channels per item than this cost more in per-item overhead than they save in L2
/// reads (groups of 8 of mobilenet_v3_small's 72 and 88 channels: 1.03x slower on 2 threads).
constexpr int64_t kMinChannelGroup = 16;

using utils::IteratorType;

/// Builds `init + sum(lhs * rhs)` over the reduction dims of the given maps.
Value contraction(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                  ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
                  Value scale = Value()) {
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{lhs, rhs}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = args[0], y = args[1];
        if (x.getType() != args[2].getType()) { // half operands, an f32 accumulator
          x = arith::ExtFOp::create(nb, nl, args[2].getType(), x);
          y = arith::ExtFOp::create(nb, nl, args[2].getType(), y);
        }
        if (!isa<FloatType>(x.getType())) {
          Value prod = mulValues(nb, nl, x, y);
          if (scale)
            prod = mulValues(nb, nl, prod, scale);
          linalg::YieldOp::create(nb, nl, addValues(nb, nl, args[2], prod));
          return;
        }
        // reassoc lets LLVM vectorize reductions; contract lets it use FMA.
        auto fm = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
        Value prod = arith::MulFOp::create(nb, nl, x, y, fm);
        if (scale)
          prod = arith::MulFOp::create(nb, nl, prod, scale, fm);
        Value sum = arith::AddFOp::create(nb, nl, args[2], prod, fm);
        linalg::YieldOp::create(nb, nl, sum);
      });
  return generic.getResult(0);
}

/// The accumulator of a product of `et` elements: f32 for half floats when `wide` (the CUDA
/// target: cuBLASLt and kiln's kernels then add in f32), else `et`.
Type accumulatorType(Type et, bool wide) {
  return wide && (et.isF16() || et.isBF16()) ? Type(Float32Type::get(et.getContext())) : et;
}

/// `product` rounded to `rt`'s element type when it was accumulated in a wider one.
Value narrowed(OpBuilder &b, Location loc, Value product, RankedTensorType rt) {
  if (cast<RankedTensorType>(product.getType()).getElementType() == rt.getElementType())
    return product;
  return buildElementwise(b, loc, rt, ValueRange{product}, [&](OpBuilder &nb, Location l, ValueRange args) {
    return arith::TruncFOp::create(nb, l, rt.getElementType(), args[0]).getResult();
  });
}

/// A tensor of `rt` (N, C, ...) holding bias[c] everywhere.
Value channelBiasInit(OpBuilder &b, Location loc, RankedTensorType rt, ArrayRef<Value> dims,
                      Value bias) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = rt.getRank();
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  return linalg::GenericOp::create(b, loc, rt, ValueRange{bias},
                                   ValueRange{emptyTensor(b, loc, rt, dims)}, maps,
                                   SmallVector<IteratorType>(rank, IteratorType::parallel),
                                   [](OpBuilder &nb, Location l, ValueRange args) {
                                     linalg::YieldOp::create(nb, l, args[0]);
                                   })
      .getResult(0);
}

/// C viewed as [..., M, N/B, B] += A[..., M, K] * W[N/B, K, B], iteration
/// dims (batch..., m, panel, k, column); the generic is marked kiln.packed_rhs
/// so that tiling takes one panel per tile. Returns the [..., M, N/B, B] product.
/// rowCount: M of a 2-D A given as the product of the dims it was collapsed from.
static Value packedProduct(OpBuilder &b, Location loc, Value a, Value w, Type et, Value rowCount = {});

/// packedProduct for packed_matmul: batch dims folded into the rows.
static Value packedMatMulProduct(OpBuilder &b, Location loc, Value a, Value w, Type et) {
  auto at = cast<RankedTensorType>(a.getType());
  int64_t outer = at.getRank() - 1; // batch dims and m
  bool oneBatch = llvm::all_of(at.getShape().take_front(std::max<int64_t>(outer - 1, 0)),
                               [](int64_t d) { return d == 1; });
  // Weights per leading batch index (a 4-D rhs): the batch dims stay dims of the product.
  bool perBatch = cast<RankedTensorType>(w.getType()).getRank() == 4;
  if (outer < 2 || oneBatch || perBatch)
    return packedProduct(b, loc, a, w, et);
  // The weights do not depend on the batch dims: every row of every batch
  // element is one row of a single [rows, K] product. Tiled per batch element
  // instead, a decode step of 8 sequences ([8, 1, K]) read each weight panel
  // once per sequence (8x the memory traffic of one, at the same rate).
  SmallVector<ReassociationIndices> inGroups = {ReassociationIndices{}, {outer}};
  SmallVector<Value> sizes;
  int64_t rows = 1;
  Value rowCount;
  for (int64_t i = 0; i < outer; ++i) {
    inGroups[0].push_back(i);
    int64_t d = at.getDimSize(i);
    rows = ShapedType::isDynamic(d) || ShapedType::isDynamic(rows) ? ShapedType::kDynamic : rows * d;
    sizes.push_back(dimValue(b, loc, a, i));
    rowCount = rowCount ? arith::MulIOp::create(b, loc, rowCount, sizes.back()).getResult() : sizes.back();
  }
  auto flatType = RankedTensorType::get({rows, at.getDimSize(outer)}, et);
  Value flat = tensor::CollapseShapeOp::create(b, loc, flatType, a, inGroups);
  // The row count from A's own dims, not the collapsed tensor's: the memory
  // planner places a buffer whose size it can trace to @main's arguments,
  // and a dim of the collapsed view is not one it follows (a heap
  // allocation per product per step).
  Value product = packedProduct(b, loc, flat, w, et, rowCount);
  auto pt = cast<RankedTensorType>(product.getType());
  SmallVector<int64_t> shape(at.getShape().drop_back());
  shape.append({pt.getDimSize(1), pt.getDimSize(2)});
  sizes.push_back(arith::ConstantIndexOp::create(b, loc, pt.getDimSize(1)));
  sizes.push_back(arith::ConstantIndexOp::create(b, loc, pt.getDimSize(2)));
  // tensor.reshape, not expand_shape: LLVM 22's expand-strided-metadata
  // crashes on a memref.expand_shape with two dynamic dims in one group.
  return reshapeTo(b, loc, product, RankedTensorType::get(shape, et), sizes);
}

static Value packedProduct(OpBuilder &b, Location loc, Value a, Value w, Type et, Value rowCount) {
  MLIRContext *ctx = b.getContext();
  auto at = cast<RankedTensorType>(a.getType()), wt = cast<RankedTensorType>(w.getType());
  int64_t outer = at.getRank() - 1; // batch dims and m
  // Columns innermost: a loop nest that is not vectorized by kiln still
  // streams the panel and the output contiguously.
  int64_t panel = outer, k = outer + 1, col = outer + 2, numDims = outer + 3;
  // A 4-D weight [E, panels, K, B]: the leading batch dim picks the weight.
  int64_t first = wt.getRank() - 3;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> ae, oe;
  for (int64_t i = 0; i < outer; ++i) {
    ae.push_back(d(i));
    oe.push_back(d(i));
  }
  ae.push_back(d(k));
  oe.append({d(panel), d(col)});
  SmallVector<AffineExpr> we = {d(panel), d(k), d(col)};
  if (first)
    we.insert(we.begin(), d(0));
  SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, ae, ctx), AffineMap::get(numDims, 0, we, ctx),
                                 AffineMap::get(numDims, 0, oe, ctx)};
  SmallVector<IteratorType> iters(numDims, IteratorType::parallel);
  iters[k] = IteratorType::reduction;
  SmallVector<int64_t> shape3(at.getShape().drop_back());
  shape3.append({wt.getDimSize(first), wt.getDimSize(first + 2)});
  auto t3 = RankedTensorType::get(shape3, et);
  SmallVector<Value> dims;
  for (int64_t i = 0; i < outer; ++i)
    dims.push_back(rowCount && outer == 1 ? rowCount : dimValue(b, loc, a, i));
  dims.append({arith::ConstantIndexOp::create(b, loc, wt.getDimSize(first)),
               arith::ConstantIndexOp::create(b, loc, wt.getDimSize(first + 2))});
  Value init = filledTensor(b, loc, t3, dims, scalarConstant(b, loc, et, 0));
  Value product = contraction(b, loc, a, w, init, maps, iters);
  product.getDefiningOp()->setAttr("kiln.packed_rhs", b.getUnitAttr());
  return product;
}

/// packed_matmul: the packed product, then C collapsed to [..., M, N].
struct PackedMatMulPattern : OpConversionPattern<PackedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PackedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto rt = cast<RankedTensorType>(op.getType());
    Value product = packedMatMulProduct(rewriter, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(), rt.getElementType());
    int64_t outer = rt.getRank() - 1;
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < outer; ++i)
      groups.push_back({i});
    groups.push_back({outer, outer + 1});
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, rt, product, groups);
    return success();
  }
};

struct MatMulPattern : OpConversionPattern<MatMulOp> {
  MatMulPattern(MLIRContext *ctx, bool wide) : OpConversionPattern(ctx), wide(wide) {}
  bool wide; // half products accumulate in f32
  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value a = adaptor.getLhs(), bv = adaptor.getRhs();
    // A product over one term ([..., m, 1] x [..., 1, n]: rotary angles, position x inverse
    // frequency) is an outer product, elementwise with numpy broadcasting: no reduction to set up,
    // and it fuses with what reads it. The single product rounds once either way (two half or f32
    // operands multiply exactly in the wider type).
    if (auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(bv.getType());
        at.getRank() >= 2 && bt.getRank() >= 2 && at.getDimSize(at.getRank() - 1) == 1 &&
        bt.getDimSize(bt.getRank() - 2) == 1) {
      rewriter.replaceOp(op, buildElementwise(rewriter, loc, cast<RankedTensorType>(op.getType()), {a, bv},
                                              [](OpBuilder &b, Location l, ValueRange args) {
                                                return mulValues(b, l, args[0], args[1]);
                                              }));
      return success();
    }
    // A rhs that only swaps its last two dims (attention's Q x K^T) is read
    // in place through the contraction's indexing map rather than copied.
    bool transB = false;
    if (auto tr = bv.getDefiningOp<linalg::TransposeOp>()) {
      ArrayRef<int64_t> perm = tr.getPermutation();
      int64_t r = perm.size();
      transB = r >= 2 && perm[r - 1] == r - 2 && perm[r - 2] == r - 1;
      for (int64_t i = 0; transB && i < r - 2; ++i)
        transB = perm[i] == i;
      if (transB)
        bv = tr.getInput();
    }
    auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(bv.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    bool aVec = at.getRank() == 1, bVec = bt.getRank() == 1;
    int64_t batch = rt.getRank() - (aVec ? 0 : 1) - (bVec ? 0 : 1);
    // Iteration dims: batch..., [m], k, [n]. With n innermost the inner loop
    // streams a row of B and of C contiguously, which LLVM vectorizes. A
    // transposed B is read along k instead: batch..., [m], n, k (dot products
    // over contiguous rows of A and B).
    int64_t next = batch;
    int64_t m = aVec ? -1 : next++;
    int64_t k = -1, n = -1;
    if (transB) {
      n = next++;
      k = next++;
    } else {
      k = next++;
      n = bVec ? -1 : next++;
    }
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
    if (transB) {
      be.append({d(n), d(k)});
    } else {
      be.push_back(d(k));
      if (!bVec)
        be.push_back(d(n));
    }
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
      dims.push_back(dimValue(rewriter, loc, bv, bt.getRank() - (transB ? 2 : 1)));
    auto accType = rt.clone(accumulatorType(rt.getElementType(), wide));
    Value zero = scalarConstant(rewriter, loc, accType.getElementType(), 0);
    Value init = filledTensor(rewriter, loc, accType, dims, zero);
    rewriter.replaceOp(op, narrowed(rewriter, loc, contraction(rewriter, loc, a, bv, init, maps, iters), rt));
    return success();
  }
};

struct GemmPattern : OpConversionPattern<GemmOp> {
  GemmPattern(MLIRContext *ctx, bool wide) : OpConversionPattern(ctx), wide(wide) {}
  bool wide; // half products accumulate in f32
  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    auto result = cast<RankedTensorType>(op.getType());
    auto rt = result.clone(accumulatorType(result.getElementType(), wide)); // the accumulator's
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
      SmallVector<AffineMap> maps = {broadcastMap(cast<RankedTensorType>(c.getType()), rt, ctx),
                                     AffineMap::getMultiDimIdentityMap(2, ctx)};
      init = linalg::GenericOp::create(
                 rewriter, loc, rt, ValueRange{c}, ValueRange{empty}, maps,
                 SmallVector<IteratorType>(2, IteratorType::parallel),
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value v = castScalar(nb, nl, args[0], et);
                   v = beta == 1.0 ? v : mulValues(nb, nl, v, betaV);
                   linalg::YieldOp::create(nb, nl, v);
                 })
                 .getResult(0);
    } else {
      init = filledTensor(rewriter, loc, rt, dims, scalarConstant(rewriter, loc, et, 0));
    }
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // The innermost loop must walk B contiguously: (m, k, n) when B is [k, n];
    // (m, n, k) when B is transposed ([n, k]), a dot product that vectorizes
    // thanks to the reassociation flag on the accumulation.
    AffineExpr m = d(0), n = tb ? d(1) : d(2), k = tb ? d(2) : d(1);
    SmallVector<AffineMap> maps = {
        AffineMap::get(3, 0, ta ? ArrayRef<AffineExpr>{k, m} : ArrayRef<AffineExpr>{m, k}, ctx),
        AffineMap::get(3, 0, tb ? ArrayRef<AffineExpr>{n, k} : ArrayRef<AffineExpr>{k, n}, ctx),
        AffineMap::get(3, 0, {m, n}, ctx)};
    SmallVector<IteratorType> iters = {IteratorType::parallel,
                                       tb ? IteratorType::parallel : IteratorType::reduction,
                                       tb ? IteratorType::reduction : IteratorType::parallel};
    Value scale = alpha == 1.0 ? Value() : scalarConstant(rewriter, loc, et, alpha);
    rewriter.replaceOp(op, narrowed(rewriter, loc, contraction(rewriter, loc, a, bv, init, maps, iters, scale), result));
    return success();
  }
};

/// im2col for 2-D convolutions with unit stride along W and static sizes, as
/// whole-row vector copies: col[n, g, ic, kh, kw, oh, :] is a contiguous row
/// of the padded input. Written with vector transfers because LLVM leaves the
/// equivalent scalar loop unvectorized (it cannot prove the two buffers
/// apart). Returns null when the shapes do not fit.
static Value rowCopyIm2Col(OpBuilder &b, Location loc, Value x, Value colInit,
                           RankedTensorType colType, int64_t icg, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations) {
  // col: [N, G, ICG, KH, KW, OH, OW]
  if (colType.getRank() != 7 || strides[1] != 1)
    return {};
  for (int64_t i = 1; i < 7; ++i)
    if (colType.isDynamicDim(i))
      return {};
  int64_t groups = colType.getDimSize(1), kh = colType.getDimSize(3), kw = colType.getDimSize(4),
          oh = colType.getDimSize(5), ow = colType.getDimSize(6);
  if (ow < 4)
    return {};
  Type et = colType.getElementType();
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  auto rowType = VectorType::get({ow}, et);
  SmallVector<OpFoldResult> ubs = {tensor::getMixedSize(b, loc, colInit, 0), b.getIndexAttr(groups),
                                   b.getIndexAttr(icg)};
  return forallBlocks(b, loc, colInit, ubs, {kh, kw, oh, ow}, [&](OpBuilder &fb, ValueRange ivs, Value block) {
    Value n = ivs[0], g = ivs[1], ic = ivs[2];
    Value channel = arith::AddIOp::create(fb, loc, arith::MulIOp::create(fb, loc, g, c(fb, icg)), ic);
    Value pad = arith::ConstantOp::create(fb, loc, fb.getZeroAttr(et));
    auto loopKh = scf::ForOp::create(fb, loc, c(fb, 0), c(fb, kh), c(fb, 1), ValueRange{block});
    OpBuilder b1 = OpBuilder::atBlockBegin(loopKh.getBody());
    auto loopKw = scf::ForOp::create(b1, loc, c(b1, 0), c(b1, kw), c(b1, 1), ValueRange{loopKh.getRegionIterArg(0)});
    OpBuilder b2 = OpBuilder::atBlockBegin(loopKw.getBody());
    auto loopOh = scf::ForOp::create(b2, loc, c(b2, 0), c(b2, oh), c(b2, 1), ValueRange{loopKw.getRegionIterArg(0)});
    OpBuilder b3 = OpBuilder::atBlockBegin(loopOh.getBody());
    Value ikh = loopKh.getInductionVar(), ikw = loopKw.getInductionVar(), ioh = loopOh.getInductionVar();
    Value row = arith::AddIOp::create(b3, loc, arith::MulIOp::create(b3, loc, ioh, c(b3, strides[0])),
                                      arith::MulIOp::create(b3, loc, ikh, c(b3, dilations[0])));
    Value colStart = arith::MulIOp::create(b3, loc, ikw, c(b3, dilations[1]));
    SmallVector<bool> inBounds = {true};
    Value v = vector::TransferReadOp::create(b3, loc, rowType, x, ValueRange{n, channel, row, colStart}, pad,
                                             inBounds);
    Value written = vector::TransferWriteOp::create(b3, loc, v, loopOh.getRegionIterArg(0),
                                                    ValueRange{ikh, ikw, ioh, c(b3, 0)}, inBounds)
                        .getResult();
    scf::YieldOp::create(b3, loc, written);
    b2.setInsertionPointAfter(loopOh);
    scf::YieldOp::create(b2, loc, loopOh.getResult(0));
    b1.setInsertionPointAfter(loopKw);
    scf::YieldOp::create(b1, loc, loopKw.getResult(0));
    return loopKh.getResult(0);
  });
}

/// `x` (N, C, spatial...) with ONNX `pads` of zeros around its spatial dims.
static Value zeroPadSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<OpFoldResult> pads, Type et) {
  if (llvm::all_of(pads, [](OpFoldResult p) { return isConstantIntValue(p, 0); }))
    return x;
  int64_t spatial = pads.size() / 2;
  SmallVector<OpFoldResult> low(2, b.getIndexAttr(0)), high(2, b.getIndexAttr(0));
  for (int64_t i = 0; i < spatial; ++i) {
    low.push_back(pads[i]);
    high.push_back(pads[spatial + i]);
  }
  return tensor::PadOp::create(b, loc, Type(), x, low, high, scalarConstant(b, loc, et, 0));
}

static Value zeroPadSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pads, Type et) {
  SmallVector<OpFoldResult> values;
  for (int64_t p : pads)
    values.push_back(b.getIndexAttr(p));
  return zeroPadSpatial(b, loc, x, values, et);
}

/// A conv's pads: its attribute, or with auto_pad SAME_* kept for run time
/// values computed from the input's and the weight's sizes.
static SmallVector<OpFoldResult> convPads(OpBuilder &b, Location loc, ConvOp op, Value x, Value w) {
  ArrayRef<int64_t> pads = op.getPads();
  int64_t spatial = pads.size() / 2;
  SmallVector<OpFoldResult> result(2 * spatial);
  std::optional<StringRef> autoPad = op.getAutoPad();
  for (int64_t i = 0; i < spatial; ++i) {
    if (!autoPad) {
      result[i] = b.getIndexAttr(pads[i]);
      result[spatial + i] = b.getIndexAttr(pads[spatial + i]);
      continue;
    }
    auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    int64_t dilation = op.getDilations()[i];
    Value kernelMinusOne = arith::SubIOp::create(b, loc, dimValue(b, loc, w, 2 + i), c(1));
    Value reach = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, kernelMinusOne, c(dilation)), c(1));
    auto [begin, end] =
        samePads(b, loc, dimValue(b, loc, x, 2 + i), reach, op.getStrides()[i], *autoPad == "SAME_UPPER");
    result[i] = begin;
    result[spatial + i] = end;
  }
  return result;
}

/// A convolution whose weight has a dynamic shape (a graph input: kernel
/// sizes and channels known at run time only), as one contraction over
/// (n, g, f, o_1..o_s, c, k_1..k_s) reading the zero-padded input viewed as
/// [N, G, C/G, ...] and the weight as [G, Cout/G, C/G, k...]: every extent
/// comes from an operand's shape, so nothing about the weight is needed at
/// compile time. The static-weight path below stays the fast one.
static Value dynamicWeightConv(OpBuilder &b, Location loc, ConvOp op, Value x, Value w, Value bias) {
  MLIRContext *ctx = b.getContext();
  auto rt = cast<RankedTensorType>(op.getType());
  Type et = rt.getElementType();
  int64_t spatial = rt.getRank() - 2, group = op.getGroup(), kDyn = ShapedType::kDynamic;
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  Value batch = dimValue(b, loc, x, 0), channels = dimValue(b, loc, x, 1);
  x = zeroPadSpatial(b, loc, x, convPads(b, loc, op, x, w), et);
  Value cout = dimValue(b, loc, w, 0), icg = dimValue(b, loc, w, 1);
  Value ocg = arith::DivSIOp::create(b, loc, cout, c(group));
  SmallVector<Value> kernel, outDims;
  for (int64_t i = 0; i < spatial; ++i) {
    Value k = dimValue(b, loc, w, 2 + i);
    kernel.push_back(k);
    // (padded - ((k - 1) * d + 1)) / s + 1, none when the window does not fit.
    Value extent = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, k, c(1)), c(dilations[i])), c(1));
    Value span = arith::SubIOp::create(b, loc, dimValue(b, loc, x, 2 + i), extent);
    Value count = arith::AddIOp::create(b, loc, arith::DivSIOp::create(b, loc, span, c(strides[i])), c(1));
    outDims.push_back(arith::SelectOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, span, c(0)), c(0), count));
  }
  // x as [N, G, C/G, padded...]; the weight's channels must be C/G.
  SmallVector<int64_t> xShape = {kDyn, group, kDyn}, wShape = {group, kDyn, kDyn}, oShape = {kDyn, group, kDyn};
  SmallVector<Value> xDims = {batch, c(group), arith::DivSIOp::create(b, loc, channels, c(group))};
  SmallVector<Value> wDims = {c(group), ocg, icg}, oDims = {batch, c(group), ocg};
  for (int64_t i = 0; i < spatial; ++i) {
    xShape.push_back(kDyn);
    xDims.push_back(dimValue(b, loc, x, 2 + i));
    wShape.push_back(kDyn);
    wDims.push_back(kernel[i]);
    oShape.push_back(kDyn);
    oDims.push_back(outDims[i]);
  }
  Value xg = reshapeTo(b, loc, x, RankedTensorType::get(xShape, et), xDims);
  Value wg = reshapeTo(b, loc, w, RankedTensorType::get(wShape, et), wDims);
  // A request whose channels disagree (C/G != the weight's) reads only the
  // channels both have: every read stays in its buffer.
  Value common = arith::MinSIOp::create(b, loc, xDims[2], icg);
  auto channelView = [&](Value v, int64_t axis) -> Value {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)), sizes, unit(t.getRank(), b.getIndexAttr(1));
    for (int64_t i = 0; i < t.getRank(); ++i)
      sizes.push_back(i == axis ? OpFoldResult(common) : tensor::getMixedSize(b, loc, v, i));
    return tensor::ExtractSliceOp::create(b, loc, v, offsets, sizes, unit);
  };
  xg = channelView(xg, 2);
  wg = channelView(wg, 2);
  auto outType = RankedTensorType::get(oShape, et);
  Value init;
  if (bias) {
    Value bg = reshapeTo(b, loc, bias, RankedTensorType::get({group, kDyn}, et), {c(group), ocg});
    int64_t r = outType.getRank();
    SmallVector<AffineMap> maps = {
        AffineMap::get(r, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx),
        AffineMap::getMultiDimIdentityMap(r, ctx)};
    init = linalg::GenericOp::create(b, loc, outType, ValueRange{bg}, ValueRange{emptyTensor(b, loc, outType, oDims)},
                                     maps, SmallVector<IteratorType>(r, IteratorType::parallel),
                                     [](OpBuilder &nb, Location l, ValueRange args) {
                                       linalg::YieldOp::create(nb, l, args[0]);
                                     })
               .getResult(0);
  } else {
    init = filledTensor(b, loc, outType, oDims, scalarConstant(b, loc, et, 0));
  }
  // Iteration dims: n, g, f, o_1..o_s, c, k_1..k_s.
  int64_t cDim = 3 + spatial, numDims = 4 + 2 * spatial;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> xe = {d(0), d(1), d(cDim)}, we = {d(1), d(2), d(cDim)}, oe = {d(0), d(1), d(2)};
  for (int64_t i = 0; i < spatial; ++i) {
    xe.push_back(d(3 + i) * strides[i] + d(cDim + 1 + i) * dilations[i]);
    we.push_back(d(cDim + 1 + i));
    oe.push_back(d(3 + i));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, xe, ctx), AffineMap::get(numDims, 0, we, ctx),
                                 AffineMap::get(numDims, 0, oe, ctx)};
  SmallVector<IteratorType> iters(numDims, IteratorType::parallel);
  for (int64_t i = cDim; i < numDims; ++i)
    iters[i] = IteratorType::reduction;
  Value out = contraction(b, loc, xg, wg, init, maps, iters);
  // G * (Cout / G): a Cout that G does not divide cannot read past the product.
  SmallVector<Value> resultDims = {batch, arith::MulIOp::create(b, loc, ocg, c(group))};
  resultDims.append(outDims.begin(), outDims.end());
  return reshapeTo(b, loc, out, rt, resultDims);
}

/// Convolution as im2col + matrix product: the input windows are gathered
/// into col[n, g, ic*K, P] (P = output positions), then
/// out[n, g, oc, P] += w[g, oc, ic*K] * col[n, g, ic*K, P] with P innermost, a
/// long contiguous loop that vectorizes; the gather costs one pass over
/// col. Output channels, groups and batch are the parallel work items.
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
    if (!wt.hasStaticShape()) {
      rewriter.replaceOp(op, dynamicWeightConv(rewriter, loc, op, x, w, adaptor.getBias()));
      return success();
    }
    int64_t spatial = rt.getRank() - 2;
    ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    int64_t group = op.getGroup();
    int64_t cout = wt.getDimSize(0), icg = wt.getDimSize(1), ocg = cout / group;
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };

    // Zero-pad the input once; the gather then never checks bounds.
    x = zeroPadSpatial(rewriter, loc, x, convPads(rewriter, loc, op, x, w), et);

    // Output sizes (index values) and their product P.
    SmallVector<Value> outDims;
    for (int64_t i = 0; i < spatial; ++i) {
      if (!rt.isDynamicDim(2 + i)) {
        outDims.push_back(c(rt.getDimSize(2 + i)));
        continue;
      }
      outDims.push_back(windowCount(rewriter, loc, dimValue(rewriter, loc, x, 2 + i),
                                    wt.getDimSize(2 + i), strides[i], dilations[i]));
    }
    Value batch = dimValue(rewriter, loc, adaptor.getInput(), 0);
    Value positions = c(1);
    for (Value d : outDims)
      positions = arith::MulIOp::create(rewriter, loc, positions, d);
    int64_t kernelSize = 1;
    for (int64_t i = 0; i < spatial; ++i)
      kernelSize *= wt.getDimSize(2 + i);
    int64_t reduction = icg * kernelSize;
    int64_t staticPositions = 1;
    for (int64_t i = 0; i < spatial; ++i)
      staticPositions = rt.isDynamicDim(2 + i) || staticPositions == ShapedType::kDynamic
                            ? ShapedType::kDynamic
                            : staticPositions * rt.getDimSize(2 + i);

    // col[n, g, ic, k_1..k_s, o_1..o_s] = x[n, g*icg + ic, o_i*s_i + k_i*d_i]
    int64_t colRank = 3 + 2 * spatial;
    SmallVector<int64_t> colShape = {rt.getDimSize(0), group, icg};
    SmallVector<Value> colDims = {batch, c(group), c(icg)};
    for (int64_t i = 0; i < spatial; ++i) {
      colShape.push_back(wt.getDimSize(2 + i));
      colDims.push_back(c(wt.getDimSize(2 + i)));
    }
    for (int64_t i = 0; i < spatial; ++i) {
      colShape.push_back(rt.getDimSize(2 + i));
      colDims.push_back(outDims[i]);
    }
    auto colType = RankedTensorType::get(colShape, et);
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xe = {d(0), d(1) * icg + d(2)};
    for (int64_t i = 0; i < spatial; ++i)
      xe.push_back(d(3 + spatial + i) * strides[i] + d(3 + i) * dilations[i]);
    SmallVector<AffineMap> colMaps = {AffineMap::get(colRank, 0, xe, ctx),
                                      AffineMap::getMultiDimIdentityMap(colRank, ctx)};
    Value colInit = emptyTensor(rewriter, loc, colType, colDims);
    Value col = rowCopyIm2Col(rewriter, loc, x, colInit, colType, icg, strides, dilations);
    if (!col)
      col = linalg::GenericOp::create(
                rewriter, loc, colType, ValueRange{x}, ValueRange{colInit}, colMaps,
                SmallVector<IteratorType>(colRank, IteratorType::parallel),
                [](OpBuilder &b, Location l, ValueRange args) {
                  linalg::YieldOp::create(b, l, args[0]);
                })
                .getResult(0);
    auto colFlatType = RankedTensorType::get({rt.getDimSize(0), group, reduction, staticPositions}, et);
    Value colFlat = reshapeTo(rewriter, loc, col, colFlatType, {batch, c(group), c(reduction), positions});
    auto wFlatType = RankedTensorType::get({group, ocg, reduction}, et);
    Value wFlat = reshapeTo(rewriter, loc, w, wFlatType, {c(group), c(ocg), c(reduction)});

    // out[n, g, oc, p], initialized with the bias.
    auto outType = RankedTensorType::get({rt.getDimSize(0), group, ocg, staticPositions}, et);
    SmallVector<Value> outFlatDims = {batch, c(group), c(ocg), positions};
    Value init;
    if (Value bias = adaptor.getBias()) {
      auto biasType = RankedTensorType::get({group, ocg}, et);
      Value b2 = reshapeTo(rewriter, loc, bias, biasType, {c(group), c(ocg)});
      SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {d(1), d(2)}, ctx),
                                     AffineMap::getMultiDimIdentityMap(4, ctx)};
      init = linalg::GenericOp::create(
                 rewriter, loc, outType, ValueRange{b2},
                 ValueRange{emptyTensor(rewriter, loc, outType, outFlatDims)}, maps,
                 SmallVector<IteratorType>(4, IteratorType::parallel),
                 [](OpBuilder &b, Location l, ValueRange args) {
                   linalg::YieldOp::create(b, l, args[0]);
                 })
                 .getResult(0);
    } else {
      init = filledTensor(rewriter, loc, outType, outFlatDims, scalarConstant(rewriter, loc, et, 0));
    }
    // Iteration dims: n, g, oc, r (reduction), p.
    SmallVector<AffineMap> maps = {AffineMap::get(5, 0, {d(1), d(2), d(3)}, ctx),
                                   AffineMap::get(5, 0, {d(0), d(1), d(3), d(4)}, ctx),
                                   AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx)};
    SmallVector<IteratorType> iters = {IteratorType::parallel, IteratorType::parallel,
                                       IteratorType::parallel, IteratorType::reduction,
                                       IteratorType::parallel};
    Value out = contraction(rewriter, loc, wFlat, colFlat, init, maps, iters);
    SmallVector<Value> resultDims = {batch, c(cout)};
    resultDims.append(outDims.begin(), outDims.end());
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, out, rt, resultDims));
    return success();
  }
};

/// `x` [N, H, W, C] with `pads` (begin H, W, end H, W) of zeros around H and W.
static Value zeroPadNhwc(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pads, Type et) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return x;
  SmallVector<OpFoldResult> low = {b.getIndexAttr(0), b.getIndexAttr(pads[0]), b.getIndexAttr(pads[1]),
                                   b.getIndexAttr(0)};
  SmallVector<OpFoldResult> high = {b.getIndexAttr(0), b.getIndexAttr(pads[2]), b.getIndexAttr(pads[3]),
                                    b.getIndexAttr(0)};
  return tensor::PadOp::create(b, loc, Type(), x, low, high, scalarConstant(b, loc, et, 0));
}

/// The implicit-GEMM product of a channels-last convolution: out[n, oh, ow,
/// p, j] += x[n, oh*s + kh*d, ow*s + kw*d, c] * w[p, kh, kw, c, j] over the
/// zero-padded NHWC input `x` and the weight's panels [Cout/B, K, B] (K in
/// kh, kw, c order). The rows of the product are read from the input where
/// they lie, so no patch matrix is written (a 3x3 convolution's patch rows are
/// 9 copies of its input, and streaming them from L3 made the products with
/// 512 channels run at half speed). Without dilation along W a window row's
/// taps and channels are one contiguous run of KW*C floats: the input is
/// viewed as [N, Hp, Wp*C] and the weight as [Cout/B, KH, KW*C, B], with
/// iteration dims (n, oh, ow, panel, kh, kwc, column), so the inner loop
/// runs over KW*C steps (21 for an RGB 7x7 stem, where C alone would be 3);
/// with dilation (n, oh, ow, panel, kh, kw, c, column). Marked
/// kiln.implicit_conv (and kiln.packed_rhs): kiln-tile-contractions takes
/// whole output rows and one panel per tile, and kiln-vectorize-contractions'
/// microkernel walks the tile's (oh, ow) positions as one run of rows.
/// Returns [N, OH, OW, Cout/B, B].
static Value implicitConvProduct(OpBuilder &b, Location loc, Value x, Value w, ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations, int64_t oh, int64_t ow,
                                 Type et) {
  MLIRContext *ctx = b.getContext();
  auto xt = cast<RankedTensorType>(x.getType()), wt = cast<RankedTensorType>(w.getType());
  int64_t channels = xt.getDimSize(3), panels = wt.getDimSize(0), width = wt.getDimSize(2);
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  bool merged = dilations[1] == 1;
  int64_t numDims = merged ? 7 : 8;
  SmallVector<AffineMap> maps;
  if (merged) {
    x = tensor::CollapseShapeOp::create(b, loc, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    w = tensor::ExpandShapeOp::create(b, loc,
                                      RankedTensorType::get({panels, kernel[0], kernel[1] * channels, width}, et), w,
                                      SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
    maps = {AffineMap::get(7, 0, {d(0), d(1) * strides[0] + d(4) * dilations[0], d(2) * (strides[1] * channels) + d(5)},
                           ctx),
            AffineMap::get(7, 0, {d(3), d(4), d(5), d(6)}, ctx),
            AffineMap::get(7, 0, {d(0), d(1), d(2), d(3), d(6)}, ctx)};
  } else {
    w = tensor::ExpandShapeOp::create(b, loc,
                                      RankedTensorType::get({panels, kernel[0], kernel[1], channels, width}, et), w,
                                      SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4}});
    maps = {AffineMap::get(8, 0,
                           {d(0), d(1) * strides[0] + d(4) * dilations[0], d(2) * strides[1] + d(5) * dilations[1], d(6)},
                           ctx),
            AffineMap::get(8, 0, {d(3), d(4), d(5), d(6), d(7)}, ctx),
            AffineMap::get(8, 0, {d(0), d(1), d(2), d(3), d(7)}, ctx)};
  }
  SmallVector<IteratorType> iters(numDims, IteratorType::reduction);
  for (int64_t i : {0, 1, 2, 3})
    iters[i] = IteratorType::parallel;
  iters.back() = IteratorType::parallel;
  auto productType = RankedTensorType::get({xt.getDimSize(0), oh, ow, panels, width}, et);
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  Value init = filledTensor(b, loc, productType, {dimValue(b, loc, x, 0), c(oh), c(ow), c(panels), c(width)},
                            scalarConstant(b, loc, et, 0));
  Value product = contraction(b, loc, x, w, init, maps, iters);
  product.getDefiningOp()->setAttr("kiln.packed_rhs", b.getUnitAttr());
  product.getDefiningOp()->setAttr("kiln.implicit_conv", b.getUnitAttr());
  return product;
}

/// A channels-last packed_conv: the implicit product over the padded input
/// (above); a 1x1 stride-1 one as the packed product of its input's rows
/// [N, H*W, C]; a dilated window of fewer than 8 channels as patch rows
/// col[n, oh, ow, kh, kw, c] = x[n, oh*s + kh*d, ow*s + kw*d, c] times the
/// panels; the result is written NHWC with the bias, channel blocks innermost.
static Value channelsLastPackedConv(OpBuilder &b, Location loc, PackedConvOp op, Value x, Value w, Value bias) {
  MLIRContext *ctx = b.getContext();
  auto rt = cast<RankedTensorType>(op.getType());
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = rt.getElementType();
  ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(), dilations = op.getDilations(),
                    pads = op.getPads();
  int64_t n0 = rt.getDimSize(0), channels = xt.getDimSize(3), oh = rt.getDimSize(1), ow = rt.getDimSize(2),
          cout = rt.getDimSize(3);
  int64_t reduction = channels * kernel[0] * kernel[1];
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  Value batch = dimValue(b, loc, x, 0);
  auto rowsType = RankedTensorType::get({n0, oh * ow, reduction}, et);
  Value col, product;
  // A 1x1 stride-1 unpadded convolution reads its input itself as the rows
  // [N, H*W, C] of a packed product: measured against the implicit form
  // (tiles of whole output rows, row indices by div/rem), the plain product
  // is 4-17% faster per model on resnet50, mobilenet_v2, efficientnet_b0 and
  // ocr_rec (1 thread, AVX-512) when its output is small. From 28 positions
  // per output row the implicit form is taken instead: its tiles are whole
  // rows of the NHWC result, so the activation after the convolution (a
  // ReLU6 before a padded depthwise one) fuses into them and writes the
  // padded buffer, where the plain product's [N, H*W, C] tiles left it a
  // memory-bound pass of its own (mobilenet_v2, 1 thread: 4.86 -> 4.39 ms
  // median of 4 alternating rounds; resnet50 unchanged; efficientnet_b0's
  // SiLU epilogues are compute-bound, 7.92 -> 8.12 ms). A dilated window
  // with fewer than 8 channels has runs of channels too short for the
  // implicit product's inner loop: patch rows.
  bool pointwise = kernel[0] == 1 && kernel[1] == 1 && strides[0] == 1 && strides[1] == 1 &&
                   llvm::all_of(pads, [](int64_t p) { return p == 0; }) && ow < 28;
  bool implicit = !pointwise && (channels >= 8 || dilations[1] == 1);
  if (pointwise) {
    col = tensor::CollapseShapeOp::create(b, loc, rowsType, x, SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
  } else if (implicit) {
    product = implicitConvProduct(b, loc, zeroPadNhwc(b, loc, x, pads, et), w, kernel, strides, dilations, oh,
                                  ow, et);
  } else {
    x = zeroPadNhwc(b, loc, x, pads, et);
    auto colType = RankedTensorType::get({n0, oh, ow, kernel[0], kernel[1], channels}, et);
    // Patch rows (few channels, dilated): a plain copy of each window.
    SmallVector<AffineMap> maps = {
        AffineMap::get(6, 0,
                       {d(0), d(1) * strides[0] + d(3) * dilations[0], d(2) * strides[1] + d(4) * dilations[1], d(5)},
                       ctx),
        AffineMap::getMultiDimIdentityMap(6, ctx)};
    col = linalg::GenericOp::create(
              b, loc, colType, ValueRange{x},
              ValueRange{emptyTensor(b, loc, colType, {batch, c(oh), c(ow), c(kernel[0]), c(kernel[1]), c(channels)})},
              maps, SmallVector<IteratorType>(6, IteratorType::parallel),
              [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); })
              .getResult(0);
    col = tensor::CollapseShapeOp::create(b, loc, rowsType, col,
                                          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4, 5}});
  }
  if (!implicit)
    product = packedProduct(b, loc, col, w, et); // [N, OH*OW, Cout/B, B]
  int64_t width = cast<RankedTensorType>(w.getType()).getDimSize(2);
  // out[n, oh, ow, cb, cw] = product[n, oh*OW + ow, cb, cw] (+ bias[cb*B + cw]),
  // then viewed as [N, OH, OW, Cout]. The implicit product is already
  // [N, OH, OW, Cout/B, B]: read element for element, this is an epilogue
  // that kiln-fuse-epilogues moves into the product's tiles.
  auto blockedType = RankedTensorType::get({n0, oh, ow, cout / width, width}, et);
  SmallVector<Value> inputs = {product};
  SmallVector<AffineMap> maps = {implicit ? AffineMap::getMultiDimIdentityMap(5, ctx)
                                          : AffineMap::get(5, 0, {d(0), d(1) * ow + d(2), d(3), d(4)}, ctx)};
  if (bias) {
    inputs.push_back(tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({cout / width, width}, et), bias,
                                                   SmallVector<ReassociationIndices>{{0, 1}}));
    maps.push_back(AffineMap::get(5, 0, {d(3), d(4)}, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(5, ctx));
  Value init = emptyTensor(b, loc, blockedType, {batch, c(oh), c(ow), c(cout / width), c(width)});
  auto out = linalg::GenericOp::create(
      b, loc, blockedType, inputs, ValueRange{init}, maps, SmallVector<IteratorType>(5, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, bias ? addValues(nb, l, args[0], args[1]) : args[0]);
      });
  return tensor::CollapseShapeOp::create(b, loc, rt, out.getResult(0),
                                         SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}});
}

/// nhwc_conv, depthwise (group = C = Cout): out[n, oh, ow, c] = bias[c] +
/// sum over kh, kw of x[n, oh*s + kh*d, ow*s + kw*d, c] * w[kh, kw, c], in
/// vectors of 8 channels (contiguous in the input, the weight and the output
/// for any stride) accumulated in registers across the taps. (Group-1 ones
/// became packed convolutions in kiln-pack-matmul-weights.)
struct NhwcConvPattern : OpConversionPattern<NhwcConvOp> {
  NhwcConvPattern(MLIRContext *ctx, int64_t vectorBits) : OpConversionPattern(ctx), vectorBits(vectorBits) {}
  int64_t vectorBits;
  LogicalResult
  matchAndRewrite(NhwcConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    auto wt = cast<RankedTensorType>(w.getType());
    int64_t channels = rt.getDimSize(3);
    if (wt.getDimSize(2) != 1 || op.getGroup() != channels || rt.isDynamicDim(1) || rt.isDynamicDim(2))
      return rewriter.notifyMatchFailure(op, "nhwc_conv lowers depthwise convolutions of static sizes");
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
    Value w3 = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({wt.getDimSize(0), wt.getDimSize(1), channels}, et), w,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    Value bias = adaptor.getBias();
    // A whole register of channels: 16 floats on AVX-512 where they divide
    // the channels, else 8 (a masked last vector where 8 does not divide).
    int64_t lanes = channelLanes(vectorBits, channels, et);
    auto vecType = VectorType::get({lanes}, et);
    bool exact = channels % lanes == 0;
    ChannelWindow window;
    window.width = lanes;
    window.kernel = ArrayRef<int64_t>(wt.getShape()).take_front(2);
    window.strides = strides;
    window.dilations = dilations;
    Value zero = scalarConstant(rewriter, loc, et, 0);
    // The window reads the unpadded input (no padded copy, no border fills), its taps past the
    // edges adding nothing.
    window.pads = op.getPads();
    window.padValue = zero;
    // A stride-1 convolution over a map of few rows (7x7) whose 1x1 convolution before splits
    // between threads by 64-channel panels: work items of 64 channels (see channelGroup).
    if (rt.getDimSize(1) <= kChannelGroupMaxRows && strides == ArrayRef<int64_t>{1, 1} && channels % 64 == 0 &&
        channels / 64 >= 4) {
      window.channelGroup = 64;
    } else if (auto xt = cast<RankedTensorType>(x.getType());
               rt.getDimSize(1) % 2 == 0 && !xt.isDynamicDim(2) &&
               channels * window.kernel[0] * xt.getDimSize(2) * int64_t(et.getIntOrFloatBitWidth() / 8) >
                   kWindowRowsL1Bytes) {
      // A window's input rows larger than L1 (28x28x192, 3 rows: 64 KiB) came from L2 once
      // for each output row that reads them (3 times): the widest group of channels (a
      // multiple of the vector, dividing the channels) whose window rows fit in
      // kWindowRowsL1Bytes, in halves of the rows (see channelGroupInHalves). mobilenet_v2's
      // features.5 depthwise convolution 38 -> 24.5 us on one thread.
      int64_t perChannel = window.kernel[0] * xt.getDimSize(2) * int64_t(et.getIntOrFloatBitWidth() / 8);
      for (int64_t g = std::min(channels - lanes, kWindowRowsL1Bytes / perChannel / lanes * lanes);
           g >= std::max<int64_t>(lanes, kMinChannelGroup); g -= lanes)
        if (channels % g == 0) {
          window.channelGroup = g;
          window.channelGroupInHalves = true;
          break;
        }
    }
    window.start = [&](OpBuilder &nb, Value ch) -> Value {
      if (!bias)
        return vector::BroadcastOp::create(nb, loc, vecType, zero);
      return vector::TransferReadOp::create(nb, loc, vecType, bias, ValueRange{ch}, zero, ArrayRef<bool>{exact});
    };
    window.tap = [&](OpBuilder &nb, int64_t kh, int64_t kw, Value ch) -> Value {
      return vector::TransferReadOp::create(nb, loc, vecType, w3,
                                            ValueRange{arith::ConstantIndexOp::create(nb, loc, kh),
                                                       arith::ConstantIndexOp::create(nb, loc, kw), ch},
                                            zero, ArrayRef<bool>{exact});
    };
    window.step = [&](OpBuilder &nb, Value acc, Value xv, Value wv) -> Value {
      return vector::FMAOp::create(nb, loc, xv, wv, acc);
    };
    rewriter.replaceOp(op, channelWindowKernel(rewriter, loc, x, rt, window));
    return success();
  }
};

/// packed_conv (2-D, group 1, static channels and spatial sizes): patch rows
/// col[n, oh, ow, c, kh, kw] = x[n, c, oh*s + kh*d, ...], viewed as
/// [N, OH*OW, K], times the transposed weight's panels [Cout/B, K, B] (the
/// packed matmul's product: its tiling and microkernel), then written NCHW
/// with the bias: a transpose that elementwise fusion merges with what
/// follows (ReLU, residual add).
struct PackedConvPattern : OpConversionPattern<PackedConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PackedConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    auto xt = cast<RankedTensorType>(x.getType());
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      dilations = op.getDilations();
    if (rt.getRank() != 4 || xt.isDynamicDim(1) || rt.isDynamicDim(1) || rt.isDynamicDim(2) ||
        rt.isDynamicDim(3))
      return rewriter.notifyMatchFailure(op, "packed_conv lowers 2-D convolutions with static sizes");
    if (op.getChannelsLast()) {
      rewriter.replaceOp(op, channelsLastPackedConv(rewriter, loc, op, x, w, adaptor.getBias()));
      return success();
    }
    int64_t channels = xt.getDimSize(1), cout = rt.getDimSize(1), oh = rt.getDimSize(2),
            ow = rt.getDimSize(3);
    int64_t reduction = channels * kernel[0] * kernel[1];
    auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    Value batch = dimValue(rewriter, loc, x, 0);
    x = zeroPadSpatial(rewriter, loc, x, op.getPads(), et);

    // col[n, oh, ow, c, kh, kw] = x[n, c, oh*s + kh*d, ow*s + kw*d]: each
    // output position's window, one row of the [N, OH*OW, K] view. (The
    // product's result is read back below through div/mod maps, not
    // reshaped: fusion would fold such a reshape into the product and drop
    // its packed tiling.)
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    int64_t n0 = rt.getDimSize(0);
    auto colType = RankedTensorType::get({n0, oh, ow, channels, kernel[0], kernel[1]}, et);
    SmallVector<AffineMap> colMaps = {
        AffineMap::get(6, 0,
                       {d(0), d(3), d(1) * strides[0] + d(4) * dilations[0], d(2) * strides[1] + d(5) * dilations[1]},
                       ctx),
        AffineMap::getMultiDimIdentityMap(6, ctx)};
    Value col = linalg::GenericOp::create(
                    rewriter, loc, colType, ValueRange{x},
                    ValueRange{emptyTensor(rewriter, loc, colType,
                                           {batch, c(oh), c(ow), c(channels), c(kernel[0]), c(kernel[1])})},
                    colMaps, SmallVector<IteratorType>(6, IteratorType::parallel),
                    [](OpBuilder &b, Location l, ValueRange args) { linalg::YieldOp::create(b, l, args[0]); })
                    .getResult(0);
    col = tensor::CollapseShapeOp::create(rewriter, loc, RankedTensorType::get({n0, oh * ow, reduction}, et), col,
                                          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4, 5}});

    // out[n, p, cout] = col[n, p, :] x W^T, as [N, OH*OW, Cout/B, B].
    Value product = packedProduct(rewriter, loc, col, w, et);
    int64_t width = cast<RankedTensorType>(w.getType()).getDimSize(2);

    // NCHW from [N, OH*OW, Cout/B, B], plus the bias.
    SmallVector<Value> inputs = {product};
    SmallVector<AffineMap> maps = {
        AffineMap::get(4, 0, {d(0), d(2) * ow + d(3), d(1).floorDiv(width), d(1) % width}, ctx)};
    Value bias = adaptor.getBias();
    if (bias) {
      inputs.push_back(bias);
      maps.push_back(AffineMap::get(4, 0, {d(1)}, ctx));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(4, ctx));
    Value init = emptyTensor(rewriter, loc, rt, {batch, c(cout), c(oh), c(ow)});
    auto out = linalg::GenericOp::create(
        rewriter, loc, rt, inputs, ValueRange{init}, maps, SmallVector<IteratorType>(4, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, bias ? addValues(b, l, args[0], args[1]) : args[0]);
        });
    rewriter.replaceOp(op, out.getResult(0));
    return success();
  }
};

/// Transposed convolution written as a gather: every output position sums,
/// over input channels of its group and kernel taps, the input element that
/// the tap maps onto it (when the stride divides the offset and it is in
/// range). No scatter, so the output is written once per element.
struct ConvTransposePattern : OpConversionPattern<ConvTransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvTransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    auto wt = cast<RankedTensorType>(w.getType()), xt = cast<RankedTensorType>(x.getType());
    int64_t spatial = rt.getRank() - 2;
    ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(), dilations = op.getDilations();
    int64_t group = op.getGroup();
    auto c = [&](OpBuilder &b, Location l, int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
    // A weight of dynamic shape (a graph input) gives its sizes at run time:
    // `perGroup` returns them as values defined here, the static ones stay
    // constants built where they are used.
    int64_t kDyn = ShapedType::kDynamic;
    int64_t cinPerGroup = wt.isDynamicDim(0) ? kDyn : wt.getDimSize(0) / group;
    int64_t coutPerGroup = wt.getDimSize(1);
    Value cinPerGroupV, coutPerGroupV;
    if (cinPerGroup == kDyn)
      cinPerGroupV = arith::DivSIOp::create(rewriter, loc, dimValue(rewriter, loc, w, 0), c(rewriter, loc, group));
    if (coutPerGroup == kDyn)
      coutPerGroupV = dimValue(rewriter, loc, w, 1);
    Value xChannels = xt.isDynamicDim(1) ? dimValue(rewriter, loc, x, 1) : Value();
    auto sizeOf = [&](OpBuilder &b, Location l, int64_t v, Value dyn) -> Value {
      return v == kDyn ? dyn : c(b, l, v);
    };

    SmallVector<Value> dims = {dimValue(rewriter, loc, x, 0)};
    if (!rt.isDynamicDim(1))
      dims.push_back(c(rewriter, loc, rt.getDimSize(1)));
    else
      dims.push_back(arith::MulIOp::create(rewriter, loc, dimValue(rewriter, loc, w, 1), c(rewriter, loc, group)));
    // output_shape / auto_pad SAME_* kept for run time: the output size is
    // the requested one, the begin pads (all the gather reads) values.
    std::optional<StringRef> autoPad = op.getAutoPad();
    std::optional<ArrayRef<int64_t>> outputShape = op.getOutputShape();
    SmallVector<Value> runTimePadBegin(spatial), requestedSize(spatial);
    for (int64_t i = 0; i < spatial && (autoPad || outputShape); ++i) {
      Value in = dimValue(rewriter, loc, x, 2 + i);
      Value one = c(rewriter, loc, 1);
      Value size = outputShape ? (Value)c(rewriter, loc, (*outputShape)[i])
                               : (Value)arith::MulIOp::create(rewriter, loc, in, c(rewriter, loc, strides[i]));
      // total = s * (in - 1) + output_padding + (k - 1) * d + 1 - size, at
      // least 0 (a larger size grows the output at the end).
      Value span = arith::MulIOp::create(
          rewriter, loc, arith::SubIOp::create(rewriter, loc, dimValue(rewriter, loc, w, 2 + i), one),
          c(rewriter, loc, dilations[i]));
      Value total = arith::AddIOp::create(
          rewriter, loc,
          arith::MulIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, in, one),
                                c(rewriter, loc, strides[i])),
          span);
      total = arith::AddIOp::create(rewriter, loc, total, c(rewriter, loc, op.getOutputPadding()[i] + 1));
      total = arith::MaxSIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, total, size),
                                     c(rewriter, loc, 0));
      Value half = arith::DivSIOp::create(rewriter, loc, total, c(rewriter, loc, 2));
      runTimePadBegin[i] =
          autoPad && *autoPad == "SAME_LOWER" ? (Value)arith::SubIOp::create(rewriter, loc, total, half) : half;
      requestedSize[i] = size;
    }
    for (int64_t i = 0; i < spatial; ++i) {
      if (!rt.isDynamicDim(2 + i)) {
        dims.push_back(c(rewriter, loc, rt.getDimSize(2 + i)));
        continue;
      }
      if (requestedSize[i]) {
        dims.push_back(requestedSize[i]);
        continue;
      }
      Value in = dimValue(rewriter, loc, x, 2 + i);
      Value v = arith::MulIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, in, c(rewriter, loc, 1)),
                                      c(rewriter, loc, strides[i]));
      if (!wt.isDynamicDim(2 + i)) {
        int64_t extra = op.getOutputPadding()[i] + dilations[i] * (wt.getDimSize(2 + i) - 1) + 1 -
                        pads[i] - pads[spatial + i];
        dims.push_back(arith::AddIOp::create(rewriter, loc, v, c(rewriter, loc, extra)));
        continue;
      }
      // + output_padding + dilation * (k - 1) + 1 - pads
      Value k = dimValue(rewriter, loc, w, 2 + i);
      Value span = arith::MulIOp::create(rewriter, loc, arith::SubIOp::create(rewriter, loc, k, c(rewriter, loc, 1)),
                                         c(rewriter, loc, dilations[i]));
      v = arith::AddIOp::create(rewriter, loc, v, span);
      dims.push_back(arith::AddIOp::create(
          rewriter, loc, v,
          c(rewriter, loc, op.getOutputPadding()[i] + 1 - pads[i] - pads[spatial + i])));
    }
    Value init;
    if (Value bias = adaptor.getBias())
      init = channelBiasInit(rewriter, loc, rt, dims, bias);
    else
      init = filledTensor(rewriter, loc, rt, dims, scalarConstant(rewriter, loc, et, 0));

    // Iteration dims: n, oc, o_1..o_s, icg, k_1..k_s.
    int64_t numDims = 3 + 2 * spatial, icDim = 2 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // The reduction dims (icg, k...) get their extents from a shape-only
    // operand; both the weight and the input are read inside the body.
    SmallVector<int64_t> windowShape = {cinPerGroup};
    SmallVector<Value> windowDims;
    if (cinPerGroup == kDyn)
      windowDims.push_back(cinPerGroupV);
    SmallVector<AffineExpr> we = {d(icDim)}, oe = {d(0), d(1)};
    for (int64_t i = 0; i < spatial; ++i) {
      windowShape.push_back(wt.getDimSize(2 + i));
      if (wt.isDynamicDim(2 + i))
        windowDims.push_back(dimValue(rewriter, loc, w, 2 + i));
      we.push_back(d(icDim + 1 + i));
      oe.push_back(d(2 + i));
    }
    Value window = tensor::EmptyOp::create(rewriter, loc, windowShape, et, windowDims);
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, we, ctx), AffineMap::get(numDims, 0, oe, ctx)};
    SmallVector<IteratorType> iters(numDims, IteratorType::parallel);
    for (int64_t i = icDim; i < numDims; ++i)
      iters[i] = IteratorType::reduction;
    SmallVector<Value> inDims;
    for (int64_t i = 0; i < spatial; ++i)
      inDims.push_back(dimValue(rewriter, loc, x, 2 + i));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, rt, ValueRange{window}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value zero = c(b, l, 0);
          Value valid = arith::ConstantOp::create(b, l, b.getBoolAttr(true));
          SmallVector<Value> coords = {linalg::IndexOp::create(b, l, 0)};
          Value oc = linalg::IndexOp::create(b, l, 1);
          Value g = arith::DivSIOp::create(b, l, oc, sizeOf(b, l, coutPerGroup, coutPerGroupV));
          coords.push_back(arith::AddIOp::create(b, l,
                                                 arith::MulIOp::create(b, l, g, sizeOf(b, l, cinPerGroup, cinPerGroupV)),
                                                 linalg::IndexOp::create(b, l, icDim)));
          for (int64_t i = 0; i < spatial; ++i) {
            Value o = linalg::IndexOp::create(b, l, 2 + i);
            Value k = linalg::IndexOp::create(b, l, icDim + 1 + i);
            // offset = o + pad_begin - k*dilation; input i = offset / stride
            Value padBegin = runTimePadBegin[i] ? runTimePadBegin[i] : (Value)c(b, l, pads[i]);
            Value off = arith::SubIOp::create(b, l, arith::AddIOp::create(b, l, o, padBegin),
                                              arith::MulIOp::create(b, l, k, c(b, l, dilations[i])));
            Value q = arith::DivSIOp::create(b, l, off, c(b, l, strides[i]));
            Value exact = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                arith::MulIOp::create(b, l, q, c(b, l, strides[i])), off);
            Value inRange = arith::AndIOp::create(
                b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, off, zero),
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, q, inDims[i]));
            valid = arith::AndIOp::create(b, l, valid, arith::AndIOp::create(b, l, exact, inRange));
            Value last = arith::SubIOp::create(b, l, inDims[i], c(b, l, 1));
            coords.push_back(arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, q, zero), last));
          }
          if (cinPerGroup == kDyn || xt.isDynamicDim(1)) {
            // Run-time channel counts that disagree read only channels the input has.
            Value channels = xChannels ? xChannels : c(b, l, xt.getDimSize(1));
            valid = arith::AndIOp::create(
                b, l, valid, arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, coords[1], channels));
            coords[1] = arith::MinSIOp::create(b, l, coords[1], arith::SubIOp::create(b, l, channels, c(b, l, 1)));
          }
          Value xv = tensor::ExtractOp::create(b, l, x, coords);
          xv = arith::SelectOp::create(b, l, valid, xv, scalarConstant(b, l, et, 0));
          SmallVector<Value> wCoords = {coords[1],
                                        arith::RemSIOp::create(b, l, oc, sizeOf(b, l, coutPerGroup, coutPerGroupV))};
          for (int64_t i = 0; i < spatial; ++i)
            wCoords.push_back(linalg::IndexOp::create(b, l, icDim + 1 + i));
          Value wv = tensor::ExtractOp::create(b, l, w, wCoords);
          linalg::YieldOp::create(b, l, addValues(b, l, args[1], mulValues(b, l, xv, wv)));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateContractionLoweringPatterns(RewritePatternSet &patterns, bool wideHalfProducts, int64_t vectorBits) {
  patterns.add<MatMulPattern, GemmPattern>(patterns.getContext(), wideHalfProducts);
  patterns.add<PackedMatMulPattern, ConvPattern, PackedConvPattern, ConvTransposePattern>(patterns.getContext());
  patterns.add<NhwcConvPattern>(patterns.getContext(), vectorBits);
}

} // namespace kiln
