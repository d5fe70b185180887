// Helpers shared by the graph -> linalg lowering patterns: shapes, broadcasting maps, typed arithmetic.
#ifndef KILN_PASSES_CONVERSION_LOWERINGUTILS_H
#define KILN_PASSES_CONVERSION_LOWERINGUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

namespace kiln {

using BodyFn = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                         mlir::ValueRange)>;

/// An ONNX axis in [-rank, rank) as an index in [0, rank) (verified ops only).
/// Takes int64_t so that ODS's unsigned attribute getters convert correctly.
inline int64_t wrapAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// The size of dimension `i` of `v` as an index value (constant if static).
mlir::Value dimValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                     int64_t i);

/// The sizes of every dim of `v` as index values.
llvm::SmallVector<mlir::Value> dimsOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// A parallel linalg.generic of `type` (sizes `dims`, no inputs) whose element
/// at coordinates `coords` is `element(coords)`: gathers, index arithmetic.
mlir::Value generate(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                     llvm::ArrayRef<mlir::Value> dims,
                     const std::function<mlir::Value(mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::Value>)>
                         &element);

/// tensor.empty of `type`, taking dynamic sizes from `dims` (one per dim).
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type,
                        llvm::ArrayRef<mlir::Value> dims);

/// Indexing map reading `operand` broadcast numpy-style (right-aligned, size-1
/// dims pinned to 0) over the iteration space of `result`.
mlir::AffineMap broadcastMap(mlir::RankedTensorType operand, mlir::RankedTensorType result,
                             mlir::MLIRContext *ctx);

/// An elementwise linalg.generic producing `resultType` from `inputs` that
/// broadcast numpy-style to it; `body` maps scalar inputs to the result.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange inputs, const BodyFn &body);

/// Result dims (index values) of broadcasting `inputs` to `resultType`.
llvm::SmallVector<mlir::Value> broadcastDims(mlir::OpBuilder &b,
                                             mlir::Location loc,
                                             mlir::RankedTensorType resultType,
                                             mlir::ValueRange inputs);

/// Reshapes `v` to `type` whose sizes are `dims` (row-major data unchanged).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      mlir::RankedTensorType type,
                      llvm::ArrayRef<mlir::Value> dims);

/// Number of positions of a sliding window over `paddedSize` elements:
/// (paddedSize - dilation*(kernel-1) - 1) / stride + 1.
mlir::Value windowCount(mlir::OpBuilder &b, mlir::Location loc, mlir::Value paddedSize,
                        int64_t kernel, int64_t stride, int64_t dilation);

// dynconv: window pads known at run time only.
/// ONNX auto_pad SAME_UPPER (`upper`) / SAME_LOWER pads of one axis of
/// `in` elements, computed at run time: {begin, end}. `reach` is the
/// window's extent (kernel - 1) * dilation + 1; the output is ceil(in / stride).
std::pair<mlir::Value, mlir::Value> samePads(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in,
                                             mlir::Value reach, int64_t stride, bool upper);
// end dynconv

/// An scf.forall over the leading dims of `init` (extents `ubs`): each
/// iteration fills one block (the trailing dims, `blockShape`) with
/// `fill(builder, ivs, block)` and inserts it at the ivs. The block it is
/// given is the result's own slice (extracted from the forall's shared
/// output at the ivs), so bufferization writes it in place; from an empty
/// tensor, each work item allocated its block on the heap and copied it out.
/// With `keepUnitDims` the block keeps the leading unit dims ([1, .., 1,
/// blockShape...]: a tile a fused elementwise consumer can take as is). The
/// iterations are the parallel work items of the launch.
mlir::Value forallBlocks(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value init,
    llvm::ArrayRef<mlir::OpFoldResult> ubs, llvm::ArrayRef<int64_t> blockShape,
    const std::function<mlir::Value(mlir::OpBuilder &, mlir::ValueRange, mlir::Value)> &fill,
    bool keepUnitDims = false);

