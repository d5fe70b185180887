// Computes the 3x3 stride-1 channels-last convolutions of x86 programs with Winograd's minimal
// filtering F(m x m, 3 x 3): fewer multiply-adds per output than any direct or implicit-GEMM form.
//
// The implicit-GEMM convolution already runs its products near the core's multiply-add peak
// (docs/performance.md: resnet's 3x3 convolutions at 200-220 GFLOP/s of about 230), so the way
// to a faster 3x3 convolution is fewer multiply-adds. Per a x a input tile (a = m + 2) and
// channel pair, F(m x m, 3 x 3) needs a^2 of them for m^2 outputs where the direct form needs
// 9 m^2: 2.25x fewer for m = 2, 4x for m = 4. The rewrite, for a graph.nhwc_conv of group 1,
// a constant [3, 3, C, K] weight and unit strides and dilations:
//   %v = graph.winograd_input %x              // B^T d B per tile: [a^2, N, tiles, C]
//   %p = graph.packed_matmul %v, %U           // a^2 products [N, tiles, C] x [C, K], one launch
//   %y = graph.winograd_output %p, %bias      // A^T M A per tile, + bias: [N, OH, OW, K]
// with U = G g G^T computed here, at compile time, and stored as column panels per tile
// element ([a^2, K / B, C, B]). The products are the packed product's tiles and microkernel:
// nothing new runs the multiply-adds, and the a^2 products are one launch whose work items
// are (element, row block, panel), not a^2 launches too short to split across threads.
//
// The transforms cost a few additions per tile and channel, which the K (or C) channels of
// the product share, so a convolution with few channels gains nothing; the transformed weights
// are a^2 / 9 times the original (1.8x for m = 2), which a convolution on a small map, bound by
// streaming its weights rather than by its multiply-adds, pays for in memory traffic. Both limits
// are options (`min-channels`, `min-tiles`), and the tile is the largest (up to `tile`) that still
// gives `min-tiles` tiles.
#include "passes/cpu/ConstantLayout.h"
#include "passes/cpu/Passes.h"
#include "passes/host/SourceNodes.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/Winograd.h"

#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_WINOGRADCONVSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Why `conv` keeps its direct form, or "" when F(m x m, 3x3) computes it; then `m` is the
/// largest tile up to `maxTile` that cuts the output into `minTiles` tiles or more. A product
/// reads each transformed weight once per tile, so a map of few tiles (resnet's 7x7 maps: 16
/// tiles of 2x2) streams a^2 / 9 times the weights for few multiply-adds each, where the direct
/// form reads each weight once per output position: measured slower or barely faster
/// (docs/performance.md). Larger tiles need fewer multiply-adds but cover more positions past
/// the output's edge on a small map (a 14x14 map in 4x4 tiles computes 16x16).
std::string refusal(graph::NhwcConvOp conv, int64_t maxTile, int64_t minChannels, int64_t minTiles, int64_t &m) {
  auto x = cast<RankedTensorType>(conv.getInput().getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  auto y = cast<RankedTensorType>(conv.getType());
  if (!x.getElementType().isF32() || y.isDynamicDim(1) || y.isDynamicDim(2))
    return "not f32 of static spatial sizes";
  if (x.isDynamicDim(1) || x.isDynamicDim(2) || x.isDynamicDim(3))
    return "input of dynamic sizes";
  if (conv.getGroup() != 1)
    return "grouped";
  if (!w.hasStaticShape() || w.getDimSize(0) != 3 || w.getDimSize(1) != 3)
    return "not a 3x3 window";
  if (llvm::any_of(conv.getStrides(), [](int64_t s) { return s != 1; }))
    return "strided";
  if (llvm::any_of(conv.getDilations(), [](int64_t d) { return d != 1; }))
    return "dilated";
  if (!conv.getWeight().getDefiningOp<graph::ConstantOp>())
    return "weight not a constant";
  int64_t c = w.getDimSize(2), k = w.getDimSize(3);
  // The transforms run on vectors of 8 or 16 channels.
  if (c % 8 != 0 || k % 8 != 0)
    return "channels not a multiple of 8";
  if (c < minChannels || k < minChannels)
    return "fewer than " + std::to_string(minChannels) + " channels";
  for (m = maxTile; m >= 2; m -= 2)
    if (ceilDiv(y.getDimSize(1), m) * ceilDiv(y.getDimSize(2), m) >= minTiles)
      return "";
  return std::to_string(ceilDiv(y.getDimSize(1), 2) * ceilDiv(y.getDimSize(2), 2)) + " tiles, fewer than " +
         std::to_string(minTiles);
}

/// Columns per weight panel: `panel` where it divides K, else 16 or 8.
int64_t panelWidth(int64_t k, int64_t panel) {
  for (int64_t b : {panel, int64_t(16), int64_t(8)})
    if (b > 0 && k % b == 0)
      return b;
  return 0;
}

/// The a^2 transformed weights U[e1][e2] = (G g G^T)[e1][e2] of a constant HWIO weight
/// [3, 3, C, K], each [C, K], stored as column panels of `width`: [a^2, K / width, C, width],
/// element (e, p, c, j) = U_e[c, p * width + j] (graph.packed_matmul's per-batch weights). Null
/// when the weight cannot be read.
Value transformedWeights(OpBuilder &b, Value weight, const graph::winograd::Matrices &t, int64_t width) {
  auto constant = weight.getDefiningOp<graph::ConstantOp>();
  auto type = cast<RankedTensorType>(weight.getType());
  std::vector<char> scratch;
  ArrayRef<char> bytes;
  if (!graph::constantBytes(constant.getValue(), scratch, bytes) ||
      bytes.size() != sizeof(float) * type.getNumElements())
    return {};
  int64_t c = type.getDimSize(2), k = type.getDimSize(3), ck = c * k, a = t.a, panels = k / width;
  std::vector<float> g(9 * ck);
  std::memcpy(g.data(), bytes.data(), bytes.size());
  std::vector<float> u(a * a * ck);
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t ki = 0; ki < k; ++ki) {
      // (G g) [a][3], then (G g) G^T [a][a], in double.
      int64_t p = ci * k + ki;
      double gg[6][3] = {};
      for (int64_t e = 0; e < a; ++e)
        for (int64_t j = 0; j < 3; ++j)
          for (int64_t i = 0; i < 3; ++i)
            gg[e][j] += t.g[e * 3 + i] * double(g[(i * 3 + j) * ck + p]);
      int64_t packed = ((ki / width) * c + ci) * width + ki % width;
      for (int64_t e1 = 0; e1 < a; ++e1)
        for (int64_t e2 = 0; e2 < a; ++e2) {
          double v = 0;
          for (int64_t j = 0; j < 3; ++j)
            v += gg[e1][j] * t.g[e2 * 3 + j];
          u[(e1 * a + e2) * ck + packed] = float(v);
        }
    }
  auto outType = RankedTensorType::get({a * a, panels, c, width}, b.getF32Type());
  ArrayRef<char> data(reinterpret_cast<const char *>(u.data()), u.size() * sizeof(float));
  return constantLike(b, constant, outType, data, ".winograd");
}

