// @main's view of the runtime context (kiln_abi_context in runtime/include/kiln/abi.h) and its early return.
#ifndef KILN_PASSES_CPU_RUNTIMECONTEXT_H
#define KILN_PASSES_CPU_RUNTIMECONTEXT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {

/// The context's fields, in kiln_abi_context order (all pointers).
namespace ctxfield {
enum : int32_t {
  kRuntime, kParallelFor, kWorkspace, kAllocationFailed, kStringFromFloat, kStringToFloat,
  kStringChangeCase, kStringEqual, kGpuLaunch, kDeviceAlloc, kDeviceFree, kDeviceRead, kDeviceWrite,
  kGemm,
  kCount
};
} // namespace ctxfield

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
