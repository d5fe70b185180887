// Lowers kiln_kernel.attention on buffers to one GPU launch: a block per 8 query rows, keys in tiles.
//
// Unfused, attention on the GPU writes the Sq x Sk scores to memory, reads them three times for
// the softmax (three launches) and once more for the product with V. Here a block of 128 threads
// owns 8 query rows of one batch/head and walks the keys in tiles of 128, one key per thread,
// with FlashAttention's online softmax: the scores of a tile live in shared memory only, each
// row's running max m and sum l are rescaled as larger scores arrive, and the output rows are
// accumulated in shared memory and written once. Every key and value row is read once per block
// (its 8 query rows reuse it from the L1 cache), so a decode step reads the KV cache once.
//
// Per tile (k0 = 0, 128, ...), with a barrier after each step:
//   1. thread t: s[r] = q[r] . k[k0 + t] * scale + mask[r, k0 + t] for each row r (-inf past Sk)
//   2. the block halves the 128 scores of each row to their max (log2 128 steps)
//   3. m' = max(m, tile max); p[r][t] = exp(s[r] - m'), taking m' as 0 while it is -inf (so a
//      row with no key yet seen stays 0, never NaN)
//   4. the block halves the p of each row to their sum
//   5. thread e: acc[r][e] = acc[r][e] * exp(m - m') + sum_j p[r][j] v[k0 + j][e]
//   6. thread r: l[r] = l[r] * exp(m - m') + tile sum, m[r] = m'
// and at the end out[r][e] = acc[r][e] / l[r] (0 with no keys at all; a row whose every score is
// -inf is 0 / 0 = NaN, as ONNX's Softmax gives). Values a thread needs after a barrier are in
// shared memory or recomputed from indices, so kiln-emulate-gpu-blocks runs the kernel as it is.
// f16 and bf16 operands are computed in f32.
#include "passes/cuda/LaunchUtils.h"
#include "passes/cuda/Passes.h"

#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_FORMATTENTIONBLOCKSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Query rows per block: each key and value row a thread reads serves this many rows.
constexpr int64_t kRows = 8;
/// Threads per block, and keys per tile (one each); a power of two for the halvings.
constexpr int64_t kThreads = 128;

struct AttentionLowering {
  kernel::AttentionOp op;
  OpBuilder b;
  Location loc;
  Type et;                   // the operands' element type
  Type f32;                  // what the kernel computes in
  int64_t rank = 0, nb = 0;  // rank, batch dims
  SmallVector<Value> qBatch; // the query's batch extents (host)
  Value sq, sk;              // query rows and keys (host)
  int64_t d = 0, dv = 0;     // head sizes

  AttentionLowering(kernel::AttentionOp op) : op(op), b(op), loc(op.getLoc()) {}

  Value c(int64_t x) { return arith::ConstantIndexOp::create(b, loc, x); }
  Value fc(double x) { return arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(x)); }
  Value minIdx(Value x, Value y) { return b.createOrFold<arith::MinSIOp>(loc, x, y); }
  Value dim(Value v, int64_t i) {
    int64_t size = cast<MemRefType>(v.getType()).getDimSize(i);
    return ShapedType::isDynamic(size) ? (Value)memref::DimOp::create(b, loc, v, i) : c(size);
  }
  int64_t staticDim(Value v, int64_t i) { return cast<MemRefType>(v.getType()).getDimSize(i); }
  /// Loads an element as f32.
  Value load(Value buffer, ValueRange idx) {
    Value x = memref::LoadOp::create(b, loc, buffer, idx);
    return et == f32 ? x : (Value)arith::ExtFOp::create(b, loc, f32, x);
  }
  /// max(x, y) as the CPU path computes it (compare and select).
  Value maxF(Value x, Value y) {
    Value greater = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y);
    return arith::SelectOp::create(b, loc, greater, x, y);
  }
  /// m' with -inf taken as 0, for the exponents.
  Value safeMax(Value m) {
    Value isNegInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, fc(-std::numeric_limits<double>::infinity()));
    return arith::SelectOp::create(b, loc, isNegInf, fc(0.0), m);
  }
  /// for (i = lb; i < ub; i += step) body(i): a loop without results.
  void forRange(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, step);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }
  /// if (cond) body(): uniform across the block when the body holds barriers.
  void ifThen(Value cond, function_ref<void()> body) {
    auto branch = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    body();
  }
  /// The shared extent of these dims: the smaller when one is dynamic (a request that breaks the
  /// op's promise of equal extents reads nothing out of bounds).
  Value shared(ArrayRef<std::pair<Value, int64_t>> uses) {
    Value size;
    for (auto [t, i] : uses)
      size = size ? minIdx(size, dim(t, i)) : dim(t, i);
    return size;
  }

  /// Index into batch dim `j` of `t` for query batch dim `i` at index `id`: the same, 0 for a
  /// broadcast 1, or id / (Bq / Bt) for grouped heads, clamped into `t`. The ratio is computed
  /// on the host (`hostRatio`), the rest per block.
  struct BatchMap {
    int64_t kind = 0; // 0: same index, 1: always 0, 2: divide by ratio
    Value ratio, last;
  };
  BatchMap batchMap(Value t, int64_t j, int64_t i) {
    int64_t bt = staticDim(t, j), bq = cast<MemRefType>(op.getQuery().getType()).getDimSize(i);
    if (bt == 1)
      return {1, {}, {}};
    if (bt == bq && !ShapedType::isDynamic(bt))
      return {0, {}, {}};
    Value size = dim(t, j);
    Value ratio = arith::DivSIOp::create(b, loc, qBatch[i], arith::MaxSIOp::create(b, loc, size, c(1)));
    ratio = arith::MaxSIOp::create(b, loc, ratio, c(1));
    return {2, ratio, arith::SubIOp::create(b, loc, size, c(1))};
  }
  Value mapIndex(const BatchMap &m, Value id) {
    if (m.kind == 0)
      return id;
    if (m.kind == 1)
      return c(0);
    return minIdx(arith::DivSIOp::create(b, loc, id, m.ratio), m.last);
  }

  LogicalResult run() {
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue(), mask = op.getMask(), out = op.getInit();
    auto qt = cast<MemRefType>(q.getType());
    et = qt.getElementType();
    f32 = b.getF32Type();
    rank = qt.getRank();
    nb = rank - 2;
    d = staticDim(q, rank - 1);
    if (ShapedType::isDynamic(d))
      d = staticDim(k, rank - 1);
    dv = staticDim(v, rank - 1);
    if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
      return op.emitOpError("needs static head sizes on the GPU");
    if (!(et.isF32() || et.isF16() || et.isBF16()))
      return op.emitOpError("has no GPU kernel for ") << et;

    // Host: extents, grouped-head ratios, the grid.
    int64_t mrank = mask ? cast<MemRefType>(mask.getType()).getRank() : 0;
    auto maskDim = [&](int64_t i) -> int64_t { // mask dim read for score dim i, -1 if broadcast
      int64_t j = i - (rank - mrank);
      return (mask && j >= 0 && staticDim(mask, j) != 1) ? j : -1;
    };
    SmallVector<std::pair<Value, int64_t>> sqUses = {{q, rank - 2}}, skUses = {{k, rank - 2}, {v, rank - 2}};
    if (maskDim(rank - 2) >= 0)
      sqUses.push_back({mask, maskDim(rank - 2)});
    if (maskDim(rank - 1) >= 0)
      skUses.push_back({mask, maskDim(rank - 1)});
    sq = shared(sqUses);
    sk = shared(skUses);
    for (int64_t i = 0; i < nb; ++i)
      qBatch.push_back(dim(q, i));
    SmallVector<BatchMap> kMap, vMap, maskMap(mrank);
    for (int64_t i = 0; i < nb; ++i) {
      kMap.push_back(batchMap(k, i, i));
      vMap.push_back(batchMap(v, i, i));
    }
    for (int64_t j = 0; j < mrank && j + rank - mrank < nb; ++j)
      maskMap[j] = batchMap(mask, j, j + rank - mrank);
    Value rowBlocks = b.createOrFold<arith::CeilDivSIOp>(loc, sq, c(kRows));
    SmallVector<Value> trips(qBatch);
    trips.push_back(rowBlocks);
    Value total = c(1);
    for (Value t : trips)
      total = b.createOrFold<arith::MulIOp>(loc, total, t);
    Value blocks = b.createOrFold<arith::MaxSIOp>(loc, total, c(1)); // never an empty grid

    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    auto sharedType = [&](ArrayRef<int64_t> shape) { return MemRefType::get(shape, f32, AffineMap(), workgroup); };
    SmallVector<Type> sharedTypes = {
        sharedType({kRows, d}),        // the block's query rows
        sharedType({kRows, dv}),       // their output accumulators
        sharedType({kRows, kThreads}), // scores, then exponentials, of the tile
        sharedType({kRows, kThreads}), // the max halving
        sharedType({kRows, kThreads}), // the sum halving
        sharedType({kRows}),           // m
        sharedType({kRows})};          // l
    Value one = c(1);
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, c(kThreads), one, one,
                                        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
                                        /*asyncDependencies=*/{}, sharedTypes);
    ValueRange wg = launch.getWorkgroupAttributions();
    Value qs = wg[0], acc = wg[1], p = wg[2], rmax = wg[3], rsum = wg[4], ms = wg[5], ls = wg[6];
    b.setInsertionPointToStart(&launch.getBody().front());
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value block = launch.getBlockIds().x, t = launch.getThreadIds().x;
    Value T = c(kThreads), zero = c(0);
    Value negInf = fc(-std::numeric_limits<double>::infinity());
    double scale = op.getScale().convertToDouble();

    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block, total), [&] {
      SmallVector<Value> zeros(trips.size(), zero), ones(trips.size(), one);
      SmallVector<Value> ids = cuda::delinearize(b, loc, block, zeros, ones, trips);
      Value row0 = arith::MulIOp::create(b, loc, ids[nb], c(kRows));
      Value rows = minIdx(c(kRows), arith::SubIOp::create(b, loc, sq, row0));
      SmallVector<Value> qIdx(ids.begin(), ids.begin() + nb), kIdx, vIdx;
      for (int64_t i = 0; i < nb; ++i) {
        kIdx.push_back(mapIndex(kMap[i], ids[i]));
        vIdx.push_back(mapIndex(vMap[i], ids[i]));
      }
      auto at = [&](ArrayRef<Value> batch, Value x, Value y) {
        SmallVector<Value> idx(batch);
        idx.append({x, y});
        return idx;
      };
      // The mask element for query row `row` and key `key`.
      auto maskAt = [&](Value row, Value key) {
        SmallVector<Value> idx;
        for (int64_t j = 0; j < mrank; ++j) {
          int64_t i = j + rank - mrank;
          if (staticDim(mask, j) == 1)
            idx.push_back(zero);
          else if (i < nb)
            idx.push_back(mapIndex(maskMap[j], ids[i]));
          else
            idx.push_back(i == rank - 2 ? row : key);
        }
        return load(mask, idx);
      };
      // Halves each row's kThreads values in `buffer` to one, at [r][0].
      auto halve = [&](Value buffer, bool isMax) {
        for (int64_t half = kThreads / 2; half >= 1; half /= 2) {
          Value h = c(half);
          ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, t, h), [&] {
            forRange(zero, rows, one, [&](Value r) {
              Value mine = memref::LoadOp::create(b, loc, buffer, ValueRange{r, t});
              Value other = memref::LoadOp::create(b, loc, buffer, ValueRange{r, arith::AddIOp::create(b, loc, t, h)});
              Value combined = isMax ? maxF(mine, other) : (Value)arith::AddFOp::create(b, loc, mine, other);
              memref::StoreOp::create(b, loc, combined, buffer, ValueRange{r, t});
            });
          });
          gpu::BarrierOp::create(b, loc);
        }
      };
      // m' (with -inf as 0) and exp(m - m') of row r, from m and the tile's max.
      auto rescale = [&](Value r) -> std::pair<Value, Value> {
        Value mOld = memref::LoadOp::create(b, loc, ms, ValueRange{r});
        Value mNew = maxF(mOld, memref::LoadOp::create(b, loc, rmax, ValueRange{r, zero}));
        Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mOld, safeMax(mNew)));
        return {mNew, alpha};
      };

      // The query rows to shared memory; accumulators, m and l start.
      forRange(zero, rows, one, [&](Value r) {
        Value row = arith::AddIOp::create(b, loc, row0, r);
        forRange(t, c(d), T, [&](Value col) {
          memref::StoreOp::create(b, loc, load(q, at(qIdx, row, col)), qs, ValueRange{r, col});
        });
        forRange(t, c(dv), T, [&](Value e) { memref::StoreOp::create(b, loc, fc(0.0), acc, ValueRange{r, e}); });
      });
      ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, t, rows), [&] {
        memref::StoreOp::create(b, loc, negInf, ms, ValueRange{t});
        memref::StoreOp::create(b, loc, fc(0.0), ls, ValueRange{t});
      });
      gpu::BarrierOp::create(b, loc);

      forRange(zero, sk, T, [&](Value k0) {
        Value key = arith::AddIOp::create(b, loc, k0, t);
        Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, key, sk);
        // 1. The scores of this thread's key.
        forRange(zero, rows, one, [&](Value r) {
          auto score = scf::IfOp::create(b, loc, TypeRange{f32}, valid, /*withElseRegion=*/true);
          {
            OpBuilder::InsertionGuard g(b);
            b.setInsertionPointToStart(score.elseBlock());
            scf::YieldOp::create(b, loc, negInf);
            b.setInsertionPointToStart(score.thenBlock());
            auto dot = scf::ForOp::create(b, loc, zero, c(d), one, ValueRange{fc(0.0)});
            {
              OpBuilder::InsertionGuard g2(b);
              b.setInsertionPointToStart(dot.getBody());
              Value col = dot.getInductionVar();
              Value qv = memref::LoadOp::create(b, loc, qs, ValueRange{r, col});
              Value kv = load(k, at(kIdx, key, col));
              scf::YieldOp::create(b, loc, ValueRange{math::FmaOp::create(b, loc, qv, kv, dot.getRegionIterArg(0))});
            }
            Value s = dot.getResult(0);
            if (scale != 1.0)
              s = arith::MulFOp::create(b, loc, s, fc(scale));
            if (mask)
              s = arith::AddFOp::create(b, loc, s, maskAt(arith::AddIOp::create(b, loc, row0, r), key));
            scf::YieldOp::create(b, loc, s);
          }
          memref::StoreOp::create(b, loc, score.getResult(0), p, ValueRange{r, t});
          memref::StoreOp::create(b, loc, score.getResult(0), rmax, ValueRange{r, t});
        });
        gpu::BarrierOp::create(b, loc);
        // 2. Each row's max over the tile.
        halve(rmax, /*isMax=*/true);
        // 3. The exponentials, relative to the new max.
        forRange(zero, rows, one, [&](Value r) {
          Value mNew = rescale(r).first;
          Value x = arith::SubFOp::create(b, loc, memref::LoadOp::create(b, loc, p, ValueRange{r, t}), safeMax(mNew));
          Value e = arith::SelectOp::create(b, loc, valid, math::ExpOp::create(b, loc, x), fc(0.0));
          memref::StoreOp::create(b, loc, e, p, ValueRange{r, t});
          memref::StoreOp::create(b, loc, e, rsum, ValueRange{r, t});
        });
        gpu::BarrierOp::create(b, loc);
        // 4. Each row's sum over the tile.
        halve(rsum, /*isMax=*/false);
        // 5. The accumulators, rescaled, plus the tile's P V.
        Value keys = minIdx(T, arith::SubIOp::create(b, loc, sk, k0));
        forRange(zero, rows, one, [&](Value r) {
          Value alpha = rescale(r).second;
          forRange(t, c(dv), T, [&](Value e) {
            Value start = arith::MulFOp::create(b, loc, memref::LoadOp::create(b, loc, acc, ValueRange{r, e}), alpha);
            auto pv = scf::ForOp::create(b, loc, zero, keys, one, ValueRange{start});
            {
              OpBuilder::InsertionGuard g(b);
              b.setInsertionPointToStart(pv.getBody());
              Value j = pv.getInductionVar();
              Value pj = memref::LoadOp::create(b, loc, p, ValueRange{r, j});
              Value vj = load(v, at(vIdx, arith::AddIOp::create(b, loc, k0, j), e));
              scf::YieldOp::create(b, loc, ValueRange{math::FmaOp::create(b, loc, pj, vj, pv.getRegionIterArg(0))});
            }
            memref::StoreOp::create(b, loc, pv.getResult(0), acc, ValueRange{r, e});
          });
        });
        gpu::BarrierOp::create(b, loc);
        // 6. m and l of each row, one thread per row.
        ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, t, rows), [&] {
          auto [mNew, alpha] = rescale(t);
          Value l = memref::LoadOp::create(b, loc, ls, ValueRange{t});
          Value tileSum = memref::LoadOp::create(b, loc, rsum, ValueRange{t, zero});
          memref::StoreOp::create(b, loc, math::FmaOp::create(b, loc, l, alpha, tileSum), ls, ValueRange{t});
          memref::StoreOp::create(b, loc, mNew, ms, ValueRange{t});
        });
        gpu::BarrierOp::create(b, loc);
      });

      // out = acc / l; with no keys at all the product with an empty V is 0.
      Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, sk, zero);
      forRange(zero, rows, one, [&](Value r) {
        Value row = arith::AddIOp::create(b, loc, row0, r);
        Value l = memref::LoadOp::create(b, loc, ls, ValueRange{r});
        forRange(t, c(dv), T, [&](Value e) {
          Value x = arith::DivFOp::create(b, loc, memref::LoadOp::create(b, loc, acc, ValueRange{r, e}), l);
          x = arith::SelectOp::create(b, loc, noKeys, fc(0.0), x);
          if (et != f32)
            x = arith::TruncFOp::create(b, loc, et, x);
          memref::StoreOp::create(b, loc, x, out, at(qIdx, row, e));
        });
      });
    });
    op.erase();
    return success();
  }
};

struct FormAttentionBlocksPass : impl::FormAttentionBlocksPassBase<FormAttentionBlocksPass> {
  void runOnOperation() override {
    SmallVector<kernel::AttentionOp> ops;
    getOperation().walk([&](kernel::AttentionOp op) { ops.push_back(op); });
    for (kernel::AttentionOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before kiln-form-attention-blocks");
        return signalPassFailure();
      }
      if (failed(AttentionLowering(op).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln
