// Decoders: compute the output head (logits) for the last position only, which is all generation reads.
#include "passes/graph/Passes.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_LASTPOSITIONLOGITSPASS
#include "passes/graph/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct LastPositionLogitsPass : impl::LastPositionLogitsPassBase<LastPositionLogitsPass> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty())
      return;
    // Only a decoder that got a KV cache is driven by the generator, which
    // reads the last position; a plain forward pass returns every position.
    bool hasCache = false;
    for (unsigned a = 0; a < main.getNumArguments(); ++a)
      hasCache = hasCache || main.getArgAttr(a, attrs::kKvCache);
    if (!hasCache)
      return;
    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      auto name = main.getResultAttrOfType<StringAttr>(r, attrs::kName);
      if (!name || name.getValue() != "logits")
        continue;
      // logits = matmul(hidden [batch, sequence, H], head [H, V]), read by nothing but the return.
      auto mm = ret.getOperand(r).getDefiningOp<graph::MatMulOp>();
      if (!mm || !mm->hasOneUse() || cast<RankedTensorType>(mm.getLhs().getType()).getRank() != 3 ||
          cast<RankedTensorType>(mm.getRhs().getType()).getRank() != 2)
        continue;
      OpBuilder b(mm);
      auto last = graph::SliceOp::create(b, mm.getLoc(), mm.getLhs(), b.getDenseI64ArrayAttr({-1}),
                                         b.getDenseI64ArrayAttr({std::numeric_limits<int64_t>::max()}),
                                         b.getDenseI64ArrayAttr({1}), b.getDenseI64ArrayAttr({1}));
      auto head = graph::MatMulOp::create(b, mm.getLoc(), last.getResult(), mm.getRhs());
      ret.setOperand(r, head.getResult());
      mm.erase();
      // The sequence dim of the output is no longer the input's.
      if (auto dims = main.getResultAttrOfType<ArrayAttr>(r, attrs::kDims); dims && dims.size() == 3) {
        SmallVector<Attribute> d(dims.begin(), dims.end());
        d[1] = b.getStringAttr("");
        main.setResultAttr(r, attrs::kDims, b.getArrayAttr(d));
      }
    }
    main.setFunctionType(FunctionType::get(&getContext(), main.getArgumentTypes(), ret.getOperandTypes()));
  }
};
} // namespace
} // namespace kiln
