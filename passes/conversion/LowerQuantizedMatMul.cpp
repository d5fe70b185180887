// graph.quantized_matmul / graph.integer_matmul -> loop nests over weight panels (f32 from int8/int4, or
// 16-bit pair products), or, for panels one column wide (GPU targets), one reduction per output.
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

/// Rows of one work item: a panel's weights (K x B bytes, or half that)
/// stay in cache while this many rows of a prompt pass over them.
constexpr int64_t kTileRows = 64;
/// Columns of a register block (its rows: PanelProductPattern): each weight
/// vector converted once feeds every row of the block.
constexpr int64_t kBlockCols = 32;

/// Rows [lb, ub) of a work item's `tile` in blocks of `block`, its columns
/// [0, width) `cols` at a time: `body(j0, rows)` (rows: the lhs row of each
/// row of the block) returns one vector per row, written at (row, j0).
Value forRowBlocks(OpBuilder &b, Location loc, Value tile, Value r0, Value lb, Value ub, int64_t block,
                   int64_t width, int64_t cols,
                   function_ref<SmallVector<Value>(Value j0, ArrayRef<Value> rows)> body) {
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto rowLoop = scf::ForOp::create(b, loc, lb, ub, c(block), ValueRange{tile});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  Value i0 = rowLoop.getInductionVar();
  auto colLoop = scf::ForOp::create(b, loc, c(0), c(width), c(cols), ValueRange{rowLoop.getRegionIterArg(0)});
  b.setInsertionPointToStart(colLoop.getBody());
  Value j0 = colLoop.getInductionVar();
  SmallVector<Value> rows;
  for (int64_t r = 0; r < block; ++r)
    rows.push_back(arith::AddIOp::create(b, loc, arith::AddIOp::create(b, loc, r0, i0), c(r)));
  SmallVector<Value> results = body(j0, rows);
  Value out = colLoop.getRegionIterArg(0);
  for (int64_t r = 0; r < block; ++r) {
    Value row = arith::AddIOp::create(b, loc, i0, c(r));
    out = vector::TransferWriteOp::create(b, loc, results[r], out, ValueRange{row, j0}, ArrayRef<bool>{true})
              .getResult();
  }
  scf::YieldOp::create(b, loc, out);
  b.setInsertionPointAfter(colLoop);
  scf::YieldOp::create(b, loc, colLoop.getResult(0));
  return rowLoop.getResult(0);
}

/// The kernel of one work item: rows [r0, r0 + rows) of `a` [M, K] times
/// panel `p`, written into `tile` [rows, B].
struct PanelKernel {
  OpBuilder &b;
  Location loc;
  Value a, w, scales, r0, p;
  int64_t bits, width, groups, groupRows; // groupRows: weight rows per group
  Type scaleType;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// The f32 vectors of weight row `kk` (bits 8: one k; bits 4: k = 2kk, 2kk+1).
  SmallVector<Value> weightVectors(OpBuilder &lb, Value kk, Value j0, int64_t cols) {
    auto i8 = VectorType::get({cols}, lb.getI8Type()), i32 = VectorType::get({cols}, lb.getI32Type()),
         f32 = VectorType::get({cols}, lb.getF32Type());
    Value pad = arith::ConstantOp::create(lb, loc, lb.getI8IntegerAttr(0));
    Value bytes = vector::TransferReadOp::create(lb, loc, i8, w, ValueRange{p, kk, j0}, pad, ArrayRef<bool>{true});
    if (bits == 8)
      return {arith::SIToFPOp::create(lb, loc, f32, bytes)};
    // Nibbles are sign-extended through i32: x86 has no byte shifts.
    Value wide = arith::ExtSIOp::create(lb, loc, i32, bytes);
    auto splat = [&](int64_t v) {
      return arith::ConstantOp::create(lb, loc, DenseElementsAttr::get(i32, lb.getI32IntegerAttr(v)));
    };
    Value lo = arith::ShRSIOp::create(lb, loc, arith::ShLIOp::create(lb, loc, wide, splat(28)), splat(28));
    Value hi = arith::ShRSIOp::create(lb, loc, wide, splat(4));
    return {arith::SIToFPOp::create(lb, loc, f32, lo), arith::SIToFPOp::create(lb, loc, f32, hi)};
  }

