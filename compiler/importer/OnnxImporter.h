// ONNX protobuf -> graph dialect: the importer's public entry point.
#ifndef KILN_COMPILER_IMPORTER_ONNXIMPORTER_H
#define KILN_COMPILER_IMPORTER_ONNXIMPORTER_H

#include "dialects/graph/IR/GraphAttrNames.h"

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

} // namespace kiln

#endif
