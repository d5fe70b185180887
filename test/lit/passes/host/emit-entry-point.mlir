// kiln-emit-entry-point: kiln_entry unpacks tensors into descriptors and writes results.
// RUN: kiln-opt %s -kiln-emit-entry-point | FileCheck %s

// CHECK: llvm.func internal @main
// CHECK-LABEL: llvm.func @kiln_entry
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr) -> i32
// CHECK: llvm.getelementptr %[[IN]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr, ptr)>
// CHECK: %[[R:.*]] = llvm.call @main(%[[CTX]],
// CHECK: llvm.extractvalue %[[R]][1]
// CHECK: llvm.extractvalue %[[R]][3, 0]
// CHECK: llvm.return %{{.*}} : i32
llvm.func @main(%ctx: !llvm.ptr, %a0: !llvm.ptr, %a1: !llvm.ptr, %off: i64, %size: i64, %stride: i64)
    -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
    attributes {kiln.abi_arg_ranks = array<i64: 1>, kiln.abi_result_ranks = array<i64: 1>,
                kiln.abi_result_elem_bytes = array<i64: 4>} {
  %d0 = llvm.mlir.poison : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %d1 = llvm.insertvalue %a0, %d0[0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %d2 = llvm.insertvalue %a1, %d1[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %d3 = llvm.insertvalue %off, %d2[2] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %d4 = llvm.insertvalue %size, %d3[3, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %d5 = llvm.insertvalue %stride, %d4[4, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.return %d5 : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
}
