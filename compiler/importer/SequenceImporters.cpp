// ONNX sequence ops as lists the importer keeps: a sequence built and read inside the graph is resolved while importing.
//
// kiln's graphs hold tensors only. A sequence whose length and element positions
// are known while importing (SequenceConstruct, SequenceEmpty, SplitToSequence,
// then SequenceInsert/Erase at constant positions) needs no run-time
// representation: the importer keeps its elements as a list of tensor values,
// and SequenceAt, SequenceLength and ConcatFromSequence read that list. No op
// is emitted for the sequence itself. A sequence crossing the graph boundary,
// a position computed at run time, or a sequence fed to an op that is not a
// sequence op is refused with an error naming the node.
#include "compiler/importer/SequenceImporters.h"

#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using Result = FailureOr<SequenceResult>;

SequenceResult sequence(SequenceElements elements) { return {true, std::move(elements)}; }
SequenceResult tensors(SmallVector<Value> values) { return {false, std::move(values)}; }

/// The sequence given as input `i`, or an error naming it.
FailureOr<const SequenceElements *> sequenceInput(NodeContext &c, ArrayRef<const SequenceElements *> seqs, size_t i) {
  if (i >= seqs.size() || !seqs[i]) {
    (void)c.fail("input " + Twine(i) + " must be a sequence built in this graph");
    return failure();
  }
  return seqs[i];
}

/// A constant position for a sequence of `length` elements: in [-length,
/// length - 1] (or up to `length` when inserting), negative counting from the end.
FailureOr<int64_t> position(NodeContext &c, Value pos, int64_t length, bool inserting) {
  auto v = c.constantInts(pos, "position");
  if (failed(v))
    return failure();
  if (v->size() != 1) {
    (void)c.fail("position must be a single value");
    return failure();
  }
  int64_t p = (*v)[0];
  int64_t hi = inserting ? length : length - 1;
  if (p < -length || p > hi) {
    (void)c.fail("position " + Twine(p) + " is outside the sequence of " + Twine(length) + " elements");
    return failure();
  }
  return p < 0 ? p + length : p;
}

Result importSequenceEmpty(NodeContext &, ArrayRef<const SequenceElements *>) { return sequence({}); }

Result importSequenceConstruct(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  SequenceElements elements;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (i < seqs.size() && seqs[i])
      return c.fail("elements must be tensors, not sequences");
    if (!c.input(i))
      return c.fail("missing element " + Twine(i));
    elements.push_back(c.input(i));
  }
  if (elements.empty())
    return c.fail("needs at least one element");
  return sequence(std::move(elements));
}

Result importSequenceInsert(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  auto s = sequenceInput(c, seqs, 0);
  if (failed(s))
    return failure();
  if (!c.input(1))
    return c.fail("missing the tensor to insert");
  SequenceElements elements = **s;
  int64_t at = elements.size();
  if (Value pos = c.input(2)) {
    auto p = position(c, pos, elements.size(), /*inserting=*/true);
    if (failed(p))
      return failure();
    at = *p;
  }
  elements.insert(elements.begin() + at, c.input(1));
  return sequence(std::move(elements));
}

Result importSequenceErase(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  auto s = sequenceInput(c, seqs, 0);
  if (failed(s))
    return failure();
  SequenceElements elements = **s;
  if (elements.empty())
    return c.fail("cannot erase from an empty sequence");
  int64_t at = elements.size() - 1;
  if (Value pos = c.input(1)) {
    auto p = position(c, pos, elements.size(), /*inserting=*/false);
    if (failed(p))
      return failure();
    at = *p;
  }
  elements.erase(elements.begin() + at);
  return sequence(std::move(elements));
}

Result importSequenceAt(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  auto s = sequenceInput(c, seqs, 0);
  if (failed(s))
    return failure();
  if (!c.input(1))
    return c.fail("missing position");
  auto p = position(c, c.input(1), (*s)->size(), /*inserting=*/false);
  if (failed(p))
    return failure();
  return tensors({(**s)[*p]});
}

Result importSequenceLength(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  auto s = sequenceInput(c, seqs, 0);
  if (failed(s))
    return failure();
  auto type = RankedTensorType::get({}, c.b.getI64Type());
  Value length = ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(type, (int64_t)(*s)->size()));
  return tensors({length});
}

Result importConcatFromSequence(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  auto s = sequenceInput(c, seqs, 0);
  if (failed(s))
    return failure();
  if ((*s)->empty())
    return c.fail("cannot concatenate an empty sequence");
  if (!c.attr("axis"))
    return c.fail("axis is required");
  int64_t axis = c.intAttr("axis", 0);
  SmallVector<Value> parts(**s);
  // new_axis: the elements are stacked along a new axis (in [-rank-1, rank]).
  if (c.intAttr("new_axis", 0)) {
    int64_t rank = cast<RankedTensorType>(parts[0].getType()).getRank();
    if (axis < -rank - 1 || axis > rank)
      return c.fail("axis " + Twine(axis) + " out of range for new_axis");
    if (axis < 0)
      axis += rank + 1;
    for (Value &part : parts) {
      auto u = create<UnsqueezeOp>(c, part, SmallVector<int64_t>{axis});
      if (failed(u))
        return failure();
      part = *u;
    }
  }
  auto joined = create<ConcatOp>(c, parts, axis);
  if (failed(joined))
    return failure();
  return tensors({*joined});
}

