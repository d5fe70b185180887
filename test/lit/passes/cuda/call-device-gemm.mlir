// kiln-call-device-gemm: matrix products become calls of the context's gemm with the fill and the
// product kept as the fallback; other generics stay as they are.
// RUN: kiln-opt %s -split-input-file -kiln-add-runtime-context -kiln-call-device-gemm | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-add-runtime-context -kiln-call-device-gemm -convert-linalg-to-parallel-loops -kiln-form-gpu-launches | FileCheck %s --check-prefix=LAUNCH

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
// A plain [M, K] x [K, N] product after a zero fill: beta 0, alpha 1, the fill moves into the
// fallback with the product.
// CHECK-LABEL: func @main
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr {kiln.context}
// CHECK: %[[ARGS:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64}
// CHECK-NOT: linalg.fill
// Slot 0: A's address; slot 6: m, C's dim 0; slot 8: k, A's dim 1.
// CHECK: %{{.*}}, %{{.*}}, %[[ASIZES:[a-z_0-9]+]]:2, %{{.*}}:2 = memref.extract_strided_metadata %arg1
// CHECK: %{{.*}}, %{{.*}}, %[[CSIZES:[a-z_0-9]+]]:2, %{{.*}}:2 = memref.extract_strided_metadata %alloc :
// CHECK: llvm.getelementptr %[[ARGS]][0]
// CHECK: %[[M:.*]] = arith.index_cast %[[CSIZES]]#0
// CHECK: %[[AT6:.*]] = llvm.getelementptr %[[ARGS]][6]
// CHECK: llvm.store %[[M]], %[[AT6]] {kiln.host}
// CHECK: %[[K:.*]] = arith.index_cast %[[ASIZES]]#1
// CHECK: %[[AT8:.*]] = llvm.getelementptr %[[ARGS]][8]
// CHECK: llvm.store %[[K]], %[[AT8]] {kiln.host}
// Alpha (slot 32) is 1.0, beta (slot 33) 0.0: the fill is taken over.
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: %[[ALPHA:.*]] = arith.bitcast %[[ONE]] : f64 to i64
// CHECK: %[[AT32:.*]] = llvm.getelementptr %[[ARGS]][32]
// CHECK: llvm.store %[[ALPHA]], %[[AT32]] {kiln.host}
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[BETA:.*]] = arith.bitcast %[[ZERO]] : f64 to i64
// CHECK: %[[AT33:.*]] = llvm.getelementptr %[[ARGS]][33]
// CHECK: llvm.store %[[BETA]], %[[AT33]] {kiln.host}
// The call: field 13 of the context with field 0 (the runtime).
// CHECK: %[[FN:.*]] = llvm.getelementptr %[[CTX]][0, 13]
// CHECK: %[[FNP:.*]] = llvm.load %[[FN]] {kiln.host}
// CHECK: %[[R:.*]] = llvm.call %[[FNP]](%{{.*}}, %[[ARGS]]) {kiln.host} : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> i32
// CHECK: %[[NO:.*]] = arith.cmpi ne, %[[R]], %c0_i32
// CHECK: scf.if %[[NO]] {
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic
// CHECK: linalg.yield
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// The launches form inside the fallback only; the call stays on the host.
// LAUNCH-LABEL: func @main
// LAUNCH-NOT: gpu.launch
// LAUNCH: llvm.call
// LAUNCH: scf.if
// LAUNCH: gpu.launch
// LAUNCH: gpu.launch
// LAUNCH: gpu.terminator
// LAUNCH-NEXT: }
// LAUNCH-NEXT: }
// LAUNCH-NEXT: return
func.func @main(%a: memref<4x8xf32>, %b: memref<8x16xf32>) -> memref<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %out = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%out : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return %out : memref<4x16xf32>
}

// -----

