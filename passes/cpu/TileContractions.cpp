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
/// Work items a packed product should have at least, where its rows allow.
constexpr int64_t kMinItems = 8;
/// Products over at most this many rows (positions of a map) are split in two row tiles.
constexpr int64_t kHalvesMaxRows = 1024;
/// What an odd number of row tiles costs an implicit convolution's tile choice (in the
/// efficiency score's units: a 2% larger block loss weighs the same).
constexpr double kOddTilesPenalty = 0.02;

struct TileContractionsPass : impl::TileContractionsPassBase<TileContractionsPass> {
  using TileContractionsPassBase::TileContractionsPassBase;

  /// Output rows per tile of an implicit convolution (dims n, oh, ow, panel,
  /// kh, kw, c, column) over an OH x OW map: a divisor T of OH, so that every
  /// tile holds T whole rows of the map and the same static number of
  /// positions (T * OW), walked by the microkernel in blocks of `block`.
  /// T is chosen for the fewest positions lost to partial blocks, then the
  /// tile nearest 64-128 positions (its input rows stay in L2 across the
  /// tile's blocks); at most 196 positions unless one map row is longer.
  /// Every tile streams its whole weight panel once: when the weights do not
  /// stay in L2 (`panelFromL3`) a tile of few positions is bound by that
  /// stream, not by its FMAs (resnet's 7x7 maps, 512 channels, tiled one
  /// 7-position row at a time, read each 1.2 MB panel from L3 seven times and
  /// ran at 85 GFLOP/s against 195 for an 8x8 map), so it takes every row of
  /// the map it can up to 196 positions first.
  /// An odd number of tiles (one included) costs kOddTilesPenalty: threads split a launch's
  /// items (tiles outer, panels inner) into contiguous parts, and the convolutions, depthwise
  /// convolutions and elementwise ops around it give each of two threads half the map's rows.
  /// A 28x28 map in 7 tiles of 4 rows (112 positions) left a tile's panels to both threads, or
  /// a whole tile to the one that finished first, and the next layer read it from the other
  /// core: a chain of 1x1 convolutions at 28x28x192 ran 1.36x faster on two threads than on
  /// one; in 4 tiles of 7 rows, 1.58x (mobilenet_v2 0.972x on two threads, 1.00x on one).
  int64_t convRowsPerTile(int64_t oh, int64_t ow, int64_t block, bool panelFromL3) {
    int64_t best = 1;
    double bestScore = -1;
    for (int64_t t = 1; t <= oh; ++t) {
      int64_t positions = t * ow;
      if (oh % t != 0 || (t > 1 && positions > 196))
        continue;
      int64_t blocks = (positions + block - 1) / block;
      double efficiency = double(positions) / double(blocks * block);
      double score = efficiency - (positions > 128 ? 0.01 : 0) - (positions < 64 ? 0.01 : 0) -
                     ((oh / t) % 2 ? kOddTilesPenalty : 0);
      if (panelFromL3 && positions < 64)
        score -= 0.5 * double(64 - positions) / 64;
      if (score > bestScore + 1e-9) {
        best = t;
        bestScore = score;
      }
    }
    return best;
  }

  /// The larger of two threads' shares of rows when a product of `m` rows and `panels` panels
  /// is tiled by `rows` rows (items tiles outer, panels inner, split into two contiguous
  /// halves; a tile's partial block, which waits on FMA latency, counts half a block more).
  static int64_t twoThreadBlocks(int64_t m, int64_t rows, int64_t panels, int64_t block) {
    SmallVector<int64_t> items;
    for (int64_t r0 = 0; r0 < m; r0 += rows)
      for (int64_t p = 0; p < panels; ++p)
        items.push_back(std::min(rows, m - r0) + (std::min(rows, m - r0) % block ? block / 2 : 0));
    int64_t half = int64_t(items.size()) / 2, first = 0, second = 0;
    for (int64_t i = 0; i < int64_t(items.size()); ++i)
      (i < half ? first : second) += items[i];
    return std::max(first, second);
  }

