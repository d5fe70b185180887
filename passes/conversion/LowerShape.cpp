// graph data-movement ops (constant, reshape family, transpose, concat, gather, slice, shape) -> tensor/linalg.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

Value idx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

struct ConstantPattern : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

// A Reshape whose shape is a constant that only splits and merges dims (ONNX's 0 copying a
// dynamic dim in place, static sizes whose products agree), as tensor.collapse_shape and/or
// tensor.expand_shape: views of the input after bufferization, not the copy a tensor.reshape with
// a run-time shape is (the decoders' head splits [b, s, 64] -> [b, s, 4, 16] of a slice were
// one copy kernel each on the GPU), and whose result dims are the input's own, so that the ops
// after it see equal sizes. Null when the shape is not such a regrouping.
Value regroupingReshape(OpBuilder &b, Location loc, Value x, DenseIntElementsAttr values, bool allowZero,
                        RankedTensorType resultType) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (!values)
    return {};
  SmallVector<int64_t> want;
  for (const APInt &v : values)
    want.push_back(v.getSExtValue());
  const int64_t n = xt.getRank(), m = int64_t(want.size());
  if (n == 0 || m == 0 || m != resultType.getRank())
    return {};
  // Each output dim: a copy of the input dim at the same index (kDynamic here), or a static size.
  SmallVector<int64_t> out(m);
  for (int64_t j = 0; j < m; ++j) {
    if (want[j] == 0 && !allowZero && j < n)
      out[j] = xt.isDynamicDim(j) ? ShapedType::kDynamic : xt.getDimSize(j);
    else if (want[j] > 0)
      out[j] = want[j];
    else
      return {}; // -1 (inferred), or 0 beyond the input's rank
  }
  // A dynamic input dim that no output dim copies is fixed by the element count, when it is the
  // only one and the other sizes are static or copied (the attention's [b, s, heads, ?] of a
  // grouped-query model merged by [0, 0, 64]: the head size is 16).
  int64_t loose = -1;
  for (int64_t i = 0; i < n; ++i)
    if (xt.isDynamicDim(i) && !(i < m && want[i] == 0 && !allowZero)) {
      if (loose >= 0)
        return {};
      loose = i;
    }
  if (loose >= 0) {
    int64_t inStatic = 1, outStatic = 1;
    for (int64_t i = 0; i < n; ++i)
      if (!xt.isDynamicDim(i))
        inStatic *= xt.getDimSize(i);
    for (int64_t j = 0; j < m; ++j)
      if (out[j] != ShapedType::kDynamic)
        outStatic *= out[j];
    if (inStatic <= 0 || outStatic % inStatic != 0)
      return {};
    SmallVector<int64_t> pinned(xt.getShape());
    pinned[loose] = outStatic / inStatic;
    xt = xt.clone(pinned);
    x = tensor::CastOp::create(b, loc, xt, x);
  }
  // Groups of input dims and output dims with equal products; a dynamic dim only alone, copied
  // to the same index.
  SmallVector<ReassociationIndices> inGroups, outGroups;
  int64_t i = 0, j = 0;
  while (i < n && j < m) {
    ReassociationIndices gi{i}, gj{j};
    if (xt.isDynamicDim(i) || out[j] == ShapedType::kDynamic) {
      if (i != j || !xt.isDynamicDim(i) || out[j] != ShapedType::kDynamic || want[j] != 0)
        return {};
      ++i, ++j;
    } else {
      int64_t pi = xt.getDimSize(i++), pj = out[j++];
      while (pi != pj) {
        if (pi < pj) {
          if (i >= n || xt.isDynamicDim(i))
            return {};
          pi *= xt.getDimSize(i);
          gi.push_back(i++);
        } else {
          if (j >= m || out[j] == ShapedType::kDynamic)
            return {};
          pj *= out[j];
          gj.push_back(j++);
        }
      }
    }
    inGroups.push_back(gi);
    outGroups.push_back(gj);
  }
  // Trailing 1s join the last group.
  for (; i < n; ++i) {
    if (xt.getDimSize(i) != 1)
      return {};
    inGroups.back().push_back(i);
  }
  for (; j < m; ++j) {
    if (out[j] != 1)
      return {};
    outGroups.back().push_back(j);
  }
  // Collapse each group of input dims to one, then expand each to its output dims.
  Value v = x;
  bool collapses = llvm::any_of(inGroups, [](const auto &g) { return g.size() > 1; });
  if (collapses) {
    SmallVector<int64_t> mid;
    for (const auto &g : inGroups) {
      int64_t p = 1;
      for (int64_t d : g)
        p = xt.isDynamicDim(d) ? ShapedType::kDynamic : p * xt.getDimSize(d);
      mid.push_back(p);
    }
    v = tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get(mid, xt.getElementType()), v, inGroups);
  }
  if (llvm::any_of(outGroups, [](const auto &g) { return g.size() > 1; })) {
    SmallVector<OpFoldResult> sizes;
    for (int64_t k = 0; k < m; ++k)
      sizes.push_back(out[k] == ShapedType::kDynamic ? OpFoldResult(dimValue(b, loc, x, k))
                                                     : OpFoldResult(b.getIndexAttr(out[k])));
    v = tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(out, xt.getElementType()), v, outGroups,
                                      sizes);
  }
  if (v.getType() != resultType)
    v = tensor::CastOp::create(b, loc, resultType, v);
  return v;
}

