// kiln-form-gpu-launches: parallel loops become grid launches, other buffer accesses one-thread
// launches, host control flow around parallel loops stays on the host, and host reads of tensor
// data are refused.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-add-runtime-context -kiln-form-gpu-launches | FileCheck %s

// A dynamic 2-D loop: one thread per element, 256 per block, innermost dim fastest, guarded.
// CHECK-LABEL: func @main
// CHECK: %[[TOTAL:.*]] = arith.muli
// CHECK: %[[BLOCKS:.*]] = arith.maxsi
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BS:.*]] = %c256
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %[[TX]]
// CHECK: arith.cmpi ult, %[[ID]], %[[TOTAL]]
// CHECK: scf.if
// CHECK: arith.remui %[[ID]], %c16
// CHECK: memref.load
// CHECK: arith.maximumf
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
func.func @main(%x: memref<?x16xf32>) -> memref<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  %out = memref.alloc(%n) : memref<?x16xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x16xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %out[%i, %j] : memref<?x16xf32>
    scf.reduce
  } loc("relu")
  return %out : memref<?x16xf32>
}

// -----

// A static space smaller than a block gets a block of its size; a scalar store and the sequential
// loop that reads it run in one one-thread launch; a constant global is read inside the kernel.
// CHECK-LABEL: func @main
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c12
// CHECK-NEXT: memref.get_global @table
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1
// CHECK-NEXT: memref.store
// CHECK: scf.for
// CHECK: gpu.terminator
memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
func.func @main(%x: memref<12xf32>, %acc: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %t = memref.get_global @table : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%c12) step (%c1) {
    %v = memref.load %t[%c1] : memref<2xf32>
    memref.store %v, %x[%i] : memref<12xf32>
    scf.reduce
  }
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %acc[] : memref<f32>
  scf.for %i = %c0 to %c12 step %c1 {
    %v = memref.load %x[%i] : memref<12xf32>
    %a = memref.load %acc[] : memref<f32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[] : memref<f32>
  }
  return
}

// -----

