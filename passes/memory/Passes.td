// Memory passes: where the buffers of a forward pass live.
#ifndef KILN_PASSES_MEMORY
#define KILN_PASSES_MEMORY

include "mlir/Pass/PassBase.td"

def PlanMemoryPass : Pass<"kiln-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Place @main's intermediate buffers in one arena by liveness";
  let description = [{
    Runs on bufferized IR before buffer deallocation. Every `memref.alloc` in
    @main's body whose buffer (or a view of it) is not returned is an
    intermediate; its lifetime runs from the allocation to the last top-level
    operation that touches it or a view of it. Buffers are placed largest
    first (a dynamic dim counts as 64 for this order): a static buffer among
    static neighbours goes into the lowest gap that fits beside the buffers
    it overlaps in time (offsets fixed at compile time); a buffer with a
    dynamic size, or one overlapping a dynamically placed buffer, goes just
    above all of them, its offset an expression evaluated when the function
    starts. The arena is one `kiln_cpu.workspace`, the allocations become
    `memref.view`s into it, every size and offset a multiple of 64 bytes.

    Band sections: an allocation whose location carries a band section tag
    (kiln-band-conv-chains, passes/host/BandSections.h) never shares bytes
    with one of the other section of the same chain, whatever their
    lifetimes (kiln-run-band-sections runs the two side by side), nor with a
    buffer whose lifetime touches the span of that chain's top-level ops.
    Within a chain, section 0's buffers are placed before section 1's (in
    the chain's turns of the size order), so they get the lower offsets:
    thread 0 writes them, and the lower halves of the maps placed over those
    bytes later.

    Left on the heap: results (and their views; the runtime owns them),
    allocations inside loops or branches, and sizes that depend on tensor
    data (their size is not known when the function starts).

    With `mark-live-spans` (the CUDA pipeline) each view carries its buffer's
    live span, `kiln.plan_live = array<i64: first, last>`: buffers whose spans
    overlap never share bytes, which kiln-fuse-sibling-loops needs to run two
    loops at once.

    The plan is recorded on the module as `kiln.memory_plan` (one entry per
    buffer: name, type, bytes or size expression, lifetime, offset) for
    `kiln-compile --print-memory-plan`.
  }];
  let options = [
    Option<"print", "print", "bool", "false",
           "Print each buffer's size, lifetime and offset, the arena's peak and the sum without reuse to stdout">,
    Option<"markLiveSpans", "mark-live-spans", "bool", "false",
           "Mark each view with its buffer's live span (kiln.plan_live): buffers whose spans overlap never share bytes (the CUDA pipeline's kiln-fuse-sibling-loops reads it)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
                           "::kiln::cpu::CpuDialect"];
}

#endif
