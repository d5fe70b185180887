// Weight-only quantization: constant f32 matrix-product weights become int8/int4 panels read by graph.quantized_matmul.
#include "passes/quant/Passes.h"
#include "passes/quant/QuantUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/quant/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct QuantizeWeightsPass : impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using QuantizeWeightsPassBase::QuantizeWeightsPassBase;

  /// One weight quantized once, however many products read it.
  llvm::DenseMap<std::pair<Attribute, unsigned>, std::shared_ptr<quant::PackedWeight>> cache;

  bool kept(StringRef weightName, StringRef nodeName) {
    for (const std::string &k : keep)
      if (!k.empty() && (weightName.contains(k) || nodeName.contains(k)))
        return true;
    return false;
  }

  /// The quantized form of `rhs` read as [K, N] (`transposed`: stored
  /// [N, K]), or null with a remark saying why it stays in f32.
  std::shared_ptr<quant::PackedWeight> quantized(Operation *user, Value rhs, bool transposed) {
    auto cst = rhs.getDefiningOp<graph::ConstantOp>();
    if (!cst)
      return nullptr;
    auto type = dyn_cast<RankedTensorType>(cst.getType());
    if (!type || type.getRank() != 2 || !type.getElementType().isF32() || !type.hasStaticShape())
      return nullptr;
    std::string weightName = graph::firstName(cst.getLoc()), nodeName = graph::firstName(user->getLoc());
    if (kept(weightName, nodeName)) {
      user->emitRemark() << "kept in f32 (--quantize-keep): weight '" << weightName << "'";
      return nullptr;
    }
    quant::MatrixView view;
    view.transposed = transposed;
    view.k = type.getDimSize(transposed ? 1 : 0);
    view.n = type.getDimSize(transposed ? 0 : 1);
    int64_t width = quant::paddedPanelWidthFor(view.n, panel);
    int64_t group = bits == 4 && groupSize > 0 ? groupSize : view.k;
    std::string why;
    if (view.k * view.n < minElements)
      why = "too small to gain (" + std::to_string(view.k * view.n) + " weights)";
    else if (!width)
      why = "N = " + std::to_string(view.n) + " is below one 16-column panel";
    else if (view.k % group != 0 || (bits == 4 && group % 2 != 0))
      why = "K = " + std::to_string(view.k) + " is not a multiple of the group size " + std::to_string(group);
    else if (dynamic && view.k % 2 != 0)
      why = "K = " + std::to_string(view.k) + " is odd (integer products take k in pairs)";
    if (!why.empty()) {
      user->emitRemark() << "kept in f32: weight '" << weightName << "' [K=" << view.k << ", N=" << view.n
                         << "]: " << why;
      return nullptr;
    }
    auto key = std::make_pair(Attribute(cst.getValue()), unsigned(transposed));
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    std::vector<char> scratch;
    ArrayRef<char> bytes;
    if (!graph::constantBytes(cst.getValue(), scratch, bytes) ||
        bytes.size() != size_t(view.k * view.n) * sizeof(float))
      return nullptr;
    auto packed = std::make_shared<quant::PackedWeight>(quant::quantizeWeight(
        reinterpret_cast<const float *>(bytes.data()), view, int(bits), group, width, f16Scales, dynamic));
    cache[key] = packed;
    return packed;
  }

  void runOnOperation() override {
    if ((bits != 8 && bits != 4) || (dynamic && bits != 8)) {
      getOperation().emitError("kiln-quantize-weights: bits must be 8 or 4 (8 with dynamic)");
      return signalPassFailure();
    }
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<graph::MatMulOp, graph::GemmOp>(op))
        products.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : products) {
      Value rhsConst;
      if (auto mm = dyn_cast<graph::MatMulOp>(op)) {
        auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
        if (lhs.getRank() < 2 || !lhs.getElementType().isF32())
          continue;
        auto w = quantized(op, mm.getRhs(), false);
        if (!w)
          continue;
        rhsConst = mm.getRhs();
        b.setInsertionPoint(op);
        Value q = quant::createQuantizedMatMul(b, op->getLoc(), mm.getLhs(), *w, graph::firstName(rhsConst.getLoc()));
        mm.getResult().replaceAllUsesWith(q);
      } else {
        auto gemm = cast<graph::GemmOp>(op);
        if (gemm.getTransA() != 0 || !cast<RankedTensorType>(gemm.getA().getType()).getElementType().isF32())
          continue;
        auto w = quantized(op, gemm.getB(), gemm.getTransB() != 0);
        if (!w)
          continue;
        rhsConst = gemm.getB();
        b.setInsertionPoint(op);
        Location loc = op->getLoc();
        Value y = quant::createQuantizedMatMul(b, loc, gemm.getA(), *w, graph::firstName(rhsConst.getLoc()));
        // alpha * A B + beta * C, as Gemm defines it, around the product.
        auto scalar = [&](double v) -> Value {
          return graph::ConstantOp::create(
              b, loc, DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), float(v)));
        };
        double alpha = gemm.getAlpha().convertToDouble(), beta = gemm.getBeta().convertToDouble();
        if (alpha != 1.0)
          y = graph::MulOp::create(b, loc, y, scalar(alpha));
        if (Value c = gemm.getC(); c && beta != 0.0) {
          if (beta != 1.0)
            c = graph::MulOp::create(b, loc, c, scalar(beta));
          y = graph::AddOp::create(b, loc, y, c);
        }
        gemm.getResult().replaceAllUsesWith(y);
      }
      op->erase();
      if (Operation *def = rhsConst.getDefiningOp(); def && def->use_empty())
        def->erase();
    }
  }
};
} // namespace
} // namespace kiln