struct WinogradConvsPass : impl::WinogradConvsPassBase<WinogradConvsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (!graph::winograd::supportedTile(tile)) {
      getOperation().emitError("kiln-winograd-convs: tile must be 2 or 4, not ") << tile;
      return signalPassFailure();
    }
    std::vector<std::string> report;
    SmallVector<graph::NhwcConvOp> convs;
    getOperation().walk([&](graph::NhwcConvOp conv) { convs.push_back(conv); });
    OpBuilder b(&getContext());
    for (graph::NhwcConvOp conv : convs) {
      std::string name = nodeName(conv.getLoc());
      // Only 3x3 windows are candidates: the others are not worth a line.
      auto w = cast<RankedTensorType>(conv.getWeight().getType());
      bool candidate = w.getRank() == 4 && w.getDimSize(0) == 3 && w.getDimSize(1) == 3;
      int64_t m = 0;
      std::string why = refusal(conv, tile, minChannels, minTiles, m);
      if (why.empty()) {
        b.setInsertionPoint(conv);
        int64_t k = cast<RankedTensorType>(conv.getWeight().getType()).getDimSize(3);
        Value weights = transformedWeights(b, conv.getWeight(), graph::winograd::matrices(m), panelWidth(k, panel));
        if (!weights)
          why = "weight not readable";
        else
          rewrite(b, conv, weights, m);
      }
      if (candidate)
        report.push_back(name + ": " + (why.empty() ? "F(" + std::to_string(m) + "x" + std::to_string(m) +
                                                          ", 3x3)"
                                                    : "direct (" + why + ")"));
    }
    if (!print)
      return;
    llvm::outs() << "winograd convolutions:\n";
    for (const std::string &line : report)
      llvm::outs() << "  " << line << "\n";
  }

  void rewrite(OpBuilder &b, graph::NhwcConvOp conv, Value weights, int64_t m) {
    Location loc = conv.getLoc();
    auto y = cast<RankedTensorType>(conv.getType());
    Value input = graph::WinogradInputOp::create(b, loc, conv.getInput(), b.getI64IntegerAttr(m), conv.getPadsAttr());
    Value products = graph::PackedMatMulOp::create(b, loc, input, weights);
    Value out = graph::WinogradOutputOp::create(b, loc, products, conv.getBias(), b.getI64IntegerAttr(m),
                                                b.getI64IntegerAttr(y.getDimSize(1)),
                                                b.getI64IntegerAttr(y.getDimSize(2)));
    Operation *weight = conv.getWeight().getDefiningOp();
    conv.replaceAllUsesWith(out);
    conv.erase();
    // The direct weight, read by nothing now, would otherwise still be outlined and stored.
    if (weight->use_empty())
      weight->erase();
  }
};

} // namespace
} // namespace kiln
