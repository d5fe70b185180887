// Sampling ops: Resize (and Upsample), GridSample, RoiAlign.
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// GridSample (opset 16 names; opset 20's linear/cubic mean bilinear/bicubic).
Results importGridSample(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  std::string mode = c.stringAttr("mode", "bilinear");
  if (mode == "linear")
    mode = "bilinear";
  else if (mode == "cubic")
    mode = "bicubic";
  std::string padding = c.stringAttr("padding_mode", "zeros");
  return single(create<GridSampleOp>(c, c.input(0), c.input(1), StringRef(mode), StringRef(padding),
                                     c.intAttr("align_corners", 0)));
}

/// RoiAlign (opset 10: no coordinate_transformation_mode, which behaves as
/// output_half_pixel).
Results importRoiAlign(NodeContext &c) {
  if (failed(require(c, 3)))
    return failure();
  Value indices = c.input(2);
  auto it = cast<RankedTensorType>(indices.getType());
  if (!it.getElementType().isInteger(64)) {
    auto wide = create<CastOp>(c, indices, c.b.getI64Type());
    if (failed(wide))
      return failure();
    indices = *wide;
  }
  std::string ctm = c.stringAttr("coordinate_transformation_mode", c.opset >= 16 ? "half_pixel" : "output_half_pixel");
  return single(create<RoiAlignOp>(c, c.input(0), c.input(1), indices, StringRef(c.stringAttr("mode", "avg")),
                                   c.intAttr("output_height", 1), c.intAttr("output_width", 1),
                                   c.intAttr("sampling_ratio", 0),
                                   llvm::APFloat(c.floatAttr("spatial_scale", 1.0f)), StringRef(ctm)));
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

} // namespace

void addSamplingImporters(llvm::StringMap<NodeImporter> &t) {
  t["Resize"] = importResize;
  t["Upsample"] = importResize;
  t["GridSample"] = importGridSample;
  t["RoiAlign"] = importRoiAlign;
}

} // namespace kiln
