// Gradient (ai.onnx.preview.training): reverse-mode differentiation of the graph ops between xs and y, built as graph ops.
//
// The Gradient node names y and the xs; the ops computing y from them are
// already imported. Walking the function body backwards from y's producer,
// each op on a path from an x passes its result's gradient to its operands
// (summed where a value is used twice, reduced over broadcast axes), starting
// from ones shaped like y. The elementwise arithmetic ops are differentiable
// here; any other op on such a path is an error naming it.
#include "compiler/importer/ControlFlowImporters.h"

#include "compiler/importer/OpCreate.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// A constant like `type` (static shape) filled with `v`.
Value filled(NodeContext &c, RankedTensorType type, double v) {
  Type et = type.getElementType();
  Attribute a = isa<FloatType>(et) ? (Attribute)FloatAttr::get(et, v) : IntegerAttr::get(et, (int64_t)v);
  return ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(type, a));
}

/// `g` (shaped like a broadcast result) summed back to `operand`'s shape.
FailureOr<Value> unbroadcast(NodeContext &c, Value g, Value operand) {
  auto gt = cast<RankedTensorType>(g.getType()), ot = cast<RankedTensorType>(operand.getType());
  if (gt.getShape() == ot.getShape())
    return g;
  if (!gt.hasStaticShape() || !ot.hasStaticShape())
    return c.fail("unsupported: the gradient of a broadcast with dynamic shapes");
  int64_t lead = gt.getRank() - ot.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < gt.getRank(); ++i)
    if (i < lead || (ot.getDimSize(i - lead) == 1 && gt.getDimSize(i) != 1))
      axes.push_back(i);
  auto summed = create<ReduceSumOp>(c, g, axes, (int64_t)1);
  if (failed(summed))
    return failure();
  return create<ReshapeOp>(c, *summed, c.i64Constant(ot.getShape()), (int64_t)0);
}

} // namespace

FailureOr<SmallVector<Value>> importGradient(NodeContext &c, SubgraphImporter &graph) {
  std::string yName = c.stringAttr("y", "");
  auto xNames = c.attr("xs");
  if (yName.empty() || !xNames || xNames->strings_size() == 0)
    return c.fail("attributes 'y' and 'xs' are required");
  Value y = graph.lookupName(yName);
  if (!y)
    return c.fail("y '" + yName + "' is not computed before the node");
  SmallVector<Value> xs;
  for (const std::string &name : xNames->strings()) {
    Value x = graph.lookupName(name);
    if (!x)
      return c.fail("x '" + name + "' is not a value of the graph");
    xs.push_back(x);
  }
  auto yt = cast<RankedTensorType>(y.getType());
  if (!isa<FloatType>(yt.getElementType()) || !yt.hasStaticShape())
    return c.fail("unsupported: y must be a float tensor of static shape");

  // The values that depend on an x, in program order: only their ops are differentiated.
  llvm::DenseSet<Value> dependent(xs.begin(), xs.end());
  Operation *last = y.getDefiningOp();
  Block *body = c.b.getInsertionBlock();
  SmallVector<Operation *> path;
  if (last) {
    for (Operation &op : *body) {
      if (llvm::any_of(op.getOperands(), [&](Value v) { return dependent.contains(v); })) {
        for (Value r : op.getResults())
          dependent.insert(r);
        path.push_back(&op);
      }
      if (&op == last)
        break;
    }
  }

  llvm::DenseMap<Value, Value> grads;
  grads[y] = filled(c, yt, 1.0);
  auto accumulate = [&](Value operand, FailureOr<Value> g) -> LogicalResult {
    if (failed(g))
      return failure();
    if (!dependent.contains(operand))
      return success();
    auto shaped = unbroadcast(c, *g, operand);
    if (failed(shaped))
      return failure();
    auto it = grads.find(operand);
    if (it == grads.end()) {
      grads[operand] = *shaped;
      return success();
    }
    auto sum = create<AddOp>(c, it->second, *shaped);
    if (failed(sum))
      return failure();
    it->second = *sum;
    return success();
  };
  for (Operation *op : llvm::reverse(path)) {
    if (op->getNumResults() != 1 || !grads.count(op->getResult(0)))
      continue;
    Value g = grads[op->getResult(0)];
    LogicalResult ok = success();
    if (isa<AddOp>(op)) {
      ok = succeeded(accumulate(op->getOperand(0), g)) ? accumulate(op->getOperand(1), g) : failure();
    } else if (isa<SubOp>(op)) {
      if (succeeded(accumulate(op->getOperand(0), g)))
        ok = accumulate(op->getOperand(1), create<NegOp>(c, g));
      else
        ok = failure();
    } else if (isa<MulOp>(op)) {
      Value a = op->getOperand(0), b = op->getOperand(1);
      if (succeeded(accumulate(a, create<MulOp>(c, g, b))))
        ok = accumulate(b, create<MulOp>(c, g, a));
      else
        ok = failure();
    } else if (isa<DivOp>(op)) {
      // d(a/b)/da = 1/b, d(a/b)/db = -(a/b)/b.
      Value b = op->getOperand(1), q = op->getResult(0);
      if (succeeded(accumulate(op->getOperand(0), create<DivOp>(c, g, b)))) {
        auto qb = create<DivOp>(c, q, b);
        auto t = failed(qb) ? FailureOr<Value>(failure()) : create<MulOp>(c, g, *qb);
        ok = accumulate(b, failed(t) ? t : create<NegOp>(c, *t));
      } else {
        ok = failure();
      }
    } else if (isa<NegOp>(op)) {
      ok = accumulate(op->getOperand(0), create<NegOp>(c, g));
    } else {
      return c.fail("unsupported: the gradient through '" + op->getName().getStringRef() + "'");
    }
    if (failed(ok))
      return failure();
  }
  SmallVector<Value> results;
  for (Value x : xs) {
    auto it = grads.find(x);
    auto xt = cast<RankedTensorType>(x.getType());
    if (it != grads.end()) {
      results.push_back(it->second);
    } else if (xt.hasStaticShape()) {
      results.push_back(filled(c, xt, 0.0)); // y does not depend on x
    } else {
      return c.fail("unsupported: a zero gradient of dynamic shape");
    }
  }
  return results;
}

} // namespace kiln
