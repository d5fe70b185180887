// Turns the memory plan's kiln_cpu.workspace into a call of the context's workspace function,
// with an early return when the runtime has no memory for it.
#include "passes/host/Passes.h"
#include "passes/host/RuntimeContext.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERWORKSPACEPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct LowerWorkspacePass : impl::LowerWorkspacePassBase<LowerWorkspacePass> {
  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    SmallVector<cpu::WorkspaceOp> workspaces;
    func.walk([&](cpu::WorkspaceOp op) { workspaces.push_back(op); });
    if (workspaces.empty())
      return;
    if (workspaces.size() > 1 || workspaces[0]->getBlock() != &func.getBody().front() ||
        func.getNumArguments() == 0 || !func.getArgAttr(0, abi::kContextArg)) {
      workspaces[0].emitError("expected one kiln_cpu.workspace in the entry block of @main, after "
                              "kiln-add-runtime-context");
      return signalPassFailure();
    }
    cpu::WorkspaceOp ws = workspaces[0];
    MLIRContext *ctx = &getContext();
    Location loc = ws.getLoc();
    OpBuilder b(ws);
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = b.getI64Type();
    Value context = func.getArgument(0);
    Value runtime = contextField(b, loc, context, ctxfield::kRuntime),
          fn = contextField(b, loc, context, ctxfield::kWorkspace);
    Value bytes = arith::IndexCastOp::create(b, loc, i64, ws.getBytes());
    auto fnType = LLVM::LLVMFunctionType::get(ptr, {ptr, i64});
    Value base = LLVM::CallOp::create(b, loc, fnType, ValueRange{fn, runtime, bytes}).getResult();

    // A memref<?xi8> descriptor over it; the LLVM conversion cancels the cast.
    auto arrayType = LLVM::LLVMArrayType::get(i64, 1);
    auto descType = LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, i64, arrayType, arrayType});
    Value desc = LLVM::UndefOp::create(b, loc, descType);
    desc = LLVM::InsertValueOp::create(b, loc, desc, base, ArrayRef<int64_t>{0});
    desc = LLVM::InsertValueOp::create(b, loc, desc, base, ArrayRef<int64_t>{1});
    Value zero = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0));
    Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
    desc = LLVM::InsertValueOp::create(b, loc, desc, zero, ArrayRef<int64_t>{2});
    desc = LLVM::InsertValueOp::create(b, loc, desc, bytes, ArrayRef<int64_t>{3, 0});
    desc = LLVM::InsertValueOp::create(b, loc, desc, one, ArrayRef<int64_t>{4, 0});
    Value arena = UnrealizedConversionCastOp::create(b, loc, ws.getType(), desc).getResult(0);
    ws.replaceAllUsesWith(arena);

    // Out of memory: return empty views at once (the runtime discards them).
    Value null = LLVM::ZeroOp::create(b, loc, ptr);
    Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, base, null);
    Block *entry = ws->getBlock();
    Block *rest = entry->splitBlock(ws->getNextNode());
    ws.erase();
    Block *oom = b.createBlock(rest);
    returnEmptyResults(b, loc, func, arena);
    b.setInsertionPointToEnd(entry);
    cf::CondBranchOp::create(b, loc, failed, oom, rest);
  }
};

} // namespace
} // namespace kiln
