// Graph ops on text features: TfIdfVectorizer.
#ifndef KILN_GRAPH_TEXT_FEATURE_OPS
#define KILN_GRAPH_TEXT_FEATURE_OPS

include "dialects/graph/IR/GraphBase.td"

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

#endif // KILN_GRAPH_TEXT_FEATURE_OPS
