// kiln-form-block-reductions: reductions with few outputs and a long reduced extent become one
// block per output with a shared-memory combination; the rest is left to kiln-form-gpu-launches.
// RUN: kiln-opt %s -split-input-file -kiln-form-block-reductions -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-add-runtime-context -kiln-form-block-reductions -kiln-form-gpu-launches | FileCheck %s --check-prefix=LAUNCH

// A row sum, 16 rows of 1024: 16 blocks of 256 threads. Each thread starts from -0.0 and
// folds every 256th element from its own; the block halves 256 partial sums in shared memory
// (8 steps, a barrier after each); thread 0 adds the total to the output.
// CHECK-LABEL: func @main
// The identity of the sum is -0.0, so a row of -0.0 stays -0.0.
// CHECK: %[[ID:.*]] = arith.constant -0.000000e+00 : f32
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c16{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SH:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.if
// CHECK: %[[P:.*]] = scf.for %[[R:.*]] = %[[TX]] to %c1024{{.*}} step %c256{{.*}} iter_args(%[[A:.*]] = %[[ID]]) -> (f32)
// CHECK: %[[X:.*]] = memref.load %{{.*}}[%[[BX]], %[[R]]]
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[A]]
// CHECK: scf.yield %[[S]]
// CHECK: memref.store %[[P]], %[[SH]][%[[TX]]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: gpu.barrier
// CHECK: arith.cmpi eq, %[[TX]], %c0
// CHECK: memref.load %{{.*}}[%[[BX]]] : memref<16xf32>
// CHECK: memref.load %[[SH]][%c0
// CHECK: arith.addf
// CHECK: memref.store {{.*}}[%[[BX]]] : memref<16xf32>
// CHECK-NOT: scf.parallel
// LAUNCH-LABEL: func @main
// LAUNCH: gpu.launch {{.*}} workgroup(
// LAUNCH-NOT: gpu.launch
// LAUNCH: return
func.func @main(%x: memref<16x1024xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.for %k = %c0 to %c1024 step %c1 {
      %v = memref.load %x[%i, %k] : memref<16x1024xf32>
      %a = memref.load %out[%i] : memref<16xf32>
      %s = arith.addf %v, %a : f32
      memref.store %s, %out[%i] : memref<16xf32>
    }
    scf.reduce
  } loc("row_sum")
  return
}

// -----

// A max over 100 elements (a value computed from the element first): a block of 128 threads,
// 7 halving steps, identity -inf; the accumulator may be the combination's first operand.
// CHECK-LABEL: func @main
// LAUNCH-LABEL: func @main
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFC00 : f16
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128{{.*}}) workgroup({{.*}} : memref<128xf16, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args(%[[A:.*]] = %[[NEGINF:.*]]) -> (f16)
// CHECK: %[[E:.*]] = arith.mulf
// CHECK: arith.maximumf %[[A]], %[[E]]
// CHECK-COUNT-8: gpu.barrier
// CHECK-NOT: gpu.barrier
func.func @main(%x: memref<8x100xf16>, %out: memref<8xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c100 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x100xf16>
      %e = arith.mulf %v, %v : f16
      %a = memref.load %out[%i] : memref<8xf16>
      %m = arith.maximumf %a, %e : f16
      memref.store %m, %out[%i] : memref<8xf16>
    }
    scf.reduce
  }
  return
}

// -----

