// Building graph ops from importers without aborting on bad models, shared by every importer file.
#ifndef KILN_COMPILER_IMPORTER_IMPORTBUILDERS_H
#define KILN_COMPILER_IMPORTER_IMPORTBUILDERS_H

#include "compiler/importer/NodeContext.h"

#include "dialects/graph/IR/Graph.h"

#include "llvm/ADT/StringMap.h"

namespace kiln {

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

inline int64_t rankOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getRank();
}

/// A rank-0 constant of element type `et`.
inline mlir::Value scalarConstant(NodeContext &c, mlir::Type et, double v) {
  mlir::Attribute a = mlir::isa<mlir::FloatType>(et) ? (mlir::Attribute)mlir::FloatAttr::get(et, v)
                                                     : mlir::IntegerAttr::get(et, (int64_t)v);
  return graph::ConstantOp::create(
      c.b, c.loc, mlir::DenseElementsAttr::get(mlir::RankedTensorType::get({}, et), a));
}

/// The importers of other files, each adding its op family to the table.
void addNormalizationImporters(llvm::StringMap<NodeImporter> &t);
void addSignalImporters(llvm::StringMap<NodeImporter> &t);
void addSequenceImporters(llvm::StringMap<NodeImporter> &t);
void addPoolingImporters(llvm::StringMap<NodeImporter> &t);
void addLinearAlgebraImporters(llvm::StringMap<NodeImporter> &t);
void addSamplingImporters(llvm::StringMap<NodeImporter> &t);

} // namespace kiln

#endif
