// Graph-level passes.
#ifndef KILN_PASSES_GRAPH
#define KILN_PASSES_GRAPH

include "mlir/Pass/PassBase.td"

def OutlineWeightsPass : Pass<"kiln-outline-weights", "::mlir::ModuleOp"> {
  let summary = "Turn large constants into @main arguments backed by the artifact's weights";
  let description = [{
    Weights must never be copied into the code: each graph.constant above
    `min-elements` elements becomes a trailing argument of @main, and the
    module records the constants (by reference) in `kiln.weights` so that the
    artifact writer streams them, aligned, into the weights section. The
    runtime passes a pointer into the mapped artifact for each.
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", "64",
           "Constants with more elements than this become weights">
  ];
}

#endif
