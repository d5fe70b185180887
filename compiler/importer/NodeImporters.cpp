// One importer per ONNX op: maps a node's inputs and attributes onto graph dialect ops, per opset.
#include "compiler/importer/NodeContext.h"
#include "compiler/importer/OpCreate.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

// Run-time shape operands (shapeinputs): a shape-like input that the model
// computes is read by the generated code instead of being refused.
/// True for a present input that is no constant.
bool isRuntime(Value v) { return v && !matchPattern(v, m_Constant()); }

/// The static length of a 1-D input, failing with a message naming it
/// otherwise (and when `needInt64` and its elements are not int64).
FailureOr<int64_t> runtimeLength(NodeContext &c, Value v, StringRef what, bool needInt64 = false) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() != 1 || t.isDynamicDim(0)) {
    (void)c.fail("a computed '" + what + "' must be 1-D with a static length");
    return failure();
  }
  if (needInt64 && !t.getElementType().isInteger(64)) {
    (void)c.fail("'" + what + "' must be int64");
    return failure();
  }
  return t.getDimSize(0);
}

template <typename OpTy> NodeImporter binary() {
  return [](NodeContext &c) -> Results {
    if (failed(require(c, 2)))
      return failure();
    Value rhs = c.input(1);
    // Before opset 7, `broadcast=1, axis=k` aligned B's dims with A's from
    // axis k: append unit dims to B so that numpy broadcasting agrees.
    if (c.opset < 7 && c.intAttr("broadcast", 0) && c.attr("axis")) {
      int64_t ra = rankOf(c.input(0)), rb = rankOf(rhs);
      int64_t axis = c.intAttr("axis", 0);
      if (axis < 0)
        axis += ra;
      int64_t trailing = ra - axis - rb;
      if (axis < 0 || trailing < 0)
        return c.fail("legacy broadcast axis out of range");
      if (trailing > 0) {
        SmallVector<int64_t> axes;
        for (int64_t i = 0; i < trailing; ++i)
          axes.push_back(rb + i);
        auto expanded = create<UnsqueezeOp>(c, rhs, axes);
        if (failed(expanded))
          return failure();
        rhs = *expanded;
      }
    }
    return single(create<OpTy>(c, c.input(0), rhs));
  };
}

template <typename OpTy> NodeImporter unary() {
  return [](NodeContext &c) -> Results {
    if (failed(require(c, 1)))
      return failure();
    return single(create<OpTy>(c, c.input(0)));
  };
}

/// Per-spatial-axis window attributes with ONNX defaults; resolves auto_pad.
struct Window {
  SmallVector<int64_t> kernel, pads, strides, dilations;
  /// auto_pad SAME_* left to run time (pads zero), null when resolved here.
  StringAttr runTimeAutoPad;
};

FailureOr<Window> windowAttrs(NodeContext &c, Value input,
                              ArrayRef<int64_t> kernel) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t spatial = type.getRank() - 2;
  if (spatial < 1) {
    (void)c.fail("input must have rank >= 3");
    return failure();
  }
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(spatial, 1));
  w.dilations = c.intsAttr("dilations").value_or(SmallVector<int64_t>(spatial, 1));
  w.pads = c.intsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if ((int64_t)w.kernel.size() != spatial || (int64_t)w.strides.size() != spatial ||
      (int64_t)w.dilations.size() != spatial || (int64_t)w.pads.size() != 2 * spatial) {
    (void)c.fail("kernel_shape/strides/dilations/pads do not match " +
                 Twine(spatial) + " spatial axes");
    return failure();
  }
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = type.getDimSize(2 + i);
      if (in == ShapedType::kDynamic || w.kernel[i] == ShapedType::kDynamic) {
        // Sizes known at run time only: the op keeps auto_pad and the
        // lowering computes the pads.
        std::fill(w.pads.begin(), w.pads.end(), 0);
        w.runTimeAutoPad = c.b.getStringAttr(autoPad);
        break;
      }
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[spatial + i] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    (void)c.fail("unsupported auto_pad '" + autoPad + "'");
    return failure();
  }
  return w;
}

/// Conv's attributes applied to `x` and `w`, with an optional bias. A weight
/// of dynamic shape (a graph input) takes its kernel sizes from kernel_shape
/// when given, else leaves them to run time.
FailureOr<Value> convolution(NodeContext &c, Value x, Value w, Value bias) {
  auto wType = cast<RankedTensorType>(w.getType());
  auto xType = cast<RankedTensorType>(x.getType());
  if (wType.getRank() != xType.getRank() || xType.getRank() < 3)
    return c.fail("weight must have the input's rank >= 3");
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  if (auto ks = c.intsAttr("kernel_shape")) {
    if (ks->size() != kernel.size())
      return c.fail("kernel_shape does not match the weight's shape");
    for (auto [k, a] : llvm::zip(kernel, *ks)) {
      if (k != ShapedType::kDynamic && k != a)
        return c.fail("kernel_shape does not match the weight's shape");
      k = a;
    }
  }
  auto win = windowAttrs(c, x, kernel);
  if (failed(win))
    return failure();
  return create<ConvOp>(c, x, w, bias, c.intAttr("group", 1), win->pads, win->strides, win->dilations,
                        win->runTimeAutoPad);
}

Results importConv(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(convolution(c, c.input(0), c.input(1), c.input(2)));
}

// --- Resize family (Resize, Upsample) ---
/// Resize (opset 10+) and Upsample: scales, sizes and roi pass through as
/// operands, constant or not; shape inference reads the constant ones.
Results importResize(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  bool upsample = c.node.op_type() == "Upsample";
  Value x = c.input(0);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  std::string mode = c.stringAttr("mode", "nearest");
  std::string ctm = c.stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest = c.stringAttr("nearest_mode", "round_prefer_floor");
  // Upsample and Resize-10 had neither attribute: their rule is asymmetric with floor.
  if (upsample || c.opset < 11) {
    ctm = "asymmetric";
    nearest = "floor";
  }
  if (c.intAttr("antialias", 0))
    return c.fail("unsupported antialias = 1");
  if (c.attr("axes"))
    return c.fail("unsupported attribute 'axes'");
  if (c.stringAttr("keep_aspect_ratio_policy", "stretch") != "stretch")
    return c.fail("unsupported keep_aspect_ratio_policy '" + c.stringAttr("keep_aspect_ratio_policy", "") + "'");
  // An empty tensor stands for an omitted optional input.
  auto present = [](Value v) {
    if (!v)
      return Value();
    auto t = cast<RankedTensorType>(v.getType());
    return t.hasStaticShape() && t.getNumElements() == 0 ? Value() : v;
  };
  // scales is input 1 for Resize-10 and Upsample-9, input 2 after them; sizes is input 3.
  bool early = upsample || c.opset < 11;
  Value roi = early ? Value() : present(c.input(1));
  Value scales = present(early ? c.input(1) : c.input(2));
  Value sizes = early ? Value() : present(c.input(3));
  if (upsample && !scales) {
    // Upsample-7 holds the scales as an attribute.
    const auto *a = c.attr("scales");
    if (!a)
      return c.fail("Upsample needs scales");
    if ((int64_t)a->floats_size() != rank)
      return c.fail("scales must have one value per axis");
    SmallVector<float> values(a->floats().begin(), a->floats().end());
    auto type = RankedTensorType::get({rank}, c.b.getF32Type());
    scales = ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(type, ArrayRef<float>(values)));
  }
  if (ctm != "tf_crop_and_resize")
    roi = Value();
  return single(create<ResizeOp>(c, x, roi, scales, sizes, mode, ctm, nearest,
                                 APFloat(c.floatAttr("cubic_coeff_a", -0.75f)),
                                 (uint64_t)c.intAttr("exclude_outside", 0),
                                 APFloat(c.floatAttr("extrapolation_value", 0.0f))));
}
// --- end Resize family ---

Results importConvTranspose(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  auto xt = cast<RankedTensorType>(c.input(0).getType());
  auto wt = cast<RankedTensorType>(c.input(1).getType());
  if (wt.getRank() != xt.getRank() || xt.getRank() < 3)
    return c.fail("weight must have the input's rank >= 3");
  int64_t spatial = xt.getRank() - 2;
  SmallVector<int64_t> kernel(wt.getShape().drop_front(2));
  auto strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(spatial, 1));
  auto dilations = c.intsAttr("dilations").value_or(SmallVector<int64_t>(spatial, 1));
  auto outPad = c.intsAttr("output_padding").value_or(SmallVector<int64_t>(spatial, 0));
  auto pads = c.intsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if ((int64_t)strides.size() != spatial || (int64_t)dilations.size() != spatial ||
      (int64_t)outPad.size() != spatial || (int64_t)pads.size() != 2 * spatial)
    return c.fail("strides/dilations/output_padding/pads do not match the spatial axes");
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  auto outputShape = c.intsAttr("output_shape");
  if (auto ks = c.intsAttr("kernel_shape"); ks && (int64_t)ks->size() == spatial)
    for (int64_t i = 0; i < spatial; ++i)
      if (kernel[i] == ShapedType::kDynamic)
        kernel[i] = (*ks)[i];
  if (outputShape && (int64_t)outputShape->size() < spatial)
    return c.fail("output_shape must have a size per spatial axis");
  bool runTime = false;
  for (int64_t i = 0; i < spatial; ++i)
    runTime |= xt.isDynamicDim(2 + i) || kernel[i] == ShapedType::kDynamic;
  if ((outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") && runTime) {
    // Sizes known at run time only: the op keeps the request and the
    // lowering computes the begin pads.
    std::fill(pads.begin(), pads.end(), 0);
    StringAttr same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" ? c.b.getStringAttr(autoPad) : StringAttr();
    DenseI64ArrayAttr size;
    if (outputShape)
      size = c.b.getDenseI64ArrayAttr(ArrayRef<int64_t>(*outputShape).take_back(spatial));
    return single(create<ConvTransposeOp>(c, c.input(0), c.input(1), c.input(2), c.intAttr("group", 1), pads,
                                          strides, dilations, outPad, same, size));
  }
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Pads that give the requested output size (SAME: input * stride).
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = xt.getDimSize(2 + i);
      int64_t want = outputShape ? (*outputShape)[outputShape->size() - spatial + i] : in * strides[i];
      int64_t total = strides[i] * (in - 1) + outPad[i] + (kernel[i] - 1) * dilations[i] + 1 - want;
      if (total < 0) {
        // A larger requested size grows the output at the end.
        outPad[i] += -total;
        total = 0;
      }
      bool upper = autoPad != "SAME_LOWER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[spatial + i] = total - pads[i];
    }
  } else if (autoPad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  return single(create<ConvTransposeOp>(c, c.input(0), c.input(1), c.input(2), c.intAttr("group", 1),
                                        pads, strides, dilations, outPad, StringAttr(), DenseI64ArrayAttr()));
}

