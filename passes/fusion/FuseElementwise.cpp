// Fuses chains of elementwise linalg ops, but never an elementwise producer into a matrix product.
#include "passes/fusion/Passes.h"
#include "passes/host/GemmEpilogue.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// MLIR's elementwise fusion would also pull a producer (a norm's scale, a
/// SwiGLU product) into the operand of a matrix product: the body then
/// recomputes it for every output column and is no longer a multiply-add,
/// so the register-blocked microkernel cannot take it. Keep those apart.
/// Likewise any reduction that reads the operand more than once per element (its map leaves out
/// one of the loops): the GPU's weight-only int8/int4 product, one reduction per output column,
/// would compute a GELU or a norm's scale N times over.
bool allowFusion(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!consumer)
    return true;
  if (linalg::isaContractionOpInterface(consumer))
    return false;
  bool reduces = consumer.getNumReductionLoops() > 0;
  return !reduces || consumer.getMatchingIndexingMap(fused).isPermutation();
}

/// A reshape next to a matrix product stays a reshape: folding it in by expansion would give the
/// product more dims (a head split [b, s, 64] -> [b, s, 4, 16] after a projection makes its n two
/// dims), which the device's product call and the CPU microkernel do not take.
bool allowReshapeFusion(OpOperand *fused) {
  auto isProduct = [](Operation *op) {
    auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
    return linalgOp && linalg::isaContractionOpInterface(linalgOp);
  };
  return allowFusion(fused) && !isProduct(fused->get().getDefiningOp()) && !isProduct(fused->getOwner());
}

/// Whether `op` is what kiln-mark-gemm-epilogues will mark: an elementwise op reading a product's
/// result that nothing else reads, which the GPU folds into the product's cuBLASLt call.
bool isProductEpilogue(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && productInputOfEpilogue(generic);
}

/// A dynamic size traced back to where it comes from, through the ops that only pass sizes on: a
/// destination-style op's result has its init's sizes, tensor.empty its operands', tensor.dim the
/// size it reads, a cast, a slice or a reshape's one-dim group its source's (or its size operand's),
/// a concatenation's dims other than the concatenated one its first input's,
/// the smaller of two sizes from one place that place.
/// A function argument's dim named like another argument's in kiln.dims is that one (the runtime
/// checks inputs with equal symbols agree before a run). (value, dim), or (size value, -1).
using DimSource = std::pair<Value, int64_t>;
DimSource sourceOfSize(Value size, int depth);

DimSource sourceOfDim(Value t, int64_t i, int depth = 0) {
  while (++depth < 64) {
    if (auto arg = dyn_cast<BlockArgument>(t)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      auto dims = func ? func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "kiln.dims") : ArrayAttr();
      auto symbol = dims && i < int64_t(dims.size()) ? dyn_cast<StringAttr>(dims[i]) : StringAttr();
      if (!symbol || symbol.getValue().empty() || !func.getFunctionBody().hasOneBlock() ||
          arg.getOwner() != &func.getFunctionBody().front())
        break;
      for (unsigned a = 0; a < func.getNumArguments(); ++a)
        if (auto other = func.getArgAttrOfType<ArrayAttr>(a, "kiln.dims"))
          for (auto [axis, name] : llvm::enumerate(other))
            if (name == symbol && cast<RankedTensorType>(func.getArgument(a).getType()).isDynamicDim(axis))
              return {func.getArgument(a), int64_t(axis)};
      break;
    }
    Operation *def = t.getDefiningOp();
    auto result = cast<OpResult>(t);
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
      if (!dps.hasPureTensorSemantics() || result.getResultNumber() >= unsigned(dps.getNumDpsInits()))
        break;
      t = dps.getDpsInitOperand(result.getResultNumber())->get();
      continue;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return sourceOfSize(empty.getDynamicSize(i), depth);
    if (auto castOp = dyn_cast<tensor::CastOp>(def)) {
      if (!cast<RankedTensorType>(castOp.getSource().getType()).isDynamicDim(i))
        break;
      t = castOp.getSource();
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      if (slice.getSourceType().getRank() != slice.getType().getRank())
        break;
      if (auto size = dyn_cast<Value>(slice.getMixedSizes()[i]))
        return sourceOfSize(size, depth);
      break;
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
      if (auto size = dyn_cast<Value>(expand.getMixedOutputShape()[i]))
        return sourceOfSize(size, depth);
      break;
    }
    // A concatenation's other dims are its inputs' (the rotary tables' [cos, cos] of the halves).
    if (auto concat = dyn_cast<tensor::ConcatOp>(def)) {
      if (int64_t(concat.getDim()) == i)
        break;
      t = concat.getInputs().front();
      continue;
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      const ReassociationIndices group = collapse.getReassociationIndices()[i]; // a copy: the list is a temporary
      if (group.size() != 1)
        break;
      t = collapse.getSrc();
      i = group[0];
      continue;
    }
    break;
  }
  return {t, i};
}

DimSource sourceOfSize(Value size, int depth) {
  if (auto dim = size.getDefiningOp<tensor::DimOp>())
    if (std::optional<int64_t> index = dim.getConstantIndex())
      return sourceOfDim(dim.getSource(), *index, depth);
  // The lowering's result size of two dynamic inputs is the smaller of their sizes: when both
  // come from the same place, that is it.
  if (auto smaller = size.getDefiningOp<arith::MinSIOp>()) {
    DimSource lhs = sourceOfSize(smaller.getLhs(), depth + 1);
    if (lhs == sourceOfSize(smaller.getRhs(), depth + 1))
      return lhs;
  }
  return {size, -1};
}

/// A slice from offset 0 with unit strides whose sizes are the source's own (traced back to the
/// same values) is the source. The elementwise lowering cuts inputs that are dynamic in the same
/// dim to the result's sizes (so that malformed sizes cannot drive a loop past an input's end),
/// and such a slice stops elementwise fusion: a SwiGLU's silu(gate) * up was two kernels.
struct DropIdentitySlicePattern : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractSliceOp slice, PatternRewriter &rewriter) const override {
    RankedTensorType type = slice.getType();
    if (type != slice.getSourceType())
      return rewriter.notifyMatchFailure(slice, "changes the type");
    for (int64_t k = 0; k < type.getRank(); ++k) {
      if (!isConstantIntValue(slice.getMixedOffsets()[k], 0) || !isConstantIntValue(slice.getMixedStrides()[k], 1))
        return rewriter.notifyMatchFailure(slice, "not from 0 with unit strides");
      if (!type.isDynamicDim(k))
        continue;
      auto size = dyn_cast<Value>(slice.getMixedSizes()[k]);
      if (!size || sourceOfSize(size, 0) != sourceOfDim(slice.getSource(), k))
        return rewriter.notifyMatchFailure(slice, "a size not shown to be the source's");
    }
    rewriter.replaceOp(slice, slice.getSource());
    return success();
  }
};

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<DropIdentitySlicePattern>(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, allowFusion);
    bool keepEpilogues = keepProductEpilogues;
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, [keepEpilogues](OpOperand *fused) {
      if (keepEpilogues && (isProductEpilogue(fused->get().getDefiningOp()) || isProductEpilogue(fused->getOwner())))
        return false;
      return allowReshapeFusion(fused);
    });
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, allowFusion);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
