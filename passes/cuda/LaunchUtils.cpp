#include "passes/cuda/LaunchUtils.h"
#include "dialects/cpu/IR/Cpu.h"
#include "passes/cuda/DeviceTransfers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln::cuda {

bool accessesMemory(Operation *op) {
  if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp, cpu::WorkspaceOp>(op) || op->hasAttr(kHostOpAttr))
    return false;
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
    return effects.hasEffect<MemoryEffects::Read>() || effects.hasEffect<MemoryEffects::Write>();
  if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
    return false; // decided by the nested ops
  // Unknown effects: an op handed a buffer may touch it.
  return llvm::any_of(op->getOperandTypes(), [](Type t) { return isa<MemRefType>(t); });
}

Value rootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

bool isHostGlobal(Value v) { return isa<MemRefType>(v.getType()) && rootBuffer(v).getDefiningOp<memref::GetGlobalOp>(); }

static bool isKernel(Operation *op) {
  return isa<gpu::LaunchOp>(op) || (isa<scf::ParallelOp>(op) && op->getNumResults() == 0);
}

bool accessesMemoryOutsideKernels(Operation *op) {
  bool found = false;
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (inner != op && isKernel(inner))
      return WalkResult::skip();
    if (accessesMemory(inner)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

bool containsKernels(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (isa<gpu::LaunchOp, scf::ParallelOp>(inner)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

Value tripCount(OpBuilder &b, Location loc, Value lb, Value ub, Value step) {
  Value span = b.createOrFold<arith::SubIOp>(loc, ub, lb);
  Value trip = b.createOrFold<arith::CeilDivSIOp>(loc, span, step);
  return b.createOrFold<arith::MaxSIOp>(loc, trip, arith::ConstantIndexOp::create(b, loc, 0));
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value id, ValueRange lbs, ValueRange steps,
                               ValueRange trips) {
  size_t d = trips.size();
  SmallVector<Value> ivs(d);
  Value rest = id;
  for (size_t j = d; j-- > 0;) {
    Value t = j == 0 ? rest : (Value)arith::RemUIOp::create(b, loc, rest, trips[j]);
    if (j > 0)
      rest = arith::DivUIOp::create(b, loc, rest, trips[j]);
    ivs[j] = arith::AddIOp::create(b, loc, lbs[j], arith::MulIOp::create(b, loc, t, steps[j]));
  }
  return ivs;
}

void combineInShared(OpBuilder &b, Location loc, Value partial, Value shared, Value thread, Value lane, int64_t lanes,
                     function_ref<Value(Value, Value)> combine) {
  memref::StoreOp::create(b, loc, partial, shared, ValueRange{thread});
  gpu::BarrierOp::create(b, loc);
  for (int64_t half = lanes / 2; half >= 1; half /= 2) {
    Value h = arith::ConstantIndexOp::create(b, loc, half);
    auto lower = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lane, h),
                                   /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(lower.thenBlock()->getTerminator());
      Value mine = memref::LoadOp::create(b, loc, shared, ValueRange{thread});
      Value other = memref::LoadOp::create(b, loc, shared, ValueRange{arith::AddIOp::create(b, loc, thread, h)});
      memref::StoreOp::create(b, loc, combine(mine, other), shared, ValueRange{thread});
    }
    gpu::BarrierOp::create(b, loc);
  }
}

} // namespace kiln::cuda
