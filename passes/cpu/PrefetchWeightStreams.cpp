// Software prefetch for the weight streams of quantized products and of f32 panels: the next reduction chunk, or the next panel (after bufferization).
#include "passes/cpu/Passes.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_PREFETCHWEIGHTSTREAMSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
/// Weights from this size on come from L3 or memory, not L2, in a reduction run whole.
constexpr int64_t kMinPanelStreamBytes = 512 << 10;

struct PrefetchWeightStreamsPass : impl::PrefetchWeightStreamsPassBase<PrefetchWeightStreamsPass> {
  using PrefetchWeightStreamsPassBase::PrefetchWeightStreamsPassBase;

  /// A vector read of 8-bit panels [P, rows, B] straight from a weight
  /// argument: what the quantized kernels stream (bufferization drops marks
  /// on the reads, so the shape is the mark).
  static bool isWeightStream(func::FuncOp func, vector::TransferReadOp read) {
    auto arg = dyn_cast<BlockArgument>(read.getBase());
    auto type = dyn_cast<MemRefType>(read.getBase().getType());
    return arg && arg.getOwner()->getParentOp() == func.getOperation() &&
           func.getArgAttr(arg.getArgNumber(), attrs::kWeight) && type && type.getRank() == 3 &&
           type.getElementType().isInteger(8);
  }