struct ReshapePattern : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    DenseIntElementsAttr shape;
    if (!matchPattern(adaptor.getShape(), m_Constant(&shape)))
      if (auto c = op.getShape().getDefiningOp<ConstantOp>())
        shape = dyn_cast<DenseIntElementsAttr>(c.getValue());
    if (Value v = regroupingReshape(rewriter, loc, x, shape, op.getAllowzero(), rt)) {
      rewriter.replaceOp(op, v);
      return success();
    }
    // Each output dim: the static size, or computed from the shape tensor
    // with ONNX's 0 (copy) and -1 (infer) rules.
    Value total = idx(rewriter, loc, 1);
    for (int64_t i = 0; i < xt.getRank(); ++i)
      total = arith::MulIOp::create(rewriter, loc, total, dimValue(rewriter, loc, x, i));
    SmallVector<Value> raw(rank);
    for (int64_t i = 0; i < rank; ++i) {
      Value e = tensor::ExtractOp::create(rewriter, loc, adaptor.getShape(),
                                          ValueRange{idx(rewriter, loc, i)});
      Value v = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), e);
      if (!op.getAllowzero() && i < xt.getRank()) {
        Value isZero = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, v, idx(rewriter, loc, 0));
        v = arith::SelectOp::create(rewriter, loc, isZero, dimValue(rewriter, loc, x, i), v);
      }
      raw[i] = v;
    }
    Value known = idx(rewriter, loc, 1);
    Value minusOne = idx(rewriter, loc, -1);
    for (int64_t i = 0; i < rank; ++i) {
      Value isInfer = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, raw[i], minusOne);
      known = arith::MulIOp::create(rewriter, loc, known,
                                    arith::SelectOp::create(rewriter, loc, isInfer, idx(rewriter, loc, 1), raw[i]));
    }
    // Guard the division: a zero-sized known product only occurs for empty tensors.
    Value safeKnown = arith::MaxSIOp::create(rewriter, loc, known, idx(rewriter, loc, 1));
    Value inferred = arith::DivSIOp::create(rewriter, loc, total, safeKnown);
    SmallVector<Value> dims(rank);
    for (int64_t i = 0; i < rank; ++i) {
      if (!rt.isDynamicDim(i)) {
        dims[i] = idx(rewriter, loc, rt.getDimSize(i));
        continue;
      }
      Value isInfer = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, raw[i], minusOne);
      dims[i] = arith::SelectOp::create(rewriter, loc, isInfer, inferred, raw[i]);
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, x, rt, dims));
    return success();
  }
};

/// Flatten, Squeeze and Unsqueeze only regroup dims: each result dim is a
/// product of input dims (or 1).
template <typename OpTy>
struct RegroupPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    // A view first; the dims below are only for the tensor.reshape fallback.
    if constexpr (!std::is_same_v<OpTy, FlattenOp>)
      if (Value v = unitRegroup(rewriter, loc, x, rt)) {
        rewriter.replaceOp(op, v);
        return success();
      }
    SmallVector<Value> dims;
    if constexpr (std::is_same_v<OpTy, FlattenOp>) {
      int64_t axis = wrapAxis(op.getAxis(), xt.getRank());
      Value outer = idx(rewriter, loc, 1), inner = idx(rewriter, loc, 1);
      for (int64_t i = 0; i < xt.getRank(); ++i) {
        Value d = dimValue(rewriter, loc, x, i);
        if (i < axis)
          outer = arith::MulIOp::create(rewriter, loc, outer, d);
        else
          inner = arith::MulIOp::create(rewriter, loc, inner, d);
      }
      dims = {outer, inner};
    } else if constexpr (std::is_same_v<OpTy, SqueezeOp>) {
      // The result keeps the input dims that are not squeezed, in order.
      SmallVector<bool> dropped(xt.getRank(), op.getAxes().empty());
      if (op.getAxes().empty())
        for (int64_t i = 0; i < xt.getRank(); ++i)
          dropped[i] = xt.getDimSize(i) == 1;
      for (int64_t a : op.getAxes())
        dropped[wrapAxis(a, xt.getRank())] = true;
      for (int64_t i = 0; i < xt.getRank(); ++i)
        if (!dropped[i])
          dims.push_back(dimValue(rewriter, loc, x, i));
    } else {
      // Unsqueeze: the inserted axes are 1, the others follow the input.
      int64_t next = 0;
      for (int64_t i = 0; i < rt.getRank(); ++i) {
        bool inserted = llvm::any_of(op.getAxes(), [&](int64_t a) {
          return wrapAxis(a, rt.getRank()) == i;
        });
        dims.push_back(inserted ? idx(rewriter, loc, 1) : dimValue(rewriter, loc, x, next++));
      }
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, x, rt, dims));
    return success();
  }

  /// Squeeze and Unsqueeze as a collapse_shape or expand_shape (a view whose dims are the input's
  /// own, so the ops after it see equal sizes: a rotary table unsqueezed for the heads kept every
  /// later op's sizes apart from the query's), when every group holds at most one dynamic dim:
  /// each kept dim with the unit dims dropped or inserted after it (those before the first kept
  /// dim join its group). Null otherwise (a dynamic dim squeezed next to another dynamic one).
  static Value unitRegroup(OpBuilder &b, Location loc, Value x, RankedTensorType rt) {
    auto xt = cast<RankedTensorType>(x.getType());
    bool expand = rt.getRank() > xt.getRank();
    RankedTensorType big = expand ? rt : xt, small = expand ? xt : rt;
    if (small.getRank() == 0 || big.getRank() == small.getRank())
      return {};
    // Match the small type's dims, in order, to dims of the big one; the rest are units.
    SmallVector<ReassociationIndices> groups;
    int64_t j = 0;
    for (int64_t i = 0; i < small.getRank(); ++i) {
      ReassociationIndices g;
      while (j < big.getRank() && big.getDimSize(j) == 1 && small.getDimSize(i) != 1 &&
             big.getRank() - j > small.getRank() - i)
        g.push_back(j++);
      if (j >= big.getRank() || big.getDimSize(j) != small.getDimSize(i))
        return {};
      g.push_back(j++);
      groups.push_back(g);
    }
    for (; j < big.getRank(); ++j) {
      if (big.getDimSize(j) != 1)
        return {};
      groups.back().push_back(j);
    }
    for (const ReassociationIndices &g : groups)
      if (llvm::count_if(g, [&](int64_t d) { return big.isDynamicDim(d); }) > 1)
        return {};
    if (expand)
      return tensor::ExpandShapeOp::create(b, loc, rt, x, groups);
    return tensor::CollapseShapeOp::create(b, loc, rt, x, groups);
  }
};

struct ConstantOfShapePattern : OpConversionPattern<ConstantOfShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOfShapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto rt = cast<RankedTensorType>(op.getType());
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rt.getRank(); ++i) {
      if (!rt.isDynamicDim(i)) {
        dims.push_back(idx(rewriter, loc, rt.getDimSize(i)));
        continue;
      }
      Value e = tensor::ExtractOp::create(rewriter, loc, adaptor.getShape(), ValueRange{idx(rewriter, loc, i)});
      // A negative size from the data becomes 0 rather than a huge allocation.
      Value d = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), e);
      dims.push_back(arith::MaxSIOp::create(rewriter, loc, d, idx(rewriter, loc, 0)));
    }
    auto splat = cast<DenseElementsAttr>(op.getValue());
    Value value = arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(*splat.value_begin<Attribute>()));
    rewriter.replaceOp(op, filledTensor(rewriter, loc, rt, dims, value));
    return success();
  }
};

