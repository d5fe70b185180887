// graph.attention -> a FlashAttention-style kernel on tensors: query blocks in parallel, key tiles with an online softmax.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/kernel/IR/Kernel.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

using utils::IteratorType;

/// Query rows per work item and keys per step of the online softmax: a
/// [16 x 64] score tile (4 KB) stays in L1 next to its K and V tiles.
constexpr int64_t kQueryBlock = 16;
constexpr int64_t kKeyTile = 64;
/// Vector accumulators of one output row kept in registers across the keys
/// (a head of 128 f32 values in 16-lane vectors).
constexpr int64_t kMaxAccumulators = 8;
/// Keys per split (rounded up to whole key tiles) when the keys are split
/// over work items: a decode step at a long context has only batch x heads
/// items, fewer than a server's cores.
constexpr int64_t kSplitKeys = 512;
/// Static key counts up to this make one key tile where the keys sit in vector lanes: the
/// [16 x 128] score tile, K^T [15 x 128] and the value tile (about 24 KB) still fit L1.
constexpr int64_t kMaxWholeKeys = 128;

/// The static size an extract_slice gives a dim of `size` (a Value stays dynamic).
int64_t staticSize(OpFoldResult size) {
  if (auto attr = dyn_cast<Attribute>(size))
    return cast<IntegerAttr>(attr).getInt();
  return ShapedType::kDynamic;
}

/// Keys and values that are paged views (kiln-kv-cache-in-place with a block size) of one block
/// table along the key axis: their pools (remapped), the table and the pools' block size. Empty
/// (no table) when they are not.
struct PagedKeyValues {
  Value kPool, vPool, table;
  int64_t blockSize = 0;
};
PagedKeyValues pagedKeyValues(graph::AttentionOp op, ConversionPatternRewriter &rewriter, int64_t rank) {
  auto kView = op.getKey().getDefiningOp<graph::KvCachePagedViewOp>();
  auto vView = op.getValue().getDefiningOp<graph::KvCachePagedViewOp>();
  if (!kView || !vView || kView.getAxis() != rank - 2 || vView.getAxis() != rank - 2 ||
      kView.getBlockTable() != vView.getBlockTable())
    return {};
  PagedKeyValues p{rewriter.getRemappedValue(kView.getPool()), rewriter.getRemappedValue(vView.getPool()),
                   rewriter.getRemappedValue(kView.getBlockTable())};
  int64_t kb = p.kPool ? cast<RankedTensorType>(p.kPool.getType()).getDimSize(rank - 2) : 0;
  int64_t vb = p.vPool ? cast<RankedTensorType>(p.vPool.getType()).getDimSize(rank - 2) : 0;
  if (!p.table || kb <= 0 || kb != vb)
    return {};
  p.blockSize = kb;
  return p;
}

