// Moves the elementwise consumer of a tiled matrix product (bias, residual add, activation) into the
// product's tile loop, so each tile is finished while it is still in cache, in the same kernel.
#include "passes/fusion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"


namespace kiln {
#define GEN_PASS_DEF_FUSEEPILOGUESPASS
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The product's loop: an scf.forall made by kiln-tile-contractions (its tile carries kiln.tile_sizes),
/// or one a lowering marked kiln.epilogue_tiles (a depthwise convolution's rows).
bool isTiledContraction(scf::ForallOp loop) {
  if (loop->hasAttr("kiln.epilogue_tiles")) {
    // Its tiles must have the result's rank: the consumer is tiled like them.
    for (Operation &op : loop.getTerminator().getYieldingOps())
      if (auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
          !insert || insert.getSourceType().getRank() != insert.getDestType().getRank())
        return false;
    return loop->getNumResults() == 1;
  }
  bool found = false;
  loop.getBody()->walk([&](linalg::GenericOp op) { found = found || op->hasAttr("kiln.tile_sizes"); });
  return found && loop->getNumResults() == 1;
}

/// Whether `v` is available before `loop`, moving the pure ops that compute it (a bias's
/// expand_shape, say, placed right before its reader) above the loop when they can be.
bool availableBefore(Value v, scf::ForallOp loop, DominanceInfo &dominance, int depth = 0) {
  if (dominance.properlyDominates(v, loop))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || depth > 4 || def->getBlock() != loop->getBlock() || def->getNumRegions() != 0 || !isPure(def))
    return false;
  for (Value operand : def->getOperands())
    if (!availableBefore(operand, loop, dominance, depth + 1))
      return false;
  def->moveBefore(loop);
  return true;
}

/// An elementwise generic that reads the whole product result element for element and writes
/// a result of the same shape; everything else it reads is available before the loop.
linalg::GenericOp fusableConsumer(scf::ForallOp loop, DominanceInfo &dominance) {
  Value product = loop->getResult(0);
  if (!product.hasOneUse())
    return nullptr;
  auto consumer = dyn_cast<linalg::GenericOp>(*product.getUsers().begin());
  if (!consumer || !consumer.hasPureTensorSemantics() || consumer.getNumDpsInits() != 1 ||
      consumer.getNumParallelLoops() != consumer.getNumLoops())
    return nullptr;
  if (consumer.getDpsInits()[0].getType() != product.getType())
    return nullptr;
  for (OpOperand &operand : consumer->getOpOperands()) {
    if (operand.get() == product) {
      if (consumer.isDpsInit(&operand) || !consumer.getMatchingIndexingMap(&operand).isIdentity())
        return nullptr;
      continue;
    }
    if (!availableBefore(operand.get(), loop, dominance))
      return nullptr;
  }
  if (!consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0)).isIdentity())
    return nullptr;
  return consumer;
}

/// The position i where `map` reads the product's rows as two of the consumer's dims folded
/// into one, (d0, ..., di * E + d(i+1), d(i+2), ...), E the static extent of d(i+1): how a 1x1
/// convolution's epilogue reads its plain product [N, H*W, ...] over [N, H, W, ...]. -1 if not.
int64_t foldedRowsDim(AffineMap map, ArrayRef<int64_t> ranges) {
  if (map.getNumResults() + 1 != map.getNumDims() || map.getNumSymbols() != 0)
    return -1;
  int64_t folded = -1;
  for (unsigned r = 0; r < map.getNumResults(); ++r) {
    AffineExpr e = map.getResult(r);
    unsigned dim = folded < 0 ? r : r + 1;
    if (e == getAffineDimExpr(dim, map.getContext()))
      continue;
    if (folded >= 0 || dim + 1 >= ranges.size() || ShapedType::isDynamic(ranges[dim + 1]))
      return -1;
    AffineExpr want = getAffineDimExpr(dim, map.getContext()) * ranges[dim + 1] +
                      getAffineDimExpr(dim + 1, map.getContext());
    if (e != want)
      return -1;
    folded = r;
  }
  return folded;
}

/// Whether `v` is padded, directly or through reshapes.
bool isPadded(Value v, int depth = 0) {
  for (Operation *user : v.getUsers()) {
    if (isa<tensor::PadOp>(user))
      return true;
    if (depth < 3 && isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) &&
        isPadded(user->getResult(0), depth + 1))
      return true;
  }
  return false;
}

