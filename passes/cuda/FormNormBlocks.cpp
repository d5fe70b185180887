// Lowers kiln_kernel.row_norm on buffers (norms, softmaxes) to one GPU launch: a block per row.
//
// A LayerNormalization of a transformer's hidden state has few rows (the tokens of a step) of a
// few hundred to a few thousand elements. Lowered as loop nests it is a reduction for the mean,
// one for the variance and an elementwise pass: three launches or more, each reading the input
// from memory. Here a block owns a row: each thread folds the elements t, t + T, ... (so
// neighbouring threads read neighbouring elements), the block combines the partial sums in shared
// memory (cuda::combineInShared), and the first thread leaves the statistic in a shared slot past
// the partial sums. LayerNormalization then folds (x - mean)^2 the same way; RMSNormalization's
// 1/rms comes from the first sum. A last pass writes the row. The second and third passes read
// the row from the cache.
//
// Values a thread needs after a barrier (the mean, 1/stddev) are reloaded from shared memory and
// the row is recomputed from the block id, so kiln-emulate-gpu-blocks runs the kernel as it is.
//
// Softmax and LogSoftmax rows go the same way: the row's max (a compare-and-select halving), the
// sum of the shifted exponentials, then the row, one launch instead of two block reductions and
// an elementwise pass.
#include "passes/cuda/LaunchUtils.h"
#include "passes/cuda/Passes.h"

#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_FORMNORMBLOCKSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Threads per block at most, and at least (a warp: fewer would leave a warp's lanes idle anyway).
constexpr int64_t kMaxThreads = 256;
constexpr int64_t kMinThreads = 32;

struct NormLowering {
  kernel::RowNormOp op;
  OpBuilder b;
  Location loc;
  Type f32;

  explicit NormLowering(kernel::RowNormOp op) : op(op), b(op), loc(op.getLoc()), f32(b.getF32Type()) {}

