// Result types of the contraction and neural-network graph ops (NeuralNetworkOps.td).
#include "dialects/graph/IR/ShapeInference.h"
#include "dialects/graph/IR/Winograd.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

LogicalResult PackedMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), w = rankedType(adaptor.getRhs());
  if (a.getRank() < 2 || !w.hasStaticShape())
    return fail(loc, "packed_matmul needs a lhs of rank >= 2 and a static packed weight");
  // A 4-D rhs: one [N / B, K, B] weight per index of the lhs's leading dim.
  int64_t first = w.getRank() - 3;
  if (first == 1 && (a.getRank() < 3 || a.getDimSize(0) != w.getDimSize(0)))
    return fail(loc, "packed_matmul with " + Twine(w.getDimSize(0)) +
                         " weights needs a lhs of rank >= 3 with as many in its leading dim");
  int64_t k = a.getDimSize(a.getRank() - 1);
  if (k != kDyn && k != w.getDimSize(first + 1))
    return fail(loc, "packed_matmul contracts " + Twine(k) + " with " + Twine(w.getDimSize(first + 1)));
  SmallVector<int64_t> dims(a.getShape());
  dims.back() = w.getDimSize(first) * w.getDimSize(first + 2);
  types.push_back(a.clone(dims));
  return success();
}

/// The result of a product by a weight in `panels` column panels of `width`
/// contracting `k`: the lhs's dims with N = `columns` (a padded last panel)
/// or panels x width.
static LogicalResult inferPanelProduct(StringRef op, std::optional<Location> loc, RankedTensorType a, int64_t k,
                                       int64_t panels, int64_t width, std::optional<uint64_t> columns,
                                       SmallVectorImpl<Type> &types) {
  int64_t ak = a.getDimSize(a.getRank() - 1);
  if (ak != kDyn && ak != k)
    return fail(loc, op + " contracts " + Twine(ak) + " with " + Twine(k));
  int64_t padded = panels * width, n = padded;
  if (columns) {
    n = int64_t(*columns);
    if (n > padded || n <= padded - width)
      return fail(loc, op + " columns " + Twine(n) + " do not end in the last panel");
  }
  SmallVector<int64_t> dims(a.getShape());
  dims.back() = n;
  types.push_back(a.clone(dims));
  return success();
}

LogicalResult QuantizedMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), w = rankedType(adaptor.getWeight()),
       s = rankedType(adaptor.getScales());
  int64_t bits = adaptor.getBits(), group = adaptor.getGroupSize();
  if (a.getRank() < 2 || !a.getElementType().isF32() || !w.hasStaticShape() || !s.hasStaticShape())
    return fail(loc, "quantized_matmul needs an f32 lhs of rank >= 2 and static packed weights and scales");
  if (bits != 8 && bits != 4)
    return fail(loc, "quantized_matmul supports 8 and 4 bits, not " + Twine(bits));
  bool dynamic = adaptor.getDynamic();
  int64_t k = w.getDimSize(1) * (bits == 4 || dynamic ? 2 : 1);
  int64_t width = w.getDimSize(2) / (dynamic ? 2 : 1);
  if (dynamic && (bits != 8 || group != k || w.getDimSize(2) % 2 != 0))
    return fail(loc, "dynamic quantized_matmul needs 8 bits, one group per column and [N/B, K/2, 2B] pairs");
  if (group <= 0 || k % group != 0 || (bits == 4 && group % 2 != 0))
    return fail(loc, "quantized_matmul group size " + Twine(group) + " does not divide K = " + Twine(k));
  if (s.getDimSize(0) != w.getDimSize(0) || s.getDimSize(1) != k / group || s.getDimSize(2) != width)
    return fail(loc, "quantized_matmul scales do not match the weight's panels and groups");
  return inferPanelProduct("quantized_matmul", loc, a, k, w.getDimSize(0), width, adaptor.getColumns(), types);
}

