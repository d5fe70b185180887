// CPU backend passes: from bufferized loops to kernels launched by the runtime, and the entry point.
#ifndef KILN_PASSES_CPU
#define KILN_PASSES_CPU

include "mlir/Pass/PassBase.td"

def LowerWorkspacePass : Pass<"kiln-lower-workspace", "::mlir::ModuleOp"> {
  let summary = "Get the memory plan's arena from the runtime context";
  let description = [{
    Replaces @main's `kiln_cpu.workspace` with a call of the context's
    `workspace(runtime, bytes)` (after kiln-add-runtime-context). When it
    returns NULL (out of memory), @main returns at once with empty views as
    results and the runtime reports the failure; nothing has been allocated
    or written by then.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::cf::ControlFlowDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def LowerStringOpsPass : Pass<"kiln-lower-string-ops", "::mlir::ModuleOp"> {
  let summary = "Call the runtime context's string kernels for @main's kiln_cpu string ops";
  let description = [{
    After kiln-add-runtime-context: each `kiln_cpu.string_from_float`,
    `string_to_float`, `string_change_case` and `string_equal` becomes a call
    of the matching context function (ABI 5) with the i128 string split into
    its data pointer and size; each `string_literal` the address and size of
    a private constant global holding its bytes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CheckHeapAllocationsPass : Pass<"kiln-check-heap-allocations", "::mlir::ModuleOp"> {
  let summary = "Report a failed heap allocation of @main to the runtime and return";
  let description = [{
    After each `memref.alloc` in @main's own blocks (outputs, data-sized
    intermediates), a NULL result calls the context's
    `allocation_failed(runtime, bytes)` and returns empty views at once, so a
    request whose sizes no memory can hold gets an out-of-memory error
    instead of a crash. Allocations nested in loops stay unguarded.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::cf::ControlFlowDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def FuseElementwisePass : Pass<"kiln-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg chains, keeping matrix products' operands unfused";
  let description = [{
    MLIR's elementwise fusion (linalg-fuse-elementwise-ops, with its reshape
    propagation and constant folding) with one difference: a producer is
    never fused into an operand of a contraction (a matmul-like generic),
    because the fused body recomputes the producer for every output column
    and stops kiln-vectorize-contractions from forming its microkernel.
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TileContractionsPass : Pass<"kiln-tile-contractions", "::mlir::func::FuncOp"> {
  let summary = "Tile matrix products and convolutions into parallel cache-sized blocks";
  let description = [{
    Every contraction (a linalg.generic with two inputs and a reduction) is
    tiled over its parallel dims with an `scf.forall`: the innermost parallel
    dim (contiguous in memory) by `inner-tile`, the one before it by
    `outer-tile`, the others by 1; reductions stay whole. Each tile reuses a
    block of the right-hand operand from cache across `outer-tile` rows, and
    the tiles are the work items the runtime spreads over threads. The chosen
    sizes are recorded on the tiled op as `kiln.tile_sizes`.
  }];
  let options = [
    Option<"innerTile", "inner-tile", "int64_t", "64", "Tile of the innermost parallel dim">,
    Option<"outerTile", "outer-tile", "int64_t", "16", "Tile of the parallel dim before it">,
    Option<"packedRows", "packed-rows", "int64_t", "64",
           "Rows per tile of a product with a panel-packed weight (kiln.packed_rhs)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::affine::AffineDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseEpiloguesPass : Pass<"kiln-fuse-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Fuse a tiled matrix product's elementwise consumer into its tile loop";
  let description = [{
    After kiln-tile-contractions: when the only reader of a product's
    `scf.forall` is an elementwise `linalg.generic` (bias, residual add,
    activation: everything kiln-fuse-elementwise merged into one op) that
    reads the product element for element and writes a tensor of its shape,
    MLIR's consumer fusion moves it into the loop. Each tile is then finished
    while it is in cache, in the same kernel, instead of one more pass over
    the whole result. When the consumer does not read its own init, it then
    writes over the product's tile, inserted into the product's buffer: the
    loop keeps one result and bufferization needs no per-tile copy.
    Consumers reading the product through a broadcast or transpose, or
    reading values computed after the loop, stay separate.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"];
}

def VectorizeContractionsPass : Pass<"kiln-vectorize-contractions", "::mlir::func::FuncOp"> {
  let summary = "Register-tile and vectorize the cache tiles of contractions";
  let description = [{
    Runs after `kiln-tile-contractions`. A cache tile (marked with
    `kiln.tile_sizes`) of the form out[.., i, j] += lhs[.., i, r] * rhs[.., r, j]
    with static sizes (j contiguous) becomes loops over `rows` x `columns`
    register blocks; each block keeps `rows` accumulator vectors as
    loop-carried values across the reduction, which streams one rhs vector and
    `rows` broadcast lhs scalars per step: an outer-product microkernel. Other
    tiles are left to the scalar loops (which LLVM vectorizes).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "4", "Register block: rows (the outer parallel dim)">,
    Option<"columns", "columns", "int64_t", "16", "Register block: columns (the contiguous dim)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"];
}

def ApproximateMathPass : Pass<"kiln-approximate-math"> {
  let summary = "Replace f32 tanh/erf/exp/log with polynomial approximations";
  let description = [{
    libm's scalar calls cannot be vectorized and glibc's tanhf alone took three
    quarters of a small MLP's time. MLIR's polynomial approximations are plain
    arithmetic (accurate to a few ulp for f32), so the loops around them
    vectorize. Other element types keep the libm calls. Not tied to an op: the
    CPU pipeline runs it on each func.func, the CUDA pipeline on each
    gpu.module (where it also spares the kernels libdevice's calls).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect"];
}

def ExpandIntegerPowerPass : Pass<"kiln-expand-integer-power"> {
  let summary = "Expand scalar math.ipowi into a square-and-multiply loop";
  let description = [{
    Integer Pow. MLIR's lowering (convert-math-to-funcs) divides by zero for
    0 to a negative power, undefined behaviour in the generated code, and
    cannot run in a gpu.module; this expansion is plain scf and arith, so the
    CPU and CUDA targets compute the same: b^0 = 1; for p < 0, 1 when b = 1,
    -1 or 1 by p's parity when b = -1, else 0; for p > 0 the wrapped product.
    Vector ipowi is left alone. Not tied to an op (func.func on the CPU,
    gpu.module on CUDA).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def SelectPairProductsPass : Pass<"kiln-select-pair-products", "::mlir::func::FuncOp"> {
  let summary = "Turn marked 16-bit pair products into x86's vpmaddwd";
  let description = [{
    The integer kernel of dynamic int8 products sums, per pair of 16-bit
    lanes, x[2i] * y[2i] + x[2i+1] * y[2i+1] into 32 bits (an
    `arith.addi` marked `kiln.pair_product` over even/odd shuffles). LLVM
    recognizes that form as vpmaddwd only when neither operand is a
    broadcast, and the activations are one; this pass calls the
    instruction's intrinsic directly (AVX-512BW: 32 lanes per call; AVX2:
    16), after bufferization, which cannot see through an intrinsic call.
    LLVM then fuses the accumulation into vpdpwssd where VNNI exists. With
    narrower vectors the generic form stays.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", "256", "Width of the target's vector registers">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect"];
}

def PrefetchWeightStreamsPass : Pass<"kiln-prefetch-weight-streams", "::mlir::func::FuncOp"> {
  let summary = "Prefetch the weight rows a quantized kernel will read a few rows ahead";
  let description = [{
    A `vector.transfer_read` of 8-bit weight panels [P, rows, B] straight
    from a weight argument of @main (the quantized products' weight loads,
    one row of a panel per step of the reduction loop) gets a
    `memref.prefetch` of the same panel `distance` bytes ahead along the
    second-to-last dim (clamped to the panel's last row, so no address
    leaves the buffer). Converting 8 or 4-bit weights costs several
    instructions per cache line, which leaves fewer loads in flight than the
    hardware prefetcher needs to keep a stream at full bandwidth.
  }];
  let options = [
    Option<"distance", "distance", "int64_t", "4096", "Bytes ahead to prefetch (0: none)">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def AddRuntimeContextPass : Pass<"kiln-add-runtime-context", "::mlir::ModuleOp"> {
  let summary = "Give @main the runtime context argument and record its ABI";
  let description = [{
    Prepends a `!llvm.ptr` argument (the `kiln_abi_context*`) to @main and
    records the rank of every argument and result and each result's element
    size, which `kiln-emit-entry-point` needs once memrefs are LLVM structs.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FormCpuLaunchesPass : Pass<"kiln-form-cpu-launches", "::mlir::ModuleOp"> {
  let summary = "Turn outermost scf.parallel loops into kiln_cpu.launch kernels";
  let description = [{
    Each outermost `scf.parallel` of @main becomes a launch over the product
    of all its dimensions but the innermost (all of them if it has one); the
    innermost stays a sequential loop inside each work item so that it can
    vectorize. The launch records the ONNX nodes its body came from.
  }];
  let dependentDialects = ["::kiln::cpu::CpuDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def CountKernelCostPass : Pass<"kiln-count-kernel-cost", "::mlir::ModuleOp"> {
  let summary = "Give each kiln_cpu.launch its FLOPs and compulsory bytes, for the profiler";
  let description = [{
    Runs right after `kiln-form-cpu-launches`. For each launch it computes two
    i64 values in the caller, just before the launch (so they follow dynamic
    shapes), and sets them as the launch's `flops` and `bytes`:

    * bytes: the compulsory traffic. The sum, over the distinct memrefs
      defined outside the launch that its body reads or writes (views and
      subviews inside the body are followed back to the captured memref), of
      their size (static dims, `memref.dim` for dynamic ones, times the
      element size). Each tensor counts once, however often tiles re-read it,
      so this is a lower bound on the real traffic. Scratch allocated inside
      the body does not count.
    * flops: work items x the operations of one item, counted statically
      from the body. Each float op counts its vector lanes (`vector<16xf32>`
      is 16): arith addf, subf, mulf, divf, remf, negf, maximumf, minimumf,
      maxnumf, minnumf and cmpf (how max and ReLU look once lowered) 1 each,
      every `math` op 1, `vector.fma`/`math.fma` 2, `vector.outerproduct` 2
      with an accumulator (else 1), `vector.contract` 2 per point of its
      iteration space, `vector.reduction`/`multi_reduction` 1 per input lane.
      Integer and index arithmetic, loads, stores, casts, selects and
      broadcasts do not count. Each op is multiplied by the trip counts of the
      `scf.for`/`scf.parallel` loops around it inside the body. A trip count
      whose bounds are defined outside the launch (or computed purely from
      such values) is computed exactly in the caller; one whose bounds depend
      on the work item is taken at work item 0 (an edge tile's
      `affine.min(tile, n - item * tile)` becomes `min(tile, n)`: exact when a
      dim fits in one tile, such as a decode step's single row; otherwise every
      tile counts as full, an upper bound by at most one tile per tiled dim);
      one that depends on an inner induction variable takes the constant
      bound of `ub - lb`. A loop split into a main loop and remainder loops (each starting
      where the previous one ends, as in the register-blocked microkernel)
      counts as the main loop's body per `step` iterations of the whole range
      (7 rows in blocks of 8 count 7 rows). `scf.if` counts its
      costlier branch; a loop whose trip count has no bound counts once.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def OutlineCpuLaunchesPass : Pass<"kiln-outline-cpu-launches", "::mlir::ModuleOp"> {
  let summary = "Outline kiln_cpu.launch bodies into kernels called via parallel_for";
  let description = [{
    Runs on the LLVM dialect. Each launch body becomes
    `void @<fn>_kernel_<id>(ptr captures, i64 begin, i64 end)` looping over
    its work items; the launch site packs the captured values into a stack
    struct and calls
    `ctx->parallel_for(ctx->runtime, id, kernel, captures, count, flops, bytes)`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def EmitEntryPointPass : Pass<"kiln-emit-entry-point", "::mlir::ModuleOp"> {
  let summary = "Emit kiln_entry(ctx, inputs, outputs), the artifact's only export";
  let description = [{
    Unpacks `kiln_abi_tensor` inputs into memref descriptors (row-major
    strides), calls @main, and writes each result's data pointer, allocation
    and shape into the output tensors (see runtime/include/kiln/abi.h).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MemrefCopyToLinalgPass : Pass<"kiln-memref-copy-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "Rewrite memref.copy as linalg.copy so it lowers to (parallel) loops";
  let description = [{
    A strided memref.copy (e.g. into the interior of a padded buffer) would
    otherwise lower to a call to MLIR's `memrefCopy` runtime helper, which
    the kiln runtime does not carry; as linalg.copy it becomes plain loops
    that launch and vectorize like any other kernel.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif
