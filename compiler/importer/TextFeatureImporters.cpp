// Text feature ops: TfIdfVectorizer over integer tokens (graph.tfidf_vectorizer).
#include "compiler/importer/OpCreate.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// TfIdfVectorizer (opset 9). Shape inference checks the attributes against
/// each other; here only their presence and the string pool, which kiln's
/// tensors cannot hold.
Results importTfIdfVectorizer(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  const onnx::AttributeProto *strings = c.attr("pool_strings");
  if (strings && strings->strings_size() > 0)
    return c.fail("unsupported: string inputs (pool_strings); only int32/int64 tokens with pool_int64s");
  for (StringRef name : {"mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts",
                         "ngram_indexes"})
    if (!c.attr(name))
      return c.fail("missing required attribute '" + name + "'");
  auto counts = c.intsAttr("ngram_counts"), indexes = c.intsAttr("ngram_indexes");
  auto pool = c.intsAttr("pool_int64s");
  if (!counts || !indexes)
    return c.fail("ngram_counts and ngram_indexes must be lists of ints");
  SmallVector<float> weights;
  if (const onnx::AttributeProto *w = c.attr("weights"))
    weights.assign(w->floats().begin(), w->floats().end());
  SmallVector<int64_t> poolValues = pool ? *pool : SmallVector<int64_t>{};
  return single(create<TfIdfVectorizerOp>(c, c.input(0), StringRef(c.stringAttr("mode", "TF")),
                                          c.intAttr("min_gram_length", 1), c.intAttr("max_gram_length", 1),
                                          c.intAttr("max_skip_count", 0), ArrayRef<int64_t>(*counts),
                                          ArrayRef<int64_t>(*indexes), ArrayRef<int64_t>(poolValues),
                                          ArrayRef<float>(weights)));
}

} // namespace

void addTextFeatureImporters(llvm::StringMap<NodeImporter> &t) { t["TfIdfVectorizer"] = importTfIdfVectorizer; }

} // namespace kiln
