// Graph ops that make or read string bytes: StringCast, StringNormalizer.
#ifndef KILN_GRAPH_STRING_OPS
#define KILN_GRAPH_STRING_OPS

include "dialects/graph/IR/GraphBase.td"

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

#endif // KILN_GRAPH_STRING_OPS