/// The cache's leading entries [0, length) along `axis` as a slice (a view after bufferization).
Value cachePrefix(OpBuilder &b, Location loc, Value cache, int64_t axis, Value length, Type resultType) {
  auto t = cast<RankedTensorType>(cache.getType());
  SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)), strides(t.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, cache);
  sizes[axis] = length;
  Value view = tensor::ExtractSliceOp::create(b, loc, cache, offsets, sizes, strides);
  return view.getType() == resultType ? view : tensor::CastOp::create(b, loc, resultType, view).getResult();
}

Value cachePosition(OpBuilder &b, Location loc, Value position) {
  Value p = tensor::ExtractOp::create(b, loc, position);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), p);
}

/// kv_cache_append: insert_slice of the update into the cache at the position
/// (in place: the cache is a writable function argument), then the prefix view.
struct KvCacheAppendPattern : OpConversionPattern<KvCacheAppendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KvCacheAppendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache(), update = adaptor.getUpdate();
    auto ct = cast<RankedTensorType>(cache.getType());
    int64_t axis = op.getAxis();
    Value pos = cachePosition(rewriter, loc, adaptor.getPosition());
    SmallVector<OpFoldResult> offsets(ct.getRank(), rewriter.getIndexAttr(0)),
        strides(ct.getRank(), rewriter.getIndexAttr(1));
    offsets[axis] = pos;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, update);
    // The runtime keeps position + update within the capacity; a request that
    // breaks that skips the write rather than writing outside the buffer.
    Value end = arith::AddIOp::create(rewriter, loc, pos, dimValue(rewriter, loc, update, axis));
    Value capacity = dimValue(rewriter, loc, cache, axis);
    Value fits = arith::AndIOp::create(
        rewriter, loc, arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, end, capacity),
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, pos, idx(rewriter, loc, 0)));
    Value length = arith::SelectOp::create(rewriter, loc, fits, end,
                                           arith::MinSIOp::create(rewriter, loc, pos, capacity));
    length = arith::MaxSIOp::create(rewriter, loc, length, idx(rewriter, loc, 0));
    if (Value rows = adaptor.getRowPositions()) {
      // Each row r at its own position: a loop over the batch writing one row slice at a
      // time, in place. A row is written only where [p, p + n) lies in the view [0, length)
      // (position + n when that fits the capacity), so a bad row position neither writes outside
      // the buffer nor where another step's view would not see it.
      Value n = dimValue(rewriter, loc, update, axis);
      Value batch = arith::MinSIOp::create(rewriter, loc, dimValue(rewriter, loc, update, 0),
                                           dimValue(rewriter, loc, cache, 0));
      Value rowsN = dimValue(rewriter, loc, rows, 0);
      batch = arith::MinSIOp::create(rewriter, loc, batch, rowsN);
      Value limit = length;
      auto loop = scf::ForOp::create(rewriter, loc, idx(rewriter, loc, 0), batch, idx(rewriter, loc, 1), ValueRange{cache});
      {
        OpBuilder::InsertionGuard g(rewriter);
        rewriter.setInsertionPointToStart(loop.getBody());
        Value r = loop.getInductionVar(), acc = loop.getRegionIterArg(0);
        Value p = tensor::ExtractOp::create(rewriter, loc, rows, ValueRange{r});
        p = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), p);
        Value rowEnd = arith::AddIOp::create(rewriter, loc, p, n);
        Value rowFits = arith::AndIOp::create(
            rewriter, loc, arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, rowEnd, limit),
            arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, p, idx(rewriter, loc, 0)));
        SmallVector<OpFoldResult> rowOffsets(ct.getRank(), rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> rowSizes = sizes;
        rowOffsets[0] = r;
        rowSizes[0] = rewriter.getIndexAttr(1);
        auto w = scf::IfOp::create(
            rewriter, loc, rowFits,
            [&](OpBuilder &b, Location l) {
              Value slice = tensor::ExtractSliceOp::create(b, l, update, rowOffsets, rowSizes, strides);
              SmallVector<OpFoldResult> at = rowOffsets;
              at[axis] = p;
              Value written = tensor::InsertSliceOp::create(b, l, slice, acc, at, rowSizes, strides);
              scf::YieldOp::create(b, l, written);
            },
            [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l, acc); });
        scf::YieldOp::create(rewriter, loc, w.getResult(0));
      }
      rewriter.replaceOp(op, cachePrefix(rewriter, loc, loop.getResult(0), axis, length, op.getType()));
      return success();
    }
    auto write = scf::IfOp::create(
        rewriter, loc, fits,
        [&](OpBuilder &b, Location l) {
          Value w = tensor::InsertSliceOp::create(b, l, update, cache, offsets, sizes, strides);
          scf::YieldOp::create(b, l, w);
        },
        [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l, cache); });
    rewriter.replaceOp(op, cachePrefix(rewriter, loc, write.getResult(0), axis, length, op.getType()));
    return success();
  }
};

struct KvCachePrefixPattern : OpConversionPattern<KvCachePrefixOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KvCachePrefixOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value pos = cachePosition(rewriter, loc, adaptor.getPosition());
    rewriter.replaceOp(op, cachePrefix(rewriter, loc, adaptor.getCache(), op.getAxis(), pos, op.getType()));
    return success();
  }
};

/// The entries a paged view covers: position (+ the update's n), within the table's capacity
/// (blocks per sequence x block) and 0 for an empty pool (nothing to read).
Value pagedLength(OpBuilder &b, Location loc, Value pool, Value table, Value position, Value update, int64_t axis) {
  int64_t block = cast<RankedTensorType>(pool.getType()).getDimSize(axis);
  Value length = cachePosition(b, loc, position);
  if (update)
    length = arith::AddIOp::create(b, loc, length, dimValue(b, loc, update, axis));
  Value capacity = arith::MulIOp::create(b, loc, dimValue(b, loc, table, 1), idx(b, loc, block));
  length = arith::MinSIOp::create(b, loc, length, capacity);
  length = arith::MaxSIOp::create(b, loc, length, idx(b, loc, 0));
  Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dimValue(b, loc, pool, 0), idx(b, loc, 0));
  return arith::SelectOp::create(b, loc, empty, idx(b, loc, 0), length);
}

