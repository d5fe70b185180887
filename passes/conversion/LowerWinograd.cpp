// graph.winograd_input / graph.winograd_output (the transforms of a Winograd F(m x m, 3 x 3)
// convolution, kiln-winograd-convs) -> vector code over channels.
//
// Both are a few additions (and, for m = 4, multiplications by small constants) per tile and
// channel, applied to whole vectors of channels: a tile's a x a input vectors (or its a x a
// products) are loaded once, combined in registers with the transform's constant coefficients
// (zeros skipped, +-1 as additions and subtractions), and each result is written once. As for
// the depthwise kernels (channelWindowKernel), the vectors are explicit: LLVM does not vectorize
// the equivalent scalar loops over several outputs.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/Winograd.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// acc + c * v (c * v without `acc`), as an addition or subtraction for c = +-1.
Value combineTerm(OpBuilder &b, Location loc, Value acc, double c, Value v,
                  const std::function<Value(double)> &splat) {
  if (!acc)
    return c == 1 ? v : c == -1 ? arith::NegFOp::create(b, loc, v).getResult() : arith::MulFOp::create(b, loc, v, splat(c));
  if (c == 1)
    return arith::AddFOp::create(b, loc, acc, v);
  if (c == -1)
    return arith::SubFOp::create(b, loc, acc, v);
  return vector::FMAOp::create(b, loc, v, splat(c), acc);
}

/// sum_k coeffs[k * stride] * values[k] over the nonzero coefficients (at least one).
Value combine(OpBuilder &b, Location loc, const double *coeffs, int64_t stride, ArrayRef<Value> values) {
  auto type = cast<VectorType>(values[0].getType());
  std::function<Value(double)> splat = [&](double c) -> Value {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), c)));
  };
  // Started from a positive term where there is one: b - a, not -a + b.
  int64_t n = values.size(), start = -1;
  for (int64_t k = 0; k < n && start < 0; ++k)
    if (coeffs[k * stride] > 0)
      start = k;
  for (int64_t k = 0; k < n && start < 0; ++k)
    if (coeffs[k * stride] != 0)
      start = k;
  Value acc = combineTerm(b, loc, Value(), coeffs[start * stride], values[start], splat);
  for (auto [k, v] : llvm::enumerate(values)) {
    double c = coeffs[k * stride];
    if (c == 0 || (int64_t)k == start)
      continue;
    acc = combineTerm(b, loc, acc, c, v, splat);
  }
  return acc;
}

/// X^T d X for a square [a][a] `x` (row-major) applied on both sides of the a x a vectors `d`:
/// out[r][c] = sum_i sum_j x[r][i] d[i][j] x[c][j], rows of `x` taken `rows` at a time (the
/// output is rows x rows: a x a for B^T, m x m for A^T).
SmallVector<Value> sandwich(OpBuilder &b, Location loc, const double *x, int64_t rows, int64_t a, ArrayRef<Value> d) {
  // t[r][j] = sum_i x[r][i] d[i][j]
  SmallVector<Value> t;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < a; ++j) {
      SmallVector<Value> column;
      for (int64_t i = 0; i < a; ++i)
        column.push_back(d[i * a + j]);
      t.push_back(combine(b, loc, x + r * a, 1, column));
    }
  // out[r][c] = sum_j t[r][j] x[c][j]
  SmallVector<Value> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < rows; ++c)
      out.push_back(combine(b, loc, x + c * a, 1, ArrayRef<Value>(t).slice(r * a, a)));
  return out;
}

