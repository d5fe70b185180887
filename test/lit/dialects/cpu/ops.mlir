// kiln_cpu.launch round-trips; its body must take one i64 work item.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @launch
// CHECK: kiln_cpu.launch %{{.*}}, %{{.*}} flops(%{{.*}}) bytes(%{{.*}}) attributes {kernel_id = 3 : i32} : !llvm.ptr {
// CHECK: ^bb0(%{{.*}}: i64):
// CHECK: kiln_cpu.yield
func.func @launch(%ctx: !llvm.ptr, %n: i64) {
  kiln_cpu.launch %ctx, %n flops(%n) bytes(%n) attributes {kernel_id = 3 : i32} : !llvm.ptr {
  ^bb0(%item: i64):
    kiln_cpu.yield
  }
  return
}

// -----

func.func @bad_body(%ctx: !llvm.ptr, %n: i64) {
  // expected-error @+1 {{body must take exactly one i64 work-item argument}}
  kiln_cpu.launch %ctx, %n flops(%n) bytes(%n) attributes {kernel_id = 0 : i32} : !llvm.ptr {
  ^bb0(%item: index):
    kiln_cpu.yield
  }
  return
}

// -----

// The string kernels' ops (strings family) round-trip.
// CHECK-LABEL: func @string_ops
// CHECK: kiln_cpu.string_literal "monday" : i128
// CHECK: kiln_cpu.string_from_float %{{.*}} : f32 -> i128
// CHECK: kiln_cpu.string_to_float %{{.*}} : i128 -> f64
// CHECK: kiln_cpu.string_change_case %{{.*}} {upper = true} : i128
// CHECK: kiln_cpu.string_equal %{{.*}}, %{{.*}} {ignore_case = false} : i128
func.func @string_ops(%x: f32, %s: i128) -> (i128, f64, i128, i1) {
  %w = kiln_cpu.string_literal "monday" : i128
  %t = kiln_cpu.string_from_float %x : f32 -> i128
  %f = kiln_cpu.string_to_float %s : i128 -> f64
  %u = kiln_cpu.string_change_case %t {upper = true} : i128
  %e = kiln_cpu.string_equal %s, %w {ignore_case = false} : i128
  return %w, %f, %u, %e : i128, f64, i128, i1
}