/// kv_cache_paged_write: per row, per new token, one slice [1, .., 1, ..] of the update into
/// its block and offset, in place. A row is written only where its positions lie in the view
/// [0, position + n) (a row past it sits the step out); a token whose block id is outside the
/// pool is skipped, so a bad table never writes outside the buffer.
struct KvCachePagedWritePattern : OpConversionPattern<KvCachePagedWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KvCachePagedWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value pool = adaptor.getPool(), update = adaptor.getUpdate(), rows = adaptor.getRowPositions(),
          table = adaptor.getBlockTable();
    auto pt = cast<RankedTensorType>(pool.getType());
    int64_t axis = op.getAxis(), rank = pt.getRank();
    Value block = idx(b, loc, pt.getDimSize(axis));
    Value n = dimValue(b, loc, update, axis);
    Value limit = pagedLength(b, loc, pool, table, adaptor.getPosition(), update, axis);
    Value blocks = dimValue(b, loc, pool, 0);
    Value batch = arith::MinSIOp::create(b, loc, dimValue(b, loc, update, 0), dimValue(b, loc, rows, 0));
    batch = arith::MinSIOp::create(b, loc, batch, dimValue(b, loc, table, 0));
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, update), strides(rank, b.getIndexAttr(1));
    sizes[0] = b.getIndexAttr(1);
    sizes[axis] = b.getIndexAttr(1);
    auto rowLoop = scf::ForOp::create(b, loc, idx(b, loc, 0), batch, idx(b, loc, 1), ValueRange{pool});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(rowLoop.getBody());
      Value r = rowLoop.getInductionVar(), acc = rowLoop.getRegionIterArg(0);
      Value p = arith::IndexCastOp::create(b, loc, b.getIndexType(), tensor::ExtractOp::create(b, loc, rows, ValueRange{r}));
      Value fits = arith::AndIOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, arith::AddIOp::create(b, loc, p, n), limit),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, p, idx(b, loc, 0)));
      auto ifRow = scf::IfOp::create(
          b, loc, fits,
          [&](OpBuilder &tb, Location l) {
            auto tokens = scf::ForOp::create(tb, l, idx(tb, l, 0), n, idx(tb, l, 1), ValueRange{acc});
            {
              OpBuilder::InsertionGuard g2(tb);
              tb.setInsertionPointToStart(tokens.getBody());
              Value t = tokens.getInductionVar(), cur = tokens.getRegionIterArg(0);
              Value q = arith::AddIOp::create(tb, l, p, t);
              Value col = arith::DivUIOp::create(tb, l, q, block);
              Value off = arith::RemUIOp::create(tb, l, q, block);
              Value id = tensor::ExtractOp::create(tb, l, table, ValueRange{r, col});
              Value blk = arith::IndexCastOp::create(tb, l, tb.getIndexType(), id);
              Value inPool = arith::AndIOp::create(
                  tb, l, arith::CmpIOp::create(tb, l, arith::CmpIPredicate::sge, blk, idx(tb, l, 0)),
                  arith::CmpIOp::create(tb, l, arith::CmpIPredicate::slt, blk, blocks));
              auto ifToken = scf::IfOp::create(
                  tb, l, inPool,
                  [&](OpBuilder &ib, Location il) {
                    SmallVector<OpFoldResult> from(rank, ib.getIndexAttr(0)), to(rank, ib.getIndexAttr(0));
                    from[0] = r;
                    from[axis] = t;
                    to[0] = blk;
                    to[axis] = off;
                    Value slice = tensor::ExtractSliceOp::create(ib, il, update, from, sizes, strides);
                    Value w = tensor::InsertSliceOp::create(ib, il, slice, cur, to, sizes, strides);
                    scf::YieldOp::create(ib, il, w);
                  },
                  [&](OpBuilder &ib, Location il) { scf::YieldOp::create(ib, il, cur); });
              scf::YieldOp::create(tb, l, ifToken.getResult(0));
            }
            scf::YieldOp::create(tb, l, tokens.getResult(0));
          },
          [&](OpBuilder &tb, Location l) { scf::YieldOp::create(tb, l, acc); });
      scf::YieldOp::create(b, loc, ifRow.getResult(0));
    }
    // Rows and tokens write the slots their block table names: distinct ones, as the runtime hands
    // each sequence its own blocks (a table naming one block twice makes two sequences share
    // it, wrong whichever order they are written in), so the GPU may write them all at once.
    rowLoop->setAttr(attrs::kDisjointIterations, b.getUnitAttr());
    rowLoop->walk([&](scf::ForOp tokens) { tokens->setAttr(attrs::kDisjointIterations, b.getUnitAttr()); });
    rewriter.replaceOp(op, rowLoop.getResult(0));
    return success();
  }
};

/// kv_cache_paged_view: the gather view[r, .., j, ..] = pool[table[r, j / block], .., j % block, ..]
/// for j < length (block ids clamped into the pool). The fused attention reads the pool through
/// the table itself (LowerAttention), which leaves this gather dead there.
struct KvCachePagedViewPattern : OpConversionPattern<KvCachePagedViewOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KvCachePagedViewOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value pool = adaptor.getPool(), table = adaptor.getBlockTable();
    auto pt = cast<RankedTensorType>(pool.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis(), rank = rt.getRank();
    Value length = pagedLength(b, loc, pool, table, adaptor.getPosition(), adaptor.getUpdate(), axis);
    Value block = idx(b, loc, pt.getDimSize(axis));
    Value lastBlock = arith::SubIOp::create(b, loc, dimValue(b, loc, pool, 0), idx(b, loc, 1));
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(i == 0 ? dimValue(b, loc, table, 0) : i == axis ? length : dimValue(b, loc, pool, i));
    Value view = generate(b, loc, rt, dims, [&](OpBuilder &gb, Location l, ArrayRef<Value> at) -> Value {
      Value j = at[axis];
      Value id = tensor::ExtractOp::create(gb, l, table, ValueRange{at[0], arith::DivUIOp::create(gb, l, j, block)});
      Value blk = arith::IndexCastOp::create(gb, l, gb.getIndexType(), id);
      blk = arith::MaxSIOp::create(gb, l, arith::MinSIOp::create(gb, l, blk, lastBlock), idx(gb, l, 0));
      SmallVector<Value> from(at.begin(), at.end());
      from[0] = blk;
      from[axis] = arith::RemUIOp::create(gb, l, j, block);
      return tensor::ExtractOp::create(gb, l, pool, from);
    });
    rewriter.replaceOp(op, view);
    return success();
  }
};

