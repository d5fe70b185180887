// Estimates each kiln_cpu.launch's FLOPs and compulsory bytes, computed in the caller, for the profiler.
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_COUNTKERNELCOSTPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Lanes of a value's type: a vector's element count, else 1.
int64_t lanes(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements();
  return 1;
}

bool isFloatLike(Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); }

/// Floating-point operations of one execution of `op` itself (not its regions).
int64_t opFlops(Operation *op) {
  if (op->getNumResults() == 0)
    return 0;
  Type t = op->getResult(0).getType();
  if (isa<vector::FMAOp, math::FmaOp>(op))
    return isFloatLike(t) ? 2 * lanes(t) : 0;
  if (auto outer = dyn_cast<vector::OuterProductOp>(op))
    return lanes(t) * (outer.getAcc() ? 2 : 1);
  if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
    if (!isFloatLike(t) && !isFloatLike(contract.getLhs().getType()))
      return 0;
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    int64_t n = 2;
    for (int64_t s : bounds)
      n *= s;
    return n;
  }
  if (auto red = dyn_cast<vector::ReductionOp>(op))
    return isFloatLike(t) ? lanes(red.getVector().getType()) : 0;
  if (auto red = dyn_cast<vector::MultiDimReductionOp>(op))
    return isFloatLike(t) ? lanes(red.getSource().getType()) : 0;
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, arith::RemFOp, arith::MaximumFOp,
          arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp, arith::NegFOp>(op))
    return lanes(t);
  // A float compare: how max, ReLU and clamps look once lowered (cmpf + select).
  if (auto cmp = dyn_cast<arith::CmpFOp>(op))
    return lanes(cmp.getLhs().getType());
  if (isa_and_nonnull<math::MathDialect>(op->getDialect()) && isFloatLike(t))
    return lanes(t);
  return 0;
}

struct CostBuilder {
  cpu::LaunchOp launch;
  OpBuilder b; // in @main, just before the launch
  IRMapping hoisted;

  // Values that depend on the work item are taken at item 0: an edge tile's
  // affine.min(T, n - item * T) is then min(T, n), exact when a dim fits in
  // one tile (a decode step's single row) and the full tile otherwise.
  CostBuilder(cpu::LaunchOp launch) : launch(launch), b(launch) {
    Block &body = launch.getBody().front();
    if (body.getNumArguments() == 1)
      hoisted.map(body.getArgument(0),
                  arith::ConstantOp::create(b, launch.getLoc(), b.getIntegerAttr(body.getArgument(0).getType(), 0)));
  }

  bool isInside(Value v) { return launch.getBody().isAncestor(v.getParentRegion()); }

  Value index(int64_t c) { return arith::ConstantIndexOp::create(b, launch.getLoc(), c); }