/// SplitToSequence: chunks along `axis`, each a slice. Without split, chunks of
/// 1 (squeezed unless keepdims); a scalar split gives chunks of that size (the
/// last may be shorter); a 1-D split gives one chunk per entry, its sizes
/// constants or read at run time (then the slices' bounds are computed).
Result importSplitToSequence(NodeContext &c, ArrayRef<const SequenceElements *> seqs) {
  if (!seqs.empty() && seqs[0])
    return c.fail("input must be a tensor");
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  int64_t axis = c.intAttr("axis", 0);
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + Twine(axis) + " out of range");
  if (axis < 0)
    axis += rank;
  int64_t dim = xt.getDimSize(axis);
  Value split = c.input(1);
  auto slice = [&](int64_t begin, int64_t end) {
    return create<SliceOp>(c, x, SmallVector<int64_t>{begin}, SmallVector<int64_t>{end},
                           SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
  };
  SequenceElements elements;
  DenseIntElementsAttr sizesAttr;
  if (!split || (cast<RankedTensorType>(split.getType()).getRank() == 0 && matchPattern(split, m_Constant(&sizesAttr)))) {
    int64_t chunk = split ? (*sizesAttr.getValues<APInt>().begin()).getSExtValue() : 1;
    if (chunk < 1)
      return c.fail("split must be positive");
    if (dim == ShapedType::kDynamic)
      return c.fail("splitting into equal chunks needs a static size along the axis");
    for (int64_t begin = 0; begin < dim; begin += chunk) {
      auto part = slice(begin, std::min(dim, begin + chunk));
      if (failed(part))
        return failure();
      Value element = *part;
      if (!split && !c.intAttr("keepdims", 1)) {
        auto squeezed = create<SqueezeOp>(c, element, SmallVector<int64_t>{axis});
        if (failed(squeezed))
          return failure();
        element = *squeezed;
      }
      elements.push_back(element);
    }
    return sequence(std::move(elements));
  }
  auto st = cast<RankedTensorType>(split.getType());
  if (st.getRank() != 1 || st.isDynamicDim(0) || !isa<IntegerType>(st.getElementType()))
    return c.fail("split must be a scalar or a 1-D integer tensor of static length");
  if (matchPattern(split, m_Constant(&sizesAttr))) {
    int64_t begin = 0;
    for (const APInt &size : sizesAttr.getValues<APInt>()) {
      int64_t end = begin + size.getSExtValue();
      if (size.isNegative() || (dim != ShapedType::kDynamic && end > dim))
        return c.fail("split sizes must be >= 0 and sum to at most the axis size");
      auto part = slice(begin, end);
      if (failed(part))
        return failure();
      elements.push_back(*part);
      begin = end;
    }
    return sequence(std::move(elements));
  }
  // Sizes known at run time: chunk i spans [sum of sizes before i, + size i).
  auto ends = create<CumSumOp>(c, split, (int64_t)0, (int64_t)0, (int64_t)0);
  if (failed(ends))
    return failure();
  auto begins = create<SubOp>(c, *ends, split);
  if (failed(begins))
    return failure();
  for (int64_t i = 0; i < st.getDimSize(0); ++i) {
    auto pick = [&](Value v) {
      return create<SliceOp>(c, v, SmallVector<int64_t>{i}, SmallVector<int64_t>{i + 1}, SmallVector<int64_t>{0},
                             SmallVector<int64_t>{1});
    };
    auto b = pick(*begins), e = pick(*ends);
    if (failed(b) || failed(e))
      return failure();
    auto part = create<DynamicSliceOp>(c, x, *b, *e, SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
    if (failed(part))
      return failure();
    elements.push_back(*part);
  }
  return sequence(std::move(elements));
}

} // namespace

const llvm::StringMap<SequenceImporter> &sequenceImporters() {
  static const llvm::StringMap<SequenceImporter> table = {
      {"SequenceEmpty", importSequenceEmpty},
      {"SequenceConstruct", importSequenceConstruct},
      {"SequenceInsert", importSequenceInsert},
      {"SequenceErase", importSequenceErase},
      {"SequenceAt", importSequenceAt},
      {"SequenceLength", importSequenceLength},
      {"ConcatFromSequence", importConcatFromSequence},
      {"SplitToSequence", importSplitToSequence},
  };
  return table;
}

} // namespace kiln
