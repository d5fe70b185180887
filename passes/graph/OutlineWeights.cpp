// Moves large graph.constant values out of the IR into @main arguments (the artifact's weights).
#include "passes/graph/Passes.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {
#define GEN_PASS_DEF_OUTLINEWEIGHTSPASS
#include "passes/graph/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct OutlineWeightsPass : impl::OutlineWeightsPassBase<OutlineWeightsPass> {
  using OutlineWeightsPassBase::OutlineWeightsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    OpBuilder b(module.getContext());
    SmallVector<Attribute> weights, names;
    llvm::DenseMap<Attribute, BlockArgument> argFor;
    SmallVector<graph::ConstantOp> constants;
    func.walk([&](graph::ConstantOp op) { constants.push_back(op); });
    for (graph::ConstantOp op : constants) {
      ElementsAttr value = op.getValue();
      auto type = cast<RankedTensorType>(value.getType());
      if (type.getNumElements() <= minElements || type.getElementType().isInteger(1))
        continue;
      BlockArgument arg = argFor.lookup(value);
      if (!arg) {
        unsigned index = func.getNumArguments();
        // The initializer's name survives in the location, possibly fused
        // with others by CSE; take the first.
        std::string name = graph::firstName(op.getLoc());
        if (name.empty())
          name = "weight_" + std::to_string(weights.size());
        auto attrs = b.getDictionaryAttr(
            {b.getNamedAttr(attrs::kWeight, b.getI64IntegerAttr(weights.size()))});
        if (failed(func.insertArgument(index, type, attrs, op.getLoc()))) {
          signalPassFailure();
          return;
        }
        arg = func.getArgument(index);
        argFor[value] = arg;
        weights.push_back(value);
        names.push_back(b.getStringAttr(name));
      }
      op.getResult().replaceAllUsesWith(arg);
      op.erase();
    }
    module->setAttr(attrs::kWeights, b.getArrayAttr(weights));
    module->setAttr(attrs::kWeightNames, b.getArrayAttr(names));
  }
};
} // namespace
} // namespace kiln
