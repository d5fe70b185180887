// Quantized weights in kiln's panel layout, and the graph.quantized_matmul that reads them.
#ifndef KILN_PASSES_QUANT_QUANTUTILS_H
#define KILN_PASSES_QUANT_QUANTUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"

#include <cstdint>
#include <vector>

namespace kiln::quant {

/// A [K, N] weight quantized and laid out for graph.quantized_matmul:
/// `weight` [N/B, K, B] int8 (bits 8) or [N/B, K/2, B] nibbles (bits 4),
/// `scales` [N/B, K/group, B] as f32 or f16 bits; with N not a multiple of
/// B the last panel is padded with zero columns.
struct PackedWeight {
  int bits = 8;
  int64_t k = 0, n = 0, width = 0, group = 0;
  bool f16Scales = false;
  /// int8 in k pairs for integer products: [N/B, K/2, 2B], (p, j, 2b + e) = k 2j + e.
  bool pairs = false;
  std::vector<int8_t> weight;
  std::vector<char> scales;
};

/// The widest panel (<= `widest`, >= 16, a power of two) dividing n; 0 if none. `widest` 1 (the
/// GPU targets' layout: one output column per panel) is 1 for every n.
int64_t panelWidthFor(int64_t n, int64_t widest = 64);
/// panelWidthFor(n), else 16 with a zero-padded last panel (n >= 16), else 0.
int64_t paddedPanelWidthFor(int64_t n, int64_t widest = 64);

/// The values of an i8 constant (dense or resource); false if it is none.
bool readInt8Constant(mlir::ElementsAttr attr, std::vector<int8_t> &out);

/// Element (k, n) of a [K, N] matrix stored row-major, or as its transpose.
struct MatrixView {
  int64_t k = 0, n = 0;
  bool transposed = false; // stored [N, K]
  int64_t at(int64_t row, int64_t col) const { return transposed ? col * k + row : row * n + col; }
};

/// Symmetric quantization of f32 weights: per column (group = K) or per
/// group of `group` consecutive k in a column; scale = max|w| / (2^(bits-1) - 1),
/// rounded to f16 first when `f16Scales`, values rounded to nearest even.
PackedWeight quantizeWeight(const float *w, MatrixView view, int bits, int64_t group, int64_t width,
                            bool f16Scales, bool pairs = false);

/// Packs values already quantized by the model (QDQ): q (int8, [K, N] or
/// transposed) with `scales` [K / group, N] row-major.
PackedWeight packQuantized(const int8_t *q, MatrixView view, const float *scales, int64_t group, int64_t width,
                           bool pairs = false);

/// `f` rounded to nearest even as the bits of an IEEE half (or a bfloat16).
uint16_t toHalfBits(float f, bool bfloat = false);

/// A graph.constant of `type` holding `bytes` (a 64-byte aligned resource named `name`).
mlir::Value createResourceConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                                   llvm::ArrayRef<char> bytes, llvm::StringRef name);

/// The weight of `w` as a graph.constant named `name`.q8/.q4 (a resource).
mlir::Value createPackedWeightConstant(mlir::OpBuilder &b, mlir::Location loc, const PackedWeight &w,
                                       llvm::StringRef name);

/// Builds the constants of `w` (named `name`.q8/.q4 and `name`.scales) and
/// a graph.quantized_matmul of `lhs` by them (`dynamic` when `w.pairs`).
mlir::Value createQuantizedMatMul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs, const PackedWeight &w,
                                  llvm::StringRef name);

/// Erases graph ops whose results nothing reads (the chains a fold replaced), repeatedly.
void eraseDeadGraphOps(mlir::Operation *root);

} // namespace kiln::quant

#endif
