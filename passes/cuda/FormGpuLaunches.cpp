// Turns @main's parallel loops into grid launches and its other buffer accesses into one-thread launches.
//
// On the GPU every buffer (inputs, weights, the arena, outputs) is device
// memory; the host program keeps shape and offset arithmetic, allocations and
// control flow, and launches a kernel for everything that touches elements.
// Values the host needs from tensor data (data-dependent sizes, shape inputs)
// are written by the kernel to a small device buffer and read back with the
// context's device_read, which waits for the launches before it.
#include "passes/cuda/Passes.h"
#include "passes/host/Passes.h"
#include "passes/host/RuntimeContext.h"
#include "passes/cuda/DeviceTransfers.h"
#include "passes/cuda/LaunchUtils.h"
#include "passes/host/SourceNodes.h"
#include "dialects/cpu/IR/Cpu.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
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

/// Whether `op` or an op nested in it works on strings (kiln_cpu.string_*).
bool usesStrings(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (inner->getName().getStringRef().starts_with("kiln_cpu.string_")) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// The value `load` reads when the ops of its group before it stored it: a memref.store to the
/// same buffer at the same constant indices, with no other write in between (stores to other
/// constant indices of that buffer aside). Null otherwise. Forwarding it spares the host a read
/// of the device (a shape built in a buffer, then read back for a reshape's sizes).
Value storedBefore(memref::LoadOp load, ArrayRef<Operation *> ops) {
  auto constants = [](ValueRange indices) {
    SmallVector<int64_t> out;
    for (Value i : indices) {
      std::optional<int64_t> c = getConstantIntValue(i);
      if (!c)
        return std::optional<SmallVector<int64_t>>();
      out.push_back(*c);
    }
    return std::optional<SmallVector<int64_t>>(out);
  };
  std::optional<SmallVector<int64_t>> at = constants(load.getIndices());
  auto it = llvm::find(ops, load.getOperation());
  if (!at || it == ops.end())
    return {};
  while (it != ops.begin()) {
    Operation *op = *--it;
    if (auto store = dyn_cast<memref::StoreOp>(op); store && store.getMemRef() == load.getMemRef()) {
      std::optional<SmallVector<int64_t>> where = constants(store.getIndices());
      if (!where)
        return {};
      if (*where == *at)
        return store.getValueToStore();
      continue;
    }
    if (!isMemoryEffectFree(op)) {
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (!effects || effects.hasEffect<MemoryEffects::Write>() || op->getNumRegions() != 0)
        return {};
    }
  }
  return {};
}

/// Whether an op inside `op` may write `buffer` or a view of it (unknown users count as writes).
bool writes(Operation *op, Value buffer) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (!op->isAncestor(user))
      continue;
    if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
      if (view.getViewSource() == buffer && llvm::any_of(user->getResults(), [&](Value r) { return writes(op, r); }))
        return true;
      continue;
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(user);
    if (!effects || effects.getEffectOnValue<MemoryEffects::Write>(buffer))
      return true;
  }
  return false;
}

/// Whether the host can compute `v` without reading a buffer's elements: constants, @main's
/// arguments, buffers (their descriptors are host values), and pure ops of such values (sizes,
/// index arithmetic).
bool hostComputable(Value v, llvm::DenseMap<Value, bool> &known) {
  if (auto it = known.find(v); it != known.end())
    return it->second;
  bool result = false;
  if (isa<MemRefType>(v.getType())) {
    result = true;
  } else if (isa<BlockArgument>(v)) {
    result = isa<func::FuncOp>(v.getParentRegion()->getParentOp());
  } else {
    Operation *def = v.getDefiningOp();
    known[v] = false; // no cycles in SSA, but keep the recursion finite on any input
    result = def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
             llvm::all_of(def->getOperands(), [&](Value o) { return hostComputable(o, known); });
  }
  return known[v] = result;
}

