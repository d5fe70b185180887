// graph.tfidf_vectorizer -> constant n-gram tables, a linalg.generic counting each pool n-gram per row, one per column.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;

/// The pool's n-grams that the op counts (lengths in [min_gram_length,
/// max_gram_length]), ordered by output column so that the n-grams of one
/// column (ngram_indexes may repeat) are one contiguous range.
struct NgramTable {
  int64_t width = 0;            // the longest n-gram
  SmallVector<int64_t> lengths; // per n-gram
  SmallVector<int64_t> tokens;  // [n-grams, width], padded with 0
  SmallVector<int64_t> begin;   // per column, its first n-gram; begin[columns] = n-grams
};

NgramTable buildTable(TfIdfVectorizerOp op, int64_t columns) {
  struct Entry {
    int64_t column, length, offset;
  };
  SmallVector<Entry> entries;
  ArrayRef<int64_t> counts = op.getNgramCounts(), indexes = op.getNgramIndexes(), pool = op.getPoolInt64s();
  int64_t k = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t length = i + 1;
    int64_t end = i + 1 < counts.size() ? counts[i + 1] : (int64_t)pool.size();
    for (int64_t at = counts[i]; at < end; at += length, ++k)
      if (length >= op.getMinGramLengthAttr().getInt() && length <= op.getMaxGramLengthAttr().getInt())
        entries.push_back({indexes[k], length, at});
  }
  llvm::stable_sort(entries, [](const Entry &a, const Entry &b) { return a.column < b.column; });
  NgramTable t;
  for (const Entry &e : entries)
    t.width = std::max(t.width, e.length);
  t.begin.assign(columns + 1, 0);
  for (const Entry &e : entries) {
    t.lengths.push_back(e.length);
    for (int64_t j = 0; j < t.width; ++j)
      t.tokens.push_back(j < e.length ? pool[e.offset + j] : 0);
    ++t.begin[e.column + 1];
  }
  for (int64_t o = 0; o < columns; ++o)
    t.begin[o + 1] += t.begin[o];
  return t;
}

Value i64Table(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return arith::ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, values));
}

/// TfIdfVectorizer as ONNX Runtime counts it, without its trie: counts[r, g]
/// is the number of (start, skip) pairs at which pool n-gram g matches row r
/// (work linear in the row length per n-gram, the skip loop cut to the skips
/// that fit two tokens in the row), then column o sums the counts of its
/// n-grams and applies the mode's weighting.
struct TfIdfVectorizerPattern : OpConversionPattern<TfIdfVectorizerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TfIdfVectorizerOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto rt = cast<RankedTensorType>(op.getType());
    int64_t rank = xt.getRank(), columns = rt.getShape().back();
    Type i64 = rewriter.getI64Type(), f32 = rewriter.getF32Type();
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    SmallVector<Value> outDims;
    if (rank == 2)
      outDims.push_back(dimValue(rewriter, loc, x, 0));
    outDims.push_back(c(columns));
    NgramTable table = buildTable(op, columns);
    int64_t ngrams = table.lengths.size();
    if (ngrams == 0) {
      // No pool n-gram has a counted length: every column is 0 in every mode.
      rewriter.replaceOp(op, filledTensor(rewriter, loc, rt, outDims, scalarConstant(rewriter, loc, f32, 0)));
      return success();
    }

    // Skips s with s + 1 >= C cannot fit a second token in the row, so the
    // skip loop runs max(1, min(max_skip_count + 1, C - 1)) times. An empty
    // tensor of that length gives the generic its skip dimension; its values
    // are never read.
    int64_t skipLimit = std::min<int64_t>(op.getMaxSkipCountAttr().getInt(), int64_t(1) << 40) + 1;
    int64_t rowLength = xt.getShape().back();
    Value length = dimValue(rewriter, loc, x, rank - 1);
    Value skips;
    if (rowLength != ShapedType::kDynamic) {
      int64_t n = std::max<int64_t>(1, std::min(skipLimit, rowLength - 1));
      skips = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{n}, i64);
    } else {
      Value n = arith::MinSIOp::create(rewriter, loc, c(skipLimit), arith::SubIOp::create(rewriter, loc, length, c(1)));
      n = arith::MaxSIOp::create(rewriter, loc, n, c(1));
      skips = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{ShapedType::kDynamic}, i64, ValueRange{n});
    }

    int64_t width = table.width;
    SmallVector<int64_t> firsts;
    for (int64_t g = 0; g < ngrams; ++g)
      firsts.push_back(table.tokens[g * width]);
    // Tokens after the first, read only for n-grams longer than one.
    Value tokens = width > 1 ? i64Table(rewriter, loc, {ngrams, width}, table.tokens) : Value();
    Value firstTokens = i64Table(rewriter, loc, {ngrams}, firsts);
    Value lengths = i64Table(rewriter, loc, {ngrams}, table.lengths);

    // Stage 1: counts[r, g] over (r, g, skip, start), the last two reduced.
    int64_t rows = rank == 2 ? xt.getDimSize(0) : 1;
    auto countsType = RankedTensorType::get({rows, ngrams}, i64);
    Value counts = filledTensor(rewriter, loc, countsType, {rank == 2 ? outDims[0] : c(1), c(ngrams)},
                                scalarConstant(rewriter, loc, i64, 0));
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xExprs;
    if (rank == 2)
      xExprs.push_back(d(0));
    xExprs.push_back(d(3));
    SmallVector<AffineMap> maps = {AffineMap::get(4, 0, xExprs, ctx), AffineMap::get(4, 0, {d(1)}, ctx),
                                   AffineMap::get(4, 0, {d(1)}, ctx), AffineMap::get(4, 0, {d(2)}, ctx),
                                   AffineMap::get(4, 0, {d(0), d(1)}, ctx)};
    SmallVector<IteratorType> iters = {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction,
                                       IteratorType::reduction};
    auto count = linalg::GenericOp::create(
        rewriter, loc, TypeRange{countsType}, ValueRange{x, firstTokens, lengths, skips}, ValueRange{counts}, maps,
        iters, [&](OpBuilder &b, Location l, ValueRange args) {
          auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
          auto token = [&](Value v) -> Value {
            return v.getType() == i64 ? v : (Value)arith::ExtSIOp::create(b, l, i64, v);
          };
          Value r = linalg::IndexOp::create(b, l, 0), g = linalg::IndexOp::create(b, l, 1);
          Value s = linalg::IndexOp::create(b, l, 2), start = linalg::IndexOp::create(b, l, 3);
          Value step = arith::AddIOp::create(b, l, s, idx(1));
          Value n = arith::IndexCastOp::create(b, l, b.getIndexType(), args[2]);
          Value last = arith::AddIOp::create(
              b, l, start, arith::MulIOp::create(b, l, arith::SubIOp::create(b, l, n, idx(1)), step));
          Value ok = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, last, length);
          // Unigrams do not depend on the skip: count them at skip 0 only.
          Value once = arith::OrIOp::create(b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, s, idx(0)),
                                            arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, n, idx(1)));
          ok = arith::AndIOp::create(b, l, ok, once);
          ok = arith::AndIOp::create(
              b, l, ok, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, token(args[0]), args[1]));
          Value lastInRow = arith::SubIOp::create(b, l, length, idx(1));
          for (int64_t j = 1; j < width; ++j) {
            Value at = arith::AddIOp::create(b, l, start, arith::MulIOp::create(b, l, step, idx(j)));
            at = arith::MinSIOp::create(b, l, at, lastInRow);
            SmallVector<Value> where;
            if (rank == 2)
              where.push_back(r);
            where.push_back(at);
            Value got = token(tensor::ExtractOp::create(b, l, x, where));
            Value want = tensor::ExtractOp::create(b, l, tokens, ValueRange{g, idx(j)});
            Value same = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, got, want);
            Value beyond = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, n, idx(j));
            ok = arith::AndIOp::create(b, l, ok, arith::OrIOp::create(b, l, same, beyond));
          }
          Value one = arith::ExtUIOp::create(b, l, i64, ok);
          linalg::YieldOp::create(b, l, ValueRange{arith::AddIOp::create(b, l, args[4], one)});
        });
    Value perNgram = count.getResult(0);

    // Stage 2: each column sums its n-grams' counts, then weighs them. When
    // every column has exactly one n-gram (ngram_indexes a permutation, the
    // usual vocabulary), the table's order is the columns' and counts[r, o]
    // is read directly.
    StringRef mode = op.getMode();
    ArrayRef<float> weights = op.getWeights();
    bool weighted = mode != "TF" && !weights.empty();
    bool oneEach = ngrams == columns && llvm::all_of(llvm::seq<int64_t>(0, columns),
                                                     [&](int64_t o) { return table.begin[o] == o; });
    int64_t loops = rt.getRank();
    AffineMap columnMap = AffineMap::get(loops, 0, {d(loops - 1)}, ctx);
    SmallVector<Value> inputs;
    SmallVector<AffineMap> outMaps;
    if (oneEach) {
      inputs.push_back(perNgram);
      outMaps.push_back(loops == 2 ? AffineMap::getMultiDimIdentityMap(2, ctx)
                                   : AffineMap::get(1, 0, {getAffineConstantExpr(0, ctx), d(0)}, ctx));
    } else {
      inputs.push_back(i64Table(rewriter, loc, {columns}, ArrayRef<int64_t>(table.begin).drop_back()));
      inputs.push_back(i64Table(rewriter, loc, {columns}, ArrayRef<int64_t>(table.begin).drop_front()));
      outMaps.append(2, columnMap);
    }
    if (weighted) {
      auto wt = RankedTensorType::get({columns}, f32);
      inputs.push_back(
          arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(wt, weights.take_front(columns))));
      outMaps.push_back(columnMap);
    }
    outMaps.push_back(AffineMap::getMultiDimIdentityMap(loops, ctx));
    Value init = emptyTensor(rewriter, loc, rt, outDims);
    auto gather = linalg::GenericOp::create(
        rewriter, loc, TypeRange{rt}, inputs, ValueRange{init}, outMaps,
        SmallVector<IteratorType>(loops, IteratorType::parallel), [&](OpBuilder &b, Location l, ValueRange args) {
          Value zero = arith::ConstantOp::create(b, l, b.getI64IntegerAttr(0));
          Value total = args[0];
          if (!oneEach) {
            Value r = loops == 2 ? (Value)linalg::IndexOp::create(b, l, 0) : arith::ConstantIndexOp::create(b, l, 0);
            Value lo = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
            Value hi = arith::IndexCastOp::create(b, l, b.getIndexType(), args[1]);
            auto sum = scf::ForOp::create(
                b, l, lo, hi, arith::ConstantIndexOp::create(b, l, 1), ValueRange{zero},
                [&](OpBuilder &fb, Location fl, Value g, ValueRange acc) {
                  Value v = tensor::ExtractOp::create(fb, fl, perNgram, ValueRange{r, g});
                  scf::YieldOp::create(fb, fl, ValueRange{arith::AddIOp::create(fb, fl, acc[0], v)});
                });
            total = sum.getResult(0);
          }
          Value weight = weighted ? args[oneEach ? 1 : 2] : scalarConstant(b, l, f32, 1);
          Value result;
          if (mode == "IDF") {
            Value seen = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, total, zero);
            result = arith::SelectOp::create(b, l, seen, weight, scalarConstant(b, l, f32, 0));
          } else {
            result = arith::SIToFPOp::create(b, l, f32, total);
            if (weighted)
              result = arith::MulFOp::create(b, l, result, weight);
          }
          linalg::YieldOp::create(b, l, result);
        });
    rewriter.replaceOp(op, gather.getResult(0));
    return success();
  }
};

} // namespace

void populateTextFeatureLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<TfIdfVectorizerPattern>(patterns.getContext());
}

} // namespace kiln