  /// accs[r] + a[rows[r], k] * w for the weights of row `kk` (times `scale`
  /// when given), every row r.
  SmallVector<Value> accumulate(OpBuilder &kb, Value kk, Value j0, ArrayRef<Value> rows, ValueRange accs,
                                Value scale, int64_t cols) {
    auto f32 = VectorType::get({cols}, kb.getF32Type());
    SmallVector<Value> acc(accs);
    for (auto [half, v] : llvm::enumerate(weightVectors(kb, kk, j0, cols))) {
      if (scale)
        v = arith::MulFOp::create(kb, loc, v, scale);
      Value k = bits == 8 ? kk
                          : arith::AddIOp::create(kb, loc,
                                                  arith::MulIOp::create(kb, loc, kk, arith::ConstantIndexOp::create(kb, loc, 2)),
                                                  arith::ConstantIndexOp::create(kb, loc, half));
      for (auto [r, row] : llvm::enumerate(rows)) {
        Value x = tensor::ExtractOp::create(kb, loc, a, ValueRange{row, k});
        acc[r] = vector::FMAOp::create(kb, loc, vector::BroadcastOp::create(kb, loc, f32, x), v, acc[r]);
      }
    }
    return acc;
  }

  /// The scales of group `g` for columns [j0, j0 + cols), as f32.
  Value groupScale(OpBuilder &gb, Value g, Value j0, int64_t cols) {
    Value pad = arith::ConstantOp::create(gb, loc, gb.getZeroAttr(scaleType));
    Value v = vector::TransferReadOp::create(gb, loc, VectorType::get({cols}, scaleType), scales, ValueRange{p, g, j0},
                                             pad, ArrayRef<bool>{true});
    return scaleType.isF32() ? v : arith::ExtFOp::create(gb, loc, VectorType::get({cols}, gb.getF32Type()), v);
  }

  /// Rows [lb, ub) of the tile in blocks of `block`, `cols` columns at a time.
  /// One group (int8 per column): products summed, scaled once at the end.
  /// Several groups: a block of rows scales each weight vector once for all
  /// its rows; a single row (decoding) instead sums each group's products
  /// and scales the sum, one multiply per group rather than per weight.
  Value rowBlocks(Value tile, Value lb, Value ub, int64_t block, int64_t cols) {
    auto f32 = VectorType::get({cols}, b.getF32Type());
    Value zeroVec = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(f32, b.getF32FloatAttr(0)));
    return forRowBlocks(b, loc, tile, r0, lb, ub, block, width, cols, [&](Value j0, ArrayRef<Value> rows) {
      SmallVector<Value> zeros(block, zeroVec);
      bool scaleWeights = groups > 1 && block > 1;
      auto groupLoop = scf::ForOp::create(b, loc, c(0), c(groups), c(1), zeros);
      {
        OpBuilder gb = OpBuilder::atBlockBegin(groupLoop.getBody());
        Value g = groupLoop.getInductionVar();
        Value kk0 = arith::MulIOp::create(gb, loc, g, arith::ConstantIndexOp::create(gb, loc, groupRows));
        Value kk1 = arith::AddIOp::create(gb, loc, kk0, arith::ConstantIndexOp::create(gb, loc, groupRows));
        Value s = groups > 1 ? groupScale(gb, g, j0, cols) : Value();
        // Group sums start from zero; otherwise the totals carry through.
        bool groupSums = groups > 1 && !scaleWeights;
        ValueRange init = groupSums ? ValueRange(zeros) : ValueRange(groupLoop.getRegionIterArgs());
        auto kLoop = scf::ForOp::create(gb, loc, kk0, kk1, arith::ConstantIndexOp::create(gb, loc, 1), init);
        {
          OpBuilder kb = OpBuilder::atBlockBegin(kLoop.getBody());
          scf::YieldOp::create(kb, loc, accumulate(kb, kLoop.getInductionVar(), j0, rows, kLoop.getRegionIterArgs(),
                                                   scaleWeights ? s : Value(), cols));
        }
        SmallVector<Value> total(kLoop.getResults());
        if (groupSums)
          for (int64_t r = 0; r < block; ++r)
            total[r] = vector::FMAOp::create(gb, loc, kLoop.getResult(r), s, groupLoop.getRegionIterArg(r));
        scf::YieldOp::create(gb, loc, total);
      }
      SmallVector<Value> result(groupLoop.getResults());
      if (groups == 1) {
        Value s = groupScale(b, c(0), j0, cols);
        for (Value &v : result)
          v = arith::MulFOp::create(b, loc, v, s);
      }
      return result;
    });
  }
};


/// The integer kernel of graph.quantized_matmul's `dynamic` form and of
/// graph.integer_matmul: rows of `pairs` [M, K/2] (each i32 two 16-bit
/// lanes, k = 2j low) times panel `p` of `w` [P, K/2, 2B]; the 32-bit sums,
/// or, with `scales`, the sums scaled by the row's `amax` / 127 and the
/// column's scale.
struct IntegerPanelKernel {
  OpBuilder &b;
  Location loc;
  Value pairs, amax, w, scales, r0, p;
  int64_t width, kPairs;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// acc + sum over each pair of 16-bit lanes of x * y, marked
  /// kiln.pair_product: kiln-select-pair-products turns it into x86's pair
  /// product (vpmaddwd; vpdpwssd with VNNI) after bufferization, since LLVM
  /// does not recognize this form once one operand is a broadcast.
  Value pairDot(OpBuilder &kb, Value x, Value y, Value acc, int64_t cols) {
    auto i32 = VectorType::get({cols}, kb.getI32Type());
    SmallVector<int64_t> even, odd;
    for (int64_t i = 0; i < cols; ++i) {
      even.push_back(2 * i);
      odd.push_back(2 * i + 1);
    }
    auto half = [&](Value v, ArrayRef<int64_t> mask) {
      return arith::ExtSIOp::create(kb, loc, i32, vector::ShuffleOp::create(kb, loc, v, v, mask));
    };
    Value lo = arith::MulIOp::create(kb, loc, half(x, even), half(y, even));
    Value hi = arith::MulIOp::create(kb, loc, half(x, odd), half(y, odd));
    auto pair = arith::AddIOp::create(kb, loc, lo, hi);
    pair->setAttr("kiln.pair_product", kb.getUnitAttr());
    return arith::AddIOp::create(kb, loc, acc, pair);
  }

  Value rowBlocks(Value tile, Value lb, Value ub, int64_t block, int64_t cols) {
    auto i32 = VectorType::get({cols}, b.getI32Type()), f32 = VectorType::get({cols}, b.getF32Type());
    auto i16x2 = VectorType::get({2 * cols}, b.getI16Type()), i8x2 = VectorType::get({2 * cols}, b.getI8Type());
    Value zeroVec = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(i32, b.getI32IntegerAttr(0)));
    return forRowBlocks(b, loc, tile, r0, lb, ub, block, width, cols, [&](Value j0, ArrayRef<Value> rows) {
      Value byteCol = arith::MulIOp::create(b, loc, j0, c(2));
      auto kLoop = scf::ForOp::create(b, loc, c(0), c(kPairs), c(1), SmallVector<Value>(block, zeroVec));
      {
        OpBuilder kb = OpBuilder::atBlockBegin(kLoop.getBody());
        Value j = kLoop.getInductionVar();
        Value pad = arith::ConstantOp::create(kb, loc, kb.getI8IntegerAttr(0));
        Value bytes = vector::TransferReadOp::create(kb, loc, i8x2, w, ValueRange{p, j, byteCol}, pad,
                                                     ArrayRef<bool>{true});
        Value wv = arith::ExtSIOp::create(kb, loc, i16x2, bytes);
        SmallVector<Value> acc;
        for (int64_t r = 0; r < block; ++r) {
          Value pair = tensor::ExtractOp::create(kb, loc, pairs, ValueRange{rows[r], j});
          Value av = vector::BitCastOp::create(kb, loc, i16x2, vector::BroadcastOp::create(kb, loc, i32, pair));
          acc.push_back(pairDot(kb, av, wv, kLoop.getRegionIterArg(r), cols));
        }
        scf::YieldOp::create(kb, loc, acc);
      }
      // Without scales (graph.integer_matmul) the 32-bit sums are the result.
      SmallVector<Value> result(kLoop.getResults());
      if (!scales)
        return result;
      Value fpad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
      Value s = vector::TransferReadOp::create(b, loc, f32, scales, ValueRange{p, c(0), j0}, fpad,
                                               ArrayRef<bool>{true});
      Value inv127 = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f / 127.0f));
      for (int64_t r = 0; r < block; ++r) {
        Value rowScale = arith::MulFOp::create(b, loc, tensor::ExtractOp::create(b, loc, amax, ValueRange{rows[r]}),
                                               inv127);
        result[r] = arith::MulFOp::create(b, loc, arith::SIToFPOp::create(b, loc, f32, result[r]),
                                          arith::MulFOp::create(b, loc, s, vector::BroadcastOp::create(b, loc, f32, rowScale)));
      }
      return result;
    });
  }
};

/// Two 16-bit lanes in one i32: `lo` (k = 2j) in the low half, `hi` above.
Value packLanes(OpBuilder &nb, Location nl, Value lo, Value hi) {
  Value mask = arith::ConstantOp::create(nb, nl, nb.getI32IntegerAttr(0xFFFF));
  Value up = arith::ShLIOp::create(nb, nl, hi, arith::ConstantOp::create(nb, nl, nb.getI32IntegerAttr(16)));
  return arith::OrIOp::create(nb, nl, arith::AndIOp::create(nb, nl, lo, mask), up);
}

