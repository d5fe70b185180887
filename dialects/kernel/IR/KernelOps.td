// The kiln_kernel dialect: target-independent kernels that a target lowers its own way.
#ifndef KILN_KERNEL_OPS
#define KILN_KERNEL_OPS

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"

def Kernel_Dialect : Dialect {
  let name = "kiln_kernel";
  let summary = "Fused kernels that outlive bufferization";
  let description = [{
    An op here is one kernel whose best form depends on the target: the CUDA
    target gives it a block of threads with shared memory, which no loop nest
    that kiln-form-gpu-launches maps one thread per iteration can express. The
    ops are in destination style on tensors (before bufferization) and on
    buffers (after it), like linalg's, so bufferization and the memory plan
    treat them as any other op; a target pass then lowers the buffer form.
  }];
  let cppNamespace = "::kiln::kernel";
}

def Kernel_AttentionOp : Op<Kernel_Dialect, "attention", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues", "bufferize"]>]> {
  let summary = "Scaled dot-product attention into a destination: softmax(Q K^T * scale + mask) V";
  let description = [{
    The semantics of `graph.attention`, in destination style: `query`
    [B..., Sq, D], `key` [B..., Sk, D], `value` [B..., Sk, Dv], an optional
    additive `mask` broadcast numpy-style to [B..., Sq, Sk], and `init`
    [B..., Sq, Dv], every element of which is written (it is never read).
    Each batch dim of `key`, `value` and `mask` divides the query's: query
    batch index b reads index b / (Bq / Bk), which covers broadcasting and
    grouped-query attention. A row whose every score is -inf is NaN (as
    ONNX's Softmax gives); with no keys at all the result is 0.

    Paged (a `block_table` and a `key_count`): `key` and `value` are the
    pools of a paged KV cache, [blocks, B1..., block, D], and query batch
    index (b0, b1, ...) reads keys j < key_count at
    `pool[block_table[b0, j / block], b1 / (Bq1 / Bk1), ..., j % block]`
    (block ids clamped into the pool: a row's mask hides what lies past its
    own length). The other batch dims map as above. This is how
    kiln-kv-cache-in-place's block tables reach the GPU kernel without a
    gathered copy of the cache.

    On tensors it returns the written `init`; on buffers it has no result.
    `kiln-convert-graph-to-linalg{gpu-attention=true}` makes it from
    `graph.attention` for the CUDA target, and `kiln-form-attention-blocks`
    lowers the buffer form to one GPU block per query row.

    On tensors, `query_perm`, `key_perm`, `value_perm` and `init_perm` (each
    optional, a permutation keeping the last dim last) say that the operand is
    stored permuted: the op reads (or writes) `linalg.transpose(stored, perm)`
    (dim i of what it sees is dim perm[i] of the stored tensor), so a model's
    [B, S, H, D] heads need no transposed copy. Bufferization passes such an
    operand as a `memref.transpose` view of its buffer; the buffer form has no
    permutations (it reads and writes any strided layout).
    `kiln-attention-operand-views` sets them.

    ```mlir
    %p = kiln_kernel.attention %q, %kpool, %vpool mask %m : tensor<?x1x1x?xf32> paged %table : tensor<?x?xi64> keys %n into %init
        : tensor<?x4x1x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>, tensor<?x4x1x16xf32> -> tensor<?x4x1x16xf32>
    %o = kiln_kernel.attention %q, %k, %v mask %m : tensor<1x1x?x?xf32> into %init {scale = 1.250000e-01 : f32}
        : tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32> -> tensor<1x12x?x64xf32>
    kiln_kernel.attention %qb, %kb, %vb into %ob {scale = 1.0 : f32}
        : memref<4x16xf32>, memref<9x16xf32>, memref<9x8xf32>, memref<4x8xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$query, AnyShaped:$key, AnyShaped:$value, Optional<AnyShaped>:$mask,
                   Optional<AnyShaped>:$block_table, Optional<Index>:$key_count,
                   AnyShaped:$init, DefaultValuedAttr<F32Attr, "1.0">:$scale,
                   OptionalAttr<DenseI64ArrayAttr>:$query_perm, OptionalAttr<DenseI64ArrayAttr>:$key_perm,
                   OptionalAttr<DenseI64ArrayAttr>:$value_perm, OptionalAttr<DenseI64ArrayAttr>:$init_perm);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^ `:` type($mask))?
    (`paged` $block_table^ `:` type($block_table) `keys` $key_count)? `into` $init attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($init) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
    /// Whether the operands are buffers (after bufferization).
    bool hasBufferSemantics() { return ::llvm::isa<::mlir::MemRefType>(getInit().getType()); }
    /// Whether key and value are the pools of a paged KV cache, read through the block table.
    bool isPaged() { return static_cast<bool>(getBlockTable()); }
  }];
}

def Kernel_RowNormOp : Op<Kernel_Dialect, "row_norm", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite", "getAliasingValues", "bufferize"]>]> {
  let summary = "LayerNormalization or RMSNormalization of each row into a destination";
  let description = [{
    `input` and `init` are f32 of one shape [R..., N]: each row along the last
    dim of `init` gets, with the sums over the row's N elements,
    - `kind = "layer"`: (x - mean) * rsqrt(var + epsilon) * scale + bias, where
      mean = sum(x) / N and var = sum((x - mean)^2) / N;
    - `kind = "rms"`: x * rsqrt(sum(x^2) / N + epsilon) * scale;
    - `kind = "softmax"`: exp(x - m) / sum(exp(x - m)), m the row's max (0
      when that is -inf); `kind = "log_softmax"`: x - m - log(sum(exp(x - m))).
      A row of -inf only is NaN, as ONNX's Softmax gives.
    `scale` and `bias` (optional; bias only for "layer", neither for the
    softmaxes) are rank 1, of N elements or of one (broadcast). Every element
    of `init` is written and none is read.

    On tensors it returns the written `init`; on buffers it has no result.
    `kiln-convert-graph-to-linalg{gpu-norms=true}` makes it from
    `graph.layer_norm`, `graph.rms_norm`, `graph.softmax` and
    `graph.log_softmax` over the last axis for the CUDA target, and `kiln-form-norm-blocks` lowers the
    buffer form to one GPU block per row, so a norm is one launch instead of
    a reduction, an elementwise pass and a second reduction.

    ```mlir
    %y = kiln_kernel.row_norm %x scale %s : tensor<768xf32> bias %b : tensor<768xf32> into %init {kind = "layer", epsilon = 1.0e-05 : f32}
        : tensor<?x?x768xf32>, tensor<?x?x768xf32> -> tensor<?x?x768xf32>
    kiln_kernel.row_norm %xb scale %sb : memref<64xf32> into %ob {kind = "rms", epsilon = 1.0e-06 : f32}
        : memref<?x64xf32>, memref<?x64xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$input, Optional<AnyShaped>:$scale, Optional<AnyShaped>:$bias,
                   AnyShaped:$init, StrAttr:$kind, F32Attr:$epsilon);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^ `:` type($scale))? (`bias` $bias^ `:` type($bias))? `into` $init attr-dict
    `:` type($input) `,` type($init) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
    /// Whether the operands are buffers (after bufferization).
    bool hasBufferSemantics() { return ::llvm::isa<::mlir::MemRefType>(getInit().getType()); }
    /// Whether it is RMSNormalization (no mean subtracted, no bias).
    bool isRms() { return getKind() == "rms"; }
    /// Whether it is a softmax or log-softmax (a max and a sum of exponentials).
    bool isSoftmax() { return getKind() == "softmax" || getKind() == "log_softmax"; }
  }];
}

#endif
