// Graph ops: contractions and neural-network ops (conv, pooling, normalization, softmax, attention, reductions).
#ifndef KILN_GRAPH_NEURAL_NETWORK_OPS
#define KILN_GRAPH_NEURAL_NETWORK_OPS

include "dialects/graph/IR/GraphBase.td"

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
    the artifact stores them packed. A 4-D `rhs` [E, N / B, K, B] holds one
    such matrix per index of the lhs's leading dim E (`lhs` [E, ..., M, K]):
    E products in one launch (kiln-winograd-convs' per-tile-element products).

    ```mlir
    %c = graph.packed_matmul %a, %w : (tensor<?x?x2048xf32>, tensor<88x2048x64xf32>) -> tensor<?x?x5632xf32>
    %d = graph.packed_matmul %v, %u : (tensor<16x?x49x64xf32>, tensor<16x1x64x64xf32>) -> tensor<16x?x49x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, TensorRankOf<[F32], [3, 4]>:$rhs);
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
    for constant weights; the artifact stores them packed. With
    `channels_last` the input and output are NHWC and K runs in (kh, kw, c)
    order (the panels of an HWIO weight, from graph.nhwc_conv).

    ```mlir
    %y = graph.packed_conv %x, %w, %b {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<1x64x8x8xf32>, tensor<2x576x64xf32>, tensor<128xf32>) -> tensor<1x128x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, 3DTensorOf<[F32]>:$weight, Optional<AnyRankedTensor>:$bias,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   UnitAttr:$channels_last);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_NhwcConvOp : Graph_Op<"nhwc_conv"> {
  let summary = "2-D convolution over channels-last tensors (NHWC input and output, HWIO weight)";
  let description = [{
    The same convolution as `graph.conv` with the channels innermost: input
    [N, H, W, C], weight [kh, kw, C / group, Cout], output [N, OH, OW, Cout];
    `pads` are begin values then end values for H and W. kiln-channels-last
    forms it on x86 (the weight permuted at compile time): a group-1 one
    becomes a channels-last graph.packed_conv, whose patch rows are then
    contiguous runs of channels; a depthwise one (group = C = Cout) is
    lowered directly, vectorized over the channels.

    ```mlir
    %y = graph.nhwc_conv %x, %w, %b {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<1x8x8x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x8x8x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight, Optional<AnyRankedTensor>:$bias,
                   DefaultValuedAttr<I64Attr, "1">:$group, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_WinogradInputOp : Graph_Op<"winograd_input"> {
  let summary = "Winograd F(m x m, 3 x 3) input transform of a channels-last tensor";
  let description = [{
    The first step of a 3x3 stride-1 convolution computed with Winograd's
    minimal filtering (kiln-winograd-convs). The output [OH, OW] of the
    convolution with `pads` (begin H, W then end H, W) is cut into tiles of
    `tile` x `tile` positions (m = 2 or 4; the last row and column of tiles
    may reach past OH, OW). Tile (ty, tx) reads the a x a window (a = m + 2)
    of the zero-padded input d[i][j] = x[n, m*ty + i - pads[0], m*tx + j -
    pads[1], c] and gives V = B^T d B (B as in `dialects/graph/IR/Winograd.h`).
    The result [a * a, N, TH * TW, C] holds V[e1][e2] of every tile at
    [e1 * a + e2, n, ty * TW + tx] (TH = ceil(OH / m), TW = ceil(OW / m)):
    each of its a * a leading slices is one product's lhs. Static H, W, C.

    ```mlir
    %v = graph.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>}
        : (tensor<1x8x8x32xf32>) -> tensor<16x1x16x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$tile, DenseI64ArrayAttr:$pads);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_WinogradOutputOp : Graph_Op<"winograd_output"> {
  let summary = "Winograd F(m x m, 3 x 3) output transform: tiles back to a channels-last tensor";
  let description = [{
    The last step of graph.winograd_input's convolution: `products`
    [a * a, N, TH * TW, K] holds the a x a element-wise products M[e1][e2] of
    every tile (the transformed input times the transformed weight U =
    G g G^T, contracted over the input channels), and the output is Y =
    A^T M A per tile, cut to `height` x `width` positions, plus the optional
    `bias` [K]: [N, height, width, K].

    ```mlir
    %y = graph.winograd_output %p, %b {tile = 2 : i64, height = 8 : i64, width = 8 : i64}
        : (tensor<16x1x16x48xf32>, tensor<48xf32>) -> tensor<1x8x8x48xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$products, Optional<AnyRankedTensor>:$bias,
                   I64Attr:$tile, I64Attr:$height, I64Attr:$width);
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

def Graph_NhwcPoolOp : Graph_Op<"nhwc_pool"> {
  let summary = "2-D max or average pooling over a channels-last [N, H, W, C] tensor";
  let description = [{
    `kind` is "max" or "average"; `pads` are begin H, W then end H, W (the
    end pads include the windows that ceil_mode adds). An average divides
    by the window size: kiln-channels-last forms one only where every
    window counts kh*kw elements (no padding, or padding counted).

    ```mlir
    %y = graph.nhwc_pool %x {kind = "max", kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
        : (tensor<1x112x112x32xf32>) -> tensor<1x56x56x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$kind, DenseI64ArrayAttr:$kernel_shape,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations);
  let results = (outs AnyRankedTensor:$result);
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

def Graph_RotaryOp : Graph_Op<"rotary"> {
  let summary = "Rotary position embedding of the rotate-half form: x * cos + rotate_half(x) * sin";
  let description = [{
    Along the last axis of size H (even): `rotate_half(x)[i]` is `-x[i + H/2]`
    for `i < H/2` and `x[i - H/2]` after, so the result is
    `x * cos + rotate_half(x) * sin` with `cos` and `sin` broadcast to `x`'s
    shape (ONNX opset 23 RotaryEmbedding, non-interleaved, applied to
    precomputed tables). kiln-fuse-rotary forms it from the Slice / Neg /
    Concat / Mul / Mul / Add chain of the Llama exports: one loop instead of
    six, and no slices or concat in between.

    ```mlir
    %y = graph.rotary %x, %cos, %sin
        : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$cos,
                   RankedTensorOf<[AnyFloat]>:$sin);
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
// Pooling with indices, linear algebra, sampling
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

#endif // KILN_GRAPH_NEURAL_NETWORK_OPS
