// kiln-convert-graph-to-linalg{gpu-attention=true}: graph.attention becomes kiln_kernel.attention
// into an empty tensor of the query's rows and the value's head size, for f32, f16 and bf16 with
// static head sizes up to 256; f64, a dynamic head size or a larger one keep the CPU's kernel on
// tensors (an scf.forall over query blocks). Without the option every attention gets that kernel.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg="gpu-attention=true" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=CPU

// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[M:[a-z0-9]+]]: tensor<?x1x?x?xf32>
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[Q]], %c0
// CHECK-DAG: %[[SQ:.*]] = tensor.dim %[[Q]], %c2
// CHECK: %[[E:.*]] = tensor.empty(%[[B]], %[[SQ]]) : tensor<?x4x?x16xf32>
// CHECK: %[[R:.*]] = kiln_kernel.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : tensor<?x1x?x?xf32> into %[[E]] {scale = 2.500000e-01 : f32}
// CHECK-NOT: scf.forall
// CHECK: return %[[R]]
// CPU-LABEL: func @decode
// CPU-NOT: kiln_kernel
// CPU: scf.forall
func.func @decode(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %m: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %o = graph.attention %q, %k, %v, %m {scale = 0.25 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// CHECK-LABEL: func @half
// CHECK: kiln_kernel.attention {{.*}} : tensor<3x64xf16>, tensor<5x64xf16>, tensor<5x256xf16>, tensor<3x256xf16> -> tensor<3x256xf16>
func.func @half(%q: tensor<3x64xf16>, %k: tensor<5x64xf16>, %v: tensor<5x256xf16>) -> tensor<3x256xf16> {
  %o = graph.attention %q, %k, %v : (tensor<3x64xf16>, tensor<5x64xf16>, tensor<5x256xf16>) -> tensor<3x256xf16>
  return %o : tensor<3x256xf16>
}

// -----

// CHECK-LABEL: func @f64
// CHECK-NOT: kiln_kernel
// CHECK: scf.forall
func.func @f64(%q: tensor<3x8xf64>, %k: tensor<5x8xf64>, %v: tensor<5x8xf64>) -> tensor<3x8xf64> {
  %o = graph.attention %q, %k, %v : (tensor<3x8xf64>, tensor<5x8xf64>, tensor<5x8xf64>) -> tensor<3x8xf64>
  return %o : tensor<3x8xf64>
}

// -----

// CHECK-LABEL: func @dynamic_head
// CHECK-NOT: kiln_kernel
// CHECK: scf.forall
func.func @dynamic_head(%q: tensor<3x?xf32>, %k: tensor<5x?xf32>, %v: tensor<5x?xf32>) -> tensor<3x?xf32> {
  %o = graph.attention %q, %k, %v : (tensor<3x?xf32>, tensor<5x?xf32>, tensor<5x?xf32>) -> tensor<3x?xf32>
  return %o : tensor<3x?xf32>
}

// -----

// CHECK-LABEL: func @wide_head
// CHECK-NOT: kiln_kernel
// CHECK: scf.forall
func.func @wide_head(%q: tensor<3x512xf32>, %k: tensor<5x512xf32>, %v: tensor<5x64xf32>) -> tensor<3x64xf32> {
  %o = graph.attention %q, %k, %v : (tensor<3x512xf32>, tensor<5x512xf32>, tensor<5x64xf32>) -> tensor<3x64xf32>
  return %o : tensor<3x64xf32>
}

// -----

// Keys and values that are paged views of one block table: the kernel reads the pools through the
// table for the view's length of keys (position, capped by the table's capacity); the gathers are
// left dead and canonicalization removes them.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg="gpu-attention=true" -canonicalize -cse | FileCheck %s --check-prefix=PAGED
// PAGED-LABEL: func @paged
// PAGED-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x1x16xf32>, %[[KP:[a-z0-9]+]]: tensor<?x2x16x16xf32>, %[[VP:[a-z0-9]+]]: tensor<?x2x16x16xf32>, %[[T:[a-z0-9]+]]: tensor<?x?xi64>, %{{.*}}: tensor<i64>, %[[M:[a-z0-9]+]]: tensor<?x1x1x?xf32>
// PAGED-NOT: linalg.generic
// PAGED: %[[W:.*]] = tensor.dim %[[T]], %c1
// PAGED: %[[CAP:.*]] = arith.muli %[[W]], %c16
// PAGED: %[[N:.*]] = arith.select
// PAGED: kiln_kernel.attention %[[Q]], %[[KP]], %[[VP]] mask %[[M]] : tensor<?x1x1x?xf32> paged %[[T]] : tensor<?x?xi64> keys %[[N]] into
// PAGED-SAME: : tensor<?x4x1x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>, tensor<?x4x1x16xf32> -> tensor<?x4x1x16xf32>
// PAGED-NOT: linalg.generic
// CHECK-LABEL: func @paged
// CPU-LABEL: func @paged
// CPU-NOT: kiln_kernel
func.func @paged(%q: tensor<?x4x1x16xf32>, %kpool: tensor<?x2x16x16xf32>, %vpool: tensor<?x2x16x16xf32>, %table: tensor<?x?xi64>, %pos: tensor<i64>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x4x1x16xf32> {
  %k = graph.kv_cache_paged_view %kpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x16xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x16xf32>
  %v = graph.kv_cache_paged_view %vpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x16xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x16xf32>
  %0 = graph.attention %q, %k, %v, %mask {scale = 2.500000e-01 : f32} : (tensor<?x4x1x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x1x16xf32>
  return %0 : tensor<?x4x1x16xf32>
}
