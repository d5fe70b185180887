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

    llvm::BitVector dropResults(main.getNumResults());
    for (CacheUse &c : caches) {
      BlockArgument cache = main.getArgument(c.arg);
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
    // The present outputs are the caches themselves now.
    ret->eraseOperands(dropResults);
    if (failed(main.eraseResults(dropResults)))
      return signalPassFailure();
  }
};
} // namespace
} // namespace kiln
