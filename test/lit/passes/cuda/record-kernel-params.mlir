// kiln-record-kernel-params: each kernel's arguments, in launch order, as the runtime's pointer
// checks read them: "mR:E" a memref of rank R with E-byte elements, "sB" a B-byte scalar.
// RUN: kiln-opt %s -kiln-record-kernel-params | FileCheck %s

// CHECK: kiln.cuda_kernel_params = {k0 = "s8 m2:4 m0:8 s4", k1 = "m1:2 s1"}
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k0(%n: index, %a: memref<?x4xf32>, %b: memref<i64>, %f: f32) kernel {
      gpu.return
    }
    gpu.func @k1(%h: memref<8xf16>, %p: i1) kernel {
      gpu.return
    }
  }
  func.func @main(%n: index, %a: memref<?x4xf32>, %b: memref<i64>, %f: f32, %h: memref<8xf16>, %p: i1) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k0 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%n : index, %a : memref<?x4xf32>, %b : memref<i64>, %f : f32)
    gpu.launch_func @kernels::@k1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%h : memref<8xf16>, %p : i1)
    return
  }
}
