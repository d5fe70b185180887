// Runs a target's phases (verified between them, with IR printing and dumps) and registers what they use.
#include "compiler/pipeline/Pipeline.h"

#include "dialects/cpu/IR/Cpu.h"
#include "dialects/graph/IR/Graph.h"
#include "dialects/kernel/IR/Kernel.h"
#include "passes/conversion/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/host/Passes.h"
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

const char *quantizeModeName(QuantizeMode mode) {
  switch (mode) {
  case QuantizeMode::None: return "none";
  case QuantizeMode::Int8: return "int8";
  case QuantizeMode::Int4: return "int4";
  case QuantizeMode::Int8Dynamic: return "int8-dynamic";
  }
  return "?";
}

std::optional<QuantizeMode> parseQuantizeMode(StringRef name) {
  for (QuantizeMode m : {QuantizeMode::None, QuantizeMode::Int8, QuantizeMode::Int4, QuantizeMode::Int8Dynamic})
    if (name == quantizeModeName(m))
      return m;
  return std::nullopt;
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
  registerHostPasses();
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

LogicalResult runPipeline(ModuleOp module, Phase last, const PipelineOptions &options,
                          const PhaseBuilder &build) {
  registerKilnPasses();
  int dumped = 0;
  if (!options.dumpIrDir.empty() && llvm::sys::fs::create_directories(options.dumpIrDir)) {
    module.emitError("cannot create --dump-ir-dir '" + options.dumpIrDir + "'");
    return failure();
  }
  for (Phase phase : kAllPhases) {
    if (options.onPhase)
      options.onPhase(phase);
    PassManager pm(module.getContext());
    build(phase, pm);
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
