// What a per-op importer sees of one ONNX node: its inputs as MLIR values, typed attribute access, errors.
#ifndef KILN_COMPILER_IMPORTER_NODECONTEXT_H
#define KILN_COMPILER_IMPORTER_NODECONTEXT_H

#include "compiler/importer/ModelSource.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <optional>

namespace kiln {

class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, std::string name, mlir::OpBuilder &builder,
              mlir::Location loc, int64_t opset, ModelSource &source,
              llvm::SmallVector<mlir::Value> inputs, std::string &error)
      : node(node), name(std::move(name)), b(builder), loc(loc), opset(opset),
        source(source), inputs(std::move(inputs)), error(error) {}

  const onnx::NodeProto &node;
  std::string name; // the node's name, or "<OpType>_<index>" when it has none
  mlir::OpBuilder &b;
  mlir::Location loc;
  int64_t opset;
  ModelSource &source;
  llvm::SmallVector<mlir::Value> inputs; // null where the node omits an optional input
  std::string &error;

  /// Input `i`, or null when absent.
  mlir::Value input(size_t i) const { return i < inputs.size() ? inputs[i] : mlir::Value(); }

  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t dflt) const;
  float floatAttr(llvm::StringRef name, float dflt) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) const;

  /// Records "node 'n' (Op, opset N): msg" and returns failure.
  mlir::LogicalResult fail(const llvm::Twine &msg) const;

  /// Reads the integer values of an input that must be a constant
  /// (initializer or Constant node); fails naming `what` otherwise.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(mlir::Value v,
                                                           llvm::StringRef what) const;

  /// A 1-D i64 constant.
  mlir::Value i64Constant(llvm::ArrayRef<int64_t> values) const;
};

using NodeImporter =
    std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(NodeContext &)>;

/// ONNX op type -> importer, for the default domain.
const llvm::StringMap<NodeImporter> &nodeImporters();

// Op families imported in files of their own.
/// RNN, GRU, LSTM (RecurrentImporters.cpp), added to the default domain's table.
void registerRecurrentImporters(llvm::StringMap<NodeImporter> &table);
/// LRN, MeanVarianceNormalization (NormalizationImporters.cpp).
void addNormalizationImporters(llvm::StringMap<NodeImporter> &t);
/// Window functions, DFT, STFT, MelWeightMatrix (SignalImporters.cpp).
void addSignalImporters(llvm::StringMap<NodeImporter> &t);
/// ReverseSequence (ReverseSequenceImporter.cpp).
void addReverseSequenceImporter(llvm::StringMap<NodeImporter> &t);
/// MaxUnpool (PoolingImporters.cpp).
void addPoolingImporters(llvm::StringMap<NodeImporter> &t);
/// Det (LinearAlgebraImporters.cpp).
void addLinearAlgebraImporters(llvm::StringMap<NodeImporter> &t);
/// NonZero, Compress, Unique, NonMaxSuppression (DataDependentImporters.cpp).
void addDataDependentImporters(llvm::StringMap<NodeImporter> &t);
/// GridSample, RoiAlign (SamplingImporters.cpp).
void addSamplingImporters(llvm::StringMap<NodeImporter> &t);
/// TfIdfVectorizer (TextFeatureImporters.cpp).
void addTextFeatureImporters(llvm::StringMap<NodeImporter> &t);
// Strings family (StringImporters.cpp).
/// StringNormalizer.
void addStringImporters(llvm::StringMap<NodeImporter> &t);
/// Whether `t` (a tensor type or element type) is a string: i128 elements.
bool isStringType(mlir::Type t);
/// Whether kiln's lowering of the ONNX op `opType` is right for string inputs.
bool acceptsStringInputs(llvm::StringRef opType);
/// Cast/CastLike where one side at least is a string (graph.string_cast, or nothing for string to string).
mlir::FailureOr<llvm::SmallVector<mlir::Value>> importStringCast(NodeContext &c, mlir::Value input, mlir::Type to);
// end strings family
/// ONNX op type -> importer, for the ai.onnx.preview.training domain (TrainingImporters.cpp).
const llvm::StringMap<NodeImporter> &trainingImporters();

} // namespace kiln

#endif
