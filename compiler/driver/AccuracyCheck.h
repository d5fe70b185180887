// The accuracy check of kiln-compile --quantize: runs the quantized artifact and the float
// artifact of the same model through the runtime on the same inputs and measures how far apart
// their outputs are (and, for decoders, their next-token predictions and perplexity).
#ifndef KILN_COMPILER_DRIVER_ACCURACYCHECK_H
#define KILN_COMPILER_DRIVER_ACCURACYCHECK_H

#include "compiler/driver/CompileModel.h"
#include "format/artifact_format.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::driver {

struct AccuracyOptions {
  // Inputs: a directory of test_data_set_*/input_*.pb folders or of <input name>.pb files;
  // empty: `samples` sets of seeded random inputs.
  std::string calibrationDir;
  // Decoders: whitespace-separated token ids scored teacher-forced (perplexity, top-1).
  std::string tokensFile;
  uint64_t seed = 0;
  uint32_t samples = 2;           // random input sets, or random token sequences for decoders
  int64_t randomTokens = 32;      // length of each random token sequence (decoders)
  std::map<std::string, int64_t> dims; // values of symbolic dims for random inputs, by symbol
  std::vector<IndexBound> indexBounds; // integer inputs that index a table (from the compile)
  // Thresholds; NaN: not checked.
  double maxError = NAN;           // max relative error of every output
  double minCosine = NAN;          // cosine similarity of every output
  double minTop1 = NAN;            // decoders: top-1 agreement
  double maxPerplexityRatio = NAN; // decoders: quantized perplexity / float perplexity
};

// The value a symbolic dim gets in random inputs when --calibration-dim does not name it:
// 1 for batch-like dims (a symbol containing "batch", "N", or an unnamed leading dim), else 8.
int64_t defaultSymbolicDim(const std::string &symbol, size_t axis);

// Checks what can be checked before compiling: the calibration dir and token file exist.
bool checkAccuracyInputs(const AccuracyOptions &options, std::string *error);

// Loads both artifacts, runs them and fills `report` (inputs, samples, per output figures, decoder
// figures). Returns false with a one-line reason on bad calibration data or a failing run.
bool measureAccuracy(const std::string &floatArtifact, const std::string &quantizedArtifact,
                     const AccuracyOptions &options, artifact::AccuracyReport *report, std::string *error);

// Writes the artifact at `quantizedArtifact` to `outPath` (atomically) with `report` added to its
// quantization section; code and weights are copied unchanged.
bool storeAccuracyReport(const std::string &quantizedArtifact, const std::string &outPath,
                         const artifact::AccuracyReport &report, std::string *error);

// One message per exceeded threshold, naming the output and the figure against the threshold.
std::vector<std::string> thresholdViolations(const artifact::AccuracyReport &report, const AccuracyOptions &options);

// The report as a small table for people (kiln-compile prints it to stdout).
std::string formatReport(const artifact::AccuracyReport &report, const std::string &mode);

} // namespace kiln::driver

#endif
