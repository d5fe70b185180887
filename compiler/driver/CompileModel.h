// One compilation of an ONNX model, from file to artifact (or to the IR of a phase) for one target:
// import, the target's phases, its codegen, the artifact writer. Callable more than once per
// process, so the accuracy check can compile the quantized model and its float reference.
#ifndef KILN_COMPILER_DRIVER_COMPILEMODEL_H
#define KILN_COMPILER_DRIVER_COMPILEMODEL_H

#include "compiler/pipeline/Pipeline.h"
#include "format/artifact_format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
class TargetBackend;
} // namespace kiln

namespace llvm {
class raw_ostream;
}

namespace kiln::driver {

enum class Emit { Artifact, Graph, Linalg, Bufferized, MlirLlvm, LlvmIr, Assembly };

struct CompileRequest {
  std::string modelPath;
  std::string outPath;        // the artifact (Emit::Artifact only)
  Emit emit = Emit::Artifact; // the others print the IR to `irOut`
  // Where an --emit phase's IR or code goes (compile()'s `out`, so that an in-process front end
  // such as Python gets it back); null: stdout.
  llvm::raw_ostream *irOut = nullptr;
  const TargetBackend *target = nullptr; // compiler/targets/TargetBackend.h
  std::string targetCpu = "host";        // the host program's CPU
  std::string ptxas; // GPU targets: the ptxas to use ("" = search, "none" = PTX only)
  bool cubinOnly = false; // GPU targets: keep the cubin only (--gpu-code=cubin)
  // Pipeline switches; the target sets vectorBits, compileModel the phase hooks.
  PipelineOptions options;
  int64_t maxContext = 2048;
  bool symbolicInputDims = false; // every input dim symbolic (--symbolic-input-dims)
  bool progress = false;      // a progress line on stderr
  bool notes = false;         // with --quantize: how many products were quantized, which stayed f32 and why
  std::string compilerVersion;
  artifact::QuantizationInfo quantization; // recipe to store in the artifact, when present
  bool externalWeights = false; // --weights=external: weights in the ONNX files and <out>.weights
};

// An integer input used as the indices of a Gather from a table (an embedding): ids must stay
// below `rows` (the table's extent along the gathered axis).
struct IndexBound {
  std::string input;
  int64_t rows = 0;
};

struct CompileResult {
  std::vector<IndexBound> indexBounds;
};

// Imports, runs the pipeline and writes the artifact (atomically) or prints the IR. On failure
// returns false with a one-line reason in `error` (the first diagnostic, naming the ONNX node).
bool compileModel(const CompileRequest &request, CompileResult *result, std::string *error);

} // namespace kiln::driver

#endif