/// The kernel, per work item (one query block of one batch/head):
///   m = -inf, l = 0, acc = 0   (per query row)
///   for each key tile:   S = Q K^T * scale + mask
///     m' = max(m, rowmax S);  alpha = exp(m - m');  P = exp(S - m')
///     l = l * alpha + rowsum P;  acc = acc * alpha + P V
///   out = acc / l
/// where m' is taken as 0 in the exponents while it is -inf (every key so far
/// masked out), so that exp(-inf - -inf) never makes a NaN out of a row that
/// later sees a key. A row whose every key is -inf ends with 0 / 0 = NaN,
/// exactly what the unfused Softmax computes (exp(-inf - -inf)).
struct AttentionPattern : OpConversionPattern<graph::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(graph::AttentionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *ctx = b.getContext();
    Value q = adaptor.getQuery(), k = adaptor.getKey(), v = adaptor.getValue(), mask = adaptor.getMask();
    auto qt = cast<RankedTensorType>(q.getType()), kt = cast<RankedTensorType>(k.getType()),
         vt = cast<RankedTensorType>(v.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = qt.getElementType();
    if (!isa<FloatType>(et))
      return rewriter.notifyMatchFailure(op, "attention on non-float tensors");
    int64_t rank = qt.getRank(), nb = rank - 2;
    // Keys and values viewed from a paged KV cache: read from the pool (the write's result).
    PagedKeyValues pagedKV = rank == 4 ? pagedKeyValues(op, rewriter, rank) : PagedKeyValues();
    Value kPool = pagedKV.kPool, vPool = pagedKV.vPool, pagedTable = pagedKV.table;
    int64_t keyTile = kKeyTile, blockSize = pagedKV.blockSize;
    const bool paged = static_cast<bool>(pagedTable);
    if (paged) {
      // Blocks that divide the key tile (gathered into one tile: static, equal head sizes), or
      // that it divides, keep the contiguous cache's tiles, so paged decoding is bitwise the
      // contiguous one's; other sizes make a tile of one block.
      const int64_t width = kt.getDimSize(rank - 1);
      const bool gatherable = kKeyTile % blockSize == 0 && width != ShapedType::kDynamic &&
                              width == vt.getDimSize(rank - 1) && width == qt.getDimSize(rank - 1);
      if (blockSize % kKeyTile != 0 && !gatherable)
        keyTile = blockSize;
    }
    // Small blocks: a key tile gathers kKeyTile / block blocks into a scratch tile.
    const bool gatherTiles = paged && blockSize < keyTile;
    auto c = [&](int64_t x) -> Value { return arith::ConstantIndexOp::create(b, loc, x); };
    auto minIdx = [&](Value x, Value y) -> Value { return arith::MinSIOp::create(b, loc, x, y); };
    auto fc = [&](double x) { return scalarConstant(b, loc, et, x); };

    // Extents. Where two operands share a dynamic extent (a promise of the
    // op), take the smaller: a request that breaks it reads nothing out of
    // bounds (as broadcastDims does for elementwise ops).
    auto sharedDim = [&](ArrayRef<std::pair<Value, int64_t>> uses) {
      Value size;
      bool allStatic = true;
      for (auto [t, i] : uses)
        allStatic &= !cast<RankedTensorType>(t.getType()).isDynamicDim(i);
      for (auto [t, i] : uses) {
        Value d = dimValue(b, loc, t, i);
        if (allStatic)
          return d;
        size = size ? minIdx(size, d) : d;
      }
      return size;
    };
    RankedTensorType mt = mask ? cast<RankedTensorType>(mask.getType()) : RankedTensorType();
    int64_t mrank = mask ? mt.getRank() : 0;
    // Score dim i read from mask dim i - (rank - mrank); a static 1 there broadcasts.
    auto maskDim = [&](int64_t i) -> int64_t {
      int64_t j = i - (rank - mrank);
      return (mask && j >= 0 && mt.getDimSize(j) != 1) ? j : -1;
    };
    SmallVector<std::pair<Value, int64_t>> sqUses = {{q, rank - 2}}, skUses = {{k, rank - 2}, {v, rank - 2}};
    if (maskDim(rank - 2) >= 0)
      sqUses.push_back({mask, maskDim(rank - 2)});
    if (maskDim(rank - 1) >= 0)
      skUses.push_back({mask, maskDim(rank - 1)});
    Value sq = sharedDim(sqUses), sk = sharedDim(skUses);
    Value d = sharedDim({{q, rank - 1}, {k, rank - 1}});
    Value dv = dimValue(b, loc, v, rank - 1);

    // The result: every row is written, except when the mask's rows promised
    // more than there are (then sq is smaller and the rest stays unset).
    SmallVector<Value> outDims;
    for (int64_t i = 0; i < rank - 1; ++i)
      outDims.push_back(dimValue(b, loc, q, i));
    outDims.push_back(dv);
    Value init = emptyTensor(b, loc, rt, outDims);

    // Split keys (FlashDecoding, as the CUDA kernel does): past splitKeys keys, each work
    // item takes the key tiles of one split of splitKeys keys and writes its rows' partial
    // max, sum and accumulator; a second loop combines the splits of each row. Splits start
    // at fixed key offsets whatever the batch, the heads or the query rows, so a row's
    // reduction order depends on its keys alone: decode steps, speculative verification and
    // chunked prefill still agree bit for bit. Where the key count is only known at run time
    // and there is one split, the items write the output as unsplit ones do (the partials and the
    // combination are then empty), so short contexts cost no second pass and give the same bits.
    std::optional<int64_t> staticKeys = getConstantIntValue(sk);
    // Heads of 9 to 15 (f32, static), too short for a whole vector: the scores take the keys in
    // the vector lanes (below). Without a mask their softmax is vector code too, and a static
    // key count of at most kMaxWholeKeys is one tile: the online softmax's rescaling and its
    // row reductions then happen once per row, not once per 64 keys.
    const std::optional<int64_t> staticHead = getConstantIntValue(d);
    const bool keysInLanes = et.isF32() && staticHead && *staticHead > 8 && *staticHead < 16;
    const bool vectorSoftmax = keysInLanes && !mask;
    if (vectorSoftmax && !paged && staticKeys && *staticKeys > 0 && *staticKeys <= kMaxWholeKeys)
      keyTile = llvm::alignTo(*staticKeys, 16);
    const int64_t splitKeys = llvm::divideCeil(kSplitKeys, keyTile) * keyTile;
    const bool splitting = !staticKeys || *staticKeys > splitKeys;
    Value splits = arith::MaxSIOp::create(b, loc, arith::CeilDivSIOp::create(b, loc, sk, c(splitKeys)), c(1));
    Value oneSplit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, splits, c(1));
    auto onOneSplit = [&](Value yes, Value no) -> Value { return arith::SelectOp::create(b, loc, oneSplit, yes, no); };

    SmallVector<OpFoldResult> ubs;
    for (int64_t i = 0; i < nb; ++i)
      ubs.push_back(getAsOpFoldResult(outDims[i]));
    Value blocks = arith::CeilDivSIOp::create(b, loc, sq, c(kQueryBlock));
    ubs.push_back(blocks);
    // Split partials: the max and the sum [batch..., 2, split, query row] (one tensor: two
    // equal empty tensors would be one value after CSE) and acc [batch..., split, query row, dv].
    // Keys read from a KV cache are at most its capacity, a size known when the run starts: the
    // partials then have a slot for every split the capacity allows, so kiln-plan-memory places
    // them in the arena and reuses the space layer after layer (sized by the run's own split
    // count they would be heap buffers, each layer's held until the run ends: gigabytes for a
    // long prefill of a large model).
    Value keyBound;
    if (paged) {
      keyBound = arith::MulIOp::create(b, loc, dimValue(b, loc, pagedTable, 1), c(blockSize));
    } else if (auto append = op.getKey().getDefiningOp<graph::KvCacheAppendOp>();
               append && append.getAxis() == rank - 2) {
      if (Value cache = rewriter.getRemappedValue(append.getCache()))
        keyBound = dimValue(b, loc, cache, rank - 2);
    }
    SmallVector<Value> partials;
    if (splitting) {
      ubs.push_back(splits);
      auto partial = [&](ArrayRef<Value> tail) {
        SmallVector<Value> dims(outDims.begin(), outDims.begin() + nb);
        dims.append(tail.begin(), tail.end());
        SmallVector<int64_t> shape;
        for (Value dim : dims)
          shape.push_back(getConstantIntValue(dim).value_or(ShapedType::kDynamic));
        partials.push_back(emptyTensor(b, loc, RankedTensorType::get(shape, et), dims));
      };
      Value slots = splits, partialRows = onOneSplit(c(0), sq);
      if (keyBound) {
        slots = arith::MaxSIOp::create(b, loc, arith::CeilDivSIOp::create(b, loc, keyBound, c(splitKeys)), c(1));
        partialRows = dimValue(b, loc, q, rank - 2); // >= sq, and unlike the mask's rows known at the start
      }
      partial({c(2), slots, partialRows});
      partial({slots, partialRows, dv});
    }
    SmallVector<Value> outs = {init};
    outs.append(partials);
    auto forall = scf::ForallOp::create(b, loc, ubs, outs, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> ivs(forall.getInductionVars());

    // Batch index of a key/value operand (or the mask) for query batch index
    // ivs[i]: the same, 0 for a broadcast 1, or ivs[i] / (Bq / Bk) for grouped
    // heads; clamped into the operand.
    auto batchIndex = [&](Value t, int64_t j, int64_t i) -> OpFoldResult {
      auto tt = cast<RankedTensorType>(t.getType());
      int64_t bt = tt.getDimSize(j), bq = qt.getDimSize(i);
      if (bt == 1)
        return b.getIndexAttr(0);
      if (bt == bq && bt != ShapedType::kDynamic)
        return ivs[i];
      Value size = dimValue(b, loc, t, j);
      Value ratio = arith::DivSIOp::create(b, loc, outDims[i], arith::MaxSIOp::create(b, loc, size, c(1)));
      ratio = arith::MaxSIOp::create(b, loc, ratio, c(1));
      Value idx = arith::DivSIOp::create(b, loc, ivs[i], ratio);
      return minIdx(idx, arith::SubIOp::create(b, loc, size, c(1)));
    };
    auto unit = [&](int64_t n) { return SmallVector<OpFoldResult>(n, b.getIndexAttr(1)); };
    // The batch offsets of each operand, computed once per work item.
    auto batchOffsets = [&](Value t) {
      SmallVector<OpFoldResult> offsets;
      for (int64_t i = 0; i < nb; ++i)
        offsets.push_back(t == q ? OpFoldResult(ivs[i]) : batchIndex(t, i, i));
      return offsets;
    };
    SmallVector<OpFoldResult> qBatch = batchOffsets(q), kBatch = batchOffsets(k), vBatch = batchOffsets(v);
    // A [rows, cols] slice of the last two dims of t at the batch offsets.
    auto tile2d = [&](Value t, ArrayRef<OpFoldResult> batch, OpFoldResult row0, OpFoldResult rows,
                      OpFoldResult cols) -> Value {
      SmallVector<OpFoldResult> offsets(batch), sizes = unit(nb);
      offsets.append({row0, b.getIndexAttr(0)});
      sizes.append({rows, cols});
      auto type = RankedTensorType::get({staticSize(rows), staticSize(cols)}, et);
      return tensor::ExtractSliceOp::create(b, loc, type, t, offsets, sizes, unit(rank));
    };

    // Keys and values of a paged KV cache (kiln-kv-cache-in-place with a block size) are read
    // from the pool at the blocks the sequence's table names, instead of the gathered view (left
    // dead). Tiles start at multiples of the key tile wherever the blocks lie, so a sequence's
    // keys are reduced in the same order in any batch, and as in the contiguous cache.
    // `rows` entries from position k0 of one block (k0's block, from k0 % block on).
    auto blockSlice = [&](OpBuilder &ob, Location l, Value pool, ArrayRef<OpFoldResult> batch, Value k0, Value rows,
                          OpFoldResult cols) -> Value {
      Value col = arith::DivUIOp::create(ob, l, k0, arith::ConstantIndexOp::create(ob, l, blockSize));
      Value off = arith::RemUIOp::create(ob, l, k0, arith::ConstantIndexOp::create(ob, l, blockSize));
      Value bi = getValueOrCreateConstantIndexOp(ob, l, batch[0]);
      Value id = tensor::ExtractOp::create(ob, l, pagedTable, ValueRange{bi, col});
      Value blk = arith::IndexCastOp::create(ob, l, ob.getIndexType(), id);
      Value last = arith::SubIOp::create(ob, l, dimValue(ob, l, pool, 0), arith::ConstantIndexOp::create(ob, l, 1));
      blk = arith::MaxSIOp::create(ob, l, arith::MinSIOp::create(ob, l, blk, last),
                                   arith::ConstantIndexOp::create(ob, l, 0));
      SmallVector<OpFoldResult> offsets = {blk}, sizes(nb, ob.getIndexAttr(1));
      offsets.append(batch.begin() + 1, batch.end());
      offsets.append({off, ob.getIndexAttr(0)});
      sizes.append({rows, cols});
      auto type = RankedTensorType::get({ShapedType::kDynamic, staticSize(cols)}, et);
      return tensor::ExtractSliceOp::create(ob, l, type, pool, offsets, sizes,
                                            SmallVector<OpFoldResult>(rank, ob.getIndexAttr(1)));
    };
    // Blocks smaller than the key tile: the tile [k0, k0 + rows)'s blocks copied into `scratch`
    // from its row `row0` on; returns the updated scratch.
    auto gatherBlocks = [&](Value pool, ArrayRef<OpFoldResult> batch, Value k0, Value rows, OpFoldResult cols,
                            Value scratch, int64_t row0) -> Value {
      Value n = arith::CeilDivUIOp::create(b, loc, rows, c(blockSize));
      auto copy = scf::ForOp::create(b, loc, c(0), n, c(1), ValueRange{scratch});
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(copy.getBody());
        Value j = copy.getInductionVar();
        Value first = arith::MulIOp::create(b, loc, j, c(blockSize));
        Value part = minIdx(c(blockSize), arith::SubIOp::create(b, loc, rows, first));
        Value slice = blockSlice(b, loc, pool, batch, arith::AddIOp::create(b, loc, k0, first), part, cols);
        Value at = arith::AddIOp::create(b, loc, first, c(row0));
        Value into = tensor::InsertSliceOp::create(b, loc, slice, copy.getRegionIterArg(0),
                                                   SmallVector<OpFoldResult>{at, b.getIndexAttr(0)},
                                                   SmallVector<OpFoldResult>{part, cols}, unit(2));
        scf::YieldOp::create(b, loc, ValueRange{into});
      }
      return copy.getResult(0);
    };
    auto scratchTile = [&](Value scratch, int64_t row0, Value rows, OpFoldResult cols) -> Value {
      auto type = RankedTensorType::get({ShapedType::kDynamic, staticSize(cols)}, et);
      return tensor::ExtractSliceOp::create(b, loc, type, scratch,
                                            SmallVector<OpFoldResult>{b.getIndexAttr(row0), b.getIndexAttr(0)},
                                            SmallVector<OpFoldResult>{rows, cols}, unit(2));
    };

    SmallVector<OpFoldResult> maskBatch;
    for (int64_t jm = 0; jm < mrank && jm + rank - mrank < nb; ++jm)
      maskBatch.push_back(mt.getDimSize(jm) == 1 ? OpFoldResult(b.getIndexAttr(0))
                                                 : batchIndex(mask, jm, jm + rank - mrank));
    Value q0 = arith::MulIOp::create(b, loc, ivs[nb], c(kQueryBlock));
    Value rows = minIdx(c(kQueryBlock), arith::SubIOp::create(b, loc, sq, q0));
    OpFoldResult dSize = getAsOpFoldResult(d), dvSize = getAsOpFoldResult(dv);
    Value qBlock = tile2d(q, qBatch, q0, rows, dSize);

    auto vec = RankedTensorType::get({ShapedType::kDynamic}, et);
    auto accType0 = RankedTensorType::get({ShapedType::kDynamic, staticSize(dvSize)}, et);
    Value negInf = fc(-std::numeric_limits<double>::infinity()), zero = fc(0.0);
    Value m0 = linalg::FillOp::create(b, loc, negInf, tensor::EmptyOp::create(b, loc, vec, ValueRange{rows}).getResult()).getResult(0);
    Value l0 = linalg::FillOp::create(b, loc, zero, tensor::EmptyOp::create(b, loc, vec, ValueRange{rows}).getResult()).getResult(0);
    SmallVector<Value> accDyn = {rows};
    if (accType0.isDynamicDim(1))
      accDyn.push_back(dv);
    Value acc0 = linalg::FillOp::create(b, loc, zero, tensor::EmptyOp::create(b, loc, accType0, accDyn).getResult()).getResult(0);
    // Scratch for the score tile and a per-row vector, reused by every key
    // tile (loop-carried, so bufferization allocates them once per item).
    Value scores0 = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{kQueryBlock, keyTile}, et);
    Value rowScratch0 = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{kQueryBlock}, et);
    // Paged caches with blocks smaller than the key tile: the tile's keys (rows [0, tile)) and
    // values (rows [tile, 2 tile)) gathered from their blocks into one loop-carried scratch. One
    // buffer, not two: two equal empty tensors would be merged into one value by CSE, and the
    // value tile would then be copied over the key tile before the scores read it.
    SmallVector<Value> loopInits = {m0, l0, acc0, scores0, rowScratch0};
    if (gatherTiles)
      loopInits.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{2 * keyTile, staticSize(dSize)}, et));
    // Heads of 9 to 15 (f32, static), too short for a whole vector: the scores take the keys in
    // the vector lanes, reading the key tile transposed into a loop-carried scratch [head,
    // keyTile] (filled once, so that CSE cannot merge it with another scratch): Q[row, c]
    // broadcast times K^T[c, 16 keys], summed over c. As masked dot products along the head,
    // each score ended in a horizontal reduction: ocr_rec's 8 heads of 15 over 80 keys ran at
    // 24 GFLOP/s, 296 us a block (now 152) where ONNX Runtime's unfused products take about 60.
    // Heads of 8 and 16 keep the dot products (whole vectors); a decode step's single query row
    // would not repay the transpose.
    int64_t headSize = staticSize(dSize), valueSize = staticSize(dvSize);
    const size_t ktIndex = loopInits.size();
    if (keysInLanes)
      loopInits.push_back(linalg::FillOp::create(b, loc, zero,
                                                 tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{headSize, keyTile}, et)
                                                     .getResult())
                              .getResult(0));

    AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx), e = getAffineDimExpr(2, ctx);
    auto map = [&](ArrayRef<AffineExpr> exprs, unsigned dims) { return AffineMap::get(dims, 0, exprs, ctx); };
    auto safeMax = [&](OpBuilder &nb, Location l, Value mx) -> Value {
      Value isNegInf = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, mx, scalarConstant(nb, l, et, -std::numeric_limits<double>::infinity()));
      return arith::SelectOp::create(nb, l, isNegInf, scalarConstant(nb, l, et, 0.0), mx);
    };
    double scale = op.getScale().convertToDouble();
    // With static head sizes the two products are written with vectors (LLVM
    // would keep an f32 dot product scalar: it may not reorder the sum), the
    // last one masked where the head does not split into whole vectors (the
    // 8 heads of 15 of a 120-wide SVTR block ran as scalar loops at 9 GFLOP/s,
    // a third of ocr_rec); with dynamic ones, or heads under 8, as linalg
    // contractions.
    auto vectorWidth = [](int64_t n) -> int64_t {
      if (ShapedType::isDynamic(n))
        return 0;
      return n % 16 == 0 ? 16 : n % 8 == 0 ? 8 : n > 8 ? 16 : 0;
    };
    int64_t qkWidth = et.isF32() ? vectorWidth(headSize) : 0, pvWidth = et.isF32() ? vectorWidth(valueSize) : 0;
    auto zeroVector = [&](VectorType vt) -> Value {
      return arith::ConstantOp::create(b, loc, vt, DenseElementsAttr::get(vt, b.getFloatAttr(et, 0.0)));
    };
    // A vector past the end of the row (inBounds false) reads zeros there and writes nothing.
    auto readVector = [&](VectorType vt, Value t, ArrayRef<Value> idx, bool inBounds = true) -> Value {
      return vector::TransferReadOp::create(b, loc, vt, t, idx, zero, ArrayRef<bool>{inBounds});
    };
    // for (x = 0; x < n; ++x) carried = body(x, carried), on tensors.
    auto forRange = [&](Value n, Value init, const std::function<Value(Value, Value)> &body) -> Value {
      auto loopOp = scf::ForOp::create(b, loc, c(0), n, c(1), ValueRange{init});
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loopOp.getBody());
      Value next = body(loopOp.getInductionVar(), loopOp.getRegionIterArg(0));
      scf::YieldOp::create(b, loc, ValueRange{next});
      return loopOp.getResult(0);
    };

    // The online softmax of one key tile as vector code, row by row, over the score buffer
    // [16, keyTile] (the scores of rows [0, rows) and keys [0, kn), whole blocks of 16 past kn
    // read but masked out): m' = max(m, row max), alpha = exp(m - m'), P = exp(S - m') in place,
    // l' = l * alpha + sum P. Returns the buffer holding P, m', l' and the row buffer holding
    // alpha. The generic form's row reductions were scalar loops (LLVM may not reorder a float
    // sum), most of a small-head attention's time.
    auto vectorTileSoftmax = [&](Value scores, Value m, Value l, Value rowBuf, Value rows,
                                 Value kn) -> std::tuple<Value, Value, Value, Value> {
      auto vt = VectorType::get({16}, et);
      auto maskType = VectorType::get({16}, b.getI1Type());
      Value negInfV = vector::BroadcastOp::create(b, loc, vt, negInf), zeroV = zeroVector(vt);
      auto rowLoop = scf::ForOp::create(b, loc, c(0), rows, c(1), ValueRange{scores, m, l, rowBuf});
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(rowLoop.getBody());
      Value row = rowLoop.getInductionVar();
      Value sBuf = rowLoop.getRegionIterArg(0), mT = rowLoop.getRegionIterArg(1), lT = rowLoop.getRegionIterArg(2),
            aBuf = rowLoop.getRegionIterArg(3);
      auto keysLeft = [&](Value key) {
        return vector::CreateMaskOp::create(b, loc, maskType, ValueRange{arith::SubIOp::create(b, loc, kn, key)});
      };
      auto maxLoop = scf::ForOp::create(b, loc, c(0), kn, c(16), ValueRange{negInfV});
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(maxLoop.getBody());
        Value key = maxLoop.getInductionVar();
        Value sv = arith::SelectOp::create(b, loc, keysLeft(key), readVector(vt, sBuf, {row, key}), negInfV);
        scf::YieldOp::create(b, loc, ValueRange{maxValues(b, loc, sv, maxLoop.getRegionIterArg(0))});
      }
      Value tileMax = vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXNUMF, maxLoop.getResult(0));
      Value mOld = tensor::ExtractOp::create(b, loc, mT, ValueRange{row});
      Value mRow = maxValues(b, loc, tileMax, mOld);
      Value safe = safeMax(b, loc, mRow);
      Value alphaRow = expOfNonPositive(b, loc, arith::SubFOp::create(b, loc, mOld, safe));
      Value safeV = vector::BroadcastOp::create(b, loc, vt, safe);
      auto expLoop = scf::ForOp::create(b, loc, c(0), kn, c(16), ValueRange{sBuf, zeroV});
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(expLoop.getBody());
        Value key = expLoop.getInductionVar();
        Value pv = expOfNonPositive(
            b, loc, arith::SubFOp::create(b, loc, readVector(vt, expLoop.getRegionIterArg(0), {row, key}), safeV));
        Value sum = arith::AddFOp::create(b, loc, expLoop.getRegionIterArg(1),
                                          arith::SelectOp::create(b, loc, keysLeft(key), pv, zeroV));
        Value written = vector::TransferWriteOp::create(b, loc, pv, expLoop.getRegionIterArg(0), ValueRange{row, key},
                                                        ArrayRef<bool>{true})
                            .getResult();
        scf::YieldOp::create(b, loc, ValueRange{written, sum});
      }
      Value tileSum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, expLoop.getResult(1));
      Value lOld = tensor::ExtractOp::create(b, loc, lT, ValueRange{row});
      Value lRow = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, lOld, alphaRow), tileSum);
      scf::YieldOp::create(b, loc,
                           ValueRange{expLoop.getResult(0), tensor::InsertOp::create(b, loc, mRow, mT, ValueRange{row}),
                                      tensor::InsertOp::create(b, loc, lRow, lT, ValueRange{row}),
                                      tensor::InsertOp::create(b, loc, alphaRow, aBuf, ValueRange{row})});
      return {rowLoop.getResult(0), rowLoop.getResult(1), rowLoop.getResult(2), rowLoop.getResult(3)};
    };

    Value kBegin = splitting ? arith::MulIOp::create(b, loc, ivs[nb + 1], c(splitKeys)).getResult() : c(0);
    Value kEnd = splitting ? minIdx(sk, arith::AddIOp::create(b, loc, kBegin, c(splitKeys))) : sk;
    auto loop = scf::ForOp::create(b, loc, kBegin, kEnd, c(keyTile), loopInits);
    {
      OpBuilder::InsertionGuard loopGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = loop.getInductionVar();
      Value m = loop.getRegionIterArg(0), l = loop.getRegionIterArg(1), acc = loop.getRegionIterArg(2);
      Value scoresBuf = loop.getRegionIterArg(3), rowBuf = loop.getRegionIterArg(4);
      Value kn = minIdx(c(keyTile), arith::SubIOp::create(b, loc, kEnd, k0));
      Value kTile, vTile, scratch;
      if (gatherTiles) {
        // Both copies before either tile is read: the reads never see a later write.
        scratch = gatherBlocks(kPool, kBatch, k0, kn, dSize, loop.getRegionIterArg(5), 0);
        scratch = gatherBlocks(vPool, vBatch, k0, kn, dvSize, scratch, keyTile);
        kTile = scratchTile(scratch, 0, kn, dSize);
        vTile = scratchTile(scratch, keyTile, kn, dvSize);
      } else if (paged) {
        kTile = blockSlice(b, loc, kPool, kBatch, k0, kn, dSize);
        vTile = blockSlice(b, loc, vPool, vBatch, k0, kn, dvSize);
      } else {
        kTile = tile2d(k, kBatch, k0, kn, dSize);
        vTile = tile2d(v, vBatch, k0, kn, dvSize);
      }
      SmallVector<OpFoldResult> zero2 = {b.getIndexAttr(0), b.getIndexAttr(0)};
      auto sType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, et);
      Value s = tensor::ExtractSliceOp::create(b, loc, sType, scoresBuf, zero2, SmallVector<OpFoldResult>{rows, kn}, unit(2));
      Value ktNext, scoresDest = scoresBuf;
      if (keysInLanes) {
        // K^T into the static scratch's first kn columns, then whole blocks of 16 keys read
        // and written in bounds: the scratch and the score tile are keyTile (a multiple of 16)
        // wide, and the scores past kn, from stale columns, are never read.
        auto ktType = RankedTensorType::get({headSize, ShapedType::kDynamic}, et);
        SmallVector<OpFoldResult> ktSizes = {b.getIndexAttr(headSize), kn};
        Value kt = tensor::ExtractSliceOp::create(b, loc, ktType, loop.getRegionIterArg(ktIndex), zero2, ktSizes, unit(2));
        kt = linalg::TransposeOp::create(b, loc, kTile, kt, ArrayRef<int64_t>{1, 0}).getResult()[0];
        ktNext = tensor::InsertSliceOp::create(b, loc, kt, loop.getRegionIterArg(ktIndex), zero2, ktSizes, unit(2));
        auto vt = VectorType::get({16}, et);
        // `group` rows from `row0`, each block of 16 keys: independent FMA chains that share
        // the K^T loads (one row alone is a chain of `head` dependent FMAs per block).
        auto scoreRows = [&](Value row0, int64_t group, Value sRows) -> Value {
          auto blocks = scf::ForOp::create(b, loc, c(0), kn, c(16), ValueRange{sRows});
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(blocks.getBody());
          Value key = blocks.getInductionVar();
          SmallVector<Value> rowIdx, sums(group, zeroVector(vt));
          for (int64_t r = 0; r < group; ++r)
            rowIdx.push_back(r ? arith::AddIOp::create(b, loc, row0, c(r)).getResult() : row0);
          for (int64_t ch = 0; ch < headSize; ++ch) {
            Value kv = readVector(vt, ktNext, {c(ch), key});
            for (int64_t r = 0; r < group; ++r) {
              Value qs = tensor::ExtractOp::create(b, loc, qBlock, ValueRange{rowIdx[r], c(ch)});
              sums[r] = vector::FMAOp::create(b, loc, vector::BroadcastOp::create(b, loc, vt, qs), kv, sums[r]);
            }
          }
          Value written = blocks.getRegionIterArg(0);
          for (int64_t r = 0; r < group; ++r) {
            Value sum = sums[r];
            if (vectorSoftmax && scale != 1.0)
              sum = arith::MulFOp::create(b, loc, sum, vector::BroadcastOp::create(b, loc, vt, fc(scale)));
            written = vector::TransferWriteOp::create(b, loc, sum, written, ValueRange{rowIdx[r], key},
                                                      ArrayRef<bool>{true})
                          .getResult();
          }
          scf::YieldOp::create(b, loc, ValueRange{written});
          return blocks.getResult(0);
        };
        constexpr int64_t kScoreRows = 4;
        Value groups = arith::DivUIOp::create(b, loc, rows, c(kScoreRows));
        scoresDest = forRange(groups, scoresBuf, [&](Value g, Value sRows) {
          return scoreRows(arith::MulIOp::create(b, loc, g, c(kScoreRows)), kScoreRows, sRows);
        });
        auto restRows = scf::ForOp::create(b, loc, arith::MulIOp::create(b, loc, groups, c(kScoreRows)), rows, c(1),
                                           ValueRange{scoresDest});
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(restRows.getBody());
          scf::YieldOp::create(b, loc,
                               ValueRange{scoreRows(restRows.getInductionVar(), 1, restRows.getRegionIterArg(0))});
        }
        scoresDest = restRows.getResult(0);
        s = tensor::ExtractSliceOp::create(b, loc, sType, scoresDest, zero2, SmallVector<OpFoldResult>{rows, kn}, unit(2));
      } else if (qkWidth) {
        // S = Q K^T as dot products of contiguous rows, `qkWidth` lanes at a time.
        auto vt = VectorType::get({qkWidth}, et);
        s = forRange(rows, s, [&](Value row, Value sRows) {
          return forRange(kn, sRows, [&](Value key, Value sCols) {
            auto dot = scf::ForOp::create(b, loc, c(0), c(headSize), c(qkWidth), ValueRange{zeroVector(vt)});
            {
              OpBuilder::InsertionGuard g(b);
              b.setInsertionPointToStart(dot.getBody());
              Value col = dot.getInductionVar();
              bool whole = headSize % qkWidth == 0;
              Value qv = readVector(vt, qBlock, {row, col}, whole);
              Value kv = readVector(vt, kTile, {key, col}, whole);
              scf::YieldOp::create(b, loc, ValueRange{vector::FMAOp::create(b, loc, qv, kv, dot.getRegionIterArg(0))});
            }
            Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, dot.getResult(0));
            return tensor::InsertOp::create(b, loc, sum, sCols, ValueRange{row, key}).getResult();
          });
        });
      } else {
        s = linalg::FillOp::create(b, loc, zero, s).getResult(0);
        // S = Q K^T: (i, j, c) with the head dim innermost in both operands.
        s = linalg::GenericOp::create(
                b, loc, sType, ValueRange{qBlock, kTile}, ValueRange{s},
                SmallVector<AffineMap>{map({i, e}, 3), map({j, e}, 3), map({i, j}, 3)},
                SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  linalg::YieldOp::create(nb, l, addValues(nb, l, a[2], mulValues(nb, l, a[0], a[1])));
                })
                .getResult(0);
      }
      // S = S * scale + mask tile.
      SmallVector<Value> maskIn;
      SmallVector<AffineMap> maskMaps;
      if (mask && mrank == 0) {
        maskIn.push_back(mask);
        maskMaps.push_back(map({}, 2));
      } else if (mask) {
        SmallVector<OpFoldResult> offsets, sizes;
        SmallVector<int64_t> shape;
        SmallVector<AffineExpr> exprs;
        for (int64_t jm = 0; jm < mrank; ++jm) {
          int64_t di = jm + rank - mrank;
          bool bcast = mt.getDimSize(jm) == 1;
          if (di < nb) {
            offsets.push_back(maskBatch[jm]);
            sizes.push_back(b.getIndexAttr(1));
            continue;
          }
          bool isRow = di == rank - 2;
          offsets.push_back(bcast ? b.getIndexAttr(0) : OpFoldResult(isRow ? q0 : k0));
          sizes.push_back(bcast ? b.getIndexAttr(1) : OpFoldResult(isRow ? rows : kn));
          shape.push_back(bcast ? 1 : ShapedType::kDynamic);
          exprs.push_back(bcast ? getAffineConstantExpr(0, ctx) : (isRow ? i : j));
        }
        auto tileType = RankedTensorType::get(shape, et);
        maskIn.push_back(tensor::ExtractSliceOp::create(b, loc, tileType, mask, offsets, sizes, unit(mrank)));
        maskMaps.push_back(map(exprs, 2));
      }
      if (!vectorSoftmax && (mask || scale != 1.0)) {
        SmallVector<AffineMap> maps = maskMaps;
        maps.push_back(map({i, j}, 2));
        s = linalg::GenericOp::create(
                b, loc, sType, maskIn, ValueRange{s}, maps,
                SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value x = a.back();
                  if (scale != 1.0)
                    x = mulValues(nb, l, x, scalarConstant(nb, l, et, scale));
                  if (mask)
                    x = addValues(nb, l, x, a[0]);
                  linalg::YieldOp::create(nb, l, x);
                })
                .getResult(0);
      }
      auto rType = RankedTensorType::get({ShapedType::kDynamic}, et);
      Value mNew, lNew, alpha, p, scoresNext, rowNext;
      if (vectorSoftmax) {
        std::tie(scoresNext, mNew, lNew, rowNext) = vectorTileSoftmax(scoresDest, m, l, rowBuf, rows, kn);
        alpha = tensor::ExtractSliceOp::create(b, loc, rType, rowNext, SmallVector<OpFoldResult>{b.getIndexAttr(0)},
                                               SmallVector<OpFoldResult>{rows}, unit(1));
        p = tensor::ExtractSliceOp::create(b, loc, sType, scoresNext, zero2, SmallVector<OpFoldResult>{rows, kn}, unit(2));
      } else {
        // The tile's row reduction of `of` [rows, kn] into `init` [rows] by `combine`.
        auto reduceRows = [&](Value of, Value init, Value (*combine)(OpBuilder &, Location, Value, Value)) {
          return linalg::GenericOp::create(
                     b, loc, rType, ValueRange{of}, ValueRange{init},
                     SmallVector<AffineMap>{map({i, j}, 2), map({i}, 2)},
                     SmallVector<IteratorType>{IteratorType::parallel, IteratorType::reduction},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, combine(nb, l, a[1], a[0]));
                     })
              .getResult(0);
        };
        // The tile's row max (maxValues keeps the accumulator over a NaN score).
        Value tileMax = tensor::ExtractSliceOp::create(b, loc, rType, rowBuf, SmallVector<OpFoldResult>{b.getIndexAttr(0)},
                                                       SmallVector<OpFoldResult>{rows}, unit(1));
        tileMax = linalg::FillOp::create(b, loc, negInf, tileMax).getResult(0);
        tileMax = reduceRows(s, tileMax, [](OpBuilder &nb, Location l, Value acc, Value x) {
          return maxValues(nb, l, x, acc);
        });
        // m' = max(m, tile max); l *= alpha; the scratch row now holds alpha.
        auto update = linalg::GenericOp::create(
            b, loc, TypeRange{rType, rType, rType}, ValueRange{}, ValueRange{m, l, tileMax},
            SmallVector<AffineMap>(3, map({i}, 1)), SmallVector<IteratorType>{IteratorType::parallel},
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value mNew = maxValues(nb, l, a[2], a[0]);
              Value alpha = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], safeMax(nb, l, mNew)));
              linalg::YieldOp::create(nb, l, ValueRange{mNew, mulValues(nb, l, a[1], alpha), alpha});
            });
        mNew = update.getResult(0);
        alpha = update.getResult(2);
        // P = exp(S - m'), in place of S.
        p = linalg::GenericOp::create(
                b, loc, sType, ValueRange{mNew}, ValueRange{s}, SmallVector<AffineMap>{map({i}, 2), map({i, j}, 2)},
                SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value x = arith::SubFOp::create(nb, l, a[1], safeMax(nb, l, a[0]));
                  linalg::YieldOp::create(nb, l, math::ExpOp::create(nb, l, x).getResult());
                })
                .getResult(0);
        lNew = reduceRows(p, update.getResult(1), [](OpBuilder &nb, Location l, Value acc, Value x) {
          return addValues(nb, l, acc, x);
        });
        scoresNext = tensor::InsertSliceOp::create(b, loc, p, scoresDest, zero2, SmallVector<OpFoldResult>{rows, kn}, unit(2));
        rowNext = tensor::InsertSliceOp::create(b, loc, alpha, rowBuf, SmallVector<OpFoldResult>{b.getIndexAttr(0)},
                                                SmallVector<OpFoldResult>{rows}, unit(1));
      }
      auto accType = cast<RankedTensorType>(acc.getType());
      Value accNew;
      if (pvWidth) {
        // acc = acc * alpha + P V, `pvWidth` value columns at a time in registers:
        // one broadcast P entry times a contiguous row of V per key.
        auto vt = VectorType::get({pvWidth}, et);
        int64_t chunks = (valueSize + pvWidth - 1) / pvWidth;
        auto wholeChunk = [&](int64_t ch) { return (ch + 1) * pvWidth <= valueSize; };
        // `group` rows from `row0` with the whole row of acc in registers: independent
        // accumulators, each V chunk loaded once per key for all the rows. One row alone is a
        // chain of dependent FMAs (a head of 15: one accumulator, 4 cycles a key); each row
        // still sums its keys in order, so the bits do not depend on the grouping.
        auto rowsInRegisters = [&](Value row0, int64_t group, Value accRows) -> Value {
          SmallVector<Value> rowIdx, starts;
          for (int64_t r = 0; r < group; ++r)
            rowIdx.push_back(r ? arith::AddIOp::create(b, loc, row0, c(r)).getResult() : row0);
          for (Value row : rowIdx) {
            Value scaleRow = vector::BroadcastOp::create(b, loc, vt, tensor::ExtractOp::create(b, loc, alpha, ValueRange{row}));
            for (int64_t ch = 0; ch < chunks; ++ch)
              starts.push_back(arith::MulFOp::create(
                  b, loc, readVector(vt, accRows, {row, c(ch * pvWidth)}, wholeChunk(ch)), scaleRow));
          }
          auto keys = scf::ForOp::create(b, loc, c(0), kn, c(1), starts);
          {
            OpBuilder::InsertionGuard g(b);
            b.setInsertionPointToStart(keys.getBody());
            Value key = keys.getInductionVar();
            SmallVector<Value> vv, next;
            for (int64_t ch = 0; ch < chunks; ++ch)
              vv.push_back(readVector(vt, vTile, {key, c(ch * pvWidth)}, wholeChunk(ch)));
            for (auto [r, row] : llvm::enumerate(rowIdx)) {
              Value pv = vector::BroadcastOp::create(b, loc, vt, tensor::ExtractOp::create(b, loc, p, ValueRange{row, key}));
              for (int64_t ch = 0; ch < chunks; ++ch)
                next.push_back(vector::FMAOp::create(b, loc, pv, vv[ch], keys.getRegionIterArg(r * chunks + ch)));
            }
            scf::YieldOp::create(b, loc, next);
          }
          Value written = accRows;
          for (auto [r, row] : llvm::enumerate(rowIdx))
            for (int64_t ch = 0; ch < chunks; ++ch)
              written = vector::TransferWriteOp::create(b, loc, keys.getResult(r * chunks + ch), written,
                                                        ValueRange{row, c(ch * pvWidth)}, ArrayRef<bool>{wholeChunk(ch)})
                            .getResult();
          return written;
        };
        const int64_t group = std::min<int64_t>(4, std::max<int64_t>(1, kMaxAccumulators / chunks));
        Value grouped = acc;
        if (chunks <= kMaxAccumulators && group > 1) {
          Value groups = arith::DivUIOp::create(b, loc, rows, c(group));
          grouped = forRange(groups, acc, [&](Value g, Value accRows) {
            return rowsInRegisters(arith::MulIOp::create(b, loc, g, c(group)), group, accRows);
          });
        }
        Value firstLeft = chunks <= kMaxAccumulators && group > 1
                              ? arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, rows, c(group)), c(group)).getResult()
                              : c(0);
        // A row too wide for registers: a chunk of pvWidth value columns at a time.
        auto chunkByChunk = [&](Value row, Value accRows) -> Value {
          Value scaleRow = vector::BroadcastOp::create(b, loc, vt, tensor::ExtractOp::create(b, loc, alpha, ValueRange{row}));
          auto cols = scf::ForOp::create(b, loc, c(0), c(valueSize), c(pvWidth), ValueRange{accRows});
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(cols.getBody());
          Value col = cols.getInductionVar(), accCols = cols.getRegionIterArg(0);
          bool whole = valueSize % pvWidth == 0;
          Value start = arith::MulFOp::create(b, loc, readVector(vt, accCols, {row, col}, whole), scaleRow);
          auto keys = scf::ForOp::create(b, loc, c(0), kn, c(1), ValueRange{start});
          {
            OpBuilder::InsertionGuard g2(b);
            b.setInsertionPointToStart(keys.getBody());
            Value key = keys.getInductionVar();
            Value pv = vector::BroadcastOp::create(b, loc, vt, tensor::ExtractOp::create(b, loc, p, ValueRange{row, key}));
            Value vv = readVector(vt, vTile, {key, col}, whole);
            scf::YieldOp::create(b, loc, ValueRange{vector::FMAOp::create(b, loc, pv, vv, keys.getRegionIterArg(0))});
          }
          Value written = vector::TransferWriteOp::create(b, loc, keys.getResult(0), accCols, ValueRange{row, col},
                                                          ArrayRef<bool>{whole})
                              .getResult();
          scf::YieldOp::create(b, loc, ValueRange{written});
          return cols.getResult(0);
        };
        // The rows left after the groups, one at a time.
        auto rest = scf::ForOp::create(b, loc, firstLeft, rows, c(1), ValueRange{grouped});
        {
          OpBuilder::InsertionGuard restGuard(b);
          b.setInsertionPointToStart(rest.getBody());
          Value row = rest.getInductionVar(), accRows = rest.getRegionIterArg(0);
          scf::YieldOp::create(b, loc,
                               ValueRange{chunks <= kMaxAccumulators ? rowsInRegisters(row, 1, accRows)
                                                                     : chunkByChunk(row, accRows)});
        }
        accNew = rest.getResult(0);
      } else {
        Value accScaled = linalg::GenericOp::create(
                              b, loc, accType, ValueRange{alpha}, ValueRange{acc},
                              SmallVector<AffineMap>{map({i}, 2), map({i, j}, 2)},
                              SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel},
                              [&](OpBuilder &nb, Location l, ValueRange a) {
                                linalg::YieldOp::create(nb, l, mulValues(nb, l, a[1], a[0]));
                              })
                              .getResult(0);
        // acc += P V: (i, j, e) with the value columns innermost (contiguous in V and acc).
        accNew = linalg::GenericOp::create(
                     b, loc, accType, ValueRange{p, vTile}, ValueRange{accScaled},
                     SmallVector<AffineMap>{map({i, j}, 3), map({j, e}, 3), map({i, e}, 3)},
                     SmallVector<IteratorType>{IteratorType::parallel, IteratorType::reduction, IteratorType::parallel},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, addValues(nb, l, a[2], mulValues(nb, l, a[0], a[1])));
                     })
                     .getResult(0);
      }
      SmallVector<Value> yields = {mNew, lNew, accNew, scoresNext, rowNext};
      if (gatherTiles)
        yields.push_back(scratch);
      if (keysInLanes)
        yields.push_back(ktNext);
      scf::YieldOp::create(b, loc, yields);
    }
    // out = acc / l; with no keys at all the product with an empty V is 0 (while a
    // row whose keys are all -inf stays 0 / 0 = NaN, as the unfused graph gives).
    auto finish = [&](Value acc, Value l) {
      Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, sk, c(0));
      return linalg::GenericOp::create(
                 b, loc, acc.getType(), ValueRange{l}, ValueRange{acc},
                 SmallVector<AffineMap>{map({i}, 2), map({i, j}, 2)},
                 SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel},
                 [&](OpBuilder &nb, Location lc, ValueRange a) {
                   Value quotient = divValues(nb, lc, a[1], a[0]);
                   linalg::YieldOp::create(nb, lc, ValueRange{arith::SelectOp::create(
                                                       nb, lc, noKeys, scalarConstant(nb, lc, et, 0.0), quotient)});
                 })
          .getResult(0);
    };
    auto insertRows = [&](Value part, Value into, ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes) {
      OpBuilder::InsertionGuard termGuard(b);
      // In the order of the shared outputs, one insert each: MLIR's forall canonicalizations
      // pair the n-th insert with the n-th output.
      b.setInsertionPointToEnd(cast<scf::ForallOp>(into.getParentRegion()->getParentOp()).getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, part, into, offsets, sizes,
                                            SmallVector<OpFoldResult>(offsets.size(), b.getIndexAttr(1)));
    };
    SmallVector<OpFoldResult> batchAt(ivs.begin(), ivs.begin() + nb);
    auto at = [&](ArrayRef<OpFoldResult> tail) {
      SmallVector<OpFoldResult> v(batchAt);
      v.append(tail.begin(), tail.end());
      return v;
    };
    auto sizesOf = [&](ArrayRef<OpFoldResult> tail) {
      SmallVector<OpFoldResult> v = unit(nb);
      v.append(tail.begin(), tail.end());
      return v;
    };
    if (!splitting) {
      insertRows(finish(loop.getResult(2), loop.getResult(1)), forall.getRegionIterArgs()[0],
                 at({q0, b.getIndexAttr(0)}), sizesOf({rows, dvSize}));
      rewriter.replaceOp(op, forall.getResult(0));
      return success();
    }
    // The first n rows of a [rows] or [rows, dv] tile.
    auto firstRows = [&](Value t, Value n) -> Value {
      auto tt = cast<RankedTensorType>(t.getType());
      SmallVector<OpFoldResult> offsets(tt.getRank(), b.getIndexAttr(0)), sizes = {n};
      SmallVector<int64_t> shape = {ShapedType::kDynamic};
      if (tt.getRank() == 2) {
        sizes.push_back(dvSize);
        shape.push_back(tt.getDimSize(1));
      }
      return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(shape, et), t, offsets, sizes,
                                            unit(tt.getRank()));
    };
    // One split: the output rows. Several: this split's partial results (empty extents otherwise).
    OpFoldResult one = b.getIndexAttr(1);
    Value split = ivs[nb + 1];
    Value outRows = onOneSplit(rows, c(0)), partRows = onOneSplit(c(0), rows), partAt = onOneSplit(c(0), q0);
    insertRows(firstRows(finish(loop.getResult(2), loop.getResult(1)), outRows), forall.getRegionIterArgs()[0],
               at({q0, b.getIndexAttr(0)}), sizesOf({outRows, dvSize}));
    Value maxSum = tensor::EmptyOp::create(b, loc, RankedTensorType::get({2, ShapedType::kDynamic}, et), ValueRange{partRows});
    for (int64_t which = 0; which < 2; ++which)
      maxSum = tensor::InsertSliceOp::create(b, loc, firstRows(loop.getResult(which), partRows), maxSum,
                                             SmallVector<OpFoldResult>{b.getIndexAttr(which), b.getIndexAttr(0)},
                                             SmallVector<OpFoldResult>{one, partRows}, unit(2));
    insertRows(maxSum, forall.getRegionIterArgs()[1], at({b.getIndexAttr(0), split, partAt}),
               sizesOf({b.getIndexAttr(2), one, partRows}));
    insertRows(firstRows(loop.getResult(2), partRows), forall.getRegionIterArgs()[2],
               at({split, partAt, b.getIndexAttr(0)}), sizesOf({one, partRows, dvSize}));

    // The combination, per query block: M = max_s m_s, w_s = exp(m_s - M),
    // l = sum_s l_s w_s, acc = sum_s acc_s w_s (splits in order), out = acc / l.
    b.setInsertionPointAfter(forall);
    SmallVector<OpFoldResult> ubs2(ubs.begin(), ubs.end() - 2);
    ubs2.push_back(onOneSplit(c(0), blocks)); // nothing to combine with one split
    auto combine = scf::ForallOp::create(b, loc, ubs2, ValueRange{forall.getResult(0)}, std::nullopt);
    b.setInsertionPointToStart(combine.getBody());
    ivs = combine.getInductionVars(); // a new vector each call: never pair two calls' begin and end
    batchAt.assign(ivs.begin(), ivs.begin() + nb);
    q0 = arith::MulIOp::create(b, loc, ivs[nb], c(kQueryBlock));
    rows = minIdx(c(kQueryBlock), arith::SubIOp::create(b, loc, sq, q0));
    OpFoldResult splitCount = getAsOpFoldResult(splits);
    auto sliceOf = [&](Value t, ArrayRef<OpFoldResult> tail, ArrayRef<OpFoldResult> sizes,
                       ArrayRef<int64_t> shape) -> Value {
      return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(shape, et), t, at(tail), sizesOf(sizes),
                                            SmallVector<OpFoldResult>(nb + tail.size(), one));
    };
    const int64_t dyn = ShapedType::kDynamic;
    OpFoldResult zeroIdx = b.getIndexAttr(0);
    Value mS = sliceOf(forall.getResult(1), {zeroIdx, zeroIdx, q0}, {one, splitCount, rows}, {dyn, dyn});
    Value lS = sliceOf(forall.getResult(1), {one, zeroIdx, q0}, {one, splitCount, rows}, {dyn, dyn});
    Value accS = sliceOf(forall.getResult(2), {zeroIdx, q0, zeroIdx}, {splitCount, rows, dvSize},
                         {dyn, dyn, staticSize(dvSize)});
    AffineExpr s2 = getAffineDimExpr(0, ctx), r2 = getAffineDimExpr(1, ctx), e2 = getAffineDimExpr(2, ctx);
    auto rowType = RankedTensorType::get({dyn}, et);
    auto rowsOf = [&](Value fill) {
      return linalg::FillOp::create(b, loc, fill, tensor::EmptyOp::create(b, loc, rowType, ValueRange{rows}).getResult())
          .getResult(0);
    };
    // (The first loop's constants live in its body.)
    negInf = fc(-std::numeric_limits<double>::infinity());
    zero = fc(0.0);
    SmallVector<IteratorType> sr = {IteratorType::reduction, IteratorType::parallel};
    Value mAll = linalg::GenericOp::create(
                     b, loc, rowType, ValueRange{mS}, ValueRange{rowsOf(negInf)},
                     SmallVector<AffineMap>{map({s2, r2}, 2), map({r2}, 2)}, sr,
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, maxValues(nb, l, a[0], a[1]));
                     })
                     .getResult(0);
    auto wType = RankedTensorType::get({dyn, dyn}, et);
    Value weights = linalg::GenericOp::create(
                        b, loc, wType, ValueRange{mAll, mS},
                        ValueRange{tensor::EmptyOp::create(b, loc, wType, ValueRange{splits, rows}).getResult()},
                        SmallVector<AffineMap>{map({r2}, 2), map({s2, r2}, 2), map({s2, r2}, 2)},
                        SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel},
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          Value x = arith::SubFOp::create(nb, l, a[1], safeMax(nb, l, a[0]));
                          linalg::YieldOp::create(nb, l, math::ExpOp::create(nb, l, x).getResult());
                        })
                        .getResult(0);
    Value lAll = linalg::GenericOp::create(
                     b, loc, rowType, ValueRange{lS, weights}, ValueRange{rowsOf(zero)},
                     SmallVector<AffineMap>{map({s2, r2}, 2), map({s2, r2}, 2), map({r2}, 2)}, sr,
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, addValues(nb, l, a[2], mulValues(nb, l, a[0], a[1])));
                     })
                     .getResult(0);
    SmallVector<Value> accDims = {rows};
    if (accType0.isDynamicDim(1))
      accDims.push_back(dv);
    Value accZero =
        linalg::FillOp::create(b, loc, zero, tensor::EmptyOp::create(b, loc, accType0, accDims).getResult()).getResult(0);
    Value accAll = linalg::GenericOp::create(
                       b, loc, accType0, ValueRange{accS, weights}, ValueRange{accZero},
                       SmallVector<AffineMap>{map({s2, r2, e2}, 3), map({s2, r2}, 3), map({r2, e2}, 3)},
                       SmallVector<IteratorType>{IteratorType::reduction, IteratorType::parallel, IteratorType::parallel},
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         linalg::YieldOp::create(nb, l, addValues(nb, l, a[2], mulValues(nb, l, a[0], a[1])));
                       })
                       .getResult(0);
    insertRows(finish(accAll, lAll), combine.getRegionIterArgs()[0], at({q0, b.getIndexAttr(0)}),
               sizesOf({rows, dvSize}));
    rewriter.replaceOp(op, combine.getResult(0));
    return success();
  }
};