/// `a` [M, K] (i32 values that fit 16 bits) as lane pairs [M, K/2].
Value pairRows(OpBuilder &b, Location loc, Value a, Value m, int64_t k) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  Value pairs = emptyTensor(b, loc, RankedTensorType::get({ShapedType::kDynamic, k / 2}, b.getI32Type()), {m});
  return linalg::GenericOp::create(
             b, loc, pairs.getType(), ValueRange{a, a}, ValueRange{pairs},
             SmallVector<AffineMap>{AffineMap::get(2, 0, {d(0), d(1) * 2}, ctx),
                                    AffineMap::get(2, 0, {d(0), d(1) * 2 + 1}, ctx),
                                    AffineMap::get(2, 0, {d(0), d(1)}, ctx)},
             SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
             [](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, packLanes(nb, nl, args[0], args[1]));
             })
      .getResult(0);
}

/// max |x| along the last dim of `a` [..., K] (f32): [...].
Value rowAbsMax(OpBuilder &b, Location loc, Value a) {
  MLIRContext *ctx = b.getContext();
  auto at = cast<RankedTensorType>(a.getType());
  unsigned rank = at.getRank();
  SmallVector<Value> dims = dimsOf(b, loc, a);
  dims.pop_back();
  Type f32 = b.getF32Type();
  Value amax = filledTensor(b, loc, RankedTensorType::get(at.getShape().drop_back(), f32), dims,
                            scalarConstant(b, loc, f32, 0));
  SmallVector<utils::IteratorType> iterators(rank - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, amax.getType(), ValueRange{a}, ValueRange{amax},
             SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx),
                                    AffineMap::getMultiDimIdentityMap(rank, ctx).getMajorSubMap(rank - 1)},
             iterators,
             [](OpBuilder &nb, Location nl, ValueRange args) {
               Value v = math::AbsFOp::create(nb, nl, args[0]);
               linalg::YieldOp::create(nb, nl, arith::MaximumFOp::create(nb, nl, args[1], v).getResult());
             })
      .getResult(0);
}

/// `x` quantized to int8 by its row's max |x| `amax` (round half to even of x * 127 / amax), as
/// an i32; an all-zero row (amax 0) gives 0, not NaN.
Value quantizeByRowMax(OpBuilder &nb, Location nl, Value x, Value amax) {
  Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
  Value hiBound = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(127));
  Value loBound = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(-127));
  Value positive = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, amax, zero);
  Value inv = arith::DivFOp::create(nb, nl, hiBound, amax);
  Value q = math::RoundEvenOp::create(nb, nl, arith::MulFOp::create(nb, nl, x, inv));
  q = arith::MinimumFOp::create(nb, nl, arith::MaximumFOp::create(nb, nl, q, loBound), hiBound);
  q = arith::SelectOp::create(nb, nl, positive, q, zero);
  return arith::FPToSIOp::create(nb, nl, nb.getI32Type(), q);
}

/// Per row of `a` [M, K]: max |a| ([M]) and the row quantized to int8
/// (quantizeByRowMax) in pairs of 16-bit lanes ([M, K/2] i32).
std::pair<Value, Value> quantizeRows(OpBuilder &b, Location loc, Value a, Value m, int64_t k) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  Value amax = rowAbsMax(b, loc, a);
  Value pairs = emptyTensor(b, loc, RankedTensorType::get({ShapedType::kDynamic, k / 2}, b.getI32Type()), {m});
  pairs = linalg::GenericOp::create(
              b, loc, pairs.getType(), ValueRange{a, a, amax}, ValueRange{pairs},
              SmallVector<AffineMap>{AffineMap::get(2, 0, {d(0), d(1) * 2}, ctx),
                                     AffineMap::get(2, 0, {d(0), d(1) * 2 + 1}, ctx),
                                     AffineMap::get(2, 0, {d(0)}, ctx), AffineMap::get(2, 0, {d(0), d(1)}, ctx)},
              SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                linalg::YieldOp::create(nb, nl,
                                        packLanes(nb, nl, quantizeByRowMax(nb, nl, args[0], args[2]),
                                                  quantizeByRowMax(nb, nl, args[1], args[2])));
              })
              .getResult(0);
  return {amax, pairs};
}

/// Fills rows [lb, ub) of one work item's tile [rows, B] (panel `p`, first
/// row `r0`) in blocks of `block` rows, `cols` columns at a time.
using TileFiller =
    std::function<Value(Value tile, Value r0, Value p, Value lb, Value ub, int64_t block, int64_t cols)>;

