// kiln-check-heap-allocations: a NULL from @main's heap allocation reports
// the bytes to ctx->allocation_failed (field 3) and returns empty views.
// RUN: kiln-opt %s -split-input-file -kiln-check-heap-allocations | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: %[[BUF:.*]] = memref.alloc(%[[N:.*]]) : memref<?x4xf32>
// CHECK: %[[B0:.*]] = arith.muli %{{.*}}, %[[N]]
// CHECK: %[[BYTES:.*]] = arith.muli %[[B0]], %{{.*}}
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[NULL:.*]] = arith.cmpi eq, %[[P]], %{{.*}}
// CHECK: cf.cond_br %[[NULL]], ^[[FAIL:.*]], ^[[OK:.*]]
// CHECK: ^[[FAIL]]:
// CHECK: llvm.getelementptr %arg0[0, 3]
// CHECK: llvm.call %{{.*}}(%{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, i64) -> ()
// CHECK: memref.view
// CHECK: return
// CHECK: ^[[OK]]:
// CHECK: return %[[BUF]]
func.func @main(%ctx: !llvm.ptr {kiln.context}, %n: index) -> memref<?x4xf32> {
  %0 = memref.alloc(%n) : memref<?x4xf32>
  return %0 : memref<?x4xf32>
}

// -----

// An index buffer counts 8 bytes per element.
// RUN: kiln-opt %s -split-input-file -kiln-check-heap-allocations | FileCheck %s --check-prefix=INDEX
// INDEX-LABEL: func.func @main
// INDEX: memref.alloc(%{{.*}}) : memref<?xindex>
// INDEX: arith.constant 8 : index
// INDEX: cf.cond_br
func.func @main(%ctx: !llvm.ptr {kiln.context}, %n: index) -> memref<?xindex> {
  %0 = memref.alloc(%n) : memref<?xindex>
  return %0 : memref<?xindex>
}
