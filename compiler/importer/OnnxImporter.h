// ONNX protobuf -> graph dialect: the importer's public entry point.
#ifndef KILN_COMPILER_IMPORTER_ONNXIMPORTER_H
#define KILN_COMPILER_IMPORTER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace kiln {

/// Keeps the bytes that weights in the imported module point at (the parsed
/// model and memory-mapped external data files). Must outlive the module.
class ModelSource;

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::shared_ptr<ModelSource> source;
};

/// Tensors with more elements than this become dense resources (referenced,
/// never copied) and later weights of the artifact; smaller ones stay inline
/// so that folding and shape computations can read them.
constexpr int64_t kInlineConstantLimit = 64;

struct ImportOptions {
  /// Every graph input's dims become symbolic (`?`, keeping a dim_param's
  /// name, anonymous otherwise), as if the model declared no static sizes:
  /// the whole compiler then works from run-time shapes. The conformance
  /// runner's dynamic mode uses it to check that static and dynamic builds
  /// agree.
  bool symbolicInputDims = false;
};

/// Imports `path`. On failure returns an empty module and sets `error` to one
/// line naming what is wrong (node, op, opset, file).
ImportedModel importOnnxFile(mlir::MLIRContext &context,
                             const std::string &path, std::string &error,
                             const ImportOptions &options = {});

/// The same from a serialized ModelProto held in memory (`bytes` need only live
/// for the call); external data files are looked up in `modelDir`, and
/// `displayName` names the model in errors.
ImportedModel importOnnxBytes(mlir::MLIRContext &context, llvm::StringRef bytes,
                              const std::string &modelDir, const std::string &displayName,
                              std::string &error, const ImportOptions &options = {});

/// Attribute names the importer puts on the module and on @main's arguments
/// and results; the artifact writer reads them back.
namespace attrs {
constexpr const char *kOpset = "kiln.opset";
constexpr const char *kSourceSha256 = "kiln.source_sha256";
constexpr const char *kProducer = "kiln.producer";
constexpr const char *kName = "kiln.name";     // ONNX tensor name
constexpr const char *kDtype = "kiln.dtype";   // ONNX TensorProto.DataType
constexpr const char *kDims = "kiln.dims";     // dim_param names ("" if static)
constexpr const char *kWeights = "kiln.weights"; // module: [ElementsAttr...]
constexpr const char *kWeightNames = "kiln.weight_names";
// Set by kiln-pack-matmul-weights: per weight, [] (as imported) or [K, N, B] (stored as [N/B, K, B]).
constexpr const char *kWeightLayouts = "kiln.weight_layouts";
// Set by kiln-kv-cache-in-place on @main's arguments.
constexpr const char *kKvCache = "kiln.kv_cache";       // a KV cache input: the axis entries are appended on
constexpr const char *kKvPosition = "kiln.kv_position"; // the scalar input: entries already in every cache
constexpr const char *kMaxPositions = "kiln.max_positions"; // module: rows of a learned position table
} // namespace attrs

} // namespace kiln

#endif
