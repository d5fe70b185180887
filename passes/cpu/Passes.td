// CPU-only passes: weight panels, cache tiles, register microkernels, launches on the thread pool, x86 pair products.
#ifndef KILN_PASSES_CPU
#define KILN_PASSES_CPU

include "mlir/Pass/PassBase.td"

def TileContractionsPass : Pass<"kiln-tile-contractions", "::mlir::func::FuncOp"> {
  let summary = "Tile matrix products and convolutions into parallel cache-sized blocks";
  let description = [{
    Every contraction (a linalg.generic with two inputs and a reduction) is
    tiled over its parallel dims with an `scf.forall`: the innermost parallel
    dim (contiguous in memory) by `inner-tile`, the one before it by
    `outer-tile`, the others by 1; reductions stay whole. Each tile reuses a
    block of the right-hand operand from cache across `outer-tile` rows, and
    the tiles are the work items the runtime spreads over threads. A product
    with a panel-packed weight (kiln.packed_rhs) takes `packed-rows` rows per
    tile (fewer where it would be under 8 work items, in tiles of equal rows
    where whole register blocks would give two threads unequal shares), and
    one over a map of up to 1024 rows exactly two row halves, so that each of
    two threads keeps its rows across the ops around it. An implicit
    convolution takes tiles of whole output rows, preferring an even number
    of them. The chosen sizes are recorded on the tiled op as
    `kiln.tile_sizes`.
  }];
  let options = [
    Option<"innerTile", "inner-tile", "int64_t", "64", "Tile of the innermost parallel dim">,
    Option<"outerTile", "outer-tile", "int64_t", "16", "Tile of the parallel dim before it">,
    Option<"packedRows", "packed-rows", "int64_t", "64",
           "Rows per tile of a product with a panel-packed weight (kiln.packed_rhs)">,
    Option<"rowBlock", "row-block", "int64_t", "6",
           "The microkernel's register block rows, which an implicit convolution's tile of output "
           "positions should fill">,
    Option<"widePanelRows", "wide-panel-rows", "int64_t", "0",
           "The microkernel's rows for a 64-column panel, when they differ from row-block (0: the same)">,
    Option<"l2Bytes", "l2-bytes", "int64_t", "1048576",
           "Weights larger than this are streamed from L3 by every tile: an implicit convolution's "
           "tiles then take more output positions each">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::affine::AffineDialect",
                           "::mlir::tensor::TensorDialect"];
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
    Option<"columns", "columns", "int64_t", "16", "Register block: columns (the contiguous dim)">,
    Option<"reductionChunk", "reduction-chunk", "int64_t", "0",
           "Split reductions longer than twice this into chunks of it, each run over all rows of "
           "the tile (cache blocking of the reduction); 0 never splits">,
    Option<"convInnerChunk", "conv-inner-chunk", "int64_t", "0",
           "The same for an implicit convolution's innermost reduction (a window row's taps and "
           "channels; each chunk over every window row)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"];
}

