// kiln-fold-reduction-addends: a sum reduction (no contraction) from zero, read only by an
// elementwise op that adds terms to it, starts from those terms instead.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-fold-reduction-addends))' | FileCheck %s

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// (sum + bias) + residual: the reduction starts from bias + residual (an elementwise op over the
// fill's tensor), and the add is gone.
// CHECK-LABEL: func @bias_residual
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg3, %arg4 : tensor<16xf32>, tensor<4x16xf32>) outs(%[[E]] : tensor<4x16xf32>)
// CHECK-NEXT: ^bb0(%[[B:.*]]: f32, %[[R:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[B]], %[[R]] : f32
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%[[INIT]] : tensor<4x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[P]]
func.func @bias_residual(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16xf32>, %b: tensor<16xf32>,
                         %res: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #col, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w, %s : tensor<4x8xf32>, tensor<16x8xi8>, tensor<16xf32>) outs(%z : tensor<4x16xf32>) {
  ^bb0(%a: f32, %q: i8, %sc: f32, %acc: f32):
    %f = arith.sitofp %q : i8 to f32
    %fs = arith.mulf %f, %sc : f32
    %m = arith.mulf %a, %fs : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #bias, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %b, %res : tensor<4x16xf32>, tensor<16xf32>, tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%v: f32, %bb: f32, %r: f32, %o: f32):
    %s1 = arith.addf %v, %bb : f32
    %s2 = arith.addf %s1, %r : f32
    linalg.yield %s2 : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// A GELU after the bias: the bias starts the sum, the GELU stays (reading the sum).
// CHECK-LABEL: func @bias_gelu
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg3 : tensor<16xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} {{.*}} outs(%[[INIT]] : tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[P]] : tensor<4x16xf32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.erf %[[V]]
func.func @bias_gelu(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #col, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w, %s : tensor<4x8xf32>, tensor<16x8xi8>, tensor<16xf32>) outs(%z : tensor<4x16xf32>) {
  ^bb0(%a: f32, %q: i8, %sc: f32, %acc: f32):
    %f = arith.sitofp %q : i8 to f32
    %fs = arith.mulf %f, %sc : f32
    %m = arith.mulf %a, %fs : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%v: f32, %bb: f32, %o: f32):
    %s1 = arith.addf %v, %bb : f32
    %g = math.erf %s1 : f32
    linalg.yield %g : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// Left alone: a contraction (cuBLASLt's epilogue takes its bias), a sum that something else also
// reads, a sum started from a non-zero value, and a consumer that multiplies.
// CHECK-LABEL: func @not_folded
// An initial-value op would read the bias alone.
// CHECK-COUNT-4: linalg.fill
// CHECK-NOT: ins(%arg3 : tensor<16xf32>)
func.func @not_folded(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %q: tensor<16x8xi8>, %b: tensor<16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z : tensor<4x16xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %c2 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%v: f32, %bb: f32, %o: f32):
    %s1 = arith.addf %v, %bb : f32
    linalg.yield %s1 : f32
  } -> tensor<4x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %q : tensor<4x8xf32>, tensor<16x8xi8>) outs(%z2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %qq: i8, %acc: f32):
    %f = arith.sitofp %qq : i8 to f32
    %f2 = arith.mulf %f, %f : f32
    %m = arith.mulf %a, %f2 : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%v: f32, %bb: f32, %o: f32):
    %s1 = arith.addf %v, %bb : f32
    linalg.yield %s1 : f32
  } -> tensor<4x16xf32>
  %o = linalg.fill ins(%one : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p3 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %q : tensor<4x8xf32>, tensor<16x8xi8>) outs(%o : tensor<4x16xf32>) {
  ^bb0(%a: f32, %qq: i8, %acc: f32):
    %f = arith.sitofp %qq : i8 to f32
    %f2 = arith.mulf %f, %f : f32
    %m = arith.mulf %a, %f2 : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %p4 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p3, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%v: f32, %bb: f32, %o2: f32):
    %s1 = arith.addf %v, %bb : f32
    linalg.yield %s1 : f32
  } -> tensor<4x16xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p5 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %q : tensor<4x8xf32>, tensor<16x8xi8>) outs(%z3 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %qq: i8, %acc: f32):
    %f = arith.sitofp %qq : i8 to f32
    %f2 = arith.mulf %f, %f : f32
    %m = arith.mulf %a, %f2 : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %p6 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p5, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%v: f32, %bb: f32, %o3: f32):
    %s1 = arith.mulf %v, %bb : f32
    linalg.yield %s1 : f32
  } -> tensor<4x16xf32>
  return %c2, %p, %p2, %p4, %p6 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// A consumer in another block (inside an scf.if) is left alone: what its addends read need not be
// there before the reduction.
// CHECK-LABEL: func @consumer_in_a_region
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: linalg.generic {{.*}} outs(%[[Z]] : tensor<4x16xf32>)
// CHECK: scf.if
// CHECK: arith.addf
func.func @consumer_in_a_region(%x: tensor<4x8xf32>, %q: tensor<16x8xi8>, %b: tensor<16xf32>, %c: i1) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %q : tensor<4x8xf32>, tensor<16x8xi8>) outs(%z : tensor<4x16xf32>) {
  ^bb0(%a: f32, %qq: i8, %acc: f32):
    %f = arith.sitofp %qq : i8 to f32
    %f2 = arith.mulf %f, %f : f32
    %m = arith.mulf %a, %f2 : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %r = scf.if %c -> tensor<4x16xf32> {
    %y = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%v: f32, %bb: f32, %o: f32):
      %s1 = arith.addf %v, %bb : f32
      linalg.yield %s1 : f32
    } -> tensor<4x16xf32>
    scf.yield %y : tensor<4x16xf32>
  } else {
    scf.yield %e : tensor<4x16xf32>
  }
  return %r : tensor<4x16xf32>
}
