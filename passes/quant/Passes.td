// Quantization passes: weights stored in fewer bits, products that read them.
#ifndef KILN_PASSES_QUANT
#define KILN_PASSES_QUANT

include "mlir/Pass/PassBase.td"

def QuantizeWeightsPass : Pass<"kiln-quantize-weights", "::mlir::ModuleOp"> {
  let summary = "Quantize the constant f32 weights of matrix products to int8 or int4 (weight-only)";
  let description = [{
    Every graph.matmul (lhs of rank >= 2) and graph.gemm (transA = 0) whose
    right operand is a constant f32 [K, N] matrix (Gemm's transB: [N, K])
    becomes a graph.quantized_matmul over a new constant: the weight
    quantized symmetrically, per output column (`bits` = 8: scale =
    max|w| / 127 over the column) or per group of `group-size` consecutive
    k in a column (`bits` = 4: scale = max|w| / 7), rounded to nearest even,
    and stored in column panels like kiln-pack-matmul-weights' (int4: two k
    per byte). Gemm's alpha, beta and C stay as graph ops after the product.

    An N that no panel width (64, 32, 16) divides gets a last panel padded
    with zero columns. Left in f32, with a remark: weights under
    `min-elements` (1024), N below 16, K not a multiple of the group size (odd K with
    `dynamic`), and weights or nodes whose name contains one of `keep`
    (e.g. `lm_head`). The
    With `dynamic`, the int8 weights are laid out in k pairs for integer
    products (graph.quantized_matmul's `dynamic` form). The
    original constant disappears when nothing else reads it (a weight tied to
    an embedding table stays for the Gather).
  }];
  let options = [
    Option<"bits", "bits", "int64_t", "8", "8 (per-channel int8) or 4 (group-wise int4)">,
    Option<"groupSize", "group-size", "int64_t", "0", "int4 group size along K (0: whole column)">,
    Option<"f16Scales", "f16-scales", "bool", "false", "Store scales as f16 instead of f32">,
    Option<"dynamic", "dynamic", "bool", "false",
           "With bits=8: quantize activations per row at run time and multiply in integers (K must be even)">,
    Option<"panel", "panel", "int64_t", "64",
           "Widest column panel (a power of two >= 16), or 1: one output column per panel, its weights "
           "contiguous along k (the GPU targets' layout, read by one reduction per output)">,
    Option<"minElements", "min-elements", "int64_t", "1024",
           "Smaller weights stay f32 (e.g. rotary frequency tables: read once per run, exact for free)">,
    ListOption<"keep", "keep", "std::string", "Weight or node name substrings to leave in f32">
  ];
}

def FoldQdqPass : Pass<"kiln-fold-qdq", "::mlir::ModuleOp"> {
  let summary = "Fold a quantized model's DequantizeLinear weights into graph.quantized_matmul";
  let description = [{
    A QDQ model stores a MatMul's weight as int8 and dequantizes it in the
    graph: the importer's `mul(sub(cast(q), zero_point), scale)` (or
    `mul(cast(q), scale)`) over constants. Executed as written, that is a
    dequantized f32 copy of the weight computed on every run. This pass
    makes the product read the model's own int8 values and scales directly
    (graph.quantized_matmul, one group per column), with no rounding of its
    own: q - zero_point is taken exactly when it fits int8 (symmetric int8
    weights, uint8 around zero point 128, other shifted values that fit),
    the scale per tensor or per column (axis 1). Anything else (per-row
    scales, shifted values outside int8, N below 16) gets a remark saying
    why. Those weights, and every other constant dequantized in the graph
    (a convolution's weight, a Gather's table), are then computed once here
    with the graph's own f32 operations (bit-identical results) into f32
    constants: nothing is dequantized per forward pass, and convolution
    weights get packed.
  }];
  let options = [
    Option<"panel", "panel", "int64_t", "64",
           "Widest column panel (a power of two >= 16), or 1 (GPU targets: each output column's weights contiguous along k)">
  ];
}

def FoldIntegerMatMulPass : Pass<"kiln-fold-integer-matmul", "::mlir::ModuleOp"> {
  let summary = "Integer products by constant int8 weights (MatMulInteger, QLinearMatMul) as graph.integer_matmul";
  let description = [{
    The importer lowers MatMulInteger and QLinearMatMul (what ONNX Runtime's
    dynamic and static quantizers write) to a graph.matmul on i32 operands
    widened from 8 bits, which runs as a generic 32-bit loop. When the right
    operand is a constant int8 [K, N] weight (minus a constant zero point,
    the differences still int8) and the left operand provably fits 16 bits
    (a bound propagated through casts from 8-bit types, adds, subtracts and
    selects), the product becomes graph.integer_matmul: the weight in k
    pairs, the sums from 16-bit pair products (vpmaddwd), bit-exact. Other
    products stay as imported, with a remark naming the reason.
  }];
  let options = [
    Option<"panel", "panel", "int64_t", "64",
           "Widest column panel (a power of two >= 16), or 1 (GPU targets: each output column's weights contiguous along k)">
  ];
}

#endif
