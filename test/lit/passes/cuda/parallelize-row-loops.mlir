// kiln-parallelize-row-loops: a host loop of per-row copies becomes one parallel loop over (row,
// element) when its iterations are independent.
// RUN: kiln-opt %s -split-input-file -kiln-parallelize-row-loops | FileCheck %s

// The KV append with row positions: each row's position read from a buffer, a guard, the copy.
// CHECK-LABEL: func @append_rows
// CHECK-NOT: scf.for
// CHECK: scf.parallel (%[[R:.*]], %[[H:.*]], %[[T:.*]], %[[D:.*]]) = (%c0, %c0, %c0, %c0) to (%{{.*}}, %c2, %[[N:.*]], %c16)
// CHECK-NEXT: %[[P:.*]] = memref.load %{{.*}}[%[[R]]] : memref<?xi64>
// CHECK-NEXT: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: scf.if
// CHECK-NEXT: %[[SRC:.*]] = memref.subview %{{.*}}[%[[R]], 0, 0, 0] [1, 2, %[[N]], 16]
// CHECK-NEXT: %[[DST:.*]] = memref.subview %{{.*}}[%[[R]], 0, %[[PI]], 0] [1, 2, %[[N]], 16]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[SRC]][%c0, %[[H]], %[[T]], %[[D]]]
// CHECK-NEXT: memref.store %[[V]], %[[DST]][%c0, %[[H]], %[[T]], %[[D]]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
func.func @append_rows(%cache: memref<?x2x?x16xf32>, %update: memref<?x2x?x16xf32>, %rows: memref<?xi64>, %limit: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %b = memref.dim %rows, %c0 : memref<?xi64>
  %n = memref.dim %update, %c2 : memref<?x2x?x16xf32>
  scf.for %r = %c0 to %b step %c1 {
    %p64 = memref.load %rows[%r] : memref<?xi64>
    %p = arith.index_cast %p64 : i64 to index
    %end = arith.addi %p, %n : index
    %fits = arith.cmpi sle, %end, %limit : index
    scf.if %fits {
      %src = memref.subview %update[%r, 0, 0, 0] [1, 2, %n, 16] [1, 1, 1, 1] : memref<?x2x?x16xf32> to memref<1x2x?x16xf32, strided<[?, ?, 16, 1], offset: ?>>
      %dst = memref.subview %cache[%r, 0, %p, 0] [1, 2, %n, 16] [1, 1, 1, 1] : memref<?x2x?x16xf32> to memref<1x2x?x16xf32, strided<[?, ?, 16, 1], offset: ?>>
      scf.parallel (%h, %t, %d) = (%c0, %c0, %c0) to (%c2, %n, %c16) step (%c1, %c1, %c1) {
        %v = memref.load %src[%c0, %h, %t, %d] : memref<1x2x?x16xf32, strided<[?, ?, 16, 1], offset: ?>>
        memref.store %v, %dst[%c0, %h, %t, %d] : memref<1x2x?x16xf32, strided<[?, ?, 16, 1], offset: ?>>
        scf.reduce
      }
    }
  }
  return
}

// -----

// Rows and tokens nested: innermost first, then the row loop over the token loop's result.
// CHECK-LABEL: func @nested_rows
// CHECK-NOT: scf.for
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%{{.*}}, %{{.*}}, %c8)
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @nested_rows(%out: memref<?x?x8xf32>, %in: memref<?x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %b = memref.dim %in, %c0 : memref<?x?x8xf32>
  %n = memref.dim %in, %c1 : memref<?x?x8xf32>
  scf.for %r = %c0 to %b step %c1 {
    scf.for %t = %c0 to %n step %c1 {
      %src = memref.subview %in[%r, %t, 0] [1, 1, 8] [1, 1, 1] : memref<?x?x8xf32> to memref<1x1x8xf32, strided<[?, 8, 1], offset: ?>>
      %dst = memref.subview %out[%r, %t, 0] [1, 1, 8] [1, 1, 1] : memref<?x?x8xf32> to memref<1x1x8xf32, strided<[?, 8, 1], offset: ?>>
      scf.parallel (%d) = (%c0) to (%c8) step (%c1) {
        %v = memref.load %src[%c0, %c0, %d] : memref<1x1x8xf32, strided<[?, 8, 1], offset: ?>>
        memref.store %v, %dst[%c0, %c0, %d] : memref<1x1x8xf32, strided<[?, 8, 1], offset: ?>>
        scf.reduce
      }
    }
  }
  return
}

