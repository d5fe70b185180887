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

/// ONNX op type -> importer, for the default domain (OpTable.cpp).
const llvm::StringMap<NodeImporter> &nodeImporters();

// The op families, one file each; each adds its ops to the default domain's table.
/// Arithmetic, comparison and logic, activations, Max/Min/Sum/Mean, Clip,
/// Where, IsNaN/IsInf, Trilu, Cast/CastLike, Identity, Dropout (ElementwiseImporters.cpp).
void addElementwiseImporters(llvm::StringMap<NodeImporter> &t);
/// Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum, TopK,
/// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (ReductionImporters.cpp).
void addReductionImporters(llvm::StringMap<NodeImporter> &t);
/// Conv, ConvTranspose (ConvolutionImporters.cpp).
void addConvolutionImporters(llvm::StringMap<NodeImporter> &t);
/// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
/// QLinearMatMul, ConvInteger, QLinearConv (QuantizationImporters.cpp).
void addQuantizationImporters(llvm::StringMap<NodeImporter> &t);
/// Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand, Tile,
/// DepthToSpace, SpaceToDepth, Shape, Size (ShapeImporters.cpp).
void addShapeImporters(llvm::StringMap<NodeImporter> &t);
/// Slice, Split, Concat, Pad (SlicingImporters.cpp).
void addSlicingImporters(llvm::StringMap<NodeImporter> &t);
/// Gather, GatherElements, GatherND, ScatterElements, Scatter, ScatterND,
/// OneHot (IndexingImporters.cpp).
void addIndexingImporters(llvm::StringMap<NodeImporter> &t);
/// Constant, ConstantOfShape, Range, EyeLike (ConstantImporters.cpp).
void addConstantImporters(llvm::StringMap<NodeImporter> &t);
/// RNN, GRU, LSTM (RecurrentImporters.cpp).
void registerRecurrentImporters(llvm::StringMap<NodeImporter> &table);
/// BatchNormalization, LayerNormalization, RMSNormalization,
/// InstanceNormalization, LRN, MeanVarianceNormalization (NormalizationImporters.cpp).
void addNormalizationImporters(llvm::StringMap<NodeImporter> &t);
/// Window functions, DFT, STFT, MelWeightMatrix (SignalImporters.cpp).
void addSignalImporters(llvm::StringMap<NodeImporter> &t);
/// ReverseSequence (ReverseSequenceImporter.cpp).
void addReverseSequenceImporter(llvm::StringMap<NodeImporter> &t);
/// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, MaxUnpool (PoolingImporters.cpp).
void addPoolingImporters(llvm::StringMap<NodeImporter> &t);
/// MatMul, Gemm, Einsum, Det (LinearAlgebraImporters.cpp).
void addLinearAlgebraImporters(llvm::StringMap<NodeImporter> &t);
/// NonZero, Compress, Unique, NonMaxSuppression (DataDependentImporters.cpp).
void addDataDependentImporters(llvm::StringMap<NodeImporter> &t);
/// Resize, Upsample, GridSample, RoiAlign (SamplingImporters.cpp).
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
