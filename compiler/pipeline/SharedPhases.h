// The pieces of the phase pipelines that every target shares: the graph phase, bufferization down to
// parallel loops, and the host program's lowering to the LLVM dialect.
#ifndef KILN_COMPILER_PIPELINE_SHAREDPHASES_H
#define KILN_COMPILER_PIPELINE_SHAREDPHASES_H

#include "compiler/pipeline/Pipeline.h"
#include "passes/fusion/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <functional>

namespace kiln {

/// Where a target changes the graph phase.
struct GraphPhaseSteps {
  /// kiln-fuse-attention (with --fusion): a target without an attention kernel of its own leaves
  /// attention to the unfused lowering.
  bool fuseAttention = true;
  /// The widest column panel of int8/int4 weights (kiln-quantize-weights, kiln-fold-qdq,
  /// kiln-fold-integer-matmul): 64 for the CPU's vector kernels; 1 on GPUs, where each output
  /// column's weights lie contiguous along k for the block that reduces it.
  int64_t quantizedPanel = 64;
  /// After quantization: the target's weight precision (CUDA's half-precision products).
  std::function<void(mlir::OpPassManager &)> afterQuantize;
  /// After weights are outlined: the target's weight layout (the CPU's column panels).
  std::function<void(mlir::OpPassManager &)> afterOutline;
};

/// Phase graph: fold shapes and constants the importer left, recognize composite patterns
/// (passes/fusion/), the KV cache, quantization, then move weights out.
void addGraphPhase(mlir::OpPassManager &pm, const PipelineOptions &options, const GraphPhaseSteps &steps);

/// kiln-quantize-weights with the options' recipe and panels at most `panel` wide, or nothing.
void addQuantizeWeights(mlir::OpPassManager &pm, const PipelineOptions &options, int64_t panel = 64);

/// Bufferization, the memory plan and deallocation, down to parallel loops: the same for every
/// target but for `beforeLoops`, passes on the bufferized linalg ops of @main once it has its
/// runtime context, and `markLiveSpans` (the plan's views say which buffers may share bytes).
void addBufferizeToLoops(mlir::OpPassManager &pm, const PipelineOptions &options,
                         const std::function<void(mlir::OpPassManager &)> &beforeLoops = nullptr,
                         bool markLiveSpans = false);

/// The host program's lowering to the LLVM dialect (a target adds its kernel passes around it).
void addHostToLlvm(mlir::OpPassManager &pm);

/// kiln-fuse-elementwise and a clean-up, with --fusion (every target's linalg phase).
void addElementwiseFusion(mlir::OpPassManager &pm, const PipelineOptions &options,
                          const FuseElementwisePassOptions &fuse = {});

/// canonicalize then cse, the clean-up after most steps.
void addCleanup(mlir::OpPassManager &pm);

} // namespace kiln

#endif
