// Turns @main's reductions with few outputs into launches of one block per output.
//
// kiln-form-gpu-launches gives each output of a reduction one thread, which
// then loops over the whole reduced extent alone. That is right when there
// are many outputs, but a softmax over 1536 rows, a decode step's
// matrix-vector product or a global pool has too few of them to fill the
// GPU (an H200 keeps about 270,000 threads resident), and each thread reads
// its row on its own. Here the threads of a block share one output: each
// folds a strided slice of the reduced extent (neighbouring threads,
// neighbouring elements), then the block combines the partial values in
// shared memory, and its first thread folds the result into the output.
// The order of the combination changes, so floating-point sums round
// differently from the CPU path's sequential ones.
#include "passes/cuda/Passes.h"
#include "passes/cuda/LaunchUtils.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallBitVector.h"

namespace kiln {
#define GEN_PASS_DEF_FORMBLOCKREDUCTIONSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A reduced extent smaller than this stays one thread per output: the
/// block's combination would cost more than it spares.
constexpr int64_t kMinReduced = 64;
/// With at least this many outputs one thread each keeps the GPU busy enough.
constexpr int64_t kMaxOutputs = 32768;
/// Threads per block at most (a power of two, for the halving combination).
constexpr int64_t kMaxThreads = 256;
/// With many outputs, a warp per output when each reduces at least this many elements along
/// the last index (neighbouring lanes, neighbouring elements).
constexpr int64_t kWarp = 32;

/// A reduction loop nest: an optional scf.parallel over the outputs, around
/// perfectly nested scf.for loops over the reduced dims whose body loads the
/// output element, combines it with one value and stores it back.
struct Reduction {
  Operation *root;              // the scf.parallel, or the outermost scf.for when there is no output loop
  scf::ParallelOp outputs;      // null for a reduction to one element
  SmallVector<scf::ForOp> loops; // outermost first
  memref::LoadOp accumulator;
  memref::StoreOp store;
  Operation *combine;      // its result is stored
  Operation *compare;      // the arith.cmpf a select-form min or max chooses by, or null
  Value value;             // what is folded into the accumulator
  Operation *fill = nullptr; // the loop nest (or store) right before that sets every output
  Value fillValue;           // to this value, from outside it or computed in its body:
  scf::ParallelOp fillLoop;  // then the fill's loop, whose body the first thread runs for its output
};

/// Whether `select` is max(a, b) (true) or min(a, b) (false) written as a compare and a
/// select of the compared values, as kiln's lowering writes float max and min (a single
/// vmaxps on x86); nullopt for another select.
std::optional<bool> selectIsMax(arith::SelectOp select) {
  auto compare = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!compare)
    return std::nullopt;
  Value p = select.getTrueValue(), q = select.getFalseValue();
  bool same = compare.getLhs() == p && compare.getRhs() == q, swapped = compare.getLhs() == q && compare.getRhs() == p;
  if (!same && !swapped)
    return std::nullopt;
  bool greater;
  switch (compare.getPredicate()) {
  case arith::CmpFPredicate::OGT: case arith::CmpFPredicate::OGE:
  case arith::CmpFPredicate::UGT: case arith::CmpFPredicate::UGE:
    greater = true;
    break;
  case arith::CmpFPredicate::OLT: case arith::CmpFPredicate::OLE:
  case arith::CmpFPredicate::ULT: case arith::CmpFPredicate::ULE:
    greater = false;
    break;
  default:
    return std::nullopt;
  }
  // select(p > q, p, q) is max; swapping the compared values or the comparison makes it min.
  return greater == same;
}

