// Rewrites each cache tile of a contraction into a register-blocked outer-product microkernel.
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {
#define GEN_PASS_DEF_VECTORIZECONTRACTIONSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The shape of contraction the microkernel handles: out[.., i, j] +=
/// lhs[.., i, r] * rhs[.., r, j] where j (the last dim of out and rhs) is
/// contiguous, i indexes lhs and out, r is the one reduction dim, and every
/// other dim has extent 1 in the tile. An implicit convolution's tile
/// (kiln.implicit_conv: dims n, oh, ow, panel, kh, kw, c, column) has two row
/// dims, (oh, ow), walked as one run of rows, and three reduction dims; its
/// lhs is read through affine maps (oh*s + kh*d) rather than permutations.
struct Microkernel {
  SmallVector<int64_t> rowDims; // outermost first; their positions flatten to one row index
  int64_t j = -1;
  SmallVector<int64_t> reductions; // outermost first; the last is the contiguous one
  SmallVector<int64_t> extents;
};

bool usesDim(AffineMap map, int64_t d) {
  return map.isFunctionOfDim(d);
}

/// Body: yield(acc + a * b) in f32.
bool isMultiplyAdd(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3 || !body.getArgument(2).getType().isF32())
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  auto mul = add ? add.getRhs().getDefiningOp<arith::MulFOp>() : nullptr;
  return add && mul && add.getLhs() == body.getArgument(2) && mul.getLhs() == body.getArgument(0) &&
         mul.getRhs() == body.getArgument(1);
}

bool lastIs(AffineMap m, int64_t d) {
  return m.getNumResults() > 0 && m.getResults().back() == getAffineDimExpr(d, m.getContext());
}

/// Dims (n, oh, ow, panel, reductions..., column), n and panel of extent 1 in the tile.
std::optional<Microkernel> matchImplicitConv(linalg::GenericOp op) {
  Microkernel mk;
  mk.extents = op.getStaticLoopRanges();
  int64_t numDims = mk.extents.size();
  if (numDims < 6 || llvm::any_of(mk.extents, ShapedType::isDynamic) || mk.extents[0] != 1 || mk.extents[3] != 1 ||
      !isMultiplyAdd(op))
    return std::nullopt;
  mk.j = numDims - 1;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!lastIs(maps[1], mk.j) || !lastIs(maps[2], mk.j) || usesDim(maps[0], mk.j) || usesDim(maps[1], 1) ||
      usesDim(maps[1], 2) || !maps[1].isProjectedPermutation() || !maps[2].isProjectedPermutation())
    return std::nullopt;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it == utils::IteratorType::reduction)
      mk.reductions.push_back(d);
  if (mk.reductions.empty() || mk.reductions.front() != 4 || mk.reductions.back() != mk.j - 1)
    return std::nullopt;
  mk.rowDims = {1, 2};
  return mk;
}

std::optional<Microkernel> match(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return std::nullopt;
  if (op->hasAttr("kiln.implicit_conv"))
    return matchImplicitConv(op);
  Microkernel mk;
  mk.extents = op.getStaticLoopRanges();
  SmallVector<int64_t> parallel, reduction;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(d);
  if (reduction.size() != 1 || parallel.size() < 2)
    return std::nullopt;
  int64_t r = reduction[0], i = -1;
  mk.j = parallel.back();
  // The row dim: the innermost other parallel dim that the lhs reads and the
  // rhs does not (a packed rhs adds a panel dim between rows and columns).
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (int64_t d : llvm::reverse(ArrayRef<int64_t>(parallel).drop_back()))
    if (usesDim(maps[0], d) && !usesDim(maps[1], d)) {
      i = d;
      break;
    }
  if (i < 0)
    return std::nullopt;
  // Only the row extent may be dynamic (the edge tile of a dynamic batch or sequence).
  for (auto [d, e] : llvm::enumerate(mk.extents))
    if (ShapedType::isDynamic(e) && int64_t(d) != i)
      return std::nullopt;
  for (int64_t d : parallel)
    if (d != i && d != mk.j && mk.extents[d] != 1)
      return std::nullopt;
  for (AffineMap m : maps)
    if (!m.isProjectedPermutation())
      return std::nullopt;
  AffineMap lhs = maps[0], rhs = maps[1], out = maps[2];
  if (!lastIs(out, mk.j) || !lastIs(rhs, mk.j) || usesDim(lhs, mk.j) || usesDim(rhs, i) || !usesDim(lhs, i) ||
      !usesDim(lhs, r) || !usesDim(rhs, r) || !isMultiplyAdd(op))
    return std::nullopt;
  mk.rowDims = {i};
  mk.reductions = {r};
  return mk;
}

