// What the passes that form GPU launches share: which host ops touch buffers, and iteration counts.
#ifndef KILN_PASSES_CUDA_LAUNCHUTILS_H
#define KILN_PASSES_CUDA_LAUNCHUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace kiln::cuda {

/// Whether `op` itself (not counting nested ops) reads or writes memory.
/// Allocation and deallocation are host work (they only move pointers), and so are the ops
/// marked kHostOpAttr.
bool accessesMemory(mlir::Operation *op);

/// Whether anything in `op`, outside the parallel loops and GPU launches nested in it, touches
/// memory: if not, `op` is host control flow around kernels.
bool accessesMemoryOutsideKernels(mlir::Operation *op);

/// Whether `op` holds a parallel loop or a GPU launch.
bool containsKernels(mlir::Operation *op);

/// The buffer `v` is a view of (through any chain of view-like ops), or `v` itself.
mlir::Value rootBuffer(mlir::Value v);

/// Whether `v` is (a view of) a memref.get_global: a constant of the host program, in host
/// memory. Kernels read such constants only from copies in their own module (cloned into the
/// launch before outlining); their host address must never reach the device (a launch parameter,
/// a cuBLASLt operand).
bool isHostGlobal(mlir::Value v);

/// The number of iterations of a loop from `lb` to `ub` by `step` (never negative), folded as
/// built, so static bounds give a constant.
mlir::Value tripCount(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lb, mlir::Value ub, mlir::Value step);

/// The induction variables (lb + i * step for each loop) of linear iteration `id` of a loop nest
/// with these bounds, the innermost loop varying fastest.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b, mlir::Location loc, mlir::Value id,
                                           mlir::ValueRange lbs, mlir::ValueRange steps, mlir::ValueRange trips);

/// Combines the partial values of each group of `lanes` threads of a block (a power of two;
/// thread t's group starts at t - lane) in `shared`, a workgroup buffer of at least the block's
/// threads: thread t stores `partial` at index t, then each group halves its values, a barrier
/// after every step, until the group's combination is at its first index. Every thread of the
/// block must reach this (it holds barriers).
void combineInShared(mlir::OpBuilder &b, mlir::Location loc, mlir::Value partial, mlir::Value shared,
                     mlir::Value thread, mlir::Value lane, int64_t lanes,
                     llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine);

} // namespace kiln::cuda

#endif
