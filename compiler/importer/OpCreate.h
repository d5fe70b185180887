// Building graph ops from an importer: result types inferred without aborting, folded as they are built.
#ifndef KILN_COMPILER_IMPORTER_OPCREATE_H
#define KILN_COMPILER_IMPORTER_OPCREATE_H

#include "compiler/importer/NodeContext.h"

#include "dialects/graph/IR/Graph.h"

namespace kiln {

/// What an importer returns: one value per node output, or failure.
using Results = mlir::FailureOr<llvm::SmallVector<mlir::Value>>;

/// Creates OpTy from builder arguments, inferring its result type without the
/// fatal error that ODS builders raise when inference fails: a malformed
/// model must give an error, not an abort.
/// (NumResults: how many results OpTy has; their types are inferred below,
/// the builder gets placeholders.)
template <typename OpTy, unsigned NumResults = 1, typename... Args>
mlir::FailureOr<mlir::Operation *> createOperation(NodeContext &c, Args &&...args) {
  mlir::OperationState state(c.loc, OpTy::getOperationName());
  if constexpr (NumResults == 1)
    OpTy::build(c.b, state, c.b.getNoneType(), std::forward<Args>(args)...);
  else
    OpTy::build(c.b, state,
                mlir::TypeRange(llvm::SmallVector<mlir::Type>(NumResults, c.b.getNoneType())),
                std::forward<Args>(args)...);
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(OpTy::inferReturnTypes(
          c.b.getContext(), state.location, state.operands,
          state.attributes.getDictionary(c.b.getContext()),
          state.getRawProperties(), state.regions, types))) {
    // Shape inference reported why through a diagnostic, which the importer
    // captured as "node 'n': why"; say it in the node's own error line.
    std::string why = c.error.empty() ? "invalid operands or attributes" : c.error;
    size_t prefix = why.rfind("node '", 0) == 0 ? why.find("': ") : std::string::npos;
    if (prefix != std::string::npos)
      why = why.substr(prefix + 3);
    c.error.clear();
    (void)c.fail(why);
    return mlir::failure();
  }
  state.types.assign(types.begin(), types.end());
  return c.b.create(state);
}

template <typename OpTy, typename... Args>
mlir::FailureOr<mlir::Value> create(NodeContext &c, Args &&...args) {
  auto created = createOperation<OpTy>(c, std::forward<Args>(args)...);
  if (mlir::failed(created))
    return mlir::failure();
  mlir::Operation *op = *created;
  // Fold as we go: shape arithmetic on constants becomes constants at once,
  // so that the ops consuming it (Reshape, ConstantOfShape, ...) get static types.
  llvm::SmallVector<mlir::OpFoldResult> folded;
  if (op->getNumResults() == 1 && !mlir::isa<graph::ConstantOp>(op) &&
      mlir::succeeded(op->fold(folded)) && folded.size() == 1) {
    mlir::Value replacement;
    if (auto v = llvm::dyn_cast<mlir::Value>(folded[0]))
      replacement = v;
    else if (auto elems = llvm::dyn_cast<mlir::ElementsAttr>(llvm::cast<mlir::Attribute>(folded[0]));
             elems && elems.getType() == op->getResult(0).getType())
      replacement = graph::ConstantOp::create(c.b, c.loc, elems);
    if (replacement) {
      op->erase();
      return replacement;
    }
  }
  return op->getResult(0);
}

inline Results single(mlir::FailureOr<mlir::Value> v) {
  if (mlir::failed(v))
    return mlir::failure();
  return llvm::SmallVector<mlir::Value>{*v};
}

/// Checks that required inputs are present.
inline mlir::LogicalResult require(NodeContext &c, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!c.input(i))
      return c.fail("missing required input " + llvm::Twine(i));
  return mlir::success();
}

inline int64_t rankOf(mlir::Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()).getRank(); }

/// A rank-0 constant of element type `et`.
inline mlir::Value scalarConstant(NodeContext &c, mlir::Type et, double v) {
  mlir::Attribute a = mlir::isa<mlir::FloatType>(et) ? (mlir::Attribute)mlir::FloatAttr::get(et, v)
                                                     : mlir::IntegerAttr::get(et, (int64_t)v);
  return graph::ConstantOp::create(c.b, c.loc,
                                   mlir::DenseElementsAttr::get(mlir::RankedTensorType::get({}, et), a));
}

/// Builds a node's composition op by op and keeps the first failure: once an
/// op fails, later ones are skipped (null) and `ok` is false, so importers that
/// compose many ops read like their formulas. The error is recorded on the node
/// by `create`. `et` is the element type of `scalar` constants.
struct Emitter {
  NodeContext &c;
  mlir::Type et;
  bool ok = true;

  template <typename OpTy, typename... Args> mlir::Value op(Args &&...args) {
    if (!ok)
      return {};
    auto r = create<OpTy>(c, std::forward<Args>(args)...);
    if (mlir::failed(r)) {
      ok = false;
      return {};
    }
    return *r;
  }
  mlir::Value scalar(double v) {
    auto type = mlir::RankedTensorType::get({}, et);
    return graph::ConstantOp::create(c.b, c.loc, mlir::DenseElementsAttr::get(type, c.b.getFloatAttr(et, v)));
  }
  mlir::Value add(mlir::Value a, mlir::Value b) { return op<graph::AddOp>(a, b); }
  mlir::Value sub(mlir::Value a, mlir::Value b) { return op<graph::SubOp>(a, b); }
  mlir::Value mul(mlir::Value a, mlir::Value b) { return op<graph::MulOp>(a, b); }
  /// x[start:end] along `axis`.
  mlir::Value slice(mlir::Value x, int64_t axis, int64_t start, int64_t end) {
    return op<graph::SliceOp>(x, llvm::SmallVector<int64_t>{start}, llvm::SmallVector<int64_t>{end},
                              llvm::SmallVector<int64_t>{axis}, llvm::SmallVector<int64_t>{1});
  }
  /// x[index] along `axis`, that axis removed (a unit axis is only squeezed,
  /// which keeps constants constant).
  mlir::Value pick(mlir::Value x, int64_t axis, int64_t index) {
    if (!ok)
      return {};
    bool whole = index == 0 && mlir::cast<mlir::RankedTensorType>(x.getType()).getDimSize(axis) == 1;
    return op<graph::SqueezeOp>(whole ? x : slice(x, axis, index, index + 1), llvm::SmallVector<int64_t>{axis});
  }
  mlir::Value unsqueeze(mlir::Value x, llvm::SmallVector<int64_t> axes) {
    return op<graph::UnsqueezeOp>(x, axes);
  }
  mlir::Value concat(llvm::ArrayRef<mlir::Value> parts, int64_t axis) {
    if (parts.size() == 1)
      return parts[0];
    return op<graph::ConcatOp>(llvm::SmallVector<mlir::Value>(parts), axis);
  }
  mlir::Value transpose(mlir::Value x, llvm::SmallVector<int64_t> perm) {
    return op<graph::TransposeOp>(x, perm);
  }
  /// a * b^T (+ bias when given): the weights stay in ONNX's [rows, input] order.
  mlir::Value gemmT(mlir::Value a, mlir::Value b, mlir::Value bias) {
    return op<graph::GemmOp>(a, b, bias, c.b.getF32FloatAttr(1.0f), c.b.getF32FloatAttr(1.0f),
                             c.b.getI64IntegerAttr(0), c.b.getI64IntegerAttr(1));
  }
};

} // namespace kiln

#endif
