// kiln-half-precision-products: products by constant f32 weights read them rounded to f16 or bf16,
// the other operands cast before and the result cast back to f32; other products stay f32.
// RUN: kiln-opt %s -split-input-file -kiln-half-precision-products=type=f16 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-half-precision-products=type=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not kiln-opt %s -split-input-file -kiln-half-precision-products=type=f8 2>&1 | FileCheck %s --check-prefix=BAD

// 1.0009765625 = 1 + 2^-10 is a half exactly; 1.00048828125 = 1 + 2^-11 rounds to even (1.0).
// CHECK-LABEL: func @matmul
// CHECK: %[[W:.*]] = graph.constant {value = dense_resource<w.f16> : tensor<2x2xf16>}
// CHECK: %[[X:.*]] = graph.cast %arg0 {to = f16} : (tensor<?x2xf32>) -> tensor<?x2xf16>
// CHECK: %[[Y:.*]] = graph.matmul %[[X]], %[[W]] : (tensor<?x2xf16>, tensor<2x2xf16>) -> tensor<?x2xf16>
// CHECK: %[[Z:.*]] = graph.cast %[[Y]] {to = f32} : (tensor<?x2xf16>) -> tensor<?x2xf32>
// CHECK: return %[[Z]]
// The bits after the 4-byte alignment: 0x3C01 (1 + 2^-10), 0x3C00 (1 + 2^-11 rounded to even),
// 0xC000 (-2), 0x3800 (0.5), little-endian.
// CHECK: w.f16: "0x40000000013C003C00C00038"
// BF16-LABEL: func @matmul
// BF16: graph.constant {value = dense_resource<w.bf16> : tensor<2x2xbf16>}
// BF16: graph.cast %arg0 {to = bf16}
// bfloat16 keeps 8 bits: 1 + 2^-10 and 1 + 2^-11 are both 1.0 (0x3F80); -2 is 0xC000, 0.5 0x3F00.
// BF16: w.bf16: "0x40000000803F803F00C0003F"
func.func @matmul(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = graph.constant {value = dense<[[1.0009765625, 1.00048828125], [-2.0, 0.5]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("w")
  %y = graph.matmul %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Gemm: A and C are cast, alpha and transB kept; one weight read twice is rounded once; a product
// of two activations stays in f32.
// CHECK-LABEL: func @gemm
// CHECK-COUNT-1: graph.constant {value = dense_resource<w.f16> : tensor<3x2xf16>}
// CHECK-NOT: graph.constant {{.*}}xf32>
// CHECK: %[[A:.*]] = graph.cast %arg0 {to = f16}
// CHECK: %[[C:.*]] = graph.cast %arg1 {to = f16}
// CHECK: graph.gemm %[[A]], %{{.*}}, %[[C]] {alpha = 5.000000e-01 : f32, transB = 1 : i64} : (tensor<4x2xf16>, tensor<3x2xf16>, tensor<3xf16>) -> tensor<4x3xf16>
// CHECK: graph.cast {{.*}} {to = f32}
// CHECK: graph.gemm {{.*}} -> tensor<4x3xf16>
// CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
func.func @gemm(%a: tensor<4x2xf32>, %c: tensor<3xf32>, %t: tensor<3x4xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x4xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<3x2xf32>} : () -> tensor<3x2xf32> loc("w")
  %y = graph.gemm %a, %w, %c {alpha = 0.5 : f32, transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %y2 = graph.gemm %a, %w {transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %y, %t : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  return %y, %y2, %z : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x4xf32>
}
// BAD: kiln-half-precision-products: type must be f16 or bf16, not 'f8'