LogicalResult IntegerMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), w = rankedType(adaptor.getWeight());
  if (a.getRank() < 2 || !a.getElementType().isInteger(32) || !w.hasStaticShape() || w.getDimSize(2) % 2 != 0)
    return fail(loc, "integer_matmul needs an i32 lhs of rank >= 2 and a static [N/B, K/2, 2B] weight");
  return inferPanelProduct("integer_matmul", loc, a, 2 * w.getDimSize(1), w.getDimSize(0), w.getDimSize(2) / 2,
                           adaptor.getColumns(), types);
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getLhs()), b = rankedType(adaptor.getRhs());
  if (a.getRank() < 1 || b.getRank() < 1)
    return fail(loc, "matmul operands must have rank >= 1");
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t ka = as.back(), kb = bs[bs.size() - 2];
  if (ka != kDyn && kb != kDyn && ka != kb)
    return fail(loc, "matmul contraction sizes differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2));
  if (failed(batch))
    return fail(loc, "matmul batch dimensions cannot be broadcast");
  SmallVector<int64_t> out = *batch;
  if (!aVec)
    out.push_back(as[as.size() - 2]);
  if (!bVec)
    out.push_back(bs.back());
  types.push_back(RankedTensorType::get(out, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return fail(loc, "gemm operands must be 2-D");
  bool ta = adaptor.getTransA() != 0, tb = adaptor.getTransB() != 0;
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kDyn && kb != kDyn && ka != kb)
    return fail(loc, "gemm contraction sizes differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  SmallVector<int64_t> out = {m, n};
  if (Value c = adaptor.getC()) {
    auto shape = broadcastShapes(out, rankedType(c).getShape());
    if (failed(shape) || shape->size() != 2)
      return fail(loc, "gemm bias C does not broadcast to the result");
  }
  types.push_back(RankedTensorType::get(out, a.getElementType()));
  return success();
}

/// Checks the per-spatial-axis attribute lengths shared by conv and pooling.
static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      int64_t spatial, ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> dilations) {
  if ((int64_t)pads.size() != 2 * spatial ||
      (int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial)
    return fail(loc, "expected " + Twine(2 * spatial) + " pads and " +
                         Twine(spatial) + " strides and dilations");
  for (int64_t s : strides)
    if (s <= 0)
      return fail(loc, "strides must be positive");
  for (int64_t d : dilations)
    if (d <= 0)
      return fail(loc, "dilations must be positive");
  for (int64_t p : pads)
    if (p < 0)
      return fail(loc, "pads must be non-negative");
  return success();
}

/// Whether a conv/pool keeps auto_pad SAME_* for run time (its pads
/// unknown at compile time); any other kept value is an error.
static FailureOr<bool> runTimeSamePads(std::optional<Location> loc, std::optional<StringRef> autoPad) {
  if (!autoPad)
    return false;
  if (*autoPad != "SAME_UPPER" && *autoPad != "SAME_LOWER")
    return fail(loc, "unsupported auto_pad '" + *autoPad + "'");
  return true;
}

/// The output size of a SAME-padded window axis: ceil(in / stride).
static int64_t sameOutputSize(int64_t in, int64_t stride) {
  return in == kDyn ? kDyn : (in + stride - 1) / stride;
}

/// A convolution's optional bias: 1-D with one value per output channel.
static LogicalResult checkConvBias(std::optional<Location> loc, Value bias, int64_t cout) {
  if (!bias)
    return success();
  auto bt = rankedType(bias);
  if (bt.getRank() != 1 || (bt.getDimSize(0) != kDyn && cout != kDyn && bt.getDimSize(0) != cout))
    return fail(loc, "conv bias must be 1-D of size " + Twine(cout));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3 || w.getRank() != rank)
    return fail(loc, "conv input and weight must have the same rank >= 3");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(),
                              adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  int64_t group = adaptor.getGroup();
  if (group <= 0)
    return fail(loc, "group must be positive");
  // A weight of dynamic shape (a graph input) leaves its sizes to run time.
  int64_t cout = w.getDimSize(0);
  if (cout != kDyn && cout % group != 0)
    return fail(loc, "output channels " + Twine(cout) +
                         " not divisible by group " + Twine(group));
  int64_t cin = x.getDimSize(1);
  if (cin != kDyn && w.getDimSize(1) != kDyn && cin != w.getDimSize(1) * group)
    return fail(loc, "input channels " + Twine(cin) + " != weight channels " +
                         Twine(w.getDimSize(1)) + " x group " + Twine(group));
  if (failed(checkConvBias(loc, adaptor.getBias(), cout)))
    return failure();
  auto same = runTimeSamePads(loc, adaptor.getAutoPad());
  if (failed(same))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0), cout};
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back(*same ? sameOutputSize(x.getDimSize(2 + i), adaptor.getStrides()[i])
                  : w.isDynamicDim(2 + i)
                      ? kDyn
                      : slidingWindowSize(x.getDimSize(2 + i), w.getDimSize(2 + i), adaptor.getPads()[i],
                                          adaptor.getPads()[spatial + i], adaptor.getStrides()[i],
                                          adaptor.getDilations()[i], false));
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult PackedConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3 || (int64_t)kernel.size() != spatial || !w.hasStaticShape())
    return fail(loc, "packed_conv needs one kernel size per spatial axis and a static packed weight");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(), adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  int64_t window = 1;
  for (int64_t k : kernel)
    window *= k;
  // Channels-last: [N, spatial..., C]; otherwise [N, C, spatial...].
  bool last = adaptor.getChannelsLast();
  int64_t firstSpatial = last ? 1 : 2;
  int64_t cin = x.getDimSize(last ? rank - 1 : 1);
  if (window <= 0 || (cin != kDyn && cin * window != w.getDimSize(1)))
    return fail(loc, "packed_conv weight rows " + Twine(w.getDimSize(1)) + " != input channels x window");
  int64_t cout = w.getDimSize(0) * w.getDimSize(2);
  if (failed(checkConvBias(loc, adaptor.getBias(), cout)))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0)};
  if (!last)
    out.push_back(cout);
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back(slidingWindowSize(x.getDimSize(firstSpatial + i), kernel[i], adaptor.getPads()[i],
                                    adaptor.getPads()[spatial + i], adaptor.getStrides()[i],
                                    adaptor.getDilations()[i], false));
  if (last)
    out.push_back(cout);
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult NhwcPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  if (x.getRank() != 4 || kernel.size() != 2)
    return fail(loc, "nhwc_pool takes a 4-D input and a 2-D window");
  if (adaptor.getKind() != "max" && adaptor.getKind() != "average")
    return fail(loc, "nhwc_pool kind must be max or average");
  if (failed(checkWindowAttrs(loc, 2, adaptor.getPads(), adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0)};
  for (int64_t i = 0; i < 2; ++i)
    out.push_back(slidingWindowSize(x.getDimSize(1 + i), kernel[i], adaptor.getPads()[i], adaptor.getPads()[2 + i],
                                    adaptor.getStrides()[i], adaptor.getDilations()[i], false));
  out.push_back(x.getDimSize(3));
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult NhwcConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  if (x.getRank() != 4 || w.getRank() != 4 || !w.hasStaticShape())
    return fail(loc, "nhwc_conv takes a 4-D input and a static 4-D [kh, kw, C/group, Cout] weight");
  if (failed(checkWindowAttrs(loc, 2, adaptor.getPads(), adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  int64_t group = adaptor.getGroup(), cout = w.getDimSize(3), cin = x.getDimSize(3);
  if (group <= 0 || cout % group != 0)
    return fail(loc, "output channels " + Twine(cout) + " not divisible by group " + Twine(group));
  if (cin != kDyn && cin != w.getDimSize(2) * group)
    return fail(loc, "input channels " + Twine(cin) + " != weight channels " + Twine(w.getDimSize(2)) +
                         " x group " + Twine(group));
  if (failed(checkConvBias(loc, adaptor.getBias(), cout)))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0)};
  for (int64_t i = 0; i < 2; ++i)
    out.push_back(slidingWindowSize(x.getDimSize(1 + i), w.getDimSize(i), adaptor.getPads()[i],
                                    adaptor.getPads()[2 + i], adaptor.getStrides()[i], adaptor.getDilations()[i],
                                    false));
  out.push_back(cout);
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

/// Tiles of `tile` positions that cover `size` outputs.
static int64_t tileCount(int64_t size, int64_t tile) { return (size + tile - 1) / tile; }

LogicalResult WinogradInputOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t tile = adaptor.getTile();
  ArrayRef<int64_t> pads = adaptor.getPads();
  if (!winograd::supportedTile(tile))
    return fail(loc, "winograd_input tile must be 2 or 4, not " + Twine(tile));
  if (x.getRank() != 4 || x.isDynamicDim(1) || x.isDynamicDim(2) || x.isDynamicDim(3))
    return fail(loc, "winograd_input takes an [N, H, W, C] tensor of static H, W, C");
  if (pads.size() != 4 || llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return fail(loc, "winograd_input needs 4 non-negative pads");
  int64_t oh = x.getDimSize(1) + pads[0] + pads[2] - 2, ow = x.getDimSize(2) + pads[1] + pads[3] - 2;
  if (oh < 1 || ow < 1)
    return fail(loc, "winograd_input's 3x3 window does not fit the padded input");
  int64_t a = tile + 2;
  types.push_back(RankedTensorType::get(
      {a * a, x.getDimSize(0), tileCount(oh, tile) * tileCount(ow, tile), x.getDimSize(3)}, x.getElementType()));
  return success();
}

LogicalResult WinogradOutputOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  int64_t tile = adaptor.getTile(), height = adaptor.getHeight(), width = adaptor.getWidth();
  if (!winograd::supportedTile(tile))
    return fail(loc, "winograd_output tile must be 2 or 4, not " + Twine(tile));
  if (height < 1 || width < 1)
    return fail(loc, "winograd_output needs a positive height and width");
  auto m = rankedType(adaptor.getProducts());
  int64_t a = tile + 2, tiles = tileCount(height, tile) * tileCount(width, tile);
  if (m.getRank() != 4 || m.getDimSize(0) != a * a || m.getDimSize(2) != tiles || m.isDynamicDim(3))
    return fail(loc, "winograd_output's products must be [" + Twine(a * a) + ", N, " + Twine(tiles) +
                         ", K] of static K");
  if (failed(checkConvBias(loc, adaptor.getBias(), m.getDimSize(3))))
    return failure();
  types.push_back(RankedTensorType::get({m.getDimSize(1), height, width, m.getDimSize(3)}, m.getElementType()));
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3 || w.getRank() != rank)
    return fail(loc, "conv_transpose input and weight must have the same rank >= 3");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(), adaptor.getStrides(),
                              adaptor.getDilations())))
    return failure();
  if ((int64_t)adaptor.getOutputPadding().size() != spatial)
    return fail(loc, "expected " + Twine(spatial) + " output_padding values");
  int64_t group = adaptor.getGroup();
  // A weight of dynamic shape (a graph input) leaves its sizes to run time.
  if (group <= 0 || (!w.isDynamicDim(0) && w.getDimSize(0) % group != 0))
    return fail(loc, "weight input channels not divisible by group");
  int64_t cin = x.getDimSize(1);
  if (cin != kDyn && !w.isDynamicDim(0) && cin != w.getDimSize(0))
    return fail(loc, "input channels " + Twine(cin) + " != weight's " + Twine(w.getDimSize(0)));
  SmallVector<int64_t> out = {x.getDimSize(0), w.isDynamicDim(1) ? kDyn : w.getDimSize(1) * group};
  // Kept output_shape/auto_pad: the size is the requested one, pads at run time.
  auto same = runTimeSamePads(loc, adaptor.getAutoPad());
  if (failed(same))
    return failure();
  std::optional<ArrayRef<int64_t>> outputShape = adaptor.getOutputShape();
  if (outputShape && (int64_t)outputShape->size() != spatial)
    return fail(loc, "expected " + Twine(spatial) + " output_shape values");
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = x.getDimSize(2 + i);
    if (outputShape || *same) {
      int64_t size = outputShape ? (*outputShape)[i] : in == kDyn ? kDyn : in * adaptor.getStrides()[i];
      if (size != kDyn && size <= 0)
        return fail(loc, "conv_transpose output size is not positive");
      out.push_back(size);
      continue;
    }
    if (in == kDyn || w.isDynamicDim(2 + i)) {
      out.push_back(kDyn);
      continue;
    }
    int64_t size = adaptor.getStrides()[i] * (in - 1) + adaptor.getOutputPadding()[i] +
                   adaptor.getDilations()[i] * (w.getDimSize(2 + i) - 1) + 1 -
                   adaptor.getPads()[i] - adaptor.getPads()[spatial + i];
    if (size <= 0)
      return fail(loc, "conv_transpose output size is not positive");
    out.push_back(size);
  }
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

