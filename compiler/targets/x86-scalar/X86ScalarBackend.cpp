// --target=x86-scalar: a deliberately plain CPU target (no weight panels, no tiling, no register
// microkernels, LLVM's vectorizers off): the reference the tuned x86 target is checked against,
// and the example of what a new target needs (this folder and one line in ../Targets.def).
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
namespace {

class X86ScalarBackend final : public TargetBackend {
public:
  StringRef name() const override { return "x86-scalar"; }

  bool configure(PipelineOptions &options, const std::string &hostCpu, std::string &error) const override {
    return configureX86VectorBits(options, hostCpu, error);
  }

  void buildPhase(Phase phase, OpPassManager &pm, const PipelineOptions &options) const override {
    switch (phase) {
    case Phase::Graph:
      addGraphPhase(pm, options, GraphPhaseSteps());
      return;
    case Phase::Linalg:
      pm.addPass(createConvertGraphToLinalgPass());
      addCleanup(pm);
      addElementwiseFusion(pm, options);
      return;
    case Phase::Bufferized:
      // Launches on the runtime's threads stay: they are the host/kernel split (and the profile),
      // not a speed-up of the code inside a kernel.
      addBufferizeToLoops(pm, options);
      addCpuKernelLaunches(pm);
      return;
    case Phase::Llvm:
      pm.addNestedPass<func::FuncOp>(createApproximateMathPass());
      pm.addNestedPass<func::FuncOp>(createExpandIntegerPowerPass());
      addCpuHostToLlvm(pm);
      return;
    }
  }

  LogicalResult generateCode(ModuleOp module, const PipelineOptions &, const CodegenRequest &request,
                             CodegenResult &result, std::string &error) const override {
    X86TargetOptions target;
    target.cpu = request.hostCpu;
    target.vectorize = false;
    return generateX86HostCode(module, request, target, result, error);
  }
};

} // namespace

void registerX86ScalarTargetBackends() { registerTargetBackend(std::make_unique<X86ScalarBackend>()); }

} // namespace kiln
