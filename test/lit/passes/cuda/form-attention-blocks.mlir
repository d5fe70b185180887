// kiln-form-attention-blocks: kiln_kernel.attention on buffers becomes one gpu.launch of 128-thread
// blocks, a block per 8 query rows of each batch index, with the query rows, accumulators, the
// tile's scores and the two halvings in shared memory; a loop over key tiles of 128 holds the
// barriers. f16 operands are widened as they are loaded and the output rounded back.
// RUN: kiln-opt %s -split-input-file -kiln-form-attention-blocks="min-split-keys=0" -canonicalize -cse | FileCheck %s
// With the keys split over blocks (the default: at least 256 keys a block, until about 264 blocks).
// RUN: kiln-opt %s -split-input-file -kiln-form-attention-blocks -canonicalize -cse | FileCheck %s --check-prefix=SPLIT

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

// -----

// A decode step of 4 heads over 1000 keys: 4 blocks without a split, so the keys go to 4 blocks a
// head in ranges of 256 (static: no choice left to the host). Each block of the first launch
// walks its range and stores its rows' accumulators, max and sum in the partial buffers; the
// second launch (4 blocks, no shared memory) combines the 4 ranges of each row into the output.
// SPLIT-LABEL: func @split_decode
// SPLIT-SAME: memref<1x4x1000x16xf32>, %[[O:[a-z0-9]+]]: memref<1x4x1x16xf32>
// SPLIT-DAG: %[[PACC:.*]] = memref.alloc() : memref<16x8x16xf32>
// SPLIT-DAG: %[[PM:.*]] = memref.alloc() : memref<16x8xf32>
// SPLIT-DAG: %[[PL:.*]] = memref.alloc() : memref<16x8xf32>
// SPLIT: gpu.launch blocks(%[[BLK:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c1, %{{.*}} = %c1) threads
// SPLIT-SAME: workgroup(
// SPLIT: %[[BEGIN:.*]] = arith.muli %{{.*}}, %c256
// SPLIT: %[[END0:.*]] = arith.addi %[[BEGIN]], %c256
// SPLIT: %[[END:.*]] = arith.minsi %[[END0]], %c1000
// SPLIT: scf.for %{{.*}} = %[[BEGIN]] to %[[END]] step %c128
// SPLIT: memref.store %{{.*}}, %[[PACC]][%[[BLK]],
// SPLIT: memref.store %{{.*}}, %[[PM]][%[[BLK]],
// SPLIT: memref.store %{{.*}}, %[[PL]][%[[BLK]],
// SPLIT: gpu.terminator
// SPLIT: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1) threads
// SPLIT-NOT: workgroup
// SPLIT: memref.load %[[PM]]
// SPLIT: math.exp
// SPLIT: memref.load %[[PACC]]
// SPLIT: arith.divf
// SPLIT: memref.store %{{.*}}, %[[O]]
// SPLIT: gpu.terminator
// SPLIT-DAG: memref.dealloc %[[PACC]]
// SPLIT-DAG: memref.dealloc %[[PM]]
// SPLIT-DAG: memref.dealloc %[[PL]]
// Without splitting, one launch of 4 blocks.
// CHECK-LABEL: func @split_decode
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c4,
// CHECK-NOT: gpu.launch
func.func @split_decode(%q: memref<1x4x1x16xf32>, %k: memref<1x4x1000x16xf32>, %v: memref<1x4x1000x16xf32>,
                        %o: memref<1x4x1x16xf32>) {
  kiln_kernel.attention %q, %k, %v into %o : memref<1x4x1x16xf32>, memref<1x4x1000x16xf32>, memref<1x4x1000x16xf32>, memref<1x4x1x16xf32>
  return
}

// -----