/// A buffer seen through static subviews and casts: the buffer below them, and the static
/// strides and offset of `memref` counted from that buffer's base pointer (a subview keeps the
/// pointer and counts its offset from it).
struct StaticView {
  Value base;
  SmallVector<int64_t> strides;
  int64_t offset;
};
std::optional<StaticView> staticView(Value memref) {
  auto staticLayout = [](Value m, SmallVectorImpl<int64_t> &strides, int64_t &offset) {
    return succeeded(cast<MemRefType>(m.getType()).getStridesAndOffset(strides, offset)) &&
           !ShapedType::isDynamic(offset) && !llvm::any_of(strides, ShapedType::isDynamic);
  };
  StaticView view;
  if (!staticLayout(memref, view.strides, view.offset))
    return std::nullopt;
  view.base = memref;
  while (isa_and_nonnull<memref::SubViewOp, memref::CastOp>(view.base.getDefiningOp()))
    view.base = view.base.getDefiningOp()->getOperand(0);
  SmallVector<int64_t> baseStrides;
  int64_t baseOffset;
  if (!staticLayout(view.base, baseStrides, baseOffset))
    return std::nullopt;
  return view;
}

/// The element an access at constant indices touches: the buffer below the subviews and the
/// element's offset from its base pointer.
std::optional<std::pair<Value, int64_t>> accessedElement(Value memref, ValueRange indices) {
  std::optional<StaticView> view = staticView(memref);
  if (!view)
    return std::nullopt;
  int64_t at = view->offset;
  for (auto [index, stride] : llvm::zip(indices, view->strides)) {
    std::optional<int64_t> c = getConstantIntValue(index);
    if (!c)
      return std::nullopt;
    at += *c * stride;
  }
  return std::make_pair(view->base, at);
}

/// Whether no element of `memref`, a static subview of `base`, is element `element` of `base`:
/// the element lies before its first or after its last (positive strides).
bool missesElement(Value memref, Value base, int64_t element) {
  std::optional<StaticView> view = staticView(memref);
  auto type = cast<MemRefType>(memref.getType());
  if (!view || view->base != base || !type.hasStaticShape() || type.getNumElements() == 0 ||
      llvm::any_of(view->strides, [](int64_t s) { return s <= 0; }))
    return false;
  int64_t last = view->offset;
  for (auto [size, stride] : llvm::zip(type.getShape(), view->strides))
    last += (size - 1) * stride;
  return element < view->offset || element > last;
}

using cuda::rootBuffer;

/// The byte range [first, end) of a `memref.view` at a constant shift with a static shape.
std::optional<std::pair<int64_t, int64_t>> viewBytes(Value v) {
  auto view = v.getDefiningOp<memref::ViewOp>();
  if (!view || !view.getSizes().empty())
    return std::nullopt;
  std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
  auto type = view.getType();
  if (!shift || !type.hasStaticShape() || !type.getLayout().isIdentity())
    return std::nullopt;
  return std::make_pair(*shift, *shift + type.getNumElements() * int64_t(cuda::elementBytes(type.getElementType())));
}

/// Whether buffers `a` and `b` share no byte: two static views at constant shifts into the same
/// buffer (the memory plan's arena) whose ranges do not meet.
bool disjoint(Value a, Value b) {
  auto x = viewBytes(a), y = viewBytes(b);
  return x && y && a.getDefiningOp<memref::ViewOp>().getSource() == b.getDefiningOp<memref::ViewOp>().getSource() &&
         (x->second <= y->first || y->second <= x->first);
}

/// Replaces the block's loads, at constant indices, of a constant global's elements by the
/// constants: the compiler knows them, and a load would be a kernel whose value the host reads back.
void foldConstantGlobalLoads(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto load = dyn_cast<memref::LoadOp>(op);
    auto get = load ? load.getMemRef().getDefiningOp<memref::GetGlobalOp>() : nullptr;
    auto global = get ? SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(get, get.getNameAttr()) : nullptr;
    auto values = global && global.getConstant() ? dyn_cast_or_null<DenseElementsAttr>(global.getConstantInitValue())
                                                 : DenseElementsAttr();
    if (!values || !get.getType().hasStaticShape())
      continue;
    int64_t linear = 0;
    bool known = true;
    for (auto [index, size] : llvm::zip(load.getIndices(), get.getType().getShape())) {
      std::optional<int64_t> c = getConstantIntValue(index);
      known &= c && *c >= 0 && *c < size;
      linear = linear * size + (c ? *c : 0);
    }
    auto element = known ? dyn_cast<TypedAttr>(values.getValues<Attribute>()[linear]) : TypedAttr();
    if (!element || element.getType() != load.getType())
      continue;
    OpBuilder b(load);
    load.replaceAllUsesWith(arith::ConstantOp::create(b, load.getLoc(), element).getResult());
    load.erase();
  }
}

