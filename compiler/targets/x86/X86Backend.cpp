// --target=x86: kernels as x86-64 loops with cache tiles and register microkernels, run on the
// runtime's thread pool; the phases' passes and the code generation.
#include "compiler/pipeline/SharedPhases.h"
#include "compiler/targets/TargetBackend.h"
#include "compiler/targets/x86/X86Target.h"

#include "passes/conversion/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/host/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void addCpuKernelLaunches(OpPassManager &pm) {
  pm.addPass(createLowerStringOpsPass());
  pm.addPass(createFormCpuLaunchesPass());
  pm.addPass(createCountKernelCostPass());
  pm.addPass(createRunBandSectionsPass());
  pm.addPass(createLowerWorkspacePass());
  pm.addPass(createCheckHeapAllocationsPass());
  addCleanup(pm);
}

void addCpuHostToLlvm(OpPassManager &pm) {
  addHostToLlvm(pm);
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createOutlineCpuLaunchesPass());
  pm.addPass(createEmitEntryPointPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {

class X86Backend final : public TargetBackend {
public:
  StringRef name() const override { return "x86"; }

  bool configure(PipelineOptions &options, const std::string &hostCpu, std::string &error) const override {
    return configureX86VectorBits(options, hostCpu, error);
  }

  void buildPhase(Phase phase, OpPassManager &pm, const PipelineOptions &options) const override {
    switch (phase) {
    case Phase::Graph: {
      GraphPhaseSteps steps;
      // Column panels suit the microkernels (cuBLASLt and the GPU's loops read [K, N]).
      // Channels-last convolution weights in panels one AVX2 register block
      // wide (16 columns): a 64-column panel's rows, 256 bytes apart, filled
      // a quarter of the L1 sets it used (resnet18 1 thread: 49.9 -> 47.3 ms,
      // its 7x7 stage 3.8 -> 2.6 ms). AVX-512 keeps 64 (its 6 x 64 block).
      steps.afterOutline = [&options, vectorBits = options.vectorBits](OpPassManager &p) {
        PackMatmulWeightsPassOptions packing;
        packing.convPanel = vectorBits >= 512 ? 64 : 16;
        p.addPass(createPackMatmulWeightsPass(packing));
        p.addPass(createFoldChannelScalesPass());
        p.addPass(createSplitSpatialMeansPass());
        // After the packing: the bands' 1x1 convolutions share one packed weight.
        if (options.channelsLast && options.bandBytes > 0) {
          BandConvChainsPassOptions bands;
          bands.bandBytes = options.bandBytes;
          bands.print = options.printLayouts;
          p.addPass(createBandConvChainsPass(bands));
        }
      };
      steps.afterQuantize = [&options](OpPassManager &p) {
        p.addPass(createConstantGemmToMatmulPass());
        p.addPass(createPadProductColumnsPass());
        if (options.channelsLast) {
          ChannelsLastPassOptions layout;
          layout.print = options.printLayouts;
          p.addPass(createChannelsLastPass(layout));
          if (options.winogradTile) {
            WinogradConvsPassOptions winograd;
            winograd.tile = options.winogradTile;
            winograd.panel = options.vectorBits >= 512 ? 64 : 16; // as the products' panels below
            winograd.print = options.printLayouts;
            p.addPass(createWinogradConvsPass(winograd));
          }
        }
      };
      addGraphPhase(pm, options, steps);
      return;
    }
    case Phase::Linalg: {
      ConvertGraphToLinalgPassOptions lowering;
      lowering.vectorBits = options.vectorBits;
      lowering.rowVectorReductions = true;
      pm.addPass(createConvertGraphToLinalgPass(lowering));
      addCleanup(pm);
      addElementwiseFusion(pm, options);
      TileContractionsPassOptions tiles;
      tiles.rowBlock = options.vectorBits >= 512 ? 8 : 6; // the microkernel's rows below
      tiles.widePanelRows = options.vectorBits >= 512 ? 6 : 0;
      pm.addNestedPass<func::FuncOp>(createTileContractionsPass(tiles));
      addCleanup(pm);
      if (options.fuse) {
        pm.addNestedPass<func::FuncOp>(createFuseEpiloguesPass());
        addCleanup(pm);
      }
      VectorizeContractionsPassOptions microkernel;
      microkernel.rows = options.vectorBits >= 512 ? 8 : 6;
      microkernel.columns = options.vectorBits >= 512 ? 32 : 16;
      // Reductions over more than 256 steps run in chunks of about 128 (an
      // implicit convolution's window rows, over 384, in chunks of about 192:
      // 64 channels of a 3-wide window), so that the rows' operands and the
      // panel's chunk stay in cache across the tile's row blocks
      // (docs/performance.md: resnet's 512-channel convolutions).
      microkernel.reductionChunk = 128;
      microkernel.convInnerChunk = 192;
      pm.addNestedPass<func::FuncOp>(createVectorizeContractionsPass(microkernel));
      addCleanup(pm);
      VectorizeElementwisePassOptions elementwise;
      elementwise.lanes = options.vectorBits >= 512 ? 16 : 8;
      pm.addNestedPass<func::FuncOp>(createVectorizeElementwisePass(elementwise));
      addCleanup(pm);
      pm.addNestedPass<func::FuncOp>(createConcatInPlacePass());
      pm.addNestedPass<func::FuncOp>(createPadInPlacePass());
      pm.addNestedPass<func::FuncOp>(createSeparateBandBuffersPass());
      return;
    }
    case Phase::Bufferized:
      addBufferizeToLoops(pm, options, [&options](OpPassManager &p) {
        VectorizeCopiesPassOptions copies;
        copies.vectorBits = options.vectorBits;
        p.addNestedPass<func::FuncOp>(createVectorizeCopiesPass(copies));
      });
      addCpuKernelLaunches(pm);
      return;
    case Phase::Llvm: {
      pm.addNestedPass<func::FuncOp>(createApproximateMathPass());
      pm.addNestedPass<func::FuncOp>(createExpandIntegerPowerPass());
      SelectPairProductsPassOptions pairs;
      pairs.vectorBits = options.vectorBits;
      pm.addNestedPass<func::FuncOp>(createSelectPairProductsPass(pairs));
      pm.addNestedPass<func::FuncOp>(createPrefetchWeightStreamsPass());
      addCpuHostToLlvm(pm);
      if (options.flushDenormals)
        pm.addPass(createFlushDenormalsPass());
      return;
    }
    }
  }

  LogicalResult generateCode(ModuleOp module, const PipelineOptions &, const CodegenRequest &request,
                             CodegenResult &result, std::string &error) const override {
    return generateX86HostCode(module, request, X86TargetOptions{request.hostCpu}, result, error);
  }
};

} // namespace

bool configureX86VectorBits(PipelineOptions &options, const std::string &hostCpu, std::string &error) {
  X86TargetOptions target;
  target.cpu = hostCpu;
  options.vectorBits = x86VectorBits(target, error);
  return options.vectorBits != 0;
}

LogicalResult generateX86HostCode(ModuleOp module, const CodegenRequest &request, const X86TargetOptions &target,
                                  CodegenResult &result, std::string &error) {
  if (request.progress)
    request.progress("generating x86-64 code");
  X86TargetInfo info;
  const X86Output kind = request.output == CodeOutput::LlvmIr     ? X86Output::LlvmIr
                         : request.output == CodeOutput::Assembly ? X86Output::Assembly
                                                                  : X86Output::SharedObject;
  if (failed(emitX86(module, target, kind, result.code, info, error)))
    return failure();
  result.steps.push_back("x86-64");
  result.target.triple = info.triple;
  result.target.cpu = info.cpu;
  result.target.cpuFeatures = info.requiredFeatures;
  return success();
}

void registerX86TargetBackends() { registerTargetBackend(std::make_unique<X86Backend>()); }

} // namespace kiln
