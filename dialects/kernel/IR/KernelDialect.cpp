// Registers the kiln_kernel dialect; verifies its ops, gives their memory effects and bufferizes them.
#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln::kernel;

#include "dialects/kernel/IR/KernelDialect.cpp.inc"

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kernel/IR/KernelOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/kernel/IR/KernelOps.cpp.inc"

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  auto shaped = [](Value v) { return cast<ShapedType>(v.getType()); };
  ShapedType q = shaped(getQuery()), k = shaped(getKey()), v = shaped(getValue()), out = shaped(getInit());
  bool buffers = isa<MemRefType>(out);
  SmallVector<Value> operands = {getQuery(), getKey(), getValue(), getInit()};
  if (getMask())
    operands.push_back(getMask());
  for (Value operand : operands) {
    auto type = shaped(operand);
    if (!type.hasRank())
      return emitOpError("needs ranked operands");
    if (isa<MemRefType>(type) != buffers)
      return emitOpError("needs all operands tensors or all buffers");
    if (type.getElementType() != q.getElementType() || !isa<FloatType>(type.getElementType()))
      return emitOpError("needs operands of one float element type");
  }
  if (buffers != (getNumResults() == 0))
    return emitOpError(buffers ? "on buffers has no result" : "on tensors returns the written init");
  // What the op sees of a permuted operand: the stored tensor transposed by the permutation.
  auto seen = [&](ShapedType stored, std::optional<ArrayRef<int64_t>> perm, StringRef name,
                  ShapedType &out) -> LogicalResult {
    out = stored;
    if (!perm)
      return success();
    if (buffers)
      return emitOpError("takes permutations only on tensors (buffers are strided views)");
    int64_t r = stored.getRank();
    SmallVector<bool> used(r, false);
    if (static_cast<int64_t>(perm->size()) != r || r == 0 || perm->back() != r - 1)
      return emitOpError(name) << " is not a permutation of the operand's dims keeping the last";
    SmallVector<int64_t> shape;
    for (int64_t p : *perm) {
      if (p < 0 || p >= r || used[p])
        return emitOpError(name) << " is not a permutation of the operand's dims keeping the last";
      used[p] = true;
      shape.push_back(stored.getDimSize(p));
    }
    out = RankedTensorType::get(shape, stored.getElementType());
    return success();
  };
  if (failed(seen(q, getQueryPerm(), "query_perm", q)) || failed(seen(k, getKeyPerm(), "key_perm", k)) ||
      failed(seen(v, getValuePerm(), "value_perm", v)) || failed(seen(out, getInitPerm(), "init_perm", out)))
    return failure();
  if (isPaged() && (getKeyPerm() || getValuePerm()))
    return emitOpError("reads paged pools unpermuted");
  int64_t rank = q.getRank();
  if (rank < 2)
    return emitOpError("needs a query of rank 2 or more");
  if (k.getRank() != rank || v.getRank() != rank || out.getRank() != rank)
    return emitOpError("needs query, key, value and init of one rank");
  if (getMask() && shaped(getMask()).getRank() > rank)
    return emitOpError("needs a mask of rank at most the query's");
  const bool paged = isPaged();
  if (paged != static_cast<bool>(getKeyCount()))
    return emitOpError("needs a block_table and a key_count together");
  if (paged) {
    auto table = shaped(getBlockTable());
    if (!table.hasRank() || table.getRank() != 2 || !table.getElementType().isSignlessInteger(64))
      return emitOpError("needs a block_table of rank 2 and i64 elements");
    if (isa<MemRefType>(table) != buffers)
      return emitOpError("needs all operands tensors or all buffers");
    if (rank < 3)
      return emitOpError("paged needs a batch dim in the query");
    int64_t block = k.getDimSize(rank - 2);
    if (ShapedType::isDynamic(block) || block <= 0 || v.getDimSize(rank - 2) != block)
      return emitOpError("paged needs key and value pools of one static block size");
  }
  // Two extents that must agree, where both are known.
  auto differ = [](int64_t a, int64_t b) { return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b; };
  if (differ(q.getDimSize(rank - 1), k.getDimSize(rank - 1)))
    return emitOpError("query and key have different head sizes");
  if (!paged && differ(k.getDimSize(rank - 2), v.getDimSize(rank - 2)))
    return emitOpError("key and value have different key counts");
  if (differ(out.getDimSize(rank - 1), v.getDimSize(rank - 1)))
    return emitOpError("init's last dim is not the value's");
  for (int64_t i = 0; i < rank - 1; ++i)
    if (differ(out.getDimSize(i), q.getDimSize(i)))
      return emitOpError("init dim ") << i << " is not the query's";
  // Batch dims of key, value (and the mask's leading dims) divide the query's.
  auto divides = [](int64_t part, int64_t whole) {
    return ShapedType::isDynamic(part) || ShapedType::isDynamic(whole) || (part > 0 && whole % part == 0) ||
           (part == 0 && whole == 0);
  };
  // (Paged: dim 0 of key and value counts the pool's blocks.)
  for (int64_t i = paged ? 1 : 0; i < rank - 2; ++i)
    if (!divides(k.getDimSize(i), q.getDimSize(i)) || !divides(v.getDimSize(i), q.getDimSize(i)))
      return emitOpError("key/value batch dim ") << i << " does not divide the query's";
  if (getMask()) {
    auto m = shaped(getMask());
    int64_t lead = rank - m.getRank();
    for (int64_t j = 0; j < m.getRank(); ++j) {
      int64_t i = j + lead, size = m.getDimSize(j);
      if (size == 1)
        continue;
      int64_t against = i == rank - 1 ? (paged ? ShapedType::kDynamic : k.getDimSize(rank - 2)) : q.getDimSize(i);
      if (i >= rank - 2 ? differ(size, against) : !divides(size, against))
        return emitOpError("mask dim ") << j << " does not broadcast to the scores";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// What the destination-style kernels share: they read every buffer operand but init, write
// init, and on tensors return it.
//===----------------------------------------------------------------------===//

namespace {

void initWrittenOthersRead(Operation *op, OpOperand &init,
                           SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType())) // an index operand
      continue;
    if (&operand == &init)
      effects.emplace_back(MemoryEffects::Write::get(), &operand, SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand, SideEffects::DefaultResource::get());
  }
}

