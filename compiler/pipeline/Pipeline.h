// The named compilation phases, their pass pipelines, and the driver that runs them with IR dumps.
#ifndef KILN_COMPILER_PIPELINE_PIPELINE_H
#define KILN_COMPILER_PIPELINE_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln {

/// Phases in pipeline order; `--emit=<phase>` stops after one and prints it.
enum class Phase { Graph, Linalg, Bufferized, Llvm };

const char *phaseName(Phase phase);

/// What the kernels are generated for. The host program is x86-64 code either way.
/// CudaEmulated (for checking without a GPU): the CUDA pipeline's kernels, each gpu.launch run
/// on the CPU thread by thread (kiln-emulate-gpu-blocks), in an ordinary x86-64 artifact.
enum class Target { X86, Cuda, CudaEmulated };

/// Whether the target forms GPU kernels (the CUDA pipeline, run on a GPU or emulated).
inline bool formsGpuKernels(Target t) { return t != Target::X86; }

struct PipelineOptions {
  Target target = Target::X86;
  /// CUDA only: the GPU architecture the PTX is generated for (sm_80, sm_90, ...).
  std::string gpuArch = "sm_80";
  /// CUDA only: the products by constant weights in "f16" or "bf16"
  /// (kiln-half-precision-products), or "" (f32 throughout).
  std::string precision;
  /// CUDA only: attention as one fused kernel (kiln-fuse-attention, then
  /// kiln-form-attention-blocks), or unfused (false: its products to the
  /// runtime's gemm, its softmax as block reductions), to compare the two on a GPU.
  bool gpuAttention = true;
  /// CUDA only: the fewest keys a block of the fused attention takes when a decode step's keys
  /// are split over blocks (kiln-form-attention-blocks' min-split-keys); 0 never splits.
  int64_t gpuAttentionSplitKeys = 256;
  /// Width of the target's vector registers: sizes the contraction
  /// microkernel (512: 8 x 32 floats in 16 of AVX-512's 32 registers; 256:
  /// 4 x 16 floats in 8 of AVX2's 16).
  int vectorBits = 256;
  /// Decoders with past key/values get a runtime-owned, in-place KV cache
  /// (kiln-kv-cache-in-place) instead of present outputs.
  bool kvCache = true;
  /// Graph pattern fusions (norms, GELU, SiLU, attention) and elementwise
  /// fusion; false keeps one kernel per ONNX-level op (to compare plans and
  /// bisect fusion bugs).
  bool fuse = true;
  /// Place intermediates in one per-run arena by liveness (kiln-plan-memory);
  /// false leaves each one to malloc (to bisect planner bugs).
  bool planMemory = true;
  bool printMemoryPlan = false; // the plan of every buffer, to stdout
  /// Weight-only quantization of matrix-product weights (kiln-quantize-weights):
  /// "" (none), "int8" (per output channel) or "int4" (per group of
  /// `quantizeGroup` along K); weights or nodes whose name contains one of
  /// `quantizeKeep` stay in f32.
  std::string quantize;
  int64_t quantizeGroup = 64;
  bool quantizeF16Scales = false;
  std::vector<std::string> quantizeKeep;
  bool printIrAfterAll = false;       // every pass, to stderr
  std::string printIrAfter;           // one pass (by argument name), to stderr
  std::string dumpIrDir;              // one numbered file per pass, e.g. 007_canonicalize.mlir
  std::function<void(Phase)> onPhase;    // progress reporting, before a phase
  std::function<void(Phase)> afterPhase; // after a phase succeeded
};

/// The textual MLIR pass pipeline of each phase.
std::string phasePipeline(Phase phase, const PipelineOptions &options = {});

/// Registers every dialect, interface and pass kiln's pipeline uses.
void registerKilnDialects(mlir::DialectRegistry &registry);
void registerKilnPasses();

/// Runs the phases up to and including `last`. Errors are emitted as
/// diagnostics on the module's context.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, Phase last,
                                const PipelineOptions &options);

} // namespace kiln

#endif