  /// `v` as a value of @main before the launch: itself when defined outside,
  /// else a copy of its computation when that is pure and uses only values
  /// from outside (no induction variable or work item); null otherwise.
  Value materialize(Value v) {
    if (!isInside(v))
      return v;
    if (Value m = hoisted.lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    if (!def)
      return nullptr; // an induction variable
    // Integer division is not speculatable (its divisor may be 0), but the
    // copy's divisor is clamped to at least 1 below.
    const bool division = isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp, arith::CeilDivSIOp,
                              arith::CeilDivUIOp, arith::FloorDivSIOp>(def);
    if (def->getNumRegions() != 0 || !(isPure(def) || (division && isMemoryEffectFree(def))))
      return nullptr;
    for (Value operand : def->getOperands())
      if (!materialize(operand))
        return nullptr;
    Operation *copy = b.clone(*def, hoisted);
    if (division) {
      Value divisor = copy->getOperand(1);
      OpBuilder before(copy);
      Value one = arith::ConstantOp::create(before, launch.getLoc(), b.getIntegerAttr(divisor.getType(), 1));
      copy->setOperand(1, arith::MaxSIOp::create(before, launch.getLoc(), divisor, one));
    }
    return copy->getResult(cast<OpResult>(v).getResultNumber());
  }

  /// A constant bound on an index value inside the body (UB closed).
  std::optional<int64_t> constBound(presburger::BoundType type, ValueBoundsConstraintSet::Variable var) {
    auto bound = ValueBoundsConstraintSet::computeConstantBound(type, var, nullptr, /*closedUB=*/true);
    if (failed(bound))
      return std::nullopt;
    return *bound;
  }

  /// Trip count of a loop dim as an index value in @main: exact when its
  /// bounds come from outside the launch, else from constant bounds of
  /// `ub - lb` (an edge tile's affine.min counts as the full tile). When no
  /// bound is found the loop counts once.
  Value tripCount(Value lb, Value ub, Value step) {
    Location loc = launch.getLoc();
    if (!lb.getType().isIndex() || !ub.getType().isIndex() || !step.getType().isIndex()) {
      // An integer-typed loop: exact when all three come from outside, else once.
      Value l = materialize(lb), u = materialize(ub), st = materialize(step);
      if (!l || !u || !st)
        return index(1);
      auto toIndex = [&](Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v); };
      Value trip = arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, toIndex(u), toIndex(l)),
                                              toIndex(st));
      return arith::MaxSIOp::create(b, loc, trip, index(0));
    }
    Value st = materialize(step);
    if (!st)
      return index(1);
    Value mlb = materialize(lb), mub = materialize(ub), span;
    if (mlb && mub) {
      span = arith::SubIOp::create(b, loc, mub, mlb);
    } else if (mub) {
      if (auto lo = constBound(presburger::BoundType::LB, ValueBoundsConstraintSet::Variable(lb)))
        span = arith::SubIOp::create(b, loc, mub, index(*lo));
    } else if (mlb) {
      if (auto hi = constBound(presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(ub)))
        span = arith::SubIOp::create(b, loc, index(*hi), mlb);
    } else {
      AffineMap diff = AffineMap::get(2, 0, getAffineDimExpr(0, b.getContext()) - getAffineDimExpr(1, b.getContext()));
      auto d = constBound(presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(diff, ValueRange{ub, lb}));
      if (!d) {
        auto hi = constBound(presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(ub));
        auto lo = constBound(presburger::BoundType::LB, ValueBoundsConstraintSet::Variable(lb));
        if (hi && lo)
          d = *hi - *lo;
      }
      if (d)
        span = index(*d);
    }
    if (!span && mlb) {
      // A tail tile written min(n - iv, T) (the attention kernel's key tiles):
      // ValueBounds does not see through it; the full tile T bounds it.
      Operation *def = ub.getDefiningOp();
      if (isa_and_nonnull<arith::MinSIOp, arith::MinUIOp>(def))
        for (Value operand : def->getOperands())
          if (auto c = getConstantIntValue(operand))
            span = arith::SubIOp::create(b, loc, index(*c), mlb);
    }
    if (!span) {
      // A chunk [lb, min(lb + C, n)) of a reduction split into chunks (the
      // microkernel's cache blocking): C bounds it.
      if (auto min = ub.getDefiningOp<arith::MinSIOp>())
        for (Value operand : min->getOperands())
          if (auto sum = operand.getDefiningOp<arith::AddIOp>(); sum && sum.getLhs() == lb)
            if (auto c = getConstantIntValue(sum.getRhs()))
              span = index(*c);
    }
    if (!span)
      return index(1);
    Value trip = arith::CeilDivSIOp::create(b, loc, span, st);
    return arith::MaxSIOp::create(b, loc, trip, index(0));
  }

  Value add(Value a, Value c) { return arith::AddIOp::create(b, launch.getLoc(), a, c); }
  Value mul(Value a, Value c) { return arith::MulIOp::create(b, launch.getLoc(), a, c); }

  /// FLOPs of one execution of `block`.
  Value blockFlops(Block &block) {
    Value total = index(0);
    int64_t direct = 0;
    for (auto it = block.begin(); it != block.end(); ++it) {
      Operation *op = &*it;
      direct += opFlops(op);
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        // A loop split into a main loop and remainder loops (each starting
        // where the previous ends, like the microkernel's row blocks, with
        // only index arithmetic between them) counts as the main loop over
        // the whole range.
        Value ub = loop.getUpperBound();
        bool split = false;
        for (auto next = std::next(it); next != block.end(); ++next) {
          if (auto rest = dyn_cast<scf::ForOp>(&*next)) {
            if (rest.getLowerBound() != ub)
              break;
            ub = rest.getUpperBound();
            it = next;
            split = true;
            continue;
          }
          if (next->getNumRegions() != 0 || !isPure(&*next) || opFlops(&*next) != 0)
            break;
        }
        Value body = blockFlops(*loop.getBody());
        Value step = split ? materialize(loop.getStep()) : Value();
        if (step) {
          // The main loop's body covers `step` iterations of the range: count
          // body / step per iteration of the whole range (a 7-row tile of
          // 8-row blocks counts 7 rows, not 8).
          Value span = tripCount(loop.getLowerBound(), ub, index(1));
          Value perStep = arith::MaxSIOp::create(b, launch.getLoc(), step, index(1));
          total = add(total, arith::DivSIOp::create(b, launch.getLoc(), mul(span, body), perStep));
        } else {
          total = add(total, mul(tripCount(loop.getLowerBound(), ub, loop.getStep()), body));
        }
      } else if (auto par = dyn_cast<scf::ParallelOp>(op)) {
        Value n = blockFlops(*par.getBody());
        for (int64_t j = 0; j < par.getNumLoops(); ++j)
          n = mul(n, tripCount(par.getLowerBound()[j], par.getUpperBound()[j], par.getStep()[j]));
        total = add(total, n);
      } else if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
        // The costlier branch.
        Value t = blockFlops(ifOp.getThenRegion().front());
        Value e = ifOp.getElseRegion().empty() ? index(0) : blockFlops(ifOp.getElseRegion().front());
        total = add(total, arith::MaxSIOp::create(b, launch.getLoc(), t, e));
      } else {
        // Any other region runs once.
        for (Region &r : op->getRegions())
          for (Block &inner : r)
            total = add(total, blockFlops(inner));
      }
    }
    return add(total, index(direct));
  }

  /// The memref defined outside the launch that `v` (a memref used inside) views, or null.
  Value capturedMemref(Value v) {
    while (isInside(v)) {
      Operation *def = v.getDefiningOp();
      if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(def))
        v = view.getViewSource();
      else if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
        v = cast.getSource();
      else
        return nullptr; // an alloca or block argument of the body: scratch, not traffic
    }
    return v;
  }

  /// Bytes of the distinct memrefs from outside the launch that its body reads or writes.
  Value compulsoryBytes() {
    llvm::SetVector<Value> touched;
    launch.getBody().walk([&](MemoryEffectOpInterface iface) {
      SmallVector<MemoryEffects::EffectInstance> effects;
      iface.getEffects(effects);
      for (auto &e : effects) {
        if (!isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
          continue;
        Value v = e.getValue();
        if (!v || !isa<MemRefType>(v.getType()))
          continue;
        if (Value root = capturedMemref(v))
          touched.insert(root);
      }
    });
    Location loc = launch.getLoc();
    Value total = index(0);
    for (Value m : touched) {
      auto type = cast<MemRefType>(m.getType());
      Type elem = type.getElementType();
      int64_t bits = 0;
      if (elem.isIndex())
        bits = 64;
      else if (elem.isIntOrFloat())
        bits = elem.getIntOrFloatBitWidth();
      else if (auto v = dyn_cast<VectorType>(elem); v && v.getElementType().isIntOrFloat())
        bits = v.getNumElements() * v.getElementType().getIntOrFloatBitWidth();
      if (bits == 0)
        continue;
      Value size = index((bits + 7) / 8);
      for (int64_t d = 0; d < type.getRank(); ++d)
        size = mul(size, type.isDynamicDim(d) ? (Value)memref::DimOp::create(b, loc, m, d)
                                              : index(type.getDimSize(d)));
      total = add(total, size);
    }
    return total;
  }

  void run() {
    Location loc = launch.getLoc();
    Type i64 = b.getI64Type();
    Value perItem = blockFlops(launch.getBody().front());
    Value items = arith::IndexCastOp::create(b, loc, b.getIndexType(), launch.getCount());
    Value flops = mul(items, perItem);
    launch.getFlopsMutable().set(arith::IndexCastOp::create(b, loc, i64, flops));
    launch.getBytesMutable().set(arith::IndexCastOp::create(b, loc, i64, compulsoryBytes()));
  }
};

struct CountKernelCostPass : impl::CountKernelCostPassBase<CountKernelCostPass> {
  void runOnOperation() override {
    getOperation().walk([](cpu::LaunchOp launch) { CostBuilder(launch).run(); });
  }
};
} // namespace
} // namespace kiln
