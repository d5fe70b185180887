// kiln-fuse-epilogues: the elementwise consumer of a tiled product (bias + ReLU here) moves into
// the product's tile loop and overwrites the product's tile in place (one result, the product's
// buffer); consumers that read the product through a transpose, or products that other ops
// also read, stay separate.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-tile-contractions,kiln-fuse-epilogues,canonicalize))' | FileCheck %s

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @matmul_bias_relu
// CHECK: %[[LOOP:.*]] = scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (%{{.*}}, 256) step (16, 64) shared_outs(%[[OUT:.*]] = %arg3)
// CHECK: %[[TILE:.*]] = linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 16, 0, 64>
// CHECK: %[[EPI:.*]] = linalg.generic
// CHECK-SAME: ins(%[[TILE]], %{{.*}} : tensor<?x64xf32>, tensor<64xf32>) outs(%[[TILE]] : tensor<?x64xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[EPI]] into %[[OUT]]
// CHECK-NEXT: }
// CHECK-NOT: linalg.generic
// CHECK: return %[[LOOP]]
func.func @matmul_bias_relu(%a: tensor<?x128xf32>, %b: tensor<128x256xf32>, %bias: tensor<256xf32>,
                            %c: tensor<?x256xf32>, %d: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<?x128xf32>, tensor<128x256xf32>) outs(%c : tensor<?x256xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  %1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %bias : tensor<?x256xf32>, tensor<256xf32>) outs(%d : tensor<?x256xf32>) {
  ^bb0(%x: f32, %b0: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.addf %x, %b0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x256xf32>
  return %1 : tensor<?x256xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// The product is also returned: the consumer stays a separate kernel.
// CHECK-LABEL: func @product_also_returned
// CHECK: %[[LOOP:.*]] = scf.forall
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[LOOP]]
func.func @product_also_returned(%a: tensor<8x128xf32>, %b: tensor<128x256xf32>, %c: tensor<8x256xf32>,
                                 %d: tensor<8x256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>) {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<8x128xf32>, tensor<128x256xf32>) outs(%c : tensor<8x256xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x256xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<8x256xf32>) outs(%d : tensor<8x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  } -> tensor<8x256xf32>
  return %0, %1 : tensor<8x256xf32>, tensor<8x256xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// A consumer reading the product transposed needs other tiles than the loop makes: not fused.
// CHECK-LABEL: func @transposed_consumer
// CHECK: %[[LOOP:.*]] = scf.forall
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[LOOP]]
func.func @transposed_consumer(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>, %c: tensor<64x64xf32>,
                               %d: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%c : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %1 = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<64x64xf32>) outs(%d : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  } -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// A loop a lowering marked kiln.epilogue_tiles (a depthwise convolution's