// A host loop around a parallel loop stays on the host and launches it each iteration.
// CHECK-LABEL: func @main
// CHECK: scf.for
// CHECK: gpu.launch
func.func @main(%x: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %k = %c0 to %c4 step %c1 {
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %x[%k, %j] : memref<4x8xf32>
      %r = arith.addf %v, %one : f32
      memref.store %r, %x[%k, %j] : memref<4x8xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A size read from tensor data (a data-dependent shape): the kernel stores it in a device slot,
// device_read (context field 11) copies the slots to a host buffer, and the host recomputes the
// pure ops after the load (the index_cast) from the value read back.
// CHECK-LABEL: func @main
// CHECK: %[[HOST:.*]] = memref.alloca() : memref<1xi64>
// CHECK: %[[SLOTS:.*]] = memref.alloc() : memref<1xi64>
// CHECK: gpu.launch
// CHECK: %[[V:.*]] = memref.load %arg1[]
// CHECK: memref.store %[[V]], %[[SLOTS]][%c0
// CHECK: gpu.terminator
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK: llvm.call
// CHECK: memref.dealloc %[[SLOTS]]
// CHECK: %[[R:.*]] = memref.load %[[HOST]][%c0
// CHECK: %[[S:.*]] = arith.index_cast %[[R]] : i64 to index
// CHECK: memref.alloc(%[[S]]) : memref<?xf32>
func.func @main(%n: memref<i64>) -> memref<?xf32> {
  %v = memref.load %n[] : memref<i64>
  %s = arith.index_cast %v : i64 to index
  %out = memref.alloc(%s) : memref<?xf32>
  return %out : memref<?xf32>
}

// -----

// Values of several types in one read: an f32 goes as its bits, an i1 zero-extended; a parallel
// loop whose bounds and body need them is still a grid launch, after the read, and the select is
// recomputed on the host.
// CHECK-LABEL: func @main
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1
// CHECK-DAG: arith.bitcast %{{.*}} : f32 to i32
// CHECK-DAG: arith.extui %{{.*}} : i1 to i64
// CHECK: llvm.call
// CHECK-DAG: arith.trunci %{{.*}} : i64 to i32
// CHECK-DAG: arith.bitcast %{{.*}} : i32 to f32
// CHECK-DAG: arith.trunci %{{.*}} : i64 to i1
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-NOT: gpu.launch
func.func @main(%k: memref<2xf32>, %f: memref<i1>, %x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %lo = memref.load %k[%c0] : memref<2xf32>
  %flip = memref.load %f[] : memref<i1>
  %n = memref.dim %x, %c0 : memref<?xf32>
  %m = arith.select %flip, %c1, %n : index
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %v = memref.load %x[%i] : memref<?xf32>
    %r = arith.maximumf %v, %lo : f32
    memref.store %r, %x[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A view whose offset comes from tensor data is recomputed on the host from the value read back.
// CHECK-LABEL: func @main
// CHECK: gpu.launch
// CHECK: llvm.call
// CHECK: %[[OFF:.*]] = arith.index_cast
// CHECK: memref.subview %arg2[%[[OFF]]] [4] [1]
func.func @main(%start: memref<i64>, %x: memref<16xf32>) -> memref<4xf32> {
  %s = memref.load %start[] : memref<i64>
  %o = arith.index_cast %s : i64 to index
  %v = memref.subview %x[%o] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: ?>>
  %out = memref.alloc() : memref<4xf32>
  memref.copy %v, %out : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
  return %out : memref<4xf32>
}

// -----

// A size the group stored into a buffer and loads again is forwarded: only the loaded input
// element is read back (one slot), not the buffer's copy of it.
// CHECK-LABEL: func @main
// CHECK: %[[SLOTS:.*]] = memref.alloc() : memref<1xi64>
// CHECK: gpu.launch
// CHECK: %[[V:.*]] = memref.load %arg1[]
// CHECK: memref.store %[[V]], %[[SLOTS]]
// CHECK-NOT: memref.store {{.*}}, %[[SLOTS]]
// CHECK: gpu.terminator
func.func @main(%n: memref<i64>, %shape: memref<2xi64>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2 : i64
  %v = memref.load %n[] : memref<i64>
  memref.store %v, %shape[%c0] : memref<2xi64>
  memref.store %two, %shape[%c1] : memref<2xi64>
  %w = memref.load %shape[%c0] : memref<2xi64>
  %s = arith.index_cast %w : i64 to index
  %out = memref.alloc(%s) : memref<?xf32>
  return %out : memref<?xf32>
}

// -----

// A reshape's shape buffer is device memory: it is copied to a host buffer the reshape reads.
// CHECK-LABEL: func @main
// CHECK: %[[HOST:.*]] = memref.alloca() : memref<2xi64>
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK: llvm.call
// CHECK: memref.reshape %arg1(%[[HOST]])
func.func @main(%x: memref<6xf32>, %shape: memref<2xi64>) -> memref<?x?xf32> {
  %r = memref.reshape %x(%shape) : (memref<6xf32>, memref<2xi64>) -> memref<?x?xf32>
  return %r : memref<?x?xf32>
}

// -----

// A buffer chosen by tensor data cannot be read back.
func.func @main(%c: memref<i1>, %a: memref<4xf32>, %b: memref<4xf32>) -> memref<4xf32> {
  %p = memref.load %c[] : memref<i1>
  // expected-error @+1 {{a value of type 'memref<4xf32>' computed from tensor data is needed by the host program}}
  %m = scf.if %p -> memref<4xf32> {
    scf.yield %a : memref<4xf32>
  } else {
    scf.yield %b : memref<4xf32>
  }
  return %m : memref<4xf32>
}

// -----

// Ops on strings run on the host: the buffers they use are copied to host mirrors (malloc marked
// kiln.host_heap, device_read, field 11), the ones they write are copied back (device_write, field
// 12), and without memory for a mirror the op is skipped and allocation_failed (field 3) is called.
// CHECK-LABEL: func @main
// CHECK-NOT: gpu.launch
// CHECK: %[[IN:.*]] = llvm.call @malloc({{.*}}) {kiln.host_heap}
// CHECK: %[[INVIEW:.*]] = builtin.unrealized_conversion_cast {{.*}} to memref<4xi128>
// CHECK: %[[OUT:.*]] = llvm.call @malloc({{.*}}) {kiln.host_heap}
// CHECK: %[[OUTVIEW:.*]] = builtin.unrealized_conversion_cast {{.*}} to memref<4xf32>
// CHECK: scf.if
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK: llvm.call
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK: llvm.call
// CHECK: scf.parallel
// CHECK: memref.load %[[INVIEW]]
// CHECK: kiln_cpu.string_to_float
// CHECK: memref.store {{.*}}, %[[OUTVIEW]]
// CHECK: llvm.getelementptr %arg0[0, 12]
// CHECK: llvm.call
// CHECK-NOT: llvm.getelementptr %arg0[0, 12]
// CHECK: } else {
// CHECK: llvm.getelementptr %arg0[0, 3]
// CHECK: }
// CHECK: llvm.call @free(%[[IN]]) {kiln.host_heap}
// CHECK: llvm.call @free(%[[OUT]]) {kiln.host_heap}
func.func @main(%s: memref<4xi128>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %s[%i] : memref<4xi128>
    %f = kiln_cpu.string_to_float %v : i128 -> f32
    memref.store %f, %out[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// Sizes the host stored into arena scalars and a shape buffer, then loaded back, are forwarded
// on the host instead of read back from the device: a store to another, disjoint scalar of the
// arena does not stop it. A store whose bytes may meet the load's (a dynamic view of the arena)
// does, a call in between does, and so does a value the host does not have (an element): those
// are read back (field 11).
// CHECK-LABEL: func @main
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[M:.*]] = arith.subi %[[N]], %c1_i64
// CHECK: %[[K:.*]] = arith.index_cast %[[M]] : i64 to index
// CHECK: memref.alloc(%[[K]])
// CHECK: gpu.launch
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK-NOT: llvm.getelementptr %arg0[0, 11]
func.func private @opaque()
func.func @main(%x: memref<?xf32>, %y: memref<?xi8>) -> (memref<?xf32>, memref<?xf32>, memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %y, %c0 : memref<?xi8>
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c1_i64 = arith.constant 1 : i64
  %arena = kiln_cpu.workspace %c64 : memref<?xi8>
  %a = memref.view %arena[%c0][] : memref<?xi8> to memref<i64>
  %b = memref.view %arena[%c8][] : memref<?xi8> to memref<i64>
  %d = memref.dim %x, %c0 : memref<?xf32>
  %di = arith.index_cast %d : index to i64
  memref.store %di, %a[] : memref<i64>
  %l = memref.load %a[] : memref<i64>
  %s = arith.subi %l, %c1_i64 : i64
  memref.store %s, %b[] : memref<i64>
  %l2 = memref.load %b[] : memref<i64>
  %k = arith.index_cast %l2 : i64 to index
  %out = memref.alloc(%k) : memref<?xf32>
  // Overlapping: a dynamic view of the arena is written between the store and the load.
  %e = memref.view %arena[%n][] : memref<?xi8> to memref<i64>
  memref.store %di, %a[] : memref<i64>
  memref.store %c1_i64, %e[] : memref<i64>
  %l3 = memref.load %a[] : memref<i64>
  %k3 = arith.index_cast %l3 : i64 to index
  %out3 = memref.alloc(%k3) : memref<?xf32>
  // A call between: it may write whatever memory it has an address of.
  memref.store %di, %a[] : memref<i64>
  func.call @opaque() : () -> ()
  %l5 = memref.load %a[] : memref<i64>
  %k5 = arith.index_cast %l5 : i64 to index
  %out5 = memref.alloc(%k5) : memref<?xf32>
  memref.dealloc %out5 : memref<?xf32>
  // An element: not a host value.
  %v = memref.load %x[%c0] : memref<?xf32>
  %vi = arith.fptosi %v : f32 to i64
  memref.store %vi, %b[] : memref<i64>
  %l4 = memref.load %b[] : memref<i64>
  %k4 = arith.index_cast %l4 : i64 to index
  %out4 = memref.alloc(%k4) : memref<?xf32>
  return %out, %out3, %out4 : memref<?xf32>, memref<?xf32>, memref<?xf32>
}

// -----

// A shape concatenated from pieces: sizes stored through static subviews of one buffer (at their
// offsets) and an element of a constant global (folded to its value) are loaded back on the host
// without a read of the device.
// CHECK-LABEL: func @main
// CHECK-NOT: llvm.getelementptr %arg0[0, 11]
// CHECK: %[[SEVEN:.*]] = arith.constant 7 : i64
// CHECK-NOT: llvm.getelementptr %arg0[0, 11]
// CHECK: %[[B:.*]] = arith.index_cast %[[SEVEN]] : i64 to index
// CHECK: memref.alloc(%{{.*}}, %[[B]]) : memref<?x?xf32>
// CHECK-NOT: llvm.getelementptr %arg0[0, 11]
// CHECK: return
memref.global "private" constant @seven : memref<1xi64> = dense<7>
func.func @main(%x: memref<?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %g = memref.get_global @seven : memref<1xi64>
  %shape = memref.alloc() : memref<2xi64>
  %first = memref.subview %shape[0] [1] [1] : memref<2xi64> to memref<1xi64, strided<[1]>>
  %second = memref.subview %shape[1] [1] [1] : memref<2xi64> to memref<1xi64, strided<[1], offset: 1>>
  %d = memref.dim %x, %c0 : memref<?xf32>
  %di = arith.index_cast %d : index to i64
  memref.store %di, %first[%c0] : memref<1xi64, strided<[1]>>
  %seven = memref.load %g[%c0] : memref<1xi64>
  memref.store %seven, %second[%c0] : memref<1xi64, strided<[1], offset: 1>>
  %a = memref.load %shape[%c0] : memref<2xi64>
  %b = memref.load %shape[%c1] : memref<2xi64>
  %ai = arith.index_cast %a : i64 to index
  %bi = arith.index_cast %b : i64 to index
  %out = memref.alloc(%ai, %bi) : memref<?x?xf32>
  return %out : memref<?x?xf32>
}

// -----

// A loop that writes another static piece of the same buffer does not stop the forwarding; one
// that writes the piece the load reads does (field 11: the host reads it back).
// CHECK-LABEL: func @main
// CHECK: gpu.launch
// CHECK: llvm.getelementptr %arg0[0, 11]
// CHECK-NOT: llvm.getelementptr %arg0[0, 11]
// CHECK: return
func.func @main(%x: memref<?xf32>, %y: memref<2xi64>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %shape = memref.alloc() : memref<3xi64>
  %first = memref.subview %shape[0] [1] [1] : memref<3xi64> to memref<1xi64, strided<[1]>>
  %rest = memref.subview %shape[1] [2] [1] : memref<3xi64> to memref<2xi64, strided<[1], offset: 1>>
  %d = memref.dim %x, %c0 : memref<?xf32>
  %di = arith.index_cast %d : index to i64
  memref.store %di, %first[%c0] : memref<1xi64, strided<[1]>>
  memref.store %di, %shape[%c1] : memref<3xi64>
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    %v = memref.load %y[%i] : memref<2xi64>
    memref.store %v, %rest[%i] : memref<2xi64, strided<[1], offset: 1>>
    scf.reduce
  }
  %a = memref.load %shape[%c0] : memref<3xi64>
  %b = memref.load %shape[%c1] : memref<3xi64>
  %ai = arith.index_cast %a : i64 to index
  %bi = arith.index_cast %b : i64 to index
  %out = memref.alloc(%ai, %bi) : memref<?x?xf32>
  return %out : memref<?x?xf32>
}

// -----

// A launch that reads a view of a constant global (a bias reshaped for a convolution) gets the
// global and the whole chain of views cloned in: outlining then copies the constant into the GPU
// module, and no host address is a kernel argument (every Conv crashed on an H200 for this).
memref.global "private" constant @bias : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func @main
// CHECK: gpu.launch
// CHECK: %[[G:.*]] = memref.get_global @bias
// CHECK: %[[V:.*]] = memref.reinterpret_cast %[[G]]
// CHECK: %[[S:.*]] = memref.subview %[[V]]
// CHECK: memref.load %[[S]]
// CHECK: gpu.terminator
func.func @main(%x: memref<2x4xf32>) -> memref<2x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %g = memref.get_global @bias : memref<4xf32>
  %v = memref.reinterpret_cast %g to offset: [0], sizes: [1, 4], strides: [4, 1] : memref<4xf32> to memref<1x4xf32>
  %s = memref.subview %v[0, 0] [1, 4] [1, 1] : memref<1x4xf32> to memref<4xf32, strided<[1]>>
  %out = memref.alloc() : memref<2x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c4) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<2x4xf32>
    %b = memref.load %s[%j] : memref<4xf32, strided<[1]>>
    %r = arith.addf %a, %b : f32
    memref.store %r, %out[%i, %j] : memref<2x4xf32>
    scf.reduce
  }
  return %out : memref<2x4xf32>
}

// -----

// A scalar input (an argument with kiln.name, like kiln.past_length), or the first element of a
// view of one, is read where it is: device_read from the input's own address, no kernel and no
// slot (the runtime serves it from the input's host copy without waiting for the GPU). A KV cache
// input, written in place by kernels, still goes through a slot the kernel fills.
// CHECK-LABEL: func @main
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %arg2
// CHECK: %[[SLOTS:.*]] = memref.alloc() : memref<1xi64>
// CHECK: gpu.launch
// CHECK: %[[W:.*]] = memref.load %arg3[]
// CHECK: memref.store %[[W]], %[[SLOTS]]
// CHECK: gpu.terminator
// CHECK: memref.extract_aligned_pointer_as_index %[[VIEW]] : memref<1xi64>
// CHECK: llvm.call
// CHECK: memref.extract_aligned_pointer_as_index %arg1 : memref<i64>
// CHECK: llvm.call
// CHECK: memref.extract_aligned_pointer_as_index %[[SLOTS]]
// CHECK: llvm.call
// CHECK-NOT: llvm.call
func.func @main(%pos: memref<i64> {kiln.name = "kiln.past_length"}, %rows: memref<i64> {kiln.name = "kiln.logit_rows"},
                %cache: memref<i64> {kiln.name = "past", kiln.kv_cache = 2 : i64}) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %v = memref.load %pos[] : memref<i64>
  %view = memref.reinterpret_cast %rows to offset: [0], sizes: [1], strides: [1] : memref<i64> to memref<1xi64>
  %r = memref.load %view[%c0] : memref<1xi64>
  %w = memref.load %cache[] : memref<i64>
  %a = arith.addi %v, %r : i64
  %b = arith.addi %a, %w : i64
  %s = arith.index_cast %b : i64 to index
  %out = memref.alloc(%s) : memref<?xf32>
  return %out : memref<?xf32>
}