/// The constant every accumulator of a tile starts from, when the tile's
/// output is a slice of its scf.forall's shared output and that output is a
/// linalg.fill of a constant read by nothing else: the microkernel then starts
/// its registers from the constant and the forall takes the fill's empty
/// tensor instead, so no kernel writes the whole output (zeros, before
/// every convolution and product) only for the tiles to read it back. Every
/// element is written: the tiles cover the output, and the microkernel each
/// tile's rows and columns.
std::optional<Value> constantAccumulatorStart(linalg::GenericOp op, OpOperand *&forallInit) {
  AffineMap out = op.getIndexingMapsArray()[2];
  if (!out.isProjectedPermutation() || int64_t(out.getNumResults()) != op.getNumParallelLoops())
    return std::nullopt;
  auto slice = op.getDpsInits()[0].getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice->hasOneUse())
    return std::nullopt;
  auto arg = dyn_cast<BlockArgument>(slice.getSource());
  auto forall = arg ? dyn_cast<scf::ForallOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!forall || !llvm::is_contained(forall.getRegionIterArgs(), arg))
    return std::nullopt;
  for (OpOperand &use : arg.getUses())
    if (use.getOwner() != slice && !isa<tensor::ParallelInsertSliceOp>(use.getOwner()))
      return std::nullopt;
  OpOperand *tied = forall.getTiedOpOperand(arg);
  auto fill = tied->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.getInputs()[0].getDefiningOp<arith::ConstantOp>())
    return std::nullopt;
  forallInit = tied;
  return fill.getInputs()[0];
}