/// dynamic_expand: each result dim is max(input dim, shape entry) (one of them is 1 or they agree).
struct DynamicExpandPattern : OpConversionPattern<DynamicExpandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank(), lead = rank - xt.getRank();
    int64_t shapeLen = cast<RankedTensorType>(adaptor.getShape().getType()).getDimSize(0);
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i) {
      if (!rt.isDynamicDim(i)) {
        dims.push_back(idx(rewriter, loc, rt.getDimSize(i)));
        continue;
      }
      Value d = idx(rewriter, loc, 1);
      int64_t k = i - (rank - shapeLen);
      if (k >= 0) {
        Value e = tensor::ExtractOp::create(rewriter, loc, adaptor.getShape(), ValueRange{idx(rewriter, loc, k)});
        d = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), e);
      }
      // Broadcasting: the input's dim unless it is 1 (then the shape's). A
      // dynamic input dim may be 1 at run time, so the choice is made then;
      // a size that breaks the rule keeps the input's, so reads stay inside.
      if (i >= lead) {
        Value xd = dimValue(rewriter, loc, x, i - lead);
        Value isOne = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, xd, idx(rewriter, loc, 1));
        d = arith::SelectOp::create(rewriter, loc, isOne, d, xd);
      }
      dims.push_back(d);
    }
    MLIRContext *ctx = rewriter.getContext();
    Value init = emptyTensor(rewriter, loc, rt, dims);
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    if (xt.hasStaticShape()) {
      SmallVector<AffineMap> maps = {broadcastMap(xt, rt, ctx), AffineMap::getMultiDimIdentityMap(rank, ctx)};
      auto generic = linalg::GenericOp::create(rewriter, loc, TypeRange{rt}, ValueRange{x}, ValueRange{init}, maps,
                                               iters, [](OpBuilder &b, Location l, ValueRange a) {
                                                 linalg::YieldOp::create(b, l, a[0]);
                                               });
      rewriter.replaceOp(op, generic.getResult(0));
      return success();
    }
    // A dynamic input dim is read at min(i, d - 1): 0 where it broadcasts.
    SmallVector<Value> lastIndex;
    for (int64_t j = 0; j < xt.getRank(); ++j)
      lastIndex.push_back(xt.isDynamicDim(j) ? arith::SubIOp::create(rewriter, loc, dimValue(rewriter, loc, x, j),
                                                                     idx(rewriter, loc, 1))
                                             : Value());
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{rt}, ValueRange{}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> index;
          for (int64_t j = 0; j < xt.getRank(); ++j) {
            if (xt.getDimSize(j) == 1)
              index.push_back(idx(b, l, 0));
            else if (lastIndex[j])
              index.push_back(arith::MinSIOp::create(b, l, linalg::IndexOp::create(b, l, j + lead), lastIndex[j]));
            else
              index.push_back(linalg::IndexOp::create(b, l, j + lead));
          }
          linalg::YieldOp::create(b, l, tensor::ExtractOp::create(b, l, x, index).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// range: n = max(0, ceil((limit - start) / delta)) elements, element i = start + i * delta.
struct RangePattern : OpConversionPattern<RangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto rt = cast<RankedTensorType>(op.getType());
    Type et = rt.getElementType();
    Value start = tensor::ExtractOp::create(rewriter, loc, adaptor.getStart());
    Value limit = tensor::ExtractOp::create(rewriter, loc, adaptor.getLimit());
    Value delta = tensor::ExtractOp::create(rewriter, loc, adaptor.getDelta());
    Value diff = subValues(rewriter, loc, limit, start);
    Value count;
    if (isa<FloatType>(et)) {
      Value steps = math::CeilOp::create(rewriter, loc, arith::DivFOp::create(rewriter, loc, diff, delta));
      count = arith::FPToSIOp::create(rewriter, loc, rewriter.getI64Type(), steps);
    } else {
      // A zero delta gives an empty range rather than a division trap.
      Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getIntegerAttr(et, 0));
      Value one = arith::ConstantOp::create(rewriter, loc, rewriter.getIntegerAttr(et, 1));
      Value isZero = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, delta, zero);
      Value safe = arith::SelectOp::create(rewriter, loc, isZero, one, delta);
      count = arith::CeilDivSIOp::create(rewriter, loc, diff, safe);
      count = arith::SelectOp::create(rewriter, loc, isZero, zero, count);
    }
    count = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), count);
    count = arith::MaxSIOp::create(rewriter, loc, count, idx(rewriter, loc, 0));
    Value init = emptyTensor(rewriter, loc, rt, {count});
    MLIRContext *ctx = rewriter.getContext();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{rt}, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(1, ctx)},
        ArrayRef<IteratorType>{IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange) {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value v = castScalar(b, l, arith::IndexCastOp::create(b, l, b.getI64Type(), i), et);
          linalg::YieldOp::create(b, l, addValues(b, l, start, mulValues(b, l, v, delta)));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct TransposePattern : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    SmallVector<Value> dims;
    for (int64_t p : op.getPerm())
      dims.push_back(dimValue(rewriter, loc, x, p));
    Value init = emptyTensor(rewriter, loc, rt, dims);
    rewriter.replaceOpWithNewOp<linalg::TransposeOp>(op, x, init, op.getPerm());
    return success();
  }
};

struct ConcatPattern : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t axis = wrapAxis(op.getAxis(), rt.getRank());
    SmallVector<Value> inputs(adaptor.getInputs());
    if (inputs.size() == 1) {
      rewriter.replaceOp(op, inputs[0]);
      return success();
    }
    // One tensor repeated ([freqs, freqs]: the rotary angles of both halves) is read with its index
    // modulo its size: an elementwise op that fuses with its producer and readers, not copies.
    int64_t part = cast<RankedTensorType>(inputs[0].getType()).getDimSize(axis);
    if (llvm::all_equal(inputs) && !ShapedType::isDynamic(part)) {
      MLIRContext *ctx = getContext();
      SmallVector<AffineExpr> read;
      for (int64_t i = 0; i < rt.getRank(); ++i)
        read.push_back(i == axis ? getAffineDimExpr(i, ctx) % part : getAffineDimExpr(i, ctx));
      SmallVector<Value> dims = dimsOf(rewriter, op.getLoc(), inputs[0]);
      dims[axis] = arith::ConstantIndexOp::create(rewriter, op.getLoc(), part * int64_t(inputs.size()));
      Value init = emptyTensor(rewriter, op.getLoc(), rt, dims);
      SmallVector<AffineMap> maps = {AffineMap::get(rt.getRank(), 0, read, ctx),
                                     rewriter.getMultiDimIdentityMap(rt.getRank())};
      SmallVector<utils::IteratorType> iterators(rt.getRank(), utils::IteratorType::parallel);
      rewriter.replaceOpWithNewOp<linalg::GenericOp>(
          op, rt, ValueRange{inputs[0]}, ValueRange{init}, maps, iterators,
          [](OpBuilder &b, Location loc, ValueRange args) { linalg::YieldOp::create(b, loc, args[0]); });
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, rt, axis, inputs);
    return success();
  }
};

