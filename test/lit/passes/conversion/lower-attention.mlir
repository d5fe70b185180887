// graph.attention lowers to a FlashAttention-style kernel: an scf.forall over (batch/heads, query blocks of
// 16 rows), inside it an scf.for over key tiles of 64 carrying the row max, row sum and output accumulator
// (plus the reused score tile); the Sq x Sk scores never exist. Past 512 keys (or with a dynamic key
// count) the keys are split: the work items are (batch/heads, query blocks, splits of 512 keys), each
// writes its partial max, sum and accumulator, and a second scf.forall combines the splits. With one
// split at run time the items write the output themselves and the second loop has no work items.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s --check-prefix=NOSCORES

// A decode step's shapes: dynamic batch, query and key lengths; 4 query heads read 2 key/value heads.
// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[M:[a-z0-9]+]]: tensor<?x1x?x?xf32>
// CHECK: %[[SQ:.*]] = arith.minsi
// Keys: the smaller of K's, V's and the mask's lengths (a broken promise reads nothing out of bounds).
// CHECK: %[[KV:.*]] = arith.minsi
// CHECK: %[[SK:.*]] = arith.minsi %[[KV]]
// CHECK: %[[NS:.*]] = arith.ceildivsi %[[SK]], %c512
// CHECK: %[[SPLITS:.*]] = arith.maxsi %[[NS]], %c1
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[SPLITS]], %c1
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[SQ]], %c16
// The partials have no rows with one split.
// CHECK: arith.select %[[ONE]], %c0, %[[SQ]]
// CHECK: %[[R:.*]]:3 = scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]], %[[S:.*]]) in (%{{.*}}, 4, %[[BLOCKS]], %[[SPLITS]]) shared_outs(%[[OUT0:.*]] = %{{.*}}, %[[ML:.*]] = %{{.*}}, %[[PACC:.*]] = %{{.*}}) -> (tensor<?x4x?x16xf32>, tensor<?x4x2x?x?xf32>, tensor<?x4x?x?x16xf32>)
// Query head h reads key/value head h / 2.
// CHECK: arith.divsi %[[H]], %c2
// CHECK: %[[Q0:.*]] = arith.muli %[[QB]], %c16
// CHECK: %[[ROWS:.*]] = arith.minsi %{{.*}}, %c16
// CHECK: tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[ROWS]], 16] [1, 1, 1, 1] : tensor<?x4x?x16xf32> to tensor<?x16xf32>
// CHECK: %[[TILE:.*]] = tensor.empty() : tensor<16x64xf32>
// Split s takes keys [512 s, min(Sk, 512 (s + 1))).
// CHECK: %[[KB:.*]] = arith.muli %[[S]], %c512
// CHECK: %[[KE0:.*]] = arith.addi %[[KB]], %c512
// CHECK: %[[KE:.*]] = arith.minsi %[[SK]], %[[KE0]]
// CHECK: %[[FOR:.*]]:5 = scf.for %[[K0:.*]] = %[[KB]] to %[[KE]] step %c64 iter_args(%[[MAX:.*]] = %{{.*}}, %[[SUM:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}}, %{{.*}} = %[[TILE]], %{{.*}} = %{{.*}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>, tensor<16x64xf32>, tensor<16xf32>)
// The tail tile has min(64, end - k0) keys.
// CHECK: arith.subi %[[KE]], %[[K0]]
// CHECK: %[[KN:.*]] = arith.minsi %{{.*}}, %c64
// CHECK: tensor.extract_slice %[[K]][%{{.*}}, %{{.*}}, %[[K0]], 0] [1, 1, %[[KN]], 16]
// CHECK: tensor.extract_slice %[[V]][%{{.*}}, %{{.*}}, %[[K0]], 0] [1, 1, %[[KN]], 16]
// S = Q K^T as vector dot products of rows (head size 16: one vector<16xf32> each), then * scale + the mask tile.
// CHECK: scf.for %[[I:.*]] = %c0 to %[[ROWS]] step %c1
// CHECK: scf.for %[[J:.*]] = %c0 to %[[KN]] step %c1
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>
// CHECK: tensor.insert %{{.*}}[%[[I]], %[[J]]] : tensor<?x?xf32>
// CHECK: tensor.extract_slice %[[M]][%{{.*}}, 0, %[[Q0]], %[[K0]]] [1, 1, %[[ROWS]], %[[KN]]]
// CHECK: arith.mulf %{{.*}}, %cst
// Online softmax: new max, rescale of the sum by exp(m - m'), P = exp(S - m').
// CHECK: linalg.generic {{.*}} outs(%[[MAX]], %[[SUM]], %{{.*}} : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
// CHECK: math.exp
// CHECK: math.exp
// acc = acc * alpha + P V: a row of acc in a vector, one broadcast P entry times a row of V per key;
// four rows at a time (four independent FMA chains sharing each V row), then the rows left one
// by one.
// CHECK: %[[GROUPS:.*]] = arith.divui %[[ROWS]], %c4
// CHECK: %[[GROUPED:.*]] = scf.for %{{.*}} = %c0 to %[[GROUPS]] step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (tensor<?x16xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %[[KN]] step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: vector.fma
// CHECK: %[[LEFT:.*]] = arith.muli %[[GROUPS]], %c4
// CHECK: scf.for %{{.*}} = %[[LEFT]] to %[[ROWS]] step %c1 iter_args(%{{.*}} = %[[GROUPED]]) -> (tensor<?x16xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %[[KN]] step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xf32>)
// CHECK: vector.broadcast
// CHECK: vector.fma
// CHECK: vector.transfer_write
// CHECK: scf.yield
// One split: the item writes its rows of the output (acc / l); several: its partial max and sum
// (one [2, rows] tile) and accumulator.
// CHECK: %[[OUTROWS:.*]] = arith.select %[[ONE]], %[[ROWS]], %c0
// CHECK: %[[PROWS:.*]] = arith.select %[[ONE]], %c0, %[[ROWS]]
// CHECK: %[[PAT:.*]] = arith.select %[[ONE]], %c0, %[[Q0]]
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[OUT0]][%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[OUTROWS]], 16]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[ML]][%[[B]], %[[H]], 0, %[[S]], %[[PAT]]] [1, 1, 2, 1, %[[PROWS]]]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[PACC]][%[[B]], %[[H]], %[[S]], %[[PAT]], 0] [1, 1, 1, %[[PROWS]], 16]
// The combination per query block: M = max over splits, w = exp(m - M), l = sum l w, acc = sum acc w
// (splits outermost, in order), out = acc / l written at the block's rows; no work items with one split.
// CHECK: %[[CB:.*]] = arith.select %[[ONE]], %c0, %[[BLOCKS]]
// CHECK: %[[C:.*]] = scf.forall (%[[B2:.*]], %[[H2:.*]], %[[QB2:.*]]) in (%{{.*}}, 4, %[[CB]]) shared_outs(%[[OUT:.*]] = %[[R]]#0) -> (tensor<?x4x?x16xf32>)
// CHECK: %[[Q02:.*]] = arith.muli %[[QB2]], %c16
// CHECK: %[[ROWS2:.*]] = arith.minsi %{{.*}}, %c16
// CHECK: tensor.extract_slice %[[R]]#1[%[[B2]], %[[H2]], 0, 0, %[[Q02]]] [1, 1, 1, %[[SPLITS]], %[[ROWS2]]]
// CHECK: tensor.extract_slice %[[R]]#1[%[[B2]], %[[H2]], 1, 0, %[[Q02]]] [1, 1, 1, %[[SPLITS]], %[[ROWS2]]]
// CHECK: tensor.extract_slice %[[R]]#2[%[[B2]], %[[H2]], 0, %[[Q02]], 0] [1, 1, %[[SPLITS]], %[[ROWS2]], 16]
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: arith.select
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel"]
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[B2]], %[[H2]], %[[Q02]], 0] [1, 1, %[[ROWS2]], 16]
// CHECK: return %[[C]]
// NOSCORES-LABEL: func @decode
// NOSCORES-NOT: tensor<?x4x?x?xf32>
// NOSCORES-NOT: tensor<?x2x?x?xf32>
func.func @decode(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %m: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.25 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
  return %0 : tensor<?x4x?x16xf32>
}

