// The kiln_cpu dialect: the boundary between generated kernels and the runtime's CPU device.
#ifndef KILN_CPU_OPS
#define KILN_CPU_OPS

include "mlir/IR/OpBase.td"
include "mlir/Dialect/LLVMIR/LLVMTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Cpu_Dialect : Dialect {
  let name = "kiln_cpu";
  let summary = "Kernel launches through the runtime's thread pool";
  let description = [{
    A `kiln_cpu.launch` is one kernel: a region run once per work item in
    `[0, count)`. It survives the lowering to the LLVM dialect untouched (its
    operands are already LLVM-compatible), after which
    `kiln-outline-cpu-launches` moves each region into its own function and
    replaces the launch by a call to the runtime's `parallel_for`.
  }];
  let cppNamespace = "::kiln::cpu";
}

def Cpu_LaunchOp : Op<Cpu_Dialect, "launch"> {
  let summary = "Runs the body for every work item through the runtime";
  let description = [{
    `context` is the `kiln_abi_context*` the entry point received; `kernel_id`
    indexes the artifact's kernel table. The body's block argument is the
    work item (i64). `flops` and `bytes` are the whole launch's estimated
    floating-point operations and compulsory memory traffic, computed in the
    caller (`kiln-count-kernel-cost`; 0 until then, meaning unknown) and
    handed to the runtime's profiler.

    ```mlir
    kiln_cpu.launch %ctx, %n flops(%f) bytes(%b) attributes {kernel_id = 0 : i32} : !llvm.ptr {
    ^bb0(%item: i64):
      ...
      kiln_cpu.yield
    }
    ```
  }];
  let arguments = (ins LLVM_AnyPointer:$context, I64:$count, I64:$flops, I64:$bytes,
                   I32Attr:$kernel_id);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = "$context `,` $count `flops` `(` $flops `)` `bytes` `(` $bytes `)` "
                       "attr-dict-with-keyword `:` type($context) $body";
  let hasVerifier = 1;
}

def Cpu_YieldOp : Op<Cpu_Dialect, "yield", [Terminator, HasParent<"LaunchOp">]> {
  let summary = "Ends one work item of a launch";
  let description = [{
    ```mlir
    kiln_cpu.yield
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Cpu_WorkspaceOp : Op<Cpu_Dialect, "workspace",
    [MemoryEffects<[MemAlloc<AutomaticAllocationScopeResource>]>]> {
  let summary = "The run's scratch arena, from the runtime";
  let description = [{
    At least `bytes` bytes, 64-byte aligned, owned by the runtime and valid
    until the entry point returns (like an `alloca`, so buffer deallocation
    leaves it alone). `kiln-plan-memory` creates one per `@main` and places
    the intermediates in it with `memref.view`; `kiln-lower-workspace` turns
    it into a call of the context's `workspace` function.

    ```mlir
    %arena = kiln_cpu.workspace %bytes : memref<?xi8>
    ```
  }];
  let arguments = (ins Index:$bytes);
  let results = (outs MemRefRankOf<[I8], [1]>:$arena);
  let assemblyFormat = "$bytes attr-dict `:` type($arena)";
}

//===----------------------------------------------------------------------===//
// String kernels (strings family). A string value is an i128: the data pointer
// in bits 0-63, the byte size in bits 64-127 (kiln_abi_string). The ops run in
// @main's host loops; kiln-lower-string-ops turns each into a call of the
// runtime context's string functions (literals into constant globals), so the
// code that makes or reads string bytes is written once, in the runtime.
//===----------------------------------------------------------------------===//

def Cpu_StringLiteralOp : Op<Cpu_Dialect, "string_literal", [Pure]> {
  let summary = "A string constant";
  let description = [{
    The bytes live in the artifact's code section for as long as the model
    is loaded; the empty string is {NULL, 0}.

    ```mlir
    %s = kiln_cpu.string_literal "monday" : i128
    ```
  }];
  let arguments = (ins StrAttr:$value);
  let results = (outs I128:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Cpu_StringFromFloatOp : Op<Cpu_Dialect, "string_from_float", [Pure]> {
  let summary = "The text of a float (numpy's str(): shortest round-trip digits)";
  let description = [{
    ```mlir
    %s = kiln_cpu.string_from_float %x : f32 -> i128
    ```
  }];
  let arguments = (ins AnyTypeOf<[F32, F64]>:$value);
  let results = (outs I128:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

def Cpu_StringToFloatOp : Op<Cpu_Dialect, "string_to_float", [Pure]> {
  let summary = "Parses a string as a float (nan, inf with any case and sign accepted)";
  let description = [{
    A string that is no number makes the run fail (the runtime reports it
    once the entry has returned); the value is then NaN.

    ```mlir
    %x = kiln_cpu.string_to_float %s : i128 -> f32
    ```
  }];
  let arguments = (ins I128:$value);
  let results = (outs AnyTypeOf<[F32, F64]>:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

def Cpu_StringChangeCaseOp : Op<Cpu_Dialect, "string_change_case", [Pure]> {
  let summary = "An upper- or lower-cased copy of a string";
  let description = [{
    ```mlir
    %u = kiln_cpu.string_change_case %s {upper = true} : i128
    ```
  }];
  let arguments = (ins I128:$value, BoolAttr:$upper);
  let results = (outs I128:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Cpu_StringEqualOp : Op<Cpu_Dialect, "string_equal", [Pure]> {
  let summary = "Whether two strings are equal, optionally ignoring case";
  let description = [{
    ```mlir
    %same = kiln_cpu.string_equal %a, %b {ignore_case = false} : i128
    ```
  }];
  let arguments = (ins I128:$lhs, I128:$rhs, BoolAttr:$ignore_case);
  let results = (outs I1:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}
// end strings family

#endif