/// Gather: every output element reads data at the (wrapped, clamped) index.
struct GatherPattern : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dt = cast<RankedTensorType>(data.getType());
    auto it = cast<RankedTensorType>(indices.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t axis = wrapAxis(op.getAxis(), dt.getRank());
    int64_t q = it.getRank(), rank = rt.getRank();
    SmallVector<Value> dims;
    for (int64_t i = 0; i < axis; ++i)
      dims.push_back(dimValue(rewriter, loc, data, i));
    for (int64_t i = 0; i < q; ++i)
      dims.push_back(dimValue(rewriter, loc, indices, i));
    for (int64_t i = axis + 1; i < dt.getRank(); ++i)
      dims.push_back(dimValue(rewriter, loc, data, i));
    Value init = emptyTensor(rewriter, loc, rt, dims);
    SmallVector<AffineExpr> ie;
    for (int64_t i = 0; i < q; ++i)
      ie.push_back(getAffineDimExpr(axis + i, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, ie, ctx),
                                   AffineMap::getMultiDimIdentityMap(rank, ctx)};
    Value axisDim = dimValue(rewriter, loc, data, axis);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, rt, ValueRange{indices}, ValueRange{init}, maps,
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, idx(b, l, 0));
          i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, axisDim), i);
          // Out-of-range indices are clamped: a bad input must not read outside the tensor.
          i = arith::MaxSIOp::create(b, l, i, idx(b, l, 0));
          i = arith::MinSIOp::create(b, l, i, arith::SubIOp::create(b, l, axisDim, idx(b, l, 1)));
          SmallVector<Value> coords;
          for (int64_t d = 0; d < axis; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          coords.push_back(i);
          for (int64_t d = axis + 1; d < dt.getRank(); ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d - 1 + q));
          linalg::YieldOp::create(b, l, tensor::ExtractOp::create(b, l, data, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Slice: start and size per axis follow ONNX clamping, computed at run time
/// (for dynamic dims, or starts/ends that are data); the copy reads
/// input[start + i * step]. `rawStart(k)`/`rawEnd(k)` give axis k's values.
Value lowerSlice(OpBuilder &b, Location loc, Value x, RankedTensorType rt, ArrayRef<int64_t> axes,
                 ArrayRef<int64_t> axisSteps, const std::function<Value(size_t)> &rawStart,
                 const std::function<Value(size_t)> &rawEnd) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  SmallVector<Value> starts(rank), sizes(rank);
  SmallVector<int64_t> steps(rank, 1);
  for (int64_t i = 0; i < rank; ++i) {
    starts[i] = idx(b, loc, 0);
    sizes[i] = dimValue(b, loc, x, i);
  }
  auto clamp = [&](Value v, Value lo, Value hi) {
    return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, v, lo), hi);
  };
  Value zero = idx(b, loc, 0), minusOne = idx(b, loc, -1);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    int64_t step = axisSteps[k];
    steps[a] = step;
    Value dim = dimValue(b, loc, x, a);
    auto wrap = [&](Value v) -> Value {
      // Values beyond +-2^62 mean "to the end"; clamp before adding dim.
      v = clamp(v, idx(b, loc, -(int64_t(1) << 62)), idx(b, loc, int64_t(1) << 62));
      Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v, zero);
      return arith::SelectOp::create(b, loc, neg, arith::AddIOp::create(b, loc, v, dim), v);
    };
    Value s = wrap(rawStart(k)), e = wrap(rawEnd(k));
    Value dimMinus1 = arith::SubIOp::create(b, loc, dim, idx(b, loc, 1));
    Value n;
    if (step > 0) {
      s = clamp(s, zero, dim);
      e = clamp(e, zero, dim);
      n = arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, e, s), idx(b, loc, step));
    } else {
      s = clamp(s, zero, dimMinus1);
      e = clamp(e, minusOne, dimMinus1);
      n = arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, s, e), idx(b, loc, -step));
    }
    starts[a] = s;
    sizes[a] = arith::MaxSIOp::create(b, loc, n, zero);
  }
  for (int64_t i = 0; i < rank; ++i)
    if (!rt.isDynamicDim(i))
      sizes[i] = idx(b, loc, rt.getDimSize(i));
  // Steps of 1 read a box of the input: a view (which its reader fuses with or reads in place: a
  // decoder's last position for the output head, a product's operand with strides) rather than
  // a copy element by element. The clamps above keep start + size within the dim. An empty
  // result stays a gather (see sliceView).
  if (llvm::all_of(steps, [](int64_t step) { return step == 1; }) && !llvm::is_contained(rt.getShape(), 0)) {
    SmallVector<OpFoldResult> offsets(starts.begin(), starts.end()), boxSizes;
    for (int64_t i = 0; i < rank; ++i)
      boxSizes.push_back(rt.isDynamicDim(i) ? OpFoldResult(sizes[i]) : b.getIndexAttr(rt.getDimSize(i)));
    return tensor::ExtractSliceOp::create(b, loc, rt, x, offsets, boxSizes,
                                          SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
  }
  Value init = emptyTensor(b, loc, rt, sizes);
  auto generic = linalg::GenericOp::create(
      b, loc, rt, ValueRange{}, ValueRange{init},
      SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, b.getContext())},
      SmallVector<IteratorType>(rank, IteratorType::parallel), [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> coords;
        for (int64_t d = 0; d < rank; ++d) {
          Value i = linalg::IndexOp::create(nb, l, d);
          Value off = arith::MulIOp::create(nb, l, i, idx(nb, l, steps[d]));
          coords.push_back(arith::AddIOp::create(nb, l, starts[d], off));
        }
        linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, x, coords).getResult());
      });
  return generic.getResult(0);
}

