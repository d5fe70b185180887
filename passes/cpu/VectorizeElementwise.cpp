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
  /// blocks. An epilogue already inside a product's or window kernel's
  /// work item (`nested`) gets scf.for loops over the outer dims instead:
  /// the tile is the work item, and a forall in it would become a nested
  /// parallel loop per tile.
  void rewrite(linalg::GenericOp op, int64_t width, bool nested) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rank = ranges.size(), inner = rank - 1, outerRank = rank - 2;
    auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
    SmallVector<Value> inits(op.getDpsInits().begin(), op.getDpsInits().end());
    // A nested epilogue's tile may have a dynamic dim (a product's last row tile): its extent is
    // the output's (outputs are written through identity maps).
    SmallVector<OpFoldResult> extent;
    for (int64_t d = 0; d < rank; ++d)
      extent.push_back(ShapedType::isDynamic(ranges[d])
                           ? OpFoldResult(tensor::DimOp::create(b, loc, inits[0], d).getResult())
                           : OpFoldResult(b.getIndexAttr(ranges[d])));
    auto bound = [&](OpBuilder &nb, int64_t d) -> Value {
      return getValueOrCreateConstantIndexOp(nb, loc, extent[d]);
    };
    SmallVector<Value> point(rank);
    // The outer dims' loops; `ob` builds inside the innermost, `outs` are
    // the outputs there.
    scf::ForallOp forall;
    SmallVector<scf::ForOp> outerLoops;
    OpBuilder ob(op);
    SmallVector<Value> outs;
    if (!nested) {
      SmallVector<OpFoldResult> outer;
      for (int64_t d = 0; d < outerRank; ++d)
        outer.push_back(b.getIndexAttr(ranges[d]));
      if (outer.empty())
        outer.push_back(b.getIndexAttr(1));
      forall = scf::ForallOp::create(b, loc, outer, inits, std::nullopt);
      ob = OpBuilder::atBlockBegin(forall.getBody());
      for (int64_t d = 0; d < outerRank; ++d)
        point[d] = forall.getInductionVar(d);
      outs.assign(forall.getRegionIterArgs().begin(), forall.getRegionIterArgs().end());
    } else {
      outs = inits;
      for (int64_t d = 0; d < outerRank; ++d) {
        auto l = scf::ForOp::create(ob, loc, c(ob, 0), bound(ob, d), c(ob, 1), outs);
        if (!outerLoops.empty())
          scf::YieldOp::create(ob, loc, l.getResults());
        outerLoops.push_back(l);
        ob = OpBuilder::atBlockBegin(l.getBody());
        point[d] = l.getInductionVar();
        outs.assign(l.getRegionIterArgs().begin(), l.getRegionIterArgs().end());
      }
    }
    OpBuilder &fb = ob;
    // Each output's block [i0, ..., 0, 0] of the last two dims, rank-reduced to 2-D.
    SmallVector<OpFoldResult> offsets, sizes(rank, fb.getIndexAttr(1)), strides(rank, fb.getIndexAttr(1));
    for (int64_t d = 0; d < outerRank; ++d)
      offsets.push_back(point[d]);
    offsets.append({fb.getIndexAttr(0), fb.getIndexAttr(0)});
    sizes[rank - 2] = extent[rank - 2];
    sizes[rank - 1] = extent[rank - 1];
    SmallVector<Value> blocks;
    for (Value out : outs) {
      auto blockType = RankedTensorType::get({ranges[rank - 2], ranges[rank - 1]},
                                             cast<RankedTensorType>(out.getType()).getElementType());
      blocks.push_back(tensor::ExtractSliceOp::create(fb, loc, blockType, out, offsets, sizes, strides));
    }
    auto rowLoop = scf::ForOp::create(fb, loc, c(fb, 0), bound(fb, rank - 2), c(fb, 1), blocks);
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
      // An input that is also an output (an epilogue updating its tile in
      // place) is read from the carried block, so the loops read what they
      // write and bufferization keeps the tile in place.
      Value source = operand.get();
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (auto it = llvm::find(inits, source); it != inits.end() && map.isIdentity()) {
        Value block = loop.getRegionIterArgs()[it - inits.begin()];
        mapping.map(arg, vector::TransferReadOp::create(lb, loc, vectorOf(et), block, local, pad,
                                                        ArrayRef<bool>{true}));
        continue;
      }
      if (map.isFunctionOfDim(inner)) {
        mapping.map(arg, vector::TransferReadOp::create(lb, loc, vectorOf(et), source, indices(map), pad,
                                                        ArrayRef<bool>{true}));
      } else {
        Value scalar = tensor::ExtractOp::create(lb, loc, source, indices(map));
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
    if (!nested) {
      OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
      for (auto [block, out] : llvm::zip(rowLoop.getResults(), forall.getRegionIterArgs()))
        tensor::ParallelInsertSliceOp::create(tb, loc, block, out, offsets, sizes, strides);
      op->replaceAllUsesWith(forall.getResults());
      op->erase();
      return;
    }
    SmallVector<Value> updated;
    for (auto [block, out] : llvm::zip(rowLoop.getResults(), outs))
      updated.push_back(tensor::InsertSliceOp::create(fb, loc, block, out, offsets, sizes, strides));
    if (outerLoops.empty()) {
      op->replaceAllUsesWith(updated);
    } else {
      scf::YieldOp::create(fb, loc, updated);
      op->replaceAllUsesWith(outerLoops.front().getResults());
    }
    op->erase();
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, int64_t>> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op.hasPureTensorSemantics() || op.getNumParallelLoops() != op.getNumLoops() || op.getNumLoops() < 2 ||
          op->hasAttr("kiln.tile_sizes"))
        return;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      // Dynamic outer dims only in an epilogue inside a work item (a product's last row tile,
      // after kiln-fuse-epilogues): its loops are plain scf.for; the innermost dim is static.
      bool nested = op->getParentOfType<scf::ForallOp>() != nullptr;
      if (ShapedType::isDynamic(ranges.back()) ||
          (!nested && llvm::any_of(ranges, ShapedType::isDynamic)))
        return;
      // Outputs written in iteration order (identity maps), the last dim innermost.
      for (OpOperand &init : op.getDpsInitsMutable())
        if (!op.getMatchingIndexingMap(&init).isIdentity())
          return;
      int64_t inner = int64_t(ranges.size()) - 1;
      // A whole register where it divides the innermost dim, else half of
      // one (24, 40, 72 channels).
      int64_t width = ranges[inner] % lanes == 0 ? lanes : ranges[inner] % 8 == 0 ? 8 : 0;
      if (!width || !fits(op, inner))
        return;
      found.push_back({op, width});
    });
    for (auto [op, width] : found)
      rewrite(op, width, op->getParentOfType<scf::ForallOp>() != nullptr);
  }
};
} // namespace
} // namespace kiln
