// kiln-form-attention-blocks: kiln_kernel.attention on buffers becomes one gpu.launch of 128-thread
// blocks, a block per 8 query rows of each batch index, with the query rows, accumulators, the
// tile's scores and the two halvings in shared memory; a loop over key tiles of 128 holds the
// barriers. f16 operands are widened as they are loaded and the output rounded back.
// RUN: kiln-opt %s -split-input-file -kiln-form-attention-blocks -canonicalize -cse | FileCheck %s

// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<?x4x?x16xf32>, %[[K:[a-z0-9]+]]: memref<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: memref<?x2x?x8xf32>, %[[M:[a-z0-9]+]]: memref<?x1x?x?xf32>, %[[O:[a-z0-9]+]]: memref<?x4x?x8xf32>
// Query rows: the smaller of the query's and the mask's; keys: of K's, V's and the mask's.
// CHECK: %[[SQ:.*]] = arith.minsi
// CHECK: %[[KV:.*]] = arith.minsi
// CHECK: %[[SK:.*]] = arith.minsi %[[KV]]
// CHECK: %[[RB:.*]] = arith.ceildivsi %[[SQ]], %c8
// CHECK: gpu.launch blocks(%[[BLK:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c1, %{{.*}} = %c1) threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME: workgroup(%[[QS:[a-z0-9_]+]] : memref<8x16xf32, #gpu.address_space<workgroup>>, %[[ACC:[a-z0-9_]+]] : memref<8x8xf32, #gpu.address_space<workgroup>>, %[[P:[a-z0-9_]+]] : memref<8x128xf32, #gpu.address_space<workgroup>>, %[[RMAX:[a-z0-9_]+]] : memref<8x128xf32, #gpu.address_space<workgroup>>, %[[RSUM:[a-z0-9_]+]] : memref<8x128xf32, #gpu.address_space<workgroup>>, %[[MS:[a-z0-9_]+]] : memref<8xf32, #gpu.address_space<workgroup>>, %[[LS:[a-z0-9_]+]] : memref<8xf32, #gpu.address_space<workgroup>>)
// A block past the last (batch, row block) does nothing; the condition is the block's, not the thread's.
// CHECK: scf.if %{{.*}} {
// CHECK: %[[ROW0:.*]] = arith.muli %{{.*}}, %c8
// Query head h reads key/value head h / 2 (the ratio 4 / 2 computed on the host side).
// CHECK: arith.divsi
// The query rows go to shared memory, column by column per thread.
// CHECK: memref.store %{{.*}}, %[[QS]]
// CHECK: gpu.barrier
// CHECK: scf.for %[[K0:.*]] = %c0 to %[[SK]] step %c128 {
// CHECK: %[[KEY:.*]] = arith.addi %[[K0]], %[[T]]
// CHECK: arith.cmpi ult, %[[KEY]], %[[SK]]
// Scores: a dot product with the shared query row, * 0.25, + the mask.
// CHECK: math.fma
// CHECK: arith.mulf %{{.*}}, %cst
// CHECK: memref.load %[[M]]
// CHECK: memref.store %{{.*}}, %[[RMAX]]
// CHECK: gpu.barrier
// Seven halvings of 128 values to their max, a barrier after each.
// CHECK-COUNT-7: gpu.barrier
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[RSUM]]
// CHECK: gpu.barrier
// CHECK-COUNT-7: gpu.barrier
// The accumulators, rescaled by exp(m - m'), plus P V.
// CHECK: math.exp
// CHECK: math.fma
// CHECK: memref.store %{{.*}}, %[[ACC]]
// CHECK: gpu.barrier
// m and l, one thread per row.
// CHECK: memref.store %{{.*}}, %[[LS]]
// CHECK: memref.store %{{.*}}, %[[MS]]
// CHECK: gpu.barrier
// CHECK: }
// out = acc / l, 0 without keys.
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[O]]
// CHECK-NOT: kiln_kernel.attention
func.func @decode(%q: memref<?x4x?x16xf32>, %k: memref<?x2x?x16xf32>, %v: memref<?x2x?x8xf32>, %m: memref<?x1x?x?xf32>,
                  %o: memref<?x4x?x8xf32>) {
  kiln_kernel.attention %q, %k, %v mask %m : memref<?x1x?x?xf32> into %o {scale = 0.25 : f32}
      : memref<?x4x?x16xf32>, memref<?x2x?x16xf32>, memref<?x2x?x8xf32>, memref<?x4x?x8xf32>
  return
}

// -----

// CHECK-LABEL: func @half
// CHECK: gpu.launch
// CHECK-SAME: memref<8x64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @half(%q: memref<20x64xf16>, %k: memref<300x64xf16>, %v: memref<300x32xf16>, %o: memref<20x32xf16>) {
  kiln_kernel.attention %q, %k, %v into %o : memref<20x64xf16>, memref<300x64xf16>, memref<300x32xf16>, memref<20x32xf16>
  return
}
