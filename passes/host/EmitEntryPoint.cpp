// Emits kiln_entry(ctx, inputs, outputs): tensors in, memref descriptors to @main, results out.
#include "passes/host/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_EMITENTRYPOINTPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct EmitEntryPointPass : impl::EmitEntryPointPassBase<EmitEntryPointPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    if (!main) {
      module.emitError("no @main to wrap");
      return signalPassFailure();
    }
    auto argRanks = main->getAttrOfType<DenseI64ArrayAttr>(abi::kArgRanks);
    auto resultRanks = main->getAttrOfType<DenseI64ArrayAttr>(abi::kResultRanks);
    auto elemBytes = main->getAttrOfType<DenseI64ArrayAttr>(abi::kResultElemBytes);
    if (!argRanks || !resultRanks || !elemBytes) {
      main.emitError("@main has no ABI record (run kiln-add-runtime-context)");
      return signalPassFailure();
    }
    Location loc = main.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64), i32 = IntegerType::get(ctx, 32), i8 = IntegerType::get(ctx, 8);
    // struct kiln_abi_tensor { void *data; void *allocated; int64_t *shape; }
    auto tensorType = LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, ptr});

    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    auto entryType = LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr});
    auto entry = LLVM::LLVMFuncOp::create(mb, loc, "kiln_entry", entryType);
    Block *block = entry.addEntryBlock(mb);
    OpBuilder b = OpBuilder::atBlockBegin(block);
    Value ctxArg = block->getArgument(0), inputs = block->getArgument(1),
          outputs = block->getArgument(2);
    auto c64 = [&](int64_t v) { return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v)); };
    auto field = [&](Value base, int64_t index, int32_t f) {
      return LLVM::GEPOp::create(b, loc, ptr, tensorType, base,
                                 ArrayRef<LLVM::GEPArg>{(int32_t)index, f});
    };

    SmallVector<Value> args = {ctxArg};
    for (auto [i, rank] : llvm::enumerate(argRanks.asArrayRef())) {
      Value data = LLVM::LoadOp::create(b, loc, ptr, field(inputs, i, 0));
      Value shape = LLVM::LoadOp::create(b, loc, ptr, field(inputs, i, 2));
      SmallVector<Value> sizes;
      for (int64_t k = 0; k < rank; ++k) {
        Value p = LLVM::GEPOp::create(b, loc, ptr, i64, shape, ArrayRef<LLVM::GEPArg>{(int32_t)k});
        sizes.push_back(LLVM::LoadOp::create(b, loc, i64, p));
      }
      SmallVector<Value> strides(rank);
      Value stride = c64(1);
      for (int64_t k = rank - 1; k >= 0; --k) {
        strides[k] = stride;
        stride = LLVM::MulOp::create(b, loc, stride, sizes[k]);
      }
      args.append({data, data, c64(0)});
      args.append(sizes.begin(), sizes.end());
      args.append(strides.begin(), strides.end());
    }
    auto call = LLVM::CallOp::create(b, loc, main, args);
    size_t numResults = resultRanks.size();
    for (size_t j = 0; j < numResults; ++j) {
      Value desc = call.getResult();
      if (numResults > 1)
        desc = LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{(int64_t)j});
      Value allocated = LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{0});
      Value aligned = LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{1});
      Value offset = LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{2});
      Value byteOffset = LLVM::MulOp::create(b, loc, offset, c64(elemBytes[j]));
      Value data = LLVM::GEPOp::create(b, loc, ptr, i8, aligned, ValueRange{byteOffset});
      LLVM::StoreOp::create(b, loc, data, field(outputs, j, 0));
      LLVM::StoreOp::create(b, loc, allocated, field(outputs, j, 1));
      Value shape = LLVM::LoadOp::create(b, loc, ptr, field(outputs, j, 2));
      for (int64_t k = 0; k < resultRanks[j]; ++k) {
        Value size = LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{3, k});
        Value p = LLVM::GEPOp::create(b, loc, ptr, i64, shape, ArrayRef<LLVM::GEPArg>{(int32_t)k});
        LLVM::StoreOp::create(b, loc, size, p);
      }
    }
    LLVM::ReturnOp::create(b, loc, ValueRange{LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0))});
    // Only kiln_entry is exported; @main may then be inlined into it.
    main.setLinkage(LLVM::Linkage::Internal);
  }
};
} // namespace
} // namespace kiln