  /// Tile sizes for one contraction, or empty when it is not worth tiling.
  SmallVector<int64_t> chooseTileSizes(linalg::GenericOp op) {
    if (op->hasAttr("kiln.implicit_conv")) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (ranges.size() < 7 || ShapedType::isDynamic(ranges[1]) || ShapedType::isDynamic(ranges[2]))
        return {};
      // One sample, T output rows (whole), one panel (whole), reductions whole.
      SmallVector<int64_t> sizes(ranges.size(), 0);
      sizes[0] = sizes[3] = 1;
      // The microkernel's rows per block: fewer for a 64-column panel with
      // 512-bit vectors (kiln-vectorize-contractions' wide panel).
      int64_t column = ranges.back();
      int64_t block = column == 64 && widePanelRows > 0 ? widePanelRows : rowBlock;
      int64_t weightBytes = ranges[3] * column * 4; // panels x columns x the reductions' extents
      for (size_t d = 4; d + 1 < ranges.size(); ++d)
        weightBytes *= ranges[d];
      sizes[1] = convRowsPerTile(ranges[1], ranges[2], block, weightBytes > l2Bytes);
      sizes[2] = ranges[2];
      sizes.back() = ranges.back();
      return sizes;
    }
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
      // A whole number of the microkernel's row blocks: 64 rows in blocks of
      // 6 left 4 rows to two pair blocks, which wait on FMA latency (the 7x7
      // stem of resnet, 12544 rows of 147 steps, lost 14% to them).
      int64_t rows = std::max<int64_t>(rowBlock, (packedRows + rowBlock / 2) / rowBlock * rowBlock);
      // A product of few rows and few panels (a 7x7 map's 1x1 convolution
      // into 320 channels: 49 rows, 5 panels) would be few work items, which
      // threads cannot share evenly (5 items on 2 threads: one does 3); its
      // rows are split, in whole row blocks, until there are kMinItems.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      int64_t m = ranges[parallel[parallel.size() - 3]], panels = ranges[parallel[parallel.size() - 2]];
      int64_t block = ranges.back() == 64 && widePanelRows > 0 ? widePanelRows : rowBlock;
      if (!ShapedType::isDynamic(m) && !ShapedType::isDynamic(panels) && m <= rows && panels < kMinItems) {
        int64_t parts = (kMinItems + panels - 1) / panels;
        int64_t perPart = (m + parts - 1) / parts;
        int64_t whole = std::max(block, (perPart + block - 1) / block * block);
        // Whole blocks can leave the last tile short: 49 rows in 2 parts of 30 and 19 gave one
        // of two threads 5 blocks per panel and the other 4 (a 7x7 map's projection into 320
        // channels, 5 panels). Tiles of `perPart` rows (25 and 24: a one-row block each) are
        // taken where they split the items more evenly between two threads.
        rows = std::min(rows, twoThreadBlocks(m, perPart, panels, block) < twoThreadBlocks(m, whole, panels, block)
                                  ? perPart
                                  : whole);
      } else if (!ShapedType::isDynamic(m) && m > rows && m <= kHalvesMaxRows) {
        // A map of up to kHalvesMaxRows positions (14x14, 28x28) in two row tiles, as many
        // positions each: threads split a launch's work items (rows outer, panels inner) into
        // contiguous parts, so two threads each get one half, all its channels, as they get
        // the same half of the depthwise convolution or elementwise op before or after, whose
        // work items are output rows, and read what their own L2 holds. In tiles of 66 rows a
        // 14x14 map's middle tile had its channels split between the threads, and its readers
        // took a third of their input from the other core; a projection into one panel was
        // three work items, two on one thread. Halves made mobilenet_v2 0.94x and
        // efficientnet_b0 0.976x on two threads (quarters: 0.975x and 0.993x).
        rows = (m + 1) / 2;
      }
      sizes[parallel[parallel.size() - 3]] = rows;
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
