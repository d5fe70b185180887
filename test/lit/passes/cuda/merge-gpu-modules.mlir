// kiln-merge-gpu-modules: every outlined kernel in one gpu.module, named after its old module.
// RUN: kiln-opt %s -kiln-merge-gpu-modules | FileCheck %s

// CHECK: gpu.module @kernels
// CHECK-NOT: gpu.module
// CHECK-DAG: gpu.func @main_kernel(
// CHECK-DAG: gpu.func @main_kernel_0(
// CHECK: func.func @main
// CHECK: gpu.launch_func @kernels::@main_kernel blocks
// CHECK: gpu.launch_func @kernels::@main_kernel_0 blocks
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @main_kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @main_kernel_0 {
    gpu.func @main_kernel(%x: memref<4xf32>, %y: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @main_kernel_0::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>, %x : memref<4xf32>)
    return
  }
}

