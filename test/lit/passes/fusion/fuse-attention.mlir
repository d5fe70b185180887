// kiln-fuse-attention: MatMul -> scale -> mask -> Softmax -> MatMul becomes graph.attention, and only then.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-attention | FileCheck %s

// GPT-2's export: Transpose(K), scores * (1/sqrt(d)), + bias, Softmax, @ V.
// CHECK-LABEL: func @gpt2_form
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[K:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[M:[a-z0-9]+]]: tensor<?x1x?x?xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 2.500000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
// CHECK-NEXT: return %[[O]]
func.func @gpt2_form(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %bias: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %c = graph.constant {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = graph.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %ss = graph.mul %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %sm = graph.add %ss, %bias : (tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = graph.softmax %sm {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = graph.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Divided by sqrt(d), no mask, mask operand first in the Add is not needed; rank 3.
// CHECK-LABEL: func @div_no_mask
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32} : (tensor<2x5x64xf32>, tensor<2x9x64xf32>, tensor<2x9x32xf32>) -> tensor<2x5x32xf32>
// CHECK-NEXT: return %[[O]]
func.func @div_no_mask(%q: tensor<2x5x64xf32>, %k: tensor<2x9x64xf32>, %v: tensor<2x9x32xf32>) -> tensor<2x5x32xf32> {
  %c = graph.constant {value = dense<8.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x9x64xf32>) -> tensor<2x64x9xf32>
  %s = graph.matmul %q, %kt : (tensor<2x5x64xf32>, tensor<2x64x9xf32>) -> tensor<2x5x9xf32>
  %ss = graph.div %s, %c : (tensor<2x5x9xf32>, tensor<1xf32>) -> tensor<2x5x9xf32>
  %p = graph.softmax %ss {axis = 2 : i64} : (tensor<2x5x9xf32>) -> tensor<2x5x9xf32>
  %o = graph.matmul %p, %v : (tensor<2x5x9xf32>, tensor<2x9x32xf32>) -> tensor<2x5x32xf32>
  return %o : tensor<2x5x32xf32>
}

// -----

// Scales on Q and on K (before its transpose), the mask as Add's first operand.
// CHECK-LABEL: func @scaled_inputs
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2, %arg3 {scale = 1.250000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @scaled_inputs(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>, %m: tensor<3x5xf32>) -> tensor<1x2x3x4xf32> {
  %a = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %b = graph.constant {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
  %qs = graph.mul %q, %a : (tensor<1x2x3x4xf32>, tensor<f32>) -> tensor<1x2x3x4xf32>
  %ks = graph.mul %b, %k : (tensor<f32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %kt = graph.transpose %ks {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x4x5xf32>
  %s = graph.matmul %qs, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %sm = graph.add %m, %s : (tensor<3x5xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %p = graph.softmax %sm : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Llama's export: grouped-query attention with HF's repeat_kv (Unsqueeze, Expand
// to [B, KV, rep, T, D], Reshape to [B, KV*rep, T, D]) on both K and V; the
// attention reads the 2 key/value heads directly.
// CHECK-LABEL: func @llama_gqa
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[M:[a-z0-9]+]]: tensor<?x1x?x?xf32>
// CHECK-NOT: graph.dynamic_expand
// CHECK: %[[O:.*]] = graph.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 2.500000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
// CHECK-NEXT: return %[[O]]
func.func @llama_gqa(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %bias: tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %i0 = graph.constant {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %i2 = graph.constant {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  %kv_rep = graph.constant {value = dense<[2, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %heads = graph.constant {value = dense<4> : tensor<1xi64>} : () -> tensor<1xi64>
  %d = graph.constant {value = dense<16> : tensor<1xi64>} : () -> tensor<1xi64>
  %c = graph.constant {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
  %ks = graph.shape %k : (tensor<?x2x?x16xf32>) -> tensor<4xi64>
  %kb = graph.gather %ks, %i0 : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %kl = graph.gather %ks, %i2 : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %ku = graph.unsqueeze %k {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %kes = graph.concat %kb, %kv_rep, %kl, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %ke = graph.dynamic_expand %ku, %kes : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %krs = graph.concat %kb, %heads, %kl, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kr = graph.reshape %ke, %krs : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %vs = graph.shape %v : (tensor<?x2x?x16xf32>) -> tensor<4xi64>
  %vb = graph.gather %vs, %i0 : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %vl = graph.gather %vs, %i2 : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %vu = graph.unsqueeze %v {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ves = graph.concat %vb, %kv_rep, %vl, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %ve = graph.dynamic_expand %vu, %ves : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %vrs = graph.concat %vb, %heads, %vl, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %vr = graph.reshape %ve, %vrs : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %kt = graph.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %s = graph.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x?x?x?xf32>) -> tensor<?x4x?x?xf32>
  %ss = graph.mul %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %sm = graph.add %ss, %bias : (tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = graph.softmax %sm : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = graph.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x4x?x?xf32>
  return %o : tensor<?x4x?x?xf32>
}

// -----

// A repeat whose Reshape does not put the heads back as [KV * rep] is read as it is.
// CHECK-LABEL: func @repeat_not_heads
// CHECK: %[[KR:.*]] = graph.reshape
// CHECK: graph.attention %arg0, %[[KR]], %arg2
func.func @repeat_not_heads(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x6x16xf32>, %v: tensor<1x4x12x16xf32>) -> tensor<1x4x3x16xf32> {
  %shape = graph.constant {value = dense<[1, 4, 12, 16]> : tensor<4xi64>} : () -> tensor<4xi64>
  %ku = graph.unsqueeze %k {axes = array<i64: 2>} : (tensor<1x2x6x16xf32>) -> tensor<1x2x1x6x16xf32>
  %ke = graph.expand %ku {shape = array<i64: 1, 2, 4, 6, 16>} : (tensor<1x2x1x6x16xf32>) -> tensor<1x2x4x6x16xf32>
  %kr = graph.reshape %ke, %shape : (tensor<1x2x4x6x16xf32>, tensor<4xi64>) -> tensor<1x4x12x16xf32>
  %kt = graph.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x12x16xf32>) -> tensor<1x4x16x12xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x12xf32>) -> tensor<1x4x3x12xf32>
  %p = graph.softmax %s : (tensor<1x4x3x12xf32>) -> tensor<1x4x3x12xf32>
  %o = graph.matmul %p, %v : (tensor<1x4x3x12xf32>, tensor<1x4x12x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Boolean masks: Where(keep, scores, -inf) and masked_fill's Where(drop, -inf, scores)
// become additive masks of the fill (exact: s + 0 = s, s + -inf = -inf).
// CHECK-LABEL: func @where_keep
// CHECK-DAG: %[[ZERO:.*]] = graph.constant {value = dense<0.000000e+00> : tensor<f32>}
// CHECK-DAG: %[[NINF:.*]] = graph.constant {value = dense<0xFF800000> : tensor<f32>}
// CHECK: %[[MASK:.*]] = graph.where %arg3, %[[ZERO]], %[[NINF]] : (tensor<3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK: graph.attention %arg0, %arg1, %arg2, %[[MASK]] {scale = 5.000000e-01 : f32}
// CHECK-NOT: graph.softmax
func.func @where_keep(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %keep: tensor<3x5xi1>) -> tensor<2x3x4xf32> {
  %c = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %ninf = graph.constant {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %ss = graph.mul %s, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %sm = graph.where %keep, %ss, %ninf : (tensor<3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %sm : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func @masked_fill
// CHECK: %[[MASK:.*]] = graph.where %arg3, %{{.*}}, %{{.*}} : (tensor<3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK: graph.attention %arg0, %arg1, %arg2, %[[MASK]]
func.func @masked_fill(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %drop: tensor<3x5xi1>) -> tensor<2x3x4xf32> {
  %ninf = graph.constant {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %sm = graph.where %drop, %ninf, %s : (tensor<3x5xi1>, tensor<f32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %sm : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Hugging Face's GPT-2 export: Where(causal, scores, finfo.min). s + finfo.min == finfo.min for any
// score below 1e22, so the additive mask is exact (a fully masked row stays uniform).
// CHECK-LABEL: func @where_lowest
// CHECK: %[[FILL:.*]] = graph.constant {value = dense<-3.40282347E+38> : tensor<f32>}
// CHECK: %[[MASK:.*]] = graph.where %arg3, %{{.*}}, %[[FILL]] : (tensor<1x1x3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x5xf32>
// CHECK: graph.attention %arg0, %arg1, %arg2, %[[MASK]] {scale = 1.250000e-01 : f32}
func.func @where_lowest(%q: tensor<1x4x3x64xf32>, %k: tensor<1x4x5x64xf32>, %v: tensor<1x4x5x64xf32>, %causal: tensor<1x1x3x5xi1>) -> tensor<1x4x3x64xf32> {
  %c = graph.constant {value = dense<8.0> : tensor<f32>} : () -> tensor<f32>
  %lowest = graph.constant {value = dense<-3.40282347E+38> : tensor<f32>} : () -> tensor<f32>
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x5x64xf32>) -> tensor<1x4x64x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x3x64xf32>, tensor<1x4x64x5xf32>) -> tensor<1x4x3x5xf32>
  %ss = graph.div %s, %c : (tensor<1x4x3x5xf32>, tensor<f32>) -> tensor<1x4x3x5xf32>
  %sm = graph.where %causal, %ss, %lowest : (tensor<1x1x3x5xi1>, tensor<1x4x3x5xf32>, tensor<f32>) -> tensor<1x4x3x5xf32>
  %p = graph.softmax %sm : (tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<1x4x3x5xf32>, tensor<1x4x5x64xf32>) -> tensor<1x4x3x64xf32>
  return %o : tensor<1x4x3x64xf32>
}

// -----

// K^T given as it is (not a Transpose): the op reads K = Transpose(K^T).
// CHECK-LABEL: func @keys_pretransposed
// CHECK: %[[K:.*]] = graph.transpose %arg1 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
// CHECK: graph.attention %arg0, %[[K]], %arg2 :
func.func @keys_pretransposed(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %s : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: the softmax is over the queries, not the keys.
// CHECK-LABEL: func @softmax_other_axis
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @softmax_other_axis(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x5x4xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %s {axis = 1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %pt = graph.transpose %p {perm = array<i64: 0, 2, 1>} : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
  %o = graph.matmul %pt, %v : (tensor<2x5x3xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  return %o : tensor<2x5x4xf32>
}

// -----

// Refused: the softmax over axis 1 of a rank-3 product feeding a MatMul directly.
// CHECK-LABEL: func @softmax_axis_1
// CHECK-NOT: graph.attention
func.func @softmax_axis_1(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %s {axis = 1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: the scale is a run-time value, not a constant.
// CHECK-LABEL: func @scale_not_constant
// CHECK-NOT: graph.attention
func.func @scale_not_constant(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %c: tensor<f32>) -> tensor<2x3x4xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %ss = graph.mul %s, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %ss : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: the scale is a per-key vector, not a scalar.
// CHECK-LABEL: func @scale_not_scalar
// CHECK-NOT: graph.attention
func.func @scale_not_scalar(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %c = graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>} : () -> tensor<5xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %ss = graph.mul %s, %c : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %ss : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: the probabilities are also an output (output_attentions).
// CHECK-LABEL: func @probabilities_returned
// CHECK-NOT: graph.attention
func.func @probabilities_returned(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x5xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %s : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o, %p : tensor<2x3x4xf32>, tensor<2x3x5xf32>
}

// -----

// Refused: the raw scores have another user.
// CHECK-LABEL: func @scores_returned
// CHECK-NOT: graph.attention
func.func @scores_returned(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %m: tensor<2x3x5xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x5xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %sm = graph.add %s, %m : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %sm : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o, %s : tensor<2x3x4xf32>, tensor<2x3x5xf32>
}

// -----

// Refused: the mask broadcasts the [1, 3, 5] scores to [2, 3, 5].
// CHECK-LABEL: func @mask_broadcasts_scores
// CHECK-NOT: graph.attention
func.func @mask_broadcasts_scores(%q: tensor<1x3x4xf32>, %k: tensor<1x5x4xf32>, %v: tensor<1x5x4xf32>, %m: tensor<2x3x5xf32>) -> tensor<2x3x4xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<1x5x4xf32>) -> tensor<1x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x3x4xf32>, tensor<1x4x5xf32>) -> tensor<1x3x5xf32>
  %sm = graph.add %s, %m : (tensor<1x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %sm : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<1x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: the scale comes after the mask (it would scale the mask too).
// CHECK-LABEL: func @scale_after_mask
// CHECK-NOT: graph.attention
func.func @scale_after_mask(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %m: tensor<3x5xf32>) -> tensor<2x3x4xf32> {
  %c = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %sm = graph.add %s, %m : (tensor<2x3x5xf32>, tensor<3x5xf32>) -> tensor<2x3x5xf32>
  %ss = graph.mul %sm, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %ss : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: Where with a fill of -1e9 is not an additive mask exactly (a fully
// masked row is uniform there; -1e9 + s is not -1e9 once |s| >= 32).
// CHECK-LABEL: func @where_finite_fill
// CHECK-NOT: graph.attention
func.func @where_finite_fill(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %keep: tensor<3x5xi1>) -> tensor<2x3x4xf32> {
  %fill = graph.constant {value = dense<-1.0e9> : tensor<f32>} : () -> tensor<f32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %sm = graph.where %keep, %s, %fill : (tensor<3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = graph.softmax %sm : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Refused: the query is broadcast against 4 key batches.
// CHECK-LABEL: func @query_broadcast
// CHECK-NOT: graph.attention
func.func @query_broadcast(%q: tensor<1x3x4xf32>, %k: tensor<4x5x4xf32>, %v: tensor<4x5x4xf32>) -> tensor<4x3x4xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x5x4xf32>) -> tensor<4x4x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x3x4xf32>, tensor<4x4x5xf32>) -> tensor<4x3x5xf32>
  %p = graph.softmax %s : (tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
  %o = graph.matmul %p, %v : (tensor<4x3x5xf32>, tensor<4x5x4xf32>) -> tensor<4x3x4xf32>
  return %o : tensor<4x3x4xf32>
}