// kiln's float max and min are a compare and a select of the compared values: the compare goes
// with the combination: select(a > b, a, b) is a max (identity -inf), select(a > b, b, a) a min
// (identity +inf).
// CHECK-LABEL: func @main
// LAUNCH-LABEL: func @main
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args(%[[A:.*]] = %[[NEGINF]])
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[A]], %[[X:.*]] : f32
// CHECK: arith.select %[[GT]], %[[A]], %[[X]]
// CHECK: arith.cmpf ogt
// CHECK-NEXT: arith.select
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[INF]])
// CHECK: arith.cmpf ogt
func.func @main(%x: memref<8x512xf32>, %max: memref<8xf32>, %min: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c512 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x512xf32>
      %a = memref.load %max[%i] : memref<8xf32>
      %gt = arith.cmpf ogt, %a, %v : f32
      %m = arith.select %gt, %a, %v : f32
      memref.store %m, %max[%i] : memref<8xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c512 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x512xf32>
      %a = memref.load %min[%i] : memref<8xf32>
      %gt = arith.cmpf ogt, %a, %v : f32
      %m = arith.select %gt, %v, %a : f32
      memref.store %m, %min[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A fill of the outputs right before the reduction goes into the block launch: thread 0 folds
// the total into the fill's value without reading the output, and the fill's loop is gone. When
// the host picks at run time (a block per row, a warp per row when there are many rows of at least
// 32, or the nest), the one-thread branch keeps the fill before its nest. A reduction to one
// element takes a scalar store before it the same way.
// CHECK-LABEL: func @main
// LAUNCH-LABEL: func @main
// CHECK-DAG: %[[LOW:.*]] = arith.constant -3.40282347E+38 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch
// CHECK: arith.cmpi eq
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[T:.*]] = memref.load %{{.*}}[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[GT:.*]] = arith.cmpf ogt, %[[LOW]], %[[T]]
// CHECK-NEXT: %[[M:.*]] = arith.select %[[GT]], %[[LOW]], %[[T]]
// CHECK-NEXT: memref.store %[[M]], %arg1[%{{.*}}] : memref<8xf32>
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-NEXT: memref.store {{.*}} : memref<?xf32>
// CHECK: } else {
// CHECK-NEXT: arith.cmpi sge, %{{.*}}, %c32
// CHECK-NEXT: scf.if
// CHECK-NEXT: arith.ceildivui %{{.*}}, %c8
// CHECK-NEXT: arith.maxsi
// CHECK-NEXT: gpu.launch
// CHECK: arith.divui %{{.*}}, %c32
// CHECK: arith.remui %{{.*}}, %c32
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-NEXT: memref.store {{.*}} : memref<?xf32>
// CHECK: } else {
// CHECK-NEXT: scf.parallel
// CHECK: memref.store %[[ZERO]]
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: gpu.launch
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-NEXT: memref.store {{.*}} : memref<f32>
func.func @main(%x: memref<8x512xf32>, %max: memref<8xf32>, %y: memref<?x?xf32>, %sum: memref<?xf32>,
                %all: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  %low = arith.constant -3.40282347E+38 : f32
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %low, %max[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c512 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x512xf32>
      %a = memref.load %max[%i] : memref<8xf32>
      %gt = arith.cmpf ogt, %a, %v : f32
      %m = arith.select %gt, %a, %v : f32
      memref.store %m, %max[%i] : memref<8xf32>
    }
    scf.reduce
  }
  %n = memref.dim %y, %c0 : memref<?x?xf32>
  %k = memref.dim %y, %c1 : memref<?x?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %sum[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %k step %c1 {
      %v = memref.load %y[%i, %j] : memref<?x?xf32>
      %a = memref.load %sum[%i] : memref<?xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %sum[%i] : memref<?xf32>
    }
    scf.reduce
  }
  memref.store %zero, %all[] : memref<f32>
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c512 step %c1 {
      %v = memref.load %x[%i, %j] : memref<8x512xf32>
      %a = memref.load %all[] : memref<f32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %all[] : memref<f32>
    }
  }
  return
}

// -----

// Sizes known only at run time: the host picks a block per output when there are fewer than 32768
// outputs and at least 64 reduced elements, else a warp per output (8 to a block of 256, the
// halving within each warp's 32 lanes) when at least 32, the loop nest as it was otherwise.
// CHECK-LABEL: func @main
// CHECK: arith.constant -2147483648 : i32
// CHECK: %[[FEW:.*]] = arith.cmpi slt, %{{.*}}, %c32768
// CHECK: %[[LONG:.*]] = arith.cmpi sge, %{{.*}}, %c64
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup({{.*}} : memref<256xi32, #gpu.address_space<workgroup>>)
// CHECK: arith.maxsi
// CHECK: } else {
// CHECK: arith.cmpi sge, %{{.*}}, %c32
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup({{.*}} : memref<256xi32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-6: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: } else {
// CHECK: scf.parallel
// LAUNCH-LABEL: func @main
// LAUNCH: scf.if
// LAUNCH: gpu.launch {{.*}} workgroup(
// LAUNCH: } else {
// LAUNCH: scf.if
// LAUNCH: gpu.launch {{.*}} workgroup(
// LAUNCH: } else {
// LAUNCH: gpu.launch
// LAUNCH-NOT: workgroup
// LAUNCH: return
func.func @main(%x: memref<?x?xi32>, %out: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xi32>
  %k = memref.dim %x, %c1 : memref<?x?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %k step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xi32>
      %a = memref.load %out[%i] : memref<?xi32>
      %m = arith.maxsi %a, %v : i32
      memref.store %m, %out[%i] : memref<?xi32>
    }
    scf.reduce
  }
  return
}

// -----