/// A Slice with steps of 1 over static dims as a view of its input (tensor.extract_slice), or
/// null: the general lowering is a gather (a generic that reads each element by index), which
/// neither fuses with what reads the slice nor bufferizes to a view (ocr_det's padded-Cout
/// products sliced into a concatenation were element-by-element loops).
Value sliceView(OpBuilder &b, Location loc, Value x, RankedTensorType rt, SliceOp op) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  // An empty result (a start past the end, a zero-size Split) stays a gather: its offset may
  // equal the dim, which extract_slice does not allow.
  if (llvm::is_contained(rt.getShape(), 0))
    return {};
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes, strides(rank, b.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(rt.isDynamicDim(d) ? OpFoldResult(dimValue(b, loc, x, d)) : b.getIndexAttr(rt.getDimSize(d)));
  for (auto [k, axis] : llvm::enumerate(op.getAxes())) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (op.getSteps()[k] != 1 || xt.isDynamicDim(a) || rt.isDynamicDim(a))
      return {};
    // ONNX's clamping (the result type's), as lowerSlice computes it at run time.
    SliceExtent extent = sliceExtent(op.getStarts()[k], op.getEnds()[k], 1, xt.getDimSize(a));
    if (extent.count != rt.getDimSize(a))
      return {};
    offsets[a] = b.getIndexAttr(extent.start);
  }
  return tensor::ExtractSliceOp::create(b, loc, rt, x, offsets, sizes, strides);
}

struct SlicePattern : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (Value view = sliceView(rewriter, loc, adaptor.getInput(), cast<RankedTensorType>(op.getType()), op)) {
      rewriter.replaceOp(op, view);
      return success();
    }
    auto constant = [&](ArrayRef<int64_t> values) {
      return [&, values](size_t k) { return idx(rewriter, loc, values[k]); };
    };
    rewriter.replaceOp(op, lowerSlice(rewriter, loc, adaptor.getInput(), cast<RankedTensorType>(op.getType()),
                                      op.getAxes(), op.getSteps(), constant(op.getStarts()),
                                      constant(op.getEnds())));
    return success();
  }
};

/// Slice whose starts and ends are run-time values.
struct DynamicSlicePattern : OpConversionPattern<DynamicSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto element = [&](Value t) {
      return [&, t](size_t k) -> Value {
        Value e = tensor::ExtractOp::create(rewriter, loc, t, ValueRange{idx(rewriter, loc, k)});
        return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                          castScalar(rewriter, loc, e, rewriter.getI64Type()));
      };
    };
    rewriter.replaceOp(op, lowerSlice(rewriter, loc, adaptor.getInput(), cast<RankedTensorType>(op.getType()),
                                      op.getAxes(), op.getSteps(), element(adaptor.getStarts()),
                                      element(adaptor.getEnds())));
    return success();
  }
};

struct ShapePattern : OpConversionPattern<ShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ShapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    int64_t start = wrapAxis(op.getStart(), rank);
    start = std::clamp<int64_t>(start, 0, rank);
    auto rt = cast<RankedTensorType>(op.getType());
    SmallVector<Value> elems;
    for (int64_t i = 0; i < rt.getDimSize(0); ++i)
      elems.push_back(arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                                 dimValue(rewriter, loc, x, start + i)));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, rt, elems);
    return success();
  }
};

/// A generic over the result's shape whose body computes, from the output
/// coordinates, the coordinates to read in `source` (and may override the
/// value read).
Value gatherGeneric(OpBuilder &b, Location loc, RankedTensorType rt, ArrayRef<Value> dims,
                    ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                    const std::function<Value(OpBuilder &, Location, ArrayRef<Value> coords,
                                              ValueRange args)> &body) {
  int64_t rank = rt.getRank();
  SmallVector<AffineMap> maps(inputMaps.begin(), inputMaps.end());
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  return linalg::GenericOp::create(
             b, loc, rt, inputs, ValueRange{emptyTensor(b, loc, rt, dims)}, maps,
             SmallVector<IteratorType>(rank, IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               SmallVector<Value> coords;
               for (int64_t d = 0; d < rank; ++d)
                 coords.push_back(linalg::IndexOp::create(nb, l, d));
               linalg::YieldOp::create(nb, l, body(nb, l, coords, args.drop_back()));
             })
      .getResult(0);
}

