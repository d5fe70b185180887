// Tiles contractions over their parallel dims with scf.forall: cache-sized blocks that are also work items.
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace kiln {
#define GEN_PASS_DEF_TILECONTRACTIONSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct TileContractionsPass : impl::TileContractionsPassBase<TileContractionsPass> {
  using TileContractionsPassBase::TileContractionsPassBase;

  /// Tile sizes for one contraction, or empty when it is not worth tiling.
  SmallVector<int64_t> chooseTileSizes(linalg::GenericOp op) {
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    SmallVector<int64_t> parallel;
    for (auto [i, it] : llvm::enumerate(iters))
      if (it == utils::IteratorType::parallel)
        parallel.push_back(i);
    bool hasReduction = parallel.size() < iters.size();
    // Only true contractions: two operands read through projected
    // permutations (pooling windows read through strided sums do not count).
    bool permutations = llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) {
      return m.isProjectedPermutation();
    });
    if (op.getNumDpsInputs() != 2 || !hasReduction || parallel.size() < 2 || !permutations)
      return {};
    SmallVector<int64_t> sizes(iters.size(), 0);
    for (int64_t d : parallel)
      sizes[d] = 1;
    if (op->hasAttr("kiln.packed_rhs") && parallel.size() >= 3) {
      // (..., m, panel, column): one weight panel per tile, whole, so the
      // tile's weights are one contiguous stream, and `packedRows` rows, so
      // that a prompt's rows share each panel while it is in cache (the
      // panels of a large weight come from memory once per row tile).
      sizes[parallel.back()] = op.getStaticLoopRanges()[parallel.back()];
      sizes[parallel[parallel.size() - 3]] = packedRows;
      return sizes;
    }
    sizes[parallel.back()] = innerTile;
    sizes[parallel[parallel.size() - 2]] = outerTile;
    return sizes;
  }

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      // A product inside an scf.forall (the attention kernel's tiles) is already part of a work item.
      if (op.hasPureTensorSemantics() && !op->getParentOfType<scf::ForallOp>())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      SmallVector<int64_t> sizes = chooseTileSizes(op);
      if (sizes.empty())
        continue;
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      rewriter.setInsertionPoint(op);
      auto tiled = scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        op.emitError("tiling failed");
        return signalPassFailure();
      }
      for (Operation *t : tiled->tiledOps)
        t->setAttr("kiln.tile_sizes", rewriter.getDenseI64ArrayAttr(sizes));
      rewriter.replaceOp(op, tiled->replacements);
    }
  }
};
} // namespace
} // namespace kiln
