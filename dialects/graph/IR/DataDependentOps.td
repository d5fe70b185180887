// Graph ops whose result sizes depend on the data: NonZero, Compress, Unique, NonMaxSuppression.
#ifndef KILN_GRAPH_DATA_DEPENDENT_OPS
#define KILN_GRAPH_DATA_DEPENDENT_OPS

include "dialects/graph/IR/GraphBase.td"

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

#endif // KILN_GRAPH_DATA_DEPENDENT_OPS
