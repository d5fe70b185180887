// Wraps each outermost scf.parallel of @main into a kiln_cpu.launch over its outer iterations.
#include "passes/cpu/Passes.h"
#include "passes/host/SourceNodes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FORMCPULAUNCHESPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// Enough work items to balance a few threads without paying for tiny items.
constexpr int64_t kMinWorkItems = 64;
/// Iterations below which a work item is mostly its own delinearization.
constexpr int64_t kMinItemElements = 32;

/// Trip count of loop dim `j` when its bounds and step are constants.
std::optional<int64_t> staticTripCount(scf::ParallelOp op, int64_t j) {
  auto lb = getConstantIntValue(op.getLowerBound()[j]);
  auto ub = getConstantIntValue(op.getUpperBound()[j]);
  auto step = getConstantIntValue(op.getStep()[j]);
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return std::max<int64_t>(0, (*ub - *lb + *step - 1) / *step);
}

struct FormCpuLaunchesPass : impl::FormCpuLaunchesPassBase<FormCpuLaunchesPass> {
  void runOnOperation() override {
    int32_t nextId = 0;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.getNumArguments() == 0 || !func.getArgAttr(0, abi::kContextArg))
        continue;
      Value ctx = func.getArgument(0);
      SmallVector<scf::ParallelOp> outermost;
      func.walk<WalkOrder::PreOrder>([&](scf::ParallelOp op) {
        if (op.getNumResults() == 0)
          outermost.push_back(op);
        return WalkResult::skip();
      });
      for (scf::ParallelOp op : outermost)
        formLaunch(op, ctx, nextId++);
    }
  }

  void formLaunch(scf::ParallelOp op, Value ctx, int32_t id) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    int64_t d = op.getNumLoops();
    // Keep the innermost parallel dim as each work item's own loop when it is
    // the loop that vectorizes (no loops nested below it); when the body has
    // its own loops (a reduction), every parallel dim becomes a work item.
    bool hasInnerLoops = false;
    op.getRegion().walk([&](LoopLikeOpInterface) { hasInnerLoops = true; });
    int64_t maxItems = (d == 1 || hasInnerLoops) ? d : d - 1;
    // Work items cost a delinearization each: take only as many outer dims
    // as give enough items to share out (kMinWorkItems, while the trip counts
    // are static; a dynamic dim such as the batch stops the search), and loop
    // over the rest inside each item.
    // With loops inside (reductions, tiles) an item is heavy: use every dim.
    // Short of kMinWorkItems, a quarter of it is still enough when one more dim would leave
    // each item fewer than kMinItemElements iterations inside: shufflenet's channel shuffle
    // over [7, 7, 232, 2] became 11368 items of 2 elements, each paying two divisions (25 us,
    // where 49 items of 464 elements take 3).
    auto innerIterations = [&](int64_t from) {
      int64_t n = 1;
      for (int64_t j = from; j < d; ++j) {
        auto trip = staticTripCount(op, j);
        if (!trip)
          return std::numeric_limits<int64_t>::max();
        n *= *trip;
      }
      return n;
    };
    int64_t p = hasInnerLoops ? maxItems : 1, known = 1;
    for (; p < maxItems; ++p) {
      auto trip = staticTripCount(op, p - 1);
      if (!trip)
        break;
      known *= *trip;
      if (known >= kMinWorkItems || (known >= kMinWorkItems / 4 && innerIterations(p + 1) < kMinItemElements))
        break;
    }
    SmallVector<Value> trips;
    Value count = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t j = 0; j < p; ++j) {
      Value span = arith::SubIOp::create(b, loc, op.getUpperBound()[j], op.getLowerBound()[j]);
      Value trip = arith::CeilDivSIOp::create(b, loc, span, op.getStep()[j]);
      trip = arith::MaxSIOp::create(b, loc, trip, arith::ConstantIndexOp::create(b, loc, 0));
      trips.push_back(trip);
      count = arith::MulIOp::create(b, loc, count, trip);
    }
    Value count64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
    // Cost unknown (0) until kiln-count-kernel-cost fills it in.
    Value unknown = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    auto launch = cpu::LaunchOp::create(b, loc, ctx, count64, unknown, unknown, b.getI32IntegerAttr(id));
    Block *body = b.createBlock(&launch.getBody(), {}, {b.getI64Type()}, {loc});
    b.setInsertionPointToStart(body);
    Value item = arith::IndexCastOp::create(b, loc, b.getIndexType(), body->getArgument(0));
    SmallVector<Value> ivs(d);
    for (int64_t j = p - 1; j >= 0; --j) {
      Value t = j == 0 ? item : (Value)arith::RemSIOp::create(b, loc, item, trips[j]);
      if (j > 0)
        item = arith::DivSIOp::create(b, loc, item, trips[j]);
      ivs[j] = arith::AddIOp::create(b, loc, op.getLowerBound()[j],
                                     arith::MulIOp::create(b, loc, t, op.getStep()[j]));
    }
    IRMapping mapping;
    Block &src = op.getRegion().front();
    auto cloneBody = [&](OpBuilder &nb) {
      for (int64_t j = 0; j < d; ++j)
        mapping.map(src.getArgument(j), ivs[j]);
      for (Operation &inner : src.without_terminator())
        nb.clone(inner, mapping);
    };
    // The remaining dims become sequential loops inside the work item.
    OpBuilder nb = b;
    for (int64_t j = p; j < d; ++j) {
      auto loop = scf::ForOp::create(nb, loc, op.getLowerBound()[j], op.getUpperBound()[j],
                                     op.getStep()[j]);
      nb = OpBuilder::atBlockBegin(loop.getBody());
      ivs[j] = loop.getInductionVar();
    }
    cloneBody(nb);
    cpu::YieldOp::create(b, loc);

    llvm::SetVector<StringRef> names;
    op.walk([&](Operation *inner) { collectNodeNames(inner->getLoc(), names); });
    collectNodeNames(loc, names);
    SmallVector<Attribute> nameAttrs;
    for (StringRef n : names)
      nameAttrs.push_back(b.getStringAttr(n));
    launch->setAttr(abi::kSourceNodes, b.getArrayAttr(nameAttrs));
    op.erase();
  }
};
} // namespace
} // namespace kiln