def VectorizeElementwisePass : Pass<"kiln-vectorize-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Write elementwise linalg ops as vector code over their innermost dim";
  let description = [{
    An all-parallel `linalg.generic` on tensors with static sizes, whose
    outputs are written with the innermost dim last and contiguous, whose
    inputs read it as their last index or not at all, and whose body is
    elementwise arith/math becomes an `scf.forall` over the dims before the
    last two, loops over those two (the innermost in steps of `lanes`),
    each step one vector read per operand
    (a broadcast for operands without the innermost dim), the body on
    vectors, and one vector write per output. LLVM unrolled such short
    inner loops and then could not vectorize the stores it could not prove
    apart from the loads (a 1x1 convolution's bias + ReLU6 ran scalar).
    An epilogue already inside a work item (fused into a product's or a
    window kernel's tile) gets `scf.for` loops over its outer dims instead
    of a nested forall, and those dims may be dynamic (a product's last row
    tile; the innermost stays static): the loops run to the tile's extent.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", "8", "Vector width in elements; the innermost extent must be a multiple">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect"];
}

def VectorizeCopiesPass : Pass<"kiln-vectorize-copies", "::mlir::func::FuncOp"> {
  let summary = "Write buffer copies as vector loops over their contiguous run of elements";
  let description = [{
    A `linalg.copy` on memrefs of whole-byte scalars, of rank 2 or more, whose
    trailing dims are contiguous in both buffers (static sizes and strides)
    becomes an `scf.parallel` over the dims before that run (at least the
    first dim stays outside it) and, in it, a loop of vector reads and writes
    over the run (collapsed to one dim; dims stay outside it until the loop has
    8 iterations, where the shape allows), its last `run % lanes` elements as
    one masked read and write. Runs shorter than half a vector stay as they
    are (convert-linalg-to-parallel-loops makes them scalar loops). Those
    scalar loops were what bufferization's copies became: LLVM did not
    vectorize them (13-20 GB/s).
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", "256", "Vector register width in bits">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def ConcatInPlacePass : Pass<"kiln-concat-in-place", "::mlir::func::FuncOp"> {
  let summary = "Let producers write straight into their slice of a concatenation";
  let description = [{
    A `tensor.concat` (static shapes, in the function's body) becomes a new
    tensor and one `insert_slice` per operand. An operand that only the
    concat reads and whose buffer comes from a `tensor.empty` (through the
    destination operands of linalg ops and insert_slices, the shared outputs
    of `scf.forall`, and static reshapes) gets its slice of the new tensor in
    that empty's place, the new tensor being made just before the first such
    empty: the producer writes the concatenation directly and its
    insert_slice becomes a copy onto itself, which bufferization drops
    (squeezenet's fire modules and ocr_det's FPN copied every branch once
    more). Other operands are copied in.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def SeparateBandBuffersPass : Pass<"kiln-separate-band-buffers", "::mlir::func::FuncOp"> {
  let summary = "Give each op of a band section its own tensor.empty destination";
  let description = [{
    Every use of a `tensor.empty` by an op whose location carries a band
    section tag (kiln-band-conv-chains, passes/host/BandSections.h) gets a
    new `tensor.empty` of its own, with that op's location; an empty left
    without uses is erased. CSE had merged the bands' same-shaped empties,
    and one-shot bufferization would then put every band in one buffer,
    which the two sections of a chain must not share once
    kiln-run-band-sections runs them side by side; kiln-plan-memory places
    the separate buffers instead. Runs last before bufferization.
  }];
}

def PadInPlacePass : Pass<"kiln-pad-in-place", "::mlir::func::FuncOp"> {
  let summary = "Let producers write straight into the interior of a padded copy";
  let description = [{
    A `tensor.pad` (static shapes, constant padding value, in the function's
    body) becomes a new padded tensor whose border alone is filled (a low and
    a high slab per padded dim) and an `insert_slice` of the source into its
    interior. When the pad is the source's only reader and the source's
    buffer comes from a `tensor.empty` (through the destination operands of
    linalg ops and the shared outputs of `scf.forall`), the padded tensor is
    made just before that empty, and empty-tensor elimination gives the
    producer the interior as its destination: a convolution's or pooling's
    zero-padded input is written once by the op before it instead of being
    filled whole and copied (a fifth of mobilenet_v2's time).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
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
  let summary = "Prefetch the weight rows a quantized kernel will read a few rows ahead, and f32 panels' next reduction chunk or next panel";
  let description = [{
    A `vector.transfer_read` of 8-bit weight panels [P, rows, B] straight
    from a weight argument of @main (the quantized products' weight loads,
    one row of a panel per step of the reduction loop) gets a
    `memref.prefetch` of the same panel `distance` bytes ahead along the
    second-to-last dim (clamped to the panel's last row, so no address
    leaves the buffer). Converting 8 or 4-bit weights costs several
    instructions per cache line, which leaves fewer loads in flight than the
    hardware prefetcher needs to keep a stream at full bandwidth.

    An f32 panel read inside a reduction split into chunks (the microkernel's
    chunk loop, its row-block loop, its step loop; kiln-vectorize-contractions)
    gets, in row blocks 1 to B - 1 of each chunk (B the row blocks), a
    prefetch into L2 of the next chunk's rows, shared out evenly in address
    order: ceil(columns / (B - 1)) floats per step through a view with rows
    and columns as one dim, clamped to the panel's end (with fewer blocks
    than cache lines per read, block b takes line b - 1 of each row). The
    next chunk streams in while the current one's later row blocks compute
    from cache, where the first row block of every chunk used to wait on it.
    A reduction run whole (no chunk loop) over a panel of a weight of 512 KiB
    or more prefetches the next panel (the work item a thread usually takes
    next) the same way, through a flat view of the whole weight; where the
    tile's rows are known at run time only, the share per step is computed
    per row block.
  }];
  let options = [
    Option<"distance", "distance", "int64_t", "4096", "Bytes ahead to prefetch (0: none)">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
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

def RunBandSectionsPass : Pass<"kiln-run-band-sections", "::mlir::ModuleOp"> {
  let summary = "Run each banded chain's two sections as the two work items of one launch";
  let description = [{
    Runs after `kiln-count-kernel-cost`. The launches of a chain that
    kiln-band-conv-chains split into two sections (the tag in their
    locations, passes/host/BandSections.h) become one kiln_cpu.launch of 2
    work items: item 0 makes section 0's launches in program order, nested
    in it, item 1 those of section 1. On two threads each core then computes
    one half of the map through the whole chain, instead of every band's
    kernels splitting their rows between the cores (the thread pool runs a
    loop nested in one with a part per thread on its caller; with more
    threads, the idle ones help the nested launches). The merged launch's flops and bytes are the sums, its source
    nodes the union. A chain is left alone unless both sections are there
    and everything between its first and last launch is one of its launches
    or free of memory effects. Kernel ids are renumbered densely in program
    order. kiln-plan-memory keeps the two sections' buffers apart.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
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

def FlushDenormalsPass : Pass<"kiln-flush-denormals", "::mlir::ModuleOp"> {
  let summary = "Run kernels and the entry with denormals flushed to zero (x86 MXCSR FTZ and DAZ)";
  let description = [{
    Runs on the LLVM dialect after kiln-outline-cpu-launches and
    kiln-emit-entry-point. Each function that is a kernel (`kiln.kernel_id`)
    or visible outside the module (`kiln_entry`) saves the thread's MXCSR on
    entry (`llvm.x86.sse.stmxcsr`), sets flush-to-zero and
    denormals-are-zero (bits 15 and 6), and puts the saved value back before
    each return, so the caller's thread and the runtime's workers leave a
    kernel with the floating-point mode they entered it with.

    Intel cores take a microcode assist for every vector operation that
    reads or produces a denormal f32 (below 1.2e-38): EfficientNet's
    squeeze-and-excitation scales sigmoid outputs near zero, and its 1152 ->
    320 projection ran at 80 GFLOP/s where the same shape with normal values
    ran at 150 (docs/performance.md). Flushed, such values become zero, far
    below any tolerance a model's output is checked to.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ChannelsLastPass : Pass<"kiln-channels-last", "::mlir::ModuleOp"> {
  let summary = "Run 2-D convolutions channels-last (NHWC) and keep the layout changes at the edges of conv segments";
  let description = [{
    Each 2-D f32 graph.conv with static channels and spatial sizes and a
    constant weight that is group 1 with a multiple of 8 output channels
    (the packed product) or depthwise with 8 or more channels becomes
    transpose(NCHW->NHWC) -> graph.nhwc_conv (its weight permuted to
    [kh, kw, C/group, Cout] at compile time) -> transpose(NHWC->NCHW). The
    transposes back to NCHW then move down through elementwise ops (unary
    ops, activations, clip, add/sub/mul/div/max/min: their other operands
    come along, small constants permuted here), concat, max/average pooling
    (graph.nhwc_pool, where its window counts do not depend on the layout)
    global average pooling (a mean over H and W) and nearest resizing (its
    constant scales or sizes permuted), and a transpose meeting its inverse
    cancels. A group-1 Cout that whole panels do not fit is padded with zero
    filters and the padding sliced off; a unary activation or a mean over
    rows and columns of that slice moves above it (the activation stays the
    product's epilogue). Other convolutions stay NCHW, and so do the layout
    changes in front of ops that need NCHW (reshapes, linear resizing,
    outputs).
    With `print`, lists each convolution's layout (and why one stays NCHW)
    and how many layout changes are left. Runs before kiln-outline-weights,
    while weights are constants.
  }];
  let options = [
    Option<"print", "print", "bool", "false", "Print each convolution's layout and the layout changes left">
  ];
}

def BandConvChainsPass : Pass<"kiln-band-conv-chains", "::mlir::ModuleOp"> {
  let summary = "Compute expand -> depthwise -> project chains over large maps in row bands that stay in L2";
  let description = [{
    A chain starts at an f32 channels-last graph.packed_conv whose output map
    holds `min-map-bytes` or more and takes the readers of its one escaping
    value while that value is such a map and they are elementwise ops,
    channel slices, 1x1 packed_convs or depthwise graph.nhwc_convs (past a
    smaller map, only elementwise ops); static sizes, every value but the
    last read only inside the chain, at least one depthwise convolution.
    The chain is cloned once per band of its last value's rows (as many
    bands as keep each intermediate map of a band within `band-bytes`, the
    same rows each) and the bands concatenated along the rows. Each band
    reads the rows of its inputs that its windows need (graph.slice), each
    convolution padded at the top and bottom only where its map ends. With
    `sections` (the default), the number of bands is made even (the fewest
    more bands that give an even count), bands of half of `band-bytes` are
    taken where they compute at most 4% more rows (one thread running both
    sections then holds a band of each in L2), and the upper half of the
    bands is tagged section 0 and the lower half section 1 in their ops'
    locations (passes/host/BandSections.h), for kiln-plan-memory and
    kiln-run-band-sections. With `print`, lists each chain and its bands.
    Runs after kiln-pack-matmul-weights (the bands share the packed weights).
  }];
  let options = [
    Option<"bandBytes", "band-bytes", "int64_t", "1572864", "Bytes of the largest intermediate map per band">,
    Option<"sections", "sections", "bool", "true",
           "Tag the two halves of an even number of bands as sections that can run side by side">,
    Option<"minMapBytes", "min-map-bytes", "int64_t", "1048576", "Smallest largest-intermediate map worth banding">,
    Option<"print", "print", "bool", "false", "Print each chain and its bands">
  ];
}

def WinogradConvsPass : Pass<"kiln-winograd-convs", "::mlir::ModuleOp"> {
  let summary = "Compute 3x3 stride-1 channels-last convolutions with Winograd's F(m x m, 3 x 3)";
  let description = [{
    Each f32 graph.nhwc_conv of group 1 with a constant [3, 3, C, K] weight,
    unit strides and dilations, static sizes, C and K multiples of 8 and at
    least `min-channels`, and at least `min-tiles` output tiles of m x m (m
    the largest tile up to `tile` that gives that many) becomes
    graph.winograd_input -> one graph.packed_matmul by the (tile + 2)^2
    transformed weights G g G^T (computed and packed into panels here, at
    compile time) -> graph.winograd_output
    (bias included): (tile + 2)^2 multiply-adds per tile and channel pair
    instead of 9 tile^2. With `print`, lists each 3x3 convolution's form and
    why one stays direct. Runs after kiln-channels-last and before
    kiln-outline-weights, while weights are constants.
  }];
  let options = [
    Option<"tile", "tile", "int64_t", "4", "Largest output tile m of F(m x m, 3 x 3): 2 or 4">,
    Option<"minChannels", "min-channels", "int64_t", "16", "Fewest input and output channels">,
    Option<"minTiles", "min-tiles", "int64_t", "49", "Fewest output tiles (smaller maps stay direct)">,
    Option<"panel", "panel", "int64_t", "64", "Columns per transformed weight panel (16 or 8 where it does not divide)">,
    Option<"print", "print", "bool", "false", "Print each 3x3 convolution's form">
  ];
}

def ConstantGemmToMatmulPass : Pass<"kiln-constant-gemm-to-matmul", "::mlir::ModuleOp"> {
  let summary = "Rewrite a Gemm with a constant B as a product with a [K, N] constant and a bias add";
  let description = [{
    A graph.gemm with alpha = 1, no transA, beta = 1 or no C, and an f32
    constant B of 16 or more columns that it alone reads becomes graph.matmul(A, B) (B transposed
    at compile time when transB is set) + graph.add of C: the packed-panel
    product of kiln-pad-product-columns and kiln-pack-matmul-weights instead
    of a dot product per output (every torchvision classifier's Linear
    layer). Runs before those passes, while weights are constants.
  }];
}

def FoldChannelScalesPass : Pass<"kiln-fold-channel-scales", "::mlir::ModuleOp"> {
  let summary = "Scale a 1x1 convolution's weight rows instead of its input's channels";
  let description = [{
    A channels-last graph.packed_conv, 1x1 with unit strides and no pads, whose input is
    graph.mul of a [1, H, W, K] map and a [1, 1, 1, K] scale (squeeze-and-excitation) read
    by it alone reads the map itself, with its packed weight [panels, K, columns] multiplied
    by the scale reshaped to [1, K, 1], where that weight has fewer elements than the map.
    Runs after kiln-pack-matmul-weights.
  }];
}

def SplitSpatialMeansPass : Pass<"kiln-split-spatial-means", "::mlir::ModuleOp"> {
  let summary = "Take a channels-last map's spatial mean as a mean per row, then over the rows";
  let description = [{
    graph.reduce_mean over axes 1 and 2 of a static [N, H, W, C] f32 map of at least
    `min-bytes` becomes reduce_sum over axis 2 (keepdims), reduce_mean over axes 1 and 2 of
    the [N, H, 1, C] row sums, and a multiply by 1/W: the first has work items per map row,
    which each thread takes where the convolution before wrote them, and short chains of
    adds; the rest is small.
    Runs after kiln-channels-last (squeeze-and-excitation's global pools are then such means).
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", "65536", "Maps smaller than this keep one reduction">
  ];
}

def PadProductColumnsPass : Pass<"kiln-pad-product-columns", "::mlir::ModuleOp"> {
  let summary = "Pad the constant weight of a matrix product to whole 16-column panels";
  let description = [{
    A graph.matmul whose right operand is a constant [K, N] f32 weight read
    by it alone, with N >= 16 not a multiple of 16, gets the weight with
    zero columns up to the next multiple of 16 and a graph.slice of its
    result back to N columns: kiln-pack-matmul-weights then stores it as
    panels and the product takes the packed microkernel. Runs before
    kiln-outline-weights, while weights are constants.
  }];
}

def PackMatmulWeightsPass : Pass<"kiln-pack-matmul-weights", "::mlir::ModuleOp"> {
  let summary = "Store matrix-product weights as column panels [N/B, K, B]";
  let description = [{
    A cache tile of a matrix product reads a [K, 64] strip of its [K, N]
    weight: K rows far apart in memory, a TLB miss and a restarted hardware
    prefetch stream each. This pass makes every weight argument whose only
    users are matmuls (as the right operand) a [N/B, K, B] tensor of column
    panels, B the largest of `panel`, 32, 16 dividing N, and the matmuls
    graph.packed_matmul, whose tiles each read one panel as a single
    sequential stream. It records [K, N, B] in the module's
    `kiln.weight_layouts` (parallel to `kiln.weights`), and the artifact
    writer stores those weights packed. A weight [Cout, C, kh, kw] read only
    by group-1 2-D convolutions over static channels and spatial sizes is
    stored as the panels of its transpose [C*kh*kw, Cout] (layout
    [K, Cout, B, 1]) and the convolutions become graph.packed_conv (patch
    rows times the panels). A [kh, kw, C, Cout] weight read only by group-1
    graph.nhwc_conv is already [K, Cout] row-major: it is stored as its
    panels (layout [K, Cout, B]; B may be 8 for a Cout that 16 does not
    divide) and the convolutions become channels-last
    graph.packed_conv. Runs after kiln-outline-weights.
  }];
  let options = [
    Option<"panel", "panel", "int64_t", "64", "Widest panel in columns (a power of two)">,
    Option<"convPanel", "conv-panel", "int64_t", "64",
           "Panel width of channels-last convolution weights when it divides Cout (the "
           "microkernel's column block: a wider panel's rows are strided in cache)">
  ];
}

#endif
