// The graph -> linalg conversion pass: applies the op-family patterns with graph illegal.
#include "passes/conversion/LoweringUtils.h"
#include "passes/conversion/Passes.h"

#include "dialects/cpu/IR/Cpu.h"
#include "dialects/graph/IR/Graph.h"
#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTGRAPHTOLINALGPASS
#include "passes/conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct ConvertGraphToLinalgPass
    : impl::ConvertGraphToLinalgPassBase<ConvertGraphToLinalgPass> {
  using ConvertGraphToLinalgPassBase::ConvertGraphToLinalgPassBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<graph::GraphDialect>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           func::FuncDialect, scf::SCFDialect, vector::VectorDialect,
                           cpu::CpuDialect,     // the string kernels' ops
                           kernel::KernelDialect>(); // attention and norms for the GPU
    RewritePatternSet patterns(ctx);
    populateElementwiseLoweringPatterns(patterns);
    populateContractionLoweringPatterns(patterns, wideHalfProducts, vectorBits);
    populateNnLoweringPatterns(patterns, rowVectorReductions, vectorBits);
    populateShapeLoweringPatterns(patterns);
    populateResizeLoweringPatterns(patterns);
    populateWinogradLoweringPatterns(patterns, vectorBits);
    populateScatterGatherLoweringPatterns(patterns);
    populateAttentionLoweringPatterns(patterns, gpuAttention);
    if (gpuNorms)
      populateNormToKernelPatterns(patterns);
    populateRuntimeOperandLoweringPatterns(patterns);
    populateDataDependentLoweringPatterns(patterns);
    populateQuantizedMatMulLoweringPatterns(patterns, vectorBits);
    populatePoolIndicesLoweringPatterns(patterns);
    populateLinearAlgebraLoweringPatterns(patterns);
    populateSamplingLoweringPatterns(patterns);
    populateTextFeatureLoweringPatterns(patterns);
    populateStringLoweringPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
