// Graph-level fusions: composite patterns exported as many small ops become single graph ops.
#ifndef KILN_PASSES_FUSION
#define KILN_PASSES_FUSION

include "mlir/Pass/PassBase.td"

def FuseLayerNormPass : Pass<"kiln-fuse-layer-norm"> {
  let summary = "Recognize LayerNormalization exported as ReduceMean/Sub/Pow/Sqrt/Div";
  let description = [{
    Exporters that predate opset 17 (and hand-written models) spell layer
    normalization over the last axis as
    `d = x - ReduceMean(x); d / Sqrt(ReduceMean(d * d) + eps) * gamma + beta`.
    The chain becomes one `graph.layer_norm` (one reduction pass + one
    elementwise pass once lowered). Only the exact semantics are fused: the
    mean over the last axis with keepdims, the epsilon inside the square
    root, `d` squared (`Pow 2` or `d * d`), the same `d` normalized; an
    intermediate that other ops read stays unfused.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def FuseAttentionPass : Pass<"kiln-fuse-attention"> {
  let summary = "Recognize scaled-dot-product attention as graph.attention";
  let description = [{
    `Softmax(axis=-1)(MatMul(Q, Transpose(K)) * s + mask)` followed by
    `MatMul(., V)` becomes one `graph.attention`, whose lowering is a
    FlashAttention-style kernel that never materializes the Sq x Sk scores.
    The scale may be a Mul or Div by a scalar constant of the scores, of Q or
    of K (folded together); the mask an additive tensor or a
    `Where(keep, scores, -inf)` / `Where(drop, -inf, scores)` selection; K^T
    a Transpose swapping the last two axes (any other K^T is transposed
    back). Keys/values repeated per query head as Hugging Face's `repeat_kv`
    (Unsqueeze, Expand, Reshape) are read ungrouped. Refused: a softmax over
    another axis, a scale that is not a scalar constant, an intermediate
    (scores, masked scores, probabilities) that another op reads, a mask that
    would broadcast the scores to a larger shape, a query broadcast against
    the keys.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

#endif
