// Graph ops, elementwise: arithmetic, comparisons, activations, casts, and ops that index or select elements.
#ifndef KILN_GRAPH_ELEMENTWISE_OPS
#define KILN_GRAPH_ELEMENTWISE_OPS

include "dialects/graph/IR/GraphBase.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Graph_BinaryOp<string mnemonic, string onnxName>
    : Graph_Op<mnemonic, [SameOperandsElementType]> {
  let summary = onnxName # " with numpy-style broadcasting";
  let description = [{
    Elementwise `}] # onnxName # [{` of two tensors broadcast against each
    other as numpy does; a dynamic dimension is assumed to match its partner.

    ```mlir
    %z = graph.}] # mnemonic # [{ %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_AddOp : Graph_BinaryOp<"add", "Add"> {
  let hasFolder = 1;
}
def Graph_SubOp : Graph_BinaryOp<"sub", "Sub"> {
  let hasFolder = 1;
}
def Graph_MulOp : Graph_BinaryOp<"mul", "Mul"> {
  let hasFolder = 1;
}
def Graph_DivOp : Graph_BinaryOp<"div", "Div"> {
  let hasFolder = 1;
}
def Graph_PowOp : Graph_Op<"pow"> {
  let summary = "Pow with broadcasting";
  let description = [{
    `lhs` raised to `rhs`, broadcast numpy-style; the exponent may have its own
    element type, the result has the base's.

    ```mlir
    %z = graph.pow %x, %y : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

class Graph_UnaryOp<string mnemonic, string onnxName>
    : Graph_SameTypeOp<mnemonic> {
  let summary = onnxName # ", elementwise";
  let description = [{
    Applies ONNX `}] # onnxName # [{` to every element.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_SqrtOp : Graph_UnaryOp<"sqrt", "Sqrt">;
def Graph_ExpOp : Graph_UnaryOp<"exp", "Exp">;
def Graph_LogOp : Graph_UnaryOp<"log", "Log">;
def Graph_NegOp : Graph_UnaryOp<"neg", "Neg"> {
  let hasFolder = 1;
}
def Graph_AbsOp : Graph_UnaryOp<"abs", "Abs">;
def Graph_ReciprocalOp : Graph_UnaryOp<"reciprocal", "Reciprocal">;
def Graph_FloorOp : Graph_UnaryOp<"floor", "Floor">;
def Graph_CeilOp : Graph_UnaryOp<"ceil", "Ceil">;
def Graph_ReluOp : Graph_UnaryOp<"relu", "Relu">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "Sigmoid">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "Tanh">;
def Graph_ErfOp : Graph_UnaryOp<"erf", "Erf">;
def Graph_IdentityOp : Graph_UnaryOp<"identity", "Identity"> {
  let hasFolder = 1;
}

def Graph_SinOp : Graph_UnaryOp<"sin", "Sin">;
def Graph_CosOp : Graph_UnaryOp<"cos", "Cos">;
def Graph_SignOp : Graph_UnaryOp<"sign", "Sign">;
def Graph_TanOp : Graph_UnaryOp<"tan", "Tan">;
def Graph_AsinOp : Graph_UnaryOp<"asin", "Asin">;
def Graph_AcosOp : Graph_UnaryOp<"acos", "Acos">;
def Graph_AtanOp : Graph_UnaryOp<"atan", "Atan">;
def Graph_SinhOp : Graph_UnaryOp<"sinh", "Sinh">;
def Graph_CoshOp : Graph_UnaryOp<"cosh", "Cosh">;
def Graph_AsinhOp : Graph_UnaryOp<"asinh", "Asinh">;
def Graph_AcoshOp : Graph_UnaryOp<"acosh", "Acosh">;
def Graph_AtanhOp : Graph_UnaryOp<"atanh", "Atanh">;
def Graph_RoundOp : Graph_UnaryOp<"round", "Round">;
def Graph_SoftplusOp : Graph_UnaryOp<"softplus", "Softplus">;
def Graph_SoftsignOp : Graph_UnaryOp<"softsign", "Softsign">;
def Graph_HardSwishOp : Graph_UnaryOp<"hard_swish", "HardSwish">;
def Graph_MishOp : Graph_UnaryOp<"mish", "Mish">;
def Graph_NotOp : Graph_UnaryOp<"not", "Not">;

def Graph_GeluOp : Graph_Op<"gelu"> {
  let summary = "Gelu (ONNX opset 20): x * Phi(x), exact or with the tanh approximation";
  let description = [{
    `approximate = "none"`: `0.5 * x * (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`: `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.
    The importer maps ONNX `Gelu`; kiln-fuse-gelu forms it from the exported
    chains of Mul/Div/Erf (or Pow/Tanh).

    ```mlir
    %y = graph.gelu %x {approximate = "tanh"} : (tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_SiluOp : Graph_UnaryOp<"silu", "Silu"> {
  let summary = "SiLU (swish): x * sigmoid(x), elementwise";
  let description = [{
    ONNX has no SiLU operator; kiln-fuse-silu forms this op from the exported
    `Mul(x, Sigmoid(x))`. SwiGLU stays `graph.mul(graph.silu(gate), up)`:
    elementwise fusion makes it one loop after lowering.

    ```mlir
    %y = graph.silu %x : (tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
}

// Elementwise activations with ONNX's float parameters (defaults per ONNX).
class Graph_ActivationOp<string mnemonic, string onnxName, string alpha, string beta>
    : Graph_SameTypeOp<mnemonic> {
  let summary = onnxName # " with parameters alpha and beta";
  let description = [{
    ONNX `}] # onnxName # [{`; `alpha`/`beta` carry the op's attributes (see
    the lowering for which each uses).

    ```mlir
    %y = graph.}] # mnemonic # [{ %x {alpha = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                   DefaultValuedAttr<F32Attr, alpha>:$alpha,
                   DefaultValuedAttr<F32Attr, beta>:$beta);
  let results = (outs AnyRankedTensor:$result);
}
def Graph_EluOp : Graph_ActivationOp<"elu", "Elu", "1.0", "0.0">;
def Graph_LeakyReluOp : Graph_ActivationOp<"leaky_relu", "LeakyRelu", "0.01", "0.0">;
def Graph_SeluOp : Graph_ActivationOp<"selu", "Selu", "1.67326319217681884765625", "1.05070102214813232421875">;
def Graph_HardSigmoidOp : Graph_ActivationOp<"hard_sigmoid", "HardSigmoid", "0.2", "0.5">;
def Graph_CeluOp : Graph_ActivationOp<"celu", "Celu", "1.0", "0.0">;
def Graph_ThresholdedReluOp : Graph_ActivationOp<"thresholded_relu", "ThresholdedRelu", "1.0", "0.0">;
def Graph_ShrinkOp : Graph_ActivationOp<"shrink", "Shrink", "0.5", "0.0">;

def Graph_MaxOp : Graph_BinaryOp<"max", "Max">;
def Graph_MinOp : Graph_BinaryOp<"min", "Min">;
def Graph_PReluOp : Graph_BinaryOp<"prelu", "PRelu">;
def Graph_AndOp : Graph_BinaryOp<"and", "And">;
def Graph_OrOp : Graph_BinaryOp<"or", "Or">;
def Graph_XorOp : Graph_BinaryOp<"xor", "Xor">;

class Graph_CompareOp<string mnemonic, string onnxName>
    : Graph_Op<mnemonic, [SameOperandsElementType]> {
  let summary = onnxName # " with broadcasting, producing i1";
  let description = [{
    ```mlir
    %z = graph.}] # mnemonic # [{ %x, %y : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}
def Graph_EqualOp : Graph_CompareOp<"equal", "Equal">;
def Graph_LessOp : Graph_CompareOp<"less", "Less">;
def Graph_LessOrEqualOp : Graph_CompareOp<"less_or_equal", "LessOrEqual">;
def Graph_GreaterOp : Graph_CompareOp<"greater", "Greater">;
def Graph_GreaterOrEqualOp : Graph_CompareOp<"greater_or_equal", "GreaterOrEqual">;

def Graph_WhereOp : Graph_Op<"where"> {
  let summary = "Selects x where cond is true, else y (three-way broadcasting)";
  let description = [{
    ```mlir
    %z = graph.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins TensorOf<[I1]>:$condition, AnyRankedTensor:$x, AnyRankedTensor:$y);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_ClipOp : Graph_Op<"clip"> {
  let summary = "Clamps to [min, max] (scalar bounds)";
  let description = [{
    The importer supplies the lowest/highest value for a missing bound.

    ```mlir
    %y = graph.clip %x, %lo, %hi : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$min, AnyRankedTensor:$max);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_ExpandOp : Graph_Op<"expand"> {
  let summary = "Broadcasts the input to a constant shape (numpy rules)";
  let description = [{
    ```mlir
    %y = graph.expand %x {shape = array<i64: 3, 4>} : (tensor<1x4xf32>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DynamicExpandOp : Graph_Op<"dynamic_expand"> {
  let summary = "Broadcasts the input to a shape known at run time (numpy rules)";
  let description = [{
    ONNX Expand whose shape comes from the data (decoders expand key/value
    heads to the sequence length). Result dims whose size the types fix are
    static; the others are dynamic. A dynamic input dim is assumed to match
    its output dim unless it is statically 1.

    ```mlir
    %y = graph.dynamic_expand %x, %s : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 1DTensorOf<[I64]>:$shape);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_BitShiftOp : Graph_Op<"bit_shift", [SameOperandsElementType]> {
  let summary = "Shifts unsigned integers left or right (logical), with broadcasting";
  let description = [{
    ```mlir
    %z = graph.bit_shift %x, %y {direction = "RIGHT"} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs, StrAttr:$direction);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_ModOp : Graph_Op<"mod", [SameOperandsElementType]> {
  let summary = "Mod with broadcasting (fmod = C's fmod, else Python's sign rule)";
  let description = [{
    ```mlir
    %z = graph.mod %x, %y {fmod = 0 : i64} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs, DefaultValuedAttr<I64Attr, "0">:$fmod);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_PadOp : Graph_Op<"pad"> {
  let summary = "Pads with a constant, the edge value, or a reflection";
  let description = [{
    `pads` holds begin values for every axis then end values (non-negative);
    `value` (a single element) is used in constant mode.

    ```mlir
    %y = graph.pad %x, %v {mode = "reflect", pads = array<i64: 0, 1, 0, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$value, StrAttr:$mode,
                   DenseI64ArrayAttr:$pads);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
}

class Graph_ArgOp<string mnemonic, string onnxName> : Graph_Op<mnemonic> {
  let summary = onnxName # ": index of the extreme value along `axis` (i64)";
  let description = [{
    ```mlir
    %i = graph.}] # mnemonic # [{ %x {axis = 1 : i64, keepdims = 1 : i64} : (tensor<3x4xf32>) -> tensor<3x1xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedAttr<I64Attr, "1">:$keepdims,
                   DefaultValuedAttr<I64Attr, "0">:$select_last_index);
  let results = (outs AnyRankedTensor:$result);
}
def Graph_ArgMaxOp : Graph_ArgOp<"arg_max", "ArgMax">;
def Graph_ArgMinOp : Graph_ArgOp<"arg_min", "ArgMin">;

def Graph_TriluOp : Graph_Op<"trilu"> {
  let summary = "Keeps the upper or lower triangle (diagonal offset k) of the last two axes";
  let description = [{
    The offset is the attribute `k`, or, when the model computes it (ONNX's
    `k` input is not a constant), the optional scalar operand `k_value`
    (int64), read at run time; it never changes the result's shape.

    ```mlir
    %y = graph.trilu %x {upper = 1 : i64, k = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %z = graph.trilu %x, %k {upper = 0 : i64} : (tensor<4x4xf32>, tensor<1xi64>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$k_value,
                   DefaultValuedAttr<I64Attr, "1">:$upper, DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_GatherElementsOp : Graph_Op<"gather_elements"> {
  let summary = "out[i] = data[i with axis replaced by indices[i]]";
  let description = [{
    ```mlir
    %y = graph.gather_elements %d, %i {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, TensorOf<[I32, I64]>:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_GatherNDOp : Graph_Op<"gather_nd"> {
  let summary = "Gathers slices of `data` addressed by the last axis of `indices` (ONNX GatherND)";
  let description = [{
    The first `batch_dims` axes of data and indices are shared; the last axis
    of indices (static) holds coordinates into the next axes of data. Result
    shape: indices.shape[:-1] + data.shape[batch_dims + k:].

    ```mlir
    %y = graph.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, TensorOf<[I32, I64]>:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_ScatterElementsOp : Graph_Op<"scatter_elements"> {
  let summary = "A copy of `data` with `updates` written (or combined) at `indices` along `axis`";
  let description = [{
    ONNX ScatterElements (and the older Scatter); `reduction` is one of
    none, add, mul, max, min.

    ```mlir
    %y = graph.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, TensorOf<[I32, I64]>:$indices, AnyRankedTensor:$updates,
                   DefaultValuedAttr<I64Attr, "0">:$axis, StrAttr:$reduction);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_ScatterNDOp : Graph_Op<"scatter_nd"> {
  let summary = "A copy of `data` with slices of `updates` written (or combined) at the coordinates in `indices`";
  let description = [{
    ONNX ScatterND; `reduction` is one of none, add, mul, max, min.

    ```mlir
    %y = graph.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, TensorOf<[I64]>:$indices, AnyRankedTensor:$updates,
                   StrAttr:$reduction);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_TopKOp : Graph_Op<"top_k"> {
  let summary = "The k largest (or smallest) elements along `axis` and their i64 indices";
  let description = [{
    `k` is a one-element i64 tensor; when it is a constant the result has a
    static size along the axis, otherwise min(k, dim) is taken at run time.
    Results are always sorted; equal values keep the lower index first.

    ```mlir
    %v, %i = graph.top_k %x, %k {axis = 1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I64]>:$k,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<I64Attr, "1">:$largest,
                   DefaultValuedAttr<I64Attr, "1">:$sorted);
  let results = (outs AnyRankedTensor:$values, AnyRankedTensor:$indices);
}

def Graph_EinsumOp : Graph_Op<"einsum"> {
  let summary = "Einstein summation over operands by an explicit or implicit equation (ONNX Einsum)";
  let description = [{
    ```mlir
    %y = graph.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, StrAttr:$equation);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_TileOp : Graph_Op<"tile"> {
  let summary = "Repeats the input `repeats[i]` times along each axis";
  let description = [{
    ```mlir
    %y = graph.tile %x {repeats = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_IsNaNOp : Graph_Op<"is_nan"> {
  let summary = "True where the input is NaN";
  let description = [{
    ```mlir
    %y = graph.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_IsInfOp : Graph_Op<"is_inf"> {
  let summary = "True where the input is +inf (detect_positive) or -inf (detect_negative)";
  let description = [{
    ```mlir
    %y = graph.is_inf %x {detect_positive = 1 : i64, detect_negative = 1 : i64} : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "1">:$detect_positive,
                   DefaultValuedAttr<I64Attr, "1">:$detect_negative);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_HardmaxOp : Graph_Op<"hardmax"> {
  let summary = "1 at the first maximum along `axis`, 0 elsewhere";
  let description = [{
    ```mlir
    %y = graph.hardmax %x {axis = -1 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_CumSumOp : Graph_Op<"cum_sum"> {
  let summary = "Cumulative sum along `axis` (optionally exclusive and/or reversed)";
  let description = [{
    ```mlir
    %y = graph.cum_sum %x {axis = 0 : i64, exclusive = 0 : i64, reverse = 0 : i64} : (tensor<5xf32>) -> tensor<5xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<I64Attr, "0">:$exclusive, DefaultValuedAttr<I64Attr, "0">:$reverse);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_OneHotOp : Graph_Op<"one_hot"> {
  let summary = "One-hot encoding: `values[1]` where the index matches, `values[0]` elsewhere";
  let description = [{
    `depth` is the attribute, or, when the model computes it, the optional
    single-element operand `depth_value` (integer or float, truncated; read
    at run time, a depth below 0 counts as 0), which makes the depth axis
    dynamic. Negative indices count from the depth.

    ```mlir
    %y = graph.one_hot %i, %v {depth = 10 : i64, axis = -1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x10xf32>
    %z = graph.one_hot %i, %v, %d {axis = 0 : i64} : (tensor<3xi64>, tensor<2xf32>, tensor<f32>) -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$values, Optional<AnyRankedTensor>:$depth_value,
                   DefaultValuedAttr<I64Attr, "0">:$depth, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_NllLossOp : Graph_Op<"nll_loss"> {
  let summary = "NegativeLogLikelihoodLoss: -input[n, target[n, d...], d...] * weight[target]";
  let description = [{
    `reduction` is "none" (loss per target element), "sum" or "mean"
    (divided by the summed weights of the targets not ignored).

    ```mlir
    %l = graph.nll_loss %x, %t {reduction = "mean"} : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I32, I64]>:$target, Optional<AnyRankedTensor>:$weight,
                   StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_CastOp : Graph_Op<"cast"> {
  let summary = "Cast to another element type";
  let description = [{
    Converts every element to the element type `to` (float <-> int truncates
    toward zero, bool is 0/1).

    ```mlir
    %y = graph.cast %x {to = i64} : (tensor<4xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TypeAttr:$to);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout"> {
  let summary = "Dropout with run-time ratio and training mode: output and keep-mask";
  let description = [{
    In training mode (the i1 scalar `training_mode` true), each element is
    kept when a uniform number in [0, 1) is >= `ratio` and scaled by
    1 / (1 - ratio), else 0; the mask (i1) says which were kept. Otherwise
    the output is the input and the mask all true. The numbers come from a
    counter-based hash of (`seed`, element index): the same for every run,
    not numpy's sequence.

    ```mlir
    %y, %m = graph.dropout %x, %r, %t {seed = 0 : i64} : (tensor<3x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<3x4xf32>, tensor<3x4xi1>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$ratio,
                   RankedTensorOf<[I1]>:$training_mode, DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$mask);
}

#endif // KILN_GRAPH_ELEMENTWISE_OPS
