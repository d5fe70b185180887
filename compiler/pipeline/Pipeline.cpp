// kiln's pipeline as data: one textual pass pipeline per phase, verified between phases.
#include "compiler/pipeline/Pipeline.h"

#include "dialects/cpu/IR/Cpu.h"
#include "dialects/graph/IR/Graph.h"
#include "dialects/kernel/IR/Kernel.h"
#include "passes/conversion/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/cuda/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/graph/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/quant/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

using namespace mlir;

namespace kiln {

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Graph: return "graph";
  case Phase::Linalg: return "linalg";
  case Phase::Bufferized: return "bufferized";
  case Phase::Llvm: return "llvm";
  }
  return "?";
}

/// kiln-quantize-weights with the options' recipe, or nothing.
static std::string quantizePass(const PipelineOptions &options) {
  if (options.quantize.empty())
    return "";
  std::string keep;
  for (const std::string &k : options.quantizeKeep)
    keep += (keep.empty() ? "" : ",") + k;
  return "kiln-quantize-weights{bits=" + std::string(options.quantize == "int4" ? "4" : "8") +
         " group-size=" + std::to_string(options.quantize == "int4" ? options.quantizeGroup : 0) +
         " f16-scales=" + (options.quantizeF16Scales ? "true" : "false") +
         (options.quantize == "int8-dynamic" ? " dynamic=true" : "") +
         (keep.empty() ? "" : " keep=" + keep) + "},";
}

/// Host lowering to the LLVM dialect shared by both targets (the CPU pipeline
/// adds its kernel passes around it). bf16 conversions are expanded into integer
/// arithmetic: LLVM would call compiler-rt's __truncsfbf2, which Debian 12's
/// libgcc does not have, so the artifact would not load.
static const char *kHostToLlvm =
    "arith-expand{include-bf16=true},convert-vector-to-scf,convert-math-to-funcs,"
    "lower-affine,convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "convert-math-to-llvm,convert-math-to-libm,finalize-memref-to-llvm,"
    "convert-vector-to-llvm,"
    "convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,";

/// Bufferization, the memory plan and deallocation, down to parallel loops:
/// the same for both targets, but for `beforeLoops`, passes on the bufferized
/// linalg ops of @main once it has its runtime context.
static std::string bufferizePipeline(const PipelineOptions &options, const std::string &beforeLoops = "") {
  return std::string("eliminate-empty-tensors,empty-tensor-to-alloc-tensor,"
                     "one-shot-bufferize{bufferize-function-boundaries "
                     "function-boundary-type-conversion=identity-layout-map},canonicalize,") +
         (options.planMemory ? (options.printMemoryPlan ? "kiln-plan-memory{print=true}," : "kiln-plan-memory,") : "") +
         "ownership-based-buffer-deallocation,canonicalize,"
         "buffer-deallocation-simplification,bufferization-lower-deallocations,"
         "canonicalize,cse,"
         "convert-bufferization-to-memref,func.func(kiln-memref-copy-to-linalg),kiln-add-runtime-context," +
         beforeLoops +
         "scf-forall-to-parallel,"
         "func.func(convert-linalg-to-parallel-loops),canonicalize,";
}

