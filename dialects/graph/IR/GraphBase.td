// The graph dialect and the base classes of its ops, included by every section of GraphOps.td.
#ifndef KILN_GRAPH_BASE
#define KILN_GRAPH_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let summary = "ONNX-level tensor operations";
  let description = [{
    One op per ONNX operator kiln understands, with ONNX's attribute names.
    Ops carry value semantics on ranked tensors; dynamic dimensions are `?`
    (their ONNX `dim_param` names live in the function's argument attributes).
    Every op infers its result type from its operands and attributes, so the
    importer never guesses a shape and the verifier checks any type written
    by hand.
  }];
  let cppNamespace = "::kiln::graph";
  let hasConstantMaterializer = 1;
}

// Ops whose result type follows from their operands through a C++ rule.
class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// Ops whose inferred type reads constant operands: folding can make the
// inferred type more static than the type the op was built with, which stays
// valid (compatible: same rank and element type, dims equal or dynamic).
class Graph_RefinableOp<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptorWithIsCompatible])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// Ops whose result type is their operand's (SameOperandsAndResultType infers it).
class Graph_SameTypeOp<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_GRAPH_BASE
