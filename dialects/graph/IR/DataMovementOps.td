// Graph ops that move data and compute shapes: constants, reshape, transpose, concat, gather, slice, squeeze.
#ifndef KILN_GRAPH_DATA_MOVEMENT_OPS
#define KILN_GRAPH_DATA_MOVEMENT_OPS

include "dialects/graph/IR/GraphBase.td"

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

#endif // KILN_GRAPH_DATA_MOVEMENT_OPS
