// The host program's copies between device and host memory (--target=cuda).
#include "passes/cuda/DeviceTransfers.h"
#include "passes/host/RuntimeContext.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"

using namespace mlir;

namespace kiln::cuda {

bool fitsSlot(Type t) { return t.isIndex() || (t.isIntOrFloat() && t.getIntOrFloatBitWidth() <= 64); }

Value toSlot(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  auto i64 = b.getI64Type();
  if (t.isIndex())
    return arith::IndexCastUIOp::create(b, loc, i64, v);
  if (auto f = dyn_cast<FloatType>(t)) {
    if (f.getWidth() > 64)
      return {};
    v = arith::BitcastOp::create(b, loc, b.getIntegerType(f.getWidth()), v);
    t = v.getType();
  }
  auto it = dyn_cast<IntegerType>(t);
  if (!it || it.getWidth() > 64)
    return {};
  return it.getWidth() == 64 ? v : (Value)arith::ExtUIOp::create(b, loc, i64, v);
}

Value fromSlot(OpBuilder &b, Location loc, Value slot, Type t) {
  if (t.isIndex())
    return arith::IndexCastUIOp::create(b, loc, t, slot);
  unsigned width = t.getIntOrFloatBitWidth();
  Value bits = width == 64 ? slot : (Value)arith::TruncIOp::create(b, loc, b.getIntegerType(width), slot);
  return isa<FloatType>(t) ? (Value)arith::BitcastOp::create(b, loc, t, bits) : bits;
}

unsigned elementBytes(Type type) { return type.isIndex() ? 8 : (type.getIntOrFloatBitWidth() + 7) / 8; }

Value bufferAddress(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  unsigned bytes = elementBytes(type.getElementType());
  Value offset = arith::MulIOp::create(b, loc, meta.getOffset(), arith::ConstantIndexOp::create(b, loc, bytes));
  address = arith::AddIOp::create(b, loc, address, offset);
  Value i64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

namespace {
/// ctx->field(runtime, to, from, bytes).
void emitCopy(OpBuilder &b, Location loc, Value context, int32_t field, Value to, Value from, Value bytes) {
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Value runtime = contextField(b, loc, context, ctxfield::kRuntime);
  Value fn = contextField(b, loc, context, field);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr, ptr, b.getI64Type()});
  Value n = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), bytes);
  LLVM::CallOp::create(b, loc, type, ValueRange{fn, runtime, to, from, n});
}
} // namespace

void emitDeviceRead(OpBuilder &b, Location loc, Value context, Value host, Value device, Value bytes) {
  emitCopy(b, loc, context, ctxfield::kDeviceRead, host, device, bytes);
}

void emitDeviceWrite(OpBuilder &b, Location loc, Value context, Value device, Value host, Value bytes) {
  emitCopy(b, loc, context, ctxfield::kDeviceWrite, device, host, bytes);
}

Value entryAlloca(func::FuncOp main, Location loc, MemRefType type) {
  OpBuilder b = OpBuilder::atBlockBegin(&main.getBody().front());
  return memref::AllocaOp::create(b, loc, type);
}

HostMirror allocateMirror(OpBuilder &b, Location loc, ModuleOp module, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = b.getI64Type();
  const int64_t rank = type.getRank();
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  // Elements spanned: 1 + sum (size - 1) * stride, none when a dim is empty.
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0), c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value span = c1;
  Value empty = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  for (int64_t i = 0; i < rank; ++i) {
    Value size = meta.getSizes()[i], stride = meta.getStrides()[i];
    Value last = arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, size, c1), stride);
    span = arith::AddIOp::create(b, loc, span, last);
    empty = arith::OrIOp::create(b, loc, empty, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, size, c0));
  }
  span = arith::SelectOp::create(b, loc, empty, c0, span);
  const unsigned eb = elementBytes(type.getElementType());
  Value bytes = arith::MulIOp::create(b, loc, span, arith::ConstantIndexOp::create(b, loc, eb));
  HostMirror m;
  m.bytes = bytes;
  m.device = bufferAddress(b, loc, buffer);
  FailureOr<LLVM::LLVMFuncOp> malloc = LLVM::lookupOrCreateMallocFn(b, module, i64);
  Value request = arith::IndexCastUIOp::create(b, loc, i64, arith::MaxUIOp::create(b, loc, bytes, c1));
  auto call = LLVM::CallOp::create(b, loc, *malloc, ValueRange{request});
  call->setAttr(kHostHeapAttr, b.getUnitAttr());
  m.host = call.getResult();
  // The descriptor of the buffer's type over the host copy: its aligned pointer sits `offset`
  // elements before the copy, so every index lands where the buffer's own would.
  Value offset = arith::IndexCastUIOp::create(b, loc, i64, meta.getOffset());
  Value before = LLVM::MulOp::create(b, loc, offset, LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(eb)));
  Value aligned = LLVM::IntToPtrOp::create(
      b, loc, ptr, LLVM::SubOp::create(b, loc, LLVM::PtrToIntOp::create(b, loc, i64, m.host), before).getResult());
  SmallVector<Type> fields = {ptr, ptr, i64};
  if (rank > 0) {
    auto array = LLVM::LLVMArrayType::get(i64, rank);
    fields.append({array, array});
  }
  Value desc = LLVM::UndefOp::create(b, loc, LLVM::LLVMStructType::getLiteral(ctx, fields));
  desc = LLVM::InsertValueOp::create(b, loc, desc, m.host, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, aligned, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, offset, ArrayRef<int64_t>{2});
  for (int64_t i = 0; i < rank; ++i) {
    Value size = arith::IndexCastUIOp::create(b, loc, i64, meta.getSizes()[i]);
    Value stride = arith::IndexCastUIOp::create(b, loc, i64, meta.getStrides()[i]);
    desc = LLVM::InsertValueOp::create(b, loc, desc, size, ArrayRef<int64_t>{3, i});
    desc = LLVM::InsertValueOp::create(b, loc, desc, stride, ArrayRef<int64_t>{4, i});
  }
  // The LLVM conversion cancels the cast against the descriptor (as kiln-lower-workspace's).
  m.view = UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
  return m;
}

void freeMirror(OpBuilder &b, Location loc, ModuleOp module, const HostMirror &mirror) {
  FailureOr<LLVM::LLVMFuncOp> free = LLVM::lookupOrCreateFreeFn(b, module);
  auto call = LLVM::CallOp::create(b, loc, *free, ValueRange{mirror.host});
  call->setAttr(kHostHeapAttr, b.getUnitAttr());
}

} // namespace kiln::cuda
