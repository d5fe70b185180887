// kiln-compile: ONNX model -> kiln artifact (or the IR of one phase with --emit); with --quantize
// and an accuracy flag, also the float reference, both run and compared before the artifact is written.
#include "AccuracyCheck.h"
#include "CompileModel.h"
#include "compiler/targets/cuda/CudaTarget.h"
#include "compiler/importer/NodeContext.h"
#include "compiler/importer/ControlFlowImporters.h"
#include "compiler/importer/SequenceImporters.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

static cl::OptionCategory category("kiln-compile options");
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output artifact path"), cl::value_desc("file"),
                                       cl::cat(category));
static cl::opt<std::string> emit("emit",
                                 cl::desc("Print the IR after a phase instead of writing an artifact: "
                                          "graph | linalg | bufferized | mlir-llvm | llvm | asm"),
                                 cl::cat(category));
static cl::opt<std::string> targetCpu("target-cpu", cl::desc("x86-64 CPU to compile for (default: host)"),
                                      cl::init("host"), cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("What the kernels run on: x86 (default), cuda (NVIDIA GPUs; PTX, "
                                            "plus a cubin where ptxas is found), or cuda-emulated (the CUDA "
                                            "kernels run on the CPU thread by thread, to check them without a GPU)"),
                                   cl::init("x86"), cl::cat(category));
static cl::opt<std::string> gpuArch("gpu-arch", cl::desc("With --target=cuda: the GPU architecture, sm_NN "
                                                         "(default sm_80)"),
                                    cl::init("sm_80"), cl::cat(category));
static cl::opt<std::string> precision("precision",
                                      cl::desc("With --target=cuda: fp32 (default), or fp16 / bf16: products by "
                                               "constant weights in half precision (weights stored so, f32 "
                                               "accumulation, tensor cores)"),
                                      cl::init("fp32"), cl::cat(category));
static cl::opt<std::string> gpuAttention("gpu-attention",
                                         cl::desc("With --target=cuda: fused (default: one kernel per attention, "
                                                  "a block per 8 query rows, scores never in memory) or unfused "
                                                  "(products to cuBLASLt, softmax as block reductions)"),
                                         cl::init("fused"), cl::cat(category));
static cl::opt<int64_t> gpuAttentionSplitKeys(
    "gpu-attention-split-keys",
    cl::desc("With --target=cuda: when a decode step has few query blocks and many keys, split its keys over "
             "blocks of at least N keys each (rounded up to tiles of 128), combined by a second launch; 0 never "
             "splits (default 256)"),
    cl::init(256), cl::cat(category));
static cl::opt<std::string> ptxasPath("ptxas",
                                      cl::desc("With --target=cuda: the ptxas that assembles the cubin (default: "
                                               "ptxas on PATH, then /usr/local/cuda/bin/ptxas; 'none': PTX only)"),
                                      cl::cat(category));
static cl::opt<bool> printAll("mlir-print-ir-after-all", cl::desc("Print the IR after every pass to stderr"),
                              cl::cat(category));
static cl::alias printAllShort("print-ir-after-all", cl::desc("Same as --mlir-print-ir-after-all"),
                               cl::aliasopt(printAll), cl::cat(category));
