// Integer products (MatMulInteger, QLinearMatMul) by constant int8 weights -> graph.integer_matmul.
#include "passes/quant/Passes.h"
#include "passes/quant/QuantUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstdlib>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_FOLDINTEGERMATMULPASS
#include "passes/quant/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kUnbounded = int64_t(1) << 40;

/// An upper bound of |v| for every element, or kUnbounded: casts from 8-bit
/// (and 1-bit) integers, small integer constants, and adds, subtracts and
/// selects of bounded values.
int64_t magnitudeBound(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 16)
    return kUnbounded;
  if (auto cst = dyn_cast<graph::ConstantOp>(def)) {
    auto dense = dyn_cast<DenseIntElementsAttr>(cst.getValue());
    if (!dense || dense.getNumElements() > 4096)
      return kUnbounded;
    int64_t bound = 0;
    for (const APInt &x : dense.getValues<APInt>())
      bound = std::max<int64_t>(bound, std::llabs(x.getSExtValue()));
    return bound;
  }
  if (auto c = dyn_cast<graph::CastOp>(def)) {
    auto from = cast<RankedTensorType>(c.getInput().getType()).getElementType();
    if (from.isInteger(8))
      return 128;
    if (from.isInteger(1))
      return 1;
    return kUnbounded;
  }
  if (isa<graph::AddOp, graph::SubOp>(def))
    return std::min(kUnbounded, magnitudeBound(def->getOperand(0), depth + 1) +
                                    magnitudeBound(def->getOperand(1), depth + 1));
  if (auto w = dyn_cast<graph::WhereOp>(def))
    return std::max(magnitudeBound(def->getOperand(1), depth + 1), magnitudeBound(def->getOperand(2), depth + 1));
  return kUnbounded;
}

/// The int8 values of a constant reached through casts and reshapes, with
/// the constant's type; false otherwise.
bool int8Constant(Value v, std::vector<int8_t> &out, RankedTensorType &type) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto c = dyn_cast<graph::ConstantOp>(def)) {
      type = cast<RankedTensorType>(c.getType());
      return quant::readInt8Constant(c.getValue(), out);
    }
    if (!isa<graph::CastOp, graph::ReshapeOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

/// The values of a small integer constant (a zero point: int8, or the i32
/// the importer widens it to; dense or a resource) reached through casts
/// and reshapes.
bool zeroPoint(Value v, std::vector<int64_t> &out) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto c = dyn_cast<graph::ConstantOp>(def)) {
      auto type = cast<RankedTensorType>(c.getType());
      unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      std::vector<char> scratch;
      ArrayRef<char> bytes;
      if (!type.getElementType().isSignlessInteger() || (bits != 8 && bits != 32) ||
          type.getNumElements() > (int64_t(1) << 20) || !graph::constantBytes(c.getValue(), scratch, bytes) ||
          bytes.size() != size_t(type.getNumElements()) * bits / 8)
        return false;
      out.clear();
      for (int64_t i = 0; i < type.getNumElements(); ++i) {
        int32_t x = 0;
        if (bits == 8)
          x = int8_t(bytes[i]);
        else
          std::memcpy(&x, bytes.data() + 4 * i, 4);
        out.push_back(x);
      }
      return true;
    }
    if (!isa<graph::CastOp, graph::ReshapeOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

struct FoldIntegerMatMulPass : impl::FoldIntegerMatMulPassBase<FoldIntegerMatMulPass> {
  using FoldIntegerMatMulPassBase::FoldIntegerMatMulPassBase;

  /// The constant weight q - zp (int8, [K, N]) of `rhs`, or an empty vector
  /// with `why` set.
  std::vector<int8_t> weight(Value rhs, int64_t k, int64_t n, std::string &why) {
    Value qv = rhs, zpv;
    if (auto sub = rhs.getDefiningOp<graph::SubOp>()) {
      qv = sub.getLhs();
      zpv = sub.getRhs();
    }
    auto cast = qv.getDefiningOp<graph::CastOp>();
    std::vector<int8_t> q;
    std::vector<int64_t> zp;
    RankedTensorType qt;
    if (!cast || !int8Constant(cast.getInput(), q, qt) || qt.getRank() != 2 || qt.getDimSize(0) != k ||
        qt.getDimSize(1) != n) {
      why = "the weight is not a constant int8 [K, N] matrix";
      return {};
    }
    std::vector<int8_t> centered(q);
    if (zpv) {
      if (!zeroPoint(zpv, zp) || (zp.size() != 1 && int64_t(zp.size()) != n)) {
        why = "the weight's zero point is not a per-tensor or per-column int8 constant";
        return {};
      }
      for (int64_t i = 0; i < k * n; ++i) {
        int64_t d = int64_t(q[i]) - zp[zp.size() == 1 ? 0 : i % n];
        if (d < -128 || d > 127) {
          why = "q - zero_point of the weight leaves int8";
          return {};
        }
        centered[i] = int8_t(d);
      }
    }
    return centered;
  }

  void runOnOperation() override {
    SmallVector<graph::MatMulOp> products;
    getOperation().walk([&](graph::MatMulOp mm) {
      if (cast<RankedTensorType>(mm.getType()).getElementType().isInteger(32))
        products.push_back(mm);
    });
    bool changed = false;
    for (graph::MatMulOp mm : products) {
      auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
      auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
      if (lhs.getRank() < 2 || rhs.getRank() != 2 || !rhs.hasStaticShape())
        continue;
      int64_t k = rhs.getDimSize(0), n = rhs.getDimSize(1);
      std::string why;
      std::vector<int8_t> w;
      int64_t width = quant::paddedPanelWidthFor(n, panel);
      if (k % 2 != 0)
        why = "K = " + std::to_string(k) + " is odd";
      else if (!width)
        why = "N = " + std::to_string(n) + " is below one 16-column panel";
      else if (magnitudeBound(mm.getLhs()) >= (1 << 15))
        why = "the left operand is not provably within 16 bits";
      else
        w = weight(mm.getRhs(), k, n, why);
      if (w.empty()) {
        mm.emitRemark() << "integer product kept as a 32-bit loop: " << why;
        continue;
      }
      quant::MatrixView view;
      view.k = k;
      view.n = n;
      std::vector<float> ones(n, 1.0f);
      quant::PackedWeight packed = quant::packQuantized(w.data(), view, ones.data(), k, width, /*pairs=*/true);
      OpBuilder b(mm);
      Value weightValue = quant::createPackedWeightConstant(b, mm.getLoc(), packed, "integer_weight");
      IntegerAttr columns = n % width ? b.getI64IntegerAttr(n) : IntegerAttr();
      auto op = graph::IntegerMatMulOp::create(b, mm.getLoc(), mm.getLhs(), weightValue, columns);
      mm.getResult().replaceAllUsesWith(op.getResult());
      mm.erase();
      changed = true;
    }
    if (changed)
      quant::eraseDeadGraphOps(getOperation()); // the weight chains left without readers
  }
};
} // namespace
} // namespace kiln