template <typename OpTy> Results importPool(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel)
    return c.fail("kernel_shape is required");
  auto w = windowAttrs(c, c.input(0), *kernel);
  if (failed(w))
    return failure();
  // MaxPool's Indices output (storage_order says how they are numbered).
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) {
    if (w->runTimeAutoPad)
      return c.fail("Indices with auto_pad " + w->runTimeAutoPad.getValue() + " need static spatial sizes");
    if constexpr (std::is_same_v<OpTy, MaxPoolOp>) {
      auto op = createOperation<MaxPoolWithIndicesOp, 2>(c, c.input(0), w->kernel, w->pads, w->strides,
                                                         w->dilations, c.intAttr("ceil_mode", 0),
                                                         c.intAttr("storage_order", 0));
      if (failed(op))
        return failure();
      return SmallVector<Value>((*op)->getResults());
    }
  }
  if constexpr (std::is_same_v<OpTy, MaxPoolOp>)
    return single(create<MaxPoolOp>(c, c.input(0), w->kernel, w->pads,
                                    w->strides, w->dilations,
                                    c.intAttr("ceil_mode", 0), w->runTimeAutoPad));
  else
    return single(create<AveragePoolOp>(c, c.input(0), w->kernel, w->pads,
                                        w->strides, w->dilations,
                                        c.intAttr("ceil_mode", 0),
                                        c.intAttr("count_include_pad", 0), w->runTimeAutoPad));
}

Results importGemm(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<GemmOp>(c, c.input(0), c.input(1), c.input(2),
                               c.b.getF32FloatAttr(c.floatAttr("alpha", 1.0f)),
                               c.b.getF32FloatAttr(c.floatAttr("beta", 1.0f)),
                               c.b.getI64IntegerAttr(c.intAttr("transA", 0)),
                               c.b.getI64IntegerAttr(c.intAttr("transB", 0))));
}

FailureOr<Value> alongAxis(NodeContext &c, Value v, int64_t rank, int64_t axis);

// BatchNormalization with training_mode=1 normalizes with the batch's own
// statistics (mean and population variance over every axis but the
// channels) and returns the running statistics moved towards them:
// running = input * momentum + batch * (1 - momentum).
Results importBatchNormTraining(NodeContext &c) {
  Value x = c.input(0), scale = c.input(1), bias = c.input(2), inMean = c.input(3), inVar = c.input(4);
  auto xt = cast<RankedTensorType>(x.getType());
  Type ft = xt.getElementType();
  int64_t rank = xt.getRank();
  if (!isa<FloatType>(ft) || rank < 2)
    return c.fail("training mode needs a float input of rank >= 2");
  for (Value v : {scale, bias, inMean, inVar}) {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getRank() != 1 || vt.getElementType() != ft)
      return c.fail("scale, B, mean and var must be 1-D tensors of the input's type");
  }
  SmallVector<int64_t> axes{0};
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  auto scalar = RankedTensorType::get({}, ft);
  auto cst = [&](double v) -> Value {
    return ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(scalar, FloatAttr::get(ft, v).getValue()));
  };
  double momentum = c.floatAttr("momentum", 0.9f);
  auto mean = create<ReduceMeanOp>(c, x, axes, (int64_t)1);
  if (failed(mean))
    return failure();
  auto d = create<SubOp>(c, x, *mean);
  if (failed(d))
    return failure();
  auto sq = create<MulOp>(c, *d, *d);
  if (failed(sq))
    return failure();
  auto var = create<ReduceMeanOp>(c, *sq, axes, (int64_t)1);
  if (failed(var))
    return failure();
  auto ve = create<AddOp>(c, *var, cst(c.floatAttr("epsilon", 1e-5f)));
  if (failed(ve))
    return failure();
  auto sd = create<SqrtOp>(c, *ve);
  if (failed(sd))
    return failure();
  auto norm = create<DivOp>(c, *d, *sd);
  auto s = alongAxis(c, scale, rank, 1), b = alongAxis(c, bias, rank, 1);
  if (failed(norm) || failed(s) || failed(b))
    return failure();
  auto y = create<MulOp>(c, *norm, *s);
  if (failed(y))
    return failure();
  y = create<AddOp>(c, *y, *b);
  if (failed(y))
    return failure();
  SmallVector<Value> results{*y};
  for (auto [batch, running] : {std::pair{*mean, inMean}, std::pair{*var, inVar}}) {
    if (results.size() >= (size_t)c.node.output_size() || c.node.output(results.size()).empty())
      break;
    // [1, C, 1...] -> [C]: the reduced axes squeezed (works for a symbolic C).
    auto flat = create<SqueezeOp>(c, batch, axes);
    if (failed(flat))
      return failure();
    auto kept = create<MulOp>(c, running, cst(momentum));
    auto moved = create<MulOp>(c, *flat, cst(1.0 - momentum));
    if (failed(kept) || failed(moved))
      return failure();
    auto r = create<AddOp>(c, *kept, *moved);
    if (failed(r))
      return failure();
    results.push_back(*r);
  }
  for (int i = (int)results.size(); i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("only Y, running_mean and running_var are supported");
  return results;
}

Results importBatchNorm(NodeContext &c) {
  if (failed(require(c, 5)))
    return failure();
  if (c.intAttr("training_mode", 0) != 0)
    return importBatchNormTraining(c);
  for (int i = 1; i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("training outputs (running mean/var) are not supported");
  return single(create<BatchNormOp>(c, c.input(0), c.input(1), c.input(2),
                                    c.input(3), c.input(4),
                                    c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f))));
}

/// Gelu (opset 20): approximate "none" (erf) or "tanh".
Results importGelu(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  std::string approximate = c.stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return c.fail("Gelu approximate '" + approximate + "' is not \"none\" or \"tanh\"");
  return single(create<GeluOp>(c, c.input(0), c.b.getStringAttr(approximate)));
}

/// RMSNormalization (opset 23): the mean square over the axes from `axis` on.
Results importRmsNorm(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.intAttr("stash_type", 1) != 1)
    return c.fail("stash_type other than float is not supported");
  return single(create<RmsNormOp>(c, c.input(0), c.input(1), c.b.getI64IntegerAttr(c.intAttr("axis", -1)),
                                  c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f))));
}

Results importLayerNorm(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.intAttr("stash_type", 1) != 1)
    return c.fail("stash_type other than float is not supported");
  auto y = createOperation<LayerNormOp, 3>(c, c.input(0), c.input(1), c.input(2),
                                           c.b.getI64IntegerAttr(c.intAttr("axis", -1)),
                                           c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f)));
  if (failed(y))
    return failure();
  Operation *op = *y;
  return SmallVector<Value>(op->getResults().begin(), op->getResults().end());
}

/// Softmax and LogSoftmax: before opset 13 they worked on the input
/// flattened to 2-D at `axis`.
template <typename OpTy> Results importSoftmaxLike(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  int64_t rank = rankOf(x);
  if (c.opset >= 13)
    return single(create<OpTy>(c, x, c.intAttr("axis", -1)));
  int64_t axis = c.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis == rank - 1)
    return single(create<OpTy>(c, x, (int64_t)-1));
  auto flat = create<FlattenOp>(c, x, axis);
  if (failed(flat))
    return failure();
  auto sm = create<OpTy>(c, *flat, (int64_t)1);
  if (failed(sm))
    return failure();
  auto shape = create<ShapeOp>(c, x, (int64_t)0, IntegerAttr());
  if (failed(shape))
    return failure();
  return single(create<ReshapeOp>(c, *sm, *shape, (int64_t)0));
}

/// Reduce axes come from the `axes` attribute (older opsets) or input 1.
template <typename OpTy> NodeImporter reduce(int64_t axesInputSince, const char *kind) {
  return [axesInputSince, kind](NodeContext &c) -> Results {
    if (failed(require(c, 1)))
      return failure();
    SmallVector<int64_t> axes;
    if (c.opset >= axesInputSince) {
      auto axesType = c.input(1) ? dyn_cast<RankedTensorType>(c.input(1).getType()) : RankedTensorType();
      if (axesType && axesType.hasStaticShape() && axesType.getNumElements() == 0) {
        // An empty axes tensor needs no values: its length alone says "default axes".
      } else if (isRuntime(c.input(1))) {
        if (failed(runtimeLength(c, c.input(1), "axes", /*needInt64=*/true)))
          return failure();
        return single(create<DynamicReduceOp>(c, c.input(0), c.input(1), StringRef(kind),
                                              c.intAttr("keepdims", 1)));
      } else if (c.input(1)) {
        auto v = c.constantInts(c.input(1), "axes");
        if (failed(v))
          return failure();
        axes = *v;
      }
    } else if (auto a = c.intsAttr("axes")) {
      axes = *a;
    }
    if (axes.empty() && c.intAttr("noop_with_empty_axes", 0))
      return SmallVector<Value>{c.input(0)};
    return single(create<OpTy>(c, c.input(0), axes, c.intAttr("keepdims", 1)));
  };
}

Results importConstant(NodeContext &c) {
  if (const auto *a = c.attr("value")) {
    auto attr = importTensor(c.b.getContext(), a->t(), c.source, c.error);
    if (failed(attr))
      return c.fail(c.error);
    return single(create<ConstantOp>(c, *attr));
  }
  auto scalarOrList = [&](Type et, auto values, bool scalar) -> Results {
    SmallVector<int64_t> shape;
    if (!scalar)
      shape.push_back(values.size());
    auto type = RankedTensorType::get(shape, et);
    if constexpr (std::is_same_v<typename decltype(values)::value_type, float>)
      return single(create<ConstantOp>(c, DenseElementsAttr::get(type, ArrayRef<float>(values))));
    else
      return single(create<ConstantOp>(c, DenseElementsAttr::get(type, ArrayRef<int64_t>(values))));
  };
  if (const auto *a = c.attr("value_float"))
    return scalarOrList(c.b.getF32Type(), SmallVector<float>{a->f()}, true);
  if (const auto *a = c.attr("value_floats"))
    return scalarOrList(c.b.getF32Type(),
                        SmallVector<float>(a->floats().begin(), a->floats().end()), false);
  if (const auto *a = c.attr("value_int"))
    return scalarOrList(c.b.getI64Type(), SmallVector<int64_t>{a->i()}, true);
  if (const auto *a = c.attr("value_ints"))
    return scalarOrList(c.b.getI64Type(),
                        SmallVector<int64_t>(a->ints().begin(), a->ints().end()), false);
  return c.fail("only value, value_float(s) and value_int(s) are supported");
}