static cl::opt<std::string> printAfter("print-ir-after", cl::desc("Print the IR after the named pass"),
                                       cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Do not show progress"), cl::cat(category));
static cl::opt<std::string> dumpIrDir("dump-ir-dir",
                                      cl::desc("Write the IR after every pass to DIR/NNN_<pass>.mlir"),
                                      cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool> kvCache("kv-cache",
                             cl::desc("Give decoders with past key/values a runtime-owned KV cache written in "
                                      "place (default true; false keeps the present outputs)"),
                             cl::init(true), cl::cat(category));
static cl::opt<int64_t> maxContext("max-context",
                                   cl::desc("Default KV cache capacity in tokens, stored in the artifact "
                                            "(the runtime may choose another; default 2048)"),
                                   cl::init(2048), cl::cat(category));
static cl::opt<bool> fuse("fusion",
                          cl::desc("Fuse composite patterns (norms, GELU, SiLU, attention) and elementwise chains "
                                   "(default true; false: one kernel per op, to compare or bisect)"),
                          cl::init(true), cl::cat(category));
static cl::opt<bool> planMemory("memory-plan",
                                cl::desc("Place intermediates in one arena by liveness (default true; false: "
                                         "malloc each, to bisect)"),
                                cl::init(true), cl::cat(category));
static cl::opt<bool> printMemoryPlan("print-memory-plan",
                                     cl::desc("Print each intermediate buffer's size, lifetime and arena offset, "
                                              "the arena's peak and the sum without reuse"),
                                     cl::cat(category));
static cl::opt<std::string> quantize("quantize",
                                     cl::desc("Quantize matrix-product weights: none | int8 (per output channel) | "
                                              "int4 (per group along K) | int8-dynamic (int8 weights, activations "
                                              "quantized per row at run time, integer products)"),
                                     cl::init("none"), cl::cat(category));
static cl::opt<int64_t> quantizeGroup("quantize-group", cl::desc("int4 group size along K: 32 | 64 | 128 (default 64)"),
                                      cl::init(64), cl::cat(category));
static cl::opt<std::string> quantizeScale("quantize-scale", cl::desc("Scale type: f32 (default) | f16"),
                                          cl::init("f32"), cl::cat(category));
static cl::list<std::string> quantizeKeep("quantize-keep",
                                          cl::desc("Leave in f32 the weights or nodes whose name contains one "
                                                   "of these (comma-separated, e.g. lm_head)"),
                                          cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string> calibration("calibration",
                                        cl::desc("Accuracy check inputs: a directory of test_data_set_*/input_*.pb "
                                                 "folders or of <input name>.pb files (decoders: their input_ids)"),
                                        cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> calibrationTokens("calibration-tokens",
                                              cl::desc("Decoders: whitespace-separated token ids scored "
                                                       "teacher-forced (top-1 agreement, perplexity)"),
                                              cl::value_desc("file"), cl::cat(category));
static cl::opt<uint64_t> calibrationSeed("calibration-seed",
                                         cl::desc("Seed of the random inputs when no --calibration (default 0)"),
                                         cl::init(0), cl::cat(category));
static cl::opt<unsigned> calibrationSamples("calibration-samples",
                                            cl::desc("Random input sets (decoders: token sequences) when no "
                                                     "--calibration (default 2)"),
                                            cl::init(2), cl::cat(category));
static cl::opt<int64_t> calibrationLength("calibration-length",
                                          cl::desc("Decoders: tokens per random sequence (default 32)"),
                                          cl::init(32), cl::cat(category));
static cl::list<std::string> calibrationDims("calibration-dim",
                                             cl::desc("Symbolic dim values of random inputs, NAME=SIZE (default: 1 "
                                                      "for batch-like dims, 8 for the others)"),
                                             cl::CommaSeparated, cl::cat(category));
static cl::opt<double> maxError("max-error",
                                cl::desc("Refuse the quantized artifact when an output's max relative error "
                                         "(max abs error / max abs float value) exceeds this"),
                                cl::cat(category));
static cl::opt<double> minCosine("min-cosine",
                                 cl::desc("Refuse it when an output's cosine similarity to float is below this"),
                                 cl::cat(category));
static cl::opt<double> minTop1("min-top1",
                               cl::desc("Decoders: refuse it when next-token top-1 agreement with float is below this"),
                               cl::cat(category));
static cl::opt<double> maxPerplexityRatio("max-perplexity-ratio",
                                          cl::desc("Decoders: refuse it when quantized / float perplexity exceeds this"),
                                          cl::cat(category));
static cl::opt<bool> checkAccuracy("check-accuracy",
                                   cl::desc("Measure and store the accuracy report without a threshold "
                                            "(implied by --calibration* and the thresholds)"),
                                   cl::cat(category));
static cl::opt<bool> symbolicInputDims(
    "symbolic-input-dims",
    cl::desc("Make every input dim symbolic, as if the model declared no static sizes (the artifact then "
             "accepts any size the graph allows; static and symbolic builds must agree)"),
    cl::cat(category));
static cl::opt<bool> listOps("list-ops", cl::desc("List the ONNX ops the importer supports (default and training domains) and exit"),
                             cl::cat(category));

static int fail(const std::string &msg) {
  std::string line = msg;
  for (char &c : line)
    if (c == '\n')
      c = ' ';
  llvm::errs() << "kiln-compile: error: " << line << "\n";
  return 1;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "kiln-compile " KILN_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "kiln-compile: compile an ONNX model into a kiln artifact\n\n"
                              "  kiln-compile model.onnx -o model.kiln\n"
                              "  kiln-compile model.onnx --emit=linalg\n");
  // Copy the options now: parsing pass pipelines later resets LLVM's
  // command-line option values.
  const std::string modelPath = inputPath, outPath = outputPath, emitWhat = emit,
                    cpuName = targetCpu, printAfterName = printAfter, dumpDir = dumpIrDir,
                    targetName = target, arch = gpuArch, ptxas = ptxasPath,
                    precisionName = precision, attentionName = gpuAttention;
  const bool printAllIr = printAll, beQuiet = quiet, useKvCache = kvCache, useFusion = fuse,
             usePlan = planMemory, printPlan = printMemoryPlan, allSymbolic = symbolicInputDims;
  const int64_t contextTokens = maxContext, splitKeys = gpuAttentionSplitKeys;
  const std::string quantMode = quantize == "none" ? std::string() : std::string(quantize),
                    quantScale = quantizeScale;
  const int64_t quantGroup = quantizeGroup;
  const std::vector<std::string> quantKeep(quantizeKeep.begin(), quantizeKeep.end());
  if (!quantMode.empty() && quantMode != "int8" && quantMode != "int4" && quantMode != "int8-dynamic")
    return fail("unknown --quantize value '" + quantMode + "' (none, int8, int4, int8-dynamic)");
  if (quantGroup != 32 && quantGroup != 64 && quantGroup != 128)
    return fail("--quantize-group must be 32, 64 or 128");
  if (quantScale != "f32" && quantScale != "f16")
    return fail("--quantize-scale must be f32 or f16");
  if (targetName != "x86" && targetName != "cuda" && targetName != "cuda-emulated")
    return fail("unknown --target '" + targetName + "' (x86, cuda, cuda-emulated)");
  if (targetName == "cuda" && !kiln::isGpuArch(arch))
    return fail("--gpu-arch must be sm_NN or sm_NNa (e.g. sm_80, sm_90, sm_90a), got '" + arch + "'");
  if (precisionName != "fp32" && precisionName != "fp16" && precisionName != "bf16")
    return fail("unknown --precision '" + precisionName + "' (fp32, fp16, bf16)");
  if (precisionName != "fp32" && targetName == "x86")
    return fail("--precision=" + precisionName + " needs --target=cuda (the CPU has no fast half-precision products)");
  if (attentionName != "fused" && attentionName != "unfused")
    return fail("unknown --gpu-attention '" + attentionName + "' (fused, unfused)");
  if (splitKeys < 0)
    return fail("--gpu-attention-split-keys must be 0 (never split) or more");
  if ((gpuAttention.getNumOccurrences() || gpuAttentionSplitKeys.getNumOccurrences()) && targetName == "x86")
    return fail("--gpu-attention and --gpu-attention-split-keys need --target=cuda (the CPU always fuses attention)");
  if (precisionName != "fp32" && !quantMode.empty())
    return fail("--precision=" + precisionName + " and --quantize both change the weights: choose one");
  if (contextTokens < 1 || contextTokens > (int64_t(1) << 24))
    return fail("--max-context must be between 1 and 16777216");
  if (listOps) {
    std::vector<std::string> names;
    for (const auto &entry : kiln::nodeImporters())
      names.push_back(entry.getKey().str());
    for (const auto &entry : kiln::sequenceImporters())
      names.push_back(entry.getKey().str());
    for (const auto &entry : kiln::controlFlowImporters())
      names.push_back(entry.getKey().str());
    for (const auto &entry : kiln::trainingImporters())
      names.push_back(entry.getKey().str());
    names.push_back("Gradient"); // ai.onnx.preview.training, imported with the graph importer's scope
    std::sort(names.begin(), names.end());
    for (const auto &n : names)
      llvm::outs() << n << "\n";
    return 0;
  }
  if (modelPath.empty())
    return fail("no input model given (see --help)");
  const std::map<std::string, kiln::compile::Emit> emits = {
      {"", kiln::compile::Emit::Artifact},          {"graph", kiln::compile::Emit::Graph},
      {"linalg", kiln::compile::Emit::Linalg},      {"bufferized", kiln::compile::Emit::Bufferized},
      {"mlir-llvm", kiln::compile::Emit::MlirLlvm}, {"llvm", kiln::compile::Emit::LlvmIr},
      {"asm", kiln::compile::Emit::Assembly}};
  if (!emits.count(emitWhat))
    return fail("unknown --emit value '" + emitWhat + "'");
  if (emitWhat.empty() && outPath.empty())
    return fail("no output given: use -o <file> or --emit=<phase>");

  // The accuracy check: any of its flags asks for it.
  kiln::compile::AccuracyOptions accuracy;
  accuracy.calibrationDir = calibration;
  accuracy.tokensFile = calibrationTokens;
  accuracy.seed = calibrationSeed;
  accuracy.samples = calibrationSamples;
  accuracy.randomTokens = calibrationLength;
  if (maxError.getNumOccurrences())
    accuracy.maxError = maxError;
  if (minCosine.getNumOccurrences())
    accuracy.minCosine = minCosine;
  if (minTop1.getNumOccurrences())
    accuracy.minTop1 = minTop1;
  if (maxPerplexityRatio.getNumOccurrences())
    accuracy.maxPerplexityRatio = maxPerplexityRatio;
  for (const std::string &d : calibrationDims) {
    const size_t eq = d.find('=');
    char *end = nullptr;
    const long long v = eq == std::string::npos ? 0 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end != '\0' || eq + 1 == d.size() || v < 1 || v > (1 << 20))
      return fail("--calibration-dim wants NAME=SIZE with SIZE in [1, 1048576], got '" + d + "'");
    accuracy.dims[d.substr(0, eq)] = v;
  }
  const bool checkRequested = checkAccuracy || !accuracy.calibrationDir.empty() || !accuracy.tokensFile.empty() ||
                              !std::isnan(accuracy.maxError) || !std::isnan(accuracy.minCosine) ||
                              !std::isnan(accuracy.minTop1) || !std::isnan(accuracy.maxPerplexityRatio) ||
                              calibrationDims.getNumOccurrences() || calibrationSeed.getNumOccurrences() ||
                              calibrationSamples.getNumOccurrences() || calibrationLength.getNumOccurrences();
  if (checkRequested) {
    if (quantMode.empty())
      return fail("the accuracy check (--calibration, --max-error, ...) compares a quantized artifact with the "
                  "float one: it needs --quantize");
    if (!emitWhat.empty())
      return fail("the accuracy check writes an artifact: use -o, not --emit");
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
    std::string why;
    if (!kiln::compile::checkAccuracyInputs(accuracy, &why))
      return fail(why);
  }

  kiln::compile::CompileRequest request;
  request.modelPath = modelPath;
  request.outPath = outPath;
  request.emit = emits.at(emitWhat);
  // A CUDA artifact's host program only computes sizes and launches kernels: baseline x86-64
  // unless asked otherwise, so it loads on any GPU server.
  request.targetCpu = targetName == "cuda" && !targetCpu.getNumOccurrences() ? "x86-64" : cpuName;
  request.maxContext = contextTokens;
  request.symbolicInputDims = allSymbolic;
  request.progress = !beQuiet && isatty(STDERR_FILENO);
  request.notes = !beQuiet;
  request.compilerVersion = "kiln " KILN_VERSION;
  request.ptxas = ptxas;
  kiln::PipelineOptions &options = request.options;
  options.target = targetName == "cuda"            ? kiln::Target::Cuda
                   : targetName == "cuda-emulated" ? kiln::Target::CudaEmulated
                                                   : kiln::Target::X86;
  options.gpuArch = arch;
  options.precision = precisionName == "fp16" ? "f16" : precisionName == "bf16" ? "bf16" : "";
  options.gpuAttention = attentionName == "fused";
  options.gpuAttentionSplitKeys = splitKeys;
  options.printIrAfterAll = printAllIr;
  options.printIrAfter = printAfterName;
  options.dumpIrDir = dumpDir;
  options.kvCache = useKvCache;
  options.fuse = useFusion;
  options.planMemory = usePlan;
  options.printMemoryPlan = printPlan;
  options.quantize = quantMode;
  options.quantizeGroup = quantGroup;
  options.quantizeF16Scales = quantScale == "f16";
  options.quantizeKeep = quantKeep;
  if (!quantMode.empty()) {
    // The recipe goes into the artifact whether or not the accuracy check runs.
    kiln::artifact::QuantizationInfo &recipe = request.quantization;
    recipe.present = true;
    recipe.mode = quantMode;
    recipe.groupSize = quantMode == "int4" ? uint32_t(quantGroup) : 0; // int8 modes: per output channel
    recipe.scaleType = quantScale;
    recipe.keep = quantKeep;
  }

  std::string error;
  if (!checkRequested) {
    if (!kiln::compile::compileModel(request, nullptr, &error))
      return fail(error);
    return 0;
  }

  // Both artifacts go to temporary files next to the output (same file system as the final
  // rename); whatever happens, they are removed on the way out.
  struct TempFiles {
    std::vector<std::string> paths;
    ~TempFiles() {
      for (const auto &p : paths)
        std::remove(p.c_str());
    }
  } temps;
  const std::string pid = std::to_string(::getpid());
  const std::string quantPath = outPath + ".quantized." + pid + ".tmp", floatPath = outPath + ".float." + pid + ".tmp";
  temps.paths = {quantPath, floatPath};
  // A failed check must not leave an earlier artifact at -o for a build to pick up.
  auto refuse = [&](const std::string &msg) {
    std::remove(outPath.c_str());
    return fail(msg);
  };

  kiln::compile::CompileResult compiled;
  kiln::compile::CompileRequest quantized = request;
  quantized.outPath = quantPath;
  if (!kiln::compile::compileModel(quantized, &compiled, &error))
    return refuse(error);
  kiln::compile::CompileRequest reference = request;
  reference.outPath = floatPath;
  reference.options.quantize.clear();
  reference.quantization = {};
  // IR printing/dumping options describe the quantized compile only.
  reference.options.printIrAfterAll = false;
  reference.options.printIrAfter.clear();
  reference.options.dumpIrDir.clear();
  reference.options.printMemoryPlan = false;
  if (!kiln::compile::compileModel(reference, nullptr, &error))
    return refuse("compiling the float reference: " + error);

  accuracy.indexBounds = compiled.indexBounds;
  kiln::artifact::AccuracyReport report;
  if (request.progress)
    llvm::errs() << "\r\033[K[kiln-compile] measuring accuracy...";
  const bool measured = kiln::compile::measureAccuracy(floatPath, quantPath, accuracy, &report, &error);
  if (request.progress)
    llvm::errs() << "\r\033[K";
  if (!measured)
    return refuse(error);
  llvm::outs() << kiln::compile::formatReport(report, quantMode);
  llvm::outs().flush();
  const std::vector<std::string> violations = kiln::compile::thresholdViolations(report, accuracy);
  if (!violations.empty()) {
    std::string msg = "accuracy check failed: ";
    for (size_t i = 0; i < violations.size(); ++i)
      msg += (i ? "; " : "") + violations[i];
    return refuse(msg + "; no artifact written");
  }
  if (!kiln::compile::storeAccuracyReport(quantPath, outPath, report, &error))
    return refuse(error);
  return 0;
}
