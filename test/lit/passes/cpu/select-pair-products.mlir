// kiln-select-pair-products: a marked pair product of 16-bit lanes becomes
// x86's vpmaddwd intrinsic, one call per register (AVX-512BW: 32 lanes in,
// 16 sums out); unmarked arithmetic and narrower targets keep the generic form.
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-select-pair-products{vector-bits=512}))' | FileCheck %s --check-prefix=AVX512
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-select-pair-products{vector-bits=256}))' | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-select-pair-products{vector-bits=128}))' | FileCheck %s --check-prefix=GENERIC

// AVX512-LABEL: func @pairs
// AVX512-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"({{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// AVX512-NOT: llvm.call_intrinsic
// AVX512: %[[SUM:.*]] = arith.addi %arg2, %{{.*}} : vector<32xi32>
// AVX512: %[[OTHER:.*]] = arith.addi %[[SUM]], %arg2 : vector<32xi32>
// AVX2-COUNT-4: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"({{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// GENERIC-NOT: llvm.call_intrinsic
// GENERIC: arith.addi {{.*}} {kiln.pair_product}
func.func @pairs(%x: vector<64xi16>, %y: vector<64xi16>, %acc: vector<32xi32>) -> vector<32xi32> {
  %xe = vector.shuffle %x, %x [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62] : vector<64xi16>, vector<64xi16>
  %ye = vector.shuffle %y, %y [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62] : vector<64xi16>, vector<64xi16>
  %xo = vector.shuffle %x, %x [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63] : vector<64xi16>, vector<64xi16>
  %yo = vector.shuffle %y, %y [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63] : vector<64xi16>, vector<64xi16>
  %a = arith.extsi %xe : vector<32xi16> to vector<32xi32>
  %b = arith.extsi %ye : vector<32xi16> to vector<32xi32>
  %c = arith.extsi %xo : vector<32xi16> to vector<32xi32>
  %d = arith.extsi %yo : vector<32xi16> to vector<32xi32>
  %lo = arith.muli %a, %b : vector<32xi32>
  %hi = arith.muli %c, %d : vector<32xi32>
  %pair = arith.addi %lo, %hi {kiln.pair_product} : vector<32xi32>
  %sum = arith.addi %acc, %pair : vector<32xi32>
  %other = arith.addi %sum, %acc : vector<32xi32>
  return %other : vector<32xi32>
}