Results importReshape(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value shape = c.input(1);
  if (c.opset < 5) {
    auto s = c.intsAttr("shape");
    if (!s)
      return c.fail("shape attribute is required");
    shape = c.i64Constant(*s);
  }
  if (!shape)
    return c.fail("missing shape input");
  auto st = cast<RankedTensorType>(shape.getType());
  if (st.getRank() != 1 || !st.getElementType().isInteger(64) || st.isDynamicDim(0))
    return c.fail("shape must be a 1-D int64 tensor of static length");
  return single(create<ReshapeOp>(c, c.input(0), shape, c.intAttr("allowzero", 0)));
}

Results importTranspose(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t rank = rankOf(c.input(0));
  SmallVector<int64_t> perm;
  if (auto p = c.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  return single(create<TransposeOp>(c, c.input(0), perm));
}

Results importConcat(NodeContext &c) {
  SmallVector<Value> inputs;
  for (Value v : c.inputs)
    if (v)
      inputs.push_back(v);
  if (inputs.empty())
    return c.fail("needs at least one input");
  if (!c.attr("axis"))
    return c.fail("axis is required");
  return single(create<ConcatOp>(c, inputs, c.intAttr("axis", 0)));
}

Results importSlice(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t rank = rankOf(c.input(0));
  SmallVector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.intsAttr("starts").value_or(SmallVector<int64_t>{});
    ends = c.intsAttr("ends").value_or(SmallVector<int64_t>{});
    axes = c.intsAttr("axes").value_or(SmallVector<int64_t>{});
  } else {
    if (failed(require(c, 3)))
      return failure();
    if (isRuntime(c.input(3)) || isRuntime(c.input(4))) {
      // Computed axes or steps: which axes are sliced, and in which
      // direction, is only known at run time.
      auto n = runtimeLength(c, c.input(1), "starts");
      if (failed(n))
        return failure();
      SmallVector<int64_t> defaultAxes, ones(*n, 1);
      for (int64_t i = 0; i < *n; ++i)
        defaultAxes.push_back(i);
      Value axes = c.input(3) ? c.input(3) : c.i64Constant(defaultAxes);
      Value steps = c.input(4) ? c.input(4) : c.i64Constant(ones);
      return single(create<DynamicStridedSliceOp>(c, c.input(0), c.input(1), c.input(2), axes, steps));
    }
    DenseIntElementsAttr sAttr, eAttr;
    if (!matchPattern(c.input(1), m_Constant(&sAttr)) || !matchPattern(c.input(2), m_Constant(&eAttr))) {
      // Starts/ends computed at run time: axes and steps must still be known.
      int64_t n = cast<RankedTensorType>(c.input(1).getType()).getDimSize(0);
      if (n == ShapedType::kDynamic)
        return c.fail("starts must have a static length");
      SmallVector<int64_t> dynAxes, dynSteps(n, 1);
      if (c.input(3)) {
        auto a = c.constantInts(c.input(3), "axes");
        if (failed(a))
          return failure();
        dynAxes = *a;
      } else {
        for (int64_t i = 0; i < n; ++i)
          dynAxes.push_back(i);
      }
      if (c.input(4)) {
        auto st = c.constantInts(c.input(4), "steps");
        if (failed(st))
          return failure();
        dynSteps = *st;
      }
      return single(create<DynamicSliceOp>(c, c.input(0), c.input(1), c.input(2), dynAxes, dynSteps));
    }
    auto s = c.constantInts(c.input(1), "starts");
    auto e = c.constantInts(c.input(2), "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (c.input(3)) {
      auto a = c.constantInts(c.input(3), "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (c.input(4)) {
      auto st = c.constantInts(c.input(4), "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  (void)rank;
  return single(create<SliceOp>(c, c.input(0), starts, ends, axes, steps));
}

/// Squeeze/Unsqueeze axes: attribute before opset 13, input from 13.
FailureOr<SmallVector<int64_t>> axesOf(NodeContext &c, bool required) {
  if (c.opset < 13) {
    if (auto a = c.intsAttr("axes"))
      return *a;
  } else if (c.input(1)) {
    return c.constantInts(c.input(1), "axes");
  }
  if (required) {
    (void)c.fail("axes are required");
    return failure();
  }
  return SmallVector<int64_t>{};
}

Results importSqueeze(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  if (c.opset >= 13 && isRuntime(c.input(1))) {
    if (failed(runtimeLength(c, c.input(1), "axes")))
      return failure();
    return single(create<DynamicSqueezeOp>(c, c.input(0), c.input(1)));
  }
  auto axes = axesOf(c, false);
  if (failed(axes))
    return failure();
  return single(create<SqueezeOp>(c, c.input(0), *axes));
}

Results importUnsqueeze(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  if (c.opset >= 13 && isRuntime(c.input(1))) {
    if (failed(runtimeLength(c, c.input(1), "axes")))
      return failure();
    return single(create<DynamicUnsqueezeOp>(c, c.input(0), c.input(1)));
  }
  auto axes = axesOf(c, true);
  if (failed(axes))
    return failure();
  return single(create<UnsqueezeOp>(c, c.input(0), *axes));
}

Results importShape(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  IntegerAttr end;
  if (const auto *a = c.attr("end"))
    end = c.b.getI64IntegerAttr(a->i());
  return single(create<ShapeOp>(c, c.input(0), c.intAttr("start", 0), end));
}

Results importCast(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t to = c.intAttr("to", 0);
  Type et = onnxElementType(c.b.getContext(), to);
  if (!et)
    return c.fail("unsupported target type " + Twine(to));
  if (isStringType(et) || isStringType(c.input(0).getType()))
    return importStringCast(c, c.input(0), et);
  return single(create<CastOp>(c, c.input(0), et));
}

/// Dropout whose training_mode is true or computed: graph.dropout.
Results importTrainingDropout(NodeContext &c) {
  Value x = c.input(0);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  if (!isa<FloatType>(et))
    return c.fail("dropout needs a floating-point input");
  Value ratio = c.input(1);
  if (!ratio) {
    auto half = create<ConstantOp>(c, DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                             c.b.getFloatAttr(et, 0.5)));
    if (failed(half))
      return failure();
    ratio = *half;
  }
  auto op = createOperation<DropoutOp, 2>(c, x, ratio, c.input(2), c.intAttr("seed", 0));
  if (failed(op))
    return failure();
  SmallVector<Value> results{(*op)->getResult(0)};
  if (c.node.output_size() == 2)
    results.push_back((*op)->getResult(1));
  return results;
}

Results importIdentityLike(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  // Dropout is the identity only at inference: training_mode must be absent,
  // or a constant false.
  if (c.node.op_type() == "Dropout" && c.input(2)) {
    DenseIntElementsAttr training;
    bool off = matchPattern(c.input(2), m_Constant(&training)) &&
               (training.empty() || (*training.getValues<APInt>().begin()).isZero());
    if (!off)
      return importTrainingDropout(c);
  }
  if (c.node.op_type() == "Dropout" && c.intAttr("is_test", 1) == 0 && c.opset < 7)
    return c.fail("is_test=0 (random dropout) is not supported");
  auto y = create<IdentityOp>(c, c.input(0));
  if (failed(y))
    return failure();
  SmallVector<Value> results{*y};
  // Dropout's mask (opset 12+: bool) keeps every element at inference: all
  // true, in the input's shape (a constant once the shape folds).
  if (c.node.op_type() == "Dropout" && c.opset >= 12 && c.node.output_size() == 2 &&
      !c.node.output(1).empty()) {
    auto shape = create<ShapeOp>(c, c.input(0), (int64_t)0, IntegerAttr());
    if (failed(shape))
      return failure();
    auto one = DenseElementsAttr::get(RankedTensorType::get({1}, c.b.getI1Type()), true);
    auto mask = create<ConstantOfShapeOp>(c, *shape, one);
    if (failed(mask))
      return failure();
    results.push_back(*mask);
  }
  for (int i = (int)results.size(); i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("only the first output is supported");
  return results;
}

Results importGather(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<GatherOp>(c, c.input(0), c.input(1), c.intAttr("axis", 0)));
}

Results importFlatten(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<FlattenOp>(c, c.input(0), c.intAttr("axis", 1)));
}

Results importMatMul(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<MatMulOp>(c, c.input(0), c.input(1)));
}

// GlobalMaxPool is ReduceMax over the spatial axes, kept as size 1: the
// reduction's lowering (compare+select, dynamic dims) serves it unchanged.
Results importGlobalMaxPool(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t rank = rankOf(c.input(0));
  if (rank < 3)
    return c.fail("input must be N x C x spatial dims (rank >= 3)");
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  return single(create<ReduceMaxOp>(c, c.input(0), axes, (int64_t)1));
}

// EyeLike depends on its input's shape only: with a static shape it is a
// constant (ones where col - row == k), built here once.
Results importEyeLike(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  auto xt = cast<RankedTensorType>(c.input(0).getType());
  if (xt.getRank() != 2)
    return c.fail("input must be a 2-D tensor");
  Type et = xt.getElementType();
  if (c.attr("dtype")) {
    int64_t dtype = c.intAttr("dtype", 0);
    et = onnxElementType(c.b.getContext(), dtype);
    if (!et)
      return c.fail("unsupported dtype " + Twine(dtype));
  }
  if (!et.isIntOrFloat())
    return c.fail("unsupported element type");
  if (!xt.hasStaticShape()) {
    // A run-time shape: row index + k == column index, compared over ranges.
    Type i64 = c.b.getI64Type();
    Emitter e{c, i64};
    Value shape = e.op<ShapeOp>(c.input(0), (int64_t)0, IntegerAttr());
    Value zero = scalarConstant(c, i64, 0), one = scalarConstant(c, i64, 1);
    Value rows = e.op<RangeOp>(zero, e.pick(shape, 0, 0), one);
    Value cols = e.op<RangeOp>(zero, e.pick(shape, 0, 1), one);
    Value shifted = e.add(e.unsqueeze(rows, {1}), scalarConstant(c, i64, (double)c.intAttr("k", 0)));
    Value diagonal = e.op<EqualOp>(shifted, e.unsqueeze(cols, {0}));
    Value y = e.op<CastOp>(diagonal, et);
    if (!e.ok)
      return failure();
    return single(y);
  }
  int64_t rows = xt.getDimSize(0), cols = xt.getDimSize(1), k = c.intAttr("k", 0);
  auto type = RankedTensorType::get({rows, cols}, et);
  DenseElementsAttr value;
  if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> v(rows * cols, APFloat::getZero(ft.getFloatSemantics()));
    for (int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols)
        v[r * cols + r + k] = APFloat::getOne(ft.getFloatSemantics());
    value = DenseElementsAttr::get(type, v);
  } else {
    unsigned width = et.getIntOrFloatBitWidth();
    SmallVector<APInt> v(rows * cols, APInt(width, 0));
    for (int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols)
        v[r * cols + r + k] = APInt(width, 1);
    value = DenseElementsAttr::get(type, v);
  }
  return single(create<ConstantOp>(c, value));
}

