// Moves every outlined kernel into one gpu.module, so the artifact carries one PTX module.
#include "passes/cuda/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_MERGEGPUMODULESPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct MergeGpuModulesPass : impl::MergeGpuModulesPassBase<MergeGpuModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    MLIRContext *ctx = &getContext();
    gpu::GPUModuleOp target = modules.front();
    StringAttr merged = StringAttr::get(ctx, "kernels");
    // Outlining names every kernel after its function (main_kernel) and makes the module names
    // unique (main_kernel, main_kernel_0, ...): each kernel takes its module's name.
    module.walk([&](gpu::LaunchFuncOp launch) {
      launch.setKernelAttr(SymbolRefAttr::get(merged, {FlatSymbolRefAttr::get(launch.getKernelModuleName())}));
    });
    for (gpu::GPUModuleOp m : modules) {
      StringAttr name = m.getNameAttr();
      for (auto f : m.getOps<gpu::GPUFuncOp>())
        f.setName(name);
      if (m == target)
        continue;
      for (Operation &op : llvm::make_early_inc_range(m.getBody()->without_terminator())) {
        // Outlining copied each constant global a kernel reads into that kernel's module: the
        // copies share the host global's name and value, so one is kept.
        auto global = dyn_cast<memref::GlobalOp>(op);
        if (global && target.lookupSymbol(global.getSymNameAttr()))
          continue;
        op.moveBefore(target.getBody(), target.getBody()->end());
      }
      m.erase();
    }
    target.setName(merged);
  }
};

} // namespace
} // namespace kiln
