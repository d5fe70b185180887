// QDQ weights (int8 constants dequantized in the graph) -> graph.quantized_matmul over the model's own values.
#include "passes/quant/Passes.h"
#include "passes/quant/QuantUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_FOLDQDQPASS
#include "passes/quant/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The constant at the root of a chain of casts and reshapes, with its
/// element type before any cast.
graph::ConstantOp constantRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto c = dyn_cast<graph::ConstantOp>(def))
      return c;
    if (isa<graph::CastOp, graph::ReshapeOp>(def))
      v = def->getOperand(0);
    else
      return nullptr;
  }
  return nullptr;
}

/// The values of a constant as floats (f32) or integers (i8), or false.
bool readF32(graph::ConstantOp c, std::vector<float> &out) {
  auto t = cast<RankedTensorType>(c.getType());
  if (!t.getElementType().isF32())
    return false;
  std::vector<char> scratch;
  ArrayRef<char> bytes;
  if (!quant::constantBytes(c.getValue(), scratch, bytes) || bytes.size() != size_t(t.getNumElements()) * 4)
    return false;
  out.resize(t.getNumElements());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return true;
}

bool readI8(graph::ConstantOp c, std::vector<int8_t> &out) {
  auto t = cast<RankedTensorType>(c.getType());
  if (!t.getElementType().isInteger(8))
    return false;
  std::vector<char> scratch;
  ArrayRef<char> bytes;
  if (!quant::constantBytes(c.getValue(), scratch, bytes) || bytes.size() != size_t(t.getNumElements()))
    return false;
  out.assign(bytes.begin(), bytes.end());
  return true;
}

/// Per-column values of a broadcast operand (1 value: per tensor; n values
/// along the last axis: per column), or false.
template <typename T>
bool perColumn(const std::vector<T> &v, Value operand, int64_t n, std::vector<T> &out) {
  auto t = cast<RankedTensorType>(operand.getType());
  for (int64_t i = 0; i + 1 < t.getRank(); ++i)
    if (t.getDimSize(i) != 1)
      return false;
  if (v.size() == 1) {
    out.assign(n, v[0]);
    return true;
  }
  if (int64_t(v.size()) != n || t.getRank() == 0 || t.getDimSize(t.getRank() - 1) != n)
    return false;
  out = v;
  return true;
}

struct FoldQdqPass : impl::FoldQdqPassBase<FoldQdqPass> {
  using FoldQdqPassBase::FoldQdqPassBase;

  /// Folds matmul `mm` whose rhs is a dequantized int8 constant; false (and
  /// a remark when it was a QDQ weight) otherwise.
  bool fold(graph::MatMulOp mm) {
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(mm.getRhs().getType());
    auto mul = mm.getRhs().getDefiningOp<graph::MulOp>();
    if (!mul || lhs.getRank() < 2 || !lhs.getElementType().isF32() || rhsType.getRank() != 2 ||
        !rhsType.hasStaticShape())
      return false;
    int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
    // mul(centered, scale) in either order; centered = cast(q) or sub(cast(q), zp).
    for (int side = 0; side < 2; ++side) {
      Value centered = mul->getOperand(side), scaleV = mul->getOperand(1 - side);
      graph::ConstantOp scaleC = constantRoot(scaleV);
      Value qV = centered, zpV;
      if (auto sub = centered.getDefiningOp<graph::SubOp>()) {
        qV = sub.getLhs();
        zpV = sub.getRhs();
      }
      auto castOp = qV.getDefiningOp<graph::CastOp>();
      graph::ConstantOp qC = castOp ? dyn_cast_or_null<graph::ConstantOp>(castOp.getInput().getDefiningOp()) : nullptr;
      if (!scaleC || !qC || scaleC.getOperation() == qC.getOperation())
        continue;
      auto qType = cast<RankedTensorType>(qC.getType());
      std::vector<int8_t> q, zpAll, zp;
      std::vector<float> scaleAll, scales;
      if (qType.getShape() != rhsType.getShape() || !readI8(qC, q)) {
        mm.emitRemark("QDQ weight kept dequantized: not an int8 [K, N] constant (uint8 weights are not folded)");
        return false;
      }
      if (!readF32(scaleC, scaleAll) || !perColumn(scaleAll, scaleV, n, scales)) {
        mm.emitRemark("QDQ weight kept dequantized: the scale is neither per tensor nor per column");
        return false;
      }
      zp.assign(n, 0);
      if (zpV) {
        graph::ConstantOp zpC = constantRoot(zpV);
        if (!zpC || !readI8(zpC, zpAll) || !perColumn(zpAll, zpV, n, zp)) {
          mm.emitRemark("QDQ weight kept dequantized: the zero point is not a per-tensor or per-column int8 constant");
          return false;
        }
      }
      for (int64_t i = 0; i < k * n; ++i) {
        int v = int(q[i]) - int(zp[i % n]);
        if (v < -128 || v > 127) {
          mm.emitRemark("QDQ weight kept dequantized: q - zero_point leaves int8");
          return false;
        }
        q[i] = int8_t(v);
      }
      int64_t width = quant::paddedPanelWidthFor(n);
      if (!width) {
        mm.emitRemark() << "QDQ weight kept dequantized: N = " << n << " has no panel width";
        return false;
      }
      quant::MatrixView view;
      view.k = k;
      view.n = n;
      quant::PackedWeight w = quant::packQuantized(q.data(), view, scales.data(), k, width);
      OpBuilder b(mm);
      std::string name = "qdq";
      qC.getLoc()->walk([&](Location l) {
        if (auto nl = dyn_cast<NameLoc>(l)) {
          name = nl.getName().str();
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      mm.getResult().replaceAllUsesWith(quant::createQuantizedMatMul(b, mm.getLoc(), mm.getLhs(), w, name));
      mm.erase();
      return true;
    }
    return false;
  }

  void runOnOperation() override {
    SmallVector<graph::MatMulOp> products;
    getOperation().walk([&](graph::MatMulOp mm) { products.push_back(mm); });
    bool changed = false;
    for (graph::MatMulOp mm : products)
      changed |= fold(mm);
    if (changed)
      quant::eraseDeadGraphOps(getOperation()); // the dequantizing chains left without readers
  }
};
} // namespace
} // namespace kiln
