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
  if (llvm::any_of(mk.extents, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<int64_t> parallel, reduction;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(d);
  if (reduction.size() != 1 || parallel.size() < 2)
    return std::nullopt;
  mk.r = reduction[0];
  mk.j = parallel.back();
  mk.i = parallel[parallel.size() - 2];
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
    int64_t rows = fit(this->rows, mk.extents[mk.i]);
    int64_t cols = fit(this->columns, mk.extents[mk.j]);
    if (cols < 4)
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1], init = op.getDpsInits()[0];
    auto vecType = VectorType::get({cols}, b.getF32Type());
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
    SmallVector<bool> inBounds = {true};
    auto rowLoop = scf::ForOp::create(b, loc, c(0), c(mk.extents[mk.i]), c(rows), ValueRange{init});
    b.setInsertionPointToStart(rowLoop.getBody());
    Value i0 = rowLoop.getInductionVar();
    auto colLoop = scf::ForOp::create(b, loc, c(0), c(mk.extents[mk.j]), c(cols),
                                      ValueRange{rowLoop.getRegionIterArg(0)});
    b.setInsertionPointToStart(colLoop.getBody());
    Value j0 = colLoop.getInductionVar();
    Value acc = colLoop.getRegionIterArg(0);
    SmallVector<Value> rowIdx, accs;
    Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    for (int64_t k = 0; k < rows; ++k) {
      rowIdx.push_back(arith::AddIOp::create(b, loc, i0, c(k)));
      accs.push_back(vector::TransferReadOp::create(
          b, loc, vecType, acc, indices(maps[2], rowIdx[k], j0, zero), pad, inBounds));
    }
    // The reduction streams one rhs vector and `rows` lhs scalars per step;
    // the accumulators stay in registers as loop-carried values.
    auto redLoop = scf::ForOp::create(b, loc, c(0), c(mk.extents[mk.r]), c(1), accs);
    {
      OpBuilder rb = OpBuilder::atBlockBegin(redLoop.getBody());
      Value r = redLoop.getInductionVar();
      Value bv = vector::TransferReadOp::create(rb, loc, vecType, rhs,
                                                indices(maps[1], zero, j0, r), pad, inBounds);
      SmallVector<Value> next;
      for (int64_t k = 0; k < rows; ++k) {
        Value a = tensor::ExtractOp::create(rb, loc, lhs, indices(maps[0], rowIdx[k], zero, r));
        Value av = vector::BroadcastOp::create(rb, loc, vecType, a);
        next.push_back(vector::FMAOp::create(rb, loc, av, bv, redLoop.getRegionIterArg(k)));
      }
      scf::YieldOp::create(rb, loc, next);
    }
    Value result = acc;
    for (int64_t k = 0; k < rows; ++k)
      result = vector::TransferWriteOp::create(b, loc, redLoop.getResult(k), result,
                                               indices(maps[2], rowIdx[k], j0, zero), inBounds)
                   .getResult();
    scf::YieldOp::create(b, loc, result);
    b.setInsertionPointAfter(colLoop);
    scf::YieldOp::create(b, loc, colLoop.getResult(0));
    op.getResult(0).replaceAllUsesWith(rowLoop.getResult(0));
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
