// Verifier errors of graph ops (shape inference disagreeing or impossible).
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @bad_broadcast(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{operands cannot be broadcast together}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bad_matmul(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{matmul contraction sizes differ: 3 vs 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @wrong_result_type(%a: tensor<2x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{inferred type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @bad_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{transpose perm is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{input channels 3 != weight channels 2 x group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<4xf32> {
  %s = graph.constant {value = dense<[4]> : tensor<1xi64>} : () -> tensor<1xi64>
  // expected-error @+2 {{reshape of 6 elements into 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @where_types(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{where branches must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @expand_bad(%x: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{input cannot be broadcast to the expand shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.expand %x {shape = array<i64: 4>} : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @pad_negative(%x: tensor<3xf32>, %v: tensor<f32>) -> tensor<2xf32> {
  // expected-error @+2 {{negative pads (cropping) are not supported}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %x, %v {mode = "constant", pads = array<i64: -1, 0>} : (tensor<3xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @float_mod(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{mod of floating-point values needs fmod=1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.mod %a, %b {fmod = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_gather_nd(%d: tensor<2x2xf32>, %i: tensor<3x?xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{gather_nd needs a static last dimension of indices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_nd %d, %i : (tensor<2x2xf32>, tensor<3x?xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @bad_scatter_reduction(%d: tensor<3xf32>, %i: tensor<2xi64>, %u: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{unknown scatter reduction 'sub'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_elements %d, %i, %u {reduction = "sub"} : (tensor<3xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @bad_scatter_nd_updates(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{updates must have shape indices.shape[:-1] + data.shape[k:]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @bad_top_k(%x: tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xi64>) {
  %k = graph.constant {value = dense<5> : tensor<1xi64>} : () -> tensor<1xi64>
  // expected-error @+2 {{k out of range}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = graph.top_k %x, %k {axis = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x5xf32>, tensor<3x5xi64>)
  return %v, %i : tensor<3x5xf32>, tensor<3x5xi64>
}

// -----

func.func @bad_einsum(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{einsum operands disagree on the size of a label}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @bad_einsum_equation(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{invalid einsum equation 'ijk->i'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.einsum %a {equation = "ijk->i"} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_gelu_approximate(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{gelu approximate must be "none" or "tanh"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bad_rms_norm_scale(%x: tensor<4x8xf32>, %s: tensor<5xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{rms_norm scale must broadcast to the input's shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.rms_norm %x, %s : (tensor<4x8xf32>, tensor<5xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @bad_rms_norm_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{rms_norm axis out of range}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.rms_norm %x {axis = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @dynamic_tile_repeats(%x: tensor<2x3xf32>, %r: tensor<3xi64>) -> tensor<?x?xf32> {
  // expected-error @+2 {{dynamic_tile needs one repeat per axis (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_tile %x, %r : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// --- Resize family ---
func.func @resize_scales_and_sizes(%x: tensor<1x1x2x2xf32>, %s: tensor<4xf32>, %n: tensor<4xi64>) -> tensor<?x?x?x?xf32> {
  // expected-error @+2 {{resize needs exactly one of scales and sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x scales %s sizes %n {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
      : (tensor<1x1x2x2xf32>, tensor<4xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @dynamic_reduce_kind(%x: tensor<2x3xf32>, %a: tensor<1xi64>) -> tensor<2x1xf32> {
  // expected-error @+2 {{unknown dynamic_reduce kind 'median'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_reduce %x, %a {kind = "median"} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @resize_scales_length(%x: tensor<1x1x2x2xf32>, %s: tensor<3xf32>) -> tensor<?x?x?x?xf32> {
  // expected-error @+2 {{resize scales must have 4 values, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x scales %s {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
      : (tensor<1x1x2x2xf32>, tensor<3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @dynamic_squeeze_too_many(%x: tensor<1x1xf32>, %a: tensor<3xi64>) -> tensor<?xf32> {
  // expected-error @+2 {{dynamic_squeeze: 3 axes for a rank-2 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_squeeze %x, %a : (tensor<1x1xf32>, tensor<3xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @resize_bad_mode(%x: tensor<1x1x2x2xf32>, %s: tensor<4xf32>) -> tensor<?x?x?x?xf32> {
  // expected-error @+2 {{unsupported resize mode 'bicubic'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x scales %s {mode = "bicubic", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
      : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @resize_crop_without_roi(%x: tensor<1x1x2x2xf32>, %n: tensor<4xi64>) -> tensor<?x?x?x?xf32> {
  // expected-error @+2 {{coordinate_transformation_mode tf_crop_and_resize needs roi}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x sizes %n {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "floor"}
      : (tensor<1x1x2x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @resize_negative_scale(%x: tensor<1x1x2x2xf32>) -> tensor<?x?x?x?xf32> {
  %s = graph.constant {value = dense<[1.0, 1.0, -2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  // expected-error @+2 {{resize scales must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x scales %s {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
      : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}
// --- end Resize family ---

// -----

// newops: pooling with indices, det.
func.func @bad_det_not_square(%x: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+2 {{det needs square matrices, got 2x3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.det %x : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @bad_det_integer(%x: tensor<2x2xi32>) -> tensor<i32> {
  // expected-error @+2 {{det input must be floating point}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.det %x : (tensor<2x2xi32>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

func.func @bad_storage_order(%x: tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) {
  // expected-error @+2 {{storage_order must be 0 or 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, storage_order = 2 : i64}
      : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
  return %v, %i : tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>
}

// -----

func.func @bad_grid_sample_mode(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+2 {{unsupported grid_sample mode 'area'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.grid_sample %x, %g {mode = "area"} : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @bad_roi_align_ratio(%x: tensor<1x1x4x4xf32>, %r: tensor<2x4xf32>, %b: tensor<2xi64>) -> tensor<2x1x1x1xf32> {
  // expected-error @+2 {{roi_align sampling_ratio must be >= 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.roi_align %x, %r, %b {sampling_ratio = -1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x1x1x1xf32>
  return %0 : tensor<2x1x1x1xf32>
}

// -----

func.func @bad_max_unpool_indices(%x: tensor<4xf32>, %i: tensor<5xi64>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  // expected-error @+2 {{max_unpool indices must have the input's shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_unpool %x, %i, %s : (tensor<4xf32>, tensor<5xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @bad_compress(%x: tensor<2x3xf32>, %c: tensor<4xi1>) -> tensor<2x?xf32> {
  // expected-error @+2 {{compress condition has 4 entries for an axis of 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.compress %x, %c {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4xi1>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

func.func @bad_unique_axis(%x: tensor<2x3xf32>) -> tensor<?xi64> {
  // expected-error @+2 {{unique axis 2 out of range}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:4 = graph.unique %x {axis = 2 : i64} : (tensor<2x3xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
  return %0#1 : tensor<?xi64>
}

// -----

func.func @bad_nms_boxes(%b: tensor<1x6x5xf32>, %s: tensor<1x1x6xf32>, %m: tensor<1xi64>, %t: tensor<1xf32>) -> tensor<?x3xi64> {
  // expected-error @+2 {{non_max_suppression boxes need 4 coordinates, got 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.non_max_suppression %b, %s, %m, %t, %t : (tensor<1x6x5xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

// dynconv: only SAME_UPPER / SAME_LOWER are kept for run time.
func.func @bad_conv_auto_pad(%x: tensor<1x3x?x?xf32>, %w: tensor<?x?x?x?xf32>) -> tensor<1x?x?x?xf32> {
  // expected-error @+2 {{unsupported auto_pad 'VALID'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, auto_pad = "VALID"}
      : (tensor<1x3x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<1x?x?x?xf32>
  return %0 : tensor<1x?x?x?xf32>
}

// -----

func.func @bad_conv_transpose_output_shape(%x: tensor<1x2x?x?xf32>, %w: tensor<?x?x?x?xf32>) -> tensor<1x?x?x?xf32> {
  // expected-error @+2 {{expected 2 output_shape values}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv_transpose %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, output_shape = array<i64: 4>}
      : (tensor<1x2x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<1x?x?x?xf32>
  return %0 : tensor<1x?x?x?xf32>
}
// end dynconv

// -----

func.func @bad_tfidf_counts(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{tfidf_vectorizer ngram_counts: the 2-grams span 3 values of pool_int64s, not a multiple of 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 2 : i64, max_gram_length = 2 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0, 1>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 7, 1, 2, 3>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_offsets(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{tfidf_vectorizer ngram_counts must be non-decreasing offsets into pool_int64s (2 values), got 6 at 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 2 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0, 6>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_indexes_size(%x: tensor<6xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{tfidf_vectorizer ngram_indexes has 3 entries but pool_int64s holds 2 n-grams}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 1, 2>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @bad_tfidf_index(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{tfidf_vectorizer ngram_indexes value -1 is out of range}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, -1>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_skip(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{tfidf_vectorizer max_skip_count must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = -1 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_weights(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{tfidf_vectorizer weights has 1 entries, ngram_indexes 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "IDF", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 1, 2>, weights = array<f32: 1.0>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_mode(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{unsupported tfidf_vectorizer mode 'BM25' (TF, IDF or TFIDF)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "BM25", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_type(%x: tensor<6xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{unsupported tfidf_vectorizer input type (int32 or int64 tokens only)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 1, 2>} : (tensor<6xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_lengths(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{tfidf_vectorizer min_gram_length 2 and max_gram_length 1 must satisfy 1 <= min_gram_length <= max_gram_length}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 2 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 1>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_tfidf_width(%x: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{unsupported tfidf_vectorizer ngram_indexes value 4294967296 (at most 16777215)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 1 : i64, max_skip_count = 0 : i64, ngram_counts = array<i64: 0>, ngram_indexes = array<i64: 0, 4294967296>, pool_int64s = array<i64: 1, 2>} : (tensor<6xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bad_string_cast_sides(%x: tensor<3xf32>) -> tensor<3xi32> {
  // expected-error @+2 {{string_cast needs exactly one string side}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.string_cast %x {to = i32} : (tensor<3xf32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @bad_string_cast_int(%x: tensor<3xi64>) -> tensor<3xi128> {
  // expected-error @+2 {{unsupported string cast to string from a non-float type (float and double only)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.string_cast %x {to = i128} : (tensor<3xi64>) -> tensor<3xi128>
  return %0 : tensor<3xi128>
}

// -----

func.func @bad_string_normalizer_rows(%x: tensor<2x3xi128>) -> tensor<1x?xi128> {
  // expected-error @+2 {{string_normalizer input must be [C] or [1, C]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.string_normalizer %x : (tensor<2x3xi128>) -> tensor<1x?xi128>
  return %0 : tensor<1x?xi128>
}

// -----

func.func @bad_string_normalizer_action(%x: tensor<3xi128>) -> tensor<?xi128> {
  // expected-error @+2 {{unsupported case_change_action 'TITLE' (LOWER, UPPER or NONE)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.string_normalizer %x {case_change_action = "TITLE"} : (tensor<3xi128>) -> tensor<?xi128>
  return %0 : tensor<?xi128>
}

// -----

func.func @bad_string_normalizer_locale(%x: tensor<3xi128>) -> tensor<?xi128> {
  // expected-error @+2 {{unsupported locale 'tr_TR' (kiln's case mapping is that of en_US)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.string_normalizer %x {locale = "tr_TR"} : (tensor<3xi128>) -> tensor<?xi128>
  return %0 : tensor<?xi128>
}

// -----

func.func @bad_string_normalizer_input(%x: tensor<3xf32>) -> tensor<?xf32> {
  // expected-error @+2 {{string_normalizer needs a string input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.string_normalizer %x : (tensor<3xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Repeats whose product with the dim overflows int64 (found by fuzz_model: it was undefined
// behaviour in shape inference).
func.func @tile_overflow(%a: tensor<2xf32>) -> tensor<?xf32> {
  // expected-error @+2 {{tile repeats overflow dim 0 (2 x 8245937507658043907)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "graph.tile"(%a) {repeats = array<i64: 8245937507658043907>} : (tensor<2xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @nhwc_conv_channels(%x: tensor<1x8x8x12xf32>, %w: tensor<3x3x16x32xf32>) -> tensor<1x6x6x32xf32> {
  // expected-error @+2 {{input channels 12 != weight channels 16 x group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.nhwc_conv %x, %w {pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x12xf32>, tensor<3x3x16x32xf32>) -> tensor<1x6x6x32xf32>
  return %0 : tensor<1x6x6x32xf32>
}

// -----

func.func @nhwc_pool_kind(%x: tensor<1x8x8x12xf32>) -> tensor<1x4x4x12xf32> {
  // expected-error @+2 {{nhwc_pool kind must be max or average}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.nhwc_pool %x {kind = "min", kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x12xf32>) -> tensor<1x4x4x12xf32>
  return %0 : tensor<1x4x4x12xf32>
}

// -----

func.func @packed_conv_channels_last_rows(%x: tensor<1x8x8x16xf32>, %p: tensor<1x100x64xf32>) -> tensor<1x8x8x64xf32> {
  // expected-error @+2 {{packed_conv weight rows 100 != input channels x window}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.packed_conv %x, %p {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, channels_last}
      : (tensor<1x8x8x16xf32>, tensor<1x100x64xf32>) -> tensor<1x8x8x64xf32>
  return %0 : tensor<1x8x8x64xf32>
}

// -----

func.func @kv_cache_rows_on_the_batch_axis(%c: tensor<?x4xf32>, %n: tensor<?x4xf32>, %p: tensor<i64>, %r: tensor<?xi64>) -> tensor<?x4xf32> {
  // expected-error @+2 {{kv cache row positions need a batch dimension 0 that is not the cache axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_append %c, %n, %p, %r {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<i64>, tensor<?xi64>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @kv_cache_paged_write_on_the_blocks_axis(%pool: tensor<?x2x16x4xf32>, %n: tensor<?x2x1x4xf32>, %p: tensor<i64>, %r: tensor<?xi64>, %t: tensor<?x?xi64>) -> tensor<?x2x16x4xf32> {
  // expected-error @+2 {{paged kv cache axis must be a static dim other than 0 (the blocks)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_paged_write %pool, %n, %p, %r, %t {axis = 0 : i64} : (tensor<?x2x16x4xf32>, tensor<?x2x1x4xf32>, tensor<i64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<?x2x16x4xf32>
  return %0 : tensor<?x2x16x4xf32>
}

// -----

func.func @kv_cache_paged_write_dynamic_block(%pool: tensor<?x2x?x4xf32>, %n: tensor<?x2x1x4xf32>, %p: tensor<i64>, %r: tensor<?xi64>, %t: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  // expected-error @+2 {{paged kv cache axis must be a static dim other than 0 (the blocks)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_paged_write %pool, %n, %p, %r, %t {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x1x4xf32>, tensor<i64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

func.func @kv_cache_paged_write_other_heads(%pool: tensor<?x2x16x4xf32>, %n: tensor<?x3x1x4xf32>, %p: tensor<i64>, %r: tensor<?xi64>, %t: tensor<?x?xi64>) -> tensor<?x2x16x4xf32> {
  // expected-error @+2 {{paged kv cache update differs from the pool in dimension 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_paged_write %pool, %n, %p, %r, %t {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x3x1x4xf32>, tensor<i64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<?x2x16x4xf32>
  return %0 : tensor<?x2x16x4xf32>
}

// -----

func.func @kv_cache_paged_write_rank(%pool: tensor<?x2x16x4xf32>, %n: tensor<?x1x4xf32>, %p: tensor<i64>, %r: tensor<?xi64>, %t: tensor<?x?xi64>) -> tensor<?x2x16x4xf32> {
  // expected-error @+2 {{paged kv cache update must have the pool's rank and element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_paged_write %pool, %n, %p, %r, %t {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x1x4xf32>, tensor<i64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<?x2x16x4xf32>
  return %0 : tensor<?x2x16x4xf32>
}

// -----

func.func @kv_cache_paged_write_flat_table(%pool: tensor<?x2x16x4xf32>, %n: tensor<?x2x1x4xf32>, %p: tensor<i64>, %r: tensor<?xi64>, %t: tensor<?xi64>) -> tensor<?x2x16x4xf32> {
  // expected-error @+1 {{operand #4 must be 2D tensor of 64-bit signless integer values}}
  %0 = graph.kv_cache_paged_write %pool, %n, %p, %r, %t {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x2x1x4xf32>, tensor<i64>, tensor<?xi64>, tensor<?xi64>) -> tensor<?x2x16x4xf32>
  return %0 : tensor<?x2x16x4xf32>
}

// -----

func.func @kv_cache_paged_view_axis_out_of_range(%pool: tensor<?x2x16x4xf32>, %t: tensor<?x?xi64>, %p: tensor<i64>) -> tensor<?x2x16x4xf32> {
  // expected-error @+2 {{paged kv cache axis must be a static dim other than 0 (the blocks)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_paged_view %pool, %t, %p {axis = 4 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x16x4xf32>
  return %0 : tensor<?x2x16x4xf32>
}

// -----

func.func @kv_cache_paged_view_update_rank(%pool: tensor<?x2x16x4xf32>, %t: tensor<?x?xi64>, %p: tensor<i64>, %n: tensor<?x4xf32>) -> tensor<?x2x?x4xf32> {
  // expected-error @+2 {{paged kv cache update must have the pool's rank and element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.kv_cache_paged_view %pool, %t, %p, %n {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>, tensor<?x4xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

func.func @winograd_tile(%x: tensor<1x8x8x32xf32>) -> tensor<9x1x4x32xf32> {
  // expected-error @+2 {{winograd_input tile must be 2 or 4, not 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %v = graph.winograd_input %x {tile = 3 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x32xf32>) -> tensor<9x1x4x32xf32>
  return %v : tensor<9x1x4x32xf32>
}

// -----

func.func @winograd_input_dynamic(%x: tensor<1x?x8x32xf32>) -> tensor<16x1x16x32xf32> {
  // expected-error @+2 {{winograd_input takes an [N, H, W, C] tensor of static H, W, C}}
  // expected-error @+1 {{failed to infer returned types}}
  %v = graph.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x?x8x32xf32>) -> tensor<16x1x16x32xf32>
  return %v : tensor<16x1x16x32xf32>
}

// -----

func.func @winograd_output_elements(%p: tensor<36x1x16x32xf32>) -> tensor<1x8x8x32xf32> {
  // expected-error @+2 {{winograd_output's products must be [16, N, 16, K] of static K}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = graph.winograd_output %p {tile = 2 : i64, height = 8 : i64, width = 8 : i64} : (tensor<36x1x16x32xf32>) -> tensor<1x8x8x32xf32>
  return %y : tensor<1x8x8x32xf32>
}

// -----

func.func @winograd_output_tiles(%p: tensor<16x1x12x32xf32>) -> tensor<1x8x8x32xf32> {
  // expected-error @+2 {{winograd_output's products must be [16, N, 16, K] of static K}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = graph.winograd_output %p {tile = 2 : i64, height = 8 : i64, width = 8 : i64} : (tensor<16x1x12x32xf32>) -> tensor<1x8x8x32xf32>
  return %y : tensor<1x8x8x32xf32>
}

// -----

func.func @packed_matmul_weights_per_batch(%a: tensor<8x5x32xf32>, %w: tensor<16x1x32x64xf32>) -> tensor<8x5x64xf32> {
  // expected-error @+2 {{packed_matmul with 16 weights needs a lhs of rank >= 3 with as many in its leading dim}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = graph.packed_matmul %a, %w : (tensor<8x5x32xf32>, tensor<16x1x32x64xf32>) -> tensor<8x5x64xf32>
  return %c : tensor<8x5x64xf32>
}

// -----

func.func @bad_rotary_odd(%x: tensor<2x7xf32>, %c: tensor<2x7xf32>) -> tensor<2x7xf32> {
  // expected-error @+2 {{rotary needs a static, even last dim}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.rotary %x, %c, %c : (tensor<2x7xf32>, tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

func.func @bad_rotary_table(%x: tensor<2x8xf32>, %c: tensor<2x8xf32>, %s: tensor<3x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{rotary cos and sin must broadcast to the input's shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.rotary %x, %c, %s : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
