// Stores the [K, N] weights of matrix products (and the transposed weights of convolutions) as column panels [N/B, K, B].
#include "passes/cpu/Passes.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_PACKMATMULWEIGHTSPASS
#include "passes/cpu/Passes.h.inc"
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
    return widthFor(t.getDimSize(1));
  }

  int64_t widthFor(int64_t n) {
    for (int64_t b = panel; b >= 16; b /= 2)
      if (n % b == 0)
        return b;
    return 0;
  }

  /// The panel width for a [Cout, C, kh, kw] weight whose every use is the
  /// weight of a group-1 2-D convolution over static channels and spatial
  /// sizes (the batch may be dynamic); 0 if it stays as is.
  int64_t convPanelWidth(BlockArgument arg) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() != 4 || !t.hasStaticShape() || !t.getElementType().isF32() || arg.use_empty())
      return 0;
    for (OpOperand &use : arg.getUses()) {
      auto conv = dyn_cast<graph::ConvOp>(use.getOwner());
      if (!conv || use.getOperandNumber() != 1 || conv.getGroup() != 1 || conv.getAutoPad())
        return 0;
      auto x = cast<RankedTensorType>(conv.getInput().getType());
      auto y = cast<RankedTensorType>(conv.getType());
      if (x.getRank() != 4 || !x.getElementType().isF32())
        return 0;
      for (int64_t i = 1; i < 4; ++i)
        if (x.isDynamicDim(i) || y.isDynamicDim(i))
          return 0;
    }
    return widthFor(t.getDimSize(0));
  }

  /// Convs reading `arg` become graph.packed_conv over [Cout/B, K, B] panels
  /// of the transposed [K, Cout] weight; returns the layout to record.
  Attribute packConvWeight(OpBuilder &b, BlockArgument arg, int64_t width) {
    auto t = cast<RankedTensorType>(arg.getType());
    int64_t cout = t.getDimSize(0), k = t.getDimSize(1) * t.getDimSize(2) * t.getDimSize(3);
    arg.setType(RankedTensorType::get({cout / width, k, width}, t.getElementType()));
    SmallVector<graph::ConvOp> convs;
    for (Operation *user : arg.getUsers())
      convs.push_back(cast<graph::ConvOp>(user));
    for (graph::ConvOp conv : convs) {
      b.setInsertionPoint(conv);
      auto packed = graph::PackedConvOp::create(
          b, conv.getLoc(), conv.getInput(), arg, conv.getBias(),
          b.getDenseI64ArrayAttr({t.getDimSize(2), t.getDimSize(3)}), conv.getPadsAttr(),
          conv.getStridesAttr(), conv.getDilationsAttr(), UnitAttr());
      conv.getResult().replaceAllUsesWith(packed.getResult());
      conv.erase();
    }
    // [K, N, B, 1]: the source is the transpose, [N, K] row-major.
    return b.getDenseI64ArrayAttr({k, cout, width, 1});
  }

  /// The panel width for a [kh, kw, C, Cout] weight whose every use is the
  /// weight of a group-1 graph.nhwc_conv over static channels and spatial
  /// sizes; 0 if it stays as is.
  int64_t nhwcConvPanelWidth(BlockArgument arg) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() != 4 || !t.hasStaticShape() || !t.getElementType().isF32() || arg.use_empty())
      return 0;
    for (OpOperand &use : arg.getUses()) {
      auto conv = dyn_cast<graph::NhwcConvOp>(use.getOwner());
      if (!conv || use.getOperandNumber() != 1 || conv.getGroup() != 1)
        return 0;
      auto x = cast<RankedTensorType>(conv.getInput().getType());
      auto y = cast<RankedTensorType>(conv.getType());
      if (!x.getElementType().isF32())
        return 0;
      for (int64_t i = 1; i < 4; ++i)
        if (x.isDynamicDim(i) || y.isDynamicDim(i))
          return 0;
    }
    // Channel counts such as MobileNet's 24 and 40 take 8-column panels
    // (one vector per row of the register block) rather than leaving the
    // channels-last segment.
    int64_t cout = t.getDimSize(3);
    if (cout % 16 == 0)
      return cout % convPanel == 0 ? convPanel : widthFor(cout);
    return cout % 8 == 0 ? 8 : 0;
  }

  /// Channels-last convs reading `arg` become channels-last graph.packed_conv
  /// over [Cout/B, K, B] panels of the weight viewed as [K, Cout] (K in kh,
  /// kw, c order, as it is stored); returns the layout to record.
  Attribute packNhwcConvWeight(OpBuilder &b, BlockArgument arg, int64_t width) {
    auto t = cast<RankedTensorType>(arg.getType());
    int64_t cout = t.getDimSize(3), k = t.getDimSize(0) * t.getDimSize(1) * t.getDimSize(2);
    arg.setType(RankedTensorType::get({cout / width, k, width}, t.getElementType()));
    SmallVector<graph::NhwcConvOp> convs;
    for (Operation *user : arg.getUsers())
      convs.push_back(cast<graph::NhwcConvOp>(user));
    for (graph::NhwcConvOp conv : convs) {
      b.setInsertionPoint(conv);
      auto packed = graph::PackedConvOp::create(
          b, conv.getLoc(), conv.getInput(), arg, conv.getBias(),
          b.getDenseI64ArrayAttr({t.getDimSize(0), t.getDimSize(1)}), conv.getPadsAttr(), conv.getStridesAttr(),
          conv.getDilationsAttr(), b.getUnitAttr());
      conv.getResult().replaceAllUsesWith(packed.getResult());
      conv.erase();
    }
    return b.getDenseI64ArrayAttr({k, cout, width});
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
      auto index = main.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), attrs::kWeight);
      if (!index || index.getInt() >= (int64_t)layouts.size())
        continue;
      if (int64_t width = nhwcConvPanelWidth(arg)) {
        layouts[index.getInt()] = packNhwcConvWeight(b, arg, width);
        changed = true;
        continue;
      }
      if (int64_t width = convPanelWidth(arg)) {
        layouts[index.getInt()] = packConvWeight(b, arg, width);
        changed = true;
        continue;
      }
      int64_t width = panelWidth(arg);
      if (!width)
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