// -----

// Static prefill: 100 queries in 7 blocks, 300 keys in 5 tiles (the last of 44), Dv = 8.
// CHECK-LABEL: func @prefill
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 7)
// CHECK: scf.for %{{.*}} = %c0 to %c300 step %c64 iter_args
// CHECK-SAME: -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<16x64xf32>, tensor<16xf32>)
// 300 keys, known: one split, no combination.
// CHECK-NOT: scf.forall (
// CHECK: return
// NOSCORES-LABEL: func @prefill
// NOSCORES-NOT: 100x300xf32>{{.*}}linalg
// NOSCORES-NOT: tensor<1x2x100x300xf32>
// NOSCORES-NOT: tensor<2x100x300xf32>
func.func @prefill(%q: tensor<1x2x100x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x8xf32>, %m: tensor<100x300xf32>) -> tensor<1x2x100x8xf32> {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.25 : f32} : (tensor<1x2x100x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x8xf32>, tensor<100x300xf32>) -> tensor<1x2x100x8xf32>
  return %0 : tensor<1x2x100x8xf32>
}

// -----

// 1100 known keys: 3 splits (512, 512, 76), 2 query blocks.
// CHECK-LABEL: func @long_static
// CHECK: %[[P:.*]]:3 = scf.forall (%{{.*}}, %{{.*}}, %[[S:.*]]) in (2, 2, 3) shared_outs({{.*}}) -> (tensor<2x20x16xf32>, tensor<2x2x3x20xf32>, tensor<2x3x20x16xf32>)
// CHECK: %[[KB:.*]] = arith.muli %[[S]], %c512
// CHECK: scf.for %{{.*}} = %[[KB]] to %{{.*}} step %c64
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 2) shared_outs(%{{.*}} = %[[P]]#0) -> (tensor<2x20x16xf32>)
// CHECK: tensor.extract_slice %[[P]]#2{{.*}} : tensor<2x3x20x16xf32> to tensor<3x?x16xf32>
func.func @long_static(%q: tensor<2x20x16xf32>, %k: tensor<2x1100x16xf32>, %v: tensor<2x1100x16xf32>) -> tensor<2x20x16xf32> {
  %0 = graph.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<2x20x16xf32>, tensor<2x1100x16xf32>, tensor<2x1100x16xf32>) -> tensor<2x20x16xf32>
  return %0 : tensor<2x20x16xf32>
}

