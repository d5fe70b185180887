// ONNX sequence ops resolved while importing (SequenceImporters.cpp): the interface GraphImporter uses.
#ifndef KILN_COMPILER_IMPORTER_SEQUENCEIMPORTERS_H
#define KILN_COMPILER_IMPORTER_SEQUENCEIMPORTERS_H

#include "compiler/importer/NodeContext.h"

namespace kiln {

/// A sequence known while importing: its elements, in order.
using SequenceElements = llvm::SmallVector<mlir::Value>;

/// What a sequence op gives: a sequence (its elements) or tensors (one per output).
struct SequenceResult {
  bool isSequence = false;
  llvm::SmallVector<mlir::Value> values;
};

/// Imports one sequence op. `sequences[i]` is input i's elements when that
/// input is a sequence (the context's input is then null), else null.
using SequenceImporter = std::function<mlir::FailureOr<SequenceResult>(
    NodeContext &, llvm::ArrayRef<const SequenceElements *> sequences)>;

/// ONNX op type -> importer, for the sequence ops of the default domain.
const llvm::StringMap<SequenceImporter> &sequenceImporters();

} // namespace kiln

#endif
