// Merges neighbouring independent parallel loops of the host program into one, so they are one
// kernel launch instead of two.
//
// A decoder step appends its keys and then its values to the KV caches: two copies of the same
// shape into different buffers, each its own launch per layer. A launch costs the host (or a CUDA
// graph node) more than these copies take, so loops that neither read nor write what the other
// writes run as one: over the same space each iteration runs both bodies; otherwise one index
// runs over the first loop's iterations then the second's. Only elementwise bodies (no nested
// loop: a reduction keeps its own launch, which kiln-form-block-reductions shapes).
#include "passes/cuda/Passes.h"
#include "passes/cuda/LaunchUtils.h"
#include "passes/host/GemmEpilogue.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_FUSESIBLINGLOOPSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The buffer `v` views: a buffer of the memory plan (a view of the arena that kiln-plan-memory
/// marked with its live span), or the root of its views.
Value bufferOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>()) {
    if (isa<memref::ViewOp>(view) && view->hasAttr(attrs::kPlanLive))
      return v;
    v = view.getViewSource();
  }
  return v;
}

/// Whether two buffers may share bytes: the same buffer, or two buffers of the memory plan that
/// are not live at once (the planner may have put the later one on the bytes of the earlier).
bool mayShareBytes(Value x, Value y) {
  if (x == y)
    return true;
  auto vx = x.getDefiningOp<memref::ViewOp>(), vy = y.getDefiningOp<memref::ViewOp>();
  auto live = [](memref::ViewOp view) { return view ? view->getAttrOfType<DenseI64ArrayAttr>(attrs::kPlanLive) : nullptr; };
  DenseI64ArrayAttr lx = live(vx), ly = live(vy);
  if (!lx || !ly)
    return (lx && vx.getSource() == y) || (ly && vy.getSource() == x); // a plan buffer and its arena
  if (vx.getSource() != vy.getSource())
    return false;
  return lx[1] < ly[0] || ly[1] < lx[0];
}

/// The buffers a loop reads and writes, or nothing when its body has an op this pass does not
/// merge: a nested loop, or memory effects other than loads and stores.
struct Accesses {
  llvm::SmallPtrSet<Value, 4> read, written;
};

std::optional<Accesses> elementwiseAccesses(scf::ParallelOp loop) {
  Accesses a;
  bool plain = true;
  loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      a.read.insert(bufferOf(load.getMemRef()));
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      a.written.insert(bufferOf(store.getMemRef()));
    else if (isa<LoopLikeOpInterface>(op) || (op->getNumRegions() == 0 && !isMemoryEffectFree(op)))
      plain = false;
  });
  if (!plain)
    return std::nullopt;
  return a;
}

/// Whether `a` reads or writes bytes that may be among `buffers`'.
bool touches(const Accesses &a, const llvm::SmallPtrSet<Value, 4> &buffers) {
  auto overlaps = [&](Value w) {
    return llvm::any_of(a.read, [&](Value v) { return mayShareBytes(v, w); }) ||
           llvm::any_of(a.written, [&](Value v) { return mayShareBytes(v, w); });
  };
  return llvm::any_of(buffers, overlaps);
}

/// Whether two bounds are the same value or equal constants.
bool sameBound(Value x, Value y) {
  std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  return x == y || (cx && cy && *cx == *cy);
}

/// Whether the loops iterate over the same space (then one loop runs both bodies as they are).
bool sameSpace(scf::ParallelOp a, scf::ParallelOp b) {
  if (a.getNumLoops() != b.getNumLoops())
    return false;
  for (unsigned i = 0; i < a.getNumLoops(); ++i)
    if (!sameBound(a.getLowerBound()[i], b.getLowerBound()[i]) ||
        !sameBound(a.getUpperBound()[i], b.getUpperBound()[i]) || !sameBound(a.getStep()[i], b.getStep()[i]))
      return false;
  return true;
}

/// Whether the loops can run as one at b's place: no results, elementwise bodies, neither touches
/// a buffer the other writes, and `a` writes nothing that host loads between them (`readBetween`)
/// read.
bool independent(scf::ParallelOp a, scf::ParallelOp b, const llvm::SmallPtrSet<Value, 4> &readBetween) {
  if (a.getNumResults() || b.getNumResults())
    return false;
  std::optional<Accesses> ea = elementwiseAccesses(a), eb = elementwiseAccesses(b);
  return ea && eb && !touches(*ea, eb->written) && !touches(*eb, ea->written) &&
         !touches(Accesses{readBetween, {}}, ea->written);
}

