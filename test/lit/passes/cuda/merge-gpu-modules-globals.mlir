// A constant global outlining copied into two kernel modules is kept once.
// RUN: kiln-opt %s -kiln-merge-gpu-modules | FileCheck %s --check-prefix=GLOBAL
// GLOBAL: gpu.module @kernels
// GLOBAL-COUNT-1: memref.global "private" constant @table
// GLOBAL-NOT: memref.global
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @main_kernel() kernel {
      %t = memref.get_global @table : memref<2xf32>
      gpu.return
    }
  }
  gpu.module @main_kernel_0 {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @main_kernel() kernel {
      %t = memref.get_global @table : memref<2xf32>
      gpu.return
    }
  }
}
