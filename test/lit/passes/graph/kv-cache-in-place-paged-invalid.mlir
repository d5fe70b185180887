// kiln-kv-cache-in-place with block-size refuses caches whose pool it could not size.
// RUN: kiln-opt %s -split-input-file -kiln-kv-cache-in-place="block-size=16" -verify-diagnostics

// The head size is dynamic: the runtime could not allocate blocks of it.
// expected-error @+1 {{paged KV cache: dim 3 of cache input 0 is dynamic}}
func.func @main(%past: tensor<?x2x?x?xf32> {kiln.name = "past_key_values.0.key", kiln.dims = ["batch", "", "past", "d"]},
                %new: tensor<?x2x?x?xf32> {kiln.name = "new"})
    -> (tensor<?x2x?x?xf32> {kiln.name = "scores"}, tensor<?x2x?x?xf32> {kiln.name = "present.0.key"}) {
  %kv = graph.concat %past, %new {axis = 2 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %t = graph.transpose %kv {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %scores = graph.matmul %new, %t : (tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  return %scores, %kv : tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>
}
