// Ops that cut tensors apart or join them: Slice, Split, Concat, Pad.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

Results importSlice(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t rank = rankOf(c.input(0));
  SmallVector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.intsAttr("starts").value_or(SmallVector<int64_t>{});
    ends = c.intsAttr("ends").value_or(SmallVector<int64_t>{});
    axes = c.intsAttr("axes").value_or(SmallVector<int64_t>{});
  } else {
    if (failed(require(c, 3)))
      return failure();
    if (isRuntime(c.input(3)) || isRuntime(c.input(4))) {
      // Computed axes or steps: which axes are sliced, and in which
      // direction, is only known at run time.
      auto n = runtimeLength(c, c.input(1), "starts");
      if (failed(n))
        return failure();
      SmallVector<int64_t> defaultAxes, ones(*n, 1);
      for (int64_t i = 0; i < *n; ++i)
        defaultAxes.push_back(i);
      Value axes = c.input(3) ? c.input(3) : c.i64Constant(defaultAxes);
      Value steps = c.input(4) ? c.input(4) : c.i64Constant(ones);
      return single(create<DynamicStridedSliceOp>(c, c.input(0), c.input(1), c.input(2), axes, steps));
    }
    DenseIntElementsAttr sAttr, eAttr;
    if (!matchPattern(c.input(1), m_Constant(&sAttr)) || !matchPattern(c.input(2), m_Constant(&eAttr))) {
      // Starts/ends computed at run time: axes and steps must still be known.
      int64_t n = cast<RankedTensorType>(c.input(1).getType()).getDimSize(0);
      if (n == ShapedType::kDynamic)
        return c.fail("starts must have a static length");
      SmallVector<int64_t> dynAxes, dynSteps(n, 1);
      if (c.input(3)) {
        auto a = c.constantInts(c.input(3), "axes");
        if (failed(a))
          return failure();
        dynAxes = *a;
      } else {
        for (int64_t i = 0; i < n; ++i)
          dynAxes.push_back(i);
      }
      if (c.input(4)) {
        auto st = c.constantInts(c.input(4), "steps");
        if (failed(st))
          return failure();
        dynSteps = *st;
      }
      return single(create<DynamicSliceOp>(c, c.input(0), c.input(1), c.input(2), dynAxes, dynSteps));
    }
    auto s = c.constantInts(c.input(1), "starts");
    auto e = c.constantInts(c.input(2), "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (c.input(3)) {
      auto a = c.constantInts(c.input(3), "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (c.input(4)) {
      auto st = c.constantInts(c.input(4), "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  (void)rank;
  return single(create<SliceOp>(c, c.input(0), starts, ends, axes, steps));
}

/// Split into the node's outputs along `axis`: sizes from the `split`
/// attribute/input, or equal parts.
Results importSplit(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t axis = c.intAttr("axis", 0);
  if (axis < 0)
    axis += xt.getRank();
  if (axis < 0 || axis >= xt.getRank())
    return c.fail("axis out of range");
  int64_t outputs = c.node.output_size();
  SmallVector<int64_t> sizes;
  if (c.opset >= 13 && isRuntime(c.input(1))) {
    // Computed sizes: part i is [sum of sizes before i, that + size i),
    // a run-time slice (clamped, so sizes that do not add up stay in bounds).
    auto n = runtimeLength(c, c.input(1), "split");
    if (failed(n))
      return failure();
    if (*n != outputs)
      return c.fail("split has " + Twine(*n) + " sizes for " + Twine(outputs) + " outputs");
    auto ends = create<CumSumOp>(c, c.input(1), (int64_t)0, (int64_t)0, (int64_t)0);
    auto starts = create<CumSumOp>(c, c.input(1), (int64_t)0, (int64_t)1, (int64_t)0);
    if (failed(ends) || failed(starts))
      return failure();
    SmallVector<Value> results;
    for (int64_t i = 0; i < *n; ++i) {
      auto element = [&](Value t) {
        return create<SliceOp>(c, t, SmallVector<int64_t>{i}, SmallVector<int64_t>{i + 1},
                               SmallVector<int64_t>{0}, SmallVector<int64_t>{1});
      };
      auto s = element(*starts), e = element(*ends);
      if (failed(s) || failed(e))
        return failure();
      auto part = create<DynamicSliceOp>(c, x, *s, *e, SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
      if (failed(part))
        return failure();
      results.push_back(*part);
    }
    return results;
  }
  if (c.opset >= 13 && c.input(1)) {
    auto s = c.constantInts(c.input(1), "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = c.intsAttr("split")) {
    sizes = *s;
  }
  if (sizes.empty() && xt.isDynamicDim(axis)) {
    // An equal split of a run-time size: part i is [i * chunk, (i + 1) *
    // chunk) with chunk = ceil(size / parts), clamped by the run-time slice.
    int64_t parts = c.attr("num_outputs") ? c.intAttr("num_outputs", outputs) : outputs;
    if (parts <= 0)
      return c.fail("an equal split needs a positive number of parts");
    Emitter e{c, c.b.getI64Type()};
    Value size = e.op<ShapeOp>(x, axis, c.b.getI64IntegerAttr(axis + 1));
    Value chunk = e.op<DivOp>(e.add(size, c.i64Constant({parts - 1})), c.i64Constant({parts}));
    SmallVector<Value> results;
    Value start = c.i64Constant({0});
    for (int64_t i = 0; i < parts; ++i) {
      Value end = i == 0 ? chunk : e.mul(chunk, c.i64Constant({i + 1}));
      results.push_back(e.op<DynamicSliceOp>(x, start, end, SmallVector<int64_t>{axis}, SmallVector<int64_t>{1}));
      start = end;
    }
    if (!e.ok)
      return failure();
    return results;
  }
  if (sizes.empty()) {
    int64_t dim = xt.getDimSize(axis);
    int64_t parts = c.attr("num_outputs") ? c.intAttr("num_outputs", outputs) : outputs;
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  SmallVector<Value> results;
  int64_t start = 0;
  for (int64_t size : sizes) {
    auto part = create<SliceOp>(c, x, SmallVector<int64_t>{start}, SmallVector<int64_t>{start + size},
                                SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
    if (failed(part))
      return failure();
    results.push_back(*part);
    start += size;
  }
  return results;
}

Results importConcat(NodeContext &c) {
  SmallVector<Value> inputs;
  for (Value v : c.inputs)
    if (v)
      inputs.push_back(v);
  if (inputs.empty())
    return c.fail("needs at least one input");
  if (!c.attr("axis"))
    return c.fail("axis is required");
  return single(create<ConcatOp>(c, inputs, c.intAttr("axis", 0)));
}

/// Pad with computed pads: given for the axes input's axes only (opset 18),
/// they are spread to every axis by a gather from the pads plus a 0.
Results importRuntimePad(NodeContext &c, StringRef mode) {
  Value x = c.input(0);
  int64_t rank = rankOf(x);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  Value pads = c.input(1);
  auto n = runtimeLength(c, pads, "pads", /*needInt64=*/true);
  if (failed(n))
    return failure();
  if (c.input(3)) {
    auto axes = c.constantInts(c.input(3), "axes");
    if (failed(axes))
      return failure();
    int64_t k = axes->size();
    if (*n != 2 * k)
      return c.fail("pads must hold two values per axis");
    SmallVector<int64_t> from(2 * rank, 2 * k);
    for (int64_t i = 0; i < k; ++i) {
      int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
      if (a < 0 || a >= rank)
        return c.fail("pad axis out of range");
      from[a] = i;
      from[rank + a] = k + i;
    }
    auto withZero = create<ConcatOp>(c, ValueRange{pads, c.i64Constant({0})}, (int64_t)0);
    if (failed(withZero))
      return failure();
    auto spread = create<GatherOp>(c, *withZero, c.i64Constant(from), (int64_t)0);
    if (failed(spread))
      return failure();
    pads = *spread;
  }
  Value value = c.input(2);
  if (!value)
    value = scalarConstant(c, et, 0);
  return single(create<DynamicPadOp>(c, x, pads, value, mode));
}

Results importPad(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  int64_t rank = rankOf(x);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  std::string mode = c.stringAttr("mode", "constant");
  SmallVector<int64_t> pads;
  Value value;
  if (c.opset < 11) {
    pads = c.intsAttr(c.opset < 2 ? "paddings" : "pads").value_or(SmallVector<int64_t>{});
    float v = c.floatAttr("value", 0.0f);
    auto ft = dyn_cast<FloatType>(et);
    if (!ft)
      return c.fail("pad before opset 11 needs a floating-point input");
    auto cst = create<ConstantOp>(c, DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                            c.b.getFloatAttr(ft, v)));
    if (failed(cst))
      return failure();
    value = *cst;
  } else if (isRuntime(c.input(1))) {
    return importRuntimePad(c, mode);
  } else {
    auto p = c.constantInts(c.input(1), "pads");
    if (failed(p))
      return failure();
    pads = *p;
    value = c.input(2);
    if (c.input(3)) {
      // Pads given for some axes only (opset 18): spread them out.
      auto axes = c.constantInts(c.input(3), "axes");
      if (failed(axes))
        return failure();
      SmallVector<int64_t> full(2 * rank, 0);
      int64_t n = axes->size();
      if ((int64_t)pads.size() != 2 * n)
        return c.fail("pads must hold two values per axis");
      for (int64_t i = 0; i < n; ++i) {
        int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
        if (a < 0 || a >= rank)
          return c.fail("pad axis out of range");
        full[a] = pads[i];
        full[rank + a] = pads[n + i];
      }
      pads = full;
    }
    if (!value)
      value = scalarConstant(c, et, 0);
  }
  return single(create<PadOp>(c, x, value, mode, pads));
}

} // namespace

void addSlicingImporters(llvm::StringMap<NodeImporter> &t) {
  t["Slice"] = importSlice;
  t["Split"] = importSplit;
  t["Concat"] = importConcat;
  t["Pad"] = importPad;
}

} // namespace kiln
