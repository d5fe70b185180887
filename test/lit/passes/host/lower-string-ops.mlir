// kiln-lower-string-ops: kiln_cpu string ops become calls of the context's string functions (fields 4-7); literals become constant globals.
// RUN: kiln-opt %s -kiln-lower-string-ops | FileCheck %s

// CHECK: llvm.mlir.global private constant @kiln_string_0("monday")
// CHECK-LABEL: func.func @main
// The literal: address | size << 64.
// CHECK: %[[G:.*]] = llvm.mlir.addressof @kiln_string_0 : !llvm.ptr
// CHECK: llvm.mlir.constant(6 : i64)
// CHECK: llvm.ptrtoint %[[G]] : !llvm.ptr to i64
// CHECK: llvm.shl
// CHECK: llvm.or
// From float: widened to double, string_from_float (field 4) returns {ptr, i64}.
// CHECK: llvm.fpext %{{.*}} : f32 to f64
// CHECK: llvm.getelementptr %arg0[0, 4]
// CHECK: llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, f64, i32) -> !llvm.struct<(ptr, i64)>
// To float: string_to_float (field 5) on the data pointer and size, narrowed to f32.
// CHECK: llvm.getelementptr %arg0[0, 5]
// CHECK: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, i32) -> f64
// CHECK: llvm.fptrunc %{{.*}} : f64 to f32
// Case change (field 6) and equality (field 7).
// CHECK: llvm.getelementptr %arg0[0, 6]
// CHECK: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, i32) -> !llvm.struct<(ptr, i64)>
// CHECK: llvm.getelementptr %arg0[0, 7]
// CHECK: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, i64, i32) -> i32
// CHECK: llvm.icmp "ne"
// CHECK-NOT: kiln_cpu.string
func.func @main(%ctx: !llvm.ptr {kiln.context}, %x: f32, %s: i128) -> (i128, f32, i128, i1) {
  %w = kiln_cpu.string_literal "monday" : i128
  %t = kiln_cpu.string_from_float %x : f32 -> i128
  %f = kiln_cpu.string_to_float %s : i128 -> f32
  %u = kiln_cpu.string_change_case %t {upper = false} : i128
  %e = kiln_cpu.string_equal %s, %w {ignore_case = true} : i128
  return %t, %f, %u, %e : i128, f32, i128, i1
}
