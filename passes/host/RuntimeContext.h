// @main's view of the runtime context (kiln_abi_context in runtime/include/kiln/abi.h) and its early return.
#ifndef KILN_PASSES_HOST_RUNTIMECONTEXT_H
#define KILN_PASSES_HOST_RUNTIMECONTEXT_H

#include "runtime/include/kiln/abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cstddef>

namespace kiln {

/// The context's fields, each the index of a kiln_abi_context member. Derived from abi.h with
/// offsetof, so a field added, removed or moved there changes (or breaks) the code that reads it
/// here instead of the runtime calling the wrong function.
namespace ctxfield {
constexpr int32_t index(size_t offset) { return int32_t(offset / sizeof(void *)); }
enum : int32_t {
  kRuntime = index(offsetof(kiln_abi_context, runtime)),
  kParallelFor = index(offsetof(kiln_abi_context, parallel_for)),
  kWorkspace = index(offsetof(kiln_abi_context, workspace)),
  kAllocationFailed = index(offsetof(kiln_abi_context, allocation_failed)),
  kStringFromFloat = index(offsetof(kiln_abi_context, string_from_float)),
  kStringToFloat = index(offsetof(kiln_abi_context, string_to_float)),
  kStringChangeCase = index(offsetof(kiln_abi_context, string_change_case)),
  kStringEqual = index(offsetof(kiln_abi_context, string_equal)),
  kGpuLaunch = index(offsetof(kiln_abi_context, gpu_launch)),
  kDeviceAlloc = index(offsetof(kiln_abi_context, device_alloc)),
  kDeviceFree = index(offsetof(kiln_abi_context, device_free)),
  kDeviceRead = index(offsetof(kiln_abi_context, device_read)),
  kDeviceWrite = index(offsetof(kiln_abi_context, device_write)),
  kGemm = index(offsetof(kiln_abi_context, gemm)),
  kGemmEpilogue = index(offsetof(kiln_abi_context, gemm_epilogue)),
  kCount = index(sizeof(kiln_abi_context)),
};
} // namespace ctxfield

// contextField reads the context as a struct of kCount pointers: that holds only while every
// member is a pointer, packed.
static_assert(sizeof(kiln_abi_context) % sizeof(void *) == 0 && alignof(kiln_abi_context) == alignof(void *),
              "kiln_abi_context must be a sequence of pointers");
static_assert(ctxfield::kGemmEpilogue == ctxfield::kCount - 1, "a kiln_abi_context field has no ctxfield index here");

/// Field `i` of the context (a ctxfield value).
inline mlir::Value contextField(mlir::OpBuilder &b, mlir::Location loc, mlir::Value context, int32_t i) {
  auto ptr = mlir::LLVM::LLVMPointerType::get(b.getContext());
  auto ctxStruct = mlir::LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                          llvm::SmallVector<mlir::Type>(ctxfield::kCount, ptr));
  mlir::Value at =
      mlir::LLVM::GEPOp::create(b, loc, ptr, ctxStruct, context, llvm::ArrayRef<mlir::LLVM::GEPArg>{0, i});
  return mlir::LLVM::LoadOp::create(b, loc, ptr, at).getResult();
}

/// Returns from `func` with an empty view of `bytes` (an i8 memref) for each
/// result: the early exit after a failed allocation, whose results the
/// runtime discards unread.
inline void returnEmptyResults(mlir::OpBuilder &b, mlir::Location loc, mlir::func::FuncOp func, mlir::Value bytes) {
  mlir::Value c0 = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  llvm::SmallVector<mlir::Value> results;
  for (mlir::Type t : func.getResultTypes()) {
    auto type = mlir::cast<mlir::MemRefType>(t);
    llvm::SmallVector<mlir::Value> sizes(type.getNumDynamicDims(), c0);
    results.push_back(mlir::memref::ViewOp::create(b, loc, type, bytes, c0, sizes));
  }
  mlir::func::ReturnOp::create(b, loc, results);
}

} // namespace kiln

#endif
