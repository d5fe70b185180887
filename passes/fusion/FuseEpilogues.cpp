// Moves the elementwise consumer of a tiled matrix product (bias, residual add, activation) into the
// product's tile loop, so each tile is finished while it is still in cache, in the same kernel.
#include "passes/fusion/Passes.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
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