struct PadPattern : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = xt.getRank();
    ArrayRef<int64_t> pads = op.getPads();
    if (op.getMode() == "constant") {
      auto vt = cast<RankedTensorType>(adaptor.getValue().getType());
      SmallVector<Value> zeros(vt.getRank(), idx(rewriter, loc, 0));
      Value value = tensor::ExtractOp::create(rewriter, loc, adaptor.getValue(), zeros);
      SmallVector<OpFoldResult> low, high;
      for (int64_t i = 0; i < rank; ++i) {
        low.push_back(rewriter.getIndexAttr(pads[i]));
        high.push_back(rewriter.getIndexAttr(pads[rank + i]));
      }
      rewriter.replaceOpWithNewOp<tensor::PadOp>(op, rt, x, low, high, value);
      return success();
    }
    bool reflect = op.getMode() == "reflect";
    SmallVector<Value> inDims, outDims;
    for (int64_t i = 0; i < rank; ++i) {
      inDims.push_back(dimValue(rewriter, loc, x, i));
      outDims.push_back(arith::AddIOp::create(rewriter, loc, inDims[i],
                                              idx(rewriter, loc, pads[i] + pads[rank + i])));
    }
    Value result = gatherGeneric(
        rewriter, loc, rt, outDims, {}, {},
        [&](OpBuilder &b, Location l, ArrayRef<Value> coords, ValueRange) -> Value {
          SmallVector<Value> src;
          for (int64_t i = 0; i < rank; ++i) {
            Value zero = idx(b, l, 0), last = arith::SubIOp::create(b, l, inDims[i], idx(b, l, 1));
            Value j = arith::SubIOp::create(b, l, coords[i], idx(b, l, pads[i]));
            if (reflect) {
              // One reflection about each edge (ONNX requires pads < dim).
              Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, j, zero);
              j = arith::SelectOp::create(b, l, neg, arith::SubIOp::create(b, l, zero, j), j);
              Value over = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, j, last);
              Value mirrored = arith::SubIOp::create(b, l, arith::AddIOp::create(b, l, last, last), j);
              j = arith::SelectOp::create(b, l, over, mirrored, j);
            }
            // Edge mode, and a safety net for reflection of tiny dims.
            src.push_back(arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, j, zero), last));
          }
          return tensor::ExtractOp::create(b, l, x, src);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct TriluPattern : OpConversionPattern<TriluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TriluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    if (rank < 2)
      return rewriter.notifyMatchFailure(op, "trilu needs rank >= 2");
    bool upper = op.getUpper() != 0;
    int64_t k = op.getK();
    // A run-time offset: its single element, read once outside the loop nest.
    Value kDyn;
    if (Value kv = adaptor.getKValue()) {
      auto kt = cast<RankedTensorType>(kv.getType());
      SmallVector<Value> zeros(kt.getRank(), arith::ConstantIndexOp::create(rewriter, loc, 0));
      Value k64 = tensor::ExtractOp::create(rewriter, loc, kv, zeros);
      kDyn = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), k64);
    }
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(dimValue(rewriter, loc, x, i));
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, getContext());
    Value result = gatherGeneric(
        rewriter, loc, rt, dims, ValueRange{x}, {id},
        [&](OpBuilder &b, Location l, ArrayRef<Value> c, ValueRange args) -> Value {
          // keep when (col - row) >= k (upper) or <= k (lower)
          Value diff = arith::SubIOp::create(b, l, c[rank - 1], c[rank - 2]);
          Value keep = arith::CmpIOp::create(b, l, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
                                             diff, kDyn ? kDyn : idx(b, l, k));
          return arith::SelectOp::create(b, l, keep, args[0],
                                         scalarConstant(b, l, rt.getElementType(), 0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherElementsPattern : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    SmallVector<Value> dims;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(dimValue(rewriter, loc, indices, i));
    Value axisDim = dimValue(rewriter, loc, data, axis);
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, getContext());
    Value result = gatherGeneric(
        rewriter, loc, rt, dims, ValueRange{indices}, {id},
        [&](OpBuilder &b, Location l, ArrayRef<Value> c, ValueRange args) -> Value {
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, idx(b, l, 0));
          i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, axisDim), i);
          // Clamped: a bad index must not read outside the tensor.
          i = arith::MaxSIOp::create(b, l, i, idx(b, l, 0));
          i = arith::MinSIOp::create(b, l, i, arith::SubIOp::create(b, l, axisDim, idx(b, l, 1)));
          SmallVector<Value> src(c.begin(), c.end());
          src[axis] = i;
          return tensor::ExtractOp::create(b, l, data, src);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct OneHotPattern : OpConversionPattern<OneHotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OneHotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value indices = adaptor.getIndices(), values = adaptor.getValues();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank(), depth = op.getDepth();
    int64_t axis = wrapAxis(op.getAxis(), rank);
    // The depth as an index and as an i64 (the run-time one truncated, at least 0).
    Value depthIndex = idx(rewriter, loc, depth);
    if (Value dv = adaptor.getDepthValue()) {
      auto dt = cast<RankedTensorType>(dv.getType());
      SmallVector<Value> zeros(dt.getRank(), idx(rewriter, loc, 0));
      Value e = tensor::ExtractOp::create(rewriter, loc, dv, zeros);
      if (auto ft = dyn_cast<FloatType>(e.getType()))
        e = arith::MinNumFOp::create(
            rewriter, loc, arith::MaxNumFOp::create(rewriter, loc, e, scalarConstant(rewriter, loc, ft, 0)),
            scalarConstant(rewriter, loc, ft, 4.0e18));
      depthIndex = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                              castScalar(rewriter, loc, e, rewriter.getI64Type()));
      depthIndex = arith::MaxSIOp::create(rewriter, loc, depthIndex, idx(rewriter, loc, 0));
    }
    Value depthI64 = arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), depthIndex);
    SmallVector<Value> dims;
    SmallVector<AffineExpr> idxExprs;
    int64_t next = 0;
    for (int64_t i = 0; i < rank; ++i) {
      if (i == axis) {
        dims.push_back(depthIndex);
        continue;
      }
      dims.push_back(dimValue(rewriter, loc, indices, next++));
      idxExprs.push_back(getAffineDimExpr(i, ctx));
    }
    auto vt = cast<RankedTensorType>(values.getType());
    Value flatValues = reshapeTo(rewriter, loc, values, RankedTensorType::get({2}, vt.getElementType()),
                                 {idx(rewriter, loc, 2)});
    Value off = tensor::ExtractOp::create(rewriter, loc, flatValues, ValueRange{idx(rewriter, loc, 0)});
    Value on = tensor::ExtractOp::create(rewriter, loc, flatValues, ValueRange{idx(rewriter, loc, 1)});
    Value result = gatherGeneric(
        rewriter, loc, rt, dims, ValueRange{indices}, {AffineMap::get(rank, 0, idxExprs, ctx)},
        [&](OpBuilder &b, Location l, ArrayRef<Value> c, ValueRange args) -> Value {
          Value i = castScalar(b, l, args[0], b.getI64Type());
          Value d = depthI64;
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i,
                                            arith::ConstantOp::create(b, l, b.getI64IntegerAttr(0)));
          i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, d), i);
          Value pos = arith::IndexCastOp::create(b, l, b.getI64Type(), c[axis]);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, i, pos);
          return arith::SelectOp::create(b, l, hit, on, off);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct TilePattern : OpConversionPattern<TileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = rt.getRank();
    SmallVector<Value> inDims, outDims;
    for (int64_t i = 0; i < rank; ++i) {
      inDims.push_back(dimValue(rewriter, loc, x, i));
      outDims.push_back(arith::MulIOp::create(rewriter, loc, inDims[i], idx(rewriter, loc, op.getRepeats()[i])));
    }
    Value result = gatherGeneric(
        rewriter, loc, rt, outDims, {}, {},
        [&](OpBuilder &b, Location l, ArrayRef<Value> c, ValueRange) -> Value {
          SmallVector<Value> src;
          for (int64_t i = 0; i < rank; ++i)
            src.push_back(arith::RemSIOp::create(b, l, c[i], inDims[i]));
          return tensor::ExtractOp::create(b, l, x, src);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateShapeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ConstantPattern, ReshapePattern, RegroupPattern<FlattenOp>,
               RegroupPattern<SqueezeOp>, RegroupPattern<UnsqueezeOp>,
               TransposePattern, ConcatPattern, GatherPattern, SlicePattern, DynamicSlicePattern,
               ShapePattern, ConstantOfShapePattern, RangePattern, DynamicExpandPattern, KvCacheAppendPattern, KvCachePrefixPattern, KvCachePagedWritePattern, KvCachePagedViewPattern, PadPattern, TriluPattern, GatherElementsPattern, TilePattern, OneHotPattern>(
      patterns.getContext());
}

} // namespace kiln
