// Points @main's malloc/aligned_alloc/free calls at the runtime's device allocator.
#include "passes/cuda/Passes.h"
#include "passes/host/RuntimeContext.h"
#include "passes/cuda/DeviceTransfers.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERDEVICEHEAPPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct LowerDeviceHeapPass : impl::LowerDeviceHeapPassBase<LowerDeviceHeapPass> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<LLVM::LLVMFuncOp>("main");
    if (!main || main.isExternal())
      return;
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    SmallVector<LLVM::CallOp> calls;
    main.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (callee && (*callee == "malloc" || *callee == "aligned_alloc" || *callee == "free") &&
          !call->hasAttr(cuda::kHostHeapAttr))
        calls.push_back(call);
    });
    Value context = main.getArgument(0);
    for (LLVM::CallOp call : calls) {
      OpBuilder b(call);
      Location loc = call.getLoc();
      StringRef callee = *call.getCallee();
      Value runtime = contextField(b, loc, context, ctxfield::kRuntime);
      if (callee == "free") {
        Value fn = contextField(b, loc, context, ctxfield::kDeviceFree);
        auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr});
        LLVM::CallOp::create(b, loc, type, ValueRange{fn, runtime, call.getOperand(0)});
      } else {
        // aligned_alloc(alignment, bytes): device allocations are 256-byte aligned already.
        Value bytes = call.getOperand(callee == "malloc" ? 0 : 1);
        if (bytes.getType() != i64)
          bytes = LLVM::ZExtOp::create(b, loc, i64, bytes);
        Value fn = contextField(b, loc, context, ctxfield::kDeviceAlloc);
        auto type = LLVM::LLVMFunctionType::get(ptr, {ptr, i64});
        auto alloc = LLVM::CallOp::create(b, loc, type, ValueRange{fn, runtime, bytes});
        call.getResult().replaceAllUsesWith(alloc.getResult());
      }
      call.erase();
    }
  }
};

} // namespace
} // namespace kiln
