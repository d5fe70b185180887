// Guards @main's heap allocations: when malloc fails, tell the runtime (ctx->allocation_failed) and return at once.
//
// Outputs and intermediates whose size depends on the data are heap
// allocations in @main; a request with huge sizes (a ConstantOfShape of
// [2^52]) makes malloc return NULL, and writing through it would kill the
// process. After each allocation in @main's own blocks, a NULL result
// branches to a block that reports the size to the runtime and returns empty
// views, as kiln-lower-workspace does when the arena is refused: the runtime
// then reports out of memory without reading the outputs. Allocations nested
// in loops (inside scf regions) cannot branch out and stay unguarded.
#include "passes/host/Passes.h"
#include "passes/host/RuntimeContext.h"



#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_CHECKHEAPALLOCATIONSPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct CheckHeapAllocationsPass : impl::CheckHeapAllocationsPassBase<CheckHeapAllocationsPass> {
  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    SmallVector<memref::AllocOp> allocs;
    for (Block &block : func.getBody())
      for (auto alloc : block.getOps<memref::AllocOp>())
        allocs.push_back(alloc);
    if (allocs.empty())
      return;
    if (func.getNumArguments() == 0 || !func.getArgAttr(0, abi::kContextArg)) {
      allocs[0].emitError("expected @main's runtime context (kiln-add-runtime-context)");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Value context = func.getArgument(0);
    for (memref::AllocOp alloc : allocs) {
      Location loc = alloc.getLoc();
      OpBuilder b(ctx);
      b.setInsertionPointAfter(alloc);
      auto type = alloc.getType();
      // Bytes asked for: the element size times every dim (index is 64-bit
      // on x86-64; other element kinds are not allocated in @main).
      Type et = type.getElementType();
      unsigned bits = et.isIndex() ? 64 : et.isIntOrFloat() ? et.getIntOrFloatBitWidth() : 0;
      if (bits == 0)
        continue;
      int64_t elementBytes = (bits + 7) / 8;
      Value bytes = arith::ConstantIndexOp::create(b, loc, elementBytes);
      unsigned dynamic = 0;
      for (int64_t d : type.getShape()) {
        Value size = d == ShapedType::kDynamic ? alloc.getDynamicSizes()[dynamic++]
                                               : (Value)arith::ConstantIndexOp::create(b, loc, d);
        bytes = arith::MulIOp::create(b, loc, bytes, size);
      }
      Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, alloc);
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value failed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, address, zero);
      Block *here = alloc->getBlock();
      Block *rest = here->splitBlock(failed.getDefiningOp()->getNextNode());
      Block *report = b.createBlock(rest);
      // ctx->allocation_failed(ctx->runtime, bytes), then empty results.
      Value runtime = contextField(b, loc, context, ctxfield::kRuntime),
            fn = contextField(b, loc, context, ctxfield::kAllocationFailed);
      Value bytes64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), bytes);
      auto fnType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, b.getI64Type()});
      LLVM::CallOp::create(b, loc, fnType, ValueRange{fn, runtime, bytes64});
      returnEmptyResults(b, loc, func, memref::AllocaOp::create(b, loc, MemRefType::get({0}, b.getI8Type())));
      b.setInsertionPointToEnd(here);
      cf::CondBranchOp::create(b, loc, failed, report, rest);
    }
  }
};

} // namespace
} // namespace kiln
