// Marks the elementwise op that is the only use of a matrix product's result
// (kiln-mark-gemm-epilogues).
//
// kiln-call-device-gemm folds such an op (a bias, a residual, ReLU) into the product's library
// call, which never writes the product on its own. That is right only when nothing else reads the
// product, which the tensors say plainly (one use) and the buffers no longer do: the memory plan
// and CSE give one buffer view to many tensors. So the fact is recorded here, before
// bufferization, as `kiln.gemm_epilogue` = the index of the op's input that is the product.
#include "passes/cuda/Passes.h"
#include "passes/host/GemmEpilogue.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln {
#define GEN_PASS_DEF_MARKGEMMEPILOGUESPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct MarkGemmEpiloguesPass : impl::MarkGemmEpiloguesPassBase<MarkGemmEpiloguesPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp e) {
      if (OpOperand *in = productInputOfEpilogue(e))
        e->setAttr(kGemmEpilogueAttr, IntegerAttr::get(IntegerType::get(e.getContext(), 64), in->getOperandNumber()));
    });
  }
};

} // namespace
} // namespace kiln
