// The graph phase, bufferization and the host lowering to LLVM, built with typed passes.
#include "compiler/pipeline/SharedPhases.h"

#include "passes/fusion/Passes.h"
#include "passes/graph/Passes.h"
#include "passes/host/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/quant/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void addCleanup(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void addElementwiseFusion(OpPassManager &pm, const PipelineOptions &options, const FuseElementwisePassOptions &fuse) {
  if (!options.fuse)
    return;
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass(fuse));
  addCleanup(pm);
}

void addQuantizeWeights(OpPassManager &pm, const PipelineOptions &options, int64_t panel) {
  if (options.quantize == QuantizeMode::None)
    return;
  const bool int4 = options.quantize == QuantizeMode::Int4;
  QuantizeWeightsPassOptions recipe;
  recipe.bits = int4 ? 4 : 8;
  recipe.groupSize = int4 ? options.quantizeGroup : 0; // int8 modes: per output channel
  recipe.f16Scales = options.quantizeF16Scales;
  recipe.dynamic = options.quantize == QuantizeMode::Int8Dynamic;
  recipe.keep.assign(options.quantizeKeep.begin(), options.quantizeKeep.end());
  recipe.panel = panel;
  pm.addPass(createQuantizeWeightsPass(recipe));
}

void addGraphPhase(OpPassManager &pm, const PipelineOptions &options, const GraphPhaseSteps &steps) {
  addCleanup(pm);
  FoldQdqPassOptions qdq;
  qdq.panel = steps.quantizedPanel;
  pm.addPass(createFoldQdqPass(qdq));
  FoldIntegerMatMulPassOptions integer;
  integer.panel = steps.quantizedPanel;
  pm.addPass(createFoldIntegerMatMulPass(integer));
  if (options.fuse) {
    // Layer norm before RMS norm: a centered chain is also an RMS of x - mean.
    pm.addPass(createFuseLayerNormPass());
    pm.addPass(createFuseRmsNormPass());
    pm.addPass(createFuseGeluPass());
    pm.addPass(createFuseSiluPass());
    pm.addPass(createFuseRotaryPass());
    pm.addPass(createFuseHardSwishPass());
    if (steps.fuseAttention)
      pm.addPass(createFuseAttentionPass());
  }
  if (options.kvCache) {
    KvCacheInPlacePassOptions kv;
    kv.blockSize = options.kvBlockSize;
    pm.addPass(createKvCacheInPlacePass(kv));
    pm.addPass(createLastPositionLogitsPass());
  }
  addQuantizeWeights(pm, options, steps.quantizedPanel);
  if (steps.afterQuantize)
    steps.afterQuantize(pm);
  pm.addPass(createTieSymbolicDimsPass());
  pm.addPass(createOutlineWeightsPass());
  if (steps.afterOutline)
    steps.afterOutline(pm);
}

void addBufferizeToLoops(OpPassManager &pm, const PipelineOptions &options,
                         const std::function<void(OpPassManager &)> &beforeLoops, bool markLiveSpans) {
  // Dynamic sizes written in terms of @main's arguments (a tensor.dim of a product's or a
  // reshape's result becomes the input dims it comes from), so that kiln-plan-memory can place
  // the buffers bufferization makes for them in the arena: a decoder's [batch, sequence, N]
  // intermediates were heap allocations on every run (425 MB page-faulted in per 512-token run
  // of a 4-layer TinyLlama-shaped model).
  pm.addPass(memref::createResolveRankedShapeTypeResultDimsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  if (options.planMemory) {
    PlanMemoryPassOptions plan;
    plan.print = options.printMemoryPlan;
    plan.markLiveSpans = markLiveSpans;
    pm.addPass(createPlanMemoryPass(plan));
  }
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addNestedPass<func::FuncOp>(createMemrefCopyToLinalgPass());
  pm.addPass(createAddRuntimeContextPass());
  if (beforeLoops)
    beforeLoops(pm);
  pm.addPass(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
}

void addHostToLlvm(OpPassManager &pm) {
  // bf16 conversions are expanded into integer arithmetic: LLVM would call compiler-rt's
  // __truncsfbf2, which Debian 12's libgcc does not have, so the artifact would not load.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
}

} // namespace kiln