// Sizes known at run time: the host splits or not (scf.if), with one partial slot when it does not.
// CHECK-LABEL: func @dynamic_keys
// SPLIT-LABEL: func @dynamic_keys
// SPLIT: %[[SPLIT:.*]] = arith.cmpi sgt, %{{.*}}, %c1
// SPLIT: %[[SLOTS:.*]] = arith.select %[[SPLIT]], %{{.*}}, %c1
// SPLIT: memref.alloc(%[[SLOTS]]) : memref<?x8x16xf32>
// SPLIT: scf.if %[[SPLIT]] {
// SPLIT: gpu.launch
// SPLIT: gpu.launch
// SPLIT: } else {
// SPLIT: gpu.launch
// SPLIT: }
func.func @dynamic_keys(%q: memref<1x4x1x16xf32>, %k: memref<1x4x?x16xf32>, %v: memref<1x4x?x16xf32>,
                        %o: memref<1x4x1x16xf32>) {
  kiln_kernel.attention %q, %k, %v into %o : memref<1x4x1x16xf32>, memref<1x4x?x16xf32>, memref<1x4x?x16xf32>, memref<1x4x1x16xf32>
  return
}

// -----

// Paged keys and values (pools of blocks of 16, a block table, a key count): the keys walked are
// the key count's (the smaller of it and the mask's), and a thread finds key j of its sequence in
// block table[b, j / 16], clamped into the pool, at offset j % 16; the table's row is the block's
// batch index (clamped into the table). Head h reads pool head h / 2, as without paging.
// CHECK-LABEL: func @paged
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<?x4x1x16xf32>, %[[KP:[a-z0-9]+]]: memref<?x2x16x16xf32>, %[[VP:[a-z0-9]+]]: memref<?x2x16x8xf32>, %[[M:[a-z0-9]+]]: memref<?x1x1x?xf32>, %[[T:[a-z0-9]+]]: memref<?x?xi64>, %[[N:[a-z0-9]+]]: index
// CHECK-DAG: %[[NB:.*]] = memref.dim %[[KP]], %c0
// CHECK-DAG: %[[LAST:.*]] = arith.subi %[[NB]], %c1
// CHECK-DAG: %[[MK:.*]] = memref.dim %[[M]], %c3
// CHECK-DAG: %[[NPOS:.*]] = arith.maxsi %[[N]], %c0
// CHECK: %[[SK:.*]] = arith.minsi %[[MK]], %[[NPOS]]
// CHECK: gpu.launch
// CHECK: arith.minsi %{{.*}}, %{{.*}}
// CHECK: scf.for %[[K0:.*]] = %c0 to %[[SK]] step %c128 {
// CHECK: %[[KEY:.*]] = arith.addi %[[K0]], %{{.*}}
// CHECK: %[[COL:.*]] = arith.divui %[[KEY]], %c16
// CHECK: %[[ID:.*]] = memref.load %[[T]][%{{.*}}, %[[COL]]]
// CHECK: %[[BLK:.*]] = arith.index_cast %[[ID]]
// CHECK: %[[CL:.*]] = arith.minsi %[[BLK]], %[[LAST]]
// CHECK: %[[B:.*]] = arith.maxsi %[[CL]], %c0
// CHECK: %[[OFF:.*]] = arith.remui %[[KEY]], %c16
// CHECK: memref.load %[[KP]][%[[B]], %{{.*}}, %[[OFF]], %{{.*}}]
// CHECK: memref.load %[[T]]
// CHECK: memref.load %[[VP]]
// CHECK-NOT: kiln_kernel.attention
func.func @paged(%q: memref<?x4x1x16xf32>, %kp: memref<?x2x16x16xf32>, %vp: memref<?x2x16x8xf32>, %m: memref<?x1x1x?xf32>,
                 %table: memref<?x?xi64>, %n: index, %o: memref<?x4x1x8xf32>) {
  kiln_kernel.attention %q, %kp, %vp mask %m : memref<?x1x1x?xf32> paged %table : memref<?x?xi64> keys %n into %o {scale = 0.25 : f32}
      : memref<?x4x1x16xf32>, memref<?x2x16x16xf32>, memref<?x2x16x8xf32>, memref<?x4x1x8xf32>
  return
}