/// The skeleton shared by the panel products: the lhs rows flattened to one
/// dim, one scf.forall over (64-row tile, panel) whose items fill their tile
/// (`prepare` first builds what the kernels read from the flattened lhs),
/// then the padded columns dropped and the rows unflattened.
Value lowerPanels(OpBuilder &b, Location loc, Value lhs, RankedTensorType rt, int64_t panels, int64_t width,
                  std::optional<uint64_t> columns, int64_t blockRows,
                  const std::function<TileFiller(Value flat, Value m)> &prepare) {
  int64_t blockCols = std::min(kBlockCols, width);
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  // (tensor.reshape, not collapse/expand_shape: MLIR 22's
  // expand-strided-metadata crashes on an expand_shape with two dynamic dims
  // in one group.)
  Value a = lhs;
  auto at = cast<RankedTensorType>(a.getType());
  int64_t rank = at.getRank();
  SmallVector<Value> outerDims;
  Value rowCount = c(1);
  int64_t staticRows = 1;
  for (int64_t i = 0; i < rank - 1; ++i) {
    outerDims.push_back(dimValue(b, loc, a, i));
    rowCount = arith::MulIOp::create(b, loc, rowCount, outerDims.back());
    staticRows = at.isDynamicDim(i) || staticRows == ShapedType::kDynamic ? ShapedType::kDynamic
                                                                         : staticRows * at.getDimSize(i);
  }
  if (rank > 2)
    a = reshapeTo(b, loc, a, RankedTensorType::get({staticRows, at.getDimSize(rank - 1)}, at.getElementType()),
                  {rowCount, dimValue(b, loc, a, rank - 1)});
  Value m = dimValue(b, loc, a, 0);
  auto flat = RankedTensorType::get({cast<RankedTensorType>(a.getType()).getDimSize(0), panels * width},
                                    rt.getElementType());
  Value init = emptyTensor(b, loc, flat, {m});
  TileFiller fill = prepare(a, m);

  Value tiles = arith::CeilDivSIOp::create(b, loc, m, c(kTileRows));
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{tiles, b.getIndexAttr(panels)},
                                      ValueRange{init}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    Value t = forall.getInductionVars()[0], p = forall.getInductionVars()[1];
    Value r0 = arith::MulIOp::create(b, loc, t, c(kTileRows));
    Value rows = arith::MinSIOp::create(b, loc, c(kTileRows), arith::SubIOp::create(b, loc, m, r0));
    Value col0 = arith::MulIOp::create(b, loc, p, c(width));
    SmallVector<OpFoldResult> offsets = {r0, col0}, sizes = {rows, b.getIndexAttr(width)},
                              unit = {b.getIndexAttr(1), b.getIndexAttr(1)};
    Value tile = tensor::ExtractSliceOp::create(b, loc, forall.getRegionIterArgs()[0], offsets, sizes, unit);
    // Blocks of rows, then the last rows one by one (a decoding step's
    // single row takes whole panel rows per pass).
    Value whole = arith::SubIOp::create(b, loc, rows, arith::RemSIOp::create(b, loc, rows, c(blockRows)));
    tile = fill(tile, r0, p, c(0), whole, blockRows, blockCols);
    tile = fill(tile, r0, p, whole, rows, 1, width);
    OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(tb, loc, tile, forall.getRegionIterArgs()[0], offsets, sizes, unit);
  }
  Value result = forall.getResult(0);
  // A padded last panel: the product's first N columns.
  if (columns) {
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0)},
                              sizes = {m, b.getIndexAttr(int64_t(*columns))},
                              unit = {b.getIndexAttr(1), b.getIndexAttr(1)};
    result = tensor::ExtractSliceOp::create(b, loc, result, offsets, sizes, unit);
  }
  if (rank > 2) {
    outerDims.push_back(c(rt.getDimSize(rank - 1)));
    result = reshapeTo(b, loc, result, rt, outerDims);
  }
  return result;
}

// ---- Panels one column wide (the GPU targets): one reduction per output element ----
//
// kiln-quantize-weights, kiln-fold-qdq and kiln-fold-integer-matmul store weights for a GPU with
// panel width 1: [N, K, 1] (int4: [N, K/2, 1]; k pairs: [N, K/2, 2]), each output column's bytes
// contiguous along k. The product is then a linalg reduction over k per output element whose
// body converts the byte (or nibble) and scales it in registers: kiln-form-block-reductions gives
// each output a block (a warp with many outputs) whose neighbouring threads read neighbouring
// bytes, so a decode step's matrix-vector product streams every weight byte once, and no
// dequantized copy exists.

/// `v` [..., K] with a dynamic K cast to the static `k` (the weight's K: the op's verifier ties
/// them), so the views and maps built on it are static.
Value withLastDim(OpBuilder &b, Location loc, Value v, int64_t k) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape().back() == k)
    return v;
  SmallVector<int64_t> shape(t.getShape());
  shape.back() = k;
  return tensor::CastOp::create(b, loc, t.clone(shape), v);
}

/// `v` [..., K] with its last dim split into [K / prod(parts), parts...] (a view); a dynamic K is
/// first cast to `k`.
Value splitLastDim(OpBuilder &b, Location loc, Value v, int64_t k, ArrayRef<int64_t> parts) {
  v = withLastDim(b, loc, v, k);
  auto t = cast<RankedTensorType>(v.getType());
  int64_t rank = t.getRank();
  SmallVector<int64_t> shape(t.getShape());
  int64_t inner = 1;
  for (int64_t p : parts)
    inner *= p;
  shape.back() = k / inner;
  shape.append(parts.begin(), parts.end());
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 1 < rank; ++i)
    groups.push_back({i});
  groups.emplace_back();
  for (int64_t i = rank - 1; i < int64_t(shape.size()); ++i)
    groups.back().push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, t.clone(shape), v, groups);
}