//===----------------------------------------------------------------------===//
// Quantized ops. kiln's tensors keep no signedness (int8 and uint8 are both
// signless i8), so each quantized importer asks the model which one a tensor
// is, widens it with that sign (to float or i32), computes in the wide type,
// and narrows the result through one saturating cast.
//===----------------------------------------------------------------------===//

/// Ops whose output has their first input's element type (layout and
/// selection): followed when tracing where an 8-bit tensor's type comes from.
bool keepsInputType(StringRef op) {
  static const llvm::StringSet<> ops = {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                        "Flatten",  "Slice",   "Gather",    "Concat",  "Expand",
                                        "Tile",     "Split",   "Pad",       "MaxPool", "Dropout"};
  return ops.contains(op);
}

int32_t onnxTypeOf(const onnx::GraphProto &g, const std::string &name, int depth);

/// The ONNX element type that node `n` gives its output `k` when the op
/// fixes it (or passes its input's on), else 0.
int32_t producedOnnxType(const onnx::GraphProto &g, const onnx::NodeProto &n, int k, int depth) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return 0;
  const std::string &op = n.op_type();
  auto inputType = [&](int i) {
    return i < n.input_size() && !n.input(i).empty() ? onnxTypeOf(g, n.input(i), depth + 1) : 0;
  };
  for (const auto &a : n.attribute()) {
    if (op == "Constant" && a.name() == "value" && a.has_t())
      return a.t().data_type();
    if ((op == "Cast" && a.name() == "to") || (op == "QuantizeLinear" && a.name() == "output_dtype" && a.i()))
      return int32_t(a.i());
  }
  if (op == "QuantizeLinear")
    return n.input_size() > 2 && !n.input(2).empty() ? inputType(2) : onnx::TensorProto::UINT8;
  if (op == "DynamicQuantizeLinear")
    return k == 1 ? onnx::TensorProto::FLOAT : onnx::TensorProto::UINT8;
  if (op == "QLinearMatMul" || op == "QLinearConv") {
    int32_t t = inputType(7); // y_zero_point, else the input's (as ONNX's reference)
    return t ? t : inputType(0);
  }
  if (op == "MatMulInteger" || op == "ConvInteger")
    return onnx::TensorProto::INT32;
  return keepsInputType(op) ? inputType(0) : 0;
}

/// The element type of the main graph's value `name` as declared (initializer,
/// graph input/output, value_info) or as fixed by its producer, or 0.
int32_t onnxTypeOf(const onnx::GraphProto &g, const std::string &name, int depth) {
  if (depth > 32) // a cycle or a pathological chain: give up, as undeclared
    return 0;
  for (const auto &t : g.initializer())
    if (t.name() == name)
      return t.data_type();
  for (const auto *list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto &v : *list)
      if (v.name() == name && v.type().has_tensor_type())
        return v.type().tensor_type().elem_type();
  for (const auto &n : g.node())
    for (int k = 0; k < n.output_size(); ++k)
      if (n.output(k) == name)
        return producedOnnxType(g, n, k, depth);
  return 0;
}

/// The ONNX element type of the node's input `i` as the model declares it,
/// or 0 when not declared. kiln's tensors keep no signedness, so ops whose
/// meaning depends on it ask here.
int32_t declaredOnnxType(NodeContext &c, size_t i) {
  if ((int)i >= c.node.input_size() || c.node.input(i).empty())
    return 0;
  return onnxTypeOf(c.source.model.graph(), c.node.input(i), 0);
}

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// Whether the 8-bit quantized input `i` is uint8 (else int8); its zero
/// point `zp` (same type by the spec) answers when `i`'s type is undeclared.
/// Anything else, or a type nobody declares, is an error: guessing a sign
/// would give wrong numbers silently.
FailureOr<bool> isUint8(NodeContext &c, size_t i, size_t zp, StringRef what) {
  int32_t t = declaredOnnxType(c, i);
  if (!t && c.input(zp))
    t = declaredOnnxType(c, zp);
  bool byte = elementTypeOf(c.input(i)).isInteger(8);
  if (byte && t == onnx::TensorProto::UINT8)
    return true;
  if (byte && t == onnx::TensorProto::INT8)
    return false;
  if (byte && !t)
    (void)c.fail("cannot tell whether " + what + " is int8 or uint8 (declare its type in the model)");
  else
    (void)c.fail(what + " must be int8 or uint8 (ONNX type " + Twine(t) + " is not supported)");
  return failure();
}

/// Quantized values widened to `t` (float or i32). Signless i8 widens as
/// signed, so a uint8 tensor gets 256 added where that came out negative.
FailureOr<Value> widenQuantized(NodeContext &c, Value v, Type t, bool isUnsigned) {
  auto w = create<CastOp>(c, v, t);
  if (failed(w) || !isUnsigned)
    return w;
  auto negative = create<LessOp>(c, *w, scalarConstant(c, t, 0));
  auto shifted = create<AddOp>(c, *w, scalarConstant(c, t, 256));
  if (failed(negative) || failed(shifted))
    return failure();
  return create<WhereOp>(c, *negative, *shifted, *w);
}

/// Integral floats saturated to the int8 or uint8 range, stored as i8
/// through i32 (whose low byte is the uint8 bit pattern too: a direct
/// float -> i8 conversion of 200 would overflow).
FailureOr<Value> saturateToQuantized(NodeContext &c, Value q, bool isUnsigned) {
  Type ft = elementTypeOf(q);
  auto y = create<ClipOp>(c, q, scalarConstant(c, ft, isUnsigned ? 0 : -128),
                          scalarConstant(c, ft, isUnsigned ? 255 : 127));
  if (succeeded(y))
    y = create<CastOp>(c, *y, c.b.getI32Type());
  if (failed(y))
    return failure();
  return create<CastOp>(c, *y, c.b.getIntegerType(8));
}

/// saturate(round_half_even(x / scale) + zero_point), with `scale` and the
/// float `zeroPoint` (or null) already broadcastable against x.
FailureOr<Value> quantizeFloat(NodeContext &c, Value x, Value scale, Value zeroPoint, bool isUnsigned) {
  auto q = create<DivOp>(c, x, scale);
  if (succeeded(q))
    q = create<RoundOp>(c, *q);
  if (succeeded(q) && zeroPoint)
    q = create<AddOp>(c, *q, zeroPoint);
  if (failed(q))
    return failure();
  return saturateToQuantized(c, *q, isUnsigned);
}

/// A per-axis scale or zero point (1-D, one entry per channel of `axis`)
/// reshaped to broadcast against a rank-`rank` tensor; per-tensor ones unchanged.
FailureOr<Value> alongAxis(NodeContext &c, Value v, int64_t rank, int64_t axis) {
  auto vt = cast<RankedTensorType>(v.getType());
  if (vt.getRank() == 0 || (vt.getRank() == 1 && vt.getDimSize(0) == 1 && rank != 1))
    return v;
  if (vt.getRank() != 1)
    return c.fail("scale and zero point must be scalars or 1-D (blocked quantization is not supported)");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return c.fail("axis out of range");
  // Unit dims around the channel axis (an unsqueeze, so a symbolic channel
  // count works too).
  SmallVector<int64_t> unitAxes;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      unitAxes.push_back(i);
  if (unitAxes.empty())
    return v;
  return create<UnsqueezeOp>(c, v, unitAxes);
}

/// How a quantization parameter (scale or zero point) maps onto its tensor.
enum class QuantParam {
  AsGiven,    // numpy broadcasting: per tensor, or the matmul rhs's per column
  PerRow,     // matmul lhs: 1-D [M] applies along rows
  PerTensor,  // a single value only
  PerChannel, // conv weight: 1-D [M] along the output channels (axis 0)
};

/// Quantization parameter input `i` shaped to broadcast against its tensor
/// of rank `rank`; null when the node omits it.
FailureOr<Value> quantParam(NodeContext &c, size_t i, QuantParam how, int64_t rank, StringRef what) {
  Value v = c.input(i);
  if (!v)
    return Value();
  auto vt = cast<RankedTensorType>(v.getType());
  bool single = vt.hasStaticShape() && vt.getNumElements() == 1;
  if (how == QuantParam::PerTensor && !single)
    return c.fail(what + " must have a single value (per tensor)");
  if (how == QuantParam::PerChannel)
    return alongAxis(c, v, rank, 0);
  if (how != QuantParam::PerRow || vt.getRank() != 1 || single)
    return v;
  if (rank < 2)
    return c.fail(what + ": per-row quantization needs a matrix operand");
  return create<UnsqueezeOp>(c, v, SmallVector<int64_t>{1});
}

/// Quantized input `i` minus its zero point input `zp` (when present), in i32.
FailureOr<Value> centeredInt32(NodeContext &c, size_t i, size_t zp, QuantParam how, StringRef what) {
  Value x = c.input(i);
  auto isUnsigned = isUint8(c, i, zp, what);
  if (failed(isUnsigned))
    return failure();
  if (c.input(zp) && !elementTypeOf(c.input(zp)).isInteger(8))
    return c.fail("the zero point of " + what + " must have its type");
  auto z = quantParam(c, zp, how, rankOf(x), (what + "'s zero point").str());
  auto xi = widenQuantized(c, x, c.b.getI32Type(), *isUnsigned);
  if (failed(z))
    return failure();
  if (failed(xi) || !*z)
    return xi;
  auto zi = widenQuantized(c, *z, c.b.getI32Type(), *isUnsigned);
  if (failed(zi))
    return failure();
  return create<SubOp>(c, *xi, *zi);
}

/// a_scale * b_scale / y_scale (the order ONNX's reference multiplies in),
/// each already shaped; all of one float type.
FailureOr<Value> combinedScale(NodeContext &c, Value a, Value b, Value y) {
  Type ft = elementTypeOf(a);
  if (!isa<FloatType>(ft) || elementTypeOf(b) != ft || elementTypeOf(y) != ft)
    return c.fail("scales must be float tensors of one type");
  auto s = create<MulOp>(c, a, b);
  if (failed(s))
    return failure();
  return create<DivOp>(c, *s, y);
}

/// QLinear* output: saturate(round_half_even(acc * scale + y_zero_point)).
/// In f64 like ONNX's reference (numpy promotes the int32 accumulator times
/// a float32 scale to float64): the product is exact there, so halfway
/// cases round as the exact value does.
FailureOr<Value> requantize(NodeContext &c, Value acc, Value scale, Value yZeroPoint, bool isUnsigned) {
  Type f64 = c.b.getF64Type();
  auto accF = create<CastOp>(c, acc, f64);
  auto s = create<CastOp>(c, scale, f64);
  if (failed(accF) || failed(s))
    return failure();
  auto y = create<MulOp>(c, *accF, *s);
  if (succeeded(y) && yZeroPoint) {
    auto z = widenQuantized(c, yZeroPoint, f64, isUnsigned);
    y = failed(z) ? z : create<AddOp>(c, *y, *z);
  }
  if (succeeded(y))
    y = create<RoundOp>(c, *y);
  if (failed(y))
    return failure();
  return saturateToQuantized(c, *y, isUnsigned);
}

