// graph.quantized_matmul: one scf.forall over (64-row tile, panel); rows in
// blocks (4 with the default 256-bit vectors, 32 columns at a time), then
// single rows (a whole 64-column panel row per pass). Weights are converted
// to f32 as they are read; no dequantized weight tensor exists. With several
// groups, a block scales each converted weight vector once for its rows; a
// single row sums each group's products and scales the sum.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg=vector-bits=512 -canonicalize -cse | FileCheck %s --check-prefix=WIDE

// WIDE-LABEL: func @int4
// WIDE: scf.for {{.*}} -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)

// CHECK-LABEL: func @int4
// CHECK: %[[A:.*]] = tensor.reshape %arg0{{.*}} -> tensor<?x64xf32>
// CHECK: scf.forall (%[[T:.*]], %[[P:.*]]) in (%{{.*}}, 2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<?x128xf32>)
// CHECK: %[[TILE:.*]] = tensor.extract_slice %[[OUT]]
// Blocks of 4 rows: two groups of 16 weight rows (32 k) each; the group's
// f16 scales are read once and multiply each converted weight vector.
// CHECK: scf.for %[[G:[a-z0-9_]+]] = %c0 to %c2 step %c1 iter_args({{.*}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
// CHECK: %[[S:.*]] = vector.transfer_read %arg2[%[[P]], %[[G]], %{{.*}}]{{.*}} : tensor<2x2x64xf16>, vector<32xf16>
// CHECK: %[[SF:.*]] = arith.extf %[[S]] : vector<32xf16> to vector<32xf32>
// CHECK: scf.for %[[KK:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c1
// CHECK: %[[BYTES:.*]] = vector.transfer_read %arg1[%[[P]], %[[KK]], %{{.*}}], %{{.*}} : tensor<2x32x64xi8>, vector<32xi8>
// CHECK: %[[EXT:.*]] = arith.extsi %[[BYTES]] : vector<32xi8> to vector<32xi32>
// Low nibble (k = 2kk): shift up then arithmetically down; high nibble: down by 4.
// CHECK: %[[UP:.*]] = arith.shli %[[EXT]], %{{.*}} : vector<32xi32>
// CHECK: %[[LO:.*]] = arith.shrsi %[[UP]]
// CHECK: %[[HI:.*]] = arith.shrsi %[[EXT]]
// CHECK: %[[LOF:.*]] = arith.sitofp %[[LO]]
// CHECK: %[[HIF:.*]] = arith.sitofp %[[HI]]
// CHECK: %[[LOS:.*]] = arith.mulf %[[LOF]], %[[SF]]
// CHECK: %[[K0:.*]] = arith.muli %[[KK]], %c2
// CHECK: tensor.extract %[[A]][%{{.*}}, %[[K0]]]
// CHECK: vector.fma %{{.*}}, %[[LOS]]
// CHECK-COUNT-3: vector.fma %{{.*}}, %[[LOS]]
// CHECK: %[[HIS:.*]] = arith.mulf %[[HIF]], %[[SF]]
// CHECK: vector.fma %{{.*}}, %[[HIS]]
// CHECK-COUNT-4: vector.transfer_write
// The remaining rows one by one, 64 columns at a time: group sums, then
// scaled into the total.
// CHECK: vector.transfer_read %arg2{{.*}} : tensor<2x2x64xf16>, vector<64xf16>
// CHECK: %[[S1:.*]] = arith.extf
// CHECK: %[[SUM:.*]] = scf.for
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<2x32x64xi8>, vector<64xi8>
// CHECK-NOT: arith.mulf
// CHECK: scf.yield
// CHECK: vector.fma %[[SUM]], %[[S1]]
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.reshape {{.*}} -> tensor<?x?x128xf32>
func.func @int4(%x: tensor<?x?x64xf32>, %w: tensor<2x32x64xi8>, %s: tensor<2x2x64xf16>) -> tensor<?x?x128xf32> {
  %y = graph.quantized_matmul %x, %w, %s {bits = 4 : i64, group_size = 32 : i64} : (tensor<?x?x64xf32>, tensor<2x32x64xi8>, tensor<2x2x64xf16>) -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}

