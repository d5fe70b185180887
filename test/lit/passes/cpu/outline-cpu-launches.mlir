// kiln-outline-cpu-launches: the body becomes a kernel looping over [begin, end);
// the launch becomes a call of ctx->parallel_for with packed captures and its cost.
// RUN: kiln-opt %s -kiln-outline-cpu-launches | FileCheck %s

// CHECK-LABEL: llvm.func @main
// CHECK-SAME: %[[N:[^:]*]]: i64, %[[FLOPS:[^:]*]]: i64, %[[BYTES:[^:]*]]: i64
// CHECK: %[[BUF:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr)>
// CHECK: llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: %[[RT:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[PF:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[K:.*]] = llvm.mlir.addressof @main_kernel_0
// CHECK: llvm.call %[[PF]](%[[RT]], %{{.*}}, %[[K]], %[[BUF]], %[[N]], %[[FLOPS]], %[[BYTES]])
// CHECK-SAME: (!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
// CHECK-NOT: kiln_cpu.launch
// CHECK-LABEL: llvm.func internal @main_kernel_0
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK-SAME: kiln.kernel_id = 0 : i32
// CHECK-SAME: kiln.source_nodes = ["relu"]
// CHECK: llvm.icmp "slt" %{{.*}}, %[[END]]
// CHECK: llvm.store
llvm.func @main(%ctx: !llvm.ptr, %out: !llvm.ptr, %n: i64, %flops: i64, %bytes: i64) {
  %zero = llvm.mlir.constant(0.0 : f32) : f32
  kiln_cpu.launch %ctx, %n flops(%flops) bytes(%bytes) attributes {kernel_id = 0 : i32, kiln.source_nodes = ["relu"]} : !llvm.ptr {
  ^bb0(%item: i64):
    %p = llvm.getelementptr %out[%item] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %zero, %p : f32, !llvm.ptr
    kiln_cpu.yield
  }
  llvm.return
}
