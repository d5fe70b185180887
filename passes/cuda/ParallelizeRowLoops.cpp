// Turns a host loop over rows, each iteration copying one row slice with a parallel loop, into one
// parallel loop over (row, element).
//
// A KV-cache append with per-row positions is such a loop (kv_cache_append in LowerShape.cpp):
// for each row r it reads the row's position from the row positions buffer, and where the row fits
// copies update[r] into cache[r] at that position. Its body reads device memory, so
// kiln-form-gpu-launches would run the whole loop, every element of every row, on one GPU thread:
// for a decode step that is one thread copying a layer's new keys. As one parallel loop over the
// row and the copy's own dims, each thread reads its row's position itself and copies one element.
#include "passes/cuda/Passes.h"
#include "passes/cuda/LaunchUtils.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_PARALLELIZEROWLOOPSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A row loop's parts: host ops before the copy (`prefix`), an optional guard around it with its
/// own host ops (`guardPrefix`), and the copy (`copy`, a parallel loop with no results).
struct RowLoop {
  scf::ForOp loop;
  SmallVector<Operation *> prefix, guardPrefix;
  scf::IfOp guard;
  scf::ParallelOp copy;
};

/// Host ops allowed between the row loop and its copy: pure ops (index arithmetic, views) and
/// loads (a row's position).
bool isHostStep(Operation &op) {
  return op.getNumRegions() == 0 && (isa<memref::LoadOp>(op) || isMemoryEffectFree(&op));
}

/// Whether a store into `dst` inside `loop` writes only the row of the loop's induction variable:
/// `dst` is a subview, made in the loop, of a buffer from outside it, with a unit dim whose offset
/// is the induction variable. Then iterations write disjoint elements.
bool writesOwnRow(Value dst, scf::ForOp loop) {
  auto sub = dst.getDefiningOp<memref::SubViewOp>();
  if (!sub || !loop->isProperAncestor(sub) || !loop.isDefinedOutsideOfLoop(sub.getSource()) ||
      sub.getType().getRank() != sub.getSourceType().getRank())
    return false;
  for (auto [offset, size] : llvm::zip(sub.getMixedOffsets(), sub.getMixedSizes())) {
    auto value = dyn_cast<Value>(offset);
    std::optional<int64_t> unit = getConstantIntValue(size);
    if (value == loop.getInductionVar() && unit && *unit == 1)
      return true;
  }
  return false;
}

/// The last op of `block` before its terminator when every op before it is a host step (collected
/// in `steps`), or null.
Operation *lastAfterHostSteps(Block *block, SmallVectorImpl<Operation *> &steps) {
  Operation *last = block->getTerminator()->getPrevNode();
  if (!last)
    return nullptr;
  for (Operation &op : block->without_terminator()) {
    if (&op == last)
      break;
    if (!isHostStep(op))
      return nullptr;
    steps.push_back(&op);
  }
  return last;
}

/// `loop` as a row loop whose iterations are independent, or nothing: every write is a store into
/// the iteration's own row (writesOwnRow) or the loop is marked kiln.disjoint_iterations, and
/// nothing in the loop reads a buffer it writes.
std::optional<RowLoop> matchRowLoop(scf::ForOp loop) {
  if (loop.getNumResults() != 0 || loop->getParentOfType<gpu::LaunchOp>())
    return std::nullopt;
  RowLoop row{loop, {}, {}, {}, {}};
  Operation *copy = lastAfterHostSteps(loop.getBody(), row.prefix);
  if (auto guard = dyn_cast_or_null<scf::IfOp>(copy)) {
    if (guard.getNumResults() != 0 || !guard.getElseRegion().empty())
      return std::nullopt;
    copy = lastAfterHostSteps(guard.thenBlock(), row.guardPrefix);
    row.guard = guard;
  }
  row.copy = dyn_cast_or_null<scf::ParallelOp>(copy);
  if (!row.copy || row.copy.getNumResults() != 0)
    return std::nullopt;
  // The copy's bounds become the new loop's: they must not change from row to row.
  for (Value v : llvm::concat<Value>(row.copy.getLowerBound(), row.copy.getUpperBound(), row.copy.getStep()))
    if (!loop.isDefinedOutsideOfLoop(v))
      return std::nullopt;
  llvm::SmallPtrSet<Value, 4> written;
  SmallVector<Value> read;
  bool independent = true;
  // The lowering of a paged KV write knows its iterations write distinct slots; it says so.
  bool disjoint = loop->hasAttr(attrs::kDisjointIterations);
  loop.getBody()->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!disjoint && !writesOwnRow(store.getMemRef(), loop))
        independent = false;
      written.insert(cuda::rootBuffer(store.getMemRef()));
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      read.push_back(cuda::rootBuffer(load.getMemRef()));
    } else if (op->getNumRegions() == 0 && !isMemoryEffectFree(op)) {
      independent = false; // an allocation, a call, a copy: not a plain element copy
    }
  });
  if (!independent || llvm::any_of(read, [&](Value v) { return written.contains(v); }))
    return std::nullopt;
  return row;
}

/// The row loop as one parallel loop over (row, the copy's dims): the host ops, the guard and the
/// copy's body run per element.
void parallelize(RowLoop &row) {
  scf::ForOp loop = row.loop;
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> lbs{loop.getLowerBound()}, ubs{loop.getUpperBound()}, steps{loop.getStep()};
  llvm::append_range(lbs, row.copy.getLowerBound());
  llvm::append_range(ubs, row.copy.getUpperBound());
  llvm::append_range(steps, row.copy.getStep());
  auto par = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
  SmallVector<Value> ivs = par.getInductionVars();
  IRMapping map;
  map.map(loop.getInductionVar(), ivs.front());
  for (auto [from, to] : llvm::zip(row.copy.getInductionVars(), ArrayRef<Value>(ivs).drop_front()))
    map.map(from, to);
  b.setInsertionPoint(par.getBody()->getTerminator());
  for (Operation *op : row.prefix)
    b.clone(*op, map);
  if (row.guard) {
    auto guard = scf::IfOp::create(b, row.guard.getLoc(), map.lookup(row.guard.getCondition()),
                                   /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    for (Operation *op : row.guardPrefix)
      b.clone(*op, map);
  }
  for (Operation &op : row.copy.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
}

struct ParallelizeRowLoopsPass : impl::ParallelizeRowLoopsPassBase<ParallelizeRowLoopsPass> {
  void runOnOperation() override {
    // Innermost loops first: a loop over rows and tokens becomes parallel over both.
    SmallVector<scf::ForOp> loops;
    getOperation().walk<WalkOrder::PostOrder>([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      if (std::optional<RowLoop> row = matchRowLoop(loop))
        parallelize(*row);
  }
};

} // namespace
} // namespace kiln