// --- Resize family (Resize, Upsample) ---
/// Reads a constant float tensor produced by graph.constant, if it is one.
static std::optional<SmallVector<double>> constantFloats(Value v) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<double> values;
  for (const APFloat &x : attr.getValues<APFloat>())
    values.push_back(x.convertToDouble());
  return values;
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank();
  StringRef mode = adaptor.getMode(), ctm = adaptor.getCoordinateTransformationMode();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return fail(loc, "unsupported resize mode '" + mode + "'");
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                           "tf_half_pixel_for_nn", "tf_crop_and_resize"}, ctm))
    return fail(loc, "unsupported coordinate_transformation_mode '" + ctm + "'");
  if (mode == "nearest" && !llvm::is_contained({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
                                               adaptor.getNearestMode()))
    return fail(loc, "unsupported nearest_mode '" + adaptor.getNearestMode() + "'");
  if (mode != "nearest" && !isa<FloatType>(x.getElementType()))
    return fail(loc, "resize mode '" + mode + "' needs a float input");
  // scales, sizes and roi are 1-D: one value per axis (roi: two).
  auto checkVector = [&](Value v, StringRef name, int64_t length, bool isFloat) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 1 || (isFloat ? !isa<FloatType>(t.getElementType())
                                           : !t.getElementType().isInteger(64)))
      return fail(loc, "resize " + name + " must be a 1-D " + (isFloat ? "float" : "i64") + " tensor");
    if (!t.isDynamicDim(0) && t.getDimSize(0) != length)
      return fail(loc, "resize " + name + " must have " + Twine(length) + " values, got " +
                           Twine(t.getDimSize(0)));
    return success();
  };
  Value scales = adaptor.getScales(), sizes = adaptor.getSizes(), roi = adaptor.getRoi();
  if (bool(scales) == bool(sizes))
    return fail(loc, "resize needs exactly one of scales and sizes");
  if (scales && failed(checkVector(scales, "scales", rank, true)))
    return failure();
  if (sizes && failed(checkVector(sizes, "sizes", rank, false)))
    return failure();
  if (ctm == "tf_crop_and_resize" && !roi)
    return fail(loc, "coordinate_transformation_mode tf_crop_and_resize needs roi");
  if (roi && failed(checkVector(roi, "roi", 2 * rank, true)))
    return failure();
  SmallVector<int64_t> out(rank, kDyn);
  if (scales) {
    if (auto s = constantFloats(scales)) {
      for (int64_t i = 0; i < rank; ++i) {
        if (!((*s)[i] > 0))
          return fail(loc, "resize scales must be positive");
        if (!x.isDynamicDim(i))
          out[i] = (int64_t)std::floor((*s)[i] * (double)x.getDimSize(i));
      }
    }
  } else if (auto s = constantInts(sizes)) {
    for (int64_t i = 0; i < rank; ++i) {
      if ((*s)[i] < 0)
        return fail(loc, "resize sizes must not be negative");
      if (x.getDimSize(i) == 0 && (*s)[i] > 0)
        return fail(loc, "resize cannot fill axis " + Twine(i) + " from an empty input axis");
      out[i] = (*s)[i];
    }
  }
  types.push_back(x.clone(out));
  return success();
}
// --- end Resize family ---

