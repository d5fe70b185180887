// The block reductions kiln-form-block-reductions writes, executed on the CPU thread by thread
// (kiln-emulate-gpu-blocks) and compared with sums and maxima computed in Python: a static row sum
// with its fill folded in (16 blocks of 256 threads, 1000 elements a row), a row max of dynamic
// size through the host's choice (300 elements: blocks; 10 elements: the one-thread nest), a
// whole vector of dynamic length to one number (one block), an int32 row max, and 33001 rows of 40
// (a warp per row, 8 rows to a block). The two dynamic row maxima also get a warp launch each,
// which the host does not pick for 5 rows: 8 launches.
// RUN: kiln-opt %s -kiln-form-block-reductions -kiln-emulate-gpu-blocks | \
// RUN:   mlir-opt -convert-scf-to-cf -expand-strided-metadata -finalize-memref-to-llvm -convert-arith-to-llvm \
// RUN:            -convert-index-to-llvm -convert-func-to-llvm -convert-cf-to-llvm -reconcile-unrealized-casts | \
// RUN:   mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils | FileCheck %s
// The emulation runs what was formed: the launches are there before it.
// RUN: kiln-opt %s -kiln-form-block-reductions | FileCheck %s --check-prefix=FORMED
// FORMED-COUNT-8: gpu.launch
// FORMED-NOT: gpu.launch

// CHECK: [-250.75,  0.75,  250,  -250,  -0.75,  250.75,  -249.25,  0,  249.25,  -250.75,  0.75,  250,  -250,  -0.75,  250.75,  -249.25]
// CHECK: [6.25,  5.25,  4.25,  3.25,  2.25]
// CHECK: [-0.625,  0,  0.625,  1.25,  1.875]
// CHECK: [-1.25]
// CHECK: [993059,  997769,  998745]
// CHECK: [6.25,  5,  4.25]
// CHECK: [5.875,  5.25,  4]

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)

