// Turns @main's parallel loops into grid launches and its other buffer accesses into one-thread launches.
//
// On the GPU every buffer (inputs, weights, the arena, outputs) is device
// memory; the host program keeps shape and offset arithmetic, allocations and
// control flow, and launches a kernel for everything that touches elements.
// Values the host needs from tensor data (data-dependent sizes, shape inputs)
// are written by the kernel to a small device buffer and read back with the
// context's device_read, which waits for the launches before it.
#include "passes/cuda/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/cpu/RuntimeContext.h"
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

/// Whether a device-to-host slot holds values of type `t`.
bool fitsSlot(Type t) { return t.isIndex() || (t.isIntOrFloat() && t.getIntOrFloatBitWidth() <= 64); }

/// A device-to-host slot holds any scalar as 64 bits: index and integers
/// zero-extended, floats as their bits. Null for types that do not fit.
Value toSlot(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  auto i64 = b.getI64Type();
  if (t.isIndex())
    return arith::IndexCastUIOp::create(b, loc, i64, v);
  if (auto f = dyn_cast<FloatType>(t)) {
    if (f.getWidth() > 64)
      return {};
    v = arith::BitcastOp::create(b, loc, b.getIntegerType(f.getWidth()), v);
    t = v.getType();
  }
  auto it = dyn_cast<IntegerType>(t);
  if (!it || it.getWidth() > 64)
    return {};
  return it.getWidth() == 64 ? v : (Value)arith::ExtUIOp::create(b, loc, i64, v);
}

/// The value of type `t` a slot holds (the inverse of toSlot).
Value fromSlot(OpBuilder &b, Location loc, Value slot, Type t) {
  if (t.isIndex())
    return arith::IndexCastUIOp::create(b, loc, t, slot);
  unsigned width = t.getIntOrFloatBitWidth();
  Value bits = width == 64 ? slot : (Value)arith::TruncIOp::create(b, loc, b.getIntegerType(width), slot);
  return isa<FloatType>(t) ? (Value)arith::BitcastOp::create(b, loc, t, bits) : bits;
}

/// The address of `buffer`'s first element (its aligned pointer plus its offset) as an LLVM pointer.
Value bufferAddress(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  unsigned bytes = type.getElementType().isIndex() ? 8 : (type.getElementTypeBitWidth() + 7) / 8;
  Value offset = arith::MulIOp::create(b, loc, meta.getOffset(), arith::ConstantIndexOp::create(b, loc, bytes));
  address = arith::AddIOp::create(b, loc, address, offset);
  Value i64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

/// ctx->device_read(runtime, host, device, bytes): waits for the launches so far, then copies.
void emitDeviceRead(OpBuilder &b, Location loc, Value context, Value host, Value device, Value bytes) {
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Value runtime = contextField(b, loc, context, ctxfield::kRuntime);
  Value fn = contextField(b, loc, context, ctxfield::kDeviceRead);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr, ptr, b.getI64Type()});
  Value n = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), bytes);
  LLVM::CallOp::create(b, loc, type, ValueRange{fn, runtime, bufferAddress(b, loc, host), bufferAddress(b, loc, device), n});
}

/// A host buffer of `type` for device_read, allocated once in @main's entry block (an alloca in a
/// host loop would grow the stack every iteration).
Value hostBuffer(func::FuncOp main, Location loc, MemRefType type) {
  OpBuilder b = OpBuilder::atBlockBegin(&main.getBody().front());
  return memref::AllocaOp::create(b, loc, type);
}

