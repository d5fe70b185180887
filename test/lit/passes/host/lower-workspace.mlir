// kiln-lower-workspace: the arena comes from ctx->workspace (field 2); a NULL
// return leaves @main at once with empty views as results.
// RUN: kiln-opt %s -kiln-lower-workspace | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: %[[F:.*]] = llvm.getelementptr %arg0[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<({{(ptr, )+}}ptr)>
// CHECK: %[[FN:.*]] = llvm.load %[[F]]
// CHECK: %[[BASE:.*]] = llvm.call %[[FN]](%{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, i64) -> !llvm.ptr
// CHECK: %[[ARENA:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<?xi8>
// CHECK: %[[NULL:.*]] = llvm.icmp "eq" %[[BASE]]
// CHECK: cf.cond_br %[[NULL]], ^[[OOM:.*]], ^[[GO:.*]]
// CHECK: ^[[OOM]]:
// CHECK: %[[E:.*]] = memref.view %[[ARENA]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?x4xf32>
// CHECK: return %[[E]]
// CHECK: ^[[GO]]:
// CHECK: memref.view %[[ARENA]]
// CHECK-NOT: kiln_cpu.workspace
func.func @main(%ctx: !llvm.ptr {kiln.context}, %x: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %bytes = arith.constant 4096 : index
  %arena = kiln_cpu.workspace %bytes : memref<?xi8>
  %t = memref.view %arena[%c0][] : memref<?xi8> to memref<16xf32>
  %out = memref.alloc(%n) : memref<?x4xf32>
  memref.copy %x, %out : memref<?x4xf32> to memref<?x4xf32>
  return %out : memref<?x4xf32>
}
