// Turns a decoder's "concat(past, new) -> present" into writes into a runtime-owned KV cache.
#include "passes/graph/Passes.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"

namespace kiln {
#define GEN_PASS_DEF_KVCACHEINPLACEPASS
#include "passes/graph/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// One graph input that the graph only extends: `present = concat(past, update)`, returned.
struct CacheUse {
  unsigned arg;
  graph::ConcatOp concat;
  int64_t axis;
};

struct KvCacheInPlacePass : impl::KvCacheInPlacePassBase<KvCacheInPlacePass> {
  using KvCacheInPlacePassBase::KvCacheInPlacePassBase;

  /// The concat that extends `arg` and is returned, when there is exactly one.
  static std::optional<CacheUse> findCache(func::FuncOp main, func::ReturnOp ret, unsigned i) {
    BlockArgument arg = main.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !isa<FloatType>(type.getElementType()) || type.getRank() == 0)
      return std::nullopt;
    std::optional<CacheUse> found;
    for (Operation *user : arg.getUsers()) {
      auto concat = dyn_cast<graph::ConcatOp>(user);
      if (!concat || concat.getInputs().size() != 2 || concat.getInputs()[0] != arg)
        continue;
      int64_t axis = (int64_t)concat.getAxis();
      if (axis < 0)
        axis += type.getRank();
      bool returned = llvm::is_contained(ret.getOperands(), concat.getResult());
      // The cache must also feed the graph (attention), or its writes would be dead code.
      bool consumed = llvm::any_of(concat->getUsers(), [&](Operation *u) { return u != ret; });
      if (!returned || !consumed || found)
        return std::nullopt;
      found = CacheUse{i, concat, axis};
    }
    return found;
  }