/// The value that leaves `x` unchanged under `combine`, or null for an op that is not a
/// commutative, associative combination kiln knows.
TypedAttr identity(Operation *combine, Type type) {
  if (auto f = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    std::optional<llvm::APFloat> v;
    if (isa<arith::AddFOp>(combine))
      v = llvm::APFloat::getZero(sem, /*Negative=*/true); // -0 + x is x, also for x = -0
    else if (isa<arith::MulFOp>(combine))
      v = llvm::APFloat::getOne(sem);
    else if (auto select = dyn_cast<arith::SelectOp>(combine); select && selectIsMax(select))
      v = llvm::APFloat::getInf(sem, /*Negative=*/*selectIsMax(select));
    else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combine))
      v = llvm::APFloat::getInf(sem, /*Negative=*/true);
    else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combine))
      v = llvm::APFloat::getInf(sem, /*Negative=*/false);
    return v ? FloatAttr::get(f, *v) : TypedAttr();
  }
  auto i = dyn_cast<IntegerType>(type);
  if (!i || i.getWidth() < 8) // no i1 accumulators in shared memory
    return {};
  unsigned w = i.getWidth();
  std::optional<llvm::APInt> v;
  if (isa<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(combine))
    v = llvm::APInt::getZero(w);
  else if (isa<arith::MulIOp>(combine))
    v = llvm::APInt(w, 1);
  else if (isa<arith::AndIOp, arith::MinUIOp>(combine))
    v = llvm::APInt::getAllOnes(w);
  else if (isa<arith::MaxSIOp>(combine))
    v = llvm::APInt::getSignedMinValue(w);
  else if (isa<arith::MinSIOp>(combine))
    v = llvm::APInt::getSignedMaxValue(w);
  return v ? IntegerAttr::get(i, *v) : TypedAttr();
}

/// Whether `v` is defined outside `op`, so a launch that replaces `op` can use it.
bool definedOutside(Value v, Operation *op) {
  Operation *def = v.getDefiningOp();
  return !op->isAncestor(def ? def : v.getParentRegion()->getParentOp());
}

/// The reduction `root` is, if it is one this pass can give blocks.
std::optional<Reduction> match(Operation *root) {
  Reduction r{root, dyn_cast<scf::ParallelOp>(root), {}, {}, {}, nullptr, nullptr, {}, nullptr, {}};
  scf::ForOp outer;
  if (r.outputs) {
    if (r.outputs.getNumResults() != 0)
      return std::nullopt;
    // Pure index arithmetic, then the loop nest.
    for (Operation &op : r.outputs.getBody()->without_terminator()) {
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && !outer)
        outer = loop;
      else if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op) || outer)
        return std::nullopt;
    }
  } else {
    outer = dyn_cast<scf::ForOp>(root);
  }
  if (!outer)
    return std::nullopt;
  for (scf::ForOp loop = outer; loop;) {
    if (loop.getNumResults() != 0 || !definedOutside(loop.getLowerBound(), root) ||
        !definedOutside(loop.getUpperBound(), root) || !definedOutside(loop.getStep(), root))
      return std::nullopt;
    r.loops.push_back(loop);
    Block *body = loop.getBody();
    auto next = dyn_cast<scf::ForOp>(body->front());
    loop = next && body->getOperations().size() == 2 ? next : scf::ForOp();
  }
  // The innermost body: one store, of combine(load of the same element, value).
  Block *body = r.loops.back().getBody();
  WalkResult walk = body->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (r.store || store->getBlock() != body)
        return WalkResult::interrupt();
      r.store = store;
      return WalkResult::advance();
    }
    if (isa<memref::LoadOp>(op) || isMemoryEffectFree(op) || op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    return effects && !effects.hasEffect<MemoryEffects::Write>() ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (walk.wasInterrupted() || !r.store)
    return std::nullopt;
  Value out = r.store.getMemRef();
  if (!definedOutside(out, root) || !llvm::all_of(r.store.getIndices(), [&](Value i) {
        return definedOutside(i, outer);
      }))
    return std::nullopt;
  r.combine = r.store.getValueToStore().getDefiningOp();
  if (!r.combine || r.combine->getBlock() != body || !r.combine->hasOneUse() ||
      !identity(r.combine, r.store.getValueToStore().getType()))
    return std::nullopt;
  // The two values combined: the operands, or a select's choices (its compare goes with it).
  SmallVector<Value, 2> combined(r.combine->getOperands());
  if (auto select = dyn_cast<arith::SelectOp>(r.combine)) {
    r.compare = select.getCondition().getDefiningOp();
    if (r.compare->getBlock() != body || !r.compare->hasOneUse())
      return std::nullopt;
    combined = {select.getTrueValue(), select.getFalseValue()};
  }
  if (combined.size() != 2 || combined[0] == combined[1])
    return std::nullopt;
  for (auto [i, operand] : llvm::enumerate(combined)) {
    auto load = operand.getDefiningOp<memref::LoadOp>();
    // The accumulator's only users are the combination (and its compare).
    bool onlyCombined = llvm::all_of(operand.getUsers(), [&](Operation *u) { return u == r.combine || u == r.compare; });
    if (load && load.getMemRef() == out && load.getIndices() == r.store.getIndices() && onlyCombined &&
        load->getBlock() == body) {
      r.accumulator = load;
      r.value = combined[1 - i];
      break;
    }
  }
  if (!r.accumulator)
    return std::nullopt;
  // The output is read only as the accumulator: another read would see partial results.
  for (Operation *user : out.getUsers())
    if (root->isAncestor(user) && user != r.accumulator && user != r.store)
      return std::nullopt;
  return r;
}

