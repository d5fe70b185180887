// Graph-level passes.
#ifndef KILN_PASSES_GRAPH
#define KILN_PASSES_GRAPH

include "mlir/Pass/PassBase.td"

def OutlineWeightsPass : Pass<"kiln-outline-weights", "::mlir::ModuleOp"> {
  let summary = "Turn large constants into @main arguments backed by the artifact's weights";
  let description = [{
    Weights must never be copied into the code: each graph.constant above
    `min-elements` elements becomes a trailing argument of @main, and the
    module records the constants (by reference) in `kiln.weights` so that the
    artifact writer streams them, aligned, into the weights section. The
    runtime passes a pointer into the mapped artifact for each.
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", "64",
           "Constants with more elements than this become weights">
  ];
}

def TieSymbolicDimsPass : Pass<"kiln-tie-symbolic-dims", "::mlir::ModuleOp"> {
  let summary = "Give one symbol to the dynamic input dims the graph requires to be equal";
  let description = [{
    Kernels trust that dynamic dims which meet in an elementwise op, a matrix
    product's contraction or a normalization are equal. This analysis follows
    those meetings through the graph (union-find over value dims) and, for
    every group of graph-input dims that must agree, writes one symbol into
    their `kiln.dims` (the first name the model gave, else `dim_<k>`). The
    runtime checks equal symbols across inputs before running anything, so a
    request that breaks the promise gets an error naming both inputs instead
    of reading out of bounds.
  }];
}

def LastPositionLogitsPass : Pass<"kiln-last-position-logits", "::mlir::ModuleOp"> {
  let summary = "Compute a decoder's logits for its last N positions only (N a run-time input)";
  let description = [{
    Generation reads the logits of each sequence's last position (of its last
    K + 1 when it verifies K speculated tokens); a prompt of S tokens otherwise
    pays S products with the output head ([H, vocab], the largest weight of a
    small model). When the output named `logits` is a matmul of a
    [batch, sequence, H] hidden state read by nothing else, the hidden state is
    sliced to its last N positions first, N being a new int64 scalar input
    `kiln.logit_rows` (the generator feeds it; ONNX clamping keeps every
    position when N exceeds the sequence), and `logits` becomes
    [batch, min(N, sequence), vocab]. Only when kiln-kv-cache-in-place found a
    cache (an argument marked `kiln.kv_cache`: the generator's interface); a
    forward pass without one, or `kiln-compile --kv-cache=false`, keeps every
    position and gets no input.
  }];
}

def KvCacheInPlacePass : Pass<"kiln-kv-cache-in-place", "::mlir::ModuleOp"> {
  let summary = "Turn concat(past, new) -> present into in-place writes to a runtime-owned KV cache";
  let description = [{
    Decoders exported with past key/values copy the whole cache every step:
    `present = concat(past, new)` is both an output and the attention's
    input. For every graph input used that way (the concat returned as an
    output and also consumed by the graph), this pass makes the input a cache
    buffer with room for the whole context (its axis becomes the symbol
    `kv_capacity`), adds one scalar input `kiln.past_length` (entries already
    in every cache, the read extent), and, where every cache has its batch at
    dim 0, one `kiln.row_positions` input [batch] (where each row appends: its
    own length, so sequences of different lengths share a step without left
    padding), writes the new entries in place with
    `graph.kv_cache_append` (which also views the valid prefix for the
    attention) and drops the `present` outputs. Other readers of `past` get
    `graph.kv_cache_prefix`. The runtime owns the caches and advances the
    positions; inputs are marked `kiln.kv_cache` / `kiln.kv_position` /
    `kiln.kv_row_positions`.

    With `block-size` N > 0 the caches are paged (vLLM's PagedAttention): each
    becomes a pool of blocks of N entries, `[kv_blocks, .., N, ..]`, and one
    input `kiln.block_table` [batch, kv_blocks_per_sequence] says which block
    holds each sequence's entries [N * i, N * (i + 1)).
    `graph.kv_cache_paged_write` appends, `graph.kv_cache_paged_view` gives the
    attention (and other readers of `past`) each sequence's entries. With 0,
    each sequence's cache is one contiguous row of a `[batch, .., kv_capacity,
    ..]` buffer: the one-block case, its table implicit (row r is block r).
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "0",
           "Entries per block of a paged cache; 0: one contiguous row per sequence">
  ];
}

#endif
