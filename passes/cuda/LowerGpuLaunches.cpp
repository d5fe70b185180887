// Turns @main's gpu.launch_func ops into calls of the runtime's gpu_launch and keeps the PTX as a module attribute.
#include "passes/cuda/Passes.h"
#include "passes/host/RuntimeContext.h"
#include "passes/host/SourceNodes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERGPULAUNCHESPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Fails (with an error on `launch`) unless `params` ("m2:4 s8 ...") expands to as many launch
/// parameters as `launch` passes: 3 + 2R per memref of rank R, one per scalar.
LogicalResult checkFlattenedCount(gpu::LaunchFuncOp launch, StringRef params) {
  size_t expected = 0;
  SmallVector<StringRef> kinds;
  params.split(kinds, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef kind : kinds) {
    unsigned rank = 0;
    if (kind.consume_front("m") && !kind.split(':').first.getAsInteger(10, rank))
      expected += 3 + 2 * rank;
    else
      expected += 1;
  }
  if (expected == launch.getKernelOperands().size())
    return success();
  return launch.emitError("internal: kernel parameters '")
         << params << "' describe " << expected << " launch parameters, the launch passes "
         << launch.getKernelOperands().size();
}

struct LowerGpuLaunchesPass : impl::LowerGpuLaunchesPassBase<LowerGpuLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
    if (binaries.size() > 1) {
      binaries[1].emitError("expected one gpu.binary (kiln-merge-gpu-modules)");
      return signalPassFailure();
    }
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
    if (!launches.empty() && (!main || main.isExternal())) {
      launches[0].emitError("expected the launches in @main, converted to the LLVM dialect");
      return signalPassFailure();
    }
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
    SmallVector<Attribute> kernels;
    auto paramTable = module->getAttrOfType<DictionaryAttr>(cuda_attrs::kKernelParams);
    for (auto [id, launch] : llvm::enumerate(launches)) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() || launch.hasClusterSize()) {
        launch.emitError("async or clustered launches are not formed by kiln");
        return signalPassFailure();
      }
      // The parameter kinds kiln-record-kernel-params took before the memrefs were flattened:
      // they must account for exactly the operands passed now.
      auto kinds = paramTable ? paramTable.getAs<StringAttr>(launch.getKernelName()) : StringAttr();
      if (paramTable && (!kinds || failed(checkFlattenedCount(launch, kinds.getValue()))))
        return signalPassFailure();
      Location loc = launch.getLoc();
      OpBuilder b(launch);
      // The arguments live in one stack struct, `params` points at each field.
      SmallVector<Type> types;
      for (Value v : launch.getKernelOperands())
        types.push_back(v.getType());
      auto argStruct = LLVM::LLVMStructType::getLiteral(ctx, types);
      int64_t n = types.size();
      auto paramArray = LLVM::LLVMArrayType::get(ptr, std::max<int64_t>(n, 1));
      Value args, params;
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&main.getBody().front());
        Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
        args = LLVM::AllocaOp::create(b, loc, ptr, argStruct, one);
        params = LLVM::AllocaOp::create(b, loc, ptr, paramArray, one);
      }
      for (auto [i, v] : llvm::enumerate(launch.getKernelOperands())) {
        Value field = LLVM::GEPOp::create(b, loc, ptr, argStruct, args, ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
        LLVM::StoreOp::create(b, loc, v, field);
        Value slot = LLVM::GEPOp::create(b, loc, ptr, paramArray, params, ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
        LLVM::StoreOp::create(b, loc, field, slot);
      }
      auto asI64 = [&](Value v) -> Value {
        if (v.getType() == i64)
          return v;
        return LLVM::ZExtOp::create(b, loc, i64, v);
      };
      Value smem = launch.getDynamicSharedMemorySize();
      if (!smem)
        smem = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
      Value context = main.getArgument(0);
      Value runtime = contextField(b, loc, context, ctxfield::kRuntime);
      Value fn = contextField(b, loc, context, ctxfield::kGpuLaunch);
      Value kernelId = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(id));
      auto fnType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                                {ptr, i32, i64, i64, i64, i64, i64, i64, i32, ptr});
      LLVM::CallOp::create(b, loc, fnType,
                           ValueRange{fn, runtime, kernelId, asI64(launch.getGridSizeX()), asI64(launch.getGridSizeY()),
                                      asI64(launch.getGridSizeZ()), asI64(launch.getBlockSizeX()),
                                      asI64(launch.getBlockSizeY()), asI64(launch.getBlockSizeZ()), smem, params});
      llvm::SetVector<StringRef> names;
      collectNodeNames(loc, names);
      SmallVector<Attribute> nameAttrs;
      for (StringRef name : names)
        nameAttrs.push_back(b.getStringAttr(name));
      SmallVector<NamedAttribute> entry = {b.getNamedAttr("name", launch.getKernelName()),
                                           b.getNamedAttr("source_nodes", b.getArrayAttr(nameAttrs))};
      if (kinds)
        entry.push_back(b.getNamedAttr("params", kinds));
      kernels.push_back(b.getDictionaryAttr(entry));
      launch.erase();
    }
    module->setAttr(cuda_attrs::kKernels, ArrayAttr::get(ctx, kernels));
    module->removeAttr(cuda_attrs::kKernelParams);
    if (!binaries.empty()) {
      ArrayAttr objects = binaries[0].getObjects();
      auto object = objects.empty() ? gpu::ObjectAttr() : dyn_cast<gpu::ObjectAttr>(objects[0]);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
        binaries[0].emitError("expected PTX (gpu-module-to-binary{format=isa})");
        return signalPassFailure();
      }
      module->setAttr(cuda_attrs::kPtx, object.getObject());
      binaries[0].erase();
    } else {
      module->setAttr(cuda_attrs::kPtx, StringAttr::get(ctx, ""));
    }
    module->removeAttr("gpu.container_module");
  }
};

} // namespace
} // namespace kiln
