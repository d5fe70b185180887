// Linear algebra: MatMul, Gemm, Einsum, Det.
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

Results importDet(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<DetOp>(c, c.input(0)));
}

Results importMatMul(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  return single(create<MatMulOp>(c, c.input(0), c.input(1)));
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

Results importEinsum(NodeContext &c) {
  if (c.inputs.empty() || llvm::is_contained(c.inputs, Value()))
    return c.fail("einsum needs its operands");
  if (!c.attr("equation"))
    return c.fail("missing attribute 'equation'");
  std::string equation = c.stringAttr("equation", "");
  return single(create<EinsumOp>(c, ValueRange(c.inputs), StringRef(equation)));
}

} // namespace

void addLinearAlgebraImporters(llvm::StringMap<NodeImporter> &t) {
  t["MatMul"] = importMatMul;
  t["Gemm"] = importGemm;
  t["Einsum"] = importEinsum;
  t["Det"] = importDet;
}

} // namespace kiln
