// kiln-fuse-elementwise: elementwise chains fuse; a producer never fuses into a matrix product.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func @scale_then_matmul
// The scale stays its own loop nest ...
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// ... and the product keeps a plain multiply-add body.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
func.func @scale_then_matmul(%x: tensor<4x8xf32>, %s: tensor<4x8xf32>, %w: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%0, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s2 = arith.addf %acc, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// CHECK-LABEL: func @elementwise_chain
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @elementwise_chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// The elementwise lowering cuts two inputs that are dynamic in the same dim to the result's sizes;
// where the sizes trace back to the same values (both read tensor.dim of one tensor, through
// tensor.empty and the ops' inits) the cut is the input itself, and the chain fuses into one loop.
// CHECK-LABEL: func @same_sizes_fuse
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic
// CHECK: arith.negf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @same_sizes_fuse(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %n = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %e2 = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%e2 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %s0 = tensor.dim %n, %c0 : tensor<?x?xf32>
  %s1 = tensor.dim %n, %c1 : tensor<?x?xf32>
  %cut = tensor.extract_slice %m[0, 0] [%s0, %s1] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %e3 = tensor.empty(%s0, %s1) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%n, %cut : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e3 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// The lowering's size is the smaller of the two inputs' sizes; both from one place, it is that.
// CHECK-LABEL: func @smaller_of_one_size
// CHECK-NOT: tensor.extract_slice
// CHECK: return %arg0,
func.func @smaller_of_one_size(%x: tensor<?xf32>, %y: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %a = tensor.dim %n, %c0 : tensor<?xf32>
  %m = arith.minsi %a, %d : index
  %cut = tensor.extract_slice %x[0] [%m] [1] : tensor<?xf32> to tensor<?xf32>
  return %cut, %n : tensor<?xf32>, tensor<?xf32>
}

// -----

// Sizes of two different inputs stay cut (nothing shows them equal)...
// CHECK-LABEL: func @other_sizes_stay_cut
// CHECK: tensor.extract_slice
func.func @other_sizes_stay_cut(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %cut = tensor.extract_slice %y[0] [%d] [1] : tensor<?xf32> to tensor<?xf32>
  return %cut : tensor<?xf32>
}

// -----

// ... unless kiln.dims names them alike: the runtime refuses a run where they differ.
// CHECK-LABEL: func @named_alike
// CHECK-NOT: tensor.extract_slice
func.func @named_alike(%x: tensor<?xf32> {kiln.dims = ["sequence"]}, %y: tensor<?xf32> {kiln.dims = ["sequence"]}) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %cut = tensor.extract_slice %y[0] [%d] [1] : tensor<?xf32> to tensor<?xf32>
  return %cut : tensor<?xf32>
}

// -----

// A reduction that is no contraction (the GPU's int8 product converts and scales each weight) does
// not take a producer whose result it reads once per output column: the GELU would be computed N
// times. A producer it reads once per element (a row sum's exp) still fuses.
// CHECK-LABEL: func @no_recompute_in_reduction
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: math.erf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: math.erf
// CHECK: arith.sitofp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.addf
func.func @no_recompute_in_reduction(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %sc: tensor<16xf32>, %c: tensor<4x16xf32>, %r: tensor<4xf32>)
    -> (tensor<4x16xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %g = math.erf %a : f32
    linalg.yield %g : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#lhs, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%0, %w, %sc : tensor<4x8xf32>, tensor<16x8xi8>, tensor<16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%a: f32, %q: i8, %s: f32, %acc: f32):
    %f = arith.sitofp %q : i8 to f32
    %fs = arith.mulf %f, %s : f32
    %m = arith.mulf %a, %fs : f32
    %s2 = arith.addf %acc, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<4x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %g = math.exp %a : f32
    linalg.yield %g : f32
  } -> tensor<4x8xf32>
  %3 = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%2 : tensor<4x8xf32>) outs(%r : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s2 = arith.addf %a, %acc : f32
    linalg.yield %s2 : f32
  } -> tensor<4xf32>
  return %1, %3 : tensor<4x16xf32>, tensor<4xf32>
}

// -----

// A concatenation's dims other than the concatenated one are its first input's: a cut of x to the
// sizes of concat(x, x) along dim 1, in dim 0, is x itself (the rotary tables' [freqs, freqs]).
// CHECK-LABEL: func @cut_to_concat_sizes
// CHECK-NOT: tensor.extract_slice
// CHECK: return %arg0
func.func @cut_to_concat_sizes(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %cc = tensor.concat dim(1) %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  %d = tensor.dim %cc, %c0 : tensor<?x16xf32>
  %cut = tensor.extract_slice %x[0, 0] [%d, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  return %cut, %cc : tensor<?x8xf32>, tensor<?x16xf32>
}

// -----

#scalar = affine_map<() -> ()>

// Shape arithmetic the lowering wrote as rank-0 ops (a total length, a past length) and read back
// as scalars is computed where it is read: the ops are gone.
// CHECK-LABEL: func @scalar_read_back
// CHECK-SAME: (%[[IDS:.*]]: tensor<?x?xi64>, %[[MASK:.*]]: tensor<?x?xi64>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[S:.*]] = tensor.dim %[[IDS]]
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[MASK]]
// CHECK-DAG: %[[S64:.*]] = arith.index_cast %[[S]]
// CHECK-DAG: %[[T64:.*]] = arith.index_cast %[[T]]
// CHECK: %[[PAST:.*]] = arith.subi %[[T64]], %[[S64]]
// CHECK: return %[[PAST]], %[[T64]]
func.func @scalar_read_back(%ids: tensor<?x?xi64>, %mask: tensor<?x?xi64>) -> (i64, i64) {
  %c1 = arith.constant 1 : index
  %s = tensor.dim %ids, %c1 : tensor<?x?xi64>
  %s64 = arith.index_cast %s : index to i64
  %t = tensor.dim %mask, %c1 : tensor<?x?xi64>
  %t64 = arith.index_cast %t : index to i64
  %e = tensor.empty() : tensor<i64>
  %total = linalg.generic {indexing_maps = [#scalar], iterator_types = []} outs(%e : tensor<i64>) {
  ^bb0(%o: i64):
    linalg.yield %t64 : i64
  } -> tensor<i64>
  %past = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%total : tensor<i64>) outs(%e : tensor<i64>) {
  ^bb0(%a: i64, %o: i64):
    %d = arith.subi %a, %s64 : i64
    linalg.yield %d : i64
  } -> tensor<i64>
  %p = tensor.extract %past[] : tensor<i64>
  %q = tensor.extract %total[] : tensor<i64>
  return %p, %q : i64, i64
}

// -----

#one = affine_map<(d0) -> (d0)>

// One element: the negated count of logit rows, read back at index 0, is negated on the host.
// CHECK-LABEL: func @one_element_read_back
// CHECK-NOT: linalg.generic
// CHECK: %[[N:.*]] = tensor.extract %arg0[%{{.*}}] : tensor<1xi64>
// CHECK: %[[NEG:.*]] = arith.subi %{{.*}}, %[[N]]
// CHECK: return %[[NEG]]
func.func @one_element_read_back(%rows: tensor<1xi64>) -> i64 {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<1xi64>
  %neg = linalg.generic {indexing_maps = [#one, #one], iterator_types = ["parallel"]} ins(%rows : tensor<1xi64>) outs(%e : tensor<1xi64>) {
  ^bb0(%a: i64, %o: i64):
    %d = arith.subi %zero, %a : i64
    linalg.yield %d : i64
  } -> tensor<1xi64>
  %v = tensor.extract %neg[%c0] : tensor<1xi64>
  return %v : i64
}