  /// The paged form of one cache: the input becomes a pool of blocks, written through the
  /// table and viewed per sequence.
  void pageCache(OpBuilder &b, func::FuncOp main, func::ReturnOp ret, CacheUse &c, Value pos, Value rowPos,
                 Value table, llvm::BitVector &dropResults) {
    BlockArgument cache = main.getArgument(c.arg);
    auto old = cast<RankedTensorType>(cache.getType());
    SmallVector<int64_t> poolShape(old.getShape());
    poolShape[0] = ShapedType::kDynamic;
    poolShape[c.axis] = blockSize;
    cache.setType(old.clone(poolShape));
    b.setInsertionPoint(c.concat);
    Value update = c.concat.getInputs()[1];
    auto write = graph::KvCachePagedWriteOp::create(b, c.concat.getLoc(), cache, update, pos, rowPos, table,
                                                     b.getI64IntegerAttr(c.axis));
    auto view = graph::KvCachePagedViewOp::create(b, c.concat.getLoc(), write.getResult(), table, pos, update,
                                                   b.getI64IntegerAttr(c.axis));
    for (OpOperand &use : c.concat.getResult().getUses())
      if (use.getOwner() == ret)
        dropResults.set(use.getOperandNumber());
    // The view is [batch, .., ?, ..] as the concat was (same batch dim as the table's).
    if (view.getType() != c.concat.getType()) {
      c.concat.emitError("paged KV cache: the view ") << view.getType() << " differs from the concat's type "
                                                      << c.concat.getType();
      return signalPassFailure();
    }
    c.concat.getResult().replaceAllUsesWith(view.getResult());
    c.concat.erase();
    if (!llvm::all_of(cache.getUsers(), [&](Operation *u) { return u == write; })) {
      b.setInsertionPointToStart(&main.getBody().front());
      auto prefix = graph::KvCachePagedViewOp::create(b, cache.getLoc(), cache, table, pos, Value(),
                                                       b.getI64IntegerAttr(c.axis));
      Value past = prefix.getResult();
      if (past.getType() != old) {
        emitError(cache.getLoc(), "paged KV cache: the past view ") << past.getType() << " differs from " << old;
        return signalPassFailure();
      }
      cache.replaceUsesWithIf(past, [&](OpOperand &u) { return u.getOwner() != write && u.getOwner() != prefix; });
    }
    SmallVector<Attribute> dims;
    if (auto names = main.getArgAttrOfType<ArrayAttr>(c.arg, attrs::kDims))
      dims.assign(names.begin(), names.end());
    if ((int64_t)dims.size() > c.axis) {
      dims[0] = b.getStringAttr("kv_blocks");
      dims[c.axis] = b.getStringAttr("");
    }
    main.setArgAttr(c.arg, attrs::kDims, b.getArrayAttr(dims));
    main.setArgAttr(c.arg, attrs::kKvCache, b.getI64IntegerAttr(c.axis));
    main.setArgAttr(c.arg, "bufferization.writable", b.getBoolAttr(true));
  }

  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty())
      return;
    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    SmallVector<CacheUse> caches;
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (!main.getArgAttr(i, attrs::kWeight))
        if (auto c = findCache(main, ret, i))
          caches.push_back(*c);
    if (caches.empty())
      return;

    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    // One scalar input says how many entries every cache already holds.
    auto posType = RankedTensorType::get({}, b.getI64Type());
    unsigned posIndex = main.getNumArguments();
    auto posAttrs = b.getDictionaryAttr({b.getNamedAttr(attrs::kName, b.getStringAttr("kiln.past_length")),
                                         b.getNamedAttr(attrs::kDtype, b.getI64IntegerAttr(7)),
                                         b.getNamedAttr(attrs::kDims, b.getArrayAttr({})),
                                         b.getNamedAttr(attrs::kKvPosition, b.getUnitAttr())});
    if (failed(main.insertArgument(posIndex, posType, posAttrs, main.getLoc())))
      return signalPassFailure();
    Value pos = main.getArgument(posIndex);
    // And one [batch] input says where each row appends (its own length), so a batch of
    // sequences of different lengths is written without left padding: the read extent stays
    // `kiln.past_length` (the longest row), the rest of a shorter row is masked by the caller.
    // Only when every cache has its batch at dim 0 and appends elsewhere (the HF layout).
    Value rowPos;
    bool rowWise = llvm::all_of(caches, [&](const CacheUse &c) {
      auto t = cast<RankedTensorType>(main.getArgument(c.arg).getType());
      return c.axis != 0 && t.getRank() >= 2;
    });
    if (rowWise) {
      Attribute batchName = b.getStringAttr("batch");
      if (auto names = main.getArgAttrOfType<ArrayAttr>(caches.front().arg, attrs::kDims))
        if (!names.empty() && isa<StringAttr>(names[0]) && !cast<StringAttr>(names[0]).getValue().empty())
          batchName = names[0];
      auto rowType = RankedTensorType::get({cast<RankedTensorType>(main.getArgument(caches.front().arg).getType()).getDimSize(0)},
                                           b.getI64Type());
      auto rowAttrs = b.getDictionaryAttr({b.getNamedAttr(attrs::kName, b.getStringAttr("kiln.row_positions")),
                                           b.getNamedAttr(attrs::kDtype, b.getI64IntegerAttr(7)),
                                           b.getNamedAttr(attrs::kDims, b.getArrayAttr({batchName})),
                                           b.getNamedAttr(attrs::kKvRowPositions, b.getUnitAttr())});
      if (failed(main.insertArgument(posIndex + 1, rowType, rowAttrs, main.getLoc())))
        return signalPassFailure();
      rowPos = main.getArgument(posIndex + 1);
    }
    // Paged: a [batch, blocks per sequence] table of block ids, read by the writes and the views.
    Value table;
    const bool paged = rowWise && blockSize > 0;
    if (blockSize < 0) {
      getOperation().emitError("kiln-kv-cache-in-place: block-size ") << blockSize << " is negative";
      return signalPassFailure();
    }
    // A pool's blocks are allocated by the runtime from the artifact's signature: every dim but
    // the blocks must be known (heads and head size are, in exported decoders).
    if (paged)
      for (const CacheUse &c : caches) {
        auto t = cast<RankedTensorType>(main.getArgument(c.arg).getType());
        for (int64_t d = 1; d < t.getRank(); ++d)
          if (d != c.axis && t.isDynamicDim(d)) {
            emitError(main.getArgument(c.arg).getLoc(), "paged KV cache: dim ")
                << d << " of cache input " << c.arg << " is dynamic; a pool of blocks needs static sizes besides the "
                << "batch and the sequence (compile without --kv-block-size)";
            return signalPassFailure();
          }
      }
    if (paged) {
      Attribute batchName = cast<DictionaryAttr>(main.getArgAttrDict(posIndex + 1)).getAs<ArrayAttr>(attrs::kDims)[0];
      auto tableType = RankedTensorType::get({cast<RankedTensorType>(rowPos.getType()).getDimSize(0), ShapedType::kDynamic},
                                             b.getI64Type());
      auto tableAttrs = b.getDictionaryAttr({b.getNamedAttr(attrs::kName, b.getStringAttr("kiln.block_table")),
                                             b.getNamedAttr(attrs::kDtype, b.getI64IntegerAttr(7)),
                                             b.getNamedAttr(attrs::kDims, b.getArrayAttr({batchName, b.getStringAttr("kv_blocks_per_sequence")})),
                                             b.getNamedAttr(attrs::kKvBlockTable, b.getUnitAttr())});
      if (failed(main.insertArgument(posIndex + 2, tableType, tableAttrs, main.getLoc())))
        return signalPassFailure();
      table = main.getArgument(posIndex + 2);
      getOperation()->setAttr(attrs::kKvBlockSize, b.getI64IntegerAttr(blockSize));
    }

    llvm::BitVector dropResults(main.getNumResults());
    for (CacheUse &c : caches) {
      BlockArgument cache = main.getArgument(c.arg);
      if (paged) {
        pageCache(b, main, ret, c, pos, rowPos, table, dropResults);
        continue;
      }
      b.setInsertionPoint(c.concat);
      auto append = graph::KvCacheAppendOp::create(b, c.concat.getLoc(), cache, c.concat.getInputs()[1], pos, rowPos,
                                                   b.getI64IntegerAttr(c.axis));
      if (append.getType() != c.concat.getType()) {
        append.erase();
        continue;
      }
      for (OpOperand &use : c.concat.getResult().getUses())
        if (use.getOwner() == ret)
          dropResults.set(use.getOperandNumber());
      c.concat.getResult().replaceAllUsesWith(append.getResult());
      c.concat.erase();
      // Anything else that read `past` (its shape, typically) sees the valid prefix.
      if (!llvm::all_of(cache.getUsers(), [&](Operation *u) { return u == append; })) {
        b.setInsertionPointToStart(&main.getBody().front());
        auto prefix = graph::KvCachePrefixOp::create(b, cache.getLoc(), cache, pos, b.getI64IntegerAttr(c.axis));
        cache.replaceUsesWithIf(prefix.getResult(), [&](OpOperand &u) {
          return u.getOwner() != append && u.getOwner() != prefix;
        });
      }
      // The runtime allocates the capacity; name its dim and mark the input as a cache.
      SmallVector<Attribute> dims;
      if (auto names = main.getArgAttrOfType<ArrayAttr>(c.arg, attrs::kDims))
        dims.assign(names.begin(), names.end());
      if ((int64_t)dims.size() > c.axis)
        dims[c.axis] = b.getStringAttr("kv_capacity");
      main.setArgAttr(c.arg, attrs::kDims, b.getArrayAttr(dims));
      main.setArgAttr(c.arg, attrs::kKvCache, b.getI64IntegerAttr(c.axis));
      main.setArgAttr(c.arg, "bufferization.writable", b.getBoolAttr(true));
    }
    // A learned position table (Gather(table, position_ids)) has no rows past its end: record
    // its size so that the artifact's context is capped there.
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto name = main.getArgAttrOfType<StringAttr>(i, attrs::kName);
      if (!name || name.getValue() != "position_ids")
        continue;
      for (Operation *user : main.getArgument(i).getUsers())
        if (auto g = dyn_cast<graph::GatherOp>(user))
          if (g.getIndices() == main.getArgument(i) && g.getData().getDefiningOp<graph::ConstantOp>()) {
            int64_t rows = cast<RankedTensorType>(g.getData().getType()).getDimSize(0);
            if (rows > 0)
              getOperation()->setAttr(attrs::kMaxPositions, b.getI64IntegerAttr(rows));
          }
    }
    // Paged caches changed their arguments' types.
    SmallVector<Type> argTypes;
    for (BlockArgument a : main.getArguments())
      argTypes.push_back(a.getType());
    main.setType(FunctionType::get(ctx, argTypes, main.getResultTypes()));
    // The present outputs are the caches themselves now.
    ret->eraseOperands(dropResults);
    if (failed(main.eraseResults(dropResults)))
      return signalPassFailure();
  }
};
} // namespace
} // namespace kiln
