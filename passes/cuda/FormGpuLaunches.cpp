// Turns @main's parallel loops into grid launches and its other buffer accesses into one-thread launches.
//
// On the GPU every buffer (inputs, weights, the arena, outputs) is device
// memory; the host program keeps shape and offset arithmetic, allocations and
// control flow, and launches a kernel for everything that touches elements.
#include "passes/cuda/Passes.h"
#include "passes/cpu/SourceNodes.h"
#include "dialects/cpu/IR/Cpu.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FORMGPULAUNCHESPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Threads per block of a grid launch: a multiple of the 32-thread warp that
/// keeps enough blocks resident per SM for the simple kernels formed here.
constexpr int64_t kBlockThreads = 256;

/// Whether `op` itself (not counting nested ops) reads or writes memory.
/// Allocation and deallocation are host work (they only move pointers).
bool accessesMemory(Operation *op) {
  if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp, cpu::WorkspaceOp>(op))
    return false;
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
    return effects.hasEffect<MemoryEffects::Read>() || effects.hasEffect<MemoryEffects::Write>();
  if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
    return false; // decided by the nested ops
  // Unknown effects: an op handed a buffer may touch it.
  return llvm::any_of(op->getOperandTypes(), [](Type t) { return isa<MemRefType>(t); });
}

