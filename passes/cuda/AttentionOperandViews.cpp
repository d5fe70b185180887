// Reads attention's heads and writes its output through views instead of transposed copies
// (kiln-attention-operand-views).
//
// A GPT layer on the GPU, after its fused QKV product: three slices of the product reshaped to
// [B, S, H, D] (each a copy, because a reshape of a strided slice needs a contiguous buffer),
// three transposes to [B, H, S, D] (copies), the attention, a transpose back (a copy) and a
// reshape to [B, S, H*D]. kiln_kernel.attention reads and writes through memref.load and
// memref.store, which serve any strided layout, so none of those copies is needed: the
// transposes become permutations on the op (bufferization makes them memref.transpose views),
// and the reshapes that only split dims become tensor.expand_shape (views of the slices).
#include "passes/cuda/Passes.h"

#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_ATTENTIONOPERANDVIEWSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether `perm` keeps the last dim last (the head's elements stay contiguous).
bool keepsLast(ArrayRef<int64_t> perm) { return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1; }

/// `reshape` as a tensor.expand_shape when its shape is a constant that only splits the source's
/// dims, with every dynamic dim alone in its group (MLIR 22's expand-strided-metadata cannot
/// lower an expansion of a dynamic dim into several); null otherwise.
Value asExpansion(OpBuilder &b, tensor::ReshapeOp reshape) {
  auto src = cast<RankedTensorType>(reshape.getSource().getType());
  auto dst = cast<RankedTensorType>(reshape.getResult().getType());
  DenseIntElementsAttr shape;
  if (!matchPattern(reshape.getShape(), m_Constant(&shape)) || dst.getRank() <= src.getRank())
    return {};
  // The constant shape decides every result dim: the result type must say the same.
  for (auto [size, declared] : llvm::zip(shape.getValues<APInt>(), dst.getShape()))
    if (size.getSExtValue() < 0 || size.getSExtValue() != declared)
      return {};
  if (!src.hasStaticShape())
    return {};
  std::optional<SmallVector<ReassociationIndices>> groups = getReassociationIndicesForReshape(src, dst);
  if (!groups)
    return {};
  b.setInsertionPoint(reshape);
  return tensor::ExpandShapeOp::create(b, reshape.getLoc(), dst, reshape.getSource(), *groups);
}

struct AttentionOperandViewsPass : impl::AttentionOperandViewsPassBase<AttentionOperandViewsPass> {
  void runOnOperation() override {
    SmallVector<kernel::AttentionOp> ops;
    getOperation().walk([&](kernel::AttentionOp op) {
      if (!op.hasBufferSemantics())
        ops.push_back(op);
    });
    for (kernel::AttentionOp op : ops) {
      readThroughTransposes(op);
      writeThroughTranspose(op);
    }
  }

  /// A query, key or value made by a transpose: the op reads the transpose's input permuted.
  void readThroughTransposes(kernel::AttentionOp op) {
    OpBuilder b(op);
    auto fold = [&](OpOperand &operand, std::optional<ArrayRef<int64_t>> perm, auto setPerm) {
      auto transpose = operand.get().getDefiningOp<linalg::TransposeOp>();
      if (perm || !transpose || !transpose.hasPureTensorSemantics() || !keepsLast(transpose.getPermutation()))
        return;
      Value input = transpose.getInput();
      auto reshape = input.getDefiningOp<tensor::ReshapeOp>();
      if (reshape)
        if (Value expanded = asExpansion(b, reshape))
          input = expanded;
      operand.set(input);
      setPerm(b.getDenseI64ArrayAttr(transpose.getPermutation()));
      if (transpose->use_empty())
        transpose->erase();
      if (reshape && reshape->use_empty())
        reshape->erase();
    };
    fold(op.getQueryMutable(), op.getQueryPerm(), [&](DenseI64ArrayAttr a) { op.setQueryPermAttr(a); });
    if (!op.isPaged()) {
      fold(op.getKeyMutable(), op.getKeyPerm(), [&](DenseI64ArrayAttr a) { op.setKeyPermAttr(a); });
      fold(op.getValueMutable(), op.getValuePerm(), [&](DenseI64ArrayAttr a) { op.setValuePermAttr(a); });
    }
  }

  /// An output used only by a transpose: the op writes the transpose's destination, permuted back.
  void writeThroughTranspose(kernel::AttentionOp op) {
    Value result = op.getResult()[0];
    if (op.getInitPerm() || !result.hasOneUse())
      return;
    auto transpose = dyn_cast<linalg::TransposeOp>(*result.getUsers().begin());
    if (!transpose || !transpose.hasPureTensorSemantics() || transpose.getInput() != result ||
        !keepsLast(transpose.getPermutation()))
      return;
    // transpose(out, p) is stored, so out = transpose(stored, inverse(p)).
    ArrayRef<int64_t> p = transpose.getPermutation();
    SmallVector<int64_t> inverse(p.size());
    for (auto [i, d] : llvm::enumerate(p))
      inverse[d] = i;
    // Every element of the destination is written: its contents (an empty tensor) are never read.
    OpBuilder b(transpose);
    Value init = transpose.getInit();
    auto attention = kernel::AttentionOp::create(
        b, op.getLoc(), TypeRange{init.getType()}, op.getQuery(), op.getKey(), op.getValue(), op.getMask(),
        op.getBlockTable(), op.getKeyCount(), init, op.getScaleAttr(), op.getQueryPermAttr(), op.getKeyPermAttr(),
        op.getValuePermAttr(), b.getDenseI64ArrayAttr(inverse));
    transpose->getResult(0).replaceAllUsesWith(attention.getResult()[0]);
    transpose->erase();
    op->erase();
  }
};

} // namespace
} // namespace kiln
