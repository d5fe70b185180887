// The host program's copies between device and host memory (--target=cuda): values read back
// through 64-bit slots, and host mirrors of buffers for the ops that must run on the host.
#ifndef KILN_PASSES_CUDA_DEVICETRANSFERS_H
#define KILN_PASSES_CUDA_DEVICETRANSFERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln::cuda {

/// The attribute on the llvm.call of malloc/free that allocates host memory, which
/// kiln-lower-device-heap leaves alone.
constexpr const char *kHostHeapAttr = "kiln.host_heap";
/// The attribute on an op that touches host memory only (a call into the runtime and the
/// arguments it is given), which kiln-form-gpu-launches leaves on the host.
constexpr const char *kHostOpAttr = "kiln.host";

/// Whether a 64-bit slot holds values of type `t` (index, integers and floats up to 64 bits).
bool fitsSlot(mlir::Type t);
/// `v` as a slot: index and integers zero-extended, floats as their bits.
mlir::Value toSlot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);
/// The value of type `t` a slot holds (the inverse of toSlot).
mlir::Value fromSlot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value slot, mlir::Type t);

/// Bytes per element of a buffer of `type`.
unsigned elementBytes(mlir::Type type);
/// The address of `buffer`'s first element (its aligned pointer plus its offset), an LLVM pointer.
mlir::Value bufferAddress(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer);

/// ctx->device_read(runtime, host, device, bytes): waits for the launches so far, then copies.
void emitDeviceRead(mlir::OpBuilder &b, mlir::Location loc, mlir::Value context, mlir::Value host,
                    mlir::Value device, mlir::Value bytes);
/// ctx->device_write(runtime, device, host, bytes): waits for the launches so far, then copies.
void emitDeviceWrite(mlir::OpBuilder &b, mlir::Location loc, mlir::Value context, mlir::Value device,
                     mlir::Value host, mlir::Value bytes);

/// A host buffer of `type`, allocated once in @main's entry block (an alloca in a host loop
/// would grow the stack every iteration).
mlir::Value entryAlloca(mlir::func::FuncOp main, mlir::Location loc, mlir::MemRefType type);

/// A host copy of a device buffer: `view` has the buffer's type (sizes, strides, offset) over
/// host memory at `host`, which holds the `bytes` the buffer spans, starting at its first element
/// (`device`). `host` is null when malloc failed.
struct HostMirror {
  mlir::Value view, host, device, bytes;
};
/// Allocates a mirror of `buffer` (host malloc, marked kHostHeapAttr); nothing is copied yet.
HostMirror allocateMirror(mlir::OpBuilder &b, mlir::Location loc, mlir::ModuleOp module, mlir::Value buffer);
/// Frees a mirror's host memory.
void freeMirror(mlir::OpBuilder &b, mlir::Location loc, mlir::ModuleOp module, const HostMirror &mirror);

} // namespace kiln::cuda

#endif