LogicalResult InstanceNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 3)
    return fail(loc, "instance_norm input must have rank >= 3");
  types.push_back(x);
  return success();
}

template <typename Adaptor>
static LogicalResult inferPool(std::optional<Location> loc, Adaptor adaptor,
                               SmallVectorImpl<Type> &types,
                               std::optional<StringRef> autoPad = std::nullopt) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank(), spatial = rank - 2;
  if (rank < 3)
    return fail(loc, "pooling input must have rank >= 3");
  if ((int64_t)adaptor.getKernelShape().size() != spatial)
    return fail(loc, "expected " + Twine(spatial) + " kernel_shape values");
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getPads(),
                              adaptor.getStrides(), adaptor.getDilations())))
    return failure();
  SmallVector<int64_t> out = {x.getDimSize(0), x.getDimSize(1)};
  auto same = runTimeSamePads(loc, autoPad);
  if (failed(same))
    return failure();
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back(*same ? sameOutputSize(x.getDimSize(2 + i), adaptor.getStrides()[i]) : slidingWindowSize(
        x.getDimSize(2 + i), adaptor.getKernelShape()[i], adaptor.getPads()[i],
        adaptor.getPads()[spatial + i], adaptor.getStrides()[i],
        adaptor.getDilations()[i], adaptor.getCeilMode() != 0));
  types.push_back(RankedTensorType::get(out, x.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferPool(loc, adaptor, types, adaptor.getAutoPad());
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferPool(loc, adaptor, types, adaptor.getAutoPad());
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 3)
    return fail(loc, "global pooling input must have rank >= 3");
  SmallVector<int64_t> out(x.getShape());
  for (int64_t i = 2; i < x.getRank(); ++i)
    out[i] = 1;
  types.push_back(x.clone(out));
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 2)
    return fail(loc, "batch_norm input must have rank >= 2");
  for (Value p : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                  adaptor.getVariance()}) {
    auto t = rankedType(p);
    if (t.getRank() != 1 ||
        (t.getDimSize(0) != kDyn && x.getDimSize(1) != kDyn &&
         t.getDimSize(0) != x.getDimSize(1)))
      return fail(loc, "batch_norm parameters must be 1-D with one value per channel");
  }
  types.push_back(x);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return fail(loc, "layer_norm axis out of range");
  SmallVector<int64_t> stats(x.getShape());
  for (int64_t i = *axis; i < x.getRank(); ++i)
    stats[i] = 1;
  types.push_back(x);
  types.push_back(x.clone(stats));
  types.push_back(x.clone(stats));
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "rms_norm axis out of range");
  if (Value scale = adaptor.getScale()) {
    auto s = rankedType(scale);
    auto b = broadcastShapes(x.getShape(), s.getShape());
    if (s.getElementType() != x.getElementType() || failed(b) || s.getRank() > x.getRank())
      return fail(loc, "rms_norm scale must broadcast to the input's shape");
  }
  types.push_back(x);
  return success();
}

