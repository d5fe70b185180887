// Fusion passes: composite graph patterns into single graph ops, elementwise chains into one loop, a product's epilogue into its tiles.
#ifndef KILN_PASSES_FUSION
#define KILN_PASSES_FUSION

include "mlir/Pass/PassBase.td"

def FuseLayerNormPass : Pass<"kiln-fuse-layer-norm"> {
  let summary = "Recognize LayerNormalization exported as ReduceMean/Sub/Pow/Sqrt/Div";
  let description = [{
    Exporters that predate opset 17 (and hand-written models) spell layer
    normalization over the last axis as
    `d = x - ReduceMean(x); d / Sqrt(ReduceMean(d * d) + eps) * gamma + beta`;
    ONNX's own function body writes the variance as
    `ReduceMean(x * x) - m * m`. Either chain becomes one `graph.layer_norm`
    (which computes the two-pass variance). Only the exact semantics are
    fused: both means over the last axis with keepdims, the epsilon inside
    the square root, `d` squared (`Pow 2` or `d * d`), the same `d`
    normalized (`Div`, or `Mul` by `Reciprocal`/`1 /`), gamma and beta
    varying along the last axis only. Other readers of the mean or of
    `1 / Sqrt(...)` read the op's Mean/InvStdDev results; any other
    intermediate read elsewhere (d, the variance, the root) refuses.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def FuseRmsNormPass : Pass<"kiln-fuse-rms-norm"> {
  let summary = "Recognize RMSNormalization exported as Pow/ReduceMean/Add/Sqrt/Div (the Llama form)";
  let description = [{
    `x / Sqrt(ReduceMean(x^2) + eps) * gamma` (x^2 as `Pow(x, 2)` or `x * x`;
    the division also as `x * Reciprocal(...)` or `x * (1 / ...)`; gamma
    optional, on either side) becomes one `graph.rms_norm` over the last
    axis. Refused: a mean over another axis or without keepdims, epsilon
    outside the root, an intermediate another op reads, a gain that varies
    along other axes (the Mul then stays). Runs after kiln-fuse-layer-norm,
    whose centered chain it would otherwise match as an RMS of `x - mean`.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def FuseGeluPass : Pass<"kiln-fuse-gelu"> {
  let summary = "Recognize GELU exported in its erf or tanh form as graph.gelu";
  let description = [{
    `0.5 * x * (1 + Erf(x / sqrt(2)))` (also `x * 0.7071...`, `/ 2` instead of
    `* 0.5`, any order and association of the product) becomes
    `graph.gelu {approximate = "none"}`;
    `0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` (x^3 as
    `Pow(x, 3)` or products) becomes `approximate = "tanh"`. Constants must
    match within 1e-4 (exporters print sqrt(2) rounded), 0.5/1/2/3 exactly;
    intermediates must have no other readers.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def FuseSiluPass : Pass<"kiln-fuse-silu"> {
  let summary = "Recognize SiLU exported as x * Sigmoid(x) as graph.silu";
  let description = [{
    `Mul(x, Sigmoid(x))` in either order becomes `graph.silu`, unless the
    sigmoid has other readers. SwiGLU (`silu(gate) * up`) stays a Mul of the
    silu: after lowering, elementwise fusion makes it one loop.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def FuseRotaryPass : Pass<"kiln-fuse-rotary"> {
  let summary = "Recognize the rotate-half rotary embedding as graph.rotary";
  let description = [{
    `x * cos + Concat(Neg(x[..., H/2:]), x[..., :H/2]) * sin` (the Llama
    exports' Slice/Neg/Concat/Mul/Mul/Add, either operand order of the Muls
    and the Add) becomes `graph.rotary x, cos, sin` when the slices, the Neg
    and the Concat are read by the pattern alone, the slices split the last
    axis (static, even) in halves, and cos and sin broadcast to x's shape.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def FuseHardSwishPass : Pass<"kiln-fuse-hard-swish"> {
  let summary = "Recognize HardSwish exported as x * HardSigmoid(x) as graph.hard_swish";
  let description = [{
    `Mul(x, HardSigmoid(x))` in either order, with HardSwish's parameters
    (alpha 1/6 and beta 0.5 in f32, as PyTorch exports nn.Hardswish below
    opset 14), becomes `graph.hard_swish`, unless the hard sigmoid has other
    readers: one op reading x, which a convolution can take as its epilogue
    (two readers of x kept it out of row-banded chains).
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
    `Where(keep, scores, fill)` / `Where(drop, fill, scores)` selection with
    a fill of -inf or <= -1e30 (HF's finfo.min; s + fill == fill, so an
    additive mask of the fill is exact; -1e9 is refused); K^T
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

def FuseElementwisePass : Pass<"kiln-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg chains, keeping matrix products' operands unfused";
  let description = [{
    MLIR's elementwise fusion (linalg-fuse-elementwise-ops, with its reshape
    propagation and constant folding) with one difference: a producer is
    never fused into an operand of a contraction (a matmul-like generic),
    because the fused body recomputes the producer for every output column
    and stops kiln-vectorize-contractions from forming its microkernel; a
    reshape next to a product is not folded into it; and a slice from 0 whose
    sizes trace back to its source's own (the cut the elementwise lowering
    makes when two inputs are dynamic in the same dim) is dropped, so the
    chain fuses. A slice it cannot drop, when it is the only reader of an
    elementwise op whose maps pick dims, moves above the op (which computes
    only the slice, its linalg.index offset) unless the op reads a product;
    a tensor.dim of a result does not count as a reader; a one-element op's
    value read back with tensor.extract is computed where it is read.

    With `keep-product-epilogues` (the CUDA pipeline), a reshape is not
    propagated through an elementwise op that reads a product's result used
    by nothing else either: that op is the product's cuBLASLt epilogue (bias,
    residual) only while it reads the product itself (kiln-mark-gemm-epilogues);
    expanded to the heads' view `[B, S, H, D]` it was a launch of its own.
  }];
  let options = [
    Option<"keepProductEpilogues", "keep-product-epilogues", "bool", /*default=*/"false",
           "Do not propagate reshapes through an elementwise op that is a product's only reader">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseEpiloguesPass : Pass<"kiln-fuse-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Fuse a tiled matrix product's elementwise consumer into its tile loop";
  let description = [{
    After kiln-tile-contractions: when the only reader of a product's
    `scf.forall` is an elementwise `linalg.generic` (bias, residual add,
    activation: everything kiln-fuse-elementwise merged into one op) that
    reads the product element for element and writes a tensor of its shape,
    MLIR's consumer fusion moves it into the loop. Each tile is then finished
    while it is in cache, in the same kernel, instead of one more pass over
    the whole result. When the consumer does not read its own init, it then
    writes over the product's tile, inserted into the product's buffer: the
    loop keeps one result and bufferization needs no per-tile copy.
    A consumer that reads the product's rows as two of its own dims folded
    into one (a 1x1 convolution's plain product [N, H*W, C] read over
    [N, H, W, C]) is first rewritten over the product's iteration space:
    operands with both dims are collapsed (a view), the result expanded
    back. Unless its result is padded afterwards (a depthwise convolution's
    input), which kiln-pad-in-place serves better by giving the separate
    kernel the padded buffer's interior to write.
    Consumers reading the product through a broadcast or transpose, or
    reading values computed after the loop, stay separate.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"];
}

#endif
