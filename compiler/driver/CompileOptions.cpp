// The checks of a compile request, in the order kiln-compile has always reported them.
#include "compiler/driver/CompileOptions.h"
#include "compiler/driver/AccuracyCheck.h"

#include "compiler/pipeline/Pipeline.h"
#include "compiler/targets/TargetBackend.h"
#include "compiler/targets/cuda/CudaTarget.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace kiln::driver {

const char *compilerVersion() { return "kiln " KILN_VERSION; }

bool validateOptions(const CompileOptions &o, std::string *error) {
  auto fail = [&](const std::string &msg) {
    *error = msg;
    return false;
  };
  // "" reads as none, as it always has.
  if (!o.quantize.empty() && !parseQuantizeMode(o.quantize))
    return fail("unknown --quantize value '" + o.quantize + "' (none, int8, int4, int8-dynamic)");
  const bool quantized = !o.quantize.empty() && o.quantize != "none";
  if (o.quantizeGroup != 32 && o.quantizeGroup != 64 && o.quantizeGroup != 128)
    return fail("--quantize-group must be 32, 64 or 128");
  if (o.quantizeScale != "f32" && o.quantizeScale != "f16")
    return fail("--quantize-scale must be f32 or f16");
  registerAllTargetBackends();
  const TargetBackend *target = lookupTargetBackend(o.target);
  if (!target) {
    std::string names;
    for (const std::string &n : targetBackendNames())
      names += (names.empty() ? "" : ", ") + n;
    return fail("unknown --target '" + o.target + "' (" + names + ")");
  }
  if (target->needsGpuArch() && !isGpuArch(o.gpuArch))
    return fail("--gpu-arch must be sm_NN or sm_NNa (e.g. sm_80, sm_90, sm_90a), got '" + o.gpuArch + "'");
  if (o.gpuCode != "ptx+cubin" && o.gpuCode != "cubin")
    return fail("unknown --gpu-code '" + o.gpuCode + "' (ptx+cubin, cubin)");
  if (o.gpuCode == "cubin" && (!target->needsGpuArch() || o.ptxas == "none"))
    return fail("--gpu-code=cubin needs --target=cuda and ptxas (not --ptxas=none)");
  if (o.precision != "fp32" && o.precision != "fp16" && o.precision != "bf16")
    return fail("unknown --precision '" + o.precision + "' (fp32, fp16, bf16)");
  if (o.precision != "fp32" && !target->formsGpuKernels())
    return fail("--precision=" + o.precision +
                " needs --target=cuda (the CPU has no fast half-precision products)");
  const std::string attention = o.gpuAttention.value_or("fused");
  if (attention != "fused" && attention != "unfused")
    return fail("unknown --gpu-attention '" + attention + "' (fused, unfused)");
  if (o.gpuAttentionSplitKeys.value_or(0) < 0)
    return fail("--gpu-attention-split-keys must be 0 (never split) or more");
  if ((o.gpuAttention || o.gpuAttentionSplitKeys) && !target->formsGpuKernels())
    return fail("--gpu-attention and --gpu-attention-split-keys need --target=cuda (the CPU always fuses "
                "attention)");
  if (o.precision != "fp32" && quantized)
    return fail("--precision=" + o.precision + " and --quantize both change the weights: choose one");
  if (o.kvBlockSize < 0 || o.kvBlockSize > 4096)
    return fail("--kv-block-size must be between 0 and 4096");
  if (o.kvBlockSize > 0 && !o.kvCache)
    return fail("--kv-block-size pages the KV cache: it cannot go with --kv-cache=false");
  if (o.maxContext < 1 || o.maxContext > (int64_t(1) << 24))
    return fail("--max-context must be between 1 and 16777216");
  if (o.bandBytes < 0)
    return fail("--band-bytes must be 0 (whole maps) or a positive number of bytes");
  if (o.winogradTile != 0 && o.winogradTile != 2 && o.winogradTile != 4)
    return fail("--winograd must be 0 (direct convolutions), 2 or 4");
  if (o.denormals != "flush" && o.denormals != "keep")
    return fail("unknown --denormals '" + o.denormals + "' (flush, keep)");
  if (o.listOps || o.printPipeline)
    return true;

  if (o.modelPath.empty())
    return fail("no input model given (see --help)");
  static const char *const emits[] = {"", "graph", "linalg", "bufferized", "mlir-llvm", "llvm", "asm"};
  if (std::find(std::begin(emits), std::end(emits), o.emit) == std::end(emits))
    return fail("unknown --emit value '" + o.emit + "'");
  if (o.emit.empty() && o.outPath.empty())
    return fail("no output given: use -o <file> or --emit=<phase>");
  if (o.weights != "embedded" && o.weights != "external")
    return fail("unknown --weights value '" + o.weights + "' (embedded | external)");
  for (const std::string &d : o.calibrationDims) {
    const size_t eq = d.find('=');
    char *end = nullptr;
    const long long v = eq == std::string::npos ? 0 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end != '\0' || eq + 1 == d.size() || v < 1 || v > (1 << 20))
      return fail("--calibration-dim wants NAME=SIZE with SIZE in [1, 1048576], got '" + d + "'");
  }
  if (!accuracyCheckRequested(o))
    return true;
  const AccuracyOptions accuracy = accuracyOptions(o);
  if (!quantized)
    return fail("the accuracy check (--calibration, --max-error, ...) compares a quantized artifact with the "
                "float one: it needs --quantize");
  if (!o.emit.empty())
    return fail("the accuracy check writes an artifact: use -o, not --emit");
  if (o.weights == "external")
    return fail("the accuracy check does not yet support --weights=external: compile with --weights=embedded");
  if (!(accuracy.maxError >= 0) && !std::isnan(accuracy.maxError))
    return fail("--max-error must be >= 0");
  if (!std::isnan(accuracy.minCosine) && !(accuracy.minCosine >= -1 && accuracy.minCosine <= 1))
    return fail("--min-cosine must be between -1 and 1");
  if (!std::isnan(accuracy.minTop1) && !(accuracy.minTop1 >= 0 && accuracy.minTop1 <= 1))
    return fail("--min-top1 must be between 0 and 1");
  if (!std::isnan(accuracy.maxPerplexityRatio) && !(accuracy.maxPerplexityRatio > 0))
    return fail("--max-perplexity-ratio must be > 0");
  if (accuracy.samples < 1 || accuracy.samples > 1000)
    return fail("--calibration-samples must be between 1 and 1000");
  if (accuracy.randomTokens < 2 || accuracy.randomTokens > (1 << 20))
    return fail("--calibration-length must be between 2 and 1048576");
  return checkAccuracyInputs(accuracy, error);
}

