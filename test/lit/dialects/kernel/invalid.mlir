// Verifier errors of kiln_kernel.attention.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @mixed(%q: tensor<4x16xf32>, %k: memref<9x16xf32>, %v: tensor<9x8xf32>, %o: tensor<4x8xf32>) {
  // expected-error @+1 {{needs all operands tensors or all buffers}}
  %r = kiln_kernel.attention %q, %k, %v into %o : tensor<4x16xf32>, memref<9x16xf32>, tensor<9x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @element_types(%q: memref<4x16xf32>, %k: memref<9x16xf16>, %v: memref<9x8xf32>, %o: memref<4x8xf32>) {
  // expected-error @+1 {{needs operands of one float element type}}
  kiln_kernel.attention %q, %k, %v into %o : memref<4x16xf32>, memref<9x16xf16>, memref<9x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @no_result(%q: tensor<4x16xf32>, %k: tensor<9x16xf32>, %v: tensor<9x8xf32>, %o: tensor<4x8xf32>) {
  // expected-error @+1 {{on tensors returns the written init}}
  kiln_kernel.attention %q, %k, %v into %o : tensor<4x16xf32>, tensor<9x16xf32>, tensor<9x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @head_sizes(%q: memref<4x16xf32>, %k: memref<9x12xf32>, %v: memref<9x8xf32>, %o: memref<4x8xf32>) {
  // expected-error @+1 {{query and key have different head sizes}}
  kiln_kernel.attention %q, %k, %v into %o : memref<4x16xf32>, memref<9x12xf32>, memref<9x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @key_counts(%q: memref<4x16xf32>, %k: memref<9x16xf32>, %v: memref<7x8xf32>, %o: memref<4x8xf32>) {
  // expected-error @+1 {{key and value have different key counts}}
  kiln_kernel.attention %q, %k, %v into %o : memref<4x16xf32>, memref<9x16xf32>, memref<7x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @init_rows(%q: memref<4x16xf32>, %k: memref<9x16xf32>, %v: memref<9x8xf32>, %o: memref<5x8xf32>) {
  // expected-error @+1 {{init dim 0 is not the query's}}
  kiln_kernel.attention %q, %k, %v into %o : memref<4x16xf32>, memref<9x16xf32>, memref<9x8xf32>, memref<5x8xf32>
  return
}

// -----

func.func @groups(%q: memref<6x4x16xf32>, %k: memref<4x9x16xf32>, %v: memref<4x9x8xf32>, %o: memref<6x4x8xf32>) {
  // expected-error @+1 {{key/value batch dim 0 does not divide the query's}}
  kiln_kernel.attention %q, %k, %v into %o : memref<6x4x16xf32>, memref<4x9x16xf32>, memref<4x9x8xf32>, memref<6x4x8xf32>
  return
}

// -----

func.func @mask_keys(%q: memref<4x16xf32>, %k: memref<9x16xf32>, %v: memref<9x8xf32>, %m: memref<4x7xf32>, %o: memref<4x8xf32>) {
  // expected-error @+1 {{mask dim 1 does not broadcast to the scores}}
  kiln_kernel.attention %q, %k, %v mask %m : memref<4x7xf32> into %o : memref<4x16xf32>, memref<9x16xf32>, memref<9x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @rank(%q: memref<16xf32>, %k: memref<16xf32>, %v: memref<8xf32>, %o: memref<8xf32>) {
  // expected-error @+1 {{needs a query of rank 2 or more}}
  kiln_kernel.attention %q, %k, %v into %o : memref<16xf32>, memref<16xf32>, memref<8xf32>, memref<8xf32>
  return
}

// -----

func.func @paged_table_type(%q: memref<?x4x1x16xf32>, %kp: memref<?x2x16x16xf32>, %vp: memref<?x2x16x8xf32>, %t: memref<?xi64>, %n: index, %o: memref<?x4x1x8xf32>) {
  // expected-error @+1 {{needs a block_table of rank 2 and i64 elements}}
  kiln_kernel.attention %q, %kp, %vp paged %t : memref<?xi64> keys %n into %o : memref<?x4x1x16xf32>, memref<?x2x16x16xf32>, memref<?x2x16x8xf32>, memref<?x4x1x8xf32>
  return
}

// -----

func.func @paged_block_sizes(%q: memref<?x4x1x16xf32>, %kp: memref<?x2x16x16xf32>, %vp: memref<?x2x8x8xf32>, %t: memref<?x?xi64>, %n: index, %o: memref<?x4x1x8xf32>) {
  // expected-error @+1 {{paged needs key and value pools of one static block size}}
  kiln_kernel.attention %q, %kp, %vp paged %t : memref<?x?xi64> keys %n into %o : memref<?x4x1x16xf32>, memref<?x2x16x16xf32>, memref<?x2x8x8xf32>, memref<?x4x1x8xf32>
  return
}

// -----

func.func @paged_rank(%q: memref<1x16xf32>, %kp: memref<16x16xf32>, %vp: memref<16x8xf32>, %t: memref<?x?xi64>, %n: index, %o: memref<1x8xf32>) {
  // expected-error @+1 {{paged needs a batch dim in the query}}
  kiln_kernel.attention %q, %kp, %vp paged %t : memref<?x?xi64> keys %n into %o : memref<1x16xf32>, memref<16x16xf32>, memref<16x8xf32>, memref<1x8xf32>
  return
}

// -----

func.func @paged_without_count(%q: memref<?x4x1x16xf32>, %kp: memref<?x2x16x16xf32>, %vp: memref<?x2x16x8xf32>, %t: memref<?x?xi64>, %o: memref<?x4x1x8xf32>) {
  // expected-error @+1 {{needs a block_table and a key_count together}}
  "kiln_kernel.attention"(%q, %kp, %vp, %t, %o) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 1>, scale = 1.0 : f32}> : (memref<?x4x1x16xf32>, memref<?x2x16x16xf32>, memref<?x2x16x8xf32>, memref<?x?xi64>, memref<?x4x1x8xf32>) -> ()
  return
}

// -----

// Verifier errors of kiln_kernel.row_norm.

func.func @norm_kind(%x: memref<4x16xf32>, %o: memref<4x16xf32>) {
  // expected-error @+1 {{kind must be "layer", "rms", "softmax" or "log_softmax", not "batch"}}
  kiln_kernel.row_norm %x into %o {kind = "batch", epsilon = 1.0e-05 : f32} : memref<4x16xf32>, memref<4x16xf32>
  return
}

// -----

func.func @norm_rms_bias(%x: memref<4x16xf32>, %b: memref<16xf32>, %o: memref<4x16xf32>) {
  // expected-error @+1 {{"rms" takes no bias}}
  kiln_kernel.row_norm %x bias %b : memref<16xf32> into %o {kind = "rms", epsilon = 1.0e-05 : f32} : memref<4x16xf32>, memref<4x16xf32>
  return
}

// -----

func.func @norm_f16(%x: memref<4x16xf16>, %o: memref<4x16xf16>) {
  // expected-error @+1 {{needs ranked f32 operands}}
  kiln_kernel.row_norm %x into %o {kind = "layer", epsilon = 1.0e-05 : f32} : memref<4x16xf16>, memref<4x16xf16>
  return
}

// -----

func.func @norm_scale_length(%x: memref<4x16xf32>, %s: memref<8xf32>, %o: memref<4x16xf32>) {
  // expected-error @+1 {{needs scale and bias of one element or of the row's}}
  kiln_kernel.row_norm %x scale %s : memref<8xf32> into %o {kind = "layer", epsilon = 1.0e-05 : f32} : memref<4x16xf32>, memref<4x16xf32>
  return
}

// -----

func.func @norm_shapes(%x: memref<4x16xf32>, %o: memref<5x16xf32>) {
  // expected-error @+1 {{needs input and init of one shape}}
  kiln_kernel.row_norm %x into %o {kind = "layer", epsilon = 1.0e-05 : f32} : memref<4x16xf32>, memref<5x16xf32>
  return
}

// -----

func.func @norm_result(%x: tensor<4x16xf32>, %o: tensor<4x16xf32>) {
  // expected-error @+1 {{on tensors returns the written init}}
  kiln_kernel.row_norm %x into %o {kind = "layer", epsilon = 1.0e-05 : f32} : tensor<4x16xf32>, tensor<4x16xf32>
  return
}

// -----

// Permutations of kiln_kernel.attention's operands.

func.func @perm_on_buffers(%q: memref<4x2x16xf32>, %k: memref<2x9x16xf32>, %o: memref<2x4x16xf32>) {
  // expected-error @+1 {{takes permutations only on tensors (buffers are strided views)}}
  kiln_kernel.attention %q, %k, %k into %o {query_perm = array<i64: 1, 0, 2>} : memref<4x2x16xf32>, memref<2x9x16xf32>, memref<2x9x16xf32>, memref<2x4x16xf32>
  return
}

// -----

func.func @perm_moves_last(%q: tensor<2x16x4xf32>, %k: tensor<2x9x16xf32>, %o: tensor<2x4x16xf32>) {
  // expected-error @+1 {{query_perm is not a permutation of the operand's dims keeping the last}}
  %r = kiln_kernel.attention %q, %k, %k into %o {query_perm = array<i64: 0, 2, 1>} : tensor<2x16x4xf32>, tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
  return
}

// -----

func.func @perm_repeats(%q: tensor<4x2x16xf32>, %k: tensor<2x9x16xf32>, %o: tensor<2x4x16xf32>) {
  // expected-error @+1 {{key_perm is not a permutation of the operand's dims keeping the last}}
  %r = kiln_kernel.attention %q, %k, %k into %o {query_perm = array<i64: 1, 0, 2>, key_perm = array<i64: 0, 0, 2>} : tensor<4x2x16xf32>, tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
  return
}

// -----

// What the op sees of a permuted init is checked against the query: [2, 4, 16] from [4, 2, 16].
func.func @perm_shapes(%q: tensor<2x4x16xf32>, %k: tensor<2x9x16xf32>, %o: tensor<2x4x16xf32>) {
  // expected-error @+1 {{init dim 0 is not the query's}}
  %r = kiln_kernel.attention %q, %k, %k into %o {init_perm = array<i64: 1, 0, 2>} : tensor<2x4x16xf32>, tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
  return
}

// -----

func.func @softmax_scale(%x: memref<4x16xf32>, %s: memref<16xf32>, %o: memref<4x16xf32>) {
  // expected-error @+1 {{a softmax takes no scale or bias}}
  kiln_kernel.row_norm %x scale %s : memref<16xf32> into %o {kind = "softmax", epsilon = 0.0 : f32} : memref<4x16xf32>, memref<4x16xf32>
  return
}
