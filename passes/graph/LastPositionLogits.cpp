// Decoders: compute the output head (logits) for the last N positions only (N a run-time input: 1
// for generation's steps and prefills, K + 1 when verifying K speculated tokens).
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
    Value rows; // the kiln.logit_rows input, added with the first head it slices
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
      auto i64 = b.getI64Type();
      if (!rows) {
        unsigned index = main.getNumArguments();
        auto attrsDict = b.getDictionaryAttr({b.getNamedAttr(attrs::kName, b.getStringAttr("kiln.logit_rows")),
                                              b.getNamedAttr(attrs::kDtype, b.getI64IntegerAttr(7)),
                                              b.getNamedAttr(attrs::kDims, b.getArrayAttr({})),
                                              b.getNamedAttr(attrs::kLogitRows, b.getUnitAttr())});
        if (failed(main.insertArgument(index, RankedTensorType::get({}, i64), attrsDict, main.getLoc())))
          return signalPassFailure();
        rows = main.getArgument(index);
      }
      // hidden[:, -N:, :] (ONNX clamping: N above the sequence keeps every position).
      auto one = RankedTensorType::get({1}, i64);
      Value n = graph::UnsqueezeOp::create(b, mm.getLoc(), one, rows, b.getDenseI64ArrayAttr({0}));
      Value start = graph::NegOp::create(b, mm.getLoc(), one, n);
      Value end = graph::ConstantOp::create(
          b, mm.getLoc(), one, DenseElementsAttr::get(one, b.getI64IntegerAttr(std::numeric_limits<int64_t>::max())));
      auto hidden = cast<RankedTensorType>(mm.getLhs().getType());
      auto lastType = RankedTensorType::get({hidden.getDimSize(0), ShapedType::kDynamic, hidden.getDimSize(2)},
                                            hidden.getElementType());
      auto last = graph::DynamicSliceOp::create(b, mm.getLoc(), lastType, mm.getLhs(), start, end,
                                                b.getDenseI64ArrayAttr({1}), b.getDenseI64ArrayAttr({1}));
      auto head = graph::MatMulOp::create(b, mm.getLoc(), mm.getType(), last.getResult(), mm.getRhs());
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
