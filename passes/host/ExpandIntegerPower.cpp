// Expands scalar math.ipowi into a square-and-multiply loop with every case defined.
//
// MLIR's own lowering (convert-math-to-funcs) divides by zero for 0 to a
// negative power, which is undefined behaviour in the generated code, and it
// cannot run inside a gpu.module. This expansion is plain scf/arith, so both
// targets get the same results:
//   b^0 = 1;  b^p for p < 0 is 1 for b = 1, +-1 for b = -1 (by p's parity), 0 otherwise;
//   b^p for p > 0 wraps around like repeated multiplication.
#include "passes/host/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_EXPANDINTEGERPOWERPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct ExpandIPowI : OpRewritePattern<math::IPowIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::IPowIOp op, PatternRewriter &b) const override {
    auto type = dyn_cast<IntegerType>(op.getType());
    if (!type)
      return b.notifyMatchFailure(op, "vectors are left to convert-math-to-funcs");
    Location loc = op.getLoc();
    Value base = op.getLhs(), power = op.getRhs();
    auto constant = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, type, v).getResult(); };
    Value zero = constant(0), one = constant(1), minusOne = constant(-1);
    Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, power, zero);
    // A negative power runs no iteration.
    Value p0 = arith::SelectOp::create(b, loc, negative, zero, power);
    Type types[] = {type, type, type};
    Location locs[] = {loc, loc, loc};
    auto loop = scf::WhileOp::create(b, loc, TypeRange(types), ValueRange{one, base, p0});
    {
      Block *before = b.createBlock(&loop.getBefore(), {}, types, locs);
      Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, before->getArgument(2), zero);
      scf::ConditionOp::create(b, loc, more, before->getArguments());
      Block *after = b.createBlock(&loop.getAfter(), {}, types, locs);
      Value result = after->getArgument(0), square = after->getArgument(1), p = after->getArgument(2);
      Value odd = arith::TruncIOp::create(b, loc, b.getI1Type(), p);
      Value times = arith::MulIOp::create(b, loc, result, square);
      result = arith::SelectOp::create(b, loc, odd, times, result);
      square = arith::MulIOp::create(b, loc, square, square);
      p = arith::ShRUIOp::create(b, loc, p, one);
      scf::YieldOp::create(b, loc, ValueRange{result, square, p});
    }
    b.setInsertionPointAfter(loop);
    // Negative powers: only 1 and -1 have integer reciprocals.
    Value odd = arith::TruncIOp::create(b, loc, b.getI1Type(), power);
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, base, one);
    Value isMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, base, minusOne);
    Value signOfMinusOne = arith::SelectOp::create(b, loc, odd, minusOne, one);
    Value reciprocal = arith::SelectOp::create(b, loc, isMinusOne, signOfMinusOne, zero);
    reciprocal = arith::SelectOp::create(b, loc, isOne, one, reciprocal);
    b.replaceOpWithNewOp<arith::SelectOp>(op, negative, reciprocal, loop.getResult(0));
    return success();
  }
};

struct ExpandIntegerPowerPass : impl::ExpandIntegerPowerPassBase<ExpandIntegerPowerPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandIPowI>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
