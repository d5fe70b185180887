// Stores the [K, N] weights of matrix products as column panels [N/B, K, B] (graph.packed_matmul).
#include "passes/graph/Passes.h"

#include "compiler/importer/OnnxImporter.h"
#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_PACKMATMULWEIGHTSPASS
#include "passes/graph/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct PackMatmulWeightsPass : impl::PackMatmulWeightsPassBase<PackMatmulWeightsPass> {
  using PackMatmulWeightsPassBase::PackMatmulWeightsPassBase;

  /// The panel width for a [K, N] weight whose every use is a matmul's rhs; 0 if it stays as is.
  int64_t panelWidth(BlockArgument arg) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() != 2 || !t.hasStaticShape() || !t.getElementType().isF32() || arg.use_empty())
      return 0;
    for (OpOperand &use : arg.getUses()) {
      auto mm = dyn_cast<graph::MatMulOp>(use.getOwner());
      if (!mm || use.getOperandNumber() != 1 || cast<RankedTensorType>(mm.getLhs().getType()).getRank() < 2)
        return 0;
    }
    for (int64_t b = panel; b >= 16; b /= 2)
      if (t.getDimSize(1) % b == 0)
        return b;
    return 0;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    auto weights = module->getAttrOfType<ArrayAttr>(attrs::kWeights);
    if (!main || !weights)
      return;
    OpBuilder b(&getContext());
    SmallVector<Attribute> layouts(weights.size(), b.getDenseI64ArrayAttr({}));
    if (auto old = module->getAttrOfType<ArrayAttr>(attrs::kWeightLayouts))
      for (auto [i, a] : llvm::enumerate(old))
        if (i < layouts.size())
          layouts[i] = a;
    bool changed = false;
    for (BlockArgument arg : main.getArguments()) {
      auto index = main.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "kiln.weight");
      int64_t width = index ? panelWidth(arg) : 0;
      if (!width || index.getInt() >= (int64_t)layouts.size())
        continue;
      auto t = cast<RankedTensorType>(arg.getType());
      int64_t k = t.getDimSize(0), n = t.getDimSize(1);
      arg.setType(RankedTensorType::get({n / width, k, width}, t.getElementType()));
      SmallVector<graph::MatMulOp> uses;
      for (Operation *user : arg.getUsers())
        uses.push_back(cast<graph::MatMulOp>(user));
      for (graph::MatMulOp mm : uses) {
        b.setInsertionPoint(mm);
        auto packed = graph::PackedMatMulOp::create(b, mm.getLoc(), mm.getLhs(), arg);
        mm.getResult().replaceAllUsesWith(packed.getResult());
        mm.erase();
      }
      layouts[index.getInt()] = b.getDenseI64ArrayAttr({k, n, width});
      changed = true;
    }
    if (!changed)
      return;
    main.setFunctionType(FunctionType::get(&getContext(), main.getBody().front().getArgumentTypes(),
                                           main.getFunctionType().getResults()));
    module->setAttr(attrs::kWeightLayouts, b.getArrayAttr(layouts));
  }
};
} // namespace
} // namespace kiln
