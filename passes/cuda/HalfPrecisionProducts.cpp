// --precision=fp16|bf16: matrix products by constant f32 weights run in half precision, weights stored so.
//
// Decoding reads every weight once per token, so halving their bytes nearly halves its time, and
// half-precision products run on tensor cores. The weight is rounded once at compile time; the
// activation is cast before the product and the result cast back, so the rest of the graph (norms,
// softmax, residuals) stays in f32. kiln's CUDA lowering accumulates half products in f32.
#include "passes/cuda/Passes.h"
#include "passes/quant/QuantUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {
#define GEN_PASS_DEF_HALFPRECISIONPRODUCTSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct HalfPrecisionProductsPass : impl::HalfPrecisionProductsPassBase<HalfPrecisionProductsPass> {
  using HalfPrecisionProductsPassBase::HalfPrecisionProductsPassBase;

  /// One rounded copy per weight, however many products read it.
  llvm::DenseMap<Attribute, Value> rounded;

  /// `weight` (a constant f32 tensor) rounded to `half`, or null when it is none.
  Value roundedWeight(OpBuilder &b, Value weight, Type half) {
    auto cst = weight.getDefiningOp<graph::ConstantOp>();
    auto type = cst ? dyn_cast<RankedTensorType>(cst.getType()) : RankedTensorType();
    if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
      return {};
    if (auto it = rounded.find(cst.getValue()); it != rounded.end())
      return it->second;
    std::vector<char> scratch;
    ArrayRef<char> bytes;
    if (!graph::constantBytes(cst.getValue(), scratch, bytes) ||
        bytes.size() != size_t(type.getNumElements()) * sizeof(float))
      return {};
    std::vector<uint16_t> bits(size_t(type.getNumElements()));
    const float *values = reinterpret_cast<const float *>(bytes.data());
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = quant::toHalfBits(values[i], half.isBF16());
    // Placed where the f32 constant is, so every product of the weight can use it.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(cst);
    std::string name = graph::firstName(cst.getLoc()) + (half.isBF16() ? ".bf16" : ".f16");
    Value v = quant::createResourceConstant(
        b, cst.getLoc(), RankedTensorType::get(type.getShape(), half),
        ArrayRef<char>(reinterpret_cast<const char *>(bits.data()), bits.size() * sizeof(uint16_t)), name);
    rounded[cst.getValue()] = v;
    return v;
  }

  static Value castTo(OpBuilder &b, Location loc, Value v, Type element) {
    auto t = cast<RankedTensorType>(v.getType());
    return graph::CastOp::create(b, loc, t.clone(element), v, TypeAttr::get(element));
  }

  void runOnOperation() override {
    if (type != "f16" && type != "bf16") {
      getOperation().emitError("kiln-half-precision-products: type must be f16 or bf16, not '" + type + "'");
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    Type half = type == "f16" ? Type(b.getF16Type()) : Type(b.getBF16Type());
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<graph::MatMulOp, graph::GemmOp>(op))
        products.push_back(op);
    });
    for (Operation *op : products) {
      // The weight is operand 1 (MatMul's rhs, Gemm's B); A, and Gemm's C, are cast.
      auto result = cast<RankedTensorType>(op->getResult(0).getType());
      if (!result.getElementType().isF32())
        continue;
      Value weight = roundedWeight(b, op->getOperand(1), half);
      if (!weight)
        continue;
      Value old = op->getOperand(1);
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      op->setOperand(0, castTo(b, loc, op->getOperand(0), half));
      op->setOperand(1, weight);
      if (op->getNumOperands() > 2)
        op->setOperand(2, castTo(b, loc, op->getOperand(2), half));
      op->getResult(0).setType(result.clone(half));
      b.setInsertionPointAfter(op);
      Value back = castTo(b, loc, op->getResult(0), b.getF32Type());
      op->getResult(0).replaceAllUsesExcept(back, back.getDefiningOp());
      if (Operation *def = old.getDefiningOp(); def && def->use_empty())
        def->erase();
    }
  }
};

} // namespace
} // namespace kiln