// -----

// No mask and a scale of 1: the scores go straight to the row max. One query block and one key
// tile: canonicalization drops both loops' single iterations, leaving a work item per batch. A head
// size of 4 (no whole vectors) keeps both products as linalg contractions.
// CHECK-LABEL: func @plain
// CHECK: scf.forall (%{{.*}}) in (3)
// CHECK-NOT: scf.for
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<5x9xf32>)
// CHECK-NOT: arith.mulf %{{.*}}, %cst
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "reduction", "parallel"]
func.func @plain(%q: tensor<3x5x4xf32>, %k: tensor<3x9x4xf32>, %v: tensor<3x9x4xf32>) -> tensor<3x5x4xf32> {
  %0 = graph.attention %q, %k, %v : (tensor<3x5x4xf32>, tensor<3x9x4xf32>, tensor<3x9x4xf32>) -> tensor<3x5x4xf32>
  return %0 : tensor<3x5x4xf32>
}

// -----

// A value head of 64: the output row stays in 4 vector accumulators across the keys.
// CHECK-LABEL: func @wide_values
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: vector.fma
// CHECK-COUNT-4: vector.transfer_write
func.func @wide_values(%q: tensor<2x?x16xf32>, %k: tensor<2x?x16xf32>, %v: tensor<2x?x64xf32>) -> tensor<2x?x64xf32> {
  %0 = graph.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x64xf32>) -> tensor<2x?x64xf32>
  return %0 : tensor<2x?x64xf32>
}

// -----

// A head of 15 (an SVTR block's 120 channels in 8 heads) does not split into whole vectors.
// The scores take 16 keys in the lanes: the key tile transposed into a [15, keys] scratch, then
// per block of 16 keys and four query rows at a time, 15 broadcasts of Q[row, c] times K^T[c,
// keys] (four FMA chains sharing each K^T read), scaled and written whole into the score tile.
// 80 static keys (at most 128) are one tile of 80: no key loop, no rescaling between tiles. The
// softmax is vector code per row: a masked max over the blocks and one horizontal max, exp of
// the blocks in place with a masked sum, one horizontal sum. P V keeps a 16-lane row per query,
// its last lane masked (read as zero, never written), four rows at a time.
// CHECK-LABEL: func @odd_head
// CHECK: %[[KT0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<15x80xf32>)
// CHECK-NOT: step %c64
// CHECK: %[[KT:.*]] = linalg.transpose ins(%{{.*}} : tensor<80x15xf32>) outs(%[[KT0]] : tensor<15x80xf32>) permutation = [1, 0]
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<16x80xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c80 step %c16 iter_args(%{{.*}} = %{{.*}}) -> (tensor<16x80xf32>)
// CHECK-COUNT-60: vector.fma
// CHECK-COUNT-4: arith.mulf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c80 step %c16 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xf32>)
// CHECK: vector.create_mask
// CHECK: vector.reduction <maxnumf>
// CHECK: math.roundeven %{{.*}} : f32
// CHECK: scf.for %{{.*}} = %c0 to %c80 step %c16 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<16x80xf32>, vector<16xf32>)
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>
// CHECK: vector.transfer_read %{{[^ ]*}}[%{{[^]]*}}], %{{[a-z_0-9]*}} : tensor<?x15xf32>, vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c80 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.transfer_write %{{[^ ]*}}, %{{[^ ]*}}[%{{[^]]*}}] : vector<16xf32>, tensor<?x15xf32>
func.func @odd_head(%q: tensor<8x80x15xf32>, %k: tensor<8x80x15xf32>, %v: tensor<8x80x15xf32>) -> tensor<8x80x15xf32> {
  %0 = graph.attention %q, %k, %v {scale = 0.258 : f32} : (tensor<8x80x15xf32>, tensor<8x80x15xf32>, tensor<8x80x15xf32>) -> tensor<8x80x15xf32>
  return %0 : tensor<8x80x15xf32>
}

