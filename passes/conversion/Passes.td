// Conversion passes: lowering kiln's dialects to MLIR's core dialects.
#ifndef KILN_PASSES_CONVERSION
#define KILN_PASSES_CONVERSION

include "mlir/Pass/PassBase.td"

def ConvertGraphToLinalgPass : Pass<"kiln-convert-graph-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower graph dialect ops to linalg, tensor and arith on tensors";
  let description = [{
    Every graph op becomes linalg.generic (elementwise maps, contractions,
    windowed reductions) or tensor ops (reshape, concat, extract). The graph
    dialect is illegal afterwards: an op without a lowering is an error that
    names it and its ONNX node.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", "256",
           "Width of the target's vector registers: sizes the register blocks of kernels lowered here "
           "(quantized products: 8 rows x 32 columns with 512 bits, 4 x 32 with 256) and the channel "
           "vectors of depthwise convolutions and pooling in NHWC (16 floats with 512 bits where 16 divide "
           "the channels, else 8)">,
    Option<"wideHalfProducts", "wide-half-products", "bool", "false",
           "MatMul and Gemm of f16/bf16 accumulate in f32 and round once (the CUDA target's products)">,
    Option<"rowVectorReductions", "row-vector-reductions", "bool", "false",
           "Reductions and softmaxes over the last axis as vector row kernels (x86; GPUs form block reductions)">,
    Option<"gpuAttention", "gpu-attention", "bool", "false",
           "graph.attention becomes kiln_kernel.attention (lowered after bufferization to one GPU block "
           "per 8 query rows) where its element type is f32, f16 or bf16 and its head sizes are static and "
           "at most 256; otherwise, and by default, the CPU's query-block kernel on tensors">,
    Option<"gpuNorms", "gpu-norms", "bool", "false",
           "graph.layer_norm, graph.rms_norm, graph.softmax and graph.log_softmax become kiln_kernel.row_norm "
           "(lowered after bufferization to one GPU block per row) where they are f32 over the last axis, of static length, with a scale "
           "and bias of the row's shape or one element, and (LayerNormalization) no use of the mean or inv_std_dev outputs">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::kiln::cpu::CpuDialect", "::kiln::kernel::KernelDialect"];
}

#endif