/// A consumer that reads the product through folded rows (foldedRowsDim) is rewritten over the
/// product's own iteration space, dims i and i+1 folded into one: operands that carry both dims
/// in order are collapsed the same way (a view), operands without them keep their data, and the
/// result is expanded back. It then reads the product element for element and can be fused.
/// Returns the new consumer, or null (nothing changed) when an operand cannot follow.
linalg::GenericOp foldConsumerRows(RewriterBase &rewriter, scf::ForallOp loop, linalg::GenericOp consumer) {
  Value product = loop->getResult(0);
  if (!product.hasOneUse() || consumer.getNumDpsInits() != 1 ||
      consumer.getNumParallelLoops() != consumer.getNumLoops() || consumer.hasIndexSemantics())
    return nullptr;
  // A consumer whose result is padded (the input of a depthwise convolution) stays a kernel of
  // its own: kiln-pad-in-place makes it write the padded buffer's interior, where in the
  // product's tiles it would leave a copy into that buffer (mobilenet_v2, 1 thread: a 20 us
  // copy for a 10 us epilogue per block).
  if (isPadded(consumer->getResult(0)))
    return nullptr;
  SmallVector<int64_t> ranges = consumer.getStaticLoopRanges();
  int64_t i = -1;
  for (OpOperand &operand : consumer->getOpOperands())
    if (operand.get() == product) {
      if (consumer.isDpsInit(&operand))
        return nullptr;
      i = foldedRowsDim(consumer.getMatchingIndexingMap(&operand), ranges);
    }
  if (i < 0)
    return nullptr;
  MLIRContext *ctx = rewriter.getContext();
  unsigned n = consumer.getNumLoops();
  // Plan every operand before creating anything, so a consumer that cannot follow is left
  // untouched: its new map, and the dims to collapse where it carries both folded dims.
  struct Plan {
    AffineMap map;
    SmallVector<ReassociationIndices> groups;
    bool collapse = false;
  };
  SmallVector<Plan> plans;
  for (OpOperand &operand : consumer->getOpOperands()) {
    Plan plan;
    AffineMap map = consumer.getMatchingIndexingMap(&operand);
    if (operand.get() == product) {
      plan.map = AffineMap::getMultiDimIdentityMap(n - 1, ctx);
      plans.push_back(plan);
      continue;
    }
    if (!map.isProjectedPermutation() || !isa<RankedTensorType>(operand.get().getType()))
      return nullptr;
    SmallVector<AffineExpr> exprs;
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      unsigned d = cast<AffineDimExpr>(map.getResult(r)).getPosition();
      if (d == unsigned(i) + 1)
        return nullptr; // the inner folded dim without the outer one right before it
      if (d == unsigned(i)) {
        if (r + 1 >= map.getNumResults() || map.getResult(r + 1) != getAffineDimExpr(i + 1, ctx))
          return nullptr;
        plan.groups.push_back({int64_t(r), int64_t(r) + 1});
        exprs.push_back(getAffineDimExpr(i, ctx));
        plan.collapse = true;
        ++r;
        continue;
      }
      plan.groups.push_back({int64_t(r)});
      exprs.push_back(getAffineDimExpr(d <= unsigned(i) ? d : d - 1, ctx));
    }
    plan.map = AffineMap::get(n - 1, 0, exprs, ctx);
    if (consumer.isDpsInit(&operand) && !plan.map.isIdentity())
      return nullptr;
    plans.push_back(plan);
  }
  rewriter.setInsertionPoint(consumer);
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps;
  for (auto [operand, plan] : llvm::zip(consumer->getOpOperands(), plans)) {
    Value v = operand.get();
    if (plan.collapse)
      v = tensor::CollapseShapeOp::create(rewriter, consumer.getLoc(), v, plan.groups);
    (consumer.isDpsInit(&operand) ? inits : inputs).push_back(v);
    maps.push_back(plan.map);
  }
  SmallVector<utils::IteratorType> iters(n - 1, utils::IteratorType::parallel);
  auto folded = linalg::GenericOp::create(rewriter, consumer.getLoc(), TypeRange{inits[0].getType()}, inputs, inits,
                                          maps, iters);
  rewriter.inlineRegionBefore(consumer.getRegion(), folded.getRegion(), folded.getRegion().begin());
  auto resultType = cast<RankedTensorType>(consumer->getResult(0).getType());
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < int64_t(resultType.getRank()); ++d) {
    if (d == i + 1)
      continue;
    groups.push_back(d == i ? ReassociationIndices{d, d + 1} : ReassociationIndices{d});
  }
  Value expanded = tensor::ExpandShapeOp::create(rewriter, consumer.getLoc(), resultType, folded->getResult(0), groups);
  rewriter.replaceOp(consumer, expanded);
  return folded;
}