Value index(OpBuilder &b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

/// An scf.for over [lb, ub) by `step` carrying `carried`; `body` gets the induction variable and
/// the carried values and returns the new ones.
SmallVector<Value> forLoop(OpBuilder &b, Location loc, Value lb, Value ub, int64_t step, ValueRange carried,
                           const std::function<SmallVector<Value>(OpBuilder &, Value, ValueRange)> &body) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, index(b, loc, step), carried);
  OpBuilder lb2 = OpBuilder::atBlockBegin(loop.getBody());
  scf::YieldOp::create(lb2, loc, body(lb2, loop.getInductionVar(), loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
}

/// winograd_input: work items (n, ty), one row of tiles each; per tile and vector of channels,
/// the a x a input vectors of the zero-padded input, B^T d B, one vector into each of the
/// result's a^2 leading slices.
struct WinogradInputPattern : OpConversionPattern<WinogradInputOp> {
  WinogradInputPattern(MLIRContext *ctx, int64_t vectorBits) : OpConversionPattern(ctx), vectorBits(vectorBits) {}
  int64_t vectorBits;

  LogicalResult matchAndRewrite(WinogradInputOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    Type et = xt.getElementType();
    auto t = winograd::matrices(op.getTile());
    int64_t m = t.m, a = t.a, h = xt.getDimSize(1), w = xt.getDimSize(2), channels = xt.getDimSize(3);
    ArrayRef<int64_t> pads = op.getPads();
    int64_t th = (h + pads[0] + pads[2] - 2 + m - 1) / m, tw = (w + pads[1] + pads[3] - 2 + m - 1) / m;
    int64_t lanes = channelLanes(vectorBits, channels, et);
    if (channels % lanes != 0)
      return rewriter.notifyMatchFailure(op, "channels not a multiple of the vector width");
    // Zero-padded so that every tile's window is inside: the last tiles may reach past the
    // output, their extra outputs are never written (winograd_output cuts them).
    int64_t hp = m * th + 2, wp = m * tw + 2;
    SmallVector<OpFoldResult> low = {rewriter.getIndexAttr(0), rewriter.getIndexAttr(pads[0]),
                                     rewriter.getIndexAttr(pads[1]), rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> high = {rewriter.getIndexAttr(0), rewriter.getIndexAttr(hp - h - pads[0]),
                                      rewriter.getIndexAttr(wp - w - pads[1]), rewriter.getIndexAttr(0)};
    Value zero = scalarConstant(rewriter, loc, et, 0);
    Value padded = tensor::PadOp::create(rewriter, loc, Type(), x, low, high, zero);
    Value batch = dimValue(rewriter, loc, x, 0);
    Value init = emptyTensor(rewriter, loc, cast<RankedTensorType>(op.getType()),
                             {index(rewriter, loc, a * a), batch, index(rewriter, loc, th * tw),
                              index(rewriter, loc, channels)});
    auto vecType = VectorType::get({lanes}, et);
    auto forall = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{tensor::getMixedSize(rewriter, loc, x, 0), rewriter.getIndexAttr(th)},
        ValueRange{init}, std::nullopt);
    OpBuilder fb = OpBuilder::atBlockBegin(forall.getBody());
    Value n = forall.getInductionVars()[0], ty = forall.getInductionVars()[1];
    Value first = arith::MulIOp::create(fb, loc, ty, index(fb, loc, tw));
    // The work item's row of tiles in every element's slice: [a^2, 1, TW, C].
    auto rowType = RankedTensorType::get({a * a, 1, tw, channels}, et);
    SmallVector<OpFoldResult> offsets = {fb.getIndexAttr(0), n, first, fb.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {fb.getIndexAttr(a * a), fb.getIndexAttr(1), fb.getIndexAttr(tw),
                                       fb.getIndexAttr(channels)};
    SmallVector<OpFoldResult> strides(4, fb.getIndexAttr(1));
    Value row = tensor::ExtractSliceOp::create(fb, loc, rowType, forall.getRegionIterArgs()[0], offsets, sizes, strides);
    Value top = arith::MulIOp::create(fb, loc, ty, index(fb, loc, m));
    SmallVector<bool> inBounds = {true};
    SmallVector<Value> written = forLoop(
        fb, loc, index(fb, loc, 0), index(fb, loc, tw), 1, row, [&](OpBuilder &tb, Value tx, ValueRange tiles) {
          Value left = arith::MulIOp::create(tb, loc, tx, index(tb, loc, m));
          return forLoop(tb, loc, index(tb, loc, 0), index(tb, loc, channels), lanes, tiles,
                         [&](OpBuilder &cb, Value ch, ValueRange outs) {
                           SmallVector<Value> d;
                           for (int64_t i = 0; i < a; ++i) {
                             Value r = arith::AddIOp::create(cb, loc, top, index(cb, loc, i));
                             for (int64_t j = 0; j < a; ++j) {
                               Value col = arith::AddIOp::create(cb, loc, left, index(cb, loc, j));
                               d.push_back(vector::TransferReadOp::create(cb, loc, vecType, padded,
                                                                          ValueRange{n, r, col, ch}, zero, inBounds));
                             }
                           }
                           SmallVector<Value> v = sandwich(cb, loc, t.bt, a, a, d);
                           Value out = outs[0];
                           for (auto [e, value] : llvm::enumerate(v))
                             out = vector::TransferWriteOp::create(
                                       cb, loc, value, out, ValueRange{index(cb, loc, e), index(cb, loc, 0), tx, ch},
                                       inBounds)
                                       .getResult();
                           return SmallVector<Value>{out};
                         });
        });
    OpBuilder ib = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(ib, loc, written[0], forall.getRegionIterArgs()[0], offsets, sizes, strides);
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

/// winograd_output: work items (n, ty), one row of tiles each ([1, m, OW, K] of the output); per
/// tile and vector of channels, the a^2 products' vectors, A^T M A + bias, the tile's m x m
/// vectors written (fewer in a last column of tiles that reaches past OW, and in a last row of
/// tiles that reaches past OH: its block has OH mod m rows). Its rows are tiles that an
/// elementwise consumer (bias is in already: a ReLU, a residual add) can finish while they are
/// in cache (kiln-fuse-epilogues). (A last row of tiles written whole into rows past the output
/// and cut off by a slice kept the consumer out: squeezenet's ReLUs after its 55x55, 27x27 and
/// 13x13 convolutions were passes of their own, 5% of its time on the Xeon.)
struct WinogradOutputPattern : OpConversionPattern<WinogradOutputOp> {
  WinogradOutputPattern(MLIRContext *ctx, int64_t vectorBits) : OpConversionPattern(ctx), vectorBits(vectorBits) {}
  int64_t vectorBits;

  LogicalResult matchAndRewrite(WinogradOutputOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    auto t = winograd::matrices(op.getTile());
    int64_t m = t.m, a = t.a, oh = op.getHeight(), ow = op.getWidth(), channels = rt.getDimSize(3);
    int64_t th = (oh + m - 1) / m, tw = (ow + m - 1) / m;
    int64_t lanes = channelLanes(vectorBits, channels, et);
    if (channels % lanes != 0)
      return rewriter.notifyMatchFailure(op, "channels not a multiple of the vector width");
    Value products = adaptor.getProducts();
    Value bias = adaptor.getBias();
    Value batch = dimValue(rewriter, loc, products, 1);
    Value init = emptyTensor(rewriter, loc, rt,
                             {batch, index(rewriter, loc, oh), index(rewriter, loc, ow), index(rewriter, loc, channels)});
    auto vecType = VectorType::get({lanes}, et);
    Value zero = scalarConstant(rewriter, loc, et, 0);
    SmallVector<bool> inBounds = {true};
    auto forall = scf::ForallOp::create(rewriter, loc,
                                        ArrayRef<OpFoldResult>{tensor::getMixedSize(rewriter, loc, products, 1),
                                                               rewriter.getIndexAttr(th)},
                                        ValueRange{init}, std::nullopt);
    OpBuilder fb = OpBuilder::atBlockBegin(forall.getBody());
    Value n = forall.getInductionVars()[0], ty = forall.getInductionVars()[1];
    Value top = arith::MulIOp::create(fb, loc, ty, index(fb, loc, m));
    // The block's rows: m, or OH mod m in a last row of tiles that reaches past OH, where the
    // rows from `full` on are written only while they are inside it.
    int64_t full = oh % m == 0 ? m : oh % m;
    Value rows = full == m ? Value()
                           : arith::MinSIOp::create(fb, loc, index(fb, loc, m),
                                                    arith::SubIOp::create(fb, loc, index(fb, loc, oh), top));
    SmallVector<OpFoldResult> offsets = {n, top, fb.getIndexAttr(0), fb.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {fb.getIndexAttr(1), rows ? OpFoldResult(rows) : fb.getIndexAttr(m),
                                       fb.getIndexAttr(ow), fb.getIndexAttr(channels)};
    SmallVector<OpFoldResult> strides(4, fb.getIndexAttr(1));
    Value block = tensor::ExtractSliceOp::create(
        fb, loc, RankedTensorType::get({1, rows ? ShapedType::kDynamic : m, ow, channels}, et),
        forall.getRegionIterArgs()[0], offsets, sizes, strides);
    Value first = arith::MulIOp::create(fb, loc, ty, index(fb, loc, tw));
    // Tiles [lb, ub) of the row, each writing `cols` columns.
    auto tiles = [&](int64_t lb, int64_t ub, int64_t cols, Value carried) -> Value {
      return forLoop(fb, loc, index(fb, loc, lb), index(fb, loc, ub), 1, carried,
                     [&](OpBuilder &tb, Value tx, ValueRange outs) {
                       Value tileIndex = arith::AddIOp::create(tb, loc, first, tx);
                       Value left = arith::MulIOp::create(tb, loc, tx, index(tb, loc, m));
                       return forLoop(
                           tb, loc, index(tb, loc, 0), index(tb, loc, channels), lanes, outs,
                           [&](OpBuilder &cb, Value ch, ValueRange out) -> SmallVector<Value> {
                             SmallVector<Value> mv;
                             for (int64_t e = 0; e < a * a; ++e)
                               mv.push_back(vector::TransferReadOp::create(
                                   cb, loc, vecType, products, ValueRange{index(cb, loc, e), n, tileIndex, ch}, zero,
                                   inBounds));
                             SmallVector<Value> y = sandwich(cb, loc, t.at, m, a, mv);
                             Value b0 = bias ? vector::TransferReadOp::create(cb, loc, vecType, bias, ValueRange{ch},
                                                                              zero, inBounds)
                                                   .getResult()
                                             : Value();
                             Value acc = out[0];
                             for (int64_t r = 0; r < m; ++r)
                               for (int64_t c = 0; c < cols; ++c) {
                                 Value v = y[r * m + c];
                                 if (b0)
                                   v = arith::AddFOp::create(cb, loc, v, b0);
                                 Value col = arith::AddIOp::create(cb, loc, left, index(cb, loc, c));
                                 auto write = [&](OpBuilder &wb, Value into) -> Value {
                                   return vector::TransferWriteOp::create(
                                              wb, loc, v, into,
                                              ValueRange{index(wb, loc, 0), index(wb, loc, r), col, ch}, inBounds)
                                       .getResult();
                                 };
                                 if (r < full) {
                                   acc = write(cb, acc);
                                   continue;
                                 }
                                 Value inside = arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::slt,
                                                                      index(cb, loc, r), rows);
                                 auto guarded = scf::IfOp::create(cb, loc, TypeRange{acc.getType()}, inside,
                                                                  /*withElseRegion=*/true);
                                 OpBuilder tb = guarded.getThenBodyBuilder();
                                 scf::YieldOp::create(tb, loc, write(tb, acc));
                                 OpBuilder eb = guarded.getElseBodyBuilder();
                                 scf::YieldOp::create(eb, loc, acc);
                                 acc = guarded.getResult(0);
                               }
                             return {acc};
                           });
                     })[0];
    };
    int64_t whole = ow / m;
    Value done = tiles(0, whole, m, block);
    if (whole < tw)
      done = tiles(whole, tw, ow - whole * m, done);
    OpBuilder ib = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(ib, loc, done, forall.getRegionIterArgs()[0], offsets, sizes, strides);
    forall->setAttr("kiln.epilogue_tiles", rewriter.getUnitAttr());
    rewriter.replaceOp(op, forall.getResults());
    return success();
  }
};

} // namespace

void populateWinogradLoweringPatterns(RewritePatternSet &patterns, int64_t vectorBits) {
  patterns.add<WinogradInputPattern, WinogradOutputPattern>(patterns.getContext(), vectorBits);
}

} // namespace kiln
