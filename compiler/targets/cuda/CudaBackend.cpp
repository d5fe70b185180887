// --target=cuda and --target=cuda-emulated: every loop nest a GPU launch; matrix products to the
// runtime's gemm (cuBLASLt) with kiln's kernels as fallback; kernels through NVVM to PTX
// (in-process), the host program x86-64 code calling the runtime's launcher. The emulated target
// shares the pipeline up to the formed launches, then runs them on the CPU thread by thread.
#include "compiler/pipeline/SharedPhases.h"
#include "compiler/targets/TargetBackend.h"
#include "compiler/targets/cuda/CudaTarget.h"
#include "compiler/targets/x86/X86Target.h"

#include "passes/conversion/Passes.h"
#include "passes/cuda/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/host/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {
namespace {

class CudaBackend final : public TargetBackend {
public:
  /// `emulated`: the launches run on the CPU (kiln-emulate-gpu-blocks) in an x86-64 artifact.
  explicit CudaBackend(bool emulated) : emulated(emulated) {}

  StringRef name() const override { return emulated ? "cuda-emulated" : "cuda"; }
  bool formsGpuKernels() const override { return true; }
  bool needsGpuArch() const override { return !emulated; }
  // A CUDA artifact's host program only computes sizes and launches kernels: baseline x86-64, so
  // it loads on any GPU server.
  std::string defaultHostCpu() const override { return emulated ? "host" : "x86-64"; }

  bool configure(PipelineOptions &options, const std::string &hostCpu, std::string &error) const override {
    return configureX86VectorBits(options, hostCpu, error);
  }

  void buildPhase(Phase phase, OpPassManager &pm, const PipelineOptions &options) const override {
    switch (phase) {
    case Phase::Graph: {
      GraphPhaseSteps steps;
      // Attention is fused only for its own kernel (kiln-form-attention-blocks); unfused, its two
      // products go to cuBLASLt and its softmax to block reductions.
      steps.fuseAttention = options.gpuAttention;
      // int8/int4 weights one output column per panel: a block per output reads its column's
      // bytes contiguously (LowerQuantizedMatMul's reduction form).
      steps.quantizedPanel = 1;
      if (!options.precision.empty())
        steps.afterQuantize = [type = options.precision](OpPassManager &p) {
          HalfPrecisionProductsPassOptions half;
          half.type = type;
          p.addPass(createHalfPrecisionProductsPass(half));
          p.addPass(createCanonicalizerPass());
        };
      addGraphPhase(pm, options, steps);
      return;
    }
    case Phase::Linalg: {
      ConvertGraphToLinalgPassOptions lowering;
      lowering.vectorBits = options.vectorBits;
      lowering.wideHalfProducts = true;
      lowering.gpuAttention = options.gpuAttention;
      lowering.gpuNorms = true;
      pm.addPass(createConvertGraphToLinalgPass(lowering));
      addCleanup(pm);
      // Rotary embeddings read q and k's split heads in place: no transposed copies.
      pm.addNestedPass<func::FuncOp>(createTransposedReadsPass());
      // A product's bias or residual stays on the product's own shape: its cuBLASLt epilogue.
      FuseElementwisePassOptions fuse;
      fuse.keepProductEpilogues = true;
      addElementwiseFusion(pm, options, fuse);
      // A bias or residual added to an int8/int4 product starts its sum (no launch of its own).
      pm.addNestedPass<func::FuncOp>(createFoldReductionAddendsPass());
      pm.addNestedPass<func::FuncOp>(createAttentionOperandViewsPass());
      // After the last CSE, which merges identical fills.
      pm.addNestedPass<func::FuncOp>(createFillPerDestinationPass());
      pm.addNestedPass<func::FuncOp>(createMarkGemmEpiloguesPass());
      return;
    }
    case Phase::Bufferized:
      addBufferizeToLoops(pm, options, [&](OpPassManager &p) {
        p.addPass(createCallDeviceGemmPass());
        FormAttentionBlocksPassOptions attention;
        attention.minSplitKeys = options.gpuAttentionSplitKeys;
        p.addPass(createFormAttentionBlocksPass(attention));
        p.addPass(createFormNormBlocksPass());
      }, /*markLiveSpans=*/true); // kiln-fuse-sibling-loops merges loops on buffers live together
      pm.addNestedPass<func::FuncOp>(createResolveReshapeShapesPass());
      pm.addNestedPass<func::FuncOp>(createParallelizeRowLoopsPass());
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createFormBlockReductionsPass());
      // After the reductions took their fills in (a fill merged into another loop would stay a launch).
      pm.addNestedPass<func::FuncOp>(createFuseSiblingLoopsPass());
      pm.addPass(createFormGpuLaunchesPass());
      pm.addPass(createLowerStringOpsPass());
      pm.addPass(createLowerWorkspacePass());
      pm.addPass(createCheckHeapAllocationsPass());
      addCleanup(pm);
      if (emulated) {
        pm.addPass(createEmulateGpuBlocksPass());
      } else {
        pm.addPass(createGpuLaunchSinkIndexComputationsPass());
        pm.addPass(createGpuKernelOutliningPass());
        pm.addPass(createMergeGpuModulesPass());
        pm.addPass(createRecordKernelParamsPass());
      }
      addCleanup(pm);
      return;
    case Phase::Llvm:
      // Emulated: the launches are host loops now; heap buffers stay malloc's (host memory is the
      // "device" memory), so the plain host lowering.
      if (emulated) {
        pm.addNestedPass<func::FuncOp>(createApproximateMathPass());
        pm.addNestedPass<func::FuncOp>(createExpandIntegerPowerPass());
        addHostToLlvm(pm);
        pm.addPass(createReconcileUnrealizedCastsPass());
        pm.addPass(createEmitEntryPointPass());
        pm.addPass(createCanonicalizerPass());
        return;
      }
      {
        GpuNVVMAttachTargetOptions nvvm;
        nvvm.chip = options.gpuArch;
        nvvm.optLevel = 3;
        pm.addPass(createGpuNVVMAttachTarget(nvvm));
        OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
        kernels.addPass(createApproximateMathPass());
        kernels.addPass(createExpandIntegerPowerPass());
        kernels.addPass(createConvertVectorToSCFPass());
        kernels.addPass(createSCFToControlFlowPass());
        kernels.addPass(memref::createExpandStridedMetadataPass());
        kernels.addPass(createLowerAffinePass());
        kernels.addPass(createConvertVectorToLLVMPass());
        kernels.addPass(createConvertGpuOpsToNVVMOps());
        addCleanup(kernels);
        kernels.addPass(createReconcileUnrealizedCastsPass());
        GpuModuleToBinaryPassOptions binary;
        binary.compilationTarget = "isa";
        pm.addPass(createGpuModuleToBinaryPass(binary));
        addHostToLlvm(pm);
        pm.addPass(createGpuToLLVMConversionPass());
        pm.addPass(createReconcileUnrealizedCastsPass());
        pm.addPass(createLowerGpuLaunchesPass());
        pm.addPass(createLowerDeviceHeapPass());
        pm.addPass(createEmitEntryPointPass());
        pm.addPass(createCanonicalizerPass());
      }
      return;
    }
  }

  LogicalResult generateCode(ModuleOp module, const PipelineOptions &options, const CodegenRequest &request,
                             CodegenResult &result, std::string &error) const override {
    if (!emulated) {
      // The kernels' PTX, made in-process by the pipeline, assembled for the named architecture
      // where ptxas exists (the driver JIT-compiles the PTX otherwise).
      auto ptx = module->getAttrOfType<StringAttr>("kiln.cuda_ptx");
      if (!ptx) {
        error = "internal: the CUDA pipeline left no PTX";
        return failure();
      }
      artifact::CudaInfo &cuda = result.target.cuda;
      cuda.present = true;
      cuda.arch = options.gpuArch;
      cuda.ptx = ptx.str();
      module->removeAttr("kiln.cuda_ptx");
      const std::string ptxas = findPtxas(request.ptxas);
      if (!ptxas.empty() && !cuda.ptx.empty()) {
        if (request.progress)
          request.progress("assembling the kernels (ptxas)");
        if (!assemblePtx(ptxas, cuda.ptx, cuda.arch, cuda.cubin, error))
          return failure();
        result.steps.push_back("ptxas");
      }
      if (request.cubinOnly) {
        if (cuda.cubin.empty() && !cuda.ptx.empty()) {
          error = "--gpu-code=cubin: no ptxas was found to assemble the kernels (give --ptxas=PATH)";
          return failure();
        }
        cuda.ptx.clear();
      }
    }
    return generateX86HostCode(module, request, X86TargetOptions{request.hostCpu}, result, error);
  }

private:
  bool emulated;
};

} // namespace

void registerCudaTargetBackends() {
  registerTargetBackend(std::make_unique<CudaBackend>(/*emulated=*/false));
  registerTargetBackend(std::make_unique<CudaBackend>(/*emulated=*/true));
}

} // namespace kiln
