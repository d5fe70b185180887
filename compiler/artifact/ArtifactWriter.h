// Collects an artifact's metadata from the compiled module and writes the file.
#ifndef KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
#define KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H

#include "format/artifact_format.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln {

/// What the artifact records about its code, whatever the target: the host program's triple, CPU
/// and the ISA features it may use (checked by the runtime before loading), and a GPU target's
/// device code.
struct ArtifactTarget {
  std::string triple, cpu;
  std::vector<std::string> cpuFeatures;
  /// GPU targets: arch, the PTX and (when ptxas ran) the cubin. The kernel table then comes from
  /// the module's `kiln.cuda_kernels` (kiln-lower-gpu-launches).
  artifact::CudaInfo cuda;
};

struct ArtifactInputs {
  mlir::ModuleOp module;              // after the full pipeline (LLVM dialect)
  std::string code;                   // the shared object
  ArtifactTarget target;
  std::vector<std::string> phases;    // pipeline phases run
  std::string compilerVersion;
  int64_t maxContext = 2048;          // default KV cache capacity of decoders
  artifact::QuantizationInfo quantization; // the weight quantization recipe, stored when present
  /// Whether weight bytes lie in a memory-mapped file (then streamed and released page by page).
  std::function<bool(const void *, size_t)> isFileBacked;
  /// --weights=external: a weight whose bytes are a 64-byte-aligned range of an ONNX external data
  /// file (as `locateExternal` finds it, relative to `modelDir`) is recorded by reference; the
  /// others (transformed, inline, unaligned) go to the kiln weights file `<path>.weights`.
  bool externalWeights = false;
  std::string modelDir;
  std::function<bool(const void *, size_t, std::string &, uint64_t &)> locateExternal;
};

/// Records @main's input/output signature (names, dtypes, shapes, dim names)
/// as the module attribute `kiln.signature`, after the graph phase (dims
/// tied, weights outlined) and before lowering rewrites @main.
void recordSignature(mlir::ModuleOp module);

/// Writes the artifact to `path`; weights are streamed from the module's
/// `kiln.weights` attribute (their bytes still live in the mapped model).
mlir::LogicalResult writeModelArtifact(const ArtifactInputs &inputs,
                                       const std::string &path, std::string &error);

} // namespace kiln

#endif