#a = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#bt = affine_map<(b, h, m, n, k) -> (0, h, n, k)>
#c = affine_map<(b, h, m, n, k) -> (b, h, m, n)>
// Attention's scores: a transposed, batch-broadcast B, a scale from outside, f16 inputs widened
// into an f32 accumulator that was not zero-filled (beta 1). Two batch dims; B's first is 0.
// CHECK-LABEL: func @main
// CHECK: %[[SCALE:.*]] = memref.load
// CHECK: %[[WIDE:.*]] = arith.extf %[[SCALE]] : f32 to f64
// CHECK: %[[BITS:.*]] = arith.bitcast %[[WIDE]] : f64 to i64
// CHECK: %[[ALPHA:.*]] = llvm.getelementptr %{{.*}}[32] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.store %[[BITS]], %[[ALPHA]] {kiln.host}
// CHECK: arith.constant 1.000000e+00 : f64
// CHECK: llvm.call
// CHECK: scf.if
// CHECK-NEXT: linalg.generic
// CHECK-NOT: linalg.fill
func.func @main(%q: memref<2x4x8x16xf16>, %k: memref<1x4x8x16xf16>, %s: memref<f32>, %out: memref<2x4x8x8xf32>) {
  %scale = memref.load %s[] : memref<f32>
  linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x4x8x16xf16>, memref<1x4x8x16xf16>) outs(%out : memref<2x4x8x8xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %ps = arith.mulf %p, %scale : f32
    %r = arith.addf %acc, %ps : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
// Not products: an integer contraction, a body with an epilogue, and a max-reduction stay as they are.
// CHECK-LABEL: func @main
// CHECK-NOT: llvm.call
// CHECK-NOT: scf.if
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: llvm.call
func.func @main(%ai: memref<4x8xi32>, %bi: memref<8x16xi32>, %ci: memref<4x16xi32>,
                %a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ai, %bi : memref<4x8xi32>, memref<8x16xi32>) outs(%ci : memref<4x16xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product whose operand is (a view of) a constant of the host program stays a loop nest: the
// constant lives in host memory, which cuBLASLt cannot read (the test llama's rotary table crashed
// cuBLASLt on an H200). As a launch, the kernel reads its own copy of the constant.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
memref.global "private" constant @table : memref<8xf32> = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]>
// CHECK-LABEL: func @main
// CHECK-NOT: llvm.call
// CHECK: linalg.generic
// LAUNCH-LABEL: func @main
// LAUNCH-NOT: llvm.call
// LAUNCH: gpu.launch
// LAUNCH: memref.get_global @table
// LAUNCH: memref.reinterpret_cast
func.func @main(%a: memref<4x1xf32>, %c: memref<4x8xf32>) {
  %g = memref.get_global @table : memref<8xf32>
  %b = memref.reinterpret_cast %g to offset: [0], sizes: [1, 8], strides: [8, 1] : memref<8xf32> to memref<1x8xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x1xf32>, memref<1x8xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An epilogue marked by kiln-mark-gemm-epilogues (input 1 is the product): out = relu(bias[n] +
// P + residual) is one gemm_epilogue call (context field 14) writing `out`, with the residual as
// the C source (beta 1), the bias row, ReLU. The fill, the product and the epilogue op are the
// fallback, in order.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
// CHECK-LABEL: func @main
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr {kiln.context}, %[[A:[a-z0-9]+]]: memref<4x8xf32>, %[[B:[a-z0-9]+]]: memref<8x16xf32>, %[[BIAS:[a-z0-9]+]]: memref<16xf32>, %[[RES:[a-z0-9]+]]: memref<4x16xf32>, %[[OUT:[a-z0-9]+]]: memref<4x16xf32>)
// CHECK: %[[ARGS:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64}
// CHECK: %[[EPI:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64}
// C is the epilogue's output.
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: llvm.getelementptr %{{.*}}[32]
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: %[[BETA:.*]] = arith.bitcast %[[ONE]] : f64 to i64
// CHECK: %[[AT33:.*]] = llvm.getelementptr %{{.*}}[33]
// CHECK: llvm.store %[[BETA]], %[[AT33]] {kiln.host}
// Slot 0 of the epilogue: the residual's address; 1: the bias's; 2: its type (f32); 4: ReLU.
// CHECK: memref.extract_aligned_pointer_as_index %[[RES]]
// CHECK: %[[E0:.*]] = llvm.getelementptr %[[EPI]][0]
// CHECK: memref.extract_aligned_pointer_as_index %[[BIAS]]
// CHECK: %[[E1:.*]] = llvm.getelementptr %[[EPI]][1]
// CHECK: %[[F32:.*]] = arith.constant 1 : i64
// CHECK: %[[E2:.*]] = llvm.getelementptr %[[EPI]][2]
// CHECK: llvm.store %[[F32]], %[[E2]] {kiln.host}
// CHECK: %[[RELU:.*]] = arith.constant 1 : i64
// CHECK: %[[E4:.*]] = llvm.getelementptr %[[EPI]][4]
// CHECK: llvm.store %[[RELU]], %[[E4]] {kiln.host}
// CHECK: %[[FN:.*]] = llvm.getelementptr %[[CTX]][0, 14]
// CHECK: %[[FNP:.*]] = llvm.load %[[FN]] {kiln.host}
// CHECK: %[[R:.*]] = llvm.call %[[FNP]](%{{.*}}, %[[ARGS]], %[[EPI]]) {kiln.host} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: scf.if
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic
// CHECK: linalg.generic {{.*}}kiln.gemm_epilogue = 1
// CHECK: arith.select
// CHECK: linalg.yield
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: return
func.func @main(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %bias: memref<16xf32>, %res: memref<4x16xf32>,
                %out: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%p : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#row, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %p, %res : memref<16xf32>, memref<4x16xf32>, memref<4x16xf32>) outs(%out : memref<4x16xf32>)
      attrs = {kiln.gemm_epilogue = 1 : i64} {
  ^bb0(%bv: f32, %pv: f32, %rv: f32, %o: f32):
    %s1 = arith.addf %bv, %pv : f32
    %s2 = arith.addf %rv, %s1 : f32
    %z = arith.constant 0.0 : f32
    %gt = arith.cmpf ogt, %s2, %z : f32
    %r = arith.select %gt, %s2, %z : f32
    linalg.yield %r : f32
  }
  memref.dealloc %p : memref<4x16xf32>
  return
}

// -----

// Not folded: an epilogue op without the mark (the product may be read again), one whose row
// vector runs along m (cuBLASLt's bias is per column of kiln's row-major output), and one whose
// body does more than add (a multiply). Each product is a plain gemm call; the ops stay after it.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
#col = affine_map<(m, n) -> (m)>
// CHECK-LABEL: func @main
// CHECK-NOT: !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-COUNT-3: (!llvm.ptr, !llvm.ptr) -> i32
// CHECK-NOT: !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
func.func @main(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %bias: memref<16xf32>, %colv: memref<4xf32>,
                %out: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%p : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %p : memref<16xf32>, memref<4x16xf32>) outs(%out : memref<4x16xf32>) {
  ^bb0(%bv: f32, %pv: f32, %o: f32):
    %s1 = arith.addf %bv, %pv : f32
    linalg.yield %s1 : f32
  }
  linalg.fill ins(%zero : f32) outs(%p : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%p : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%colv, %p : memref<4xf32>, memref<4x16xf32>) outs(%out : memref<4x16xf32>)
      attrs = {kiln.gemm_epilogue = 1 : i64} {
  ^bb0(%cv: f32, %pv: f32, %o: f32):
    %s1 = arith.addf %cv, %pv : f32
    linalg.yield %s1 : f32
  }
  linalg.fill ins(%zero : f32) outs(%p : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%p : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %p : memref<16xf32>, memref<4x16xf32>) outs(%out : memref<4x16xf32>)
      attrs = {kiln.gemm_epilogue = 1 : i64} {
  ^bb0(%bv: f32, %pv: f32, %o: f32):
    %s1 = arith.mulf %bv, %pv : f32
    linalg.yield %s1 : f32
  }
  return
}

// -----

// Gemm's C: a bias row broadcast into the accumulator before the product becomes the epilogue's
// bias (beta 0), and the marked ReLU after it the activation: one call writing the ReLU's output.
// The broadcast, the product and the ReLU are the fallback.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (0, n)>
// CHECK-LABEL: func @main
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr {kiln.context}, %{{[a-z0-9]+}}: memref<4x8xf32>, %{{[a-z0-9]+}}: memref<8x16xf32>, %[[BIAS:[a-z0-9]+]]: memref<1x16xf32>, %[[OUT:[a-z0-9]+]]: memref<4x16xf32>)
// CHECK: %[[ARGS:.*]] = llvm.alloca
// CHECK: %[[EPI:.*]] = llvm.alloca
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: llvm.getelementptr %{{.*}}[32]
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[BETA:.*]] = arith.bitcast %[[ZERO]] : f64 to i64
// CHECK: %[[AT33:.*]] = llvm.getelementptr %{{.*}}[33]
// CHECK: llvm.store %[[BETA]], %[[AT33]] {kiln.host}
// No C source (slot 0 is 0), the bias's address, its stride along n (dim 1), ReLU.
// CHECK: %[[NONE:.*]] = arith.constant 0 : i64
// CHECK: %[[E0:.*]] = llvm.getelementptr %[[EPI]][0]
// CHECK: llvm.store %[[NONE]], %[[E0]] {kiln.host}
// CHECK: memref.extract_aligned_pointer_as_index %[[BIAS]]
// CHECK: llvm.getelementptr %[[EPI]][1]
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %[[BIAS]]
// CHECK: %[[STRIDE:.*]] = arith.index_cast %[[STRIDES]]#1 : index to i64
// CHECK: %[[E3:.*]] = llvm.getelementptr %[[EPI]][3]
// CHECK: llvm.store %[[STRIDE]], %[[E3]] {kiln.host}
// CHECK: llvm.getelementptr %[[CTX]][0, 14]
// CHECK: llvm.call
// CHECK: scf.if
// CHECK-NEXT: linalg.generic
// CHECK: linalg.yield
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}}kiln.gemm_epilogue = 0
// CHECK: arith.select
func.func @main(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %bias: memref<1x16xf32>, %out: memref<4x16xf32>) {
  %p = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<1x16xf32>) outs(%p : memref<4x16xf32>) {
  ^bb0(%bv: f32, %o: f32):
    linalg.yield %bv : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%p : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<4x16xf32>) outs(%out : memref<4x16xf32>) attrs = {kiln.gemm_epilogue = 0 : i64} {
  ^bb0(%pv: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %gt = arith.cmpf ogt, %pv, %z : f32
    %r = arith.select %gt, %pv, %z : f32
    linalg.yield %r : f32
  }
  memref.dealloc %p : memref<4x16xf32>
  return
}