// x[i, k] = ((i * 13 + k * 5) mod 101 - 50) / 8 - i, for the max rows.
func.func private @fillRows(%x: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c13 = arith.constant 13 : index
  %c101 = arith.constant 101 : index
  %c50 = arith.constant 50 : index
  %eighth = arith.constant 0.125 : f32
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %k = %c0 to %cols step %c1 {
      %a = arith.muli %i, %c13 : index
      %b = arith.muli %k, %c5 : index
      %s = arith.addi %a, %b : index
      %m = arith.remui %s, %c101 : index
      %d = arith.subi %m, %c50 : index
      %di = arith.index_cast %d : index to i64
      %f = arith.sitofp %di : i64 to f32
      %v = arith.mulf %f, %eighth : f32
      %ii = arith.index_cast %i : index to i64
      %fi = arith.sitofp %ii : i64 to f32
      %w = arith.subf %v, %fi : f32
      memref.store %w, %x[%i, %k] : memref<?x?xf32>
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c11 = arith.constant 11 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c300 = arith.constant 300 : index
  %c400 = arith.constant 400 : index
  %c1000 = arith.constant 1000 : index
  %c5000 = arith.constant 5000 : index
  %quarter = arith.constant 0.25 : f32
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32

  // Row sums of x[i, k] = ((i * 7 + k * 3) mod 9 - 4) / 4: static, with a fill.
  %x = memref.alloc() : memref<16x1000xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %k = %c0 to %c1000 step %c1 {
      %a = arith.muli %i, %c7 : index
      %b = arith.muli %k, %c3 : index
      %s = arith.addi %a, %b : index
      %m = arith.remui %s, %c9 : index
      %d = arith.subi %m, %c4 : index
      %di = arith.index_cast %d : index to i64
      %f = arith.sitofp %di : i64 to f32
      %v = arith.mulf %f, %quarter : f32
      memref.store %v, %x[%i, %k] : memref<16x1000xf32>
    }
  }
  %sum = memref.alloc() : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %zero, %sum[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.for %k = %c0 to %c1000 step %c1 {
      %v = memref.load %x[%i, %k] : memref<16x1000xf32>
      %a = memref.load %sum[%i] : memref<16xf32>
      %s = arith.addf %v, %a : f32
      memref.store %s, %sum[%i] : memref<16xf32>
    }
    scf.reduce
  }
  %sumu = memref.cast %sum : memref<16xf32> to memref<*xf32>
  func.call @printMemrefF32(%sumu) : (memref<*xf32>) -> ()

  // Row maxima of dynamic sizes (kiln's compare-and-select max), 300 and then 10 columns: the
  // host picks the block launch for the first and the one-thread nest for the second.
  %ya = memref.alloc(%c5, %c300) : memref<?x?xf32>
  func.call @fillRows(%ya) : (memref<?x?xf32>) -> ()
  %ra = memref.dim %ya, %c0 : memref<?x?xf32>
  %ka = memref.dim %ya, %c1 : memref<?x?xf32>
  %maxa = memref.alloc(%ra) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%ra) step (%c1) {
    memref.store %lowest, %maxa[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%ra) step (%c1) {
    scf.for %k = %c0 to %ka step %c1 {
      %v = memref.load %ya[%i, %k] : memref<?x?xf32>
      %a = memref.load %maxa[%i] : memref<?xf32>
      %gt = arith.cmpf ogt, %a, %v : f32
      %m = arith.select %gt, %a, %v : f32
      memref.store %m, %maxa[%i] : memref<?xf32>
    }
    scf.reduce
  }
  %maxau = memref.cast %maxa : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%maxau) : (memref<*xf32>) -> ()
  %yb = memref.alloc(%c5, %c10) : memref<?x?xf32>
  func.call @fillRows(%yb) : (memref<?x?xf32>) -> ()
  %rb = memref.dim %yb, %c0 : memref<?x?xf32>
  %kb = memref.dim %yb, %c1 : memref<?x?xf32>
  %maxb = memref.alloc(%rb) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%rb) step (%c1) {
    memref.store %lowest, %maxb[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%rb) step (%c1) {
    scf.for %k = %c0 to %kb step %c1 {
      %v = memref.load %yb[%i, %k] : memref<?x?xf32>
      %a = memref.load %maxb[%i] : memref<?xf32>
      %gt = arith.cmpf ogt, %a, %v : f32
      %m = arith.select %gt, %a, %v : f32
      memref.store %m, %maxb[%i] : memref<?xf32>
    }
    scf.reduce
  }
  %maxbu = memref.cast %maxb : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%maxbu) : (memref<*xf32>) -> ()

  // The sum of a whole vector of dynamic length, v[k] = ((k * 11) mod 17 - 8) / 4: one block.
  %vec = memref.alloc(%c5000) : memref<?xf32>
  %n = memref.dim %vec, %c0 : memref<?xf32>
  scf.for %k = %c0 to %n step %c1 {
    %a = arith.muli %k, %c11 : index
    %m = arith.remui %a, %c17 : index
    %d = arith.subi %m, %c8 : index
    %di = arith.index_cast %d : index to i64
    %f = arith.sitofp %di : i64 to f32
    %v = arith.mulf %f, %quarter : f32
    memref.store %v, %vec[%k] : memref<?xf32>
  }
  %total = memref.alloc() : memref<1xf32>
  memref.store %zero, %total[%c0] : memref<1xf32>
  scf.for %k = %c0 to %n step %c1 {
    %v = memref.load %vec[%k] : memref<?xf32>
    %a = memref.load %total[%c0] : memref<1xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %total[%c0] : memref<1xf32>
  }
  %totalu = memref.cast %total : memref<1xf32> to memref<*xf32>
  func.call @printMemrefF32(%totalu) : (memref<*xf32>) -> ()

  // An int32 row max of a[i, k] = (i * 7919 + k * 104729) mod 2000003 - 1000001, no fill before
  // it (the output starts at the lowest int32).
  %ints = memref.alloc() : memref<3x400xi32>
  %c7919 = arith.constant 7919 : index
  %c104729 = arith.constant 104729 : index
  %c2000003 = arith.constant 2000003 : index
  %c1000001 = arith.constant 1000001 : index
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %k = %c0 to %c400 step %c1 {
      %a = arith.muli %i, %c7919 : index
      %b = arith.muli %k, %c104729 : index
      %s = arith.addi %a, %b : index
      %m = arith.remui %s, %c2000003 : index
      %d = arith.subi %m, %c1000001 : index
      %v = arith.index_cast %d : index to i32
      memref.store %v, %ints[%i, %k] : memref<3x400xi32>
    }
  }
  %imax = memref.alloc() : memref<3xi32>
  %min32 = arith.constant -2147483648 : i32
  scf.for %i = %c0 to %c3 step %c1 {
    memref.store %min32, %imax[%i] : memref<3xi32>
  }
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    scf.for %k = %c0 to %c400 step %c1 {
      %v = memref.load %ints[%i, %k] : memref<3x400xi32>
      %a = memref.load %imax[%i] : memref<3xi32>
      %m = arith.maxsi %a, %v : i32
      memref.store %m, %imax[%i] : memref<3xi32>
    }
    scf.reduce
  }
  %imaxu = memref.cast %imax : memref<3xi32> to memref<*xi32>
  func.call @printMemrefI32(%imaxu) : (memref<*xi32>) -> ()

  // Many rows (33001 of 40): a warp per row, 8 rows to a block, the last block with one row (its
  // other warps fold and store nothing); rows 0-2 and the last three.
  // w[i, k] = ((i * 13 + k * 5) mod 101 - 50) / 8 - (i mod 7).
  %c33001 = arith.constant 33001 : index
  %c40 = arith.constant 40 : index
  %c32998 = arith.constant 32998 : index
  %c13 = arith.constant 13 : index
  %c101 = arith.constant 101 : index
  %c50 = arith.constant 50 : index
  %eighth = arith.constant 0.125 : f32
  %w = memref.alloc() : memref<33001x40xf32>
  scf.for %i = %c0 to %c33001 step %c1 {
    scf.for %k = %c0 to %c40 step %c1 {
      %a = arith.muli %i, %c13 : index
      %b = arith.muli %k, %c5 : index
      %s = arith.addi %a, %b : index
      %m = arith.remui %s, %c101 : index
      %d = arith.subi %m, %c50 : index
      %di = arith.index_cast %d : index to i64
      %f = arith.sitofp %di : i64 to f32
      %v = arith.mulf %f, %eighth : f32
      %r = arith.remui %i, %c7 : index
      %ri = arith.index_cast %r : index to i64
      %rf = arith.sitofp %ri : i64 to f32
      %x2 = arith.subf %v, %rf : f32
      memref.store %x2, %w[%i, %k] : memref<33001x40xf32>
    }
  }
  %wmax = memref.alloc() : memref<33001xf32>
  scf.parallel (%i) = (%c0) to (%c33001) step (%c1) {
    memref.store %lowest, %wmax[%i] : memref<33001xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c33001) step (%c1) {
    scf.for %k = %c0 to %c40 step %c1 {
      %v = memref.load %w[%i, %k] : memref<33001x40xf32>
      %a = memref.load %wmax[%i] : memref<33001xf32>
      %gt = arith.cmpf ogt, %a, %v : f32
      %m = arith.select %gt, %a, %v : f32
      memref.store %m, %wmax[%i] : memref<33001xf32>
    }
    scf.reduce
  }
  %head = memref.subview %wmax[0] [3] [1] : memref<33001xf32> to memref<3xf32, strided<[1]>>
  %tail = memref.subview %wmax[32998] [3] [1] : memref<33001xf32> to memref<3xf32, strided<[1], offset: 32998>>
  %headu = memref.cast %head : memref<3xf32, strided<[1]>> to memref<*xf32>
  %tailu = memref.cast %tail : memref<3xf32, strided<[1], offset: 32998>> to memref<*xf32>
  func.call @printMemrefF32(%headu) : (memref<*xf32>) -> ()
  func.call @printMemrefF32(%tailu) : (memref<*xf32>) -> ()
  return
}