LogicalResult RotaryOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() < 1 || x.isDynamicDim(x.getRank() - 1) || x.getDimSize(x.getRank() - 1) % 2 != 0)
    return fail(loc, "rotary needs a static, even last dim");
  for (Value table : {adaptor.getCos(), adaptor.getSin()}) {
    auto t = rankedType(table);
    auto b = broadcastShapes(x.getShape(), t.getShape());
    bool fits = t.getElementType() == x.getElementType() && t.getRank() <= x.getRank() && succeeded(b);
    for (int64_t i = 0; fits && i < x.getRank(); ++i)
      fits = x.isDynamicDim(i) || (*b)[i] == x.getDimSize(i);
    if (!fits)
      return fail(loc, "rotary cos and sin must broadcast to the input's shape");
  }
  types.push_back(x);
  return success();
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "log_softmax axis out of range");
  types.push_back(x);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (failed(normalizeAxis(adaptor.getAxis(), x.getRank())))
    return fail(loc, "softmax axis out of range");
  types.push_back(x);
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto q = rankedType(adaptor.getQuery()), k = rankedType(adaptor.getKey()), v = rankedType(adaptor.getValue());
  int64_t rank = q.getRank();
  if (rank < 2 || k.getRank() != rank || v.getRank() != rank)
    return fail(loc, "attention needs query, key and value of one rank >= 2");
  auto agree = [](int64_t a, int64_t b) { return a == kDyn || b == kDyn || a == b; };
  if (!agree(q.getDimSize(rank - 1), k.getDimSize(rank - 1)))
    return fail(loc, "attention query and key head sizes differ");
  if (!agree(k.getDimSize(rank - 2), v.getDimSize(rank - 2)))
    return fail(loc, "attention key and value lengths differ");
  // Each key/value batch dim divides the query's (broadcast or grouped heads).
  for (int64_t i = 0; i + 2 < rank; ++i)
    for (RankedTensorType kv : {k, v}) {
      int64_t bq = q.getDimSize(i), bk = kv.getDimSize(i);
      if (bq != kDyn && bk != kDyn && (bk == 0 || bq % bk != 0))
        return fail(loc, "attention key/value batch dim " + Twine(i) + " (" + Twine(bk) +
                             ") does not divide the query's (" + Twine(bq) + ")");
    }
  SmallVector<int64_t> scores(q.getShape());
  scores.back() = k.getDimSize(rank - 2);
  if (Value mask = adaptor.getMask()) {
    auto m = rankedType(mask);
    auto shape = broadcastShapes(scores, m.getShape());
    // The mask must not make the scores larger than Q K^T.
    if (failed(shape) || shape->size() != scores.size() ||
        llvm::any_of(llvm::zip(*shape, scores), [](auto p) {
          return std::get<1>(p) != kDyn && std::get<0>(p) != std::get<1>(p);
        }))
      return fail(loc, "attention mask does not broadcast to the scores [..., Sq, Sk]");
  }
  SmallVector<int64_t> out(q.getShape());
  out.back() = v.getDimSize(rank - 1);
  types.push_back(q.clone(out));
  return success();
}