// Every element of init is written and none read, so bufferization may hand it any buffer
// (an empty tensor's allocation, reused by the memory plan) without copying its contents.
bufferization::AliasingValueList initAliasesResult(OpOperand &operand, OpOperand &init, Value result) {
  if (&operand != &init)
    return {};
  return {{result, bufferization::BufferRelation::Equivalent}};
}

/// The buffer of each tensor operand (null stays null), or failure.
FailureOr<SmallVector<Value>> buffersOf(RewriterBase &rewriter, ValueRange tensors,
                                       const bufferization::BufferizationOptions &options,
                                       bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value v : tensors) {
    if (!v) {
      buffers.push_back(Value());
      continue;
    }
    FailureOr<Value> buffer = bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  return buffers;
}

} // namespace

void AttentionOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (hasBufferSemantics())
    initWrittenOthersRead(getOperation(), getInitMutable(), effects);
}

bool AttentionOp::bufferizesToMemoryRead(OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand != &getInitMutable();
}

bool AttentionOp::bufferizesToMemoryWrite(OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand == &getInitMutable();
}

bufferization::AliasingValueList AttentionOp::getAliasingValues(OpOperand &operand,
                                                                const bufferization::AnalysisState &) {
  return initAliasesResult(operand, getInitMutable(), getResult()[0]);
}

LogicalResult AttentionOp::bufferize(RewriterBase &rewriter, const bufferization::BufferizationOptions &options,
                                     bufferization::BufferizationState &state) {
  FailureOr<SmallVector<Value>> b =
      buffersOf(rewriter, {getQuery(), getKey(), getValue(), getMask(), getBlockTable(), getInit()}, options, state);
  if (failed(b))
    return failure();
  rewriter.setInsertionPoint(*this);
  // A permuted operand becomes a transposed view of its buffer.
  auto view = [&](Value buffer, std::optional<ArrayRef<int64_t>> perm) -> Value {
    if (!perm)
      return buffer;
    auto map = AffineMap::getPermutationMap(*perm, getContext());
    return memref::TransposeOp::create(rewriter, getLoc(), buffer, AffineMapAttr::get(map));
  };
  AttentionOp::create(rewriter, getLoc(), TypeRange{}, view((*b)[0], getQueryPerm()), view((*b)[1], getKeyPerm()),
                      view((*b)[2], getValuePerm()), (*b)[3], (*b)[4], getKeyCount(), view((*b)[5], getInitPerm()),
                      getScaleAttr(), nullptr, nullptr, nullptr, nullptr);
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, (*b)[5]);
  return success();
}

//===----------------------------------------------------------------------===//
// RowNormOp
//===----------------------------------------------------------------------===//

LogicalResult RowNormOp::verify() {
  auto shaped = [](Value v) { return cast<ShapedType>(v.getType()); };
  ShapedType x = shaped(getInput()), out = shaped(getInit());
  bool buffers = isa<MemRefType>(out);
  if (buffers != (getNumResults() == 0))
    return emitOpError(buffers ? "on buffers has no result" : "on tensors returns the written init");
  if (getKind() != "layer" && getKind() != "rms" && !isSoftmax())
    return emitOpError("kind must be \"layer\", \"rms\", \"softmax\" or \"log_softmax\", not \"") << getKind()
           << "\"";
  if (isRms() && getBias())
    return emitOpError("\"rms\" takes no bias");
  if (isSoftmax() && (getScale() || getBias()))
    return emitOpError("a softmax takes no scale or bias");
  auto differ = [](int64_t a, int64_t b) { return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b; };
  for (Value operand : {getInput(), getInit(), getScale(), getBias()}) {
    if (!operand)
      continue;
    auto type = shaped(operand);
    if (!type.hasRank() || !type.getElementType().isF32())
      return emitOpError("needs ranked f32 operands");
    if (isa<MemRefType>(type) != buffers)
      return emitOpError("needs all operands tensors or all buffers");
    if (operand == getInput() || operand == getInit())
      continue;
    if (type.getRank() != 1)
      return emitOpError("needs scale and bias of rank 1");
    if (x.getRank() > 0 && type.getDimSize(0) != 1 && differ(type.getDimSize(0), x.getDimSize(x.getRank() - 1)))
      return emitOpError("needs scale and bias of one element or of the row's");
  }
  if (x.getRank() == 0 || x.getRank() != out.getRank())
    return emitOpError("needs input and init of one rank, 1 or more");
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (differ(x.getDimSize(i), out.getDimSize(i)))
      return emitOpError("needs input and init of one shape");
  return success();
}

void RowNormOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (hasBufferSemantics())
    initWrittenOthersRead(getOperation(), getInitMutable(), effects);
}

bool RowNormOp::bufferizesToMemoryRead(OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand != &getInitMutable();
}

bool RowNormOp::bufferizesToMemoryWrite(OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand == &getInitMutable();
}

bufferization::AliasingValueList RowNormOp::getAliasingValues(OpOperand &operand,
                                                              const bufferization::AnalysisState &) {
  return initAliasesResult(operand, getInitMutable(), getResult()[0]);
}

LogicalResult RowNormOp::bufferize(RewriterBase &rewriter, const bufferization::BufferizationOptions &options,
                                   bufferization::BufferizationState &state) {
  FailureOr<SmallVector<Value>> b = buffersOf(rewriter, {getInput(), getScale(), getBias(), getInit()}, options, state);
  if (failed(b))
    return failure();
  rewriter.setInsertionPoint(*this);
  RowNormOp::create(rewriter, getLoc(), TypeRange{}, (*b)[0], (*b)[1], (*b)[2], (*b)[3], getKindAttr(),
                    getEpsilonAttr());
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, (*b)[3]);
  return success();
}