// A reduction of a whole 16x16 tensor to one element: one block; the reduced space is delinearized
// (innermost fastest); the product's identity is 1.
// CHECK-LABEL: func @main
// LAUNCH-LABEL: func @main
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: scf.for {{.*}} = {{.*}} to %c256 step %c256
// CHECK: arith.remui {{.*}}, %c16
// CHECK: arith.divui {{.*}}, %c16
// CHECK: arith.mulf
func.func @main(%x: memref<16x16xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %v = memref.load %x[%i, %j] : memref<16x16xf32>
      %a = memref.load %out[] : memref<f32>
      %m = arith.mulf %a, %v : f32
      memref.store %m, %out[] : memref<f32>
    }
  }
  return
}

// -----

// A reduction of a dynamic extent to one element gets its block without a choice on the host:
// the alternative would be a one-thread launch, and a choice around it would nest the launches.
// CHECK-LABEL: func @main
// CHECK-NOT: scf.if
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(
// CHECK: scf.for {{.*}} step %c256 iter_args
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
// LAUNCH-LABEL: func @main
// LAUNCH: gpu.launch {{.*}} workgroup(
// LAUNCH-NOT: gpu.launch
// LAUNCH: return
func.func @main(%x: memref<?xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %a = memref.load %out[] : memref<f32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[] : memref<f32>
  }
  return
}

// -----

// A reduced extent of 8 and a sum of 65536 columns stay one thread per output; a loop that stores
// where it reads along (a scan), two accumulators, a select of values other than the compared ones
// and a combination that is not associative are no reductions for blocks.
// CHECK-LABEL: func @main
// LAUNCH-LABEL: func @main
// CHECK-NOT: gpu.launch
// CHECK-NOT: workgroup
func.func @main(%x: memref<1024x8xf32>, %short: memref<1024xf32>, %y: memref<64x65536xf32>, %wide: memref<65536xf32>,
                %scan: memref<1024xf32>, %two: memref<2xf32>, %sub: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %c1023 = arith.constant 1023 : index
  %c65536 = arith.constant 65536 : index
  scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %k] : memref<1024x8xf32>
      %a = memref.load %short[%i] : memref<1024xf32>
      %s = arith.addf %v, %a : f32
      memref.store %s, %short[%i] : memref<1024xf32>
    }
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%c65536) step (%c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %v = memref.load %y[%k, %j] : memref<64x65536xf32>
      %a = memref.load %wide[%j] : memref<65536xf32>
      %s = arith.addf %v, %a : f32
      memref.store %s, %wide[%j] : memref<65536xf32>
    }
    scf.reduce
  }
  scf.for %k = %c0 to %c1023 step %c1 {
    %n = arith.addi %k, %c1 : index
    %a = memref.load %scan[%k] : memref<1024xf32>
    %b = memref.load %scan[%n] : memref<1024xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %scan[%n] : memref<1024xf32>
  }
  scf.for %k = %c0 to %c1024 step %c1 {
    %v = memref.load %scan[%k] : memref<1024xf32>
    %a = memref.load %two[%c0] : memref<2xf32>
    %b = memref.load %two[%c1] : memref<2xf32>
    %s = arith.addf %v, %a : f32
    %m = arith.maximumf %v, %b : f32
    memref.store %s, %two[%c0] : memref<2xf32>
    memref.store %m, %two[%c1] : memref<2xf32>
  }
  scf.for %k = %c0 to %c1024 step %c1 {
    %v = memref.load %scan[%k] : memref<1024xf32>
    %a = memref.load %sub[] : memref<f32>
    %w = arith.negf %v : f32
    %gt = arith.cmpf ogt, %a, %v : f32
    %m = arith.select %gt, %a, %w : f32
    memref.store %m, %sub[] : memref<f32>
  }
  scf.for %k = %c0 to %c1024 step %c1 {
    %v = memref.load %scan[%k] : memref<1024xf32>
    %a = memref.load %sub[] : memref<f32>
    %s = arith.subf %a, %v : f32
    memref.store %s, %sub[] : memref<f32>
  }
  return
}

// -----

// 64 columns of 4096 rows: few outputs, so blocks even though each thread reads a strided column.
// Inside host control flow around kernels (as kiln-call-device-gemm leaves its fallback) the
// reduction gets blocks too, and takes in the fill before it.
// CHECK-LABEL: func @main
// LAUNCH-LABEL: func @main
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c64
// CHECK: scf.if
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c64
func.func @main(%y: memref<4096x64xf32>, %out: memref<64xf32>, %z: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %d = memref.dim %z, %c0 : memref<?xf32>
  %flag = arith.cmpi sgt, %d, %c0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
    scf.for %k = %c0 to %c4096 step %c1 {
      %v = memref.load %y[%k, %j] : memref<4096x64xf32>
      %a = memref.load %out[%j] : memref<64xf32>
      %s = arith.addf %v, %a : f32
      memref.store %s, %out[%j] : memref<64xf32>
    }
    scf.reduce
  }
  scf.if %flag {
    scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
      memref.store %zero, %out[%j] : memref<64xf32>
      scf.reduce
    }
    scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
      scf.for %k = %c0 to %c4096 step %c1 {
        %v = memref.load %y[%k, %j] : memref<4096x64xf32>
        %a = memref.load %out[%j] : memref<64xf32>
        %s = arith.addf %v, %a : f32
        memref.store %s, %out[%j] : memref<64xf32>
      }
      scf.reduce
    }
  }
  return
}