// -----

// Each iteration writes a slice at a data-dependent offset, not its own row: two iterations may
// write the same elements, so the loop stays serial.
// CHECK-LABEL: func @not_own_row
// CHECK: scf.for
func.func @not_own_row(%cache: memref<?x16xf32>, %update: memref<?x16xf32>, %rows: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %b = memref.dim %rows, %c0 : memref<?xi64>
  scf.for %r = %c0 to %b step %c1 {
    %p64 = memref.load %rows[%r] : memref<?xi64>
    %p = arith.index_cast %p64 : i64 to index
    %src = memref.subview %update[%r, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %dst = memref.subview %cache[%p, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.parallel (%d) = (%c0) to (%c16) step (%c1) {
      %v = memref.load %src[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      memref.store %v, %dst[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// -----

// Row r reads row r - 1 of the buffer it writes (a running sum): iteration order matters.
// CHECK-LABEL: func @reads_what_it_writes
// CHECK: scf.for
func.func @reads_what_it_writes(%acc: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %b = memref.dim %acc, %c0 : memref<?x16xf32>
  scf.for %r = %c1 to %b step %c1 {
    %prev = arith.subi %r, %c1 : index
    %src = memref.subview %acc[%prev, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %dst = memref.subview %acc[%r, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.parallel (%d) = (%c0) to (%c16) step (%c1) {
      %a = memref.load %src[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      %x = memref.load %dst[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      %s = arith.addf %a, %x : f32
      memref.store %s, %dst[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// -----

// The copy's extent depends on the row (its own length): no rectangular parallel loop.
// CHECK-LABEL: func @row_dependent_bounds
// CHECK: scf.for
func.func @row_dependent_bounds(%out: memref<?x16xf32>, %in: memref<?x16xf32>, %lengths: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = memref.dim %in, %c0 : memref<?x16xf32>
  scf.for %r = %c0 to %b step %c1 {
    %len = memref.load %lengths[%r] : memref<?xindex>
    %src = memref.subview %in[%r, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %dst = memref.subview %out[%r, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.parallel (%d) = (%c0) to (%len) step (%c1) {
      %v = memref.load %src[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      memref.store %v, %dst[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// -----

// An allocation inside the loop (not a plain element copy) keeps it serial.
// CHECK-LABEL: func @allocates
// CHECK: scf.for
func.func @allocates(%out: memref<?x16xf32>, %in: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %b = memref.dim %in, %c0 : memref<?x16xf32>
  scf.for %r = %c0 to %b step %c1 {
    %tmp = memref.alloc() : memref<16xf32>
    %dst = memref.subview %out[%r, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.parallel (%d) = (%c0) to (%c16) step (%c1) {
      %v = memref.load %tmp[%d] : memref<16xf32>
      memref.store %v, %dst[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// -----

// A paged write: each token to the slot its block table names, which no analysis can prove
// distinct; the lowering marks the loop kiln.disjoint_iterations, and it becomes parallel.
// (Unmarked, the same loop stays serial: @not_own_row.)
// CHECK-LABEL: func @marked_disjoint
// CHECK-NOT: scf.for
// CHECK: scf.parallel (%[[T:.*]], %[[D:.*]]) = (%c0, %c0) to (%{{.*}}, %c16)
// CHECK-NEXT: %[[B:.*]] = memref.load %{{.*}}[%[[T]]] : memref<?xindex>
// CHECK: memref.subview %{{.*}}[%[[B]], 0] [1, 16]
func.func @marked_disjoint(%pool: memref<?x16xf32>, %update: memref<?x16xf32>, %table: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %update, %c0 : memref<?x16xf32>
  scf.for %t = %c0 to %n step %c1 {
    %blk = memref.load %table[%t] : memref<?xindex>
    %src = memref.subview %update[%t, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %dst = memref.subview %pool[%blk, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.parallel (%d) = (%c0) to (%c16) step (%c1) {
      %v = memref.load %src[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      memref.store %v, %dst[%c0, %d] : memref<1x16xf32, strided<[16, 1], offset: ?>>
      scf.reduce
    }
  } {kiln.disjoint_iterations}
  return
}
