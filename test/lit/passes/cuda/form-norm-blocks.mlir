// kiln-form-norm-blocks: kiln_kernel.row_norm on buffers becomes one gpu.launch with a block per row
// (the rows delinearized over the leading dims), at most 256 threads (the row's length rounded up
// to a power of two, at least 32), and a workgroup buffer of the partial sums plus two slots: the
// mean and 1/stddev. LayerNormalization combines two sums (the mean, then the centred squares),
// RMSNormalization one (the squares); the first thread finishes each statistic, and the last
// pass reads them from shared memory after a barrier and writes the row.
// RUN: kiln-opt %s -split-input-file -kiln-form-norm-blocks -canonicalize -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-form-norm-blocks -canonicalize -cse | FileCheck %s --check-prefix=COUNT

// CHECK-LABEL: func @layer
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<?x?x768xf32>, %[[S:[a-z0-9]+]]: memref<768xf32>, %[[B:[a-z0-9]+]]: memref<1xf32>, %[[O:[a-z0-9]+]]: memref<?x?x768xf32>
// CHECK-DAG: %[[D0:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG: %[[D1:.*]] = memref.dim %[[X]], %c1
// CHECK: %[[ROWS:.*]] = arith.muli %[[D0]], %[[D1]]
// CHECK: %[[GRID:.*]] = arith.maxsi %[[ROWS]], %c1
// CHECK: gpu.launch blocks(%[[BLK:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %c1, %{{.*}} = %c1) threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME: workgroup(%[[SH:[a-z0-9_]+]] : memref<258xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.if %{{.*}} {
// CHECK-DAG: %[[R1:.*]] = arith.remui %[[BLK]], %[[D1]]
// CHECK-DAG: %[[R0:.*]] = arith.divui %[[BLK]], %[[D1]]
// The mean: each thread's strided sum, then the block's.
// CHECK: %[[SUM:.*]] = scf.for %[[J:.*]] = %[[T]] to %c768 step %c256 iter_args(%[[A:.*]] = %cst{{.*}}) -> (f32) {
// CHECK: memref.load %[[X]][%[[R0]], %[[R1]], %[[J]]]
// CHECK: memref.store %[[SUM]], %[[SH]][%[[T]]]
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %[[T]], %c128
// CHECK: arith.divf %{{.*}}, %cst
// CHECK: memref.store %{{.*}}, %[[SH]][%c256]
// CHECK: gpu.barrier
// The centred squares, from the mean in shared memory.
// CHECK: %[[MEAN:.*]] = memref.load %[[SH]][%c256]
// CHECK: scf.for
// CHECK: arith.subf %{{.*}}, %[[MEAN]]
// CHECK: math.rsqrt
// CHECK: memref.store %{{.*}}, %[[SH]][%c257]
// CHECK: gpu.barrier
// The row: (x - mean) * rstd * scale + the one bias element.
// CHECK-DAG: %[[M2:.*]] = memref.load %[[SH]][%c256]
// CHECK-DAG: %[[RSTD:.*]] = memref.load %[[SH]][%c257]
// CHECK: scf.for %[[K:.*]] = %[[T]] to %c768 step %c256 {
// CHECK: %[[XV:.*]] = memref.load %[[X]][%[[R0]], %[[R1]], %[[K]]]
// CHECK: %[[C:.*]] = arith.subf %[[XV]], %[[M2]]
// CHECK: %[[N:.*]] = arith.mulf %[[C]], %[[RSTD]]
// CHECK: %[[SC:.*]] = memref.load %[[S]][%[[K]]]
// CHECK: %[[Y:.*]] = arith.mulf %[[N]], %[[SC]]
// CHECK: %[[BV:.*]] = memref.load %[[B]][%c0]
// CHECK: %[[Z:.*]] = arith.addf %[[Y]], %[[BV]]
// CHECK: memref.store %[[Z]], %[[O]][%[[R0]], %[[R1]], %[[K]]]
// COUNT-LABEL: func @layer
// Two sums of 8 halvings each, a barrier before and after each, and one after each statistic.
// COUNT-COUNT-20: gpu.barrier
// COUNT-NOT: gpu.barrier
// COUNT: return
func.func @layer(%x: memref<?x?x768xf32>, %s: memref<768xf32>, %b: memref<1xf32>, %o: memref<?x?x768xf32>) {
  kiln_kernel.row_norm %x scale %s : memref<768xf32> bias %b : memref<1xf32> into %o {kind = "layer", epsilon = 1.0e-05 : f32}
      : memref<?x?x768xf32>, memref<?x?x768xf32>
  return
}

