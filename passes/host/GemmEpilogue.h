// A matrix product and the elementwise op after it that --target=cuda computes in one library call.
//
// kiln-mark-gemm-epilogues (on tensors) marks an elementwise op with kiln.gemm_epilogue = the index
// of its input that is a product's result read by nothing else. After bufferization
// kiln-call-device-gemm folds the op (bias, residual, ReLU) into the product's cuBLASLt call, which
// reads the product's operands while it writes the op's output. kiln-plan-memory therefore keeps
// those operands live until the op: a product's operands die at the product otherwise, and the
// plan would be free to give their bytes to the op's output.
#ifndef KILN_PASSES_HOST_GEMMEPILOGUE_H
#define KILN_PASSES_HOST_GEMMEPILOGUE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {

constexpr const char *kGemmEpilogueAttr = "kiln.gemm_epilogue";

/// A contraction that may be one library product: two inputs, one output, one reduction loop.
inline bool isProductCandidate(mlir::linalg::GenericOp g) {
  return g.getNumDpsInputs() == 2 && g.getNumDpsInits() == 1 && g.getNumReductionLoops() == 1;
}

/// On tensors: the input of elementwise op `e` that is a product candidate's result read by nothing
/// else (what kiln-mark-gemm-epilogues marks), or null.
inline mlir::OpOperand *productInputOfEpilogue(mlir::linalg::GenericOp e) {
  using namespace mlir;
  if (!e.hasPureTensorSemantics() || e.getNumDpsInits() != 1 || e.getNumReductionLoops() != 0)
    return nullptr;
  for (OpOperand *in : e.getDpsInputOperands()) {
    Value v = in->get();
    auto g = v.getDefiningOp<linalg::GenericOp>();
    if (g && isProductCandidate(g) && v.hasOneUse())
      return in;
  }
  return nullptr;
}

/// An op without regions that neither reads nor writes memory (index math, views, allocations).
inline bool touchesNoMemory(mlir::Operation *op) {
  using namespace mlir;
  if (op->getNumRegions() != 0)
    return false;
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects && !effects.hasEffect<MemoryEffects::Read>() && !effects.hasEffect<MemoryEffects::Write>() &&
         !effects.hasEffect<MemoryEffects::Free>();
}

/// On buffers: the marked epilogue op of product `g`, the next op that touches memory, when its
/// marked input is g's output; else null.
inline mlir::linalg::GenericOp markedEpilogueOf(mlir::linalg::GenericOp g) {
  using namespace mlir;
  if (!g.hasPureBufferSemantics() || !isProductCandidate(g))
    return {};
  Operation *next = g->getNextNode();
  while (next && touchesNoMemory(next))
    next = next->getNextNode();
  auto e = dyn_cast_or_null<linalg::GenericOp>(next);
  auto mark = e ? e->getAttrOfType<IntegerAttr>(kGemmEpilogueAttr) : IntegerAttr();
  if (!mark || mark.getInt() < 0 || mark.getInt() >= e.getNumDpsInputs() ||
      e.getDpsInputOperand(unsigned(mark.getInt()))->get() != g.getDpsInitOperand(0)->get())
    return {};
  return e;
}

} // namespace kiln

#endif