/// Replaces each load, at constant indices, of what the same block stored there before from
/// a host value (a size written into a buffer, then read for a reshape or a loop bound), with
/// no write that may reach it in between, by that value. Without this the host would read the
/// value back from the device, waiting for the GPU, when it computed it itself. Writes are
/// found through the SSA uses of the buffer the load reads from (an allocation, or the arena)
/// and of all views of it; a write to a view whose bytes provably do not meet the load's
/// (another scalar of the arena) or to a static piece that does not cover the element does not
/// count. Each step back looks only at the ops in it, so the search costs the ops between.
void forwardHostStores(Block &block) {
  llvm::DenseMap<Value, bool> known;
  // Each buffer's views (transitively), the buffer included, found once.
  llvm::DenseMap<Value, llvm::SmallPtrSet<Value, 16>> aliasesOf;
  auto aliases = [&](Value buffer) -> const llvm::SmallPtrSet<Value, 16> & {
    auto [it, fresh] = aliasesOf.try_emplace(buffer);
    if (fresh) {
      SmallVector<Value> work = {buffer};
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (!it->second.insert(v).second)
          continue;
        for (Operation *user : v.getUsers())
          if (auto view = dyn_cast<ViewLikeOpInterface>(user); view && view.getViewSource() == v)
            llvm::append_range(work, user->getResults());
      }
    }
    return it->second;
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load)
      continue;
    Value root = rootBuffer(load.getMemRef());
    Operation *rootDef = root.getDefiningOp();
    if (!rootDef || !isa<memref::AllocOp, cpu::WorkspaceOp>(rootDef) || rootDef->getBlock() != &block)
      continue;
    std::optional<std::pair<Value, int64_t>> at = accessedElement(load.getMemRef(), load.getIndices());
    if (!at)
      continue;
    const llvm::SmallPtrSet<Value, 16> &views = aliases(root);
    // Whether an op in `before` may write the element: a call, an op that takes a view's address
    // out of the memref world (a pointer a runtime call writes through later), or a write to a
    // view (unknown effects count as writes) that is not a static piece without the element.
    auto mayWrite = [&](Operation *before) {
      return before
          ->walk([&](Operation *inner) {
            if (isa<CallOpInterface>(inner))
              return WalkResult::interrupt();
            for (Value operand : inner->getOperands()) {
              if (!views.contains(operand))
                continue;
              if (isa<memref::ExtractAlignedPointerAsIndexOp, memref::ExtractStridedMetadataOp>(inner))
                return WalkResult::interrupt();
              if (auto view = dyn_cast<ViewLikeOpInterface>(inner); view && view.getViewSource() == operand)
                continue; // its result is a view of its own
              auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
              if ((!effects || effects.getEffectOnValue<MemoryEffects::Write>(operand)) &&
                  !missesElement(operand, at->first, at->second))
                return WalkResult::interrupt();
            }
            return WalkResult::advance();
          })
          .wasInterrupted();
    };
    for (Operation *before = load->getPrevNode(); before && before != rootDef; before = before->getPrevNode()) {
      auto store = dyn_cast<memref::StoreOp>(before);
      std::optional<std::pair<Value, int64_t>> where =
          store ? accessedElement(store.getMemRef(), store.getIndices()) : std::nullopt;
      if (where && where->first == at->first) {
        if (where->second != at->second)
          continue; // another element of the same buffer (a shape built from pieces)
        if (hostComputable(store.getValueToStore(), known)) {
          load.replaceAllUsesWith(store.getValueToStore());
          load.erase();
        }
        break;
      }
      if (where && disjoint(where->first, at->first))
        continue;
      if (mayWrite(before))
        break;
    }
  }
}

