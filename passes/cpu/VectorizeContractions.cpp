// Rewrites each cache tile of a contraction into a register-blocked outer-product microkernel.
#include "passes/cpu/Passes.h"

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
/// other dim has extent 1 in the tile.
struct Microkernel {
  int64_t i = -1, j = -1, r = -1;
  SmallVector<int64_t> extents;
};

bool usesDim(AffineMap map, int64_t d) {
  return map.isFunctionOfDim(d);
}

std::optional<Microkernel> match(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return std::nullopt;
  Microkernel mk;
  mk.extents = op.getStaticLoopRanges();
  SmallVector<int64_t> parallel, reduction;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(d);
  if (reduction.size() != 1 || parallel.size() < 2)
    return std::nullopt;
  mk.r = reduction[0];
  mk.j = parallel.back();
  // The row dim: the innermost other parallel dim that the lhs reads and the
  // rhs does not (a packed rhs adds a panel dim between rows and columns).
  SmallVector<AffineMap> indexing = op.getIndexingMapsArray();
  for (int64_t d : llvm::reverse(ArrayRef<int64_t>(parallel).drop_back()))
    if (usesDim(indexing[0], d) && !usesDim(indexing[1], d)) {
      mk.i = d;
      break;
    }
  if (mk.i < 0)
    return std::nullopt;
  // Only the row extent may be dynamic (the edge tile of a dynamic batch or sequence).
  for (auto [d, e] : llvm::enumerate(mk.extents))
    if (ShapedType::isDynamic(e) && int64_t(d) != mk.i)
      return std::nullopt;
  for (int64_t d : parallel)
    if (d != mk.i && d != mk.j && mk.extents[d] != 1)
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (AffineMap m : maps)
    if (!m.isProjectedPermutation())
      return std::nullopt;
  AffineMap lhs = maps[0], rhs = maps[1], out = maps[2];
  auto lastIs = [](AffineMap m, int64_t d) {
    return m.getNumResults() > 0 && m.getResults().back() == getAffineDimExpr(d, m.getContext());
  };
  if (!lastIs(out, mk.j) || !lastIs(rhs, mk.j) || usesDim(lhs, mk.j) || usesDim(rhs, mk.i) ||
      !usesDim(lhs, mk.i) || !usesDim(lhs, mk.r) || !usesDim(rhs, mk.r))
    return std::nullopt;
  // Body: yield(acc + a * b) in f32.
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3 || !body.getArgument(2).getType().isF32())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  auto mul = add ? add.getRhs().getDefiningOp<arith::MulFOp>() : nullptr;
  if (!add || !mul || add.getLhs() != body.getArgument(2) ||
      mul.getLhs() != body.getArgument(0) || mul.getRhs() != body.getArgument(1))
    return std::nullopt;
  return mk;
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
    // A static extent that the block does not divide (the 49 positions of a
    // 7x7 map) takes whole blocks and then the rest, as a dynamic one does:
    // fitting the block to the extent would leave blocks of one row, each
    // streaming the whole weight panel for a single row's FMAs.
    int64_t extentI = mk.extents[mk.i];
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
    // Indices of an operand at the iteration point {i, j, r} (others 0).
    auto indices = [&](AffineMap map, Value iv, Value jv, Value rv) {
      SmallVector<Value> idx;
      for (AffineExpr e : map.getResults()) {
        int64_t d = cast<AffineDimExpr>(e).getPosition();
        idx.push_back(d == mk.i ? iv : d == mk.j ? jv : d == mk.r ? rv : zero);
      }
      return idx;
    };
    // The row extent: static, or the size of the output dim that i indexes.
    Value extent;
    if (!ShapedType::isDynamic(mk.extents[mk.i])) {
      extent = c(mk.extents[mk.i]);
    } else {
      for (auto [pos, e] : llvm::enumerate(maps[2].getResults()))
        if (cast<AffineDimExpr>(e).getPosition() == mk.i)
          extent = tensor::DimOp::create(b, loc, init, pos);
    }
    SmallVector<bool> inBounds = {true};
    Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
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
      auto colLoop = scf::ForOp::create(b, loc, c(0), c(mk.extents[mk.j]), c(blockCols),
                                        ValueRange{rowLoop.getRegionIterArg(0)});
      b.setInsertionPointToStart(colLoop.getBody());
      Value j0 = colLoop.getInductionVar();
      Value acc = colLoop.getRegionIterArg(0);
      SmallVector<Value> rowIdx, accs;
      for (int64_t k = 0; k < block; ++k) {
        rowIdx.push_back(arith::AddIOp::create(b, loc, i0, c(k)));
        accs.push_back(vector::TransferReadOp::create(
            b, loc, vecType, acc, indices(maps[2], rowIdx[k], j0, zero), pad, inBounds));
      }
      auto redLoop = scf::ForOp::create(b, loc, c(0), c(mk.extents[mk.r]), c(1), accs);
      {
        OpBuilder rb = OpBuilder::atBlockBegin(redLoop.getBody());
        Value r = redLoop.getInductionVar();
        Value bv = vector::TransferReadOp::create(rb, loc, vecType, rhs,
                                                  indices(maps[1], zero, j0, r), pad, inBounds);
        SmallVector<Value> next;
        for (int64_t k = 0; k < block; ++k) {
          Value a = tensor::ExtractOp::create(rb, loc, lhs, indices(maps[0], rowIdx[k], zero, r));
          Value av = vector::BroadcastOp::create(rb, loc, vecType, a);
          next.push_back(vector::FMAOp::create(rb, loc, av, bv, redLoop.getRegionIterArg(k)));
        }
        scf::YieldOp::create(rb, loc, next);
      }
      Value result = acc;
      for (int64_t k = 0; k < block; ++k)
        result = vector::TransferWriteOp::create(b, loc, redLoop.getResult(k), result,
                                                 indices(maps[2], rowIdx[k], j0, zero), inBounds)
                     .getResult();
      scf::YieldOp::create(b, loc, result);
      b.setInsertionPointAfter(colLoop);
      scf::YieldOp::create(b, loc, colLoop.getResult(0));
      return rowLoop.getResult(0);
    };
    Value result;
    if (!dynamicRows) {
      result = emitRows(zero, extent, rows, init);
    } else {
      // Whole blocks of `rows`, then pairs, then a last single row: a lone
      // row streams the whole weight block for few FMAs, so pair them up.
      Value whole = arith::SubIOp::create(b, loc, extent, arith::RemSIOp::create(b, loc, extent, c(rows)));
      result = emitRows(zero, whole, rows, init);
      if (rows > 2) {
        Value left = arith::SubIOp::create(b, loc, extent, whole);
        Value pairs = arith::SubIOp::create(b, loc, extent, arith::RemSIOp::create(b, loc, left, c(2)));
        result = emitRows(whole, pairs, 2, result);
        whole = pairs;
      }
      result = emitRows(whole, extent, 1, result);
    }
    op.getResult(0).replaceAllUsesWith(result);
    op.erase();
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
