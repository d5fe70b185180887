// One compilation of an ONNX model, from file to artifact (or to the IR of a phase): kiln-compile's
// main as a function, so the accuracy check can compile the quantized model and its float
// reference in the same process.
#ifndef KILN_TOOLS_COMPILE_COMPILEMODEL_H
#define KILN_TOOLS_COMPILE_COMPILEMODEL_H

#include "compiler/pipeline/Pipeline.h"
#include "runtime/src/artifact_format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::compile {

enum class Emit { Artifact, Graph, Linalg, Bufferized, MlirLlvm, LlvmIr, Assembly };

struct CompileRequest {
  std::string modelPath;
  std::string outPath;        // the artifact (Emit::Artifact only)
  Emit emit = Emit::Artifact; // the others print the IR to stdout
  std::string targetCpu = "host";
  std::string ptxas; // --target=cuda: the ptxas to use ("" = search, "none" = PTX only)
  // Pipeline switches; compileModel sets vectorBits and the phase hooks itself.
  PipelineOptions options;
  int64_t maxContext = 2048;
  bool symbolicInputDims = false; // every input dim symbolic (--symbolic-input-dims)
  bool progress = false;      // a progress line on stderr
  bool notes = false;         // with --quantize: how many products were quantized, which stayed f32 and why
  std::string compilerVersion;
  artifact::QuantizationInfo quantization; // recipe to store in the artifact, when present
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

} // namespace kiln::compile

#endif