/// Clones `part`'s body at `builder`'s insertion point with `ivs` as its induction variables.
void cloneBody(OpBuilder &builder, scf::ParallelOp part, ValueRange ivs) {
  IRMapping map;
  map.map(part.getInductionVars(), ivs);
  for (Operation &op : part.getBody()->without_terminator())
    builder.clone(op, map);
}

/// The number of iterations of `loop`; its trip counts per dim in `trips`.
Value iterations(OpBuilder &b, Location loc, scf::ParallelOp loop, SmallVectorImpl<Value> &trips) {
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    trips.push_back(cuda::tripCount(b, loc, lb, ub, step));
    total = arith::MulIOp::create(b, loc, total, trips.back());
  }
  return total;
}

/// One loop at `b`'s place running both bodies. Over the same space each iteration runs both;
/// otherwise one index runs over a's iterations then b's, and each body recovers its induction
/// variables from it (so the merged loop is never bigger than the two, whatever their shapes).
scf::ParallelOp merge(scf::ParallelOp a, scf::ParallelOp b) {
  OpBuilder builder(b);
  Location loc = b.getLoc();
  scf::ParallelOp merged;
  if (sameSpace(a, b)) {
    merged = scf::ParallelOp::create(builder, loc, a.getLowerBound(), a.getUpperBound(), a.getStep());
    builder.setInsertionPoint(merged.getBody()->getTerminator());
    cloneBody(builder, a, merged.getInductionVars());
    cloneBody(builder, b, merged.getInductionVars());
  } else {
    SmallVector<Value> tripsA, tripsB;
    Value countA = iterations(builder, loc, a, tripsA), countB = iterations(builder, loc, b, tripsB);
    Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
    Value one = arith::ConstantIndexOp::create(builder, loc, 1);
    Value total = arith::AddIOp::create(builder, loc, countA, countB);
    merged = scf::ParallelOp::create(builder, loc, ValueRange{zero}, ValueRange{total}, ValueRange{one});
    builder.setInsertionPoint(merged.getBody()->getTerminator());
    Value id = merged.getInductionVars().front();
    Value inA = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, id, countA);
    auto pick = scf::IfOp::create(builder, loc, inA, /*withElseRegion=*/true);
    builder.setInsertionPoint(pick.thenBlock()->getTerminator());
    cloneBody(builder, a, cuda::delinearize(builder, loc, id, a.getLowerBound(), a.getStep(), tripsA));
    builder.setInsertionPoint(pick.elseBlock()->getTerminator());
    Value idB = arith::SubIOp::create(builder, loc, id, countA);
    cloneBody(builder, b, cuda::delinearize(builder, loc, idB, b.getLowerBound(), b.getStep(), tripsB));
  }
  a.erase();
  b.erase();
  return merged;
}

struct FuseSiblingLoopsPass : impl::FuseSiblingLoopsPassBase<FuseSiblingLoopsPass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    // Host blocks only: not kernels, not loop bodies (merging erases the loops and their blocks).
    getOperation().walk([&](Block *block) {
      Operation *parent = block->getParentOp();
      if (!isa<gpu::LaunchOp, scf::ParallelOp>(parent) && !parent->getParentOfType<gpu::LaunchOp>() &&
          !parent->getParentOfType<scf::ParallelOp>())
        blocks.push_back(block);
    });
    for (Block *block : blocks) {
      // Each loop merges with the loop before it when only host steps lie between them.
      scf::ParallelOp last;
      llvm::SmallPtrSet<Value, 4> readBetween; // buffers host loads read between `last` and here
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto loop = dyn_cast<scf::ParallelOp>(op);
        if (!loop) {
          // Only ops that touch no memory (index math, views, allocations) and host loads (a
          // decode step's past length) may lie between two loops that merge at the second one's
          // place; the first loop uses none of them, and must not write what the loads read.
          if (auto load = dyn_cast<memref::LoadOp>(op))
            readBetween.insert(bufferOf(load.getMemRef()));
          else if (!touchesNoMemory(&op))
            last = {};
          continue;
        }
        if (last && independent(last, loop, readBetween)) {
          last = merge(last, loop);
          readBetween.clear();
          continue;
        }
        last = loop;
        readBetween.clear();
      }
    }
  }
};

} // namespace
} // namespace kiln
