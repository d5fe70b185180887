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

def Graph_KvCachePagedWriteOp : Graph_Op<"kv_cache_paged_write"> {
  let summary = "Writes new entries into a paged KV cache (a pool of blocks) in place";
  let description = [{
    `pool` holds blocks of `block` entries along `axis` (its static size
    there); dim 0 counts the blocks. Row r of `update` (dim 0: the batch)
    goes to positions [row_positions[r], row_positions[r] + n) of sequence
    r, position q living in block `block_table[r, q / block]` at offset
    `q % block`: vLLM's PagedAttention layout, so a sequence takes blocks as
    it grows and frees them when it ends. A row is written only where its
    positions lie in [0, position + n) (a row past `position` sits the step
    out) and its blocks in the table and the pool. Returns the pool.

    ```mlir
    %pool2 = graph.kv_cache_paged_write %pool, %new, %pos, %rows, %table {axis = 2 : i64}
        : (tensor<?x2x16x8xf32>, tensor<?x2x?x8xf32>, tensor<i64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<?x2x16x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$pool, AnyRankedTensor:$update, 0DTensorOf<[I64]>:$position,
                       1DTensorOf<[I64]>:$row_positions, 2DTensorOf<[I64]>:$block_table, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Graph_KvCachePagedViewOp : Graph_Op<"kv_cache_paged_view"> {
  let summary = "Gathers each sequence's entries [0, position (+ n)) of a paged KV cache";
  let description = [{
    The contiguous cache a model's attention reads, [batch, .., length, ..]:
    entry q of row r is `pool[block_table[r, q / block], .., q % block, ..]`.
    `length` is `position`, plus the size of `update` along `axis` when given
    (the view after a kv_cache_paged_write of it). The fused attention reads
    the pool through the table instead (kiln's attention lowering), so the
    gather is only materialized for other readers.

    ```mlir
    %kv = graph.kv_cache_paged_view %pool2, %table, %pos, %new {axis = 2 : i64}
        : (tensor<?x2x16x8xf32>, tensor<?x?xi64>, tensor<i64>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$pool, 2DTensorOf<[I64]>:$block_table, 0DTensorOf<[I64]>:$position,
                       Optional<AnyRankedTensor>:$update, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

#endif // KILN_GRAPH_KV_CACHE_OPS
