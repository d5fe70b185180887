// Graph ops on decoders' KV caches: runtime-owned buffers with room for the whole context.
#ifndef KILN_GRAPH_KV_CACHE_OPS
#define KILN_GRAPH_KV_CACHE_OPS

include "dialects/graph/IR/GraphBase.td"

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

    With `row_positions` (one entry per row of dim 0, the batch), row r
    writes its update at [row_positions[r], row_positions[r] + n) instead:
    each sequence of a batch is appended at its own length, so a batch of
    sequences of different lengths needs no left padding. `position` is then
    the longest row's length: the view still covers [0, position + n), and
    the entries past a row's own length are the caller's to mask. A row
    whose write would leave the view (a row position past `position`: a
    row that sits the step out) is not written.

    ```mlir
    %kv = graph.kv_cache_append %cache, %new, %pos {axis = 2 : i64}
        : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>) -> tensor<?x2x?x16xf32>
    %kv2 = graph.kv_cache_append %cache, %new, %pos, %rows {axis = 2 : i64}
        : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>, tensor<?xi64>) -> tensor<?x2x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$cache, AnyRankedTensor:$update, 0DTensorOf<[I64]>:$position,
                       Optional<1DTensorOf<[I64]>>:$row_positions, I64Attr:$axis);
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

#endif // KILN_GRAPH_KV_CACHE_OPS
