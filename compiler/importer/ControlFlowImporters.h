// ONNX control flow resolved while importing (ControlFlowImporters.cpp): the interface GraphImporter provides.
#ifndef KILN_COMPILER_IMPORTER_CONTROLFLOWIMPORTERS_H
#define KILN_COMPILER_IMPORTER_CONTROLFLOWIMPORTERS_H

#include "compiler/importer/NodeContext.h"

namespace kiln {

/// Imports a subgraph (a branch, a loop body) into the current function.
class SubgraphImporter {
public:
  virtual ~SubgraphImporter() = default;
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

} // namespace kiln

#endif