/// --target=cuda: no CPU tiling or microkernels; matrix products go to the
/// runtime's gemm (cuBLASLt) with kiln's kernels as fallback; every loop nest becomes a
/// GPU launch, kernels go through NVVM to PTX (LLVM's NVPTX backend,
/// in-process), the host program to x86-64 calling the runtime's launcher.
/// Target::CudaEmulated shares it up to the formed launches, then runs them on the CPU.
static std::string cudaPipeline(Phase phase, const PipelineOptions &options) {
  switch (phase) {
  case Phase::Graph: // shared with the CPU pipeline
    break;
  case Phase::Linalg:
    return "builtin.module(kiln-convert-graph-to-linalg{vector-bits=" + std::to_string(options.vectorBits) +
           " wide-half-products=true gpu-attention=" + (options.gpuAttention ? "true" : "false") + "},canonicalize,cse," +
           (options.fuse ? "func.func(kiln-fuse-elementwise),canonicalize,cse" : "") + ")";
  case Phase::Bufferized:
    return "builtin.module(" + bufferizePipeline(options, "kiln-call-device-gemm,kiln-form-attention-blocks{min-split-keys=" +
                                                    std::to_string(options.gpuAttentionSplitKeys) + "},") +
           "func.func(kiln-resolve-reshape-shapes),canonicalize,kiln-form-block-reductions,kiln-form-gpu-launches,kiln-lower-string-ops,kiln-lower-workspace,kiln-check-heap-allocations,canonicalize,cse," +
           (options.target == Target::CudaEmulated
                ? "kiln-emulate-gpu-blocks,canonicalize,cse)"
                : "gpu-launch-sink-index-computations,gpu-kernel-outlining,kiln-merge-gpu-modules,canonicalize,cse)");
  case Phase::Llvm:
    // Emulated: the launches are host loops now; heap buffers stay malloc's (host memory is the
    // "device" memory), so the plain host lowering.
    if (options.target == Target::CudaEmulated)
      return std::string("builtin.module(func.func(kiln-approximate-math),func.func(kiln-expand-integer-power),") +
             kHostToLlvm + "reconcile-unrealized-casts,kiln-emit-entry-point,canonicalize)";
    return "builtin.module(nvvm-attach-target{chip=" + options.gpuArch +
           " O=3},gpu.module(kiln-approximate-math,kiln-expand-integer-power,convert-vector-to-scf,convert-scf-to-cf,expand-strided-metadata,lower-affine,convert-vector-to-llvm,"
           "convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa}," +
           kHostToLlvm + "gpu-to-llvm,reconcile-unrealized-casts,kiln-lower-gpu-launches,kiln-lower-device-heap,"
           "kiln-emit-entry-point,canonicalize)";
  }
  return "";
}

std::string phasePipeline(Phase phase, const PipelineOptions &options) {
  if (formsGpuKernels(options.target) && phase != Phase::Graph)
    return cudaPipeline(phase, options);
  std::string microkernel = options.vectorBits >= 512 ? "{rows=8 columns=32}" : "{rows=4 columns=16}";
  switch (phase) {
  case Phase::Graph:
  {
    // Fold shapes and constants the importer left, recognize composite
    // patterns (passes/fusion/), then move weights out.
    // Layer norm before RMS norm: a centered chain is also an RMS of x - mean.
    // Attention for the GPU only with gpuAttention: its kernel there is kiln-form-attention-blocks'
    // (a block per 8 query rows); unfused, its two products go to cuBLASLt and its softmax to
    // block reductions.
    std::string fusions = std::string("kiln-fuse-layer-norm,kiln-fuse-rms-norm,kiln-fuse-gelu,kiln-fuse-silu,") +
                          (formsGpuKernels(options.target) && !options.gpuAttention ? "" : "kiln-fuse-attention,");
    return std::string("builtin.module(canonicalize,cse,kiln-fold-qdq,kiln-fold-integer-matmul,") + (options.fuse ? fusions : "") +
           (options.kvCache ? "kiln-kv-cache-in-place,kiln-last-position-logits," : "") +
           quantizePass(options) +
           (options.precision.empty() ? "" : "kiln-half-precision-products{type=" + options.precision + "},canonicalize,") +
           "kiln-tie-symbolic-dims,kiln-outline-weights" +
           // Column panels suit the CPU's microkernels; cuBLASLt and the GPU's loops read [K, N].
           (formsGpuKernels(options.target) ? ")" : ",kiln-pack-matmul-weights)");
  }
  case Phase::Linalg:
    return "builtin.module(kiln-convert-graph-to-linalg{vector-bits=" + std::to_string(options.vectorBits) +
           "},canonicalize,cse," +
           (options.fuse ? "func.func(kiln-fuse-elementwise),canonicalize,cse," : "") +
           "func.func(kiln-tile-contractions),canonicalize,cse," +
           (options.fuse ? "func.func(kiln-fuse-epilogues),canonicalize,cse," : "") +
           "func.func(kiln-vectorize-contractions" + microkernel + "),canonicalize,cse)";
  case Phase::Bufferized:
    return "builtin.module(" + bufferizePipeline(options) + "kiln-lower-string-ops,kiln-form-cpu-launches,kiln-count-kernel-cost,kiln-lower-workspace,kiln-check-heap-allocations,"
           "canonicalize,cse)";
  case Phase::Llvm:
    // libm serves tanh/erf (accurate; vectorized approximations come with
    // the performance work), LLVM intrinsics the rest.
    return "builtin.module(func.func(kiln-approximate-math),func.func(kiln-expand-integer-power),func.func(kiln-select-pair-products{vector-bits=" +
           std::to_string(options.vectorBits) + "}),func.func(kiln-prefetch-weight-streams)," + kHostToLlvm +
           "reconcile-unrealized-casts,kiln-outline-cpu-launches,"
           "kiln-emit-entry-point,canonicalize)";
  }
  return "";
}

