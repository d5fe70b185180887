// Shape rules shared by the graph ops: broadcasting, axes, slices, sliding windows, Einsum equations.
// Each op's result-type inference is in the <Section>Shapes.cpp of its GraphOps.td section; the
// verifier re-runs it, so a hand-written type that disagrees is reported as an error.
#include "dialects/graph/IR/ShapeInference.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (da == kDyn)
      out[i] = db;
    else if (db == kDyn || da == db)
      out[i] = da;
    else
      return failure();
  }
  return out;
}

FailureOr<EinsumSpec> parseEinsum(StringRef equation, ArrayRef<int64_t> ranks) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ')
      eq.push_back(ch);
  StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  size_t arrow = lhs.find("->");
  if (arrow != StringRef::npos) {
    rhs = lhs.substr(arrow + 2);
    lhs = lhs.substr(0, arrow);
    explicitOutput = true;
  }
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size())
    return failure();
  // Each term: letters with at most one "..."; returns the letters before and
  // after it (and whether it was there).
  struct Term {
    std::string before, after;
    bool ellipsis = false;
  };
  auto splitTerm = [](StringRef t) -> FailureOr<Term> {
    Term term;
    size_t dots = t.find("...");
    StringRef before = t, after;
    if (dots != StringRef::npos) {
      term.ellipsis = true;
      before = t.substr(0, dots);
      after = t.substr(dots + 3);
    }
    for (StringRef part : {before, after})
      for (char ch : part)
        if (!llvm::isAlpha(ch))
          return failure();
    term.before = before.str();
    term.after = after.str();
    return term;
  };
  EinsumSpec spec;
  int64_t ellipsisDims = 0;
  SmallVector<Term> parsed;
  for (auto [t, rank] : llvm::zip(terms, ranks)) {
    auto term = splitTerm(t);
    if (failed(term))
      return failure();
    int64_t letters = term->before.size() + term->after.size();
    if (term->ellipsis ? letters > rank : letters != rank)
      return failure();
    ellipsisDims = std::max(ellipsisDims, rank - letters);
    parsed.push_back(*term);
  }
  std::map<char, int> uses;
  for (auto [term, rank] : llvm::zip(parsed, ranks)) {
    SmallVector<int64_t> labels;
    for (char ch : term.before)
      labels.push_back(ch), ++uses[ch];
    int64_t own = rank - (int64_t)(term.before.size() + term.after.size());
    for (int64_t j = 0; j < own; ++j)
      labels.push_back(EinsumSpec::kEllipsisLabel + ellipsisDims - own + j);
    for (char ch : term.after)
      labels.push_back(ch), ++uses[ch];
    spec.inputs.push_back(labels);
  }
  auto ellipsisLabels = [&](SmallVector<int64_t> &out) {
    for (int64_t j = 0; j < ellipsisDims; ++j)
      out.push_back(EinsumSpec::kEllipsisLabel + j);
  };
  if (explicitOutput) {
    auto term = splitTerm(rhs);
    if (failed(term) || (!term->ellipsis && ellipsisDims > 0))
      return failure();
    for (char ch : term->before)
      spec.output.push_back(ch);
    if (term->ellipsis)
      ellipsisLabels(spec.output);
    for (char ch : term->after)
      spec.output.push_back(ch);
    for (char ch : term->before + term->after)
      if (!uses.count(ch))
        return failure();
  } else {
    ellipsisLabels(spec.output);
    for (auto [ch, n] : uses) // std::map: alphabetical (upper case first, as ASCII)
      if (n == 1)
        spec.output.push_back(ch);
  }
  // A result label may appear once only.
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t label : spec.output)
    if (!seen.insert(label).second)
      return failure();
  return spec;
}

FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

SliceExtent sliceExtent(int64_t start, int64_t end, int64_t step, int64_t dim) {
  auto clampIndex = [&](int64_t v, bool isEnd) {
    if (v < 0)
      v += dim;
    if (step > 0)
      return std::clamp<int64_t>(v, 0, dim);
    return std::clamp<int64_t>(v, isEnd ? -1 : 0, dim - 1);
  };
  int64_t s = clampIndex(start, false), e = clampIndex(end, true);
  int64_t n = step > 0 ? (e - s + step - 1) / step : (s - e - step - 1) / -step;
  return {s, std::max<int64_t>(n, 0)};
}

int64_t slidingWindowSize(int64_t in, int64_t kernel, int64_t padBegin,
                          int64_t padEnd, int64_t stride, int64_t dilation,
                          bool ceilMode) {
  if (in == kDyn)
    return kDyn;
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t size = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX/PyTorch rule: with ceil_mode, a last window must start inside the
  // input or the begin padding.
  if (ceilMode && (size - 1) * stride >= in + padBegin)
    --size;
  return size;
}

} // namespace kiln::graph
