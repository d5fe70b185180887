// Gather and scatter by indices: Gather, GatherElements, GatherND, ScatterElements (and Scatter), ScatterND, OneHot.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

Results importGather(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<GatherOp>(c, c.input(0), c.input(1), c.intAttr("axis", 0)));
}

Results importGatherElements(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<GatherElementsOp>(c, c.input(0), c.input(1), c.intAttr("axis", 0)));
}

Results importGatherND(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<GatherNDOp>(c, c.input(0), c.input(1), c.intAttr("batch_dims", 0)));
}

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

Results importOneHot(NodeContext &c) {
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
}

} // namespace

void addIndexingImporters(llvm::StringMap<NodeImporter> &t) {
  t["Gather"] = importGather;
  t["GatherElements"] = importGatherElements;
  t["GatherND"] = importGatherND;
  t["ScatterElements"] = importScatterElements;
  t["Scatter"] = importScatterElements;
  t["ScatterND"] = importScatterND;
  t["OneHot"] = importOneHot;
}

} // namespace kiln