// -----

// Past 128 static keys the tiles are 64 keys again (the online softmax rescales between them,
// still in vector code); a mask keeps the generic softmax (linalg row reductions).
// CHECK-LABEL: func @odd_head_long
// CHECK: tensor<15x64xf32>
// CHECK: scf.for {{.*}} step %c64
// CHECK: vector.reduction <maxnumf>
// CHECK-LABEL: func @odd_head_masked
// CHECK: scf.for {{.*}} step %c64
// CHECK-NOT: vector.reduction <maxnumf>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
func.func @odd_head_long(%q: tensor<8x80x15xf32>, %k: tensor<8x130x15xf32>, %v: tensor<8x130x15xf32>) -> tensor<8x80x15xf32> {
  %0 = graph.attention %q, %k, %v {scale = 0.258 : f32} : (tensor<8x80x15xf32>, tensor<8x130x15xf32>, tensor<8x130x15xf32>) -> tensor<8x80x15xf32>
  return %0 : tensor<8x80x15xf32>
}
func.func @odd_head_masked(%q: tensor<8x80x15xf32>, %k: tensor<8x80x15xf32>, %v: tensor<8x80x15xf32>, %m: tensor<80x80xf32>) -> tensor<8x80x15xf32> {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.258 : f32} : (tensor<8x80x15xf32>, tensor<8x80x15xf32>, tensor<8x80x15xf32>, tensor<80x80xf32>) -> tensor<8x80x15xf32>
  return %0 : tensor<8x80x15xf32>
}

// -----

// Keys read from a KV cache: the partials have a slot for every split of the cache's capacity
// (ceil(capacity / 512)) and a row for every row of the query (the mask's rows are not known until
// it is computed), sizes known when the run starts (the
// memory plan then places them in its arena and reuses the space from layer to layer); the work
// items still take the run's own split count.
// CHECK-LABEL: func @cached_keys
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[CACHE:[a-z0-9]+]]: tensor<?x2x?x16xf32>
// CHECK-DAG: %[[CAP:.*]] = tensor.dim %[[CACHE]], %c2
// CHECK-DAG: %[[DQ:.*]] = tensor.dim %[[Q]], %c2
// CHECK: %[[NS:.*]] = arith.ceildivsi %{{.*}}, %c512
// CHECK: %[[SPLITS:.*]] = arith.maxsi %[[NS]], %c1
// CHECK: %[[SLOTS0:.*]] = arith.ceildivsi %[[CAP]], %c512
// CHECK: %[[SLOTS:.*]] = arith.maxsi %[[SLOTS0]], %c1
// CHECK-DAG: tensor.empty(%{{.*}}, %[[SLOTS]], %[[DQ]]) : tensor<?x4x2x?x?xf32>
// CHECK-DAG: tensor.empty(%{{.*}}, %[[SLOTS]], %[[DQ]]) : tensor<?x4x?x?x16xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 4, %{{.*}}, %[[SPLITS]])
func.func @cached_keys(%q: tensor<?x4x?x16xf32>, %cache: tensor<?x2x?x16xf32>, %vcache: tensor<?x2x?x16xf32>,
                       %new: tensor<?x2x?x16xf32>, %pos: tensor<i64>, %m: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %k = graph.kv_cache_append %cache, %new, %pos {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>) -> tensor<?x2x?x16xf32>
  %v = graph.kv_cache_append %vcache, %new, %pos {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>) -> tensor<?x2x?x16xf32>
  %0 = graph.attention %q, %k, %v, %m {scale = 0.25 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
  return %0 : tensor<?x4x?x16xf32>
}
