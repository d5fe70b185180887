// The named compilation phases, the options every target's pipeline reads, and the driver that runs
// a target's phases with IR dumps.
#ifndef KILN_COMPILER_PIPELINE_PIPELINE_H
#define KILN_COMPILER_PIPELINE_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Phases in pipeline order; `--emit=<phase>` stops after one and prints it.
enum class Phase { Graph, Linalg, Bufferized, Llvm };

const char *phaseName(Phase phase);
constexpr Phase kAllPhases[] = {Phase::Graph, Phase::Linalg, Phase::Bufferized, Phase::Llvm};

/// Weight quantization of matrix products (--quantize), parsed once: every later step (the pass
/// options, the recipe stored in the artifact) reads this, never the option's text.
enum class QuantizeMode { None, Int8, Int4, Int8Dynamic };

/// "none", "int8", "int4", "int8-dynamic": the option's spelling, also the artifact's recipe name.
const char *quantizeModeName(QuantizeMode mode);
/// The mode a spelling names, or nothing.
std::optional<QuantizeMode> parseQuantizeMode(llvm::StringRef name);

/// What the phases do, whatever the target; each target reads the fields that concern it.
struct PipelineOptions {
  /// GPU targets: the GPU architecture the PTX is generated for (sm_80, sm_90, ...).
  std::string gpuArch = "sm_80";
  /// GPU targets: the products by constant weights in "f16" or "bf16"
  /// (kiln-half-precision-products), or "" (f32 throughout).
  std::string precision;
  /// GPU targets: attention as one fused kernel (kiln-fuse-attention, then
  /// kiln-form-attention-blocks), or unfused (false: its products to the
  /// runtime's gemm, its softmax as block reductions), to compare the two on a GPU.
  bool gpuAttention = true;
  /// GPU targets: the fewest keys a block of the fused attention takes when a decode step's keys
  /// are split over blocks (kiln-form-attention-blocks' min-split-keys); 0 never splits.
  int64_t gpuAttentionSplitKeys = 256;
  /// Width of the host CPU's vector registers (set by the target): sizes the contraction
  /// microkernel (512: 8 x 32 floats in 16 of AVX-512's 32 registers; 256:
  /// 4 x 16 floats in 8 of AVX2's 16).
  int vectorBits = 256;
  /// Decoders with past key/values get a runtime-owned, in-place KV cache
  /// (kiln-kv-cache-in-place) instead of present outputs.
  bool kvCache = true;
  /// Entries per block of a paged KV cache (kiln-kv-cache-in-place's block-size); 0: one
  /// contiguous row of the whole context per sequence.
  int64_t kvBlockSize = 0;
  /// Graph pattern fusions (norms, GELU, SiLU, attention) and elementwise
  /// fusion; false keeps one kernel per ONNX-level op (to compare plans and
  /// bisect fusion bugs).
  bool fuse = true;
  /// Place intermediates in one per-run arena by liveness (kiln-plan-memory);
  /// false leaves each one to malloc (to bisect planner bugs).
  bool planMemory = true;
  bool printMemoryPlan = false; // the plan of every buffer, to stdout
  /// x86: 2-D convolutions channels-last (kiln-channels-last); `printLayouts`
  /// lists each one's layout on stdout.
  bool channelsLast = true;
  bool printLayouts = false;
  /// x86: 3x3 stride-1 channels-last convolutions as Winograd F(m x m, 3 x 3)
  /// with m up to `winogradTile` (kiln-winograd-convs); 0: direct.
  int64_t winogradTile = 4;
  /// x86: expand -> depthwise -> project chains over maps larger than L2 computed in row bands
  /// of about `bandBytes` of their largest map (kiln-band-conv-chains); 0: whole maps.
  int64_t bandBytes = 1572864;
  /// x86: kernels and the entry run with MXCSR's flush-to-zero and
  /// denormals-are-zero set (kiln-flush-denormals); false keeps IEEE denormals.
  bool flushDenormals = true;
  /// Weight-only quantization of matrix-product weights (kiln-quantize-weights):
  /// int8 per output channel, int4 per group of `quantizeGroup` along K; weights or nodes whose
  /// name contains one of `quantizeKeep` stay in f32.
  QuantizeMode quantize = QuantizeMode::None;
  int64_t quantizeGroup = 64;
  bool quantizeF16Scales = false;
  std::vector<std::string> quantizeKeep;
  bool printIrAfterAll = false;       // every pass, to stderr
  std::string printIrAfter;           // one pass (by argument name), to stderr
  std::string dumpIrDir;              // one numbered file per pass, e.g. 007_canonicalize.mlir
  std::function<void(Phase)> onPhase;    // progress reporting, before a phase
  std::function<void(Phase)> afterPhase; // after a phase succeeded
};

/// Adds the passes of one phase to a pass manager anchored on builtin.module: what a target
/// backend provides (compiler/targets/TargetBackend.h).
using PhaseBuilder = std::function<void(Phase, mlir::OpPassManager &)>;

/// Registers every dialect, interface and pass kiln's pipeline uses.
void registerKilnDialects(mlir::DialectRegistry &registry);
void registerKilnPasses();

/// Runs the phases `build` makes, up to and including `last`, verifying between them. Errors are
/// emitted as diagnostics on the module's context.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, Phase last, const PipelineOptions &options,
                                const PhaseBuilder &build);

} // namespace kiln

#endif