template <typename Adaptor>
static LogicalResult inferReduce(std::optional<Location> loc, Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank();
  SmallVector<bool> reduced(rank, adaptor.getAxes().empty());
  for (int64_t axis : adaptor.getAxes()) {
    auto a = normalizeAxis(axis, rank);
    if (failed(a))
      return fail(loc, "reduction axis " + Twine(axis) + " out of range");
    reduced[*a] = true;
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(x.getDimSize(i));
    else if (adaptor.getKeepdims())
      out.push_back(1);
  }
  types.push_back(x.clone(out));
  return success();
}

#define KILN_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferReduce(loc, adaptor, types);                                   \
  }
KILN_REDUCE_INFER(ReduceMeanOp)
KILN_REDUCE_INFER(ReduceSumOp)
KILN_REDUCE_INFER(ReduceMaxOp)
KILN_REDUCE_INFER(ReduceMinOp)
KILN_REDUCE_INFER(ReduceProdOp)
KILN_REDUCE_INFER(ReduceL1Op)
KILN_REDUCE_INFER(ReduceL2Op)
KILN_REDUCE_INFER(ReduceSumSquareOp)
KILN_REDUCE_INFER(ReduceLogSumOp)
KILN_REDUCE_INFER(ReduceLogSumExpOp)
#undef KILN_REDUCE_INFER

