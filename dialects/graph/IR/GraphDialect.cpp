// Registers the graph dialect and its ops.
#include "dialects/graph/IR/Graph.h"

using namespace mlir;
using namespace kiln::graph;

#include "dialects/graph/IR/GraphDialect.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/graph/IR/GraphOps.cpp.inc"
      >();
}
