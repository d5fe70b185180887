// The graph dialect: ONNX-level tensor operations with verifiers and shape inference.
// One file per section; the shape rules of each are in the <Section>Shapes.cpp of the same name.
#ifndef KILN_GRAPH_OPS
#define KILN_GRAPH_OPS

include "dialects/graph/IR/GraphBase.td"
include "dialects/graph/IR/ElementwiseOps.td"
include "dialects/graph/IR/NeuralNetworkOps.td"
include "dialects/graph/IR/DataMovementOps.td"
include "dialects/graph/IR/KvCacheOps.td"
include "dialects/graph/IR/RuntimeOperandOps.td"
include "dialects/graph/IR/DataDependentOps.td"
include "dialects/graph/IR/TextFeatureOps.td"
include "dialects/graph/IR/StringOps.td"

#endif // KILN_GRAPH_OPS