struct FormGpuLaunchesPass : impl::FormGpuLaunchesPassBase<FormGpuLaunchesPass> {
  func::FuncOp main;

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
    main = func;
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
      // A parallel loop is a grid launch even when its bounds or body need
      // values of the group: those are read back first.
      auto par = dyn_cast<scf::ParallelOp>(op);
      if (par && par.getNumResults() == 0) {
        if (failed(flush(&op)))
          return failure();
        formGridLaunch(par);
        continue;
      }
      // A reshape's sizes come from a shape buffer, which the host reads.
      if (auto reshape = dyn_cast<memref::ReshapeOp>(op)) {
        if (failed(flush(&op)) || failed(readShapeOnHost(reshape)))
          return failure();
        continue;
      }
      // Host control flow whose buffer accesses are all in parallel loops:
      // it stays on the host and launches their kernels.
      bool hostNest = op.getNumRegions() != 0 && containsParallelLoop(&op) && !accessesMemoryOutsideParallelLoops(&op);
      bool joins = !hostNest && (usesGroup || (op.getNumRegions() == 0 ? accessesMemory(&op)
                                                                       : accessesMemoryOutsideParallelLoops(&op)));
      if (joins && !isa<memref::AllocOp, memref::DeallocOp, cpu::WorkspaceOp>(op)) {
        group.push_back(&op);
        inGroup.insert(&op);
        continue;
      }
      if (op.getNumRegions() == 0 && isMemoryEffectFree(&op))
        continue; // host arithmetic; it may sit between the ops of a group
      if (failed(flush(&op)))
        return failure();
      if (hostNest)
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            if (failed(processBlock(inner)))
              return failure();
    }
    return success();
  }

  /// The context argument of @main, for device_read.
  FailureOr<Value> context(Operation *user) {
    if (main.getNumArguments() == 0 || !main.getArgAttr(0, abi::kContextArg))
      return user->emitError("expected @main's runtime context (kiln-add-runtime-context)");
    return main.getArgument(0);
  }

  /// Copies `reshape`'s shape buffer from device memory to a host buffer the reshape reads instead.
  /// Shapes in constant globals are host memory already.
  LogicalResult readShapeOnHost(memref::ReshapeOp reshape) {
    Value shape = reshape.getShape();
    if (shape.getDefiningOp<memref::GetGlobalOp>())
      return success();
    FailureOr<Value> ctx = context(reshape);
    if (failed(ctx))
      return failure();
    auto type = cast<MemRefType>(shape.getType());
    OpBuilder b(reshape);
    Location loc = reshape.getLoc();
    Value host = hostBuffer(main, loc, MemRefType::get(type.getShape(), type.getElementType()));
    unsigned bytes = type.getElementType().isIndex() ? 8 : type.getElementTypeBitWidth() / 8;
    emitDeviceRead(b, loc, *ctx, host, shape, arith::ConstantIndexOp::create(b, loc, bytes * type.getNumElements()));
    reshape.getShapeMutable().assign(host);
    return success();
  }

  /// One thread runs `ops` in order, at the position of `before`. The
  /// group's values that ops after it use are made on the host: pure ops
  /// (shape arithmetic, views) are recomputed there from their operands, and
  /// the other values (loaded elements, loop results) are written to a device
  /// buffer by the kernel and read back once after it.
  LogicalResult formSerialLaunch(ArrayRef<Operation *> ops, const llvm::SmallPtrSetImpl<Operation *> &members,
                                 Operation *before) {
    Block *block = ops.front()->getBlock();
    llvm::SetVector<Value> escaping;
    for (Operation *op : ops)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers()) {
          Operation *top = block->findAncestorOpInBlock(*user);
          if (!top || !members.contains(top))
            escaping.insert(result);
        }
    llvm::SmallPtrSet<Operation *, 16> recompute;
    llvm::SetVector<Value> readBack;
    SmallVector<Value> needed(escaping.begin(), escaping.end());
    while (!needed.empty()) {
      Value v = needed.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
        if (recompute.insert(def).second)
          for (Value operand : def->getOperands())
            if (Operation *d = operand.getDefiningOp(); d && members.contains(d))
              needed.push_back(operand);
        continue;
      }
      if (fitsSlot(v.getType())) {
        readBack.insert(v);
        continue;
      }
      return def->emitError("a value of type ")
             << v.getType() << " computed from tensor data is needed by the host program, which "
             << "--target=cuda cannot read back";
    }

    OpBuilder b(before);
    Location loc = sourceLocation(b.getContext(), ops);
    auto slotsType = MemRefType::get({(int64_t)readBack.size()}, b.getI64Type());
    Value slots;
    if (!readBack.empty())
      slots = memref::AllocOp::create(b, loc, slotsType);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    for (Operation *op : ops) {
      op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    }
    for (auto [i, v] : llvm::enumerate(readBack))
      memref::StoreOp::create(b, loc, toSlot(b, loc, v), slots, ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    gpu::TerminatorOp::create(b, loc);
    if (escaping.empty())
      return success();

    b.setInsertionPoint(before);
    IRMapping host;
    if (!readBack.empty()) {
      FailureOr<Value> ctx = context(launch);
      if (failed(ctx))
        return failure();
      Value buffer = hostBuffer(main, loc, slotsType);
      emitDeviceRead(b, loc, *ctx, buffer, slots, arith::ConstantIndexOp::create(b, loc, 8 * readBack.size()));
      memref::DeallocOp::create(b, loc, slots);
      for (auto [i, v] : llvm::enumerate(readBack)) {
        Value slot = memref::LoadOp::create(b, loc, buffer, ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
        host.map(v, fromSlot(b, loc, slot, v.getType()));
      }
    }
    for (Operation *op : ops)
      if (recompute.contains(op))
        b.clone(*op, host);
    for (Value v : escaping)
      v.replaceUsesWithIf(host.lookup(v), [&](OpOperand &use) { return !launch->isAncestor(use.getOwner()); });
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