/// A [P, R, C] constant as [P, R * C] (a view; C is 1 or 2 with width-1 panels).
Value mergeInnerDims(OpBuilder &b, Location loc, Value v) {
  return tensor::CollapseShapeOp::create(b, loc, v, SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

/// The result [..., N] of a reduction over the last `reduced` dims of a generic whose leading
/// dims are `a`'s outer dims then n: its element type `type`, filled with zero.
Value zeroRows(OpBuilder &b, Location loc, Value a, int64_t n, Type type) {
  auto at = cast<RankedTensorType>(a.getType());
  SmallVector<int64_t> shape(at.getShape());
  shape.back() = n;
  SmallVector<Value> dims = dimsOf(b, loc, a);
  dims.back() = arith::ConstantIndexOp::create(b, loc, n);
  return filledTensor(b, loc, RankedTensorType::get(shape, type), dims, scalarConstant(b, loc, type, 0));
}

/// A generic over (outer..., n, reduced...): `outer` dims of the lhs, then the output column,
/// then `reduced` dims; `inputs` read with the given maps, summed into `init` [outer..., n].
Value reduceRows(OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<AffineMap> maps, Value init,
                 unsigned outer, unsigned reduced, function_ref<Value(OpBuilder &, Location, ValueRange)> term) {
  unsigned numDims = outer + 1 + reduced;
  SmallVector<AffineMap> all(maps);
  all.push_back(AffineMap::getMultiDimIdentityMap(numDims, b.getContext()).getMajorSubMap(outer + 1));
  SmallVector<utils::IteratorType> iterators(outer + 1, utils::IteratorType::parallel);
  iterators.append(reduced, utils::IteratorType::reduction);
  return linalg::GenericOp::create(b, loc, init.getType(), inputs, ValueRange{init}, all, iterators,
                                   [&](OpBuilder &nb, Location nl, ValueRange args) {
                                     Value t = term(nb, nl, args.drop_back());
                                     Value acc = args.back();
                                     linalg::YieldOp::create(nb, nl, isa<FloatType>(acc.getType())
                                                                        ? arith::AddFOp::create(nb, nl, acc, t).getResult()
                                                                        : arith::AddIOp::create(nb, nl, acc, t).getResult());
                                   })
      .getResult(0);
}

/// The outer dims' indices 0 .. outer-1 followed by `more`.
SmallVector<unsigned> outerThen(unsigned outer, ArrayRef<unsigned> more) {
  SmallVector<unsigned> dims;
  for (unsigned i = 0; i < outer; ++i)
    dims.push_back(i);
  dims.append(more.begin(), more.end());
  return dims;
}

/// graph.quantized_matmul (weight-only) with width-1 panels: lhs [..., K] f32, weight [N, K, 1]
/// (bits 8) or [N, K/2, 1] (bits 4), scales [N, G, 1]. Iterates (outer..., n, g, r[, e]) with
/// k = g * group + r (bits 4: r indexes bytes, e the nibble).
Value weightOnlyReduction(OpBuilder &b, Location loc, Value lhs, Value weight, Value scales, int64_t bits) {
  MLIRContext *ctx = b.getContext();
  auto wt = cast<RankedTensorType>(weight.getType()), st = cast<RankedTensorType>(scales.getType());
  int64_t n = wt.getDimSize(0), k = wt.getDimSize(1) * (bits == 4 ? 2 : 1), groups = st.getDimSize(1);
  int64_t group = k / groups, bytesPerGroup = bits == 4 ? group / 2 : group;
  unsigned outer = cast<RankedTensorType>(lhs.getType()).getRank() - 1, g = outer + 1, r = g + 1, e = r + 1;
  unsigned reduced = bits == 4 ? 3 : 2, numDims = outer + 1 + reduced;
  SmallVector<int64_t> parts = bits == 4 ? SmallVector<int64_t>{bytesPerGroup, 2} : SmallVector<int64_t>{group};
  Value a = splitLastDim(b, loc, lhs, k, parts);
  Value w = splitLastDim(b, loc, mergeInnerDims(b, loc, weight), k / (bits == 4 ? 2 : 1), {bytesPerGroup});
  Value s = mergeInnerDims(b, loc, scales);
  SmallVector<unsigned> aDims = bits == 4 ? outerThen(outer, {g, r, e}) : outerThen(outer, {g, r});
  auto map = [&](ArrayRef<unsigned> dims) { return AffineMap::getMultiDimMapWithTargets(numDims, dims, ctx); };
  SmallVector<AffineMap> maps = {map(aDims), map({outer, g, r}), map({outer, g})};
  Value init = zeroRows(b, loc, lhs, n, b.getF32Type());
  return reduceRows(b, loc, ValueRange{a, w, s}, maps, init, outer, reduced,
                    [&](OpBuilder &nb, Location nl, ValueRange args) {
                      Value q = args[1];
                      if (bits == 4) {
                        // The low nibble is k = 2j, the high one k = 2j + 1, both signed.
                        Value four = arith::ConstantOp::create(nb, nl, nb.getI8IntegerAttr(4));
                        Value lo = arith::ShRSIOp::create(nb, nl, arith::ShLIOp::create(nb, nl, q, four), four);
                        Value hi = arith::ShRSIOp::create(nb, nl, q, four);
                        Value low = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                                          linalg::IndexOp::create(nb, nl, e),
                                                          arith::ConstantIndexOp::create(nb, nl, 0));
                        q = arith::SelectOp::create(nb, nl, low, lo, hi);
                      }
                      Value scale = args[2];
                      if (!scale.getType().isF32())
                        scale = arith::ExtFOp::create(nb, nl, nb.getF32Type(), scale);
                      Value wv = arith::MulFOp::create(nb, nl, arith::SIToFPOp::create(nb, nl, nb.getF32Type(), q), scale);
                      return arith::MulFOp::create(nb, nl, args[0], wv);
                    });
}

/// Exact i32 sums of lhs [..., K] (i32 values) times a k-pair weight [N, K/2, 2] read as [N, K].
Value integerReduction(OpBuilder &b, Location loc, Value lhs, Value weight) {
  MLIRContext *ctx = b.getContext();
  auto wt = cast<RankedTensorType>(weight.getType());
  int64_t n = wt.getDimSize(0), k = wt.getDimSize(1) * 2;
  unsigned outer = cast<RankedTensorType>(lhs.getType()).getRank() - 1, numDims = outer + 2;
  lhs = withLastDim(b, loc, lhs, k);
  auto map = [&](ArrayRef<unsigned> dims) { return AffineMap::getMultiDimMapWithTargets(numDims, dims, ctx); };
  SmallVector<AffineMap> maps = {map(outerThen(outer, {outer + 1})), map({outer, outer + 1})};
  Value init = zeroRows(b, loc, lhs, n, b.getI32Type());
  return reduceRows(b, loc, ValueRange{lhs, mergeInnerDims(b, loc, weight)}, maps, init, outer, 1,
                    [](OpBuilder &nb, Location nl, ValueRange args) {
                      Value w = arith::ExtSIOp::create(nb, nl, nb.getI32Type(), args[1]);
                      return arith::MulIOp::create(nb, nl, args[0], w).getResult();
                    });
}

/// graph.quantized_matmul's dynamic form with width-1 panels: each lhs row quantized by its max
/// (as the CPU kernel does), the exact integer sums, then sum * (scale[n] * (amax / 127)), the
/// CPU kernel's order of operations.
Value dynamicReduction(OpBuilder &b, Location loc, Value lhs, Value weight, Value scales) {
  MLIRContext *ctx = b.getContext();
  auto lt = cast<RankedTensorType>(lhs.getType());
  unsigned rank = lt.getRank();
  Value amax = rowAbsMax(b, loc, lhs);
  auto identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  Value q = emptyTensor(b, loc, lt.clone(b.getI32Type()), dimsOf(b, loc, lhs));
  q = linalg::GenericOp::create(b, loc, q.getType(), ValueRange{lhs, amax}, ValueRange{q},
                                SmallVector<AffineMap>{identity, identity.getMajorSubMap(rank - 1), identity},
                                SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
                                [](OpBuilder &nb, Location nl, ValueRange args) {
                                  linalg::YieldOp::create(nb, nl, quantizeByRowMax(nb, nl, args[0], args[1]));
                                })
          .getResult(0);
  Value sums = integerReduction(b, loc, q, weight);
  // scales [N, 1, 1] -> [N].
  Value s = tensor::CollapseShapeOp::create(b, loc, scales, SmallVector<ReassociationIndices>{{0, 1, 2}});
  auto sumType = cast<RankedTensorType>(sums.getType());
  Value out = emptyTensor(b, loc, sumType.clone(b.getF32Type()), dimsOf(b, loc, sums));
  return linalg::GenericOp::create(
             b, loc, out.getType(), ValueRange{sums, amax, s}, ValueRange{out},
             SmallVector<AffineMap>{identity, identity.getMajorSubMap(rank - 1),
                                    AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx)), identity},
             SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
             [](OpBuilder &nb, Location nl, ValueRange args) {
               Value inv127 = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0f / 127.0f));
               Value rowScale = arith::MulFOp::create(nb, nl, args[1], inv127);
               Value scale = arith::MulFOp::create(nb, nl, args[2], rowScale);
               Value sum = arith::SIToFPOp::create(nb, nl, nb.getF32Type(), args[0]);
               linalg::YieldOp::create(nb, nl, arith::MulFOp::create(nb, nl, sum, scale).getResult());
             })
      .getResult(0);
}

/// Register blocks of 8 rows with 512-bit vectors (8 x 32 floats: 16 of 32
/// registers), 4 with 256-bit ones.
template <typename Op>
struct PanelProductPattern : OpConversionPattern<Op> {
  PanelProductPattern(MLIRContext *ctx, int64_t vectorBits)
      : OpConversionPattern<Op>(ctx), blockRows(vectorBits >= 512 ? 8 : 4) {}
  int64_t blockRows;
};

struct QuantizedMatMulPattern : PanelProductPattern<QuantizedMatMulOp> {
  using PanelProductPattern::PanelProductPattern;
  LogicalResult matchAndRewrite(QuantizedMatMulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto wt = cast<RankedTensorType>(adaptor.getWeight().getType());
    auto st = cast<RankedTensorType>(adaptor.getScales().getType());
    bool dynamic = op.getDynamic();
    int64_t bits = op.getBits(), width = wt.getDimSize(2) / (dynamic ? 2 : 1), panels = wt.getDimSize(0);
    int64_t groups = st.getDimSize(1);
    Value weight = adaptor.getWeight(), scales = adaptor.getScales();
    if (width == 1) {
      rewriter.replaceOp(op, dynamic ? dynamicReduction(b, loc, adaptor.getLhs(), weight, scales)
                                     : weightOnlyReduction(b, loc, adaptor.getLhs(), weight, scales, bits));
      return success();
    }
    auto prepare = [&](Value a, Value m) -> TileFiller {
      if (dynamic) {
        // Plain variables: lambdas capture structured bindings only from C++20 on.
        auto quantized = quantizeRows(b, loc, a, m, 2 * wt.getDimSize(1));
        Value rowMax = quantized.first, rowPairs = quantized.second;
        return [&, rowMax, rowPairs](Value tile, Value r0, Value p, Value lb, Value ub, int64_t block, int64_t cols) {
          IntegerPanelKernel kernel{b, loc, rowPairs, rowMax, weight, scales, r0, p, width, wt.getDimSize(1)};
          return kernel.rowBlocks(tile, lb, ub, block, cols);
        };
      }
      return [&, a](Value tile, Value r0, Value p, Value lb, Value ub, int64_t block, int64_t cols) {
        PanelKernel kernel{b, loc, a, weight, scales, r0, p, bits, width, groups, wt.getDimSize(1) / groups,
                           st.getElementType()};
        return kernel.rowBlocks(tile, lb, ub, block, cols);
      };
    };
    rewriter.replaceOp(op, lowerPanels(b, loc, adaptor.getLhs(), cast<RankedTensorType>(op.getType()), panels,
                                       width, op.getColumns(), blockRows, prepare));
    return success();
  }
};

