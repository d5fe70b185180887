// Linear-algebra ops without a contraction: Det.
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

} // namespace

void addLinearAlgebraImporters(llvm::StringMap<NodeImporter> &t) { t["Det"] = importDet; }

} // namespace kiln
