// The compile request's flow: validation, the requests that compile nothing, one compile, or the
// quantized and float compiles of the accuracy check.
#include "compiler/driver/Driver.h"

#include "compiler/driver/AccuracyCheck.h"
#include "compiler/driver/CompileModel.h"
#include "compiler/driver/OpList.h"
#include "compiler/targets/TargetBackend.h"

#include <cstdio>
#include <map>
#include <unistd.h>

namespace kiln::driver {
namespace {

/// The request for the compile itself (the float reference of the accuracy check derives from it).
CompileRequest makeRequest(const CompileOptions &o, const TargetBackend &target) {
  static const std::map<std::string, Emit> emits = {
      {"", Emit::Artifact},          {"graph", Emit::Graph}, {"linalg", Emit::Linalg}, {"bufferized", Emit::Bufferized},
      {"mlir-llvm", Emit::MlirLlvm}, {"llvm", Emit::LlvmIr}, {"asm", Emit::Assembly}};
  CompileRequest request;
  request.modelPath = o.modelPath;
  request.outPath = o.outPath;
  request.emit = emits.at(o.emit);
  request.target = &target;
  request.targetCpu = o.targetCpu.empty() ? target.defaultHostCpu() : o.targetCpu;
  request.maxContext = o.maxContext;
  request.symbolicInputDims = o.symbolicInputDims;
  request.progress = o.progress;
  request.notes = o.notes;
  request.compilerVersion = o.compilerVersion.empty() ? compilerVersion() : o.compilerVersion;
  request.ptxas = o.ptxas;
  request.cubinOnly = o.gpuCode == "cubin";
  request.externalWeights = o.weights == "external";
  PipelineOptions &p = request.options;
  p.gpuArch = o.gpuArch;
  p.precision = o.precision == "fp16" ? "f16" : o.precision == "bf16" ? "bf16" : "";
  p.gpuAttention = o.gpuAttention.value_or("fused") == "fused";
  p.gpuAttentionSplitKeys = o.gpuAttentionSplitKeys.value_or(256);
  p.printIrAfterAll = o.printIrAfterAll;
  p.printIrAfter = o.printIrAfter;
  p.dumpIrDir = o.dumpIrDir;
  p.kvCache = o.kvCache;
  p.kvBlockSize = o.kvBlockSize;
  p.fuse = o.fusion;
  p.planMemory = o.memoryPlan;
  p.printMemoryPlan = o.printMemoryPlan;
  p.channelsLast = o.channelsLast;
  p.printLayouts = o.printLayouts;
  p.winogradTile = o.winogradTile;
  p.bandBytes = o.bandBytes;
  p.flushDenormals = o.denormals == "flush";
  p.quantize = parseQuantizeMode(o.quantize).value_or(QuantizeMode::None);
  p.quantizeGroup = o.quantizeGroup;
  p.quantizeF16Scales = o.quantizeScale == "f16";
  p.quantizeKeep = o.quantizeKeep;
  if (p.quantize != QuantizeMode::None) {
    // The recipe goes into the artifact whether or not the accuracy check runs.
    artifact::QuantizationInfo &recipe = request.quantization;
    recipe.present = true;
    recipe.mode = quantizeModeName(p.quantize);
    recipe.groupSize = p.quantize == QuantizeMode::Int4 ? uint32_t(p.quantizeGroup) : 0; // int8: per channel
    recipe.scaleType = o.quantizeScale;
    recipe.keep = o.quantizeKeep;
  }
  return request;
}

/// The quantized artifact and its float reference compiled, run and compared; the quantized one
/// written to the output with the report, or refused.
bool compileChecked(const CompileOptions &options, const CompileRequest &request, llvm::raw_ostream &out,
                    std::string *error) {
  // Both artifacts go to temporary files next to the output (same file system as the final
  // rename); whatever happens, they are removed on the way out.
  struct TempFiles {
    std::vector<std::string> paths;
    ~TempFiles() {
      for (const auto &p : paths)
        std::remove(p.c_str());
    }
  } temps;
  const std::string &outPath = request.outPath;
  const std::string pid = std::to_string(::getpid());
  const std::string quantPath = outPath + ".quantized." + pid + ".tmp", floatPath = outPath + ".float." + pid + ".tmp";
  temps.paths = {quantPath, floatPath};
  // A failed check must not leave an earlier artifact at -o for a build to pick up.
  auto refuse = [&](const std::string &msg) {
    std::remove(outPath.c_str());
    *error = msg;
    return false;
  };

  CompileResult compiled;
  CompileRequest quantized = request;
  quantized.outPath = quantPath;
  if (!compileModel(quantized, &compiled, error))
    return refuse(*error);
  CompileRequest reference = request;
  reference.outPath = floatPath;
  reference.options.quantize = QuantizeMode::None;
  reference.quantization = {};
  // IR printing/dumping options describe the quantized compile only.
  reference.options.printIrAfterAll = false;
  reference.options.printIrAfter.clear();
  reference.options.dumpIrDir.clear();
  reference.options.printMemoryPlan = false;
  reference.options.printLayouts = false;
  if (!compileModel(reference, nullptr, error))
    return refuse("compiling the float reference: " + *error);

  AccuracyOptions accuracy = accuracyOptions(options);
  accuracy.indexBounds = compiled.indexBounds;
  artifact::AccuracyReport report;
  if (request.progress)
    llvm::errs() << "\r\033[K[kiln-compile] measuring accuracy...";
  const bool measured = measureAccuracy(floatPath, quantPath, accuracy, &report, error);
  if (request.progress)
    llvm::errs() << "\r\033[K";
  if (!measured)
    return refuse(*error);
  out << formatReport(report, quantizeModeName(request.options.quantize));
  out.flush();
  const std::vector<std::string> violations = thresholdViolations(report, accuracy);
  if (!violations.empty()) {
    std::string msg = "accuracy check failed: ";
    for (size_t i = 0; i < violations.size(); ++i)
      msg += (i ? "; " : "") + violations[i];
    return refuse(msg + "; no artifact written");
  }
  if (!storeAccuracyReport(quantPath, outPath, report, error))
    return refuse(*error);
  return true;
}

} // namespace

bool compile(const CompileOptions &options, llvm::raw_ostream &out, std::string *error) {
  if (!validateOptions(options, error))
    return false;
  if (options.listOps) {
    for (const std::string &name : supportedOps())
      out << name << "\n";
    return true;
  }
  const TargetBackend &target = *lookupTargetBackend(options.target);
  if (options.printPipeline) {
    CompileRequest request = makeRequest(options, target);
    if (!target.configure(request.options, request.targetCpu, *error))
      return false;
    out << describePipeline(target, request.options);
    return true;
  }
  CompileRequest request = makeRequest(options, target);
  request.irOut = &out;
  if (!accuracyCheckRequested(options))
    return compileModel(request, nullptr, error);
  return compileChecked(options, request, out, error);
}

} // namespace kiln::driver