/// A channels-last window kernel (depthwise convolution, pooling) as vector
/// code: `padded` [N, Hp, Wp, C], result `rt` [N, OH, OW, C] (static OH, OW,
/// C). Work items are (n, oh); each computes its [OW, C] row in vectors of
/// `width` channels, channel block by channel block (position block by
/// position block when `padded` is larger than L2), `positions` output
/// positions at a time, their accumulators in registers across the window's
/// taps: acc = start(cb); per tap (kh, kw), t = tap(kh, kw, cb) once for the
/// positions (a depthwise weight vector; optional) and acc = step(acc,
/// x[n, oh*s + kh*d, ow*s + kw*d, cb:cb+width], t) for each; then
/// finish(acc, cb). A channel count that `width` does not divide gets a
/// masked last vector. LLVM does not vectorize the equivalent scalar loops
/// (it cannot prove the input and output apart), so the vectors are explicit.
struct ChannelWindow {
  llvm::ArrayRef<int64_t> kernel, strides, dilations;
  /// Empty: the input is already padded. Else (top, left, bottom, right): the input is the
  /// unpadded map and taps past its edges read `padValue` (a scalar of the element type).
  llvm::ArrayRef<int64_t> pads;
  mlir::Value padValue;
  int64_t width = 8;
  int64_t positions = 4;
  /// Channels per work item where the map's rows are few (0: every channel of a row). Over a
  /// 7x7 map two threads split 7 rows 4:3, and each read every channel of its rows, half of
  /// them written by the other thread's panels of the product before; groups give each
  /// thread half the channels, of every row. A multiple of `width` dividing the channels.
  int64_t channelGroup = 0;
  /// With channelGroup: the items are (n, half of the output rows, group, row) instead, for
  /// maps of an even number of rows: a thread works through one group's rows in a row (the
  /// group's input rows, read by 2-3 output rows each, stay in L1; a whole row of a 28x28x192
  /// map's 3 input rows is 64 KB, more than L1) and two threads split the rows in halves as
  /// the products around them do.
  bool channelGroupInHalves = false;
  std::function<mlir::Value(mlir::OpBuilder &, mlir::Value cb)> start;
  std::function<mlir::Value(mlir::OpBuilder &, int64_t kh, int64_t kw, mlir::Value cb)> tap;
  std::function<mlir::Value(mlir::OpBuilder &, mlir::Value acc, mlir::Value x, mlir::Value tap)> step;
  std::function<mlir::Value(mlir::OpBuilder &, mlir::Value acc, mlir::Value cb)> finish;
};
/// Channels per vector of a channels-last window kernel: a whole register
/// of f32 (16 with 512-bit vectors) where that many divide `channels`, else 8.
int64_t channelLanes(int64_t vectorBits, int64_t channels, mlir::Type elementType);
mlir::Value channelWindowKernel(mlir::OpBuilder &b, mlir::Location loc, mlir::Value padded,
                                mlir::RankedTensorType rt, const ChannelWindow &window);

/// A tensor of `type` filled with the scalar `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type,
                         llvm::ArrayRef<mlir::Value> dims, mlir::Value value);

/// Scalar constants and arithmetic that pick the float or integer op.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);
mlir::Value lowestValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);
mlir::Value addValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value subValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value mulValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value divValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value maxValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value minValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Type to);
/// exp(-x) for f32 (scalars or vectors) in 16 ops where math.exp takes ~24: x clamped to
/// [-87.3, 87.3], relative error at most 2.3e-7 inside (LoweringUtils.cpp); other types math.exp.
/// `nonNegative`: the caller promises x >= 0 (or NaN), so only the upper clamp is applied.
mlir::Value expOfNegated(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, bool nonNegative = false);
/// exp(d) for d <= 0 (a softmax's shifted scores) the same way, 0 below -87.3 (and for -inf).
mlir::Value expOfNonPositive(mlir::OpBuilder &b, mlir::Location loc, mlir::Value d);

/// Populates the patterns of each op family.
void populateElementwiseLoweringPatterns(mlir::RewritePatternSet &patterns);
/// `wideHalfProducts`: MatMul and Gemm of f16/bf16 accumulate in f32, rounded once at the end.
/// `vectorBits` sizes the depthwise convolution's channel vectors (channelLanes).
void populateContractionLoweringPatterns(mlir::RewritePatternSet &patterns, bool wideHalfProducts,
                                         int64_t vectorBits = 256);
/// `rowVectors` (x86): reductions and softmaxes over the last axis as vector row kernels.
/// `vectorBits` sizes channels-last pooling's channel vectors (channelLanes).
void populateNnLoweringPatterns(mlir::RewritePatternSet &patterns, bool rowVectors = false, int64_t vectorBits = 256);
void populateShapeLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateResizeLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateWinogradLoweringPatterns(mlir::RewritePatternSet &patterns, int64_t vectorBits);
void populateScatterGatherLoweringPatterns(mlir::RewritePatternSet &patterns);
/// `gpuAttention`: where the GPU kernel applies, graph.attention becomes kiln_kernel.attention.
void populateAttentionLoweringPatterns(mlir::RewritePatternSet &patterns, bool gpuAttention);
/// For the GPU: graph.layer_norm and graph.rms_norm become kiln_kernel.row_norm where it applies
/// (LowerNormToKernel.cpp).
void populateNormToKernelPatterns(mlir::RewritePatternSet &patterns);
/// Ops whose shape-like operands are run-time values (LowerRuntimeOperands.cpp).
void populateRuntimeOperandLoweringPatterns(mlir::RewritePatternSet &patterns);
/// NonZero, Compress, Unique, NonMaxSuppression (LowerDataDependent.cpp).
void populateDataDependentLoweringPatterns(mlir::RewritePatternSet &patterns);
/// `vectorBits` sizes the register blocks of the quantized product kernels.
void populateQuantizedMatMulLoweringPatterns(mlir::RewritePatternSet &patterns, int64_t vectorBits);
// newops: pooling indices and unpooling, linear algebra, sampling.
void populatePoolIndicesLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateLinearAlgebraLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateSamplingLoweringPatterns(mlir::RewritePatternSet &patterns);
/// TfIdfVectorizer (LowerTextFeatures.cpp).
void populateTextFeatureLoweringPatterns(mlir::RewritePatternSet &patterns);
/// Cast to/from strings, StringNormalizer (LowerStrings.cpp).
void populateStringLoweringPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif
