// Matching helpers shared by the graph fusion patterns.
#include "passes/fusion/FusionUtils.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace kiln::fusion {

std::optional<double> splatValue(Value v) {
  auto cst = v.getDefiningOp<graph::ConstantOp>();
  if (!cst)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  Type et = dense.getElementType();
  if (isa<FloatType>(et))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (auto it = dyn_cast<IntegerType>(et); it && it.getWidth() > 1)
    return static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

bool isConstantNear(Value v, double expected, double tolerance) {
  std::optional<double> c = splatValue(v);
  if (!c)
    return false;
  // A constant stored in a narrow float type (f16, bf16) is as close as its
  // precision allows: widen the tolerance to one ulp of that type.
  if (auto ft = dyn_cast<FloatType>(cast<ShapedType>(v.getType()).getElementType()))
    tolerance = std::max(tolerance, std::ldexp(1.0, 1 - (int)llvm::APFloat::semanticsPrecision(ft.getFloatSemantics())));
  return std::fabs(*c - expected) <= tolerance * std::max(1.0, std::fabs(expected));
}

Value otherOperand(Operation *op, Value known) {
  if (!op || op->getNumOperands() != 2)
    return {};
  if (op->getOperand(0) == known)
    return op->getOperand(1);
  if (op->getOperand(1) == known)
    return op->getOperand(0);
  return {};
}

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() >= 1 && isa<FloatType>(t.getElementType());
}

bool isLastAxisMean(Operation *op) {
  auto mean = dyn_cast_or_null<graph::ReduceMeanOp>(op);
  if (!mean || mean.getKeepdims() != 1)
    return false;
  int64_t rank = cast<RankedTensorType>(mean.getInput().getType()).getRank();
  ArrayRef<int64_t> axes = mean.getAxes();
  if (axes.empty())
    return rank == 1;
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

bool usedOnlyBy(Value v, ArrayRef<Operation *> allowed) {
  for (Operation *user : v.getUsers())
    if (!llvm::is_contained(allowed, user))
      return false;
  return true;
}

bool keepsType(Operation *op, Value v) {
  return op && op->getNumResults() == 1 && op->getResult(0).getType() == v.getType();
}

Value squaredOperand(Operation *op) {
  if (auto pow = dyn_cast_or_null<graph::PowOp>(op))
    return isConstantNear(pow.getRhs(), 2.0, kExact) && keepsType(op, pow.getLhs()) ? pow.getLhs() : Value();
  if (auto mul = dyn_cast_or_null<graph::MulOp>(op))
    return mul.getLhs() == mul.getRhs() ? mul.getLhs() : Value();
  return {};
}

Value reciprocalOperand(Operation *op) {
  if (auto r = dyn_cast_or_null<graph::ReciprocalOp>(op))
    return r.getInput();
  if (auto d = dyn_cast_or_null<graph::DivOp>(op))
    return isConstantNear(d.getLhs(), 1.0, kExact) && keepsType(op, d.getRhs()) ? d.getRhs() : Value();
  return {};
}

bool isLastAxisParameter(Value p, Value normalized) {
  auto pt = dyn_cast<RankedTensorType>(p.getType());
  auto nt = cast<RankedTensorType>(normalized.getType());
  if (!pt || pt.getElementType() != nt.getElementType() || pt.getRank() > nt.getRank())
    return false;
  for (int64_t i = 0; i + 1 < pt.getRank(); ++i)
    if (pt.getDimSize(i) != 1)
      return false;
  return true;
}

std::optional<RootMeanSquare> matchRootMeanSquare(Value s, Operation *consumer) {
  auto sqrt = s.getDefiningOp<graph::SqrtOp>();
  if (!sqrt || !usedOnlyBy(s, {consumer}))
    return std::nullopt;
  // The epsilon sits inside the square root, added to the mean.
  auto add = sqrt.getInput().getDefiningOp<graph::AddOp>();
  if (!add || !usedOnlyBy(add.getResult(), {sqrt}))
    return std::nullopt;
  for (auto [v, e] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
    std::optional<double> eps = splatValue(e);
    auto mean = v.getDefiningOp<graph::ReduceMeanOp>();
    if (!eps || *eps < 0 || !mean || !keepsType(add, v) || !isLastAxisMean(mean) || !usedOnlyBy(v, {add}))
      continue;
    Operation *sq = mean.getInput().getDefiningOp();
    Value base = squaredOperand(sq);
    if (!base || !usedOnlyBy(sq->getResult(0), {mean}))
      continue;
    return RootMeanSquare{base, *eps, sq};
  }
  return std::nullopt;
}

SmallVector<DivisionBy, 2> divisions(Operation *root) {
  SmallVector<DivisionBy, 2> out;
  if (auto div = dyn_cast<graph::DivOp>(root)) {
    out.push_back({div.getLhs(), div.getRhs(), nullptr});
  } else if (auto mul = dyn_cast<graph::MulOp>(root)) {
    for (auto [v, r] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())})
      if (Value s = reciprocalOperand(r.getDefiningOp()); s && usedOnlyBy(r, {root}))
        out.push_back({v, s, r.getDefiningOp()});
  }
  return out;
}

} // namespace kiln::fusion
