// Fuses chains of elementwise linalg ops, but never an elementwise producer into a matrix product.
#include "passes/fusion/Passes.h"
#include "passes/host/GemmEpilogue.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/IRMapping.h"
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

/// A slice of an elementwise op's result that nothing else reads: compute only the slice (the op
/// reads slices of its inputs). The elementwise lowering cuts inputs to the result's sizes where it
/// cannot show them equal (a causal mask's range length and the attention mask's width agree only
/// at run time); above the op, the slice no longer stands between it and its reader, and the two
/// fuse. MLIR's own bubble-up pattern leaves `linalg.index` relative to the slice and moves slices
/// above products; this one offsets the indices and keeps to elementwise ops that do not read a
/// product (whose epilogue they would stop being).
struct SliceBeforeElementwisePattern : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractSliceOp slice, PatternRewriter &rewriter) const override {
    auto generic = slice.getSource().getDefiningOp<linalg::GenericOp>();
    if (!generic || !generic->hasOneUse() || generic.getNumDpsInits() != 1 || !generic.hasPureTensorSemantics() ||
        generic.getNumParallelLoops() != generic.getNumLoops())
      return rewriter.notifyMatchFailure(slice, "not the only reader of an elementwise op");
    if (!slice.hasUnitStride() || slice.getType().getRank() != slice.getSourceType().getRank())
      return rewriter.notifyMatchFailure(slice, "strided or rank-reducing");
    AffineMap resultMap = generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
    if (!resultMap.isPermutation())
      return rewriter.notifyMatchFailure(slice, "result map not a permutation");
    // The input slices come from applying each map to the loops' offsets and sizes: only right
    // when a map picks dims (or pins one to 0), not for an index modulo a size.
    for (AffineMap map : generic.getIndexingMapsArray())
      if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
        return rewriter.notifyMatchFailure(slice, "an input read through index arithmetic");
    for (Value input : generic.getDpsInputs()) {
      auto producer = input.getDefiningOp<linalg::LinalgOp>();
      if (producer && linalg::isaContractionOpInterface(producer))
        return rewriter.notifyMatchFailure(slice, "an epilogue of a product");
    }
    Location loc = generic.getLoc();
    SmallVector<OpFoldResult> bounds;
    for (Range range : cast<linalg::LinalgOp>(generic.getOperation()).createLoopRanges(rewriter, loc))
      bounds.push_back(range.size);
    SmallVector<OpFoldResult> offsets(bounds.size(), rewriter.getIndexAttr(0)), sizes = bounds;
    for (auto [k, expr] : llvm::enumerate(resultMap.getResults())) {
      unsigned loop = cast<AffineDimExpr>(expr).getPosition();
      offsets[loop] = slice.getMixedOffsets()[k];
      sizes[loop] = slice.getMixedSizes()[k];
    }
    SmallVector<Value> operands = linalg::makeTiledShapes(rewriter, loc, generic, generic->getOperands(), offsets,
                                                          sizes, bounds, /*omitPartialTileCheck=*/true);
    Type resultType = operands[generic.getDpsInitOperand(0)->getOperandNumber()].getType();
    Operation *sliced = mlir::clone(rewriter, generic.getOperation(), TypeRange{resultType}, operands);
    linalg::offsetIndices(rewriter, cast<linalg::LinalgOp>(sliced), offsets);
    rewriter.replaceOp(slice, sliced->getResults());
    return success();
  }
};

/// A one-element op's value read back as a scalar (a sequence length, a past length, the negated
/// count of logit rows: shape arithmetic the lowering wrote as tensor ops) is computed where it is
/// read, from its inputs' values. The op itself then has no reader left; on the GPU it was a
/// one-thread launch whose results only the host used.
struct ExtractOfScalarOpPattern : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractOp extract, PatternRewriter &rewriter) const override {
    auto generic = extract.getTensor().getDefiningOp<linalg::GenericOp>();
    auto type = cast<RankedTensorType>(extract.getTensor().getType());
    if (!generic || generic->getNumResults() != 1 || !generic.hasPureTensorSemantics() ||
        !type.hasStaticShape() || type.getNumElements() != 1 ||
        generic.getNumParallelLoops() != generic.getNumLoops())
      return rewriter.notifyMatchFailure(extract, "not a one-element op's result");
    Block &body = generic.getRegion().front();
    if (!body.getArguments().back().use_empty())
      return rewriter.notifyMatchFailure(extract, "reads its init");
    if (llvm::any_of(body.without_terminator(), [](Operation &op) { return !isPure(&op) || isa<linalg::IndexOp>(op); }))
      return rewriter.notifyMatchFailure(extract, "a body with effects or indices");
    // Every loop has one iteration: each input is read at its dims' index 0.
    for (AffineMap map : generic.getIndexingMapsArray())
      if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
        return rewriter.notifyMatchFailure(extract, "an input read through index arithmetic");
    Value zero = arith::ConstantIndexOp::create(rewriter, extract.getLoc(), 0);
    IRMapping values;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      int64_t rank = generic.getMatchingIndexingMap(input).getNumResults();
      values.map(generic.getMatchingBlockArgument(input),
                 tensor::ExtractOp::create(rewriter, extract.getLoc(), input->get(), SmallVector<Value>(rank, zero)));
    }
    for (Operation &op : body.without_terminator())
      rewriter.clone(op, values);
    rewriter.replaceOp(extract, values.lookupOrDefault(body.getTerminator()->getOperand(0)));
    return success();
  }
};

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<DropIdentitySlicePattern>(ctx);
    patterns.add<SliceBeforeElementwisePattern, ExtractOfScalarOpPattern>(ctx);
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
    // Folding a reshape into a generic leaves `tensor.dim`s of the new generic's result (the
    // reshape's users asked its sizes): read from the result's init instead, they would count as a
    // second use and keep allowFusion from fusing the generic into its one real reader.
    tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
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