struct VectorizeContractionsPass
    : impl::VectorizeContractionsPassBase<VectorizeContractionsPass> {
  using VectorizeContractionsPassBase::VectorizeContractionsPassBase;

  /// Largest power of two <= want dividing extent (blocks never straddle an edge).
  static int64_t fit(int64_t want, int64_t extent) {
    while (want > 1 && extent % want != 0)
      want /= 2;
    return want;
  }

  void rewrite(linalg::GenericOp op, const Microkernel &mk) {
    int64_t cols = fit(this->columns, mk.extents[mk.j]);
    if (cols < 4)
      return;
    // The rows: one dim, or an implicit convolution's (oh, ow) flattened.
    int64_t extentI = 1;
    for (int64_t d : mk.rowDims)
      extentI = ShapedType::isDynamic(mk.extents[d]) ? ShapedType::kDynamic : extentI * mk.extents[d];
    // A static extent that the block does not divide (the 49 positions of a
    // 7x7 map) takes whole blocks and then the rest, as a dynamic one does:
    // fitting the block to the extent would leave blocks of one row, each
    // streaming the whole weight panel for a single row's FMAs.
    bool dynamicRows = ShapedType::isDynamic(extentI) || (extentI > this->rows && extentI % this->rows != 0);
    int64_t rows = dynamicRows ? this->rows : fit(this->rows, extentI);
    // A whole 64-column weight panel with 512-bit vectors: 6 rows x 64
    // columns (24 accumulators + 4 panel vectors + 1 broadcast of the 32
    // registers) read each panel row once per 6 rows, at 24 FMAs per 10
    // loads instead of 16.
    bool widePanel = op->hasAttr("kiln.packed_rhs") && this->columns >= 32 && mk.extents[mk.j] == 64;
    if (widePanel) {
      cols = 64;
      rows = 6;
      dynamicRows = true; // whole blocks, then the rest row by row
    }
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1], init = op.getDpsInits()[0];
    Value zero = c(0);
    OpOperand *forallInit = nullptr;
    std::optional<Value> start = constantAccumulatorStart(op, forallInit);
    // An operand's indices at an iteration point (`point`: a value per dim,
    // zero for the dims of extent 1), as arith ops; a dim alone is its value.
    auto indices = [&](OpBuilder &ib, AffineMap map, ArrayRef<Value> point) {
      SmallVector<Value> idx;
      for (AffineExpr e : map.getResults())
        idx.push_back(affine::expandAffineExpr(ib, loc, e, point, {}));
      return idx;
    };
    // The row extent: static, or the size of the output dim that i indexes.
    Value extent;
    if (!ShapedType::isDynamic(extentI)) {
      extent = c(extentI);
    } else {
      for (auto [pos, e] : llvm::enumerate(maps[2].getResults()))
        if (cast<AffineDimExpr>(e).getPosition() == mk.rowDims[0])
          extent = tensor::DimOp::create(b, loc, init, pos);
    }
    // Row `m` of the run as values of the row dims (the last varies fastest).
    auto setRow = [&](SmallVector<Value> &point, Value m) {
      for (int64_t k = mk.rowDims.size() - 1; k >= 0; --k) {
        int64_t d = mk.rowDims[k];
        if (k == 0) {
          point[d] = m;
          break;
        }
        point[d] = arith::RemUIOp::create(b, loc, m, c(mk.extents[d]));
        m = arith::DivUIOp::create(b, loc, m, c(mk.extents[d]));
      }
    };
    SmallVector<bool> inBounds = {true};
    Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    // The innermost reduction runs over [kLo, kHi): its whole extent, or one
    // chunk of it (see `reductionChunk` below); the outer ones whole.
    int64_t inner = mk.reductions.back();
    Value kLo = zero, kHi = c(mk.extents[inner]);
    // Rows [lb, ub) in blocks of `block` rows: for each block of `cols`
    // columns, the reduction streams one rhs vector and `block` lhs scalars per
    // step; the accumulators stay in registers as loop-carried values.
    auto emitRows = [&](Value lb, Value ub, int64_t block, Value carried) -> Value {
      // A single row (decoding: one token) has registers to spare: take up to
      // 64 columns per pass so each weight row segment is read in one go.
      int64_t blockCols = block == 1 ? fit(64, mk.extents[mk.j]) : cols;
      auto vecType = VectorType::get({blockCols}, b.getF32Type());
      auto rowLoop = scf::ForOp::create(b, loc, lb, ub, c(block), ValueRange{carried});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rowLoop.getBody());
      Value i0 = rowLoop.getInductionVar();
      // Each row's point (its row dims set), computed once per block.
      SmallVector<SmallVector<Value>> points(block, SmallVector<Value>(mk.extents.size(), zero));
      for (int64_t k = 0; k < block; ++k)
        setRow(points[k], arith::AddIOp::create(b, loc, i0, c(k)));
      auto colLoop = scf::ForOp::create(b, loc, c(0), c(mk.extents[mk.j]), c(blockCols),
                                        ValueRange{rowLoop.getRegionIterArg(0)});
      b.setInsertionPointToStart(colLoop.getBody());
      Value j0 = colLoop.getInductionVar();
      for (SmallVector<Value> &point : points)
        point[mk.j] = j0;
      Value acc = colLoop.getRegionIterArg(0);
      auto readAccs = [&](OpBuilder &rb) {
        SmallVector<Value> read;
        for (int64_t k = 0; k < block; ++k)
          read.push_back(vector::TransferReadOp::create(rb, loc, vecType, acc, indices(rb, maps[2], points[k]), pad,
                                                        inBounds));
        return read;
      };
      SmallVector<Value> accs;
      if (!start) {
        accs = readAccs(b);
      } else {
        // Registers start from the fill's constant: in the first reduction
        // chunk (or the only one) instead of reading the output.
        Value splat = vector::BroadcastOp::create(b, loc, vecType, *start);
        SmallVector<Value> splats(block, splat);
        if (kLo == zero) {
          accs = splats;
        } else {
          Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kLo, zero);
          SmallVector<Type> types(block, vecType);
          auto branch = scf::IfOp::create(b, loc, types, first, /*withElseRegion=*/true);
          OpBuilder tb = branch.getThenBodyBuilder();
          scf::YieldOp::create(tb, loc, splats);
          OpBuilder eb = branch.getElseBodyBuilder();
          scf::YieldOp::create(eb, loc, readAccs(eb));
          accs.assign(branch.getResults().begin(), branch.getResults().end());
        }
      }
      // The reduction loops, outermost first, carrying the accumulators.
      SmallVector<scf::ForOp> loops;
      ValueRange carriedAccs = accs;
      OpBuilder rb = b;
      for (int64_t r : mk.reductions) {
        bool last = r == inner;
        auto rc = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rb, loc, v); };
        auto loop = scf::ForOp::create(rb, loc, last ? kLo : rc(0), last ? kHi : rc(mk.extents[r]), rc(1),
                                       carriedAccs);
        for (SmallVector<Value> &point : points)
          point[r] = loop.getInductionVar();
        if (!loops.empty())
          scf::YieldOp::create(rb, loc, loop.getResults());
        loops.push_back(loop);
        carriedAccs = loop.getRegionIterArgs();
        rb = OpBuilder::atBlockBegin(loop.getBody());
      }
      Value bv = vector::TransferReadOp::create(rb, loc, vecType, rhs, indices(rb, maps[1], points[0]), pad,
                                                inBounds);
      SmallVector<Value> next;
      for (int64_t k = 0; k < block; ++k) {
        Value a = tensor::ExtractOp::create(rb, loc, lhs, indices(rb, maps[0], points[k]));
        Value av = vector::BroadcastOp::create(rb, loc, vecType, a);
        next.push_back(vector::FMAOp::create(rb, loc, av, bv, carriedAccs[k]));
      }
      scf::YieldOp::create(rb, loc, next);
      Value result = acc;
      for (int64_t k = 0; k < block; ++k)
        result = vector::TransferWriteOp::create(b, loc, loops.front().getResult(k), result,
                                                 indices(b, maps[2], points[k]), inBounds)
                     .getResult();
      scf::YieldOp::create(b, loc, result);
      b.setInsertionPointAfter(colLoop);
      scf::YieldOp::create(b, loc, colLoop.getResult(0));
      return rowLoop.getResult(0);
    };
    auto emitAllRows = [&](Value carried) -> Value {
      if (!dynamicRows)
        return emitRows(zero, extent, rows, carried);
      // Whole blocks of `rows`, then pairs, then a last single row: a lone
      // row streams the whole weight block for few FMAs, so pair them up.
      Value whole = arith::SubIOp::create(b, loc, extent, arith::RemSIOp::create(b, loc, extent, c(rows)));
      Value result = emitRows(zero, whole, rows, carried);
      if (rows > 2) {
        Value left = arith::SubIOp::create(b, loc, extent, whole);
        Value pairs = arith::SubIOp::create(b, loc, extent, arith::RemSIOp::create(b, loc, left, c(2)));
        result = emitRows(whole, pairs, 2, result);
        whole = pairs;
      }
      return emitRows(whole, extent, 1, result);
    };
    // A long reduction (a 3x3 convolution over 512 channels: 4608 steps) is
    // split into chunks, each run over all the tile's rows before the next:
    // one chunk of the rows' lhs and of the panel stays in cache while every
    // row block reuses it, where streaming the whole reduction per row block
    // brought both from L3 (resnet's last stage ran at 41 GFLOP/s). An
    // implicit convolution's chunks are runs of its innermost reduction (a
    // window row's taps and channels), each taken over the outer ones (the
    // window's rows). A chunk size that divides the extent is preferred. The
    // order in which an output adds its products depends only on the tile's
    // shape, not on its rows, so every row of a batch gets the same bits.
    int64_t extentR = mk.extents[inner];
    int64_t chunk = mk.reductions.size() > 1 ? convInnerChunk : reductionChunk;
    for (int64_t c = chunk; c > chunk / 2; --c)
      if (extentR % c == 0) {
        chunk = c;
        break;
      }
    Value result;
    if (chunk <= 0 || extentR <= 2 * chunk) {
      result = emitAllRows(init);
    } else {
      auto chunkLoop = scf::ForOp::create(b, loc, zero, c(extentR), c(chunk), ValueRange{init});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(chunkLoop.getBody());
      kLo = chunkLoop.getInductionVar();
      kHi = arith::MinSIOp::create(b, loc, arith::AddIOp::create(b, loc, kLo, c(chunk)), c(extentR));
      scf::YieldOp::create(b, loc, emitAllRows(chunkLoop.getRegionIterArg(0)));
      result = chunkLoop.getResult(0);
    }
    op.getResult(0).replaceAllUsesWith(result);
    op.erase();
    if (start) {
      // The forall's output needs no filling: take the fill's own destination.
      auto fill = forallInit->get().getDefiningOp<linalg::FillOp>();
      forallInit->set(fill.getOutputs()[0]);
      if (fill->use_empty())
        fill->erase();
    }
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Microkernel>> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op->hasAttr("kiln.tile_sizes"))
        return;
      if (auto mk = match(op))
        found.push_back({op, *mk});
    });
    for (auto &[op, mk] : found)
      rewrite(op, mk);
  }
};
} // namespace
} // namespace kiln