void registerKilnDialects(DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, cpu::CpuDialect, kernel::KernelDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

void registerKilnPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  registerAllPasses();
  registerGraphPasses();
  registerMemoryPasses();
  registerQuantPasses();
  registerFusionPasses();
  registerConversionPasses();
  registerCpuPasses();
  registerCudaPasses();
}

namespace {
/// Writes the module after every pass to DIR/NNN_<pass>.mlir, numbered across
/// phases, so a compile's whole history can be diffed file by file.
struct DumpIrInstrumentation : PassInstrumentation {
  DumpIrInstrumentation(std::string dir, int &counter) : dir(std::move(dir)), counter(counter) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    if (!isa<ModuleOp>(op))
      op = op->getParentOfType<ModuleOp>();
    if (!op || op->getParentOp())
      return;
    char name[16];
    std::snprintf(name, sizeof name, "%03d_", ++counter);
    std::string path = dir + "/" + name + pass->getArgument().str() + ".mlir";
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return;
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(16);
    flags.elideLargeResourceString(64);
    op->print(os, flags);
  }
  std::string dir;
  int &counter;
};
} // namespace

LogicalResult runPipeline(ModuleOp module, Phase last,
                          const PipelineOptions &options) {
  registerKilnPasses();
  int dumped = 0;
  if (!options.dumpIrDir.empty() && llvm::sys::fs::create_directories(options.dumpIrDir)) {
    module.emitError("cannot create --dump-ir-dir '" + options.dumpIrDir + "'");
    return failure();
  }
  for (Phase phase : {Phase::Graph, Phase::Linalg, Phase::Bufferized, Phase::Llvm}) {
    if (options.onPhase)
      options.onPhase(phase);
    PassManager pm(module.getContext());
    // The text is anchored on builtin.module; pm already is, so parse its body.
    std::string text = phasePipeline(phase, options);
    StringRef body = StringRef(text).drop_front(strlen("builtin.module(")).drop_back();
    if (failed(parsePassPipeline(body, pm, llvm::errs())))
      return failure();
    if (options.printIrAfterAll || !options.printIrAfter.empty()) {
      module.getContext()->disableMultithreading();
      std::string only = options.printIrAfter;
      bool all = options.printIrAfterAll;
      pm.enableIRPrinting(
          [](Pass *, Operation *) { return false; },
          [all, only](Pass *pass, Operation *) {
            return all || pass->getArgument() == only;
          },
          /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
    }
    if (!options.dumpIrDir.empty()) {
      module.getContext()->disableMultithreading();
      pm.addInstrumentation(std::make_unique<DumpIrInstrumentation>(options.dumpIrDir, dumped));
    }
    if (failed(pm.run(module)))
      return failure();
    if (options.afterPhase)
      options.afterPhase(phase);
    if (phase == last)
      break;
  }
  return success();
}

} // namespace kiln
