// What importers of several op families share: run-time shape operands, conv/pool windows, per-axis parameters.
#ifndef KILN_COMPILER_IMPORTER_IMPORTERHELPERS_H
#define KILN_COMPILER_IMPORTER_IMPORTERHELPERS_H

#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

namespace kiln {

// Run-time shape operands (shapeinputs): a shape-like input that the model
// computes is read by the generated code instead of being refused.
/// True for a present input that is no constant.
inline bool isRuntime(mlir::Value v) { return v && !mlir::matchPattern(v, mlir::m_Constant()); }

/// The static length of a 1-D input, failing with a message naming it
/// otherwise (and when `needInt64` and its elements are not int64).
inline mlir::FailureOr<int64_t> runtimeLength(NodeContext &c, mlir::Value v, llvm::StringRef what,
                                              bool needInt64 = false) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  if (t.getRank() != 1 || t.isDynamicDim(0)) {
    (void)c.fail("a computed '" + what + "' must be 1-D with a static length");
    return mlir::failure();
  }
  if (needInt64 && !t.getElementType().isInteger(64)) {
    (void)c.fail("'" + what + "' must be int64");
    return mlir::failure();
  }
  return t.getDimSize(0);
}

/// Per-spatial-axis window attributes with ONNX defaults; resolves auto_pad.
struct Window {
  llvm::SmallVector<int64_t> kernel, pads, strides, dilations;
  /// auto_pad SAME_* left to run time (pads zero), null when resolved here.
  mlir::StringAttr runTimeAutoPad;
};

/// The node's window attributes (conv and pooling) for `input` and kernel
/// sizes `kernel`; fails naming what does not match (ConvolutionImporters.cpp).
mlir::FailureOr<Window> windowAttrs(NodeContext &c, mlir::Value input, llvm::ArrayRef<int64_t> kernel);

/// Conv's attributes applied to `x` and `w`, with an optional bias; ConvInteger
/// and QLinearConv build on it (ConvolutionImporters.cpp).
mlir::FailureOr<mlir::Value> convolution(NodeContext &c, mlir::Value x, mlir::Value w, mlir::Value bias);

/// A per-axis parameter (1-D, one entry per channel of `axis`) reshaped to
/// broadcast against a rank-`rank` tensor; per-tensor ones unchanged. Used
/// for quantization parameters and BatchNormalization's training statistics
/// (QuantizationImporters.cpp).
mlir::FailureOr<mlir::Value> alongAxis(NodeContext &c, mlir::Value v, int64_t rank, int64_t axis);

} // namespace kiln

#endif
