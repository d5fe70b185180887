// Records each kernel's parameters (buffers' rank and element size, scalars' width) for the artifact.
//
// A driver sees kernel parameters as opaque bytes. To check on a launch that every buffer a
// kernel gets is device memory (KILN_CUDA_CHECK_POINTERS, docs/cuda.md), the runtime must know
// which parameters are pointers and how far each buffer extends; after gpu-to-llvm the memrefs
// are flattened descriptors and their ranks are gone, so the table is taken here, right after
// outlining, from the launches' memref operands.
#include "passes/cuda/Passes.h"
#include "passes/cuda/DeviceTransfers.h"

namespace kiln {
#define GEN_PASS_DEF_RECORDKERNELPARAMSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// "mR:E" for a memref of rank R with E-byte elements, "sB" for a B-byte scalar (index: 8).
std::string describe(Type t) {
  if (auto m = dyn_cast<MemRefType>(t))
    return "m" + std::to_string(m.getRank()) + ":" + std::to_string(cuda::elementBytes(m.getElementType()));
  if (t.isIntOrIndexOrFloat())
    return "s" + std::to_string(cuda::elementBytes(t));
  return "";
}

struct RecordKernelParamsPass : impl::RecordKernelParamsPassBase<RecordKernelParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<NamedAttribute> table;
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      std::string params;
      for (Value v : launch.getKernelOperands()) {
        std::string kind = describe(v.getType());
        if (kind.empty()) {
          launch.emitError("a kernel argument of type ") << v.getType() << ", which kiln cannot describe to the runtime";
          return WalkResult::interrupt();
        }
        params += (params.empty() ? "" : " ") + kind;
      }
      table.push_back(NamedAttribute(launch.getKernelName(), StringAttr::get(&getContext(), params)));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    module->setAttr(cuda_attrs::kKernelParams, DictionaryAttr::get(&getContext(), table));
  }
};

} // namespace
} // namespace kiln