// Pooling with indices, linear algebra, sampling.
LogicalResult MaxPoolWithIndicesOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                     Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (adaptor.getStorageOrder() != 0 && adaptor.getStorageOrder() != 1)
    return fail(loc, "storage_order must be 0 or 1");
  if (failed(inferPool(loc, adaptor, types)))
    return failure();
  types.push_back(cast<RankedTensorType>(types[0]).clone(IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult MaxUnpoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), idx = rankedType(adaptor.getIndices());
  auto shapeType = rankedType(adaptor.getShape());
  if (idx.getRank() != x.getRank())
    return fail(loc, "max_unpool indices must have the input's rank");
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (x.getDimSize(i) != kDyn && idx.getDimSize(i) != kDyn && x.getDimSize(i) != idx.getDimSize(i))
      return fail(loc, "max_unpool indices must have the input's shape");
  if (shapeType.isDynamicDim(0))
    return fail(loc, "max_unpool shape must have a static length");
  SmallVector<int64_t> dims(shapeType.getDimSize(0), kDyn);
  if (auto shape = constantInts(adaptor.getShape())) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if ((*shape)[i] < 0)
        return fail(loc, "max_unpool shape has a negative dimension");
      dims[i] = (*shape)[i];
    }
  }
  types.push_back(x.clone(dims));
  return success();
}

