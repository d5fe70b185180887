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
