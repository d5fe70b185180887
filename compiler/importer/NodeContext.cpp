// Attribute access and error reporting for per-op importers.
#include "compiler/importer/NodeContext.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {

const onnx::AttributeProto *NodeContext::attr(llvm::StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(llvm::StringRef name, int64_t dflt) const {
  const auto *a = attr(name);
  return a && a->has_i() ? a->i() : dflt;
}

float NodeContext::floatAttr(llvm::StringRef name, float dflt) const {
  const auto *a = attr(name);
  return a && a->has_f() ? a->f() : dflt;
}

std::string NodeContext::stringAttr(llvm::StringRef name,
                                    llvm::StringRef dflt) const {
  const auto *a = attr(name);
  return a && a->has_s() ? a->s() : dflt.str();
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(llvm::StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

LogicalResult NodeContext::fail(const llvm::Twine &msg) const {
  error = "node '" + name + "' (" + node.op_type() + ", opset " +
          std::to_string(opset) + "): " + msg.str();
  return failure();
}

FailureOr<SmallVector<int64_t>>
NodeContext::constantInts(Value v, llvm::StringRef what) const {
  DenseIntElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr))) {
    (void)fail("input '" + what + "' must be a constant (initializer or Constant node)");
    return failure();
  }
  SmallVector<int64_t> values;
  for (const APInt &x : attr.getValues<APInt>())
    values.push_back(x.getSExtValue());
  return values;
}

Value NodeContext::i64Constant(llvm::ArrayRef<int64_t> values) const {
  auto type = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  return graph::ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, values));
}

} // namespace kiln
