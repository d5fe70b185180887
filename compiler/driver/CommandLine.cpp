// kiln-compile's command line: one llvm::cl option per CompileOptions field, read into the struct
// once (parsing pass pipelines would reset LLVM's option values later).
#include "compiler/driver/CommandLine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace cl = llvm::cl;

namespace kiln::driver {
namespace {

cl::OptionCategory category("kiln-compile options");
cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output artifact path"), cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> emit("emit",
                          cl::desc("Print the IR after a phase instead of writing an artifact: "
                                   "graph | linalg | bufferized | mlir-llvm | llvm | asm"),
                          cl::cat(category));
cl::opt<std::string> targetCpu("target-cpu", cl::desc("x86-64 CPU to compile for (default: host)"), cl::init("host"),
                               cl::cat(category));
cl::opt<std::string> target("target",
                            cl::desc("What the kernels run on: x86 (default), cuda (NVIDIA GPUs; PTX, "
                                     "plus a cubin where ptxas is found), cuda-emulated (the CUDA "
                                     "kernels run on the CPU thread by thread, to check them without a GPU), "
                                     "or x86-scalar (plain loops: no tiling, microkernels or vectorization)"),
                            cl::init("x86"), cl::cat(category));
cl::opt<std::string> gpuArch("gpu-arch",
                             cl::desc("With --target=cuda: the GPU architecture, sm_NN "
                                      "(default sm_80)"),
                             cl::init("sm_80"), cl::cat(category));
cl::opt<std::string> precision("precision",
                               cl::desc("With --target=cuda: fp32 (default), or fp16 / bf16: products by "
                                        "constant weights in half precision (weights stored so, f32 "
                                        "accumulation, tensor cores)"),
                               cl::init("fp32"), cl::cat(category));
cl::opt<std::string> gpuAttention("gpu-attention",
                                  cl::desc("With --target=cuda: fused (default: one kernel per attention, "
                                           "a block per 8 query rows, scores never in memory) or unfused "
                                           "(products to cuBLASLt, softmax as block reductions)"),
                                  cl::init("fused"), cl::cat(category));
cl::opt<int64_t> gpuAttentionSplitKeys(
    "gpu-attention-split-keys",
    cl::desc("With --target=cuda: when a decode step has few query blocks and many keys, split its keys over "
             "blocks of at least N keys each (rounded up to tiles of 128), combined by a second launch; 0 never "
             "splits (default 256)"),
    cl::init(256), cl::cat(category));
cl::opt<std::string> ptxasPath("ptxas",
                               cl::desc("With --target=cuda: the ptxas that assembles the cubin (default: "
                                        "ptxas on PATH, then /usr/local/cuda/bin/ptxas; 'none': PTX only)"),
                               cl::cat(category));
cl::opt<std::string> gpuCode("gpu-code",
                             cl::desc("With --target=cuda: ptx+cubin (default: the cubin for --gpu-arch where ptxas "
                                      "is found, and the PTX, which newer GPUs JIT-compile) or cubin (no PTX: a "
                                      "smaller artifact that loads without JIT, on exactly --gpu-arch)"),
                             cl::init("ptx+cubin"), cl::cat(category));
cl::opt<bool> printAll("mlir-print-ir-after-all", cl::desc("Print the IR after every pass to stderr"),
                       cl::cat(category));
cl::alias printAllShort("print-ir-after-all", cl::desc("Same as --mlir-print-ir-after-all"), cl::aliasopt(printAll),
                        cl::cat(category));
cl::opt<std::string> printAfter("print-ir-after", cl::desc("Print the IR after the named pass"), cl::cat(category));
cl::opt<bool> quiet("quiet", cl::desc("Do not show progress"), cl::cat(category));
cl::opt<bool> batch("batch",
                    cl::desc("Compile many models in one process: read 'MODEL<tab>ARTIFACT' lines from stdin, "
                             "compile each with the other flags, and after each print its errors and then "
                             "'kiln-compile: batch done RC' on stderr (test runners: one process start, which "
                             "is most of a small model's compile, instead of one per model)"),
                    cl::cat(category));
cl::opt<std::string> dumpIrDir("dump-ir-dir", cl::desc("Write the IR after every pass to DIR/NNN_<pass>.mlir"),
                               cl::value_desc("dir"), cl::cat(category));
cl::opt<bool> kvCache("kv-cache",
                      cl::desc("Give decoders with past key/values a runtime-owned KV cache written in "
                               "place (default true; false keeps the present outputs)"),
                      cl::init(true), cl::cat(category));
cl::opt<int64_t> kvBlockSize("kv-block-size",
                             cl::desc("Entries per block of the paged KV cache (default 0: one contiguous "
                                      "row of the whole context per sequence)"),
                             cl::init(0), cl::cat(category));
cl::opt<int64_t> maxContext("max-context",
                            cl::desc("Default KV cache capacity in tokens, stored in the artifact "
                                     "(the runtime may choose another; default 2048)"),
                            cl::init(2048), cl::cat(category));
cl::opt<bool> fuse("fusion",
                   cl::desc("Fuse composite patterns (norms, GELU, SiLU, attention) and elementwise chains "
                            "(default true; false: one kernel per op, to compare or bisect)"),
                   cl::init(true), cl::cat(category));
cl::opt<bool> planMemory("memory-plan",
                         cl::desc("Place intermediates in one arena by liveness (default true; false: "
                                  "malloc each, to bisect)"),
                         cl::init(true), cl::cat(category));
cl::opt<bool> channelsLast("channels-last",
                           cl::desc("x86: run 2-D convolutions channels-last (NHWC), layout changes only at the "
                                    "edges of conv segments (default true; false: NCHW, to compare or bisect)"),
                           cl::init(true), cl::cat(category));
cl::opt<int64_t> winogradTile("winograd",
                              cl::desc("x86: compute 3x3 stride-1 channels-last convolutions on maps of 49 "
                                       "tiles or more with Winograd's F(m x m, 3x3), m up to this: 2 or 4 (default "
                                       "4); 0: direct (to compare or bisect)"),
                              cl::init(4), cl::cat(category));
cl::opt<int64_t> bandBytes("band-bytes",
                           cl::desc("x86: compute expand -> depthwise -> project convolution chains whose "
                                    "intermediate maps exceed L2 in row bands of about this many bytes of their "
                                    "largest map, so they stay in L2 (default 1572864); 0: whole maps (to compare "
                                    "or bisect)"),
                           cl::init(1572864), cl::cat(category));
cl::opt<std::string> denormals("denormals",
                               cl::desc("x86: flush (default: kernels run with denormal f32 flushed to zero, "
                                        "which Intel cores otherwise compute at a fraction of full speed) or keep "
                                        "(IEEE denormals, the caller's floating-point mode)"),
                               cl::init("flush"), cl::cat(category));
cl::opt<bool> printLayouts("print-layouts",
                           cl::desc("x86: print each convolution's layout (NHWC or NCHW and why) and the layout "
                                    "changes left"),
                           cl::cat(category));
cl::opt<bool> printMemoryPlan("print-memory-plan",
                              cl::desc("Print each intermediate buffer's size, lifetime and arena offset, "
                                       "the arena's peak and the sum without reuse"),
                              cl::cat(category));
cl::opt<std::string> quantize("quantize",
                              cl::desc("Quantize matrix-product weights: none | int8 (per output channel) | "
                                       "int4 (per group along K) | int8-dynamic (int8 weights, activations "
                                       "quantized per row at run time, integer products)"),
                              cl::init("none"), cl::cat(category));
cl::opt<int64_t> quantizeGroup("quantize-group", cl::desc("int4 group size along K: 32 | 64 | 128 (default 64)"),
                               cl::init(64), cl::cat(category));
cl::opt<std::string> quantizeScale("quantize-scale", cl::desc("Scale type: f32 (default) | f16"), cl::init("f32"),
                                   cl::cat(category));
cl::list<std::string> quantizeKeep("quantize-keep",
                                   cl::desc("Leave in f32 the weights or nodes whose name contains one "
                                            "of these (comma-separated, e.g. lm_head)"),
                                   cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> weightsMode("weights",
                                 cl::desc("Where the weights go: embedded (in the artifact, default) | external "
                                          "(left in the ONNX external data files, transformed ones in "
                                          "<output>.weights; the artifact holds a manifest)"),
                                 cl::value_desc("mode"), cl::init("embedded"), cl::cat(category));
cl::opt<std::string> calibration("calibration",
                                 cl::desc("Accuracy check inputs: a directory of test_data_set_*/input_*.pb "
                                          "folders or of <input name>.pb files (decoders: their input_ids)"),
                                 cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> calibrationTokens("calibration-tokens",
                                       cl::desc("Decoders: whitespace-separated token ids scored "
                                                "teacher-forced (top-1 agreement, perplexity)"),
                                       cl::value_desc("file"), cl::cat(category));
cl::opt<uint64_t> calibrationSeed("calibration-seed",
                                  cl::desc("Seed of the random inputs when no --calibration (default 0)"), cl::init(0),
                                  cl::cat(category));
cl::opt<unsigned> calibrationSamples("calibration-samples",
                                     cl::desc("Random input sets (decoders: token sequences) when no "
                                              "--calibration (default 2)"),
                                     cl::init(2), cl::cat(category));
cl::opt<int64_t> calibrationLength("calibration-length", cl::desc("Decoders: tokens per random sequence (default 32)"),
                                   cl::init(32), cl::cat(category));
cl::list<std::string> calibrationDims("calibration-dim",
                                      cl::desc("Symbolic dim values of random inputs, NAME=SIZE (default: 1 "
                                               "for batch-like dims, 8 for the others)"),
                                      cl::CommaSeparated, cl::cat(category));
cl::opt<double> maxError("max-error",
                         cl::desc("Refuse the quantized artifact when an output's max relative error "
                                  "(max abs error / max abs float value) exceeds this"),
                         cl::cat(category));
cl::opt<double> minCosine("min-cosine", cl::desc("Refuse it when an output's cosine similarity to float is below this"),
                          cl::cat(category));
cl::opt<double> minTop1("min-top1",
                        cl::desc("Decoders: refuse it when next-token top-1 agreement with float is below this"),
                        cl::cat(category));
cl::opt<double> maxPerplexityRatio("max-perplexity-ratio",
                                   cl::desc("Decoders: refuse it when quantized / float perplexity exceeds this"),
                                   cl::cat(category));
cl::opt<bool> checkAccuracy("check-accuracy",
                            cl::desc("Measure and store the accuracy report without a threshold "
                                     "(implied by --calibration* and the thresholds)"),
                            cl::cat(category));
cl::opt<bool> symbolicInputDims(
    "symbolic-input-dims",
    cl::desc("Make every input dim symbolic, as if the model declared no static sizes (the artifact then "
             "accepts any size the graph allows; static and symbolic builds must agree)"),
    cl::cat(category));
cl::opt<bool> listOps("list-ops",
                      cl::desc("List the ONNX ops the importer supports (default and training domains) and exit"),
                      cl::cat(category));
cl::opt<bool> printPipeline("print-pipeline",
                            cl::desc("Print each phase's passes for the target and options, and exit"),
                            cl::cat(category));

template <typename T, typename V> void setIfGiven(std::optional<T> &field, const V &option) {
  if (option.getNumOccurrences())
    field = option;
}

} // namespace

CompileOptions parseCommandLine(int argc, char **argv, const char *version, bool *batchMode) {
  static std::string versionLine;
  versionLine = std::string("kiln-compile ") + version + "\n";
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << versionLine; });
  cl::ParseCommandLineOptions(argc, argv,
                              "kiln-compile: compile an ONNX model into a kiln artifact\n\n"
                              "  kiln-compile model.onnx -o model.kiln\n"
                              "  kiln-compile model.onnx --emit=linalg\n");
  CompileOptions o;
  o.modelPath = inputPath;
  o.outPath = outputPath;
  o.emit = emit;
  o.target = target;
  if (targetCpu.getNumOccurrences())
    o.targetCpu = targetCpu;
  o.gpuArch = gpuArch;
  o.precision = precision;
  setIfGiven(o.gpuAttention, gpuAttention);
  setIfGiven(o.gpuAttentionSplitKeys, gpuAttentionSplitKeys);
  o.ptxas = ptxasPath;
  o.gpuCode = gpuCode;
  o.printIrAfterAll = printAll;
  o.printIrAfter = printAfter;
  o.dumpIrDir = dumpIrDir;
  o.progress = !quiet && isatty(STDERR_FILENO);
  o.notes = !quiet;
  o.kvCache = kvCache;
  o.kvBlockSize = kvBlockSize;
  o.maxContext = maxContext;
  o.fusion = fuse;
  o.memoryPlan = planMemory;
  o.printMemoryPlan = printMemoryPlan;
  o.channelsLast = channelsLast;
  o.printLayouts = printLayouts;
  o.winogradTile = winogradTile;
  o.bandBytes = bandBytes;
  o.denormals = denormals;
  o.quantize = quantize;
  o.quantizeGroup = quantizeGroup;
  o.quantizeScale = quantizeScale;
  o.quantizeKeep.assign(quantizeKeep.begin(), quantizeKeep.end());
  o.symbolicInputDims = symbolicInputDims;
  o.weights = weightsMode;
  o.checkAccuracy = checkAccuracy;
  o.calibration = calibration;
  o.calibrationTokens = calibrationTokens;
  setIfGiven(o.calibrationSeed, calibrationSeed);
  setIfGiven(o.calibrationSamples, calibrationSamples);
  setIfGiven(o.calibrationLength, calibrationLength);
  o.calibrationDims.assign(calibrationDims.begin(), calibrationDims.end());
  setIfGiven(o.maxError, maxError);
  setIfGiven(o.minCosine, minCosine);
  setIfGiven(o.minTop1, minTop1);
  setIfGiven(o.maxPerplexityRatio, maxPerplexityRatio);
  o.listOps = listOps;
  o.printPipeline = printPipeline;
  o.compilerVersion = std::string("kiln ") + version;
  if (batchMode)
    *batchMode = batch;
  return o;
}

} // namespace kiln::driver
