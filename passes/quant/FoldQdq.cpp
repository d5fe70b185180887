// QDQ weights (int8 constants dequantized in the graph) -> graph.quantized_matmul over the model's own values.
#include "passes/quant/Passes.h"
#include "passes/quant/QuantUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

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
  if (!graph::constantBytes(c.getValue(), scratch, bytes) || bytes.size() != size_t(t.getNumElements()) * 4)
    return false;
  out.resize(t.getNumElements());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return true;
}


/// Whether `v` is an f32 constant whose every element is `x`.
bool isScalar(Value v, float x) {
  auto c = v.getDefiningOp<graph::ConstantOp>();
  auto dense = c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat() && dense.getElementType().isF32() && dense.getSplatValue<float>() == x;
}

/// The 8-bit integers an importer-dequantized value holds, through reshapes:
/// `cast(c)` of an i8 constant (int8), or the importer's uint8 form
/// `where(less(cast(c), 0), add(cast(c), 256), cast(c))` (values 0..255).
/// Returns the constant, or null.
graph::ConstantOp quantizedValues(Value v, std::vector<int> &out) {
  while (auto r = v.getDefiningOp<graph::ReshapeOp>())
    v = r.getInput();
  bool unsignedForm = false;
  if (auto w = v.getDefiningOp<graph::WhereOp>()) {
    // Only the exact fix-up shape: the same cast in all three places.
    auto less = w.getCondition().getDefiningOp<graph::LessOp>();
    auto add = w.getX().getDefiningOp<graph::AddOp>();
    if (!less || !add || less.getLhs() != w.getY() || add.getLhs() != w.getY() || !isScalar(less.getRhs(), 0) ||
        !isScalar(add.getRhs(), 256))
      return nullptr;
    v = w.getY();
    unsignedForm = true;
  }
  auto castOp = v.getDefiningOp<graph::CastOp>();
  auto c = castOp ? dyn_cast_or_null<graph::ConstantOp>(castOp.getInput().getDefiningOp()) : nullptr;
  std::vector<int8_t> raw;
  if (!c || !quant::readInt8Constant(c.getValue(), raw))
    return nullptr;
  out.clear();
  for (int8_t x : raw)
    out.push_back(unsignedForm ? int(uint8_t(x)) : int(x));
  return c;
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

/// The flat index into an operand of shape `from` (right-aligned, dims of 1
/// broadcast) of element `flat` of a result of shape `to`.
int64_t broadcastIndex(ArrayRef<int64_t> to, ArrayRef<int64_t> from, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (int64_t d = int64_t(to.size()) - 1, f = int64_t(from.size()) - 1; d >= 0; --d, --f) {
    int64_t coord = flat % to[d];
    flat /= to[d];
    if (f >= 0) {
      if (from[f] != 1)
        index += coord * stride;
      stride *= from[f];
    }
  }
  return index;
}

/// The constant's name (its initializer's), or `fallback`.
std::string nameOr(Location loc, StringRef fallback) {
  std::string name = graph::firstName(loc);
  return name.empty() ? fallback.str() : name;
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
      std::vector<int> q, zpAll, zp;
      graph::ConstantOp qC = quantizedValues(qV, q);
      if (!scaleC || !qC || scaleC.getOperation() == qC.getOperation())
        continue;
      std::vector<float> scaleAll, scales;
      if (cast<RankedTensorType>(qC.getType()).getShape() != rhsType.getShape()) {
        mm.emitRemark("QDQ weight kept dequantized: not an 8-bit [K, N] constant");
        return false;
      }
      if (!readF32(scaleC, scaleAll) || !perColumn(scaleAll, scaleV, n, scales)) {
        mm.emitRemark("QDQ weight kept dequantized: the scale is neither per tensor nor per column");
        return false;
      }
      zp.assign(n, 0);
      if (zpV && (!quantizedValues(zpV, zpAll) || !perColumn(zpAll, zpV, n, zp))) {
        mm.emitRemark("QDQ weight kept dequantized: the zero point is not a per-tensor or per-column 8-bit constant");
        return false;
      }
      std::vector<int8_t> shifted(k * n);
      for (int64_t i = 0; i < k * n; ++i) {
        int v = q[i] - zp[i % n];
        if (v < -128 || v > 127) {
          mm.emitRemark("QDQ weight kept dequantized: q - zero_point leaves int8");
          return false;
        }
        shifted[i] = int8_t(v);
      }
      int64_t width = quant::paddedPanelWidthFor(n, panel);
      if (!width) {
        mm.emitRemark() << "QDQ weight kept dequantized: N = " << n << " has no panel width";
        return false;
      }
      quant::MatrixView view;
      view.k = k;
      view.n = n;
      quant::PackedWeight w = quant::packQuantized(shifted.data(), view, scales.data(), k, width);
      OpBuilder b(mm);
      mm.getResult().replaceAllUsesWith(
          quant::createQuantizedMatMul(b, mm.getLoc(), mm.getLhs(), w, nameOr(qC.getLoc(), "qdq")));
      mm.erase();
      return true;
    }
    return false;
  }

  /// Any other dequantized constant weight (a convolution's, a Gather's
  /// table): computed once here, with the same f32 operations the graph
  /// would run on every forward pass, so the result is bit-identical and the
  /// weight becomes an ordinary f32 constant (packed for convolutions).
  bool foldToFloat(graph::MulOp mul) {
    auto type = dyn_cast<RankedTensorType>(mul.getType());
    if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
      return false;
    for (int side = 0; side < 2; ++side) {
      Value centered = mul->getOperand(side), scaleV = mul->getOperand(1 - side);
      Value qV = centered, zpV;
      if (auto sub = centered.getDefiningOp<graph::SubOp>()) {
        qV = sub.getLhs();
        zpV = sub.getRhs();
      }
      std::vector<int> q, zp;
      std::vector<float> scale;
      graph::ConstantOp qC = quantizedValues(qV, q);
      graph::ConstantOp scaleC = constantRoot(scaleV);
      if (!qC || !scaleC || cast<RankedTensorType>(qV.getType()).getShape() != type.getShape() ||
          !readF32(scaleC, scale) || (zpV && !quantizedValues(zpV, zp)))
        continue;
      auto broadcastFrom = [&](Value operand, size_t count) -> std::optional<std::vector<int64_t>> {
        auto t = cast<RankedTensorType>(operand.getType());
        if (!t.hasStaticShape() || size_t(t.getNumElements()) != count || t.getRank() > type.getRank())
          return std::nullopt;
        return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
      };
      auto scaleShape = broadcastFrom(scaleV, scale.size());
      auto zpShape = zpV ? broadcastFrom(zpV, zp.size()) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
      if (!scaleShape || !zpShape)
        continue;
      if (!zpV)
        zp.assign(1, 0);
      std::vector<float> out(type.getNumElements());
      ArrayRef<int64_t> shape = type.getShape();
      for (int64_t i = 0; i < int64_t(out.size()); ++i) {
        float centeredValue = float(q[i]) - float(zp[broadcastIndex(shape, *zpShape, i)]);
        out[i] = centeredValue * scale[broadcastIndex(shape, *scaleShape, i)];
      }
      OpBuilder b(mul);
      std::string name = nameOr(qC.getLoc(), "qdq") + ".dequantized";
      ArrayRef<char> bytes(reinterpret_cast<const char *>(out.data()), out.size() * sizeof(float));
      auto attr = DenseResourceElementsAttr::get(
          type, name, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, 64, /*dataIsMutable=*/false));
      Value folded = graph::ConstantOp::create(b, NameLoc::get(b.getStringAttr(name), mul.getLoc()), attr);
      mul.getResult().replaceAllUsesWith(folded);
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
    SmallVector<graph::MulOp> muls;
    getOperation().walk([&](graph::MulOp mul) { muls.push_back(mul); });
    for (graph::MulOp mul : muls)
      changed |= foldToFloat(mul);
    if (changed)
      quant::eraseDeadGraphOps(getOperation()); // the dequantizing chains left without readers
  }
};
} // namespace
} // namespace kiln
