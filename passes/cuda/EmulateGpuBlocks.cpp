// Runs the GPU launches of one-dimensional blocks on the CPU, thread by thread.
//
// kiln's CI has no GPU, so the kernels kiln-form-block-reductions writes (threads of a block
// sharing a workgroup buffer, with barriers between the steps) would otherwise only be checked
// by ptxas. This pass turns each such gpu.launch into host loops that mean the same: a loop over
// the blocks; in each, the code between two barriers becomes a loop over the threads, so every
// thread finishes one step before any starts the next, as a barrier guarantees. Code around a
// barrier must be the same for all threads of a block (an scf.if on the block index), which
// is what the GPU requires as well. A value a thread computes before a barrier and uses after
// it is recomputed in the later step when it is pure (indices); any other is an error. The
// workgroup buffer becomes a host buffer. Then the ordinary CPU lowering and
// mlir-runner execute the result (test/lit/passes/cuda/block-reductions-run.mlir), and
// kiln-compile --target=cuda-emulated runs whole models' kernels this way.
#include "passes/cuda/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_EMULATEGPUBLOCKSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

bool containsBarrier(Operation *op) {
  return op->walk([](gpu::BarrierOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

struct Emulator {
  gpu::LaunchOp launch;
  Value threads; // the block size

  /// `v` in the code being built: mapped, defined outside the launch, or a pure op of the launch
  /// recomputed here (an index a thread computed before a barrier).
  FailureOr<Value> materialize(OpBuilder &b, Value v, IRMapping &m) {
    if (Value mapped = m.lookupOrNull(v))
      return mapped;
    Operation *def = v.getDefiningOp();
    if (!launch->isAncestor(def ? def : v.getParentRegion()->getParentOp()))
      return v;
    if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return launch.emitError("a value crosses a barrier and is not recomputable: ") << v, failure();
    for (Value operand : def->getOperands())
      if (failed(materialize(b, operand, m)))
        return failure();
    b.clone(*def, m);
    return m.lookup(v);
  }

  /// Clones `op` after making every value it uses from earlier code available.
  LogicalResult cloneWithInputs(OpBuilder &b, Operation *op, IRMapping &m) {
    llvm::SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    for (Region &region : op->getRegions())
      getUsedValuesDefinedAbove(region, used);
    for (Value v : used)
      if (failed(materialize(b, v, m)))
        return failure();
    b.clone(*op, m);
    return success();
  }

  /// One step: the ops, for every thread in turn.
  LogicalResult emitStep(OpBuilder &b, ArrayRef<Operation *> ops, IRMapping &outer) {
    if (ops.empty())
      return success();
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, zero, threads, one);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    // A thread's own stack arrays are freed at the end of its turn: in a loop they would pile up.
    if (llvm::any_of(ops, [](Operation *op) {
          return op->walk([](memref::AllocaOp) { return WalkResult::interrupt(); }).wasInterrupted();
        })) {
      auto scope = memref::AllocaScopeOp::create(b, loc, TypeRange{});
      Block *body = b.createBlock(&scope.getBodyRegion());
      b.setInsertionPointToStart(body);
      auto end = memref::AllocaScopeReturnOp::create(b, loc, ValueRange{});
      b.setInsertionPoint(end);
    }
    IRMapping m = outer;
    m.map(launch.getThreadIds().x, loop.getInductionVar());
    for (Operation *op : ops)
      if (failed(cloneWithInputs(b, op, m)))
        return failure();
    return success();
  }

  /// Emits `block`'s ops: steps between barriers; an op holding barriers is code the whole block
  /// runs (its condition or bounds may not depend on the thread), with its regions emitted the
  /// same way.
  LogicalResult emitBlock(OpBuilder &b, Block &block, IRMapping &m) {
    SmallVector<Operation *> step;
    for (Operation &op : block) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        break;
      if (isa<gpu::BarrierOp>(op)) {
        if (failed(emitStep(b, step, m)))
          return failure();
        step.clear();
        continue;
      }
      if (!containsBarrier(&op)) {
        step.push_back(&op);
        continue;
      }
      if (failed(emitStep(b, step, m)))
        return failure();
      step.clear();
      // A loop of the whole block (kiln-form-attention-blocks' key tiles): the same loop here,
      // its body emitted step by step in each iteration.
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && loop.getNumResults() == 0) {
        FailureOr<Value> lb = materialize(b, loop.getLowerBound(), m), ub = materialize(b, loop.getUpperBound(), m),
                         stepSize = materialize(b, loop.getStep(), m);
        if (failed(lb) || failed(ub) || failed(stepSize))
          return failure();
        auto copy = scf::ForOp::create(b, op.getLoc(), *lb, *ub, *stepSize);
        OpBuilder inner = OpBuilder::atBlockBegin(copy.getBody());
        inner.setInsertionPoint(copy.getBody()->getTerminator());
        IRMapping nested = m;
        nested.map(loop.getInductionVar(), copy.getInductionVar());
        if (failed(emitBlock(inner, *loop.getBody(), nested)))
          return failure();
        continue;
      }
      auto branch = dyn_cast<scf::IfOp>(op);
      if (!branch || branch.getNumResults() != 0 || branch.elseBlock())
        return op.emitError("a barrier inside an op other than a result-less scf.if or scf.for");
      FailureOr<Value> condition = materialize(b, branch.getCondition(), m);
      if (failed(condition))
        return failure();
      auto copy = scf::IfOp::create(b, op.getLoc(), *condition, /*withElseRegion=*/false);
      OpBuilder inner = OpBuilder::atBlockBegin(copy.thenBlock());
      inner.setInsertionPoint(copy.thenBlock()->getTerminator());
      IRMapping nested = m;
      if (failed(emitBlock(inner, *branch.thenBlock(), nested)))
        return failure();
    }
    return emitStep(b, step, m);
  }

  LogicalResult run() {
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    for (Value size : {launch.getGridSizeY(), launch.getGridSizeZ(), launch.getBlockSizeY(), launch.getBlockSizeZ()})
      if (getConstantIntValue(size) != 1)
        return launch.emitError("kiln-emulate-gpu-blocks runs one-dimensional launches only");
    threads = launch.getBlockSizeX();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
    IRMapping m;
    // The workgroup buffers in host memory, one for all blocks (each block writes its partial
    // values before it reads them), at the function's entry: a launch in a host loop would
    // otherwise grow the stack at every iteration.
    auto function = launch->getParentOfType<FunctionOpInterface>();
    OpBuilder entry = OpBuilder::atBlockBegin(&function.getFunctionBody().front());
    for (BlockArgument shared : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(shared.getType());
      if (!type.hasStaticShape())
        return launch.emitError("kiln-emulate-gpu-blocks needs workgroup buffers of static size");
      m.map(shared, memref::AllocaOp::create(entry, loc, MemRefType::get(type.getShape(), type.getElementType())));
    }
    auto blocks = scf::ForOp::create(b, loc, zero, launch.getGridSizeX(), one);
    b.setInsertionPoint(blocks.getBody()->getTerminator());
    Block &body = launch.getBody().front();
    m.map(launch.getBlockIds().x, blocks.getInductionVar());
    for (Value v : {launch.getBlockIds().y, launch.getBlockIds().z, launch.getThreadIds().y, launch.getThreadIds().z})
      m.map(v, zero);
    m.map(launch.getGridSize().x, launch.getGridSizeX());
    m.map(launch.getBlockSize().x, threads);
    for (Value v : {launch.getGridSize().y, launch.getGridSize().z, launch.getBlockSize().y, launch.getBlockSize().z})
      m.map(v, one);
    if (failed(emitBlock(b, body, m)))
      return failure();
    launch.erase();
    return success();
  }
};

struct EmulateGpuBlocksPass : impl::EmulateGpuBlocksPassBase<EmulateGpuBlocksPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(Emulator{launch, {}}.run()))
        return signalPassFailure();
  }
};

} // namespace
} // namespace kiln
