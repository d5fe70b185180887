// graph.quantized_matmul -> a tiled loop nest that converts int8/int4 weights to f32 as it streams them.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

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
/// Rows computed together: each weight vector converted once feeds this many
/// rows' FMAs. 4 rows x 32 columns keep 8 group and 8 total accumulators
/// (512-bit registers) live.
constexpr int64_t kBlockRows = 4;
constexpr int64_t kBlockCols = 32;

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

  /// Rows [lb, ub) of the tile in blocks of `block`, `cols` columns at a time.
  Value rowBlocks(Value tile, Value lb, Value ub, int64_t block, int64_t cols) {
    auto f32 = VectorType::get({cols}, b.getF32Type());
    Value zeroVec = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(f32, b.getF32FloatAttr(0)));
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
    SmallVector<Value> zeros(block, zeroVec);
    // Per group: a group sum of products, then scaled into the total.
    auto groupLoop = scf::ForOp::create(b, loc, c(0), c(groups), c(1), zeros);
    {
      OpBuilder gb = OpBuilder::atBlockBegin(groupLoop.getBody());
      Value g = groupLoop.getInductionVar();
      Value kk0 = arith::MulIOp::create(gb, loc, g, arith::ConstantIndexOp::create(gb, loc, groupRows));
      Value kk1 = arith::AddIOp::create(gb, loc, kk0, arith::ConstantIndexOp::create(gb, loc, groupRows));
      auto kLoop = scf::ForOp::create(gb, loc, kk0, kk1, arith::ConstantIndexOp::create(gb, loc, 1), zeros);
      {
        OpBuilder kb = OpBuilder::atBlockBegin(kLoop.getBody());
        Value kk = kLoop.getInductionVar();
        SmallVector<Value> wv = weightVectors(kb, kk, j0, cols);
        SmallVector<Value> acc(kLoop.getRegionIterArgs());
        for (auto [half, v] : llvm::enumerate(wv)) {
          Value k = bits == 8 ? kk
                              : arith::AddIOp::create(kb, loc, arith::MulIOp::create(kb, loc, kk, arith::ConstantIndexOp::create(kb, loc, 2)),
                                                      arith::ConstantIndexOp::create(kb, loc, half));
          for (int64_t r = 0; r < block; ++r) {
            Value x = tensor::ExtractOp::create(kb, loc, a, ValueRange{rows[r], k});
            acc[r] = vector::FMAOp::create(kb, loc, vector::BroadcastOp::create(kb, loc, f32, x), v, acc[r]);
          }
        }
        scf::YieldOp::create(kb, loc, acc);
      }
      Value spad = arith::ConstantOp::create(gb, loc, gb.getZeroAttr(scaleType));
      Value s = vector::TransferReadOp::create(gb, loc, VectorType::get({cols}, scaleType), scales,
                                               ValueRange{p, g, j0}, spad, ArrayRef<bool>{true});
      if (!scaleType.isF32())
        s = arith::ExtFOp::create(gb, loc, f32, s);
      SmallVector<Value> total;
      for (int64_t r = 0; r < block; ++r)
        total.push_back(vector::FMAOp::create(gb, loc, kLoop.getResult(r), s, groupLoop.getRegionIterArg(r)));
      scf::YieldOp::create(gb, loc, total);
    }
    Value out = colLoop.getRegionIterArg(0);
    for (int64_t r = 0; r < block; ++r) {
      Value row = arith::AddIOp::create(b, loc, i0, c(r));
      out = vector::TransferWriteOp::create(b, loc, groupLoop.getResult(r), out, ValueRange{row, j0},
                                            ArrayRef<bool>{true})
                .getResult();
    }
    scf::YieldOp::create(b, loc, out);
    b.setInsertionPointAfter(colLoop);
    scf::YieldOp::create(b, loc, colLoop.getResult(0));
    return rowLoop.getResult(0);
  }
};

struct QuantizedMatMulPattern : OpConversionPattern<QuantizedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(QuantizedMatMulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto rt = cast<RankedTensorType>(op.getType());
    auto wt = cast<RankedTensorType>(adaptor.getWeight().getType());
    auto st = cast<RankedTensorType>(adaptor.getScales().getType());
    int64_t bits = op.getBits(), width = wt.getDimSize(2), panels = wt.getDimSize(0);
    int64_t groups = st.getDimSize(1);
    auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };

    // Rows: every dim of the lhs but the last, as one. (tensor.reshape, not
    // collapse/expand_shape: MLIR 22's expand-strided-metadata crashes on an
    // expand_shape with two dynamic dims in one group.)
    Value a = adaptor.getLhs();
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
                                      rewriter.getF32Type());
    Value init = emptyTensor(b, loc, flat, {m});

    // Work items: (row tile, panel).
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
      PanelKernel kernel{b, loc, a, adaptor.getWeight(), adaptor.getScales(), r0, p, bits, width, groups,
                         wt.getDimSize(1) / groups, st.getElementType()};
      // Blocks of rows, then the last rows one by one (a decoding step's
      // single row takes whole panel rows per pass).
      Value whole = arith::SubIOp::create(b, loc, rows, arith::RemSIOp::create(b, loc, rows, c(kBlockRows)));
      int64_t blockCols = std::min(kBlockCols, width);
      tile = kernel.rowBlocks(tile, c(0), whole, kBlockRows, blockCols);
      tile = kernel.rowBlocks(tile, whole, rows, 1, width);
      OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(tb, loc, tile, forall.getRegionIterArgs()[0], offsets, sizes, unit);
    }
    Value result = forall.getResult(0);
    if (rank > 2) {
      outerDims.push_back(c(panels * width));
      result = reshapeTo(b, loc, result, rt, outerDims);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateQuantizedMatMulLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<QuantizedMatMulPattern>(patterns.getContext());
}

} // namespace kiln
