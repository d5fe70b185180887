// MaxPool's indices and MaxUnpool: graph.max_pool_with_indices (one window reduction with two results) and graph.max_unpool (a scatter loop).
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

/// Iterates n, c, the output positions and the window offsets; the input is
/// read with tensor.extract at clamped coordinates and positions outside it
/// (the padding) never win, so no padded copy is made and the index is that
/// of the unpadded input.
struct MaxPoolWithIndicesPattern : OpConversionPattern<MaxPoolWithIndicesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MaxPoolWithIndicesOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto vt = cast<RankedTensorType>(op.getValues().getType());
    auto it = cast<RankedTensorType>(op.getIndices().getType());
    Type et = xt.getElementType();
    int64_t rank = xt.getRank(), spatial = rank - 2;
    ArrayRef<int64_t> kernel = op.getKernelShape(), pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    bool columnMajor = op.getStorageOrder() == 1;

    SmallVector<Value> inDims, outDims;
    for (int64_t i = 0; i < rank; ++i)
      inDims.push_back(dimValue(rewriter, loc, x, i));
    outDims = {inDims[0], inDims[1]};
    for (int64_t i = 0; i < spatial; ++i) {
      if (!vt.isDynamicDim(2 + i)) {
        outDims.push_back(arith::ConstantIndexOp::create(rewriter, loc, vt.getDimSize(2 + i)));
        continue;
      }
      if (op.getCeilMode())
        return rewriter.notifyMatchFailure(op, "ceil_mode with a dynamic spatial size");
      Value padded = arith::AddIOp::create(
          rewriter, loc, inDims[2 + i],
          arith::ConstantIndexOp::create(rewriter, loc, pads[i] + pads[spatial + i]));
      outDims.push_back(windowCount(rewriter, loc, padded, kernel[i], strides[i], dilations[i]));
    }
    Value values = filledTensor(rewriter, loc, vt, outDims, lowestValue(rewriter, loc, et));
    Value indices = filledTensor(rewriter, loc, it, outDims, scalarConstant(rewriter, loc, rewriter.getI64Type(), -1));
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);

    int64_t numDims = rank + spatial;
    SmallVector<AffineExpr> ke, oe;
    for (int64_t i = 0; i < rank; ++i)
      oe.push_back(getAffineDimExpr(i, ctx));
    for (int64_t i = 0; i < spatial; ++i)
      ke.push_back(getAffineDimExpr(rank + i, ctx));
    auto outMap = AffineMap::get(numDims, 0, oe, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, ke, ctx), outMap, outMap};
    SmallVector<IteratorType> iters(numDims, IteratorType::parallel);
    for (int64_t i = rank; i < numDims; ++i)
      iters[i] = IteratorType::reduction;

    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{vt, it}, ValueRange{window}, ValueRange{values, indices}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, l, v); };
          Value zero = c(0);
          Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
          SmallVector<Value> at = {linalg::IndexOp::create(b, l, 0), linalg::IndexOp::create(b, l, 1)};
          SmallVector<Value> coords;
          for (int64_t i = 0; i < spatial; ++i) {
            Value o = linalg::IndexOp::create(b, l, 2 + i), k = linalg::IndexOp::create(b, l, rank + i);
            Value h = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, o, c(strides[i])),
                                            arith::MulIOp::create(b, l, k, c(dilations[i])));
            h = arith::SubIOp::create(b, l, h, c(pads[i]));
            Value inside = arith::AndIOp::create(
                b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, h, zero),
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, h, inDims[2 + i]));
            valid = arith::AndIOp::create(b, l, valid, inside);
            coords.push_back(h);
            Value last = arith::SubIOp::create(b, l, inDims[2 + i], c(1));
            at.push_back(arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, h, zero), last));
          }
          Value v = tensor::ExtractOp::create(b, l, x, at);
          // Flat index: (n * C + c) * prod(D), then the spatial offset.
          Value flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, at[0], inDims[1]), at[1]);
          Value offset = zero, stride = c(1);
          for (int64_t j = 0; j < spatial; ++j) {
            int64_t i = columnMajor ? j : spatial - 1 - j; // fastest-varying axis first
            offset = arith::AddIOp::create(b, l, offset, arith::MulIOp::create(b, l, coords[i], stride));
            stride = arith::MulIOp::create(b, l, stride, inDims[2 + i]);
          }
          flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, flat, stride), offset);
          Value flat64 = arith::IndexCastOp::create(b, l, b.getI64Type(), flat);
          Value greater = isa<FloatType>(et)
                              ? (Value)arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, v, args[1])
                              : (Value)arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, v, args[1]);
          // The first valid position is taken even if it holds the lowest value.
          Value unset = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, args[2],
                                              arith::ConstantIntOp::create(b, l, 0, 64));
          Value take = arith::AndIOp::create(b, l, valid, arith::OrIOp::create(b, l, greater, unset));
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(b, l, take, v, args[1]),
                                             arith::SelectOp::create(b, l, take, flat64, args[2])});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// A sequential loop over the input writing each element at its flat index
/// into zeros: linear in the element count (a gather formulation would
/// compare every output element with every input element). Indices outside
/// the output are skipped.
struct MaxUnpoolPattern : OpConversionPattern<MaxUnpoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MaxUnpoolOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), indices = adaptor.getIndices(), shape = adaptor.getShape();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    auto c = [&](OpBuilder &b, int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    SmallVector<Value> dims;
    Value total = c(rewriter, 1), count = c(rewriter, 1);
    for (int64_t i = 0; i < rt.getRank(); ++i) {
      Value d = rt.isDynamicDim(i)
                    ? (Value)arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                                        tensor::ExtractOp::create(rewriter, loc, shape, ValueRange{c(rewriter, i)}))
                    : c(rewriter, rt.getDimSize(i));
      dims.push_back(d);
      total = arith::MulIOp::create(rewriter, loc, total, d);
    }
    SmallVector<Value> inDims;
    for (int64_t i = 0; i < xt.getRank(); ++i) {
      inDims.push_back(dimValue(rewriter, loc, x, i));
      count = arith::MulIOp::create(rewriter, loc, count, inDims.back());
    }
    auto flatType = [&](RankedTensorType t) {
      return RankedTensorType::get({t.hasStaticShape() ? t.getNumElements() : ShapedType::kDynamic},
                                   t.getElementType());
    };
    Value flatX = reshapeTo(rewriter, loc, x, flatType(xt), {count});
    Value flatI = reshapeTo(rewriter, loc, indices, flatType(cast<RankedTensorType>(indices.getType())), {count});
    auto outFlatType = flatType(rt);
    Value out = filledTensor(rewriter, loc, outFlatType, {total}, scalarConstant(rewriter, loc, et, 0));
    auto loop = scf::ForOp::create(rewriter, loc, c(rewriter, 0), count, c(rewriter, 1), ValueRange{out});
    {
      OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
      Value i = loop.getInductionVar(), acc = loop.getRegionIterArg(0);
      Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), tensor::ExtractOp::create(b, loc, flatI, ValueRange{i}));
      Value inside = arith::AndIOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, at, c(b, 0)),
                                           arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, at, total));
      auto guarded = scf::IfOp::create(b, loc, TypeRange{acc.getType()}, inside, /*withElseRegion=*/true);
      {
        OpBuilder tb = guarded.getThenBodyBuilder();
        Value v = tensor::ExtractOp::create(tb, loc, flatX, ValueRange{i});
        scf::YieldOp::create(tb, loc, tensor::InsertOp::create(tb, loc, v, acc, ValueRange{at}).getResult());
        OpBuilder eb = guarded.getElseBodyBuilder();
        scf::YieldOp::create(eb, loc, acc);
      }
      scf::YieldOp::create(b, loc, guarded.getResult(0));
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, loop.getResult(0), rt, dims));
    return success();
  }
};

} // namespace

void populatePoolIndicesLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<MaxPoolWithIndicesPattern, MaxUnpoolPattern>(patterns.getContext());
}

} // namespace kiln
