// Folds a per-channel scale of a 1x1 convolution's input into its weight rows when the weights are the smaller tensor.
//
// Squeeze-and-excitation (EfficientNet, MobileNetV3) ends in x * s: s one scale per channel
// of the map x, computed from x itself at run time, and the product feeds the block's 1x1
// projection. conv(x * s, W) = conv(x, W') with W'[k, :] = s[k] W[k, :], so where W has fewer
// elements than x (early blocks: a 112x112x32 map against 32x16 weights) scaling W costs a
// few hundred multiplies and the multiply over the whole map, a pass of its own bound by
// memory, disappears. Batch 1 only: every sample has its own s.
#include "passes/cpu/ConstantLayout.h"
#include "passes/cpu/Passes.h"

#include "dialects/graph/IR/Graph.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDCHANNELSCALESPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The map and the scale of `mul` when it is x [1, H, W, K] * s [1, 1, 1, K] (either order).
bool splitChannelScale(graph::MulOp mul, Value &map, Value &scale) {
  for (auto [x, s] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    auto xt = cast<RankedTensorType>(x.getType()), st = cast<RankedTensorType>(s.getType());
    if (xt.getRank() == 4 && st.getRank() == 4 && xt.hasStaticShape() && st.hasStaticShape() &&
        xt.getDimSize(0) == 1 && st.getShape() == ArrayRef<int64_t>{1, 1, 1, xt.getDimSize(3)} &&
        xt.getElementType().isF32() && st.getElementType().isF32()) {
      map = x;
      scale = s;
      return true;
    }
  }
  return false;
}

struct FoldChannelScalesPass : impl::FoldChannelScalesPassBase<FoldChannelScalesPass> {
  void runOnOperation() override {
    SmallVector<graph::PackedConvOp> convs;
    getOperation().walk([&](graph::PackedConvOp op) { convs.push_back(op); });
    OpBuilder b(&getContext());
    for (graph::PackedConvOp conv : convs) {
      auto mul = conv.getInput().getDefiningOp<graph::MulOp>();
      Value map, scale;
      if (!conv.getChannelsLast() || conv.getKernelShape() != ArrayRef<int64_t>{1, 1} ||
          conv.getStrides() != ArrayRef<int64_t>{1, 1} || llvm::any_of(conv.getPads(), [](int64_t p) { return p; }) ||
          !mul || !mul->hasOneUse() || !splitChannelScale(mul, map, scale))
        continue;
      auto xt = cast<RankedTensorType>(map.getType());
      auto wt = cast<RankedTensorType>(conv.getWeight().getType()); // [panels, K, columns]
      int64_t k = xt.getDimSize(3);
      if (!wt.hasStaticShape() || wt.getDimSize(1) != k ||
          wt.getNumElements() >= xt.getNumElements()) // scaling the weights would cost more
        continue;
      b.setInsertionPoint(conv);
      Location loc = conv.getLoc();
      Value rows = graph::ReshapeOp::create(b, loc, scale, shapeConstant(b, loc, {1, k, 1}), b.getI64IntegerAttr(0));
      Value weight = graph::MulOp::create(b, loc, conv.getWeight(), rows);
      conv.getInputMutable().assign(map);
      conv.getWeightMutable().assign(weight);
      mul.erase();
    }
  }
};
} // namespace
} // namespace kiln
