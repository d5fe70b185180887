// Everything a front end (kiln-compile, Python, a server) asks of one compilation, and the checks
// that refuse a bad request before anything is compiled.
#ifndef KILN_COMPILER_DRIVER_COMPILEOPTIONS_H
#define KILN_COMPILER_DRIVER_COMPILEOPTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::driver {

/// The options as a front end gives them, named and spelled as kiln-compile's flags
/// (docs/tools.md). Optional fields distinguish "not given" from a default where that matters.
struct CompileOptions {
  std::string modelPath;
  std::string outPath;       // the artifact, when `emit` is empty
  std::string emit;          // "" (an artifact) | graph | linalg | bufferized | mlir-llvm | llvm | asm
  std::string target = "x86";
  std::string targetCpu;     // the host program's CPU; "" = the target's default
  std::string gpuArch = "sm_80";
  std::string precision = "fp32";             // fp32 | fp16 | bf16
  std::optional<std::string> gpuAttention;    // fused (default) | unfused
  std::optional<int64_t> gpuAttentionSplitKeys; // default 256
  std::string ptxas;         // "" = search, "none" = PTX only
  std::string gpuCode = "ptx+cubin"; // ptx+cubin | cubin (the PTX dropped: loads on exactly gpuArch, no JIT)
  bool printIrAfterAll = false;
  std::string printIrAfter;
  std::string dumpIrDir;
  bool progress = false;     // a progress line on stderr
  bool notes = false;        // with --quantize: how many products were quantized, which stayed f32
  bool kvCache = true;
  int64_t kvBlockSize = 0;   // paged KV cache: entries per block; 0 (default): one contiguous row per sequence
  int64_t maxContext = 2048;
  bool fusion = true;
  bool memoryPlan = true;
  bool printMemoryPlan = false;
  bool channelsLast = true; // x86: convolutions NHWC (kiln-channels-last)
  bool printLayouts = false;
  std::string denormals = "flush"; // x86: flush | keep (kiln-flush-denormals)
  int64_t winogradTile = 4; // x86: largest m of F(m x m, 3x3) for 3x3 stride-1 convs (kiln-winograd-convs); 0 = off
  int64_t bandBytes = 1572864; // x86: row bands of conv chains over large maps (kiln-band-conv-chains); 0 = off
  std::string quantize = "none"; // none | int8 | int4 | int8-dynamic
  int64_t quantizeGroup = 64;
  std::string quantizeScale = "f32";
  std::vector<std::string> quantizeKeep;
  bool symbolicInputDims = false;
  std::string weights = "embedded"; // embedded | external (docs/artifact.md "External weights section")

  // The accuracy check (with --quantize): requested by checkAccuracy or by any of these.
  bool checkAccuracy = false;
  std::string calibration;
  std::string calibrationTokens;
  std::optional<uint64_t> calibrationSeed;      // default 0
  std::optional<unsigned> calibrationSamples;   // default 2
  std::optional<int64_t> calibrationLength;     // default 32
  std::vector<std::string> calibrationDims;     // NAME=SIZE
  std::optional<double> maxError, minCosine, minTop1, maxPerplexityRatio;

  // Requests that compile nothing.
  bool listOps = false;       // the ONNX ops the importer supports
  bool printPipeline = false; // each phase's passes for the target and options

  std::string compilerVersion; // recorded in the artifact; "" = this library's
};

/// Checks `options`; false with a one-line message naming the option. listOps and printPipeline
/// need only the target's options to be valid.
bool validateOptions(const CompileOptions &options, std::string *error);

struct AccuracyOptions;

/// Whether the options ask for the accuracy check (--check-accuracy or any of its settings).
bool accuracyCheckRequested(const CompileOptions &options);
/// The accuracy check's settings (after validateOptions).
AccuracyOptions accuracyOptions(const CompileOptions &options);

/// The version this library was built as ("kiln <version>").
const char *compilerVersion();

} // namespace kiln::driver

#endif
