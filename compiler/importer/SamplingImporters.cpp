// Sampling ops: GridSample.
#include "compiler/importer/ImportBuilders.h"

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

} // namespace

void addSamplingImporters(llvm::StringMap<NodeImporter> &t) { t["GridSample"] = importGridSample; }

} // namespace kiln
