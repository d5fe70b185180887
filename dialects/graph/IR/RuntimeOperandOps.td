// Graph ops whose shape operands (axes, steps, repeats, pads, split sizes) are computed at run time.
#ifndef KILN_GRAPH_RUNTIME_OPERAND_OPS
#define KILN_GRAPH_RUNTIME_OPERAND_OPS

include "dialects/graph/IR/GraphBase.td"

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

#endif // KILN_GRAPH_RUNTIME_OPERAND_OPS