// -----

// The fill's bounds are the output's sizes, the reduction's come from its first operand, an
// expand_shape view given those same sizes (the GPU's int8 product reads the lhs as [M, G, g]):
// memref.dim of the view is the size it was given, so the fill is still taken in (no loop left).
// CHECK-LABEL: func @main(%arg0: memref<?x256xf32>, %arg1: memref<64x256xf32>, %arg2: memref<?x64xf32>)
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch
// CHECK: arith.addf %{{.*}}, %cst
func.func @main(%x: memref<?x256xf32>, %w: memref<64x256xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x256xf32>
  %v = memref.expand_shape %x [[0], [1, 2]] output_shape [%m, 1, 256] : memref<?x256xf32> into memref<?x1x256xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c64) step (%c1, %c1) {
    memref.store %zero, %y[%i, %j] : memref<?x64xf32>
    scf.reduce
  }
  %d = memref.dim %v, %c0 : memref<?x1x256xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%d, %c64) step (%c1, %c1) {
    scf.for %k = %c0 to %c256 step %c1 {
      %a = memref.load %v[%i, %c0, %k] : memref<?x1x256xf32>
      %b = memref.load %w[%j, %k] : memref<64x256xf32>
      %acc = memref.load %y[%i, %j] : memref<?x64xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %y[%i, %j] : memref<?x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A fill that computes each output's initial value (bias + residual, as kiln-fold-reduction-addends
// leaves it) goes into the launch too: the first thread of each block loads and adds them for its
// output, then adds the block's total; the fill's loop is gone.
// CHECK-LABEL: func @main(%arg0: memref<8x256xf32>, %arg1: memref<16x256xf32>, %arg2: memref<16xf32>, %arg3: memref<8x16xf32>, %arg4: memref<8x16xf32>)
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch
// CHECK: arith.cmpi eq
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[B:.*]] = memref.load %arg2[%[[J:.*]]] : memref<16xf32>
// CHECK-NEXT: %[[R:.*]] = memref.load %arg3[%[[I:.*]], %[[J]]] : memref<8x16xf32>
// CHECK-NEXT: %[[INIT:.*]] = arith.addf %[[B]], %[[R]]
// CHECK-NEXT: %[[T:.*]] = memref.load %{{.*}}[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[INIT]], %[[T]]
// CHECK-NEXT: memref.store %[[S]], %arg4[%[[I]], %[[J]]]
func.func @main(%x: memref<8x256xf32>, %w: memref<16x256xf32>, %b: memref<16xf32>, %res: memref<8x16xf32>,
                %y: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    %bv = memref.load %b[%j] : memref<16xf32>
    %rv = memref.load %res[%i, %j] : memref<8x16xf32>
    %t = arith.addf %bv, %rv : f32
    memref.store %t, %y[%i, %j] : memref<8x16xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    scf.for %k = %c0 to %c256 step %c1 {
      %a = memref.load %x[%i, %k] : memref<8x256xf32>
      %wv = memref.load %w[%j, %k] : memref<16x256xf32>
      %acc = memref.load %y[%i, %j] : memref<8x16xf32>
      %p = arith.mulf %a, %wv : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %y[%i, %j] : memref<8x16xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A fill reading the output at another element (here its transpose's) would see what other blocks
// already stored: it stays a loop of its own before the launch.
// CHECK-LABEL: func @main(%arg0: memref<8x256xf32>, %arg1: memref<8x256xf32>, %arg2: memref<8x8xf32>)
// CHECK: scf.parallel
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}]
// CHECK: gpu.launch
func.func @main(%x: memref<8x256xf32>, %w: memref<8x256xf32>, %y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %t = memref.load %y[%j, %i] : memref<8x8xf32>
    memref.store %t, %y[%i, %j] : memref<8x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    scf.for %k = %c0 to %c256 step %c1 {
      %a = memref.load %x[%i, %k] : memref<8x256xf32>
      %wv = memref.load %w[%j, %k] : memref<8x256xf32>
      %acc = memref.load %y[%i, %j] : memref<8x8xf32>
      %p = arith.mulf %a, %wv : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %y[%i, %j] : memref<8x8xf32>
    }
    scf.reduce
  }
  return
}
