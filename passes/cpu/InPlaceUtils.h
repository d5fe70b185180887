// For the passes that hand a producer a slice of a bigger buffer to write (kiln-pad-in-place,
// kiln-concat-in-place): the tensor.empty a value's buffer will be, and padded tensors made ahead.
#ifndef KILN_PASSES_CPU_INPLACEUTILS_H
#define KILN_PASSES_CPU_INPLACEUTILS_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {

/// The tensor.empty whose buffer `v` will live in: followed back through
/// destination operands (linalg ops, fills, insert_slice) and scf.forall
/// shared outputs, in `block`; null when the chain leaves the block or meets
/// anything else (a function argument, a slice), where `v` has a buffer of
/// its own. With `reshapes`, static collapse_shape/expand_shape ops are
/// followed too and appended to it, nearest to `v` first; with `singleUse`,
/// every value of the chain must have one use (no other reader shares the
/// buffer; the empty itself may have other users, as CSE merges equal
/// empties: `use`, when given, is set to the chain's use of it).
mlir::tensor::EmptyOp rootEmpty(mlir::Value v, mlir::Block *block,
                                llvm::SmallVectorImpl<mlir::Operation *> *reshapes = nullptr,
                                bool singleUse = false, mlir::OpOperand **use = nullptr);

/// `value` (the type of reshapes.front()'s result) taken back through
/// `reshapes` (as rootEmpty gave them) to the type of the last one's source.
mlir::Value undoReshapes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                         llvm::ArrayRef<mlir::Operation *> reshapes);

/// Whether `pad` has static shapes, non-negative static low padding and a
/// constant padding value (what paddedBorder needs).
bool canPadInPlace(mlir::tensor::PadOp pad);

/// A tensor of `pad`'s result type, built at b's insertion point, whose border
/// alone is filled with the padding value (per padded dim d, a low and a high
/// slab over the interior of the dims before d and the whole of the dims
/// after it); its interior is for the source.
mlir::Value paddedBorder(mlir::OpBuilder &b, mlir::tensor::PadOp pad);

/// `source` inserted into the interior of `padded`, at b's insertion point.
mlir::Value insertInterior(mlir::OpBuilder &b, mlir::tensor::PadOp pad, mlir::Value source, mlir::Value padded);

/// The interior of `padded` as a slice (the counterpart of insertInterior).
mlir::Value extractInterior(mlir::OpBuilder &b, mlir::tensor::PadOp pad, mlir::Value padded);

} // namespace kiln

#endif
