// kiln-approximate-math: f32 tanh/exp become polynomial arithmetic; f64 keeps the math op (libm).
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-approximate-math))' | FileCheck %s

// CHECK-LABEL: func @f32
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK: math.fma
func.func @f32(%x: f32) -> (f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.exp %x : f32
  return %0, %1 : f32, f32
}

// CHECK-LABEL: func @f64
// CHECK: math.tanh
func.func @f64(%x: f64) -> f64 {
  %0 = math.tanh %x : f64
  return %0 : f64
}
