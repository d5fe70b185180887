// The graph dialect: ONNX-level tensor operations with verifiers and shape inference.
#ifndef KILN_GRAPH_OPS
#define KILN_GRAPH_OPS

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

//===----------------------------------------------------------------------===//
// Contractions and neural-network ops
//===----------------------------------------------------------------------===//

def Graph_MatMulOp : Graph_Op<"matmul", [SameOperandsElementType]> {
  let summary = "MatMul with numpy semantics (1-D promotion, batch broadcasting)";
  let description = [{
    ```mlir
    %c = graph.matmul %a, %b : (tensor<?x8x16xf32>, tensor<16x4xf32>) -> tensor<?x8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);

}

def Graph_PackedMatMulOp : Graph_Op<"packed_matmul", [SameOperandsElementType]> {
  let summary = "MatMul whose right operand is a weight stored in column panels";
  let description = [{
    `lhs` [..., M, K] times a [K, N] matrix stored as `rhs` [N / B, K, B]:
    panel p holds columns [p*B, (p+1)*B) of every row, contiguously. A cache
    tile of the product then reads its weights as one sequential stream
    instead of K strided rows, which is what decoding (M = 1) and prefill are
    bound by. kiln-pack-matmul-weights introduces it for constant weights;
    the artifact stores them packed.

    ```mlir
    %c = graph.packed_matmul %a, %w : (tensor<?x?x2048xf32>, tensor<88x2048x64xf32>) -> tensor<?x?x5632xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, 3DTensorOf<[F32]>:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_QuantizedMatMulOp : Graph_Op<"quantized_matmul"> {
  let summary = "MatMul by a weight quantized to int8 or int4, stored in column panels with its scales";
  let description = [{
    `lhs` [..., M, K] (f32) times a [K, N] weight W stored quantized in
    column panels of width B, as packed_matmul's: W[k, p*B + b] =
    q(p, k, b) * scales[p, k / group_size, b]. With `bits` = 8, `weight` is
    [N / B, K, B] int8, one value per byte; with `bits` = 4 it is
    [N / B, K / 2, B]: the byte at (p, j, b) holds k = 2j in its low nibble
    and k = 2j + 1 in its high nibble, both signed (-8..7). `scales` is
    [N / B, K / group_size, B] (f32 or f16): one scale per output column and
    group of `group_size` consecutive k (group_size = K: one per column).
    The kernel converts each weight to f32 as it streams it into the
    product; no dequantized copy exists. kiln-quantize-weights and
    kiln-fold-qdq introduce it. `columns`, when present, is N for a weight
    whose last panel is padded with zero columns (N not a multiple of B):
    the result has N columns.

    With `dynamic` (bits 8, one group per column), the activations are
    quantized too, per row at run time (symmetric int8, scale max|row| / 127),
    and the product is computed in integers: `weight` is then
    [N / B, K / 2, 2B], the byte at (p, j, 2b + e) holding k = 2j + e of
    column p*B + b, so that each pair of k multiplies as one pair of 16-bit
    lanes (x86 `vpmaddwd`, `vpdpwssd` with VNNI) into 32-bit sums.

    ```mlir
    %c = graph.quantized_matmul %a, %w, %s {bits = 4 : i64, group_size = 64 : i64}
        : (tensor<?x?x2048xf32>, tensor<88x1024x64xi8>, tensor<88x32x64xf16>) -> tensor<?x?x5632xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, 3DTensorOf<[I8]>:$weight, 3DTensorOf<[F32, F16]>:$scales,
                   I64Attr:$bits, I64Attr:$group_size, OptionalAttr<I64Attr>:$columns, UnitAttr:$dynamic);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_IntegerMatMulOp : Graph_Op<"integer_matmul"> {
  let summary = "Integer MatMul by a constant int8 weight in k pairs, 32-bit sums";
  let description = [{
    `lhs` [..., M, K] (i32 whose values fit 16 bits: kiln-fold-integer-matmul
    proves it from 8-bit sources) times a [K, N] int8 weight stored as
    graph.quantized_matmul's `dynamic` form stores it: [N / B, K / 2, 2B],
    the byte at (p, j, 2b + e) holding k = 2j + e of column p*B + b. Exact
    i32 results, as the graph.matmul on i32 it replaces (MatMulInteger,
    QLinearMatMul), computed with 16-bit pair products (x86 vpmaddwd /
    vpdpwssd). `columns` is N when the last panel is padded.

    ```mlir
    %c = graph.integer_matmul %a, %w : (tensor<?x768xi32>, tensor<48x384x128xi8>) -> tensor<?x3072xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, 3DTensorOf<[I8]>:$weight, OptionalAttr<I64Attr>:$columns);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_GemmOp : Graph_Op<"gemm"> {
  let summary = "alpha * op(A) * op(B) + beta * C";
  let description = [{
    2-D matrix product with optional transposes; `c` broadcasts to the result.

    ```mlir
    %y = graph.gemm %a, %b, %c {transB = 1 : i64} : (tensor<?x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b, Optional<AnyRankedTensor>:$c,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha, DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<I64Attr, "0">:$transA, DefaultValuedAttr<I64Attr, "0">:$transB);
  let results = (outs AnyRankedTensor:$result);

}

def Graph_ConvOp : Graph_Op<"conv"> {
  let summary = "N-D convolution (NCHW), groups, pads, strides, dilations";
  let description = [{
    `pads` holds begin values for every spatial axis then end values, as in
    ONNX; the importer turns `auto_pad` into explicit pads. Where the pads
    depend on sizes known at run time only (a dynamic spatial size, or the
    kernel of a weight of dynamic shape), `auto_pad` = "SAME_UPPER" or
    "SAME_LOWER" stays and the pads (then ignored) are computed when the
    kernel runs; the output size is ceil(input / stride). The weight may have
    a dynamic shape (a graph input).

    ```mlir
    %y = graph.conv %x, %w, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<?x3x32x32xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<?x8x32x32xf32>
    %z = graph.conv %x, %v {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_LOWER"}
        : (tensor<?x3x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight, Optional<AnyRankedTensor>:$bias,
                   DefaultValuedAttr<I64Attr, "1">:$group, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   OptionalAttr<StrAttr>:$auto_pad);
  let results = (outs AnyRankedTensor:$result);

}

def Graph_PackedConvOp : Graph_Op<"packed_conv"> {
  let summary = "2-D convolution (group 1) whose weight is stored transposed in column panels";
  let description = [{
    The [Cout, C, kh, kw] weight viewed as W [Cout, K] (K = C*kh*kw in ONNX's
    c, kh, kw order) is stored as W^T [K, Cout] in column panels `weight`
    [Cout / B, K, B]: element (p, k, b) = W[p*B + b, k]. Lowered as patch rows
    col[n, oh*ow, K] times the panels (the packed matmul's tiling and
    microkernel), then written NCHW. kiln-pack-matmul-weights introduces it
    for constant weights; the artifact stores them packed.

    ```mlir
    %y = graph.packed_conv %x, %w, %b {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<1x64x8x8xf32>, tensor<2x576x64xf32>, tensor<128xf32>) -> tensor<1x128x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 3DTensorOf<[F32]>:$weight, Optional<AnyRankedTensor>:$bias,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_ConvTransposeOp : Graph_Op<"conv_transpose"> {
  let summary = "N-D transposed convolution (weight [C_in, C_out/group, k...])";
  let description = [{
    Output size per axis: stride*(in-1) + output_padding + dilation*(k-1) + 1
    - pad_begin - pad_end. The importer turns `output_shape`/`auto_pad` into
    explicit pads; where they depend on sizes known at run time only (a
    dynamic spatial size, or the kernel of a weight of dynamic shape), they
    stay: the output size is then `output_shape` (its spatial sizes) or, with
    `auto_pad` SAME_UPPER/SAME_LOWER, input * stride, and the begin pads are
    computed when the kernel runs (the output grows at the end when the
    size asks for more than the window reaches). The weight may have a
    dynamic shape.

    ```mlir
    %y = graph.conv_transpose %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>}
        : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x11x11xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight, Optional<AnyRankedTensor>:$bias,
                   DefaultValuedAttr<I64Attr, "1">:$group, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$output_padding, OptionalAttr<StrAttr>:$auto_pad,
                   OptionalAttr<DenseI64ArrayAttr>:$output_shape);
  let results = (outs AnyRankedTensor:$result);
}

// --- Resize family (Resize, Upsample) ---
def Graph_ResizeOp : Graph_RefinableOp<"resize", [AttrSizedOperandSegments]> {
  let summary = "Resize (nearest, linear or cubic) with ONNX's coordinate rules; scales, sizes and roi may be run-time values";
  let description = [{
    ONNX Resize: exactly one of `scales` (f32, one per axis) and `sizes`
    (i64, one per axis) gives the output size, floor(input * scale) or the
    size itself; with `sizes` the scale of an axis is size / input. Either
    may be a run-time value: the output dims are then dynamic and computed
    from it when the kernel runs (a constant gives a static type). `roi`
    (start values for every axis, then end values) is read only by
    `coordinate_transformation_mode = "tf_crop_and_resize"`, whose output
    points outside the input are `extrapolation_value`. Cubic uses 4 taps per
    axis with `cubic_coeff_a`; `exclude_outside` drops the taps outside the
    input and renormalizes the others.

    ```mlir
    %s = graph.constant {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %y = graph.resize %x scales %s {mode = "cubic", coordinate_transformation_mode = "half_pixel",
                                   nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.5e-01 : f32,
                                   exclude_outside = 0 : i64, extrapolation_value = 0.0 : f32}
        : (tensor<1x3x4x4xf32>, tensor<4xf32>) -> tensor<1x3x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$roi,
                   Optional<AnyRankedTensor>:$scales, Optional<AnyRankedTensor>:$sizes,
                   StrAttr:$mode, StrAttr:$coordinate_transformation_mode, StrAttr:$nearest_mode,
                   DefaultValuedAttr<F32Attr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<I64Attr, "0">:$exclude_outside,
                   DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`roi` $roi^)? (`scales` $scales^)? (`sizes` $sizes^)? attr-dict `:` functional-type(operands, results)
  }];
}
// --- end Resize family ---

def Graph_InstanceNormOp : Graph_Op<"instance_norm"> {
  let summary = "InstanceNormalization: per (n, c) over the spatial axes";
  let description = [{
    ```mlir
    %y = graph.instance_norm %x, %s, %b {epsilon = 1.0e-05 : f32}
        : (tensor<?x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8x4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale, AnyRankedTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
}

class Graph_PoolOp<string mnemonic, string onnxName> : Graph_Op<mnemonic> {
  let summary = onnxName # " over the spatial axes of an NC... tensor";
  let description = [{
    `pads` are begin values then end values per spatial axis; `ceil_mode`
    rounds the output size up. `auto_pad` = "SAME_UPPER"/"SAME_LOWER" stays
    only where a spatial size is dynamic: the pads (then ignored) are
    computed when the kernel runs, the output size is ceil(input / stride).

    ```mlir
    %y = graph.}] # mnemonic # [{ %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
        : (tensor<1x8x32x32xf32>) -> tensor<1x8x16x16xf32>
    ```
  }];
  let results = (outs AnyRankedTensor:$result);

}

def Graph_MaxPoolOp : Graph_PoolOp<"max_pool", "MaxPool"> {
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "0">:$ceil_mode, OptionalAttr<StrAttr>:$auto_pad);
}

def Graph_AveragePoolOp : Graph_PoolOp<"average_pool", "AveragePool"> {
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                   DefaultValuedAttr<I64Attr, "0">:$count_include_pad, OptionalAttr<StrAttr>:$auto_pad);
}

def Graph_GlobalAveragePoolOp : Graph_Op<"global_average_pool"> {
  let summary = "Mean over all spatial axes, kept as size-1 axes";
  let description = [{
    ```mlir
    %y = graph.global_average_pool %x : (tensor<?x8x7x7xf32>) -> tensor<?x8x1x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);

}

def Graph_BatchNormOp : Graph_Op<"batch_norm"> {
  let summary = "BatchNormalization in inference mode";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` per channel (axis 1).

    ```mlir
    %y = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
        : (tensor<?x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8x4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale, AnyRankedTensor:$bias,
                   AnyRankedTensor:$mean, AnyRankedTensor:$variance,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);

  let hasCanonicalizer = 1;
}

def Graph_LayerNormOp : Graph_Op<"layer_norm"> {
  let summary = "LayerNormalization over the axes from `axis` to the last";
  let description = [{
    ```mlir
    %y, %m, %r = graph.layer_norm %x, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x1xf32>, tensor<?x1xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale, Optional<AnyRankedTensor>:$bias,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  // Mean and InvStdDev keep the normalized axes as size 1, as ONNX defines.
  let results = (outs AnyRankedTensor:$result, AnyRankedTensor:$mean, AnyRankedTensor:$inv_std_dev);

}

def Graph_RmsNormOp : Graph_Op<"rms_norm"> {
  let summary = "RMSNormalization over the axes from `axis` to the last";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale` with the mean over the axes from
    `axis` to the last (ONNX opset 23 RMSNormalization; the scale may be
    absent, meaning 1). kiln-fuse-rms-norm forms it from the Llama export's
    Pow/ReduceMean/Add/Sqrt/Div/Mul chain.

    ```mlir
    %y = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32}
        : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, Optional<AnyRankedTensor>:$scale,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_LogSoftmaxOp : Graph_Op<"log_softmax"> {
  let summary = "LogSoftmax along one axis (opset 13 semantics)";
  let description = [{
    ```mlir
    %y = graph.log_softmax %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_SoftmaxOp : Graph_Op<"softmax"> {
  let summary = "Softmax along one axis (opset 13 semantics)";
  let description = [{
    The importer expresses older opsets' flatten-to-2-D semantics with
    reshapes around this op.

    ```mlir
    %y = graph.softmax %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs AnyRankedTensor:$result);

}

def Graph_AttentionOp : Graph_RefinableOp<"attention", [SameOperandsElementType]> {
  let summary = "Scaled dot-product attention: softmax(Q K^T * scale + mask) V";
  let description = [{
    `query` [B..., Sq, D], `key` [B..., Sk, D] (not transposed), `value`
    [B..., Sk, Dv], optional additive `mask` broadcast numpy-style to
    [B..., Sq, Sk]; the softmax is over the keys. The result is
    [B..., Sq, Dv] with the query's batch dims. Each batch dim of `key` and
    `value` divides the query's: query index b reads key index
    b / (Bq / Bk), which covers broadcasting (Bk = 1) and grouped-query
    attention (several query heads share one key/value head).
    kiln-fuse-attention forms it from MatMul -> scale -> Add -> Softmax ->
    MatMul; its lowering never materializes the Sq x Sk scores. The result
    type may be less static than the inferred one (the fused product's).

    ```mlir
    %o = graph.attention %q, %k, %v, %m {scale = 2.500000e-01 : f32}
        : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$query, RankedTensorOf<[AnyFloat]>:$key,
                   RankedTensorOf<[AnyFloat]>:$value, Optional<RankedTensorOf<[AnyFloat]>>:$mask,
                   DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let results = (outs AnyRankedTensor:$result);
}

class Graph_ReduceOp<string mnemonic, string onnxName> : Graph_Op<mnemonic> {
  let summary = onnxName # " over `axes` (all axes when empty)";
  let description = [{
    ```mlir
    %y = graph.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<I64Attr, "1">:$keepdims);
  let results = (outs AnyRankedTensor:$result);

}
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", "ReduceMean">;
def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", "ReduceSum"> {
  let hasFolder = 1;
}
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", "ReduceMax">;
def Graph_ReduceMinOp : Graph_ReduceOp<"reduce_min", "ReduceMin">;
def Graph_ReduceProdOp : Graph_ReduceOp<"reduce_prod", "ReduceProd"> {
  let hasFolder = 1;
}
def Graph_ReduceL1Op : Graph_ReduceOp<"reduce_l1", "ReduceL1">;
def Graph_ReduceL2Op : Graph_ReduceOp<"reduce_l2", "ReduceL2">;
def Graph_ReduceSumSquareOp : Graph_ReduceOp<"reduce_sum_square", "ReduceSumSquare">;
def Graph_ReduceLogSumOp : Graph_ReduceOp<"reduce_log_sum", "ReduceLogSum">;
def Graph_ReduceLogSumExpOp : Graph_ReduceOp<"reduce_log_sum_exp", "ReduceLogSumExp">;

//===----------------------------------------------------------------------===//
// Data movement and shapes
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant", [ConstantLike]> {
  let summary = "A constant tensor (small values inline, weights as resources)";
  let description = [{
    ```mlir
    %c = graph.constant {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
}

def Graph_ReshapeOp : Graph_RefinableOp<"reshape"> {
  let summary = "Reshape to a shape given as a 1-D i64 tensor";
  let description = [{
    A 0 copies the input's dimension (unless `allowzero`), one -1 is inferred.
    The shape may be computed at run time; its length must be static.

    ```mlir
    %y = graph.reshape %x, %s : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 1DTensorOf<[I64]>:$shape,
                   DefaultValuedAttr<I64Attr, "0">:$allowzero);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

def Graph_RangeOp : Graph_Op<"range", [SameOperandsElementType]> {
  let summary = "start, start+delta, ... below limit, with run-time bounds (ONNX Range)";
  let description = [{
    Scalars in, a 1-D tensor of max(0, ceil((limit - start) / delta)) elements
    out. Constant bounds are folded by the importer; this op carries bounds
    that come from shapes at run time (sequence lengths in decoders).

    ```mlir
    %r = graph.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I16, I32, I64, F32, F64]>:$start, 0DTensorOf<[I16, I32, I64, F32, F64]>:$limit,
                       0DTensorOf<[I16, I32, I64, F32, F64]>:$delta);
  let results = (outs 1DTensorOf<[I16, I32, I64, F32, F64]>:$result);
}

def Graph_ConstantOfShapeOp : Graph_RefinableOp<"constant_of_shape"> {
  let summary = "A tensor of the given (possibly run-time) shape filled with one value";
  let description = [{
    ```mlir
    %y = graph.constant_of_shape %s {value = dense<0.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[I64]>:$shape, ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose"> {
  let summary = "Permutes the axes";
  let description = [{
    ```mlir
    %y = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);

}

def Graph_FlattenOp : Graph_Op<"flatten"> {
  let summary = "Collapses axes [0, axis) and [axis, rank) into a 2-D tensor";
  let description = [{
    ```mlir
    %y = graph.flatten %x {axis = 1 : i64} : (tensor<?x8x1x1xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [SameOperandsElementType]> {
  let summary = "Concatenates tensors along `axis`";
  let description = [{
    ```mlir
    %y = graph.concat %a, %b {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// KV cache (decoders): a runtime-owned buffer with room for the whole context
//===----------------------------------------------------------------------===//

def Graph_KvCacheAppendOp : Graph_Op<"kv_cache_append"> {
  let summary = "Writes new entries into a KV cache in place and views the valid prefix";
  let description = [{
    `cache` is a buffer with room for the whole context along `axis`; the
    first `position` entries along it are valid. The op writes `update` at
    [position, position + n) along `axis` (n = update's size there) and
    returns the view of entries [0, position + n). It means
    `concat(cache[0:position], update)` without copying the cache: the
    buffer is written in place and only the new entries move.

    ```mlir
    %kv = graph.kv_cache_append %cache, %new, %pos {axis = 2 : i64}
        : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>) -> tensor<?x2x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$cache, AnyRankedTensor:$update, 0DTensorOf<[I64]>:$position, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_KvCachePrefixOp : Graph_Op<"kv_cache_prefix"> {
  let summary = "Views the first `position` entries of a KV cache along `axis`";
  let description = [{
    The entries a model saw as its `past` input before the cache replaced it.

    ```mlir
    %past = graph.kv_cache_prefix %cache, %pos {axis = 2 : i64}
        : (tensor<?x2x?x16xf32>, tensor<i64>) -> tensor<?x2x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$cache, 0DTensorOf<[I64]>:$position, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_GatherOp : Graph_Op<"gather"> {
  let summary = "Gathers slices of `data` along `axis` at `indices` (negative wraps)";
  let description = [{
    ```mlir
    %y = graph.gather %data, %idx {axis = 0 : i64} : (tensor<100x16xf32>, tensor<?x4xi64>) -> tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, TensorOf<[I32, I64]>:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

def Graph_SliceOp : Graph_Op<"slice"> {
  let summary = "Strided slice with constant starts/ends/axes/steps (ONNX clamping rules)";
  let description = [{
    ```mlir
    %y = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 1>, steps = array<i64: 1>}
        : (tensor<4x8xf32>) -> tensor<4x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                   DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

def Graph_DynamicSliceOp : Graph_Op<"dynamic_slice"> {
  let summary = "Slice whose starts and ends are run-time values (axes and steps constant)";
  let description = [{
    The sliced axes are dynamic in the result; ONNX clamping is applied at
    run time.

    ```mlir
    %y = graph.dynamic_slice %x, %s, %e {axes = array<i64: 1>, steps = array<i64: 1>}
        : (tensor<4x8xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I32, I64]>:$starts, TensorOf<[I32, I64]>:$ends,
                   DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_SqueezeOp : Graph_Op<"squeeze"> {
  let summary = "Removes size-1 axes (`axes`, or every static size-1 axis when empty)";
  let description = [{
    ```mlir
    %y = graph.squeeze %x {axes = array<i64: 0>} : (tensor<1x4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

def Graph_UnsqueezeOp : Graph_Op<"unsqueeze"> {
  let summary = "Inserts size-1 axes at `axes` (positions in the result)";
  let description = [{
    ```mlir
    %y = graph.unsqueeze %x {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<1x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);

  let hasFolder = 1;
}

def Graph_ShapeOp : Graph_Op<"shape"> {
  let summary = "The input's shape as a 1-D i64 tensor, axes [start, end)";
  let description = [{
    ```mlir
    %s = graph.shape %x {start = 0 : i64, end = 2 : i64} : (tensor<?x4xf32>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DefaultValuedAttr<I64Attr, "0">:$start,
                   OptionalAttr<I64Attr>:$end);
  let results = (outs 1DTensorOf<[I64]>:$result);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Run-time shape operands (shapeinputs): ONNX inputs that shape a result
// (axes, steps, repeats, pads, split sizes) when the model computes them.
// Their values are read by the generated host code; the result dims they
// decide are dynamic. A bad value never reads or writes outside a buffer:
// it is clamped, ignored, or gives an empty result (each op says which).
//===----------------------------------------------------------------------===//

def Graph_DynamicStridedSliceOp : Graph_Op<"dynamic_strided_slice"> {
  let summary = "Slice whose starts, ends, axes and steps are all run-time values";
  let description = [{
    The four 1-D operands have one static length n. Every result dim is
    dynamic (which axes are sliced is only known at run time). Axes wrap
    from the end; an axis still out of range is ignored, a repeated axis
    takes its last entry, and a step of 0 gives an empty result. Starts and
    ends follow ONNX clamping at run time.

    ```mlir
    %y = graph.dynamic_strided_slice %x, %s, %e, %a, %st
        : (tensor<20x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I32, I64]>:$starts, TensorOf<[I32, I64]>:$ends,
                   TensorOf<[I32, I64]>:$axes, TensorOf<[I32, I64]>:$steps);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DynamicSqueezeOp : Graph_Op<"dynamic_squeeze"> {
  let summary = "Removes the size-1 axes named by a run-time axes tensor";
  let description = [{
    `axes` (1-D, static length n) names n distinct axes, negative ones
    counting from the end: the result has rank - n dims, all dynamic. When
    they are not n distinct axes of size 1, the result is [total, 1, ...]
    (the same elements); a rank-0 result is then the first element, or 0
    for an empty input.

    ```mlir
    %y = graph.dynamic_squeeze %x, %axes : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I32, I64]>:$axes);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DynamicUnsqueezeOp : Graph_Op<"dynamic_unsqueeze"> {
  let summary = "Inserts size-1 axes at positions given by a run-time axes tensor";
  let description = [{
    `axes` (1-D, static length n) names positions in the rank + n result,
    negative ones counting from the end; all result dims are dynamic.
    Repeated or out-of-range positions insert the n axes in front instead.

    ```mlir
    %y = graph.dynamic_unsqueeze %x, %axes : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<?x?x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I32, I64]>:$axes);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DynamicTileOp : Graph_Op<"dynamic_tile"> {
  let summary = "Repeats the input along each axis as often as a run-time repeats tensor says";
  let description = [{
    `repeats` holds one value per axis; a negative repeat counts as 0.

    ```mlir
    %y = graph.dynamic_tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 1DTensorOf<[I64]>:$repeats);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DynamicPadOp : Graph_Op<"dynamic_pad"> {
  let summary = "Pad with run-time pads (constant, edge or reflect mode)";
  let description = [{
    `pads` holds 2 * rank values, begin values then end values; a negative
    pad removes elements (ONNX allows it). `value` (one element) fills in
    constant mode. Reflection repeats as far as the pads reach. Edge and
    reflect modes of an input with an empty axis give an empty result.

    ```mlir
    %y = graph.dynamic_pad %x, %p, %v {mode = "edge"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 1DTensorOf<[I64]>:$pads, AnyRankedTensor:$value, StrAttr:$mode);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DynamicReduceOp : Graph_Op<"dynamic_reduce"> {
  let summary = "A Reduce* op (`kind`) over axes given as a run-time tensor";
  let description = [{
    `kind` is one of sum, mean, max, min, prod, l1, l2, sum_square,
    log_sum, log_sum_exp. `axes` (1-D, static length n > 0) names the
    reduced axes, negative ones counting from the end. With keepdims the
    result has the input's rank (a static size-1 dim stays static), without
    it rank - n; the other dims are dynamic. An out-of-range axis is
    ignored; without keepdims, axes that do not name n distinct axes reduce
    the first n axes instead (the rank must come out as declared).

    ```mlir
    %y = graph.dynamic_reduce %x, %axes {kind = "sum", keepdims = 0 : i64} : (tensor<3x2x2xf32>, tensor<1xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 1DTensorOf<[I64]>:$axes, StrAttr:$kind,
                   DefaultValuedAttr<I64Attr, "1">:$keepdims);
  let results = (outs AnyRankedTensor:$result);
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


// newops: pooling with indices, linear algebra, sampling
//===----------------------------------------------------------------------===//

def Graph_MaxPoolWithIndicesOp : Graph_Op<"max_pool_with_indices"> {
  let summary = "MaxPool that also returns where each maximum was (ONNX MaxPool's Indices)";
  let description = [{
    The values are those of `graph.max_pool`. Each index is the flat i64
    position of the maximum in the unpadded input: row-major
    ((n * C + c) * D1 + d1) * D2 + d2 ... when `storage_order` is 0, spatial
    axes column-major (n * C + c) * D1 * D2 + d2 * D1 + d1 when it is 1. The
    first maximum of a window in row-major window order wins ties.

    ```mlir
    %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, storage_order = 0 : i64}
        : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                   DefaultValuedAttr<I64Attr, "0">:$storage_order);
  let results = (outs AnyRankedTensor:$values, TensorOf<[I64]>:$indices);
}

def Graph_MaxUnpoolOp : Graph_RefinableOp<"max_unpool"> {
  let summary = "Zeros of `shape` with each input element written at its flat index (ONNX MaxUnpool)";
  let description = [{
    out = zeros(shape); out.flat[indices[i]] = input[i] for every element,
    later elements winning; an index outside the output is skipped. `shape`
    (1-D i64, a constant or a run-time value) gives the result's rank and,
    when constant, its sizes. The importer turns MaxPool's indices into
    indices of this shape.

    ```mlir
    %y = graph.max_unpool %x, %i, %s : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorOf<[I64]>:$indices, 1DTensorOf<[I64]>:$shape);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_DetOp : Graph_Op<"det"> {
  let summary = "Determinant of each square matrix in the two innermost axes (ONNX Det)";
  let description = [{
    Input [..., M, M] of floats, result [...]. Each matrix is factored by
    Gaussian elimination with partial pivoting (LU); the determinant is the
    product of the pivots, negated per row swap.

    ```mlir
    %d = graph.det %x : (tensor<3x2x2xf32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_GridSampleOp : Graph_Op<"grid_sample"> {
  let summary = "Samples an NCHW input at the grid's normalized (x, y) points (ONNX GridSample)";
  let description = [{
    `grid` is [N, H_out, W_out, 2] with x, y in [-1, 1] (beyond: padding);
    the result is [N, C, H_out, W_out]. `mode` is bilinear, nearest (ties to
    even) or bicubic (A = -0.75); `padding_mode` zeros, border or reflection;
    `align_corners` says whether -1 and 1 are the centres (1) or the outer
    edges (0) of the corner pixels. PyTorch's grid_sample defines the details.

    ```mlir
    %y = graph.grid_sample %x, %g {mode = "bilinear", padding_mode = "zeros", align_corners = 0 : i64}
        : (tensor<1x1x4x4xf32>, tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$grid,
                   DefaultValuedAttr<StrAttr, "\"bilinear\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"zeros\"">:$padding_mode,
                   DefaultValuedAttr<I64Attr, "0">:$align_corners);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_RoiAlignOp : Graph_Op<"roi_align"> {
  let summary = "Average or max of bilinear samples over each region's output bins (ONNX RoiAlign)";
  let description = [{
    `rois` [R, 4] holds (x1, y1, x2, y2) in input coordinates times
    `spatial_scale`, `batch_indices` [R] the image of each; the result is
    [R, C, output_height, output_width]. Each bin averages (or maxes)
    sampling_ratio x sampling_ratio bilinear samples (0: ceil(region size /
    output size) per axis, decided per region at run time).
    `coordinate_transformation_mode` half_pixel shifts by -0.5;
    output_half_pixel does not and makes each region at least 1 x 1.

    ```mlir
    %y = graph.roi_align %x, %rois, %idx {mode = "avg", output_height = 5 : i64, output_width = 5 : i64, sampling_ratio = 2 : i64, spatial_scale = 1.0 : f32, coordinate_transformation_mode = "half_pixel"}
        : (tensor<1x1x10x10xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x1x5x5xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$rois, TensorOf<[I64]>:$batch_indices,
                   DefaultValuedAttr<StrAttr, "\"avg\"">:$mode,
                   DefaultValuedAttr<I64Attr, "1">:$output_height,
                   DefaultValuedAttr<I64Attr, "1">:$output_width,
                   DefaultValuedAttr<I64Attr, "0">:$sampling_ratio,
                   DefaultValuedAttr<F32Attr, "1.0">:$spatial_scale,
                   DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coordinate_transformation_mode);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Data-dependent result shapes (datadep family: NonZero, Compress, Unique,
// NonMaxSuppression). Their result dims are `?` even for static operands: the
// lowering counts in a first host pass, allocates, then fills
// (docs/dynamic-shapes.md).
//===----------------------------------------------------------------------===//

def Graph_NonZeroOp : Graph_Op<"non_zero"> {
  let summary = "The coordinates of the non-zero elements, one column each, in row-major order (ONNX NonZero)";
  let description = [{
    The result has one row per input axis and one column per non-zero element;
    the number of columns is known only at run time.

    ```mlir
    %y = graph.non_zero %x : (tensor<2x2xi1>) -> tensor<2x?xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs 2DTensorOf<[I64]>:$result);
}

def Graph_CompressOp : Graph_Op<"compress"> {
  let summary = "The slices along `axis` (or elements of the flattened input) where `condition` is true (ONNX Compress)";
  let description = [{
    Without `axis` the input is read flattened and the result is 1-D. A
    condition shorter than the axis selects nothing beyond its end; a longer
    one is an error when both lengths are static, and its tail is ignored
    otherwise. The selected axis is dynamic in the result.

    ```mlir
    %y = graph.compress %x, %c {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<?x2xf32>
    %z = graph.compress %x, %d : (tensor<3x2xf32>, tensor<5xi1>) -> tensor<?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 1DTensorOf<[I1]>:$condition, OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_UniqueOp : Graph_Op<"unique"> {
  let summary = "Distinct elements (or slices along `axis`) with first indices, inverse indices and counts (ONNX Unique)";
  let description = [{
    `y` holds the distinct elements of the flattened input, or the distinct
    slices along `axis`; `indices` the position of each one's first
    occurrence, `inverse_indices` the position in `y` of every input element
    (slice), `counts` how often each occurs. With `sorted` the distinct values
    ascend (slices compare lexicographically, in row-major order), otherwise
    they keep the order of first occurrence. Floats compare with IEEE
    equality, so every NaN is distinct.

    ```mlir
    %y, %i, %inv, %n = graph.unique %x {axis = 0 : i64, sorted = 1 : i64}
        : (tensor<3x3xf32>) -> (tensor<?x3xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<I64Attr>:$axis,
                   DefaultValuedAttr<I64Attr, "1">:$sorted);
  let results = (outs AnyRankedTensor:$y, 1DTensorOf<[I64]>:$indices, 1DTensorOf<[I64]>:$inverse_indices,
                 1DTensorOf<[I64]>:$counts);
}

def Graph_NonMaxSuppressionOp : Graph_Op<"non_max_suppression"> {
  let summary = "Greedy non-maximum suppression per batch and class: [batch, class, box] rows (ONNX NonMaxSuppression)";
  let description = [{
    `boxes` is [batches, boxes, 4] (corners [y1, x1, y2, x2] in any diagonal
    order, or [x_center, y_center, width, height] with `center_point_box` =
    1), `scores` [batches, classes, boxes]. The three scalars (one-element
    tensors, which may be run-time inputs) are the most boxes kept per batch
    and class (<= 0 keeps none), the IoU above which a box is suppressed, and
    the score a box must exceed; the importer supplies ONNX's defaults (0, 0
    and -inf). Boxes are taken by descending score, ties to the lower index;
    a box of zero area overlaps nothing. Rows are ordered by batch, then
    class, then selection.

    ```mlir
    %s = graph.non_max_suppression %boxes, %scores, %max, %iou, %score {center_point_box = 0 : i64}
        : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
    ```
  }];
  let arguments = (ins 3DTensorOf<[F32]>:$boxes, 3DTensorOf<[F32]>:$scores,
                   TensorOf<[I64]>:$max_output_boxes_per_class, TensorOf<[F32]>:$iou_threshold,
                   TensorOf<[F32]>:$score_threshold, DefaultValuedAttr<I64Attr, "0">:$center_point_box);
  let results = (outs 2DTensorOf<[I64]>:$selected_indices);
}

//===----------------------------------------------------------------------===//
// Text features (tfidf family: TfIdfVectorizer). The pool of n-grams is an
// attribute: it is part of the model, small next to its weights, and the
// lowering turns it into constant tables.
//===----------------------------------------------------------------------===//

def Graph_TfIdfVectorizerOp : Graph_Op<"tfidf_vectorizer"> {
  let summary = "Counts the pool's n-grams in each row of integer tokens (ONNX TfIdfVectorizer)";
  let description = [{
    Input [C] or [N, C] of i32/i64 tokens; result [O] or [N, O] f32 with
    O = max(ngram_indexes) + 1. `pool_int64s` holds the n-grams back to
    back: the (i+1)-grams start at `ngram_counts[i]`, and the k-th n-gram of
    the pool counts into output column `ngram_indexes[k]`. An n-gram of
    length n in [min_gram_length, max_gram_length] matches at a start
    position and every skip s in [0, max_skip_count] whose n tokens, s + 1
    apart, are all in the row; unigrams are counted once, not per skip (as
    ONNX Runtime). `mode` TF gives the counts; TFIDF multiplies them by
    `weights`; IDF gives the weight where the count is positive, else 0
    (weights default to 1; like ONNX Runtime, `weights[o]` scales output
    column o).

    ```mlir
    %y = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 2 : i64,
        max_skip_count = 0 : i64, ngram_counts = array<i64: 0, 2>, ngram_indexes = array<i64: 0, 1, 2>,
        pool_int64s = array<i64: 4, 5, 4, 5>} : (tensor<2x6xi32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                   DefaultValuedAttr<StrAttr, "\"TF\"">:$mode,
                   I64Attr:$min_gram_length, I64Attr:$max_gram_length, I64Attr:$max_skip_count,
                   DenseI64ArrayAttr:$ngram_counts, DenseI64ArrayAttr:$ngram_indexes,
                   DenseI64ArrayAttr:$pool_int64s,
                   DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$weights);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Strings family: string tensors (ONNX dtype 8) have i128 elements, the image
// of kiln_abi_string {data pointer, byte size}; ops that only move elements
// work on them unchanged. The ops here make or read string bytes; they lower
// to host loops calling the runtime's string kernels (LowerStrings.cpp).
//===----------------------------------------------------------------------===//

def Graph_StringCastOp : Graph_Op<"string_cast"> {
  let summary = "Cast between float and string elements (ONNX Cast/CastLike with STRING)";
  let description = [{
    Exactly one of the input and `to` is a string (i128); the other is f32
    or f64. To string gives numpy's str() of the value (shortest round-trip
    digits, '0.039187793', '1e-05', 'nan', 'inf'); from string parses
    decimal and exponent forms, 'NaN' and '[+-]INF' in any case, and fails
    the run on text that is no number.

    ```mlir
    %s = graph.string_cast %x {to = i128} : (tensor<3x4xf32>) -> tensor<3x4xi128>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TypeAttr:$to);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_StringNormalizerOp : Graph_Op<"string_normalizer"> {
  let summary = "Drops stopwords and changes case (ONNX StringNormalizer)";
  let description = [{
    Input [C] or [1, C] strings. Elements equal to a stopword (ignoring case
    unless `is_case_sensitive`) are removed, the others keep their order and
    are lower-cased, upper-cased or kept (`case_change_action` LOWER, UPPER,
    NONE). The result is [K] or [1, K] with K data-dependent; when every
    element is removed it is [1] (or [1, 1]) holding "". A 2-D input whose
    first dim is unknown at compile time (dynamic-shape mode) is read as one
    row of all its elements; ONNX allows only [1, C]. `locale` may be
    empty or an en_US/C locale: case mapping is the runtime's (ASCII,
    Latin-1, Greek and Cyrillic letters).

    ```mlir
    %y = graph.string_normalizer %x {case_change_action = "UPPER", is_case_sensitive = false,
        stopwords = ["monday"], locale = ""} : (tensor<1x6xi128>) -> tensor<1x?xi128>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                   DefaultValuedAttr<StrAttr, "\"NONE\"">:$case_change_action,
                   DefaultValuedAttr<BoolAttr, "false">:$is_case_sensitive,
                   DefaultValuedAttr<StrArrayAttr, "{}">:$stopwords,
                   DefaultValuedAttr<StrAttr, "\"\"">:$locale);
  let results = (outs AnyRankedTensor:$result);
}
// end strings family

#endif // KILN_GRAPH_OPS