// A threshold of NaN checks nothing, as if not given.
static bool given(const std::optional<double> &threshold) { return threshold && !std::isnan(*threshold); }

bool accuracyCheckRequested(const CompileOptions &o) {
  return o.checkAccuracy || !o.calibration.empty() || !o.calibrationTokens.empty() || given(o.maxError) ||
         given(o.minCosine) || given(o.minTop1) || given(o.maxPerplexityRatio) || !o.calibrationDims.empty() || o.calibrationSeed ||
         o.calibrationSamples || o.calibrationLength;
}

AccuracyOptions accuracyOptions(const CompileOptions &o) {
  AccuracyOptions a;
  a.calibrationDir = o.calibration;
  a.tokensFile = o.calibrationTokens;
  a.seed = o.calibrationSeed.value_or(0);
  a.samples = o.calibrationSamples.value_or(2);
  a.randomTokens = o.calibrationLength.value_or(32);
  a.maxError = o.maxError.value_or(NAN);
  a.minCosine = o.minCosine.value_or(NAN);
  a.minTop1 = o.minTop1.value_or(NAN);
  a.maxPerplexityRatio = o.maxPerplexityRatio.value_or(NAN);
  for (const std::string &d : o.calibrationDims) {
    const size_t eq = d.find('=');
    a.dims[d.substr(0, eq)] = std::strtoll(d.c_str() + eq + 1, nullptr, 10);
  }
  return a;
}

} // namespace kiln::driver