/// A loop bound as the size it stands for: a memref.dim of an expand_shape is the size the
/// expand_shape was given (a reduction's bounds come from its first operand, which may be a
/// reshaped view of the buffer whose dims its fill's bounds were read from).
Value boundSource(Value v) {
  for (int depth = 0; depth < 8; ++depth) {
    auto dim = v.getDefiningOp<memref::DimOp>();
    auto expand = dim ? dim.getSource().getDefiningOp<memref::ExpandShapeOp>() : nullptr;
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!expand || !index)
      return v;
    auto size = dyn_cast<Value>(expand.getMixedOutputShape()[*index]);
    if (!size)
      return v;
    v = size;
  }
  return v;
}

/// Whether `a` (in a loop with induction variables `aIvs`) and `b` (in one with `bIvs`) name the
/// same element for the same iteration: position by position the same constant, or induction
/// variables of the same rank in their loops, each of them once (an element per iteration).
bool sameElement(ValueRange a, ValueRange aIvs, ValueRange b, ValueRange bIvs) {
  if (a.size() != b.size() || aIvs.size() != bIvs.size())
    return false;
  llvm::SmallBitVector seen(aIvs.size());
  for (auto [x, y] : llvm::zip(a, b)) {
    auto ix = llvm::find(aIvs, x), iy = llvm::find(bIvs, y);
    if (ix != aIvs.end() || iy != bIvs.end()) {
      if (ix == aIvs.end() || iy == bIvs.end() || ix - aIvs.begin() != iy - bIvs.begin() ||
          seen.test(ix - aIvs.begin()))
        return false;
      seen.set(ix - aIvs.begin());
      continue;
    }
    std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
    if (!cx || !cy || *cx != *cy)
      return false;
  }
  return seen.all();
}

/// Whether two loops' bounds are the same sizes.
bool sameBounds(ValueRange a, ValueRange b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto p) { return boundSource(std::get<0>(p)) == boundSource(std::get<1>(p)); });
}

