// Sets flush-to-zero and denormals-are-zero for the duration of each kernel and of the entry.
//
// A denormal f32 operand or result costs a microcode assist per vector operation on Intel cores
// (AMD's Zen cores handle them at full speed), so a layer whose activations drift below 1.2e-38
// (squeeze-and-excitation scales of a sigmoid near zero) runs at half speed there. MXCSR is per
// thread: the mode is set where kiln's code starts running on a thread (the entry on the caller,
// each kernel call on the runtime's workers) and the saved value put back before every return.
#include "passes/cpu/Passes.h"
#include "passes/host/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_FLUSHDENORMALSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int32_t kFlushToZero = 1 << 15;
constexpr int32_t kDenormalsAreZero = 1 << 6;

struct FlushDenormalsPass : impl::FlushDenormalsPassBase<FlushDenormalsPass> {
  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      bool kernel = func->hasAttr(abi::kKernelId);
      bool entry = func.getLinkage() == LLVM::Linkage::External;
      if (!func.isExternal() && (kernel || entry))
        wrap(func);
    });
  }

  /// saved = MXCSR; MXCSR = saved | FTZ | DAZ; ... ; MXCSR = saved before each return.
  void wrap(LLVM::LLVMFuncOp func) {
    MLIRContext *ctx = &getContext();
    Location loc = func.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
    Value saved = LLVM::AllocaOp::create(b, loc, ptr, i32, one);
    Value flushed = LLVM::AllocaOp::create(b, loc, ptr, i32, one);
    auto intrinsic = [&](OpBuilder &at, StringRef name, Value slot) {
      LLVM::CallIntrinsicOp::create(at, loc, at.getStringAttr(name), ValueRange{slot});
    };
    intrinsic(b, "llvm.x86.sse.stmxcsr", saved);
    Value mode = LLVM::LoadOp::create(b, loc, i32, saved);
    Value bits = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(kFlushToZero | kDenormalsAreZero));
    LLVM::StoreOp::create(b, loc, LLVM::OrOp::create(b, loc, mode, bits), flushed);
    intrinsic(b, "llvm.x86.sse.ldmxcsr", flushed);
    func.walk([&](LLVM::ReturnOp ret) {
      OpBuilder rb(ret);
      intrinsic(rb, "llvm.x86.sse.ldmxcsr", saved);
    });
  }
};
} // namespace
} // namespace kiln
