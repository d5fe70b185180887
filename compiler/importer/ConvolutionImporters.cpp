// Conv and ConvTranspose, and the window attributes (kernel, pads, strides, dilations, auto_pad) pooling shares.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {

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

namespace {

Results importConv(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(convolution(c, c.input(0), c.input(1), c.input(2)));
}

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

} // namespace

void addConvolutionImporters(llvm::StringMap<NodeImporter> &t) {
  t["Conv"] = importConv;
  t["ConvTranspose"] = importConvTranspose;
}

} // namespace kiln
