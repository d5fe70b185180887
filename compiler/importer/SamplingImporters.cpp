// Sampling ops: GridSample, RoiAlign.
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

} // namespace

void addSamplingImporters(llvm::StringMap<NodeImporter> &t) {
  t["GridSample"] = importGridSample;
  t["RoiAlign"] = importRoiAlign;
}

} // namespace kiln
