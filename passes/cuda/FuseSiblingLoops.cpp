// Merges neighbouring independent parallel loops of the host program into one, so they are one
// kernel launch instead of two.
//
// A decoder step appends its keys and then its values to the KV caches: two copies of the same
// shape into different buffers, each its own launch per layer. A launch costs the host (or a CUDA
// graph node) more than these copies take, so loops that neither read nor write what the other
// writes run as one: the merged loop covers both ranges and each body runs where its own range
// holds. Only loops whose bounds differ in at most one dim are merged (then the merged range is
// no bigger than the two together) and only elementwise bodies (no nested loop: a reduction keeps
// its own launch, which kiln-form-block-reductions shapes).
#include "passes/cuda/Passes.h"
#include "passes/cuda/LaunchUtils.h"

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

/// The buffers (roots of their views) a loop reads and writes, or nothing when its body has an
/// op this pass does not merge: a nested loop, or memory effects other than loads and stores.
struct Accesses {
  llvm::SmallPtrSet<Value, 4> read, written;
};

std::optional<Accesses> elementwiseAccesses(scf::ParallelOp loop) {
  Accesses a;
  bool plain = true;
  loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      a.read.insert(cuda::rootBuffer(load.getMemRef()));
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      a.written.insert(cuda::rootBuffer(store.getMemRef()));
    else if (isa<LoopLikeOpInterface>(op) || (op->getNumRegions() == 0 && !isMemoryEffectFree(op)))
      plain = false;
  });
  if (!plain)
    return std::nullopt;
  return a;
}

bool touches(const Accesses &a, const llvm::SmallPtrSet<Value, 4> &buffers) {
  return llvm::any_of(buffers, [&](Value v) { return a.read.contains(v) || a.written.contains(v); });
}

/// Whether `op` may lie between two loops that merge at the second one's place: host arithmetic,
/// views and dims (pure ops) and allocations, none of which the first loop can use.
bool hostStep(Operation &op) {
  return op.getNumRegions() == 0 && (isMemoryEffectFree(&op) || isa<memref::AllocOp>(op));
}

/// Whether every lower bound is 0 and every step 1 (the merged loop's guards compare the index
/// with each upper bound).
bool fromZeroByOne(scf::ParallelOp loop) {
  return llvm::all_of(loop.getLowerBound(), [](Value v) { return isConstantIntValue(v, 0); }) &&
         llvm::all_of(loop.getStep(), [](Value v) { return isConstantIntValue(v, 1); });
}

/// The dims where `a` and `b`'s upper bounds differ (as values), or nothing when the loops cannot
/// merge: results, other ranks, other lower bounds or steps, more than one differing dim, or
/// bodies that touch what the other writes.
std::optional<SmallVector<unsigned>> mergeable(scf::ParallelOp a, scf::ParallelOp b) {
  if (a.getNumResults() || b.getNumResults() || a.getNumLoops() != b.getNumLoops() || !fromZeroByOne(a) ||
      !fromZeroByOne(b))
    return std::nullopt;
  SmallVector<unsigned> differ;
  for (unsigned i = 0; i < a.getNumLoops(); ++i) {
    Value ua = a.getUpperBound()[i], ub = b.getUpperBound()[i];
    std::optional<int64_t> ca = getConstantIntValue(ua), cb = getConstantIntValue(ub);
    if (ua != ub && !(ca && cb && *ca == *cb))
      differ.push_back(i);
  }
  if (differ.size() > 1)
    return std::nullopt;
  std::optional<Accesses> ea = elementwiseAccesses(a), eb = elementwiseAccesses(b);
  if (!ea || !eb || touches(*ea, eb->written) || touches(*eb, ea->written))
    return std::nullopt;
  return differ;
}

/// One loop at `b`'s place running both bodies; a body whose range is smaller in the differing dim
/// runs under a guard.
scf::ParallelOp merge(scf::ParallelOp a, scf::ParallelOp b, ArrayRef<unsigned> differ) {
  OpBuilder builder(b);
  Location loc = b.getLoc();
  SmallVector<Value> ubs(a.getUpperBound());
  for (unsigned d : differ)
    ubs[d] = arith::MaxSIOp::create(builder, loc, a.getUpperBound()[d], b.getUpperBound()[d]);
  auto merged = scf::ParallelOp::create(builder, loc, a.getLowerBound(), ubs, a.getStep());
  SmallVector<Value> ivs = merged.getInductionVars();
  builder.setInsertionPoint(merged.getBody()->getTerminator());
  for (scf::ParallelOp part : {a, b}) {
    IRMapping map;
    map.map(part.getInductionVars(), ivs);
    OpBuilder::InsertionGuard g(builder);
    if (!differ.empty()) {
      unsigned d = differ.front();
      Value inside = arith::CmpIOp::create(builder, part.getLoc(), arith::CmpIPredicate::slt, ivs[d],
                                           part.getUpperBound()[d]);
      auto guard = scf::IfOp::create(builder, part.getLoc(), inside, /*withElseRegion=*/false);
      builder.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
    for (Operation &op : part.getBody()->without_terminator())
      builder.clone(op, map);
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
      // Each loop merges with the last loop before it, when nothing but host arithmetic lies between.
      scf::ParallelOp last;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto loop = dyn_cast<scf::ParallelOp>(op);
        if (!loop) {
          if (!hostStep(op))
            last = {};
          continue;
        }
        if (last)
          if (std::optional<SmallVector<unsigned>> differ = mergeable(last, loop)) {
            last = merge(last, loop, *differ);
            continue;
          }
        last = loop;
      }
    }
  }
};

} // namespace
} // namespace kiln