LogicalResult DetOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  int64_t rank = x.getRank();
  if (rank < 2)
    return fail(loc, "det input must have rank >= 2");
  if (!isa<FloatType>(x.getElementType()))
    return fail(loc, "det input must be floating point");
  int64_t m = x.getDimSize(rank - 2), n = x.getDimSize(rank - 1);
  if (m != kDyn && n != kDyn && m != n)
    return fail(loc, "det needs square matrices, got " + Twine(m) + "x" + Twine(n));
  types.push_back(x.clone(x.getShape().drop_back(2)));
  return success();
}

LogicalResult GridSampleOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), g = rankedType(adaptor.getGrid());
  if (x.getRank() != 4 || g.getRank() != 4)
    return fail(loc, "grid_sample needs a 4-D input and a 4-D grid");
  if (!isa<FloatType>(x.getElementType()) || g.getElementType() != x.getElementType())
    return fail(loc, "grid_sample input and grid must have the same float type");
  if (g.getDimSize(3) != kDyn && g.getDimSize(3) != 2)
    return fail(loc, "grid_sample grid's last dim must be 2");
  int64_t n = x.getDimSize(0) != kDyn ? x.getDimSize(0) : g.getDimSize(0);
  if (x.getDimSize(0) != kDyn && g.getDimSize(0) != kDyn && x.getDimSize(0) != g.getDimSize(0))
    return fail(loc, "grid_sample input and grid batch sizes differ");
  StringRef mode = adaptor.getMode(), padding = adaptor.getPaddingMode();
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return fail(loc, "unsupported grid_sample mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return fail(loc, "unsupported grid_sample padding_mode '" + padding + "'");
  types.push_back(x.clone({n, x.getDimSize(1), g.getDimSize(1), g.getDimSize(2)}));
  return success();
}

LogicalResult RoiAlignOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput()), rois = rankedType(adaptor.getRois());
  auto idx = rankedType(adaptor.getBatchIndices());
  if (x.getRank() != 4 || !isa<FloatType>(x.getElementType()))
    return fail(loc, "roi_align needs a 4-D float input");
  if (rois.getRank() != 2 || rois.getElementType() != x.getElementType() ||
      (rois.getDimSize(1) != kDyn && rois.getDimSize(1) != 4))
    return fail(loc, "roi_align rois must be [R, 4] of the input's type");
  if (idx.getRank() != 1 || (idx.getDimSize(0) != kDyn && rois.getDimSize(0) != kDyn &&
                             idx.getDimSize(0) != rois.getDimSize(0)))
    return fail(loc, "roi_align batch_indices must be [R]");
  if (adaptor.getMode() != "avg" && adaptor.getMode() != "max")
    return fail(loc, "unsupported roi_align mode '" + adaptor.getMode() + "'");
  StringRef ctm = adaptor.getCoordinateTransformationMode();
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return fail(loc, "unsupported roi_align coordinate_transformation_mode '" + ctm + "'");
  int64_t outH = adaptor.getOutputHeight(), outW = adaptor.getOutputWidth();
  if (outH < 1 || outW < 1)
    return fail(loc, "roi_align output_height and output_width must be positive");
  int64_t ratio = adaptor.getSamplingRatio();
  if (ratio < 0)
    return fail(loc, "roi_align sampling_ratio must be >= 0");
  int64_t r = rois.getDimSize(0) != kDyn ? rois.getDimSize(0) : idx.getDimSize(0);
  types.push_back(x.clone({r, x.getDimSize(1), outH, outW}));
  return success();
}

} // namespace kiln::graph