/// Whether the QLinear* output (zero point input `yzp`) is uint8: by the
/// zero point's type, or the first input's when it is absent (as the reference).
FailureOr<bool> outputIsUint8(NodeContext &c, size_t yzp) {
  if (!c.input(yzp))
    return isUint8(c, 0, 0, "the output");
  return isUint8(c, yzp, yzp, "y_zero_point");
}

/// Fails naming the first of `indices` that the node omits.
LogicalResult requireInputs(NodeContext &c, std::initializer_list<size_t> indices) {
  for (size_t i : indices)
    if (!c.input(i))
      return c.fail("missing required input " + Twine(i));
  return success();
}

// DequantizeLinear: y = (x - zero_point) * scale, per tensor or per axis.
Results importDequantizeLinear(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.attr("block_size") && c.intAttr("block_size", 0) != 0)
    return c.fail("blocked quantization is not supported");
  Value x = c.input(0), scale = c.input(1), zp = c.input(2);
  Type ft = elementTypeOf(scale);
  if (!isa<FloatType>(ft))
    return c.fail("scale must be a float tensor");
  int64_t rank = rankOf(x), axis = c.intAttr("axis", 1);
  auto xf = widenQuantized(c, x, ft, declaredOnnxType(c, 0) == onnx::TensorProto::UINT8);
  auto s = alongAxis(c, scale, rank, axis);
  if (failed(xf) || failed(s))
    return failure();
  Value centered = *xf;
  if (zp) {
    auto zf = widenQuantized(c, zp, ft, declaredOnnxType(c, 2) == onnx::TensorProto::UINT8);
    if (failed(zf))
      return failure();
    auto z = alongAxis(c, *zf, rank, axis);
    if (failed(z))
      return failure();
    auto d = create<SubOp>(c, *xf, *z);
    if (failed(d))
      return failure();
    centered = *d;
  }
  return single(create<MulOp>(c, centered, *s));
}

// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point) into
// int8 or uint8 (uint8 when the zero point is absent).
Results importQuantizeLinear(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (c.attr("block_size") && c.intAttr("block_size", 0) != 0)
    return c.fail("blocked quantization is not supported");
  Value x = c.input(0), scale = c.input(1), zp = c.input(2);
  Type ft = elementTypeOf(x);
  if (!isa<FloatType>(ft) || elementTypeOf(scale) != ft)
    return c.fail("input and scale must be float tensors of one type");
  int32_t outType = zp ? declaredOnnxType(c, 2) : onnx::TensorProto::UINT8;
  if (zp && !elementTypeOf(zp).isInteger(8))
    return c.fail("only int8 and uint8 outputs are supported");
  if (outType != onnx::TensorProto::UINT8 && outType != onnx::TensorProto::INT8)
    return c.fail("only int8 and uint8 outputs are supported (zero point type unknown)");
  bool isUnsigned = outType == onnx::TensorProto::UINT8;
  int64_t rank = rankOf(x), axis = c.intAttr("axis", 1);
  auto s = alongAxis(c, scale, rank, axis);
  if (failed(s))
    return failure();
  Value z;
  if (zp) {
    auto zf = widenQuantized(c, zp, ft, isUnsigned);
    auto za = failed(zf) ? zf : alongAxis(c, *zf, rank, axis);
    if (failed(za))
      return failure();
    z = *za;
  }
  return single(quantizeFloat(c, x, *s, z, isUnsigned));
}

// DynamicQuantizeLinear: uint8 over x's own range widened to include 0:
// scale = (max - min) / 255 (1 when x is all zeros, as ONNX's reference),
// zero_point = round(clip(-min / scale, 0, 255)), y as QuantizeLinear.
Results importDynamicQuantizeLinear(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  Type ft = elementTypeOf(x);
  if (!isa<FloatType>(ft))
    return c.fail("input must be a float tensor");
  Value zero = scalarConstant(c, ft, 0), qmax = scalarConstant(c, ft, 255);
  auto flat = create<ReshapeOp>(c, x, c.i64Constant({-1}), (int64_t)0);
  if (failed(flat))
    return failure();
  auto lo = create<ReduceMinOp>(c, *flat, ArrayRef<int64_t>{0}, (int64_t)0);
  auto hi = create<ReduceMaxOp>(c, *flat, ArrayRef<int64_t>{0}, (int64_t)0);
  if (failed(lo) || failed(hi))
    return failure();
  lo = create<MinOp>(c, *lo, zero);
  hi = create<MaxOp>(c, *hi, zero);
  if (failed(lo) || failed(hi))
    return failure();
  auto range = create<SubOp>(c, *hi, *lo);
  auto allZero = create<EqualOp>(c, *hi, *lo);
  if (failed(range) || failed(allZero))
    return failure();
  auto scale = create<DivOp>(c, *range, qmax);
  if (succeeded(scale))
    scale = create<WhereOp>(c, *allZero, scalarConstant(c, ft, 1), *scale);
  if (failed(scale))
    return failure();
  auto zp = create<DivOp>(c, *lo, *scale);
  if (succeeded(zp))
    zp = create<SubOp>(c, zero, *zp);
  if (succeeded(zp))
    zp = create<ClipOp>(c, *zp, zero, qmax);
  if (succeeded(zp))
    zp = create<RoundOp>(c, *zp);
  if (failed(zp))
    return failure();
  auto y = quantizeFloat(c, x, *scale, *zp, /*isUnsigned=*/true);
  auto zq = saturateToQuantized(c, *zp, /*isUnsigned=*/true);
  if (failed(y) || failed(zq))
    return failure();
  return SmallVector<Value>{*y, *scale, *zq};
}

// MatMulInteger: (A - a_zero_point) x (B - b_zero_point) in int32; A's zero
// point per tensor or per row, B's per tensor or per column.
Results importMatMulInteger(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  auto a = centeredInt32(c, 0, 2, QuantParam::PerRow, "A");
  auto b = centeredInt32(c, 1, 3, QuantParam::AsGiven, "B");
  if (failed(a) || failed(b))
    return failure();
  return single(create<MatMulOp>(c, *a, *b));
}

// QLinearMatMul: the int32 product of the centered operands, requantized with
// a_scale * b_scale / y_scale (a's parameters per tensor or per row, b's per
// tensor or per column).
Results importQLinearMatMul(NodeContext &c) {
  if (failed(requireInputs(c, {0, 1, 3, 4, 6})))
    return failure();
  int64_t ra = rankOf(c.input(0)), rb = rankOf(c.input(3));
  auto a = centeredInt32(c, 0, 2, QuantParam::PerRow, "a");
  auto b = centeredInt32(c, 3, 5, QuantParam::AsGiven, "b");
  auto yUnsigned = outputIsUint8(c, 7);
  auto as = quantParam(c, 1, QuantParam::PerRow, ra, "a_scale");
  if (failed(a) || failed(b) || failed(yUnsigned) || failed(as))
    return failure();
  // A scale must factor out of the sum over k: a's cannot vary along its
  // columns, nor b's along its rows.
  auto ast = cast<RankedTensorType>((*as).getType()), bst = cast<RankedTensorType>(c.input(4).getType());
  if (ast.getRank() >= 2 && ast.getDimSize(ast.getRank() - 1) != 1)
    return c.fail("a_scale must be per tensor or per row");
  if (bst.getRank() >= 2 && bst.getDimSize(bst.getRank() - 2) != 1 && rb >= 2)
    return c.fail("b_scale must be per tensor or per column");
  auto acc = create<MatMulOp>(c, *a, *b);
  auto scale = combinedScale(c, *as, c.input(4), c.input(6));
  if (failed(acc) || failed(scale))
    return failure();
  return single(requantize(c, *acc, *scale, c.input(7), *yUnsigned));
}

// ConvInteger: Conv of (x - x_zero_point) and (w - w_zero_point) in int32,
// zero padded after centering (padding contributes nothing); x's zero point
// per tensor, w's per tensor or per output channel.
Results importConvInteger(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  auto x = centeredInt32(c, 0, 2, QuantParam::PerTensor, "x");
  auto w = centeredInt32(c, 1, 3, QuantParam::PerChannel, "w");
  if (failed(x) || failed(w))
    return failure();
  return single(convolution(c, *x, *w, Value()));
}

// QLinearConv: ConvInteger plus the int32 bias B (quantized with scale
// x_scale * w_scale, zero point 0), requantized with
// x_scale * w_scale / y_scale; w's parameters per tensor or per output channel.
Results importQLinearConv(NodeContext &c) {
  if (failed(requireInputs(c, {0, 1, 3, 4, 6})))
    return failure();
  int64_t rank = rankOf(c.input(0));
  Value bias = c.input(8);
  if (bias && !elementTypeOf(bias).isInteger(32))
    return c.fail("B must be an int32 tensor");
  auto x = centeredInt32(c, 0, 2, QuantParam::PerTensor, "x");
  auto w = centeredInt32(c, 3, 5, QuantParam::PerChannel, "w");
  auto yUnsigned = outputIsUint8(c, 7);
  auto xs = quantParam(c, 1, QuantParam::PerTensor, rank, "x_scale");
  auto ys = quantParam(c, 6, QuantParam::PerTensor, rank, "y_scale");
  auto yz = quantParam(c, 7, QuantParam::PerTensor, rank, "y_zero_point");
  // The weight's per-channel scale is per output channel: axis 1 of y.
  auto ws = alongAxis(c, c.input(4), rank, 1);
  if (failed(x) || failed(w) || failed(yUnsigned) || failed(xs) || failed(ys) || failed(yz) || failed(ws))
    return failure();
  auto acc = convolution(c, *x, *w, bias);
  auto scale = combinedScale(c, *xs, *ws, *ys);
  if (failed(acc) || failed(scale))
    return failure();
  return single(requantize(c, *acc, *scale, *yz, *yUnsigned));
}

Results importGlobalAveragePool(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<GlobalAveragePoolOp>(c, c.input(0)));
}

/// Activations with float parameters: (ONNX attribute, default) for alpha and beta.
template <typename OpTy>
NodeImporter activation(const char *alphaName, float alphaDefault, const char *betaName,
                        float betaDefault) {
  return [=](NodeContext &c) -> Results {
    if (failed(require(c, 1)))
      return failure();
    return single(create<OpTy>(c, c.input(0), c.b.getF32FloatAttr(c.floatAttr(alphaName, alphaDefault)),
                               c.b.getF32FloatAttr(c.floatAttr(betaName, betaDefault))));
  };
}

/// Max, Min, Sum, Mean: a chain of broadcasting binary ops over all inputs.
template <typename OpTy> NodeImporter variadic(bool mean = false) {
  return [=](NodeContext &c) -> Results {
    SmallVector<Value> inputs;
    for (Value v : c.inputs)
      if (v)
        inputs.push_back(v);
    if (inputs.empty())
      return c.fail("needs at least one input");
    Value acc = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) {
      auto next = create<OpTy>(c, acc, inputs[i]);
      if (failed(next))
        return failure();
      acc = *next;
    }
    if (mean && inputs.size() > 1) {
      Type et = cast<RankedTensorType>(acc.getType()).getElementType();
      auto ft = dyn_cast<FloatType>(et);
      if (!ft)
        return c.fail("Mean needs a floating-point type");
      auto n = create<ConstantOp>(c, DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                            c.b.getFloatAttr(ft, inputs.size())));
      if (failed(n))
        return failure();
      return single(create<DivOp>(c, acc, *n));
    }
    if (inputs.size() == 1)
      return single(create<IdentityOp>(c, acc));
    return SmallVector<Value>{acc};
  };
}

Results importClip(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  auto scalar = [&](Value given, bool isMin, StringRef attrName) -> FailureOr<Value> {
    if (given)
      return given;
    auto type = RankedTensorType::get({}, et);
    Attribute value;
    if (auto ft = dyn_cast<FloatType>(et)) {
      double d = c.opset < 11 && c.attr(attrName)
                     ? c.floatAttr(attrName, 0)
                     : (isMin ? -std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::infinity());
      value = DenseElementsAttr::get(type, c.b.getFloatAttr(ft, d));
    } else {
      auto it = cast<IntegerType>(et);
      APInt v = isMin ? APInt::getSignedMinValue(it.getWidth()) : APInt::getSignedMaxValue(it.getWidth());
      value = DenseElementsAttr::get(type, v);
    }
    return create<ConstantOp>(c, cast<ElementsAttr>(value));
  };
  auto lo = scalar(c.opset >= 11 ? c.input(1) : Value(), true, "min");
  auto hi = scalar(c.opset >= 11 ? c.input(2) : Value(), false, "max");
  if (failed(lo) || failed(hi))
    return failure();
  return single(create<ClipOp>(c, x, *lo, *hi));
}

Results importExpand(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  DenseElementsAttr constant;
  if (!matchPattern(c.input(1), m_Constant(&constant)))
    return single(create<DynamicExpandOp>(c, c.input(0), c.input(1)));
  auto shape = c.constantInts(c.input(1), "shape");
  if (failed(shape))
    return failure();
  return single(create<ExpandOp>(c, c.input(0), *shape));
}

Results importWhere(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  return single(create<WhereOp>(c, c.input(0), c.input(1), c.input(2)));
}

/// Pad with computed pads: given for the axes input's axes only (opset 18),
/// they are spread to every axis by a gather from the pads plus a 0.
Results importRuntimePad(NodeContext &c, StringRef mode) {
  Value x = c.input(0);
  int64_t rank = rankOf(x);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  Value pads = c.input(1);
  auto n = runtimeLength(c, pads, "pads", /*needInt64=*/true);
  if (failed(n))
    return failure();
  if (c.input(3)) {
    auto axes = c.constantInts(c.input(3), "axes");
    if (failed(axes))
      return failure();
    int64_t k = axes->size();
    if (*n != 2 * k)
      return c.fail("pads must hold two values per axis");
    SmallVector<int64_t> from(2 * rank, 2 * k);
    for (int64_t i = 0; i < k; ++i) {
      int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
      if (a < 0 || a >= rank)
        return c.fail("pad axis out of range");
      from[a] = i;
      from[rank + a] = k + i;
    }
    auto withZero = create<ConcatOp>(c, ValueRange{pads, c.i64Constant({0})}, (int64_t)0);
    if (failed(withZero))
      return failure();
    auto spread = create<GatherOp>(c, *withZero, c.i64Constant(from), (int64_t)0);
    if (failed(spread))
      return failure();
    pads = *spread;
  }
  Value value = c.input(2);
  if (!value)
    value = scalarConstant(c, et, 0);
  return single(create<DynamicPadOp>(c, x, pads, value, mode));
}

Results importPad(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  int64_t rank = rankOf(x);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  std::string mode = c.stringAttr("mode", "constant");
  SmallVector<int64_t> pads;
  Value value;
  if (c.opset < 11) {
    pads = c.intsAttr(c.opset < 2 ? "paddings" : "pads").value_or(SmallVector<int64_t>{});
    float v = c.floatAttr("value", 0.0f);
    auto ft = dyn_cast<FloatType>(et);
    if (!ft)
      return c.fail("pad before opset 11 needs a floating-point input");
    auto cst = create<ConstantOp>(c, DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                            c.b.getFloatAttr(ft, v)));
    if (failed(cst))
      return failure();
    value = *cst;
  } else if (isRuntime(c.input(1))) {
    return importRuntimePad(c, mode);
  } else {
    auto p = c.constantInts(c.input(1), "pads");
    if (failed(p))
      return failure();
    pads = *p;
    value = c.input(2);
    if (c.input(3)) {
      // Pads given for some axes only (opset 18): spread them out.
      auto axes = c.constantInts(c.input(3), "axes");
      if (failed(axes))
        return failure();
      SmallVector<int64_t> full(2 * rank, 0);
      int64_t n = axes->size();
      if ((int64_t)pads.size() != 2 * n)
        return c.fail("pads must hold two values per axis");
      for (int64_t i = 0; i < n; ++i) {
        int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
        if (a < 0 || a >= rank)
          return c.fail("pad axis out of range");
        full[a] = pads[i];
        full[rank + a] = pads[n + i];
      }
      pads = full;
    }
    if (!value)
      value = scalarConstant(c, et, 0);
  }
  return single(create<PadOp>(c, x, value, mode, pads));
}

template <typename OpTy> Results importArg(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<OpTy>(c, c.input(0), c.intAttr("axis", 0), c.intAttr("keepdims", 1),
                             c.intAttr("select_last_index", 0)));
}

Results importTrilu(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t k = 0;
  Value kValue;
  if (Value kIn = c.input(1)) {
    DenseIntElementsAttr kAttr;
    if (matchPattern(kIn, m_Constant(&kAttr))) {
      if (!kAttr.empty())
        k = (*kAttr.getValues<APInt>().begin()).getSExtValue();
    } else {
      // A computed offset only moves the mask, never the shape: read it at run time.
      kValue = kIn;
    }
  }
  return single(create<TriluOp>(c, c.input(0), kValue, c.intAttr("upper", 1), k));
}

Results importTile(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (isRuntime(c.input(1))) {
    if (failed(runtimeLength(c, c.input(1), "repeats", /*needInt64=*/true)))
      return failure();
    return single(create<DynamicTileOp>(c, c.input(0), c.input(1)));
  }
  auto repeats = c.constantInts(c.input(1), "repeats");
  if (failed(repeats))
    return failure();
  return single(create<TileOp>(c, c.input(0), *repeats));
}

/// Size: the element count as an i64 scalar (product of the shape).
Results importSize(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  auto shape = create<ShapeOp>(c, c.input(0), (int64_t)0, IntegerAttr());
  if (failed(shape))
    return failure();
  return single(create<ReduceProdOp>(c, *shape, SmallVector<int64_t>{0}, (int64_t)0));
}

Results importCastLike(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  Type et = cast<RankedTensorType>(c.input(1).getType()).getElementType();
  if (isStringType(et) || isStringType(c.input(0).getType()))
    return importStringCast(c, c.input(0), et);
  return single(create<CastOp>(c, c.input(0), et));
}

/// Split into the node's outputs along `axis`: sizes from the `split`
/// attribute/input, or equal parts.
/// ScatterElements, and Scatter (opsets 9-10: the same op without reduction).
Results importScatterElements(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  std::string reduction = c.opset >= 16 ? c.stringAttr("reduction", "none") : "none";
  return single(create<ScatterElementsOp>(c, c.input(0), c.input(1), c.input(2), c.intAttr("axis", 0),
                                          StringRef(reduction)));
}

Results importScatterND(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  std::string reduction = c.opset >= 16 ? c.stringAttr("reduction", "none") : "none";
  return single(create<ScatterNDOp>(c, c.input(0), c.input(1), c.input(2), StringRef(reduction)));
}

/// TopK: k is an attribute before opset 10, then a one-element input (static
/// when it is a constant); largest and sorted arrive in opset 11. Results
/// are always sorted, which an unsorted request also accepts.
Results importTopK(NodeContext &c) {
  if (failed(require(c, c.opset >= 10 ? 2 : 1)))
    return failure();
  Value k = c.opset >= 10 ? c.input(1) : c.i64Constant({c.intAttr("k", 0)});
  auto kt = cast<RankedTensorType>(k.getType());
  if (!kt.getElementType().isInteger(64))
    return c.fail("k must be int64");
  auto op = createOperation<TopKOp, 2>(c, c.input(0), k, c.intAttr("axis", -1), c.intAttr("largest", 1),
                                    c.intAttr("sorted", 1));
  if (failed(op))
    return failure();
  return SmallVector<Value>((*op)->getResults());
}

Results importEinsum(NodeContext &c) {
  if (c.inputs.empty() || llvm::is_contained(c.inputs, Value()))
    return c.fail("einsum needs its operands");
  if (!c.attr("equation"))
    return c.fail("missing attribute 'equation'");
  std::string equation = c.stringAttr("equation", "");
  return single(create<EinsumOp>(c, ValueRange(c.inputs), StringRef(equation)));
}