  /// A vector read of an f32 weight panel: its base a view (subview, reshape) of a weight argument.
  static bool isFloatPanel(func::FuncOp func, vector::TransferReadOp read) {
    auto type = dyn_cast<MemRefType>(read.getBase().getType());
    if (!type || !type.getElementType().isF32() || type.getRank() < 2 || !type.hasStaticShape())
      return false;
    Value v = read.getBase();
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<memref::SubViewOp, memref::CollapseShapeOp, memref::ExpandShapeOp>(def))
        return false;
      v = def->getOperand(0);
    }
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner()->getParentOp() == func.getOperation() &&
           func.getArgAttr(arg.getArgNumber(), attrs::kWeight);
  }

  /// The microkernel's f32 panel reads (kiln-vectorize-contractions): a reduction split into
  /// chunks runs each chunk over every row block of the tile, so the first row block of a chunk
  /// waits on the panel's rows coming from L3 or memory and the others find them in cache; the
  /// stream and the FMAs took turns (resnet50's last stage, 7x7 maps and 4-9 MB weights, ran at
  /// 110 GFLOP/s of 190 on the Xeon). While row blocks 1 to B - 1 of chunk c run (their rows
  /// in cache, the memory idle), their steps prefetch chunk c + 1 into L2 (see below for how
  /// the lines are shared out). Loops, outward from the read: the step
  /// loop (its induction variable indexes the panel's rows, from the chunk loop's), then loops
  /// indexing the read (a window row, a column block), then the row-block loop (not indexing
  /// it, constant step), then the chunk loop.
  void prefetchNextChunk(vector::TransferReadOp read) {
    auto type = cast<MemRefType>(read.getBase().getType());
    int64_t rowDim = type.getRank() - 2;
    auto steps = dyn_cast_or_null<scf::ForOp>(read->getParentOp());
    if (!steps || read.getIndices()[rowDim] != steps.getInductionVar())
      return;
    auto indexes = [&](Value v) { return llvm::is_contained(read.getIndices(), v); };
    scf::ForOp rows = steps->getParentOfType<scf::ForOp>();
    while (rows && indexes(rows.getInductionVar()))
      rows = rows->getParentOfType<scf::ForOp>();
    auto rowStep = rows ? getConstantIntValue(rows.getStep()) : std::nullopt;
    if (!rows || !rowStep || *rowStep < 2)
      return;
    auto chunks = rows->getParentOfType<scf::ForOp>();
    auto chunk = chunks ? getConstantIntValue(chunks.getStep()) : std::nullopt;
    if (!chunks || !chunk || steps.getLowerBound() != chunks.getInductionVar()) {
      prefetchNextPanel(read, steps, rows);
      return;
    }
    Location loc = read.getLoc();
    int64_t lanes = cast<VectorType>(read.getVectorType()).getNumElements(), lineLanes = 16;
    int64_t lines = std::max<int64_t>(1, lanes / lineLanes);
    // Row blocks per chunk, where the loop's bounds are constants.
    auto lo = getConstantIntValue(rows.getLowerBound()), hi = getConstantIntValue(rows.getUpperBound());
    int64_t blocks = lo && hi ? (*hi - *lo + *rowStep - 1) / *rowStep : 0;
    OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
    auto ci = [&](OpBuilder &at, int64_t v) -> Value { return arith::ConstantIndexOp::create(at, loc, v); };
    Value block = arith::DivSIOp::create(rb, loc, arith::SubIOp::create(rb, loc, rows.getInductionVar(), rows.getLowerBound()),
                                         rows.getStep());
    OpBuilder b(read);
    SmallVector<Value> indices(read.getIndices());
    int64_t rowsInPanel = type.getDimSize(rowDim), cols = type.getDimSize(rowDim + 1);
    SmallVector<int64_t> strides;
    int64_t offset;
    bool rowsContiguous = succeeded(type.getStridesAndOffset(strides, offset)) && strides[rowDim] == cols &&
                          strides[rowDim + 1] == 1;
    if (blocks - 1 >= lines && rowsContiguous) {
      // Blocks 1 to B - 1 share the next chunk's rows evenly, in address order: the step at row
      // r of block b prefetches float ((b - 1) * chunk + r) * s of them (s = ceil(columns /
      // (B - 1)) floats, at most a line, so every line is touched), through a view with the
      // rows and columns as one dim, so the address is linear in the step and costs an add. The
      // stream from L3 or memory then runs through every cache-resident block at one pace (the
      // first `lines` blocks alone asked for a line per step, more than memory gives one core,
      // while the later blocks left it idle): resnet50's 7x7 3x3 convolutions with 9.4 MB of
      // weights went from 157 to 190 GFLOP/s on the Xeon.
      Value inRange = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::sge, block, ci(rb, 1));
      int64_t s = (cols + blocks - 2) / (blocks - 1);
      Value blockBase = arith::MulIOp::create(rb, loc, arith::SubIOp::create(rb, loc, block, ci(rb, 1)), ci(rb, *chunk * s));
      Value r = arith::SubIOp::create(b, loc, indices[rowDim], chunks.getInductionVar());
      Value ahead = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, chunks.getInductionVar(), ci(b, cols)),
          arith::AddIOp::create(b, loc, ci(b, *chunk * cols),
                                arith::AddIOp::create(b, loc, blockBase, arith::MulIOp::create(b, loc, r, ci(b, s)))));
      Value flat = flatRows(read.getBase(), rowDim);
      auto branch = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
      OpBuilder tb = branch.getThenBodyBuilder();
      SmallVector<Value> at(indices.begin(), indices.begin() + rowDim);
      at.push_back(arith::MinSIOp::create(tb, loc, ahead, ci(tb, rowsInPanel * cols - 1)));
      memref::PrefetchOp::create(tb, loc, flat, at, /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
      return;
    }
    // Fewer blocks than lines: row block b (from 0) prefetches line b - 1 of each step's row.
    Value line = arith::SubIOp::create(rb, loc, block, ci(rb, 1));
    Value inRange =
        arith::AndIOp::create(rb, loc, arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::sge, line, ci(rb, 0)),
                              arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::slt, line, ci(rb, lines)));
    Value lineOffset = arith::MulIOp::create(rb, loc, line, ci(rb, lineLanes));
    auto branch = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    OpBuilder tb = branch.getThenBodyBuilder();
    Value ahead = arith::AddIOp::create(tb, loc, indices[rowDim], ci(tb, *chunk));
    indices[rowDim] = arith::MinSIOp::create(tb, loc, ahead, ci(tb, rowsInPanel - 1));
    indices.back() = arith::AddIOp::create(tb, loc, indices.back(), lineOffset);
    memref::PrefetchOp::create(tb, loc, read.getBase(), indices, /*isWrite=*/false, /*localityHint=*/2,
                               /*isDataCache=*/true);
  }

  /// The same for a reduction run whole (not in chunks: 256 steps or fewer): each work item
  /// streams one panel of a packed weight [P, ..., K, columns] through its row blocks, and the
  /// item a thread takes next is usually the next panel (its part of the launch is contiguous),
  /// so blocks 1 to B - 1 prefetch that panel, evenly and in address order as above, through a
  /// flat view of the whole weight: the panel's offset (from the view's metadata) plus one
  /// panel, clamped to the weight's end. ocr_rec's CTC head, 40 rows by 6656 columns over 256
  /// steps (6.8 MB of weights from memory), waited on every panel's first block (701 -> 581
  /// us); with Winograd's products too (their tiles' rows known at run time), resnet50 went
  /// 0.957x and resnet18 0.966x on the Xeon.
  void prefetchNextPanel(vector::TransferReadOp read, scf::ForOp steps, scf::ForOp rows) {
    auto type = cast<MemRefType>(read.getBase().getType());
    int64_t rowDim = type.getRank() - 2, k = type.getDimSize(rowDim), cols = type.getDimSize(rowDim + 1);
    auto lb = getConstantIntValue(steps.getLowerBound()), ub = getConstantIntValue(steps.getUpperBound());
    auto lo = getConstantIntValue(rows.getLowerBound()), hi = getConstantIntValue(rows.getUpperBound());
    auto rowStep = getConstantIntValue(rows.getStep());
    if (!lb || *lb != 0 || !ub || *ub != k || !lo || !rowStep)
      return;
    // Row blocks: a constant, or (a tile's rows known at run time: Winograd's tiles of a map)
    // computed per block from the loop's bound.
    int64_t blocks = hi ? (*hi - *lo + *rowStep - 1) / *rowStep : 0;
    int64_t lines = std::max<int64_t>(1, cast<VectorType>(read.getVectorType()).getNumElements() / 16);
    SmallVector<int64_t> strides;
    int64_t offset;
    if ((hi && blocks - 1 < lines) || failed(type.getStridesAndOffset(strides, offset)) || strides[rowDim] != cols ||
        strides[rowDim + 1] != 1)
      return;
    // The weight argument the panel is a view of, contiguous, and the panel's size.
    Value source = read.getBase();
    while (auto view = source.getDefiningOp<memref::SubViewOp>())
      source = view.getSource();
    auto weight = dyn_cast<MemRefType>(source.getType());
    // A weight that stays in L2 gains nothing and pays the prefetches' instructions (squeezenet's
    // 1x1 convolutions, 16-256 KB each: 1.02x slower with them).
    if (!isa<BlockArgument>(source) || !weight || !weight.hasStaticShape() || !weight.getLayout().isIdentity() ||
        weight.getNumElements() * weight.getElementTypeBitWidth() / 8 < kMinPanelStreamBytes)
      return;
    // One panel: the stride of the view's outermost dim (its panel dim, of extent 1 in a view
    // of the item's panel, or the panels of the weight read directly).
    if (rowDim < 1)
      return;
    int64_t panel = strides[0];
    Location loc = read.getLoc();
    auto ci = [&](OpBuilder &at, int64_t v) -> Value { return arith::ConstantIndexOp::create(at, loc, v); };
    OpBuilder vb(read.getContext());
    vb.setInsertionPointAfterValue(read.getBase());
    Value base = memref::ExtractStridedMetadataOp::create(vb, loc, read.getBase()).getOffset();
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < weight.getRank(); ++d)
      all[0].push_back(d);
    OpBuilder fb(read.getContext());
    fb.setInsertionPointAfterValue(read.getBase());
    Value flat = memref::CollapseShapeOp::create(fb, loc, source, all);
    OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
    Value block = arith::DivSIOp::create(rb, loc, arith::SubIOp::create(rb, loc, rows.getInductionVar(), rows.getLowerBound()),
                                         rows.getStep());
    Value inRange = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::sge, block, ci(rb, 1));
    // s = ceil(columns / (B - 1)) floats per step (with fewer blocks than lines per row, the
    // lines between are left to the hardware).
    Value step;
    if (hi) {
      step = ci(rb, (cols + blocks - 2) / (blocks - 1));
    } else {
      Value n = arith::DivSIOp::create(rb, loc, arith::SubIOp::create(rb, loc, rows.getUpperBound(), rows.getLowerBound()),
                                       rows.getStep());
      Value others = arith::MaxSIOp::create(rb, loc, arith::SubIOp::create(rb, loc, n, ci(rb, 1)), ci(rb, 1));
      step = arith::CeilDivSIOp::create(rb, loc, ci(rb, cols), others);
    }
    Value blockBase = arith::MulIOp::create(
        rb, loc, arith::MulIOp::create(rb, loc, arith::SubIOp::create(rb, loc, block, ci(rb, 1)), ci(rb, k)), step);
    OpBuilder b(read);
    // Where this step's row starts in the panel (dims before the rows: a window row).
    Value at = arith::AddIOp::create(b, loc, base, ci(b, panel));
    SmallVector<Value> indices(read.getIndices());
    for (int64_t d = 0; d < rowDim; ++d)
      at = arith::AddIOp::create(b, loc, at, arith::MulIOp::create(b, loc, indices[d], ci(b, strides[d])));
    Value r = indices[rowDim];
    at = arith::AddIOp::create(b, loc, at,
                               arith::AddIOp::create(b, loc, blockBase, arith::MulIOp::create(b, loc, r, step)));
    auto branch = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    OpBuilder tb = branch.getThenBodyBuilder();
    Value clamped = arith::MinSIOp::create(tb, loc, at, ci(tb, weight.getNumElements() - 1));
    memref::PrefetchOp::create(tb, loc, flat, ValueRange{clamped}, /*isWrite=*/false, /*localityHint=*/2,
                               /*isDataCache=*/true);
  }

  /// `base` with its dims from `rowDim` on (rows, columns; contiguous) as one, built where base is defined.
  static Value flatRows(Value base, int64_t rowDim) {
    OpBuilder b(base.getContext());
    if (Operation *def = base.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(base).getOwner());
    SmallVector<ReassociationIndices> groups;
    auto type = cast<MemRefType>(base.getType());
    for (int64_t d = 0; d < rowDim; ++d)
      groups.push_back({d});
    groups.push_back({rowDim, rowDim + 1});
    return memref::CollapseShapeOp::create(b, base.getLoc(), base, groups);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<vector::TransferReadOp> panels;
    func.walk([&](vector::TransferReadOp read) {
      if (isFloatPanel(func, read))
        panels.push_back(read);
    });
    for (vector::TransferReadOp read : panels)
      prefetchNextChunk(read);
    SmallVector<vector::TransferReadOp> reads;
    func.walk([&](vector::TransferReadOp read) {
      if (isWeightStream(func, read))
        reads.push_back(read);
    });
    for (vector::TransferReadOp read : reads) {
      auto type = dyn_cast<MemRefType>(read.getBase().getType());
      if (!type || type.getRank() < 2 || !type.hasStaticShape() || distance <= 0)
        continue;
      // Rows ahead: `distance` bytes of rows of the innermost dim.
      int64_t rowBytes = type.getDimSize(type.getRank() - 1) * type.getElementTypeBitWidth() / 8;
      int64_t rows = std::max<int64_t>(1, distance / std::max<int64_t>(rowBytes, 1));
      OpBuilder b(read);
      Location loc = read.getLoc();
      SmallVector<Value> indices(read.getIndices());
      int64_t dim = type.getRank() - 2;
      Value ahead = arith::AddIOp::create(b, loc, indices[dim], arith::ConstantIndexOp::create(b, loc, rows));
      indices[dim] = arith::MinSIOp::create(b, loc, ahead,
                                            arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim) - 1));
      memref::PrefetchOp::create(b, loc, read.getBase(), indices, /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
  }
};
} // namespace
} // namespace kiln