/// After fusion the loop writes two full results: the product's (now read by
/// nothing outside) and the consumer's. Let the consumer's tile overwrite the
/// product's tile in place and insert it into the product's buffer instead,
/// so the product needs no buffer of its own and no per-tile copy.
void writeInPlace(RewriterBase &rewriter, scf::ForallOp loop, linalg::GenericOp tiled) {
  if (tiled.getNumDpsInits() != 1 || !tiled.getRegionOutputArgs()[0].use_empty())
    return; // the consumer reads its init
  scf::InParallelOp terminator = loop.getTerminator();
  tensor::ParallelInsertSliceOp productInsert, consumerInsert;
  for (Operation &op : terminator.getYieldingOps()) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
    if (!insert)
      return;
    if (insert.getSource() == tiled->getResult(0))
      consumerInsert = insert;
    else if (llvm::is_contained(tiled.getDpsInputs(), insert.getSource()))
      productInsert = insert;
  }
  if (!productInsert || !consumerInsert ||
      productInsert.getSource().getType() != tiled->getResult(0).getType() ||
      productInsert.getMixedOffsets() != consumerInsert.getMixedOffsets() ||
      productInsert.getMixedSizes() != consumerInsert.getMixedSizes() ||
      productInsert.getMixedStrides() != consumerInsert.getMixedStrides())
    return;
  OpResult productResult = loop.getTiedOpResult(loop.getTiedOpOperand(cast<BlockArgument>(productInsert.getDest())));
  OpResult consumerResult = loop.getTiedOpResult(loop.getTiedOpOperand(cast<BlockArgument>(consumerInsert.getDest())));
  if (!productResult.use_empty())
    return;
  rewriter.modifyOpInPlace(tiled, [&] { tiled.getDpsInitsMutable()[0].set(productInsert.getSource()); });
  rewriter.modifyOpInPlace(consumerInsert, [&] { consumerInsert.getDestMutable().set(productInsert.getDest()); });
  rewriter.eraseOp(productInsert);
  rewriter.replaceAllUsesWith(consumerResult, productResult);
}

struct FuseEpiloguesPass : impl::FuseEpiloguesPassBase<FuseEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<scf::ForallOp> loops;
    getOperation().walk([&](scf::ForallOp loop) {
      if (isTiledContraction(loop))
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp loop : loops) {
      // A 1x1 convolution's plain product [N, H*W, ...] is read over [N, H, W, ...]: fold the
      // consumer's two row dims into one first (the expand_shape after it is a view).
      Value product = loop->getResult(0);
      if (product.hasOneUse())
        if (auto reader = dyn_cast<linalg::GenericOp>(*product.getUsers().begin()))
          foldConsumerRows(rewriter, loop, reader);
      DominanceInfo dominance(getOperation());
      linalg::GenericOp consumer = fusableConsumer(loop, dominance);
      if (!consumer)
        continue;
      SmallVector<LoopLikeOpInterface> nest{cast<LoopLikeOpInterface>(loop.getOperation())};
      rewriter.setInsertionPoint(consumer);
      auto fused = scf::tileAndFuseConsumer(rewriter, consumer, nest);
      if (failed(fused))
        continue; // the consumer stays a kernel of its own
      // The rewritten loop yields the consumer's tiles as its last result;
      // the untiled consumer is left behind (its uses already rewired or not).
      Operation *newLoop = nest.front().getOperation();
      if (!consumer->use_empty())
        rewriter.replaceAllUsesWith(consumer->getResults(), newLoop->getResults().take_back());
      rewriter.eraseOp(consumer);
      if (auto tiled = dyn_cast<linalg::GenericOp>(fused->tiledOps.front()); tiled && isa<scf::ForallOp>(newLoop))
        writeInPlace(rewriter, cast<scf::ForallOp>(newLoop), tiled);
    }
  }
};

} // namespace
} // namespace kiln