/// Finds `r`'s fill: right before it (host arithmetic between aside), a parallel loop over the
/// same outputs, or for one output a store, that stores one value into each output `r` reduces
/// into: a value from outside, or (a parallel loop) one its body computes from loads and
/// arithmetic (a bias and a residual kiln-fold-reduction-addends started the sum from). The block
/// launch then starts its first thread from that value instead of reading the output, and the
/// fill's launch goes away. The first thread computes the value after the block's partial sums:
/// the loads must not see the reduction's writes, which holds since they read another buffer than
/// the output, or the output's own element, which only that thread writes (a buffer of the arena
/// aliasing the output elsewhere would break the fill's own loop as much, so the memory plan never
/// makes one).
void findFill(Reduction &r) {
  Operation *prev = r.root->getPrevNode();
  while (prev && prev->getNumRegions() == 0 && isMemoryEffectFree(prev))
    prev = prev->getPrevNode();
  if (!prev)
    return;
  Value out = r.store.getMemRef();
  memref::StoreOp store;
  if (r.outputs) {
    auto fill = dyn_cast<scf::ParallelOp>(prev);
    if (!fill || fill.getNumResults() != 0 || !sameBounds(fill.getLowerBound(), r.outputs.getLowerBound()) ||
        !sameBounds(fill.getUpperBound(), r.outputs.getUpperBound()) ||
        !sameBounds(fill.getStep(), r.outputs.getStep()))
      return;
    Operation *last = fill.getBody()->getTerminator()->getPrevNode();
    store = dyn_cast_or_null<memref::StoreOp>(last);
    // The same element for the same iteration (each writes every element once: the same bounds).
    if (!store || !sameElement(store.getIndices(), fill.getInductionVars(), r.store.getIndices(),
                               r.outputs.getInductionVars()))
      return;
    for (Operation &op : fill.getBody()->without_terminator()) {
      if (&op == last)
        continue;
      auto load = dyn_cast<memref::LoadOp>(op);
      if (load ? load.getMemRef() == out && !llvm::equal(load.getIndices(), store.getIndices())
               : op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
        return;
    }
    if (store.getMemRef() != out)
      return;
    if (!definedOutside(store.getValueToStore(), prev))
      r.fillLoop = fill;
  } else {
    store = dyn_cast<memref::StoreOp>(prev);
    if (!store || !llvm::equal(store.getIndices(), r.store.getIndices()) || store.getMemRef() != out ||
        !definedOutside(store.getValueToStore(), prev))
      return;
  }
  r.fill = prev;
  r.fillValue = store.getValueToStore();
}

/// Whether the innermost reduced dim walks the last index of a buffer the body reads, so the
/// threads of a block read neighbouring elements.
bool readsAlongLastIndex(Reduction &r) {
  Value iv = r.loops.back().getInductionVar();
  bool found = false;
  r.loops.back().getBody()->walk([&](memref::LoadOp load) {
    if (load != r.accumulator && !load.getIndices().empty() && load.getIndices().back() == iv)
      found = true;
  });
  return found;
}

/// Whether `op` runs on the host after kiln-form-gpu-launches: every op around it is host
/// control flow around kernels.
bool onHost(Operation *op, func::FuncOp main) {
  for (Operation *p = op->getParentOp(); p && p != main; p = p->getParentOp())
    if (isa<scf::ParallelOp, gpu::LaunchOp>(p) || !cuda::containsKernels(p) || cuda::accessesMemoryOutsideKernels(p))
      return false;
  return true;
}

struct FormBlockReductionsPass : impl::FormBlockReductionsPassBase<FormBlockReductionsPass> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main)
      return;
    SmallVector<Reduction> found;
    main.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (!isa<scf::ParallelOp, scf::ForOp>(op))
        return WalkResult::advance();
      if (onHost(op, main))
        if (std::optional<Reduction> r = match(op)) {
          found.push_back(*r);
          return WalkResult::skip();
        }
      // A parallel loop is a kernel of its own; a host loop may hold reductions.
      return isa<scf::ParallelOp>(op) ? WalkResult::skip() : WalkResult::advance();
    });
    for (Reduction &r : found)
      rewrite(r);
  }

  /// Launches one block per output where the sizes say it pays, one thread per output (the loop
  /// nest as it was, for kiln-form-gpu-launches) otherwise; when the sizes are only known at run
  /// time, the host picks.
  void rewrite(Reduction &r) {
    OpBuilder b(r.root);
    Location loc = r.root->getLoc();
    SmallVector<Value> outputTrips, reducedTrips;
    Value outputs = arith::ConstantIndexOp::create(b, loc, 1);
    if (r.outputs)
      for (auto [lb, ub, step] : llvm::zip(r.outputs.getLowerBound(), r.outputs.getUpperBound(), r.outputs.getStep())) {
        outputTrips.push_back(cuda::tripCount(b, loc, lb, ub, step));
        outputs = b.createOrFold<arith::MulIOp>(loc, outputs, outputTrips.back());
      }
    Value reduced = arith::ConstantIndexOp::create(b, loc, 1);
    for (scf::ForOp loop : r.loops) {
      reducedTrips.push_back(cuda::tripCount(b, loc, loop.getLowerBound(), loop.getUpperBound(), loop.getStep()));
      reduced = b.createOrFold<arith::MulIOp>(loc, reduced, reducedTrips.back());
    }
    // Few outputs: a block each (unless the rows are short). Many outputs along the last index: a
    // warp each. Many outputs down strided columns: one thread each, whose neighbours read
    // neighbouring columns.
    std::optional<int64_t> staticOutputs = getConstantIntValue(outputs), staticReduced = getConstantIntValue(reduced);
    bool contiguous = readsAlongLastIndex(r);
    bool fewOutputs = staticOutputs && *staticOutputs < kMaxOutputs;
    bool manyOutputs = staticOutputs && *staticOutputs >= kMaxOutputs;
    bool blocksFit = (contiguous || fewOutputs) && !manyOutputs && !(staticReduced && *staticReduced < kMinReduced);
    bool warpsFit = r.outputs && contiguous && !fewOutputs && !(staticReduced && *staticReduced < kWarp);
    if (!blocksFit && !warpsFit)
      return;
    int64_t threads = kMaxThreads;
    if (staticReduced)
      threads = std::min<int64_t>(kMaxThreads, llvm::PowerOf2Ceil(*staticReduced));
    findFill(r);
    // Sizes known when compiling: one launch. A reduction to one element would otherwise be a
    // one-thread launch: a block is never slower by much, so it needs no choice at run time
    // (which, around a one-thread launch, would put the block launch inside it).
    if ((staticOutputs && staticReduced) || !r.outputs) {
      if (blocksFit)
        launchBlocks(b, r, outputs, outputTrips, reduced, reducedTrips, threads, threads);
      else
        launchBlocks(b, r, outputs, outputTrips, reduced, reducedTrips, kMaxThreads, kWarp);
      r.root->erase();
      if (r.fill)
        r.fill->erase();
      return;
    }
    // Sizes known at run time: the host picks a block per output, a warp per output, or the
    // loop nest as it was (with its fill, for kiln-form-gpu-launches' one thread per output).
    auto atLeast = [&](Value v, int64_t n) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v, arith::ConstantIndexOp::create(b, loc, n));
    };
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    if (blocksFit) {
      Value pick = yes;
      if (!staticOutputs)
        pick = arith::XOrIOp::create(b, loc, atLeast(outputs, kMaxOutputs), yes);
      if (!staticReduced)
        pick = arith::AndIOp::create(b, loc, pick, atLeast(reduced, kMinReduced));
      auto choice = scf::IfOp::create(b, loc, pick, /*withElseRegion=*/true);
      b.setInsertionPoint(choice.thenBlock()->getTerminator());
      launchBlocks(b, r, outputs, outputTrips, reduced, reducedTrips, threads, threads);
      b.setInsertionPoint(choice.elseBlock()->getTerminator());
    }
    if (warpsFit) {
      Value pick = staticReduced ? yes : (Value)atLeast(reduced, kWarp);
      auto choice = scf::IfOp::create(b, loc, pick, /*withElseRegion=*/true);
      b.setInsertionPoint(choice.thenBlock()->getTerminator());
      launchBlocks(b, r, outputs, outputTrips, reduced, reducedTrips, kMaxThreads, kWarp);
      b.setInsertionPoint(choice.elseBlock()->getTerminator());
    }
    if (r.fill)
      r.fill->moveBefore(b.getInsertionBlock(), b.getInsertionPoint()); // the nest still needs it
    r.root->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
  }

  /// The launch: blocks of `threads` threads, `lanes` of them per output (all: output i is block
  /// i; kWarp: each warp of a block computes an output of its own).
  void launchBlocks(OpBuilder &b, Reduction &r, Value outputs, ArrayRef<Value> outputTrips, Value reduced,
                    ArrayRef<Value> reducedTrips, int64_t threads, int64_t lanes) {
    Location loc = r.root->getLoc();
    Type type = r.store.getValueToStore().getType();
    int64_t rowsPerBlock = threads / lanes;
    auto sharedType = MemRefType::get({threads}, type, AffineMap(),
                                      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // At least one block: an empty output space launches one idle block, not an invalid grid.
    Value blocks = rowsPerBlock == 1 ? outputs
                                     : b.createOrFold<arith::CeilDivUIOp>(
                                           loc, outputs, arith::ConstantIndexOp::create(b, loc, rowsPerBlock));
    blocks = b.createOrFold<arith::MaxSIOp>(loc, blocks, one);
    Value blockThreads = arith::ConstantIndexOp::create(b, loc, threads);
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, blockThreads, one, one, /*dynamicSharedMemorySize=*/nullptr,
                                        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{}, TypeRange{sharedType});
    Value shared = launch.getWorkgroupAttributions().front();
    b.setInsertionPointToStart(&launch.getBody().front());
    Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
    Value row = block, lane = thread, valid;
    if (rowsPerBlock == 1) {
      // The condition is the same for every thread of a block, so the barriers below are reached
      // by all or none.
      auto guard = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block, outputs),
                                     /*withElseRegion=*/false);
      gpu::TerminatorOp::create(b, loc);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
    } else {
      // Every thread reaches every barrier; a warp past the last output folds nothing and stores nothing.
      gpu::TerminatorOp::create(b, loc);
      b.setInsertionPoint(launch.getBody().front().getTerminator());
      Value width = arith::ConstantIndexOp::create(b, loc, lanes);
      row = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, block, arith::ConstantIndexOp::create(b, loc, rowsPerBlock)),
                                  arith::DivUIOp::create(b, loc, thread, width));
      lane = arith::RemUIOp::create(b, loc, thread, width);
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, outputs);
    }

    IRMapping mapping;
    if (r.outputs) {
      Block &src = *r.outputs.getBody();
      mapping.map(src.getArguments(),
                  cuda::delinearize(b, loc, row, r.outputs.getLowerBound(), r.outputs.getStep(), outputTrips));
      for (Operation &op : src.without_terminator())
        if (&op != r.loops.front().getOperation())
          b.clone(op, mapping);
    }
    auto combine = [&](Value acc, Value value) {
      IRMapping m;
      m.map(r.accumulator.getResult(), acc);
      m.map(r.value, value);
      if (r.compare)
        b.clone(*r.compare, m);
      return b.clone(*r.combine, m)->getResult(0);
    };
    Value value = r.value;
    // Each thread's partial value: elements lane, lane + lanes, ... of the reduced extent.
    Value start = arith::ConstantOp::create(b, loc, identity(r.combine, type));
    scf::IfOp inside;
    if (valid) {
      inside = scf::IfOp::create(b, loc, TypeRange{type}, valid, /*withElseRegion=*/true);
      b.setInsertionPointToStart(inside.elseBlock());
      scf::YieldOp::create(b, loc, start);
      b.setInsertionPointToStart(inside.thenBlock());
    }
    auto partial = scf::ForOp::create(b, loc, lane, reduced, arith::ConstantIndexOp::create(b, loc, lanes),
                                      ValueRange{start});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(partial.getBody());
      SmallVector<Value> lbs, steps, ivs;
      for (scf::ForOp loop : r.loops) {
        lbs.push_back(mapping.lookupOrDefault(loop.getLowerBound()));
        steps.push_back(mapping.lookupOrDefault(loop.getStep()));
        ivs.push_back(loop.getInductionVar());
      }
      mapping.map(ValueRange(ivs), cuda::delinearize(b, loc, partial.getInductionVar(), lbs, steps, reducedTrips));
      for (Operation &op : r.loops.back().getBody()->without_terminator())
        if (&op != r.accumulator.getOperation() && &op != r.combine && &op != r.compare &&
            &op != r.store.getOperation())
          b.clone(op, mapping);
      scf::YieldOp::create(b, loc, combine(partial.getRegionIterArgs().front(), mapping.lookupOrDefault(value)));
    }
    Value folded = partial.getResult(0);
    if (inside) {
      scf::YieldOp::create(b, loc, folded);
      b.setInsertionPointAfter(inside);
      folded = inside.getResult(0);
    }
    // Halving combination in shared memory, within each output's lanes.
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    cuda::combineInShared(b, loc, folded, shared, thread, lane, lanes, combine);
    // The first lane folds the output's total into the output (or into the fill's value).
    Value firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
    if (valid)
      firstLane = arith::AndIOp::create(b, loc, firstLane, valid);
    auto first = scf::IfOp::create(b, loc, firstLane, /*withElseRegion=*/false);
    b.setInsertionPoint(first.thenBlock()->getTerminator());
    SmallVector<Value> at;
    for (Value i : r.store.getIndices())
      at.push_back(mapping.lookupOrDefault(i));
    if (r.fillLoop) {
      // The fill's body for this output: its loop's induction variables are the output's.
      for (auto [fillIv, outIv] : llvm::zip(r.fillLoop.getInductionVars(), r.outputs.getInductionVars()))
        mapping.map(fillIv, mapping.lookup(outIv));
      for (Operation &op : r.fillLoop.getBody()->without_terminator())
        if (!isa<memref::StoreOp>(op) || op.getNextNode() != r.fillLoop.getBody()->getTerminator())
          b.clone(op, mapping);
    }
    Value old = r.fill ? mapping.lookupOrDefault(r.fillValue)
                       : (Value)memref::LoadOp::create(b, loc, r.store.getMemRef(), at);
    Value total = memref::LoadOp::create(b, loc, shared, ValueRange{rowsPerBlock == 1 ? zero : thread});
    memref::StoreOp::create(b, loc, combine(old, total), r.store.getMemRef(), at);
    b.setInsertionPointAfter(launch);
  }
};

} // namespace
} // namespace kiln
