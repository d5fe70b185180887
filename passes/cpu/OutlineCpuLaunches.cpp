// Moves each kiln_cpu.launch body into a kernel function and calls it through ctx->parallel_for.
#include "passes/cpu/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_OUTLINECPULAUNCHESPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Values cheaper to rematerialize in the kernel than to pass: constants
/// keep loop bounds static there, which the vectorizer needs.
bool isRematerializable(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         (def->hasTrait<OpTrait::ConstantLike>() ||
          isa<LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp, LLVM::AddressOfOp>(def));
}

struct OutlineCpuLaunchesPass : impl::OutlineCpuLaunchesPassBase<OutlineCpuLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cpu::LaunchOp> launches;
    module.walk([&](cpu::LaunchOp op) { launches.push_back(op); });
    for (cpu::LaunchOp op : launches)
      if (failed(outline(op)))
        return signalPassFailure();
  }

  LogicalResult outline(cpu::LaunchOp op) {
    MLIRContext *ctx = &getContext();
    Location loc = op.getLoc();
    auto parent = op->getParentOfType<LLVM::LLVMFuncOp>();
    if (!parent)
      return op.emitError("launch must be inside an llvm.func");
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64), i32 = IntegerType::get(ctx, 32);

    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(op.getBody(), used);
    SmallVector<Value> captures, remat;
    for (Value v : used)
      (isRematerializable(v) ? remat : captures).push_back(v);
    SmallVector<Type> captureTypes;
    for (Value v : captures)
      captureTypes.push_back(v.getType());
    auto structType = LLVM::LLVMStructType::getLiteral(ctx, captureTypes);

    // The kernel: void(ptr captures, i64 begin, i64 end).
    OpBuilder mb = OpBuilder::atBlockEnd(getOperation().getBody());
    int32_t id = op.getKernelId();
    std::string name = (parent.getName() + "_kernel_" + Twine(id)).str();
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    auto kernelType = LLVM::LLVMFunctionType::get(voidType, {ptrType, i64, i64});
    auto kernel = LLVM::LLVMFuncOp::create(mb, loc, name, kernelType, LLVM::Linkage::Internal);
    kernel->setAttr(abi::kKernelId, mb.getI32IntegerAttr(id));
    if (auto names = op->getAttr(abi::kSourceNodes))
      kernel->setAttr(abi::kSourceNodes, names);

    Block *entry = kernel.addEntryBlock(mb);
    Block *header = new Block(), *exit = new Block();
    kernel.getBody().push_back(header);
    kernel.getBody().push_back(exit);
    Value iv = header->addArgument(i64, loc);

    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    for (Value v : remat)
      mapping.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    for (auto [i, v] : llvm::enumerate(captures)) {
      Value field = LLVM::GEPOp::create(b, loc, ptrType, structType, entry->getArgument(0),
                                        ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
      mapping.map(v, LLVM::LoadOp::create(b, loc, v.getType(), field));
    }
    LLVM::BrOp::create(b, loc, ValueRange{entry->getArgument(1)}, header);

    Region &body = op.getBody();
    Block *bodyEntry = &body.front();
    size_t before = kernel.getBody().getBlocks().size();
    body.cloneInto(&kernel.getBody(), mapping);
    Block *clonedEntry = mapping.lookup(bodyEntry);
    (void)before;

    b.setInsertionPointToEnd(header);
    Value more = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, iv, entry->getArgument(2));
    LLVM::CondBrOp::create(b, loc, more, clonedEntry, ValueRange{iv}, exit, ValueRange{});
    b.setInsertionPointToEnd(exit);
    LLVM::ReturnOp::create(b, loc, ValueRange{});

    SmallVector<cpu::YieldOp> yields;
    kernel.walk([&](cpu::YieldOp y) { yields.push_back(y); });
    for (cpu::YieldOp y : yields) {
      OpBuilder yb(y);
      Value one = LLVM::ConstantOp::create(yb, loc, i64, yb.getI64IntegerAttr(1));
      Value next = LLVM::AddOp::create(yb, loc, clonedEntry->getArgument(0), one);
      LLVM::BrOp::create(yb, loc, ValueRange{next}, header);
      y.erase();
    }

    // The launch site: captures into a stack struct (allocated once, in the
    // entry block, so launches inside loops do not grow the stack).
    OpBuilder eb = OpBuilder::atBlockBegin(&parent.getBody().front());
    Value one = LLVM::ConstantOp::create(eb, loc, i64, eb.getI64IntegerAttr(1));
    Value storage = LLVM::AllocaOp::create(eb, loc, ptrType, structType, one);
    OpBuilder sb(op);
    for (auto [i, v] : llvm::enumerate(captures)) {
      Value field = LLVM::GEPOp::create(sb, loc, ptrType, structType, storage,
                                        ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
      LLVM::StoreOp::create(sb, loc, v, field);
    }
    auto ctxStruct = LLVM::LLVMStructType::getLiteral(ctx, {ptrType, ptrType});
    Value rtField = LLVM::GEPOp::create(sb, loc, ptrType, ctxStruct, op.getContext(),
                                        ArrayRef<LLVM::GEPArg>{0, 0});
    Value runtime = LLVM::LoadOp::create(sb, loc, ptrType, rtField);
    Value pfField = LLVM::GEPOp::create(sb, loc, ptrType, ctxStruct, op.getContext(),
                                        ArrayRef<LLVM::GEPArg>{0, 1});
    Value parallelFor = LLVM::LoadOp::create(sb, loc, ptrType, pfField);
    Value kernelId = LLVM::ConstantOp::create(sb, loc, i32, sb.getI32IntegerAttr(id));
    Value kernelAddr = LLVM::AddressOfOp::create(sb, loc, ptrType, name);
    auto pfType = LLVM::LLVMFunctionType::get(voidType, {ptrType, i32, ptrType, ptrType, i64, i64, i64});
    LLVM::CallOp::create(sb, loc, pfType,
                         ValueRange{parallelFor, runtime, kernelId, kernelAddr, storage, op.getCount(),
                                    op.getFlops(), op.getBytes()});
    op.erase();
    return success();
  }
};
} // namespace
} // namespace kiln
