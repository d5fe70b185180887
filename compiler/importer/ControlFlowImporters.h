// Importers that need the graph importer itself (ControlFlowImporters.cpp, GradientImporter.cpp): subgraphs, names.
#ifndef KILN_COMPILER_IMPORTER_CONTROLFLOWIMPORTERS_H
#define KILN_COMPILER_IMPORTER_CONTROLFLOWIMPORTERS_H

#include "compiler/importer/NodeContext.h"

namespace kiln {

/// What the graph importer offers importers of ops that reach beyond their
/// inputs: subgraphs (a branch, a loop body) imported into the current
/// function, and values looked up by ONNX name.
class SubgraphImporter {
public:
  virtual ~SubgraphImporter() = default;
  /// The value of ONNX name `name` in the current scope, or null.
  virtual mlir::Value lookupName(llvm::StringRef name) const = 0;
  /// Imports `graph`'s nodes with its inputs bound to `inputs` (in order); the
  /// enclosing scopes' values are visible, names it defines stay inside it.
  /// Returns its outputs, or failure with the importer's error set.
  virtual mlir::FailureOr<llvm::SmallVector<mlir::Value>> importSubgraph(const onnx::GraphProto &graph,
                                                                          llvm::ArrayRef<mlir::Value> inputs) = 0;
};

using ControlFlowImporter =
    std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(NodeContext &, SubgraphImporter &)>;

/// ONNX op type -> importer, for the control-flow ops of the default domain (If, Scan).
const llvm::StringMap<ControlFlowImporter> &controlFlowImporters();

/// Gradient (ai.onnx.preview.training): d y / d xs by reverse-mode
/// differentiation of the graph ops already imported (GradientImporter.cpp).
mlir::FailureOr<llvm::SmallVector<mlir::Value>> importGradient(NodeContext &c, SubgraphImporter &graph);

} // namespace kiln

#endif