  Value c(int64_t x) { return arith::ConstantIndexOp::create(b, loc, x); }
  Value fc(double x) { return arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(x)); }
  Value dim(Value v, int64_t i) {
    int64_t size = cast<MemRefType>(v.getType()).getDimSize(i);
    return ShapedType::isDynamic(size) ? (Value)memref::DimOp::create(b, loc, v, i) : c(size);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// Element j of a scale or bias: j itself, or 0 for one broadcast element.
  Value param(Value p, Value j) {
    Value at = cast<MemRefType>(p.getType()).getDimSize(0) == 1 ? c(0) : j;
    return memref::LoadOp::create(b, loc, p, ValueRange{at});
  }
  /// max(x, y) as the CPU path computes it (compare and select).
  Value maxF(Value x, Value y) {
    return arith::SelectOp::create(b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y), x, y);
  }
  using Combine = function_ref<Value(Value, Value)>;
  /// The combination (from `start`) of term(j) over the row's elements j = thread, thread + threads, ...
  Value strided(Value thread, Value columns, int64_t threads, function_ref<Value(Value)> term, Combine combine,
                double start) {
    auto loop = scf::ForOp::create(b, loc, thread, columns, c(threads), ValueRange{fc(start)});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(b, loc, combine(loop.getRegionIterArgs().front(), term(loop.getInductionVar())));
    return loop.getResult(0);
  }
  /// Leaves finish(the row's combination of term) in shared[slot]: the block's partial values
  /// combined, then the first thread's store, then a barrier so every thread can read it. A sum
  /// unless `combine` and its identity `start` say otherwise.
  void rowStatistic(Value shared, Value thread, Value columns, int64_t threads, int64_t slot,
                    function_ref<Value(Value)> term, function_ref<Value(Value)> finish, Combine combine = nullptr,
                    double start = -0.0) {
    auto sum = [&](Value x, Value y) { return add(x, y); };
    Combine fold = combine ? combine : Combine(sum);
    Value partial = strided(thread, columns, threads, term, fold, start);
    cuda::combineInShared(b, loc, partial, shared, thread, thread, threads, fold);
    auto first = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread, c(0)),
                                   /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(first.thenBlock()->getTerminator());
      Value total = memref::LoadOp::create(b, loc, shared, ValueRange{c(0)});
      memref::StoreOp::create(b, loc, finish(total), shared, ValueRange{c(slot)});
    }
    gpu::BarrierOp::create(b, loc);
  }

  /// Softmax and log-softmax: the row's max m (0 when it is -inf, so a row of -inf gives
  /// 0 / 0 = NaN as ONNX does, not -inf - -inf), then the sum of exp(x - m), then the row:
  /// exp(x - m) * (1 / sum), or x - m - log(sum).
  void softmaxRow(Value shared, Value thread, Value columns, int64_t threads, int64_t maxSlot, int64_t sumSlot,
                  function_ref<Value(Value)> load, function_ref<SmallVector<Value>(Value)> at) {
    bool log = op.getKind() == "log_softmax";
    double negInf = -std::numeric_limits<double>::infinity();
    rowStatistic(shared, thread, columns, threads, maxSlot, load,
                 [&](Value m) {
                   Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, fc(negInf));
                   return (Value)arith::SelectOp::create(b, loc, none, fc(0.0), m);
                 },
                 [&](Value x, Value y) { return maxF(x, y); }, negInf);
    Value m = memref::LoadOp::create(b, loc, shared, ValueRange{c(maxSlot)});
    auto shiftedExp = [&](Value j, Value max) { return (Value)math::ExpOp::create(b, loc, sub(load(j), max)); };
    rowStatistic(shared, thread, columns, threads, sumSlot, [&](Value j) { return shiftedExp(j, m); },
                 [&](Value sum) {
                   return log ? (Value)math::LogOp::create(b, loc, sum)
                              : (Value)arith::DivFOp::create(b, loc, fc(1.0), sum);
                 });
    m = memref::LoadOp::create(b, loc, shared, ValueRange{c(maxSlot)}); // again, after the barrier
    Value f = memref::LoadOp::create(b, loc, shared, ValueRange{c(sumSlot)});
    auto loop = scf::ForOp::create(b, loc, thread, columns, c(threads));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value j = loop.getInductionVar();
    Value y = log ? sub(sub(load(j), m), f) : mul(shiftedExp(j, m), f);
    memref::StoreOp::create(b, loc, y, op.getInit(), at(j));
  }

  void run() {
    Value x = op.getInput(), out = op.getInit(), scale = op.getScale(), bias = op.getBias();
    bool rms = op.isRms();
    auto xt = cast<MemRefType>(x.getType());
    int64_t rank = xt.getRank(), n = xt.getDimSize(rank - 1);
    int64_t threads = kMaxThreads;
    if (!ShapedType::isDynamic(n))
      threads = std::clamp<int64_t>(llvm::PowerOf2Ceil(n), kMinThreads, kMaxThreads);
    // Rows: every index but the last.
    SmallVector<Value> rowTrips;
    Value rows = c(1);
    for (int64_t i = 0; i + 1 < rank; ++i) {
      rowTrips.push_back(dim(x, i));
      rows = b.createOrFold<arith::MulIOp>(loc, rows, rowTrips.back());
    }
    Value columns = dim(x, rank - 1);
    // Shared: the threads' partial sums, then the mean and 1/stddev (RMS: 1/rms in the first).
    int64_t meanSlot = threads, scaleSlot = threads + 1;
    auto sharedType = MemRefType::get({threads + 2}, f32, AffineMap(),
                                      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
    Value one = c(1);
    // At least one block: no rows launches one idle block, not an invalid grid.
    Value blocks = b.createOrFold<arith::MaxSIOp>(loc, rows, one);
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, c(threads), one, one,
                                        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
                                        /*asyncDependencies=*/{}, TypeRange{sharedType});
    Value shared = launch.getWorkgroupAttributions().front();
    b.setInsertionPointToStart(&launch.getBody().front());
    Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
    // The same condition for every thread of a block, so the barriers are reached by all or none.
    auto guard = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block, rows),
                                   /*withElseRegion=*/false);
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    SmallVector<Value> row = cuda::delinearize(b, loc, block, SmallVector<Value>(rowTrips.size(), c(0)),
                                               SmallVector<Value>(rowTrips.size(), c(1)), rowTrips);
    auto at = [&](Value j) {
      SmallVector<Value> indices(row);
      indices.push_back(j);
      return indices;
    };

    Value count = arith::UIToFPOp::create(b, loc, f32, arith::IndexCastUIOp::create(b, loc, b.getI64Type(), columns));
    Value eps = fc(op.getEpsilon().convertToDouble());
    auto load = [&](Value j) { return (Value)memref::LoadOp::create(b, loc, x, at(j)); };
    auto rsqrtOfMean = [&](Value sum) {
      return (Value)math::RsqrtOp::create(b, loc, add(arith::DivFOp::create(b, loc, sum, count), eps));
    };
    auto slot = [&](int64_t i) { return (Value)memref::LoadOp::create(b, loc, shared, ValueRange{c(i)}); };
    if (op.isSoftmax()) {
      softmaxRow(shared, thread, columns, threads, meanSlot, scaleSlot, load, at);
      op->erase();
      return;
    }
    Value mean;
    if (rms) {
      rowStatistic(shared, thread, columns, threads, scaleSlot, [&](Value j) { Value v = load(j); return mul(v, v); },
                   rsqrtOfMean);
    } else {
      rowStatistic(shared, thread, columns, threads, meanSlot, load,
                   [&](Value sum) { return (Value)arith::DivFOp::create(b, loc, sum, count); });
      mean = slot(meanSlot);
      rowStatistic(shared, thread, columns, threads, scaleSlot,
                   [&](Value j) {
                     Value d = sub(load(j), mean);
                     return mul(d, d);
                   },
                   rsqrtOfMean);
      mean = slot(meanSlot); // read again after the barrier (a value of the previous step)
    }
    Value rstd = slot(scaleSlot);
    // The row, in the CPU lowering's order: (x - mean) * rstd * scale + bias, x * rstd * scale.
    auto loop = scf::ForOp::create(b, loc, thread, columns, c(threads));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value j = loop.getInductionVar();
    Value y = mul(rms ? load(j) : sub(load(j), mean), rstd);
    if (scale)
      y = mul(y, param(scale, j));
    if (bias)
      y = add(y, param(bias, j));
    memref::StoreOp::create(b, loc, y, out, at(j));
    op->erase();
  }
};

struct FormNormBlocksPass : impl::FormNormBlocksPassBase<FormNormBlocksPass> {
  void runOnOperation() override {
    SmallVector<kernel::RowNormOp> ops;
    getOperation().walk([&](kernel::RowNormOp op) { ops.push_back(op); });
    for (kernel::RowNormOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before kiln-form-norm-blocks");
        return signalPassFailure();
      }
      NormLowering(op).run();
    }
  }
};

} // namespace
} // namespace kiln