/// graph.integer_matmul: the lhs paired into 16-bit lanes, then the integer
/// panel kernel without scales.
struct IntegerMatMulPattern : PanelProductPattern<IntegerMatMulOp> {
  using PanelProductPattern::PanelProductPattern;
  LogicalResult matchAndRewrite(IntegerMatMulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto wt = cast<RankedTensorType>(adaptor.getWeight().getType());
    int64_t width = wt.getDimSize(2) / 2, panels = wt.getDimSize(0), kPairs = wt.getDimSize(1);
    Value weight = adaptor.getWeight();
    if (width == 1) {
      rewriter.replaceOp(op, integerReduction(b, loc, adaptor.getLhs(), weight));
      return success();
    }
    auto prepare = [&](Value a, Value m) -> TileFiller {
      Value pairs = pairRows(b, loc, a, m, 2 * kPairs);
      return [&, pairs](Value tile, Value r0, Value p, Value lb, Value ub, int64_t block, int64_t cols) {
        IntegerPanelKernel kernel{b, loc, pairs, Value(), weight, Value(), r0, p, width, kPairs};
        return kernel.rowBlocks(tile, lb, ub, block, cols);
      };
    };
    rewriter.replaceOp(op, lowerPanels(b, loc, adaptor.getLhs(), cast<RankedTensorType>(op.getType()), panels,
                                       width, op.getColumns(), blockRows, prepare));
    return success();
  }
};

} // namespace

void populateQuantizedMatMulLoweringPatterns(RewritePatternSet &patterns, int64_t vectorBits) {
  patterns.add<QuantizedMatMulPattern, IntegerMatMulPattern>(patterns.getContext(), vectorBits);
}

} // namespace kiln