// -----

// A row of 40: 64 threads; RMS: one sum, of squares, and no mean.
// CHECK-LABEL: func @rms
// CHECK: gpu.launch blocks(%[[BLK:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c5, %{{.*}} = %c1, %{{.*}} = %c1) threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME: workgroup(%[[SH:[a-z0-9_]+]] : memref<66xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%[[BLK]], %{{.*}}]
// CHECK: arith.mulf %[[V]], %[[V]]
// CHECK: math.rsqrt
// CHECK: memref.store %{{.*}}, %[[SH]][%c65]
// CHECK: %[[RMS:.*]] = memref.load %[[SH]][%c65]
// CHECK: scf.for
// CHECK-NOT: arith.subf
// CHECK: arith.mulf %{{.*}}, %[[RMS]]
// CHECK: memref.store
// COUNT-LABEL: func @rms
// COUNT-COUNT-8: gpu.barrier
// COUNT-NOT: gpu.barrier
// COUNT: return
func.func @rms(%x: memref<5x40xf32>, %o: memref<5x40xf32>) {
  kiln_kernel.row_norm %x into %o {kind = "rms", epsilon = 1.0e-06 : f32} : memref<5x40xf32>, memref<5x40xf32>
  return
}

// -----

// A row of 8 still gets a warp; a rank-1 input is one row.
// CHECK-LABEL: func @short
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME: memref<34xf32, #gpu.address_space<workgroup>>
func.func @short(%x: memref<8xf32>, %o: memref<8xf32>) {
  kiln_kernel.row_norm %x into %o {kind = "layer", epsilon = 1.0e-05 : f32} : memref<8xf32>, memref<8xf32>
  return
}

// -----

// Softmax: the row's max (compare and select, from -inf; 0 when it stays -inf), the sum of the
// shifted exponentials (1 / sum kept), then exp(x - max) * (1 / sum).
// CHECK-LABEL: func @softmax
// CHECK: gpu.launch
// CHECK: %[[MAX:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.cmpf oeq, %{{.*}}, %cst
// CHECK: %[[M:.*]] = memref.load %{{.*}}[%c256]
// CHECK: scf.for
// CHECK: arith.subf %{{.*}}, %[[M]]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %{{.*}}[%c257]
// CHECK: scf.for
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK: memref.store
// COUNT-LABEL: func @softmax
// COUNT-COUNT-20: gpu.barrier
// COUNT-NOT: gpu.barrier
// COUNT: return
func.func @softmax(%x: memref<7x1000xf32>, %o: memref<7x1000xf32>) {
  kiln_kernel.row_norm %x into %o {kind = "softmax", epsilon = 0.0 : f32} : memref<7x1000xf32>, memref<7x1000xf32>
  return
}

// -----

// LogSoftmax: x - max - log(sum), no exponential in the last pass.
// CHECK-LABEL: func @log_softmax
// CHECK: math.log
// CHECK: scf.for
// CHECK-NOT: math.exp
// CHECK: arith.subf
// CHECK: arith.subf
// CHECK: memref.store
func.func @log_softmax(%x: memref<7x1000xf32>, %o: memref<7x1000xf32>) {
  kiln_kernel.row_norm %x into %o {kind = "log_softmax", epsilon = 0.0 : f32} : memref<7x1000xf32>, memref<7x1000xf32>
  return
}
