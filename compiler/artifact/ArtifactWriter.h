// Collects an artifact's metadata from the compiled module and writes the file.
#ifndef KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
#define KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H

#include "compiler/targets/x86/X86Target.h"
#include "format/artifact_format.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln {

struct ArtifactInputs {
  mlir::ModuleOp module;              // after the full pipeline (LLVM dialect)
  std::string code;                   // the shared object
  X86TargetInfo target;
  std::vector<std::string> phases;    // pipeline phases run
  std::string compilerVersion;
  int64_t maxContext = 2048;          // default KV cache capacity of decoders
  artifact::QuantizationInfo quantization; // the weight quantization recipe, stored when present
  /// --target=cuda: arch, the PTX and (when ptxas ran) the cubin. The kernel table then comes from
  /// the module's `kiln.cuda_kernels` (kiln-lower-gpu-launches).
  artifact::CudaInfo cuda;
  /// Whether weight bytes lie in a memory-mapped file (then streamed and released page by page).
  std::function<bool(const void *, size_t)> isFileBacked;
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
