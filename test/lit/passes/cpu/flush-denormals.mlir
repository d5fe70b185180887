// kiln-flush-denormals: each kernel and the entry save MXCSR, set flush-to-zero and
// denormals-are-zero (0x8040 = 32832), and put the saved value back before every return;
// internal helpers and declarations are left alone.
// RUN: kiln-opt %s --kiln-flush-denormals | FileCheck %s

module {
  // CHECK-LABEL: llvm.func internal @main_kernel_3(
  // CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
  // CHECK: %[[SAVED:.*]] = llvm.alloca %[[ONE]] x i32
  // CHECK: %[[FLUSHED:.*]] = llvm.alloca %[[ONE]] x i32
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.stmxcsr"(%[[SAVED]])
  // CHECK: %[[MODE:.*]] = llvm.load %[[SAVED]] : !llvm.ptr -> i32
  // CHECK: %[[BITS:.*]] = llvm.mlir.constant(32832 : i32) : i32
  // CHECK: %[[OR:.*]] = llvm.or %[[MODE]], %[[BITS]]
  // CHECK: llvm.store %[[OR]], %[[FLUSHED]]
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[FLUSHED]])
  // CHECK: llvm.fmul
  // Both returns restore the saved mode.
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SAVED]])
  // CHECK-NEXT: llvm.return
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SAVED]])
  // CHECK-NEXT: llvm.return
  llvm.func internal @main_kernel_3(%arg0: !llvm.ptr, %arg1: i64, %arg2: i64) attributes {kiln.kernel_id = 3 : i32} {
    %c = llvm.icmp "slt" %arg1, %arg2 : i64
    llvm.cond_br %c, ^work, ^done
  ^work:
    %x = llvm.load %arg0 : !llvm.ptr -> f32
    %y = llvm.fmul %x, %x : f32
    llvm.store %y, %arg0 : f32, !llvm.ptr
    llvm.return
  ^done:
    llvm.return
  }

  // An internal function that is not a kernel runs inside one that set the mode.
  // CHECK-LABEL: llvm.func internal @helper(
  // CHECK-NOT: mxcsr
  // CHECK: llvm.return
  llvm.func internal @helper(%arg0: f32) -> f32 {
    %y = llvm.fadd %arg0, %arg0 : f32
    llvm.return %y : f32
  }

  // CHECK-LABEL: llvm.func @kiln_entry(
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.stmxcsr"
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
  // CHECK: llvm.call @helper
  // CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
  // CHECK-NEXT: llvm.return
  llvm.func @kiln_entry(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr) -> i32 {
    %x = llvm.load %arg1 : !llvm.ptr -> f32
    %y = llvm.call @helper(%x) : (f32) -> f32
    llvm.store %y, %arg2 : f32, !llvm.ptr
    %z = llvm.mlir.constant(0 : i32) : i32
    llvm.return %z : i32
  }

  // A declaration has no body to wrap.
  // CHECK: llvm.func @expf(f32) -> f32
  // CHECK-NOT: mxcsr
  llvm.func @expf(f32) -> f32
}