// rows, whose tiles are not a tiled linalg product) takes its elementwise
// consumer (a ReLU6's clamp here) into each row; the same loop unmarked keeps
// it outside.
// CHECK-LABEL: func @marked_rows
// CHECK: scf.forall
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @marked_rows(%x: tensor<4x8xf32>, %init: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = scf.forall (%i) in (4) shared_outs(%o = %init) -> (tensor<4x8xf32>) {
    %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %dst = tensor.extract_slice %o[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%row : tensor<1x8xf32>) outs(%dst : tensor<1x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<1x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %neg into %o[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    }
  } {kiln.epilogue_tiles}
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%d : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %zero = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %lo = arith.maximumf %a, %zero : f32
    %hi = arith.minimumf %lo, %six : f32
    linalg.yield %hi : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @unmarked_rows
// CHECK: %[[LOOP:.*]] = scf.forall
// CHECK-NOT: arith.minimumf
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[LOOP]]
// CHECK: arith.minimumf
func.func @unmarked_rows(%x: tensor<4x8xf32>, %init: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = scf.forall (%i) in (4) shared_outs(%o = %init) -> (tensor<4x8xf32>) {
    %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %dst = tensor.extract_slice %o[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%row : tensor<1x8xf32>) outs(%dst : tensor<1x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<1x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %neg into %o[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    }
  }
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%d : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %zero = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %lo = arith.maximumf %a, %zero : f32
    %hi = arith.minimumf %lo, %six : f32
    linalg.yield %hi : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0 * 14 + d1, d2)>
#chan = affine_map<(d0, d1, d2) -> (d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// A 1x1 convolution's plain product [H*W, C] read over [H, W, C] (bias + residual add): the
// consumer is folded to the product's [H*W, C] (the residual collapsed, a view), fused into the
// tile loop, and its result expanded back to [H, W, C].
// CHECK-LABEL: func @folded_rows_epilogue
// CHECK-DAG: %[[RES:.*]] = tensor.collapse_shape %arg3 {{\[}}[0, 1], [2]] : tensor<14x14x128xf32> into tensor<196x128xf32>
// CHECK: %[[LOOP:.*]] = scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (196, 128) step (16, 64)
// CHECK: %[[TILE:.*]] = linalg.generic
// CHECK-SAME: kiln.tile_sizes
// CHECK: %[[EPI:.*]] = linalg.generic
// CHECK-SAME: ins(%[[TILE]], %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[EPI]]
// CHECK-NOT: linalg.generic
// CHECK: %[[OUT:.*]] = tensor.expand_shape %[[LOOP]] {{\[}}[0, 1], [2]] output_shape [14, 14, 128]
// CHECK: return %[[OUT]]
func.func @folded_rows_epilogue(%a: tensor<196x64xf32>, %b: tensor<64x128xf32>, %bias: tensor<128xf32>,
                                %res: tensor<14x14x128xf32>) -> tensor<14x14x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<196x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<196x128xf32>) -> tensor<196x128xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<196x64xf32>, tensor<64x128xf32>) outs(%c : tensor<196x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<196x128xf32>
  %d = tensor.empty() : tensor<14x14x128xf32>
  %1 = linalg.generic {indexing_maps = [#rows, #chan, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%0, %bias, %res : tensor<196x128xf32>, tensor<128xf32>, tensor<14x14x128xf32>) outs(%d : tensor<14x14x128xf32>) {
  ^bb0(%x: f32, %b0: f32, %r: f32, %o: f32):
    %s = arith.addf %x, %b0 : f32
    %t = arith.addf %s, %r : f32
    linalg.yield %t : f32
  } -> tensor<14x14x128xf32>
  return %1 : tensor<14x14x128xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0 * 14 + d1, d2)>
#chan = affine_map<(d0, d1, d2) -> (d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// The same epilogue padded afterwards (a depthwise convolution's input) stays a kernel of its
// own, still reading the product through folded rows: kiln-pad-in-place gives it the padded
// buffer's interior to write.
// CHECK-LABEL: func @folded_rows_epilogue_padded
// CHECK: %[[LOOP:.*]] = scf.forall
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[LOOP]], %{{.*}} : tensor<196x128xf32>, tensor<128xf32>) outs(%{{.*}} : tensor<14x14x128xf32>)
// CHECK: tensor.pad
func.func @folded_rows_epilogue_padded(%a: tensor<196x64xf32>, %b: tensor<64x128xf32>,
                                       %bias: tensor<128xf32>) -> tensor<16x16x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<196x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<196x128xf32>) -> tensor<196x128xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<196x64xf32>, tensor<64x128xf32>) outs(%c : tensor<196x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<196x128xf32>
  %d = tensor.empty() : tensor<14x14x128xf32>
  %1 = linalg.generic {indexing_maps = [#rows, #chan, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%0, %bias : tensor<196x128xf32>, tensor<128xf32>) outs(%d : tensor<14x14x128xf32>) {
  ^bb0(%x: f32, %b0: f32, %o: f32):
    %s = arith.addf %x, %b0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<14x14x128xf32>
  %p = tensor.pad %1 low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<14x14x128xf32> to tensor<16x16x128xf32>
  return %p : tensor<16x16x128xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// A marked loop whose last tile is shorter (a Winograd output's last row of
// tiles past the output's rows: min(2, 7 - 2 i) rows) still takes its
// consumer: the consumer's tile has the loop's dynamic size.
// CHECK-LABEL: func @marked_partial_rows
// CHECK: scf.forall (%[[I:.*]]) in (4)
// CHECK: %[[ROWS:.*]] = arith.minsi
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x8xf32>) outs(%{{.*}} : tensor<?x8xf32>)
// CHECK: arith.maximumf
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [%[[ROWS]], 8] [1, 1] : tensor<?x8xf32> into tensor<7x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @marked_partial_rows(%x: tensor<8x8xf32>, %init: tensor<7x8xf32>, %d: tensor<7x8xf32>) -> tensor<7x8xf32> {
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %0 = scf.forall (%i) in (4) shared_outs(%o = %init) -> (tensor<7x8xf32>) {
    %top = arith.muli %i, %c2 : index
    %left = arith.subi %c7, %top : index
    %rows = arith.minsi %c2, %left : index
    %tile = tensor.extract_slice %x[%top, 0] [%rows, 8] [1, 1] : tensor<8x8xf32> to tensor<?x8xf32>
    %dst = tensor.extract_slice %o[%top, 0] [%rows, 8] [1, 1] : tensor<7x8xf32> to tensor<?x8xf32>
    %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%tile : tensor<?x8xf32>) outs(%dst : tensor<?x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<?x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %neg into %o[%top, 0] [%rows, 8] [1, 1] : tensor<?x8xf32> into tensor<7x8xf32>
    }
  } {kiln.epilogue_tiles}
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<7x8xf32>) outs(%d : tensor<7x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %zero = arith.constant 0.0 : f32
    %lo = arith.maximumf %a, %zero : f32
    linalg.yield %lo : f32
  } -> tensor<7x8xf32>
  return %1 : tensor<7x8xf32>
}
