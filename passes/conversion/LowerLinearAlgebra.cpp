// graph.det -> per-matrix LU factorization with partial pivoting (an scf.forall over the matrices, scf loops inside).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// Gaussian elimination on a private copy of one matrix: for each column k
/// the row with the largest magnitude at or below k becomes the pivot row
/// (swapped in, flipping the sign), the rows below are eliminated, and the
/// determinant is the signed product of the pivots. A zero pivot makes the
/// product 0 and the elimination factors 0 (no inf/NaN from 0/0).
Value determinant(OpBuilder &b, Location loc, Value mat, Value m, Type et) {
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  Value one = scalarConstant(b, loc, et, 1), zeroF = scalarConstant(b, loc, et, 0);
  auto columns = scf::ForOp::create(b, loc, c(b, 0), m, c(b, 1), ValueRange{mat, one});
  {
    OpBuilder kb = OpBuilder::atBlockBegin(columns.getBody());
    Value k = columns.getInductionVar();
    Value a = columns.getRegionIterArg(0), det = columns.getRegionIterArg(1);
    Value kk = tensor::ExtractOp::create(kb, loc, a, ValueRange{k, k});
    auto search = scf::ForOp::create(kb, loc, arith::AddIOp::create(kb, loc, k, c(kb, 1)), m, c(kb, 1),
                                     ValueRange{math::AbsFOp::create(kb, loc, kk), k});
    {
      OpBuilder sb = OpBuilder::atBlockBegin(search.getBody());
      Value i = search.getInductionVar();
      Value v = math::AbsFOp::create(sb, loc, tensor::ExtractOp::create(sb, loc, a, ValueRange{i, k}));
      Value better = arith::CmpFOp::create(sb, loc, arith::CmpFPredicate::OGT, v, search.getRegionIterArg(0));
      scf::YieldOp::create(sb, loc,
                           ValueRange{arith::SelectOp::create(sb, loc, better, v, search.getRegionIterArg(0)),
                                      arith::SelectOp::create(sb, loc, better, i, search.getRegionIterArg(1))});
    }
    Value p = search.getResult(1);
    auto swap = scf::ForOp::create(kb, loc, c(kb, 0), m, c(kb, 1), ValueRange{a});
    {
      OpBuilder wb = OpBuilder::atBlockBegin(swap.getBody());
      Value j = swap.getInductionVar(), t = swap.getRegionIterArg(0);
      Value kj = tensor::ExtractOp::create(wb, loc, t, ValueRange{k, j});
      Value pj = tensor::ExtractOp::create(wb, loc, t, ValueRange{p, j});
      t = tensor::InsertOp::create(wb, loc, pj, t, ValueRange{k, j});
      t = tensor::InsertOp::create(wb, loc, kj, t, ValueRange{p, j});
      scf::YieldOp::create(wb, loc, t);
    }
    a = swap.getResult(0);
    Value pivot = tensor::ExtractOp::create(kb, loc, a, ValueRange{k, k});
    Value swapped = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ne, p, k);
    Value signedPivot = arith::SelectOp::create(kb, loc, swapped, arith::NegFOp::create(kb, loc, pivot), pivot);
    det = arith::MulFOp::create(kb, loc, det, signedPivot);
    Value singular = arith::CmpFOp::create(kb, loc, arith::CmpFPredicate::OEQ, pivot, zeroF);
    Value safePivot = arith::SelectOp::create(kb, loc, singular, one, pivot);
    Value kNext = arith::AddIOp::create(kb, loc, k, c(kb, 1));
    auto rows = scf::ForOp::create(kb, loc, kNext, m, c(kb, 1), ValueRange{a});
    {
      OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
      Value i = rows.getInductionVar();
      Value ik = tensor::ExtractOp::create(rb, loc, rows.getRegionIterArg(0), ValueRange{i, k});
      Value f = arith::DivFOp::create(rb, loc, ik, safePivot);
      f = arith::SelectOp::create(rb, loc, singular, zeroF, f);
      auto cols = scf::ForOp::create(rb, loc, kNext, m, c(rb, 1), ValueRange{rows.getRegionIterArg(0)});
      {
        OpBuilder cb = OpBuilder::atBlockBegin(cols.getBody());
        Value j = cols.getInductionVar(), t = cols.getRegionIterArg(0);
        Value kj = tensor::ExtractOp::create(cb, loc, t, ValueRange{k, j});
        Value ij = tensor::ExtractOp::create(cb, loc, t, ValueRange{i, j});
        Value updated = arith::SubFOp::create(cb, loc, ij, arith::MulFOp::create(cb, loc, f, kj));
        scf::YieldOp::create(cb, loc, tensor::InsertOp::create(cb, loc, updated, t, ValueRange{i, j}).getResult());
      }
      scf::YieldOp::create(rb, loc, cols.getResult(0));
    }
    scf::YieldOp::create(kb, loc, ValueRange{rows.getResult(0), det});
  }
  return columns.getResult(1);
}

struct DetPattern : OpConversionPattern<DetOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(DetOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = xt.getElementType();
    int64_t rank = xt.getRank();
    // All matrices as one batch axis: [B, M, M] in, [B] out.
    Value batch = arith::ConstantIndexOp::create(rewriter, loc, 1);
    SmallVector<Value> outDims;
    int64_t staticBatch = 1;
    for (int64_t i = 0; i < rank - 2; ++i) {
      outDims.push_back(dimValue(rewriter, loc, x, i));
      batch = arith::MulIOp::create(rewriter, loc, batch, outDims.back());
      staticBatch = xt.isDynamicDim(i) || staticBatch == ShapedType::kDynamic ? ShapedType::kDynamic
                                                                               : staticBatch * xt.getDimSize(i);
    }
    Value m = dimValue(rewriter, loc, x, rank - 1);
    int64_t sm = xt.getDimSize(rank - 1);
    auto flatType = RankedTensorType::get({staticBatch, sm, sm}, et);
    Value flat = reshapeTo(rewriter, loc, x, flatType, {batch, m, m});
    auto flatOut = RankedTensorType::get({staticBatch}, et);
    Value init = emptyTensor(rewriter, loc, flatOut, {batch});
    Value dets = forallBlocks(
        rewriter, loc, init, {OpFoldResult(batch)}, {}, [&](OpBuilder &fb, ValueRange ivs, Value block) {
          auto matType = RankedTensorType::get({sm, sm}, et);
          SmallVector<OpFoldResult> offsets = {ivs[0], fb.getIndexAttr(0), fb.getIndexAttr(0)};
          OpFoldResult side = sm == ShapedType::kDynamic ? OpFoldResult(m) : OpFoldResult(fb.getIndexAttr(sm));
          SmallVector<OpFoldResult> sizes = {fb.getIndexAttr(1), side, side};
          SmallVector<OpFoldResult> unit(3, fb.getIndexAttr(1));
          Value mat = tensor::ExtractSliceOp::create(fb, loc, matType, flat, offsets, sizes, unit);
          Value det = determinant(fb, loc, mat, m, et);
          return tensor::InsertOp::create(fb, loc, det, block, ValueRange{}).getResult();
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, dets, rt, outDims));
    return success();
  }
};

} // namespace

void populateLinearAlgebraLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<DetPattern>(patterns.getContext());
}

} // namespace kiln