/// Whether anything in `op`, outside the parallel loops nested in it, touches memory.
bool accessesMemoryOutsideParallelLoops(Operation *op) {
  bool found = false;
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (inner != op && isa<scf::ParallelOp>(inner) && inner->getNumResults() == 0)
      return WalkResult::skip();
    if (accessesMemory(inner)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

bool containsParallelLoop(Operation *op) {
  bool found = false;
  op->walk([&](scf::ParallelOp) { found = true; });
  return found;
}

/// The launch's location: the ONNX node names of everything it runs, once each.
Location sourceLocation(MLIRContext *ctx, ArrayRef<Operation *> ops) {
  llvm::SetVector<StringRef> names;
  for (Operation *op : ops)
    op->walk([&](Operation *inner) { collectNodeNames(inner->getLoc(), names); });
  SmallVector<Location> locs;
  for (StringRef n : names)
    locs.push_back(NameLoc::get(StringAttr::get(ctx, n)));
  if (locs.empty())
    return ops.front()->getLoc();
  return FusedLoc::get(ctx, locs);
}

struct FormGpuLaunchesPass : impl::FormGpuLaunchesPassBase<FormGpuLaunchesPass> {
  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    WalkResult strings = func.walk([&](Operation *op) {
      if (op->getName().getStringRef().starts_with("kiln_cpu.string_")) {
        op->emitError("string tensors are not supported with --target=cuda");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (strings.wasInterrupted())
      return signalPassFailure();
    for (Block &block : func.getBody())
      if (failed(processBlock(block)))
        return signalPassFailure();
    // Constant globals are read inside the kernels: outlining then copies them into the GPU
    // module (device memory); a host address would not be readable there.
    func.walk([&](gpu::LaunchOp launch) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(launch.getBody(), captured);
      OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
      for (Value v : captured)
        if (auto global = v.getDefiningOp<memref::GetGlobalOp>())
          replaceAllUsesInRegionWith(v, b.clone(*global)->getResult(0), launch.getBody());
    });
  }

  /// Forms the launches of one host block, recursing into host control flow.
  LogicalResult processBlock(Block &block) {
    SmallVector<Operation *> group; // ops for the next one-thread launch, in order
    llvm::SmallPtrSet<Operation *, 16> inGroup;
    auto flush = [&](Operation *before) -> LogicalResult {
      if (group.empty())
        return success();
      LogicalResult r = formSerialLaunch(group, inGroup, before);
      group.clear();
      inGroup.clear();
      return r;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        if (failed(flush(&op)))
          return failure();
        continue;
      }
      bool usesGroup = llvm::any_of(op.getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && inGroup.contains(def);
      });
      auto par = dyn_cast<scf::ParallelOp>(op);
      if (par && par.getNumResults() == 0 && !usesGroup) {
        if (failed(flush(&op)))
          return failure();
        formGridLaunch(par);
        continue;
      }
      bool joins = usesGroup || (op.getNumRegions() == 0 ? accessesMemory(&op)
                                                         : accessesMemoryOutsideParallelLoops(&op));
      if (joins && !isa<memref::AllocOp, memref::DeallocOp, cpu::WorkspaceOp>(op)) {
        group.push_back(&op);
        inGroup.insert(&op);
        continue;
      }
      if (op.getNumRegions() == 0 && isMemoryEffectFree(&op))
        continue; // host arithmetic; it may sit between the ops of a group
      if (failed(flush(&op)))
        return failure();
      // Host control flow whose buffer accesses are all in parallel loops:
      // it stays on the host and launches their kernels.
      if (op.getNumRegions() != 0 && containsParallelLoop(&op))
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            if (failed(processBlock(inner)))
              return failure();
    }
    return success();
  }

  /// One thread runs `ops` in order, at the position of `before`.
  LogicalResult formSerialLaunch(ArrayRef<Operation *> ops, const llvm::SmallPtrSetImpl<Operation *> &members,
                                 Operation *before) {
    for (Operation *op : ops)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers()) {
          Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
          if (!top || !members.contains(top))
            return user->emitError("a value computed from tensor data is needed by the host program "
                                   "(e.g. a data-dependent shape), which --target=cuda does not support yet");
        }
    OpBuilder b(before);
    Location loc = sourceLocation(b.getContext(), ops);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    for (Operation *op : ops) {
      op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    }
    gpu::TerminatorOp::create(b, loc);
    return success();
  }

  /// A grid of 256-thread blocks, one thread per iteration of `op`.
  void formGridLaunch(scf::ParallelOp op) {
    OpBuilder b(op);
    Location loc = sourceLocation(b.getContext(), {op.getOperation()});
    int64_t d = op.getNumLoops();
    SmallVector<Value> trips;
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    // Folded as built, so a static iteration space gives a constant total.
    for (int64_t j = 0; j < d; ++j) {
      Value span = b.createOrFold<arith::SubIOp>(loc, op.getUpperBound()[j], op.getLowerBound()[j]);
      Value trip = b.createOrFold<arith::CeilDivSIOp>(loc, span, op.getStep()[j]);
      trip = b.createOrFold<arith::MaxSIOp>(loc, trip, zero);
      trips.push_back(trip);
      total = b.createOrFold<arith::MulIOp>(loc, total, trip);
    }
    // A static iteration space smaller than a block gets a block of its size.
    Value threads = arith::ConstantIndexOp::create(b, loc, kBlockThreads);
    if (auto n = getConstantIntValue(total); n && *n > 0 && *n < kBlockThreads)
      threads = arith::ConstantIndexOp::create(b, loc, *n);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // At least one block: an empty iteration space launches one idle block
    // rather than an invalid grid.
    Value blocks = arith::MaxSIOp::create(b, loc, arith::CeilDivSIOp::create(b, loc, total, threads), one);
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value id = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, launch.getBlockSize().x),
        launch.getThreadIds().x);
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, total);
    auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    // Innermost dim fastest: consecutive threads, consecutive elements.
    IRMapping mapping;
    Block &src = op.getRegion().front();
    Value rest = id;
    for (int64_t j = d - 1; j >= 0; --j) {
      Value t = j == 0 ? rest : (Value)arith::RemUIOp::create(b, loc, rest, trips[j]);
      if (j > 0)
        rest = arith::DivUIOp::create(b, loc, rest, trips[j]);
      mapping.map(src.getArgument(j),
                  arith::AddIOp::create(b, loc, op.getLowerBound()[j], arith::MulIOp::create(b, loc, t, op.getStep()[j])));
    }
    for (Operation &inner : src.without_terminator())
      b.clone(inner, mapping);
    op.erase();
  }
};

} // namespace
} // namespace kiln