struct FormGpuLaunchesPass : impl::FormGpuLaunchesPassBase<FormGpuLaunchesPass> {
  func::FuncOp main;

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    main = func;
    for (Block &block : func.getBody())
      if (failed(processBlock(block)))
        return signalPassFailure();
    // Constant globals are read inside the kernels: outlining then copies them into the GPU
    // module (device memory); a host address would not be readable there. A launch may capture
    // the global itself or a view of it (a reshape of a bias, a slice of a table): the whole
    // chain is cloned in, so the kernel's views are of its own copy. What the views need besides
    // (dynamic sizes and offsets) stays captured as scalars.
    WalkResult escaped = func.walk([&](gpu::LaunchOp launch) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(launch.getBody(), captured);
      OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
      for (Value v : captured)
        if (cuda::isHostGlobal(v))
          replaceAllUsesInRegionWith(v, cloneViewChain(b, v), launch.getBody());
      // No buffer of the host program's constants may remain a kernel argument.
      captured.clear();
      getUsedValuesDefinedAbove(launch.getBody(), captured);
      for (Value v : captured)
        if (cuda::isHostGlobal(v)) {
          launch.emitError("internal: a launch still takes a host constant's address");
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (escaped.wasInterrupted())
      signalPassFailure();
  }

  /// A copy, at `b`, of `v` and the chain of views from its memref.get_global down to it.
  static Value cloneViewChain(OpBuilder &b, Value v) {
    auto view = v.getDefiningOp<ViewLikeOpInterface>();
    if (!view)
      return b.clone(*v.getDefiningOp())->getResult(0);
    Value source = cloneViewChain(b, view.getViewSource());
    IRMapping map;
    map.map(view.getViewSource(), source);
    return b.clone(*view.getOperation(), map)->getResult(cast<OpResult>(v).getResultNumber());
  }

  /// Forms the launches of one host block, recursing into host control flow.
  LogicalResult processBlock(Block &block) {
    foldConstantGlobalLoads(block);
    forwardHostStores(block);
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
      // Strings are host memory: ops on them run on the host, on copies of their buffers.
      if (usesStrings(&op)) {
        if (failed(flush(&op)) || failed(runOnHost(&op)))
          return failure();
        continue;
      }
      // A launch formed before (kiln-form-block-reductions) is left as it is.
      if (isa<gpu::LaunchOp>(op)) {
        if (failed(flush(&op)))
          return failure();
        continue;
      }
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
      bool hostNest = op.getNumRegions() != 0 && cuda::containsKernels(&op) && !cuda::accessesMemoryOutsideKernels(&op);
      bool joins = !hostNest && (usesGroup || (op.getNumRegions() == 0 ? cuda::accessesMemory(&op)
                                                                       : cuda::accessesMemoryOutsideKernels(&op)));
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

  /// Runs `op` on the host: the buffers it uses are copied to host mirrors before it and the
  /// ones it writes are copied back after it. When a mirror cannot be allocated the op is skipped
  /// (its results are zeros) and the runtime is told, so the run fails with out of memory.
  LogicalResult runOnHost(Operation *op) {
    llvm::SetVector<Value> used;
    for (Value v : op->getOperands())
      used.insert(v);
    for (Region &region : op->getRegions())
      getUsedValuesDefinedAbove(region, used);
    SmallVector<Value> buffers;
    for (Value v : used)
      if (isa<MemRefType>(v.getType()) && !v.getDefiningOp<memref::GetGlobalOp>()) // globals are host memory
        buffers.push_back(v);
    if (buffers.empty())
      return success();
    WalkResult nested = op->walk([&](Operation *inner) {
      if (isa<memref::AllocOp, memref::AllocaOp>(inner)) {
        inner->emitError("a buffer allocated inside an op that runs on the host for its strings, "
                         "which --target=cuda does not support yet");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return failure();
    for (Type t : op->getResultTypes())
      if (!cuda::fitsSlot(t) && !t.isInteger(128))
        return op->emitError("an op on strings with a result of type ") << t << ", which --target=cuda cannot run on the host";
    FailureOr<Value> ctx = context(op);
    if (failed(ctx))
      return failure();
    ModuleOp module = getOperation();
    OpBuilder b(op);
    Location loc = op->getLoc();
    SmallVector<cuda::HostMirror> mirrors;
    Value allocated = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
    for (Value buffer : buffers) {
      mirrors.push_back(cuda::allocateMirror(b, loc, module, buffer));
      Value null = LLVM::ZeroOp::create(b, loc, ptrType);
      Value ok = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, mirrors.back().host, null);
      allocated = arith::AndIOp::create(b, loc, allocated, ok);
    }
    auto guard = scf::IfOp::create(b, loc, op->getResultTypes(), allocated, /*withElseRegion=*/true);
    for (Block *block : {guard.thenBlock(), guard.elseBlock()})
      if (!block->empty())
        block->getTerminator()->erase(); // the builder's yield of a result-less if; ours follow
    // Copies in, the op, copies back.
    b.setInsertionPointToStart(guard.thenBlock());
    for (const cuda::HostMirror &m : mirrors)
      cuda::emitDeviceRead(b, loc, *ctx, m.host, m.device, m.bytes);
    op->moveBefore(guard.thenBlock(), guard.thenBlock()->end());
    for (auto [buffer, m] : llvm::zip(buffers, mirrors)) {
      replaceAllUsesInRegionWith(buffer, m.view, guard.getThenRegion());
      if (writes(op, m.view))
        cuda::emitDeviceWrite(b, loc, *ctx, m.device, m.host, m.bytes);
    }
    scf::YieldOp::create(b, loc, op->getResults());
    // Out of host memory: tell the runtime, skip the op.
    b.setInsertionPointToStart(guard.elseBlock());
    Value runtime = contextField(b, loc, *ctx, ctxfield::kRuntime);
    Value report = contextField(b, loc, *ctx, ctxfield::kAllocationFailed);
    Value total = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    for (const cuda::HostMirror &m : mirrors)
      total = arith::AddIOp::create(b, loc, total, arith::IndexCastUIOp::create(b, loc, b.getI64Type(), m.bytes));
    auto reportType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()), {ptrType, b.getI64Type()});
    LLVM::CallOp::create(b, loc, reportType, ValueRange{report, runtime, total});
    SmallVector<Value> zeros;
    for (Type t : op->getResultTypes())
      zeros.push_back(arith::ConstantOp::create(b, loc, b.getZeroAttr(t)));
    scf::YieldOp::create(b, loc, zeros);
    for (auto [result, merged] : llvm::zip(op->getResults(), guard.getResults()))
      result.replaceUsesWithIf(merged, [&](OpOperand &use) { return !guard->isAncestor(use.getOwner()); });
    b.setInsertionPointAfter(guard);
    for (const cuda::HostMirror &m : mirrors)
      cuda::freeMirror(b, loc, module, m);
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
    Value host = cuda::entryAlloca(main, loc, MemRefType::get(type.getShape(), type.getElementType()));
    unsigned bytes = cuda::elementBytes(type.getElementType());
    cuda::emitDeviceRead(b, loc, *ctx, cuda::bufferAddress(b, loc, host), cuda::bufferAddress(b, loc, shape),
                         arith::ConstantIndexOp::create(b, loc, bytes * type.getNumElements()));
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
    llvm::DenseMap<Operation *, Value> forwarded; // loads that read what the group stored
    llvm::SetVector<Value> readBack;
    llvm::SetVector<Operation *> inputReads; // scalar loads of inputs, read where they are
    SmallVector<Value> needed(escaping.begin(), escaping.end());
    while (!needed.empty()) {
      Value v = needed.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (auto load = dyn_cast<memref::LoadOp>(def)) {
        if (Value stored = storedBefore(load, ops)) {
          if (forwarded.try_emplace(def, stored).second)
            if (Operation *d = stored.getDefiningOp(); d && members.contains(d))
              needed.push_back(stored);
          continue;
        }
        if (isInputScalar(load)) {
          inputReads.insert(def);
          continue;
        }
      }
      if (def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
        if (recompute.insert(def).second)
          for (Value operand : def->getOperands())
            if (Operation *d = operand.getDefiningOp(); d && members.contains(d))
              needed.push_back(operand);
        continue;
      }
      if (cuda::fitsSlot(v.getType())) {
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
      memref::StoreOp::create(b, loc, cuda::toSlot(b, loc, v), slots, ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    gpu::TerminatorOp::create(b, loc);
    if (escaping.empty())
      return success();

    b.setInsertionPoint(before);
    IRMapping host;
    if (!inputReads.empty()) {
      // Read from the input itself, not through a slot the kernel fills: the runtime serves a
      // read of an input it uploaded from its host copy, without waiting for the GPU.
      FailureOr<Value> ctx = context(launch);
      if (failed(ctx))
        return failure();
      for (Operation *op : inputReads) {
        auto load = cast<memref::LoadOp>(op);
        Type t = load.getType();
        Value buffer = cuda::entryAlloca(main, loc, MemRefType::get({1}, t));
        cuda::emitDeviceRead(b, loc, *ctx, cuda::bufferAddress(b, loc, buffer),
                             cuda::bufferAddress(b, loc, load.getMemRef()),
                             arith::ConstantIndexOp::create(b, loc, cuda::elementBytes(t)));
        host.map(load.getResult(), memref::LoadOp::create(b, loc, buffer, ValueRange{arith::ConstantIndexOp::create(b, loc, 0)})
                                       .getResult());
      }
    }
    if (!readBack.empty()) {
      FailureOr<Value> ctx = context(launch);
      if (failed(ctx))
        return failure();
      Value buffer = cuda::entryAlloca(main, loc, slotsType);
      cuda::emitDeviceRead(b, loc, *ctx, cuda::bufferAddress(b, loc, buffer), cuda::bufferAddress(b, loc, slots),
                           arith::ConstantIndexOp::create(b, loc, 8 * readBack.size()));
      memref::DeallocOp::create(b, loc, slots);
      for (auto [i, v] : llvm::enumerate(readBack)) {
        Value slot = memref::LoadOp::create(b, loc, buffer, ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
        host.map(v, cuda::fromSlot(b, loc, slot, v.getType()));
      }
    }
    for (Operation *op : ops) {
      if (auto it = forwarded.find(op); it != forwarded.end())
        host.map(op->getResult(0), host.lookupOrDefault(it->second));
      else if (recompute.contains(op) && !inputReads.contains(op))
        b.clone(*op, host);
    }
    for (Value v : escaping)
      v.replaceUsesWithIf(host.lookup(v), [&](OpOperand &use) { return !launch->isAncestor(use.getOwner()); });
    return success();
  }

  /// A load of the first element of an input of @main or of a view of it (a scalar such as
  /// kiln.past_length or kiln.logit_rows, maybe reshaped to [1]), which no code writes (KV caches,
  /// written in place, are excluded): its value is read from the input's buffer (the load's
  /// memref, whose first element it is), which the runtime fills from host memory.
  bool isInputScalar(memref::LoadOp load) {
    if (!cuda::fitsSlot(load.getType()) ||
        !llvm::all_of(load.getIndices(), [](Value i) { return isConstantIntValue(getAsOpFoldResult(i), 0); }))
      return false;
    Value source = load.getMemRef();
    while (auto view = source.getDefiningOp<ViewLikeOpInterface>())
      source = view.getViewSource();
    auto arg = dyn_cast<BlockArgument>(source);
    if (!arg || arg.getOwner() != &main.getBody().front())
      return false;
    unsigned i = arg.getArgNumber();
    return main.getArgAttr(i, attrs::kName) && !main.getArgAttr(i, attrs::kKvCache) &&
           !main.getArgAttr(i, attrs::kWeight);
  }

  /// A grid of 256-thread blocks, one thread per iteration of `op`.
  void formGridLaunch(scf::ParallelOp op) {
    OpBuilder b(op);
    Location loc = sourceLocation(b.getContext(), {op.getOperation()});
    int64_t d = op.getNumLoops();
    SmallVector<Value> trips;
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    // Folded as built, so a static iteration space gives a constant total.
    for (int64_t j = 0; j < d; ++j) {
      trips.push_back(cuda::tripCount(b, loc, op.getLowerBound()[j], op.getUpperBound()[j], op.getStep()[j]));
      total = b.createOrFold<arith::MulIOp>(loc, total, trips.back());
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
    mapping.map(src.getArguments(), cuda::delinearize(b, loc, id, op.getLowerBound(), op.getStep(), trips));
    for (Operation &inner : src.without_terminator())
      b.clone(inner, mapping);
    op.erase();
  }
};

} // namespace
} // namespace kiln
