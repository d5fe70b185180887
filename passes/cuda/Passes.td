// CUDA-only passes: half-precision products, then from bufferized loops to GPU kernels the runtime launches on a stream.
#ifndef KILN_PASSES_CUDA
#define KILN_PASSES_CUDA

include "mlir/Pass/PassBase.td"

def AttentionOperandViewsPass : Pass<"kiln-attention-operand-views", "::mlir::func::FuncOp"> {
  let summary = "Read attention's heads and write its output through views instead of transposed copies";
  let description = [{
    For --target=cuda, in the linalg phase (tensors). A transformer splits
    its [B, S, H*D] projections into heads with a Reshape to [B, S, H, D] and
    a Transpose to [B, H, S, D], and merges the output back the same way:
    on the GPU each is a copy, a launch of its own (7 per layer of a GPT).
    Here a `linalg.transpose` feeding `kiln_kernel.attention`'s query, key or
    value becomes the op's `query_perm`/`key_perm`/`value_perm` (the op
    reads the transpose's input), and a transpose that is the only use of
    its result becomes `init_perm` (the op writes the transpose's
    destination); bufferization then passes transposed views. A
    `tensor.reshape` by a constant shape that only splits dims, statically
    (what a Reshape into heads is), feeding such a read becomes a
    `tensor.expand_shape`, so a slice of the fused QKV projection stays a
    view instead of being copied to make the reshape contiguous.
    Permutations must keep the last dim last (the head's elements stay
    contiguous); paged key/value pools are never permuted.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def TransposedReadsPass : Pass<"kiln-transposed-reads", "::mlir::func::FuncOp"> {
  let summary = "Let linalg.generic inputs and tensor.extract read a transpose's input instead of its result";
  let description = [{
    For --target=cuda, in the linalg phase (tensors), before elementwise
    fusion. A `linalg.transpose` whose result is read only as inputs of
    `linalg.generic` ops and by `tensor.extract` ops (anywhere, such as in a
    generic's body) disappears: each generic reads the transpose's input with
    its indexing map permuted, each extract with its indices permuted. Only
    permutations that keep the last dim last (the innermost elements stay
    contiguous), on tensors. A `tensor.extract_slice` of the result (keeping
    the rank) becomes a transpose of the input's slice, redirected in turn;
    when that slice is only inserted into another tensor (a KV append's row
    into the cache) the transpose stays on the slice, and bufferization makes
    it write the destination directly.

    What it is for: rotary embeddings after the split into heads, and the KV
    append of the split keys and values. The rotary
    generic reads its input twice per element (the element and its rotated
    half, by tensor.extract), so kiln-fuse-elementwise cannot fuse the
    transpose into it, and on the GPU the transpose was a copy and a launch
    of its own (for q and k of each Llama layer).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def FillPerDestinationPass : Pass<"kiln-fill-per-destination", "::mlir::func::FuncOp"> {
  let summary = "Give each destination of a shared linalg.fill on tensors its own fill";
  let description = [{
    For --target=cuda, at the end of the linalg phase (after the last CSE,
    which merges identical fills). A `linalg.fill` of a `tensor.empty` that is
    the destination (init) of several ops, as one zero-filled accumulator
    shared by every product of a model's layers, is cloned with its empty
    tensor for every such use but the first. Shared, it bufferizes into one
    filled buffer kept alive across the model plus a copy into each product's
    output (a launch that reads and writes the whole output); cloned, each
    fill writes its product's output in place, and kiln-call-device-gemm
    turns a zero fill right before a product into beta = 0, which needs no
    launch at all.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def MarkGemmEpiloguesPass : Pass<"kiln-mark-gemm-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Mark the elementwise op that is the only reader of a matrix product";
  let description = [{
    For --target=cuda, at the end of the linalg phase (on tensors). An
    elementwise `linalg.generic` with an input that is the result of a
    contraction (two inputs, one output, one reduction loop) used by nothing
    else gets `kiln.gemm_epilogue` = that input's index. kiln-call-device-gemm
    folds such an op (a bias row, a residual, ReLU) into the product's cuBLASLt
    call only when it carries the mark: after bufferization the memory plan and
    CSE share buffer views between tensors, so whether anything else reads the
    product can no longer be seen there.
  }];
}

def FoldReductionAddendsPass : Pass<"kiln-fold-reduction-addends", "::mlir::func::FuncOp"> {
  let summary = "Start a sum reduction from the terms the elementwise op after it adds to its result";
  let description = [{
    For GPU targets, on tensors after elementwise fusion. A `linalg.generic`
    sum reduction that is no contraction (the int8/int4 products, one
    reduction per output), starting from a zero `linalg.fill` and read only
    by an elementwise op at the element that op writes, where that op adds
    terms to it (a chain of adds, each the only reader of the one before: a
    bias, a residual): the terms' sum becomes an elementwise op writing the
    reduction's initial value, and the elementwise op reads the reduction
    where it read the chain's end, or is replaced by the reduction when it
    only added. kiln-form-block-reductions then computes that initial value
    in the reduction's launch, so the bias and residual cost no launch.
    The adds are reassociated (sum + (bias + residual)).
  }];
}

def ResolveReshapeShapesPass : Pass<"kiln-resolve-reshape-shapes", "::mlir::func::FuncOp"> {
  let summary = "Turn memref.reshape with a known shape operand into memref.reinterpret_cast";
  let description = [{
    `memref.reshape` reads its result's sizes from a shape buffer. On the GPU
    that buffer is device memory the host program cannot read, so before
    kiln-form-gpu-launches each reshape of an identity-layout buffer whose
    sizes are known becomes a `memref.reinterpret_cast` with row-major
    strides: static result dims need nothing, dynamic ones are read from a
    constant global (`memref.get_global` of a constant) or from the scalar
    stored at a constant index of a buffer filled in the same block before the
    reshape (how `tensor.from_elements` bufferizes). Reshapes whose sizes are
    not known this way stay as they are.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def ParallelizeRowLoopsPass : Pass<"kiln-parallelize-row-loops", "::mlir::func::FuncOp"> {
  let summary = "Turn a host loop of per-row copies into one parallel loop over (row, element)";
  let description = [{
    Before kiln-form-gpu-launches. An `scf.for` without results whose body is
    host ops (pure ops, loads), optionally an `scf.if` without an else with
    more host ops, and last an `scf.parallel` without results whose bounds do
    not depend on the loop becomes one `scf.parallel` over the loop's range
    and the inner loop's: the host ops, the guard and the inner body run per
    element. It applies only when the iterations are independent: every store
    in the loop goes into a subview, made in the loop, of a buffer from
    outside it, with a unit dim at offset the induction variable (each
    iteration writes its own row), or the loop carries
    `kiln.disjoint_iterations` (its lowering knows the iterations write
    distinct elements: the paged KV write, each token to the slot the block
    table names), nothing else in the loop has memory effects
    but loads, and no load reads a buffer (through views) that the loop writes.

    The loop this is for: a KV-cache append with per-row positions. Its body
    reads each row's position from device memory, so without this the whole
    loop ran on one GPU thread; now each thread reads its row's position and
    copies one element. Innermost loops are taken first, so nested row loops
    become one parallel loop.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"];
}

def FuseSiblingLoopsPass : Pass<"kiln-fuse-sibling-loops", "::mlir::func::FuncOp"> {
  let summary = "Merge neighbouring independent parallel loops of the host program into one launch";
  let description = [{
    For --target=cuda, after the loops are formed (kiln-parallelize-row-loops)
    and kiln-form-block-reductions took its fills in (a fill merged into
    another loop would keep its launch), before kiln-form-gpu-launches. Two `scf.parallel` loops of the same
    host block with only pure ops and allocations between them become one
    loop at the second one's place when neither has results, their bodies
    hold no loops and no memory effects but loads and stores, and neither
    reads or writes a buffer (the root of its views) that the other writes.
    Over the same space (equal bounds and steps) each iteration runs both
    bodies; otherwise the merged loop runs one index over the first loop's
    iterations then the second's, and each body recovers its own induction
    variables from it (never more iterations than the two loops together).
    Chains merge in turn. A view of the memory plan's arena is its own buffer
    when kiln-plan-memory marked it with its live span (`kiln.plan_live`): two
    such buffers live at the same time never share bytes, while two that are
    not may (the later one on the bytes of the earlier) and count as one.

    What it is for: the keys' and values' KV appends of a decoder layer, two
    copies into different caches, were two launches a layer.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def CallDeviceGemmPass : Pass<"kiln-call-device-gemm", "::mlir::ModuleOp"> {
  let summary = "Hand @main's matrix products to the runtime's gemm (cuBLASLt), kiln's kernels as fallback";
  let description = [{
    For --target=cuda, after bufferization and kiln-add-runtime-context,
    before the linalg ops become loops. Each `linalg.generic` at the top level
    of @main that is one matrix product (one reduction loop; a body
    `c + a * b`, optionally scaled by a constant or a value from outside, `a`
    and `b` optionally widened with `arith.extf`; f32, f16 or bf16 operands,
    an f32 or same-typed output; up to 4 batch loops, broadcast ones
    included) becomes a call of the context's `gemm` with a
    `kiln_abi_gemm` (runtime/include/kiln/abi.h) filled on the host:
    addresses, sizes, and each operand's strides along m, n, k and the batch
    loops, read from the buffers' strided metadata. A `linalg.fill` of zero
    right before it becomes beta = 0. The original fill and product move into
    an `scf.if` taken when `gemm` returns nonzero (no library, a layout it
    does not serve), so kiln's own kernels compute it then. The host ops are
    marked `kiln.host` so kiln-form-gpu-launches leaves them on the host.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def FormBlockReductionsPass : Pass<"kiln-form-block-reductions", "::mlir::ModuleOp"> {
  let summary = "Give the reductions of @main with few outputs one block per output";
  let description = [{
    For --target=cuda, before kiln-form-gpu-launches. A loop nest at host
    level of @main that is a reduction (an optional `scf.parallel` over the
    outputs around perfectly nested `scf.for` loops with bounds from outside,
    whose body stores `combine(load out[i], value)` back to `out[i]`, with
    `combine` an add, mul, min, max, and, or or xor of floats or integers of
    8 bits or more) becomes a `gpu.launch` of one block per output: each
    thread folds the elements thread, thread + T, ... of the reduced extent
    from the combination's identity, the block halves its T partial values
    in shared memory (a workgroup attribution) with barriers between steps,
    and thread 0 stores `combine(out[i], total)`. When the op right before
    (host arithmetic aside) fills every output with one value from outside
    (a parallel loop over the same outputs, or a store for a single one),
    thread 0 stores `combine(fill, total)` instead and the fill is dropped
    (kept before the one-thread nest when the host picks at run time).
    It applies when the reduced extent has at least 64 elements and there are
    fewer than 32768 outputs (with many outputs, only when the innermost
    reduced dim is the last index of a buffer the body reads: neighbouring
    threads, neighbouring elements); T is the extent rounded up to a power of
    two, at most 256. With 32768 outputs or more, rows of at least 32 along
    the last index get a warp each instead (blocks of 256 threads, 8 outputs
    each, the halving within each warp's 32 slots; a warp past the last
    output folds and stores nothing, but reaches every barrier). When the
    sizes are only known at run time the launches and the original nest are
    kept in `scf.if`s on them (a reduction to one element always gets its
    block). Other loop
    nests are left to kiln-form-gpu-launches.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def FormNormBlocksPass : Pass<"kiln-form-norm-blocks", "::mlir::ModuleOp"> {
  let summary = "Lower kiln_kernel.row_norm on buffers to a GPU launch of one block per row";
  let description = [{
    For --target=cuda, after bufferization, before kiln-form-gpu-launches
    (which keeps the launches formed here). Each `kiln_kernel.row_norm` on
    buffers becomes one `gpu.launch` with a block per row (at most 256
    threads, the row's length rounded up to a power of two, at least 32).
    Each thread folds a strided slice of its row (neighbouring threads,
    neighbouring elements), the block halves the partial sums in shared
    memory, and the first thread leaves the mean (then 1/stddev, from a
    second pass over the row for LayerNormalization's centred variance) in
    shared memory for the block's final pass, which writes the row. A
    softmax's statistics are the row's max (halved by compare and select)
    and the sum of the shifted exponentials.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def FormAttentionBlocksPass : Pass<"kiln-form-attention-blocks", "::mlir::ModuleOp"> {
  let summary = "Lower kiln_kernel.attention on buffers to a GPU launch of one block per 8 query rows";
  let description = [{
    For --target=cuda, after bufferization, before kiln-form-gpu-launches
    (which keeps the launches formed here). Each `kiln_kernel.attention` on
    buffers becomes a `gpu.launch` of 128-thread blocks, one block per 8
    query rows of one batch index (the grid is the query's batch extents
    times ceil(Sq / 8)). The block walks the keys in tiles of 128, one key
    per thread, with an online softmax: the tile's scores and
    exponentials, the rows' running max and sum, the query rows and the
    output accumulators live in shared memory (workgroup attributions), and
    the per-row max and sum over a tile are halvings with a barrier after
    each step. The scores never reach device memory; each output element is
    written once. f16/bf16 operands are widened to f32 as they are loaded.
    With few blocks and many keys (a decode step over a long context), the
    host splits the keys into ranges of whole tiles, at least
    `min-split-keys` each, until there are about 264 blocks: each block
    writes its rows' accumulators, max and sum to partial buffers, and a
    second launch combines them (FlashDecoding's split).
  }];
  let options = [
    Option<"minSplitKeys", "min-split-keys", "int64_t", "256",
           "Fewest keys a block takes when the keys are split over blocks (rounded up to whole tiles "
           "of 128); 0 never splits">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::math::MathDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def EmulateGpuBlocksPass : Pass<"kiln-emulate-gpu-blocks", "::mlir::ModuleOp"> {
  let summary = "Run one-dimensional gpu.launch blocks on the CPU, thread by thread (checking without a GPU)";
  let description = [{
    Checks the kernels kiln-form-block-reductions writes without a GPU. Each
    `gpu.launch` (one-dimensional grid and blocks) becomes a loop over the
    blocks; in a block, the code between two `gpu.barrier`s is a loop over
    the threads, so each step ends for every thread before the next begins.
    Code holding a barrier must be a result-less `scf.if` without else, or
    an `scf.for` without results, whose condition or bounds do not depend on
    the thread (as on the GPU, where every thread of a block must reach the
    barrier); their bodies are emitted the same way. Pure values a thread computed before a
    barrier are recomputed after it; any other value crossing a barrier is
    an error. Workgroup buffers become one host buffer at the function's
    entry; a thread's own stack arrays are scoped to its turn. The last
    pass of the bufferized phase for --target=cuda-emulated, which runs the
    CUDA pipeline's kernels on the CPU to check them without a GPU.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FormGpuLaunchesPass : Pass<"kiln-form-gpu-launches", "::mlir::ModuleOp"> {
  let summary = "Turn @main's loops and tensor accesses into gpu.launch regions";
  let description = [{
    For --target=cuda, after bufferization and kiln-add-runtime-context. Every
    buffer lives in device memory, so the host program (@main) may compute
    sizes and offsets but never read or write an element:
    - each outermost `scf.parallel` becomes a `gpu.launch` of 256-thread
      blocks, one thread per iteration of its whole (collapsed) iteration
      space, innermost dimension fastest so neighbouring threads touch
      neighbouring elements (coalesced); a guard skips the threads past the
      end;
    - any other op that reads or writes a buffer (a scalar store, a loop
      whose body loads elements, a parallel loop with reductions), together
      with the pure ops that use its results, runs in a one-thread launch
      placed where the group ends;
    - host control flow (`scf.for`, `scf.if`) whose buffer accesses are all
      inside parallel loops stays on the host and launches kernels.
    A parallel loop is a grid launch even when it needs values of a
    preceding group. The values of a group that later host ops need (a
    data-dependent shape, a shape input) are made on the host: pure ops
    (index arithmetic, views) are recomputed there from their operands, and
    the other values (loaded elements, loop results) are stored by the
    kernel into a small device buffer of i64 slots that the host reads once
    after the launch with the context's `device_read` (which waits for the
    launches before it). A `memref.reshape`'s shape buffer is copied to host
    memory the same way. A value that fits no slot (a buffer chosen by
    tensor data) is an error naming the op. Before any of this, a load at
    constant indices of what the same host block stored there from a value
    the host computes (sizes in arena scalars or shape buffers) is replaced
    by that value when no write through the buffer or its views may reach
    it in between, so the host does not wait for the GPU to give back what
    it knew. Launches formed before (kiln-form-block-reductions) are kept.
    Ops that use strings (`kiln_cpu.string_*`, whose bytes are host memory)
    run on the host: each buffer they use is copied to a host mirror with
    `device_read` before, the mirrors they write are copied back with
    `device_write` after, and when a mirror cannot be allocated the op is
    skipped (its results zero) and the run fails with out of memory.
    A constant global a kernel reads is read through a `memref.get_global`
    inside the launch, so outlining copies the global into the GPU module
    (device memory) instead of passing a host address.
    Each launch is located at the ONNX nodes it came from.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def MergeGpuModulesPass : Pass<"kiln-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Move every outlined kernel into one gpu.module";
  let description = [{
    gpu-kernel-outlining gives each kernel its own gpu.module. The artifact
    carries one PTX module (one load, one JIT), so after outlining every
    gpu.func moves into the first module (renamed `kernels`), keeping one copy
    of each constant global the kernels share, and the launches are
    redirected to it.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def RecordKernelParamsPass : Pass<"kiln-record-kernel-params", "::mlir::ModuleOp"> {
  let summary = "Record each kernel's parameter kinds for the runtime's pointer checks";
  let description = [{
    After outlining, every `gpu.launch_func` still passes memrefs: this pass
    writes the module attribute `kiln.cuda_kernel_params`, a dictionary from
    kernel name to its arguments in order, `mR:E` for a memref of rank R with
    E-byte elements (3 + 2R launch parameters once lowered) and `sB` for a
    B-byte scalar. kiln-lower-gpu-launches checks it against the lowered
    operands and puts it in the kernel table; the artifact carries it so the
    runtime can check that every buffer a launch passes is device memory.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def LowerGpuLaunchesPass : Pass<"kiln-lower-gpu-launches", "::mlir::ModuleOp"> {
  let summary = "Launch kernels through the runtime context and keep the PTX";
  let description = [{
    After gpu-module-to-binary (PTX) and gpu-to-llvm: each `gpu.launch_func`
    of @main becomes a call of the context's `gpu_launch(runtime, kernel_id,
    grid x/y/z, block x/y/z, shared bytes, params)`, `params` an array of
    pointers to the kernel's arguments (cuLaunchKernel's convention; memrefs
    are passed as their expanded descriptors, as convert-gpu-to-nvvm expects).
    The `gpu.binary`'s PTX moves to the module attribute `kiln.cuda_ptx` and
    the kernel table (name, ONNX source nodes, in kernel-id order) to
    `kiln.cuda_kernels`; the binary op and the container attribute are
    removed, leaving a module the x86 target translates.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LowerDeviceHeapPass : Pass<"kiln-lower-device-heap", "::mlir::ModuleOp"> {
  let summary = "Allocate @main's heap buffers in device memory";
  let description = [{
    After the conversion to the LLVM dialect: in @main, each call of `malloc`
    or `aligned_alloc` becomes the context's `device_alloc(runtime, bytes)`
    and each `free` its `device_free(runtime, ptr)`, so outputs and
    data-sized intermediates live where the kernels can address them. The
    runtime owns (and frees) the device outputs. Calls marked
    `kiln.host_heap` (the host copies kiln-form-gpu-launches makes for ops
    that run on the host) stay host allocations.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def HalfPrecisionProductsPass : Pass<"kiln-half-precision-products", "::mlir::ModuleOp"> {
  let summary = "Run the products by constant f32 weights in f16 or bf16 (--precision)";
  let description = [{
    Every graph.matmul and graph.gemm with an f32 result whose operand 1
    (MatMul's rhs, Gemm's B) is a constant f32 tensor reads that weight
    rounded to `type` (nearest even, once, at compile time; a weight read by
    several products is rounded once); its other operands are cast to `type`
    before it (graph.cast) and its result cast back to f32 after it, so the
    ops around it are unchanged. The f32 constant disappears when nothing
    else reads it. The weights' bytes halve, and on the CUDA target the
    product runs on tensor cores (accumulating in f32, see
    kiln-convert-graph-to-linalg's `wide-half-products`).
  }];
  let options = [
    Option<"type", "type", "std::string", "\"f16\"", "f16 or bf16">
  ];
}

#endif
