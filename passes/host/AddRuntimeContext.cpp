// Adds the runtime context argument to @main and records the ABI (ranks, element sizes).
#include "passes/host/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_ADDRUNTIMECONTEXTPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct AddRuntimeContextPass : impl::AddRuntimeContextPassBase<AddRuntimeContextPass> {
  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    OpBuilder b(&getContext());
    SmallVector<int64_t> argRanks, resultRanks, elemBytes;
    for (Type t : func.getArgumentTypes()) {
      auto mt = dyn_cast<MemRefType>(t);
      if (!mt) {
        func.emitError("@main arguments must be memrefs after bufferization");
        return signalPassFailure();
      }
      argRanks.push_back(mt.getRank());
    }
    for (Type t : func.getResultTypes()) {
      auto mt = dyn_cast<MemRefType>(t);
      if (!mt) {
        func.emitError("@main results must be memrefs after bufferization");
        return signalPassFailure();
      }
      resultRanks.push_back(mt.getRank());
      elemBytes.push_back((mt.getElementTypeBitWidth() + 7) / 8);
    }
    auto ctxType = LLVM::LLVMPointerType::get(&getContext());
    if (failed(func.insertArgument(0, ctxType,
                                   b.getDictionaryAttr({b.getNamedAttr(abi::kContextArg, b.getUnitAttr())}),
                                   func.getLoc())))
      return signalPassFailure();
    func->setAttr(abi::kArgRanks, b.getDenseI64ArrayAttr(argRanks));
    func->setAttr(abi::kResultRanks, b.getDenseI64ArrayAttr(resultRanks));
    func->setAttr(abi::kResultElemBytes, b.getDenseI64ArrayAttr(elemBytes));
  }
};
} // namespace
} // namespace kiln