Results importSplit(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t axis = c.intAttr("axis", 0);
  if (axis < 0)
    axis += xt.getRank();
  if (axis < 0 || axis >= xt.getRank())
    return c.fail("axis out of range");
  int64_t outputs = c.node.output_size();
  SmallVector<int64_t> sizes;
  if (c.opset >= 13 && isRuntime(c.input(1))) {
    // Computed sizes: part i is [sum of sizes before i, that + size i),
    // a run-time slice (clamped, so sizes that do not add up stay in bounds).
    auto n = runtimeLength(c, c.input(1), "split");
    if (failed(n))
      return failure();
    if (*n != outputs)
      return c.fail("split has " + Twine(*n) + " sizes for " + Twine(outputs) + " outputs");
    auto ends = create<CumSumOp>(c, c.input(1), (int64_t)0, (int64_t)0, (int64_t)0);
    auto starts = create<CumSumOp>(c, c.input(1), (int64_t)0, (int64_t)1, (int64_t)0);
    if (failed(ends) || failed(starts))
      return failure();
    SmallVector<Value> results;
    for (int64_t i = 0; i < *n; ++i) {
      auto element = [&](Value t) {
        return create<SliceOp>(c, t, SmallVector<int64_t>{i}, SmallVector<int64_t>{i + 1},
                               SmallVector<int64_t>{0}, SmallVector<int64_t>{1});
      };
      auto s = element(*starts), e = element(*ends);
      if (failed(s) || failed(e))
        return failure();
      auto part = create<DynamicSliceOp>(c, x, *s, *e, SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
      if (failed(part))
        return failure();
      results.push_back(*part);
    }
    return results;
  }
  if (c.opset >= 13 && c.input(1)) {
    auto s = c.constantInts(c.input(1), "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = c.intsAttr("split")) {
    sizes = *s;
  }
  if (sizes.empty() && xt.isDynamicDim(axis)) {
    // An equal split of a run-time size: part i is [i * chunk, (i + 1) *
    // chunk) with chunk = ceil(size / parts), clamped by the run-time slice.
    int64_t parts = c.attr("num_outputs") ? c.intAttr("num_outputs", outputs) : outputs;
    if (parts <= 0)
      return c.fail("an equal split needs a positive number of parts");
    Emitter e{c, c.b.getI64Type()};
    Value size = e.op<ShapeOp>(x, axis, c.b.getI64IntegerAttr(axis + 1));
    Value chunk = e.op<DivOp>(e.add(size, c.i64Constant({parts - 1})), c.i64Constant({parts}));
    SmallVector<Value> results;
    Value start = c.i64Constant({0});
    for (int64_t i = 0; i < parts; ++i) {
      Value end = i == 0 ? chunk : e.mul(chunk, c.i64Constant({i + 1}));
      results.push_back(e.op<DynamicSliceOp>(x, start, end, SmallVector<int64_t>{axis}, SmallVector<int64_t>{1}));
      start = end;
    }
    if (!e.ok)
      return failure();
    return results;
  }
  if (sizes.empty()) {
    int64_t dim = xt.getDimSize(axis);
    int64_t parts = c.attr("num_outputs") ? c.intAttr("num_outputs", outputs) : outputs;
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  SmallVector<Value> results;
  int64_t start = 0;
  for (int64_t size : sizes) {
    auto part = create<SliceOp>(c, x, SmallVector<int64_t>{start}, SmallVector<int64_t>{start + size},
                                SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
    if (failed(part))
      return failure();
    results.push_back(*part);
    start += size;
  }
  return results;
}

/// Range: folded into a constant when start/limit/delta are, a graph.range otherwise.
Results importRange(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  // ONNX's bounds are scalars. Checked before anything reads them: an empty
  // constant has no value to fold (reading one crashed), and a longer one
  // would silently fold from its first element.
  static constexpr const char *kBounds[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    auto t = cast<RankedTensorType>(c.input(i).getType());
    if (t.getRank() != 0) {
      std::string shape;
      llvm::raw_string_ostream os(shape);
      llvm::interleaveComma(t.getShape(), os, [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      });
      return c.fail(Twine("input '") + kBounds[i] + "' must be a scalar (rank 0), got shape [" + shape + "]");
    }
  }
  Type et = cast<RankedTensorType>(c.input(0).getType()).getElementType();
  DenseElementsAttr s, l, d;
  if (!matchPattern(c.input(0), m_Constant(&s)) || !matchPattern(c.input(1), m_Constant(&l)) ||
      !matchPattern(c.input(2), m_Constant(&d))) {
    // Bounds known only at run time (sequence lengths in decoders).
    return single(create<RangeOp>(c, c.input(0), c.input(1), c.input(2)));
  }
  auto scalar = [](DenseElementsAttr a) {
    return isa<FloatType>(a.getElementType()) ? (*a.getValues<APFloat>().begin()).convertToDouble()
                                              : (double)(*a.getValues<APInt>().begin()).getSExtValue();
  };
  double start = scalar(s), limit = scalar(l), delta = scalar(d);
  if (delta == 0)
    return c.fail("delta must not be 0");
  // Bounded in double before the conversion: NaN, infinities and huge counts are refused, not
  // converted (which would be undefined).
  double count = std::ceil((limit - start) / delta);
  if (!std::isfinite(count) || count > double(int64_t(1) << 24))
    return c.fail("range from " + Twine(std::to_string(start)) + " to " + std::to_string(limit) +
                  " by " + std::to_string(delta) + " has too many elements to fold (or is not finite)");
  int64_t n = std::max<int64_t>(0, int64_t(count));
  auto type = RankedTensorType::get({n}, et);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < n; ++i) {
    double v = start + i * delta;
    values.push_back(isa<FloatType>(et) ? Attribute(c.b.getFloatAttr(et, v))
                                        : Attribute(c.b.getIntegerAttr(et, (int64_t)v)));
  }
  return single(create<ConstantOp>(c, DenseElementsAttr::get(type, values)));
}

/// DepthToSpace/SpaceToDepth as reshape -> transpose -> reshape (constant shapes when static).
Results importDepthSpace(NodeContext &c, bool toSpace) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return c.fail("needs a 4-D input");
  int64_t b = c.intAttr("blocksize", 0);
  if (b <= 0)
    return c.fail("blocksize must be positive");
  if (!xt.hasStaticShape()) {
    // Run-time sizes: the same reshapes with shapes computed from the
    // input's (0 copies N, and C for SpaceToDepth; -1 is the channels).
    Emitter e{c, c.b.getI64Type()};
    Value shape = e.op<ShapeOp>(x, (int64_t)0, IntegerAttr());
    Value h = e.slice(shape, 0, 2, 3), w = e.slice(shape, 0, 3, 4), block = c.i64Constant({b});
    SmallVector<Value> first, last;
    SmallVector<int64_t> perm;
    if (toSpace) {
      bool crd = c.stringAttr("mode", "DCR") == "CRD";
      first = {crd ? c.i64Constant({0, -1, b, b}) : c.i64Constant({0, b, b, -1}), h, w};
      perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3} : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
      last = {c.i64Constant({0, -1}), e.mul(h, block), e.mul(w, block)};
    } else {
      Value hb = e.op<DivOp>(h, block), wb = e.op<DivOp>(w, block);
      first = {c.i64Constant({0, 0}), hb, block, wb, block};
      perm = {0, 3, 5, 1, 2, 4};
      last = {c.i64Constant({0, -1}), hb, wb};
    }
    Value r1 = e.op<ReshapeOp>(x, e.concat(first, 0), (int64_t)0);
    Value t = e.transpose(r1, perm);
    Value y = e.op<ReshapeOp>(t, e.concat(last, 0), (int64_t)0);
    if (!e.ok)
      return failure();
    return single(y);
  }
  int64_t n = xt.getDimSize(0), ch = xt.getDimSize(1), h = xt.getDimSize(2), w = xt.getDimSize(3);
  SmallVector<int64_t> first, perm, last;
  if (toSpace) {
    if (ch % (b * b))
      return c.fail("channels not divisible by blocksize^2");
    bool crd = c.stringAttr("mode", "DCR") == "CRD";
    first = crd ? SmallVector<int64_t>{n, ch / (b * b), b, b, h, w} : SmallVector<int64_t>{n, b, b, ch / (b * b), h, w};
    perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3} : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
    last = {n, ch / (b * b), h * b, w * b};
  } else {
    if (h % b || w % b)
      return c.fail("spatial size not divisible by blocksize");
    first = {n, ch, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    last = {n, ch * b * b, h / b, w / b};
  }
  auto r1 = create<ReshapeOp>(c, x, c.i64Constant(first), (int64_t)0);
  if (failed(r1))
    return failure();
  auto t = create<TransposeOp>(c, *r1, perm);
  if (failed(t))
    return failure();
  return single(create<ReshapeOp>(c, *t, c.i64Constant(last), (int64_t)0));
}

} // namespace

const llvm::StringMap<NodeImporter> &nodeImporters() {
  static const llvm::StringMap<NodeImporter> table = [] {
    llvm::StringMap<NodeImporter> t;
    registerRecurrentImporters(t);
    t["Add"] = binary<AddOp>();
    t["Sub"] = binary<SubOp>();
    t["Mul"] = binary<MulOp>();
    t["Div"] = binary<DivOp>();
    t["Pow"] = binary<PowOp>();
    t["Sqrt"] = unary<SqrtOp>();
    t["Exp"] = unary<ExpOp>();
    t["Log"] = unary<LogOp>();
    t["Neg"] = unary<NegOp>();
    t["Abs"] = unary<AbsOp>();
    t["Reciprocal"] = unary<ReciprocalOp>();
    t["Floor"] = unary<FloorOp>();
    t["Ceil"] = unary<CeilOp>();
    t["Relu"] = unary<ReluOp>();
    t["Sigmoid"] = unary<SigmoidOp>();
    t["Tanh"] = unary<TanhOp>();
    t["Erf"] = unary<ErfOp>();
    t["Identity"] = importIdentityLike;
    t["Dropout"] = importIdentityLike;
    t["Cast"] = importCast;
    t["MatMul"] = importMatMul;
    t["Gemm"] = importGemm;
    t["Conv"] = importConv;
    t["MaxPool"] = importPool<MaxPoolOp>;
    t["AveragePool"] = importPool<AveragePoolOp>;
    t["GlobalAveragePool"] = importGlobalAveragePool;
    t["GlobalMaxPool"] = importGlobalMaxPool;
    t["EyeLike"] = importEyeLike;
    t["DequantizeLinear"] = importDequantizeLinear;
    t["QuantizeLinear"] = importQuantizeLinear;
    t["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
    t["MatMulInteger"] = importMatMulInteger;
    t["QLinearMatMul"] = importQLinearMatMul;
    t["ConvInteger"] = importConvInteger;
    t["QLinearConv"] = importQLinearConv;
    t["BatchNormalization"] = importBatchNorm;
    t["LayerNormalization"] = importLayerNorm;
    t["RMSNormalization"] = importRmsNorm;
    t["Gelu"] = importGelu;
    t["Softmax"] = importSoftmaxLike<SoftmaxOp>;
    t["LogSoftmax"] = importSoftmaxLike<LogSoftmaxOp>;
    t["Sin"] = unary<SinOp>();
    t["Cos"] = unary<CosOp>();
    t["Tan"] = unary<TanOp>();
    t["Asin"] = unary<AsinOp>();
    t["Acos"] = unary<AcosOp>();
    t["Atan"] = unary<AtanOp>();
    t["Sinh"] = unary<SinhOp>();
    t["Cosh"] = unary<CoshOp>();
    t["Asinh"] = unary<AsinhOp>();
    t["Acosh"] = unary<AcoshOp>();
    t["Atanh"] = unary<AtanhOp>();
    t["BitShift"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      return single(create<BitShiftOp>(c, c.input(0), c.input(1), c.stringAttr("direction", "")));
    };
    t["Sign"] = unary<SignOp>();
    t["Round"] = unary<RoundOp>();
    t["Softplus"] = unary<SoftplusOp>();
    t["Softsign"] = unary<SoftsignOp>();
    t["HardSwish"] = unary<HardSwishOp>();
    t["Mish"] = unary<MishOp>();
    t["Not"] = unary<NotOp>();
    t["Elu"] = activation<EluOp>("alpha", 1.0f, "", 0.0f);
    t["LeakyRelu"] = activation<LeakyReluOp>("alpha", 0.01f, "", 0.0f);
    t["Selu"] = activation<SeluOp>("alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f);
    t["HardSigmoid"] = activation<HardSigmoidOp>("alpha", 0.2f, "beta", 0.5f);
    t["Celu"] = activation<CeluOp>("alpha", 1.0f, "", 0.0f);
    t["ThresholdedRelu"] = activation<ThresholdedReluOp>("alpha", 1.0f, "", 0.0f);
    t["Shrink"] = activation<ShrinkOp>("lambd", 0.5f, "bias", 0.0f);
    t["PRelu"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      Value slope = c.input(1);
      // Before opset 7 a 1-D slope applied per channel (axis 1).
      int64_t rank = rankOf(c.input(0));
      if (c.opset < 7 && rankOf(slope) == 1 && rank > 2) {
        SmallVector<int64_t> axes;
        for (int64_t i = 1; i < rank - 1; ++i)
          axes.push_back(i);
        auto expanded = create<UnsqueezeOp>(c, slope, axes);
        if (failed(expanded))
          return failure();
        slope = *expanded;
      }
      return single(create<PReluOp>(c, c.input(0), slope));
    };
    t["And"] = binary<AndOp>();
    t["Or"] = binary<OrOp>();
    t["Xor"] = binary<XorOp>();
    t["Equal"] = binary<EqualOp>();
    t["Less"] = binary<LessOp>();
    t["LessOrEqual"] = binary<LessOrEqualOp>();
    t["Greater"] = binary<GreaterOp>();
    t["GreaterOrEqual"] = binary<GreaterOrEqualOp>();
    t["Max"] = variadic<MaxOp>();
    t["Min"] = variadic<MinOp>();
    t["Sum"] = variadic<AddOp>();
    t["Mean"] = variadic<AddOp>(/*mean=*/true);
    t["Clip"] = importClip;
    t["Expand"] = importExpand;
    t["Where"] = importWhere;
    t["InstanceNormalization"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 3)))
        return failure();
      return single(create<InstanceNormOp>(c, c.input(0), c.input(1), c.input(2),
                                           c.b.getF32FloatAttr(c.floatAttr("epsilon", 1e-5f))));
    };
    t["ConvTranspose"] = importConvTranspose;
    t["Resize"] = importResize;
    t["Upsample"] = importResize;
    t["ConstantOfShape"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 1)))
        return failure();
      ElementsAttr value;
      if (const auto *a = c.attr("value")) {
        auto v = importTensor(c.b.getContext(), a->t(), c.source, c.error);
        if (failed(v))
          return c.fail(c.error);
        value = *v;
      } else {
        value = DenseElementsAttr::get(RankedTensorType::get({1}, c.b.getF32Type()), 0.0f);
      }
      if (!isa<DenseElementsAttr>(value) || value.getNumElements() != 1)
        return c.fail("value must hold exactly one element");
      return single(create<ConstantOfShapeOp>(c, c.input(0), value));
    };
    t["Mod"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      return single(create<ModOp>(c, c.input(0), c.input(1), c.intAttr("fmod", 0)));
    };
    t["Pad"] = importPad;
    t["NegativeLogLikelihoodLoss"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      IntegerAttr ignore;
      if (c.attr("ignore_index"))
        ignore = c.b.getI64IntegerAttr(c.intAttr("ignore_index", 0));
      return single(create<NllLossOp>(c, c.input(0), c.input(1), c.input(2),
                                      c.b.getStringAttr(c.stringAttr("reduction", "mean")), ignore));
    };
    // SoftmaxCrossEntropyLoss = NLL over LogSoftmax along the class axis;
    // the optional second output is that log-probability tensor.
    t["SoftmaxCrossEntropyLoss"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      auto logp = create<LogSoftmaxOp>(c, c.input(0), (int64_t)1);
      if (failed(logp))
        return failure();
      IntegerAttr ignore;
      if (c.attr("ignore_index"))
        ignore = c.b.getI64IntegerAttr(c.intAttr("ignore_index", 0));
      auto loss = create<NllLossOp>(c, *logp, c.input(1), c.input(2),
                                    c.b.getStringAttr(c.stringAttr("reduction", "mean")), ignore);
      if (failed(loss))
        return failure();
      return SmallVector<Value>{*loss, *logp};
    };
    t["IsNaN"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 1)))
        return failure();
      return single(create<IsNaNOp>(c, c.input(0)));
    };
    t["IsInf"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 1)))
        return failure();
      return single(create<IsInfOp>(c, c.input(0), c.intAttr("detect_positive", 1), c.intAttr("detect_negative", 1)));
    };
    t["Hardmax"] = importSoftmaxLike<HardmaxOp>;
    t["CumSum"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      int64_t exclusive = c.intAttr("exclusive", 0), reverse = c.intAttr("reverse", 0);
      Value x = c.input(0), axisIn = c.input(1);
      DenseIntElementsAttr axisAttr;
      if (matchPattern(axisIn, m_Constant(&axisAttr))) {
        if (axisAttr.getNumElements() != 1)
          return c.fail("axis must be a single value");
        return single(create<CumSumOp>(c, x, (*axisAttr.getValues<APInt>().begin()).getSExtValue(),
                                       exclusive, reverse));
      }
      // The axis is computed by the model. It never changes the shape, and
      // there are only rank many valid axes: compute each sum and let the
      // run-time axis choose (a rank-1 input has a single choice).
      auto at = cast<RankedTensorType>(axisIn.getType());
      auto xt = cast<RankedTensorType>(x.getType());
      if (!at.hasStaticShape() || at.getNumElements() != 1 || !isa<IntegerType>(at.getElementType()))
        return c.fail("axis must be a single integer value");
      int64_t rank = xt.getRank();
      if (rank == 0)
        return c.fail("cum_sum input must have rank >= 1");
      auto result = create<CumSumOp>(c, x, rank - 1, exclusive, reverse);
      if (failed(result))
        return failure();
      auto scalarType = RankedTensorType::get({}, at.getElementType());
      unsigned width = at.getElementType().getIntOrFloatBitWidth();
      for (int64_t a = rank - 2; a >= 0; --a) {
        auto sum = create<CumSumOp>(c, x, a, exclusive, reverse);
        if (failed(sum))
          return failure();
        Value cond;
        for (int64_t v : {a, a - rank}) {
          Value cst = ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(scalarType, APInt(width, v, true)));
          auto eq = create<EqualOp>(c, axisIn, cst);
          if (failed(eq))
            return failure();
          if (cond) {
            auto both = create<OrOp>(c, cond, *eq);
            if (failed(both))
              return failure();
            cond = *both;
          } else {
            cond = *eq;
          }
        }
        result = create<WhereOp>(c, cond, *sum, *result);
        if (failed(result))
          return failure();
      }
      return single(result);
    };
    t["OneHot"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 3)))
        return failure();
      if (isRuntime(c.input(1)))
        return single(create<OneHotOp>(c, c.input(0), c.input(2), c.input(1), (int64_t)0, c.intAttr("axis", -1)));
      DenseElementsAttr depthAttr;
      if (!matchPattern(c.input(1), m_Constant(&depthAttr)) || depthAttr.getNumElements() != 1)
        return c.fail("depth must be a single value");
      int64_t depth = isa<FloatType>(depthAttr.getElementType())
                          ? (int64_t)(*depthAttr.getValues<APFloat>().begin()).convertToDouble()
                          : (*depthAttr.getValues<APInt>().begin()).getSExtValue();
      return single(create<OneHotOp>(c, c.input(0), c.input(2), Value(), depth, c.intAttr("axis", -1)));
    };
    t["ArgMax"] = importArg<ArgMaxOp>;
    t["ArgMin"] = importArg<ArgMinOp>;
    t["Trilu"] = importTrilu;
    t["GatherElements"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      return single(create<GatherElementsOp>(c, c.input(0), c.input(1), c.intAttr("axis", 0)));
    };
    t["GatherND"] = [](NodeContext &c) -> Results {
      if (failed(require(c, 2)))
        return failure();
      return single(create<GatherNDOp>(c, c.input(0), c.input(1), c.intAttr("batch_dims", 0)));
    };
    t["ScatterElements"] = importScatterElements;
    t["Scatter"] = importScatterElements;
    t["ScatterND"] = importScatterND;
    t["TopK"] = importTopK;
    t["Einsum"] = importEinsum;
    t["Tile"] = importTile;
    t["Size"] = importSize;
    t["CastLike"] = importCastLike;
    t["Split"] = importSplit;
    t["Range"] = importRange;
    t["DepthToSpace"] = [](NodeContext &c) { return importDepthSpace(c, true); };
    t["SpaceToDepth"] = [](NodeContext &c) { return importDepthSpace(c, false); };
    t["ReduceMean"] = reduce<ReduceMeanOp>(18, "mean");
    t["ReduceSum"] = reduce<ReduceSumOp>(13, "sum");
    t["ReduceMax"] = reduce<ReduceMaxOp>(18, "max");
    t["ReduceMin"] = reduce<ReduceMinOp>(18, "min");
    t["ReduceProd"] = reduce<ReduceProdOp>(18, "prod");
    t["ReduceL1"] = reduce<ReduceL1Op>(18, "l1");
    t["ReduceL2"] = reduce<ReduceL2Op>(18, "l2");
    t["ReduceSumSquare"] = reduce<ReduceSumSquareOp>(18, "sum_square");
    t["ReduceLogSum"] = reduce<ReduceLogSumOp>(18, "log_sum");
    t["ReduceLogSumExp"] = reduce<ReduceLogSumExpOp>(18, "log_sum_exp");
    t["Constant"] = importConstant;
    t["Reshape"] = importReshape;
    t["Transpose"] = importTranspose;
    t["Flatten"] = importFlatten;
    t["Concat"] = importConcat;
    t["Gather"] = importGather;
    t["Slice"] = importSlice;
    t["Squeeze"] = importSqueeze;
    t["Unsqueeze"] = importUnsqueeze;
    t["Shape"] = importShape;
    // New op families, each in its own file (newops).
    addNormalizationImporters(t);
    addSignalImporters(t);
    addReverseSequenceImporter(t);
    addPoolingImporters(t);
    addLinearAlgebraImporters(t);
    addSamplingImporters(t);
    addDataDependentImporters(t);
    addTextFeatureImporters(t); // tfidf
    addStringImporters(t);      // strings
    return t;
  }();
  return table;
}

} // namespace kiln