/// For the GPU: graph.attention -> kiln_kernel.attention into an empty tensor, which
/// survives bufferization for kiln-form-attention-blocks. Where that kernel does not
/// apply (f64, head sizes unknown or past what its shared memory holds) AttentionPattern
/// lowers it instead.
struct AttentionToKernelPattern : OpConversionPattern<graph::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  /// The largest head size (D and Dv) of the GPU kernel: its block keeps 8 query rows and
  /// 8 output rows of this many f32 values in shared memory.
  static constexpr int64_t kMaxHeadSize = 256;

  LogicalResult matchAndRewrite(graph::AttentionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto qt = cast<RankedTensorType>(adaptor.getQuery().getType());
    auto kt = cast<RankedTensorType>(adaptor.getKey().getType());
    auto vt = cast<RankedTensorType>(adaptor.getValue().getType());
    Type et = qt.getElementType();
    int64_t rank = qt.getRank();
    int64_t d = qt.getDimSize(rank - 1), dk = kt.getDimSize(rank - 1), dv = vt.getDimSize(rank - 1);
    auto fits = [](int64_t n) { return !ShapedType::isDynamic(n) && n <= kMaxHeadSize; };
    if (!(et.isF32() || et.isF16() || et.isBF16()) || !(fits(d) || fits(dk)) || !fits(dv))
      return rewriter.notifyMatchFailure(op, "no GPU attention kernel for this element type or head size");
    Location loc = op.getLoc();
    auto rt = cast<RankedTensorType>(op.getType());
    SmallVector<Value> outDims;
    for (int64_t i = 0; i < rank - 1; ++i)
      outDims.push_back(dimValue(rewriter, loc, adaptor.getQuery(), i));
    outDims.push_back(dimValue(rewriter, loc, adaptor.getValue(), rank - 1));
    Value init = emptyTensor(rewriter, loc, rt, outDims);
    // Keys and values viewed from a paged KV cache: the kernel reads the pools through the block
    // table, for the view's length of keys (its gathered copy is left dead).
    Value key = adaptor.getKey(), value = adaptor.getValue(), table, keyCount;
    if (PagedKeyValues paged = rank >= 3 ? pagedKeyValues(op, rewriter, rank) : PagedKeyValues(); paged.table) {
      keyCount = dimValue(rewriter, loc, adaptor.getKey(), rank - 2);
      key = paged.kPool;
      value = paged.vPool;
      table = paged.table;
    }
    auto kernelOp = kernel::AttentionOp::create(rewriter, loc, TypeRange{init.getType()}, adaptor.getQuery(), key,
                                                value, adaptor.getMask(), table, keyCount, init, op.getScaleAttr(),
                                                nullptr, nullptr, nullptr, nullptr);
    rewriter.replaceOp(op, kernelOp.getResult()[0]);
    return success();
  }
};

} // namespace

void populateAttentionLoweringPatterns(RewritePatternSet &patterns, bool gpuAttention) {
  patterns.add<AttentionPattern>(patterns.getContext());
  if (gpuAttention)
    patterns.add<AttentionToKernelPattern>(patterns.getContext(), /*benefit=*/2);
}

} // namespace kiln
