// graph string ops (string_cast, string_normalizer) -> host loops in @main calling the kiln_cpu string kernels.
//
// A string element is an i128 ({data pointer, byte size}, see kiln_abi_string). The kernels that
// make or read string bytes live in the runtime (kiln_cpu.string_* ops become calls through the
// context after kiln-add-runtime-context), so the loops here are sequential scf.for nests over
// tensors: host code, never part of a launched kernel, where the context is not at hand.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/cpu/IR/Cpu.h"
#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using ElementFn = function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange, ValueRange)>;

/// A row-major scf.for nest over `dims` carrying `init`; `body(ivs, acc)` returns the next values.
SmallVector<Value> forEachElement(OpBuilder &b, Location loc, ArrayRef<Value> dims, ValueRange init, ElementFn body,
                                  SmallVector<Value> ivs = {}) {
  if (ivs.size() == dims.size())
    return body(b, loc, ivs, init);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0), c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, c0, dims[ivs.size()], c1, init,
                                 [&](OpBuilder &nb, Location l, Value iv, ValueRange acc) {
                                   SmallVector<Value> inner = ivs;
                                   inner.push_back(iv);
                                   scf::YieldOp::create(nb, l, forEachElement(nb, l, dims, acc, body, inner));
                                 });
  return SmallVector<Value>(loop.getResults());
}

/// Every element converted by the runtime's number <-> text kernels.
struct StringCastPattern : OpConversionPattern<StringCastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(StringCastOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    SmallVector<Value> dims = dimsOf(rewriter, loc, x);
    Value init = emptyTensor(rewriter, loc, rt, dims);
    Type to = rt.getElementType();
    auto result = forEachElement(rewriter, loc, dims, {init},
                                 [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange acc) -> SmallVector<Value> {
                                   Value v = tensor::ExtractOp::create(b, l, x, ivs);
                                   Value s = to.isInteger(128) ? (Value)cpu::StringFromFloatOp::create(b, l, to, v)
                                                               : (Value)cpu::StringToFloatOp::create(b, l, to, v);
                                   return {tensor::InsertOp::create(b, l, s, acc[0], ivs)};
                                 });
    rewriter.replaceOp(op, result[0]);
    return success();
  }
};

/// StringNormalizer: one pass counts the elements that are no stopword, the result (at least one
/// element, "" when all go) is allocated, a second pass writes the kept ones with their case
/// changed. Stopword tests run in both passes rather than keeping a mask: they are cheap next
/// to a heap-allocated mask of data-dependent size.
struct StringNormalizerPattern : OpConversionPattern<StringNormalizerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(StringNormalizerOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    Type str = rt.getElementType();
    const bool ignoreCase = !op.getIsCaseSensitive();
    SmallVector<Value> words;
    for (Attribute w : op.getStopwords())
      words.push_back(cpu::StringLiteralOp::create(rewriter, loc, str, cast<StringAttr>(w)));
    auto kept = [&](OpBuilder &b, Location l, Value s) -> Value {
      Value keep = arith::ConstantIntOp::create(b, l, 1, 1);
      for (Value w : words) {
        Value same = cpu::StringEqualOp::create(b, l, b.getI1Type(), s, w, ignoreCase);
        Value differs = arith::XOrIOp::create(b, l, same, arith::ConstantIntOp::create(b, l, 1, 1));
        keep = arith::AndIOp::create(b, l, keep, differs);
      }
      return keep;
    };
    SmallVector<Value> dims = dimsOf(rewriter, loc, x);
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0), c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value count = forEachElement(rewriter, loc, dims, {c0},
                                 [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange acc) -> SmallVector<Value> {
                                   Value s = tensor::ExtractOp::create(b, l, x, ivs);
                                   Value one = arith::SelectOp::create(b, l, kept(b, l, s), c1, c0);
                                   return {arith::AddIOp::create(b, l, acc[0], one)};
                                 })[0];
    Value length = arith::MaxUIOp::create(rewriter, loc, count, c1);
    const bool twoDim = rt.getRank() == 2;
    Value out = twoDim ? tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{1, ShapedType::kDynamic}, str,
                                                 ValueRange{length})
                       : tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{ShapedType::kDynamic}, str,
                                                 ValueRange{length});
    auto at = [&](Value k) { return twoDim ? SmallVector<Value>{c0, k} : SmallVector<Value>{k}; };
    // The empty string ({NULL, 0}) where every element was a stopword.
    Value empty = arith::ConstantIntOp::create(rewriter, loc, str, 0);
    out = tensor::InsertOp::create(rewriter, loc, empty, out, at(c0));
    StringRef action = op.getCaseChangeAction();
    auto result = forEachElement(
        rewriter, loc, dims, {out, c0}, [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange acc) -> SmallVector<Value> {
          Value s = tensor::ExtractOp::create(b, l, x, ivs);
          auto write = scf::IfOp::create(
              b, l, kept(b, l, s),
              [&](OpBuilder &tb, Location tl) {
                Value v = action == "NONE" ? s
                                           : (Value)cpu::StringChangeCaseOp::create(tb, tl, str, s, action == "UPPER");
                Value next = tensor::InsertOp::create(tb, tl, v, acc[0], at(acc[1]));
                scf::YieldOp::create(tb, tl, ValueRange{next, arith::AddIOp::create(tb, tl, acc[1], c1)});
              },
              [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, acc); });
          return SmallVector<Value>(write.getResults());
        });
    Value y = result[0];
    if (y.getType() != rt)
      y = tensor::CastOp::create(rewriter, loc, rt, y);
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void populateStringLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<StringCastPattern, StringNormalizerPattern>(patterns.getContext());
}

} // namespace kiln