// -----

// int8, one group per column: each byte converts straight to f32; the sums
// are scaled once, after the reduction.
// CHECK-LABEL: func @int8
// CHECK-NOT: tensor.reshape
// CHECK: scf.forall
// CHECK: %[[B8:.*]] = vector.transfer_read %arg1{{.*}} : tensor<1x48x16xi8>, vector<16xi8>
// CHECK: arith.sitofp %[[B8]] : vector<16xi8> to vector<16xf32>
// CHECK-NOT: arith.mulf
// CHECK: scf.yield
// CHECK: %[[S8:.*]] = vector.transfer_read %arg2{{.*}} : tensor<1x1x16xf32>, vector<16xf32>
// CHECK: arith.mulf %{{.*}}, %[[S8]]
// CHECK-NOT: arith.extf
func.func @int8(%x: tensor<?x48xf32>, %w: tensor<1x48x16xi8>, %s: tensor<1x1x16xf32>) -> tensor<?x16xf32> {
  %y = graph.quantized_matmul %x, %w, %s {bits = 8 : i64, group_size = 48 : i64} : (tensor<?x48xf32>, tensor<1x48x16xi8>, tensor<1x1x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// dynamic: rows quantized first (max |row|, then two int8 lanes per i32 with
// round half to even), then 32-bit sums of 16-bit pair products (marked for
// kiln-select-pair-products), scaled by max/127 and the column scale.
// CHECK-LABEL: func @dynamic
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[PAIRS:.*]] = linalg.generic {{.*}} ins(%arg0, %arg0, %[[MAX]] : {{.*}}) outs(%{{.*}} : tensor<?x24xi32>)
// CHECK: math.roundeven
// CHECK: scf.forall
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<1x24x32xi8>, vector<32xi8>
// CHECK: arith.extsi {{.*}} : vector<32xi8> to vector<32xi16>
// CHECK: tensor.extract %[[PAIRS]]
// CHECK: vector.bitcast {{.*}} : vector<16xi32> to vector<32xi16>
// CHECK: arith.addi {{.*}} {kiln.pair_product} : vector<16xi32>
// CHECK: tensor.extract %[[MAX]]
// CHECK: arith.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
func.func @dynamic(%x: tensor<?x48xf32>, %w: tensor<1x24x32xi8>, %s: tensor<1x1x16xf32>) -> tensor<?x16xf32> {
  %y = graph.quantized_matmul %x, %w, %s {bits = 8 : i64, group_size = 48 : i64, dynamic} : (tensor<?x48xf32>, tensor<1x24x32xi8>, tensor<1x1x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// integer_matmul: the i32 lhs paired into 16-bit lanes, the same integer
// kernel, 32-bit sums written as they are (no conversion, no scales).
// CHECK-LABEL: func @integer
// CHECK: %[[PAIRS:.*]] = linalg.generic {{.*}} ins(%arg0, %arg0 : {{.*}}) outs(%{{.*}} : tensor<?x24xi32>)
// CHECK: arith.shli
// CHECK: arith.andi
// CHECK: arith.ori
// CHECK: scf.forall
// CHECK: tensor.extract %[[PAIRS]]
// CHECK: arith.addi {{.*}} {kiln.pair_product} : vector<16xi32>
// CHECK-NOT: arith.sitofp
// CHECK: vector.transfer_write {{.*}} : vector<16xi32>, tensor<?x16xi32>
func.func @integer(%x: tensor<?x48xi32>, %w: tensor<1x24x32xi8>) -> tensor<?x16xi32> {
  %y = graph.integer_matmul %x, %w : (tensor<?x48xi32>, tensor<1x24x32xi8>) -> tensor<?x16xi32>
  return %y : tensor<?x16xi32>
}
