// Lowers kiln_kernel.attention on buffers to GPU launches: a block per 8 query rows, keys in tiles.
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
//
// Paged (a block table): key and value are the pools of a paged KV cache, and a thread finds key
// j of sequence b in block table[b, j / block] at offset j % block. Only the addresses change:
// the tiles, their order and the arithmetic are the contiguous cache's, so paged decoding gives
// the contiguous cache's bits, and the pools are read in place (no gathered copy per step).
//
// A decode step has only batch x heads blocks, each walking the whole context alone. When blocks
// are few and keys many, the host splits the keys into ranges of whole tiles, one block each
// (FlashDecoding): each block stores its rows' acc, m and l in partial buffers instead of the
// output, and a second launch combines the ranges of each row: M = max m_s,
// out = sum acc_s exp(m_s - M) / sum l_s exp(m_s - M).
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
/// Keys are split over several blocks only until there are about this many blocks (two per SM
/// of an H100/H200, which have 132), in ranges of at least the pass's min-split-keys (256 by
/// default). First guesses, not measured: tuning them needs a GPU.
constexpr int64_t kTargetBlocks = 264;

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

  int64_t minSplitKeys; // 0: never split

  AttentionLowering(kernel::AttentionOp op, int64_t minSplitKeys)
      : op(op), b(op), loc(op.getLoc()), minSplitKeys(minSplitKeys) {}

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

  // Set by run() on the host, read by the kernels.
  Value q, k, v, mask, out;
  // Paged: the block table, the pools' block size, their last block and the table's last row.
  Value table, lastBlock, lastRow;
  int64_t blockSize = 0;
  int64_t mrank = 0;
  SmallVector<BatchMap> kMap, vMap, maskMap;
  SmallVector<Value> trips; // the grid's (batch..., row block) extents
  Value total;              // their product: blocks without a split

  /// The block's place: its batch indices, first query row and number of rows, from `id` in
  /// [0, total).
  struct Place {
    SmallVector<Value> ids, qIdx, kIdx, vIdx;
    Value row0, rows;
  };
  Place place(Value id) {
    Place at;
    Value zero = c(0), one = c(1);
    SmallVector<Value> zeros(trips.size(), zero), ones(trips.size(), one);
    at.ids = cuda::delinearize(b, loc, id, zeros, ones, trips);
    at.row0 = arith::MulIOp::create(b, loc, at.ids[nb], c(kRows));
    at.rows = minIdx(c(kRows), arith::SubIOp::create(b, loc, sq, at.row0));
    at.qIdx.assign(at.ids.begin(), at.ids.begin() + nb);
    for (int64_t i = 0; i < nb; ++i) {
      if (i == 0 && table) { // the sequence's row of the block table
        at.kIdx.push_back(minIdx(at.ids[0], lastRow));
        at.vIdx.push_back(at.kIdx.back());
        continue;
      }
      at.kIdx.push_back(mapIndex(kMap[i], at.ids[i]));
      at.vIdx.push_back(mapIndex(vMap[i], at.ids[i]));
    }
    return at;
  }
  static SmallVector<Value> at(ArrayRef<Value> batch, Value x, Value y) {
    SmallVector<Value> idx(batch);
    idx.append({x, y});
    return idx;
  }
  Value negInf() { return fc(-std::numeric_limits<double>::infinity()); }
  /// Where key (or value) row `key` for the batch indices `batch` lies, all indices but the
  /// column: the row itself, or, paged, the row's block (named by the table, clamped into the
  /// pool) at offset key % block. Computed once per row, outside the loops over its columns.
  SmallVector<Value> rowAt(ArrayRef<Value> batch, Value key) {
    SmallVector<Value> idx(batch);
    if (!table) {
      idx.push_back(key);
      return idx;
    }
    Value blockCol = arith::DivUIOp::create(b, loc, key, c(blockSize));
    Value id = memref::LoadOp::create(b, loc, table, ValueRange{batch[0], blockCol});
    Value blk = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
    idx[0] = arith::MaxSIOp::create(b, loc, minIdx(blk, lastBlock), c(0));
    idx.push_back(arith::RemUIOp::create(b, loc, key, c(blockSize)));
    return idx;
  }
  /// Element `col` of the row at `row` (rowAt's indices).
  Value loadAt(Value buffer, ArrayRef<Value> row, Value col) {
    SmallVector<Value> idx(row);
    idx.push_back(col);
    return load(buffer, idx);
  }
  /// Stores an f32 result into `out`, rounded to its element type.
  void storeOut(Value x, ValueRange idx) {
    if (et != f32)
      x = arith::TruncFOp::create(b, loc, et, x);
    memref::StoreOp::create(b, loc, x, out, idx);
  }

  /// Where a block's keys and results go: all of a row's keys into `out`, or (split) one range of
  /// keys into slot `blockIdx` of the partial results.
  struct Partials {
    Value splits, chunk; // keys per split, a multiple of kThreads
    Value acc, m, l;     // [slots, kRows, Dv], [slots, kRows], [slots, kRows]
  };

  /// The attention launch: each block walks keys [begin, end) of its 8 rows (all keys, or one
  /// split's), then writes acc / l to `out`, or acc, m and l to the partials.
  void launchAttention(Value blocks, const Partials *partials) {
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
    OpBuilder::InsertionGuard outer(b);
    ValueRange wg = launch.getWorkgroupAttributions();
    Value qs = wg[0], acc = wg[1], p = wg[2], rmax = wg[3], rsum = wg[4], ms = wg[5], ls = wg[6];
    b.setInsertionPointToStart(&launch.getBody().front());
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value block = launch.getBlockIds().x, t = launch.getThreadIds().x;
    Value T = c(kThreads), zero = c(0);
    double scale = op.getScale().convertToDouble();
    // The rows' block and the keys it walks.
    Value id = block, begin = zero, end = sk;
    if (partials) {
      id = arith::DivUIOp::create(b, loc, block, partials->splits);
      begin = arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, block, partials->splits), partials->chunk);
      end = minIdx(sk, arith::AddIOp::create(b, loc, begin, partials->chunk));
    }

    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, total), [&] {
      Place pl = place(id);
      Value row0 = pl.row0, rows = pl.rows;
      // The mask element for query row `row` and key `key`.
      auto maskAt = [&](Value row, Value key) {
        SmallVector<Value> idx;
        for (int64_t j = 0; j < mrank; ++j) {
          int64_t i = j + rank - mrank;
          if (staticDim(mask, j) == 1)
            idx.push_back(zero);
          else if (i < nb)
            idx.push_back(mapIndex(maskMap[j], pl.ids[i]));
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
          memref::StoreOp::create(b, loc, load(q, at(pl.qIdx, row, col)), qs, ValueRange{r, col});
        });
        forRange(t, c(dv), T, [&](Value e) { memref::StoreOp::create(b, loc, fc(0.0), acc, ValueRange{r, e}); });
      });
      ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, t, rows), [&] {
        memref::StoreOp::create(b, loc, negInf(), ms, ValueRange{t});
        memref::StoreOp::create(b, loc, fc(0.0), ls, ValueRange{t});
      });
      gpu::BarrierOp::create(b, loc);

      forRange(begin, end, T, [&](Value k0) {
        Value key = arith::AddIOp::create(b, loc, k0, t);
        Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, key, end);
        // 1. The scores of this thread's key.
        forRange(zero, rows, one, [&](Value r) {
          auto score = scf::IfOp::create(b, loc, TypeRange{f32}, valid, /*withElseRegion=*/true);
          {
            OpBuilder::InsertionGuard g(b);
            b.setInsertionPointToStart(score.elseBlock());
            scf::YieldOp::create(b, loc, negInf());
            b.setInsertionPointToStart(score.thenBlock());
            SmallVector<Value> kRow = rowAt(pl.kIdx, key);
            auto dot = scf::ForOp::create(b, loc, zero, c(d), one, ValueRange{fc(0.0)});
            {
              OpBuilder::InsertionGuard g2(b);
              b.setInsertionPointToStart(dot.getBody());
              Value col = dot.getInductionVar();
              Value qv = memref::LoadOp::create(b, loc, qs, ValueRange{r, col});
              Value kv = loadAt(k, kRow, col);
              scf::YieldOp::create(b, loc, ValueRange{math::FmaOp::create(b, loc, qv, kv, dot.getRegionIterArg(0))});
            }
            Value sc = dot.getResult(0);
            if (scale != 1.0)
              sc = arith::MulFOp::create(b, loc, sc, fc(scale));
            if (mask)
              sc = arith::AddFOp::create(b, loc, sc, maskAt(arith::AddIOp::create(b, loc, row0, r), key));
            scf::YieldOp::create(b, loc, sc);
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
        Value keys = minIdx(T, arith::SubIOp::create(b, loc, end, k0));
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
              Value vj = loadAt(v, rowAt(pl.vIdx, arith::AddIOp::create(b, loc, k0, j)), e);
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

      if (partials) {
        // This split's accumulators, m and l, for the combination.
        forRange(zero, rows, one, [&](Value r) {
          forRange(t, c(dv), T, [&](Value e) {
            memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, acc, ValueRange{r, e}), partials->acc,
                                    ValueRange{block, r, e});
          });
        });
        ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, t, rows), [&] {
          memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, ms, ValueRange{t}), partials->m, ValueRange{block, t});
          memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, ls, ValueRange{t}), partials->l, ValueRange{block, t});
        });
        return;
      }
      // out = acc / l; with no keys at all the product with an empty V is 0.
      Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, sk, zero);
      forRange(zero, rows, one, [&](Value r) {
        Value row = arith::AddIOp::create(b, loc, row0, r);
        Value l = memref::LoadOp::create(b, loc, ls, ValueRange{r});
        forRange(t, c(dv), T, [&](Value e) {
          Value x = arith::DivFOp::create(b, loc, memref::LoadOp::create(b, loc, acc, ValueRange{r, e}), l);
          storeOut(arith::SelectOp::create(b, loc, noKeys, fc(0.0), x), at(pl.qIdx, row, e));
        });
      });
    });
  }

  /// The combination of the splits: per row, M = max m_s, L = sum l_s exp(m_s - M), and
  /// out = sum acc_s exp(m_s - M) / L (M taken as 0 while -inf, so a row with no key is 0 / 0).
  void launchCombine(const Partials &partials) {
    Value one = c(1), zero = c(0), T = c(kThreads);
    auto launch = gpu::LaunchOp::create(b, loc, b.createOrFold<arith::MaxSIOp>(loc, total, one), one, one, T, one, one);
    OpBuilder::InsertionGuard outer(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value id = launch.getBlockIds().x, t = launch.getThreadIds().x;
    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, total), [&] {
      Place pl = place(id);
      Value first = arith::MulIOp::create(b, loc, id, partials.splits);
      Value last = arith::AddIOp::create(b, loc, first, partials.splits);
      // sum over the splits s of body(slot, sum), from `init`.
      auto fold = [&](Value init, function_ref<Value(Value, Value)> body) {
        auto loop = scf::ForOp::create(b, loc, first, last, one, ValueRange{init});
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(loop.getBody());
        scf::YieldOp::create(b, loc, body(loop.getInductionVar(), loop.getRegionIterArg(0)));
        return loop.getResult(0);
      };
      forRange(zero, pl.rows, one, [&](Value r) {
        auto mOf = [&](Value slot) { return (Value)memref::LoadOp::create(b, loc, partials.m, ValueRange{slot, r}); };
        Value mMax = fold(negInf(), [&](Value slot, Value x) { return maxF(x, mOf(slot)); });
        Value mz = safeMax(mMax);
        auto weight = [&](Value slot) {
          return (Value)math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mOf(slot), mz));
        };
        Value l = fold(fc(0.0), [&](Value slot, Value x) {
          Value ls = memref::LoadOp::create(b, loc, partials.l, ValueRange{slot, r});
          return (Value)math::FmaOp::create(b, loc, ls, weight(slot), x);
        });
        Value row = arith::AddIOp::create(b, loc, pl.row0, r);
        forRange(t, c(dv), T, [&](Value e) {
          Value a = fold(fc(0.0), [&](Value slot, Value x) {
            Value as = memref::LoadOp::create(b, loc, partials.acc, ValueRange{slot, r, e});
            return (Value)math::FmaOp::create(b, loc, as, weight(slot), x);
          });
          storeOut(arith::DivFOp::create(b, loc, a, l), at(pl.qIdx, row, e));
        });
      });
    });
  }

  LogicalResult run() {
    q = op.getQuery(), k = op.getKey(), v = op.getValue(), mask = op.getMask(), out = op.getInit();
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
    mrank = mask ? cast<MemRefType>(mask.getType()).getRank() : 0;
    auto maskDim = [&](int64_t i) -> int64_t { // mask dim read for score dim i, -1 if broadcast
      int64_t j = i - (rank - mrank);
      return (mask && j >= 0 && staticDim(mask, j) != 1) ? j : -1;
    };
    SmallVector<std::pair<Value, int64_t>> sqUses = {{q, rank - 2}}, skUses;
    if (op.isPaged()) { // the pools' dim rank - 2 is their block size; the op says how many keys
      table = op.getBlockTable();
      blockSize = staticDim(k, rank - 2);
      lastBlock = b.createOrFold<arith::SubIOp>(loc, dim(k, 0), c(1));
      lastRow = b.createOrFold<arith::MaxSIOp>(loc, b.createOrFold<arith::SubIOp>(loc, dim(table, 0), c(1)), c(0));
    } else {
      skUses = {{k, rank - 2}, {v, rank - 2}};
    }
    if (maskDim(rank - 2) >= 0)
      sqUses.push_back({mask, maskDim(rank - 2)});
    if (maskDim(rank - 1) >= 0)
      skUses.push_back({mask, maskDim(rank - 1)});
    sq = shared(sqUses);
    sk = shared(skUses);
    if (table) {
      Value count = b.createOrFold<arith::MaxSIOp>(loc, op.getKeyCount(), c(0));
      sk = sk ? minIdx(sk, count) : count;
    }
    for (int64_t i = 0; i < nb; ++i)
      qBatch.push_back(dim(q, i));
    maskMap.resize(mrank);
    for (int64_t i = 0; i < nb; ++i) {
      kMap.push_back(i == 0 && table ? BatchMap() : batchMap(k, i, i));
      vMap.push_back(i == 0 && table ? BatchMap() : batchMap(v, i, i));
    }
    for (int64_t j = 0; j < mrank && j + rank - mrank < nb; ++j)
      maskMap[j] = batchMap(mask, j, j + rank - mrank);
    trips.assign(qBatch.begin(), qBatch.end());
    trips.push_back(b.createOrFold<arith::CeilDivSIOp>(loc, sq, c(kRows)));
    total = c(1);
    for (Value t : trips)
      total = b.createOrFold<arith::MulIOp>(loc, total, t);
    Value one = c(1);
    Value blocks = b.createOrFold<arith::MaxSIOp>(loc, total, one); // never an empty grid

    // Split the keys over several blocks when there are few blocks and many keys (a decode step
    // over a long context: batch x heads blocks): splits = min(ceil(Sk / minSplitKeys),
    // kTargetBlocks / blocks), each a whole number of tiles.
    if (minSplitKeys <= 0) {
      launchAttention(blocks, nullptr);
      op.erase();
      return success();
    }
    Value wanted = b.createOrFold<arith::CeilDivSIOp>(loc, sk, c(minSplitKeys));
    Value room = b.createOrFold<arith::MaxSIOp>(loc, b.createOrFold<arith::DivSIOp>(loc, c(kTargetBlocks), blocks), one);
    Value splits = b.createOrFold<arith::MaxSIOp>(loc, b.createOrFold<arith::MinSIOp>(loc, wanted, room), one);
    Value chunk = b.createOrFold<arith::CeilDivSIOp>(loc, sk, splits);
    chunk = b.createOrFold<arith::MulIOp>(loc, b.createOrFold<arith::CeilDivSIOp>(loc, chunk, c(kThreads)), c(kThreads));
    chunk = b.createOrFold<arith::MaxSIOp>(loc, chunk, c(kThreads));
    splits = b.createOrFold<arith::CeilDivSIOp>(loc, sk, chunk);
    Value split = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, splits, one);
    if (auto known = getConstantIntValue(split); known && *known == 0) {
      launchAttention(blocks, nullptr);
      op.erase();
      return success();
    }
    // The partial results, at the top level (so a refused allocation is reported, not written
    // through); one slot when the host does not split.
    Value slots = b.createOrFold<arith::SelectOp>(loc, split, b.createOrFold<arith::MulIOp>(loc, blocks, splits), one);
    auto buffer = [&](ArrayRef<int64_t> shape) {
      return memref::AllocOp::create(b, loc, MemRefType::get(shape, f32), ValueRange{slots}).getResult();
    };
    Partials partials{splits, chunk, buffer({ShapedType::kDynamic, kRows, dv}), buffer({ShapedType::kDynamic, kRows}),
                      buffer({ShapedType::kDynamic, kRows})};
    auto choice = scf::IfOp::create(b, loc, split, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(choice.thenBlock()->getTerminator());
      launchAttention(b.createOrFold<arith::MulIOp>(loc, blocks, splits), &partials);
      launchCombine(partials);
      b.setInsertionPoint(choice.elseBlock()->getTerminator());
      launchAttention(blocks, nullptr);
    }
    for (Value partial : {partials.acc, partials.m, partials.l})
      memref::DeallocOp::create(b, loc, partial);
    op.erase();
    return success();
  }
};

struct FormAttentionBlocksPass : impl::FormAttentionBlocksPassBase<FormAttentionBlocksPass> {
  using FormAttentionBlocksPassBase::FormAttentionBlocksPassBase;
  void runOnOperation() override {
    SmallVector<kernel::AttentionOp> ops;
    getOperation().walk([&](kernel::AttentionOp op) { ops.push_back(op); });
    for (kernel::AttentionOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before kiln-form-attention-blocks");
        return signalPassFailure();
      }
      if (failed(AttentionLowering(op, minSplitKeys).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln
