// Result type of TfIdfVectorizer (TextFeatureOps.td), checking its attributes for the lowering.
#include "dialects/graph/IR/ShapeInference.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

// Text features (tfidf family): TfIdfVectorizer. The output width comes from
// the attributes alone; every attribute inconsistency is an error here, so
// the lowering can index the pool without checks.
LogicalResult TfIdfVectorizerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (x.getRank() != 1 && x.getRank() != 2)
    return fail(loc, "tfidf_vectorizer input must be 1-D [C] or 2-D [N, C], got rank " + Twine(x.getRank()));
  if (!x.getElementType().isInteger(32) && !x.getElementType().isInteger(64))
    return fail(loc, "unsupported tfidf_vectorizer input type (int32 or int64 tokens only)");
  StringRef mode = adaptor.getMode();
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return fail(loc, "unsupported tfidf_vectorizer mode '" + mode + "' (TF, IDF or TFIDF)");
  int64_t minLength = adaptor.getMinGramLengthAttr().getInt(), maxLength = adaptor.getMaxGramLengthAttr().getInt();
  if (minLength < 1 || maxLength < minLength)
    return fail(loc, "tfidf_vectorizer min_gram_length " + Twine(minLength) + " and max_gram_length " +
                         Twine(maxLength) + " must satisfy 1 <= min_gram_length <= max_gram_length");
  // ODS's I64Attr getters are unsigned: read the signed values.
  int64_t maxSkip = adaptor.getMaxSkipCountAttr().getInt();
  if (maxSkip < 0)
    return fail(loc, "tfidf_vectorizer max_skip_count must be >= 0, got " + Twine(maxSkip));
  ArrayRef<int64_t> counts = adaptor.getNgramCounts(), indexes = adaptor.getNgramIndexes();
  int64_t poolSize = adaptor.getPoolInt64s().size();
  if (counts.empty())
    return fail(loc, "tfidf_vectorizer ngram_counts must not be empty");
  // ngram_counts[i] is where the (i+1)-grams start; each segment must hold
  // whole n-grams.
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0 || counts[i] > poolSize || (i > 0 && counts[i] < counts[i - 1]))
      return fail(loc, "tfidf_vectorizer ngram_counts must be non-decreasing offsets into pool_int64s (" +
                           Twine(poolSize) + " values), got " + Twine(counts[i]) + " at " + Twine(i));
  int64_t ngrams = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : poolSize;
    int64_t length = i + 1;
    if ((end - begin) % length != 0)
      return fail(loc, "tfidf_vectorizer ngram_counts: the " + Twine(length) + "-grams span " +
                           Twine(end - begin) + " values of pool_int64s, not a multiple of " + Twine(length));
    ngrams += (end - begin) / length;
  }
  if ((int64_t)indexes.size() != ngrams)
    return fail(loc, "tfidf_vectorizer ngram_indexes has " + Twine(indexes.size()) +
                         " entries but pool_int64s holds " + Twine(ngrams) + " n-grams");
  if (indexes.empty())
    return fail(loc, "tfidf_vectorizer ngram_indexes must not be empty");
  // The lowering keeps per-column tables: a width beyond any vocabulary is
  // refused rather than allocated.
  constexpr int64_t kMaxWidth = int64_t(1) << 24;
  int64_t width = 0;
  for (int64_t index : indexes) {
    if (index < 0)
      return fail(loc, "tfidf_vectorizer ngram_indexes value " + Twine(index) + " is out of range");
    if (index >= kMaxWidth)
      return fail(loc, "unsupported tfidf_vectorizer ngram_indexes value " + Twine(index) + " (at most " +
                           Twine(kMaxWidth - 1) + ")");
    width = std::max(width, index + 1);
  }
  ArrayRef<float> weights = adaptor.getWeights();
  if (!weights.empty() && (int64_t)weights.size() != ngrams)
    return fail(loc, "tfidf_vectorizer weights has " + Twine(weights.size()) + " entries, ngram_indexes " +
                         Twine(ngrams));
  if (!weights.empty() && mode != "TF" && (int64_t)weights.size() < width)
    return fail(loc, "tfidf_vectorizer weights has " + Twine(weights.size()) + " entries for " + Twine(width) +
                         " output columns (weights[o] scales column o)");
  SmallVector<int64_t> shape(x.getShape().drop_back());
  shape.push_back(width);
  types.push_back(RankedTensorType::get(shape, Float32Type::get(ctx)));
  return success();
}

} // namespace kiln::graph
