// Elementwise linalg ops as explicit vector code over their innermost dim.
//
// LLVM fully unrolls a short constant inner loop (16 channels of a block) before
// its loop vectorizer runs, and its SLP vectorizer will not combine loads and
// stores it cannot prove apart: the bias + ReLU6 after each 1x1 convolution ran
// as scalar code (15 GB/s, a memory-bound pass slower than the product before it).
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_VECTORIZEELEMENTWISEPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct VectorizeElementwisePass : impl::VectorizeElementwisePassBase<VectorizeElementwisePass> {
  using VectorizeElementwisePassBase::VectorizeElementwisePassBase;

  /// Whether every input reads the innermost dim `inner` as its own last
  /// index (contiguous) or not at all (one value for the whole vector), the
  /// body is elementwise arith/math (no index, no extract), and the element
  /// types are scalars of whole bytes (a vector of i1 would be read as packed
  /// bits, where a tensor of i1 holds a byte per element).
  static bool fits(linalg::GenericOp op, int64_t inner) {
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type || !type.getElementType().isIntOrFloat() || type.getElementTypeBitWidth() % 8 != 0)
        return false;
      bool last = map.getNumResults() > 0 && map.getResults().back() == getAffineDimExpr(inner, op.getContext());
      for (auto [i, e] : llvm::enumerate(map.getResults()))
        if (e.isFunctionOfDim(inner) && (!last || i + 1 != map.getNumResults()))
          return false;
    }
    for (Operation &body : op.getRegion().front().without_terminator())
      if (!body.hasTrait<OpTrait::Elementwise>() || body.getNumRegions() != 0 || body.getNumResults() != 1 ||
          !body.getResult(0).getType().isIntOrFloat())
        return false;
    return true;
  }

  /// An scf.forall over the dims before the last two (each item a 2-D block
  /// of the last two, so the op stays a parallel kernel and an item is more
  /// than one vector's work: items of 16 floats spent more on finding their
  /// indices than on the work), in it scf.for loops over the second-to-last
  /// dim and over the innermost in steps of `width`, carrying the outputs'
  /// blocks.
  void rewrite(linalg::GenericOp op, int64_t width) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rank = ranges.size(), inner = rank - 1, outerRank = rank - 2;
    auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
    SmallVector<OpFoldResult> outer;
    for (int64_t d = 0; d < outerRank; ++d)
      outer.push_back(b.getIndexAttr(ranges[d]));
    if (outer.empty())
      outer.push_back(b.getIndexAttr(1));
    SmallVector<Value> inits(op.getDpsInits().begin(), op.getDpsInits().end());
    auto forall = scf::ForallOp::create(b, loc, outer, inits, std::nullopt);
    OpBuilder fb = OpBuilder::atBlockBegin(forall.getBody());
    SmallVector<Value> point(rank);
    for (int64_t d = 0; d < outerRank; ++d)
      point[d] = forall.getInductionVar(d);
    // Each output's block [i0, ..., 0, 0] of the last two dims, rank-reduced to 2-D.
    SmallVector<OpFoldResult> offsets, sizes(rank, fb.getIndexAttr(1)), strides(rank, fb.getIndexAttr(1));
    for (int64_t d = 0; d < outerRank; ++d)
      offsets.push_back(point[d]);
    offsets.append({fb.getIndexAttr(0), fb.getIndexAttr(0)});
    sizes[rank - 2] = fb.getIndexAttr(ranges[rank - 2]);
    sizes[rank - 1] = fb.getIndexAttr(ranges[rank - 1]);
    SmallVector<Value> blocks;
    for (BlockArgument out : forall.getRegionIterArgs()) {
      auto blockType = RankedTensorType::get({ranges[rank - 2], ranges[rank - 1]},
                                             cast<RankedTensorType>(out.getType()).getElementType());
      blocks.push_back(tensor::ExtractSliceOp::create(fb, loc, blockType, out, offsets, sizes, strides));
    }
    auto rowLoop = scf::ForOp::create(fb, loc, c(fb, 0), c(fb, ranges[rank - 2]), c(fb, 1), blocks);
    OpBuilder rb = OpBuilder::atBlockBegin(rowLoop.getBody());
    point[rank - 2] = rowLoop.getInductionVar();
    auto loop = scf::ForOp::create(rb, loc, c(rb, 0), c(rb, ranges[inner]), c(rb, width),
                                   rowLoop.getRegionIterArgs());
    scf::YieldOp::create(rb, loc, loop.getResults());
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    point[inner] = loop.getInductionVar();
    SmallVector<Value> local = {point[rank - 2], point[inner]};
    auto indices = [&](AffineMap map) {
      SmallVector<Value> idx;
      for (AffineExpr e : map.getResults())
        idx.push_back(affine::expandAffineExpr(lb, loc, e, point, {}));
      return idx;
    };
    Block &body = op.getRegion().front();
    IRMapping mapping;
    auto vectorOf = [&](Type t) { return VectorType::get({width}, t); };
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = body.getArgument(operand.getOperandNumber());
      if (arg.use_empty())
        continue;
      Type et = arg.getType();
      Value pad = arith::ConstantOp::create(lb, loc, lb.getZeroAttr(et));
      if (op.isDpsInit(&operand)) {
        Value block = loop.getRegionIterArgs()[operand.getOperandNumber() - op.getNumDpsInputs()];
        mapping.map(arg, vector::TransferReadOp::create(lb, loc, vectorOf(et), block, local, pad,
                                                        ArrayRef<bool>{true}));
        continue;
      }
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (map.isFunctionOfDim(inner)) {
        mapping.map(arg, vector::TransferReadOp::create(lb, loc, vectorOf(et), operand.get(), indices(map), pad,
                                                        ArrayRef<bool>{true}));
      } else {
        Value scalar = tensor::ExtractOp::create(lb, loc, operand.get(), indices(map));
        mapping.map(arg, vector::BroadcastOp::create(lb, loc, vectorOf(et), scalar));
      }
    }
    for (Operation &inside : body.without_terminator()) {
      SmallVector<Value> operands;
      for (Value v : inside.getOperands()) {
        if (Value m = mapping.lookupOrNull(v))
          operands.push_back(m);
        else // defined above the op (a captured constant): one vector of it
          operands.push_back(vector::BroadcastOp::create(lb, loc, vectorOf(v.getType()), v));
      }
      OperationState state(loc, inside.getName(), operands, TypeRange{vectorOf(inside.getResult(0).getType())},
                           inside.getAttrs());
      mapping.map(inside.getResult(0), lb.create(state)->getResult(0));
    }
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    SmallVector<Value> written;
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      Value value = mapping.lookupOrNull(v);
      if (!value) // a value from above, the same in every lane
        value = vector::BroadcastOp::create(lb, loc, vectorOf(v.getType()), v);
      written.push_back(
          vector::TransferWriteOp::create(lb, loc, value, loop.getRegionIterArgs()[i], local, ArrayRef<bool>{true})
              .getResult());
    }
    scf::YieldOp::create(lb, loc, written);
    OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
    for (auto [block, out] : llvm::zip(rowLoop.getResults(), forall.getRegionIterArgs()))
      tensor::ParallelInsertSliceOp::create(tb, loc, block, out, offsets, sizes, strides);
    op->replaceAllUsesWith(forall.getResults());
    op->erase();
  }

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op.hasPureTensorSemantics() || op.getNumParallelLoops() != op.getNumLoops() || op.getNumLoops() < 2 ||
          op->hasAttr("kiln.tile_sizes"))
        return;
      // An epilogue in a product's tile: the tile is the work item already, and a
      // forall in it would become a nested parallel loop per tile (slower).
      if (op->getParentOfType<scf::ForallOp>())
        return;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return;
      // Outputs written in iteration order (identity maps), the last dim innermost.
      for (OpOperand &init : op.getDpsInitsMutable())
        if (!op.getMatchingIndexingMap(&init).isIdentity())
          return;
      int64_t inner = int64_t(ranges.size()) - 1;
      if (ranges[inner] % lanes != 0 || !fits(op, inner))
        return;
      found.push_back(op);
    });
    for (linalg::GenericOp op : found)
      rewrite(op, lanes);
  }
};
} // namespace
} // namespace kiln
