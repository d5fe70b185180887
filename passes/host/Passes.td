// Host passes both targets run: the runtime context, its arena and string kernels, heap checks,
// math expansions, and the artifact's entry point.
#ifndef KILN_PASSES_HOST
#define KILN_PASSES_HOST

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

def AddRuntimeContextPass : Pass<"kiln-add-runtime-context", "::mlir::ModuleOp"> {
  let summary = "Give @main the runtime context argument and record its ABI";
  let description = [{
    Prepends a `!llvm.ptr` argument (the `kiln_abi_context*`) to @main and
    records the rank of every argument and result and each result's element
    size, which `kiln-emit-entry-point` needs once memrefs are LLVM structs.
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
